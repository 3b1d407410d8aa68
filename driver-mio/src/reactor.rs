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
//! - An application thread about to block in `send`, `recv` or `close` first runs its
//!   socket's queued work items itself (those the I/O thread has not taken yet): it has
//!   a CPU, which a woken I/O thread may wait for when threads outnumber CPUs.
//! - Threads blocked in `send`, `recv`, `close` or [`poll`](crate::poll) wait on a
//!   condition variable of their socket (or of the context, for `poll`), signalled only
//!   when someone waits, and once per wait.
//!
//! Every protocol decision is the core's; this file moves bytes.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant as StdInstant};

use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use zmtp_proto::socket::endpoint::IpcEndpoint;
use zmtp_proto::socket::{
    AuthReply, Authenticator, Endpoint, EndpointId, Event, MonitorEvent, PeerId,
    Socket as ProtoSocket,
};
use zmtp_proto::{Bytes, Instant};

/// The waker's token; streams and listeners count up from 1.
const WAKER: Token = Token(0);
/// Most segments gathered into one vectored write.
const MAX_CHUNKS: usize = 64;
/// The I/O thread's read buffer: the most read from a stream in one call.
const READ_BUF: usize = 64 * 1024;
/// Work items run between two looks at readiness and timers.
const WORK_BUDGET: usize = 64;
/// Work items an application thread runs at most before it sleeps ([`Shared::help`]).
const HELP_BUDGET: usize = 4;

std::thread_local! {
    /// The read buffer of an application thread that runs a read ([`Shared::help`]).
    static HELPER_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a context's threads share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Signalled, while threads wait in [`poll`](crate::poll), whenever a socket of this
    /// context may have become readable, writable or closed.
    polled: Condvar,
    registry: Registry,
    waker: Waker,
    start: StdInstant,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The I/O thread holds only a weak reference: wake it to find that out and end.
        let _ = self.waker.wake();
    }
}

/// A stream to a peer, shared by the state (which registers and closes it) and the I/O
/// thread while it reads or writes without the lock.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            // `Read` and `Write` are implemented for shared references to mio's streams.
            Stream::Tcp(s) => (&mut &*s).read(buf),
            Stream::Unix(s) => (&mut &*s).read(buf),
        }
    }

    fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&mut &*s).write_vectored(bufs),
            Stream::Unix(s) => (&mut &*s).write_vectored(bufs),
        }
    }

    fn peer_ip(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
            Stream::Unix(_) => String::new(),
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, Option<String>),
}

struct PeerIo {
    stream: Arc<Stream>,
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
    /// Output taken from the state machine and not yet written: the front of what it
    /// has queued for the peer, which it drops (`advance`) only once written, so that
    /// SNDHWM and LINGER count it until then.
    taken: VecDeque<Bytes>,
}

/// What a token stands for.
#[derive(Debug, Clone, Copy)]
enum Io {
    Peer(PeerId),
    Listener(EndpointId),
    Connecting(EndpointId),
}

/// One socket's state machine and the streams it directs.
pub(crate) struct Sock {
    pub(crate) core: ProtoSocket,
    peers: BTreeMap<PeerId, PeerIo>,
    listeners: BTreeMap<EndpointId, (Listener, Token)>,
    connecting: BTreeMap<EndpointId, (TcpStream, Token)>,
    pub(crate) monitors: Vec<mpsc::Sender<MonitorEvent>>,
    pub(crate) authenticator: Option<Authenticator>,
    /// Results of binds not yet collected by `bind`.
    pub(crate) bound: BTreeMap<EndpointId, io::Result<String>>,
    pub(crate) closed: bool,
    /// The application dropped its handle: forget the socket once it has closed.
    pub(crate) orphaned: bool,
    /// Application threads waiting on `cond`.
    waiters: Waiters,
    /// Signalled, while threads wait, whenever the socket may have become readable,
    /// writable or closed.
    cond: Arc<Condvar>,
}

/// A read or a write for the I/O thread.
#[derive(Debug, Clone, Copy)]
struct Work {
    id: usize,
    peer: PeerId,
    token: Token,
    write: bool,
}

