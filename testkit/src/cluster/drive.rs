//! Driving the cluster: events, writes, reads and closes until idle, and timers.

use zmtp_driver::{run_commands, CommandHandler};
use zmtp_proto::socket::{
    AuthReply, Endpoint, EndpointId, MonitorEvent, PeerId, Socket, ZapRequest,
};

use super::{Cluster, End, Link, Node};
use std::collections::VecDeque;
use std::time::Duration;
use zmtp_proto::Instant;

impl Cluster {
    /// Act on events, move bytes and report closes until nothing moves.
    pub fn run_until_idle(&mut self) {
        loop {
            self.steps += 1;
            assert!(self.steps < 5_000_000, "the cluster never goes idle");
            if !self.step() {
                return;
            }
        }
    }

    /// Run until idle, then jump to the earliest timer of any socket and fire it.
    /// False when no timer is armed.
    pub fn advance_to_next_timer(&mut self) -> bool {
        self.run_until_idle();
        let Some(t) = self.next_timer() else {
            return false;
        };
        self.now = self.now.max(t);
        self.fire_timers();
        self.run_until_idle();
        true
    }

    /// Let `duration` of virtual time pass, firing every timer on time.
    pub fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        loop {
            self.run_until_idle();
            match self.next_timer() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.fire_timers();
                }
                _ => {
                    self.now = end;
                    self.run_until_idle();
                    return;
                }
            }
        }
    }

    /// The earliest timer of any live socket.
    pub fn next_timer(&self) -> Option<Instant> {
        self.members
            .iter()
            .filter(|m| m.alive)
            .filter_map(|m| m.socket.poll_timeout())
            .min()
    }

    fn fire_timers(&mut self) {
        let now = self.now;
        for (i, m) in self.members.iter_mut().enumerate().filter(|(_, m)| m.alive) {
            if m.socket.poll_timeout().is_some_and(|t| t <= now) {
                m.socket.handle_timeout(now);
                // A driver would spin on a timer that stays expired.
                assert!(
                    m.socket.poll_timeout().is_none_or(|t| t > now),
                    "socket {i}: a timer is still expired after handle_timeout"
                );
            }
        }
    }

    /// Call `handle_timeout` on a live member at the current time, whether or not its
    /// timer is due (a driver woken early, or a test probing the timers).
    pub fn fire(&mut self, n: Node) {
        let now = self.now;
        let m = &mut self.members[n.0];
        if m.alive {
            m.socket.handle_timeout(now);
        }
    }

    fn step(&mut self) -> bool {
        let mut progress = self.handle_events();
        progress |= self.write();
        progress |= self.deliver();
        progress |= self.report_closes();
        progress
    }

    /// Act on every pending command of every live socket, as a driver would (through the
    /// drivers' command loop, `zmtp_driver::run_commands`), and keep its monitor events;
    /// whether there was any.
    pub fn handle_events(&mut self) -> bool {
        let mut progress = false;
        for i in 0..self.members.len() {
            let mut member = Commands {
                cluster: self,
                n: Node(i),
                moved: false,
            };
            run_commands(&mut member);
            progress |= member.moved;
        }
        progress
    }

    /// Write what every socket wants written, as far as link capacity allows.
    fn write(&mut self) -> bool {
        let now = self.now;
        for (i, m) in self.members.iter_mut().enumerate() {
            if !m.alive {
                continue;
            }
            while let Some(peer) = m.socket.next_dirty() {
                self.writers.insert((Node(i), peer));
            }
        }
        let mut progress = false;
        let writers: Vec<(Node, PeerId)> = self.writers.iter().copied().collect();
        for (n, peer) in writers {
            let Some(&(id, side)) = self.index.get(&(n, peer)) else {
                // No stream (the socket dropped it, or it has none yet).
                self.writers.remove(&(n, peer));
                continue;
            };
            let Some(link) = self.links.get_mut(&id) else {
                self.writers.remove(&(n, peer));
                continue;
            };
            let m = &mut self.members[n.0];
            let data = m.socket.poll_transmit(peer);
            if data.is_empty() {
                self.writers.remove(&(n, peer));
                continue;
            }
            let room = self.capacity.saturating_sub(link.flight[side].len());
            let k = data.len().min(room);
            if k == 0 {
                continue;
            }
            let whole = k == data.len();
            if !m.silenced && link.ends[1 - side].open {
                link.flight[side].extend(&data[..k]);
            }
            m.socket.advance(peer, k, now);
            progress = true;
            // The output may continue in further segments (large bodies are their own).
            if whole && m.socket.poll_transmit(peer).is_empty() {
                self.writers.remove(&(n, peer));
            }
        }
        progress
    }

    /// Hand in-flight bytes to readers that want them, in random chunk sizes.
    fn deliver(&mut self) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.links.keys().copied().collect();
        for id in ids {
            for from in 0..2 {
                let to = 1 - from;
                let Some(link) = self.links.get_mut(&id) else {
                    break;
                };
                let end = link.ends[to];
                if link.flight[from].is_empty() || !end.open {
                    continue;
                }
                let m = &mut self.members[end.node.0];
                if !m.alive || !m.socket.wants_read(end.peer) {
                    continue;
                }
                // Mostly segments of a few KiB, sometimes a handful of bytes.
                let max = if self.rng.range(0, 3) == 0 {
                    16
                } else {
                    self.max_chunk
                };
                let k = self.rng.range(1, max).min(link.flight[from].len());
                let chunk: Vec<u8> = link.flight[from].drain(..k).collect();
                m.socket.handle_received(end.peer, self.now, &chunk);
                progress = true;
            }
        }
        progress
    }

    /// Report end of stream to readers whose writer closed and whose bytes are all read.
    fn report_closes(&mut self) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.links.keys().copied().collect();
        for id in ids {
            let Some(link) = self.links.get_mut(&id) else {
                continue;
            };
            for from in 0..2 {
                let to = 1 - from;
                let end = link.ends[to];
                if link.ends[from].open || !end.open || !link.flight[from].is_empty() {
                    continue;
                }
                let m = &mut self.members[end.node.0];
                if !m.alive || !m.socket.wants_read(end.peer) {
                    continue;
                }
                link.ends[to].open = false;
                self.index.remove(&(end.node, end.peer));
                self.writers.remove(&(end.node, end.peer));
                m.forget(end.peer);
                m.socket.handle_closed(end.peer, self.now);
                progress = true;
            }
            if link.ends.iter().all(|e| !e.open) {
                self.links.remove(&id);
            }
        }
        progress
    }
}

