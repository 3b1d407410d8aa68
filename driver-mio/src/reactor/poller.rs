//! Where the I/O thread waits: readiness from `mio` (epoll), or from an io_uring.
//!
//! The reactor asks the same of both: register a descriptor under a token for some
//! [`Interest`], change or drop that, wake the waiting thread, and wait for readiness
//! events ([`Ev`]) or a timeout. Both give edges: an event when readiness arrives, and
//! one at once when a descriptor is registered for readiness it already has.
//!
//! With io_uring, each registration is a multishot poll request on the ring, which posts
//! a completion per wake-up of the descriptor; a listener is a multishot accept instead
//! ([`Registrar::accept`]), whose connections come out as descriptors ([`RingOut`]),
//! armed again whenever the kernel ends it; wake-ups come through an eventfd the ring
//! keeps a read on ([`Wake`]: one write per wait at most).
//!
//! The I/O thread's writes to ring-read streams go through the ring too: each is one
//! `IORING_OP_WRITEV` of the peer's whole taken output ([`RingOut::to_write`]), its
//! chunks owned by the ring until it completes ([`RingOut::written`]). A write to a full
//! stream waits in the kernel for room (or, on kernels that honour the stream's
//! `O_NONBLOCK` there, completes at once with `EAGAIN`, and the writable edge resumes it,
//! as after a system call); one still in flight when its stream is dropped is cancelled,
//! so that the stream closes. A write of 16 KiB or more to a tcp stream goes as a
//! zero-copy send (`IORING_OP_SENDMSG_ZC`, as [`ZeroCopy`] says): its chunks stay with
//! the ring until the kernel's notification, which also says whether the kernel copied
//! after all (a peer on this host), and [`ZeroCopy::Auto`] then stops using it on that
//! stream.
//!
//! The I/O thread's timer is the wait's own timeout (the `io_uring_enter` argument), not
//! an `IORING_OP_TIMEOUT` request: the thread waits in one place only, and gets the
//! earliest deadline of its context afresh before each wait, so a timeout request
//! re-armed to that deadline would end the same waits at the same moments, at the cost
//! of a submission (and a removal) whenever the deadline moves. Registrations change from any thread:
//! they are queued, and the ring's thread (woken if it waits) submits them before it
//! waits again; the ring itself is touched by that thread only.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use zmtp_driver::StdTransport;
use zmtp_proto::{Bytes, BytesMut};
use zmtp_uring::io_uring::{cqueue, opcode, types};
use zmtp_uring::{BufRing, Reaped, Ring, Unavailable, Wake};

use super::work::Work;
use crate::ZeroCopy;

/// The waker's token under `mio`; streams and listeners count up from 1.
pub(super) const WAKER: Token = Token(0);

/// A readiness event.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ev {
    pub(super) token: Token,
    pub(super) readable: bool,
    pub(super) writable: bool,
    pub(super) error: bool,
    pub(super) read_closed: bool,
}

/// What a ring's receive brought for a stream ([`Registrar::recv`]).
#[derive(Debug)]
pub(super) enum RingIn {
    /// Bytes received (in a buffer of the ring, lent out until dropped).
    Data(Bytes),
    /// The peer closed the stream.
    End,
    /// The receive failed (the stream is lost, as on any read error).
    Failed,
    /// A read into the stream's own input buffer ([`Registrar::recv_into`]) completed:
    /// the buffer, with the bytes read appended, and what the read returned (bytes read,
    /// 0 at the stream's end, or the negative error number).
    Read { buf: BytesMut, result: i32 },
    /// No multishot receive of the stream is running or asked for any more: every one
    /// stopped ([`Registrar::stop_recv`]) has posted its last completion, so no more of
    /// its input comes. `recvs` counts the receives asked for ([`Registrar::recv`]) that
    /// the ring had taken by then: a later one may be on its way if the asker counted more.
    Stopped { recvs: u32 },
}

/// [`RingIn`] for the stream registered under `token`.
#[derive(Debug)]
pub(super) struct RingInput {
    pub(super) token: Token,
    pub(super) what: RingIn,
}

/// A write for the ring: the I/O thread's write work item of a ring-read stream, and the
/// output it took.
pub(super) struct RingWrite {
    pub(super) work: Work,
    /// Kept open until the write completes.
    pub(super) stream: Arc<StdTransport>,
    pub(super) bufs: VecDeque<Bytes>,
}

/// A write of the ring completed: bytes written (or the negative error number), and every
/// chunk it was given.
pub(super) struct RingWritten {
    pub(super) work: Work,
    pub(super) result: i32,
    pub(super) bufs: VecDeque<Bytes>,
}

/// What the ring brought besides readiness, taken by the I/O thread's turn, and the
/// writes the turn leaves for the ring.
#[derive(Default)]
pub(super) struct RingOut {
    /// Input received for streams.
    pub(super) inputs: Vec<RingInput>,
    /// Connections accepted on the listeners registered with [`Registrar::accept`], by
    /// the listener's token.
    pub(super) accepted: Vec<(Token, OwnedFd)>,
    /// Writes to submit in the next wait.
    pub(super) to_write: Vec<RingWrite>,
    /// Writes completed.
    pub(super) written: Vec<RingWritten>,
}

impl std::fmt::Debug for RingOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // By counts: the bytes say nothing here.
        f.debug_struct("RingOut")
            .field("inputs", &self.inputs.len())
            .field("accepted", &self.accepted.len())
            .field("to_write", &self.to_write.len())
            .field("written", &self.written.len())
            .finish()
    }
}

/// The side of the poller any thread uses: registrations and wake-ups.
pub(super) enum Registrar {
    Mio {
        registry: Registry,
        waker: Arc<Waker>,
    },
    Ring(Arc<RingRegistrar>),
}

/// The I/O thread's side: the wait.
pub(super) enum Poller {
    Mio {
        poll: Poll,
        events: Events,
        /// The registrar's waker, kept open as long as the wait: the context's end wakes
        /// the I/O thread as the last handle goes, and closing the eventfd at once then
        /// would drop the wake-up from epoll's ready list before the thread sees it, leaving
        /// the thread (and its epoll descriptor) waiting forever.
        _waker: Arc<Waker>,
    },
    Ring(Box<RingPoller>),
}

/// Make a poller of the chosen kind and its registrar.
pub(super) fn new(ring: bool) -> io::Result<(Poller, Registrar)> {
    if ring {
        let (poller, registrar) = RingPoller::new()?;
        return Ok((Poller::Ring(Box::new(poller)), Registrar::Ring(registrar)));
    }
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let registry = poll.registry().try_clone()?;
    Ok((
        Poller::Mio {
            poll,
            events: Events::with_capacity(256),
            _waker: waker.clone(),
        },
        Registrar::Mio { registry, waker },
    ))
}

impl Registrar {
    /// Register `fd` under `token` for `interest`.
    pub(super) fn register(&self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        match self {
            Registrar::Mio { registry, .. } => {
                registry.register(&mut SourceFd(&fd), token, interest)
            }
            Registrar::Ring(r) => {
                r.change(Change::Arm(fd, token, interest));
                Ok(())
            }
        }
    }

