//! Hostile peers over real TCP sockets against the blocking driver (zmtp-mio), on both of
//! its backends: epoll (`on_mio`) and io_uring (`on_uring`, skipped with a note where the
//! kernel refuses io_uring). The same attacks as the async drivers' suite (`hostile.rs`):
//! a slow-loris greeting, frame headers announcing absurd sizes, a flood of silent
//! connections, random bytes after a valid handshake, and a subscriber that never reads,
//! each beside a well-behaved libzmq peer that must not notice.
//!
//! Hostile peers are raw `std::net::TcpStream`s speaking (or not) ZMTP by hand
//! ([`zmtp_conformance::raw_peer`]). Every wait is bounded. Resident memory and open file
//! descriptors are process-wide, so the tests run one at a time ([`serial`]); what they
//! measure is printed with `eprintln!`, prefixed with the backend's name (`--nocapture`).

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zmtp_conformance::ffi::{Ctx, Msg, ZMQ_EVENT_ALL, ZMQ_PUSH, ZMQ_RCVTIMEO, ZMQ_SUB};
use zmtp_conformance::raw_peer::{
    drain, greeting, libzmq_undisturbed, open_fds, raw_handshake, rss, subscribe, tcp_addr,
    wait_closed,
};
use zmtp_conformance::security::zsock;
use zmtp_mio::{Backend, Context, MonitorEvent, MonitorEventKind, Options, SocketType};
use zmtp_testkit::Rng;

/// Bound on anything that should happen at once.
const PROMPTLY: Duration = Duration::from_secs(2);
/// Allowance past a deadline (timers, a loaded machine).
const SLACK: Duration = Duration::from_millis(1500);
const MIB: u64 = 1024 * 1024;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A context on `backend`, or `None` (with a note) where io_uring is unavailable here.
fn context(backend: Backend) -> Option<Context> {
    match Context::with_backend(backend) {
        Ok(ctx) => Some(ctx),
        Err(e) if backend == Backend::IoUring => {
            eprintln!("io_uring unavailable here ({e}): test skipped");
            None
        }
        Err(e) => panic!("a context: {e}"),
    }
}

fn name(backend: Backend) -> &'static str {
    if backend == Backend::IoUring {
        "uring"
    } else {
        "mio"
    }
}

/// Bind `socket` to a loopback port: its endpoint and address.
fn bind(socket: &zmtp_mio::Socket) -> (String, std::net::SocketAddr) {
    let endpoint = socket.bind("tcp://127.0.0.1:*").expect("bind ours");
    let addr = tcp_addr(&endpoint);
    (endpoint, addr)
}

/// Monitor events until one satisfies `stop` or `limit` passes.
fn events_until(
    monitor: &mpsc::Receiver<MonitorEvent>,
    limit: Duration,
    stop: impl Fn(&MonitorEvent) -> bool,
) -> Vec<MonitorEvent> {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    while let Ok(e) = monitor.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let done = stop(&e);
        seen.push(e);
        if done {
            break;
        }
    }
    seen
}

fn seq_of(frame: &[u8]) -> u64 {
    u64::from_be_bytes(frame[..8].try_into().expect("an 8-byte sequence number"))
}

/// A libzmq PUSH connected to `endpoint` sends `n` numbered messages, which our PULL must
/// receive all, in order; the libzmq peer's monitor must show one handshake and no
/// disconnection. `during` runs (on this thread) between the first message and the rest.
fn libzmq_push_undisturbed(pull: &zmtp_mio::Socket, endpoint: &str, n: u64, during: impl FnOnce()) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_PUSH);
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("libzmq monitor");
    z.connect(endpoint).expect("zmq_connect");
    z.send(&0u64.to_be_bytes(), 0).expect("libzmq sends 0");
    let first = pull
        .recv_timeout(Some(PROMPTLY))
        .expect("message 0 in time");
    assert_eq!(seq_of(&first.frames()[0]), 0);
    during();
    for seq in 1..n {
        z.send(&seq.to_be_bytes(), 0).expect("libzmq sends");
    }
    for want in 1..n {
        let msg = (pull.recv_timeout(Some(PROMPTLY)))
            .unwrap_or_else(|e| panic!("message {want} not received: {e}"));
        assert_eq!(seq_of(&msg.frames()[0]), want, "out of order");
    }
    libzmq_undisturbed(&mut mon, "libzmq PUSH");
}

