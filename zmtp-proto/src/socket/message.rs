//! Multipart messages.

use alloc::sync::Arc;
use alloc::vec::Vec;

use bytes::Bytes;

use super::PeerProperties;

/// A multipart message: one or more frames, delivered all together or not at all.
///
/// Frames are [`Bytes`]: received frames are slices of the connection's read buffer, and
/// cloning a message (as PUB does for each subscriber) copies no frame body. A message of
/// one or two frames (a body, or a body behind an envelope or routing id as REQ, REP and
/// ROUTER make) needs no allocation besides its frames.
///
/// ```
/// use zmtp_proto::socket::Message;
/// use zmtp_proto::Bytes;
///
/// // One frame, from text or bytes.
/// let hello = Message::from("hello");
/// assert_eq!(hello.len(), 1);
/// assert_eq!(hello.to_str(), Ok("hello"));
///
/// // Several frames: a list, or one frame at a time.
/// let mut request = Message::from(["", "job", "42"]);
/// request.push_front("worker-1"); // a routing envelope in front
/// request.push_back(Bytes::from_static(b"\x00\x01"));
/// assert_eq!(request.len(), 5);
/// assert_eq!(request.byte_len(), 8 + 0 + 3 + 2 + 2);
/// assert_eq!(&request.frames()[2][..], b"job");
/// assert_eq!(request.to_string(), "worker-1 |  | job | 42 | \u{0}\u{1}");
///
/// // Taken apart again.
/// assert_eq!(request.pop_front().as_deref(), Some(&b"worker-1"[..]));
/// let frames: Vec<Bytes> = request.into_frames();
/// assert_eq!(frames[1], "job");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Message {
    frames: Frames,
    /// The sending peer's properties, on messages from authenticated peers (and a
    /// STREAM's).
    properties: Option<Arc<PeerProperties>>,
}

#[derive(Debug, Clone)]
enum Frames {
    One(Bytes),
    /// Two frames in place: a routing id or envelope and a body need no list.
    Two([Bytes; 2]),
    Many(Vec<Bytes>),
    /// One frame with the metadata of the draft socket types (libzmq keeps it in the
    /// message, never on the wire as a frame of its own): a routing id and a group.
    ///
    /// Boxed, at the cost of one allocation per message that carries metadata (a SERVER's
    /// or DISH's received messages): the same fields in place made every message dearer
    /// to build, match and drop, which PULL's receive path paid per message (+8 % and
    /// +12 % instructions for `recv` and `recv_many` in the instruction-count scenarios;
    /// boxed, +4 %).
    Tagged(alloc::boxed::Box<Tag>),
}

/// The frame and metadata of [`Frames::Tagged`].
#[derive(Debug, Clone)]
struct Tag {
    /// 0: none.
    routing_id: u32,
    body: Bytes,
    group: Option<Bytes>,
}

impl Frames {
    /// The frames of a list: one or two in place (the list is dropped), more in the list.
    fn from_vec(mut frames: Vec<Bytes>) -> Frames {
        match frames.len() {
            1 | 2 => {
                let second = frames.pop().unwrap_or_default();
                match frames.pop() {
                    Some(first) => Frames::Two([first, second]),
                    None => Frames::One(second),
                }
            }
            _ => Frames::Many(frames),
        }
    }

    fn len(&self) -> usize {
        match self {
            Frames::One(_) | Frames::Tagged(_) => 1,
            Frames::Two(_) => 2,
            Frames::Many(v) => v.len(),
        }
    }

    fn into_vec(self) -> Vec<Bytes> {
        match self {
            Frames::One(b) => alloc::vec![b],
            Frames::Tagged(t) => alloc::vec![t.body],
            Frames::Two(two) => Vec::from(two),
            Frames::Many(v) => v,
        }
    }
}

impl Default for Frames {
    fn default() -> Frames {
        Frames::Many(Vec::new())
    }
}

/// Messages are equal when their frames are, and their metadata (routing id, group).
impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.frames() == other.frames()
            && self.routing_id() == other.routing_id()
            && self.group() == other.group()
    }
}

impl Eq for Message {}

impl core::hash::Hash for Message {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.frames().hash(state);
    }
}

impl Message {
    /// A single-frame message over a `'static` slice, without a copy (what the
    /// conversions from `&[u8]` and `&str` do not promise: they copy).
    ///
    /// ```
    /// use zmtp_proto::socket::Message;
    /// assert_eq!(Message::from_static(b"ping"), Message::from("ping"));
    /// ```
    pub fn from_static(frame: &'static [u8]) -> Message {
        Message::from(Bytes::from_static(frame))
    }

