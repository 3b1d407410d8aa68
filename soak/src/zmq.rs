//! The two implementations the scenarios run against, behind one small blocking API:
//! ours ([`zmtp_mio`], the blocking driver) and libzmq (through a minimal FFI of its own).
//!
//! A [`Zmq`] is one context of an implementation; its [`Sock`]s are used by one thread at
//! a time (libzmq's rule), and are closed before the context ends.

use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A failure, described.
pub type Res<T> = Result<T, String>;

/// The socket types the scenarios use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PUSH.
    Push,
    /// PULL.
    Pull,
    /// PUB.
    Pub,
    /// SUB.
    Sub,
    /// REQ.
    Req,
    /// ROUTER.
    Router,
}

/// The options the scenarios set; `None` leaves the implementation's default.
#[derive(Debug, Clone, Default)]
pub struct Opts {
    /// ZMQ_LINGER (`Some(None)`: forever).
    pub linger: Option<Option<Duration>>,
    /// ZMQ_HEARTBEAT_IVL and ZMQ_HEARTBEAT_TIMEOUT.
    pub heartbeat: Option<(Duration, Duration)>,
    /// ZMQ_RECONNECT_IVL.
    pub reconnect_ivl: Option<Duration>,
    /// ZMQ_SNDHWM.
    pub sndhwm: Option<usize>,
    /// ZMQ_RCVHWM.
    pub rcvhwm: Option<usize>,
}

/// What a socket monitor reported, as far as the scenarios care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A handshake completed.
    HandshakeSucceeded,
    /// A connection was lost.
    Disconnected,
    /// Anything else.
    Other,
}

/// A context of one implementation.
pub trait Zmq: Send + Sync {
    /// A new socket of this context.
    fn socket(&self, kind: Kind, opts: &Opts) -> Res<Box<dyn Sock>>;
}

/// A socket of a [`Zmq`], used by one thread at a time.
pub trait Sock: Send {
    /// Bind; returns the endpoint bound (the port resolved).
    fn bind(&mut self, endpoint: &str) -> Res<String>;
    /// Connect.
    fn connect(&mut self, endpoint: &str) -> Res<()>;
    /// Subscribe a SUB to `topic`.
    fn subscribe(&mut self, topic: &[u8]) -> Res<()>;
    /// Send one message of `frames`, waiting at most `timeout` (`None`: forever). `Ok(false)`:
    /// the time ran out and the message was not queued.
    fn send(&mut self, frames: &[&[u8]], timeout: Option<Duration>) -> Res<bool>;
    /// Receive one message, waiting at most `timeout`; `Ok(None)` if none came.
    fn recv(&mut self, timeout: Duration) -> Res<Option<Vec<Vec<u8>>>>;
    /// Start monitoring: the socket's events from now on, each with the time it was seen.
    fn monitor(&mut self) -> Res<mpsc::Receiver<(Instant, Event)>>;
    /// Close the socket. Ours waits here for LINGER; libzmq lingers in the background (its
    /// context's end waits).
    fn close(self: Box<Self>);
}

/// A new context of implementation `name` ("ours" or "libzmq").
pub fn new_impl(name: &str) -> Res<Arc<dyn Zmq>> {
    match name {
        "ours" => Ok(Arc::new(Ours {
            ctx: zmtp_mio::Context::new().map_err(|e| e.to_string())?,
        })),
        "libzmq" => Ok(Arc::new(Libzmq {
            ctx: Arc::new(LibCtx::new()?),
        })),
        other => Err(format!("unknown implementation {other}")),
    }
}

// ---------------------------------------------------------------------------------------
// Ours.

/// Our blocking driver: one [`zmtp_mio::Context`].
pub struct Ours {
    ctx: zmtp_mio::Context,
}

struct OurSock {
    socket: zmtp_mio::Socket,
}

impl Zmq for Ours {
    fn socket(&self, kind: Kind, opts: &Opts) -> Res<Box<dyn Sock>> {
        use zmtp_mio::SocketType as T;
        let ty = match kind {
            Kind::Push => T::Push,
            Kind::Pull => T::Pull,
            Kind::Pub => T::Pub,
            Kind::Sub => T::Sub,
            Kind::Req => T::Req,
            Kind::Router => T::Router,
        };
        let mut o = zmtp_mio::Options::default();
        if let Some(l) = opts.linger {
            o = o.with_linger(l);
        }
        if let Some((ivl, timeout)) = opts.heartbeat {
            o = o
                .with_heartbeat_ivl(Some(ivl))
                .with_heartbeat_timeout(Some(timeout));
        }
        if let Some(r) = opts.reconnect_ivl {
            o = o.with_reconnect_ivl(Some(r));
        }
        if let Some(h) = opts.sndhwm {
            o = o.with_sndhwm(h);
        }
        if let Some(h) = opts.rcvhwm {
            o = o.with_rcvhwm(h);
        }
        let socket = self.ctx.socket_with(ty, o).map_err(|e| e.to_string())?;
        Ok(Box::new(OurSock { socket }))
    }
}

