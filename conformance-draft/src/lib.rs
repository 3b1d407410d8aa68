//! A second libzmq interop peer: libzmq 4.3.5 with the draft API, built from source and
//! linked statically, for the draft socket types (CLIENT/SERVER, RADIO/DISH,
//! SCATTER/GATHER, PEER, CHANNEL).
//!
//! Debian's libzmq 4.3.4, the peer of `zmtp-conformance`, exports none of the draft
//! functions. This package's build script compiles libzmq 4.3.5 (the source vendored in the
//! `zeromq-src` crate) with the draft API, `ws://` and CURVE through the system libsodium,
//! and links it into every executable of this package. Those executables must link no other
//! libzmq: the system `-lzmq` beside the static library would not fail at link time, the
//! linker would silently answer each call from whichever library it met first. So the draft
//! tests live in this package's own test binaries, and [`ensure_draft_libzmq`] proves which
//! library answered before anything is tested against it.
//!
//! - The whole stable API comes from [`zmtp_conformance::ffi`] ([`Ctx`](ffi::Ctx),
//!   [`ZSocket`](ffi::ZSocket), [`Msg`](ffi::Msg)), whose declarations name no library and
//!   so bind to the static build here.
//! - [`draft`] declares the draft functions and constants and adds them to those types:
//!   [`DraftZSocket`](draft::DraftZSocket) (`zmq_join`, `zmq_leave`, `zmq_connect_peer`,
//!   sending to a routing id or a group, receiving with both) and
//!   [`DraftMsg`](draft::DraftMsg) (`zmq_msg_set_routing_id`, `zmq_msg_group`, ...).
//! - [`maker`]: the draft libzmq as an implementation of the conformance suite's draft
//!   scenarios ([`maker::Libzmq`], a [`DraftMaker`](zmtp_conformance::draft::DraftMaker)),
//!   run against itself and against each of our drivers by `tests/draft_libzmq.rs`.
//!
//! This is test-support code: it favours clarity and bounded waits over performance.
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod draft;
pub mod maker;

pub use zmtp_conformance::ffi;

/// The libzmq version this package builds (`zeromq-src` 0.3.6 vendors libzmq 4.3.5).
pub const DRAFT_LIBZMQ_VERSION: (i32, i32, i32) = (4, 3, 5);

/// Check that the libzmq answering this executable's calls is the static draft build:
/// version [`DRAFT_LIBZMQ_VERSION`], `zmq_has("draft")` and `zmq_has("curve")`. Returns the
/// version found. Call it before testing anything against the peer.
///
/// # Panics
/// If another libzmq answers (the system library linked by mistake), or the build lacks
/// the draft API or CURVE.
pub fn ensure_draft_libzmq() -> (i32, i32, i32) {
    let version = ffi::version();
    let (major, minor, patch) = version;
    assert_eq!(
        version, DRAFT_LIBZMQ_VERSION,
        "the linked libzmq is {major}.{minor}.{patch}, not the static draft build"
    );
    assert!(
        ffi::has("draft"),
        "libzmq {major}.{minor}.{patch} was built without the draft API"
    );
    assert!(
        ffi::has("curve"),
        "libzmq {major}.{minor}.{patch} was built without CURVE (libsodium)"
    );
    version
}
