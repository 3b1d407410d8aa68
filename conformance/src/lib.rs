//! Interop support: run `zmtp-proto` connections against the system libzmq.
//!
//! - [`ffi`]: a minimal hand-written binding to libzmq with a small safe wrapper
//!   ([`ffi::Ctx`], [`ffi::ZSocket`]).
//! - [`driver`]: a blocking driver for [`zmtp_proto::Buffered`] over `std::net::TcpStream`
//!   with real time ([`driver::Driver`]).
//!
//! The scenarios themselves live in `tests/libzmq.rs`; each one runs in both directions
//! (libzmq binds and we connect, and we listen and libzmq connects).
//!
//! This is test-support code: it favours clarity and bounded waits over performance.
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod driver;
pub mod ffi;
