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

/// Run the example `name`, a program that sends "0", "1", … to the endpoint given as its
/// first argument (as many as its second) and ends, against a PULL of the blocking
/// driver; assert that every message arrives, in order, for one message and for many.
pub fn sends_and_exits_delivering_everything(name: &str) {
    use zmtp_mio::{Context, SocketType};

    let ctx = Context::new().expect("context");
    for count in [1u32, 100_000] {
        let pull = ctx.socket(SocketType::Pull).expect("PULL");
        let endpoint = pull.bind("tcp://127.0.0.1:*").expect("bind");
        let program = example(name);
        let child = Command::new(&program)
            .args([endpoint.as_str(), &count.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("example {name} did not start: {e}"));
        let mut got = 0u32;
        while got < count {
            match pull.recv_timeout(Some(Duration::from_secs(20))) {
                Ok(msg) => {
                    let text = String::from_utf8_lossy(&msg.frames()[0]).into_owned();
                    assert_eq!(text, got.to_string(), "{name}: message {got} of {count}");
                    got += 1;
                }
                Err(e) => panic!("{name}: {got} of {count} messages arrived ({e})"),
            }
        }
        let output = child.wait_with_output().expect("the example ends");
        assert!(
            output.status.success(),
            "{name} {count}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        // Nothing after the last one.
        assert!(matches!(
            pull.recv_timeout(Some(Duration::from_millis(50))),
            Err(zmtp_mio::Error::Timeout)
        ));
    }
}