fn slow_loris_greeting_is_cut_at_the_handshake_deadline(backend: Backend) {
    let _serial = serial();
    let Some(ctx) = context(backend) else {
        return;
    };
    let deadline = Duration::from_millis(500);
    let mut options = Options::default();
    options.handshake_ivl = Some(deadline);
    let ours = ctx.socket_with(SocketType::Pull, options).expect("socket");
    let monitor = ours.monitor();
    let (endpoint, addr) = bind(&ours);
    libzmq_push_undisturbed(&ours, &endpoint, 200, || {
        let mut raw = TcpStream::connect(addr).expect("raw connect");
        let start = Instant::now();
        // One byte of a valid greeting every 100 ms: the whole one would take 6.4 s.
        let mut closed = None;
        for b in greeting() {
            if raw.write_all(&[b]).is_err() {
                closed = Some(Instant::now());
                break;
            }
            if let Some(t) = wait_closed(&mut raw, Duration::from_millis(100)) {
                closed = Some(t);
                break;
            }
        }
        let closed = closed.expect("the slow greeting was never cut") - start;
        eprintln!(
            "{}: slow loris: closed after {closed:?}, deadline {deadline:?}",
            name(backend)
        );
        assert!(closed >= deadline - Duration::from_millis(50), "cut early");
        assert!(closed <= deadline + SLACK, "cut after {closed:?}");
    });
    let events = events_until(&monitor, PROMPTLY, |e| {
        e.kind == MonitorEventKind::HandshakeFailedNoDetail
    });
    assert!(
        (events.iter()).any(|e| e.kind == MonitorEventKind::HandshakeFailedNoDetail),
        "no HANDSHAKE_FAILED_NO_DETAIL in {events:?}"
    );
}

/// A raw PUSH completes a handshake with our PULL and sends `header` alone: the connection
/// is closed promptly, without memory growth, and a libzmq PUSH beside it is undisturbed.
fn huge_header_closes(backend: Backend, options: Options, header: &[u8], what: &str) {
    let _serial = serial();
    let Some(ctx) = context(backend) else {
        return;
    };
    let ours = ctx.socket_with(SocketType::Pull, options).expect("socket");
    let (endpoint, addr) = bind(&ours);
    libzmq_push_undisturbed(&ours, &endpoint, 200, || {
        let before = rss();
        let mut raw = raw_handshake(addr, "PUSH");
        raw.write_all(header).expect("the header");
        let start = Instant::now();
        let closed = wait_closed(&mut raw, PROMPTLY).expect("the connection was not closed");
        let grew = rss().saturating_sub(before);
        eprintln!(
            "{}: {what}: closed after {:?}, RSS +{:.1} MiB",
            name(backend),
            closed - start,
            grew as f64 / MIB as f64
        );
        assert!(grew < 32 * MIB, "{what}: RSS grew by {grew} bytes");
    });
}

fn frame_header_announcing_2_pow_62_bytes_closes_the_connection(backend: Backend) {
    let mut header = vec![0x02];
    header.extend_from_slice(&(1u64 << 62).to_be_bytes());
    huge_header_closes(
        backend,
        Options::default(),
        &header,
        "2^62-byte frame header",
    );
}

fn frame_header_over_maxmsgsize_closes_the_connection(backend: Backend) {
    let mut options = Options::default();
    options.maxmsgsize = Some(1024);
    let mut header = vec![0x02];
    header.extend_from_slice(&4096u64.to_be_bytes());
    huge_header_closes(backend, options, &header, "frame over MAXMSGSIZE");
}

fn silent_connections_are_closed_at_the_handshake_deadline(backend: Backend) {
    let _serial = serial();
    let Some(ctx) = context(backend) else {
        return;
    };
    let deadline = Duration::from_millis(500);
    let mut options = Options::default();
    options.handshake_ivl = Some(deadline);
    let ours = ctx.socket_with(SocketType::Pull, options).expect("socket");
    let (endpoint, addr) = bind(&ours);
    let fds_before = open_fds();
    let rss_before = rss();
    const N: usize = 300;
    libzmq_push_undisturbed(&ours, &endpoint, 200, || {
        let start = Instant::now();
        let mut conns: Vec<TcpStream> = (0..N)
            .map(|_| {
                let s = TcpStream::connect(addr).expect("raw connect");
                s.set_nonblocking(true).expect("non-blocking");
                s
            })
            .collect();
        let rss_up = rss();
        // Every one is closed by our side once the deadline passes.
        let end = start + deadline + SLACK + Duration::from_secs(1);
        let mut open = N;
        while open > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
            open = conns
                .iter_mut()
                .map(|s| !drain(s).closed)
                .filter(|&o| o)
                .count();
        }
        eprintln!(
            "{}: {N} silent connections: {} still open after {:?}; RSS {:.1} MiB before, \
             {:.1} MiB with them",
            name(backend),
            open,
            start.elapsed(),
            rss_before as f64 / MIB as f64,
            rss_up as f64 / MIB as f64
        );
        assert_eq!(open, 0, "silent connections left open past the deadline");
    });
    // Our side's descriptors for them are gone too (the raw ends were dropped above).
    let end = Instant::now() + PROMPTLY;
    while open_fds() > fds_before + 8 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let fds_after = open_fds();
    eprintln!(
        "{}: open descriptors {fds_before} before, {fds_after} after",
        name(backend)
    );
    assert!(
        fds_after <= fds_before + 8,
        "descriptors leaked: {fds_before} before, {fds_after} after"
    );
}

