//! The conformance matrix: one scenario suite, written once, run for every compatible
//! socket pair, transport and role, with our socket on either side, against libzmq and
//! against our own sockets.
//!
//! A *combination* is a [`Pair`] of socket types `A-B` (`A` is the requesting, pushing or
//! publishing side), a [`Transport`], the kind of each side (ours or libzmq) and which side
//! binds. Its scenario list is generated from those facts ([`Scenario::applies`]):
//!
//! | scenario | runs for | checks |
//! |---|---|---|
//! | `intact` | every pair | multipart messages, 0-byte frames, a 4 MiB frame, both ways where `B` can answer |
//! | `order` | every pair | a numbered stream arrives in order (pipelined unless REQ/REP) |
//! | `filter` | PUB/XPUB to SUB/XSUB | prefix filtering, a second subscription; XPUB sees subscriptions; XSUB cancels and sends upstream |
//! | `envelope` | `B` is REP or ROUTER | REQ/REP delimiters and state errors, ROUTER ids (generated, set, connect aliases), unknown ids dropped |
//! | `load-balance` | our `A` is PUSH, DEALER or REQ | round robin over two peers |
//! | `fair-queue` | our receiver is PULL, DEALER, ROUTER or REP | round robin over two senders, replies routed back |
//! | `reconnect` | our side connects | the bound peer closes, a new one binds the same endpoint; what was queued meanwhile arrives, traffic and subscriptions resume |
//! | `stream-notify` | STREAM-STREAM | each side announces the connection once, `[id][empty]`, with the connecting side's `CONNECT_ROUTING_ID` and a generated 5-byte id on the bound side; nothing else arrives; the ids route |
//! | `stream-bytes` | STREAM-STREAM | two chunked byte streams (300 chunks and a 1 MiB one) sent both ways at once arrive intact and in order, compared as byte streams (TCP may split or merge chunks) |
//! | `stream-route` | STREAM-STREAM | the bound side routes by id to two connected peers: each gets exactly its own bytes |
//! | `stream-close` | STREAM-STREAM | the bound side closes with `[id][empty]`: the other side sees one disconnect notification, the closer none; the connecting side comes back under the same id (its pipe outlives the connection, as libzmq's) and closes in turn, seen once by the bound side |
//! | `stream-reconnect` | STREAM-STREAM, our side connects | the bound peer closes: our side sees the disconnect, its id stays routable; a new peer binds the same endpoint, our side reconnects under the same id, writes what was sent while it was down first, and bytes flow both ways |
//!
//! STREAM (raw TCP, `ZMQ_STREAM`) pairs only with STREAM: it talks to no ZMTP socket, so
//! the ZMTP scenarios never run for it and the STREAM ones run for it alone. It runs over
//! tcp, ipc (libzmq's STREAM uses its raw engine for ipc too) and, between our sockets,
//! inproc; never over `ws://` or `wss://`, which our STREAM refuses at bind and connect.
//!
//! Scenarios only use the [`OurSocket`] calls, with zero or short timeouts, and pump every
//! one of our sockets whenever they wait for anything (a libzmq socket included): a polling
//! driver makes progress, and a driver with background I/O works just as well. libzmq
//! sockets are only used without blocking (`ZMQ_DONTWAIT`), so the thread never sleeps
//! inside libzmq while our side needs pumping.
//!
//! [`run`] executes the matrix for one driver and returns an [`Outcome`] per scenario;
//! [`print_summary`] prints the totals.

use std::cell::RefCell;
use std::ffi::c_int;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::{Bytes, SocketType};

use crate::ffi::{Ctx, ZSocket, ZMQ_CONNECT_ROUTING_ID, ZMQ_RECONNECT_IVL, ZMQ_ROUTING_ID};
use crate::our::{OurDriver, OurSocket, Transport};

mod stream;

/// Upper bound for any single wait; a scenario that hits it fails.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Reconnect interval of every socket in the matrix.
const RECONNECT_IVL: Duration = Duration::from_millis(20);
/// Size of the large frame.
const BIG: usize = 4 << 20;
/// `EHOSTUNREACH` (Linux), libzmq's refusal of an unknown routing id.
const EHOSTUNREACH: c_int = 113;
/// libzmq's `ZMQ_EVENTS`: reading it makes a socket process its pending commands.
const ZMQ_EVENTS: c_int = 15;
/// Suffix of the first frame of synchronisation messages, which receivers skip.
const SYNC: &[u8] = b"\xffsync";
/// ROUTER-ROUTER: the bound side's answer to the connecting side's first message.
const READY: &[u8] = b"\xffready";
/// Load balancing: warm-up messages sent until both peers are attached.
const WARM: &[u8] = b"\xffwarm";

/// A message as a list of frames.
pub type Frames = Vec<Vec<u8>>;

/// Transports used against libzmq.
const LIBZMQ_TRANSPORTS: [Transport; 3] = [Transport::Tcp, Transport::Ipc, Transport::IpcAbstract];

/// Who implements a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Our socket, through the driver under test.
    Ours,
    /// A libzmq socket.
    Libzmq,
    /// Our socket through another driver, named here (cross-driver pairs, [`run_cross`]).
    Peer(&'static str),
}

impl Kind {
    /// Short name for reports: `ours`, `libzmq` or the peer driver's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ours => "ours",
            Kind::Libzmq => "libzmq",
            Kind::Peer(driver) => driver,
        }
    }
}

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    A,
    B,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// A compatible pair of socket types. `a` requests, pushes or publishes; `b` answers,
/// pulls or subscribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// The requesting, pushing or publishing side.
    pub a: SocketType,
    /// The answering, pulling or subscribing side.
    pub b: SocketType,
}

/// STREAM-STREAM: raw byte streams (its scenarios are the `stream-*` ones only).
pub const STREAM_PAIR: Pair = Pair {
    a: SocketType::Stream,
    b: SocketType::Stream,
};

/// Every ZMTP pair of the matrix (STREAM's is [`STREAM_PAIR`]).
pub const PAIRS: [Pair; 12] = {
    use SocketType as T;
    const fn p(a: SocketType, b: SocketType) -> Pair {
        Pair { a, b }
    }
    [
        p(T::Pair, T::Pair),
        p(T::Push, T::Pull),
        p(T::Pub, T::Sub),
        p(T::XPub, T::XSub),
        p(T::Pub, T::XSub),
        p(T::XPub, T::Sub),
        p(T::Req, T::Rep),
        p(T::Req, T::Router),
        p(T::Dealer, T::Rep),
        p(T::Dealer, T::Router),
        p(T::Dealer, T::Dealer),
        p(T::Router, T::Router),
    ]
};

/// Every pair of the matrix: [`PAIRS`], then [`STREAM_PAIR`] where `transport` carries
/// raw streams (not `ws://` or `wss://`).
fn pairs_over(transport: Transport) -> impl Iterator<Item = Pair> {
    let raw = !matches!(transport, Transport::Ws | Transport::Wss);
    PAIRS.into_iter().chain(raw.then_some(STREAM_PAIR))
}

impl Pair {
    fn name(self) -> String {
        format!("{}-{}", self.a.name(), self.b.name())
    }

    fn ty(self, side: Side) -> SocketType {
        match side {
            Side::A => self.a,
            Side::B => self.b,
        }
    }

    fn symmetric(self) -> bool {
        self.a == self.b
    }

    /// STREAM-STREAM: raw bytes, no ZMTP.
    fn stream(self) -> bool {
        self == STREAM_PAIR
    }

    fn pubsub(self) -> bool {
        matches!(self.a, SocketType::Pub | SocketType::XPub)
    }

    fn router_router(self) -> bool {
        self.a == SocketType::Router && self.b == SocketType::Router
    }

    /// Each message from `A` waits for its answer (REQ), or `B` must answer each (REP).
    fn lockstep(self) -> bool {
        self.a == SocketType::Req || self.b == SocketType::Rep
    }

    /// `B` can send to `A`.
    fn b_sends(self) -> bool {
        matches!(
            self.b,
            SocketType::Rep | SocketType::Router | SocketType::Dealer | SocketType::Pair
        )
    }

    /// What `A`'s application sends for `payload`; `to_b` is `B`'s id (ROUTER `A`).
    fn wrap_a(self, payload: Frames, to_b: &[u8]) -> Frames {
        let mut frames = Vec::new();
        if self.a == SocketType::Router {
            frames.push(to_b.to_vec());
        }
        if self.a == SocketType::Dealer && self.b == SocketType::Rep {
            frames.push(Vec::new());
        }
        frames.extend(payload);
        frames
    }

