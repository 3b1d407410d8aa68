//! Waking the ring's thread from other threads.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::event::{eventfd, EventfdFlags};

/// An eventfd the ring's thread keeps a read submitted on, and other threads write to
/// wake it. A wake while one is pending writes nothing more: at most one write per wait.
pub struct Wake {
    fd: OwnedFd,
    pending: AtomicBool,
}

impl Wake {
    /// A new eventfd (non-blocking, close-on-exec).
    pub fn new() -> io::Result<Wake> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Wake {
            fd,
            pending: AtomicBool::new(false),
        })
    }

    /// Wake the ring's thread, unless a wake is already on its way. Returns whether this
    /// call wrote.
    pub fn wake(&self) -> bool {
        if self.pending.swap(true, Ordering::AcqRel) {
            return false;
        }
        // A full counter (never, at one count per wait) wakes as well as a count.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
        true
    }

    /// The ring's thread saw the wake (its read completed): later wakes write again.
    pub fn woken(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// The descriptor, for the ring's read.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_fd().as_raw_fd()
    }
}

impl AsFd for Wake {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
