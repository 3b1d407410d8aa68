//! TCP and IPC streams and listeners on `std` types, set up the way every driver sets them
//! up; each driver then registers them with its runtime or reactor.
//!
//! - Listening ([`listen_tcp`], [`listen_ipc`]): bound, non-blocking, with the resolved
//!   endpoint text (the port chosen for `tcp://…:*`, the path chosen for `ipc://*`). A
//!   socket file left by an earlier process is removed before binding, and the file bound
//!   is removed again when its [`SocketFile`] is dropped (unbind, close).
//! - Connected TCP streams: a stream that connected to itself is refused and every TCP
//!   stream has `TCP_NODELAY` ([`tcp_connected`], [`tcp_accepted`], through [`TcpSetup`],
//!   which a runtime's stream type implements too).
//! - `ipc://@name`: Linux abstract names ([`abstract_addr`]); on other systems they fail
//!   with `Unsupported`.

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{self as unix, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use zmtp_proto::socket::endpoint::IpcEndpoint;
use zmtp_proto::socket::Endpoint;

use crate::resolve::{resolve_blocking, Attempts};
use crate::tls::{TlsSide, TlsStream};

/// What connection setup needs of a TCP stream: its addresses and `TCP_NODELAY`.
/// Implemented for `std`'s stream here, and by each runtime's TCP stream type.
pub trait TcpSetup {
    /// The local address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
    /// The peer's address.
    fn peer_addr(&self) -> io::Result<SocketAddr>;
    /// Set `TCP_NODELAY`.
    fn set_nodelay(&self, nodelay: bool) -> io::Result<()>;
}

impl TcpSetup for TcpStream {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        TcpStream::local_addr(self)
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        TcpStream::peer_addr(self)
    }

    fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        TcpStream::set_nodelay(self, nodelay)
    }
}

/// A TCP stream a connect gave: refused (`ConnectionRefused`) when it met itself, which
/// connecting to a free local port in the ephemeral range can do (TCP simultaneous open:
/// no peer), or when it has no peer address; otherwise `TCP_NODELAY` is set.
pub fn tcp_connected(stream: &impl TcpSetup) -> io::Result<()> {
    let peer = stream.peer_addr()?;
    if stream.local_addr()? == peer {
        return Err(io::ErrorKind::ConnectionRefused.into());
    }
    stream.set_nodelay(true)
}

/// The peer's address as text, `IP:port` (`127.0.0.1:53412`, `[::1]:5555`), as
/// `handle_accepted`/`handle_connected` take it; empty if the stream has none.
pub fn peer_address(stream: &impl TcpSetup) -> String {
    stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default()
}

/// A TCP stream a listener accepted: `TCP_NODELAY` is set.
pub fn tcp_accepted(stream: &impl TcpSetup) -> io::Result<()> {
    stream.set_nodelay(true)
}

/// The socket address of the Linux abstract name `name` (`ipc://@name`).
#[cfg(target_os = "linux")]
pub fn abstract_addr(name: &str) -> io::Result<unix::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    unix::SocketAddr::from_abstract_name(name.as_bytes())
}

/// Abstract names (`ipc://@name`) exist on Linux only: `Unsupported` here.
#[cfg(not(target_os = "linux"))]
pub fn abstract_addr(name: &str) -> io::Result<unix::SocketAddr> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("ipc://@{name}: abstract socket names exist on Linux only"),
    ))
}

/// A bound socket file, removed when this is dropped (if it is still a socket).
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl SocketFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        remove_stale_socket(&self.0);
    }
}

/// Remove a socket file left behind by an earlier listener (only a socket, never another
/// kind of file).
fn remove_stale_socket(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

/// A fresh socket file name for `ipc://*`, in the temporary directory.
fn wildcard_ipc_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("zmtp-ipc-{}-{n}", std::process::id()))
}

/// A listening socket in non-blocking mode.
#[derive(Debug)]
pub enum StdListener {
    /// `tcp://`.
    Tcp(TcpListener),
    /// `ipc://`.
    Unix(UnixListener),
}

