//! `ZMQ_IPC_FILTER_PID`, `_UID`, `_GID` through the C API, over real `ipc://` connections:
//! the peer's credentials (`SO_PEERCRED`) decide whether it stays.
#![cfg(target_os = "linux")]

use std::ffi::{c_int, c_void};

use zmq::ctx::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

/// `zmq_setsockopt(option, id)` (`None`: NULL with length 0): 0 or the errno.
fn filter(s: *mut c_void, option: c_int, id: Option<u32>) -> c_int {
    let rc = match id {
        Some(id) => unsafe { zmq_setsockopt(s, option, (&id as *const u32).cast(), 4) },
        None => unsafe { zmq_setsockopt(s, option, std::ptr::null(), 0) },
    };
    if rc == 0 {
        0
    } else {
        errno()
    }
}

#[test]
fn ipc_filters_take_ids_and_judge_peers_by_their_credentials() {
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let pid = std::process::id();
    let ctx = zmq_ctx_new();
    let server = zmq_socket(ctx, 0);
    set_int(server, LINGER, 0);

    // Values are 4-byte ids, or NULL with length 0 to clear; write-only.
    let eight = 0u64;
    let rc = unsafe { zmq_setsockopt(server, IPC_FILTER_UID, (&eight as *const u64).cast(), 8) };
    assert_eq!((rc, errno()), (-1, libc::EINVAL));
    let rc = unsafe { zmq_setsockopt(server, IPC_FILTER_GID, std::ptr::null(), 4) };
    assert_eq!((rc, errno()), (-1, libc::EINVAL));
    let mut buf = [0u8; 4];
    let mut len = buf.len();
    let rc = unsafe { zmq_getsockopt(server, IPC_FILTER_PID, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!((rc, errno()), (-1, libc::EINVAL));

    let endpoint = bind_at(server, c"ipc://*");
    assert_eq!(filter(server, IPC_FILTER_UID, Some(uid + 1)), 0);
    assert!(!reaches(ctx, server, &endpoint, 300), "another user only");
    assert_eq!(filter(server, IPC_FILTER_UID, Some(uid)), 0);
    assert!(reaches(ctx, server, &endpoint, 5000), "our user was added");

    assert_eq!(filter(server, IPC_FILTER_UID, None), 0);
    assert_eq!(filter(server, IPC_FILTER_PID, Some(pid + 1)), 0);
    assert!(
        !reaches(ctx, server, &endpoint, 300),
        "another process only"
    );
    assert_eq!(filter(server, IPC_FILTER_GID, Some(gid)), 0);
    assert!(reaches(ctx, server, &endpoint, 5000), "our group passes");

    assert_eq!(filter(server, IPC_FILTER_GID, None), 0);
    assert_eq!(filter(server, IPC_FILTER_PID, None), 0);
    assert!(reaches(ctx, server, &endpoint, 5000), "no filter left");

    assert_eq!(zmq_close(server), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}
