//! Instruction counts per message of the core's hot paths, as a regression gate; and an
//! in-memory network of sockets that allocates nothing of its own once set up, for the
//! core's zero-allocation tests.
//!
//! # The figures
//! The `zmtp-icount` binary runs one [`Scenario`] for a given number of 64-byte messages:
//! it sets up the sockets in memory ([`Net`]: no OS sockets, no clock, no randomness; the
//! NULL mechanism), completes the handshakes, warms up, then sends every message through
//! the measured path and checks that each one arrives intact (a wrong result exits
//! non-zero). `scripts/icount.sh` runs it under `valgrind --tool=callgrind` twice, with
//! `N` and `2N` messages, and reports `(Ir(2N) - Ir(N)) / N`: the instructions executed
//! per message, with set-up, warm-up and process start-up cancelled out. Instruction counts
//! do not depend on the machine's load, so a change of a few percent is a change of the
//! code (or of the compiler), not noise; the script fails when a figure grows more than
//! 5 % over the committed baseline (`icount/baseline.txt`).
//!
//! ```text
//! bash scripts/icount.sh            # build, measure, compare with the baseline
//! bash scripts/icount.sh --update   # the same, then write the new figures as the baseline
//! cargo run --profile icount -p zmtp-icount -- push-send 1000   # one run, no valgrind
//! ```
//!
//! A figure is everything done per message on the measured path, including the little the
//! harness itself does (copying bytes from one socket's output into the other's receive
//! buffer, checking the message): see each [`Scenario`]. The binary is built with the
//! `icount` profile (the release settings: fat LTO, one codegen unit), as users build.
//!
//! # Allocation tests
//! [`Net`] moves bytes between sockets without allocating once its links exist and its
//! buffers have grown, so a counting allocator around it sees only the sockets' own
//! allocations: `tests/allocations.rs` checks that sending and receiving single-frame
//! messages allocates nothing per message for every classic socket type.
#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;

mod driver;

use zmtp_proto::socket::{Command, Message, Options, PeerId, Sent, Socket};
use zmtp_proto::{Bytes, Instant, SocketType};

/// The size of every message body of the scenarios.
pub const BODY_LEN: usize = 64;

/// Messages encoded ahead and fed to a receiver in one piece (`pull-recv`), and the number
/// of distinct bodies the senders cycle through.
pub const BATCH: usize = 64;

/// The virtual time of every call: nothing in the scenarios waits, so it never moves.
pub const NOW: Instant = Instant::from_millis(1_000);

/// Messages sent through the measured path before the count starts (buffers reach their
/// steady size).
pub const WARM_UP: u64 = 1_000;

/// One end of a stream: a socket and its peer for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// The socket's index in the [`Net`].
    pub socket: usize,
    /// The socket's peer for this stream.
    pub peer: PeerId,
}

/// Sockets joined by in-memory streams. Bytes written by one end are appended to the other
/// end's receive buffer (`read_buf`) and processed with `handle_input`, as a driver does
/// after a read; nothing is in flight between calls.
pub struct Net {
    sockets: Vec<Socket>,
    links: Vec<[End; 2]>,
    next_port: u16,
}

impl Default for Net {
    fn default() -> Self {
        Net::new()
    }
}

impl Net {
    /// An empty network.
    pub fn new() -> Net {
        Net {
            sockets: Vec::new(),
            links: Vec::new(),
            next_port: 40_000,
        }
    }

    /// Add a socket (its seed is its index: every run is the same).
    pub fn add(&mut self, ty: SocketType, opts: Options) -> usize {
        let seed = self.sockets.len() as u64 + 1;
        let socket = Socket::new(ty, opts, seed).expect("valid options");
        self.sockets.push(socket);
        self.sockets.len() - 1
    }

    /// A socket.
    pub fn socket(&mut self, i: usize) -> &mut Socket {
        &mut self.sockets[i]
    }

