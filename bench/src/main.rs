//! Side-by-side benchmark of our drivers (`zmtp-tokio`, `zmtp-smol`, `zmtp-mio`) and libzmq
//! on this machine.
//!
//! ```text
//! cargo run --release -p zmtp-bench -- [--quick] [--pin CPU] [--count N] [--size LIST]
//!     [--transport LIST] [--test LIST] [--impl LIST] [--runtime current|multi|both] [--runs N]
//! ```
//!
//! Every measurement runs as two processes over loopback, both of one implementation (tokio
//! against tokio, smol against smol, mio against mio, libzmq against libzmq): this program starts itself twice as
//! `zmtp-bench peer ...`, a binding side and a connecting side, and collects what they
//! report. Throughput is measured by the receiver, from the arrival of the first message to
//! that of the last, and every message is checked (size, order, none missing). Latency is
//! measured by REQ around each round trip. The table goes to standard output, progress to
//! standard error.
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod affinity;
mod libzmq;
mod mio;
mod ours;
mod peer;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitCode, Stdio};

use peer::{Flavor, Impl, PeerArgs, Role};

const USAGE: &str = "\
usage: zmtp-bench [options]

Runs zmtp-tokio, zmtp-smol, zmtp-mio and libzmq side by side, each as two processes over
loopback, and prints a table. Build with --release: cargo run --release -p zmtp-bench -- [options]

options:
  --quick               a short smoke run: 1/20 of the default counts
  --pin CPU             pin both processes of every run to one CPU
  --count N             messages (throughput) or round trips (latency) per run, for every test
  --size LIST           message sizes in bytes, e.g. 64,1k,64k (default: 64,1k,64k for
                        push/pull, 64 for pub/sub and req/rep)
  --transport LIST      tcp,ipc (default: both)
  --test LIST           push,pub,reqrep (default: all)
  --impl LIST           tokio (or ours),smol,mio,libzmq (default: all four)
  --runtime R           the tokio driver's runtime: current, multi, both, hop (current-thread with a
                        channel hop per sent message) or current,hop (default: current)
  --runs N              repeat each measurement N times and report the median (default: 1;
                        for latency, the run with the median mean, with its p50 and p99)
  -h, --help            this text

default counts: push/pull 1,000,000 at up to 256 B, 200,000 up to 8 KiB, 20,000 above;
pub/sub the same; req/rep 50,000 round trips (after 1,000 unmeasured).";

/// One kind of measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    Push,
    Pub,
    ReqRep,
}

impl Test {
    fn label(self) -> &'static str {
        match self {
            Test::Push => "push/pull",
            Test::Pub => "pub/sub hwm=0",
            Test::ReqRep => "req/rep",
        }
    }

    /// The sides: (binds, connects).
    fn roles(self) -> (Role, Role) {
        match self {
            Test::Push => (Role::Pull, Role::Push),
            Test::Pub => (Role::Sub, Role::Pub),
            Test::ReqRep => (Role::Rep, Role::Req),
        }
    }

    fn default_sizes(self) -> Vec<usize> {
        match self {
            Test::Push => vec![64, 1024, 64 * 1024],
            Test::Pub | Test::ReqRep => vec![64],
        }
    }

    fn default_count(self, size: usize) -> u64 {
        match self {
            Test::ReqRep => 50_000,
            Test::Push | Test::Pub if size <= 256 => 1_000_000,
            Test::Push | Test::Pub if size <= 8 * 1024 => 200_000,
            Test::Push | Test::Pub => 20_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Tcp,
    Ipc,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
        }
    }
}

/// The command line.
#[derive(Debug)]
struct Config {
    quick: bool,
    pin: Option<usize>,
    count: Option<u64>,
    sizes: Option<Vec<usize>>,
    transports: Vec<Transport>,
    tests: Vec<Test>,
    impls: Vec<Impl>,
    flavors: Vec<Flavor>,
    runs: usize,
}

