//! Sockets: `zmq_socket`, `zmq_close`, endpoints, and sending and receiving frame by frame.
//!
//! The driver sends and receives whole multipart messages; libzmq's calls move one frame
//! at a time. A socket here keeps the frames sent with `ZMQ_SNDMORE` until the last one,
//! then hands the whole message to the driver, and keeps the frames of a received message
//! to hand out one per call (`ZMQ_RCVMORE` says whether more are left).

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use zmtp_mio::{Bytes, Error, Message, PeerProperties, SendError, SocketType};

use crate::ctx::{ctx_of, Ctx};
use crate::error::{errno_of, send_errno, Errno, EFSM, ETERM};
use crate::msg::{self, zmq_msg_t, Repr, FLAG_MORE};
use crate::options::Raw;
use crate::{guard, lock, ret};

/// `ZMQ_DONTWAIT`.
pub const DONTWAIT: c_int = 1;
/// `ZMQ_SNDMORE`.
pub const SNDMORE: c_int = 2;

/// A socket behind a `void *` handle.
pub(crate) struct CSocket {
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) sock: zmtp_mio::Socket,
    pub(crate) ty: SocketType,
    pub(crate) st: Mutex<State>,
    /// Frames sent with `ZMQ_SNDMORE` wait in `State::out`: a one-frame send reads this
    /// rather than take the lock.
    composing: AtomicBool,
}

/// What the C layer keeps per socket.
#[derive(Default)]
pub(crate) struct State {
    /// Frames sent with `ZMQ_SNDMORE`, waiting for the last one.
    out: Vec<Bytes>,
    /// The routing id and group of the message being sent (draft types).
    out_routing_id: u32,
    out_group: Option<Vec<u8>>,
    /// The frames of the received message not yet handed out, and its metadata.
    inq: VecDeque<Bytes>,
    in_routing_id: u32,
    in_group: Option<Arc<std::ffi::CString>>,
    in_props: Option<Arc<PeerProperties>>,
    /// Messages taken from the driver in one batch and not handed out yet, in order (a
    /// socket that is not thread-safe: see [`CSocket::take_batched`]). They count as
    /// received, as libzmq's prefetched messages do: `ZMQ_EVENTS` and `zmq_poll` see them.
    batch: VecDeque<Message>,
    /// Whether the last frame received had more after it (`ZMQ_RCVMORE`).
    pub(crate) rcvmore: bool,
    /// REQ: a request is out, its reply not yet received.
    req_waiting: bool,
    /// REP: a request is in, its reply not yet sent.
    rep_replying: bool,
    /// The last endpoint bound or connected (`ZMQ_LAST_ENDPOINT`).
    pub(crate) last_endpoint: String,
    /// Options kept here (values the driver has no field for, the security settings as
    /// libzmq takes them one at a time).
    pub(crate) raw: Raw,
    /// The socket's monitor, if one runs (`zmq_socket_monitor`).
    pub(crate) monitor: Option<crate::monitor::Monitor>,
}

/// The live sockets, by handle: a handle not in here is not a socket (`ENOTSOCK`).
static SOCKETS: LazyLock<RwLock<crate::util::Handles<Arc<CSocket>>>> =
    LazyLock::new(Default::default);

/// Counts the sockets taken out of [`SOCKETS`] (`zmq_close`): a thread's last lookup
/// ([`LAST`]) holds only while no socket was closed since.
static CLOSES: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// The socket this thread looked up last: its handle, [`CLOSES`] then, and the socket,
    /// held so that a thread's calls on one socket borrow it without counting references
    /// ([`with_sock`]). `zmq_close` closes the driver's socket itself, whoever holds it: a
    /// closed socket held here is only memory, let go at this thread's next lookup.
    static LAST: std::cell::RefCell<Option<(usize, u64, Arc<CSocket>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The socket behind `handle`, or `ENOTSOCK` (NULL, closed, or never a socket), to keep
/// beyond the call (polling, the proxy). A thread that calls on one socket again and again
/// finds it without the table's lock.
pub(crate) fn sock_of(handle: *mut c_void) -> Result<Arc<CSocket>, Errno> {
    if let Some(s) = on_held(handle, Arc::clone) {
        return Ok(s);
    }
    let key = handle as usize;
    let closes = CLOSES.load(Ordering::Acquire);
    let s = {
        let map = SOCKETS.read().unwrap_or_else(|e| e.into_inner());
        map.get(&key).cloned().ok_or(libc::ENOTSOCK)?
    };
    // Not while a call borrows the one held (a call within a call).
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some((key, closes, s.clone()));
        }
    });
    Ok(s)
}

/// `f` on the socket this thread holds ([`LAST`]) if it is the one behind `handle` and no
/// socket was closed since; `None` (and `f` not run) otherwise.
fn on_held<R>(handle: *mut c_void, f: impl FnOnce(&Arc<CSocket>) -> R) -> Option<R> {
    let closes = CLOSES.load(Ordering::Acquire);
    // `try_with`: the exit hook runs after the thread's locals are gone.
    LAST.try_with(|last| match &*last.try_borrow().ok()? {
        Some((h, c, s)) if *h == handle as usize && *c == closes => Some(f(s)),
        _ => None,
    })
    .ok()
    .flatten()
}

/// Run `f` on the socket behind `handle` (`ENOTSOCK` if none, as [`sock_of`]). The socket
/// this thread looked up last is borrowed, with no reference counted: the per-message
/// calls (`zmq_send`, `zmq_recv`, `zmq_msg_send`, `zmq_msg_recv`) and the option calls
/// (`ZMQ_EVENTS` in an event loop) cost an atomic operation less each way.
pub(crate) fn with_sock<R>(
    handle: *mut c_void,
    f: impl FnOnce(&CSocket) -> Result<R, Errno>,
) -> Result<R, Errno> {
    let mut f = Some(f);
    if let Some(r) = on_held(handle, |s| f.take().map(|f| f(s))).flatten() {
        return r;
    }
    let s = sock_of(handle)?;
    // `f` is still here: it ran only if the socket was found above.
    f.take().map_or(Err(libc::ENOTSOCK), |f| f(&s))
}

