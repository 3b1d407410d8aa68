//! The shared state of one socket and the tasks that move its bytes.
//!
//! All protocol decisions are made by the `zmtp-proto` [`Socket`](ProtoSocket) inside
//! [`Core`]; this file only carries out its commands, moves bytes and arms its timer. The
//! core sits behind a `std` mutex that is never held across an `.await`: application calls
//! and I/O tasks lock it, call into the state machine, write whatever became ready
//! straight to the streams (`try_write`, no task hop), and unlock.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::os::fd::AsFd;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Instant as StdInstant;

use tokio::sync::{mpsc, oneshot, Notify};

use zmtp_driver::ready::Ready;
use zmtp_driver::{
    drain_datagrams, listen_ipc, listen_tcp, open_udp, run_commands, Attempts, CommandHandler,
    Listening, SocketFile, StdListener, TcpAddrs, TcpTuning, Tls, TlsSide, UdpOpen,
};
use zmtp_proto::socket::endpoint::{IpcEndpoint, WsEndpoint};
use zmtp_proto::socket::{
    AuthReply, CloseReport, Endpoint, EndpointId, MonitorEvent, PeerId, Socket as ProtoSocket,
    ZapRequest,
};
use zmtp_proto::udp::MAX_DATAGRAM_LEN;
use zmtp_proto::Instant;

use crate::runtime::{Acceptor as _, DatagramSocket as _, Runtime, Task as _};
use crate::transport::{
    inproc_bind, inproc_connect, inproc_is_bound, inproc_unbind, InprocStream, Transport,
};

/// Where libzmq-style ZAP handlers listen (RFC 27).
const ZAP_ENDPOINT: &str = zmtp_driver::zap::HANDLER_NAME;

/// Most reads from one peer per wake-up, so that one busy peer cannot starve the others.
const READS_PER_WAKE: usize = 16;
/// Room for the next read once a read filled all the room it had: a stream that keeps up
/// a flood is read in fewer, larger reads (a trickling one keeps small buffers).
const BUSY_READ_ROOM: usize = 64 * 1024;
/// Most segments gathered into one vectored write.
const MAX_CHUNKS: usize = 64;

/// What every task and handle of one socket shares.
#[derive(Debug)]
pub(crate) struct Inner<R: Runtime> {
    core: Mutex<Core<R>>,
    /// Woken when a message may be ready for `recv` (or the socket closed).
    pub(crate) readable: Notify,
    /// Woken when `send` may succeed (or the socket closed).
    pub(crate) writable: Notify,
    /// How many tasks wait on `readable` / `writable`: nobody is woken when nobody waits.
    pub(crate) recv_waiters: AtomicUsize,
    pub(crate) send_waiters: AtomicUsize,
    /// What `recv` took in a batch and hands out one per call (see [`Ready`]).
    pub(crate) ready: Ready,
    /// Whether the socket's type receives in batches (its receiving is plain fair
    /// queuing: `recv_batch_len` may exceed 1).
    pub(crate) recv_batches: bool,
    /// Woken when the earliest deadline changed.
    timer: Notify,
    /// Woken when the socket finished closing.
    pub(crate) closed: Notify,
    start: StdInstant,
    pub(crate) runtime: R,
}

#[derive(Debug)]
struct PeerIo<R: Runtime> {
    stream: Arc<Transport<R>>,
    task: R::Task,
    /// Wakes the peer's task: its interest changed (write blocked, reads resumed).
    wake: Arc<Notify>,
    write_blocked: bool,
    /// Output was queued by the application; the peer's task writes it.
    flush_pending: bool,
    /// The peer's task has written everything since the application last wrote inline:
    /// the application's next output is written at once, on its own thread (a reply
    /// leaves without a task hop), and what follows it in the same burst is left to the
    /// task, which writes it in bulk.
    write_idle: bool,
    /// An accepted stream not read yet: its first output (the greeting) waits for the
    /// peer's task to read once, so that the greeting, the answer to the peer's greeting
    /// and the handshake's first command leave in one write when the peer's greeting is
    /// there already, as it mostly is by the time a connection is accepted.
    fresh: bool,
}

/// A listening endpoint: the task that accepts on it (or, for a host name, that resolves
/// it first) and what to clean up when it stops.
#[derive(Debug)]
struct Listener<R: Runtime> {
    task: R::Task,
    /// The name of an `inproc://` endpoint, unbound when listening stops.
    inproc: Option<String>,
    /// The socket file of an `ipc://` path, removed when listening stops.
    _socket_file: Option<SocketFile>,
}

/// The UDP socket of a `udp://` endpoint, and the task that receives on it (binds only).
#[derive(Debug)]
struct UdpIo<R: Runtime> {
    socket: Arc<R::Udp>,
    task: Option<R::Task>,
    /// Where datagrams go that the core sends to no address (a multicast group).
    send_to: Option<std::net::SocketAddr>,
}

impl<R: Runtime> UdpIo<R> {
    fn stop(self) {
        if let Some(task) = self.task {
            task.abort();
        }
    }
}

