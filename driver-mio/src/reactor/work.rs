//! The work queue: reads and writes queued for the I/O thread (or run by an application
//! thread about to sleep), taken out of the state, run without the lock, and handed back.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::sync::{Arc, MutexGuard};

use mio::Token;
use zmtp_driver::StdTransport;
use zmtp_proto::socket::PeerId;
use zmtp_proto::{Bytes, BytesMut, Instant};

use super::waiters::Notify;
use super::{Shared, State, READ_BUF};

/// Most segments gathered into one vectored write.
const MAX_CHUNKS: usize = 64;
/// Work items an application thread runs at most before it sleeps ([`Shared::help`]).
const HELP_BUDGET: usize = 4;
/// Streams an application thread reads at most before it sleeps in a receive
/// ([`Shared::read_here`]).
pub(super) const READ_HERE: usize = 8;
/// Sockets with more streams than this are read by the I/O thread alone
/// ([`Shared::read_here`]): with thousands of mostly idle peers, trying a few of them
/// before each sleep finds nothing, and their leases cost a walk over every peer.
const READ_HERE_PEERS: usize = 64;
/// Reads of one stream an application thread runs at most in a row, when the stream
/// may hold more ([`Shared::read_here`]).
const READ_AGAIN: usize = 2;

std::thread_local! {
    /// The read buffer of an application thread that runs a read ([`Shared::help`]).
    static HELPER_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A read or a write for the I/O thread.
#[derive(Debug, Clone, Copy)]
pub(super) struct Work {
    pub(super) id: usize,
    pub(super) peer: PeerId,
    pub(super) token: Token,
    pub(super) write: bool,
}

/// A work item taken out of the state, to run without the lock.
pub(super) enum Job {
    /// A read through the stream (TLS), into the reading thread's buffer.
    Read(Arc<StdTransport>),
    /// A read of a plain stream straight into its state machine's receive buffer, taken
    /// out of it meanwhile: frames are then cut from that buffer without a copy.
    ReadInto(Arc<StdTransport>, BytesMut),
    Write(Arc<StdTransport>, VecDeque<Bytes>),
}

/// How a job went.
pub(super) enum Done {
    /// What the read returned (the bytes are in the reading thread's buffer).
    Read(io::Result<usize>),
    /// What a read into the receive buffer returned, the buffer (to give back), and the
    /// room it had.
    ReadInto {
        buf: BytesMut,
        room: usize,
        result: io::Result<usize>,
    },
    /// Bytes written, the chunks left, and why it stopped.
    Write {
        written: usize,
        rest: VecDeque<Bytes>,
        end: WriteEnd,
    },
}

impl Done {
    /// Whether the job changed anything: bytes read or written, or the stream ended.
    fn progress(&self) -> bool {
        match self {
            Done::Read(result) | Done::ReadInto { result, .. } => match result {
                Ok(_) => true,
                Err(e) => !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ),
            },
            Done::Write { written, end, .. } => *written > 0 || matches!(end, WriteEnd::Failed),
        }
    }
}

/// How a work item run by an application thread went ([`Shared::run_here`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ran {
    /// The item goes on: queue it again (or look for more output, for a write).
    pub(super) again: bool,
    /// Bytes were read or written, or the stream ended.
    pub(super) progress: bool,
}

pub(super) enum WriteEnd {
    /// Everything taken was written.
    Drained,
    /// The stream would block.
    Blocked,
    /// The stream failed.
    Failed,
}

impl Shared {
    /// Before an application thread sleeps on socket `id`: run a read or write of that
    /// socket that is queued for the I/O thread (and not yet taken by it) here, rather
    /// than sleep until the I/O thread gets to it. On a busy machine a woken thread may
    /// wait tens of microseconds for a CPU; the caller has one already. Returns whether
    /// there was such work (the caller looks at the socket again before sleeping).
    pub(crate) fn help(&self, id: usize) -> bool {
        let mut st = self.lock();
        let timer = st.sockets.get(&id).and_then(|s| s.core.poll_timeout());
        let mut helped = false;
        // A write that drained what it took is queued again to look for more: that look
        // is done here too, so that the I/O thread need not be woken for it.
        for _ in 0..HELP_BUDGET {
            let Some(work) = st
                .work
                .iter()
                .position(|w| w.id == id)
                .and_then(|at| st.work.remove(at))
            else {
                break;
            };
            helped = true;
            let ran;
            (st, ran) = self.run_here(st, work);
            if ran.again {
                st.work.push_back(work);
            }
            self.pump(&mut st, id);
            if !work.write {
                // Messages to receive now: the caller takes them while the I/O thread
                // reads on.
                break;
            }
        }
        if helped {
            self.after_here(st, id, timer);
        }
        helped
    }

