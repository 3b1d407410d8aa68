//! A minimal hand-written binding to libzmq, with a small safe wrapper.
//!
//! Only what the interop tests and the benchmark need: contexts, sockets, options,
//! bind/connect and multipart send/receive. Every constant below was checked against `zmq.h`
//! of libzmq 4.3.
//!
//! The declarations name no library (no `#[link]`): each executable that uses this module
//! chooses which libzmq answers them. This package's own tests, the benchmark and the
//! `zmtp` command's tests link the system libzmq (4.3.4) from their build scripts;
//! `zmtp-conformance-draft` links a static draft-enabled 4.3.5 and builds its draft calls on
//! [`ZSocket::as_raw`] and [`Msg::as_raw`].
//!
//! Besides the convenient multipart calls, which copy every frame into a `Vec`, there is a
//! path shaped for speed, the way libzmq's own `local_thr`/`remote_thr` tools move
//! messages: [`ZSocket::send`] sends straight from the caller's buffer (`zmq_send`), and
//! [`ZSocket::recv_msg`] receives into one reused [`Msg`] (`zmq_msg_recv`) whose body is
//! read in place.
//!
//! Ownership is enforced by lifetimes: a [`ZSocket`] borrows its [`Ctx`], so every socket is
//! closed before its context is terminated (otherwise `zmq_ctx_term` would block forever).
//! libzmq sockets are not thread-safe; [`ZSocket`] holds a raw pointer and is therefore
//! neither `Send` nor `Sync`.

