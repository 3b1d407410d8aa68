//! Monitors as libzmq's behave: the v2 events of a connection we opened name our end as
//! the local address and the endpoint as the remote one; a monitor whose socket is
//! connected right after `zmq_socket_monitor_versioned` (a SUB to its PUB, here) gets the
//! first events too; and the events of a close (CLOSED for an endpoint listened on) come
//! before `MONITOR_STOPPED`.

use std::ffi::c_void;

use zmq::ctx::*;
use zmq::monitor::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

const CONNECTED: u64 = 0x0001;
const CONNECT_DELAYED: u64 = 0x0002;
const LISTENING: u64 = 0x0008;
const CLOSED: u64 = 0x0080;
const MONITOR_STOPPED: u64 = 0x0400;
const HANDSHAKE_SUCCEEDED: u64 = 0x1000;
const ALL: u64 = 0xFFFF;

/// The next v2 event on `mon`: its kind, local and remote addresses.
fn event_v2(mon: *mut c_void) -> (u64, String, String) {
    let frames = recv_frames(mon);
    let n = frames.len();
    let text = |f: &Vec<u8>| String::from_utf8(f.clone()).unwrap();
    (
        u64_of(&frames[0]),
        text(&frames[n - 2]),
        text(&frames[n - 1]),
    )
}

/// The next v1 event on `mon`: its kind.
fn event_v1(mon: *mut c_void) -> u64 {
    let frames = recv_frames(mon);
    u64::from(u16::from_ne_bytes([frames[0][0], frames[0][1]]))
}

fn socket(ctx: *mut c_void, ty: i32) -> *mut c_void {
    let s = zmq_socket(ctx, ty);
    assert!(!s.is_null());
    set_int(s, LINGER, 0);
    set_int(s, RCVTIMEO, 5000);
    s
}

#[test]
fn a_connecting_sockets_v2_events_name_its_own_end_and_reach_a_sub_connected_at_once() {
    let ctx = zmq_ctx_new();
    let server = socket(ctx, 5);
    let endpoint = bind_at(server, c"tcp://127.0.0.1:*");
    let client = socket(ctx, 5);
    let rc =
        unsafe { zmq_socket_monitor_versioned(client, c"inproc://v2-client".as_ptr(), ALL, 2, 1) };
    assert_eq!(rc, 0);
    // The SUB connects (and subscribes) only now; the connect below raises events at once.
    let mon = socket(ctx, 2);
    assert_eq!(
        unsafe { zmq_setsockopt(mon, SUBSCRIBE, std::ptr::null(), 0) },
        0
    );
    assert_eq!(
        unsafe { zmq_connect(mon, c"inproc://v2-client".as_ptr()) },
        0
    );
    assert_eq!(unsafe { zmq_connect(client, endpoint.as_ptr()) }, 0);
    assert_eq!(unsafe { zmq_send(client, b"x".as_ptr().cast(), 1, 0) }, 1);
    let mut buf = [0u8; 4];
    assert_eq!(
        unsafe { zmq_recv(server, buf.as_mut_ptr().cast(), 4, 0) },
        1
    );

    let endpoint = endpoint.to_str().unwrap().to_string();
    // libzmq names a connect endpoint's own events from the remote end only.
    assert_eq!(
        event_v2(mon),
        (CONNECT_DELAYED, String::new(), endpoint.clone())
    );
    let (kind, local, remote) = event_v2(mon);
    assert_eq!(kind, CONNECTED);
    assert_eq!(remote, endpoint);
    assert!(
        local.starts_with("tcp://127.0.0.1:") && local != remote,
        "{local}"
    );
    assert_eq!(event_v2(mon), (HANDSHAKE_SUCCEEDED, local.clone(), remote));
    // The server saw the same connection from its end.
    assert_eq!(zmq_close(client), 0);
    assert_eq!(event_v2(mon).0, MONITOR_STOPPED);
    for s in [mon, server] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn a_closed_listeners_closed_event_comes_before_monitor_stopped() {
    let ctx = zmq_ctx_new();
    for round in 0..5 {
        let server = socket(ctx, 5);
        let addr = format!("inproc://v1-server-{round}\0");
        let rc = unsafe { zmq_socket_monitor(server, addr.as_ptr().cast(), ALL as i32) };
        assert_eq!(rc, 0);
        let mon = socket(ctx, 0);
        assert_eq!(unsafe { zmq_connect(mon, addr.as_ptr().cast()) }, 0);
        bind_at(server, c"tcp://127.0.0.1:*");
        assert_eq!(zmq_close(server), 0);
        let kinds = [event_v1(mon), event_v1(mon), event_v1(mon)];
        assert_eq!(kinds, [LISTENING, CLOSED, MONITOR_STOPPED], "round {round}");
        assert_eq!(zmq_close(mon), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}
