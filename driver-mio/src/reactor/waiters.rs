//! Application threads waiting on a socket (in `send`, `recv`, `close`) or on the context
//! (in `poll`): counted, so that a condition variable is signalled only when someone
//! waits, and once per wait.

use std::sync::{Arc, Condvar, MutexGuard};
use std::time::Duration;

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
use zmtp_driver::StdTransport;

use super::work::{Work, READ_HERE};
use std::time::Instant as StdInstant;

use super::{Shared, Signal, Sock, State};

mod count;
pub(super) use count::Waiters;

/// Condition variables to signal once the lock is released.
#[derive(Default)]
pub(super) struct Notify {
    signals: Vec<Signal>,
    polled: bool,
    /// Readiness descriptors to count up ([`crate::readiness`]).
    readiness: Vec<Arc<std::os::fd::OwnedFd>>,
}

impl Notify {
    /// Note that socket `id` changed: its waiters, and those in `poll`, are to be woken.
    pub(super) fn touch(&mut self, st: &mut State, id: usize) {
        if let Some(signal) = st.sockets.get_mut(&id).and_then(Sock::signal) {
            self.signals.push(signal);
        }
        if let Some(fd) = st.sockets.get(&id).and_then(|s| s.readiness.clone()) {
            self.readiness.push(fd);
        }
        self.polled |= st.poll_waiters.take();
    }

    /// Signal (without the lock).
    pub(super) fn signal(&mut self, shared: &Shared) {
        for signal in self.signals.drain(..) {
            signal.send();
        }
        for fd in self.readiness.drain(..) {
            crate::readiness::ring(Some(&fd));
        }
        if std::mem::take(&mut self.polled) {
            shared.polled.notify_all();
        }
    }
}

fn wait_on<'a>(
    cond: &Condvar,
    st: MutexGuard<'a, State>,
    deadline: Option<StdInstant>,
) -> MutexGuard<'a, State> {
    match deadline {
        None => cond.wait(st).unwrap_or_else(|e| e.into_inner()),
        Some(d) => {
            let left = d.saturating_duration_since(StdInstant::now());
            cond.wait_timeout(st, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0)
        }
    }
}

impl Shared {
    /// If `ready` does not hold for socket `id` (and it exists), wait for one signal on
    /// it or until `deadline`. Returns whether `ready` held (or the socket is gone), so
    /// that callers loop until it does.
    pub(crate) fn wait_for(
        &self,
        id: usize,
        deadline: Option<StdInstant>,
        ready: impl Fn(&Sock) -> bool,
    ) -> bool {
        self.wait_until(id, deadline, ready, false)
    }

    /// [`wait_for`](Self::wait_for) a message to receive (or the close): the signals of
    /// other changes (a peer's handshake, a write done) leave this thread asleep (see
    /// [`Sock::signal`]).
    pub(crate) fn wait_for_message(&self, id: usize, deadline: Option<StdInstant>) -> bool {
        self.wait_until(id, deadline, Sock::message_ready, true)
    }

