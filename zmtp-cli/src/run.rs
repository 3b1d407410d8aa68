//! `zmtp send` and `zmtp recv`: one socket, its endpoints, a watch on its monitor for
//! handshake and authentication failures, and an overall deadline.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, Write};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use zmtp_tokio::{
    Authenticator, Bytes, CloseReport, Error, KeyPair, Message, Monitor, MonitorEvent,
    MonitorEventKind, Options, PublicKey, Security, SendError, Sent, Socket, SocketType,
};

use crate::args::{
    self, decode_frame, input_what, single_frame, Direction, Output, ProxyArgs, Role, SocketArgs,
};
use crate::{escape, hex, print_stdout, Failure};

/// Write one line to standard error, ignoring failures (there is nowhere else to report).
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "zmtp: {line}");
}

/// `zmtp send`.
pub async fn send(args: SocketArgs) -> Result<(), Failure> {
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let (socket, monitor, watch, peer) = before(deadline, args.timeout, open(&args)).await?;
    let shape = Shape {
        single_frame: single_frame(args.ty),
        group: args.group.clone().map(Bytes::from),
        routing_id: peer,
    };
    let input = match &args.frames {
        Some(frames) => Input::Frames(shape.messages(frames.clone())?),
        None => Input::Lines(read_lines()?),
    };
    let count = args.count.unwrap_or(1);
    // A CLIENT's request is answered as a REQ's is: its reply is awaited and printed.
    let request = matches!(args.ty, SocketType::Req | SocketType::Client);
    let (input_mode, output, ty) = (args.input, args.output, args.ty);
    let (delay, wait_subscribers, verbose) = (args.delay, args.wait_subscribers, args.verbose);
    let timeout = args.timeout;
    let handshakes = watch.handshakes.subscribe();
    let work = async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        match wait_subscribers {
            Some(wanted) if ty == SocketType::Radio => {
                wait_for_dishes(handshakes, wanted, deadline, timeout).await?;
            }
            Some(wanted) => {
                wait_for_subscriptions(&socket, wanted, verbose, deadline, timeout).await?;
            }
            None => {}
        }
        // A STREAM writes to the connection whose notification comes first.
        let stream = match ty {
            SocketType::Stream => Some(first_connection(&socket).await?),
            _ => None,
        };
        let shape_for = |msgs: Vec<Message>| match &stream {
            Some(id) => msgs.iter().flat_map(|m| to_stream(m, id)).collect(),
            None => msgs,
        };
        let mut tally = Tally {
            waited: wait_subscribers.is_some(),
            ..Tally::default()
        };
        match input {
            Input::Frames(messages) => {
                let messages = shape_for(messages);
                for _ in 0..count {
                    for msg in &messages {
                        send_one(&socket, msg.clone(), request, output, &mut tally).await?;
                    }
                }
            }
            Input::Lines(mut lines) => {
                let mut number = 0u64;
                while let Some(line) = lines.recv().await {
                    number += 1;
                    let line = line.map_err(|e| {
                        Failure::Runtime(format!("cannot read standard input: {e}"))
                    })?;
                    let frames = parse_line(&line, input_mode).map_err(|bad| {
                        Failure::Usage(format!(
                            "line {number} of standard input: frame '{}' is not {}",
                            String::from_utf8_lossy(&bad),
                            input_what(input_mode)
                        ))
                    })?;
                    let messages = shape_for(shape.messages(frames)?);
                    for _ in 0..count {
                        for msg in &messages {
                            send_one(&socket, msg.clone(), request, output, &mut tally).await?;
                        }
                    }
                }
            }
        }
        if let Some(id) = stream {
            // Empty data closes the connection (once what was sent before is written).
            let close = Message::from(vec![id, Bytes::new()]);
            socket
                .send(close)
                .await
                .map_err(|e| Failure::Runtime(format!("cannot close the connection: {e}")))?;
        }
        if verbose && tally.filtered > 0 {
            note(&format!(
                "{} of {} message{} matched no subscriber's topic or no dish's group: sent \
                 to nobody, as the subscribers asked",
                tally.filtered,
                tally.sent,
                if tally.sent == 1 { "" } else { "s" }
            ));
        }
        // Linger: wait until what is queued is written, or LINGER runs out.
        tally.unsent = socket.close().await;
        tally.verdict(ty)
    };
    supervise(work, monitor, &watch, deadline, args.timeout).await
}