    /// An empty message (no frames yet).
    ///
    /// ```
    /// use zmtp_proto::socket::Message;
    ///
    /// let mut msg = Message::new();
    /// assert!(msg.is_empty());
    /// msg.push_back("first");
    /// msg.push_back("second");
    /// assert_eq!(msg, Message::from(["first", "second"]));
    /// ```
    pub fn new() -> Message {
        Message::default()
    }

    /// A property of the peer that sent this message, as libzmq's `zmq_msg_gets`:
    /// `User-Id`, `Peer-Address` (its IP, over tcp) and the authenticator's properties,
    /// then the peer's own metadata (`Socket-Type`, `Identity`, `X-` properties). Only
    /// messages from peers that were authenticated (PLAIN, CURVE, or NULL with a ZAP
    /// domain) or that sent application metadata (`X-` properties, libzmq's
    /// `ZMQ_METADATA`) carry properties, and a STREAM's messages (its connections'
    /// `Peer-Address`).
    pub fn property(&self, name: &str) -> Option<&[u8]> {
        self.properties.as_deref()?.get(name)
    }

    /// All properties of the sending peer (see [`property`](Self::property)).
    pub fn properties(&self) -> Option<&PeerProperties> {
        self.properties.as_deref()
    }

    /// Take the sending peer's properties out of the message, as its messages share them:
    /// the messages of one connection hold the same allocation ([`Arc::ptr_eq`]), so a
    /// caller can keep what it derives from them once per connection.
    pub fn take_properties(&mut self) -> Option<Arc<PeerProperties>> {
        self.properties.take()
    }

    pub(crate) fn set_properties(&mut self, properties: Option<Arc<PeerProperties>>) {
        self.properties = properties;
    }

    /// The frames.
    ///
    /// ```
    /// use zmtp_proto::socket::Message;
    ///
    /// let msg = Message::from(["topic", "body"]);
    /// let texts: Vec<&str> = msg.frames().iter().map(|f| std::str::from_utf8(f).unwrap()).collect();
    /// assert_eq!(texts, ["topic", "body"]);
    /// ```
    pub fn frames(&self) -> &[Bytes] {
        match &self.frames {
            Frames::One(b) => core::slice::from_ref(b),
            Frames::Tagged(t) => core::slice::from_ref(&t.body),
            Frames::Two(two) => two,
            Frames::Many(v) => v,
        }
    }

    /// The frames, by value.
    pub fn into_frames(self) -> Vec<Bytes> {
        self.frames.into_vec()
    }

    /// The first frame, if any.
    pub fn first(&self) -> Option<&Bytes> {
        self.frames().first()
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.frames().len()
    }

    /// Whether the message has no frames.
    pub fn is_empty(&self) -> bool {
        self.frames().is_empty()
    }

    /// Total body bytes over all frames.
    pub fn byte_len(&self) -> usize {
        self.frames().iter().map(Bytes::len).sum()
    }

    /// Append a frame. A message of several frames has no routing id or group: adding a
    /// frame drops them.
    pub fn push_back(&mut self, frame: impl Into<Bytes>) {
        let frame = frame.into();
        match &mut self.frames {
            Frames::One(b) => {
                self.frames = Frames::Two([core::mem::take(b), frame]);
            }
            Frames::Tagged(t) => {
                self.frames = Frames::Two([core::mem::take(&mut t.body), frame]);
            }
            Frames::Two([a, b]) => {
                let (a, b) = (core::mem::take(a), core::mem::take(b));
                self.frames = Frames::Many(alloc::vec![a, b, frame]);
            }
            Frames::Many(v) if v.is_empty() => self.frames = Frames::One(frame),
            Frames::Many(v) => v.push(frame),
        }
    }

    /// Prepend a frame (an envelope or routing id); as [`push_back`](Self::push_back), this
    /// drops a routing id or group.
    pub fn push_front(&mut self, frame: impl Into<Bytes>) {
        let frame = frame.into();
        match &mut self.frames {
            Frames::One(b) => {
                self.frames = Frames::Two([frame, core::mem::take(b)]);
            }
            Frames::Tagged(t) => {
                self.frames = Frames::Two([frame, core::mem::take(&mut t.body)]);
            }
            Frames::Two([a, b]) => {
                let (a, b) = (core::mem::take(a), core::mem::take(b));
                self.frames = Frames::Many(alloc::vec![frame, a, b]);
            }
            Frames::Many(v) if v.is_empty() => self.frames = Frames::One(frame),
            Frames::Many(v) => v.insert(0, frame),
        }
    }

