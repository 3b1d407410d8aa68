//! The datagrams of the `udp://` transport, as libzmq 4.3.5 sends and reads them: RADIO/DISH
//! datagrams and DGRAM's address frame. Stateless and allocation-free.
//!
//! UDP carries no ZMTP at all: no greeting, no handshake, no frames, no commands. Each
//! message is one datagram, so this module only turns a message into the bytes of one
//! datagram and back. Everything else (sockets, multicast membership, which peer a datagram
//! came from) belongs to the driver, and the endpoint forms to
//! [`socket::endpoint::UdpEndpoint`](crate::socket::endpoint::UdpEndpoint) (with the `alloc`
//! feature).
//!
//! # Who may use udp
//! Over `udp://` a RADIO may only connect, a DISH or DGRAM only bind, and no other type may
//! use it ([`may_bind_udp`], [`may_connect_udp`]; with the `alloc` feature
//! [`Endpoint::check_bind_for`](crate::socket::Endpoint::check_bind_for) and
//! [`Endpoint::check_connect_for`](crate::socket::Endpoint::check_connect_for) make these
//! checks together with the endpoint's own).
//!
//! # RADIO and DISH
//! A datagram is `[u8 group length][group][body]`, one single-frame message each; an empty
//! body is fine. `02 67 31 68 65 6c 6c 6f` is group `g1`, body `hello`. A DISH's JOIN and
//! LEAVE never go on the wire: a RADIO sends every message to its destination, and the
//! receiving DISH filters by the groups it joined.
//!
//! - **Send** ([`RadioDatagram::emit`], or [`RadioDatagram::emit_header`] followed by the
//!   body for a vectored send). libzmq's sender writes the length as a `u8` and checks
//!   nothing; a libzmq DISH reads the length as a *signed* char, so a group of 128 bytes or
//!   more aborts it. We therefore refuse to send groups longer than [`UDP_GROUP_MAX_LEN`]
//!   (127) bytes ([`DatagramEmitError::GroupTooLongForUdp`]), although a group may have up
//!   to 255 bytes over tcp. libzmq receives into an 8,192-byte buffer and silently
//!   truncates longer datagrams, so we refuse to send datagrams longer than
//!   [`MAX_DATAGRAM_LEN`] ([`DatagramEmitError::DatagramTooLong`]).
//! - **Receive** ([`RadioDatagram::parse`]). An empty datagram, or one whose group length
//!   runs past its end, is a [`DatagramError`]: libzmq drops such a datagram, and so should
//!   the caller (it is not a reason to close anything: UDP has no connection). A group
//!   length byte of 128 to 255 is read as unsigned and accepted, which is what libzmq's
//!   sender means by it and still within the 255-byte group limit of RADIO/DISH. A datagram
//!   of any length parses; a driver that receives into a buffer of [`MAX_DATAGRAM_LEN`]
//!   bytes truncates as libzmq does, a larger buffer (up to 65,507 bytes, the largest UDP
//!   payload over IPv4) keeps what a non-libzmq sender sent.
//!
//! ```
//! use zmtp_proto::udp::{RadioDatagram, MAX_DATAGRAM_LEN};
//!
//! let mut out = [0u8; MAX_DATAGRAM_LEN];
//! let n = RadioDatagram { group: b"g1", body: b"hello" }.emit(&mut out).unwrap();
//! assert_eq!(&out[..n], b"\x02g1hello");
//!
//! let received = RadioDatagram::parse(&out[..n]).unwrap();
//! assert_eq!((received.group, received.body), (&b"g1"[..], &b"hello"[..]));
//! ```
//!
//! # DGRAM
//! A DGRAM socket's messages have two frames: the peer's address as text, `"a.b.c.d:port"`
//! (IPv4 only), then the body. Only the body goes on the wire: one datagram, with nothing
//! around it.
//!
//! - **Receive:** for a datagram from `peer`, deliver `[address][body]`, the address frame
//!   (with MORE) made by [`emit_dgram_address`]. It ends with a NUL byte, byte for byte what
//!   a libzmq DGRAM delivers (`"192.0.2.1:5555\0"`), so an application written for libzmq
//!   can send it back unchanged. libzmq only takes IPv4 sources (it asserts on others):
//!   drop a datagram from an IPv6 peer.
//! - **Send:** the application sends `[address][body]`, the address with MORE and the body
//!   without (libzmq's `EINVAL` otherwise). Read the destination with
//!   [`parse_dgram_address`], which takes the frame with or without its trailing NUL. libzmq
//!   drops a message whose address does not parse, without an error to the sender; do the
//!   same. Check the body with [`check_dgram_body`] (the same 8,192-byte limit as above:
//!   libzmq's sender overflows its buffer past it, its receiver truncates), then send the
//!   body to the address as one datagram.
//!
//! ```
//! use core::net::{Ipv4Addr, SocketAddrV4};
//! use zmtp_proto::udp::{emit_dgram_address, parse_dgram_address, DGRAM_ADDRESS_MAX_LEN};
//!
//! let peer = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 5555);
//! let mut frame = [0u8; DGRAM_ADDRESS_MAX_LEN];
//! let n = emit_dgram_address(peer, &mut frame).unwrap();
//! assert_eq!(&frame[..n], b"192.0.2.1:5555\0");
//! assert_eq!(parse_dgram_address(&frame[..n]), Ok(peer));
//! assert_eq!(parse_dgram_address(b"192.0.2.1:5555"), Ok(peer));
//! ```

