//! A small blocking driver: [`zmtp_proto::Buffered`] over a [`TcpStream`] or a
//! [`UnixStream`] with real time.
//!
//! One call to [`Driver::step`] follows the crate's calling contract once: write everything
//! pending, wait for input at most until the connection's next deadline, feed what arrived,
//! fire expired timers, drain events and write again. The higher-level helpers
//! ([`Driver::wait_handshake`], [`Driver::recv_multipart`], [`Driver::pump_for`]) loop over
//! it with a deadline, so nothing blocks for longer than the caller asked.
//!
//! Security: a connection for CURVE needs entropy ([`Driver::connect_with`],
//! [`Driver::accept_with`], ... take it; [`test_entropy`] makes some). A PLAIN or CURVE
//! server asks for a verdict on each peer ([`Event::AuthRequested`]): the driver records
//! every request ([`Driver::auth_requests`]) and answers it with the configured verdict
//! ([`Driver::set_verdict`], [`Driver::set_authenticator`]), or leaves it waiting for
//! [`Driver::answer_auth`] when none is configured.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant as StdInstant, SystemTime};

use zmtp_proto::codec::{Version, GREETING_LEN};
use zmtp_proto::mechanism::{AuthRequest, Credentials};
use zmtp_proto::{
    Buffered, Config, Connection, EncodeError, Event, Instant, OwnedItem, SocketType,
};

/// Longest a single blocking write may take before the driver gives up.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a single read waits, so that callers' deadlines are checked often.
const MAX_READ_WAIT: Duration = Duration::from_millis(5);
/// Size of one read from the stream.
const READ_CHUNK: usize = 64 * 1024;

/// Why the driver stopped. Fatal errors are sticky: later calls return them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// The socket failed.
    Io {
        /// The error kind.
        kind: io::ErrorKind,
        /// The error text.
        message: String,
    },
    /// The connection failed (fatal protocol error, handshake or heartbeat timeout).
    Protocol(zmtp_proto::Error),
    /// A frame could not be queued for sending.
    Send(EncodeError),
    /// The peer closed the stream.
    PeerClosed,
    /// The caller's deadline passed before the awaited thing happened (not sticky).
    Timeout(&'static str),
}

impl From<io::Error> for DriverError {
    fn from(e: io::Error) -> DriverError {
        DriverError::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Io { message, .. } => write!(f, "I/O error: {message}"),
            DriverError::Protocol(e) => write!(f, "connection failed: {e}"),
            DriverError::Send(e) => write!(f, "cannot send: {e}"),
            DriverError::PeerClosed => f.write_str("peer closed the connection"),
            DriverError::Timeout(what) => write!(f, "timed out waiting for {what}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// What [`Event::HandshakeSucceeded`] reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// The peer's socket type, if its READY named one.
    pub peer_socket_type: Option<SocketType>,
    /// The negotiated protocol version.
    pub version: Version,
}

/// 32 bytes of entropy for one connection's CURVE keys and nonces, derived from the clock,
/// the process id, a counter and std's randomly keyed hasher. Good enough to make every
/// test connection differ; not a cryptographic source (tests only).
pub fn test_entropy() -> [u8; 32] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let keys = std::collections::hash_map::RandomState::new();
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = keys.build_hasher();
        h.write_u128(nanos);
        h.write_u32(std::process::id());
        h.write_u64(n);
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

/// What a peer presented for authentication, as recorded by the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerCredentials {
    /// NULL: nothing.
    Null,
    /// PLAIN: user name and password.
    Plain {
        /// The user name.
        username: Vec<u8>,
        /// The password.
        password: Vec<u8>,
    },
    /// CURVE: the client's long-term public key.
    Curve {
        /// The key.
        public_key: zmtp_proto::PublicKey,
    },
    /// A kind of credentials this driver does not know.
    Other,
}

/// One authentication request our (server) connection raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRecord {
    /// The mechanism name (`"NULL"`, `"PLAIN"`, `"CURVE"`).
    pub mechanism: String,
    /// What the peer presented.
    pub credentials: PeerCredentials,
    /// The verdict the driver gave (`None` while the request waits for
    /// [`Driver::answer_auth`]).
    pub verdict: Option<u16>,
}

