//! The I/O thread of a [`Context`](crate::Context) and the state it shares with the
//! application's threads.
//!
//! The sockets' state machines sit behind one mutex; the streams are shared with the I/O
//! thread, which makes its system calls without holding the lock:
//!
//! - An application call locks, calls into the state machine, and leaves the I/O to the
//!   I/O thread as work items (write this peer, read that one). The I/O thread is woken
//!   only when it is parked in `mio::Poll`; while it is busy, it finds new work itself
//!   before it parks again. A burst of sends thus costs one wake-up, not one per message.
//! - The I/O thread takes a work item under the lock (for a write: the bytes queued for
//!   the peer, as owned chunks), unlocks, reads or writes, then locks again to hand the
//!   result to the state machine (bytes read, or how many were written). Meanwhile the
//!   application keeps sending into, or receiving from, the state machine.
//! - A send that finds its stream idle (no write queued or running, none blocked) is
//!   written by the sending thread itself, the same way, rather than handed to the I/O
//!   thread and back ([`Shared::send_with`]). Only the first send of a burst does so
//!   (see [`Sock::claim_write`]): the rest queue behind it for the I/O thread, which
//!   writes them in bulk. A send that leaves a batch to write (`send_many`, a large
//!   message) writes it itself whenever the stream is idle, burst or not.
//! - A thread about to block in `send`, `recv` or `close` first runs its socket's queued
//!   work items itself (those the I/O thread has not taken yet): it has a CPU, which a
//!   woken I/O thread may wait for when threads outnumber CPUs.
//! - A thread about to block in `recv` with no message ready waits on the socket's
//!   streams itself, in `poll(2)` ([`Shared::wait_on_streams`]), and reads them when
//!   they have input: a message costs no hop through the I/O thread. It claims the
//!   streams as a running read does (so that no two threads read one stream) and takes
//!   them out of the I/O thread's poll ("silenced"), so that the I/O thread is not woken
//!   for them (a registration for any readiness a stream never has would still wake it
//!   for every segment that comes in). Afterwards they stay so for a short lease (2 ms,
//!   growing to 16 ms while a thread keeps coming back, so that the I/O thread rarely
//!   wakes to check on a busy receiver), for
//!   the next `recv` to read or wait on them again without registering them in between;
//!   a readiness event, a resume after RCVHWM, a thread that sleeps on a condition
//!   variable instead, or the lease's end gives them back to the I/O thread, which
//!   registers them for input again. (Registering a stream for readiness it already has
//!   raises an edge at once, so no input goes unnoticed in the change.) A thread that
//!   cannot wait so (more streams than it reads at once, another thread waiting so, a
//!   read running in the I/O thread) reads the streams no one reads once
//!   ([`Shared::read_here`]), then waits on the condition variable.
//! - Threads blocked in `send`, `recv`, `close` or [`poll`](crate::poll) wait on a
//!   condition variable of their socket (or of the context, for `poll`), signalled only
//!   when someone waits, and once per wait; a thread waiting on the streams waits on an
//!   event counter too, written by the same signal. Threads that wait in `recv` alone are
//!   signalled only when a message is ready or the socket closed: on a server, peers'
//!   handshakes and writes do not wake its receiving thread.
//! - Streams are registered for writability only while a write to them is blocked.
//! - A thread reads a plain stream straight into its state machine's receive buffer
//!   (taken out of it while the read runs, 64 KiB of room once a read filled what it
//!   had), so that received bytes are not copied again; frames are cut from that buffer.
//! - On io_uring, the ring reads a socket's streams while no thread waits on them; a
//!   thread that would wait on them has the ring lend them (`Shared::lend_ring_streams`),
//!   reads them as above while it keeps coming back, and the I/O thread gives them back to
//!   the ring when its lease runs out.
//!
//! Every protocol decision is the core's; this module moves bytes.
//!
//! - `io_loop`: the I/O thread's loop (readiness, timers and leases, then queued work);
//! - `work`: the work queue (reads and writes, run without the lock, by the I/O thread
//!   or an application thread);
//! - `waiters`: threads waiting on a socket, on its streams or in `poll`, and their
//!   signals;
//! - `registry`: streams and listeners under poll tokens, and the socket's events.
//!
//! Streams and listeners are `std`'s, set up by `zmtp-driver` and registered by file
//! descriptor; only a connect in progress is `mio`'s (`std` has no non-blocking connect).

mod affinity;
mod inproc;
mod io_loop;
mod poller;
mod registry;
mod ring_io;
mod waiters;
mod work;
mod zap;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io;
use std::ops::Bound::{Excluded, Unbounded};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant as StdInstant};

use mio::net::TcpStream;
use mio::{Interest, Token};
use zmtp_proto::socket::{
    CloseReport, EndpointId, Message, MonitorEvent, PeerId, Socket as ProtoSocket,
};
use zmtp_proto::udp::MAX_DATAGRAM_LEN;
use zmtp_proto::{Bytes, Instant};

use io_loop::io_thread;
pub(crate) use poller::ring_available;
use poller::Registrar;
use poller::{RingIn, RingInput};
use registry::Commands;
use waiters::Waiters;
use work::{queue, Work};
use zmtp_driver::ready::Ready;
use zmtp_driver::{
    drain_datagrams, run_commands, send_datagram, Attempts, SocketFile, StdListener, StdTransport,
    Tls, TlsSide,
};