use core::fmt;
use core::net::{Ipv4Addr, SocketAddrV4};

use crate::codec::{ensure, InsufficientSize, Writer};
use crate::SocketType;

/// The longest datagram we send, in bytes: the size of libzmq's receive buffer
/// (`MAX_UDP_MSG`). libzmq truncates longer datagrams without telling anyone, and its sender
/// overflows its own buffer when asked to send one.
pub const MAX_DATAGRAM_LEN: usize = 8192;

/// The longest group we send over UDP, in bytes. A libzmq DISH reads the group length as a
/// signed char: a length of 128 or more aborts it. Over tcp a group may have up to 255
/// bytes.
pub const UDP_GROUP_MAX_LEN: usize = 127;

/// The longest body that fits one RADIO datagram with an empty group:
/// [`MAX_DATAGRAM_LEN`] less the length byte. A group takes its length off this too.
pub const RADIO_BODY_MAX_LEN: usize = MAX_DATAGRAM_LEN - 1;

/// The longest DGRAM address frame, trailing NUL included: `"255.255.255.255:65535\0"`.
pub const DGRAM_ADDRESS_MAX_LEN: usize = 22;

/// Whether a socket of this type may bind a `udp://` endpoint: only DISH and DGRAM may
/// (libzmq's `ENOCOMPATPROTO` for every other type).
pub const fn may_bind_udp(socket_type: SocketType) -> bool {
    matches!(socket_type, SocketType::Dish | SocketType::Dgram)
}

/// Whether a socket of this type may connect to a `udp://` endpoint: only RADIO may
/// (libzmq's `ENOCOMPATPROTO` for every other type, DGRAM included: a DGRAM binds and
/// names each message's destination in its address frame).
pub const fn may_connect_udp(socket_type: SocketType) -> bool {
    matches!(socket_type, SocketType::Radio)
}

/// One RADIO/DISH message as one datagram: `[u8 group length][group][body]`.
///
/// Both fields borrow: [`parse`](Self::parse) takes them from the datagram without a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RadioDatagram<'a> {
    /// The group: up to [`UDP_GROUP_MAX_LEN`] bytes to send, up to 255 received.
    pub group: &'a [u8],
    /// The body, possibly empty.
    pub body: &'a [u8],
}

