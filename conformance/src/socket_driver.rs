//! A blocking test driver for a whole [`Socket`]: many peers over non-blocking
//! `std::net` TCP streams or Unix-domain streams (`ipc://`), polled in a loop with real
//! time.
//!
//! `ipc://path` binds a socket file (a stale one left by an earlier run is removed first,
//! and the file is removed again when the driver stops listening); `ipc://@name` is a Linux
//! abstract name; `ipc://*` binds a fresh file in the temporary directory. The resolved
//! endpoint of an ipc bind is the text given (or the generated path for `*`).
//!
//! It does only what a driver must: act on the socket's events (listen, connect, close a
//! peer), move bytes between the kernel and the socket, and fire its timer. Routing, HWM,
//! reconnects and heartbeats are the socket's. It polls with short sleeps, which is fine
//! for tests and nothing else.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{self as unix, UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::endpoint::{Host, IpcEndpoint, TcpEndpoint};
use zmtp_proto::socket::{
    Command, Endpoint, EndpointId, Message, MonitorEvent, MonitorEventKind, Options, PeerId,
    SendError, Sent, Socket,
};
use zmtp_proto::{Instant, SocketType};

/// Size of one read.
const READ_CHUNK: usize = 64 * 1024;

/// A [`Socket`] driven over real TCP or Unix-domain streams by polling.
#[derive(Debug)]
pub struct SocketDriver {
    socket: Socket,
    start: StdInstant,
    listeners: BTreeMap<EndpointId, Listener>,
    streams: BTreeMap<PeerId, Stream>,
    monitor: Vec<MonitorEvent>,
    scratch: Vec<u8>,
    /// Peers whose last write would have blocked.
    unwritten: Vec<PeerId>,
}

fn tcp_addr(tcp: &TcpEndpoint) -> io::Result<SocketAddr> {
    let port = tcp.port.unwrap_or(0);
    let ip = match &tcp.host {
        Host::Any => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Host::Ipv4(a) => IpAddr::V4(*a),
        Host::Ipv6(a) => IpAddr::V6(*a),
        Host::Name(name) => {
            return (name.as_str(), port)
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "host not found"));
        }
    };
    Ok(SocketAddr::new(ip, port))
}

/// A listening socket of either transport.
#[derive(Debug)]
enum Listener {
    Tcp(TcpListener),
    /// A Unix-domain listener; `path` is the socket file to remove when it closes (none
    /// for abstract names).
    Ipc {
        listener: UnixListener,
        path: Option<PathBuf>,
    },
}

impl Listener {
    /// Listen on `addr`; returns the listener and the resolved endpoint text.
    fn bind(addr: &Endpoint) -> io::Result<(Listener, String)> {
        match addr {
            Endpoint::Tcp(tcp) => {
                let listener = TcpListener::bind(tcp_addr(tcp)?)?;
                listener.set_nonblocking(true)?;
                let local = listener.local_addr()?;
                Ok((Listener::Tcp(listener), format!("tcp://{local}")))
            }
            Endpoint::Ipc(IpcEndpoint::Abstract(name)) => {
                let sa = unix::SocketAddr::from_abstract_name(name.as_bytes())?;
                let listener = UnixListener::bind_addr(&sa)?;
                listener.set_nonblocking(true)?;
                let listener = Listener::Ipc {
                    listener,
                    path: None,
                };
                Ok((listener, addr.to_string()))
            }
            Endpoint::Ipc(IpcEndpoint::Path(path)) => {
                let path = if path == "*" {
                    wildcard_ipc_path()
                } else {
                    PathBuf::from(path)
                };
                remove_stale_socket(&path);
                let listener = UnixListener::bind(&path)?;
                listener.set_nonblocking(true)?;
                let text = format!("ipc://{}", path.display());
                let listener = Listener::Ipc {
                    listener,
                    path: Some(path),
                };
                Ok((listener, text))
            }
            _ => Err(unsupported()),
        }
    }

    fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
            Listener::Ipc { listener, .. } => listener.accept().map(|(s, _)| Stream::Ipc(s)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Ipc {
            path: Some(path), ..
        } = self
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A connected stream of either transport.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Ipc(UnixStream),
}

impl Stream {
    /// The peer's IP address as text (the ZAP `Address`); empty for ipc.
    fn peer_ip(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
            Stream::Ipc(_) => String::new(),
        }
    }

