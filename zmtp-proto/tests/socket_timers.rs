//! The socket's timers at scale: every peer's deadline and every reconnect live in one
//! ordered set, so thousands of idle peers cost nothing per `poll_timeout` or
//! `handle_timeout`, and a deadline fires exactly its own peer.

use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::{Command, Options, PeerId, Socket};
use zmtp_proto::{Instant, SocketType};

const HANDSHAKE: Duration = Duration::from_secs(1);

/// A ROUTER with `n` accepted peers that never speak, the `i`-th accepted at `i` ms.
fn silent_peers(n: u64) -> (Socket, Vec<PeerId>) {
    let mut opts = Options::default();
    opts.handshake_ivl = Some(HANDSHAKE);
    let mut s = Socket::new(SocketType::Router, opts, 7).unwrap();
    let ep = s.bind("tcp://127.0.0.1:5555").unwrap();
    s.handle_listening(ep, "tcp://127.0.0.1:5555");
    let peers = (0..n)
        .map(|i| {
            s.handle_accepted(ep, "127.0.0.1", Instant::from_millis(i))
                .unwrap()
        })
        .collect();
    while s.poll_command().is_some() {}
    (s, peers)
}

fn closed_peers(s: &mut Socket) -> Vec<PeerId> {
    std::iter::from_fn(|| s.poll_command())
        .filter_map(|c| match c {
            Command::ClosePeer { peer } => Some(peer),
            _ => None,
        })
        .collect()
}

#[test]
fn handshake_deadlines_fire_in_order_and_only_when_due() {
    let (mut s, peers) = silent_peers(1000);
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(1000)));
    // Just before the first deadline: nothing.
    s.handle_timeout(Instant::from_millis(999));
    assert!(closed_peers(&mut s).is_empty());
    // 500 ms later: exactly the 501 peers accepted in the first 501 ms are closed, in
    // the order of their deadlines.
    s.handle_timeout(Instant::from_millis(1500));
    assert_eq!(closed_peers(&mut s), peers[..501].to_vec());
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(1501)));
    assert_eq!(s.peers().count(), 499);
    // A peer that ended otherwise takes its deadline with it.
    s.handle_closed(peers[501], Instant::from_millis(1500));
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(1502)));
    s.handle_timeout(Instant::from_millis(5000));
    assert_eq!(closed_peers(&mut s), peers[502..].to_vec());
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn reconnects_and_peers_share_one_timeline() {
    let mut opts = Options::default();
    opts.handshake_ivl = Some(HANDSHAKE);
    opts.reconnect_ivl = Some(Duration::from_millis(300));
    let mut s = Socket::new(SocketType::Dealer, opts, 7).unwrap();
    let ep = s.connect("tcp://127.0.0.1:5556").unwrap();
    while s.poll_command().is_some() {}
    s.handle_connect_failed(ep, Instant::from_millis(100));
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(400)));
    s.handle_timeout(Instant::from_millis(400));
    let commands: Vec<Command> = std::iter::from_fn(|| s.poll_command()).collect();
    assert!(
        matches!(commands[..], [Command::Connect { endpoint, .. }] if endpoint == ep),
        "{commands:?}"
    );
    // Connected: the stream's handshake deadline replaces the reconnect.
    let peer = s
        .handle_connected(ep, "127.0.0.1", Instant::from_millis(450))
        .unwrap();
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(1450)));
    s.handle_timeout(Instant::from_millis(1450));
    assert_eq!(closed_peers(&mut s), vec![peer]);
    // The handshake timed out: a reconnect is scheduled again.
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(1750)));
    // Disconnecting cancels it.
    assert!(s.disconnect("tcp://127.0.0.1:5556", Instant::from_millis(1500)));
    assert_eq!(s.poll_timeout(), None);
}

/// A connect given up before it answered (a driver handing the socket over to another)
/// is tried again at once, where a failed one waits for the reconnect interval; a closed
/// socket with nothing queued for the endpoint does not try again.
#[test]
fn an_abandoned_connect_is_tried_again_at_once() {
    let mut opts = Options::default();
    opts.reconnect_ivl = Some(Duration::from_millis(300));
    let mut s = Socket::new(SocketType::Dealer, opts, 7).unwrap();
    let ep = s.connect("tcp://127.0.0.1:5556").unwrap();
    while s.poll_command().is_some() {}
    s.handle_connect_abandoned(ep, Instant::from_millis(100));
    assert_eq!(s.poll_timeout(), Some(Instant::from_millis(100)));
    s.handle_timeout(Instant::from_millis(100));
    let commands: Vec<Command> = std::iter::from_fn(|| s.poll_command()).collect();
    assert!(
        matches!(commands[..], [Command::Connect { endpoint, .. }] if endpoint == ep),
        "{commands:?}"
    );
    // Closed with nothing queued: the endpoint is done with, abandoned or not.
    s.close(Instant::from_millis(150));
    s.handle_connect_abandoned(ep, Instant::from_millis(160));
    assert_eq!(s.poll_timeout(), None);
}

/// The cost of one `poll_timeout` and one idle `handle_timeout`, in ns, over `rounds`.
fn idle_cost(s: &mut Socket, rounds: u32) -> f64 {
    let now = Instant::from_millis(10);
    let start = StdInstant::now();
    for _ in 0..rounds {
        std::hint::black_box(s.poll_timeout());
        s.handle_timeout(std::hint::black_box(now));
    }
    start.elapsed().as_nanos() as f64 / f64::from(rounds)
}

#[test]
fn idle_peers_cost_nothing_per_timer_call() {
    let (mut few, _) = silent_peers(10);
    let (mut many, _) = silent_peers(10_000);
    // Warm up, then take the better of three runs of each against noise.
    idle_cost(&mut few, 1_000);
    idle_cost(&mut many, 1_000);
    let best = |s: &mut Socket| {
        (0..3)
            .map(|_| idle_cost(s, 20_000))
            .fold(f64::MAX, f64::min)
    };
    let (small, large) = (best(&mut few), best(&mut many));
    eprintln!(
        "poll_timeout + idle handle_timeout: 10 peers {small:.0} ns, 10,000 peers {large:.0} ns"
    );
    // A scan of every peer would make 10,000 peers about 1,000 times as slow as 10; an
    // ordered set makes them a few levels deeper.
    assert!(
        large < small * 20.0 + 200.0,
        "10 peers: {small:.0} ns, 10,000 peers: {large:.0} ns per call pair"
    );
    assert!(closed_peers(&mut many).is_empty());
}
