//! Every example of the crate, run as the program it is: it must end successfully within
//! its time, and print the results it exists to show.
//!
//! `cargo test -p zmtp-smol` builds the examples first; with `--test examples` alone,
//! build them with `cargo build -p zmtp-smol --examples`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run example `name` to its end (at most 60 s) and return its standard output; fails
/// the test, with the program's output, if it fails or does not end.
fn run(name: &str) -> String {
    let mut child = Command::new(zmtp_testkit::programs::example(name))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("example {name} did not start: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("the example's status").is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            let output = child.wait_with_output().expect("the example's output");
            panic!(
                "example {name} did not end within 60 s:\n{}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the example's output");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "example {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn push_pull_and_req_rep_deliver() {
    let out = run("smol_push_pull");
    assert!(out.contains("PULL got \"task\""), "{out}");
    assert!(out.contains("REQ got \"ping\""), "{out}");
}
