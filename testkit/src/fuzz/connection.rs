//! The connection body: one [`Connection`] facing a hostile peer.

use core::time::Duration;

use zmtp_proto::codec::{Command, InsufficientSize, Version};
use zmtp_proto::mechanism::Security;
use zmtp_proto::{Config, Connection, EncodeError, Error, Event, Instant, SocketType};

use super::input::{pick, Cursor};
use super::material::{
    curve_client, curve_server, LOCAL_ENTROPY, PLAIN_PASSWORD, PLAIN_USER, START, TYPES,
};
use crate::pair::raw::{pump, transmit};

/// A socket type that can talk to `ty` (the first of libzmq's table).
fn compatible_peer(ty: SocketType) -> SocketType {
    match ty {
        SocketType::Pub | SocketType::XPub => SocketType::Sub,
        SocketType::Sub | SocketType::XSub => SocketType::Pub,
        SocketType::Push => SocketType::Pull,
        SocketType::Pull => SocketType::Push,
        SocketType::Req => SocketType::Rep,
        SocketType::Rep => SocketType::Req,
        SocketType::Dealer => SocketType::Router,
        SocketType::Router => SocketType::Dealer,
        _ => SocketType::Pair,
    }
}

/// The configuration of the connection under test in [`connection`], and of the peer
/// that [`seed_corpus`] records against it.
///
/// Byte 0: bits 0-2 the mechanism and role (0 NULL, 1 NULL asking for a verdict, 2 PLAIN
/// client, 3 PLAIN server, 4 CURVE client, 5 CURVE server, 6 NULL with an identity and an
/// application property, 7 PLAIN client with empty credentials); bits 3-7 the socket type.
/// Byte 1: bit 0 announce ZMTP 3.0; bit 1 heartbeats (100 ms, timeout 250 ms, TTL 2.5 s);
/// bit 2 a maximum message size of 64; bit 3 a 1 s handshake deadline; bit 4 a maximum
/// command size of 300; bit 5 no handshake deadline.
pub(super) fn connection_configs(b0: u8, b1: u8) -> Option<(Config, Config)> {
    let ty = pick(TYPES, usize::from(b0 >> 3), SocketType::Pair);
    let mut ours = Config::new(ty);
    let mut theirs = Config::new(compatible_peer(ty));
    match b0 & 7 {
        1 => ours.authenticate_null = true,
        2 => {
            ours.security = Security::plain_client(PLAIN_USER, PLAIN_PASSWORD).ok()?;
            theirs.security = Security::PlainServer;
        }
        3 => {
            ours.security = Security::PlainServer;
            theirs.security = Security::plain_client(PLAIN_USER, PLAIN_PASSWORD).ok()?;
        }
        4 => {
            ours.security = curve_client()?;
            theirs.security = curve_server()?;
        }
        5 => {
            ours.security = curve_server()?;
            theirs.security = curve_client()?;
        }
        6 => {
            ours.set_identity(b"fuzz-identity").ok()?;
            ours.add_property(b"X-Fuzz", b"value").ok()?;
        }
        7 => {
            ours.security = Security::plain_client("", "").ok()?;
            theirs.security = Security::PlainServer;
        }
        _ => {}
    }
    if b1 & 1 != 0 {
        ours.version = Version::V3_0;
    }
    if b1 & 2 != 0 {
        ours.heartbeat_interval = Some(Duration::from_millis(100));
        ours.heartbeat_timeout = Some(Duration::from_millis(250));
        ours.heartbeat_ttl = Some(Duration::from_millis(2500));
    }
    if b1 & 4 != 0 {
        ours.max_message_size = Some(64);
    }
    if b1 & 8 != 0 {
        ours.handshake_timeout = Some(Duration::from_secs(1));
    }
    if b1 & 16 != 0 {
        ours.max_command_size = 300;
    }
    if b1 & 32 != 0 {
        ours.handshake_timeout = None;
    }
    Some((ours, theirs))
}

/// Operation codes of [`connection`] (besides `0..=FEED_MAX`: feed that many bytes).
pub(super) mod op {
    /// Largest chunk length an operation byte feeds directly.
    pub const FEED_MAX: u8 = 0xDF;
    /// `0xE0..=0xE7`: advance the clock (see `TIME_STEPS`) and call `handle_timeout`.
    pub const TIME: u8 = 0xE0;
    /// `0xE8..=0xEB`: answer a pending verdict with 200, 300, 400 or 500.
    pub const VERDICT: u8 = 0xE8;
    /// `0xEC..=0xEF`: `poll_transmit` into a buffer of 0, 1, 10 or 60 bytes.
    pub const SMALL_TRANSMIT: u8 = 0xEC;
    /// `0xF0..=0xF7`: `send_frame` of 0, 1, 17 or 300 bytes (bit 0: MORE).
    pub const SEND: u8 = 0xF0;
    /// `send_subscribe`.
    pub const SUBSCRIBE: u8 = 0xF8;
    /// `send_cancel`.
    pub const CANCEL: u8 = 0xF9;
    /// `send_command(JOIN)`.
    pub const JOIN: u8 = 0xFA;
    /// `send_frame_header` for 5 bytes.
    pub const HEADER: u8 = 0xFB;
    /// `handle_auth(200)` when no verdict is asked for.
    pub const STRAY_VERDICT: u8 = 0xFC;
    /// `handle_frame_parts`: a 2-byte header, a length byte, the body.
    pub const FRAME_PARTS: u8 = 0xFD;
    /// Feed a chunk whose length is the next `u16`.
    pub const FEED_LONG: u8 = 0xFE;
    /// Feed everything that is left.
    pub const FEED_REST: u8 = 0xFF;
}