impl Sock for OurSock {
    fn bind(&mut self, endpoint: &str) -> Res<String> {
        self.socket.bind(endpoint).map_err(|e| e.to_string())
    }

    fn connect(&mut self, endpoint: &str) -> Res<()> {
        self.socket.connect(endpoint).map_err(|e| e.to_string())
    }

    fn subscribe(&mut self, topic: &[u8]) -> Res<()> {
        self.socket.subscribe(topic).map_err(|e| e.to_string())
    }

    fn send(&mut self, frames: &[&[u8]], timeout: Option<Duration>) -> Res<bool> {
        match self.socket.send_timeout(frames, timeout) {
            Ok(_) => Ok(true),
            Err(zmtp_mio::Error::Timeout) => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }

    fn recv(&mut self, timeout: Duration) -> Res<Option<Vec<Vec<u8>>>> {
        match self.socket.recv_timeout(Some(timeout)) {
            Ok(m) => Ok(Some(m.frames().iter().map(|f| f.to_vec()).collect())),
            Err(zmtp_mio::Error::Timeout) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    fn monitor(&mut self) -> Res<mpsc::Receiver<(Instant, Event)>> {
        use zmtp_mio::MonitorEventKind as K;
        let events = self.socket.monitor();
        let (tx, rx) = mpsc::channel();
        // Stamps each event as it comes; ends when the socket is gone.
        std::thread::spawn(move || {
            while let Ok(e) = events.recv() {
                let event = match e.kind {
                    K::HandshakeSucceeded => Event::HandshakeSucceeded,
                    K::Disconnected => Event::Disconnected,
                    _ => Event::Other,
                };
                if tx.send((Instant::now(), event)).is_err() {
                    return;
                }
            }
        });
        Ok(rx)
    }

    fn close(self: Box<Self>) {
        self.socket.close();
    }
}

// ---------------------------------------------------------------------------------------
// libzmq.

#[allow(non_camel_case_types)]
mod sys {
    use std::ffi::{c_char, c_int, c_void};

    /// `zmq_msg_t`: 64 bytes, aligned for a pointer.
    #[repr(C, align(8))]
    pub struct zmq_msg_t(pub [u8; 64]);

    pub const ZMQ_PAIR: c_int = 0;
    pub const ZMQ_PUB: c_int = 1;
    pub const ZMQ_SUB: c_int = 2;
    pub const ZMQ_REQ: c_int = 3;
    pub const ZMQ_ROUTER: c_int = 6;
    pub const ZMQ_PULL: c_int = 7;
    pub const ZMQ_PUSH: c_int = 8;

    pub const ZMQ_SUBSCRIBE: c_int = 6;
    pub const ZMQ_LINGER: c_int = 17;
    pub const ZMQ_RECONNECT_IVL: c_int = 18;
    pub const ZMQ_SNDHWM: c_int = 23;
    pub const ZMQ_RCVHWM: c_int = 24;
    pub const ZMQ_RCVTIMEO: c_int = 27;
    pub const ZMQ_SNDTIMEO: c_int = 28;
    pub const ZMQ_LAST_ENDPOINT: c_int = 32;
    pub const ZMQ_HEARTBEAT_IVL: c_int = 75;
    pub const ZMQ_HEARTBEAT_TIMEOUT: c_int = 77;
    pub const ZMQ_SNDMORE: c_int = 2;

    pub const ZMQ_EVENT_DISCONNECTED: u16 = 0x0200;
    pub const ZMQ_EVENT_MONITOR_STOPPED: u16 = 0x0400;
    pub const ZMQ_EVENT_HANDSHAKE_SUCCEEDED: u16 = 0x1000;
    pub const ZMQ_EVENT_ALL: c_int = 0xFFFF;

    // SAFETY (for callers): each declaration matches its prototype in libzmq 4.3's `zmq.h`;
    // every call site states why its arguments are valid.
    #[link(name = "zmq")]
    unsafe extern "C" {
        pub fn zmq_errno() -> c_int;
        pub fn zmq_strerror(errnum: c_int) -> *const c_char;
        pub fn zmq_ctx_new() -> *mut c_void;
        pub fn zmq_ctx_term(context: *mut c_void) -> c_int;
        pub fn zmq_socket(context: *mut c_void, type_: c_int) -> *mut c_void;
        pub fn zmq_close(s: *mut c_void) -> c_int;
        pub fn zmq_setsockopt(
            s: *mut c_void,
            option: c_int,
            optval: *const c_void,
            optvallen: usize,
        ) -> c_int;
        pub fn zmq_getsockopt(
            s: *mut c_void,
            option: c_int,
            optval: *mut c_void,
            optvallen: *mut usize,
        ) -> c_int;
        pub fn zmq_bind(s: *mut c_void, addr: *const c_char) -> c_int;
        pub fn zmq_connect(s: *mut c_void, addr: *const c_char) -> c_int;
        pub fn zmq_send(s: *mut c_void, buf: *const c_void, len: usize, flags: c_int) -> c_int;
        pub fn zmq_socket_monitor(s: *mut c_void, addr: *const c_char, events: c_int) -> c_int;
        pub fn zmq_msg_init(msg: *mut zmq_msg_t) -> c_int;
        pub fn zmq_msg_recv(msg: *mut zmq_msg_t, s: *mut c_void, flags: c_int) -> c_int;
        pub fn zmq_msg_data(msg: *mut zmq_msg_t) -> *mut c_void;
        pub fn zmq_msg_size(msg: *const zmq_msg_t) -> usize;
        pub fn zmq_msg_more(msg: *const zmq_msg_t) -> c_int;
        pub fn zmq_msg_close(msg: *mut zmq_msg_t) -> c_int;
    }
}

/// The last libzmq error on this thread, described.
fn last_error(what: &str) -> String {
    // SAFETY: `zmq_errno` takes no arguments and reads the thread's errno.
    let errno = unsafe { sys::zmq_errno() };
    // SAFETY: `zmq_strerror` accepts any int and returns a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(sys::zmq_strerror(errno)) };
    format!("{what}: {} (errno {errno})", text.to_string_lossy())
}

/// EAGAIN: a timeout ran out.
fn errno_is_again() -> bool {
    // SAFETY: as in `last_error`.
    let errno = unsafe { sys::zmq_errno() };
    errno == libc::EAGAIN
}

/// A libzmq context, terminated when the last handle (its sockets hold one) goes.
struct LibCtx {
    raw: *mut c_void,
}

// SAFETY: a libzmq context is thread-safe (zmq_socket and zmq_ctx_term may be called from
// any thread).
unsafe impl Send for LibCtx {}
// SAFETY: as above.
unsafe impl Sync for LibCtx {}

impl LibCtx {
    fn new() -> Res<LibCtx> {
        // SAFETY: no arguments; returns a new context or null.
        let raw = unsafe { sys::zmq_ctx_new() };
        if raw.is_null() {
            return Err(last_error("zmq_ctx_new"));
        }
        Ok(LibCtx { raw })
    }
}

impl Drop for LibCtx {
    fn drop(&mut self) {
        // SAFETY: `raw` is our live context; every socket of it holds an `Arc` to this,
        // so all are closed by now; term waits for their linger.
        unsafe { sys::zmq_ctx_term(self.raw) };
    }
}

/// libzmq: one context.
pub struct Libzmq {
    ctx: Arc<LibCtx>,
}

struct LibSock {
    ctx: Arc<LibCtx>,
    raw: *mut c_void,
    /// The RCVTIMEO last set, to set it only when it changes (-2: never set).
    rcvtimeo: c_int,
    sndtimeo: c_int,
    /// Told to the monitor thread when this socket closes.
    closed: Option<Arc<AtomicBool>>,
}

// SAFETY: a libzmq socket may move between threads when a full memory barrier separates
// their uses: the `Sock` API is `&mut self`, so one thread at a time, and handing a `Box`
// to another thread goes through a synchronising channel or spawn.
unsafe impl Send for LibSock {}

impl Zmq for Libzmq {
    fn socket(&self, kind: Kind, opts: &Opts) -> Res<Box<dyn Sock>> {
        let ty = match kind {
            Kind::Push => sys::ZMQ_PUSH,
            Kind::Pull => sys::ZMQ_PULL,
            Kind::Pub => sys::ZMQ_PUB,
            Kind::Sub => sys::ZMQ_SUB,
            Kind::Req => sys::ZMQ_REQ,
            Kind::Router => sys::ZMQ_ROUTER,
        };
        let mut s = LibSock::open(self.ctx.clone(), ty)?;
        let ms = |d: Duration| d.as_millis() as c_int;
        if let Some(l) = opts.linger {
            s.set_int(sys::ZMQ_LINGER, l.map_or(-1, ms))?;
        }
        if let Some((ivl, timeout)) = opts.heartbeat {
            s.set_int(sys::ZMQ_HEARTBEAT_IVL, ms(ivl))?;
            s.set_int(sys::ZMQ_HEARTBEAT_TIMEOUT, ms(timeout))?;
        }
        if let Some(r) = opts.reconnect_ivl {
            s.set_int(sys::ZMQ_RECONNECT_IVL, ms(r))?;
        }
        if let Some(h) = opts.sndhwm {
            s.set_int(sys::ZMQ_SNDHWM, h as c_int)?;
        }
        if let Some(h) = opts.rcvhwm {
            s.set_int(sys::ZMQ_RCVHWM, h as c_int)?;
        }
        Ok(Box::new(s))
    }
}

impl LibSock {
    fn open(ctx: Arc<LibCtx>, ty: c_int) -> Res<LibSock> {
        // SAFETY: `ctx.raw` is a live context (the `Arc` keeps it), `ty` a socket type.
        let raw = unsafe { sys::zmq_socket(ctx.raw, ty) };
        if raw.is_null() {
            return Err(last_error("zmq_socket"));
        }
        Ok(LibSock {
            ctx,
            raw,
            rcvtimeo: -2,
            sndtimeo: -2,
            closed: None,
        })
    }

    fn set_bytes(&mut self, option: c_int, value: &[u8]) -> Res<()> {
        // SAFETY: `raw` is our open socket; the pointer and length describe `value`.
        let rc =
            unsafe { sys::zmq_setsockopt(self.raw, option, value.as_ptr().cast(), value.len()) };
        if rc != 0 {
            return Err(last_error("zmq_setsockopt"));
        }
        Ok(())
    }

    fn set_int(&mut self, option: c_int, value: c_int) -> Res<()> {
        self.set_bytes(option, &value.to_ne_bytes())
    }

    fn set_timeouts(&mut self, rcv: Option<c_int>, snd: Option<c_int>) -> Res<()> {
        if let Some(r) = rcv.filter(|&r| r != self.rcvtimeo) {
            self.set_int(sys::ZMQ_RCVTIMEO, r)?;
            self.rcvtimeo = r;
        }
        if let Some(s) = snd.filter(|&s| s != self.sndtimeo) {
            self.set_int(sys::ZMQ_SNDTIMEO, s)?;
            self.sndtimeo = s;
        }
        Ok(())
    }

    /// One message, all its frames; `Ok(None)` on EAGAIN before its first frame.
    fn recv_frames(&mut self) -> Res<Option<Vec<Vec<u8>>>> {
        let mut frames = Vec::new();
        loop {
            let mut msg = sys::zmq_msg_t([0; 64]);
            // SAFETY: `msg` is a writable zmq_msg_t; init makes it an empty message.
            unsafe { sys::zmq_msg_init(&mut msg) };
            // SAFETY: `msg` is initialised; `raw` is our open socket.
            let rc = unsafe { sys::zmq_msg_recv(&mut msg, self.raw, 0) };
            if rc < 0 {
                let again = frames.is_empty() && errno_is_again();
                let err = last_error("zmq_msg_recv");
                // SAFETY: `msg` is initialised and closed once.
                unsafe { sys::zmq_msg_close(&mut msg) };
                return if again { Ok(None) } else { Err(err) };
            }
            // SAFETY: after a successful receive, data/size describe the frame's bytes,
            // valid until the message is closed below.
            let frame = unsafe {
                let data = sys::zmq_msg_data(&mut msg).cast::<u8>();
                let len = sys::zmq_msg_size(&msg);
                if len == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(data, len).to_vec()
                }
            };
            // SAFETY: `msg` holds a received frame.
            let more = unsafe { sys::zmq_msg_more(&msg) } != 0;
            // SAFETY: `msg` is initialised and closed once.
            unsafe { sys::zmq_msg_close(&mut msg) };
            frames.push(frame);
            if !more {
                return Ok(Some(frames));
            }
        }
    }
}

static MONITORS: AtomicU64 = AtomicU64::new(0);

impl Sock for LibSock {
    fn bind(&mut self, endpoint: &str) -> Res<String> {
        let c = CString::new(endpoint).map_err(|e| e.to_string())?;
        // SAFETY: `raw` is our open socket, `c` a NUL-terminated string.
        if unsafe { sys::zmq_bind(self.raw, c.as_ptr()) } != 0 {
            return Err(last_error(&format!("zmq_bind {endpoint}")));
        }
        let mut buf = [0u8; 256];
        let mut len = buf.len();
        // SAFETY: `buf` is writable for `len` bytes; libzmq writes a NUL-terminated string.
        let rc = unsafe {
            sys::zmq_getsockopt(
                self.raw,
                sys::ZMQ_LAST_ENDPOINT,
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(last_error("zmq_getsockopt"));
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(len);
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    fn connect(&mut self, endpoint: &str) -> Res<()> {
        let c = CString::new(endpoint).map_err(|e| e.to_string())?;
        // SAFETY: `raw` is our open socket, `c` a NUL-terminated string.
        if unsafe { sys::zmq_connect(self.raw, c.as_ptr()) } != 0 {
            return Err(last_error(&format!("zmq_connect {endpoint}")));
        }
        Ok(())
    }

    fn subscribe(&mut self, topic: &[u8]) -> Res<()> {
        self.set_bytes(sys::ZMQ_SUBSCRIBE, topic)
    }

    fn send(&mut self, frames: &[&[u8]], timeout: Option<Duration>) -> Res<bool> {
        let t = timeout.map_or(-1, |d| d.as_millis() as c_int);
        self.set_timeouts(None, Some(t))?;
        for (i, f) in frames.iter().enumerate() {
            let flags = if i + 1 < frames.len() {
                sys::ZMQ_SNDMORE
            } else {
                0
            };
            // SAFETY: `raw` is our open socket; the pointer and length describe `f`.
            let rc = unsafe { sys::zmq_send(self.raw, f.as_ptr().cast(), f.len(), flags) };
            if rc < 0 {
                // The frames of a multipart message after the first never block.
                if i == 0 && errno_is_again() {
                    return Ok(false);
                }
                return Err(last_error("zmq_send"));
            }
        }
        Ok(true)
    }

    fn recv(&mut self, timeout: Duration) -> Res<Option<Vec<Vec<u8>>>> {
        self.set_timeouts(Some(timeout.as_millis() as c_int), None)?;
        self.recv_frames()
    }

    fn monitor(&mut self) -> Res<mpsc::Receiver<(Instant, Event)>> {
        let n = MONITORS.fetch_add(1, Ordering::SeqCst);
        let addr = format!("inproc://soak-monitor-{n}");
        let c = CString::new(addr.clone()).map_err(|e| e.to_string())?;
        // SAFETY: `raw` is our open socket, `c` a NUL-terminated string.
        let rc = unsafe { sys::zmq_socket_monitor(self.raw, c.as_ptr(), sys::ZMQ_EVENT_ALL) };
        if rc != 0 {
            return Err(last_error("zmq_socket_monitor"));
        }
        let mut pair = LibSock::open(self.ctx.clone(), sys::ZMQ_PAIR)?;
        pair.connect(&addr)?;
        let closed = Arc::new(AtomicBool::new(false));
        self.closed = Some(closed.clone());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Until MONITOR_STOPPED, or a while after the socket closed.
            while !closed.load(Ordering::SeqCst) {
                let frames = match pair.recv(Duration::from_millis(100)) {
                    Ok(Some(f)) => f,
                    Ok(None) => continue,
                    Err(_) => break,
                };
                let Some(first) = frames.first().filter(|f| f.len() >= 2) else {
                    continue;
                };
                let event = u16::from_ne_bytes([first[0], first[1]]);
                let kind = match event {
                    sys::ZMQ_EVENT_HANDSHAKE_SUCCEEDED => Event::HandshakeSucceeded,
                    sys::ZMQ_EVENT_DISCONNECTED => Event::Disconnected,
                    sys::ZMQ_EVENT_MONITOR_STOPPED => break,
                    _ => Event::Other,
                };
                let _ = tx.send((Instant::now(), kind));
            }
            Box::new(pair).close();
        });
        Ok(rx)
    }

    fn close(self: Box<Self>) {
        drop(self);
    }
}

impl Drop for LibSock {
    fn drop(&mut self) {
        // SAFETY: `raw` is our open socket, closed once, here.
        unsafe { sys::zmq_close(self.raw) };
        if let Some(c) = &self.closed {
            c.store(true, Ordering::SeqCst);
        }
    }
}