/// The I/O thread's read buffer: the most read from a stream in one call.
const READ_BUF: usize = 64 * 1024;
/// How long streams stay silenced after an application thread last read them
/// (`PeerIo::leased`), at first: input that comes meanwhile waits (in the kernel) for the
/// next receive, or for the end of the lease.
const LEASE: Duration = Duration::from_millis(2);
/// The longest lease: each time the I/O thread wakes to find a socket's lease renewed (a
/// thread keeps receiving), the socket's next leases last twice as long, up to this, so
/// that the I/O thread wakes less and less often for a busy receiver (each wake costs a
/// receiver that shares its CPU a few microseconds: with 2 ms leases, about one round trip
/// in a hundred of a pinned request-reply loop was late by 10 to 20 µs). A lease that runs
/// out, or a thread that sleeps without waiting on the streams, starts again from
/// [`LEASE`].
const LEASE_MAX: Duration = Duration::from_millis(16);
/// Sends that find their stream idle less than this apart are a burst: the first is
/// written by the sending thread, the rest by the I/O thread ([`Sock::claim_write`]).
const INLINE_GAP: Duration = Duration::from_micros(50);
/// Output at least this long is written by the sending thread whenever its stream is idle,
/// burst or not: one system call is then spread over enough messages.
const INLINE_BATCH: usize = 8 * 1024;

/// The least room a read into a stream's own input buffer gets (io_uring backend).
const OWN_READ_ROOM: usize = 2 * poller::RECV_BUFFER_SIZE;

/// What a context's threads share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Signalled, while threads wait in [`poll`](crate::poll), whenever a socket of this
    /// context may have become readable, writable or closed.
    polled: Condvar,
    /// Registrations with the I/O thread's poller, and its wake-up.
    registrar: Registrar,
    /// The poller is an io_uring (else epoll, through mio).
    pub(crate) ring: bool,
    /// The process's clock start (`zmtp_driver::clock`), shared with every other driver.
    start: StdInstant,
    /// This context, for the threads that look host names up.
    me: Weak<Shared>,
    /// How many [`Context`](crate::Context) handles exist: once none does, a dropped
    /// socket waits for its own linger (nothing else would).
    pub(crate) contexts: AtomicUsize,
    /// The I/O thread, once it has started (for its CPU affinity).
    io_thread: std::sync::OnceLock<affinity::IoThread>,
}

impl Shared {
    /// Let the I/O thread run on `cpus` only (none: where it started allowed to).
    pub(crate) fn set_io_thread_affinity(&self, cpus: &BTreeSet<usize>) -> io::Result<()> {
        match self.io_thread.get() {
            Some(thread) => thread.set_affinity(cpus),
            None => Err(io::Error::other("the I/O thread did not start")),
        }
    }

    /// When the ring's writes send without copying (ignored on epoll).
    pub(crate) fn set_zero_copy(&self, mode: crate::ZeroCopy) {
        self.registrar.set_zero_copy(mode);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The I/O thread holds only a weak reference: wake it to find that out and end.
        let _ = self.registrar.wake();
    }
}

struct PeerIo {
    stream: Arc<StdTransport>,
    /// The stream's token: unique per stream, so a result that comes back for a stream
    /// replaced meanwhile is recognised.
    token: Token,
    /// A write would block: the writable edge resumes it.
    write_blocked: bool,
    /// A read of this stream is queued or running.
    read_queued: bool,
    /// A write of this stream is queued or running.
    write_queued: bool,
    /// A readable edge came since the last read started. Reads and writes may run in
    /// an application thread ([`Shared::help`]) while the I/O thread takes in readiness
    /// events: an edge that comes during a read that then finds the stream empty (or a
    /// write that then finds it full) must not be lost, so that read (or write) goes
    /// again.
    read_edge: bool,
    /// A writable edge came since the last write started (see `read_edge`).
    write_edge: bool,
    /// The last read into the state machine's receive buffer filled the room it had: the
    /// next has `READ_BUF` of room at least ([`Job::ReadInto`](work::Job::ReadInto)).
    read_full: bool,
    /// An application thread waits on this stream itself ([`Shared::wait_on_streams`]):
    /// the I/O thread is not told of its input meanwhile.
    silenced: bool,
    /// What the stream is registered for with the I/O thread's poll, if anything
    /// ([`Shared::set_interest`]).
    interest: Option<Interest>,
    /// Silenced and left so after an application thread read it or waited on it: the
    /// next receive reads it again without registering it for input in between. The
    /// lease holds the stream's read claim (`read_queued`) for whichever thread reads
    /// next: an application thread, the I/O thread on an edge or a resume, or the I/O
    /// thread when the socket's lease runs out (`Sock::lease_until`), which registers
    /// it for input again.
    leased: bool,
    /// Output taken from the state machine and not yet written: the front of what it
    /// has queued for the peer, which it drops (`advance`) only once written, so that
    /// SNDHWM and LINGER count it until then.
    taken: VecDeque<Bytes>,
    /// The stream's input comes through the ring's receive (io_uring backend, a plain
    /// stream): no thread reads it, and its read counts as always running
    /// (`read_queued`), so that no application thread claims it.
    ring: Option<RingRead>,
    /// A ring-read stream lent to application threads (`RingRead::lending`): read as on
    /// epoll until a lease of it runs out (no thread came back to it in time), when the
    /// ring's receive starts again ([`Shared::ring_again`]). It holds how many multishot receives the stream was
    /// asked for before (the ring's [`RingIn::Stopped`] counts on from there).
    lent: Option<u32>,
}

/// A stream read by the ring ([`PeerIo::ring`]).
#[derive(Debug, Default)]
struct RingRead {
    /// What arrived and the state machine did not take yet (its input is held back at
    /// RCVHWM), in order, the stream's end included.
    stash: VecDeque<RingIn>,
    /// The ring's receive runs (or was asked for): the multishot receive, or a read into
    /// the stream's own input buffer (`own`).
    receiving: bool,
    /// The stream's reads go into its own input buffer, one at a time, rather than
    /// through the ring's shared buffers: since a receive filled a whole shared buffer
    /// (the stream carries bulk, and each shared buffer would be copied into the input
    /// buffer). For good.
    own: bool,
    /// A multishot receive may still bring input (asked for, or stopped and not yet
    /// ended): reads into the own buffer wait until it has ([`RingIn::Stopped`]).
    multishot: bool,
    /// Multishot receives asked for so far: a [`RingIn::Stopped`] that counts fewer was
    /// sent before the ring took the last of them, and says nothing of it.
    recvs_asked: u32,
    /// A read work item is queued for it (`work::queue`).
    asked: bool,
    /// An application thread means to wait on the stream itself
    /// ([`Shared::lend_ring_streams`]): once the multishot receive has ended and its
    /// input is delivered, the ring stops reading the stream (`PeerIo::lent`).
    lending: bool,
}

