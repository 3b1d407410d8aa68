//! Misuse through the C API: NULL and made-up handles, closed sockets and messages, bad
//! option sizes, out-of-turn sends and receives. Each fails with -1 (or NULL) and
//! libzmq's errno, never a crash.

use std::ffi::{c_int, c_void, CStr};
use std::ptr::{null, null_mut};

use zmq::ctx::*;
use zmq::error::*;
use zmq::msg::*;
use zmq::options::*;
use zmq::poll::*;
use zmq::poller::*;
use zmq::socket::*;
use zmq::util::*;

fn errno() -> c_int {
    zmq_errno()
}

/// A call's result and errno.
fn fails(rc: c_int, expected: c_int) {
    assert_eq!(rc, -1, "expected failure");
    assert_eq!(errno(), expected, "{}", unsafe {
        CStr::from_ptr(zmq_strerror(errno())).to_string_lossy()
    });
}

fn int_opt(s: *mut c_void, option: c_int, value: c_int) -> c_int {
    unsafe {
        zmq_setsockopt(
            s,
            option,
            (&value as *const c_int).cast(),
            std::mem::size_of::<c_int>(),
        )
    }
}

fn get_int(s: *mut c_void, option: c_int) -> c_int {
    let mut v: c_int = -7;
    let mut len = std::mem::size_of::<c_int>();
    let rc = unsafe { zmq_getsockopt(s, option, (&mut v as *mut c_int).cast(), &mut len) };
    assert_eq!(rc, 0, "getsockopt {option}: errno {}", errno());
    v
}

