//! A blocking test driver for a whole [`Socket`]: many peers over non-blocking
//! `std::net` TCP streams, polled in a loop with real time.
//!
//! It does only what a driver must: act on the socket's events (listen, connect, close a
//! peer), move bytes between the kernel and the socket, and fire its timer. Routing, HWM,
//! reconnects and heartbeats are the socket's. It polls with short sleeps, which is fine
//! for tests and nothing else.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::endpoint::{Host, TcpEndpoint};
use zmtp_proto::socket::{
    Endpoint, EndpointId, Event, Message, MonitorEvent, Options, PeerId, SendError, Sent, Socket,
};
use zmtp_proto::{Instant, SocketType};

/// Size of one read.
const READ_CHUNK: usize = 64 * 1024;

/// A [`Socket`] driven over real TCP streams by polling.
#[derive(Debug)]
pub struct SocketDriver {
    socket: Socket,
    start: StdInstant,
    listeners: BTreeMap<EndpointId, TcpListener>,
    streams: BTreeMap<PeerId, TcpStream>,
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

fn tcp_of(addr: &Endpoint) -> io::Result<SocketAddr> {
    match addr {
        Endpoint::Tcp(tcp) => tcp_addr(tcp),
        _ => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this test driver speaks tcp only",
        )),
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
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The socket, for calls that need no I/O (subscribe, options, stats).
    pub fn socket(&mut self) -> &mut Socket {
        &mut self.socket
    }

    /// Monitor events seen so far.
    pub fn monitor_events(&self) -> &[MonitorEvent] {
        &self.monitor
    }

    /// Number of open TCP streams.
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
        while let Some(event) = self.socket.poll_event() {
            let now = self.now();
            match event {
                Event::Listen { endpoint, addr } => {
                    match tcp_of(&addr).and_then(TcpListener::bind) {
                        Ok(listener) => {
                            listener
                                .set_nonblocking(true)
                                .expect("non-blocking listener");
                            let local = listener.local_addr().expect("local address");
                            self.socket
                                .handle_listening(endpoint, &format!("tcp://{local}"));
                            self.listeners.insert(endpoint, listener);
                        }
                        Err(e) => self
                            .socket
                            .handle_bind_failed(endpoint, e.raw_os_error().unwrap_or(0) as u32),
                    }
                }
                Event::Connect { endpoint, addr } => {
                    let stream = tcp_of(&addr)
                        .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)));
                    match stream {
                        Ok(stream) => match self.socket.handle_connected(endpoint, now) {
                            Some(peer) => self.add_stream(peer, stream),
                            None => drop(stream),
                        },
                        Err(_) => self.socket.handle_connect_failed(endpoint, now),
                    }
                }
                Event::StopListening { endpoint } => {
                    self.listeners.remove(&endpoint);
                }
                Event::ClosePeer { peer } => {
                    self.streams.remove(&peer);
                }
                Event::Monitor(m) => self.monitor.push(m),
                _ => {}
            }
        }
    }

    fn add_stream(&mut self, peer: PeerId, stream: TcpStream) {
        stream.set_nodelay(true).expect("TCP_NODELAY");
        stream.set_nonblocking(true).expect("non-blocking stream");
        self.streams.insert(peer, stream);
    }

    /// One round: events, accepts, reads, writes, timers. Returns whether anything moved.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        self.handle_events();
        // Accept.
        let listening: Vec<EndpointId> = self.listeners.keys().copied().collect();
        for ep in listening {
            while let Some(Ok((stream, _))) = self.listeners.get(&ep).map(|l| l.accept()) {
                moved = true;
                match self.socket.handle_accepted(ep, self.now()) {
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
                        self.socket.advance(peer, n);
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
            match self.socket.send(msg) {
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
            got = d.socket.recv();
            got.is_some()
        });
        got
    }
}