/// Clock steps of `op::TIME`; `None` entries jump to the connection's next deadline (the
/// second: one microsecond before it).
const TIME_STEPS: &[Option<Duration>] = &[
    Some(Duration::ZERO),
    Some(Duration::from_millis(1)),
    Some(Duration::from_millis(50)),
    Some(Duration::from_millis(100)),
    Some(Duration::from_secs(1)),
    Some(Duration::from_secs(31)),
    None,
    None,
];

/// A connection under test with its receive buffer, clock and sticky-error bookkeeping.
struct Driven {
    conn: Connection,
    rx: Vec<u8>,
    now: Instant,
    /// The first error seen; from then on the connection must stay failed with it.
    failed: Option<Error>,
    /// An `AuthRequested` event was polled and not answered yet.
    auth_asked: bool,
    items: usize,
    established_seen: bool,
}

impl Driven {
    /// A call returned `r`: errors must be the sticky one.
    fn record<T>(&mut self, r: &Result<T, Error>) {
        if let Err(e) = r {
            match &self.failed {
                Some(first) => assert!(e == first, "error changed from {first:?} to {e:?}"),
                None => {
                    assert!(
                        self.conn.error() == Some(e),
                        "returned {e:?} but the connection holds {:?}",
                        self.conn.error()
                    );
                    self.failed = Some(e.clone());
                }
            }
        }
    }

    fn record_send(&mut self, r: &Result<usize, EncodeError>) {
        if let Err(EncodeError::Closed(e)) = r {
            self.record::<()>(&Err(e.clone()));
        }
        if let Some(e) = &self.failed {
            assert!(
                r == &Err(EncodeError::Closed(e.clone())),
                "send after {e:?} gave {r:?}"
            );
        }
    }

    /// The driver's duty after every input: items, control output, events; then the
    /// sticky-error invariants.
    fn settle(&mut self) {
        let mut items = 0;
        let r = pump(&mut self.conn, self.now, &mut self.rx, &mut |_| items += 1);
        self.items += items;
        self.record(&r);
        let out = transmit(&mut self.conn);
        if self.failed.is_some() {
            assert!(out.is_empty(), "transmitted after a failure");
        }
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::AuthRequested => self.auth_asked = true,
                Event::HandshakeSucceeded { .. } => {
                    assert!(!self.established_seen, "handshake reported twice");
                    self.established_seen = true;
                }
                _ => {}
            }
        }
        // A failure no call returned: poll_transmit sent the farewell ERROR.
        if let Some(e) = self.conn.error().cloned() {
            if self.failed.is_none() {
                self.record::<()>(&Err(e));
            }
        }
        match self.failed.clone() {
            Some(e) => {
                assert!(
                    self.conn.error() == Some(&e),
                    "the error changed or went away"
                );
                assert!(!self.conn.is_established(), "established after a failure");
                assert!(
                    self.conn.poll_timeout().is_none(),
                    "a timer after a failure"
                );
                assert!(!self.conn.wants_write(), "wants to write after a failure");
                assert!(
                    self.conn.auth_request().is_none(),
                    "asks a verdict after a failure"
                );
                let again = self.conn.handle_input(self.now, &mut []);
                assert!(again.err() == Some(e.clone()), "handle_input not sticky");
                let again = self.conn.handle_timeout(self.now);
                assert!(again == Err(e.clone()), "handle_timeout not sticky");
                let mut out = [0u8; 64];
                assert!(
                    self.conn.poll_transmit(&mut out) == Ok(0),
                    "poll_transmit after failure"
                );
            }
            None => {
                if self.conn.is_established() {
                    assert!(self.established_seen, "established without the event");
                }
            }
        }
    }
}

/// A whole [`Connection`] facing a hostile peer.
///
/// Input: two setup bytes (see `connection_configs`: mechanism and role, socket type,
/// version, heartbeats, limits), then operations. An operation byte up to `0xDF` feeds
/// that many of the following bytes as the peer's; the others fire timeouts at clock steps
/// taken from the input, answer (or wrongly give) verdicts, call `poll_transmit` with small
/// buffers, send frames and commands, and feed the header and body of a frame apart.
/// After each operation the driver's duties are done (input until no progress, control
/// output, events).
///
/// Checked: no panic; the input contract (an item only with consumed bytes, progress
/// whenever `needed` bytes are there, payload ranges that locate payloads); every error is sticky (the same error
/// from every later call, nothing more transmitted, no timer, not established); sends fail
/// with exactly [`EncodeError::Closed`] of that error after a failure; the handshake is
/// reported once.
pub fn connection(data: &[u8]) {
    run_connection(data);
}