use std::ffi::{c_int, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Socket type `ZMQ_PAIR`.
pub const ZMQ_PAIR: c_int = 0;
/// Socket type `ZMQ_PUB`.
pub const ZMQ_PUB: c_int = 1;
/// Socket type `ZMQ_SUB`.
pub const ZMQ_SUB: c_int = 2;
/// Socket type `ZMQ_REQ`.
pub const ZMQ_REQ: c_int = 3;
/// Socket type `ZMQ_REP`.
pub const ZMQ_REP: c_int = 4;
/// Socket type `ZMQ_DEALER`.
pub const ZMQ_DEALER: c_int = 5;
/// Socket type `ZMQ_ROUTER`.
pub const ZMQ_ROUTER: c_int = 6;
/// Socket type `ZMQ_PULL`.
pub const ZMQ_PULL: c_int = 7;
/// Socket type `ZMQ_PUSH`.
pub const ZMQ_PUSH: c_int = 8;
/// Socket type `ZMQ_XPUB`.
pub const ZMQ_XPUB: c_int = 9;
/// Socket type `ZMQ_XSUB`.
pub const ZMQ_XSUB: c_int = 10;
/// Socket type `ZMQ_STREAM` (raw TCP).
pub const ZMQ_STREAM: c_int = 11;

/// Option `ZMQ_ROUTING_ID` (bytes, at most 255).
pub const ZMQ_ROUTING_ID: c_int = 5;
/// Option `ZMQ_SUBSCRIBE` (bytes: the topic prefix).
pub const ZMQ_SUBSCRIBE: c_int = 6;
/// Option `ZMQ_UNSUBSCRIBE` (bytes: the topic prefix to drop).
pub const ZMQ_UNSUBSCRIBE: c_int = 7;
/// Option `ZMQ_RCVMORE` (int, read-only: more frames of the current message follow).
pub const ZMQ_RCVMORE: c_int = 13;
/// Option `ZMQ_RECONNECT_IVL` (int, milliseconds before reconnecting).
pub const ZMQ_RECONNECT_IVL: c_int = 18;
/// Option `ZMQ_LINGER` (int, milliseconds).
pub const ZMQ_LINGER: c_int = 17;
/// Option `ZMQ_SNDHWM` (int, messages queued for sending; 0 = no limit).
pub const ZMQ_SNDHWM: c_int = 23;
/// Option `ZMQ_RCVHWM` (int, messages queued for receiving; 0 = no limit).
pub const ZMQ_RCVHWM: c_int = 24;
/// Option `ZMQ_RCVTIMEO` (int, milliseconds; -1 blocks forever).
pub const ZMQ_RCVTIMEO: c_int = 27;
/// Option `ZMQ_SNDTIMEO` (int, milliseconds; -1 blocks forever).
pub const ZMQ_SNDTIMEO: c_int = 28;
/// Option `ZMQ_LAST_ENDPOINT` (string, read-only: the endpoint last bound or connected).
pub const ZMQ_LAST_ENDPOINT: c_int = 32;
/// Option `ZMQ_IPV6` (int: 1 lets the socket take IPv6 addresses).
pub const ZMQ_IPV6: c_int = 42;
/// Option `ZMQ_PLAIN_SERVER` (int: 1 makes the socket a PLAIN server).
pub const ZMQ_PLAIN_SERVER: c_int = 44;
/// Option `ZMQ_PLAIN_USERNAME` (string: makes the socket a PLAIN client).
pub const ZMQ_PLAIN_USERNAME: c_int = 45;
/// Option `ZMQ_PLAIN_PASSWORD` (string: makes the socket a PLAIN client).
pub const ZMQ_PLAIN_PASSWORD: c_int = 46;
/// Option `ZMQ_CURVE_SERVER` (int: 1 makes the socket a CURVE server).
pub const ZMQ_CURVE_SERVER: c_int = 47;
/// Option `ZMQ_CURVE_PUBLICKEY` (32 bytes, or 40 Z85 characters: our long-term public key).
pub const ZMQ_CURVE_PUBLICKEY: c_int = 48;
/// Option `ZMQ_CURVE_SECRETKEY` (32 bytes, or 40 Z85 characters: our long-term secret key).
pub const ZMQ_CURVE_SECRETKEY: c_int = 49;
/// Option `ZMQ_CURVE_SERVERKEY` (32 bytes, or 40 Z85 characters: the server's public key;
/// makes the socket a CURVE client).
pub const ZMQ_CURVE_SERVERKEY: c_int = 50;
/// Option `ZMQ_ZAP_DOMAIN` (string: the domain sent in ZAP requests).
pub const ZMQ_ZAP_DOMAIN: c_int = 55;
/// Option `ZMQ_CONNECT_ROUTING_ID` (bytes: the routing id given to the peer of the next
/// `zmq_connect`, ROUTER only).
pub const ZMQ_CONNECT_ROUTING_ID: c_int = 61;
/// Option `ZMQ_STREAM_NOTIFY` (int, STREAM: announce connections coming and going).
pub const ZMQ_STREAM_NOTIFY: c_int = 73;
/// Option `ZMQ_INVERT_MATCHING` (int, boolean).
pub const ZMQ_INVERT_MATCHING: c_int = 74;
/// Option `ZMQ_HEARTBEAT_IVL` (int, milliseconds between PINGs).
pub const ZMQ_HEARTBEAT_IVL: c_int = 75;
/// Option `ZMQ_HEARTBEAT_TTL` (int, milliseconds announced in PINGs, sent in deciseconds).
pub const ZMQ_HEARTBEAT_TTL: c_int = 76;
/// Option `ZMQ_HEARTBEAT_TIMEOUT` (int, milliseconds of silence after a PING before closing).
pub const ZMQ_HEARTBEAT_TIMEOUT: c_int = 77;

/// Option `ZMQ_HANDSHAKE_IVL` (int, milliseconds allowed for the handshake; 0 = no limit).
pub const ZMQ_HANDSHAKE_IVL: c_int = 66;

/// Option `ZMQ_METADATA`: an application property, "X-name:value", sent in the handshake.
pub const ZMQ_METADATA: c_int = 95;

/// Monitor event `ZMQ_EVENT_CONNECTED`: a connection was opened (value: the file descriptor).
pub const ZMQ_EVENT_CONNECTED: u16 = 0x0001;
/// Monitor event `ZMQ_EVENT_CONNECT_DELAYED`: a connect is pending (value: the error).
pub const ZMQ_EVENT_CONNECT_DELAYED: u16 = 0x0002;
/// Monitor event `ZMQ_EVENT_CONNECT_RETRIED`: a reconnect is scheduled (value: the interval).
pub const ZMQ_EVENT_CONNECT_RETRIED: u16 = 0x0004;
/// Monitor event `ZMQ_EVENT_LISTENING`: bound (value: the file descriptor).
pub const ZMQ_EVENT_LISTENING: u16 = 0x0008;
/// Monitor event `ZMQ_EVENT_BIND_FAILED` (value: errno).
pub const ZMQ_EVENT_BIND_FAILED: u16 = 0x0010;
/// Monitor event `ZMQ_EVENT_ACCEPTED`: a connection was accepted (value: the file descriptor).
pub const ZMQ_EVENT_ACCEPTED: u16 = 0x0020;
/// Monitor event `ZMQ_EVENT_ACCEPT_FAILED` (value: errno).
pub const ZMQ_EVENT_ACCEPT_FAILED: u16 = 0x0040;
/// Monitor event `ZMQ_EVENT_CLOSED`: a connection's descriptor was closed.
pub const ZMQ_EVENT_CLOSED: u16 = 0x0080;
/// Monitor event `ZMQ_EVENT_CLOSE_FAILED` (value: errno).
pub const ZMQ_EVENT_CLOSE_FAILED: u16 = 0x0100;
/// Monitor event `ZMQ_EVENT_DISCONNECTED`: a session ended (value: the file descriptor).
pub const ZMQ_EVENT_DISCONNECTED: u16 = 0x0200;
/// Monitor event `ZMQ_EVENT_MONITOR_STOPPED`: the last event of a monitor.
pub const ZMQ_EVENT_MONITOR_STOPPED: u16 = 0x0400;
/// Monitor event `ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL` (value: errno).
pub const ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
/// Monitor event `ZMQ_EVENT_HANDSHAKE_SUCCEEDED`.
pub const ZMQ_EVENT_HANDSHAKE_SUCCEEDED: u16 = 0x1000;
/// Monitor event `ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL` (value: a `ZMQ_PROTOCOL_ERROR_*`).
pub const ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: u16 = 0x2000;
/// Monitor event `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH` (value: the ZAP status code, e.g. 400).
pub const ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: u16 = 0x4000;
/// Every monitor event of the v1 format (`ZMQ_EVENT_ALL`).
pub const ZMQ_EVENT_ALL: c_int = 0xFFFF;

/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_UNSPECIFIED`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_UNSPECIFIED: u32 = 0x1000_0000;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND: u32 = 0x1000_0001;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE: u32 = 0x1000_0002;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE: u32 = 0x1000_0003;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_UNSPECIFIED`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_UNSPECIFIED: u32 = 0x1000_0011;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_WELCOME`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_WELCOME: u32 = 0x1000_0017;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC: u32 = 0x1100_0001;
/// Protocol error `ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH`.
pub const ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH: u32 = 0x1100_0002;

/// Error `ETERM` (`ZMQ_HAUSNUMERO + 53`): the context was terminated.
pub const ETERM: c_int = 156_384_712 + 53;

/// Error `EFSM` (`ZMQ_HAUSNUMERO + 51`): the operation is not allowed in the socket's
/// current state, e.g. a second REQ send before the reply.
pub const EFSM: c_int = 156_384_712 + 51;

/// Send/receive flag `ZMQ_DONTWAIT`.
pub const ZMQ_DONTWAIT: c_int = 1;
/// Send flag `ZMQ_SNDMORE`.
pub const ZMQ_SNDMORE: c_int = 2;

/// The raw C API. Declarations follow `zmq.h` exactly.
mod sys {
    use std::ffi::{c_char, c_int, c_void};

    /// `zmq_msg_t`: 64 opaque bytes, aligned to at least a pointer.
    #[repr(C, align(8))]
    pub struct ZmqMsg {
        pub _opaque: [u8; 64],
    }

    // Each declaration matches the prototype in `zmq.h` (libzmq 4.3): `void *` handles,
    // `int` options and flags, `size_t` lengths. Calling them is still `unsafe`; every call
    // site states why its arguments are valid.
    unsafe extern "C" {
        pub fn zmq_errno() -> c_int;
        pub fn zmq_strerror(errnum: c_int) -> *const c_char;
        pub fn zmq_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
        pub fn zmq_has(capability: *const c_char) -> c_int;

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
        pub fn zmq_proxy_steerable(
            frontend: *mut c_void,
            backend: *mut c_void,
            capture: *mut c_void,
            control: *mut c_void,
        ) -> c_int;

        pub fn zmq_msg_init(msg: *mut ZmqMsg) -> c_int;
        pub fn zmq_msg_init_size(msg: *mut ZmqMsg, size: usize) -> c_int;
        pub fn zmq_msg_recv(msg: *mut ZmqMsg, s: *mut c_void, flags: c_int) -> c_int;
        pub fn zmq_msg_send(msg: *mut ZmqMsg, s: *mut c_void, flags: c_int) -> c_int;
        pub fn zmq_msg_data(msg: *mut ZmqMsg) -> *mut c_void;
        pub fn zmq_msg_size(msg: *const ZmqMsg) -> usize;
        pub fn zmq_msg_more(msg: *const ZmqMsg) -> c_int;
        pub fn zmq_msg_close(msg: *mut ZmqMsg) -> c_int;
        pub fn zmq_msg_gets(msg: *const ZmqMsg, property: *const c_char) -> *const c_char;
    }
}

/// A failed libzmq call: the `zmq_errno()` value read right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZmqError {
    /// The errno value.
    pub errno: c_int,
}

impl ZmqError {
    /// The error of the last failed libzmq call on this thread (`zmq_errno`). Read it right
    /// after the call that failed: any later libzmq call may change it.
    pub fn last() -> ZmqError {
        // SAFETY: `zmq_errno` takes no arguments and only reads the thread-local errno.
        let errno = unsafe { sys::zmq_errno() };
        ZmqError { errno }
    }

    /// Whether this is `EAGAIN`: nothing to receive (or no room to send) before the timeout.
    pub fn is_again(&self) -> bool {
        std::io::Error::from_raw_os_error(self.errno).kind() == std::io::ErrorKind::WouldBlock
    }

    /// Whether this is `EFSM`: not allowed in the socket's current state.
    pub fn is_efsm(&self) -> bool {
        self.errno == EFSM
    }

    /// Whether this is `ETERM`: the context is being terminated.
    pub fn is_term(&self) -> bool {
        self.errno == ETERM
    }

    /// Whether this is `EINTR`: the call was interrupted by a signal.
    pub fn is_interrupted(&self) -> bool {
        std::io::Error::from_raw_os_error(self.errno).kind() == std::io::ErrorKind::Interrupted
    }
}

impl fmt::Display for ZmqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: `zmq_strerror` accepts any int and returns a pointer to a static,
        // NUL-terminated string (libzmq's own table or the C library's `strerror`).
        let text = unsafe { CStr::from_ptr(sys::zmq_strerror(self.errno)) };
        write!(f, "{} (errno {})", text.to_string_lossy(), self.errno)
    }
}

impl std::error::Error for ZmqError {}

/// Turn a libzmq `int` return value into a result: a negative value (libzmq returns `-1`)
/// is the failure [`ZmqError::last`] describes, anything else is returned as it is.
pub fn check(rc: c_int) -> Result<c_int, ZmqError> {
    if rc < 0 {
        Err(ZmqError::last())
    } else {
        Ok(rc)
    }
}

/// The linked libzmq's version as `(major, minor, patch)`.
pub fn version() -> (i32, i32, i32) {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: the three pointers are valid, distinct, writable `c_int`s for the call.
    unsafe { sys::zmq_version(&mut major, &mut minor, &mut patch) };
    (major, minor, patch)
}

/// Whether the linked libzmq has `capability` (`zmq_has`): a transport such as `"ipc"` or
/// `"WS"`, a mechanism such as `"curve"`, or `"draft"` for the draft API.
///
/// # Panics
/// If `capability` contains a NUL byte.
pub fn has(capability: &str) -> bool {
    let c = CString::new(capability).expect("capability without NUL bytes");
    // SAFETY: `c` is a NUL-terminated string that outlives the call; `zmq_has` only reads it.
    unsafe { sys::zmq_has(c.as_ptr()) == 1 }
}

/// A libzmq context (`zmq_ctx_new`), terminated on drop.
#[derive(Debug)]
pub struct Ctx {
    raw: *mut c_void,
}

impl Ctx {
    /// A new context with its own I/O thread.
    ///
    /// # Panics
    /// If libzmq cannot create a context.
    pub fn new() -> Ctx {
        Ctx::try_new().unwrap_or_else(|e| panic!("zmq_ctx_new failed: {e}"))
    }

    /// A new context with its own I/O thread, or the error if libzmq cannot create one.
    pub fn try_new() -> Result<Ctx, ZmqError> {
        // SAFETY: `zmq_ctx_new` takes no arguments; a null result is checked below.
        let raw = unsafe { sys::zmq_ctx_new() };
        if raw.is_null() {
            return Err(ZmqError::last());
        }
        Ok(Ctx { raw })
    }

    /// A new socket of libzmq type `kind` (`ZMQ_PAIR`, ...), with `ZMQ_LINGER` set to 0 so
    /// that closing it never waits for unsent messages.
    pub fn socket(&self, kind: c_int) -> Result<ZSocket<'_>, ZmqError> {
        // SAFETY: `self.raw` is a live context (it is only terminated in `Drop`, and the
        // returned socket borrows `self`); a null result is checked below.
        let raw = unsafe { sys::zmq_socket(self.raw, kind) };
        if raw.is_null() {
            return Err(ZmqError::last());
        }
        let socket = ZSocket {
            raw,
            _ctx: PhantomData,
        };
        socket.set_int(ZMQ_LINGER, 0)?;
        Ok(socket)
    }
}

// SAFETY: a libzmq context is thread-safe ("A ØMQ context is thread safe and may be shared
// among as many application threads as necessary", zmq_ctx_new(3)): creating sockets from
// several threads and terminating it from any thread are allowed. Sockets, which are not
// thread-safe, borrow the context and are neither `Send` nor `Sync`.
unsafe impl Send for Ctx {}
// SAFETY: see the `Send` implementation above; `&Ctx` only allows `zmq_socket` calls.
unsafe impl Sync for Ctx {}

impl Default for Ctx {
    fn default() -> Ctx {
        Ctx::new()
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        loop {
            // SAFETY: `self.raw` came from `zmq_ctx_new` and is terminated exactly once here.
            // Every socket borrowed the context and so has been closed already, which means
            // this call does not block. It is retried only when interrupted (EINTR), which
            // libzmq documents as safe.
            let rc = unsafe { sys::zmq_ctx_term(self.raw) };
            if rc == 0 || !ZmqError::last().is_interrupted() {
                break;
            }
        }
    }
}

/// A libzmq socket (`zmq_socket`), closed on drop.
#[derive(Debug)]
pub struct ZSocket<'ctx> {
    raw: *mut c_void,
    _ctx: PhantomData<&'ctx Ctx>,
}

/// libzmq's `zmq_proxy_steerable` (with no `control`, `zmq_proxy`): blocks the calling
/// thread, which must own the sockets, until a `TERMINATE` on `control` (`Ok`) or the
/// context's end (an error).
pub fn zmq_proxy(
    frontend: &ZSocket<'_>,
    backend: &ZSocket<'_>,
    capture: Option<&ZSocket<'_>>,
    control: Option<&ZSocket<'_>>,
) -> Result<(), ZmqError> {
    let raw = |s: Option<&ZSocket<'_>>| s.map_or(std::ptr::null_mut(), |s| s.raw);
    // SAFETY: every handle is a live socket of the caller's (borrowed for the call) or
    // null, which libzmq takes as "none" for capture and control.
    check(unsafe {
        sys::zmq_proxy_steerable(frontend.raw, backend.raw, raw(capture), raw(control))
    })?;
    Ok(())
}

impl ZSocket<'_> {
    /// The socket handle (`void *`) for a libzmq call this wrapper does not offer, such as
    /// the draft API's `zmq_join`. The handle stays valid while `self` lives; it must not be
    /// closed, nor used from another thread unless the socket type is thread-safe.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw
    }

    /// Set an `int` option (`ZMQ_LINGER`, `ZMQ_RCVTIMEO`, `ZMQ_HEARTBEAT_IVL`, ...).
    pub fn set_int(&self, option: c_int, value: c_int) -> Result<(), ZmqError> {
        // SAFETY: `self.raw` is a live socket; the value pointer refers to a local `c_int`
        // that outlives the call and the length passed is exactly its size.
        check(unsafe {
            sys::zmq_setsockopt(
                self.raw,
                option,
                (&value as *const c_int).cast(),
                size_of::<c_int>(),
            )
        })?;
        Ok(())
    }

    /// Set a binary option (`ZMQ_SUBSCRIBE`, `ZMQ_ROUTING_ID`, ...).
    pub fn set_bytes(&self, option: c_int, value: &[u8]) -> Result<(), ZmqError> {
        // SAFETY: `self.raw` is a live socket; `value` is a valid slice for the call and its
        // exact length is passed (libzmq copies the bytes and never reads past the length).
        check(unsafe {
            sys::zmq_setsockopt(self.raw, option, value.as_ptr().cast(), value.len())
        })?;
        Ok(())
    }

    /// Read an `int` option (`ZMQ_RCVMORE`, `ZMQ_LINGER`, ...).
    pub fn get_int(&self, option: c_int) -> Result<c_int, ZmqError> {
        let mut value: c_int = 0;
        let mut len = size_of::<c_int>();
        // SAFETY: `self.raw` is a live socket; `value` and `len` are valid, writable locals
        // and `len` holds the capacity of `value` in bytes, which libzmq respects.
        check(unsafe {
            sys::zmq_getsockopt(
                self.raw,
                option,
                (&mut value as *mut c_int).cast(),
                &mut len,
            )
        })?;
        Ok(value)
    }

    /// Read a binary or string option (`ZMQ_LAST_ENDPOINT`, ...), at most 1 KiB. A
    /// trailing NUL, as libzmq writes after strings, is removed.
    pub fn get_bytes(&self, option: c_int) -> Result<Vec<u8>, ZmqError> {
        let mut buf = vec![0u8; 1024];
        let mut len = buf.len();
        // SAFETY: `self.raw` is a live socket; `buf` is writable for `len` bytes and libzmq
        // writes at most `len` bytes, then stores the length it used in `len`.
        check(unsafe { sys::zmq_getsockopt(self.raw, option, buf.as_mut_ptr().cast(), &mut len) })?;
        buf.truncate(len);
        if buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(buf)
    }

    /// Subscribe a SUB socket to `topic` (`ZMQ_SUBSCRIBE`).
    pub fn subscribe(&self, topic: &[u8]) -> Result<(), ZmqError> {
        self.set_bytes(ZMQ_SUBSCRIBE, topic)
    }

    /// Drop a SUB socket's subscription to `topic` (`ZMQ_UNSUBSCRIBE`).
    pub fn unsubscribe(&self, topic: &[u8]) -> Result<(), ZmqError> {
        self.set_bytes(ZMQ_UNSUBSCRIBE, topic)
    }

    /// The endpoint last bound, e.g. `tcp://127.0.0.1:41234` (`ZMQ_LAST_ENDPOINT`).
    pub fn last_endpoint(&self) -> Result<String, ZmqError> {
        let bytes = self.get_bytes(ZMQ_LAST_ENDPOINT)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Bind to `endpoint`, e.g. `tcp://127.0.0.1:*`.
    ///
    /// # Panics
    /// If `endpoint` contains a NUL byte.
    pub fn bind(&self, endpoint: &str) -> Result<(), ZmqError> {
        let c = CString::new(endpoint).expect("endpoint without NUL bytes");
        // SAFETY: `self.raw` is a live socket and `c` is a NUL-terminated string that
        // outlives the call (libzmq copies it).
        check(unsafe { sys::zmq_bind(self.raw, c.as_ptr()) })?;
        Ok(())
    }

    /// Connect to `endpoint`, e.g. `tcp://127.0.0.1:41234`. libzmq connects in the
    /// background and reconnects on failure.
    ///
    /// # Panics
    /// If `endpoint` contains a NUL byte.
    pub fn connect(&self, endpoint: &str) -> Result<(), ZmqError> {
        let c = CString::new(endpoint).expect("endpoint without NUL bytes");
        // SAFETY: `self.raw` is a live socket and `c` is a NUL-terminated string that
        // outlives the call (libzmq copies it).
        check(unsafe { sys::zmq_connect(self.raw, c.as_ptr()) })?;
        Ok(())
    }

    /// Set a string option (`ZMQ_PLAIN_USERNAME`, `ZMQ_ZAP_DOMAIN`, ...): the bytes without
    /// a terminating NUL, as libzmq expects with an explicit length.
    pub fn set_str(&self, option: c_int, value: &str) -> Result<(), ZmqError> {
        self.set_bytes(option, value.as_bytes())
    }

    /// Start publishing this socket's monitor events (`zmq_socket_monitor`) on a fresh
    /// `inproc` endpoint of `ctx` (which must be the socket's own context), and return the
    /// PAIR socket that reads them. Events raised before this call are not reported, so
    /// call it before `bind`/`connect`.
    pub fn monitor<'c>(&self, ctx: &'c Ctx, events: c_int) -> Result<Monitor<'c>, ZmqError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let endpoint = format!(
            "inproc://zmtp-conformance-monitor-{}-{n}",
            std::process::id()
        );
        let c = CString::new(endpoint.as_str()).expect("endpoint without NUL bytes");
        // SAFETY: `self.raw` is a live socket and `c` a NUL-terminated string that outlives
        // the call (libzmq copies it and binds its own PAIR socket to it).
        check(unsafe { sys::zmq_socket_monitor(self.raw, c.as_ptr(), events) })?;
        let pair = ctx.socket(ZMQ_PAIR)?;
        pair.connect(&endpoint)?;
        Ok(Monitor {
            pair,
            seen: Vec::new(),
        })
    }

    /// Send one message made of `frames` (at least one). Blocks up to `ZMQ_SNDTIMEO`.
    ///
    /// # Panics
    /// If `frames` is empty.
    pub fn send_multipart(&self, frames: &[&[u8]]) -> Result<(), ZmqError> {
        self.send_message(frames, 0)
    }

    /// Send one message made of `frames` (at least one) if the socket can take it now;
    /// `EAGAIN` otherwise (nothing was sent then). Once the first frame is taken, libzmq
    /// takes the others too (high-water marks count whole messages).
    ///
    /// # Panics
    /// If `frames` is empty.
    pub fn try_send_multipart(&self, frames: &[&[u8]]) -> Result<(), ZmqError> {
        self.send_message(frames, ZMQ_DONTWAIT)
    }

    fn send_message(&self, frames: &[&[u8]], base_flags: c_int) -> Result<(), ZmqError> {
        assert!(!frames.is_empty(), "a message has at least one frame");
        for (i, frame) in frames.iter().enumerate() {
            let more = if i + 1 < frames.len() { ZMQ_SNDMORE } else { 0 };
            self.send(frame, base_flags | more)?;
        }
        Ok(())
    }

    /// Send `data` as one frame, straight from the caller's buffer (`zmq_send`: libzmq
    /// copies it into a message of its own; nothing is allocated here). `flags` combines
    /// `ZMQ_DONTWAIT` (`EAGAIN` instead of waiting) and `ZMQ_SNDMORE` (more frames of the
    /// same message follow). Without `ZMQ_DONTWAIT`, blocks up to `ZMQ_SNDTIMEO`.
    #[inline]
    pub fn send(&self, data: &[u8], flags: c_int) -> Result<(), ZmqError> {
        // SAFETY: `self.raw` is a live socket; `data` is valid for `data.len()` bytes during
        // the call (libzmq copies them into its own message before returning).
        check(unsafe { sys::zmq_send(self.raw, data.as_ptr().cast(), data.len(), flags) })?;
        Ok(())
    }

    /// Send the frame held by `msg` (`zmq_msg_send`); `flags` as for [`ZSocket::send`].
    /// On success libzmq takes over the body and leaves `msg` empty, ready for reuse; on
    /// failure `msg` is unchanged.
    #[inline]
    pub fn send_msg(&self, msg: &mut Msg, flags: c_int) -> Result<(), ZmqError> {
        // SAFETY: `self.raw` is a live socket and `msg.raw` an initialised message; on
        // success libzmq owns the body and re-initialises `msg` as empty, on failure it
        // leaves `msg` as it was (still initialised, and closed by its `Drop`).
        check(unsafe { sys::zmq_msg_send(&mut *msg.raw, self.raw, flags) })?;
        Ok(())
    }

    /// Receive the next frame into `msg`, releasing what it held (`zmq_msg_recv`). Blocks up
    /// to `ZMQ_RCVTIMEO` (`EAGAIN` on timeout). Nothing is allocated here: read the body in
    /// place with [`Msg::data`], and [`Msg::more`] for whether more frames follow.
    #[inline]
    pub fn recv_msg(&self, msg: &mut Msg) -> Result<(), ZmqError> {
        self.recv_into(msg, 0)
    }

    #[inline]
    fn recv_into(&self, msg: &mut Msg, flags: c_int) -> Result<(), ZmqError> {
        // SAFETY: `self.raw` is a live socket and `msg.raw` an initialised message; libzmq
        // releases its previous content before storing the new frame in it, and on failure
        // leaves it initialised (empty), so it remains valid for reuse and for `Drop`.
        check(unsafe { sys::zmq_msg_recv(&mut *msg.raw, self.raw, flags) })?;
        Ok(())
    }

    /// Receive one whole message, blocking up to `ZMQ_RCVTIMEO` (`EAGAIN` on timeout).
    pub fn recv_multipart(&self) -> Result<Vec<Vec<u8>>, ZmqError> {
        self.recv_message(0)
    }

    /// Receive one whole message if one is ready now; `EAGAIN` otherwise.
    pub fn try_recv_multipart(&self) -> Result<Vec<Vec<u8>>, ZmqError> {
        self.recv_message(ZMQ_DONTWAIT)
    }

    fn recv_message(&self, flags: c_int) -> Result<Vec<Vec<u8>>, ZmqError> {
        let mut frames = Vec::new();
        let mut msg = Msg::new();
        loop {
            // Messages are atomic in libzmq: once the first frame arrived, the others are
            // already queued, so only the first one waits (or not, with ZMQ_DONTWAIT).
            let first_flags = if frames.is_empty() { flags } else { 0 };
            self.recv_into(&mut msg, first_flags)?;
            frames.push(msg.data().to_vec());
            if !msg.more() {
                return Ok(frames);
            }
        }
    }
}

