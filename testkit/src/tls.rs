//! The test certificates of `wss://` (PEM; see `tls/README.md` in this crate): a CA, a
//! server certificate it signed for `localhost`, `127.0.0.1` and `::1` with its key, and an
//! unrelated CA that must not be trusted for it.

use std::path::PathBuf;

/// The CA that signed [`SERVER_CERT`].
pub const CA: &[u8] = include_bytes!("../tls/ca.pem");
/// A server certificate for `localhost`, `127.0.0.1` and `::1`, signed by [`CA`].
pub const SERVER_CERT: &[u8] = include_bytes!("../tls/server.pem");
/// [`SERVER_CERT`]'s private key.
pub const SERVER_KEY: &[u8] = include_bytes!("../tls/server.key");
/// A CA that did not sign [`SERVER_CERT`].
pub const OTHER_CA: &[u8] = include_bytes!("../tls/other-ca.pem");

/// The path of one of the files (`ca.pem`, `server.pem`, `server.key`, `other-ca.pem`),
/// for programs that take files.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tls")
        .join(name)
}
