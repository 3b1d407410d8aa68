//! `udp://` against the draft libzmq 4.3.5 and across our drivers: RADIO→DISH (unicast on
//! 127.0.0.1 and multicast on the loopback interface, with a group the DISH did not join
//! that must not arrive) and DGRAM round trips, our socket on either side.
//!
//! UDP may lose datagrams; on the loopback interface it does not in practice, but each
//! test still sends until the first expected message arrives (bounded by [`TIMEOUT`]) and
//! checks what arrives, not how often it was sent.
//!
//! Multicast needs a route for the group through the loopback interface. Where the
//! environment has none (no multicast on `lo`), the multicast tests print why and return
//! without failing.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use zmtp_conformance::security::zsock;
use zmtp_conformance_draft::draft::{DraftZSocket, ZMQ_DGRAM, ZMQ_DISH, ZMQ_RADIO};
use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_conformance_draft::ffi::{Ctx, ZMQ_RCVTIMEO};
use zmtp_tokio::{Error, Message, Socket, SocketType};

/// The longest wait of a test.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The multicast group of the multicast tests.
const GROUP: &str = "239.0.0.7";

/// A UDP port free on 127.0.0.1 right now.
fn free_port() -> u16 {
    let probe = UdpSocket::bind("127.0.0.1:0").expect("bind a probe");
    probe.local_addr().expect("probe address").port()
}

/// Whether a datagram sent to [`GROUP`] through the loopback interface comes back to a
/// member on this host; `Err` says why not.
fn loopback_multicast() -> Result<(), String> {
    let port = free_port();
    let rx = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| format!("bind: {e}"))?;
    rx.join_multicast_v4(&GROUP.parse().unwrap(), &"127.0.0.1".parse().unwrap())
        .map_err(|e| format!("join {GROUP} on 127.0.0.1: {e}"))?;
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| e.to_string())?;
    let tx = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind sender: {e}"))?;
    tx.set_multicast_loop_v4(true).map_err(|e| e.to_string())?;
    tx.send_to(b"probe", (GROUP, port))
        .map_err(|e| format!("send to {GROUP} from 127.0.0.1: {e}"))?;
    let mut buf = [0u8; 8];
    match rx.recv_from(&mut buf) {
        Ok((5, _)) => Ok(()),
        Ok(_) => Err("an unexpected datagram".into()),
        Err(e) => Err(format!("nothing came back through lo: {e}")),
    }
}

/// Skip a multicast test, saying why, when the loopback interface carries no multicast.
macro_rules! require_multicast {
    ($name:literal) => {
        if let Err(why) = loopback_multicast() {
            eprintln!(
                "SKIPPED {}: multicast on the loopback interface does not work here ({why})",
                $name
            );
            return Ok(());
        }
    };
}

/// A message in `group`.
fn in_group(group: &str, body: &str) -> Result<Message, Error> {
    let mut msg = Message::from(body.to_owned());
    msg.set_group(group)?;
    Ok(msg)
}

/// Our RADIO sends `skip` to a group the libzmq DISH did not join, then `hello` to the one
/// it joined, until the DISH receives; it must receive `hello` in `g1`, never `skip`.
async fn ours_to_libzmq_dish(dish_at: &str, radio_to: &str) -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let dish = zsock(&ctx, ZMQ_DISH);
    dish.set_int(ZMQ_RCVTIMEO, 20).expect("ZMQ_RCVTIMEO");
    dish.bind(dish_at).expect("libzmq DISH bind");
    dish.join(b"g1").expect("zmq_join");
    let radio = Socket::new(SocketType::Radio)?;
    radio.connect(radio_to)?;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "libzmq DISH received nothing");
        radio.send(in_group("g2", "skip")?).await?;
        radio.send(in_group("g1", "hello")?).await?;
        if let Ok(got) = dish.recv_draft() {
            assert_eq!((&got.group[..], &got.body[..]), (&b"g1"[..], &b"hello"[..]));
            return Ok(());
        }
    }
}

