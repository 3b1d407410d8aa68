//! Socket options, with libzmq's defaults.

use core::time::Duration;

use alloc::collections::BTreeMap;

use bytes::Bytes;

use crate::mechanism::Security;

/// `ZMQ_METADATA`'s properties: application metadata (`X-` names) sent in the handshake,
/// by name. Each name starts with `X-` and is at most 255 bytes; they go out in name order.
pub type AppMetadata = BTreeMap<Bytes, Bytes>;

/// Options every driver shares. Defaults are libzmq 4.3's.
///
/// Subscriptions (`ZMQ_SUBSCRIBE`/`ZMQ_UNSUBSCRIBE`) are calls on the socket, not fields.
///
/// Built from the defaults with the `with_*` methods (the struct is `#[non_exhaustive]`),
/// and read field by field:
///
/// ```
/// use std::time::Duration;
/// use zmtp_proto::mechanism::Security;
/// use zmtp_proto::socket::Options;
///
/// let defaults = Options::default();
/// assert_eq!((defaults.sndhwm, defaults.rcvhwm), (1000, 1000));
/// assert_eq!(defaults.linger, None); // forever
/// assert_eq!(defaults.reconnect_ivl, Some(Duration::from_millis(100)));
/// assert_eq!(defaults.security, Security::Null);
///
/// let options = Options::default()
///     .with_sndhwm(0) // unlimited
///     .with_heartbeat_ivl(Some(Duration::from_secs(1)))
///     .with_security(Security::plain_client("admin", "secret")?);
/// assert_eq!(options.sndhwm, 0);
/// assert_eq!(options.heartbeat_ivl, Some(Duration::from_secs(1)));
/// assert!(!options.security.is_server());
/// assert_eq!(options.rcvhwm, defaults.rcvhwm); // the others keep their defaults
/// # Ok::<(), zmtp_proto::ConfigError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `ZMQ_SNDHWM`: messages queued per peer for sending (0 = unlimited). Default 1000.
    pub sndhwm: usize,
    /// `ZMQ_RCVHWM`: messages queued per peer for receiving (0 = unlimited). Default 1000.
    pub rcvhwm: usize,
    /// `ZMQ_LINGER`: how long `close` waits for queued messages; `None` = forever (default).
    pub linger: Option<Duration>,
    /// `ZMQ_ROUTING_ID`: our identity, sent by REQ, DEALER and ROUTER. Default empty. On a
    /// STREAM, as in libzmq, the routing id it generated last (for a connection accepted,
    /// or asked for by `connect`: how a program learns the id of the connection it just
    /// asked for).
    pub routing_id: Bytes,
    /// `ZMQ_CONNECT_ROUTING_ID` (ROUTER, STREAM): the id given to the peer of the next
    /// `connect`.
    pub connect_routing_id: Option<Bytes>,
    /// `ZMQ_RECONNECT_IVL`: wait before reconnecting; `None` = never reconnect (then a lost
    /// connection takes its connect endpoint with it, as in libzmq). Default 100 ms.
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
    /// `ZMQ_STREAM_NOTIFY` (STREAM): announce each connection coming up and going away
    /// as `[routing id][empty]`. Default true.
    pub stream_notify: bool,
    /// `ZMQ_ROUTER_NOTIFY` (ROUTER, a draft option): announce each peer whose handshake
    /// completed, and each such peer whose connection was lost (closed by the peer or
    /// failed, not dropped by us), as a message `[routing id][empty]`. Default: neither.
    pub router_notify: RouterNotify,
    /// `ZMQ_REQ_CORRELATE`: prefix requests with an id and accept only the matching reply.
    pub req_correlate: bool,
    /// `ZMQ_REQ_RELAXED`: allow a new request before the reply to the last one.
    pub req_relaxed: bool,
    /// `ZMQ_XPUB_VERBOSE`: pass every subscription to the application, not only the first.
    pub xpub_verbose: bool,
    /// `ZMQ_XPUB_VERBOSER`: pass every subscription (as `xpub_verbose`) and also every
    /// unsubscription, not only the last.
    pub xpub_verboser: bool,
    /// `ZMQ_XPUB_NODROP`: at HWM, `send` would block instead of dropping.
    pub xpub_nodrop: bool,
    /// `ZMQ_XPUB_WELCOME_MSG`: a message sent to each new subscriber.
    pub xpub_welcome_msg: Option<Bytes>,
    /// `ZMQ_XPUB_MANUAL` (XPUB): the application decides the subscriptions. Every
    /// subscription and unsubscription a peer sends is passed up (whatever the verbose
    /// options say) and changes nothing by itself; the XPUB's own `subscribe` and
    /// `unsubscribe` apply to the peer whose subscription message the application received
    /// last. A peer that leaves has an unsubscription passed up for each topic it had
    /// subscribed. Default false.
    pub xpub_manual: bool,
    /// `ZMQ_XPUB_MANUAL_LAST_VALUE` (XPUB): manual mode (as `xpub_manual`), and the first
    /// message sent after a subscription message was received goes only to that
    /// subscription's peer (if it matches); later ones go to every matching peer.
    /// Default false.
    pub xpub_manual_last_value: bool,
    /// `ZMQ_ONLY_FIRST_SUBSCRIBE` (XPUB, XSUB): in a message of several frames, the later
    /// frames are taken as subscriptions (first byte 1) or unsubscriptions (0) only if
    /// the first one is one; otherwise they are data. Default false: any frame starting
    /// with 1 or 0 is one.
    pub only_first_subscribe: bool,
    /// `ZMQ_XSUB_VERBOSE_UNSUBSCRIBE` (XSUB, a draft option): pass every unsubscription
    /// message on to the publishers, not only the one that removes the last of equal
    /// subscriptions (a topic not subscribed included). Default false.
    pub xsub_verbose_unsubscribe: bool,
    /// `ZMQ_INVERT_MATCHING`: PUB and XPUB send each message to the peers whose
    /// subscriptions do not match it (a peer that subscribed to nothing among them), and
    /// SUB keeps the messages that match none of its subscriptions. Default false.
    pub invert_matching: bool,
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
    /// `ZMQ_MULTICAST_LOOP` (`udp://` RADIO to a multicast group): our own host receives
    /// what we send. Default true, as in libzmq.
    pub multicast_loop: bool,
    /// `ZMQ_MULTICAST_HOPS` (`udp://` RADIO to a multicast group): the time to live of the
    /// datagrams. Default 1, as in libzmq (the local network only).
    pub multicast_hops: u32,
    /// `ZMQ_METADATA`: application properties (`X-` names) sent in our READY or INITIATE,
    /// readable on the peer's messages. Names must start with `X-` and be at most 255
    /// bytes, and all of them must fit in [`MAX_PROPERTIES_LEN`](crate::MAX_PROPERTIES_LEN)
    /// encoded; the socket refuses them otherwise. Default none.
    pub metadata: AppMetadata,
    /// `ZMQ_HELLO_MSG` (ROUTER, DEALER, SERVER, CLIENT, PEER; a draft option): a message
    /// sent to each peer once its handshake completes, on every connection and
    /// reconnection, before anything else. `None` (the default) sends none.
    pub hello_msg: Option<Bytes>,
    /// `ZMQ_DISCONNECT_MSG` (ROUTER, SERVER, PEER; a draft option): a message received from
    /// an accepted peer whose connection was lost after its handshake (closed by the peer,
    /// or failed; not closed by us), after what it sent whole. `None` (the default): none.
    pub disconnect_msg: Option<Bytes>,
    /// `ZMQ_HICCUP_MSG` (DEALER, CLIENT, PEER; a draft option): a message received from a
    /// connect peer whose connection was lost after its handshake (closed by the peer, or
    /// failed; not closed by us), after what it sent whole. `None` (the default): none.
    pub hiccup_msg: Option<Bytes>,
    /// `ZMQ_RECONNECT_STOP` (a draft option): when a connect endpoint stops reconnecting.
    /// Default: never.
    pub reconnect_stop: ReconnectStop,
    /// Accept peers that speak ZMTP 1.0 or 2.0 (not a libzmq option: libzmq always does).
    /// Default true. They get no security: with a mechanism other than NULL, or a ZAP
    /// domain, they are refused whatever this says, as libzmq refuses them.
    pub legacy_peers: bool,
    /// Attach the sending peer's properties ([`Message::property`](super::Message::property))
    /// to every message from a ZMTP 3 peer, as libzmq does (its `zmq_msg_gets` and
    /// `ZMQ_SRCFD` read them), not only to those from peers a ZAP handler accepted or that
    /// sent `X-` properties. Not a libzmq option. Default false: each message then costs a
    /// reference count more.
    pub properties_on_every_message: bool,
    /// `ZMQ_TCP_ACCEPT_FILTER`: the networks a listener accepts TCP and WebSocket peers
    /// from; a peer in none of them is closed at once (`ACCEPT_FAILED`). Empty (the
    /// default): every peer. libzmq adds one network per call and clears the list with an
    /// empty one; here the whole list is set at once.
    pub tcp_accept_filters: alloc::vec::Vec<crate::socket::TcpAcceptFilter>,
    /// `ZMQ_IPC_FILTER_PID`, `_UID`, `_GID`: the processes, users and groups a listener
    /// accepts `ipc://` peers from; a peer matching none is closed at once
    /// (`ACCEPT_FAILED`). All empty (the default): every peer.
    pub ipc_accept_filters: crate::socket::IpcAcceptFilters,
    /// `ZMQ_SOCKS_PROXY`, `ZMQ_SOCKS_USERNAME`, `ZMQ_SOCKS_PASSWORD`: the SOCKS5 proxy
    /// that `tcp://` connects go through (the stream is opened to the proxy, which is asked
    /// to connect it to the endpoint; the endpoint's host is not looked up here). `None`
    /// (the default): none.
    pub socks_proxy: Option<crate::socket::SocksProxy>,
    /// `ZMQ_SNDBUF`: the kernel's send buffer (`SO_SNDBUF`) of `tcp://` and `ws://`
    /// connections, in bytes, set before each socket binds or connects (as libzmq sets
    /// it: a listener's connections inherit it); Linux reserves twice the size asked.
    /// `None` (the default, libzmq's -1): the system's default.
    pub sndbuf: Option<usize>,
    /// `ZMQ_RCVBUF`: the kernel's receive buffer (`SO_RCVBUF`) of `tcp://` and `ws://`
    /// connections, as [`sndbuf`](Options::sndbuf). Set before the connection is made, it
    /// also sets the TCP window the connection starts with. `None` (the default): the
    /// system's default.
    pub rcvbuf: Option<usize>,
    /// `ZMQ_TCP_KEEPALIVE`: TCP keepalive probes on `tcp://` and `ws://` connections
    /// (`SO_KEEPALIVE`) on or off; `None` (the default, libzmq's -1): the system's choice
    /// (off on Linux). The three settings after it apply only when it is `Some(true)`, as
    /// in libzmq.
    pub tcp_keepalive: Option<bool>,
    /// `ZMQ_TCP_KEEPALIVE_CNT`: probes unanswered before the connection is dropped
    /// (`TCP_KEEPCNT`); `None` (the default) or 0: the system's.
    pub tcp_keepalive_cnt: Option<u32>,
    /// `ZMQ_TCP_KEEPALIVE_IDLE`: silence before the first probe (`TCP_KEEPIDLE`; whole
    /// seconds); `None` (the default) or zero: the system's.
    pub tcp_keepalive_idle: Option<Duration>,
    /// `ZMQ_TCP_KEEPALIVE_INTVL`: between probes (`TCP_KEEPINTVL`; whole seconds); `None`
    /// (the default) or zero: the system's.
    pub tcp_keepalive_intvl: Option<Duration>,
    /// `ZMQ_TOS`: the IP type of service (or IPv6 traffic class) of `tcp://` and `ws://`
    /// connections' packets; 0 (the default) leaves the system's.
    pub tos: u32,
    /// `ZMQ_BACKLOG`: connections a `tcp://` or `ws://` listener holds before they are
    /// accepted (`listen(2)`'s backlog). Default 100, as libzmq.
    pub backlog: u32,
    /// `ZMQ_TCP_MAXRT`: how long data may stay unacknowledged before the connection is
    /// dropped (`TCP_USER_TIMEOUT`, in milliseconds); `None` (the default): the system's.
    pub tcp_maxrt: Option<Duration>,
}

