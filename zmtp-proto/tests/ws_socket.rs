//! `ws://` between sockets, in virtual time: the ZWS layer under an unchanged connection
//! (upgrade, WebSocket framing, pings, close), every pattern family across it, and the
//! bytes on the wire against libzmq 4.3.5's (the captures of the ZMTP notes, section 9.1).

use std::time::Duration;

use zmtp_proto::codec::Status;
use zmtp_proto::socket::{AuthReply, Endpoint, MonitorEventKind, ZapRequest};
use zmtp_proto::ws::{AcceptKey, Decoder, Received, Role};
use zmtp_proto::Error;
use zmtp_proto::SocketType::*;
use zmtp_testkit::cluster::{Cluster, Node, Remote};
use zmtp_testkit::message::{m, opts, text};
use zmtp_testkit::wire::zws;

const EP: &str = "ws://127.0.0.1:7100";

fn pair_of(
    c: &mut Cluster,
    server: zmtp_proto::SocketType,
    client: zmtp_proto::SocketType,
) -> (Node, Node) {
    let s = c.add_default(server);
    let ep = c.bind(s, "ws://127.0.0.1:*");
    assert!(
        ep.starts_with("ws://127.0.0.1:") && !ep.ends_with('*'),
        "{ep}"
    );
    let k = c.add_default(client);
    c.connect(k, &ep);
    c.run_until_idle();
    (s, k)
}

fn recv_texts(c: &mut Cluster, n: Node) -> Vec<String> {
    c.recv_all(n).iter().map(text).collect()
}

#[test]
fn bind_resolves_to_a_ws_endpoint_with_its_path() {
    let mut c = Cluster::new(1);
    let s = c.add_default(Pull);
    let ep = c.bind(s, "ws://127.0.0.1:*/feed");
    assert!(
        ep.starts_with("ws://127.0.0.1:") && ep.ends_with("/feed"),
        "{ep}"
    );
    assert_eq!(c.socket(s).last_endpoint(), ep);
    assert!(matches!(Endpoint::parse(&ep), Ok(Endpoint::Ws(_))));
}

#[test]
fn push_pull_over_ws() {
    let mut c = Cluster::new(2);
    let (pull, push) = pair_of(&mut c, Pull, Push);
    let big = "x".repeat(70_000);
    c.send(push, m(&["a"])).unwrap();
    c.send(push, m(&["b", "c"])).unwrap();
    c.send(push, m(&[&big])).unwrap();
    c.run_until_idle();
    let got = c.recv_all(pull);
    assert_eq!(got.len(), 3);
    assert_eq!(text(&got[0]), "a");
    assert_eq!(got[1].len(), 2);
    assert_eq!(text(&got[2]), big);
}

#[test]
fn req_rep_over_ws() {
    let mut c = Cluster::new(3);
    let (rep, req) = pair_of(&mut c, Rep, Req);
    for i in 0..3 {
        c.send(req, m(&[&format!("q{i}")])).unwrap();
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, rep), [format!("q{i}")]);
        c.send(rep, m(&[&format!("r{i}")])).unwrap();
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, req), [format!("r{i}")]);
    }
}

#[test]
fn pub_sub_with_a_subscription_over_ws() {
    let mut c = Cluster::new(4);
    let (publ, sub) = pair_of(&mut c, Pub, Sub);
    c.socket(sub).subscribe(b"news");
    c.run_until_idle();
    for t in ["news 1", "weather", "news 2"] {
        c.send(publ, m(&[t])).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["news 1", "news 2"]);
    c.socket(sub).unsubscribe(b"news");
    c.run_until_idle();
    c.send(publ, m(&["news 3"])).unwrap();
    c.run_until_idle();
    assert!(c.recv_all(sub).is_empty());
}

#[test]
fn dealer_router_over_ws() {
    let mut c = Cluster::new(5);
    let (router, dealer) = pair_of(&mut c, Router, Dealer);
    c.send(dealer, m(&["hi"])).unwrap();
    c.run_until_idle();
    let got = c.recv(router).unwrap();
    assert_eq!(got.len(), 2);
    let id = got.frames()[0].clone();
    c.send(
        router,
        zmtp_proto::socket::Message::from(vec![id, "back".into()]),
    )
    .unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["back"]);
}