    /// Split what `B`'s application received into the sender's id (ROUTER `B`) and the
    /// payload, checking the envelope.
    fn unwrap_b(self, mut frames: Frames) -> (Option<Vec<u8>>, Frames) {
        if self.b != SocketType::Router {
            return (None, frames);
        }
        assert!(
            frames.len() >= 2,
            "ROUTER got no routing id: {}",
            show(&frames)
        );
        let id = frames.remove(0);
        if self.a == SocketType::Req {
            assert!(
                frames[0].is_empty() && frames.len() >= 2,
                "ROUTER got a REQ message without its delimiter: {}",
                show(&frames)
            );
            frames.remove(0);
        }
        (Some(id), frames)
    }

    /// What `B`'s application sends to answer `A` (known by `to_a` at a ROUTER `B`).
    fn wrap_b(self, payload: Frames, to_a: &[u8]) -> Frames {
        let mut frames = Vec::new();
        if self.b == SocketType::Router {
            frames.push(to_a.to_vec());
            if self.a == SocketType::Req {
                frames.push(Vec::new());
            }
        }
        frames.extend(payload);
        frames
    }

    /// The payload of what `A`'s application received, checking the envelope.
    fn unwrap_a(self, mut frames: Frames, from_b: &[u8]) -> Frames {
        if self.a == SocketType::Router {
            assert!(
                frames.len() >= 2 && frames[0] == from_b,
                "ROUTER expected a message from {:?}: {}",
                String::from_utf8_lossy(from_b),
                show(&frames)
            );
            frames.remove(0);
        }
        if self.a == SocketType::Dealer && self.b == SocketType::Rep {
            assert!(
                frames.len() >= 2 && frames[0].is_empty(),
                "DEALER expected a delimiter before REP's reply: {}",
                show(&frames)
            );
            frames.remove(0);
        }
        frames
    }
}

/// One combination of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Combo {
    /// The socket types.
    pub pair: Pair,
    /// The transport.
    pub transport: Transport,
    /// Who implements `A`.
    pub a: Kind,
    /// Who implements `B`.
    pub b: Kind,
    binder: Side,
}

impl Combo {
    fn kind(&self, side: Side) -> Kind {
        match side {
            Side::A => self.a,
            Side::B => self.b,
        }
    }

    /// The opponent of our socket: libzmq, another driver's socket, or ours when both
    /// sides are the driver under test.
    pub fn opponent(&self) -> Kind {
        match (self.a, self.b) {
            (Kind::Libzmq, _) | (_, Kind::Libzmq) => Kind::Libzmq,
            (Kind::Peer(d), _) | (_, Kind::Peer(d)) => Kind::Peer(d),
            _ => Kind::Ours,
        }
    }

    /// E.g. `PUSH-PULL tcp PUSH=ours(bind) PULL=libzmq`.
    pub fn name(&self) -> String {
        let side = |s: Side| {
            let bind = if self.binder == s { "(bind)" } else { "" };
            format!("{}={}{bind}", self.pair.ty(s).name(), self.kind(s).name())
        };
        format!(
            "{:<13} {:<6} {} {}",
            self.pair.name(),
            self.transport.name(),
            side(Side::A),
            side(Side::B)
        )
    }

    /// The side that receives in `fair-queue`: `B`, or our side of a symmetric pair.
    fn receiver(&self) -> Side {
        if self.pair.symmetric() && self.a == Kind::Ours {
            Side::A
        } else {
            Side::B
        }
    }
}

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// Multipart, 0-byte frames, a 4 MiB frame, both ways.
    Intact,
    /// Ordering per peer.
    Order,
    /// Subscription filtering.
    Filter,
    /// REQ/REP and ROUTER envelopes.
    Envelope,
    /// Load balancing over two peers.
    LoadBalance,
    /// Fair queuing from two peers.
    FairQueue,
    /// Recovery after the bound peer is replaced.
    Reconnect,
    /// STREAM: connection notifications, once per side.
    StreamNotify,
    /// STREAM: chunked byte streams both ways, intact and in order.
    StreamBytes,
    /// STREAM: routing by id to two peers.
    StreamRoute,
    /// STREAM: closing with an empty frame, seen as a disconnect on the other side.
    StreamClose,
    /// STREAM: our connecting side reconnects after the bound peer is replaced.
    StreamReconnect,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 12] = [
        Scenario::Intact,
        Scenario::Order,
        Scenario::Filter,
        Scenario::Envelope,
        Scenario::LoadBalance,
        Scenario::FairQueue,
        Scenario::Reconnect,
        Scenario::StreamNotify,
        Scenario::StreamBytes,
        Scenario::StreamRoute,
        Scenario::StreamClose,
        Scenario::StreamReconnect,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Intact => "intact",
            Scenario::Order => "order",
            Scenario::Filter => "filter",
            Scenario::Envelope => "envelope",
            Scenario::LoadBalance => "load-balance",
            Scenario::FairQueue => "fair-queue",
            Scenario::Reconnect => "reconnect",
            Scenario::StreamNotify => "stream-notify",
            Scenario::StreamBytes => "stream-bytes",
            Scenario::StreamRoute => "stream-route",
            Scenario::StreamClose => "stream-close",
            Scenario::StreamReconnect => "stream-reconnect",
        }
    }

    /// Whether the scenario applies to a combination.
    pub fn applies(self, c: &Combo) -> bool {
        use SocketType::*;
        let pair = c.pair;
        if pair.stream() {
            return match self {
                Scenario::StreamNotify
                | Scenario::StreamBytes
                | Scenario::StreamRoute
                | Scenario::StreamClose => true,
                Scenario::StreamReconnect => c.kind(c.binder.other()) != Kind::Libzmq,
                _ => false,
            };
        }
        match self {
            Scenario::StreamNotify
            | Scenario::StreamBytes
            | Scenario::StreamRoute
            | Scenario::StreamClose
            | Scenario::StreamReconnect => false,
            Scenario::Intact | Scenario::Order => true,
            Scenario::Filter => pair.pubsub(),
            Scenario::Envelope => matches!(pair.b, Rep | Router),
            Scenario::LoadBalance => c.a == Kind::Ours && matches!(pair.a, Push | Dealer | Req),
            Scenario::FairQueue => {
                c.kind(c.receiver()) == Kind::Ours && matches!(pair.b, Pull | Dealer | Router | Rep)
            }
            Scenario::Reconnect => c.kind(c.binder.other()) == Kind::Ours,
        }
    }

    fn run(self, net: &mut Net<'_>, c: &Combo) {
        match self {
            Scenario::Intact => intact(net, c),
            Scenario::Order => order(net, c),
            Scenario::Filter => filter(net, c),
            Scenario::Envelope => envelope(net, c),
            Scenario::LoadBalance => load_balance(net, c),
            Scenario::FairQueue => fair_queue(net, c),
            Scenario::Reconnect => reconnect(net, c),
            Scenario::StreamNotify => stream::notify(net, c),
            Scenario::StreamBytes => stream::bytes(net, c),
            Scenario::StreamRoute => stream::route(net, c),
            Scenario::StreamClose => stream::close(net, c),
            Scenario::StreamReconnect => stream::reconnect(net, c),
        }
    }
}

/// The combinations against libzmq over `transports`: every pair, our socket on each
/// side, either side binding.
pub fn libzmq_combos(transports: &[Transport]) -> Vec<Combo> {
    let mut all = Vec::new();
    for &transport in transports {
        for pair in pairs_over(transport) {
            let ours_sides: &[Side] = if pair.symmetric() {
                &[Side::A]
            } else {
                &[Side::A, Side::B]
            };
            for &ours in ours_sides {
                for binder in [Side::A, Side::B] {
                    let kind = |s: Side| if s == ours { Kind::Ours } else { Kind::Libzmq };
                    all.push(Combo {
                        pair,
                        transport,
                        a: kind(Side::A),
                        b: kind(Side::B),
                        binder,
                    });
                }
            }
        }
    }
    all
}

