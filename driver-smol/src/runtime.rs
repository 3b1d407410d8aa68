//! The smol [`Runtime`]: tasks on an `async-executor` (smol's global one, or the one
//! [`block_on`](crate::block_on) runs), async-io's timers and its `Async` streams.

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Instant;

use smol::{Async, Executor};
use zmtp_async::runtime::{Acceptor, ByteStream, DatagramSocket, Runtime, Task, TcpSetup};
use zmtp_proto::BytesMut;

/// The executor a socket's tasks run on; I/O and timers are async-io's (one reactor per
/// process), whichever executor polls the tasks.
#[derive(Debug, Clone, Default)]
pub struct Smol {
    /// `None`: smol's global executor (`smol::spawn`), which runs on its own thread(s).
    ///
    /// Weak: the executor holds the socket's tasks, which hold the socket; a strong
    /// reference would keep an executor nobody runs (and its sockets, bound endpoints
    /// included) alive forever. Dropping the executor drops its tasks, and so the sockets
    /// they own. Tasks spawned once it is gone go to the global executor.
    executor: Option<Weak<Executor<'static>>>,
}

impl Smol {
    /// smol's global executor (`smol::spawn`; `SMOL_THREADS` threads, one by default).
    pub fn global() -> Smol {
        Smol { executor: None }
    }

    /// Tasks on `executor`, which the application runs (e.g.
    /// `smol::block_on(executor.run(future))`): the socket makes progress only while it does.
    /// The socket holds the executor weakly: keep it while the socket is in use.
    pub fn with_executor(executor: &Arc<Executor<'static>>) -> Smol {
        Smol {
            executor: Some(Arc::downgrade(executor)),
        }
    }
}

thread_local! {
    /// The executor [`block_on`] runs on this thread.
    static CURRENT: RefCell<Option<Arc<Executor<'static>>>> = const { RefCell::new(None) };
}

/// Run `future` to completion on this thread, together with the tasks of every socket
/// created inside it: a single-threaded runtime, like tokio's current-thread one. Sockets
/// created outside any `block_on` run on smol's global executor instead.
///
/// Sockets made inside run only while a `block_on` runs their executor: close or drop
/// them before it returns. When it returns, the tasks still on its executor are dropped
/// (with the sockets they own); a socket still held elsewhere then starts new tasks on
/// smol's global executor.
pub fn block_on<T>(future: impl Future<Output = T>) -> T {
    struct Restore(Option<Arc<Executor<'static>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let executor = Arc::new(Executor::new());
    let previous = CURRENT.with(|c| c.borrow_mut().replace(executor.clone()));
    let _restore = Restore(previous);
    smol::block_on(executor.run(future))
}

/// A task spawned on smol. Dropping the handle detaches the task (smol's own `Task` would
/// cancel it); [`Task::abort`] cancels it.
#[derive(Debug)]
pub struct SmolTask(Option<smol::Task<()>>);

impl Task for SmolTask {
    fn abort(mut self) {
        // Dropping smol's handle cancels the task.
        drop(self.0.take());
    }
}

impl Drop for SmolTask {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.detach();
        }
    }
}

/// A non-blocking stream registered with async-io: TCP ([`SmolTcp`]) or Unix ([`SmolUnix`]).
#[derive(Debug)]
pub struct SmolStream<T>(Async<T>);

/// A TCP stream on async-io.
pub type SmolTcp = SmolStream<TcpStream>;
/// A Unix-domain stream on async-io.
pub type SmolUnix = SmolStream<UnixStream>;

/// A listener registered with async-io: TCP ([`SmolTcpListener`]) or Unix
/// ([`SmolUnixListener`]).
#[derive(Debug)]
pub struct SmolListener<T>(Async<T>);

/// A TCP listener on async-io.
pub type SmolTcpListener = SmolListener<TcpListener>;
/// A Unix-domain listener on async-io.
pub type SmolUnixListener = SmolListener<UnixListener>;

/// A UDP socket registered with async-io.
#[derive(Debug)]
pub struct SmolUdp(Async<UdpSocket>);

impl DatagramSocket for SmolUdp {
    async fn readable(&self) -> io::Result<()> {
        self.0.readable().await
    }

    fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.get_ref().recv_from(buf)
    }

    fn try_send(&self, datagram: &[u8]) -> io::Result<usize> {
        self.0.get_ref().send(datagram)
    }

    fn try_send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.0.get_ref().send_to(datagram, to)
    }
}

/// Read from `fd` into the spare capacity of `buf` without initialising it first.
pub(crate) fn read_into_spare(fd: impl std::os::fd::AsFd, buf: &mut BytesMut) -> io::Result<usize> {
    let len = buf.len();
    let (filled, _) = rustix::io::read(fd, buf.spare_capacity_mut())?;
    let n = filled.len();
    // SAFETY: `rustix::io::read` returns the prefix of the spare capacity it wrote, so the
    // `n` bytes after `len` are initialised (and `n` is at most the spare capacity).
    unsafe { buf.set_len(len + n) };
    Ok(n)
}

