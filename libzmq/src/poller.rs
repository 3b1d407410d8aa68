//! The draft `zmq_poller_*`: a set of sockets and file descriptors, each with the events
//! to wait for and a pointer of the application's, waited on as `zmq_poll` waits.

use std::ffi::{c_int, c_long, c_short, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, LazyLock, Mutex, RwLock};

use crate::error::Errno;
use crate::poll::{poll, zmq_pollitem_t};
use crate::socket::sock_of;
use crate::{guard, lock, ret};

/// libzmq's `zmq_poller_event_t`: what `zmq_poller_wait` reports.
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct zmq_poller_event_t {
    /// The socket, or NULL for a file descriptor.
    pub socket: *mut c_void,
    /// The file descriptor (-1 for a socket).
    pub fd: c_int,
    /// The pointer given with the socket or descriptor.
    pub user_data: *mut c_void,
    /// The events that happened.
    pub events: c_short,
}

#[derive(Clone, Copy, PartialEq)]
enum Key {
    Socket(usize),
    Fd(c_int),
}

struct Entry {
    key: Key,
    user_data: usize,
    events: c_short,
}

#[derive(Default)]
struct Poller {
    entries: Vec<Entry>,
    /// What `zmq_poller_fd` gave: an epoll instance holding the readiness descriptors of
    /// the poller's thread-safe sockets, so readable when one of them changed. Made on the
    /// first call, kept up to date as sockets are added and removed, closed with the poller.
    signal: Option<OwnedFd>,
}

impl Poller {
    /// The thread-safe sockets among the entries.
    fn thread_safe_sockets(&self) -> impl Iterator<Item = Arc<crate::socket::CSocket>> + '_ {
        self.entries.iter().filter_map(|e| match e.key {
            Key::Socket(handle) => sock_of(handle as *mut c_void)
                .ok()
                .filter(|s| crate::options::thread_safe(s.ty)),
            Key::Fd(_) => None,
        })
    }

    /// Add (`true`) or remove a socket's readiness descriptor to or from the descriptor
    /// `zmq_poller_fd` gave, if it gave one and the socket is thread-safe.
    fn follow(&self, socket: usize, add: bool) -> Result<(), Errno> {
        let Some(epoll) = &self.signal else {
            return Ok(());
        };
        let Ok(s) = sock_of(socket as *mut c_void) else {
            return Ok(());
        };
        if !crate::options::thread_safe(s.ty) {
            return Ok(());
        }
        match s.sock.readiness_fd() {
            Ok(fd) => epoll_ctl(epoll, fd.as_raw_fd(), add),
            // A closed socket's descriptor left the epoll set when it was closed.
            Err(_) if !add => Ok(()),
            Err(e) => Err(s.errno(&e)),
        }
    }
}

/// Add `fd` to (or remove it from) the epoll instance `epoll`, waiting for input.
fn epoll_ctl(epoll: &OwnedFd, fd: c_int, add: bool) -> Result<(), Errno> {
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: fd as u64,
    };
    let op = if add {
        libc::EPOLL_CTL_ADD
    } else {
        libc::EPOLL_CTL_DEL
    };
    // SAFETY: `epoll` is an open epoll descriptor we own, `fd` an open descriptor of a live
    // socket's (or, for a removal, one being removed), and `event` a valid event for the
    // duration of the call.
    let rc = unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &raw mut event) };
    if rc == 0 {
        return Ok(());
    }
    match std::io::Error::last_os_error().raw_os_error() {
        // Already there, or already gone: what was asked for holds.
        Some(libc::EEXIST) if add => Ok(()),
        Some(libc::ENOENT) if !add => Ok(()),
        Some(e) => Err(e),
        None => Err(libc::EINVAL),
    }
}

/// The live pollers, by handle.
static POLLERS: LazyLock<RwLock<crate::util::Handles<Arc<Mutex<Poller>>>>> =
    LazyLock::new(Default::default);

fn poller_of(handle: *mut c_void) -> Result<Arc<Mutex<Poller>>, Errno> {
    let map = POLLERS.read().unwrap_or_else(|e| e.into_inner());
    map.get(&(handle as usize)).cloned().ok_or(libc::EFAULT)
}

/// `zmq_poller_new`: an empty poller.
#[no_mangle]
pub extern "C" fn zmq_poller_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let poller = Arc::new(Mutex::new(Poller::default()));
        let handle = Arc::as_ptr(&poller) as *mut c_void;
        let mut map = POLLERS.write().unwrap_or_else(|e| e.into_inner());
        map.insert(handle as usize, poller);
        handle
    })
}

/// `zmq_poller_destroy`: free the poller and set the handle to NULL.
///
/// # Safety
/// `poller_p` must be NULL or point to a readable and writable handle.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_destroy(poller_p: *mut *mut c_void) -> c_int {
    guard(-1, || {
        if poller_p.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: the caller promises a readable handle at `poller_p` (non-null).
        let handle = unsafe { *poller_p };
        let removed = {
            let mut map = POLLERS.write().unwrap_or_else(|e| e.into_inner());
            map.remove(&(handle as usize))
        };
        if removed.is_none() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: as above, writable.
        unsafe { *poller_p = std::ptr::null_mut() };
        0
    })
}

