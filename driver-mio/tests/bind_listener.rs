//! `Socket::bind_listener`: listening on a socket made elsewhere (a service manager's, or
//! libzmq's `ZMQ_USE_FD`), for `tcp://`, `ws://` and `ipc://`.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use zmtp_mio::{Context, Error, SocketType};

const T: Option<Duration> = Some(Duration::from_secs(5));

/// A PULL listening on `listener` for `endpoint`'s transport gets what a PUSH sends to
/// the endpoint it reports; returns that endpoint.
fn round_trip(endpoint: &str, listener: OwnedFd) -> String {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let bound = pull.bind_listener(endpoint, listener).unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&bound).unwrap();
    push.send("through the given listener").unwrap();
    let got = pull.recv_timeout(T).unwrap();
    assert_eq!(got.to_str(), Ok("through the given listener"));
    bound
}

#[test]
fn tcp_and_ws_listen_on_the_given_socket() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The endpoint's own address is not used: the socket's is.
    let bound = round_trip("tcp://*:*", OwnedFd::from(listener));
    assert_eq!(bound, format!("tcp://127.0.0.1:{port}"));

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bound = round_trip("ws://127.0.0.1:*/zmq", OwnedFd::from(listener));
    assert!(
        bound.starts_with(&format!("ws://127.0.0.1:{port}")),
        "{bound}"
    );
}

#[test]
fn ipc_listens_on_the_given_socket_and_leaves_its_file() {
    let dir = std::env::temp_dir().join(format!("zmtp-bind-listener-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("given.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let bound = round_trip("ipc://*", OwnedFd::from(listener));
    assert_eq!(bound, format!("ipc://{}", path.display()));
    assert!(path.exists(), "whoever bound the file owns it");
    std::fs::remove_dir_all(&dir).unwrap();

    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("zmtp-bind-listener-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        assert_eq!(
            round_trip("ipc://*", OwnedFd::from(listener)),
            format!("ipc://@{name}")
        );
    }
}

#[test]
fn a_socket_that_does_not_listen_or_is_of_another_kind_is_refused() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let err = pull
        .bind_listener("tcp://127.0.0.1:*", OwnedFd::from(udp))
        .unwrap_err();
    assert!(matches!(err, Error::Bind { .. }), "{err:?}");
    assert!(err.to_string().contains("not a listening socket"), "{err}");

    // A TCP listener for an ipc:// endpoint.
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = pull
        .bind_listener("ipc://*", OwnedFd::from(tcp))
        .unwrap_err();
    assert!(err.to_string().contains("not a Unix socket"), "{err}");

    // The socket still binds as usual afterwards.
    assert!(pull.bind("tcp://127.0.0.1:*").is_ok());
}