/// The libzmq RADIO sends `skip` to `g2` and `hello` to `g1`; our DISH joined `g1` only.
async fn libzmq_to_our_dish(dish_at: &str, radio_to: impl Fn(&str) -> String) -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let dish = Socket::new(SocketType::Dish)?;
    dish.join("g1")?;
    let bound = dish.bind(dish_at).await?;
    let radio = zsock(&ctx, ZMQ_RADIO);
    radio
        .connect(&radio_to(&bound))
        .expect("libzmq RADIO connect");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "our DISH received nothing");
        radio
            .send_group(b"g2", b"skip", 0)
            .expect("libzmq RADIO send");
        radio
            .send_group(b"g1", b"hello", 0)
            .expect("libzmq RADIO send");
        if let Ok(Ok(got)) = tokio::time::timeout(Duration::from_millis(20), dish.recv()).await {
            assert_eq!(got.group(), Some(&b"g1"[..]));
            assert_eq!(got.to_str(), Ok("hello"));
            return Ok(());
        }
    }
}

/// The port of a bound `udp://…:port` endpoint.
fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_radio_libzmq_dish_unicast() -> Result<(), Error> {
    let port = free_port();
    let at = format!("udp://127.0.0.1:{port}");
    ours_to_libzmq_dish(&at, &at).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_radio_tokio_dish_unicast() -> Result<(), Error> {
    libzmq_to_our_dish("udp://127.0.0.1:*", |bound| {
        format!("udp://127.0.0.1:{}", port_of(bound))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_radio_libzmq_dish_multicast() -> Result<(), Error> {
    require_multicast!("tokio_radio_libzmq_dish_multicast");
    let port = free_port();
    let at = format!("udp://127.0.0.1;{GROUP}:{port}");
    ours_to_libzmq_dish(&at, &at).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_radio_tokio_dish_multicast() -> Result<(), Error> {
    require_multicast!("libzmq_radio_tokio_dish_multicast");
    let port = free_port();
    let at = format!("udp://127.0.0.1;{GROUP}:{port}");
    libzmq_to_our_dish(&at, |_| at.clone()).await
}

/// Our DGRAM and a libzmq DGRAM: `[address, body]` each way, the reply sent to the address
/// frame that came with the request (byte for byte, its trailing NUL included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_dgram_libzmq_dgram() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let theirs = zsock(&ctx, ZMQ_DGRAM);
    let their_port = free_port();
    theirs
        .bind(&format!("udp://127.0.0.1:{their_port}"))
        .expect("libzmq DGRAM bind");
    let ours = Socket::new(SocketType::Dgram)?;
    let bound = ours.bind("udp://127.0.0.1:*").await?;
    let our_port = port_of(&bound);

    // libzmq opens its UDP socket on its I/O thread after `zmq_bind` returns: datagrams
    // sent before then are lost, so the request is repeated until one arrives.
    theirs.set_int(ZMQ_RCVTIMEO, 20).expect("ZMQ_RCVTIMEO");
    let to_them = format!("127.0.0.1:{their_port}");
    let deadline = Instant::now() + TIMEOUT;
    let got = loop {
        assert!(Instant::now() < deadline, "libzmq DGRAM received nothing");
        ours.send(Message::from([to_them.as_str(), "ping"])).await?;
        if let Ok(got) = theirs.recv_multipart() {
            break got;
        }
    };
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], format!("127.0.0.1:{our_port}\0").as_bytes());
    assert_eq!(got[1], b"ping");

    theirs
        .send_multipart(&[&got[0], b"pong"])
        .expect("libzmq DGRAM send");
    let reply = tokio::time::timeout(TIMEOUT, ours.recv())
        .await
        .expect("our DGRAM received nothing")?;
    let frames = reply.frames();
    assert_eq!(&frames[0][..], format!("{to_them}\0").as_bytes());
    assert_eq!(&frames[1][..], b"pong");
    Ok(())
}

/// Our RADIO and DISH on one runtime, unicast: the non-joined group never arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_radio_tokio_dish_unicast() -> Result<(), Error> {
    let dish = Socket::new(SocketType::Dish)?;
    dish.join("g1")?;
    let bound = dish.bind("udp://127.0.0.1:*").await?;
    let radio = Socket::new(SocketType::Radio)?;
    radio.connect(&format!("udp://127.0.0.1:{}", port_of(&bound)))?;
    for i in 0..10 {
        radio.send(in_group("g2", &format!("skip {i}"))?).await?;
        radio.send(in_group("g1", &format!("hello {i}"))?).await?;
    }
    for i in 0..10 {
        let got = tokio::time::timeout(TIMEOUT, dish.recv())
            .await
            .expect("our DISH received nothing")?;
        assert_eq!(got.group(), Some(&b"g1"[..]));
        assert_eq!(got.to_str(), Ok(format!("hello {i}").as_str()));
    }
    Ok(())
}
