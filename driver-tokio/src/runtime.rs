//! The tokio [`Runtime`]: tasks on a runtime handle, tokio's timers and its non-blocking
//! streams.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use zmtp_async::runtime::{Acceptor, ByteStream, DatagramSocket, Runtime, Task, TcpSetup};
use zmtp_proto::BytesMut;

/// The tokio runtime a socket runs on: a handle to it, taken from the context the socket is
/// created in (or given to [`Socket::with_runtime`](zmtp_async::Socket::with_runtime)).
#[derive(Debug, Clone)]
pub struct Tokio {
    handle: tokio::runtime::Handle,
}

impl Tokio {
    /// The runtime behind `handle`.
    pub fn new(handle: tokio::runtime::Handle) -> Tokio {
        Tokio { handle }
    }

    /// The handle of the runtime.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

/// A task spawned on tokio.
#[derive(Debug)]
pub struct TokioTask(tokio::task::JoinHandle<()>);

impl Task for TokioTask {
    fn abort(self) {
        self.0.abort();
    }
}

/// A tokio TCP stream.
#[derive(Debug)]
pub struct TokioTcp(tokio::net::TcpStream);

/// A tokio Unix-domain stream.
#[derive(Debug)]
pub struct TokioUnix(tokio::net::UnixStream);

/// A tokio TCP listener.
#[derive(Debug)]
pub struct TokioTcpListener(tokio::net::TcpListener);

/// A tokio Unix-domain listener.
#[derive(Debug)]
pub struct TokioUnixListener(tokio::net::UnixListener);

/// A tokio UDP socket.
#[derive(Debug)]
pub struct TokioUdp(tokio::net::UdpSocket);

impl DatagramSocket for TokioUdp {
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send + '_ {
        self.0.readable()
    }

    fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.try_recv_from(buf)
    }

    // Not tokio's `try_send`: it refuses with `WouldBlock` until its reactor has seen the
    // new socket writable, which loses the first datagrams of a fresh socket.
    fn try_send(&self, datagram: &[u8]) -> io::Result<usize> {
        zmtp_driver::send_datagram(&self.0, datagram, None)
    }

    fn try_send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<usize> {
        zmtp_driver::send_datagram(&self.0, datagram, Some(to))
    }
}

/// Tokio's TCP and Unix streams have the same non-blocking methods, but no common trait.
macro_rules! byte_stream {
    ($t:ty) => {
        impl ByteStream for $t {
            fn readable(&self) -> impl Future<Output = io::Result<()>> + Send + '_ {
                self.0.readable()
            }

            fn writable(&self) -> impl Future<Output = io::Result<()>> + Send + '_ {
                self.0.writable()
            }

            #[inline]
            fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
                self.0.try_read_buf(buf)
            }

            #[inline]
            fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.try_read(buf)
            }

            #[inline]
            fn try_write(&self, data: &[u8]) -> io::Result<usize> {
                self.0.try_write(data)
            }

            #[inline]
            fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
                self.0.try_write_vectored(bufs)
            }

            fn duplicate(&self) -> io::Result<std::os::fd::OwnedFd> {
                std::os::fd::AsFd::as_fd(&self.0).try_clone_to_owned()
            }
        }
    };
}

byte_stream!(TokioTcp);
byte_stream!(TokioUnix);

impl TcpSetup for TokioTcp {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.peer_addr()
    }

    fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.0.set_nodelay(nodelay)
    }
}

impl Acceptor<TokioTcp> for TokioTcpListener {
    async fn accept(&self) -> io::Result<(TokioTcp, Option<SocketAddr>)> {
        self.0.accept().await.map(|(s, a)| (TokioTcp(s), Some(a)))
    }
}

impl Acceptor<TokioUnix> for TokioUnixListener {
    async fn accept(&self) -> io::Result<(TokioUnix, Option<SocketAddr>)> {
        self.0.accept().await.map(|(s, _)| (TokioUnix(s), None))
    }
}

impl Runtime for Tokio {
    type Task = TokioTask;
    type Tcp = TokioTcp;
    type Unix = TokioUnix;
    type TcpListener = TokioTcpListener;
    type UnixListener = TokioUnixListener;
    type Udp = TokioUdp;

    fn current() -> Option<Tokio> {
        tokio::runtime::Handle::try_current().ok().map(Tokio::new)
    }

    fn spawn<F>(&self, future: F) -> TokioTask
    where
        F: Future<Output = ()> + Send + 'static,
    {
        TokioTask(self.handle.spawn(future))
    }

    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        let _guard = self.handle.enter();
        tokio::time::sleep_until(deadline.into())
    }

    fn yield_now(&self) -> impl Future<Output = ()> + Send + 'static {
        tokio::task::yield_now()
    }

    // Not `async fn`: the future must not borrow the runtime.
    #[allow(clippy::manual_async_fn)]
    fn resolve(
        &self,
        host: String,
        port: u16,
    ) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static {
        async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        }
    }

    #[allow(clippy::manual_async_fn)]
    fn tcp_connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<TokioTcp>> + Send + 'static {
        async move { tokio::net::TcpStream::connect(addr).await.map(TokioTcp) }
    }

    #[allow(clippy::manual_async_fn)]
    fn tcp_connecting(
        &self,
        stream: std::net::TcpStream,
    ) -> impl Future<Output = io::Result<TokioTcp>> + Send + 'static {
        let registered = {
            let _guard = self.handle.enter();
            tokio::net::TcpStream::from_std(stream)
        };
        async move {
            let stream = registered?;
            // The connect ends (either way) when the stream turns writable.
            stream.writable().await?;
            match stream.take_error()? {
                Some(e) => Err(e),
                None => Ok(TokioTcp(stream)),
            }
        }
    }

    fn unix_connect(
        &self,
        path: &Path,
    ) -> impl Future<Output = io::Result<TokioUnix>> + Send + 'static {
        let path = path.to_path_buf();
        async move { tokio::net::UnixStream::connect(path).await.map(TokioUnix) }
    }

    fn unix_from_std(&self, stream: std::os::unix::net::UnixStream) -> io::Result<TokioUnix> {
        let _guard = self.handle.enter();
        tokio::net::UnixStream::from_std(stream).map(TokioUnix)
    }

    fn tcp_listener(&self, listener: std::net::TcpListener) -> io::Result<TokioTcpListener> {
        let _guard = self.handle.enter();
        tokio::net::TcpListener::from_std(listener).map(TokioTcpListener)
    }

    fn unix_listener(
        &self,
        listener: std::os::unix::net::UnixListener,
    ) -> io::Result<TokioUnixListener> {
        let _guard = self.handle.enter();
        tokio::net::UnixListener::from_std(listener).map(TokioUnixListener)
    }

    fn udp_socket(&self, socket: std::net::UdpSocket) -> io::Result<TokioUdp> {
        let _guard = self.handle.enter();
        tokio::net::UdpSocket::from_std(socket).map(TokioUdp)
    }
}
