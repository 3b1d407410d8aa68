//! A fault-injecting TCP relay: listens on a local port and forwards every accepted
//! connection to a target, through faults that can be changed while it runs.
//!
//! Each connection is forwarded by four threads: per direction, a reader that takes what
//! arrives (stamped with its arrival time) and a writer that hands it on once the added
//! delay has passed, at most at the bandwidth cap, in small random pieces when partial
//! writes are on, and not at all while the relay is black-holed. Every blocking call has
//! a short timeout, so that each thread sees a reset or the relay's end promptly.
//!
//! - delay: each piece of data is held this long after it arrived (latency, not a rate);
//! - bandwidth cap: bytes per second per direction of each connection;
//! - partial writes: data is written in pieces of 1 to N bytes, each its own `write`;
//! - black hole: nothing is read or written in either direction, and nothing is closed,
//!   until it is lifted: the peers see a link gone silent;
//! - reset: every open connection is closed on both sides with SO_LINGER 0, so that both
//!   peers get a TCP RST.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a relay thread blocks at most before it looks at the flags again.
const TICK: Duration = Duration::from_millis(10);

/// The faults of one relay, read by its threads at every step.
#[derive(Debug, Default)]
struct Faults {
    delay_us: AtomicU64,
    bytes_per_sec: AtomicU64,
    max_piece: AtomicUsize,
    black_hole: AtomicBool,
}

/// One forwarded connection: the accepted stream and the one to the target.
#[derive(Debug)]
struct Conn {
    client: TcpStream,
    server: TcpStream,
    /// Set to end the connection's threads (a reset, or the relay's end).
    dead: AtomicBool,
    /// Directions still forwarding; the last to finish closes the streams.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Conn {
    /// Close both sides abortively: SO_LINGER 0, so that the last close sends an RST.
    fn reset(&self) {
        set_linger_zero(&self.client);
        set_linger_zero(&self.server);
        self.dead.store(true, Ordering::SeqCst);
    }
}

