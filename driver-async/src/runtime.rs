//! What a driver crate provides: an async runtime's tasks, timers and non-blocking streams.
//!
//! Everything else (the socket, its tasks, inproc, ZAP, monitors) is written once in this
//! crate, generic over [`Runtime`], and monomorphised per runtime: no call on a hot path goes
//! through a `dyn`.

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use zmtp_proto::BytesMut;

/// What a connect or an accept needs of a TCP stream (addresses, `TCP_NODELAY`): a
/// runtime's [`Runtime::Tcp`] implements it, next to [`ByteStream`].
pub use zmtp_driver::TcpSetup;

/// A connected byte stream (TCP or Unix-domain) in non-blocking mode, with readiness
/// futures: the shape of tokio's `TcpStream` and async-io's `Async<TcpStream>`.
pub trait ByteStream: Send + Sync + Debug + 'static {
    /// Wait until the stream may be readable (spurious wake-ups are allowed: the following
    /// `try_read_buf` then fails with `WouldBlock`).
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send + '_;
    /// Wait until the stream may be writable.
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send + '_;
    /// Read what is available into the spare capacity of `buf` (growing its length), without
    /// blocking: `Ok(0)` is the end of the stream, `WouldBlock` means nothing is there yet.
    fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize>;
    /// [`try_read_buf`](Self::try_read_buf) into a slice (what TLS reads its records with).
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Write what the stream takes now, without blocking (`WouldBlock` if nothing).
    fn try_write(&self, data: &[u8]) -> io::Result<usize>;
    /// [`try_write`](Self::try_write) gathering several buffers.
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize>;
    /// A new descriptor of the same connection (`dup`), which outlives the runtime: a
    /// socket whose runtime ends while it lingers goes on writing through it (see
    /// [`Context`](crate::Context)).
    fn duplicate(&self) -> io::Result<std::os::fd::OwnedFd>;
}

/// A UDP socket in non-blocking mode (bound, and connected for a RADIO), with a readiness
/// future: the shape of tokio's `UdpSocket` and async-io's `Async<UdpSocket>`.
pub trait DatagramSocket: Send + Sync + Debug + 'static {
    /// Wait until a datagram may be there (spurious wake-ups are allowed: the following
    /// `try_recv_from` then fails with `WouldBlock`).
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send + '_;
    /// Receive one datagram into `buf` without blocking (`WouldBlock` if none); what does
    /// not fit `buf` is cut off.
    fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
    /// Send one datagram to the connected address without blocking.
    fn try_send(&self, datagram: &[u8]) -> io::Result<usize>;
    /// Send one datagram to `to` without blocking.
    fn try_send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<usize>;
}

/// A listening socket.
pub trait Acceptor<S>: Send + Sync + Debug + 'static {
    /// The next incoming connection, and the peer's address where the accept gave one
    /// (TCP; `None` for Unix-domain streams), so that no further system call asks for it.
    fn accept(&self) -> impl Future<Output = io::Result<(S, Option<SocketAddr>)>> + Send + '_;
}

/// A spawned task. Dropping the handle detaches the task; [`abort`](Self::abort) cancels
/// it (at its next suspension point when it is running, possibly on another thread).
pub trait Task: Send + Debug + 'static {
    /// Cancel the task.
    fn abort(self);
}

/// An async runtime, as the socket needs it. Cloning is cheap (a handle).
pub trait Runtime: Clone + Send + Sync + Debug + 'static {
    /// A spawned task's handle.
    type Task: Task;
    /// A TCP stream.
    type Tcp: ByteStream + TcpSetup;
    /// A Unix-domain stream.
    type Unix: ByteStream;
    /// A TCP listener.
    type TcpListener: Acceptor<Self::Tcp>;
    /// A Unix-domain listener.
    type UnixListener: Acceptor<Self::Unix>;
    /// A UDP socket.
    type Udp: DatagramSocket;

    /// The runtime the calling code runs in, if any (sockets are made with it).
    fn current() -> Option<Self>;
    /// Spawn a task.
    fn spawn<F>(&self, future: F) -> Self::Task
    where
        F: Future<Output = ()> + Send + 'static;
    /// Complete at `deadline` (at once if it passed).
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static;
    /// Let other tasks run, then complete.
    fn yield_now(&self) -> impl Future<Output = ()> + Send + 'static;
    /// Resolve a host name (without blocking the runtime's threads).
    fn resolve(
        &self,
        host: String,
        port: u16,
    ) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static;
    /// Open a TCP connection to `addr`.
    fn tcp_connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<Self::Tcp>> + Send + 'static;
    /// Finish a TCP connect started without blocking on `stream` (bound to a source address
    /// first: `tcp://source;destination`): the stream once it is connected.
    fn tcp_connecting(
        &self,
        stream: std::net::TcpStream,
    ) -> impl Future<Output = io::Result<Self::Tcp>> + Send + 'static;
    /// Open a Unix-domain connection to the socket file at `path`.
    fn unix_connect(
        &self,
        path: &Path,
    ) -> impl Future<Output = io::Result<Self::Unix>> + Send + 'static;
    /// Register a connected (non-blocking) Unix-domain stream with the runtime.
    fn unix_from_std(&self, stream: std::os::unix::net::UnixStream) -> io::Result<Self::Unix>;
    /// Register a bound (non-blocking) TCP listener with the runtime.
    fn tcp_listener(&self, listener: std::net::TcpListener) -> io::Result<Self::TcpListener>;
    /// Register a bound (non-blocking) Unix-domain listener with the runtime.
    fn unix_listener(
        &self,
        listener: std::os::unix::net::UnixListener,
    ) -> io::Result<Self::UnixListener>;
    /// Register a bound (non-blocking) UDP socket with the runtime.
    fn udp_socket(&self, socket: std::net::UdpSocket) -> io::Result<Self::Udp>;
}

/// `future`'s output, or `None` if `limit` passes first (on `runtime`'s timers).
pub async fn timeout<R: Runtime, F: Future>(
    runtime: &R,
    limit: std::time::Duration,
    future: F,
) -> Option<F::Output> {
    match crate::core::first(future, runtime.sleep_until(Instant::now() + limit)).await {
        crate::core::Either::Left(out) => Some(out),
        crate::core::Either::Right(()) => None,
    }
}
