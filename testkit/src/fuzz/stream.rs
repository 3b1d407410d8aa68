//! The STREAM body: one STREAM [`Socket`] of a [`Cluster`] whose raw streams all end at
//! the body, which opens and resets them, feeds them bytes, reads what the socket writes
//! to them, and plays the application: `[id][data]`, `[id][empty]`, unknown and closed
//! ids, ids alone and several pairs in one message.
//!
//! The body keeps a model of every connection (its routing id, the bytes fed to it, what
//! the application sent to it, whether it is routable) and of the connect endpoint (whose
//! peer, as libzmq's pipe, has its routing id from `connect` on and keeps it through
//! reconnections, data sent while it is down waiting for the next connection), and checks
//! the socket against them.

use std::collections::BTreeMap;

use core::time::Duration;

use zmtp_proto::socket::{Message, Options, PeerId, SendError, Socket};
use zmtp_proto::{Bytes, SocketType};

use super::input::{pick, Cursor};
use crate::cluster::{Cluster, Node, Remote};

const BIND_ADDR: &str = "tcp://127.0.0.1:5555";
const CONNECT_ADDR: &str = "tcp://127.0.0.1:6000";
/// The `connect_routing_id` a setup bit gives the first connect.
const NAMED: &[u8] = b"named";
/// An id no connection ever has (generated ids are 5 bytes starting with 0).
const UNKNOWN: &[u8] = b"\x01nobody";
/// RCVHWM and SNDHWM choices (0: no limit).
const HWMS: &[usize] = &[0, 1, 3, 1000];
/// Clock steps of the timeout action (`None`: to the socket's next deadline).
const STEPS: &[Option<Duration>] = &[
    None,
    Some(Duration::ZERO),
    Some(Duration::from_millis(10)),
    Some(Duration::from_secs(1)),
    Some(Duration::from_secs(31)),
];
/// At most this many actions per input.
const MAX_STEPS: usize = 256;

/// The actions (low 4 bits of an action byte).
pub(super) mod act {
    /// A client connects on the bound endpoint.
    pub const ACCEPT: u8 = 0;
    /// The held connect's connection opens.
    pub const CONNECTED: u8 = 1;
    /// The held connect fails.
    pub const CONNECT_FAILED: u8 = 2;
    /// Raw bytes (as many as the parameter) reach a connection.
    pub const RAW: u8 = 3;
    /// The body resets a connection.
    pub const RESET: u8 = 4;
    /// The application sends (the parameter picks the form and the data length).
    pub const SEND: u8 = 5;
    /// The application receives up to 1 + (high bits) messages.
    pub const RECV: u8 = 6;
    /// The body reads up to the parameter's bytes (0: all) the socket wrote.
    pub const WRITE: u8 = 7;
    /// The clock moves on and the socket's timers fire.
    pub const TIMEOUT: u8 = 8;
    /// Everything written is read, every stream's output drained.
    pub const SETTLE: u8 = 9;
}

/// What a [`stream()`] run reached (for the seed tests).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StreamOutcome {
    /// Connections opened.
    pub(super) opened: usize,
    /// Data chunks the application received.
    pub(super) chunks: usize,
    /// Notifications the application received.
    pub(super) notes: usize,
    /// Bytes the body read from the socket's streams.
    pub(super) written: usize,
}

/// The model of one connection.
struct Conn {
    remote: Remote,
    peer: PeerId,
    /// Its routing id, as the socket gave it when it came up.
    id: Vec<u8>,
    /// Bytes fed while it was routable (what the application may receive, in order).
    fed: Vec<u8>,
    /// Data the application received from it.
    received: Vec<u8>,
    /// Data the application sent to it (what the socket may write, in order).
    sent: Vec<u8>,
    /// What the socket wrote to it.
    written: Vec<u8>,
    ups: u32,
    downs: u32,
    /// The application closed it with `[id][empty]`.
    app_closed: bool,
    /// The body reset it.
    reset: bool,
}

/// Where a routing id leads in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// An accepted connection, or one of a connect endpoint with `immediate`.
    Conn(usize),
    /// The connect endpoint's peer (up or not).
    Endpoint,
}

/// The model of the connect endpoint's peer when it keeps its id (no `immediate`): one
/// routing id for all its connections.
struct Endpoint {
    peer: PeerId,
    id: Vec<u8>,
    /// Its connections, oldest first.
    conns: Vec<usize>,
    /// Which of `conns` the application receives from now (a connection's messages all
    /// come before the next one's).
    cursor: usize,
    /// Data sent while no connection was up: what the next one is written first.
    pending: Vec<u8>,
    /// The application closed it (`[id][empty]`): gone for good.
    closed: bool,
}

