//! `zmtp-soak`: runs churn and network-fault scenarios against our sockets (the blocking
//! `zmtp-mio` driver) and against libzmq, for any duration, checking each scenario's
//! invariant and the process's memory and file descriptors, and prints a report.
//!
//! ```text
//! zmtp-soak [--duration 60s] [--scenario NAME]... [--impl ours|libzmq|both|mixed|all]
//!           [--csv DIR]
//! ```
//!
//! `ours` and `libzmq` run every socket of a scenario on one implementation; the mixed
//! runs put the bound sockets on one and the connecting ones on the other:
//! `ours+libzmq` (our servers, libzmq's peers) and `libzmq+ours`. `both` (the
//! default) is `ours` and `libzmq`, `mixed` the two mixes, `all` the four.
//!
//! The duration is shared evenly by every (scenario, implementation) run (what one
//! overruns, the later ones give back). The exit code is 1 when any verdict fails, 2 on a
//! usage error.

#![warn(missing_docs)]

mod relay;
mod sampler;
mod scenarios;
mod zmq;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sampler::{Sampler, Trace};
use scenarios::{Check, Run, Scenario};

/// The command line.
struct Args {
    duration: Duration,
    scenarios: Vec<&'static Scenario>,
    impls: Vec<&'static str>,
    csv: Option<PathBuf>,
}

const USAGE: &str = "usage: zmtp-soak [--duration 60s] [--scenario NAME]... \
                     [--impl ours|libzmq|both|mixed|all] [--csv DIR]";

/// `90s`, `500ms`, `30m`, `2h` (a bare number is seconds).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: f64 = number.parse().map_err(|_| format!("bad duration {text}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("bad duration unit in {text} (ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        duration: Duration::from_secs(60),
        scenarios: Vec::new(),
        impls: vec!["ours", "libzmq"],
        csv: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--duration" => args.duration = parse_duration(&value()?)?,
            "--scenario" => {
                let name = value()?;
                let s = (scenarios::ALL.iter())
                    .find(|s| s.name == name)
                    .ok_or_else(|| {
                        let names: Vec<_> = scenarios::ALL.iter().map(|s| s.name).collect();
                        format!("unknown scenario {name} (scenarios: {})", names.join(", "))
                    })?;
                args.scenarios.push(s);
            }
            "--impl" => {
                args.impls = match value()?.as_str() {
                    "ours" => vec!["ours"],
                    "libzmq" => vec!["libzmq"],
                    "both" => vec!["ours", "libzmq"],
                    "mixed" => vec!["ours+libzmq", "libzmq+ours"],
                    "all" => vec!["ours", "libzmq", "ours+libzmq", "libzmq+ours"],
                    other => return Err(format!("unknown implementation {other}")),
                }
            }
            "--csv" => args.csv = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.scenarios.is_empty() {
        args.scenarios = scenarios::ALL.iter().collect();
    }
    Ok(args)
}

/// One (scenario, implementation) run's outcome.
struct Outcome {
    scenario: &'static str,
    imp: &'static str,
    checks: Vec<Check>,
    trace: Trace,
}