#[test]
fn errno_values_and_texts() {
    assert_eq!(EFSM, 156_384_712 + 51);
    assert_eq!(ENOCOMPATPROTO, 156_384_712 + 52);
    assert_eq!(ETERM, 156_384_712 + 53);
    assert_eq!(EMTHREAD, 156_384_712 + 54);
    let text = |e| {
        unsafe { CStr::from_ptr(zmq_strerror(e)) }
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(text(ETERM), "Context was terminated");
    assert_eq!(
        text(EFSM),
        "Operation cannot be accomplished in current state"
    );
    assert_eq!(text(libc::EAGAIN), "Resource temporarily unavailable");
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    unsafe { zmq_version(&mut major, &mut minor, &mut patch) };
    assert_eq!((major, minor, patch), (4, 3, 5));
    unsafe { zmq_version(null_mut(), null_mut(), null_mut()) };
    assert_eq!(unsafe { zmq_has(c"curve".as_ptr()) }, 1);
    assert_eq!(unsafe { zmq_has(c"pgm".as_ptr()) }, 0);
    // The draft API is always there.
    assert_eq!(unsafe { zmq_has(c"draft".as_ptr()) }, 1);
    assert_eq!(unsafe { zmq_has(null()) }, 0);
}

/// `zmq_ppoll`: misuse fails as `zmq_poll`'s does; a descriptor that is ready is reported
/// with a mask given or not; a signal the mask lets in ends the wait with `EINTR`.
#[test]
fn ppoll_waits_with_the_mask_given() {
    fails(
        unsafe { zmq_ppoll(null_mut(), -1, 0, null()) },
        libc::EINVAL,
    );
    fails(unsafe { zmq_ppoll(null_mut(), 1, 0, null()) }, libc::EFAULT);
    assert_eq!(unsafe { zmq_ppoll(null_mut(), 0, 0, null()) }, 0);
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let mut items = [zmq_pollitem_t {
        socket: null_mut(),
        fd: fds[0],
        events: POLLIN as i16,
        revents: 0,
    }];
    // SAFETY: an empty set, filled by sigemptyset before use.
    let mut none: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut none) };
    assert_eq!(unsafe { zmq_ppoll(items.as_mut_ptr(), 1, 0, &none) }, 0);
    // SAFETY: one byte from a valid buffer to the pipe's write end.
    assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
    assert_eq!(unsafe { zmq_ppoll(items.as_mut_ptr(), 1, 1000, &none) }, 1);
    assert_eq!(c_int::from(items[0].revents), POLLIN);
    assert_eq!(unsafe { zmq_ppoll(items.as_mut_ptr(), 1, 0, null()) }, 1);
    // The draft poller: one event of two asked for, the other entry cleared (a caller
    // that walks both must not see a stale one).
    let poller = zmq_poller_new();
    assert_eq!(
        zmq_poller_add_fd(poller, fds[0], null_mut(), POLLIN as i16),
        0
    );
    let stale = || zmq_poller_event_t {
        socket: std::ptr::dangling_mut::<c_void>(),
        fd: 99,
        user_data: std::ptr::dangling_mut::<c_void>(),
        events: POLLIN as i16,
    };
    let mut events = [stale(), stale()];
    assert_eq!(
        unsafe { zmq_poller_wait_all(poller, events.as_mut_ptr(), 2, 0) },
        1
    );
    assert_eq!(
        (events[0].fd, c_int::from(events[0].events)),
        (fds[0], POLLIN)
    );
    assert!(events[1].socket.is_null() && events[1].user_data.is_null());
    assert_eq!((events[1].fd, events[1].events), (-1, 0));
    let mut poller = poller;
    assert_eq!(unsafe { zmq_poller_destroy(&mut poller) }, 0);
    // SIGUSR2 blocked in this thread, let in by the mask during the wait, and sent to
    // this thread by another while it waits on a pipe that never becomes ready.
    extern "C" fn on_usr2(_: c_int) {}
    // SAFETY: a handler that does nothing, installed for SIGUSR2 only.
    unsafe { libc::signal(libc::SIGUSR2, on_usr2 as *const () as libc::sighandler_t) };
    let mut blocked: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut blocked);
        libc::sigaddset(&mut blocked, libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, null_mut());
    }
    let mut quiet = [0; 2];
    // SAFETY: as above.
    assert_eq!(unsafe { libc::pipe(quiet.as_mut_ptr()) }, 0);
    items[0].fd = quiet[0];
    let me = unsafe { libc::pthread_self() };
    let kicker = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        // SAFETY: `me` is the test's thread, alive until it joins this one.
        unsafe { libc::pthread_kill(me, libc::SIGUSR2) };
    });
    let start = std::time::Instant::now();
    fails(
        unsafe { zmq_ppoll(items.as_mut_ptr(), 1, 5000, &none) },
        libc::EINTR,
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
    kicker.join().unwrap();
    for fd in fds.into_iter().chain(quiet) {
        // SAFETY: descriptors this test opened, closed once.
        unsafe { libc::close(fd) };
    }
}

#[test]
fn null_and_bad_handles() {
    // Contexts: EFAULT.
    fails(zmq_ctx_term(null_mut()), libc::EFAULT);
    fails(zmq_ctx_shutdown(null_mut()), libc::EFAULT);
    fails(zmq_ctx_set(null_mut(), IO_THREADS_OPT, 1), libc::EFAULT);
    fails(zmq_ctx_get(null_mut(), IO_THREADS_OPT), libc::EFAULT);
    let mut junk = [0u8; 64];
    let bogus = junk.as_mut_ptr().cast::<c_void>();
    fails(zmq_ctx_term(bogus), libc::EFAULT);
    assert!(zmq_socket(null_mut(), 0).is_null());
    assert_eq!(errno(), libc::EFAULT);
    // Sockets: ENOTSOCK.
    fails(zmq_close(null_mut()), libc::ENOTSOCK);
    fails(zmq_close(bogus), libc::ENOTSOCK);
    fails(
        unsafe { zmq_bind(null_mut(), c"tcp://127.0.0.1:*".as_ptr()) },
        libc::ENOTSOCK,
    );
    fails(
        unsafe { zmq_connect(bogus, c"tcp://127.0.0.1:1".as_ptr()) },
        libc::ENOTSOCK,
    );
    fails(
        unsafe { zmq_send(null_mut(), b"x".as_ptr().cast(), 1, 0) },
        libc::ENOTSOCK,
    );
    let mut buf = [0u8; 8];
    fails(
        unsafe { zmq_recv(bogus, buf.as_mut_ptr().cast(), 8, 0) },
        libc::ENOTSOCK,
    );
    fails(int_opt(null_mut(), SNDHWM, 1), libc::ENOTSOCK);
    let mut items = [zmq_pollitem_t {
        socket: bogus,
        fd: 0,
        events: POLLIN as i16,
        revents: 0,
    }];
    fails(
        unsafe { zmq_poll(items.as_mut_ptr(), 1, 0) },
        libc::ENOTSOCK,
    );
    fails(unsafe { zmq_poll(null_mut(), 1, 0) }, libc::EFAULT);
    assert_eq!(unsafe { zmq_poll(null_mut(), 0, 0) }, 0);
}

