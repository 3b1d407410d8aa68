//! The socket body: one [`Socket`] of a [`Cluster`] whose streams all end at the body,
//! which scripts its peers, feeds raw bytes and reads what the socket writes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use core::time::Duration;

use zmtp_proto::codec::{
    emit_property, Command, FrameHeader, Greeting, Mechanism, Metadata, Version, GREETING_LEN,
};
use zmtp_proto::socket::{
    AuthReply, EndpointError, GroupError, Message, MetadataError, Options, PeerId, SendError,
    Socket, GROUP_MAX_LEN,
};
use zmtp_proto::{Bytes, Config, Connection, Error, OwnedItem, SocketType};

use super::input::{contains, pick, Cursor};
use super::material::{LOCAL_ENTROPY, SOCKET_TYPES};
use crate::cluster::{Cluster, Node, Remote};
use crate::pair::raw::pump;

/// Starts every frame of a message a scripted peer sends: `MAGIC, uid (u32), seq (u32),
/// index (u8), count (u8)`, then the payload. Raw byte streams are kept free of it, so a
/// received frame that holds it came from a scripted message.
pub(super) const MAGIC: [u8; 8] = [0xF5, 0x7A, 0x6D, 0x74, 0x70, 0x46, 0x5A, 0xE3];
/// Starts every frame of a message the application sends: `APP_MAGIC, seq (u32), index
/// (u8), count (u8)`, then the payload.
const APP_MAGIC: [u8; 8] = [0xA9, 0x61, 0x70, 0x70, 0x4D, 0x73, 0x67, 0xC1];
const TAG_LEN: usize = 8 + 4 + 4 + 2;
const APP_TAG_LEN: usize = 8 + 4 + 2;
/// Topics for subscriptions (SUB and XSUB sockets, and scripted subscribers); all shorter
/// than [`MAGIC`], so that no notice an XPUB receives holds it.
const TOPICS: &[&[u8]] = &[b"", &[0xF5], &[0xF5, 0x7A, 0x6D, 0x74], b"x", &[0xA9]];
const BIND_ADDR: &str = "tcp://127.0.0.1:5555";
const CONNECT_ADDR: &str = "tcp://127.0.0.1:6000";
/// Payload lengths of scripted and application frames.
const PAYLOADS: &[usize] = &[0, 1, 7, 40, 300];

/// A group for JOIN, LEAVE and group messages, by `sel`: short ones, one of the longest
/// allowed (255 bytes) and over-long ones. None holds [`MAGIC`] or [`APP_MAGIC`].
fn group(sel: u8) -> Vec<u8> {
    match sel % 7 {
        0 => Vec::new(),
        1 => b"g1".to_vec(),
        2 => b"g2".to_vec(),
        3 => b"g".to_vec(),
        4 => vec![b'g'; GROUP_MAX_LEN],
        5 => vec![b'g'; GROUP_MAX_LEN + 1],
        _ => vec![b'h'; 1000],
    }
}

/// Where an application message of SERVER or PEER is addressed.
enum To {
    /// A peer the pattern routes to, by its id (a single frame).
    Attached,
    /// A peer, or (RADIO) a group.
    Peer,
    /// An unknown id, or none.
    Nobody,
}

/// The draft types (single-frame messages only).
fn is_draft(ty: SocketType) -> bool {
    use SocketType::*;
    matches!(
        ty,
        Server | Client | Radio | Dish | Gather | Scatter | Peer | Channel
    )
}

/// SERVER and PEER: messages carry the routing id of their peer.
fn numbers_peers(ty: SocketType) -> bool {
    matches!(ty, SocketType::Server | SocketType::Peer)
}

/// The peer types a scripted peer of a `ty` socket takes.
fn scripted_peer_types(ty: SocketType) -> &'static [SocketType] {
    use SocketType::*;
    match ty {
        Pub | XPub => &[Sub, XSub],
        Sub | XSub => &[Pub, XPub],
        Push => &[Pull],
        Pull => &[Push],
        Req => &[Rep, Router],
        Rep => &[Req, Dealer],
        Dealer => &[Rep, Dealer, Router],
        Router => &[Req, Dealer, Router],
        Server => &[Client],
        Client => &[Server],
        Radio => &[Dish],
        Dish => &[Radio],
        Gather => &[Scatter],
        Scatter => &[Gather],
        Peer => &[Peer],
        Channel => &[Channel],
        _ => &[Pair],
    }
}

/// One stream into the socket, as a scripted peer or a source of raw bytes.
struct Script {
    /// The stream, in the cluster.
    remote: Remote,
    peer: PeerId,
    uid: u32,
    /// Raw bytes were fed: nothing scripted may follow (it could be swallowed by a frame
    /// the raw bytes began).
    tainted: bool,
    /// Raw bytes came first, before any greeting: the socket may take the stream for a
    /// ZMTP 1.0 or 2.0 peer's and answer in that protocol, which the (3.x) observer does
    /// not read. The `legacy` target checks that output instead.
    unobserved: bool,
    version: Version,
    peer_type: SocketType,
    /// Everything scripted so far, and how much of it was fed.
    bytes: Vec<u8>,
    fed: usize,
    /// Ends of the units (greeting with READY, each message) in `bytes`: raw bytes are
    /// only ever fed at a unit boundary.
    unit_ends: VecDeque<usize>,
    /// The last bytes fed, to keep [`MAGIC`] out of raw bytes across chunks.
    tail: Vec<u8>,
    next_seq: u32,
    /// Reads what the socket sends on this stream (a NULL connection of `peer_type`).
    observer: Connection,
    observer_rx: Vec<u8>,
    observer_partial: Vec<Bytes>,
    /// Application messages this stream delivered (each at most once).
    app_seen: BTreeSet<u32>,
    /// Groups the scripted peer joined (at any time): a RADIO sends it no others.
    joined: BTreeSet<Vec<u8>>,
}

