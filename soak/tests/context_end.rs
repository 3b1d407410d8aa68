//! A context of the blocking driver leaves nothing behind when it ends: its I/O thread
//! exits and its descriptors close. (The soak runs found the I/O thread sometimes waiting
//! forever on its epoll descriptor after the last handle went: the wake-up was lost when
//! the waker's eventfd closed right after being written.)

use std::time::{Duration, Instant};

use zmtp_mio::{Context, SocketType};

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count() - 1
}

fn io_threads() -> usize {
    (std::fs::read_dir("/proc/self/task").unwrap())
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == "zmtp-mio")
        })
        .count()
}

#[test]
fn ended_contexts_leave_no_thread_or_descriptor() {
    let before = fds();
    for _ in 0..30 {
        let ctx = Context::new().unwrap();
        let pull = ctx.socket(SocketType::Pull).unwrap();
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        // The receive waits (on the streams) before the message is sent.
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            push.send("x").unwrap();
            push
        });
        let msg = pull.recv_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(&msg.frames()[0][..], b"x");
        drop(sender.join().unwrap());
        drop(pull);
        drop(ctx);
    }
    // Each I/O thread ends on its own, shortly after its context.
    let deadline = Instant::now() + Duration::from_secs(5);
    while (io_threads() > 0 || fds() > before) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(io_threads(), 0, "I/O threads still running");
    assert_eq!(fds(), before, "descriptors left open");
}
