//! A web page that talks ZMTP to our sockets over WebSocket.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_browser [HTTP_PORT [REP_PORT [PUB_PORT
//! [WSS_PORT]]]]` (defaults 8080, 5555, 5556 and 5557; 0 lets the system pick), then open
//! the printed URL.
//!
//! The program binds a REP that echoes every request on `ws://127.0.0.1:REP_PORT`, the same
//! REP on `wss://127.0.0.1:WSS_PORT` (TLS with the workspace's test certificate for
//! `127.0.0.1`, signed by a test CA a browser does not know: open the `wss://` address
//! once and accept it, or start the browser trusting it), and a PUB on
//! `ws://127.0.0.1:PUB_PORT` that publishes `news N` and `sport N` every 250 ms, and
//! serves the page of `examples/browser/` over plain HTTP. The page's JavaScript
//! (`zws.js`, about a hundred lines) speaks ZWS 2.0 with the NULL mechanism itself: a REQ
//! sends "hello from the browser" and shows the reply, a SUB subscribes to `news` and lists
//! what arrives. It learns the ws ports from its query string. Stop the program with
//! Ctrl-C.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use zmtp_tokio::{Socket, SocketType, Tls};

/// The page and its script, built into the program.
const INDEX_HTML: &str = include_str!("../../examples/browser/index.html");
const ZWS_JS: &str = include_str!("../../examples/browser/zws.js");
/// The test certificate for `127.0.0.1` (and `localhost`) and its key.
const CERT: &[u8] = include_bytes!("../../testkit/tls/server.pem");
const KEY: &[u8] = include_bytes!("../../testkit/tls/server.key");

/// How often the PUB publishes.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut ports = [8080u16, 5555, 5556, 5557];
    for (port, arg) in ports.iter_mut().zip(std::env::args().skip(1)) {
        *port = arg
            .parse()
            .map_err(|_| format!("{arg:?} is not a port number"))?;
    }
    let [http_port, rep_port, pub_port, wss_port] = ports;

    let rep = Socket::new(SocketType::Rep)?;
    let rep_endpoint = rep.bind(&ws_endpoint("ws", rep_port)).await?;
    rep.set_tls(Tls::new().with_identity_pem(CERT, KEY)?);
    let wss_endpoint = rep.bind(&ws_endpoint("wss", wss_port)).await?;
    let publisher = Socket::new(SocketType::Pub)?;
    let pub_endpoint = publisher.bind(&ws_endpoint("ws", pub_port)).await?;
    println!("REP echo bound to {rep_endpoint} and {wss_endpoint}");
    println!("PUB bound to {pub_endpoint}");

    let listener = TcpListener::bind(("127.0.0.1", http_port))?;
    let http_port = listener.local_addr()?.port();
    std::thread::spawn(move || serve_http(listener));
    println!(
        "open http://127.0.0.1:{http_port}/?rep={}&pub={}&wss={}",
        port_of(&rep_endpoint)?,
        port_of(&pub_endpoint)?,
        port_of(&wss_endpoint)?
    );

    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PUBLISH_EVERY);
        for n in 1u64.. {
            tick.tick().await;
            // A PUB drops what no subscriber wants: the page subscribed to "news" only.
            for topic in ["news", "sport"] {
                if let Err(e) = publisher.send(format!("{topic} {n}")).await {
                    eprintln!("PUB: {e}");
                    return;
                }
            }
        }
    });

    loop {
        let request = rep.recv().await?;
        let text: Vec<_> = request
            .frames()
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        println!("REP: echoing {text:?}");
        rep.send(request).await?;
    }
}

/// `SCHEME://127.0.0.1:PORT`, with `*` for port 0.
fn ws_endpoint(scheme: &str, port: u16) -> String {
    if port == 0 {
        format!("{scheme}://127.0.0.1:*")
    } else {
        format!("{scheme}://127.0.0.1:{port}")
    }
}

/// The port of a bound endpoint such as `ws://127.0.0.1:5555` or `ws://127.0.0.1:5555/`.
fn port_of(endpoint: &str) -> Result<u16, String> {
    let after_host = endpoint
        .rsplit_once(':')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let digits = after_host.split('/').next().unwrap_or_default();
    digits
        .parse()
        .map_err(|_| format!("no port in endpoint {endpoint:?}"))
}

/// Answer HTTP requests one at a time, for as long as the program runs.
fn serve_http(listener: TcpListener) {
    for stream in listener.incoming() {
        let result = stream.and_then(answer);
        if let Err(e) = result {
            eprintln!("HTTP: {e}");
        }
    }
}

/// Read one request head and answer it with HTTP/1.0: the page, its script, or 404.
fn answer(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (request_line.next(), request_line.next().unwrap_or_default());
    let path = target.split('?').next().unwrap_or_default();
    let (status, content_type, body) = match (method, path) {
        (Some("GET"), "/" | "/index.html") => ("200 OK", "text/html; charset=utf-8", INDEX_HTML),
        (Some("GET"), "/zws.js") => ("200 OK", "text/javascript; charset=utf-8", ZWS_JS),
        _ => ("404 Not Found", "text/plain; charset=utf-8", "not found\n"),
    };
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
