//! Socket options: `zmq_setsockopt` and `zmq_getsockopt`, with libzmq's numbers, value
//! sizes and ranges. An option this library does not have fails with `EINVAL`, as an
//! unknown one does in libzmq.

use std::ffi::{c_int, c_void};
use std::time::Duration;

use zmtp_mio::{Bytes, KeyPair, PublicKey, SecretKey, Security, SocketType};

use crate::error::Errno;
use crate::socket::{subscription, with_sock, CSocket};
use crate::{guard, ret};

macro_rules! consts {
    ($($name:ident = $value:expr;)*) => {
        $(#[doc = concat!("`ZMQ_", stringify!($name), "`.")] pub const $name: c_int = $value;)*
    };
}

consts! {
    AFFINITY = 4; ROUTING_ID = 5; SUBSCRIBE = 6; UNSUBSCRIBE = 7; RATE = 8;
    RECOVERY_IVL = 9; SNDBUF = 11; RCVBUF = 12; RCVMORE = 13; FD = 14; EVENTS = 15;
    TYPE = 16; LINGER = 17; RECONNECT_IVL = 18; BACKLOG = 19; RECONNECT_IVL_MAX = 21;
    MAXMSGSIZE = 22; SNDHWM = 23; RCVHWM = 24; MULTICAST_HOPS = 25; RCVTIMEO = 27;
    SNDTIMEO = 28; LAST_ENDPOINT = 32; ROUTER_MANDATORY = 33; TCP_KEEPALIVE = 34;
    TCP_KEEPALIVE_CNT = 35; TCP_KEEPALIVE_IDLE = 36; TCP_KEEPALIVE_INTVL = 37;
    TCP_ACCEPT_FILTER = 38; BUSY_POLL = 113;
    IPC_FILTER_PID = 58; IPC_FILTER_UID = 59; IPC_FILTER_GID = 60;
    IMMEDIATE = 39; XPUB_VERBOSE = 40; IPV6 = 42; MECHANISM = 43; PLAIN_SERVER = 44;
    PLAIN_USERNAME = 45; PLAIN_PASSWORD = 46; CURVE_SERVER = 47; CURVE_PUBLICKEY = 48;
    CURVE_SECRETKEY = 49; CURVE_SERVERKEY = 50; PROBE_ROUTER = 51; REQ_CORRELATE = 52;
    REQ_RELAXED = 53; CONFLATE = 54; ZAP_DOMAIN = 55; ROUTER_HANDOVER = 56; TOS = 57;
    CONNECT_ROUTING_ID = 61; HANDSHAKE_IVL = 66; XPUB_NODROP = 69; XPUB_WELCOME_MSG = 72;
    STREAM_NOTIFY = 73; INVERT_MATCHING = 74; HEARTBEAT_IVL = 75; HEARTBEAT_TTL = 76;
    HEARTBEAT_TIMEOUT = 77; XPUB_VERBOSER = 78; CONNECT_TIMEOUT = 79; TCP_MAXRT = 80; THREAD_SAFE = 81;
    USE_FD = 89; BINDTODEVICE = 92; ZAP_ENFORCE_DOMAIN = 93; MULTICAST_LOOP = 96;
    ROUTER_NOTIFY = 97; TOPICS_COUNT = 116;
    METADATA = 95; RECONNECT_STOP = 109; HELLO_MSG = 110; DISCONNECT_MSG = 111;
    HICCUP_MSG = 114;
    XPUB_MANUAL = 71; XPUB_MANUAL_LAST_VALUE = 98; ONLY_FIRST_SUBSCRIBE = 108;
    XSUB_VERBOSE_UNSUBSCRIBE = 115;
    SOCKS_PROXY = 68; SOCKS_USERNAME = 99; SOCKS_PASSWORD = 100;
}

/// Option values kept by the C layer: tuning values the driver has no field for (kept
/// and reported back, not applied), and the security settings as libzmq takes them.
#[derive(Clone)]
pub(crate) struct Raw {
    pub(crate) sndbuf: c_int,
    pub(crate) rcvbuf: c_int,
    pub(crate) backlog: c_int,
    pub(crate) tos: c_int,
    pub(crate) rate: c_int,
    pub(crate) recovery_ivl: c_int,
    pub(crate) connect_timeout: c_int,
    pub(crate) tcp_maxrt: c_int,
    /// `ZMQ_BUSY_POLL`: kept and reported, as libzmq does where `SO_BUSY_POLL` is absent.
    pub(crate) busy_poll: c_int,
    pub(crate) affinity: u64,
    pub(crate) tcp_keepalive: [c_int; 4],
    pub(crate) ipv6: bool,
    pub(crate) req_relaxed: bool,
    /// `ZMQ_ROUTER_MANDATORY`, mirrored for the check on a message's first frame.
    pub(crate) router_mandatory: bool,
    /// `ZMQ_USE_FD` (-1: none): the listening socket the next `tcp://`, `ipc://` or
    /// `ws://` bind takes (once: see [`Raw::take_use_fd`]), and whether it was taken.
    pub(crate) use_fd: c_int,
    pub(crate) use_fd_taken: bool,
    /// `ZMQ_BINDTODEVICE` (empty: none): kept, and endpoints refused with `ENOTSUP` while
    /// it is set, as the driver cannot honour it.
    pub(crate) bind_to_device: Vec<u8>,
    /// `ZMQ_NULL`, `ZMQ_PLAIN` or `ZMQ_CURVE`, and whether we are the server.
    pub(crate) mechanism: c_int,
    pub(crate) as_server: bool,
    pub(crate) plain_username: Vec<u8>,
    pub(crate) plain_password: Vec<u8>,
    pub(crate) curve_public: [u8; 32],
    pub(crate) curve_secret: [u8; 32],
    pub(crate) curve_server: [u8; 32],
    /// `ZMQ_SOCKS_PROXY`, `ZMQ_SOCKS_USERNAME`, `ZMQ_SOCKS_PASSWORD` as given (empty:
    /// none), made into the driver's one proxy value whenever one of them changes.
    pub(crate) socks: [Vec<u8>; 3],
}

impl Default for Raw {
    fn default() -> Raw {
        Raw {
            sndbuf: -1,
            rcvbuf: -1,
            backlog: 100,
            tos: 0,
            rate: 100,
            recovery_ivl: 10000,
            connect_timeout: 0,
            tcp_maxrt: 0,
            busy_poll: 0,
            affinity: 0,
            tcp_keepalive: [-1; 4],
            ipv6: false,
            req_relaxed: false,
            router_mandatory: false,
            use_fd: -1,
            use_fd_taken: false,
            bind_to_device: Vec::new(),
            mechanism: 0,
            as_server: false,
            plain_username: Vec::new(),
            plain_password: Vec::new(),
            curve_public: [0; 32],
            curve_secret: [0; 32],
            curve_server: [0; 32],
            socks: Default::default(),
        }
    }
}

impl Raw {
    /// `ZMQ_USE_FD`'s descriptor for a bind, the first time it is asked for after the
    /// option was set: libzmq's listener takes the descriptor and closes it when it stops,
    /// and a descriptor is closed once only, so later binds make their own. A descriptor
    /// that is not a listening socket is refused (`ENOTSOCK`, `EINVAL`) and left alone.
    pub(crate) fn take_use_fd(&mut self) -> Result<Option<std::os::fd::OwnedFd>, Errno> {
        if self.use_fd < 0 || self.use_fd_taken {
            return Ok(None);
        }
        let mut listening: c_int = 0;
        let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
        // SAFETY: `getsockopt` writes at most `len` bytes to `listening`, which has them;
        // a descriptor that is not open, or not a socket, only makes it fail.
        let rc = unsafe {
            libc::getsockopt(
                self.use_fd,
                libc::SOL_SOCKET,
                libc::SO_ACCEPTCONN,
                (&mut listening as *mut c_int).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOTSOCK));
        }
        if listening == 0 {
            return Err(libc::EINVAL);
        }
        self.use_fd_taken = true;
        // SAFETY: an open listening socket the application handed to this socket with
        // `ZMQ_USE_FD`, which gives it to the socket's listener, as libzmq's does;
        // `use_fd_taken` makes sure it is owned once.
        Ok(Some(unsafe {
            std::os::fd::FromRawFd::from_raw_fd(self.use_fd)
        }))
    }

    /// The driver's security setting for what has been set.
    fn security(&self) -> Result<Security, Errno> {
        Ok(match (self.mechanism, self.as_server) {
            (1, true) => Security::PlainServer,
            (1, false) => Security::plain_client(&self.plain_username, &self.plain_password)
                .map_err(|_| libc::EINVAL)?,
            (2, server) => {
                let keys = KeyPair {
                    public: PublicKey(self.curve_public),
                    secret: SecretKey::from(self.curve_secret),
                };
                if server {
                    Security::curve_server(keys)
                } else {
                    Security::curve_client(PublicKey(self.curve_server), keys)
                }
            }
            _ => Security::Null,
        })
    }
}

