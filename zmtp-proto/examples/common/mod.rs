//! The part of the embedding examples that every program of this kind shares: a
//! `zmtp_proto::socket::Socket` driven over `std::net` streams in one `poll(2)` loop. The
//! programs (`req_client.rs`, `router_server.rs`) add what the application does between
//! the rounds.
//!
//! One round of the loop, in the order the socket layer's calling contract asks for:
//!
//! 1. [`Driver::run_commands`]: carry out every command (listen, connect, close a peer)
//!    and read the monitor events. Any call into the socket may queue commands, so this
//!    comes after the application's calls too.
//! 2. The application receives everything there is, then sends.
//! 3. [`Driver::write_all`]: write what the socket has queued for each peer.
//! 4. [`Driver::wait`]: wait in `poll(2)` until a stream is readable (or, after a short
//!    write, writable), a listener has a connection, or the earliest deadline passes: the
//!    socket's timer or the application's; then hand the socket what was read, accept
//!    the connections, and fire the socket's timer when it is due.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::{AuthReply, Command, EndpointId, PeerId, Socket, StreamAddr};
use zmtp_proto::Instant;

/// A stream to a peer: TCP or a Unix-domain socket.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn connect(addr: StreamAddr<'_>) -> io::Result<(Stream, String)> {
        let stream = match addr {
            StreamAddr::Ip(_) | StreamAddr::Name { .. } => {
                // Every address the name resolves to, in order, as libzmq does. (A connect
                // to an unreachable host blocks this loop for up to the timeout; a
                // production loop would connect without blocking and poll for POLLOUT.)
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                let mut found = None;
                for candidate in resolve(addr)? {
                    match TcpStream::connect_timeout(&candidate, Duration::from_secs(1)) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let s = found.ok_or(last)?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            StreamAddr::IpcPath(path) => Stream::Unix(UnixStream::connect(path)?),
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("this example does not connect to {other:?}"),
                ))
            }
        };
        let address = match &stream {
            Stream::Tcp(s) => s.peer_addr()?.to_string(),
            Stream::Unix(_) => String::new(),
        };
        match &stream {
            Stream::Tcp(s) => s.set_nonblocking(true)?,
            Stream::Unix(s) => s.set_nonblocking(true)?,
        }
        Ok((stream, address))
    }

    fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
}

/// A listening socket: TCP, or a Unix-domain socket file (removed when dropped).
#[derive(Debug)]
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Listen where the socket asks; returns the listener and the endpoint as bound (the
    /// port the system chose for `tcp://host:*`).
    fn bind(addr: StreamAddr<'_>) -> io::Result<(Listener, String)> {
        match addr {
            StreamAddr::Ip(_) | StreamAddr::Name { .. } => {
                let addrs = resolve(addr)?;
                let listener = TcpListener::bind(&addrs[..])?;
                listener.set_nonblocking(true)?;
                let local = listener.local_addr()?;
                Ok((Listener::Tcp(listener), format!("tcp://{local}")))
            }
            StreamAddr::IpcPath(path) if path != "*" => {
                // A socket file left by a process that ended would make the bind fail.
                let _ = std::fs::remove_file(path);
                let listener = UnixListener::bind(path)?;
                listener.set_nonblocking(true)?;
                Ok((
                    Listener::Unix(listener, path.into()),
                    format!("ipc://{path}"),
                ))
            }
            other => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("this example does not listen on {other:?}"),
            )),
        }
    }

    /// A connection waiting to be accepted, with the peer's address.
    fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, address) = l.accept()?;
                s.set_nonblocking(true)?;
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), address.to_string()))
            }
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(true)?;
                Ok((Stream::Unix(s), String::new()))
            }
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l, _) => l.as_raw_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A socket, its streams and its listeners.
pub struct Driver {
    /// The socket: the application calls `send`, `recv`, `bind`, `connect` on it.
    pub socket: Socket,
    listeners: BTreeMap<EndpointId, Listener>,
    streams: BTreeMap<PeerId, Stream>,
    /// Peers whose last write would have blocked: wait for POLLOUT on them.
    blocked: Vec<PeerId>,
    start: StdInstant,
    buf: Vec<u8>,
    closed: bool,
}

impl Driver {
    /// A driver for `socket`.
    pub fn new(socket: Socket) -> Driver {
        Driver {
            socket,
            listeners: BTreeMap::new(),
            streams: BTreeMap::new(),
            blocked: Vec::new(),
            start: StdInstant::now(),
            buf: vec![0; 64 * 1024],
            closed: false,
        }
    }

