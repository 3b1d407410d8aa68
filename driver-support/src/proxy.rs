//! The proxy (`zmq_proxy`, `zmq_proxy_steerable`), written once: what moves, what is
//! counted and what the control socket says. A driver runs [`Proxy::run`] over its sockets,
//! then waits with its own poll on [`Proxy::poll_set`] for what [`Proxy::interest`] asks,
//! and again.
//!
//! - Messages go both ways, frontend to backend and back, whole (libzmq moves them frame by
//!   frame, which is the same on the wire). A copy of each goes to the capture socket if
//!   there is one; a capture socket that has no room drops its copy rather than stop the
//!   proxy.
//! - **Back-pressure:** a side is read only while the other side can take a message
//!   (`ZMQ_POLLOUT`), as libzmq's proxy reads only then; a message the other side cannot
//!   take after all (its HWM reached within a burst) is held, and its side is not read
//!   until the message is sent. Nothing is dropped that the socket types would not drop
//!   themselves (a ROUTER's unknown peer, a PUB's HWM).
//! - **Control:** `PAUSE` stops both directions (held messages still go), `RESUME` starts
//!   them again, `TERMINATE` ends the proxy, `STATISTICS` answers eight frames: messages
//!   and bytes received from the frontend, sent to the frontend, received from the backend,
//!   sent to the backend, each a `u64` in the host's byte order, as libzmq's do. Every
//!   command gets an answer (STATISTICS its eight frames, any other one empty frame), as in
//!   libzmq 4.3.5, so that a REP control socket works. libzmq 4.3.5 swaps PAUSE and RESUME
//!   (fixed upstream later); these are the intended meanings.

use zmtp_proto::socket::{Message, SendError};
use zmtp_proto::Bytes;

use crate::Error;

/// What the proxy needs of a socket: the driver's non-blocking calls.
pub trait ProxySocket {
    /// The next message, if one is there now.
    fn proxy_recv(&self) -> Result<Option<Message>, Error>;
    /// Send without waiting; `WouldBlock` gives the message back.
    fn proxy_send(&self, msg: Message) -> Result<(), SendError>;
    /// Whether the socket's type receives at all (a PUSH or a PUB side is never read).
    fn proxy_receives(&self) -> bool;
    /// Whether a send would be taken now (`ZMQ_POLLOUT`).
    fn proxy_can_send(&self) -> bool;
}

/// Wait for a message ([`Proxy::interest`]; the value of `POLLIN` in every driver).
pub const WANT_IN: u8 = 1;
/// Wait for room ([`Proxy::interest`]; the value of `POLLOUT` in every driver).
pub const WANT_OUT: u8 = 2;

/// Messages and bytes one way through the proxy, as libzmq counts them: a multipart
/// message is one, its bytes those of all its frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages.
    pub messages: u64,
    /// Bytes of those messages' frames.
    pub bytes: u64,
}

impl Traffic {
    fn add(&mut self, msg: &Message) {
        self.messages += 1;
        self.bytes += msg.frames().iter().map(|f| f.len() as u64).sum::<u64>();
    }
}

/// libzmq's eight counters, in the order of its STATISTICS answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Received from the frontend.
    pub frontend_in: Traffic,
    /// Sent to the frontend.
    pub frontend_out: Traffic,
    /// Received from the backend.
    pub backend_in: Traffic,
    /// Sent to the backend.
    pub backend_out: Traffic,
}

impl ProxyStats {
    /// The STATISTICS answer: eight frames of a `u64` each in the host's byte order.
    pub fn to_message(&self) -> Message {
        let t = [
            self.frontend_in,
            self.frontend_out,
            self.backend_in,
            self.backend_out,
        ];
        let frames: Vec<Bytes> = t
            .iter()
            .flat_map(|t| [t.messages, t.bytes])
            .map(|n| Bytes::copy_from_slice(&n.to_ne_bytes()))
            .collect();
        Message::from(frames)
    }

    /// Read a STATISTICS answer back (eight frames of eight bytes).
    pub fn from_message(msg: &Message) -> Option<ProxyStats> {
        let n: Vec<u64> = msg
            .frames()
            .iter()
            .map(|f| <[u8; 8]>::try_from(&f[..]).ok().map(u64::from_ne_bytes))
            .collect::<Option<_>>()?;
        let t = |i: usize| Traffic {
            messages: n[2 * i],
            bytes: n[2 * i + 1],
        };
        (n.len() == 8).then(|| ProxyStats {
            frontend_in: t(0),
            frontend_out: t(1),
            backend_in: t(2),
            backend_out: t(3),
        })
    }
}