impl AuthRecord {
    fn of(request: &AuthRequest<'_>) -> AuthRecord {
        let credentials = match request.credentials {
            Credentials::Null => PeerCredentials::Null,
            Credentials::Plain { username, password } => PeerCredentials::Plain {
                username: username.to_vec(),
                password: password.to_vec(),
            },
            Credentials::Curve { public_key } => PeerCredentials::Curve { public_key },
            _ => PeerCredentials::Other,
        };
        AuthRecord {
            mechanism: String::from_utf8_lossy(request.mechanism.name()).into_owned(),
            credentials,
            verdict: None,
        }
    }
}

/// The verdict source for authentication requests.
struct Authenticator(Box<dyn FnMut(&AuthRequest<'_>) -> u16 + Send>);

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authenticator(..)")
    }
}

/// The byte stream under a driver.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// Accept one connection from a non-blocking-capable listener within `timeout`.
fn accept_within<S>(
    timeout: Duration,
    mut try_accept: impl FnMut() -> io::Result<S>,
) -> Result<S, DriverError> {
    let deadline = StdInstant::now() + timeout;
    loop {
        match try_accept() {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if StdInstant::now() >= deadline {
                    return Err(DriverError::Timeout("an incoming connection"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A blocking ZMTP connection over TCP or a Unix-domain stream, for tests.
#[derive(Debug)]
pub struct Driver {
    stream: Stream,
    conn: Buffered,
    start: StdInstant,
    scratch: Vec<u8>,
    /// Frames of the message being received.
    partial: Vec<Vec<u8>>,
    messages: VecDeque<Vec<Vec<u8>>>,
    commands: VecDeque<OwnedItem>,
    handshake: Option<Handshake>,
    pings_received: usize,
    pongs_received: usize,
    bytes_received: usize,
    bytes_written: usize,
    defer_ready: bool,
    authenticator: Option<Authenticator>,
    auth_requests: Vec<AuthRecord>,
    /// Every byte received, when recording ([`Driver::record_input`]).
    input_log: Option<Vec<u8>>,
    /// Every byte written, when recording ([`Driver::record_output`]).
    output_log: Option<Vec<u8>>,
    failure: Option<DriverError>,
}

impl Driver {
    /// Connect to `addr` and start the handshake (our greeting goes out at once).
    pub fn connect(addr: SocketAddr, config: Config) -> Result<Driver, DriverError> {
        Driver::connect_with(addr, config, None)
    }

    /// Like [`connect`](Self::connect), building the connection with `entropy` (which
    /// CURVE needs) when given.
    pub fn connect_with(
        addr: SocketAddr,
        config: Config,
        entropy: Option<[u8; 32]>,
    ) -> Result<Driver, DriverError> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_nodelay(true)?;
        Driver::start(Stream::Tcp(stream), config, entropy)
    }

    /// Accept one connection on `listener` within `timeout` and start the handshake.
    pub fn accept(
        listener: &TcpListener,
        config: Config,
        timeout: Duration,
    ) -> Result<Driver, DriverError> {
        Driver::accept_with(listener, config, timeout, None)
    }

    /// Like [`accept`](Self::accept), building the connection with `entropy` when given.
    pub fn accept_with(
        listener: &TcpListener,
        config: Config,
        timeout: Duration,
        entropy: Option<[u8; 32]>,
    ) -> Result<Driver, DriverError> {
        listener.set_nonblocking(true)?;
        let (stream, _) = accept_within(timeout, || listener.accept())?;
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        Driver::start(Stream::Tcp(stream), config, entropy)
    }

    /// Connect to the Unix-domain socket at `path` (libzmq's `ipc://path`) and start the
    /// handshake, with `entropy` when given.
    pub fn connect_unix(
        path: &Path,
        config: Config,
        entropy: Option<[u8; 32]>,
    ) -> Result<Driver, DriverError> {
        let stream = UnixStream::connect(path)?;
        Driver::start(Stream::Unix(stream), config, entropy)
    }

    /// Accept one connection on the Unix-domain `listener` within `timeout` and start the
    /// handshake, with `entropy` when given.
    pub fn accept_unix(
        listener: &UnixListener,
        config: Config,
        timeout: Duration,
        entropy: Option<[u8; 32]>,
    ) -> Result<Driver, DriverError> {
        listener.set_nonblocking(true)?;
        let (stream, _) = accept_within(timeout, || listener.accept())?;
        stream.set_nonblocking(false)?;
        Driver::start(Stream::Unix(stream), config, entropy)
    }

    /// Run a connection over an already connected stream.
    pub fn from_stream(stream: TcpStream, config: Config) -> Result<Driver, DriverError> {
        stream.set_nodelay(true)?;
        Driver::start(Stream::Tcp(stream), config, None)
    }

    fn start(
        stream: Stream,
        config: Config,
        entropy: Option<[u8; 32]>,
    ) -> Result<Driver, DriverError> {
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let start = StdInstant::now();
        let conn = match entropy {
            Some(entropy) => Connection::with_entropy(config, Instant::ZERO, entropy),
            None => Connection::new(config, Instant::ZERO),
        };
        let mut driver = Driver {
            stream,
            conn: Buffered::wrap(conn),
            start,
            scratch: vec![0; READ_CHUNK],
            partial: Vec::new(),
            messages: VecDeque::new(),
            commands: VecDeque::new(),
            handshake: None,
            pings_received: 0,
            pongs_received: 0,
            bytes_received: 0,
            bytes_written: 0,
            defer_ready: false,
            authenticator: None,
            auth_requests: Vec::new(),
            input_log: None,
            output_log: None,
            failure: None,
        };
        driver.flush()?;
        Ok(driver)
    }

    /// The connection's clock: real time since the driver started.
    fn now(&self) -> Instant {
        let micros = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        Instant::from_micros(micros)
    }

    /// The underlying connection (version, peer identity, sticky error...).
    pub fn connection(&self) -> &zmtp_proto::Connection {
        self.conn.connection()
    }

    /// The handshake result, once it succeeded.
    pub fn handshake(&self) -> Option<Handshake> {
        self.handshake
    }

    /// PINGs received from the peer so far (the connection queues a PONG for them).
    pub fn pings_received(&self) -> usize {
        self.pings_received
    }

    /// PONGs received from the peer so far (answers to our PINGs).
    pub fn pongs_received(&self) -> usize {
        self.pongs_received
    }

    /// Bytes read from the stream so far.
    pub fn bytes_received(&self) -> usize {
        self.bytes_received
    }

    /// Hold back everything after our 64-byte greeting (that is, our READY) until the
    /// peer's READY has arrived. Call it right after opening the connection.
    ///
    /// A test instrument: it makes the order of the two READY commands deterministic
    /// against a peer that sends its READY eagerly (libzmq does), and would deadlock
    /// against a peer that waits for ours first.
    pub fn defer_ready(&mut self) {
        self.defer_ready = true;
    }

    /// Keep a copy of every byte received from now on (see
    /// [`recorded_input`](Self::recorded_input)). Call it right after opening the connection
    /// to see the peer's greeting and handshake commands as they were on the wire.
    pub fn record_input(&mut self) {
        self.input_log.get_or_insert_with(Vec::new);
    }

    /// The bytes received since [`record_input`](Self::record_input) (empty if not recording).
    pub fn recorded_input(&self) -> &[u8] {
        self.input_log.as_deref().unwrap_or_default()
    }

    /// Keep a copy of every byte written from now on (see
    /// [`recorded_output`](Self::recorded_output)).
    pub fn record_output(&mut self) {
        self.output_log.get_or_insert_with(Vec::new);
    }

    /// The bytes written since [`record_output`](Self::record_output) (empty if not
    /// recording).
    pub fn recorded_output(&self) -> &[u8] {
        self.output_log.as_deref().unwrap_or_default()
    }

    /// Answer every authentication request with ZAP status `status` (200 accepts; 300
    /// closes silently; 400 and 500 send ERROR, then close).
    pub fn set_verdict(&mut self, status: u16) {
        self.set_authenticator(move |_| status);
    }

    /// Answer each authentication request with the status `verdict` returns for it.
    pub fn set_authenticator(
        &mut self,
        verdict: impl FnMut(&AuthRequest<'_>) -> u16 + Send + 'static,
    ) {
        self.authenticator = Some(Authenticator(Box::new(verdict)));
    }

    /// Every authentication request our connection raised, oldest first, with the verdict
    /// given.
    pub fn auth_requests(&self) -> &[AuthRecord] {
        &self.auth_requests
    }

    /// Answer the waiting authentication request with `status` and write what follows
    /// (WELCOME, ERROR...). For drivers without a configured verdict.
    pub fn answer_auth(&mut self, status: u16) -> Result<(), DriverError> {
        self.check()?;
        self.give_verdict(status)?;
        self.flush()
    }

    /// Pump until our connection raises an authentication request, at most `timeout`.
    pub fn wait_auth_request(&mut self, timeout: Duration) -> Result<AuthRecord, DriverError> {
        self.step_until(timeout, "an authentication request", |d| {
            !d.auth_requests.is_empty()
        })?;
        Ok(self.auth_requests[0].clone())
    }

    fn give_verdict(&mut self, status: u16) -> Result<(), DriverError> {
        let now = self.now();
        if let Some(last) = self.auth_requests.last_mut() {
            last.verdict = Some(status);
        }
        match self.conn.connection_mut().handle_auth(now, status) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(DriverError::Protocol(e))),
        }
    }

    /// Record the request just raised and answer it if a verdict is configured.
    fn on_auth_requested(&mut self) -> Result<(), DriverError> {
        let Some(request) = self.conn.connection().auth_request() else {
            return Ok(());
        };
        self.auth_requests.push(AuthRecord::of(&request));
        let verdict = self.authenticator.as_mut().map(|a| (a.0)(&request));
        match verdict {
            Some(status) => self.give_verdict(status),
            None => Ok(()),
        }
    }

    /// The fatal error that stopped the driver, if any.
    pub fn failure(&self) -> Option<&DriverError> {
        self.failure.as_ref()
    }

    /// Record a fatal error and return it.
    fn fail(&mut self, e: DriverError) -> DriverError {
        if self.failure.is_none() {
            self.failure = Some(e.clone());
        }
        e
    }

    fn check(&self) -> Result<(), DriverError> {
        match &self.failure {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Write every pending byte (control frames first, then whatever was queued), except
    /// what [`defer_ready`](Self::defer_ready) holds back.
    fn flush(&mut self) -> Result<(), DriverError> {
        self.conn.poll_transmit();
        let mut pending = self.conn.transmit();
        if self.defer_ready && self.handshake.is_none() {
            let allowed = GREETING_LEN.saturating_sub(self.bytes_written);
            pending = &pending[..pending.len().min(allowed)];
        }
        if !pending.is_empty() {
            let n = pending.len();
            if let Err(e) = self.stream.write_all(pending) {
                return Err(self.fail(e.into()));
            }
            if let Some(log) = &mut self.output_log {
                log.extend_from_slice(pending);
            }
            self.conn.advance(n);
            self.bytes_written += n;
        }
        // An error that ends the connection once its farewell is out (our ERROR after a
        // refusal) shows only here.
        if let Some(e) = self.conn.connection().error() {
            let e = e.clone();
            return Err(self.fail(DriverError::Protocol(e)));
        }
        Ok(())
    }

    fn drain_events(&mut self) -> Result<(), DriverError> {
        while let Some(event) = self.conn.connection_mut().poll_event() {
            match event {
                Event::HandshakeSucceeded {
                    peer_socket_type,
                    version,
                } => {
                    self.handshake = Some(Handshake {
                        peer_socket_type,
                        version,
                    })
                }
                Event::PingReceived => self.pings_received += 1,
                Event::PongReceived => self.pongs_received += 1,
                Event::AuthRequested => self.on_auth_requested()?,
                // The event enum may grow; nothing else is counted here.
                _ => {}
            }
        }
        Ok(())
    }

    /// Feed every complete item in the receive buffer to the queues.
    fn process_input(&mut self) -> Result<(), DriverError> {
        loop {
            let now = self.now();
            let polled = self.conn.poll_item(now);
            // Events are drained as they come so that counts line up with items.
            self.drain_events()?;
            let item = match polled {
                Ok(Some(item)) => item,
                Ok(None) => break,
                Err(e) => return Err(self.fail(DriverError::Protocol(e))),
            };
            match item {
                OwnedItem::Frame { body, more } => {
                    self.partial.push(body.to_vec());
                    if !more {
                        self.messages.push_back(std::mem::take(&mut self.partial));
                    }
                }
                OwnedItem::Ready(_) => {}
                other => self.commands.push_back(other),
            }
        }
        Ok(())
    }

    /// One round of the calling contract, waiting at most `max_wait` for input.
    pub fn step(&mut self, max_wait: Duration) -> Result<(), DriverError> {
        self.check()?;
        self.flush()?;

        let mut wait = max_wait.min(MAX_READ_WAIT);
        if let Some(deadline) = self.conn.connection().poll_timeout() {
            wait = wait.min(deadline.saturating_duration_since(self.now()));
        }
        // A zero read timeout is rejected by the OS API; 1 ms is the shortest wait.
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
        match self.stream.read(&mut self.scratch) {
            Ok(0) => return Err(self.fail(DriverError::PeerClosed)),
            Ok(n) => {
                self.bytes_received += n;
                if let Some(log) = &mut self.input_log {
                    log.extend_from_slice(&self.scratch[..n]);
                }
                self.conn.receive(&self.scratch[..n]);
                self.process_input()?;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(self.fail(e.into())),
        }

        // Timers fire only after the input that was available has been processed, so a
        // late wake-up never mistakes a PONG waiting in the socket for a missing one.
        let now = self.now();
        if self
            .conn
            .connection()
            .poll_timeout()
            .is_some_and(|t| t <= now)
        {
            if let Err(e) = self.conn.connection_mut().handle_timeout(now) {
                return Err(self.fail(DriverError::Protocol(e)));
            }
        }
        self.drain_events()?;
        self.flush()
    }

    /// Step until `done` holds or `timeout` passes (then [`DriverError::Timeout`] naming `what`).
    fn step_until(
        &mut self,
        timeout: Duration,
        what: &'static str,
        mut done: impl FnMut(&mut Driver) -> bool,
    ) -> Result<(), DriverError> {
        let deadline = StdInstant::now() + timeout;
        loop {
            if done(self) {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(StdInstant::now());
            if left.is_zero() {
                return Err(DriverError::Timeout(what));
            }
            self.step(left)?;
        }
    }

    /// Pump until the handshake succeeds; returns what it negotiated.
    pub fn wait_handshake(&mut self, timeout: Duration) -> Result<Handshake, DriverError> {
        self.step_until(timeout, "the handshake", |d| d.handshake.is_some())?;
        // `step_until` returned because the handshake is recorded.
        Ok(self.handshake.expect("handshake recorded"))
    }

    /// Pump for `duration`, answering PINGs and sending our own, queueing what arrives.
    pub fn pump_for(&mut self, duration: Duration) -> Result<(), DriverError> {
        let deadline = StdInstant::now() + duration;
        loop {
            let left = deadline.saturating_duration_since(StdInstant::now());
            if left.is_zero() {
                return Ok(());
            }
            self.step(left)?;
        }
    }

    /// Queue and write one message made of `frames` (at least one).
    ///
    /// # Panics
    /// If `frames` is empty.
    pub fn send_multipart(&mut self, frames: &[&[u8]]) -> Result<(), DriverError> {
        assert!(!frames.is_empty(), "a message has at least one frame");
        self.check()?;
        for (i, frame) in frames.iter().enumerate() {
            let more = i + 1 < frames.len();
            if let Err(e) = self.conn.send_frame(frame, more) {
                return Err(DriverError::Send(e));
            }
        }
        self.flush()
    }

    /// Subscribe the peer's PUB to `topic` (a SUBSCRIBE command over 3.1, a `0x01` message
    /// over 3.0) and write it.
    pub fn subscribe(&mut self, topic: &[u8]) -> Result<(), DriverError> {
        self.check()?;
        if let Err(e) = self.conn.send_subscribe(topic) {
            return Err(DriverError::Send(e));
        }
        self.flush()
    }

    /// Cancel a subscription of the peer's PUB (a CANCEL command over 3.1, a `0x00` message
    /// over 3.0) and write it.
    pub fn cancel(&mut self, topic: &[u8]) -> Result<(), DriverError> {
        self.check()?;
        if let Err(e) = self.conn.send_cancel(topic) {
            return Err(DriverError::Send(e));
        }
        self.flush()
    }

    /// A complete received message, if one is queued (no I/O).
    pub fn try_recv_multipart(&mut self) -> Option<Vec<Vec<u8>>> {
        self.messages.pop_front()
    }

    /// Pump until a complete message arrives, at most `timeout`.
    pub fn recv_multipart(&mut self, timeout: Duration) -> Result<Vec<Vec<u8>>, DriverError> {
        if let Some(m) = self.messages.pop_front() {
            return Ok(m);
        }
        self.step_until(timeout, "a message", |d| !d.messages.is_empty())?;
        Ok(self.messages.pop_front().expect("message queued"))
    }

    /// A received subscription-type command (Subscribe, Cancel, Join, Leave), if one is
    /// queued (no I/O).
    pub fn try_recv_command(&mut self) -> Option<OwnedItem> {
        self.commands.pop_front()
    }

    /// Pump until a subscription-type command arrives, at most `timeout`.
    pub fn recv_command(&mut self, timeout: Duration) -> Result<OwnedItem, DriverError> {
        if let Some(c) = self.commands.pop_front() {
            return Ok(c);
        }
        self.step_until(timeout, "a subscription", |d| !d.commands.is_empty())?;
        Ok(self.commands.pop_front().expect("command queued"))
    }
}
