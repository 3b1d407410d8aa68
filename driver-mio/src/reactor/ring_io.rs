//! What only the io_uring backend does with the state: listeners accepting through the
//! ring's multishot accepts, and the I/O thread's writes made by the ring.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use mio::{Interest, Token};
use zmtp_driver::StdTransport;
use zmtp_proto::Instant;

use super::poller::RingWritten;
use super::work::{consume, Done, WriteEnd};
use super::{Io, Shared, State};

impl Shared {
    /// Register a listener under a new token: for readiness (epoll), or for the ring's
    /// multishot accept, whose connections come to [`ring_accepted`](Self::ring_accepted).
    pub(super) fn register_listener(
        &self,
        st: &mut State,
        id: usize,
        io: Io,
        fd: BorrowedFd<'_>,
    ) -> io::Result<Token> {
        if !self.ring {
            let fd = fd.as_raw_fd();
            return self.register(st, id, io, fd, Some(Interest::READABLE));
        }
        let token = Token(st.next_token);
        st.next_token += 1;
        self.registrar.accept(fd, token)?;
        st.tokens.insert(token, (id, io));
        Ok(token)
    }

    /// A connection the ring accepted on the listener under `token`: set up and handed to
    /// the socket as an accept by readiness is ([`take_accepted`](Self::take_accepted)).
    /// Returns the socket's id.
    pub(super) fn ring_accepted(
        &self,
        st: &mut State,
        token: Token,
        fd: OwnedFd,
        now: Instant,
    ) -> Option<usize> {
        let &(id, Io::Listener(endpoint)) = st.tokens.get(&token)? else {
            return None;
        };
        let s = st.sockets.get(&id)?;
        let l = (s.listeners.get(&endpoint)).filter(|l| l.token == token)?;
        let stream = l.listener.accepted(fd);
        // The ring's accept does not give the address.
        let address = stream.peer_address();
        self.take_accepted(st, id, endpoint, stream, &address, now);
        Some(id)
    }

    /// Whether `stream` is a plain stream of the ring backend (not TLS): the ring reads it
    /// (unless it lends it to a receiving thread), and the I/O thread's writes to it go
    /// through the ring.
    pub(super) fn ring_plain(&self, stream: &StdTransport) -> bool {
        self.ring && !matches!(stream, StdTransport::Tls(_))
    }

    /// A write of the ring completed: handed over as a write run by a thread would be
    /// ([`Done::Write`]): the chunks not written stay taken and the work item goes on
    /// (a partial write is submitted again with the rest), a full stream waits for its
    /// writable edge, an error loses the stream. Returns whether the socket is still
    /// there.
    pub(super) fn ring_written(&self, st: &mut State, w: RingWritten, now: Instant) -> bool {
        let RingWritten {
            work,
            result,
            mut bufs,
        } = w;
        let done = match result {
            n if n > 0 => {
                consume(&mut bufs, n as usize);
                Done::Write {
                    written: n as usize,
                    rest: bufs,
                    end: WriteEnd::Drained,
                }
            }
            n if n == -rustix::io::Errno::AGAIN.raw_os_error() => Done::Write {
                written: 0,
                rest: bufs,
                end: WriteEnd::Blocked,
            },
            n if n == -rustix::io::Errno::INTR.raw_os_error() => Done::Write {
                written: 0,
                rest: bufs,
                end: WriteEnd::Drained,
            },
            // Nothing written with output left, or an error: the stream is lost.
            _ => Done::Write {
                written: 0,
                rest: bufs,
                end: WriteEnd::Failed,
            },
        };
        if !st.sockets.contains_key(&work.id) {
            return false;
        }
        if self.apply(st, work, done, &[], now) {
            st.work.push_back(work);
        }
        true
    }
}
