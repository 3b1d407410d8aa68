//! The peers on our mio driver (on either backend: epoll, or io_uring for `uring`), written
//! as a blocking application would: `send_many` and
//! `recv_many` (or, with `--api each`, `send_slice` and `recv`) in a loop.

use std::fmt::Display;
use std::time::{Duration, Instant};

use zmtp_mio::{Bytes, Context, Message, Options, Socket, SocketType};

use crate::peer::{
    batch_len, each, fill, go_signal, latency_result, lossy_result, say, throughput_result, tick,
    Batcher, Checker, PeerArgs, Role, DATA, GROUP, UDP_IDLE, WARMUP,
};

fn err(e: impl Display) -> String {
    e.to_string()
}

/// Run one peer with its own context.
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    let backend = match args.imp {
        crate::peer::Impl::Uring => zmtp_mio::Backend::IoUring,
        _ => zmtp_mio::Backend::Mio,
    };
    let ctx = Context::with_backend(backend).map_err(err)?;
    // The ring's zero-copy sends, to compare (the default is `auto`).
    match std::env::var("ZMTP_BENCH_ZERO_COPY").as_deref() {
        Ok("off") => ctx.set_zero_copy(zmtp_mio::ZeroCopy::Off),
        Ok("always") => ctx.set_zero_copy(zmtp_mio::ZeroCopy::Always),
        Ok("auto") | Err(_) => {}
        Ok(other) => return Err(format!("ZMTP_BENCH_ZERO_COPY={other}: off, auto or always")),
    }
    match args.role {
        Role::Pull => pull(&ctx, args),
        Role::Push => push(&ctx, args),
        Role::Sub => sub(&ctx, args),
        Role::Pub => publish(&ctx, args),
        Role::Rep => rep(&ctx, args),
        Role::Req => req(&ctx, args),
        Role::Radio => radio(&ctx, args),
        Role::Dish => dish(&ctx, args),
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

fn bind(socket: &Socket, endpoint: &str) -> Result<(), String> {
    let resolved = socket.bind(endpoint).map_err(err)?;
    say(&format!("ENDPOINT {resolved}"));
    Ok(())
}

fn receive_timed(socket: &Socket, args: &PeerArgs) -> Result<Option<String>, String> {
    let mut checker = Checker::new(args.size);
    loop {
        let msg = socket.recv().map_err(err)?;
        if checker.first(args.role, body(&msg)?)? {
            break;
        }
    }
    let start = Instant::now();
    if each() {
        for i in 1..args.count {
            let msg = socket.recv().map_err(err)?;
            checker.check(body(&msg)?)?;
            tick(i);
        }
    } else {
        let limit = batch_len(args.size) as u64;
        let mut batch = Vec::with_capacity(limit as usize);
        let mut i = 1;
        while i < args.count {
            batch.clear();
            let max = (args.count - i).min(limit) as usize;
            socket.recv_many(&mut batch, max).map_err(err)?;
            for msg in &batch {
                checker.check(body(msg)?)?;
                tick(i);
                i += 1;
            }
        }
    }
    Ok(Some(throughput_result(
        start.elapsed(),
        args.count.saturating_sub(1),
    )))
}

fn send_all(socket: &Socket, args: &PeerArgs) -> Result<(), String> {
    if !each() && args.size > 0 {
        let mut batcher = Batcher::new(args.size);
        let mut seq = 0;
        while seq < args.count {
            let bodies = batcher.fill(seq, args.count);
            let mut rest = &bodies[..];
            while !rest.is_empty() {
                let n = socket.send_many(rest).map_err(err)?;
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
        socket.send_slice(&buf).map_err(err)?;
        tick(seq);
    }
    Ok(())
}

fn pull(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Pull).map_err(err)?;
    bind(&socket, &args.endpoint)?;
    receive_timed(&socket, args)
}

fn push(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Push).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    send_all(&socket, args)?;
    // LINGER is infinite: this returns once everything is written.
    socket.close();
    Ok(None)
}

fn sub(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket_with(SocketType::Sub, unlimited()).map_err(err)?;
    socket.subscribe(b"").map_err(err)?;
    bind(&socket, &args.endpoint)?;
    receive_timed(&socket, args)
}

fn publish(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket_with(SocketType::Pub, unlimited()).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let go = go_signal();
    let mut warmup = vec![0u8; args.size];
    fill(&mut warmup, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        // Dropped until the subscription arrives; that is the point.
        let _ = socket.try_send(Bytes::copy_from_slice(&warmup));
        std::thread::sleep(Duration::from_millis(5));
    }
    send_all(&socket, args)?;
    socket.close();
    Ok(None)
}

fn rep(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Rep).map_err(err)?;
    bind(&socket, &args.endpoint)?;
    for i in 0..args.warmup + args.count {
        let request = socket.recv().map_err(err)?;
        socket.send(request).map_err(err)?;
        tick(i);
    }
    socket.close();
    Ok(None)
}

fn req(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Req).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let mut buf = vec![0u8; args.size];
    let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
    for i in 0..args.warmup + args.count {
        fill(&mut buf, DATA, i);
        let start = Instant::now();
        socket.send(Bytes::copy_from_slice(&buf)).map_err(err)?;
        let reply = socket.recv().map_err(err)?;
        let took = start.elapsed();
        if body(&reply)? != &buf[..] {
            return Err(format!("reply {i} differs from its request"));
        }
        if i >= args.warmup {
            samples.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
        tick(i);
    }
    socket.close();
    Ok(Some(latency_result(samples)))
}

/// A message of [`GROUP`] with a copy of `body`.
fn grouped(body: &[u8]) -> Result<Message, String> {
    let mut msg = Message::from(Bytes::copy_from_slice(body));
    msg.set_group(GROUP).map_err(err)?;
    Ok(msg)
}

fn radio(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Radio).map_err(err)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let go = go_signal();
    let mut buf = vec![0u8; args.size];
    fill(&mut buf, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        // Lost until the DISH is listening; that is the point.
        let _ = socket.try_send(grouped(&buf)?);
        std::thread::sleep(Duration::from_millis(5));
    }
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        // A RADIO never waits: at SNDHWM the message is dropped, and counted lost.
        socket.send(grouped(&buf)?).map_err(err)?;
        tick(seq);
    }
    socket.close();
    Ok(None)
}

fn dish(ctx: &Context, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = ctx.socket(SocketType::Dish).map_err(err)?;
    socket.join(GROUP).map_err(err)?;
    bind(&socket, &args.endpoint)?;
    let mut checker = Checker::new(args.size);
    loop {
        let msg = socket.recv().map_err(err)?;
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
    socket.set_rcvtimeo(Some(UDP_IDLE));
    while checker.next() < args.count {
        batch.clear();
        match socket.recv_many(&mut batch, limit) {
            Err(zmtp_mio::Error::Timeout) => break,
            other => other.map_err(err)?,
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
