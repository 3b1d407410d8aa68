//! The registry: streams and listeners registered with the poll under tokens, and the
//! socket's commands (listen, connect, close a peer, ...) carried out on them
//! ([`Commands`], run by `zmtp_driver::run_commands`).

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use zmtp_proto::socket::endpoint::{TcpSource, WsEndpoint};

use mio::net::TcpStream;
use mio::{Interest, Token};
use zmtp_driver::transport::connect_ipc;
use zmtp_driver::{
    listen_ipc, listen_on_fd, listen_tcp, open_udp, tcp_connected, Attempts, CommandHandler,
    Listening, StdTransport, TcpAddrs, TcpTuning, TlsSide, UdpOpen,
};
use zmtp_proto::socket::{
    Endpoint, EndpointId, MonitorEvent, PeerId, Socket as ProtoSocket, ZapRequest,
};
use zmtp_proto::Instant;

use super::waiters::Notify;
use super::work::queue;
use super::{Connecting, Io, Listener, PeerIo, RingRead, Shared, State, UdpIo};

/// What a host name is looked up for.
#[derive(Debug, Clone)]
enum Lookup {
    Listen,
    /// With the source address to connect from, if any.
    Connect(Option<TcpSource>),
}

impl Shared {
    pub(super) fn register(
        &self,
        st: &mut State,
        id: usize,
        io: Io,
        fd: RawFd,
        interest: Option<Interest>,
    ) -> io::Result<Token> {
        let token = Token(st.next_token);
        st.next_token += 1;
        if let Some(interest) = interest {
            self.registrar.register(fd, token, interest)?;
        }
        st.tokens.insert(token, (id, io));
        Ok(token)
    }

