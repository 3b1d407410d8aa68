//! Zero allocations per message in steady state, in the core: for every classic socket
//! type, sending and receiving single-frame messages allocates nothing once warmed up.
//!
//! A counting allocator (zmtp-testkit's) wraps the system's and counts, per thread, the allocations made
//! while the counting flag of that thread is up: tests running side by side on other
//! threads do not disturb each other. The sockets run in a [`Net`], which moves bytes
//! without allocating once set up. What the test itself does to make a message is not
//! counted: messages are made outside the counted calls, from `Bytes` made once and
//! cloned (a reference count, no copy), and multipart messages (ROUTER's, with a routing
//! id) are built before the count starts. What is counted, separately: `send` (with the
//! envelope REQ and REP add, and the routing id ROUTER takes off), moving the encoded
//! bytes (the sender's `transmit_chunks` and `advance`, the receiver's `handle_input`) and
//! `recv` (with the envelopes taken off, and the routing id ROUTER adds).

use zmtp_icount::{bodies, Net, BATCH, NOW};
use zmtp_proto::socket::{Message, Options, Sent};
use zmtp_proto::{Bytes, SocketType};
use zmtp_testkit::allocations::{on_this_thread as counted, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn the_counting_allocator_counts_this_thread_only() {
    let (b, n) = counted(|| Box::new([0u8; 100]));
    assert_eq!(n, 1);
    let (v, n) = counted(|| {
        let mut v: Vec<u64> = Vec::with_capacity(1);
        v.extend([1, 2, 3]);
        v
    });
    assert_eq!(n, 2, "an allocation and a reallocation");
    let ((), n) = counted(|| drop((b, v)));
    assert_eq!(n, 0, "freeing is not allocating");
    let ((), n) = counted(|| {
        std::thread::spawn(|| Box::new(1u8)).join().ok();
    });
    // Spawning allocates here; the other thread's box is not counted.
    assert!(n > 0);
    let (_, n) = counted(|| {
        std::thread::scope(|s| {
            s.spawn(|| {
                let (b, n) = counted(|| Box::new(7u8));
                assert_eq!(n, 1);
                b
            })
            .join()
            .ok()
        })
    });
    assert!(n > 0);
}

/// Messages per measurement, and before it.
const MESSAGES: u64 = 10_000;
const WARM_UP: u64 = 1_000;

/// How a message is handed to `send`.
#[derive(Clone, Copy, Debug)]
enum Send {
    /// `send` of a message made (outside the count) from a cloned `Bytes`.
    Message,
    /// `send_slice` of a borrowed buffer.
    Slice,
}

/// Allocations counted over `MESSAGES` messages, by phase.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    send: u64,
    transfer: u64,
    recv: u64,
}

impl Counts {
    fn total(self) -> u64 {
        self.send + self.transfer + self.recv
    }
}

/// One direction of a pair of sockets: messages from `from` to `to`.
struct Flow {
    net: Net,
    from: usize,
    to: usize,
    /// ROUTER sends: the routing id of the receiving peer, put in front of each message.
    route: Option<Bytes>,
    /// REQ->REP: after each message, REP answers (and REQ receives the reply), not
    /// counted, so that the next request may go.
    answer_after: bool,
    /// REP->REQ: before each message, REQ asks (and REP receives the request), not
    /// counted, so that REP may reply.
    ask_before: bool,
    /// Frames of each message received (ROUTER: the routing id, then the body).
    frames: usize,
}

impl Flow {
    /// Send `n` messages through the flow and receive each one; the allocations made, if
    /// `count` (else warm-up).
    fn run(&mut self, n: u64, how: Send, bodies: &[Bytes]) -> Counts {
        let mut counts = Counts::default();
        let mut slice = [0u8; 64];
        for i in 0..n {
            let k = (i % BATCH as u64) as usize;
            // The message, made outside the count.
            let msg = match &self.route {
                Some(id) => Message::from(vec![id.clone(), bodies[k].clone()]),
                None => Message::from(bodies[k].clone()),
            };
            slice.copy_from_slice(&bodies[k]);
            if self.ask_before {
                let request = Message::from(bodies[k].clone());
                let sent = self.net.socket(self.to).send(request, NOW);
                assert_eq!(sent, Ok(Sent::Queued), "request {i}");
                self.net.flush(self.to);
                let request = self.net.socket(self.from).recv(NOW);
                assert!(request.is_some(), "request {i} did not arrive");
            }
            let socket = self.net.socket(self.from);
            let (sent, a) = match how {
                Send::Message => counted(|| socket.send(msg, NOW)),
                Send::Slice => counted(|| socket.send_slice(&slice, NOW)),
            };
            assert_eq!(sent, Ok(Sent::Queued), "message {i}");
            let (moved, b) = counted(|| self.net.flush(self.from));
            assert!(moved > 0, "message {i}: nothing written");
            let socket = self.net.socket(self.to);
            let (got, c) = counted(|| socket.recv(NOW));
            let got = got.unwrap_or_else(|| panic!("message {i} did not arrive"));
            assert_eq!(got.frames().len(), self.frames, "message {i}: {got:?}");
            let body = &got.frames()[self.frames - 1];
            assert_eq!(body[..], bodies[k][..], "message {i}");
            counts.send += a;
            counts.transfer += b;
            counts.recv += c;
            if self.answer_after {
                // The reply, not counted: it has its own flow.
                drop(got);
                let reply = Message::from(bodies[k].clone());
                let sent = self.net.socket(self.to).send(reply, NOW);
                assert_eq!(sent, Ok(Sent::Queued), "reply {i}");
                self.net.flush(self.to);
                let back = self.net.socket(self.from).recv(NOW);
                assert!(back.is_some(), "reply {i} did not arrive");
            }
        }
        counts
    }

