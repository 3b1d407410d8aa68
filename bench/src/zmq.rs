//! The few libzmq calls the benchmark makes, with a small safe wrapper.
//!
//! Unlike a test binding, this one is shaped for speed: messages are sent straight from a
//! caller's buffer (`zmq_send`) and received into one reused `zmq_msg_t`
//! (`zmq_msg_recv`), which is how libzmq's own `local_thr`/`remote_thr` tools move them.
//! Every constant was checked against `zmq.h` of libzmq 4.3.

use std::ffi::{c_int, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;

/// Socket type `ZMQ_PUB`.
pub const PUB: c_int = 1;
/// Socket type `ZMQ_SUB`.
pub const SUB: c_int = 2;
/// Socket type `ZMQ_REQ`.
pub const REQ: c_int = 3;
/// Socket type `ZMQ_REP`.
pub const REP: c_int = 4;
/// Socket type `ZMQ_PULL`.
pub const PULL: c_int = 7;
/// Socket type `ZMQ_PUSH`.
pub const PUSH: c_int = 8;

/// Option `ZMQ_SUBSCRIBE` (bytes: a topic prefix).
pub const SUBSCRIBE: c_int = 6;
/// Option `ZMQ_LINGER` (int, milliseconds; -1 waits forever).
pub const LINGER: c_int = 17;
/// Option `ZMQ_SNDHWM` (int, messages; 0 = no limit).
pub const SNDHWM: c_int = 23;
/// Option `ZMQ_RCVHWM` (int, messages; 0 = no limit).
pub const RCVHWM: c_int = 24;
/// Option `ZMQ_LAST_ENDPOINT` (string, read-only).
const LAST_ENDPOINT: c_int = 32;

/// Send/receive flag `ZMQ_DONTWAIT`.
pub const DONTWAIT: c_int = 1;

/// The raw C API; each declaration follows its prototype in `zmq.h`.
mod sys {
    use std::ffi::{c_char, c_int, c_void};

    /// `zmq_msg_t`: 64 opaque bytes, aligned to at least a pointer.
    #[repr(C, align(8))]
    pub struct ZmqMsg {
        pub opaque: [u8; 64],
    }

    unsafe extern "C" {
        pub fn zmq_errno() -> c_int;
        pub fn zmq_strerror(errnum: c_int) -> *const c_char;
        pub fn zmq_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
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
        pub fn zmq_msg_init(msg: *mut ZmqMsg) -> c_int;
        pub fn zmq_msg_recv(msg: *mut ZmqMsg, s: *mut c_void, flags: c_int) -> c_int;
        pub fn zmq_msg_send(msg: *mut ZmqMsg, s: *mut c_void, flags: c_int) -> c_int;
        pub fn zmq_msg_data(msg: *mut ZmqMsg) -> *mut c_void;
        pub fn zmq_msg_size(msg: *const ZmqMsg) -> usize;
        pub fn zmq_msg_more(msg: *const ZmqMsg) -> c_int;
        pub fn zmq_msg_close(msg: *mut ZmqMsg) -> c_int;
    }
}

/// A failed libzmq call: `zmq_errno()` read right after it.
#[derive(Debug, Clone, Copy)]
pub struct Error(c_int);

impl Error {
    fn last() -> Error {
        // SAFETY: `zmq_errno` takes no arguments and only reads this thread's errno.
        Error(unsafe { sys::zmq_errno() })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: `zmq_strerror` accepts any int and returns a pointer to a static,
        // NUL-terminated string.
        let text = unsafe { CStr::from_ptr(sys::zmq_strerror(self.0)) };
        write!(f, "libzmq: {} (errno {})", text.to_string_lossy(), self.0)
    }
}

impl std::error::Error for Error {}

fn check(rc: c_int) -> Result<c_int, Error> {
    if rc < 0 {
        Err(Error::last())
    } else {
        Ok(rc)
    }
}

/// The linked libzmq's version, e.g. `4.3.4`.
pub fn version() -> String {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: the three pointers are valid, distinct, writable `c_int`s for the call.
    unsafe { sys::zmq_version(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

/// A context (`zmq_ctx_new`) with its I/O thread, terminated on drop.
#[derive(Debug)]
pub struct Ctx {
    raw: *mut c_void,
}

impl Ctx {
    /// A new context.
    pub fn new() -> Result<Ctx, Error> {
        // SAFETY: no arguments; a null result is checked.
        let raw = unsafe { sys::zmq_ctx_new() };
        if raw.is_null() {
            return Err(Error::last());
        }
        Ok(Ctx { raw })
    }

    /// A new socket of type `kind` (`PUSH`, `PULL`, ...).
    pub fn socket(&self, kind: c_int) -> Result<Sock<'_>, Error> {
        // SAFETY: `self.raw` is a live context: it is terminated only on drop, and the
        // socket returned borrows `self`, so it is closed first.
        let raw = unsafe { sys::zmq_socket(self.raw, kind) };
        if raw.is_null() {
            return Err(Error::last());
        }
        Ok(Sock {
            raw,
            _ctx: PhantomData,
        })
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        loop {
            // SAFETY: `self.raw` came from `zmq_ctx_new` and every socket of it (each
            // borrows the context) is closed; retried only on EINTR, as libzmq allows.
            let rc = unsafe { sys::zmq_ctx_term(self.raw) };
            if rc == 0 || Error::last().0 != 4 {
                break;
            }
        }
    }
}

/// A socket (`zmq_socket`), closed on drop. Not `Send`: libzmq sockets are single-threaded.
#[derive(Debug)]
pub struct Sock<'ctx> {
    raw: *mut c_void,
    _ctx: PhantomData<&'ctx Ctx>,
}

impl Sock<'_> {
    /// Set an `int` option (`LINGER`, `SNDHWM`, ...).
    pub fn set_int(&self, option: c_int, value: c_int) -> Result<(), Error> {
        // SAFETY: `self.raw` is a live socket; the value points to a local `c_int` that
        // outlives the call, and its exact size is passed.
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

    /// Set a binary option (`SUBSCRIBE`).
    pub fn set_bytes(&self, option: c_int, value: &[u8]) -> Result<(), Error> {
        // SAFETY: `self.raw` is a live socket; `value` is valid for its length during the
        // call and libzmq copies it.
        check(unsafe {
            sys::zmq_setsockopt(self.raw, option, value.as_ptr().cast(), value.len())
        })?;
        Ok(())
    }

    /// The endpoint last bound, resolved (`ZMQ_LAST_ENDPOINT`).
    pub fn last_endpoint(&self) -> Result<String, Error> {
        let mut buf = [0u8; 1024];
        let mut len = buf.len();
        // SAFETY: `self.raw` is a live socket; `buf` is writable for `len` bytes, which
        // libzmq respects, and it stores the length used back into `len`.
        check(unsafe {
            sys::zmq_getsockopt(self.raw, LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len)
        })?;
        let text = &buf[..len.min(buf.len())];
        let text = text.strip_suffix(&[0]).unwrap_or(text);
        Ok(String::from_utf8_lossy(text).into_owned())
    }

    /// Bind to `endpoint`.
    pub fn bind(&self, endpoint: &str) -> Result<(), Error> {
        let c = CString::new(endpoint).map_err(|_| Error(22))?;
        // SAFETY: `self.raw` is a live socket; `c` is NUL-terminated and outlives the call.
        check(unsafe { sys::zmq_bind(self.raw, c.as_ptr()) })?;
        Ok(())
    }

    /// Connect to `endpoint` (in the background).
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        let c = CString::new(endpoint).map_err(|_| Error(22))?;
        // SAFETY: `self.raw` is a live socket; `c` is NUL-terminated and outlives the call.
        check(unsafe { sys::zmq_connect(self.raw, c.as_ptr()) })?;
        Ok(())
    }

    /// Send `data` as a one-frame message (libzmq copies it into a message of its own).
    pub fn send(&self, data: &[u8], flags: c_int) -> Result<(), Error> {
        // SAFETY: `self.raw` is a live socket; `data` is valid for `data.len()` bytes for
        // the whole call, and libzmq copies them before returning.
        check(unsafe { sys::zmq_send(self.raw, data.as_ptr().cast(), data.len(), flags) })?;
        Ok(())
    }

    /// Receive the next frame into `msg`, replacing what it held.
    pub fn recv_msg(&self, msg: &mut Msg) -> Result<(), Error> {
        // SAFETY: `self.raw` is a live socket and `msg.raw` an initialised message, which
        // libzmq releases before storing the new frame in it.
        check(unsafe { sys::zmq_msg_recv(&mut *msg.raw, self.raw, 0) })?;
        Ok(())
    }

    /// Send the frame held by `msg`; libzmq takes its content and leaves `msg` empty.
    pub fn send_msg(&self, msg: &mut Msg) -> Result<(), Error> {
        // SAFETY: `self.raw` is a live socket and `msg.raw` an initialised message; on
        // success libzmq owns the content and re-initialises `msg` as empty, on failure
        // `msg` is left unchanged (and still ours to close).
        check(unsafe { sys::zmq_msg_send(&mut *msg.raw, self.raw, 0) })?;
        Ok(())
    }
}

impl Drop for Sock<'_> {
    fn drop(&mut self) {
        // SAFETY: `self.raw` came from `zmq_socket` and is closed once, on the thread that
        // used it (the type is neither `Send` nor `Sync`).
        unsafe { sys::zmq_close(self.raw) };
    }
}

