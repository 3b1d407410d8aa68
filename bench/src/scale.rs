//! `zmtp-scale`: one ROUTER with thousands of DEALER connections, ours beside libzmq.
//!
//! The ROUTER runs in a child process of its own (an echo server: every message goes back
//! to the peer it came from) and reports its resident set and CPU time on request; this
//! process opens the connections as raw ZMTP 3.1 DEALERs (the greeting and `READY` written
//! by hand, so that the client side costs the same whichever server it talks to) and
//! measures:
//!
//! - handshakes per second: from the first `connect` to the last server `READY`, with at
//!   most `--inflight` handshakes under way at once (a listen backlog's worth); and the
//!   server's CPU time (user and system) per handshake over the storm, which a loaded
//!   machine disturbs less than the rate, beside this process's (the two share the
//!   machine's CPUs, so the rate is bounded by their sum as well as by the server's);
//! - resident set per connection: the server's RSS with every connection up, less its RSS
//!   before the first, divided by the count;
//! - the idle cost: the server's CPU time over a quiet interval, with no connection and
//!   with all of them;
//! - the round trip of one message on one connection while all the others are idle,
//!   against the same with that connection alone;
//! - memory kept: the server's RSS after the connections close, and after a second storm
//!   of as many connections and its close (memory kept from the first is reused, so the
//!   second adds nothing if nothing leaks), with those storms' handshake rates.
//!
//! Each server process grows its descriptor table to hold the storm before it starts any
//! thread (`--fd-table cold` leaves it to grow during the first storm): a table that
//! grows while threads share it waits for an RCU grace period at each doubling, time off
//! the CPU that a young process pays once and that otherwise fell on the first storm of
//! every server alike (it halved our servers' first-storm rate, and cut libzmq's by a
//! fifth, on the 2-vCPU machine).
//!
//! Usage: `zmtp-scale [--connections N] [--impl mio,uring,tokio,libzmq] [--inflight N]
//! [--idle SECS] [--trips N] [--storms N] [--fd-table grown|cold]`.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use zmtp_testkit::limits::raise_fd_limit;
use zmtp_testkit::wire::dealer_hello as client_hello;

/// Whether `input` holds the server's whole greeting and its first command (`READY`).
fn handshake_done(input: &[u8]) -> bool {
    let Some(&flags) = input.get(64) else {
        return false;
    };
    let (header, size) = if flags & 0x02 != 0 {
        let Some(len) = input.get(65..73) else {
            return false;
        };
        let mut b = [0u8; 8];
        b.copy_from_slice(len);
        (9, u64::from_be_bytes(b) as usize)
    } else {
        match input.get(65) {
            Some(&n) => (2, usize::from(n)),
            None => return false,
        }
    };
    input.len() >= 64 + header + size
}

/// This process's resident set (KiB) and CPU time (user + system, in clock ticks).
fn self_stats() -> (u64, u64) {
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0);
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (which may hold spaces) begin after ')'.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are fields 14 and 15 of the line: 12 and 13 after ')'.
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0);
    (rss, cpu)
}

/// Clock ticks per second (for CPU times from `/proc`).
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a configuration value; no memory is passed.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

// ----- the server process -----

/// The echo server's side: bind, print the endpoint, echo on a thread, answer `stats`
/// lines on stdin until `quit` or the end of input.
fn server(kind: &str, table: usize) -> ExitCode {
    let limit = raise_fd_limit();
    if table > 0 {
        grow_fd_table(table.min(usize::try_from(limit).unwrap_or(usize::MAX) - 1));
    }
    let endpoint = "tcp://127.0.0.1:0";
    let bound = match kind {
        "mio" | "uring" => serve_ours(kind, endpoint),
        "tokio" => serve_tokio(endpoint),
        "libzmq" => serve_libzmq(endpoint),
        other => Err(format!("unknown implementation {other}")),
    };
    let bound = match bound {
        Ok(b) => b,
        Err(e) => {
            eprintln!("zmtp-scale server: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("ready {bound}");
    let _ = io::stdout().flush();
    for line in io::stdin().lock().lines() {
        match line.as_deref() {
            Ok("stats") => {
                let (rss, cpu) = self_stats();
                println!("{rss} {cpu}");
                let _ = io::stdout().flush();
            }
            _ => break,
        }
    }
    ExitCode::SUCCESS
}

fn serve_ours(kind: &str, endpoint: &str) -> Result<String, String> {
    use zmtp_mio::{Backend, Context, SocketType};
    let backend = if kind == "uring" {
        Backend::IoUring
    } else {
        Backend::Mio
    };
    let ctx = Context::with_backend(backend).map_err(|e| e.to_string())?;
    let sock = ctx.socket(SocketType::Router).map_err(|e| e.to_string())?;
    let bound = sock.bind(endpoint).map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        let _ctx = ctx;
        while let Ok(msg) = sock.recv() {
            if sock.send(msg).is_err() {
                break;
            }
        }
    });
    Ok(bound)
}

fn serve_tokio(endpoint: &str) -> Result<String, String> {
    use zmtp_tokio::{Socket, SocketType};
    let (tx, rx) = std::sync::mpsc::channel();
    let endpoint = endpoint.to_string();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
                return;
            }
        };
        rt.block_on(async move {
            let sock = match Socket::new(SocketType::Router) {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            };
            match sock.bind(&endpoint).await {
                Ok(bound) => {
                    let _ = tx.send(Ok(bound));
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            }
            while let Ok(msg) = sock.recv().await {
                if sock.send(msg).await.is_err() {
                    break;
                }
            }
        });
    });
    rx.recv().map_err(|e| e.to_string())?
}