impl CSocket {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.st)
    }

    /// `ETERM` once the context is being terminated.
    pub(crate) fn alive(&self) -> Result<(), Errno> {
        if self.ctx.terminating() {
            return Err(ETERM);
        }
        Ok(())
    }

    /// The errno of a driver error on this socket.
    pub(crate) fn errno(&self, e: &Error) -> Errno {
        errno_of(e, self.ctx.terminating())
    }

    /// `ZMQ_EVENTS`: `ZMQ_POLLIN` and/or `ZMQ_POLLOUT`, as libzmq reports them (a REQ
    /// awaiting its reply cannot send, a REP owing a reply cannot receive).
    pub(crate) fn events(&self) -> c_int {
        let (pending, req_waiting, rep_replying, relaxed) = {
            let st = self.state();
            (
                !st.inq.is_empty() || !st.batch.is_empty(),
                st.req_waiting,
                st.rep_replying,
                st.raw.req_relaxed,
            )
        };
        let mut events = 0;
        let can_recv = match self.ty {
            SocketType::Req => req_waiting && (pending || self.sock.can_recv()),
            SocketType::Rep => pending || (!rep_replying && self.sock.can_recv()),
            _ => pending || self.sock.can_recv(),
        };
        let can_send = match self.ty {
            SocketType::Req => (!req_waiting || relaxed) && self.sock.can_send(),
            SocketType::Rep => rep_replying,
            _ => self.sock.can_send(),
        };
        if can_recv {
            events |= crate::poll::POLLIN;
        }
        if can_send {
            events |= crate::poll::POLLOUT;
        }
        events
    }

    /// The events to ask the driver's poll for, given what the C layer allows (so that a
    /// wait does not end on readiness that `events` then masks).
    pub(crate) fn driver_interest(&self, events: c_int) -> u8 {
        let st = self.state();
        let mut wanted = 0u8;
        let recv_ok = match self.ty {
            SocketType::Req => st.req_waiting,
            SocketType::Rep => !st.rep_replying,
            _ => true,
        };
        let send_ok = match self.ty {
            SocketType::Req => !st.req_waiting || st.raw.req_relaxed,
            SocketType::Rep => false,
            _ => true,
        };
        if events & crate::poll::POLLIN != 0 && recv_ok {
            wanted |= zmtp_mio::POLLIN;
        }
        if events & crate::poll::POLLOUT != 0 && send_ok {
            wanted |= zmtp_mio::POLLOUT;
        }
        wanted
    }

    /// Send one frame (`repr`); the message goes to the driver with its last frame. On
    /// failure the frame is handed back, as libzmq leaves a message it did not send with
    /// its caller.
    pub(crate) fn send_frame(&self, repr: Repr, flags: c_int) -> Result<usize, (Errno, Repr)> {
        if let Err(e) = self.alive() {
            return Err((e, repr));
        }
        if !self.ty.sends() {
            return Err((libc::ENOTSUP, repr));
        }
        let size = repr.body.len();
        let mut st = self.state();
        // A STREAM message is a routing id and one data frame, whose MORE flag libzmq
        // ignores: the data frame ends it.
        let more = flags & SNDMORE != 0 && !(self.ty == SocketType::Stream && st.out.len() == 1);
        if st.out.is_empty() {
            // The first frame of a message: the pattern's state says whether it may go.
            match self.ty {
                SocketType::Req if st.req_waiting && !st.raw.req_relaxed => {
                    return Err((EFSM, repr))
                }
                SocketType::Rep if !st.rep_replying => return Err((EFSM, repr)),
                _ => {}
            }
            if more && single_frame_type(self.ty) {
                return Err((libc::EINVAL, repr));
            }
            // As in libzmq, a message's first frame waits (up to SNDTIMEO) for a peer to
            // take it: the frames kept here never wait for a peer that is not there.
            if more && !self.sock.can_send() {
                if flags & DONTWAIT != 0 {
                    return Err((libc::EAGAIN, repr));
                }
                drop(st);
                if let Err(e) = self.wait_writable() {
                    return Err((e, repr));
                }
                st = self.state();
            }
            // STREAM: an unknown peer is refused on the routing-id frame.
            if more && self.ty == SocketType::Stream && !self.sock.routes_to(&repr.body) {
                return Err((libc::EHOSTUNREACH, repr));
            }
            // ROUTER_MANDATORY: on the routing-id frame, as libzmq checks there, an unknown
            // peer is refused and a peer at its SNDHWM makes the frame wait (at most
            // SNDTIMEO; at once EAGAIN with DONTWAIT).
            if more && self.ty == SocketType::Router && st.raw.router_mandatory {
                match self.sock.route_has_room(&repr.body) {
                    None => return Err((libc::EHOSTUNREACH, repr)),
                    Some(true) => {}
                    Some(false) if flags & DONTWAIT != 0 => return Err((libc::EAGAIN, repr)),
                    Some(false) => {
                        drop(st);
                        if let Err(e) = self.wait_for_route(&repr.body) {
                            return Err((e, repr));
                        }
                        st = self.state();
                    }
                }
            }
            st.out_routing_id = repr.routing_id;
            st.out_group = repr.group.as_ref().map(|g| g.to_bytes().to_vec());
        }
        if more {
            st.out.push(repr.body);
            self.composing.store(true, Ordering::Release);
            return Ok(size);
        }
        // The last frame: the whole message goes.
        let mut frames = std::mem::take(&mut st.out);
        self.composing.store(false, Ordering::Release);
        let had = frames.len();
        let routing_id = st.out_routing_id;
        let group = st.out_group.take();
        drop(st);
        // A message of one frame needs no list.
        let mut message = if frames.is_empty() {
            Message::from(repr.body.clone())
        } else {
            frames.push(repr.body.clone());
            Message::from(frames)
        };
        if routing_id != 0 && message.set_routing_id(routing_id).is_err() {
            return Err((libc::EINVAL, self.restore(message, had, repr)));
        }
        if let Some(group) = &group {
            if message.set_group(group).is_err() {
                return Err((libc::EINVAL, self.restore(message, had, repr)));
            }
        }
        match self.send_message(message, flags & DONTWAIT != 0) {
            Ok(()) => {
                let mut st = self.state();
                match self.ty {
                    SocketType::Req => st.req_waiting = true,
                    SocketType::Rep => st.rep_replying = false,
                    _ => {}
                }
                Ok(size)
            }
            Err((e, message)) => {
                let mut st = self.state();
                st.out_group = group;
                drop(st);
                Err((e, self.restore(message, had, repr)))
            }
        }
    }

    /// `zmq_send`'s frame, from the caller's buffer. A whole single-frame message of a
    /// type whose sends the C layer keeps no state for goes to the driver's
    /// `try_send_slice`, which copies it straight into the peer's output when it can go at
    /// once (no frame allocated, no message built); anything else goes through
    /// [`send_frame`](Self::send_frame) with a copy of the bytes.
    pub(crate) fn send_slice(&self, body: &[u8], flags: c_int) -> Result<usize, Errno> {
        let plain = flags & SNDMORE == 0
            && matches!(
                self.ty,
                SocketType::Push
                    | SocketType::Pub
                    | SocketType::XPub
                    | SocketType::XSub
                    | SocketType::Dealer
                    | SocketType::Pair
            )
            && !self.composing.load(Ordering::Acquire);
        if !plain {
            let repr = Repr::new(Bytes::copy_from_slice(body));
            return self.send_frame(repr, flags).map_err(|(e, _)| e);
        }
        self.alive()?;
        match self.sock.try_send_slice(body) {
            Ok(_) => Ok(body.len()),
            // No room: the driver's own wait (at most SNDTIMEO), with the copy it made,
            // which a context shutdown ends by closing the socket.
            Err(SendError::WouldBlock(message)) if flags & DONTWAIT == 0 => self
                .sock
                .send_timeout(message, self.sock.sndtimeo())
                .map(|_| body.len())
                .map_err(|e| self.errno(&e)),
            Err(e) => Err(send_errno(&e, self.ctx.terminating())),
        }
    }

    /// After a failed send of the last frame: keep the frames before it for the retry.
    fn restore(&self, message: Message, had: usize, repr: Repr) -> Repr {
        let mut frames = message.into_frames();
        frames.truncate(had);
        let mut st = self.state();
        self.composing.store(!frames.is_empty(), Ordering::Release);
        st.out = frames;
        repr
    }

    /// Wait until the socket can send, at most SNDTIMEO (`EAGAIN` then).
    fn wait_writable(&self) -> Result<(), Errno> {
        let deadline = self.sock.sndtimeo().map(|t| Instant::now() + t);
        while !self.sock.can_send() {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(libc::EAGAIN);
            }
            let wait = deadline.map(|d| d - now);
            let mut items = [zmtp_mio::PollItem::new(&self.sock, zmtp_mio::POLLOUT)];
            zmtp_mio::poll(&mut items, wait).map_err(|e| self.errno(&e))?;
            if self.ctx.terminating() {
                return Err(ETERM);
            }
        }
        Ok(())
    }

    /// ROUTER_MANDATORY: wait (at most SNDTIMEO) until the peer with routing id `id` has
    /// room; `EHOSTUNREACH` if it leaves meanwhile. The socket's own writability says
    /// nothing of one peer (a ROUTER is writable while any peer has room), so this looks
    /// again every millisecond.
    fn wait_for_route(&self, id: &[u8]) -> Result<(), Errno> {
        let deadline = self.sock.sndtimeo().map(|t| Instant::now() + t);
        loop {
            match self.sock.route_has_room(id) {
                Some(true) => return Ok(()),
                None => return Err(libc::EHOSTUNREACH),
                Some(false) => {}
            }
            if self.ctx.terminating() {
                return Err(ETERM);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(libc::EAGAIN);
            }
            let step = Duration::from_millis(1);
            std::thread::sleep(deadline.map_or(step, |d| (d - now).min(step)));
        }
    }

    /// Hand a whole message to the driver, waiting (at most SNDTIMEO) unless `dontwait`.
    fn send_message(&self, message: Message, dontwait: bool) -> Result<(), (Errno, Message)> {
        let deadline = self.sock.sndtimeo().map(|t| Instant::now() + t);
        let mut message = message;
        loop {
            match self.sock.try_send(message) {
                Ok(_) => return Ok(()),
                Err(SendError::WouldBlock(m)) => message = m,
                Err(e) => {
                    let errno = send_errno(&e, self.ctx.terminating());
                    return Err((errno, e.into_message()));
                }
            }
            let now = Instant::now();
            if dontwait || deadline.is_some_and(|d| now >= d) {
                return Err((libc::EAGAIN, message));
            }
            let wait = deadline.map(|d| d - now);
            let mut items = [zmtp_mio::PollItem::new(&self.sock, zmtp_mio::POLLOUT)];
            if let Err(e) = zmtp_mio::poll(&mut items, wait) {
                return Err((self.errno(&e), message));
            }
            if self.ctx.terminating() {
                return Err((ETERM, message));
            }
        }
    }

    /// Receive one frame: the next of the message being handed out, or the first of a
    /// new one (waiting at most RCVTIMEO unless `ZMQ_DONTWAIT`).
    ///
    /// The common case of a busy socket comes first, in a short function of its own with
    /// the rest out of line: a message taken in the last batch, with no frame of the one
    /// before left to hand out and no REQ/REP turn to check.
    pub(crate) fn recv_frame(&self, flags: c_int) -> Result<Repr, Errno> {
        self.alive()?;
        // One lock for the frames left of the last message, the REQ/REP turn and a message
        // already received; it is let go only to wait.
        let mut st = self.state();
        if st.inq.is_empty() && !matches!(self.ty, SocketType::Req | SocketType::Rep) {
            if let Some(message) = st.batch.pop_front() {
                return self.open(&mut st, message);
            }
        }
        self.recv_frame_slow(st, flags)
    }

    /// [`recv_frame`](Self::recv_frame) past its common case.
    #[inline(never)]
    fn recv_frame_slow<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        flags: c_int,
    ) -> Result<Repr, Errno> {
        if let Some(frame) = self.next_frame(&mut st) {
            return Ok(frame);
        }
        if !self.ty.receives() {
            return Err(libc::ENOTSUP);
        }
        match self.ty {
            SocketType::Req if !st.req_waiting => return Err(EFSM),
            SocketType::Rep if st.rep_replying => return Err(EFSM),
            _ => {}
        }
        let message = if flags & DONTWAIT != 0 {
            match self.take_batched(&mut st) {
                Some(m) => m,
                // Not waiting: the streams are read once, as libzmq's non-blocking receive
                // looks at its pipes.
                None => match self.sock.try_recv() {
                    Ok(Some(m)) => m,
                    Ok(None) => return Err(libc::EAGAIN),
                    Err(e) => return Err(self.errno(&e)),
                },
            }
        } else if let Some(m) = st.batch.pop_front() {
            m
        } else {
            // The driver's receive looks first and then waits: no look of this layer's
            // before it (a round trip's receive usually finds nothing yet).
            let m;
            (st, m) = self.recv_waiting(st)?;
            m
        };
        self.open(&mut st, message)
    }

    /// Start handing out a received message: keep its metadata for its frames, and give
    /// its first frame.
    #[inline(always)]
    fn open(&self, st: &mut State, mut message: Message) -> Result<Repr, Errno> {
        st.in_routing_id = message.routing_id().unwrap_or(0);
        st.in_group = message
            .group()
            .and_then(|g| std::ffi::CString::new(g.to_vec()).ok())
            .map(Arc::new);
        // Moved, not counted again: every message of a connection shares them.
        st.in_props = message.take_properties();
        // A single frame is handed out at once, without the queue of frames.
        match message.into_only_frame() {
            Ok(body) => Ok(self.hand_out(st, body, false)),
            Err(message) => self.open_frames(st, message),
        }
    }

    /// [`open`](Self::open) for a message of no frame or several.
    #[inline(never)]
    fn open_frames(&self, st: &mut State, message: Message) -> Result<Repr, Errno> {
        if message.is_empty() {
            return Ok(self.hand_out(st, Bytes::new(), false));
        }
        st.inq = message.into_frames().into();
        self.next_frame(st).ok_or(libc::EAGAIN)
    }

    /// The next message received and ready, if any. A socket that is not thread-safe
    /// (one thread at a time, as libzmq requires) takes what the driver has ready in one
    /// batch under one lock of the driver's socket and keeps it here, under the lock this
    /// layer takes anyway, handing the messages out one per call. A thread-safe one takes
    /// one message per call: another thread may be waiting in the driver for the next, and
    /// would not see messages kept here.
    fn take_batched(&self, st: &mut State) -> Option<Message> {
        if crate::options::thread_safe(self.ty) {
            return self.sock.try_recv_ready();
        }
        if st.batch.is_empty() {
            let mut list = batch_list(st);
            let _ = self.sock.try_recv_batch(&mut list);
            st.batch = VecDeque::from(list);
        }
        st.batch.pop_front()
    }

    /// Wait (without this layer's lock, at most RCVTIMEO) for the next message. A socket
    /// that is not thread-safe takes a batch, as [`take_batched`](Self::take_batched) does,
    /// and keeps the rest.
    fn recv_waiting<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
    ) -> Result<(MutexGuard<'a, State>, Message), Errno> {
        if crate::options::thread_safe(self.ty) {
            drop(st);
            let m = self.sock.recv().map_err(|e| self.errno(&e));
            self.alive()?;
            return Ok((self.state(), m?));
        }
        let mut list = batch_list(&mut st);
        drop(st);
        let got = self.sock.recv_batch(&mut list);
        self.alive()?;
        got.map_err(|e| self.errno(&e))?;
        let mut st = self.state();
        // Another thread's receive (a misuse of a socket that is not thread-safe) may
        // have left messages meanwhile: they were taken first, and go first.
        st.batch.extend(list);
        let m = st.batch.pop_front().ok_or(libc::EAGAIN)?;
        Ok((st, m))
    }

    /// The next frame of the message being handed out, if any.
    fn next_frame(&self, st: &mut State) -> Option<Repr> {
        let body = st.inq.pop_front()?;
        let more = !st.inq.is_empty();
        Some(self.hand_out(st, body, more))
    }

    /// A received frame as the application gets it: with the message's routing id and
    /// metadata, `ZMQ_RCVMORE` set from `more`, and the REQ/REP turn moved at the end of
    /// the message.
    #[inline]
    fn hand_out(&self, st: &mut State, body: Bytes, more: bool) -> Repr {
        st.rcvmore = more;
        let mut repr = Repr::new(body);
        repr.routing_id = st.in_routing_id;
        if more {
            repr.flags |= FLAG_MORE;
            repr.group = st.in_group.clone();
            repr.props = st.in_props.clone();
        } else {
            repr.group = st.in_group.take();
            repr.props = st.in_props.take();
            match self.ty {
                SocketType::Req => st.req_waiting = false,
                SocketType::Rep => st.rep_replying = true,
                _ => {}
            }
        }
        repr
    }
}