    fn wait_until(
        &self,
        id: usize,
        deadline: Option<StdInstant>,
        ready: impl Fn(&Sock) -> bool,
        message: bool,
    ) -> bool {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return true;
        };
        if ready(s) {
            return true;
        }
        s.waiting_other |= !message;
        s.waited = true;
        // Input is the I/O thread's to notice while this thread sleeps here.
        self.unlease(s);
        let generation = s.waiters.enter();
        let cond = s.cond.clone();
        let mut st = wait_on(&cond, st, deadline);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.waiters.leave(generation);
        }
        false
    }

    /// End the leases of a socket's streams (`PeerIo::leased`) from an application
    /// thread about to sleep without waiting on them: they are registered for input
    /// again, which raises an edge for the I/O thread at once for input that came while
    /// they were silenced.
    pub(crate) fn unlease(&self, s: &mut Sock) {
        if s.lease_until.take().is_none() {
            return;
        }
        s.lease_len = super::LEASE;
        // A lent ring stream stays lent (the I/O thread reads it as on epoll): given back
        // to the ring here, one of a socket's streams would go back each time another's
        // lending made this thread sleep here, to be lent again on its next wait. Leases
        // that run out give streams back (`end_leases`).
        for io in s.peers.values_mut().filter(|io| io.leased) {
            io.leased = false;
            io.read_queued = false;
            io.silenced = false;
            self.set_interest(io);
        }
    }

    /// [`unlease`](Self::unlease) socket `id`.
    pub(crate) fn unlease_socket(&self, id: usize) {
        if let Some(s) = self.lock().sockets.get_mut(&id) {
            self.unlease(s);
        }
    }

    /// Wait as [`wait_for`](Self::wait_for) does for a receive on socket `id`, but in the
    /// kernel, on the socket's streams themselves and on an event counter that stands
    /// for its condition variable, then read here whatever came: a message then costs no
    /// hop through the I/O thread (which would wake up, read, and wake this thread).
    ///
    /// Only when no one reads the streams (no read queued for, or running in, the I/O
    /// thread), there are at most `READ_HERE` of them, each below RCVHWM, and no other
    /// thread waits so; returns false (having done nothing) otherwise, and the caller
    /// waits on the condition variable.
    ///
    /// Meanwhile the streams are this thread's to read: each is claimed as a running
    /// read is, and registered with the I/O thread's poll for no input
    /// ([`set_interest`](Self::set_interest)), so that the I/O thread is not woken for
    /// it. Afterwards each is registered for input again (an edge comes at once for
    /// input that arrived since), then read here if it had input, or given back.
    pub(crate) fn wait_on_streams(
        &self,
        id: usize,
        deadline: Option<StdInstant>,
        ready: impl Fn(&Sock) -> bool,
    ) -> bool {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return false;
        };
        let could = !s.fd_waiting && !s.peers.is_empty() && s.peers.len() <= READ_HERE;
        // Streams the ring reads are lent first: this wait is on the condition variable,
        // the next ones on the streams.
        if could && self.ring && !ready(s) && self.lend_ring_streams(s) {
            return false;
        }
        let eligible = could
            && !ready(s)
            && (s.peers.iter())
                .all(|(&peer, io)| (!io.read_queued || io.leased) && s.core.wants_read(peer));
        if !eligible {
            return false;
        }
        let wake_fd = match &s.wake_fd {
            Some(fd) => fd.clone(),
            None => {
                let flags = EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK;
                match rustix::event::eventfd(0, flags) {
                    Ok(fd) => s.wake_fd.insert(Arc::new(fd)).clone(),
                    Err(_) => return false,
                }
            }
        };
        // Fixed arrays, not vectors: a receive allocates nothing to wait.
        let mut works: [Option<Work>; READ_HERE] = [None; READ_HERE];
        let mut streams: [Option<Arc<StdTransport>>; READ_HERE] = Default::default();
        let mut n = 0;
        for ((&peer, io), (work, stream)) in
            s.peers.iter_mut().zip(works.iter_mut().zip(&mut streams))
        {
            io.read_queued = true;
            io.leased = false;
            io.read_edge = false;
            io.silenced = true;
            self.set_interest(io);
            *work = Some(Work {
                id,
                peer,
                token: io.token,
                write: false,
            });
            *stream = Some(io.stream.clone());
            n += 1;
        }
        s.fd_waiting = true;
        s.waited = true;
        let generation = s.waiters.enter();
        drop(st);

        // The streams, then the event counter (in every slot left).
        let mut fds: [PollFd<'_>; READ_HERE + 1] =
            std::array::from_fn(|i| match streams.get(i).and_then(Option::as_ref) {
                Some(stream) => PollFd::new(&**stream, PollFlags::IN),
                None => PollFd::new(&*wake_fd, PollFlags::IN),
            });
        let fds = fds.get_mut(..=n).unwrap_or_default();
        let timeout = deadline.map(|d| {
            let left = d.saturating_duration_since(StdInstant::now());
            // Rounded up: woken before the deadline, the caller would only wait again.
            let left = left.max(Duration::from_micros(1));
            Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: left.subsec_nanos().into(),
            }
        });
        // An error (EINTR) counts as a spurious wake-up: every stream is read below.
        let woken = rustix::event::poll(fds, timeout.as_ref()).is_ok();
        let mut input = [false; READ_HERE + 1];
        for (had, fd) in input.iter_mut().zip(fds.iter()) {
            *had = !woken || !fd.revents().is_empty();
        }
        if input.get(n).copied().unwrap_or(false) {
            let _ = rustix::io::read(&*wake_fd, &mut [0u8; 8]);
        }

        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return true;
        };
        s.waiters.leave(generation);
        let timer = s.core.poll_timeout();
        // Read first, while the I/O thread is not told of input (it would only find it
        // read); streams still claimed and silenced meanwhile are this thread's alone.
        let mut unread = [false; READ_HERE];
        for ((work, had_input), unread) in works.iter().flatten().zip(input).zip(&mut unread) {
            let Some(io) = (st.sockets.get_mut(&id))
                .and_then(|s| s.peers.get_mut(&work.peer))
                .filter(|io| io.token == work.token)
            else {
                continue;
            };
            if had_input || io.read_edge {
                // Given back by the read (or queued for the I/O thread to read on).
                st = self.read_claimed(st, *work);
            } else {
                *unread = true;
            }
        }
        // Then leased (`PeerIo::leased`), with those read: the next receive reads them
        // again at once, and waits on them without registering them in between; the
        // I/O thread takes them back if no receive comes in time.
        let now = self.now();
        let Some(s) = st.sockets.get_mut(&id) else {
            return true;
        };
        for (work, unread) in works.iter().flatten().zip(unread) {
            let Some(io) = (s.peers.get_mut(&work.peer)).filter(|io| io.token == work.token) else {
                continue;
            };
            if unread {
                io.read_queued = false;
            }
            s.lease(work.peer, work.token, now);
        }
        s.fd_waiting = false;
        drop(streams);
        self.pump(&mut st, id);
        self.after_here(st, id, timer);
        true
    }

    /// Wait (from [`poll`](crate::poll)) for any socket of this context to change, or
    /// until `deadline`.
    pub(crate) fn wait_polled<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        deadline: Option<StdInstant>,
        ids: impl Iterator<Item = usize>,
    ) {
        // Input is the I/O thread's to notice while this thread sleeps here.
        for id in ids {
            if let Some(s) = st.sockets.get_mut(&id) {
                self.unlease(s);
            }
        }
        let generation = st.poll_waiters.enter();
        let mut st = wait_on(&self.polled, st, deadline);
        st.poll_waiters.leave(generation);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Backend, Context, Message, MonitorEventKind, SocketType};

    /// Signals sent to the waiters of `socket`, and whether a thread waits on it.
    fn signals(socket: &crate::Socket) -> (usize, bool) {
        let st = socket.shared.lock();
        let s = &st.sockets[&socket.id];
        (s.signals, s.waiters.waiting())
    }

    /// The lease of the streams a receiving thread reads grows while the thread keeps
    /// coming back (the I/O thread, waking at its end, finds it renewed), up to
    /// `LEASE_MAX`, and starts again from `LEASE` once it runs out; input that comes
    /// after the receiver stopped is then taken in by the I/O thread.
    #[test]
    fn leases_grow_for_a_busy_receiver_and_shrink_once_it_stops() {
        let lease = |socket: &crate::Socket| {
            let st = socket.shared.lock();
            let s = &st.sockets[&socket.id];
            (s.lease_len, s.lease_until.is_some())
        };
        let ctx = Context::new().unwrap();
        let pull = ctx.socket(SocketType::Pull).unwrap();
        pull.set_rcvtimeo(Some(Duration::from_secs(5)));
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        assert_eq!(lease(&pull).0, super::super::LEASE);
        // A message every millisecond for 150 ms, each received as it comes.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..150 {
                    push.send("tick").unwrap();
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            for _ in 0..150 {
                assert_eq!(pull.recv_string().unwrap(), "tick");
            }
        });
        let (len, leased) = lease(&pull);
        assert!(leased, "the receiver's streams are leased");
        assert!(
            len > super::super::LEASE && len <= super::super::LEASE_MAX,
            "lease {len:?} after 150 ms of receiving"
        );
        // No receive for longer than the longest lease: it runs out.
        std::thread::sleep(super::super::LEASE_MAX * 3);
        assert_eq!(lease(&pull), (super::super::LEASE, false));
        // What comes now is read by the I/O thread: ready without a read of this thread.
        push.send("later").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !pull.can_recv() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(pull.can_recv(), "the I/O thread took the input in");
        assert_eq!(pull.recv_string().unwrap(), "later");
    }

    /// A thread blocked in `recv` on a ROUTER sleeps while peers connect and finish their
    /// handshakes (each of which touches the socket), and wakes for the first message.
    #[test]
    fn a_receiver_sleeps_through_handshakes() {
        const PEERS: usize = 20;
        let ctx = Context::new().unwrap();
        let router = ctx.socket(SocketType::Router).unwrap();
        let endpoint = router.bind("tcp://127.0.0.1:*").unwrap();
        let monitor = router.monitor();
        std::thread::scope(|scope| {
            // Bounded, so that a failing assertion ends the test rather than hang it.
            let receiver = scope.spawn(|| router.recv_timeout(Some(Duration::from_secs(20))));
            while !signals(&router).1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let dealers: Vec<_> = (0..PEERS)
                .map(|_| {
                    let d = ctx.socket(SocketType::Dealer).unwrap();
                    d.connect(&endpoint).unwrap();
                    d
                })
                .collect();
            let mut done = 0;
            while done < PEERS {
                let event = monitor.recv_timeout(Duration::from_secs(10)).unwrap();
                done += usize::from(event.kind == MonitorEventKind::HandshakeSucceeded);
            }
            let (sent, waiting) = signals(&router);
            assert_eq!(sent, 0, "{PEERS} handshakes woke the receiver {sent} times");
            assert!(waiting, "the receiver left its wait");
            dealers[7].send(Message::from(&b"hello"[..])).unwrap();
            let got = receiver.join().unwrap().unwrap();
            assert_eq!(got.frames().last().map(|f| &f[..]), Some(&b"hello"[..]));
            assert!(signals(&router).0 >= 1);
        });
    }

    /// Whether `socket`'s one peer is read by the ring, and whether it is lent to
    /// receiving threads.
    fn ring_state(socket: &crate::Socket) -> Option<(bool, bool)> {
        let st = socket.shared.lock();
        let io = st.sockets[&socket.id].peers.values().next()?;
        Some((io.ring.is_some(), io.lent.is_some()))
    }

    /// On io_uring, a thread that waits in `recv` has the ring lend it the socket's
    /// stream (read as on epoll, by that thread), and the I/O thread gives the stream back
    /// to the ring's receive once the thread stays away past its lease; small messages
    /// (shared buffers) and large ones (the stream's own buffer) go back and forth so,
    /// every message whole and in order.
    #[test]
    fn a_ring_stream_is_lent_to_a_waiting_receiver_and_taken_back_after_its_lease() {
        for size in [8usize, 100 << 10] {
            let ctx = Context::with_backend(Backend::IoUring).expect("io_uring here");
            let pull = ctx.socket(SocketType::Pull).unwrap();
            let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
            let count = 300u32;
            let sender = std::thread::spawn(move || {
                let ctx = Context::with_backend(Backend::IoUring).unwrap();
                let push = ctx.socket(SocketType::Push).unwrap();
                push.connect(&endpoint).unwrap();
                for i in 0..count {
                    let mut body = vec![(i % 251) as u8; size];
                    body[..4].copy_from_slice(&i.to_be_bytes());
                    push.send(body).unwrap();
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert!(push.close().delivered_all());
            });
            let (mut ringed, mut lent) = (0, 0);
            for i in 0..count {
                if i % 20 == 19 {
                    // Away past the lease: the I/O thread takes the stream back. (Then
                    // the receiver catches up with the sender, and waits again.)
                    std::thread::sleep(Duration::from_millis(6));
                }
                let m = pull
                    .recv_timeout(Some(Duration::from_secs(10)))
                    .unwrap_or_else(|e| panic!("{size} B: message {i}: {e}"));
                let body = &m.frames()[0];
                assert_eq!(body.len(), size, "message {i}");
                assert_eq!(body[..4], i.to_be_bytes(), "{size} B: in order");
                assert!(body[4..].iter().all(|&b| b == (i % 251) as u8), "whole");
                match ring_state(&pull) {
                    Some((true, _)) => ringed += 1,
                    Some((false, true)) => lent += 1,
                    _ => {}
                }
            }
            sender.join().unwrap();
            assert!(lent > 0, "{size} B: never lent ({ringed} times the ring's)");
            assert!(ringed > 0, "{size} B: never taken back ({lent} times lent)");
        }
    }

    /// A socket with two ring-read peers, the second connected later: once both are lent,
    /// the receiving thread waits on both itself.
    #[test]
    fn every_stream_of_a_socket_is_lent_to_its_waiting_receiver() {
        let ctx = Context::with_backend(Backend::IoUring).expect("io_uring here");
        let pull = ctx.socket(SocketType::Pull).unwrap();
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let senders: Vec<_> = (0..2u32)
            .map(|n| {
                let endpoint = endpoint.clone();
                std::thread::spawn(move || {
                    // The second comes later: the first is lent (and leased) by then.
                    std::thread::sleep(Duration::from_millis(30 * u64::from(n)));
                    let ctx = Context::with_backend(Backend::IoUring).unwrap();
                    let push = ctx.socket(SocketType::Push).unwrap();
                    push.connect(&endpoint).unwrap();
                    for i in 0..200u32 {
                        push.send(format!("{n}:{i}")).unwrap();
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    assert!(push.close().delivered_all());
                })
            })
            .collect();
        let mut next = [0u32; 2];
        let mut all_lent = 0;
        for _ in 0..400 {
            let m = pull.recv_timeout(Some(Duration::from_secs(10))).unwrap();
            let text = m.to_str().unwrap().to_string();
            let (n, i) = text.split_once(':').unwrap();
            let n: usize = n.parse().unwrap();
            assert_eq!(i.parse::<u32>().unwrap(), next[n], "each sender's in order");
            next[n] += 1;
            let st = pull.shared.lock();
            let peers = &st.sockets[&pull.id].peers;
            all_lent += usize::from(peers.len() == 2 && peers.values().all(|io| io.lent.is_some()));
        }
        for s in senders {
            s.join().unwrap();
        }
        assert!(all_lent > 0, "never were both streams lent at once");
    }
}