fn serve_libzmq(endpoint: &str) -> Result<String, String> {
    use zmtp_conformance::ffi::{Ctx, ZMQ_ROUTER};
    let (tx, rx) = std::sync::mpsc::channel();
    let endpoint = endpoint.to_string();
    std::thread::spawn(move || {
        let ctx = Ctx::new();
        let sock = match ctx.socket(ZMQ_ROUTER) {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(Err(format!("zmq_socket: {e:?}")));
                return;
            }
        };
        if let Err(e) = sock.bind(&endpoint) {
            let _ = tx.send(Err(format!("zmq_bind: {e:?}")));
            return;
        }
        let _ = tx.send(sock.last_endpoint().map_err(|e| format!("{e:?}")));
        while let Ok(frames) = sock.recv_multipart() {
            let parts: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            if sock.send_multipart(&parts).is_err() {
                break;
            }
        }
    });
    rx.recv().map_err(|e| e.to_string())?
}

/// Grow this process's descriptor table to hold descriptor `highest`, before any thread
/// starts. A table that grows while threads share it waits for an RCU grace period at
/// each doubling (milliseconds each, off the CPU), a one-time cost of a young process
/// that would otherwise fall on the first storm of whichever server is measured.
fn grow_fd_table(highest: usize) {
    let Ok(highest) = libc::c_int::try_from(highest) else {
        return;
    };
    // SAFETY: dup2 of standard input to a descriptor number this process does not use
    // (nothing runs yet that opens descriptors that high), closed again at once.
    unsafe {
        if libc::dup2(0, highest) == highest {
            libc::close(highest);
        }
    }
}

// ----- the measuring process -----

