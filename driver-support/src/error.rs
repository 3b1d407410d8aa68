//! The drivers' error type.
//!
//! `zmtp-tokio`, `zmtp-smol` (through `zmtp-async`) and `zmtp-mio` re-export [`Error`] as
//! their own `Error`, so one type describes failures whichever driver runs the socket.

use std::fmt;
use std::io;

use zmtp_proto::socket::{EndpointError, GroupError, Message, MetadataError, SendError, TextError};
use zmtp_proto::z85::Z85Error;
use zmtp_proto::ConfigError;

/// Why an operation of a driver's socket failed.
///
/// Some variants come from one kind of driver only; each says which.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// The endpoint is malformed or cannot be used this way.
    Endpoint(EndpointError),
    /// The operating system refused (a host name that does not resolve...).
    Io(io::Error),
    /// Binding an endpoint failed: the endpoint, and why (the address is in use, a host
    /// name does not resolve, `wss://` without a certificate...). Displayed as
    /// `tcp://127.0.0.1:5555: address already in use`.
    Bind {
        /// The endpoint, as given to `bind`.
        endpoint: String,
        /// Why it could not be bound.
        source: io::Error,
    },
    /// An option value is invalid (e.g. a routing id over 255 bytes).
    Options(ConfigError),
    /// No such endpoint to unbind or disconnect.
    NotFound,
    /// A socket was created outside a runtime (for `zmtp-tokio`, outside a tokio
    /// runtime). Async drivers only.
    NoRuntime,
    /// The socket is closed.
    Closed,
    /// The operation did not complete within its timeout (`EAGAIN` after SNDTIMEO or
    /// RCVTIMEO). Blocking driver (`zmtp-mio`) only: the async drivers leave timeouts to
    /// the runtime.
    Timeout,
    /// The operation is not offered (libzmq's `ENOTSUP`): by this socket type (`recv` on
    /// a PUB or PUSH, which never receive; `subscribe` on a type other than SUB and
    /// XSUB), or by this driver (`inproc://` in `zmtp-mio`, whose sockets belong to no
    /// async runtime). Returned at once, whatever the socket's state.
    Unsupported,
    /// The socket refused a message, for the reason given, with the message handed back
    /// ([`SendError::into_message`]): a REQ sending before its reply came (`EFSM`), a
    /// ROUTER with `ROUTER_MANDATORY` and no such peer (`EHOSTUNREACH`), a type that does
    /// not send (`ENOTSUP`), no peer with room (`EAGAIN`). What `?` makes of a refused
    /// `send` in a function returning this type.
    Send(SendError),
    /// A message received as text (`recv_string`) is not: it has several frames, or its
    /// frame is not UTF-8 ([`Message::to_str`]). The message is handed over, taken from
    /// the socket all the same.
    NotText {
        /// Why it is not text.
        reason: TextError,
        /// The message received.
        message: Message,
    },
    /// A DISH's `join` of a group already joined or longer than 255 bytes, or `leave` of
    /// one not joined (libzmq's `EINVAL`). `join` on another type is [`Error::Unsupported`].
    Group(GroupError),
    /// A routing id or group that cannot be set on a message ([`Message::set_routing_id`],
    /// [`Message::set_group`]): what `?` makes of their refusal.
    Metadata(MetadataError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Endpoint(e) => write!(f, "bad endpoint: {e}"),
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Bind { endpoint, source } => write!(f, "{endpoint}: {}", reason(source)),
            Error::Options(e) => write!(f, "bad option: {e}"),
            Error::NotFound => f.write_str("no such endpoint"),
            Error::NoRuntime => f.write_str("sockets must be created inside an async runtime"),
            Error::Closed => f.write_str("socket closed"),
            Error::Timeout => f.write_str("timed out"),
            Error::Unsupported => f.write_str("operation not supported"),
            Error::Send(e) => write!(f, "send refused: {e}"),
            Error::NotText { reason, .. } => write!(f, "not a text message: {reason}"),
            Error::Group(e) => write!(f, "group refused: {e}"),
            Error::Metadata(e) => write!(f, "message metadata refused: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) | Error::Bind { source: e, .. } => Some(e),
            Error::Send(e) => Some(e),
            Error::NotText { reason, .. } => Some(reason),
            Error::Options(e) => Some(e),
            Error::Group(e) => Some(e),
            Error::Metadata(e) => Some(e),
            _ => None,
        }
    }
}

/// An I/O error as the end of a sentence: the operating system's words without their
/// "(os error N)", starting in lowercase ("address already in use").
fn reason(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .map_or(text.clone(), str::to_owned),
        None => text,
    };
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        // "Address ..." but not "TLS ..." or "I/O ...".
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => {
            first.to_lowercase().chain(text.chars().skip(1)).collect()
        }
        _ => text,
    }
}

impl Error {
    /// A failed bind of `endpoint`: [`Error::Bind`].
    pub fn bind(endpoint: &str, source: io::Error) -> Error {
        Error::Bind {
            endpoint: endpoint.to_owned(),
            source,
        }
    }

    /// The text of a received message, owned, or [`Error::NotText`] with the message: what
    /// the drivers' `recv_string` makes of what `recv` gives.
    pub fn text_of(message: Message) -> Result<String, Error> {
        match message.to_str() {
            Ok(text) => Ok(text.to_owned()),
            Err(reason) => Err(Error::NotText { reason, message }),
        }
    }
}