/// A work item taken out of the state, to run without the lock.
enum Job {
    Read(Arc<Stream>),
    Write(Arc<Stream>, VecDeque<Bytes>),
}

/// How a job went.
enum Done {
    /// What the read returned (the bytes are in the I/O thread's buffer).
    Read(io::Result<usize>),
    /// Bytes written, the chunks left, and why it stopped.
    Write {
        written: usize,
        rest: VecDeque<Bytes>,
        end: WriteEnd,
    },
}

enum WriteEnd {
    /// Everything taken was written.
    Drained,
    /// The stream would block.
    Blocked,
    /// The stream failed.
    Failed,
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
    /// Threads waiting in [`poll`](crate::poll) on `Shared::polled`.
    poll_waiters: Waiters,
}

/// The threads waiting on a condition variable, counted so that it is signalled only
/// when someone waits, and once per wait: a signal wakes every thread then waiting, which
/// no longer count (a new generation begins).
#[derive(Default)]
struct Waiters {
    count: usize,
    generation: u64,
}

impl Waiters {
    /// A thread starts waiting: returns the generation to hand to `leave`.
    fn enter(&mut self) -> u64 {
        self.count += 1;
        self.generation
    }

    /// A thread woke up: it still counted if no signal came (a timeout, a spurious wake).
    fn leave(&mut self, generation: u64) {
        if self.generation == generation {
            self.count -= 1;
        }
    }

    /// Whether to signal: someone waits. They are then woken, and no longer count.
    fn take(&mut self) -> bool {
        if self.count == 0 {
            return false;
        }
        self.count = 0;
        self.generation += 1;
        true
    }
}

/// Condition variables to signal once the lock is released.
#[derive(Default)]
struct Notify {
    conds: Vec<Arc<Condvar>>,
    polled: bool,
}

impl Notify {
    /// Note that socket `id` changed: its waiters, and those in `poll`, are to be woken.
    fn touch(&mut self, st: &mut State, id: usize) {
        if let Some(s) = st.sockets.get_mut(&id) {
            if s.waiters.take() {
                self.conds.push(s.cond.clone());
            }
        }
        self.polled |= st.poll_waiters.take();
    }

    /// Signal (without the lock).
    fn signal(&mut self, shared: &Shared) {
        for cond in self.conds.drain(..) {
            cond.notify_all();
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
    /// A new context: the shared state and its I/O thread.
    pub(crate) fn start() -> io::Result<Arc<Shared>> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let registry = poll.registry().try_clone()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sockets: BTreeMap::new(),
                tokens: BTreeMap::new(),
                next_token: 1,
                next_socket: 1,
                work: VecDeque::new(),
                parked: false,
                poll_waiters: Waiters::default(),
            }),
            polled: Condvar::new(),
            registry,
            waker,
            start: StdInstant::now(),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("zmtp-mio".into())
            .spawn(move || io_thread(poll, weak))?;
        Ok(shared)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned state means a panic elsewhere; the state machine itself never panics.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The std instant of a core instant.
    fn at(&self, t: Instant) -> StdInstant {
        self.start + Duration::from_micros(t.as_micros())
    }