    /// Before an application thread sleeps in a receive on socket `id` (and after
    /// [`help`](Self::help) found nothing queued): read the socket's streams that no one
    /// is reading (no read queued for, or running in, the I/O thread) here, without
    /// waiting, as the I/O thread would, and hand what comes to the state machine.
    /// Streams whose input is held (RCVHWM) are left alone. At most [`READ_HERE`]
    /// streams are tried, taking turns between calls; it stops once a message is ready.
    /// A socket with more than [`READ_HERE_PEERS`] streams is left to the I/O thread.
    /// Returns whether anything was read (the caller looks at the socket again).
    ///
    /// The I/O thread stays registered for every stream: a read here that empties a
    /// stream leaves the next readable edge to the I/O thread, and a read that fills the
    /// buffer, or overlaps a readable edge, queues the stream for the I/O thread to read
    /// on (as its own reads do), so no edge is lost.
    pub(crate) fn read_here(&self, id: usize) -> bool {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return false;
        };
        if s.peers.len() > READ_HERE_PEERS {
            return false;
        }
        s.waited = true;
        let timer = s.core.poll_timeout();
        let mut turn = [None; READ_HERE];
        for (slot, peer) in turn.iter_mut().zip(s.readable_here()) {
            *slot = Some(peer);
        }
        let mut read = false;
        let mut tried = 0;
        for peer in turn.into_iter().flatten() {
            let Some(s) = st.sockets.get_mut(&id) else {
                break;
            };
            if s.closed || s.can_recv() {
                break;
            }
            let Some(work) = s.claim_read(id, peer) else {
                continue;
            };
            tried += 1;
            let progress;
            (st, progress) = self.read_claimed_on(st, work);
            read |= progress;
        }
        if tried == 0 {
            return false;
        }
        self.pump(&mut st, id);
        self.after_here(st, id, timer);
        read
    }

    /// Read a stream claimed by this (application) thread (its read marked queued, not in
    /// the queue): as [`read_claimed_on`](Self::read_claimed_on), without the verdict.
    pub(super) fn read_claimed<'a>(
        &'a self,
        st: MutexGuard<'a, State>,
        work: Work,
    ) -> MutexGuard<'a, State> {
        self.read_claimed_on(st, work).0
    }

    /// Read a stream claimed by this thread; returns the lock again and whether anything
    /// was read (or the stream ended). If the stream may hold more (a full buffer, or a
    /// readable edge during the read, which the I/O thread left to this read), it reads
    /// on here a little, as the I/O thread would (rather than wake it for a read that
    /// finds nothing), then leaves the rest to it (queued).
    fn read_claimed_on<'a>(
        &'a self,
        st: MutexGuard<'a, State>,
        work: Work,
    ) -> (MutexGuard<'a, State>, bool) {
        let (mut st, mut ran) = self.run_here(st, work);
        let mut read = ran.progress;
        for _ in 0..READ_AGAIN {
            if !ran.again {
                break;
            }
            if let Some(s) = st.sockets.get_mut(&work.id) {
                if s.lease_more(work.peer, work.token, self.now()) {
                    // Silenced: the next receive reads on (it waits on the stream, which
                    // is readable at once), or the I/O thread when the lease ends. A
                    // receiver that keeps up with a flood reads it all itself.
                    return (st, read);
                }
            }
            (st, ran) = self.run_here(st, work);
            read |= ran.progress;
        }
        if ran.again {
            st.work.push_back(work);
        }
        (st, read)
    }

    /// Run one work item in this (application) thread: take it out of the state, run it
    /// without the lock, and hand the result over. Returns the lock again, and how it
    /// went.
    pub(super) fn run_here<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        work: Work,
    ) -> (MutexGuard<'a, State>, Ran) {
        let Some(job) = self.prepare(&mut st, work) else {
            if !work.write {
                self.lease(&mut st, work, self.now());
            }
            let ran = Ran {
                again: false,
                progress: false,
            };
            return (st, ran);
        };
        drop(st);
        HELPER_BUF.with_borrow_mut(|buf| {
            if !work.write && buf.is_empty() {
                buf.resize(READ_BUF, 0);
            }
            let done = run(job, buf);
            let progress = done.progress();
            let mut st = self.lock();
            let now = self.now();
            let again = self.apply(&mut st, work, done, buf, now);
            if !work.write {
                self.lease(&mut st, work, now);
            }
            (st, Ran { again, progress })
        })
    }

    /// After an application thread's read: a silenced stream that no one reads now is
    /// leased (`PeerIo::leased`).
    fn lease(&self, st: &mut State, work: Work, now: Instant) {
        if let Some(s) = st.sockets.get_mut(&work.id) {
            s.lease(work.peer, work.token, now);
        }
    }

    /// After the I/O thread's read (or a read it found nothing to do for): a silenced
    /// stream that no one reads now is registered for input again.
    pub(super) fn unsilence(&self, st: &mut State, work: Work) {
        if work.write {
            return;
        }
        let Some(io) = (st.sockets.get_mut(&work.id))
            .and_then(|s| s.peers.get_mut(&work.peer))
            .filter(|io| io.token == work.token)
        else {
            return;
        };
        if io.silenced && !io.read_queued {
            io.silenced = false;
            self.set_interest(io);
        }
    }

    /// The end of a socket's leases (`PeerIo::leased`), run by the I/O thread: its
    /// leased streams are registered for input again and read, for input that came
    /// while they were silenced.
    pub(super) fn end_leases(&self, st: &mut State, id: usize) {
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        s.lease_until = None;
        s.lease_len = super::LEASE;
        // One at a time (a read queued for each needs the whole state): no list made.
        loop {
            let Some(s) = st.sockets.get_mut(&id) else {
                return;
            };
            let Some((&peer, io)) = s.peers.iter_mut().find(|(_, io)| io.leased) else {
                return;
            };
            io.leased = false;
            io.read_queued = false;
            io.silenced = false;
            let wants = s.core.wants_read(peer);
            if !self.ring_again(io, wants) {
                self.set_interest(io);
                queue(st, id, peer, false);
            }
        }
    }

    /// After work run here on socket `id`: wake the I/O thread (if parked) for work
    /// left to it, or for a timer of the socket now due earlier than `timer` (a lost
    /// stream's reconnect, say); then wake whoever waits on the socket or in `poll`.
    pub(super) fn after_here(
        &self,
        mut st: MutexGuard<'_, State>,
        id: usize,
        timer: Option<Instant>,
    ) {
        let mut notify = Notify::default();
        notify.touch(&mut st, id);
        let earlier = st
            .sockets
            .get(&id)
            .and_then(|s| s.core.poll_timeout())
            .is_some_and(|t| timer.is_none_or(|before| t < before));
        // A lease began: the I/O thread is to end it in time.
        let leased =
            (st.sockets.get_mut(&id)).is_some_and(|s| std::mem::take(&mut s.lease_started));
        let wake_io = st.parked && (earlier || leased || !st.work.is_empty());
        if wake_io {
            st.parked = false;
        }
        self.inproc_touched(&mut st, &mut notify);
        drop(st);
        if wake_io {
            let _ = self.registrar.wake();
        }
        notify.signal(self);
    }

    /// Take a work item out of the state: what to run without the lock, if anything.
    pub(super) fn prepare(&self, st: &mut State, work: Work) -> Option<Job> {
        let s = st.sockets.get_mut(&work.id)?;
        let io = s
            .peers
            .get_mut(&work.peer)
            .filter(|io| io.token == work.token)?;
        if let (false, Some(r)) = (work.write, io.ring.as_mut()) {
            // The ring reads this stream: a read asked for (the stream came up, or its
            // input resumes) hands over what the ring stashed, and makes sure the ring's
            // receive runs.
            r.asked = false;
            let now = self.now();
            self.ring_deliver(st, work.id, work.peer, now);
            return None;
        }
        if !work.write {
            if !s.core.wants_read(work.peer) {
                // `Event::Resume` queues it again.
                io.read_queued = false;
                return None;
            }
            io.read_edge = false;
            if !matches!(*io.stream, StdTransport::Tls(_)) {
                // The state machine's room (for what the next item needs, 4 KiB at
                // least), or more for a stream whose last read filled it: a stream that
                // trickles keeps small buffers, one that carries bulk reads in large
                // pieces.
                let room = if io.read_full { READ_BUF } else { 0 };
                if let Some(buf) = s.core.take_read_buf(work.peer, room) {
                    return Some(Job::ReadInto(io.stream.clone(), buf));
                }
            }
            return Some(Job::Read(io.stream.clone()));
        }
        if io.write_blocked {
            io.write_queued = false;
            return None;
        }
        if io.taken.is_empty() {
            let taken = &mut io.taken;
            s.core
                .transmit_bytes(work.peer, |chunk| taken.push_back(chunk));
        }
        if io.taken.is_empty() && !io.stream.pending_output() {
            // All written: the next output names the peer again (`next_dirty`).
            io.write_queued = false;
            return None;
        }
        io.write_edge = false;
        Some(Job::Write(io.stream.clone(), std::mem::take(&mut io.taken)))
    }

    /// Hand a job's result to the state machine. Returns whether the work item goes on
    /// (the caller queues it again): a read that may have left bytes in the stream, a
    /// write to look for more output or to try again.
    pub(super) fn apply(
        &self,
        st: &mut State,
        work: Work,
        done: Done,
        buf: &[u8],
        now: Instant,
    ) -> bool {
        let again = self.apply_to_core(st, work, done, buf, now);
        // The context's ZAP client: the replies it read go to the sockets that asked (its
        // input makes no command or output, so nothing else would pump it).
        if st.zap.is_client(work.id) {
            self.zap_replies(st, work.id);
        }
        again
    }

    fn apply_to_core(
        &self,
        st: &mut State,
        work: Work,
        done: Done,
        buf: &[u8],
        now: Instant,
    ) -> bool {
        let Some(s) = st.sockets.get_mut(&work.id) else {
            return false;
        };
        let Some(io) = s
            .peers
            .get_mut(&work.peer)
            .filter(|io| io.token == work.token)
        else {
            // The stream was closed meanwhile: what it read or wrote no longer matters.
            return false;
        };
        let (result, room, data) = match done {
            Done::Read(result) => (result, buf.len(), Some(buf)),
            Done::ReadInto {
                buf: rx,
                room,
                result,
            } => {
                s.core.restore_read_buf(work.peer, rx);
                if let Ok(n) = result {
                    io.read_full = n == room;
                }
                (result, room, None)
            }
            Done::Write { written, rest, end } => {
                io.taken = rest;
                let again = match end {
                    // Look for more output.
                    WriteEnd::Drained => true,
                    // Room was made since the write started: try again.
                    WriteEnd::Blocked => {
                        if !io.write_edge {
                            io.write_blocked = true;
                            io.write_queued = false;
                            // The writable edge resumes it.
                            self.set_interest(io);
                        }
                        io.write_edge
                    }
                    WriteEnd::Failed => false,
                };
                if written > 0 {
                    s.core.advance(work.peer, written, || self.now());
                }
                if matches!(end, WriteEnd::Failed) {
                    self.lose_peer(st, work.id, work.peer, now);
                }
                return again;
            }
        };
        match result {
            Ok(0) => {
                self.lose_peer(st, work.id, work.peer, now);
                false
            }
            Ok(n) => {
                match data {
                    Some(data) => {
                        let data = data.get(..n).unwrap_or_default();
                        s.core.handle_received(work.peer, now, data);
                    }
                    None => s.core.handle_input(work.peer, now),
                }
                if io.stream.pending_output() {
                    // TLS records the read made (handshake messages) the stream did not
                    // take at once.
                    queue(st, work.id, work.peer, true);
                    return true;
                }
                if n < room && !io.read_edge {
                    // A short read emptied the stream: the next data raises a new edge.
                    io.read_queued = false;
                    false
                } else {
                    true
                }
            }
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock if !io.read_edge => {
                    io.read_queued = false;
                    false
                }
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => true,
                _ => {
                    self.fail_peer(st, work.id, work.peer, now, &e);
                    false
                }
            },
        }
    }

    /// After a write run by an application thread came back wanting to go on: if the
    /// state machine has more output for the peer, leave it to the I/O thread (queued);
    /// otherwise the stream is idle again. Spares the I/O thread a wake-up only to find
    /// nothing to write.
    pub(super) fn write_on(&self, st: &mut State, work: Work) {
        let Some(s) = st.sockets.get_mut(&work.id) else {
            return;
        };
        let Some(io) = s
            .peers
            .get_mut(&work.peer)
            .filter(|io| io.token == work.token)
        else {
            return;
        };
        if !io.write_blocked && io.taken.is_empty() {
            let taken = &mut io.taken;
            s.core
                .transmit_bytes(work.peer, |chunk| taken.push_back(chunk));
            if io.taken.is_empty() {
                // All written: the next output names the peer again (`next_dirty`).
                io.write_queued = false;
                return;
            }
        }
        st.work.push_back(work);
    }
}

