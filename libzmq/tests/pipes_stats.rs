//! `zmq_socket_monitor_pipes_stats` and the v2 `ZMQ_EVENT_PIPES_STATS` event: one event per
//! peer, with the messages queued to send to it and those received from it, unread.

use zmq::ctx::*;
use zmq::monitor::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

const PIPES_STATS: u64 = 0x1_0000;

#[test]
fn pipes_stats_reports_each_peer_on_a_v2_monitor() {
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    set_int(push, LINGER, 0);
    assert_eq!(
        (
            zmq_socket_monitor_pipes_stats(std::ptr::null_mut()),
            errno()
        ),
        (-1, libc::ENOTSOCK)
    );
    assert_eq!(
        (zmq_socket_monitor_pipes_stats(push), errno()),
        (-1, libc::EINVAL),
        "no monitor"
    );
    let rc = unsafe {
        zmq_socket_monitor_versioned(push, c"inproc://stats-mon".as_ptr(), PIPES_STATS, 2, 0)
    };
    assert_eq!(rc, 0);
    assert_eq!(
        (zmq_socket_monitor_pipes_stats(push), errno()),
        (-1, libc::EAGAIN),
        "no peer yet"
    );
    let mon = zmq_socket(ctx, 0);
    set_int(mon, LINGER, 0);
    set_int(mon, RCVTIMEO, 5000);
    assert_eq!(
        unsafe { zmq_connect(mon, c"inproc://stats-mon".as_ptr()) },
        0
    );

    let endpoint = bind_at(push, c"ipc://*");
    let pull = zmq_socket(ctx, 7);
    set_int(pull, LINGER, 0);
    set_int(pull, RCVTIMEO, 5000);
    assert_eq!(unsafe { zmq_connect(pull, endpoint.as_ptr()) }, 0);
    // One message through: the peer is up.
    assert_eq!(unsafe { zmq_send(push, b"x".as_ptr().cast(), 1, 0) }, 1);
    let mut buf = [0u8; 8];
    assert_eq!(unsafe { zmq_recv(pull, buf.as_mut_ptr().cast(), 8, 0) }, 1);

    assert_eq!(zmq_socket_monitor_pipes_stats(push), 0);
    let frames = recv_frames(mon);
    assert_eq!(frames.len(), 6, "event, count, two values, local, remote");
    assert_eq!(u64_of(&frames[0]), PIPES_STATS);
    assert_eq!(u64_of(&frames[1]), 2);
    assert_eq!(
        (u64_of(&frames[2]), u64_of(&frames[3])),
        (0, 0),
        "all delivered"
    );
    assert_eq!(frames[4], endpoint.to_bytes());
    assert!(frames[5].starts_with(b"ipc://"), "{:?}", frames[5]);

    assert_eq!(zmq_close(pull), 0);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_close(mon), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}