impl StdListener {
    /// Accept a connection (`WouldBlock` when none is waiting): non-blocking, with
    /// `TCP_NODELAY` for TCP. Also returns the peer's address as
    /// [`peer_address`] gives it (empty for `ipc://`), from the accept itself.
    ///
    /// On Linux the stream is accepted non-blocking in the one call (`accept4` with
    /// `SOCK_NONBLOCK`), and the address is the one `accept4` wrote: a connection costs
    /// two system calls here (with `TCP_NODELAY`), not four.
    pub fn accept(&self) -> io::Result<(StdTransport, String)> {
        let (fd, addr) = match self {
            StdListener::Tcp(l) => accept_nonblocking(l)?,
            StdListener::Unix(l) => accept_nonblocking(l)?,
        };
        let address = addr.map(|a| a.to_string()).unwrap_or_default();
        Ok((self.accepted(fd), address))
    }

    /// A connection accepted on this listener, non-blocking (by [`accept`](Self::accept),
    /// or by an io_uring's accept), set up as a stream of its kind: `TCP_NODELAY` for TCP.
    pub fn accepted(&self, fd: OwnedFd) -> StdTransport {
        match self {
            StdListener::Tcp(_) => {
                let s = TcpStream::from(fd);
                let _ = tcp_accepted(&s);
                StdTransport::Tcp(s)
            }
            StdListener::Unix(_) => StdTransport::Unix(UnixStream::from(fd)),
        }
    }
}

/// What [`accept_nonblocking`] accepts from: `std`'s TCP and Unix-domain listeners.
trait Accept: AsFd {
    /// `std`'s accept, for systems without `accept4`.
    #[cfg(not(target_os = "linux"))]
    fn accept_std(&self) -> io::Result<OwnedFd>;
}

impl Accept for TcpListener {
    #[cfg(not(target_os = "linux"))]
    fn accept_std(&self) -> io::Result<OwnedFd> {
        self.accept().map(|(s, _)| s.into())
    }
}

impl Accept for UnixListener {
    #[cfg(not(target_os = "linux"))]
    fn accept_std(&self) -> io::Result<OwnedFd> {
        self.accept().map(|(s, _)| s.into())
    }
}

/// Accept a non-blocking, close-on-exec connection, and the peer's address if it is an IP
/// one.
#[cfg(target_os = "linux")]
fn accept_nonblocking(l: &impl Accept) -> io::Result<(OwnedFd, Option<SocketAddr>)> {
    use rustix::net::{acceptfrom_with, SocketFlags};
    let (fd, addr) = acceptfrom_with(l, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC)?;
    Ok((fd, addr.and_then(|a| SocketAddr::try_from(a).ok())))
}

/// Accept, then make the connection non-blocking; the address is asked for separately.
#[cfg(not(target_os = "linux"))]
fn accept_nonblocking(l: &impl Accept) -> io::Result<(OwnedFd, Option<SocketAddr>)> {
    let fd = l.accept_std()?;
    let sock = socket2::SockRef::from(&fd);
    sock.set_nonblocking(true)?;
    let addr = sock.peer_addr().ok().and_then(|a| a.as_socket());
    Ok((fd, addr))
}

impl AsFd for StdListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            StdListener::Tcp(l) => l.as_fd(),
            StdListener::Unix(l) => l.as_fd(),
        }
    }
}

