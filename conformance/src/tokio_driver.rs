//! The tokio driver ([`zmtp_tokio`]) behind the matrix's blocking facade.
//!
//! Its sockets do their I/O on a shared multi-thread runtime in the background; the
//! facade only blocks on their futures with timeouts.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::SocketType;

use crate::our::{OurDriver, OurSocket, Transport};

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// The tokio driver in the matrix.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioDriver;

/// One `zmtp_tokio::Socket` behind [`OurSocket`].
#[derive(Debug)]
pub struct TokioSocket {
    socket: zmtp_tokio::Socket,
}

impl OurDriver for TokioDriver {
    type Socket = TokioSocket;

    fn name() -> &'static str {
        "tokio"
    }

    fn socket(ty: SocketType, opts: Options) -> TokioSocket {
        let _guard = runtime().enter();
        TokioSocket {
            socket: zmtp_tokio::Socket::with_options(ty, opts).expect("valid options"),
        }
    }

    fn own_transports() -> &'static [Transport] {
        &[Transport::Tcp, Transport::Ipc, Transport::Inproc]
    }
}

impl OurSocket for TokioSocket {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        runtime()
            .block_on(self.socket.bind(endpoint))
            .map_err(|e| e.to_string())
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        runtime()
            .block_on(self.socket.connect(endpoint))
            .map_err(|e| e.to_string())
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

    fn recv(&mut self, timeout: Duration) -> Option<Message> {
        if timeout.is_zero() {
            return self.socket.try_recv().ok().flatten();
        }
        runtime()
            .block_on(tokio::time::timeout(timeout, self.socket.recv()))
            .ok()
            .and_then(Result::ok)
    }

    fn subscribe(&mut self, topic: &[u8]) {
        self.socket.subscribe(topic);
    }

    fn pump(&mut self, duration: Duration) {
        // The I/O runs on the runtime's workers; there is nothing to drive here.
        if !duration.is_zero() {
            std::thread::sleep(duration);
        }
    }
}