struct World {
    net: Cluster,
    node: Node,
    notify: bool,
    rcvhwm: usize,
    sndhwm: usize,
    conns: Vec<Conn>,
    /// Routing id -> connection, for every id ever given (but the endpoint's).
    by_id: BTreeMap<Vec<u8>, usize>,
    endpoint: Option<Endpoint>,
    /// The application sent an id without data: the next frame is dropped.
    discard_next: bool,
    stats: StreamOutcome,
}

impl World {
    fn sock(&mut self) -> &mut Socket {
        self.net.socket(self.node)
    }

    fn sock_ref(&self) -> &Socket {
        &self.net.member(self.node).socket
    }

    /// Whether connection `i` is up and the application may route to it.
    fn routable(&self, i: usize) -> bool {
        self.conns
            .get(i)
            .is_some_and(|c| !c.app_closed && !c.reset && self.net.remote_open(c.remote))
    }

    /// The endpoint's connection that is up, if any.
    fn endpoint_link(&self) -> Option<usize> {
        let e = self.endpoint.as_ref()?;
        e.conns.last().copied().filter(|&i| self.routable(i))
    }

    /// Whether connection `i` is one of the endpoint's.
    fn of_endpoint(&self, i: usize) -> bool {
        self.endpoint.as_ref().is_some_and(|e| e.conns.contains(&i))
    }

    /// The connection `sel` picks among those `keep` accepts.
    fn choose(&self, sel: u8, keep: impl Fn(&World, usize) -> bool) -> Option<usize> {
        let ids: Vec<usize> = (0..self.conns.len()).filter(|&i| keep(self, i)).collect();
        match ids.len() {
            0 => None,
            n => ids.get(usize::from(sel) % n).copied(),
        }
    }

    fn events(&mut self) {
        self.net.handle_events();
    }

    /// A connection opened: it has a fresh routing id and is attached.
    fn open(&mut self, remote: Remote) {
        let Some((_, peer)) = self.net.remote_peer(remote) else {
            return;
        };
        let stats = self.sock_ref().peer_stats(peer);
        let id = stats
            .as_ref()
            .map(|s| s.routing_id.to_vec())
            .unwrap_or_default();
        assert!(
            stats.is_some_and(|s| s.attached),
            "a new STREAM connection is attached at once"
        );
        assert!(!id.is_empty(), "a STREAM connection has a routing id");
        let i = self.conns.len();
        let mut sent = Vec::new();
        match self.endpoint.as_mut() {
            Some(e) if e.peer == peer => {
                assert_eq!(id, e.id, "the endpoint's connection keeps its id");
                assert!(!e.closed, "a connection of a closed endpoint");
                e.conns.push(i);
                sent = core::mem::take(&mut e.pending);
            }
            e => {
                assert!(
                    !self.by_id.contains_key(&id) && e.is_none_or(|e| e.id != id),
                    "routing id {id:?} given twice"
                );
                self.by_id.insert(id.clone(), i);
            }
        }
        self.conns.push(Conn {
            remote,
            peer,
            id,
            fed: Vec::new(),
            received: Vec::new(),
            sent,
            written: Vec::new(),
            ups: 0,
            downs: 0,
            app_closed: false,
            reset: false,
        });
        self.stats.opened += 1;
    }

    /// Bytes reach connection `i` (if the socket reads from it).
    fn raw(&mut self, i: usize, bytes: &[u8]) {
        let Some(c) = self.conns.get(i) else {
            return;
        };
        let remote = c.remote;
        if !self.net.remote_wants_read(remote) {
            return;
        }
        let routable = self.routable(i);
        if self.net.remote_send(remote, bytes) && routable {
            if let Some(c) = self.conns.get_mut(i) {
                c.fed.extend_from_slice(bytes);
            }
        }
    }

    fn reset(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        if !self.net.remote_open(c.remote) {
            return;
        }
        if !c.app_closed {
            c.reset = true;
        }
        let remote = c.remote;
        self.net.remote_reset(remote);
    }

    /// The body reads up to `max` bytes (0: all) the socket wrote to connection `i`: a
    /// prefix of what the application sent there.
    fn write(&mut self, i: usize, max: usize) {
        let Some(c) = self.conns.get(i) else {
            return;
        };
        let got = self.net.remote_receive(c.remote, max);
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        c.written.extend_from_slice(&got);
        self.stats.written += got.len();
        assert!(
            c.sent.starts_with(&c.written),
            "connection {i} was written {} bytes that are not what was sent to it ({} bytes)",
            c.written.len(),
            c.sent.len()
        );
    }