impl Drop for ZSocket<'_> {
    fn drop(&mut self) {
        // SAFETY: `self.raw` came from `zmq_socket` and is closed exactly once, here, on the
        // thread that used it (the type is neither `Send` nor `Sync`).
        unsafe { sys::zmq_close(self.raw) };
    }
}

/// One libzmq message frame (`zmq_msg_t`), initialised empty, closed on drop, and meant to
/// be reused: [`ZSocket::recv_msg`] fills it, [`ZSocket::send_msg`] empties it.
///
/// The `zmq_msg_t` lives on the heap (one allocation per `Msg`, none per frame) so that it
/// never moves once initialised.
pub struct Msg {
    raw: Box<sys::ZmqMsg>,
}

impl Msg {
    /// An empty message (`zmq_msg_init`).
    pub fn new() -> Msg {
        let mut raw = Box::new(sys::ZmqMsg { _opaque: [0; 64] });
        // SAFETY: `raw` is a properly sized and aligned `zmq_msg_t` that stays at this heap
        // address until `zmq_msg_close` in `Drop`.
        let rc = unsafe { sys::zmq_msg_init(&mut *raw) };
        // `zmq_msg_init` only marks the message empty; it cannot fail.
        debug_assert_eq!(rc, 0, "zmq_msg_init failed");
        Msg { raw }
    }