/// The state machine and the I/O resources it directs.
#[derive(Debug)]
pub(crate) struct Core<R: Runtime> {
    pub(crate) socket: ProtoSocket,
    peers: BTreeMap<PeerId, PeerIo<R>>,
    listeners: BTreeMap<EndpointId, Listener<R>>,
    udp: BTreeMap<EndpointId, UdpIo<R>>,
    /// Where `poll_datagram` writes the next datagram to send: allocated with the first
    /// udp endpoint.
    datagram: Vec<u8>,
    bind_waiters: BTreeMap<EndpointId, oneshot::Sender<io::Result<String>>>,
    monitors: Vec<mpsc::UnboundedSender<MonitorEvent>>,
    pub(crate) closed: bool,
    /// Connect endpoints whose connection is in flight (their task has not reported).
    connecting: BTreeSet<EndpointId>,
    /// The `inproc://` endpoints connected to (as given), which cannot be handed over.
    inproc_connects: Vec<String>,
    /// The application dropped its handle: nobody waits for the close's report, so what
    /// LINGER cuts off is said on standard error.
    pub(crate) orphaned: bool,
    timer_deadline: Option<Instant>,
    /// The TLS settings of `wss://` endpoints bound or connected from now on.
    pub(crate) tls: Tls,
}

impl<R: Runtime> Inner<R> {
    /// The shared state of a new socket, its timer task spawned on `runtime`.
    pub(crate) fn new(socket: ProtoSocket, runtime: R) -> Arc<Inner<R>> {
        let recv_batches = socket.type_recvs_in_batches();
        let inner = Arc::new(Inner {
            core: Mutex::new(Core {
                socket,
                peers: BTreeMap::new(),
                listeners: BTreeMap::new(),
                udp: BTreeMap::new(),
                datagram: Vec::new(),
                bind_waiters: BTreeMap::new(),
                monitors: Vec::new(),
                closed: false,
                connecting: BTreeSet::new(),
                inproc_connects: Vec::new(),
                orphaned: false,
                timer_deadline: None,
                tls: Tls::default(),
            }),
            readable: Notify::new(),
            writable: Notify::new(),
            recv_waiters: AtomicUsize::new(0),
            send_waiters: AtomicUsize::new(0),
            ready: Ready::default(),
            recv_batches,
            timer: Notify::new(),
            closed: Notify::new(),
            start: zmtp_driver::clock::epoch(),
            runtime,
        });
        // Detached: the task ends by itself once the socket is closed.
        let _ = inner.runtime.spawn(timer_task(inner.clone()));
        inner
    }

    /// Close the socket (stop listening, linger per LINGER) and wait until it has
    /// finished; returns what LINGER cut off.
    pub(crate) async fn close(self: &Arc<Self>) -> CloseReport {
        let notified = self.closed.notified();
        let mut notified = pin!(notified);
        notified.as_mut().enable();
        if !self.start_close() {
            notified.await;
        }
        self.lock().socket.close_report().unwrap_or_default()
    }

    /// Start closing the socket (stop listening, linger per LINGER) without waiting;
    /// returns whether it has finished already.
    pub(crate) fn start_close(self: &Arc<Self>) -> bool {
        self.with_timers(|core| {
            let now = self.now();
            core.socket.close(now);
            core.closed
        })
    }