/// What [`Proxy::run`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing more moves now: wait for [`Proxy::interest`], then run again.
    Wait,
    /// TERMINATE came (and was answered): the proxy ends.
    Terminated,
}

/// Messages moved per direction in one [`Proxy::run`] before the other gets its turn.
const TURN: usize = 64;

/// A proxy's state between runs: paused or not, held messages, counters.
#[derive(Debug, Default)]
pub struct Proxy {
    paused: bool,
    /// A message from the frontend the backend did not take yet, and the other way.
    to_backend: Option<Message>,
    to_frontend: Option<Message>,
    /// The backend had no room when the frontend was to be read (nothing held), and the
    /// other way: waited on for room.
    backend_full: bool,
    frontend_full: bool,
    stats: ProxyStats,
}

impl Proxy {
    /// A proxy moving messages.
    pub fn new() -> Proxy {
        Proxy::default()
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.stats
    }

    /// Whether PAUSE is in force.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// What to wait for on the frontend, the backend and the control socket, in the order
    /// of [`poll_set`](Self::poll_set) ([`WANT_IN`], [`WANT_OUT`]): a side is read unless
    /// paused or its last message is still held, and waited on for room while a message
    /// for it is held; the control socket, if there is one, is read.
    pub fn interest(&self, control: bool) -> [u8; 3] {
        // Whether each direction waits for room on its destination.
        let forward = self.to_backend.is_some() || self.backend_full;
        let backward = self.to_frontend.is_some() || self.frontend_full;
        let side = |reads_wait: bool, room_wanted: bool| {
            let mut events = 0;
            if !self.paused && !reads_wait {
                events |= WANT_IN;
            }
            if room_wanted {
                events |= WANT_OUT;
            }
            events
        };
        [
            side(forward, backward),
            side(backward, forward),
            if control { WANT_IN } else { 0 },
        ]
    }

    /// The sockets to poll, for [`interest`](Self::interest)'s events: the frontend, the
    /// backend, and the control socket (the frontend again, waited on for nothing, when
    /// there is none).
    pub fn poll_set<'a, S>(frontend: &'a S, backend: &'a S, control: Option<&'a S>) -> [&'a S; 3] {
        [frontend, backend, control.unwrap_or(frontend)]
    }

    /// Move what can move now, both ways, and answer the control socket's commands.
    pub fn run<S: ProxySocket>(
        &mut self,
        frontend: &S,
        backend: &S,
        capture: Option<&S>,
        control: Option<&S>,
    ) -> Result<Step, Error> {
        loop {
            if let Some(control) = control {
                while let Some(cmd) = control.proxy_recv()? {
                    if self.command(control, &cmd) == Step::Terminated {
                        return Ok(Step::Terminated);
                    }
                }
            }
            let forward = Direction {
                held: &mut self.to_backend,
                full: &mut self.backend_full,
                received: &mut self.stats.frontend_in,
                sent: &mut self.stats.backend_out,
            };
            let moved_forward = forward.pump(frontend, backend, capture, self.paused)?;
            let backward = Direction {
                held: &mut self.to_frontend,
                full: &mut self.frontend_full,
                received: &mut self.stats.backend_in,
                sent: &mut self.stats.frontend_out,
            };
            let moved_back = backward.pump(backend, frontend, capture, self.paused)?;
            if moved_forward + moved_back == 0 {
                return Ok(Step::Wait);
            }
        }
    }

    /// One control command, answered.
    fn command<S: ProxySocket>(&mut self, control: &S, cmd: &Message) -> Step {
        let name = cmd.frames().first().map(|f| &f[..]).unwrap_or_default();
        let reply = match name {
            b"STATISTICS" => self.stats.to_message(),
            _ => Message::from(vec![Bytes::new()]),
        };
        match name {
            b"PAUSE" => self.paused = true,
            b"RESUME" => self.paused = false,
            _ => {}
        }
        // A control socket that cannot take the answer now does without it.
        let _ = control.proxy_send(reply);
        if name == b"TERMINATE" {
            Step::Terminated
        } else {
            Step::Wait
        }
    }
}