/// `ZMQ_ROUTER_NOTIFY`'s value: which of its peers' arrivals and departures a ROUTER
/// announces. Each announcement is a message of two frames, the peer's routing id and an
/// empty frame, received among the peer's messages: on arrival, once the handshake is done,
/// before anything the peer sends; on departure (the peer closed the connection, or it
/// failed after the handshake), after everything the peer sent whole. A connection we
/// close ourselves (`disconnect`, `unbind`, a handover, closing the socket) is not
/// announced, as in libzmq.
///
/// ```
/// use zmtp_proto::socket::RouterNotify;
///
/// assert_eq!(RouterNotify::from_bits(3), Some(RouterNotify::BOTH));
/// assert_eq!(RouterNotify::BOTH.bits(), 3); // ZMQ_NOTIFY_CONNECT | ZMQ_NOTIFY_DISCONNECT
/// assert!(RouterNotify::from_bits(4).is_none());
/// assert!(RouterNotify::CONNECT.connect && !RouterNotify::CONNECT.disconnect);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RouterNotify {
    /// `ZMQ_NOTIFY_CONNECT` (1): announce a peer whose handshake completed.
    pub connect: bool,
    /// `ZMQ_NOTIFY_DISCONNECT` (2): announce a peer whose connection was lost.
    pub disconnect: bool,
}

