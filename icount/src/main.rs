//! `zmtp-icount SCENARIO COUNT`: run COUNT 64-byte messages through one measured path of
//! the core, in memory (see the crate documentation); exit 1 if any message went wrong, 2
//! on a bad command line. Meant to run under `valgrind --tool=callgrind`, as
//! `scripts/icount.sh` does.

use std::process::ExitCode;

use zmtp_icount::Scenario;

fn usage() -> ExitCode {
    let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
    eprintln!(
        "usage: zmtp-icount SCENARIO COUNT  (scenarios: {})",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, count] = args.as_slice() else {
        return usage();
    };
    let (Some(scenario), Ok(count)) = (Scenario::from_name(name), count.parse::<u64>()) else {
        return usage();
    };
    match scenario.run(count) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zmtp-icount {name}: {e}");
            ExitCode::FAILURE
        }
    }
}
