//! The conformance matrix, per driver: every compatible socket pair, transport and role,
//! with our socket on each side, against libzmq and against our own sockets; then
//! cross-driver pairs (each driver against each other one, in both roles).
//!
//! Runs without the test harness and prints a summary; exits non-zero if any scenario
//! failed. Arguments that do not start with `-` filter scenarios by name (all must
//! match, e.g. `cargo test --test matrix -- ROUTER-ROUTER ipc`); `--verbose` prints every
//! scenario with its time.

use std::time::Instant;

use zmtp_conformance::async_driver::{SmolDriver, TokioDriver};
use zmtp_conformance::matrix::{self, Outcome};
use zmtp_conformance::mio_driver::{MioDriver, UringDriver};
use zmtp_conformance::our::PollDriver;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "--verbose" || a == "-v");
    let filter: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let start = Instant::now();
    let progress = |o: &Outcome| match &o.error {
        Some(e) => println!("FAIL {} ({} ms): {e}", o.name(), o.elapsed.as_millis()),
        None if verbose => println!("ok   {} ({} ms)", o.name(), o.elapsed.as_millis()),
        None => {}
    };
    let mut outcomes = Vec::new();
    // One line per driver: a new driver implements `zmtp_conformance::our::OurDriver` and
    // is added here (and to the cross-driver pairs below).
    outcomes.extend(matrix::run::<PollDriver>(&filter, progress));
    outcomes.extend(matrix::run::<TokioDriver>(&filter, progress));
    outcomes.extend(matrix::run::<SmolDriver>(&filter, progress));
    outcomes.extend(matrix::run::<MioDriver>(&filter, progress));
    outcomes.extend(matrix::run::<UringDriver>(&filter, progress));
    // Cross-driver pairs, each pair once: both roles, either driver binding, over the
    // transports both offer (inproc between the async drivers).
    outcomes.extend(matrix::run_cross::<TokioDriver, SmolDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<TokioDriver, MioDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<SmolDriver, MioDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<PollDriver, TokioDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<PollDriver, SmolDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<PollDriver, MioDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<MioDriver, UringDriver>(
        &filter, progress,
    ));
    outcomes.extend(matrix::run_cross::<TokioDriver, UringDriver>(
        &filter, progress,
    ));
    let failed = matrix::print_summary(&outcomes, start.elapsed());
    if failed > 0 || outcomes.is_empty() {
        std::process::exit(1);
    }
}