/// Every combination for a driver offering `own` transports between its own sockets.
pub fn combos(own: &[Transport]) -> Vec<Combo> {
    let mut all = libzmq_combos(&LIBZMQ_TRANSPORTS);
    for &transport in own {
        for pair in pairs_over(transport) {
            let binders: &[Side] = if pair.symmetric() {
                &[Side::A]
            } else {
                &[Side::A, Side::B]
            };
            for &binder in binders {
                all.push(Combo {
                    pair,
                    transport,
                    a: Kind::Ours,
                    b: Kind::Ours,
                    binder,
                });
            }
        }
    }
    all
}

/// Cross-driver combinations: our sockets on both sides, the driver under test on one and
/// the peer driver (named `peer`) on the other, each side binding, over `transports`.
pub fn cross_combos(peer: &'static str, transports: &[Transport]) -> Vec<Combo> {
    let mut all = Vec::new();
    for &transport in transports {
        for pair in pairs_over(transport) {
            // The driver under test on A, then on B (a symmetric pair needs only the first).
            let sides: &[(Kind, Kind)] = if pair.symmetric() {
                &[(Kind::Ours, Kind::Peer(peer))]
            } else {
                &[
                    (Kind::Ours, Kind::Peer(peer)),
                    (Kind::Peer(peer), Kind::Ours),
                ]
            };
            for &(a, b) in sides {
                for binder in [Side::A, Side::B] {
                    all.push(Combo {
                        pair,
                        transport,
                        a,
                        b,
                        binder,
                    });
                }
            }
        }
    }
    all
}

// ----- sockets of a scenario -------------------------------------------------------------

/// Makes one of our sockets.
type Make = fn(SocketType, Options) -> Box<dyn OurSocket>;

fn make_boxed<D: OurDriver>(ty: SocketType, opts: Options) -> Box<dyn OurSocket> {
    Box::new(D::socket(ty, opts))
}

/// Options a scenario sets on a socket (on either implementation).
#[derive(Debug, Clone, Default)]
struct Cfg {
    routing_id: Option<Vec<u8>>,
    connect_routing_id: Option<Vec<u8>>,
}

enum Slot<'c> {
    Ours(Box<dyn OurSocket>),
    Lib(ZSocket<'c>),
    Closed,
}

struct Sock<'c> {
    slot: Slot<'c>,
    kind: Kind,
    ty: SocketType,
    cfg: Cfg,
}

/// A handle to a socket of a [`Net`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct H(usize);

/// Why a single send attempt was refused.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    WouldBlock,
    /// Not allowed in the socket's state (`EFSM`).
    State,
    /// No peer with that routing id (`EHOSTUNREACH`).
    Unreachable,
    Other(String),
}

/// The sockets of one scenario, ours and libzmq's, with blocking helpers that keep every
/// one of our sockets pumped while they wait.
struct Net<'c> {
    ctx: &'c Ctx,
    /// Makes the driver under test's sockets ([`Kind::Ours`]).
    make: Make,
    /// Makes the peer driver's sockets ([`Kind::Peer`]).
    make_peer: Make,
    socks: Vec<Sock<'c>>,
}

fn frames_of(msg: Message) -> Frames {
    msg.into_frames().into_iter().map(|f| f.to_vec()).collect()
}

fn message_of(frames: Frames) -> Message {
    frames.into_iter().map(Bytes::from).collect()
}

/// A short rendering of a message for failure reports (long frames abbreviated).
fn show(frames: &Frames) -> String {
    let mut s = String::from("[");
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        if f.len() > 40 {
            let _ = write!(s, "<{} bytes>", f.len());
        } else {
            let _ = write!(s, "{:?}", String::from_utf8_lossy(f));
        }
    }
    s.push(']');
    s
}

/// Assert that `got` equals `want`, with a readable report for large messages.
fn check(got: &Frames, want: &Frames, what: &str) {
    if got != want {
        let detail = if got.len() == want.len() {
            let i = (0..got.len()).find(|&i| got[i] != want[i]).unwrap_or(0);
            format!(
                "frame {i} differs ({} vs {} bytes)",
                got[i].len(),
                want[i].len()
            )
        } else {
            format!("{} frames instead of {}", got.len(), want.len())
        };
        panic!(
            "{what}: got {}, expected {} ({detail})",
            show(got),
            show(want)
        );
    }
}

fn is_sync(payload: &Frames) -> bool {
    payload.len() == 1 && payload[0].ends_with(SYNC)
}

fn f(parts: &[&[u8]]) -> Frames {
    parts.iter().map(|p| p.to_vec()).collect()
}