impl Script {
    /// Bytes up to the next unit boundary (0 at a boundary, and before anything was fed).
    fn to_boundary(&self) -> usize {
        if self.fed == 0 {
            return 0;
        }
        self.unit_ends
            .iter()
            .find(|&&end| end > self.fed)
            .map_or(0, |end| end - self.fed)
    }

    fn push_unit(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.unit_ends.push_back(self.bytes.len());
    }

    /// Remember the last bytes fed, for the MAGIC filter.
    fn remember(&mut self, fed: &[u8]) {
        self.tail.extend_from_slice(fed);
        let keep = MAGIC.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        while self.unit_ends.front().is_some_and(|&end| end <= self.fed) {
            self.unit_ends.pop_front();
        }
    }
}

/// The socket under test and everything the harness knows.
struct World {
    /// The cluster holding the socket: it acts on the socket's events (listening on
    /// [`BIND_ADDR`], holding connects to [`CONNECT_ADDR`], keeping authentication
    /// requests) and carries the streams, which all end here.
    net: Cluster,
    node: Node,
    ty: SocketType,
    streams: Vec<Script>,
    next_uid: u32,
    /// Scripted messages by (uid, seq): the frames `recv` must give for them.
    sent: BTreeMap<(u32, u32), Vec<Bytes>>,
    received: BTreeSet<(u32, u32)>,
    /// Application messages by seq: their tagged frames.
    app_sent: BTreeMap<u32, Vec<Bytes>>,
    next_app_seq: u32,
    /// SERVER, PEER: the peer each application message was addressed to.
    app_dest: BTreeMap<u32, PeerId>,
    /// DISH: the group of each scripted message (by (uid, seq)).
    groups_sent: BTreeMap<(u32, u32), Bytes>,
    /// DISH: the groups joined now, and every group ever joined.
    joined: BTreeSet<Vec<u8>>,
    ever_joined: BTreeSet<Vec<u8>>,
    /// SERVER, PEER: the routing id of each scripted stream's messages (by uid).
    routes: BTreeMap<u32, u32>,
    /// Bounds of `peer_stats` (0: none).
    max_in: usize,
    max_out: usize,
    stats: SocketOutcome,
}

/// What a [`socket()`] run reached (for the seed tests).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SocketOutcome {
    pub(super) received: usize,
    pub(super) sent: usize,
    pub(super) app_delivered: usize,
}

impl World {
    fn sock(&mut self) -> &mut Socket {
        self.net.socket(self.node)
    }

    fn sock_ref(&self) -> &Socket {
        &self.net.member(self.node).socket
    }

    /// Whether stream `i` is open (neither the socket nor the body closed it).
    fn is_alive(&self, i: usize) -> bool {
        self.streams
            .get(i)
            .is_some_and(|s| self.net.remote_open(s.remote))
    }

