//! The peers on monocoque-rs (crate `monocoque-rs`, library `monocoque`), an anchor: another
//! ZeroMQ in Rust, on its tokio backend, in the modes its documentation gives for speed.
//!
//! - PUSH/PULL: write coalescing on (sends gather in a 64 KB buffer, written when full) and
//!   one `flush` after the last message; the receiver uses the allocation-free `recv_into`.
//! - PUB/SUB: its PUB binds (it accepts subscribers; it cannot connect), so in this test
//!   the roles are swapped: the PUB binds and the SUB connects. TCP only: its PUB has no
//!   IPC listener. Its send HWM bounds a channel to its writer thread, and 0 would make that
//!   channel a rendezvous that drops every message, so "HWM 0" (no limit) is a bound far
//!   above any run's count. Its PUB has no close that waits for queued messages, so the PUB
//!   process stays up until the orchestrator closes its input, which it does once the SUB
//!   reported.
//! - REQ/REP: the default (eager) mode, one write per message, which it documents as the
//!   latency mode; `send_one` and `recv_into` on the REQ.
//!
//! Its sockets are one connection each: the binding side accepts one peer, so it binds its
//! own listener (on port 0, or the IPC path), reports the endpoint, then accepts.

use std::fmt::Display;
use std::time::{Duration, Instant};

use monocoque::rt::{LocalRuntime, TcpListener, UnixListener, UnixStream};
use monocoque::zmq::{PubSocket, PullSocket, PushSocket, RepSocket, ReqSocket, SubSocket};
use monocoque::{Bytes, SocketOptions};

use crate::peer::{
    fill, go_signal, latency_result, say, throughput_result, tick, wait_for_input_end, Checker,
    PeerArgs, Role, DATA, WARMUP,
};

fn err(e: impl Display) -> String {
    format!("monocoque: {e}")
}

/// Why monocoque cannot run a side over a transport, if it cannot.
pub fn unsupported(role: Role, ipc: bool) -> Option<&'static str> {
    match role {
        Role::Pub | Role::Sub if ipc => Some("monocoque-rs's PUB listens on TCP only"),
        _ => None,
    }
}

/// The sides of a test for monocoque, (binds, connects), from the usual ones: its PUB must
/// bind, so PUB/SUB is turned around.
pub fn sides(usual: (Role, Role)) -> (Role, Role) {
    match usual {
        (Role::Sub, Role::Pub) => (Role::Pub, Role::Sub),
        other => other,
    }
}

/// The endpoint without its transport: `Ok(address)` for tcp, `Err(path)` for ipc.
fn split(endpoint: &str) -> Result<Result<&str, &str>, String> {
    if let Some(addr) = endpoint.strip_prefix("tcp://") {
        Ok(Ok(addr))
    } else if let Some(path) = endpoint.strip_prefix("ipc://") {
        Ok(Err(path))
    } else {
        Err(format!("unsupported endpoint {endpoint}"))
    }
}

/// Run one peer on monocoque's single-threaded tokio runtime (a current-thread runtime
/// with a local task set, as its tokio backend asks).
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    if let Some(why) = unsupported(args.role, args.endpoint.starts_with("ipc://")) {
        return Err(why.to_string());
    }
    let runtime = LocalRuntime::new().map_err(err)?;
    runtime.block_on(async {
        match args.role {
            Role::Pull => pull(args).await,
            Role::Push => push(args).await,
            Role::Sub => sub(args).await,
            Role::Pub => publish(args).await,
            Role::Rep => rep(args).await,
            Role::Req => req(args).await,
            Role::Radio | Role::Dish => Err(crate::peer::OURS_ONLY.to_string()),
        }
    })
}

/// A listener of either transport, bound before the endpoint is reported.
enum Listener {
    Tcp(TcpListener),
    Ipc(UnixListener),
}

