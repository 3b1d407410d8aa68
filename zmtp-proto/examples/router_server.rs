//! A ROUTER server built on the core's socket layer alone: `std::net` streams, one
//! `poll(2)` loop, no driver crate and no async runtime.
//!
//! ```text
//! cargo run -p zmtp-proto --example router_server -- [--delay-ms MS] [--replies N] ENDPOINT...
//! ```
//!
//! It binds every ENDPOINT (`tcp://*:5555`, `tcp://127.0.0.1:*`, `ipc:///tmp/server`) and
//! serves any number of clients at once (REQ or DEALER, ours or libzmq's): each request is
//! answered with the same frames, after `--delay-ms` (default 0), each reply on an
//! application timer of its own, while other requests keep coming in. With `--replies N`
//! it stops after N replies; otherwise it runs until killed. The loop is the one in
//! `common/mod.rs`, which `req_client.rs` uses too.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::{Message, Options, Socket};
use zmtp_proto::SocketType;

#[path = "common/mod.rs"]
mod common;
use common::{random_seed, Driver};

/// What the server does.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// Where to listen.
    pub endpoints: Vec<String>,
    /// How long each reply waits before it is sent.
    pub delay: Duration,
    /// Stop after this many replies (`None`: never).
    pub replies: Option<usize>,
    /// Where to send the endpoints as bound (the ports the system chose), once they are.
    pub bound: Option<Sender<Vec<String>>>,
}

/// What the server did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Replies sent.
    pub replies: usize,
    /// The distinct clients (routing ids) that sent requests.
    pub clients: usize,
}

/// Run the server until it has sent `config.replies` replies.
pub fn run_server(config: &ServerConfig) -> io::Result<ServerStats> {
    let options = Options::default()
        .with_heartbeat_ivl(Some(Duration::from_millis(500)))
        .with_heartbeat_timeout(Some(Duration::from_millis(1500)))
        .with_linger(Some(Duration::from_secs(1)));
    let socket =
        Socket::new(SocketType::Router, options, random_seed()).map_err(io::Error::other)?;
    let mut server = Driver::new(socket);

    // Bind each endpoint: the socket asks for a listener (step 1 carries it out), and says
    // where it is bound once it is.
    let mut bound = Vec::new();
    for endpoint in &config.endpoints {
        server.socket.bind(endpoint).map_err(io::Error::other)?;
        server.run_commands()?;
        bound.push(server.socket.last_endpoint().to_string());
    }
    println!("listening on {}", bound.join(" "));
    if let Some(tx) = &config.bound {
        let _ = tx.send(bound);
    }

    // Replies waiting for their time, in the order they are due (every one waits the same).
    let mut due: VecDeque<(StdInstant, Message)> = VecDeque::new();
    let mut clients: Vec<Vec<u8>> = Vec::new();
    let mut stats = ServerStats::default();
    while config.replies.is_none_or(|n| stats.replies < n) {
        // (1) Commands and monitor events.
        server.run_commands()?;

        // (2) The application: every request there is, then the replies that are due.
        while let Some(request) = server.socket.recv(server.now()) {
            // A ROUTER's message starts with the client's routing id; a REQ client's
            // request then has an empty delimiter frame. The reply keeps both.
            if let Some(id) = request.first() {
                if !clients.iter().any(|c| c[..] == id[..]) {
                    clients.push(id.to_vec());
                    stats.clients = clients.len();
                }
            }
            due.push_back((StdInstant::now() + config.delay, request));
        }
        while due.front().is_some_and(|(at, _)| *at <= StdInstant::now()) {
            let (_, reply) = due.pop_front().expect("a reply is due");
            // A ROUTER drops a reply to a client that has gone (`Sent::Dropped`); it
            // never refuses one, so there is nothing to retry.
            server
                .socket
                .send(reply, server.now())
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
            stats.replies += 1;
            server.run_commands()?;
        }
        if config.replies.is_some_and(|n| stats.replies >= n) {
            break;
        }

        // (3) and (4): write, then wait for the streams, new connections, the socket's
        // timer or the next reply's.
        server.write_all();
        server.wait(due.front().map(|(at, _)| *at))?;
    }
    server.close()?;
    Ok(stats)
}

#[allow(dead_code)] // The tests call `run_server` directly.
fn main() -> io::Result<()> {
    let mut config = ServerConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> io::Result<u64> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{name} N")))
        };
        match arg.as_str() {
            "--delay-ms" => config.delay = Duration::from_millis(number("--delay-ms")?),
            "--replies" => config.replies = Some(number("--replies")? as usize),
            _ => config.endpoints.push(arg),
        }
    }
    if config.endpoints.is_empty() {
        eprintln!("usage: router_server [--delay-ms MS] [--replies N] ENDPOINT...");
        std::process::exit(1);
    }
    let stats = run_server(&config)?;
    println!("{} replies to {} clients", stats.replies, stats.clients);
    Ok(())
}