    /// Change what `fd`, registered under `token`, is registered for.
    pub(super) fn reregister(&self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        match self {
            Registrar::Mio { registry, .. } => {
                registry.reregister(&mut SourceFd(&fd), token, interest)
            }
            Registrar::Ring(r) => {
                r.change(Change::Arm(fd, token, interest));
                Ok(())
            }
        }
    }

    /// Stop polling `fd`, registered under `token`, for readiness, until it is
    /// registered again ([`register`]); a ring poller's receives, accepts and writes for
    /// it go on.
    ///
    /// [`register`]: Self::register
    pub(super) fn unpoll(&self, fd: RawFd, token: Token) -> io::Result<()> {
        self.unregister(fd, Change::Unpoll(token))
    }

    /// Drop the registration of `fd` under `token`.
    pub(super) fn deregister(&self, fd: RawFd, token: Token) -> io::Result<()> {
        self.unregister(fd, Change::Disarm(token))
    }

    /// Drop the registration of the listener `fd` under `token`. On the ring, its accept
    /// holds the listening socket until the ring's thread has cancelled it:
    /// [`wait_released`](Self::wait_released) waits for that.
    pub(super) fn release_listener(&self, fd: RawFd, token: Token) -> io::Result<()> {
        if let Registrar::Ring(r) = self {
            *r.releasing() += 1;
        }
        self.unregister(fd, Change::Release(token))
    }

    /// Wait, up to `limit`, until every listener released so far
    /// ([`release_listener`](Self::release_listener)) is let go of by the ring, so that
    /// its address (an abstract `ipc://@name`, which only the socket's last close frees)
    /// can be bound again. Not on the I/O thread, which is the one to let go. At once on
    /// epoll, where dropping a listener closes it.
    pub(super) fn wait_released(&self, limit: Duration) {
        let Registrar::Ring(r) = self else {
            return;
        };
        let left = r.releasing();
        let _ = r
            .released
            .wait_timeout_while(left, limit, |n| *n > 0)
            .unwrap_or_else(|e| e.into_inner());
    }

    /// Take `fd` out of the poll: on epoll, deregister it; on the ring, queue `change`
    /// (which says how much of its token's requests end).
    fn unregister(&self, fd: RawFd, change: Change) -> io::Result<()> {
        match self {
            Registrar::Mio { registry, .. } => registry.deregister(&mut SourceFd(&fd)),
            Registrar::Ring(r) => {
                r.change(change);
                Ok(())
            }
        }
    }

    /// Receive `fd`'s input through the ring (a multishot receive into the ring's
    /// buffers), reported as [`RingInput`]s under `token`, until [`stop_recv`] or
    /// [`deregister`]. Only for a ring poller; `mio` has no such thing.
    ///
    /// [`stop_recv`]: Self::stop_recv
    /// [`deregister`]: Self::deregister
    pub(super) fn recv(&self, stream: &Arc<StdTransport>, token: Token) {
        if let Registrar::Ring(r) = self {
            r.change(Change::Recv(stream.clone(), token));
        }
    }

    /// Accept connections on the listening socket `fd` through the ring (a multishot
    /// accept), reported under `token` in [`RingOut::accepted`], until [`deregister`].
    /// Only for a ring poller. Fails if the descriptor cannot be duplicated (the ring
    /// holds a duplicate while it may accept on it).
    ///
    /// [`deregister`]: Self::deregister
    pub(super) fn accept(&self, fd: BorrowedFd<'_>, token: Token) -> io::Result<()> {
        if let Registrar::Ring(r) = self {
            let fd = Arc::new(fd.try_clone_to_owned()?);
            r.change(Change::Accept(fd, token));
        }
        Ok(())
    }

    /// Read `fd`'s input once into the spare capacity of `buf` (the stream's own input
    /// buffer, taken out of its state machine), reported as [`RingIn::Read`] under
    /// `token`. Only for a ring poller (`buf` is dropped otherwise).
    pub(super) fn recv_into(&self, stream: &Arc<StdTransport>, token: Token, buf: BytesMut) {
        if let Registrar::Ring(r) = self {
            r.change(Change::RecvInto(stream.clone(), token, buf));
        }
    }

    /// Stop receiving for `token` (its input is held back): what the ring took already is
    /// still reported, and [`RingIn::Stopped`] once nothing more comes.
    pub(super) fn stop_recv(&self, token: Token) {
        if let Registrar::Ring(r) = self {
            r.change(Change::StopRecv(token));
        }
    }

    /// When the ring's writes send without copying. Only for a ring poller.
    pub(super) fn set_zero_copy(&self, mode: ZeroCopy) {
        if let Registrar::Ring(r) = self {
            r.set_zero_copy(mode);
        }
    }

    /// Wake the I/O thread from its wait.
    pub(super) fn wake(&self) -> io::Result<()> {
        match self {
            Registrar::Mio { waker, .. } => waker.wake(),
            Registrar::Ring(r) => {
                r.wake.wake();
                Ok(())
            }
        }
    }
}

impl Poller {
    /// Wait for readiness, a wake-up or `timeout` (none: no limit); the events go to `out`
    /// (cleared first). An interrupted wait returns no events.
    pub(super) fn wait(
        &mut self,
        out: &mut Vec<Ev>,
        ring: &mut RingOut,
        timeout: Option<Duration>,
    ) {
        out.clear();
        ring.inputs.clear();
        ring.accepted.clear();
        ring.written.clear();
        match self {
            Poller::Mio { poll, events, .. } => {
                // An error (EINTR) leaves no events.
                let _ = poll.poll(events, timeout);
                out.extend(events.iter().filter(|e| e.token() != WAKER).map(|e| Ev {
                    token: e.token(),
                    readable: e.is_readable(),
                    writable: e.is_writable(),
                    error: e.is_error(),
                    read_closed: e.is_read_closed(),
                }));
            }
            Poller::Ring(r) => r.wait(out, ring, timeout),
        }
    }
}

/// A registration change for the ring's thread to submit.
#[derive(Debug)]
enum Change {
    /// Poll `fd` for `interest` under `token` (replacing any poll for `token`).
    Arm(RawFd, Token, Interest),
    /// Stop polling for `token`, receiving and accepting for it.
    Disarm(Token),
    /// Stop polling for `token` (its receives, accepts and writes go on).
    Unpoll(Token),
    /// [`Disarm`](Change::Disarm) a listener, counted as releasing
    /// ([`Registrar::release_listener`]) until its accept has ended.
    Release(Token),
    /// Accept connections on the listener (a duplicate of its descriptor) under `token`.
    Accept(Arc<OwnedFd>, Token),
    /// Receive the stream's input under `token`. (Streams, not descriptors: a stream is
    /// kept open while the ring may still take its descriptor, so that a descriptor closed
    /// and reused meanwhile is never read in its place.)
    Recv(Arc<StdTransport>, Token),
    /// Stop receiving for `token`.
    StopRecv(Token),
    /// Read the stream's input into this buffer's spare capacity, under `token`.
    RecvInto(Arc<StdTransport>, Token, BytesMut),
}

/// The registrar of a ring poller: changes queued for its thread, its wake-up, and when
/// its writes send without copying ([`ZeroCopy`], as a number).
pub(super) struct RingRegistrar {
    changes: Mutex<Vec<Change>>,
    wake: Arc<Wake>,
    zero_copy: AtomicU8,
    /// Listeners released ([`Registrar::release_listener`]) whose accept may still hold
    /// the listening socket, and its signal when that count falls.
    releasing: Mutex<usize>,
    released: Condvar,
}