    /// Open a stream from `client` to a new endpoint bound by `server`, as a driver would
    /// carry out the `Listen` and `Connect` commands; the handshake is not done yet (see
    /// [`settle`](Self::settle)). Returns the server's end and the client's end.
    pub fn link(&mut self, server: usize, client: usize) -> (End, End) {
        let port = self.next_port;
        self.next_port += 1;
        let endpoint = format!("tcp://127.0.0.1:{port}");
        self.sockets[server]
            .bind(&endpoint)
            .expect("valid bind endpoint");
        let listen = match self.sockets[server].poll_command() {
            Some(Command::Listen { endpoint: ep, .. }) => ep,
            other => panic!("expected Listen, got {other:?}"),
        };
        self.sockets[server].handle_listening(listen, &endpoint);
        let connect = self.sockets[client]
            .connect(&endpoint)
            .expect("valid connect endpoint");
        match self.sockets[client].poll_command() {
            Some(Command::Connect { endpoint: ep, .. }) if ep == connect => {}
            other => panic!("expected Connect, got {other:?}"),
        }
        let cp = self.sockets[client]
            .handle_connected(connect, &endpoint["tcp://".len()..], NOW)
            .expect("the client takes the stream");
        let address = format!("127.0.0.1:{}", 50_000 + self.links.len());
        let sp = self.sockets[server]
            .handle_accepted(listen, &address, NOW)
            .expect("the server takes the stream");
        let ends = [
            End {
                socket: server,
                peer: sp,
            },
            End {
                socket: client,
                peer: cp,
            },
        ];
        self.links.push(ends);
        (ends[0], ends[1])
    }

    /// The other end of the stream of `end`.
    pub fn partner(&self, end: End) -> End {
        for link in &self.links {
            if link[0] == end {
                return link[1];
            }
            if link[1] == end {
                return link[0];
            }
        }
        panic!("no stream at {end:?}")
    }

    /// Move bytes both ways on every stream until none moves (handshakes, subscriptions).
    pub fn settle(&mut self) {
        while (0..self.sockets.len())
            .map(|i| self.flush(i))
            .sum::<usize>()
            > 0
        {}
        for (i, s) in self.sockets.iter_mut().enumerate() {
            if let Some(c) = s.poll_command() {
                panic!("socket {i}: unexpected command {c:?}");
            }
        }
    }

    /// Write the output of every peer of socket `i` that has some into the other end's
    /// receive buffer, and have the other end process it. Returns the bytes moved.
    pub fn flush(&mut self, i: usize) -> usize {
        let mut moved = 0;
        while let Some(peer) = self.sockets[i].next_dirty() {
            moved += self.write(End { socket: i, peer });
        }
        moved
    }

    /// Write the output of `from` into the other end of its stream and have that end
    /// process it. (A driver learns which peers have output from `next_dirty`: see
    /// [`flush`](Self::flush).) Returns the bytes moved.
    pub fn write(&mut self, from: End) -> usize {
        let to = self.partner(from);
        let (src, dst) = two(&mut self.sockets, from.socket, to.socket);
        let mut moved = 0;
        loop {
            let mut chunks: [&[u8]; 8] = [&[]; 8];
            let n = src.transmit_chunks(from.peer, &mut chunks);
            if n == 0 {
                break;
            }
            let buf = dst.read_buf(to.peer).expect("the stream is open");
            let mut len = 0;
            for chunk in &chunks[..n] {
                buf.extend_from_slice(chunk);
                len += chunk.len();
            }
            src.advance(from.peer, len, NOW);
            moved += len;
        }
        if moved > 0 {
            dst.handle_input(to.peer, NOW);
        }
        moved
    }

    /// Hand the output of every peer of socket `i` that has some (as `next_dirty` names
    /// them) to `f`, chunk by chunk, and drop it as written: no receiver, what a driver's
    /// write to the kernel amounts to. Returns the bytes taken.
    pub fn take_all(&mut self, i: usize, mut f: impl FnMut(End, &[u8])) -> usize {
        let mut taken = 0;
        while let Some(peer) = self.sockets[i].next_dirty() {
            let end = End { socket: i, peer };
            taken += self.take(end, |chunk| f(end, chunk));
        }
        taken
    }