    pub(crate) fn add_peer(
        &self,
        st: &mut State,
        id: usize,
        peer: PeerId,
        stream: StdTransport,
        now: Instant,
    ) {
        // Writability only while a write is blocked (`Shared::set_interest`). A plain
        // stream of a ring backend is read by the ring: no readiness for input.
        let fd = stream.as_raw_fd();
        let ring = self.ring_plain(&stream);
        let interest = (!ring).then_some(Interest::READABLE);
        match self.register(st, id, Io::Peer(peer), fd, interest) {
            Ok(token) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    // Messages that carry their peer's properties carry its descriptor.
                    if s.core.options().properties_on_every_message {
                        s.core.set_peer_fd(peer, fd);
                    }
                    s.peers.insert(
                        peer,
                        PeerIo {
                            stream: Arc::new(stream),
                            token,
                            write_blocked: false,
                            read_queued: ring,
                            write_queued: false,
                            read_edge: false,
                            write_edge: false,
                            read_full: false,
                            silenced: false,
                            interest,
                            leased: false,
                            taken: VecDeque::new(),
                            ring: ring.then(RingRead::default),
                            lent: None,
                        },
                    );
                }
                // Whatever arrived before registration is read too.
                queue(st, id, peer, false);
            }
            Err(_) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.core.handle_closed(peer, now);
                }
            }
        }
    }

    pub(super) fn drop_peer(&self, st: &mut State, id: usize, peer: PeerId) {
        if let Some(io) = st.sockets.get_mut(&id).and_then(|s| s.peers.remove(&peer)) {
            let _ = self.registrar.deregister(io.stream.as_raw_fd(), io.token);
            st.tokens.remove(&io.token);
            // The stream closes when the I/O thread, if it is using it, lets go too.
        }
    }

    /// A peer's stream ended or failed.
    pub(super) fn lose_peer(&self, st: &mut State, id: usize, peer: PeerId, now: Instant) {
        self.drop_peer(st, id, peer);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.core.handle_closed(peer, now);
        }
    }

    /// A peer's read failed with `error`: as [`lose_peer`](Self::lose_peer), and the
    /// socket's monitor events say why (a TLS handshake's reason, an I/O error).
    pub(super) fn fail_peer(
        &self,
        st: &mut State,
        id: usize,
        peer: PeerId,
        now: Instant,
        error: &io::Error,
    ) {
        self.drop_peer(st, id, peer);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.core.handle_stream_failed(peer, now, &error.to_string());
        }
    }

    /// Listening began (or failed): register the listener and tell the socket and `bind`.
    fn listen_at(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        listening: io::Result<Listening>,
    ) {
        let registered = listening.and_then(|l| {
            let io = Io::Listener(endpoint);
            let token = self.register_listener(st, id, io, l.listener.as_fd())?;
            Ok((l, token))
        });
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        let reply = match registered {
            Ok((l, token)) => {
                s.core.handle_listening(endpoint, &l.endpoint);
                let listener = Listener {
                    address: l.endpoint.clone(),
                    listener: l.listener,
                    token,
                    _socket_file: l.socket_file,
                    ring: self.ring,
                };
                s.listeners.insert(endpoint, listener);
                // As the socket names it (`ws://` over the TCP listener).
                Ok(s.core.last_endpoint().to_string())
            }
            Err(e) => {
                let errno = e.raw_os_error().and_then(|n| u32::try_from(n).ok());
                s.core.handle_bind_failed(endpoint, errno.unwrap_or(0));
                Err(e)
            }
        };
        s.bound.insert(endpoint, reply);
    }

    /// Start a TCP connect to the next address of `attempts` that takes one; with none
    /// left, the connect failed.
    fn connect_each(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        mut attempts: Attempts,
        now: Instant,
    ) {
        while let Some(addr) = attempts.next() {
            let started = attempts.start(addr).and_then(|stream| {
                let stream = TcpStream::from_std(stream);
                // Completion (or failure) shows as writability.
                let both = Interest::READABLE | Interest::WRITABLE;
                let fd = stream.as_raw_fd();
                let token = self.register(st, id, Io::Connecting(endpoint), fd, Some(both))?;
                Ok((stream, token))
            });
            match started {
                Ok((stream, token)) => {
                    if let Some(s) = st.sockets.get_mut(&id) {
                        let c = Connecting {
                            stream,
                            token,
                            attempts,
                        };
                        s.connecting.insert(endpoint, c);
                    }
                    return;
                }
                Err(e) => attempts.failed(e),
            }
        }
        self.connect_failed(st, id, endpoint, &attempts.into_error(), now);
    }

    /// A connect failed with `error`: refused (`ECONNREFUSED`, which `ZMQ_RECONNECT_STOP`
    /// may make final), or otherwise.
    pub(super) fn connect_failed(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        error: &io::Error,
        now: Instant,
    ) {
        match st.sockets.get_mut(&id) {
            Some(s) if error.kind() == io::ErrorKind::ConnectionRefused => {
                s.core.note_connect_error(endpoint, error);
                s.core.handle_connect_refused(endpoint, now)
            }
            Some(s) => {
                s.core.note_connect_error(endpoint, error);
                s.core.handle_connect_failed(endpoint, now)
            }
            None => {}
        }
    }

    /// A TCP connect in progress became ready: connected, or on to the next address.
    pub(super) fn connect_ready(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        now: Instant,
    ) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        let Some(mut c) = s.connecting.remove(&endpoint) else {
            return;
        };
        let error = match c.stream.take_error() {
            Ok(None) => None,
            Ok(Some(e)) | Err(e) => Some(e),
        };
        if error.is_none()
            && c.stream
                .peer_addr()
                .is_err_and(|e| e.kind() == io::ErrorKind::NotConnected)
        {
            // Not there yet: the next writable edge tells.
            s.connecting.insert(endpoint, c);
            return;
        }
        let _ = self.registrar.deregister(c.stream.as_raw_fd(), c.token);
        st.tokens.remove(&c.token);
        let connected = match error {
            Some(e) => Err(e),
            None => {
                // The stream carries on as `std`'s, registered by descriptor as a peer.
                let stream = std::net::TcpStream::from(OwnedFd::from(c.stream));
                tcp_connected(&stream).map(|()| stream)
            }
        };
        let tls = st.sockets.get(&id).and_then(|s| s.tls_sides.get(&endpoint));
        let connected = connected.and_then(|stream| StdTransport::Tcp(stream).secure(tls));
        match connected {
            Ok(stream) => self.connected(st, id, endpoint, Some(stream), now),
            Err(e) => {
                c.attempts.failed(e);
                self.connect_each(st, id, endpoint, c.attempts, now);
            }
        }
    }

    /// Look `host` up on a thread of its own (the system resolver blocks, and neither the
    /// lock nor the I/O thread may wait for it), then listen or connect.
    fn lookup(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        host: String,
        port: u16,
        what: Lookup,
    ) {
        if let Some(s) = st.sockets.get_mut(&id) {
            s.resolving.insert(endpoint);
        }
        let me = self.me.clone();
        let on_thread = what.clone();
        let spawned = std::thread::Builder::new()
            .name("zmtp-mio-lookup".into())
            .spawn(move || {
                let addrs = zmtp_driver::lookup(&host, port);
                if let Some(shared) = me.upgrade() {
                    shared.resolved(id, endpoint, on_thread, addrs);
                }
            });
        if let Err(e) = spawned {
            if let Some(s) = st.sockets.get_mut(&id) {
                s.resolving.remove(&endpoint);
            }
            self.carry_on(st, id, endpoint, what, Err(e));
        }
    }

    /// A lookup finished (on its own thread): listen or connect, as `with` would.
    fn resolved(
        &self,
        id: usize,
        endpoint: EndpointId,
        what: Lookup,
        addrs: io::Result<Vec<SocketAddr>>,
    ) {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        if !s.resolving.remove(&endpoint) {
            // Stopped or closed meanwhile.
            return;
        }
        self.carry_on(&mut st, id, endpoint, what, addrs);
        self.pump(&mut st, id);
        // Timers and registrations changed: the I/O thread looks again; `bind` (or anyone
        // else waiting on the socket) too.
        let wake_io = std::mem::take(&mut st.parked);
        let mut notify = Notify::default();
        notify.touch(&mut st, id);
        self.inproc_touched(&mut st, &mut notify);
        drop(st);
        if wake_io {
            let _ = self.registrar.wake();
        }
        notify.signal(self);
    }

    fn carry_on(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        what: Lookup,
        addrs: io::Result<Vec<SocketAddr>>,
    ) {
        let now = self.now();
        match (what, addrs) {
            (Lookup::Listen, addrs) => {
                let tuning = tcp_tuning(st, id);
                self.listen_at(
                    st,
                    id,
                    endpoint,
                    addrs.and_then(|a| listen_tcp(&a, &tuning)),
                )
            }
            (Lookup::Connect(source), Ok(addrs)) => {
                let attempts = Attempts::new(addrs)
                    .from_source(source)
                    .with_tuning(tcp_tuning(st, id));
                self.connect_each(st, id, endpoint, attempts, now)
            }
            (Lookup::Connect(_), Err(e)) => self.connect_failed(st, id, endpoint, &e, now),
        }
    }

    /// A connect finished: with a stream, or failed.
    pub(super) fn connected(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        stream: Option<StdTransport>,
        now: Instant,
    ) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        match stream {
            Some(stream) => {
                if let Some(peer) = s.core.handle_connected_from(
                    endpoint,
                    &stream.peer_address(),
                    &stream.local_address(),
                    now,
                ) {
                    self.add_peer(st, id, peer, stream, now);
                }
            }
            None => s.core.handle_connect_failed(endpoint, now),
        }
    }

    pub(super) fn accept(&self, st: &mut State, id: usize, endpoint: EndpointId, now: Instant) {
        loop {
            let Some(l) = st
                .sockets
                .get_mut(&id)
                .and_then(|s| s.listeners.get_mut(&endpoint))
            else {
                return;
            };
            match l.listener.accept() {
                Ok((stream, address)) => {
                    self.take_accepted(st, id, endpoint, stream, &address, now)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// A connection accepted on `endpoint` (by readiness, or by the ring), with its peer's
    /// address: TLS for `wss://`, then handed to the socket, which makes it a peer or
    /// turns it away.
    pub(super) fn take_accepted(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        stream: StdTransport,
        address: &str,
        now: Instant,
    ) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        let Ok(stream) = stream.secure(s.tls_sides.get(&endpoint)) else {
            return;
        };
        // An ipc:// peer's credentials, read only if the core's IPC filters ask for them.
        let credentials = || match &stream {
            StdTransport::Unix(u) => zmtp_driver::peer_credentials(u.as_fd()).ok(),
            _ => None,
        };
        match s
            .core
            .handle_accepted_with_credentials(endpoint, address, now, credentials)
        {
            Some(peer) => self.add_peer(st, id, peer, stream, now),
            None => drop(stream),
        }
    }
}

/// A socket's commands, carried out under the lock.
pub(super) struct Commands<'a> {
    pub(super) shared: &'a Shared,
    pub(super) st: &'a mut State,
    pub(super) id: usize,
    /// The time, read once the first command needs it.
    pub(super) now: Option<Instant>,
}

impl Commands<'_> {
    fn now(&mut self) -> Instant {
        let shared = self.shared;
        *self.now.get_or_insert_with(|| shared.now())
    }

    /// Note the TLS side of a `wss://` endpoint to `listen` on or connect to, for its
    /// streams; an error when the socket's TLS settings cannot make it (no certificate).
    fn tls_side(&mut self, endpoint: EndpointId, addr: &Endpoint, listen: bool) -> io::Result<()> {
        let Some(s) = self.st.sockets.get_mut(&self.id) else {
            return Ok(());
        };
        match TlsSide::for_endpoint(&s.tls, addr, listen) {
            Ok(Some(side)) => {
                s.tls_sides.insert(endpoint, side);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl CommandHandler for Commands<'_> {
    fn socket(&mut self) -> Option<&mut ProtoSocket> {
        self.st.sockets.get_mut(&self.id).map(|s| &mut s.core)
    }

    fn listen(&mut self, endpoint: EndpointId, addr: Endpoint) {
        let (shared, id) = (self.shared, self.id);
        let given = self
            .st
            .sockets
            .get_mut(&id)
            .and_then(|s| s.listen_fds.remove(&endpoint));
        if let Err(e) = self.tls_side(endpoint, &addr, true) {
            return shared.listen_at(self.st, id, endpoint, Err(e));
        }
        if let Some(fd) = given {
            return shared.listen_at(self.st, id, endpoint, listen_on_fd(fd, &addr));
        }
        if let Endpoint::Inproc(name) = &addr {
            let now = self.now();
            return shared.inproc_listen(self.st, id, endpoint, name, now);
        }
        let listening = match &addr {
            Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => match TcpAddrs::of(tcp) {
                TcpAddrs::Known(a) => listen_tcp(&[a], &tcp_tuning(self.st, id)),
                TcpAddrs::Lookup { host, port } => {
                    return shared.lookup(self.st, id, endpoint, host, port, Lookup::Listen)
                }
            },
            Endpoint::Ipc(ipc) => listen_ipc(ipc),
            // inproc:// is listened on above; udp:// endpoints come as `OpenUdp`: never here.
            Endpoint::Inproc(_) | Endpoint::Udp(_) => Err(io::ErrorKind::Unsupported.into()),
        };
        shared.listen_at(self.st, id, endpoint, listening);
    }

    fn connect(&mut self, endpoint: EndpointId, addr: Endpoint) {
        let (shared, id, now) = (self.shared, self.id, self.now());
        if self.tls_side(endpoint, &addr, false).is_err() {
            return shared.connected(self.st, id, endpoint, None, now);
        }
        match &addr {
            Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => match TcpAddrs::of(tcp) {
                TcpAddrs::Known(a) => {
                    let attempts = Attempts::new(vec![a])
                        .from_source(tcp.source.clone())
                        .with_tuning(tcp_tuning(self.st, id));
                    shared.connect_each(self.st, id, endpoint, attempts, now)
                }
                TcpAddrs::Lookup { host, port } => {
                    let what = Lookup::Connect(tcp.source.clone());
                    shared.lookup(self.st, id, endpoint, host, port, what)
                }
            },
            Endpoint::Ipc(ipc) => match connect_ipc(ipc) {
                Ok(stream) => {
                    let stream = Some(StdTransport::Unix(stream));
                    shared.connected(self.st, id, endpoint, stream, now);
                }
                Err(e) => shared.connect_failed(self.st, id, endpoint, &e, now),
            },
            Endpoint::Inproc(name) => shared.inproc_connect(self.st, id, endpoint, name, now),
            // udp:// endpoints come as `OpenUdp`: never here.
            Endpoint::Udp(_) => shared.connected(self.st, id, endpoint, None, now),
        }
    }

    fn open_udp(&mut self, endpoint: EndpointId, open: UdpOpen) {
        let (shared, id) = (self.shared, self.id);
        let opened = open_udp(&open).and_then(|o| {
            let token = if open.bind {
                let fd = o.socket.as_raw_fd();
                let io = Io::Udp(endpoint);
                Some(shared.register(self.st, id, io, fd, Some(Interest::READABLE))?)
            } else {
                None
            };
            Ok((o, token))
        });
        let Some(s) = self.st.sockets.get_mut(&id) else {
            return;
        };
        match opened {
            Ok((o, token)) => {
                s.udp.insert(
                    endpoint,
                    UdpIo {
                        socket: o.socket,
                        token,
                        send_to: o.send_to,
                    },
                );
                if open.bind {
                    s.core.handle_listening(endpoint, &o.endpoint);
                    s.bound.insert(endpoint, Ok(o.endpoint));
                }
            }
            Err(e) => {
                let errno = e.raw_os_error().and_then(|n| u32::try_from(n).ok());
                s.core.handle_udp_failed(endpoint, errno.unwrap_or(0));
                if open.bind {
                    s.bound.insert(endpoint, Err(e));
                }
            }
        }
    }

    fn stop_listening(&mut self, endpoint: EndpointId) {
        self.shared.inproc_stop(self.st, self.id, endpoint);
        let st = &mut *self.st;
        let Some(s) = st.sockets.get_mut(&self.id) else {
            return;
        };
        s.resolving.remove(&endpoint);
        if let Some(u) = s.udp.remove(&endpoint) {
            if let Some(token) = u.token {
                let fd = u.socket.as_raw_fd();
                let _ = self.shared.registrar.deregister(fd, token);
                st.tokens.remove(&token);
            }
            return;
        }
        if let Some(l) = s.listeners.remove(&endpoint) {
            let _ = self
                .shared
                .registrar
                .release_listener(l.listener.as_raw_fd(), l.token);
            st.tokens.remove(&l.token);
            // Dropping the listener removes its socket file.
        }
    }

    fn close_peer(&mut self, peer: PeerId) {
        self.shared.drop_peer(self.st, self.id, peer);
        self.shared.inproc_unlink(self.st, self.id, peer);
    }

    fn resume(&mut self, peer: PeerId) {
        queue(self.st, self.id, peer, false);
    }

    /// An installed authenticator is applied by the socket itself; otherwise the
    /// context's ZAP handler, if a socket of the context is bound at its ZAP endpoint, is
    /// asked (`zap`), and answers later.
    fn authenticate(&mut self, peer: PeerId, request: ZapRequest) {
        let (shared, id, now) = (self.shared, self.id, self.now());
        let Some(answer) = shared.zap_ask(self.st, id, peer, &request, now) else {
            return;
        };
        if let Some(s) = self.socket() {
            s.handle_auth(peer, now, answer);
        }
    }

    fn monitor(&mut self, event: MonitorEvent) {
        if let Some(s) = self.st.sockets.get_mut(&self.id) {
            s.monitors.retain(|tx| tx.send(event.clone()).is_ok());
        }
    }

    fn closed(&mut self) {
        let (shared, id) = (self.shared, self.id);
        shared.inproc_closed(self.st, id);
        // A write queued or under way when LINGER ran out: what it carries may arrive yet.
        let writing =
            (self.st.sockets.get(&id)).is_some_and(|s| s.peers.values().any(|io| io.write_queued));
        let peers: Vec<PeerId> = self
            .st
            .sockets
            .get(&id)
            .map(|s| s.peers.keys().copied().collect())
            .unwrap_or_default();
        for peer in peers {
            shared.drop_peer(self.st, id, peer);
        }
        let endpoints: Vec<EndpointId> = self
            .st
            .sockets
            .get(&id)
            .map(|s| s.listeners.keys().chain(s.udp.keys()).copied().collect())
            .unwrap_or_default();
        for endpoint in endpoints {
            self.stop_listening(endpoint);
        }
        let st = &mut *self.st;
        if let Some(s) = st.sockets.get_mut(&id) {
            s.resolving.clear();
            for (_, c) in std::mem::take(&mut s.connecting) {
                let _ = shared.registrar.deregister(c.stream.as_raw_fd(), c.token);
                st.tokens.remove(&c.token);
            }
        }
        if let Some(s) = st.sockets.get_mut(&id) {
            s.closed = true;
            s.monitors.clear();
            if s.orphaned {
                // Nobody waits for its report: what LINGER cut off is said here.
                zmtp_driver::loss::report_loss_while(&s.core, writing);
                // Forgotten: the command loop ends here. A context's end waiting for it
                // looks again (notified under the lock: this runs deep in a pump, and
                // rarely).
                if st.forget(id, true) {
                    shared.wake_polled();
                }
            }
        }
    }
}

/// How socket `id`'s options set up its TCP sockets.
fn tcp_tuning(st: &State, id: usize) -> TcpTuning {
    st.sockets
        .get(&id)
        .map(|s| TcpTuning::of(s.core.options()))
        .unwrap_or_default()
}