/// What a token stands for.
#[derive(Debug, Clone, Copy)]
enum Io {
    Peer(PeerId),
    Listener(EndpointId),
    Connecting(EndpointId),
    /// The UDP socket of a bound `udp://` endpoint.
    Udp(EndpointId),
}

/// A listening endpoint.
struct Listener {
    /// The endpoint as the socket names it once bound (`ipc://@name`,
    /// `tcp://127.0.0.1:5555`).
    address: String,
    listener: StdListener,
    token: Token,
    /// The socket file of an `ipc://` path, removed when listening stops.
    _socket_file: Option<SocketFile>,
    /// The ring accepts on it (io_uring backend).
    ring: bool,
}

impl Drop for Listener {
    /// On the ring, the accept in flight holds the listening socket until the ring's
    /// thread has cancelled it, after this returns (even after the context is gone): a
    /// tcp listener is shut down first, which takes it off its port at once, as closing it
    /// does on epoll, so that a program that unbinds, or drops its context, and binds the
    /// port again finds it free. (A shutdown does not unbind a unix socket: for an
    /// abstract `ipc://@name`, `unbind` and the drops of the socket and its context wait
    /// for the ring to let go, [`Shared::let_go_of_listeners`].)
    fn drop(&mut self) {
        if let (true, StdListener::Tcp(l)) = (self.ring, &self.listener) {
            let _ = rustix::net::shutdown(l, rustix::net::Shutdown::Read);
        }
    }
}

/// The UDP socket of a `udp://` endpoint; a bound one is registered for input under
/// `token`.
struct UdpIo {
    socket: std::net::UdpSocket,
    token: Option<Token>,
    /// Where datagrams go that the core sends to no address (a multicast group).
    send_to: Option<std::net::SocketAddr>,
}

/// A TCP connect in progress, and the addresses left to try if it fails.
struct Connecting {
    stream: TcpStream,
    token: Token,
    attempts: Attempts,
}

/// One socket's state machine and the streams it directs.
pub(crate) struct Sock {
    pub(crate) core: ProtoSocket,
    peers: BTreeMap<PeerId, PeerIo>,
    listeners: BTreeMap<EndpointId, Listener>,
    connecting: BTreeMap<EndpointId, Connecting>,
    udp: BTreeMap<EndpointId, UdpIo>,
    /// Endpoints whose host name is being looked up (off the lock, on a thread of its
    /// own): a result for an endpoint no longer here is dropped.
    resolving: BTreeSet<EndpointId>,
    pub(crate) monitors: Vec<mpsc::Sender<MonitorEvent>>,
    /// Results of binds not yet collected by `bind`.
    pub(crate) bound: BTreeMap<EndpointId, io::Result<String>>,
    /// Listening sockets `bind_listener` gave for endpoints about to listen, used in
    /// place of ones made for them.
    pub(crate) listen_fds: BTreeMap<EndpointId, std::os::fd::OwnedFd>,
    pub(crate) closed: bool,
    /// The application dropped its handle: forget the socket once it has closed.
    pub(crate) orphaned: bool,
    /// What the handle's `recv` took in a batch and hands out one per call: messages
    /// received as far as the state machine knows, still ready for the application.
    pub(crate) ready: Arc<Ready>,
    /// Application threads waiting on `cond`.
    waiters: Waiters,
    /// Some thread waits (in `waiters`) for something other than a message: room to
    /// send, a bind's result, the close ([`Shared::wait_for`]). Cleared by a signal.
    waiting_other: bool,
    /// Signals sent to this socket's waiters, for tests.
    #[cfg(test)]
    signals: usize,
    /// Writes claimed by sending threads ([`Sock::claim_write`]).
    #[cfg(test)]
    inline_writes: usize,
    /// Signalled, while threads wait, whenever the socket may have become readable,
    /// writable or closed.
    cond: Arc<Condvar>,
    /// An application thread went to wait on this socket (or to read its streams itself)
    /// since a send last wrote in the application's thread: the next send to an idle
    /// stream is written at once by its caller ([`Sock::claim_write`]).
    waited: bool,
    /// When a send last found its stream idle.
    idle_send: Instant,
    /// The stream an application thread read last ([`Shared::read_here`]): the next one
    /// starts after it.
    read_turn: Option<PeerId>,
    /// An application thread waits on the socket's streams and on `wake_fd`
    /// ([`Shared::wait_on_streams`]), not on `cond`: a signal writes `wake_fd` too.
    fd_waiting: bool,
    /// The event counter that wakes a thread waiting on the streams; made the first
    /// time one does.
    wake_fd: Option<Arc<OwnedFd>>,
    /// When the leases of the socket's streams run out (`PeerIo::leased`): renewed by
    /// every read of an application thread.
    lease_until: Option<Instant>,
    /// How long a lease lasts from the read that renews it: [`LEASE`], doubled up to
    /// [`LEASE_MAX`] each time the I/O thread finds the lease renewed.
    lease_len: Duration,
    /// A lease began with none running: the I/O thread, if parked, is to be woken to
    /// wait no longer than its end.
    lease_started: bool,
    /// The TLS settings of `wss://` endpoints bound or connected from now on.
    pub(crate) tls: Tls,
    /// The TLS side of each `wss://` endpoint listened on or connected to.
    tls_sides: BTreeMap<EndpointId, TlsSide>,
    /// The readiness descriptor, once asked for ([`crate::readiness`]): counted up when
    /// the I/O side changes the socket.
    pub(crate) readiness: Option<Arc<OwnedFd>>,
}

/// How to wake the threads waiting on a socket: its condition variable, and the event
/// counter of a thread waiting on its streams, if one does.
pub(crate) struct Signal {
    cond: Arc<Condvar>,
    fd: Option<Arc<OwnedFd>>,
}

