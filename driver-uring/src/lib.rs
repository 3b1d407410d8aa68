//! io_uring building blocks for the blocking driver's ring backend (Linux only).
//!
//! The pieces a completion-based reactor needs, each small enough to check on its own:
//!
//! - [`Ring`]: a ring with the operations the reactor relies on probed up front, so that a
//!   kernel without them, a process where io_uring is disabled (`kernel.io_uring_disabled`,
//!   a seccomp filter) or a ring that cannot be set up is one typed error,
//!   [`Unavailable`], when a context is made, never a failure halfway through.
//! - [`BufRing`]: a provided-buffer ring. A multishot receive takes its buffers from it,
//!   the kernel choosing one per completion; each filled buffer is lent out as
//!   [`Bytes`](bytes::Bytes) without a copy and goes back to the ring when the last
//!   reference to it is dropped, whichever thread drops it.
//! - Multishot accepts, vectored writes and zero-copy sends ([`Ring::accept_multi`],
//!   [`Ring::writev`], [`Ring::send_zc`]), taken back through [`Ring::reap`]: an accepted
//!   descriptor becomes an owned one there, once, and a write's chunks stay owned by the
//!   ring until its completion (a zero-copy send's, until the kernel's notification that
//!   it no longer reads them).
//! - [`Wake`]: an eventfd that application threads write to wake the ring's thread, at
//!   most one write per wait.
//!
//! - [`read_into`]: a plain `read(2)` into a buffer's spare capacity, for the threads that
//!   read a stream themselves, straight into its state machine's receive buffer.
//!
//! This crate holds the driver's `unsafe` code: each block says why it is sound, and the
//! tests drive every path over real sockets.

#![cfg(target_os = "linux")]
#![deny(missing_docs)]

mod bufring;
mod ops;
mod read;
mod ring;
mod wake;

pub use bufring::{BufRing, Lent};
pub use ops::{Accepted, Reaped, Received, Written, MAX_IOVECS};
pub use read::read_into;
pub use ring::{Ring, Unavailable};
pub use wake::Wake;

/// Re-exported: the operations and completion flags are the `io-uring` crate's.
pub use io_uring;