/// `zmq_poller_size`: how many sockets and descriptors the poller holds.
#[no_mangle]
pub extern "C" fn zmq_poller_size(poller: *mut c_void) -> c_int {
    guard(-1, || {
        ret(poller_of(poller)
            .map(|p| c_int::try_from(lock(&p).entries.len()).unwrap_or(c_int::MAX)))
    })
}

/// Events other than `ZMQ_POLLIN`, `ZMQ_POLLOUT`, `ZMQ_POLLERR` and `ZMQ_POLLPRI` are
/// `EINVAL`.
fn check_events(events: c_short) -> Result<(), Errno> {
    if c_int::from(events) & !0x0F != 0 {
        return Err(libc::EINVAL);
    }
    Ok(())
}

fn add(poller: *mut c_void, key: Key, user_data: *mut c_void, events: c_short) -> c_int {
    guard(-1, || {
        ret(poller_of(poller).and_then(|p| {
            check_events(events)?;
            let mut p = lock(&p);
            if p.entries.iter().any(|e| e.key == key) {
                return Err(libc::EINVAL);
            }
            p.entries.push(Entry {
                key,
                user_data: user_data as usize,
                events,
            });
            if let Key::Socket(socket) = key {
                if let Err(e) = p.follow(socket, true) {
                    p.entries.pop();
                    return Err(e);
                }
            }
            Ok(0)
        }))
    })
}

fn change(poller: *mut c_void, key: Key, events: Option<c_short>) -> c_int {
    guard(-1, || {
        ret(poller_of(poller).and_then(|p| {
            if let Some(events) = events {
                check_events(events)?;
            }
            let mut p = lock(&p);
            let at = p
                .entries
                .iter()
                .position(|e| e.key == key)
                .ok_or(libc::EINVAL)?;
            match events {
                Some(events) => p.entries[at].events = events,
                None => {
                    p.entries.remove(at);
                    if let Key::Socket(socket) = key {
                        p.follow(socket, false)?;
                    }
                }
            }
            Ok(0)
        }))
    })
}

/// A socket handle checked, or `ENOTSOCK`.
fn socket_key(socket: *mut c_void) -> Result<Key, Errno> {
    sock_of(socket).map(|_| Key::Socket(socket as usize))
}

/// A descriptor checked, or `EBADF` for -1.
fn fd_key(fd: c_int) -> Result<Key, Errno> {
    if fd < 0 {
        return Err(libc::EBADF);
    }
    Ok(Key::Fd(fd))
}

