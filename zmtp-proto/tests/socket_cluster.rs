//! Cluster behaviour of the socket layer: reconnection, resubscription, heartbeats, slow
//! consumers, lingering and monitor events, in virtual time.

use std::time::Duration;

use zmtp_proto::socket::monitor::protocol_error;
use zmtp_proto::socket::{Message, MonitorEvent, MonitorEventKind, SendError, Sent};
use zmtp_proto::SocketType::*;
use zmtp_testkit::cluster::{Cluster, Node, FIRST_EPHEMERAL_PORT};
use zmtp_testkit::message::{m, opts, text};

const ANY: &str = "tcp://127.0.0.1:*";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn recv_texts(c: &mut Cluster, n: Node) -> Vec<String> {
    c.recv_all(n).iter().map(text).collect()
}

fn retried(events: &[MonitorEvent]) -> Vec<u32> {
    events
        .iter()
        .filter(|e| e.kind == MonitorEventKind::ConnectRetried)
        .map(|e| e.value)
        .collect()
}

fn count(events: &[MonitorEvent], kind: MonitorEventKind) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

// ----- reconnection ---------------------------------------------------------------------

#[test]
fn reconnect_backs_off_exponentially_and_resets_after_a_handshake() {
    let mut c = Cluster::new(100);
    let ep = "tcp://127.0.0.1:7000";
    let publ = c.add_default(Pub);
    c.bind(publ, ep);
    let sub = c.add(
        Sub,
        opts(|o| {
            o.reconnect_ivl = Some(ms(100));
            o.reconnect_ivl_max = ms(800);
        }),
    );
    c.monitor_all(sub);
    c.socket(sub).subscribe(b"");
    c.connect(sub, ep);
    c.run_until_idle();
    assert_eq!(c.member(sub).connect_attempts.len(), 1);
    c.take_monitor(sub);

    let t0 = c.now();
    c.kill(publ);
    for _ in 0..5 {
        assert!(c.advance_to_next_timer());
    }
    let after: Vec<Duration> = c.member(sub).connect_attempts[1..]
        .iter()
        .map(|(t, _)| t.saturating_duration_since(t0))
        .collect();
    // Waits of 100, 200, 400, 800, 800 ms: doubling, capped at RECONNECT_IVL_MAX.
    assert_eq!(after, [ms(100), ms(300), ms(700), ms(1500), ms(2300)]);
    let events = c.take_monitor(sub);
    assert_eq!(retried(&events), [100, 200, 400, 800, 800, 800]);
    assert_eq!(count(&events, MonitorEventKind::Disconnected), 1);
    assert_eq!(count(&events, MonitorEventKind::ConnectDelayed), 5);

    // The publisher comes back: the next attempt (after 800 ms) succeeds.
    let publ = c.add_default(Pub);
    c.bind(publ, ep);
    assert!(c.advance_to_next_timer());
    assert_eq!(c.elapsed_since(t0), ms(3100));
    let events = c.take_monitor(sub);
    assert_eq!(count(&events, MonitorEventKind::HandshakeSucceeded), 1);
    c.send(publ, m(&["back"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["back"]);

    // A handshake resets the backoff: the next loss waits RECONNECT_IVL again.
    let t1 = c.now();
    c.kill(publ);
    assert!(c.advance_to_next_timer());
    assert_eq!(c.elapsed_since(t1), ms(100));
    assert_eq!(retried(&c.take_monitor(sub)), [100, 200]);
}

#[test]
fn no_backoff_without_reconnect_ivl_max_and_no_reconnect_without_ivl() {
    let mut c = Cluster::new(101);
    let ep = "tcp://127.0.0.1:7001";
    let fixed = c.add_default(Push);
    let never = c.add(Push, opts(|o| o.reconnect_ivl = None));
    for s in [fixed, never] {
        c.monitor_all(s);
        c.connect(s, ep);
    }
    c.run_for(ms(1000));
    let times: Vec<u64> = c
        .member(fixed)
        .connect_attempts
        .iter()
        .map(|(t, _)| t.as_micros() / 1000)
        .collect();
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, vec![100; 10], "the default: every 100 ms");
    assert!(retried(&c.take_monitor(fixed)).iter().all(|&v| v == 100));
    assert_eq!(c.member(never).connect_attempts.len(), 1);
    assert_eq!(retried(&c.take_monitor(never)), Vec::<u32>::new());
}

#[test]
fn a_protocol_error_stops_reconnecting() {
    let mut c = Cluster::new(102);
    // During the handshake: a peer that answers with a bad greeting.
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    c.silence(pull);
    let push = c.add_default(Push);
    c.monitor_all(push);
    c.connect(push, &ep);
    c.run_until_idle();
    let peer = c.peer_between(push, pull).unwrap();
    let now = c.now();
    c.socket(push).handle_received(peer, now, &[0u8; 10]);
    c.run_for(ms(5000));
    let events = c.take_monitor(push);
    let failed: Vec<(MonitorEventKind, u32)> = events
        .iter()
        .filter(|e| e.kind == MonitorEventKind::HandshakeFailedProtocol)
        .map(|e| (e.kind, e.value))
        .collect();
    assert_eq!(
        failed,
        [(
            MonitorEventKind::HandshakeFailedProtocol,
            protocol_error::ZMTP_UNSPECIFIED
        )]
    );
    assert_eq!(c.member(push).connect_attempts.len(), 1, "never again");
    assert_eq!(retried(&events), Vec::<u32>::new());

    // After the handshake: a malformed frame (reserved flags) from an established peer.
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    let push = c.add_default(Push);
    c.monitor_all(push);
    c.connect(push, &ep);
    c.run_until_idle();
    let peer = c.peer_between(push, pull).unwrap();
    assert!(c.peer_stats(push, peer).unwrap().established);
    let now = c.now();
    c.socket(push).handle_received(peer, now, &[0x80, 0]);
    c.run_for(ms(5000));
    assert_eq!(c.member(push).connect_attempts.len(), 1, "never again");
    assert_eq!(c.links_between(push, pull), 0);
    let events = c.take_monitor(push);
    assert_eq!(count(&events, MonitorEventKind::Disconnected), 1);
    assert_eq!(retried(&events), Vec::<u32>::new());
}

#[test]
fn sub_resubscribes_when_the_publisher_restarts() {
    let mut c = Cluster::new(103);
    let ep = "tcp://127.0.0.1:7100";
    let publ = c.add_default(Pub);
    c.bind(publ, ep);
    let sub = c.add_default(Sub);
    c.socket(sub).subscribe(b"a");
    c.connect(sub, ep);
    c.run_until_idle();
    c.send(publ, m(&["a0"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["a0"]);

    c.kill(publ);
    c.run_for(ms(350));
    let publ = c.add_default(Pub);
    c.bind(publ, ep);
    c.run_for(ms(150));
    // The new publisher knows the subscription: it filters at the source.
    assert_eq!(c.send(publ, m(&["a1"])), Ok(Sent::Queued));
    assert_eq!(c.send(publ, m(&["b1"])), Ok(Sent::Dropped));
    assert_eq!(c.send(publ, m(&["a2"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["a1", "a2"]);
}

// ----- heartbeats -----------------------------------------------------------------------

#[test]
fn heartbeat_expiry_closes_only_the_silent_peer() {
    let mut c = Cluster::new(104);
    let router = c.add(
        Router,
        opts(|o| {
            o.heartbeat_ivl = Some(ms(1000));
            o.heartbeat_timeout = Some(ms(3000));
        }),
    );
    c.monitor_all(router);
    let ep = c.bind(router, ANY);
    let dealers: Vec<Node> = (0..3)
        .map(|i| {
            let d = c.add(Dealer, opts(|o| o.routing_id = format!("d{i}").into()));
            c.connect(d, &ep);
            d
        })
        .collect();
    c.run_until_idle();
    c.take_monitor(router);
    let silent = dealers[1];
    let silent_peer = c.peer_between(router, silent).unwrap();
    let t0 = c.now();
    c.silence(silent);
    while count(&c.member(router).monitor, MonitorEventKind::Disconnected) == 0 {
        assert!(c.advance_to_next_timer());
        assert!(
            c.elapsed_since(t0) <= ms(10_000),
            "the silent peer is never dropped"
        );
    }
    // First PING after 1 s, then 3 s without an answer.
    assert_eq!(c.elapsed_since(t0), ms(4000));
    assert!(c.member(router).closed_peers.contains(&silent_peer));
    c.run_for(ms(6000));
    let events = c.take_monitor(router);
    assert_eq!(count(&events, MonitorEventKind::Disconnected), 1);
    // The others still talk, both ways.
    assert_eq!(c.send(router, m(&["d1", "lost"])), Ok(Sent::Dropped));
    for (i, &d) in dealers.iter().enumerate() {
        if d == silent {
            continue;
        }
        assert_eq!(
            c.send(router, m(&[&format!("d{i}"), "ping"])),
            Ok(Sent::Queued)
        );
        c.send(d, m(&["pong"])).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealers[0]), ["ping"]);
    assert_eq!(recv_texts(&mut c, dealers[2]), ["ping"]);
    let mut got = recv_texts(&mut c, router);
    got.sort();
    assert_eq!(got, ["d0|pong", "d2|pong"]);
}

// ----- slow consumers -------------------------------------------------------------------

#[test]
fn a_slow_subscriber_is_bounded_by_sndhwm_while_a_fast_one_gets_everything() {
    const HWM: usize = 100;
    const SIZE: usize = 500;
    const TOTAL: usize = 3000;
    let mut c = Cluster::new(105);
    let publ = c.add(Pub, opts(|o| o.sndhwm = HWM));
    let ep = c.bind(publ, ANY);
    let fast = c.add_default(Sub);
    let slow = c.add(Sub, opts(|o| o.rcvhwm = 10));
    for s in [fast, slow] {
        c.socket(s).subscribe(b"");
        c.connect(s, &ep);
    }
    c.run_until_idle();
    let slow_peer = c.peer_between(publ, slow).unwrap();
    let slow_end = c.peer_between(slow, publ).unwrap();
    let mut received = Vec::new();
    let mut worst = (0, 0);
    for batch in 0..TOTAL / 10 {
        for k in 0..10 {
            let seq = (batch * 10 + k) as u32;
            let mut body = vec![0u8; SIZE];
            body[..4].copy_from_slice(&seq.to_be_bytes());
            assert_eq!(c.send(publ, Message::from(body)), Ok(Sent::Queued));
        }
        c.run_until_idle();
        received.extend(c.recv_all(fast));
        let stats = c.peer_stats(publ, slow_peer).unwrap();
        assert!(stats.queued_out <= HWM, "{stats:?}");
        // Encoded and unwritten: at most SNDHWM messages (and a few control bytes).
        assert!(stats.unsent_bytes <= HWM * (SIZE + 9) + 64, "{stats:?}");
        let reader = c.peer_stats(slow, slow_end).unwrap();
        assert!(reader.queued_in <= 10, "{reader:?}");
        assert!(reader.unread_bytes <= c.max_chunk + SIZE + 9, "{reader:?}");
        worst = worst.max((stats.queued_out, stats.unsent_bytes));
    }
    assert_eq!(worst.0, HWM, "the slow peer did back up to its HWM");
    let seqs: Vec<u32> = received
        .iter()
        .map(|m| u32::from_be_bytes(m.first().unwrap()[..4].try_into().unwrap()))
        .collect();
    assert_eq!(
        seqs,
        (0..TOTAL as u32).collect::<Vec<_>>(),
        "every message, in order"
    );
    // The slow one got what fitted before its queue filled; PUB dropped every later
    // message for it rather than block or grow.
    let mut slow_seqs = Vec::new();
    loop {
        let got = c.recv_all(slow);
        if got.is_empty() {
            break;
        }
        slow_seqs.extend(
            got.iter()
                .map(|m| u32::from_be_bytes(m.first().unwrap()[..4].try_into().unwrap())),
        );
        c.run_until_idle();
    }
    assert!(
        slow_seqs.len() >= HWM && slow_seqs.len() < TOTAL / 2,
        "{}",
        slow_seqs.len()
    );
    assert_eq!(slow_seqs, (0..slow_seqs.len() as u32).collect::<Vec<_>>());
}

// ----- lingering ------------------------------------------------------------------------

/// A PUSH whose PULL does not read: messages stay queued in the PUSH.
fn stalled_push(c: &mut Cluster, linger: Option<Duration>) -> (Node, Node) {
    c.capacity = 4096;
    let pull = c.add(Pull, opts(|o| o.rcvhwm = 1));
    let ep = c.bind(pull, ANY);
    let push = c.add(Push, opts(|o| o.linger = linger));
    c.connect(push, &ep);
    c.run_until_idle();
    for i in 0..20 {
        let mut body = vec![b'.'; 2048];
        body[0] = i;
        c.send(push, Message::from(body)).unwrap();
    }
    c.run_until_idle();
    let peer = c.peer_between(push, pull).unwrap();
    assert!(c.peer_stats(push, peer).unwrap().queued_out > 10);
    (push, pull)
}

fn drain(c: &mut Cluster, pull: Node) -> Vec<u8> {
    let mut got = Vec::new();
    loop {
        c.run_until_idle();
        let batch = c.recv_all(pull);
        if batch.is_empty() {
            return got;
        }
        got.extend(batch.iter().map(|m| m.first().unwrap()[0]));
    }
}

#[test]
fn close_lingers_until_queued_messages_are_written() {
    let mut c = Cluster::new(106);
    let (push, pull) = stalled_push(&mut c, None);
    c.monitor_all(push);
    let now = c.now();
    c.socket(push).close(now);
    c.run_for(ms(60_000));
    assert_eq!(c.member(push).closed_at, None, "lingering forever");
    assert!(matches!(
        c.send(push, m(&["late"])),
        Err(SendError::Closed(_))
    ));
    assert_eq!(drain(&mut c, pull), (0..20).collect::<Vec<u8>>());
    assert!(c.member(push).closed_at.is_some());
    assert!(c.socket(push).is_closed());
    let report = c.socket(push).close_report().expect("closed");
    assert!(report.delivered_all(), "{report}");
    assert_eq!(
        c.member(push).monitor.last().map(|e| e.kind),
        Some(MonitorEventKind::MonitorStopped)
    );
    assert_eq!(c.links_between(push, pull), 0);
}

#[test]
fn linger_zero_closes_at_once_and_a_deadline_cuts_lingering_short() {
    let mut c = Cluster::new(107);
    let (push, pull) = stalled_push(&mut c, Some(Duration::ZERO));
    let now = c.now();
    c.socket(push).close(now);
    c.run_until_idle();
    assert_eq!(c.member(push).closed_at, Some(now), "LINGER 0: at once");
    assert_eq!(c.links_between(push, pull), 0);
    let report = c.socket(push).close_report().expect("closed");
    assert!(!report.delivered_all());
    // Every message was encoded for the stream; the PULL read too little of them.
    assert!(report.unsent_bytes > 10 * 2048, "{report:?}");

    let mut c = Cluster::new(108);
    let (push, pull) = stalled_push(&mut c, Some(ms(250)));
    let now = c.now();
    let queued = c.socket(push).unsent();
    c.socket(push).close(now);
    c.run_until_idle();
    assert_eq!(c.member(push).closed_at, None);
    assert_eq!(c.socket(push).close_report(), None, "still lingering");
    assert!(c.advance_to_next_timer());
    assert_eq!(c.member(push).closed_at, Some(now + ms(250)));
    assert_eq!(
        c.socket(push).poll_timeout(),
        None,
        "a closed socket arms no timer"
    );
    let got = drain(&mut c, pull);
    assert!(got.len() < 20, "the queued rest was dropped: {got:?}");
    assert_eq!(got, (0..got.len() as u8).collect::<Vec<u8>>());
    let report = c.socket(push).close_report().expect("closed");
    assert_eq!(
        report, queued,
        "nothing was written while the PULL did not read"
    );
    assert!(report.unsent_bytes > 10 * 2048, "{report:?}");
    // Whole messages: every one the PULL did not get, those encoded for the stream
    // included (none waited in the peer's queue: the stream took every one encoded).
    assert_eq!(report.unsent_messages, 20 - got.len(), "{report:?}");
    let losses = c.socket(push).close_losses();
    assert_eq!(losses.len(), 1, "{losses:?}");
    assert_eq!(losses[0].messages, 20 - got.len());
    assert!(losses[0].connect);
}

#[test]
fn lingering_keeps_reconnecting_to_deliver_queued_messages() {
    let ep = "tcp://127.0.0.1:7200";
    // (LINGER, when the PULL comes up, delivered?)
    for (linger, up_at, delivered) in [
        (None, 300, true),
        (Some(ms(1000)), 300, true),
        (Some(ms(1000)), 1500, false),
    ] {
        let mut c = Cluster::new(111);
        let push = c.add(Push, opts(|o| o.linger = linger));
        c.connect(push, ep);
        c.run_until_idle();
        for i in 0..4 {
            c.send(push, m(&[&i.to_string()])).unwrap();
        }
        // Another endpoint, with nothing queued for it: it must not hold the close up.
        c.connect(push, "tcp://127.0.0.1:7201");
        let t0 = c.now();
        c.socket(push).close(t0);
        c.run_for(ms(up_at));
        if linger.is_none_or(|l| ms(up_at) < l) {
            assert_eq!(
                c.member(push).closed_at,
                None,
                "linger {linger:?}: still lingering"
            );
        }
        let pull = c.add_default(Pull);
        c.bind(pull, ep);
        c.run_for(ms(2000));
        let got = recv_texts(&mut c, pull);
        let closed = c
            .member(push)
            .closed_at
            .map(|t| t.saturating_duration_since(t0));
        if delivered {
            assert_eq!(got, ["0", "1", "2", "3"], "linger {linger:?}");
            assert_eq!(c.socket(push).close_report(), Some(Default::default()));
        } else {
            assert_eq!(got, Vec::<String>::new(), "linger {linger:?}");
            assert_eq!(closed, Some(ms(1000)), "at the deadline");
            let report = c.socket(push).close_report().expect("closed");
            assert_eq!(
                (report.unsent_messages, report.unsent_bytes),
                (4, 0),
                "four messages never found a connection"
            );
        }
        assert!(closed.is_some(), "linger {linger:?}: closed");
        // Connecting again while closing: only to the endpoint with messages.
        let attempts = &c.member(push).connect_attempts;
        let idle = attempts
            .iter()
            .filter(|(_, e)| e.ends_with(":7201"))
            .count();
        assert_eq!(idle, 1, "linger {linger:?}");
    }
}

#[test]
fn messages_received_before_a_peer_closes_are_still_delivered() {
    let mut c = Cluster::new(109);
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    let push = c.add_default(Push);
    c.connect(push, &ep);
    c.run_until_idle();
    for i in 0..5 {
        c.send(push, m(&[&i.to_string()])).unwrap();
    }
    let now = c.now();
    c.socket(push).close(now);
    c.run_until_idle();
    assert!(c.member(push).closed_at.is_some());
    assert_eq!(
        c.links_between(push, pull),
        0,
        "the PULL has seen the end of stream"
    );
    assert_eq!(recv_texts(&mut c, pull), ["0", "1", "2", "3", "4"]);

    // A reply whose sender hangs up right after sending it still reaches the REQ.
    let req = c.add_default(Req);
    let ep = c.bind(req, ANY);
    let rep = c.add_default(Rep);
    c.connect(rep, &ep);
    c.run_until_idle();
    c.send(req, m(&["q"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, rep), ["q"]);
    c.send(rep, m(&["a"])).unwrap();
    let now = c.now();
    c.socket(rep).close(now);
    c.run_until_idle();
    assert_eq!(c.links_between(req, rep), 0);
    assert!(c.socket(req).can_recv());
    assert_eq!(recv_texts(&mut c, req), ["a"]);
    assert!(!c.socket(req).can_recv());
}

// ----- unbind ---------------------------------------------------------------------------

#[test]
fn unbind_closes_the_connections_accepted_on_that_endpoint_only() {
    let mut c = Cluster::new(120);
    let pull = c.add_default(Pull);
    let first = c.bind(pull, "tcp://127.0.0.1:7020");
    let second = c.bind(pull, "tcp://127.0.0.1:7021");
    let (a, b) = (c.add_default(Push), c.add_default(Push));
    c.monitor_all(a);
    c.connect(a, &first);
    c.connect(b, &second);
    c.run_until_idle();
    c.send(a, m(&["from a"])).unwrap();
    c.send(b, m(&["from b"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, pull), ["from a", "from b"]);
    c.take_monitor(a);

    // A message from a received but unread when the endpoint goes stays readable.
    c.send(a, m(&["late"])).unwrap();
    c.run_until_idle();
    let now = c.now();
    assert!(c.socket(pull).unbind(&first, now));
    c.run_until_idle();
    assert_eq!(c.links_between(a, pull), 0, "a's connection was closed");
    assert_eq!(
        c.links_between(b, pull),
        1,
        "b came through another endpoint"
    );
    assert_eq!(c.socket(pull).peers().count(), 1);
    assert_eq!(count(&c.take_monitor(a), MonitorEventKind::Disconnected), 1);
    assert_eq!(recv_texts(&mut c, pull), ["late"]);

    // a keeps trying to reconnect, in vain: nothing listens there any more.
    c.run_for(ms(500));
    assert_eq!(c.links_between(a, pull), 0);
    assert!(!retried(&c.take_monitor(a)).is_empty());
    c.send(b, m(&["still"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, pull), ["still"]);
    assert!(!c.socket(pull).unbind(&first, now), "unbound already");
}

#[test]
fn a_bound_push_has_nobody_to_send_to_after_unbind() {
    let mut c = Cluster::new(121);
    let push = c.add_default(Push);
    let ep = c.bind(push, ANY);
    let pull = c.add_default(Pull);
    c.connect(pull, &ep);
    c.run_until_idle();
    c.send(push, m(&["ABC"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, pull), ["ABC"]);
    // Queued for the peer, not yet written, when the endpoint goes: discarded.
    c.send(push, m(&["lost"])).unwrap();
    let now = c.now();
    assert!(c.socket(push).unbind(&ep, now));
    c.run_until_idle();
    assert!(matches!(
        c.send(push, m(&["ABC"])),
        Err(SendError::WouldBlock(_))
    ));
    assert_eq!(c.socket(push).peers().count(), 0);
    assert!(recv_texts(&mut c, pull).is_empty());
}

/// As libzmq: a connection lost with reconnecting off (RECONNECT_IVL -1) takes its connect
/// endpoint with it, so the same endpoint can be connected again.
#[test]
fn a_lost_connection_that_will_not_reconnect_ends_its_endpoint() {
    let mut c = Cluster::new(122);
    let ep = "tcp://127.0.0.1:7022";
    let sb = c.add_default(Pair);
    c.bind(sb, ep);
    let sc = c.add(Pair, opts(|o| o.reconnect_ivl = None));
    c.connect(sc, ep);
    c.run_until_idle();
    c.send(sc, m(&["ping"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sb), ["ping"]);

    let now = c.now();
    assert!(c.socket(sb).unbind(ep, now));
    c.run_until_idle();
    assert_eq!(c.socket(sc).peers().count(), 0, "the peer went with it");
    let now = c.now();
    assert!(
        !c.socket(sc).disconnect(ep, now),
        "the connect endpoint is gone"
    );
    // Bound again: sc does not come back by itself.
    c.bind(sb, ep);
    c.run_for(ms(500));
    assert_eq!(c.links_between(sb, sc), 0);
    assert!(c.send(sb, m(&["lost"])).is_err(), "sb has no peer");
    // Connected anew, the PAIR takes the new connection.
    c.connect(sc, ep);
    c.run_until_idle();
    c.send(sb, m(&["pong"])).unwrap();
    c.send(sc, m(&["ping"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sc), ["pong"]);
    assert_eq!(recv_texts(&mut c, sb), ["ping"]);

    // With reconnecting on, the endpoint stays and is retried.
    let ep = "tcp://127.0.0.1:7023";
    let sb = c.add_default(Pair);
    c.bind(sb, ep);
    let sc = c.add_default(Pair);
    c.connect(sc, ep);
    c.run_until_idle();
    let now = c.now();
    assert!(c.socket(sb).unbind(ep, now));
    c.run_until_idle();
    assert_eq!(c.socket(sc).peers().count(), 1, "its queue waits");
    c.bind(sb, ep);
    c.run_for(ms(500));
    assert_eq!(c.links_between(sb, sc), 1, "reconnected");
}

// ----- monitor events -------------------------------------------------------------------

#[test]
fn monitor_events_carry_libzmq_names_and_values() {
    let mut c = Cluster::new(110);
    let rep = c.add_default(Rep);
    c.monitor_all(rep);
    let ep = c.bind(rep, ANY);
    let req = c.add_default(Req);
    c.monitor_all(req);
    c.connect(req, &ep);
    c.run_until_idle();
    let seen = |events: &[MonitorEvent]| -> Vec<(&'static str, u32, u32)> {
        events
            .iter()
            .map(|e| (e.kind.name(), e.kind.value(), e.value))
            .collect()
    };
    let rep_events = c.take_monitor(rep);
    assert_eq!(
        seen(&rep_events),
        [
            ("LISTENING", 0x0008, 0),
            ("ACCEPTED", 0x0020, 0),
            ("HANDSHAKE_SUCCEEDED", 0x1000, 0),
        ]
    );
    let req_events = c.take_monitor(req);
    assert_eq!(
        seen(&req_events),
        [
            ("CONNECT_DELAYED", 0x0002, 0),
            ("CONNECTED", 0x0001, 0),
            ("HANDSHAKE_SUCCEEDED", 0x1000, 0),
        ]
    );
    for e in rep_events.iter().chain(&req_events) {
        assert_eq!(e.endpoint, ep, "{e:?}");
        // v1 has no peer address: it round-trips without it.
        let [a, b] = e.to_v1_frames();
        let without_peer = e.clone().with_peer_address("");
        assert_eq!(MonitorEvent::from_v1_frames(&a, &b), Some(without_peer));
    }
    // The connection events name the other side with the address the harness gave: the
    // REP sees the REQ's source port, the REQ the address it connected to.
    let peers = |events: &[MonitorEvent]| -> Vec<String> {
        events.iter().map(|e| e.peer_address.clone()).collect()
    };
    let client = format!("127.0.0.1:{FIRST_EPHEMERAL_PORT}");
    let listener = ep.strip_prefix("tcp://").unwrap().to_string();
    assert!(listener.starts_with("127.0.0.1:"), "{listener}");
    assert_ne!(listener, client);
    assert_eq!(peers(&rep_events), ["", &client, &client]);
    assert_eq!(peers(&req_events), ["", &listener, &listener]);

    // The REP goes away: the REQ sees the loss and schedules a retry.
    let now = c.now();
    c.socket(rep).close(now);
    c.run_until_idle();
    let rep_events = c.take_monitor(rep);
    assert_eq!(
        seen(&rep_events),
        [("CLOSED", 0x0080, 0), ("MONITOR_STOPPED", 0x0400, 0)]
    );
    assert_eq!(peers(&rep_events), ["", ""]);
    let req_events = c.take_monitor(req);
    assert_eq!(
        seen(&req_events),
        [
            ("DISCONNECTED", 0x0200, 0),
            ("CONNECT_RETRIED", 0x0004, 100)
        ]
    );
    assert_eq!(peers(&req_events), [&listener, ""]);
    assert!(c.advance_to_next_timer());
    assert_eq!(
        seen(&c.take_monitor(req)),
        [
            ("CONNECT_DELAYED", 0x0002, 0),
            ("CONNECT_RETRIED", 0x0004, 100)
        ]
    );
}

#[test]
fn an_error_with_a_zap_status_is_an_authentication_failure() {
    use zmtp_proto::codec::{Greeting, Mechanism, Version};
    use zmtp_proto::socket::{Command, Options, Socket};
    use zmtp_proto::Instant;
    for (error, expected) in [
        (
            &b"\x04\x0a\x05ERROR\x03400"[..],
            (MonitorEventKind::HandshakeFailedAuth, 400),
        ),
        (
            &b"\x04\x0b\x05ERROR\x04nope"[..],
            (MonitorEventKind::HandshakeFailedNoDetail, 0),
        ),
    ] {
        let mut s = Socket::new(Dealer, Options::default(), 1).unwrap();
        s.set_monitor(0xFFFF);
        let ep = s.bind("tcp://127.0.0.1:5000").unwrap();
        let now = Instant::ZERO;
        let peer = s.handle_accepted(ep, "127.0.0.1", now).unwrap();
        let mut greeting = [0u8; 64];
        Greeting {
            version: Version::V3_1,
            mechanism: Mechanism::NULL,
            as_server: false,
        }
        .emit(&mut greeting)
        .unwrap();
        s.handle_received(peer, now, &greeting);
        s.handle_received(peer, now, error);
        let commands: Vec<Command> = std::iter::from_fn(|| s.poll_command()).collect();
        let failures: Vec<(MonitorEventKind, u32, String)> =
            std::iter::from_fn(|| s.poll_monitor())
                .filter(|m| m.kind.name().starts_with("HANDSHAKE_FAILED"))
                .map(|m| (m.kind, m.value, m.peer_address))
                .collect();
        // The peer address is kept as the driver gave it (here a bare IP).
        assert_eq!(
            failures,
            [(expected.0, expected.1, "127.0.0.1".to_string())]
        );
        assert!(commands.contains(&Command::ClosePeer { peer }));
    }
}

#[test]
fn a_stream_failed_below_zmtp_says_why_in_its_monitor_events() {
    use zmtp_proto::socket::{Options, Socket};
    use zmtp_proto::Instant;
    let reason = "TLS: invalid peer certificate: UnknownIssuer";
    let mut s = Socket::new(Dealer, Options::default(), 1).unwrap();
    s.set_monitor(0xFFFF);
    let ep = s.connect("wss://127.0.0.1:5000/").unwrap();
    let now = Instant::ZERO;
    while s.poll_command().is_some() {}
    let peer = s
        .handle_connected(ep, "127.0.0.1:5000", now)
        .expect("a peer");
    s.handle_stream_failed(peer, now, reason);
    let events: Vec<(MonitorEventKind, Option<String>)> = std::iter::from_fn(|| s.poll_monitor())
        .filter(|m| {
            !matches!(
                m.kind,
                MonitorEventKind::Connected | MonitorEventKind::ConnectDelayed
            )
        })
        .map(|m| (m.kind, m.reason))
        .collect();
    // Before the handshake completed: a handshake failure, then the disconnect, both
    // saying why; the retry after them is about the endpoint and carries no reason.
    assert_eq!(
        events,
        [
            (
                MonitorEventKind::HandshakeFailedNoDetail,
                Some(reason.to_string())
            ),
            (MonitorEventKind::Disconnected, Some(reason.to_string())),
            (MonitorEventKind::ConnectRetried, None),
        ]
    );
    // It reconnects, as after any stream that ended: at the retry's deadline.
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_millis(100)));

    // A stream that merely closed says nothing more.
    let mut s = Socket::new(Dealer, Options::default(), 1).unwrap();
    s.set_monitor(0xFFFF);
    let ep = s.connect("tcp://127.0.0.1:5000").unwrap();
    let peer = s.handle_connected(ep, "127.0.0.1:5000", now).unwrap();
    s.handle_closed(peer, now);
    assert!(std::iter::from_fn(|| s.poll_monitor()).all(|m| m.reason.is_none()));
}
