//! The socket under test of the legacy-peer suites (`tests/legacy.rs`, `tests/jeromq.rs`):
//! libzmq's or ours through one of the drivers, behind one small blocking API
//! ([`Subject`]), so that a scenario is written once and run against each
//! ([`with_subject`]).

use std::ffi::c_int;
use std::net::SocketAddr;
use std::time::Duration;

use zmtp_proto::mechanism::Security;
use zmtp_proto::socket::{Message, Options};
use zmtp_proto::SocketType;

use crate::async_driver::{SmolDriver, TokioDriver};
use crate::ffi::{
    Ctx, ZSocket, ZMQ_DEALER, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH, ZMQ_RCVTIMEO, ZMQ_REP, ZMQ_REQ,
    ZMQ_ROUTER, ZMQ_ROUTING_ID, ZMQ_SUB, ZMQ_ZAP_DOMAIN,
};
use crate::mio_driver::MioDriver;
use crate::our::{OurDriver, OurSocket};
use crate::security::{zplain_server, zsock};

/// How long [`Subject::send`] may wait for a peer.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The implementation whose socket is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The system libzmq: the reference.
    Libzmq,
    /// Ours, through the mio driver.
    Mio,
    /// Ours, through the tokio driver.
    Tokio,
    /// Ours, through the smol driver.
    Smol,
}

/// The socket under test, libzmq's or ours, behind one blocking API. Every call panics on
/// an error (these are test scenarios).
pub trait Subject {
    /// Bind `tcp://127.0.0.1:*`; the address bound.
    fn bind(&mut self) -> SocketAddr;
    /// Connect to `tcp://{addr}` (in the background).
    fn connect(&mut self, addr: SocketAddr);
    /// Send one message, waiting at most [`SEND_TIMEOUT`] for a peer.
    fn send(&mut self, frames: &[&[u8]]);
    /// Receive one message, waiting at most `limit`.
    fn recv(&mut self, limit: Duration) -> Option<Vec<Vec<u8>>>;
    /// `ZMQ_SUBSCRIBE` on a SUB socket.
    fn subscribe(&mut self, topic: &[u8]);
}

/// `tcp://a.b.c.d:port` as an address.
pub fn addr_of(endpoint: &str) -> SocketAddr {
    endpoint
        .strip_prefix("tcp://")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("a tcp endpoint: {endpoint}"))
}

struct Libzmq<'c>(ZSocket<'c>);

impl Subject for Libzmq<'_> {
    fn bind(&mut self) -> SocketAddr {
        self.0.bind("tcp://127.0.0.1:*").expect("zmq_bind");
        addr_of(&self.0.last_endpoint().expect("ZMQ_LAST_ENDPOINT"))
    }

    fn connect(&mut self, addr: SocketAddr) {
        self.0
            .connect(&format!("tcp://{addr}"))
            .expect("zmq_connect");
    }

    fn send(&mut self, frames: &[&[u8]]) {
        self.0.send_multipart(frames).expect("libzmq send");
    }

    fn recv(&mut self, limit: Duration) -> Option<Vec<Vec<u8>>> {
        let ms = limit.as_millis().clamp(1, i32::MAX as u128) as i32;
        self.0.set_int(ZMQ_RCVTIMEO, ms).expect("ZMQ_RCVTIMEO");
        self.0.recv_multipart().ok()
    }

    fn subscribe(&mut self, topic: &[u8]) {
        self.0.subscribe(topic).expect("ZMQ_SUBSCRIBE");
    }
}

struct Ours(Box<dyn OurSocket>);

impl Subject for Ours {
    fn bind(&mut self) -> SocketAddr {
        addr_of(&self.0.bind("tcp://127.0.0.1:*").expect("bind ours"))
    }

    fn connect(&mut self, addr: SocketAddr) {
        self.0
            .connect(&format!("tcp://{addr}"))
            .expect("connect ours");
    }

    fn send(&mut self, frames: &[&[u8]]) {
        let mut m = Message::new();
        for f in frames {
            m.push_back(f.to_vec());
        }
        self.0.send(m, SEND_TIMEOUT).expect("our send");
    }

    fn recv(&mut self, limit: Duration) -> Option<Vec<Vec<u8>>> {
        let m = self.0.recv(limit)?;
        Some(m.frames().iter().map(|f| f.to_vec()).collect())
    }

    fn subscribe(&mut self, topic: &[u8]) {
        self.0.subscribe(topic);
    }
}

/// How the socket under test is configured.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// `ZMQ_ROUTING_ID`.
    pub routing_id: &'static [u8],
    /// A PLAIN server (libzmq: with a ZAP domain).
    pub plain_server: bool,
    /// NULL with the ZAP domain `test` (`ZMQ_ZAP_DOMAIN`), which turns ZAP on.
    pub zap_domain: bool,
    /// Ours only: `Some(false)` refuses peers below ZMTP 3.0
    /// ([`Options::with_legacy_peers`]).
    pub legacy_peers: Option<bool>,
}

fn our_options(setup: &Setup) -> Options {
    let mut o = Options::default()
        .with_linger(Some(Duration::ZERO))
        .with_reconnect_ivl(Some(Duration::from_millis(50)))
        .with_routing_id(setup.routing_id);
    if setup.plain_server {
        o = o.with_security(Security::plain_server());
    }
    if setup.zap_domain {
        o = o.with_zap_domain("test");
    }
    if let Some(legacy) = setup.legacy_peers {
        o = o.with_legacy_peers(legacy);
    }
    o
}

/// libzmq's number for `ty` (the patterns of the legacy suites only).
pub fn libzmq_type(ty: SocketType) -> c_int {
    match ty {
        SocketType::Pub => ZMQ_PUB,
        SocketType::Sub => ZMQ_SUB,
        SocketType::Req => ZMQ_REQ,
        SocketType::Rep => ZMQ_REP,
        SocketType::Dealer => ZMQ_DEALER,
        SocketType::Router => ZMQ_ROUTER,
        SocketType::Pull => ZMQ_PULL,
        SocketType::Push => ZMQ_PUSH,
        other => panic!("no legacy scenario for {other:?}"),
    }
}

/// Run `f` with a socket of type `ty` of `target`, configured per `setup`; the socket is
/// closed (without lingering) when `f` returns.
pub fn with_subject<T>(
    target: Target,
    ty: SocketType,
    setup: &Setup,
    f: impl FnOnce(&mut dyn Subject) -> T,
) -> T {
    fn ours<D: OurDriver>(ty: SocketType, setup: &Setup) -> Ours {
        Ours(Box::new(D::socket(ty, our_options(setup))))
    }
    match target {
        Target::Libzmq => {
            assert_eq!(setup.legacy_peers, None, "libzmq has no such option");
            let ctx = Ctx::new();
            let z = zsock(&ctx, libzmq_type(ty));
            if !setup.routing_id.is_empty() {
                z.set_bytes(ZMQ_ROUTING_ID, setup.routing_id)
                    .expect("ZMQ_ROUTING_ID");
            }
            if setup.plain_server {
                zplain_server(&z);
            }
            if setup.zap_domain {
                z.set_str(ZMQ_ZAP_DOMAIN, "test").expect("ZMQ_ZAP_DOMAIN");
            }
            let mut z = Libzmq(z);
            f(&mut z)
        }
        Target::Mio => f(&mut ours::<MioDriver>(ty, setup)),
        Target::Tokio => f(&mut ours::<TokioDriver>(ty, setup)),
        Target::Smol => f(&mut ours::<SmolDriver>(ty, setup)),
    }
}