    pub(crate) fn now(&self) -> Instant {
        zmtp_driver::clock::since(self.start)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Core<R>> {
        // A poisoned core means a panic elsewhere; the state machine itself never panics.
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the core, then carry out whatever it caused.
    ///
    /// Called from the application: output is left for the peers' tasks to write, so that
    /// a burst of sends leaves in one write per peer instead of one per message.
    pub(crate) fn with<T>(self: &Arc<Self>, f: impl FnOnce(&mut Core<R>) -> T) -> T {
        let mut core = self.lock();
        let r = f(&mut core);
        // Most sends and receives leave nothing to carry out: skip the event loop then.
        if core.socket.has_work() {
            self.pump_with(&mut core, false, false);
        } else {
            self.wake_waiters(&core);
        }
        r
    }

    /// [`with`](Self::with) for calls that may move the socket's timers (close, options,
    /// endpoints), which sends and receives do not.
    pub(crate) fn with_timers<T>(self: &Arc<Self>, f: impl FnOnce(&mut Core<R>) -> T) -> T {
        let mut core = self.lock();
        let r = f(&mut core);
        self.pump_with(&mut core, false, true);
        r
    }

    /// Register a waiter for the result of binding `endpoint`.
    pub(crate) fn wait_bind(
        &self,
        core: &mut Core<R>,
        endpoint: EndpointId,
    ) -> oneshot::Receiver<io::Result<String>> {
        let (tx, rx) = oneshot::channel();
        core.bind_waiters.insert(endpoint, tx);
        rx
    }

    /// A new monitor receiving every monitor event from now on.
    pub(crate) fn add_monitor(&self, core: &mut Core<R>) -> mpsc::UnboundedReceiver<MonitorEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        core.monitors.push(tx);
        core.socket.set_monitor(0xFFFF);
        rx
    }

    /// Carry out the socket's events, write every peer with output, re-arm the timer and
    /// wake whoever waits to send or receive.
    pub(crate) fn pump(self: &Arc<Self>, core: &mut Core<R>) {
        self.pump_with(core, true, true);
    }

    /// [`pump`](Self::pump), writing inline (on an I/O task) or handing the writes to the
    /// peers' tasks (from the application).
    fn pump_with(self: &Arc<Self>, core: &mut Core<R>, inline: bool, timers: bool) {
        let mut timers_touched = timers;
        loop {
            let mut commands = Commands {
                inner: self,
                core,
                timers_touched,
            };
            let mut busy = run_commands(&mut commands) > 0;
            timers_touched = commands.timers_touched;
            while let Some(peer) = core.socket.next_dirty() {
                if let Some(io) = core.peers.get_mut(&peer).filter(|io| io.fresh) {
                    // Its task writes it after its first read.
                    io.flush_pending = true;
                } else if inline {
                    // Writing can end a peer or finish a close: go round again for events.
                    busy = true;
                    self.write_peer(core, peer);
                } else if let Some(io) = core.peers.get_mut(&peer) {
                    if io.write_idle && !io.write_blocked && !io.flush_pending {
                        // The first output of a burst: written now. What follows it waits
                        // for the task (as below), which re-arms this when it next runs.
                        io.write_idle = false;
                        busy = true;
                        self.write_peer(core, peer);
                    } else if !io.flush_pending {
                        io.flush_pending = true;
                        io.wake.notify_one();
                    }
                }
            }
            // Sending a datagram can finish a close: go round again for its commands.
            busy |= send_datagrams(core);
            if !busy {
                break;
            }
        }
        // Timers change with I/O and events, not with what the application queues.
        if timers_touched {
            let deadline = core.socket.poll_timeout();
            if deadline != core.timer_deadline {
                core.timer_deadline = deadline;
                self.timer.notify_one();
            }
        }
        self.wake_waiters(core);
    }

    /// Wake whoever waits to send or receive, if they now can.
    fn wake_waiters(&self, core: &Core<R>) {
        if self.recv_waiters.load(Ordering::SeqCst) > 0
            && (core.closed || core.socket.can_recv() || !self.ready.is_empty())
        {
            self.readable.notify_waiters();
        }
        if self.send_waiters.load(Ordering::SeqCst) > 0 && (core.closed || core.socket.can_send()) {
            self.writable.notify_waiters();
        }
    }

    /// Wake the tasks waiting to receive, if any (a batch taken by `recv` left messages).
    pub(crate) fn wake_receivers(&self) {
        if self.recv_waiters.load(Ordering::SeqCst) > 0 {
            self.readable.notify_waiters();
        }
    }

    /// Write as much of a peer's output as the stream takes now.
    fn write_peer(self: &Arc<Self>, core: &mut Core<R>, peer: PeerId) {
        let Some(io) = core.peers.get_mut(&peer) else {
            return;
        };
        let stream = io.stream.clone();
        if let Transport::Inproc(pipe) = &*stream {
            // In process: chunks change hands, large bodies without a copy.
            let mut failed = false;
            let n = core.socket.transmit_bytes(peer, |chunk| {
                failed |= pipe.tx.push(chunk).is_err();
            });
            core.socket.advance(peer, n, || self.now());
            if failed {
                self.drop_peer(core, peer);
                let now = self.now();
                core.socket.handle_closed(peer, now);
            }
            return;
        }
        loop {
            // Everything queued in one (vectored) write: encoded frames and large bodies,
            // which stay where the application put them.
            let mut chunks: [&[u8]; MAX_CHUNKS] = [&[]; MAX_CHUNKS];
            let n = core.socket.transmit_chunks(peer, &mut chunks);
            if n == 0 {
                let flushed = if stream.pending_output() {
                    stream.flush()
                } else {
                    Ok(true)
                };
                match flushed {
                    Ok(all) => {
                        if let Some(io) = core.peers.get_mut(&peer) {
                            // TLS records left: wait until the stream takes them.
                            if !all && !io.write_blocked {
                                io.wake.notify_one();
                            }
                            io.write_blocked = !all;
                        }
                    }
                    Err(e) => self.lose_peer(core, peer, &e),
                }
                return;
            }
            let written = if n == 1 {
                stream.try_write(chunks[0])
            } else {
                let slices: [io::IoSlice<'_>; MAX_CHUNKS] =
                    std::array::from_fn(|i| io::IoSlice::new(chunks[i]));
                stream.try_write_vectored(&slices[..n])
            };
            match written {
                Ok(n) => core.socket.advance(peer, n, || self.now()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The peer's task waits for the stream to become writable; tell it
                    // once, when writing first blocks.
                    if let Some(io) = core.peers.get_mut(&peer) {
                        if !io.write_blocked {
                            io.write_blocked = true;
                            io.wake.notify_one();
                        }
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lose_peer(core, peer, &e);
                    return;
                }
            }
        }
    }

    /// A peer's stream failed with `error`: drop it, and tell the socket why, which its
    /// monitor events then say (`MonitorEvent::reason`). A TLS failure (a certificate
    /// refused, a forged record) is logged too.
    fn lose_peer(self: &Arc<Self>, core: &mut Core<R>, peer: PeerId, error: &io::Error) {
        if error.kind() == io::ErrorKind::InvalidData {
            log::warn!("zmtp: a peer's stream failed: {error}");
        }
        self.drop_peer(core, peer);
        let now = self.now();
        core.socket
            .handle_stream_failed(peer, now, &error.to_string());
    }

    /// Read what a peer's stream has and feed it to the socket. Returns true when it
    /// stopped with more perhaps waiting (the caller yields, then reads again).
    fn read_peer(
        self: &Arc<Self>,
        core: &mut Core<R>,
        peer: PeerId,
        stream: &Transport<R>,
    ) -> bool {
        if let Transport::Inproc(pipe) = stream {
            return self.read_inproc(core, peer, pipe);
        }
        let mut room = 0;
        for _ in 0..READS_PER_WAKE {
            if !core.socket.wants_read(peer) {
                return false;
            }
            // The room the state machine asks for (what the next frame still needs, up to
            // 256 KiB, and 4 KiB at least), or more after a read that filled it.
            // (Reserving more ahead for every stream would cost an idle or hostile
            // connection that much.)
            let Some(buf) = core.socket.read_buf_room(peer, room) else {
                return false;
            };
            let spare = buf.capacity() - buf.len();
            match stream.try_read_buf(buf) {
                Ok(n) if n > 0 && n < spare => {
                    // A short read: the stream is most likely drained. Whoever waits for
                    // what arrived is woken before the read that would confirm it (the
                    // caller yields, then reads on).
                    let now = self.now();
                    core.socket.handle_input(peer, now);
                    return core.socket.wants_read(peer);
                }
                Ok(0) => {
                    self.drop_peer(core, peer);
                    let now = self.now();
                    core.socket.handle_closed(peer, now);
                    return false;
                }
                Ok(_) => {
                    let now = self.now();
                    core.socket.handle_input(peer, now);
                    room = BUSY_READ_ROOM;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lose_peer(core, peer, &e);
                    return false;
                }
            }
        }
        // The last read may have filled the receive queue: then wait to be resumed.
        core.socket.wants_read(peer)
    }

    /// [`read_peer`](Self::read_peer) for an in-process stream: chunks are handed over as
    /// they are, so a large frame body is never copied.
    fn read_inproc(
        self: &Arc<Self>,
        core: &mut Core<R>,
        peer: PeerId,
        pipe: &InprocStream,
    ) -> bool {
        for _ in 0..READS_PER_WAKE {
            if !core.socket.wants_read(peer) {
                return false;
            }
            match pipe.rx.try_pop() {
                Ok(Some(chunk)) => {
                    let now = self.now();
                    core.socket.handle_received_shared(peer, now, chunk);
                }
                Ok(None) => {
                    self.drop_peer(core, peer);
                    let now = self.now();
                    core.socket.handle_closed(peer, now);
                    return false;
                }
                Err(_) => return false,
            }
        }
        core.socket.wants_read(peer)
    }

    fn drop_peer(&self, core: &mut Core<R>, peer: PeerId) {
        if let Some(io) = core.peers.remove(&peer) {
            io.task.abort();
        }
    }

    /// Give `peer` its stream and task; `accepted`: the stream was accepted (its first
    /// output waits for a first read: `PeerIo::fresh`).
    fn add_peer(
        self: &Arc<Self>,
        core: &mut Core<R>,
        peer: PeerId,
        stream: Transport<R>,
        accepted: bool,
    ) {
        let fresh = accepted && !matches!(stream, Transport::Inproc(_));
        let stream = Arc::new(stream);
        let wake = Arc::new(Notify::new());
        let task = self.runtime.spawn(peer_task(
            self.clone(),
            peer,
            stream.clone(),
            wake.clone(),
            fresh,
        ));
        core.peers.insert(
            peer,
            PeerIo {
                stream,
                task,
                wake,
                write_blocked: false,
                flush_pending: false,
                write_idle: true,
                fresh,
            },
        );
    }

    /// Register a bound listener with the runtime: its acceptor and the resolved endpoint;
    /// its socket file (if any) goes to `socket_file`.
    fn acceptor(
        &self,
        listening: io::Result<Listening>,
        socket_file: &mut Option<SocketFile>,
    ) -> io::Result<(Acceptor<R>, String)> {
        let Listening {
            listener,
            endpoint,
            socket_file: file,
        } = listening?;
        *socket_file = file;
        let acceptor = match listener {
            StdListener::Tcp(l) => Acceptor::Tcp(self.runtime.tcp_listener(l)?),
            StdListener::Unix(l) => Acceptor::Unix(self.runtime.unix_listener(l)?),
        };
        Ok((acceptor, endpoint))
    }

    /// Report how a bind went, to the socket and to `bind`'s caller; the acceptor to run
    /// if it is listening.
    fn listened(
        &self,
        core: &mut Core<R>,
        endpoint: EndpointId,
        bound: io::Result<(Acceptor<R>, String)>,
    ) -> Option<Acceptor<R>> {
        let (acceptor, reply) = match bound {
            Ok((acceptor, resolved)) => {
                core.socket.handle_listening(endpoint, &resolved);
                // As the socket names it (`ws://` over the TCP listener).
                let resolved = core.socket.last_endpoint().to_string();
                (Some(acceptor), Ok(resolved))
            }
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(0);
                core.socket
                    .handle_bind_failed(endpoint, u32::try_from(errno).unwrap_or(0));
                (None, Err(e))
            }
        };
        if let Some(waiter) = core.bind_waiters.remove(&endpoint) {
            let _ = waiter.send(reply);
        }
        acceptor
    }
}

/// Send every datagram the socket has for its udp endpoints, at once (`try_send`: a UDP
/// socket whose buffer is full drops the datagram, as the network may). Returns whether
/// there were any.
fn send_datagrams<R: Runtime>(core: &mut Core<R>) -> bool {
    if core.udp.is_empty() {
        // No udp endpoint: the stream sockets' path pays nothing for udp.
        return false;
    }
    let Core {
        socket,
        udp,
        datagram,
        ..
    } = core;
    drain_datagrams(socket, datagram, |endpoint, data, to| {
        let Some(io) = udp.get(&endpoint) else {
            return;
        };
        let sent = match to.or(io.send_to) {
            Some(to) => io.socket.try_send_to(data, to),
            None => io.socket.try_send(data),
        };
        if let Err(e) = sent {
            log::debug!("zmtp: a udp datagram was not sent: {e}");
        }
    })
}

/// The socket's commands, carried out under the lock for `inner`'s tasks.
struct Commands<'a, R: Runtime> {
    inner: &'a Arc<Inner<R>>,
    core: &'a mut Core<R>,
    /// A command other than `Resume` ran: the socket's timer is looked at again.
    timers_touched: bool,
}

impl<R: Runtime> CommandHandler for Commands<'_, R> {
    fn socket(&mut self) -> Option<&mut ProtoSocket> {
        Some(&mut self.core.socket)
    }

