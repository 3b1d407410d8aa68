//! ZeroMQ sockets with a blocking, thread-safe API, on a reactor of our own built on `mio`.
//!
//! For programs that do not want an async runtime, in the spirit of libzmq and pyzmq: a
//! [`Context`] owns one I/O thread; its [`Socket`]s block in [`Socket::send`] and
//! [`Socket::recv`] (with optional timeouts), have non-blocking variants, and several can
//! be waited on at once with [`poll`]. As in the other drivers, every protocol and pattern
//! decision is made by the `zmtp-proto` core; this crate moves bytes over `tcp://` and
//! `ipc://` and fires timers. (`inproc://` is not offered: it is for sockets of one async
//! runtime.)
//!
//! ```no_run
//! use zmtp_mio::{Context, SocketType};
//!
//! # fn main() -> Result<(), zmtp_mio::Error> {
//! let ctx = Context::new()?;
//! let pull = ctx.socket(SocketType::Pull)?;
//! let endpoint = pull.bind("tcp://127.0.0.1:*")?;
//! let push = ctx.socket(SocketType::Push)?;
//! push.connect(&endpoint)?;
//! push.send("hello")?;
//! let msg = pull.recv()?;
//! assert_eq!(&msg.frames()[0][..], b"hello");
//! # Ok(()) }
//! ```
//!
//! Writes are batched as libzmq does: a send hands the message to the socket and wakes the
//! I/O thread only if it is idle; the I/O thread writes everything queued by then in one
//! vectored write, without holding the sockets' lock, while the application goes on
//! sending. Reads likewise happen outside the lock, and complete messages are handed to
//! the socket a read buffer at a time.
#![warn(missing_docs)]

mod reactor;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant as StdInstant};

use reactor::Shared;
/// A new CURVE key pair from the operating system's random generator (`zmq_curve_keypair`);
/// each key prints as Z85 (`keys.public` in a format string, `keys.secret.to_z85()`).
pub use zmtp_driver::curve_keypair;
/// Why an operation failed: the error type shared by every driver's sockets.
pub use zmtp_driver::Error;
pub use zmtp_proto::curve_crypto::{KeyPair, PublicKey, SecretKey};
pub use zmtp_proto::mechanism::Security;
pub use zmtp_proto::socket::{
    AuthReply, Authenticator, EndpointError, Message, MonitorEvent, MonitorEventKind, Options,
    PeerProperties, SendError, Sent, ZapRequest,
};
pub use zmtp_proto::{z85, Bytes, SocketType};

/// A context: the I/O thread its sockets share. Cheap to clone; the thread ends when the
/// context and all its sockets are dropped.
#[derive(Clone)]
pub struct Context {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Context")
    }
}

impl Context {
    /// A new context with its I/O thread.
    pub fn new() -> Result<Context, Error> {
        Ok(Context {
            shared: Shared::start()?,
        })
    }

    /// A socket of type `ty` with libzmq's default options.
    pub fn socket(&self, ty: SocketType) -> Result<Socket, Error> {
        self.socket_with(ty, Options::default())
    }

    /// A socket of type `ty` with `options`.
    pub fn socket_with(&self, ty: SocketType, options: Options) -> Result<Socket, Error> {
        // Its starting values and CURVE's keys and nonces come from the operating system.
        let core = zmtp_driver::new_socket(ty, options)?;
        let id = self.shared.add(core);
        Ok(Socket {
            shared: self.shared.clone(),
            id,
            rcvtimeo: None,
            sndtimeo: None,
        })
    }
}

/// A ZeroMQ socket with a blocking API. Methods take `&self`: one socket may be shared
/// between threads (in an `Arc`). Dropping it closes it, lingering per LINGER in the
/// background while the context lives.
pub struct Socket {
    shared: Arc<Shared>,
    id: usize,
    rcvtimeo: Option<Duration>,
    sndtimeo: Option<Duration>,
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.id).finish()
    }
}

fn refuse_inproc(endpoint: &str) -> Result<(), Error> {
    if endpoint.starts_with("inproc://") {
        return Err(Error::Unsupported);
    }
    Ok(())
}

