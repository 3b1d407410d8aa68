//! Authentication at the socket level (ZAP, RFC 27): which peers are asked about, what
//! happens without a handler (libzmq's rules), and what an accepted peer carries.

use alloc::sync::Arc;
use alloc::vec::Vec;

use bytes::Bytes;

use super::{Ending, Event, PeerId, Socket};
use crate::codec::{Mechanism, Metadata};
use crate::mechanism::{Credentials, Security};
use crate::{Error, Instant};

/// How long a refused peer is given to read our ERROR before its stream is closed anyway.
const FAREWELL: core::time::Duration = core::time::Duration::from_secs(1);

/// What a ZAP handler is asked about one peer (RFC 27), less the peer's address, which
/// the driver knows and adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapRequest {
    /// `ZMQ_ZAP_DOMAIN` (may be empty).
    pub domain: Bytes,
    /// Our own routing id (libzmq sends the server socket's `ZMQ_ROUTING_ID`).
    pub identity: Bytes,
    /// The mechanism name: `NULL`, `PLAIN` or `CURVE`.
    pub mechanism: Mechanism,
    /// The credential frames: none for NULL, user name and password for PLAIN, the
    /// client's 32-byte public key for CURVE.
    pub credentials: Vec<Bytes>,
}

impl ZapRequest {
    /// The mechanism name as text (`"NULL"`, `"PLAIN"`, `"CURVE"`).
    pub fn mechanism_name(&self) -> &str {
        core::str::from_utf8(self.mechanism.name()).unwrap_or_default()
    }
}

/// The answer to a [`ZapRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthReply {
    /// A handler's verdict.
    Verdict {
        /// ZAP status: 200 accepts; 300 closes silently; 400 and 500 refuse with an
        /// ERROR to the peer.
        status: u16,
        /// The user id, exposed as the `User-Id` property of the peer's messages.
        user_id: Bytes,
        /// Extra properties for the peer's messages (ZMTP metadata encoding; may be
        /// empty).
        metadata: Bytes,
    },
    /// No handler is there: libzmq's rules apply (NULL and CURVE accept, PLAIN closes).
    NoHandler,
}

impl AuthReply {
    /// A verdict with no user id or metadata.
    pub fn status(status: u16) -> AuthReply {
        AuthReply::Verdict {
            status,
            user_id: Bytes::new(),
            metadata: Bytes::new(),
        }
    }
}

/// What is known of an authenticated peer: readable on each message it sent
/// ([`Message::property`](super::Message::property)) and from
/// [`Socket::peer_properties`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerProperties {
    /// The user id the authenticator gave (`User-Id`).
    pub user_id: Bytes,
    /// The peer's own metadata (its READY or INITIATE: `Socket-Type`, `Identity`, `X-`
    /// properties), ZMTP-encoded.
    pub peer: Bytes,
    /// Properties the authenticator added, ZMTP-encoded.
    pub zap: Bytes,
}

impl PeerProperties {
    /// A property by name, as libzmq's `zmq_msg_gets`: `User-Id`, then the
    /// authenticator's properties, then the peer's own.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        if name == "User-Id" {
            return Some(&self.user_id);
        }
        find(&self.zap, name).or_else(|| find(&self.peer, name))
    }
}

fn find<'a>(block: &'a [u8], name: &str) -> Option<&'a [u8]> {
    Metadata::parse(block).ok()?.get(name.as_bytes())
}

