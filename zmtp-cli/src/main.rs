//! `zmtp`: send and receive ZeroMQ messages, generate CURVE keys and benchmark the tokio
//! driver from the command line. Run `zmtp --help` for the usage.
//!
//! Exit status: 0 done, 1 bad usage or configuration, 2 a runtime failure (bind failed,
//! authentication refused, I/O), 3 timeout. Nothing a user types may panic: every
//! argument and every I/O result is checked.

mod args;
mod bench;
mod hex;
mod run;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use args::Command;

/// The usage text, printed by `zmtp --help` (stdout) and on `zmtp` alone (stderr).
pub const USAGE: &str = "\
zmtp: ZeroMQ from the command line (ZMTP 3.x, interoperable with libzmq)

Usage:
  zmtp send   -t TYPE (-b EP | -c EP)... [OPTIONS] [FRAME...]
  zmtp recv   -t TYPE (-b EP | -c EP)... [OPTIONS]
  zmtp keygen
  zmtp bench  [--driver tokio] [--transport tcp|ipc|inproc] [--size BYTES] [--count N]
  zmtp help

TYPE: pair, pub, sub, xpub, xsub, push, pull, req, rep, dealer, router.
EP: tcp://HOST:PORT (bind tcp://*:PORT, or tcp://127.0.0.1:* for any free port),
    ipc:///path, ipc://@abstract-name, inproc://name.

send: the FRAME arguments are the frames of one message; without any, each line of
standard input is one message, its frames separated by a TAB. With -t req, each request
waits for its reply, which is printed as recv prints it. A ROUTER's first frame is the
routing id of the peer to send to.
  -n, --count N            send the message N times (each line of input N times)

recv: prints one line per message, its frames separated by a TAB.
  -n, --count N            exit after N messages
  --hex                    print each frame as lowercase hex (also replies to send -t req)
  --echo                   send every message back as received (pair, dealer, router, rep)
  --subscribe PREFIX       subscribe to PREFIX (repeatable; a SUB without any gets all)

Common options:
  -t, --type TYPE          the socket type (required)
  -b, --bind EP            listen on EP (repeatable)
  -c, --connect EP         connect to EP (repeatable)
  --timeout MS             give up after MS milliseconds (exit 3)
  --linger MS              on exit, wait up to MS for queued messages (default 1000;
                           -1: as long as it takes)
  --identity ID            the routing id (ZMQ_ROUTING_ID)
  --hwm N                  send and receive high-water marks (0: no limit)
  --heartbeat MS           send a heartbeat PING every MS milliseconds
  --hex-frames             FRAME arguments (and frames read from input) are hex
  -v, --verbose            print bound endpoints and connection events on stderr

Security:
  --plain-user U --plain-password P   a PLAIN client
  --plain-server --allow-user U:P     a PLAIN server accepting U:P (repeatable)
  --curve-server-secret Z85           a CURVE server with this secret key
  --allow-client PUBZ85               accept this CURVE client key (repeatable; default:
                                      any client)
  --curve-server-key Z85              a CURVE client of the server with this public key
  --curve-secret Z85                  our CURVE secret key (default: an ephemeral one)

keygen: prints a new CURVE key pair in Z85 (\"public: ...\" and \"secret: ...\").

bench: a loopback benchmark in one process: PUSH to PULL throughput (--size 64 bytes,
--count 1000000 messages by default) and REQ/REP round-trip latency (10000 round trips,
or --count if fewer), over --transport (tcp by default), on --driver tokio.

Exit status: 0 done, 1 bad usage or configuration, 2 runtime failure (bind failed,
authentication refused, I/O error), 3 timeout.
";

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
    /// Standard output was closed by its reader: stop quietly (exit 0).
    OutputClosed,
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) | Failure::NoArguments => 1,
            Failure::Runtime(_) => 2,
            Failure::Timeout(_) => 3,
            Failure::OutputClosed => 0,
        }
    }

    fn report(&self) {
        let mut err = std::io::stderr().lock();
        // Nothing sensible is left to do if standard error itself fails.
        let _ = match self {
            Failure::Usage(m) => writeln!(err, "zmtp: {m} (see 'zmtp --help')"),
            Failure::NoArguments => err.write_all(USAGE.as_bytes()),
            Failure::Runtime(m) | Failure::Timeout(m) => writeln!(err, "zmtp: {m}"),
            Failure::OutputClosed => Ok(()),
        };
    }
}

fn main() -> ExitCode {
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
        Command::Help => print_stdout(USAGE.as_bytes()),
        Command::Version => {
            print_stdout(format!("zmtp {}\n", env!("CARGO_PKG_VERSION")).as_bytes())
        }
        Command::Keygen => keygen(),
        Command::Send(a) => runtime()?.block_on(run::send(a)),
        Command::Recv(a) => runtime()?.block_on(run::recv(a)),
        Command::Bench(a) => runtime()?.block_on(bench::bench(a)),
    }
}

/// The current-thread runtime every socket of the command runs on.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
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
