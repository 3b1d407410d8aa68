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

/// The browser example's server, killed when dropped (it runs until stopped).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` from the HTTP server on `port`: the status line and the body.
fn http_get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("HTTP connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("HTTP response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response head");
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

#[tokio::test]
async fn browser_server_serves_the_page_and_answers_over_ws() {
    use std::io::BufRead;
    use std::time::Duration;
    use zmtp_tokio::{Socket, SocketType};

    let mut child = std::process::Command::new(zmtp_testkit::programs::example("tokio_browser"))
        .args(["0", "0", "0", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("tokio_browser starts");
    let stdout = child.stdout.take().expect("its stdout");
    let _running = Running(child);
    // The URL line, read on a thread so that a silent program fails the test in time.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Some(url) = line.strip_prefix("open ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("tokio_browser prints the page's URL");
    // http://127.0.0.1:HTTP/?rep=REP&pub=PUB
    let port = |after: &str, end: char| -> u16 {
        let rest = &url[url.find(after).expect(&url) + after.len()..];
        rest.split(end).next().unwrap().parse().expect(&url)
    };
    let (http, rep, publisher) = (
        port("127.0.0.1:", '/'),
        port("rep=", '&'),
        port("pub=", '&'),
    );

    let (status, page) = http_get(http, "/?rep=1&pub=2");
    assert!(status.contains(" 200 "), "{status}");
    assert!(page.contains("id=\"req-reply\""), "{page}");
    let (status, script) = http_get(http, "/zws.js");
    assert!(status.contains(" 200 "), "{status}");
    assert!(script.contains("class ZwsSocket"), "{script}");
    assert!(http_get(http, "/nothing").0.contains(" 404 "));

    let req = Socket::new(SocketType::Req).unwrap();
    req.connect(&format!("ws://127.0.0.1:{rep}")).unwrap();
    req.send("hello over ws").await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(10), req.recv_string())
        .await
        .expect("a reply in time")
        .unwrap();
    assert_eq!(reply, "hello over ws");

    let sub = Socket::new(SocketType::Sub).unwrap();
    sub.subscribe("news").unwrap();
    sub.connect(&format!("ws://127.0.0.1:{publisher}")).unwrap();
    for _ in 0..2 {
        let update = tokio::time::timeout(Duration::from_secs(10), sub.recv_string())
            .await
            .expect("an update in time")
            .unwrap();
        assert!(update.starts_with("news "), "{update}");
    }
}