impl AsRawFd for StdListener {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// A bound listener and what the bind resolved to.
#[derive(Debug)]
pub struct Listening {
    /// The listener, non-blocking.
    pub listener: StdListener,
    /// The endpoint as bound, for the core's `handle_listening`: `tcp://127.0.0.1:41234`
    /// for `tcp://127.0.0.1:*`, the chosen path for `ipc://*`.
    pub endpoint: String,
    /// The socket file of an `ipc://` path: keep it as long as the listener, and drop it
    /// when listening stops, which removes the file.
    pub socket_file: Option<SocketFile>,
}

/// Listen on the first of `addrs` that binds (they are tried in order), set up as
/// `tuning` says (see [`TcpTuning`](crate::TcpTuning)).
pub fn listen_tcp(addrs: &[SocketAddr], tuning: &crate::TcpTuning) -> io::Result<Listening> {
    let listener =
        Attempts::new(addrs.to_vec()).connect_each(|a| crate::listen_socket(a, tuning))?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    Ok(Listening {
        listener: StdListener::Tcp(listener),
        endpoint: format!("tcp://{local}"),
        socket_file: None,
    })
}

/// Listen on a socket that is already bound and listening (libzmq's `ZMQ_USE_FD`, or a
/// socket handed over by a service manager), for `endpoint`'s transport: a TCP listener
/// for `tcp://` and `ws://`, a Unix one for `ipc://`. The endpoint's address is not used:
/// the endpoint as bound is the socket's own address. A socket of another kind, or one
/// that does not listen, is refused (`InvalidInput`). The socket file of an `ipc://` path
/// is left in place when listening stops, as whoever bound it owns it.
pub fn listen_on_fd(fd: OwnedFd, endpoint: &Endpoint) -> io::Result<Listening> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
    let listening = socket2::SockRef::from(&fd).is_listener()?;
    if !listening {
        return Err(invalid("the descriptor is not a listening socket"));
    }
    match endpoint {
        Endpoint::Tcp(_) | Endpoint::Ws(_) => {
            let listener = TcpListener::from(fd);
            let local = listener
                .local_addr()
                .map_err(|_| invalid("the descriptor is not a TCP socket"))?;
            listener.set_nonblocking(true)?;
            Ok(Listening {
                listener: StdListener::Tcp(listener),
                endpoint: format!("tcp://{local}"),
                socket_file: None,
            })
        }
        Endpoint::Ipc(_) => {
            let listener = UnixListener::from(fd);
            let local = listener
                .local_addr()
                .map_err(|_| invalid("the descriptor is not a Unix socket"))?;
            listener.set_nonblocking(true)?;
            let endpoint = if let Some(path) = local.as_pathname() {
                format!("ipc://{}", path.display())
            } else {
                abstract_name(&local)
                    .map(|name| format!("ipc://@{name}"))
                    .ok_or_else(|| invalid("the Unix socket has no name"))?
            };
            Ok(Listening {
                listener: StdListener::Unix(listener),
                endpoint,
                socket_file: None,
            })
        }
        _ => Err(io::ErrorKind::Unsupported.into()),
    }
}

/// The abstract name of a Unix socket address, if it has one (Linux).
#[cfg(target_os = "linux")]
fn abstract_name(addr: &unix::SocketAddr) -> Option<String> {
    use std::os::linux::net::SocketAddrExt;
    addr.as_abstract_name()
        .map(|n| String::from_utf8_lossy(n).into_owned())
}

/// Abstract names exist on Linux only.
#[cfg(not(target_os = "linux"))]
fn abstract_name(_: &unix::SocketAddr) -> Option<String> {
    None
}

/// Listen on an `ipc://` path (`*`: a fresh file in the temporary directory) or abstract
/// name.
pub fn listen_ipc(ipc: &IpcEndpoint) -> io::Result<Listening> {
    match ipc {
        IpcEndpoint::Path(path) => {
            let path = if path == "*" {
                wildcard_ipc_path()
            } else {
                PathBuf::from(path)
            };
            // A socket file left by an earlier process would make bind fail.
            remove_stale_socket(&path);
            let listener = UnixListener::bind(&path)?;
            let socket_file = SocketFile(path);
            listener.set_nonblocking(true)?;
            Ok(Listening {
                listener: StdListener::Unix(listener),
                endpoint: format!("ipc://{}", socket_file.path().display()),
                socket_file: Some(socket_file),
            })
        }
        IpcEndpoint::Abstract(name) => {
            let listener = UnixListener::bind_addr(&abstract_addr(name)?)?;
            listener.set_nonblocking(true)?;
            Ok(Listening {
                listener: StdListener::Unix(listener),
                endpoint: format!("ipc://@{name}"),
                socket_file: None,
            })
        }
    }
}

/// Connect to an `ipc://` path or abstract name (a Unix-domain connect completes at once
/// or fails); the stream is non-blocking.
pub fn connect_ipc(ipc: &IpcEndpoint) -> io::Result<UnixStream> {
    let stream = match ipc {
        IpcEndpoint::Path(path) => UnixStream::connect(path)?,
        IpcEndpoint::Abstract(name) => UnixStream::connect_addr(&abstract_addr(name)?)?,
    };
    stream.set_nonblocking(true)?;
    Ok(stream)
}

/// A connected TCP or Unix-domain stream in non-blocking mode.
#[derive(Debug)]
pub enum StdTransport {
    /// `tcp://`.
    Tcp(TcpStream),
    /// `ipc://`.
    Unix(UnixStream),
    /// `wss://`: TLS over TCP.
    Tls(Box<TlsStream<TcpStream>>),
}

