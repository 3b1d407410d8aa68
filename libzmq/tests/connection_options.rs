//! The options about connections coming and going, through the C API: `ZMQ_METADATA`
//! (and `zmq_msg_gets` on the peer), `ZMQ_HELLO_MSG`, `ZMQ_DISCONNECT_MSG`,
//! `ZMQ_HICCUP_MSG` and `ZMQ_RECONNECT_STOP`.

use std::ffi::{c_int, c_void, CStr};
use std::time::Duration;

use zmq::ctx::*;
use zmq::msg::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::{get_int, set_int};

const PUSH: c_int = 8;
const REQ: c_int = 3;
const REP: c_int = 4;
const SUB: c_int = 2;
const SERVER: c_int = 12;
const CLIENT: c_int = 13;

/// Set a binary option; the errno of a refusal, 0 when taken.
fn set_bytes(s: *mut c_void, option: c_int, value: &[u8]) -> c_int {
    match unsafe { zmq_setsockopt(s, option, value.as_ptr().cast(), value.len()) } {
        0 => 0,
        _ => zmq::error::zmq_errno(),
    }
}

fn send(s: *mut c_void, body: &[u8]) {
    let rc = unsafe { zmq_send(s, body.as_ptr().cast(), body.len(), 0) };
    assert_eq!(
        rc,
        body.len() as c_int,
        "send: errno {}",
        zmq::error::zmq_errno()
    );
}

/// One message's body and the named properties `zmq_msg_gets` gives for it.
fn recv_with(s: *mut c_void, names: &[&CStr]) -> (Vec<u8>, Vec<Option<String>>) {
    let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
    let m = msg.as_mut_ptr();
    assert_eq!(zmq_msg_init(m), 0);
    let n = zmq_msg_recv(m, s, 0);
    assert!(n >= 0, "recv: errno {}", zmq::error::zmq_errno());
    let body = unsafe { std::slice::from_raw_parts(zmq_msg_data(m).cast::<u8>(), zmq_msg_size(m)) }
        .to_vec();
    let props = names
        .iter()
        .map(|name| {
            let v = unsafe { zmq_msg_gets(m, name.as_ptr()) };
            (!v.is_null()).then(|| unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned())
        })
        .collect();
    assert_eq!(zmq_msg_close(m), 0);
    (body, props)
}