/// The batch queue's buffer, emptied, as the list the driver fills: refilled in place, with
/// no allocation once it has grown.
fn batch_list(st: &mut State) -> Vec<Message> {
    let mut list = Vec::from(std::mem::take(&mut st.batch));
    list.clear();
    list
}

/// The draft types whose messages are a single frame (`ZMQ_SNDMORE` is `EINVAL`): all but
/// DGRAM, whose messages are an address and a body.
fn single_frame_type(ty: SocketType) -> bool {
    !matches!(
        ty,
        SocketType::Pair
            | SocketType::Pub
            | SocketType::Sub
            | SocketType::Req
            | SocketType::Rep
            | SocketType::Dealer
            | SocketType::Router
            | SocketType::Pull
            | SocketType::Push
            | SocketType::XPub
            | SocketType::XSub
            | SocketType::Stream
            | SocketType::Dgram
    )
}

/// A C string argument as UTF-8 text, or `EINVAL`.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn text<'a>(text: *const c_char) -> Result<&'a str, Errno> {
    if text.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller promises a NUL-terminated string, checked non-null.
    unsafe { CStr::from_ptr(text) }
        .to_str()
        .map_err(|_| libc::EINVAL)
}

fn new_socket(context: *mut c_void, ty: c_int) -> Result<*mut c_void, Errno> {
    let ctx = ctx_of(context)?;
    let ty = u8::try_from(ty)
        .ok()
        .and_then(SocketType::from_number)
        .ok_or(libc::EINVAL)?;
    // Every message carries its peer's properties, as libzmq's carry its metadata
    // (`zmq_msg_gets`, `ZMQ_SRCFD`).
    let mut options = zmtp_mio::Options::default().with_properties_on_every_message(true);
    if !ctx.blocky() {
        options = options.with_linger(Some(Duration::ZERO));
    }
    let sock = ctx.socket(ty, options)?;
    let raw = Raw {
        ipv6: ctx.ipv6(),
        ..Raw::default()
    };
    let s = Arc::new(CSocket {
        ctx,
        sock,
        ty,
        composing: AtomicBool::new(false),
        st: Mutex::new(State {
            raw,
            ..State::default()
        }),
    });
    let handle = Arc::as_ptr(&s) as *mut c_void;
    let mut map = SOCKETS.write().unwrap_or_else(|e| e.into_inner());
    map.insert(handle as usize, s);
    Ok(handle)
}

