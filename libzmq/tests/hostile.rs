//! Hostile peers over real TCP sockets against sockets made through the C ABI: the attacks
//! of the drivers' hostile suites (zmtp-conformance's `hostile.rs` and
//! `hostile_blocking.rs`) once more, through `zmq_socket`, `zmq_setsockopt` and the rest,
//! and observed as a C program would observe them: `zmq_socket_monitor` events, `zmq_recv`
//! results and `errno`. A slow-loris greeting, frame headers announcing absurd sizes, a
//! flood of silent connections, random bytes after a valid handshake, and a subscriber that
//! never reads, each beside a well-behaved peer (a socket of its own context, made through
//! the C ABI too) that must not notice.
//!
//! Hostile peers are raw `std::net::TcpStream`s speaking (or not) ZMTP by hand
//! ([`zmtp_testkit::raw_peer`]: it links no libzmq, so this binary holds only our `zmq_*`
//! symbols). Every wait is bounded. Resident memory and open file descriptors are
//! process-wide, so the tests run one at a time ([`serial`]); what they measure is printed
//! with `eprintln!` (`--nocapture`).

use std::ffi::{c_int, c_void, CStr, CString};
use std::io::Write;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zmq::ctx::{zmq_ctx_new, zmq_ctx_term};
use zmq::error::zmq_errno;
use zmq::monitor::zmq_socket_monitor;
use zmq::msg::{zmq_msg_close, zmq_msg_data, zmq_msg_init, zmq_msg_size};
use zmq::options::{
    zmq_getsockopt, zmq_setsockopt, HANDSHAKE_IVL, LAST_ENDPOINT, LINGER, MAXMSGSIZE, RCVTIMEO,
    SNDHWM, SNDTIMEO, SUBSCRIBE,
};
use zmq::socket::{zmq_bind, zmq_close, zmq_connect, zmq_msg_recv, zmq_send, zmq_socket, DONTWAIT};
use zmq::zmq_msg_t;
use zmtp_testkit::raw_peer::{
    drain, greeting, open_fds, raw_handshake, rss, subscribe, tcp_addr, wait_closed,
};
use zmtp_testkit::Rng;

/// Bound on anything that should happen at once.
const PROMPTLY: Duration = Duration::from_secs(2);
/// Allowance past a deadline (timers, a loaded machine).
const SLACK: Duration = Duration::from_millis(1500);
const MIB: u64 = 1024 * 1024;

const PAIR: c_int = 0;
const PUB: c_int = 1;
const SUB: c_int = 2;
const PULL: c_int = 7;
const PUSH: c_int = 8;