    /// A message holding a copy of `data` (`zmq_msg_init_size`), ready to send with
    /// [`ZSocket::send_msg`].
    ///
    /// # Panics
    /// If libzmq cannot allocate the body.
    pub fn with_data(data: &[u8]) -> Msg {
        let mut raw = Box::new(sys::ZmqMsg { _opaque: [0; 64] });
        // SAFETY: as in `new`: `raw` is a properly sized and aligned `zmq_msg_t` that stays
        // at this heap address until `zmq_msg_close` in `Drop`.
        let rc = unsafe { sys::zmq_msg_init_size(&mut *raw, data.len()) };
        if let Err(e) = check(rc) {
            panic!("zmq_msg_init_size({}) failed: {e}", data.len());
        }
        let mut msg = Msg { raw };
        if !data.is_empty() {
            // SAFETY: the message was initialised with a body of exactly `data.len()` bytes,
            // owned by the message and writable; `data` cannot overlap it (libzmq allocated
            // it just now).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr(),
                    sys::zmq_msg_data(&mut *msg.raw).cast::<u8>(),
                    data.len(),
                )
            };
        }
        msg
    }

    /// The `zmq_msg_t` itself, for a libzmq call this wrapper does not offer, such as the
    /// draft API's `zmq_msg_set_routing_id` or `zmq_msg_group`. The pointer stays valid
    /// while `self` lives (the message sits on the heap and never moves); the message must
    /// stay initialised (never pass it to
    /// `zmq_msg_close` or an init function).
    pub fn as_raw(&mut self) -> *mut c_void {
        (&mut *self.raw as *mut sys::ZmqMsg).cast()
    }

    /// The size of the body in bytes (`zmq_msg_size`).
    #[inline]
    pub fn size(&self) -> usize {
        // SAFETY: `self.raw` is initialised (from `new` until `Drop`); libzmq only reads it.
        unsafe { sys::zmq_msg_size(&*self.raw) }
    }

    /// The body (`zmq_msg_data`), borrowed in place. It takes `&mut self` because
    /// `zmq_msg_data` takes a mutable pointer.
    #[inline]
    pub fn data(&mut self) -> &[u8] {
        let size = self.size();
        if size == 0 {
            return &[];
        }
        // SAFETY: `self.raw` is initialised; for a non-empty message `zmq_msg_data` points
        // to `size` readable bytes owned by the message, which stays alive and unchanged
        // while the returned slice borrows `self`.
        unsafe { std::slice::from_raw_parts(sys::zmq_msg_data(&mut *self.raw).cast(), size) }
    }

    /// A property of the peer that sent this frame (`zmq_msg_gets`): `Socket-Type`,
    /// `Peer-Address`, an application's `X-` property; `None` when it has no such one.
    pub fn gets(&self, name: &str) -> Option<String> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: `self.raw` is initialised; `name` is NUL-terminated and outlives the call.
        let value = unsafe { sys::zmq_msg_gets(&*self.raw, name.as_ptr()) };
        if value.is_null() {
            return None;
        }
        // SAFETY: non-null: a NUL-terminated string owned by the message, read at once.
        Some(
            unsafe { std::ffi::CStr::from_ptr(value) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// Whether more frames of the same message follow this one (`zmq_msg_more`).
    #[inline]
    pub fn more(&self) -> bool {
        // SAFETY: `self.raw` is initialised (from `new` until `Drop`); libzmq only reads it.
        unsafe { sys::zmq_msg_more(&*self.raw) != 0 }
    }
}

impl Default for Msg {
    fn default() -> Msg {
        Msg::new()
    }
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Msg")
            .field("size", &self.size())
            .field("more", &self.more())
            .finish()
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        // SAFETY: `self.raw` was initialised in `new` and is released exactly once, here.
        unsafe { sys::zmq_msg_close(&mut *self.raw) };
    }
}

