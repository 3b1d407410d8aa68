//! Concurrency models of the blocking driver's (`zmtp-mio`) hand-off between application
//! threads and its I/O thread, checked with `loom`, which runs each model under every
//! interleaving of its threads (within its bounds) and fails on a deadlock, a panic or a
//! broken assertion.
//!
//! The counting rule that decides when a waiting thread is signalled is the driver's own
//! code ([`Waiters`], compiled here from the driver's source file); the locks, condition
//! variables and the kernel's event counter around it are loom's, used in the order the
//! driver uses the real ones. The models are in `tests/handoff.rs`:
//!
//! - a receive that waits on the socket's condition variable is woken by the I/O thread
//!   that queues a message, whichever runs first (no lost wake-up), with one or two
//!   waiting threads;
//! - a wait that ends without a signal (a timeout) leaves the count right, so the next
//!   waiter is still signalled;
//! - a receive that waits in the kernel on its streams and an event counter (the driver's
//!   eventfd) is woken either by its stream's input or by the I/O thread's signal;
//! - a stream's read claim and its readable edges: input that arrives while a read runs
//!   (in the I/O thread or an application thread) is always read, never left in the
//!   kernel with nobody to read it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[path = "../../driver-mio/src/reactor/waiters/count.rs"]
mod count;

pub use count::Waiters;