    /// The frame of a one-frame message, by value, without the bookkeeping of
    /// [`pop_front`](Self::pop_front) and dropping what is left; any other message comes
    /// back as it is. (The routing id and group of a draft type's message go with it: read
    /// them first.)
    ///
    /// ```
    /// use zmtp_proto::socket::Message;
    ///
    /// assert_eq!(Message::from("one").into_only_frame().unwrap(), "one");
    /// let two = Message::from(["a", "b"]);
    /// assert_eq!(two.clone().into_only_frame().unwrap_err(), two);
    /// ```
    #[inline(always)]
    pub fn into_only_frame(self) -> Result<Bytes, Message> {
        match self.frames {
            Frames::One(b) => Ok(b),
            Frames::Tagged(t) => Ok(t.body),
            frames => Err(Message {
                frames,
                properties: self.properties,
            }),
        }
    }

    /// Remove and return the first frame.
    pub fn pop_front(&mut self) -> Option<Bytes> {
        match &mut self.frames {
            Frames::One(b) => {
                let b = core::mem::take(b);
                self.frames = Frames::Many(Vec::new());
                Some(b)
            }
            Frames::Tagged(t) => {
                let b = core::mem::take(&mut t.body);
                self.frames = Frames::Many(Vec::new());
                Some(b)
            }
            Frames::Two([a, b]) => {
                let (a, b) = (core::mem::take(a), core::mem::take(b));
                self.frames = Frames::One(b);
                Some(a)
            }
            Frames::Many(v) if v.is_empty() => None,
            Frames::Many(v) => Some(v.remove(0)),
        }
    }

    /// Split off the frames from `at` on, leaving the first `at` here.
    pub(crate) fn split_off(&mut self, at: usize) -> Message {
        let rest = match core::mem::take(&mut self.frames) {
            // In place: nothing to allocate or free.
            Frames::Two([a, b]) if at == 1 => {
                self.frames = Frames::One(a);
                Frames::One(b)
            }
            frames if at >= frames.len() => {
                self.frames = frames;
                Frames::Many(Vec::new())
            }
            frames if at == 0 => frames,
            frames => {
                let mut head = frames.into_vec();
                let rest = head.split_off(at);
                self.frames = Frames::from_vec(head);
                Frames::from_vec(rest)
            }
        };
        Message {
            frames: rest,
            properties: self.properties.clone(),
        }
    }

    /// Put `envelope`'s frames in front of this message's (keeping this message's
    /// properties).
    pub(crate) fn prepend(&mut self, envelope: Message) {
        if envelope.is_empty() {
            return;
        }
        self.frames = match (envelope.frames, core::mem::take(&mut self.frames)) {
            // An envelope of one frame before a body: in place, nothing to allocate.
            (Frames::One(e), Frames::One(b)) => Frames::Two([e, b]),
            (e, body) => {
                let mut frames = e.into_vec();
                frames.extend(body.into_vec());
                Frames::from_vec(frames)
            }
        };
    }
}

impl Message {
    /// The text of a single-frame message: its one frame as `&str`, borrowed (no copy).
    ///
    /// Only a message of exactly one frame is text: a multipart message (or one with no
    /// frames) fails with [`TextError::Frames`], whatever its frames hold, and a frame that
    /// is not UTF-8 with [`TextError::Utf8`]. Read the frames of a multipart message one by
    /// one with [`frames`](Self::frames) and [`core::str::from_utf8`], or print them all
    /// with the [`Display`](core::fmt::Display) form.
    ///
    /// ```
    /// use zmtp_proto::socket::{Message, TextError};
    /// assert_eq!(Message::from("hello").to_str(), Ok("hello"));
    /// assert_eq!(Message::from(["a", "b"]).to_str(), Err(TextError::Frames(2)));
    /// assert!(matches!(Message::from(b"\xff").to_str(), Err(TextError::Utf8(_))));
    /// ```
    pub fn to_str(&self) -> Result<&str, TextError> {
        match self.frames() {
            [one] => core::str::from_utf8(one).map_err(TextError::Utf8),
            frames => Err(TextError::Frames(frames.len())),
        }
    }
}

