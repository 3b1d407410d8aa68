//! Peers: their streams ending, and whether the pattern may route to them.

use super::timers::TimerKey;
use super::{
    auth, monitor, Command, Departed, Ending, MonitorEventKind, PeerId, PeerStats, Socket,
};
use bytes::Bytes;

use super::Message;
use crate::{Connection, Error, Instant, SocketType};

impl Socket {
    /// The connection of a peer's current stream (peer identity, socket type, version).
    pub fn connection(&self, peer: PeerId) -> Option<&Connection> {
        Some(self.peers.get(&peer)?.stream.as_ref()?.conn.connection())
    }

    /// Tell the socket the descriptor of `peer`'s stream (a driver that has one, after
    /// handing the stream over): the peer's properties carry it
    /// ([`PeerProperties::fd`](super::PeerProperties::fd)), for libzmq's `ZMQ_SRCFD`.
    pub fn set_peer_fd(&mut self, peer: PeerId, fd: i32) {
        if let Some(p) = self.peers.get_mut(&peer) {
            if p.properties
                .as_ref()
                .is_none_or(|props| props.fd != Some(fd))
            {
                p.properties_mut().fd = Some(fd);
            }
        }
    }

    /// Queue sizes of a peer, for monitoring and tests.
    pub fn peer_stats(&self, peer: PeerId) -> Option<PeerStats> {
        let p = self.peers.get(&peer)?;
        let stream = p.stream.as_ref();
        Some(PeerStats {
            attached: p.attached,
            established: stream.is_some_and(|s| s.established),
            routing_id: p.routing_id.clone(),
            queued_out: p.out.len() + stream.map_or(0, |s| s.encoded_ends.len()),
            queued_in: p.inq.len(),
            unsent_bytes: stream.map_or(0, |s| s.conn.queued_len()),
            unread_bytes: stream.map_or(0, |s| s.conn.buffered_input()),
        })
    }

    /// Queue a PIPES_STATS monitor event for each routable peer, in the order the peers
    /// came: the peer's endpoint and address, and how many messages wait in its queues
    /// ([`QueueCounts`](super::QueueCounts), from [`peer_stats`](Self::peer_stats)), as
    /// libzmq's `zmq_socket_monitor_pipes_stats` does. Returns how many were queued.
    /// Fails when the monitor does not take PIPES_STATS
    /// ([`set_monitor`](Self::set_monitor)) or when no peer is routable.
    pub fn monitor_pipes_stats(&mut self) -> Result<usize, super::PipesStatsError> {
        let kind = MonitorEventKind::PipesStats;
        if self.monitor_mask & kind.value() == 0 {
            return Err(super::PipesStatsError::NotMonitored);
        }
        let peers: alloc::vec::Vec<PeerId> = (self.peers.iter())
            .filter(|(_, p)| p.attached)
            .map(|(&id, _)| id)
            .collect();
        if peers.is_empty() {
            return Err(super::PipesStatsError::NoPeers);
        }
        for &peer in &peers {
            let Some(stats) = self.peer_stats(peer) else {
                continue;
            };
            self.monitor_peer(kind, 0, peer);
            if let Some(event) = self.monitors.back_mut() {
                event.queues = Some(super::QueueCounts {
                    outbound: stats.queued_out as u64,
                    inbound: stats.queued_in as u64,
                });
            }
        }
        Ok(peers.len())
    }

    /// How many peers a message could reach now, before its topic or group is looked at:
    /// for an XPUB, its subscribers that subscribed to anything (with `INVERT_MATCHING`,
    /// every routable peer); for a RADIO, its dishes
    /// that joined any group; for every other type (a PUB among them), its routable
    /// (connected, handshake done) peers. A PUB's [`Sent::Dropped`](super::Sent::Dropped)
    /// with an audience is a message no subscriber's topic matched; without one, a
    /// message nobody could have had.
    pub fn audience(&self) -> usize {
        match self.ty {
            crate::SocketType::XPub if self.opts.invert_matching => self.attached.len(),
            crate::SocketType::XPub | crate::SocketType::Radio => self
                .attached
                .iter()
                .filter(|p| self.peers.get(p).is_some_and(|p| !p.subs.is_empty()))
                .count(),
            _ => self.attached.len(),
        }
    }