/// `zmq_socket`: a new socket of type `type_` in the context, or NULL with `errno`
/// (`EINVAL` for an unknown type, `EFAULT` for a bad context, `ETERM`, `EMFILE`).
#[no_mangle]
pub extern "C" fn zmq_socket(context: *mut c_void, type_: c_int) -> *mut c_void {
    guard(std::ptr::null_mut(), || match new_socket(context, type_) {
        Ok(h) => h,
        Err(e) => {
            crate::error::set_errno(e);
            std::ptr::null_mut()
        }
    })
}

/// `zmq_close`: close the socket; what it queued is still sent, per `ZMQ_LINGER`, in
/// the background (the context's termination waits for it).
#[no_mangle]
pub extern "C" fn zmq_close(socket: *mut c_void) -> c_int {
    guard(-1, || {
        let removed = {
            let mut map = SOCKETS.write().unwrap_or_else(|e| e.into_inner());
            let removed = map.remove(&(socket as usize));
            // Every thread's last lookup is stale now (its socket may be this one).
            CLOSES.fetch_add(1, Ordering::Release);
            removed
        };
        match removed {
            Some(s) => {
                close(s);
                0
            }
            // Closed by the exit hook already: a cleanup the program registered with
            // `atexit` before its first context runs after the hook, and may assert that
            // its `zmq_close` succeeds.
            None if lock(&CLOSED_AT_EXIT).remove(&(socket as usize)) => 0,
            None => ret::<c_int>(Err(libc::ENOTSOCK)),
        }
    })
}

