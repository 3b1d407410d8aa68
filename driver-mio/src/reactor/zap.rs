//! The context's ZAP client (RFC 27): a socket of the context bound at the context's ZAP
//! endpoint ([`Context::set_zap_endpoint`](crate::Context::set_zap_endpoint)) is asked
//! about the peers its sockets authenticate, as libzmq asks the handler bound at
//! `inproc://zeromq.zap.01`.
//!
//! Nothing here blocks: a socket's `Authenticate` command sends the request through a
//! DEALER of the reactor's own (made the first time, connected to the endpoint, with no
//! handle and no thread), and the handler's reply, when the DEALER receives it, is the
//! verdict handed to the socket that asked ([`Shared::zap_replies`], run by `pump` and after
//! each read of the DEALER's input). Each request carries an id of its own; a reply is matched to its
//! request by that id, or, when the id is wrong, to the oldest request still waiting (a
//! REP handler answers in order), whose peer then fails as libzmq's would.
//!
//! The requests waiting are bounded by the handshakes waiting for them: a peer that goes
//! (its handshake timed out, it closed) is forgotten with its request, and a late reply
//! is dropped. A handler that goes away with requests unanswered leaves their peers
//! waiting, as libzmq does, until they go.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use zmtp_driver::zap;
use zmtp_proto::socket::{AuthReply, Options, PeerId, ZapRequest};
use zmtp_proto::{Bytes, Instant, SocketType};

use super::waiters::Notify;
use super::{Shared, State};

/// The waiting requests are pruned of gone peers when they reach this many, and then
/// whenever they double.
const PRUNE_FIRST: usize = 64;

/// What the reactor knows of its ZAP handler and the requests sent to it.
#[derive(Default)]
pub(crate) struct Zap {
    /// The endpoint the handler binds, as the driver names it; `None`: no handler is
    /// looked for.
    pub(crate) endpoint: Option<String>,
    /// The DEALER that talks to the handler, once made: a socket of the state with no
    /// handle.
    client: Option<usize>,
    /// The id of the next request.
    next_id: u64,
    /// Requests sent and not answered yet, oldest first.
    waiting: VecDeque<Waiting>,
    /// Prune `waiting` when it reaches this length.
    prune_at: usize,
    /// Replies are being handed out (a verdict's commands can send another request).
    draining: bool,
}

/// A request sent to the handler.
struct Waiting {
    id: Bytes,
    socket: usize,
    peer: PeerId,
}

impl Zap {
    /// Whether socket `id` is the DEALER that talks to the handler.
    pub(crate) fn is_client(&self, id: usize) -> bool {
        self.client == Some(id)
    }
}

/// Whether `peer` of socket `socket` still waits for a verdict.
fn waits(st: &State, socket: usize, peer: PeerId) -> bool {
    st.sockets
        .get(&socket)
        .and_then(|s| s.core.connection(peer))
        .is_some_and(|c| c.auth_request().is_some())
}

impl Shared {
    /// Ask the context's ZAP handler about `peer` of socket `id`; the verdict comes with
    /// the reply. Returns the answer to give at once instead: `NoHandler` when no socket
    /// of the context is bound at the ZAP endpoint (libzmq's rules without a handler),
    /// 500 when the request cannot be sent.
    pub(super) fn zap_ask(
        &self,
        st: &mut State,
        id: usize,
        peer: PeerId,
        request: &ZapRequest,
        now: Instant,
    ) -> Option<AuthReply> {
        let Some(endpoint) = st.zap.endpoint.clone() else {
            return Some(AuthReply::NoHandler);
        };
        let bound = (st.sockets.values())
            .any(|s| !s.closed && s.listeners.values().any(|l| l.address == endpoint))
            || st.inproc.is_bound(&endpoint);
        if !bound {
            return Some(AuthReply::NoHandler);
        }
        // No socket to ask with (the system refused the entropy): as a handler that
        // failed.
        let Some(client) = self.zap_client(st, &endpoint) else {
            return Some(AuthReply::status(500));
        };
        st.zap.next_id = st.zap.next_id.wrapping_add(1);
        let request_id = Bytes::from(st.zap.next_id.to_string());
        let message = zap::request_message(request, &request_id);
        let sent = (st.sockets.get_mut(&client)).is_some_and(|s| s.core.send(message, now).is_ok());
        if !sent {
            // The DEALER's queue is full (SNDHWM requests the handler has not read): as a
            // handler that failed.
            return Some(AuthReply::status(500));
        }
        if st.zap.waiting.len() >= st.zap.prune_at.max(PRUNE_FIRST) {
            self.zap_prune(st);
        }
        st.zap.waiting.push_back(Waiting {
            id: request_id,
            socket: id,
            peer,
        });
        self.pump(st, client);
        None
    }

