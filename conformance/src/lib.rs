//! Interop support: run `zmtp-proto` connections against the system libzmq.
//!
//! - [`ffi`]: a minimal hand-written binding to libzmq with a small safe wrapper
//!   ([`ffi::Ctx`], [`ffi::ZSocket`]).
//! - [`driver`]: a blocking driver for [`zmtp_proto::Buffered`] over `std::net::TcpStream`
//!   with real time ([`driver::Driver`]).
//! - [`socket_driver`]: a polling driver for a whole [`zmtp_proto::socket::Socket`] over
//!   non-blocking TCP and Unix-domain streams ([`socket_driver::SocketDriver`]).
//! - [`our`]: the blocking facade every driver implements to join the matrix
//!   ([`our::OurSocket`], [`our::OurDriver`]).
//! - [`async_driver`]: the tokio and smol drivers behind that facade, written once over
//!   `zmtp_async`'s runtime trait ([`async_driver::TokioDriver`], [`async_driver::SmolDriver`]).
//! - [`legacy_peer`]: a raw TCP peer speaking ZMTP 1.0 and 2.0, written from the wire rules.
//! - [`subject`]: libzmq's socket or ours behind one API, for the legacy-peer suites.
//! - [`draft`]: the draft socket types' scenarios, for any pair of implementations.
//! - [`matrix`]: the conformance matrix: every compatible socket pair, transport and role,
//!   with our socket on each side, against libzmq and against our own sockets.
//!
//! Connection-level scenarios live in `tests/libzmq.rs`, socket-level ones in
//! `tests/socket_libzmq.rs`; each runs in both directions (libzmq binds and we connect, and
//! we listen and libzmq connects). `tests/matrix.rs` runs the matrix per driver.
//!
//! This is test-support code: it favours clarity and bounded waits over performance.
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// The [`our::OurSocket`] calls that a driver's socket (`self.socket`) answers with its
/// own methods of the same names: `subscribe`, `join`, `leave` and `connect_peer` are alike
/// in every driver's API.
macro_rules! driver_socket_calls {
    () => {
        fn subscribe(&mut self, topic: &[u8]) {
            self.socket.subscribe(topic).expect("subscribe");
        }

        fn join(&mut self, group: &[u8]) {
            self.socket.join(group).expect("join");
        }

        fn leave(&mut self, group: &[u8]) {
            self.socket.leave(group).expect("leave");
        }

        fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String> {
            self.socket
                .connect_peer(endpoint)
                .map_err(|e| e.to_string())
        }
    };
}

pub mod async_driver;
pub mod draft;
pub mod driver;
pub mod ffi;
pub mod legacy_peer;
pub mod matrix;
pub mod mio_driver;
pub mod our;
pub mod raw_peer;
pub mod security;
pub mod socket_driver;
pub mod subject;
pub mod zap;

/// Who opens the TCP connection in an interop scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// libzmq binds `tcp://127.0.0.1:*`; we connect to the port it reports.
    WeConnect,
    /// We listen on `127.0.0.1`; libzmq connects.
    LibzmqConnects,
}

/// Declare one `#[test]` per direction for each scenario: `scenario => we_connect_name,
/// libzmq_connects_name;`. The scenario is any `Fn(Direction)`.
#[macro_export]
macro_rules! both_directions {
    ($($scenario:expr => $we_connect:ident, $libzmq_connects:ident;)*) => {$(
        #[test]
        fn $we_connect() {
            ($scenario)($crate::Direction::WeConnect)
        }

        #[test]
        fn $libzmq_connects() {
            ($scenario)($crate::Direction::LibzmqConnects)
        }
    )*};
}

// The README's and the book's examples compile (and the runnable ones run) as doc tests.
// They live here, in the crate that depends on every crate they show.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The book's chapters (`docs/src/`), one doctest group each.
#[cfg(doctest)]
mod book {
    macro_rules! chapters {
        ($($name:ident => $file:literal,)*) => {$(
            #[doc = include_str!(concat!("../../docs/src/", $file))]
            struct $name;
        )*};
    }
    chapters! {
        Intro => "intro.md",
        GettingStarted => "getting-started.md",
        SocketTypes => "socket-types.md",
        Transports => "transports.md",
        Security => "security.md",
        Ending => "ending.md",
        Cli => "cli.md",
        FileTransfer => "file-transfer.md",
        Embedding => "embedding.md",
        Performance => "performance.md",
        SoakAndScale => "soak-and-scale.md",
        InteropAndTests => "interop-and-tests.md",
        Architecture => "architecture.md",
    }
}
