//! What only the io_uring backend does with the state: listeners accepting through the
//! ring's multishot accepts, and the I/O thread's writes made by the ring.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

use mio::{Interest, Token};
use zmtp_driver::{tcp_accepted, StdListener, StdTransport};
use zmtp_proto::Instant;

use super::poller::RingWritten;
use super::work::{Done, WriteEnd};
use super::{Io, Shared, State};

impl Shared {
    /// Register a listener under a new token: for readiness (epoll), or for the ring's
    /// multishot accept, whose connections come to [`ring_accepted`](Self::ring_accepted).
    pub(super) fn register_listener(
        &self,
        st: &mut State,
        id: usize,
        io: Io,
        fd: RawFd,
    ) -> io::Result<Token> {
        if !self.ring {
            return self.register(st, id, io, fd, Interest::READABLE);
        }
        let token = Token(st.next_token);
        st.next_token += 1;
        self.registrar.accept(fd, token);
        st.tokens.insert(token, (id, io));
        Ok(token)
    }

    /// A connection the ring accepted on the listener under `token`: set up as an accept
    /// by readiness sets it up (`TCP_NODELAY`, TLS for `wss://`), then handed to the
    /// socket, which makes it a peer or turns it away. Returns the socket's id.
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
        let s = st.sockets.get_mut(&id)?;
        let l = (s.listeners.get(&endpoint)).filter(|l| l.token == token)?;
        let stream = match l.listener {
            StdListener::Tcp(_) => {
                let stream = std::net::TcpStream::from(fd);
                let _ = tcp_accepted(&stream);
                StdTransport::Tcp(stream)
            }
            StdListener::Unix(_) => StdTransport::Unix(std::os::unix::net::UnixStream::from(fd)),
        };
        let Ok(stream) = stream.secure(s.tls_sides.get(&endpoint)) else {
            return Some(id);
        };
        match s
            .core
            .handle_accepted(endpoint, &stream.peer_address(), now)
        {
            Some(peer) => self.add_peer(st, id, peer, stream, now),
            None => drop(stream),
        }
        Some(id)
    }

    /// Whether the I/O thread's writes to `stream` go through the ring: a plain stream of
    /// the ring backend (the streams the ring reads).
    pub(super) fn ring_writes(&self, stream: &StdTransport) -> bool {
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
                let mut k = n as usize;
                while let Some(front) = bufs.front_mut() {
                    if k < front.len() {
                        *front = front.slice(k..);
                        break;
                    }
                    k -= front.len();
                    bufs.pop_front();
                }
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