impl<T> ByteStream for SmolStream<T>
where
    T: std::os::fd::AsFd + Send + Sync + std::fmt::Debug + 'static,
    for<'a> &'a T: io::Write,
{
    async fn readable(&self) -> io::Result<()> {
        self.0.readable().await
    }

    async fn writable(&self) -> io::Result<()> {
        self.0.writable().await
    }

    #[inline]
    fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        // The descriptor is non-blocking (async-io set it): `WouldBlock` when empty.
        read_into_spare(self.0.get_ref(), buf)
    }

    #[inline]
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(rustix::io::read(self.0.get_ref(), buf)?)
    }

    #[inline]
    fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        self.0.get_ref().write(data)
    }

    fn duplicate(&self) -> io::Result<std::os::fd::OwnedFd> {
        std::os::fd::AsFd::as_fd(self.0.get_ref()).try_clone_to_owned()
    }

    #[inline]
    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.get_ref().write_vectored(bufs)
    }
}

impl TcpSetup for SmolTcp {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.get_ref().local_addr()
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.get_ref().peer_addr()
    }

    fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.0.get_ref().set_nodelay(nodelay)
    }
}

impl Acceptor<SmolTcp> for SmolTcpListener {
    async fn accept(&self) -> io::Result<(SmolTcp, Option<SocketAddr>)> {
        self.0.accept().await.map(|(s, a)| (SmolStream(s), Some(a)))
    }
}

impl Acceptor<SmolUnix> for SmolUnixListener {
    async fn accept(&self) -> io::Result<(SmolUnix, Option<SocketAddr>)> {
        self.0.accept().await.map(|(s, _)| (SmolStream(s), None))
    }
}

impl Runtime for Smol {
    type Task = SmolTask;
    type Tcp = SmolTcp;
    type Unix = SmolUnix;
    type TcpListener = SmolTcpListener;
    type UnixListener = SmolUnixListener;
    type Udp = SmolUdp;

    /// The executor of the enclosing [`block_on`], else smol's global one: never `None`.
    fn current() -> Option<Smol> {
        Some(Smol {
            executor: CURRENT.with(|c| c.borrow().as_ref().map(Arc::downgrade)),
        })
    }

    fn spawn<F>(&self, future: F) -> SmolTask
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let executor = self.executor.as_ref().and_then(Weak::upgrade);
        SmolTask(Some(match executor {
            Some(executor) => executor.spawn(future),
            None => smol::spawn(future),
        }))
    }

    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        let timer = smol::Timer::at(deadline);
        async move {
            timer.await;
        }
    }

    fn yield_now(&self) -> impl Future<Output = ()> + Send + 'static {
        smol::future::yield_now()
    }

    fn resolve(
        &self,
        host: String,
        port: u16,
    ) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static {
        // The system resolver blocks: on smol's thread pool.
        smol::unblock(move || zmtp_driver::lookup(&host, port))
    }

    // Not `async fn`: the future must not borrow the runtime.
    #[allow(clippy::manual_async_fn)]
    fn tcp_connect(
        &self,
        addr: SocketAddr,
    ) -> impl Future<Output = io::Result<SmolTcp>> + Send + 'static {
        async move { Async::<TcpStream>::connect(addr).await.map(SmolStream) }
    }

    #[allow(clippy::manual_async_fn)]
    fn tcp_connecting(
        &self,
        stream: TcpStream,
    ) -> impl Future<Output = io::Result<SmolTcp>> + Send + 'static {
        async move {
            let stream = Async::new(stream)?;
            // The connect ends (either way) when the stream turns writable.
            stream.writable().await?;
            match stream.get_ref().take_error()? {
                Some(e) => Err(e),
                None => Ok(SmolStream(stream)),
            }
        }
    }

    fn unix_connect(
        &self,
        path: &Path,
    ) -> impl Future<Output = io::Result<SmolUnix>> + Send + 'static {
        let path = path.to_path_buf();
        async move { Async::<UnixStream>::connect(path).await.map(SmolStream) }
    }

    fn unix_from_std(&self, stream: UnixStream) -> io::Result<SmolUnix> {
        Async::new(stream).map(SmolStream)
    }

    fn tcp_listener(&self, listener: TcpListener) -> io::Result<SmolTcpListener> {
        Async::new(listener).map(SmolListener)
    }

    fn unix_listener(&self, listener: UnixListener) -> io::Result<SmolUnixListener> {
        Async::new(listener).map(SmolListener)
    }

    fn udp_socket(&self, socket: UdpSocket) -> io::Result<SmolUdp> {
        Async::new(socket).map(SmolUdp)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::os::unix::net::UnixStream;

    use zmtp_proto::BytesMut;

    use super::read_into_spare;

    /// The unsafe `set_len` in `read_into_spare` only claims what the read wrote.
    #[test]
    fn read_into_spare_capacity_claims_exactly_what_was_read() {
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut buf = BytesMut::with_capacity(8);
        buf.extend_from_slice(b"ab");
        // Nothing yet: WouldBlock, the buffer unchanged.
        let e = read_into_spare(&b, &mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        assert_eq!(&buf[..], b"ab");
        // More than the spare room: only what fits is read and claimed.
        a.write_all(b"0123456789").unwrap();
        let n = read_into_spare(&b, &mut buf).unwrap();
        assert_eq!(n, buf.capacity() - 2);
        assert_eq!(&buf[..], &b"ab0123456789"[..2 + n]);
        // The rest on the next read, after making room.
        buf.reserve(64);
        let m = read_into_spare(&b, &mut buf).unwrap();
        assert_eq!(n + m, 10);
        assert_eq!(&buf[..], b"ab0123456789");
        // End of stream: 0, nothing claimed.
        drop(a);
        assert_eq!(read_into_spare(&b, &mut buf).unwrap(), 0);
        assert_eq!(buf.len(), 12);
    }
}
