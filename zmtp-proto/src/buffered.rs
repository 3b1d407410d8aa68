//! An owning convenience layer: a [`Connection`] with its receive and send buffers.
//!
//! It adds no protocol logic: it only keeps the buffers and turns borrowed [`Item`]s into
//! owned [`Bytes`] that share the receive buffer's allocation (no copy of frame bodies).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

use bytes::{Buf, Bytes, BytesMut};

use crate::codec::{Command, FrameHeader, MAX_FRAME_HEADER_LEN};
use crate::config::Config;
use crate::connection::{Connection, Item};
use crate::error::{EncodeError, Error};
use crate::socks::SocksClient;
use crate::time::Instant;
use crate::ws::{HandshakeError, WsSide, Zws};

/// An owned [`Item`]: payloads are slices of the receive buffer, not copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedItem {
    /// The peer's metadata (encoded properties); see [`Item::Ready`].
    Ready(Bytes),
    /// One frame of a message.
    Frame {
        /// The frame body.
        body: Bytes,
        /// More frames of this message follow.
        more: bool,
    },
    /// A subscription.
    Subscribe(Bytes),
    /// A cancelled subscription.
    Cancel(Bytes),
    /// A JOIN command.
    Join(Bytes),
    /// A LEAVE command.
    Leave(Bytes),
}

/// Which owned item a payload makes (a plain value: building the item inline is cheaper
/// than through a function pointer, on the path every received frame takes).
#[derive(Clone, Copy)]
enum OwnedKind {
    Ready,
    Frame { more: bool },
    Subscribe,
    Cancel,
    Join,
    Leave,
}

impl OwnedKind {
    fn of(item: &Item<'_>) -> OwnedKind {
        match item {
            Item::Ready(_) => OwnedKind::Ready,
            Item::Frame { more, .. } => OwnedKind::Frame { more: *more },
            Item::Subscribe(_) => OwnedKind::Subscribe,
            Item::Cancel(_) => OwnedKind::Cancel,
            Item::Join(_) => OwnedKind::Join,
            Item::Leave(_) => OwnedKind::Leave,
        }
    }

    #[inline]
    fn make(self, payload: Bytes) -> OwnedItem {
        match self {
            OwnedKind::Ready => OwnedItem::Ready(payload),
            OwnedKind::Frame { more } => OwnedItem::Frame {
                body: payload,
                more,
            },
            OwnedKind::Subscribe => OwnedItem::Subscribe(payload),
            OwnedKind::Cancel => OwnedItem::Cancel(payload),
            OwnedKind::Join => OwnedItem::Join(payload),
            OwnedKind::Leave => OwnedItem::Leave(payload),
        }
    }
}

/// A [`Connection`] together with the buffers a driver needs.
///
/// Output is a queue of segments: encoded bytes, and frame bodies of at least
/// [`SHARED_BODY_MIN`] bytes queued as they are (a reference, not a copy) for a vectored
/// write. A driver writes [`transmit`](Self::transmit) (the first segment) or gathers them
/// all with [`transmit_chunks`](Self::transmit_chunks), then calls
/// [`advance`](Self::advance) with what was written.
#[derive(Debug)]
pub struct Buffered {
    conn: Connection,
    rx: BytesMut,
    /// The size of the allocation `rx` was made with by [`RxPool::grow`] (0 when made
    /// otherwise): whether it may go to a pool when replaced.
    rx_alloc: usize,
    /// Bytes the next item needs beyond those in `rx` (as the last `poll_item` found).
    rx_need: usize,
    /// The last item taken from `rx` was a frame of [`BULK_FRAME`] to [`BULK_FRAME_MAX`]
    /// bytes.
    rx_bulk: bool,
    tx: VecDeque<Segment>,
    /// Bytes of the first segment already written.
    tx_head: usize,
    /// Unwritten bytes over all segments.
    tx_len: usize,
    /// An emptied encode buffer kept for reuse.
    spare: Vec<u8>,
    /// The ZWS layer of a `ws://` stream: `rx` and the connection's output are then ZMTP
    /// translated from and to WebSocket bytes (see [`Buffered::wrap_ws`]).
    ws: Option<Box<Zws>>,
    /// A raw stream (STREAM sockets): no greeting, no framing; input is taken as it came
    /// ([`take_raw`](Self::take_raw)) and output is written as it is
    /// ([`send_raw`](Self::send_raw)). The connection never speaks.
    raw: bool,
    /// A connecting stream opened to a SOCKS5 proxy: the exchange with the proxy runs
    /// first (see [`Buffered::wrap_socks`]); while it does, the connection says nothing.
    socks: Option<Box<SocksClient>>,
}

#[derive(Debug)]
enum Segment {
    /// Encoded frames, appended to while last: the first `used` bytes of `buf`. The rest
    /// of `buf` is initialized scratch, reused without clearing it again.
    Encoded { buf: Vec<u8>, used: usize },
    /// A frame body shared with the application.
    Body(Bytes),
}

impl Segment {
    fn bytes(&self) -> &[u8] {
        match self {
            Segment::Encoded { buf, used } => buf.get(..*used).unwrap_or_default(),
            Segment::Body(b) => b,
        }
    }
}

