//! The peer processes: each runs one side of one measurement, started by the orchestrator
//! as `zmtp-bench peer key=value...`.
//!
//! A peer talks to the orchestrator in lines on its standard output:
//! - `ENDPOINT <endpoint>`: the binding side is listening there (the resolved endpoint);
//! - `SUBSCRIBED`: a subscriber received its first warm-up message, so its subscription is
//!   in place at the publisher; the orchestrator then writes `GO` to the publisher's input;
//! - `RESULT ...`: the measurement (see [`throughput_result`] and [`latency_result`]);
//! - `ERROR <why>`: the peer failed (it then exits non-zero).
//!
//! A watchdog thread ends a peer that makes no progress for [`IDLE_LIMIT`], so a lost
//! message or a dead partner cannot hang the whole run.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{affinity, libzmq, monocoque, ours, raw};

/// How long a peer may go without sending or receiving a message before it gives up.
pub const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// The first byte of a data message.
pub const DATA: u8 = b'D';
/// The first byte of a warm-up message (PUB/SUB, sent until the subscription is in place).
pub const WARMUP: u8 = b'W';
/// Bytes of the header written into each message: a tag byte and a little-endian sequence
/// number. Smaller messages carry only what fits.
const HEADER: usize = 9;

/// What one peer process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// PULL: binds, receives and times the stream.
    Pull,
    /// PUSH: connects and sends.
    Push,
    /// SUB (HWM 0): binds, subscribes to everything, receives and times the stream.
    Sub,
    /// PUB (HWM 0): connects, sends warm-ups until told `GO`, then the stream.
    Pub,
    /// REP: binds and echoes every request.
    Rep,
    /// REQ: connects and times each round trip.
    Req,
    /// RADIO (udp): connects, sends warm-ups until told `GO`, then the stream, all in one
    /// group.
    Radio,
    /// DISH (udp): binds, joins the group, receives what arrives within a time bound and
    /// times it; datagrams may be lost.
    Dish,
}

/// The group of the RADIO/DISH stream.
pub const GROUP: &[u8] = b"g";

/// How long a DISH waits for the next datagram before taking the rest as lost.
pub const UDP_IDLE: Duration = Duration::from_millis(500);

/// Why an anchor cannot play RADIO or DISH.
pub const OURS_ONLY: &str = "RADIO/DISH over udp:// is measured on our drivers only";

/// Which implementation a peer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    /// `zmtp-tokio`.
    Tokio,
    /// `zmtp-smol`.
    Smol,
    /// `zmtp-mio`: blocking sockets on our own reactor.
    Mio,
    /// `zmtp-mio` with its I/O thread on an io_uring (`Backend::IoUring`).
    Uring,
    /// The system libzmq.
    Libzmq,
    /// Our C ABI: the libzmq peers' own code, linked at run time to zmtp-libzmq's
    /// `libzmq.so.5` instead of the system's (see [`CABI_LIB_VAR`]).
    Cabi,
    /// monocoque-rs on its tokio backend (an anchor: another Rust ZeroMQ).
    Monocoque,
    /// Plain sockets writing ZMTP framing in large batches (an anchor: the floor).
    Raw,
    /// zeromq (zmq.rs) on tokio (an anchor, with the `zmqrs` feature).
    #[cfg(feature = "zmqrs")]
    Zmqrs,
}

/// Which tokio runtime our tokio peers run on (smol peers always run on `zmtp_smol::block_on`,
/// one thread, like `Current`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `Builder::new_current_thread`: everything on the main thread.
    Current,
    /// `Builder::new_multi_thread`: one worker per CPU; the benchmark loop runs in
    /// `block_on` on the main thread, as under `#[tokio::main]`.
    Multi,
    /// Current-thread runtime, but every message the sender sends goes through a channel
    /// to a task that owns the socket: measures what a channel hop per message costs.
    Hop,
}

