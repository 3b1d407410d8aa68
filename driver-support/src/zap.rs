//! Talking to a ZAP handler socket (RFC 27) the way libzmq does.
//!
//! libzmq asks the handler a program binds at `inproc://zeromq.zap.01` in the same
//! context, over a DEALER-like pipe: each request is one message, an empty delimiter then
//! the RFC 27 frames; each reply comes back the same way, and libzmq checks it before it
//! applies the verdict. A driver that asks such a handler (the async drivers, the `mio`
//! reactor) builds its requests with [`request_message`] and reads the replies with
//! [`read_reply`], so that every driver checks a reply alike.
//!
//! ```
//! use zmtp_driver::zap;
//! use zmtp_proto::codec::Mechanism;
//! use zmtp_proto::socket::{AuthReply, ZapRequest};
//! use zmtp_proto::Bytes;
//!
//! let request = ZapRequest {
//!     domain: Bytes::from_static(b"global"),
//!     address: "192.0.2.7".into(),
//!     identity: Bytes::new(),
//!     mechanism: Mechanism::PLAIN,
//!     credentials: vec![Bytes::from_static(b"admin"), Bytes::from_static(b"secret")],
//! };
//! let message = zap::request_message(&request, b"1");
//! let frames = message.frames();
//! assert!(frames[0].is_empty(), "the delimiter a REP handler strips");
//! assert_eq!(&frames[1][..], b"1.0");
//! assert_eq!(&frames[6][..], b"PLAIN");
//!
//! // A REP handler's reply, with the delimiter it puts back in front.
//! let reply: Vec<Bytes> = ["", "1.0", "1", "200", "OK", "admin", ""]
//!     .iter()
//!     .map(|f| Bytes::from_static(f.as_bytes()))
//!     .collect();
//! assert_eq!(zap::reply_request_id(&reply).map(|id| &id[..]), Some(&b"1"[..]));
//! match zap::read_reply(&reply, b"1") {
//!     AuthReply::Verdict { status, user_id, .. } => {
//!         assert_eq!(status, 200);
//!         assert_eq!(&user_id[..], b"admin");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```

use zmtp_proto::socket::monitor::protocol_error;
use zmtp_proto::socket::{AuthReply, Message, ZapRequest};
use zmtp_proto::Bytes;

/// The `inproc://` name a ZAP handler binds (RFC 27).
pub const HANDLER_NAME: &str = "zeromq.zap.01";

/// The frames of a reply: the delimiter and the six of RFC 27.
const REPLY_FRAMES: usize = 7;

/// The message that asks the handler about `request`: an empty delimiter (for a REP
/// handler), then version, `request_id`, domain, address, identity, mechanism and
/// credentials.
pub fn request_message(request: &ZapRequest, request_id: &[u8]) -> Message {
    let mut frames = vec![Bytes::new()];
    frames.extend(request.to_frames(request_id));
    Message::from(frames)
}

/// The request id a reply carries, when it has one where RFC 27 puts it (after the
/// delimiter and the version), to find the request it answers.
pub fn reply_request_id(frames: &[Bytes]) -> Option<&Bytes> {
    match frames {
        [delimiter, _version, id, ..] if delimiter.is_empty() => Some(id),
        _ => None,
    }
}

/// Read a handler's reply to the request sent with `request_id`, checked as libzmq checks
/// it, in its order: seven frames (`ZAP_MALFORMED_REPLY`), an empty delimiter
/// (`ZAP_UNSPECIFIED`), then what [`AuthReply::from_frames`] checks. A reply that fails
/// a check is [`AuthReply::Invalid`] with that code.
pub fn read_reply(frames: &[Bytes], request_id: &[u8]) -> AuthReply {
    if frames.len() != REPLY_FRAMES {
        return AuthReply::Invalid {
            code: protocol_error::ZAP_MALFORMED_REPLY,
        };
    }
    match frames.split_first() {
        Some((delimiter, rest)) if delimiter.is_empty() => AuthReply::from_frames(rest, request_id),
        _ => AuthReply::Invalid {
            code: protocol_error::ZAP_UNSPECIFIED,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(f: &[&'static str]) -> Vec<Bytes> {
        f.iter().map(|f| Bytes::from_static(f.as_bytes())).collect()
    }

    fn code(reply: AuthReply) -> u32 {
        match reply {
            AuthReply::Invalid { code } => code,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn replies_are_checked_in_libzmq_order() {
        use protocol_error as p;
        let ok = frames(&["", "1.0", "1", "200", "OK", "user", ""]);
        assert!(matches!(
            read_reply(&ok, b"1"),
            AuthReply::Verdict { status: 200, .. }
        ));
        // One frame too many or too few, whatever else is wrong.
        let long = frames(&["", "x", "1", "200", "OK", "user", "", ""]);
        assert_eq!(code(read_reply(&long, b"1")), p::ZAP_MALFORMED_REPLY);
        assert_eq!(code(read_reply(&ok[1..], b"1")), p::ZAP_MALFORMED_REPLY);
        let no_delimiter = frames(&["x", "1.0", "1", "200", "OK", "user", ""]);
        assert_eq!(code(read_reply(&no_delimiter, b"1")), p::ZAP_UNSPECIFIED);
        let version = frames(&["", "2.0", "x", "200", "OK", "user", ""]);
        assert_eq!(code(read_reply(&version, b"1")), p::ZAP_BAD_VERSION);
        assert_eq!(code(read_reply(&ok, b"2")), p::ZAP_BAD_REQUEST_ID);
        for status in ["", "20", "201", "600", "2000", "abc"] {
            let mut r = ok.clone();
            r[3] = Bytes::from_static(status.as_bytes());
            assert_eq!(code(read_reply(&r, b"1")), p::ZAP_INVALID_STATUS_CODE);
        }
        let metadata = frames(&["", "1.0", "1", "200", "OK", "user", "\x05Ab"]);
        assert_eq!(code(read_reply(&metadata, b"1")), p::ZAP_INVALID_METADATA);
        // Every valid status is a verdict, with the user id and properties given.
        for status in [200u16, 300, 400, 500] {
            let mut r = ok.clone();
            r[3] = Bytes::from(status.to_string());
            r[6] = Bytes::from_static(b"\x05Hello\x00\x00\x00\x05World");
            assert_eq!(
                read_reply(&r, b"1"),
                AuthReply::Verdict {
                    status,
                    user_id: Bytes::from_static(b"user"),
                    metadata: Bytes::from_static(b"\x05Hello\x00\x00\x00\x05World"),
                }
            );
        }
    }

    #[test]
    fn a_request_is_a_delimiter_then_rfc_27() {
        use zmtp_proto::codec::Mechanism;
        let request = ZapRequest {
            domain: Bytes::from_static(b"dom"),
            address: "127.0.0.1".into(),
            identity: Bytes::from_static(b"IDENT"),
            mechanism: Mechanism::CURVE,
            credentials: vec![Bytes::from(vec![7u8; 32])],
        };
        let m = request_message(&request, b"42");
        let f = m.frames();
        assert_eq!(f.len(), 8);
        assert_eq!(
            &f[..7],
            &frames(&["", "1.0", "42", "dom", "127.0.0.1", "IDENT", "CURVE"])[..]
        );
        assert_eq!(&f[7][..], &[7u8; 32][..]);
        assert_eq!(reply_request_id(f).map(|b| &b[..]), Some(&b"42"[..]));
        assert_eq!(reply_request_id(&f[1..]), None);
    }
}
