//! The scenarios: each drives one implementation's sockets until its deadline, checking
//! an invariant as it goes, and returns its verdicts.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::relay::Relay;
use crate::sampler::{fd_count, Sampler};
use crate::zmq::{Event, Kind, Opts, Res, Sock, Zmq};

/// One invariant's verdict.
#[derive(Debug, Clone)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it held.
    pub ok: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

impl Check {
    /// A verdict.
    pub fn new(name: &str, ok: bool, detail: String) -> Check {
        Check {
            name: name.to_string(),
            ok,
            detail,
        }
    }
}

/// What a scenario runs with.
pub struct Run<'a> {
    /// The implementation's context: the scenario's bound sockets (its servers).
    pub zmq: Arc<dyn Zmq>,
    /// The context of the connecting sockets (the same as `zmq` but in mixed runs).
    pub peers: Arc<dyn Zmq>,
    /// When the load stops.
    pub deadline: Instant,
    /// The resource sampler, for quiet points.
    pub sampler: &'a Sampler,
}

impl Run<'_> {
    fn socket(&self, kind: Kind, opts: &Opts) -> Res<Box<dyn Sock>> {
        self.zmq.socket(kind, opts)
    }

    /// A connecting socket: of the peers' implementation.
    fn peer_socket(&self, kind: Kind, opts: &Opts) -> Res<Box<dyn Sock>> {
        self.peers.socket(kind, opts)
    }

    fn time_left(&self) -> bool {
        Instant::now() < self.deadline
    }
}

/// A scenario: its name, what it checks, and its body.
pub struct Scenario {
    /// The name `--scenario` takes.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The body.
    pub run: fn(&Run) -> Res<Vec<Check>>,
}

/// Every scenario, in the order they run.
pub const ALL: &[Scenario] = &[
    Scenario {
        name: "churn-senders",
        about:
            "PUSH peers come and go through a relay with partial writes and delay, into one PULL",
        run: churn_senders,
    },
    Scenario {
        name: "black-hole",
        about: "PUSH/PULL with heartbeats; the relay between them goes silent, then returns",
        run: black_hole,
    },
    Scenario {
        name: "storm",
        about:
            "2,000 connections at once to one ROUTER, each handshaking and sending, then all gone",
        run: storm,
    },
    Scenario {
        name: "churn-subscribers",
        about: "a steady PUB; one long-lived SUB while others come and go through a relay",
        run: churn_subscribers,
    },
    Scenario {
        name: "req-kill",
        about: "REQ clients killed mid-request beside well-behaved ones on one ROUTER server",
        run: req_kill,
    },
    Scenario {
        name: "restart",
        about: "a PULL closed and bound again and again under a connecting PUSH",
        run: restart,
    },
];

fn addr_of(endpoint: &str) -> Res<SocketAddr> {
    let a = endpoint.strip_prefix("tcp://").unwrap_or(endpoint);
    a.parse().map_err(|e| format!("endpoint {endpoint}: {e}"))
}

fn linger(d: Duration) -> Option<Option<Duration>> {
    Some(Some(d))
}

// ---------------------------------------------------------------------------------------

/// Messages each churning sender sends.
const SENDER_MESSAGES: u32 = 50;
/// Churning senders alive at once.
const SENDERS_AT_ONCE: u32 = 20;

/// Per sender: the next sequence number expected, and how many arrived.
#[derive(Default)]
struct Seen {
    next: u32,
    count: u32,
}

/// The churning senders' account: what each sent and what arrived of it. A sender whose
/// every message arrived is retired (one bit kept), so that hours of churn keep the
/// account small.
#[derive(Default)]
struct Ledger {
    /// Senders done sending, not retired: how many messages each sent.
    sent: HashMap<u32, u32>,
    /// Senders not retired: what arrived of theirs.
    seen: HashMap<u32, Seen>,
    /// One bit per sender id: retired.
    retired: Vec<u64>,
    retired_senders: u64,
    retired_messages: u64,
    duplicates: u64,
    out_of_order: u64,
}

