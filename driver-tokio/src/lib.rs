//! ZeroMQ sockets on tokio.
//!
//! A thin driver over the sans-IO [`zmtp_proto`] core: every protocol and pattern decision
//! (routing, high-water marks, reconnects, heartbeats, monitor events) is made there; the
//! runtime-agnostic [`zmtp_async`] moves bytes over `tcp://`, `ws://`, `ipc://` and
//! `inproc://` streams and arms timers, and this crate gives it tokio's tasks, timers and streams
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
//! `ws://` (ZWS 2.0, ZMTP over WebSocket, as libzmq's draft builds speak it) is a TCP
//! stream the core upgrades and frames; only the endpoint changes:
//!
//! ```
//! use zmtp_tokio::{Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pull = Socket::new(SocketType::Pull)?;
//! let endpoint = pull.bind("ws://127.0.0.1:*").await?;
//! assert!(endpoint.starts_with("ws://127.0.0.1:"));
//! let push = Socket::new(SocketType::Push)?;
//! push.connect(&endpoint)?;
//! push.send("over websocket").await?;
//! let msg = pull.recv().await?;
//! assert_eq!(&msg.frames()[0][..], b"over websocket");
//! # Ok(()) }
//! ```
//!
//! `wss://` is the same inside TLS: the binding socket presents a certificate and the
//! connecting one checks it, each given a [`Tls`] with
//! [`set_tls`](Socket#method.set_tls).
//!
//! [`Socket`]'s page lists its methods by group, with examples, and documents each
//! method with an example of its own; [`Context`]'s page does the same for contexts.
//!
//! # Options
//! Options are given when a socket is made
//! ([`Socket::with_options`](Socket#method.with_options), built one at a time with
//! `Options`' `with_*` methods), or changed one at a time on a live socket with its
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
//! [`Socket::recv`](Socket#method.recv) and [`Socket::send`](Socket#method.send) are
//! cancel-safe: a `recv` dropped before it completes has taken no message, and a `send`
//! dropped before it completes has queued nothing (a message is handed to the socket
//! whole, in one step, or not at all).
//!
//! # Batching
//! Sends append to the peer's output and are written at once when the stream has room;
//! whatever accumulates while it has none goes out in one write when it has. There is no
//! flush to call.
//!
//! # STREAM (raw TCP)
//! [`SocketType::Stream`] is libzmq's `ZMQ_STREAM`: plain TCP, no ZMTP. Each chunk read
//! from a connection arrives as `[routing id][data]`; `[routing id][data]` writes `data`
//! to that connection, and empty data closes it. `[routing id][empty]` announces a
//! connection coming up and going away (option `stream_notify`, on by default). The
//! routing ids are 5 bytes (`00` and a counter) unless `connect_routing_id` names the
//! next `connect`'s connection; an unknown one is refused with
//! [`SendError::HostUnreachable`]. As in libzmq, a `connect` names its connection at once
//! (the option `routing_id` then reads a generated id) and keeps the id across
//! reconnects: what is sent to it meanwhile waits for the connection.
//!
//! # Draft socket types
//! libzmq's draft types (built with its draft API there) are ordinary socket types here,
//! on every driver. All of them move single-frame messages only: a message of several
//! frames is refused by `send` ([`SendError::NotSupported`]) and dropped whole when a peer
//! sends one, as libzmq does. What libzmq keeps beside the frame, the routing id and the
//! group, is on the [`Message`] ([`Message::routing_id`], [`Message::group`]).
//!
//! ## CLIENT and SERVER
//! A CLIENT talks to SERVERs, load-balancing its messages over them and fair-queuing
//! what comes back, like a DEALER. A SERVER numbers each client (a `u32`, never 0) and
//! gives that number as the routing id of every message from it; a reply names its
//! client the same way. A SERVER refuses a message whose routing id is unknown
//! ([`SendError::HostUnreachable`]) or whose client is at its HWM
//! ([`SendError::WouldBlock`]).
//!
//! ```
//! use zmtp_tokio::{Message, Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let server = Socket::new(SocketType::Server)?;
//! let endpoint = server.bind("tcp://127.0.0.1:*").await?;
//! let client = Socket::new(SocketType::Client)?;
//! client.connect(&endpoint)?;
//!
//! client.send("2 + 2").await?;
//! let question = server.recv().await?;
//! let mut answer = Message::from("4");
//! answer.set_routing_id(question.routing_id().expect("a SERVER's messages have one"))?;
//! server.send(answer).await?;
//! assert_eq!(client.recv_string().await?, "4");
//! # Ok(()) }
//! ```
//!
//! ## RADIO and DISH
//! A DISH [`join`](Socket#method.join)s groups (up to 255 bytes, matched whole, not as
//! prefixes); a RADIO sends each message to the DISHes that joined its group
//! ([`Message::set_group`]) and drops it for the others and for a DISH at its HWM, as PUB
//! does. A DISH tells every RADIO its groups again whenever it reconnects. Received
//! messages carry their group.
//!
//! ```
//! use std::time::Duration;
//! use zmtp_tokio::{Message, Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let radio = Socket::new(SocketType::Radio)?;
//! let endpoint = radio.bind("tcp://127.0.0.1:*").await?;
//! let dish = Socket::new(SocketType::Dish)?;
//! dish.join("weather")?;
//! dish.connect(&endpoint)?;
//! // Until the DISH's join has arrived, the RADIO drops what it sends: keep sending.
//! let got = loop {
//!     for (group, text) in [("sport", "goal"), ("weather", "rain")] {
//!         let mut msg = Message::from(text);
//!         msg.set_group(group)?;
//!         radio.send(msg).await?;
//!     }
//!     if let Ok(got) = tokio::time::timeout(Duration::from_millis(10), dish.recv()).await {
//!         break got?;
//!     }
//! };
//! assert_eq!((got.group(), got.to_str()), (Some(&b"weather"[..]), Ok("rain")));
//! # Ok(()) }
//! ```
//!
//! ### Over `udp://`
//! As in libzmq, a DISH binds a `udp://` endpoint and a RADIO connects to it (for
//! multicast, `udp://[iface;]group:port` on both sides). No join goes on the wire: the
//! RADIO sends every message as one datagram, `[group length][group][body]`, and the DISH
//! keeps the groups it joined. Groups are at most 127 bytes and datagrams at most 8,192
//! (a longer send fails with [`SendError::Datagram`]); like any datagram, a message may
//! be lost.
//!
//! ```
//! use std::time::Duration;
//! use zmtp_tokio::{Message, Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let dish = Socket::new(SocketType::Dish)?;
//! dish.join("weather")?;
//! let endpoint = dish.bind("udp://127.0.0.1:*").await?; // the port chosen
//! let radio = Socket::new(SocketType::Radio)?;
//! radio.connect(&endpoint)?;
//! for (group, text) in [("sport", "goal"), ("weather", "rain")] {
//!     let mut msg = Message::from(text);
//!     msg.set_group(group)?;
//!     radio.send(msg).await?;
//! }
//! let got = tokio::time::timeout(Duration::from_secs(5), dish.recv()).await.unwrap()?;
//! assert_eq!((got.group(), got.to_str()), (Some(&b"weather"[..]), Ok("rain")));
//! # Ok(()) }
//! ```
//!
//! ## SCATTER and GATHER
//! PUSH and PULL for single frames: a SCATTER deals its messages round-robin to its
//! GATHERs, which fair-queue them.
//!
//! ```
//! use zmtp_tokio::{Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let gather = Socket::new(SocketType::Gather)?;
//! let endpoint = gather.bind("tcp://127.0.0.1:*").await?;
//! let scatter = Socket::new(SocketType::Scatter)?;
//! scatter.connect(&endpoint)?;
//! scatter.send("job 1").await?;
//! assert_eq!(gather.recv_string().await?, "job 1");
//! # Ok(()) }
//! ```
//!
//! ## PEER
//! A SERVER that also connects: [`connect_peer`](Socket#method.connect_peer) returns the
//! routing id of the peer it connects to, so a message can be addressed to it at once
//! (it waits for the connection). Each side numbers its peers itself: the two ends' ids
//! for one connection are unrelated.
//!
//! ```
//! use zmtp_tokio::{Message, Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let alice = Socket::new(SocketType::Peer)?;
//! let endpoint = alice.bind("tcp://127.0.0.1:*").await?;
//! let bob = Socket::new(SocketType::Peer)?;
//! let to_alice = bob.connect_peer(&endpoint)?;
//! let mut hello = Message::from("hello, alice");
//! hello.set_routing_id(to_alice)?;
//! bob.send(hello).await?;
//! let got = alice.recv().await?;
//! assert_eq!(got.to_str(), Ok("hello, alice"));
//! assert!(got.routing_id().is_some()); // alice's number for bob
//! # Ok(()) }
//! ```
//!
//! ## CHANNEL
//! PAIR for single frames: one peer at a time, both ways.
//!
//! ```
//! use zmtp_tokio::{Socket, SocketType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), zmtp_tokio::Error> {
//! let a = Socket::new(SocketType::Channel)?;
//! let endpoint = a.bind("tcp://127.0.0.1:*").await?;
//! let b = Socket::new(SocketType::Channel)?;
//! b.connect(&endpoint)?;
//! b.send("ping").await?;
//! assert_eq!(a.recv_string().await?, "ping");
//! a.send("pong").await?;
//! assert_eq!(b.recv_string().await?, "pong");
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod runtime;

pub use runtime::{
    Tokio, TokioTask, TokioTcp, TokioTcpListener, TokioUdp, TokioUnix, TokioUnixListener,
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
pub type Socket = zmtp_async::Socket<Tokio>;

#[doc = include_str!("context.md")]
pub type Context = zmtp_async::Context<Tokio>;

/// Messages of a socket as a `Stream`, and a `Sink` of messages into it.
pub type MessageStream<'a> = zmtp_async::MessageStream<'a, Tokio>;

/// One socket to [`poll`]: what to wait for, and (after the call) what is ready. The names
/// are `zmtp-mio`'s: a program moves between the drivers by an import (and `.await`).
pub type PollItem<'a> = zmtp_async::PollItem<'a, Tokio>;
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
