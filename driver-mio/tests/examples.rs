//! Every example of the crate, run as the program it is: it must end successfully within
//! its time, and print the results it exists to show.
//!
//! `cargo test -p zmtp-mio` builds the examples first; with `--test examples` alone,
//! build them with `cargo build -p zmtp-mio --examples`.

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

fn count(output: &str, line: &str) -> usize {
    output.lines().filter(|l| l.contains(line)).count()
}

#[test]
fn hello_world_gets_ten_replies() {
    let out = run("mio_hello_world");
    assert_eq!(count(&out, "server: received \"Hello\""), 10, "{out}");
    assert_eq!(count(&out, ": World"), 10, "{out}");
    assert!(out.contains("10 requests answered"), "{out}");
}

#[test]
fn lazy_pirate_retries_a_slow_request_and_gives_up_on_a_stopped_server() {
    let out = run("mio_lazy_pirate");
    for n in 1..=5 {
        assert!(
            out.contains(&format!("client: request {n}: server replied OK")),
            "{out}"
        );
    }
    assert!(
        out.contains("client: request 3: no response (attempt 1 of 3)"),
        "{out}"
    );
    for attempt in 1..=3 {
        let line = format!("client: request 6: no response (attempt {attempt} of 3)");
        assert!(out.contains(&line), "{out}");
    }
    assert!(
        out.contains("server seems to be offline, abandoning"),
        "{out}"
    );
    assert!(
        out.contains("answered [1, 2, 3, 4, 5], abandoned Some(6)"),
        "{out}"
    );
}