impl Signal {
    /// Wake them (without the lock).
    pub(crate) fn send(self) {
        self.cond.notify_all();
        if let Some(fd) = self.fd {
            // A full counter (never, at one count per wait) is as good as a count.
            let _ = rustix::io::write(&*fd, &1u64.to_ne_bytes());
        }
    }
}

impl Sock {
    /// Send every datagram the socket has for its `udp://` endpoints, straight through the
    /// system call under the lock (a UDP send does not wait; with its buffer full the
    /// datagram is dropped, as the network may). Returns whether there were any.
    fn send_datagrams(&mut self) -> bool {
        if self.udp.is_empty() {
            // No udp endpoint: the stream sockets' path pays nothing for udp.
            return false;
        }
        let mut buf = [0u8; MAX_DATAGRAM_LEN];
        let udp = &self.udp;
        drain_datagrams(&mut self.core, &mut buf, |endpoint, data, to| {
            if let Some(io) = udp.get(&endpoint) {
                // Lost like a datagram on the network: no one to tell.
                let _ = send_datagram(&io.socket, data, to.or(io.send_to));
            }
        })
    }

    /// Hand every datagram waiting on a bound `udp://` endpoint to the socket.
    fn receive_datagrams(&mut self, endpoint: EndpointId) {
        let mut buf = [0u8; MAX_DATAGRAM_LEN];
        let Some(io) = self.udp.get(&endpoint) else {
            return;
        };
        while let Ok((n, from)) = io.socket.recv_from(&mut buf) {
            self.core
                .handle_datagram(endpoint, from, buf.get(..n).unwrap_or_default());
        }
    }
    /// What a receive waits for: a message ready, or the socket closed.
    pub(crate) fn message_ready(&self) -> bool {
        self.closed || self.can_recv()
    }

    /// Whether a receive has a message: in the state machine, or left in the batch the
    /// handle's `recv` took.
    pub(crate) fn can_recv(&self) -> bool {
        self.core.can_recv() || !self.ready.is_empty()
    }

    /// If threads wait on this socket for what may have come: how to wake them (they no
    /// longer count as waiting; see `Waiters`). Threads that wait for a message only
    /// (`recv`: [`Shared::wait_for_message`], [`Shared::wait_on_streams`]) are left
    /// asleep while none is ready and the socket is open, so that a peer's handshake, a
    /// write or a timer on a busy socket does not wake its receiver for nothing.
    pub(crate) fn signal(&mut self) -> Option<Signal> {
        // Nobody waits (the common case of a busy socket): nothing to look at.
        if !self.waiters.waiting() || (!self.waiting_other && !self.message_ready()) {
            return None;
        }
        self.signal_all()
    }

    /// As [`signal`](Self::signal), whatever the waiters wait for.
    fn signal_all(&mut self) -> Option<Signal> {
        if !self.waiters.take() {
            return None;
        }
        self.waiting_other = false;
        #[cfg(test)]
        {
            self.signals += 1;
        }
        let fd = if self.fd_waiting {
            self.wake_fd.clone()
        } else {
            None
        };
        Some(Signal {
            cond: self.cond.clone(),
            fd,
        })
    }

    /// A send queued output for `peer`: claim the write for the sending thread (it then
    /// writes at once, as [`Shared::send_with`] does) if the stream is idle (no write
    /// queued or running, none blocked, nothing taken and unwritten) and no burst is
    /// under way: a thread waited on the socket since the last such write, or no send
    /// found the stream idle for [`INLINE_GAP`]. Later sends of a burst queue their
    /// output behind it for the I/O thread, which writes it in bulk, unless they leave
    /// [`INLINE_BATCH`] or more to write: a batch (`send_many`, a large message) is worth
    /// its own system call, and writing it here keeps the I/O thread off the CPU.
    fn claim_write(&mut self, id: usize, peer: PeerId, now: Instant) -> Option<Work> {
        let io = self.peers.get_mut(&peer)?;
        if io.write_queued || io.write_blocked || !io.taken.is_empty() {
            return None;
        }
        let gap = now.saturating_duration_since(self.idle_send);
        self.idle_send = now;
        if !self.waited && gap < INLINE_GAP && self.core.queued_len(peer) < INLINE_BATCH {
            return None;
        }
        self.waited = false;
        io.write_queued = true;
        #[cfg(test)]
        {
            self.inline_writes += 1;
        }
        Some(Work {
            id,
            peer,
            token: io.token,
            write: true,
        })
    }

    /// Streams an application thread may read now: no read queued or running, and
    /// input wanted (below RCVHWM); taking turns, from the one after the last one read.
    fn readable_here(&self) -> impl Iterator<Item = PeerId> + '_ {
        let (later, earlier) = match self.read_turn {
            Some(last) => (
                self.peers.range((Excluded(last), Unbounded)),
                self.peers.range(..=last),
            ),
            None => (self.peers.range(..), self.peers.range(..)),
        };
        let earlier = earlier.take(if self.read_turn.is_some() {
            usize::MAX
        } else {
            0
        });
        later
            .chain(earlier)
            .filter(|(_, io)| !io.read_queued || io.leased)
            .map(|(&peer, _)| peer)
            .filter(|&peer| self.core.wants_read(peer))
    }

    /// After an application thread read `peer`'s stream (or waited on it): if it is
    /// silenced and no one reads it now, lease it (`PeerIo::leased`) until `LEASE` from
    /// `now`.
    fn lease(&mut self, peer: PeerId, token: Token, now: Instant) {
        let Some(io) = (self.peers.get_mut(&peer)).filter(|io| io.token == token) else {
            return;
        };
        if io.silenced && !io.read_queued {
            io.read_queued = true;
            io.leased = true;
            self.lease_started |= self.lease_until.is_none();
            self.lease_until = Some(now + self.lease_len);
        }
    }

    /// After an application thread's read of `peer`'s stream that may have left input in
    /// it (a full buffer): if the stream is silenced, lease it with the read claim this
    /// thread holds, rather than read on now; returns whether it did.
    fn lease_more(&mut self, peer: PeerId, token: Token, now: Instant) -> bool {
        let Some(io) = (self.peers.get_mut(&peer)).filter(|io| io.token == token) else {
            return false;
        };
        if !io.silenced || !io.read_queued || io.leased {
            return false;
        }
        io.leased = true;
        self.lease_started |= self.lease_until.is_none();
        self.lease_until = Some(now + self.lease_len);
        true
    }

    /// Claim a read of `peer` for an application thread, if no one is reading it.
    fn claim_read(&mut self, id: usize, peer: PeerId) -> Option<Work> {
        if !self.core.wants_read(peer) {
            return None;
        }
        let io = (self.peers.get_mut(&peer)).filter(|io| !io.read_queued || io.leased)?;
        io.read_queued = true;
        io.leased = false;
        self.read_turn = Some(peer);
        Some(Work {
            id,
            peer,
            token: io.token,
            write: false,
        })
    }
}

