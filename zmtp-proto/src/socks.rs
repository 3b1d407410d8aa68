//! SOCKS5 (RFC 1928, with RFC 1929's username and password): what a connecting `tcp://`
//! stream says to a proxy before ZMTP when the socket has a proxy
//! ([`Options::socks_proxy`](crate::socket::Options::socks_proxy)), as libzmq's
//! `ZMQ_SOCKS_PROXY` does.
//!
//! The stream is opened to the proxy. We offer one method: none, or username and password
//! when a username is set (libzmq offers the same one); the proxy's choice of either is
//! taken. Then we ask the proxy to connect to the endpoint's host and port: an IPv4 or IPv6
//! literal as an address, a name as a name (the proxy resolves it; we look nothing up).
//! Once it answers with success, the stream is the endpoint's, and ZMTP starts on it. Any
//! other answer fails the stream with [`SocksError`], and the endpoint reconnects as after
//! any failed connection.

use core::fmt;

#[cfg(feature = "alloc")]
mod proxy;

#[cfg(feature = "alloc")]
pub(crate) use proxy::SocksClient;
#[cfg(feature = "alloc")]
pub use proxy::{SocksProxy, SocksProxyError};

/// Why the proxy did not give us a stream to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocksError {
    /// The proxy accepts none of the methods we offered (`0xff`).
    NoAcceptableMethod,
    /// The proxy chose a method we did not offer and do not speak.
    UnsupportedMethod(u8),
    /// The proxy refused our username and password (its status byte).
    AuthFailed(u8),
    /// The proxy could not connect to the endpoint (its reply code, 1 to 8).
    Refused(u8),
    /// The proxy's answer is not SOCKS5.
    Malformed,
}

impl fmt::Display for SocksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocksError::NoAcceptableMethod => {
                f.write_str("the proxy accepts none of the authentication methods offered")
            }
            SocksError::UnsupportedMethod(m) => {
                write!(
                    f,
                    "the proxy chose authentication method {m:#04x}, not offered"
                )
            }
            SocksError::AuthFailed(status) => write!(
                f,
                "the proxy refused the username and password (status {status})"
            ),
            SocksError::Refused(code) => {
                let why = match code {
                    1 => "general failure",
                    2 => "not allowed by its rules",
                    3 => "network unreachable",
                    4 => "host unreachable",
                    5 => "connection refused",
                    6 => "TTL expired",
                    7 => "command not supported",
                    8 => "address type not supported",
                    _ => "unknown reply",
                };
                write!(f, "the proxy could not connect: {why} (reply {code})")
            }
            SocksError::Malformed => f.write_str("the proxy's answer is not SOCKS5"),
        }
    }
}
