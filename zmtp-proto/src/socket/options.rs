//! Socket options, with libzmq's defaults.

use core::time::Duration;

use bytes::Bytes;

use crate::mechanism::Security;

/// Options every driver shares. Defaults are libzmq 4.3's.
///
/// Subscriptions (`ZMQ_SUBSCRIBE`/`ZMQ_UNSUBSCRIBE`) are calls on the socket, not fields.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `ZMQ_SNDHWM`: messages queued per peer for sending (0 = unlimited). Default 1000.
    pub sndhwm: usize,
    /// `ZMQ_RCVHWM`: messages queued per peer for receiving (0 = unlimited). Default 1000.
    pub rcvhwm: usize,
    /// `ZMQ_LINGER`: how long `close` waits for queued messages; `None` = forever (default).
    pub linger: Option<Duration>,
    /// `ZMQ_ROUTING_ID`: our identity, sent by REQ, DEALER and ROUTER. Default empty.
    pub routing_id: Bytes,
    /// `ZMQ_CONNECT_ROUTING_ID` (ROUTER): the id given to the peer of the next `connect`.
    pub connect_routing_id: Option<Bytes>,
    /// `ZMQ_RECONNECT_IVL`: wait before reconnecting; `None` = never reconnect. Default 100 ms.
    pub reconnect_ivl: Option<Duration>,
    /// `ZMQ_RECONNECT_IVL_MAX`: when above `reconnect_ivl`, each failed attempt doubles the
    /// wait up to this (exponential backoff). Default zero: no backoff.
    pub reconnect_ivl_max: Duration,
    /// `ZMQ_HANDSHAKE_IVL`: handshake deadline; `None` = none. Default 30 s.
    pub handshake_ivl: Option<Duration>,
    /// `ZMQ_HEARTBEAT_IVL`: send a PING this often. Default off.
    pub heartbeat_ivl: Option<Duration>,
    /// `ZMQ_HEARTBEAT_TTL`: TTL announced in our PINGs. Default off.
    pub heartbeat_ttl: Option<Duration>,
    /// `ZMQ_HEARTBEAT_TIMEOUT`: close a peer silent this long after a PING. Default: the interval.
    pub heartbeat_timeout: Option<Duration>,
    /// `ZMQ_IMMEDIATE`: queue messages only to peers whose handshake is done. Default false:
    /// a `connect` gets its queue at once, so messages wait for the connection.
    pub immediate: bool,
    /// `ZMQ_CONFLATE`: keep only the last message. Honoured on DEALER, PULL, PUSH, PUB and
    /// SUB, ignored on other types (as libzmq does). Default false.
    pub conflate: bool,
    /// `ZMQ_MAXMSGSIZE`: largest inbound message in bytes; `None` = no limit (default).
    pub maxmsgsize: Option<u64>,
    /// Most frames an inbound message may have (not a libzmq option): a peer exceeding it
    /// is disconnected. Default 65536; `None` = no limit.
    pub max_message_frames: Option<usize>,
    /// `ZMQ_ROUTER_MANDATORY`: unroutable sends fail instead of being dropped.
    pub router_mandatory: bool,
    /// `ZMQ_ROUTER_HANDOVER`: a new peer with a taken id takes it over.
    pub router_handover: bool,
    /// `ZMQ_PROBE_ROUTER` (ROUTER, DEALER, REQ): send an empty message to each new peer.
    pub probe_router: bool,
    /// `ZMQ_REQ_CORRELATE`: prefix requests with an id and accept only the matching reply.
    pub req_correlate: bool,
    /// `ZMQ_REQ_RELAXED`: allow a new request before the reply to the last one.
    pub req_relaxed: bool,
    /// `ZMQ_XPUB_VERBOSE`: pass every subscription to the application, not only the first.
    pub xpub_verbose: bool,
    /// `ZMQ_XPUB_VERBOSER`: also pass every unsubscription, not only the last.
    pub xpub_verboser: bool,
    /// `ZMQ_XPUB_NODROP`: at HWM, `send` would block instead of dropping.
    pub xpub_nodrop: bool,
    /// `ZMQ_XPUB_WELCOME_MSG`: a message sent to each new subscriber.
    pub xpub_welcome_msg: Option<Bytes>,
    /// The security mechanism and our role in it: `ZMQ_PLAIN_SERVER`,
    /// `ZMQ_PLAIN_USERNAME`/`ZMQ_PLAIN_PASSWORD`, `ZMQ_CURVE_SERVER`,
    /// `ZMQ_CURVE_PUBLICKEY`/`ZMQ_CURVE_SECRETKEY`/`ZMQ_CURVE_SERVERKEY`. Default NULL.
    pub security: Security,
    /// `ZMQ_ZAP_DOMAIN`: the domain sent to the ZAP handler. A non-empty domain makes
    /// NULL connections ask ZAP too. Default empty.
    pub zap_domain: Bytes,
    /// `ZMQ_ZAP_ENFORCE_DOMAIN`: with CURVE, skip ZAP when the domain is empty and refuse
    /// clients when a domain is set but no handler is there. Default false.
    pub zap_enforce_domain: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            sndhwm: 1000,
            rcvhwm: 1000,
            linger: None,
            routing_id: Bytes::new(),
            connect_routing_id: None,
            reconnect_ivl: Some(Duration::from_millis(100)),
            reconnect_ivl_max: Duration::ZERO,
            handshake_ivl: Some(crate::DEFAULT_HANDSHAKE_TIMEOUT),
            heartbeat_ivl: None,
            heartbeat_ttl: None,
            heartbeat_timeout: None,
            immediate: false,
            conflate: false,
            maxmsgsize: None,
            max_message_frames: Some(crate::DEFAULT_MAX_MESSAGE_FRAMES),
            router_mandatory: false,
            router_handover: false,
            probe_router: false,
            req_correlate: false,
            req_relaxed: false,
            xpub_verbose: false,
            xpub_verboser: false,
            xpub_nodrop: false,
            xpub_welcome_msg: None,
            security: Security::Null,
            zap_domain: Bytes::new(),
            zap_enforce_domain: false,
        }
    }
}