#[test]
fn heartbeats_over_ws_keep_an_idle_connection() {
    let mut c = Cluster::new(6);
    let pull = c.add_default(Pull);
    c.bind(pull, EP);
    let push = c.add(
        Push,
        opts(|o| {
            o.heartbeat_ivl = Some(Duration::from_millis(100));
            o.heartbeat_timeout = Some(Duration::from_millis(300));
        }),
    );
    c.monitor_all(push);
    c.connect(push, EP);
    c.run_until_idle();
    for _ in 0..30 {
        assert!(c.advance_to_next_timer());
        c.run_until_idle();
    }
    assert!(c.elapsed() >= Duration::from_secs(1));
    assert!(!c
        .monitor_kinds(push)
        .contains(&MonitorEventKind::Disconnected));
    c.send(push, m(&["still here"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, pull), ["still here"]);
}

#[cfg(feature = "curve")]
#[test]
fn curve_over_ws_with_heartbeats() {
    use zmtp_proto::curve_crypto::KeyPair;
    use zmtp_proto::mechanism::Security;
    let keys = |n: u8| KeyPair::from_secret([n; 32]);
    let mut c = Cluster::new(7);
    let server = c.add(
        Pull,
        opts(|o| o.security = Security::CurveServer { keys: keys(1) }),
    );
    let ep = c.bind(server, "ws://127.0.0.1:*");
    let client = c.add(
        Push,
        opts(|o| {
            o.security = Security::CurveClient {
                server_key: keys(1).public,
                keys: keys(2),
            };
            o.heartbeat_ivl = Some(Duration::from_millis(100));
            o.heartbeat_timeout = Some(Duration::from_millis(300));
        }),
    );
    c.monitor_all(client);
    c.connect(client, &ep);
    c.run_until_idle();
    // Heartbeats under CURVE are WebSocket pings too, answered, so the idle link lives.
    for _ in 0..30 {
        assert!(c.advance_to_next_timer());
        c.run_until_idle();
    }
    assert!(!c
        .monitor_kinds(client)
        .contains(&MonitorEventKind::Disconnected));
    c.send(client, m(&["secret", "two"])).unwrap();
    c.run_until_idle();
    let got = c.recv(server).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(&got.frames()[0][..], b"secret");
}

#[test]
fn plain_over_ws() {
    use zmtp_proto::mechanism::Security;
    let mut c = Cluster::new(8);
    let server = c.add(
        Pull,
        opts(|o| {
            o.security = Security::PlainServer;
            o.zap_domain = zmtp_proto::Bytes::from_static(b"global");
        }),
    );
    c.members_mut(server).authenticator = Some(|req: &ZapRequest| {
        let ok = req.credentials.len() == 2 && &req.credentials[0][..] == b"admin";
        if ok {
            AuthReply::Verdict {
                status: 200,
                user_id: zmtp_proto::Bytes::from_static(b"admin"),
                metadata: zmtp_proto::Bytes::new(),
            }
        } else {
            AuthReply::status(400)
        }
    });
    let ep = c.bind(server, "ws://127.0.0.1:*");
    let client = c.add(
        Push,
        opts(|o| o.security = Security::plain_client("admin", "secret").unwrap()),
    );
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, m(&["plain"])).unwrap();
    c.run_until_idle();
    assert_eq!(c.member(server).auth_requests.len(), 1);
    assert_eq!(recv_texts(&mut c, server), ["plain"]);
}

// ----- the wire, against libzmq's bytes ---------------------------------------------------

/// Everything the socket writes to the remote now.
fn drain(c: &mut Cluster, r: Remote) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let chunk = c.remote_receive(r, 0);
        if chunk.is_empty() {
            return out;
        }
        out.extend_from_slice(&chunk);
    }
}

