//! Every example of the crate, run as the program it is: it must end successfully within
//! its time, and print the results it exists to show.
//!
//! `cargo test -p zmtp-tokio` builds the examples first; with `--test examples` alone,
//! build them with `cargo build -p zmtp-tokio --examples`.

/// Run example `name` to its end and return its standard output.
fn run(name: &str) -> String {
    zmtp_testkit::programs::run_example(name, &[])
}

fn count(output: &str, line: &str) -> usize {
    output.lines().filter(|l| l.contains(line)).count()
}

#[test]
fn push_pull_delivers_every_task() {
    let out = run("tokio_push_pull");
    for i in 0..5 {
        assert!(out.contains(&format!("PULL got \"task {i}\"")), "{out}");
    }
}

#[test]
fn hello_world_gets_ten_replies() {
    let out = run("tokio_hello_world");
    assert_eq!(count(&out, "server: received \"Hello\""), 10, "{out}");
    assert_eq!(count(&out, ": World"), 10, "{out}");
    assert!(out.contains("10 requests answered"), "{out}");
}

#[test]
fn weather_subscriber_gets_only_its_zip_codes_once_the_publisher_saw_it_join() {
    let out = run("tokio_weather");
    assert!(out.contains("an update sent right away: Dropped"), "{out}");
    assert!(out.contains("subscription \"1001\" arrived"), "{out}");
    let updates: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once("subscriber: update ").map(|(_, u)| u))
        .collect();
    assert_eq!(updates.len(), 20, "{out}");
    for update in updates {
        let zip = update.split(' ').nth(1).expect("a zip code");
        assert!(zip.starts_with("1001"), "{update} in\n{out}");
    }
    assert!(
        out.contains("average temperature for zip codes 1001*"),
        "{out}"
    );
}

#[test]
fn load_balancing_broker_answers_every_client_through_the_workers() {
    let out = run("tokio_lbbroker");
    for n in 0..3 {
        assert!(
            out.contains(&format!("broker: worker-{n} is ready")),
            "{out}"
        );
    }
    for n in 0..10 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("client-{n}: ")))
            .unwrap_or_else(|| panic!("client-{n} got no reply:\n{out}"));
        assert!(line.contains(": OK from worker-"), "{line}");
    }
    assert_eq!(count(&out, ": \"HELLO\""), 10, "{out}");
    assert!(out.contains("10 clients answered"), "{out}");
}

#[test]
fn monitor_shows_a_connection_from_listening_to_disconnected() {
    let out = run("tokio_monitor");
    for event in [
        "server: LISTENING tcp://127.0.0.1:",
        "server: ACCEPTED ",
        "server: HANDSHAKE_SUCCEEDED ",
        "server: DISCONNECTED ",
        "client: CONNECTED ",
        "client: HANDSHAKE_SUCCEEDED ",
        "client: monitor ended",
    ] {
        assert!(out.contains(event), "no {event:?} in\n{out}");
    }
}

#[test]
fn curve_admits_the_known_key_and_refuses_a_stranger() {
    let out = run("tokio_curve_push_pull");
    let key = |label: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap_or_else(|| panic!("no {label:?} in\n{out}"))
            .to_owned()
    };
    let (server, client) = (key("server public key: "), key("client public key: "));
    assert_eq!(server.len(), 40, "{out}");
    assert_eq!(client.len(), 40, "{out}");
    assert!(
        out.contains("stranger: refused by the server (status 400)"),
        "{out}"
    );
    for n in 1..=3 {
        assert!(
            out.contains(&format!("server: \"secret {n}\" from {client}")),
            "{out}"
        );
    }
}

#[test]
fn plain_admits_the_right_password_and_refuses_a_wrong_one() {
    let out = run("tokio_plain_push_pull");
    assert!(
        out.contains("intruder: password refused (status 400)"),
        "{out}"
    );
    assert!(out.contains("server: \"Hello\" from user admin"), "{out}");
}

#[test]
fn proxy_forwards_subscriptions_up_and_updates_down() {
    let out = run("tokio_proxy");
    assert!(
        out.contains("proxy: subscribe \"weather\" (upstream)"),
        "{out}"
    );
    let updates: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("subscriber: "))
        .filter(|l| !l.contains("through the proxy"))
        .collect();
    assert!(updates.len() >= 6, "{out}");
    assert!(updates.iter().all(|u| u.starts_with("weather ")), "{out}");
    for name in ["publisher-1", "publisher-2"] {
        assert!(updates.iter().any(|u| u.ends_with(name)), "{out}");
    }
}
