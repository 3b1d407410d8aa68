//! `zmq_socket_monitor` and `zmq_socket_monitor_versioned`: a socket's events, sent as
//! libzmq sends them over a PAIR (or PUB, PUSH) socket bound to an `inproc://` endpoint.
//!
//! The driver hands a socket's events to a channel; a thread of the monitor reads it and
//! sends each event the mask selects, in libzmq's v1 format (frame 1: the event as a
//! 16-bit number and its value as a 32-bit one, in the host's byte order; frame 2: the
//! endpoint) or v2 format (frame 1: the event, 64 bits; frame 2: the count of values, 1,
//! or 2 for `ZMQ_EVENT_PIPES_STATS`; then the values, 64 bits each; then the local
//! endpoint and the remote one). `zmq_socket_monitor_pipes_stats` asks the driver for a
//! `ZMQ_EVENT_PIPES_STATS` event per peer: the messages queued to send to it and those
//! received from it and not yet read.
//! Stopping the monitor (a NULL endpoint, another monitor, or the socket's close) sends
//! `ZMQ_EVENT_MONITOR_STOPPED` last.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use zmtp_mio::{Message, MonitorEvent, SocketType};

use crate::error::Errno;
use crate::socket::{sock_of, text};
use crate::{guard, ret};

/// `ZMQ_EVENT_CONNECT_DELAYED`.
const CONNECT_DELAYED: u64 = 0x0002;
/// `ZMQ_EVENT_CONNECT_RETRIED`.
const CONNECT_RETRIED: u64 = 0x0004;
/// `ZMQ_EVENT_MONITOR_STOPPED`.
const MONITOR_STOPPED: u64 = 0x0400;
/// `ZMQ_EVENT_ALL` (v1).
const ALL_V1: u64 = 0xFFFF;
/// `ZMQ_EVENT_PIPES_STATS` (v2).
const PIPES_STATS: u64 = 0x10000;

