//! What the tests of the `zmtp` binary share: running it as a process and reading how it
//! ended.
//!
//! Also included by a test binary of `zmtp-conformance-draft` (which runs the draft
//! scenarios of `draft.rs` beside this file against the draft libzmq), where cargo provides
//! no path to the binary: [`zmtp`] then builds it.

// Each test crate uses its own part of this module.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary under test: the one cargo built for `zmtp-cli`'s own tests or, in another
/// package's tests, one built here once per process with `cargo build -p zmtp-cli` in the
/// test's profile, found in the directory above the test executable's `deps`.
///
/// # Panics
/// If that build fails or leaves no binary where it is expected.
pub fn zmtp() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = option_env!("CARGO_BIN_EXE_zmtp") {
        return Path::new(path);
    }
    BUILT.get_or_init(build_zmtp)
}

/// Build `zmtp` with cargo, in the profile of this test; its path.
fn build_zmtp() -> PathBuf {
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "-q", "-p", "zmtp-cli"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    let status = cargo
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build zmtp: {e}"));
    assert!(
        status.success(),
        "`cargo build -p zmtp-cli` failed ({status}): the zmtp binary is needed by these tests"
    );
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} has no grandparent directory", exe.display()));
    let path = dir.join(format!("zmtp{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "cargo built zmtp-cli but {} is missing (a test built for another target directory \
         or profile?)",
        path.display()
    );
    path
}

/// The longest any run of the binary may take before the test gives up on it.
pub const LIMIT: Duration = Duration::from_secs(15);

/// `--timeout` given to runs that should finish by themselves, so that a bug ends them with
/// exit 3 rather than a hang.
pub const GUARD: &str = "10000";

/// Output that must be UTF-8, as text.
pub fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("UTF-8")
}

/// How a run of the binary ended.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code; `None` if killed by a signal.
    pub code: Option<i32>,
    /// Everything written to standard output.
    pub stdout: Vec<u8>,
    /// The lines written to standard error, each ending in a newline.
    pub stderr: String,
}

/// A running `zmtp`, its standard output and error read by threads.
pub struct Running {
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr_lines: mpsc::Receiver<String>,
    stderr: Vec<String>,
    started: Instant,
    /// The arguments, for failure messages.
    what: String,
}

/// Start `zmtp` with `args`, writing `stdin` (if any) to its standard input.
pub fn spawn_os(args: &[OsString], stdin: Option<&[u8]>) -> Running {
    spawn_os_env(args, stdin, &[])
}

/// [`spawn_os`] with these variables added to its environment.
pub fn spawn_os_env(args: &[OsString], stdin: Option<&[u8]>, env: &[(&str, &OsStr)]) -> Running {
    let mut child = Command::new(zmtp())
        .args(args)
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zmtp");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let mut out = child.stdout.take().expect("stdout");
    let stdout = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err = child.stderr.take().expect("stderr");
    let (tx, stderr_lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    Running {
        child,
        stdout: Some(stdout),
        stderr_lines,
        stderr: Vec::new(),
        started: Instant::now(),
        what: format!("{args:?}"),
    }
}

/// [`spawn_os`] with arguments that are text.
pub fn spawn(args: &[&str], stdin: Option<&[u8]>) -> Running {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    spawn_os(&args, stdin)
}

/// [`spawn`] without standard input, with these variables added to its environment.
pub fn spawn_env(args: &[&str], env: &[(&str, &OsStr)]) -> Running {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    spawn_os_env(&args, None, env)
}

impl Running {
    /// The endpoint the binary reports as bound (`-v` prints `zmtp: bound EP`).
    pub fn bound_endpoint(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.strip_prefix("zmtp: bound ").map(str::to_string);
                    self.stderr.push(line);
                    if let Some(ep) = found {
                        return ep;
                    }
                }
                Err(_) => {
                    let _ = self.child.kill();
                    panic!(
                        "{}: no bound endpoint reported; stderr: {:?}",
                        self.what, self.stderr
                    );
                }
            }
        }
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Wait for the exit (killing the process after `LIMIT`) and collect the output.
    pub fn finish(mut self) -> Outcome {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if self.started.elapsed() > LIMIT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "zmtp still running after {LIMIT:?}; stderr: {:?}",
                    self.stderr
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let stdout = self
            .stdout
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default();
        // The writer is gone: the reader thread ends at end of file.
        while let Ok(line) = self.stderr_lines.recv_timeout(Duration::from_secs(2)) {
            self.stderr.push(line);
        }
        let mut stderr = self.stderr.join("\n");
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        Outcome {
            code: status.code(),
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `zmtp` to its end.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Outcome {
    spawn(args, stdin).finish()
}

/// Assert a successful run.
pub fn ok(outcome: &Outcome) {
    assert_eq!(outcome.code, Some(0), "zmtp failed: {outcome:?}");
}

/// `zmtp send -t push -c endpoint hello world`, asserted successful: the message
/// `[hello, world]` every "our PUSH to their PULL" test sends.
pub fn push_hello_world(endpoint: &str) -> Outcome {
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            endpoint,
            "--timeout",
            GUARD,
            "hello",
            "world",
        ],
        None,
    );
    ok(&out);
    out
}

/// Assert that `args` is bad usage: exit 1, nothing on standard output, and one line on
/// standard error that contains `needle`.
pub fn usage_fails(args: &[OsString], needle: &str) {
    let out = spawn_os(args, None).finish();
    assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
    assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:?}");
    assert!(
        out.stderr.contains(needle),
        "{args:?}: {needle:?} not in {out:?}"
    );
}