impl<'c> Net<'c> {
    fn new(ctx: &'c Ctx, make: Make, make_peer: Make) -> Net<'c> {
        Net {
            ctx,
            make,
            make_peer,
            socks: Vec::new(),
        }
    }

    fn open(&mut self, kind: Kind, ty: SocketType, cfg: Cfg) -> H {
        let slot = match kind {
            Kind::Ours | Kind::Peer(_) => {
                let make = if kind == Kind::Ours {
                    self.make
                } else {
                    self.make_peer
                };
                let mut opts = Options::default();
                opts.linger = Some(Duration::ZERO);
                opts.reconnect_ivl = Some(RECONNECT_IVL);
                if let Some(id) = &cfg.routing_id {
                    opts.routing_id = Bytes::from(id.clone());
                }
                opts.connect_routing_id = cfg.connect_routing_id.clone().map(Bytes::from);
                Slot::Ours(make(ty, opts))
            }
            Kind::Libzmq => {
                let z = self.ctx.socket(ty as u8 as c_int).expect("zmq_socket");
                let ivl = RECONNECT_IVL.as_millis() as c_int;
                z.set_int(ZMQ_RECONNECT_IVL, ivl)
                    .expect("ZMQ_RECONNECT_IVL");
                if let Some(id) = &cfg.routing_id {
                    z.set_bytes(ZMQ_ROUTING_ID, id).expect("ZMQ_ROUTING_ID");
                }
                if let Some(id) = &cfg.connect_routing_id {
                    z.set_bytes(ZMQ_CONNECT_ROUTING_ID, id)
                        .expect("ZMQ_CONNECT_ROUTING_ID");
                }
                Slot::Lib(z)
            }
        };
        self.socks.push(Sock {
            slot,
            kind,
            ty,
            cfg,
        });
        H(self.socks.len() - 1)
    }

    /// A new socket like `h` (same implementation, type and options).
    fn reopen(&mut self, h: H) -> H {
        let s = &self.socks[h.0];
        let (kind, ty, cfg) = (s.kind, s.ty, s.cfg.clone());
        self.open(kind, ty, cfg)
    }

    fn describe(&self, h: H) -> String {
        let s = &self.socks[h.0];
        format!("{} {}", s.kind.name(), s.ty.name())
    }

    fn ty(&self, h: H) -> SocketType {
        self.socks[h.0].ty
    }

    /// One round of progress for every one of our sockets but `except`, then a short pause
    /// (libzmq works on its own threads).
    fn idle(&mut self, except: Option<H>) {
        for (i, s) in self.socks.iter_mut().enumerate() {
            if Some(H(i)) == except {
                continue;
            }
            match &mut s.slot {
                Slot::Ours(o) => o.pump(Duration::ZERO),
                // A libzmq STREAM closes a connection it was told to close only when it
                // processes its commands, in some later call into it.
                Slot::Lib(z) if s.ty == SocketType::Stream => {
                    let _ = z.get_int(ZMQ_EVENTS);
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }

    /// Keep every socket going for `d`.
    fn pump(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline {
            self.idle(None);
        }
    }

    /// Bind `h` to `endpoint`, retrying while it fails (an endpoint released by a closed
    /// socket may take a moment to be free); returns the resolved endpoint.
    fn bind(&mut self, h: H, endpoint: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let result = match &mut self.socks[h.0].slot {
                Slot::Ours(o) => o.bind(endpoint),
                Slot::Lib(z) => z
                    .bind(endpoint)
                    .and_then(|()| z.last_endpoint())
                    .map_err(|e| e.to_string()),
                Slot::Closed => panic!("bind on a closed socket"),
            };
            match result {
                Ok(resolved) => return resolved,
                Err(e) if Instant::now() >= deadline => {
                    panic!("{} cannot bind {endpoint}: {e}", self.describe(h))
                }
                Err(_) => {
                    for _ in 0..20 {
                        self.idle(Some(h));
                    }
                }
            }
        }
    }

    fn connect(&mut self, h: H, endpoint: &str) {
        let result = match &mut self.socks[h.0].slot {
            Slot::Ours(o) => o.connect(endpoint),
            Slot::Lib(z) => z.connect(endpoint).map_err(|e| e.to_string()),
            Slot::Closed => panic!("connect on a closed socket"),
        };
        if let Err(e) = result {
            panic!("{} cannot connect to {endpoint}: {e}", self.describe(h));
        }
    }

    /// One send attempt.
    fn try_send(&mut self, h: H, frames: Frames) -> Result<(), Refusal> {
        match &mut self.socks[h.0].slot {
            Slot::Ours(o) => o
                .send(message_of(frames), Duration::ZERO)
                .map_err(|e| match e {
                    SendError::WouldBlock(_) => Refusal::WouldBlock,
                    SendError::InvalidState(_) => Refusal::State,
                    SendError::HostUnreachable(_) => Refusal::Unreachable,
                    other => Refusal::Other(other.to_string()),
                }),
            Slot::Lib(z) => {
                let parts: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
                z.try_send_multipart(&parts).map_err(|e| {
                    if e.is_again() {
                        Refusal::WouldBlock
                    } else if e.is_efsm() {
                        Refusal::State
                    } else if e.errno == EHOSTUNREACH {
                        Refusal::Unreachable
                    } else {
                        Refusal::Other(e.to_string())
                    }
                })
            }
            Slot::Closed => panic!("send on a closed socket"),
        }
    }

    /// Send, waiting (and pumping everything) while the socket would block.
    fn send(&mut self, h: H, frames: Frames) {
        let deadline = Instant::now() + TIMEOUT;
        let what = show(&frames);
        let mut pending = Some(message_of(frames));
        loop {
            let msg = pending.take().expect("a message to send");
            let result = match &mut self.socks[h.0].slot {
                Slot::Ours(o) => match o.send(msg, Duration::ZERO) {
                    Ok(()) => Ok(()),
                    Err(SendError::WouldBlock(m)) => {
                        pending = Some(m);
                        Err(Refusal::WouldBlock)
                    }
                    Err(e) => Err(Refusal::Other(e.to_string())),
                },
                Slot::Lib(z) => {
                    let parts: Vec<&[u8]> = msg.frames().iter().map(|b| &b[..]).collect();
                    match z.try_send_multipart(&parts) {
                        Ok(()) => Ok(()),
                        Err(e) if e.is_again() => {
                            pending = Some(msg.clone());
                            Err(Refusal::WouldBlock)
                        }
                        Err(e) => Err(Refusal::Other(e.to_string())),
                    }
                }
                Slot::Closed => panic!("send on a closed socket"),
            };
            match result {
                Ok(()) => return,
                Err(Refusal::WouldBlock) if Instant::now() < deadline => self.idle(Some(h)),
                Err(e) => panic!("{} could not send {what}: {e:?}", self.describe(h)),
            }
        }
    }

    /// Receive within `timeout`, pumping everything meanwhile.
    fn recv(&mut self, h: H, timeout: Duration) -> Option<Frames> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = match &mut self.socks[h.0].slot {
                Slot::Ours(o) => o.recv(Duration::ZERO).map(frames_of),
                Slot::Lib(z) => match z.try_recv_multipart() {
                    Ok(m) => Some(m),
                    Err(e) if e.is_again() => None,
                    Err(e) => panic!("libzmq receive failed: {e}"),
                },
                Slot::Closed => panic!("recv on a closed socket"),
            };
            if got.is_some() {
                return got;
            }
            if Instant::now() >= deadline {
                return None;
            }
            self.idle(Some(h));
        }
    }

    fn expect(&mut self, h: H, what: &str) -> Frames {
        match self.recv(h, TIMEOUT) {
            Some(m) => m,
            None => panic!("{} received nothing: {what}", self.describe(h)),
        }
    }

    /// Subscribe a SUB (`ZMQ_SUBSCRIBE`) or an XSUB (by sending `[0x01, topic]`).
    fn subscribe(&mut self, h: H, topic: &[u8]) {
        match self.ty(h) {
            SocketType::XSub => {
                let mut msg = vec![1u8];
                msg.extend_from_slice(topic);
                self.send(h, vec![msg]);
            }
            _ => match &mut self.socks[h.0].slot {
                Slot::Ours(o) => o.subscribe(topic),
                Slot::Lib(z) => z.subscribe(topic).expect("ZMQ_SUBSCRIBE"),
                Slot::Closed => panic!("subscribe on a closed socket"),
            },
        }
    }

    fn close(&mut self, h: H) {
        self.socks[h.0].slot = Slot::Closed;
    }
}

// ----- links: one A and one B, and the pair's conventions ---------------------------------

/// An `A` socket and a `B` socket that talk, with how each addresses the other.
struct Link {
    pair: Pair,
    a: H,
    b: H,
    /// How `A` addresses `B` (ROUTER `A`).
    to_b: Vec<u8>,
    /// How `B` addresses `A` (ROUTER `B`): fixed for ROUTER-ROUTER, else learnt from
    /// `A`'s messages.
    to_a: Option<Vec<u8>>,
    /// The subscription of a SUB/XSUB `B`.
    topic: Vec<u8>,
    binder: Side,
    endpoint: String,
}

impl Link {
    fn handle(&self, side: Side) -> H {
        match side {
            Side::A => self.a,
            Side::B => self.b,
        }
    }

    fn a_send(&self, net: &mut Net<'_>, payload: Frames) {
        net.send(self.a, self.pair.wrap_a(payload, &self.to_b));
    }

    /// `B` receives a payload (synchronisation messages skipped); a ROUTER `B` learns or
    /// checks `A`'s id.
    fn b_recv(&mut self, net: &mut Net<'_>, timeout: Duration) -> Option<Frames> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let raw = net.recv(self.b, left)?;
            let (id, payload) = self.pair.unwrap_b(raw);
            if is_sync(&payload) {
                continue;
            }
            if let Some(id) = id {
                match &self.to_a {
                    Some(known) => assert_eq!(
                        &id,
                        known,
                        "ROUTER saw the peer under another id: {} vs {}",
                        show(&vec![id.clone()]),
                        show(&vec![known.clone()])
                    ),
                    None => self.to_a = Some(id),
                }
            }
            return Some(payload);
        }
    }

    fn b_expect(&mut self, net: &mut Net<'_>, what: &str) -> Frames {
        match self.b_recv(net, TIMEOUT) {
            Some(p) => p,
            None => panic!("{} received nothing: {what}", net.describe(self.b)),
        }
    }

    fn b_send(&self, net: &mut Net<'_>, payload: Frames) {
        let to_a = self.to_a.clone().unwrap_or_default();
        net.send(self.b, self.pair.wrap_b(payload, &to_a));
    }

    fn a_expect(&self, net: &mut Net<'_>, what: &str) -> Frames {
        loop {
            let raw = net.expect(self.a, what);
            let payload = self.pair.unwrap_a(raw, &self.to_b);
            if !is_sync(&payload) {
                return payload;
            }
        }
    }

    /// Make the link usable: for PUB/XPUB, publish until the subscription took effect; for
    /// ROUTER-ROUTER, the connecting side says hello until the bound side has seen it.
    fn sync(&mut self, net: &mut Net<'_>) {
        if self.pair.pubsub() {
            let topic = self.topic.clone();
            self.sync_topic(net, &topic);
        } else if self.pair.router_router() {
            let to_a = self.to_a.clone().expect("ROUTER-ROUTER ids are fixed");
            let (conn, bind, to_bind, to_conn) = match self.binder {
                Side::A => (self.b, self.a, to_a, self.to_b.clone()),
                Side::B => (self.a, self.b, self.to_b.clone(), to_a),
            };
            let hello = vec![to_conn.clone(), SYNC.to_vec()];
            let deadline = Instant::now() + TIMEOUT;
            'hello: loop {
                net.send(conn, vec![to_bind.clone(), SYNC.to_vec()]);
                while let Some(raw) = net.recv(bind, Duration::from_millis(10)) {
                    if raw == hello {
                        break 'hello;
                    }
                    // A late hello from another link of the same socket.
                    assert!(
                        raw.len() == 2 && raw[1] == SYNC,
                        "unexpected message before hello: {}",
                        show(&raw)
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "the bound ROUTER never heard from the connecting one"
                );
            }
            net.send(bind, vec![to_conn, READY.to_vec()]);
            let raw = net.expect(conn, "the bound ROUTER's answer");
            check(&raw, &vec![to_bind, READY.to_vec()], "ready");
        }
    }

