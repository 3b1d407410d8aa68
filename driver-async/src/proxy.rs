//! The proxy (`zmq_proxy`, `zmq_proxy_steerable`) on async sockets: the driver-support
//! crate's [`Proxy`] run over [`Socket`]s, waiting with [`poll`] between runs.

use zmtp_driver::proxy::{Proxy, ProxySocket, Step, WANT_IN, WANT_OUT};
use zmtp_proto::socket::{Message, SendError};

use crate::poll::{poll, PollItem, POLLIN, POLLOUT};
use crate::{Error, Runtime, Socket};

// The proxy's events are this driver's poll events.
const _: () = assert!(WANT_IN == POLLIN && WANT_OUT == POLLOUT);

impl<R: Runtime> ProxySocket for Socket<R> {
    fn proxy_recv(&self) -> Result<Option<Message>, Error> {
        self.try_recv()
    }

    fn proxy_send(&self, msg: Message) -> Result<(), SendError> {
        self.try_send(msg).map(drop)
    }

    fn proxy_receives(&self) -> bool {
        self.socket_type().receives()
    }

    fn proxy_can_send(&self) -> bool {
        self.can_send()
    }
}

/// Move messages between `frontend` and `backend`, both ways, until one of them fails
/// (`zmq_proxy`); a copy of each goes to `capture` if given.
///
/// A message the other side has no room for (its HWM) is held, and its side is not read
/// until it goes: the proxy passes back-pressure on and drops nothing the socket types
/// would not drop themselves. A capture socket without room drops its copy. See
/// [`proxy_steerable`] for a proxy that can be paused, asked for its counters and ended.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zmtp_async::Error> {
/// use zmtp_tokio::{proxy, Socket, SocketType};
///
/// // A request broker: clients connect to the ROUTER, workers to the DEALER.
/// let frontend = Socket::new(SocketType::Router)?;
/// frontend.bind("tcp://*:5559").await?;
/// let backend = Socket::new(SocketType::Dealer)?;
/// backend.bind("tcp://*:5560").await?;
/// proxy(&frontend, &backend, None).await?;
/// # Ok(()) }
/// ```
pub async fn proxy<R: Runtime>(
    frontend: &Socket<R>,
    backend: &Socket<R>,
    capture: Option<&Socket<R>>,
) -> Result<(), Error> {
    proxy_steerable(frontend, backend, capture, None).await
}

/// [`proxy`] with a `control` socket (REP or PAIR) taking libzmq's commands, each a
/// one-frame message: `PAUSE` (stop moving), `RESUME`, `TERMINATE` (return `Ok`) and
/// `STATISTICS` (answered with eight frames, each a `u64` in the host's byte order:
/// messages and bytes received from the frontend, sent to the frontend, received from the backend,
/// sent to the backend). Every command is answered (STATISTICS with its counters, any
/// other with one empty frame), as in libzmq 4.3.5. libzmq 4.3.5 swaps PAUSE and RESUME,
/// a bug fixed upstream later; here they mean what they say.
pub async fn proxy_steerable<R: Runtime>(
    frontend: &Socket<R>,
    backend: &Socket<R>,
    capture: Option<&Socket<R>>,
    control: Option<&Socket<R>>,
) -> Result<(), Error> {
    let mut proxy = Proxy::new();
    loop {
        if proxy.run(frontend, backend, capture, control)? == Step::Terminated {
            return Ok(());
        }
        let events = proxy.interest(control.is_some());
        let sockets = Proxy::poll_set(frontend, backend, control);
        let mut items = [0, 1, 2].map(|i| PollItem::new(sockets[i], events[i]));
        poll(&mut items, None).await?;
    }
}