const IO_THREADS_OPT: c_int = 1;

#[test]
fn closed_sockets_and_bad_arguments() {
    let ctx = zmq_ctx_new();
    assert!(!ctx.is_null());
    assert!(zmq_socket(ctx, 99).is_null());
    assert_eq!(errno(), libc::EINVAL);
    assert!(zmq_socket(ctx, -1).is_null());
    assert_eq!(errno(), libc::EINVAL);
    let s = zmq_socket(ctx, 7); // PULL
    assert!(!s.is_null());
    // A peer's state is a ROUTER's to tell, of a routing id it has.
    let id = b"nobody";
    let state = |s| unsafe { zmq_socket_get_peer_state(s, id.as_ptr().cast(), id.len()) };
    fails(state(s), libc::ENOTSUP);
    // ZMQ_TOPICS_COUNT is for the publish-subscribe types; a SUB counts its own topics.
    let (mut v, mut len) = (0 as c_int, std::mem::size_of::<c_int>());
    let count = |s, v: &mut c_int, len: &mut usize| unsafe {
        zmq_getsockopt(s, TOPICS_COUNT, (v as *mut c_int).cast(), len)
    };
    fails(count(s, &mut v, &mut len), libc::EINVAL);
    let sub = zmq_socket(ctx, 2);
    for topic in [&b"a"[..], b"ab", b"a"] {
        assert_eq!(
            unsafe { zmq_setsockopt(sub, SUBSCRIBE, topic.as_ptr().cast(), topic.len()) },
            0
        );
    }
    assert_eq!(get_int(sub, TOPICS_COUNT), 2);
    assert_eq!(zmq_close(sub), 0);
    let router = zmq_socket(ctx, 6);
    fails(state(router), libc::EHOSTUNREACH);
    fails(
        unsafe { zmq_socket_get_peer_state(router, null(), 3) },
        libc::EFAULT,
    );
    assert_eq!(zmq_close(router), 0);
    fails(state(router), libc::ENOTSOCK);
    assert_eq!(zmq_close(s), 0);
    // Closed: every call says ENOTSOCK, a second close too.
    fails(zmq_close(s), libc::ENOTSOCK);
    fails(
        unsafe { zmq_bind(s, c"tcp://127.0.0.1:*".as_ptr()) },
        libc::ENOTSOCK,
    );
    fails(int_opt(s, LINGER, 0), libc::ENOTSOCK);

    let s = zmq_socket(ctx, 7);
    fails(unsafe { zmq_bind(s, null()) }, libc::EINVAL);
    fails(
        unsafe { zmq_bind(s, c"nope://x".as_ptr()) },
        libc::EPROTONOSUPPORT,
    );
    fails(
        unsafe { zmq_bind(s, c"tcp://no-port".as_ptr()) },
        libc::EINVAL,
    );
    fails(
        unsafe { zmq_unbind(s, c"tcp://127.0.0.1:5999".as_ptr()) },
        libc::ENOENT,
    );
    fails(
        unsafe { zmq_disconnect(s, c"tcp://127.0.0.1:5999".as_ptr()) },
        libc::ENOENT,
    );
    // PULL never sends: ENOTSUP.
    fails(
        unsafe { zmq_send(s, b"x".as_ptr().cast(), 1, 0) },
        libc::ENOTSUP,
    );
    // NULL buffers with a length.
    fails(unsafe { zmq_send(s, null(), 3, 0) }, libc::EFAULT);
    fails(unsafe { zmq_recv(s, null_mut(), 3, 0) }, libc::EFAULT);
    // Nothing to receive without waiting.
    let mut buf = [0u8; 4];
    fails(
        unsafe { zmq_recv(s, buf.as_mut_ptr().cast(), 4, 1) },
        libc::EAGAIN,
    );
    assert_eq!(zmq_close(s), 0);

    // A PUSH never receives.
    let push = zmq_socket(ctx, 8);
    fails(
        unsafe { zmq_recv(push, buf.as_mut_ptr().cast(), 4, 1) },
        libc::ENOTSUP,
    );
    assert_eq!(int_opt(push, LINGER, 0), 0);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
    // The context is gone.
    fails(zmq_ctx_term(ctx), libc::EFAULT);
}