/// The handles of the sockets [`close_all`] closed, which `zmq_close` may still be given.
static CLOSED_AT_EXIT: Mutex<std::collections::BTreeSet<usize>> =
    Mutex::new(std::collections::BTreeSet::new());

/// Close every socket the program has not closed, as `zmq_close` would (the process is
/// exiting: see `ctx::linger_at_exit`).
pub(crate) fn close_all() {
    let all: Vec<(usize, Arc<CSocket>)> = {
        let mut map = SOCKETS.write().unwrap_or_else(|e| e.into_inner());
        CLOSES.fetch_add(1, Ordering::Release);
        map.drain().collect()
    };
    lock(&CLOSED_AT_EXIT).extend(all.iter().map(|(handle, _)| *handle));
    all.into_iter().for_each(|(_, s)| close(s));
}

/// Close a socket taken out of [`SOCKETS`].
fn close(s: Arc<CSocket>) {
    // A socket a forked child inherited: the I/O thread that would close it is the
    // parent's, so the child leaves it alone (the parent's copy goes on).
    if s.ctx.forked() {
        std::mem::forget(s);
        return;
    }
    let monitor = s.state().monitor.take();
    let ctx = s.ctx.clone();
    // The driver's socket lingers in the background from here, though another thread may
    // still hold it (in a call, or as the socket it looked up last).
    s.sock.close_shared();
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            if last
                .as_ref()
                .is_some_and(|(_, _, held)| Arc::ptr_eq(held, &s))
            {
                *last = None;
            }
        }
    });
    drop(s);
    // A monitor sends the events of the close (CLOSED for the endpoints listened on),
    // says it stopped, then ends.
    if let Some(monitor) = monitor {
        monitor.stop();
    }
    ctx.socket_closed();
}

