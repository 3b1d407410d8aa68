//! Runtime-agnostic async ZeroMQ sockets.
//!
//! A thin driver over the sans-IO [`zmtp_proto`] core: every protocol and pattern decision
//! (routing, high-water marks, reconnects, heartbeats, monitor events) is made there; this
//! crate only moves bytes over `tcp://`, `ipc://` and `inproc://` streams and arms timers.
//! It is written once, generic over a [`Runtime`] (tasks, timers, non-blocking streams);
//! `zmtp-tokio` and `zmtp-smol` each supply one and re-export [`Socket`] for it. Names and
//! options follow libzmq and pyzmq. `inproc://` names are shared by every runtime in the
//! process: a tokio socket can talk to a smol socket in process.
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
#![warn(missing_docs)]

mod context;
mod core;
mod poll;
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
pub use crate::poll::{poll, PollItem, POLLIN, POLLOUT};
pub use crate::runtime::Runtime;
use crate::wait::Waiter;
pub use crate::wait::{RecvFuture, SendFuture};
/// Why an operation failed: the error type shared by every driver's sockets.
pub use zmtp_driver::Error;
pub use zmtp_proto::curve_crypto::{KeyPair, PublicKey, SecretKey};
pub use zmtp_proto::mechanism::Security;
pub use zmtp_proto::socket::{
    AuthReply, Authenticator, CloseReport, EndpointError, Message, MonitorEvent, MonitorEventKind,
    Options, PeerProperties, SendError, Sent, TextError, ZapRequest,
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
/// queued messages are written, for as long as its runtime runs. A program that sends
/// and then ends must wait for that: [`Socket::close`] closes and waits, and a
/// [`Context`]'s [`term`](Context::term) does it for every socket made through the
/// context, dropped ones included. A socket whose runtime ends first loses what was
/// still queued, with a warning through the `log` crate.
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
    pub fn new(ty: SocketType) -> Result<Socket<R>, Error> {
        Socket::with_options(ty, Options::default())
    }

    /// A socket of type `ty` with `options`. Must be called inside a runtime.
    pub fn with_options(ty: SocketType, options: Options) -> Result<Socket<R>, Error> {
        Socket::with_runtime(R::current().ok_or(Error::NoRuntime)?, ty, options)
    }

    /// A socket of type `ty` with `options` whose I/O runs on `runtime`.
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
    pub fn set_options(&self, options: Options) -> Result<(), Error> {
        self.inner
            .with(|core| core.socket.set_options(options))
            .map_err(Error::Options)
    }

    /// Change some options in one step: `change` edits a copy of the options in force,
    /// which replaces them if valid ([`Error::Options`] otherwise, changing nothing).
    /// Each option's setter (`set_sndhwm`, `set_linger`, …) is a call of this.
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
    pub fn set_authenticator(&self, authenticator: Option<Authenticator>) {
        self.inner
            .with(|core| core.socket.set_authenticator(authenticator));
    }

    /// Listen on `endpoint` (`tcp://127.0.0.1:*`, `tcp://[::1]:5555`, `ipc:///tmp/x`,
    /// `ipc://@name`, `inproc://name`); returns the resolved endpoint, also kept as
    /// [`last_endpoint`](Self::last_endpoint).
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
            Ok(result) => Ok(result?),
            Err(_) => Err(Error::Closed),
        }
    }

    /// Connect to `endpoint`. Returns at once, without waiting (not `async`): the
    /// connection (and reconnections) happen in the background, and messages queue for it
    /// meanwhile (unless IMMEDIATE is set). A malformed endpoint fails here.
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        self.inner.with_timers(|core| {
            if core.closed {
                return Err(Error::Closed);
            }
            core.socket.connect(endpoint)?;
            Ok(())
        })
    }

    /// Stop listening on an endpoint given to `bind` (or the resolved form). Returns at
    /// once (not `async`); [`Error::NotFound`] if no such endpoint is bound.
    pub fn unbind(&self, endpoint: &str) -> Result<(), Error> {
        if self.inner.with_timers(|core| core.socket.unbind(endpoint)) {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Drop a connection made with `connect`. Returns at once (not `async`);
    /// [`Error::NotFound`] if no such endpoint is connected.
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
    pub fn last_endpoint(&self) -> String {
        self.inner.lock().socket.last_endpoint().to_string()
    }

    /// Subscribe to a topic prefix (`ZMQ_SUBSCRIBE`); the empty topic matches everything.
    /// Subscriptions count: each needs its own [`unsubscribe`](Self::unsubscribe). Only
    /// SUB and XSUB subscribe: other types fail with [`Error::Unsupported`].
    pub fn subscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.inner.with(|core| {
            if !core.socket.socket_type().subscribes() {
                return Err(Error::Unsupported);
            }
            core.socket.subscribe(topic.as_ref());
            Ok(())
        })
    }

    /// Cancel one subscription to a topic (`ZMQ_UNSUBSCRIBE`); a topic not subscribed is
    /// no error, as in libzmq. Only SUB and XSUB subscribe: other types fail with
    /// [`Error::Unsupported`].
    pub fn unsubscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.inner.with(|core| {
            if !core.socket.socket_type().subscribes() {
                return Err(Error::Unsupported);
            }
            core.socket.unsubscribe(topic.as_ref());
            Ok(())
        })
    }

    /// Send a message, waiting while the socket would block (HWM, no peer yet).
    /// Cancel-safe: dropped before it completes, the future has queued nothing.
    pub fn send(&self, msg: impl Into<Message>) -> SendFuture<'_, R> {
        SendFuture::new(self, msg.into())
    }

    /// Send a message without waiting: `SendError::WouldBlock` hands it back.
    pub fn try_send(&self, msg: impl Into<Message>) -> Result<Sent, SendError> {
        let msg = msg.into();
        self.inner
            .with(|core| core.socket.send(msg, || self.inner.now()))
    }

    /// Send a single-frame message copied from `body`, waiting while the socket would
    /// block: what `send(Bytes::copy_from_slice(body))` does, without allocating a message
    /// when the frame can be queued at once (libzmq's `zmq_send`). Cancel-safe like `send`.
    pub fn send_slice<'a>(&'a self, body: &'a [u8]) -> SendFuture<'a, R> {
        SendFuture::slice(self, body)
    }

    /// [`send_slice`](Self::send_slice) without waiting: `SendError::WouldBlock` hands back
    /// a message holding a copy.
    pub fn try_send_slice(&self, body: &[u8]) -> Result<Sent, SendError> {
        self.inner
            .with(|core| core.socket.send_slice(body, || self.inner.now()))
    }

    /// Receive the next message, waiting for one. Cancel-safe: dropped before it
    /// completes, the future has taken no message. A type that never receives (PUB,
    /// PUSH: see [`SocketType::receives`]) fails at once with [`Error::Unsupported`].
    pub fn recv(&self) -> RecvFuture<'_, R> {
        RecvFuture::new(self)
    }

    /// Receive a single-frame text message as a `String` (pyzmq's `recv_string`), waiting
    /// for it as [`recv`](Self::recv) does. A message that is not text (several frames, or
    /// not UTF-8: see [`Message::to_str`]) is taken all the same, and handed over in
    /// [`Error::NotText`]. Cancel-safe like `recv`.
    pub async fn recv_string(&self) -> Result<String, Error> {
        Error::text_of(self.recv().await?)
    }

    /// The next message if one is ready; [`Error::Unsupported`] on a type that never
    /// receives (PUB, PUSH).
    pub fn try_recv(&self) -> Result<Option<Message>, Error> {
        self.inner
            .with(|core| match core.socket.recv(|| self.inner.now()) {
                Some(m) => Ok(Some(m)),
                None if !core.socket.socket_type().receives() => Err(Error::Unsupported),
                None if core.closed => Err(Error::Closed),
                None => Ok(None),
            })
    }

    /// Whether a `send` would not block now (libzmq's `ZMQ_POLLOUT`).
    pub fn can_send(&self) -> bool {
        self.inner.lock().socket.can_send()
    }

    /// Whether a message is ready for `recv` (libzmq's `ZMQ_POLLIN`).
    pub fn can_recv(&self) -> bool {
        self.inner.lock().socket.can_recv()
    }

    /// Monitor events from now on, as a `Stream`.
    pub fn monitor(&self) -> Monitor {
        let rx = self.inner.with_timers(|core| self.inner.add_monitor(core));
        Monitor { rx }
    }

    /// Close the socket: stop listening, linger until queued messages are written or
    /// LINGER expires, then close every connection. Returns what LINGER cut off
    /// ([`CloseReport::delivered_all`] when nothing).
    pub async fn close(self) -> CloseReport {
        self.inner.close().await
    }

    /// A `Stream` of received messages (and a `Sink` for sending) over this socket.
    pub fn stream(&self) -> MessageStream<'_, R> {
        MessageStream {
            socket: self,
            recv: RecvFuture::new(self),
            ready: Waiter::new(&self.inner.writable, &self.inner.send_waiters),
        }
    }
}

impl<R: Runtime> Drop for Socket<R> {
    fn drop(&mut self) {
        self.inner.start_close();
    }
}

/// Monitor events of one socket (see [`Socket::monitor`]).
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
