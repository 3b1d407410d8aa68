//! Side-by-side benchmark of our drivers (`zmtp-tokio`, `zmtp-smol`, `zmtp-mio`) and their
//! anchors on this machine: libzmq, monocoque-rs (another ZeroMQ in Rust, on its tokio
//! backend), a raw-socket floor, and zeromq (zmq.rs) with the `zmqrs` feature.
//!
//! ```text
//! cargo run --release -p zmtp-bench -- [--quick] [--pin CPU] [--count N] [--size LIST]
//!     [--transport LIST] [--test LIST] [--impl LIST|all] [--runtime current|multi|both] [--runs N]
//! ```
//!
//! Every measurement runs as two processes over loopback, both of one implementation (tokio
//! against tokio, libzmq against libzmq, raw against raw, ...): this program starts itself
//! twice as `zmtp-bench peer ...`, a binding side and a connecting side, and collects what
//! they report. Throughput is measured by the receiver, from the arrival of the first message
//! to that of the last, and every message is checked (size, order, none missing; over udp,
//! where RADIO to DISH may lose datagrams, gaps are allowed, counted and reported as the
//! share lost, and the DISH stops when nothing arrives for a while). Latency is
//! measured by REQ around each round trip. The implementations take turns run by run (a
//! round is one run of each), so drift on a shared machine hits them all.
//!
//! The first table gives each implementation's median over the rounds. The second gives, for
//! each pair of one of ours and an anchor (and smol and mio against tokio), the median of
//! the ratios taken within each round, oriented so that above 1 means ours is better:
//! ours/anchor for throughput, anchor/ours for latency and for CPU. Each throughput cell
//! has a second line: the CPU time (user and system) both peer processes used, per
//! million messages, as each process's parent reaps it (`wait4`); steadier than the
//! throughput on a shared machine. A cell an implementation cannot run
//! (monocoque-rs's PUB has no IPC listener; the anchors over ws and udp) is `-`, with a note
//! under the tables. Over ws and udp a third table gives our drivers against their own tcp
//! figure of the same round. The
//! anchors are described in [`monocoque`] and [`raw`]. The tables go to standard output,
//! progress to standard error.
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod affinity;
mod cpu;
mod libzmq;
mod mio;
mod monocoque;
mod ours;
mod peer;
mod raw;
#[cfg(feature = "zmqrs")]
mod zmqrs;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitCode, Stdio};

use peer::{Flavor, Impl, PeerArgs, Role};

const USAGE: &str = "\
usage: zmtp-bench [options]

Runs zmtp-tokio, zmtp-smol and zmtp-mio (on epoll: mio, and on io_uring: uring) side by side
with their anchors (libzmq, monocoque-rs,
a raw-socket floor; zeromq (zmq.rs) with --features zmqrs), each as two processes over loopback,
taking turns run by run, and prints a table of medians and one of per-round ratios.
Build with --release: cargo run --release -p zmtp-bench -- [options]

options:
  --quick               a short smoke run: 1/20 of the default counts
  --pin CPU             pin both processes of every run to one CPU
  --count N             messages (throughput) or round trips (latency) per run, for every test
  --size LIST           message sizes in bytes, e.g. 64,1k,64k (default: 64,1k,64k for
                        push/pull, 64 for pub/sub and req/rep)
  --transport LIST      tcp,ipc,ws,udp (default: tcp,ipc); ws and udp run our drivers only
                        (the system libzmq has no ws:// or udp://); udp measures
                        RADIO->DISH in the push/pull rows (one group, sizes up to 8 KiB)
                        and gives the share of datagrams lost; ws and udp rows get a
                        third table, against our tcp figure of the same round
  --test LIST           push,pub,reqrep (default: all)
  --impl LIST           tokio (or ours),smol,mio,uring,libzmq,cabi,monocoque,raw[,zmqrs], or all
                        (default: all; zmqrs only in a build with --features zmqrs);
                        cabi is libzmq's column run on our C ABI (the libzmq peers' code
                        with zmtp-libzmq's libzmq.so.5 loaded in place of the system's:
                        cargo build --release -p zmtp-libzmq first)
  --runtime R           the tokio driver's runtime: current, multi, both, hop (current-thread with a
                        channel hop per sent message) or current,hop (default: current)
  --api batch|each      how our drivers' peers send and receive: batch (default)
                        with send_many and recv_many, up to 256 messages under one lock;
                        each with one send_slice or recv per message
  --runs N              repeat each measurement N times and report the median (default: 1;
                        for latency, the run with the median mean, with its p50 and p99);
                        ratios are taken within each round, then their median reported
  -h, --help            this text

