//! libzmq's C ABI on the zmtp core: a `libzmq.so.5` (and `libzmq.a`) that programs and
//! language bindings written for libzmq 4.3 load in its place, with our own `zmq.h`
//! (in `include/`, the draft API behind `ZMQ_BUILD_DRAFT_API` as in libzmq's) and a
//! pkg-config file (`libzmq.pc.in`).
//!
//! # Why the blocking driver
//! libzmq's calls block, each bounded by a timeout (`ZMQ_SNDTIMEO`, `ZMQ_RCVTIMEO`,
//! `zmq_poll`'s), any thread may call them, and a context owns background I/O threads.
//! `zmtp-mio` is that model already: blocking, thread-safe sockets with timeouts, one I/O
//! thread per context, `poll` over several sockets, LINGER on close and at the context's
//! end. The async drivers would need a runtime inside the library and a hop to it per
//! call. This crate only translates: handles, `errno`, `zmq_msg_t`, frame-at-a-time
//! sending and receiving; every protocol and pattern decision stays in the core.
//!
//! # Handles
//! Contexts and sockets are handed out as opaque pointers and looked up in a table on
//! every call, so a NULL, closed or made-up handle fails with libzmq's errno (`EFAULT`
//! for a context, `ENOTSOCK` for a socket) instead of being dereferenced. No panic
//! crosses the C boundary: every entry point catches one and fails with `EINVAL`.
//!
//! # Exported so far
//! - `zmq_version`, `zmq_errno`, `zmq_strerror` (libzmq's numbers: `EFSM`,
//!   `ENOCOMPATPROTO`, `ETERM`, `EMTHREAD`; the system's for the others on Linux),
//!   `zmq_has`.
//! - `zmq_ctx_new`, `zmq_ctx_term`, `zmq_ctx_shutdown`, `zmq_ctx_set`, `zmq_ctx_get`,
//!   `zmq_init`, `zmq_term`, `zmq_ctx_destroy`, the draft `zmq_ctx_set_ext` and
//!   `zmq_ctx_get_ext`: terminating a context makes every call on
//!   its sockets but `zmq_close` fail with `ETERM` (blocked ones too), then waits until
//!   every socket is closed and has lingered. `ZMQ_THREAD_AFFINITY_CPU_ADD` and `_REMOVE`
//!   pin the context's I/O thread at once; `ZMQ_THREAD_SCHED_POLICY`, `_PRIORITY` and
//!   `_NAME_PREFIX` are kept and reported back, not applied.
//! - `zmq_socket`, `zmq_close`, `zmq_bind`, `zmq_connect`, `zmq_unbind`,
//!   `zmq_disconnect`, `zmq_setsockopt`, `zmq_getsockopt` (see below).
//! - `zmq_msg_init`, `_init_size`, `_init_data` (free function and hint), `_init_buffer`,
//!   `_close`, `_move`, `_copy`, `_data`, `_size`, `_more`, `_get`, `_set`, `_gets`,
//!   `_routing_id`, `_set_routing_id`, `_group`, `_set_group`. As libzmq's, every
//!   message from a ZMTP 3 peer carries the peer's properties: `zmq_msg_gets` answers
//!   `Socket-Type`, `Identity`, `Peer-Address` (tcp), `User-Id`, `X-` and ZAP properties,
//!   and libzmq's private `__fd`; `zmq_msg_get(ZMQ_SRCFD)` is the descriptor of the
//!   connection the message came from (-1 over inproc). The messages of a connection share
//!   them (a reference count per message), and each text is made once per connection.
//! - `zmq_send`, `zmq_send_const`, `zmq_recv`, `zmq_msg_send`, `zmq_msg_recv`,
//!   `zmq_sendmsg`, `zmq_recvmsg`, with `ZMQ_DONTWAIT` and `ZMQ_SNDMORE`; REQ and REP
//!   refuse out-of-turn calls with `EFSM`, types that never send or receive with
//!   `ENOTSUP`.
//! - `zmq_poll` over sockets and file descriptors, and the draft `zmq_ppoll` (the same
//!   with a signal mask during the wait, `EINTR` when a signal it lets in is caught);
//!   `ZMQ_EVENTS`, and `ZMQ_FD` with libzmq's edge-triggered meaning (an `eventfd` that
//!   becomes readable when the I/O side changed the socket; reading `ZMQ_EVENTS` empties
//!   it).
//! - `zmq_socket_monitor` (v1 format over PAIR) and the draft
//!   `zmq_socket_monitor_versioned` (v1 or v2, over PAIR, PUB or PUSH) and
//!   `zmq_socket_monitor_pipes_stats` (a v2 `ZMQ_EVENT_PIPES_STATS` per peer: messages
//!   queued to send to it, not yet written to its connection, and received from it,
//!   unread; the kernel's buffers and the peer's own queue are not counted, so the
//!   numbers differ from libzmq's pipe counts).
//! - `zmq_join`, `zmq_leave`, `zmq_connect_peer` (draft).
//! - The draft poller, `zmq_poller_*`; `zmq_poller_fd` gives a descriptor (an epoll set of
//!   the sockets' readiness descriptors) once the poller holds a thread-safe socket, and is
//!   `EINVAL` before, as libzmq's.
//! - `zmq_z85_encode`, `zmq_z85_decode`, `zmq_curve_keypair`, `zmq_curve_public`,
//!   `zmq_atomic_counter_*`, `zmq_stopwatch_*`, `zmq_sleep`, `zmq_proxy`,
//!   `zmq_proxy_steerable`, `zmq_device`, `zmq_timers_*`, `zmq_threadstart`,
//!   `zmq_threadclose`, `zmq_sendiov`, `zmq_recviov`.
//!
//! `inproc://` endpoints are the driver's: in memory, one namespace per context, as in
//! libzmq. A `zmq_connect` to a bound name is joined before it returns (a connect before
//! the bind is joined by the `zmq_bind`), messages change hands in the call that sends
//! them, and a link holds SNDHWM + RCVHWM messages; no security mechanism runs over it and
//! any two socket types can be joined, as with libzmq's pipes.
//!
//! ZAP (RFC 27): a handler bound at `inproc://zeromq.zap.01` (a REP or ROUTER socket of
//! the same context) is asked about the peers of every PLAIN, CURVE, or NULL-with-
//! `ZMQ_ZAP_DOMAIN` server of the context, as in libzmq: the driver is told that
//! endpoint's name (`Context::set_zap_endpoint`) and sends the requests from its I/O
//! thread. Its reply decides (User-Id and metadata on the peer's messages; 300, 400, 500
//! refuse with `ZMQ_EVENT_HANDSHAKE_FAILED_AUTH`; a malformed reply fails with
//! `ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL` and a `ZMQ_PROTOCOL_ERROR_ZAP_*` code). Without
//! a handler, libzmq's rules apply: PLAIN refuses, and so do NULL with
//! `ZMQ_ZAP_ENFORCE_DOMAIN` and CURVE with it and a `ZMQ_ZAP_DOMAIN`
//! (`ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL`, `EFAULT`).
//!
//! Socket options: `ZMQ_TYPE`, `LINGER`, `SNDHWM`, `RCVHWM`, `SNDTIMEO`, `RCVTIMEO`,
//! `ROUTING_ID`, `CONNECT_ROUTING_ID`, `SUBSCRIBE`, `UNSUBSCRIBE` (SUB), `RCVMORE`,
//! `LAST_ENDPOINT`, `EVENTS`, `FD`, `IMMEDIATE`, `CONFLATE`, `MAXMSGSIZE`,
//! `RECONNECT_IVL`, `RECONNECT_IVL_MAX`, `HANDSHAKE_IVL`, `HEARTBEAT_IVL`,
//! `HEARTBEAT_TTL`, `HEARTBEAT_TIMEOUT`, `ROUTER_MANDATORY`, `ROUTER_HANDOVER`,
//! `PROBE_ROUTER`, `REQ_CORRELATE`, `REQ_RELAXED`, `XPUB_VERBOSE`, `XPUB_VERBOSER`,
//! `XPUB_NODROP`, `XPUB_WELCOME_MSG`, `STREAM_NOTIFY`, `MECHANISM`, `PLAIN_SERVER`,
//! `PLAIN_USERNAME`, `PLAIN_PASSWORD`, `CURVE_SERVER`, `CURVE_PUBLICKEY`,
//! `CURVE_SECRETKEY`, `CURVE_SERVERKEY`, `ZAP_DOMAIN`, `ZAP_ENFORCE_DOMAIN`,
//! `MULTICAST_HOPS`, `MULTICAST_LOOP`, `THREAD_SAFE`, `INVERT_MATCHING`,
//! `TCP_ACCEPT_FILTER`, `IPC_FILTER_PID`, `IPC_FILTER_UID`, `IPC_FILTER_GID` (all
//! write-only, as in libzmq; the peer's credentials come from `SO_PEERCRED`), `USE_FD`
//! (the next `tcp://`, `ipc://` or `ws://` bind listens on that socket and owns it; a
//! descriptor that is not a listening socket fails the bind and is left open), the draft
//! `TOPICS_COUNT` and
//! `ROUTER_NOTIFY`, `METADATA` ("X-name:value", as libzmq parses it;
//! the first value given for a name stays; all of them at most 1024 bytes encoded, where
//! libzmq has no limit), and the drafts `RECONNECT_STOP`, `HELLO_MSG`,
//! `DISCONNECT_MSG` and `HICCUP_MSG` (taken by every type, used by those libzmq uses them
//! on; `zmq_getsockopt` cannot read the messages back, as in libzmq), `SOCKS_PROXY`
//! (`host:port` or `source;host:port`; NULL clears it, an empty one is `EINVAL`) with the
//! drafts `SOCKS_USERNAME` and `SOCKS_PASSWORD` (at most 255 bytes each), and
//! `SNDBUF`, `RCVBUF`, `TCP_KEEPALIVE`, `TCP_KEEPALIVE_CNT`, `TCP_KEEPALIVE_IDLE`,
//! `TCP_KEEPALIVE_INTVL`, `TOS`, `TCP_MAXRT` and `BACKLOG` (set on the `tcp://` and `ws://`
//! sockets bound or connected afterwards, before the bind or connect, as libzmq sets
//! them; accepted connections inherit the listener's). Kept and reported back but not
//! applied (the driver has no such setting yet):
//! `IPV6` (IPv6 addresses work whatever it says; with it, a bind to `*` is a dual-stack
//! IPv6 one, as in libzmq, and an IPv6 `TCP_ACCEPT_FILTER` is taken),
//! `AFFINITY`, `RATE`,
//! `RECOVERY_IVL`, `CONNECT_TIMEOUT`, the draft `BUSY_POLL` (as libzmq does
//! where the system has no `SO_BUSY_POLL`).
//!
//! # Not yet
//! Missing behaviour: the
//! options not listed above (`EINVAL`, e.g. `ZMQ_ROUTER_RAW`), `zmq_msg_gets` on messages
//! from ZMTP 1.0 and 2.0 peers (which send no metadata), and `Peer-Address` over
//! `ipc://`. A multipart
//! message is handed to the driver with its last frame, so `EAGAIN`, `EHOSTUNREACH` and the like come on the last frame
//! where libzmq returns them on the first (a first frame with no room waits up to
//! `ZMQ_SNDTIMEO` and is then refused, at once with `ZMQ_DONTWAIT`, as libzmq does, and so
//! is a routing-id frame on a ROUTER with `ZMQ_ROUTER_MANDATORY` for an unknown peer,
//! `EHOSTUNREACH`, or for one at its SNDHWM, and on a STREAM for an unknown peer; a
//! STREAM's data frame ends its message whatever its `ZMQ_SNDMORE`). The
//! monitor's PAIR waits for its peer rather than dropping the events sent before the peer
//! connects.
//!
//! Known differences (to be fixed): `tcp://source;destination`
//! connects bind an address literal or `*` as the source, not an interface name (such a
//! connect is retried). `libzmq/suite/known-failures.txt` lists the others libzmq's own
//! tests find.
//!
//! # At exit
//! The first context registers a hook with `atexit(3)`: when the process exits, every
//! socket still open is closed as `zmq_close` does, and every context waits, as
//! `zmq_ctx_term` would, until what its closed sockets queued is written or their
//! `ZMQ_LINGER` runs out. A program that sends and returns from `main` without closing
//! anything loses nothing (libzmq lets its queues go with the process). A wait that lasts,
//! and what LINGER cuts off then, are said on standard error (`ZMTP_LOSS_REPORTS=0` turns
//! that off); `zmq_close` and `zmq_ctx_term` themselves stay silent, as libzmq's. A
//! cleanup registered with `atexit` before the first context runs after the hook: its
//! `zmq_close` of a socket the hook closed returns 0, and so does its `zmq_ctx_term`.
//!
//! `SIGPIPE`: the driver's `ipc://` writes do not yet use `MSG_NOSIGNAL`, so the first
//! context sets `SIGPIPE` to be ignored when the program left it at its default.
#![deny(missing_docs)]

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

pub mod ctx;
pub mod error;
pub mod monitor;
pub mod msg;
pub mod options;
pub mod poll;
pub mod poller;
pub mod socket;
pub mod timers;
pub mod util;

pub use msg::zmq_msg_t;
pub use poll::zmq_pollitem_t;

/// Run an entry point's body; a panic becomes `fail` with `errno` `EINVAL` rather than
/// unwinding into C.
pub(crate) fn guard<R>(fail: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            error::set_errno(libc::EINVAL);
            fail
        }
    }
}

/// An entry point's `int` result: the value, or -1 with `errno` set.
pub(crate) fn ret<T: Into<c_int>>(r: Result<T, error::Errno>) -> c_int {
    match r {
        Ok(v) => v.into(),
        Err(e) => {
            error::set_errno(e);
            -1
        }
    }
}

/// Lock a mutex, going on after a panic elsewhere poisoned it (the state it guards is
/// kept consistent at every step).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