    /// Hand the output of `from` to `f`, chunk by chunk, and drop it as written. (A driver
    /// learns which peers have output from `next_dirty`: see [`take_all`](Self::take_all).)
    /// Returns the bytes taken.
    pub fn take(&mut self, from: End, mut f: impl FnMut(&[u8])) -> usize {
        let src = &mut self.sockets[from.socket];
        let mut taken = 0;
        loop {
            let mut chunks: [&[u8]; 8] = [&[]; 8];
            let n = src.transmit_chunks(from.peer, &mut chunks);
            if n == 0 {
                return taken;
            }
            let mut len = 0;
            for chunk in &chunks[..n] {
                f(chunk);
                len += chunk.len();
            }
            src.advance(from.peer, len, NOW);
            taken += len;
        }
    }

    /// Append `bytes` to the receive buffer of `to` and have it process them.
    pub fn feed(&mut self, to: End, bytes: &[u8]) {
        let s = &mut self.sockets[to.socket];
        s.read_buf(to.peer)
            .expect("the stream is open")
            .extend_from_slice(bytes);
        s.handle_input(to.peer, NOW);
    }
}

/// Two distinct elements of a slice, mutably.
fn two<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b, "a stream between a socket and itself");
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

/// `BATCH` distinct 64-byte bodies: body `i` starts with `i` as 8 little-endian bytes and
/// is filled with `i as u8` after that. Made once; messages share them (no copy).
pub fn bodies() -> Vec<Bytes> {
    (0..BATCH as u64)
        .map(|i| {
            let mut b = vec![i as u8; BODY_LEN];
            b[..8].copy_from_slice(&i.to_le_bytes());
            Bytes::from(b)
        })
        .collect()
}

/// The measured paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// PUSH `send_slice` of a 64-byte body (a stack buffer holding the message number), then
    /// the encoded bytes taken from the socket's output and checked (`transmit_chunks`,
    /// `advance`): per message, as a driver writing after each send.
    PushSend,
    /// PULL: 64 messages encoded ahead (by a PUSH, at set-up) appended to the receive
    /// buffer at once, `handle_input`, then `recv` of each and a check of its body.
    PullRecv,
    /// PUB `send` of a message (a shared 64-byte body, no copy) to 10 SUBs subscribed to
    /// everything, and the output of each of the 10 peers taken and checked.
    PubFanout,
    /// One round trip: REQ `send` (shared body), its output fed to REP, REP `recv`, REP
    /// `send` of the request's body back, its output fed to REQ, REQ `recv` and a check.
    ReqRep,
    /// PUSH `send_slices` of 64 bodies at a time (the batch call), then the encoded bytes
    /// of the batch taken and every frame checked.
    PushSendMany,
    /// As [`PullRecv`](Self::PullRecv), with `recv_many` taking the 64 messages at once.
    PullRecvMany,
    /// One round trip between a ROUTER and one of its [`CROWD`] DEALER peers while the
    /// others are idle: DEALER `send`, its output fed to the ROUTER, ROUTER `recv` (routing
    /// id and body) and `send` of it back, its output fed to the DEALER, DEALER `recv` and
    /// a check. What a receive costs must not grow with the idle peers.
    RouterCrowd,
    /// Through zmtp-tokio's sockets on a current-thread runtime: a PUSH and a PULL over
    /// `inproc://` taking turns, [`BATCH`] messages at a time, one `send_slice` and one
    /// `recv` per message (what an application writes first); the figure is both calls,
    /// the driver's tasks and the core together.
    TokioEach,
    /// As [`TokioEach`](Self::TokioEach), with one `send_many` and one `recv_many` per batch.
    TokioBatch,
}

/// The DEALER peers of `router-crowd`.
pub const CROWD: usize = 1_000;

