//! ZeroMQ for Rust: every libzmq socket type, wire-compatible with libzmq 4.3, on tokio,
//! smol or plain threads.
//!
//! This crate re-exports the drivers; its features pick which:
//!
//! | feature | module | crate |
//! |---|---|---|
//! | `tokio` | `zmtp::tokio` | `zmtp-tokio`: async sockets on tokio |
//! | `smol` | `zmtp::smol` | `zmtp-smol`: the same API on smol |
//! | `blocking` | `zmtp::blocking` | `zmtp-mio`: blocking, thread-safe sockets with their own I/O thread (epoll or io_uring) |
//! | `file` | `zmtp::file` | `zmtp-file`: file transfer over ROUTER/DEALER |
//! | (always) | [`proto`] | `zmtp-proto`: the sans-IO core, to drive a socket from your own event loop |
//!
//! # Features
//!
//! With `features = ["tokio"]` (and tokio's `rt` and `macros` for `#[tokio::main]`):
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # fn main() -> Result<(), zmtp::tokio::Error> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use zmtp::tokio::{Socket, SocketType};
//!
//! let rep = Socket::new(SocketType::Rep)?;
//! let endpoint = rep.bind("tcp://127.0.0.1:*").await?;
//! let req = Socket::new(SocketType::Req)?;
//! req.connect(&endpoint)?;
//! req.send("ping").await?;
//! let request = rep.recv().await?;
//! rep.send(request).await?;
//! assert_eq!(req.recv_string().await?, "ping");
//! # Ok(()) })
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```
//!
//! The modules are the driver crates themselves: `zmtp::tokio::Socket` is
//! `zmtp_tokio::Socket`, and their documentation is theirs.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

/// The sans-IO core (`zmtp-proto`): the codec, the connection and the socket layer, for
/// driving ZeroMQ sockets from an event loop of your own.
pub use zmtp_proto as proto;

/// Async sockets on tokio (`zmtp-tokio`).
#[cfg(feature = "tokio")]
pub use zmtp_tokio as tokio;

/// Async sockets on smol (`zmtp-smol`), with the same API as `zmtp::tokio`.
#[cfg(feature = "smol")]
pub use zmtp_smol as smol;

/// Blocking, thread-safe sockets with their own I/O thread (`zmtp-mio`).
#[cfg(feature = "blocking")]
pub use zmtp_mio as blocking;

/// File transfer over ROUTER/DEALER (`zmtp-file`).
#[cfg(feature = "file")]
pub use zmtp_file as file;