    /// The core's clock: microseconds since the loop started (any monotonic clock will do).
    pub fn now(&self) -> Instant {
        Instant::from_micros(self.start.elapsed().as_micros() as u64)
    }

    /// Step 1: carry out every command, and print the monitor events.
    pub fn run_commands(&mut self) -> io::Result<()> {
        while let Some(command) = self.socket.poll_command() {
            match command {
                Command::Listen { endpoint, addr } => {
                    let addr = addr.stream_addr().expect("a listen has a stream address");
                    match Listener::bind(addr) {
                        Ok((listener, bound)) => {
                            self.socket.handle_listening(endpoint, &bound);
                            self.listeners.insert(endpoint, listener);
                        }
                        Err(e) => {
                            let errno = e.raw_os_error().unwrap_or(0);
                            self.socket.handle_bind_failed(endpoint, errno as u32);
                        }
                    }
                }
                Command::StopListening { endpoint } => {
                    self.listeners.remove(&endpoint);
                }
                Command::Connect { endpoint, .. } => {
                    let addr = command.dial_addr().expect("a connect has an address");
                    self.connect(endpoint, addr);
                }
                // The socket has forgotten the peer already: drop the stream, and call
                // nothing about it.
                Command::ClosePeer { peer } => {
                    self.streams.remove(&peer);
                }
                // Reading resumes by itself: `wait` polls a peer for input whenever
                // `wants_read` says so.
                Command::Resume { .. } => {}
                // No ZAP handler here, and no security mechanism either.
                Command::Authenticate { peer, .. } => {
                    let now = self.now();
                    self.socket.handle_auth(peer, now, AuthReply::NoHandler);
                }
                Command::Closed => {
                    self.streams.clear();
                    self.listeners.clear();
                    self.closed = true;
                }
                other => eprintln!("not carried out here: {other:?}"),
            }
        }
        while let Some(event) = self.socket.poll_monitor() {
            eprintln!("monitor: {} {}", event.kind.name(), event.endpoint);
        }
        Ok(())
    }

    fn connect(&mut self, endpoint: EndpointId, addr: StreamAddr<'_>) {
        let connected = Stream::connect(addr);
        let now = self.now();
        match connected {
            Ok((stream, address)) => {
                // `None`: the socket no longer wants this connection (closed or
                // disconnected meanwhile); dropping the stream closes it.
                if let Some(peer) = self.socket.handle_connected(endpoint, &address, now) {
                    self.streams.insert(peer, stream);
                }
            }
            // The socket schedules the next attempt (RECONNECT_IVL) on its timer.
            Err(_) => self.socket.handle_connect_failed(endpoint, now),
        }
    }