    fn listen(&mut self, endpoint: EndpointId, addr: Endpoint) {
        self.timers_touched = true;
        let (inner, core) = (self.inner, &mut *self.core);
        let mut inproc = None;
        let mut socket_file = None;
        let tls = match TlsSide::for_endpoint(&core.tls, &addr, true) {
            Ok(tls) => tls,
            Err(e) => {
                inner.listened(core, endpoint, Err(e));
                return;
            }
        };
        let bound = match &addr {
            Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => match TcpAddrs::of(tcp) {
                TcpAddrs::Known(a) => {
                    let tuning = TcpTuning::of(core.socket.options());
                    inner.acceptor(listen_tcp(&[a], &tuning), &mut socket_file)
                }
                TcpAddrs::Lookup { host, port } => {
                    // A name: resolved on the runtime, without the lock, by the task that
                    // then binds and accepts.
                    let task = inner.runtime.spawn(resolve_and_accept_task(
                        inner.clone(),
                        endpoint,
                        host,
                        port,
                        tls,
                    ));
                    let listener = Listener {
                        task,
                        inproc: None,
                        _socket_file: None,
                    };
                    core.listeners.insert(endpoint, listener);
                    return;
                }
            },
            Endpoint::Ipc(ipc) => inner.acceptor(listen_ipc(ipc), &mut socket_file),
            Endpoint::Inproc(name) => {
                inproc = Some(name.clone());
                inproc_bind(name).map(|rx| (Acceptor::Inproc(rx), addr.to_string()))
            }
            // udp:// endpoints come as `OpenUdp`: never here.
            Endpoint::Udp(_) => Err(io::ErrorKind::Unsupported.into()),
        };
        if let Some(acceptor) = inner.listened(core, endpoint, bound) {
            let task = inner
                .runtime
                .spawn(accept_task(inner.clone(), endpoint, acceptor, tls));
            let listener = Listener {
                task,
                inproc,
                _socket_file: socket_file,
            };
            core.listeners.insert(endpoint, listener);
        }
    }

