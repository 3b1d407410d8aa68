//! A small blocking driver: [`zmtp_proto::Buffered`] over a [`TcpStream`] with real time.
//!
//! One call to [`Driver::step`] follows the crate's calling contract once: write everything
//! pending, wait for input at most until the connection's next deadline, feed what arrived,
//! fire expired timers, drain events and write again. The higher-level helpers
//! ([`Driver::wait_handshake`], [`Driver::recv_multipart`], [`Driver::pump_for`]) loop over
//! it with a deadline, so nothing blocks for longer than the caller asked.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::codec::{Version, GREETING_LEN};
use zmtp_proto::{Buffered, Config, Event, Instant, OwnedItem, SendError, SocketType};

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
    Send(SendError),
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

/// A blocking ZMTP connection over TCP, for tests.
#[derive(Debug)]
pub struct Driver {
    stream: TcpStream,
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
    failure: Option<DriverError>,
}

impl Driver {
    /// Connect to `addr` and start the handshake (our greeting goes out at once).
    pub fn connect(addr: SocketAddr, config: Config) -> Result<Driver, DriverError> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        Driver::from_stream(stream, config)
    }

    /// Accept one connection on `listener` within `timeout` and start the handshake.
    pub fn accept(
        listener: &TcpListener,
        config: Config,
        timeout: Duration,
    ) -> Result<Driver, DriverError> {
        let deadline = StdInstant::now() + timeout;
        listener.set_nonblocking(true)?;
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if StdInstant::now() >= deadline {
                        return Err(DriverError::Timeout("an incoming connection"));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        };
        stream.set_nonblocking(false)?;
        Driver::from_stream(stream, config)
    }

    /// Run a connection over an already connected stream.
    pub fn from_stream(stream: TcpStream, config: Config) -> Result<Driver, DriverError> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let start = StdInstant::now();
        let mut driver = Driver {
            stream,
            conn: Buffered::new(config, Instant::ZERO),
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
        if pending.is_empty() {
            return Ok(());
        }
        let n = pending.len();
        if let Err(e) = self.stream.write_all(pending) {
            return Err(self.fail(e.into()));
        }
        self.conn.advance(n);
        self.bytes_written += n;
        Ok(())
    }

    fn drain_events(&mut self) {
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
                // The event enum may grow; nothing else is counted here.
                _ => {}
            }
        }
    }

    /// Feed every complete item in the receive buffer to the queues.
    fn process_input(&mut self) -> Result<(), DriverError> {
        loop {
            let now = self.now();
            let polled = self.conn.poll_item(now);
            // Events are drained as they come so that counts line up with items.
            self.drain_events();
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
        self.drain_events();
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
