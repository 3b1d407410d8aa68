//! A REQ client built on the core's socket layer alone: `std::net` streams, one `poll(2)`
//! loop, no driver crate and no async runtime.
//!
//! ```text
//! cargo run -p zmtp-proto --example req_client -- [--requests N] [--timeout-ms MS] ENDPOINT...
//! ```
//!
//! It connects to every ENDPOINT (`tcp://host:port` or `ipc://path`; any REP or ROUTER
//! server, libzmq's included), sends N requests one after the other, prints each reply,
//! and exits. Servers may come and go: the socket reconnects by itself, a request not
//! answered within the timeout is sent again (to the next server, when there are several),
//! and heartbeats notice a server that went silent. The loop follows the calling contract
//! of `zmtp_proto::socket` (see the book's chapter "Embedding the core"):
//!
//! 1. carry out the socket's commands (connect, close a peer) and read its monitor events;
//! 2. let the application receive everything there is, then send;
//! 3. write what the socket has for each peer;
//! 4. wait in `poll(2)` for the streams and the earliest deadline (the socket's timer or
//!    the application's);
//! 5. feed what was read to the socket, and fire its timer when due. Back to 1.

use std::io;
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::socket::{Options, SendError, Socket};
use zmtp_proto::SocketType;

#[path = "common/mod.rs"]
mod common;
use common::{random_seed, Driver};

/// What the client does.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The servers to connect to.
    pub endpoints: Vec<String>,
    /// How many requests to send.
    pub requests: usize,
    /// How long to wait for a reply before sending the request again.
    pub timeout: Duration,
    /// Give up after this many sends of one request.
    pub attempts: usize,
}

/// Run the client: every reply, in order.
pub fn run_client(config: &ClientConfig) -> io::Result<Vec<String>> {
    // The socket: libzmq's options by their names. IMMEDIATE routes requests to connected
    // servers only; REQ_RELAXED and REQ_CORRELATE let a request be sent again while the
    // first is unanswered (a late reply to the first is then dropped). Heartbeats detect a
    // server that stopped answering, and give the socket a timer of its own.
    let mut options = Options::default()
        .with_immediate(true)
        .with_heartbeat_ivl(Some(Duration::from_millis(500)))
        .with_heartbeat_timeout(Some(Duration::from_millis(1500)))
        .with_linger(Some(Duration::from_secs(1)));
    options.req_relaxed = true;
    options.req_correlate = true;
    let socket = Socket::new(SocketType::Req, options, random_seed()).map_err(io::Error::other)?;
    let mut client = Driver::new(socket);
    for endpoint in &config.endpoints {
        client.socket.connect(endpoint).map_err(io::Error::other)?;
    }

    let mut replies = Vec::new();
    // The request in flight; its deadline is `None` while it waits to be sent (again).
    let mut request: Option<Request> = None;
    loop {
        // (1) Commands and monitor events queued by the last round's calls.
        client.run_commands()?;

        // (2) The application: take every reply there is before deciding what to send.
        while let Some(reply) = client.socket.recv(client.now()) {
            let text = String::from_utf8_lossy(&reply.frames().concat()).into_owned();
            println!("reply: {text}");
            replies.push(text);
            request = None;
        }
        if replies.len() == config.requests {
            break;
        }
        let current = request.get_or_insert_with(|| Request {
            text: format!("request {}", replies.len() + 1),
            sends: 0,
            deadline: None,
        });
        if current.deadline.is_some_and(|at| StdInstant::now() >= at) {
            if current.sends >= config.attempts {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no reply to {:?} after {} sends",
                        current.text, current.sends
                    ),
                ));
            }
            eprintln!("no reply to {:?} yet: sending it again", current.text);
            current.deadline = None;
        }
        if current.deadline.is_none() {
            let now = client.now();
            match client.socket.send(current.text.as_str(), now) {
                Ok(_) => {
                    current.sends += 1;
                    current.deadline = Some(StdInstant::now() + config.timeout);
                }
                // No server connected yet: try again in a moment.
                Err(SendError::WouldBlock(_)) => {}
                Err(e) => return Err(io::Error::other(format!("send: {e:?}"))),
            }
            // A call can queue commands: carry them out before waiting.
            client.run_commands()?;
        }

        // (3) and (4): write, then wait for the streams or the earliest deadline (while
        // the request waits for a server, a short one, to try again).
        let app_deadline = current
            .deadline
            .unwrap_or_else(|| StdInstant::now() + Duration::from_millis(50));
        client.write_all();
        client.wait(Some(app_deadline))?;
    }
    client.close()?;
    Ok(replies)
}

/// A request of the application, and where it stands.
struct Request {
    text: String,
    /// How many times it was sent.
    sends: usize,
    /// When to give up waiting for its reply; `None` while it waits to be sent.
    deadline: Option<StdInstant>,
}

#[allow(dead_code)] // The tests call `run_client` directly.
fn main() -> io::Result<()> {
    let mut config = ClientConfig {
        endpoints: Vec::new(),
        requests: 10,
        timeout: Duration::from_millis(2500),
        attempts: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> io::Result<u64> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{name} N")))
        };
        match arg.as_str() {
            "--requests" => config.requests = number("--requests")? as usize,
            "--timeout-ms" => config.timeout = Duration::from_millis(number("--timeout-ms")?),
            _ => config.endpoints.push(arg),
        }
    }
    if config.endpoints.is_empty() {
        eprintln!("usage: req_client [--requests N] [--timeout-ms MS] ENDPOINT...");
        std::process::exit(1);
    }
    run_client(&config).map(|_| ())
}
