//! The byte streams a peer can run over: TCP, Unix sockets (the runtime's), TLS over TCP
//! (`wss://`, the driver-support crate's session over the runtime's stream) and in-process
//! pipes (this crate's, runtime-independent), behind one non-blocking interface
//! (`readable`/`try_read_buf`, `writable`/`try_write`).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{mpsc, Notify};
use zmtp_driver::tls::{RawIo, TlsSide, TlsStream};
use zmtp_driver::StdTransport;
use zmtp_proto::{Bytes, BytesMut};

use crate::core::{first, Either};
use crate::runtime::{ByteStream, Runtime};

/// A peer's transport: a connected TCP or Unix-domain stream (the runtime's) or an
/// in-process pipe pair.
#[derive(Debug)]
pub(crate) enum Transport<R: Runtime> {
    Tcp(R::Tcp),
    Unix(R::Unix),
    Tls(Box<TlsStream<RawTcp<R::Tcp>>>),
    Inproc(InprocStream),
}

/// A runtime's TCP stream as the raw stream under TLS.
#[derive(Debug)]
pub(crate) struct RawTcp<T>(T);

impl<T: ByteStream> RawIo for RawTcp<T> {
    fn read_raw(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }

    fn write_raw(&self, data: &[u8]) -> io::Result<usize> {
        self.0.try_write(data)
    }
}

impl<R: Runtime> Transport<R> {
    /// The stream with TLS on it if `tls` says so (a `wss://` endpoint's TCP stream).
    pub(crate) fn secure(self, tls: Option<&TlsSide>) -> io::Result<Transport<R>> {
        match (self, tls) {
            (Transport::Tcp(s), Some(side)) => Ok(Transport::Tls(Box::new(side.wrap(RawTcp(s))?))),
            (stream, _) => Ok(stream),
        }
    }

    /// The same connection as a `std` stream (a duplicated descriptor, non-blocking like
    /// this one), TLS session and all, for a socket that lingers on after its runtime
    /// ended; `None` for an in-process stream, which has no descriptor.
    pub(crate) fn to_std(&self) -> Option<io::Result<StdTransport>> {
        let tcp = |s: &R::Tcp| s.duplicate().map(std::net::TcpStream::from);
        Some(match self {
            Transport::Tcp(s) => tcp(s).map(StdTransport::Tcp),
            Transport::Unix(s) => s
                .duplicate()
                .map(|fd| StdTransport::Unix(std::os::unix::net::UnixStream::from(fd))),
            Transport::Tls(s) => tcp(&s.get_ref().0).and_then(|raw| {
                s.hand_over(raw)
                    .map(|tls| StdTransport::Tls(Box::new(tls)))
                    .ok_or_else(|| io::ErrorKind::NotConnected.into())
            }),
            Transport::Inproc(_) => return None,
        })
    }

    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            Transport::Tcp(s) => s.readable().await,
            Transport::Unix(s) => s.readable().await,
            Transport::Tls(s) => {
                if s.buffered_input() {
                    return Ok(());
                }
                let raw = &s.get_ref().0;
                if !s.pending_output() {
                    return raw.readable().await;
                }
                // Records wait to go out, which the peer may wait for before it sends: input,
                // or room for them, whichever comes first.
                match first(raw.readable(), raw.writable()).await {
                    Either::Left(r) => r,
                    Either::Right(r) => r.and_then(|()| s.flush().map(drop)),
                }
            }
            Transport::Inproc(s) => {
                s.rx.readable().await;
                Ok(())
            }
        }
    }

    /// The peer's address as text, `IP:port` for tcp; empty for ipc and inproc, whose
    /// peers have no address.
    pub(crate) fn peer_address(&self) -> String {
        match self {
            Transport::Tcp(s) => zmtp_driver::peer_address(s),
            Transport::Tls(s) => zmtp_driver::peer_address(&s.get_ref().0),
            Transport::Unix(_) | Transport::Inproc(_) => String::new(),
        }
    }

    pub(crate) async fn writable(&self) -> io::Result<()> {
        match self {
            Transport::Tcp(s) => s.writable().await,
            Transport::Unix(s) => s.writable().await,
            Transport::Tls(s) => s.get_ref().0.writable().await,
            Transport::Inproc(_) => Ok(()),
        }
    }

    /// TLS records wait for the stream to take them ([`flush`](Self::flush)).
    pub(crate) fn pending_output(&self) -> bool {
        match self {
            Transport::Tls(s) => s.pending_output(),
            _ => false,
        }
    }

    /// Write out waiting TLS records: `Ok(true)` when none is left.
    pub(crate) fn flush(&self) -> io::Result<bool> {
        match self {
            Transport::Tls(s) => s.flush(),
            _ => Ok(true),
        }
    }

    /// Read what is available into `buf` (its spare capacity); `Ok(0)` is end of stream.
    pub(crate) fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.try_read_buf(buf),
            Transport::Unix(s) => s.try_read_buf(buf),
            Transport::Tls(s) => {
                // Plaintext is copied out of the session: into zeroed room.
                if buf.capacity() == buf.len() {
                    buf.reserve(TLS_READ_ROOM);
                }
                let len = buf.len();
                buf.resize(buf.capacity(), 0);
                let read = s.read(buf.get_mut(len..).unwrap_or_default());
                buf.truncate(len + read.as_ref().map_or(0, |n| *n));
                read
            }
            Transport::Inproc(s) => s.rx.try_read_buf(buf),
        }
    }

    pub(crate) fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.try_write_vectored(bufs),
            Transport::Unix(s) => s.try_write_vectored(bufs),
            Transport::Tls(s) => s.write_vectored(bufs),
            Transport::Inproc(s) => s.tx.try_write_all(bufs),
        }
    }

    pub(crate) fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.try_write(data),
            Transport::Unix(s) => s.try_write(data),
            Transport::Tls(s) => s.write(data),
            Transport::Inproc(s) => s.tx.try_write(data),
        }
    }
}