impl<'a> RadioDatagram<'a> {
    /// Reads a received datagram.
    ///
    /// The group length byte is read as unsigned, so groups of 128 to 255 bytes, which a
    /// libzmq DISH cannot take, are accepted. Bytes after the group are the body. Errors,
    /// on which libzmq drops the datagram: an empty datagram, a group length running past
    /// the end.
    pub fn parse(datagram: &'a [u8]) -> Result<RadioDatagram<'a>, DatagramError> {
        let (&len, rest) = datagram.split_first().ok_or(DatagramError::Empty)?;
        let group_len = usize::from(len);
        if group_len > rest.len() {
            return Err(DatagramError::GroupPastEnd {
                group_len: len,
                datagram_len: datagram.len(),
            });
        }
        let (group, body) = rest.split_at(group_len);
        Ok(RadioDatagram { group, body })
    }

    /// The length of the datagram: 1 + group + body.
    pub fn datagram_len(&self) -> usize {
        self.header_len().saturating_add(self.body.len())
    }

    /// The length of what [`emit_header`](Self::emit_header) writes: 1 + group.
    pub fn header_len(&self) -> usize {
        1 + self.group.len()
    }

    /// Checks the limits we keep on what we send: a group of at most
    /// [`UDP_GROUP_MAX_LEN`] bytes, a datagram of at most [`MAX_DATAGRAM_LEN`].
    pub fn check(&self) -> Result<(), DatagramEmitError> {
        if self.group.len() > UDP_GROUP_MAX_LEN {
            return Err(DatagramEmitError::GroupTooLongForUdp {
                len: self.group.len(),
            });
        }
        check_len(self.datagram_len())
    }

    /// Writes the datagram into `out` and returns its length.
    ///
    /// Fails, writing nothing meaningful, when [`check`](Self::check) does or when `out` is
    /// shorter than [`datagram_len`](Self::datagram_len) ([`DatagramEmitError::InsufficientSize`]).
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, DatagramEmitError> {
        self.check()?;
        ensure(out, self.datagram_len())?;
        let mut w = Writer::new(out);
        self.put_header(&mut w)?;
        w.put(self.body)?;
        Ok(w.len())
    }

    /// Writes the group length byte and the group into `out` and returns how many bytes it
    /// wrote ([`header_len`](Self::header_len)); the body is to be sent right after it, as
    /// the second part of one vectored send (`sendmsg` with two buffers), with no copy.
    ///
    /// The limits are checked for the whole datagram, body included, as by
    /// [`emit`](Self::emit).
    pub fn emit_header(&self, out: &mut [u8]) -> Result<usize, DatagramEmitError> {
        self.check()?;
        ensure(out, self.header_len())?;
        let mut w = Writer::new(out);
        self.put_header(&mut w)?;
        Ok(w.len())
    }

    fn put_header(&self, w: &mut Writer<'_>) -> Result<(), InsufficientSize> {
        // `check` made sure the length fits in 7 bits.
        let len = u8::try_from(self.group.len()).unwrap_or(u8::MAX);
        w.put(&[len])?;
        w.put(self.group)
    }
}

/// Checks the body of a DGRAM message before it is sent: it is the whole datagram, so it
/// may have at most [`MAX_DATAGRAM_LEN`] bytes.
pub fn check_dgram_body(body: &[u8]) -> Result<(), DatagramEmitError> {
    check_len(body.len())
}

fn check_len(len: usize) -> Result<(), DatagramEmitError> {
    if len > MAX_DATAGRAM_LEN {
        Err(DatagramEmitError::DatagramTooLong { len })
    } else {
        Ok(())
    }
}

/// Why a received RADIO/DISH datagram cannot be read. libzmq drops such a datagram; so
/// should the caller (count it, log it, but keep the socket).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatagramError {
    /// The datagram has no bytes at all, so not even a group length.
    Empty,
    /// The group length byte announces more bytes than the rest of the datagram holds.
    GroupPastEnd {
        /// The announced group length.
        group_len: u8,
        /// The whole datagram's length, the length byte included.
        datagram_len: usize,
    },
}

impl fmt::Display for DatagramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatagramError::Empty => f.write_str("empty datagram: no group length"),
            DatagramError::GroupPastEnd {
                group_len,
                datagram_len,
            } => write!(
                f,
                "group of {group_len} bytes does not fit a datagram of {datagram_len} bytes"
            ),
        }
    }
}

/// Why a message cannot be sent as a datagram.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramEmitError {
    /// The group has more than [`UDP_GROUP_MAX_LEN`] (127) bytes: a libzmq DISH reads the
    /// length byte as signed and aborts on 128 or more.
    GroupTooLongForUdp {
        /// The group's length.
        len: usize,
    },
    /// The datagram would have more than [`MAX_DATAGRAM_LEN`] bytes, which a libzmq
    /// receiver truncates without notice.
    DatagramTooLong {
        /// The datagram's length.
        len: usize,
    },
    /// The output buffer is too small (nothing else is wrong).
    InsufficientSize(InsufficientSize),
}

