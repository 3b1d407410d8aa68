//! The `zmtp` command against the draft libzmq: the command's draft scenarios
//! (`zmtp-cli/tests/common/draft.rs`: CLIENT/SERVER, RADIO/DISH, SCATTER/GATHER, PEER,
//! CHANNEL), with the binary as one process and a libzmq 4.3.5 draft socket
//! ([`Libzmq`]) in this test's process as the other side.
//!
//! `zmtp-cli`'s own tests run the same scenarios against our drivers; they cannot run them
//! against this libzmq, since their binaries link the system one. Here cargo gives no path
//! to the `zmtp` binary, so the first scenario builds it (`cargo build -p zmtp-cli`, in
//! this test's profile); the binary itself links no libzmq.

#[path = "../../zmtp-cli/tests/common/mod.rs"]
mod common;
#[macro_use]
#[path = "../../zmtp-cli/tests/common/draft.rs"]
mod scenarios;

use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_conformance_draft::maker::Libzmq;

/// The draft libzmq, proven to be the library answering before any scenario uses it.
fn libzmq() -> Libzmq {
    ensure_draft_libzmq();
    Libzmq
}

against!(libzmq, libzmq());

/// `ws://` through the command, against libzmq's draft build (the only one with ZWS).
mod ws {
    use super::common::{ok, push_hello_world, spawn, text, GUARD};
    use zmtp_conformance::ffi::{Ctx, ZMQ_PULL, ZMQ_PUSH};
    use zmtp_conformance::security::zsock;

    #[test]
    fn our_push_connects_to_a_libzmq_pull_over_ws() {
        super::libzmq();
        let ctx = Ctx::new();
        let pull = zsock(&ctx, ZMQ_PULL);
        pull.bind("ws://127.0.0.1:*").expect("zmq_bind ws");
        let ep = pull.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
        push_hello_world(&ep);
        assert_eq!(
            pull.recv_multipart().expect("libzmq recv"),
            [b"hello".to_vec(), b"world".to_vec()]
        );
    }

    #[test]
    fn a_libzmq_push_connects_to_our_pull_bound_on_ws() {
        super::libzmq();
        let ctx = Ctx::new();
        let mut running = spawn(
            &[
                "recv",
                "-v",
                "-t",
                "pull",
                "-b",
                "ws://127.0.0.1:*",
                "-n",
                "2",
                "--timeout",
                GUARD,
            ],
            None,
        );
        let ep = running.bound_endpoint();
        assert!(ep.starts_with("ws://127.0.0.1:"), "{ep}");
        let push = zsock(&ctx, ZMQ_PUSH);
        push.connect(&ep).expect("zmq_connect ws");
        for m in ["m0", "m1"] {
            push.send_multipart(&[m.as_bytes()]).expect("libzmq send");
        }
        let out = running.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "m0\nm1\n");
    }
}