default counts: push/pull 1,000,000 at up to 256 B, 200,000 up to 8 KiB, 20,000 above;
pub/sub the same; req/rep 50,000 round trips (after 1,000 unmeasured).";

/// One kind of measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    Push,
    Pub,
    ReqRep,
}

impl Test {
    fn label(self) -> &'static str {
        match self {
            Test::Push => "push/pull",
            Test::Pub => "pub/sub hwm=0",
            Test::ReqRep => "req/rep",
        }
    }

    /// The sides: (binds, connects).
    fn roles(self) -> (Role, Role) {
        match self {
            Test::Push => (Role::Pull, Role::Push),
            Test::Pub => (Role::Sub, Role::Pub),
            Test::ReqRep => (Role::Rep, Role::Req),
        }
    }

    fn default_sizes(self) -> Vec<usize> {
        match self {
            Test::Push => vec![64, 1024, 64 * 1024],
            Test::Pub | Test::ReqRep => vec![64],
        }
    }

    fn default_count(self, size: usize) -> u64 {
        match self {
            Test::ReqRep => 50_000,
            Test::Push | Test::Pub if size <= 256 => 1_000_000,
            Test::Push | Test::Pub if size <= 8 * 1024 => 200_000,
            Test::Push | Test::Pub => 20_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Tcp,
    Ipc,
    /// `ws://`: ZMTP over WebSocket (our drivers only).
    Ws,
    /// `udp://`: RADIO to DISH, one datagram per message (our drivers only).
    Udp,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Ws => "ws",
            Transport::Udp => "udp",
        }
    }
}

/// The largest body the udp rows send: a datagram holds [`UDP_DATAGRAM_MAX`] bytes, the
/// group length byte and the one-byte group included.
const UDP_BODY_MAX: usize = UDP_DATAGRAM_MAX - 2;
/// The largest udp datagram (libzmq's receive buffer, which our drivers keep to).
const UDP_DATAGRAM_MAX: usize = 8192;

/// The command line.
#[derive(Debug)]
struct Config {
    quick: bool,
    pin: Option<usize>,
    count: Option<u64>,
    sizes: Option<Vec<usize>>,
    transports: Vec<Transport>,
    tests: Vec<Test>,
    impls: Vec<Impl>,
    flavors: Vec<Flavor>,
    runs: usize,
    /// Our receivers take one message per `recv` (else batches with `recv_many`).
    each: bool,
}

fn parse_size(text: &str) -> Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.trim_end_matches("ib").trim_end_matches('b');
    let (digits, unit) = match lower.chars().last() {
        Some('k') => (&lower[..lower.len() - 1], 1024),
        Some('m') => (&lower[..lower.len() - 1], 1024 * 1024),
        _ => (lower, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("bad size: {text}"))
}

fn parse_list<T>(text: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(item)
        .collect()
}

fn parse_number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("{flag} takes a number, not {text}"))
}