/// One member's commands, carried out on the cluster's virtual network.
struct Commands<'a> {
    cluster: &'a mut Cluster,
    n: Node,
    /// Whether any command or monitor event was handled.
    moved: bool,
}

impl CommandHandler for Commands<'_> {
    fn socket(&mut self) -> Option<&mut Socket> {
        let m = &mut self.cluster.members[self.n.0];
        m.alive.then_some(&mut m.socket)
    }

    fn listen(&mut self, endpoint: EndpointId, addr: Endpoint) {
        self.moved = true;
        let (c, n) = (&mut *self.cluster, self.n);
        let text = addr.to_string();
        let resolved = match text.rsplit_once(':') {
            Some((head, "*")) | Some((head, "0"))
                if text.starts_with("tcp://") || text.starts_with("ws://") =>
            {
                let port = c.next_port;
                c.next_port += 1;
                format!("{head}:{port}")
            }
            _ => text,
        };
        let resolved = resolved.replacen("tcp://*:", "tcp://0.0.0.0:", 1);
        if c.listeners.contains_key(&resolved) {
            // EADDRINUSE
            c.members[n.0].socket.handle_bind_failed(endpoint, 98);
        } else {
            c.listeners.insert(resolved.clone(), (n, endpoint));
            c.members[n.0].socket.handle_listening(endpoint, &resolved);
        }
    }

    fn connect(&mut self, endpoint: EndpointId, addr: Endpoint) {
        self.moved = true;
        let (c, n) = (&mut *self.cluster, self.n);
        let now = c.now;
        let text = addr.to_string();
        c.members[n.0].connect_attempts.push((now, text.clone()));
        if c.held_addrs.contains(&text) {
            // The test completes or refuses it (see `remote`).
            c.held.insert((n, endpoint), text);
            return;
        }
        let any = text
            .rsplit_once(':')
            .map(|(_, port)| format!("tcp://0.0.0.0:{port}"));
        let target = c
            .listeners
            .get(&text)
            .or_else(|| any.and_then(|a| c.listeners.get(&a)))
            .copied();
        let Some((ln, lep)) = target else {
            c.members[n.0].socket.handle_connect_failed(endpoint, now);
            return;
        };
        let listener_address = c.peer_address(&text, false);
        let Some(cp) = c.members[n.0]
            .socket
            .handle_connected(endpoint, &listener_address, now)
        else {
            return;
        };
        let client_address = c.peer_address(&text, true);
        match c.members[ln.0]
            .socket
            .handle_accepted(lep, &client_address, now)
        {
            Some(lp) => {
                let id = c.next_link;
                c.next_link += 1;
                c.links.insert(
                    id,
                    Link {
                        ends: [
                            End {
                                node: n,
                                peer: cp,
                                open: true,
                            },
                            End {
                                node: ln,
                                peer: lp,
                                open: true,
                            },
                        ],
                        flight: [VecDeque::new(), VecDeque::new()],
                    },
                );
                c.index.insert((n, cp), (id, 0));
                c.index.insert((ln, lp), (id, 1));
            }
            // The listener closed the stream at once.
            None => c.members[n.0].socket.handle_closed(cp, now),
        }
    }

    fn stop_listening(&mut self, endpoint: EndpointId) {
        self.moved = true;
        let n = self.n;
        self.cluster.listeners.retain(|_, v| *v != (n, endpoint));
    }

    fn close_peer(&mut self, peer: PeerId) {
        self.moved = true;
        let (c, n) = (&mut *self.cluster, self.n);
        c.members[n.0].closed_peers.push(peer);
        c.members[n.0].forget(peer);
        c.writers.remove(&(n, peer));
        if let Some(id) = c.remote_index.remove(&(n, peer)) {
            if let Some(r) = c.remotes.get_mut(&id) {
                r.open = false;
            }
            return;
        }
        let Some((id, side)) = c.index.remove(&(n, peer)) else {
            return;
        };
        let Some(link) = c.links.get_mut(&id) else {
            return;
        };
        // A graceful close: what was written still reaches the other end, then end of
        // stream; what the other end writes from now on is lost.
        link.ends[side].open = false;
        link.flight[1 - side].clear();
        if !link.ends[1 - side].open {
            c.links.remove(&id);
        }
    }

    /// The cluster reads every peer that wants reading at each step.
    fn resume(&mut self, _peer: PeerId) {
        self.moved = true;
    }

    fn authenticate(&mut self, peer: PeerId, request: ZapRequest) {
        self.moved = true;
        let now = self.cluster.now;
        let m = &mut self.cluster.members[self.n.0];
        if m.defer_auth {
            m.auth_requests.push(request.clone());
            m.pending_auth.push_back((peer, request));
            return;
        }
        let reply = m
            .authenticator
            .map_or(AuthReply::NoHandler, |auth| auth(&request));
        m.auth_requests.push(request);
        m.socket.handle_auth(peer, now, reply);
    }

    fn monitor(&mut self, event: MonitorEvent) {
        self.moved = true;
        self.cluster.members[self.n.0].monitor.push(event);
    }

    fn closed(&mut self) {
        self.moved = true;
        self.cluster.members[self.n.0].closed_at = Some(self.cluster.now);
    }
}