    /// The DEALER that talks to the handler at `endpoint`: the one made before, or a new
    /// one (after the context's `term` closed the last).
    fn zap_client(&self, st: &mut State, endpoint: &str) -> Option<usize> {
        if let Some(client) = st.zap.client {
            if st.sockets.get(&client).is_some_and(|s| !s.closed) {
                return Some(client);
            }
            // The context's own socket, never an orphan: nobody to wake.
            let _ = st.forget(client, false);
            st.zap.client = None;
        }
        // Closed at once with its context: nothing it holds is worth waiting for.
        let options = Options::default().with_linger(Some(Duration::ZERO));
        let mut core = zmtp_driver::new_socket(SocketType::Dealer, options).ok()?;
        core.connect(endpoint).ok()?;
        let client = st.insert(core, Arc::default());
        st.zap.client = Some(client);
        self.pump(st, client);
        Some(client)
    }

    /// Forget the requests whose peers no longer wait for them.
    fn zap_prune(&self, st: &mut State) {
        let mut waiting = std::mem::take(&mut st.zap.waiting);
        waiting.retain(|w| waits(st, w.socket, w.peer));
        st.zap.prune_at = waiting.len().saturating_mul(2);
        st.zap.waiting = waiting;
    }

    /// Hand the replies the DEALER `client` received to the sockets that asked (called
    /// after its input).
    pub(super) fn zap_replies(&self, st: &mut State, client: usize) {
        if st.zap.draining {
            return;
        }
        st.zap.draining = true;
        let now = self.now();
        while let Some(reply) = st.sockets.get_mut(&client).and_then(|s| s.core.recv(now)) {
            let frames = reply.frames();
            let matched = zap::reply_request_id(frames)
                .and_then(|id| st.zap.waiting.iter().position(|w| w.id == *id));
            let at = match matched {
                Some(at) => Some(at),
                None => {
                    // Not a request id of ours: the oldest request that still waits (a
                    // REP handler answers in order).
                    while st
                        .zap
                        .waiting
                        .front()
                        .is_some_and(|w| !waits(st, w.socket, w.peer))
                    {
                        st.zap.waiting.pop_front();
                    }
                    (!st.zap.waiting.is_empty()).then_some(0)
                }
            };
            let Some(w) = at.and_then(|at| st.zap.waiting.remove(at)) else {
                // Nothing waits for it (a late reply): dropped.
                continue;
            };
            let answer = zap::read_reply(frames, &w.id);
            self.zap_answer(st, w.socket, w.peer, answer, now);
        }
        st.zap.draining = false;
    }

    /// Give `peer` of socket `id` its verdict, if it still waits for one, and wake whoever
    /// waits on the socket.
    fn zap_answer(&self, st: &mut State, id: usize, peer: PeerId, answer: AuthReply, now: Instant) {
        if !waits(st, id, peer) {
            return;
        }
        if let Some(s) = st.sockets.get_mut(&id) {
            s.core.handle_auth(peer, now, answer);
        }
        self.pump(st, id);
        // Under the lock: the signals take no lock of ours.
        let mut notify = Notify::default();
        notify.touch(st, id);
        self.inproc_touched(st, &mut notify);
        notify.signal(self);
    }
}