impl RingRegistrar {
    fn set_zero_copy(&self, mode: ZeroCopy) {
        self.zero_copy.store(mode as u8, Ordering::Relaxed);
    }

    fn change(&self, c: Change) {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(c);
        self.wake.wake();
    }

    fn releasing(&self) -> std::sync::MutexGuard<'_, usize> {
        self.releasing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `n` released listeners let go of their sockets (all of them: `None`).
    fn released(&self, n: Option<usize>) {
        let mut left = self.releasing();
        *left = n.map_or(0, |n| left.saturating_sub(n));
        if *left == 0 {
            self.released.notify_all();
        }
    }
}

/// `user_data` of the eventfd read.
const WAKE_DATA: u64 = u64::MAX;
/// `user_data` of poll removals and cancellations (their completions say nothing the
/// ring needs).
const REMOVE_DATA: u64 = u64::MAX - 1;
/// The bit that marks a receive's `user_data` (polls leave it clear).
const RECV_BIT: u64 = 1 << 63;
/// The bit that marks an accept's `user_data` (with `RECV_BIT`: polls and receives leave
/// it clear, so tokens stay below 2^30).
const ACCEPT_BIT: u64 = 1 << 62;
/// The bits that mark a write's `user_data` (both of the above), under a sequence number.
const WRITE_TAG: u64 = RECV_BIT | ACCEPT_BIT;
/// How long an accept the kernel ended with an error (out of descriptors, say) waits
/// before it is armed again: the connection waits in the listener's backlog meanwhile,
/// and the I/O thread does not spin on the error.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);
/// Buffers of the ring's provided-buffer group, and their size: 4 MiB per context.
const RECV_BUFFERS: u16 = 128;
pub(super) const RECV_BUFFER_SIZE: usize = 32 * 1024;
/// The fewest bytes a ring write carries for it to be sent without copying (a zero-copy
/// send pins its pages and waits for a second completion, which pays only for large
/// writes).
const ZERO_COPY_MIN: usize = 16 * 1024;

/// A multishot receive of the ring.
#[derive(Debug, Clone, Copy)]
struct Recv {
    fd: RawFd,
    generation: u32,
    /// It ended for want of buffers: armed again once some come back.
    starved: bool,
}

/// A multishot accept of the ring.
#[derive(Debug, Clone)]
struct Accept {
    /// The listener's descriptor, duplicated: held for as long as the accept may be armed
    /// again, so that it never names another file (the listener closed, and its number
    /// reused, before this thread took the change).
    fd: Arc<OwnedFd>,
    generation: u32,
    /// The kernel ended it with an error: armed again at this time.
    retry: Option<Instant>,
}

/// The submission entries of one poll registration: its generation tells a completion
/// of the current request from one of a request replaced since.
#[derive(Debug, Clone, Copy)]
struct Armed {
    fd: RawFd,
    mask: u32,
    generation: u32,
}

/// The I/O thread's ring: polls by token, the eventfd read, and the changes to apply.
pub(super) struct RingPoller {
    ring: Ring,
    registrar: Arc<RingRegistrar>,
    armed: HashMap<Token, Armed>,
    generation: u32,
    /// Where the eventfd read lands: boxed, so that its address holds while the read is
    /// in flight.
    wake_buf: Box<[u8; 8]>,
    wake_armed: bool,
    /// Changes taken from the registrar, kept to reuse the allocation.
    taken: Vec<Change>,
    /// The receives, by token.
    recvs: HashMap<Token, Recv>,
    /// Their buffers.
    bufs: BufRing,
    /// The accepts, by listener token.
    accepts: HashMap<Token, Accept>,
    /// Accepts cancelled whose last completion has not come, by `user_data`: each holds
    /// its listening socket open until then (dropping the poller waits for them, so that
    /// the port is free once the context is gone).
    accepts_ending: HashSet<u64>,
    /// Those of them whose listener was released ([`Change::Release`]): counted off in
    /// the registrar as each ends.
    releases: HashSet<u64>,
    /// Accepts submitted so far (armed again included).
    accepts_armed: u64,
    /// The writes in flight, by `user_data`: the work item to complete, and the stream,
    /// kept open until then.
    writes: HashMap<u64, (Work, Arc<StdTransport>)>,
    /// The write in flight of each stream, by the stream's token.
    write_of: HashMap<Token, u64>,
    /// The sequence number of the last write.
    write_seq: u64,
    /// Multishot receives submitted and not yet ended (their last completion), by token.
    recv_live: HashMap<Token, u32>,
    /// The receives asked for ([`Change::Recv`]) and taken, by token.
    recv_applied: HashMap<Token, u32>,
    /// The streams of the multishot receives (kept open until their last ends).
    recv_streams: HashMap<Token, Arc<StdTransport>>,
    /// The reads into streams' own buffers in flight, by `user_data` (the stream kept open
    /// until the read ends), and each stream's.
    reads: HashMap<u64, (Token, Arc<StdTransport>)>,
    read_of: HashMap<Token, u64>,
    /// Input to report with the next wait's (streams whose receives stopped at once).
    early: Vec<RingInput>,
    /// The zero-copy sends whose notification is to come, by `user_data`: their streams
    /// (`None` once dropped).
    zero_copy_of: HashMap<u64, Option<Token>>,
    /// The streams whose zero-copy sends the kernel copied after all (a peer on this
    /// host), or would (a loopback peer): [`ZeroCopy::Auto`] sends no more of them so.
    copied: HashSet<Token>,
    /// The tcp streams whose peer address [`ZeroCopy::Auto`] looked at.
    looked: HashSet<Token>,
    /// Completions taken from the ring, and the polls and receives to arm again: kept to
    /// reuse their allocations from one wait to the next.
    reaped: Reaped,
    rearm: Vec<(Token, Armed)>,
    rearm_recv: Vec<(Token, Recv)>,
}

/// Entries in the submission queue.
const RING_ENTRIES: u32 = 256;

impl RingPoller {
    fn new() -> io::Result<(RingPoller, Arc<RingRegistrar>)> {
        let ring = Ring::new(RING_ENTRIES).map_err(io::Error::from)?;
        let bufs = BufRing::new(&ring, 0, RECV_BUFFERS, RECV_BUFFER_SIZE)?;
        let registrar = Arc::new(RingRegistrar {
            changes: Mutex::new(Vec::new()),
            wake: Arc::new(Wake::new()?),
            zero_copy: AtomicU8::new(ZeroCopy::default() as u8),
            releasing: Mutex::new(0),
            released: Condvar::new(),
        });
        bufs.wake_on_return(registrar.wake.clone());
        Ok((
            RingPoller {
                ring,
                registrar: registrar.clone(),
                armed: HashMap::new(),
                generation: 0,
                wake_buf: Box::new([0; 8]),
                wake_armed: false,
                taken: Vec::new(),
                recvs: HashMap::new(),
                bufs,
                accepts: HashMap::new(),
                accepts_ending: HashSet::new(),
                releases: HashSet::new(),
                accepts_armed: 0,
                writes: HashMap::new(),
                write_of: HashMap::new(),
                write_seq: 0,
                recv_live: HashMap::new(),
                recv_applied: HashMap::new(),
                recv_streams: HashMap::new(),
                reads: HashMap::new(),
                read_of: HashMap::new(),
                early: Vec::new(),
                zero_copy_of: HashMap::new(),
                copied: HashSet::new(),
                looked: HashSet::new(),
                reaped: Reaped::default(),
                rearm: Vec::new(),
                rearm_recv: Vec::new(),
            },
            registrar,
        ))
    }