/// Everything a peer process needs, passed on its command line.
#[derive(Debug, Clone)]
pub struct PeerArgs {
    /// Its part.
    pub role: Role,
    /// Its implementation.
    pub imp: Impl,
    /// Its runtime (ours only).
    pub flavor: Flavor,
    /// Where to bind or connect.
    pub endpoint: String,
    /// Messages (throughput) or round trips (latency) measured.
    pub count: u64,
    /// Bytes per message.
    pub size: usize,
    /// Round trips made before measuring (REQ/REP).
    pub warmup: u64,
    /// The CPU to pin to, if any.
    pub pin: Option<usize>,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Pull => "pull",
            Role::Push => "push",
            Role::Sub => "sub",
            Role::Pub => "pub",
            Role::Rep => "rep",
            Role::Req => "req",
            Role::Radio => "radio",
            Role::Dish => "dish",
        }
    }
}

impl Impl {
    /// The name used on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Tokio => "tokio",
            Impl::Smol => "smol",
            Impl::Mio => "mio",
            Impl::Uring => "uring",
            Impl::Libzmq => "libzmq",
            Impl::Cabi => "cabi",
            Impl::Monocoque => "monocoque",
            Impl::Raw => "raw",
            #[cfg(feature = "zmqrs")]
            Impl::Zmqrs => "zmqrs",
        }
    }

    /// Every implementation this build can run, in the order the runs alternate.
    pub fn all() -> Vec<Impl> {
        vec![
            Impl::Tokio,
            Impl::Smol,
            Impl::Mio,
            Impl::Uring,
            Impl::Libzmq,
            Impl::Cabi,
            Impl::Monocoque,
            Impl::Raw,
            #[cfg(feature = "zmqrs")]
            Impl::Zmqrs,
        ]
    }

    /// Whether this is one of our drivers (as opposed to an anchor it is compared with).
    pub fn is_ours(self) -> bool {
        matches!(
            self,
            Impl::Tokio | Impl::Smol | Impl::Mio | Impl::Uring | Impl::Cabi
        )
    }
}

impl Flavor {
    /// The name used on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Current => "current",
            Flavor::Multi => "multi",
            Flavor::Hop => "hop",
        }
    }
}

impl PeerArgs {
    /// The command line that starts this peer (after the program name).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "peer".to_string(),
            format!("role={}", self.role.name()),
            format!("impl={}", self.imp.name()),
            format!("runtime={}", self.flavor.name()),
            format!("endpoint={}", self.endpoint),
            format!("count={}", self.count),
            format!("size={}", self.size),
            format!("warmup={}", self.warmup),
        ];
        if let Some(cpu) = self.pin {
            args.push(format!("pin={cpu}"));
        }
        args
    }

    /// Parse what [`to_args`](Self::to_args) wrote (without the leading `peer`).
    pub fn parse(args: &[String]) -> Result<PeerArgs, String> {
        let mut role = None;
        let mut imp = None;
        let mut flavor = Flavor::Current;
        let mut endpoint = None;
        let (mut count, mut size, mut warmup, mut pin) = (0, 0, 0, None);
        for arg in args {
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| format!("peer argument without '=': {arg}"))?;
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("bad number for {key}: {value}"))
            };
            match key {
                "role" => {
                    role = [
                        Role::Pull,
                        Role::Push,
                        Role::Sub,
                        Role::Pub,
                        Role::Rep,
                        Role::Req,
                        Role::Radio,
                        Role::Dish,
                    ]
                    .into_iter()
                    .find(|r| r.name() == value)
                }
                "impl" => imp = Impl::all().into_iter().find(|i| i.name() == value),
                "runtime" => {
                    flavor = [Flavor::Current, Flavor::Multi, Flavor::Hop]
                        .into_iter()
                        .find(|f| f.name() == value)
                        .ok_or_else(|| format!("bad runtime {value}"))?
                }
                "endpoint" => endpoint = Some(value.to_string()),
                "count" => count = number()?,
                "size" => size = usize::try_from(number()?).map_err(|e| e.to_string())?,
                "warmup" => warmup = number()?,
                "pin" => pin = Some(usize::try_from(number()?).map_err(|e| e.to_string())?),
                _ => return Err(format!("unknown peer argument {key}")),
            }
        }
        Ok(PeerArgs {
            role: role.ok_or("peer needs role=")?,
            imp: imp.ok_or("peer needs impl=")?,
            flavor,
            endpoint: endpoint.ok_or("peer needs endpoint=")?,
            count,
            size,
            warmup,
            pin,
        })
    }
}

