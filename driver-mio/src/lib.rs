//! ZeroMQ sockets with a blocking, thread-safe API, on a reactor of our own built on `mio`.
//!
//! For programs that do not want an async runtime, in the spirit of libzmq and pyzmq: a
//! [`Context`] owns one I/O thread; its [`Socket`]s block in [`Socket::send`] and
//! [`Socket::recv`] (with optional timeouts), have non-blocking variants, and several can
//! be waited on at once with [`poll`]. As in the other drivers, every protocol and pattern
//! decision is made by the `zmtp-proto` core; this crate moves bytes over `tcp://`, `ws://`
//! (TCP streams the core runs as ZWS), `wss://` (the same over TLS, [`Socket::set_tls`])
//! and `ipc://` and fires timers. `inproc://` joins sockets of one [`Context`] in
//! memory: a connect to a bound name has made its handshake when it returns, a connect
//! made before the bind is joined by the bind (its messages wait meanwhile), and
//! messages change hands in the call that sends them, in the order they were sent, with
//! no system call and no copy of large bodies. Each context has names of its own.
//!
//! ```
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
//! # Options
//! Options are given when a socket is made ([`Context::socket_with`], built one at a time
//! with `Options`' `with_*` methods), or changed one at a time on a live socket with its
//! setter, named after the libzmq option (`set_sndhwm` for `ZMQ_SNDHWM`); each says when
//! the change applies.
//!
//! ```
//! use std::time::Duration;
//! use zmtp_mio::{Context, Options, SocketType};
//!
//! # fn main() -> Result<(), zmtp_mio::Error> {
//! let ctx = Context::new()?;
//! let options = Options::default().with_sndhwm(10).with_linger(Some(Duration::ZERO));
//! let push = ctx.socket_with(SocketType::Push, options)?;
//! push.set_linger(Some(Duration::from_millis(500)))?;
//! assert_eq!(push.options().linger, Some(Duration::from_millis(500)));
//! assert_eq!(push.options().sndhwm, 10);
//! # Ok(()) }
//! ```
//!
//! # Threads and system calls
//! Reads and writes happen outside the sockets' lock, by the I/O thread or by the
//! application's own thread, whichever saves a hop:
//!
//! - A send to an idle stream (nothing being written to it, and no send to it in the
//!   last few tens of microseconds unless the sending thread has waited since) is
//!   written at once by the sending thread. The sends of a burst after the first are
//!   batched as libzmq does: queued, with the I/O thread woken only if it is idle, which
//!   writes everything queued by then in one vectored write while the application goes
//!   on sending.
//! - A receive that finds no message ready waits in the kernel on the socket's streams
//!   itself (up to 8 of them), then reads and decodes what came, a read buffer at a
//!   time: a request/reply round trip costs each side one write, one wait and one read,
//!   with no hop through the I/O thread. The streams stay with the application thread
//!   for a couple of milliseconds after that, for the next receive; then, or as soon as
//!   a thread sleeps on the socket otherwise (in [`poll`], or a receive on a socket with
//!   more streams), the I/O thread reads them again, so input is never left unread.
//! - A receive that finds a message ready takes one lock, and makes no system call and
//!   no wake-up (unless taking it lets a peer held at RCVHWM be read again).
//!   [`Socket::recv_many`] takes a batch of ready messages under one lock.
//! - A receive that may not wait ([`Socket::try_recv`], or one whose timeout ran out)
//!   and finds nothing reads the streams no thread is reading (those leased to this
//!   thread among them) once, without waiting, before it reports nothing; a send that
//!   would block ([`Socket::try_send`]) runs the socket's writes queued for the I/O
//!   thread once, and tries again, before it is refused.
//!
//! # Draft socket types
//! CLIENT/SERVER, RADIO/DISH, SCATTER/GATHER, PEER and CHANNEL work here as in the async
//! drivers (their crate docs describe each type): single-frame messages, routing ids and
//! groups on the [`Message`], [`Socket::join`] and [`Socket::leave`] for a DISH,
//! [`Socket::connect_peer`] for a PEER.
//!
//! ```
//! use zmtp_mio::{Context, Message, SocketType};
//!
//! # fn main() -> Result<(), zmtp_mio::Error> {
//! let ctx = Context::new()?;
//! let server = ctx.socket(SocketType::Server)?;
//! let endpoint = server.bind("tcp://127.0.0.1:*")?;
//! let client = ctx.socket(SocketType::Client)?;
//! client.connect(&endpoint)?;
//! client.send("2 + 2")?;
//! let question = server.recv()?;
//! let mut answer = Message::from("4");
//! answer.set_routing_id(question.routing_id().expect("a SERVER's messages have one"))?;
//! server.send(answer)?;
//! assert_eq!(client.recv_string()?, "4");
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod handover;
mod proxy;
mod reactor;
pub mod readiness;
mod routes;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use std::time::{Duration, Instant as StdInstant};
use zmtp_driver::ready::Ready;

pub use proxy::{proxy, proxy_steerable};
use reactor::Shared;
/// A new CURVE key pair from the operating system's random generator (`zmq_curve_keypair`);
/// each key prints as Z85 (`keys.public` in a format string, `keys.secret.to_z85()`).
pub use zmtp_driver::curve_keypair;
/// The counters of a steerable proxy's STATISTICS answer.
pub use zmtp_driver::proxy::{ProxyStats, Traffic};
/// The TLS settings of `wss://` endpoints, and the rustls they are made with.
pub use zmtp_driver::tls::{rustls, Tls};
/// The `inproc://` name at which libzmq's ZAP handlers bind (`zeromq.zap.01`, RFC 27):
/// give [`Context::set_zap_endpoint`] `inproc://` and this name to ask a handler as libzmq
/// does.
pub use zmtp_driver::zap::HANDLER_NAME as ZAP_HANDLER_NAME;
/// Why an operation failed: the error type shared by every driver's sockets.
pub use zmtp_driver::Error;
/// Whether dropped sockets say on standard error what LINGER cut off (on by default).
pub use zmtp_driver::{set_loss_reports, set_loss_reports_from_env};
pub use zmtp_proto::curve_crypto::{KeyPair, PublicKey, SecretKey};
pub use zmtp_proto::mechanism::Security;
pub use zmtp_proto::socket::{
    AcceptFilterError, AppMetadata, AuthReply, Authenticator, CloseReport, EndpointError,
    GroupError, IpcAcceptFilters, Message, MetadataError, MonitorEvent, MonitorEventKind, Options,
    PeerProperties, PipesStatsError, QueueCounts, ReconnectStop, RouterNotify, SendError, Sent,
    SocksProxy, SocksProxyError, TcpAcceptFilter, TextError, ZapRequest, GROUP_MAX_LEN,
};
pub use zmtp_proto::{z85, Bytes, SocketType};

/// A context: the I/O thread its sockets share. Cheap to clone.
///
/// Ending a context ends its sockets as libzmq's `zmq_ctx_term` does: when the last
/// handle to it is dropped, the drop blocks until every socket dropped before it has
/// written its queued messages or run out of LINGER, so a program that sends and then
/// returns from `main` loses nothing. A socket dropped after its context (kept alive
/// elsewhere) blocks in its own drop instead, for the same reason. [`Context::term`]
/// also closes the sockets still in use and reports what LINGER cut off.
///
/// With the default LINGER (forever) the wait lasts until every queued message is
/// written, however long a peer takes to appear; set LINGER to bound it.
///
/// ```
/// use zmtp_mio::{Context, SocketType};
///
/// # fn main() -> Result<(), zmtp_mio::Error> {
/// let ctx = Context::new()?;
/// let pull = ctx.socket(SocketType::Pull)?;
/// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
///
/// let push = ctx.socket(SocketType::Push)?;
/// push.connect(&endpoint)?;
/// push.send("the last words")?;
/// // Closes in the background, lingering until the message is written.
/// drop(push);
/// assert_eq!(pull.recv_string()?, "the last words");
/// // Dropping `ctx` at the end of `main` would wait for that linger, had it not ended.
/// # Ok(()) }
/// ```
pub struct Context {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Context")
    }
}

impl Clone for Context {
    fn clone(&self) -> Context {
        Context::handle(self.shared.clone())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.shared.contexts.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last handle: the sockets dropped before it linger to the end.
            self.shared.linger_orphans();
            self.shared.let_go_of_listeners();
        }
    }
}

/// What a [`Context`]'s I/O thread waits in ([`Context::with_backend`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Backend {
    /// epoll, through mio (the default).
    #[default]
    Mio,
    /// An io_uring (Linux 6.0 or later). Where io_uring is unavailable (an older kernel,
    /// the sysctl `kernel.io_uring_disabled`, a seccomp filter as container runtimes
    /// install), making the context fails with an error that says which.
    IoUring,
    /// An io_uring where it is available, epoll otherwise.
    IoUringOrMio,
}

