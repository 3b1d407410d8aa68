//! The peers on our drivers (tokio and smol, one generic code), written as an application
//! would: `send(..).await` and `recv().await` in a loop.

use std::fmt::Display;
use std::time::{Duration, Instant};

use zmtp_async::{Bytes, Message, Options, Runtime, SocketType};
use zmtp_smol::Smol;
use zmtp_tokio::Tokio;

type Socket<R> = zmtp_async::Socket<R>;

use crate::peer::{
    batch_len, each, fill, go_signal, latency_result, lossy_result, say, throughput_result, tick,
    Batcher, Checker, Flavor, Impl, PeerArgs, Role, DATA, GROUP, UDP_IDLE, WARMUP,
};

fn err(e: impl Display) -> String {
    e.to_string()
}

/// Run one peer: smol on `zmtp_smol::block_on` (one thread), tokio on a fresh runtime of the
/// requested flavour.
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    if args.imp == Impl::Smol {
        return zmtp_smol::block_on(role::<Smol>(args));
    }
    let runtime = match args.flavor {
        Flavor::Current | Flavor::Hop => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Flavor::Multi => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .map_err(err)?;
    runtime.block_on(role::<Tokio>(args))
}

async fn role<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    match args.role {
        Role::Pull => pull::<R>(args).await,
        Role::Push => push::<R>(args).await,
        Role::Sub => sub::<R>(args).await,
        Role::Pub => publish::<R>(args).await,
        Role::Rep => rep::<R>(args).await,
        Role::Req => req::<R>(args).await,
        Role::Radio => radio::<R>(args).await,
        Role::Dish => dish::<R>(args).await,
    }
}

/// HWM 0 (no limit) on both directions, as the PUB/SUB test asks.
fn unlimited() -> Options {
    let mut options = Options::default();
    options.sndhwm = 0;
    options.rcvhwm = 0;
    options
}

fn body(msg: &Message) -> Result<&[u8], String> {
    match msg.frames() {
        [frame] => Ok(&frame[..]),
        frames => Err(format!("a {}-frame message", frames.len())),
    }
}

async fn bind<R: Runtime>(socket: &Socket<R>, endpoint: &str) -> Result<(), String> {
    let resolved = socket.bind(endpoint).await.map_err(err)?;
    say(&format!("ENDPOINT {resolved}"));
    Ok(())
}

/// Receive `count` data messages, timing from the first to the last. Warm-up messages
/// before the first are skipped (and the first one announced).
async fn receive_timed<R: Runtime>(
    socket: &Socket<R>,
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
    if !each() {
        let limit = batch_len(args.size) as u64;
        let mut batch = Vec::with_capacity(limit as usize);
        let mut i = 1;
        while i < args.count {
            batch.clear();
            let max = (args.count - i).min(limit) as usize;
            socket.recv_many(&mut batch, max).await.map_err(err)?;
            for msg in &batch {
                checker.check(body(msg)?)?;
                tick(i);
                i += 1;
            }
        }
    } else {
        for i in 1..args.count {
            let msg = socket.recv().await.map_err(err)?;
            checker.check(body(&msg)?)?;
            tick(i);
        }
    }
    let elapsed = start.elapsed();
    Ok(Some(throughput_result(
        elapsed,
        args.count.saturating_sub(1),
    )))
}

/// Send `count` data messages, each copied from the caller's buffer, which is reused for
/// the next (`send_slice`, the counterpart of libzmq's `zmq_send`).
async fn send_all<R: Runtime>(socket: &Socket<R>, args: &PeerArgs) -> Result<(), String> {
    if args.flavor == Flavor::Hop {
        return send_all_through_channel(socket, args).await;
    }
    if !each() && args.size > 0 {
        let mut batcher = Batcher::new(args.size);
        let mut seq = 0;
        while seq < args.count {
            let bodies = batcher.fill(seq, args.count);
            let mut rest = &bodies[..];
            while !rest.is_empty() {
                let n = socket.send_many(rest).await.map_err(err)?;
                rest = &rest[n..];
            }
            seq += bodies.len() as u64;
            tick(seq - 1);
        }
        return Ok(());
    }
    let mut buf = vec![0u8; args.size];
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        socket.send_slice(&buf).await.map_err(err)?;
        tick(seq);
    }
    Ok(())
}