    /// `user_data` of the poll for `token` in `generation`.
    fn data(token: Token, generation: u32) -> u64 {
        ((token.0 as u64) << 32) | u64::from(generation)
    }

    /// Queue a submission entry, submitting what is queued first when the queue is full.
    fn push(&mut self, entry: &zmtp_uring::io_uring::squeue::Entry) {
        loop {
            // SAFETY: the entries pushed here are polls and poll removals, which point at
            // no memory, and the eventfd read, whose buffer (`wake_buf`) is boxed, is not
            // replaced while the read is in flight (`wake_armed`), and is leaked rather
            // than freed if the ring goes with the read still in flight (see `Drop`).
            let pushed = unsafe { self.ring.uring().submission().push(entry) };
            if pushed.is_ok() {
                return;
            }
            // Full: hand the queued entries to the kernel (completions wait in its
            // overflow list if the completion queue is full too).
            if self.ring.uring().submit().is_err() {
                return;
            }
        }
    }

    /// Submit a multishot poll for `token`.
    fn arm(&mut self, token: Token, armed: Armed) {
        let entry = opcode::PollAdd::new(types::Fd(armed.fd), armed.mask)
            .multi(true)
            .build()
            .user_data(Self::data(token, armed.generation));
        self.push(&entry);
    }

    /// Submit a multishot receive for `token`.
    fn arm_recv(&mut self, token: Token, recv: Recv) {
        let entry = opcode::RecvMulti::new(types::Fd(recv.fd), self.bufs.group())
            .build()
            .user_data(RECV_BIT | Self::data(token, recv.generation));
        self.push(&entry);
        *self.recv_live.entry(token).or_insert(0) += 1;
    }