impl RouterNotify {
    /// No announcement (the default; libzmq's 0).
    pub const NONE: RouterNotify = RouterNotify {
        connect: false,
        disconnect: false,
    };
    /// Arrivals only (`ZMQ_NOTIFY_CONNECT`).
    pub const CONNECT: RouterNotify = RouterNotify {
        connect: true,
        disconnect: false,
    };
    /// Departures only (`ZMQ_NOTIFY_DISCONNECT`).
    pub const DISCONNECT: RouterNotify = RouterNotify {
        connect: false,
        disconnect: true,
    };
    /// Both.
    pub const BOTH: RouterNotify = RouterNotify {
        connect: true,
        disconnect: true,
    };

    /// From libzmq's bit set (`ZMQ_NOTIFY_CONNECT` 1, `ZMQ_NOTIFY_DISCONNECT` 2); `None`
    /// for any other bit.
    pub fn from_bits(bits: u32) -> Option<RouterNotify> {
        (bits <= 3).then_some(RouterNotify {
            connect: bits & 1 != 0,
            disconnect: bits & 2 != 0,
        })
    }

    /// libzmq's bit set.
    pub fn bits(self) -> u32 {
        u32::from(self.connect) | u32::from(self.disconnect) << 1
    }
}

/// `ZMQ_RECONNECT_STOP`'s value: when a connect endpoint gives up instead of reconnecting.
/// An endpoint that gives up on a refused connection is dropped as `disconnect` drops it
/// (a `CLOSED` monitor event says so); one that gives up after a failed handshake stays,
/// as after a protocol error, without reconnecting.
///
/// ```
/// use zmtp_proto::socket::ReconnectStop;
///
/// let stop = ReconnectStop::from_bits(1 | 2);
/// assert!(stop.conn_refused && stop.handshake_failed && !stop.after_disconnect);
/// assert_eq!(stop.bits(), 3);
/// assert_eq!(ReconnectStop::default(), ReconnectStop::NEVER);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ReconnectStop {
    /// `ZMQ_RECONNECT_STOP_CONN_REFUSED` (1): a connection refused (`ECONNREFUSED`) ends
    /// the endpoint.
    pub conn_refused: bool,
    /// `ZMQ_RECONNECT_STOP_HANDSHAKE_FAILED` (2): a connection that ends before its
    /// handshake completes (closed, timed out) is not made again.
    pub handshake_failed: bool,
    /// `ZMQ_RECONNECT_STOP_AFTER_DISCONNECT` (4): once `disconnect` was called on the
    /// socket, an `ipc://` connection refused ends its endpoint (as in libzmq, where only
    /// its ipc connecter reads this bit).
    pub after_disconnect: bool,
}

