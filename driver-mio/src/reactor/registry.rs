//! The registry: streams and listeners registered with the poll under tokens, and the
//! socket's events (listen, connect, close a peer, ...) carried out on them.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Interest, Token};
use zmtp_proto::socket::{AuthReply, Command, Endpoint, EndpointId, PeerId};
use zmtp_proto::Instant;

use super::transport::{connect_unix, listen, Listener, Stream};
use super::work::queue;
use super::{Io, PeerIo, Shared, State};

impl Shared {
    pub(super) fn register(
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

    pub(super) fn add_peer(
        &self,
        st: &mut State,
        id: usize,
        peer: PeerId,
        stream: Stream,
        now: Instant,
    ) {
        let both = Interest::READABLE | Interest::WRITABLE;
        let fd = stream.fd();
        match self.register(st, id, Io::Peer(peer), &mut SourceFd(&fd), both) {
            Ok(token) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.peers.insert(
                        peer,
                        PeerIo {
                            stream: Arc::new(stream),
                            token,
                            write_blocked: false,
                            read_queued: false,
                            write_queued: false,
                            read_edge: false,
                            write_edge: false,
                            taken: VecDeque::new(),
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
            let _ = self.registry.deregister(&mut SourceFd(&io.stream.fd()));
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

    pub(super) fn handle_command(&self, st: &mut State, id: usize, command: Command, now: Instant) {
        match command {
            Command::Listen { endpoint, addr } => {
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
            Command::Connect { endpoint, addr } => self.connect(st, id, endpoint, &addr, now),
            Command::StopListening { endpoint } => {
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
            Command::ClosePeer { peer } => self.drop_peer(st, id, peer),
            Command::Resume { peer } => queue(st, id, peer, false),
            // An installed authenticator is applied by the socket itself; this driver has
            // no ZAP handler to ask.
            Command::Authenticate { peer, .. } => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.core.handle_auth(peer, now, AuthReply::NoHandler);
                }
            }
            Command::Closed => {
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
                    self.handle_command(st, id, Command::StopListening { endpoint }, now);
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

    pub(super) fn connect(
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
    pub(super) fn connected(
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
                if let Some(peer) = s.core.handle_connected(endpoint, &stream.peer_ip(), now) {
                    self.add_peer(st, id, peer, stream, now);
                }
            }
            None => s.core.handle_connect_failed(endpoint, now),
        }
    }

    pub(super) fn accept(&self, st: &mut State, id: usize, endpoint: EndpointId, now: Instant) {
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
                    match s.core.handle_accepted(endpoint, &stream.peer_ip(), now) {
                        Some(peer) => self.add_peer(st, id, peer, stream, now),
                        None => drop(stream),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}
