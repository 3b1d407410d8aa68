//! Runtime-agnostic async ZeroMQ sockets.
//!
//! A thin driver over the sans-IO [`zmtp_proto`] core: every protocol and pattern decision
//! (routing, high-water marks, reconnects, heartbeats, monitor events) is made there; this
//! crate only moves bytes over `tcp://`, `ws://` (TCP streams the core runs as ZWS),
//! `wss://` (the same over TLS, [`Socket::set_tls`]), `ipc://` and `inproc://` streams and
//! arms timers.
//! It is written once, generic over a [`Runtime`] (tasks, timers, non-blocking streams);
//! `zmtp-tokio` and `zmtp-smol` each supply one and re-export [`Socket`] for it. Names and
//! options follow libzmq and pyzmq. `inproc://` names are shared by every runtime in the
//! process: a tokio socket can talk to a smol socket in process.
//!
//! The examples here use `zmtp-tokio`, whose `Socket` is `Socket<Tokio>`; with `zmtp-smol`
//! they read the same inside `zmtp_smol::block_on`.
//!
//! # Cancel safety
//! [`Socket::recv`] and [`Socket::send`] are cancel-safe: a `recv` dropped before it
//! completes has taken no message, and a `send` dropped before it completes has queued
//! nothing (a message is handed to the socket whole, in one step, or not at all).
//!
//! # Batching
//! Sends append to the peer's output and are written at once when the stream has room;
//! whatever accumulates while it has none goes out in one write when it has. There is no
//! flush to call.
#![deny(missing_docs)]

mod context;
mod core;
mod handover;
mod poll;
mod proxy;
pub mod runtime;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod transport;
mod wait;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{self, Poll};

use futures_core::Stream as FuturesStream;
use tokio::sync::mpsc;

pub use crate::context::Context;
use crate::core::Inner;
pub use crate::handover::linger_all;
pub use crate::poll::{poll, PollItem, POLLIN, POLLOUT};
pub use crate::proxy::{proxy, proxy_steerable};
pub use crate::runtime::Runtime;
use crate::wait::Waiter;
pub use crate::wait::{RecvFuture, SendFuture};
/// The counters of a steerable proxy's STATISTICS answer.
pub use zmtp_driver::proxy::{ProxyStats, Traffic};
/// Whether dropped sockets say on standard error what LINGER cut off (on by default).
pub use zmtp_driver::set_loss_reports;
/// The TLS settings of `wss://` endpoints, and the rustls they are made with.
pub use zmtp_driver::tls::{rustls, Tls};
/// Why an operation failed: the error type shared by every driver's sockets.
pub use zmtp_driver::Error;
pub use zmtp_proto::curve_crypto::{KeyPair, PublicKey, SecretKey};
pub use zmtp_proto::mechanism::Security;
pub use zmtp_proto::socket::{
    AppMetadata, AuthReply, Authenticator, CloseReport, EndpointError, GroupError,
    IpcAcceptFilters, Message, MetadataError, MonitorEvent, MonitorEventKind, Options,
    PeerProperties, ReconnectStop, RouterNotify, SendError, Sent, SocksProxy, SocksProxyError,
    TcpAcceptFilter, TextError, ZapRequest, GROUP_MAX_LEN,
};
pub use zmtp_proto::{z85, Bytes, SocketType};
/// The traits of [`MessageStream`] and [`Monitor`], re-exported so that naming them needs
/// no dependency on the `futures` crates.
pub use {futures_core::Stream, futures_sink::Sink};

/// A ZeroMQ socket. Its I/O runs on tasks of the runtime `R` it was created in.
///
/// Methods take `&self`, so one socket may be shared (for example in an `Arc`) between a
/// sending and a receiving task.
///
/// Dropping the socket closes it in the background, lingering (per LINGER) while its
/// queued messages are written. A program that sends and returns from `main` loses
/// nothing for not waiting: a socket still lingering when its runtime ends lingers on
/// with blocking I/O, and the process waits for it at exit, up to LINGER (see
/// [`linger_all`]); what LINGER cuts off is said on standard error
/// ([`set_loss_reports`]). [`Socket::close`] closes and waits, returning what was cut
/// off, and a [`Context`]'s [`term`](Context::term) does it for every socket made through
/// the context.
///
/// A request and its reply, over TCP:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zmtp_tokio::Error> {
/// use zmtp_tokio::{Socket, SocketType};
///
/// let rep = Socket::new(SocketType::Rep)?;
/// let endpoint = rep.bind("tcp://127.0.0.1:*").await?;
/// let req = Socket::new(SocketType::Req)?;
/// req.connect(&endpoint)?;
///
/// req.send("ping").await?;
/// let request = rep.recv().await?;
/// assert_eq!(request.to_str(), Ok("ping"));
/// rep.send("pong").await?;
/// assert_eq!(req.recv_string().await?, "pong");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Socket<R: Runtime> {
    inner: Arc<Inner<R>>,
}

/// A new CURVE key pair from the operating system's random generator (`zmq_curve_keypair`).
/// Each key prints as its 40 characters of Z85, as libzmq and pyzmq give them:
///
/// ```
/// let keys = zmtp_async::curve_keypair()?;
/// println!("public {}, secret {}", keys.public, keys.secret.to_z85());
/// assert_eq!(keys.public.to_z85().len(), 40);
/// # Ok::<(), zmtp_async::Error>(())
/// ```
pub fn curve_keypair() -> Result<KeyPair, Error> {
    zmtp_driver::curve_keypair()
}