impl Config {
    fn parse(args: &[String]) -> Result<Config, String> {
        let mut config = Config {
            quick: false,
            pin: None,
            count: None,
            sizes: None,
            transports: vec![Transport::Tcp, Transport::Ipc],
            tests: vec![Test::Push, Test::Pub, Test::ReqRep],
            impls: Impl::all(),
            flavors: vec![Flavor::Current],
            runs: 1,
            each: false,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| rest.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag {
                "-h" | "--help" => return Err(String::new()),
                "--quick" => config.quick = true,
                "--pin" => config.pin = Some(parse_number(flag, &value()?)?),
                "--count" => config.count = Some(parse_number(flag, &value()?)?),
                "--runs" => config.runs = parse_number::<usize>(flag, &value()?)?.max(1),
                "--api" => {
                    config.each = match value()?.as_str() {
                        "each" => true,
                        "batch" => false,
                        other => return Err(format!("--api takes each or batch, not {other}")),
                    }
                }
                "--size" => config.sizes = Some(parse_list(&value()?, parse_size)?),
                "--transport" => {
                    config.transports = parse_list(&value()?, |t| match t {
                        "tcp" => Ok(Transport::Tcp),
                        "ipc" => Ok(Transport::Ipc),
                        "ws" => Ok(Transport::Ws),
                        "udp" => Ok(Transport::Udp),
                        _ => Err(format!("unknown transport {t}")),
                    })?
                }
                "--test" => {
                    config.tests = parse_list(&value()?, |t| match t {
                        "push" | "pushpull" | "push/pull" => Ok(Test::Push),
                        "pub" | "pubsub" | "pub/sub" => Ok(Test::Pub),
                        "req" | "reqrep" | "req/rep" | "lat" | "latency" => Ok(Test::ReqRep),
                        _ => Err(format!("unknown test {t}")),
                    })?
                }
                "--impl" => {
                    let mut impls = Vec::new();
                    for t in value()?.split(',').filter(|s| !s.is_empty()) {
                        let more = match t {
                            "all" => Impl::all(),
                            "ours" | "tokio" => vec![Impl::Tokio],
                            "monocoque" | "monocoque-rs" => vec![Impl::Monocoque],
                            "zmq.rs" | "zeromq" | "zmqrs" => {
                                match Impl::all().into_iter().find(|i| i.name() == "zmqrs") {
                                    Some(imp) => vec![imp],
                                    None => {
                                        return Err(
                                            "zmqrs needs a build with --features zmqrs".to_string()
                                        )
                                    }
                                }
                            }
                            name => match Impl::all().into_iter().find(|i| i.name() == name) {
                                Some(imp) => vec![imp],
                                None => return Err(format!("unknown implementation {name}")),
                            },
                        };
                        for imp in more {
                            if !impls.contains(&imp) {
                                impls.push(imp);
                            }
                        }
                    }
                    config.impls = impls;
                }
                "--runtime" => {
                    config.flavors = match value()?.as_str() {
                        "current" | "current_thread" => vec![Flavor::Current],
                        "multi" | "multi_thread" => vec![Flavor::Multi],
                        "both" => vec![Flavor::Current, Flavor::Multi],
                        "hop" => vec![Flavor::Hop],
                        "current,hop" => vec![Flavor::Current, Flavor::Hop],
                        other => return Err(format!("unknown runtime {other}")),
                    }
                }
                other => return Err(format!("unknown option {other}")),
            }
        }
        if config.transports.is_empty() || config.tests.is_empty() || config.impls.is_empty() {
            return Err("nothing to run".to_string());
        }
        Ok(config)
    }

    fn count(&self, test: Test, size: usize) -> u64 {
        let count = self.count.unwrap_or_else(|| {
            let n = test.default_count(size);
            if self.quick {
                n / 20
            } else {
                n
            }
        });
        count.max(2)
    }
}

/// One implementation as run: ours (tokio on one runtime, smol, mio) or an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Variant {
    imp: Impl,
    flavor: Flavor,
}

impl Variant {
    fn label(self, flavors: usize) -> String {
        match self.imp {
            Impl::Tokio if flavors > 1 => format!("tokio ({})", self.flavor.name()),
            imp => imp.name().to_string(),
        }
    }
}

/// One measurement's outcome.
#[derive(Debug, Clone, Copy)]
enum Measure {
    /// Messages per second and bytes per second at the receiver, (udp) the share of the
    /// messages sent that never arrived, and the CPU seconds both processes used per
    /// million messages (over their whole run: set-up included, a small share at the
    /// counts measured).
    Throughput {
        msgs: f64,
        bytes: f64,
        loss: Option<f64>,
        cpu: f64,
    },
    /// Round-trip time in nanoseconds.
    Latency { mean: f64, p50: f64, p99: f64 },
}

impl Measure {
    /// The number ranked by `--runs` (higher is better for throughput, lower for latency).
    fn key(&self) -> f64 {
        match *self {
            Measure::Throughput { msgs, .. } => msgs,
            Measure::Latency { mean, .. } => mean,
        }
    }

    /// Line `k` of its table cells: the throughput (0) and CPU per million messages (1),
    /// or latency mean (0), p50 (1), p99 (2).
    fn value(&self, k: usize) -> f64 {
        match *self {
            Measure::Throughput { msgs, cpu, .. } => [msgs, cpu][k.min(1)],
            Measure::Latency { mean, p50, p99 } => [mean, p50, p99][k.min(2)],
        }
    }

    fn cell(&self, k: usize) -> String {
        match *self {
            Measure::Throughput { cpu, .. } if k == 1 => format_cpu(cpu),
            Measure::Throughput {
                msgs, bytes, loss, ..
            } => format_throughput(msgs, bytes, loss),
            Measure::Latency { .. } => format_micros(self.value(k)),
        }
    }