impl Scenario {
    /// Every scenario, in the order of the report.
    pub const ALL: [Scenario; 9] = [
        Scenario::PushSend,
        Scenario::PullRecv,
        Scenario::PubFanout,
        Scenario::ReqRep,
        Scenario::PushSendMany,
        Scenario::PullRecvMany,
        Scenario::RouterCrowd,
        Scenario::TokioEach,
        Scenario::TokioBatch,
    ];

    /// The scenario's name on the command line and in the baseline.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::PushSend => "push-send",
            Scenario::PullRecv => "pull-recv",
            Scenario::PubFanout => "pub-fanout",
            Scenario::ReqRep => "reqrep",
            Scenario::PushSendMany => "push-send-many",
            Scenario::PullRecvMany => "pull-recv-many",
            Scenario::RouterCrowd => "router-crowd",
            Scenario::TokioEach => "tokio-each",
            Scenario::TokioBatch => "tokio-batch",
        }
    }

    /// The scenario of a name.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Set up, warm up ([`WARM_UP`] messages), then send `count` messages through the
    /// measured path, checking each.
    pub fn run(self, count: u64) -> Result<(), Failure> {
        match self {
            Scenario::PushSend => push_send(count),
            Scenario::PullRecv => pull_recv(count, false),
            Scenario::PubFanout => pub_fanout(count),
            Scenario::ReqRep => reqrep(count),
            Scenario::PushSendMany => push_send_many(count),
            Scenario::PullRecvMany => pull_recv(count, true),
            Scenario::RouterCrowd => router_crowd(count),
            Scenario::TokioEach => driver::tokio_push_pull(count, false),
            Scenario::TokioBatch => driver::tokio_push_pull(count, true),
        }
    }
}

/// A message that did not arrive as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(Failure(format!($($fmt)*)));
        }
    };
}

/// A PUSH connected to a PULL, handshake done: (net, push's end, pull's end).
fn push_pull() -> (Net, End, End) {
    let mut net = Net::new();
    let pull = net.add(SocketType::Pull, Options::default());
    let push = net.add(SocketType::Push, Options::default());
    let (pull_end, push_end) = net.link(pull, push);
    net.settle();
    (net, push_end, pull_end)
}

/// The encoding of a 64-byte single-frame message under NULL: a short frame header
/// (flags 0, length 64), then the body.
const ENCODED_LEN: usize = 2 + BODY_LEN;

