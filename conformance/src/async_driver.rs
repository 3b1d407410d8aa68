//! The async drivers ([`zmtp_tokio`], [`zmtp_smol`]) behind the matrix's blocking facade,
//! written once over [`zmtp_async`]'s runtime trait.
//!
//! Their sockets do their I/O in the background on a process-wide runtime (tokio: a
//! two-worker multi-thread runtime; smol: its global executor's thread); the facade only
//! blocks on their futures with timeouts.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zmtp_async::runtime::{timeout, Runtime};
use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::SocketType;
use zmtp_smol::Smol;
use zmtp_tokio::Tokio;

use crate::our::{OurDriver, OurSocket, Transport};

/// A runtime the matrix can run async sockets on: one per process, blocked on from the
/// test thread.
pub trait MatrixRuntime: Runtime {
    /// The driver's name in reports.
    const NAME: &'static str;
    /// The process-wide runtime the matrix's sockets run on.
    fn shared() -> Self;
    /// Run `future` to completion from a thread outside the runtime.
    fn block_on<F: Future>(&self, future: F) -> F::Output;
}

impl MatrixRuntime for Tokio {
    const NAME: &'static str = "tokio";

    fn shared() -> Tokio {
        static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
        let runtime = RUNTIME.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime")
        });
        Tokio::new(runtime.handle().clone())
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle().block_on(future)
    }
}

impl MatrixRuntime for Smol {
    const NAME: &'static str = "smol";

    fn shared() -> Smol {
        Smol::global()
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }
}

/// An async driver in the matrix: [`TokioDriver`] or [`SmolDriver`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AsyncDriver<R>(PhantomData<R>);

/// The tokio driver in the matrix.
pub type TokioDriver = AsyncDriver<Tokio>;
/// The smol driver in the matrix.
pub type SmolDriver = AsyncDriver<Smol>;

/// One `zmtp_async::Socket` behind [`OurSocket`].
#[derive(Debug)]
pub struct AsyncSocket<R: Runtime> {
    socket: zmtp_async::Socket<R>,
    runtime: R,
}

/// A `zmtp_tokio::Socket` in the matrix.
pub type TokioSocket = AsyncSocket<Tokio>;
/// A `zmtp_smol::Socket` in the matrix.
pub type SmolSocket = AsyncSocket<Smol>;

impl<R: MatrixRuntime> OurDriver for AsyncDriver<R> {
    type Socket = AsyncSocket<R>;

    fn name() -> &'static str {
        R::NAME
    }

    fn socket(ty: SocketType, opts: Options) -> AsyncSocket<R> {
        let runtime = R::shared();
        let socket =
            zmtp_async::Socket::with_runtime(runtime.clone(), ty, opts).expect("valid options");
        socket.set_tls(crate::our::matrix_tls());
        AsyncSocket { socket, runtime }
    }

    fn own_transports() -> &'static [Transport] {
        &[
            Transport::Tcp,
            Transport::Ipc,
            Transport::Inproc,
            Transport::Ws,
            Transport::Wss,
        ]
    }
}

impl<R: MatrixRuntime> OurSocket for AsyncSocket<R> {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        self.runtime
            .block_on(self.socket.bind(endpoint))
            .map_err(|e| e.to_string())
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        self.socket.connect(endpoint).map_err(|e| e.to_string())
    }

    fn send(&mut self, mut msg: Message, timeout: Duration) -> Result<(), SendError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.socket.try_send(msg) {
                Err(SendError::WouldBlock(m)) if Instant::now() < deadline => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(1));
                }
                other => return other.map(|_| ()),
            }
        }
    }

    fn recv(&mut self, limit: Duration) -> Option<Message> {
        if limit.is_zero() {
            return self.socket.try_recv().ok().flatten();
        }
        self.runtime
            .block_on(timeout(&self.runtime, limit, self.socket.recv()))
            .and_then(Result::ok)
    }

    driver_socket_calls!();

    fn pump(&mut self, duration: Duration) {
        // The I/O runs on the runtime's threads; there is nothing to drive here.
        if !duration.is_zero() {
            std::thread::sleep(duration);
        }
    }
}

/// Our socket's monitor events until `done` says enough, or `limit` has passed, blocking
/// on `rt` from the test thread.
pub fn our_events<R: MatrixRuntime>(
    rt: &R,
    monitor: &mut zmtp_async::Monitor,
    limit: Duration,
    done: impl Fn(&zmtp_async::MonitorEvent) -> bool,
) -> Vec<zmtp_async::MonitorEvent> {
    rt.block_on(async {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        while let Some(Some(e)) = timeout(
            rt,
            deadline.saturating_duration_since(Instant::now()),
            monitor.next(),
        )
        .await
        {
            let stop = done(&e);
            seen.push(e);
            if stop {
                break;
            }
        }
        seen
    })
}