fn recv(s: *mut c_void) -> Vec<u8> {
    recv_with(s, &[]).0
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

fn bind_any(s: *mut c_void) -> String {
    assert_eq!(unsafe { zmq_bind(s, c"tcp://127.0.0.1:*".as_ptr()) }, 0);
    last_endpoint(s)
}

fn connect(s: *mut c_void, endpoint: &str) -> c_int {
    let endpoint = std::ffi::CString::new(endpoint).unwrap();
    unsafe { zmq_connect(s, endpoint.as_ptr()) }
}

fn socket(ctx: *mut c_void, ty: c_int) -> *mut c_void {
    let s = zmq_socket(ctx, ty);
    assert!(!s.is_null());
    set_int(s, LINGER, 0);
    set_int(s, RCVTIMEO, 5000);
    s
}

/// `ZMQ_METADATA` (95): "X-name:value" strings as libzmq parses them; the peer reads them
/// with `zmq_msg_gets`, along with `Socket-Type` and `Peer-Address`.
#[test]
fn metadata_is_checked_and_read_by_the_peer() {
    let ctx = zmq_ctx_new();
    let rep = socket(ctx, REP);
    let req = socket(ctx, REQ);
    for bad in [
        &b":"[..],
        b"key:",
        b":value",
        b"keyvalue",
        b"X-a:",
        b"Y-a:b",
        // sizeof(int) bytes are refused, whatever they say.
        b"X-:b",
    ] {
        assert_eq!(set_bytes(rep, METADATA, bad), libc::EINVAL, "{bad:?}");
    }
    let long = format!("X-{}:value", "k".repeat(254));
    assert_eq!(set_bytes(rep, METADATA, long.as_bytes()), libc::EINVAL);
    // More than a connection's properties hold (1024 bytes encoded; libzmq has no limit).
    let big = format!("X-big:{}", "v".repeat(2000));
    assert_eq!(set_bytes(rep, METADATA, big.as_bytes()), libc::EINVAL);
    assert_eq!(set_bytes(rep, METADATA, b"X-hello:world"), 0);
    // The first value given for a name stays, as in libzmq.
    assert_eq!(set_bytes(rep, METADATA, b"X-hello:again"), 0);
    assert_eq!(set_bytes(req, METADATA, b"X-hello:hello"), 0);
    assert_eq!(set_bytes(req, METADATA, b"X-colon:a:b"), 0);
    let ep = bind_any(rep);
    assert_eq!(connect(req, &ep), 0);
    send(req, b"q");
    let names = [
        c"X-hello",
        c"X-colon",
        c"Socket-Type",
        c"Peer-Address",
        c"X-none",
    ];
    let (body, props) = recv_with(rep, &names);
    assert_eq!(body, b"q");
    let expected = [
        Some("hello"),
        Some("a:b"),
        Some("REQ"),
        Some("127.0.0.1"),
        None,
    ];
    assert_eq!(props, expected.map(|p| p.map(String::from)));
    send(rep, b"a");
    let (_, props) = recv_with(req, &[c"X-hello"]);
    assert_eq!(props, [Some("world".to_string())]);
    zmq_close(req);
    zmq_close(rep);
    zmq_ctx_term(ctx);
}

/// `ZMQ_HELLO_MSG` (110), `ZMQ_DISCONNECT_MSG` (111), `ZMQ_HICCUP_MSG` (114): taken by
/// every type (and ignored by those that do not use them), each message arriving where
/// libzmq's does.
#[test]
fn hello_disconnect_and_hiccup_messages() {
    let ctx = zmq_ctx_new();
    let push = socket(ctx, PUSH);
    for option in [HELLO_MSG, DISCONNECT_MSG, HICCUP_MSG] {
        assert_eq!(set_bytes(push, option, b"x"), 0);
        assert_eq!(set_bytes(push, option, b""), 0, "empty: none");
        // Not readable, as in libzmq.
        let mut buf = [0u8; 8];
        let mut len = buf.len();
        let rc = unsafe { zmq_getsockopt(push, option, buf.as_mut_ptr().cast(), &mut len) };
        assert_eq!(rc, -1);
    }
    let server = socket(ctx, SERVER);
    assert_eq!(set_bytes(server, HELLO_MSG, b"W"), 0);
    assert_eq!(set_bytes(server, DISCONNECT_MSG, b"D"), 0);
    let ep = bind_any(server);
    let client = socket(ctx, CLIENT);
    assert_eq!(set_bytes(client, HELLO_MSG, b"H"), 0);
    assert_eq!(set_bytes(client, HICCUP_MSG, b"HICCUP"), 0);
    assert_eq!(connect(client, &ep), 0);
    assert_eq!(recv(server), b"H");
    assert_eq!(recv(client), b"W");
    // The server goes: the client hiccups.
    zmq_close(server);
    assert_eq!(recv(client), b"HICCUP");
    // A new server on the same endpoint: the client comes back, says hello, and leaves.
    let server = socket(ctx, SERVER);
    assert_eq!(set_bytes(server, DISCONNECT_MSG, b"D"), 0);
    let c_ep = std::ffi::CString::new(ep.clone()).unwrap();
    assert_eq!(unsafe { zmq_bind(server, c_ep.as_ptr()) }, 0);
    assert_eq!(recv(server), b"H");
    zmq_close(client);
    assert_eq!(recv(server), b"D");
    zmq_close(server);
    zmq_close(push);
    zmq_ctx_term(ctx);
}

/// `ZMQ_RECONNECT_STOP` (109): read back as set; with `ZMQ_RECONNECT_STOP_CONN_REFUSED`
/// a refused connect ends its endpoint (a later `zmq_disconnect` finds nothing).
#[test]
fn reconnect_stop_on_a_refused_connect() {
    let ctx = zmq_ctx_new();
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let c_ep = std::ffi::CString::new(ep.clone()).unwrap();
    for stop in [0, 1] {
        let sub = socket(ctx, SUB);
        assert_eq!(get_int(sub, RECONNECT_STOP), 0, "never, by default");
        set_int(sub, RECONNECT_STOP, stop | 2);
        assert_eq!(get_int(sub, RECONNECT_STOP), stop | 2);
        assert_eq!(connect(sub, &ep), 0);
        std::thread::sleep(Duration::from_millis(300));
        let rc = unsafe { zmq_disconnect(sub, c_ep.as_ptr()) };
        if stop == 1 {
            assert_eq!((rc, zmq::error::zmq_errno()), (-1, libc::ENOENT));
        } else {
            assert_eq!(rc, 0, "still reconnecting");
        }
        zmq_close(sub);
    }
    zmq_ctx_term(ctx);
}