/// A bind to every interface (`tcp://*:5555`, `udp://*:5556`, `ws://*:80/path`) with
/// `ZMQ_IPV6` set is a bind to every IPv6 interface, which takes IPv4 peers too (a
/// dual-stack socket), as libzmq's is; other endpoints are as given.
fn ipv6_wildcard(addr: &str, ipv6: bool) -> std::borrow::Cow<'_, str> {
    for scheme in ["tcp://", "udp://", "ws://"] {
        if let Some(rest) = addr.strip_prefix(scheme).filter(|_| ipv6) {
            if let Some(port) = rest.strip_prefix("*:") {
                return format!("{scheme}[::]:{port}").into();
            }
        }
    }
    addr.into()
}

/// Run `f` on the socket behind `socket` and an endpoint argument.
fn with_endpoint(
    socket: *mut c_void,
    addr: *const c_char,
    f: impl FnOnce(&CSocket, &str) -> Result<(), Errno>,
) -> c_int {
    guard(-1, || {
        ret(sock_of(socket).and_then(|s| {
            s.alive()?;
            // SAFETY: `zmq_bind` and its kind take a NUL-terminated endpoint or NULL.
            let addr = unsafe { text(addr) }?;
            {
                let st = s.state();
                if !st.raw.bind_to_device.is_empty() {
                    return Err(libc::ENOTSUP);
                }
            }
            // An `ipc://` path longer than a Unix socket address holds (`sun_path`).
            if addr
                .strip_prefix("ipc://")
                .is_some_and(|path| path.len() >= 108)
            {
                return Err(libc::ENAMETOOLONG);
            }
            // `udp://` is for RADIO, DISH and DGRAM only, and DGRAM has nothing else.
            let udp = addr.starts_with("udp://");
            let udp_type = matches!(
                s.ty,
                SocketType::Radio | SocketType::Dish | SocketType::Dgram
            );
            if (udp && !udp_type) || (s.ty == SocketType::Dgram && !udp) {
                return Err(crate::error::ENOCOMPATPROTO);
            }
            f(&s, addr).map(|()| 0)
        }))
    })
}

/// `zmq_bind`: listen on an endpoint (`tcp://`, `ipc://`, `ws://`, `wss://`, `udp://`).
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_bind(socket: *mut c_void, addr: *const c_char) -> c_int {
    with_endpoint(socket, addr, |s, addr| {
        // A RADIO sends its datagrams to a group's address: it only connects.
        if s.ty == SocketType::Radio && addr.starts_with("udp://") {
            return Err(crate::error::ENOCOMPATPROTO);
        }
        let addr = &ipv6_wildcard(addr, s.state().raw.ipv6);
        let target = s.ctx.endpoint(addr)?;
        let takes_fd = ["tcp://", "ipc://", "ws://"]
            .iter()
            .any(|scheme| addr.starts_with(scheme));
        let listener = match takes_fd {
            true => s.state().raw.take_use_fd()?,
            false => None,
        };
        let resolved = match listener {
            Some(fd) => s.sock.bind_listener(target, fd),
            None => s.sock.bind(target),
        }
        .map_err(|e| s.errno(&e))?;
        let inproc = addr.starts_with("inproc://");
        s.state().last_endpoint = if inproc { addr.to_string() } else { resolved };
        Ok(())
    })
}

/// `zmq_connect`: connect to an endpoint (in the background; messages queue meanwhile).
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_connect(socket: *mut c_void, addr: *const c_char) -> c_int {
    with_endpoint(socket, addr, |s, addr| {
        // A DGRAM only binds (and sends to the addresses it hears from), and so does a
        // DISH on `udp://` (it receives what RADIOs send to its address).
        if s.ty == SocketType::Dgram || (s.ty == SocketType::Dish && addr.starts_with("udp://")) {
            return Err(crate::error::ENOCOMPATPROTO);
        }
        let target = s.ctx.endpoint(addr)?;
        s.sock.connect(target).map_err(|e| s.errno(&e))?;
        s.state().last_endpoint = addr.to_owned();
        Ok(())
    })
}

/// `zmq_unbind`: stop listening on an endpoint bound (`ENOENT` if it is not).
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_unbind(socket: *mut c_void, addr: *const c_char) -> c_int {
    with_endpoint(socket, addr, |s, addr| {
        // Only the endpoint as bound (its resolved form): a wildcard names none.
        if addr.ends_with(":*") || addr == "ipc://*" {
            return Err(libc::ENOENT);
        }
        let target = s.ctx.endpoint(addr)?;
        s.sock.unbind(target).map_err(|e| s.errno(&e))
    })
}

/// `zmq_disconnect`: drop a connection made with `zmq_connect` (`ENOENT` if none).
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_disconnect(socket: *mut c_void, addr: *const c_char) -> c_int {
    with_endpoint(socket, addr, |s, addr| {
        let target = s.ctx.endpoint(addr)?;
        s.sock.disconnect(target).map_err(|e| s.errno(&e))
    })
}