impl Ledger {
    fn is_retired(&self, id: u32) -> bool {
        let (word, bit) = (id as usize / 64, id % 64);
        self.retired.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Note message `seq` of sender `id`.
    fn arrived(&mut self, id: u32, seq: u32) {
        if self.is_retired(id) {
            self.duplicates += 1;
            return;
        }
        let s = self.seen.entry(id).or_default();
        if seq < s.next {
            self.duplicates += 1;
        } else {
            if seq > s.next {
                self.out_of_order += 1;
            }
            s.next = seq + 1;
            s.count += 1;
        }
    }

    /// Retire sender `id` if all it sent arrived; whether it is retired.
    fn retire_if_complete(&mut self, id: u32) -> bool {
        let Some(&n) = self.sent.get(&id) else {
            return false;
        };
        if self.seen.get(&id).map_or(0, |s| s.count) != n {
            return false;
        }
        self.sent.remove(&id);
        self.seen.remove(&id);
        let (word, bit) = (id as usize / 64, id % 64);
        if self.retired.len() <= word {
            self.retired.resize(word + 1, 0);
        }
        self.retired[word] |= 1 << bit;
        self.retired_senders += 1;
        self.retired_messages += u64::from(n);
        true
    }

    /// Messages sent by the senders done sending.
    fn expected(&self) -> u64 {
        self.retired_messages + self.sent.values().map(|&n| u64::from(n)).sum::<u64>()
    }
}

fn churn_senders(run: &Run) -> Res<Vec<Check>> {
    let mut pull = run.socket(
        Kind::Pull,
        &Opts {
            linger: linger(Duration::ZERO),
            ..Opts::default()
        },
    )?;
    let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    let relay = Relay::start(addr_of(&endpoint)?).map_err(|e| e.to_string())?;
    relay.set_partial_writes(16);
    relay.set_delay(Duration::from_millis(2));
    let via = relay.endpoint();

    let next_id = AtomicU64::new(0);
    let ledger: Mutex<Ledger> = Mutex::new(Ledger::default());
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let done_sending = AtomicBool::new(false);
    let mut malformed = 0u64;

    std::thread::scope(|scope| {
        let senders: Vec<_> = (0..SENDERS_AT_ONCE)
            .map(|_| {
                scope.spawn(|| {
                    while run.time_left() {
                        let id = next_id.fetch_add(1, Ordering::SeqCst) as u32;
                        let result = (|| -> Res<()> {
                            let opts = Opts {
                                linger: linger(Duration::from_secs(10)),
                                ..Opts::default()
                            };
                            let mut push = run.peer_socket(Kind::Push, &opts)?;
                            push.connect(&via)?;
                            for seq in 0..SENDER_MESSAGES {
                                let mut body = [0u8; 40];
                                body[..4].copy_from_slice(&id.to_be_bytes());
                                body[4..8].copy_from_slice(&seq.to_be_bytes());
                                push.send(&[&body], None)?;
                            }
                            push.close();
                            ledger.lock().unwrap().sent.insert(id, SENDER_MESSAGES);
                            // The next sender starts once this one's messages are in (at
                            // most 10 s), so that at most SENDERS_AT_ONCE are alive, lingering
                            // ones included: libzmq's close returns before its linger ends.
                            wait_until(Duration::from_secs(10), || {
                                ledger.lock().unwrap().retire_if_complete(id)
                            });
                            Ok(())
                        })();
                        if let Err(e) = result {
                            errors.lock().unwrap().push(format!("sender {id}: {e}"));
                        }
                    }
                })
            })
            .collect();
        // The receiver: until sending is done and the expected total is in, or 10 s
        // pass with nothing new.
        let receiver = scope.spawn(|| {
            let mut last_new = Instant::now();
            let mut total = 0u64;
            loop {
                match pull.recv(Duration::from_millis(100)) {
                    Ok(Some(frames)) => {
                        last_new = Instant::now();
                        total += 1;
                        let Some(body) = frames
                            .first()
                            .filter(|b| frames.len() == 1 && b.len() == 40)
                        else {
                            malformed += 1;
                            continue;
                        };
                        let id = u32::from_be_bytes(body[..4].try_into().unwrap());
                        let seq = u32::from_be_bytes(body[4..8].try_into().unwrap());
                        ledger.lock().unwrap().arrived(id, seq);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        errors.lock().unwrap().push(format!("receiver: {e}"));
                        break;
                    }
                }
                if done_sending.load(Ordering::SeqCst) {
                    let expected = ledger.lock().unwrap().expected();
                    if total >= expected || last_new.elapsed() > Duration::from_secs(10) {
                        break;
                    }
                }
            }
        });
        for s in senders {
            let _ = s.join();
        }
        done_sending.store(true, Ordering::SeqCst);
        let _ = receiver.join();
    });
    pull.close();
    let connections = relay.accepted();
    drop(relay);

    let ledger = ledger.into_inner().unwrap();
    let errors = errors.into_inner().unwrap();
    let expected = ledger.expected();
    let received = ledger.retired_messages
        + (ledger.seen.values())
            .map(|s| u64::from(s.count))
            .sum::<u64>();
    let short: Vec<u32> = (ledger.sent.iter())
        .filter(|(id, n)| ledger.seen.get(id).map_or(0, |s| s.count) != **n)
        .map(|(id, _)| *id)
        .collect();
    let senders = ledger.retired_senders + ledger.sent.len() as u64;
    let (duplicates, out_of_order) = (ledger.duplicates, ledger.out_of_order);
    let mut checks = vec![
        Check::new(
            "every message exactly once",
            short.is_empty() && duplicates == 0 && malformed == 0 && expected > 0,
            format!(
                "{} senders ({connections} relayed connections), {expected} messages sent, \
                 {received} received, {duplicates} duplicates, {malformed} malformed, {} senders short{}",
                senders,
                short.len(),
                if short.is_empty() { String::new() } else { format!(" (e.g. {:?})", &short[..short.len().min(5)]) }
            ),
        ),
        Check::new(
            "per-sender order kept",
            out_of_order == 0,
            format!("{out_of_order} messages ahead of their sender's next"),
        ),
    ];
    checks.push(Check::new(
        "no socket errors",
        errors.is_empty(),
        errors.first().cloned().unwrap_or_else(|| "none".into()),
    ));
    Ok(checks)
}

// ---------------------------------------------------------------------------------------

/// Heartbeat interval and timeout of the black-hole scenario.
const HB_IVL: Duration = Duration::from_millis(100);
const HB_TIMEOUT: Duration = Duration::from_millis(300);

fn black_hole(run: &Run) -> Res<Vec<Check>> {
    let opts = Opts {
        linger: linger(Duration::ZERO),
        heartbeat: Some((HB_IVL, HB_TIMEOUT)),
        reconnect_ivl: Some(Duration::from_millis(100)),
        ..Opts::default()
    };
    let mut pull = run.socket(Kind::Pull, &opts)?;
    let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    let relay = Relay::start(addr_of(&endpoint)?).map_err(|e| e.to_string())?;
    let mut push = run.peer_socket(Kind::Push, &opts)?;
    let monitor = push.monitor()?;
    push.connect(&relay.endpoint())?;

    let stop = AtomicBool::new(false);
    let sent_seq = AtomicU64::new(0);
    let last_seq = AtomicU64::new(0);
    let received = AtomicU64::new(0);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut detections: Vec<Option<Duration>> = Vec::new();
    let mut resumes: Vec<Option<Duration>> = Vec::new();
    let bound = HB_TIMEOUT * 3;

    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut seq = 1u64;
            while !stop.load(Ordering::SeqCst) {
                match push.send(&[&seq.to_be_bytes()], Some(Duration::from_millis(10))) {
                    Ok(true) => {
                        sent_seq.store(seq, Ordering::SeqCst);
                        seq += 1;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        errors.lock().unwrap().push(format!("send: {e}"));
                        return;
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                match pull.recv(Duration::from_millis(50)) {
                    Ok(Some(f)) if f.len() == 1 && f[0].len() == 8 => {
                        let seq = u64::from_be_bytes(f[0][..].try_into().unwrap());
                        last_seq.fetch_max(seq, Ordering::SeqCst);
                        received.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Some(_)) => errors.lock().unwrap().push("a malformed message".into()),
                    Ok(None) => {}
                    Err(e) => {
                        errors.lock().unwrap().push(format!("recv: {e}"));
                        return;
                    }
                }
            }
        });
        // Cycles: traffic flows, the link goes silent until the sender's socket reports
        // the peer lost (or 3 s), the link returns, traffic resumes.
        loop {
            let before = received.load(Ordering::SeqCst);
            let flowing = wait_until(Duration::from_secs(5), || {
                received.load(Ordering::SeqCst) > before + 20
            });
            if !flowing {
                errors
                    .lock()
                    .unwrap()
                    .push("no traffic before the black hole".into());
                break;
            }
            while monitor.try_recv().is_ok() {}
            let t0 = Instant::now();
            relay.set_black_hole(true);
            let mut detected = None;
            while t0.elapsed() < Duration::from_secs(3) {
                if let Ok((at, Event::Disconnected)) =
                    monitor.recv_timeout(Duration::from_millis(20))
                {
                    detected = Some(at.saturating_duration_since(t0));
                    break;
                }
            }
            detections.push(detected);
            std::thread::sleep(Duration::from_millis(100));
            relay.set_black_hole(false);
            let t1 = Instant::now();
            let mark = sent_seq.load(Ordering::SeqCst);
            let resumed = wait_until(Duration::from_secs(5), || {
                last_seq.load(Ordering::SeqCst) > mark
            });
            resumes.push(resumed.then(|| t1.elapsed()));
            run.sampler.mark();
            if !run.time_left() || !resumed {
                break;
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    push.close();
    pull.close();
    drop(relay);

    let ms = |d: &Duration| format!("{} ms", d.as_millis());
    let found: Vec<Duration> = detections.iter().flatten().copied().collect();
    let worst = found.iter().max();
    let missed = detections.iter().filter(|d| d.is_none()).count();
    let late = found.iter().filter(|d| **d > bound).count();
    let resumed: Vec<Duration> = resumes.iter().flatten().copied().collect();
    let errors = errors.into_inner().unwrap();
    Ok(vec![
        Check::new(
            "dead peer detected within 3 heartbeat timeouts (900 ms)",
            !detections.is_empty() && missed == 0 && late == 0,
            format!(
                "{} black holes, {} detected (DISCONNECTED), {missed} not within 3 s, {late} late; worst {}",
                detections.len(),
                found.len(),
                worst.map_or("-".into(), ms)
            ),
        ),
        Check::new(
            "traffic resumes after the link returns",
            !resumes.is_empty() && resumed.len() == resumes.len(),
            format!(
                "{} of {} resumed within 5 s; slowest {}",
                resumed.len(),
                resumes.len(),
                resumed.iter().max().map_or("-".into(), ms)
            ),
        ),
        Check::new(
            "no socket errors",
            errors.is_empty(),
            errors.first().cloned().unwrap_or_else(|| "none".into()),
        ),
    ])
}

/// Poll `cond` every 5 ms for at most `limit`; whether it became true.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------------------------------------------------------------------------------------

/// Connections of one wave of the storm.
pub const STORM: usize = 2000;
/// Threads opening them.
const STORM_THREADS: usize = 8;

/// Read the server's greeting and READY command (a short command frame). A peer sends its
/// first message only after this: a libzmq 4.3.4 ROUTER did not deliver a message written
/// in one piece with the greeting and READY, before its own greeting was read.
fn storm_read_handshake(s: &mut TcpStream) -> Res<()> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while got.len() < 66 || got.len() < 66 + usize::from(got[65]) {
        match s.read(&mut buf) {
            Ok(0) => return Err("closed during the handshake".into()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("handshake: {e}")),
        }
    }
    if got[0] != 0xFF || got[64] != 0x04 {
        return Err("not a ZMTP 3 greeting and command".into());
    }
    Ok(())
}

/// A raw DEALER peer's message: one frame carrying `n`.
fn storm_message(n: u32) -> [u8; 6] {
    let b = n.to_be_bytes();
    [0x00, 4, b[0], b[1], b[2], b[3]]
}

fn storm(run: &Run) -> Res<Vec<Check>> {
    let mut router = run.socket(
        Kind::Router,
        &Opts {
            linger: linger(Duration::ZERO),
            ..Opts::default()
        },
    )?;
    let endpoint = router.bind("tcp://127.0.0.1:*")?;
    let addr = addr_of(&endpoint)?;
    let mut waves = 0usize;
    let mut failures: Vec<String> = Vec::new();
    let mut fd_failures: Vec<String> = Vec::new();
    let mut worst_fd_excess = 0i64;
    let mut slowest = Duration::ZERO;
    loop {
        let before = fd_count();
        let t0 = Instant::now();
        // Open every connection at once, each sending its greeting and READY; then each
        // reads the server's and sends one message.
        let streams: Vec<Res<TcpStream>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..STORM_THREADS)
                .map(|t| {
                    scope.spawn(move || {
                        let hello = zmtp_testkit::wire::dealer_hello();
                        let opened: Vec<(usize, Res<TcpStream>)> = (t..STORM)
                            .step_by(STORM_THREADS)
                            .map(|i| {
                                let s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
                                    .map_err(|e| format!("connect {i}: {e}"))
                                    .and_then(|mut s| {
                                        s.write_all(&hello)
                                            .map_err(|e| format!("write {i}: {e}"))?;
                                        Ok(s)
                                    });
                                (i, s)
                            })
                            .collect();
                        (opened.into_iter())
                            .map(|(i, s)| {
                                let mut s = s?;
                                s.set_read_timeout(Some(Duration::from_secs(10)))
                                    .map_err(|e| e.to_string())?;
                                storm_read_handshake(&mut s).map_err(|e| format!("{i}: {e}"))?;
                                s.write_all(&storm_message(i as u32))
                                    .map_err(|e| format!("write {i}: {e}"))?;
                                Ok(s)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let mut open = Vec::new();
        for s in streams {
            match s {
                Ok(s) => open.push(s),
                Err(e) => failures.push(e),
            }
        }
        // Every connection's message, exactly once.
        let mut got: HashSet<u32> = HashSet::new();
        let mut dup = 0;
        let limit = Instant::now() + Duration::from_secs(30);
        while got.len() < open.len() && Instant::now() < limit {
            match router.recv(Duration::from_millis(200))? {
                Some(f) if f.len() == 2 && f[1].len() == 4 => {
                    let n = u32::from_be_bytes(f[1][..].try_into().unwrap());
                    dup += usize::from(!got.insert(n));
                }
                Some(f) => failures.push(format!("unexpected message of {} frames", f.len())),
                None => {}
            }
        }
        if got.len() != STORM || dup > 0 {
            failures.push(format!(
                "wave {waves}: {} of {STORM} messages, {dup} duplicates",
                got.len()
            ));
        }
        slowest = slowest.max(t0.elapsed());
        // All gone: read what the server sent (so that the close is a FIN), then close.
        for mut s in open {
            let _ = s.set_nonblocking(true);
            let mut buf = [0u8; 256];
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        }
        let back = wait_until(Duration::from_secs(10), || fd_count() <= before);
        let excess = fd_count() as i64 - before as i64;
        worst_fd_excess = worst_fd_excess.max(excess);
        if !back {
            fd_failures.push(format!(
                "wave {waves}: {excess} fds above the level before it after 10 s"
            ));
        }
        run.sampler.mark();
        waves += 1;
        if !run.time_left() || failures.len() + fd_failures.len() > 5 {
            break;
        }
    }
    router.close();
    Ok(vec![
        Check::new(
            "every connection handshakes and delivers its message once",
            failures.is_empty() && waves > 0,
            format!(
                "{waves} waves of {STORM} connections; slowest wave {} ms{}",
                slowest.as_millis(),
                failures
                    .first()
                    .map(|f| format!("; first failure: {f}"))
                    .unwrap_or_default()
            ),
        ),
        Check::new(
            "fds return to the pre-wave level with the socket still open",
            fd_failures.is_empty(),
            format!(
                "worst excess 10 s after a wave: {worst_fd_excess} fds{}",
                fd_failures
                    .first()
                    .map(|f| format!("; {f}"))
                    .unwrap_or_default()
            ),
        ),
    ])
}

// ---------------------------------------------------------------------------------------

fn churn_subscribers(run: &Run) -> Res<Vec<Check>> {
    let hwm = 100_000;
    let mut publisher = run.socket(
        Kind::Pub,
        &Opts {
            linger: linger(Duration::ZERO),
            sndhwm: Some(hwm),
            ..Opts::default()
        },
    )?;
    let endpoint = publisher.bind("tcp://127.0.0.1:*")?;
    let relay = Relay::start(addr_of(&endpoint)?).map_err(|e| e.to_string())?;
    relay.set_partial_writes(32);
    relay.set_delay(Duration::from_millis(1));
    relay.set_bandwidth(256 * 1024);
    let via = relay.endpoint();
    let sub_opts = Opts {
        linger: linger(Duration::ZERO),
        rcvhwm: Some(hwm),
        ..Opts::default()
    };
    let mut long = run.peer_socket(Kind::Sub, &sub_opts)?;
    long.subscribe(b"")?;
    long.connect(&endpoint)?;

    let stop = AtomicBool::new(false);
    let published = AtomicU64::new(0);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let churned = AtomicU64::new(0);
    let churners_done = AtomicBool::new(false);
    // Set once the publisher has sent its last message (it finishes a batch after `stop`).
    let publisher_done = AtomicBool::new(false);
    let churn_gaps = AtomicU64::new(0);
    let churn_silent = AtomicU64::new(0);
    let (mut first, mut last, mut count, mut gaps, mut backwards) = (None, 0u64, 0u64, 0u64, 0u64);
    let seq_of = |f: &[Vec<u8>]| -> Option<u64> {
        (f.len() == 1 && f[0].len() == 8).then(|| u64::from_be_bytes(f[0][..].try_into().unwrap()))
    };

    std::thread::scope(|scope| -> Res<()> {
        scope.spawn(|| {
            let mut seq = 1u64;
            while !stop.load(Ordering::SeqCst) {
                for _ in 0..4 {
                    if let Err(e) = publisher.send(&[&seq.to_be_bytes()], None) {
                        errors.lock().unwrap().push(format!("publish: {e}"));
                        return;
                    }
                    published.store(seq, Ordering::SeqCst);
                    seq += 1;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            publisher_done.store(true, Ordering::SeqCst);
        });
        let churners: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    while run.time_left() {
                        let r = (|| -> Res<()> {
                            let mut sub = run.peer_socket(Kind::Sub, &sub_opts)?;
                            sub.subscribe(b"")?;
                            sub.connect(&via)?;
                            let mut prev: Option<u64> = None;
                            for _ in 0..20 {
                                match sub.recv(Duration::from_secs(2))? {
                                    Some(f) => {
                                        let seq = seq_of(&f).ok_or("a malformed message")?;
                                        if prev.is_some_and(|p| seq != p + 1) {
                                            churn_gaps.fetch_add(1, Ordering::SeqCst);
                                        }
                                        prev = Some(seq);
                                    }
                                    None => break,
                                }
                            }
                            if prev.is_none() {
                                churn_silent.fetch_add(1, Ordering::SeqCst);
                            }
                            sub.close();
                            churned.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })();
                        if let Err(e) = r {
                            errors
                                .lock()
                                .unwrap()
                                .push(format!("churning subscriber: {e}"));
                        }
                    }
                })
            })
            .collect();
        // The publisher stops once the churning subscribers are done.
        scope.spawn(|| {
            for c in churners {
                let _ = c.join();
            }
            churners_done.store(true, Ordering::SeqCst);
        });
        // The long-lived subscriber reads here until the publisher stops and the rest
        // has drained.
        let mut stopped_at: Option<Instant> = None;
        loop {
            if stopped_at.is_none() && churners_done.load(Ordering::SeqCst) {
                stop.store(true, Ordering::SeqCst);
                stopped_at = Some(Instant::now());
            }
            if let Some(s) = stopped_at {
                let all_in = first.is_some()
                    && publisher_done.load(Ordering::SeqCst)
                    && last == published.load(Ordering::SeqCst);
                if all_in || s.elapsed() > Duration::from_secs(5) {
                    break;
                }
            }
            let Some(f) = long.recv(Duration::from_millis(50))? else {
                continue;
            };
            let seq = seq_of(&f).ok_or("a malformed message")?;
            count += 1;
            if first.is_none() {
                first = Some(seq);
            } else if seq <= last {
                backwards += 1;
            } else if seq != last + 1 {
                gaps += seq - last - 1;
            }
            last = last.max(seq);
        }
        Ok(())
    })?;
    let final_seq = published.load(Ordering::SeqCst);
    publisher.close();
    long.close();
    drop(relay);
    let errors = errors.into_inner().unwrap();
    let (churned, churn_gaps, churn_silent) = (
        churned.into_inner(),
        churn_gaps.into_inner(),
        churn_silent.into_inner(),
    );
    Ok(vec![
        Check::new(
            "the long-lived subscriber sees a contiguous sequence",
            first.is_some() && gaps == 0 && backwards == 0 && last == final_seq,
            format!(
                "{count} received, from {} to {last} of {final_seq} published; {gaps} missing, {backwards} repeated or reordered",
                first.unwrap_or(0)
            ),
        ),
        Check::new(
            "each churning subscriber sees contiguous messages",
            churned > 0 && churn_gaps == 0 && churn_silent == 0,
            format!("{churned} subscribers came and went; {churn_gaps} gaps, {churn_silent} got nothing in 2 s"),
        ),
        Check::new(
            "no socket errors",
            errors.is_empty(),
            errors.first().cloned().unwrap_or_else(|| "none".into()),
        ),
    ])
}

// ---------------------------------------------------------------------------------------

fn req_kill(run: &Run) -> Res<Vec<Check>> {
    let quick = Opts {
        linger: linger(Duration::ZERO),
        ..Opts::default()
    };
    let mut router = run.socket(Kind::Router, &quick)?;
    let endpoint = router.bind("tcp://127.0.0.1:*")?;
    let relay = Relay::start(addr_of(&endpoint)?).map_err(|e| e.to_string())?;
    let via = relay.endpoint();
    let stop = AtomicBool::new(false);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let (good_ok, good_wrong, good_lost) =
        (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let (kills, served) = (AtomicU64::new(0), AtomicU64::new(0));

    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                match router.recv(Duration::from_millis(50)) {
                    Ok(Some(f)) if f.len() == 3 && f[1].is_empty() => {
                        let mut reply = f[2].clone();
                        reply.extend_from_slice(b"/reply");
                        let frames: [&[u8]; 3] = [&f[0], b"", &reply];
                        // Replies to a vanished client are dropped by the ROUTER.
                        if let Err(e) = router.send(&frames, Some(Duration::from_millis(100))) {
                            errors.lock().unwrap().push(format!("server send: {e}"));
                        }
                        served.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Some(f)) => errors
                        .lock()
                        .unwrap()
                        .push(format!("a request of {} frames", f.len())),
                    Ok(None) => {}
                    Err(e) => {
                        errors.lock().unwrap().push(format!("server recv: {e}"));
                        return;
                    }
                }
            }
        });
        let mut clients = Vec::new();
        for c in 0..4 {
            let (endpoint, quick) = (&endpoint, &quick);
            let (good_ok, good_wrong, good_lost, errors) =
                (&good_ok, &good_wrong, &good_lost, &errors);
            clients.push(scope.spawn(move || {
                let mut req: Option<Box<dyn Sock>> = None;
                let mut n = 0u64;
                while run.time_left() {
                    let r = (|| -> Res<()> {
                        if req.is_none() {
                            let mut s = run.peer_socket(Kind::Req, quick)?;
                            s.connect(endpoint)?;
                            req = Some(s);
                        }
                        let s = req.as_mut().unwrap();
                        let body = format!("good-{c}-{n}");
                        n += 1;
                        s.send(&[body.as_bytes()], None)?;
                        match s.recv(Duration::from_secs(5))? {
                            Some(f)
                                if f.len() == 1 && f[0] == format!("{body}/reply").as_bytes() =>
                            {
                                good_ok.fetch_add(1, Ordering::SeqCst);
                            }
                            Some(_) => {
                                good_wrong.fetch_add(1, Ordering::SeqCst);
                            }
                            None => {
                                good_lost.fetch_add(1, Ordering::SeqCst);
                                // A REQ waiting for a reply cannot send again: replace it.
                                if let Some(s) = req.take() {
                                    s.close();
                                }
                            }
                        }
                        Ok(())
                    })();
                    if let Err(e) = r {
                        errors.lock().unwrap().push(format!("client {c}: {e}"));
                        return;
                    }
                }
                if let Some(s) = req.take() {
                    s.close();
                }
            }));
        }
        for k in 0..4u64 {
            let (via, quick, relay, kills, errors) = (&via, &quick, &relay, &kills, &errors);
            clients.push(scope.spawn(move || {
                let mut n = 0u64;
                while run.time_left() {
                    let r = (|| -> Res<()> {
                        let mut s = run.peer_socket(Kind::Req, quick)?;
                        s.connect(via)?;
                        let body = format!("bad-{k}-{n}");
                        s.send(&[body.as_bytes()], Some(Duration::from_secs(1)))?;
                        match (n + k) % 3 {
                            // Dropped at once after the send.
                            0 => {}
                            // Dropped a moment later, when the request may be in the server.
                            1 => std::thread::sleep(Duration::from_millis(n % 5)),
                            // Its connection (and the other killers') reset under it.
                            _ => {
                                std::thread::sleep(Duration::from_millis(1));
                                relay.reset_all();
                            }
                        }
                        s.close();
                        kills.fetch_add(1, Ordering::SeqCst);
                        n += 1;
                        Ok(())
                    })();
                    if let Err(e) = r {
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("killed client {k}: {e}"));
                        return;
                    }
                }
            }));
        }
        for c in clients {
            let _ = c.join();
        }
        stop.store(true, Ordering::SeqCst);
    });
    router.close();
    drop(relay);
    let errors = errors.into_inner().unwrap();
    let (ok, wrong, lost) = (
        good_ok.into_inner(),
        good_wrong.into_inner(),
        good_lost.into_inner(),
    );
    Ok(vec![
        Check::new(
            "well-behaved clients always get their own reply",
            ok > 0 && wrong == 0 && lost == 0,
            format!(
                "{ok} replies right, {wrong} wrong, {lost} missing (5 s); {} clients killed mid-request; {} requests served",
                kills.into_inner(),
                served.into_inner()
            ),
        ),
        Check::new(
            "no socket errors",
            errors.is_empty(),
            errors.first().cloned().unwrap_or_else(|| "none".into()),
        ),
    ])
}