    fn alive(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&i| self.is_alive(i))
            .collect()
    }

    /// An alive stream chosen by `sel`.
    fn choose(&self, sel: u8) -> Option<usize> {
        let alive = self.alive();
        (!alive.is_empty()).then(|| pick(&alive, usize::from(sel), 0))
    }

    /// Act on every event of the socket (the cluster does).
    fn events(&mut self) {
        self.net.handle_events();
    }

    /// The queue bounds hold for every peer.
    fn check_bounds(&self) {
        let sock = self.sock_ref();
        for peer in sock.peers() {
            let Some(st) = sock.peer_stats(peer) else {
                continue;
            };
            if self.max_in > 0 {
                assert!(
                    st.queued_in <= self.max_in,
                    "{:?}: {} messages queued in, RCVHWM {}",
                    self.ty,
                    st.queued_in,
                    self.max_in
                );
            }
            if self.max_out > 0 {
                assert!(
                    st.queued_out <= self.max_out,
                    "{:?}: {} messages queued out, SNDHWM {}",
                    self.ty,
                    st.queued_out,
                    self.max_out
                );
            }
        }
    }

    /// A new stream: accepted on the bound endpoint, or the connect endpoint's.
    fn open(&mut self, remote: Remote, spec: u8) {
        let Some((_, peer)) = self.net.remote_peer(remote) else {
            return;
        };
        let types = scripted_peer_types(self.ty);
        let peer_type = if spec & 0x08 != 0 {
            // Incompatible: refused when its READY arrives.
            if self.ty.is_compatible(SocketType::Gather) {
                SocketType::Pair
            } else {
                SocketType::Gather
            }
        } else {
            pick(types, usize::from(spec & 3), SocketType::Pair)
        };
        let version = if spec & 0x04 != 0 {
            Version::V3_0
        } else {
            Version::V3_1
        };
        let uid = self.next_uid;
        self.next_uid += 1;
        let mut identity = Vec::new();
        if spec & 0x10 != 0 && peer_type.sends_identity() {
            // Short (no MAGIC), and colliding across streams now and then.
            identity = vec![b'p', spec >> 5];
        }
        let mut cfg = Config::new(peer_type);
        cfg.version = version;
        cfg.handshake_timeout = None;
        // At most 255 bytes: cannot fail.
        let _ = cfg.set_identity(&identity);
        let mut script = Script {
            remote,
            peer,
            uid,
            tainted: false,
            unobserved: false,
            version,
            peer_type,
            bytes: Vec::new(),
            fed: 0,
            unit_ends: VecDeque::new(),
            tail: Vec::new(),
            next_seq: 0,
            observer: Connection::new(cfg, self.net.now()),
            observer_rx: Vec::new(),
            observer_partial: Vec::new(),
            app_seen: BTreeSet::new(),
            joined: BTreeSet::new(),
        };
        // Greeting (libzmq's padding now and then) and READY.
        let mut unit = vec![0u8; GREETING_LEN];
        let g = Greeting {
            version,
            mechanism: Mechanism::NULL,
            as_server: false,
        };
        if g.emit(&mut unit).is_err() {
            return;
        }
        if spec & 0x20 != 0 {
            if let Some(b) = unit.get_mut(8) {
                *b = 1;
            }
        }
        let mut meta = vec![0u8; 512];
        let mut len = emit_property(b"Socket-Type", peer_type.name().as_bytes(), &mut meta)
            .unwrap_or_default();
        if peer_type.sends_identity() {
            len += emit_property(
                b"Identity",
                &identity,
                meta.get_mut(len..).unwrap_or_default(),
            )
            .unwrap_or_default();
        }
        meta.truncate(len);
        if let Ok(m) = Metadata::parse(&meta) {
            let cmd = Command::Ready(m);
            let mut frame = vec![0u8; cmd.frame_len()];
            if cmd.emit_frame(&mut frame).is_ok() {
                unit.extend_from_slice(&frame);
            }
        }
        script.push_unit(&unit);
        self.streams.push(script);
    }

    /// A scripted message from stream `i`: `spec` bits 0-1 the frame count (1-3), bits 2-4
    /// the payload size, bit 5 a hop before the delimiter (REP sockets); to a DISH, bits
    /// 5-7 pick the group frame that comes first (see [`group`]). Draft types drop the
    /// messages of several frames, a DISH fails the stream of any not `[group, body]`.
    fn script_message(&mut self, i: usize, spec: u8) {
        let ty = self.ty;
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.tainted {
            return;
        }
        let count = (spec & 3) % 3 + 1;
        let payload = pick(PAYLOADS, usize::from(spec >> 2 & 7), 0);
        let seq = s.next_seq;
        s.next_seq += 1;
        let mut tagged = Vec::new();
        for index in 0..count {
            let mut f = Vec::with_capacity(TAG_LEN + payload);
            f.extend_from_slice(&MAGIC);
            f.extend_from_slice(&s.uid.to_be_bytes());
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&[index, count]);
            f.resize(TAG_LEN + payload, seq as u8 ^ index);
            tagged.push(Bytes::from(f));
        }
        // The envelope the socket type strips.
        let mut frames: Vec<Bytes> = Vec::new();
        if ty == SocketType::Rep && spec & 0x20 != 0 {
            frames.push(Bytes::from_static(b"hop"));
        }
        if matches!(ty, SocketType::Req | SocketType::Rep) {
            frames.push(Bytes::new());
        }
        if ty == SocketType::Dish {
            let g = Bytes::from(group(spec >> 5));
            frames.push(g.clone());
            self.groups_sent.insert((s.uid, seq), g);
        }
        frames.extend(tagged.iter().cloned());
        let mut unit = Vec::new();
        let n = frames.len();
        for (k, f) in frames.iter().enumerate() {
            let header = FrameHeader::data(f.len(), k + 1 < n);
            let mut h = [0u8; 9];
            let Ok(hl) = header.emit(&mut h) else {
                return;
            };
            unit.extend_from_slice(h.get(..hl).unwrap_or_default());
            unit.extend_from_slice(f);
        }
        s.push_unit(&unit);
        self.sent.insert((s.uid, seq), tagged);
        self.stats.sent += 1;
    }

    /// A subscription from a scripted subscriber (to PUB and XPUB sockets); JOIN or LEAVE
    /// (bit 0) of a group (bits 1-3, see [`group`]) from a scripted DISH, or from any
    /// scripted peer with bit 7.
    fn script_subscription(&mut self, i: usize, spec: u8) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.tainted {
            return;
        }
        if s.peer_type == SocketType::Dish || spec & 0x80 != 0 {
            // JOIN and LEAVE (as commands to 3.0 peers too, as libzmq's DISH sends them),
            // from a DISH to its RADIO or from any peer to a socket that takes none.
            let g = group(spec >> 1);
            let cmd = if spec & 1 == 0 {
                s.joined.insert(g.clone());
                Command::Join(&g)
            } else {
                Command::Leave(&g)
            };
            let mut unit = vec![0u8; cmd.frame_len()];
            if cmd.emit_frame(&mut unit).is_ok() {
                s.push_unit(&unit);
            }
            return;
        }
        let topic = pick(TOPICS, usize::from(spec >> 1), b"");
        let subscribe = spec & 1 == 0;
        let mut unit = vec![0u8; 64];
        let n = if s.version.is_v31() {
            let cmd = if subscribe {
                Command::Subscribe(topic)
            } else {
                Command::Cancel(topic)
            };
            cmd.emit_frame(&mut unit).unwrap_or_default()
        } else {
            let mut body = vec![u8::from(subscribe)];
            body.extend_from_slice(topic);
            let Ok(hl) = FrameHeader::data(body.len(), false).emit(&mut unit) else {
                return;
            };
            unit.truncate(hl);
            unit.extend_from_slice(&body);
            unit.len()
        };
        unit.truncate(n);
        s.push_unit(&unit);
    }

    /// Feed up to `n` scripted bytes of stream `i` (all with `n == 0`), if the socket reads.
    fn flush(&mut self, i: usize, n: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !self.net.remote_wants_read(s.remote) {
            return;
        }
        let left = s.bytes.len().saturating_sub(s.fed);
        let n = if n == 0 { left } else { n.min(left) };
        let chunk = s
            .bytes
            .get(s.fed..s.fed + n)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        s.fed += chunk.len();
        s.remember(&chunk);
        self.net.remote_send(s.remote, &chunk);
    }

    /// Feed raw bytes to stream `i` at a unit boundary, with [`MAGIC`] filtered out.
    fn raw(&mut self, i: usize, bytes: &[u8]) {
        let Some(s) = self.streams.get(i) else {
            return;
        };
        if !self.net.remote_wants_read(s.remote) {
            return;
        }
        let rest = s.to_boundary();
        if rest > 0 {
            self.flush(i, rest);
        }
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !self.net.remote_open(s.remote) || s.to_boundary() > 0 {
            return;
        }
        // Nothing scripted follows: drop what was not fed.
        s.tainted = true;
        s.unobserved |= s.fed == 0;
        s.bytes.truncate(s.fed);
        s.unit_ends.clear();
        let mut chunk = bytes.to_vec();
        // Break every MAGIC in (last bytes fed ++ chunk) by zeroing its last byte, which
        // lies in the chunk (the tail is shorter than MAGIC). Zero is not in MAGIC, so no
        // new one appears.
        let tail_len = s.tail.len();
        for _ in 0..=chunk.len() {
            let mut joined = s.tail.clone();
            joined.extend_from_slice(&chunk);
            let Some(at) = joined.windows(MAGIC.len()).position(|w| w == MAGIC) else {
                break;
            };
            if let Some(b) = chunk.get_mut(at + MAGIC.len() - 1 - tail_len) {
                *b = 0;
            }
        }
        s.bytes.extend_from_slice(&chunk);
        s.fed = s.bytes.len();
        s.remember(&chunk);
        self.net.remote_send(s.remote, &chunk);
    }

    /// Write up to `n` bytes the socket has for stream `i` (all with `n == 0`), into its
    /// observer.
    fn write(&mut self, i: usize, n: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !self.net.remote_open(s.remote) {
            return;
        }
        let written = self.net.remote_receive(s.remote, n);
        s.observer_rx.extend_from_slice(&written);
        self.observe(i);
    }

    /// The observer of stream `i` reads what the socket wrote: valid ZMTP, and every
    /// application message in it whole and once.
    fn observe(&mut self, i: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.observer.error().is_some() || s.unobserved {
            return;
        }
        let mut items = Vec::new();
        let r = pump(
            &mut s.observer,
            self.net.now(),
            &mut s.observer_rx,
            &mut |item| items.push(item),
        );
        if let Err(e) = r {
            assert!(
                matches!(
                    e,
                    Error::IncompatibleSocketType { .. } | Error::PeerError(_)
                ),
                "{:?} socket sent invalid ZMTP to a {:?} peer: {e:?}",
                self.ty,
                s.peer_type
            );
        }
        for item in items {
            let OwnedItem::Frame { body, more } = item else {
                continue;
            };
            s.observer_partial.push(body);
            if more {
                continue;
            }
            let msg = core::mem::take(&mut s.observer_partial);
            let Some(first) = msg.iter().position(|f| f.starts_with(&APP_MAGIC)) else {
                for f in &msg {
                    assert!(
                        !contains(f, &APP_MAGIC),
                        "application frame spliced: {msg:?}"
                    );
                }
                continue;
            };
            let envelope = msg.get(..first).unwrap_or_default();
            for f in envelope {
                assert!(
                    !contains(f, &APP_MAGIC),
                    "application frame in the envelope"
                );
            }
            let tagged = msg.get(first..).unwrap_or_default();
            let seq = tagged
                .first()
                .and_then(|f| f.get(8..12))
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes);
            let expected = seq.and_then(|seq| self.app_sent.get(&seq));
            assert!(
                expected.is_some_and(|e| e.as_slice() == tagged),
                "{:?} socket sent an altered or partial message: {msg:?}",
                self.ty
            );
            // A draft type puts nothing but the body on the wire, after RADIO's group; and
            // a RADIO sends only the groups the peer joined.
            match self.ty {
                SocketType::Radio => assert!(
                    matches!(envelope, [g] if s.joined.contains(&g[..])),
                    "RADIO sent {msg:?} to a peer that joined {:?}",
                    s.joined
                ),
                ty if is_draft(ty) => {
                    assert!(envelope.is_empty(), "{ty:?} sent an envelope: {msg:?}")
                }
                _ => {}
            }
            // SERVER and PEER send to the peer the routing id named.
            if let Some(dest) = seq.and_then(|seq| self.app_dest.get(&seq)) {
                assert!(
                    *dest == s.peer,
                    "{:?}: message {seq:?} for {dest:?} went to {:?}",
                    self.ty,
                    s.peer
                );
            }
            if let Some(seq) = seq {
                assert!(
                    s.app_seen.insert(seq),
                    "application message {seq} sent twice"
                );
            }
            self.stats.app_delivered += 1;
        }
    }

    /// A message `recv` gave: whole, genuine, and given once.
    fn check_received(&mut self, msg: &Message) {
        let frames = msg.frames();
        // Draft types: one frame, with the metadata of the type and no other. A DISH gives
        // only the groups it joined; SERVER and PEER name the peer, never with 0.
        if is_draft(self.ty) {
            assert_eq!(frames.len(), 1, "{:?} gave {frames:?}", self.ty);
        }
        match msg.group() {
            Some(g) if self.ty == SocketType::Dish => assert!(
                self.ever_joined.contains(g),
                "DISH gave a message of group {g:?}, never joined"
            ),
            None if self.ty != SocketType::Dish => {}
            g => panic!("{:?} gave a message of group {g:?}", self.ty),
        }
        let routing_id = msg.routing_id();
        assert_eq!(
            routing_id.is_some(),
            numbers_peers(self.ty),
            "{:?} gave routing id {routing_id:?}",
            self.ty
        );
        assert_ne!(routing_id, Some(0), "routing id 0");
        let body = if self.ty == SocketType::Router {
            assert!(
                frames.len() >= 2,
                "ROUTER gave a message without routing id"
            );
            frames.get(1..).unwrap_or_default()
        } else {
            frames
        };
        let Some(first) = body.first() else {
            return;
        };
        if !first.starts_with(&MAGIC) {
            for f in frames {
                assert!(
                    !contains(f, &MAGIC),
                    "scripted frame in a foreign message: {frames:?}"
                );
            }
            return;
        }
        let id = (|| {
            let uid = <[u8; 4]>::try_from(first.get(8..12)?).ok()?;
            let seq = <[u8; 4]>::try_from(first.get(12..16)?).ok()?;
            Some((u32::from_be_bytes(uid), u32::from_be_bytes(seq)))
        })();
        let expected = id.and_then(|id| self.sent.get(&id));
        assert!(
            expected.is_some_and(|e| e.as_slice() == body),
            "{:?} socket received an altered or partial message: {frames:?}",
            self.ty
        );
        if let Some(id) = id {
            assert!(self.received.insert(id), "message {id:?} received twice");
            let group = self.groups_sent.get(&id).map(|g| &g[..]);
            assert!(
                msg.group() == group,
                "message {id:?} sent with group {group:?}, received with {:?}",
                msg.group()
            );
            // One routing id per stream.
            if let Some(rid) = routing_id {
                let first = *self.routes.entry(id.0).or_insert(rid);
                assert_eq!(first, rid, "stream {} has two routing ids", id.0);
            }
        }
        self.stats.received += 1;
    }

    /// An application message: `spec` bits 0-1 the frame count, bits 2-4 the payload size,
    /// bit 5 a single frame sent with `send_slice`; `route` the routing id for ROUTER (an
    /// existing peer's, or unknown).
    fn send(&mut self, spec: u8, route: u8) {
        let count = (spec & 3) % 3 + 1;
        let payload = pick(PAYLOADS, usize::from(spec >> 2 & 7), 0);
        let seq = self.next_app_seq;
        self.next_app_seq += 1;
        let mut tagged = Vec::new();
        for index in 0..count {
            let mut f = Vec::with_capacity(APP_TAG_LEN + payload);
            f.extend_from_slice(&APP_MAGIC);
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&[index, count]);
            f.resize(APP_TAG_LEN + payload, index);
            tagged.push(Bytes::from(f));
        }
        self.app_sent.insert(seq, tagged.clone());
        let mut frames = Vec::new();
        if self.ty == SocketType::Router {
            let sock = self.sock_ref();
            let ids: Vec<Bytes> = sock
                .peers()
                .filter_map(|p| sock.peer_stats(p))
                .map(|st| st.routing_id)
                .collect();
            let id = match ids.len() {
                0 => Bytes::from_static(b"\x00nobody"),
                n if usize::from(route) % (n + 1) == n => Bytes::from_static(b"\x00nobody"),
                n => ids.get(usize::from(route) % n).cloned().unwrap_or_default(),
            };
            frames.push(id);
        }
        frames.extend(tagged);
        let single = frames.len() == 1;
        let could = self.sock().can_send();
        let r = if numbers_peers(self.ty) || self.ty == SocketType::Radio {
            let mut msg = Message::from(frames);
            let to = self.address(&mut msg, seq, route);
            let r = self.net.send(self.node, msg);
            let unreachable = matches!(
                r,
                Err(SendError::HostUnreachable(_) | SendError::RoutingIdRequired(_))
            );
            let closing = matches!(r, Err(SendError::Closed(_)));
            match to {
                To::Nobody if single && !closing => {
                    assert!(unreachable, "{:?} took a message to nobody: {r:?}", self.ty)
                }
                To::Attached => assert!(
                    !unreachable,
                    "{:?}: the id of a routable peer is unknown",
                    self.ty
                ),
                _ => {}
            }
            r
        } else {
            match frames.as_slice() {
                [only] if spec & 0x20 != 0 => self.net.send_slice(self.node, only),
                _ => self.net.send(self.node, Message::from(frames)),
            }
        };
        assert!(
            could || r.is_err(),
            "{:?}: can_send was false but send took it",
            self.ty
        );
        if is_draft(self.ty) && !single {
            assert!(
                matches!(
                    r,
                    Err(SendError::SingleFrameOnly(_)
                        | SendError::NotSupported(_)
                        | SendError::Closed(_))
                ),
                "{:?} took a multipart message: {r:?}",
                self.ty
            );
        }
    }

    /// SERVER and PEER: give `msg` (application message `seq`) the routing id `route`
    /// picks: a peer's, an unknown one, or none after 0 is refused. RADIO: the group
    /// `route` picks (see [`group`]), refused when too long.
    fn address(&mut self, msg: &mut Message, seq: u32, route: u8) -> To {
        let single = msg.len() == 1;
        if self.ty == SocketType::Radio {
            let g = group(route);
            let set = msg.set_group(&g);
            assert_eq!(set.is_ok(), single && g.len() <= GROUP_MAX_LEN, "{set:?}");
            if g.len() > GROUP_MAX_LEN && single {
                assert_eq!(set, Err(MetadataError::GroupTooLong(g.len())));
            }
            return To::Peer;
        }
        let sock = self.sock_ref();
        let ids: Vec<(u32, PeerId, bool)> = sock
            .peers()
            .filter_map(|p| {
                let st = sock.peer_stats(p)?;
                let id = <[u8; 4]>::try_from(&st.routing_id[..]).ok()?;
                Some((u32::from_be_bytes(id), p, st.attached))
            })
            .collect();
        let n = ids.len();
        match usize::from(route) % (n + 2) {
            k if k < n => {
                let Some(&(id, peer, attached)) = ids.get(k) else {
                    return To::Peer;
                };
                assert_ne!(id, 0, "a peer numbered 0");
                let set = msg.set_routing_id(id);
                assert_eq!(set.is_ok(), single, "{set:?}");
                self.app_dest.insert(seq, peer);
                if attached && single {
                    To::Attached
                } else {
                    To::Peer
                }
            }
            k if k == n => {
                // The id after the largest in use (wrapping, never 0): nobody's.
                let mut id = ids.iter().map(|&(id, _, _)| id).max().unwrap_or(0);
                loop {
                    id = id.wrapping_add(1);
                    if id != 0 && ids.iter().all(|&(used, _, _)| used != id) {
                        break;
                    }
                }
                let set = msg.set_routing_id(id);
                assert_eq!(set.is_ok(), single, "{set:?}");
                To::Nobody
            }
            _ => {
                assert!(msg.set_routing_id(0).is_err(), "routing id 0 taken");
                To::Nobody
            }
        }
    }

    /// DISH: join or leave (`p` bit 0) the group `p >> 1` picks (see [`group`]); any other
    /// type: refused. The outcome follows the groups joined so far.
    fn join_or_leave(&mut self, p: u8) {
        let g = group(p >> 1);
        let join = p & 1 == 0;
        let r = if join {
            self.sock().join(&g)
        } else {
            self.sock().leave(&g)
        };
        let expected = if self.ty != SocketType::Dish {
            Err(GroupError::NotDish)
        } else if g.len() > GROUP_MAX_LEN {
            Err(GroupError::TooLong(g.len()))
        } else if join == self.joined.contains(&g) {
            Err(GroupError::Membership)
        } else {
            Ok(())
        };
        assert_eq!(
            r,
            expected,
            "{:?}: join {join} of {} bytes",
            self.ty,
            g.len()
        );
        if r.is_ok() && join {
            self.ever_joined.insert(g.clone());
            self.joined.insert(g);
        } else if r.is_ok() {
            self.joined.remove(&g);
        }
    }

    /// PEER: `connect_peer` to the connect endpoint, whose id then names a peer; any other
    /// type, or IMMEDIATE: refused.
    fn connect_peer(&mut self) {
        let immediate = self.sock_ref().options().immediate;
        let r = self.sock().connect_peer(CONNECT_ADDR);
        let Ok(id) = r else {
            assert!(
                self.ty != SocketType::Peer || immediate,
                "PEER's connect_peer refused: {r:?}"
            );
            assert_eq!(r, Err(EndpointError::ConnectPeerRefused));
            return;
        };
        assert!(
            self.ty == SocketType::Peer && !immediate,
            "{:?} (IMMEDIATE {immediate}) took connect_peer",
            self.ty
        );
        assert_ne!(id, 0, "connect_peer gave 0");
        let sock = self.sock_ref();
        let named = sock
            .peers()
            .filter_map(|p| sock.peer_stats(p))
            .any(|st| st.routing_id[..] == id.to_be_bytes());
        assert!(named, "connect_peer gave {id}, which names no peer");
    }

    fn recv(&mut self) -> bool {
        let could = self.sock().can_recv();
        let Some(msg) = self.net.recv(self.node) else {
            return false;
        };
        assert!(
            could,
            "{:?}: can_recv was false but recv gave a message",
            self.ty
        );
        self.check_received(&msg);
        true
    }
}