    fn connect(&mut self, endpoint: EndpointId, addr: Endpoint) {
        self.timers_touched = true;
        self.core.connecting.insert(endpoint);
        if let Endpoint::Inproc(_) = &addr {
            let name = addr.to_string();
            if !self.core.inproc_connects.contains(&name) {
                self.core.inproc_connects.push(name);
            }
        }
        // Detached: it ends once connected or failed.
        let inner = self.inner;
        let _ = inner
            .runtime
            .spawn(connect_task(inner.clone(), endpoint, addr));
    }

    fn open_udp(&mut self, endpoint: EndpointId, open: UdpOpen) {
        self.timers_touched = true;
        let (inner, core) = (self.inner, &mut *self.core);
        let opened = open_udp(&open).and_then(|o| {
            let socket = Arc::new(inner.runtime.udp_socket(o.socket)?);
            Ok((socket, o.endpoint, o.send_to))
        });
        let reply = match opened {
            Ok((socket, resolved, send_to)) => {
                let task = open.bind.then(|| {
                    let receive = udp_task(inner.clone(), endpoint, socket.clone());
                    inner.runtime.spawn(receive)
                });
                core.udp.insert(
                    endpoint,
                    UdpIo {
                        socket,
                        task,
                        send_to,
                    },
                );
                core.datagram.resize(MAX_DATAGRAM_LEN, 0);
                if open.bind {
                    core.socket.handle_listening(endpoint, &resolved);
                }
                Ok(resolved)
            }
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(0);
                core.socket
                    .handle_udp_failed(endpoint, u32::try_from(errno).unwrap_or(0));
                Err(e)
            }
        };
        if let Some(waiter) = core.bind_waiters.remove(&endpoint) {
            let _ = waiter.send(reply);
        }
    }

    fn stop_listening(&mut self, endpoint: EndpointId) {
        self.timers_touched = true;
        if let Some(io) = self.core.udp.remove(&endpoint) {
            io.stop();
        }
        if let Some(l) = self.core.listeners.remove(&endpoint) {
            l.task.abort();
            if let Some(name) = &l.inproc {
                inproc_unbind(name);
            }
            // Dropping the listener removes its socket file.
        }
    }

    fn close_peer(&mut self, peer: PeerId) {
        self.timers_touched = true;
        self.inner.drop_peer(self.core, peer);
    }

    fn resume(&mut self, peer: PeerId) {
        if let Some(io) = self.core.peers.get(&peer) {
            io.wake.notify_one();
        }
    }

    fn authenticate(&mut self, peer: PeerId, request: ZapRequest) {
        self.timers_touched = true;
        let (inner, core) = (self.inner, &mut *self.core);
        if inproc_is_bound(ZAP_ENDPOINT) {
            let timeout = core.socket.options().handshake_ivl;
            let _ = inner
                .runtime
                .spawn(zap_task(inner.clone(), peer, request, timeout));
        } else {
            core.socket
                .handle_auth(peer, inner.now(), AuthReply::NoHandler);
        }
    }

    fn monitor(&mut self, event: MonitorEvent) {
        self.core
            .monitors
            .retain(|tx| tx.send(event.clone()).is_ok());
    }

    fn closed(&mut self) {
        self.timers_touched = true;
        let core = &mut *self.core;
        core.closed = true;
        if core.orphaned {
            zmtp_driver::report_loss(&core.socket);
        }
        for (_, io) in std::mem::take(&mut core.peers) {
            io.task.abort();
        }
        for (_, l) in std::mem::take(&mut core.listeners) {
            l.task.abort();
        }
        for (_, io) in std::mem::take(&mut core.udp) {
            io.stop();
        }
        core.monitors.clear();
        // A bind still resolving its host name fails with `Closed`.
        core.bind_waiters.clear();
        self.inner.closed.notify_waiters();
        self.inner.timer.notify_one();
    }
}