    /// A multishot receive of `token` posted its last completion: once none runs and none
    /// is asked for, the stream's input comes only from reads into its own buffer.
    fn recv_ended(&mut self, token: Token, inputs: &mut Vec<RingInput>) {
        if let Some(n) = self.recv_live.get_mut(&token) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.recv_live.remove(&token);
            }
        }
        if !self.recv_live.contains_key(&token) && !self.recvs.contains_key(&token) {
            self.recv_streams.remove(&token);
            inputs.push(RingInput {
                token,
                what: RingIn::Stopped {
                    recvs: self.recv_applied.get(&token).copied().unwrap_or(0),
                },
            });
        }
    }

    /// Cancel the request submitted under `data` (its last completion still comes).
    fn cancel(&mut self, data: u64) {
        let entry = opcode::AsyncCancel::new(data)
            .build()
            .user_data(REMOVE_DATA);
        self.push(&entry);
    }

    /// Cancel the receive for `token`, if there is one.
    fn cancel_recv(&mut self, token: Token) {
        if let Some(old) = self.recvs.remove(&token) {
            self.cancel(RECV_BIT | Self::data(token, old.generation));
            if !self.recv_live.contains_key(&token) {
                // It had ended already (out of buffers): nothing more comes.
                self.recv_streams.remove(&token);
                self.early.push(RingInput {
                    token,
                    what: RingIn::Stopped {
                        recvs: self.recv_applied.get(&token).copied().unwrap_or(0),
                    },
                });
            }
        }
    }

    /// Cancel the read into the own buffer of the stream under `token`, if one is in
    /// flight: dropped, the stream is to close. Its buffer comes back with its completion.
    fn cancel_read(&mut self, token: Token) {
        if let Some(data) = self.read_of.remove(&token) {
            self.cancel(data);
        }
    }

    /// Submit a multishot accept for `token`.
    fn arm_accept(&mut self, token: Token, accept: &Accept) {
        use std::os::fd::AsRawFd;
        let data = ACCEPT_BIT | Self::data(token, accept.generation);
        self.ring.accept_multi(accept.fd.as_raw_fd(), data);
        self.accepts_armed += 1;
    }

    /// End everything the ring does for `token`: its poll, receives, accept, write and
    /// read.
    fn disarm_all(&mut self, token: Token) {
        if let Some(old) = self.armed.remove(&token) {
            self.disarm(token, old);
        }
        self.cancel_recv(token);
        self.cancel_accept(token);
        self.cancel_write(token);
        self.cancel_read(token);
        self.copied.remove(&token);
        self.looked.remove(&token);
        for of in self.zero_copy_of.values_mut() {
            if *of == Some(token) {
                *of = None;
            }
        }
        self.recv_applied.remove(&token);
    }

    /// Cancel the accept for `token`, if there is one.
    fn cancel_accept(&mut self, token: Token) {
        if let Some(old) = self.accepts.remove(&token) {
            let data = ACCEPT_BIT | Self::data(token, old.generation);
            self.cancel(data);
            if old.retry.is_none() {
                self.accepts_ending.insert(data);
            }
        }
    }

    /// Submit the turn's writes.
    fn submit_writes(&mut self, ring: &mut RingOut) {
        let mode = ZeroCopy::from_u8(self.registrar.zero_copy.load(Ordering::Relaxed));
        for w in ring.to_write.drain(..) {
            use std::os::fd::AsRawFd;
            self.write_seq += 1;
            let data = WRITE_TAG | self.write_seq;
            let fd = w.stream.as_raw_fd();
            if mode == ZeroCopy::Auto && self.looked.insert(w.work.token) {
                // The kernel copies whatever goes to a peer on this host (and says so only
                // in a send's notification): to a loopback address, no zero-copy send is
                // tried at all.
                if let StdTransport::Tcp(tcp) = &*w.stream {
                    if tcp
                        .peer_addr()
                        .is_ok_and(|a| a.ip().to_canonical().is_loopback())
                    {
                        self.copied.insert(w.work.token);
                    }
                }
            }
            let zero_copy = self.ring.has_send_zc()
                && matches!(*w.stream, StdTransport::Tcp(_))
                && match mode {
                    ZeroCopy::Off => false,
                    ZeroCopy::Auto => !self.copied.contains(&w.work.token),
                    ZeroCopy::Always => true,
                }
                && (w.bufs.iter().take(zmtp_uring::MAX_IOVECS))
                    .map(Bytes::len)
                    .sum::<usize>()
                    >= ZERO_COPY_MIN;
            let queued = if zero_copy {
                self.ring.send_zc(fd, data, w.bufs)
            } else {
                self.ring.writev(fd, data, w.bufs)
            };
            match queued {
                Ok(()) => {
                    if zero_copy {
                        self.zero_copy_of.insert(data, Some(w.work.token));
                    }
                    self.write_of.insert(w.work.token, data);
                    self.writes.insert(data, (w.work, w.stream));
                }
                Err(bufs) => {
                    // Not queued (the ring failed to take it): as a full stream, which the
                    // writable edge resumes (registering for it raises one at once if the
                    // stream has room).
                    ring.written.push(RingWritten {
                        work: w.work,
                        result: -rustix::io::Errno::AGAIN.raw_os_error(),
                        bufs,
                    });
                }
            }
        }
    }

    /// Cancel the write in flight to the stream under `token`, if there is one: dropped,
    /// the stream is to close, not wait for its peer to make room.
    fn cancel_write(&mut self, token: Token) {
        if let Some(data) = self.write_of.remove(&token) {
            self.cancel(data);
        }
    }

    /// Arm again the accepts whose retry time came; returns the earliest one left.
    fn retry_accepts(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut due = Vec::new();
        for (&token, a) in self.accepts.iter_mut() {
            match a.retry {
                Some(t) if t <= now => {
                    a.retry = None;
                    due.push((token, a.clone()));
                }
                Some(t) => next = Some(next.map_or(t, |n| n.min(t))),
                None => {}
            }
        }
        for (token, a) in due {
            self.arm_accept(token, &a);
        }
        next
    }

    fn disarm(&mut self, token: Token, old: Armed) {
        let entry = opcode::PollRemove::new(Self::data(token, old.generation))
            .build()
            .user_data(REMOVE_DATA);
        self.push(&entry);
    }

    fn apply_changes(&mut self) {
        let mut taken = std::mem::take(&mut self.taken);
        {
            let mut changes = self
                .registrar
                .changes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *changes, &mut taken);
        }
        for change in taken.drain(..) {
            match change {
                Change::RecvInto(stream, token, buf) => {
                    use std::os::fd::AsRawFd;
                    self.write_seq += 1;
                    let data = WRITE_TAG | self.write_seq;
                    match self.ring.recv_into(stream.as_raw_fd(), data, buf) {
                        Ok(()) => {
                            self.reads.insert(data, (token, stream));
                            self.read_of.insert(token, data);
                        }
                        // Not queued: given back as a read that found nothing.
                        Err(buf) => self.early.push(RingInput {
                            token,
                            what: RingIn::Read {
                                buf,
                                result: -rustix::io::Errno::AGAIN.raw_os_error(),
                            },
                        }),
                    }
                }
                Change::Arm(fd, token, interest) => {
                    if let Some(old) = self.armed.remove(&token) {
                        self.disarm(token, old);
                    }
                    self.generation = self.generation.wrapping_add(1);
                    let armed = Armed {
                        fd,
                        mask: mask_of(interest),
                        generation: self.generation,
                    };
                    self.armed.insert(token, armed);
                    self.arm(token, armed);
                }
                Change::Unpoll(token) => {
                    if let Some(old) = self.armed.remove(&token) {
                        self.disarm(token, old);
                    }
                }
                Change::Disarm(token) => self.disarm_all(token),
                Change::Release(token) => {
                    let ending = (self.accepts.get(&token))
                        .filter(|a| a.retry.is_none())
                        .map(|a| ACCEPT_BIT | Self::data(token, a.generation));
                    self.disarm_all(token);
                    match ending {
                        Some(data) if self.accepts_ending.contains(&data) => {
                            self.releases.insert(data);
                        }
                        _ => self.registrar.released(Some(1)),
                    }
                }
                Change::Accept(fd, token) => {
                    self.cancel_accept(token);
                    self.generation = self.generation.wrapping_add(1);
                    let accept = Accept {
                        fd,
                        generation: self.generation,
                        retry: None,
                    };
                    self.arm_accept(token, &accept);
                    self.accepts.insert(token, accept);
                }
                Change::Recv(stream, token) => {
                    use std::os::fd::AsRawFd;
                    let fd = stream.as_raw_fd();
                    self.recv_streams.insert(token, stream);
                    *self.recv_applied.entry(token).or_insert(0) += 1;
                    if !self.recvs.contains_key(&token) {
                        self.generation = self.generation.wrapping_add(1);
                        let recv = Recv {
                            fd,
                            generation: self.generation,
                            starved: false,
                        };
                        self.recvs.insert(token, recv);
                        self.arm_recv(token, recv);
                    }
                }
                Change::StopRecv(token) => self.cancel_recv(token),
            }
        }
        self.taken = taken;
    }

    /// Arm again the receives that ran out of buffers, if the ring has some now.
    fn feed_starved(&mut self) {
        if self.bufs.lent_out() >= usize::from(RECV_BUFFERS) {
            // None in the ring: the next one given back wakes this thread.
            return;
        }
        let starved: Vec<(Token, Recv)> = (self.recvs.iter_mut())
            .filter(|(_, r)| r.starved)
            .map(|(&t, r)| {
                r.starved = false;
                (t, *r)
            })
            .collect();
        for (token, recv) in starved {
            self.arm_recv(token, recv);
        }
    }

    fn wait(&mut self, out: &mut Vec<Ev>, ring: &mut RingOut, timeout: Option<Duration>) {
        self.submit_writes(ring);
        let inputs = &mut ring.inputs;
        self.apply_changes();
        let mut timeout = timeout;
        if !self.early.is_empty() {
            // Input to report already: look, do not wait.
            timeout = Some(Duration::ZERO);
            inputs.append(&mut self.early);
        }
        if !self.accepts.is_empty() {
            if let Some(t) = self.retry_accepts(Instant::now()) {
                let left = t.saturating_duration_since(Instant::now());
                timeout = Some(timeout.map_or(left, |w| w.min(left)));
            }
        }
        self.bufs.recycle();
        // A receive that ran out of buffers goes on once there are some: given back since,
        // or already back when it ran out (it may have run out just before the last
        // recycling).
        self.feed_starved();
        if !self.wake_armed {
            let fd = self.registrar.wake.raw_fd();
            let entry = opcode::Read::new(types::Fd(fd), self.wake_buf.as_mut_ptr(), 8)
                .build()
                .user_data(WAKE_DATA);
            self.push(&entry);
            self.wake_armed = true;
        }
        let waited = match timeout {
            Some(t) if t.is_zero() => self.ring.uring().submit(),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.uring().submitter().submit_with_args(1, &args)
            }
            None => self.ring.uring().submit_and_wait(1),
        };
        // ETIME (the timeout) and EINTR leave what completed, if anything.
        let _ = waited;
        let mut rearm = std::mem::take(&mut self.rearm);
        let mut rearm_recv = std::mem::take(&mut self.rearm_recv);
        let mut reaped = std::mem::take(&mut self.reaped);
        self.ring.reap(&mut reaped);
        for a in reaped.accepted.drain(..) {
            if !a.more {
                self.accepts_ending.remove(&a.user_data);
                if self.releases.remove(&a.user_data) {
                    self.registrar.released(Some(1));
                }
            }
            let token = Token(((a.user_data & !(RECV_BIT | ACCEPT_BIT)) >> 32) as usize);
            let generation = a.user_data as u32;
            let Some(accept) =
                (self.accepts.get_mut(&token)).filter(|x| x.generation == generation)
            else {
                // An accept cancelled since: a connection it took is dropped, as those
                // left in a closed listener's backlog are.
                continue;
            };
            let failed = match a.result {
                Ok(fd) => {
                    ring.accepted.push((token, fd));
                    false
                }
                Err(e) => e.raw_os_error() != Some(rustix::io::Errno::CANCELED.raw_os_error()),
            };
            if !a.more {
                // The kernel ended it: arm it again, at once, or after an error a little
                // later (the connection waits in the backlog).
                if failed {
                    accept.retry = Some(Instant::now() + ACCEPT_RETRY);
                } else {
                    let accept = accept.clone();
                    self.arm_accept(token, &accept);
                }
            }
        }
        for w in reaped.written.drain(..) {
            if let Some((work, _stream)) = self.writes.remove(&w.user_data) {
                if self.write_of.get(&work.token) == Some(&w.user_data) {
                    self.write_of.remove(&work.token);
                }
                ring.written.push(RingWritten {
                    work,
                    result: w.result,
                    bufs: w.bufs,
                });
            }
        }
        for (data, copied) in reaped.zero_copy_done.drain(..) {
            // (A stream dropped meanwhile is forgotten: `None`.)
            if let Some(Some(token)) = self.zero_copy_of.remove(&data) {
                if copied {
                    self.copied.insert(token);
                }
            }
        }
        let mut completions = std::mem::take(&mut reaped.other);
        for c in completions.drain(..) {
            match c.user_data() {
                WAKE_DATA => {
                    self.wake_armed = false;
                    self.registrar.wake.woken();
                }
                REMOVE_DATA => {}
                data if data & RECV_BIT != 0 => {
                    let token = Token(((data & !RECV_BIT) >> 32) as usize);
                    let generation = data as u32;
                    let result = c.result();
                    let more = cqueue::more(c.flags());
                    let chosen = cqueue::buffer_select(c.flags());
                    let current = self
                        .recvs
                        .get(&token)
                        .is_some_and(|r| r.generation == generation);
                    if !current {
                        // A receive cancelled since: its data, if any, is the stream's
                        // still (a cancel races with completions). Hand it on.
                        if let (Some(bid), true) = (chosen, result > 0) {
                            if let Some(bytes) = self.bufs.take(bid, result as usize) {
                                inputs.push(RingInput {
                                    token,
                                    what: RingIn::Data(bytes),
                                });
                            }
                        }
                        if !more {
                            self.recv_ended(token, inputs);
                        }
                        continue;
                    }
                    let what = match (result, chosen) {
                        (n, Some(bid)) if n > 0 => match self.bufs.take(bid, n as usize) {
                            Some(bytes) => RingIn::Data(bytes),
                            None => RingIn::Failed,
                        },
                        (0, _) => RingIn::End,
                        (n, _) if -n == rustix::io::Errno::NOBUFS.raw_os_error() => {
                            if let Some(r) = self.recvs.get_mut(&token) {
                                r.starved = true;
                            }
                            // Buffers given back from now on wake this thread.
                            self.bufs.starving();
                            if !more {
                                self.recv_ended(token, inputs);
                            }
                            continue;
                        }
                        (_, _) => RingIn::Failed,
                    };
                    let ended = !matches!(what, RingIn::Data(_));
                    inputs.push(RingInput { token, what });
                    if ended {
                        self.recvs.remove(&token);
                    } else if !more {
                        if let Some(&recv) = self.recvs.get(&token) {
                            rearm_recv.push((token, recv));
                        }
                    }
                    if !more {
                        self.recv_ended(token, inputs);
                    }
                }
                data => {
                    let token = Token((data >> 32) as usize);
                    let generation = data as u32;
                    let Some(&armed) = self.armed.get(&token) else {
                        continue;
                    };
                    if armed.generation != generation {
                        // A completion of a poll replaced since.
                        continue;
                    }
                    if !cqueue::more(c.flags()) {
                        // The kernel ended the multishot poll: arm it again.
                        rearm.push((token, armed));
                    }
                    if c.result() >= 0 {
                        let m = c.result() as u32;
                        out.push(Ev {
                            token,
                            readable: m & POLLIN != 0,
                            writable: m & POLLOUT != 0,
                            error: m & POLLERR != 0,
                            read_closed: m & (POLLRDHUP | POLLHUP) != 0,
                        });
                    }
                }
            }
        }
        // Reads into streams' own buffers after the receives' completions: a stream's read
        // is submitted only once its receives have all ended, so their input comes first.
        for r in reaped.received.drain(..) {
            if let Some((token, _stream)) = self.reads.remove(&r.user_data) {
                if self.read_of.get(&token) == Some(&r.user_data) {
                    self.read_of.remove(&token);
                }
                inputs.push(RingInput {
                    token,
                    what: RingIn::Read {
                        buf: r.buf,
                        result: r.result,
                    },
                });
            }
        }
        for (token, armed) in rearm.drain(..) {
            self.arm(token, armed);
        }
        for (token, recv) in rearm_recv.drain(..) {
            self.arm_recv(token, recv);
        }
        reaped.other = completions;
        self.reaped = reaped;
        self.rearm = rearm;
        self.rearm_recv = rearm_recv;
    }
}