    /// The application receives one message; false if none was there.
    fn recv(&mut self) -> bool {
        let now = self.net.now();
        let Some(msg) = self.sock().recv(now) else {
            return false;
        };
        let frames: Vec<Bytes> = msg.into_frames().into_iter().collect();
        assert_eq!(frames.len(), 2, "a STREAM message is [id][data]");
        let (id, data) = (&frames[0], &frames[1]);
        let i = match self.endpoint.as_ref() {
            Some(e) if e.id == id[..] => self.endpoint_source(data),
            _ => match self.by_id.get(&id[..]) {
                Some(&i) => i,
                None => panic!("a message from routing id {id:?}, which no connection has"),
            },
        };
        let notify = self.notify;
        let Some(c) = self.conns.get_mut(i) else {
            return true;
        };
        if data.is_empty() {
            assert!(notify, "a notification with STREAM_NOTIFY off");
            self.stats.notes += 1;
            if c.ups == 0 {
                c.ups = 1;
            } else {
                assert_eq!(c.downs, 0, "connection {i} announced down twice");
                assert!(
                    c.reset,
                    "connection {i} announced down, but it was not closed"
                );
                assert!(
                    !c.app_closed,
                    "connection {i} closed by the application announced"
                );
                c.downs = 1;
            }
        } else {
            assert!(!notify || c.ups == 1, "data before the up notification");
            assert_eq!(c.downs, 0, "data after the down notification");
            c.received.extend_from_slice(data);
            self.stats.chunks += 1;
            assert!(
                c.fed.starts_with(&c.received),
                "connection {i}: {} bytes received are not the {} fed to it, in order",
                c.received.len(),
                c.fed.len()
            );
        }
        true
    }

    /// Which of the endpoint's connections a message under its id comes from: the one
    /// being received from, or (once that one is down and what came from it is taken)
    /// the next. With notifications the down one moves on; without, data that does not
    /// follow what came from the current connection is the next one's (no byte of a
    /// connection is lost unless RCVHWM holds input back, and then the endpoint is made
    /// with `immediate`: see [`stream()`]).
    fn endpoint_source(&mut self, data: &[u8]) -> usize {
        let notify = self.notify;
        let Some(e) = self.endpoint.as_ref() else {
            unreachable!("called for the endpoint's id");
        };
        let (conns, mut cursor) = (e.conns.clone(), e.cursor);
        let current = |k: usize| -> usize {
            match conns.get(k) {
                Some(&i) => i,
                None => panic!("a message under the endpoint's id with no connection"),
            }
        };
        loop {
            let i = current(cursor);
            let c = &self.conns[i];
            let follows = if data.is_empty() {
                // An up notification is the connection's first; a down one ends it.
                c.ups == 0 || c.downs == 0
            } else {
                let mut next = c.received.clone();
                next.extend_from_slice(data);
                (!notify || (c.ups == 1 && c.downs == 0)) && c.fed.starts_with(&next)
            };
            let over = c.downs == 1 || (!notify && !self.net.remote_open(c.remote));
            if follows || !over || cursor + 1 >= conns.len() {
                if let Some(e) = self.endpoint.as_mut() {
                    e.cursor = cursor;
                }
                return i;
            }
            cursor += 1;
        }
    }

    /// Room for one more message to connection `i`, `extra` messages after those queued.
    fn room(&self, i: usize, extra: usize) -> bool {
        let Some(c) = self.conns.get(i) else {
            return false;
        };
        self.room_of(c.peer, extra)
    }

    /// Room for one more message to `peer`, `extra` messages after those queued.
    fn room_of(&self, peer: PeerId, extra: usize) -> bool {
        let queued = self.sock_ref().peer_stats(peer).map_or(0, |s| s.queued_out);
        self.sndhwm == 0 || queued + extra < self.sndhwm
    }

