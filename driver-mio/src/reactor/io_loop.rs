//! The I/O thread's loop: wait in the poll, take in readiness and fire timers, run the
//! queued work, and work out how long the next wait may be.

use std::sync::Weak;
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::Instant;

use super::poller::{Ev, Poller, RingOut, RingWrite};
use super::waiters::Notify;
use super::work::{queue, run, Job};
use super::{Io, Shared, State, READ_BUF};

/// Work items run between two looks at readiness and timers.
const WORK_BUDGET: usize = 64;

impl Shared {
    /// One readiness event from the poll.
    pub(super) fn ready(&self, st: &mut State, event: &Ev, now: Instant) -> Option<usize> {
        let &(id, io) = st.tokens.get(&event.token)?;
        match io {
            Io::Listener(endpoint) => self.accept(st, id, endpoint, now),
            Io::Connecting(endpoint) => self.connect_ready(st, id, endpoint, now),
            Io::Udp(endpoint) => st.sockets.get_mut(&id)?.receive_datagrams(endpoint),
            Io::Peer(peer) => {
                let io = st.sockets.get_mut(&id)?.peers.get_mut(&peer)?;
                if event.readable || event.read_closed || event.error {
                    io.read_edge = true;
                    queue(st, id, peer, false);
                }
                let io = st.sockets.get_mut(&id)?.peers.get_mut(&peer)?;
                if event.writable || event.error {
                    io.write_edge = true;
                    if io.write_blocked {
                        io.write_blocked = false;
                        queue(st, id, peer, true);
                    }
                }
            }
        }
        Some(id)
    }

    /// Fire due timers; returns the earliest timer left.
    pub(super) fn fire_timers(
        &self,
        st: &mut State,
        now: Instant,
        notify: &mut Notify,
    ) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut id = 0;
        // By id, as the map may change while timers fire.
        while let Some((&sid, s)) = st.sockets.range_mut(id..).next() {
            id = sid + 1;
            match s.lease_until {
                Some(t) if t <= now => {
                    self.end_leases(st, sid);
                    notify.touch(st, sid);
                }
                Some(t) => {
                    // Renewed since this thread last looked: a thread keeps receiving.
                    s.lease_len = (s.lease_len * 2).min(super::LEASE_MAX);
                    next = min_instant(next, Some(t));
                }
                None => {}
            }
            let Some(s) = st.sockets.get_mut(&sid) else {
                continue;
            };
            match s.core.poll_timeout() {
                Some(t) if t <= now => {
                    s.core.handle_timeout(now);
                    self.pump(st, sid);
                    notify.touch(st, sid);
                    let left = st.sockets.get(&sid).and_then(|s| s.core.poll_timeout());
                    next = min_instant(next, left);
                }
                t => next = min_instant(next, t),
            }
        }
        next
    }

    /// One turn of the I/O thread after a poll: readiness, timers, then queued work.
    /// Returns how long the next poll may wait.
    pub(super) fn turn(
        &self,
        events: &[Ev],
        ring: &mut RingOut,
        buf: &mut [u8],
        notify: &mut Notify,
    ) -> Option<Duration> {
        let mut st = self.lock();
        st.parked = false;
        let now = self.now();
        for event in events {
            if let Some(id) = self.ready(&mut st, event, now) {
                self.pump(&mut st, id);
                notify.touch(&mut st, id);
            }
        }
        for written in ring.written.drain(..) {
            let id = written.work.id;
            if self.ring_written(&mut st, written, now) {
                self.pump(&mut st, id);
                notify.touch(&mut st, id);
            }
        }
        for (token, fd) in ring.accepted.drain(..) {
            if let Some(id) = self.ring_accepted(&mut st, token, fd, now) {
                self.pump(&mut st, id);
                notify.touch(&mut st, id);
            }
        }
        for input in ring.inputs.drain(..) {
            if let Some(id) = self.ring_input(&mut st, input, now) {
                self.pump(&mut st, id);
                notify.touch(&mut st, id);
            }
        }
        self.fire_timers(&mut st, now, notify);
        let budget = if st.io_paused() { 0 } else { WORK_BUDGET };
        for _ in 0..budget {
            let Some(work) = st.work.pop_front() else {
                break;
            };
            let Some(job) = self.prepare(&mut st, work) else {
                self.unsilence(&mut st, work);
                continue;
            };
            let job = match job {
                // A ring-read stream: the ring writes it (in the next wait, with the rest
                // of the turn's writes).
                Job::Write(stream, bufs) if self.ring_plain(&stream) => {
                    ring.to_write.push(RingWrite { work, stream, bufs });
                    continue;
                }
                job => job,
            };
            self.inproc_touched(&mut st, notify);
            drop(st);
            notify.signal(self);
            let done = run(job, buf);
            st = self.lock();
            let now = self.now();
            if self.apply(&mut st, work, done, buf, now) {
                st.work.push_back(work);
            } else {
                self.unsilence(&mut st, work);
            }
            self.pump(&mut st, work.id);
            notify.touch(&mut st, work.id);
        }
        let timeout = if st.work.is_empty() {
            st.parked = true;
            let now = self.now();
            let next = self.fire_timers(&mut st, now, notify);
            if st.work.is_empty() {
                next.map(|t| self.at(t).saturating_duration_since(StdInstant::now()))
            } else {
                st.parked = false;
                Some(Duration::ZERO)
            }
        } else if st.io_paused() {
            Some(Duration::from_millis(1))
        } else {
            Some(Duration::ZERO)
        };
        self.inproc_touched(&mut st, notify);
        drop(st);
        notify.signal(self);
        timeout
    }
}

fn min_instant(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The I/O thread: wait for readiness, the earliest timer or a wake-up, handle them and
/// the queued work, repeat, until the context is gone.
pub(super) fn io_thread(mut poller: Poller, shared: Weak<Shared>) {
    let mut events = Vec::with_capacity(256);
    let mut ring = RingOut::default();
    let mut buf = vec![0u8; READ_BUF];
    let mut notify = Notify::default();
    let mut timeout = Some(Duration::ZERO);
    loop {
        // An interrupted wait leaves no events: the turn goes on with the timers and work.
        poller.wait(&mut events, &mut ring, timeout);
        let Some(sh) = shared.upgrade() else {
            return;
        };
        timeout = sh.turn(&events, &mut ring, &mut buf, &mut notify);
    }
}
