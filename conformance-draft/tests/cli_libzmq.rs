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