/// The value of an `int` option: the size must be exactly `sizeof(int)`.
fn int(optval: *const c_void, len: usize) -> Result<c_int, Errno> {
    if len != std::mem::size_of::<c_int>() || optval.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null, with `sizeof(int)` bytes as the caller's length says; unaligned.
    Ok(unsafe { std::ptr::read_unaligned(optval.cast::<c_int>()) })
}

/// An `int` option that must be 0 or 1.
fn strict_bool(optval: *const c_void, len: usize) -> Result<bool, Errno> {
    match int(optval, len)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(libc::EINVAL),
    }
}

/// An `int` option at least `min`.
fn int_min(optval: *const c_void, len: usize, min: c_int) -> Result<c_int, Errno> {
    let v = int(optval, len)?;
    if v < min {
        return Err(libc::EINVAL);
    }
    Ok(v)
}

/// The bytes of a binary or string option (empty for NULL with length 0).
fn bytes<'a>(optval: *const c_void, len: usize) -> Result<&'a [u8], Errno> {
    if len == 0 {
        return Ok(&[]);
    }
    if optval.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null with `len` readable bytes, as the caller promises.
    Ok(unsafe { std::slice::from_raw_parts(optval.cast::<u8>(), len) })
}

/// Milliseconds as a duration; -1 (or any negative) is none.
fn millis(v: c_int) -> Option<Duration> {
    u64::try_from(v).ok().map(Duration::from_millis)
}

/// A duration as libzmq's milliseconds; none is -1.
fn as_millis(d: Option<Duration>) -> c_int {
    d.map_or(-1, |d| c_int::try_from(d.as_millis()).unwrap_or(c_int::MAX))
}

