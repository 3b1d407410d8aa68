//! Security at the socket level: authentication requests, verdicts, libzmq's rules without
//! a handler, and the properties of authenticated peers, in the in-memory cluster.

use bytes::Bytes;
use zmtp_proto::mechanism::Security;
use zmtp_proto::socket::{AuthReply, MonitorEventKind, ZapRequest};
use zmtp_proto::SocketType::*;
use zmtp_testkit::cluster::{Cluster, Node};
use zmtp_testkit::message::{frames, msg, opts};

const ANY: &str = "tcp://127.0.0.1:*";

fn plain_table(req: &ZapRequest) -> AuthReply {
    match &req.credentials[..] {
        [user, pass] if &user[..] == b"admin" && &pass[..] == b"secret" => AuthReply::Verdict {
            status: 200,
            user_id: Bytes::from_static(b"the-admin"),
            metadata: Bytes::from_static(b"\x06X-Role\x00\x00\x00\x04boss"),
        },
        _ => AuthReply::status(400),
    }
}

fn auth_events(c: &Cluster, n: Node) -> Vec<(MonitorEventKind, u32)> {
    c.member(n)
        .monitor
        .iter()
        .filter(|e| e.kind == MonitorEventKind::HandshakeFailedAuth)
        .map(|e| (e.kind, e.value))
        .collect()
}

/// The handshake failures other than authentication's (HANDSHAKE_FAILED_NO_DETAIL), with
/// their values.
fn no_detail_events(c: &Cluster, n: Node) -> Vec<(MonitorEventKind, u32)> {
    c.member(n)
        .monitor
        .iter()
        .filter(|e| e.kind == MonitorEventKind::HandshakeFailedNoDetail)
        .map(|e| (e.kind, e.value))
        .collect()
}

/// libzmq's errno for a peer refused for want of a ZAP handler.
const EFAULT: u32 = 14;

#[test]
fn plain_accepted_peer_messages_carry_user_id_and_properties() {
    let mut c = Cluster::new(1);
    let server = c.add(
        Router,
        opts(|o| {
            o.security = Security::PlainServer;
            o.zap_domain = Bytes::from_static(b"global");
            o.routing_id = Bytes::from_static(b"srv");
        }),
    );
    c.members_mut(server).authenticator = Some(plain_table);
    let ep = c.bind(server, ANY);
    let client = c.add(
        Dealer,
        opts(|o| o.security = Security::plain_client(b"admin", b"secret").unwrap()),
    );
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, msg(&[b"hello"])).unwrap();
    c.run_until_idle();
    let got = c
        .recv(server)
        .expect("message from the authenticated client");
    assert_eq!(frames(&got)[1], b"hello");
    assert_eq!(got.property("User-Id"), Some(&b"the-admin"[..]));
    assert_eq!(got.property("X-Role"), Some(&b"boss"[..]));
    assert_eq!(got.property("Socket-Type"), Some(&b"DEALER"[..]));
    let req = &c.member(server).auth_requests[0];
    assert_eq!(req.mechanism_name(), "PLAIN");
    assert_eq!(&req.domain[..], b"global");
    assert_eq!(&req.identity[..], b"srv", "ZAP names our own routing id");
    // The core was given `127.0.0.1:PORT`; ZAP's Address is the IP alone, as in libzmq.
    assert_eq!(req.address, "127.0.0.1");
    assert_eq!(req.credentials, [&b"admin"[..], b"secret"]);
    assert_eq!(c.member(server).auth_requests.len(), 1);
}

#[test]
fn plain_wrong_password_fails_both_sides_with_auth_400_and_no_reconnect() {
    let mut c = Cluster::new(2);
    let server = c.add(Pull, opts(|o| o.security = Security::PlainServer));
    c.members_mut(server).authenticator = Some(plain_table);
    c.monitor_all(server);
    let ep = c.bind(server, ANY);
    let client = c.add(
        Push,
        opts(|o| o.security = Security::plain_client(b"admin", b"guess").unwrap()),
    );
    c.monitor_all(client);
    c.connect(client, &ep);
    c.run_until_idle();
    // Refused before its handshake ended, the client has no peer to queue for (or queues
    // for one that never comes): either way nothing may arrive.
    let _ = c.send(client, msg(&[b"secret stuff"]));
    c.run_for(std::time::Duration::from_secs(3));
    assert!(c.recv(server).is_none(), "nothing is delivered");
    assert_eq!(
        auth_events(&c, server),
        [(MonitorEventKind::HandshakeFailedAuth, 400)]
    );
    assert_eq!(
        auth_events(&c, client),
        [(MonitorEventKind::HandshakeFailedAuth, 400)]
    );
    // Each refusal names the other side.
    let refused = |n: Node| {
        c.member(n)
            .monitor
            .iter()
            .find(|e| e.kind == MonitorEventKind::HandshakeFailedAuth)
            .map(|e| e.peer_address.clone())
    };
    let client_address = format!("127.0.0.1:{}", zmtp_testkit::cluster::FIRST_EPHEMERAL_PORT);
    assert_eq!(refused(server), Some(client_address));
    assert_eq!(refused(client).as_deref(), ep.strip_prefix("tcp://"));
    // An ERROR is a protocol error for the client: it does not come back (libzmq G15).
    assert_eq!(c.member(client).connect_attempts.len(), 1);
}