/// Socket options from the input (see [`socket()`]).
fn socket_options(b1: u8, b2: u8, b3: u8) -> Options {
    let heartbeat = |d: Duration| (b1 & 0x80 != 0).then_some(d);
    let mut o = Options::default();
    o.rcvhwm = usize::from(b1 & 3) + 1;
    o.sndhwm = usize::from(b1 >> 2 & 3) + 1;
    o.zap_domain = if b1 & 0x10 != 0 {
        Bytes::from_static(b"fuzz")
    } else {
        Bytes::new()
    };
    o.immediate = b1 & 0x40 != 0;
    o.heartbeat_ivl = heartbeat(Duration::from_millis(100));
    o.heartbeat_timeout = heartbeat(Duration::from_millis(300));
    o.heartbeat_ttl = heartbeat(Duration::from_secs(1));
    o.probe_router = b2 & 1 != 0;
    o.router_mandatory = b2 & 2 != 0;
    o.router_handover = b2 & 4 != 0;
    o.req_relaxed = b2 & 8 != 0;
    o.req_correlate = b2 & 0x10 != 0;
    o.xpub_verbose = b2 & 0x20 != 0;
    o.xpub_verboser = b2 & 0x20 != 0;
    o.conflate = b2 & 0x40 != 0;
    o.maxmsgsize = (b2 & 0x80 != 0).then_some(200);
    o.xpub_nodrop = b3 & 1 != 0;
    o.xpub_welcome_msg = (b3 & 2 != 0).then(|| Bytes::from_static(b"welcome"));
    o.linger = pick(
        &[
            None,
            Some(Duration::ZERO),
            Some(Duration::from_millis(100)),
            Some(Duration::from_secs(1)),
        ],
        usize::from(b3 >> 2 & 3),
        None,
    );
    o.handshake_ivl = if b3 & 0x10 != 0 {
        Some(Duration::from_secs(1))
    } else {
        Some(zmtp_proto::DEFAULT_HANDSHAKE_TIMEOUT)
    };
    o.reconnect_ivl_max = if b3 & 0x20 != 0 {
        Duration::from_millis(400)
    } else {
        Duration::ZERO
    };
    o.reconnect_ivl = if b3 & 0x80 != 0 {
        None
    } else {
        Some(Duration::from_millis(100))
    };
    o
}