impl StdTransport {
    /// Connect to a `tcp://`, `ws://` (its TCP stream) or `ipc://` endpoint, **blocking**:
    /// a name is looked up and every address it resolves to is tried in order, each for at
    /// most `timeout`. For test drivers and tools, not for an I/O thread.
    pub fn connect_blocking(addr: &Endpoint, timeout: Duration) -> io::Result<StdTransport> {
        match addr {
            Endpoint::Tcp(_) | Endpoint::Ws(_) => {
                let tcp = addr.tcp().ok_or(io::ErrorKind::Unsupported)?;
                let stream = Attempts::new(resolve_blocking(tcp)?).connect_each(|a| {
                    let stream = match &tcp.source {
                        None => TcpStream::connect_timeout(&a, timeout)?,
                        Some(source) => crate::connect_from_blocking(a, source, timeout)?,
                    };
                    tcp_connected(&stream)?;
                    Ok(stream)
                })?;
                stream.set_nonblocking(true)?;
                Ok(StdTransport::Tcp(stream))
            }
            Endpoint::Ipc(ipc) => connect_ipc(ipc).map(StdTransport::Unix),
            Endpoint::Inproc(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "inproc:// has no stream outside an async driver",
            )),
            Endpoint::Udp(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "udp:// has no stream",
            )),
        }
    }

    /// Read into `buf` (`Ok(0)` is the end of the stream, `WouldBlock` nothing yet).
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            // `Read` and `Write` are implemented for shared references to std's streams.
            StdTransport::Tcp(s) => (&mut &*s).read(buf),
            StdTransport::Unix(s) => (&mut &*s).read(buf),
            StdTransport::Tls(s) => s.read(buf),
        }
    }

    /// Write what the stream takes now.
    #[inline]
    pub fn write(&self, data: &[u8]) -> io::Result<usize> {
        match self {
            StdTransport::Tcp(s) => (&mut &*s).write(data),
            StdTransport::Unix(s) => (&mut &*s).write(data),
            StdTransport::Tls(s) => s.write(data),
        }
    }

    /// [`write`](Self::write) gathering several buffers.
    #[inline]
    pub fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            StdTransport::Tcp(s) => (&mut &*s).write_vectored(bufs),
            StdTransport::Unix(s) => (&mut &*s).write_vectored(bufs),
            StdTransport::Tls(s) => s.write_vectored(bufs),
        }
    }

    /// Write out what a TLS stream made but the stream has not taken yet: `Ok(true)` when
    /// nothing is left (always, for the other streams). See [`TlsStream`].
    #[inline]
    pub fn flush(&self) -> io::Result<bool> {
        match self {
            StdTransport::Tls(s) => s.flush(),
            _ => Ok(true),
        }
    }

    /// Output is waiting for [`flush`](Self::flush) (TLS records the stream did not take).
    #[inline]
    pub fn pending_output(&self) -> bool {
        match self {
            StdTransport::Tls(s) => s.pending_output(),
            _ => false,
        }
    }

    /// Input may be waiting to be read without the stream becoming readable (TLS
    /// plaintext decrypted but not read).
    #[inline]
    pub fn buffered_input(&self) -> bool {
        match self {
            StdTransport::Tls(s) => s.buffered_input(),
            _ => false,
        }
    }

    /// The stream with TLS on it, if `tls` says so: the client side for a connect (`Some`
    /// name to check the server's certificate against), the server side for an accept.
    pub fn secure(self, tls: Option<&TlsSide>) -> io::Result<StdTransport> {
        match (self, tls) {
            (StdTransport::Tcp(s), Some(side)) => Ok(StdTransport::Tls(Box::new(side.wrap(s)?))),
            (stream, _) => Ok(stream),
        }
    }

    /// The peer's address as text, `IP:port` (see [`peer_address`]); empty for `ipc://`,
    /// whose peers have no name.
    pub fn peer_address(&self) -> String {
        match self {
            StdTransport::Tcp(s) => peer_address(s),
            StdTransport::Unix(_) => String::new(),
            StdTransport::Tls(s) => peer_address(s.get_ref()),
        }
    }

    /// The local address, as [`peer_address`](Self::peer_address) gives the peer's: `IP:port`
    /// for TCP (IPv6 in brackets), empty for a Unix stream.
    pub fn local_address(&self) -> String {
        let local = match self {
            StdTransport::Tcp(s) => s.local_addr(),
            StdTransport::Unix(_) => return String::new(),
            StdTransport::Tls(s) => s.get_ref().local_addr(),
        };
        local.map(|a| a.to_string()).unwrap_or_default()
    }
}