/// Run one peer process to the end.
pub fn main(args: &[String]) -> ExitCode {
    let args = match PeerArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            say(&format!("ERROR {e}"));
            return ExitCode::FAILURE;
        }
    };
    if let Some(cpu) = args.pin {
        if let Err(e) = affinity::pin_to(cpu) {
            say(&format!("ERROR cannot pin to CPU {cpu}: {e}"));
            return ExitCode::FAILURE;
        }
    }
    start_watchdog(args.role);
    let result = match args.imp {
        Impl::Tokio | Impl::Smol => ours::run(&args),
        Impl::Mio | Impl::Uring => crate::mio::run(&args),
        Impl::Libzmq => libzmq::run(&args),
        Impl::Cabi => libzmq::check_cabi().and_then(|()| libzmq::run(&args)),
        Impl::Monocoque => monocoque::run(&args),
        Impl::Raw => raw::run(&args),
        #[cfg(feature = "zmqrs")]
        Impl::Zmqrs => crate::zmqrs::run(&args),
    };
    match result {
        Ok(Some(line)) => {
            say(&format!("RESULT {line}"));
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!(
                "ERROR {} {}: {e}",
                args.imp.name(),
                args.role.name()
            ));
            ExitCode::FAILURE
        }
    }
}

/// Write one protocol line to the orchestrator, at once.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

static PROGRESS: AtomicU64 = AtomicU64::new(0);

/// Record progress (messages done so far) for the watchdog: one relaxed store.
#[inline]
pub fn tick(done: u64) {
    PROGRESS.store(done + 1, Ordering::Relaxed);
}

fn start_watchdog(role: Role) {
    std::thread::spawn(move || {
        let mut last = 0;
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let now = PROGRESS.load(Ordering::Relaxed);
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() > IDLE_LIMIT {
                say(&format!(
                    "ERROR {} made no progress for {} s after {now} messages",
                    role.name(),
                    IDLE_LIMIT.as_secs()
                ));
                std::process::exit(3);
            }
        }
    });
}

/// A flag raised when the orchestrator writes a line (`GO`) to our input, or closes it.
pub fn go_signal() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = flag.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        raised.store(true, Ordering::Release);
    });
    flag
}

/// Block until the orchestrator closes our input (it does once the receiver reported): for a
/// sender whose library gives no way to wait until everything it queued is written.
pub fn wait_for_input_end() {
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut sink);
}

/// Write the header of message `seq` (tag and sequence number, as much as fits).
pub fn fill(buf: &mut [u8], tag: u8, seq: u64) {
    if let Some(first) = buf.first_mut() {
        *first = tag;
    }
    if buf.len() >= HEADER {
        buf[1..HEADER].copy_from_slice(&seq.to_le_bytes());
    }
}

/// Whether a received body is a warm-up message.
pub fn is_warmup(body: &[u8]) -> bool {
    body.first() == Some(&WARMUP)
}

/// Checks that every data message arrives whole, once and in order.
#[derive(Debug)]
pub struct Checker {
    size: usize,
    next: u64,
    /// The subscriber has said that the first warm-up message arrived.
    announced: bool,
}

impl Checker {
    /// A checker for messages of `size` bytes, starting at sequence number 0.
    pub fn new(size: usize) -> Checker {
        Checker {
            size,
            next: 0,
            announced: false,
        }
    }

    /// Before timing starts: skip a subscriber's warm-up messages (announcing the first
    /// one) and check the first data message. Returns true once that message was checked.
    pub fn first(&mut self, role: Role, body: &[u8]) -> Result<bool, String> {
        if matches!(role, Role::Sub | Role::Dish) && is_warmup(body) {
            if !self.announced {
                say("SUBSCRIBED");
                self.announced = true;
            }
            return Ok(false);
        }
        if role == Role::Dish {
            self.check_lossy(body)?;
        } else {
            self.check(body)?;
        }
        Ok(true)
    }