/// The draft `zmq_socket_get_peer_state`: on a ROUTER, `ZMQ_POLLOUT` when the peer with
/// routing id `routing_id` (`size` bytes) has room for a message now (below SNDHWM), 0
/// when it is full; `EHOSTUNREACH` when no peer has that id, `ENOTSUP` on other types.
///
/// # Safety
/// `routing_id` must point to `size` readable bytes (NULL only with `size` 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_socket_get_peer_state(
    socket: *mut c_void,
    routing_id: *const c_void,
    size: usize,
) -> c_int {
    guard(-1, || {
        let s = match sock_of(socket) {
            Ok(s) => s,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        if let Err(e) = s.alive() {
            return ret::<c_int>(Err(e));
        }
        if s.ty != SocketType::Router {
            return ret::<c_int>(Err(libc::ENOTSUP));
        }
        let id: &[u8] = match (routing_id.is_null(), size) {
            (_, 0) => &[],
            (true, _) => return ret::<c_int>(Err(libc::EFAULT)),
            // SAFETY: the caller promises `size` readable bytes at `routing_id` (non-null).
            (false, _) => unsafe { std::slice::from_raw_parts(routing_id.cast::<u8>(), size) },
        };
        match s.sock.route_has_room(id) {
            Some(true) => crate::poll::POLLOUT,
            Some(false) => 0,
            None => ret::<c_int>(Err(libc::EHOSTUNREACH)),
        }
    })
}

/// A frame's size as the `int` libzmq's send and receive calls return.
fn size_ret(size: usize) -> c_int {
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

/// `zmq_msg_send`: send the message as one frame (`ZMQ_SNDMORE`: more follow); returns
/// its size. On success the message is emptied; on failure it is left to the caller.
#[no_mangle]
pub extern "C" fn zmq_msg_send(msg: *mut zmq_msg_t, socket: *mut c_void, flags: c_int) -> c_int {
    guard(-1, || {
        ret(with_sock(socket, |s| {
            let repr = msg::take(msg)?;
            match s.send_frame(repr, flags) {
                Ok(size) => {
                    msg::put(msg, Repr::new(Bytes::new()));
                    Ok(size_ret(size))
                }
                Err((e, repr)) => {
                    msg::put(msg, repr);
                    Err(e)
                }
            }
        }))
    })
}

/// `zmq_sendmsg`: `zmq_msg_send` with the arguments of libzmq 3.
#[no_mangle]
pub extern "C" fn zmq_sendmsg(socket: *mut c_void, msg: *mut zmq_msg_t, flags: c_int) -> c_int {
    zmq_msg_send(msg, socket, flags)
}

/// `zmq_msg_recv`: receive one frame into the message (whose old content is released);
/// returns its size.
#[no_mangle]
pub extern "C" fn zmq_msg_recv(msg: *mut zmq_msg_t, socket: *mut c_void, flags: c_int) -> c_int {
    guard(-1, || {
        ret(with_sock(socket, |s| {
            // The message must be initialised; its old content goes once a frame is in
            // (a failed receive leaves it).
            if !msg::is_live(msg) {
                return Err(libc::EFAULT);
            }
            let repr = s.recv_frame(flags)?;
            let size = repr.body.len();
            msg::replace(msg, repr);
            Ok(size_ret(size))
        }))
    })
}

/// `zmq_recvmsg`: `zmq_msg_recv` with the arguments of libzmq 3.
#[no_mangle]
pub extern "C" fn zmq_recvmsg(socket: *mut c_void, msg: *mut zmq_msg_t, flags: c_int) -> c_int {
    zmq_msg_recv(msg, socket, flags)
}

/// Send `len` bytes at `buf` as one frame, taking them as `body`.
fn send_body(socket: *mut c_void, body: Bytes, flags: c_int) -> c_int {
    guard(-1, || {
        ret(with_sock(socket, |s| {
            s.send_frame(Repr::new(body), flags)
                .map(size_ret)
                .map_err(|(e, _)| e)
        }))
    })
}

/// `zmq_send`: send a copy of `len` bytes at `buf` as one frame; returns `len`.
///
/// # Safety
/// `buf` must point to `len` readable bytes (or be anything when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_send(
    socket: *mut c_void,
    buf: *const c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    if buf.is_null() && len > 0 {
        crate::error::set_errno(libc::EFAULT);
        return -1;
    }
    let body: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: the caller promises `len` readable bytes at `buf`, checked non-null.
        unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
    };
    guard(-1, || {
        ret(with_sock(socket, |s| s.send_slice(body, flags)).map(size_ret))
    })
}

/// Bytes the application keeps valid forever (`zmq_send_const`).
struct Constant(*const u8, usize);

// SAFETY: `zmq_send_const`'s caller promises the bytes are constant and outlive the
// library's use of them; they are only read.
unsafe impl Send for Constant {}
// SAFETY: as above.
unsafe impl Sync for Constant {}

impl AsRef<[u8]> for Constant {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: non-null with `len` bytes (checked in `zmq_send_const`), constant.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

/// `zmq_send_const`: send `len` constant bytes at `buf` as one frame, without a copy.
///
/// # Safety
/// `buf` must point to `len` bytes that stay unchanged and valid as long as the library
/// may send them.
#[no_mangle]
pub unsafe extern "C" fn zmq_send_const(
    socket: *mut c_void,
    buf: *const c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    if buf.is_null() && len > 0 {
        crate::error::set_errno(libc::EFAULT);
        return -1;
    }
    let body = if len == 0 {
        Bytes::new()
    } else {
        Bytes::from_owner(Constant(buf.cast::<u8>(), len))
    };
    send_body(socket, body, flags)
}

/// `zmq_recv`: receive one frame into `buf`, cut to `len` bytes; returns the frame's
/// whole size (larger than `len` when it was cut).
///
/// # Safety
/// `buf` must point to `len` writable bytes (or be anything when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_recv(
    socket: *mut c_void,
    buf: *mut c_void,
    len: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        if buf.is_null() && len > 0 {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        ret(with_sock(socket, |s| {
            let frame = s.recv_frame(flags)?;
            let n = frame.body.len().min(len);
            if n > 0 {
                // SAFETY: the caller promises `len` writable bytes at `buf` (non-null),
                // and `n <= len`; the frame is a separate allocation.
                unsafe { std::ptr::copy_nonoverlapping(frame.body.as_ptr(), buf.cast::<u8>(), n) };
            }
            Ok(size_ret(frame.body.len()))
        }))
    })
}