/// Frame bodies at least this long are queued by reference rather than copied.
pub const SHARED_BODY_MIN: usize = 16 * 1024;

/// Written bytes at the front of the send buffer that trigger compaction.
const COMPACT_AT: usize = 64 * 1024;
/// Room beyond the expected size for control frames queued ahead (PONG, PING).
const ROOM_SLACK: usize = 64;

/// Initial receive buffer size, and the least it grows by.
const RX_CHUNK: usize = 8 * 1024;
/// Room for the next read below which `read_buf` grows (or reclaims) the receive buffer.
const RX_MIN_ROOM: usize = RX_CHUNK / 2;
/// Most the receive buffer grows by ahead of data for one incomplete frame.
const MAX_RESERVE: usize = 256 * 1024;

/// Frames at least this long (and at most [`BULK_FRAME_MAX`]) are read into a buffer that
/// ends where they end, and the read after one is a short one, for the next frame's
/// header: a large frame that follows then starts near the front of a buffer of its own,
/// instead of being read partly into the end of this one and copied out of it when it has
/// to grow (up to a whole frame copied per frame: a tenth of a bulk receiver's CPU, 256 KiB
/// frames on loopback).
const BULK_FRAME: usize = 64 * 1024;
/// Larger frames arrive over several reads into a buffer that grows (see [`MAX_RESERVE`])
/// and are left to it: a short read after each cost 1 MiB messages on tokio half as much
/// CPU again (a median 934 CPU-s per million messages against 629).
const BULK_FRAME_MAX: usize = 2 * MAX_RESERVE;

/// Receive buffers that still hold pooled allocations at most this large.
const POOL_BUF_MAX: usize = 1 << 20;
/// Receive buffers a pool keeps.
const POOL_LEN: usize = 8;

/// Receive buffers given up while frames split off them were still held by the
/// application, kept so that a connection needing a new buffer can take one whose frames
/// have all been dropped since, instead of allocating.
///
/// A fresh allocation is not free: an allocator that returned the memory of the last one
/// to the system hands out pages that fault on their first write, which made a bulk
/// receiver spend twice the system time in some runs. One pool serves all the connections
/// of a socket ([`Socket`](crate::socket::Socket) keeps one); it holds at most 8 buffers
/// of at most 1 MiB each.
#[derive(Debug, Default)]
pub struct RxPool {
    /// Buffers (empty, sharing an allocation with frames given out) and their
    /// allocation's size, oldest first.
    kept: Vec<(BytesMut, usize)>,
}

impl RxPool {
    /// Make `more` bytes of room at the end of `rx` (whose allocation `alloc` says, as
    /// `Buffered::rx_alloc`): in place if no frame still shares it; else in a kept
    /// buffer nothing shares any more; else in a new one. A buffer replaced while shared
    /// is kept (the oldest kept one goes when the pool is full).
    fn grow(&mut self, rx: &mut BytesMut, alloc: &mut usize, more: usize) {
        if rx.try_reclaim(more) {
            return;
        }
        let len = rx.len();
        let reuse = self
            .kept
            .iter_mut()
            .position(|(b, size)| *size >= len + more && b.try_reclaim(len + more));
        let (mut next, size) = match reuse {
            Some(i) => self.kept.remove(i),
            None => {
                // Doubling, for a frame that arrives in many reads.
                let size = (len + more).max(2 * len);
                (BytesMut::with_capacity(size), size)
            }
        };
        next.extend_from_slice(rx);
        let mut old = core::mem::replace(rx, next);
        let old_alloc = core::mem::replace(alloc, size);
        if old_alloc > 0 && old_alloc <= POOL_BUF_MAX {
            old.clear();
            if self.kept.len() == POOL_LEN {
                self.kept.remove(0);
            }
            self.kept.push((old, old_alloc));
        }
    }
}

impl Buffered {
    /// A new connection; see [`Connection::new`].
    pub fn new(config: Config, now: Instant) -> Buffered {
        Buffered::wrap(Connection::new(config, now))
    }

    /// Buffers around a connection made elsewhere (for example with
    /// [`Connection::with_entropy`]).
    pub fn wrap(conn: Connection) -> Buffered {
        Buffered {
            conn,
            rx: BytesMut::with_capacity(RX_CHUNK),
            rx_alloc: 0,
            rx_need: 0,
            rx_bulk: false,
            tx: VecDeque::new(),
            tx_head: 0,
            tx_len: 0,
            spare: Vec::new(),
            ws: None,
            raw: false,
            socks: None,
        }
    }

    /// Buffers around a connection whose stream was opened to a SOCKS5 proxy: our
    /// greeting to the proxy is queued at once, and the proxy's answers are taken from the
    /// input (answered in turn) until it has connected the stream to the endpoint; only
    /// then does the connection start (its greeting is written, the input after the
    /// proxy's last answer is the peer's). A refusal fails the stream with
    /// [`Error::Socks`].
    /// Whether the stream is still in its SOCKS5 exchange (the proxy has not connected it).
    pub(crate) fn in_socks(&self) -> bool {
        self.socks.is_some()
    }