/// The longest group a RADIO or DISH takes, in bytes (libzmq's `ZMQ_GROUP_MAX_LENGTH`).
pub const GROUP_MAX_LEN: usize = 255;

/// Metadata of the draft socket types. libzmq's messages are single frames, and so are the
/// messages of the draft types: only a single-frame message carries a routing id or group.
impl Message {
    /// The routing id of a message received by a SERVER or PEER socket: the peer it came
    /// from, to set on the reply ([`set_routing_id`](Self::set_routing_id)). `None` on
    /// other messages. (libzmq's `zmq_msg_routing_id`, which gives 0 for none.)
    ///
    /// ```
    /// use zmtp_proto::socket::Message;
    ///
    /// let mut reply = Message::from("pong");
    /// assert_eq!(reply.routing_id(), None);
    /// reply.set_routing_id(7).unwrap();
    /// assert_eq!(reply.routing_id(), Some(7));
    /// ```
    pub fn routing_id(&self) -> Option<u32> {
        match self.frames {
            Frames::Tagged(ref t) if t.routing_id != 0 => Some(t.routing_id),
            _ => None,
        }
    }

    /// Address a message for a SERVER or PEER socket: the routing id of the peer to send it
    /// to, as [`routing_id`](Self::routing_id) gave it on a received message (or PEER's
    /// `connect_peer` returned). Fails on 0 (no id is 0) and on a message that is not a
    /// single frame.
    pub fn set_routing_id(&mut self, id: u32) -> Result<(), MetadataError> {
        if id == 0 {
            return Err(MetadataError::ZeroRoutingId);
        }
        *self.tagged()?.0 = id;
        Ok(())
    }

    /// The group of a message received by a DISH (or set for a RADIO to send). `None` when
    /// none was set.
    ///
    /// ```
    /// use zmtp_proto::socket::{Message, MetadataError, GROUP_MAX_LEN};
    ///
    /// let mut news = Message::from("it rained");
    /// news.set_group("weather").unwrap();
    /// assert_eq!(news.group(), Some(&b"weather"[..]));
    /// assert_eq!(
    ///     news.set_group(vec![b'x'; GROUP_MAX_LEN + 1]),
    ///     Err(MetadataError::GroupTooLong(256))
    /// );
    /// assert_eq!(Message::from(["a", "b"]).set_group("g"), Err(MetadataError::Frames(2)));
    /// ```
    pub fn group(&self) -> Option<&[u8]> {
        match &self.frames {
            Frames::Tagged(t) => t.group.as_deref(),
            _ => None,
        }
    }

    /// Set the group a RADIO sends this message to (at most [`GROUP_MAX_LEN`] bytes,
    /// copied).
    /// Fails on a longer group and on a message that is not a single frame.
    pub fn set_group(&mut self, group: impl AsRef<[u8]>) -> Result<(), MetadataError> {
        let group = group.as_ref();
        if group.len() > GROUP_MAX_LEN {
            return Err(MetadataError::GroupTooLong(group.len()));
        }
        *self.tagged()?.1 = Some(Bytes::copy_from_slice(group));
        Ok(())
    }

    /// Set the metadata of a single-frame message (a routing id of 0 is none); false, and
    /// nothing changed, on another message.
    pub(crate) fn tag(&mut self, routing_id: u32, group: Option<Bytes>) -> bool {
        match self.tagged() {
            Ok((id, g)) => {
                *id = routing_id;
                *g = group;
                true
            }
            Err(_) => false,
        }
    }

    /// A message of two frames, in place.
    pub(crate) fn two(first: Bytes, second: Bytes) -> Message {
        Message {
            frames: Frames::Two([first, second]),
            properties: None,
        }
    }

    /// DISH: a message `[group, body]` becomes its body tagged with the group (keeping its
    /// properties); returns the group. `None`, and nothing changed, on another shape.
    pub(crate) fn ungroup(&mut self) -> Option<Bytes> {
        let Frames::Two([group, body]) = &mut self.frames else {
            return None;
        };
        let (group, body) = (core::mem::take(group), core::mem::take(body));
        self.frames = Frames::Tagged(alloc::boxed::Box::new(Tag {
            routing_id: 0,
            body,
            group: Some(group.clone()),
        }));
        Some(group)
    }