#[test]
fn server_answers_libzmq_request_and_frames_as_libzmq() {
    let mut c = Cluster::new(9);
    let pair = c.add_default(Pair);
    c.bind(pair, "ws://127.0.0.1:5555");
    let r = c.accept_remote("ws://127.0.0.1:5555").unwrap();
    // Nothing before the request: no ZMTP greeting.
    assert!(drain(&mut c, r).is_empty());
    assert!(c.remote_send(r, zws::NULL_REQUEST));
    assert_eq!(
        drain(&mut c, r),
        [zws::NULL_RESPONSE, zws::SERVER_READY].concat()
    );
    assert!(c.remote_send(r, zws::CLIENT_READY));
    // A masked one-frame message "ping" from the client.
    let mut data = vec![0x82, 0x85, 1, 2, 3, 4];
    data.extend(
        b"\x00ping"
            .iter()
            .zip([1u8, 2, 3, 4].iter().cycle())
            .map(|(b, k)| b ^ k),
    );
    assert!(c.remote_send(r, &data));
    assert_eq!(c.recv(pair).map(|m| text(&m)).as_deref(), Some("ping"));
    c.send(pair, m(&["pong"])).unwrap();
    assert_eq!(drain(&mut c, r), zws::SERVER_DATA);
    // A masked ping with a payload: an empty pong, as libzmq answers.
    assert!(c.remote_send(r, &[0x89, 0x82, 9, 9, 9, 9, b'h' ^ 9, b'i' ^ 9]));
    assert_eq!(drain(&mut c, r), zws::PONG);
    // A masked close (1000, "bye"): the stream ends.
    c.monitor_all(pair);
    let mut close = vec![0x88, 0x85, 0, 0, 0, 0];
    close.extend_from_slice(b"\x03\xe8bye");
    assert!(c.remote_send(r, &close));
    c.run_until_idle();
    assert!(!c.remote_open(r));
    let ended = c.take_monitor(pair);
    let disconnected = ended
        .iter()
        .find(|e| e.kind == MonitorEventKind::Disconnected)
        .expect("disconnected");
    assert_eq!(disconnected.error, Some(Error::WsClosed));
}

#[test]
fn client_sends_libzmq_request_and_masks_its_frames() {
    let mut c = Cluster::new(10);
    let pair = c.add_default(Pair);
    c.hold_connects_to("ws://127.0.0.1:5555/some/path?q=1");
    c.connect(pair, "ws://127.0.0.1:5555/some/path?q=1");
    c.run_until_idle();
    let ep = c.take_held_connect(pair).unwrap();
    let r = c.connect_remote(pair, ep).unwrap();
    let request = String::from_utf8(drain(&mut c, r)).unwrap();
    let expected = std::str::from_utf8(zws::NULL_REQUEST).unwrap();
    // As libzmq's but for the key, which our seeded entropy draws.
    let key_line = request
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap()
        .to_string();
    assert_eq!(request.replace(&key_line, zws::LIBZMQ_KEY), expected);
    let accept = AcceptKey::for_key(key_line.as_bytes());
    let response = String::from_utf8(zws::NULL_RESPONSE.to_vec())
        .unwrap()
        .replace("/M1LsUpCyYJVVMypSkXZRJ/IOlc=", accept.as_str());
    assert!(c.remote_send(r, response.as_bytes()));
    assert!(c.remote_send(r, zws::SERVER_READY));
    // Our READY: the same command, masked.
    let mut ready = drain(&mut c, r);
    let server = Decoder::new(Role::Server, None);
    let Ok(Status::Complete((Received::Frame { flags, body }, used))) = server.decode(&mut ready)
    else {
        panic!("{ready:x?}")
    };
    assert_eq!(used, zws::CLIENT_READY.len());
    assert!(flags.command && !flags.more);
    assert_eq!(&ready[body], &zws::SERVER_READY[3..]);
    // libzmq's data frame and ping.
    assert!(c.remote_send(r, zws::SERVER_DATA));
    assert_eq!(c.recv(pair).map(|m| text(&m)).as_deref(), Some("pong"));
    assert!(c.remote_send(r, b"\x89\x00"));
    let mut pong = drain(&mut c, r);
    assert_eq!(&pong[..2], b"\x8a\x80", "a masked empty pong: {pong:x?}");
    assert!(matches!(
        server.decode(&mut pong),
        Ok(Status::Complete((Received::Pong { .. }, 6)))
    ));
}

/// A client's frame: FIN, binary, masked with `key` (bodies under 126 bytes).
fn masked(flags: u8, body: &[u8], key: [u8; 4]) -> Vec<u8> {
    let mut frame = vec![0x82, 0x80 | (body.len() as u8 + 1)];
    frame.extend_from_slice(&key);
    let payload = std::iter::once(flags).chain(body.iter().copied());
    frame.extend(payload.zip(key.iter().cycle()).map(|(b, k)| b ^ k));
    frame
}

/// A NULL client's request offering only bare `ZWS2.0`, as a browser must (its WebSocket
/// API refuses the `/` of `ZWS2.0/NULL`).
fn bare_request() -> String {
    std::str::from_utf8(zws::NULL_REQUEST)
        .unwrap()
        .replace("ZWS2.0/NULL,ZWS2.0", "ZWS2.0")
}