/// One monitor event (the v1 format: `u16` event and `u32` value, both native-endian, then
/// the endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorEvent {
    /// The event, one of the `ZMQ_EVENT_*` constants.
    pub event: u16,
    /// The event's value (a file descriptor, an errno, a protocol error or a ZAP status).
    pub value: u32,
    /// The endpoint the event concerns.
    pub endpoint: String,
}

impl MonitorEvent {
    /// Parse the two frames of a v1 monitor message; `None` if malformed.
    pub fn parse(frames: &[Vec<u8>]) -> Option<MonitorEvent> {
        let [head, endpoint] = frames else {
            return None;
        };
        let head: &[u8; 6] = head.as_slice().try_into().ok()?;
        Some(MonitorEvent {
            event: u16::from_ne_bytes([head[0], head[1]]),
            value: u32::from_ne_bytes([head[2], head[3], head[4], head[5]]),
            endpoint: String::from_utf8_lossy(endpoint).into_owned(),
        })
    }

    /// The event's name without its `ZMQ_EVENT_` prefix, for messages.
    pub fn name(&self) -> &'static str {
        match self.event {
            ZMQ_EVENT_CONNECTED => "CONNECTED",
            ZMQ_EVENT_CONNECT_DELAYED => "CONNECT_DELAYED",
            ZMQ_EVENT_CONNECT_RETRIED => "CONNECT_RETRIED",
            ZMQ_EVENT_LISTENING => "LISTENING",
            ZMQ_EVENT_BIND_FAILED => "BIND_FAILED",
            ZMQ_EVENT_ACCEPTED => "ACCEPTED",
            ZMQ_EVENT_ACCEPT_FAILED => "ACCEPT_FAILED",
            ZMQ_EVENT_CLOSED => "CLOSED",
            ZMQ_EVENT_CLOSE_FAILED => "CLOSE_FAILED",
            ZMQ_EVENT_DISCONNECTED => "DISCONNECTED",
            ZMQ_EVENT_MONITOR_STOPPED => "MONITOR_STOPPED",
            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL => "HANDSHAKE_FAILED_NO_DETAIL",
            ZMQ_EVENT_HANDSHAKE_SUCCEEDED => "HANDSHAKE_SUCCEEDED",
            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL => "HANDSHAKE_FAILED_PROTOCOL",
            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH => "HANDSHAKE_FAILED_AUTH",
            _ => "unknown",
        }
    }
}

