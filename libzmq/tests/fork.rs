//! A forked child's copy of its parent's context: closing the inherited socket and ending
//! the inherited context return at once (their I/O thread is the parent's), and the child
//! makes a context of its own, as with libzmq.

use std::ffi::{c_void, CStr};
use std::time::{Duration, Instant};

use zmq::ctx::*;
use zmq::options::*;
use zmq::socket::*;

mod common;
use common::*;

/// What the child does, reporting failure by its exit status (it must not unwind into the
/// test harness's copy).
fn child(inherited_ctx: *mut c_void, inherited: *mut c_void, endpoint: &CStr) -> i32 {
    if zmq_close(inherited) != 0 || zmq_ctx_term(inherited_ctx) != 0 {
        return 2;
    }
    let ctx = zmq_ctx_new();
    let push = zmq_socket(ctx, 8);
    if push.is_null() || unsafe { zmq_connect(push, endpoint.as_ptr()) } != 0 {
        return 3;
    }
    for _ in 0..5 {
        if unsafe { zmq_send(push, b"Hello".as_ptr().cast(), 5, 0) } != 5 {
            return 4;
        }
    }
    if zmq_close(push) != 0 || zmq_ctx_term(ctx) != 0 {
        return 5;
    }
    0
}

#[test]
fn a_forked_child_leaves_the_parents_context_and_makes_its_own() {
    let ctx = zmq_ctx_new();
    let pull = zmq_socket(ctx, 7);
    set_int(pull, RCVTIMEO, 10_000);
    let endpoint = bind_at(pull, c"tcp://127.0.0.1:*");

    // SAFETY: the child runs only `child` and leaves with `_exit`, never returning into
    // the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let status = child(ctx, pull, &endpoint);
        // SAFETY: ends the child at once, running no destructor of the parent's copy.
        unsafe { libc::_exit(status) };
    }

    for i in 0..5 {
        let mut got = [0u8; 8];
        let n = unsafe { zmq_recv(pull, got.as_mut_ptr().cast(), got.len(), 0) };
        assert_eq!(n, 5, "message {i} from the child");
        assert_eq!(&got[..5], b"Hello");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    loop {
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            break;
        }
        if Instant::now() > deadline {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the child did not end");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status), "the child was killed: {status}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child failed");
    assert_eq!(zmq_close(pull), 0);
    assert_eq!(zmq_ctx_term(ctx), 0);
}
