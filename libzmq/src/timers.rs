//! `zmq_timers_*`: timers an application's own loop runs (`zmq_timers_timeout` says how
//! long to wait, `zmq_timers_execute` calls the handlers that are due).

use std::ffi::{c_int, c_long, c_void};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::error::Errno;
use crate::{guard, lock, ret};

/// A timer handler: called with the timer's id and the argument given to `zmq_timers_add`.
pub type TimerFn = unsafe extern "C" fn(timer_id: c_int, arg: *mut c_void);

struct Timer {
    id: c_int,
    interval: Duration,
    when: Instant,
    handler: TimerFn,
    arg: usize,
}

#[derive(Default)]
struct Timers {
    next_id: c_int,
    timers: Vec<Timer>,
}

/// The live timer sets, by handle.
static TIMERS: LazyLock<RwLock<crate::util::Handles<Arc<Mutex<Timers>>>>> =
    LazyLock::new(Default::default);

fn timers_of(handle: *mut c_void) -> Result<Arc<Mutex<Timers>>, Errno> {
    let map = TIMERS.read().unwrap_or_else(|e| e.into_inner());
    map.get(&(handle as usize)).cloned().ok_or(libc::EFAULT)
}

fn millis(ms: usize) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// `zmq_timers_new`: an empty set of timers.
#[no_mangle]
pub extern "C" fn zmq_timers_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let timers = Arc::new(Mutex::new(Timers::default()));
        let handle = Arc::as_ptr(&timers) as *mut c_void;
        let mut map = TIMERS.write().unwrap_or_else(|e| e.into_inner());
        map.insert(handle as usize, timers);
        handle
    })
}

/// `zmq_timers_destroy`: free the set and set the handle to NULL (`EFAULT` for a handle
/// that is not a set).
///
/// # Safety
/// `timers_p` must be NULL or point to a readable and writable handle.
#[no_mangle]
pub unsafe extern "C" fn zmq_timers_destroy(timers_p: *mut *mut c_void) -> c_int {
    guard(-1, || {
        if timers_p.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: the caller promises a readable handle at `timers_p` (non-null).
        let handle = unsafe { *timers_p };
        let removed = {
            let mut map = TIMERS.write().unwrap_or_else(|e| e.into_inner());
            map.remove(&(handle as usize))
        };
        if removed.is_none() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: as above, writable.
        unsafe { *timers_p = std::ptr::null_mut() };
        0
    })
}

/// `zmq_timers_add`: a timer firing every `interval` milliseconds; returns its id
/// (`EFAULT` for a NULL handler).
#[no_mangle]
pub extern "C" fn zmq_timers_add(
    timers: *mut c_void,
    interval: usize,
    handler: Option<TimerFn>,
    arg: *mut c_void,
) -> c_int {
    guard(-1, || {
        ret(timers_of(timers).and_then(|t| {
            let handler = handler.ok_or(libc::EFAULT)?;
            let mut t = lock(&t);
            t.next_id = t.next_id.wrapping_add(1).max(1);
            let id = t.next_id;
            t.timers.push(Timer {
                id,
                interval: millis(interval),
                when: Instant::now() + millis(interval),
                handler,
                arg: arg as usize,
            });
            Ok(id)
        }))
    })
}

/// Run `f` on timer `id` (`EINVAL` if there is none).
fn with_timer(timers: *mut c_void, id: c_int, f: impl FnOnce(&mut Vec<Timer>, usize)) -> c_int {
    guard(-1, || {
        ret(timers_of(timers).and_then(|t| {
            let mut t = lock(&t);
            let at = t
                .timers
                .iter()
                .position(|x| x.id == id)
                .ok_or(libc::EINVAL)?;
            f(&mut t.timers, at);
            Ok(0)
        }))
    })
}

/// `zmq_timers_cancel`: remove a timer (`EINVAL` if there is no such timer).
#[no_mangle]
pub extern "C" fn zmq_timers_cancel(timers: *mut c_void, timer_id: c_int) -> c_int {
    with_timer(timers, timer_id, |t, at| {
        t.remove(at);
    })
}

/// `zmq_timers_set_interval`: change a timer's interval; it fires that long from now.
#[no_mangle]
pub extern "C" fn zmq_timers_set_interval(
    timers: *mut c_void,
    timer_id: c_int,
    interval: usize,
) -> c_int {
    with_timer(timers, timer_id, |t, at| {
        t[at].interval = millis(interval);
        t[at].when = Instant::now() + t[at].interval;
    })
}

/// `zmq_timers_reset`: a timer fires a whole interval from now.
#[no_mangle]
pub extern "C" fn zmq_timers_reset(timers: *mut c_void, timer_id: c_int) -> c_int {
    with_timer(timers, timer_id, |t, at| {
        t[at].when = Instant::now() + t[at].interval;
    })
}

/// `zmq_timers_timeout`: milliseconds until the next timer is due (0 if one is), -1 if
/// there is none.
#[no_mangle]
pub extern "C" fn zmq_timers_timeout(timers: *mut c_void) -> c_long {
    guard(-1, || match timers_of(timers) {
        Ok(t) => {
            let t = lock(&t);
            let now = Instant::now();
            t.timers.iter().map(|x| x.when).min().map_or(-1, |when| {
                let left = when.saturating_duration_since(now);
                // Rounded up, so that a wait of that long finds the timer due.
                let ms = left.as_micros().div_ceil(1000);
                c_long::try_from(ms).unwrap_or(c_long::MAX)
            })
        }
        Err(e) => {
            crate::error::set_errno(e);
            -1
        }
    })
}

/// `zmq_timers_execute`: call the handler of every timer that is due, and schedule each
/// again an interval from now. Handlers may add, cancel and change timers.
#[no_mangle]
pub extern "C" fn zmq_timers_execute(timers: *mut c_void) -> c_int {
    guard(-1, || {
        let t = match timers_of(timers) {
            Ok(t) => t,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        let now = Instant::now();
        let due: Vec<(c_int, TimerFn, usize)> = {
            let mut t = lock(&t);
            let mut due = Vec::new();
            for x in t.timers.iter_mut().filter(|x| x.when <= now) {
                due.push((x.id, x.handler, x.arg));
                x.when = now + x.interval;
            }
            due
        };
        for (id, handler, arg) in due {
            // A handler called before may have cancelled this timer.
            if !lock(&t).timers.iter().any(|x| x.id == id) {
                continue;
            }
            // SAFETY: the application's handler, called with the id and argument it was
            // added with, without the lock (it may call back into the timers).
            unsafe { handler(id, arg as *mut c_void) };
        }
        0
    })
}