impl Socket {
    /// A peer's connection asks for a verdict: ask the driver, or decide here when no
    /// handler would be asked.
    pub(super) fn request_auth(&mut self, peer: PeerId) {
        let Some(conn) = self.connection(peer) else {
            return;
        };
        let Some(request) = conn.auth_request() else {
            return;
        };
        let enforce_empty = self.opts.zap_enforce_domain && self.opts.zap_domain.is_empty();
        if request.mechanism == Mechanism::CURVE && enforce_empty {
            // libzmq does not consult ZAP for CURVE then: everyone is let in.
            self.handle_auth(peer, self.now, AuthReply::status(200));
            return;
        }
        let credentials = match request.credentials {
            Credentials::Null => Vec::new(),
            Credentials::Plain { username, password } => alloc::vec![
                Bytes::copy_from_slice(username),
                Bytes::copy_from_slice(password)
            ],
            Credentials::Curve { public_key } => alloc::vec![Bytes::copy_from_slice(public_key)],
        };
        let request = ZapRequest {
            domain: self.opts.zap_domain.clone(),
            identity: self.opts.routing_id.clone(),
            mechanism: request.mechanism,
            credentials,
        };
        self.events.push_back(Event::Authenticate { peer, request });
    }

    /// Answer an [`Event::Authenticate`]. A refused peer gets an ERROR (400, 500) or
    /// nothing (300) and its stream is closed; its handshake fails with monitor event
    /// HANDSHAKE_FAILED_AUTH.
    pub fn handle_auth(&mut self, peer: PeerId, now: Instant, reply: AuthReply) {
        self.now = now;
        let (status, user_id, zap) = match reply {
            AuthReply::Verdict {
                status,
                user_id,
                metadata,
            } => (status, user_id, metadata),
            AuthReply::NoHandler => (self.no_handler_status(), Bytes::new(), Bytes::new()),
        };
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        let Some(s) = p.stream.as_mut() else {
            return;
        };
        if status == 200 {
            let props = p.properties.get_or_insert_with(Default::default);
            let props = Arc::make_mut(props);
            props.user_id = user_id;
            props.zap = zap;
            p.authenticated = true;
        }
        let result = s.conn.connection_mut().handle_auth(now, status);
        // Queue what the verdict produced (WELCOME, READY or ERROR).
        s.conn.poll_transmit();
        let error = result
            .err()
            .or_else(|| s.conn.connection().error().cloned());
        match error {
            Some(e) if s.conn.queued_len() > 0 => {
                // Let the ERROR go out first.
                s.farewell = Some((e, now + FAREWELL));
                self.detach(peer);
                self.mark_dirty(peer);
            }
            Some(e) => self.end_stream(peer, Ending::Failed(e)),
            None => {
                self.process_conn_events(peer);
                self.after_output(peer);
            }
        }
    }

    /// libzmq's verdict when no ZAP handler is there.
    fn no_handler_status(&self) -> u16 {
        match &self.opts.security {
            // PLAIN servers close the connection after HELLO.
            Security::PlainServer => 300,
            // CURVE servers let every client in unless a domain is enforced.
            #[cfg(feature = "curve")]
            Security::CurveServer { .. }
                if self.opts.zap_enforce_domain && !self.opts.zap_domain.is_empty() =>
            {
                300
            }
            _ => 200,
        }
    }

    /// The properties of a peer whose handshake is done: its metadata and, when it was
    /// authenticated, the user id and the authenticator's properties.
    pub fn peer_properties(&self, peer: PeerId) -> Option<&PeerProperties> {
        self.peers.get(&peer)?.properties.as_deref()
    }

    /// A stream refused by its verdict has written its ERROR (or run out of time).
    pub(super) fn finish_farewell(&mut self, peer: PeerId, now: Instant) {
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        let done = match &s.farewell {
            Some((_, deadline)) => s.conn.queued_len() == 0 || *deadline <= now,
            None => false,
        };
        if done {
            if let Some((e, _)) = s.farewell.take() {
                self.end_stream(peer, Ending::Failed(e));
            }
        }
    }
}

/// The error to report for a stream that ended: the connection's own failure, if it had
/// one (an ERROR we sent, a refused verdict), rather than the close that followed.
pub(super) fn ending_of(conn_error: Option<&Error>) -> Ending {
    match conn_error {
        Some(e) => Ending::Failed(e.clone()),
        None => Ending::Closed,
    }
}
