//! The I/O thread of a [`Context`](crate::Context) and the state it shares with the
//! application's threads.
//!
//! Everything sits behind one mutex: the sockets' state machines and their streams.
//! Application calls lock it, call into the state machine and leave the writing to the
//! I/O thread (one wake-up per batch of output, as libzmq signals its I/O thread); the I/O
//! thread waits in `mio::Poll` for readiness or the earliest timer, then reads, writes and
//! fires timers. Every protocol decision is the core's; this file moves bytes.

use std::collections::BTreeMap;
use std::io::{self, IoSlice, Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant as StdInstant};

use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use zmtp_proto::socket::endpoint::IpcEndpoint;
use zmtp_proto::socket::{
    AuthReply, Authenticator, Endpoint, EndpointId, Event, MonitorEvent, PeerId,
    Socket as ProtoSocket,
};
use zmtp_proto::Instant;

/// The waker's token; streams and listeners count up from 1.
const WAKER: Token = Token(0);
/// Most segments gathered into one vectored write.
const MAX_CHUNKS: usize = 64;
/// Room made in a read buffer when it runs low, and the low mark.
const READ_RESERVE: usize = 64 * 1024;
const READ_MIN_SPARE: usize = 2 * 1024;
/// Most reads from one stream per readiness event, so one busy peer cannot starve others.
const READS_PER_EVENT: usize = 16;

/// What a context's threads share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Signalled whenever a socket may have become readable, writable or closed.
    pub(crate) changed: Condvar,
    registry: Registry,
    waker: Waker,
    start: StdInstant,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The I/O thread holds only a weak reference: wake it to find that out and end.
        let _ = self.waker.wake();
    }
}

/// A stream to a peer.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn peer_ip(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
            Stream::Unix(_) => String::new(),
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, Option<String>),
}

struct PeerIo {
    stream: Stream,
    token: Token,
    /// A write would block: the writable edge resumes it.
    write_blocked: bool,
    /// The I/O thread is to write this peer's output.
    flush: bool,
}

/// What a token stands for.
#[derive(Debug, Clone, Copy)]
enum Io {
    Peer(PeerId),
    Listener(EndpointId),
    Connecting(EndpointId),
}

/// One socket's state machine and the streams it directs.
pub(crate) struct Sock {
    pub(crate) core: ProtoSocket,
    peers: BTreeMap<PeerId, PeerIo>,
    listeners: BTreeMap<EndpointId, (Listener, Token)>,
    connecting: BTreeMap<EndpointId, (TcpStream, Token)>,
    pub(crate) monitors: Vec<mpsc::Sender<MonitorEvent>>,
    pub(crate) authenticator: Option<Authenticator>,
    /// Results of binds not yet collected by `bind`.
    pub(crate) bound: BTreeMap<EndpointId, io::Result<String>>,
    pub(crate) closed: bool,
    /// The application dropped its handle: forget the socket once it has closed.
    pub(crate) orphaned: bool,
}

/// Everything behind the mutex.
pub(crate) struct State {
    pub(crate) sockets: BTreeMap<usize, Sock>,
    tokens: BTreeMap<Token, (usize, Io)>,
    next_token: usize,
    next_socket: usize,
    /// Whether the I/O thread has writes to do (set by application calls).
    flush_requested: bool,
    /// Streams that stopped reading with data perhaps left (edge-triggered readiness will
    /// not repeat it): read again next turn.
    reread: Vec<(usize, PeerId)>,
}

