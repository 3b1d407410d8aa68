//! `zmq_poll` over sockets and plain file descriptors.
//!
//! Sockets alone wait in the driver's own poll (woken by the change itself). Plain file
//! descriptors alone wait in `poll(2)`. A mix waits in one `poll(2)` on the descriptors
//! and the sockets' readiness descriptors (`ZMQ_FD`), each emptied before the sockets are
//! looked at, so that a change after the look wakes the wait.

use std::ffi::{c_int, c_long, c_short, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Errno;
use crate::socket::{sock_of, CSocket};
use crate::{guard, ret};

/// `ZMQ_POLLIN`.
pub const POLLIN: c_int = 1;
/// `ZMQ_POLLOUT`.
pub const POLLOUT: c_int = 2;
/// `ZMQ_POLLERR`.
pub const POLLERR: c_int = 4;
/// `ZMQ_POLLPRI`.
pub const POLLPRI: c_int = 8;

/// libzmq's `zmq_pollitem_t`: a socket (or NULL and a file descriptor), the events to wait
/// for, and those that happened.
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct zmq_pollitem_t {
    /// The socket, or NULL to poll `fd`.
    pub socket: *mut c_void,
    /// The file descriptor, when `socket` is NULL.
    pub fd: c_int,
    /// `ZMQ_POLLIN`, `ZMQ_POLLOUT`, `ZMQ_POLLERR`, `ZMQ_POLLPRI`.
    pub events: c_short,
    /// Set by `zmq_poll`: which events happened.
    pub revents: c_short,
}

enum Target {
    Socket(Arc<CSocket>),
    Fd(c_int),
}

/// The ready events of every item (0 timeout for descriptors); returns how many are.
fn check(items: &mut [zmq_pollitem_t], targets: &[Target]) -> Result<usize, Errno> {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut ready = 0;
    for (item, target) in items.iter_mut().zip(targets) {
        item.revents = 0;
        match target {
            Target::Socket(s) => {
                s.alive()?;
                let events = s.events() & c_int::from(item.events);
                item.revents = events as c_short;
                ready += usize::from(events != 0);
            }
            Target::Fd(fd) => {
                let mut events = 0;
                if c_int::from(item.events) & POLLIN != 0 {
                    events |= libc::POLLIN;
                }
                if c_int::from(item.events) & POLLOUT != 0 {
                    events |= libc::POLLOUT;
                }
                if c_int::from(item.events) & POLLPRI != 0 {
                    events |= libc::POLLPRI;
                }
                fds.push(libc::pollfd {
                    fd: *fd,
                    events,
                    revents: 0,
                });
            }
        }
    }
    if !fds.is_empty() {
        wait_fds(&mut fds, 0, None)?;
        let mut next = fds.iter();
        for (item, target) in items.iter_mut().zip(targets) {
            if let Target::Fd(_) = target {
                let Some(pfd) = next.next() else { break };
                let mut revents = 0;
                if pfd.revents & libc::POLLIN != 0 {
                    revents |= POLLIN;
                }
                if pfd.revents & libc::POLLOUT != 0 {
                    revents |= POLLOUT;
                }
                if pfd.revents & libc::POLLPRI != 0 {
                    revents |= POLLPRI;
                }
                if pfd.revents & !(libc::POLLIN | libc::POLLOUT | libc::POLLPRI) != 0 {
                    revents |= POLLERR;
                }
                item.revents = revents as c_short;
                ready += usize::from(revents != 0);
            }
        }
    }
    Ok(ready)
}

/// `poll(2)` on `fds` for at most `timeout_ms` (-1: forever); with `sigmask`, `ppoll(2)`
/// with that signal mask in place during the wait, and a signal caught then is `EINTR`.
fn wait_fds(
    fds: &mut [libc::pollfd],
    timeout_ms: c_int,
    sigmask: Option<&libc::sigset_t>,
) -> Result<usize, Errno> {
    let n = match sigmask {
        None => {
            // SAFETY: `fds` is a valid slice of `pollfd`s, its length passed with it.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
        }
        Some(mask) => {
            let ts = (timeout_ms >= 0).then(|| libc::timespec {
                tv_sec: libc::time_t::from(timeout_ms / 1000),
                tv_nsec: libc::c_long::from(timeout_ms % 1000) * 1_000_000,
            });
            let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
            // SAFETY: `fds` is a valid slice of `pollfd`s, its length passed with it;
            // `ts_ptr` is NULL or points to `ts`, and `mask` is a valid `sigset_t`, both
            // alive for the call.
            let n =
                unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ts_ptr, mask) };
            if n < 0 {
                return Err(crate::error::errno());
            }
            n
        }
    };
    if n < 0 {
        let e = crate::error::errno();
        if e == libc::EINTR {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

pub(crate) fn poll(items: &mut [zmq_pollitem_t], timeout: c_long) -> Result<c_int, Errno> {
    poll_masked(items, timeout, None)
}

/// [`poll`], and with `sigmask`, `zmq_ppoll`: every wait is one `ppoll(2)` with that mask
/// (sockets by their readiness descriptors), so that a signal it unblocks ends the call
/// with `EINTR` instead of being caught between two waits.
fn poll_masked(
    items: &mut [zmq_pollitem_t],
    timeout: c_long,
    sigmask: Option<&libc::sigset_t>,
) -> Result<c_int, Errno> {
    let mut targets = Vec::with_capacity(items.len());
    for item in items.iter() {
        if item.socket.is_null() {
            targets.push(Target::Fd(item.fd));
        } else {
            targets.push(Target::Socket(sock_of(item.socket)?));
        }
    }
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    let has_fds = targets.iter().any(|t| matches!(t, Target::Fd(_)));
    let has_sockets = targets.iter().any(|t| matches!(t, Target::Socket(_)));
    // A mix (or a signal mask to wait with): the sockets' readiness descriptors join the
    // plain ones in `poll(2)`.
    let mut readiness: Vec<c_int> = Vec::new();
    if (has_fds || sigmask.is_some()) && has_sockets {
        for t in &targets {
            if let Target::Socket(s) = t {
                let fd = s.sock.readiness_fd().map_err(|e| s.errno(&e))?;
                readiness.push(std::os::fd::AsRawFd::as_raw_fd(&fd));
            }
        }
    }
    loop {
        for t in &targets {
            if let (Target::Socket(s), false) = (t, readiness.is_empty()) {
                s.sock.clear_readiness();
            }
        }
        let ready = check(items, &targets)?;
        if ready > 0 {
            return Ok(c_int::try_from(ready).unwrap_or(c_int::MAX));
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(0);
        }
        let left = deadline.map(|d| d - now);
        if !has_sockets || !readiness.is_empty() {
            // Descriptors (and readiness descriptors): one wait in the kernel.
            let mut fds: Vec<libc::pollfd> = readiness
                .iter()
                .map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            for (item, t) in items.iter().zip(&targets) {
                if let Target::Fd(fd) = t {
                    let e = c_int::from(item.events);
                    let mut events = 0;
                    if e & POLLIN != 0 {
                        events |= libc::POLLIN;
                    }
                    if e & POLLOUT != 0 {
                        events |= libc::POLLOUT;
                    }
                    if e & POLLPRI != 0 {
                        events |= libc::POLLPRI;
                    }
                    fds.push(libc::pollfd {
                        fd: *fd,
                        events,
                        revents: 0,
                    });
                }
            }
            let mut ms = left.map_or(-1, |l| {
                c_int::try_from(l.as_millis().max(1)).unwrap_or(c_int::MAX)
            });
            if has_sockets {
                // The end of a context rings no readiness descriptor: look every 100 ms.
                ms = if ms < 0 { 100 } else { ms.min(100) };
            }
            wait_fds(&mut fds, ms, sigmask)?;
            continue;
        }
        let wait = left;
        let mut wanted: Vec<(&zmtp_mio::Socket, u8)> = Vec::new();
        for (item, t) in items.iter().zip(&targets) {
            if let Target::Socket(s) = t {
                let interest = s.driver_interest(c_int::from(item.events));
                if interest != 0 {
                    wanted.push((&s.sock, interest));
                }
            }
        }
        if wanted.is_empty() {
            // Nothing a socket can become ready for: sleep out the slice or timeout.
            std::thread::sleep(wait.unwrap_or(Duration::from_millis(100)));
            continue;
        }
        let mut mio_items: Vec<zmtp_mio::PollItem<'_>> = wanted
            .iter()
            .map(|(sock, events)| zmtp_mio::PollItem::new(sock, *events))
            .collect();
        let woke = zmtp_mio::poll(&mut mio_items, wait);
        if let Err(e) = woke {
            // A socket closed under the poll: the context is ending.
            for t in &targets {
                if let Target::Socket(s) = t {
                    s.alive()?;
                }
            }
            return Err(crate::error::errno_of(&e, false));
        }
    }
}

/// `zmq_poll`: wait until one of the items is ready, or `timeout` milliseconds pass (-1:
/// forever); returns how many items are ready, with their `revents` set.
///
/// # Safety
/// `items` must point to `nitems` writable `zmq_pollitem_t`s.
#[no_mangle]
pub unsafe extern "C" fn zmq_poll(
    items: *mut zmq_pollitem_t,
    nitems: c_int,
    timeout: c_long,
) -> c_int {
    guard(-1, || {
        if nitems < 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        if nitems == 0 {
            if timeout > 0 {
                std::thread::sleep(Duration::from_millis(timeout as u64));
            }
            return 0;
        }
        if items.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: the caller promises `nitems` (checked positive) writable items at
        // `items` (checked non-null), not used elsewhere during the call.
        let items = unsafe { std::slice::from_raw_parts_mut(items, nitems as usize) };
        ret(poll(items, timeout))
    })
}

/// `zmq_ppoll`: [`zmq_poll`] with the signal mask `sigmask` in place while it waits (NULL:
/// the thread's own, as `zmq_poll`), set and restored atomically with the wait as
/// `ppoll(2)` does; a signal caught during the wait ends it with `EINTR`.
///
/// # Safety
/// `items` must point to `nitems` writable `zmq_pollitem_t`s; `sigmask` must be NULL or
/// point to a valid `sigset_t`.
#[no_mangle]
pub unsafe extern "C" fn zmq_ppoll(
    items: *mut zmq_pollitem_t,
    nitems: c_int,
    timeout: c_long,
    sigmask: *const libc::sigset_t,
) -> c_int {
    guard(-1, || {
        if nitems < 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        if items.is_null() && nitems > 0 {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        if nitems == 0 {
            // As `zmq_poll`.
            if timeout > 0 {
                std::thread::sleep(Duration::from_millis(timeout as u64));
            }
            return 0;
        }
        // SAFETY: the caller promises a valid `sigset_t` at `sigmask` when it is not NULL.
        let mask = unsafe { sigmask.as_ref() };
        // SAFETY: the caller promises `nitems` (checked positive) writable items at
        // `items` (checked non-null), not used elsewhere during the call.
        let items = unsafe { std::slice::from_raw_parts_mut(items, nitems as usize) };
        ret(poll_masked(items, timeout, mask))
    })
}