/// Room made for a TLS read into a full buffer.
const TLS_READ_ROOM: usize = 16 * 1024;

/// One direction of an in-process stream: a queue of shared chunks, so that frame bodies
/// cross without being copied.
#[derive(Debug, Default)]
pub(crate) struct Pipe {
    chunks: Mutex<VecDeque<Bytes>>,
    closed: AtomicBool,
    notify: Notify,
}

impl Pipe {
    async fn readable(&self) {
        loop {
            let notified = self.notify.notified();
            if self.closed.load(Ordering::Acquire) || !self.lock().is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Bytes>> {
        // A poisoned pipe only means a panic elsewhere; its chunks are still consistent.
        self.chunks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next chunk; `Ok(None)` at the end of the stream.
    pub(crate) fn try_pop(&self) -> io::Result<Option<Bytes>> {
        if let Some(chunk) = self.lock().pop_front() {
            return Ok(Some(chunk));
        }
        if self.closed.load(Ordering::Acquire) {
            Ok(None)
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    /// Queue a chunk for the other end.
    pub(crate) fn push(&self, chunk: Bytes) -> io::Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.lock().push_back(chunk);
        self.notify.notify_one();
        Ok(())
    }

    fn try_read_buf(&self, dst: &mut BytesMut) -> io::Result<usize> {
        match self.try_pop()? {
            Some(chunk) => {
                dst.extend_from_slice(&chunk);
                Ok(chunk.len())
            }
            None => Ok(0),
        }
    }

    fn try_write_all(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut n = 0;
        for b in bufs {
            self.push(Bytes::copy_from_slice(b))?;
            n += b.len();
        }
        Ok(n)
    }

    fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        self.push(Bytes::copy_from_slice(data))?;
        Ok(data.len())
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

/// An in-process stream: two pipes, one per direction. Dropping either end closes both
/// directions, as closing a socket does.
#[derive(Debug)]
pub(crate) struct InprocStream {
    pub(crate) rx: Arc<Pipe>,
    pub(crate) tx: Arc<Pipe>,
}

impl InprocStream {
    pub(crate) fn pair() -> (InprocStream, InprocStream) {
        let (a, b) = (Arc::new(Pipe::default()), Arc::new(Pipe::default()));
        (
            InprocStream {
                rx: a.clone(),
                tx: b.clone(),
            },
            InprocStream { rx: b, tx: a },
        )
    }
}

impl Drop for InprocStream {
    fn drop(&mut self) {
        self.rx.close();
        self.tx.close();
    }
}

/// The process-wide table of bound `inproc://` names.
type Registry = Mutex<HashMap<String, mpsc::UnboundedSender<InprocStream>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// Bind `name`: connections arrive on the returned receiver. Fails if the name is taken.
pub(crate) fn inproc_bind(name: &str) -> io::Result<mpsc::UnboundedReceiver<InprocStream>> {
    let mut table = registry().lock().unwrap_or_else(|e| e.into_inner());
    if table.get(name).is_some_and(|tx| !tx.is_closed()) {
        return Err(io::ErrorKind::AddrInUse.into());
    }
    let (tx, rx) = mpsc::unbounded_channel();
    table.insert(name.to_string(), tx);
    Ok(rx)
}

/// Whether something is bound at `name`.
pub(crate) fn inproc_is_bound(name: &str) -> bool {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .is_some_and(|tx| !tx.is_closed())
}

/// Forget a bound name.
pub(crate) fn inproc_unbind(name: &str) {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(name);
}

/// Connect to a bound `name`; `ConnectionRefused` when nothing is bound (yet): the socket
/// retries at its reconnect interval, so connect-before-bind works.
pub(crate) fn inproc_connect(name: &str) -> io::Result<InprocStream> {
    let table = registry().lock().unwrap_or_else(|e| e.into_inner());
    let tx = table
        .get(name)
        .ok_or(io::Error::from(io::ErrorKind::ConnectionRefused))?;
    let (ours, theirs) = InprocStream::pair();
    tx.send(theirs)
        .map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
    Ok(ours)
}