impl<R: Runtime> Core<R> {
    /// Hand the socket, closing, to a thread that lingers with blocking I/O
    /// ([`crate::handover`]): its state machine, its peers' streams as `std` streams on
    /// the same connections, and its connects in flight. This core is left closed, its
    /// tasks to end. Nothing is handed over if it has finished closing; an `inproc://`
    /// peer cannot outlive its process's runtimes and is dropped.
    pub(crate) fn hand_over(&mut self) {
        if self.closed {
            return;
        }
        let now = zmtp_driver::clock::now();
        self.socket.close(now);
        // In-process peers end with the process's runtimes: what waits for them is lost,
        // and said so.
        let mut inproc = self.socket.unsent_by_endpoint();
        inproc.retain(|loss| loss.endpoint.starts_with("inproc://"));
        zmtp_driver::loss::report_lost(
            &self.socket,
            &inproc,
            "its runtime ended, and in-process peers with it",
        );
        for name in std::mem::take(&mut self.inproc_connects) {
            self.socket.disconnect(&name, now);
        }
        let mut streams = Vec::new();
        for (peer, io) in std::mem::take(&mut self.peers) {
            io.task.abort();
            match io.stream.to_std() {
                Some(Ok(stream)) => streams.push((peer, stream)),
                Some(Err(_)) | None => self.socket.handle_closed(peer, now),
            }
        }
        for (_, l) in std::mem::take(&mut self.listeners) {
            l.task.abort();
            if let Some(name) = &l.inproc {
                inproc_unbind(name);
            }
        }
        for (_, io) in std::mem::take(&mut self.udp) {
            io.stop();
        }
        self.monitors.clear();
        self.bind_waiters.clear();
        self.closed = true;
        let connecting = std::mem::take(&mut self.connecting).into_iter().collect();
        // What stays behind answers as a closed socket would (a default one never fails
        // to be made).
        let Ok(placeholder) = ProtoSocket::new(
            self.socket.socket_type(),
            zmtp_proto::socket::Options::default(),
            0,
        ) else {
            return;
        };
        let socket = std::mem::replace(&mut self.socket, placeholder);
        crate::handover::linger_elsewhere(zmtp_mio::handover::Handover {
            socket,
            streams,
            connecting,
            tls: self.tls.clone(),
        });
    }
}

impl<R: Runtime> Drop for Inner<R> {
    fn drop(&mut self) {
        // The last task holding the socket went away before it finished closing: its
        // runtime ended (or the task was cancelled) while it lingered or was still open.
        // It lingers on, with blocking I/O, on a thread the process waits for at exit.
        self.core
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .hand_over();
    }
}

/// What a listener accepts from.
enum Acceptor<R: Runtime> {
    Tcp(R::TcpListener),
    Unix(R::UnixListener),
    Inproc(mpsc::UnboundedReceiver<InprocStream>),
}

