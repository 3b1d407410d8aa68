//! A program that sends and then returns from `main` delivers every message: the example
//! `tokio_send_and_exit` run as a process, against a PULL that counts what arrives.

/// Over tcp, ipc, ws and wss, for 1, 500 and 100,000 messages, returning from `main`
/// without `close` or `term`.
#[test]
fn a_program_that_sends_and_exits_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything("tokio_send_and_exit");
}

/// With a runtime that is never shut down (its workers still run when `main` returns):
/// the exit hook takes the socket over from its live tasks.
#[test]
fn a_program_whose_runtime_outlives_main_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything_with(
        "tokio_send_and_exit",
        &[("ZMTP_EXAMPLE_RUNTIME", "kept")],
    );
}

/// With LINGER 100 ms and nobody listening: the program ends after LINGER, saying on
/// standard error what it lost.
#[test]
fn a_program_whose_linger_runs_out_says_what_it_lost() {
    zmtp_testkit::programs::lingers_and_reports_what_was_lost("tokio_send_and_exit");
}

/// A socket whose runtime ends while it lingers is handed over and lingers on: what it
/// queued arrives after the runtime is gone.
#[test]
fn a_socket_whose_runtime_ends_while_it_lingers_still_delivers() {
    let ctx = zmtp_mio::Context::new().unwrap();
    let pull = ctx.socket(zmtp_mio::SocketType::Pull).unwrap();
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let push = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        for i in 0..20_000u32 {
            push.send(i.to_string()).await.unwrap();
        }
        // Dropped: it lingers on tasks of this runtime, which ends at once.
    });
    drop(runtime);
    for i in 0..20_000u32 {
        let msg = pull
            .recv_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        assert_eq!(msg.to_str(), Ok(i.to_string().as_str()));
    }
    zmtp_tokio::linger_all();
}