impl ReconnectStop {
    /// Always reconnect (the default; libzmq's 0).
    pub const NEVER: ReconnectStop = ReconnectStop {
        conn_refused: false,
        handshake_failed: false,
        after_disconnect: false,
    };

    /// From libzmq's bit set (`ZMQ_RECONNECT_STOP_CONN_REFUSED` 1,
    /// `ZMQ_RECONNECT_STOP_HANDSHAKE_FAILED` 2, `ZMQ_RECONNECT_STOP_AFTER_DISCONNECT` 4);
    /// other bits are ignored, as libzmq ignores them.
    pub fn from_bits(bits: u32) -> ReconnectStop {
        ReconnectStop {
            conn_refused: bits & 1 != 0,
            handshake_failed: bits & 2 != 0,
            after_disconnect: bits & 4 != 0,
        }
    }

    /// libzmq's bit set.
    pub fn bits(self) -> u32 {
        u32::from(self.conn_refused)
            | u32::from(self.handshake_failed) << 1
            | u32::from(self.after_disconnect) << 2
    }
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
            stream_notify: true,
            router_notify: RouterNotify::NONE,
            metadata: AppMetadata::new(),
            hello_msg: None,
            disconnect_msg: None,
            hiccup_msg: None,
            reconnect_stop: ReconnectStop::NEVER,
            legacy_peers: true,
            properties_on_every_message: false,
            req_correlate: false,
            req_relaxed: false,
            xpub_verbose: false,
            xpub_verboser: false,
            xpub_nodrop: false,
            xpub_welcome_msg: None,
            xpub_manual: false,
            xpub_manual_last_value: false,
            only_first_subscribe: false,
            xsub_verbose_unsubscribe: false,
            invert_matching: false,
            security: Security::Null,
            zap_domain: Bytes::new(),
            zap_enforce_domain: false,
            multicast_loop: true,
            multicast_hops: 1,
            tcp_accept_filters: alloc::vec::Vec::new(),
            ipc_accept_filters: crate::socket::IpcAcceptFilters::default(),
            socks_proxy: None,
            sndbuf: None,
            rcvbuf: None,
            tcp_keepalive: None,
            tcp_keepalive_cnt: None,
            tcp_keepalive_idle: None,
            tcp_keepalive_intvl: None,
            tos: 0,
            backlog: 100,
            tcp_maxrt: None,
        }
    }
}