const EVENT_ACCEPTED: u16 = 0x0020;
const EVENT_DISCONNECTED: u16 = 0x0200;
const EVENT_HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
const EVENT_HANDSHAKE_SUCCEEDED: u16 = 0x1000;
const EVENT_ALL: c_int = 0xFFFF;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A context made with `zmq_ctx_new`, terminated on drop (after its sockets, declared
/// after it, are closed).
struct Ctx(*mut c_void);

impl Ctx {
    fn new() -> Ctx {
        let ctx = zmq_ctx_new();
        assert!(!ctx.is_null(), "zmq_ctx_new: errno {}", zmq_errno());
        Ctx(ctx)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let rc = zmq_ctx_term(self.0);
        if !std::thread::panicking() {
            assert_eq!(rc, 0, "zmq_ctx_term: errno {}", zmq_errno());
        }
    }
}

/// A socket made with `zmq_socket`, with `ZMQ_LINGER` 0, closed on drop.
struct Sock(*mut c_void);

impl Sock {
    fn new(ctx: &Ctx, ty: c_int) -> Sock {
        let s = Sock(zmq_socket(ctx.0, ty));
        assert!(!s.0.is_null(), "zmq_socket {ty}: errno {}", zmq_errno());
        s.set_int(LINGER, 0);
        s
    }

    fn set_int(&self, option: c_int, value: c_int) {
        // SAFETY: `value` is a live `c_int` and the length says so.
        let rc = unsafe { zmq_setsockopt(self.0, option, (&value as *const c_int).cast(), 4) };
        assert_eq!(rc, 0, "setsockopt {option}: errno {}", zmq_errno());
    }

    fn set_bytes(&self, option: c_int, value: &[u8]) {
        // SAFETY: `value` is a live slice of the length passed.
        let rc = unsafe { zmq_setsockopt(self.0, option, value.as_ptr().cast(), value.len()) };
        assert_eq!(rc, 0, "setsockopt {option}: errno {}", zmq_errno());
    }

    /// Bind to a loopback port: its endpoint (`ZMQ_LAST_ENDPOINT`) and address.
    fn bind_loopback(&self) -> (String, SocketAddr) {
        // SAFETY: a NUL-terminated literal.
        let rc = unsafe { zmq_bind(self.0, c"tcp://127.0.0.1:*".as_ptr()) };
        assert_eq!(rc, 0, "zmq_bind: errno {}", zmq_errno());
        let mut buf = [0u8; 256];
        let mut len = buf.len();
        // SAFETY: `buf` has `len` writable bytes; `len` is a live `usize`.
        let rc =
            unsafe { zmq_getsockopt(self.0, LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len) };
        assert_eq!(rc, 0, "ZMQ_LAST_ENDPOINT: errno {}", zmq_errno());
        let endpoint = CStr::from_bytes_with_nul(&buf[..len])
            .expect("a NUL-terminated endpoint")
            .to_str()
            .expect("a UTF-8 endpoint")
            .to_owned();
        let addr = tcp_addr(&endpoint);
        (endpoint, addr)
    }

    fn connect(&self, endpoint: &str) {
        let endpoint = CString::new(endpoint).expect("no NUL in the endpoint");
        // SAFETY: a NUL-terminated string that outlives the call.
        let rc = unsafe { zmq_connect(self.0, endpoint.as_ptr()) };
        assert_eq!(rc, 0, "zmq_connect: errno {}", zmq_errno());
    }

    /// `zmq_send`: the size sent, or `errno`.
    fn send(&self, body: &[u8], flags: c_int) -> Result<usize, c_int> {
        // SAFETY: `body` is a live slice of the length passed.
        let rc = unsafe { zmq_send(self.0, body.as_ptr().cast(), body.len(), flags) };
        usize::try_from(rc).map_err(|_| zmq_errno())
    }

    /// `zmq_msg_recv` of one frame: its body, or `errno`.
    fn recv(&self, flags: c_int) -> Result<Vec<u8>, c_int> {
        let mut msg = MaybeUninit::<zmq_msg_t>::zeroed();
        let m = msg.as_mut_ptr();
        assert_eq!(zmq_msg_init(m), 0);
        let got = if zmq_msg_recv(m, self.0, flags) < 0 {
            Err(zmq_errno())
        } else {
            let (data, size) = (zmq_msg_data(m).cast::<u8>(), zmq_msg_size(m));
            // SAFETY: a received message's data is `size` readable bytes until it is
            // closed below (a non-null pointer even when empty).
            Ok(unsafe { std::slice::from_raw_parts(data, size) }.to_vec())
        };
        assert_eq!(zmq_msg_close(m), 0);
        got
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        let rc = zmq_close(self.0);
        if !std::thread::panicking() {
            assert_eq!(rc, 0, "zmq_close: errno {}", zmq_errno());
        }
    }
}

/// A socket's monitor, `zmq_socket_monitor` to an `inproc://` endpoint of its own and a
/// PAIR connected there that reads its events (v1 format). Drop it before the monitored
/// socket's context.
struct Monitor(Sock);

impl Monitor {
    fn new(ctx: &Ctx, socket: &Sock, events: c_int) -> Monitor {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let endpoint = format!("inproc://hostile-monitor-{n}");
        let c_endpoint = CString::new(endpoint.clone()).expect("no NUL");
        // SAFETY: a NUL-terminated string that outlives the call.
        let rc = unsafe { zmq_socket_monitor(socket.0, c_endpoint.as_ptr(), events) };
        assert_eq!(rc, 0, "zmq_socket_monitor: errno {}", zmq_errno());
        let pair = Sock::new(ctx, PAIR);
        pair.connect(&endpoint);
        Monitor(pair)
    }

    /// The next event within `limit`, if one comes.
    fn next(&self, limit: Duration) -> Option<u16> {
        let millis = c_int::try_from(limit.as_millis())
            .unwrap_or(c_int::MAX)
            .max(1);
        self.0.set_int(RCVTIMEO, millis);
        let first = self.0.recv(0).ok()?;
        assert_eq!(first.len(), 6, "a v1 event's first frame: {first:02x?}");
        // The endpoint frame follows at once (the two are one message).
        self.0.recv(0).expect("the event's endpoint frame");
        Some(u16::from_ne_bytes([first[0], first[1]]))
    }

    /// Events until one satisfies `stop` or `limit` passes.
    fn until(&self, limit: Duration, stop: impl Fn(u16) -> bool) -> Vec<u16> {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        while let Some(e) = self.next(deadline.saturating_duration_since(Instant::now())) {
            seen.push(e);
            if stop(e) {
                break;
            }
        }
        seen
    }

    /// Every event that comes until none has for `quiet`.
    fn drain(&self, quiet: Duration) -> Vec<u16> {
        let mut seen = Vec::new();
        while let Some(e) = self.next(quiet) {
            seen.push(e);
        }
        seen
    }
}

fn count(events: &[u16], event: u16) -> usize {
    events.iter().filter(|&&e| e == event).count()
}

fn seq_of(frame: &[u8]) -> u64 {
    u64::from_be_bytes(frame[..8].try_into().expect("an 8-byte sequence number"))
}

/// A well-behaved PUSH of a context of its own, made through the C ABI and connected to
/// `endpoint`, sends `n` numbered messages, which `pull` must receive all, in order; the
/// PUSH's monitor must show one handshake and no disconnection. `during` runs (on this
/// thread) between the first message and the rest.
fn peer_push_undisturbed(pull: &Sock, endpoint: &str, n: u64, during: impl FnOnce()) {
    let ctx = Ctx::new();
    let push = Sock::new(&ctx, PUSH);
    push.set_int(SNDTIMEO, 2000);
    let monitor = Monitor::new(&ctx, &push, EVENT_ALL);
    pull.set_int(RCVTIMEO, 2000);
    push.connect(endpoint);
    push.send(&0u64.to_be_bytes(), 0).expect("the peer sends 0");
    let first = pull.recv(0).expect("message 0 in time");
    assert_eq!(seq_of(&first), 0);
    during();
    for seq in 1..n {
        (push.send(&seq.to_be_bytes(), 0))
            .unwrap_or_else(|e| panic!("the peer's send {seq}: errno {e}"));
    }
    for want in 1..n {
        let msg = (pull.recv(0)).unwrap_or_else(|e| panic!("message {want}: errno {e}"));
        assert_eq!(seq_of(&msg), want, "out of order");
    }
    let events = monitor.drain(Duration::from_millis(200));
    assert_eq!(
        (
            count(&events, EVENT_HANDSHAKE_SUCCEEDED),
            count(&events, EVENT_DISCONNECTED)
        ),
        (1, 0),
        "the well-behaved PUSH's monitor: {events:04x?}"
    );
}

#[test]
fn slow_loris_greeting_is_cut_at_the_handshake_deadline() {
    let _serial = serial();
    let ctx = Ctx::new();
    let pull = Sock::new(&ctx, PULL);
    let deadline = Duration::from_millis(500);
    pull.set_int(HANDSHAKE_IVL, 500);
    let monitor = Monitor::new(&ctx, &pull, EVENT_ALL);
    let (endpoint, addr) = pull.bind_loopback();
    peer_push_undisturbed(&pull, &endpoint, 200, || {
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
        eprintln!("C ABI: slow loris: closed after {closed:?}, deadline {deadline:?}");
        assert!(closed >= deadline - Duration::from_millis(50), "cut early");
        assert!(closed <= deadline + SLACK, "cut after {closed:?}");
    });
    let mut events = monitor.until(PROMPTLY, |e| e == EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    events.extend(monitor.drain(Duration::from_millis(200)));
    // Two accepted (the peer, the slow loris), one handshake each way: only the slow
    // loris failed.
    assert_eq!(
        (
            count(&events, EVENT_ACCEPTED),
            count(&events, EVENT_HANDSHAKE_SUCCEEDED),
            count(&events, EVENT_HANDSHAKE_FAILED_NO_DETAIL),
        ),
        (2, 1, 1),
        "our PULL's monitor: {events:04x?}"
    );
    // Nothing from the slow loris reached the application: a receive waits out
    // `ZMQ_RCVTIMEO` and fails with libzmq's EAGAIN.
    pull.set_int(RCVTIMEO, 200);
    let start = Instant::now();
    assert_eq!(
        pull.recv(0),
        Err(libc::EAGAIN),
        "a message from the slow loris"
    );
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(190) && waited < PROMPTLY,
        "zmq_recv waited {waited:?} for a 200 ms ZMQ_RCVTIMEO"
    );
}

/// A raw PUSH completes a handshake with a PULL (with `MAXMSGSIZE` `maxmsgsize` when
/// given) and sends `header` alone: the connection is closed promptly, without memory
/// growth, the PULL's monitor shows that one disconnection, and a well-behaved PUSH beside
/// it is undisturbed.
fn huge_header_closes(maxmsgsize: Option<i64>, header: &[u8], what: &str) {
    let _serial = serial();
    let ctx = Ctx::new();
    let pull = Sock::new(&ctx, PULL);
    if let Some(max) = maxmsgsize {
        pull.set_bytes(MAXMSGSIZE, &max.to_ne_bytes());
    }
    let monitor = Monitor::new(&ctx, &pull, EVENT_ALL);
    let (endpoint, addr) = pull.bind_loopback();
    peer_push_undisturbed(&pull, &endpoint, 200, || {
        let before = rss();
        let mut raw = raw_handshake(addr, "PUSH");
        raw.write_all(header).expect("the header");
        let start = Instant::now();
        let closed = wait_closed(&mut raw, PROMPTLY).expect("the connection was not closed");
        let grew = rss().saturating_sub(before);
        eprintln!(
            "C ABI: {what}: closed after {:?}, RSS +{:.1} MiB",
            closed - start,
            grew as f64 / MIB as f64
        );
        assert!(grew < 32 * MIB, "{what}: RSS grew by {grew} bytes");
        // Both handshakes succeeded; only the raw peer was dropped (the well-behaved one
        // leaves later, at its end).
        let mut events = monitor.until(PROMPTLY, |e| e == EVENT_DISCONNECTED);
        events.extend(monitor.drain(Duration::from_millis(200)));
        assert_eq!(
            (
                count(&events, EVENT_HANDSHAKE_SUCCEEDED),
                count(&events, EVENT_DISCONNECTED)
            ),
            (2, 1),
            "{what}: our PULL's monitor: {events:04x?}"
        );
    });
}

#[test]
fn frame_header_announcing_2_pow_62_bytes_closes_the_connection() {
    let mut header = vec![0x02];
    header.extend_from_slice(&(1u64 << 62).to_be_bytes());
    huge_header_closes(None, &header, "2^62-byte frame header");
}

#[test]
fn frame_header_over_maxmsgsize_closes_the_connection() {
    let mut header = vec![0x02];
    header.extend_from_slice(&4096u64.to_be_bytes());
    huge_header_closes(Some(1024), &header, "frame over MAXMSGSIZE");
}

#[test]
fn silent_connections_are_closed_at_the_handshake_deadline() {
    let _serial = serial();
    let ctx = Ctx::new();
    let pull = Sock::new(&ctx, PULL);
    let deadline = Duration::from_millis(500);
    pull.set_int(HANDSHAKE_IVL, 500);
    let monitor = Monitor::new(&ctx, &pull, c_int::from(EVENT_HANDSHAKE_FAILED_NO_DETAIL));
    let (endpoint, addr) = pull.bind_loopback();
    let fds_before = open_fds();
    let rss_before = rss();
    const N: usize = 300;
    peer_push_undisturbed(&pull, &endpoint, 200, || {
        let start = Instant::now();
        let mut conns: Vec<TcpStream> = (0..N)
            .map(|_| {
                let s = TcpStream::connect(addr).expect("raw connect");
                s.set_nonblocking(true).expect("non-blocking");
                s
            })
            .collect();
        let rss_up = rss();
        // Every one is closed by our side once the deadline passes. Counted from the last
        // connect: on a loaded machine a few connects can wait a SYN retransmission (1 s)
        // before the listener takes them, and each one's deadline starts there.
        let connected = start.elapsed();
        let end = Instant::now() + deadline + SLACK + Duration::from_secs(1);
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
            "C ABI: {N} silent connections (connected in {connected:?}): {open} still open \
             after {:?}; RSS {:.1} MiB before, {:.1} MiB with them",
            start.elapsed(),
            rss_before as f64 / MIB as f64,
            rss_up as f64 / MIB as f64
        );
        assert_eq!(open, 0, "silent connections left open past the deadline");
    });
    // The monitor reported each one's failed handshake.
    let mut failed = 0;
    let end = Instant::now() + PROMPTLY;
    while failed < N {
        let Some(e) = monitor.next(end.saturating_duration_since(Instant::now())) else {
            break;
        };
        failed += usize::from(e == EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    }
    assert_eq!(failed, N, "HANDSHAKE_FAILED_NO_DETAIL events");
    // Our side's descriptors for them are gone too (the raw ends were dropped above).
    let end = Instant::now() + PROMPTLY;
    while open_fds() > fds_before + 8 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let fds_after = open_fds();
    eprintln!("C ABI: open descriptors {fds_before} before, {fds_after} after");
    assert!(
        fds_after <= fds_before + 8,
        "descriptors leaked: {fds_before} before, {fds_after} after"
    );
}

#[test]
fn random_bytes_after_a_handshake_close_only_that_peer() {
    let _serial = serial();
    let ctx = Ctx::new();
    let pull = Sock::new(&ctx, PULL);
    let monitor = Monitor::new(&ctx, &pull, c_int::from(EVENT_DISCONNECTED));
    let (endpoint, addr) = pull.bind_loopback();
    let mut rng = Rng::new(0x5eed_0036);
    let (mut closed, mut disconnected) = (0, 0);
    const ROUNDS: usize = 20;
    peer_push_undisturbed(&pull, &endpoint, 500, || {
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
            // The monitor reports that one disconnection.
            let events = monitor.until(PROMPTLY, |e| e == EVENT_DISCONNECTED);
            disconnected += count(&events, EVENT_DISCONNECTED);
        }
        // And no other (the well-behaved peer leaves later, at its end).
        disconnected += count(
            &monitor.drain(Duration::from_millis(200)),
            EVENT_DISCONNECTED,
        );
    });
    eprintln!(
        "C ABI: {closed} of {ROUNDS} junk-sending peers closed, {disconnected} disconnections \
         reported; the peer undisturbed"
    );
    assert_eq!(closed, ROUNDS, "a junk-sending peer was kept");
    assert_eq!(
        disconnected, ROUNDS,
        "DISCONNECTED events on our PULL's monitor"
    );
    // Messages from them never reached the application: nothing to receive, as libzmq
    // says it (-1, EAGAIN).
    assert_eq!(pull.recv(DONTWAIT), Err(libc::EAGAIN), "junk delivered");
}