#[test]
fn plain_server_without_handler_closes_silently() {
    let mut c = Cluster::new(3);
    let server = c.add(Pull, opts(|o| o.security = Security::PlainServer));
    c.monitor_all(server);
    let ep = c.bind(server, ANY);
    let client = c.add(
        Push,
        opts(|o| o.security = Security::plain_client(b"a", b"b").unwrap()),
    );
    c.connect(client, &ep);
    c.run_until_idle();
    let _ = c.send(client, msg(&[b"x"]));
    c.run_until_idle();
    assert!(c.recv(server).is_none());
    // As libzmq: no handler to check the password, HANDSHAKE_FAILED_NO_DETAIL with EFAULT.
    assert_eq!(auth_events(&c, server), []);
    assert_eq!(
        no_detail_events(&c, server),
        [(MonitorEventKind::HandshakeFailedNoDetail, EFAULT)]
    );
}

#[test]
fn null_with_a_zap_domain_asks_and_honours_the_verdict() {
    fn deny(_: &ZapRequest) -> AuthReply {
        AuthReply::status(500)
    }
    fn allow(_: &ZapRequest) -> AuthReply {
        AuthReply::Verdict {
            status: 200,
            user_id: Bytes::from_static(b"anon"),
            metadata: Bytes::new(),
        }
    }
    for (verdict, delivered) in [(allow as fn(&ZapRequest) -> AuthReply, true), (deny, false)] {
        let mut c = Cluster::new(4);
        let server = c.add(Pull, opts(|o| o.zap_domain = Bytes::from_static(b"dom")));
        c.members_mut(server).authenticator = Some(verdict);
        let ep = c.bind(server, ANY);
        let client = c.add_default(Push);
        c.connect(client, &ep);
        c.run_until_idle();
        assert_eq!(c.send(client, msg(&[b"x"])).is_ok(), delivered);
        c.run_until_idle();
        let got = c.recv(server);
        assert_eq!(got.is_some(), delivered);
        if let Some(m) = got {
            assert_eq!(m.property("User-Id"), Some(&b"anon"[..]));
        }
        let req = &c.member(server).auth_requests[0];
        assert_eq!(req.mechanism_name(), "NULL");
        assert!(req.credentials.is_empty());
    }
    // Without a domain, NULL never asks.
    let mut c = Cluster::new(5);
    let server = c.add_default(Pull);
    c.members_mut(server).authenticator = Some(|_| AuthReply::status(400));
    let ep = c.bind(server, ANY);
    let client = c.add_default(Push);
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, msg(&[b"x"])).unwrap();
    c.run_until_idle();
    let got = c.recv(server).expect("delivered");
    assert_eq!(
        got.property("User-Id"),
        None,
        "unauthenticated peers carry nothing"
    );
    assert!(c.member(server).auth_requests.is_empty());
}

#[cfg(feature = "curve")]
mod curve {
    use super::*;
    use zmtp_proto::curve_crypto::KeyPair;

    fn keys(n: u8) -> KeyPair {
        KeyPair::from_secret([n; 32])
    }

    fn curve_pair(c: &mut Cluster, client_keys: KeyPair, server_key_seen: KeyPair) -> (Node, Node) {
        let server = c.add(
            Pull,
            opts(|o| o.security = Security::CurveServer { keys: keys(1) }),
        );
        c.monitor_all(server);
        let ep = c.bind(server, ANY);
        let client = c.add(
            Push,
            opts(|o| {
                o.security = Security::CurveClient {
                    server_key: server_key_seen.public,
                    keys: client_keys.clone(),
                }
            }),
        );
        c.monitor_all(client);
        c.connect(client, &ep);
        (server, client)
    }

