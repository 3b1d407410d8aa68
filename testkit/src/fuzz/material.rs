//! Fixed test material: clocks, entropy, keys and credentials shared by the bodies.

use zmtp_proto::curve_crypto::{KeyPair, SecretKey};
use zmtp_proto::mechanism::Security;
use zmtp_proto::{Instant, SocketType};

/// Where every virtual clock starts.
pub(crate) const START: Instant = crate::START;
/// Entropy of the connection under test (and of CURVE clients in pairs).
pub(crate) const LOCAL_ENTROPY: [u8; 32] = [0x11; 32];
/// Entropy of the other end of a pair.
pub(crate) const PEER_ENTROPY: [u8; 32] = [0x22; 32];
/// The `zmq_curve` test keys (libzmq `doc/zmq_curve.txt`), secret halves in Z85.
pub(crate) const CLIENT_SECRET_Z85: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
pub(crate) const SERVER_SECRET_Z85: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
pub(crate) const PLAIN_USER: &[u8] = b"admin";
pub(crate) const PLAIN_PASSWORD: &[u8] = b"secret";

pub(crate) fn client_keys() -> Option<KeyPair> {
    Some(KeyPair::from_secret(
        SecretKey::from_z85(CLIENT_SECRET_Z85).ok()?,
    ))
}

pub(crate) fn server_keys() -> Option<KeyPair> {
    Some(KeyPair::from_secret(
        SecretKey::from_z85(SERVER_SECRET_Z85).ok()?,
    ))
}

pub(crate) fn curve_client() -> Option<Security> {
    Some(Security::curve_client(
        server_keys()?.public,
        client_keys()?,
    ))
}

pub(crate) fn curve_server() -> Option<Security> {
    Some(Security::curve_server(server_keys()?))
}

/// Socket types for the connection body, chosen from the input: the standard ones.
pub(crate) const TYPES: &[SocketType] = SOCKET_TYPES.split_at(11).0;

/// Socket types for the socket body: [`TYPES`], then the draft types that work over
/// streams (DGRAM needs udp), each next to its partner.
pub(crate) const SOCKET_TYPES: &[SocketType] = &[
    SocketType::Pair,
    SocketType::Pub,
    SocketType::Sub,
    SocketType::XPub,
    SocketType::XSub,
    SocketType::Push,
    SocketType::Pull,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Dealer,
    SocketType::Router,
    SocketType::Client,
    SocketType::Server,
    SocketType::Radio,
    SocketType::Dish,
    SocketType::Scatter,
    SocketType::Gather,
    SocketType::Peer,
    SocketType::Channel,
];