/// Connect to a `tcp://` (its sockets set up as `tuning` says) or `ipc://` endpoint (a
/// name is resolved on the runtime, and its addresses tried in order), or to a bound
/// `inproc://` name.
async fn connect<R: Runtime>(
    runtime: &R,
    addr: &Endpoint,
    tuning: TcpTuning,
) -> io::Result<Transport<R>> {
    match addr {
        Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => {
            let addrs = match TcpAddrs::of(tcp) {
                TcpAddrs::Known(a) => vec![a],
                TcpAddrs::Lookup { host, port } => runtime.resolve(host, port).await?,
            };
            let mut attempts = Attempts::new(addrs)
                .from_source(tcp.source.clone())
                .with_tuning(tuning);
            while let Some(a) = attempts.next() {
                let connected = if attempts.plain() {
                    runtime.tcp_connect(a).await
                } else {
                    match attempts.start(a) {
                        Ok(stream) => runtime.tcp_connecting(stream).await,
                        Err(e) => Err(e),
                    }
                };
                match connected {
                    Ok(stream) => match zmtp_driver::tcp_connected(&stream) {
                        Ok(()) => return Ok(Transport::Tcp(stream)),
                        Err(e) => attempts.failed(e),
                    },
                    Err(e) => attempts.failed(e),
                }
            }
            Err(attempts.into_error())
        }
        Endpoint::Ipc(IpcEndpoint::Path(path)) => Ok(Transport::Unix(
            runtime.unix_connect(std::path::Path::new(path)).await?,
        )),
        Endpoint::Ipc(ipc @ IpcEndpoint::Abstract(_)) => Ok(Transport::Unix(
            runtime.unix_from_std(zmtp_driver::transport::connect_ipc(ipc)?)?,
        )),
        Endpoint::Inproc(name) => Ok(Transport::Inproc(inproc_connect(name)?)),
        // Sockets refuse udp:// for now: it never gets here.
        Endpoint::Udp(_) => Err(io::ErrorKind::Unsupported.into()),
    }
}

/// Listen on a `tcp://` endpoint whose host is a name: resolve it on the runtime, bind the
/// first address that binds, report, then accept as [`accept_task`].
async fn resolve_and_accept_task<R: Runtime>(
    inner: Arc<Inner<R>>,
    endpoint: EndpointId,
    host: String,
    port: u16,
    tls: Option<TlsSide>,
) {
    let tuning = TcpTuning::of(inner.lock().socket.options());
    let listening = inner
        .runtime
        .resolve(host, port)
        .await
        .and_then(|addrs| listen_tcp(&addrs, &tuning));
    let acceptor = {
        let mut core = inner.lock();
        if !core.listeners.contains_key(&endpoint) {
            // Stopped meanwhile.
            return;
        }
        let bound = inner.acceptor(listening, &mut None);
        let acceptor = inner.listened(&mut core, endpoint, bound);
        if acceptor.is_none() {
            // Nothing to stop later: this task ends.
            core.listeners.remove(&endpoint);
        }
        inner.pump(&mut core);
        acceptor
    };
    if let Some(acceptor) = acceptor {
        accept_task(inner, endpoint, acceptor, tls).await;
    }
}

async fn connect_task<R: Runtime>(inner: Arc<Inner<R>>, endpoint: EndpointId, addr: Endpoint) {
    let (tls, tuning) = {
        let core = inner.lock();
        let tls = TlsSide::for_endpoint(&core.tls, &addr, false);
        (tls, TcpTuning::of(core.socket.options()))
    };
    let result = match tls {
        Ok(tls) => connect(&inner.runtime, &addr, tuning)
            .await
            .and_then(|stream| stream.secure(tls.as_ref())),
        Err(e) => {
            log::warn!("zmtp: cannot connect to {addr}: {e}");
            Err(e)
        }
    };
    let mut core = inner.lock();
    core.connecting.remove(&endpoint);
    if core.closed {
        // Closed, or handed over to linger elsewhere, meanwhile.
        return;
    }
    let now = inner.now();
    match result {
        Ok(stream) => {
            if let Some(peer) = core
                .socket
                .handle_connected(endpoint, &stream.peer_address(), now)
            {
                inner.add_peer(&mut core, peer, stream, false);
            }
        }
        // Refused: `ZMQ_RECONNECT_STOP` may make it final.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            core.socket.note_connect_error(endpoint, &e);
            core.socket.handle_connect_refused(endpoint, now)
        }
        Err(e) => {
            core.socket.note_connect_error(endpoint, &e);
            core.socket.handle_connect_failed(endpoint, now)
        }
    }
    inner.pump(&mut core);
}

async fn accept_task<R: Runtime>(
    inner: Arc<Inner<R>>,
    endpoint: EndpointId,
    mut acceptor: Acceptor<R>,
    tls: Option<TlsSide>,
) {
    loop {
        // The peer's address as the accept gave it (none for ipc and inproc).
        let (stream, address) = match &mut acceptor {
            Acceptor::Tcp(l) => match l.accept().await {
                Ok((s, addr)) => {
                    let _ = zmtp_driver::tcp_accepted(&s);
                    match Transport::Tcp(s).secure(tls.as_ref()) {
                        Ok(s) => (s, addr),
                        Err(_) => continue,
                    }
                }
                Err(_) => continue,
            },
            Acceptor::Unix(l) => match l.accept().await {
                Ok((s, _)) => (Transport::Unix(s), None),
                Err(_) => continue,
            },
            Acceptor::Inproc(rx) => match rx.recv().await {
                Some(s) => (Transport::Inproc(s), None),
                None => return,
            },
        };
        let address = match address {
            Some(a) => a.to_string(),
            None => stream.peer_address(),
        };
        let mut core = inner.lock();
        let now = inner.now();
        // An ipc:// peer's credentials, read only if the core's IPC filters ask for them.
        let credentials = || match &stream {
            Transport::Unix(s) => crate::runtime::ByteStream::duplicate(s)
                .and_then(|fd| zmtp_driver::peer_credentials(fd.as_fd()))
                .ok(),
            _ => None,
        };
        let accepted =
            core.socket
                .handle_accepted_with_credentials(endpoint, &address, now, credentials);
        if let Some(peer) = accepted {
            inner.add_peer(&mut core, peer, stream, true);
        }
        inner.pump(&mut core);
    }
}