/// When a [`Context`] on io_uring sends a tcp stream's output without copying it into the
/// kernel (`IORING_OP_SENDMSG_ZC`: the kernel sends from the message's own pages, and the
/// context keeps them until the kernel says it is done): [`Context::set_zero_copy`]. Only
/// the I/O thread's writes of 16 KiB or more are sent so, and only on the io_uring
/// backend; epoll ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ZeroCopy {
    /// Never: every write copies.
    Off,
    /// For each stream, until the kernel reports that it copied the data after all (it
    /// does for a peer on the same host, over loopback, where the receiving socket gets a
    /// copy; then that stream's writes copy from the start, which costs less). The
    /// default.
    #[default]
    Auto,
    /// Always, even where the kernel copies after all (to measure what it costs).
    Always,
}

impl ZeroCopy {
    /// From its number, as the I/O thread reads it.
    pub(crate) fn from_u8(n: u8) -> ZeroCopy {
        match n {
            0 => ZeroCopy::Off,
            2 => ZeroCopy::Always,
            _ => ZeroCopy::Auto,
        }
    }
}

impl Context {
    /// A new context with its I/O thread (on epoll: [`Backend::Mio`]).
    pub fn new() -> Result<Context, Error> {
        Context::with_backend(Backend::Mio)
    }

    /// A new context whose I/O thread waits in `backend`. The sockets, their calls and
    /// options are the same whichever it is.
    ///
    /// ```
    /// use zmtp_mio::{Backend, Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::with_backend(Backend::IoUringOrMio)?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("hello")?;
    /// assert_eq!(pull.recv()?.to_str().ok(), Some("hello"));
    /// # Ok(()) }
    /// ```
    pub fn with_backend(backend: Backend) -> Result<Context, Error> {
        let ring = match backend {
            Backend::Mio => false,
            Backend::IoUring => {
                reactor::ring_available().map_err(std::io::Error::from)?;
                true
            }
            Backend::IoUringOrMio => reactor::ring_available().is_ok(),
        };
        Ok(Context::handle(Shared::start(ring)?))
    }

    /// What this context's I/O thread waits in: [`Backend::Mio`] or [`Backend::IoUring`].
    pub fn backend(&self) -> Backend {
        if self.shared.ring {
            Backend::IoUring
        } else {
            Backend::Mio
        }
    }

    /// When this context's writes go without copying ([`ZeroCopy`]; io_uring only). Takes
    /// effect from the I/O thread's next writes.
    ///
    /// ```
    /// use zmtp_mio::{Backend, Context, ZeroCopy};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::with_backend(Backend::IoUringOrMio)?;
    /// ctx.set_zero_copy(ZeroCopy::Off);
    /// # Ok(()) }
    /// ```
    pub fn set_zero_copy(&self, mode: ZeroCopy) {
        self.shared.set_zero_copy(mode);
    }

    /// Let this context's I/O thread run on the CPUs `cpus` only (numbered from 0), as
    /// libzmq's `ZMQ_THREAD_AFFINITY_CPU_ADD` and `_REMOVE` pin its I/O threads; with no
    /// CPU, on those it was allowed when it started again. Takes effect at once (the
    /// thread is already running). Fails, changing nothing, when the system refuses the
    /// set (none of its CPUs is online), or on systems other than Linux (`Unsupported`).
    ///
    /// ```
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = zmtp_mio::Context::new()?;
    /// ctx.set_io_thread_affinity([0])?; // CPU 0 only
    /// ctx.set_io_thread_affinity([])?; // anywhere again
    /// # Ok(()) }
    /// ```
    pub fn set_io_thread_affinity(
        &self,
        cpus: impl IntoIterator<Item = usize>,
    ) -> Result<(), Error> {
        let cpus = cpus.into_iter().collect();
        Ok(self.shared.set_io_thread_affinity(&cpus)?)
    }

    fn handle(shared: Arc<Shared>) -> Context {
        shared.contexts.fetch_add(1, Ordering::SeqCst);
        Context { shared }
    }

    /// Close every socket of this context (those still in use too: their operations
    /// then fail with [`Error::Closed`]) and wait until each has written its queued
    /// messages or run out of LINGER (`zmq_ctx_term`; pyzmq's `Context.destroy`).
    /// Returns what LINGER cut off, summed over the sockets (those dropped earlier
    /// included).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Options, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// // A free port, found by binding and unbinding: nobody will take the message.
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// pull.unbind(&endpoint)?;
    ///
    /// let options = Options::default().with_linger(Some(Duration::from_millis(10)));
    /// let push = ctx.socket_with(SocketType::Push, options)?;
    /// push.connect(&endpoint)?;
    /// push.send("never delivered")?;
    ///
    /// let report = ctx.clone().term();
    /// assert_eq!(report.unsent_messages, 1);
    /// // The sockets still in use are closed.
    /// assert!(push.send("more").is_err());
    /// # Ok(()) }
    /// ```
    pub fn term(self) -> CloseReport {
        let now = self.shared.now();
        // The sockets still in use; the dropped ones report when they are forgotten.
        let ids: Vec<usize> = (self.shared.lock().sockets.iter())
            .filter(|(_, s)| !s.closed && !s.orphaned)
            .map(|(id, _)| *id)
            .collect();
        for &id in &ids {
            let _ = self.shared.with(id, true, |s| s.core.close(now));
        }
        let mut report = CloseReport::default();
        for id in ids {
            while !self.shared.wait_for(id, None, |s| s.closed) {
                self.shared.help(id);
            }
            if let Some(r) = self.shared.with(id, false, |s| s.core.close_report()) {
                report = report.merged(r.unwrap_or_default());
            }
        }
        self.shared.linger_orphans();
        let mut st = self.shared.lock();
        report.merged(std::mem::take(&mut st.orphans_report))
    }

    /// Where this context's ZAP handler binds (RFC 27): libzmq's
    /// `inproc://zeromq.zap.01` ([`ZAP_HANDLER_NAME`]), or any other endpoint this
    /// context's sockets bind. `None`, the default: no handler is looked for.
    ///
    /// A socket that must authenticate a peer (a PLAIN or CURVE server, or NULL with a
    /// `ZAP_DOMAIN`) and has no [`Authenticator`] of its own
    /// ([`Socket::set_authenticator`]) asks the socket of this context bound at
    /// `endpoint`, if there is one, with an RFC 27 request; its reply (a REP or ROUTER
    /// handler's, as for libzmq) is the verdict: 200 lets the peer in, with the reply's
    /// user id (`User-Id`) and properties on each message the peer sends; 300 closes the
    /// connection silently; 400 and 500 send the peer an ERROR with the status and close
    /// it (monitor event HANDSHAKE_FAILED_AUTH with the status). A reply that breaks
    /// RFC 27 closes it without an ERROR (HANDSHAKE_FAILED_PROTOCOL with libzmq's
    /// `ZMQ_PROTOCOL_ERROR_ZAP_*` code). The request waits in the I/O thread's
    /// background for as long as the peer's handshake may last (`HANDSHAKE_IVL`); a
    /// handler that never answers leaves it waiting until then, as in libzmq. With no
    /// socket bound at `endpoint`, libzmq's rules without a handler apply (see
    /// [`Socket::set_authenticator`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Options, Security, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let zap = format!("ipc://@zap-doc-{}", std::process::id());
    /// ctx.set_zap_endpoint(Some(&zap));
    /// let handler = ctx.socket(SocketType::Rep)?;
    /// handler.bind(&zap)?;
    ///
    /// let server = ctx.socket_with(SocketType::Pull, Options::default().with_security(Security::plain_server()))?;
    /// let endpoint = server.bind("tcp://127.0.0.1:*")?;
    /// let client_security = Security::plain_client("admin", "secret")?;
    /// let client = ctx.socket_with(SocketType::Push, Options::default().with_security(client_security))?;
    /// client.connect(&endpoint)?;
    /// client.send("hello")?;
    ///
    /// // The handler gets the request: version, id, domain, address, identity,
    /// // mechanism, user name, password.
    /// handler.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let request = handler.recv()?;
    /// let frames = request.frames();
    /// assert_eq!(&frames[5][..], b"PLAIN");
    /// assert_eq!((&frames[6][..], &frames[7][..]), (&b"admin"[..], &b"secret"[..]));
    /// handler.send(zmtp_mio::Message::from(
    ///     [&b"1.0"[..], &frames[1], b"200", b"OK", b"admin", b""].map(zmtp_mio::Bytes::copy_from_slice).to_vec(),
    /// ))?;
    ///
    /// let msg = server.recv_timeout(Some(Duration::from_secs(5)))?;
    /// assert_eq!(msg.property("User-Id"), Some(&b"admin"[..]));
    /// # Ok(()) }
    /// ```
    pub fn set_zap_endpoint(&self, endpoint: Option<&str>) {
        self.shared.lock().zap.endpoint = endpoint.map(str::to_owned);
    }