    /// Publish `[topic + SYNC]` until `B` gets one.
    fn sync_topic(&mut self, net: &mut Net<'_>, topic: &[u8]) {
        let mut marker = topic.to_vec();
        marker.extend_from_slice(SYNC);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            net.send(self.a, vec![marker.clone()]);
            if let Some(raw) = net.recv(self.b, Duration::from_millis(10)) {
                assert!(
                    is_sync(&raw),
                    "unexpected message before the first sync: {}",
                    show(&raw)
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "subscription {:?} never reached the publisher",
                String::from_utf8_lossy(topic)
            );
        }
    }

    /// `A` sends `[tag]`, `B` gets it, and answers `[tag, "re"]` where it can.
    fn exchange(&mut self, net: &mut Net<'_>, tag: &[u8]) {
        let msg = f(&[tag]);
        self.a_send(net, msg.clone());
        let got = self.b_expect(net, "the exchanged message");
        check(&got, &msg, "exchange A to B");
        if self.pair.b_sends() {
            let reply = f(&[tag, b"re"]);
            self.b_send(net, reply.clone());
            let back = self.a_expect(net, "the exchanged reply");
            check(&back, &reply, "exchange B to A");
        }
    }
}

/// Options of `side` in a link: ROUTER-ROUTER sides get ids (the connecting side also an
/// alias for the bound one, set with `CONNECT_ROUTING_ID`).
fn link_cfgs(pair: Pair, binder: Side) -> (Cfg, Cfg, Vec<u8>, Option<Vec<u8>>) {
    if !pair.router_router() {
        return (Cfg::default(), Cfg::default(), Vec::new(), None);
    }
    let bound = Cfg {
        routing_id: Some(b"bound-id".to_vec()),
        connect_routing_id: None,
    };
    let connecting = Cfg {
        routing_id: Some(b"connecting-id".to_vec()),
        connect_routing_id: Some(b"alias-of-bound".to_vec()),
    };
    // (cfg A, cfg B, how A addresses B, how B addresses A)
    match binder {
        Side::A => (
            bound,
            connecting,
            b"connecting-id".to_vec(),
            Some(b"alias-of-bound".to_vec()),
        ),
        Side::B => (
            connecting,
            bound,
            b"alias-of-bound".to_vec(),
            Some(b"connecting-id".to_vec()),
        ),
    }
}

/// Open, wire and synchronise the two sockets of a combination. `a_id` sets `A`'s
/// routing id (not for ROUTER-ROUTER, whose ids are fixed).
fn link(net: &mut Net<'_>, c: &Combo, topic: &[u8], a_id: Option<&[u8]>) -> Link {
    let pair = c.pair;
    let (mut cfg_a, cfg_b, to_b, to_a) = link_cfgs(pair, c.binder);
    if let Some(id) = a_id {
        cfg_a.routing_id = Some(id.to_vec());
    }
    let a = net.open(c.a, pair.a, cfg_a);
    let b = net.open(c.b, pair.b, cfg_b);
    if matches!(pair.b, SocketType::Sub | SocketType::XSub) {
        net.subscribe(b, topic);
    }
    let (bind_h, conn_h) = match c.binder {
        Side::A => (a, b),
        Side::B => (b, a),
    };
    let endpoint = net.bind(bind_h, &c.transport.fresh_endpoint());
    net.connect(conn_h, &endpoint);
    let mut l = Link {
        pair,
        a,
        b,
        to_b,
        to_a,
        topic: topic.to_vec(),
        binder: c.binder,
        endpoint,
    };
    l.sync(net);
    l
}

// ----- scenarios -------------------------------------------------------------------------

fn big_frame() -> Vec<u8> {
    (0..BIG)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 12)) as u8)
        .collect()
}

fn intact(net: &mut Net<'_>, c: &Combo) {
    let mut l = link(net, c, b"", None);
    let payloads: Vec<Frames> = vec![
        f(&[b"hello"]),
        f(&[b"multi", b"part", b"", b"message"]),
        f(&[b""]),
        f(&[b"", b"x", b""]),
        vec![b"big".to_vec(), big_frame()],
        f(&[b"after-big"]),
    ];
    let small = |p: &Frames| p.iter().map(Vec::len).sum::<usize>() < 1024;
    if c.pair.lockstep() {
        for (i, p) in payloads.iter().enumerate() {
            l.a_send(net, p.clone());
            let got = l.b_expect(net, "a request");
            check(&got, p, &format!("request {i}"));
            let reply = if small(p) {
                p.clone()
            } else {
                f(&[b"big-ack"])
            };
            l.b_send(net, reply.clone());
            let back = l.a_expect(net, "a reply");
            check(&back, &reply, &format!("reply {i}"));
        }
        return;
    }
    for p in &payloads {
        l.a_send(net, p.clone());
    }
    for (i, p) in payloads.iter().enumerate() {
        let got = l.b_expect(net, "a message");
        check(&got, p, &format!("message {i}"));
    }
    if c.pair.b_sends() {
        let back: Vec<&Frames> = payloads.iter().filter(|p| small(p)).collect();
        for p in &back {
            l.b_send(net, (*p).clone());
        }
        for (i, p) in back.iter().enumerate() {
            let got = l.a_expect(net, "a message back");
            check(&got, p, &format!("message back {i}"));
        }
    }
}

fn numbered(i: usize) -> Frames {
    vec![format!("{i:03}").into_bytes(), vec![b'x'; i % 4]]
}

fn order(net: &mut Net<'_>, c: &Combo) {
    let mut l = link(net, c, b"", None);
    if c.pair.lockstep() {
        for i in 0..10 {
            l.a_send(net, numbered(i));
            let got = l.b_expect(net, "a request");
            check(&got, &numbered(i), "request order");
            l.b_send(net, numbered(100 + i));
            let back = l.a_expect(net, "a reply");
            check(&back, &numbered(100 + i), "reply order");
        }
        return;
    }
    const N: usize = 100;
    for i in 0..N {
        l.a_send(net, numbered(i));
    }
    for i in 0..N {
        let got = l.b_expect(net, "a numbered message");
        check(&got, &numbered(i), "order A to B");
    }
    if c.pair.b_sends() {
        for i in 0..N {
            l.b_send(net, numbered(i));
        }
        for i in 0..N {
            let got = l.a_expect(net, "a numbered message back");
            check(&got, &numbered(i), "order B to A");
        }
    }
}

fn filter(net: &mut Net<'_>, c: &Combo) {
    let xpub = c.pair.a == SocketType::XPub;
    let mut l = link(net, c, b"keep", None);
    if xpub {
        let sub = net.expect(l.a, "the subscription");
        check(&sub, &f(&[b"\x01keep"]), "XPUB subscription message");
    }
    for m in [
        f(&[b"drop", b"x"]),
        f(&[b"keep", b"1"]),
        f(&[b"kee"]),
        f(&[b"keepX", b"2"]),
        f(&[b"other-keep"]),
        f(&[b""]),
        f(&[b"keep", b"3"]),
        f(&[b"keep-end"]),
    ] {
        l.a_send(net, m);
    }
    for want in [
        f(&[b"keep", b"1"]),
        f(&[b"keepX", b"2"]),
        f(&[b"keep", b"3"]),
        f(&[b"keep-end"]),
    ] {
        let got = l.b_expect(net, "a matching message");
        check(&got, &want, "filtered stream");
    }
    // A second subscription.
    net.subscribe(l.b, b"more");
    l.sync_topic(net, b"more");
    if xpub {
        let sub = net.expect(l.a, "the second subscription");
        check(&sub, &f(&[b"\x01more"]), "XPUB second subscription message");
    }
    for m in [
        f(&[b"more", b"1"]),
        f(&[b"drop"]),
        f(&[b"keep", b"4"]),
        f(&[b"keep-end"]),
    ] {
        l.a_send(net, m);
    }
    for want in [f(&[b"more", b"1"]), f(&[b"keep", b"4"]), f(&[b"keep-end"])] {
        let got = l.b_expect(net, "a matching message");
        check(&got, &want, "filtered stream after a second subscription");
    }
    if c.pair.b != SocketType::XSub {
        return;
    }
    // XSUB: other messages go upstream, to an XPUB application (a PUB ignores them).
    net.send(l.b, f(&[b"up", b"stream"]));
    if xpub {
        let got = net.expect(l.a, "the upstream message");
        check(
            &got,
            &f(&[b"up", b"stream"]),
            "XSUB upstream message at XPUB",
        );
    }
    // XSUB cancels with [0x00, topic]. A later subscription is the fence: once it works,
    // the publisher has processed the cancel sent before it.
    net.send(l.b, f(&[b"\x00keep"]));
    net.subscribe(l.b, b"fence");
    l.sync_topic(net, b"fence");
    if xpub {
        let got = net.expect(l.a, "the cancel");
        check(&got, &f(&[b"\x00keep"]), "XPUB cancel message");
        let got = net.expect(l.a, "the third subscription");
        check(&got, &f(&[b"\x01fence"]), "XPUB third subscription message");
    }
    for m in [f(&[b"keep", b"5"]), f(&[b"more", b"2"]), f(&[b"fence-end"])] {
        l.a_send(net, m);
    }
    for want in [f(&[b"more", b"2"]), f(&[b"fence-end"])] {
        let got = l.b_expect(net, "a matching message");
        check(&got, &want, "filtered stream after a cancel");
    }
}