/// A running monitor: set `stop` to end it.
pub(crate) struct Monitor {
    /// The `ZMQ_EVENT_*` mask it sends.
    events: u64,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Monitor {
    /// Stop the monitor (it sends `ZMQ_EVENT_MONITOR_STOPPED` first) and wait for it.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The frames of `event` in `version`'s format.
fn frames(event: &MonitorEvent, kind: u64, version: c_int) -> Message {
    let endpoint = event.endpoint.clone();
    if version == 1 {
        let mut first = Vec::with_capacity(6);
        first.extend_from_slice(&(kind as u16).to_ne_bytes());
        first.extend_from_slice(&event.value.to_ne_bytes());
        return Message::from(vec![first, endpoint.into_bytes()]);
    }
    let scheme = endpoint.split("://").next().unwrap_or("tcp");
    // A connection we opened: our end is the local address, the endpoint the remote one
    // (an ipc stream's end has no name: "ipc://"), as libzmq's connecter reports them.
    let (endpoint, remote) = match &event.local_address {
        Some(local) => (format!("{scheme}://{local}"), endpoint),
        // A connect endpoint's own events: no local end yet.
        None if kind == CONNECT_DELAYED || kind == CONNECT_RETRIED => (String::new(), endpoint),
        // PIPES_STATS names its peer with a scheme even where the address is empty (an ipc
        // peer: "ipc://"), as libzmq's does.
        None if event.peer_address.is_empty() && event.queues.is_none() => {
            (endpoint, String::new())
        }
        None => {
            let remote = format!("{scheme}://{}", event.peer_address);
            (endpoint, remote)
        }
    };
    let values = match event.queues {
        Some(q) => vec![q.outbound, q.inbound],
        None => vec![u64::from(event.value)],
    };
    let mut frames = vec![
        kind.to_ne_bytes().to_vec(),
        (values.len() as u64).to_ne_bytes().to_vec(),
    ];
    frames.extend(values.iter().map(|v| v.to_ne_bytes().to_vec()));
    frames.push(endpoint.into_bytes());
    frames.push(remote.into_bytes());
    Message::from(frames)
}

/// How long a monitor waits for its first taker: an application that connects its monitor
/// socket a little after `zmq_socket_monitor` (from another thread, or after its first
/// `zmq_connect`) still gets the first events, which wait for it (a PUB's for a
/// subscriber) rather than be dropped.
const FIRST_TAKER: Duration = Duration::from_secs(1);
/// How long, at most, a monitor being stopped (its socket closing) still waits for that
/// first taker: `zmq_close` waits for the monitor.
const STOP_GRACE: Duration = Duration::from_millis(100);

/// Send `msg` on the monitor socket, waiting for a peer while the monitor runs (once it
/// is stopping, an event with no peer to take it is dropped, as libzmq drops it). Until
/// an event was taken (`taken`), and until `first_until` at most, it waits for a peer
/// even while stopping, and an event a PUB would drop (no subscriber yet) waits too.
/// `false` when the monitor socket is gone.
fn deliver(
    out: &zmtp_mio::Socket,
    msg: Message,
    stop: &AtomicBool,
    taken: &mut bool,
    first_until: std::time::Instant,
) -> bool {
    let mut msg = msg;
    loop {
        let first = !*taken && std::time::Instant::now() < first_until;
        let copy = first.then(|| msg.clone());
        match out.try_send(msg) {
            Ok(zmtp_mio::Sent::Dropped) if first => {
                msg = copy.unwrap_or_default();
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Ok(_) => {
                *taken = true;
                return true;
            }
            Err(zmtp_mio::SendError::WouldBlock(m)) => msg = m,
            Err(_) => return false,
        }
        if stop.load(Ordering::Acquire) && !first {
            return true;
        }
        let mut items = [zmtp_mio::PollItem::new(out, zmtp_mio::POLLOUT)];
        if zmtp_mio::poll(&mut items, Some(Duration::from_millis(50))).is_err() {
            return false;
        }
    }
}

fn start(
    socket: *mut c_void,
    addr: *const c_char,
    events: u64,
    version: c_int,
    ty: c_int,
) -> Result<(), Errno> {
    let s = sock_of(socket)?;
    s.alive()?;
    if version != 1 && version != 2 {
        return Err(libc::EINVAL);
    }
    if version == 1 && events & !ALL_V1 != 0 {
        return Err(libc::EINVAL);
    }
    if version == 2 && events & !(ALL_V1 | PIPES_STATS) != 0 {
        return Err(libc::EINVAL);
    }
    // Any monitor running stops first.
    let old = s.state().monitor.take();
    if let Some(old) = old {
        old.stop();
    }
    if addr.is_null() {
        return Ok(());
    }
    // SAFETY: the caller passes a NUL-terminated endpoint (checked non-null).
    let addr = unsafe { text(addr) }?;
    if !addr.starts_with("inproc://") {
        return Err(libc::EPROTONOSUPPORT);
    }
    let ty = match ty {
        0 => SocketType::Pair,
        1 => SocketType::Pub,
        8 => SocketType::Push,
        _ => return Err(libc::EINVAL),
    };
    // Subscribe before the monitor socket is made and bound: that waits for the I/O
    // thread, which may meanwhile finish a handshake begun by an earlier `zmq_connect`,
    // whose events then wait in the channel instead of being missed.
    let events_rx = s.sock.monitor();
    let options = zmtp_mio::Options::default().with_linger(Some(Duration::from_millis(100)));
    let out = s.ctx.internal_socket(ty, options)?;
    let target = s.ctx.endpoint(addr)?;
    out.bind(target).map_err(|e| s.errno(&e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("zmq-monitor".into())
        .spawn(move || {
            let mut taken = false;
            let mut first_until = std::time::Instant::now() + FIRST_TAKER;
            let mut stop_seen = false;
            loop {
                // Once stopping, the events already raised still go out (a socket's close
                // stops its monitor right after its last events), then MONITOR_STOPPED.
                if !stop_seen && stopping.load(Ordering::Acquire) {
                    stop_seen = true;
                    first_until = first_until.min(std::time::Instant::now() + STOP_GRACE);
                }
                let next = if stop_seen {
                    events_rx
                        .try_recv()
                        .map_err(|_| RecvTimeoutError::Disconnected)
                } else {
                    events_rx.recv_timeout(Duration::from_millis(50))
                };
                match next {
                    Ok(event) => {
                        let kind = u64::from(event.kind.value());
                        if events & kind != 0
                            && !deliver(
                                &out,
                                frames(&event, kind, version),
                                &stopping,
                                &mut taken,
                                first_until,
                            )
                        {
                            return;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            if events & MONITOR_STOPPED != 0 {
                let stopped =
                    MonitorEvent::new(zmtp_mio::MonitorEventKind::MonitorStopped, 0, String::new());
                let msg = frames(&stopped, MONITOR_STOPPED, version);
                deliver(&out, msg, &stopping, &mut taken, first_until);
            }
        })
        .map_err(|_| crate::error::EMTHREAD)?;
    s.state().monitor = Some(Monitor {
        events,
        stop,
        thread: Some(thread),
    });
    Ok(())
}

/// `zmq_socket_monitor`: send the socket's `events` (a mask of `ZMQ_EVENT_*`) to a PAIR
/// socket bound at `addr` (an `inproc://` endpoint), in libzmq's v1 format; a NULL `addr`
/// stops monitoring.
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_socket_monitor(
    socket: *mut c_void,
    addr: *const c_char,
    events: c_int,
) -> c_int {
    guard(-1, || {
        ret(start(socket, addr, u64::from(events as u32), 1, 0).map(|()| 0))
    })
}

/// `zmq_socket_monitor_versioned` (draft): as `zmq_socket_monitor`, in the v1 or v2
/// format, over a PAIR, PUB or PUSH socket (`type_`).
///
/// # Safety
/// `addr` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_socket_monitor_versioned(
    socket: *mut c_void,
    addr: *const c_char,
    events: u64,
    event_version: c_int,
    type_: c_int,
) -> c_int {
    guard(-1, || {
        ret(start(socket, addr, events, event_version, type_).map(|()| 0))
    })
}

/// `zmq_socket_monitor_pipes_stats` (draft): send a `ZMQ_EVENT_PIPES_STATS` event for
/// each of the socket's peers to its monitor, with two values: the messages queued to
/// send to the peer (not yet written to its connection) and those received from it and
/// not yet read. `EINVAL` when no monitor takes that event, `EAGAIN` when the socket has
/// no connected peer, `ENOTSOCK` for a handle that is not a socket.
#[no_mangle]
pub extern "C" fn zmq_socket_monitor_pipes_stats(socket: *mut c_void) -> c_int {
    guard(-1, || ret(pipes_stats(socket).map(|()| 0)))
}

fn pipes_stats(socket: *mut c_void) -> Result<(), Errno> {
    let s = sock_of(socket)?;
    s.alive()?;
    let monitored = s
        .state()
        .monitor
        .as_ref()
        .is_some_and(|m| m.events & PIPES_STATS != 0);
    if !monitored {
        return Err(libc::EINVAL);
    }
    match s.sock.monitor_pipes_stats() {
        Ok(_) => Ok(()),
        Err(zmtp_mio::PipesStatsError::NoPeers) => Err(libc::EAGAIN),
        Err(_) => Err(libc::EINVAL),
    }
}