    /// Add a socket; returns its id.
    pub(crate) fn add(&self, core: ProtoSocket) -> usize {
        let mut st = self.lock();
        let id = st.next_socket;
        st.next_socket += 1;
        st.sockets.insert(
            id,
            Sock {
                core,
                peers: BTreeMap::new(),
                listeners: BTreeMap::new(),
                connecting: BTreeMap::new(),
                monitors: Vec::new(),
                authenticator: None,
                bound: BTreeMap::new(),
                closed: false,
                orphaned: false,
                waiters: Waiters::default(),
                cond: Arc::new(Condvar::new()),
            },
        );
        id
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
        }
        let wake_io = st.parked && (wake || !st.work.is_empty());
        if wake_io {
            st.parked = false;
        }
        // Other threads waiting on this socket (or in `poll`) look again.
        let cond = st
            .sockets
            .get_mut(&id)
            .and_then(|s| s.waiters.take().then(|| s.cond.clone()));
        let polled = st.poll_waiters.take();
        drop(st);
        if wake_io {
            let _ = self.waker.wake();
        }
        if let Some(cond) = cond {
            cond.notify_all();
        }
        if polled {
            self.polled.notify_all();
        }
        Some(r)
    }

    /// Before an application thread sleeps on socket `id`: run a read or write of that
    /// socket that is queued for the I/O thread (and not yet taken by it) here, rather
    /// than sleep until the I/O thread gets to it. On a busy machine a woken thread may
    /// wait tens of microseconds for a CPU; the caller has one already. Returns whether
    /// there was such work (the caller looks at the socket again before sleeping).
    pub(crate) fn help(&self, id: usize) -> bool {
        let mut st = self.lock();
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
            if let Some(job) = self.prepare(&mut st, work) {
                drop(st);
                st = HELPER_BUF.with_borrow_mut(|buf| {
                    if buf.is_empty() {
                        buf.resize(READ_BUF, 0);
                    }
                    let done = run(job, buf);
                    let mut st = self.lock();
                    self.apply(&mut st, work, done, buf, self.now());
                    st
                });
            }
            self.pump(&mut st, id);
            if !work.write {
                // Messages to receive now: the caller takes them while the I/O thread
                // reads on.
                break;
            }
        }
        if !helped {
            return false;
        }
        let mut notify = Notify::default();
        notify.touch(&mut st, id);
        // Work left (a read to go on with, say) is the I/O thread's again.
        let wake_io = st.parked && !st.work.is_empty();
        if wake_io {
            st.parked = false;
        }
        drop(st);
        if wake_io {
            let _ = self.waker.wake();
        }
        notify.signal(self);
        true
    }

    /// If `ready` does not hold for socket `id` (and it exists), wait for one signal on
    /// it or until `deadline`. Returns whether `ready` held (or the socket is gone), so
    /// that callers loop until it does.
    pub(crate) fn wait_for(
        &self,
        id: usize,
        deadline: Option<StdInstant>,
        ready: impl Fn(&Sock) -> bool,
    ) -> bool {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return true;
        };
        if ready(s) {
            return true;
        }
        let generation = s.waiters.enter();
        let cond = s.cond.clone();
        let mut st = wait_on(&cond, st, deadline);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.waiters.leave(generation);
        }
        false
    }

    /// Wait (from [`poll`](crate::poll)) for any socket of this context to change, or
    /// until `deadline`.
    pub(crate) fn wait_polled<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        deadline: Option<StdInstant>,
    ) {
        let generation = st.poll_waiters.enter();
        let mut st = wait_on(&self.polled, st, deadline);
        st.poll_waiters.leave(generation);
    }

    /// Carry out a socket's events, and queue writes for its peers with new output.
    fn pump(&self, st: &mut State, id: usize) {
        let mut now = None;
        loop {
            let Some(s) = st.sockets.get_mut(&id) else {
                return;
            };
            if let Some(event) = s.core.poll_event() {
                let now = *now.get_or_insert_with(|| self.now());
                self.handle_event(st, id, event, now);
            } else if let Some(peer) = s.core.next_dirty() {
                queue(st, id, peer, true);
            } else {
                return;
            }
        }
    }

    fn register(
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

    fn add_peer(&self, st: &mut State, id: usize, peer: PeerId, stream: Stream, now: Instant) {
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

    fn drop_peer(&self, st: &mut State, id: usize, peer: PeerId) {
        if let Some(io) = st.sockets.get_mut(&id).and_then(|s| s.peers.remove(&peer)) {
            let _ = self.registry.deregister(&mut SourceFd(&io.stream.fd()));
            st.tokens.remove(&io.token);
            // The stream closes when the I/O thread, if it is using it, lets go too.
        }
    }

    /// A peer's stream ended or failed.
    fn lose_peer(&self, st: &mut State, id: usize, peer: PeerId, now: Instant) {
        self.drop_peer(st, id, peer);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.core.handle_closed(peer, now);
        }
    }

    fn handle_event(&self, st: &mut State, id: usize, event: Event, now: Instant) {
        match event {
            Event::Listen { endpoint, addr } => {
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
            Event::Connect { endpoint, addr } => self.connect(st, id, endpoint, &addr, now),
            Event::StopListening { endpoint } => {
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
            Event::ClosePeer { peer } => self.drop_peer(st, id, peer),
            Event::Resume { peer } => queue(st, id, peer, false),
            Event::Authenticate { peer, request } => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    let address = s
                        .peers
                        .get(&peer)
                        .map(|io| io.stream.peer_ip())
                        .unwrap_or_default();
                    let reply = match &s.authenticator {
                        Some(auth) => auth.check(&address, &request),
                        None => AuthReply::NoHandler,
                    };
                    s.core.handle_auth(peer, now, reply);
                }
            }
            Event::Monitor(m) => {
                if let Some(s) = st.sockets.get_mut(&id) {
                    s.monitors.retain(|tx| tx.send(m.clone()).is_ok());
                }
            }
            Event::Closed => {
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
                    self.handle_event(st, id, Event::StopListening { endpoint }, now);
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

    fn connect(
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
    fn connected(
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
                if let Some(peer) = s.core.handle_connected(endpoint, now) {
                    self.add_peer(st, id, peer, stream, now);
                }
            }
            None => s.core.handle_connect_failed(endpoint, now),
        }
    }

    fn accept(&self, st: &mut State, id: usize, endpoint: EndpointId, now: Instant) {
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
                    match s.core.handle_accepted(endpoint, now) {
                        Some(peer) => self.add_peer(st, id, peer, stream, now),
                        None => drop(stream),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// One readiness event from the poll.
    fn ready(&self, st: &mut State, event: &mio::event::Event, now: Instant) -> Option<usize> {
        let &(id, io) = st.tokens.get(&event.token())?;
        match io {
            Io::Listener(endpoint) => self.accept(st, id, endpoint, now),
            Io::Connecting(endpoint) => {
                let (mut stream, token) = st
                    .sockets
                    .get_mut(&id)
                    .and_then(|s| s.connecting.remove(&endpoint))?;
                let _ = self.registry.deregister(&mut stream);
                st.tokens.remove(&token);
                // Connected when there is no error and a peer address, and it did not meet
                // itself (simultaneous open on a free local port).
                let ok = matches!(stream.take_error(), Ok(None))
                    && stream.peer_addr().is_ok()
                    && stream.local_addr().ok() != stream.peer_addr().ok();
                let stream = ok.then(|| {
                    let _ = stream.set_nodelay(true);
                    Stream::Tcp(stream)
                });
                self.connected(st, id, endpoint, stream, now);
            }
            Io::Peer(peer) => {
                let io = st.sockets.get_mut(&id)?.peers.get_mut(&peer)?;
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    io.read_edge = true;
                    queue(st, id, peer, false);
                }
                let io = st.sockets.get_mut(&id)?.peers.get_mut(&peer)?;
                if event.is_writable() || event.is_error() {
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

    /// Take a work item out of the state: what to run without the lock, if anything.
    fn prepare(&self, st: &mut State, work: Work) -> Option<Job> {
        let s = st.sockets.get_mut(&work.id)?;
        let io = s
            .peers
            .get_mut(&work.peer)
            .filter(|io| io.token == work.token)?;
        if !work.write {
            if !s.core.wants_read(work.peer) {
                // `Event::Resume` queues it again.
                io.read_queued = false;
                return None;
            }
            io.read_edge = false;
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
        if io.taken.is_empty() {
            // All written: the next output names the peer again (`next_dirty`).
            io.write_queued = false;
            return None;
        }
        io.write_edge = false;
        Some(Job::Write(io.stream.clone(), std::mem::take(&mut io.taken)))
    }

    /// Hand a job's result to the state machine.
    fn apply(&self, st: &mut State, work: Work, done: Done, buf: &[u8], now: Instant) {
        let Some(s) = st.sockets.get_mut(&work.id) else {
            return;
        };
        let Some(io) = s
            .peers
            .get_mut(&work.peer)
            .filter(|io| io.token == work.token)
        else {
            // The stream was closed meanwhile: what it read or wrote no longer matters.
            return;
        };
        match done {
            Done::Read(Ok(0)) => self.lose_peer(st, work.id, work.peer, now),
            Done::Read(Ok(n)) => {
                let data = buf.get(..n).unwrap_or_default();
                s.core.handle_received(work.peer, now, data);
                if n < buf.len() && !io.read_edge {
                    // A short read emptied the stream: the next data raises a new edge.
                    io.read_queued = false;
                } else {
                    st.work.push_back(work);
                }
            }
            Done::Read(Err(e)) => match e.kind() {
                io::ErrorKind::WouldBlock if !io.read_edge => io.read_queued = false,
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {
                    st.work.push_back(work);
                }
                _ => self.lose_peer(st, work.id, work.peer, now),
            },
            Done::Write { written, rest, end } => {
                io.taken = rest;
                match end {
                    // Look for more output.
                    WriteEnd::Drained => st.work.push_back(work),
                    // Room was made since the write started: try again.
                    WriteEnd::Blocked if io.write_edge => st.work.push_back(work),
                    WriteEnd::Blocked => {
                        io.write_blocked = true;
                        io.write_queued = false;
                    }
                    WriteEnd::Failed => {}
                }
                if written > 0 {
                    s.core.advance(work.peer, written);
                }
                if matches!(end, WriteEnd::Failed) {
                    self.lose_peer(st, work.id, work.peer, now);
                }
            }
        }
    }

    /// Fire due timers; returns the earliest timer left.
    fn fire_timers(&self, st: &mut State, now: Instant, notify: &mut Notify) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut id = 0;
        // By id, as the map may change while timers fire.
        while let Some((&sid, s)) = st.sockets.range_mut(id..).next() {
            id = sid + 1;
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
    fn turn(&self, events: &Events, buf: &mut [u8], notify: &mut Notify) -> Option<Duration> {
        let mut st = self.lock();
        st.parked = false;
        let now = self.now();
        for event in events.iter() {
            if event.token() != WAKER {
                if let Some(id) = self.ready(&mut st, event, now) {
                    self.pump(&mut st, id);
                    notify.touch(&mut st, id);
                }
            }
        }
        self.fire_timers(&mut st, now, notify);
        for _ in 0..WORK_BUDGET {
            let Some(work) = st.work.pop_front() else {
                break;
            };
            let Some(job) = self.prepare(&mut st, work) else {
                continue;
            };
            drop(st);
            notify.signal(self);
            let done = run(job, buf);
            st = self.lock();
            let now = self.now();
            self.apply(&mut st, work, done, buf, now);
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
        } else {
            Some(Duration::ZERO)
        };
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

/// Queue a read (`write` false) or a write of a peer's stream, unless one is queued.
fn queue(st: &mut State, id: usize, peer: PeerId, write: bool) {
    let Some(io) = st.sockets.get_mut(&id).and_then(|s| s.peers.get_mut(&peer)) else {
        return;
    };
    let queued = if write {
        if io.write_blocked {
            // The writable edge queues it.
            return;
        }
        &mut io.write_queued
    } else {
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

/// Run a job, without the lock.
fn run(job: Job, buf: &mut [u8]) -> Done {
    match job {
        Job::Read(stream) => Done::Read(stream.read(buf)),
        Job::Write(stream, mut rest) => {
            let mut written = 0;
            let end = loop {
                if rest.is_empty() {
                    break WriteEnd::Drained;
                }
                let mut slices: [IoSlice<'_>; MAX_CHUNKS] = [IoSlice::new(&[]); MAX_CHUNKS];
                let mut n = 0;
                for (slot, chunk) in slices.iter_mut().zip(rest.iter()) {
                    *slot = IoSlice::new(chunk);
                    n += 1;
                }
                match stream.write_vectored(slices.get(..n).unwrap_or_default()) {
                    Ok(0) => break WriteEnd::Failed,
                    Ok(mut k) => {
                        written += k;
                        while let Some(front) = rest.front_mut() {
                            if k < front.len() {
                                *front = front.slice(k..);
                                break;
                            }
                            k -= front.len();
                            rest.pop_front();
                        }
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

fn abstract_addr(name: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
}

fn connect_unix(ipc: &IpcEndpoint) -> io::Result<UnixStream> {
    let std_stream = match ipc {
        IpcEndpoint::Path(path) => std::os::unix::net::UnixStream::connect(path)?,
        IpcEndpoint::Abstract(name) => {
            std::os::unix::net::UnixStream::connect_addr(&abstract_addr(name)?)?
        }
    };
    std_stream.set_nonblocking(true)?;
    Ok(UnixStream::from_std(std_stream))
}

/// Start listening (synchronously); returns the listener and the resolved endpoint.
fn listen(addr: &Endpoint) -> io::Result<(Listener, String)> {
    match addr {
        Endpoint::Tcp(tcp) => {
            let std_listener = std::net::TcpListener::bind(&tcp.socket_addrs()?[..])?;
            std_listener.set_nonblocking(true)?;
            let local = std_listener.local_addr()?;
            Ok((
                Listener::Tcp(TcpListener::from_std(std_listener)),
                format!("tcp://{local}"),
            ))
        }
        Endpoint::Ipc(IpcEndpoint::Path(path)) => {
            // A socket file left by an earlier process would make bind fail.
            let _ = std::fs::remove_file(path);
            let l = std::os::unix::net::UnixListener::bind(path)?;
            l.set_nonblocking(true)?;
            Ok((
                Listener::Unix(UnixListener::from_std(l), Some(path.clone())),
                format!("ipc://{path}"),
            ))
        }
        Endpoint::Ipc(IpcEndpoint::Abstract(name)) => {
            let l = std::os::unix::net::UnixListener::bind_addr(&abstract_addr(name)?)?;
            l.set_nonblocking(true)?;
            Ok((
                Listener::Unix(UnixListener::from_std(l), None),
                format!("ipc://@{name}"),
            ))
        }
        Endpoint::Inproc(_) => Err(io::ErrorKind::Unsupported.into()),
    }
}

/// The I/O thread: wait for readiness, the earliest timer or a wake-up, handle them and
/// the queued work, repeat, until the context is gone.
fn io_thread(mut poll: Poll, shared: Weak<Shared>) {
    let mut events = Events::with_capacity(256);
    let mut buf = vec![0u8; READ_BUF];
    let mut notify = Notify::default();
    let mut timeout = Some(Duration::ZERO);
    loop {
        // An error (EINTR) leaves no events: the turn goes on with the timers and work.
        let _ = poll.poll(&mut events, timeout);
        let Some(sh) = shared.upgrade() else {
            return;
        };
        timeout = sh.turn(&events, &mut buf, &mut notify);
    }
}

#[cfg(test)]
mod tests {
    use super::Waiters;

    #[test]
    fn waiters_are_signalled_once_per_wait() {
        let mut w = Waiters::default();
        assert!(!w.take(), "nobody waits");
        let a = w.enter();
        let b = w.enter();
        assert!(w.take());
        // Both were woken by that signal: no second one until someone waits again.
        assert!(!w.take());
        w.leave(a);
        w.leave(b);
        assert_eq!(w.count, 0);
        let c = w.enter();
        assert!(w.take());
        w.leave(c);
        assert_eq!(w.count, 0);
    }

    #[test]
    fn a_waiter_that_times_out_stops_counting() {
        let mut w = Waiters::default();
        let a = w.enter();
        let b = w.enter();
        // `a` timed out before any signal.
        w.leave(a);
        assert_eq!(w.count, 1);
        assert!(w.take());
        w.leave(b);
        assert_eq!(w.count, 0);
        assert!(!w.take());
    }
}