fn parse_size(text: &str) -> Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.trim_end_matches("ib").trim_end_matches('b');
    let (digits, unit) = match lower.chars().last() {
        Some('k') => (&lower[..lower.len() - 1], 1024),
        Some('m') => (&lower[..lower.len() - 1], 1024 * 1024),
        _ => (lower, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("bad size: {text}"))
}

fn parse_list<T>(text: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(item)
        .collect()
}

fn parse_number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("{flag} takes a number, not {text}"))
}

impl Config {
    fn parse(args: &[String]) -> Result<Config, String> {
        let mut config = Config {
            quick: false,
            pin: None,
            count: None,
            sizes: None,
            transports: vec![Transport::Tcp, Transport::Ipc],
            tests: vec![Test::Push, Test::Pub, Test::ReqRep],
            impls: vec![Impl::Tokio, Impl::Smol, Impl::Mio, Impl::Libzmq],
            flavors: vec![Flavor::Current],
            runs: 1,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| rest.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag {
                "-h" | "--help" => return Err(String::new()),
                "--quick" => config.quick = true,
                "--pin" => config.pin = Some(parse_number(flag, &value()?)?),
                "--count" => config.count = Some(parse_number(flag, &value()?)?),
                "--runs" => config.runs = parse_number::<usize>(flag, &value()?)?.max(1),
                "--size" => config.sizes = Some(parse_list(&value()?, parse_size)?),
                "--transport" => {
                    config.transports = parse_list(&value()?, |t| match t {
                        "tcp" => Ok(Transport::Tcp),
                        "ipc" => Ok(Transport::Ipc),
                        _ => Err(format!("unknown transport {t}")),
                    })?
                }
                "--test" => {
                    config.tests = parse_list(&value()?, |t| match t {
                        "push" | "pushpull" | "push/pull" => Ok(Test::Push),
                        "pub" | "pubsub" | "pub/sub" => Ok(Test::Pub),
                        "req" | "reqrep" | "req/rep" | "lat" | "latency" => Ok(Test::ReqRep),
                        _ => Err(format!("unknown test {t}")),
                    })?
                }
                "--impl" => {
                    config.impls = parse_list(&value()?, |t| match t {
                        "ours" | "tokio" => Ok(Impl::Tokio),
                        "smol" => Ok(Impl::Smol),
                        "mio" => Ok(Impl::Mio),
                        "libzmq" => Ok(Impl::Libzmq),
                        _ => Err(format!("unknown implementation {t}")),
                    })?
                }
                "--runtime" => {
                    config.flavors = match value()?.as_str() {
                        "current" | "current_thread" => vec![Flavor::Current],
                        "multi" | "multi_thread" => vec![Flavor::Multi],
                        "both" => vec![Flavor::Current, Flavor::Multi],
                        "hop" => vec![Flavor::Hop],
                        "current,hop" => vec![Flavor::Current, Flavor::Hop],
                        other => return Err(format!("unknown runtime {other}")),
                    }
                }
                other => return Err(format!("unknown option {other}")),
            }
        }
        if config.transports.is_empty() || config.tests.is_empty() || config.impls.is_empty() {
            return Err("nothing to run".to_string());
        }
        Ok(config)
    }

    fn count(&self, test: Test, size: usize) -> u64 {
        let count = self.count.unwrap_or_else(|| {
            let n = test.default_count(size);
            if self.quick {
                n / 20
            } else {
                n
            }
        });
        count.max(2)
    }
}

/// One implementation as run: ours on one runtime, or libzmq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Variant {
    imp: Impl,
    flavor: Flavor,
}

impl Variant {
    fn label(self, flavors: usize) -> String {
        match self.imp {
            Impl::Tokio if flavors > 1 => format!("tokio ({})", self.flavor.name()),
            imp => imp.name().to_string(),
        }
    }
}

/// One measurement's outcome.
#[derive(Debug, Clone, Copy)]
enum Measure {
    /// Messages per second and bytes per second at the receiver.
    Throughput { msgs: f64, bytes: f64 },
    /// Round-trip time in nanoseconds.
    Latency { mean: f64, p50: f64, p99: f64 },
}