impl<R: Runtime> Socket<R> {
    /// A socket of type `ty` with libzmq's default options. Must be called inside a runtime
    /// ([`Error::NoRuntime`] otherwise; see [`Runtime::current`]).
    ///
    /// ```
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// // Outside a runtime, the socket would have nowhere to run its I/O.
    /// assert!(matches!(Socket::new(SocketType::Pull), Err(Error::NoRuntime)));
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// runtime.block_on(async {
    ///     let pull = Socket::new(SocketType::Pull)?;
    ///     assert_eq!(pull.socket_type(), SocketType::Pull);
    ///     assert_eq!(pull.options().rcvhwm, 1000); // libzmq's default
    ///     Ok::<(), Error>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(ty: SocketType) -> Result<Socket<R>, Error> {
        Socket::with_options(ty, Options::default())
    }

    /// A socket of type `ty` with `options`. Must be called inside a runtime.
    ///
    /// Invalid options fail here with [`Error::Options`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Error, Options, Socket, SocketType};
    ///
    /// let options = Options::default()
    ///     .with_routing_id("worker-1")
    ///     .with_linger(Some(Duration::ZERO));
    /// let dealer = Socket::with_options(SocketType::Dealer, options)?;
    /// assert_eq!(&dealer.options().routing_id[..], b"worker-1");
    ///
    /// // Routing ids are at most 255 bytes.
    /// let too_long = Options::default().with_routing_id(vec![b'x'; 256]);
    /// assert!(matches!(
    ///     Socket::with_options(SocketType::Dealer, too_long),
    ///     Err(Error::Options(_))
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn with_options(ty: SocketType, options: Options) -> Result<Socket<R>, Error> {
        Socket::with_runtime(R::current().ok_or(Error::NoRuntime)?, ty, options)
    }

    /// A socket of type `ty` with `options` whose I/O runs on `runtime`.
    ///
    /// ```
    /// use zmtp_tokio::{Options, Socket, SocketType, Tokio};
    ///
    /// // Made outside the runtime, with a handle to it.
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let tokio = Tokio::new(runtime.handle().clone());
    /// let pull = Socket::with_runtime(tokio, SocketType::Pull, Options::default())?;
    /// let endpoint = runtime.block_on(pull.bind("tcp://127.0.0.1:*"))?;
    /// assert_eq!(pull.last_endpoint(), endpoint);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_runtime(runtime: R, ty: SocketType, options: Options) -> Result<Socket<R>, Error> {
        // Its starting values and CURVE's keys and nonces come from the operating system.
        let socket = zmtp_driver::new_socket(ty, options)?;
        Ok(Socket {
            inner: Inner::new(socket, runtime),
        })
    }

    /// The socket type.
    pub fn socket_type(&self) -> SocketType {
        self.inner.lock().socket.socket_type()
    }

    /// The options in force.
    pub fn options(&self) -> Options {
        self.inner.lock().socket.options().clone()
    }

    /// Change options; they apply to connections made afterwards (HWMs and pattern
    /// options at once). To change one option, use its setter (`set_sndhwm`, …).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Options, Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// push.set_options(Options::default().with_sndhwm(5).with_immediate(true))?;
    /// assert_eq!(push.options().sndhwm, 5);
    /// assert!(push.options().immediate);
    /// # Ok(()) }
    /// ```
    pub fn set_options(&self, options: Options) -> Result<(), Error> {
        self.inner
            .with(|core| core.socket.set_options(options))
            .map_err(Error::Options)
    }

    /// The TLS settings of the `wss://` endpoints this socket binds or connects from now
    /// on: the certificate it presents when listening, the roots it trusts when
    /// connecting (the platform's unless set). Binding `wss://` without a certificate
    /// fails with `InvalidInput`.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use zmtp_tokio::{Socket, SocketType, Tls};
    ///
    /// let rep = Socket::new(SocketType::Rep)?;
    /// rep.set_tls(Tls::new().with_identity_files("cert.pem", "key.pem")?);
    /// rep.bind("wss://*:5556").await?;
    ///
    /// let req = Socket::new(SocketType::Req)?;
    /// req.set_tls(Tls::new().with_roots_file("ca.pem")?);
    /// req.connect("wss://localhost:5556")?;
    /// # Ok(()) }
    /// ```
    pub fn set_tls(&self, tls: Tls) {
        self.inner.with(|core| core.tls = tls);
    }

    /// Change some options in one step: `change` edits a copy of the options in force,
    /// which replaces them if valid ([`Error::Options`] otherwise, changing nothing).
    /// Each option's setter (`set_sndhwm`, `set_linger`, …) is a call of this.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// // One option: its setter.
    /// push.set_sndhwm(10)?;
    /// assert_eq!(push.options().sndhwm, 10);
    /// // Several in one step.
    /// push.update_options(|options| {
    ///     options.sndhwm = 20;
    ///     options.linger = Some(Duration::ZERO);
    /// })?;
    /// assert_eq!(push.options().sndhwm, 20);
    /// assert_eq!(push.options().linger, Some(Duration::ZERO));
    /// // An invalid value changes nothing.
    /// assert!(matches!(push.set_routing_id(vec![0; 256]), Err(Error::Options(_))));
    /// assert!(push.options().routing_id.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn update_options(&self, change: impl FnOnce(&mut Options)) -> Result<(), Error> {
        self.inner
            .with(|core| {
                let mut options = core.socket.options().clone();
                change(&mut options);
                core.socket.set_options(options)
            })
            .map_err(Error::Options)
    }

    zmtp_driver::option_setters!();

    /// Decide authentication requests (ZAP) with `authenticator`, or with `None`, ask the
    /// handler bound at `inproc://zeromq.zap.01` if any, as libzmq does, and otherwise
    /// apply libzmq's rules (PLAIN servers refuse everyone, CURVE servers accept every
    /// client). Requests are made by PLAIN and CURVE servers, and by NULL sockets with a
    /// ZAP domain.
    ///
    /// A PLAIN server that lets one user in; the user id it gives is on every message that
    /// user sends:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Authenticator, Options, Security, Socket, SocketType};
    ///
    /// let server_options = Options::default().with_security(Security::plain_server());
    /// let server = Socket::with_options(SocketType::Pull, server_options)?;
    /// server.set_authenticator(Some(Authenticator::new().plain_user("admin", "secret")));
    /// let endpoint = server.bind("tcp://127.0.0.1:*").await?;
    ///
    /// let client_options = Options::default().with_security(Security::plain_client("admin", "secret")?);
    /// let client = Socket::with_options(SocketType::Push, client_options)?;
    /// client.connect(&endpoint)?;
    /// client.send("hello").await?;
    ///
    /// let msg = server.recv().await?;
    /// assert_eq!(msg.to_str(), Ok("hello"));
    /// assert_eq!(msg.property("User-Id"), Some(&b"admin"[..]));
    /// # Ok(()) }
    /// ```
    pub fn set_authenticator(&self, authenticator: Option<Authenticator>) {
        self.inner
            .with(|core| core.socket.set_authenticator(authenticator));
    }

    /// Listen on `endpoint` (`tcp://127.0.0.1:*`, `tcp://[::1]:5555`, `ipc:///tmp/x`,
    /// `ipc://@name`, `inproc://name`); returns the resolved endpoint, also kept as
    /// [`last_endpoint`](Self::last_endpoint).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// // Port `*`: the system picks a free one, and the endpoint returned says which.
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// assert!(endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with('*'));
    /// assert_eq!(pull.last_endpoint(), endpoint);
    ///
    /// // An endpoint in use by another socket is refused by the system.
    /// let other = Socket::new(SocketType::Pull)?;
    /// let in_use = other.bind(&endpoint).await.unwrap_err();
    /// assert!(matches!(in_use, Error::Bind { .. }));
    /// assert_eq!(in_use.to_string(), format!("{endpoint}: address already in use"));
    /// # Ok(()) }
    /// ```
    pub async fn bind(&self, endpoint: &str) -> Result<String, Error> {
        let waiter = {
            let mut core = self.inner.lock();
            if core.closed {
                return Err(Error::Closed);
            }
            let id = core.socket.bind(endpoint)?;
            let waiter = self.inner.wait_bind(&mut core, id);
            self.inner.pump(&mut core);
            waiter
        };
        match waiter.await {
            Ok(result) => result.map_err(|e| Error::bind(endpoint, e)),
            Err(_) => Err(Error::Closed),
        }
    }

    /// Connect to `endpoint`. Returns at once, without waiting (not `async`): the
    /// connection (and reconnections) happen in the background, and messages queue for it
    /// meanwhile (unless IMMEDIATE is set). A malformed endpoint fails here.
    ///
    /// A connection made before its peer binds: the message waits for it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://connect-example")?;
    /// push.send("sent before the bind").await?;
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://connect-example").await?;
    /// assert_eq!(pull.recv_string().await?, "sent before the bind");
    ///
    /// // A malformed endpoint fails at once.
    /// assert!(matches!(push.connect("tcp://no-port"), Err(Error::Endpoint(_))));
    /// # Ok(()) }
    /// ```
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        self.inner.with_timers(|core| {
            if core.closed {
                return Err(Error::Closed);
            }
            core.socket.connect(endpoint)?;
            Ok(())
        })
    }

    /// Stop listening on an endpoint given to `bind` (or the resolved form), and close the
    /// connections accepted on it, as libzmq does (what was queued for them is discarded;
    /// what they sent stays readable). Returns at once (not `async`); [`Error::NotFound`]
    /// if no such endpoint is bound.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// pull.unbind(&endpoint)?;
    /// assert!(matches!(pull.unbind(&endpoint), Err(Error::NotFound)));
    /// # Ok(()) }
    /// ```
    pub fn unbind(&self, endpoint: &str) -> Result<(), Error> {
        let now = self.inner.now();
        if self
            .inner
            .with_timers(|core| core.socket.unbind(endpoint, now))
        {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Drop a connection made with `connect`. Returns at once (not `async`);
    /// [`Error::NotFound`] if no such endpoint is connected.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// assert!(push.can_send());
    ///
    /// push.disconnect(&endpoint)?;
    /// assert!(!push.can_send()); // no peer left to send to
    /// assert!(matches!(push.disconnect(&endpoint), Err(Error::NotFound)));
    /// # Ok(()) }
    /// ```
    pub fn disconnect(&self, endpoint: &str) -> Result<(), Error> {
        if self
            .inner
            .with_timers(|core| core.socket.disconnect(endpoint, self.inner.now()))
        {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// The last endpoint bound, resolved (e.g. with the port chosen for `*`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// assert_eq!(pull.last_endpoint(), "");
    /// pull.bind("tcp://127.0.0.1:*").await?;
    /// assert!(pull.last_endpoint().starts_with("tcp://127.0.0.1:"));
    /// # Ok(()) }
    /// ```
    pub fn last_endpoint(&self) -> String {
        self.inner.lock().socket.last_endpoint().to_string()
    }

    /// Subscribe to a topic prefix (`ZMQ_SUBSCRIBE`); the empty topic matches everything.
    /// Subscriptions count: each needs its own [`unsubscribe`](Self::unsubscribe). Only
    /// SUB and XSUB subscribe: other types fail with [`Error::Unsupported`].
    ///
    /// A publisher drops what no subscriber wants ([`Sent::Dropped`]), and a subscription
    /// takes a moment to reach it after the connection is made:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Error, Sent, Socket, SocketType};
    ///
    /// let publisher = Socket::new(SocketType::Pub)?;
    /// let endpoint = publisher.bind("tcp://127.0.0.1:*").await?;
    /// let subscriber = Socket::new(SocketType::Sub)?;
    /// subscriber.subscribe("weather")?;
    /// subscriber.connect(&endpoint)?;
    ///
    /// // Publish until the subscription has arrived.
    /// while publisher.send("weather: sunny").await? == Sent::Dropped {
    ///     tokio::time::sleep(Duration::from_millis(1)).await;
    /// }
    /// assert_eq!(publisher.send("news: none").await?, Sent::Dropped);
    /// assert_eq!(publisher.send("weather: rain").await?, Sent::Queued);
    ///
    /// assert_eq!(subscriber.recv_string().await?, "weather: sunny");
    /// assert_eq!(subscriber.recv_string().await?, "weather: rain");
    ///
    /// // Only SUB and XSUB subscribe (and an XPUB in manual mode).
    /// assert!(matches!(publisher.subscribe("weather"), Err(Error::Unsupported)));
    /// # Ok(()) }
    /// ```
    pub fn subscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.inner.with(|core| {
            if !core.socket.takes_subscriptions() {
                return Err(Error::Unsupported);
            }
            core.socket.subscribe(topic.as_ref());
            Ok(())
        })
    }

    /// Cancel one subscription to a topic (`ZMQ_UNSUBSCRIBE`); a topic not subscribed is
    /// no error, as in libzmq. Only SUB and XSUB subscribe (and an XPUB in manual mode,
    /// for the peer whose subscription it received last): other types fail with
    /// [`Error::Unsupported`].
    ///
    /// An XPUB receives subscriptions as messages (a first byte 1 to subscribe, 0 to
    /// unsubscribe, then the topic):
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let xpub = Socket::new(SocketType::XPub)?;
    /// let endpoint = xpub.bind("inproc://unsubscribe-example").await?;
    /// let sub = Socket::new(SocketType::Sub)?;
    /// sub.connect(&endpoint)?;
    ///
    /// sub.subscribe("weather")?;
    /// assert_eq!(&xpub.recv().await?.frames()[0][..], b"\x01weather");
    /// sub.unsubscribe("weather")?;
    /// assert_eq!(&xpub.recv().await?.frames()[0][..], b"\x00weather");
    /// # Ok(()) }
    /// ```
    pub fn unsubscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.inner.with(|core| {
            if !core.socket.takes_subscriptions() {
                return Err(Error::Unsupported);
            }
            core.socket.unsubscribe(topic.as_ref());
            Ok(())
        })
    }

    /// DISH: receive the messages RADIO peers send to `group` (at most 255 bytes, matched
    /// whole); every RADIO is told now and again on each reconnect (libzmq's `zmq_join`).
    /// Another type fails with [`Error::Unsupported`]; a group already joined or too long
    /// with [`Error::Group`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Message, Socket, SocketType};
    ///
    /// let radio = Socket::new(SocketType::Radio)?;
    /// let endpoint = radio.bind("tcp://127.0.0.1:*").await?;
    /// let dish = Socket::new(SocketType::Dish)?;
    /// dish.join("weather")?;
    /// dish.connect(&endpoint)?;
    /// // RADIO drops what no one has joined: send until the join has arrived.
    /// let news = loop {
    ///     let mut news = Message::from("rain");
    ///     news.set_group("weather")?;
    ///     radio.send(news).await?;
    ///     if let Ok(got) = tokio::time::timeout(Duration::from_millis(10), dish.recv()).await {
    ///         break got?;
    ///     }
    /// };
    /// assert_eq!(news.group(), Some(&b"weather"[..]));
    /// assert_eq!(news.to_str(), Ok("rain"));
    /// dish.leave("weather")?;
    /// # Ok(()) }
    /// ```
    pub fn join(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        Ok(self.inner.with(|core| core.socket.join(group.as_ref()))?)
    }

    /// DISH: stop receiving the messages of `group` (libzmq's `zmq_leave`); as
    /// [`join`](Self::join) for errors, and a group not joined is [`Error::Group`].
    pub fn leave(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        Ok(self.inner.with(|core| core.socket.leave(group.as_ref()))?)
    }

    /// PEER: connect to `endpoint` (as [`connect`](Self::connect)) and return the routing
    /// id of the peer there, to address messages to it with
    /// [`Message::set_routing_id`] (libzmq's `zmq_connect_peer`). Messages to it wait for
    /// the connection. Another type, or `IMMEDIATE` set, fails with [`Error::Endpoint`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Message, Socket, SocketType};
    ///
    /// let b = Socket::new(SocketType::Peer)?;
    /// let endpoint = b.bind("tcp://127.0.0.1:*").await?;
    /// let a = Socket::new(SocketType::Peer)?;
    /// let to_b = a.connect_peer(&endpoint)?;
    /// let mut hello = Message::from("hello");
    /// hello.set_routing_id(to_b)?;
    /// a.send(hello).await?;
    ///
    /// let got = b.recv().await?;
    /// let mut reply = Message::from("hi");
    /// reply.set_routing_id(got.routing_id().unwrap())?; // b's id for a
    /// b.send(reply).await?;
    /// assert_eq!(a.recv().await?.routing_id(), Some(to_b));
    /// # Ok(()) }
    /// ```
    pub fn connect_peer(&self, endpoint: &str) -> Result<u32, Error> {
        self.inner.with_timers(|core| {
            if core.closed {
                return Err(Error::Closed);
            }
            Ok(core.socket.connect_peer(endpoint)?)
        })
    }

    /// Send a message, waiting while the socket would block (HWM, no peer yet).
    /// Cancel-safe: dropped before it completes, the future has queued nothing.
    ///
    /// A message is anything that converts into a [`Message`]: borrowed text and bytes
    /// (copied), owned `String`s, `Vec<u8>`s and [`Bytes`] (taken without a copy),
    /// `'static` data without a copy through [`Message::from_static`], and lists of frames.
    /// A refusal hands the message back in the [`SendError`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Message, SendError, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://send-example").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://send-example")?;
    ///
    /// let name = String::from("Ada");
    /// push.send("text").await?; // &str
    /// push.send(&name).await?; // &String
    /// push.send(&b"\x00\x01"[..]).await?; // &[u8]
    /// push.send(format!("hello {name}")).await?; // String, not copied
    /// push.send(Message::from_static(b"static")).await?; // not copied
    /// push.send(["key", "value"]).await?; // two frames
    ///
    /// assert_eq!(pull.recv_string().await?, "text");
    /// assert_eq!(pull.recv_string().await?, "Ada");
    /// assert_eq!(&pull.recv().await?.frames()[0][..], b"\x00\x01");
    /// assert_eq!(pull.recv_string().await?, "hello Ada");
    /// assert_eq!(pull.recv_string().await?, "static");
    /// assert_eq!(pull.recv().await?, Message::from(["key", "value"]));
    ///
    /// // A REQ must wait for its reply before it sends again.
    /// let req = Socket::new(SocketType::Req)?;
    /// req.set_linger(Some(std::time::Duration::ZERO))?; // its request goes nowhere
    /// req.connect("inproc://nobody-answers")?;
    /// req.send("first").await?;
    /// match req.send("second").await {
    ///     Err(SendError::InvalidState(msg)) => assert_eq!(msg.to_str(), Ok("second")),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn send(&self, msg: impl Into<Message>) -> SendFuture<'_, R> {
        SendFuture::new(self, msg.into())
    }

    /// Send a message without waiting: `SendError::WouldBlock` hands it back.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{SendError, Sent, Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// // No peer yet: the message comes back.
    /// let msg = match push.try_send("job") {
    ///     Err(SendError::WouldBlock(msg)) => msg,
    ///     other => panic!("{other:?}"),
    /// };
    /// push.connect("inproc://try-send-example")?;
    /// assert_eq!(push.try_send(msg), Ok(Sent::Queued));
    /// # Ok(()) }
    /// ```
    pub fn try_send(&self, msg: impl Into<Message>) -> Result<Sent, SendError> {
        let msg = msg.into();
        self.inner
            .with(|core| core.socket.send(msg, || self.inner.now()))
    }

    /// Send a single-frame message copied from `body`, waiting while the socket would
    /// block: what `send(Bytes::copy_from_slice(body))` does, without allocating a message
    /// when the frame can be queued at once (libzmq's `zmq_send`). Cancel-safe like `send`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::io::Write;
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let mut buf = Vec::new();
    /// for i in 0..3 {
    ///     buf.clear();
    ///     write!(buf, "tick {i}")?;
    ///     push.send_slice(&buf).await?;
    /// }
    /// assert_eq!(pull.recv_string().await?, "tick 0");
    /// assert_eq!(pull.recv_string().await?, "tick 1");
    /// assert_eq!(pull.recv_string().await?, "tick 2");
    /// # Ok(()) }
    /// ```
    pub fn send_slice<'a>(&'a self, body: &'a [u8]) -> SendFuture<'a, R> {
        SendFuture::slice(self, body)
    }

    /// Send single-frame messages copied from `bodies`, in order, waiting while none
    /// fits; returns how many were queued (at least one, unless `bodies` is empty). Call
    /// it again with the rest (`&bodies[n..]`) until all are sent.
    ///
    /// The batch is queued under one lock of the socket, where
    /// [`send_slice`](Self::send_slice) takes the lock once per message: a sender of many
    /// small messages spends noticeably less per message this way. Each message is
    /// queued as `send_slice` queues it (so it leaves as `send_slice`'s would, in the
    /// same writes). Cancel-safe: a future dropped before it completes has queued
    /// nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let batch: Vec<String> = (0..100).map(|i| format!("tick {i}")).collect();
    /// let mut rest = &batch[..];
    /// while !rest.is_empty() {
    ///     let n = push.send_many(rest).await?;
    ///     rest = &rest[n..];
    /// }
    /// for i in 0..100 {
    ///     assert_eq!(pull.recv_string().await?, format!("tick {i}"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn send_many<B: AsRef<[u8]>>(&self, bodies: &[B]) -> Result<usize, SendError> {
        if bodies.is_empty() {
            return Ok(0);
        }
        let mut waiter = Waiter::new(&self.inner.writable, &self.inner.send_waiters);
        std::future::poll_fn(|cx| {
            waiter.poll(cx, || match self.try_send_many(bodies) {
                Ok(0) => None,
                done => Some(done),
            })
        })
        .await
    }

    /// Queue single-frame messages copied from `bodies`, in order, as many as fit now
    /// (possibly 0), under one lock; returns how many. A refusal other than a full
    /// socket (a type that never sends, a closed socket) is returned when it hits the
    /// first message.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Options, Socket, SocketType};
    ///
    /// let push = Socket::with_options(SocketType::Push, Options::default().with_sndhwm(2))?;
    /// push.connect("inproc://try-send-many-example")?;
    /// // SNDHWM 2: two of the three fit.
    /// assert_eq!(push.try_send_many(&["a", "b", "c"])?, 2);
    /// # Ok(()) }
    /// ```
    pub fn try_send_many<B: AsRef<[u8]>>(&self, bodies: &[B]) -> Result<usize, SendError> {
        self.inner
            .with(|core| core.socket.send_slices(bodies, || self.inner.now()))
    }

    /// [`send_slice`](Self::send_slice) without waiting: `SendError::WouldBlock` hands back
    /// a message holding a copy.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{SendError, Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// let buf = *b"job";
    /// match push.try_send_slice(&buf) {
    ///     // No peer yet; the copy comes back as a message.
    ///     Err(SendError::WouldBlock(msg)) => assert_eq!(msg.to_str(), Ok("job")),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_send_slice(&self, body: &[u8]) -> Result<Sent, SendError> {
        self.inner
            .with(|core| core.socket.send_slice(body, || self.inner.now()))
    }

    /// Receive the next message, waiting for one. Cancel-safe: dropped before it
    /// completes, the future has taken no message. A type that never receives (PUB,
    /// PUSH: see [`SocketType::receives`]) fails at once with [`Error::Unsupported`].
    ///
    /// A wait with a limit is the runtime's timeout around it (`recv` is cancel-safe, so
    /// nothing is lost when the time runs out):
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Error, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let nothing = tokio::time::timeout(Duration::from_millis(10), pull.recv()).await;
    /// assert!(nothing.is_err());
    ///
    /// push.send(["job", "42"]).await?;
    /// let msg = pull.recv().await?;
    /// assert_eq!(msg.len(), 2);
    /// assert_eq!(&msg.frames()[1][..], b"42");
    ///
    /// // A PUSH never receives.
    /// assert!(matches!(push.recv().await, Err(Error::Unsupported)));
    /// # Ok(()) }
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, R> {
        RecvFuture::new(self)
    }

    /// Receive a single-frame text message as a `String` (pyzmq's `recv_string`), waiting
    /// for it as [`recv`](Self::recv) does. A message that is not text (several frames, or
    /// not UTF-8: see [`Message::to_str`]) is taken all the same, and handed over in
    /// [`Error::NotText`]. Cancel-safe like `recv`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Error, Socket, SocketType, TextError};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://recv-string-example").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://recv-string-example")?;
    /// push.send("hello").await?;
    /// push.send(["two", "frames"]).await?;
    ///
    /// assert_eq!(pull.recv_string().await?, "hello");
    /// match pull.recv_string().await {
    ///     Err(Error::NotText { reason, message }) => {
    ///         assert_eq!(reason, TextError::Frames(2));
    ///         assert_eq!(message.len(), 2);
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn recv_string(&self) -> Result<String, Error> {
        Error::text_of(self.recv().await?)
    }

    /// The next message if one is ready; [`Error::Unsupported`] on a type that never
    /// receives (PUB, PUSH).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{poll, PollItem, Socket, SocketType, POLLIN};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// assert_eq!(pull.try_recv()?, None);
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("job").await?;
    /// // Wait until it has arrived, then take it without waiting.
    /// poll(&mut [PollItem::new(&pull, POLLIN)], Some(Duration::from_secs(5))).await?;
    /// assert_eq!(pull.try_recv()?.map(|m| m.to_string()), Some("job".to_string()));
    /// # Ok(()) }
    /// ```
    pub fn try_recv(&self) -> Result<Option<Message>, Error> {
        if let Some(msg) = self.recv_ready() {
            return Ok(Some(msg));
        }
        self.inner
            .with(|core| match core.socket.recv(|| self.inner.now()) {
                Some(m) => Ok(Some(m)),
                None => nothing_ready(core).map(|()| None),
            })
    }

    /// The next message if one is ready: [`try_recv`](Self::try_recv)'s common case, with
    /// no error decided (call `try_recv` when this gives `None`).
    ///
    /// A type that receives in batches (see `recv_batch_len` in the core) takes a batch
    /// under one lock of the socket and hands it out one message per call.
    #[inline(always)]
    pub(crate) fn recv_ready(&self) -> Option<Message> {
        if !self.inner.recv_batches {
            return self
                .inner
                .with(|core| core.socket.recv(|| self.inner.now()));
        }
        self.inner.ready.next(
            |batch| {
                self.inner.with(|core| {
                    let max = core.socket.recv_batch_len();
                    core.socket.recv_many(batch, max, || self.inner.now())
                });
            },
            // Others waiting to receive look at what this batch left.
            || self.inner.wake_receivers(),
        )
    }

    /// Wait for at least one message, then append every ready message, up to `max`, to
    /// `out`; returns how many were appended (0 only when `max` is 0).
    ///
    /// The batch is taken under one lock of the socket, where [`recv`](Self::recv) takes
    /// the lock once per message: a receiver that keeps up with a fast stream spends
    /// noticeably less per message this way. Messages come in `recv`'s order (fair-queued
    /// per message between peers). Cancel-safe: a future dropped before it completes has
    /// appended nothing.
    ///
    /// Received messages share the socket's read buffers, which are reused once every
    /// message in them is dropped: a batch of many large messages, kept while more are
    /// read, makes the socket allocate new buffers instead. Batches of a few hundred
    /// KiB in all keep the reuse (for 64 KiB messages, `max` of 4 or so).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://recv-many-example").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://recv-many-example")?;
    /// for i in 0..10 {
    ///     push.send(format!("job {i}")).await?;
    /// }
    ///
    /// let mut batch = Vec::with_capacity(64);
    /// let mut received = 0;
    /// while received < 10 {
    ///     batch.clear();
    ///     received += pull.recv_many(&mut batch, 64).await?;
    ///     for msg in &batch {
    ///         assert!(msg.to_string().starts_with("job "));
    ///     }
    /// }
    /// assert_eq!(received, 10);
    /// # Ok(()) }
    /// ```
    pub async fn recv_many(&self, out: &mut Vec<Message>, max: usize) -> Result<usize, Error> {
        if max == 0 {
            return Ok(0);
        }
        let mut waiter = Waiter::new(&self.inner.readable, &self.inner.recv_waiters);
        std::future::poll_fn(|cx| {
            waiter.poll(cx, || match self.try_recv_many(out, max) {
                Ok(0) => None,
                done => Some(done),
            })
        })
        .await
    }

    /// Append every message ready now, up to `max`, to `out`, without waiting; returns
    /// how many (possibly 0). One lock for the whole batch, as
    /// [`recv_many`](Self::recv_many); [`Error::Unsupported`] on a type that never
    /// receives, [`Error::Closed`] once the socket is closed and drained.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://try-recv-many-example").await?;
    /// let mut batch = Vec::new();
    /// assert_eq!(pull.try_recv_many(&mut batch, 16)?, 0);
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://try-recv-many-example")?;
    /// push.send("a").await?;
    /// push.send("b").await?;
    /// // Wait for the first, then take what else is there.
    /// batch.push(pull.recv().await?);
    /// while batch.len() < 2 {
    ///     pull.try_recv_many(&mut batch, 16)?;
    ///     tokio::task::yield_now().await;
    /// }
    /// assert_eq!(batch.iter().map(|m| m.to_string()).collect::<Vec<_>>(), ["a", "b"]);
    /// # Ok(()) }
    /// ```
    pub fn try_recv_many(&self, out: &mut Vec<Message>, max: usize) -> Result<usize, Error> {
        if max == 0 {
            return Ok(0);
        }
        // What `recv` took in a batch comes first.
        let taken = self.inner.ready.drain_into(out, max);
        if taken == max {
            return Ok(taken);
        }
        self.inner.with(|core| {
            match core.socket.recv_many(out, max - taken, || self.inner.now()) + taken {
                0 => nothing_ready(core).map(|()| 0),
                n => Ok(n),
            }
        })
    }

    /// Whether a `send` would not block now (libzmq's `ZMQ_POLLOUT`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// assert!(!push.can_send()); // no peer
    /// // With IMMEDIATE off (the default), a connection gets its queue at once.
    /// push.connect("inproc://can-send-example")?;
    /// assert!(push.can_send());
    /// # Ok(()) }
    /// ```
    pub fn can_send(&self) -> bool {
        self.inner.lock().socket.can_send()
    }

    /// How many peers a message could reach now, before its topic or group is looked at
    /// (see [`zmtp_proto::socket::Socket::audience`]): an XPUB's subscribers that
    /// subscribed to anything, a RADIO's dishes that joined any group, every other type's
    /// connected peers. Tells a PUB's message that matched no subscriber's topic from one
    /// sent while no subscriber was there (both [`Sent::Dropped`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Sent, Socket, SocketType};
    ///
    /// let publisher = Socket::new(SocketType::Pub)?;
    /// publisher.bind("inproc://audience-example").await?;
    /// assert_eq!(publisher.send("news").await?, Sent::Dropped);
    /// assert_eq!(publisher.audience(), 0);
    /// # Ok(()) }
    /// ```
    pub fn audience(&self) -> usize {
        self.inner.lock().socket.audience()
    }

    /// Whether a message is ready for `recv` (libzmq's `ZMQ_POLLIN`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{poll, PollItem, Socket, SocketType, POLLIN};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// assert!(!pull.can_recv());
    ///
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("job").await?;
    /// poll(&mut [PollItem::new(&pull, POLLIN)], Some(Duration::from_secs(5))).await?;
    /// assert!(pull.can_recv());
    /// # Ok(()) }
    /// ```
    pub fn can_recv(&self) -> bool {
        !self.inner.ready.is_empty() || self.inner.lock().socket.can_recv()
    }

    /// Monitor events from now on, as a `Stream`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{MonitorEventKind, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let mut monitor = pull.monitor();
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    ///
    /// let event = monitor.next().await.expect("the socket is open");
    /// assert_eq!(event.kind, MonitorEventKind::Listening);
    /// assert_eq!(event.endpoint, endpoint);
    /// # Ok(()) }
    /// ```
    pub fn monitor(&self) -> Monitor {
        let rx = self.inner.with_timers(|core| self.inner.add_monitor(core));
        Monitor { rx }
    }

    /// Close the socket: stop listening, linger until queued messages are written or
    /// LINGER expires, then close every connection. Returns what LINGER cut off
    /// ([`CloseReport::delivered_all`] when nothing).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use std::time::Duration;
    /// use zmtp_tokio::{Options, Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("last words").await?;
    /// // Waits until the message is written.
    /// assert!(push.close().await.delivered_all());
    /// assert_eq!(pull.recv_string().await?, "last words");
    ///
    /// // With no peer and LINGER zero, what was queued is cut off, and reported.
    /// let options = Options::default().with_linger(Some(Duration::ZERO));
    /// let lonely = Socket::with_options(SocketType::Push, options)?;
    /// lonely.connect("inproc://nobody-binds-this")?;
    /// lonely.send("lost").await?;
    /// let report = lonely.close().await;
    /// assert_eq!(report.unsent_messages, 1);
    /// # Ok(()) }
    /// ```
    pub async fn close(self) -> CloseReport {
        self.inner.close().await
    }

    /// A `Stream` of received messages (and a `Sink` for sending) over this socket.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zmtp_tokio::Error> {
    /// use zmtp_tokio::{Socket, SocketType};
    ///
    /// let pull = Socket::new(SocketType::Pull)?;
    /// pull.bind("inproc://stream-example").await?;
    /// let push = Socket::new(SocketType::Push)?;
    /// push.connect("inproc://stream-example")?;
    /// push.send("a").await?;
    /// push.send("b").await?;
    ///
    /// let mut messages = pull.stream();
    /// assert_eq!(messages.next().await.map(|m| m.to_string()).as_deref(), Some("a"));
    /// assert_eq!(messages.next().await.map(|m| m.to_string()).as_deref(), Some("b"));
    /// # Ok(()) }
    /// ```
    pub fn stream(&self) -> MessageStream<'_, R> {
        MessageStream {
            socket: self,
            recv: RecvFuture::new(self),
            ready: Waiter::new(&self.inner.writable, &self.inner.send_waiters),
        }
    }
}