/// Set SO_LINGER to {on, 0 s} on `stream`: its close then sends an RST.
fn set_linger_zero(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is an open socket owned by `stream` for the call; `linger`
    // is a valid, initialised `struct linger` and the length passed is its size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[derive(Debug)]
struct Shared {
    target: SocketAddr,
    faults: Faults,
    stop: AtomicBool,
    conns: Mutex<Vec<Arc<Conn>>>,
    accepted: AtomicU64,
    seed: AtomicU64,
}

/// A fault-injecting TCP relay; dropping it resets its connections and stops it.
#[derive(Debug)]
pub struct Relay {
    shared: Arc<Shared>,
    addr: SocketAddr,
    acceptor: Option<JoinHandle<()>>,
}

impl Relay {
    /// A relay listening on an ephemeral port of 127.0.0.1 and forwarding to `target`.
    pub fn start(target: SocketAddr) -> std::io::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let seed = Instant::now().elapsed().as_nanos() as u64 ^ u64::from(addr.port()) << 32;
        let shared = Arc::new(Shared {
            target,
            faults: Faults::default(),
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
            seed: AtomicU64::new(seed | 1),
        });
        let s = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("relay-accept".into())
            .spawn(move || accept_loop(listener, s))?;
        Ok(Relay {
            shared,
            addr,
            acceptor: Some(acceptor),
        })
    }

    /// The address the relay listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The relay's address as a `tcp://` endpoint.
    pub fn endpoint(&self) -> String {
        format!("tcp://{}", self.addr())
    }

    /// Hold all data this long after it arrives (zero: none).
    pub fn set_delay(&self, delay: Duration) {
        (self.shared.faults.delay_us).store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// Cap each direction of each connection at this many bytes per second (0: no cap).
    pub fn set_bandwidth(&self, bytes_per_sec: u64) {
        (self.shared.faults.bytes_per_sec).store(bytes_per_sec, Ordering::SeqCst);
    }

    /// Write in pieces of 1 to `max_piece` bytes, chosen at random (0: write whole chunks).
    pub fn set_partial_writes(&self, max_piece: usize) {
        (self.shared.faults.max_piece).store(max_piece, Ordering::SeqCst);
    }

    /// Stop (true) or resume (false) forwarding in both directions, closing nothing.
    pub fn set_black_hole(&self, on: bool) {
        self.shared.faults.black_hole.store(on, Ordering::SeqCst);
    }

    /// Reset every open connection: both of its sides get an RST.
    pub fn reset_all(&self) {
        let conns = std::mem::take(&mut *self.shared.conns.lock().unwrap());
        for c in &conns {
            c.reset();
        }
        join_conns(conns);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

fn join_conns(conns: Vec<Arc<Conn>>) {
    for c in conns {
        let threads = std::mem::take(&mut *c.threads.lock().unwrap());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        self.reset_all();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(_) => {
                std::thread::sleep(TICK);
                continue;
            }
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let Ok(server) = TcpStream::connect_timeout(&shared.target, Duration::from_secs(2)) else {
            // Nothing to forward to: the client sees its connection reset.
            set_linger_zero(&client);
            continue;
        };
        if start_conn(&shared, client, server).is_err() {
            continue;
        }
        // Forget the connections that have finished.
        let mut conns = shared.conns.lock().unwrap();
        let (done, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *conns)
            .into_iter()
            .partition(|c| c.dead.load(Ordering::SeqCst));
        *conns = live;
        drop(conns);
        join_conns(done);
    }
}

fn start_conn(shared: &Arc<Shared>, client: TcpStream, server: TcpStream) -> std::io::Result<()> {
    for s in [&client, &server] {
        s.set_nonblocking(false)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(TICK))?;
        s.set_write_timeout(Some(TICK))?;
    }
    let conn = Arc::new(Conn {
        client,
        server,
        dead: AtomicBool::new(false),
        threads: Mutex::new(Vec::new()),
    });
    // Listed before any byte is forwarded: a reset that follows forwarded data finds it.
    shared.conns.lock().unwrap().push(conn.clone());
    let finished = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for to_server in [true, false] {
        let (tx, rx) = mpsc::channel::<Chunk>();
        let (c, s) = (conn.clone(), shared.clone());
        threads.push(std::thread::spawn(move || read_side(&c, &s, to_server, tx)));
        let (c, s, f) = (conn.clone(), shared.clone(), finished.clone());
        let seed = shared
            .seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::SeqCst);
        threads.push(std::thread::spawn(move || {
            write_side(&c, &s, to_server, rx, seed);
            // The second direction to finish ends the connection.
            if f.fetch_add(1, Ordering::SeqCst) == 1 {
                c.dead.store(true, Ordering::SeqCst);
            }
        }));
    }
    // A reset meanwhile found no threads to join: they end by themselves (the flag is set).
    *conn.threads.lock().unwrap() = threads;
    Ok(())
}

/// What a reader hands its writer: data that arrived at a time, or the end of the input.
enum Chunk {
    Data(Instant, Vec<u8>),
    /// The source closed its side (FIN): pass it on after the data.
    Eof,
}

fn streams(conn: &Conn, to_server: bool) -> (&TcpStream, &TcpStream) {
    if to_server {
        (&conn.client, &conn.server)
    } else {
        (&conn.server, &conn.client)
    }
}

fn read_side(conn: &Conn, shared: &Shared, to_server: bool, tx: mpsc::Sender<Chunk>) {
    let (mut src, _) = streams(conn, to_server);
    let mut buf = vec![0u8; 16 * 1024];
    while !conn.dead.load(Ordering::SeqCst) {
        if shared.faults.black_hole.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        match src.read(&mut buf) {
            Ok(0) => {
                let _ = tx.send(Chunk::Eof);
                return;
            }
            Ok(n) => {
                if tx
                    .send(Chunk::Data(Instant::now(), buf[..n].to_vec()))
                    .is_err()
                {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                // Reset by its peer: reset the other side too.
                conn.reset();
                return;
            }
        }
    }
}

/// xorshift64*: the piece sizes of partial writes.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn write_side(
    conn: &Conn,
    shared: &Shared,
    to_server: bool,
    rx: mpsc::Receiver<Chunk>,
    mut seed: u64,
) {
    let (_, mut dst) = streams(conn, to_server);
    let faults = &shared.faults;
    let mut pending: VecDeque<Chunk> = VecDeque::new();
    // The bandwidth cap: the earliest time the next byte may go.
    let mut next_slot = Instant::now();
    let dead = || conn.dead.load(Ordering::SeqCst);
    loop {
        if dead() {
            return;
        }
        if pending.is_empty() {
            match rx.recv_timeout(TICK) {
                Ok(c) => pending.push_back(c),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        while faults.black_hole.load(Ordering::SeqCst) {
            if dead() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let Some(chunk) = pending.pop_front() else {
            continue;
        };
        let (arrived, data) = match chunk {
            Chunk::Data(t, d) => (t, d),
            Chunk::Eof => {
                let _ = dst.shutdown(Shutdown::Write);
                return;
            }
        };
        let due = arrived + Duration::from_micros(faults.delay_us.load(Ordering::SeqCst));
        while Instant::now() < due {
            if dead() {
                return;
            }
            std::thread::sleep((due - Instant::now()).min(TICK));
        }
        let mut rest = &data[..];
        while !rest.is_empty() {
            let max_piece = faults.max_piece.load(Ordering::SeqCst);
            let n = if max_piece == 0 {
                rest.len()
            } else {
                (1 + next_random(&mut seed) as usize % max_piece).min(rest.len())
            };
            let rate = faults.bytes_per_sec.load(Ordering::SeqCst);
            let cost = (n as u64 * 1_000_000_000).checked_div(rate);
            if let Some(cost) = cost {
                let now = Instant::now();
                if next_slot > now {
                    std::thread::sleep(next_slot - now);
                }
                next_slot = next_slot.max(now) + Duration::from_nanos(cost);
            }
            // Wait out a black hole that began while writing.
            while faults.black_hole.load(Ordering::SeqCst) {
                if dead() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            match dst.write(&rest[..n]) {
                Ok(0) => {
                    conn.reset();
                    return;
                }
                Ok(w) => rest = &rest[w..],
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    if dead() {
                        return;
                    }
                }
                Err(_) => {
                    conn.reset();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that echoes what it receives on its first connection.
    fn echo_server() -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        (addr, t)
    }

    fn read_exactly(s: &mut TcpStream, n: usize, limit: Duration) -> Vec<u8> {
        let deadline = Instant::now() + limit;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        while out.len() < n && Instant::now() < deadline {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => out.extend_from_slice(&buf[..k]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
        out
    }

    #[test]
    fn bytes_pass_intact_in_pieces_with_delay_and_cap() {
        let (addr, server) = echo_server();
        let relay = Relay::start(addr).unwrap();
        relay.set_partial_writes(7);
        relay.set_delay(Duration::from_millis(5));
        relay.set_bandwidth(2_000_000);
        let mut c = TcpStream::connect(relay.addr()).unwrap();
        let mut state = 0x1234_5678_9abc_def1u64;
        let data: Vec<u8> = (0..100_000)
            .map(|_| next_random(&mut state) as u8)
            .collect();
        let writer = {
            let mut c = c.try_clone().unwrap();
            let data = data.clone();
            std::thread::spawn(move || c.write_all(&data).unwrap())
        };
        let got = read_exactly(&mut c, data.len(), Duration::from_secs(20));
        writer.join().unwrap();
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes came back changed");
        drop(c);
        server.join().unwrap();
    }

    #[test]
    fn delay_holds_data_back() {
        let (addr, _server) = echo_server();
        let relay = Relay::start(addr).unwrap();
        relay.set_delay(Duration::from_millis(100));
        let mut c = TcpStream::connect(relay.addr()).unwrap();
        let start = Instant::now();
        c.write_all(b"ping").unwrap();
        assert_eq!(read_exactly(&mut c, 4, Duration::from_secs(5)), b"ping");
        // Through the relay twice: at least twice the delay.
        assert!(
            start.elapsed() >= Duration::from_millis(200),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn black_hole_stops_and_resumes() {
        let (addr, _server) = echo_server();
        let relay = Relay::start(addr).unwrap();
        let mut c = TcpStream::connect(relay.addr()).unwrap();
        c.write_all(b"before").unwrap();
        assert_eq!(read_exactly(&mut c, 6, Duration::from_secs(5)), b"before");
        relay.set_black_hole(true);
        c.write_all(b"during").unwrap();
        // Nothing comes back, and the connection is not closed.
        assert_eq!(read_exactly(&mut c, 6, Duration::from_millis(300)), b"");
        relay.set_black_hole(false);
        assert_eq!(read_exactly(&mut c, 6, Duration::from_secs(5)), b"during");
    }

    #[test]
    fn reset_is_an_error_on_both_sides() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Relay::start(listener.local_addr().unwrap()).unwrap();
        let mut c = TcpStream::connect(relay.addr()).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(b"x").unwrap();
        let mut one = [0u8; 1];
        s.read_exact(&mut one).unwrap();
        relay.reset_all();
        for stream in [&mut c, &mut s] {
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let err = stream.read(&mut one).expect_err("a reset, not data or EOF");
            assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
        }
    }
}