#[test]
fn bare_zws_server_exchanges_routing_ids_in_place_of_ready() {
    let mut c = Cluster::new(12);
    let rep = c.add_default(Rep);
    c.bind(rep, EP);
    let r = c.accept_remote(EP).unwrap();
    assert!(c.remote_send(r, bare_request().as_bytes()));
    // The answer names bare ZWS2.0; then our routing id (empty) in place of READY.
    let response = std::str::from_utf8(zws::NULL_RESPONSE)
        .unwrap()
        .replace("ZWS2.0/NULL", "ZWS2.0");
    assert_eq!(
        drain(&mut c, r),
        [response.as_bytes(), b"\x82\x01\x00"].concat()
    );
    // The client's id, then a request [empty MORE]["hello"]: no READY, no type check.
    let key = [5, 6, 7, 8];
    assert!(c.remote_send(r, &masked(0x00, b"browser", key)));
    assert!(c.remote_send(r, &masked(0x01, b"", key)));
    assert!(c.remote_send(r, &masked(0x00, b"hello", key)));
    let request = c.recv(rep).expect("a request");
    assert_eq!(text(&request), "hello");
    c.send(rep, m(&["world"])).unwrap();
    assert_eq!(drain(&mut c, r), b"\x82\x01\x01\x82\x06\x00world");
}

#[test]
fn bare_zws_router_takes_the_client_id_as_routing_id() {
    let mut c = Cluster::new(13);
    let router = c.add_default(Router);
    c.bind(router, EP);
    let r = c.accept_remote(EP).unwrap();
    assert!(c.remote_send(r, bare_request().as_bytes()));
    drain(&mut c, r);
    let key = [1, 2, 3, 4];
    assert!(c.remote_send(r, &masked(0x00, b"tab-1", key)));
    assert!(c.remote_send(r, &masked(0x00, b"hi", key)));
    let msg = c.recv(router).expect("a message");
    let frames: Vec<String> = msg
        .frames()
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    assert_eq!(frames, ["tab-1", "hi"]);
    c.send(router, m(&["tab-1", "back"])).unwrap();
    assert_eq!(drain(&mut c, r), b"\x82\x05\x00back");
}

#[test]
fn bare_zws_client_sends_its_id_in_place_of_ready() {
    let mut c = Cluster::new(14);
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "me".into()));
    c.hold_connects_to(EP);
    c.connect(dealer, EP);
    c.run_until_idle();
    let ep = c.take_held_connect(dealer).unwrap();
    let r = c.connect_remote(dealer, ep).unwrap();
    let request = String::from_utf8(drain(&mut c, r)).unwrap();
    let key_line = request
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap()
        .to_string();
    let accept = AcceptKey::for_key(key_line.as_bytes());
    let response = String::from_utf8(zws::NULL_RESPONSE.to_vec())
        .unwrap()
        .replace("/M1LsUpCyYJVVMypSkXZRJ/IOlc=", accept.as_str())
        .replace("ZWS2.0/NULL", "ZWS2.0");
    assert!(c.remote_send(r, response.as_bytes()));
    assert!(c.remote_send(r, b"\x82\x01\x00"));
    // Our routing id, masked, in place of READY.
    let mut id = drain(&mut c, r);
    let server = Decoder::new(Role::Server, None);
    let Ok(Status::Complete((Received::Frame { flags, body }, _))) = server.decode(&mut id) else {
        panic!("{id:x?}")
    };
    assert!(!flags.command && !flags.more);
    assert_eq!(&id[body], b"me");
    assert!(c.remote_send(r, b"\x82\x03\x00hi"));
    assert_eq!(c.recv(dealer).map(|m| text(&m)).as_deref(), Some("hi"));
}