/// A CURVE key given as 32 bytes, or 40 (or 41 with a NUL) Z85 characters.
fn curve_key(value: &[u8]) -> Result<[u8; 32], Errno> {
    match value.len() {
        32 => {
            let mut key = [0; 32];
            key.copy_from_slice(value);
            Ok(key)
        }
        40 | 41 => zmtp_mio::z85::decode_key(&value[..40]).map_err(|_| libc::EINVAL),
        _ => Err(libc::EINVAL),
    }
}

fn driver(s: &CSocket, r: Result<(), zmtp_mio::Error>) -> Result<(), Errno> {
    r.map_err(|e| s.errno(&e))
}

fn set(s: &CSocket, option: c_int, optval: *const c_void, len: usize) -> Result<(), Errno> {
    s.alive()?;
    let sock = &s.sock;
    let ty = s.ty;
    match option {
        SNDHWM => {
            let v = int_min(optval, len, 0)?;
            driver(s, sock.set_sndhwm(v as usize))
        }
        RCVHWM => {
            let v = int_min(optval, len, 0)?;
            driver(s, sock.set_rcvhwm(v as usize))
        }
        LINGER => driver(s, sock.set_linger(millis(int_min(optval, len, -1)?))),
        RCVTIMEO => {
            sock.set_rcvtimeo(millis(int_min(optval, len, -1)?));
            Ok(())
        }
        SNDTIMEO => {
            sock.set_sndtimeo(millis(int_min(optval, len, -1)?));
            Ok(())
        }
        ROUTING_ID => {
            let v = bytes(optval, len)?;
            if v.is_empty() || v.len() > 255 {
                return Err(libc::EINVAL);
            }
            driver(s, sock.set_routing_id(Bytes::copy_from_slice(v)))
        }
        CONNECT_ROUTING_ID if matches!(ty, SocketType::Router | SocketType::Stream) => {
            let v = bytes(optval, len)?;
            if v.is_empty() || v.len() > 255 {
                return Err(libc::EINVAL);
            }
            driver(s, sock.set_connect_routing_id(Bytes::copy_from_slice(v)))
        }
        SUBSCRIBE | UNSUBSCRIBE if ty == SocketType::Sub => {
            subscription(s, bytes(optval, len)?, option == SUBSCRIBE)
        }
        // An XPUB in manual mode subscribes the peer of the last subscription received;
        // out of it, the option is not the XPUB's (EINVAL, as libzmq).
        SUBSCRIBE | UNSUBSCRIBE if ty == SocketType::XPub => {
            match subscription(s, bytes(optval, len)?, option == SUBSCRIBE) {
                Err(libc::ENOTSUP) => Err(libc::EINVAL),
                done => done,
            }
        }
        RECONNECT_IVL => driver(s, sock.set_reconnect_ivl(millis(int_min(optval, len, -1)?))),
        RECONNECT_IVL_MAX => {
            let v = int_min(optval, len, 0)?;
            driver(
                s,
                sock.set_reconnect_ivl_max(Duration::from_millis(v as u64)),
            )
        }
        MAXMSGSIZE => {
            if len != 8 || optval.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: non-null with 8 bytes, as the length says; unaligned.
            let v = unsafe { std::ptr::read_unaligned(optval.cast::<i64>()) };
            driver(s, sock.set_maxmsgsize(u64::try_from(v).ok()))
        }
        IMMEDIATE => driver(s, sock.set_immediate(strict_bool(optval, len)?)),
        CONFLATE => driver(s, sock.set_conflate(strict_bool(optval, len)?)),
        HANDSHAKE_IVL => {
            let v = int_min(optval, len, 0)?;
            driver(
                s,
                sock.set_handshake_ivl((v > 0).then(|| Duration::from_millis(v as u64))),
            )
        }
        HEARTBEAT_IVL => {
            let v = int_min(optval, len, 0)?;
            driver(
                s,
                sock.set_heartbeat_ivl((v > 0).then(|| Duration::from_millis(v as u64))),
            )
        }
        HEARTBEAT_TTL => {
            let v = int_min(optval, len, 0)?;
            if v > 6_553_599 {
                return Err(libc::EINVAL);
            }
            // Deciseconds on the wire, as libzmq rounds it.
            let ttl = (v / 100 > 0).then(|| Duration::from_millis((v / 100 * 100) as u64));
            driver(s, sock.set_heartbeat_ttl(ttl))
        }
        HEARTBEAT_TIMEOUT => {
            let v = int_min(optval, len, 0)?;
            driver(
                s,
                sock.set_heartbeat_timeout(Some(Duration::from_millis(v as u64))),
            )
        }
        MULTICAST_HOPS => {
            let v = int_min(optval, len, 1)?;
            driver(s, sock.set_multicast_hops(v as u32))
        }
        MULTICAST_LOOP => driver(s, sock.set_multicast_loop(strict_bool(optval, len)?)),
        ROUTER_MANDATORY | ROUTER_HANDOVER if ty == SocketType::Router => {
            let on = int_min(optval, len, 0)? != 0;
            match option {
                ROUTER_MANDATORY => {
                    driver(s, sock.set_router_mandatory(on))?;
                    s.state().raw.router_mandatory = on;
                    Ok(())
                }
                _ => driver(s, sock.set_router_handover(on)),
            }
        }
        // Taken by every type, as in libzmq (it acts on PUB, XPUB and SUB); any
        // non-zero value is true.
        INVERT_MATCHING => driver(s, sock.set_invert_matching(int(optval, len)? != 0)),
        ROUTER_NOTIFY if ty == SocketType::Router => {
            let v = int(optval, len)?;
            let notify = u32::try_from(v)
                .ok()
                .and_then(zmtp_mio::RouterNotify::from_bits)
                .ok_or(libc::EINVAL)?;
            driver(s, sock.set_router_notify(notify))
        }
        PROBE_ROUTER
            if matches!(
                ty,
                SocketType::Router | SocketType::Dealer | SocketType::Req
            ) =>
        {
            driver(s, sock.set_probe_router(int_min(optval, len, 0)? != 0))
        }
        REQ_CORRELATE if ty == SocketType::Req => {
            driver(s, sock.set_req_correlate(int_min(optval, len, 0)? != 0))
        }
        REQ_RELAXED if ty == SocketType::Req => {
            let on = int_min(optval, len, 0)? != 0;
            driver(s, sock.set_req_relaxed(on))?;
            s.state().raw.req_relaxed = on;
            Ok(())
        }
        XPUB_VERBOSE | XPUB_VERBOSER | XPUB_NODROP
            if matches!(ty, SocketType::XPub | SocketType::Pub) =>
        {
            let on = int_min(optval, len, 0)? != 0;
            match option {
                // As libzmq: VERBOSE sets verbose subscriptions and clears verbose
                // unsubscriptions; VERBOSER sets (or clears) both.
                XPUB_VERBOSE => {
                    driver(s, sock.set_xpub_verboser(false))?;
                    driver(s, sock.set_xpub_verbose(on))
                }
                XPUB_VERBOSER => {
                    driver(s, sock.set_xpub_verbose(on))?;
                    driver(s, sock.set_xpub_verboser(on))
                }
                _ => driver(s, sock.set_xpub_nodrop(on)),
            }
        }
        XPUB_MANUAL | XPUB_MANUAL_LAST_VALUE
            if matches!(ty, SocketType::XPub | SocketType::Pub) =>
        {
            let on = int_min(optval, len, 0)? != 0;
            if option == XPUB_MANUAL_LAST_VALUE || !on {
                // LAST_VALUE is manual mode too: one switch for both here.
                driver(
                    s,
                    sock.set_xpub_manual_last_value(on && option != XPUB_MANUAL),
                )?;
            }
            driver(s, sock.set_xpub_manual(on))
        }
        ONLY_FIRST_SUBSCRIBE
            if matches!(ty, SocketType::XPub | SocketType::Pub | SocketType::XSub) =>
        {
            driver(
                s,
                sock.set_only_first_subscribe(int_min(optval, len, 0)? != 0),
            )
        }
        XSUB_VERBOSE_UNSUBSCRIBE if ty == SocketType::XSub => {
            driver(s, sock.set_xsub_verbose_unsubscribe(int(optval, len)? != 0))
        }
        XPUB_WELCOME_MSG if matches!(ty, SocketType::XPub | SocketType::Pub) => {
            let v = bytes(optval, len)?;
            driver(s, sock.set_xpub_welcome_msg(Bytes::copy_from_slice(v)))
        }
        STREAM_NOTIFY if ty == SocketType::Stream => {
            driver(s, sock.set_stream_notify(strict_bool(optval, len)?))
        }
        ZAP_DOMAIN => {
            let v = bytes(optval, len)?;
            if v.len() > 255 {
                return Err(libc::EINVAL);
            }
            driver(s, sock.set_zap_domain(Bytes::copy_from_slice(v)))
        }
        // Any non-zero int is on (libzmq's relaxed boolean).
        ZAP_ENFORCE_DOMAIN => driver(s, sock.set_zap_enforce_domain(int(optval, len)? != 0)),
        PLAIN_SERVER | PLAIN_USERNAME | PLAIN_PASSWORD | CURVE_SERVER | CURVE_PUBLICKEY
        | CURVE_SECRETKEY | CURVE_SERVERKEY => security(s, option, optval, len),
        SNDBUF | RCVBUF | TCP_KEEPALIVE | TCP_KEEPALIVE_CNT | TCP_KEEPALIVE_IDLE
        | TCP_KEEPALIVE_INTVL | BACKLOG | TOS | RATE | RECOVERY_IVL | CONNECT_TIMEOUT
        | TCP_MAXRT | IPV6 | BUSY_POLL => {
            let v = int(optval, len)?;
            let ok = match option {
                BUSY_POLL => true,
                SNDBUF | RCVBUF => v >= -1,
                TCP_KEEPALIVE => (-1..=1).contains(&v),
                TCP_KEEPALIVE_CNT | TCP_KEEPALIVE_IDLE | TCP_KEEPALIVE_INTVL => v >= -1,
                IPV6 => v == 0 || v == 1,
                RATE => v > 0,
                _ => v >= 0,
            };
            if !ok {
                return Err(libc::EINVAL);
            }
            // How the TCP sockets bound and connected from now on are set up (-1: the
            // system's; keepalive's details in whole seconds, TCP_MAXRT in milliseconds,
            // 0 for either of those two: not set).
            let given = u32::try_from(v).ok();
            let seconds = given.map(|n| std::time::Duration::from_secs(n.into()));
            match option {
                SNDBUF => driver(s, sock.set_sndbuf(usize::try_from(v).ok()))?,
                RCVBUF => driver(s, sock.set_rcvbuf(usize::try_from(v).ok()))?,
                TCP_KEEPALIVE => driver(s, sock.set_tcp_keepalive(given.map(|n| n == 1)))?,
                TCP_KEEPALIVE_CNT => driver(s, sock.set_tcp_keepalive_cnt(given))?,
                TCP_KEEPALIVE_IDLE => driver(s, sock.set_tcp_keepalive_idle(seconds))?,
                TCP_KEEPALIVE_INTVL => driver(s, sock.set_tcp_keepalive_intvl(seconds))?,
                TOS => driver(s, sock.set_tos(given.unwrap_or(0)))?,
                BACKLOG => driver(s, sock.set_backlog(given.unwrap_or(0)))?,
                TCP_MAXRT => {
                    let limit = given.filter(|&ms| ms > 0);
                    let limit = limit.map(|ms| std::time::Duration::from_millis(ms.into()));
                    driver(s, sock.set_tcp_maxrt(limit))?
                }
                _ => {}
            }
            let mut st = s.state();
            let raw = &mut st.raw;
            match option {
                SNDBUF => raw.sndbuf = v,
                RCVBUF => raw.rcvbuf = v,
                TCP_KEEPALIVE => raw.tcp_keepalive[0] = v,
                TCP_KEEPALIVE_CNT => raw.tcp_keepalive[1] = v,
                TCP_KEEPALIVE_IDLE => raw.tcp_keepalive[2] = v,
                TCP_KEEPALIVE_INTVL => raw.tcp_keepalive[3] = v,
                BACKLOG => raw.backlog = v,
                TOS => raw.tos = v,
                RATE => raw.rate = v,
                RECOVERY_IVL => raw.recovery_ivl = v,
                CONNECT_TIMEOUT => raw.connect_timeout = v,
                TCP_MAXRT => raw.tcp_maxrt = v,
                BUSY_POLL => raw.busy_poll = v,
                _ => raw.ipv6 = v == 1,
            }
            Ok(())
        }
        TCP_ACCEPT_FILTER => accept_filter(s, bytes(optval, len)?),
        IPC_FILTER_PID | IPC_FILTER_UID | IPC_FILTER_GID => ipc_filter(s, option, optval, len),
        AFFINITY => {
            if len != 8 || optval.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: non-null with 8 bytes, as the length says; unaligned.
            let v = unsafe { std::ptr::read_unaligned(optval.cast::<u64>()) };
            s.state().raw.affinity = v;
            Ok(())
        }
        USE_FD => {
            let v = int_min(optval, len, -1)?;
            let mut st = s.state();
            // The same descriptor again, once taken, stays taken: it is owned once.
            if v != st.raw.use_fd {
                st.raw.use_fd = v;
                st.raw.use_fd_taken = false;
            }
            Ok(())
        }
        BINDTODEVICE => {
            let v = bytes(optval, len)?;
            // A C string: up to its NUL, at most an interface name's length.
            let v = &v[..v.iter().position(|&b| b == 0).unwrap_or(v.len())];
            if v.len() > 15 {
                return Err(libc::EINVAL);
            }
            s.state().raw.bind_to_device = v.to_vec();
            Ok(())
        }
        METADATA | RECONNECT_STOP | HELLO_MSG | DISCONNECT_MSG | HICCUP_MSG => {
            connection_option(s, option, optval, len)
        }
        SOCKS_PROXY | SOCKS_USERNAME | SOCKS_PASSWORD => socks(s, option, optval, len),
        _ => Err(libc::EINVAL),
    }
}