/// The table of options, written once: each field of [`Options`] with its builder method
/// (`with_*`, on `Options`), its setter on a live driver socket (`set_*`, generated in
/// each driver by `zmtp_driver::option_setters!`), the argument both take and the value
/// it becomes, and when a change on a live socket takes effect.
///
/// `__options_table!(callback)` expands to `callback! { entries }`, one entry per option:
/// `/// docs  field, with_field, set_field, (arg: Type) => value, "when it applies";`.
/// Types are written with `$crate` paths so that the table expands in any crate.
#[doc(hidden)]
#[macro_export]
macro_rules! __options_table {
    ($($callback:tt)+) => {
        $($callback)+! {
            /// `ZMQ_SNDHWM`: most messages queued per peer for sending (0 = unlimited).
            /// Default 1000.
            sndhwm, with_sndhwm, set_sndhwm, (hwm: usize) => hwm,
                "at once: every send from then on is counted against it";
            /// `ZMQ_RCVHWM`: most messages queued per peer for receiving (0 = unlimited).
            /// Default 1000.
            rcvhwm, with_rcvhwm, set_rcvhwm, (hwm: usize) => hwm,
                "at once, to what is read from peers from then on";
            /// `ZMQ_LINGER`: how long closing waits for queued messages to be written;
            /// `None` = forever (default), `Some(Duration::ZERO)` = not at all.
            linger, with_linger, set_linger, (linger: Option<::core::time::Duration>) => linger,
                "at once: closing reads it";
            /// `ZMQ_ROUTING_ID`: our identity, sent by REQ, DEALER and ROUTER (at most 255
            /// bytes). Default empty.
            routing_id, with_routing_id, set_routing_id, (id: impl Into<$crate::Bytes>) => id.into(),
                "to connections made afterwards";
            /// `ZMQ_CONNECT_ROUTING_ID` (ROUTER, STREAM): the routing id given to the peer of the
            /// next `connect` (at most 255 bytes), used up by that `connect`.
            connect_routing_id, with_connect_routing_id, set_connect_routing_id,
                (id: impl Into<$crate::Bytes>) => Some(id.into()),
                "to the next `connect`";
            /// `ZMQ_RECONNECT_IVL`: wait before reconnecting; `None` = never reconnect.
            /// Default 100 ms.
            reconnect_ivl, with_reconnect_ivl, set_reconnect_ivl,
                (ivl: Option<::core::time::Duration>) => ivl,
                "to reconnections scheduled afterwards";
            /// `ZMQ_RECONNECT_IVL_MAX`: when above the reconnect interval, each failed
            /// attempt doubles the wait up to this. Default zero: no backoff.
            reconnect_ivl_max, with_reconnect_ivl_max, set_reconnect_ivl_max,
                (max: ::core::time::Duration) => max,
                "to reconnections scheduled afterwards";
            /// `ZMQ_HANDSHAKE_IVL`: handshake deadline; `None` = none. Default 30 s.
            handshake_ivl, with_handshake_ivl, set_handshake_ivl,
                (ivl: Option<::core::time::Duration>) => ivl,
                "to connections made afterwards";
            /// `ZMQ_HEARTBEAT_IVL`: send a PING this often; `None` = never (default).
            heartbeat_ivl, with_heartbeat_ivl, set_heartbeat_ivl,
                (ivl: Option<::core::time::Duration>) => ivl,
                "to connections made afterwards";
            /// `ZMQ_HEARTBEAT_TTL`: the time to live announced in our PINGs. Default none.
            heartbeat_ttl, with_heartbeat_ttl, set_heartbeat_ttl,
                (ttl: Option<::core::time::Duration>) => ttl,
                "to connections made afterwards";
            /// `ZMQ_HEARTBEAT_TIMEOUT`: close a peer silent this long after a PING.
            /// Default: the heartbeat interval.
            heartbeat_timeout, with_heartbeat_timeout, set_heartbeat_timeout,
                (timeout: Option<::core::time::Duration>) => timeout,
                "to connections made afterwards";
            /// `ZMQ_IMMEDIATE`: queue messages only to peers whose handshake is done.
            /// Default false.
            immediate, with_immediate, set_immediate, (immediate: bool) => immediate,
                "to `connect`s made afterwards";
            /// `ZMQ_CONFLATE`: keep only the last message (DEALER, PULL, PUSH, PUB and
            /// SUB; ignored elsewhere). Default false.
            conflate, with_conflate, set_conflate, (conflate: bool) => conflate,
                "at once";
            /// `ZMQ_MAXMSGSIZE`: largest inbound message in bytes; `None` = no limit
            /// (default).
            maxmsgsize, with_maxmsgsize, set_maxmsgsize, (max: Option<u64>) => max,
                "to connections made afterwards";
            /// Most frames an inbound message may have (not a libzmq option); `None` = no
            /// limit. Default 65536.
            max_message_frames, with_max_message_frames, set_max_message_frames,
                (max: Option<usize>) => max,
                "to connections made afterwards";
            /// `ZMQ_ROUTER_MANDATORY`: unroutable sends fail instead of being dropped.
            router_mandatory, with_router_mandatory, set_router_mandatory, (on: bool) => on,
                "at once";
            /// `ZMQ_ROUTER_HANDOVER`: a new peer with a routing id in use takes it over.
            router_handover, with_router_handover, set_router_handover, (on: bool) => on,
                "at once";
            /// `ZMQ_PROBE_ROUTER` (ROUTER, DEALER, REQ): send an empty message to each new
            /// peer.
            probe_router, with_probe_router, set_probe_router, (on: bool) => on,
                "to peers that connect afterwards";
            /// `ZMQ_STREAM_NOTIFY` (STREAM): announce each connection coming up and going
            /// away as `[routing id][empty]`. Default true.
            stream_notify, with_stream_notify, set_stream_notify, (on: bool) => on,
                "at once";
            /// `ZMQ_ROUTER_NOTIFY` (ROUTER): announce peers connecting (after their
            /// handshake) and disconnecting as `[routing id][empty]`. Default: neither.
            router_notify, with_router_notify, set_router_notify,
                (notify: $crate::socket::RouterNotify) => notify,
                "to connections that complete their handshake or are lost afterwards";
            /// `ZMQ_METADATA`: application properties (`X-` names, at most 255 bytes each)
            /// sent in the handshake. Default none.
            metadata, with_metadata, set_metadata,
                (properties: $crate::socket::AppMetadata) => properties,
                "to connections made afterwards";
            /// `ZMQ_HELLO_MSG` (ROUTER, DEALER, SERVER, CLIENT, PEER): a message sent to
            /// each peer once its handshake completes; an empty one means none, as in
            /// libzmq.
            hello_msg, with_hello_msg, set_hello_msg,
                (msg: impl Into<$crate::Bytes>) => {
                    let msg: $crate::Bytes = msg.into();
                    (!msg.is_empty()).then_some(msg)
                },
                "to handshakes completed afterwards";
            /// `ZMQ_DISCONNECT_MSG` (ROUTER, SERVER, PEER): a message received when an
            /// accepted peer's connection is lost after its handshake; an empty one means
            /// none.
            disconnect_msg, with_disconnect_msg, set_disconnect_msg,
                (msg: impl Into<$crate::Bytes>) => {
                    let msg: $crate::Bytes = msg.into();
                    (!msg.is_empty()).then_some(msg)
                },
                "to connections lost afterwards";
            /// `ZMQ_HICCUP_MSG` (DEALER, CLIENT, PEER): a message received when a connect
            /// peer's connection is lost after its handshake; an empty one means none.
            hiccup_msg, with_hiccup_msg, set_hiccup_msg,
                (msg: impl Into<$crate::Bytes>) => {
                    let msg: $crate::Bytes = msg.into();
                    (!msg.is_empty()).then_some(msg)
                },
                "to connections lost afterwards";
            /// `ZMQ_RECONNECT_STOP`: when a connect endpoint stops reconnecting. Default:
            /// never.
            reconnect_stop, with_reconnect_stop, set_reconnect_stop,
                (stop: $crate::socket::ReconnectStop) => stop,
                "to connection failures afterwards";
            /// Accept peers that speak ZMTP 1.0 or 2.0 (not a libzmq option: libzmq
            /// always does). Default true; never with a security mechanism or ZAP domain.
            legacy_peers, with_legacy_peers, set_legacy_peers, (on: bool) => on,
                "to connections made afterwards";
            /// Attach the sending peer's properties to every message from a ZMTP 3 peer,
            /// as libzmq does, not only to those from authenticated peers or peers with
            /// `X-` properties. Default false.
            properties_on_every_message, with_properties_on_every_message,
                set_properties_on_every_message, (on: bool) => on,
                "to handshakes completed afterwards";
            /// `ZMQ_REQ_CORRELATE`: prefix requests with an id and accept only the
            /// matching reply.
            req_correlate, with_req_correlate, set_req_correlate, (on: bool) => on,
                "at once";
            /// `ZMQ_REQ_RELAXED`: allow a new request before the reply to the last one.
            req_relaxed, with_req_relaxed, set_req_relaxed, (on: bool) => on,
                "at once";
            /// `ZMQ_XPUB_VERBOSE`: pass every subscription to the application, not only
            /// the first.
            xpub_verbose, with_xpub_verbose, set_xpub_verbose, (on: bool) => on,
                "at once";
            /// `ZMQ_XPUB_VERBOSER`: pass every subscription and also every
            /// unsubscription, not only the last.
            xpub_verboser, with_xpub_verboser, set_xpub_verboser, (on: bool) => on,
                "at once";
            /// `ZMQ_XPUB_NODROP`: at HWM, `send` would block instead of dropping.
            xpub_nodrop, with_xpub_nodrop, set_xpub_nodrop, (on: bool) => on,
                "at once";
            /// `ZMQ_XPUB_WELCOME_MSG`: a message sent to each new subscriber; an empty one
            /// means none, as in libzmq.
            xpub_welcome_msg, with_xpub_welcome_msg, set_xpub_welcome_msg,
                (msg: impl Into<$crate::Bytes>) => {
                    let msg: $crate::Bytes = msg.into();
                    (!msg.is_empty()).then_some(msg)
                },
                "to subscribers that connect afterwards";
            /// `ZMQ_XPUB_MANUAL` (XPUB): the application decides the subscriptions, with
            /// the XPUB's `subscribe` and `unsubscribe` applied to the peer of the
            /// subscription message it received last.
            xpub_manual, with_xpub_manual, set_xpub_manual, (on: bool) => on,
                "at once";
            /// `ZMQ_XPUB_MANUAL_LAST_VALUE` (XPUB): manual mode, and the first message sent
            /// after a subscription message was received goes only to its peer.
            xpub_manual_last_value, with_xpub_manual_last_value,
                set_xpub_manual_last_value, (on: bool) => on,
                "at once";
            /// `ZMQ_ONLY_FIRST_SUBSCRIBE` (XPUB, XSUB): the later frames of a message are
            /// subscriptions only if its first frame is one.
            only_first_subscribe, with_only_first_subscribe, set_only_first_subscribe,
                (on: bool) => on,
                "at once";
            /// `ZMQ_XSUB_VERBOSE_UNSUBSCRIBE` (XSUB): pass every unsubscription on, not
            /// only the last of equal subscriptions.
            xsub_verbose_unsubscribe, with_xsub_verbose_unsubscribe,
                set_xsub_verbose_unsubscribe, (on: bool) => on,
                "at once";
            /// `ZMQ_INVERT_MATCHING`: PUB and XPUB send each message to the peers whose
            /// subscriptions do not match it; SUB keeps the messages that match none of
            /// its own. Default false.
            invert_matching, with_invert_matching, set_invert_matching, (on: bool) => on,
                "at once";
            /// The security mechanism and our role in it (`ZMQ_PLAIN_SERVER`,
            /// `ZMQ_PLAIN_USERNAME`, `ZMQ_CURVE_SERVER`, `ZMQ_CURVE_SERVERKEY`, …, as one
            /// value). Default NULL.
            security, with_security, set_security,
                (security: $crate::mechanism::Security) => security,
                "to connections made afterwards";
            /// `ZMQ_ZAP_DOMAIN`: the domain sent to the ZAP handler; a non-empty domain
            /// makes NULL connections ask ZAP too. Default empty.
            zap_domain, with_zap_domain, set_zap_domain,
                (domain: impl Into<$crate::Bytes>) => domain.into(),
                "to connections made afterwards";
            /// `ZMQ_ZAP_ENFORCE_DOMAIN`: with CURVE, skip ZAP when the domain is empty and
            /// refuse clients when a domain is set but no handler is there.
            zap_enforce_domain, with_zap_enforce_domain, set_zap_enforce_domain,
                (on: bool) => on,
                "to connections made afterwards";
            /// `ZMQ_MULTICAST_LOOP` (`udp://` RADIO to a multicast group): our own host
            /// receives what we send. Default true.
            multicast_loop, with_multicast_loop, set_multicast_loop, (on: bool) => on,
                "to `udp://` endpoints connected afterwards";
            /// `ZMQ_MULTICAST_HOPS` (`udp://` RADIO to a multicast group): the time to live
            /// of the datagrams. Default 1.
            multicast_hops, with_multicast_hops, set_multicast_hops, (hops: u32) => hops,
                "to `udp://` endpoints connected afterwards";
            /// `ZMQ_TCP_ACCEPT_FILTER`: the networks a listener accepts TCP and WebSocket
            /// peers from (none: every peer); a peer in none of them is closed at once.
            tcp_accept_filters, with_tcp_accept_filters, set_tcp_accept_filters,
                (networks: impl IntoIterator<Item = $crate::socket::TcpAcceptFilter>)
                    => networks.into_iter().collect(),
                "to peers accepted afterwards";
            /// `ZMQ_IPC_FILTER_PID`, `_UID`, `_GID`: the processes, users and groups a
            /// listener accepts `ipc://` peers from (none: every peer).
            ipc_accept_filters, with_ipc_accept_filters, set_ipc_accept_filters,
                (filters: $crate::socket::IpcAcceptFilters) => filters,
                "to peers accepted afterwards";
            /// `ZMQ_SOCKS_PROXY` (with `ZMQ_SOCKS_USERNAME` and `ZMQ_SOCKS_PASSWORD`): the
            /// SOCKS5 proxy `tcp://` connects go through (none: direct).
            socks_proxy, with_socks_proxy, set_socks_proxy,
                (proxy: Option<$crate::socket::SocksProxy>) => proxy,
                "to endpoints connected afterwards";
            /// `ZMQ_SNDBUF`: the kernel's send buffer of `tcp://` and `ws://` connections,
            /// in bytes (`None`: the system's default).
            sndbuf, with_sndbuf, set_sndbuf, (bytes: Option<usize>) => bytes,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_RCVBUF`: the kernel's receive buffer of `tcp://` and `ws://`
            /// connections, in bytes (`None`: the system's default).
            rcvbuf, with_rcvbuf, set_rcvbuf, (bytes: Option<usize>) => bytes,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_TCP_KEEPALIVE`: TCP keepalive probes on or off (`None`: the system's).
            tcp_keepalive, with_tcp_keepalive, set_tcp_keepalive, (on: Option<bool>) => on,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_TCP_KEEPALIVE_CNT`: probes unanswered before the connection is dropped.
            tcp_keepalive_cnt, with_tcp_keepalive_cnt, set_tcp_keepalive_cnt,
                (probes: Option<u32>) => probes,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_TCP_KEEPALIVE_IDLE`: silence before the first probe (whole seconds).
            tcp_keepalive_idle, with_tcp_keepalive_idle, set_tcp_keepalive_idle,
                (idle: Option<::core::time::Duration>) => idle,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_TCP_KEEPALIVE_INTVL`: between probes (whole seconds).
            tcp_keepalive_intvl, with_tcp_keepalive_intvl, set_tcp_keepalive_intvl,
                (interval: Option<::core::time::Duration>) => interval,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_TOS`: the IP type of service of the packets (0: the system's).
            tos, with_tos, set_tos, (tos: u32) => tos,
                "to endpoints bound and connections made afterwards";
            /// `ZMQ_BACKLOG`: connections a listener holds before they are accepted.
            /// Default 100.
            backlog, with_backlog, set_backlog, (connections: u32) => connections,
                "to endpoints bound afterwards";
            /// `ZMQ_TCP_MAXRT`: how long data may stay unacknowledged before the
            /// connection is dropped (`None`: the system's).
            tcp_maxrt, with_tcp_maxrt, set_tcp_maxrt,
                (limit: Option<::core::time::Duration>) => limit,
                "to endpoints bound and connections made afterwards";
        }
    };
}

/// Expands the table into `Options`' builder methods.
macro_rules! builder_methods {
    ($(
        $(#[$doc:meta])*
        $field:ident, $with:ident, $set:ident, ($arg:ident : $ty:ty) => $value:expr, $applies:literal;
    )*) => {
        /// Builder methods, one per option, named after libzmq's (`with_sndhwm` for
        /// `ZMQ_SNDHWM`), so that options can be given one at a time from any crate (the
        /// struct is `#[non_exhaustive]`: it cannot be written as a literal outside this
        /// crate):
        ///
        /// ```
        /// use std::time::Duration;
        /// use zmtp_proto::socket::Options;
        ///
        /// let options = Options::default()
        ///     .with_linger(Some(Duration::ZERO))
        ///     .with_sndhwm(10)
        ///     .with_routing_id("worker-1");
        /// assert_eq!(options.sndhwm, 10);
        /// assert_eq!(options.linger, Some(Duration::ZERO));
        /// assert_eq!(&options.routing_id[..], b"worker-1");
        /// ```
        ///
        /// Values are checked when the options are given to a socket (a routing id over
        /// 255 bytes is refused there). On a live socket, the drivers' `set_*` methods
        /// change one option each.
        impl Options {
            $(
                $(#[$doc])*
                #[doc = ""]
                #[doc = concat!(
                    "Sets [`", stringify!($field), "`](Options::", stringify!($field),
                    "); on a live socket it applies ", $applies, "."
                )]
                #[must_use]
                pub fn $with(mut self, $arg: $ty) -> Options {
                    self.$field = $value;
                    self
                }
            )*
        }
    };
}

