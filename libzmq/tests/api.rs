//! The C API at work through its Rust entry points: `inproc://` endpoints, the socket
//! monitor, multipart messages, ROUTER envelopes, PUB/SUB, and polling.

use std::ffi::{c_int, c_void, CStr};
use std::ptr::null_mut;

use zmq::ctx::*;
use zmq::monitor::*;
use zmq::msg::*;
use zmq::options::*;
use zmq::socket::*;

fn set_int(s: *mut c_void, option: c_int, value: c_int) {
    let rc = unsafe { zmq_setsockopt(s, option, (&value as *const c_int).cast(), 4) };
    assert_eq!(
        rc,
        0,
        "setsockopt {option}: errno {}",
        zmq::error::zmq_errno()
    );
}

fn send(s: *mut c_void, body: &[u8], flags: c_int) {
    let rc = unsafe { zmq_send(s, body.as_ptr().cast(), body.len(), flags) };
    assert_eq!(
        rc,
        body.len() as c_int,
        "send: errno {}",
        zmq::error::zmq_errno()
    );
}

/// One frame and whether more follow.
fn recv(s: *mut c_void) -> (Vec<u8>, bool) {
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    assert_eq!(zmq_msg_init(m), 0);
    let n = zmq_msg_recv(m, s, 0);
    assert!(n >= 0, "recv: errno {}", zmq::error::zmq_errno());
    let body = unsafe { std::slice::from_raw_parts(zmq_msg_data(m).cast::<u8>(), zmq_msg_size(m)) }
        .to_vec();
    let more = zmq_msg_more(m) == 1;
    assert_eq!(zmq_msg_close(m), 0);
    (body, more)
}

