//! The driver-agnostic facade the conformance matrix drives.
//!
//! Every driver of [`zmtp_proto::socket::Socket`] (the polling test driver here, an async
//! runtime driver, ...) plugs into the [matrix](crate::matrix) by implementing two small
//! blocking traits:
//!
//! - [`OurSocket`]: one socket with bind/connect/send/recv/subscribe and a way to let it
//!   make progress ([`OurSocket::pump`]);
//! - [`OurDriver`]: how to make such a socket, the driver's name, and which transports it
//!   offers between two of its own sockets.
//!
//! The matrix never assumes *when* a driver does its I/O. A polling driver only moves bytes
//! inside these calls; a driver with background tasks moves them all the time. The matrix
//! therefore calls [`OurSocket::pump`] (or `recv` with a short timeout) on every one of our
//! sockets whenever it waits for anything, including a libzmq socket, and it never relies
//! on our side *not* making progress between calls.

use std::time::Duration;

use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::SocketType;

/// A transport an endpoint of the matrix uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// `tcp://127.0.0.1:*` (the port chosen by the binder).
    Tcp,
    /// `ipc://` with a socket file in the temporary directory.
    Ipc,
    /// `ipc://@name`: a Linux abstract socket name.
    IpcAbstract,
    /// `inproc://name`: between two of our sockets only (libzmq's inproc is local to its
    /// own context).
    Inproc,
    /// `ws://127.0.0.1:*` (ZWS 2.0; libzmq has it in draft builds only).
    Ws,
    /// `wss://127.0.0.1:*`: ZWS 2.0 over TLS, between our sockets only (libzmq's needs
    /// GnuTLS), each with [`matrix_tls`].
    Wss,
}

/// The TLS settings of every socket of ours in the matrix: the test server certificate
/// (for `127.0.0.1`), and its CA as the only root.
pub fn matrix_tls() -> zmtp_driver::Tls {
    use zmtp_testkit::tls::{CA, SERVER_CERT, SERVER_KEY};
    zmtp_driver::Tls::new()
        .with_identity_pem(SERVER_CERT, SERVER_KEY)
        .and_then(|t| t.with_roots_pem(CA))
        .expect("the test certificates load")
}

impl Transport {
    /// A fresh endpoint to bind on this transport (`tcp://127.0.0.1:*`, or a name unique in
    /// this process and test run).
    pub fn fresh_endpoint(self) -> String {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT_NAME: AtomicU64 = AtomicU64::new(0);
        let n = NEXT_NAME.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        match self {
            Transport::Tcp => "tcp://127.0.0.1:*".to_string(),
            Transport::Ipc => {
                let path = std::env::temp_dir().join(format!("zmtp-matrix-{pid}-{n}.sock"));
                format!("ipc://{}", path.display())
            }
            Transport::IpcAbstract => format!("ipc://@zmtp-matrix-{pid}-{n}"),
            Transport::Inproc => format!("inproc://zmtp-matrix-{n}"),
            Transport::Ws => "ws://127.0.0.1:*".to_string(),
            Transport::Wss => "wss://127.0.0.1:*".to_string(),
        }
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::IpcAbstract => "ipc@",
            Transport::Inproc => "inproc",
            Transport::Ws => "ws",
            Transport::Wss => "wss",
        }
    }
}

/// One of our sockets, behind a blocking API.
///
/// Every call may do I/O for this socket (a polling driver does it only inside these
/// calls). A timeout of zero means "do not wait": try once, after making whatever progress
/// is possible without blocking.
///
/// Dropping the socket closes its streams and listeners without lingering, so that another
/// socket can bind the same endpoint soon after (the matrix retries such a bind for a few
/// seconds, so a driver that releases the endpoint asynchronously is fine).
pub trait OurSocket {
    /// Bind to `endpoint` (`tcp://127.0.0.1:*`, `ipc:///path`, `ipc://@name`,
    /// `inproc://name`) and wait until listening. Returns the resolved endpoint: for tcp the
    /// address with the chosen port, for ipc and inproc the text given. An error (e.g.
    /// the address is in use) is returned as text.
    fn bind(&mut self, endpoint: &str) -> Result<String, String>;