crate::__options_table!(builder_methods);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_each_field_and_only_that_field() {
        let d = Options::default();
        let o = Options::default()
            .with_sndhwm(7)
            .with_rcvhwm(8)
            .with_linger(Some(Duration::ZERO))
            .with_routing_id("me")
            .with_connect_routing_id(Bytes::from_static(b"peer"))
            .with_reconnect_ivl(None)
            .with_reconnect_ivl_max(Duration::from_secs(1))
            .with_immediate(true)
            .with_maxmsgsize(Some(64))
            .with_xpub_welcome_msg("hi")
            .with_zap_domain("global");
        assert_eq!((o.sndhwm, o.rcvhwm), (7, 8));
        assert_eq!(o.linger, Some(Duration::ZERO));
        assert_eq!(&o.routing_id[..], b"me");
        assert_eq!(o.connect_routing_id.as_deref(), Some(&b"peer"[..]));
        assert_eq!(o.reconnect_ivl, None);
        assert_eq!(o.reconnect_ivl_max, Duration::from_secs(1));
        assert!(o.immediate);
        assert_eq!(o.maxmsgsize, Some(64));
        assert_eq!(o.xpub_welcome_msg.as_deref(), Some(&b"hi"[..]));
        assert_eq!(&o.zap_domain[..], b"global");
        // Untouched fields keep their defaults.
        assert_eq!(o.handshake_ivl, d.handshake_ivl);
        assert_eq!(o.security, d.security);
        assert_eq!(o.max_message_frames, d.max_message_frames);
        // An empty welcome message is none, as in libzmq.
        assert_eq!(d.with_xpub_welcome_msg("").xpub_welcome_msg, None);
    }
}
