//! TCP options through the C API: `ZMQ_TCP_ACCEPT_FILTER` over real loopback connections,
//! `ZMQ_USE_FD`, `ZMQ_IPV6` wildcard binds, the `udp://` direction rules,
//! `ZMQ_SNDBUF`, `ZMQ_RCVBUF`, `ZMQ_TCP_KEEPALIVE*`, `ZMQ_TOS` and `ZMQ_TCP_MAXRT` applied,
//! and `ZMQ_BUSY_POLL` kept and read back.

use std::ffi::{c_int, c_void, CString};

use zmq::ctx::*;
use zmq::monitor::*;
use zmq::msg::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

/// `zmq_setsockopt(ZMQ_TCP_ACCEPT_FILTER, text)`: 0 or the errno.
fn filter(s: *mut c_void, text: Option<&str>) -> c_int {
    let (ptr, len) = match text {
        Some(t) => (t.as_ptr().cast::<c_void>(), t.len()),
        None => (std::ptr::null(), 0),
    };
    match unsafe { zmq_setsockopt(s, TCP_ACCEPT_FILTER, ptr, len) } {
        0 => 0,
        _ => errno(),
    }
}

#[test]
fn accept_filter_parses_like_libzmq_and_filters_peers() {
    let ctx = zmq_ctx_new();
    let server = zmq_socket(ctx, 0);
    set_int(server, LINGER, 0);
    for bad in [
        "foo",
        "0.0.0.0foo",
        "0.0.0.0/foo",
        "0.0.0.0/",
        "0.0.0.0/-1",
        "0.0.0.0/33",
    ] {
        assert_eq!(filter(server, Some(bad)), libc::EINVAL, "{bad}");
    }
    assert_eq!(
        filter(server, Some("::1")),
        libc::EINVAL,
        "IPv6 needs ZMQ_IPV6"
    );
    assert_eq!(
        filter(server, Some(&"1".repeat(256))),
        libc::EINVAL,
        "too long"
    );
    // Write-only, as in libzmq.
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    let rc =
        unsafe { zmq_getsockopt(server, TCP_ACCEPT_FILTER, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!((rc, errno()), (-1, libc::EINVAL));

    // A network that excludes 127.0.0.1: the connection is closed at accept, with
    // ACCEPT_FAILED on the monitor, and nothing arrives.
    assert_eq!(filter(server, Some("127.0.0.255/32")), 0);
    let rc = unsafe { zmq_socket_monitor(server, c"inproc://filter-mon".as_ptr(), 0x0040) };
    assert_eq!(rc, 0);
    let mon = zmq_socket(ctx, 0);
    set_int(mon, LINGER, 0);
    set_int(mon, RCVTIMEO, 5000);
    assert_eq!(
        unsafe { zmq_connect(mon, c"inproc://filter-mon".as_ptr()) },
        0
    );
    let endpoint = bind_at(server, c"tcp://127.0.0.1:*");
    assert!(
        !reaches(ctx, server, &endpoint, 300),
        "a filtered peer got through"
    );
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    assert_eq!(zmq_msg_init(m), 0);
    assert_eq!(
        zmq_msg_recv(m, mon, 0),
        6,
        "no ACCEPT_FAILED event: errno {}",
        errno()
    );
    let first = unsafe { std::slice::from_raw_parts(zmq_msg_data(m).cast::<u8>(), 6) };
    assert_eq!(u16::from_ne_bytes([first[0], first[1]]), 0x0040);
    assert_eq!(zmq_msg_close(m), 0);

    // A second network that holds it: accepted, as is everyone once the list is cleared.
    assert_eq!(filter(server, Some("127.0.0.0/8")), 0);
    assert!(
        reaches(ctx, server, &endpoint, 5000),
        "127.0.0.0/8 holds the peer"
    );
    assert_eq!(filter(server, None), 0);
    assert!(
        reaches(ctx, server, &endpoint, 5000),
        "no filter: every peer"
    );
    assert_eq!(filter(server, Some("0.0.0.0/0")), 0);
    assert!(
        reaches(ctx, server, &endpoint, 5000),
        "0.0.0.0/0 holds every IPv4 peer"
    );

    // With ZMQ_IPV6, an IPv6 network is taken; it does not hold an IPv4 peer.
    set_int(server, IPV6, 1);
    assert_eq!(filter(server, None), 0);
    assert_eq!(filter(server, Some("[::1]/128")), 0);
    assert!(
        !reaches(ctx, server, &endpoint, 300),
        "an IPv6 network held an IPv4 peer"
    );

    assert_eq!(
        unsafe { zmq_socket_monitor(server, std::ptr::null(), 0) },
        0
    );
    for s in [server, mon] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

#[test]
fn busy_poll_is_kept_and_read_back() {
    let ctx = zmq_ctx_new();
    let s = zmq_socket(ctx, 5);
    assert_eq!(get_int(s, BUSY_POLL), 0, "off by default");
    set_int(s, BUSY_POLL, 50);
    assert_eq!(get_int(s, BUSY_POLL), 50);
    assert_eq!(unsafe { zmq_bind(s, c"tcp://127.0.0.1:*".as_ptr()) }, 0);
    assert_eq!(zmq_close(s), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `ZMQ_SNDBUF` and `ZMQ_RCVBUF` are read back as given and set on the sockets bound and
/// connected afterwards, before the bind or connect (as libzmq sets them): at 4 KiB on
/// both ends, 400 messages of 8 KiB cross at once. (Set on the live connection, the same
/// sizes had it crawl at one segment per retransmission timer, 14 s for these messages.)
#[test]
fn kernel_buffer_sizes_apply_to_later_binds_and_connects() {
    const MESSAGES: usize = 400;
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    let pull = zmq_socket(ctx, 7);
    assert_eq!(get_int(push, SNDBUF), -1, "the system's default");
    for s in [push, pull] {
        set_int(s, SNDBUF, 4096);
        set_int(s, RCVBUF, 4096);
        assert_eq!((get_int(s, SNDBUF), get_int(s, RCVBUF)), (4096, 4096));
    }
    let bad: c_int = -2;
    let rc = unsafe { zmq_setsockopt(push, SNDBUF, (&bad as *const c_int).cast(), 4) };
    assert_eq!((rc, errno()), (-1, libc::EINVAL));
    let endpoint = bind_at(push, c"tcp://127.0.0.1:*");
    assert_eq!(unsafe { zmq_connect(pull, endpoint.as_ptr()) }, 0);
    set_int(pull, RCVTIMEO, 5000);
    let body = [7u8; 8192];
    let start = std::time::Instant::now();
    for _ in 0..MESSAGES {
        let sent = unsafe { zmq_send(push, body.as_ptr().cast(), body.len(), 0) };
        assert_eq!(sent, 8192, "errno {}", errno());
    }
    let mut buf = [0u8; 8192];
    for i in 0..MESSAGES {
        let got = unsafe { zmq_recv(pull, buf.as_mut_ptr().cast(), buf.len(), 0) };
        assert_eq!(got, 8192, "message {i}: errno {}", errno());
    }
    let took = start.elapsed();
    assert!(
        took < std::time::Duration::from_secs(5),
        "{MESSAGES} messages took {took:?}"
    );
    set_int(push, SNDBUF, -1);
    assert_eq!(get_int(push, SNDBUF), -1);
    for s in [push, pull] {
        set_int(s, LINGER, 0);
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// An int socket option of descriptor `fd` (`getsockopt(2)`).
fn sockopt(fd: c_int, level: c_int, name: c_int) -> c_int {
    let mut v: c_int = -1;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live locals of the sizes given; an unknown descriptor
    // only makes the call fail.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut c_int).cast(), &mut len) };
    assert_eq!(rc, 0, "getsockopt({fd}, {level}, {name})");
    v
}

/// The descriptor of this process's socket whose local address is `addr`.
fn socket_at(addr: std::net::SocketAddr) -> c_int {
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<c_int>() else {
            continue;
        };
        // SAFETY: `sockaddr_in` is plain data, valid all zeroes.
        let mut storage: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: `storage` is a live `sockaddr_in` of `len` bytes; a descriptor that is
        // not a socket only makes the call fail.
        let rc = unsafe {
            libc::getsockname(
                fd,
                (&mut storage as *mut libc::sockaddr_in).cast(),
                &mut len,
            )
        };
        if rc != 0 || c_int::from(storage.sin_family) != libc::AF_INET {
            continue;
        }
        let ip = std::net::Ipv4Addr::from(u32::from_be(storage.sin_addr.s_addr));
        let port = u16::from_be(storage.sin_port);
        if std::net::SocketAddr::from((ip, port)) == addr {
            return fd;
        }
    }
    panic!("no socket of ours at {addr}");
}

/// `ZMQ_TCP_KEEPALIVE` with its `_CNT`, `_IDLE` and `_INTVL`, `ZMQ_TOS` and
/// `ZMQ_TCP_MAXRT`, set before a connect: the connection's socket has them, as the kernel
/// reports them.
#[test]
fn keepalive_tos_and_maxrt_are_set_on_the_connections_made() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = CString::new(format!("tcp://{}", listener.local_addr().unwrap())).unwrap();
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    for (option, value) in [
        (TCP_KEEPALIVE, 1),
        (TCP_KEEPALIVE_CNT, 4),
        (TCP_KEEPALIVE_IDLE, 30),
        (TCP_KEEPALIVE_INTVL, 7),
        (TOS, 0x28),
        (TCP_MAXRT, 1500),
    ] {
        set_int(push, option, value);
        assert_eq!(get_int(push, option), value, "option {option} read back");
    }
    assert_eq!(unsafe { zmq_connect(push, endpoint.as_ptr()) }, 0);
    let (theirs, ours) = listener.accept().unwrap();
    let fd = socket_at(ours);
    assert_eq!(sockopt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 1);
    assert_eq!(sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT), 4);
    assert_eq!(sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE), 30);
    assert_eq!(sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL), 7);
    assert_eq!(sockopt(fd, libc::IPPROTO_IP, libc::IP_TOS), 0x28);
    assert_eq!(sockopt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT), 1500);
    drop(theirs);
    set_int(push, LINGER, 0);
    assert_eq!(zmq_close(push), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `ZMQ_USE_FD`: the next `tcp://` or `ipc://` bind listens on the given socket (once:
/// a later bind makes its own); a descriptor that is not a listening socket is refused
/// and left open.
#[test]
fn use_fd_binds_on_the_given_listening_socket() {
    use std::os::fd::IntoRawFd;
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 0);
    set_int(pull, LINGER, 0);
    assert_eq!(get_int(pull, USE_FD), -1, "none by default");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fd = listener.into_raw_fd();
    set_int(pull, USE_FD, fd);
    assert_eq!(get_int(pull, USE_FD), fd);
    // The endpoint's port is not used: the socket's is.
    let endpoint = bind_at(pull, c"tcp://127.0.0.1:*");
    assert_eq!(
        endpoint.to_str().unwrap(),
        format!("tcp://127.0.0.1:{port}")
    );
    assert!(
        reaches(ctx, pull, &endpoint, 5000),
        "nothing through the given socket"
    );
    // Taken once: the next bind makes its own listener.
    let other = bind_at(pull, c"tcp://127.0.0.1:*");
    assert_ne!(other, endpoint);
    assert!(reaches(ctx, pull, &other, 5000));

    // Not a socket (a pipe): ENOTSOCK, and the pipe is still open.
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let push = zmq_socket(ctx, 8);
    set_int(push, USE_FD, fds[0]);
    assert_eq!(unsafe { zmq_bind(push, c"tcp://127.0.0.1:*".as_ptr()) }, -1);
    assert_eq!(errno(), libc::ENOTSOCK);
    assert_ne!(
        unsafe { libc::fcntl(fds[0], libc::F_GETFD) },
        -1,
        "the pipe was closed"
    );
    // A socket that does not listen: EINVAL.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    set_int(push, USE_FD, std::os::fd::AsRawFd::as_raw_fd(&udp));
    assert_eq!(unsafe { zmq_bind(push, c"tcp://127.0.0.1:*".as_ptr()) }, -1);
    assert_eq!(errno(), libc::EINVAL);
    // Connects do not use it.
    assert_eq!(unsafe { zmq_connect(push, endpoint.as_ptr()) }, 0);
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }

    for s in [pull, push] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// With `ZMQ_IPV6`, a bind to every interface (`*`) is an IPv6 one that takes IPv4 peers
/// too, as libzmq's is: a PAIR bound at `tcp://*:*` is reached over `::1` and
/// `127.0.0.1`, and a DISH bound at `udp://*:port` hears a RADIO sending to `::1`.
#[test]
fn ipv6_wildcard_binds_are_dual_stack() {
    let ctx = zmq_ctx_new();
    let server = zmq_socket(ctx, 0);
    set_int(server, LINGER, 0);
    set_int(server, IPV6, 1);
    let bound = bind_at(server, c"tcp://*:*").into_string().unwrap();
    let port = bound.rsplit(':').next().unwrap();
    assert!(bound.starts_with("tcp://[::]:"), "{bound}");
    for host in ["127.0.0.1", "[::1]"] {
        let endpoint = CString::new(format!("tcp://{host}:{port}")).unwrap();
        assert!(
            reaches(ctx, server, &endpoint, 5000),
            "not reached over {host}"
        );
    }
    assert_eq!(zmq_close(server), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}

/// `udp://`: a RADIO only connects and a DISH only binds (`ENOCOMPATPROTO` otherwise).
#[test]
fn radio_binds_and_dish_connects_are_refused_on_udp() {
    const RADIO: c_int = 14;
    const DISH: c_int = 15;
    let ctx = zmq_ctx_new();
    let radio = zmq_socket(ctx, RADIO);
    let dish = zmq_socket(ctx, DISH);
    assert_eq!(unsafe { zmq_bind(radio, c"udp://*:5556".as_ptr()) }, -1);
    assert_eq!(errno(), zmq::error::ENOCOMPATPROTO);
    assert_eq!(
        unsafe { zmq_connect(dish, c"udp://127.0.0.1:5556".as_ptr()) },
        -1
    );
    assert_eq!(errno(), zmq::error::ENOCOMPATPROTO);
    // Over tcp both ways are fine.
    assert_eq!(unsafe { zmq_bind(radio, c"tcp://127.0.0.1:*".as_ptr()) }, 0);
    for s in [radio, dish] {
        assert_eq!(zmq_close(s), 0);
    }
    assert_eq!(zmq_ctx_term(ctx), 0);
}