impl Socket {
    fn with<R>(&self, wake: bool, f: impl FnOnce(&mut reactor::Sock) -> R) -> Result<R, Error> {
        self.shared.with(self.id, wake, f).ok_or(Error::Closed)
    }

    /// The socket type.
    pub fn socket_type(&self) -> SocketType {
        self.with(false, |s| s.core.socket_type())
            .unwrap_or(SocketType::Pair)
    }

    /// The options in force.
    pub fn options(&self) -> Options {
        self.with(false, |s| s.core.options().clone())
            .unwrap_or_default()
    }

    /// Change options; they apply to connections made afterwards (HWMs and pattern
    /// options at once).
    pub fn set_options(&self, options: Options) -> Result<(), Error> {
        self.with(true, |s| s.core.set_options(options))?
            .map_err(Error::Options)
    }

    /// How long [`recv`](Self::recv) waits (`ZMQ_RCVTIMEO`); `None` = forever (default).
    pub fn set_rcvtimeo(&mut self, timeout: Option<Duration>) {
        self.rcvtimeo = timeout;
    }

    /// How long [`send`](Self::send) waits (`ZMQ_SNDTIMEO`); `None` = forever (default).
    pub fn set_sndtimeo(&mut self, timeout: Option<Duration>) {
        self.sndtimeo = timeout;
    }

    /// Decide authentication requests (ZAP) in code; `None`: libzmq's rules without a
    /// handler (PLAIN servers refuse, CURVE and NULL accept).
    pub fn set_authenticator(&self, authenticator: Option<Authenticator>) {
        let _ = self.with(false, |s| s.core.set_authenticator(authenticator));
    }

    /// Listen on `endpoint` (`tcp://127.0.0.1:*`, `ipc:///tmp/x`, `ipc://@name`); returns
    /// the resolved endpoint.
    pub fn bind(&self, endpoint: &str) -> Result<String, Error> {
        refuse_inproc(endpoint)?;
        let id = self.with(true, |s| s.core.bind(endpoint))??;
        // At once, unless a host name is being looked up.
        loop {
            match self.with(false, |s| (s.bound.remove(&id), s.closed))? {
                (Some(result), _) => return result.map_err(Error::Io),
                (None, true) => return Err(Error::Closed),
                (None, false) => {
                    self.shared
                        .wait_for(self.id, None, |s| s.closed || s.bound.contains_key(&id));
                }
            }
        }
    }