/// Why a receive found nothing: the type never receives, the socket is closed, or
/// (`Ok`) nothing has arrived yet.
fn nothing_ready<R: Runtime>(core: &crate::core::Core<R>) -> Result<(), Error> {
    if !core.socket.socket_type().receives() {
        Err(Error::Unsupported)
    } else if core.closed {
        Err(Error::Closed)
    } else {
        Ok(())
    }
}

impl<R: Runtime> Drop for Socket<R> {
    fn drop(&mut self) {
        self.inner.lock().orphaned = true;
        if !self.inner.start_close() {
            // It lingers: if its runtime ends first, it lingers on elsewhere.
            crate::handover::orphaned(&self.inner);
        }
    }
}

/// Monitor events of one socket (see [`Socket::monitor`]).
///
/// The events of a `connect`, from the attempt to the end of the handshake:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zmtp_tokio::Error> {
/// use zmtp_tokio::{MonitorEventKind, Socket, SocketType};
///
/// let pull = Socket::new(SocketType::Pull)?;
/// let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
/// let push = Socket::new(SocketType::Push)?;
/// let mut monitor = push.monitor();
/// push.connect(&endpoint)?;
///
/// let mut kinds = Vec::new();
/// while let Some(event) = monitor.next().await {
///     println!("{:?} {}", event.kind, event.endpoint);
///     kinds.push(event.kind);
///     if event.kind == MonitorEventKind::HandshakeSucceeded {
///         break;
///     }
/// }
/// assert!(kinds.contains(&MonitorEventKind::Connected));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Monitor {
    rx: mpsc::UnboundedReceiver<MonitorEvent>,
}