/// The options about connections coming and going: `ZMQ_METADATA`, `ZMQ_RECONNECT_STOP`
/// and the draft messages `ZMQ_HELLO_MSG`, `ZMQ_DISCONNECT_MSG`, `ZMQ_HICCUP_MSG`. Every
/// socket type takes them, as in libzmq; the types that do not use one ignore it.
/// `ZMQ_SOCKS_PROXY` (NULL clears it; an empty address is refused), `ZMQ_SOCKS_USERNAME`
/// and `ZMQ_SOCKS_PASSWORD` (NULL or empty: none; at most 255 bytes), as libzmq takes
/// them; the driver gets the three as one proxy (none while the address is empty).
fn socks(s: &CSocket, option: c_int, optval: *const c_void, len: usize) -> Result<(), Errno> {
    let v = bytes(optval, len)?;
    let empty_address = option == SOCKS_PROXY && v.is_empty() && !optval.is_null();
    if empty_address || (option != SOCKS_PROXY && v.len() > 255) {
        return Err(libc::EINVAL);
    }
    let mut st = s.state();
    let mut given = st.raw.socks.clone();
    let slot = match option {
        SOCKS_PROXY => 0,
        SOCKS_USERNAME => 1,
        _ => 2,
    };
    given[slot] = v.to_vec();
    let text = |i: usize| std::str::from_utf8(&given[i]).map_err(|_| libc::EINVAL);
    let (address, username, password) = (text(0)?, text(1)?, text(2)?);
    let proxy = match address {
        "" => None,
        a => Some(
            zmtp_mio::SocksProxy::new(a)
                .and_then(|p| p.with_credentials(username, password))
                .map_err(|_| libc::EINVAL)?,
        ),
    };
    st.raw.socks = given;
    drop(st);
    driver(s, s.sock.set_socks_proxy(proxy))
}