async fn peer_task<R: Runtime>(
    inner: Arc<Inner<R>>,
    peer: PeerId,
    stream: Arc<Transport<R>>,
    wake: Arc<Notify>,
    mut fresh: bool,
) {
    loop {
        let (want_read, want_write) = {
            let core = inner.lock();
            let Some(io) = core.peers.get(&peer) else {
                return;
            };
            (core.socket.wants_read(peer), io.write_blocked)
        };
        if fresh {
            // A stream just accepted: read once before the first write (`PeerIo::fresh`),
            // after the runtime has looked for readiness (a yield lets it), then write.
            fresh = false;
            inner.runtime.yield_now().await;
        } else {
            // Whichever comes first: the stream's readiness for what is wanted, or a wake-up.
            let mut readable = pin!(stream.readable());
            let mut writable = pin!(stream.writable());
            let mut woken = pin!(wake.notified());
            std::future::poll_fn(|cx| {
                if want_read && readable.as_mut().poll(cx).is_ready()
                    || want_write && writable.as_mut().poll(cx).is_ready()
                    || woken.as_mut().poll(cx).is_ready()
                {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
        }
        let more = {
            let mut core = inner.lock();
            if !core.peers.contains_key(&peer) {
                return;
            }
            if let Some(io) = core.peers.get_mut(&peer) {
                io.fresh = false;
            }
            let more = want_read && inner.read_peer(&mut core, peer, &stream);
            if let Some(io) = core.peers.get_mut(&peer) {
                // Also TLS records a read made (handshake messages).
                let flush = io.flush_pending || io.write_blocked || stream.pending_output();
                io.flush_pending = false;
                if flush {
                    inner.write_peer(&mut core, peer);
                }
            }
            if let Some(io) = core.peers.get_mut(&peer) {
                // Everything written (or waiting for the stream): the application's next
                // output may go out inline again.
                io.write_idle = !io.write_blocked;
            }
            inner.pump(&mut core);
            more
        };
        if more {
            // Let the socket's other peers have their turn before reading on.
            inner.runtime.yield_now().await;
        }
    }
}

/// Ask the ZAP handler bound at `inproc://zeromq.zap.01` about one peer, then hand the
/// verdict to the socket. A handler that does not answer within `timeout` (or at all)
/// refuses the peer (500); the handshake deadline would end it anyway.
async fn zap_task<R: Runtime>(
    inner: Arc<Inner<R>>,
    peer: PeerId,
    request: ZapRequest,
    timeout: Option<std::time::Duration>,
) {
    const REQUEST_ID: &[u8] = b"1";
    let ask = async {
        let zap = crate::Socket::with_runtime(
            inner.runtime.clone(),
            zmtp_proto::SocketType::Dealer,
            Default::default(),
        )
        .ok()?;
        zap.connect(&format!("inproc://{ZAP_ENDPOINT}")).ok()?;
        zap.send(zmtp_driver::zap::request_message(&request, REQUEST_ID))
            .await
            .ok()?;
        let reply = zap.recv().await.ok()?;
        Some(zmtp_driver::zap::read_reply(reply.frames(), REQUEST_ID))
    };
    let limit = timeout.unwrap_or(std::time::Duration::from_secs(30));
    let deadline = inner.runtime.sleep_until(StdInstant::now() + limit);
    let reply = match first(ask, deadline).await {
        Either::Left(Some(reply)) => reply,
        Either::Left(None) | Either::Right(()) => AuthReply::status(500),
    };
    let mut core = inner.lock();
    let now = inner.now();
    core.socket.handle_auth(peer, now, reply);
    inner.pump(&mut core);
}

/// Receive the datagrams of a bound `udp://` endpoint into the socket, each cut to
/// [`MAX_DATAGRAM_LEN`] bytes as libzmq's receive buffer cuts them.
async fn udp_task<R: Runtime>(inner: Arc<Inner<R>>, endpoint: EndpointId, socket: Arc<R::Udp>) {
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    loop {
        if socket.readable().await.is_err() {
            return;
        }
        // Until nothing more is there for now (or an error a later datagram does not share).
        while let Ok((n, from)) = socket.try_recv_from(&mut buf) {
            inner.with(|core| {
                let datagram = buf.get(..n).unwrap_or_default();
                core.socket.handle_datagram(endpoint, from, datagram);
            });
        }
    }
}

async fn timer_task<R: Runtime>(inner: Arc<Inner<R>>) {
    loop {
        let deadline = {
            let core = inner.lock();
            if core.closed {
                return;
            }
            core.timer_deadline
        };
        let notified = inner.timer.notified();
        match deadline {
            Some(t) => {
                let at = inner.start + std::time::Duration::from_micros(t.as_micros());
                if let Either::Left(()) = first(inner.runtime.sleep_until(at), notified).await {
                    let mut core = inner.lock();
                    let now = inner.now();
                    core.socket.handle_timeout(now);
                    inner.pump(&mut core);
                }
            }
            None => notified.await,
        }
    }
}

/// Which of two futures completed first.
pub(crate) enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Run two futures until the first completes (`a` is polled first); the other is dropped.
pub(crate) async fn first<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        b.as_mut().poll(cx).map(Either::Right)
    })
    .await
}
