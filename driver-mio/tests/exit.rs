//! A program that sends and then returns from `main` delivers every message: the example
//! `mio_send_and_exit` run as a process, against a PULL that counts what arrives.

/// Over tcp, ipc, ws and wss, for 1, 500 and 100,000 messages, returning from `main`
/// without `close` or `term`.
#[test]
fn a_program_that_sends_and_exits_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything("mio_send_and_exit");
}

/// With LINGER 100 ms and nobody listening: the program ends after LINGER, saying on
/// standard error what it lost.
#[test]
fn a_program_whose_linger_runs_out_says_what_it_lost() {
    zmtp_testkit::programs::lingers_and_reports_what_was_lost("mio_send_and_exit");
}

use std::time::Duration;

use zmtp_mio::{Context, Error, Options, SendError, SocketType};

const T: Option<Duration> = Some(Duration::from_secs(5));

fn options_with_linger(linger: Option<Duration>) -> Options {
    Options::default().with_linger(linger)
}

#[test]
fn a_socket_dropped_after_its_context_waits_for_its_queue() {
    let receiver = Context::new().unwrap();
    let pull = receiver.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = {
        let ctx = Context::new().unwrap();
        ctx.socket(SocketType::Push).unwrap()
        // The only context handle ends here, before the socket.
    };
    push.connect(&ep).unwrap();
    let reader = std::thread::spawn(move || {
        for i in 0..50_000u32 {
            let m = pull.recv_timeout(T).unwrap();
            assert_eq!(&m.frames()[0][..], i.to_string().as_bytes());
        }
    });
    for i in 0..50_000u32 {
        push.send(i.to_string()).unwrap();
    }
    drop(push);
    reader.join().unwrap();
}

#[test]
fn close_and_term_report_what_linger_cut_off() {
    let ctx = Context::new().unwrap();
    let stuck = ctx
        .socket_with(
            SocketType::Push,
            options_with_linger(Some(Duration::from_millis(50))),
        )
        .unwrap();
    // The discard port: nothing listens there on a test machine.
    stuck.connect("tcp://127.0.0.1:9").unwrap();
    for i in 0..3u32 {
        stuck.send(i.to_string()).unwrap();
    }
    let report = stuck.close();
    assert_eq!(report.unsent_messages, 3, "{report:?}");
    assert!(!report.delivered_all());

    // term: a dropped socket's loss, a live socket's loss, and a live socket closed.
    let dropped = ctx
        .socket_with(
            SocketType::Push,
            options_with_linger(Some(Duration::from_millis(50))),
        )
        .unwrap();
    dropped.connect("tcp://127.0.0.1:9").unwrap();
    dropped.send("lost 1").unwrap();
    dropped.send("lost 2").unwrap();
    drop(dropped);
    let live = ctx
        .socket_with(
            SocketType::Push,
            options_with_linger(Some(Duration::from_millis(50))),
        )
        .unwrap();
    live.connect("tcp://127.0.0.1:9").unwrap();
    live.send("lost 3").unwrap();
    let idle = ctx.socket(SocketType::Pull).unwrap();
    let report = ctx.clone().term();
    assert_eq!(report.unsent_messages, 3, "{report:?}");
    assert!(matches!(idle.recv_timeout(T), Err(Error::Closed)));
    assert!(matches!(live.try_send("late"), Err(SendError::Closed(_))));
    // Nothing is counted twice.
    assert!(ctx.term().delivered_all());
}

/// A socket dropped on one thread while the context's `term` runs on another: `term`,
/// having seen the socket orphaned, is woken when the drop forgets it. (It was not: the
/// C library's `zmq_ctx_term`, whose sockets a closer thread ends, took two seconds more
/// about once in three hundred.)
#[test]
fn a_drop_during_term_does_not_hold_it() {
    let mut slowest = Duration::ZERO;
    for _ in 0..2000 {
        let ctx = Context::new().unwrap();
        let socket = ctx.socket(SocketType::Pair).unwrap();
        socket.set_linger(Some(Duration::ZERO)).unwrap();
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let go = start.clone();
        let term = std::thread::spawn(move || {
            go.wait();
            let start = std::time::Instant::now();
            ctx.term();
            start.elapsed()
        });
        start.wait();
        drop(socket);
        slowest = slowest.max(term.join().unwrap());
        assert!(
            slowest < Duration::from_millis(500),
            "term took {slowest:?}"
        );
    }
    println!("slowest term: {slowest:?}");
}
