//! The draft socket types between our drivers: every driver against itself and against
//! each other one ([`zmtp_conformance::draft`]), both roles, either side binding, NULL
//! and CURVE. (Against libzmq, whose draft API only a draft build has, in
//! `conformance-draft/tests/draft_libzmq.rs`.)
//!
//! Runs without the test harness and prints each failure; exits non-zero if any failed.
//! Arguments that do not start with `-` filter by name; `--verbose` prints every case.

use zmtp_conformance::async_driver::{SmolDriver, TokioDriver};
use zmtp_conformance::draft::{DraftMaker, Ours, Runner};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::PollDriver;

fn main() {
    let mut runner = Runner::from_args();
    let drivers: [&dyn DraftMaker; 4] = [
        &Ours::<PollDriver>::new(),
        &Ours::<TokioDriver>::new(),
        &Ours::<SmolDriver>::new(),
        &Ours::<MioDriver>::new(),
    ];
    for (i, a) in drivers.iter().enumerate() {
        for b in &drivers[i..] {
            runner.run(*a, *b);
        }
    }
    runner.finish();
}