/// [`send_all`] with a channel hop per message: the loop hands each message to a task
/// that sends it, as a design with a separate I/O task would.
async fn send_all_through_channel<R: Runtime>(
    socket: &Socket<R>,
    args: &PeerArgs,
) -> Result<(), String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(1024);
    let sender = async {
        while let Some(msg) = rx.recv().await {
            socket.send(msg).await.map_err(err)?;
        }
        Ok::<(), String>(())
    };
    let producer = async {
        let mut buf = vec![0u8; args.size];
        for seq in 0..args.count {
            fill(&mut buf, DATA, seq);
            tx.send(Bytes::copy_from_slice(&buf))
                .await
                .map_err(|_| "sending task ended".to_string())?;
            tick(seq);
        }
        drop(tx);
        Ok::<(), String>(())
    };
    let (a, b) = tokio::join!(sender, producer);
    a.and(b)
}

async fn pull<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Pull).map_err(err)?;
    bind(&socket, &args.endpoint).await?;
    receive_timed(&socket, args).await
}

async fn push<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Push).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    send_all(&socket, args).await?;
    // LINGER is infinite: this returns once everything is written.
    socket.close().await;
    Ok(None)
}

async fn sub<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::with_options(SocketType::Sub, unlimited()).map_err(err)?;
    socket.subscribe(b"").map_err(err)?;
    bind(&socket, &args.endpoint).await?;
    receive_timed(&socket, args).await
}

async fn publish<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::with_options(SocketType::Pub, unlimited()).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let go = go_signal();
    let mut warmup = vec![0u8; args.size];
    fill(&mut warmup, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        // Dropped until the subscription arrives; that is the point.
        let _ = socket.try_send(Bytes::copy_from_slice(&warmup));
        let runtime = R::current().ok_or("no runtime")?;
        runtime
            .sleep_until(Instant::now() + Duration::from_millis(5))
            .await;
    }
    send_all(&socket, args).await?;
    socket.close().await;
    Ok(None)
}

async fn rep<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Rep).map_err(err)?;
    bind(&socket, &args.endpoint).await?;
    for i in 0..args.warmup + args.count {
        let request = socket.recv().await.map_err(err)?;
        socket.send(request).await.map_err(err)?;
        tick(i);
    }
    socket.close().await;
    Ok(None)
}

async fn req<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Req).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let mut buf = vec![0u8; args.size];
    let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
    for i in 0..args.warmup + args.count {
        fill(&mut buf, DATA, i);
        let start = Instant::now();
        socket
            .send(Bytes::copy_from_slice(&buf))
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
    socket.close().await;
    Ok(Some(latency_result(samples)))
}

/// A message of [`GROUP`] with a copy of `body`.
fn grouped(body: &[u8]) -> Result<Message, String> {
    let mut msg = Message::from(Bytes::copy_from_slice(body));
    msg.set_group(GROUP).map_err(err)?;
    Ok(msg)
}

async fn radio<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Radio).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let runtime = R::current().ok_or("no runtime")?;
    let go = go_signal();
    let mut buf = vec![0u8; args.size];
    fill(&mut buf, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        // Lost until the DISH is listening; that is the point.
        let _ = socket.try_send(grouped(&buf)?);
        runtime
            .sleep_until(Instant::now() + Duration::from_millis(5))
            .await;
    }
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        // A RADIO never waits: at SNDHWM the message is dropped, and counted lost.
        socket.send(grouped(&buf)?).await.map_err(err)?;
        tick(seq);
    }
    socket.close().await;
    Ok(None)
}

async fn dish<R: Runtime>(args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = Socket::<R>::new(SocketType::Dish).map_err(err)?;
    socket.join(GROUP).map_err(err)?;
    bind(&socket, &args.endpoint).await?;
    let runtime = R::current().ok_or("no runtime")?;
    let mut checker = Checker::new(args.size);
    loop {
        let msg = socket.recv().await.map_err(err)?;
        if checker.first(args.role, body(&msg)?)? {
            break;
        }
    }
    let start = Instant::now();
    let mut last = start;
    let mut received = 1;
    let limit = if each() { 1 } else { batch_len(args.size) };
    let mut batch = Vec::with_capacity(limit);
    // Until the last message arrives, or nothing does for UDP_IDLE (the rest was lost).
    while checker.next() < args.count {
        batch.clear();
        let got =
            zmtp_async::runtime::timeout(&runtime, UDP_IDLE, socket.recv_many(&mut batch, limit))
                .await;
        match got {
            None => break,
            Some(result) => result.map_err(err)?,
        };
        for msg in &batch {
            if checker.check_lossy(body(msg)?)? {
                received += 1;
                tick(received);
            }
        }
        last = Instant::now();
    }
    Ok(Some(lossy_result(
        last - start,
        received - 1,
        received,
        args.count,
    )))
}
