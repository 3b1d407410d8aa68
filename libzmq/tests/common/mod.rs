//! Helpers the C API's test files share: the last errno, int options, binding where the
//! system chooses, whether a message from a new PAIR reaches a socket, and the frames of a
//! message (a monitor's events).
// Each test file is a crate of its own and uses some of these.
#![allow(dead_code)]

use std::ffi::{c_int, c_void, CStr, CString};

use zmq::msg::*;
use zmq::options::*;
use zmq::socket::*;

/// `zmq_errno`.
pub fn errno() -> c_int {
    zmq::error::zmq_errno()
}

/// Set an int option; a refusal fails the test with its errno.
pub fn set_int(s: *mut c_void, option: c_int, value: c_int) {
    let rc = unsafe { zmq_setsockopt(s, option, (&value as *const c_int).cast(), 4) };
    assert_eq!(rc, 0, "setsockopt {option}: errno {}", errno());
}

/// Read an int option; a refusal fails the test with its errno.
pub fn get_int(s: *mut c_void, option: c_int) -> c_int {
    let mut v: c_int = -7;
    let mut len = std::mem::size_of::<c_int>();
    let rc = unsafe { zmq_getsockopt(s, option, (&mut v as *mut c_int).cast(), &mut len) };
    assert_eq!(rc, 0, "getsockopt {option}: errno {}", errno());
    v
}

/// `ZMQ_LAST_ENDPOINT`.
pub fn last_endpoint(s: *mut c_void) -> CString {
    let mut buf = [0u8; 256];
    let mut len = buf.len();
    let rc = unsafe { zmq_getsockopt(s, LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!(rc, 0, "ZMQ_LAST_ENDPOINT: errno {}", errno());
    CStr::from_bytes_with_nul(&buf[..len]).unwrap().to_owned()
}

/// Bind `s` at `endpoint` (`tcp://127.0.0.1:*`, `ipc://*`): the endpoint as bound.
pub fn bind_at(s: *mut c_void, endpoint: &CStr) -> CString {
    let rc = unsafe { zmq_bind(s, endpoint.as_ptr()) };
    assert_eq!(rc, 0, "bind {endpoint:?}: errno {}", errno());
    last_endpoint(s)
}

/// Whether a message sent by a PAIR connected to `server` (a PAIR) arrives within `ms`.
pub fn reaches(ctx: *mut c_void, server: *mut c_void, endpoint: &CStr, ms: c_int) -> bool {
    let client = zmq_socket(ctx, 0);
    set_int(client, LINGER, 0);
    set_int(client, SNDTIMEO, ms);
    assert_eq!(unsafe { zmq_connect(client, endpoint.as_ptr()) }, 0);
    let sent = unsafe { zmq_send(client, b"hi".as_ptr().cast(), 2, 0) } == 2;
    set_int(server, RCVTIMEO, ms);
    let mut buf = [0u8; 8];
    let got = sent && unsafe { zmq_recv(server, buf.as_mut_ptr().cast(), buf.len(), 0) } == 2;
    assert_eq!(zmq_close(client), 0);
    got
}

/// The frames of the next message on `s` (failing the test if none comes).
pub fn recv_frames(s: *mut c_void) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    loop {
        let mut msg = std::mem::MaybeUninit::<zmq_msg_t>::zeroed();
        let m = msg.as_mut_ptr();
        assert_eq!(zmq_msg_init(m), 0);
        let n = zmq_msg_recv(m, s, 0);
        assert!(n >= 0, "no event: errno {}", errno());
        let data = zmq_msg_data(m).cast::<u8>();
        frames.push(unsafe { std::slice::from_raw_parts(data, n as usize) }.to_vec());
        let more = zmq_msg_more(m) == 1;
        assert_eq!(zmq_msg_close(m), 0);
        if !more {
            return frames;
        }
    }
}

/// A 64-bit value of a v2 monitor event, in the host's byte order.
pub fn u64_of(frame: &[u8]) -> u64 {
    u64::from_ne_bytes(frame.try_into().unwrap())
}