async fn listen(endpoint: &str) -> Result<Listener, String> {
    match split(endpoint)? {
        Ok(addr) => {
            // `*` (any port) is port 0 to the OS.
            let addr = addr.replace(":*", ":0");
            let listener = TcpListener::bind(addr.as_str()).await.map_err(err)?;
            let local = listener.local_addr().map_err(err)?;
            say(&format!("ENDPOINT tcp://{local}"));
            Ok(Listener::Tcp(listener))
        }
        Err(path) => {
            let listener = UnixListener::bind(path).await.map_err(err)?;
            say(&format!("ENDPOINT ipc://{path}"));
            Ok(Listener::Ipc(listener))
        }
    }
}

/// The one message frame of `frames`.
fn body(frames: &[Bytes]) -> Result<&[u8], String> {
    match frames {
        [frame] => Ok(&frame[..]),
        frames => Err(format!("a {}-frame message", frames.len())),
    }
}

/// Receive and check `count` data messages with `recv_into` (`Ok(false)`: the connection
/// ended), timing from the first to the last.
macro_rules! receive_timed {
    ($socket:expr, $args:expr) => {{
        let args: &PeerArgs = $args;
        let mut checker = Checker::new(args.size);
        let mut frames: Vec<Bytes> = Vec::new();
        loop {
            if !$socket.recv_into(&mut frames).await.map_err(err)? {
                return Err("the connection ended before the first message".to_string());
            }
            if checker.first(args.role, body(&frames)?)? {
                break;
            }
        }
        let start = Instant::now();
        for i in 1..args.count {
            if !$socket.recv_into(&mut frames).await.map_err(err)? {
                return Err(format!("the connection ended after {i} messages"));
            }
            checker.check(body(&frames)?)?;
            tick(i);
        }
        Ok(Some(throughput_result(
            start.elapsed(),
            args.count.saturating_sub(1),
        )))
    }};
}

/// Send `count` data messages (each copied from a reused buffer into a `Bytes`, as
/// its API takes), then flush what write coalescing holds.
macro_rules! send_all {
    ($socket:expr, $args:expr) => {{
        let args: &PeerArgs = $args;
        let mut buf = vec![0u8; args.size];
        for seq in 0..args.count {
            fill(&mut buf, DATA, seq);
            $socket
                .send_one(Bytes::copy_from_slice(&buf))
                .await
                .map_err(err)?;
            tick(seq);
        }
        $socket.flush().await.map_err(err)?;
    }};
}

fn coalescing() -> SocketOptions {
    SocketOptions::default().with_write_coalescing(true)
}

async fn pull(args: &PeerArgs) -> Result<Option<String>, String> {
    match listen(&args.endpoint).await? {
        Listener::Tcp(listener) => {
            let (stream, _) = listener.accept().await.map_err(err)?;
            let mut socket = PullSocket::from_tcp(stream).await.map_err(err)?;
            receive_timed!(socket, args)
        }
        Listener::Ipc(listener) => {
            let (stream, _) = listener.accept().await.map_err(err)?;
            let mut socket = PullSocket::from_unix_stream(stream).await.map_err(err)?;
            receive_timed!(socket, args)
        }
    }
}

async fn push(args: &PeerArgs) -> Result<Option<String>, String> {
    match split(&args.endpoint)? {
        Ok(addr) => {
            let mut socket = PushSocket::connect_with_options(addr, coalescing())
                .await
                .map_err(err)?;
            send_all!(socket, args);
        }
        Err(path) => {
            let stream = UnixStream::connect(path).await.map_err(err)?;
            let mut socket = PushSocket::from_unix_stream_with_options(stream, coalescing())
                .await
                .map_err(err)?;
            send_all!(socket, args);
        }
    }
    Ok(None)
}

/// A send HWM no run reaches (see the module docs).
const NO_LIMIT: usize = 1 << 32;