impl Measure {
    /// The number ranked by `--runs` (higher is better for throughput, lower for latency).
    fn key(&self) -> f64 {
        match *self {
            Measure::Throughput { msgs, .. } => msgs,
            Measure::Latency { mean, .. } => mean,
        }
    }

    /// Line `k` of its table cells: the throughput, or latency mean (0), p50 (1), p99 (2).
    fn value(&self, k: usize) -> f64 {
        match *self {
            Measure::Throughput { msgs, .. } => msgs,
            Measure::Latency { mean, p50, p99 } => [mean, p50, p99][k.min(2)],
        }
    }

    fn cell(&self, k: usize) -> String {
        match *self {
            Measure::Throughput { msgs, bytes } => format_throughput(msgs, bytes),
            Measure::Latency { .. } => format_micros(self.value(k)),
        }
    }

    fn summary(&self) -> String {
        match *self {
            Measure::Throughput { msgs, bytes } => format_throughput(msgs, bytes),
            Measure::Latency { mean, p50, p99 } => format!(
                "mean {} p50 {} p99 {}",
                format_micros(mean),
                format_micros(p50),
                format_micros(p99)
            ),
        }
    }
}

/// One row group of the table: a test at one size over one transport.
#[derive(Debug, Clone, Copy)]
struct Case {
    test: Test,
    size: usize,
    transport: Transport,
    count: u64,
}

