//! A socket's readiness descriptor, for event loops that wait on file descriptors (what
//! libzmq calls `ZMQ_FD`).
//!
//! [`Socket::readiness_fd`] gives an `eventfd` that becomes readable whenever the socket
//! may have become readable or writable (a message arrived, room freed up, a peer came or
//! went, the socket closed), in the spirit of libzmq's edge-triggered `ZMQ_FD`: it says
//! that something may have changed, not what. After it fires, call
//! [`Socket::clear_readiness`], then look at [`Socket::can_recv`] and
//! [`Socket::can_send`], and receive until there is nothing left: a message that was
//! ready before the descriptor was cleared does not make it fire again. It may fire with
//! nothing new (a spurious wake-up, as libzmq's may).
//!
//! ```
//! use std::os::fd::AsRawFd;
//! use std::time::Duration;
//! use zmtp_mio::{Context, SocketType};
//!
//! # fn main() -> Result<(), zmtp_mio::Error> {
//! let ctx = Context::new()?;
//! let pull = ctx.socket(SocketType::Pull)?;
//! let endpoint = pull.bind("tcp://127.0.0.1:*")?;
//! let fd = pull.readiness_fd()?.as_raw_fd();
//! pull.clear_readiness();
//!
//! let push = ctx.socket(SocketType::Push)?;
//! push.connect(&endpoint)?;
//! push.send("job")?;
//! // An event loop would wait on `fd` here; it fires when the message is in.
//! let mut pfd = [rustix::event::PollFd::from_borrowed_fd(
//!     unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
//!     rustix::event::PollFlags::IN,
//! )];
//! while !pull.can_recv() {
//!     let timeout = rustix::event::Timespec { tv_sec: 5, tv_nsec: 0 };
//!     rustix::event::poll(&mut pfd, Some(&timeout)).unwrap();
//!     pull.clear_readiness();
//! }
//! assert_eq!(pull.recv_timeout(Some(Duration::ZERO))?.to_str(), Ok("job"));
//! # Ok(()) }
//! ```

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::event::{eventfd, EventfdFlags};

use crate::{Error, Socket};

/// Count the descriptor up, if there is one (a full counter is as good as a count).
pub(crate) fn ring(fd: Option<&OwnedFd>) {
    if let Some(fd) = fd {
        let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
    }
}

impl Socket {
    /// The socket's readiness descriptor (see the [module documentation](self)), made the
    /// first time it is asked for; it lives as long as the socket. Readable at first, so
    /// that a loop starting to wait on it looks at the socket once.
    /// [`Error::Closed`] once the socket is closed.
    pub fn readiness_fd(&self) -> Result<BorrowedFd<'_>, Error> {
        // Under the lock but not through `with`, which would count as a change.
        let fd = {
            let mut st = self.shared.lock();
            let s = st.sockets.get_mut(&self.id).ok_or(Error::Closed)?;
            match &s.readiness {
                Some(fd) => fd.clone(),
                None => {
                    let fd = eventfd(1, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                        .map_err(std::io::Error::from)?;
                    let fd = Arc::new(fd);
                    s.readiness = Some(fd.clone());
                    fd
                }
            }
        };
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd.as_fd());
        // SAFETY: the descriptor is owned by the socket's state, which keeps it until the
        // socket is forgotten, after this handle (borrowed for the result's lifetime) is
        // dropped.
        Ok(unsafe { BorrowedFd::borrow_raw(raw) })
    }

    /// Empty the readiness descriptor, so that it fires again only for a later change.
    /// Does nothing on a socket that has none.
    pub fn clear_readiness(&self) {
        let fd = {
            let st = self.shared.lock();
            st.sockets.get(&self.id).and_then(|s| s.readiness.clone())
        };
        if let Some(fd) = fd {
            let mut count = [0u8; 8];
            let _ = rustix::io::read(&*fd, &mut count);
        }
    }
}