    /// Start connecting to `endpoint`; returns without waiting for the connection.
    /// Reconnecting after a lost connection is the socket's business (per its
    /// [`Options::reconnect_ivl`]).
    fn connect(&mut self, endpoint: &str) -> Result<(), String>;

    /// Send `msg` per the socket's pattern, waiting at most `timeout` while the socket would
    /// block (no peer, HWM). The core's [`SendError`] is returned as is: after the timeout,
    /// [`SendError::WouldBlock`] with the message; a REQ sending twice,
    /// [`SendError::InvalidState`]. A message the pattern drops (PUB without subscriber,
    /// ROUTER to an unknown id) is `Ok`.
    fn send(&mut self, msg: Message, timeout: Duration) -> Result<(), SendError>;

    /// Receive one message (all its frames), waiting at most `timeout`. ROUTER messages
    /// start with the peer's routing id, XPUB yields subscriptions as `[0x01|0x00, topic]`.
    fn recv(&mut self, timeout: Duration) -> Option<Message>;

    /// `ZMQ_SUBSCRIBE` on a SUB socket. (The matrix subscribes an XSUB by sending
    /// `[0x01, topic]`.)
    fn subscribe(&mut self, topic: &[u8]);

    /// DISH: join `group`.
    fn join(&mut self, group: &[u8]);

    /// DISH: leave `group`.
    fn leave(&mut self, group: &[u8]);

    /// PEER: start connecting to `endpoint`; returns the routing id of the peer there.
    fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String>;

    /// Let the socket make progress for `duration`; with zero, one round that does not
    /// block. A driver whose I/O runs on background tasks may just sleep (or return at
    /// once for zero).
    fn pump(&mut self, duration: Duration);
}

/// A driver: makes [`OurSocket`]s.
///
/// To join the matrix, implement this and [`OurSocket`] for the driver (a driver that
/// needs a runtime keeps one itself, e.g. one per process, and blocks on it inside the
/// socket calls) and add `matrix::run::<TheDriver>(..)` to `tests/matrix.rs`, with
/// `matrix::run_cross::<TheDriver, Other>(..)` for its pairs with the other drivers.
pub trait OurDriver {
    /// The socket type of this driver.
    type Socket: OurSocket + 'static;

    /// The driver's name in reports, e.g. `"poll"`.
    fn name() -> &'static str;

    /// A new socket of type `ty` with `opts` (the matrix sets `linger` to zero and a short
    /// `reconnect_ivl`; ROUTER sockets may carry `routing_id` and `connect_routing_id`).
    fn socket(ty: SocketType, opts: Options) -> Self::Socket;

    /// Transports used between two of our own sockets (ours-to-ours scenarios). Against
    /// libzmq the matrix always uses tcp, ipc (file) and ipc (abstract name).
    fn own_transports() -> &'static [Transport] {
        &[Transport::Tcp]
    }

    /// Which `inproc://` names this driver's sockets reach: two drivers meet over inproc
    /// only when they share them (the async drivers' names are the process's; the mio
    /// driver's are its context's).
    fn inproc_names() -> &'static str {
        "process"
    }
}

/// The polling test driver ([`SocketDriver`](crate::socket_driver::SocketDriver)).
#[derive(Debug, Clone, Copy, Default)]
pub struct PollDriver;

impl OurDriver for PollDriver {
    type Socket = crate::socket_driver::SocketDriver;

    fn name() -> &'static str {
        "poll"
    }

    fn socket(ty: SocketType, opts: Options) -> Self::Socket {
        crate::socket_driver::SocketDriver::new(ty, opts)
    }

    fn own_transports() -> &'static [Transport] {
        &[Transport::Tcp, Transport::Ipc, Transport::Ws]
    }
}
