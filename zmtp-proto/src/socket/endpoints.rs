//! Endpoints: bind and connect intents for the driver, what it reports back (listening,
//! accepted, connected, failed), and reconnecting with backoff.

use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;

use bytes::Bytes;

use super::{
    Command, Ending, Endpoint, EndpointError, EndpointId, EndpointKind, EndpointState, Link,
    MonitorEventKind, Peer, PeerCredentials, PeerId, Socket, TcpAcceptFilter,
};
use crate::{Buffered, Config, Connection, Instant, SocketType};

impl Socket {
    /// Listen on `endpoint` (`tcp://*:5555`, `tcp://127.0.0.1:*`, `ipc://path`, `inproc://name`).
    ///
    /// `udp://` endpoints are checked as libzmq checks them (only DISH and DGRAM may bind
    /// one) and opened with [`Command::OpenUdp`] instead of `Listen`.
    pub fn bind(&mut self, endpoint: &str) -> Result<EndpointId, EndpointError> {
        let addr = Endpoint::parse(endpoint)?;
        addr.check_bind_for(self.socket_type())?;
        let id = EndpointId(self.new_id());
        self.endpoints
            .insert(id, peerless_state(&addr, EndpointKind::Bind));
        if let Endpoint::Udp(udp) = &addr {
            self.open_udp(id, udp.clone(), EndpointKind::Bind);
            return Ok(id);
        }
        self.commands
            .push_back(Command::Listen { endpoint: id, addr });
        Ok(id)
    }

    /// Connect to `endpoint`. Unless `immediate` is set, the peer's queue exists at once
    /// and outlives reconnections: messages sent now wait for the connection. A ROUTER
    /// can address it so only under a `CONNECT_ROUTING_ID` (otherwise it routes by the id
    /// learnt in the handshake); a STREAM gives it its routing id now (which
    /// [`Options::routing_id`](super::Options::routing_id) then reads, as libzmq's
    /// `ZMQ_ROUTING_ID` does).
    ///
    /// `udp://` endpoints are checked as libzmq checks them (only RADIO may connect to
    /// one) and opened with [`Command::OpenUdp`]: no peer, no stream, no reconnecting.
    pub fn connect(&mut self, endpoint: &str) -> Result<EndpointId, EndpointError> {
        let socks = self.opts.socks_proxy.clone().map(alloc::boxed::Box::new);
        let addr = match Endpoint::parse(endpoint) {
            // Through a SOCKS proxy, libzmq takes what follows the last `:` as the port
            // (`tcp://::1:5555`).
            Err(EndpointError::UnbracketedIpv6(rest)) if socks.is_some() => {
                Endpoint::unbracketed_tcp(&rest)?
            }
            parsed => parsed?,
        };
        addr.check_connect_for(self.socket_type())?;
        // Only `tcp://` goes through the proxy, as in libzmq; a STREAM socket's raw
        // streams connect directly (libzmq's go through the proxy too).
        let socks =
            socks.filter(|_| matches!(addr, Endpoint::Tcp(_)) && self.ty != SocketType::Stream);
        if let (Some(_), Endpoint::Tcp(tcp)) = (&socks, &addr) {
            if matches!(&tcp.host, super::endpoint::Host::Name(n) if n.len() > 255) {
                return Err(EndpointError::BadHost(endpoint.to_string()));
            }
        }
        let id = EndpointId(self.new_id());
        if let Endpoint::Udp(udp) = &addr {
            self.endpoints
                .insert(id, peerless_state(&addr, EndpointKind::Connect));
            self.open_udp(id, udp.clone(), EndpointKind::Connect);
            return Ok(id);
        }
        let peer = PeerId(self.new_id());
        let routing_id = self.opts.connect_routing_id.take().unwrap_or_default();
        // SERVER and PEER number their peers themselves.
        let routing_id = if self.rules.numbers_peers() {
            Bytes::new()
        } else {
            routing_id
        };
        self.endpoints.insert(
            id,
            EndpointState {
                text: addr.to_string(),
                addr: addr.clone(),
                kind: EndpointKind::Connect,
                peer: Some(peer),
                retry_at: None,
                ivl: self.opts.reconnect_ivl.unwrap_or_default(),
                dead: false,
                socks,
                failure: None,
            },
        );
        self.peers.insert(
            peer,
            Peer {
                endpoint: id,
                outbound: true,
                stream: None,
                attached: false,
                out: VecDeque::new(),
                inq: VecDeque::new(),
                routing_id,
                subs: Vec::new(),
                held: false,
                in_fq: false,
                properties: None,
                tagged: false,
                address: String::new(),
                local_address: None,
            },
        );
        if !self.opts.immediate {
            self.pattern_connecting(peer);
        }
        let addr = self
            .endpoints
            .get(&id)
            .map_or(addr, EndpointState::dial_addr);
        self.commands
            .push_back(Command::Connect { endpoint: id, addr });
        self.monitor(MonitorEventKind::ConnectDelayed, 0, id);
        Ok(id)
    }

