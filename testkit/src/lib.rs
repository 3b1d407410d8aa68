//! Test support for zmtp: harnesses that run the sans-IO core in memory with virtual
//! time, and the bodies of the fuzz targets. Not published; the other crates take it as a
//! dev-dependency (`fuzz/` as a dependency).
//!
//! | module | what |
//! |---|---|
//! | `programs` | (feature `programs`) the example programs of a crate, found and run by its tests as processes |
//! | [`pair`] | two [`Connection`](zmtp_proto::Connection)s joined in memory ([`pair::Pair`]), and a bare connection driven by hand with its calling contract checked ([`pair::raw`]) |
//! | [`cluster`] | a seeded network of [`Socket`](zmtp_proto::socket::Socket)s with virtual time, bounded links and random read sizes; streams can also end at the test itself ([`cluster::Remote`]), where a bare connection can play the peer ([`cluster::RawPeer`]) |
//! | [`message`] | short ways to build and compare socket messages and options |
//! | [`rng`] | the one deterministic PRNG of the tests |
//! | [`wire`] | bytes seen on the wire from libzmq, for wire tests and seeds |
//! | [`raw_peer`] | a ZMTP peer written by hand over a `TcpStream` for the hostile-peer suites, and the process's resident memory and open descriptors |
//! | [`fuzz`] | (feature `curve`, on by default) the body of every cargo-fuzz target in `fuzz/`, and their seed corpus |
//!
//! Every harness starts its clock at [`START`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod allocations;
pub mod cluster;
#[cfg(feature = "curve")]
pub mod fuzz;
pub mod limits;
pub mod message;
pub mod pair;
#[cfg(feature = "programs")]
pub mod programs;
pub mod raw_peer;
pub mod rng;
pub mod socks;
pub mod tls;
pub mod wire;

pub use rng::Rng;

use zmtp_proto::Instant;

/// Where every virtual clock of this crate starts (an arbitrary origin, away from zero so
/// that times before it can be expressed).
pub const START: Instant = Instant::from_millis(1_000);