/// Clock steps of the socket's timeout action (`None`: to its next deadline).
const SOCKET_STEPS: &[Option<Duration>] = &[
    None,
    Some(Duration::ZERO),
    Some(Duration::from_millis(1)),
    Some(Duration::from_millis(10)),
    Some(Duration::from_millis(100)),
    Some(Duration::from_secs(1)),
    Some(Duration::from_secs(31)),
    None,
];

/// Actions of [`socket()`], by the low 4 bits of an action byte.
pub(super) mod act {
    pub const ACCEPT: u8 = 0;
    pub const CONNECTED: u8 = 1;
    pub const MESSAGE: u8 = 2;
    pub const FLUSH: u8 = 3;
    pub const RAW: u8 = 4;
    pub const CLOSED: u8 = 5;
    pub const SEND: u8 = 6;
    pub const RECV: u8 = 7;
    pub const SUBSCRIBE: u8 = 8;
    pub const TIMEOUT: u8 = 9;
    pub const WRITE: u8 = 10;
    pub const VERDICT: u8 = 11;
    pub const PEER_SUBSCRIBE: u8 = 12;
    pub const CONNECT_FAILED: u8 = 13;
    pub const SETTLE: u8 = 14;
    pub const CLOSE: u8 = 15;
}

/// A whole [`Socket`] driven by a sequence of actions.
///
/// Input: byte 0 the socket type (PAIR, PUB, SUB, XPUB, XSUB, PUSH, PULL, REQ, REP,
/// DEALER, ROUTER, and the draft SERVER, CLIENT, RADIO, DISH, GATHER, SCATTER, PEER,
/// CHANNEL); bytes 1-3 the options (`socket_options`: RCVHWM and SNDHWM of 1-4, a ZAP
/// domain, IMMEDIATE, heartbeats, ROUTER/REQ/XPUB options, CONFLATE, MAXMSGSIZE, linger,
/// handshake deadline, reconnect policy) and, with bit 5 of byte 1, a connect endpoint
/// besides the bound one. Then actions, one byte each (low 4 bits, see `act`) with a
/// parameter byte or two: a peer connects on the bound endpoint (or the connect endpoint's
/// connection opens or fails), a scripted peer queues a message (to a DISH: a group frame
/// first) or a subscription (from a DISH peer, or with bit 7: JOIN or LEAVE of a group of
/// 0 to 1000 bytes), scripted bytes are fed, raw bytes are fed, a peer disconnects, the
/// application sends (SERVER and PEER: to a peer's routing id, an unknown one or none;
/// RADIO: to a group, over-long ones refused), receives, subscribes or (high bits of the
/// action, or a DISH) joins or leaves a group, calls `connect_peer` (high bits of the
/// connect-failure action), the clock advances, written bytes are reported (into a
/// per-stream observer), a verdict is given, the socket closes.
///
/// Scripted peers send a greeting, READY and messages whose frames carry a unique tag;
/// raw bytes never contain the tag. Checked after every step: no panic; every peer's
/// `queued_in` ≤ RCVHWM and `queued_out` ≤ SNDHWM (CONFLATE: 1 and 2); every message
/// `recv` gives that holds a tag is exactly the frames of the scripted message it names
/// (after the envelope the socket type strips), received once; `recv` and `send` agree
/// with `can_recv` and `can_send`; what the socket writes is valid ZMTP and each
/// application message arrives whole and once per stream. For the draft types besides:
/// multipart sends are refused and `recv` gives single frames only; a DISH gives only
/// groups it joined, each message with the group it was sent with; SERVER and PEER give
/// each stream's messages one routing id, never 0, send to the peer an id names, and
/// refuse unknown ids and none; RADIO puts `[group, body]` on the wire only to peers that
/// joined the group, the other draft types the body alone; `join`, `leave` and
/// `connect_peer` succeed or fail as the type, the group's length and the groups joined
/// say, and `connect_peer`'s id names a peer.
pub fn socket(data: &[u8]) {
    run_socket(data);
}

