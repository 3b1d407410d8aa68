//! The draft socket types against the draft libzmq: the conformance suite's scenarios
//! ([`zmtp_conformance::draft`]: CLIENT-SERVER routing, RADIO-DISH groups, SCATTER-GATHER
//! and CHANNEL order, PEER-PEER) with libzmq on either side, either side binding, over tcp,
//! ipc and abstract ipc, NULL and CURVE.
//!
//! The peer is proven first: the linked library must be the draft 4.3.5 build, and every
//! scenario must pass between two libzmq sockets. Only then do our drivers (the polling
//! test driver, tokio, smol, mio) run against it; a failure of libzmq against itself stops
//! the binary before any of ours is judged.
//!
//! Runs without the test harness and prints each failure; exits non-zero if any failed.
//! Arguments that do not start with `-` filter by name (`-- tokio routing`); `--verbose`
//! prints every case.

use zmtp_conformance::async_driver::{SmolDriver, TokioDriver};
use zmtp_conformance::draft::{DraftMaker, Ours, Runner};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::PollDriver;
use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_conformance_draft::maker::Libzmq;

fn main() {
    let (major, minor, patch) = ensure_draft_libzmq();
    println!("peer: libzmq {major}.{minor}.{patch} with the draft API and CURVE");
    let mut runner = Runner::from_args();
    if runner.run(&Libzmq, &Libzmq) > 0 {
        println!("the draft libzmq fails against itself: our drivers were not run");
        runner.finish();
        return;
    }
    let drivers: [&dyn DraftMaker; 4] = [
        &Ours::<PollDriver>::new(),
        &Ours::<TokioDriver>::new(),
        &Ours::<SmolDriver>::new(),
        &Ours::<MioDriver>::new(),
    ];
    for ours in drivers {
        runner.run(ours, &Libzmq);
    }
    runner.finish();
}