fn random_bytes_after_a_handshake_close_only_that_peer(backend: Backend) {
    let _serial = serial();
    let Some(ctx) = context(backend) else {
        return;
    };
    let ours = (ctx.socket_with(SocketType::Pull, Options::default())).expect("socket");
    let (endpoint, addr) = bind(&ours);
    let mut rng = Rng::new(0x5eed_0019);
    let mut closed = 0;
    const ROUNDS: usize = 20;
    libzmq_push_undisturbed(&ours, &endpoint, 500, || {
        for _ in 0..ROUNDS {
            let mut raw = raw_handshake(addr, "PUSH");
            // A long-form frame header with a reserved flag bit, then random bytes: not a
            // valid frame whatever follows.
            let mut junk = vec![0xf2];
            let n = 16 + (rng.next_u64() % 512) as usize;
            junk.extend((0..n).map(|_| rng.next_u64() as u8));
            raw.write_all(&junk).expect("junk");
            if wait_closed(&mut raw, PROMPTLY).is_some() {
                closed += 1;
            }
        }
    });
    eprintln!(
        "{}: {closed} of {ROUNDS} junk-sending peers closed; the libzmq PUSH undisturbed",
        name(backend)
    );
    assert_eq!(closed, ROUNDS, "a junk-sending peer was kept");
    // Messages from them never reached the application.
    assert!(
        ours.try_recv().expect("try_recv").is_none(),
        "junk delivered"
    );
}

fn a_subscriber_that_never_reads_is_bounded_by_hwm(backend: Backend) {
    let _serial = serial();
    let Some(ctx) = context(backend) else {
        return;
    };
    let ours = (ctx.socket_with(SocketType::Pub, Options::default())).expect("socket");
    let (endpoint, addr) = bind(&ours);
    // A raw subscriber that subscribes to everything and never reads.
    let mut stuck = raw_handshake(addr, "SUB");
    stuck.write_all(&subscribe(b"")).expect("SUBSCRIBE");
    // A libzmq subscriber that reads.
    let zctx = Ctx::new();
    let z = zsock(&zctx, ZMQ_SUB);
    z.set_int(ZMQ_RCVTIMEO, 100).expect("RCVTIMEO");
    z.subscribe(b"").expect("subscribe");
    z.connect(&endpoint).expect("zmq_connect");
    let mut msg = Msg::new();
    // Both subscriptions are in place once a probe reaches libzmq (the raw one was sent
    // first, on a connection already up).
    let end = Instant::now() + PROMPTLY;
    loop {
        ours.send("probe").expect("send");
        if z.recv_msg(&mut msg).is_ok() {
            break;
        }
        assert!(Instant::now() < end, "libzmq SUB never subscribed");
    }
    let before = rss();
    let body = vec![0x5a; 1024];
    let mut peak = before;
    const SENT: usize = 200_000;
    let mut received = 0;
    for i in 0..SENT {
        ours.send(body.as_slice()).expect("PUB send never blocks");
        if i % 1000 == 0 {
            peak = peak.max(rss());
            // The reader keeps up, more or less (a PUB drops for it too when it lags).
            while z.recv_msg(&mut msg).is_ok() {
                received += 1;
                if received % 1000 == 0 {
                    break;
                }
            }
        }
    }
    // The reader still gets what is published now.
    let end = Instant::now() + PROMPTLY;
    let mut got_end = false;
    while Instant::now() < end && !got_end {
        ours.send("end").expect("send");
        while z.recv_msg(&mut msg).is_ok() {
            if msg.data() == b"end" {
                got_end = true;
                break;
            }
        }
    }
    let grew = peak.saturating_sub(before);
    eprintln!(
        "{}: {SENT} messages of 1 KiB published to a subscriber that never reads: RSS peak \
         +{:.1} MiB; the reading libzmq SUB received {received} and the end marker: {got_end}",
        name(backend),
        grew as f64 / MIB as f64
    );
    assert!(got_end, "the reading subscriber stopped getting messages");
    // SNDHWM (1000) messages of 1 KiB for the stuck peer, plus what the kernel buffers
    // hold: far below the 200 MiB published.
    assert!(grew < 32 * MIB, "RSS grew by {grew} bytes");
    drop(stuck);
}

macro_rules! suite {
    ($module:ident, $backend:expr) => {
        mod $module {
            #[test]
            fn slow_loris_greeting_is_cut_at_the_handshake_deadline() {
                super::slow_loris_greeting_is_cut_at_the_handshake_deadline($backend);
            }

            #[test]
            fn frame_header_announcing_2_pow_62_bytes_closes_the_connection() {
                super::frame_header_announcing_2_pow_62_bytes_closes_the_connection($backend);
            }

            #[test]
            fn frame_header_over_maxmsgsize_closes_the_connection() {
                super::frame_header_over_maxmsgsize_closes_the_connection($backend);
            }

            #[test]
            fn silent_connections_are_closed_at_the_handshake_deadline() {
                super::silent_connections_are_closed_at_the_handshake_deadline($backend);
            }

            #[test]
            fn random_bytes_after_a_handshake_close_only_that_peer() {
                super::random_bytes_after_a_handshake_close_only_that_peer($backend);
            }

            #[test]
            fn a_subscriber_that_never_reads_is_bounded_by_hwm() {
                super::a_subscriber_that_never_reads_is_bounded_by_hwm($backend);
            }
        }
    };
}

suite!(on_mio, zmtp_mio::Backend::Mio);
suite!(on_uring, zmtp_mio::Backend::IoUring);