/// A running server child and its command lines.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl Server {
    /// Start a `kind` server whose descriptor table is grown to `table` first (0: not).
    fn start(kind: &str, table: usize) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args(["--server", kind, &table.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        let endpoint = line
            .trim()
            .strip_prefix("ready tcp://")
            .ok_or_else(|| format!("the {kind} server did not start: {line:?}"))?;
        let addr = endpoint
            .parse()
            .map_err(|e| format!("bad endpoint {endpoint}: {e}"))?;
        Ok(Server {
            child,
            stdin,
            stdout,
            addr,
        })
    }

    /// The server's resident set (KiB) and CPU time (ticks).
    fn stats(&mut self) -> Result<(u64, u64), String> {
        writeln!(self.stdin, "stats").map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let mut it = line.split_whitespace().map(str::parse::<u64>);
        match (it.next(), it.next()) {
            (Some(Ok(rss)), Some(Ok(cpu))) => Ok((rss, cpu)),
            _ => Err(format!("bad stats line {line:?}")),
        }
    }

    fn stop(mut self) {
        let _ = writeln!(self.stdin, "quit");
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Open `n` DEALER connections to `addr`, at most `inflight` handshakes at once; returns
/// them (handshake done) and the time it took.
fn storm(
    addr: SocketAddr,
    n: usize,
    inflight: usize,
) -> Result<(Vec<TcpStream>, Duration), String> {
    let hello = client_hello();
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    let mut events = Events::with_capacity(1024);
    // Per connection: the stream, bytes of the hello written, input so far.
    let mut conns: Vec<(TcpStream, usize, Vec<u8>)> = Vec::with_capacity(n);
    let mut done = vec![false; n];
    let mut finished = 0;
    let mut started = 0;
    let mut running = 0;
    let start = Instant::now();
    let deadline = start + Duration::from_secs(120);
    let mut buf = [0u8; 4096];
    while finished < n {
        while running < inflight && started < n {
            let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
            poll.registry()
                .register(
                    &mut s,
                    Token(started),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .map_err(|e| e.to_string())?;
            conns.push((s, 0, Vec::new()));
            started += 1;
            running += 1;
        }
        if Instant::now() > deadline {
            return Err(format!("only {finished} of {n} handshakes in 120 s"));
        }
        poll.poll(&mut events, Some(Duration::from_secs(1)))
            .map_err(|e| e.to_string())?;
        for ev in events.iter() {
            let i = ev.token().0;
            if done[i] {
                continue;
            }
            let (s, written, input) = &mut conns[i];
            if ev.is_error() || ev.is_read_closed() && !ev.is_readable() {
                return Err(format!("connection {i} failed: {:?}", s.take_error()));
            }
            while *written < hello.len() {
                match s.write(&hello[*written..]) {
                    Ok(k) => *written += k,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::NotConnected => break,
                    Err(e) => return Err(format!("connection {i}: write: {e}")),
                }
            }
            // Read until the handshake is done (then the stream stays registered, with
            // nothing more to come: the poll is dropped at the end) or the stream is
            // drained, so that the client costs the server's CPUs little.
            while !handshake_done(input) {
                match s.read(&mut buf) {
                    Ok(0) => return Err(format!("connection {i} closed by the server")),
                    Ok(k) => input.extend_from_slice(&buf[..k]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::NotConnected => break,
                    Err(e) => return Err(format!("connection {i}: read: {e}")),
                }
            }
            if *written == hello.len() && handshake_done(input) {
                done[i] = true;
                finished += 1;
                running -= 1;
            }
        }
    }
    let took = start.elapsed();
    Ok((conns.into_iter().map(|(s, _, _)| s).collect(), took))
}

/// Open `n` plain TCP connections to a listener of this process and close them all: the
/// kernel's socket caches grow as they would in a server's first storm.
fn warm_kernel(n: usize) -> io::Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let accepting = std::thread::spawn(move || {
        let mut held = Vec::with_capacity(n);
        for _ in 0..n {
            held.push(listener.accept()?);
        }
        Ok::<_, io::Error>(held)
    });
    let mut outgoing = Vec::with_capacity(n);
    for _ in 0..n {
        outgoing.push(StdTcpStream::connect(addr)?);
    }
    let accepted = accepting
        .join()
        .map_err(|_| io::Error::other("the accepting thread panicked"))??;
    drop((outgoing, accepted));
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// One blocking DEALER connection, handshake done.
fn dealer(addr: SocketAddr) -> Result<StdTcpStream, String> {
    let mut s = StdTcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    s.write_all(&client_hello()).map_err(|e| e.to_string())?;
    let mut input = Vec::new();
    let mut buf = [0u8; 512];
    while !handshake_done(&input) {
        let k = s.read(&mut buf).map_err(|e| e.to_string())?;
        if k == 0 {
            return Err("closed during the handshake".into());
        }
        input.extend_from_slice(&buf[..k]);
    }
    Ok(s)
}

/// Round trips of an 8-byte message on `s`: (p50, p99) in microseconds.
fn round_trips(s: &mut StdTcpStream, trips: usize) -> Result<(f64, f64), String> {
    let mut times = Vec::with_capacity(trips);
    let mut back = [0u8; 10];
    for i in 0..trips + trips / 10 {
        let mut msg = [0u8; 10];
        msg[1] = 8;
        msg[2..].copy_from_slice(&(i as u64).to_be_bytes());
        let t = Instant::now();
        s.write_all(&msg).map_err(|e| e.to_string())?;
        s.read_exact(&mut back).map_err(|e| e.to_string())?;
        let rtt = t.elapsed();
        if back != msg {
            return Err(format!("echo mismatch: sent {msg:?}, got {back:?}"));
        }
        // The first tenth warms up.
        if i >= trips / 10 {
            times.push(rtt.as_secs_f64() * 1e6);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    Ok((at(0.5), at(0.99)))
}

/// One implementation's figures.
struct Figures {
    kind: String,
    handshakes_per_s: f64,
    /// The server's CPU time (user and system) per connection of the storm, in µs.
    cpu_per_handshake_us: f64,
    /// This (the connecting) process's CPU time per connection of the storm, in µs: the
    /// two share the machine, so a rate is bounded by both.
    client_cpu_per_handshake_us: f64,
    rss_base_kib: u64,
    rss_full_kib: u64,
    rss_after_kib: u64,
    /// Later storms: handshakes per second, the server's CPU time per handshake (µs),
    /// RSS with the connections up, and after they closed.
    again: Vec<(f64, f64, u64, u64)>,
    idle_cpu_empty_ms: f64,
    idle_cpu_full_ms: f64,
    rtt_alone: (f64, f64),
    rtt_full: (f64, f64),
}

fn measure(
    kind: &str,
    n: usize,
    inflight: usize,
    idle: Duration,
    trips: usize,
    storms: usize,
    table: usize,
) -> Result<Figures, String> {
    let tick_ms = 1000.0 / ticks_per_second();
    let mut server = Server::start(kind, table)?;
    // Alone: one connection's round trip, and the idle cost with no connection.
    let (_, cpu0) = server.stats()?;
    std::thread::sleep(idle);
    let (_, cpu1) = server.stats()?;
    let rtt_alone = {
        let mut s = dealer(server.addr)?;
        round_trips(&mut s, trips)?
    };
    std::thread::sleep(Duration::from_millis(200));
    let (rss_base, cpu_base) = server.stats()?;
    let (_, client_base) = self_stats();
    let (conns, took) = storm(server.addr, n - 1, inflight)?;
    let (_, client_end) = self_stats();
    let mut last = dealer(server.addr)?;
    std::thread::sleep(Duration::from_millis(500));
    let (rss_full, cpu2) = server.stats()?;
    std::thread::sleep(idle);
    let (_, cpu3) = server.stats()?;
    let rtt_full = round_trips(&mut last, trips)?;
    drop(last);
    drop(conns);
    std::thread::sleep(Duration::from_secs(1));
    let (rss_after, _) = server.stats()?;
    // Again: memory kept after the first storm is reused, not added to.
    let mut again = Vec::new();
    for _ in 1..storms {
        let (_, cpu_before) = server.stats()?;
        let (conns, took) = storm(server.addr, n - 1, inflight)?;
        std::thread::sleep(Duration::from_millis(500));
        let (up, cpu_after) = server.stats()?;
        drop(conns);
        std::thread::sleep(Duration::from_secs(1));
        let (after, _) = server.stats()?;
        let cpu = (cpu_after - cpu_before) as f64 * tick_ms * 1000.0 / n as f64;
        again.push(((n - 1) as f64 / took.as_secs_f64(), cpu, up, after));
    }
    server.stop();
    Ok(Figures {
        kind: kind.to_string(),
        handshakes_per_s: (n - 1) as f64 / took.as_secs_f64(),
        // The storm's CPU time (and the 500 ms after it, idle) per connection.
        cpu_per_handshake_us: (cpu2 - cpu_base) as f64 * tick_ms * 1000.0 / n as f64,
        client_cpu_per_handshake_us: (client_end - client_base) as f64 * tick_ms * 1000.0
            / n as f64,
        rss_base_kib: rss_base,
        rss_full_kib: rss_full,
        rss_after_kib: rss_after,
        again,
        idle_cpu_empty_ms: (cpu1 - cpu0) as f64 * tick_ms,
        idle_cpu_full_ms: (cpu3 - cpu2) as f64 * tick_ms,
        rtt_alone,
        rtt_full,
    })
}

/// Later storms' RSS figures in a table cell.
fn later(again: &[(f64, f64, u64, u64)]) -> String {
    let cells: Vec<String> = (again.iter())
        .map(|&(rate, cpu, up, after)| {
            format!(
                "{rate:.0}/s ({cpu:.0} µs), {:.1} / {:.1} MiB",
                up as f64 / 1024.0,
                after as f64 / 1024.0
            )
        })
        .collect();
    if cells.is_empty() {
        "-".into()
    } else {
        cells.join("; ")
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: zmtp-scale [--connections N] [--impl LIST] [--inflight N] [--idle SECS]\n\
         \x20                 [--trips N] [--storms N] [--fd-table grown|cold]\n\
         \n\
         One ROUTER echo server per implementation (mio, uring: ours on the blocking\n\
         driver with epoll or io_uring; tokio: ours on a current-thread runtime; libzmq)\n\
         in a process of its own, and N raw DEALER connections from this one. Defaults:\n\
         10000 connections, mio,tokio,libzmq, 100 handshakes in flight, 2 s idle\n\
         intervals, 2000 round trips, 3 storms of connections (the later ones show\n\
         whether memory kept from the first is reused), each server's descriptor table\n\
         grown to N before it starts (`cold`: left to grow during the first storm, which\n\
         then waits at each doubling of the table for the kernel)."
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--server") {
        let table = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(0);
        return server(args.get(1).map_or("", String::as_str), table);
    }
    let mut n = 10_000usize;
    let mut kinds = vec!["mio".to_string(), "tokio".to_string(), "libzmq".to_string()];
    let mut inflight = 100usize;
    let mut idle = Duration::from_secs(2);
    let mut trips = 2000usize;
    let mut storms = 3usize;
    let mut cold_table = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next();
        let Some(v) = v else {
            return usage();
        };
        let ok = match a.as_str() {
            "--connections" => v.parse().map(|x| n = x).is_ok(),
            "--impl" => {
                kinds = v.split(',').map(str::to_string).collect();
                true
            }
            "--inflight" => v.parse().map(|x| inflight = x).is_ok(),
            "--idle" => v.parse().map(|x| idle = Duration::from_secs_f64(x)).is_ok(),
            "--trips" => v.parse().map(|x| trips = x).is_ok(),
            "--storms" => v.parse().map(|x| storms = x).is_ok(),
            "--fd-table" => match v.as_str() {
                "grown" | "cold" => {
                    cold_table = v == "cold";
                    true
                }
                _ => false,
            },
            _ => false,
        };
        if !ok || n < 2 || inflight == 0 || trips < 10 || storms == 0 {
            return usage();
        }
    }
    let limit = raise_fd_limit();
    if limit < n as u64 + 64 {
        eprintln!("zmtp-scale: the open-file limit is {limit}, too low for {n} connections");
        return ExitCode::FAILURE;
    }
    // The kernel's caches of socket objects grow during the first storm it sees and are
    // reused by later ones: grown here first, so that the first server measured does not
    // pay for what the others then find ready.
    let warm = n.min(usize::try_from(limit.saturating_sub(64) / 2).unwrap_or(n));
    if let Err(e) = warm_kernel(warm) {
        eprintln!("zmtp-scale: warming up with {warm} plain connections: {e}");
        return ExitCode::FAILURE;
    }
    let mut all = Vec::new();
    for kind in &kinds {
        eprintln!("zmtp-scale: {kind}, {n} connections ...");
        let table = if cold_table { 0 } else { n + 64 };
        match measure(kind, n, inflight, idle, trips, storms, table) {
            Ok(f) => all.push(f),
            Err(e) => {
                eprintln!("zmtp-scale: {kind}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "one ROUTER (echo) with {n} DEALER connections from another process; {inflight} \
         handshakes in flight; idle CPU over {:.1} s",
        idle.as_secs_f64()
    );
    println!();
    println!(
        "| server | handshakes/s | server CPU per handshake | client CPU per handshake | RSS before | RSS with {n} | RSS per connection | RSS after close | later storms: handshakes/s (server CPU per handshake), RSS up / after close | idle CPU, 0 peers | idle CPU, {n} peers | RTT p50 / p99, alone | RTT p50 / p99, beside {} idle |",
        n - 1
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for f in &all {
        let per = (f.rss_full_kib.saturating_sub(f.rss_base_kib)) as f64 * 1024.0 / n as f64;
        println!(
            "| {} | {:.0} | {:.0} µs | {:.0} µs | {:.1} MiB | {:.1} MiB | {:.1} KiB | {:.1} MiB | {} | {:.0} ms | {:.0} ms | {:.1} / {:.1} µs | {:.1} / {:.1} µs |",
            f.kind,
            f.handshakes_per_s,
            f.cpu_per_handshake_us,
            f.client_cpu_per_handshake_us,
            f.rss_base_kib as f64 / 1024.0,
            f.rss_full_kib as f64 / 1024.0,
            per / 1024.0,
            f.rss_after_kib as f64 / 1024.0,
            later(&f.again),
            f.idle_cpu_empty_ms,
            f.idle_cpu_full_ms,
            f.rtt_alone.0,
            f.rtt_alone.1,
            f.rtt_full.0,
            f.rtt_full.1,
        );
    }
    if let Some(z) = all.iter().find(|f| f.kind == "libzmq") {
        let zper = z.rss_full_kib.saturating_sub(z.rss_base_kib) as f64;
        println!();
        for f in all.iter().filter(|f| f.kind != "libzmq") {
            let per = f.rss_full_kib.saturating_sub(f.rss_base_kib) as f64;
            println!(
                "{}/libzmq: handshakes per second {:.2}x, server CPU per handshake {:.2}x, \
                 RSS per connection {:.2}x",
                f.kind,
                f.handshakes_per_s / z.handshakes_per_s,
                f.cpu_per_handshake_us / z.cpu_per_handshake_us.max(1e-9),
                per / zper.max(1.0),
            );
        }
    }
    ExitCode::SUCCESS
}
