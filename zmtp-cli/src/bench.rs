//! `zmtp bench`: PUSH to PULL throughput and REQ/REP round-trip latency, both sockets of
//! each pair in this process, on one current-thread runtime, over loopback tcp, ipc or
//! inproc.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use zmtp_tokio::{Bytes, Message, Options, Socket, SocketType};

use crate::args::{BenchArgs, Transport};
use crate::{print_stdout, Failure};

/// Round trips of the latency run (fewer when `--count` is smaller).
const ROUND_TRIPS: u64 = 10_000;

fn failed(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Failure {
    Failure::Runtime(format!("bench: {what}: {e}"))
}

/// `zmtp bench`.
pub async fn bench(args: BenchArgs) -> Result<(), Failure> {
    let progress = Progress::new(std::io::stderr().is_terminal());
    let transport = args.transport.name();
    print_stdout(
        format!(
            "zmtp bench: driver tokio (current-thread runtime), transport {transport}, \
             {} B messages, sender and receiver in one process\n",
            args.size
        )
        .as_bytes(),
    )?;

    let elapsed = throughput(&args, &progress).await?;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rate = args.count as f64 / secs;
    let mbs = rate * args.size as f64 / 1e6;
    print_stdout(
        format!(
            "throughput: {} messages in {secs:.3} s: {} msg/s, {mbs:.1} MB/s\n",
            args.count,
            si(rate)
        )
        .as_bytes(),
    )?;

    let rounds = args.count.min(ROUND_TRIPS);
    let mut samples = latency(&args, rounds, &progress).await?;
    samples.sort_unstable();
    let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
    print_stdout(
        format!(
            "latency: {rounds} round trips: mean {}, p50 {}, p99 {}\n",
            micros(mean),
            micros(percentile(&samples, 50)),
            micros(percentile(&samples, 99))
        )
        .as_bytes(),
    )
}

/// A fresh endpoint of the transport for the run `name` (tcp: any free port).
fn endpoint(transport: Transport, name: &str) -> String {
    let pid = std::process::id();
    match transport {
        Transport::Tcp => "tcp://127.0.0.1:*".into(),
        #[cfg(target_os = "linux")]
        Transport::Ipc => format!("ipc://@zmtp-bench-{pid}-{name}"),
        #[cfg(not(target_os = "linux"))]
        Transport::Ipc => format!(
            "ipc://{}/zmtp-bench-{pid}-{name}.sock",
            std::env::temp_dir().display()
        ),
        Transport::Inproc => format!("inproc://zmtp-bench-{pid}-{name}"),
    }
}

fn socket(ty: SocketType) -> Result<Socket, Failure> {
    let mut options = Options::default();
    options.linger = Some(Duration::ZERO);
    Socket::with_options(ty, options).map_err(|e| failed("cannot create a socket", e))
}

/// A connected pair: `server` bound, `client` connected to it.
async fn pair(
    transport: Transport,
    name: &str,
    server: SocketType,
    client: SocketType,
) -> Result<(Socket, Socket), Failure> {
    let s = socket(server)?;
    let ep = endpoint(transport, name);
    let resolved = s
        .bind(&ep)
        .await
        .map_err(|e| failed(format!("cannot bind {ep}"), e))?;
    let c = socket(client)?;
    c.connect(&resolved)
        .map_err(|e| failed(format!("cannot connect to {resolved}"), e))?;
    Ok((s, c))
}

/// The time to move `count` messages of `size` bytes from PUSH to PULL, once connected.
async fn throughput(args: &BenchArgs, progress: &Progress) -> Result<Duration, Failure> {
    let (pull, push) = pair(args.transport, "thr", SocketType::Pull, SocketType::Push).await?;
    // One message first, so that the timing starts on an established connection.
    push.send("warm-up").await.map_err(|e| failed("send", e))?;
    pull.recv().await.map_err(|e| failed("receive", e))?;

    let body = Bytes::from(vec![0x5a; args.size]);
    let count = args.count;
    let size = args.size;
    let start = Instant::now();
    let sender = async {
        for _ in 0..count {
            push.send(Message::from(body.clone()))
                .await
                .map_err(|e| failed("send", e))?;
        }
        Ok::<(), Failure>(())
    };
    let receiver = async {
        let step = (count / 100).max(1);
        for i in 0..count {
            let msg = pull.recv().await.map_err(|e| failed("receive", e))?;
            if msg.frames().len() != 1 || msg.byte_len() != size {
                return Err(Failure::Runtime(format!(
                    "bench: message {i} has {} frame(s) and {} bytes, expected 1 of {size}",
                    msg.frames().len(),
                    msg.byte_len()
                )));
            }
            if i % step == 0 {
                progress.show("throughput", i, count);
            }
        }
        Ok::<Instant, Failure>(Instant::now())
    };
    let (sent, received) = tokio::join!(sender, receiver);
    sent?;
    let end = received?;
    progress.clear();
    push.close().await;
    pull.close().await;
    Ok(end - start)
}

/// The round-trip times of `rounds` REQ/REP exchanges of `size` bytes.
async fn latency(
    args: &BenchArgs,
    rounds: u64,
    progress: &Progress,
) -> Result<Vec<Duration>, Failure> {
    let (rep, req) = pair(args.transport, "lat", SocketType::Rep, SocketType::Req).await?;
    let body = Bytes::from(vec![0x5a; args.size]);
    let size = args.size;
    let server = async {
        // One warm-up exchange, then the measured ones.
        for _ in 0..=rounds {
            let msg = rep.recv().await.map_err(|e| failed("receive", e))?;
            rep.send(msg).await.map_err(|e| failed("send", e))?;
        }
        Ok::<(), Failure>(())
    };
    let client = async {
        let mut samples = Vec::with_capacity(usize::try_from(rounds).unwrap_or(0));
        let step = (rounds / 100).max(1);
        for i in 0..=rounds {
            let start = Instant::now();
            req.send(Message::from(body.clone()))
                .await
                .map_err(|e| failed("send", e))?;
            let reply = req.recv().await.map_err(|e| failed("receive", e))?;
            let rtt = start.elapsed();
            if reply.byte_len() != size {
                return Err(Failure::Runtime(format!(
                    "bench: reply of {} bytes, expected {size}",
                    reply.byte_len()
                )));
            }
            if i > 0 {
                samples.push(rtt);
            }
            if i % step == 0 {
                progress.show("latency", i, rounds);
            }
        }
        Ok::<Vec<Duration>, Failure>(samples)
    };
    let (served, samples) = tokio::join!(server, client);
    served?;
    let samples = samples?;
    progress.clear();
    req.close().await;
    rep.close().await;
    Ok(samples)
}

/// The `p`th percentile (nearest rank) of sorted samples.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(Duration::ZERO)
}

fn micros(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

/// `4.28M`, `443.2k`, `950`.
fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A percentage on standard error, only when it is a terminal.
struct Progress {
    on: bool,
}

impl Progress {
    fn new(on: bool) -> Progress {
        Progress { on }
    }

    fn show(&self, what: &str, done: u64, total: u64) {
        if self.on {
            let pct = done.saturating_mul(100) / total.max(1);
            let _ = write!(std::io::stderr().lock(), "\r{what}: {pct:3}%");
        }
    }

    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&samples, 50), Duration::from_micros(50));
        assert_eq!(percentile(&samples, 99), Duration::from_micros(99));
        assert_eq!(percentile(&samples[..1], 99), Duration::from_micros(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
        assert_eq!(si(4_280_000.0), "4.28M");
        assert_eq!(si(443_200.0), "443.2k");
    }
}