/// What a [`connection`] run reached (for the seed tests).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(not(test), allow(dead_code))]
pub(super) struct ConnectionOutcome {
    pub(super) established: bool,
    pub(super) items: usize,
    pub(super) failed: bool,
}

pub(super) fn run_connection(data: &[u8]) -> ConnectionOutcome {
    let mut c = Cursor::new(data);
    let (b0, b1) = (c.byte(), c.byte());
    let Some((cfg, _)) = connection_configs(b0, b1) else {
        return ConnectionOutcome::default();
    };
    let mut d = Driven {
        conn: Connection::with_entropy(cfg, START, LOCAL_ENTROPY),
        rx: Vec::new(),
        now: START,
        failed: None,
        auth_asked: false,
        items: 0,
        established_seen: false,
    };
    d.settle();
    let mut ops = 0;
    while !c.is_empty() && ops < 512 {
        ops += 1;
        let code = c.byte();
        match code {
            0..=op::FEED_MAX => d.rx.extend_from_slice(c.take(usize::from(code))),
            op::FEED_LONG => {
                let n = usize::from(c.u16());
                d.rx.extend_from_slice(c.take(n));
            }
            op::FEED_REST => d.rx.extend_from_slice(c.rest()),
            0xE0..=0xE7 => {
                let step = pick(TIME_STEPS, usize::from(code - op::TIME), None);
                let target = match (step, code - op::TIME) {
                    (Some(step), _) => Some(d.now + step),
                    (None, 6) => d.conn.poll_timeout(),
                    (None, _) => d
                        .conn
                        .poll_timeout()
                        .map(|t| Instant::from_micros(t.as_micros().saturating_sub(1))),
                };
                d.now = d.now.max(target.unwrap_or(d.now));
                let r = d.conn.handle_timeout(d.now);
                d.record(&r);
            }
            0xE8..=0xEB => {
                if d.auth_asked && d.conn.auth_request().is_some() {
                    d.auth_asked = false;
                    let status = pick(&[200, 300, 400, 500], usize::from(code - op::VERDICT), 200);
                    let r = d.conn.handle_auth(d.now, status);
                    d.record(&r);
                }
            }
            0xEC..=0xEF => {
                let size = pick(&[0, 1, 10, 60], usize::from(code - op::SMALL_TRANSMIT), 0);
                let mut out = vec![0u8; size];
                match d.conn.poll_transmit(&mut out) {
                    Ok(n) => assert!(n <= size, "wrote past the buffer"),
                    Err(InsufficientSize { required }) => {
                        assert!(required > size, "InsufficientSize below the buffer size");
                        assert!(d.failed.is_none(), "something to transmit after a failure");
                    }
                }
            }
            0xF0..=0xF7 => {
                let len = pick(&[0, 1, 17, 300], usize::from((code - op::SEND) >> 1), 0);
                let body = vec![0x5A; len];
                let mut out = vec![0u8; 1024];
                let r = d.conn.send_frame(&body, code & 1 != 0, &mut out);
                d.record_send(&r);
                if d.failed.is_none() {
                    match &r {
                        Ok(n) => assert!(*n > len, "a frame shorter than its body"),
                        Err(e) => assert!(
                            matches!(e, EncodeError::NotReady) && !d.conn.is_established(),
                            "send_frame on a healthy connection: {e:?}"
                        ),
                    }
                }
            }
            op::SUBSCRIBE | op::CANCEL | op::JOIN => {
                let mut out = vec![0u8; 1024];
                let r = match code {
                    op::SUBSCRIBE => d.conn.send_subscribe(b"topic", &mut out),
                    op::CANCEL => d.conn.send_cancel(b"topic", &mut out),
                    _ => d.conn.send_command(&Command::Join(b"group"), &mut out),
                };
                d.record_send(&r);
            }
            op::HEADER => {
                let mut out = vec![0u8; 64];
                let r = d.conn.send_frame_header(5, false, &mut out);
                d.record_send(&r);
                if d.failed.is_none() && d.conn.is_established() && d.conn.encrypts() {
                    assert!(
                        r == Err(EncodeError::Sealed),
                        "a bare header on encrypted traffic"
                    );
                }
            }
            op::STRAY_VERDICT => {
                if d.conn.auth_request().is_none() {
                    let r = d.conn.handle_auth(d.now, 200);
                    assert!(r.is_err(), "a verdict nobody asked for was taken");
                    d.record(&r);
                }
            }
            op::FRAME_PARTS => {
                let header = c.take(2);
                let len = usize::from(c.byte());
                let body = c.take(len);
                let r = d.conn.handle_frame_parts(d.now, header, body);
                if let Ok(Some(_)) = &r {
                    d.items += 1;
                }
                d.record(&r);
            }
        }
        d.settle();
    }
    ConnectionOutcome {
        established: d.established_seen,
        items: d.items,
        failed: d.failed.is_some(),
    }
}