    pub(super) fn find_endpoint(&self, endpoint: &str, kind: EndpointKind) -> Option<EndpointId> {
        let parsed = Endpoint::parse(endpoint).ok();
        self.endpoints
            .iter()
            .find(|(_, e)| {
                e.kind == kind && (e.text == endpoint || parsed.as_ref() == Some(&e.addr))
            })
            .map(|(id, _)| *id)
    }

    /// Stop listening on an endpoint given to `bind` (or its resolved form), and close the
    /// connections accepted on it, as libzmq does: their queued outbound messages are
    /// discarded, the messages already received from them stay readable. Returns false if
    /// no such endpoint is bound.
    pub fn unbind(&mut self, endpoint: &str, now: Instant) -> bool {
        let Some(id) = self.find_endpoint(endpoint, EndpointKind::Bind) else {
            return false;
        };
        self.monitor(MonitorEventKind::Closed, 0, id);
        let accepted: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, p)| p.endpoint == id && !p.outbound)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in accepted {
            self.end_stream(peer, Ending::Dropped, now);
            // A peer without a stream (none is kept, but nothing may outlive its endpoint).
            self.remove_peer(peer);
        }
        self.endpoints.remove(&id);
        self.forget_udp(id);
        self.commands
            .push_back(Command::StopListening { endpoint: id });
        true
    }

    /// Drop a connect endpoint and its peer (queued messages are discarded). Returns false
    /// if no such endpoint is connected.
    pub fn disconnect(&mut self, endpoint: &str, now: Instant) -> bool {
        let Some(id) = self.find_endpoint(endpoint, EndpointKind::Connect) else {
            return false;
        };
        if self.opts.reconnect_stop.after_disconnect {
            self.disconnected = true;
        }
        self.drop_connect_endpoint(id, now);
        true
    }

    /// Forget a connect endpoint and its peer, as `disconnect` does.
    fn drop_connect_endpoint(&mut self, id: EndpointId, now: Instant) {
        if let Some(peer) = self.endpoints.get(&id).and_then(|e| e.peer) {
            self.end_stream(peer, Ending::Dropped, now);
            self.remove_peer(peer);
            // libzmq terminates the pipe without delay: what it held is dropped.
            self.departed.retain(|d| d.peer != peer);
        }
        self.set_retry(id, None);
        self.endpoints.remove(&id);
        if self.forget_udp(id) {
            self.commands
                .push_back(Command::StopListening { endpoint: id });
        }
        // A lingering close may have waited only for this endpoint's queue.
        if self.closing.is_some() {
            self.try_finish_close(now);
        }
    }

    /// Forget a connect endpoint whose peer is not connected (STREAM: closed on request
    /// before it connected): what waited for the peer is discarded, what it sent before
    /// stays readable, a connection still being made is refused when it comes.
    pub(super) fn forget_unconnected_endpoint(&mut self, endpoint: EndpointId, peer: PeerId) {
        self.remove_peer(peer);
        self.set_retry(endpoint, None);
        self.endpoints.remove(&endpoint);
    }

    /// The driver is listening on `endpoint`, resolved to `resolved` (for example the port
    /// chosen for `tcp://127.0.0.1:*`).
    pub fn handle_listening(&mut self, endpoint: EndpointId, resolved: &str) {
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            e.text = match (&e.addr, resolved.strip_prefix("tcp://")) {
                // A driver listens on the TCP endpoint of `ws://` and reports it as such.
                (Endpoint::Ws(ws), Some(tcp)) => {
                    alloc::format!("{}://{tcp}{}", e.addr.transport(), ws.path)
                }
                _ => resolved.to_string(),
            };
            let resolved = e.text.as_str();
            self.last_endpoint = resolved.to_string();
            self.monitor(MonitorEventKind::Listening, 0, endpoint);
        }
    }

    /// The driver could not listen on `endpoint`; `errno` is reported to the monitor.
    pub fn handle_bind_failed(&mut self, endpoint: EndpointId, errno: u32) {
        self.monitor(MonitorEventKind::BindFailed, errno, endpoint);
        self.endpoints.remove(&endpoint);
    }

    /// A new stream for a peer of `endpoint`; `None` when a `ws://` stream cannot be set up
    /// (a host or path that cannot go into a request: the endpoint checks prevent it).
    pub(super) fn new_stream(
        &mut self,
        now: Instant,
        endpoint: EndpointId,
    ) -> Option<alloc::boxed::Box<Link>> {
        let mut config = Config::new(self.ty);
        // Validated in `new`/`set_options`: at most 255 bytes.
        let _ = config.set_identity(&self.opts.routing_id);
        config.handshake_timeout = self.opts.handshake_ivl;
        config.heartbeat_interval = self.opts.heartbeat_ivl;
        config.heartbeat_timeout = self.opts.heartbeat_timeout;
        config.heartbeat_ttl = self.opts.heartbeat_ttl;
        config.max_message_size = self.opts.maxmsgsize;
        config.max_message_frames = self.opts.max_message_frames;
        config.security = self.opts.security.clone();
        config.authenticate_null = !self.opts.zap_domain.is_empty();
        config.legacy_peers = self.opts.legacy_peers;
        // Checked in `new`/`set_options`: they fit.
        let _ = super::add_metadata(&mut config, &self.opts);
        if (self.endpoints.get(&endpoint)).is_some_and(|e| matches!(e.addr, Endpoint::Inproc(_))) {
            // libzmq joins inproc sockets with no handshake: any types, no security
            // mechanism (and so no ZAP).
            config.any_peer_type = true;
            config.security = crate::mechanism::Security::Null;
            config.authenticate_null = false;
        }
        if self.ty == SocketType::Stream {
            // No ZMTP: no handshake, no heartbeats, nothing of the connection's own.
            config.handshake_timeout = None;
            config.heartbeat_interval = None;
            return Some(Link::new(Buffered::wrap_raw(Connection::new(config, now))));
        }
        #[cfg(feature = "curve")]
        let conn = match &mut self.entropy {
            Some(rng) => {
                let mut seed = [0u8; 32];
                rng.fill(&mut seed);
                Connection::with_entropy(config, now, seed)
            }
            None => Connection::new(config, now),
        };
        #[cfg(not(feature = "curve"))]
        let conn = Connection::new(config, now);
        let ws = self.endpoints.get(&endpoint).and_then(|e| match &e.addr {
            Endpoint::Ws(_) => Some((e.addr.to_string(), e.kind == EndpointKind::Connect)),
            _ => None,
        });
        let socks = self
            .endpoints
            .get(&endpoint)
            .and_then(|e| match (&e.addr, &e.socks) {
                (Endpoint::Tcp(target), Some(proxy)) if e.kind == EndpointKind::Connect => {
                    crate::socks::SocksClient::new(target, proxy)
                }
                _ => None,
            });
        if let Some(client) = socks {
            return Some(Link::new(Buffered::wrap_socks(conn, client)));
        }
        let conn = match ws {
            Some((address, outbound)) => {
                let side_entropy = self.ws_entropy();
                let side = if outbound {
                    let target = crate::ws::Target::from_address(&address).ok()?;
                    crate::ws::WsSide::Client {
                        host: target.host(),
                        path: target.path(),
                        entropy: side_entropy,
                    }
                } else {
                    crate::ws::WsSide::Server
                };
                Buffered::wrap_ws(conn, &side).ok()?
            }
            _ => Buffered::wrap(conn),
        };
        Some(Link::new(conn))
    }

    /// 32 bytes for a `ws://` client's key and masks: from the CURVE entropy when the
    /// socket has it ([`Socket::set_entropy`]), else derived from the socket's seed.
    fn ws_entropy(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        #[cfg(feature = "curve")]
        if let Some(rng) = &mut self.entropy {
            rng.fill(&mut out);
            return out;
        }
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&crate::ws::splitmix64(&mut self.seed).to_le_bytes());
        }
        out
    }

    /// `ZMQ_TCP_ACCEPT_FILTER` and `ZMQ_IPC_FILTER_*`: whether a stream accepted on
    /// `endpoint` from `address` may stay. TCP and WebSocket endpoints judge `address`;
    /// `ipc://` endpoints judge the peer's `credentials`, asked for only when a filter is
    /// set (`None`: unknown, refused); other endpoints take everyone.
    fn accept_filter_passes(
        &self,
        endpoint: EndpointId,
        address: &str,
        credentials: impl FnOnce() -> Option<PeerCredentials>,
    ) -> bool {
        match self.endpoints.get(&endpoint).map(|e| &e.addr) {
            Some(Endpoint::Tcp(_) | Endpoint::Ws(_)) => {
                TcpAcceptFilter::accepts(&self.opts.tcp_accept_filters, address)
            }
            Some(Endpoint::Ipc(_)) => {
                let filters = &self.opts.ipc_accept_filters;
                filters.is_empty() || credentials().is_some_and(|c| filters.accepts(&c))
            }
            _ => true,
        }
    }

    /// A stream was accepted on a listening endpoint; returns the new peer, or `None` if the
    /// endpoint is gone or the socket is closing (close the stream).
    ///
    /// `address` is the peer's address: `IP:port` for tcp, as Rust's `SocketAddr` writes it
    /// (`127.0.0.1:53412`, `[::1]:5555`), and empty for ipc and inproc. Monitor events name
    /// the peer with it; ZAP's `Address` is its IP alone. A bare IP is taken too.
    ///
    /// A stream accepted on an `ipc://` endpoint is refused here when
    /// [`Options::ipc_accept_filters`](crate::socket::Options::ipc_accept_filters) are set:
    /// a driver that can read the peer's credentials calls
    /// [`handle_accepted_with_credentials`](Self::handle_accepted_with_credentials).
    pub fn handle_accepted(
        &mut self,
        endpoint: EndpointId,
        address: &str,
        now: Instant,
    ) -> Option<PeerId> {
        self.handle_accepted_with_credentials(endpoint, address, now, || None)
    }

    /// [`handle_accepted`](Self::handle_accepted) for a stream whose peer has
    /// credentials (`ipc://`): `credentials` reads them (`SO_PEERCRED`), and is called
    /// only when the endpoint is an `ipc://` one with
    /// [`Options::ipc_accept_filters`](crate::socket::Options::ipc_accept_filters) set;
    /// a peer they do not accept, or whose credentials are unknown (`None`), is refused
    /// with an `ACCEPT_FAILED` monitor event.
    pub fn handle_accepted_with_credentials(
        &mut self,
        endpoint: EndpointId,
        address: &str,
        now: Instant,
        credentials: impl FnOnce() -> Option<PeerCredentials>,
    ) -> Option<PeerId> {
        if self.closing.is_some() || !self.endpoints.contains_key(&endpoint) {
            return None;
        }
        if !self.accept_filter_passes(endpoint, address, credentials) {
            self.monitor(MonitorEventKind::AcceptFailed, 0, endpoint);
            return None;
        }
        let peer = PeerId(self.new_id());
        let stream = self.new_stream(now, endpoint)?;
        self.peers.insert(
            peer,
            Peer {
                endpoint,
                outbound: false,
                stream: Some(stream),
                attached: false,
                out: VecDeque::new(),
                inq: VecDeque::new(),
                routing_id: Bytes::new(),
                subs: Vec::new(),
                held: false,
                in_fq: false,
                properties: None,
                tagged: false,
                address: address.to_string(),
                local_address: None,
            },
        );
        self.mark_dirty(peer);
        self.rearm(peer);
        self.monitor_peer(MonitorEventKind::Accepted, 0, peer);
        if self.ty == SocketType::Stream {
            self.raw_stream_up(peer, now);
        }
        Some(peer)
    }

    /// A stream to a connect endpoint is open; returns its peer, or `None` if the endpoint
    /// is gone or no longer connects (close the stream). `address` is the peer's address, as
    /// for [`handle_accepted`](Self::handle_accepted).
    pub fn handle_connected(
        &mut self,
        endpoint: EndpointId,
        address: &str,
        now: Instant,
    ) -> Option<PeerId> {
        self.connected_stream(endpoint, address, None, now)
    }

    /// [`handle_connected`](Self::handle_connected), with the stream's local address
    /// (`IP:port` for tcp, empty for ipc): the monitor events of the connection carry it
    /// ([`MonitorEvent::local_address`](super::MonitorEvent::local_address)), as libzmq's
    /// v2 events name both ends.
    pub fn handle_connected_from(
        &mut self,
        endpoint: EndpointId,
        address: &str,
        local: &str,
        now: Instant,
    ) -> Option<PeerId> {
        self.connected_stream(endpoint, address, Some(local), now)
    }

    fn connected_stream(
        &mut self,
        endpoint: EndpointId,
        address: &str,
        local: Option<&str>,
        now: Instant,
    ) -> Option<PeerId> {
        let e = self.endpoints.get(&endpoint)?;
        if e.dead {
            return None;
        }
        let peer = e.peer?;
        let stream = self.new_stream(now, endpoint)?;
        let limit = self.rcv_limit();
        let p = self.peers.get_mut(&peer)?;
        if p.stream.is_some() {
            return None;
        }
        p.stream = Some(stream);
        p.address = address.to_string();
        p.local_address = local.map(ToString::to_string);
        // A new stream starts reading unless the queue is still above half.
        p.held = p.held && p.inq.len() > limit / 2;
        self.mark_dirty(peer);
        self.rearm(peer);
        self.monitor_peer(MonitorEventKind::Connected, 0, peer);
        if self.ty == SocketType::Stream {
            self.raw_stream_up(peer, now);
        }
        Some(peer)
    }

    /// Why the last attempt to connect `endpoint` failed (the driver's error, such as
    /// `Connection refused (os error 111)`; through a SOCKS5 proxy, it is named as the
    /// proxy's): a driver says it before
    /// [`handle_connect_failed`](Self::handle_connect_failed) or
    /// [`handle_connect_refused`](Self::handle_connect_refused), and the reports of what
    /// still waits for the endpoint name it ([`unsent_by_endpoint`](Self::unsent_by_endpoint),
    /// [`close_losses`](Self::close_losses)) until a handshake over it succeeds.
    pub fn note_connect_error(&mut self, endpoint: EndpointId, reason: &dyn core::fmt::Display) {
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            // Through a proxy, the connect that failed was the proxy's.
            e.failure = Some(match &e.socks {
                Some(proxy) => alloc::format!("SOCKS5 proxy {}: {reason}", proxy.address()),
                None => alloc::string::ToString::to_string(reason),
            });
        }
    }

    /// A connect to `endpoint` under way was given up before it answered (a driver handing
    /// the socket over to another, which has no such connect): it is tried again at once,
    /// not after the reconnect interval, since nothing failed.
    pub fn handle_connect_abandoned(&mut self, endpoint: EndpointId, now: Instant) {
        let live = self
            .endpoints
            .get(&endpoint)
            .is_some_and(|e| e.kind == EndpointKind::Connect && !e.dead && e.peer.is_some());
        if live && self.opts.reconnect_ivl.is_some() {
            self.set_retry(endpoint, Some(now));
        }
    }

    /// Connecting to `endpoint` failed; a retry is scheduled per the reconnect options.
    pub fn handle_connect_failed(&mut self, endpoint: EndpointId, now: Instant) {
        self.schedule_reconnect(endpoint, now);
    }

    /// Connecting to `endpoint` was refused (`ECONNREFUSED`: nothing listens there). With
    /// `RECONNECT_STOP_CONN_REFUSED` (or, for `ipc://` after a `disconnect`,
    /// `RECONNECT_STOP_AFTER_DISCONNECT`) the endpoint gives up: a `CLOSED` monitor event,
    /// and it is dropped as [`disconnect`](Self::disconnect) drops it. Otherwise as
    /// [`handle_connect_failed`](Self::handle_connect_failed).
    pub fn handle_connect_refused(&mut self, endpoint: EndpointId, now: Instant) {
        let stop = self.opts.reconnect_stop;
        let ipc = self
            .endpoints
            .get(&endpoint)
            .is_some_and(|e| matches!(e.addr, Endpoint::Ipc(_)));
        if stop.conn_refused || (stop.after_disconnect && self.disconnected && ipc) {
            if !self.endpoints.contains_key(&endpoint) {
                return;
            }
            self.monitor(MonitorEventKind::Closed, 0, endpoint);
            self.drop_connect_endpoint(endpoint, now);
            return;
        }
        self.handle_connect_failed(endpoint, now);
    }

    pub(super) fn schedule_reconnect(&mut self, endpoint: EndpointId, now: Instant) {
        if self.closing.is_some() && !self.has_waiting(endpoint) {
            return;
        }
        let Some(base) = self.opts.reconnect_ivl else {
            return;
        };
        let max = self.opts.reconnect_ivl_max;
        let Some(e) = self.endpoints.get_mut(&endpoint) else {
            return;
        };
        if e.dead || e.kind != EndpointKind::Connect {
            return;
        }
        let ivl = e.ivl.max(base);
        e.ivl = if max > base { (ivl * 2).min(max) } else { base };
        self.set_retry(endpoint, Some(now + ivl));
        let ms = u32::try_from(ivl.as_millis()).unwrap_or(u32::MAX);
        self.monitor(MonitorEventKind::ConnectRetried, ms, endpoint);
    }

    /// Whether messages wait for a connect endpoint's peer to connect.
    pub(super) fn has_waiting(&self, endpoint: EndpointId) -> bool {
        self.endpoints
            .get(&endpoint)
            .and_then(|e| e.peer)
            .and_then(|peer| self.peers.get(&peer))
            .is_some_and(|p| !p.out.is_empty())
    }
}

/// The state of an endpoint without a peer of its own: a bind, or a `udp://` connect
/// (which never reconnects).
fn peerless_state(addr: &Endpoint, kind: EndpointKind) -> EndpointState {
    EndpointState {
        text: addr.to_string(),
        addr: addr.clone(),
        kind,
        peer: None,
        retry_at: None,
        ivl: Duration::ZERO,
        dead: false,
        socks: None,
        failure: None,
    }
}
