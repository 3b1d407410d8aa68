//! In-memory pair harness with virtual time: two connections, no sockets.
//!
//! A [`Pair`] joins two [`Connection`]s (each in a [`Buffered`]) with nothing between them
//! but byte vectors: [`Pair::drive`] moves bytes both ways until both ends are idle,
//! [`Pair::step`] then jumps the clock to the earliest timer and fires it. [`raw`] drives a
//! bare connection by hand and checks its calling contract on every call.

pub mod raw;

use std::time::Duration;

use zmtp_proto::{Buffered, Config, Connection, Error, Event, Instant, Item, OwnedItem};

/// One end: a buffered connection plus what it has seen.
pub struct End {
    /// The connection with its buffers.
    pub buf: Buffered,
    /// Every item received, in order.
    pub items: Vec<OwnedItem>,
    /// Every event of the connection, in order.
    pub events: Vec<Event>,
    /// The first error the connection reported.
    pub error: Option<Error>,
    /// When false, bytes this end transmits are dropped (a silent peer).
    pub talks: bool,
}

impl End {
    fn new(config: Config, now: Instant) -> End {
        End {
            buf: Buffered::new(config, now),
            items: Vec::new(),
            events: Vec::new(),
            error: None,
            talks: true,
        }
    }

    /// An end around a connection made elsewhere (for example with
    /// [`Connection::with_entropy`]).
    pub fn wrap(conn: Connection) -> End {
        End {
            buf: Buffered::wrap(conn),
            items: Vec::new(),
            events: Vec::new(),
            error: None,
            talks: true,
        }
    }

    /// Process what was received and take what this end transmits (empty when silent or
    /// failed), without delivering it anywhere.
    pub fn pump(&mut self, now: Instant) -> Vec<u8> {
        self.process(now);
        self.take_output()
    }

    /// Hand `bytes` to this end as if they arrived from its peer, and process them.
    pub fn feed(&mut self, now: Instant, bytes: &[u8]) {
        self.buf.receive(bytes);
        self.process(now);
    }

    /// Complete messages received so far (frames grouped by the MORE flag).
    pub fn messages(&self) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let mut cur = Vec::new();
        for item in &self.items {
            if let OwnedItem::Frame { body, more } = item {
                cur.push(body.to_vec());
                if !more {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
        out
    }

    /// Whether the handshake has completed.
    pub fn established(&self) -> bool {
        self.buf.connection().is_established()
    }

    fn record(&mut self, r: Result<(), Error>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Process everything received; queue control output.
    fn process(&mut self, now: Instant) {
        loop {
            match self.buf.poll_item(now) {
                Ok(Some(item)) => self.items.push(item),
                Ok(None) => break,
                Err(e) => {
                    self.error.get_or_insert(e);
                    break;
                }
            }
        }
        self.buf.poll_transmit();
        while let Some(e) = self.buf.connection_mut().poll_event() {
            self.events.push(e);
        }
    }

    /// Take what this end wants to send (empty when silent).
    fn take_output(&mut self) -> Vec<u8> {
        let out = self.buf.transmit().to_vec();
        self.buf.advance(out.len());
        if self.talks && self.error.is_none() {
            out
        } else {
            Vec::new()
        }
    }

    /// Send a message, one frame per element (panics unless the connection is established).
    pub fn send(&mut self, frames: &[&[u8]]) {
        for (i, f) in frames.iter().enumerate() {
            self.buf
                .send_frame(f, i + 1 < frames.len())
                .expect("send on established connection");
        }
    }
}

/// Which way bytes travel between the two ends of a [`Pair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From `a` to `b`.
    AtoB,
    /// From `b` to `a`.
    BtoA,
}

/// Two connected ends and a virtual clock.
pub struct Pair {
    /// One end.
    pub a: End,
    /// The other end.
    pub b: End,
    /// The virtual clock.
    pub now: Instant,
}

impl Pair {
    /// The virtual time at which a pair starts.
    pub const START: Instant = crate::START;

    /// Two new connections with these configurations, at [`Pair::START`].
    pub fn new(a: Config, b: Config) -> Pair {
        let now = Pair::START;
        Pair {
            a: End::new(a, now),
            b: End::new(b, now),
            now,
        }
    }

    /// A pair of connections made elsewhere, at [`Pair::START`] (for example with
    /// [`Connection::with_entropy`]).
    pub fn from_connections(a: Connection, b: Connection) -> Pair {
        Pair {
            a: End::wrap(a),
            b: End::wrap(b),
            now: Pair::START,
        }
    }

    /// Move bytes both ways and process them. Returns whether any byte moved.
    fn exchange(&mut self) -> bool {
        self.exchange_tapped(&mut |_, _| {})
    }

    /// [`exchange`](Self::exchange), with `tap` seeing (and free to change) the bytes of
    /// each direction in flight.
    fn exchange_tapped(&mut self, tap: &mut dyn FnMut(Dir, &mut Vec<u8>)) -> bool {
        let now = self.now;
        self.a.process(now);
        self.b.process(now);
        let mut to_b = self.a.take_output();
        let mut to_a = self.b.take_output();
        tap(Dir::AtoB, &mut to_b);
        tap(Dir::BtoA, &mut to_a);
        self.a.buf.receive(&to_a);
        self.b.buf.receive(&to_b);
        self.a.process(now);
        self.b.process(now);
        !(to_a.is_empty() && to_b.is_empty())
    }

    /// Deliver bytes until both ends are idle, without advancing time.
    pub fn drive(&mut self) {
        for _ in 0..10_000 {
            if !self.exchange() {
                return;
            }
        }
        panic!("pair never went idle");
    }

    /// [`drive`](Self::drive), with `tap` seeing (and free to change) the bytes of each
    /// direction in flight, in order. Stops when nothing moves after the tap.
    pub fn drive_tapped(&mut self, mut tap: impl FnMut(Dir, &mut Vec<u8>)) {
        for _ in 0..10_000 {
            if !self.exchange_tapped(&mut tap) {
                return;
            }
        }
        panic!("pair never went idle");
    }

    /// The earliest timer of either end.
    fn next_timeout(&self) -> Option<Instant> {
        [&self.a, &self.b]
            .iter()
            .filter(|e| e.error.is_none())
            .filter_map(|e| e.buf.connection().poll_timeout())
            .min()
    }

    /// Drive, then jump to the next timer and fire it; false when no timer is armed.
    pub fn step(&mut self) -> bool {
        self.drive();
        let Some(t) = self.next_timeout() else {
            return false;
        };
        self.now = self.now.max(t);
        let now = self.now;
        for end in [&mut self.a, &mut self.b] {
            if end.error.is_none() {
                let r = end.buf.connection_mut().handle_timeout(now);
                end.record(r);
            }
        }
        self.drive();
        true
    }

    /// Run timers until `duration` of virtual time has passed (or nothing is armed).
    pub fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        while self.now < end {
            match self.next_timeout() {
                Some(t) if t <= end => {
                    self.step();
                }
                _ => {
                    self.now = end;
                    self.drive();
                }
            }
        }
    }
}

/// An item as (kind, payload), for comparing streams of items.
pub fn describe(item: &Item<'_>) -> (String, Vec<u8>) {
    let kind = match item {
        Item::Ready(_) => "ready",
        Item::Frame { more: true, .. } => "frame+",
        Item::Frame { more: false, .. } => "frame",
        Item::Subscribe(_) => "sub",
        Item::Cancel(_) => "cancel",
        Item::Join(_) => "join",
        Item::Leave(_) => "leave",
    };
    (kind.to_string(), item.payload().to_vec())
}