fn envelope(net: &mut Net<'_>, c: &Combo) {
    use SocketType::*;
    match (c.pair.a, c.pair.b) {
        (Req, Rep) => {
            let mut l = link(net, c, b"", None);
            l.a_send(net, f(&[b"q"]));
            assert_eq!(
                net.try_send(l.a, f(&[b"again"])),
                Err(Refusal::State),
                "REQ must refuse a second request before the reply"
            );
            assert_eq!(
                net.try_send(l.b, f(&[b"early"])),
                Err(Refusal::State),
                "REP must refuse to reply before a request"
            );
            check(&l.b_expect(net, "the request"), &f(&[b"q"]), "REP request");
            l.b_send(net, f(&[b"r"]));
            check(&l.a_expect(net, "the reply"), &f(&[b"r"]), "REQ reply");
            l.exchange(net, b"second");
        }
        (Req, Router) => {
            // A REQ without a routing id: the ROUTER makes one up (0x00 + u32).
            let l = link(net, c, b"", None);
            net.send(l.a, f(&[b"q"]));
            let got = net.expect(l.b, "the request");
            assert_eq!(got.len(), 3, "ROUTER frames: {}", show(&got));
            let id = got[0].clone();
            assert!(
                id.len() == 5 && id[0] == 0,
                "generated id: {}",
                show(&vec![id.clone()])
            );
            check(
                &got[1..].to_vec(),
                &f(&[b"", b"q"]),
                "REQ envelope at ROUTER",
            );
            net.send(l.b, f(&[b"nobody", b"", b"lost"]));
            net.send(l.b, vec![id.clone(), vec![], b"r".to_vec()]);
            check(&net.expect(l.a, "the reply"), &f(&[b"r"]), "REQ reply");
            net.send(l.a, f(&[b"q2"]));
            let got = net.expect(l.b, "the second request");
            check(&got, &vec![id, vec![], b"q2".to_vec()], "same id again");
        }
        (Dealer, Rep) => {
            let l = link(net, c, b"", None);
            // No delimiter: REP discards the request.
            net.send(l.a, f(&[b"nodelim"]));
            net.send(l.a, f(&[b"hop", b"", b"q"]));
            check(&net.expect(l.b, "the request"), &f(&[b"q"]), "REP request");
            net.send(l.b, f(&[b"r"]));
            check(
                &net.expect(l.a, "the reply"),
                &f(&[b"hop", b"", b"r"]),
                "REP reply keeps the envelope",
            );
        }
        (Dealer, Router) => {
            let l = link(net, c, b"", Some(b"dealer-id"));
            net.send(l.a, f(&[b"x", b""]));
            check(
                &net.expect(l.b, "the message"),
                &f(&[b"dealer-id", b"x", b""]),
                "ROUTER sees the DEALER's routing id",
            );
            net.send(l.b, f(&[b"nobody", b"lost"]));
            net.send(l.b, f(&[b"dealer-id", b"y"]));
            check(&net.expect(l.a, "the answer"), &f(&[b"y"]), "DEALER answer");
        }
        (Router, Router) => {
            let l = link(net, c, b"", None);
            let to_a = l.to_a.clone().expect("fixed id");
            // The bound side may still hold hellos of the synchronisation (the connecting
            // side says hello every 10 ms until one is heard): skip them.
            let expect = |net: &mut Net<'_>, h: H, what: &str| loop {
                let raw = net.expect(h, what);
                if !(raw.len() == 2 && raw[1] == SYNC) {
                    break raw;
                }
            };
            net.send(l.a, vec![l.to_b.clone(), b"x".to_vec(), vec![]]);
            check(
                &expect(net, l.b, "the message"),
                &vec![to_a.clone(), b"x".to_vec(), vec![]],
                "ROUTER-ROUTER A to B",
            );
            net.send(l.b, f(&[b"nobody", b"lost"]));
            net.send(l.b, vec![to_a, b"y".to_vec()]);
            check(
                &expect(net, l.a, "the answer"),
                &vec![l.to_b.clone(), b"y".to_vec()],
                "ROUTER-ROUTER B to A",
            );
        }
        other => panic!("no envelope scenario for {other:?}"),
    }
}

/// Wire `one` to each of `many`: `one` binds and they connect, or each binds and `one`
/// connects to all. Returns the endpoint of each link.
fn wire_many(
    net: &mut Net<'_>,
    transport: Transport,
    one: H,
    many: &[H],
    one_binds: bool,
) -> Vec<String> {
    if one_binds {
        let ep = net.bind(one, &transport.fresh_endpoint());
        for &m in many {
            net.connect(m, &ep);
        }
        vec![ep; many.len()]
    } else {
        let mut eps = Vec::new();
        for &m in many {
            let ep = net.bind(m, &transport.fresh_endpoint());
            net.connect(one, &ep);
            eps.push(ep);
        }
        eps
    }
}

/// Our `A` (PUSH, DEALER, REQ) spreads messages round-robin over two `B` peers.
fn load_balance(net: &mut Net<'_>, c: &Combo) {
    let pair = c.pair;
    let a = net.open(c.a, pair.a, Cfg::default());
    let bs = [
        net.open(c.b, pair.b, Cfg::default()),
        net.open(c.b, pair.b, Cfg::default()),
    ];
    let eps = wire_many(net, c.transport, a, &bs, c.binder == Side::A);
    let mut links: Vec<Link> = bs
        .iter()
        .zip(eps)
        .map(|(&b, endpoint)| Link {
            pair,
            a,
            b,
            to_b: Vec::new(),
            to_a: None,
            topic: Vec::new(),
            binder: c.binder,
            endpoint,
        })
        .collect();
    // Serve whatever reached the peers: answer where the pattern needs it, and report what
    // each peer got (warm-up messages included).
    let answer = pair.lockstep();
    let serve = |net: &mut Net<'_>, links: &mut [Link], got: &mut Vec<(usize, Frames)>| {
        for (i, l) in links.iter_mut().enumerate() {
            while let Some(p) = l.b_recv(net, Duration::from_millis(2)) {
                if answer {
                    l.b_send(net, f(&[b"ack"]));
                }
                got.push((i, p));
            }
        }
    };
    // Warm up until both peers are attached (a bound socket learns of them one by one).
    let deadline = Instant::now() + TIMEOUT;
    let mut seen = [false; 2];
    while !(seen[0] && seen[1]) {
        assert!(Instant::now() < deadline, "a peer never got a message");
        links[0].a_send(net, f(&[WARM]));
        let mut got = Vec::new();
        while got.is_empty() && Instant::now() < deadline {
            serve(net, &mut links, &mut got);
        }
        for (i, _) in got {
            seen[i] = true;
        }
        if pair.a == SocketType::Req {
            check(
                &links[0].a_expect(net, "an answer"),
                &f(&[b"ack"]),
                "warm-up answer",
            );
        }
    }
    // Round robin from here on.
    const N: usize = 10;
    let mut got = Vec::new();
    for i in 0..N {
        links[0].a_send(net, numbered(i));
        if pair.a == SocketType::Req {
            let before = got.len();
            let deadline = Instant::now() + TIMEOUT;
            while got.len() == before && Instant::now() < deadline {
                serve(net, &mut links, &mut got);
            }
            check(
                &links[0].a_expect(net, "an answer"),
                &f(&[b"ack"]),
                "answer",
            );
        }
    }
    let deadline = Instant::now() + TIMEOUT;
    while got.iter().filter(|(_, p)| p != &f(&[WARM])).count() < N {
        assert!(
            Instant::now() < deadline,
            "messages lost: {:?}",
            got.iter().map(|(i, p)| (i, show(p))).collect::<Vec<_>>()
        );
        serve(net, &mut links, &mut got);
    }
    got.retain(|(_, p)| p != &f(&[WARM]));
    let mut to = vec![usize::MAX; N];
    let mut last = [None::<usize>; 2];
    for (peer, p) in &got {
        let n: usize = String::from_utf8_lossy(&p[0]).parse().expect("numbered");
        check(p, &numbered(n), "load-balanced message");
        assert!(
            last[*peer].is_none_or(|l| l < n),
            "peer {peer} got {n} out of order"
        );
        last[*peer] = Some(n);
        to[n] = *peer;
    }
    for n in 1..N {
        assert_ne!(
            to[n - 1],
            to[n],
            "not round robin: messages went to peers {to:?}"
        );
    }
}

