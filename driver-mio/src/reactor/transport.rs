//! Streams and listeners: TCP and IPC (paths and abstract names), listen and connect.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use zmtp_proto::socket::endpoint::IpcEndpoint;
use zmtp_proto::socket::Endpoint;

/// A stream to a peer, shared by the state (which registers and closes it) and the I/O
/// thread while it reads or writes without the lock.
pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub(super) fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    pub(super) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            // `Read` and `Write` are implemented for shared references to mio's streams.
            Stream::Tcp(s) => (&mut &*s).read(buf),
            Stream::Unix(s) => (&mut &*s).read(buf),
        }
    }

    pub(super) fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&mut &*s).write_vectored(bufs),
            Stream::Unix(s) => (&mut &*s).write_vectored(bufs),
        }
    }

    pub(super) fn peer_ip(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
            Stream::Unix(_) => String::new(),
        }
    }
}

pub(super) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, Option<String>),
}

fn abstract_addr(name: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
}

pub(super) fn connect_unix(ipc: &IpcEndpoint) -> io::Result<UnixStream> {
    let std_stream = match ipc {
        IpcEndpoint::Path(path) => std::os::unix::net::UnixStream::connect(path)?,
        IpcEndpoint::Abstract(name) => {
            std::os::unix::net::UnixStream::connect_addr(&abstract_addr(name)?)?
        }
    };
    std_stream.set_nonblocking(true)?;
    Ok(UnixStream::from_std(std_stream))
}

/// Start listening (synchronously); returns the listener and the resolved endpoint.
pub(super) fn listen(addr: &Endpoint) -> io::Result<(Listener, String)> {
    match addr {
        Endpoint::Tcp(tcp) => {
            let std_listener = std::net::TcpListener::bind(&tcp.socket_addrs()?[..])?;
            std_listener.set_nonblocking(true)?;
            let local = std_listener.local_addr()?;
            Ok((
                Listener::Tcp(TcpListener::from_std(std_listener)),
                format!("tcp://{local}"),
            ))
        }
        Endpoint::Ipc(IpcEndpoint::Path(path)) => {
            // A socket file left by an earlier process would make bind fail.
            let _ = std::fs::remove_file(path);
            let l = std::os::unix::net::UnixListener::bind(path)?;
            l.set_nonblocking(true)?;
            Ok((
                Listener::Unix(UnixListener::from_std(l), Some(path.clone())),
                format!("ipc://{path}"),
            ))
        }
        Endpoint::Ipc(IpcEndpoint::Abstract(name)) => {
            let l = std::os::unix::net::UnixListener::bind_addr(&abstract_addr(name)?)?;
            l.set_nonblocking(true)?;
            Ok((
                Listener::Unix(UnixListener::from_std(l), None),
                format!("ipc://@{name}"),
            ))
        }
        Endpoint::Inproc(_) => Err(io::ErrorKind::Unsupported.into()),
    }
}
