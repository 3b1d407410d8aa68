//! `zmtp`: send and receive ZeroMQ messages and files, generate CURVE keys and benchmark
//! the drivers from the command line. Run `zmtp --help` (or `zmtp COMMAND --help`) for the
//! usage.
//!
//! Exit status: 0 done, 1 bad usage or configuration, 2 a runtime failure (bind failed,
//! authentication refused, I/O), 3 timeout, 4 messages not delivered (dropped for want of a
//! subscriber or a peer). Nothing a user types may panic: every argument and every
//! I/O result is checked.

mod args;
mod bench;
mod escape;
mod file;
mod hex;
mod run;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use args::Command;

/// Why `zmtp` stops early; each maps to an exit status.
#[derive(Debug)]
pub enum Failure {
    /// Bad usage or configuration (exit 1): a one-line explanation.
    Usage(String),
    /// No arguments at all (exit 1): the usage goes to standard error.
    NoArguments,
    /// A runtime failure (exit 2): bind failed, authentication refused, I/O error.
    Runtime(String),
    /// The command did not complete within `--timeout` (exit 3).
    Timeout(String),
    /// Messages were not delivered (exit 4): dropped by the socket (no subscriber, no peer
    /// with that routing id), or still queued when LINGER ran out.
    Undelivered(String),
    /// Standard output was closed by its reader: stop quietly (exit 0).
    OutputClosed,
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) | Failure::NoArguments => 1,
            Failure::Runtime(_) => 2,
            Failure::Timeout(_) => 3,
            Failure::Undelivered(_) => 4,
            Failure::OutputClosed => 0,
        }
    }

    fn report(&self) {
        let mut err = std::io::stderr().lock();
        // Nothing sensible is left to do if standard error itself fails.
        let _ = match self {
            // Usage errors from the command line already say which help to read.
            Failure::Usage(m) if m.ends_with("--help')") => writeln!(err, "zmtp: {m}"),
            Failure::Usage(m) => writeln!(err, "zmtp: {m} (see 'zmtp --help')"),
            Failure::NoArguments => err.write_all(args::help_text().as_bytes()),
            Failure::Runtime(m) | Failure::Timeout(m) | Failure::Undelivered(m) => {
                writeln!(err, "zmtp: {m}")
            }
            Failure::OutputClosed => Ok(()),
        };
    }
}

fn main() -> ExitCode {
    // The command says itself what its sockets could not deliver (its exit status and
    // message): the library's own loss line would say it twice.
    zmtp_tokio::set_loss_reports(false);
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match run_command(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report();
            ExitCode::from(failure.exit_code())
        }
    }
}

fn run_command(args: Vec<OsString>) -> Result<(), Failure> {
    match args::parse(args)? {
        Command::Print(text) => print_stdout(text.as_bytes()),
        Command::Keygen => keygen(),
        Command::Send(a) => runtime()?.block_on(run::send(a)),
        Command::Recv(a) => runtime()?.block_on(run::recv(a)),
        Command::Bench(a) => bench::bench(a),
        Command::Proxy(a) => runtime()?.block_on(run::proxy(a)),
        Command::SendFile(a) => runtime()?.block_on(file::send_file(a)),
        Command::RecvFile(a) => runtime()?.block_on(file::recv_file(a)),
    }
}

/// The current-thread runtime every socket of the command runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(format!("cannot start the tokio runtime: {e}")))
}

/// Write `bytes` to standard output and flush.
pub fn print_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(output_error)
}

/// A failed write to standard output: a closed pipe ends the command quietly.
pub fn output_error(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::OutputClosed
    } else {
        Failure::Runtime(format!("cannot write to standard output: {e}"))
    }
}

/// `zmtp keygen`: a new CURVE key pair from the operating system's generator, in Z85.
fn keygen() -> Result<(), Failure> {
    let keys = zmtp_tokio::curve_keypair()
        .map_err(|e| Failure::Runtime(format!("cannot generate a key pair: {e}")))?;
    let text = format!(
        "public: {}\nsecret: {}\n",
        keys.public,
        keys.secret.to_z85()
    );
    print_stdout(text.as_bytes())
}
