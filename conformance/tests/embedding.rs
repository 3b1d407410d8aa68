//! The core's embedding examples (`zmtp-proto/examples/req_client.rs` and
//! `router_server.rs`: the socket layer over `std::net` in a `poll(2)` loop) against tokio
//! sockets, against libzmq, and against each other. The examples' own code runs here: the
//! files are included as modules, and their `run_client` and `run_server` called.

// Each example includes the loop they share (`common/mod.rs`), as when it is built alone.
#![allow(clippy::duplicate_mod)]

#[path = "../../zmtp-proto/examples/req_client.rs"]
mod req_client;
#[path = "../../zmtp-proto/examples/router_server.rs"]
mod router_server;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use req_client::{run_client, ClientConfig};
use router_server::{run_server, ServerConfig, ServerStats};
use zmtp_conformance::ffi::{Ctx, ZMQ_LINGER, ZMQ_RCVTIMEO, ZMQ_REP, ZMQ_REQ};

/// Start the example server on a thread; returns the endpoints it bound and its thread.
fn start_server(
    endpoints: &[&str],
    replies: usize,
    delay: Duration,
) -> (Vec<String>, thread::JoinHandle<ServerStats>) {
    let (tx, rx) = mpsc::channel();
    let config = ServerConfig {
        endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
        delay,
        replies: Some(replies),
        bound: Some(tx),
    };
    let server = thread::spawn(move || run_server(&config).expect("the server runs"));
    let bound = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server binds");
    (bound, server)
}

fn client_config(endpoints: Vec<String>, requests: usize) -> ClientConfig {
    ClientConfig {
        endpoints,
        requests,
        timeout: Duration::from_millis(1500),
        attempts: 10,
    }
}

fn expected(requests: usize) -> Vec<String> {
    (1..=requests).map(|i| format!("request {i}")).collect()
}

fn ipc_path(name: &str) -> String {
    let dir = std::env::temp_dir();
    format!(
        "ipc://{}/zmtp-embedding-{name}-{}",
        dir.display(),
        std::process::id()
    )
}

/// A port nobody listens on now (bound and released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The ROUTER server answers tokio REQ clients over tcp and libzmq REQ clients over tcp
/// and ipc, all at once: five clients, three requests each, every reply delayed by its
/// application timer.
#[test]
fn router_server_serves_tokio_and_libzmq_clients() {
    let ipc = ipc_path("server");
    let (bound, server) = start_server(&["tcp://127.0.0.1:*", &ipc], 15, Duration::from_millis(20));
    let (tcp, ipc) = (bound[0].clone(), bound[1].clone());
    assert!(
        tcp.starts_with("tcp://127.0.0.1:") && !tcp.ends_with(":*"),
        "{tcp}"
    );

    let libzmq: Vec<_> = [tcp.clone(), ipc]
        .into_iter()
        .enumerate()
        .map(|(n, endpoint)| {
            thread::spawn(move || {
                let ctx = Ctx::new();
                let req = ctx.socket(ZMQ_REQ).expect("socket");
                req.set_int(ZMQ_RCVTIMEO, 10_000).expect("RCVTIMEO");
                req.set_int(ZMQ_LINGER, 0).expect("LINGER");
                req.connect(&endpoint).expect("connect");
                for i in 0..3 {
                    let request = format!("libzmq {n} #{i}");
                    req.send(request.as_bytes(), 0).expect("send");
                    let reply = req.recv_multipart().expect("a reply");
                    assert_eq!(reply, vec![request.into_bytes()]);
                }
            })
        })
        .collect();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let clients = (0..3).map(|n| {
            let tcp = tcp.clone();
            async move {
                let req = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Req).expect("socket");
                req.connect(&tcp).expect("connect");
                for i in 0..3 {
                    let request = format!("tokio {n} #{i}");
                    req.send(request.as_str()).await.expect("send");
                    let reply = tokio::time::timeout(Duration::from_secs(10), req.recv_string())
                        .await
                        .expect("a reply in time")
                        .expect("recv");
                    assert_eq!(reply, request);
                }
            }
        });
        let handles: Vec<_> = clients.map(tokio::spawn).collect();
        for h in handles {
            h.await.expect("client task");
        }
    });
    for t in libzmq {
        t.join().expect("libzmq client");
    }
    let stats = server.join().expect("server thread");
    assert_eq!(
        stats,
        ServerStats {
            replies: 15,
            clients: 5
        }
    );
}

/// The REQ client spreads its requests over two tokio REP servers, and gets every reply.
#[test]
fn req_client_uses_two_tokio_servers() {
    let (tx, rx) = mpsc::channel();
    let servers = thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let mut endpoints = Vec::new();
            let mut sockets = Vec::new();
            for _ in 0..2 {
                let rep = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Rep).expect("socket");
                endpoints.push(rep.bind("tcp://127.0.0.1:*").await.expect("bind"));
                sockets.push(rep);
            }
            tx.send(endpoints).expect("endpoints");
            // Echo until six requests have been answered in all; count each server's.
            let mut served = [0usize; 2];
            while served.iter().sum::<usize>() < 6 {
                let (n, request) = tokio::select! {
                    r = sockets[0].recv() => (0, r),
                    r = sockets[1].recv() => (1, r),
                };
                sockets[n].send(request.expect("recv")).await.expect("send");
                served[n] += 1;
            }
            served
        })
    });
    let endpoints = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("servers bound");
    let replies = run_client(&client_config(endpoints, 6)).expect("the client runs");
    assert_eq!(replies, expected(6));
    let served = servers.join().expect("servers");
    assert!(
        served.iter().all(|&n| n > 0),
        "both servers answered: {served:?}"
    );
}

/// The REQ client starts before any server exists, and its server goes away and comes
/// back on the same port: it reconnects each time, sends the unanswered request again,
/// and gets every reply from libzmq.
#[test]
fn req_client_reconnects_to_a_restarted_libzmq_server() {
    let port = free_port();
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let server_endpoint = endpoint.clone();
    let server = thread::spawn(move || {
        let ctx = Ctx::new();
        // Not there at first: the client retries its connection meanwhile.
        thread::sleep(Duration::from_millis(300));
        for (run, answers) in [2, 3].into_iter().enumerate() {
            let rep = ctx.socket(ZMQ_REP).expect("socket");
            rep.set_int(ZMQ_RCVTIMEO, 10_000).expect("RCVTIMEO");
            rep.set_int(ZMQ_LINGER, 1000).expect("LINGER");
            rep.bind(&server_endpoint).expect("bind");
            for _ in 0..answers {
                let request = rep.recv_multipart().expect("a request");
                rep.send(&request[0], 0).expect("reply");
            }
            drop(rep);
            if run == 0 {
                // Gone for a while: the next request waits, then goes again.
                thread::sleep(Duration::from_millis(500));
            }
        }
    });
    let replies = run_client(&client_config(vec![endpoint], 5)).expect("the client runs");
    assert_eq!(replies, expected(5));
    server.join().expect("libzmq server");
}

/// The two examples together, over ipc: two clients, one server.
#[test]
fn req_client_and_router_server_over_ipc() {
    let ipc = ipc_path("pair");
    let (bound, server) = start_server(&[&ipc], 8, Duration::ZERO);
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let bound = bound.clone();
            thread::spawn(move || run_client(&client_config(bound, 4)).expect("client"))
        })
        .collect();
    for c in clients {
        assert_eq!(c.join().expect("client thread"), expected(4));
    }
    assert_eq!(
        server.join().expect("server"),
        ServerStats {
            replies: 8,
            clients: 2
        }
    );
}
