//! ZeroMQ sockets on smol (async-io).
//!
//! A thin driver over the sans-IO [`zmtp_proto`] core: every protocol and pattern decision
//! (routing, high-water marks, reconnects, heartbeats, monitor events) is made there; the
//! runtime-agnostic [`zmtp_async`] moves bytes over `tcp://`, `ipc://` and `inproc://`
//! streams and arms timers, and this crate gives it smol's executors, async-io's timers
//! and `Async` streams ([`Smol`]). The surface is `zmtp-tokio`'s, name for name, the
//! draft socket types (CLIENT/SERVER, RADIO/DISH, SCATTER/GATHER, PEER, CHANNEL)
//! included: `zmtp-tokio`'s crate docs describe each.
//!
//! Sockets created inside [`block_on`] run their I/O on that thread, with the future (a
//! single-threaded runtime); sockets created elsewhere run on smol's global executor.
//!
//! ```
//! use zmtp_smol::{Socket, SocketType};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! zmtp_smol::block_on(async {
//!     let pull = Socket::new(SocketType::Pull)?;
//!     let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
//!     let push = Socket::new(SocketType::Push)?;
//!     push.connect(&endpoint)?;
//!     push.send("hello").await?;
//!     let msg = pull.recv().await?;
//!     assert_eq!(&msg.frames()[0][..], b"hello");
//!     Ok(())
//! })
//! # }
//! ```
//!
//! [`Socket`]'s page lists its methods by group, with examples, and documents each
//! method; [`Context`]'s page does the same for contexts.
//!
//! # Cancel safety
//! [`Socket::recv`](Socket#method.recv) and [`Socket::send`](Socket#method.send) are
//! cancel-safe: a `recv` dropped before it completes has taken no message, and a `send`
//! dropped before it completes has queued nothing (a message is handed to the socket
//! whole, in one step, or not at all).
//!
//! # Batching
//! Sends append to the peer's output and are written at once when the stream has room;
//! whatever accumulates while it has none goes out in one write when it has. There is no
//! flush to call.
#![deny(missing_docs)]

mod runtime;

pub use runtime::{
    block_on, Smol, SmolListener, SmolStream, SmolTask, SmolTcp, SmolTcpListener, SmolUdp,
    SmolUnix, SmolUnixListener,
};
/// The rustls that [`Tls`] settings are made with, for settings beyond its own.
pub use zmtp_async::rustls;
pub use zmtp_async::{
    curve_keypair, linger_all, set_loss_reports, z85, AppMetadata, AuthReply, Authenticator, Bytes,
    CloseReport, EndpointError, Error, GroupError, IpcAcceptFilters, KeyPair, Message,
    MetadataError, Monitor, MonitorEvent, MonitorEventKind, Options, PeerProperties, PublicKey,
    ReconnectStop, RouterNotify, SecretKey, Security, SendError, Sent, SocketType, SocksProxy,
    SocksProxyError, TcpAcceptFilter, TextError, Tls, ZapRequest,
};

#[doc = include_str!("socket.md")]
pub type Socket = zmtp_async::Socket<Smol>;

#[doc = include_str!("context.md")]
pub type Context = zmtp_async::Context<Smol>;

/// Messages of a socket as a `Stream`, and a `Sink` of messages into it.
pub type MessageStream<'a> = zmtp_async::MessageStream<'a, Smol>;

/// One socket to [`poll`]: what to wait for, and (after the call) what is ready. The names
/// are `zmtp-mio`'s: a program moves between the drivers by an import (and `.await`).
pub type PollItem<'a> = zmtp_async::PollItem<'a, Smol>;
/// Waiting on several sockets at once, and the traits of [`MessageStream`] and [`Monitor`]
/// (so that naming them needs no `futures` dependency).
pub use zmtp_async::{poll, Sink, Stream, POLLIN, POLLOUT};
/// The proxy (`zmq_proxy`, `zmq_proxy_steerable`) and its counters.
pub use zmtp_async::{proxy, proxy_steerable, ProxyStats, Traffic};

#[cfg(test)]
mod tests {
    use zmtp_async::testing::pages;

    /// The method lists on the `Socket` and `Context` pages link every public method of
    /// the types they alias, and no other.
    #[test]
    fn pages_list_every_method() {
        pages::assert_page_lists(include_str!("socket.md"), &pages::socket_methods());
        pages::assert_page_lists(include_str!("context.md"), &pages::context_methods());
    }
}