impl fmt::Display for MonitorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (0x{:04x}) value {} (0x{:08x}) on {}",
            self.name(),
            self.event,
            self.value,
            self.value,
            self.endpoint
        )
    }
}

/// The reading end of a socket monitor ([`ZSocket::monitor`]): a PAIR socket receiving the
/// monitored socket's events. Keeps every event it read.
#[derive(Debug)]
pub struct Monitor<'ctx> {
    pair: ZSocket<'ctx>,
    seen: Vec<MonitorEvent>,
}

impl Monitor<'_> {
    /// Read every event available now (no waiting); returns how many were read.
    pub fn poll(&mut self) -> usize {
        let mut n = 0;
        while let Ok(frames) = self.pair.try_recv_multipart() {
            if let Some(e) = MonitorEvent::parse(&frames) {
                self.seen.push(e);
                n += 1;
            }
        }
        n
    }

    /// Every event read so far, oldest first.
    pub fn events(&self) -> &[MonitorEvent] {
        &self.seen
    }

    /// Wait at most `timeout` for an event (read now or earlier) matching `pred`; returns
    /// the first such event, or `None` if none came.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&MonitorEvent) -> bool,
    ) -> Option<MonitorEvent> {
        let deadline = Instant::now() + timeout;
        loop {
            self.poll();
            if let Some(e) = self.seen.iter().find(|e| pred(e)) {
                return Some(e.clone());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Wait at most `timeout` for an event of kind `event` (a `ZMQ_EVENT_*` constant).
    pub fn wait_event(&mut self, event: u16, timeout: Duration) -> Option<MonitorEvent> {
        self.wait_for(timeout, |e| e.event == event)
    }
}

/// Parse the TCP port from an endpoint such as `tcp://127.0.0.1:41234`.
pub fn endpoint_port(endpoint: &str) -> Option<u16> {
    endpoint.rsplit(':').next()?.parse().ok()
}