impl From<EndpointError> for Error {
    fn from(e: EndpointError) -> Error {
        Error::Endpoint(e)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

/// A refused send. A socket that is closing refuses with [`Error::Closed`], as `recv` does;
/// any other refusal keeps its reason and the message ([`Error::Send`]).
impl From<SendError> for Error {
    fn from(e: SendError) -> Error {
        match e {
            SendError::Closed(_) => Error::Closed,
            e => Error::Send(e),
        }
    }
}

/// A refused `join` or `leave`: [`Error::Unsupported`] on a type other than DISH,
/// [`Error::Group`] otherwise.
impl From<GroupError> for Error {
    fn from(e: GroupError) -> Error {
        match e {
            GroupError::NotDish => Error::Unsupported,
            e => Error::Group(e),
        }
    }
}

impl From<MetadataError> for Error {
    fn from(e: MetadataError) -> Error {
        Error::Metadata(e)
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Options(e)
    }
}

/// A CURVE key in Z85 text that is not one: an option value that cannot be used
/// ([`Error::Options`] with [`ConfigError::BadKey`]).
impl From<Z85Error> for Error {
    fn from(e: Z85Error) -> Error {
        Error::Options(ConfigError::BadKey(e))
    }
}

#[cfg(test)]
mod tests {
    use super::Error;
    use std::io;

    #[test]
    fn conversions_and_messages() {
        let e: Error = io::Error::from(io::ErrorKind::AddrInUse).into();
        assert!(matches!(&e, Error::Io(io) if io.kind() == io::ErrorKind::AddrInUse));
        assert!(e.to_string().starts_with("I/O error: "));
        // The operating system's own error, as a second bind of one address gets it.
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = first.local_addr().unwrap();
        let in_use = std::net::TcpListener::bind(addr).unwrap_err();
        let e = Error::bind(&format!("tcp://{addr}"), in_use);
        assert_eq!(
            e.to_string(),
            format!("tcp://{addr}: address already in use")
        );
        let source = std::error::Error::source(&e).expect("the I/O error");
        assert!(source.to_string().contains("(os error"), "{source}");
        let e = Error::bind(
            "wss://127.0.0.1:1",
            io::Error::new(io::ErrorKind::InvalidInput, "TLS: no certificate"),
        );
        assert_eq!(e.to_string(), "wss://127.0.0.1:1: TLS: no certificate");
        assert_eq!(Error::Timeout.to_string(), "timed out");
        assert_eq!(Error::Closed.to_string(), "socket closed");
        let boxed: Box<dyn std::error::Error> = Box::new(Error::NotFound);
        assert_eq!(boxed.to_string(), "no such endpoint");
    }

    #[test]
    fn bad_keys_and_credentials_are_option_errors() {
        use zmtp_proto::mechanism::Security;
        use zmtp_proto::z85::Z85Error;
        use zmtp_proto::{ConfigError, PublicKey};
        fn configure(user: &str, key: &str) -> Result<(Security, PublicKey), Error> {
            Ok((
                Security::plain_client(user, "pw")?,
                key.parse::<PublicKey>()?,
            ))
        }
        let key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
        assert!(configure("admin", key).is_ok());
        let e = configure(&"u".repeat(256), key).unwrap_err();
        assert!(matches!(e, Error::Options(ConfigError::UsernameTooLong)));
        let e = configure("admin", &key[1..]).unwrap_err();
        assert!(matches!(
            e,
            Error::Options(ConfigError::BadKey(Z85Error::BadLength))
        ));
        assert!(e.to_string().contains("bad CURVE key"), "{e}");
        let source = std::error::Error::source(&e).expect("the option error");
        assert!(source.source().is_some(), "the Z85 error under it");
    }

    #[test]
    fn a_refused_send_converts_with_its_reason_and_message() {
        use zmtp_proto::socket::{Message, SendError};
        fn send_then_fail(refusal: SendError) -> Result<(), Error> {
            Err(refusal)?;
            Ok(())
        }
        let e = send_then_fail(SendError::InvalidState(Message::from("again"))).unwrap_err();
        assert!(e.to_string().starts_with("send refused: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        match e {
            Error::Send(SendError::InvalidState(m)) => assert_eq!(m, Message::from("again")),
            other => panic!("{other:?}"),
        }
        let closed = send_then_fail(SendError::Closed(Message::new())).unwrap_err();
        assert!(matches!(closed, Error::Closed));
    }

    #[test]
    fn text_of_a_message_or_the_message_back() {
        use zmtp_proto::socket::{Message, TextError};
        assert_eq!(Error::text_of(Message::from("hi")).unwrap(), "hi");
        let two = Message::from(["a", "b"]);
        match Error::text_of(two.clone()).unwrap_err() {
            Error::NotText { reason, message } => {
                assert_eq!(reason, TextError::Frames(2));
                assert_eq!(message, two);
            }
            other => panic!("{other:?}"),
        }
        let e = Error::text_of(Message::from(&b"\xff"[..])).unwrap_err();
        assert!(e.to_string().starts_with("not a text message: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(Error::Unsupported.to_string(), "operation not supported");
    }
}