/// What became of the messages `send` handed to the socket.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Messages the socket took.
    sent: u64,
    /// Of those, messages it dropped at once ([`Sent::Dropped`]) that reached nobody:
    /// a PUB's with no subscriber there, an XPUB's or a RADIO's with none that had
    /// subscribed to or joined anything.
    dropped: u64,
    /// Messages a PUB, XPUB or RADIO dropped because no subscriber's topic (no dish's
    /// group) matched them: what the subscribers asked for, not a failure.
    filtered: u64,
    /// What was still queued when `--linger` ran out.
    unsent: CloseReport,
    /// `--wait-subscribers` was given (and is not to be suggested again).
    waited: bool,
}

impl Tally {
    /// Count the outcome of one send; `audience`: how many peers the message could have
    /// reached ([`Socket::audience`]).
    fn count(&mut self, sent: Sent, ty: SocketType, audience: impl FnOnce() -> usize) {
        self.sent += 1;
        if sent == Sent::Dropped {
            let filtering = matches!(ty, SocketType::Pub | SocketType::XPub | SocketType::Radio);
            if filtering && audience() > 0 {
                self.filtered += 1;
            } else {
                self.dropped += 1;
            }
        }
    }

    /// `Err` (exit 4) when messages were dropped, saying how many and why.
    fn verdict(self, ty: SocketType) -> Result<(), Failure> {
        if self.dropped == 0 && self.unsent.delivered_all() {
            return Ok(());
        }
        if self.dropped == 0 {
            let what = match self.unsent.unsent_messages {
                0 => format!(
                    "part of the last messages ({} bytes)",
                    self.unsent.unsent_bytes
                ),
                n if self.unsent.unsent_bytes == 0 => format!("{n} of {}", self.sent),
                n => format!(
                    "{n} of {} (and {} bytes of others)",
                    self.sent, self.unsent.unsent_bytes
                ),
            };
            return Err(Failure::Undelivered(format!(
                "{what} not delivered: still queued when --linger ran out (no peer took them)"
            )));
        }
        let (them, its) = if self.dropped == 1 {
            ("it", "its")
        } else {
            ("them", "their")
        };
        let (see, see_radio) = if self.waited {
            // They were waited for: they left (or cancelled) before the messages went.
            (
                " (the subscribers --wait-subscribers waited for had gone)",
                " (the dishes --wait-subscribers waited for had gone)",
            )
        } else {
            (
                " (a PUB sends only to subscribers that have already joined: see \
                 --wait-subscribers and --delay)",
                " (a RADIO sends only to dishes that have already joined: see \
                 --wait-subscribers and --delay)",
            )
        };
        let why = match ty {
            SocketType::Pub => format!("no subscriber was connected to take {them}{see}"),
            SocketType::XPub => format!("no subscriber had subscribed to anything{see}"),
            SocketType::Radio => format!("no dish had joined any group{see_radio}"),
            SocketType::Router => {
                format!("no connected peer has {its} routing id (the first frame)")
            }
            SocketType::Peer => format!("the peer had gone when {them} came to be sent"),
            _ => format!("the socket had no peer to take {them}"),
        };
        Err(Failure::Undelivered(format!(
            "{} of {} message{} not delivered: {why}",
            self.dropped,
            self.sent,
            if self.sent == 1 { "" } else { "s" }
        )))
    }
}

/// `--wait-subscribers`: receive subscription messages (the socket is an XPUB with
/// XPUB_VERBOSE, so each subscription of every subscriber arrives) until `wanted` have.
async fn wait_for_subscriptions(
    socket: &Socket,
    wanted: u64,
    verbose: bool,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    let mut arrived = 0u64;
    while arrived < wanted {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d, socket.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    let ms = timeout.map_or(0, |t| t.as_millis());
                    return Err(Failure::Timeout(format!(
                        "timed out after {ms} ms waiting for subscribers: {arrived} of \
                         {wanted} subscriptions arrived"
                    )));
                }
            },
            None => socket.recv().await,
        };
        let msg = next.map_err(|e| Failure::Runtime(format!("cannot receive: {e}")))?;
        let Some(frame) = msg.frames().first() else {
            continue;
        };
        if frame.first() == Some(&1) {
            arrived += 1;
            if verbose {
                let mut topic = Vec::new();
                escape::escape_into(&frame[1..], &mut topic);
                note(&format!(
                    "subscription {arrived} of {wanted}: '{}'",
                    String::from_utf8_lossy(&topic)
                ));
            }
        }
    }
    Ok(())
}

/// How long a RADIO's `--wait-subscribers` waits, once its dishes have connected, for
/// their joins (which a RADIO cannot see arrive).
const JOIN_GRACE: Duration = Duration::from_millis(200);