/// How long a dropped ring waits for its receives to end before it gives up freeing
/// their buffers.
const DRAIN: Duration = Duration::from_millis(500);

impl Drop for RingPoller {
    fn drop(&mut self) {
        // Cancel every receive and wait for the last completion of each: only then may
        // their buffers be freed (a receive that already chose a buffer may still be
        // filling it). If they do not all end in time, the buffers stay allocated
        // (`BufRing`'s drop while registered) rather than risk a late write into freed
        // memory. Accepts are cancelled too, and the connections they took meanwhile
        // closed (left in the completion queue, their descriptors would stay open).
        let mut live: HashSet<u64> = (self.recvs.iter())
            .map(|(&t, r)| RECV_BIT | Self::data(t, r.generation))
            .collect();
        let accepts: HashSet<u64> = (self.accepts.iter())
            .filter(|(_, a)| a.retry.is_none())
            .map(|(&t, a)| ACCEPT_BIT | Self::data(t, a.generation))
            .chain(self.accepts_ending.iter().copied())
            .collect();
        live.extend(&accepts);
        // Writes waiting for room are cancelled, and their chunks freed when they end.
        live.extend(self.writes.keys());
        live.extend(self.zero_copy_of.keys());
        live.extend(self.reads.keys());
        let tokens: Vec<Token> = self.read_of.keys().copied().collect();
        for token in tokens {
            self.cancel_read(token);
        }
        let tokens: Vec<Token> = self.write_of.keys().copied().collect();
        for token in tokens {
            self.cancel_write(token);
        }
        let tokens: Vec<Token> = self.recvs.keys().copied().collect();
        for token in tokens {
            self.cancel_recv(token);
        }
        let tokens: Vec<Token> = self.accepts.keys().copied().collect();
        for token in tokens {
            self.cancel_accept(token);
        }
        let end = std::time::Instant::now() + DRAIN;
        let mut reaped = Reaped::default();
        while !live.is_empty() && std::time::Instant::now() < end {
            let ts = types::Timespec::from(Duration::from_millis(10));
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.uring().submitter().submit_with_args(1, &args);
            self.ring.reap(&mut reaped);
            for a in reaped.accepted.drain(..) {
                if !a.more {
                    live.remove(&a.user_data);
                }
            }
            for c in reaped.other.drain(..) {
                if !cqueue::more(c.flags()) {
                    live.remove(&c.user_data());
                }
            }
            for w in reaped.written.drain(..) {
                if !self.zero_copy_of.contains_key(&w.user_data) {
                    live.remove(&w.user_data);
                }
            }
            for r in reaped.received.drain(..) {
                live.remove(&r.user_data);
            }
            // A zero-copy send's chunks are the kernel's until its end.
            for (data, _) in reaped.zero_copy_done.drain(..) {
                self.zero_copy_of.remove(&data);
                live.remove(&data);
            }
        }
        if live.iter().all(|d| accepts.contains(d)) {
            let _ = self.bufs.unregister(&self.ring);
        }
        // The eventfd read may still be in flight while the ring winds down after this:
        // its 8 bytes are left allocated rather than risk a late write into freed memory.
        let buf = std::mem::replace(&mut self.wake_buf, Box::new([0; 8]));
        if self.wake_armed {
            Box::leak(buf);
        }
        // Whoever waits for a listener to be let go of waits no more.
        self.registrar.released(None);
    }
}

