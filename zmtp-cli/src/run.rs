//! `zmtp send` and `zmtp recv`: one socket, its endpoints, a watch on its monitor for
//! handshake and authentication failures, and an overall deadline.

use std::future::Future;
use std::io::{BufRead, Write};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use zmtp_tokio::{
    Authenticator, Bytes, Error, KeyPair, Message, Monitor, MonitorEvent, MonitorEventKind,
    Options, PublicKey, Security, Socket, SocketType,
};

use crate::args::{Direction, Role, SocketArgs};
use crate::{hex, print_stdout, Failure};

/// Write one line to standard error, ignoring failures (there is nowhere else to report).
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "zmtp: {line}");
}

/// `zmtp send`.
pub async fn send(args: SocketArgs) -> Result<(), Failure> {
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let (socket, monitor, watch) = before(deadline, args.timeout, open(&args)).await?;
    let input = match &args.frames {
        Some(frames) => Input::Frames(message(frames.iter().cloned())),
        None => Input::Lines(read_lines()?),
    };
    let count = args.count.unwrap_or(1);
    let request = args.ty == SocketType::Req;
    let (hex_in, hex_out) = (args.hex_frames, args.hex);
    let work = async move {
        match input {
            Input::Frames(msg) => {
                for _ in 0..count {
                    send_one(&socket, msg.clone(), request, hex_out).await?;
                }
            }
            Input::Lines(mut lines) => {
                let mut number = 0u64;
                while let Some(line) = lines.recv().await {
                    number += 1;
                    let line = line.map_err(|e| {
                        Failure::Runtime(format!("cannot read standard input: {e}"))
                    })?;
                    let msg = parse_line(&line, hex_in).map_err(|bad| {
                        Failure::Usage(format!(
                            "line {number} of standard input: frame '{}' is not hex",
                            String::from_utf8_lossy(&bad)
                        ))
                    })?;
                    for _ in 0..count {
                        send_one(&socket, msg.clone(), request, hex_out).await?;
                    }
                }
            }
        }
        // Linger: wait until what is queued is written, or LINGER runs out.
        socket.close().await;
        Ok(())
    };
    supervise(work, monitor, &watch, deadline, args.timeout).await
}

/// `zmtp recv`.
pub async fn recv(args: SocketArgs) -> Result<(), Failure> {
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let (socket, monitor, watch) = before(deadline, args.timeout, open(&args)).await?;
    let (count, echo, hex_out) = (args.count, args.echo, args.hex);
    let work = async move {
        let mut received = 0u64;
        while count.is_none_or(|c| received < c) {
            let msg = socket
                .recv()
                .await
                .map_err(|e| Failure::Runtime(format!("cannot receive: {e}")))?;
            print_message(msg.frames(), hex_out)?;
            if echo {
                // As received: ROUTER keeps the peer's identity frame, REP its envelope.
                socket
                    .send(msg)
                    .await
                    .map_err(|e| Failure::Runtime(format!("cannot send the echo: {e}")))?;
            }
            received += 1;
        }
        socket.close().await;
        Ok(())
    };
    supervise(work, monitor, &watch, deadline, args.timeout).await
}

/// Where `send` takes its messages from.
enum Input {
    /// The FRAME arguments: one message.
    Frames(Message),
    /// Standard input, one message per line.
    Lines(mpsc::Receiver<std::io::Result<Vec<u8>>>),
}

fn message(frames: impl Iterator<Item = Vec<u8>>) -> Message {
    Message::from(frames.map(Bytes::from).collect::<Vec<Bytes>>())
}

/// The frames of one line of input (TAB-separated); `Err` with a frame that is not hex.
fn parse_line(line: &[u8], hex_frames: bool) -> Result<Message, Vec<u8>> {
    let mut frames = Vec::new();
    for part in line.split(|&b| b == b'\t') {
        if hex_frames {
            frames.push(hex::decode(part).ok_or_else(|| part.to_vec())?);
        } else {
            frames.push(part.to_vec());
        }
    }
    Ok(message(frames.into_iter()))
}

/// Lines of standard input (without their `\n`), read by a thread as they come.
fn read_lines() -> Result<mpsc::Receiver<std::io::Result<Vec<u8>>>, Failure> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            loop {
                let mut line = Vec::new();
                match stdin.read_until(b'\n', &mut line) {
                    Ok(0) => return,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        if tx.blocking_send(Ok(line)).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
        })
        .map_err(|e| Failure::Runtime(format!("cannot read standard input: {e}")))?;
    Ok(rx)
}

/// Send one message; for REQ, wait for the reply and print it.
async fn send_one(socket: &Socket, msg: Message, request: bool, hex: bool) -> Result<(), Failure> {
    socket
        .send(msg)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot send: {e}")))?;
    if request {
        let reply = socket
            .recv()
            .await
            .map_err(|e| Failure::Runtime(format!("cannot receive the reply: {e}")))?;
        print_message(reply.frames(), hex)?;
    }
    Ok(())
}