    /// The application sends `frames`; the result and the effects are those of the model:
    /// frames go in `[id][data]` pairs (a frame after an id is its data); after an id
    /// without data the next frame sent is dropped; a first id that is unknown is
    /// `HostUnreachable` and one without room `WouldBlock`, both handing the message back
    /// with nothing done; a later such id drops the rest.
    fn send(&mut self, frames: Vec<Vec<u8>>) {
        let mut start = 0;
        if self.discard_next {
            start = 1;
        }
        // The model's outcome: per pair, (target, data); then the result.
        let mut effects: Vec<(Target, Vec<u8>)> = Vec::new();
        let mut discard_after = false;
        let mut expect = Ok(());
        let mut writes: BTreeMap<Target, usize> = BTreeMap::new();
        let mut closed: Vec<Target> = Vec::new();
        let mut k = start;
        while k < frames.len() {
            let (Some(id), Some(data)) = (frames.get(k), frames.get(k + 1)) else {
                discard_after = true;
                break;
            };
            let target = match &self.endpoint {
                Some(e) if e.id == *id => (!e.closed).then_some(Target::Endpoint),
                _ => self
                    .by_id
                    .get(id)
                    .copied()
                    .filter(|&i| self.routable(i))
                    .map(Target::Conn),
            }
            .filter(|t| !closed.contains(t));
            let Some(i) = target else {
                if k == 0 {
                    expect = Err("unreachable");
                }
                break;
            };
            let extra = writes.get(&i).copied().unwrap_or(0);
            let room = match (i, &self.endpoint) {
                (Target::Conn(c), _) => self.room(c, extra),
                (Target::Endpoint, Some(e)) => self.room_of(e.peer, extra),
                (Target::Endpoint, None) => false,
            };
            if !room {
                if k == 0 {
                    expect = Err("would block");
                }
                break;
            }
            if data.is_empty() {
                closed.push(i);
            } else {
                *writes.entry(i).or_default() += 1;
            }
            effects.push((i, data.clone()));
            k += 2;
        }
        let msg: Message = frames.iter().cloned().map(Bytes::from).collect();
        let now = self.net.now();
        let got = self.sock().send(msg, now);
        match (&got, expect) {
            (Ok(_), Ok(())) => {}
            (Err(SendError::HostUnreachable(_)), Err("unreachable")) => {}
            (Err(SendError::WouldBlock(_)), Err("would block")) => {}
            (got, expect) => panic!("send {frames:?}: got {got:?}, the model expects {expect:?}"),
        }
        if got.is_err() {
            // Handed back, nothing done: the discard state stands.
            return;
        }
        self.discard_next = discard_after;
        for (target, data) in effects {
            let link = match target {
                Target::Conn(i) => Some(i),
                Target::Endpoint => self.endpoint_link(),
            };
            if let (Target::Endpoint, Some(e)) = (target, self.endpoint.as_mut()) {
                if data.is_empty() {
                    // Closed for good; what waited for a connection is dropped with it.
                    e.closed = true;
                    e.pending.clear();
                } else if link.is_none() {
                    e.pending.extend_from_slice(&data);
                }
            }
            if let Some(c) = link.and_then(|i| self.conns.get_mut(i)) {
                if data.is_empty() {
                    c.app_closed = true;
                } else {
                    c.sent.extend_from_slice(&data);
                }
            }
        }
        for target in closed {
            let peer = match (target, &self.endpoint) {
                (Target::Conn(i), _) => self.conns.get(i).map(|c| c.peer),
                (Target::Endpoint, e) => e.as_ref().map(|e| e.peer),
            };
            let attached = peer
                .and_then(|p| self.sock_ref().peer_stats(p))
                .is_some_and(|s| s.attached);
            assert!(!attached, "{target:?} is still routable after its close");
        }
    }

    /// The application's send for parameter `p` (and data from the input).
    fn app_send(&mut self, c: &mut Cursor<'_>, sel: u8, p: u8) {
        let len = usize::from(p >> 3);
        let mut data = c.take(len).to_vec();
        if data.is_empty() {
            data.push(b'!');
        }
        let live = |w: &World, i: usize| w.routable(i);
        let dead = |w: &World, i: usize| !w.routable(i);
        let id_of = |w: &World, i: Option<usize>| {
            i.and_then(|i| w.conns.get(i))
                .map_or(UNKNOWN.to_vec(), |c| c.id.clone())
        };
        let a = id_of(self, self.choose(sel, live));
        let frames = match p & 7 {
            0 => vec![a, data],
            1 => vec![a, Vec::new()],
            2 => vec![UNKNOWN.to_vec(), data],
            3 => vec![id_of(self, self.choose(sel, dead)), data],
            4 => vec![a],
            5 => {
                let b = id_of(self, self.choose(sel.wrapping_add(1), live));
                let half = data.len() / 2;
                let second = data.split_off(half);
                vec![a, data, b, second]
            }
            6 => vec![a, data.clone(), data],
            _ => vec![a.clone(), data, a, Vec::new()],
        };
        self.send(frames);
    }

