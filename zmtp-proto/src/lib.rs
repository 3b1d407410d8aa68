//! Sans-IO ZeroMQ: the ZMTP 3.x wire protocol as a state machine.
//!
//! `zmtp-proto` turns bytes into frames and events and frames into bytes. It performs no
//! I/O, reads no clock and draws no randomness: time is an argument ([`Instant`]) and
//! buffers belong to the caller. Without default features it needs neither `std` nor an
//! allocator; the `alloc` feature adds [`Buffered`], an owning convenience layer over
//! [`bytes`](https://docs.rs/bytes) that adds no protocol logic.
//!
//! # Layers
//! - [`codec`]: stateless, zero-copy parse/emit of greetings, frame headers, commands and
//!   metadata. Incomplete input is [`codec::Status::Partial`], not an error.
//! - [`Connection`]: one byte stream from greeting to traffic: version negotiation (3.0 and
//!   3.1 peers, and 1.0 and 2.0 peers as libzmq 4.3 talks to them), the NULL handshake,
//!   socket-type compatibility, heartbeats and the handshake deadline.
//! - [`ws`]: ZWS 2.0 (ZMTP over WebSocket): the HTTP upgrade and the framing, stateless
//!   like the codec.
//!
//! # Driving a [`Connection`]
//! The driver owns the stream, a receive buffer, a send buffer and one timer. The contract:
//!
//! 1. Create the connection with [`Connection::new`] when the stream opens. Its first
//!    greeting stage is queued at once.
//! 2. After **every** input (bytes read, timer fired, message sent), do all of:
//!    - call [`Connection::handle_input`] on the unconsumed front of the receive buffer until
//!      it consumes nothing; drop `consumed` bytes after each call and hand each
//!      [`Item`] to the application (a message is complete at a frame without `more`).
//!      When it consumes nothing, `needed` bytes must be buffered before it can go on;
//!    - call [`Connection::poll_transmit`] to append pending control frames (greeting,
//!      READY, PONG, PING) to the send buffer;
//!    - drain [`Connection::poll_event`];
//!    - re-arm the single timer at [`Connection::poll_timeout`]; when it fires, call
//!      [`Connection::handle_timeout`].
//! 3. Send application frames with [`Connection::send_frame`] (or
//!    [`Connection::send_frame_header`] followed by the body for vectored writes) once
//!    [`Event::HandshakeSucceeded`] was seen. They append to the same send buffer, after
//!    any pending control frames, so ordering is always right.
//! 4. Whenever the stream is writable, write **everything** in the send buffer: batching
//!    is automatic, there is no flush.
//! 5. Any [`Error`] is fatal and sticky: close the stream. A clean end of stream from the
//!    peer is also the end of the connection.
//!
//! # Example: a complete blocking run loop
//! ```no_run
//! use std::io::{Read, Write};
//! use std::net::TcpStream;
//! use std::time::{Duration, Instant as StdInstant};
//! use zmtp_proto::{Config, Connection, Event, Instant, Item, SocketType};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let start = StdInstant::now();
//!     let now = || Instant::from_micros(start.elapsed().as_micros() as u64);
//!     let mut stream = TcpStream::connect("127.0.0.1:5555")?;
//!     let mut config = Config::new(SocketType::Dealer);
//!     config.heartbeat_interval = Some(Duration::from_secs(1));
//!     config.max_message_size = Some(60 * 1024);
//!     let mut conn = Connection::new(config, now());
//!
//!     let mut rx = vec![0u8; 64 * 1024];
//!     let (mut rx_len, mut tx) = (0usize, vec![0u8; 64 * 1024]);
//!     let mut sent_hello = false;
//!     loop {
//!         // Output: control frames, then our message once the handshake is done.
//!         let mut tx_len = conn.poll_transmit(&mut tx)?;
//!         while let Some(event) = conn.poll_event() {
//!             if let Event::HandshakeSucceeded { .. } = event {
//!                 if !sent_hello {
//!                     tx_len += conn.send_frame(b"", true, &mut tx[tx_len..])?;
//!                     tx_len += conn.send_frame(b"hello", false, &mut tx[tx_len..])?;
//!                     sent_hello = true;
//!                 }
//!             }
//!         }
//!         stream.write_all(&tx[..tx_len])?;
//!
//!         // Timer: wait for input at most until the next deadline.
//!         let wait = conn.poll_timeout().map(|t| t.saturating_duration_since(now()));
//!         stream.set_read_timeout(wait.map(|w| w.max(Duration::from_millis(1))))?;
//!         match stream.read(&mut rx[rx_len..]) {
//!             Ok(0) => return Ok(()), // peer closed
//!             Ok(n) => rx_len += n,
//!             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
//!                 || e.kind() == std::io::ErrorKind::TimedOut => {
//!                 conn.handle_timeout(now())?;
//!                 continue;
//!             }
//!             Err(e) => return Err(e.into()),
//!         }
//!
//!         // Input: every complete frame in the buffer.
//!         let mut at = 0;
//!         loop {
//!             let input = conn.handle_input(now(), &mut rx[at..rx_len])?;
//!             if let Some(Item::Frame { body, more }) = input.item {
//!                 println!("frame {:?} more={more}", body);
//!             }
//!             if input.consumed == 0 {
//!                 break;
//!             }
//!             at += input.consumed;
//!         }
//!         rx.copy_within(at..rx_len, 0);
//!         rx_len -= at;
//!     }
//! }
//! ```
#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
mod buffered;
pub mod codec;
mod config;
mod connection;
#[cfg(feature = "curve")]
pub mod curve_crypto;
mod error;
mod key;
pub mod mechanism;
#[cfg(feature = "alloc")]
pub mod socket;
mod socket_type;
pub mod socks;
mod time;
pub mod udp;
pub mod ws;
pub mod z85;

#[cfg(feature = "alloc")]
pub use buffered::{Buffered, OwnedItem, RxPool, SHARED_BODY_MIN};
/// The buffer types of the `alloc` layer, re-exported so users need not depend on `bytes`.
#[cfg(feature = "alloc")]
pub use bytes::{Bytes, BytesMut};
pub use config::{
    Config, ConfigError, Identity, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_COMMAND_SIZE,
    DEFAULT_MAX_MESSAGE_FRAMES, MAX_PROPERTIES_LEN,
};
pub use connection::{Connection, Event, Input, Item, MAX_FRAME_SIZE};
#[cfg(feature = "curve")]
pub use curve_crypto::{KeyPair, SecretKey};
pub use error::{EncodeError, Error, Reason, MAX_REASON_LEN};
pub use key::PublicKey;
pub use socket_type::SocketType;
pub use time::{Clock, Instant};