    /// A socket of type `ty` with libzmq's default options.
    pub fn socket(&self, ty: SocketType) -> Result<Socket, Error> {
        self.socket_with(ty, Options::default())
    }

    /// A socket of type `ty` with `options`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, Options, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let options = Options::default().with_routing_id("worker-1").with_linger(Some(Duration::ZERO));
    /// let dealer = ctx.socket_with(SocketType::Dealer, options)?;
    /// assert_eq!(&dealer.options().routing_id[..], b"worker-1");
    ///
    /// // Invalid options fail here (routing ids are at most 255 bytes).
    /// let too_long = Options::default().with_routing_id(vec![b'x'; 256]);
    /// assert!(matches!(ctx.socket_with(SocketType::Dealer, too_long), Err(Error::Options(_))));
    /// # Ok(()) }
    /// ```
    pub fn socket_with(&self, ty: SocketType, options: Options) -> Result<Socket, Error> {
        // Its starting values and CURVE's keys and nonces come from the operating system.
        let core = zmtp_driver::new_socket(ty, options)?;
        let ready = Arc::new(Ready::default());
        let batches = core.type_recvs_in_batches();
        let id = self.shared.add_with(core, ready.clone());
        Ok(Socket {
            shared: self.shared.clone(),
            id,
            ready,
            batches,
            rcvtimeo: Timeout::default(),
            sndtimeo: Timeout::default(),
        })
    }
}

/// A ZeroMQ socket with a blocking API. Methods take `&self`: one socket may be shared
/// between threads (in an `Arc`). Dropping it closes it, lingering per LINGER in the
/// background while its [`Context`] lives; the context's end waits for that linger
/// (and a socket dropped after its context waits in its drop).
///
/// A request and its reply, each wait bounded by a timeout:
///
/// ```
/// use std::time::Duration;
/// use zmtp_mio::{Context, SocketType};
///
/// # fn main() -> Result<(), zmtp_mio::Error> {
/// let ctx = Context::new()?;
/// let rep = ctx.socket(SocketType::Rep)?;
/// let endpoint = rep.bind("tcp://127.0.0.1:*")?;
/// let req = ctx.socket(SocketType::Req)?;
/// req.connect(&endpoint)?;
/// req.set_rcvtimeo(Some(Duration::from_secs(5)));
/// rep.set_rcvtimeo(Some(Duration::from_secs(5)));
///
/// // The server answers from its own thread.
/// let server = std::thread::spawn(move || -> Result<(), zmtp_mio::Error> {
///     let request = rep.recv_string()?;
///     rep.send(format!("{request} back"))?;
///     Ok(())
/// });
/// req.send("ping")?;
/// assert_eq!(req.recv_string()?, "ping back");
/// server.join().unwrap()?;
/// # Ok(()) }
/// ```
pub struct Socket {
    shared: Arc<Shared>,
    id: usize,
    /// What `recv` took in a batch and hands out one per call (shared with the socket's
    /// state, whose waiters look at it too).
    ready: Arc<Ready>,
    /// Whether the type receives in batches (`ProtoSocket::type_recvs_in_batches`).
    batches: bool,
    rcvtimeo: Timeout,
    sndtimeo: Timeout,
}

/// A timeout that `&self` can change: nanoseconds, with `u64::MAX` for none (wait
/// forever). Longer timeouts are as good as none (over 584 years).
#[derive(Debug)]
struct Timeout(AtomicU64);

impl Default for Timeout {
    fn default() -> Timeout {
        Timeout(AtomicU64::new(u64::MAX))
    }
}

impl Timeout {
    fn get(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            u64::MAX => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    fn set(&self, timeout: Option<Duration>) {
        let nanos = timeout.map_or(u64::MAX, |t| {
            u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
        });
        self.0.store(nanos, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("id", &self.id).finish()
    }
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

    /// How many distinct topics are subscribed (see
    /// [`zmtp_proto::socket::Socket::topics_count`]): a SUB's or XSUB's own, a PUB's or
    /// XPUB's peers' together.
    pub fn topics_count(&self) -> usize {
        self.with(false, |s| s.core.topics_count()).unwrap_or(0)
    }

    /// The options in force.
    pub fn options(&self) -> Options {
        self.with(false, |s| s.core.options().clone())
            .unwrap_or_default()
    }

    /// Change options; they apply to connections made afterwards (HWMs and pattern
    /// options at once). To change one option, use its setter (`set_sndhwm`, …).
    pub fn set_options(&self, options: Options) -> Result<(), Error> {
        self.with(true, |s| s.core.set_options(options))?
            .map_err(Error::Options)
    }

    /// The TLS settings of the `wss://` endpoints this socket binds or connects from now
    /// on: the certificate it presents when listening, the roots it trusts when
    /// connecting (the platform's unless set). Binding `wss://` without a certificate
    /// fails with `InvalidInput`.
    ///
    /// ```no_run
    /// use zmtp_mio::{Context, SocketType, Tls};
    ///
    /// let ctx = Context::new()?;
    /// let rep = ctx.socket(SocketType::Rep)?;
    /// rep.set_tls(Tls::new().with_identity_files("cert.pem", "key.pem")?);
    /// rep.bind("wss://*:5556")?;
    ///
    /// let req = ctx.socket(SocketType::Req)?;
    /// req.set_tls(Tls::new().with_roots_file("ca.pem")?);
    /// req.connect("wss://localhost:5556")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_tls(&self, tls: Tls) {
        // A closed socket binds and connects nothing more.
        let _ = self.with(false, |s| s.tls = tls);
    }

    /// Change some options in one step: `change` edits a copy of the options in force,
    /// which replaces them if valid ([`Error::Options`] otherwise, changing nothing).
    /// Each option's setter (`set_sndhwm`, `set_linger`, …) is a call of this.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// // One option: its setter.
    /// push.set_sndhwm(10)?;
    /// assert_eq!(push.options().sndhwm, 10);
    /// // Several in one step.
    /// push.update_options(|options| {
    ///     options.sndhwm = 20;
    ///     options.linger = Some(Duration::ZERO);
    /// })?;
    /// assert_eq!(push.options().sndhwm, 20);
    /// // An invalid value changes nothing.
    /// assert!(matches!(push.set_routing_id(vec![0; 256]), Err(Error::Options(_))));
    /// assert!(push.options().routing_id.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn update_options(&self, change: impl FnOnce(&mut Options)) -> Result<(), Error> {
        self.with(true, |s| {
            let mut options = s.core.options().clone();
            change(&mut options);
            s.core.set_options(options)
        })?
        .map_err(Error::Options)
    }

    zmtp_driver::option_setters!();

    /// How long [`recv`](Self::recv) waits (`ZMQ_RCVTIMEO`); `None` = forever (default).
    /// Applies to calls made afterwards, from any thread.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_millis(10)));
    /// assert_eq!(pull.rcvtimeo(), Some(Duration::from_millis(10)));
    /// assert!(matches!(pull.recv(), Err(Error::Timeout)));
    /// # Ok(()) }
    /// ```
    pub fn set_rcvtimeo(&self, timeout: Option<Duration>) {
        self.rcvtimeo.set(timeout);
    }

    /// How long [`recv`](Self::recv) waits (`ZMQ_RCVTIMEO`); `None` = forever.
    pub fn rcvtimeo(&self) -> Option<Duration> {
        self.rcvtimeo.get()
    }

    /// How long [`send`](Self::send) waits (`ZMQ_SNDTIMEO`); `None` = forever (default).
    /// Applies to calls made afterwards, from any thread.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.set_sndtimeo(Some(Duration::from_millis(10)));
    /// // No peer to send to.
    /// assert!(matches!(push.send("job"), Err(Error::Timeout)));
    /// # Ok(()) }
    /// ```
    pub fn set_sndtimeo(&self, timeout: Option<Duration>) {
        self.sndtimeo.set(timeout);
    }

    /// How long [`send`](Self::send) waits (`ZMQ_SNDTIMEO`); `None` = forever.
    pub fn sndtimeo(&self) -> Option<Duration> {
        self.sndtimeo.get()
    }