    /// Per connection: what the socket keeps is bounded, and what it says about
    /// routability agrees with the model.
    fn check(&self) {
        let sock = self.sock_ref();
        for (i, c) in self.conns.iter().enumerate() {
            let Some(st) = sock.peer_stats(c.peer) else {
                continue;
            };
            if self.rcvhwm > 0 && !self.of_endpoint(i) {
                assert!(
                    st.queued_in <= self.rcvhwm,
                    "{} in, RCVHWM {}",
                    st.queued_in,
                    self.rcvhwm
                );
            }
            if self.sndhwm > 0 {
                assert!(
                    st.queued_out <= self.sndhwm,
                    "{} out, SNDHWM {}",
                    st.queued_out,
                    self.sndhwm
                );
            }
            // A connect endpoint's peer outlives its connections: only the newest counts.
            let newest = self.conns.iter().rposition(|d| d.peer == c.peer) == Some(i);
            if newest && !self.of_endpoint(i) {
                assert_eq!(st.attached, self.routable(i), "connection {i}: routable?");
            }
        }
        if let Some(e) = &self.endpoint {
            if let Some(st) = sock.peer_stats(e.peer) {
                assert_eq!(st.attached, !e.closed, "the endpoint: routable?");
                // Data stops at RCVHWM; the notifications of its connections going and
                // coming are never dropped.
                let notes = 2 * e.conns.len();
                assert!(
                    self.rcvhwm == 0 || st.queued_in <= self.rcvhwm + notes,
                    "the endpoint: {} in, RCVHWM {} and {notes} notifications",
                    st.queued_in,
                    self.rcvhwm
                );
                if !e.closed {
                    assert_eq!(st.routing_id.to_vec(), e.id, "the endpoint's id");
                }
            } else {
                assert!(
                    e.closed,
                    "the endpoint's peer is gone, but it was not closed"
                );
            }
        }
        // Closed connections are forgotten: no more peers than open streams and the
        // connect endpoint's.
        let open = self
            .conns
            .iter()
            .filter(|c| self.net.remote_open(c.remote))
            .count();
        let peers = sock.peers().count();
        assert!(peers <= open + 1, "{peers} peers for {open} open streams");
    }

    /// At the end: everything left is received, and every connection was announced
    /// exactly as it went; with no receive limit, every byte fed arrived.
    fn finish(&mut self) {
        for _ in 0..100_000 {
            if !self.recv() {
                break;
            }
        }
        for (i, c) in self.conns.iter().enumerate() {
            if self.notify {
                assert_eq!(c.ups, 1, "connection {i}: up notifications");
                let down = u32::from(c.reset && !c.app_closed);
                assert_eq!(c.downs, down, "connection {i}: down notifications");
            }
            if self.rcvhwm == 0 && !c.app_closed {
                assert_eq!(
                    c.received.len(),
                    c.fed.len(),
                    "connection {i}: bytes received"
                );
            }
        }
    }
}

/// A STREAM [`Socket`] driven by a sequence of actions, checked against a model.
///
/// Input: byte 0 the options (bit 0: `stream_notify` off; bits 1-2: RCVHWM 0, 1, 3 or
/// 1000; bits 3-4: SNDHWM likewise; bit 5: a connect endpoint besides the bound one;
/// bit 6: that connect has a `connect_routing_id`; bit 7: linger 0). Then actions, two
/// bytes each (the low 4 bits of the first pick the action in `act`, the high 4 bits a
/// connection or a count; the second is a parameter), a `RAW` or `SEND` action followed by
/// its bytes.
///
/// Checks: no panic; every message is `[id][data]` with an id some connection was given;
/// each connection is announced up once and down once at most (only when the body reset
/// it, never when the application closed it); data arrives only from a connection that
/// is up, is what was fed to it in order, and (without RCVHWM) all of it; what the socket
/// writes to a connection is what the application sent to it, in order; sends succeed,
/// fail with `HostUnreachable` or `WouldBlock` exactly as the model says; queues stay
/// within their HWMs and closed connections are forgotten.
pub fn stream(data: &[u8]) {
    run_stream(data);
}

