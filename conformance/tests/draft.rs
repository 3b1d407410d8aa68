//! The draft socket types between our drivers: every driver against itself and against
//! each other one ([`zmtp_conformance::draft`]), both roles, either side binding, NULL
//! and CURVE. (Against libzmq, whose draft API only a draft build has, in the
//! draft-libzmq crate's tests.)
//!
//! Runs without the test harness and prints each failure; exits non-zero if any failed.
//! Arguments that do not start with `-` filter by name; `--verbose` prints every case.

use std::time::Instant;

use zmtp_conformance::async_driver::{SmolDriver, TokioDriver};
use zmtp_conformance::draft::{self, DraftMaker, Ours};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::PollDriver;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "--verbose" || a == "-v");
    let filter: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let start = Instant::now();
    let drivers: [&dyn DraftMaker; 4] = [
        &Ours::<PollDriver>::new(),
        &Ours::<TokioDriver>::new(),
        &Ours::<SmolDriver>::new(),
        &Ours::<MioDriver>::new(),
    ];
    let mut outcomes = Vec::new();
    for (i, a) in drivers.iter().enumerate() {
        for b in &drivers[i..] {
            outcomes.extend(draft::run(*a, *b, &filter, |o| match &o.error {
                Some(e) => println!("FAIL {} ({} ms): {e}", o.name, o.elapsed.as_millis()),
                None if verbose => println!("ok   {} ({} ms)", o.name, o.elapsed.as_millis()),
                None => {}
            }));
        }
    }
    let failed = outcomes.iter().filter(|o| o.error.is_some()).count();
    println!(
        "draft types: {} cases run, {} passed, {failed} failed in {:.1} s",
        outcomes.len(),
        outcomes.len() - failed,
        start.elapsed().as_secs_f64()
    );
    if failed > 0 || outcomes.is_empty() {
        std::process::exit(1);
    }
}