const POLLIN: u32 = 0x001;
const POLLPRI: u32 = 0x002;
const POLLOUT: u32 = 0x004;
const POLLERR: u32 = 0x008;
const POLLHUP: u32 = 0x010;
const POLLRDHUP: u32 = 0x2000;

/// The poll mask of a `mio` interest (errors and hang-ups are always reported).
fn mask_of(interest: Interest) -> u32 {
    let mut m = 0;
    if interest.is_readable() {
        m |= POLLIN | POLLRDHUP;
    }
    if interest.is_writable() {
        m |= POLLOUT;
    }
    if interest.is_priority() {
        m |= POLLPRI;
    }
    m
}

/// Whether the ring backend can run here, and why not.
pub(crate) fn ring_available() -> Result<(), Unavailable> {
    Ring::probe()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    /// Wait in the ring until `done` says so (five seconds at most).
    fn wait_until(p: &mut RingPoller, got: &mut RingOut, mut done: impl FnMut(&RingOut) -> bool) {
        let end = Instant::now() + Duration::from_secs(5);
        let mut evs = Vec::new();
        let mut all = RingOut::default();
        while !done(&all) {
            assert!(Instant::now() < end, "nothing more came: {all:?}");
            p.wait(&mut evs, got, Some(Duration::from_millis(20)));
            all.accepted.append(&mut got.accepted);
            all.inputs.append(&mut got.inputs);
        }
        *got = all;
    }

    #[test]
    fn a_stopped_receive_says_so_once_ended_counting_the_receives_taken() {
        let (mut p, registrar) = RingPoller::new().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut writer = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (reader, _) = l.accept().unwrap();
        reader.set_nonblocking(true).unwrap();
        let stream = Arc::new(StdTransport::Tcp(reader));
        let token = Token(9);
        let stopped = |r: &RingOut| {
            (r.inputs.iter()).find_map(|i| match i.what {
                RingIn::Stopped { recvs } => Some(recvs),
                _ => None,
            })
        };
        registrar.change(Change::Recv(stream.clone(), token));
        let mut got = RingOut::default();
        std::io::Write::write_all(&mut writer, b"one").unwrap();
        wait_until(&mut p, &mut got, |r| !r.inputs.is_empty());
        assert!(matches!(&got.inputs[0].what, RingIn::Data(b) if &b[..] == b"one"));
        // Stopped: once its last completion is in, with the one receive taken.
        registrar.change(Change::StopRecv(token));
        let mut got = RingOut::default();
        wait_until(&mut p, &mut got, |r| stopped(r).is_some());
        assert_eq!(stopped(&got), Some(1));
        // Asked again: a later stop counts two, and the stream's input still comes.
        registrar.change(Change::Recv(stream.clone(), token));
        std::io::Write::write_all(&mut writer, b"two").unwrap();
        let mut got = RingOut::default();
        wait_until(&mut p, &mut got, |r| {
            (r.inputs.iter()).any(|i| matches!(&i.what, RingIn::Data(b) if &b[..] == b"two"))
        });
        registrar.change(Change::StopRecv(token));
        let mut got = RingOut::default();
        wait_until(&mut p, &mut got, |r| stopped(r).is_some());
        assert_eq!(stopped(&got), Some(2));
        // The stream is let go once nothing of the ring may take its descriptor.
        assert!(!p.recv_streams.contains_key(&token));
        assert_eq!(Arc::strong_count(&stream), 1);
    }

    #[test]
    fn an_accept_the_kernel_ends_is_armed_again_and_a_disarmed_one_takes_nothing() {
        let (mut p, registrar) = RingPoller::new().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let token = Token(7);
        let dup = Arc::new(l.as_fd().try_clone_to_owned().unwrap());
        registrar.change(Change::Accept(dup.clone(), token));
        let mut got = RingOut::default();
        let c1 = TcpStream::connect(addr).unwrap();
        wait_until(&mut p, &mut got, |r| !r.accepted.is_empty());
        let (t, fd) = got.accepted.pop().unwrap();
        assert_eq!(t, token);
        let s1 = TcpStream::from(fd);
        assert_eq!(s1.peer_addr().unwrap(), c1.local_addr().unwrap());

        // End it behind the poller's back, as the kernel may (an overflowing completion
        // queue): the completion without `more` arms it again.
        let generation = p.accepts.get(&token).unwrap().generation;
        p.cancel(ACCEPT_BIT | RingPoller::data(token, generation));
        assert_eq!(p.accepts_armed, 1);
        let mut evs = Vec::new();
        let end = Instant::now() + Duration::from_secs(5);
        while p.accepts_armed < 2 {
            assert!(Instant::now() < end, "not armed again");
            p.wait(&mut evs, &mut got, Some(Duration::from_millis(20)));
        }
        assert_eq!(p.accepts.get(&token).unwrap().generation, generation);
        let c2 = TcpStream::connect(addr).unwrap();
        wait_until(&mut p, &mut got, |r| !r.accepted.is_empty());
        let (t, fd) = got.accepted.pop().unwrap();
        assert_eq!(t, token);
        assert_eq!(
            TcpStream::from(fd).peer_addr().unwrap(),
            c2.local_addr().unwrap(),
            "accepted after the kernel ended the first accept"
        );

        // Disarmed (the listener unbound): the next connection stays in the backlog.
        registrar.change(Change::Disarm(token));
        for _ in 0..3 {
            p.wait(&mut evs, &mut got, Some(Duration::from_millis(10)));
        }
        let c3 = TcpStream::connect(addr).unwrap();
        for _ in 0..5 {
            p.wait(&mut evs, &mut got, Some(Duration::from_millis(10)));
            assert!(got.accepted.is_empty(), "accepted after disarm");
        }
        assert!(p.accepts.is_empty());
        assert_eq!(
            Arc::strong_count(&dup),
            1,
            "the ring let go of the listener"
        );
        let (s3, _) = l.accept().expect("left in the backlog");
        assert_eq!(s3.peer_addr().unwrap(), c3.local_addr().unwrap());
    }
}

#[cfg(test)]
mod write_tests {
    use super::super::work::consume;
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use zmtp_proto::socket::{Options, Socket as ProtoSocket};
    use zmtp_proto::{Instant as CoreInstant, SocketType};

    /// A work item of a write (the peer of a connect of a state machine of its own).
    fn work() -> Work {
        let mut core = ProtoSocket::new(SocketType::Push, Options::default(), 1).unwrap();
        let ep = core.connect("tcp://127.0.0.1:1").unwrap();
        let peer = core.handle_connected(ep, "", CoreInstant::ZERO).unwrap();
        Work {
            id: 1,
            peer,
            token: Token(3),
            write: true,
        }
    }