#[test]
fn a_subscriber_that_never_reads_is_bounded_by_hwm() {
    let _serial = serial();
    let ctx = Ctx::new();
    let publisher = Sock::new(&ctx, PUB);
    publisher.set_int(SNDHWM, 1000);
    // A PUB never blocks; were it to, the send would fail at this timeout, not hang.
    publisher.set_int(SNDTIMEO, 1000);
    let monitor = Monitor::new(&ctx, &publisher, c_int::from(EVENT_DISCONNECTED));
    let (endpoint, addr) = publisher.bind_loopback();
    // A raw subscriber that subscribes to everything and never reads.
    let mut stuck = raw_handshake(addr, "SUB");
    stuck.write_all(&subscribe(b"")).expect("SUBSCRIBE");
    // A subscriber of its own context, through the C ABI too, that reads.
    let reader_ctx = Ctx::new();
    let reader = Sock::new(&reader_ctx, SUB);
    reader.set_int(RCVTIMEO, 100);
    reader.set_bytes(SUBSCRIBE, b"");
    reader.connect(&endpoint);
    // Both subscriptions are in place once a probe reaches the reader (the raw one was
    // sent first, on a connection already up).
    let end = Instant::now() + PROMPTLY;
    loop {
        publisher.send(b"probe", 0).expect("send");
        if reader.recv(0).is_ok() {
            break;
        }
        assert!(Instant::now() < end, "the reading SUB never subscribed");
    }
    let before = rss();
    let body = vec![0x5a; 1024];
    let mut peak = before;
    const SENT: usize = 200_000;
    let mut received = 0;
    let start = Instant::now();
    for i in 0..SENT {
        let sent = publisher.send(&body, 0);
        assert_eq!(sent, Ok(body.len()), "PUB send {i} (Err: errno)");
        if i % 1000 == 0 {
            peak = peak.max(rss());
            // The reader keeps up, more or less (a PUB drops for it too when it lags).
            while reader.recv(DONTWAIT).is_ok() {
                received += 1;
                if received % 1000 == 0 {
                    break;
                }
            }
        }
    }
    let took = start.elapsed();
    // The reader still gets what is published now.
    let end = Instant::now() + PROMPTLY;
    let mut got_end = false;
    while Instant::now() < end && !got_end {
        publisher.send(b"end", 0).expect("send");
        while let Ok(msg) = reader.recv(0) {
            if msg == b"end" {
                got_end = true;
                break;
            }
        }
    }
    let grew = peak.saturating_sub(before);
    eprintln!(
        "C ABI: {SENT} messages of 1 KiB published in {took:?} to a subscriber that never \
         reads: RSS peak +{:.1} MiB; the reading SUB received {received} and the end \
         marker: {got_end}",
        grew as f64 / MIB as f64
    );
    assert!(got_end, "the reading subscriber stopped getting messages");
    // SNDHWM (1000) messages of 1 KiB for the stuck peer, plus what the kernel buffers
    // hold: far below the 200 MiB published.
    assert!(grew < 32 * MIB, "RSS grew by {grew} bytes");
    // As libzmq's, our PUB drops for a subscriber at its HWM and keeps the connection:
    // no disconnection, and the stuck peer has data waiting.
    let events = monitor.drain(Duration::from_millis(200));
    assert_eq!(
        count(&events, EVENT_DISCONNECTED),
        0,
        "our PUB's monitor: {events:04x?}"
    );
    stuck.set_nonblocking(true).expect("non-blocking");
    let stuck_end = drain(&mut stuck);
    assert!(
        stuck_end.data && !stuck_end.closed,
        "the stuck subscriber's connection: data {}, closed {}",
        stuck_end.data,
        stuck_end.closed
    );
}
