//! `Socket::monitor_pipes_stats` (libzmq's `zmq_socket_monitor_pipes_stats`): a
//! PIPES_STATS monitor event per routable peer with its queue sizes, through the
//! in-memory cluster.

use zmtp_proto::socket::{Message, MonitorEventKind, PipesStatsError, QueueCounts, Sent};
use zmtp_proto::SocketType::{Pull, Push};
use zmtp_testkit::cluster::Cluster;
use zmtp_testkit::message::opts;

const PIPES_STATS: u32 = 0x1_0000;

#[test]
fn each_peer_reports_its_queues_in_the_order_the_peers_came() {
    let mut c = Cluster::new(7);
    c.capacity = 2048;
    let push = c.add(Push, opts(|o| o.sndhwm = 10));
    let busy = c.add(Pull, opts(|o| o.rcvhwm = 1));
    let idle = c.add_default(Pull);
    let busy_ep = c.bind(busy, "tcp://127.0.0.1:*");
    let idle_ep = c.bind(idle, "tcp://127.0.0.1:*");

    assert_eq!(
        c.socket(push).monitor_pipes_stats(),
        Err(PipesStatsError::NotMonitored),
        "no monitor takes PIPES_STATS"
    );
    c.socket(push).set_monitor(PIPES_STATS);
    assert_eq!(
        c.socket(push).monitor_pipes_stats(),
        Err(PipesStatsError::NoPeers)
    );

    c.connect(push, &busy_ep);
    c.run_until_idle();
    c.connect(push, &idle_ep);
    c.run_until_idle();
    // Round-robin: half the messages go to each PULL; the busy one's RCVHWM of 1 and the
    // small in-flight capacity keep most of its share queued at the PUSH.
    for i in 0..12u8 {
        let body = vec![i; 1024];
        assert_eq!(c.send(push, Message::from(body)), Ok(Sent::Queued));
    }
    c.run_until_idle();
    let _ = c.recv_all(idle);
    c.run_until_idle();
    let busy_peer = c.peer_between(push, busy).unwrap();
    let queued = c.peer_stats(push, busy_peer).unwrap().queued_out as u64;
    assert!(queued > 0, "the busy peer has messages waiting");

    c.take_monitor(push);
    assert_eq!(c.socket(push).monitor_pipes_stats(), Ok(2));
    c.run_until_idle();
    let events = c.take_monitor(push);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events
        .iter()
        .all(|e| e.kind == MonitorEventKind::PipesStats));
    assert_eq!(events[0].endpoint, busy_ep);
    assert_eq!(events[1].endpoint, idle_ep);
    assert!(!events[0].peer_address.is_empty(), "names the peer");
    assert_eq!(
        events[0].queues,
        Some(QueueCounts {
            outbound: queued,
            inbound: 0
        })
    );
    assert_eq!(events[1].queues, Some(QueueCounts::default()), "drained");
}