/// Everything behind the mutex.
pub(crate) struct State {
    pub(crate) sockets: BTreeMap<usize, Sock>,
    tokens: BTreeMap<Token, (usize, Io)>,
    next_token: usize,
    next_socket: usize,
    /// Reads and writes for the I/O thread, in order.
    work: VecDeque<Work>,
    /// The I/O thread waits (or is about to wait) in `mio::Poll` with no work queued:
    /// whoever queues work or changes timers wakes it.
    parked: bool,
    /// The I/O thread leaves `work` alone while set, for tests that need work to stay
    /// queued.
    #[cfg(test)]
    pub(crate) io_paused: bool,
    /// Threads waiting in [`poll`](crate::poll) on `Shared::polled`.
    poll_waiters: Waiters,
    /// What LINGER cut off in sockets dropped and forgotten since the last
    /// [`Context::term`](crate::Context::term).
    pub(crate) orphans_report: CloseReport,
    /// The ZAP handler of the context, and the requests sent to it.
    pub(crate) zap: zap::Zap,
    /// The context's `inproc://` names and the peers linked through them.
    pub(crate) inproc: inproc::Inproc,
}

impl State {
    /// Whether the I/O thread is to leave the work queue alone (only ever, in tests).
    fn io_paused(&self) -> bool {
        #[cfg(test)]
        return self.io_paused;
        #[cfg(not(test))]
        false
    }

    /// Add a socket; returns its id.
    pub(crate) fn insert(&mut self, core: ProtoSocket, ready: Arc<Ready>) -> usize {
        let id = self.next_socket;
        self.next_socket += 1;
        self.sockets.insert(
            id,
            Sock {
                core,
                peers: BTreeMap::new(),
                listeners: BTreeMap::new(),
                connecting: BTreeMap::new(),
                udp: BTreeMap::new(),
                resolving: BTreeSet::new(),
                monitors: Vec::new(),
                bound: BTreeMap::new(),
                listen_fds: BTreeMap::new(),
                closed: false,
                orphaned: false,
                ready,
                waiters: Waiters::default(),
                waiting_other: false,
                #[cfg(test)]
                signals: 0,
                #[cfg(test)]
                inline_writes: 0,
                cond: Arc::new(Condvar::new()),
                waited: true,
                idle_send: Instant::ZERO,
                read_turn: None,
                fd_waiting: false,
                wake_fd: None,
                lease_until: None,
                lease_len: LEASE,
                lease_started: false,
                tls: Tls::default(),
                tls_sides: BTreeMap::new(),
                readiness: None,
            },
        );
        id
    }

    /// Forget a closed socket whose handle was dropped; `report`: count what LINGER cut
    /// off in it for [`Context::term`](crate::Context::term). Whoever still waits on it
    /// (a `term`) is woken to see it gone. Returns whether threads waiting on the context
    /// (a context's end in [`Shared::linger_orphans`], `poll`) are to be woken too: the
    /// caller notifies [`Shared::polled`] (once the lock is released, where it can).
    #[must_use]
    pub(crate) fn forget(&mut self, id: usize, report: bool) -> bool {
        let Some(mut s) = self.sockets.remove(&id) else {
            return false;
        };
        if report {
            let cut = s.core.close_report().unwrap_or_default();
            self.orphans_report = self.orphans_report.merged(cut);
        }
        if let Some(signal) = s.signal_all() {
            signal.send();
        }
        s.orphaned && self.poll_waiters.take()
    }
}

