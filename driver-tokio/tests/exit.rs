//! A program that sends and then ends delivers every message: the example
//! `tokio_send_and_exit` run as a process, against a PULL that counts what arrives.

#[test]
fn a_program_that_sends_and_exits_delivers_every_message() {
    zmtp_testkit::programs::sends_and_exits_delivering_everything("tokio_send_and_exit");
}
