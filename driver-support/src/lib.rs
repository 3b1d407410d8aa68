//! What every zmtp driver shares, written once.
//!
//! The sans-IO `zmtp-proto` core decides everything about the protocol; a driver moves
//! bytes, arms a timer and carries out the core's commands. The parts of that which do not
//! depend on how a driver waits (async runtime, `mio` reactor, a polling loop) live here:
//!
//! - [`Error`]: the error type of every driver's socket API;
//! - [`resolve`]: `tcp://` hosts to addresses; names are looked up by the driver, off its
//!   locks, and every address is tried in order ([`Attempts`]);
//! - [`transport`]: listen on and connect to `tcp://` and `ipc://` endpoints with `std`
//!   types, set up alike in every driver (stale socket files, `ipc://*`, abstract names,
//!   self-connects, `TCP_NODELAY`);
//! - [`proxy`]: the proxy's moves, counters and control commands ([`Proxy`]), which
//!   each driver runs over its own sockets and poll;
//! - [`tls`]: TLS for `wss://` ([`Tls`], the settings a socket is given, and
//!   [`TlsStream`], rustls over a non-blocking stream), so that every driver runs it alike;
//! - [`udp`]: open a `udp://` endpoint's UDP socket as libzmq does (multicast membership,
//!   loop and hops, shared ports);
//! - [`clock`]: the core's time, on one start for every driver of the process;
//! - [`peercred`]: who is at the other end of an accepted `ipc://` stream, for the
//!   core's `ZMQ_IPC_FILTER_*` check;
//! - [`loss`]: the line on standard error when a socket nobody waits for loses messages;
//! - [`entropy`]: a socket's seed and CURVE entropy from the operating system;
//! - [`commands`]: the command loop: [`run_commands`] drains a socket's monitor events and
//!   commands into the driver's [`CommandHandler`];
//! - [`zap`]: ZAP requests to a handler socket and the checks on its replies, as libzmq
//!   makes them (for the handler a program binds at `inproc://zeromq.zap.01`);
//! - [`setters`]: [`option_setters!`] writes a driver socket's `set_sndhwm`, `set_linger`,
//!   … (one per option) from the core's table of options.
//!
//! # Platforms
//! Unix only. Linux has everything; elsewhere `ipc://@name` (Linux abstract names) fails
//! with `Unsupported`.
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod clock;
pub mod commands;
pub mod entropy;
mod error;
pub mod loss;
pub mod peercred;
pub mod proxy;
pub mod ready;
pub mod resolve;
pub mod setters;
pub mod tls;
pub mod transport;
pub mod udp;
pub mod zap;

pub use commands::{run_commands, CommandHandler};
#[cfg(feature = "curve")]
pub use entropy::curve_keypair;
pub use entropy::{new_socket, Entropy};
pub use error::Error;
pub use loss::{report_loss, set_loss_reports, set_loss_reports_from_env};
pub use peercred::peer_credentials;
pub use proxy::{Proxy, ProxySocket, ProxyStats};
pub use resolve::{
    connect_from_blocking, listen_socket, lookup, resolve_blocking, source_addr, start_connect,
    Attempts, TcpAddrs, TcpTuning,
};
pub use tls::{Tls, TlsSide, TlsStream};
pub use transport::{
    listen_ipc, listen_on_fd, listen_tcp, peer_address, tcp_accepted, tcp_connected, Listening,
    SocketFile, StdListener, StdTransport, TcpSetup,
};
pub use udp::{drain_datagrams, open_udp, send_datagram, UdpOpen, UdpOpened};
#[doc(hidden)]
pub use zmtp_proto::__options_table;
