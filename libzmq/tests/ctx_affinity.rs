//! `ZMQ_THREAD_AFFINITY_CPU_ADD` and `_REMOVE`: the context's I/O thread is pinned to the
//! CPUs of the set, at once. One test in this binary, so that its context's I/O thread is
//! the only one of the process.
#![cfg(target_os = "linux")]

use std::ffi::c_int;

use zmq::ctx::*;

mod common;
use common::*;

const CPU_ADD: c_int = 7;
const CPU_REMOVE: c_int = 8;

/// The `Cpus_allowed_list` of every I/O thread of the process ("0", "0-1", ...).
fn io_threads_cpus() -> Vec<String> {
    let mut lists = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != "zmtp-mio" {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        lists.push(list.trim().to_owned());
    }
    lists
}

#[test]
fn cpu_add_and_remove_pin_the_io_thread() {
    let ctx = zmq_ctx_new();
    let original = io_threads_cpus();
    assert_eq!(original.len(), 1, "one I/O thread: {original:?}");

    assert_eq!(zmq_ctx_set(ctx, CPU_ADD, 0), 0);
    assert_eq!(io_threads_cpus(), ["0"]);
    let two =
        std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 && original[0] != "0";
    assert_eq!(zmq_ctx_set(ctx, CPU_ADD, 1), 0);
    if two {
        assert_eq!(io_threads_cpus(), ["0-1"]);
    }
    assert_eq!(zmq_ctx_set(ctx, CPU_REMOVE, 1), 0);
    assert_eq!(io_threads_cpus(), ["0"]);

    // As libzmq: a CPU not in the set cannot be removed, negative numbers are refused.
    assert_eq!(
        (zmq_ctx_set(ctx, CPU_REMOVE, 1), errno()),
        (-1, libc::EINVAL)
    );
    assert_eq!((zmq_ctx_set(ctx, CPU_ADD, -1), errno()), (-1, libc::EINVAL));
    // Past what a CPU set holds: refused, and the set is as it was.
    assert_eq!(
        (zmq_ctx_set(ctx, CPU_ADD, 1 << 20), errno()),
        (-1, libc::EINVAL)
    );
    assert_eq!(io_threads_cpus(), ["0"]);
    assert_eq!(
        zmq_ctx_set(ctx, CPU_REMOVE, 1 << 20),
        -1,
        "it was not added"
    );

    // The last CPU removed: the thread runs where it could at first.
    assert_eq!(zmq_ctx_set(ctx, CPU_REMOVE, 0), 0);
    assert_eq!(io_threads_cpus(), original);
    assert_eq!(zmq_ctx_term(ctx), 0);
}