async fn publish(args: &PeerArgs) -> Result<Option<String>, String> {
    let addr = split(&args.endpoint)?
        .map_err(|_| "monocoque-rs's PUB listens on TCP only".to_string())?
        .replace(":*", ":0");
    let options = coalescing().with_send_hwm(NO_LIMIT);
    let mut socket = PubSocket::bind_with_options(addr.as_str(), options)
        .await
        .map_err(err)?;
    say(&format!(
        "ENDPOINT tcp://{}",
        socket.local_addr().map_err(err)?
    ));
    socket.accept_subscriber().await.map_err(err)?;
    let go = go_signal();
    let mut warmup = vec![0u8; args.size];
    fill(&mut warmup, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        socket
            .send_frames(&[Bytes::copy_from_slice(&warmup)])
            .await
            .map_err(err)?;
        monocoque::rt::sleep(Duration::from_millis(5)).await;
    }
    let mut buf = vec![0u8; args.size];
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        socket
            .send_frames(&[Bytes::copy_from_slice(&buf)])
            .await
            .map_err(err)?;
        tick(seq);
    }
    if socket.drop_count() > 0 {
        return Err(format!("the PUB dropped {} messages", socket.drop_count()));
    }
    // Its writer threads write what is queued; keep them running until the SUB has it all.
    monocoque::rt::spawn_blocking(wait_for_input_end).await;
    Ok(None)
}

async fn sub(args: &PeerArgs) -> Result<Option<String>, String> {
    let addr =
        split(&args.endpoint)?.map_err(|_| "monocoque-rs's PUB listens on TCP only".to_string())?;
    let options = SocketOptions::default().with_recv_hwm(NO_LIMIT);
    let mut socket = SubSocket::connect_with_options(addr, options)
        .await
        .map_err(err)?;
    socket.subscribe(b"").await.map_err(err)?;
    receive_timed!(socket, args)
}

macro_rules! echo_all {
    ($socket:expr, $args:expr) => {{
        let args: &PeerArgs = $args;
        for i in 0..args.warmup + args.count {
            let request = $socket
                .recv()
                .await
                .map_err(err)?
                .ok_or_else(|| format!("the connection ended after {i} requests"))?;
            $socket.send(request).await.map_err(err)?;
            tick(i);
        }
    }};
}

async fn rep(args: &PeerArgs) -> Result<Option<String>, String> {
    match listen(&args.endpoint).await? {
        Listener::Tcp(listener) => {
            let (stream, _) = listener.accept().await.map_err(err)?;
            let mut socket = RepSocket::from_tcp(stream).await.map_err(err)?;
            echo_all!(socket, args);
        }
        Listener::Ipc(listener) => {
            let (stream, _) = listener.accept().await.map_err(err)?;
            let mut socket = RepSocket::from_unix_stream(stream).await.map_err(err)?;
            echo_all!(socket, args);
        }
    }
    Ok(None)
}

macro_rules! time_round_trips {
    ($socket:expr, $args:expr) => {{
        let args: &PeerArgs = $args;
        let mut buf = vec![0u8; args.size];
        let mut reply: Vec<Bytes> = Vec::new();
        let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
        for i in 0..args.warmup + args.count {
            fill(&mut buf, DATA, i);
            let start = Instant::now();
            $socket
                .send_one(Bytes::copy_from_slice(&buf))
                .await
                .map_err(err)?;
            if !$socket.recv_into(&mut reply).await.map_err(err)? {
                return Err(format!("the connection ended after {i} round trips"));
            }
            let took = start.elapsed();
            if body(&reply)? != &buf[..] {
                return Err(format!("reply {i} differs from its request"));
            }
            if i >= args.warmup {
                samples.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            }
            tick(i);
        }
        Ok(Some(latency_result(samples)))
    }};
}

async fn req(args: &PeerArgs) -> Result<Option<String>, String> {
    match split(&args.endpoint)? {
        Ok(_) => {
            let mut socket = ReqSocket::connect(&args.endpoint).await.map_err(err)?;
            time_round_trips!(socket, args)
        }
        Err(path) => {
            let mut socket = ReqSocket::connect_ipc(path).await.map_err(err)?;
            time_round_trips!(socket, args)
        }
    }
}