pub(super) fn run_socket(data: &[u8]) -> SocketOutcome {
    let mut c = Cursor::new(data);
    let (b0, b1, b2, b3) = (c.byte(), c.byte(), c.byte(), c.byte());
    let ty = pick(SOCKET_TYPES, usize::from(b0), SocketType::Pair);
    let opts = socket_options(b1, b2, b3);
    let conflate = opts.conflate
        && matches!(
            ty,
            SocketType::Dealer
                | SocketType::Pull
                | SocketType::Push
                | SocketType::Pub
                | SocketType::Sub
        );
    let (max_in, max_out) = if conflate {
        (1, 2)
    } else {
        (opts.rcvhwm, opts.sndhwm)
    };
    let Ok(mut sock) = Socket::new(ty, opts, 7) else {
        return SocketOutcome::default();
    };
    sock.set_entropy(LOCAL_ENTROPY);
    if b3 & 0x40 != 0 {
        sock.set_monitor(0xFFFF);
    }
    // The cluster draws nothing from its seed here: the socket brings its own, and the
    // body moves every byte itself.
    let mut net = Cluster::new(0);
    net.hold_connects_to(CONNECT_ADDR);
    let node = net.insert(sock);
    net.members_mut(node).defer_auth = true;
    let mut w = World {
        net,
        node,
        ty,
        streams: Vec::new(),
        next_uid: 1,
        sent: BTreeMap::new(),
        received: BTreeSet::new(),
        app_sent: BTreeMap::new(),
        next_app_seq: 0,
        app_dest: BTreeMap::new(),
        groups_sent: BTreeMap::new(),
        joined: BTreeSet::new(),
        ever_joined: BTreeSet::new(),
        routes: BTreeMap::new(),
        max_in,
        max_out,
        stats: SocketOutcome::default(),
    };
    if w.sock().bind(BIND_ADDR).is_err() {
        return w.stats;
    }
    if b1 & 0x20 != 0 && w.sock().connect(CONNECT_ADDR).is_err() {
        return w.stats;
    }
    w.events();

    let mut steps = 0;
    while !c.is_empty() && steps < 256 {
        steps += 1;
        let action = c.byte();
        let p = c.byte();
        match action & 15 {
            act::ACCEPT => {
                if let Some(remote) = w.net.accept_remote(BIND_ADDR) {
                    w.open(remote, p);
                }
            }
            act::CONNECTED => {
                if let Some(ep) = w.net.take_held_connect(w.node) {
                    if let Some(remote) = w.net.connect_remote(w.node, ep) {
                        w.open(remote, p);
                    }
                }
            }
            act::CONNECT_FAILED if action >> 4 != 0 => w.connect_peer(),
            act::CONNECT_FAILED => {
                if let Some(ep) = w.net.take_held_connect(w.node) {
                    w.net.refuse_connect(w.node, ep);
                }
            }
            act::MESSAGE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.script_message(i, p);
                }
            }
            act::PEER_SUBSCRIBE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.script_subscription(i, p);
                }
            }
            act::FLUSH => {
                if let Some(i) = w.choose(action >> 4) {
                    w.flush(i, usize::from(p));
                }
            }
            act::RAW => {
                let bytes = c.take(usize::from(p));
                if let Some(i) = w.choose(action >> 4) {
                    w.raw(i, bytes);
                }
            }
            act::CLOSED => {
                if let Some(i) = w.choose(action >> 4) {
                    if let Some(remote) = w.streams.get(i).map(|s| s.remote) {
                        w.net.remote_reset(remote);
                    }
                }
            }
            act::SEND => w.send(p, action >> 4),
            act::RECV => {
                for _ in 0..=(action >> 4) {
                    if !w.recv() {
                        break;
                    }
                }
            }
            act::SUBSCRIBE if action >> 4 != 0 || ty == SocketType::Dish => w.join_or_leave(p),
            act::SUBSCRIBE => {
                let topic = pick(TOPICS, usize::from(p >> 1), b"");
                if p & 1 == 0 {
                    w.sock().subscribe(topic);
                } else {
                    w.sock().unsubscribe(topic);
                }
            }
            act::TIMEOUT => {
                let step = pick(SOCKET_STEPS, usize::from(p), None);
                let now = w.net.now();
                let target = match step {
                    Some(d) => Some(now + d),
                    None => w.sock().poll_timeout(),
                };
                w.net.set_now(target.unwrap_or(now));
                w.net.fire(w.node);
            }
            act::WRITE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.write(i, usize::from(p));
                }
            }
            act::VERDICT => {
                let reply = match p % 6 {
                    0 => AuthReply::Verdict {
                        status: 200,
                        user_id: Bytes::from_static(b"user"),
                        metadata: Bytes::new(),
                    },
                    1 => AuthReply::status(200),
                    2 => AuthReply::status(300),
                    3 => AuthReply::status(400),
                    4 => AuthReply::status(500),
                    _ => AuthReply::NoHandler,
                };
                w.net.answer_auth(w.node, reply);
            }
            act::SETTLE => {
                for i in w.alive() {
                    w.flush(i, 0);
                    w.events();
                }
                for _ in 0..64 {
                    let Some(peer) = w.sock().next_dirty() else {
                        break;
                    };
                    let ids: Vec<usize> = (0..w.streams.len())
                        .filter(|&i| {
                            w.is_alive(i) && w.streams.get(i).is_some_and(|s| s.peer == peer)
                        })
                        .collect();
                    for i in ids {
                        w.write(i, 0);
                    }
                    w.events();
                }
                // Whatever is left (after partial writes), stream by stream.
                for i in w.alive() {
                    for _ in 0..8 {
                        let peer = w.streams.get(i).filter(|_| w.is_alive(i)).map(|s| s.peer);
                        let pending =
                            peer.is_some_and(|peer| !w.sock().poll_transmit(peer).is_empty());
                        if !pending {
                            break;
                        }
                        w.write(i, 0);
                        w.events();
                    }
                }
            }
            act::CLOSE => {
                if p < 16 {
                    let now = w.net.now();
                    w.sock().close(now);
                } else {
                    while w.recv() {}
                }
            }
            _ => {}
        }
        w.events();
        w.check_bounds();
    }
    w.stats
}
