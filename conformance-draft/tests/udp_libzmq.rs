//! `udp://` against the draft libzmq 4.3.5 and across our drivers: RADIO→DISH (unicast on
//! 127.0.0.1 and multicast through the loopback interface, with a group the DISH did not
//! join that must not arrive) and DGRAM round trips, our socket on either side, for the
//! tokio and mio drivers; then our drivers with each other.
//!
//! The libzmq side of each scenario is written once, with our socket's side passed in as
//! closures: a RADIO send never waits, and our DISH or DGRAM is read with `try_recv`, so
//! the same blocking code drives a tokio socket (whose tasks run on the runtime's workers
//! meanwhile) and a mio one.
//!
//! UDP may lose datagrams, and libzmq opens its UDP socket on its I/O thread after
//! `zmq_bind` returns, so what is sent before then is lost: each scenario sends until the
//! first expected message arrives (within [`TIMEOUT`]) and checks what arrives, not how
//! often it was sent.
//!
//! Multicast needs a route for the group through the loopback interface. Where the
//! environment has none, the multicast tests print `SKIPPED` with the reason and return
//! without failing.

use std::net::UdpSocket;
use std::thread::sleep;
use std::time::{Duration, Instant};

use zmtp_conformance::security::zsock;
use zmtp_conformance_draft::draft::{DraftZSocket, ZMQ_DGRAM, ZMQ_DISH, ZMQ_RADIO};
use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_conformance_draft::ffi::{Ctx, ZMQ_IPV6, ZMQ_RCVTIMEO};
use zmtp_tokio::{Error, Message, SocketType};

/// The longest wait of a test.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long one round waits for what it sent.
const ROUND: Duration = Duration::from_millis(20);
/// The multicast group of the multicast tests.
const GROUP: &str = "239.0.0.7";

/// A UDP port free on 127.0.0.1 right now.
fn free_port() -> u16 {
    let probe = UdpSocket::bind("127.0.0.1:0").expect("bind a probe");
    probe.local_addr().expect("probe address").port()
}

/// The port of a bound `udp://…:port` endpoint.
fn port_of(endpoint: &str) -> u16 {
    let port = endpoint.rsplit(':').next().and_then(|p| p.parse().ok());
    port.expect("a port")
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

/// The multicast endpoint of a test on a free port, or `None` (having said why) when the
/// loopback interface carries no multicast here.
fn multicast_endpoint(test: &str) -> Option<String> {
    match loopback_multicast() {
        Ok(()) => Some(format!("udp://127.0.0.1;{GROUP}:{}", free_port())),
        Err(why) => {
            eprintln!("SKIPPED {test}: multicast through the loopback interface does not work here ({why})");
            None
        }
    }
}

/// The link-local IPv6 group of the IPv6 multicast tests (libzmq's own test uses it).
const GROUP_V6: &str = "ff02::7a65:726f:6df1:a01";

/// Whether a datagram sent to [`GROUP_V6`] (the system choosing the interface) comes back
/// to a member on this host; `Err` says why not.
fn link_local_multicast_v6() -> Result<(), String> {
    let group: std::net::Ipv6Addr = GROUP_V6.parse().unwrap();
    let rx = UdpSocket::bind(("::", 0)).map_err(|e| format!("bind [::]: {e}"))?;
    let port = rx.local_addr().map_err(|e| e.to_string())?.port();
    rx.join_multicast_v6(&group, 0)
        .map_err(|e| format!("join {GROUP_V6}: {e}"))?;
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| e.to_string())?;
    let tx = UdpSocket::bind(("::", 0)).map_err(|e| format!("bind sender: {e}"))?;
    tx.set_multicast_loop_v6(true).map_err(|e| e.to_string())?;
    tx.send_to(b"probe", (group, port))
        .map_err(|e| format!("send to {GROUP_V6}: {e}"))?;
    let mut buf = [0u8; 8];
    match rx.recv_from(&mut buf) {
        Ok((5, _)) => Ok(()),
        Ok(_) => Err("an unexpected datagram".into()),
        Err(e) => Err(format!("nothing came back: {e}")),
    }
}

/// The IPv6 multicast endpoint of a test on a free port, or `None` (having said why) when
/// link-local IPv6 multicast does not come back here.
fn multicast_v6_endpoint(test: &str) -> Option<String> {
    match link_local_multicast_v6() {
        Ok(()) => {
            let port = UdpSocket::bind(("::", 0)).and_then(|s| s.local_addr());
            Some(format!(
                "udp://[{GROUP_V6}]:{}",
                port.expect("a free port").port()
            ))
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: link-local IPv6 multicast does not work here ({why})");
            None
        }
    }
}