    /// The body of a single-frame message, by value, without its metadata.
    pub(crate) fn into_body(self) -> Option<Bytes> {
        match self.frames {
            Frames::One(b) => Some(b),
            Frames::Tagged(t) => Some(t.body),
            _ => None,
        }
    }

    /// The metadata slots of a single-frame message, made in place if it had none.
    fn tagged(&mut self) -> Result<(&mut u32, &mut Option<Bytes>), MetadataError> {
        if let Frames::One(b) = &mut self.frames {
            self.frames = Frames::Tagged(alloc::boxed::Box::new(Tag {
                routing_id: 0,
                body: core::mem::take(b),
                group: None,
            }));
        }
        let frames = self.len();
        match &mut self.frames {
            Frames::Tagged(t) => Ok((&mut t.routing_id, &mut t.group)),
            _ => Err(MetadataError::Frames(frames)),
        }
    }
}

/// Why a routing id or group cannot be set ([`Message::set_routing_id`],
/// [`Message::set_group`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataError {
    /// The message has this many frames, not one.
    Frames(usize),
    /// Routing ids are never 0.
    ZeroRoutingId,
    /// The group is this many bytes, more than [`GROUP_MAX_LEN`].
    GroupTooLong(usize),
}

impl core::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MetadataError::Frames(n) => {
                write!(
                    f,
                    "only a single-frame message has metadata, not one of {n}"
                )
            }
            MetadataError::ZeroRoutingId => f.write_str("a routing id is never 0"),
            MetadataError::GroupTooLong(n) => {
                write!(f, "a group of {n} bytes is longer than {GROUP_MAX_LEN}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for MetadataError {}

/// Why a message is not text ([`Message::to_str`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    /// The message has this many frames, not one.
    Frames(usize),
    /// The frame is not valid UTF-8.
    Utf8(core::str::Utf8Error),
}

impl core::fmt::Display for TextError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TextError::Frames(n) => write!(f, "a message of {n} frames is not one text"),
            TextError::Utf8(e) => write!(f, "the frame is not UTF-8: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TextError::Utf8(e) => Some(e),
            TextError::Frames(_) => None,
        }
    }
}

/// The frames as text, for people (logs, printing): each frame as UTF-8, with bytes that
/// are not UTF-8 shown as U+FFFD (`�`), as [`String::from_utf8_lossy`] does; frames are
/// separated by `" | "`. A single-frame message prints as its text alone, a message with
/// no frames as nothing. The form is not meant to be parsed back (a frame may hold
/// `" | "` itself); use [`frames`](Message::frames) for the exact bytes.
///
/// [`String::from_utf8_lossy`]: alloc::string::String::from_utf8_lossy
///
/// ```
/// use zmtp_proto::socket::Message;
/// assert_eq!(Message::from("hello").to_string(), "hello");
/// assert_eq!(Message::from(["worker-1", "", "job"]).to_string(), "worker-1 |  | job");
/// assert_eq!(Message::from(&b"ok\xff"[..]).to_string(), "ok\u{FFFD}");
/// ```
impl core::fmt::Display for Message {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, frame) in self.frames().iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            for chunk in frame.utf8_chunks() {
                f.write_str(chunk.valid())?;
                if !chunk.invalid().is_empty() {
                    f.write_str("\u{FFFD}")?;
                }
            }
        }
        Ok(())
    }
}

impl From<Vec<Bytes>> for Message {
    fn from(frames: Vec<Bytes>) -> Message {
        Message {
            frames: Frames::from_vec(frames),
            properties: None,
        }
    }
}

impl From<Bytes> for Message {
    fn from(frame: Bytes) -> Message {
        Message {
            frames: Frames::One(frame),
            properties: None,
        }
    }
}

impl From<Vec<u8>> for Message {
    fn from(frame: Vec<u8>) -> Message {
        Message::from(Bytes::from(frame))
    }
}

impl From<alloc::string::String> for Message {
    fn from(frame: alloc::string::String) -> Message {
        Message::from(Bytes::from(frame))
    }
}

/// Borrowed bytes are copied into the message (one allocation); a [`Bytes`] or an owned
/// `Vec<u8>`/`String` is taken without a copy, and [`Message::from_static`] keeps a
/// `'static` slice without one.
///
/// ```
/// use zmtp_proto::socket::Message;
/// let line = String::from("hello");
/// let a = Message::from(line.as_str()); // a borrowed &str: copied
/// let b = Message::from(&line); // a &String
/// let c = Message::from(b"hello"); // a byte string literal
/// let d = Message::from(&line.as_bytes()[..]); // a &[u8]
/// assert!(a == b && b == c && c == d);
/// ```
impl From<&[u8]> for Message {
    fn from(frame: &[u8]) -> Message {
        Message::from(Bytes::copy_from_slice(frame))
    }
}