#[test]
fn refusals_are_typed() {
    let mut c = Cluster::new(11);
    let pair = c.add_default(Pair);
    c.monitor_all(pair);
    c.bind(pair, EP);

    // A server sent an unmasked frame (hostile client).
    let r = c.accept_remote(EP).unwrap();
    assert!(c.remote_send(r, zws::NULL_REQUEST));
    assert!(c.remote_send(r, zws::SERVER_READY));
    c.run_until_idle();
    assert!(!c.remote_open(r));
    let errors: Vec<_> = c
        .take_monitor(pair)
        .into_iter()
        .filter_map(|e| e.error)
        .collect();
    assert!(
        errors.contains(&Error::WsFrame(zmtp_proto::ws::FrameError::Unmasked)),
        "{errors:?}"
    );

    // A client got a non-101 answer.
    let client = c.add_default(Pair);
    c.monitor_all(client);
    c.hold_connects_to("ws://127.0.0.1:5556");
    c.connect(client, "ws://127.0.0.1:5556");
    c.run_until_idle();
    let ep = c.take_held_connect(client).unwrap();
    let r = c.connect_remote(client, ep).unwrap();
    drain(&mut c, r);
    assert!(c.remote_send(r, zmtp_proto::ws::REJECTION));
    c.run_until_idle();
    assert!(!c.remote_open(r));
    let errors: Vec<_> = c
        .take_monitor(client)
        .into_iter()
        .filter_map(|e| e.error)
        .collect();
    assert!(
        errors.contains(&Error::WsHandshake(
            zmtp_proto::ws::HandshakeError::UnexpectedStatus(400)
        )),
        "{errors:?}"
    );
}

#[test]
fn ws_endpoints_parse_check_and_display() {
    use zmtp_proto::socket::endpoint::{Host, TcpEndpoint, WsEndpoint};
    use zmtp_proto::socket::EndpointError as E;
    let ws = |host: Host, port: Option<u16>, path: &str| {
        Endpoint::Ws(WsEndpoint {
            tcp: TcpEndpoint {
                host,
                port,
                source: None,
            },
            path: path.to_string(),
            tls: false,
        })
    };
    let wss = |host: Host, port: Option<u16>, path: &str| {
        Endpoint::Ws(WsEndpoint {
            tcp: TcpEndpoint {
                host,
                port,
                source: None,
            },
            path: path.to_string(),
            tls: true,
        })
    };
    let local = || Host::Ipv4([127, 0, 0, 1].into());
    for (text, parsed) in [
        ("ws://127.0.0.1:5555", ws(local(), Some(5555), "")),
        ("ws://127.0.0.1:*", ws(local(), None, "")),
        ("ws://*:5555/feed", ws(Host::Any, Some(5555), "/feed")),
        (
            "ws://h.example:1/some/path?q=1",
            ws(Host::Name("h.example".into()), Some(1), "/some/path?q=1"),
        ),
        (
            "ws://[::1]:80/",
            ws(Host::Ipv6("::1".parse().unwrap()), Some(80), "/"),
        ),
        ("wss://127.0.0.1:443", wss(local(), Some(443), "")),
        (
            "wss://h.example:*/feed",
            wss(Host::Name("h.example".into()), None, "/feed"),
        ),
    ] {
        let e = Endpoint::parse(text).unwrap();
        assert_eq!(e, parsed, "{text}");
        assert_eq!(e.to_string(), text);
        assert_eq!(e.transport(), text.split_once("://").unwrap().0);
        assert!(e.check_bind().is_ok());
        assert_eq!(
            e.tcp(),
            match &parsed {
                Endpoint::Ws(w) => Some(&w.tcp),
                _ => None,
            }
        );
    }
    assert_eq!(
        Endpoint::parse("ws://*:5555").unwrap().check_connect(),
        Err(E::WildcardHostOnConnect)
    );
    assert_eq!(
        Endpoint::parse("ws://127.0.0.1:*/x")
            .unwrap()
            .check_connect(),
        Err(E::WildcardPortOnConnect)
    );
    assert_eq!(
        Endpoint::parse("wss://*:5555").unwrap().check_connect(),
        Err(E::WildcardHostOnConnect)
    );
    assert_eq!(Endpoint::parse("ws://127.0.0.1"), Err(E::MissingPort));
    assert_eq!(Endpoint::parse("wss://127.0.0.1"), Err(E::MissingPort));
    assert_eq!(
        Endpoint::parse("ws://127.0.0.1:1/a b"),
        Err(E::BadWsPath("/a b".into()))
    );
    // The request path starts at the last '/', as libzmq's does.
    let mut c = Cluster::new(12);
    let pair = c.add_default(Pair);
    c.hold_connects_to("ws://127.0.0.1:5555/a/b");
    c.connect(pair, "ws://127.0.0.1:5555/a/b");
    c.run_until_idle();
    let ep = c.take_held_connect(pair).unwrap();
    let r = c.connect_remote(pair, ep).unwrap();
    let request = String::from_utf8(drain(&mut c, r)).unwrap();
    assert!(
        request.starts_with("GET /b HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
        "{request}"
    );
}
