//! A blocking test driver for a whole [`Socket`]: many peers over non-blocking
//! `std::net` TCP streams or Unix-domain streams (`ipc://`), polled in a loop with real
//! time.
//!
//! `ipc://path` binds a socket file (a stale one left by an earlier run is removed first,
//! and the file is removed again when the driver stops listening); `ipc://@name` is a Linux
//! abstract name; `ipc://*` binds a fresh file in the temporary directory. The resolved
//! endpoint of an ipc bind is the text given (or the generated path for `*`).
//!
//! It does only what a driver must: carry out the socket's commands (listen, connect, close
//! a peer: its [`CommandHandler`] implementation, run by `zmtp_driver::run_commands`),
//! move bytes between the kernel and the socket, and fire its timer. Listening and
//! connecting are `zmtp_driver`'s helpers. Routing, HWM, reconnects and heartbeats are the
//! socket's. It polls with short sleeps, which is fine for tests and nothing else.

use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, Instant as StdInstant};
use zmtp_proto::socket::endpoint::WsEndpoint;

use zmtp_driver::{
    listen_ipc, listen_tcp, resolve_blocking, run_commands, CommandHandler, Listening, StdTransport,
};
use zmtp_proto::socket::{
    AuthReply, Endpoint, EndpointId, Message, MonitorEvent, MonitorEventKind, Options, PeerId,
    SendError, Sent, Socket, ZapRequest,
};
use zmtp_proto::{Instant, SocketType};

/// Size of one read.
const READ_CHUNK: usize = 64 * 1024;
/// The longest wait for one TCP connect (local connects finish at once).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// A [`Socket`] driven over real TCP or Unix-domain streams by polling.
#[derive(Debug)]
pub struct SocketDriver {
    socket: Socket,
    start: StdInstant,
    /// Listeners (with their socket files, removed when they are dropped).
    listeners: BTreeMap<EndpointId, Listening>,
    streams: BTreeMap<PeerId, StdTransport>,
    monitor: Vec<MonitorEvent>,
    scratch: Vec<u8>,
    /// Peers whose last write would have blocked.
    unwritten: Vec<PeerId>,
}

/// Listen on `addr` (blocking to resolve a host name), with the system's buffer sizes.
fn listen(addr: &Endpoint) -> io::Result<Listening> {
    match addr {
        Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => {
            listen_tcp(&resolve_blocking(tcp)?, &zmtp_driver::TcpTuning::default())
        }
        Endpoint::Ipc(ipc) => listen_ipc(ipc),
        Endpoint::Inproc(_) | Endpoint::Udp(_) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this test driver speaks tcp and ipc only",
        )),
    }
}

impl SocketDriver {
    /// A driver for a new socket of type `ty`, reporting every monitor event.
    pub fn new(ty: SocketType, options: Options) -> SocketDriver {
        let mut socket = zmtp_driver::new_socket(ty, options).expect("valid options");
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
        run_commands(self);
    }

    /// One round: events, accepts, reads, writes, timers. Returns whether anything moved.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        self.handle_events();
        // Accept.
        let listening: Vec<EndpointId> = self.listeners.keys().copied().collect();
        for ep in listening {
            while let Some(Ok((stream, address))) =
                self.listeners.get(&ep).map(|l| l.listener.accept())
            {
                moved = true;
                let now = self.now();
                match self.socket.handle_accepted(ep, &address, now) {
                    Some(peer) => {
                        self.streams.insert(peer, stream);
                    }
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

/// The socket's commands, carried out at once (blocking: this driver is for tests).
impl CommandHandler for SocketDriver {
    fn socket(&mut self) -> Option<&mut Socket> {
        Some(&mut self.socket)
    }

    fn listen(&mut self, endpoint: EndpointId, addr: Endpoint) {
        match listen(&addr) {
            Ok(listening) => {
                self.socket.handle_listening(endpoint, &listening.endpoint);
                self.listeners.insert(endpoint, listening);
            }
            Err(e) => {
                let errno = e.raw_os_error().and_then(|n| u32::try_from(n).ok());
                self.socket.handle_bind_failed(endpoint, errno.unwrap_or(0));
            }
        }
    }

    fn connect(&mut self, endpoint: EndpointId, addr: Endpoint) {
        let connected = StdTransport::connect_blocking(&addr, CONNECT_TIMEOUT);
        let now = self.now();
        match connected {
            Ok(stream) => {
                let address = stream.peer_address();
                if let Some(peer) = self.socket.handle_connected(endpoint, &address, now) {
                    self.streams.insert(peer, stream);
                }
            }
            Err(_) => self.socket.handle_connect_failed(endpoint, now),
        }
    }

    fn stop_listening(&mut self, endpoint: EndpointId) {
        // Dropping the listener removes its socket file.
        self.listeners.remove(&endpoint);
    }

    fn close_peer(&mut self, peer: PeerId) {
        self.streams.remove(&peer);
    }

    fn resume(&mut self, _: PeerId) {
        // Every step reads each peer the socket wants read.
    }

    fn authenticate(&mut self, peer: PeerId, _: ZapRequest) {
        // No ZAP handler here (an installed authenticator is the socket's own).
        let now = self.now();
        self.socket.handle_auth(peer, now, AuthReply::NoHandler);
    }

    fn monitor(&mut self, event: MonitorEvent) {
        self.monitor.push(event);
    }

    fn closed(&mut self) {
        self.streams.clear();
        self.listeners.clear();
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

    fn join(&mut self, group: &[u8]) {
        self.socket.join(group).expect("join");
        self.step();
    }

    fn leave(&mut self, group: &[u8]) {
        self.socket.leave(group).expect("leave");
        self.step();
    }

    fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String> {
        let id = self
            .socket
            .connect_peer(endpoint)
            .map_err(|e| e.to_string())?;
        self.step();
        Ok(id)
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