fn connection_option(
    s: &CSocket,
    option: c_int,
    optval: *const c_void,
    len: usize,
) -> Result<(), Errno> {
    let sock = &s.sock;
    match option {
        METADATA => {
            // "X-name:value", as libzmq parses it: a name before the first ':' starting
            // with "X-" (at most 255 bytes), a value after it, neither empty; never
            // `sizeof(int)` bytes. The first value given for a name stays.
            if len == std::mem::size_of::<c_int>() {
                return Err(libc::EINVAL);
            }
            let v = bytes(optval, len)?;
            let colon = v.iter().position(|&b| b == b':').ok_or(libc::EINVAL)?;
            let (name, value) = (&v[..colon], &v[colon + 1..]);
            if name.is_empty() || value.is_empty() || !name.starts_with(b"X-") || name.len() > 255 {
                return Err(libc::EINVAL);
            }
            let (name, value) = (Bytes::copy_from_slice(name), Bytes::copy_from_slice(value));
            sock.update_options(|o| {
                o.metadata.entry(name).or_insert(value);
            })
            .map_err(|e| s.errno(&e))
        }
        RECONNECT_STOP => {
            let v = int(optval, len)?;
            // Bits other than libzmq's three are taken and ignored, as libzmq does.
            let stop = zmtp_mio::ReconnectStop::from_bits(v as u32);
            driver(s, sock.set_reconnect_stop(stop))
        }
        _ => {
            let msg = Bytes::copy_from_slice(bytes(optval, len)?);
            match option {
                HELLO_MSG => driver(s, sock.set_hello_msg(msg)),
                DISCONNECT_MSG => driver(s, sock.set_disconnect_msg(msg)),
                _ => driver(s, sock.set_hiccup_msg(msg)),
            }
        }
    }
}

