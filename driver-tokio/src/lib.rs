//! ZeroMQ sockets on tokio.
//!
//! A thin driver over the sans-IO [`zmtp_proto`] core: every protocol and pattern decision
//! (routing, high-water marks, reconnects, heartbeats, monitor events) is made there; the
//! runtime-agnostic [`zmtp_async`] moves bytes over `tcp://`, `ipc://` and `inproc://`
//! streams and arms timers, and this crate gives it tokio's tasks, timers and streams
//! ([`Tokio`]). Names and options follow libzmq and pyzmq; `zmtp-smol` has the same
//! surface on smol.
//!
//! ```
//! use zmtp_tokio::{Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pull = Socket::new(SocketType::Pull)?;
//! let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
//! let push = Socket::new(SocketType::Push)?;
//! push.connect(&endpoint)?;
//! push.send("hello").await?;
//! let msg = pull.recv().await?;
//! assert_eq!(&msg.frames()[0][..], b"hello");
//! # Ok(()) }
//! ```
//!
//! Every method of [`Socket`] has an example of its own in `zmtp_async::Socket`'s
//! documentation, written with this crate.
//!
//! # Options
//! Options are given when a socket is made (`Socket::with_options`, built one at a time
//! with `Options`' `with_*` methods), or changed one at a time on a live socket with its
//! setter, named after the libzmq option (`set_sndhwm` for `ZMQ_SNDHWM`); each says when
//! the change applies.
//!
//! ```
//! use std::time::Duration;
//! use zmtp_tokio::{Options, Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let options = Options::default().with_sndhwm(10).with_linger(Some(Duration::ZERO));
//! let push = Socket::with_options(SocketType::Push, options)?;
//! push.set_linger(Some(Duration::from_millis(500)))?;
//! assert_eq!(push.options().linger, Some(Duration::from_millis(500)));
//! assert_eq!(push.options().sndhwm, 10);
//! # Ok(()) }
//! ```
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

mod runtime;

pub use runtime::{Tokio, TokioTask, TokioTcp, TokioTcpListener, TokioUnix, TokioUnixListener};
pub use zmtp_async::{
    curve_keypair, z85, AuthReply, Authenticator, Bytes, CloseReport, EndpointError, Error,
    GroupError, KeyPair, Message, MetadataError, Monitor, MonitorEvent, MonitorEventKind, Options,
    PeerProperties, PublicKey, SecretKey, Security, SendError, Sent, SocketType, TextError,
    ZapRequest,
};

/// A ZeroMQ socket. Its I/O runs on tasks of the tokio runtime it was created in
/// ([`Error::NoRuntime`] outside one).
///
/// Methods take `&self`, so one socket may be shared (for example in an `Arc`) between a
/// sending and a receiving task. Dropping the socket closes it in the background,
/// honouring LINGER while the runtime runs; [`Socket::close`](zmtp_async::Socket::close)
/// does the same and waits. A program that sends and then ends waits for its messages to
/// be written with `close().await` or [`Context::term`](zmtp_async::Context::term).
pub type Socket = zmtp_async::Socket<Tokio>;

/// The sockets a program makes, closed and flushed together by
/// [`term`](zmtp_async::Context::term) at its end (`zmq_ctx_term`): messages sent just
/// before `main` returns are delivered, from dropped sockets too.
pub type Context = zmtp_async::Context<Tokio>;

/// Messages of a socket as a `Stream`, and a `Sink` of messages into it.
pub type MessageStream<'a> = zmtp_async::MessageStream<'a, Tokio>;

/// One socket to [`poll`]: what to wait for, and (after the call) what is ready. The names
/// are `zmtp-mio`'s: a program moves between the drivers by an import (and `.await`).
pub type PollItem<'a> = zmtp_async::PollItem<'a, Tokio>;
/// Waiting on several sockets at once, and the traits of [`MessageStream`] and [`Monitor`]
/// (so that naming them needs no `futures` dependency).
pub use zmtp_async::{poll, Sink, Stream, POLLIN, POLLOUT};
