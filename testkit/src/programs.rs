//! The example programs of a crate, run by its tests as the separate processes they are.
//!
//! `cargo test` builds a package's examples before running its tests, into the
//! `examples` folder beside the folder of the test binaries; [`example`] finds one there.

use std::path::PathBuf;
use std::process::{Command, Output};

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

/// Run example `name` with `args` to its end; panics (failing the test) with its output
/// if it does not end successfully.
pub fn run_example(name: &str, args: &[&str]) -> Output {
    let output = Command::new(example(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("example {name} did not start: {e}"));
    assert!(
        output.status.success(),
        "example {name} {args:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Run the example `name`, a program that sends "0", "1", … to the endpoint given as its
/// first argument (as many as its second) and ends, against a PULL of the blocking
/// driver; assert that every message arrives, in order, for one message and for many.
pub fn sends_and_exits_delivering_everything(name: &str) {
    use std::time::Duration;
    use zmtp_mio::{Context, SocketType};

    let ctx = Context::new().expect("context");
    for count in [1u32, 100_000] {
        let pull = ctx.socket(SocketType::Pull).expect("PULL");
        let endpoint = pull.bind("tcp://127.0.0.1:*").expect("bind");
        let program = example(name);
        let child = Command::new(&program)
            .args([endpoint.as_str(), &count.to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
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