/// libzmq parses IPv6 addresses only with `ZMQ_IPV6` set: set it for an endpoint that has
/// one.
fn ipv6_for(socket: &zmtp_conformance_draft::ffi::ZSocket<'_>, at: &str) {
    if at.contains('[') {
        socket.set_int(ZMQ_IPV6, 1).expect("ZMQ_IPV6");
    }
}

/// A message in `group`.
fn in_group(group: &str, body: &str) -> Message {
    let mut msg = Message::from(body.to_owned());
    msg.set_group(group).expect("a short group");
    msg
}

/// Call `round` until it gives something, within [`TIMEOUT`].
fn until<T>(what: &str, mut round: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(
            Instant::now() < deadline,
            "{what}: nothing within {TIMEOUT:?}"
        );
        if let Some(done) = round() {
            return done;
        }
    }
}

/// `receive` polled for [`ROUND`].
fn poll_recv(receive: &mut impl FnMut() -> Option<Message>) -> Option<Message> {
    let deadline = Instant::now() + ROUND;
    loop {
        if let Some(msg) = receive() {
            return Some(msg);
        }
        if Instant::now() >= deadline {
            return None;
        }
        sleep(Duration::from_millis(1));
    }
}

/// A libzmq DISH bound at `at` joins `g1`; `send` (our RADIO) sends `skip` to `g2`, then
/// `hello` to `g1`, each round, until the DISH receives: `hello` in `g1`, never `skip`.
fn libzmq_dish(at: &str, mut send: impl FnMut(Message)) {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let dish = zsock(&ctx, ZMQ_DISH);
    dish.set_int(ZMQ_RCVTIMEO, 20).expect("ZMQ_RCVTIMEO");
    ipv6_for(&dish, at);
    dish.bind(at).expect("libzmq DISH bind");
    dish.join(b"g1").expect("zmq_join");
    let got = until("libzmq DISH", || {
        send(in_group("g2", "skip"));
        send(in_group("g1", "hello"));
        dish.recv_draft().ok()
    });
    assert_eq!((&got.group[..], &got.body[..]), (&b"g1"[..], &b"hello"[..]));
}

/// A libzmq RADIO connected to `to` sends `skip` to `g2` and `hello` to `g1` each round
/// until `receive` (our DISH, joined to `g1` only) gives a message: `hello` in `g1`.
fn libzmq_radio(to: &str, mut receive: impl FnMut() -> Option<Message>) {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let radio = zsock(&ctx, ZMQ_RADIO);
    ipv6_for(&radio, to);
    radio.connect(to).expect("libzmq RADIO connect");
    let got = until("our DISH", || {
        radio
            .send_group(b"g2", b"skip", 0)
            .expect("libzmq RADIO send");
        radio
            .send_group(b"g1", b"hello", 0)
            .expect("libzmq RADIO send");
        poll_recv(&mut receive)
    });
    assert_eq!(got.group(), Some(&b"g1"[..]));
    assert_eq!(got.to_str(), Ok("hello"));
}

/// Our DGRAM (bound on `our_port`, sending with `send`, receiving with `receive`) and a
/// libzmq DGRAM: `[address, body]` each way, the reply sent back to the address frame
/// that came with the request, byte for byte (its trailing NUL included).
fn libzmq_dgram(
    our_port: u16,
    mut send: impl FnMut(Message),
    mut receive: impl FnMut() -> Option<Message>,
) {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let theirs = zsock(&ctx, ZMQ_DGRAM);
    theirs.set_int(ZMQ_RCVTIMEO, 20).expect("ZMQ_RCVTIMEO");
    let their_port = free_port();
    let at = format!("udp://127.0.0.1:{their_port}");
    theirs.bind(&at).expect("libzmq DGRAM bind");
    let to_them = format!("127.0.0.1:{their_port}");
    let got = until("libzmq DGRAM", || {
        send(Message::from([to_them.as_str(), "ping"]));
        theirs.recv_multipart().ok()
    });
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], format!("127.0.0.1:{our_port}\0").as_bytes());
    assert_eq!(got[1], b"ping");
    theirs
        .send_multipart(&[&got[0], b"pong"])
        .expect("libzmq DGRAM send");
    let reply = until("our DGRAM", || poll_recv(&mut receive));
    let frames = reply.frames();
    assert_eq!(&frames[0][..], format!("{to_them}\0").as_bytes());
    assert_eq!(&frames[1][..], b"pong");
}

