//! `ws://` against the draft libzmq 4.3.5 (the only libzmq with ZWS 2.0): the conformance
//! matrix's scenarios (intact multipart and 4 MiB frames, order, PUB/SUB and XPUB/XSUB
//! filtering, REQ/REP and ROUTER envelopes, load balancing, fair queuing, reconnection)
//! for every compatible pair (PAIR, PUSH/PULL, PUB/SUB, XPUB/XSUB, REQ/REP, REQ/ROUTER,
//! DEALER/REP, DEALER/ROUTER, DEALER/DEALER, ROUTER/ROUTER), our socket on either side and
//! either side binding, with NULL, for our tokio, smol, mio and polling drivers.
//!
//! Runs without the test harness and prints a summary; exits non-zero if any scenario
//! failed. Arguments that do not start with `-` filter scenarios by name; `--verbose`
//! prints every scenario with its time.

use std::time::Instant;

use zmtp_conformance::async_driver::{SmolDriver, TokioDriver};
use zmtp_conformance::matrix::{self, Outcome};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::{PollDriver, Transport};
use zmtp_conformance_draft::ensure_draft_libzmq;

fn main() {
    let (major, minor, patch) = ensure_draft_libzmq();
    println!("peer: libzmq {major}.{minor}.{patch} (draft build, ws://)");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "--verbose" || a == "-v");
    let filter: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let start = Instant::now();
    let progress = |o: &Outcome| match &o.error {
        Some(e) => println!("FAIL {} ({} ms): {e}", o.name(), o.elapsed.as_millis()),
        None if verbose => println!("ok   {} ({} ms)", o.name(), o.elapsed.as_millis()),
        None => {}
    };
    let ws = [Transport::Ws];
    let mut outcomes = Vec::new();
    outcomes.extend(matrix::run_against_libzmq::<TokioDriver>(
        &ws, &filter, progress,
    ));
    outcomes.extend(matrix::run_against_libzmq::<SmolDriver>(
        &ws, &filter, progress,
    ));
    outcomes.extend(matrix::run_against_libzmq::<MioDriver>(
        &ws, &filter, progress,
    ));
    outcomes.extend(matrix::run_against_libzmq::<PollDriver>(
        &ws, &filter, progress,
    ));
    let failed = matrix::print_summary(&outcomes, start.elapsed());
    if failed > 0 || outcomes.is_empty() {
        std::process::exit(1);
    }
}