/// A peer process, ended (by its own id) if still running when dropped.
struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Peer {
    fn start(exe: &Path, args: &PeerArgs, with_input: bool) -> Result<Peer, String> {
        let mut child = Command::new(exe)
            .args(args.to_args())
            .stdin(if with_input {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a peer: {e}"))?;
        let out = BufReader::new(child.stdout.take().ok_or("peer without stdout")?);
        Ok(Peer { child, out })
    }

    /// The rest of the next line starting with `prefix`; `ERROR` lines and an early end
    /// fail.
    fn expect(&mut self, prefix: &str) -> Result<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            match self.out.read_line(&mut line) {
                Ok(0) | Err(_) => return Err(format!("peer exited before {prefix}")),
                Ok(_) => {}
            }
            let line = line.trim_end();
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_string());
            }
            if let Some(why) = line.strip_prefix("ERROR") {
                return Err(why.trim().to_string());
            }
        }
    }

    fn tell(&mut self, line: &str) -> Result<(), String> {
        let input = self.child.stdin.as_mut().ok_or("peer without stdin")?;
        writeln!(input, "{line}")
            .and_then(|()| input.flush())
            .map_err(|e| format!("cannot signal the peer: {e}"))
    }

    fn finish(mut self) -> Result<(), String> {
        drop(self.child.stdin.take());
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
            let why = rest
                .lines()
                .find_map(|l| l.strip_prefix("ERROR"))
                .unwrap_or("");
            Err(format!("peer failed ({status}){why}"))
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run one measurement: start both peers, wait for the result, check both ended well.
fn run_once(
    exe: &Path,
    case: Case,
    variant: Variant,
    pin: Option<usize>,
    ipc_path: &Path,
) -> Result<Measure, String> {
    let (bind_role, connect_role) = case.test.roles();
    let endpoint = match case.transport {
        Transport::Tcp => "tcp://127.0.0.1:*".to_string(),
        Transport::Ipc => format!("ipc://{}", ipc_path.display()),
    };
    let args = |role, endpoint: String| PeerArgs {
        role,
        imp: variant.imp,
        flavor: variant.flavor,
        endpoint,
        count: case.count,
        size: case.size,
        warmup: if case.test == Test::ReqRep {
            (case.count / 50).clamp(1, 1000)
        } else {
            0
        },
        pin,
    };
    let mut server = Peer::start(exe, &args(bind_role, endpoint), false)?;
    let resolved = server.expect("ENDPOINT")?;
    let mut client = Peer::start(exe, &args(connect_role, resolved), case.test == Test::Pub)?;
    if case.test == Test::Pub {
        server.expect("SUBSCRIBED")?;
        client.tell("GO")?;
    }
    let result = match case.test {
        Test::Push | Test::Pub => server.expect("RESULT")?,
        Test::ReqRep => client.expect("RESULT")?,
    };
    client.finish()?;
    server.finish()?;
    let numbers: Vec<f64> = result
        .split_whitespace()
        .map(|n| n.parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("bad result: {result}"))?;
    match (case.test, numbers.as_slice()) {
        (Test::Push | Test::Pub, &[nanos, messages]) => {
            let secs = (nanos / 1e9).max(1e-9);
            Ok(Measure::Throughput {
                msgs: messages / secs,
                bytes: messages * case.size as f64 / secs,
            })
        }
        (Test::ReqRep, &[mean, p50, p99]) => Ok(Measure::Latency { mean, p50, p99 }),
        _ => Err(format!("bad result: {result}")),
    }
}

fn format_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn format_throughput(msgs: f64, bytes: f64) -> String {
    format!("{} msg/s {:.1} MB/s", format_rate(msgs), bytes / 1e6)
}

fn format_micros(nanos: f64) -> String {
    format!("{:.1} us", nanos / 1e3)
}

fn format_size(size: usize) -> String {
    if size >= 1024 * 1024 && size.is_multiple_of(1024 * 1024) {
        format!("{} MiB", size / (1024 * 1024))
    } else if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The median of several runs (by throughput or mean latency).
fn median(mut runs: Vec<Measure>) -> Option<Measure> {
    runs.sort_by(|a, b| a.key().total_cmp(&b.key()));
    runs.get(runs.len() / 2).copied()
}

/// The table lines of one case, as cells: one line for a throughput test, three (mean,
/// p50, p99) for latency.
fn rows(case: Case, variants: &[Variant], results: &[Option<Measure>]) -> Vec<Vec<String>> {
    let libzmq_selected = variants.iter().any(|v| v.imp == Impl::Libzmq);
    let libzmq = variants
        .iter()
        .position(|v| v.imp == Impl::Libzmq)
        .and_then(|i| results[i]);
    let ours: Vec<usize> = (0..variants.len())
        .filter(|&i| variants[i].imp != Impl::Libzmq)
        .collect();
    let lines: &[(&str, usize)] = match case.test {
        Test::Push | Test::Pub => &[(case.test.label(), 0)],
        Test::ReqRep => &[
            ("req/rep latency mean", 0),
            ("req/rep latency p50", 1),
            ("req/rep latency p99", 2),
        ],
    };
    let mut out = Vec::new();
    for &(label, k) in lines {
        let mut row = vec![
            label.to_string(),
            format_size(case.size),
            case.transport.name().to_string(),
        ];
        row.extend(
            results
                .iter()
                .map(|m| m.map_or("FAILED".to_string(), |m| m.cell(k))),
        );
        for &i in ours.iter().filter(|_| libzmq_selected) {
            let ratio = match (results[i].map(|m| m.value(k)), libzmq.map(|m| m.value(k))) {
                (Some(o), Some(l)) if o > 0.0 && l > 0.0 => match case.test {
                    Test::ReqRep => format!("{:.2}", l / o),
                    Test::Push | Test::Pub => format!("{:.2}", o / l),
                },
                _ => "-".to_string(),
            };
            row.push(ratio);
        }
        out.push(row);
    }
    out
}

fn print_table(header: &[String], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i < 3 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line(header));
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if i < 3 {
                "-".repeat(w + 2)
            } else {
                format!("{}:", "-".repeat(w + 1))
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in rows {
        let _ = writeln!(out, "{}", line(row));
    }
    let _ = out.flush();
}

fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn orchestrate(config: &Config) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    if let Some(cpu) = config.pin {
        affinity::pin_to(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    let mut variants = Vec::new();
    for &imp in &config.impls {
        match imp {
            Impl::Tokio => {
                variants.extend(config.flavors.iter().map(|&flavor| Variant { imp, flavor }))
            }
            Impl::Smol | Impl::Mio | Impl::Libzmq => variants.push(Variant {
                imp,
                flavor: Flavor::Current,
            }),
        }
    }
    let mut cases = Vec::new();
    for &test in &config.tests {
        let sizes = config.sizes.clone().unwrap_or_else(|| test.default_sizes());
        for &size in &sizes {
            if test == Test::Pub && size == 0 {
                return Err("pub/sub needs messages of at least 1 byte".to_string());
            }
            for &transport in &config.transports {
                cases.push(Case {
                    test,
                    size,
                    transport,
                    count: config.count(test, size),
                });
            }
        }
    }

    let command: Vec<String> = std::env::args().skip(1).collect();
    eprintln!(
        "zmtp-bench {}: libzmq {}, {} CPU(s) available, {}, {} run(s) per measurement",
        command.join(" "),
        libzmq::version(),
        cpu_count(),
        config
            .pin
            .map_or("not pinned".to_string(), |c| format!("pinned to CPU {c}")),
        config.runs
    );
    let ipc_path: PathBuf =
        std::env::temp_dir().join(format!("zmtp-bench-{}.ipc", std::process::id()));
    let total = cases.len() * variants.len() * config.runs;
    let mut done = 0;
    let mut table = Vec::new();
    for &case in &cases {
        let mut runs: Vec<Vec<Measure>> = vec![Vec::new(); variants.len()];
        for _ in 0..config.runs {
            // Alternate implementations run by run, so drift on a shared machine hits both.
            for (i, &variant) in variants.iter().enumerate() {
                done += 1;
                eprint!(
                    "[{done}/{total}] {} {} {} x{} {}: ",
                    case.test.label(),
                    format_size(case.size),
                    case.transport.name(),
                    format_count(case.count),
                    variant.label(2),
                );
                let outcome = run_once(&exe, case, variant, config.pin, &ipc_path);
                let _ = std::fs::remove_file(&ipc_path);
                match outcome {
                    Ok(m) => {
                        eprintln!("{}", m.summary());
                        runs[i].push(m);
                    }
                    Err(e) => eprintln!("FAILED: {e}"),
                }
                let _ = std::io::stderr().flush();
            }
        }
        // A variant counts as failed if any of its runs failed.
        let results: Vec<Option<Measure>> = runs
            .into_iter()
            .map(|r| {
                if r.len() == config.runs {
                    median(r)
                } else {
                    None
                }
            })
            .collect();
        table.extend(rows(case, &variants, &results));
    }

    let mut header = vec!["test".to_string(), "size".into(), "transport".into()];
    header.extend(variants.iter().map(|v| v.label(config.flavors.len())));
    let libzmq_selected = variants.iter().any(|v| v.imp == Impl::Libzmq);
    let ours: Vec<&Variant> = variants
        .iter()
        .filter(|v| v.imp != Impl::Libzmq && libzmq_selected)
        .collect();
    for v in &ours {
        header.push(if ours.len() > 1 {
            format!("ratio ({})", v.label(config.flavors.len()))
        } else {
            "ratio".to_string()
        });
    }
    println!(
        "zmtp-bench: tokio = zmtp-tokio on a {} runtime, smol = zmtp-smol on zmtp_smol::block_on \
         (one thread), mio = zmtp-mio (blocking, one I/O thread), libzmq {}; {} CPU(s) available, \
         {}; median of {} run(s)",
        config
            .flavors
            .iter()
            .map(|f| format!("{}-thread", f.name()))
            .collect::<Vec<_>>()
            .join(" / "),
        libzmq::version(),
        cpu_count(),
        config.pin.map_or("not pinned".to_string(), |c| format!(
            "both processes pinned to CPU {c}"
        )),
        config.runs
    );
    println!(
        "throughput at the receiver, first to last message (MB = 10^6 bytes); ratio = \
         ours/libzmq for throughput, libzmq/ours for latency (> 1: ours is better)"
    );
    println!();
    print_table(&header, &table);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("peer") {
        return peer::main(&args[1..]);
    }
    match Config::parse(&args).and_then(|config| orchestrate(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zmtp-bench: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