    /// Decide authentication requests (ZAP) in code, for every peer of this socket that
    /// must be authenticated (a PLAIN or CURVE server, or NULL with a `ZAP_DOMAIN`).
    ///
    /// `None` (the default): the context's ZAP handler is asked, when a socket of the
    /// context is bound at its ZAP endpoint ([`Context::set_zap_endpoint`]). Without
    /// one, libzmq's rules apply: a NULL peer is let in unless `ZAP_ENFORCE_DOMAIN` is
    /// set; a CURVE client is let in unless `ZAP_ENFORCE_DOMAIN` is set with a
    /// `ZAP_DOMAIN`; a PLAIN client is refused. A refused peer's connection is closed
    /// without an ERROR, with monitor event HANDSHAKE_FAILED_NO_DETAIL carrying `EFAULT`.
    ///
    /// A PLAIN server that lets one user in; the user id it gives is on every message that
    /// user sends:
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Authenticator, Context, Options, Security, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let server_options = Options::default().with_security(Security::plain_server());
    /// let server = ctx.socket_with(SocketType::Pull, server_options)?;
    /// server.set_authenticator(Some(Authenticator::new().plain_user("admin", "secret")));
    /// let endpoint = server.bind("tcp://127.0.0.1:*")?;
    ///
    /// let client_options = Options::default().with_security(Security::plain_client("admin", "secret")?);
    /// let client = ctx.socket_with(SocketType::Push, client_options)?;
    /// client.connect(&endpoint)?;
    /// client.send("hello")?;
    ///
    /// let msg = server.recv_timeout(Some(Duration::from_secs(5)))?;
    /// assert_eq!(msg.property("User-Id"), Some(&b"admin"[..]));
    /// # Ok(()) }
    /// ```
    pub fn set_authenticator(&self, authenticator: Option<Authenticator>) {
        let _ = self.with(false, |s| s.core.set_authenticator(authenticator));
    }

    /// Listen on `endpoint` (`tcp://127.0.0.1:*`, `ipc:///tmp/x`, `ipc://@name`); returns
    /// the resolved endpoint.
    ///
    /// ```
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// // Port `*`: the system picks a free one, and the endpoint returned says which.
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// assert!(endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with('*'));
    /// assert_eq!(pull.last_endpoint(), endpoint);
    ///
    /// // An endpoint in use is refused.
    /// let other = ctx.socket(SocketType::Pull)?;
    /// let in_use = other.bind(&endpoint).unwrap_err();
    /// assert!(matches!(in_use, Error::Bind { .. }));
    /// assert_eq!(in_use.to_string(), format!("{endpoint}: address already in use"));
    ///
    /// // inproc: in memory, between sockets of this context.
    /// assert_eq!(pull.bind("inproc://name")?, "inproc://name");
    /// assert!(matches!(other.bind("inproc://name"), Err(Error::Bind { .. })));
    /// # Ok(()) }
    /// ```
    pub fn bind(&self, endpoint: &str) -> Result<String, Error> {
        let id = self.with(true, |s| s.core.bind(endpoint))??;
        self.bound_result(endpoint, id)
    }

    /// What became of the bind of `endpoint` as `id`: at once, unless a host name is being
    /// looked up.
    fn bound_result(
        &self,
        endpoint: &str,
        id: zmtp_proto::socket::EndpointId,
    ) -> Result<String, Error> {
        loop {
            match self.with(false, |s| (s.bound.remove(&id), s.closed))? {
                (Some(result), _) => return result.map_err(|e| Error::bind(endpoint, e)),
                (None, true) => return Err(Error::Closed),
                (None, false) => {
                    self.shared
                        .wait_for(self.id, None, |s| s.closed || s.bound.contains_key(&id));
                }
            }
        }
    }

    /// Bind `endpoint`'s transport to `listener`, a socket already bound and listening (a
    /// socket handed over by a service manager, or libzmq's `ZMQ_USE_FD`): a TCP listener
    /// for `tcp://` and `ws://`, a Unix one for `ipc://`. The endpoint's address is not
    /// used; returns the endpoint as the listener is bound. The socket takes `listener`
    /// and closes it when it stops listening; the file of an `ipc://` path stays.
    ///
    /// ```
    /// use std::os::fd::OwnedFd;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = Context::new()?;
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let port = listener.local_addr()?.port();
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let bound = pull.bind_listener("tcp://*:*", OwnedFd::from(listener))?;
    /// assert_eq!(bound, format!("tcp://127.0.0.1:{port}"));
    /// # Ok(()) }
    /// ```
    pub fn bind_listener(
        &self,
        endpoint: &str,
        listener: std::os::fd::OwnedFd,
    ) -> Result<String, Error> {
        // The listen runs once the closure returns, under the same lock, and takes it.
        let id = self.with(true, |s| {
            let id = s.core.bind(endpoint)?;
            s.listen_fds.insert(id, listener);
            Ok::<_, EndpointError>(id)
        })??;
        self.bound_result(endpoint, id)
    }

    /// Connect to `endpoint`; returns at once (connecting and reconnecting go on in the
    /// background; messages queue meanwhile unless IMMEDIATE is set).
    ///
    /// A connection made before its peer binds: the message waits for it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// // A free port, found by binding and unbinding.
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// pull.unbind(&endpoint)?;
    ///
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("sent before the bind")?;
    /// pull.bind(&endpoint)?;
    /// assert_eq!(pull.recv_timeout(Some(Duration::from_secs(5)))?.to_str(), Ok("sent before the bind"));
    ///
    /// // A malformed endpoint fails at once.
    /// assert!(matches!(push.connect("tcp://no-port"), Err(Error::Endpoint(_))));
    /// # Ok(()) }
    /// ```
    pub fn connect(&self, endpoint: &str) -> Result<(), Error> {
        self.with(true, |s| s.core.connect(endpoint).map(|_| ()))??;
        Ok(())
    }

    /// PEER: connect to `endpoint` (as [`connect`](Self::connect)) and return the routing
    /// id of the peer there, to address messages to it with [`Message::set_routing_id`]
    /// (libzmq's `zmq_connect_peer`). Messages to it wait for the connection. Another
    /// type, or `IMMEDIATE` set, fails with [`Error::Endpoint`].
    ///
    /// ```
    /// use zmtp_mio::{Context, Message, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let b = ctx.socket(SocketType::Peer)?;
    /// let endpoint = b.bind("tcp://127.0.0.1:*")?;
    /// let a = ctx.socket(SocketType::Peer)?;
    /// let to_b = a.connect_peer(&endpoint)?;
    /// let mut hello = Message::from("hello");
    /// hello.set_routing_id(to_b)?;
    /// a.send(hello)?;
    /// let got = b.recv()?;
    /// let mut reply = Message::from("hi");
    /// reply.set_routing_id(got.routing_id().unwrap())?;
    /// b.send(reply)?;
    /// assert_eq!(a.recv()?.routing_id(), Some(to_b));
    /// # Ok(()) }
    /// ```
    pub fn connect_peer(&self, endpoint: &str) -> Result<u32, Error> {
        Ok(self.with(true, |s| s.core.connect_peer(endpoint))??)
    }

    /// DISH: receive the messages RADIO peers send to `group` (at most 255 bytes, matched
    /// whole); every RADIO is told now and again on each reconnect (libzmq's `zmq_join`).
    /// Another type fails with [`Error::Unsupported`]; a group already joined or too long
    /// with [`Error::Group`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, Message, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let radio = ctx.socket(SocketType::Radio)?;
    /// let endpoint = radio.bind("tcp://127.0.0.1:*")?;
    /// let dish = ctx.socket(SocketType::Dish)?;
    /// dish.set_rcvtimeo(Some(Duration::from_millis(10)));
    /// dish.join("weather")?;
    /// dish.connect(&endpoint)?;
    /// // RADIO drops what no one has joined: send until the join has arrived.
    /// let news = loop {
    ///     let mut news = Message::from("rain");
    ///     news.set_group("weather")?;
    ///     radio.send(news)?;
    ///     match dish.recv() {
    ///         Err(Error::Timeout) => continue,
    ///         got => break got?,
    ///     }
    /// };
    /// assert_eq!(news.group(), Some(&b"weather"[..]));
    /// # Ok(()) }
    /// ```
    pub fn join(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        Ok(self.with(false, |s| s.core.join(group.as_ref()))??)
    }

    /// DISH: stop receiving the messages of `group` (libzmq's `zmq_leave`); as
    /// [`join`](Self::join) for errors, and a group not joined is [`Error::Group`].
    pub fn leave(&self, group: impl AsRef<[u8]>) -> Result<(), Error> {
        Ok(self.with(false, |s| s.core.leave(group.as_ref()))??)
    }

    /// Stop listening on an endpoint given to `bind` (or its resolved form), and close the
    /// connections accepted on it, as libzmq does (what was queued for them is discarded;
    /// what they sent stays readable).
    ///
    /// ```
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// pull.unbind(&endpoint)?;
    /// assert!(matches!(pull.unbind(&endpoint), Err(Error::NotFound)));
    /// # Ok(()) }
    /// ```
    pub fn unbind(&self, endpoint: &str) -> Result<(), Error> {
        let now = self.shared.now();
        let unbound = self.with(true, |s| s.core.unbind(endpoint, now))?;
        self.shared.let_go_of_listeners();
        match unbound {
            true => Ok(()),
            false => Err(Error::NotFound),
        }
    }

