//! Fuzz target bodies (feature `curve`, on by default).
//!
//! Each `pub fn NAME(data: &[u8])` here is the whole body of the cargo-fuzz target
//! `fuzz/fuzz_targets/NAME.rs`, and is also run by this crate's `tests/fuzz_bodies.rs` over
//! the seed corpus and pseudo-random inputs, so that a plain `cargo test -p zmtp-testkit`
//! exercises every body. A body never panics on its own: every panic is either a panic in
//! the code under test or a failed `assert!` of an invariant, and both are findings.
//!
//! Everything is deterministic: time is virtual, CURVE keys are the `zmq_curve` test
//! keys and every connection's entropy is a constant, so that a crashing input replays
//! exactly and recorded peer bytes stay valid (a CURVE server's WELCOME answers the very
//! HELLO the connection under test sends again).
//!
//! The exception is `cabi` (feature `cabi`, which links the C ABI), which calls the C ABI itself (`zmtp-libzmq`): its contexts
//! have their I/O threads and real time, so an input may take different paths from run to
//! run, but every check it makes holds whatever the timing.
//!
//! | target | module | input | checks |
//! |---|---|---|---|
//! | [`greeting`] | `codec` | raw bytes | [`Greeting`] and signature parsing agree; emit → parse round-trips |
//! | [`frame_decoder`] | `frame_decoder` | 3 control bytes, fragment sizes, stream | same items whatever the fragmentation; the maximum message size holds |
//! | [`command`] | `codec` | a command body | [`Command`] emit → parse round-trips |
//! | [`metadata`] | `codec` | a metadata block | [`Metadata`] re-emits byte for byte |
//! | [`z85`] | `codec` | text, or bytes | decode → encode and encode → decode round-trip; error offsets are right |
//! | [`connection`] | `connection` | 2 setup bytes, then operations | no panic; errors are sticky; the input contract holds |
//! | [`curve_traffic`] | `curve_traffic` | 1 byte, then mutations | a tampered CURVE stream never delivers altered content |
//! | [`socket()`] | `socket` | 4 option bytes, then actions | HWMs hold; every message received is whole, genuine, and received once |
//! | [`ws_upgrade`] | `ws` | 1 byte, piece sizes, an HTTP head | in pieces as whole; accepted heads and chosen protocols are sound; our client and server agree |
//! | [`ws_frame`] | `ws` | 3 control bytes, piece sizes, stream | in pieces as whole; limits and the decoding contract hold; frames re-emit to themselves |
//! | [`stream()`] | `stream` | 1 option byte, then actions | a STREAM socket against a model: notifications once up and at most once down, data only from connections that were up, intact and in order both ways, routing by id, send results as specified, bounded queues |
//! | [`legacy`] | `legacy` | 2 control bytes, fragment sizes, a 1.0 or 2.0 peer's stream | in fragments as whole, greeting included; the maximum message size holds; our frames read back in the peer's framing |
//! | [`file_wire`] | `file_wire` | 1 setup byte, then messages with a disk byte each | decode → encode round-trips; taken paths stay under the directory; offers, chunks, PUTs and fetches are taken exactly when the rules say; part records round-trip |
//! | `cabi()` (feature `cabi`) | `cabi` | operations on contexts, sockets, messages and a poller | every call of the C ABI succeeds or fails with one of libzmq's errnos for it (`ENOTSOCK` for closed and made-up sockets, `EFAULT` for contexts and messages, `ETERM` after a shutdown); no write past a buffer; no panic in the library; every `zmq_msg_init_data` buffer freed once |
//! | [`datagram`] | `datagram` | 1 mode byte, then a datagram, a message, a DGRAM address or a udp endpoint | udp limits hold (groups ≤ 127, datagrams ≤ 8192 sent); parse → emit and emit → parse round-trip |
//!
//! The bodies drive the core with this crate's harnesses: [`pair::raw`](crate::pair::raw)
//! for bare connections (with the calling contract checked on every call) and the
//! [`cluster`](crate::cluster) with remote streams for the socket.
//!
//! [`seed_corpus`] makes the seed inputs of every target from in-memory handshakes (byte
//! for byte what libzmq sends, per the project's ZMTP notes) and from byte vectors seen
//! on the wire against libzmq; `fuzz/corpus/` holds them as files.
//!
//! [`Greeting`]: zmtp_proto::codec::Greeting
//! [`Command`]: zmtp_proto::codec::Command
//! [`Metadata`]: zmtp_proto::codec::Metadata

#[cfg(feature = "cabi")]
mod cabi;
mod codec;
mod connection;
mod corpus;
mod curve_traffic;
mod datagram;
mod file_wire;
mod frame_decoder;
mod input;
mod legacy;
mod material;
mod socket;
mod stream;
#[cfg(test)]
mod tests;
mod ws;

#[cfg(feature = "cabi")]
pub use self::cabi::cabi;
pub use self::codec::{command, greeting, metadata, z85};
pub use self::connection::connection;
pub use self::corpus::{seed_corpus, Seed};
pub use self::curve_traffic::curve_traffic;
pub use self::datagram::datagram;
pub use self::file_wire::file_wire;
pub use self::frame_decoder::frame_decoder;
pub use self::legacy::legacy;
pub use self::socket::socket;
pub use self::stream::stream;
pub use self::ws::{ws_frame, ws_upgrade};

/// The body of a fuzz target.
pub type Body = fn(&[u8]);

/// The targets' table, with `$extra` entries at its end.
macro_rules! targets {
    ($($extra:tt)*) => {
        &[
            ("greeting", greeting),
            ("frame_decoder", frame_decoder),
            ("command", command),
            ("metadata", metadata),
            ("z85", z85),
            ("connection", connection),
            ("curve_traffic", curve_traffic),
            ("socket", socket),
            ("ws_upgrade", ws_upgrade),
            ("ws_frame", ws_frame),
            ("datagram", datagram),
            ("stream", stream),
            ("legacy", legacy),
            ("file_wire", file_wire),
            $($extra)*
        ]
    };
}

/// Every fuzz target: its name (the file name in `fuzz/fuzz_targets/` and the folder in
/// `fuzz/corpus/`) and its body; `cabi` only with the feature `cabi`.
#[cfg(feature = "cabi")]
pub const TARGETS: &[(&str, Body)] = targets!(("cabi", cabi));

/// Every fuzz target: its name (the file name in `fuzz/fuzz_targets/` and the folder in
/// `fuzz/corpus/`) and its body; `cabi` only with the feature `cabi`.
#[cfg(not(feature = "cabi"))]
pub const TARGETS: &[(&str, Body)] = targets!();
