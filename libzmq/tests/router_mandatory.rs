//! `ZMQ_ROUTER_MANDATORY` through the C API: a peer at its SNDHWM refuses the message on
//! its routing-id frame, as libzmq's does, never on a later frame.

use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use zmq::ctx::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

fn send(s: *mut c_void, body: &[u8], flags: c_int) -> c_int {
    unsafe { zmq_send(s, body.as_ptr().cast(), body.len(), flags) }
}

#[test]
fn a_full_peer_refuses_on_the_routing_id_frame() {
    let ctx = zmq_ctx_new();
    let router = zmq_socket(ctx, 6);
    let dealer = zmq_socket(ctx, 5);
    set_int(router, ROUTER_MANDATORY, 1);
    set_int(router, SNDHWM, 1);
    set_int(router, LINGER, 0);
    set_int(dealer, RCVHWM, 1);
    set_int(dealer, LINGER, 0);
    set_int(router, RCVTIMEO, 5000);
    let endpoint = bind_at(router, c"tcp://127.0.0.1:*");
    let rc = unsafe { zmq_setsockopt(dealer, ROUTING_ID, b"X".as_ptr().cast(), 1) };
    assert_eq!(rc, 0);
    assert_eq!(unsafe { zmq_connect(dealer, endpoint.as_ptr()) }, 0);
    assert_eq!(send(dealer, b"Hello", 0), 5);
    let mut id = [0u8; 8];
    let n = unsafe { zmq_recv(router, id.as_mut_ptr().cast(), id.len(), 0) };
    assert_eq!((n, id[0]), (1, b'X'), "the dealer's routing id");

    // The dealer never reads: the pipeline fills (the kernel's buffers, then the peer's
    // queue), and the refusal comes on a routing-id frame.
    let body = vec![0u8; 65536];
    let mut sent = 0;
    let refused_at = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            Instant::now() < refused_at,
            "never refused after {sent} messages"
        );
        let rc = send(router, b"X", SNDMORE | DONTWAIT);
        if rc == -1 {
            assert_eq!(errno(), libc::EAGAIN, "the routing-id frame");
            break;
        }
        assert_eq!(rc, 1);
        // Its body is taken whole: the room was checked on the frame before.
        assert_eq!(
            send(router, &body, DONTWAIT),
            body.len() as c_int,
            "errno {}",
            errno()
        );
        sent += 1;
    }
    assert!(
        sent < 1000,
        "{sent} messages of 64 KiB taken by a peer at HWM 1"
    );

    // Blocking, the routing-id frame waits SNDTIMEO, then EAGAIN.
    set_int(router, SNDTIMEO, 100);
    let start = Instant::now();
    assert_eq!(send(router, b"X", SNDMORE), -1);
    assert_eq!(errno(), libc::EAGAIN);
    assert!(
        start.elapsed() >= Duration::from_millis(90),
        "{:?}",
        start.elapsed()
    );
    // An unknown peer is still refused at once, whatever the others' state.
    assert_eq!(send(router, b"nobody", SNDMORE | DONTWAIT), -1);
    assert_eq!(errno(), libc::EHOSTUNREACH);

    for s in [router, dealer] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}
