//! libzmq's error numbers, the thread's `errno`, and what each driver error becomes.

use std::ffi::{c_char, c_int};

use zmtp_mio::{Error, SendError};

/// The base of libzmq's own error numbers (`ZMQ_HAUSNUMERO`).
pub const HAUSNUMERO: c_int = 156_384_712;
/// The operation cannot be done in the socket's current state (`EFSM`).
pub const EFSM: c_int = HAUSNUMERO + 51;
/// The protocol is not compatible with the socket type (`ENOCOMPATPROTO`).
pub const ENOCOMPATPROTO: c_int = HAUSNUMERO + 52;
/// The context was terminated (`ETERM`).
pub const ETERM: c_int = HAUSNUMERO + 53;
/// No I/O thread is available (`EMTHREAD`).
pub const EMTHREAD: c_int = HAUSNUMERO + 54;

/// A failed call's error number, as libzmq's calls return it in `errno`.
pub(crate) type Errno = c_int;

/// Set the calling thread's `errno`, as libzmq does on every failure.
pub(crate) fn set_errno(e: Errno) {
    // SAFETY: `__errno_location` returns the calling thread's `errno`, valid for the
    // thread's life and written only by this thread.
    unsafe { *libc::__errno_location() = e }
}

/// The calling thread's `errno`.
pub(crate) fn errno() -> Errno {
    // SAFETY: as in `set_errno`; reading the thread's own `errno`.
    unsafe { *libc::__errno_location() }
}

/// The errno of a driver error, on a socket whose context is `terminated` or not.
pub(crate) fn errno_of(e: &Error, terminated: bool) -> Errno {
    match e {
        Error::Closed if terminated => ETERM,
        Error::Closed => libc::ENOTSOCK,
        Error::Timeout => libc::EAGAIN,
        Error::Unsupported => libc::ENOTSUP,
        Error::NotFound => libc::ENOENT,
        Error::Endpoint(e) => endpoint_errno(e),
        Error::Options(_) | Error::Group(_) | Error::Metadata(_) => libc::EINVAL,
        Error::Send(e) => send_errno(e, terminated),
        Error::Io(io) | Error::Bind { source: io, .. } => io_errno(io),
        _ => libc::EINVAL,
    }
}

/// The errno of a refused send.
pub(crate) fn send_errno(e: &SendError, terminated: bool) -> Errno {
    match e {
        SendError::WouldBlock(_) => libc::EAGAIN,
        SendError::HostUnreachable(_) | SendError::RoutingIdRequired(_) => libc::EHOSTUNREACH,
        SendError::InvalidState(_) => EFSM,
        SendError::NotSupported(_) => libc::ENOTSUP,
        SendError::Closed(_) if terminated => ETERM,
        SendError::Closed(_) => libc::ENOTSOCK,
        SendError::SingleFrameOnly(_) => libc::EINVAL,
        SendError::Datagram(..) => libc::EMSGSIZE,
        _ => libc::EINVAL,
    }
}

/// The errno of a malformed endpoint: libzmq says `EPROTONOSUPPORT` for a transport it
/// does not know and `EINVAL` for an address it cannot parse.
fn endpoint_errno(e: &zmtp_mio::EndpointError) -> Errno {
    match e {
        zmtp_mio::EndpointError::UnknownTransport(_) => libc::EPROTONOSUPPORT,
        _ => libc::EINVAL,
    }
}

/// The errno of an operating system error: its own number, or the nearest libzmq one.
fn io_errno(e: &std::io::Error) -> Errno {
    if let Some(code) = e.raw_os_error() {
        return code;
    }
    use std::io::ErrorKind as K;
    match e.kind() {
        K::AddrInUse => libc::EADDRINUSE,
        K::AddrNotAvailable => libc::EADDRNOTAVAIL,
        K::NotFound => libc::ENOENT,
        K::PermissionDenied => libc::EACCES,
        K::ConnectionRefused => libc::ECONNREFUSED,
        K::TimedOut => libc::ETIMEDOUT,
        K::WouldBlock => libc::EAGAIN,
        K::Unsupported => libc::ENOTSUP,
        _ => libc::EINVAL,
    }
}

/// `zmq_errno`: the calling thread's `errno` (for environments where C's `errno` is not
/// the one the library sets).
#[no_mangle]
pub extern "C" fn zmq_errno() -> c_int {
    errno()
}

/// `zmq_strerror`: the text of an error number, libzmq's own for its numbers and the C
/// library's for the others. The text is static and must not be freed.
#[no_mangle]
pub extern "C" fn zmq_strerror(errnum: c_int) -> *const c_char {
    let own: &'static [u8] = match errnum {
        EFSM => b"Operation cannot be accomplished in current state\0",
        ENOCOMPATPROTO => b"The protocol is not compatible with the socket type\0",
        ETERM => b"Context was terminated\0",
        EMTHREAD => b"No thread available\0",
        _ => {
            // SAFETY: `strerror` returns a pointer to a NUL-terminated text owned by the
            // C library, for any number ("Unknown error N" when it knows none).
            return unsafe { libc::strerror(errnum) };
        }
    };
    own.as_ptr().cast()
}