#[test]
fn option_sizes_and_values() {
    let ctx = zmq_ctx_new();
    let s = zmq_socket(ctx, 5); // DEALER
                                // int options need exactly sizeof(int).
    let v: i64 = 5;
    let rc = unsafe { zmq_setsockopt(s, SNDHWM, (&v as *const i64).cast(), 8) };
    fails(rc, libc::EINVAL);
    let rc = unsafe { zmq_setsockopt(s, SNDHWM, (&v as *const i64).cast(), 2) };
    fails(rc, libc::EINVAL);
    fails(
        unsafe { zmq_setsockopt(s, SNDHWM, null(), 4) },
        libc::EINVAL,
    );
    fails(int_opt(s, SNDHWM, -1), libc::EINVAL);
    fails(int_opt(s, LINGER, -2), libc::EINVAL);
    fails(int_opt(s, 12345, 1), libc::EINVAL);
    // Options of other types: EINVAL.
    fails(int_opt(s, ROUTER_MANDATORY, 1), libc::EINVAL);
    fails(int_opt(s, REQ_CORRELATE, 1), libc::EINVAL);
    let rc = unsafe { zmq_setsockopt(s, SUBSCRIBE, b"a".as_ptr().cast(), 1) };
    fails(rc, libc::EINVAL);
    // Routing ids are 1 to 255 bytes.
    fails(
        unsafe { zmq_setsockopt(s, ROUTING_ID, b"".as_ptr().cast(), 0) },
        libc::EINVAL,
    );
    let long = [b'x'; 256];
    fails(
        unsafe { zmq_setsockopt(s, ROUTING_ID, long.as_ptr().cast(), 256) },
        libc::EINVAL,
    );
    assert_eq!(
        unsafe { zmq_setsockopt(s, ROUTING_ID, b"me".as_ptr().cast(), 2) },
        0
    );
    let mut id = [0u8; 255];
    let mut len = id.len();
    let rc = unsafe { zmq_getsockopt(s, ROUTING_ID, id.as_mut_ptr().cast(), &mut len) };
    assert_eq!((rc, &id[..len]), (0, &b"me"[..]));
    // Values set are read back.
    assert_eq!(int_opt(s, SNDHWM, 7), 0);
    assert_eq!(get_int(s, SNDHWM), 7);
    assert_eq!(get_int(s, TYPE), 5);
    assert_eq!(get_int(s, LINGER), -1);
    assert_eq!(int_opt(s, RCVTIMEO, 250), 0);
    assert_eq!(get_int(s, RCVTIMEO), 250);
    assert_eq!(get_int(s, SNDBUF), -1);
    assert_eq!(get_int(s, RCVMORE), 0);
    // getsockopt: an int option read with the wrong size, a NULL length.
    let mut v: i64 = 0;
    let mut len = 8;
    let rc = unsafe { zmq_getsockopt(s, SNDHWM, (&mut v as *mut i64).cast(), &mut len) };
    fails(rc, libc::EINVAL);
    fails(
        unsafe { zmq_getsockopt(s, SNDHWM, (&mut v as *mut i64).cast(), null_mut()) },
        libc::EFAULT,
    );
    // LAST_ENDPOINT needs room for the text and its NUL.
    let endpoint = unsafe {
        assert_eq!(zmq_bind(s, c"tcp://127.0.0.1:*".as_ptr()), 0);
        let mut buf = [0u8; 64];
        let mut len = buf.len();
        assert_eq!(
            zmq_getsockopt(s, LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len),
            0
        );
        let mut small = [0u8; 4];
        let mut small_len = small.len();
        let rc = zmq_getsockopt(s, LAST_ENDPOINT, small.as_mut_ptr().cast(), &mut small_len);
        fails(rc, libc::EINVAL);
        CStr::from_bytes_with_nul(&buf[..len])
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert!(endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with('*'));
    // CURVE keys: 32 bytes or 40 Z85 characters; read back in either form.
    let server_secret = c"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
    assert_eq!(
        unsafe { zmq_setsockopt(s, CURVE_SECRETKEY, server_secret.as_ptr().cast(), 40) },
        0
    );
    fails(
        unsafe { zmq_setsockopt(s, CURVE_SECRETKEY, server_secret.as_ptr().cast(), 39) },
        libc::EINVAL,
    );
    assert_eq!(int_opt(s, CURVE_SERVER, 1), 0);
    assert_eq!(get_int(s, MECHANISM), 2);
    assert_eq!(get_int(s, CURVE_SERVER), 1);
    let mut text = [0u8; 41];
    let mut len = 41;
    let rc = unsafe { zmq_getsockopt(s, CURVE_SECRETKEY, text.as_mut_ptr().cast(), &mut len) };
    assert_eq!((rc, &text[..40]), (0, server_secret.to_bytes()));
    assert_eq!(zmq_close(s), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn messages_zeroed_closed_and_moved() {
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    // A zeroed message is not initialised.
    fails(zmq_msg_close(m), libc::EFAULT);
    assert_eq!(zmq_msg_size(m), 0);
    assert!(zmq_msg_data(m).is_null());
    fails(zmq_msg_close(null_mut()), libc::EFAULT);
    fails(zmq_msg_init(null_mut()), libc::EFAULT);
    assert_eq!(zmq_msg_init_size(m, 5), 0);
    assert_eq!(zmq_msg_size(m), 5);
    unsafe { std::ptr::copy_nonoverlapping(b"hello".as_ptr(), zmq_msg_data(m).cast(), 5) };
    let mut other = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let o = other.as_mut_ptr();
    assert_eq!(zmq_msg_init(o), 0);
    assert_eq!(zmq_msg_copy(o, m), 0);
    assert_eq!(zmq_msg_get(o, 3), 1); // ZMQ_SHARED
    assert_eq!(zmq_msg_close(m), 0);
    fails(zmq_msg_close(m), libc::EFAULT);
    fails(zmq_msg_copy(o, m), libc::EFAULT);
    fails(zmq_msg_move(o, m), libc::EFAULT);
    let body = unsafe { std::slice::from_raw_parts(zmq_msg_data(o).cast::<u8>(), zmq_msg_size(o)) };
    assert_eq!(body, b"hello");
    assert_eq!(zmq_msg_init(m), 0);
    assert_eq!(zmq_msg_move(m, o), 0);
    assert_eq!(zmq_msg_size(o), 0);
    assert_eq!(zmq_msg_size(m), 5);
    assert_eq!(zmq_msg_more(m), 0);
    fails(zmq_msg_get(m, 99), libc::EINVAL);
    fails(zmq_msg_set(m, 1, 1), libc::EINVAL);
    assert!(unsafe { zmq_msg_gets(m, c"Socket-Type".as_ptr()) }.is_null());
    assert_eq!(errno(), libc::EINVAL);
    fails(zmq_msg_set_routing_id(m, 0), libc::EINVAL);
    assert_eq!(zmq_msg_set_routing_id(m, 42), 0);
    assert_eq!(zmq_msg_routing_id(m), 42);
    assert_eq!(unsafe { zmq_msg_set_group(m, c"weather".as_ptr()) }, 0);
    assert_eq!(unsafe { CStr::from_ptr(zmq_msg_group(m)) }, c"weather");
    assert_eq!(zmq_msg_close(m), 0);
    assert_eq!(zmq_msg_close(o), 0);
    // NULL data with a size is refused; an empty one is fine.
    fails(
        unsafe { zmq_msg_init_data(m, null_mut(), 4, None, null_mut()) },
        libc::EINVAL,
    );
    assert_eq!(
        unsafe { zmq_msg_init_data(m, null_mut(), 0, None, null_mut()) },
        0
    );
    assert_eq!(zmq_msg_close(m), 0);
}

static FREED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn count_free(data: *mut c_void, hint: *mut c_void) {
    assert_eq!(hint as usize, 0x1234);
    drop(unsafe { Box::from_raw(data.cast::<[u8; 3]>()) });
    FREED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn free_function_runs_once() {
    let data = Box::into_raw(Box::new(*b"abc")).cast::<c_void>();
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    let rc = unsafe { zmq_msg_init_data(m, data, 3, Some(count_free), 0x1234 as *mut c_void) };
    assert_eq!(rc, 0);
    let mut copy = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let c = copy.as_mut_ptr();
    assert_eq!(zmq_msg_init(c), 0);
    assert_eq!(zmq_msg_copy(c, m), 0);
    assert_eq!(zmq_msg_close(m), 0);
    assert_eq!(FREED.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(zmq_msg_close(c), 0);
    assert_eq!(FREED.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn req_and_rep_out_of_turn() {
    let ctx = zmq_ctx_new();
    let rep = zmq_socket(ctx, 4);
    let req = zmq_socket(ctx, 3);
    let mut buf = [0u8; 16];
    // REQ must send first; REP must receive first.
    fails(
        unsafe { zmq_recv(req, buf.as_mut_ptr().cast(), 16, 0) },
        EFSM,
    );
    fails(unsafe { zmq_send(rep, b"x".as_ptr().cast(), 1, 0) }, EFSM);
    assert_eq!(int_opt(req, LINGER, 0), 0);
    assert_eq!(int_opt(rep, RCVTIMEO, 5000), 0);
    assert_eq!(int_opt(req, RCVTIMEO, 5000), 0);
    unsafe {
        assert_eq!(zmq_bind(rep, c"tcp://127.0.0.1:*".as_ptr()), 0);
        let mut endpoint = [0u8; 64];
        let mut len = endpoint.len();
        assert_eq!(
            zmq_getsockopt(rep, LAST_ENDPOINT, endpoint.as_mut_ptr().cast(), &mut len),
            0
        );
        assert_eq!(zmq_connect(req, endpoint.as_ptr().cast()), 0);
        assert_eq!(zmq_send(req, b"ping".as_ptr().cast(), 4, 0), 4);
        // A second request before the reply.
        fails(zmq_send(req, b"again".as_ptr().cast(), 5, 0), EFSM);
        // A truncated receive returns the whole size.
        assert_eq!(zmq_recv(rep, buf.as_mut_ptr().cast(), 2, 0), 4);
        assert_eq!(&buf[..2], b"pi");
        fails(zmq_recv(rep, buf.as_mut_ptr().cast(), 16, 0), EFSM);
        assert_eq!(get_int(rep, EVENTS) & POLLOUT, POLLOUT);
        assert_eq!(zmq_send_const(rep, b"pong".as_ptr().cast(), 4, 0), 4);
        assert_eq!(zmq_recv(req, buf.as_mut_ptr().cast(), 16, 0), 4);
        assert_eq!(&buf[..4], b"pong");
    }
    assert_eq!(zmq_close(req), 0);
    assert_eq!(zmq_close(rep), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn term_wakes_blocked_calls_with_eterm() {
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let handle = pull as usize;
    let waiter = std::thread::spawn(move || {
        let pull = handle as *mut c_void;
        let mut buf = [0u8; 4];
        let rc = unsafe { zmq_recv(pull, buf.as_mut_ptr().cast(), 4, 0) };
        let e = zmq_errno();
        // After ETERM the socket is still closed by its owner.
        assert_eq!(zmq_close(pull), 0);
        (rc, e)
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Blocks until the waiter has closed its socket.
    assert_eq!(zmq_ctx_term(ctx), 0);
    assert_eq!(waiter.join().unwrap(), (-1, ETERM));
}

#[test]
fn shutdown_then_calls_fail_with_eterm() {
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    assert_eq!(zmq_ctx_shutdown(ctx), 0);
    fails(unsafe { zmq_send(push, b"x".as_ptr().cast(), 1, 1) }, ETERM);
    fails(
        unsafe { zmq_connect(push, c"tcp://127.0.0.1:1".as_ptr()) },
        ETERM,
    );
    assert!(zmq_socket(ctx, 8).is_null());
    assert_eq!(errno(), ETERM);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn z85_and_curve_keys() {
    let data = [0x86u8, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
    let mut text = [0 as std::ffi::c_char; 11];
    assert!(!unsafe { zmq_z85_encode(text.as_mut_ptr(), data.as_ptr(), 8) }.is_null());
    assert_eq!(unsafe { CStr::from_ptr(text.as_ptr()) }, c"HelloWorld");
    assert!(unsafe { zmq_z85_encode(text.as_mut_ptr(), data.as_ptr(), 7) }.is_null());
    let mut back = [0u8; 8];
    assert!(!unsafe { zmq_z85_decode(back.as_mut_ptr(), c"HelloWorld".as_ptr()) }.is_null());
    assert_eq!(back, data);
    assert!(!unsafe { zmq_z85_decode(back.as_mut_ptr(), c"Hello".as_ptr()) }.is_null());
    assert!(unsafe { zmq_z85_decode(back.as_mut_ptr(), c"Hell".as_ptr()) }.is_null());
    let mut public = [0 as std::ffi::c_char; 41];
    let rc = unsafe {
        zmq_curve_public(
            public.as_mut_ptr(),
            c"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6".as_ptr(),
        )
    };
    assert_eq!(rc, 0);
    assert_eq!(
        unsafe { CStr::from_ptr(public.as_ptr()) },
        c"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    );
    let mut secret = [0 as std::ffi::c_char; 41];
    assert_eq!(
        unsafe { zmq_curve_keypair(public.as_mut_ptr(), secret.as_mut_ptr()) },
        0
    );
    let mut derived = [0 as std::ffi::c_char; 41];
    assert_eq!(
        unsafe { zmq_curve_public(derived.as_mut_ptr(), secret.as_ptr()) },
        0
    );
    assert_eq!(public, derived);
}

#[test]
fn counters_and_stopwatch() {
    let c = zmq_atomic_counter_new();
    unsafe {
        zmq_atomic_counter_set(c, 2);
        assert_eq!(zmq_atomic_counter_inc(c), 2);
        assert_eq!(zmq_atomic_counter_dec(c), 1);
        assert_eq!(zmq_atomic_counter_dec(c), 1);
        assert_eq!(zmq_atomic_counter_dec(c), 0);
        assert_eq!(zmq_atomic_counter_value(c), 0);
        let mut c = c;
        zmq_atomic_counter_destroy(&mut c);
        assert!(c.is_null());
        zmq_atomic_counter_destroy(&mut c);
        let w = zmq_stopwatch_start();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(zmq_stopwatch_intermediate(w) >= 2000);
        assert!(zmq_stopwatch_stop(w) >= 2000);
    }
}

#[test]
fn context_options() {
    let ctx = zmq_ctx_new();
    assert_eq!(zmq_ctx_get(ctx, 2), 1023); // ZMQ_MAX_SOCKETS
    assert_eq!(zmq_ctx_get(ctx, 3), 65535); // ZMQ_SOCKET_LIMIT
    assert_eq!(zmq_ctx_get(ctx, 6), 64); // ZMQ_MSG_T_SIZE
    assert_eq!(zmq_ctx_set(ctx, 2, 1), 0);
    let s = zmq_socket(ctx, 0);
    assert!(!s.is_null());
    assert!(zmq_socket(ctx, 0).is_null());
    assert_eq!(errno(), libc::EMFILE);
    fails(zmq_ctx_set(ctx, 999, 1), libc::EINVAL);
    fails(zmq_ctx_get(ctx, 999), libc::EINVAL);
    // ZMQ_THREAD_PRIORITY and ZMQ_THREAD_SCHED_POLICY: their defaults (-1) cannot be set.
    fails(zmq_ctx_set(ctx, 3, -1), libc::EINVAL);
    fails(zmq_ctx_set(ctx, 4, -1), libc::EINVAL);
    assert_eq!(zmq_ctx_set(ctx, 4, 0), 0);
    assert_eq!(zmq_ctx_get(ctx, 4), 0);
    let prefix = b"abc";
    assert_eq!(
        unsafe { zmq_ctx_set_ext(ctx, 9, prefix.as_ptr().cast(), 3) },
        0
    );
    let mut buf = [0u8; 16];
    let mut len = buf.len();
    assert_eq!(
        unsafe { zmq_ctx_get_ext(ctx, 9, buf.as_mut_ptr().cast(), &mut len) },
        0
    );
    assert_eq!(&buf[..len], b"abc\0");
    assert_eq!(zmq_close(s), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn term_wakes_a_poll_on_sockets_and_descriptors() {
    use zmq::poll::*;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let handle = pull as usize;
    let waiter = std::thread::spawn(move || {
        let pull = handle as *mut c_void;
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut items = [
            zmq_pollitem_t {
                socket: pull,
                fd: 0,
                events: POLLIN as i16,
                revents: 0,
            },
            zmq_pollitem_t {
                socket: null_mut(),
                fd: fds[0],
                events: POLLIN as i16,
                revents: 0,
            },
        ];
        let rc = unsafe { zmq_poll(items.as_mut_ptr(), 2, -1) };
        let e = zmq_errno();
        assert_eq!(zmq_close(pull), 0);
        (rc, e)
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(zmq_ctx_term(ctx), 0);
    assert_eq!(waiter.join().unwrap(), (-1, ETERM));
}

#[test]
fn term_wakes_a_poll_on_sockets() {
    use zmq::poll::*;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    let handle = pull as usize;
    let waiter = std::thread::spawn(move || {
        let pull = handle as *mut c_void;
        let mut items = [zmq_pollitem_t {
            socket: pull,
            fd: 0,
            events: POLLIN as i16,
            revents: 0,
        }];
        let rc = unsafe { zmq_poll(items.as_mut_ptr(), 1, -1) };
        let e = zmq_errno();
        assert_eq!(zmq_close(pull), 0);
        (rc, e)
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(zmq_ctx_term(ctx), 0);
    assert_eq!(waiter.join().unwrap(), (-1, ETERM));
}

#[test]
fn a_socket_closed_by_another_thread_is_gone_for_a_thread_that_just_used_it() {
    let ctx = zmq_ctx_new();
    let s = zmq_socket(ctx, 8) as usize; // PUSH
                                         // This thread looks the socket up (and keeps its last lookup).
    assert_eq!(int_opt(s as *mut c_void, LINGER, 0), 0);
    std::thread::spawn(move || assert_eq!(zmq_close(s as *mut c_void), 0))
        .join()
        .unwrap();
    fails(int_opt(s as *mut c_void, LINGER, 0), libc::ENOTSOCK);
    fails(
        unsafe { zmq_send(s as *mut c_void, b"x".as_ptr().cast(), 1, DONTWAIT) },
        libc::ENOTSOCK,
    );
    assert_eq!(zmq_ctx_term(ctx), 0);
}
