//! The peers on zeromq (zmq.rs), an optional anchor (the `zmqrs` feature): on a
//! current-thread tokio runtime, written as an application would, `send(..).await` and
//! `recv().await` in a loop.
//!
//! It has no LINGER and no close that waits for queued messages, so a sender stays up until
//! the orchestrator closes its input, which it does once the receiver reported. It has no
//! HWM option either: its PUB drops what does not fit its fixed queue, which the subscriber's
//! checks then report as a missing message.

use std::fmt::Display;
use std::time::{Duration, Instant};

use zeromq::{
    PubSocket, PullSocket, PushSocket, RepSocket, ReqSocket, Socket, SocketRecv, SocketSend,
    SubSocket, ZmqMessage,
};

use crate::peer::{
    fill, go_signal, latency_result, say, throughput_result, tick, wait_for_input_end, Checker,
    PeerArgs, Role, DATA, WARMUP,
};

fn err(e: impl Display) -> String {
    format!("zmq.rs: {e}")
}

/// Run one peer on a fresh current-thread tokio runtime.
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(err)?;
    runtime.block_on(async {
        match args.role {
            Role::Pull => {
                let mut socket = PullSocket::new();
                bind(&mut socket, &args.endpoint).await?;
                receive_timed(&mut socket, args).await
            }
            Role::Sub => {
                let mut socket = SubSocket::new();
                socket.subscribe("").await.map_err(err)?;
                bind(&mut socket, &args.endpoint).await?;
                receive_timed(&mut socket, args).await
            }
            Role::Push => {
                let mut socket = PushSocket::new();
                socket.connect(&args.endpoint).await.map_err(err)?;
                send_all(&mut socket, args).await?;
                tokio::task::spawn_blocking(wait_for_input_end)
                    .await
                    .map_err(err)?;
                Ok(None)
            }
            Role::Pub => {
                let mut socket = PubSocket::new();
                socket.connect(&args.endpoint).await.map_err(err)?;
                let go = go_signal();
                let mut warmup = vec![0u8; args.size];
                fill(&mut warmup, WARMUP, 0);
                while !go.load(std::sync::atomic::Ordering::Acquire) {
                    socket
                        .send(ZmqMessage::from(warmup.clone()))
                        .await
                        .map_err(err)?;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                send_all(&mut socket, args).await?;
                tokio::task::spawn_blocking(wait_for_input_end)
                    .await
                    .map_err(err)?;
                Ok(None)
            }
            Role::Rep => {
                let mut socket = RepSocket::new();
                bind(&mut socket, &args.endpoint).await?;
                for i in 0..args.warmup + args.count {
                    let request = socket.recv().await.map_err(err)?;
                    socket.send(request).await.map_err(err)?;
                    tick(i);
                }
                // The last reply must leave before the process ends; REQ ends after it.
                tokio::task::spawn_blocking(wait_for_input_end)
                    .await
                    .map_err(err)?;
                Ok(None)
            }
            Role::Req => {
                let mut socket = ReqSocket::new();
                socket.connect(&args.endpoint).await.map_err(err)?;
                round_trips(&mut socket, args).await.map(Some)
            }
            Role::Radio | Role::Dish => Err(crate::peer::OURS_ONLY.to_string()),
        }
    })
}

async fn bind(socket: &mut impl Socket, endpoint: &str) -> Result<(), String> {
    let endpoint = endpoint.replace("127.0.0.1:*", "127.0.0.1:0");
    let resolved = socket.bind(&endpoint).await.map_err(err)?;
    say(&format!("ENDPOINT {resolved}"));
    Ok(())
}

fn body(msg: &ZmqMessage) -> Result<&[u8], String> {
    match (msg.len(), msg.get(0)) {
        (1, Some(frame)) => Ok(&frame[..]),
        (n, _) => Err(format!("a {n}-frame message")),
    }
}

async fn receive_timed(
    socket: &mut impl SocketRecv,
    args: &PeerArgs,
) -> Result<Option<String>, String> {
    let mut checker = Checker::new(args.size);
    loop {
        let msg = socket.recv().await.map_err(err)?;
        if checker.first(args.role, body(&msg)?)? {
            break;
        }
    }
    let start = Instant::now();
    for i in 1..args.count {
        let msg = socket.recv().await.map_err(err)?;
        checker.check(body(&msg)?)?;
        tick(i);
    }
    Ok(Some(throughput_result(
        start.elapsed(),
        args.count.saturating_sub(1),
    )))
}

async fn send_all(socket: &mut impl SocketSend, args: &PeerArgs) -> Result<(), String> {
    let mut buf = vec![0u8; args.size];
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        socket
            .send(ZmqMessage::from(buf.clone()))
            .await
            .map_err(err)?;
        tick(seq);
    }
    Ok(())
}

async fn round_trips(socket: &mut ReqSocket, args: &PeerArgs) -> Result<String, String> {
    let mut buf = vec![0u8; args.size];
    let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
    for i in 0..args.warmup + args.count {
        fill(&mut buf, DATA, i);
        let start = Instant::now();
        socket
            .send(ZmqMessage::from(buf.clone()))
            .await
            .map_err(err)?;
        let reply = socket.recv().await.map_err(err)?;
        let took = start.elapsed();
        if body(&reply)? != &buf[..] {
            return Err(format!("reply {i} differs from its request"));
        }
        if i >= args.warmup {
            samples.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
        tick(i);
    }
    Ok(latency_result(samples))
}