/// `ZMQ_TCP_ACCEPT_FILTER`: one network more for the socket's listeners to accept peers
/// from (`10.0.0.0/8`), or, empty, none again (every peer). An IPv6 network needs
/// `ZMQ_IPV6`, as in libzmq.
fn accept_filter(s: &CSocket, text: &[u8]) -> Result<(), Errno> {
    if text.is_empty() {
        return driver(s, s.sock.set_tcp_accept_filters([]));
    }
    if text.len() > 255 {
        return Err(libc::EINVAL);
    }
    let network: zmtp_mio::TcpAcceptFilter = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(libc::EINVAL)?;
    if network.network().is_ipv6() && !s.state().raw.ipv6 {
        return Err(libc::EINVAL);
    }
    let mut networks = s.sock.options().tcp_accept_filters;
    networks.push(network);
    driver(s, s.sock.set_tcp_accept_filters(networks))
}

/// `ZMQ_IPC_FILTER_PID`, `_UID`, `_GID` (write-only, as in libzmq): one process, user or
/// group id more (a `pid_t`, `uid_t` or `gid_t`) for the socket's `ipc://` listeners to
/// accept peers from, or, with a NULL value of length 0, none of that kind again. The
/// process filter needs the peer's pid, which only Linux reports: refused elsewhere.
fn ipc_filter(s: &CSocket, option: c_int, optval: *const c_void, len: usize) -> Result<(), Errno> {
    if option == IPC_FILTER_PID && !cfg!(target_os = "linux") {
        return Err(libc::EINVAL);
    }
    let id = match (optval.is_null(), len) {
        (true, 0) => None,
        // pid_t, uid_t and gid_t are all 4 bytes.
        (false, 4) => {
            // SAFETY: non-null with 4 bytes, as the length says; unaligned.
            Some(unsafe { std::ptr::read_unaligned(optval.cast::<u32>()) })
        }
        _ => return Err(libc::EINVAL),
    };
    let mut filters = s.sock.options().ipc_accept_filters;
    match (option, id) {
        (IPC_FILTER_PID, None) => filters.pids.clear(),
        (IPC_FILTER_PID, Some(pid)) => {
            filters.pids.insert(pid as i32);
        }
        (IPC_FILTER_UID, None) => filters.uids.clear(),
        (IPC_FILTER_UID, Some(uid)) => {
            filters.uids.insert(uid);
        }
        (_, None) => filters.gids.clear(),
        (_, Some(gid)) => {
            filters.gids.insert(gid);
        }
    }
    driver(s, s.sock.set_ipc_accept_filters(filters))
}

/// The security options, each changing the mechanism as libzmq's do.
fn security(s: &CSocket, option: c_int, optval: *const c_void, len: usize) -> Result<(), Errno> {
    let mut st = s.state();
    let mut raw = st.raw.clone();
    match option {
        PLAIN_SERVER | CURVE_SERVER => {
            let on = strict_bool(optval, len)?;
            raw.as_server = on;
            raw.mechanism = match (on, option) {
                (false, _) => 0,
                (true, PLAIN_SERVER) => 1,
                (true, _) => 2,
            };
        }
        PLAIN_USERNAME | PLAIN_PASSWORD => {
            if len == 0 && optval.is_null() {
                raw.mechanism = 0;
            } else {
                let v = bytes(optval, len)?;
                if v.is_empty() || v.len() > 255 {
                    return Err(libc::EINVAL);
                }
                if option == PLAIN_USERNAME {
                    raw.plain_username = v.to_vec();
                } else {
                    raw.plain_password = v.to_vec();
                }
                raw.as_server = false;
                raw.mechanism = 1;
            }
        }
        _ => {
            let key = curve_key(bytes(optval, len)?)?;
            match option {
                CURVE_PUBLICKEY => raw.curve_public = key,
                CURVE_SECRETKEY => raw.curve_secret = key,
                _ => {
                    raw.curve_server = key;
                    raw.as_server = false;
                }
            }
            raw.mechanism = 2;
        }
    }
    let security = raw.security()?;
    driver(s, s.sock.set_security(security))?;
    st.raw = raw;
    Ok(())
}