/// Our RADIO (sending with `send`) to our DISH (receiving with `receive`): ten rounds of
/// `skip` to `g2` and `hello {i}` to `g1`; the DISH gets exactly the `g1` messages, in
/// order.
fn ours_to_ours(mut send: impl FnMut(Message), mut receive: impl FnMut() -> Option<Message>) {
    for i in 0..10 {
        send(in_group("g2", &format!("skip {i}")));
        send(in_group("g1", &format!("hello {i}")));
    }
    for i in 0..10 {
        let got = until("our DISH", || poll_recv(&mut receive));
        assert_eq!(got.group(), Some(&b"g1"[..]));
        assert_eq!(got.to_str(), Ok(format!("hello {i}").as_str()));
    }
    assert!(poll_recv(&mut receive).is_none(), "a g2 message arrived");
}

mod tokio_driver {
    use super::*;
    use zmtp_tokio::Socket;

    fn radio(to: &str) -> Result<Socket, Error> {
        let radio = Socket::new(SocketType::Radio)?;
        radio.connect(to)?;
        Ok(radio)
    }

    fn send(socket: &Socket) -> impl FnMut(Message) + '_ {
        |msg| {
            socket.try_send(msg).expect("our send");
        }
    }

    fn receive(socket: &Socket) -> impl FnMut() -> Option<Message> + '_ {
        || socket.try_recv().expect("our recv")
    }

    async fn dish(at: &str) -> Result<(Socket, String), Error> {
        let dish = Socket::new(SocketType::Dish)?;
        dish.join("g1")?;
        let bound = dish.bind(at).await?;
        Ok((dish, bound))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_radio_libzmq_dish_unicast() -> Result<(), Error> {
        let at = format!("udp://127.0.0.1:{}", free_port());
        let radio = radio(&at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn libzmq_radio_tokio_dish_unicast() -> Result<(), Error> {
        let (dish, bound) = dish("udp://127.0.0.1:*").await?;
        libzmq_radio(
            &format!("udp://127.0.0.1:{}", port_of(&bound)),
            receive(&dish),
        );
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_radio_libzmq_dish_multicast() -> Result<(), Error> {
        let Some(at) = multicast_endpoint("tokio_radio_libzmq_dish_multicast") else {
            return Ok(());
        };
        let radio = radio(&at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn libzmq_radio_tokio_dish_multicast() -> Result<(), Error> {
        let Some(at) = multicast_endpoint("libzmq_radio_tokio_dish_multicast") else {
            return Ok(());
        };
        let (dish, _) = dish(&at).await?;
        libzmq_radio(&at, receive(&dish));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_radio_libzmq_dish_multicast_v6() -> Result<(), Error> {
        let Some(at) = multicast_v6_endpoint("tokio_radio_libzmq_dish_multicast_v6") else {
            return Ok(());
        };
        let radio = radio(&at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_dgram_libzmq_dgram() -> Result<(), Error> {
        let ours = Socket::new(SocketType::Dgram)?;
        let bound = ours.bind("udp://127.0.0.1:*").await?;
        libzmq_dgram(port_of(&bound), send(&ours), receive(&ours));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_radio_tokio_dish_unicast() -> Result<(), Error> {
        let (dish, bound) = dish("udp://127.0.0.1:*").await?;
        let radio = radio(&format!("udp://127.0.0.1:{}", port_of(&bound)))?;
        ours_to_ours(send(&radio), receive(&dish));
        Ok(())
    }

    /// Our RADIO on tokio to our DISH on mio.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_radio_mio_dish() -> Result<(), Error> {
        let ctx = zmtp_mio::Context::new()?;
        let (dish, bound) = super::mio_driver::dish(&ctx, "udp://127.0.0.1:*")?;
        let radio = radio(&format!("udp://127.0.0.1:{}", port_of(&bound)))?;
        ours_to_ours(send(&radio), super::mio_driver::receive(&dish));
        Ok(())
    }

    /// Our DGRAM on tokio and our DGRAM on mio, both ways.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokio_dgram_mio_dgram() -> Result<(), Error> {
        let ctx = zmtp_mio::Context::new()?;
        let theirs = ctx.socket(SocketType::Dgram)?;
        let their_port = port_of(&theirs.bind("udp://127.0.0.1:*")?);
        let ours = Socket::new(SocketType::Dgram)?;
        let our_port = port_of(&ours.bind("udp://127.0.0.1:*").await?);
        let to_them = format!("127.0.0.1:{their_port}");
        ours.try_send(Message::from([to_them.as_str(), "ping"]))?;
        let got = theirs.recv_timeout(Some(TIMEOUT))?;
        assert_eq!(
            &got.frames()[0][..],
            format!("127.0.0.1:{our_port}\0").as_bytes()
        );
        let mut reply = Message::from(got.frames()[0].clone());
        reply.push_back(&b"pong"[..]);
        theirs.send(reply)?;
        let back = until("tokio DGRAM", || poll_recv(&mut receive(&ours)));
        assert_eq!(back.frames()[1], &b"pong"[..]);
        Ok(())
    }
}

mod mio_driver {
    use super::*;
    use zmtp_mio::{Context, Socket};

    fn radio(ctx: &Context, to: &str) -> Result<Socket, Error> {
        let radio = ctx.socket(SocketType::Radio)?;
        radio.connect(to)?;
        Ok(radio)
    }

    fn send(socket: &Socket) -> impl FnMut(Message) + '_ {
        |msg| {
            socket.send(msg).expect("our send");
        }
    }

    pub(super) fn receive(socket: &Socket) -> impl FnMut() -> Option<Message> + '_ {
        || socket.try_recv().expect("our recv")
    }

    pub(super) fn dish(ctx: &Context, at: &str) -> Result<(Socket, String), Error> {
        let dish = ctx.socket(SocketType::Dish)?;
        dish.join("g1")?;
        let bound = dish.bind(at)?;
        Ok((dish, bound))
    }

    #[test]
    fn mio_radio_libzmq_dish_unicast() -> Result<(), Error> {
        let ctx = Context::new()?;
        let at = format!("udp://127.0.0.1:{}", free_port());
        let radio = radio(&ctx, &at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[test]
    fn libzmq_radio_mio_dish_unicast() -> Result<(), Error> {
        let ctx = Context::new()?;
        let (dish, bound) = dish(&ctx, "udp://127.0.0.1:*")?;
        libzmq_radio(
            &format!("udp://127.0.0.1:{}", port_of(&bound)),
            receive(&dish),
        );
        Ok(())
    }

    #[test]
    fn mio_radio_libzmq_dish_multicast() -> Result<(), Error> {
        let Some(at) = multicast_endpoint("mio_radio_libzmq_dish_multicast") else {
            return Ok(());
        };
        let ctx = Context::new()?;
        let radio = radio(&ctx, &at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[test]
    fn libzmq_radio_mio_dish_multicast() -> Result<(), Error> {
        let Some(at) = multicast_endpoint("libzmq_radio_mio_dish_multicast") else {
            return Ok(());
        };
        let ctx = Context::new()?;
        let (dish, _) = dish(&ctx, &at)?;
        libzmq_radio(&at, receive(&dish));
        Ok(())
    }

    /// Over a link-local IPv6 group, which a RADIO cannot connect to without naming an
    /// interface: ours sends to it, as libzmq's does.
    #[test]
    fn mio_radio_libzmq_dish_multicast_v6() -> Result<(), Error> {
        let Some(at) = multicast_v6_endpoint("mio_radio_libzmq_dish_multicast_v6") else {
            return Ok(());
        };
        let ctx = Context::new()?;
        let radio = radio(&ctx, &at)?;
        libzmq_dish(&at, send(&radio));
        Ok(())
    }

    #[test]
    fn libzmq_radio_mio_dish_multicast_v6() -> Result<(), Error> {
        let Some(at) = multicast_v6_endpoint("libzmq_radio_mio_dish_multicast_v6") else {
            return Ok(());
        };
        let ctx = Context::new()?;
        let (dish, _) = dish(&ctx, &at)?;
        libzmq_radio(&at, receive(&dish));
        Ok(())
    }

    #[test]
    fn mio_dgram_libzmq_dgram() -> Result<(), Error> {
        let ctx = Context::new()?;
        let ours = ctx.socket(SocketType::Dgram)?;
        let bound = ours.bind("udp://127.0.0.1:*")?;
        libzmq_dgram(port_of(&bound), send(&ours), receive(&ours));
        Ok(())
    }

    /// Our RADIO on mio to our DISH on mio, over multicast where it works.
    #[test]
    fn mio_radio_mio_dish_multicast() -> Result<(), Error> {
        let Some(at) = multicast_endpoint("mio_radio_mio_dish_multicast") else {
            return Ok(());
        };
        let ctx = Context::new()?;
        let (dish, _) = dish(&ctx, &at)?;
        let radio = radio(&ctx, &at)?;
        ours_to_ours(send(&radio), receive(&dish));
        Ok(())
    }

    /// Our RADIO on mio to our DISH on smol.
    #[test]
    fn mio_radio_smol_dish() -> Result<(), Error> {
        let ctx = Context::new()?;
        let dish = zmtp_smol::Socket::new(SocketType::Dish)?;
        dish.join("g1")?;
        let bound = zmtp_smol::block_on(dish.bind("udp://127.0.0.1:*"))?;
        let radio = radio(&ctx, &format!("udp://127.0.0.1:{}", port_of(&bound)))?;
        ours_to_ours(send(&radio), || dish.try_recv().expect("smol recv"));
        Ok(())
    }
}