    /// Submit `bufs` as the ring's write to `stream`.
    fn submit(p: &mut RingPoller, stream: &Arc<StdTransport>, bufs: VecDeque<Bytes>) {
        let mut out = RingOut::default();
        out.to_write.push(RingWrite {
            work: work(),
            stream: stream.clone(),
            bufs,
        });
        p.submit_writes(&mut out);
        assert!(out.written.is_empty(), "queued");
    }

    /// The write's completion, if it comes within `within`.
    fn completion(p: &mut RingPoller, within: Duration) -> Option<RingWritten> {
        let mut out = RingOut::default();
        let mut evs = Vec::new();
        let end = Instant::now() + within;
        while Instant::now() < end {
            p.wait(&mut evs, &mut out, Some(Duration::from_millis(10)));
            if let Some(w) = out.written.pop() {
                assert!(p.writes.is_empty() && p.write_of.is_empty(), "let go");
                return Some(w);
            }
        }
        None
    }

    fn len(bufs: &VecDeque<Bytes>) -> usize {
        bufs.iter().map(Bytes::len).sum()
    }

    #[test]
    fn a_partial_ring_write_gives_back_every_chunk_and_a_dropped_stream_cancels_its_write() {
        let (mut p, registrar) = RingPoller::new().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut reader = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (sender, _) = l.accept().unwrap();
        sender.set_nonblocking(true).unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&sender, 16 << 10).unwrap();
        rustix::net::sockopt::set_socket_recv_buffer_size(&reader, 16 << 10).unwrap();
        let stream = Arc::new(StdTransport::Tcp(sender));
        let sent: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 253) as u8).collect();
        let total = sent.len();
        let mut rest: VecDeque<Bytes> = sent.chunks(64 << 10).map(Bytes::copy_from_slice).collect();

        // More than the stream takes: part of it is written, every chunk comes back.
        submit(&mut p, &stream, rest);
        let w = completion(&mut p, Duration::from_secs(5)).expect("a first write");
        assert!(w.result > 0 && (w.result as usize) < total, "{}", w.result);
        assert_eq!(len(&w.bufs), total);
        assert_eq!(w.work.token, Token(3));
        rest = w.bufs;
        let mut written = w.result as usize;
        consume(&mut rest, written);

        // Nobody reads: the rest soon finds the stream full, and waits in the kernel for
        // room (or, where the kernel does not wait, says so).
        let mut waiting = false;
        for _ in 0..100 {
            submit(&mut p, &stream, rest);
            let Some(w) = completion(&mut p, Duration::from_millis(100)) else {
                // In flight: its chunks come back with its completion.
                waiting = true;
                rest = VecDeque::new();
                break;
            };
            rest = w.bufs;
            if w.result == -rustix::io::Errno::AGAIN.raw_os_error() {
                break;
            }
            assert!(w.result > 0, "{}", w.result);
            written += w.result as usize;
            consume(&mut rest, w.result as usize);
        }
        if waiting {
            assert_eq!(p.writes.len(), 1);
            // The stream dropped: its write is cancelled and gives its chunks back.
            registrar.change(Change::Disarm(Token(3)));
            let w = completion(&mut p, Duration::from_secs(5)).expect("cancelled");
            assert!(w.result <= 0, "nothing written meanwhile: {}", w.result);
            rest = w.bufs;
        }
        assert_eq!(
            len(&rest),
            total - written,
            "every chunk not written is back"
        );

        // Read on another thread; the rest goes out in further writes, in order.
        let got = std::thread::spawn(move || {
            let mut got = vec![0u8; total];
            reader.read_exact(&mut got).unwrap();
            got
        });
        while !rest.is_empty() {
            submit(&mut p, &stream, rest);
            let w = completion(&mut p, Duration::from_secs(10)).expect("written");
            rest = w.bufs;
            if w.result > 0 {
                written += w.result as usize;
                consume(&mut rest, w.result as usize);
            } else {
                assert_eq!(w.result, -rustix::io::Errno::AGAIN.raw_os_error());
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(written, total);
        assert!(got.join().unwrap() == sent, "every byte, in order");
    }

    #[test]
    fn zero_copy_sends_stop_on_a_stream_the_kernel_copies_for_unless_always() {
        use std::os::fd::AsRawFd;
        let (mut p, registrar) = RingPoller::new().unwrap();
        assert!(p.ring.has_send_zc());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut reader = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (sender, _) = l.accept().unwrap();
        sender.set_nonblocking(true).unwrap();
        registrar.change(Change::Arm(
            sender.as_raw_fd(),
            Token(3),
            Interest::PRIORITY,
        ));
        let stream = Arc::new(StdTransport::Tcp(sender));
        let big = Bytes::from(vec![7u8; ZERO_COPY_MIN]);
        let small = Bytes::from(vec![8u8; ZERO_COPY_MIN - 1]);
        let mut expected = 0;
        // Write `bufs`, whole, and say whether it went as a zero-copy send; wait for the
        // kernel's end of it if so.
        let mut write = |p: &mut RingPoller, bufs: Bytes| -> bool {
            expected += bufs.len();
            submit(p, &stream, [bufs].into_iter().collect());
            let zero_copy = !p.zero_copy_of.is_empty();
            let w = completion(p, Duration::from_secs(5)).expect("written");
            assert_eq!(w.result as usize, len(&w.bufs), "written whole");
            let end = Instant::now() + Duration::from_secs(5);
            while !p.zero_copy_of.is_empty() {
                assert!(Instant::now() < end, "the kernel ends a zero-copy send");
                p.wait(
                    &mut Vec::new(),
                    &mut RingOut::default(),
                    Some(Duration::from_millis(10)),
                );
            }
            assert_eq!(p.ring.writes_in_flight(), 0);
            zero_copy
        };
        registrar.set_zero_copy(ZeroCopy::Auto);
        // A loopback peer: never tried.
        assert!(!write(&mut p, big.clone()), "to loopback: copied");
        assert!(p.copied.contains(&Token(3)));
        // As if the peer's address had said nothing (another address of this host, or a
        // veth pair into another namespace): tried, until the kernel says it copied.
        p.copied.clear();
        assert!(!write(&mut p, small.clone()), "below the threshold: copied");
        assert!(
            write(&mut p, big.clone()),
            "a first large write goes without copying"
        );
        // On this host the kernel copied after all: the stream's writes copy from now on.
        assert!(p.copied.contains(&Token(3)));
        assert!(!write(&mut p, big.clone()));
        registrar.set_zero_copy(ZeroCopy::Always);
        assert!(write(&mut p, big.clone()));
        assert!(write(&mut p, big.clone()));
        registrar.set_zero_copy(ZeroCopy::Off);
        assert!(!write(&mut p, big.clone()));
        // The stream dropped: what was learnt of it goes too.
        registrar.change(Change::Disarm(Token(3)));
        p.wait(
            &mut Vec::new(),
            &mut RingOut::default(),
            Some(Duration::ZERO),
        );
        assert!(p.copied.is_empty() && p.looked.is_empty());
        let mut got = vec![0u8; expected];
        reader.read_exact(&mut got).unwrap();
        assert_eq!(got.iter().filter(|&&b| b == 8).count(), small.len());
        assert_eq!(got.iter().filter(|&&b| b == 7).count(), 6 * big.len());
    }
}