/// Queue a read (`write` false) or a write of a peer's stream, unless one is queued.
pub(super) fn queue(st: &mut State, id: usize, peer: PeerId, write: bool) {
    if st.inproc.is_linked(id, peer) {
        // No stream: handed over in memory (`Shared::deliver_inproc`).
        st.inproc.queue(id, peer, write);
        return;
    }
    let Some(io) = st.sockets.get_mut(&id).and_then(|s| s.peers.get_mut(&peer)) else {
        return;
    };
    let queued = if write {
        if io.write_blocked {
            // The writable edge queues it.
            return;
        }
        &mut io.write_queued
    } else if let Some(r) = io.ring.as_mut() {
        // Read by the ring: the work item hands over its stash and makes sure its receive
        // runs (see `Shared::prepare`); its read counts as always running.
        &mut r.asked
    } else {
        if io.leased {
            // Taken over from the lease: the I/O thread reads it (then registers it for
            // input again).
            io.leased = false;
            st.work.push_back(Work {
                id,
                peer,
                token: io.token,
                write,
            });
            return;
        }
        &mut io.read_queued
    };
    if !*queued {
        *queued = true;
        st.work.push_back(Work {
            id,
            peer,
            token: io.token,
            write,
        });
    }
}

/// Drop the first `n` bytes written from the chunks taken for a write.
pub(super) fn consume(chunks: &mut VecDeque<Bytes>, mut n: usize) {
    while let Some(front) = chunks.front_mut() {
        if n < front.len() {
            *front = front.slice(n..);
            return;
        }
        n -= front.len();
        chunks.pop_front();
    }
}