fn last_endpoint(s: *mut c_void) -> String {
    let mut buf = [0u8; 256];
    let mut len = buf.len();
    let rc = unsafe { zmq_getsockopt(s, LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!(rc, 0);
    CStr::from_bytes_with_nul(&buf[..len])
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn inproc_pair_and_names_per_context() {
    let ctx = zmq_ctx_new();
    let other = zmq_ctx_new();
    let a = zmq_socket(ctx, 0);
    let b = zmq_socket(ctx, 0);
    let c = zmq_socket(other, 0);
    for s in [a, b, c] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    unsafe {
        assert_eq!(zmq_bind(a, c"inproc://a-pair".as_ptr()), 0);
        // Another context has its own names.
        assert_eq!(zmq_bind(c, c"inproc://a-pair".as_ptr()), 0);
        assert_eq!(zmq_connect(b, c"inproc://a-pair".as_ptr()), 0);
    }
    assert_eq!(last_endpoint(a), "inproc://a-pair");
    send(b, b"one", SNDMORE);
    send(b, b"two", 0);
    assert_eq!(recv(a), (b"one".to_vec(), true));
    assert_eq!(recv(a), (b"two".to_vec(), false));
    // A name in use is refused; an empty one is invalid.
    let d = zmq_socket(ctx, 0);
    assert_eq!(unsafe { zmq_bind(d, c"inproc://a-pair".as_ptr()) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EADDRINUSE);
    assert_eq!(unsafe { zmq_bind(d, c"inproc://".as_ptr()) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EINVAL);
    for s in [a, b, d] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_close(c), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
    assert_eq!(zmq_ctx_term(other), 0);
}

/// The next v1 monitor event: (event, value, endpoint).
fn event(mon: *mut c_void) -> (u16, u32, String) {
    let (first, more) = recv(mon);
    assert!(more && first.len() == 6, "{first:?}");
    let (endpoint, more) = recv(mon);
    assert!(!more);
    (
        u16::from_ne_bytes([first[0], first[1]]),
        u32::from_ne_bytes([first[2], first[3], first[4], first[5]]),
        String::from_utf8(endpoint).unwrap(),
    )
}

#[test]
fn monitor_events_in_libzmq_format() {
    let ctx = zmq_ctx_new();
    let rep = zmq_socket(ctx, 4);
    let rc = unsafe { zmq_socket_monitor(rep, c"inproc://monitor-rep".as_ptr(), 0xFFFF) };
    assert_eq!(rc, 0);
    // Only inproc endpoints.
    let rc = unsafe { zmq_socket_monitor(rep, c"tcp://127.0.0.1:*".as_ptr(), 0xFFFF) };
    assert_eq!((rc, zmq::error::zmq_errno()), (-1, libc::EPROTONOSUPPORT));
    let rc = unsafe { zmq_socket_monitor(rep, c"inproc://monitor-rep".as_ptr(), 0xFFFF) };
    assert_eq!(rc, 0);
    let mon = zmq_socket(ctx, 0);
    set_int(mon, RCVTIMEO, 5000);
    assert_eq!(
        unsafe { zmq_connect(mon, c"inproc://monitor-rep".as_ptr()) },
        0
    );
    assert_eq!(unsafe { zmq_bind(rep, c"tcp://127.0.0.1:*".as_ptr()) }, 0);
    let endpoint = last_endpoint(rep);
    let (kind, _, at) = event(mon);
    assert_eq!(
        (kind, at.as_str()),
        (0x0008, endpoint.as_str()),
        "LISTENING first"
    );
    let req = zmq_socket(ctx, 3);
    set_int(req, LINGER, 0);
    let c_endpoint = std::ffi::CString::new(endpoint.clone()).unwrap();
    assert_eq!(unsafe { zmq_connect(req, c_endpoint.as_ptr()) }, 0);
    let mut seen = Vec::new();
    while !seen.contains(&0x1000) {
        seen.push(event(mon).0);
    }
    assert!(
        seen.contains(&0x0020),
        "ACCEPTED before HANDSHAKE_SUCCEEDED: {seen:x?}"
    );
    assert_eq!(zmq_close(req), 0);
    assert_eq!(zmq_close(rep), 0);
    // The monitored socket's close ends the monitor, which says so last.
    loop {
        let (kind, _, _) = event(mon);
        if kind == 0x0400 {
            break;
        }
    }
    assert_eq!(zmq_close(mon), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn router_envelopes_and_pub_sub() {
    let ctx = zmq_ctx_new();
    let router = zmq_socket(ctx, 6);
    let dealer = zmq_socket(ctx, 5);
    for s in [router, dealer] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    unsafe {
        assert_eq!(
            zmq_setsockopt(dealer, ROUTING_ID, b"D1".as_ptr().cast(), 2),
            0
        );
        assert_eq!(zmq_bind(router, c"inproc://router".as_ptr()), 0);
        assert_eq!(zmq_connect(dealer, c"inproc://router".as_ptr()), 0);
    }
    send(dealer, b"job", 0);
    assert_eq!(recv(router), (b"D1".to_vec(), true));
    assert_eq!(recv(router), (b"job".to_vec(), false));
    send(router, b"D1", SNDMORE);
    send(router, b"done", 0);
    assert_eq!(recv(dealer), (b"done".to_vec(), false));
    // ROUTER_MANDATORY: an unknown peer is EHOSTUNREACH on the routing-id frame.
    set_int(router, ROUTER_MANDATORY, 1);
    let rc = unsafe { zmq_send(router, b"nobody".as_ptr().cast(), 6, SNDMORE) };
    assert_eq!((rc, zmq::error::zmq_errno()), (-1, libc::EHOSTUNREACH));
    send(router, b"D1", SNDMORE);
    send(router, b"again", 0);
    assert_eq!(recv(dealer), (b"again".to_vec(), false));

    let publisher = zmq_socket(ctx, 1);
    let subscriber = zmq_socket(ctx, 2);
    set_int(subscriber, RCVTIMEO, 5000);
    set_int(publisher, LINGER, 0);
    unsafe {
        assert_eq!(
            zmq_setsockopt(subscriber, SUBSCRIBE, b"weather".as_ptr().cast(), 7),
            0
        );
        assert_eq!(zmq_bind(publisher, c"inproc://news".as_ptr()), 0);
        assert_eq!(zmq_connect(subscriber, c"inproc://news".as_ptr()), 0);
    }
    // Publish until the subscription has arrived.
    let mut got = None;
    for _ in 0..500 {
        send(publisher, b"news: none", 0);
        send(publisher, b"weather: rain", 0);
        let mut buf = [0u8; 32];
        let n = unsafe { zmq_recv(subscriber, buf.as_mut_ptr().cast(), 32, DONTWAIT) };
        if n > 0 {
            got = Some(buf[..n as usize].to_vec());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(got.as_deref(), Some(&b"weather: rain"[..]));
    for s in [router, dealer, publisher, subscriber] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
    let _ = null_mut::<c_void>();
}

#[test]
fn draft_poller_over_sockets_and_descriptors() {
    use zmq::poller::*;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let push = zmq_socket(ctx, 8);
    set_int(push, LINGER, 0);
    unsafe {
        assert_eq!(zmq_bind(pull, c"inproc://poller".as_ptr()), 0);
        assert_eq!(zmq_connect(push, c"inproc://poller".as_ptr()), 0);
    }
    let poller = zmq_poller_new();
    let tag = 0x5151usize as *mut c_void;
    assert_eq!(zmq_poller_add(poller, pull, tag, 1), 0);
    // Twice is EINVAL, a closed or made-up socket ENOTSOCK, fd -1 EBADF.
    assert_eq!(zmq_poller_add(poller, pull, tag, 1), -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EINVAL);
    assert_eq!(zmq_poller_add(poller, null_mut(), tag, 1), -1);
    assert_eq!(zmq::error::zmq_errno(), libc::ENOTSOCK);
    assert_eq!(zmq_poller_add_fd(poller, -1, tag, 1), -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EBADF);
    assert_eq!(zmq_poller_size(poller), 1);
    let mut event = zmq_poller_event_t {
        socket: null_mut(),
        fd: 0,
        user_data: null_mut(),
        events: 0,
    };
    // Nothing yet: EAGAIN at the timeout.
    assert_eq!(unsafe { zmq_poller_wait(poller, &mut event, 10) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EAGAIN);
    send(push, b"ready", 0);
    assert_eq!(unsafe { zmq_poller_wait(poller, &mut event, 5000) }, 0);
    assert_eq!(
        (event.socket, event.user_data, event.events),
        (pull, tag, 1)
    );
    // A pipe with a byte in it, beside the socket.
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
    assert_eq!(zmq_poller_add_fd(poller, fds[0], null_mut(), 1), 0);
    let mut events: [zmq_poller_event_t; 4] = std::array::from_fn(|_| zmq_poller_event_t {
        socket: null_mut(),
        fd: 0,
        user_data: null_mut(),
        events: 0,
    });
    assert_eq!(
        unsafe { zmq_poller_wait_all(poller, events.as_mut_ptr(), 4, 5000) },
        2
    );
    assert_eq!(events[1].fd, fds[0]);
    assert_eq!(zmq_poller_remove_fd(poller, fds[0]), 0);
    assert_eq!(zmq_poller_remove(poller, pull), 0);
    assert_eq!(zmq_poller_remove(poller, pull), -1);
    let mut handle = poller;
    assert_eq!(unsafe { zmq_poller_destroy(&mut handle) }, 0);
    assert!(handle.is_null());
    assert_eq!(unsafe { zmq_poller_destroy(&mut handle) }, -1);
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    assert_eq!(zmq_close(pull), 0);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// DGRAM: a message is the peer's address and a body, both ways.
#[test]
fn dgram_round_trip_with_addresses() {
    let ctx = zmq_ctx_new();
    let a = zmq_socket(ctx, 18);
    let b = zmq_socket(ctx, 18);
    for s in [a, b] {
        set_int(s, RCVTIMEO, 5000);
        assert_eq!(unsafe { zmq_bind(s, c"udp://127.0.0.1:*".as_ptr()) }, 0);
    }
    let port = |s| last_endpoint(s).rsplit(':').next().unwrap().to_owned();
    let (a_addr, b_addr) = (
        format!("127.0.0.1:{}", port(a)),
        format!("127.0.0.1:{}", port(b)),
    );
    send(b, a_addr.as_bytes(), SNDMORE);
    send(b, b"question", 0);
    let (from, more) = recv(a);
    assert!(more);
    assert_eq!(
        CStr::from_bytes_until_nul(&from).map_or(&from[..], |c| c.to_bytes()),
        b_addr.as_bytes()
    );
    assert_eq!(recv(a), (b"question".to_vec(), false));
    send(a, b_addr.as_bytes(), SNDMORE);
    send(a, b"answer", 0);
    let (from, _) = recv(b);
    assert_eq!(
        CStr::from_bytes_until_nul(&from).map_or(&from[..], |c| c.to_bytes()),
        a_addr.as_bytes()
    );
    assert_eq!(recv(b), (b"answer".to_vec(), false));
    for s in [a, b] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `zmq_send`'s errno after a failed send.
fn send_errno(s: *mut c_void, body: &[u8], flags: c_int) -> c_int {
    let rc = unsafe { zmq_send(s, body.as_ptr().cast(), body.len(), flags) };
    assert_eq!(rc, -1, "the send went through");
    zmq::error::zmq_errno()
}

/// As libzmq: unbinding closes the connections accepted on the endpoint, and a message's
/// first frame waits (SNDTIMEO) for a peer instead of being kept for one that is gone.
#[test]
fn unbind_leaves_a_bound_push_without_peers() {
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    let pull = zmq_socket(ctx, 7);
    for s in [push, pull] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    set_int(push, SNDTIMEO, 50);
    unsafe {
        assert_eq!(zmq_bind(push, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(push)).unwrap();
    assert_eq!(unsafe { zmq_connect(pull, ep.as_ptr()) }, 0);
    send(push, b"ABC", 0);
    assert_eq!(recv(pull), (b"ABC".to_vec(), false));

    assert_eq!(unsafe { zmq_unbind(push, ep.as_ptr()) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let rc = unsafe { zmq_send(push, b"x".as_ptr().cast(), 1, DONTWAIT) };
        if rc == -1 {
            assert_eq!(zmq::error::zmq_errno(), libc::EAGAIN);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still connected");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The first frame of a multipart message finds no peer: EAGAIN after SNDTIMEO, and
    // nothing is kept to go out with the next message.
    assert_eq!(send_errno(push, b"first", SNDMORE), libc::EAGAIN);
    assert_eq!(send_errno(push, b"last", 0), libc::EAGAIN);
    assert_eq!(unsafe { zmq_bind(push, ep.as_ptr()) }, 0);
    set_int(push, SNDTIMEO, 5000);
    send(push, b"one", SNDMORE);
    send(push, b"two", 0);
    assert_eq!(recv(pull), (b"one".to_vec(), true));
    assert_eq!(recv(pull), (b"two".to_vec(), false));
    for s in [push, pull] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

fn get_int(s: *mut c_void, option: c_int) -> c_int {
    let mut v: c_int = -7;
    let mut len = std::mem::size_of::<c_int>();
    let rc = unsafe { zmq_getsockopt(s, option, (&mut v as *mut c_int).cast(), &mut len) };
    assert_eq!(
        rc,
        0,
        "getsockopt {option}: errno {}",
        zmq::error::zmq_errno()
    );
    v
}

fn set_int_errno(s: *mut c_void, option: c_int, value: c_int) -> c_int {
    let rc = unsafe { zmq_setsockopt(s, option, (&value as *const c_int).cast(), 4) };
    assert_eq!(rc, -1, "setsockopt {option} = {value} was taken");
    zmq::error::zmq_errno()
}

/// `ZMQ_ROUTER_NOTIFY` (97): ROUTER only, 0 to 3, read back as set (0 on other types);
/// the notices arrive as `[routing id][empty]`.
#[test]
fn router_notify_option_and_notices() {
    let ctx = zmq_ctx_new();
    let router = zmq_socket(ctx, 6);
    let dealer = zmq_socket(ctx, 5);
    for s in [router, dealer] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    assert_eq!(get_int(router, ROUTER_NOTIFY), 0, "off by default");
    for v in [1, 2, 0, 3] {
        set_int(router, ROUTER_NOTIFY, v);
        assert_eq!(get_int(router, ROUTER_NOTIFY), v);
    }
    assert_eq!(set_int_errno(router, ROUTER_NOTIFY, -1), libc::EINVAL);
    assert_eq!(set_int_errno(router, ROUTER_NOTIFY, 4), libc::EINVAL);
    assert_eq!(
        get_int(router, ROUTER_NOTIFY),
        3,
        "a refused value changes nothing"
    );
    assert_eq!(set_int_errno(dealer, ROUTER_NOTIFY, 1), libc::EINVAL);
    assert_eq!(get_int(dealer, ROUTER_NOTIFY), 0);

    unsafe {
        assert_eq!(zmq_bind(router, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(router)).unwrap();
    let rc = unsafe { zmq_setsockopt(dealer, ROUTING_ID, b"X".as_ptr().cast(), 1) };
    assert_eq!(rc, 0);
    assert_eq!(unsafe { zmq_connect(dealer, ep.as_ptr()) }, 0);
    assert_eq!(recv(router), (b"X".to_vec(), true));
    assert_eq!(recv(router), (b"".to_vec(), false));
    send(dealer, b"Hello", 0);
    assert_eq!(recv(router), (b"X".to_vec(), true));
    assert_eq!(recv(router), (b"Hello".to_vec(), false));
    assert_eq!(unsafe { zmq_disconnect(dealer, ep.as_ptr()) }, 0);
    assert_eq!(recv(router), (b"X".to_vec(), true));
    assert_eq!(recv(router), (b"".to_vec(), false));
    for s in [router, dealer] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `ZMQ_INVERT_MATCHING` (74): taken by every type (any non-zero value is on) and read
/// back; a PUB and a SUB that both invert pass what the subscription does not match.
#[test]
fn invert_matching_option_and_effect() {
    let ctx = zmq_ctx_new();
    let publ = zmq_socket(ctx, 1);
    let sub = zmq_socket(ctx, 2);
    let dealer = zmq_socket(ctx, 5);
    for s in [publ, sub, dealer] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
        assert_eq!(get_int(s, INVERT_MATCHING), 0, "off by default");
    }
    set_int(dealer, INVERT_MATCHING, -3);
    assert_eq!(get_int(dealer, INVERT_MATCHING), 1);
    set_int(dealer, INVERT_MATCHING, 0);
    assert_eq!(get_int(dealer, INVERT_MATCHING), 0);
    set_int(publ, INVERT_MATCHING, 1);
    set_int(sub, INVERT_MATCHING, 1);
    assert_eq!(get_int(publ, INVERT_MATCHING), 1);
    let rc = unsafe { zmq_setsockopt(sub, SUBSCRIBE, b"a".as_ptr().cast(), 1) };
    assert_eq!(rc, 0);
    unsafe {
        assert_eq!(zmq_bind(publ, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(publ)).unwrap();
    assert_eq!(unsafe { zmq_connect(sub, ep.as_ptr()) }, 0);
    // Until the subscription arrives, the SUB counts as subscribed to nothing and gets
    // everything: send until "b" arrives, then check "a" is kept from it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while get_int(publ, TOPICS_COUNT) != 1 {
        assert!(std::time::Instant::now() < deadline, "no subscription");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    send(publ, b"a-kept-back", 0);
    send(publ, b"b-passed", 0);
    assert_eq!(recv(sub), (b"b-passed".to_vec(), false));
    set_int(sub, RCVTIMEO, 100);
    let mut buf = [0u8; 16];
    let rc = unsafe { zmq_recv(sub, buf.as_mut_ptr().cast(), buf.len(), 0) };
    assert_eq!(rc, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EAGAIN);
    for s in [publ, sub, dealer] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// Whether `fd` is readable within `ms` milliseconds.
fn readable(fd: c_int, ms: c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    (unsafe { libc::poll(&mut p, 1, ms) }) == 1 && p.revents & libc::POLLIN != 0
}

/// `zmq_poller_fd`: `EINVAL` without a thread-safe socket; with one, a descriptor that
/// turns readable when it gets a message and is reset by a wait; it follows the sockets
/// added and removed, and NULL is `EFAULT`.
#[test]
fn draft_poller_fd_signals_thread_safe_sockets() {
    use zmq::poller::*;
    const SERVER: c_int = 12;
    const CLIENT: c_int = 13;
    let ctx = zmq_ctx_new();
    let server = zmq_socket(ctx, SERVER);
    let client = zmq_socket(ctx, CLIENT);
    let pull = zmq_socket(ctx, 7);
    set_int(client, LINGER, 0);
    unsafe {
        assert_eq!(zmq_bind(server, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let mut endpoint = [0u8; 64];
    let mut len = endpoint.len();
    let rc = unsafe {
        zmq_getsockopt(
            server,
            LAST_ENDPOINT,
            endpoint.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    unsafe {
        assert_eq!(zmq_connect(client, endpoint.as_ptr().cast()), 0);
    }
    let poller = zmq_poller_new();
    let mut fd: c_int = -1;
    // No socket, then only a socket that is not thread-safe: EINVAL, as in libzmq.
    assert_eq!(unsafe { zmq_poller_fd(poller, &mut fd) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EINVAL);
    assert_eq!(zmq_poller_add(poller, pull, null_mut(), 1), 0);
    assert_eq!(unsafe { zmq_poller_fd(poller, &mut fd) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EINVAL);
    assert_eq!(unsafe { zmq_poller_fd(poller, null_mut()) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EFAULT);
    assert_eq!(unsafe { zmq_poller_fd(null_mut(), &mut fd) }, -1);
    assert_eq!(zmq::error::zmq_errno(), libc::EFAULT);

    let tag = 0x7777usize as *mut c_void;
    assert_eq!(zmq_poller_add(poller, server, tag, 1), 0);
    assert_eq!(unsafe { zmq_poller_fd(poller, &mut fd) }, 0);
    assert!(fd >= 0);
    let mut again = -1;
    assert_eq!(unsafe { zmq_poller_fd(poller, &mut again) }, 0);
    assert_eq!(again, fd, "the same descriptor each time");
    let mut event = zmq_poller_event_t {
        socket: null_mut(),
        fd: 0,
        user_data: null_mut(),
        events: 0,
    };
    // Connected and handshaken (a message through), then whatever fired the descriptor
    // so far is reset by waits that find nothing. As libzmq's, the descriptor may also
    // fire for a change that leaves nothing to report (the I/O thread finishing what the
    // receive started): a wait finds nothing then, and quiets it.
    send(client, b"warm-up", 0);
    assert_eq!(recv(server).0, b"warm-up");
    let settle = |event: &mut zmq_poller_event_t| {
        for _ in 0..20 {
            assert_eq!(unsafe { zmq_poller_wait(poller, event, 0) }, -1);
            assert_eq!(zmq::error::zmq_errno(), libc::EAGAIN);
            if !readable(fd, 50) {
                return;
            }
        }
        panic!("the descriptor stays readable with nothing to report");
    };
    settle(&mut event);
    send(client, b"hello", 0);
    // Readable once the server has the message (perhaps first for the change before it):
    // each time it is, a wait that does not block reports what there is.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        assert!(
            readable(fd, 5000) && std::time::Instant::now() < deadline,
            "not readable though the server has a message"
        );
        if unsafe { zmq_poller_wait(poller, &mut event, 0) } == 0 {
            break;
        }
    }
    assert_eq!(
        (event.socket, event.user_data, event.events),
        (server, tag, 1)
    );
    assert_eq!(recv(server).0, b"hello");
    settle(&mut event);

    // A removed socket is no longer followed.
    assert_eq!(zmq_poller_remove(poller, server), 0);
    send(client, b"again", 0);
    assert!(!readable(fd, 200), "the server is not followed any more");
    let mut handle = poller;
    assert_eq!(unsafe { zmq_poller_destroy(&mut handle) }, 0);
    for s in [server, client, pull] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `ZMQ_XPUB_MANUAL` (71), `ZMQ_XPUB_MANUAL_LAST_VALUE` (98), `ZMQ_ONLY_FIRST_SUBSCRIBE`
/// (108) and `ZMQ_XSUB_VERBOSE_UNSUBSCRIBE` (115): taken by the types libzmq takes them
/// on, non-negative ints; `ZMQ_SUBSCRIBE` on an XPUB only in manual mode, where it routes
/// for the peer whose subscription was received last; an XSUB passes an unsubscription
/// of a topic it does not have only when verbose.
#[test]
fn xpub_manual_and_xsub_verbose_unsubscribe_options() {
    let ctx = zmq_ctx_new();
    let xpub = zmq_socket(ctx, 9);
    let xsub = zmq_socket(ctx, 10);
    let sub = zmq_socket(ctx, 2);
    for s in [xpub, xsub, sub] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    for option in [XPUB_MANUAL, XPUB_MANUAL_LAST_VALUE, ONLY_FIRST_SUBSCRIBE] {
        assert_eq!(set_int_errno(xpub, option, -1), libc::EINVAL);
        assert_eq!(set_int_errno(sub, option, 1), libc::EINVAL);
    }
    assert_eq!(
        set_int_errno(xpub, XSUB_VERBOSE_UNSUBSCRIBE, 1),
        libc::EINVAL
    );
    set_int(xsub, ONLY_FIRST_SUBSCRIBE, 1);
    set_int(xsub, ONLY_FIRST_SUBSCRIBE, 0);
    // Not in manual mode: an XPUB has no subscriptions of its own.
    let rc = unsafe { zmq_setsockopt(xpub, SUBSCRIBE, b"B".as_ptr().cast(), 1) };
    assert_eq!((rc, zmq::error::zmq_errno()), (-1, libc::EINVAL));
    set_int(xpub, XPUB_MANUAL, 1);

    unsafe {
        assert_eq!(zmq_bind(xpub, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(xpub)).unwrap();
    assert_eq!(unsafe { zmq_connect(xsub, ep.as_ptr()) }, 0);
    send(xsub, b"\x01A", 0);
    assert_eq!(recv(xpub), (b"\x01A".to_vec(), false));
    // The application subscribes that peer to B instead of A.
    let rc = unsafe { zmq_setsockopt(xpub, SUBSCRIBE, b"B".as_ptr().cast(), 1) };
    assert_eq!(rc, 0);
    send(xpub, b"A-not-routed", 0);
    send(xpub, b"B-routed", 0);
    assert_eq!(recv(xsub), (b"B-routed".to_vec(), false));

    // An unsubscription of a topic the XSUB never had: kept back, unless verbose.
    send(xsub, b"\x00Z", 0);
    set_int(xsub, XSUB_VERBOSE_UNSUBSCRIBE, 1);
    send(xsub, b"\x00Y", 0);
    assert_eq!(recv(xpub), (b"\x00Y".to_vec(), false));
    for s in [xpub, xsub, sub] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `ZMQ_ROUTING_ID` read back into `buf`: its bytes.
fn routing_id(s: *mut c_void) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let mut len = buf.len();
    let rc = unsafe { zmq_getsockopt(s, ROUTING_ID, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!(rc, 0);
    buf[..len].to_vec()
}

/// STREAM (11) as libzmq's: `ZMQ_ROUTING_ID` right after `zmq_connect` names the
/// connection; an unknown id is refused on its own frame (`EHOSTUNREACH`); the data frame
/// ends the message whatever its `ZMQ_SNDMORE` (libzmq ignores it); messages carry
/// `Peer-Address`; empty data closes the connection, announced to the other side.
#[test]
fn stream_ids_frames_and_peer_address_as_libzmq() {
    const STREAM: c_int = 11;
    let ctx = zmq_ctx_new();
    let server = zmq_socket(ctx, STREAM);
    let client = zmq_socket(ctx, STREAM);
    for s in [server, client] {
        set_int(s, RCVTIMEO, 5000);
        set_int(s, LINGER, 0);
    }
    unsafe {
        assert_eq!(zmq_bind(server, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(server)).unwrap();
    assert!(routing_id(client).is_empty());
    assert_eq!(unsafe { zmq_connect(client, ep.as_ptr()) }, 0);
    let to_server = routing_id(client);
    assert_eq!((to_server.len(), to_server[0]), (5, 0), "{to_server:?}");

    assert_eq!(send_errno(client, b"\x00nope", SNDMORE), libc::EHOSTUNREACH);
    // Sent before the connection is up, MORE on the data frame: it goes all the same.
    send(client, &to_server, SNDMORE);
    send(client, b"GET /\n\n", SNDMORE);

    // The server: the connection's notification, then the data, with Peer-Address.
    let (to_client, more) = recv(server);
    assert!(more);
    assert_eq!(recv(server), (Vec::new(), false));
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    assert_eq!(zmq_msg_init(m), 0);
    assert!(zmq_msg_recv(m, server, 0) > 0);
    let address = unsafe { zmq_msg_gets(m, c"Peer-Address".as_ptr()) };
    assert!(!address.is_null());
    assert_eq!(unsafe { CStr::from_ptr(address) }, c"127.0.0.1");
    assert_eq!(zmq_msg_close(m), 0);
    assert_eq!(recv(server), (b"GET /\n\n".to_vec(), false));
    assert_eq!(routing_id(server), to_client, "the id last generated");

    // The client: its own notification, under the id it read at connect.
    assert_eq!(recv(client), (to_server.clone(), true));
    assert_eq!(recv(client), (Vec::new(), false));
    // It closes: the server is told.
    send(client, &to_server, SNDMORE);
    send(client, b"", 0);
    assert_eq!(recv(server), (to_client, true));
    assert_eq!(recv(server), (Vec::new(), false));
    for s in [server, client] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn messages_taken_in_a_batch_stay_visible_to_events_and_poll() {
    // A PULL takes every ready message in one batch and hands them out one per call:
    // those not handed out yet must still count as readable.
    use zmq::poll::*;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let push = zmq_socket(ctx, 8);
    set_int(push, LINGER, 0);
    unsafe {
        assert_eq!(zmq_bind(pull, c"inproc://batch".as_ptr()), 0);
        assert_eq!(zmq_connect(push, c"inproc://batch".as_ptr()), 0);
    }
    // inproc hands each message over in its send: all five are in before the first
    // receive, which takes them together.
    for i in 0..5u8 {
        send(push, &[i; 3], 0);
    }
    assert_eq!(recv(pull).0, [0; 3]);
    let mut got = vec![];
    while got.len() < 4 {
        // Each time one is left, events and a poll with no timeout say so.
        assert_ne!(get_int(pull, EVENTS) & POLLIN, 0, "after {got:?}");
        let mut item = zmq_pollitem_t {
            socket: pull,
            fd: 0,
            events: POLLIN as std::ffi::c_short,
            revents: 0,
        };
        assert_eq!(unsafe { zmq_poll(&mut item, 1, 0) }, 1, "after {got:?}");
        got.push(recv(pull).0[0]);
    }
    assert_eq!(got, [1, 2, 3, 4]);
    assert_eq!(get_int(pull, EVENTS) & POLLIN, 0);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_close(pull), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// Every message from a tcp peer carries its peer's metadata (`Socket-Type`,
/// `Peer-Address`) and the descriptor of its connection (`ZMQ_SRCFD`, and `__fd` through
/// `zmq_msg_gets`), as libzmq's do, with no security mechanism or ZAP handler; a message
/// over inproc has no descriptor.
#[test]
fn every_tcp_message_carries_its_peers_metadata_and_descriptor() {
    const SRCFD: c_int = 2;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let push = zmq_socket(ctx, 8);
    set_int(pull, RCVTIMEO, 5000);
    set_int(push, LINGER, 0);
    unsafe {
        assert_eq!(zmq_bind(pull, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = last_endpoint(pull);
    let port: u16 = ep.rsplit(':').next().unwrap().parse().unwrap();
    let cep = std::ffi::CString::new(ep).unwrap();
    assert_eq!(unsafe { zmq_connect(push, cep.as_ptr()) }, 0);
    for i in 0..3u8 {
        send(push, &[i; 4], 0);
    }
    let text = |m: *const zmq_msg_t, name: &CStr| {
        let p = unsafe { zmq_msg_gets(m, name.as_ptr()) };
        assert!(!p.is_null(), "{name:?}: errno {}", zmq::error::zmq_errno());
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
    };
    let mut fds = vec![];
    for i in 0..3u8 {
        let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
        let m = msg.as_mut_ptr();
        assert_eq!(zmq_msg_init(m), 0);
        assert_eq!(zmq_msg_recv(m, pull, 0), 4);
        assert_eq!(unsafe { *zmq_msg_data(m).cast::<u8>() }, i);
        assert_eq!(text(m, c"Socket-Type"), "PUSH");
        assert_eq!(text(m, c"Peer-Address"), "127.0.0.1");
        let fd = zmq_msg_get(m, SRCFD);
        assert!(fd >= 0, "ZMQ_SRCFD {fd}");
        assert_eq!(text(m, c"__fd"), fd.to_string());
        // The descriptor is this connection's: its local end is the port bound.
        let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let rc = unsafe { libc::getsockname(fd, (&raw mut addr).cast(), &mut len) };
        assert_eq!(rc, 0, "getsockname({fd})");
        assert_eq!(u16::from_be(addr.sin_port), port);
        fds.push(fd);
        assert_eq!(zmq_msg_close(m), 0);
    }
    assert!(fds.iter().all(|&fd| fd == fds[0]), "{fds:?}");

    // inproc: no descriptor.
    let a = zmq_socket(ctx, 0);
    let b = zmq_socket(ctx, 0);
    set_int(b, RCVTIMEO, 5000);
    unsafe {
        assert_eq!(zmq_bind(a, c"inproc://srcfd".as_ptr()), 0);
        assert_eq!(zmq_connect(b, c"inproc://srcfd".as_ptr()), 0);
    }
    send(a, b"x", 0);
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    assert_eq!(zmq_msg_init(m), 0);
    assert_eq!(zmq_msg_recv(m, b, 0), 1);
    assert_eq!(zmq_msg_get(m, SRCFD), -1);
    assert_eq!(zmq_msg_close(m), 0);
    for s in [push, pull, a, b] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// A socket closed on one thread while another still holds it (the socket that thread
/// looked up last, kept to spare its next calls the lookup) is closed all the same: its
/// address is free at once, and the other thread's next call on it fails with `ENOTSOCK`.
#[test]
fn a_socket_closed_while_another_thread_holds_it_is_closed() {
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    unsafe {
        assert_eq!(zmq_bind(pull, c"tcp://127.0.0.1:*".as_ptr()), 0);
    }
    let ep = std::ffi::CString::new(last_endpoint(pull)).unwrap();
    let handle = pull as usize;
    let (looked, wait) = std::sync::mpsc::channel();
    let (go, closed) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        let s = handle as *mut c_void;
        let mut buf = [0u8; 8];
        // A call on the socket: this thread now holds it.
        let rc = unsafe { zmq_recv(s, buf.as_mut_ptr().cast(), buf.len(), DONTWAIT) };
        assert_eq!((rc, zmq::error::zmq_errno()), (-1, libc::EAGAIN));
        looked.send(()).unwrap();
        closed.recv().unwrap();
        let rc = unsafe { zmq_recv(s, buf.as_mut_ptr().cast(), buf.len(), DONTWAIT) };
        (rc, zmq::error::zmq_errno())
    });
    wait.recv().unwrap();
    set_int(pull, LINGER, 0);
    assert_eq!(zmq_close(pull), 0);
    // The address is free: the closed socket's listener is gone.
    let again = zmq_socket(ctx, 7);
    assert_eq!(
        unsafe { zmq_bind(again, ep.as_ptr()) },
        0,
        "errno {}",
        zmq::error::zmq_errno()
    );
    go.send(()).unwrap();
    assert_eq!(other.join().unwrap(), (-1, libc::ENOTSOCK));
    assert_eq!(zmq_close(again), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}