/// Where a `zmq_getsockopt` answer goes.
struct Out {
    optval: *mut c_void,
    len: *mut usize,
}

impl Out {
    fn capacity(&self) -> usize {
        // SAFETY: `len` is checked non-null by `zmq_getsockopt`.
        unsafe { *self.len }
    }

    /// Write `value` (whose size must fit) and its size.
    fn bytes(&self, value: &[u8]) -> Result<(), Errno> {
        if self.capacity() < value.len() || (self.optval.is_null() && !value.is_empty()) {
            return Err(libc::EINVAL);
        }
        if !self.optval.is_null() {
            // SAFETY: the caller gave `capacity` writable bytes at `optval` (non-null),
            // at least `value.len()`; the rest is zeroed, as libzmq does.
            unsafe {
                let out = self.optval.cast::<u8>();
                std::ptr::copy_nonoverlapping(value.as_ptr(), out, value.len());
                std::ptr::write_bytes(out.add(value.len()), 0, self.capacity() - value.len());
            };
        }
        // SAFETY: as in `capacity`.
        unsafe { *self.len = value.len() };
        Ok(())
    }

    /// An `int` answer: the size given must be exactly `sizeof(int)`.
    fn int(&self, v: c_int) -> Result<(), Errno> {
        if self.capacity() != std::mem::size_of::<c_int>() {
            return Err(libc::EINVAL);
        }
        self.bytes(&v.to_ne_bytes())
    }

    /// An `int` answer of the socket's own (`ZMQ_RCVMORE`, `ZMQ_EVENTS`, `ZMQ_FD`): the
    /// size given may be larger, as libzmq takes it.
    fn loose_int(&self, v: c_int) -> Result<(), Errno> {
        self.bytes(&v.to_ne_bytes())
    }

    /// A string answer, with its terminating NUL.
    fn string(&self, v: &[u8]) -> Result<(), Errno> {
        let mut with_nul = Vec::with_capacity(v.len() + 1);
        with_nul.extend_from_slice(v);
        with_nul.push(0);
        self.bytes(&with_nul)
    }

    /// A CURVE key: 32 bytes, or Z85 text with its NUL when 41 bytes are given.
    fn key(&self, key: &[u8; 32]) -> Result<(), Errno> {
        match self.capacity() {
            32 => self.bytes(key),
            41 => self.string(zmtp_mio::z85::encode_key(key).as_str().as_bytes()),
            _ => Err(libc::EINVAL),
        }
    }
}

/// The types libzmq calls thread-safe (the drafts but DGRAM): they have no `ZMQ_FD`.
pub(crate) fn thread_safe(ty: SocketType) -> bool {
    matches!(
        ty,
        SocketType::Server
            | SocketType::Client
            | SocketType::Radio
            | SocketType::Dish
            | SocketType::Scatter
            | SocketType::Gather
            | SocketType::Peer
            | SocketType::Channel
    )
}