impl AsFd for StdTransport {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            StdTransport::Tcp(s) => s.as_fd(),
            StdTransport::Unix(s) => s.as_fd(),
            StdTransport::Tls(s) => s.get_ref().as_fd(),
        }
    }
}

impl AsRawFd for StdTransport {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn ipc(s: &str) -> IpcEndpoint {
        match Endpoint::parse(s).unwrap() {
            Endpoint::Ipc(i) => i,
            _ => panic!("not ipc"),
        }
    }

    /// The next accepted stream, and the peer address its accept gave.
    fn wait_accept(l: &StdListener) -> (StdTransport, String) {
        for _ in 0..1000 {
            match l.accept() {
                Ok(accepted) => return accepted,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
        panic!("nothing to accept");
    }

    /// Every setting is made before the bind and the connect: the listener's, inherited
    /// by what it accepts, and the connecting socket's (Linux keeps twice the buffer size
    /// asked).
    #[test]
    #[cfg(target_os = "linux")]
    fn tcp_tuning_is_set_before_listening_and_connecting_and_accepted_streams_inherit_it() {
        use socket2::SockRef;
        let tuning = crate::TcpTuning {
            send_buffer: Some(4096),
            recv_buffer: Some(6144),
            keepalive: Some(true),
            keepalive_count: Some(4),
            keepalive_idle: Some(Duration::from_secs(30)),
            keepalive_interval: Some(Duration::from_secs(7)),
            tos: 0x28,
            max_retransmit: Some(Duration::from_millis(1500)),
            backlog: 5,
        };
        let settings = |s: SockRef<'_>| {
            (
                s.send_buffer_size().unwrap(),
                s.recv_buffer_size().unwrap(),
                s.keepalive().unwrap(),
                s.tcp_keepalive_retries().unwrap(),
                s.tcp_keepalive_time().unwrap(),
                s.tcp_keepalive_interval().unwrap(),
                s.tos_v4().unwrap(),
                s.tcp_user_timeout().unwrap(),
            )
        };
        let wanted = (
            8192,
            12288,
            true,
            4,
            Duration::from_secs(30),
            Duration::from_secs(7),
            0x28,
            Some(Duration::from_millis(1500)),
        );
        let l = listen_tcp(&["127.0.0.1:0".parse().unwrap()], &tuning).unwrap();
        let StdListener::Tcp(listener) = &l.listener else {
            panic!("not tcp")
        };
        assert_eq!(settings(SockRef::from(listener)), wanted);
        let addr = listener.local_addr().unwrap();
        let ours = crate::start_connect(addr, None, &tuning).unwrap();
        assert_eq!(settings(SockRef::from(&ours)), wanted);
        let (theirs, _) = wait_accept(&l.listener);
        let StdTransport::Tcp(theirs) = theirs else {
            panic!("not tcp")
        };
        assert_eq!(settings(SockRef::from(&theirs)), wanted);
        // Without settings, the system's (keepalive off, larger buffers on any Linux).
        let plain = crate::TcpTuning::default();
        assert!(plain.is_system() && !tuning.is_system());
        let plain = crate::start_connect(addr, None, &plain).unwrap();
        let plain = settings(SockRef::from(&plain));
        assert!(plain.1 > 12288 && !plain.2 && plain.6 == 0 && plain.7.is_none());
        // Keepalive's details apply only with keepalive on, as in libzmq.
        let off = crate::TcpTuning {
            keepalive: Some(false),
            ..tuning
        };
        let off = crate::start_connect(addr, None, &off).unwrap();
        let off = settings(SockRef::from(&off));
        assert!(!off.2 && off.4 != Duration::from_secs(30));
    }

    #[test]
    fn tcp_listen_reports_the_chosen_port_and_streams_have_nodelay() {
        let l = listen_tcp(
            &["127.0.0.1:0".parse().unwrap()],
            &crate::TcpTuning::default(),
        )
        .unwrap();
        let port: u16 = l.endpoint.rsplit(':').next().unwrap().parse().unwrap();
        assert!(l.endpoint.starts_with("tcp://127.0.0.1:") && port != 0);
        assert!(l.socket_file.is_none());
        let addr = Endpoint::parse(&l.endpoint).unwrap();
        let ours = StdTransport::connect_blocking(&addr, Duration::from_secs(1)).unwrap();
        let (theirs, address) = wait_accept(&l.listener);
        for s in [&ours, &theirs] {
            let StdTransport::Tcp(t) = s else {
                panic!("not tcp")
            };
            assert!(t.nodelay().unwrap());
        }
        assert_eq!(ours.write(b"hi").unwrap(), 2);
        let mut buf = [0u8; 8];
        let n = loop {
            match theirs.read(&mut buf) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
                r => break r.unwrap(),
            }
        };
        assert_eq!(&buf[..n], b"hi");
        let source_port = match &ours {
            StdTransport::Tcp(t) => t.local_addr().unwrap().port(),
            _ => panic!("not tcp"),
        };
        // Each side names the other with IP and port; the accept gave the same.
        assert_eq!(theirs.peer_address(), format!("127.0.0.1:{source_port}"));
        assert_eq!(address, theirs.peer_address());
        assert_eq!(
            ours.peer_address(),
            l.endpoint.strip_prefix("tcp://").unwrap()
        );
        // Nothing more: non-blocking.
        assert_eq!(
            theirs.read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
    }

    #[test]
    fn a_name_connects_to_one_of_its_addresses() {
        // `localhost` may resolve to ::1 first, where nothing listens: the next address
        // is tried.
        let l = listen_tcp(
            &["127.0.0.1:0".parse().unwrap()],
            &crate::TcpTuning::default(),
        )
        .unwrap();
        let port = l.endpoint.rsplit(':').next().unwrap();
        let addr = Endpoint::parse(&format!("tcp://localhost:{port}")).unwrap();
        StdTransport::connect_blocking(&addr, Duration::from_secs(1)).unwrap();
        wait_accept(&l.listener);
    }

    #[test]
    fn a_stream_connected_to_itself_is_refused() {
        // Bind a port, then connect a socket bound to that same address to it: TCP
        // simultaneous open joins the socket to itself.
        struct Fake(SocketAddr, SocketAddr);
        impl TcpSetup for Fake {
            fn local_addr(&self) -> io::Result<SocketAddr> {
                Ok(self.0)
            }
            fn peer_addr(&self) -> io::Result<SocketAddr> {
                Ok(self.1)
            }
            fn set_nodelay(&self, _: bool) -> io::Result<()> {
                Ok(())
            }
        }
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(
            tcp_connected(&Fake(a, a)).unwrap_err().kind(),
            ErrorKind::ConnectionRefused
        );
        tcp_connected(&Fake(a, b)).unwrap();
    }

    #[test]
    fn ipc_paths_replace_stale_sockets_and_are_removed_on_drop() {
        let dir = std::env::temp_dir().join(format!("zmtp-driver-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sock");
        let text = format!("ipc://{}", path.display());
        // A stale socket file from an earlier process.
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let l = listen_ipc(&ipc(&text)).unwrap();
        assert_eq!(l.endpoint, text);
        let s = connect_ipc(&ipc(&text)).unwrap();
        wait_accept(&l.listener);
        drop(s);
        drop(l);
        assert!(
            !path.exists(),
            "the socket file is removed with its listener"
        );
        // A file that is no socket is never removed.
        std::fs::write(&path, b"data").unwrap();
        assert!(listen_ipc(&ipc(&text)).is_err());
        assert!(path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ipc_wildcard_binds_a_fresh_path() {
        let a = listen_ipc(&ipc("ipc://*")).unwrap();
        let b = listen_ipc(&ipc("ipc://*")).unwrap();
        assert_ne!(a.endpoint, b.endpoint);
        let path = a.socket_file.as_ref().unwrap().path().to_path_buf();
        assert_eq!(a.endpoint, format!("ipc://{}", path.display()));
        assert!(path.exists());
        drop(a);
        assert!(!path.exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn abstract_names() {
        let name = format!("zmtp-driver-test-{}", std::process::id());
        let text = format!("ipc://@{name}");
        let l = listen_ipc(&ipc(&text)).unwrap();
        assert_eq!(l.endpoint, text);
        assert!(l.socket_file.is_none());
        let s = StdTransport::connect_blocking(
            &Endpoint::parse(&text).unwrap(),
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(s.peer_address(), "");
        wait_accept(&l.listener);
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn abstract_names_are_unsupported() {
        let e = listen_ipc(&ipc("ipc://@x")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }
}