impl From<InsufficientSize> for DatagramEmitError {
    fn from(e: InsufficientSize) -> DatagramEmitError {
        DatagramEmitError::InsufficientSize(e)
    }
}

impl fmt::Display for DatagramEmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatagramEmitError::GroupTooLongForUdp { len } => write!(
                f,
                "a group of {len} bytes is longer than {UDP_GROUP_MAX_LEN}, the most a udp \
                 DISH takes"
            ),
            DatagramEmitError::DatagramTooLong { len } => write!(
                f,
                "a datagram of {len} bytes is longer than {MAX_DATAGRAM_LEN}"
            ),
            DatagramEmitError::InsufficientSize(e) => e.fmt(f),
        }
    }
}

/// Writes the DGRAM address frame for `addr` into `out`: `"a.b.c.d:port"` followed by a NUL
/// byte, as a libzmq DGRAM delivers it, at most [`DGRAM_ADDRESS_MAX_LEN`] bytes. Returns the
/// frame's length.
pub fn emit_dgram_address(addr: SocketAddrV4, out: &mut [u8]) -> Result<usize, InsufficientSize> {
    let mut text = TextBuf {
        buf: [0; DGRAM_ADDRESS_MAX_LEN],
        len: 0,
    };
    // The longest address and port fit the buffer, so this cannot fail.
    let _ = fmt::Write::write_fmt(&mut text, format_args!("{}:{}\0", addr.ip(), addr.port()));
    let frame = text.buf.get(..text.len).unwrap_or_default();
    let mut w = Writer::new(out);
    w.put(frame)?;
    Ok(w.len())
}

/// Reads a DGRAM address frame: `"a.b.c.d:port"`, with or without one trailing NUL byte.
///
/// The address is a dotted quad of decimal numbers, the port a decimal number from 1 to
/// 65535. This is stricter than libzmq, whose `inet_addr` also takes forms such as
/// `127.1` or `0x7f.0.0.1` and whose `atoi` lets a port past 65535 wrap around; such a frame
/// is refused here rather than sent somewhere unexpected. Host names and IPv6 are refused
/// by libzmq too.
pub fn parse_dgram_address(frame: &[u8]) -> Result<SocketAddrV4, DgramAddressError> {
    let text = frame.strip_suffix(b"\0").unwrap_or(frame);
    let colon = text
        .iter()
        .rposition(|&b| b == b':')
        .ok_or(DgramAddressError::MissingPort)?;
    let (host, port) = text.split_at(colon);
    let port = port.get(1..).unwrap_or_default();
    let ip: Ipv4Addr = core::str::from_utf8(host)
        .ok()
        .and_then(|h| h.parse().ok())
        .ok_or(DgramAddressError::BadIpv4)?;
    let port = if !port.is_empty() && port.iter().all(u8::is_ascii_digit) {
        core::str::from_utf8(port)
            .ok()
            .and_then(|p| p.parse::<u16>().ok())
    } else {
        None
    };
    match port {
        Some(p) if p != 0 => Ok(SocketAddrV4::new(ip, p)),
        _ => Err(DgramAddressError::BadPort),
    }
}

/// Why a DGRAM address frame does not name an IPv4 address and port. libzmq drops a
/// message whose address frame does not parse, and the sender is not told.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DgramAddressError {
    /// The frame has no `:` before a port.
    MissingPort,
    /// The text before the last `:` is not a dotted-quad IPv4 address.
    BadIpv4,
    /// The text after the last `:` is not a decimal port from 1 to 65535.
    BadPort,
}

impl fmt::Display for DgramAddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DgramAddressError::MissingPort => "DGRAM address has no port (a.b.c.d:port)",
            DgramAddressError::BadIpv4 => "DGRAM address is not a dotted-quad IPv4 address",
            DgramAddressError::BadPort => "DGRAM address port is not a number from 1 to 65535",
        })
    }
}

/// Formats into a fixed buffer; what does not fit is an error.
struct TextBuf {
    buf: [u8; DGRAM_ADDRESS_MAX_LEN],
    len: usize,
}

impl fmt::Write for TextBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for DatagramError {}

#[cfg(feature = "std")]
impl std::error::Error for DatagramEmitError {}

#[cfg(feature = "std")]
impl std::error::Error for DgramAddressError {}