    /// Step 3: write what every peer has queued, until the kernel takes no more.
    pub fn write_all(&mut self) {
        let mut peers = std::mem::take(&mut self.blocked);
        while let Some(peer) = self.socket.next_dirty() {
            peers.push(peer);
        }
        for peer in peers {
            let Some(stream) = self.streams.get_mut(&peer) else {
                continue;
            };
            loop {
                let out = self.socket.poll_transmit(peer);
                if out.is_empty() {
                    break;
                }
                match stream.write(out) {
                    Ok(n) => {
                        let start = self.start;
                        self.socket.advance(peer, n, || {
                            Instant::from_micros(start.elapsed().as_micros() as u64)
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.blocked.push(peer);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.streams.remove(&peer);
                        let now = self.now();
                        self.socket.handle_stream_failed(peer, now, &e.to_string());
                        break;
                    }
                }
            }
        }
    }

    /// Steps 4 and 5: wait for input, writability or a deadline, then hand the socket
    /// what happened.
    pub fn wait(&mut self, app_deadline: Option<StdInstant>) -> io::Result<()> {
        // The earliest deadline: the socket's timer (heartbeats, reconnects, handshakes)
        // or the application's. Without either, poll would wait for input alone.
        let socket_deadline = self
            .socket
            .poll_timeout()
            .map(|at| self.start + Duration::from_micros(at.as_micros()));
        let mut deadline = [socket_deadline, app_deadline].into_iter().flatten().min();
        // A call since the last `run_commands` (a write's `advance` finishing a close, say)
        // may have queued commands or output: look again at once rather than wait.
        if self.socket.has_work() {
            deadline = Some(StdInstant::now());
        }
        let peers: Vec<PeerId> = self.streams.keys().copied().collect();
        let mut fds: Vec<sys::PollFd> = peers
            .iter()
            .map(|peer| {
                let mut events = 0;
                if self.socket.wants_read(*peer) {
                    events |= sys::POLLIN;
                }
                if self.blocked.contains(peer) {
                    events |= sys::POLLOUT;
                }
                sys::PollFd::new(self.streams[peer].fd(), events)
            })
            .collect();
        let listening: Vec<EndpointId> = self.listeners.keys().copied().collect();
        fds.extend(
            listening
                .iter()
                .map(|endpoint| sys::PollFd::new(self.listeners[endpoint].fd(), sys::POLLIN)),
        );
        sys::poll(&mut fds, deadline)?;

        // New connections: the socket takes each as a peer, or refuses it (`None`).
        for (endpoint, fd) in listening.into_iter().zip(&fds[peers.len()..]) {
            if fd.revents == 0 {
                continue;
            }
            while let Some(Ok((stream, address))) =
                self.listeners.get(&endpoint).map(Listener::accept)
            {
                let now = self.now();
                if let Some(peer) = self.socket.handle_accepted(endpoint, &address, now) {
                    self.streams.insert(peer, stream);
                }
            }
        }
        for (peer, fd) in peers.into_iter().zip(&fds) {
            if fd.revents == 0 {
                continue;
            }
            // Read until the kernel has nothing more, or the socket wants no more (RCVHWM).
            while self.socket.wants_read(peer) {
                let Some(stream) = self.streams.get_mut(&peer) else {
                    break;
                };
                match stream.read(&mut self.buf) {
                    Ok(0) => {
                        self.streams.remove(&peer);
                        let now = self.now();
                        self.socket.handle_closed(peer, now);
                    }
                    Ok(n) => {
                        let now = self.now();
                        self.socket.handle_received(peer, now, &self.buf[..n]);
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.streams.remove(&peer);
                        let now = self.now();
                        self.socket.handle_stream_failed(peer, now, &e.to_string());
                    }
                }
                break;
            }
        }
        let now = self.now();
        if self.socket.poll_timeout().is_some_and(|at| at <= now) {
            self.socket.handle_timeout(now);
        }
        Ok(())
    }

    /// Close the socket, and keep the loop running until what was sent is written or
    /// LINGER runs out.
    pub fn close(mut self) -> io::Result<()> {
        let now = self.now();
        self.socket.close(now);
        while !self.closed {
            self.run_commands()?;
            if self.closed {
                break;
            }
            self.write_all();
            self.wait(None)?;
        }
        Ok(())
    }
}

/// A seed for the socket's own randomness (generated ids, CURVE nonces' starting points):
/// std's hash keys come from the operating system.
pub fn random_seed() -> u64 {
    RandomState::new().build_hasher().finish()
}

/// `poll(2)`, which std does not wrap: the one system call these examples declare themselves.
mod sys {
    use std::io;
    use std::os::fd::RawFd;
    use std::time::Instant;

    pub const POLLIN: i16 = 0x001;
    pub const POLLOUT: i16 = 0x004;

    #[repr(C)]
    pub struct PollFd {
        fd: RawFd,
        events: i16,
        pub revents: i16,
    }

    impl PollFd {
        pub fn new(fd: RawFd, events: i16) -> PollFd {
            PollFd {
                fd,
                events,
                revents: 0,
            }
        }
    }

    extern "C" {
        #[link_name = "poll"]
        fn c_poll(fds: *mut PollFd, nfds: std::ffi::c_ulong, timeout: std::ffi::c_int) -> i32;
    }

    /// Wait until one of `fds` is ready or `deadline` passes (`None`: no deadline).
    pub fn poll(fds: &mut [PollFd], deadline: Option<Instant>) -> io::Result<usize> {
        let timeout = match deadline {
            None => -1,
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                // Round up, so that a deadline less than a millisecond away is not a busy loop.
                left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
            }
        };
        // SAFETY: `fds` is a valid, exclusively borrowed array of `#[repr(C)]` pollfd
        // structures of the given length for the duration of the call.
        let n = unsafe { c_poll(fds.as_mut_ptr(), fds.len() as std::ffi::c_ulong, timeout) };
        match n {
            n if n >= 0 => Ok(n as usize),
            _ => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                e => Err(e),
            },
        }
    }
}

/// The addresses to try, in order, for an IP or a name address: name resolution is the
/// loop's, not the core's (the system's resolver, which blocks).
fn resolve(addr: StreamAddr<'_>) -> io::Result<Vec<std::net::SocketAddr>> {
    use std::net::ToSocketAddrs;
    match addr {
        StreamAddr::Ip(ip) => Ok(vec![ip]),
        StreamAddr::Name { host, port } => Ok((host, port).to_socket_addrs()?.collect()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not an IP address or a name",
        )),
    }
}