impl<const N: usize> From<&[u8; N]> for Message {
    fn from(frame: &[u8; N]) -> Message {
        Message::from(&frame[..])
    }
}

impl From<&str> for Message {
    fn from(frame: &str) -> Message {
        Message::from(frame.as_bytes())
    }
}

impl From<&alloc::string::String> for Message {
    fn from(frame: &alloc::string::String) -> Message {
        Message::from(frame.as_bytes())
    }
}

impl From<&Vec<u8>> for Message {
    fn from(frame: &Vec<u8>) -> Message {
        Message::from(&frame[..])
    }
}

impl<const N: usize> From<[&[u8]; N]> for Message {
    fn from(frames: [&[u8]; N]) -> Message {
        frames.iter().map(|f| Bytes::copy_from_slice(f)).collect()
    }
}

impl From<&[&[u8]]> for Message {
    fn from(frames: &[&[u8]]) -> Message {
        frames.iter().map(|f| Bytes::copy_from_slice(f)).collect()
    }
}

/// Several frames from text: each `&str` is one frame (copied).
///
/// ```
/// use zmtp_proto::socket::Message;
/// let envelope = vec!["worker-1", "", "job"];
/// assert_eq!(Message::from(envelope).len(), 3);
/// assert_eq!(Message::from(["a", "b"]), Message::from(&["a", "b"][..]));
/// ```
impl<const N: usize> From<[&str; N]> for Message {
    fn from(frames: [&str; N]) -> Message {
        Message::from(&frames[..])
    }
}

impl From<&[&str]> for Message {
    fn from(frames: &[&str]) -> Message {
        frames
            .iter()
            .map(|f| Bytes::copy_from_slice(f.as_bytes()))
            .collect()
    }
}

impl From<Vec<&str>> for Message {
    fn from(frames: Vec<&str>) -> Message {
        Message::from(&frames[..])
    }
}

/// Several owned frames, each taken without a copy.
///
/// ```
/// use zmtp_proto::socket::Message;
/// let m = Message::from(vec![String::from("a"), String::from("b")]);
/// assert_eq!(m, Message::from(vec![b"a".to_vec(), b"b".to_vec()]));
/// ```
impl From<Vec<alloc::string::String>> for Message {
    fn from(frames: Vec<alloc::string::String>) -> Message {
        frames.into_iter().map(Bytes::from).collect()
    }
}

impl From<Vec<Vec<u8>>> for Message {
    fn from(frames: Vec<Vec<u8>>) -> Message {
        frames.into_iter().map(Bytes::from).collect()
    }
}

impl FromIterator<Bytes> for Message {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Message {
        Message::from(iter.into_iter().collect::<Vec<Bytes>>())
    }
}

impl IntoIterator for Message {
    type Item = Bytes;
    type IntoIter = alloc::vec::IntoIter<Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_frames().into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(m: &Message) -> Vec<&[u8]> {
        m.frames().iter().map(|f| &f[..]).collect()
    }

    #[test]
    fn metadata_does_not_make_a_message_bigger() {
        // A message is 80 bytes, as it was before the draft types (two frames in place,
        // the enum's tag, the properties): the metadata is boxed. Every queue and move of a
        // message pays for its size.
        assert_eq!(
            core::mem::size_of::<Message>(),
            2 * core::mem::size_of::<Bytes>() + 2 * core::mem::size_of::<usize>()
        );
    }

