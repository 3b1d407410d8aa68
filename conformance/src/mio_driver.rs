//! The mio driver ([`zmtp_mio`]) behind the matrix's blocking facade: its API is blocking
//! already, so the facade is direct. All its sockets share one context (one I/O thread),
//! one per backend: epoll ([`MioDriver`]) and io_uring ([`UringDriver`]).

use std::sync::OnceLock;
use std::time::Duration;

use zmtp_proto::socket::{Message, Options, SendError};
use zmtp_proto::SocketType;

use crate::our::{OurDriver, OurSocket, Transport};

fn context() -> &'static zmtp_mio::Context {
    static CONTEXT: OnceLock<zmtp_mio::Context> = OnceLock::new();
    CONTEXT.get_or_init(|| zmtp_mio::Context::new().expect("a mio context"))
}

fn ring_context() -> &'static zmtp_mio::Context {
    static CONTEXT: OnceLock<zmtp_mio::Context> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        zmtp_mio::Context::with_backend(zmtp_mio::Backend::IoUring).expect("an io_uring context")
    })
}

/// The mio driver in the matrix.
#[derive(Debug, Clone, Copy, Default)]
pub struct MioDriver;

/// The same driver with its I/O thread on an io_uring ([`zmtp_mio::Backend::IoUring`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct UringDriver;

/// One `zmtp_mio::Socket` behind [`OurSocket`].
#[derive(Debug)]
pub struct MioSocket {
    socket: zmtp_mio::Socket,
}

impl MioSocket {
    fn new(ctx: &zmtp_mio::Context, ty: SocketType, opts: Options) -> MioSocket {
        let socket = ctx.socket_with(ty, opts).expect("valid options");
        socket.set_tls(crate::our::matrix_tls());
        MioSocket { socket }
    }
}

/// The transports of the blocking driver, whatever its backend (inproc within its
/// context).
const TRANSPORTS: &[Transport] = &[
    Transport::Tcp,
    Transport::Ipc,
    Transport::Inproc,
    Transport::Ws,
    Transport::Wss,
];

impl OurDriver for MioDriver {
    type Socket = MioSocket;

    fn name() -> &'static str {
        "mio"
    }

    fn socket(ty: SocketType, opts: Options) -> MioSocket {
        MioSocket::new(context(), ty, opts)
    }

    fn own_transports() -> &'static [Transport] {
        TRANSPORTS
    }

    fn inproc_names() -> &'static str {
        "mio"
    }
}

impl OurDriver for UringDriver {
    type Socket = MioSocket;

    fn name() -> &'static str {
        "uring"
    }

    fn socket(ty: SocketType, opts: Options) -> MioSocket {
        MioSocket::new(ring_context(), ty, opts)
    }

    fn own_transports() -> &'static [Transport] {
        TRANSPORTS
    }

    fn inproc_names() -> &'static str {
        "uring"
    }
}

impl OurSocket for MioSocket {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        self.socket.bind(endpoint).map_err(|e| e.to_string())
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        self.socket.connect(endpoint).map_err(|e| e.to_string())
    }

    fn send(&mut self, mut msg: Message, timeout: Duration) -> Result<(), SendError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.socket.try_send(msg) {
                Err(SendError::WouldBlock(m)) if std::time::Instant::now() < deadline => {
                    msg = m;
                    let mut item = [zmtp_mio::PollItem::new(&self.socket, zmtp_mio::POLLOUT)];
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let _ = zmtp_mio::poll(&mut item, Some(left));
                }
                other => return other.map(|_| ()),
            }
        }
    }

    fn recv(&mut self, timeout: Duration) -> Option<Message> {
        if timeout.is_zero() {
            return self.socket.try_recv().ok().flatten();
        }
        self.socket.recv_timeout(Some(timeout)).ok()
    }

    driver_socket_calls!();

    fn pump(&mut self, duration: Duration) {
        // The I/O runs on the context's thread; there is nothing to drive here.
        if !duration.is_zero() {
            std::thread::sleep(duration);
        }
    }
}