fn push_send(count: u64) -> Result<(), Failure> {
    let (mut net, push, _) = push_pull();
    let mut body = [0u8; BODY_LEN];
    for i in 0..WARM_UP + count {
        body[..8].copy_from_slice(&i.to_le_bytes());
        let sent = net.socket(push.socket).send_slice(&body, NOW);
        ensure!(sent == Ok(Sent::Queued), "message {i}: send gave {sent:?}");
        // The frame as it leaves: header (flags 0, length), then the body with its number.
        let mut frame = [0u8; ENCODED_LEN];
        let mut seen = 0usize;
        net.take_all(push.socket, |_, chunk| {
            if let Some(dst) = frame.get_mut(seen..seen + chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            seen += chunk.len();
        });
        ensure!(
            seen == ENCODED_LEN && frame[..2] == [0, BODY_LEN as u8] && frame[2..10] == body[..8],
            "message {i}: {seen} bytes out: {:?}",
            &frame[..seen.min(ENCODED_LEN)]
        );
    }
    Ok(())
}

/// `send_slices` of a batch at a time, then the batch's bytes checked frame by frame.
fn push_send_many(count: u64) -> Result<(), Failure> {
    let (mut net, push, _) = push_pull();
    let mut bodies = [[0u8; BODY_LEN]; BATCH];
    let total = WARM_UP + count;
    let mut sent = 0u64;
    let mut encoded = [0u8; BATCH * ENCODED_LEN];
    while sent < total {
        let n = (total - sent).min(BATCH as u64) as usize;
        for (k, body) in bodies.iter_mut().take(n).enumerate() {
            body[..8].copy_from_slice(&(sent + k as u64).to_le_bytes());
        }
        let taken = net.socket(push.socket).send_slices(&bodies[..n], NOW);
        ensure!(taken == Ok(n), "message {sent}: send_slices gave {taken:?}");
        let mut seen = 0usize;
        net.take_all(push.socket, |_, chunk| {
            if let Some(dst) = encoded.get_mut(seen..seen + chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            seen += chunk.len();
        });
        ensure!(seen == n * ENCODED_LEN, "message {sent}: {seen} bytes out");
        for (k, frame) in encoded.chunks(ENCODED_LEN).take(n).enumerate() {
            let ok = frame[..2] == [0, BODY_LEN as u8] && frame[2..10] == bodies[k][..8];
            ensure!(ok, "message {}: frame {:?}", sent + k as u64, &frame[..10]);
        }
        sent += n as u64;
    }
    Ok(())
}

/// `recv` of each message, or `recv_many` of the batch (`many`).
fn pull_recv(count: u64, many: bool) -> Result<(), Failure> {
    let (mut net, push, pull) = push_pull();
    // BATCH messages encoded by the PUSH, kept as bytes: the PULL is fed these again and
    // again (a data frame's encoding does not depend on what came before).
    for body in bodies() {
        net.socket(push.socket)
            .send(body, NOW)
            .map_err(|e| Failure(format!("encoding the batch: {e}")))?;
    }
    let mut encoded = Vec::new();
    net.take_all(push.socket, |_, chunk| encoded.extend_from_slice(chunk));
    ensure!(
        encoded.len() == BATCH * ENCODED_LEN,
        "the batch is {} bytes",
        encoded.len()
    );
    let total = WARM_UP + count;
    let mut received = 0u64;
    let mut batch = Vec::with_capacity(BATCH);
    while received < total {
        let n = (total - received).min(BATCH as u64) as usize;
        net.feed(pull, &encoded[..n * ENCODED_LEN]);
        if many {
            batch.clear();
            let got = net.socket(pull.socket).recv_many(&mut batch, BATCH, NOW);
            ensure!(got == n, "message {received}: recv_many gave {got} of {n}");
            for (k, m) in batch.iter().enumerate() {
                let ok = has_body(m, k as u64) && m.len() == 1;
                ensure!(ok, "message {}: received {m:?}", received + k as u64);
            }
        } else {
            for k in 0..n {
                let msg = net.socket(pull.socket).recv(NOW);
                let ok = msg
                    .as_ref()
                    .is_some_and(|m| has_body(m, k as u64) && m.len() == 1);
                ensure!(ok, "message {}: received {msg:?}", received + k as u64);
            }
        }
        let extra = net.socket(pull.socket).recv(NOW);
        ensure!(extra.is_none(), "an extra message: {extra:?}");
        received += n as u64;
    }
    Ok(())
}

/// Whether the first frame of `msg` is body number `k` of [`bodies`] (modulo [`BATCH`]):
/// its length, its number and its last byte (a cheap check: it is part of the figures).
fn has_body(msg: &Message, k: u64) -> bool {
    msg.first().is_some_and(|f| is_body(f, k))
}

/// Whether `frame` is body number `k` (of the [`BATCH`] the senders cycle through).
fn is_body(frame: &[u8], k: u64) -> bool {
    let k = k % BATCH as u64;
    frame.len() == BODY_LEN && frame[..8] == k.to_le_bytes() && frame[BODY_LEN - 1] == k as u8
}

fn router_crowd(count: u64) -> Result<(), Failure> {
    let mut net = Net::new();
    let router = net.add(SocketType::Router, Options::default());
    let mut dealers = Vec::with_capacity(CROWD);
    for _ in 0..CROWD {
        let dealer = net.add(SocketType::Dealer, Options::default());
        net.link(router, dealer);
        dealers.push(dealer);
    }
    net.settle();
    // The talking peer is the first attached (and its stream the first the harness finds).
    let dealer = dealers[0];
    let bodies = bodies();
    for i in 0..WARM_UP + count {
        let k = i % BATCH as u64;
        let sent = net.socket(dealer).send(bodies[k as usize].clone(), NOW);
        ensure!(sent == Ok(Sent::Queued), "request {i}: send gave {sent:?}");
        net.flush(dealer);
        let request = net.socket(router).recv(NOW);
        let Some(request) = request.filter(|m| m.len() == 2) else {
            return Err(Failure(format!("request {i} did not arrive as [id, body]")));
        };
        let intact = request.frames().get(1).is_some_and(|f| is_body(f, k));
        ensure!(intact, "request {i}: received {request:?}");
        reply(&mut net, router, dealer, request, k, i)?;
    }
    Ok(())
}

/// The subscribers of `pub-fanout`.
pub const SUBSCRIBERS: usize = 10;

fn pub_fanout(count: u64) -> Result<(), Failure> {
    let mut net = Net::new();
    let publisher = net.add(SocketType::Pub, Options::default());
    let mut ends = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let sub = net.add(SocketType::Sub, Options::default());
        net.socket(sub).subscribe(b"");
        let (pub_end, _) = net.link(publisher, sub);
        ends.push(pub_end);
    }
    net.settle();
    let bodies = bodies();
    for i in 0..WARM_UP + count {
        let k = i % BATCH as u64;
        let sent = net.socket(publisher).send(bodies[k as usize].clone(), NOW);
        ensure!(sent == Ok(Sent::Queued), "message {i}: send gave {sent:?}");
        // Per subscriber: bytes written, and the first byte of the body.
        let mut seen = [0usize; SUBSCRIBERS];
        let mut first = [0u8; SUBSCRIBERS];
        net.take_all(publisher, |end, chunk| {
            let j = ends.iter().position(|&e| e == end).unwrap_or(0);
            if seen[j] <= 2 && seen[j] + chunk.len() > 2 {
                first[j] = chunk[2 - seen[j]];
            }
            seen[j] += chunk.len();
        });
        for j in 0..SUBSCRIBERS {
            ensure!(
                seen[j] == ENCODED_LEN && first[j] == k as u8,
                "message {i} to subscriber {j}: {} bytes, body starts with {}",
                seen[j],
                first[j]
            );
        }
    }
    Ok(())
}

fn reqrep(count: u64) -> Result<(), Failure> {
    let mut net = Net::new();
    let rep = net.add(SocketType::Rep, Options::default());
    let req = net.add(SocketType::Req, Options::default());
    net.link(rep, req);
    net.settle();
    let bodies = bodies();
    for i in 0..WARM_UP + count {
        let k = i % BATCH as u64;
        let sent = net.socket(req).send(bodies[k as usize].clone(), NOW);
        ensure!(sent == Ok(Sent::Queued), "request {i}: send gave {sent:?}");
        net.flush(req);
        let request = net.socket(rep).recv(NOW);
        let Some(request) = request.filter(|m| has_body(m, k) && m.len() == 1) else {
            return Err(Failure(format!("request {i} did not arrive intact")));
        };
        reply(&mut net, rep, req, request, k, i)?;
    }
    Ok(())
}

/// The reply leg of a round trip: `server` sends `request` back, its output is fed to
/// `client`, which must receive body `k` alone.
fn reply(
    net: &mut Net,
    server: usize,
    client: usize,
    request: Message,
    k: u64,
    i: u64,
) -> Result<(), Failure> {
    let sent = net.socket(server).send(request, NOW);
    ensure!(sent == Ok(Sent::Queued), "reply {i}: send gave {sent:?}");
    net.flush(server);
    let reply = net.socket(client).recv(NOW);
    ensure!(
        reply
            .as_ref()
            .is_some_and(|m| has_body(m, k) && m.len() == 1),
        "reply {i}: received {reply:?}"
    );
    Ok(())
}