/// One direction of the proxy, with its held message and counters.
struct Direction<'a> {
    held: &'a mut Option<Message>,
    /// `to` had no room when `from` was to be read.
    full: &'a mut bool,
    received: &'a mut Traffic,
    sent: &'a mut Traffic,
}

impl Direction<'_> {
    /// Send the held message, then move up to [`TURN`] messages from `from` to `to` if
    /// `to` has room for one; returns how many moved.
    fn pump<S: ProxySocket>(
        mut self,
        from: &S,
        to: &S,
        capture: Option<&S>,
        paused: bool,
    ) -> Result<usize, Error> {
        let mut moved = 0;
        if let Some(msg) = self.held.take() {
            if !self.send(to, msg) {
                return Ok(0);
            }
            moved += 1;
        }
        if paused || !from.proxy_receives() {
            *self.full = false;
            return Ok(moved);
        }
        // One socket on both sides (a REP answering itself) has no room until it has read:
        // it is read regardless, as libzmq's proxy does.
        *self.full = !std::ptr::eq(from, to) && !to.proxy_can_send();
        if *self.full {
            return Ok(moved);
        }
        while moved < TURN {
            let Some(msg) = from.proxy_recv()? else {
                break;
            };
            self.received.add(&msg);
            if let Some(capture) = capture {
                // A copy; dropped if the capture socket has no room.
                let _ = capture.proxy_send(msg.clone());
            }
            moved += 1;
            if !self.send(to, msg) {
                break;
            }
        }
        Ok(moved)
    }

    /// Send `msg` on, or hold it: whether it went (or was dropped by the socket type's
    /// rules: an unknown ROUTER peer, a refused message).
    fn send<S: ProxySocket>(&mut self, to: &S, msg: Message) -> bool {
        let mut t = Traffic::default();
        t.add(&msg);
        match to.proxy_send(msg) {
            Ok(()) => {
                self.sent.messages += t.messages;
                self.sent.bytes += t.bytes;
                true
            }
            Err(SendError::WouldBlock(msg)) => {
                *self.held = Some(msg);
                false
            }
            // The socket type refuses it (EHOSTUNREACH and the like): dropped, as libzmq's
            // proxy drops a message its send fails on.
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::VecDeque;

    /// A socket of queues: what it will receive, what it sent, and room for `room` more.
    #[derive(Default)]
    struct Fake {
        incoming: RefCell<VecDeque<Message>>,
        sent: RefCell<Vec<Message>>,
        room: RefCell<usize>,
    }

    impl Fake {
        fn with(room: usize, incoming: &[&str]) -> Fake {
            Fake {
                incoming: RefCell::new(incoming.iter().map(|s| msg(s)).collect()),
                sent: RefCell::default(),
                room: RefCell::new(room),
            }
        }
        fn sent_texts(&self) -> Vec<String> {
            self.sent
                .borrow()
                .iter()
                .map(|m| String::from_utf8_lossy(&m.frames()[0]).into_owned())
                .collect()
        }
    }

    impl ProxySocket for Fake {
        fn proxy_recv(&self) -> Result<Option<Message>, Error> {
            Ok(self.incoming.borrow_mut().pop_front())
        }
        fn proxy_receives(&self) -> bool {
            true
        }
        fn proxy_can_send(&self) -> bool {
            *self.room.borrow() > 0
        }
        fn proxy_send(&self, msg: Message) -> Result<(), SendError> {
            let mut room = self.room.borrow_mut();
            if *room == 0 {
                return Err(SendError::WouldBlock(msg));
            }
            *room -= 1;
            self.sent.borrow_mut().push(msg);
            Ok(())
        }
    }

    fn msg(s: &str) -> Message {
        Message::from(vec![Bytes::copy_from_slice(s.as_bytes())])
    }

    #[test]
    fn both_ways_with_a_capture_and_counters() {
        let (f, b, cap) = (
            Fake::with(9, &["a", "bb"]),
            Fake::with(9, &["ccc"]),
            Fake::with(9, &[]),
        );
        let mut p = Proxy::new();
        assert_eq!(p.run(&f, &b, Some(&cap), None).unwrap(), Step::Wait);
        assert_eq!(b.sent_texts(), ["a", "bb"]);
        assert_eq!(f.sent_texts(), ["ccc"]);
        assert_eq!(cap.sent_texts(), ["a", "bb", "ccc"]);
        let s = p.stats();
        assert_eq!(
            s.frontend_in,
            Traffic {
                messages: 2,
                bytes: 3
            }
        );
        assert_eq!(s.backend_out, s.frontend_in);
        assert_eq!(
            s.backend_in,
            Traffic {
                messages: 1,
                bytes: 3
            }
        );
        assert_eq!(s.frontend_out, s.backend_in);
        assert_eq!(ProxyStats::from_message(&s.to_message()), Some(s));
    }

    #[test]
    fn a_full_side_holds_one_message_and_stops_reading() {
        let (f, b) = (Fake::with(9, &["1", "2", "3"]), Fake::with(1, &[]));
        let mut p = Proxy::new();
        p.run(&f, &b, None, None).unwrap();
        assert_eq!(b.sent_texts(), ["1"]);
        // "2" is held, "3" still in the frontend: the frontend is not read meanwhile.
        assert_eq!(f.incoming.borrow().len(), 1);
        assert_eq!(p.interest(false), [0, WANT_IN | WANT_OUT, 0]);
        *b.room.borrow_mut() = 5;
        p.run(&f, &b, None, None).unwrap();
        assert_eq!(b.sent_texts(), ["1", "2", "3"]);
        assert_eq!(p.interest(false), [WANT_IN, WANT_IN, 0]);
    }

    #[test]
    fn one_socket_on_both_sides_is_read_without_room() {
        // A REP proxying to itself has no room until it has read a request.
        let one = Fake::with(0, &["ping"]);
        let mut p = Proxy::new();
        p.run(&one, &one, None, None).unwrap();
        assert!(one.incoming.borrow().is_empty());
        *one.room.borrow_mut() = 1;
        p.run(&one, &one, None, None).unwrap();
        assert_eq!(one.sent_texts(), ["ping"]);
    }

    #[test]
    fn a_side_is_not_read_while_the_other_has_no_room() {
        let (f, b) = (Fake::with(9, &["1", "2"]), Fake::with(0, &[]));
        let mut p = Proxy::new();
        p.run(&f, &b, None, None).unwrap();
        // Nothing taken from the frontend, nothing held: room on the backend is waited for.
        assert_eq!(f.incoming.borrow().len(), 2);
        assert_eq!(p.interest(false), [0, WANT_IN | WANT_OUT, 0]);
        *b.room.borrow_mut() = 5;
        p.run(&f, &b, None, None).unwrap();
        assert_eq!(b.sent_texts(), ["1", "2"]);
        assert_eq!(p.interest(false), [WANT_IN, WANT_IN, 0]);
    }

    #[test]
    fn control_commands() {
        let (f, b, ctl) = (
            Fake::with(9, &[]),
            Fake::with(9, &[]),
            Fake::with(9, &["PAUSE"]),
        );
        let mut p = Proxy::new();
        p.run(&f, &b, None, Some(&ctl)).unwrap();
        assert!(p.paused());
        assert_eq!(p.interest(true), [0, 0, WANT_IN]);
        f.incoming.borrow_mut().push_back(msg("x"));
        p.run(&f, &b, None, Some(&ctl)).unwrap();
        assert!(b.sent.borrow().is_empty(), "moved while paused");
        ctl.incoming.borrow_mut().push_back(msg("RESUME"));
        p.run(&f, &b, None, Some(&ctl)).unwrap();
        assert_eq!(b.sent_texts(), ["x"]);
        ctl.incoming.borrow_mut().push_back(msg("STATISTICS"));
        ctl.incoming.borrow_mut().push_back(msg("BOGUS"));
        p.run(&f, &b, None, Some(&ctl)).unwrap();
        let replies = ctl.sent.borrow();
        // PAUSE, RESUME: one empty frame each; then the statistics; then BOGUS's.
        assert_eq!(replies.len(), 4);
        assert!(replies[0].frames()[0].is_empty() && replies[1].frames()[0].is_empty());
        let stats = ProxyStats::from_message(&replies[2]).unwrap();
        assert_eq!(
            stats.frontend_in,
            Traffic {
                messages: 1,
                bytes: 1
            }
        );
        assert_eq!(replies[2].frames()[0][..], 1u64.to_ne_bytes());
        assert!(replies[3].frames()[0].is_empty());
        drop(replies);
        ctl.incoming.borrow_mut().push_back(msg("TERMINATE"));
        assert_eq!(p.run(&f, &b, None, Some(&ctl)).unwrap(), Step::Terminated);
        assert_eq!(ctl.sent.borrow().len(), 5);
    }
}