/// Subscribe or unsubscribe (`ZMQ_SUBSCRIBE`, `ZMQ_UNSUBSCRIBE` on a SUB).
pub(crate) fn subscription(s: &CSocket, topic: &[u8], on: bool) -> Result<(), Errno> {
    let done = if on {
        s.sock.subscribe(topic)
    } else {
        s.sock.unsubscribe(topic)
    };
    done.map_err(|e| s.errno(&e))
}

/// `zmq_join` (draft): a DISH joins a group.
///
/// # Safety
/// `group` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_join(socket: *mut c_void, group: *const c_char) -> c_int {
    group_call(socket, group, true)
}

/// `zmq_leave` (draft): a DISH leaves a group.
///
/// # Safety
/// `group` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_leave(socket: *mut c_void, group: *const c_char) -> c_int {
    group_call(socket, group, false)
}

fn group_call(socket: *mut c_void, group: *const c_char, join: bool) -> c_int {
    guard(-1, || {
        ret(sock_of(socket).and_then(|s| {
            s.alive()?;
            if group.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: `zmq_join`'s caller passes a NUL-terminated string, checked non-null.
            let group = unsafe { CStr::from_ptr(group) }.to_bytes();
            let done = if join {
                s.sock.join(group)
            } else {
                s.sock.leave(group)
            };
            done.map(|()| 0).map_err(|e| match e {
                Error::Unsupported => libc::ENOTSUP,
                e => s.errno(&e),
            })
        }))
    })
}

/// `zmq_connect_peer` (draft): a PEER connects and learns the routing id of the peer
/// there; 0 with `errno` on failure.
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_connect_peer(socket: *mut c_void, addr: *const c_char) -> u32 {
    guard(0, || {
        let got = sock_of(socket).and_then(|s| {
            s.alive()?;
            // SAFETY: the caller passes a NUL-terminated string or NULL.
            let addr = unsafe { text(addr) }?;
            if s.ty != SocketType::Peer {
                return Err(libc::ENOTSUP);
            }
            let target = s.ctx.endpoint(addr)?;
            s.sock.connect_peer(target).map_err(|e| s.errno(&e))
        });
        match got {
            Ok(id) => id,
            Err(e) => {
                crate::error::set_errno(e);
                0
            }
        }
    })
}

/// `zmq_sendiov`: send `count` buffers as frames of one message; `flags` applies to each
/// (`ZMQ_SNDMORE` on all but the last, which goes without it). Returns the last frame's
/// size.
///
/// # Safety
/// `iov` must point to `count` `struct iovec`s, each with `iov_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_sendiov(
    socket: *mut c_void,
    iov: *mut libc::iovec,
    count: usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        let s = match sock_of(socket) {
            Ok(s) => s,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        if count == 0 || iov.is_null() {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        // SAFETY: the caller promises `count` iovecs at `iov` (non-null).
        let iov = unsafe { std::slice::from_raw_parts(iov, count) };
        let mut rc = 0;
        for (i, v) in iov.iter().enumerate() {
            let body = if v.iov_len == 0 || v.iov_base.is_null() {
                Bytes::new()
            } else {
                // SAFETY: the caller promises `iov_len` readable bytes at `iov_base`.
                Bytes::copy_from_slice(unsafe {
                    std::slice::from_raw_parts(v.iov_base.cast::<u8>(), v.iov_len)
                })
            };
            let f = if i == count - 1 {
                flags & !SNDMORE
            } else {
                flags
            };
            match s.send_frame(Repr::new(body), f) {
                Ok(n) => rc = size_ret(n),
                Err((e, _)) => return ret::<c_int>(Err(e)),
            }
        }
        rc
    })
}

/// `zmq_recviov`: receive up to `*count` frames of a message into buffers this call
/// allocates with `malloc` (the caller frees them); sets `*count` to the frames received
/// and returns it too, as libzmq does.
///
/// # Safety
/// `count` must point to a writable `size_t` and `iov` to that many writable iovecs.
#[no_mangle]
pub unsafe extern "C" fn zmq_recviov(
    socket: *mut c_void,
    iov: *mut libc::iovec,
    count: *mut usize,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        let s = match sock_of(socket) {
            Ok(s) => s,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        // SAFETY: the caller promises a readable `size_t` at `count` where non-null.
        if iov.is_null() || count.is_null() || unsafe { *count } == 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        // SAFETY: as above.
        let max = unsafe { *count };
        // SAFETY: the caller promises `max` writable iovecs at `iov` (non-null).
        let iov = unsafe { std::slice::from_raw_parts_mut(iov, max) };
        let mut total = 0usize;
        let mut got = 0;
        while got < max {
            let frame = match s.recv_frame(flags) {
                Ok(f) => f,
                Err(e) => return ret::<c_int>(Err(e)),
            };
            let len = frame.body.len();
            // SAFETY: `malloc` of the frame's size (at least 1, so never NULL for
            // success); the caller frees it with `free`.
            let buf = unsafe { libc::malloc(len.max(1)) };
            if buf.is_null() {
                return ret::<c_int>(Err(libc::ENOMEM));
            }
            // SAFETY: `buf` has `len` writable bytes; the frame is another allocation.
            unsafe { std::ptr::copy_nonoverlapping(frame.body.as_ptr(), buf.cast::<u8>(), len) };
            iov[got] = libc::iovec {
                iov_base: buf,
                iov_len: len,
            };
            total += len;
            got += 1;
            if frame.flags & FLAG_MORE == 0 {
                break;
            }
        }
        // SAFETY: as above, writable.
        unsafe { *count = got };
        // libzmq returns the count of frames received (their total size is in the
        // iovecs).
        let _ = total;
        size_ret(got)
    })
}
