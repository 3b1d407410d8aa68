//! Our tokio sockets against the draft libzmq through `zmtp_tokio`'s own async API (the
//! scenario suite in `draft_libzmq.rs` goes through the conformance suite's blocking
//! facade): CLIENT/SERVER with the SERVER's reply addressed by `Message::routing_id` /
//! `set_routing_id`, and RADIO/DISH with `join` and `Message::group` / `set_group`, our
//! socket on either side and libzmq binding or connecting.
//!
//! The libzmq sockets block the test's own thread for at most 5 s per call
//! (`BLOCKING_TIMEOUT_MS`); our sockets run on the runtime's two worker threads meanwhile.

use std::time::{Duration, Instant};

use zmtp_conformance::security::zsock;
use zmtp_conformance_draft::draft::{
    DraftMessage, DraftZSocket, ZMQ_CLIENT, ZMQ_DISH, ZMQ_RADIO, ZMQ_SERVER,
};
use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_conformance_draft::ffi::{Ctx, ZSocket, ZMQ_DONTWAIT, ZMQ_RCVTIMEO};
use zmtp_tokio::{Error, Message, Socket, SocketType};

/// The longest wait of a test.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The next message of our socket, within [`TIMEOUT`].
async fn recv(socket: &Socket) -> Result<Message, Error> {
    tokio::time::timeout(TIMEOUT, socket.recv())
        .await
        .expect("nothing received within the timeout")
}

/// Bind the libzmq socket `z` to a loopback tcp port; the endpoint.
fn zbind(z: &ZSocket<'_>) -> String {
    z.bind("tcp://127.0.0.1:*").expect("zmq_bind");
    z.last_endpoint().expect("ZMQ_LAST_ENDPOINT")
}

/// A message in `group`.
fn in_group(group: &str, body: &'static str) -> Result<Message, Error> {
    let mut msg = Message::from(body);
    msg.set_group(group)?;
    Ok(msg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_client_libzmq_server() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let server = zsock(&ctx, ZMQ_SERVER);
    let endpoint = zbind(&server);
    let client = Socket::new(SocketType::Client)?;
    client.connect(&endpoint)?;

    client.send(Message::from("ping")).await?;
    let got = server.recv_draft().expect("libzmq SERVER recv");
    assert_eq!(got.body, b"ping");
    assert_ne!(got.routing_id, 0, "libzmq gave our CLIENT's pipe an id");

    server
        .send_to(got.routing_id, b"pong", 0)
        .expect("libzmq SERVER reply");
    let reply = recv(&client).await?;
    assert_eq!(reply.to_str(), Ok("pong"));
    assert_eq!(reply.routing_id(), None, "a CLIENT's message has no id");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_client_tokio_server() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let server = Socket::new(SocketType::Server)?;
    let endpoint = server.bind("tcp://127.0.0.1:*").await?;
    let clients = [zsock(&ctx, ZMQ_CLIENT), zsock(&ctx, ZMQ_CLIENT)];
    for (k, client) in clients.iter().enumerate() {
        client.connect(&endpoint).expect("zmq_connect");
        client
            .send(format!("hello {k}").as_bytes(), 0)
            .expect("libzmq CLIENT send");
    }

    // Each reply goes back by the routing id its request came with.
    for _ in 0..clients.len() {
        let got = recv(&server).await?;
        let id = got
            .routing_id()
            .expect("a SERVER's message has a routing id");
        let k = got.to_str().expect("UTF-8").trim_start_matches("hello ");
        let mut reply = Message::from(format!("reply {k}"));
        reply.set_routing_id(id)?;
        server.send(reply).await?;
    }
    for (k, client) in clients.iter().enumerate() {
        let got = client.recv_draft().expect("libzmq CLIENT recv");
        assert_eq!(got.body, format!("reply {k}").into_bytes());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_radio_tokio_dish() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let radio = zsock(&ctx, ZMQ_RADIO);
    let endpoint = zbind(&radio);
    let dish = Socket::new(SocketType::Dish)?;
    dish.join("weather")?;
    dish.connect(&endpoint)?;

    // libzmq drops what no one has joined: send until our JOIN has reached it. In every
    // round the other group goes first, so had it passed it would arrive first.
    let deadline = Instant::now() + TIMEOUT;
    let got = loop {
        radio
            .send_group(b"sport", b"goal", ZMQ_DONTWAIT)
            .expect("libzmq RADIO send");
        radio
            .send_group(b"weather", b"rain", ZMQ_DONTWAIT)
            .expect("libzmq RADIO send");
        if let Ok(got) = tokio::time::timeout(Duration::from_millis(10), dish.recv()).await {
            break got?;
        }
        assert!(Instant::now() < deadline, "our DISH never got its group");
    };
    assert_eq!(got.group(), Some(&b"weather"[..]));
    assert_eq!(got.to_str(), Ok("rain"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_radio_libzmq_dish() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let radio = Socket::new(SocketType::Radio)?;
    let endpoint = radio.bind("tcp://127.0.0.1:*").await?;
    let dish = zsock(&ctx, ZMQ_DISH);
    dish.set_int(ZMQ_RCVTIMEO, 10).expect("ZMQ_RCVTIMEO");
    dish.join(b"weather").expect("zmq_join");
    dish.connect(&endpoint).expect("zmq_connect");

    // Our RADIO sends a group only to the pipes whose JOIN it has read.
    let deadline = Instant::now() + TIMEOUT;
    let got: DraftMessage = loop {
        radio.send(in_group("sport", "goal")?).await?;
        radio.send(in_group("weather", "rain")?).await?;
        match dish.recv_draft() {
            Ok(got) => break got,
            Err(e) if e.is_again() && Instant::now() < deadline => {}
            Err(e) => panic!("the libzmq DISH never got its group: {e}"),
        }
    };
    assert_eq!(got.group, b"weather");
    assert_eq!(got.body, b"rain");
    Ok(())
}