    /// Warm up, then count the allocations of `MESSAGES` messages.
    fn measure(&mut self, how: Send) -> Counts {
        let bodies = bodies();
        self.run(WARM_UP, how, &bodies);
        self.run(MESSAGES, how, &bodies)
    }
}

/// `server` bound, `client` connected, handshake done; messages go `client` to `server`
/// when `towards_server`.
fn flow(server: SocketType, client: SocketType, towards_server: bool) -> Flow {
    let mut net = Net::new();
    let s = net.add(server, Options::default());
    let c = net.add(client, Options::default());
    for (i, ty) in [(s, server), (c, client)] {
        if matches!(ty, SocketType::Sub | SocketType::XSub) {
            net.socket(i).subscribe(b"");
        }
    }
    let (s_end, c_end) = net.link(s, c);
    net.settle();
    let (from, to) = if towards_server { (c, s) } else { (s, c) };
    // A ROUTER sends to the peer named by the first frame: the id it knows the other by
    // (generated, since the other announces none), learnt from a message of the other.
    let (sender, receiver) = if towards_server {
        (client, server)
    } else {
        (server, client)
    };
    let route = (sender == SocketType::Router).then(|| {
        let (router_end, other_end) = if towards_server {
            (c_end, s_end)
        } else {
            (s_end, c_end)
        };
        let other = other_end.socket;
        net.socket(other)
            .send(Message::from(Bytes::from_static(b"hello")), NOW)
            .expect("the other side sends");
        net.flush(other);
        let hello = net
            .socket(router_end.socket)
            .recv(NOW)
            .expect("the ROUTER receives");
        hello.first().cloned().expect("a routing id")
    });
    Flow {
        net,
        from,
        to,
        route,
        answer_after: sender == SocketType::Req,
        ask_before: sender == SocketType::Rep,
        frames: if receiver == SocketType::Router { 2 } else { 1 },
    }
}

/// Assert no allocation per message, in every phase.
fn assert_none(name: &str, counts: Counts) {
    println!(
        "{name}: {} allocations in {MESSAGES} messages (send {}, transfer {}, recv {})",
        counts.total(),
        counts.send,
        counts.transfer,
        counts.recv
    );
    assert_eq!(counts, Counts::default(), "{name}: allocations per message");
}

#[test]
fn push_to_pull() {
    use SocketType::*;
    assert_none(
        "PUSH->PULL send",
        flow(Pull, Push, true).measure(Send::Message),
    );
    assert_none(
        "PUSH->PULL send_slice",
        flow(Pull, Push, true).measure(Send::Slice),
    );
}

#[test]
fn pub_to_sub() {
    use SocketType::*;
    assert_none("PUB->SUB", flow(Sub, Pub, true).measure(Send::Message));
}

#[test]
fn xpub_to_xsub() {
    use SocketType::*;
    assert_none("XPUB->XSUB", flow(XPub, XSub, false).measure(Send::Message));
}

#[test]
fn req_to_rep_and_back() {
    use SocketType::*;
    assert_none("REQ->REP", flow(Rep, Req, true).measure(Send::Message));
    assert_none("REP->REQ", flow(Req, Rep, true).measure(Send::Message));
}

#[test]
fn dealer_and_router() {
    use SocketType::*;
    assert_none(
        "DEALER->ROUTER",
        flow(Router, Dealer, true).measure(Send::Message),
    );
    assert_none(
        "ROUTER->DEALER",
        flow(Router, Dealer, false).measure(Send::Message),
    );
    assert_none(
        "DEALER->ROUTER send_slice",
        flow(Router, Dealer, true).measure(Send::Slice),
    );
}

#[test]
fn dealer_to_dealer() {
    use SocketType::*;
    assert_none(
        "DEALER->DEALER",
        flow(Dealer, Dealer, true).measure(Send::Message),
    );
    assert_none(
        "DEALER<-DEALER",
        flow(Dealer, Dealer, false).measure(Send::Message),
    );
}

#[test]
fn pair_to_pair() {
    use SocketType::*;
    assert_none("PAIR->PAIR", flow(Pair, Pair, true).measure(Send::Message));
    assert_none("PAIR<-PAIR", flow(Pair, Pair, false).measure(Send::Slice));
}