    /// Connect to `endpoint`; returns at once (connecting and reconnecting go on in the
    /// background; messages queue meanwhile unless IMMEDIATE is set).
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        refuse_inproc(endpoint)?;
        self.with(true, |s| s.core.connect(endpoint).map(|_| ()))??;
        Ok(())
    }

    /// Stop listening on an endpoint given to `bind` (or its resolved form).
    pub fn unbind(&self, endpoint: &str) -> Result<(), Error> {
        match self.with(true, |s| s.core.unbind(endpoint))? {
            true => Ok(()),
            false => Err(Error::NotFound),
        }
    }

    /// Drop a connection made with `connect`.
    pub fn disconnect(&self, endpoint: &str) -> Result<(), Error> {
        let now = self.shared.now();
        match self.with(true, |s| s.core.disconnect(endpoint, now))? {
            true => Ok(()),
            false => Err(Error::NotFound),
        }
    }

    /// The last endpoint bound, resolved.
    pub fn last_endpoint(&self) -> String {
        self.with(false, |s| s.core.last_endpoint().to_string())
            .unwrap_or_default()
    }

    /// Subscribe to a topic prefix (SUB, XSUB).
    pub fn subscribe(&self, topic: impl AsRef<[u8]>) {
        let _ = self.with(false, |s| s.core.subscribe(topic.as_ref()));
    }

    /// Cancel one subscription (SUB, XSUB).
    pub fn unsubscribe(&self, topic: impl AsRef<[u8]>) {
        let _ = self.with(false, |s| s.core.unsubscribe(topic.as_ref()));
    }

    /// Monitor events from now on, on a channel.
    pub fn monitor(&self) -> mpsc::Receiver<MonitorEvent> {
        let (tx, rx) = mpsc::channel();
        let _ = self.with(false, |s| {
            s.monitors.push(tx);
            s.core.set_monitor(0xFFFF);
        });
        rx
    }

    /// Send a message, waiting while the socket would block, at most SNDTIMEO
    /// ([`Error::Timeout`] then, with the message dropped: use
    /// [`try_send`](Self::try_send) to get it back). A refusal other than would-block is
    /// [`Error::Send`] with its reason and the message (a REQ sending twice: `InvalidState`),
    /// or [`Error::Closed`].
    pub fn send(&self, msg: impl Into<Message>) -> Result<Sent, Error> {
        self.send_timeout(msg, self.sndtimeo)
    }

    /// [`send`](Self::send) with an explicit timeout (`None` = forever).
    pub fn send_timeout(
        &self,
        msg: impl Into<Message>,
        timeout: Option<Duration>,
    ) -> Result<Sent, Error> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        let mut msg = msg.into();
        loop {
            match self.try_send(msg) {
                Err(SendError::WouldBlock(m)) => msg = m,
                Ok(sent) => return Ok(sent),
                Err(refused) => return Err(refused.into()),
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                return Err(Error::Timeout);
            }
            if self.shared.help(self.id) {
                continue;
            }
            self.shared
                .wait_for(self.id, deadline, |s| s.closed || s.core.can_send());
        }
    }

    /// Send a single-frame message copied from `body`, waiting like [`send`](Self::send)
    /// (libzmq's `zmq_send`): the frame is copied straight into the peer's output when it
    /// can go at once (PUSH, DEALER, PAIR with room), with no message allocated.
    pub fn send_slice(&self, body: &[u8]) -> Result<Sent, Error> {
        match self.try_send_slice(body) {
            Err(SendError::WouldBlock(msg)) => self.send_timeout(msg, self.sndtimeo),
            Ok(sent) => Ok(sent),
            Err(refused) => Err(refused.into()),
        }
    }

    /// [`send_slice`](Self::send_slice) without waiting: `SendError::WouldBlock` hands back
    /// a message holding a copy.
    pub fn try_send_slice(&self, body: &[u8]) -> Result<Sent, SendError> {
        match self.shared.with(self.id, false, |s| {
            s.core.send_slice(body, || self.shared.now())
        }) {
            Some(r) => r,
            // The socket is gone: closed, with a copy of the body.
            None => Err(SendError::Closed(Message::from(body))),
        }
    }

    /// Send without waiting: `SendError::WouldBlock` hands the message back, as every
    /// refusal does (`SendError::Closed` once the socket is closed).
    pub fn try_send(&self, msg: impl Into<Message>) -> Result<Sent, SendError> {
        let mut msg = Some(msg.into());
        let sent = self.shared.with(self.id, false, |s| {
            msg.take().map(|m| s.core.send(m, || self.shared.now()))
        });
        match sent.flatten() {
            Some(r) => r,
            // The socket is gone: the message comes back with the reason.
            None => Err(SendError::Closed(msg.unwrap_or_default())),
        }
    }

    /// Receive a message, waiting at most RCVTIMEO ([`Error::Timeout`]).
    pub fn recv(&self) -> Result<Message, Error> {
        self.recv_timeout(self.rcvtimeo)
    }

    /// [`recv`](Self::recv) with an explicit timeout (`None` = forever).
    pub fn recv_timeout(&self, timeout: Option<Duration>) -> Result<Message, Error> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        loop {
            if let Some(msg) = self.try_recv()? {
                return Ok(msg);
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                return Err(Error::Timeout);
            }
            if self.shared.help(self.id) {
                continue;
            }
            self.shared
                .wait_for(self.id, deadline, |s| s.closed || s.core.can_recv());
        }
    }

    /// The next message if one is ready.
    pub fn try_recv(&self) -> Result<Option<Message>, Error> {
        self.with(false, |s| match s.core.recv(|| self.shared.now()) {
            Some(m) => Ok(Some(m)),
            None if s.closed => Err(Error::Closed),
            None => Ok(None),
        })?
    }

    /// Whether a `send` would not block now (`ZMQ_POLLOUT`).
    pub fn can_send(&self) -> bool {
        self.with(false, |s| s.core.can_send()).unwrap_or(false)
    }

    /// Whether a message is ready for `recv` (`ZMQ_POLLIN`).
    pub fn can_recv(&self) -> bool {
        self.with(false, |s| s.core.can_recv()).unwrap_or(false)
    }

    /// Close, waiting while it lingers (per LINGER) for queued messages to be written.
    pub fn close(self) {
        let now = self.shared.now();
        let _ = self.with(true, |s| s.core.close(now));
        loop {
            if self.shared.help(self.id) {
                continue;
            }
            if self.shared.wait_for(self.id, None, |s| s.closed) {
                break;
            }
        }
        // `drop` then forgets the socket.
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let now = self.shared.now();
        let _ = self.shared.with(self.id, true, |s| {
            s.orphaned = true;
            s.core.close(now);
        });
        // A socket that closed at once (nothing to linger for) is forgotten now.
        let mut st = self.shared.lock();
        if st.sockets.get(&self.id).is_some_and(|s| s.closed) {
            st.sockets.remove(&self.id);
        }
    }
}