    #[test]
    fn curve_without_handler_accepts_any_client_and_traffic_flows() {
        let mut c = Cluster::new(6);
        let (server, client) = curve_pair(&mut c, keys(2), keys(1));
        c.run_until_idle();
        let big = vec![9u8; 300_000];
        c.send(client, msg(&[b"a", &big])).unwrap();
        c.send(client, msg(&[b""])).unwrap();
        c.run_until_idle();
        assert_eq!(frames(&c.recv(server).unwrap()), [b"a".to_vec(), big]);
        assert_eq!(frames(&c.recv(server).unwrap()), [Vec::<u8>::new()]);
        // Asked, and answered "no handler": CURVE then lets everyone in.
        assert_eq!(c.member(server).auth_requests.len(), 1);
    }

    #[test]
    fn curve_handler_sees_the_client_key_and_can_refuse_it() {
        fn only_key_3(req: &ZapRequest) -> AuthReply {
            if req.credentials[0][..] == keys(3).public.0 {
                AuthReply::status(200)
            } else {
                AuthReply::status(400)
            }
        }
        for (client_keys, delivered) in [(keys(3), true), (keys(4), false)] {
            let mut c = Cluster::new(7);
            let (server, client) = curve_pair(&mut c, client_keys.clone(), keys(1));
            c.members_mut(server).authenticator = Some(only_key_3);
            c.run_until_idle();
            assert_eq!(c.send(client, msg(&[b"m"])).is_ok(), delivered);
            c.run_for(std::time::Duration::from_secs(2));
            assert_eq!(c.recv(server).is_some(), delivered);
            let req = &c.member(server).auth_requests[0];
            assert_eq!(req.mechanism_name(), "CURVE");
            assert_eq!(req.credentials, [&client_keys.public.0[..]]);
            if !delivered {
                assert_eq!(
                    auth_events(&c, client),
                    [(MonitorEventKind::HandshakeFailedAuth, 400)]
                );
            }
        }
    }

    #[test]
    fn curve_zap_enforce_domain() {
        fn refuse(_: &ZapRequest) -> AuthReply {
            AuthReply::status(400)
        }
        // Enforced with an empty domain: ZAP is not consulted, every client gets in.
        let mut c = Cluster::new(9);
        let server = c.add(
            Pull,
            opts(|o| {
                o.security = Security::CurveServer { keys: keys(1) };
                o.zap_enforce_domain = true;
            }),
        );
        c.members_mut(server).authenticator = Some(refuse);
        let ep = c.bind(server, ANY);
        let client = c.add(
            Push,
            opts(|o| {
                o.security = Security::CurveClient {
                    server_key: keys(1).public,
                    keys: keys(2),
                }
            }),
        );
        c.connect(client, &ep);
        c.run_until_idle();
        c.send(client, msg(&[b"in"])).unwrap();
        c.run_until_idle();
        assert!(c.recv(server).is_some());
        assert!(c.member(server).auth_requests.is_empty());
        // Enforced with a domain and no handler: refused.
        let mut c = Cluster::new(10);
        let server = c.add(
            Pull,
            opts(|o| {
                o.security = Security::CurveServer { keys: keys(1) };
                o.zap_enforce_domain = true;
                o.zap_domain = Bytes::from_static(b"d");
            }),
        );
        c.monitor_all(server);
        let ep = c.bind(server, ANY);
        let client = c.add(
            Push,
            opts(|o| {
                o.security = Security::CurveClient {
                    server_key: keys(1).public,
                    keys: keys(2),
                }
            }),
        );
        c.connect(client, &ep);
        c.run_until_idle();
        let _ = c.send(client, msg(&[b"out"]));
        c.run_until_idle();
        assert!(c.recv(server).is_none());
        assert_eq!(auth_events(&c, server), []);
        assert_eq!(
            no_detail_events(&c, server),
            [(MonitorEventKind::HandshakeFailedNoDetail, EFAULT)]
        );
    }

    #[test]
    fn curve_client_with_the_wrong_server_key_never_connects() {
        let mut c = Cluster::new(8);
        let (server, client) = curve_pair(&mut c, keys(2), keys(9));
        c.run_until_idle();
        let _ = c.send(client, msg(&[b"m"]));
        c.run_for(std::time::Duration::from_secs(2));
        assert!(c.recv(server).is_none());
        let failed = c
            .member(server)
            .monitor
            .iter()
            .any(|e| e.kind == MonitorEventKind::HandshakeFailedProtocol);
        assert!(failed, "{:?}", c.member(server).monitor);
    }
}