impl Monitor {
    /// The next event; `None` once the socket is closed.
    pub async fn next(&mut self) -> Option<MonitorEvent> {
        self.rx.recv().await
    }
}

impl FuturesStream for Monitor {
    type Item = MonitorEvent;
    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut task::Context<'_>,
    ) -> Poll<Option<MonitorEvent>> {
        self.rx.poll_recv(cx)
    }
}

/// Messages of a socket as a `Stream`, and a `Sink` of messages into it. The stream ends
/// when the socket is closed, and at once on a type that never receives (PUB, PUSH).
pub struct MessageStream<'a, R: Runtime> {
    socket: &'a Socket<R>,
    recv: RecvFuture<'a, R>,
    ready: Waiter<'a>,
}

impl<R: Runtime> std::fmt::Debug for MessageStream<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStream").finish_non_exhaustive()
    }
}

impl<R: Runtime> MessageStream<'_, R> {
    /// The next message, as [`Socket::recv`] gives it (`None` once the socket is closed),
    /// without a `StreamExt` import. Cancel-safe.
    pub async fn next(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl<R: Runtime> FuturesStream for MessageStream<'_, R> {
    type Item = Message;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<Option<Message>> {
        std::future::Future::poll(Pin::new(&mut self.recv), cx).map(Result::ok)
    }
}

impl<R: Runtime> futures_sink::Sink<Message> for MessageStream<'_, R> {
    type Error = SendError;

    fn poll_ready(
        mut self: Pin<&mut Self>,
        cx: &mut task::Context<'_>,
    ) -> Poll<Result<(), SendError>> {
        let socket = self.socket;
        self.ready.poll(cx, || {
            (socket.can_send() || socket.inner.lock().closed).then_some(Ok(()))
        })
    }

    fn start_send(self: Pin<&mut Self>, item: Message) -> Result<(), SendError> {
        self.socket.try_send(item).map(|_| ())
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut task::Context<'_>) -> Poll<Result<(), SendError>> {
        // Writes happen as soon as the stream has room; nothing is held back here.
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut task::Context<'_>) -> Poll<Result<(), SendError>> {
        Poll::Ready(Ok(()))
    }
}
