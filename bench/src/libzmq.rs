//! The peers on libzmq, written as its own `local_thr`/`remote_thr`/`local_lat` tools are:
//! blocking `zmq_send` from a buffer, `zmq_msg_recv` into one reused message.

use std::time::{Duration, Instant};

use crate::peer::{
    fill, go_signal, latency_result, say, throughput_result, tick, Checker, PeerArgs, Role, DATA,
    WARMUP,
};
use zmtp_conformance::ffi::{
    self, Ctx, Msg, ZSocket, ZmqError, ZMQ_DONTWAIT, ZMQ_LINGER, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH,
    ZMQ_RCVHWM, ZMQ_REP, ZMQ_REQ, ZMQ_SNDHWM, ZMQ_SUB, ZMQ_SUBSCRIBE,
};

fn err(e: ZmqError) -> String {
    format!("libzmq: {e}")
}

/// The variable naming our C ABI's `libzmq.so` to a `cabi` peer: the parent sets it, with
/// `LD_LIBRARY_PATH` pointing at a directory where `libzmq.so.5` is that file.
pub const CABI_LIB_VAR: &str = "ZMTP_BENCH_CABI_LIB";

/// A `cabi` peer's check that the libzmq it runs on is ours: the `libzmq.so.5` mapped into
/// this process (`/proc/self/maps`) is the file [`CABI_LIB_VAR`] names.
pub fn check_cabi() -> Result<(), String> {
    let wanted = std::env::var_os(CABI_LIB_VAR).ok_or(format!("{CABI_LIB_VAR} is not set"))?;
    let wanted = std::fs::canonicalize(&wanted)
        .map_err(|e| format!("{}: {e}", std::path::Path::new(&wanted).display()))?;
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| format!("cannot read /proc/self/maps: {e}"))?;
    let mapped: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| path.contains("libzmq.so"))
        .collect();
    let ours = mapped
        .iter()
        .any(|path| std::fs::canonicalize(path).is_ok_and(|p| p == wanted));
    if ours {
        Ok(())
    } else {
        Err(format!(
            "the libzmq loaded is {}, not our C ABI ({})",
            mapped.first().unwrap_or(&"none"),
            wanted.display()
        ))
    }
}

/// The linked libzmq's version, e.g. `4.3.4`.
pub fn version() -> String {
    let (major, minor, patch) = ffi::version();
    format!("{major}.{minor}.{patch}")
}

/// Run one peer with its own context.
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    let ctx = Ctx::try_new().map_err(err)?;
    let result = match args.role {
        Role::Pull => pull(&ctx, args),
        Role::Push => push(&ctx, args),
        Role::Sub => sub(&ctx, args),
        Role::Pub => publish(&ctx, args),
        Role::Rep => rep(&ctx, args),
        Role::Req => req(&ctx, args),
        Role::Radio | Role::Dish => Err(crate::peer::OURS_ONLY.to_string()),
    };
    // Dropping the context waits for sockets with LINGER -1 to write what they queued.
    drop(ctx);
    result
}

fn socket(ctx: &Ctx, kind: std::ffi::c_int, linger: i32) -> Result<ZSocket<'_>, String> {
    let socket = ctx.socket(kind).map_err(err)?;
    socket.set_int(ZMQ_LINGER, linger).map_err(err)?;
    Ok(socket)
}

fn unlimited(socket: &ZSocket<'_>) -> Result<(), String> {
    socket.set_int(ZMQ_SNDHWM, 0).map_err(err)?;
    socket.set_int(ZMQ_RCVHWM, 0).map_err(err)
}

fn bind(socket: &ZSocket<'_>, endpoint: &str) -> Result<(), String> {
    socket.bind(endpoint).map_err(err)?;
    say(&format!(
        "ENDPOINT {}",
        socket.last_endpoint().map_err(err)?
    ));
    Ok(())
}

fn recv_body<'m>(socket: &ZSocket<'_>, msg: &'m mut Msg) -> Result<&'m [u8], String> {
    socket.recv_msg(msg).map_err(err)?;
    if msg.more() {
        return Err("a multipart message".to_string());
    }
    Ok(msg.data())
}

fn receive_timed(socket: &ZSocket<'_>, args: &PeerArgs) -> Result<Option<String>, String> {
    let mut checker = Checker::new(args.size);
    let mut msg = Msg::new();
    while !checker.first(args.role, recv_body(socket, &mut msg)?)? {}
    let start = Instant::now();
    for i in 1..args.count {
        checker.check(recv_body(socket, &mut msg)?)?;
        tick(i);
    }
    let elapsed = start.elapsed();
    Ok(Some(throughput_result(
        elapsed,
        args.count.saturating_sub(1),
    )))
}

fn send_all(socket: &ZSocket<'_>, args: &PeerArgs) -> Result<(), String> {
    let mut buf = vec![0u8; args.size];
    for seq in 0..args.count {
        fill(&mut buf, DATA, seq);
        socket.send(&buf, 0).map_err(err)?;
        tick(seq);
    }
    Ok(())
}

fn pull(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_PULL, 0)?;
    bind(&socket, &args.endpoint)?;
    receive_timed(&socket, args)
}

fn push(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_PUSH, -1)?;
    socket.connect(&args.endpoint).map_err(err)?;
    send_all(&socket, args)?;
    Ok(None)
}

fn sub(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_SUB, 0)?;
    unlimited(&socket)?;
    socket.set_bytes(ZMQ_SUBSCRIBE, b"").map_err(err)?;
    bind(&socket, &args.endpoint)?;
    receive_timed(&socket, args)
}

fn publish(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_PUB, -1)?;
    unlimited(&socket)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let go = go_signal();
    let mut warmup = vec![0u8; args.size];
    fill(&mut warmup, WARMUP, 0);
    while !go.load(std::sync::atomic::Ordering::Acquire) {
        // Dropped until the subscription arrives; that is the point.
        let _ = socket.send(&warmup, ZMQ_DONTWAIT);
        std::thread::sleep(Duration::from_millis(5));
    }
    send_all(&socket, args)?;
    Ok(None)
}

fn rep(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_REP, -1)?;
    bind(&socket, &args.endpoint)?;
    let mut msg = Msg::new();
    for i in 0..args.warmup + args.count {
        socket.recv_msg(&mut msg).map_err(err)?;
        socket.send_msg(&mut msg, 0).map_err(err)?;
        tick(i);
    }
    Ok(None)
}

fn req(ctx: &Ctx, args: &PeerArgs) -> Result<Option<String>, String> {
    let socket = socket(ctx, ZMQ_REQ, 0)?;
    socket.connect(&args.endpoint).map_err(err)?;
    let mut buf = vec![0u8; args.size];
    let mut msg = Msg::new();
    let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
    for i in 0..args.warmup + args.count {
        fill(&mut buf, DATA, i);
        let start = Instant::now();
        socket.send(&buf, 0).map_err(err)?;
        let reply = recv_body(&socket, &mut msg)?;
        let took = start.elapsed();
        if reply != &buf[..] {
            return Err(format!("reply {i} differs from its request"));
        }
        if i >= args.warmup {
            samples.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
        tick(i);
    }
    Ok(Some(latency_result(samples)))
}