    /// Connect to `addr` (blocking, bounded for TCP: local connects finish at once).
    fn connect(addr: &Endpoint) -> io::Result<Stream> {
        match addr {
            Endpoint::Tcp(tcp) => {
                let stream =
                    TcpStream::connect_timeout(&tcp_addr(tcp)?, Duration::from_millis(500))?;
                Ok(Stream::Tcp(stream))
            }
            Endpoint::Ipc(IpcEndpoint::Abstract(name)) => {
                let sa = unix::SocketAddr::from_abstract_name(name.as_bytes())?;
                Ok(Stream::Ipc(UnixStream::connect_addr(&sa)?))
            }
            Endpoint::Ipc(IpcEndpoint::Path(path)) => Ok(Stream::Ipc(UnixStream::connect(path)?)),
            _ => Err(unsupported()),
        }
    }

    fn configure(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_nodelay(true)?;
                s.set_nonblocking(true)
            }
            Stream::Ipc(s) => s.set_nonblocking(true),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Ipc(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Ipc(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "this test driver speaks tcp and ipc only",
    )
}

/// A fresh socket file name for `ipc://*`.
fn wildcard_ipc_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("zmtp-ipc-{}-{n}", std::process::id()))
}

/// Remove a socket file left behind by an earlier listener (only a socket, never another
/// kind of file).
fn remove_stale_socket(path: &std::path::Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

impl SocketDriver {
    /// A driver for a new socket of type `ty`, reporting every monitor event.
    pub fn new(ty: SocketType, options: Options) -> SocketDriver {
        let mut socket = Socket::new(ty, options, 0x5EED).expect("valid options");
        socket.set_monitor(0xFFFF);
        SocketDriver {
            socket,
            start: StdInstant::now(),
            listeners: BTreeMap::new(),
            streams: BTreeMap::new(),
            monitor: Vec::new(),
            scratch: vec![0; READ_CHUNK],
            unwritten: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        since(self.start)
    }

    /// The socket, for calls that need no I/O (subscribe, options, stats).
    pub fn socket(&mut self) -> &mut Socket {
        &mut self.socket
    }

    /// Monitor events seen so far.
    pub fn monitor_events(&self) -> &[MonitorEvent] {
        &self.monitor
    }

    /// Number of open streams.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Bind and wait until listening; returns the resolved endpoint.
    pub fn bind(&mut self, endpoint: &str) -> String {
        self.socket.bind(endpoint).expect("valid endpoint");
        self.step();
        self.socket.last_endpoint().to_string()
    }

    /// Connect (the connection is made by the next steps).
    pub fn connect(&mut self, endpoint: &str) {
        self.socket.connect(endpoint).expect("valid endpoint");
        self.step();
    }

    fn handle_events(&mut self) {
        while let Some(m) = self.socket.poll_monitor() {
            self.monitor.push(m);
        }
        while let Some(command) = self.socket.poll_command() {
            let now = self.now();
            match command {
                Command::Listen { endpoint, addr } => match Listener::bind(&addr) {
                    Ok((listener, resolved)) => {
                        self.socket.handle_listening(endpoint, &resolved);
                        self.listeners.insert(endpoint, listener);
                    }
                    Err(e) => self
                        .socket
                        .handle_bind_failed(endpoint, e.raw_os_error().unwrap_or(0) as u32),
                },
                Command::Connect { endpoint, addr } => match Stream::connect(&addr) {
                    Ok(stream) => {
                        match self
                            .socket
                            .handle_connected(endpoint, &stream.peer_ip(), now)
                        {
                            Some(peer) => self.add_stream(peer, stream),
                            None => drop(stream),
                        }
                    }
                    Err(_) => self.socket.handle_connect_failed(endpoint, now),
                },
                Command::StopListening { endpoint } => {
                    self.listeners.remove(&endpoint);
                }
                Command::ClosePeer { peer } => {
                    self.streams.remove(&peer);
                }
                _ => {}
            }
            while let Some(m) = self.socket.poll_monitor() {
                self.monitor.push(m);
            }
        }
    }

    fn add_stream(&mut self, peer: PeerId, stream: Stream) {
        stream.configure().expect("non-blocking stream");
        self.streams.insert(peer, stream);
    }

    /// One round: events, accepts, reads, writes, timers. Returns whether anything moved.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        self.handle_events();
        // Accept.
        let listening: Vec<EndpointId> = self.listeners.keys().copied().collect();
        for ep in listening {
            while let Some(Ok(stream)) = self.listeners.get(&ep).map(Listener::accept) {
                moved = true;
                let now = self.now();
                match self.socket.handle_accepted(ep, &stream.peer_ip(), now) {
                    Some(peer) => self.add_stream(peer, stream),
                    None => drop(stream),
                }
            }
        }
        // Read.
        let peers: Vec<PeerId> = self.streams.keys().copied().collect();
        for peer in &peers {
            while self.socket.wants_read(*peer) {
                let Some(stream) = self.streams.get_mut(peer) else {
                    break;
                };
                match stream.read(&mut self.scratch) {
                    Ok(0) => {
                        self.streams.remove(peer);
                        self.socket.handle_closed(*peer, self.now());
                        moved = true;
                        break;
                    }
                    Ok(n) => {
                        let now = self.now();
                        self.socket.handle_received(*peer, now, &self.scratch[..n]);
                        moved = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.streams.remove(peer);
                        self.socket.handle_closed(*peer, self.now());
                        moved = true;
                        break;
                    }
                }
            }
        }
        self.handle_events();
        // Timers.
        let now = self.now();
        if self.socket.poll_timeout().is_some_and(|t| t <= now) {
            self.socket.handle_timeout(now);
            moved = true;
        }
        self.handle_events();
        // Write everything queued for every peer that has output (and those whose kernel
        // buffer was full last round).
        let mut todo = std::mem::take(&mut self.unwritten);
        while let Some(peer) = self.socket.next_dirty() {
            todo.push(peer);
        }
        for peer in todo {
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
                        self.socket.advance(peer, n, || since(start));
                        moved = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.unwritten.push(peer);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.streams.remove(&peer);
                        self.socket.handle_closed(peer, self.now());
                        break;
                    }
                }
            }
        }
        self.handle_events();
        moved
    }

    /// Step until `done` holds or `timeout` passes; returns whether `done` held.
    pub fn step_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> bool {
        let deadline = StdInstant::now() + timeout;
        loop {
            if done(self) {
                return true;
            }
            if StdInstant::now() >= deadline {
                return false;
            }
            if !self.step() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Step for `duration`.
    pub fn pump_for(&mut self, duration: Duration) {
        self.step_until(duration, |_| false);
    }

    /// Send, stepping while the socket would block, for at most `timeout`.
    pub fn send(&mut self, msg: impl Into<Message>, timeout: Duration) -> Result<Sent, SendError> {
        let deadline = StdInstant::now() + timeout;
        let mut msg = msg.into();
        loop {
            let now = self.now();
            match self.socket.send(msg, now) {
                Err(SendError::WouldBlock(m)) if StdInstant::now() < deadline => {
                    msg = m;
                    if !self.step() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                other => {
                    self.step();
                    return other;
                }
            }
        }
    }

    /// Receive a message, stepping for at most `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<Message> {
        let mut got = None;
        self.step_until(timeout, |d| {
            let now = d.now();
            got = d.socket.recv(now);
            got.is_some()
        });
        got
    }
}

impl crate::our::OurSocket for SocketDriver {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        let seen = self.monitor.len();
        self.socket.bind(endpoint).map_err(|e| e.to_string())?;
        self.step();
        match self.monitor[seen..]
            .iter()
            .find(|e| e.kind == MonitorEventKind::BindFailed)
        {
            Some(failed) => Err(format!(
                "bind {endpoint}: {}",
                io::Error::from_raw_os_error(failed.value as i32)
            )),
            None => Ok(self.socket.last_endpoint().to_string()),
        }
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        self.socket.connect(endpoint).map_err(|e| e.to_string())?;
        self.step();
        Ok(())
    }

    fn send(&mut self, msg: Message, timeout: Duration) -> Result<(), SendError> {
        SocketDriver::send(self, msg, timeout).map(|_| ())
    }

    fn recv(&mut self, timeout: Duration) -> Option<Message> {
        let now = self.now();
        if let Some(msg) = self.socket.recv(now) {
            return Some(msg);
        }
        self.step();
        SocketDriver::recv(self, timeout)
    }

    fn subscribe(&mut self, topic: &[u8]) {
        self.socket.subscribe(topic);
        self.step();
    }

    fn pump(&mut self, duration: Duration) {
        self.step();
        self.pump_for(duration);
    }
}

/// The core's time: microseconds since `start`.
fn since(start: StdInstant) -> Instant {
    Instant::from_micros(u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX))
}
