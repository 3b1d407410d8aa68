//! Every example of the crate, run as the program it is: it must end successfully within
//! its time, and print the results it exists to show.
//!
//! `cargo test -p zmtp-mio` builds the examples first; with `--test examples` alone,
//! build them with `cargo build -p zmtp-mio --examples`.

/// Run example `name` to its end and return its standard output.
fn run(name: &str) -> String {
    zmtp_testkit::programs::run_example(name, &[])
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