impl Shared {
    /// A new context: the shared state and its I/O thread, waiting in an io_uring with
    /// `ring` (else in epoll).
    pub(crate) fn start(ring: bool) -> io::Result<Arc<Shared>> {
        let (poller, registrar) = poller::new(ring)?;
        let shared = Arc::new_cyclic(|me| Shared {
            state: Mutex::new(State {
                sockets: BTreeMap::new(),
                tokens: BTreeMap::new(),
                next_token: 1,
                next_socket: 1,
                work: VecDeque::new(),
                parked: false,
                #[cfg(test)]
                io_paused: false,
                poll_waiters: Waiters::default(),
                orphans_report: CloseReport::default(),
                zap: zap::Zap::default(),
                inproc: inproc::Inproc::default(),
            }),
            polled: Condvar::new(),
            registrar,
            ring,
            start: zmtp_driver::clock::epoch(),
            me: me.clone(),
            contexts: AtomicUsize::new(0),
            io_thread: std::sync::OnceLock::new(),
        });
        let weak = Arc::downgrade(&shared);
        let (started, thread) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("zmtp-mio".into())
            .spawn(move || {
                let _ = started.send(affinity::IoThread::current());
                io_thread(poller, weak)
            })?;
        if let Ok(thread) = thread.recv() {
            let _ = shared.io_thread.set(thread);
        }
        Ok(shared)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned state means a panic elsewhere; the state machine itself never panics.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn now(&self) -> Instant {
        zmtp_driver::clock::since(self.start)
    }

    /// The std instant of a core instant.
    fn at(&self, t: Instant) -> StdInstant {
        self.start + Duration::from_micros(t.as_micros())
    }

    /// Add a socket; returns its id.
    pub(crate) fn add(&self, core: ProtoSocket) -> usize {
        self.add_with(core, Arc::default())
    }

    /// [`add`](Self::add) with the batch the handle's `recv` hands out from.
    pub(crate) fn add_with(&self, core: ProtoSocket, ready: Arc<Ready>) -> usize {
        self.lock().insert(core, ready)
    }

    /// Run `f` on a socket from an application thread, then carry out what it caused:
    /// reads and writes are queued for the I/O thread, which is woken if it is parked.
    /// `wake` also wakes it (if parked) when timers or registrations may have changed.
    pub(crate) fn with<R>(
        &self,
        id: usize,
        wake: bool,
        f: impl FnOnce(&mut Sock) -> R,
    ) -> Option<R> {
        let mut st = self.lock();
        let s = st.sockets.get_mut(&id)?;
        let r = f(s);
        if s.core.has_work() {
            self.pump(&mut st, id);
            self.finish(st, id, wake);
        } else {
            let signal = s.signal();
            self.finish_with(st, wake, signal);
        }
        Some(r)
    }

    /// The next message of socket `id`, if one is ready: `Socket::recv`'s first look,
    /// [`with`](Self::with) pared down to a receive (the message moves once).
    pub(crate) fn recv_ready(&self, id: usize) -> Option<Message> {
        let mut st = self.lock();
        let s = st.sockets.get_mut(&id)?;
        let msg = s.core.recv(|| self.now())?;
        if s.core.has_work() {
            // Taking it may resume a peer held at RCVHWM.
            self.pump(&mut st, id);
            self.finish(st, id, false);
        } else {
            let signal = s.signal();
            self.finish_with(st, false, signal);
        }
        Some(msg)
    }

    /// [`with`](Self::with) for a send: if the send left output for an idle stream (and
    /// is not one of a burst: see [`Sock::claim_write`]), the calling thread writes it
    /// at once, without the lock, rather than wake the I/O thread to do it. Whatever
    /// does not fit in the stream is left to the I/O thread, as are other peers' writes.
    pub(crate) fn send_with<R>(&self, id: usize, f: impl FnOnce(&mut Sock) -> R) -> Option<R> {
        let mut st = self.lock();
        let s = st.sockets.get_mut(&id)?;
        let r = f(s);
        if !s.core.has_work() {
            let signal = s.signal();
            self.finish_with(st, false, signal);
            return Some(r);
        }
        let timer = s.core.poll_timeout();
        run_commands(&mut Commands {
            shared: self,
            st: &mut st,
            id,
            now: None,
        });
        let mut here = None;
        let mut now = None;
        while let Some(s) = st.sockets.get_mut(&id) {
            let Some(peer) = s.core.next_dirty() else {
                break;
            };
            if here.is_none() {
                let now = *now.get_or_insert_with(|| self.now());
                here = s.claim_write(id, peer, now);
                if here.is_some() {
                    continue;
                }
            }
            queue(&mut st, id, peer, true);
        }
        // Datagrams go at once (and sending the last one can finish a close).
        if st.sockets.get_mut(&id).is_some_and(Sock::send_datagrams) {
            self.pump(&mut st, id);
        }
        let Some(work) = here else {
            self.finish(st, id, false);
            return Some(r);
        };
        let ran;
        (st, ran) = self.run_here(st, work);
        if ran.again {
            self.write_on(&mut st, work);
        }
        if st.sockets.get(&id).is_some_and(|s| s.core.has_work()) {
            self.pump(&mut st, id);
        }
        // A stream lost in the write moves timers (the reconnect).
        let earlier = st
            .sockets
            .get(&id)
            .and_then(|s| s.core.poll_timeout())
            .is_some_and(|t| timer.is_none_or(|before| t < before));
        self.finish(st, id, earlier);
        Some(r)
    }

    /// Wake whoever waits on socket `id` (or in [`poll`](crate::poll)) to look again: the
    /// handle's `recv` took a batch and left messages in it.
    pub(crate) fn touch(&self, id: usize) {
        let st = self.lock();
        self.finish(st, id, false);
    }

    /// The end of an application call on socket `id`: wake the I/O thread if it is
    /// parked and work was queued for it (or `wake`: timers or registrations may have
    /// changed), and whoever waits on the socket or in [`poll`](crate::poll).
    fn finish(&self, mut st: MutexGuard<'_, State>, id: usize, wake: bool) {
        // Other threads waiting on this socket (or in `poll`) look again.
        let signal = st.sockets.get_mut(&id).and_then(Sock::signal);
        self.finish_with(st, wake, signal);
    }

    /// [`finish`](Self::finish) with the socket's signal taken already (the caller had
    /// the socket at hand).
    fn finish_with(&self, mut st: MutexGuard<'_, State>, wake: bool, signal: Option<Signal>) {
        // Output for `inproc://` peers queued outside a pump (`send_with`) is handed over.
        self.deliver_inproc(&mut st);
        // Sockets `inproc://` hand-overs changed (none on other transports).
        let others = st.inproc.touched_any().then(|| {
            let mut others = waiters::Notify::default();
            self.inproc_touched(&mut st, &mut others);
            others
        });
        let wake_io = st.parked && (wake || !st.work.is_empty());
        if wake_io {
            st.parked = false;
        }
        let polled = st.poll_waiters.take();
        drop(st);
        if wake_io {
            let _ = self.registrar.wake();
        }
        if let Some(signal) = signal {
            signal.send();
        }
        if polled {
            self.polled.notify_all();
        }
        if let Some(mut others) = others {
            others.signal(self);
        }
    }

    /// Wait (a second at most) until the listeners this context stopped have let go of
    /// their addresses: on the ring, an accept in flight holds its listening socket until
    /// the I/O thread has cancelled it, and an abstract `ipc://@name` stays bound until
    /// then. Called by `unbind`, a socket's drop and the context's, on the application's
    /// thread, after the lock is released.
    pub(crate) fn let_go_of_listeners(&self) {
        self.registrar.wait_released(Duration::from_secs(1));
    }

    /// Take over a socket that is closing (`ProtoSocket::close` called) from another
    /// driver, with its peers' streams, and let it linger here as a dropped socket does:
    /// `connecting` are its connect endpoints whose connection was in flight (they are
    /// tried again at once), `tls` its TLS settings for reconnecting to `wss://` endpoints.
    pub(crate) fn adopt(
        &self,
        core: ProtoSocket,
        streams: Vec<(PeerId, StdTransport)>,
        connecting: &[EndpointId],
        tls: Tls,
    ) {
        let id = self.add(core);
        let now = self.now();
        let mut st = self.lock();
        if let Some(s) = st.sockets.get_mut(&id) {
            s.orphaned = true;
            s.tls = tls;
            for &endpoint in connecting {
                s.core.handle_connect_abandoned(endpoint, now);
            }
            s.core.close(now);
            // Output the other driver was writing is written here.
            s.core.announce_output();
        }
        for (peer, stream) in streams {
            self.add_peer(&mut st, id, peer, stream, now);
        }
        self.pump(&mut st, id);
        self.finish(st, id, true);
    }

    /// Wake the threads waiting on the context (in `poll`, or a context's end in
    /// [`linger_orphans`](Self::linger_orphans)) to look again.
    pub(crate) fn wake_polled(&self) {
        self.polled.notify_all();
    }

    /// Wait until no dropped socket is left lingering. A wait that lasts says on standard
    /// error, once, which sockets it waits for and why (`zmtp_driver::loss::waiting_line`):
    /// a program that seems to hang at its end is told what holds it.
    pub(crate) fn linger_orphans(&self) {
        const TELL_AFTER: Duration = Duration::from_secs(2);
        let tell_at = StdInstant::now() + TELL_AFTER;
        let mut told = false;
        let mut st = self.lock();
        while st.sockets.values().any(|s| s.orphaned) {
            if !told && StdInstant::now() >= tell_at {
                told = true;
                if zmtp_driver::loss::loss_reports() {
                    let orphans = st.sockets.values().filter(|s| s.orphaned);
                    for line in orphans.filter_map(|s| zmtp_driver::loss::waiting_line(&s.core)) {
                        eprintln!("{line}");
                    }
                }
            }
            let deadline = (!told).then_some(tell_at);
            self.wait_polled(st, deadline, std::iter::empty());
            st = self.lock();
        }
    }

    /// Input the ring received for a stream: handed to the state machine, or kept while
    /// the peer's input is held back. Returns the socket's id.
    fn ring_input(&self, st: &mut State, input: RingInput, now: Instant) -> Option<usize> {
        let &(id, Io::Peer(peer)) = st.tokens.get(&input.token)? else {
            return None;
        };
        let s = st.sockets.get_mut(&id)?;
        let wants = s.core.wants_read(peer);
        let io = (s.peers.get_mut(&peer)).filter(|io| io.token == input.token)?;
        let r = io.ring.as_mut()?;
        let what = match input.what {
            RingIn::Stopped { recvs } => {
                if recvs == r.recvs_asked {
                    r.multishot = false;
                }
                None
            }
            // A read into the own buffer: the buffer goes back to the state machine, which
            // takes the bytes (in `ring_deliver`); the end comes after them.
            RingIn::Read { buf, result } => {
                r.receiving = false;
                s.core.restore_read_buf(peer, buf);
                match result {
                    n if n > 0 => None,
                    0 => Some(RingIn::End),
                    n if n == -rustix::io::Errno::AGAIN.raw_os_error()
                        || n == -rustix::io::Errno::INTR.raw_os_error() =>
                    {
                        None
                    }
                    _ => Some(RingIn::Failed),
                }
            }
            RingIn::Data(bytes) => {
                if !r.own && bytes.len() >= poller::RECV_BUFFER_SIZE {
                    // A whole shared buffer: from now on, reads into the own buffer, once
                    // the multishot receive has ended.
                    r.own = true;
                    if r.receiving {
                        r.receiving = false;
                        self.registrar.stop_recv(input.token);
                    }
                }
                // Input that must wait (held back at RCVHWM) is copied out of the ring's
                // buffer: the ring's buffers serve every stream of the context, and one
                // that is not read must not keep them from the others.
                Some(if !wants || !r.stash.is_empty() {
                    RingIn::Data(Bytes::copy_from_slice(&bytes))
                } else {
                    RingIn::Data(bytes)
                })
            }
            end => {
                // The receive is over.
                r.receiving = false;
                Some(end)
            }
        };
        if let Some(what) = what {
            r.stash.push_back(what);
        }
        self.ring_deliver(st, id, peer, now);
        // The context's ZAP client: as after a read (see `apply`).
        if st.zap.is_client(id) {
            self.zap_replies(st, id);
        }
        Some(id)
    }

    /// Hand a ring-read stream's stashed input to the state machine while it takes input;
    /// when it holds input back, stop the ring's receive; once the stash is empty, make
    /// sure the receive runs (the multishot one, or a read into the stream's own input
    /// buffer). The stream's end (or failure) comes after its data.
    fn ring_deliver(&self, st: &mut State, id: usize, peer: PeerId, now: Instant) {
        if let Some(s) = st.sockets.get_mut(&id) {
            let own = (s.peers.get(&peer))
                .and_then(|io| io.ring.as_ref())
                .is_some_and(|r| r.own);
            if own {
                // What the own buffer holds comes before the stash (its reads start only
                // once the multishot receive has ended, its input all stashed).
                s.core.handle_input(peer, now);
            }
        }
        loop {
            let Some(s) = st.sockets.get_mut(&id) else {
                return;
            };
            let wants = s.core.wants_read(peer);
            let Some(io) = s.peers.get_mut(&peer) else {
                return;
            };
            let token = io.token;
            let stream = &io.stream;
            let Some(r) = io.ring.as_mut() else {
                return;
            };
            match r.stash.front() {
                None if r.lending => {
                    // Not while a read work item is queued for it: run on a stream no
                    // longer the ring's, it would read beside a receiving thread.
                    if !r.receiving && !r.multishot && !r.asked {
                        self.lend(io);
                    }
                    return;
                }
                None => {
                    if wants && !r.receiving {
                        if !r.own {
                            r.receiving = true;
                            r.multishot = true;
                            r.recvs_asked += 1;
                            self.registrar.recv(stream, token);
                        } else if !r.multishot {
                            // Room for more than a shared buffer's worth: a stream that
                            // filled one reads in large pieces.
                            if let Some(buf) = s.core.take_read_buf(peer, OWN_READ_ROOM) {
                                r.receiving = true;
                                self.registrar.recv_into(stream, token, buf);
                            }
                        }
                    }
                    return;
                }
                // The stream's end waits for the input before it as data does: input the
                // state machine took but holds back (RCVHWM) is lost with the stream.
                Some(_) if !wants => {
                    if r.receiving && !r.own {
                        r.receiving = false;
                        self.registrar.stop_recv(token);
                    }
                    return;
                }
                Some(_) => {}
            }
            match r.stash.pop_front() {
                Some(RingIn::Data(bytes)) => s.core.handle_received(peer, now, &bytes),
                Some(RingIn::End) | Some(RingIn::Failed) => {
                    self.lose_peer(st, id, peer, now);
                    return;
                }
                Some(RingIn::Read { .. }) | Some(RingIn::Stopped { .. }) | None => return,
            }
        }
    }

    /// Lend socket `s`'s ring-read streams to application threads (for
    /// [`wait_on_streams`](Self::wait_on_streams)): their multishot receives stop, and
    /// once what those took is delivered ([`ring_deliver`](Self::ring_deliver)) they are
    /// read as on epoll (`PeerIo::lent`); a stream that reads into its own buffer is lent
    /// once its read in flight completes. Returns whether any stream is still the
    /// ring's.
    fn lend_ring_streams(&self, s: &mut Sock) -> bool {
        let mut ringed = false;
        for io in s.peers.values_mut() {
            let Some(r) = io.ring.as_mut() else {
                continue;
            };
            ringed = true;
            if r.lending {
                continue;
            }
            r.lending = true;
            if r.receiving && !r.own {
                r.receiving = false;
                self.registrar.stop_recv(io.token);
            }
            if !r.receiving && !r.multishot && !r.asked && r.stash.is_empty() {
                // Nothing in flight or queued: lent at once (a queued read work item
                // lends it when it runs: see `Shared::prepare`).
                self.lend(io);
            }
        }
        ringed
    }

    /// Lend a ring-read stream whose multishot receive has ended, its input all
    /// delivered: it is read as on epoll from now on, its input watched by the I/O
    /// thread's poll (an edge comes at once for input already there) until a receiving
    /// thread waits on it.
    fn lend(&self, io: &mut PeerIo) {
        if let Some(r) = io.ring.take() {
            io.lent = Some(r.recvs_asked);
            io.read_queued = false;
            self.set_interest(io);
        }
    }

    /// The I/O thread takes back a lent stream (`PeerIo::lent`) that no one reads or
    /// waits on: the ring's multishot receive reads it again (if its socket takes input:
    /// otherwise from when it does). Returns false, having done nothing, for a stream
    /// that is not lent.
    fn ring_again(&self, io: &mut PeerIo, wants: bool) -> bool {
        let Some(recvs_asked) = io.lent.filter(|_| !io.silenced && !io.read_queued) else {
            return false;
        };
        io.lent = None;
        io.read_queued = true;
        let mut r = RingRead {
            recvs_asked,
            ..RingRead::default()
        };
        if wants {
            r.receiving = true;
            r.multishot = true;
            r.recvs_asked += 1;
            self.registrar.recv(&io.stream, io.token);
        }
        io.ring = Some(r);
        self.set_interest(io);
        true
    }

    /// Register a peer's stream for what its state asks of the I/O thread: input unless
    /// an application thread waits on it itself (or the ring reads it), and writability
    /// while a write is blocked (the writable edge resumes it). A stream that needs
    /// neither is not registered at all: any interest the stream's wake-ups carry would
    /// wake the I/O thread for nothing (a socket's input wakes its waiters with
    /// `EPOLLIN | EPOLLPRI`, so even priority input, which a ZMTP stream never gets,
    /// woke it for every segment that came in). Registering for readiness the stream
    /// already has raises an edge at once, so none is lost in the change.
    fn set_interest(&self, io: &mut PeerIo) {
        let wanted = match (io.silenced || io.ring.is_some(), io.write_blocked) {
            (false, false) => Some(Interest::READABLE),
            (false, true) => Some(Interest::READABLE | Interest::WRITABLE),
            (true, false) => None,
            (true, true) => Some(Interest::WRITABLE),
        };
        if wanted != io.interest {
            let fd = io.stream.as_raw_fd();
            // Fails only if the stream is no longer registered (it is being dropped).
            let _ = match (io.interest, wanted) {
                (None, Some(interest)) => self.registrar.register(fd, io.token, interest),
                (Some(_), Some(interest)) => self.registrar.reregister(fd, io.token, interest),
                (_, None) => self.registrar.unpoll(fd, io.token),
            };
            io.interest = wanted;
        }
    }

    /// Carry out a socket's commands (and hand over its monitor events), queue writes for
    /// its peers with new output, and send its datagrams.
    fn pump(&self, st: &mut State, id: usize) {
        loop {
            run_commands(&mut Commands {
                shared: self,
                st,
                id,
                now: None,
            });
            while let Some(peer) = st.sockets.get_mut(&id).and_then(|s| s.core.next_dirty()) {
                queue(st, id, peer, true);
            }
            // Sending the last datagram can finish a close: its commands come next.
            if !st.sockets.get_mut(&id).is_some_and(Sock::send_datagrams) {
                break;
            }
        }
        if st.zap.is_client(id) {
            self.zap_replies(st, id);
        }
        self.deliver_inproc(st);
    }
}