fn get(s: &CSocket, option: c_int, out: &Out) -> Result<(), Errno> {
    s.alive()?;
    let sock = &s.sock;
    match option {
        TYPE => return out.int(s.ty as c_int),
        RCVMORE => return out.loose_int(c_int::from(s.state().rcvmore)),
        EVENTS => {
            // What fired the descriptor is looked at now: it fires again for what comes
            // after.
            sock.clear_readiness();
            return out.loose_int(s.events());
        }
        FD => {
            if thread_safe(s.ty) {
                return Err(libc::EINVAL);
            }
            let fd = sock.readiness_fd().map_err(|e| s.errno(&e))?;
            return out.loose_int(std::os::fd::AsRawFd::as_raw_fd(&fd));
        }
        RCVTIMEO => return out.int(as_millis(sock.rcvtimeo())),
        SNDTIMEO => return out.int(as_millis(sock.sndtimeo())),
        LAST_ENDPOINT => return out.string(s.state().last_endpoint.as_bytes()),
        THREAD_SAFE => return out.loose_int(c_int::from(thread_safe(s.ty))),
        TOPICS_COUNT => {
            use SocketType::{Pub, Sub, XPub, XSub};
            if !matches!(s.ty, Pub | Sub | XPub | XSub) {
                return Err(libc::EINVAL);
            }
            return out.int(c_int::try_from(sock.topics_count()).unwrap_or(c_int::MAX));
        }
        _ => {}
    }
    {
        let st = s.state();
        let raw = &st.raw;
        let v = match option {
            SNDBUF => Some(raw.sndbuf),
            RCVBUF => Some(raw.rcvbuf),
            TCP_KEEPALIVE => Some(raw.tcp_keepalive[0]),
            TCP_KEEPALIVE_CNT => Some(raw.tcp_keepalive[1]),
            TCP_KEEPALIVE_IDLE => Some(raw.tcp_keepalive[2]),
            TCP_KEEPALIVE_INTVL => Some(raw.tcp_keepalive[3]),
            BACKLOG => Some(raw.backlog),
            TOS => Some(raw.tos),
            RATE => Some(raw.rate),
            RECOVERY_IVL => Some(raw.recovery_ivl),
            CONNECT_TIMEOUT => Some(raw.connect_timeout),
            TCP_MAXRT => Some(raw.tcp_maxrt),
            BUSY_POLL => Some(raw.busy_poll),
            IPV6 => Some(c_int::from(raw.ipv6)),
            USE_FD => Some(raw.use_fd),
            MECHANISM => Some(raw.mechanism),
            PLAIN_SERVER => Some(c_int::from(raw.as_server && raw.mechanism == 1)),
            CURVE_SERVER => Some(c_int::from(raw.as_server && raw.mechanism == 2)),
            _ => None,
        };
        if let Some(v) = v {
            return out.int(v);
        }
        match option {
            AFFINITY => {
                if out.capacity() != 8 {
                    return Err(libc::EINVAL);
                }
                return out.bytes(&raw.affinity.to_ne_bytes());
            }
            PLAIN_USERNAME => return out.string(&raw.plain_username),
            BINDTODEVICE => return out.string(&raw.bind_to_device),
            SOCKS_PROXY => return out.string(&raw.socks[0]),
            SOCKS_USERNAME => return out.string(&raw.socks[1]),
            SOCKS_PASSWORD => return out.string(&raw.socks[2]),
            PLAIN_PASSWORD => return out.string(&raw.plain_password),
            CURVE_PUBLICKEY => return out.key(&raw.curve_public),
            CURVE_SECRETKEY => return out.key(&raw.curve_secret),
            CURVE_SERVERKEY => return out.key(&raw.curve_server),
            _ => {}
        }
    }
    let o = sock.options();
    let count = |n: usize| c_int::try_from(n).unwrap_or(c_int::MAX);
    match option {
        SNDHWM => out.int(count(o.sndhwm)),
        RCVHWM => out.int(count(o.rcvhwm)),
        LINGER => out.int(as_millis(o.linger)),
        ROUTING_ID => out.bytes(&o.routing_id),
        RECONNECT_IVL => out.int(as_millis(o.reconnect_ivl)),
        RECONNECT_IVL_MAX => out.int(as_millis(Some(o.reconnect_ivl_max))),
        MAXMSGSIZE => {
            if out.capacity() != 8 {
                return Err(libc::EINVAL);
            }
            let v = o
                .maxmsgsize
                .map_or(-1, |m| i64::try_from(m).unwrap_or(i64::MAX));
            out.bytes(&v.to_ne_bytes())
        }
        IMMEDIATE => out.int(c_int::from(o.immediate)),
        CONFLATE => out.int(c_int::from(o.conflate)),
        HANDSHAKE_IVL => out.int(o.handshake_ivl.map_or(0, |d| as_millis(Some(d)))),
        HEARTBEAT_IVL => out.int(o.heartbeat_ivl.map_or(0, |d| as_millis(Some(d)))),
        HEARTBEAT_TTL => out.int(o.heartbeat_ttl.map_or(0, |d| as_millis(Some(d)))),
        HEARTBEAT_TIMEOUT => out.int(as_millis(o.heartbeat_timeout)),
        MULTICAST_HOPS => out.int(c_int::try_from(o.multicast_hops).unwrap_or(c_int::MAX)),
        MULTICAST_LOOP => out.int(c_int::from(o.multicast_loop)),
        INVERT_MATCHING => out.int(c_int::from(o.invert_matching)),
        ROUTER_NOTIFY => out.int(c_int::try_from(o.router_notify.bits()).unwrap_or(0)),
        RECONNECT_STOP => out.int(c_int::try_from(o.reconnect_stop.bits()).unwrap_or(0)),
        ZAP_DOMAIN => out.string(&o.zap_domain),
        ZAP_ENFORCE_DOMAIN => out.int(c_int::from(o.zap_enforce_domain)),
        _ => Err(libc::EINVAL),
    }
}

/// `zmq_setsockopt`: set a socket option; `EINVAL` for an unknown option, one the socket
/// type does not take, or a value of the wrong size or range.
///
/// # Safety
/// `optval` must point to `optvallen` readable bytes (or be NULL).
#[no_mangle]
pub unsafe extern "C" fn zmq_setsockopt(
    socket: *mut c_void,
    option: c_int,
    optval: *const c_void,
    optvallen: usize,
) -> c_int {
    guard(-1, || {
        ret(with_sock(socket, |s| {
            set(s, option, optval, optvallen).map(|()| 0)
        }))
    })
}

/// `zmq_getsockopt`: read a socket option into `optval`, whose size `*optvallen` gives
/// (and is set to the size written).
///
/// # Safety
/// `optvallen` must point to a writable `size_t`, and `optval` to `*optvallen` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_getsockopt(
    socket: *mut c_void,
    option: c_int,
    optval: *mut c_void,
    optvallen: *mut usize,
) -> c_int {
    guard(-1, || {
        ret(with_sock(socket, |s| {
            if optvallen.is_null() {
                return Err(libc::EFAULT);
            }
            get(
                s,
                option,
                &Out {
                    optval,
                    len: optvallen,
                },
            )
            .map(|()| 0)
        }))
    })
}