/// Our receiver (PULL, DEALER, ROUTER, REP) takes one message from each sender in turn;
/// answers go back to the right sender.
fn fair_queue(net: &mut Net<'_>, c: &Combo) {
    let pair = c.pair;
    let receiver_side = c.receiver();
    let sender_side = receiver_side.other();
    let receiver_binds = c.binder == receiver_side;
    // ROUTER-ROUTER: fixed ids; senders address the receiver by its ROUTING_ID.
    let rr = pair.router_router();
    let recv_cfg = Cfg {
        routing_id: rr.then(|| b"receiver".to_vec()),
        connect_routing_id: None,
    };
    let r = net.open(c.kind(receiver_side), pair.b, recv_cfg);
    let senders: Vec<H> = (0..2)
        .map(|i| {
            let cfg = if rr {
                Cfg {
                    routing_id: Some(format!("sender-{i}").into_bytes()),
                    connect_routing_id: None,
                }
            } else {
                Cfg::default()
            };
            net.open(c.kind(sender_side), pair.a, cfg)
        })
        .collect();
    let eps = wire_many(net, c.transport, r, &senders, receiver_binds);
    let mut links: Vec<Link> = senders
        .iter()
        .zip(eps)
        .enumerate()
        .map(|(i, (&s, endpoint))| Link {
            pair,
            a: s,
            b: r,
            to_b: if rr { b"receiver".to_vec() } else { Vec::new() },
            to_a: rr.then(|| format!("sender-{i}").into_bytes()),
            topic: Vec::new(),
            binder: if receiver_binds { Side::B } else { Side::A },
            endpoint,
        })
        .collect();
    for l in &mut links {
        l.sync(net);
    }
    // The receiver answers where it can address the sender.
    let answers = matches!(pair.b, SocketType::Rep | SocketType::Router);
    let tag = |i: usize| format!("s{i}").into_bytes();
    let receive = |net: &mut Net<'_>, links: &mut [Link]| -> (usize, usize) {
        let raw = loop {
            let raw = net.expect(r, "a message from a sender");
            if !is_sync(&pair.unwrap_b(raw.clone()).1) {
                break raw;
            }
        };
        let (id, payload) = pair.unwrap_b(raw);
        assert_eq!(payload.len(), 2, "fair-queue message: {}", show(&payload));
        let from: usize = String::from_utf8_lossy(&payload[0][1..])
            .parse()
            .expect("sender tag");
        let n: usize = String::from_utf8_lossy(&payload[1])
            .parse()
            .expect("number");
        let l = &mut links[from];
        if let Some(id) = id {
            match &l.to_a {
                Some(known) => assert_eq!(&id, known, "sender {from} seen under another id"),
                None => l.to_a = Some(id),
            }
        }
        if answers {
            l.b_send(net, vec![b"re".to_vec(), payload[1].clone()]);
        }
        (from, n)
    };
    if pair.a == SocketType::Req {
        // Each REQ has one request in flight: both ask, both are served, each gets its own
        // answer.
        for round in 0..3 {
            for (i, l) in links.iter().enumerate() {
                l.a_send(net, vec![tag(i), round.to_string().into_bytes()]);
            }
            let first = receive(net, &mut links);
            let second = receive(net, &mut links);
            assert_ne!(first.0, second.0, "the same sender served twice");
            for l in &links {
                let back = l.a_expect(net, "the answer");
                check(
                    &back,
                    &vec![b"re".to_vec(), round.to_string().into_bytes()],
                    "answer",
                );
            }
        }
        return;
    }
    // Sender 0 sends all its messages, then sender 1: a receiver that does not take turns
    // would deliver them in that order.
    const K: usize = 5;
    for (i, l) in links.iter().enumerate() {
        for n in 0..K {
            l.a_send(net, vec![tag(i), n.to_string().into_bytes()]);
        }
    }
    net.pump(Duration::from_millis(100));
    let mut order = Vec::new();
    for _ in 0..2 * K {
        order.push(receive(net, &mut links));
    }
    let mut next = [0usize; 2];
    for &(from, n) in &order {
        assert_eq!(n, next[from], "sender {from} out of order: {order:?}");
        next[from] += 1;
    }
    for w in order.windows(2) {
        assert_ne!(w[0].0, w[1].0, "not fair queued: {order:?}");
    }
    if answers {
        for l in &links {
            for n in 0..K {
                let back = l.a_expect(net, "an answer");
                check(
                    &back,
                    &vec![b"re".to_vec(), n.to_string().into_bytes()],
                    "answer",
                );
            }
        }
    }
}

/// Our connecting side survives its bound peer being replaced by a new one on the same
/// endpoint: it reconnects, resubscribes, and traffic resumes.
fn reconnect(net: &mut Net<'_>, c: &Combo) {
    let mut l = link(net, c, b"t", None);
    l.exchange(net, b"t-before");
    let old = l.handle(c.binder);
    let endpoint = l.endpoint.clone();
    // libzmq leaves the socket file of a closed ipc listener (it removes only files it
    // made up for `ipc://*`); binding again replaces it.
    net.close(old);
    // Let our side see the connection end before it sends again.
    net.pump(Duration::from_millis(50));
    // A connecting sender keeps its peer's queue while disconnected (IMMEDIATE=0): what it
    // sends now goes out once the new peer is there.
    let queues = c.binder == Side::B
        && matches!(
            c.pair.a,
            SocketType::Push | SocketType::Dealer | SocketType::Req | SocketType::Pair
        );
    if queues {
        l.a_send(net, f(&[b"t-queued"]));
    }
    let new = net.reopen(old);
    if c.binder == Side::B && matches!(c.pair.b, SocketType::Sub | SocketType::XSub) {
        let topic = l.topic.clone();
        net.subscribe(new, &topic);
    }
    net.bind(new, &endpoint);
    match c.binder {
        Side::A => l.a = new,
        Side::B => l.b = new,
    }
    if !c.pair.router_router() {
        l.to_a = None;
    }
    l.sync(net);
    if queues {
        let got = l.b_expect(net, "the message queued while disconnected");
        check(
            &got,
            &f(&[b"t-queued"]),
            "message queued while disconnected",
        );
        if c.pair.b_sends() {
            l.b_send(net, f(&[b"t-queued", b"re"]));
            let back = l.a_expect(net, "the answer to the queued message");
            check(
                &back,
                &f(&[b"t-queued", b"re"]),
                "answer after reconnecting",
            );
        }
    }
    l.exchange(net, b"t-after");
}

// ----- running -----------------------------------------------------------------------------

/// The result of one scenario of one combination.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The driver's name.
    pub driver: &'static str,
    /// The combination.
    pub combo: Combo,
    /// The scenario.
    pub scenario: Scenario,
    /// `None` if it passed, else the failure.
    pub error: Option<String>,
    /// How long it took.
    pub elapsed: Duration,
}

impl Outcome {
    /// E.g. `poll PUSH-PULL tcp PUSH=ours(bind) PULL=libzmq load-balance`.
    pub fn name(&self) -> String {
        format!(
            "{} {} {}",
            self.driver,
            self.combo.name(),
            self.scenario.name()
        )
    }
}

