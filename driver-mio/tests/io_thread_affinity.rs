//! `Context::set_io_thread_affinity`: the context's I/O thread runs on the CPUs given, at
//! once, and where it started again with none. One test in this binary, so that its
//! context's I/O thread is the only one of the process.
#![cfg(target_os = "linux")]

use zmtp_mio::{Context, SocketType};

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
fn the_io_thread_is_pinned_and_released() {
    let ctx = Context::new().unwrap();
    let original = io_threads_cpus();
    assert_eq!(original.len(), 1, "one I/O thread: {original:?}");

    ctx.set_io_thread_affinity([0]).unwrap();
    assert_eq!(io_threads_cpus(), ["0"]);

    // A set with no CPU online is refused, and the thread stays where it was.
    let err = ctx.set_io_thread_affinity([1000]).unwrap_err();
    assert!(
        matches!(&err, zmtp_mio::Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidInput),
        "{err}"
    );
    assert!(
        ctx.set_io_thread_affinity([1 << 20]).is_err(),
        "past a CPU set"
    );
    assert_eq!(io_threads_cpus(), ["0"]);

    // The pinned thread still serves the sockets.
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&endpoint).unwrap();
    push.send("pinned").unwrap();
    assert_eq!(pull.recv().unwrap().to_str().ok(), Some("pinned"));

    ctx.set_io_thread_affinity([]).unwrap();
    assert_eq!(io_threads_cpus(), original);
}
