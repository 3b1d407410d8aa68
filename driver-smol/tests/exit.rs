//! A program that sends and then returns from `main` delivers every message: the example
//! `smol_send_and_exit` run as a process, against a PULL that counts what arrives.

/// Over tcp, ipc, ws and wss, for 1, 500 and 100,000 messages, returning from `main`
/// without `close` or `term`.
#[test]
fn a_program_that_sends_and_exits_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything("smol_send_and_exit");
}

/// Under `smol::block_on`: the socket lingers on smol's global executor, still running
/// when `main` returns; the exit hook takes it over from there.
#[test]
fn a_program_on_the_global_executor_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything_with(
        "smol_send_and_exit",
        &[("ZMTP_EXAMPLE_EXECUTOR", "global")],
    );
}

/// With LINGER 100 ms and nobody listening: the program ends after LINGER, saying on
/// standard error what it lost.
#[test]
fn a_program_whose_linger_runs_out_says_what_it_lost() {
    zmtp_testkit::programs::lingers_and_reports_what_was_lost("smol_send_and_exit");
}