/// One `zmq_msg_t`, kept on the heap so that it never moves once initialised.
pub struct Msg {
    raw: Box<sys::ZmqMsg>,
}

impl Msg {
    /// An empty message.
    pub fn new() -> Msg {
        let mut raw = Box::new(sys::ZmqMsg { opaque: [0; 64] });
        // SAFETY: `raw` is a properly sized and aligned `zmq_msg_t` that stays at this
        // heap address until `zmq_msg_close` in `Drop`. `zmq_msg_init` cannot fail.
        unsafe { sys::zmq_msg_init(&mut *raw) };
        Msg { raw }
    }

    /// The body of the frame held.
    pub fn data(&mut self) -> &[u8] {
        // SAFETY: `self.raw` is initialised, so size and data describe its body.
        let size = unsafe { sys::zmq_msg_size(&*self.raw) };
        if size == 0 {
            return &[];
        }
        // SAFETY: for a non-empty message `zmq_msg_data` points to `size` readable bytes
        // owned by the message, which stays unchanged while `self` is borrowed.
        unsafe { std::slice::from_raw_parts(sys::zmq_msg_data(&mut *self.raw).cast(), size) }
    }

    /// Whether more frames of the same message follow.
    pub fn more(&self) -> bool {
        // SAFETY: `self.raw` is initialised.
        unsafe { sys::zmq_msg_more(&*self.raw) != 0 }
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        // SAFETY: `self.raw` was initialised in `new` and is released exactly once.
        unsafe { sys::zmq_msg_close(&mut *self.raw) };
    }
}