/// `zmq_poller_add`: wait on a socket for `events`, reported with `user_data`.
#[no_mangle]
pub extern "C" fn zmq_poller_add(
    poller: *mut c_void,
    socket: *mut c_void,
    user_data: *mut c_void,
    events: c_short,
) -> c_int {
    match socket_key(socket) {
        Ok(key) => add(poller, key, user_data, events),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_modify`: change the events a socket is waited on for.
#[no_mangle]
pub extern "C" fn zmq_poller_modify(
    poller: *mut c_void,
    socket: *mut c_void,
    events: c_short,
) -> c_int {
    match socket_key(socket) {
        Ok(key) => change(poller, key, Some(events)),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_remove`: stop waiting on a socket.
#[no_mangle]
pub extern "C" fn zmq_poller_remove(poller: *mut c_void, socket: *mut c_void) -> c_int {
    match socket_key(socket) {
        Ok(key) => change(poller, key, None),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_add_fd`: wait on a file descriptor.
#[no_mangle]
pub extern "C" fn zmq_poller_add_fd(
    poller: *mut c_void,
    fd: c_int,
    user_data: *mut c_void,
    events: c_short,
) -> c_int {
    match fd_key(fd) {
        Ok(key) => add(poller, key, user_data, events),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_modify_fd`: change the events a descriptor is waited on for.
#[no_mangle]
pub extern "C" fn zmq_poller_modify_fd(poller: *mut c_void, fd: c_int, events: c_short) -> c_int {
    match fd_key(fd) {
        Ok(key) => change(poller, key, Some(events)),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_remove_fd`: stop waiting on a descriptor.
#[no_mangle]
pub extern "C" fn zmq_poller_remove_fd(poller: *mut c_void, fd: c_int) -> c_int {
    match fd_key(fd) {
        Ok(key) => change(poller, key, None),
        Err(e) => ret::<c_int>(Err(e)),
    }
}

/// `zmq_poller_fd`: a descriptor that turns readable when one of the poller's thread-safe
/// sockets (CLIENT, SERVER, RADIO, DISH, SCATTER, GATHER, PEER, CHANNEL) may have
/// something; `EINVAL` while it has none, as in libzmq, where only those have the signal.
/// Then call `zmq_poller_wait` (with a zero timeout) until it says `EAGAIN`: a wait
/// resets the descriptor, which fires again only for a later change. It stays the
/// poller's: the caller does not close it.
///
/// # Safety
/// `fd` must be NULL or point to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_fd(poller: *mut c_void, fd: *mut c_int) -> c_int {
    guard(-1, || {
        let p = match poller_of(poller) {
            Ok(p) => p,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        if fd.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        let mut p = lock(&p);
        if p.thread_safe_sockets().next().is_none() {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        if p.signal.is_none() {
            // SAFETY: a plain system call; a non-negative result is a new descriptor, which
            // the `OwnedFd` then owns alone.
            let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if raw < 0 {
                let e = std::io::Error::last_os_error().raw_os_error();
                return ret::<c_int>(Err(e.unwrap_or(libc::EMFILE)));
            }
            // SAFETY: `raw` was just returned by epoll_create1 and is owned by no one else.
            p.signal = Some(unsafe { OwnedFd::from_raw_fd(raw) });
            let sockets: Vec<usize> = p
                .entries
                .iter()
                .filter_map(|e| match e.key {
                    Key::Socket(s) => Some(s),
                    Key::Fd(_) => None,
                })
                .collect();
            for socket in sockets {
                if let Err(e) = p.follow(socket, true) {
                    p.signal = None;
                    return ret::<c_int>(Err(e));
                }
            }
        }
        let raw = p.signal.as_ref().map_or(-1, |s| s.as_raw_fd());
        // SAFETY: the caller promises a writable `int` at `fd` (non-null).
        unsafe { *fd = raw };
        0
    })
}

/// `zmq_poller_wait_all`: wait until something is ready or `timeout` milliseconds pass
/// (-1: forever); fill up to `n_events` events and return how many (-1 with `EAGAIN` if
/// none came in time).
///
/// # Safety
/// `events` must point to `n_events` writable `zmq_poller_event_t`s.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_wait_all(
    poller: *mut c_void,
    events: *mut zmq_poller_event_t,
    n_events: c_int,
    timeout: c_long,
) -> c_int {
    guard(-1, || {
        let p = match poller_of(poller) {
            Ok(p) => p,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        if events.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        if n_events < 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        let p = lock(&p);
        if p.signal.is_some() {
            // The descriptor `zmq_poller_fd` gave is reset by a wait, as libzmq's is: what
            // is ready now is reported below; it fires again for what comes later.
            for s in p.thread_safe_sockets() {
                s.sock.clear_readiness();
            }
        }
        let (mut items, data): (Vec<zmq_pollitem_t>, Vec<usize>) = p
            .entries
            .iter()
            // Entries waiting for nothing are left out, as libzmq leaves them.
            .filter(|e| e.events != 0)
            .map(|e| {
                let (socket, fd) = match e.key {
                    Key::Socket(s) => (s as *mut c_void, -1),
                    Key::Fd(fd) => (std::ptr::null_mut(), fd),
                };
                let item = zmq_pollitem_t {
                    socket,
                    fd,
                    events: e.events,
                    revents: 0,
                };
                (item, e.user_data)
            })
            .unzip();
        if items.is_empty() {
            if timeout < 0 {
                return ret::<c_int>(Err(libc::EFAULT));
            }
            if timeout > 0 {
                std::thread::sleep(std::time::Duration::from_millis(timeout as u64));
            }
            return ret::<c_int>(Err(libc::EAGAIN));
        }
        match poll(&mut items, timeout) {
            Ok(0) => ret::<c_int>(Err(libc::EAGAIN)),
            Ok(_) => {
                // SAFETY: the caller promises `n_events` writable events (non-null).
                let out = unsafe { std::slice::from_raw_parts_mut(events, n_events as usize) };
                let mut n = 0;
                for (item, user_data) in items.iter().zip(&data) {
                    if item.revents == 0 || n == out.len() {
                        continue;
                    }
                    out[n] = zmq_poller_event_t {
                        socket: item.socket,
                        fd: item.fd,
                        user_data: *user_data as *mut c_void,
                        events: item.revents,
                    };
                    n += 1;
                }
                // The entries not filled are cleared, as libzmq clears them: a caller that
                // walks all `n_events` sees no event twice.
                for e in &mut out[n..] {
                    *e = zmq_poller_event_t {
                        socket: std::ptr::null_mut(),
                        fd: -1,
                        user_data: std::ptr::null_mut(),
                        events: 0,
                    };
                }
                c_int::try_from(n).unwrap_or(c_int::MAX)
            }
            Err(e) => ret::<c_int>(Err(e)),
        }
    })
}

/// `zmq_poller_wait`: `zmq_poller_wait_all` for one event.
///
/// # Safety
/// `event` must point to a writable `zmq_poller_event_t`.
#[no_mangle]
pub unsafe extern "C" fn zmq_poller_wait(
    poller: *mut c_void,
    event: *mut zmq_poller_event_t,
    timeout: c_long,
) -> c_int {
    // SAFETY: forwarded from the caller: one writable event.
    let n = unsafe { zmq_poller_wait_all(poller, event, 1, timeout) };
    if n == 1 {
        0
    } else {
        n
    }
}