/// Print a message as one line: frames separated by a TAB, raw or as lowercase hex.
fn print_message(frames: &[Bytes], hex: bool) -> Result<(), Failure> {
    let mut line = Vec::with_capacity(frames.iter().map(|f| f.len() * 2 + 1).sum::<usize>() + 1);
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            line.push(b'\t');
        }
        if hex {
            hex::encode_into(frame, &mut line);
        } else {
            line.extend_from_slice(frame);
        }
    }
    line.push(b'\n');
    print_stdout(&line)
}

/// Run `f` unless the deadline passes first.
async fn before<T>(
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    f: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, f)
            .await
            .unwrap_or_else(|_| Err(timed_out(timeout))),
        None => f.await,
    }
}

fn timed_out(timeout: Option<Duration>) -> Failure {
    let ms = timeout.map_or(0, |t| t.as_millis());
    Failure::Timeout(format!("timed out after {ms} ms"))
}

/// The socket with its options, security, subscriptions and endpoints; its monitor; and
/// what to make of the monitor's handshake failures.
async fn open(args: &SocketArgs) -> Result<(Socket, Monitor, Watch), Failure> {
    let mut options = Options::default();
    options.linger = args.linger;
    if let Some(id) = &args.identity {
        options.routing_id = Bytes::from(id.clone());
    }
    if let Some(hwm) = args.hwm {
        options.sndhwm = hwm;
        options.rcvhwm = hwm;
    }
    if let Some(ivl) = args.heartbeat {
        options.heartbeat_ivl = (!ivl.is_zero()).then_some(ivl);
    }
    options.security = match &args.role {
        Role::Null => Security::Null,
        Role::PlainClient { user, password } => Security::plain_client(user, password)
            .map_err(|e| Failure::Usage(format!("bad option: {e}")))?,
        Role::PlainServer { .. } => Security::PlainServer,
        Role::CurveServer { secret, .. } => Security::curve_server(KeyPair::from_secret(*secret)),
        Role::CurveClient { server_key, secret } => Security::curve_client(
            PublicKey::from_bytes(*server_key),
            match secret {
                Some(secret) => KeyPair::from_secret(*secret),
                None => zmtp_tokio::curve_keypair().map_err(|e| {
                    Failure::Runtime(format!("cannot generate a CURVE key pair: {e}"))
                })?,
            },
        ),
    };
    let socket = Socket::with_options(args.ty, options).map_err(|e| match e {
        Error::Options(e) => Failure::Usage(format!("bad option: {e}")),
        e => Failure::Runtime(format!("cannot create the socket: {e}")),
    })?;
    socket.set_authenticator(match &args.role {
        Role::PlainServer { users } => Some(
            users
                .iter()
                .fold(Authenticator::new(), |a, (u, p)| a.plain_user(u, p)),
        ),
        Role::CurveServer { clients, .. } if clients.is_empty() => {
            Some(Authenticator::new().curve_allow_any())
        }
        Role::CurveServer { clients, .. } => {
            Some(clients.iter().fold(Authenticator::new(), |a, key| {
                a.curve_allow(PublicKey::from_bytes(*key))
            }))
        }
        _ => None,
    });
    let monitor = socket.monitor();
    let subscribed = |e: Error| Failure::Usage(format!("cannot subscribe: {e}"));
    if args.ty == SocketType::Sub && args.subscribe.is_empty() {
        socket.subscribe(b"").map_err(subscribed)?;
    }
    for prefix in &args.subscribe {
        socket.subscribe(prefix).map_err(subscribed)?;
    }
    let mut bound = Vec::new();
    for (direction, endpoint) in &args.endpoints {
        let result = match direction {
            Direction::Bind => socket.bind(endpoint).await.map(Some),
            Direction::Connect => socket.connect(endpoint).map(|()| None),
        };
        let verb = match direction {
            Direction::Bind => "bind",
            Direction::Connect => "connect",
        };
        match result {
            Ok(Some(resolved)) => {
                if args.verbose {
                    note(&format!("bound {resolved}"));
                }
                bound.push(resolved);
            }
            Ok(None) => {
                if args.verbose {
                    note(&format!("connecting to {endpoint}"));
                }
            }
            Err(Error::Endpoint(e)) => {
                return Err(Failure::Usage(format!(
                    "malformed endpoint '{endpoint}' for {verb}: {e}"
                )))
            }
            Err(e) => return Err(Failure::Runtime(format!("cannot {verb} {endpoint}: {e}"))),
        }
    }
    let watch = Watch {
        client: args.role.is_client(),
        server: args.role.is_server(),
        bound,
        verbose: args.verbose,
    };
    Ok((socket, monitor, watch))
}