    /// Every peer.
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.keys().copied()
    }

    /// A peer's stream ended (end of file or an I/O error). The driver has closed it.
    pub fn handle_closed(&mut self, peer: PeerId, now: Instant) {
        let error = self.connection(peer).and_then(|c| c.error().cloned());
        self.end_stream(peer, auth::ending_of(error.as_ref()), now);
    }

    /// A peer's stream failed below ZMTP (an I/O error, a TLS handshake that refused the
    /// peer's certificate); the driver has closed it. As [`handle_closed`](Self::handle_closed),
    /// and the monitor events this causes (HANDSHAKE_FAILED_NO_DETAIL before the handshake
    /// completed, DISCONNECTED) carry `reason` in
    /// [`MonitorEvent::reason`](super::MonitorEvent::reason), so that a monitor can say why.
    pub fn handle_stream_failed(&mut self, peer: PeerId, now: Instant, reason: &str) {
        let first = self.monitors.len();
        self.handle_closed(peer, now);
        for event in self.monitors.iter_mut().skip(first) {
            let about_the_stream = matches!(
                event.kind,
                MonitorEventKind::Disconnected
                    | MonitorEventKind::HandshakeFailedNoDetail
                    | MonitorEventKind::HandshakeFailedProtocol
                    | MonitorEventKind::HandshakeFailedAuth
            );
            if about_the_stream && event.reason.is_none() {
                event.reason = Some(reason.into());
            }
        }
    }

    pub(super) fn end_stream(&mut self, peer: PeerId, ending: Ending, now: Instant) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        let Some(stream) = p.stream.take() else {
            return;
        };
        self.timers
            .reset(TimerKey::Peer(peer), stream.deadline, None);
        let endpoint = p.endpoint;
        let outbound = p.outbound;
        // ROUTER_NOTIFY, STREAM_NOTIFY: a lost connection of a routable peer is announced
        // as `[routing id][empty]`, after what it sent whole (a message it had not
        // finished went with its stream); not one we closed, nor while the socket closes
        // (STREAM: libzmq's engine announces only its own failures, and a closing socket
        // reads no more).
        let announced = match self.ty {
            SocketType::Router => self.opts.router_notify.disconnect,
            SocketType::Stream => self.opts.stream_notify && self.closing.is_none(),
            _ => false,
        };
        let announce =
            announced && stream.established && p.attached && !matches!(ending, Ending::Dropped);
        if announce {
            let note = match self.ty {
                SocketType::Stream => super::pattern::stream::from_peer(p, Bytes::new()),
                _ => Message::from(Bytes::new()),
            };
            p.inq.push_back(note);
        }
        // DISCONNECT_MSG (an accepted peer) and HICCUP_MSG (a connect peer): a connection
        // lost after its handshake leaves a message of ours after what it sent whole.
        let lost = if outbound {
            self.opts
                .hiccup_msg
                .as_ref()
                .filter(|_| self.rules.hiccup_msg)
        } else {
            self.opts
                .disconnect_msg
                .as_ref()
                .filter(|_| self.rules.disconnect_msg)
        };
        if let Some(lost) = lost.filter(|_| stream.established && p.attached) {
            if !matches!(ending, Ending::Dropped) {
                p.inq.push_back(Message::from(lost.clone()));
            }
        }
        let mut protocol_error = match &ending {
            Ending::Failed(e) => !matches!(
                e,
                Error::HandshakeTimeout
                    | Error::HeartbeatTimeout
                    | Error::HeartbeatTtlExpired
                    | Error::WsClosed
                    // A proxy that did not connect us: tried again, as libzmq does.
                    | Error::Socks(_)
            ),
            _ => false,
        };
        let error = match &ending {
            Ending::Failed(e) => Some(e),
            _ => None,
        };
        // Why this connection of a connect endpoint did not carry its messages, for the
        // reports of what waits for the endpoint.
        let failure = match (&ending, error) {
            (_, Some(e)) => Some(alloc::string::ToString::to_string(e)),
            (Ending::Closed, None) if stream.conn.in_socks() => Some(
                "the SOCKS5 proxy closed the connection before connecting it: a refused \
                 login, or a destination it would not reach"
                    .into(),
            ),
            (Ending::Closed, None) if !stream.established => {
                Some("the peer closed the connection during the handshake".into())
            }
            _ => None,
        };
        if let Some(failure) = failure.filter(|_| outbound) {
            if let Some(state) = self.endpoints.get_mut(&endpoint) {
                state.failure = Some(failure);
            }
        }
        // RECONNECT_STOP_HANDSHAKE_FAILED: a connection that ends before its handshake
        // completes is not made again, as after a protocol error.
        if outbound
            && !stream.established
            && self.opts.reconnect_stop.handshake_failed
            && !matches!(ending, Ending::Dropped)
        {
            protocol_error = true;
        }
        if !stream.established {
            match &ending {
                // An ERROR with a ZAP status ("300", "400", "500") is an authentication
                // failure, reported with that status as libzmq does.
                Ending::Failed(Error::PeerError(reason))
                    if matches!(&reason[..], b"300" | b"400" | b"500") =>
                {
                    let status = core::str::from_utf8(reason)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    self.monitor_peer_error(
                        MonitorEventKind::HandshakeFailedAuth,
                        status,
                        peer,
                        error,
                    )
                }
                // Our own verdict refused the peer.
                Ending::Failed(Error::AuthRejected { status }) => self.monitor_peer_error(
                    MonitorEventKind::HandshakeFailedAuth,
                    u32::from(*status),
                    peer,
                    error,
                ),
                Ending::Failed(e) => match monitor::protocol_error_code(e) {
                    Some(code) => self.monitor_peer_error(
                        MonitorEventKind::HandshakeFailedProtocol,
                        code,
                        peer,
                        error,
                    ),
                    None => self.monitor_peer_error(
                        MonitorEventKind::HandshakeFailedNoDetail,
                        // libzmq's errno for a missing ZAP handler.
                        if matches!(e, Error::NoZapHandler) {
                            monitor::EFAULT
                        } else {
                            0
                        },
                        peer,
                        error,
                    ),
                },
                // The peer closed its end mid-handshake: libzmq reports the end of the
                // stream as EPIPE.
                Ending::Closed => self.monitor_peer_error(
                    MonitorEventKind::HandshakeFailedNoDetail,
                    monitor::EPIPE,
                    peer,
                    error,
                ),
                Ending::Dropped => {}
            }
        }
        self.monitor_peer_error(MonitorEventKind::Disconnected, 0, peer, error);
        if !matches!(ending, Ending::Closed) {
            self.commands.push_back(Command::ClosePeer { peer });
        }
        if !outbound {
            self.remove_peer(peer);
        } else if protocol_error
            || matches!(ending, Ending::Dropped)
            || self.endpoints.get(&endpoint).is_some_and(|e| e.dead)
        {
            // libzmq stops reconnecting after a protocol error; a dropped connect peer
            // (PAIR refusal, handover, disconnect) is gone too, and so is one whose
            // endpoint will not reconnect (a STREAM connection closed on request).
            if let Some(e) = self.endpoints.get_mut(&endpoint) {
                e.dead = true;
            }
            self.remove_peer(peer);
        } else if self.opts.reconnect_ivl.is_none() && self.closing.is_none() {
            // libzmq: a connection that will not be made again takes its endpoint with it,
            // as a disconnect would (what was queued for it is discarded; what it sent
            // stays readable), so that the endpoint may be connected anew.
            self.remove_peer(peer);
            self.set_retry(endpoint, None);
            self.endpoints.remove(&endpoint);
        } else {
            // The peer's queue outlives its connection (unless `immediate`): what is sent
            // now waits for the next one, under the same routing id.
            if self.opts.immediate {
                self.detach(peer);
                if let Some(p) = self.peers.get_mut(&peer) {
                    p.out.clear();
                }
            } else if announce {
                self.note_input(peer);
            }
            self.schedule_reconnect(endpoint, now);
        }
        // A message left above for a peer that stays routable takes its turn.
        self.note_input(peer);
        if self.closing.is_some() {
            self.try_finish_close(now);
        }
    }

    pub(super) fn remove_peer(&mut self, peer: PeerId) {
        self.detach(peer);
        self.peers.remove(&peer);
    }

    /// The stream of a peer whose handshake is done (to send it commands).
    pub(super) fn established_link(&mut self, peer: PeerId) -> Option<&mut super::Link> {
        self.peers
            .get_mut(&peer)
            .and_then(|p| p.stream.as_deref_mut())
            .filter(|l| l.established)
    }

    /// Make a peer routable.
    pub(super) fn attach(&mut self, peer: PeerId) {
        if let Some(p) = self.peers.get_mut(&peer) {
            if !p.attached {
                p.attached = true;
                self.attached.push(peer);
            }
        }
        self.note_input(peer);
    }

    /// Make a peer unroutable; the pattern forgets it. Messages received from it stay
    /// readable.
    pub(super) fn detach(&mut self, peer: PeerId) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if !p.attached {
            return;
        }
        p.attached = false;
        p.held = false;
        if p.in_fq {
            p.in_fq = false;
            self.fq_active.retain(|&x| x != peer);
        }
        let inq = core::mem::take(&mut p.inq);
        if !inq.is_empty() {
            self.departed.push_back(Departed {
                peer,
                routing_id: p.routing_id.clone(),
                inq,
            });
        }
        if let Some(i) = self.attached.iter().position(|&x| x == peer) {
            self.attached.remove(i);
            if self.lb_cursor > i {
                self.lb_cursor -= 1;
            }
        }
        self.pattern_detach(peer);
    }
}