/// `--wait-subscribers` on a RADIO: wait until `wanted` dishes have completed their
/// handshake (counted by `handshakes`), then [`JOIN_GRACE`] for their joins.
async fn wait_for_dishes(
    mut handshakes: watch::Receiver<u64>,
    wanted: u64,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    let connected = {
        let all = handshakes.wait_for(|&n| n >= wanted);
        match deadline {
            Some(d) => tokio::time::timeout_at(d, all)
                .await
                .ok()
                .map(|r| r.is_ok()),
            None => Some(all.await.is_ok()),
        }
    };
    match connected {
        Some(true) => {}
        // The monitor ended: the socket is closing, and the work with it.
        Some(false) => return Err(Failure::Runtime("the socket closed".into())),
        None => {
            let ms = timeout.map_or(0, |t| t.as_millis());
            let arrived = *handshakes.borrow();
            return Err(Failure::Timeout(format!(
                "timed out after {ms} ms waiting for dishes: {arrived} of {wanted} connected"
            )));
        }
    }
    tokio::time::sleep(JOIN_GRACE).await;
    Ok(())
}

/// `zmtp recv`.
pub async fn recv(args: SocketArgs) -> Result<(), Failure> {
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let (socket, monitor, watch, _) = before(deadline, args.timeout, open(&args)).await?;
    let (count, echo, output, verbose) = (args.count, args.echo, args.output, args.verbose);
    let stream = args.ty == SocketType::Stream;
    let work = async move {
        let mut received = 0u64;
        while count.is_none_or(|c| received < c) {
            let msg = socket
                .recv()
                .await
                .map_err(|e| Failure::Runtime(format!("cannot receive: {e}")))?;
            if stream {
                print_stdout(&format_chunk(&msg, output))?;
            } else {
                print_message(&msg, output)?;
            }
            // A STREAM's notifications (empty data) are not echoed: that would close.
            let notification = stream && msg.frames().get(1).is_none_or(|d| d.is_empty());
            if echo && !notification {
                // As received: ROUTER keeps the peer's identity frame, REP its envelope,
                // SERVER and PEER the routing id the message came with.
                match socket.send(msg).await {
                    Ok(_) => {}
                    // A SERVER's or PEER's client that went away (a ROUTER drops those).
                    Err(SendError::HostUnreachable(_)) => {
                        if verbose {
                            note("the sender has gone: its echo is dropped");
                        }
                    }
                    Err(e) => return Err(Failure::Runtime(format!("cannot send the echo: {e}"))),
                }
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
    /// The FRAME arguments: one message (a classic type) or one per frame (a draft type).
    Frames(Vec<Message>),
    /// Standard input, one line at a time.
    Lines(mpsc::Receiver<std::io::Result<Vec<u8>>>),
}

/// How `send` makes messages of the frames of an input (the FRAME arguments, or a line).
struct Shape {
    /// A draft type: each frame is a message of its own (they take no multipart messages).
    single_frame: bool,
    /// RADIO: the group each message goes to.
    group: Option<Bytes>,
    /// PEER: the routing id of the peer it connected to.
    routing_id: Option<u32>,
}

impl Shape {
    /// The messages to send for `frames`, in order.
    fn messages(&self, frames: Vec<Vec<u8>>) -> Result<Vec<Message>, Failure> {
        let frames = frames.into_iter().map(Bytes::from);
        if !self.single_frame {
            return Ok(vec![Message::from(frames.collect::<Vec<Bytes>>())]);
        }
        frames
            .map(|frame| {
                let mut msg = Message::from(frame);
                if let Some(group) = &self.group {
                    msg.set_group(group)?;
                }
                if let Some(id) = self.routing_id {
                    msg.set_routing_id(id)?;
                }
                Ok(msg)
            })
            .collect::<Result<_, zmtp_tokio::MetadataError>>()
            .map_err(|e| Failure::Runtime(format!("cannot address a message: {e}")))
    }
}

/// The frames of one line of input (TAB-separated); `Err` with a frame that is malformed
/// (not hex for `--hex-frames`, a bad escape for `--unescape`).
fn parse_line(line: &[u8], input: args::Input) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut frames = Vec::new();
    for part in line.split(|&b| b == b'\t') {
        frames.push(decode_frame(part, input).ok_or_else(|| part.to_vec())?);
    }
    Ok(frames)
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

/// Send one message and count what became of it; for REQ, wait for the reply and print
/// it.
async fn send_one(
    socket: &Socket,
    msg: Message,
    request: bool,
    output: Output,
    tally: &mut Tally,
) -> Result<(), Failure> {
    // A proxy's control command, which it acknowledges with an empty frame.
    let command = request && is_proxy_command(&msg);
    let sent = match socket.send(msg).await {
        Ok(sent) => sent,
        // A PEER whose peer has gone: not delivered, as a ROUTER's message to an unknown id.
        Err(SendError::HostUnreachable(_)) => Sent::Dropped,
        Err(e) => return Err(Failure::Runtime(format!("cannot send: {e}"))),
    };
    tally.count(sent, socket.socket_type(), || socket.audience());
    if request {
        let reply = socket
            .recv()
            .await
            .map_err(|e| Failure::Runtime(format!("cannot receive the reply: {e}")))?;
        let acknowledged = command && matches!(reply.frames(), [only] if only.is_empty());
        if !acknowledged {
            print_message(&reply, output)?;
        }
    }
    Ok(())
}

/// Whether `msg` is a command to a proxy's control socket that it answers with an empty
/// frame (PAUSE, RESUME, TERMINATE): that acknowledgement is not printed as a blank line.
fn is_proxy_command(msg: &Message) -> bool {
    matches!(msg.frames(), [only] if matches!(&only[..], b"PAUSE" | b"RESUME" | b"TERMINATE"))
}

/// A message as one line: frames separated by a TAB, escaped, as lowercase hex or raw. A
/// DISH's message has its group as a first column, written as the frames are.
fn format_message(msg: &Message, output: Output) -> Vec<u8> {
    let columns = msg
        .group()
        .into_iter()
        .chain(msg.frames().iter().map(|f| &f[..]));
    let size = columns.clone().map(|c| c.len() * 2 + 1).sum::<usize>() + 1;
    let mut line = Vec::with_capacity(size);
    for (i, frame) in columns.enumerate() {
        if i > 0 {
            line.push(b'\t');
        }
        match output {
            Output::Escaped => escape::escape_into(frame, &mut line),
            Output::Hex => hex::encode_into(frame, &mut line),
            Output::Raw => line.extend_from_slice(frame),
        }
    }
    line.push(b'\n');
    line
}

/// A STREAM's message as one line: the routing id in hex, then (unless it is a
/// notification, whose data is empty) a TAB and the data, written as frames are.
fn format_chunk(msg: &Message, output: Output) -> Vec<u8> {
    let frames = msg.frames();
    let id = frames.first().map_or(&[][..], |f| &f[..]);
    let data = frames.get(1).map_or(&[][..], |f| &f[..]);
    let mut line = Vec::with_capacity(id.len() * 2 + data.len() * 2 + 2);
    hex::encode_into(id, &mut line);
    if !data.is_empty() {
        line.push(b'\t');
        match output {
            Output::Escaped => escape::escape_into(data, &mut line),
            Output::Hex => hex::encode_into(data, &mut line),
            Output::Raw => line.extend_from_slice(data),
        }
    }
    line.push(b'\n');
    line
}

/// A STREAM's messages for the frames of `msg`: `[id][frame]` for each non-empty frame
/// (an empty one would close the connection).
fn to_stream(msg: &Message, id: &Bytes) -> Vec<Message> {
    msg.frames()
        .iter()
        .filter(|f| !f.is_empty())
        .map(|f| Message::from(vec![id.clone(), f.clone()]))
        .collect()
}

/// A STREAM's first connection: the routing id its notification (`[id][empty]`) names.
async fn first_connection(socket: &Socket) -> Result<Bytes, Failure> {
    loop {
        let msg = socket
            .recv()
            .await
            .map_err(|e| Failure::Runtime(format!("cannot receive: {e}")))?;
        if let [id, data] = msg.frames() {
            if data.is_empty() {
                return Ok(id.clone());
            }
        }
    }
}

/// Print a message as one line (see [`format_message`]).
fn print_message(msg: &Message, output: Output) -> Result<(), Failure> {
    print_stdout(&format_message(msg, output))
}

/// Run `f` unless the deadline passes first.
pub(crate) async fn before<T>(
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

/// The socket with its options, security, subscriptions and endpoints; its monitor; what
/// to make of the monitor's handshake failures; and, for a PEER, the routing id of the
/// peer it connected to last.
pub(crate) async fn open(
    args: &SocketArgs,
) -> Result<(Socket, Monitor, Watch, Option<u32>), Failure> {
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
    // --wait-subscribers sees subscriptions arrive as an XPUB does, each one of every
    // subscriber (XPUB_VERBOSE); to its subscribers, an XPUB is a PUB.
    let ty = if args.wait_subscribers.is_some() && args.ty != SocketType::Radio {
        options.xpub_verbose = true;
        SocketType::XPub
    } else {
        args.ty
    };
    let socket = Socket::with_options(ty, options).map_err(|e| match e {
        Error::Options(e) => Failure::Usage(format!("bad option: {e}")),
        e => Failure::Runtime(format!("cannot create the socket: {e}")),
    })?;
    socket.set_tls(args.tls.clone());
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
    for group in &args.join {
        socket
            .join(group)
            .map_err(|e| Failure::Usage(format!("cannot join: {e}")))?;
    }
    let (bound, peer) = attach(&socket, &args.endpoints, args.verbose).await?;
    let watch = Watch {
        client: args.role.is_client(),
        server: args.role.is_server(),
        bound,
        verbose: args.verbose,
        handshakes: watch::Sender::new(0),
        attempts: RefCell::new(BTreeMap::new()),
    };
    Ok((socket, monitor, watch, peer))
}

/// Bind and connect `socket` to `endpoints` in order (`-v`: say so on standard error);
/// the resolved bound endpoints, and for a PEER the routing id of the peer it connected to
/// last.
async fn attach(
    socket: &Socket,
    endpoints: &[(Direction, String)],
    verbose: bool,
) -> Result<(Vec<String>, Option<u32>), Failure> {
    let mut bound = Vec::new();
    let mut peer = None;
    for (direction, endpoint) in endpoints {
        let result = match direction {
            Direction::Bind => socket.bind(endpoint).await.map(Some),
            // A PEER learns the routing id of the peer there, to address it.
            Direction::Connect if socket.socket_type() == SocketType::Peer => {
                socket.connect_peer(endpoint).map(|id| {
                    peer = Some(id);
                    None
                })
            }
            Direction::Connect => socket.connect(endpoint).map(|()| None),
        };
        let verb = match direction {
            Direction::Bind => "bind",
            Direction::Connect => "connect",
        };
        match result {
            Ok(Some(resolved)) => {
                if verbose {
                    note(&format!("bound {resolved}"));
                }
                bound.push(resolved);
            }
            Ok(None) => {
                if verbose {
                    note(&format!("connecting to {endpoint}"));
                }
            }
            Err(Error::Endpoint(e)) => {
                return Err(Failure::Usage(format!(
                    "malformed endpoint '{endpoint}' for {verb}: {e}"
                )))
            }
            // It names the endpoint itself.
            Err(e @ Error::Bind { .. }) => {
                return Err(Failure::Runtime(format!("cannot bind {e}")))
            }
            Err(e) => return Err(Failure::Runtime(format!("cannot {verb} {endpoint}: {e}"))),
        }
    }
    Ok((bound, peer))
}

/// `zmtp proxy`: a frontend and a backend socket, each bound or connected, messages moved
/// between them until a TERMINATE on the control socket (a REP), a copy of each on the
/// capture socket (a PUB).
pub async fn proxy(args: ProxyArgs) -> Result<(), Failure> {
    let make = |ty: SocketType| {
        let socket = Socket::new(ty)
            .map_err(|e| Failure::Runtime(format!("cannot create the socket: {e}")))?;
        socket.set_tls(args.tls.clone());
        Ok(socket)
    };
    let frontend = make(args.front)?;
    attach(&frontend, &args.front_endpoints, args.verbose).await?;
    let backend = make(args.back)?;
    attach(&backend, &args.back_endpoints, args.verbose).await?;
    let side = |ty: SocketType, endpoint: &Option<String>| -> Result<Option<Socket>, Failure> {
        endpoint.as_ref().map(|_| make(ty)).transpose()
    };
    let capture = side(SocketType::Pub, &args.capture)?;
    let control = side(SocketType::Rep, &args.control)?;
    for (socket, endpoint) in [(&capture, &args.capture), (&control, &args.control)] {
        if let (Some(socket), Some(endpoint)) = (socket, endpoint) {
            attach(socket, &[(Direction::Bind, endpoint.clone())], args.verbose).await?;
        }
    }
    zmtp_tokio::proxy_steerable(&frontend, &backend, capture.as_ref(), control.as_ref())
        .await
        .map_err(|e| Failure::Runtime(format!("the proxy stopped: {e}")))
}

/// Run `work` while watching the monitor, until it completes, a handshake failure ends the
/// command, or the deadline passes.
pub(crate) async fn supervise(
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
                return result.map_err(|f| watch.explain(f));
            }
            () = &mut expiry => return Err(watch.explain(timed_out(timeout))),
        }
    }
}

/// What a handshake failure means for the command.
pub(crate) struct Watch {
    /// We are a PLAIN or CURVE client: any handshake failure is an authentication failure.
    client: bool,
    /// We are a PLAIN or CURVE server: failed clients are reported, and we carry on.
    server: bool,
    /// Our bound endpoints, resolved: failures there are peers that connected to us.
    bound: Vec<String>,
    /// Report every event on standard error.
    verbose: bool,
    /// Handshakes that succeeded so far (a RADIO's `--wait-subscribers` counts its dishes).
    handshakes: watch::Sender<u64>,
    /// How the connections to each connect endpoint went, by endpoint.
    attempts: RefCell<BTreeMap<String, Attempts>>,
}

/// How the connections to one connect endpoint went so far.
#[derive(Debug, Default)]
struct Attempts {
    /// Why they failed, when every failed handshake said the same thing.
    reason: Option<String>,
    /// Handshakes failed for different reasons, or for none given.
    mixed: bool,
    /// A handshake succeeded.
    succeeded: bool,
}

impl Watch {
    /// `Err` when the event ends the command (exit 2).
    fn judge(&self, e: &MonitorEvent) -> Result<(), Failure> {
        // CONNECT_DELAYED repeats the "connecting to" noted at connect.
        if self.verbose
            && !matches!(
                e.kind,
                MonitorEventKind::MonitorStopped | MonitorEventKind::ConnectDelayed
            )
        {
            let inbound = self.bound.contains(&e.endpoint);
            note(&format!("{} [{}]", event_text(e, inbound), e.kind));
        }
        let kind = e.kind;
        if kind == MonitorEventKind::HandshakeSucceeded {
            self.handshakes.send_modify(|n| *n += 1);
        }
        let failed = matches!(
            kind,
            MonitorEventKind::HandshakeFailedAuth
                | MonitorEventKind::HandshakeFailedProtocol
                | MonitorEventKind::HandshakeFailedNoDetail
        );
        let inbound = self.bound.contains(&e.endpoint);
        if !inbound && (failed || kind == MonitorEventKind::HandshakeSucceeded) {
            self.attempted(e);
        }
        if !failed {
            return Ok(());
        }
        let endpoint = &e.endpoint;
        let detail = describe(e);
        if let (Some(reason), false) = (&e.reason, inbound) {
            // Below ZMTP (TLS refused the server): reconnecting is left to run, and if
            // every attempt fails so, `explain` says why at the end.
            if self.client {
                return Err(Failure::Runtime(cannot_connect(endpoint, reason)));
            }
            return Ok(());
        }
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
            let client = peer_on(e);
            if kind == MonitorEventKind::HandshakeFailedAuth {
                note(&format!(
                    "refused a client {client}: authentication failed ({detail})"
                ));
            } else {
                note(&format!("a client {client} failed the handshake: {detail}"));
            }
            return Ok(());
        }
        if kind == MonitorEventKind::HandshakeFailedAuth {
            // A NULL socket refused by the peer's authentication (ZAP).
            return Err(Failure::Runtime(format!(
                "authentication failed with {endpoint}: the peer refused us ({detail})"
            )));
        }
        if kind == MonitorEventKind::HandshakeFailedProtocol {
            if inbound {
                note(&format!(
                    "a peer {} failed the handshake: {detail}",
                    peer_on(e)
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

    /// Note how a handshake with a connect endpoint went.
    fn attempted(&self, e: &MonitorEvent) {
        let mut attempts = self.attempts.borrow_mut();
        let a = attempts.entry(e.endpoint.clone()).or_default();
        if e.kind == MonitorEventKind::HandshakeSucceeded {
            a.succeeded = true;
            return;
        }
        match (&e.reason, &a.reason) {
            (Some(r), None) if !a.mixed => a.reason = Some(r.clone()),
            (Some(r), Some(before)) if r == before => {}
            _ => {
                a.mixed = true;
                a.reason = None;
            }
        }
    }

    /// What a timeout or undelivered messages (`failure`) really were: when every
    /// connection to a connect endpoint failed for the same reason below ZMTP (a TLS
    /// handshake that refused the server), a runtime failure that says so; otherwise
    /// `failure` as it is.
    fn explain(&self, failure: Failure) -> Failure {
        if !matches!(failure, Failure::Timeout(_) | Failure::Undelivered(_)) {
            return failure;
        }
        let attempts = self.attempts.borrow();
        let never = attempts
            .iter()
            .find_map(|(ep, a)| match (&a.reason, a.succeeded || a.mixed) {
                (Some(reason), false) => Some((ep, reason)),
                _ => None,
            });
        match never {
            Some((endpoint, reason)) => Failure::Runtime(cannot_connect(endpoint, reason)),
            None => failure,
        }
    }
}

/// A connect endpoint whose connections fail below ZMTP, in words, with what to check.
fn cannot_connect(endpoint: &str, reason: &str) -> String {
    let hint = if reason.contains("UnknownIssuer") {
        " (is --tls-ca the CA that signed the server's certificate?)"
    } else if reason.contains("not valid for name") {
        " (connect by a name the server's certificate has)"
    } else {
        ""
    };
    format!("cannot connect to {endpoint}: {reason}{hint}")
}

/// A peer that connected to us, in words: its address and our endpoint it connected on
/// ("127.0.0.1:53412 on tcp://0.0.0.0:5559"), or "connected on" the endpoint when it has
/// no address (ipc).
fn peer_on(e: &MonitorEvent) -> String {
    let ep = &e.endpoint;
    if e.peer_address.is_empty() {
        format!("connected on {ep}")
    } else {
        format!("{} on {ep}", e.peer_address)
    }
}

/// A monitor event in words. On a bound (`inbound`) endpoint the peer is named by its
/// address ([`peer_on`]); on a connect endpoint by the endpoint, with the address it
/// resolved to when that says more.
fn event_text(e: &MonitorEvent, inbound: bool) -> String {
    let ep = &e.endpoint;
    let addr = &e.peer_address;
    let peer = if inbound {
        match peer_on(e) {
            on if addr.is_empty() => format!("a peer {on}"),
            on => on,
        }
    } else {
        ep.clone()
    };
    let v = e.value;
    match e.kind {
        MonitorEventKind::Listening => format!("listening on {ep}"),
        MonitorEventKind::BindFailed => format!("cannot bind {ep} (error {v})"),
        MonitorEventKind::Accepted if addr.is_empty() => format!("accepted a connection on {ep}"),
        MonitorEventKind::Accepted => format!("accepted {addr} on {ep}"),
        MonitorEventKind::AcceptFailed => format!("cannot accept a connection on {ep} (error {v})"),
        MonitorEventKind::Connected if addr.is_empty() || ep.ends_with(&format!("//{addr}")) => {
            format!("connected to {ep}")
        }
        MonitorEventKind::Connected => format!("connected to {ep} ({addr})"),
        MonitorEventKind::ConnectDelayed => format!("connecting to {ep}"),
        MonitorEventKind::ConnectRetried => {
            format!("cannot connect to {ep} yet; retrying in {v} ms")
        }
        MonitorEventKind::Closed => format!("closed {ep}"),
        MonitorEventKind::Disconnected if inbound => format!("{peer} went away"),
        MonitorEventKind::Disconnected => format!("disconnected from {ep}"),
        MonitorEventKind::HandshakeSucceeded => format!("handshake with {peer} succeeded"),
        MonitorEventKind::HandshakeFailedNoDetail
        | MonitorEventKind::HandshakeFailedProtocol
        | MonitorEventKind::HandshakeFailedAuth => {
            format!("handshake with {peer} failed: {}", describe(e))
        }
        _ => format!("{} on {ep} (value {v})", e.kind),
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
        _ => match &e.reason {
            Some(reason) => reason.clone(),
            None => "the connection closed during the handshake (wrong credentials or key?)".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: MonitorEventKind, endpoint: &str, peer: &str) -> MonitorEvent {
        MonitorEvent::new(kind, 0, endpoint).with_peer_address(peer)
    }

    #[test]
    fn only_messages_that_reached_nobody_are_not_delivered() {
        // A PUB's message dropped with subscribers there: their topics filtered it out.
        let mut tally = Tally::default();
        tally.count(Sent::Dropped, SocketType::Pub, || 2);
        tally.count(Sent::Queued, SocketType::Pub, || 2);
        assert_eq!((tally.sent, tally.dropped, tally.filtered), (2, 0, 1));
        assert!(tally.verdict(SocketType::Pub).is_ok());
        // No subscriber there: not delivered (exit 4), and what to do about it.
        tally.count(Sent::Dropped, SocketType::Pub, || 0);
        let Err(Failure::Undelivered(text)) = tally.verdict(SocketType::Pub) else {
            panic!("delivered")
        };
        assert_eq!(
            text,
            "1 of 3 messages not delivered: no subscriber was connected to take it (a PUB \
             sends only to subscribers that have already joined: see --wait-subscribers and \
             --delay)"
        );
        // --wait-subscribers was given: it is not suggested again.
        tally.waited = true;
        let Err(Failure::Undelivered(text)) = tally.verdict(SocketType::Pub) else {
            panic!("delivered")
        };
        assert_eq!(
            text,
            "1 of 3 messages not delivered: no subscriber was connected to take it (the \
             subscribers --wait-subscribers waited for had gone)"
        );
        let mut radio = Tally {
            waited: true,
            ..Tally::default()
        };
        radio.count(Sent::Dropped, SocketType::Radio, || 0);
        radio.count(Sent::Dropped, SocketType::Radio, || 0);
        let Err(Failure::Undelivered(text)) = radio.verdict(SocketType::Radio) else {
            panic!("delivered")
        };
        assert_eq!(
            text,
            "2 of 2 messages not delivered: no dish had joined any group (the dishes \
             --wait-subscribers waited for had gone)"
        );
        // Other types: every dropped message counts, whatever the audience.
        let mut router = Tally::default();
        router.count(Sent::Dropped, SocketType::Router, || 5);
        assert_eq!(router.dropped, 1);
    }

    #[test]
    fn a_dish_message_prints_its_group_first() {
        let mut news = Message::from(&b"rain\tsnow"[..]);
        news.set_group("wea\tther").unwrap();
        assert_eq!(
            format_message(&news, Output::Escaped),
            b"wea\\tther\train\\tsnow\n"
        );
        assert_eq!(
            format_message(&news, Output::Hex),
            b"7765610974686572\t7261696e09736e6f77\n"
        );
        // A routing id is not printed: the line is the body alone.
        let mut reply = Message::from("pong");
        reply.set_routing_id(7).unwrap();
        assert_eq!(format_message(&reply, Output::Escaped), b"pong\n");
    }

    #[test]
    fn draft_types_send_each_frame_as_a_message() {
        let frames = vec![b"a".to_vec(), b"b".to_vec()];
        let classic = Shape {
            single_frame: false,
            group: None,
            routing_id: None,
        };
        assert_eq!(
            classic.messages(frames.clone()).unwrap(),
            [Message::from(["a", "b"])]
        );
        let radio = Shape {
            single_frame: true,
            group: Some(Bytes::from_static(b"g")),
            routing_id: None,
        };
        let sent = radio.messages(frames.clone()).unwrap();
        assert_eq!(sent.len(), 2);
        assert!(sent
            .iter()
            .all(|m| m.len() == 1 && m.group() == Some(&b"g"[..])));
        let peer = Shape {
            single_frame: true,
            group: None,
            routing_id: Some(42),
        };
        let sent = peer.messages(frames).unwrap();
        assert_eq!(sent[1].routing_id(), Some(42));
        assert_eq!(&sent[1].frames()[0][..], b"b");
    }

    #[test]
    fn events_name_the_peer_by_its_address() {
        use MonitorEventKind::*;
        let ep = "tcp://0.0.0.0:5559";
        let cases = [
            (
                event(Accepted, ep, "127.0.0.1:53412"),
                true,
                "accepted 127.0.0.1:53412 on tcp://0.0.0.0:5559",
            ),
            (
                event(Disconnected, ep, "[::1]:53412"),
                true,
                "[::1]:53412 on tcp://0.0.0.0:5559 went away",
            ),
            (
                event(HandshakeSucceeded, ep, "127.0.0.1:53412"),
                true,
                "handshake with 127.0.0.1:53412 on tcp://0.0.0.0:5559 succeeded",
            ),
            // ipc peers have no address.
            (
                event(Accepted, "ipc:///tmp/s", ""),
                true,
                "accepted a connection on ipc:///tmp/s",
            ),
            (
                event(HandshakeSucceeded, "ipc:///tmp/s", ""),
                true,
                "handshake with a peer connected on ipc:///tmp/s succeeded",
            ),
            // Connecting: the endpoint, and where a name led when it says more.
            (
                event(Connected, "tcp://127.0.0.1:5559", "127.0.0.1:5559"),
                false,
                "connected to tcp://127.0.0.1:5559",
            ),
            (
                event(Connected, "tcp://localhost:5559", "[::1]:5559"),
                false,
                "connected to tcp://localhost:5559 ([::1]:5559)",
            ),
            (
                event(Disconnected, "tcp://localhost:5559", "[::1]:5559"),
                false,
                "disconnected from tcp://localhost:5559",
            ),
        ];
        for (e, inbound, expected) in cases {
            assert_eq!(event_text(&e, inbound), expected, "{e:?}");
        }
        assert_eq!(
            peer_on(&event(HandshakeFailedAuth, ep, "127.0.0.1:1")),
            "127.0.0.1:1 on tcp://0.0.0.0:5559"
        );
    }
}
