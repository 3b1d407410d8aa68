//! Every example of the crate, run as the program it is: it must end successfully within
//! its time, and print the results it exists to show.
//!
//! `cargo test -p zmtp-smol` builds the examples first; with `--test examples` alone,
//! build them with `cargo build -p zmtp-smol --examples`.

/// Run example `name` to its end and return its standard output.
fn run(name: &str) -> String {
    zmtp_testkit::programs::run_example(name, &[])
}

#[test]
fn push_pull_and_req_rep_deliver() {
    let out = run("smol_push_pull");
    assert!(out.contains("PULL got \"task\""), "{out}");
    assert!(out.contains("REQ got \"ping\""), "{out}");
}
