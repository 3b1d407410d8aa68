//! The example programs of a crate, run by its tests as the separate processes they are.
//!
//! `cargo test` builds a package's examples before running its tests, into the
//! `examples` folder beside the folder of the test binaries; [`example`] finds one there.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The path of the example program `name` of the package whose test calls this.
///
/// Panics (failing the test) when it was not built: run the package's tests with a plain
/// `cargo test -p PACKAGE`, which builds its examples, not `--test NAME` alone (or build
/// them first with `cargo build -p PACKAGE --examples`).
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary> → target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary sits in <target>/<profile>/deps")
        .join("examples");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "example {name} was not built (looked in {}): run `cargo test -p PACKAGE` (or build it first with `cargo build -p PACKAGE --examples`)",
        dir.display()
    );
    path
}

/// How long an example may run in [`run_example`].
pub const EXAMPLE_LIMIT: Duration = Duration::from_secs(60);

/// Run example `name` with `args` to its end, at most [`EXAMPLE_LIMIT`], and return its
/// standard output; panics (failing the test) with its output if it fails or does not
/// end in time.
pub fn run_example(name: &str, args: &[&str]) -> String {
    let mut child = Command::new(example(name))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("example {name} did not start: {e}"));
    // Read both pipes while the program runs, so that it never blocks on a full one.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + EXAMPLE_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the example's status") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    match status {
        Some(status) if status.success() => stdout,
        Some(status) => panic!(
            "example {name} {args:?} failed ({status}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ),
        None => panic!(
            "example {name} {args:?} did not end within {EXAMPLE_LIMIT:?}:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ),
    }
}

/// The transports a program that sends and returns from `main` is run over.
pub const EXIT_TRANSPORTS: [&str; 4] = ["tcp", "ipc", "ws", "wss"];

/// A PULL of the blocking driver bound on a fresh endpoint of `transport` (`wss` with
/// the test certificate): the PULL and the endpoint to connect to.
fn bound_pull(ctx: &zmtp_mio::Context, transport: &str) -> (zmtp_mio::Socket, String) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use zmtp_mio::{SocketType, Tls};

    // Abstract names of this process, never twice (tests run side by side).
    static NAMES: AtomicUsize = AtomicUsize::new(0);
    let n = NAMES.fetch_add(1, Ordering::Relaxed);

    let pull = ctx.socket(SocketType::Pull).expect("PULL");
    let endpoint = match transport {
        "tcp" => "tcp://127.0.0.1:*".to_string(),
        "ipc" => format!("ipc://@zmtp-exit-{}-{n}", std::process::id()),
        "ws" => "ws://127.0.0.1:*".to_string(),
        "wss" => {
            let tls = Tls::new()
                .with_identity_pem(crate::tls::SERVER_CERT, crate::tls::SERVER_KEY)
                .expect("the test identity");
            pull.set_tls(tls);
            "wss://127.0.0.1:*".to_string()
        }
        other => panic!("no transport {other}"),
    };
    let bound = pull.bind(&endpoint).expect("bind");
    (pull, bound)
}

/// Start example `name` with `args` and the environment `env`, its output piped; for
/// `wss://` it trusts the test CA.
fn start(name: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    Command::new(example(name))
        .args(args)
        .env("ZMTP_EXAMPLE_CA", crate::tls::path("ca.pem"))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("example {name} did not start: {e}"))
}

/// Run the example `name`, a program that sends "0", "1", … to the endpoint given as its
/// first argument (as many as its second) and returns from `main` without closing
/// anything, against a PULL of the blocking driver, over each of [`EXIT_TRANSPORTS`];
/// assert that every message arrives, in order, for 1, 500 and 100,000 messages, and that
/// the program says nothing on standard error.
pub fn sends_and_exits_delivering_everything(name: &str) {
    sends_and_exits_delivering_everything_with(name, &[]);
}

/// [`sends_and_exits_delivering_everything`] with `env` in the program's environment.
pub fn sends_and_exits_delivering_everything_with(name: &str, env: &[(&str, &str)]) {
    let ctx = zmtp_mio::Context::new().expect("context");
    for transport in EXIT_TRANSPORTS {
        for count in [1u32, 500, 100_000] {
            let (pull, endpoint) = bound_pull(&ctx, transport);
            let child = start(name, &[endpoint.as_str(), &count.to_string()], env);
            let mut got = 0u32;
            while got < count {
                match pull.recv_timeout(Some(Duration::from_secs(20))) {
                    Ok(msg) => {
                        let text = String::from_utf8_lossy(&msg.frames()[0]).into_owned();
                        assert_eq!(
                            text,
                            got.to_string(),
                            "{name} over {endpoint}: message {got} of {count}"
                        );
                        got += 1;
                    }
                    Err(e) => {
                        panic!("{name} over {endpoint}: {got} of {count} messages arrived ({e})")
                    }
                }
            }
            let output = child.wait_with_output().expect("the example ends");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.success(),
                "{name} {endpoint} {count}: {}\n{stderr}",
                output.status,
            );
            assert_eq!(stderr, "", "{name} {endpoint} {count}: nothing was lost");
            // Nothing after the last one.
            assert!(matches!(
                pull.recv_timeout(Some(Duration::from_millis(50))),
                Err(zmtp_mio::Error::Timeout)
            ));
        }
    }
}

/// Run the example `name` (as [`sends_and_exits_delivering_everything`]) with LINGER
/// 100 ms against an endpoint of each transport where nobody listens: assert that it
/// exits within about 100 ms of LINGER (not at once: LINGER is honoured; not much later:
/// nothing else waits) and that standard error names the socket, the endpoint, the
/// number of messages lost and why (the connects were refused).
pub fn lingers_and_reports_what_was_lost(name: &str) {
    let ctx = zmtp_mio::Context::new().expect("context");
    for transport in EXIT_TRANSPORTS {
        // A fresh endpoint, bound and let go: nobody listens there.
        let (pull, endpoint) = bound_pull(&ctx, transport);
        pull.unbind(&endpoint).expect("unbind");
        drop(pull);
        let started = Instant::now();
        let child = start(name, &[endpoint.as_str(), "500", "100"], &[]);
        let output = child.wait_with_output().expect("the example ends");
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{name} {endpoint}: {}\n{stderr}",
            output.status
        );
        // The line names why: the endpoint's connects were refused.
        let line = stderr.trim_end();
        let (head, tail) = (
            format!(
                "zmtp: a PUSH socket lost 500 message(s) for {endpoint} (its last attempt failed: "
            ),
            "): LINGER (100 ms) ran out before they were written",
        );
        let why = line
            .strip_prefix(head.as_str())
            .and_then(|rest| rest.strip_suffix(tail))
            .unwrap_or_else(|| panic!("{name} over {transport}: {line}"));
        assert!(
            why.to_lowercase().contains("refused") || why.contains("No such file"),
            "{name} over {transport}: {line}"
        );
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_millis(1500),
            "{name} over {transport} took {took:?}"
        );
    }
}