/// Wait for readability (`POLLIN`) or writability (`POLLOUT`).
pub const POLLIN: u8 = 1;
/// See [`POLLIN`].
pub const POLLOUT: u8 = 2;

/// One socket to [`poll`]: what to wait for, and (after the call) what is ready.
#[derive(Debug)]
pub struct PollItem<'a> {
    /// The socket.
    pub socket: &'a Socket,
    /// [`POLLIN`] and/or [`POLLOUT`].
    pub events: u8,
    /// Set by [`poll`]: which of `events` are ready.
    pub revents: u8,
}

impl<'a> PollItem<'a> {
    /// Wait on `socket` for `events`.
    pub fn new(socket: &'a Socket, events: u8) -> PollItem<'a> {
        PollItem {
            socket,
            events,
            revents: 0,
        }
    }
}

/// Wait until at least one item is ready or `timeout` passes (`None` = forever); returns
/// how many items are ready (`zmq_poll`). Sockets of several contexts may be mixed; the
/// wait is then checked every millisecond.
pub fn poll(items: &mut [PollItem<'_>], timeout: Option<Duration>) -> Result<usize, Error> {
    let deadline = timeout.map(|t| StdInstant::now() + t);
    let Some(first) = items.first().map(|item| item.socket) else {
        return Ok(0);
    };
    let one_context = items
        .iter()
        .all(|item| Arc::ptr_eq(&item.socket.shared, &first.shared));
    loop {
        if one_context {
            // Looked at and waited for under one lock: no change slips in between.
            let st = first.shared.lock();
            let ready = fill_revents(items, |id| {
                st.sockets
                    .get(&id)
                    .map_or((false, false), |s| (s.core.can_recv(), s.core.can_send()))
            });
            if ready > 0 {
                return Ok(ready);
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                return Ok(0);
            }
            first.shared.wait_polled(st, deadline);
        } else {
            let mut ready = 0;
            for item in items.iter_mut() {
                let (r, w) = (item.socket.can_recv(), item.socket.can_send());
                item.revents = revents(item.events, r, w);
                ready += usize::from(item.revents != 0);
            }
            if ready > 0 {
                return Ok(ready);
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                return Ok(0);
            }
            let slice = StdInstant::now() + Duration::from_millis(1);
            let until = deadline.map_or(slice, |d| d.min(slice));
            first.shared.wait_polled(first.shared.lock(), Some(until));
        }
    }
}

/// The ready subset of `events`.
fn revents(events: u8, readable: bool, writable: bool) -> u8 {
    let mut revents = 0;
    if events & POLLIN != 0 && readable {
        revents |= POLLIN;
    }
    if events & POLLOUT != 0 && writable {
        revents |= POLLOUT;
    }
    revents
}

/// Set every item's `revents` from `state(socket id)` = (readable, writable); returns how
/// many items are ready.
fn fill_revents(items: &mut [PollItem<'_>], state: impl Fn(usize) -> (bool, bool)) -> usize {
    let mut ready = 0;
    for item in items.iter_mut() {
        let (r, w) = state(item.socket.id);
        item.revents = revents(item.events, r, w);
        ready += usize::from(item.revents != 0);
    }
    ready
}
