//! `wss://` endpoints of the `zmtp` binary, ours to ours (libzmq 4.3.5's wss needs GnuTLS,
//! which the test peer does not have): `--tls-cert`/`--tls-key` on the binding side,
//! `--tls-ca` on the connecting side, with the test certificates of the workspace (a CA,
//! and a server certificate it signed for `localhost` and `127.0.0.1`).

mod common;

use std::ffi::OsString;
use std::path::PathBuf;

use common::{ok, run, spawn, text, usage_fails, GUARD};

/// One of the test certificate files.
fn cert(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "testkit", "tls", name]
        .iter()
        .collect();
    path.display().to_string()
}

/// A REP echo bound on `wss://127.0.0.1:*` with the server certificate; its endpoint.
fn rep_echo() -> (common::Running, String) {
    let (c, k) = (cert("server.pem"), cert("server.key"));
    let mut rep = spawn(
        &[
            "recv",
            "-t",
            "rep",
            "--echo",
            "-n",
            "1",
            "-b",
            "wss://127.0.0.1:*",
            "-v",
            "--tls-cert",
            &c,
            "--tls-key",
            &k,
            "--timeout",
            GUARD,
        ],
        None,
    );
    let endpoint = rep.bound_endpoint();
    (rep, endpoint)
}

#[test]
fn req_to_rep_echo_over_wss_by_name() {
    let (rep, endpoint) = rep_echo();
    assert!(endpoint.starts_with("wss://127.0.0.1:"), "{endpoint}");
    // By name: the certificate is for localhost too.
    let port = endpoint.rsplit(':').next().unwrap();
    let ca = cert("ca.pem");
    let to = format!("wss://localhost:{port}/echo");
    let out = run(
        &[
            "send",
            "-t",
            "req",
            "-c",
            &to,
            "--tls-ca",
            &ca,
            "--timeout",
            GUARD,
            "hello",
            "tls",
        ],
        None,
    );
    ok(&out);
    assert_eq!(text(&out.stdout), "hello\ttls\n");
    let echoed = rep.finish();
    ok(&echoed);
    assert_eq!(text(&echoed.stdout), "hello\ttls\n");
}

#[test]
fn an_untrusted_server_gets_nothing_and_the_sender_says_why() {
    let (rep, endpoint) = rep_echo();
    let other = cert("other-ca.pem");
    let expected = format!(
        "zmtp: cannot connect to {endpoint}: TLS: invalid peer certificate: UnknownIssuer \
         (is --tls-ca the CA that signed the server's certificate?)\n"
    );
    // A REQ waits for its reply until --timeout; a PUSH lingers (--linger) until then.
    for ty in ["req", "push"] {
        let out = run(
            &[
                "send",
                "-t",
                ty,
                "-c",
                &endpoint,
                "--tls-ca",
                &other,
                "--timeout",
                "1500",
                "secret",
            ],
            None,
        );
        // Every attempt failed the same way: a runtime failure (exit 2) with TLS's reason,
        // not a timeout or undelivered messages.
        assert_eq!(out.code, Some(2), "{ty}: {out:?}");
        assert!(out.stdout.is_empty(), "{ty}: {out:?}");
        assert_eq!(out.stderr, expected, "{ty}");
    }
    drop(rep);
}

#[test]
fn a_name_the_certificate_lacks_is_named() {
    let (c, k) = (cert("server.pem"), cert("server.key"));
    // On every local address, so that 127.0.0.2, which the certificate lacks, reaches it.
    let mut pull = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "wss://0.0.0.0:*",
            "-v",
            "--tls-cert",
            &c,
            "--tls-key",
            &k,
            "--timeout",
            GUARD,
        ],
        None,
    );
    let endpoint = pull.bound_endpoint();
    let port = endpoint.rsplit(':').next().unwrap();
    let ca = cert("ca.pem");
    let to = format!("wss://127.0.0.2:{port}");
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &to,
            "--tls-ca",
            &ca,
            "--timeout",
            "1500",
            "x",
        ],
        None,
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "zmtp: cannot connect to {to}: TLS: invalid peer certificate: certificate not \
             valid for name \"127.0.0.2\"; certificate is only valid for \
             DnsName(\"localhost\"), IpAddress(127.0.0.1) or IpAddress(0::1) (connect by a \
             name the server's certificate has)\n"
        )
    );
    drop(pull);
}

#[test]
fn tls_options_are_checked() {
    let args = |list: &[&str]| -> Vec<OsString> { list.iter().map(OsString::from).collect() };
    let c = cert("server.pem");
    usage_fails(
        &args(&[
            "recv",
            "-t",
            "pull",
            "-b",
            "wss://127.0.0.1:*",
            "--tls-cert",
            &c,
        ]),
        "--tls-key",
    );
    usage_fails(
        &args(&[
            "recv",
            "-t",
            "pull",
            "-b",
            "wss://127.0.0.1:*",
            "--tls-cert",
            &c,
            "--tls-key",
            "/nonexistent/key.pem",
        ]),
        "/nonexistent/key.pem",
    );
    usage_fails(
        &args(&[
            "send",
            "-t",
            "push",
            "-c",
            "wss://127.0.0.1:1",
            "--tls-ca",
            "/nonexistent/ca.pem",
            "x",
        ]),
        "bad --tls-ca: /nonexistent/ca.pem",
    );
    // Binding wss:// without a certificate is a runtime failure that says why.
    let out = run(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "wss://127.0.0.1:*",
            "--timeout",
            "500",
        ],
        None,
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("certificate"), "{out:?}");
}

#[test]
fn proxy_with_a_wss_frontend() {
    let (c, k, ca) = (cert("server.pem"), cert("server.key"), cert("ca.pem"));
    let mut proxy = spawn(
        &[
            "proxy",
            "-t",
            "pull",
            "-b",
            "wss://127.0.0.1:*",
            "-T",
            "push",
            "-B",
            "tcp://127.0.0.1:*",
            "--control",
            "tcp://127.0.0.1:*",
            "--tls-cert",
            &c,
            "--tls-key",
            &k,
            "-v",
        ],
        None,
    );
    let (front, back, control) = (
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
    );
    assert!(front.starts_with("wss://"), "{front}");
    let recv = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-n",
            "1",
            "-c",
            &back,
            "--timeout",
            GUARD,
        ],
        None,
    );
    let sent = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &front,
            "--tls-ca",
            &ca,
            "--timeout",
            GUARD,
            "via",
            "wss",
        ],
        None,
    );
    ok(&sent);
    let got = recv.finish();
    ok(&got);
    assert_eq!(text(&got.stdout), "via\twss\n");
    ok(&run(
        &[
            "send",
            "-t",
            "req",
            "-c",
            &control,
            "--timeout",
            GUARD,
            "TERMINATE",
        ],
        None,
    ));
    ok(&proxy.finish());
}