/// Run a job, without the lock.
pub(super) fn run(job: Job, buf: &mut [u8]) -> Done {
    match job {
        Job::Read(stream) => Done::Read(stream.read(buf)),
        Job::ReadInto(stream, mut buf) => {
            if buf.capacity() == buf.len() {
                // Never a read of nothing (which would read as the stream's end).
                buf.reserve(READ_BUF);
            }
            let room = buf.capacity() - buf.len();
            let result = zmtp_uring::read_into(stream.as_fd(), &mut buf);
            Done::ReadInto { buf, room, result }
        }
        Job::Write(stream, mut rest) => {
            let mut written = 0;
            let end = loop {
                if rest.is_empty() {
                    // And the TLS records made of it (`wss://`), if the stream left some.
                    break match stream.flush() {
                        Ok(true) => WriteEnd::Drained,
                        Ok(false) => WriteEnd::Blocked,
                        Err(_) => WriteEnd::Failed,
                    };
                }
                let mut slices: [IoSlice<'_>; MAX_CHUNKS] = [IoSlice::new(&[]); MAX_CHUNKS];
                let mut n = 0;
                for (slot, chunk) in slices.iter_mut().zip(rest.iter()) {
                    *slot = IoSlice::new(chunk);
                    n += 1;
                }
                match stream.write_vectored(slices.get(..n).unwrap_or_default()) {
                    Ok(0) => break WriteEnd::Failed,
                    Ok(k) => {
                        written += k;
                        consume(&mut rest, k);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break WriteEnd::Blocked,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break WriteEnd::Failed,
                }
            };
            Done::Write { written, rest, end }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Context, Options, SocketType};

    /// Writes claimed by `socket`'s sending threads so far.
    fn inline_writes(socket: &crate::Socket) -> usize {
        socket.shared.lock().sockets[&socket.id].inline_writes
    }

    /// A batch of sends (`send_many`) that finds its stream idle is written by the
    /// sending thread, however soon after the last; a burst of single small sends is
    /// left to the I/O thread after its first.
    #[test]
    fn batches_are_written_by_their_sender_and_bursts_of_small_sends_by_the_io_thread() {
        const BATCHES: usize = 20;
        const PER_BATCH: usize = 200;
        const SINGLES: usize = 2000;
        let ctx = Context::new().unwrap();
        let pull = ctx.socket(SocketType::Pull).unwrap();
        pull.set_rcvtimeo(Some(Duration::from_secs(20)));
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        push.send_slice(b"hello").unwrap();
        assert_eq!(&pull.recv().unwrap().frames()[0][..], b"hello");
        let bodies = vec![[7u8; 64]; PER_BATCH];
        let counted = |send: &dyn Fn(), messages: usize| {
            let before = inline_writes(&push);
            std::thread::scope(|scope| {
                let receiver = scope.spawn(|| {
                    for _ in 0..messages {
                        let msg = pull.recv().unwrap();
                        assert_eq!(&msg.frames()[0][..], &[7u8; 64][..]);
                    }
                });
                send();
                receiver.join().unwrap();
            });
            inline_writes(&push) - before
        };
        let batches = counted(
            &|| {
                for _ in 0..BATCHES {
                    let mut rest = &bodies[..];
                    while !rest.is_empty() {
                        rest = &rest[push.send_many(rest).unwrap()..];
                    }
                }
            },
            BATCHES * PER_BATCH,
        );
        // Every batch found its stream idle unless a write of the one before was partial.
        assert!(
            batches >= BATCHES / 2,
            "{batches} of {BATCHES} batches were written by the sending thread"
        );
        let singles = counted(
            &|| {
                for _ in 0..SINGLES {
                    push.send_slice(&[7u8; 64]).unwrap();
                }
            },
            SINGLES,
        );
        // Only a send that comes after a pause writes itself.
        assert!(
            singles < SINGLES / 4,
            "{singles} of {SINGLES} single sends were written by the sending thread"
        );
    }

    /// A send that would block first runs the socket's writes queued for the I/O thread:
    /// a full queue whose messages only wait to be written takes the next one. The I/O
    /// thread is kept off the queue, so that only the sending thread writes.
    #[test]
    fn try_send_writes_what_is_queued_before_it_refuses() {
        const BURST: usize = 1000;
        let ctx = Context::new().unwrap();
        let pull = ctx.socket(SocketType::Pull).unwrap();
        pull.set_rcvtimeo(Some(Duration::from_secs(20)));
        let endpoint = pull.bind("ipc://*").unwrap();
        let push = ctx
            .socket_with(SocketType::Push, Options::default().with_sndhwm(4))
            .unwrap();
        push.connect(&endpoint).unwrap();
        push.send("hello").unwrap();
        assert_eq!(pull.recv().unwrap().to_str(), Ok("hello"));
        push.shared.lock().io_paused = true;
        let mut sent = 0;
        while sent < BURST && push.try_send(format!("m{sent}")).is_ok() {
            sent += 1;
        }
        push.shared.lock().io_paused = false;
        // A sender that left its queue to the I/O thread is refused once the 4 fill.
        assert_eq!(sent, BURST, "refused after {sent}");
        for i in 0..sent {
            assert_eq!(pull.recv().unwrap().to_str(), Ok(format!("m{i}").as_str()));
        }
    }
}