pub(super) fn run_stream(data: &[u8]) -> StreamOutcome {
    let mut c = Cursor::new(data);
    let b0 = c.byte();
    let mut opts = Options::default();
    opts.stream_notify = b0 & 1 == 0;
    opts.rcvhwm = pick(HWMS, usize::from(b0 >> 1 & 3), 0);
    opts.sndhwm = pick(HWMS, usize::from(b0 >> 3 & 3), 0);
    if b0 & 0x40 != 0 {
        opts.connect_routing_id = Some(Bytes::from_static(NAMED));
    }
    if b0 & 0x80 != 0 {
        opts.linger = Some(Duration::ZERO);
    }
    // Without notifications, and with RCVHWM holding input back (which a reset then
    // loses), the data of a connection and of the next under the same id could not be
    // told apart: the endpoint gets a new id per connection there (`immediate`).
    opts.immediate = !opts.stream_notify && opts.rcvhwm > 0;
    opts.reconnect_ivl = Some(Duration::from_millis(10));
    let (notify, rcvhwm, sndhwm) = (opts.stream_notify, opts.rcvhwm, opts.sndhwm);
    let Ok(sock) = Socket::new(SocketType::Stream, opts, 7) else {
        return StreamOutcome::default();
    };
    let mut net = Cluster::new(0);
    net.hold_connects_to(CONNECT_ADDR);
    let node = net.insert(sock);
    let mut w = World {
        net,
        node,
        notify,
        rcvhwm,
        sndhwm,
        conns: Vec::new(),
        by_id: BTreeMap::new(),
        endpoint: None,
        discard_next: false,
        stats: StreamOutcome::default(),
    };
    assert!(w.sock().bind(BIND_ADDR).is_ok(), "bind");
    if b0 & 0x20 != 0 {
        assert!(w.sock().connect(CONNECT_ADDR).is_ok(), "connect");
        if !w.sock_ref().options().immediate {
            // Named and routable at once, as libzmq's pipe.
            let peer = w.sock_ref().peers().next().expect("the connect peer");
            let id = match b0 & 0x40 {
                0 => w.sock_ref().options().routing_id.to_vec(),
                _ => NAMED.to_vec(),
            };
            let stats = w.sock_ref().peer_stats(peer).expect("the connect peer");
            assert!(stats.attached, "a connect peer is routable at once");
            assert_eq!(stats.routing_id.to_vec(), id, "the connect peer's id");
            w.endpoint = Some(Endpoint {
                peer,
                id,
                conns: Vec::new(),
                cursor: 0,
                pending: Vec::new(),
                closed: false,
            });
        }
    }
    w.events();

    let mut steps = 0;
    while !c.is_empty() && steps < MAX_STEPS {
        steps += 1;
        let action = c.byte();
        let p = c.byte();
        let sel = action >> 4;
        match action & 15 {
            act::ACCEPT => {
                if let Some(remote) = w.net.accept_remote(BIND_ADDR) {
                    w.open(remote);
                }
            }
            act::CONNECTED => {
                if let Some(ep) = w.net.take_held_connect(w.node) {
                    if let Some(remote) = w.net.connect_remote(w.node, ep) {
                        w.open(remote);
                    }
                }
            }
            act::CONNECT_FAILED => {
                if let Some(ep) = w.net.take_held_connect(w.node) {
                    w.net.refuse_connect(w.node, ep);
                }
            }
            act::RAW => {
                let bytes = c.take(usize::from(p));
                if let Some(i) = w.choose(sel, |w, i| w.net.remote_open(w.conns[i].remote)) {
                    w.raw(i, bytes);
                }
            }
            act::RESET => {
                if let Some(i) = w.choose(sel, |w, i| w.net.remote_open(w.conns[i].remote)) {
                    w.reset(i);
                }
            }
            act::SEND => w.app_send(&mut c, sel, p),
            act::RECV => {
                for _ in 0..=sel {
                    if !w.recv() {
                        break;
                    }
                }
            }
            act::WRITE => {
                if let Some(i) = w.choose(sel, |w, i| w.net.remote_open(w.conns[i].remote)) {
                    w.write(i, usize::from(p));
                }
            }
            act::TIMEOUT => {
                let now = w.net.now();
                let target = match pick(STEPS, usize::from(p), None) {
                    Some(d) => Some(now + d),
                    None => w.sock().poll_timeout(),
                };
                w.net.set_now(target.unwrap_or(now));
                w.net.fire(w.node);
            }
            act::SETTLE => {
                for i in 0..w.conns.len() {
                    for _ in 0..64 {
                        let before = w.stats.written;
                        w.write(i, 0);
                        w.events();
                        if w.stats.written == before {
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
        w.events();
        w.check();
    }
    w.finish();
    w.stats
}