    #[test]
    fn one_frame_and_many_frames_behave_alike() {
        let mut m = Message::new();
        assert!(m.is_empty());
        m.push_back(Bytes::from_static(b"b"));
        assert_eq!(texts(&m), [b"b"]);
        m.push_front(Bytes::from_static(b"a"));
        m.push_back(Bytes::from_static(b"c"));
        assert_eq!(texts(&m), [&b"a"[..], b"b", b"c"]);
        assert_eq!(m, Message::from([&b"a"[..], b"b", b"c"]));
        let rest = m.split_off(1);
        assert_eq!(texts(&m), [b"a"]);
        assert_eq!(texts(&rest), [&b"b"[..], b"c"]);
        let mut body = rest;
        body.prepend(m);
        assert_eq!(texts(&body), [&b"a"[..], b"b", b"c"]);
        assert_eq!(body.pop_front().as_deref(), Some(&b"a"[..]));
        assert_eq!(body.pop_front().as_deref(), Some(&b"b"[..]));
        assert_eq!(body.pop_front().as_deref(), Some(&b"c"[..]));
        assert_eq!(body.pop_front(), None);
        // A one-element list equals a single frame.
        assert_eq!(
            Message::from(alloc::vec![Bytes::from_static(b"x")]),
            Message::from(Bytes::from_static(b"x"))
        );
        assert_eq!(
            Message::from(Bytes::from_static(b"x")).into_frames().len(),
            1
        );
        assert_eq!(Message::from(Bytes::from_static(b"xy")).byte_len(), 2);
    }

    /// Every operation on messages of 0 to 4 frames, each built every way (from a list, one
    /// frame at a time from either end, by popping one of more), against the same on a list.
    #[test]
    fn frames_in_place_and_in_a_list_behave_alike() {
        let frame = |i: usize| Bytes::from(alloc::format!("f{i}"));
        let builds = |n: usize| -> Vec<Message> {
            let list: Vec<Bytes> = (0..n).map(frame).collect();
            let mut back = Message::new();
            let mut front = Message::new();
            for i in 0..n {
                back.push_back(frame(i));
                front.push_front(frame(n - 1 - i));
            }
            // One frame more, the first popped.
            let mut popped = Message::from(
                core::iter::once(frame(99))
                    .chain((0..n).map(frame))
                    .collect::<Vec<_>>(),
            );
            popped.pop_front();
            alloc::vec![Message::from(list), back, front, popped]
        };
        for n in 0..=4 {
            let list: Vec<Bytes> = (0..n).map(frame).collect();
            for m in builds(n) {
                assert_eq!(m.frames(), &list[..], "{n} frames");
                assert_eq!(m.len(), n);
                assert_eq!(m.clone().into_frames(), list);
                assert_eq!(m.clone().into_iter().collect::<Vec<_>>(), list);
                for at in 0..=n + 1 {
                    let mut head = m.clone();
                    let rest = head.split_off(at);
                    let cut = at.min(n);
                    assert_eq!(head.frames(), &list[..cut], "{n} frames split at {at}");
                    assert_eq!(rest.frames(), &list[cut..], "{n} frames split at {at}");
                    let mut joined = rest;
                    joined.prepend(head);
                    assert_eq!(joined.frames(), &list[..], "{n} frames split at {at}");
                }
                let mut popped = m.clone();
                for f in &list {
                    assert_eq!(popped.pop_front().as_ref(), Some(f));
                }
                assert!(popped.pop_front().is_none() && popped.is_empty());
                let mut grown = m.clone();
                grown.push_back(frame(n));
                assert_eq!(grown.frames(), &(0..=n).map(frame).collect::<Vec<_>>()[..]);
            }
        }
    }

    #[test]
    fn text_of_one_frame_and_of_several() {
        assert_eq!(Message::from("héllo").to_str(), Ok("héllo"));
        assert_eq!(Message::from("").to_str(), Ok(""));
        assert_eq!(Message::new().to_str(), Err(TextError::Frames(0)));
        assert_eq!(
            Message::from(["a", "b", "c"]).to_str(),
            Err(TextError::Frames(3))
        );
        let bad = Message::from(&b"a\xffb"[..]).to_str().unwrap_err();
        assert!(matches!(bad, TextError::Utf8(e) if e.valid_up_to() == 1));
        assert_eq!(
            alloc::format!("{}", TextError::Frames(2)),
            "a message of 2 frames is not one text"
        );
    }

    #[test]
    fn display_is_lossy_text_with_separated_frames() {
        use alloc::string::ToString;
        assert_eq!(Message::new().to_string(), "");
        assert_eq!(Message::from("hello").to_string(), "hello");
        assert_eq!(Message::from(["a", "", "c"]).to_string(), "a |  | c");
        // Each invalid sequence becomes one replacement character, as from_utf8_lossy.
        let raw: &[u8] = b"x\xff\xfey\xe2\x82";
        assert_eq!(
            Message::from(raw).to_string(),
            alloc::string::String::from_utf8_lossy(raw)
        );
        assert_eq!(
            Message::from([&b"\xff"[..], b"ok"]).to_string(),
            "\u{FFFD} | ok"
        );
    }
}