    fn summary(&self) -> String {
        match *self {
            Measure::Throughput {
                msgs,
                bytes,
                loss,
                cpu,
            } => format!(
                "{}, {}",
                format_throughput(msgs, bytes, loss),
                format_cpu(cpu)
            ),
            Measure::Latency { mean, p50, p99 } => format!(
                "mean {} p50 {} p99 {}",
                format_micros(mean),
                format_micros(p50),
                format_micros(p99)
            ),
        }
    }
}

/// One row group of the table: a test at one size over one transport.
#[derive(Debug, Clone, Copy)]
struct Case {
    test: Test,
    size: usize,
    transport: Transport,
    count: u64,
}

impl Case {
    /// The sides: (binds, connects). Over udp the push/pull rows are RADIO to DISH.
    fn roles(self) -> (Role, Role) {
        match (self.transport, self.test) {
            (Transport::Udp, Test::Push) => (Role::Dish, Role::Radio),
            _ => self.test.roles(),
        }
    }
}

/// A peer process, ended (by its own id) if still running when dropped.
struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Peer {
    /// Start a peer. Its input stays open until [`finish`](Self::finish): a publisher waits
    /// for `GO` there, and a sender that cannot wait for its messages to be written waits for
    /// the input to close.
    fn start(exe: &Path, args: &PeerArgs) -> Result<Peer, String> {
        let mut command = Command::new(exe);
        if args.imp == Impl::Cabi {
            let lib = cabi_lib(exe)?;
            let dir = lib.parent().ok_or("no directory")?.join("cabi");
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let link = dir.join("libzmq.so.5");
            // Made once: the other peer of the run may be loading it already.
            if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&lib, &link)
                    .map_err(|e| format!("{}: {e}", link.display()))?;
            }
            command
                .env("LD_LIBRARY_PATH", &dir)
                .env(libzmq::CABI_LIB_VAR, &lib);
        }
        let mut child = command
            .args(args.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a peer: {e}"))?;
        let out = BufReader::new(child.stdout.take().ok_or("peer without stdout")?);
        Ok(Peer { child, out })
    }

    /// The rest of the next line starting with `prefix`; `ERROR` lines and an early end
    /// fail.
    fn expect(&mut self, prefix: &str) -> Result<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            match self.out.read_line(&mut line) {
                Ok(0) | Err(_) => return Err(format!("peer exited before {prefix}")),
                Ok(_) => {}
            }
            let line = line.trim_end();
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_string());
            }
            if let Some(why) = line.strip_prefix("ERROR") {
                return Err(why.trim().to_string());
            }
        }
    }

    fn tell(&mut self, line: &str) -> Result<(), String> {
        let input = self.child.stdin.as_mut().ok_or("peer without stdin")?;
        writeln!(input, "{line}")
            .and_then(|()| input.flush())
            .map_err(|e| format!("cannot signal the peer: {e}"))
    }

    /// Close the peer's input and wait for it to end; the CPU time it used.
    fn finish(mut self) -> Result<std::time::Duration, String> {
        drop(self.child.stdin.take());
        let (ok, cpu) = cpu::wait_with_cpu(&mut self.child)?;
        if ok {
            Ok(cpu)
        } else {
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
            let why = rest
                .lines()
                .find_map(|l| l.strip_prefix("ERROR"))
                .unwrap_or("");
            Err(format!("peer failed{why}"))
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Why `variant` cannot run `case` (its cell is then `-`), if it cannot.
fn unsupported(case: Case, variant: Variant) -> Option<&'static str> {
    match case.transport {
        Transport::Udp if case.test != Test::Push => {
            return Some("udp:// carries RADIO/DISH only, measured in the push/pull rows")
        }
        Transport::Udp if case.size > UDP_BODY_MAX => {
            return Some("a udp datagram holds at most 8,192 bytes, group included")
        }
        Transport::Ws | Transport::Udp if !variant.imp.is_ours() || variant.imp == Impl::Cabi => {
            return Some(
                "this build links the system libzmq 4.3.4, without the draft transports \
                 ws:// and udp://; the other anchors have neither",
            )
        }
        _ => {}
    }
    if variant.imp == Impl::Cabi
        && std::env::current_exe().map_or(true, |exe| cabi_lib(&exe).is_err())
    {
        return Some(
            "our C ABI library is not built: cargo build --release -p zmtp-libzmq \
             (or name it with ZMTP_BENCH_CABI)",
        );
    }
    let (bind, connect) = case.test.roles();
    let ipc = case.transport == Transport::Ipc;
    match variant.imp {
        Impl::Monocoque => {
            monocoque::unsupported(bind, ipc).or(monocoque::unsupported(connect, ipc))
        }
        _ => None,
    }
}

/// Our C ABI's library for the `cabi` peers: `libzmq.so` beside this executable (where
/// `cargo build --release -p zmtp-libzmq` leaves it), or the file ZMTP_BENCH_CABI names.
fn cabi_lib(exe: &Path) -> Result<PathBuf, String> {
    let lib = match std::env::var_os("ZMTP_BENCH_CABI") {
        Some(path) => PathBuf::from(path),
        None => exe.with_file_name("libzmq.so"),
    };
    std::fs::canonicalize(&lib).map_err(|e| {
        format!(
            "our C ABI library {} is missing ({e}): build it with \
             cargo build --release -p zmtp-libzmq",
            lib.display()
        )
    })
}

/// Run one measurement: start both peers, wait for the result, check both ended well.
fn run_once(
    exe: &Path,
    case: Case,
    variant: Variant,
    pin: Option<usize>,
    ipc_path: &Path,
) -> Result<Measure, String> {
    let (bind_role, connect_role) = match variant.imp {
        Impl::Monocoque => monocoque::sides(case.roles()),
        _ => case.roles(),
    };
    let endpoint = match case.transport {
        Transport::Tcp => "tcp://127.0.0.1:*".to_string(),
        Transport::Ipc => format!("ipc://{}", ipc_path.display()),
        Transport::Ws => "ws://127.0.0.1:*".to_string(),
        Transport::Udp => "udp://127.0.0.1:*".to_string(),
    };
    let args = |role, endpoint: String| PeerArgs {
        role,
        imp: variant.imp,
        flavor: variant.flavor,
        endpoint,
        count: case.count,
        size: case.size,
        warmup: if case.test == Test::ReqRep {
            (case.count / 50).clamp(1, 1000)
        } else {
            0
        },
        pin,
    };
    let mut server = Peer::start(exe, &args(bind_role, endpoint))?;
    let resolved = server.expect("ENDPOINT")?;
    let mut client = Peer::start(exe, &args(connect_role, resolved))?;
    // The side that reports: the receiver of a stream, or REQ.
    let server_reports = matches!(bind_role, Role::Pull | Role::Sub | Role::Dish | Role::Req);
    // A publisher (or RADIO) sends warm-ups until the receiver has seen one.
    if case.test == Test::Pub || bind_role == Role::Dish {
        let (subscriber, publisher) = if server_reports {
            (&mut server, &mut client)
        } else {
            (&mut client, &mut server)
        };
        subscriber.expect("SUBSCRIBED")?;
        publisher.tell("GO")?;
    }
    let result = if server_reports {
        server.expect("RESULT")?
    } else {
        client.expect("RESULT")?
    };
    let cpu = client.finish()? + server.finish()?;
    let numbers: Vec<f64> = result
        .split_whitespace()
        .map(|n| n.parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("bad result: {result}"))?;
    match (case.test, numbers.as_slice()) {
        (Test::Push | Test::Pub, &[nanos, messages]) => {
            let secs = (nanos / 1e9).max(1e-9);
            Ok(Measure::Throughput {
                msgs: messages / secs,
                bytes: messages * case.size as f64 / secs,
                loss: None,
                cpu: cpu_per_million(cpu, messages),
            })
        }
        (Test::Push, &[nanos, messages, received, sent]) if sent > 0.0 => {
            let secs = (nanos / 1e9).max(1e-9);
            Ok(Measure::Throughput {
                msgs: messages / secs,
                bytes: messages * case.size as f64 / secs,
                loss: Some(1.0 - received / sent),
                cpu: cpu_per_million(cpu, messages),
            })
        }
        (Test::ReqRep, &[mean, p50, p99]) => Ok(Measure::Latency { mean, p50, p99 }),
        _ => Err(format!("bad result: {result}")),
    }
}

/// CPU seconds per million messages.
fn cpu_per_million(cpu: std::time::Duration, messages: f64) -> f64 {
    cpu.as_secs_f64() / messages.max(1.0) * 1e6
}

fn format_cpu(cpu_per_million: f64) -> String {
    format!("{cpu_per_million:.3} CPU-s/M")
}

fn format_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn format_throughput(msgs: f64, bytes: f64, loss: Option<f64>) -> String {
    match loss {
        None => format!("{} msg/s {:.1} MB/s", format_rate(msgs), bytes / 1e6),
        Some(loss) => format!(
            "{} msg/s {:.1} MB/s, {:.1}% lost",
            format_rate(msgs),
            bytes / 1e6,
            loss * 100.0
        ),
    }
}

fn format_micros(nanos: f64) -> String {
    format!("{:.1} us", nanos / 1e3)
}

fn format_size(size: usize) -> String {
    if size >= 1024 * 1024 && size.is_multiple_of(1024 * 1024) {
        format!("{} MiB", size / (1024 * 1024))
    } else if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The median of several runs (by throughput or mean latency).
fn median(mut runs: Vec<Measure>) -> Option<Measure> {
    runs.sort_by(|a, b| a.key().total_cmp(&b.key()));
    runs.get(runs.len() / 2).copied()
}

/// The median of some numbers (the mean of the middle two for an even count).
fn median_of(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(xs[n / 2]),
        _ => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// What one implementation gave for one case.
#[derive(Debug, Clone)]
enum Outcome {
    /// It cannot run this case, for this reason.
    Unsupported(&'static str),
    /// One entry per round: the measurement, or `None` if that run failed.
    Rounds(Vec<Option<Measure>>),
}

impl Outcome {
    /// Every round's measurement, if every run succeeded.
    fn all(&self) -> Option<Vec<Measure>> {
        match self {
            Outcome::Unsupported(_) => None,
            Outcome::Rounds(rounds) => rounds.iter().copied().collect(),
        }
    }

    fn cell(&self, k: usize) -> String {
        match self {
            Outcome::Unsupported(_) => "-".to_string(),
            Outcome::Rounds(_) => match self.all().and_then(median) {
                Some(m) => m.cell(k),
                None => "FAILED".to_string(),
            },
        }
    }
}

/// One ratio column: one of ours against an anchor (or against tokio), by variant index.
#[derive(Debug, Clone, Copy)]
struct Pair {
    ours: usize,
    anchor: usize,
}

/// The pairs compared: each of ours against each anchor, then smol, mio, uring and the C
/// ABI against tokio, and uring and the C ABI against mio (the driver under it).
fn pairs(variants: &[Variant]) -> Vec<Pair> {
    let ours: Vec<usize> = (0..variants.len())
        .filter(|&i| variants[i].imp.is_ours())
        .collect();
    let mut out = Vec::new();
    for &o in &ours {
        for a in (0..variants.len()).filter(|&a| !variants[a].imp.is_ours()) {
            out.push(Pair { ours: o, anchor: a });
        }
    }
    if let Some(tokio) = variants.iter().position(|v| v.imp == Impl::Tokio) {
        for &o in ours.iter().filter(|&&o| variants[o].imp != Impl::Tokio) {
            out.push(Pair {
                ours: o,
                anchor: tokio,
            });
        }
    }
    let mio = variants.iter().position(|v| v.imp == Impl::Mio);
    for other in [Impl::Uring, Impl::Cabi] {
        let other = variants.iter().position(|v| v.imp == other);
        if let (Some(mio), Some(other)) = (mio, other) {
            out.push(Pair {
                ours: other,
                anchor: mio,
            });
        }
    }
    out
}

/// The median over the rounds of `ours` against `anchor` in that round, for line `k`
/// (oriented so that above 1 means ours is better); `-` unless both ran in every round.
fn ratio(test: Test, ours: &Outcome, anchor: &Outcome, k: usize) -> String {
    let (Some(ours), Some(anchor)) = (ours.all(), anchor.all()) else {
        return "-".to_string();
    };
    let per_round: Vec<f64> = ours
        .iter()
        .zip(&anchor)
        .filter_map(|(o, a)| {
            let (o, a) = (o.value(k), a.value(k));
            // Latency and CPU: lower is better.
            (o > 0.0 && a > 0.0).then(|| match (test, k) {
                (Test::ReqRep, _) | (Test::Push | Test::Pub, 1) => a / o,
                (Test::Push | Test::Pub, _) => o / a,
            })
        })
        .collect();
    median_of(per_round).map_or("-".to_string(), |r| format!("{r:.2}"))
}

/// The table lines of a test, with the line number each shows ([`Measure::value`]): two
/// for a throughput test (messages per second, CPU per million messages), three (mean,
/// p50, p99) for latency.
fn lines(test: Test) -> Vec<(String, usize)> {
    match test {
        Test::Push | Test::Pub => vec![
            (test.label().to_string(), 0),
            (format!("{} CPU, both sides", test.label()), 1),
        ],
        Test::ReqRep => vec![
            ("req/rep latency mean".to_string(), 0),
            ("req/rep latency p50".to_string(), 1),
            ("req/rep latency p99".to_string(), 2),
        ],
    }
}

/// The table lines of one case, as cells, for the medians and for the ratios ([`lines`]).
fn rows(case: Case, outcomes: &[Outcome], pairs: &[Pair]) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut values = Vec::new();
    let mut ratios = Vec::new();
    for (label, k) in lines(case.test) {
        let lead = vec![
            label,
            format_size(case.size),
            case.transport.name().to_string(),
        ];
        let mut row = lead.clone();
        row.extend(outcomes.iter().map(|o| o.cell(k)));
        values.push(row);
        let mut row = lead;
        row.extend(
            pairs
                .iter()
                .map(|p| ratio(case.test, &outcomes[p.ours], &outcomes[p.anchor], k)),
        );
        ratios.push(row);
    }
    (values, ratios)
}

/// The lines of the third table: for each ws or udp case, each of our variants there
/// against its own tcp figure of the same test and size, the median over the rounds of
/// the ratio within each round (above 1: faster than over tcp). Empty without tcp cases.
fn transport_rows(results: &[(Case, Vec<Outcome>)], ours: &[usize]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (case, outcomes) in results {
        if !matches!(case.transport, Transport::Ws | Transport::Udp) {
            continue;
        }
        let Some((_, tcp)) = results.iter().find(|(c, _)| {
            c.transport == Transport::Tcp && c.test == case.test && c.size == case.size
        }) else {
            continue;
        };
        for (label, k) in lines(case.test) {
            let mut row = vec![
                label,
                format_size(case.size),
                format!("{}/tcp", case.transport.name()),
            ];
            row.extend(
                ours.iter()
                    .map(|&i| ratio(case.test, &outcomes[i], &tcp[i], k)),
            );
            out.push(row);
        }
    }
    out
}

fn print_table(header: &[String], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i < 3 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line(header));
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if i < 3 {
                "-".repeat(w + 2)
            } else {
                format!("{}:", "-".repeat(w + 1))
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in rows {
        let _ = writeln!(out, "{}", line(row));
    }
    let _ = out.flush();
}

fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn orchestrate(config: &Config) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    // The peers inherit it.
    std::env::set_var(peer::EACH_VAR, if config.each { "1" } else { "0" });
    // Counted before pinning, which leaves this process one.
    let cpus = cpu_count();
    if let Some(cpu) = config.pin {
        affinity::pin_to(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let mut variants = Vec::new();
    for &imp in &config.impls {
        match imp {
            Impl::Tokio => {
                variants.extend(config.flavors.iter().map(|&flavor| Variant { imp, flavor }))
            }
            _ => variants.push(Variant {
                imp,
                flavor: Flavor::Current,
            }),
        }
    }
    let mut cases = Vec::new();
    for &test in &config.tests {
        let sizes = config.sizes.clone().unwrap_or_else(|| test.default_sizes());
        for &size in &sizes {
            if test == Test::Pub && size == 0 {
                return Err("pub/sub needs messages of at least 1 byte".to_string());
            }
            for &transport in &config.transports {
                cases.push(Case {
                    test,
                    size,
                    transport,
                    count: config.count(test, size),
                });
            }
        }
    }

    let command: Vec<String> = std::env::args().skip(1).collect();
    eprintln!(
        "zmtp-bench {}: libzmq {}, {} CPU(s) available, {}, {} run(s) per measurement",
        command.join(" "),
        libzmq::version(),
        cpus,
        config
            .pin
            .map_or("not pinned".to_string(), |c| format!("pinned to CPU {c}")),
        config.runs
    );
    let ipc_path: PathBuf =
        std::env::temp_dir().join(format!("zmtp-bench-{}.ipc", std::process::id()));
    let total = cases.len() * variants.len() * config.runs;
    let pairs = pairs(&variants);
    let mut done = 0;
    let mut table = Vec::new();
    let mut ratio_table = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut results: Vec<(Case, Vec<Outcome>)> = Vec::new();
    for &case in &cases {
        let mut outcomes: Vec<Outcome> = variants
            .iter()
            .map(|&v| match unsupported(case, v) {
                Some(why) => Outcome::Unsupported(why),
                None => Outcome::Rounds(Vec::new()),
            })
            .collect();
        for _ in 0..config.runs {
            // Alternate implementations run by run, so drift on a shared machine hits all.
            for (i, &variant) in variants.iter().enumerate() {
                done += 1;
                eprint!(
                    "[{done}/{total}] {} {} {} x{} {}: ",
                    case.test.label(),
                    format_size(case.size),
                    case.transport.name(),
                    format_count(case.count),
                    variant.label(2),
                );
                let Outcome::Rounds(rounds) = &mut outcomes[i] else {
                    eprintln!("-");
                    continue;
                };
                let outcome = run_once(&exe, case, variant, config.pin, &ipc_path);
                let _ = std::fs::remove_file(&ipc_path);
                match outcome {
                    Ok(m) => {
                        eprintln!("{}", m.summary());
                        rounds.push(Some(m));
                    }
                    Err(e) => {
                        eprintln!("FAILED: {e}");
                        rounds.push(None);
                    }
                }
                let _ = std::io::stderr().flush();
            }
        }
        for (o, v) in outcomes.iter().zip(&variants) {
            if let Outcome::Unsupported(why) = o {
                let note = format!(
                    "{} {} over {}: {why}",
                    v.label(config.flavors.len()),
                    case.test.label(),
                    case.transport.name()
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
        let (values, ratios) = rows(case, &outcomes, &pairs);
        table.extend(values);
        ratio_table.extend(ratios);
        results.push((case, outcomes));
    }
    let ours: Vec<usize> = (0..variants.len())
        .filter(|&i| variants[i].imp.is_ours())
        .collect();
    let transport_table = transport_rows(&results, &ours);

    let label = |i: usize| variants[i].label(config.flavors.len());
    let lead = || vec!["test".to_string(), "size".into(), "transport".into()];
    let mut header = lead();
    header.extend((0..variants.len()).map(label));
    let mut ratio_header = lead();
    ratio_header.extend(
        pairs
            .iter()
            .map(|p| format!("{}/{}", label(p.ours), label(p.anchor))),
    );
    println!(
        "zmtp-bench: tokio = zmtp-tokio on a {} runtime, smol = zmtp-smol on zmtp_smol::block_on \
         (one thread), mio = zmtp-mio (blocking, one I/O thread); anchors: libzmq {}, \
         monocoque = monocoque-rs 0.4 on its tokio backend (write coalescing and flush for \
         streams, eager REQ/REP), raw = plain sockets carrying ZMTP frames, each message copied into \
         256 KiB batches (pub/sub: the same stream as push/pull, no subscription), a blocking \
         ping-pong for req/rep{}; \
         {} CPU(s) available, {}; median of {} run(s)",
        config
            .flavors
            .iter()
            .map(|f| format!("{}-thread", f.name()))
            .collect::<Vec<_>>()
            .join(" / "),
        libzmq::version(),
        if cfg!(feature = "zmqrs") {
            ", zmqrs = zeromq (zmq.rs) 0.7 on a current-thread tokio runtime"
        } else {
            ""
        },
        cpus,
        config.pin.map_or("not pinned".to_string(), |c| format!(
            "both processes pinned to CPU {c}"
        )),
        config.runs
    );
    println!(
        "throughput at the receiver, first to last message (MB = 10^6 bytes); our drivers' peers send \
         and receive {}",
        if config.each {
            "one message per send_slice / recv (--api each)"
        } else {
            "batches of up to 256 messages (and 256 KiB) per send_many / recv_many (--api batch)"
        }
    );
    println!();
    print_table(&header, &table);
    if !pairs.is_empty() {
        println!();
        println!(
            "ratios, median over the rounds of the ratio within each round; above 1 means \
             the first is better: first/second for throughput, second/first for latency and CPU"
        );
        println!();
        print_table(&ratio_header, &ratio_table);
    }
    if !transport_table.is_empty() {
        let mut header = lead();
        header.extend(ours.iter().map(|&i| label(i)));
        println!();
        println!(
            "our drivers over ws:// and udp:// against their own tcp:// figure, median over \
             the rounds of the ratio within each round; above 1 means faster than over tcp"
        );
        println!();
        print_table(&header, &transport_table);
    }
    if !notes.is_empty() {
        println!();
        for note in &notes {
            println!("-: {note}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("peer") {
        return peer::main(&args[1..]);
    }
    match Config::parse(&args).and_then(|config| orchestrate(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zmtp-bench: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