    pub(crate) fn wrap_socks(conn: Connection, client: SocksClient) -> Buffered {
        let mut b = Buffered::wrap(conn);
        let hello = client.greeting();
        b.append_tx(hello.len(), &mut |dst| dst.copy_from_slice(&hello));
        b.socks = Some(Box::new(client));
        b
    }

    /// Run the exchange with the proxy on the input so far; `Ok(true)` once it is over
    /// (or there was none). Cold, as the ZWS branches are.
    #[cold]
    #[inline(never)]
    fn pump_socks(&mut self) -> Result<bool, Error> {
        let Some(mut socks) = self.socks.take() else {
            return Ok(true);
        };
        let mut rx = core::mem::take(&mut self.rx);
        let r = socks.pump(&mut rx, |bytes| {
            self.append_tx(bytes.len(), &mut |dst| dst.copy_from_slice(bytes))
        });
        self.rx = rx;
        match r {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.socks = Some(socks);
                Ok(false)
            }
            Err(e) => Err(Error::Socks(e)),
        }
    }

    /// Buffers for a raw stream (STREAM sockets): no ZMTP at all. The connection is kept
    /// for its configuration only: it sends nothing ([`poll_transmit`](Self::poll_transmit)
    /// adds nothing), and input is taken with [`take_raw`](Self::take_raw), not parsed.
    pub fn wrap_raw(conn: Connection) -> Buffered {
        let mut b = Buffered::wrap(conn);
        b.raw = true;
        b
    }

    /// Whether the stream is raw ([`wrap_raw`](Self::wrap_raw)).
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// A raw stream's input: every byte received and not yet taken, as one chunk (shared
    /// with the receive buffer, not copied); `None` when nothing is buffered. Its size is
    /// bounded by what the driver read (the receive buffer's room).
    pub fn take_raw(&mut self) -> Option<Bytes> {
        if self.rx.is_empty() {
            return None;
        }
        Some(self.rx.split().freeze())
    }

    /// Append bytes to a raw stream's output as they are: a large body is queued by
    /// reference (no copy), a small one copied.
    pub fn send_raw(&mut self, data: &Bytes) {
        if data.len() >= SHARED_BODY_MIN {
            self.tx_len += data.len();
            self.tx.push_back(Segment::Body(data.clone()));
        } else {
            self.append_tx(data.len(), &mut |dst| dst.copy_from_slice(data));
        }
    }

    /// Buffers around a connection whose stream is ZWS (`ws://`): the HTTP upgrade first
    /// (a client's request is queued at once; a server answers the request it reads), then
    /// one WebSocket message per ZMTP frame and no ZMTP greeting. The connection itself is
    /// unchanged: this layer makes up the peer's greeting (ZMTP 3.0, so subscriptions go
    /// as `0x01`/`0x00` messages, as libzmq's PUB wants them over ws), swallows ours,
    /// re-frames each direction, turns our PINGs into WebSocket pings and answers the
    /// peer's; over bare `ZWS2.0` it trades the routing id frames for READY commands. Everything else ([`transmit`](Self::transmit), [`advance`](Self::advance),
    /// [`read_buf`](Self::read_buf)...) then counts WebSocket bytes.
    ///
    /// # Errors
    /// [`HandshakeError::UnsupportedMechanism`] for a mechanism ZWS does not run, and
    /// [`HandshakeError::InvalidTarget`] for a client's host or path that cannot go into
    /// a request.
    pub fn wrap_ws(conn: Connection, side: &WsSide<'_>) -> Result<Buffered, HandshakeError> {
        let zws = Zws::new(
            side,
            conn.config().socket_type,
            conn.config().security.mechanism(),
            conn.config().max_message_size,
        )?;
        let mut b = Buffered::wrap(conn);
        let mut ws = Box::new(zws);
        let head = ws.take_head();
        b.append_tx(head.len(), &mut |dst| dst.copy_from_slice(&head));
        b.ws = Some(ws);
        Ok(b)
    }

    /// Whether the stream is ZWS ([`wrap_ws`](Self::wrap_ws)).
    pub fn is_ws(&self) -> bool {
        self.ws.is_some()
    }

    /// Translate the WebSocket input into ZMTP input (and queue our answers). Out of line
    /// and cold, as every ZWS branch here: the ZMTP paths stay as small as they were.
    #[cold]
    #[inline(never)]
    fn pump_ws(&mut self) -> Result<(), Error> {
        if let Some(e) = self.conn.error() {
            return Err(e.clone());
        }
        let Some(mut ws) = self.ws.take() else {
            return Ok(());
        };
        let mut rx = core::mem::take(&mut self.rx);
        let r = ws.pump_input(&mut rx, |bytes| {
            self.append_tx(bytes.len(), &mut |dst| dst.copy_from_slice(bytes))
        });
        self.rx = rx;
        if ws.take_keepalive() {
            self.conn.note_traffic();
        }
        self.ws = Some(ws);
        r
    }

    /// The connection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection, mutably (timers, events).
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Append bytes read from the stream.
    pub fn receive(&mut self, data: &[u8]) {
        match self.ws.as_deref_mut() {
            Some(ws) => ws.raw().extend_from_slice(data),
            None => self.rx.extend_from_slice(data),
        }
    }

    /// Bytes received and not yet processed.
    pub fn buffered_input(&self) -> usize {
        self.rx.len() + self.ws.as_ref().map_or(0, |ws| ws.raw_len())
    }

    /// The receive buffer, for drivers that read straight into it, with room for the next
    /// read: at least what the next item still needs (up to 256 KiB at a time) and 4 KiB.
    /// It grows with the bytes that arrive, not with what a header announces: a peer
    /// claiming a huge frame gets no memory until it sends the bytes. The room left by
    /// frames already taken (and dropped) is reused rather than allocated again.
    pub fn read_buf(&mut self) -> &mut BytesMut {
        self.read_buf_pooled(&mut RxPool::default(), 0)
    }

    /// [`read_buf`](Self::read_buf), with at least `room` bytes free (a driver's larger
    /// read for a stream that filled its last one), taking a new buffer from `pool` when
    /// this one is still shared with frames the application holds, and leaving it there.
    /// A stream of large frames gets less room where it pays: exactly what the frame being
    /// read still needs, and a short read after one (see `BULK_FRAME`).
    pub fn read_buf_pooled(&mut self, pool: &mut RxPool, room: usize) -> &mut BytesMut {
        if let Some(ws) = self.ws.as_deref_mut() {
            let need = ws.needed();
            let raw = ws.raw();
            if raw.capacity() - raw.len() < need.max(RX_MIN_ROOM).max(room) {
                raw.reserve(need.clamp(RX_CHUNK, MAX_RESERVE).max(room));
            }
            return raw;
        }
        let len = self.rx.len();
        if self.rx.capacity() - len < self.rx_need.max(RX_MIN_ROOM).max(room) {
            let more = self.rx_need.clamp(RX_CHUNK, MAX_RESERVE).max(room);
            pool.grow(&mut self.rx, &mut self.rx_alloc, more);
            // The read ends with a large frame, or is short after one (see `BULK_FRAME`).
            let frame = len + self.rx_need;
            let end = if (BULK_FRAME..=BULK_FRAME_MAX).contains(&frame) {
                frame
            } else if self.rx_bulk && len == 0 {
                RX_MIN_ROOM
            } else {
                usize::MAX
            };
            if end < self.rx.capacity() {
                // The room past `end` stays in the allocation, for the buffer to take
                // back when it next grows in place.
                drop(self.rx.split_off(end));
            }
        }
        &mut self.rx
    }

    /// The receive buffer taken out, with room for the next read as
    /// [`read_buf`](Self::read_buf) gives it, for a driver whose read completes later (a
    /// completion-based reactor hands its spare capacity to the kernel, and nothing else
    /// may touch it meanwhile). Nothing is received until it comes back through
    /// [`restore_read_buf`](Self::restore_read_buf), with the bytes read appended.
    pub fn take_read_buf(&mut self) -> BytesMut {
        core::mem::take(self.read_buf())
    }

    /// [`take_read_buf`](Self::take_read_buf) with the room and pool of
    /// [`read_buf_pooled`](Self::read_buf_pooled).
    pub fn take_read_buf_pooled(&mut self, pool: &mut RxPool, room: usize) -> BytesMut {
        core::mem::take(self.read_buf_pooled(pool, room))
    }

    /// Give back the buffer [`take_read_buf`](Self::take_read_buf) took, with the bytes
    /// read appended to what it held; [`poll_item`](Self::poll_item) then processes them.
    pub fn restore_read_buf(&mut self, buf: BytesMut) {
        let dst = match self.ws.as_deref_mut() {
            Some(ws) => ws.raw(),
            None => &mut self.rx,
        };
        if dst.is_empty() {
            *dst = buf;
        } else {
            // Bytes received meanwhile (not through this buffer): they came later.
            let mut buf = buf;
            buf.extend_from_slice(dst);
            *dst = buf;
            if self.ws.is_none() {
                // Perhaps moved by the copy: not an allocation the pool knows.
                self.rx_alloc = 0;
            }
        }
    }

    /// The next complete item from the received bytes, if any. When none is complete,
    /// [`read_buf`](Self::read_buf) gives the receive buffer room for what it needs.
    pub fn poll_item(&mut self, now: Instant) -> Result<Option<OwnedItem>, Error> {
        if self.ws.is_some() {
            self.pump_ws()?;
        }
        if self.socks.is_some() && !self.pump_socks()? {
            return Ok(None);
        }
        loop {
            let input = self.conn.handle_input(now, &mut self.rx)?;
            let (consumed, payload) = (input.consumed, input.payload.clone());
            let Some(kind) = input.item.as_ref().map(OwnedKind::of) else {
                if consumed == 0 {
                    // Room is made when the driver next asks for the buffer to read into
                    // (`read_buf`), not now: the frames just split off its front share it
                    // until the application has taken them, and a buffer still shared
                    // cannot be reclaimed in place, only replaced.
                    self.rx_need = input.needed.saturating_sub(self.rx.len());
                    return Ok(None);
                }
                self.rx.advance(consumed);
                continue;
            };
            self.rx_bulk = (BULK_FRAME..=BULK_FRAME_MAX).contains(&consumed);
            // Trim to the payload in place: one shared reference, not two.
            let mut chunk = self.rx.split_to(consumed);
            chunk.advance(payload.start);
            chunk.truncate(payload.len());
            return Ok(Some(kind.make(chunk.freeze())));
        }
    }

    /// The bulk path of clear traffic: up to `max` single-frame data messages from the
    /// front of the received bytes, each body handed to `f` (shared with the receive
    /// buffer, not copied); returns how many. Frames of any other kind stay for
    /// [`poll_item`](Self::poll_item), which must be called when this returns 0.
    ///
    /// Where it applies (see `Connection::scan_messages`), it does in one pass what
    /// `poll_item` does per frame: one header check per message and one split of the
    /// buffer per batch.
    pub fn poll_messages(&mut self, max: usize, mut f: impl FnMut(Bytes)) -> usize {
        if self.ws.is_some() || self.socks.is_some() {
            // ZWS input is translated by `poll_item`, which also runs a SOCKS exchange.
            return 0;
        }
        let (taken, n) = self.conn.scan_messages(&self.rx, max);
        if taken == 0 {
            return 0;
        }
        // The frames were checked: walk their headers again over the shared chunk.
        let chunk = self.rx.split_to(taken).freeze();
        let mut at = 0;
        for _ in 0..n {
            let (header, size) = match chunk.get(at..) {
                Some([0, size, ..]) => (2, usize::from(*size)),
                Some([_, a, b, c, d, e, g, h, i, ..]) => {
                    let size = u64::from_be_bytes([*a, *b, *c, *d, *e, *g, *h, *i]);
                    (9, usize::try_from(size).unwrap_or(usize::MAX))
                }
                _ => break,
            };
            let Some(end) = (at + header).checked_add(size).filter(|&end| end <= taken) else {
                break;
            };
            f(chunk.slice(at + header..end));
            at = end;
        }
        // Once per batch: whether its messages were large ones (on average).
        self.rx_bulk =
            (n.saturating_mul(BULK_FRAME)..=n.saturating_mul(BULK_FRAME_MAX)).contains(&taken);
        n
    }

    /// Take a chunk of received bytes that is shared, not copied, when it can be: when the
    /// buffered input is exactly the header of a data frame whose body is `chunk` (as an
    /// in-process transport delivers a large body), the frame is returned with `chunk` as
    /// its body. Otherwise the chunk is appended to the buffered input (copied), `None` is
    /// returned, and [`poll_item`](Self::poll_item) processes it as usual.
    pub fn receive_shared(
        &mut self,
        now: Instant,
        chunk: Bytes,
    ) -> Result<Option<OwnedItem>, Error> {
        if let Some(ws) = self.ws.as_deref_mut() {
            ws.raw().extend_from_slice(&chunk);
            return Ok(None);
        }
        if self.raw {
            self.rx.extend_from_slice(&chunk);
            return Ok(None);
        }
        let header_len = self.rx.len();
        if (2..=9).contains(&header_len) && chunk.len() >= SHARED_BODY_MIN {
            // A copy of the header, so that the input buffer can be cleared afterwards.
            let mut copy = [0u8; 9];
            let header = match copy.get_mut(..header_len) {
                Some(dst) => {
                    dst.copy_from_slice(&self.rx);
                    &*dst
                }
                None => &[],
            };
            if let Some(item) = self.conn.handle_frame_parts(now, header, &chunk)? {
                let kind = OwnedKind::of(&item);
                let payload = chunk.slice_ref(item.payload());
                self.rx.clear();
                return Ok(Some(kind.make(payload)));
            }
        }
        if self.rx.is_empty() {
            // A chunk nobody else holds becomes the input buffer as it is.
            match chunk.try_into_mut() {
                Ok(owned) => {
                    self.rx = owned;
                    self.rx_alloc = 0;
                }
                Err(shared) => self.rx.extend_from_slice(&shared),
            }
        } else {
            self.rx.extend_from_slice(&chunk);
        }
        Ok(None)
    }

    /// Hand each unwritten segment of the output to `f` as owned bytes: encoded bytes are
    /// copied, shared frame bodies are passed on as they are. Then [`advance`](Self::advance)
    /// by [`queued_len`](Self::queued_len). For in-process transports.
    pub fn transmit_bytes(&self, mut f: impl FnMut(Bytes)) {
        for (i, seg) in self.tx.iter().enumerate() {
            let skip = if i == 0 { self.tx_head } else { 0 };
            let chunk = match seg {
                Segment::Body(b) => b.slice(skip.min(b.len())..),
                Segment::Encoded { .. } => {
                    Bytes::copy_from_slice(seg.bytes().get(skip..).unwrap_or_default())
                }
            };
            if !chunk.is_empty() {
                f(chunk);
            }
        }
    }

    /// Append pending control frames to the send buffer.
    #[inline]
    pub fn poll_transmit(&mut self) {
        if self.raw {
            return;
        }
        if self.ws.is_some() {
            self.ping_ws();
        }
        if !self.conn.control_pending() || self.socks.is_some() {
            // Nothing to write (or not yet: the proxy has not connected us): spare the
            // encode buffer's bookkeeping.
            return;
        }
        // Control frames are small; one retry with the exact size always succeeds.
        let _ = self.encode(0, |conn, out| Ok(conn.poll_transmit(out)?));
    }

    /// Append one data frame to the send buffer.
    pub fn send_frame(&mut self, body: &[u8], more: bool) -> Result<(), EncodeError> {
        // The common case: a clear frame written straight into room the encode buffer
        // already has (ZWS frames are translated by `encode`).
        if let Some(Segment::Encoded { buf, used }) =
            self.tx.back_mut().filter(|_| self.ws.is_none())
        {
            let n = FrameHeader::data_len(body.len());
            let end = *used + n + body.len();
            if let Some(dst) = buf.get_mut(*used..end) {
                if self.conn.clear_frame_sent(more) {
                    let (header, rest) = dst.split_at_mut(n);
                    FrameHeader::put_data(header, body.len(), more);
                    rest.copy_from_slice(body);
                    self.tx_len += end - *used;
                    *used = end;
                    return Ok(());
                }
            }
        }
        self.encode(body.len() + MAX_FRAME_HEADER_LEN, |conn, out| {
            conn.send_frame(body, more, out)
        })
    }

    /// Append one data frame whose body is shared: a large body is queued by reference
    /// (no copy), a small one is copied like [`send_frame`](Self::send_frame).
    pub fn send_frame_shared(&mut self, body: &Bytes, more: bool) -> Result<(), EncodeError> {
        // Encrypted bodies are sealed in the output buffer: no way around the copy.
        if body.len() < SHARED_BODY_MIN || self.conn.encrypts() || self.ws.is_some() {
            return self.send_frame(body, more);
        }
        let len = body.len();
        self.encode(9, |conn, out| conn.send_frame_header(len, more, out))?;
        self.tx_len += len;
        self.tx.push_back(Segment::Body(body.clone()));
        Ok(())
    }

    /// Append a command frame (JOIN, LEAVE, ...).
    pub fn send_command(&mut self, cmd: &Command<'_>) -> Result<(), EncodeError> {
        self.encode(cmd.frame_len(), |conn, out| conn.send_command(cmd, out))
    }

    /// Append a subscription (command or `0x01` message, by peer version).
    pub fn send_subscribe(&mut self, topic: &[u8]) -> Result<(), EncodeError> {
        self.encode(topic.len() + 20, |conn, out| {
            conn.send_subscribe(topic, out)
        })
    }

    /// Append a cancelled subscription.
    pub fn send_cancel(&mut self, topic: &[u8]) -> Result<(), EncodeError> {
        self.encode(topic.len() + 20, |conn, out| conn.send_cancel(topic, out))
    }

    /// The next bytes to write to the stream: the first segment of the output (empty
    /// when nothing waits). See [`transmit_chunks`](Self::transmit_chunks) for all of it.
    pub fn transmit(&self) -> &[u8] {
        self.tx
            .front()
            .and_then(|seg| seg.bytes().get(self.tx_head..))
            .unwrap_or_default()
    }

    /// Fill `out` with the output's segments, in order, for a vectored write; returns how
    /// many were filled.
    pub fn transmit_chunks<'a>(&'a self, out: &mut [&'a [u8]]) -> usize {
        let mut n = 0;
        for (i, seg) in self.tx.iter().enumerate() {
            let Some(slot) = out.get_mut(n) else {
                break;
            };
            let skip = if i == 0 { self.tx_head } else { 0 };
            let bytes = seg.bytes().get(skip..).unwrap_or_default();
            if !bytes.is_empty() {
                *slot = bytes;
                n += 1;
            }
        }
        n
    }

    /// Unwritten output bytes in all.
    pub fn queued_len(&self) -> usize {
        self.tx_len
    }

    /// Drop `n` written bytes from the front of the output.
    pub fn advance(&mut self, mut n: usize) {
        n = n.min(self.tx_len);
        self.tx_len -= n;
        while n > 0 {
            let Some(front) = self.tx.front() else {
                break;
            };
            let left = front.bytes().len() - self.tx_head;
            if n < left {
                self.tx_head += n;
                break;
            }
            n -= left;
            self.tx_head = 0;
            if let Some(Segment::Encoded { buf, .. }) = self.tx.pop_front() {
                if buf.len() > self.spare.len() {
                    self.spare = buf;
                }
            }
        }
        if self.tx_len == 0 {
            self.tx.clear();
            self.tx_head = 0;
        }
    }

    /// Heartbeats over ws are WebSocket pings, even when traffic is sealed.
    #[cold]
    #[inline(never)]
    fn ping_ws(&mut self) {
        if let Some(mut ws) = self.ws.take() {
            if self.conn.take_ping() {
                ws.ping(&mut |n, write| self.append_tx(n, write));
            }
            self.ws = Some(ws);
        }
    }

    /// [`encode`](Self::encode) for a ZWS stream: the connection encodes into the layer's
    /// scratch, whose frames are translated into the output. Control frames (`control`)
    /// are asked for until none is left: the connection writes those that fit, and the
    /// scratch may be short of later ones.
    #[cold]
    #[inline(never)]
    fn encode_ws(
        &mut self,
        ws: &mut Zws,
        mut room: usize,
        control: bool,
        mut f: impl FnMut(&mut Connection, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Result<(), EncodeError> {
        loop {
            let n = loop {
                match f(&mut self.conn, ws.scratch(room)) {
                    Ok(n) => break n,
                    Err(EncodeError::InsufficientSize { required }) if required > room => {
                        room = required;
                    }
                    Err(e) => return Err(e),
                }
            };
            ws.translate_scratch(n, |n, write| self.append_tx(n, write));
            if n == 0 || !control {
                return Ok(());
            }
        }
    }

    /// [`encode_ws`](Self::encode_ws) with the layer taken out and put back.
    #[cold]
    #[inline(never)]
    fn encode_ws_stream(
        &mut self,
        room: usize,
        control: bool,
        f: impl FnMut(&mut Connection, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Result<(), EncodeError> {
        let Some(mut ws) = self.ws.take() else {
            return Ok(());
        };
        let r = self.encode_ws(&mut ws, room, control, f);
        self.ws = Some(ws);
        r
    }

    /// Append `n` bytes that `write` fills to the output.
    fn append_tx(&mut self, n: usize, write: &mut dyn FnMut(&mut [u8])) {
        if n == 0 {
            return;
        }
        let tail = encoded_tail(&mut self.tx, &mut self.spare, &mut self.tx_head, n);
        if let Some((buf, used)) = tail {
            if let Some(dst) = buf.get_mut(*used..*used + n) {
                write(dst);
                *used += n;
                self.tx_len += n;
            }
        }
    }

    /// Append what `f` encodes to the last encoded segment; `hint` is the size expected
    /// (the frame or topic length).
    fn encode(
        &mut self,
        hint: usize,
        mut f: impl FnMut(&mut Connection, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Result<(), EncodeError> {
        let mut room = hint + ROOM_SLACK;
        if self.ws.is_some() {
            return self.encode_ws_stream(room, hint == 0, f);
        }
        loop {
            let tail = encoded_tail(&mut self.tx, &mut self.spare, &mut self.tx_head, room);
            let Some((buf, used)) = tail else {
                return Ok(());
            };
            let start = *used;
            // Always there: `encoded_tail` leaves `room` bytes after `used`.
            let Some(room_buf) = buf.get_mut(start..) else {
                return Ok(());
            };
            match f(&mut self.conn, room_buf) {
                Ok(n) => {
                    *used = start + n;
                    self.tx_len += n;
                    return Ok(());
                }
                Err(EncodeError::InsufficientSize { required }) if required > room => {
                    room = required;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The last encoded segment of an output queue (a new one, reusing `spare`, if the last is
/// a shared body), with at least `room` bytes of initialized scratch after what it holds:
/// the buffer and its used length (always `Some`). Scratch is grown (and zeroed) only when
/// too short, and the written front is reclaimed once it is most of the buffer (partial
/// writes).
#[inline]
fn encoded_tail<'a>(
    tx: &'a mut VecDeque<Segment>,
    spare: &mut Vec<u8>,
    tx_head: &mut usize,
    room: usize,
) -> Option<(&'a mut Vec<u8>, &'a mut usize)> {
    if !matches!(tx.back(), Some(Segment::Encoded { .. })) {
        let buf = core::mem::take(spare);
        tx.push_back(Segment::Encoded { buf, used: 0 });
    }
    let single = tx.len() == 1;
    let Some(Segment::Encoded { buf, used }) = tx.back_mut() else {
        return None;
    };
    if single && *tx_head > COMPACT_AT && *tx_head * 2 > *used {
        buf.drain(..*tx_head);
        *used -= *tx_head;
        *tx_head = 0;
    }
    if buf.len() < *used + room {
        buf.resize(*used + room, 0);
    }
    Some((buf, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a buffer's allocation starts (the buffer as given, before any room is used).
    fn start(b: &BytesMut) -> usize {
        b.as_ptr() as usize
    }

    #[test]
    fn a_buffer_replaced_while_shared_is_read_into_again_once_its_frames_are_dropped() {
        let mut pool = RxPool::default();
        let mut alloc = 0;
        let mut rx = BytesMut::new();
        pool.grow(&mut rx, &mut alloc, 256 * 1024);
        let first = start(&rx);
        rx.extend_from_slice(&[7; 256 * 1024]);
        // A frame the application holds: the buffer is shared, so room means a new one.
        let frame = rx.split_to(200 * 1024).freeze();
        pool.grow(&mut rx, &mut alloc, 256 * 1024);
        let second = start(&rx);
        assert_ne!(second, first);
        assert_eq!(
            rx.len(),
            56 * 1024,
            "the bytes not yet taken moved with the buffer"
        );
        assert_eq!(&rx[..], &[7; 56 * 1024][..]);
        assert_eq!(pool.kept.len(), 1);
        // The second, filled, is shared too; the first still is: a third allocation.
        rx.resize(rx.capacity(), 2);
        let frame2 = rx.split_to(rx.len()).freeze();
        pool.grow(&mut rx, &mut alloc, 256 * 1024);
        let third = start(&rx);
        assert!(third != first && third != second);
        assert_eq!(pool.kept.len(), 2);
        // The first one's frame is dropped: it is read into again, not a fresh one.
        drop(frame);
        rx.extend_from_slice(&[1; 16]);
        let frame3 = rx.split_to(16).freeze();
        pool.grow(&mut rx, &mut alloc, 256 * 1024);
        assert_eq!(start(&rx), first);
        assert!(rx.capacity() >= 256 * 1024);
        // The third (still shared) took its place in the pool.
        assert_eq!(pool.kept.len(), 2);
        drop((frame2, frame3));
    }

    /// Bytes of large frames a receiver copies when its buffer grows, reading a stream of
    /// messages of two frames, a small one then one of `body` bytes, as a driver reads:
    /// as much as the buffer has room for, the application holding every frame.
    fn bytes_copied_receiving(body: usize, messages: usize) -> (usize, usize) {
        let now = Instant::ZERO;
        let mut a = Buffered::new(Config::new(crate::SocketType::Dealer), now);
        let mut b = Buffered::new(Config::new(crate::SocketType::Router), now);
        let mut held = Vec::new();
        let mut pass = |from: &mut Buffered, to: &mut Buffered| {
            from.poll_transmit();
            let out = from.transmit().to_vec();
            from.advance(out.len());
            to.receive(&out);
            while let Some(item) = to.poll_item(now).unwrap() {
                held.push(item);
            }
        };
        for _ in 0..8 {
            pass(&mut a, &mut b);
            pass(&mut b, &mut a);
        }
        assert!(a.connection().is_established() && b.connection().is_established());
        let large = alloc::vec![5u8; body];
        for _ in 0..messages {
            a.send_frame(b"CHUNK", true).unwrap();
            a.send_frame(&large, false).unwrap();
        }
        let mut wire = Vec::new();
        while !a.transmit().is_empty() {
            let out = a.transmit().to_vec();
            a.advance(out.len());
            wire.extend_from_slice(&out);
        }
        let (mut pool, mut at, mut copied, mut bodies) = (RxPool::default(), 0, 0, 0);
        while at < wire.len() {
            let (before, len) = (b.rx.as_ptr(), b.rx.len());
            let buf = b.read_buf_pooled(&mut pool, 64 * 1024);
            if buf.as_ptr() != before {
                copied += len;
            }
            let n = (buf.capacity() - buf.len()).min(wire.len() - at);
            buf.extend_from_slice(&wire[at..at + n]);
            at += n;
            while let Some(item) = b.poll_item(now).unwrap() {
                if let OwnedItem::Frame { body: f, .. } = &item {
                    if f.len() == body {
                        assert!(f.iter().all(|&x| x == 5));
                        bodies += 1;
                    }
                }
                held.push(item);
            }
        }
        (copied, bodies)
    }

    #[test]
    fn large_frames_are_read_where_they_stay() {
        // Each large frame ends its buffer, and the read after it is a short one for the
        // next header: what is copied when a buffer grows is that short read's part of
        // the next frame (4 KiB a frame), after the first frame (read before the stream
        // was known to carry large ones). Reading on into the next large frame instead
        // copied it out of the end of the buffer: 1,046,544 bytes of the 16 frames of
        // 64 KiB, 772,624 of 100,000 bytes, 1,048,464 of 256 KiB.
        for body in [64 * 1024, 100_000, 256 * 1024] {
            let (copied, bodies) = bytes_copied_receiving(body, 16);
            assert_eq!(bodies, 16);
            assert!(
                copied <= body + 16 * RX_MIN_ROOM,
                "{copied} bytes copied for 16 frames of {body}"
            );
        }
    }

    #[test]
    fn the_pool_is_bounded_in_count_and_keeps_no_large_buffers() {
        let mut pool = RxPool::default();
        let mut alloc = 0;
        let mut rx = BytesMut::new();
        let mut held = Vec::new();
        for _ in 0..3 * POOL_LEN {
            pool.grow(&mut rx, &mut alloc, 64 * 1024);
            rx.extend_from_slice(&[0; 64 * 1024]);
            held.push(rx.split_to(64 * 1024).freeze());
        }
        assert_eq!(pool.kept.len(), POOL_LEN);
        // A frame of 4 MiB arriving in pieces: the buffers it grows through are not kept.
        let mut pool = RxPool::default();
        let mut alloc = 0;
        let mut rx = BytesMut::new();
        while rx.len() < 4 << 20 {
            pool.grow(&mut rx, &mut alloc, 256 * 1024);
            let room = rx.capacity() - rx.len();
            rx.resize(rx.len() + room.min(256 * 1024), 0);
        }
        assert!(pool.kept.iter().all(|(_, size)| *size <= POOL_BUF_MAX));
        assert!(alloc >= 4 << 20);
    }
}
