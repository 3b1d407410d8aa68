//! Time: the handshake deadline and heartbeats, kept in one timer table.
//!
//! Every deadline is a slot of [`Timers`], indexed by [`Timer`]; the driver arms one timer
//! at [`Connection::poll_timeout`] (the earliest slot) and calls
//! [`Connection::handle_timeout`] when it fires. The rest of the connection arms and
//! clears slots through the few methods here: the handshake deadline starts at
//! construction and ends with the handshake, PINGs start with traffic, and any frame
//! received clears the heartbeat timeout and the peer's TTL.

use core::time::Duration;

use super::Connection;
use crate::error::Error;
use crate::time::Instant;

/// One deadline of a connection.
#[derive(Debug, Clone, Copy)]
pub(super) enum Timer {
    /// The handshake must be done by then (from [`Config::handshake_timeout`](crate::Config)).
    Handshake,
    /// Our next PING is due.
    Ping,
    /// Something must arrive by then, after our PING (heartbeat timeout).
    PongTimeout,
    /// Something must arrive by then, per the TTL of the peer's last PING.
    Ttl,
}

impl Timer {
    const COUNT: usize = 4;
}

/// When each [`Timer`] fires; `None` while it is not armed.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Timers([Option<Instant>; Timer::COUNT]);

impl Timers {
    fn get(&self, t: Timer) -> Option<Instant> {
        self.0[t as usize]
    }

    fn set(&mut self, t: Timer, at: Option<Instant>) {
        self.0[t as usize] = at;
    }

    fn expired(&self, t: Timer, now: Instant) -> bool {
        self.get(t).is_some_and(|at| at <= now)
    }

    /// The table of a new connection: only the handshake deadline, `timeout` after `now`.
    pub(super) fn starting(now: Instant, timeout: Option<Duration>) -> Timers {
        let mut timers = Timers::default();
        timers.set(Timer::Handshake, timeout.map(|d| now + d));
        timers
    }
}

impl Connection {
    /// The earliest instant at which [`handle_timeout`](Self::handle_timeout) must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        self.timers.0.iter().flatten().min().copied()
    }

    /// Process every timer that has expired at `now`: handshake deadline, heartbeat PINGs,
    /// heartbeat timeout and the peer's TTL.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let failure = if self.timers.expired(Timer::Handshake, now) {
            Some(Error::HandshakeTimeout)
        } else if self.timers.expired(Timer::PongTimeout, now) {
            Some(Error::HeartbeatTimeout)
        } else if self.timers.expired(Timer::Ttl, now) {
            Some(Error::HeartbeatTtlExpired)
        } else {
            None
        };
        if let Some(e) = failure {
            return Err(self.fail(e));
        }
        if self.timers.expired(Timer::Ping, now) {
            if let Some(ivl) = self.config.heartbeat_interval {
                self.queue_ping();
                self.timers.set(Timer::Ping, Some(now + ivl));
                if self.timers.get(Timer::PongTimeout).is_none() {
                    let timeout = self.config.heartbeat_timeout.unwrap_or(ivl);
                    self.timers.set(Timer::PongTimeout, Some(now + timeout));
                }
            }
        }
        Ok(())
    }

    /// The handshake is done: its deadline goes, heartbeats (if configured) start.
    pub(super) fn start_heartbeats(&mut self, now: Instant) {
        self.end_handshake_deadline();
        let first_ping = self.config.heartbeat_interval.map(|d| now + d);
        self.timers.set(Timer::Ping, first_ping);
    }

    /// The handshake is done (with a 1.0 or 2.0 peer, which gets no heartbeats): its
    /// deadline goes.
    pub(super) fn end_handshake_deadline(&mut self) {
        self.timers.set(Timer::Handshake, None);
    }

    /// The peer's PING announced a TTL (in tenths of a second; 0 for none): something must
    /// arrive from it within that time.
    pub(super) fn peer_ttl(&mut self, now: Instant, ttl: u16) {
        if ttl > 0 {
            let ttl = Duration::from_millis(u64::from(ttl) * 100);
            self.timers.set(Timer::Ttl, Some(now + ttl));
        }
    }

    /// Traffic seen beneath the ZMTP frames (a WebSocket ping or pong on a ZWS stream):
    /// it counts for heartbeats as a frame does, clearing the heartbeat timeout and the
    /// peer's TTL.
    pub fn note_traffic(&mut self) {
        self.traffic_seen();
    }

    /// Any complete frame counts as traffic for heartbeats.
    pub(super) fn traffic_seen(&mut self) {
        self.timers.set(Timer::PongTimeout, None);
        self.timers.set(Timer::Ttl, None);
    }
}