// ---------------------------------------------------------------------------------------

/// SNDHWM and RCVHWM of the restart scenario: what the dying peer's buffers may hold.
const RESTART_HWM: usize = 1000;

/// What the restarted peers received: how many, the highest sequence number, and how
/// many came at or below it (repeated or reordered).
#[derive(Default)]
struct Tally {
    received: u64,
    last: u64,
    backwards: u64,
}

/// Receive sequence numbers on `pull` until `until`.
fn read_seqs(pull: &mut Box<dyn Sock>, until: Instant, tally: &mut Tally) -> Res<()> {
    while Instant::now() < until {
        if let Some(f) = pull.recv(Duration::from_millis(20))? {
            let seq = (f.len() == 1 && f[0].len() == 8)
                .then(|| u64::from_be_bytes(f[0][..].try_into().unwrap()))
                .ok_or("a malformed message")?;
            tally.received += 1;
            if seq <= tally.last {
                tally.backwards += 1;
            }
            tally.last = tally.last.max(seq);
        }
    }
    Ok(())
}

fn restart(run: &Run) -> Res<Vec<Check>> {
    let pull_opts = Opts {
        linger: linger(Duration::ZERO),
        rcvhwm: Some(RESTART_HWM),
        ..Opts::default()
    };
    // A port for the whole run: bound by the first PULL, bound again by each next one.
    let mut pull = run.socket(Kind::Pull, &pull_opts)?;
    let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    let mut push = run.peer_socket(
        Kind::Push,
        &Opts {
            linger: linger(Duration::ZERO),
            reconnect_ivl: Some(Duration::from_millis(20)),
            sndhwm: Some(RESTART_HWM),
            ..Opts::default()
        },
    )?;
    push.connect(&endpoint)?;
    let stop = AtomicBool::new(false);
    let sent = AtomicU64::new(0);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut tally = Tally::default();
    let mut restarts = 0u64;
    let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ endpoint.len() as u64;

    let outcome = std::thread::scope(|scope| -> Res<()> {
        scope.spawn(|| {
            let mut seq = 1u64;
            while !stop.load(Ordering::SeqCst) {
                match push.send(&[&seq.to_be_bytes()], Some(Duration::from_millis(50))) {
                    Ok(true) => {
                        sent.store(seq, Ordering::SeqCst);
                        seq += 1;
                        if seq.is_multiple_of(8) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    Ok(false) => {}
                    Err(e) => {
                        errors.lock().unwrap().push(format!("send: {e}"));
                        return;
                    }
                }
            }
        });
        loop {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let up = Duration::from_millis(150 + rng % 250);
            read_seqs(&mut pull, Instant::now() + up, &mut tally)?;
            if !run.time_left() {
                break;
            }
            // Restart: the peer goes, with what sat in its buffers, and binds again.
            pull.close();
            restarts += 1;
            let bind_by = Instant::now() + Duration::from_secs(2);
            pull = loop {
                let mut p = run.socket(Kind::Pull, &pull_opts)?;
                match p.bind(&endpoint) {
                    Ok(_) => break p,
                    Err(e) if Instant::now() > bind_by => return Err(format!("rebind: {e}")),
                    Err(_) => {
                        p.close();
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            };
            run.sampler.mark();
        }
        stop.store(true, Ordering::SeqCst);
        // The last peer stays: it drains what is still on its way.
        let mut idle_from = Instant::now();
        let mut seen = tally.received;
        while idle_from.elapsed() < Duration::from_secs(1) {
            read_seqs(
                &mut pull,
                Instant::now() + Duration::from_millis(100),
                &mut tally,
            )?;
            if tally.received != seen {
                seen = tally.received;
                idle_from = Instant::now();
            }
        }
        pull.close();
        Ok(())
    });
    push.close();
    let mut errors = errors.into_inner().unwrap();
    if let Err(e) = outcome {
        errors.push(e);
    }
    let sent = sent.into_inner();
    let Tally {
        received,
        last,
        backwards,
    } = tally;
    let lost = sent.saturating_sub(received);
    let allowed = restarts * 2 * RESTART_HWM as u64;
    Ok(vec![
        Check::new(
            "nothing duplicated or reordered across restarts",
            backwards == 0 && received > 0 && last <= sent,
            format!("{received} received of {sent} sent; {backwards} repeated or out of order"),
        ),
        Check::new(
            "loss only what the dying peers' buffers held (<= restarts x (SNDHWM + RCVHWM))",
            lost <= allowed,
            format!(
                "{lost} lost over {restarts} restarts ({:.1} per restart; bound {allowed})",
                lost as f64 / restarts.max(1) as f64
            ),
        ),
        Check::new(
            "no socket errors",
            errors.is_empty(),
            errors.first().cloned().unwrap_or_else(|| "none".into()),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_counts_duplicates_reordering_and_retires_complete_senders() {
        let mut l = Ledger::default();
        l.sent.insert(3, 3);
        l.arrived(3, 0);
        l.arrived(3, 2); // 1 skipped: ahead of its turn
        assert!(!l.retire_if_complete(3));
        l.arrived(3, 1); // late: counted as a duplicate, not as arrived
        assert_eq!((l.out_of_order, l.duplicates), (1, 1));
        l.arrived(3, 3);
        assert!(l.retire_if_complete(3));
        assert!(l.seen.is_empty() && l.sent.is_empty());
        l.arrived(3, 0); // after retirement
        assert_eq!(l.duplicates, 2);
        assert_eq!(
            (l.retired_senders, l.retired_messages, l.expected()),
            (1, 3, 3)
        );
    }

    /// A raw DEALER's greeting, READY and message reach a ROUTER of either implementation.
    #[test]
    fn a_raw_storm_peer_is_understood() {
        for imp in ["ours", "libzmq"] {
            let zmq = crate::zmq::new_impl(imp).unwrap();
            let mut router = zmq.socket(Kind::Router, &Opts::default()).unwrap();
            let endpoint = router.bind("tcp://127.0.0.1:*").unwrap();
            let mut s = TcpStream::connect(addr_of(&endpoint).unwrap()).unwrap();
            s.write_all(&zmtp_testkit::wire::dealer_hello()).unwrap();
            storm_read_handshake(&mut s).unwrap();
            s.write_all(&storm_message(7)).unwrap();
            let f = router.recv(Duration::from_secs(5)).unwrap();
            let f = f.unwrap_or_else(|| panic!("{imp}: nothing received"));
            assert_eq!(f[1], 7u32.to_be_bytes(), "{imp}");
            router.close();
        }
    }
}