impl Shared {
    /// A new context: the shared state and its I/O thread.
    pub(crate) fn start() -> io::Result<Arc<Shared>> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let registry = poll.registry().try_clone()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sockets: BTreeMap::new(),
                tokens: BTreeMap::new(),
                next_token: 1,
                next_socket: 1,
                flush_requested: false,
                reread: Vec::new(),
            }),
            changed: Condvar::new(),
            registry,
            waker,
            start: StdInstant::now(),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("zmtp-mio".into())
            .spawn(move || io_thread(poll, weak))?;
        Ok(shared)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned state means a panic elsewhere; the state machine itself never panics.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The std instant of a core instant.
    fn at(&self, t: Instant) -> StdInstant {
        self.start + Duration::from_micros(t.as_micros())
    }

    /// Add a socket; returns its id.
    pub(crate) fn add(&self, core: ProtoSocket) -> usize {
        let mut st = self.lock();
        let id = st.next_socket;
        st.next_socket += 1;
        st.sockets.insert(
            id,
            Sock {
                core,
                peers: BTreeMap::new(),
                listeners: BTreeMap::new(),
                connecting: BTreeMap::new(),
                monitors: Vec::new(),
                authenticator: None,
                bound: BTreeMap::new(),
                closed: false,
                orphaned: false,
            },
        );
        id
    }

    /// Run `f` on a socket from an application thread, then carry out what it caused.
    /// Writes are left to the I/O thread, which is woken once per batch. `wake` also wakes
    /// it when timers or registrations may have changed.
    pub(crate) fn with<R>(
        &self,
        id: usize,
        wake: bool,
        f: impl FnOnce(&mut Sock) -> R,
    ) -> Option<R> {
        let mut st = self.lock();
        let r = f(st.sockets.get_mut(&id)?);
        let now = self.now();
        let flush = self.pump(&mut st, id, now, false);
        // Reads resumed here (RCVHWM drained) may have stopped early: the I/O thread
        // carries on with them.
        let reread = !st.reread.is_empty();
        drop(st);
        if wake || flush || reread {
            let _ = self.waker.wake();
        }
        self.changed.notify_all();
        Some(r)
    }

    /// Wait on the condition variable until `deadline` (or forever).
    pub(crate) fn wait<'a>(
        &self,
        st: MutexGuard<'a, State>,
        deadline: Option<StdInstant>,
    ) -> MutexGuard<'a, State> {
        match deadline {
            None => self.changed.wait(st).unwrap_or_else(|e| e.into_inner()),
            Some(d) => {
                let left = d.saturating_duration_since(StdInstant::now());
                self.changed
                    .wait_timeout(st, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0)
            }
        }
    }

    /// Carry out a socket's events and output. From the I/O thread (`inline`) writes
    /// happen now; from the application they are requested from the I/O thread. Returns
    /// whether the I/O thread must be woken for writes.
    fn pump(&self, st: &mut State, id: usize, now: Instant, inline: bool) -> bool {
        let mut wake = false;
        loop {
            let mut busy = false;
            while let Some(event) = st.sockets.get_mut(&id).and_then(|s| s.core.poll_event()) {
                busy = true;
                self.handle_event(st, id, event, now);
            }
            while let Some(peer) = st.sockets.get_mut(&id).and_then(|s| s.core.next_dirty()) {
                if inline {
                    busy = true;
                    self.write_peer(st, id, peer, now);
                } else if let Some(io) =
                    st.sockets.get_mut(&id).and_then(|s| s.peers.get_mut(&peer))
                {
                    if !io.flush {
                        io.flush = true;
                        if !st.flush_requested {
                            st.flush_requested = true;
                            wake = true;
                        }
                    }
                }
            }
            if !busy {
                break;
            }
        }
        wake
    }

    fn register(
        &self,
        st: &mut State,
        id: usize,
        io: Io,
        source: &mut dyn mio::event::Source,
        interest: Interest,
    ) -> io::Result<Token> {
        let token = Token(st.next_token);
        st.next_token += 1;
        self.registry.register(source, token, interest)?;
        st.tokens.insert(token, (id, io));
        Ok(token)
    }

    fn add_peer(&self, st: &mut State, id: usize, peer: PeerId, mut stream: Stream, now: Instant) {
        let both = Interest::READABLE | Interest::WRITABLE;
        match self.register(st, id, Io::Peer(peer), stream.source(), both) {
            Ok(token) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.peers.insert(
                        peer,
                        PeerIo {
                            stream,
                            token,
                            write_blocked: false,
                            flush: false,
                        },
                    );
                }
                // Whatever arrived before registration is read now (edge-triggered).
                self.read_peer(st, id, peer, now);
            }
            Err(_) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.core.handle_closed(peer, now);
                }
            }
        }
    }

    fn drop_peer(&self, st: &mut State, id: usize, peer: PeerId) {
        if let Some(mut io) = st.sockets.get_mut(&id).and_then(|s| s.peers.remove(&peer)) {
            let _ = self.registry.deregister(io.stream.source());
            st.tokens.remove(&io.token);
        }
    }

    fn handle_event(&self, st: &mut State, id: usize, event: Event, now: Instant) {
        match event {
            Event::Listen { endpoint, addr } => {
                let result = listen(&addr);
                let reply = match result {
                    Ok((mut listener, resolved)) => {
                        let source: &mut dyn mio::event::Source = match &mut listener {
                            Listener::Tcp(l) => l,
                            Listener::Unix(l, _) => l,
                        };
                        match self.register(
                            st,
                            id,
                            Io::Listener(endpoint),
                            source,
                            Interest::READABLE,
                        ) {
                            Ok(token) => {
                                if let Some(s) = st.sockets.get_mut(&id) {
                                    s.core.handle_listening(endpoint, &resolved);
                                    s.listeners.insert(endpoint, (listener, token));
                                }
                                Ok(resolved)
                            }
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                };
                if let Some(s) = st.sockets.get_mut(&id) {
                    if let Err(e) = &reply {
                        let errno = e.raw_os_error().and_then(|n| u32::try_from(n).ok());
                        s.core.handle_bind_failed(endpoint, errno.unwrap_or(0));
                    }
                    s.bound.insert(endpoint, reply);
                }
            }
            Event::Connect { endpoint, addr } => self.connect(st, id, endpoint, &addr, now),
            Event::StopListening { endpoint } => {
                if let Some((mut l, token)) = st
                    .sockets
                    .get_mut(&id)
                    .and_then(|s| s.listeners.remove(&endpoint))
                {
                    match &mut l {
                        Listener::Tcp(t) => {
                            let _ = self.registry.deregister(t);
                        }
                        Listener::Unix(u, path) => {
                            let _ = self.registry.deregister(u);
                            if let Some(p) = path {
                                let _ = std::fs::remove_file(p);
                            }
                        }
                    }
                    st.tokens.remove(&token);
                }
            }
            Event::ClosePeer { peer } => self.drop_peer(st, id, peer),
            Event::Resume { peer } => self.read_peer(st, id, peer, now),
            Event::Authenticate { peer, request } => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    let address = s
                        .peers
                        .get(&peer)
                        .map(|io| io.stream.peer_ip())
                        .unwrap_or_default();
                    let reply = match &s.authenticator {
                        Some(auth) => auth.check(&address, &request),
                        None => AuthReply::NoHandler,
                    };
                    s.core.handle_auth(peer, now, reply);
                }
            }
            Event::Monitor(m) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.monitors.retain(|tx| tx.send(m.clone()).is_ok());
                }
            }
            Event::Closed => {
                let peers: Vec<PeerId> = st
                    .sockets
                    .get(&id)
                    .map(|s| s.peers.keys().copied().collect())
                    .unwrap_or_default();
                for peer in peers {
                    self.drop_peer(st, id, peer);
                }
                let endpoints: Vec<EndpointId> = st
                    .sockets
                    .get(&id)
                    .map(|s| s.listeners.keys().copied().collect())
                    .unwrap_or_default();
                for endpoint in endpoints {
                    self.handle_event(st, id, Event::StopListening { endpoint }, now);
                }
                if let Some(s) = st.sockets.get_mut(&id) {
                    for (_, (mut stream, token)) in std::mem::take(&mut s.connecting) {
                        let _ = self.registry.deregister(&mut stream);
                        st.tokens.remove(&token);
                    }
                }
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.closed = true;
                    s.monitors.clear();
                    if s.orphaned {
                        st.sockets.remove(&id);
                    }
                }
            }
            _ => {}
        }
    }

    fn connect(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        addr: &Endpoint,
        now: Instant,
    ) {
        let stream = match addr {
            Endpoint::Tcp(tcp) => {
                let target = tcp.socket_addrs().ok().and_then(|a| a.into_iter().next());
                match target.map(TcpStream::connect) {
                    Some(Ok(mut stream)) => {
                        // Completion (or failure) shows as writability.
                        let both = Interest::READABLE | Interest::WRITABLE;
                        match self.register(st, id, Io::Connecting(endpoint), &mut stream, both) {
                            Ok(token) => {
                                if let Some(s) = st.sockets.get_mut(&id) {
                                    s.connecting.insert(endpoint, (stream, token));
                                }
                                return;
                            }
                            Err(_) => None,
                        }
                    }
                    _ => None,
                }
            }
            Endpoint::Ipc(ipc) => connect_unix(ipc).ok().map(Stream::Unix),
            Endpoint::Inproc(_) => None,
        };
        self.connected(st, id, endpoint, stream, now);
    }

    /// A connect finished: with a stream, or failed.
    fn connected(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        stream: Option<Stream>,
        now: Instant,
    ) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        match stream {
            Some(stream) => {
                if let Some(peer) = s.core.handle_connected(endpoint, now) {
                    self.add_peer(st, id, peer, stream, now);
                }
            }
            None => s.core.handle_connect_failed(endpoint, now),
        }
    }

    fn write_peer(&self, st: &mut State, id: usize, peer: PeerId, now: Instant) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        let Some(io) = s.peers.get_mut(&peer) else {
            return;
        };
        io.flush = false;
        loop {
            let mut chunks: [&[u8]; MAX_CHUNKS] = [&[]; MAX_CHUNKS];
            let n = s.core.transmit_chunks(peer, &mut chunks);
            let Some(io) = s.peers.get_mut(&peer) else {
                return;
            };
            if n == 0 {
                io.write_blocked = false;
                return;
            }
            let slices: [IoSlice<'_>; MAX_CHUNKS] =
                std::array::from_fn(|i| IoSlice::new(chunks[i]));
            match io.stream.write_vectored(&slices[..n]) {
                Ok(written) => s.core.advance(peer, written),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    io.write_blocked = true;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.drop_peer(st, id, peer);
                    if let Some(s) = st.sockets.get_mut(&id) {
                        s.core.handle_closed(peer, now);
                    }
                    return;
                }
            }
        }
    }

    /// Read what the stream has (edge-triggered: until it would block, or the socket's
    /// receive queue is full, when `Event::Resume` brings us back).
    fn read_peer(&self, st: &mut State, id: usize, peer: PeerId, now: Instant) {
        for _ in 0..READS_PER_EVENT {
            let Some(s) = st.sockets.get_mut(&id) else {
                return;
            };
            if !s.core.wants_read(peer) {
                return;
            }
            let Some(io) = s.peers.get_mut(&peer) else {
                return;
            };
            let Some(buf) = s.core.read_buf(peer) else {
                return;
            };
            if buf.capacity() - buf.len() < READ_MIN_SPARE {
                buf.reserve(READ_RESERVE);
            }
            let len = buf.len();
            let cap = buf.capacity();
            buf.resize(cap, 0);
            let result = buf
                .get_mut(len..)
                .map_or(Ok(0), |spare| io.stream.read(spare));
            let got = *result.as_ref().unwrap_or(&0);
            buf.truncate(len + got);
            match result {
                Ok(0) => {
                    self.drop_peer(st, id, peer);
                    if let Some(s) = st.sockets.get_mut(&id) {
                        s.core.handle_closed(peer, now);
                    }
                    return;
                }
                Ok(_) => s.core.handle_input(peer, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.drop_peer(st, id, peer);
                    if let Some(s) = st.sockets.get_mut(&id) {
                        s.core.handle_closed(peer, now);
                    }
                    return;
                }
            }
        }
        // More may wait, and no new edge will say so: read again on the next turn of the
        // loop rather than starve the other streams.
        st.reread.push((id, peer));
    }

    fn accept(&self, st: &mut State, id: usize, endpoint: EndpointId, now: Instant) {
        loop {
            let Some((listener, _)) = st
                .sockets
                .get_mut(&id)
                .and_then(|s| s.listeners.get_mut(&endpoint))
            else {
                return;
            };
            let stream = match listener {
                Listener::Tcp(l) => l.accept().map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                }),
                Listener::Unix(l, _) => l.accept().map(|(s, _)| Stream::Unix(s)),
            };
            match stream {
                Ok(stream) => {
                    let Some(s) = st.sockets.get_mut(&id) else {
                        return;
                    };
                    match s.core.handle_accepted(endpoint, now) {
                        Some(peer) => self.add_peer(st, id, peer, stream, now),
                        None => drop(stream),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// One readiness event from the poll.
    fn ready(&self, st: &mut State, event: &mio::event::Event, now: Instant) {
        let Some(&(id, io)) = st.tokens.get(&event.token()) else {
            return;
        };
        match io {
            Io::Listener(endpoint) => self.accept(st, id, endpoint, now),
            Io::Connecting(endpoint) => {
                let Some((mut stream, token)) = st
                    .sockets
                    .get_mut(&id)
                    .and_then(|s| s.connecting.remove(&endpoint))
                else {
                    return;
                };
                let _ = self.registry.deregister(&mut stream);
                st.tokens.remove(&token);
                // Connected when there is no error and a peer address, and it did not meet
                // itself (simultaneous open on a free local port).
                let ok = matches!(stream.take_error(), Ok(None))
                    && stream.peer_addr().is_ok()
                    && stream.local_addr().ok() != stream.peer_addr().ok();
                let stream = ok.then(|| {
                    let _ = stream.set_nodelay(true);
                    Stream::Tcp(stream)
                });
                self.connected(st, id, endpoint, stream, now);
            }
            Io::Peer(peer) => {
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.read_peer(st, id, peer, now);
                }
                let flush = st
                    .sockets
                    .get(&id)
                    .and_then(|s| s.peers.get(&peer))
                    .is_some_and(|io| io.write_blocked || io.flush);
                if event.is_writable() && flush {
                    self.write_peer(st, id, peer, now);
                }
            }
        }
        self.pump(st, id, now, true);
    }
}

fn abstract_addr(name: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
}

fn connect_unix(ipc: &IpcEndpoint) -> io::Result<UnixStream> {
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
fn listen(addr: &Endpoint) -> io::Result<(Listener, String)> {
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

/// The I/O thread: wait for readiness or the earliest timer, handle it, repeat, until the
/// context is gone.
fn io_thread(mut poll: Poll, shared: Weak<Shared>) {
    let mut events = Events::with_capacity(256);
    loop {
        let timeout = {
            let Some(sh) = shared.upgrade() else {
                return;
            };
            let mut st = sh.lock();
            let now = sh.now();
            // Writes the application asked for since the last turn.
            if st.flush_requested {
                st.flush_requested = false;
                let todo: Vec<(usize, PeerId)> = st
                    .sockets
                    .iter()
                    .flat_map(|(id, s)| {
                        s.peers
                            .iter()
                            .filter(|(_, io)| io.flush)
                            .map(move |(p, _)| (*id, *p))
                    })
                    .collect();
                for (id, peer) in todo {
                    sh.write_peer(&mut st, id, peer, now);
                    sh.pump(&mut st, id, now, true);
                }
            }
            for (id, peer) in std::mem::take(&mut st.reread) {
                sh.read_peer(&mut st, id, peer, now);
                sh.pump(&mut st, id, now, true);
            }
            let deadline = st
                .sockets
                .values()
                .filter_map(|s| s.core.poll_timeout())
                .min();
            let busy = !st.reread.is_empty() || st.flush_requested;
            drop(st);
            sh.changed.notify_all();
            if busy {
                Some(Duration::ZERO)
            } else {
                deadline.map(|t| sh.at(t).saturating_duration_since(StdInstant::now()))
            }
        };
        if poll.poll(&mut events, timeout).is_err() {
            // EINTR and the like: go round again.
            continue;
        }
        let Some(sh) = shared.upgrade() else {
            return;
        };
        let mut st = sh.lock();
        let now = sh.now();
        for event in events.iter() {
            if event.token() != WAKER {
                sh.ready(&mut st, event, now);
            }
        }
        // Timers.
        let due: Vec<usize> = st
            .sockets
            .iter()
            .filter(|(_, s)| s.core.poll_timeout().is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(s) = st.sockets.get_mut(&id) {
                s.core.handle_timeout(now);
            }
            sh.pump(&mut st, id, now, true);
        }
        drop(st);
        sh.changed.notify_all();
    }
}