    /// Drop a connection made with `connect`.
    ///
    /// ```
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// assert!(push.can_send());
    ///
    /// push.disconnect(&endpoint)?;
    /// assert!(!push.can_send()); // no peer left to send to
    /// assert!(matches!(push.disconnect(&endpoint), Err(Error::NotFound)));
    /// # Ok(()) }
    /// ```
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

    /// Subscribe to a topic prefix (`ZMQ_SUBSCRIBE`); the empty topic matches everything.
    /// Subscriptions count: each needs its own [`unsubscribe`](Self::unsubscribe). Only
    /// SUB and XSUB subscribe: other types fail with [`Error::Unsupported`].
    ///
    /// A publisher drops what no subscriber wants ([`Sent::Dropped`]), and a subscription
    /// takes a moment to reach it after the connection is made:
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, Sent, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let publisher = ctx.socket(SocketType::Pub)?;
    /// let endpoint = publisher.bind("tcp://127.0.0.1:*")?;
    /// let subscriber = ctx.socket(SocketType::Sub)?;
    /// subscriber.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// subscriber.subscribe("weather")?;
    /// subscriber.connect(&endpoint)?;
    ///
    /// // Publish until the subscription has arrived.
    /// while publisher.send("weather: sunny")? == Sent::Dropped {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// assert_eq!(publisher.send("news: none")?, Sent::Dropped);
    /// assert_eq!(publisher.send("weather: rain")?, Sent::Queued);
    ///
    /// assert_eq!(subscriber.recv_string()?, "weather: sunny");
    /// assert_eq!(subscriber.recv_string()?, "weather: rain");
    ///
    /// // Only SUB and XSUB subscribe (and an XPUB in manual mode).
    /// assert!(matches!(publisher.subscribe("weather"), Err(Error::Unsupported)));
    /// # Ok(()) }
    /// ```
    pub fn subscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.with(false, |s| {
            if !s.core.takes_subscriptions() {
                return Err(Error::Unsupported);
            }
            s.core.subscribe(topic.as_ref());
            Ok(())
        })?
    }

    /// Cancel one subscription (`ZMQ_UNSUBSCRIBE`); a topic not subscribed is no error, as
    /// in libzmq. Only SUB and XSUB subscribe (and an XPUB in manual mode, for the peer
    /// whose subscription it received last): other types fail with
    /// [`Error::Unsupported`].
    ///
    /// An XPUB receives subscriptions as messages (a first byte 1 to subscribe, 0 to
    /// unsubscribe, then the topic):
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let xpub = ctx.socket(SocketType::XPub)?;
    /// xpub.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = xpub.bind("tcp://127.0.0.1:*")?;
    /// let sub = ctx.socket(SocketType::Sub)?;
    /// sub.connect(&endpoint)?;
    ///
    /// sub.subscribe("weather")?;
    /// assert_eq!(&xpub.recv()?.frames()[0][..], b"\x01weather");
    /// sub.unsubscribe("weather")?;
    /// assert_eq!(&xpub.recv()?.frames()[0][..], b"\x00weather");
    /// # Ok(()) }
    /// ```
    pub fn unsubscribe(&self, topic: impl AsRef<[u8]>) -> Result<(), Error> {
        self.with(false, |s| {
            if !s.core.takes_subscriptions() {
                return Err(Error::Unsupported);
            }
            s.core.unsubscribe(topic.as_ref());
            Ok(())
        })?
    }

    /// Monitor events from now on, on a channel.
    ///
    /// The events of a `connect`, from the attempt to the end of the handshake:
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, MonitorEventKind, SocketType};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// let monitor = push.monitor();
    /// push.connect(&endpoint)?;
    ///
    /// let mut kinds = Vec::new();
    /// loop {
    ///     let event = monitor.recv_timeout(Duration::from_secs(5))?;
    ///     println!("{:?} {}", event.kind, event.endpoint);
    ///     kinds.push(event.kind);
    ///     if event.kind == MonitorEventKind::HandshakeSucceeded {
    ///         break;
    ///     }
    /// }
    /// assert!(kinds.contains(&MonitorEventKind::Connected));
    /// # Ok(()) }
    /// ```
    pub fn monitor(&self) -> mpsc::Receiver<MonitorEvent> {
        let (tx, rx) = mpsc::channel();
        let _ = self.with(false, |s| {
            s.monitors.push(tx);
            // Every kind; PIPES_STATS comes only when asked for (`monitor_pipes_stats`).
            s.core
                .set_monitor(0xFFFF | MonitorEventKind::PipesStats.value());
        });
        rx
    }

    /// Put each routable peer's queue sizes on the [`monitor`](Self::monitor): one
    /// `PipesStats` event per peer, with its endpoint, its address and
    /// [`MonitorEvent::queues`] (libzmq's `zmq_socket_monitor_pipes_stats`). Returns how
    /// many events were sent; fails with [`PipesStatsError::NotMonitored`] when no monitor
    /// is set, and [`PipesStatsError::NoPeers`] when the socket has no peer to report on
    /// (or is closed).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, MonitorEventKind, SocketType};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// let monitor = push.monitor();
    /// push.connect(&endpoint)?;
    /// while monitor.recv_timeout(Duration::from_secs(5))?.kind
    ///     != MonitorEventKind::HandshakeSucceeded
    /// {}
    /// assert_eq!(push.monitor_pipes_stats()?, 1);
    /// let event = monitor.recv_timeout(Duration::from_secs(5))?;
    /// assert_eq!(event.kind, MonitorEventKind::PipesStats);
    /// assert_eq!(event.queues.map(|q| q.outbound), Some(0));
    /// # Ok(()) }
    /// ```
    pub fn monitor_pipes_stats(&self) -> Result<usize, PipesStatsError> {
        self.with(false, |s| s.core.monitor_pipes_stats())
            .unwrap_or(Err(PipesStatsError::NoPeers))
    }

    /// Send a message, waiting while the socket would block, at most SNDTIMEO
    /// ([`Error::Timeout`] then, with the message dropped: use
    /// [`try_send`](Self::try_send) to get it back). A refusal other than would-block is
    /// [`Error::Send`] with its reason and the message (a REQ sending twice: `InvalidState`),
    /// or [`Error::Closed`].
    ///
    /// A message is anything that converts into a [`Message`]: borrowed text and bytes
    /// (copied), owned `String`s, `Vec<u8>`s and [`Bytes`] (taken without a copy),
    /// `'static` data without a copy through [`Message::from_static`], and lists of frames.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, Message, SendError, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let name = String::from("Ada");
    /// push.send("text")?; // &str
    /// push.send(&name)?; // &String
    /// push.send(&b"\x00\x01"[..])?; // &[u8]
    /// push.send(format!("hello {name}"))?; // String, not copied
    /// push.send(Message::from_static(b"static"))?; // not copied
    /// push.send(["key", "value"])?; // two frames
    ///
    /// assert_eq!(pull.recv_string()?, "text");
    /// assert_eq!(pull.recv_string()?, "Ada");
    /// assert_eq!(&pull.recv()?.frames()[0][..], b"\x00\x01");
    /// assert_eq!(pull.recv_string()?, "hello Ada");
    /// assert_eq!(pull.recv_string()?, "static");
    /// assert_eq!(pull.recv()?, Message::from(["key", "value"]));
    ///
    /// // A REQ must wait for its reply before it sends again; the message comes back.
    /// let req = ctx.socket(SocketType::Req)?;
    /// req.set_linger(Some(Duration::ZERO))?; // its request goes nowhere: do not wait for it
    /// req.connect("tcp://127.0.0.1:1")?;
    /// req.send("first")?;
    /// match req.send("second") {
    ///     Err(Error::Send(SendError::InvalidState(msg))) => assert_eq!(msg.to_str(), Ok("second")),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn send(&self, msg: impl Into<Message>) -> Result<Sent, Error> {
        self.send_timeout(msg, self.sndtimeo.get())
    }

    /// [`send`](Self::send) with an explicit timeout (`None` = forever).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// // No peer to send to.
    /// let limit = Some(Duration::from_millis(10));
    /// assert!(matches!(push.send_timeout("job", limit), Err(Error::Timeout)));
    /// # Ok(()) }
    /// ```
    pub fn send_timeout(
        &self,
        msg: impl Into<Message>,
        timeout: Option<Duration>,
    ) -> Result<Sent, Error> {
        let mut msg = Some(msg.into());
        self.wait_to_send(timeout, || match msg.take().map(|m| self.try_send(m)) {
            Some(Err(SendError::WouldBlock(m))) => {
                msg = Some(m);
                Ok(None)
            }
            Some(Ok(sent)) => Ok(Some(sent)),
            Some(Err(refused)) => Err(refused.into()),
            None => Err(Error::Closed),
        })
    }

    /// Retry `attempt` until it gives something, waiting (at most `timeout`) while the
    /// socket has no room: the waits of [`send_timeout`](Self::send_timeout) and
    /// [`send_many`](Self::send_many).
    fn wait_to_send<T>(
        &self,
        timeout: Option<Duration>,
        mut attempt: impl FnMut() -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        loop {
            if let Some(done) = attempt()? {
                return Ok(done);
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

    /// Send single-frame messages copied from `bodies`, in order, waiting (at most
    /// SNDTIMEO) while none fits; returns how many were queued (at least one, unless
    /// `bodies` is empty). Call it again with the rest (`&bodies[n..]`) until all are
    /// sent.
    ///
    /// The batch is queued under one lock, where [`send_slice`](Self::send_slice) takes it
    /// once per message: a sender of many small messages spends noticeably less per
    /// message this way. Each message is queued as `send_slice` queues it.
    ///
    /// ```
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let batch: Vec<String> = (0..100).map(|i| format!("tick {i}")).collect();
    /// let mut rest = &batch[..];
    /// while !rest.is_empty() {
    ///     let n = push.send_many(rest)?;
    ///     rest = &rest[n..];
    /// }
    /// for i in 0..100 {
    ///     assert_eq!(pull.recv_string()?, format!("tick {i}"));
    /// }
    /// # Ok::<(), zmtp_mio::Error>(())
    /// ```
    pub fn send_many<B: AsRef<[u8]>>(&self, bodies: &[B]) -> Result<usize, Error> {
        if bodies.is_empty() {
            return Ok(0);
        }
        self.wait_to_send(self.sndtimeo.get(), || {
            Ok(Some(self.try_send_many(bodies)?).filter(|&n| n > 0))
        })
    }

    /// Queue single-frame messages copied from `bodies`, in order, as many as fit now
    /// (possibly 0), under one lock; returns how many. A refusal other than a full socket
    /// (a type that never sends, a closed socket) is returned when it hits the first
    /// message.
    ///
    /// ```
    /// use zmtp_mio::{Context, Options, SocketType};
    ///
    /// let ctx = Context::new()?;
    /// let options = Options::default().with_sndhwm(2).with_linger(Some(std::time::Duration::ZERO));
    /// let push = ctx.socket_with(SocketType::Push, options)?;
    /// push.connect("tcp://127.0.0.1:1")?;
    /// // SNDHWM 2: two of the three fit.
    /// assert_eq!(push.try_send_many(&["a", "b", "c"])?, 2);
    /// # Ok::<(), zmtp_mio::Error>(())
    /// ```
    pub fn try_send_many<B: AsRef<[u8]>>(&self, bodies: &[B]) -> Result<usize, SendError> {
        let Some(first) = bodies.first() else {
            return Ok(0);
        };
        match self.shared.send_with(self.id, |s| {
            s.core.send_slices(bodies, || self.shared.now())
        }) {
            Some(r) => r,
            // The socket is gone: closed, with a copy of the first body.
            None => Err(SendError::Closed(Message::from(first.as_ref()))),
        }
    }

    /// Send a single-frame message copied from `body`, waiting like [`send`](Self::send)
    /// (libzmq's `zmq_send`): the frame is copied straight into the peer's output when it
    /// can go at once (PUSH, DEALER, PAIR with room), with no message allocated.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// let mut buf = Vec::new();
    /// for i in 0..3 {
    ///     buf.clear();
    ///     write!(buf, "tick {i}")?;
    ///     push.send_slice(&buf)?;
    /// }
    /// assert_eq!(pull.recv_string()?, "tick 0");
    /// assert_eq!(pull.recv_string()?, "tick 1");
    /// assert_eq!(pull.recv_string()?, "tick 2");
    /// # Ok(()) }
    /// ```
    pub fn send_slice(&self, body: &[u8]) -> Result<Sent, Error> {
        match self.try_send_slice(body) {
            Err(SendError::WouldBlock(msg)) => self.send_timeout(msg, self.sndtimeo.get()),
            Ok(sent) => Ok(sent),
            Err(refused) => Err(refused.into()),
        }
    }

    /// [`send_slice`](Self::send_slice) without waiting: `SendError::WouldBlock` hands back
    /// a message holding a copy.
    pub fn try_send_slice(&self, body: &[u8]) -> Result<Sent, SendError> {
        match self
            .shared
            .send_with(self.id, |s| s.core.send_slice(body, || self.shared.now()))
        {
            Some(r) => r,
            // The socket is gone: closed, with a copy of the body.
            None => Err(SendError::Closed(Message::from(body))),
        }
    }

    /// Send without waiting: `SendError::WouldBlock` hands the message back, as every
    /// refusal does (`SendError::Closed` once the socket is closed).
    ///
    /// ```
    /// use zmtp_mio::{Context, SendError, Sent, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// // No peer yet: the message comes back.
    /// let msg = match push.try_send("job") {
    ///     Err(SendError::WouldBlock(msg)) => msg,
    ///     other => panic!("{other:?}"),
    /// };
    /// // With IMMEDIATE off (the default), a connection gets its queue at once.
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// push.connect(&pull.bind("tcp://127.0.0.1:*")?)?;
    /// assert_eq!(push.try_send(msg), Ok(Sent::Queued));
    /// assert_eq!(pull.recv_string()?, "job");
    /// # Ok(()) }
    /// ```
    pub fn try_send(&self, msg: impl Into<Message>) -> Result<Sent, SendError> {
        match self.send_now(msg.into()) {
            // No room: the writes of this socket queued for the I/O thread are run here,
            // once, and the send tried again (the queue may have room once they are
            // written), before it is refused.
            Err(SendError::WouldBlock(msg)) if self.shared.help(self.id) => self.send_now(msg),
            sent => sent,
        }
    }

    /// `try_send`'s attempt, with no I/O of its own.
    fn send_now(&self, msg: Message) -> Result<Sent, SendError> {
        let mut msg = Some(msg);
        let sent = self.shared.send_with(self.id, |s| {
            msg.take().map(|m| s.core.send(m, || self.shared.now()))
        });
        match sent.flatten() {
            Some(r) => r,
            // The socket is gone: the message comes back with the reason.
            None => Err(SendError::Closed(msg.unwrap_or_default())),
        }
    }

    /// Receive a message, waiting at most RCVTIMEO ([`Error::Timeout`]). A type that never
    /// receives (PUB, PUSH: see [`SocketType::receives`]) fails at once with
    /// [`Error::Unsupported`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    ///
    /// push.send(["job", "42"])?;
    /// let msg = pull.recv()?;
    /// assert_eq!(msg.len(), 2);
    /// assert_eq!(&msg.frames()[1][..], b"42");
    ///
    /// // A PUSH never receives.
    /// assert!(matches!(push.recv(), Err(Error::Unsupported)));
    /// # Ok(()) }
    /// ```
    pub fn recv(&self) -> Result<Message, Error> {
        self.recv_timeout(self.rcvtimeo.get())
    }

    /// Receive a single-frame text message as a `String` (pyzmq's `recv_string`), waiting
    /// as [`recv`](Self::recv) does, at most RCVTIMEO. A message that is not text (several
    /// frames, or not UTF-8: see [`Message::to_str`]) is taken all the same, and handed
    /// over in [`Error::NotText`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType, TextError};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("hello")?;
    /// push.send(["two", "frames"])?;
    ///
    /// assert_eq!(pull.recv_string()?, "hello");
    /// match pull.recv_string() {
    ///     Err(Error::NotText { reason, message }) => {
    ///         assert_eq!(reason, TextError::Frames(2));
    ///         assert_eq!(message.len(), 2);
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn recv_string(&self) -> Result<String, Error> {
        Error::text_of(self.recv()?)
    }

    /// [`recv`](Self::recv) with an explicit timeout (`None` = forever).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let limit = Some(Duration::from_millis(10));
    /// assert!(matches!(pull.recv_timeout(limit), Err(Error::Timeout)));
    /// # Ok(()) }
    /// ```
    pub fn recv_timeout(&self, timeout: Option<Duration>) -> Result<Message, Error> {
        // A message ready: one lock, nothing else.
        if let Some(msg) = self.recv_ready() {
            return Ok(msg);
        }
        self.wait_to_recv(timeout, || self.try_recv())
    }

    /// A message already received, if one is ready: the first look of
    /// [`recv`](Self::recv), which reads no stream (unlike [`try_recv`](Self::try_recv),
    /// it makes no system call); `None` says only that none is ready now, or that the
    /// socket is gone.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.bind("inproc://ready")?;
    /// assert!(pull.try_recv_ready().is_none());
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect("inproc://ready")?;
    /// push.send("here")?;
    /// // inproc hands it over in the send.
    /// assert_eq!(pull.try_recv_ready().unwrap().to_str(), Ok("here"));
    /// # Ok(()) }
    /// ```
    pub fn try_recv_ready(&self) -> Option<Message> {
        self.recv_ready()
    }

    /// The next message if one is ready, with no error decided: from the batch `recv`
    /// took, or (with none left) from a new batch taken under one lock; a type that does
    /// not receive in batches takes one message.
    #[inline(always)]
    fn recv_ready(&self) -> Option<Message> {
        if !self.batches {
            return self.shared.recv_ready(self.id);
        }
        self.ready.next(
            |batch| {
                self.shared.with(self.id, false, |s| {
                    let max = s.core.recv_batch_len();
                    s.core.recv_many(batch, max, || self.shared.now())
                });
            },
            // Other threads waiting on this socket look at what the batch left.
            || self.shared.touch(self.id),
        )
    }

    /// Wait until `take` gives something, at most `timeout`. Before each wait, this thread
    /// runs the socket's queued reads and writes, then reads its idle streams itself (see
    /// the crate docs); it waits only if that brought no message.
    fn wait_to_recv<T>(
        &self,
        timeout: Option<Duration>,
        mut take: impl FnMut() -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        let mut last_look = false;
        loop {
            if let Some(got) = take()? {
                return Ok(got);
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                // Out of time (or allowed none): what this thread can read without
                // waiting is read once, as `try_recv` does, before it gives up.
                if !last_look && self.work_here() {
                    last_look = true;
                    continue;
                }
                return Err(Error::Timeout);
            }
            if self.shared.help(self.id) {
                continue;
            }
            // Waiting on the streams reads what is there already (the wait ends at
            // once); a thread that cannot wait so reads them once before it waits.
            if self
                .shared
                .wait_on_streams(self.id, deadline, reactor::Sock::message_ready)
                || self.shared.read_here(self.id)
            {
                continue;
            }
            self.shared.wait_for_message(self.id, deadline);
        }
    }

    /// Receive a batch: wait as [`recv`](Self::recv) does (at most RCVTIMEO) until at least
    /// one message is ready, then append up to `max` ready messages to `out`, in the order
    /// `recv` would give them; returns how many. `max` 0 returns 0 at once.
    ///
    /// Cost: one lock of the context's state for the whole batch, where `recv` takes one
    /// per message, and no system call or wake-up when messages are ready. A receiver
    /// that keeps up with a fast sender spends less time per message with batches of
    /// tens to hundreds; `out` is the caller's, so its allocation is reused from one
    /// batch to the next (clear it in between).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// for i in 0..100 {
    ///     push.send(format!("job {i}"))?;
    /// }
    ///
    /// let mut batch = Vec::with_capacity(32);
    /// let mut next = 0;
    /// while next < 100 {
    ///     batch.clear();
    ///     let n = pull.recv_many(&mut batch, 32)?;
    ///     assert!((1..=32).contains(&n) && n == batch.len());
    ///     for msg in &batch {
    ///         assert_eq!(msg.to_str(), Ok(format!("job {next}").as_str()));
    ///         next += 1;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn recv_many(&self, out: &mut Vec<Message>, max: usize) -> Result<usize, Error> {
        if max == 0 {
            return Ok(0);
        }
        self.wait_to_recv(self.rcvtimeo.get(), || {
            Ok(Some(self.try_recv_many(out, max)?).filter(|&n| n > 0))
        })
    }

    /// [`recv_many`](Self::recv_many) without waiting: appends up to `max` messages that are
    /// ready to `out` and returns how many (0 if none). [`Error::Unsupported`] on a type
    /// that never receives, [`Error::Closed`] once the socket is closed and empty.
    ///
    /// Cost: one lock for the batch; no system call, and no wake-up unless taking the
    /// messages lets a peer held at RCVHWM be read again (the I/O thread is then woken
    /// once for the batch).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{poll, Context, PollItem, SocketType, POLLIN};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let mut batch = Vec::new();
    /// assert_eq!(pull.try_recv_many(&mut batch, 10)?, 0);
    ///
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("a")?;
    /// push.send("b")?;
    /// // Take whatever has arrived whenever poll says something has.
    /// while batch.len() < 2 {
    ///     poll(&mut [PollItem::new(&pull, POLLIN)], Some(Duration::from_secs(5)))?;
    ///     pull.try_recv_many(&mut batch, 10)?;
    /// }
    /// assert_eq!(batch.iter().map(|m| m.to_str().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
    /// # Ok(()) }
    /// ```
    pub fn try_recv_many(&self, out: &mut Vec<Message>, max: usize) -> Result<usize, Error> {
        // What `recv` took in a batch comes first.
        let taken = self.ready.drain_into(out, max);
        if taken == max {
            return Ok(taken);
        }
        self.take_batch(out, taken, |_| max - taken)
    }

    /// Append to `out`, under one lock, up to `max` (of the socket) messages the core has
    /// ready, after the `taken` already appended; returns how many in all, or why none
    /// can come ([`try_recv_many`](Self::try_recv_many)'s errors).
    fn take_batch(
        &self,
        out: &mut Vec<Message>,
        taken: usize,
        max: impl FnOnce(&reactor::Sock) -> usize,
    ) -> Result<usize, Error> {
        self.with(false, |s| {
            let max = max(s);
            match s.core.recv_many(out, max, || self.shared.now()) + taken {
                0 if !s.core.socket_type().receives() => Err(Error::Unsupported),
                0 if s.closed => Err(Error::Closed),
                n => Ok(n),
            }
        })?
    }

    /// [`try_recv_batch`](Self::try_recv_batch), waiting as [`recv`](Self::recv) does (at
    /// most RCVTIMEO, [`Error::Timeout`] then) until the batch has at least one message;
    /// returns how many were appended. For a layer that hands messages out one by one: a
    /// receive that finds none ready waits here at once, without a first look of its own.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("job")?;
    /// let mut batch = Vec::new();
    /// assert_eq!(pull.recv_batch(&mut batch)?, 1);
    /// assert_eq!(batch[0].to_str(), Ok("job"));
    /// # Ok(()) }
    /// ```
    pub fn recv_batch(&self, out: &mut Vec<Message>) -> Result<usize, Error> {
        self.wait_to_recv(self.rcvtimeo.get(), || {
            Ok(Some(self.try_recv_batch(out)?).filter(|&n| n > 0))
        })
    }

    /// What [`recv`](Self::recv) would take under one lock, without waiting, appended to
    /// `out`: the messages left of the last batch a `recv` took, or else a new batch (up
    /// to a quarter of RCVHWM and 256 for the types that receive in batches, one message
    /// for the others); returns how many (0 if none). Errors as
    /// [`try_recv_many`](Self::try_recv_many). For a layer that hands messages out one by
    /// one under a lock of its own (the C ABI): one lock of the socket per batch.
    ///
    /// ```
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.bind("inproc://batch")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect("inproc://batch")?;
    /// for job in ["a", "b", "c"] {
    ///     push.send(job)?;
    /// }
    /// // inproc hands each over in its send: the three come in one batch.
    /// let mut batch = Vec::new();
    /// assert_eq!(pull.try_recv_batch(&mut batch)?, 3);
    /// assert_eq!(pull.try_recv_batch(&mut batch)?, 0);
    /// assert_eq!(batch.iter().map(|m| m.to_str().unwrap()).collect::<Vec<_>>(), ["a", "b", "c"]);
    /// # Ok(()) }
    /// ```
    pub fn try_recv_batch(&self, out: &mut Vec<Message>) -> Result<usize, Error> {
        let taken = self.ready.drain_into(out, usize::MAX);
        if taken > 0 {
            return Ok(taken);
        }
        self.take_batch(out, 0, |s| s.core.recv_batch_len())
    }

    /// The next message if one is ready; [`Error::Unsupported`] on a type that never
    /// receives (PUB, PUSH).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{poll, Context, PollItem, SocketType, POLLIN};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// assert_eq!(pull.try_recv()?, None);
    ///
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("job")?;
    /// // Wait until it has arrived, then take it without waiting.
    /// poll(&mut [PollItem::new(&pull, POLLIN)], Some(Duration::from_secs(5)))?;
    /// assert_eq!(pull.try_recv()?.map(|m| m.to_string()), Some("job".to_string()));
    /// # Ok(()) }
    /// ```
    pub fn try_recv(&self) -> Result<Option<Message>, Error> {
        match self.take_ready()? {
            Some(msg) => Ok(Some(msg)),
            // Nothing ready: what this thread can read without waiting is read first (the
            // streams may be leased to application threads, which the I/O thread leaves
            // alone meanwhile), once.
            None if self.work_here() => self.take_ready(),
            None => Ok(None),
        }
    }

    /// Run this socket's work queued for the I/O thread and read its idle streams, here
    /// and without waiting; returns whether anything was done.
    fn work_here(&self) -> bool {
        let helped = self.shared.help(self.id);
        let read = self.shared.read_here(self.id);
        helped || read
    }

    /// The next message if one is ready: `try_recv`'s look, with no I/O.
    fn take_ready(&self) -> Result<Option<Message>, Error> {
        if let Some(msg) = self.recv_ready() {
            return Ok(Some(msg));
        }
        self.with(false, |s| match s.core.recv(|| self.shared.now()) {
            Some(m) => Ok(Some(m)),
            None if !s.core.socket_type().receives() => Err(Error::Unsupported),
            None if s.closed => Err(Error::Closed),
            None => Ok(None),
        })?
    }

    /// Whether a `send` would not block now (`ZMQ_POLLOUT`).
    ///
    /// ```
    /// use zmtp_mio::{Context, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// assert!(!push.can_send()); // no peer
    /// // With IMMEDIATE off (the default), a connection gets its queue at once.
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// push.connect(&pull.bind("tcp://127.0.0.1:*")?)?;
    /// assert!(push.can_send());
    /// # Ok(()) }
    /// ```
    pub fn can_send(&self) -> bool {
        self.with(false, |s| s.core.can_send()).unwrap_or(false)
    }

    /// Whether a message is ready for `recv` (`ZMQ_POLLIN`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{poll, Context, PollItem, SocketType, POLLIN};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// assert!(!pull.can_recv());
    ///
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("job")?;
    /// poll(&mut [PollItem::new(&pull, POLLIN)], Some(Duration::from_secs(5)))?;
    /// assert!(pull.can_recv());
    /// # Ok(()) }
    /// ```
    pub fn can_recv(&self) -> bool {
        !self.ready.is_empty() || self.with(false, |s| s.core.can_recv()).unwrap_or(false)
    }

    /// Close, waiting while it lingers (per LINGER) for queued messages to be written.
    /// Returns what LINGER cut off ([`CloseReport::delivered_all`] when nothing).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zmtp_mio::{Context, Options, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = ctx.socket(SocketType::Pull)?;
    /// pull.set_rcvtimeo(Some(Duration::from_secs(5)));
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let push = ctx.socket(SocketType::Push)?;
    /// push.connect(&endpoint)?;
    /// push.send("last words")?;
    /// // Waits until the message is written.
    /// assert!(push.close().delivered_all());
    /// assert_eq!(pull.recv_string()?, "last words");
    ///
    /// // With no peer and LINGER zero, what was queued is cut off, and reported.
    /// pull.unbind(&endpoint)?;
    /// let options = Options::default().with_linger(Some(Duration::ZERO));
    /// let lonely = ctx.socket_with(SocketType::Push, options)?;
    /// lonely.connect(&endpoint)?;
    /// lonely.send("lost")?;
    /// assert_eq!(lonely.close().unsent_messages, 1);
    /// # Ok(()) }
    /// ```
    pub fn close(self) -> CloseReport {
        let now = self.shared.now();
        let _ = self.with(true, |s| s.core.close(now));
        self.linger();
        // `drop` then forgets the socket.
        self.with(false, |s| s.core.close_report())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Wait until the socket has finished closing (or is gone).
    fn linger(&self) {
        loop {
            if self.shared.help(self.id) {
                continue;
            }
            if self.shared.wait_for(self.id, None, |s| s.closed) {
                break;
            }
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.close_shared();
    }
}

impl Socket {
    /// Close the socket as dropping it does, while this handle lives on (another thread
    /// may hold it, as the C library's per-thread cache does): what it queued is written
    /// in the background per LINGER, and calls through the handle fail as on a closed
    /// socket. Dropping the handle afterwards does nothing more.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zmtp_mio::{Context, Error, SocketType};
    ///
    /// # fn main() -> Result<(), zmtp_mio::Error> {
    /// let ctx = Context::new()?;
    /// let pull = Arc::new(ctx.socket(SocketType::Pull)?);
    /// let endpoint = pull.bind("tcp://127.0.0.1:*")?;
    /// let held = Arc::clone(&pull);
    /// pull.close_shared();
    /// assert!(matches!(held.try_recv(), Err(Error::Closed)));
    /// // Its address is free again.
    /// ctx.socket(SocketType::Pull)?.bind(&endpoint)?;
    /// # Ok(()) }
    /// ```
    pub fn close_shared(&self) {
        let now = self.shared.now();
        let was_closed = self.shared.with(self.id, true, |s| {
            let was_closed = s.closed;
            s.orphaned = true;
            s.core.close(now);
            was_closed
        });
        {
            // A socket that closed at once (nothing to linger for) is forgotten now.
            let mut st = self.shared.lock();
            if st.sockets.get(&self.id).is_some_and(|s| s.closed) {
                // Closed by this drop: what it cut off is the context's to report. A
                // context's end on another thread, which saw it orphaned a moment ago,
                // looks again (else it slept until its next look, two seconds on).
                if st.forget(self.id, was_closed == Some(false)) {
                    drop(st);
                    self.shared.wake_polled();
                }
            }
        }
        self.shared.let_go_of_listeners();
        if !self.shared.lock().sockets.contains_key(&self.id) {
            return;
        }
        // No context is left to wait for the linger at its end: this drop does.
        if self.shared.contexts.load(Ordering::SeqCst) == 0 {
            self.linger();
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
///
/// ```
/// use std::time::Duration;
/// use zmtp_mio::{poll, Context, PollItem, SocketType, POLLIN, POLLOUT};
///
/// # fn main() -> Result<(), zmtp_mio::Error> {
/// let ctx = Context::new()?;
/// let (jobs, control) = (ctx.socket(SocketType::Pull)?, ctx.socket(SocketType::Pull)?);
/// let control_endpoint = control.bind("tcp://127.0.0.1:*")?;
/// jobs.bind("tcp://127.0.0.1:*")?;
///
/// let mut items = [PollItem::new(&jobs, POLLIN), PollItem::new(&control, POLLIN)];
/// assert_eq!(poll(&mut items, Some(Duration::from_millis(10)))?, 0); // nothing yet
///
/// let boss = ctx.socket(SocketType::Push)?;
/// boss.connect(&control_endpoint)?;
/// let mut items = [PollItem::new(&boss, POLLOUT)];
/// assert_eq!(poll(&mut items, Some(Duration::ZERO))?, 1); // a queue to send to
/// boss.send("stop")?;
///
/// let mut items = [PollItem::new(&jobs, POLLIN), PollItem::new(&control, POLLIN)];
/// assert_eq!(poll(&mut items, Some(Duration::from_secs(5)))?, 1);
/// assert_eq!((items[0].revents, items[1].revents), (0, POLLIN));
/// assert_eq!(control.recv_string()?, "stop");
/// # Ok(()) }
/// ```
pub fn poll(items: &mut [PollItem<'_>], timeout: Option<Duration>) -> Result<usize, Error> {
    let deadline = timeout.map(|t| StdInstant::now() + t);
    let Some(first) = items.first().map(|item| item.socket) else {
        return Ok(0);
    };
    let one_context = items
        .iter()
        .all(|item| Arc::ptr_eq(&item.socket.shared, &first.shared));
    // Before it waits, the thread runs the sockets' queued work and reads their idle
    // streams itself, once per wait (see `Socket::recv`).
    let mut tried = false;
    let mut unleased = false;
    loop {
        if one_context {
            // Looked at and waited for under one lock: no change slips in between.
            let st = first.shared.lock();
            let ready = fill_revents(items, |id| {
                st.sockets
                    .get(&id)
                    .map_or((false, false), |s| (s.can_recv(), s.core.can_send()))
            });
            if ready > 0 {
                return Ok(ready);
            }
            // A socket closed under the wait ([`Context::term`]): nothing more will come.
            if (items.iter()).any(|i| st.sockets.get(&i.socket.id).is_none_or(|s| s.closed)) {
                return Err(Error::Closed);
            }
            if deadline.is_some_and(|d| StdInstant::now() >= d) {
                return Ok(0);
            }
            if !tried {
                drop(st);
                tried = true;
                work_here(items);
                continue;
            }
            tried = false;
            let ids = items.iter().map(|item| item.socket.id);
            first.shared.wait_polled(st, deadline, ids);
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
            if !tried {
                // Once per call: the wait here is sliced, not one per change.
                tried = true;
                if work_here(items) {
                    continue;
                }
            }
            if !unleased {
                // Input is the I/O threads' to notice meanwhile.
                unleased = true;
                for item in items.iter() {
                    item.socket.shared.unlease_socket(item.socket.id);
                }
            }
            let slice = StdInstant::now() + Duration::from_millis(1);
            let until = deadline.map_or(slice, |d| d.min(slice));
            first
                .shared
                .wait_polled(first.shared.lock(), Some(until), std::iter::empty());
        }
    }
}

/// Run the polled sockets' queued work, and read the idle streams of those polled for
/// [`POLLIN`], in this thread; returns whether anything was done.
fn work_here(items: &[PollItem<'_>]) -> bool {
    let mut done = false;
    for item in items {
        let (shared, id) = (&item.socket.shared, item.socket.id);
        done |= shared.help(id);
        if item.events & POLLIN != 0 {
            done |= shared.read_here(id);
        }
    }
    done
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