/// Run `work` while watching the monitor, until it completes, a handshake failure ends the
/// command, or the deadline passes.
async fn supervise(
    work: impl Future<Output = Result<(), Failure>>,
    mut monitor: Monitor,
    watch: &Watch,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    let expiry = async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(work);
    tokio::pin!(expiry);
    let mut watching = true;
    loop {
        tokio::select! {
            biased;
            event = monitor.next(), if watching => match event {
                Some(e) => watch.judge(&e)?,
                None => watching = false,
            },
            result = &mut work => {
                // Events reported by then still count: an authentication failure that
                // raced the end of the work is not lost.
                while watching {
                    tokio::select! {
                        biased;
                        event = monitor.next() => match event {
                            Some(e) => watch.judge(&e)?,
                            None => watching = false,
                        },
                        () = std::future::ready(()) => break,
                    }
                }
                return result;
            }
            () = &mut expiry => return Err(timed_out(timeout)),
        }
    }
}

/// What a handshake failure means for the command.
struct Watch {
    /// We are a PLAIN or CURVE client: any handshake failure is an authentication failure.
    client: bool,
    /// We are a PLAIN or CURVE server: failed clients are reported, and we carry on.
    server: bool,
    /// Our bound endpoints, resolved: failures there are peers that connected to us.
    bound: Vec<String>,
    /// Report every event on standard error.
    verbose: bool,
}

impl Watch {
    /// `Err` when the event ends the command (exit 2).
    fn judge(&self, e: &MonitorEvent) -> Result<(), Failure> {
        if self.verbose {
            note(&format!("{} {} (value {})", e.kind, e.endpoint, e.value));
        }
        let kind = e.kind;
        if !matches!(
            kind,
            MonitorEventKind::HandshakeFailedAuth
                | MonitorEventKind::HandshakeFailedProtocol
                | MonitorEventKind::HandshakeFailedNoDetail
        ) {
            return Ok(());
        }
        let endpoint = &e.endpoint;
        let detail = describe(e);
        if self.client {
            let detail = if kind == MonitorEventKind::HandshakeFailedAuth {
                format!("the server refused our credentials ({detail})")
            } else {
                detail
            };
            return Err(Failure::Runtime(format!(
                "authentication failed with {endpoint}: {detail}"
            )));
        }
        if self.server {
            if kind == MonitorEventKind::HandshakeFailedNoDetail {
                // A client that went away mid-handshake (often one we just refused).
                return Ok(());
            }
            if kind == MonitorEventKind::HandshakeFailedAuth {
                note(&format!(
                    "refused a client on {endpoint}: authentication failed ({detail})"
                ));
            } else {
                note(&format!(
                    "a client on {endpoint} failed the handshake: {detail}"
                ));
            }
            return Ok(());
        }
        if kind == MonitorEventKind::HandshakeFailedAuth {
            // A NULL socket refused by the peer's authentication (ZAP).
            return Err(Failure::Runtime(format!(
                "authentication failed with {endpoint}: the peer refused us ({detail})"
            )));
        }
        let inbound = self.bound.iter().any(|b| b == endpoint);
        if kind == MonitorEventKind::HandshakeFailedProtocol {
            if inbound {
                note(&format!(
                    "a peer on {endpoint} failed the handshake: {detail}"
                ));
            } else {
                // Nothing reconnects after a protocol error: give up.
                return Err(Failure::Runtime(format!(
                    "handshake with {endpoint} failed: {detail}"
                )));
            }
        }
        // Without detail, on a NULL socket: transient (the peer went away); reconnects.
        Ok(())
    }
}

/// A handshake failure in words.
fn describe(e: &MonitorEvent) -> String {
    match e.kind {
        MonitorEventKind::HandshakeFailedAuth => format!("status {}", e.value),
        MonitorEventKind::HandshakeFailedProtocol => {
            let (name, hint) = match e.value {
                0x1000_0000 => ("ZMTP_UNSPECIFIED", ""),
                0x1000_0001 => ("ZMTP_UNEXPECTED_COMMAND", ""),
                0x1000_0002 => ("ZMTP_INVALID_SEQUENCE", ""),
                0x1000_0003 => ("ZMTP_KEY_EXCHANGE", ""),
                0x1000_0011..=0x1000_0017 => ("ZMTP_MALFORMED_COMMAND", ""),
                0x1000_0018 => ("ZMTP_INVALID_METADATA", ": incompatible socket types?"),
                0x1100_0001 => ("ZMTP_CRYPTOGRAPHIC", ": wrong CURVE key?"),
                0x1100_0002 => (
                    "ZMTP_MECHANISM_MISMATCH",
                    ": the peer uses another security mechanism",
                ),
                0x2000_0000..=0x2000_0005 => ("ZAP", ""),
                _ => ("unknown", ""),
            };
            format!("protocol error {name} (0x{:08x}){hint}", e.value)
        }
        _ => "the connection closed during the handshake (wrong credentials or key?)".into(),
    }
}