fn run_one(scenario: &'static Scenario, imp: &'static str, budget: Duration) -> Outcome {
    // The baseline: freed heap returned, and a moment for earlier threads to be gone.
    std::thread::sleep(Duration::from_millis(200));
    sampler::trim();
    let interval = (budget / 100).clamp(Duration::from_millis(20), Duration::from_secs(5));
    let sampler = Sampler::start(interval);
    // "A+B": the servers on A, their peers on B.
    let (servers, peers) = imp.split_once('+').unwrap_or((imp, imp));
    let made = zmq::new_impl(servers).and_then(|zmq| {
        let peers = match peers == servers {
            true => zmq.clone(),
            false => zmq::new_impl(peers)?,
        };
        Ok((zmq, peers))
    });
    let mut checks = match made {
        Ok((zmq, peers)) => {
            let run = Run {
                zmq,
                peers,
                deadline: Instant::now() + budget,
                sampler: &sampler,
            };
            let result = (scenario.run)(&run);
            // The context ends here (libzmq's term waits for its sockets' linger).
            drop(run);
            result.unwrap_or_else(|e| vec![Check::new("the scenario ran to its end", false, e)])
        }
        Err(e) => vec![Check::new("the implementation started", false, e)],
    };
    let active_end = sampler.now();
    std::thread::sleep(Duration::from_millis(300));
    sampler::trim();
    let trace = sampler.finish(active_end);
    checks.extend(resource_checks(&trace));
    Outcome {
        scenario: scenario.name,
        imp,
        checks,
        trace,
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The shortest load a run is given, however little time is left.
const MIN_BUDGET: Duration = Duration::from_secs(1);

fn resource_checks(trace: &Trace) -> Vec<Check> {
    let (start, end) = (trace.start(), trace.end());
    let mut checks = vec![
        Check::new(
            "RSS back near baseline (slack 16 MiB)",
            end.rss <= start.rss + sampler::RSS_SLACK,
            format!(
                "{:.1} -> {:.1} MiB ({:+.1})",
                start.rss as f64 / MIB,
                end.rss as f64 / MIB,
                (end.rss as f64 - start.rss as f64) / MIB
            ),
        ),
        Check::new(
            "fds back to baseline (slack 2)",
            end.fds <= start.fds + sampler::FD_SLACK,
            format!("{} -> {}", start.fds, end.fds),
        ),
    ];
    match trace.growth() {
        Some(g) => {
            let what = if g.marks {
                "the scenario's quiet points"
            } else {
                "all samples"
            };
            checks.push(Check::new(
                "no linear growth over the second half (RSS <= 8 MiB, fds <= 16)",
                g.rss <= sampler::RSS_GROWTH_BOUND && g.fds <= sampler::FD_GROWTH_BOUND,
                format!(
                    "fitted {:+.2} MiB, {:+.1} fds over the half, from {} of {what}",
                    g.rss / MIB,
                    g.fds,
                    g.points
                ),
            ));
        }
        None => checks.push(Check::new(
            "no linear growth over the second half (RSS <= 8 MiB, fds <= 16)",
            true,
            "not judged: fewer than 2 quiet points (or 4 samples) in the second half; run longer"
                .into(),
        )),
    }
    checks
}

fn report(o: &Outcome) -> bool {
    let ok = o.checks.iter().all(|c| c.ok);
    println!(
        "\n=== {} / {}: {}",
        o.scenario,
        o.imp,
        if ok { "PASS" } else { "FAIL" }
    );
    for c in &o.checks {
        println!(
            "  [{}] {}: {}",
            if c.ok { "pass" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    let (start, end) = (o.trace.start(), o.trace.end());
    let (peak_rss, peak_fds) = o.trace.peak();
    println!(
        "  RSS start/peak/end: {:.1} / {:.1} / {:.1} MiB;  fds start/peak/end: {} / {} / {}",
        start.rss as f64 / MIB,
        peak_rss as f64 / MIB,
        end.rss as f64 / MIB,
        start.fds,
        peak_fds,
        end.fds
    );
    print!("{}", o.trace.plot("RSS", |s| s.rss as f64 / MIB, "MiB"));
    print!("{}", o.trace.plot("fds", |s| s.fds as f64, "fds"));
    ok
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            eprintln!("{USAGE}");
            for s in scenarios::ALL {
                eprintln!("  {:<18} {}", s.name, s.about);
            }
            return ExitCode::from(2);
        }
    };
    // The storm needs two descriptors per connection.
    let limit = zmtp_testkit::limits::raise_fd_limit();
    let runs = (args.scenarios.len() * args.impls.len()) as u32;
    println!(
        "zmtp-soak: {} scenarios x {} implementations, about {:.1} s each ({:.0} s in all); open-file limit {limit}",
        args.scenarios.len(),
        args.impls.len(),
        (args.duration / runs.max(1)).as_secs_f64(),
        args.duration.as_secs_f64()
    );
    if limit < (2 * scenarios::STORM + 256) as u64 {
        println!("warning: the open-file limit is below what the storm needs");
    }
    if let Some(dir) = &args.csv {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("--csv {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    let started = Instant::now();
    let end = started + args.duration;
    let mut outcomes = Vec::new();
    let mut runs_left = runs;
    for &scenario in &args.scenarios {
        for &imp in &args.impls {
            // What is left shared by the runs left: a run that overran its share (one
            // storm wave at least, the drains and settling) shortens the others, so that
            // the whole stays near the duration asked for.
            let budget =
                (end.saturating_duration_since(Instant::now()) / runs_left.max(1)).max(MIN_BUDGET);
            runs_left = runs_left.saturating_sub(1);
            println!(
                "--- {} / {imp} ({:.1} s): {}",
                scenario.name,
                budget.as_secs_f64(),
                scenario.about
            );
            let o = run_one(scenario, imp, budget);
            report(&o);
            if let Some(dir) = &args.csv {
                let path = dir.join(format!("{}-{}.csv", o.scenario, o.imp));
                if let Err(e) = o.trace.write_csv(&path) {
                    eprintln!("writing {}: {e}", path.display());
                }
            }
            outcomes.push(o);
        }
    }
    println!("\n=== summary ({:.1} s)", started.elapsed().as_secs_f64());
    let mut all_ok = true;
    for o in &outcomes {
        let failed: Vec<&str> = (o.checks.iter())
            .filter(|c| !c.ok)
            .map(|c| c.name.as_str())
            .collect();
        all_ok &= failed.is_empty();
        let (peak_rss, peak_fds) = o.trace.peak();
        println!(
            "{:<18} {:<7} {}  RSS {:.1}/{:.1}/{:.1} MiB  fds {}/{}/{}{}",
            o.scenario,
            o.imp,
            if failed.is_empty() { "PASS" } else { "FAIL" },
            o.trace.start().rss as f64 / MIB,
            peak_rss as f64 / MIB,
            o.trace.end().rss as f64 / MIB,
            o.trace.start().fds,
            peak_fds,
            o.trace.end().fds,
            if failed.is_empty() {
                String::new()
            } else {
                format!("  failed: {}", failed.join("; "))
            }
        );
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("s").is_err());
    }
}