thread_local! {
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// While alive, panics are recorded for [`caught`] instead of printed. The hook is the
/// process's: the first capture alive installs it, and the previous hook comes back when
/// the last one is dropped, so captures may overlap (the matrix runs on several threads).
pub(crate) struct PanicCapture(());

type PanicHook = Box<dyn Fn(&panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The captures alive, and the hook the first one replaced.
static CAPTURES: std::sync::Mutex<(usize, Option<PanicHook>)> = std::sync::Mutex::new((0, None));

impl PanicCapture {
    pub(crate) fn install() -> PanicCapture {
        let mut captures = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
        if captures.0 == 0 {
            captures.1 = Some(panic::take_hook());
            panic::set_hook(Box::new(|info| {
                let text = match info.payload().downcast_ref::<String>() {
                    Some(s) => s.clone(),
                    None => info
                        .payload()
                        .downcast_ref::<&str>()
                        .map_or_else(|| "panic".to_string(), |s| s.to_string()),
                };
                let at = info
                    .location()
                    .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                    .unwrap_or_default();
                PANIC.with(|p| *p.borrow_mut() = Some(format!("{text}{at}")));
            }));
        }
        captures.0 += 1;
        PanicCapture(())
    }
}

impl Drop for PanicCapture {
    fn drop(&mut self) {
        let mut captures = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
        captures.0 -= 1;
        if captures.0 == 0 {
            if let Some(previous) = captures.1.take() {
                panic::set_hook(previous);
            }
        }
    }
}

/// Run `f`; its panic's message (and place), if it panicked (under a [`PanicCapture`]).
pub(crate) fn caught(f: impl FnOnce()) -> Option<String> {
    panic::catch_unwind(AssertUnwindSafe(f)).err().map(|_| {
        PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "panic".to_string())
    })
}

/// Run the matrix for driver `D`: every combination and scenario whose name contains
/// every string of `filter` (all of them if it is empty). `progress` is called after each.
pub fn run<D: OurDriver>(filter: &[String], progress: impl FnMut(&Outcome) + Send) -> Vec<Outcome> {
    let make: Make = make_boxed::<D>;
    run_combos(
        D::name(),
        combos(D::own_transports()),
        make,
        make,
        filter,
        progress,
    )
}

/// Run the scenarios against libzmq over `transports` only (for example `ws://`, which
/// only a draft build of libzmq has), for driver `D`.
pub fn run_against_libzmq<D: OurDriver>(
    transports: &[Transport],
    filter: &[String],
    progress: impl FnMut(&Outcome) + Send,
) -> Vec<Outcome> {
    let make: Make = make_boxed::<D>;
    run_combos(
        D::name(),
        libzmq_combos(transports),
        make,
        make,
        filter,
        progress,
    )
}

/// Run the cross-driver matrix: driver `D` against driver `E`, each on either side and
/// binding or connecting, over the transports both offer between their own sockets (inproc
/// too: the name registry is process-wide). Reported under `D`'s name with `E` as the
/// opponent.
pub fn run_cross<D: OurDriver, E: OurDriver>(
    filter: &[String],
    progress: impl FnMut(&Outcome) + Send,
) -> Vec<Outcome> {
    let transports: Vec<Transport> = D::own_transports()
        .iter()
        .copied()
        .filter(|t| E::own_transports().contains(t))
        .filter(|&t| t != Transport::Inproc || D::inproc_names() == E::inproc_names())
        .collect();
    run_combos(
        D::name(),
        cross_combos(E::name(), &transports),
        make_boxed::<D>,
        make_boxed::<E>,
        filter,
        progress,
    )
}

/// Threads the matrix runs its combinations on: `ZMTP_MATRIX_THREADS`, or 4. A scenario
/// mostly waits (for the peer's I/O threads, for reconnects), so a run on one thread keeps
/// a quarter of one core busy; four share two cores without crowding the waits.
fn threads() -> usize {
    std::env::var("ZMTP_MATRIX_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4)
}

fn run_combos(
    driver: &'static str,
    combos: Vec<Combo>,
    make: Make,
    make_peer: Make,
    filter: &[String],
    progress: impl FnMut(&Outcome) + Send,
) -> Vec<Outcome> {
    let _quiet = PanicCapture::install();
    // Each thread takes the next combination; the outcomes are put back in the order of
    // the combinations (and of the scenarios within one), whatever thread ran them.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let progress = std::sync::Mutex::new(progress);
    let mut done: Vec<(usize, Vec<Outcome>)> = Vec::new();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads().min(combos.len()))
            .map(|_| {
                scope.spawn(|| {
                    let _quiet = PanicCapture::install();
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(combo) = combos.get(i) else {
                            return mine;
                        };
                        let outcomes = run_combo(driver, *combo, make, make_peer, filter, |o| {
                            (progress.lock().unwrap_or_else(|e| e.into_inner()))(o);
                        });
                        mine.push((i, outcomes));
                    }
                })
            })
            .collect();
        for worker in workers {
            // A worker's own panics are caught per scenario; a panic here is the matrix's.
            done.extend(worker.join().expect("a matrix worker thread panicked"));
        }
    });
    done.sort_by_key(|&(i, _)| i);
    done.into_iter().flat_map(|(_, o)| o).collect()
}

/// Every scenario of one combination that applies and passes `filter`.
fn run_combo(
    driver: &'static str,
    combo: Combo,
    make: Make,
    make_peer: Make,
    filter: &[String],
    mut progress: impl FnMut(&Outcome) + Send,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for scenario in Scenario::ALL {
        if !scenario.applies(&combo) {
            continue;
        }
        let name = format!("{} {} {}", driver, combo.name(), scenario.name());
        if !filter.iter().all(|f| name.contains(f.as_str())) {
            continue;
        }
        let start = Instant::now();
        let error = caught(|| {
            let ctx = Ctx::new();
            let mut net = Net::new(&ctx, make, make_peer);
            scenario.run(&mut net, &combo);
        });
        let outcome = Outcome {
            driver,
            combo,
            scenario,
            error,
            elapsed: start.elapsed(),
        };
        progress(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}

/// Print totals per driver and opponent (`libzmq`, `ours`: the same driver on both sides,
/// or another driver's name for cross-driver pairs), per scenario, and the failures.
/// Returns the number of failures.
pub fn print_summary(outcomes: &[Outcome], elapsed: Duration) -> usize {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    println!();
    println!("conformance matrix summary");
    println!(
        "{:<10} {:<10} {:>6} {:>7} {:>7}",
        "driver", "opponent", "run", "passed", "failed"
    );
    // Drivers and opponents in the order the runs met them.
    let mut drivers: Vec<&'static str> = Vec::new();
    let mut opponents: Vec<Kind> = Vec::new();
    for o in outcomes {
        if !drivers.contains(&o.driver) {
            drivers.push(o.driver);
        }
        if !opponents.contains(&o.combo.opponent()) {
            opponents.push(o.combo.opponent());
        }
    }
    for driver in &drivers {
        for &opponent in &opponents {
            let these: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.driver == *driver && o.combo.opponent() == opponent)
                .collect();
            if these.is_empty() {
                continue;
            }
            let bad = these.iter().filter(|o| o.error.is_some()).count();
            println!(
                "{:<10} {:<10} {:>6} {:>7} {:>7}",
                driver,
                opponent.name(),
                these.len(),
                these.len() - bad,
                bad
            );
        }
    }
    println!();
    println!(
        "{:<16} {:>6} {:>7} {:>7}",
        "scenario", "run", "passed", "failed"
    );
    for scenario in Scenario::ALL {
        let these: Vec<&Outcome> = outcomes.iter().filter(|o| o.scenario == scenario).collect();
        let bad = these.iter().filter(|o| o.error.is_some()).count();
        println!(
            "{:<16} {:>6} {:>7} {:>7}",
            scenario.name(),
            these.len(),
            these.len() - bad,
            bad
        );
    }
    if !failed.is_empty() {
        println!();
        println!("failures:");
        for o in &failed {
            println!("  {}: {}", o.name(), o.error.as_deref().unwrap_or_default());
        }
    }
    println!();
    println!(
        "total: {} scenarios run, {} passed, {} failed in {:.1} s",
        outcomes.len(),
        outcomes.len() - failed.len(),
        failed.len(),
        elapsed.as_secs_f64()
    );
    failed.len()
}
