//! `zmtp bench`: PUSH to PULL throughput and REQ/REP round-trip latency, both sockets of
//! each pair in this process, over loopback tcp, ipc or inproc, on the driver chosen: tokio
//! (a current-thread runtime) or smol (its `block_on`), which share one generic async
//! run, or mio (blocking sockets on the context's reactor thread).

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use zmtp_tokio::{Bytes, Message, Options, SocketType};

use crate::args::{BenchArgs, Driver, Transport};
use crate::{print_stdout, Failure};

/// Round trips of the latency run (fewer when `--count` is smaller).
const ROUND_TRIPS: u64 = 10_000;

fn failed(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Failure {
    Failure::Runtime(format!("bench: {what}: {e}"))
}

/// The two measurements of a run, on one driver.
trait Runner {
    /// How the driver runs, for the report's first line.
    const DESCRIPTION: &'static str;
    /// The time to move `args.count` messages from PUSH to PULL, once connected.
    fn throughput(&mut self, args: &BenchArgs, progress: &Progress) -> Result<Duration, Failure>;
    /// The round-trip times of `rounds` REQ/REP exchanges.
    fn latency(
        &mut self,
        args: &BenchArgs,
        rounds: u64,
        progress: &Progress,
    ) -> Result<Vec<Duration>, Failure>;
}

/// `zmtp bench`.
pub fn bench(args: BenchArgs) -> Result<(), Failure> {
    match args.driver {
        Driver::Tokio => measure(&args, &mut Async(Tokio(crate::runtime()?))),
        Driver::Smol => measure(&args, &mut Async(Smol)),
        Driver::Mio => {
            let ctx =
                zmtp_mio::Context::new().map_err(|e| failed("cannot start the mio context", e))?;
            measure(&args, &mut Mio(ctx))
        }
    }
}

/// Run both measurements with `runner` and print the report.
fn measure<R: Runner>(args: &BenchArgs, runner: &mut R) -> Result<(), Failure> {
    let progress = Progress::new(std::io::stderr().is_terminal());
    let transport = args.transport.name();
    print_stdout(
        format!(
            "zmtp bench: driver {}, transport {transport}, {} B messages, sender and \
             receiver in one process\n",
            R::DESCRIPTION,
            args.size
        )
        .as_bytes(),
    )?;

    let elapsed = runner.throughput(args, &progress)?;
    progress.clear();
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
    let mut samples = runner.latency(args, rounds, &progress)?;
    progress.clear();
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
fn endpoint(transport: Transport, driver: Driver, name: &str) -> String {
    let pid = std::process::id();
    let driver = format!("{driver:?}").to_ascii_lowercase();
    match transport {
        Transport::Tcp => "tcp://127.0.0.1:*".into(),
        #[cfg(target_os = "linux")]
        Transport::Ipc => format!("ipc://@zmtp-bench-{pid}-{driver}-{name}"),
        #[cfg(not(target_os = "linux"))]
        Transport::Ipc => format!(
            "ipc://{}/zmtp-bench-{pid}-{driver}-{name}.sock",
            std::env::temp_dir().display()
        ),
        Transport::Inproc => format!("inproc://zmtp-bench-{pid}-{driver}-{name}"),
    }
}

/// The options of every benchmark socket: nothing lingers.
fn options() -> Options {
    let mut options = Options::default();
    options.linger = Some(Duration::ZERO);
    options
}

/// The message every run sends.
fn body(args: &BenchArgs) -> Message {
    Message::from(Bytes::from(vec![0x5a; args.size]))
}

/// `Err` unless message `i` of the throughput run is one frame of `size` bytes.
fn check_message(i: u64, msg: &Message, size: usize) -> Result<(), Failure> {
    if msg.frames().len() != 1 || msg.byte_len() != size {
        return Err(Failure::Runtime(format!(
            "bench: message {i} has {} frame(s) and {} bytes, expected 1 of {size}",
            msg.frames().len(),
            msg.byte_len()
        )));
    }
    Ok(())
}

/// `Err` unless a reply has `size` bytes.
fn check_reply(reply: &Message, size: usize) -> Result<(), Failure> {
    if reply.byte_len() != size {
        return Err(Failure::Runtime(format!(
            "bench: reply of {} bytes, expected {size}",
            reply.byte_len()
        )));
    }
    Ok(())
}

/// Runs futures to completion on one async runtime.
trait Executor {
    /// The driver's runtime.
    type Runtime: zmtp_async::Runtime;
    /// How it runs, for the report.
    const DESCRIPTION: &'static str;
    /// Which driver it is (for endpoint names).
    const DRIVER: Driver;
    /// Run `f` to completion.
    fn block_on<T>(&mut self, f: impl Future<Output = T>) -> T;
}

/// zmtp-tokio on a current-thread runtime.
struct Tokio(tokio::runtime::Runtime);

impl Executor for Tokio {
    type Runtime = zmtp_tokio::Tokio;
    const DESCRIPTION: &'static str = "tokio (current-thread runtime)";
    const DRIVER: Driver = Driver::Tokio;
    fn block_on<T>(&mut self, f: impl Future<Output = T>) -> T {
        self.0.block_on(f)
    }
}

/// zmtp-smol on its `block_on`.
struct Smol;

impl Executor for Smol {
    type Runtime = zmtp_smol::Smol;
    const DESCRIPTION: &'static str = "smol (block_on, one thread)";
    const DRIVER: Driver = Driver::Smol;
    fn block_on<T>(&mut self, f: impl Future<Output = T>) -> T {
        zmtp_smol::block_on(f)
    }
}

/// The async drivers' runs, written once for every [`Executor`].
struct Async<E>(E);

type AsyncSocket<E> = zmtp_async::Socket<<E as Executor>::Runtime>;

/// A connected pair of the async driver: `server` bound, `client` connected to it.
async fn async_pair<E: Executor>(
    transport: Transport,
    name: &str,
    server: SocketType,
    client: SocketType,
) -> Result<(AsyncSocket<E>, AsyncSocket<E>), Failure> {
    let socket = |ty| {
        AsyncSocket::<E>::with_options(ty, options())
            .map_err(|e| failed("cannot create a socket", e))
    };
    let s = socket(server)?;
    let ep = endpoint(transport, E::DRIVER, name);
    let resolved = s
        .bind(&ep)
        .await
        .map_err(|e| failed(format!("cannot bind {ep}"), e))?;
    let c = socket(client)?;
    c.connect(&resolved)
        .map_err(|e| failed(format!("cannot connect to {resolved}"), e))?;
    Ok((s, c))
}

impl<E: Executor> Runner for Async<E> {
    const DESCRIPTION: &'static str = E::DESCRIPTION;

    fn throughput(&mut self, args: &BenchArgs, progress: &Progress) -> Result<Duration, Failure> {
        self.0.block_on(async {
            let (pull, push) =
                async_pair::<E>(args.transport, "thr", SocketType::Pull, SocketType::Push).await?;
            // One message first, so that the timing starts on an established connection.
            push.send("warm-up").await.map_err(|e| failed("send", e))?;
            pull.recv().await.map_err(|e| failed("receive", e))?;
            let body = body(args);
            let (count, size) = (args.count, args.size);
            let start = Instant::now();
            let sender = async {
                for _ in 0..count {
                    push.send(body.clone())
                        .await
                        .map_err(|e| failed("send", e))?;
                }
                Ok::<(), Failure>(())
            };
            let receiver = async {
                let step = (count / 100).max(1);
                for i in 0..count {
                    let msg = pull.recv().await.map_err(|e| failed("receive", e))?;
                    check_message(i, &msg, size)?;
                    if i % step == 0 {
                        progress.show("throughput", i, count);
                    }
                }
                Ok::<Instant, Failure>(Instant::now())
            };
            let (sent, received) = tokio::join!(sender, receiver);
            sent?;
            let end = received?;
            push.close().await;
            pull.close().await;
            Ok(end - start)
        })
    }

    fn latency(
        &mut self,
        args: &BenchArgs,
        rounds: u64,
        progress: &Progress,
    ) -> Result<Vec<Duration>, Failure> {
        self.0.block_on(async {
            let (rep, req) =
                async_pair::<E>(args.transport, "lat", SocketType::Rep, SocketType::Req).await?;
            let body = body(args);
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
                    req.send(body.clone())
                        .await
                        .map_err(|e| failed("send", e))?;
                    let reply = req.recv().await.map_err(|e| failed("receive", e))?;
                    let rtt = start.elapsed();
                    check_reply(&reply, size)?;
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
            req.close().await;
            rep.close().await;
            Ok(samples)
        })
    }
}

/// zmtp-mio: blocking sockets whose I/O runs on the context's reactor thread.
struct Mio(zmtp_mio::Context);

impl Mio {
    /// A connected pair: `server` bound, `client` connected to it.
    fn pair(
        &self,
        transport: Transport,
        name: &str,
        server: SocketType,
        client: SocketType,
    ) -> Result<(zmtp_mio::Socket, zmtp_mio::Socket), Failure> {
        let socket = |ty| {
            self.0
                .socket_with(ty, options())
                .map_err(|e| failed("cannot create a socket", e))
        };
        let s = socket(server)?;
        let ep = endpoint(transport, Driver::Mio, name);
        let resolved = s
            .bind(&ep)
            .map_err(|e| failed(format!("cannot bind {ep}"), e))?;
        let c = socket(client)?;
        c.connect(&resolved)
            .map_err(|e| failed(format!("cannot connect to {resolved}"), e))?;
        Ok((s, c))
    }
}

impl Runner for Mio {
    const DESCRIPTION: &'static str = "mio (blocking sockets, one reactor thread)";

    fn throughput(&mut self, args: &BenchArgs, progress: &Progress) -> Result<Duration, Failure> {
        let (pull, push) = self.pair(args.transport, "thr", SocketType::Pull, SocketType::Push)?;
        // Should the receiver fail, the sender blocked at the high-water mark gives up.
        push.set_sndtimeo(Some(Duration::from_secs(30)));
        push.send("warm-up").map_err(|e| failed("send", e))?;
        pull.recv().map_err(|e| failed("receive", e))?;
        let body = body(args);
        let (count, size) = (args.count, args.size);
        let start = Instant::now();
        // The sender blocks at the high-water mark: it needs a thread of its own.
        let (sent, received) = std::thread::scope(|scope| {
            let sender = scope.spawn(|| {
                for _ in 0..count {
                    push.send(body.clone()).map_err(|e| failed("send", e))?;
                }
                Ok::<(), Failure>(())
            });
            let received = (|| {
                let step = (count / 100).max(1);
                for i in 0..count {
                    let msg = pull.recv().map_err(|e| failed("receive", e))?;
                    check_message(i, &msg, size)?;
                    if i % step == 0 {
                        progress.show("throughput", i, count);
                    }
                }
                Ok::<Instant, Failure>(Instant::now())
            })();
            let sent = sender
                .join()
                .unwrap_or_else(|_| Err(Failure::Runtime("bench: the sender failed".into())));
            (sent, received)
        });
        // Closed here, not dropped: with LINGER 0 a write still being applied would count
        // as a loss to report, and every message has arrived already.
        push.close();
        pull.close();
        let end = received?;
        sent?;
        Ok(end - start)
    }

    fn latency(
        &mut self,
        args: &BenchArgs,
        rounds: u64,
        progress: &Progress,
    ) -> Result<Vec<Duration>, Failure> {
        let (rep, req) = self.pair(args.transport, "lat", SocketType::Rep, SocketType::Req)?;
        let body = body(args);
        let mut samples = Vec::with_capacity(usize::try_from(rounds).unwrap_or(0));
        let step = (rounds / 100).max(1);
        // Both ends on this thread: the reactor thread moves the bytes between them.
        for i in 0..=rounds {
            let start = Instant::now();
            req.send(body.clone()).map_err(|e| failed("send", e))?;
            let msg = rep.recv().map_err(|e| failed("receive", e))?;
            rep.send(msg).map_err(|e| failed("send", e))?;
            let reply = req.recv().map_err(|e| failed("receive", e))?;
            let rtt = start.elapsed();
            check_reply(&reply, args.size)?;
            if i > 0 {
                samples.push(rtt);
            }
            if i % step == 0 {
                progress.show("latency", i, rounds);
            }
        }
        Ok(samples)
    }
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