    /// Check the next message.
    #[inline]
    pub fn check(&mut self, body: &[u8]) -> Result<(), String> {
        if body.len() != self.size {
            return Err(format!(
                "message {} has {} bytes, not {}",
                self.next,
                body.len(),
                self.size
            ));
        }
        if let Some(&tag) = body.first() {
            if tag != DATA {
                return Err(format!("message {} has tag {tag:#x}", self.next));
            }
        }
        if body.len() >= HEADER {
            let mut seq = [0u8; 8];
            seq.copy_from_slice(&body[1..HEADER]);
            let seq = u64::from_le_bytes(seq);
            if seq != self.next {
                return Err(format!("expected message {}, got {seq}", self.next));
            }
        }
        self.next += 1;
        Ok(())
    }

    /// Check the next message of a lossy stream (udp): whole, in order, but messages may be
    /// missing; a late warm-up is skipped. Returns
    /// whether it was a data message.
    #[inline]
    pub fn check_lossy(&mut self, body: &[u8]) -> Result<bool, String> {
        if is_warmup(body) {
            return Ok(false);
        }
        if body.len() >= HEADER {
            let mut seq = [0u8; 8];
            seq.copy_from_slice(&body[1..HEADER]);
            let seq = u64::from_le_bytes(seq);
            if seq < self.next {
                return Err(format!(
                    "message {seq} arrived after message {}",
                    self.next - 1
                ));
            }
            self.next = seq;
        }
        self.check(body)?;
        Ok(true)
    }

    /// The sequence number expected next: one past the last message seen.
    pub fn next(&self) -> u64 {
        self.next
    }
}

/// The `RESULT` of a lossy throughput run (udp): `messages` received in `elapsed` after
/// the first one, `received` in all (the first included), of `sent`.
pub fn lossy_result(elapsed: Duration, messages: u64, received: u64, sent: u64) -> String {
    format!("{} {messages} {received} {sent}", elapsed.as_nanos())
}

/// The `RESULT` of a throughput run: `messages` received in `elapsed` after the first one.
pub fn throughput_result(elapsed: Duration, messages: u64) -> String {
    format!("{} {messages}", elapsed.as_nanos())
}

/// The `RESULT` of a latency run: mean, median and 99th percentile, in nanoseconds.
pub fn latency_result(mut samples: Vec<u64>) -> String {
    if samples.is_empty() {
        return "0 0 0".to_string();
    }
    samples.sort_unstable();
    let n = samples.len();
    let mean = samples.iter().sum::<u64>() / n as u64;
    let p50 = samples[n / 2];
    let p99 = samples[(n * 99 / 100).min(n - 1)];
    format!("{mean} {p50} {p99}")
}

/// The environment variable that makes our drivers' peers send and receive one
/// message per call (`--api each`: `send_slice`, `recv`) instead of in batches
/// (`send_many`, `recv_many`, the default). Set by the orchestrator and inherited by the
/// peers it starts.
pub const EACH_VAR: &str = "ZMTP_BENCH_API_EACH";

/// Whether our peers send and receive one message per call (see [`EACH_VAR`]).
pub fn each() -> bool {
    std::env::var_os(EACH_VAR).is_some_and(|v| v == "1")
}

/// How many messages of `size` bytes a batch of the batch APIs holds (`--api batch`): up
/// to 256 messages and 256 KiB (a larger batch only leaves the cache, and held received
/// messages keep the read buffers from being reused).
pub fn batch_len(size: usize) -> usize {
    (256 * 1024 / size.max(1)).clamp(1, 256)
}

/// Message bodies prepared a batch at a time for `send_many`.
pub struct Batcher {
    store: Vec<u8>,
    size: usize,
}

impl Batcher {
    /// Room for one batch of `size`-byte messages (`size` > 0).
    pub fn new(size: usize) -> Batcher {
        Batcher {
            store: vec![0u8; size * batch_len(size)],
            size,
        }
    }

    /// The data messages from sequence number `seq` on, filled: a batch, or what is left
    /// of `count`.
    pub fn fill(&mut self, seq: u64, count: u64) -> Vec<&[u8]> {
        let k = count.saturating_sub(seq).min(batch_len(self.size) as u64);
        for (i, body) in (0..k).zip(self.store.chunks_mut(self.size)) {
            fill(body, DATA, seq + i);
        }
        self.store.chunks(self.size).take(k as usize).collect()
    }
}
