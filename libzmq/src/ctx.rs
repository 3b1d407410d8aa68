//! Contexts: `zmq_ctx_*`, `zmq_init`, `zmq_term`.

use std::collections::BTreeSet;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

use crate::error::{Errno, EMTHREAD, ETERM};
use crate::{guard, lock};

/// `ZMQ_IO_THREADS`.
pub(crate) const IO_THREADS: c_int = 1;
/// `ZMQ_MAX_SOCKETS`.
pub(crate) const MAX_SOCKETS: c_int = 2;
/// `ZMQ_SOCKET_LIMIT`.
pub(crate) const SOCKET_LIMIT: c_int = 3;
/// `ZMQ_THREAD_PRIORITY`.
pub(crate) const THREAD_PRIORITY: c_int = 3;
/// `ZMQ_THREAD_SCHED_POLICY`.
pub(crate) const THREAD_SCHED_POLICY: c_int = 4;
/// `ZMQ_MAX_MSGSZ`.
pub(crate) const MAX_MSGSZ: c_int = 5;
/// `ZMQ_MSG_T_SIZE`.
pub(crate) const MSG_T_SIZE: c_int = 6;
/// `ZMQ_THREAD_AFFINITY_CPU_ADD`.
pub(crate) const THREAD_AFFINITY_CPU_ADD: c_int = 7;
/// `ZMQ_THREAD_AFFINITY_CPU_REMOVE`.
pub(crate) const THREAD_AFFINITY_CPU_REMOVE: c_int = 8;
/// `ZMQ_THREAD_NAME_PREFIX`.
pub(crate) const THREAD_NAME_PREFIX: c_int = 9;
/// `ZMQ_BLOCKY`.
pub(crate) const BLOCKY: c_int = 70;
/// `ZMQ_IPV6`.
pub(crate) const IPV6: c_int = 42;
/// `ZMQ_ZERO_COPY_RECV` (draft).
pub(crate) const ZERO_COPY_RECV: c_int = 10;

/// libzmq's largest socket count (`ZMQ_SOCKET_LIMIT` answers it).
const CLIPPED_MAXSOCKETS: c_int = 65535;

/// A context behind a `void *` handle.
pub(crate) struct Ctx {
    /// The process that made it: a child forked from that process has a copy of the
    /// context but none of its threads.
    pid: u32,
    /// The driver's context; taken when the context ends.
    mio: Mutex<Option<zmtp_mio::Context>>,
    /// Set by `zmq_ctx_shutdown` or `zmq_ctx_term`: every socket call but `zmq_close`
    /// then fails with `ETERM`.
    terminating: AtomicBool,
    state: Mutex<CtxState>,
    /// Signalled when a socket is closed.
    closed: Condvar,
}

struct CtxState {
    /// Sockets made and not yet closed.
    sockets: usize,
    io_threads: c_int,
    max_sockets: c_int,
    max_msgsz: c_int,
    ipv6: bool,
    blocky: bool,
    thread_priority: c_int,
    thread_sched_policy: c_int,
    /// `ZMQ_THREAD_AFFINITY_CPU_ADD`/`_REMOVE`: the CPUs the I/O thread is pinned to
    /// (none: not pinned).
    thread_affinity: BTreeSet<usize>,
    /// `ZMQ_THREAD_NAME_PREFIX`: text (an `int` set is kept as its decimal text).
    thread_name_prefix: Vec<u8>,
    zero_copy_recv: c_int,
    /// The thread closing the sockets after a shutdown (their calls return at once).
    closer: Option<JoinHandle<()>>,
}

/// The live contexts, by handle: a handle not in here is not a context (`EFAULT`).
static CONTEXTS: LazyLock<RwLock<crate::util::Handles<Arc<Ctx>>>> = LazyLock::new(Default::default);

impl Ctx {
    /// Whether this is a forked child's copy of a context its parent made (libzmq checks
    /// the same): its sockets are closed and it is ended without their threads.
    pub(crate) fn forked(&self) -> bool {
        self.pid != std::process::id()
    }

    /// `addr` checked as libzmq checks it before the driver parses it: `inproc://` with
    /// no name is `EINVAL`. (The driver's `inproc://` names are per context, as libzmq's.)
    pub(crate) fn endpoint<'a>(&self, addr: &'a str) -> Result<&'a str, Errno> {
        if addr == "inproc://" {
            return Err(libc::EINVAL);
        }
        Ok(addr)
    }

    /// A socket of the library's own (a monitor's), not counted as the application's.
    pub(crate) fn internal_socket(
        &self,
        ty: zmtp_mio::SocketType,
        options: zmtp_mio::Options,
    ) -> Result<zmtp_mio::Socket, Errno> {
        if self.terminating() {
            return Err(ETERM);
        }
        let ctx = lock(&self.mio);
        let ctx = ctx.as_ref().ok_or(ETERM)?;
        ctx.socket_with(ty, options).map_err(|_| EMTHREAD)
    }

    /// Whether the context is being terminated.
    pub(crate) fn terminating(&self) -> bool {
        self.terminating.load(Ordering::Acquire)
    }

    fn state(&self) -> MutexGuard<'_, CtxState> {
        lock(&self.state)
    }

    /// A socket of type `ty` with `options`, counted against `ZMQ_MAX_SOCKETS`.
    pub(crate) fn socket(
        &self,
        ty: zmtp_mio::SocketType,
        options: zmtp_mio::Options,
    ) -> Result<zmtp_mio::Socket, Errno> {
        let mut st = self.state();
        if self.terminating() {
            return Err(ETERM);
        }
        if st.sockets >= usize::try_from(st.max_sockets).unwrap_or(0) {
            return Err(libc::EMFILE);
        }
        let ctx = lock(&self.mio);
        let Some(ctx) = ctx.as_ref() else {
            return Err(ETERM);
        };
        let socket = ctx.socket_with(ty, options).map_err(|_| EMTHREAD)?;
        st.sockets += 1;
        Ok(socket)
    }

    /// The default LINGER of new sockets: forever, or zero when `ZMQ_BLOCKY` is off.
    pub(crate) fn blocky(&self) -> bool {
        self.state().blocky
    }

    /// Whether new sockets use IPv6 (`ZMQ_IPV6` set on the context).
    pub(crate) fn ipv6(&self) -> bool {
        self.state().ipv6
    }

    /// A socket of this context was closed.
    pub(crate) fn socket_closed(&self) {
        let mut st = self.state();
        st.sockets = st.sockets.saturating_sub(1);
        self.closed.notify_all();
    }

    /// Mark the context terminating and close its sockets in the background (their
    /// blocked calls return `ETERM`); once.
    fn shutdown(&self) {
        let mut st = self.state();
        if self.terminating.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(ctx) = lock(&self.mio).clone() {
            st.closer = std::thread::Builder::new()
                .name("zmq-ctx-shutdown".into())
                .spawn(move || {
                    ctx.term();
                })
                .ok();
        }
    }
}

/// The context behind `handle`, or `EFAULT`.
pub(crate) fn ctx_of(handle: *mut c_void) -> Result<Arc<Ctx>, Errno> {
    let map = CONTEXTS.read().unwrap_or_else(|e| e.into_inner());
    map.get(&(handle as usize)).cloned().ok_or(libc::EFAULT)
}

/// A write to a connection the peer closed must fail with `EPIPE`, not kill the
/// program: libzmq sends with `MSG_NOSIGNAL`; the driver's `ipc://` writes do not yet, so
/// the first context sets `SIGPIPE` to be ignored if the program left it at its default
/// (a handler or an ignore the program installed is left alone).
fn ignore_sigpipe() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sigaction` with a NULL new action only reads the current one into
        // `old`, a zeroed `sigaction` owned here.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let read = unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) };
        if read == 0 && old.sa_sigaction == libc::SIG_DFL {
            // SAFETY: replacing the default disposition of SIGPIPE with "ignore".
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        }
    });
}

/// The process that registered [`at_exit`]: a child forked from it inherits the
/// registration but none of the threads, and its exit leaves everything alone.
static HOOKED_BY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Register [`at_exit`] with the C runtime (once, with the first context).
fn linger_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        HOOKED_BY.store(std::process::id(), Ordering::Relaxed);
        // SAFETY: `atexit` only records the function pointer; `at_exit` is an
        // `extern "C" fn()` without arguments that never unwinds into its caller (it
        // catches panics), as `atexit` requires.
        if unsafe { libc::atexit(at_exit) } != 0 {
            eprintln!(
                "zmtp: could not register the exit hook: messages still queued when the \
                 process exits may be lost"
            );
        }
    });
}

/// Run when the process exits (`exit`, or a return from `main`): every socket the
/// program left open is closed as `zmq_close` does, and every context waits, as
/// `zmq_ctx_term` would, until what its closed sockets queued is written or their
/// `ZMQ_LINGER` runs out. So a program that sends and returns without closing loses
/// nothing. What LINGER cuts off, and a wait that lasts, are said on standard error
/// (unless `ZMTP_LOSS_REPORTS=0`). libzmq itself lets the process end and the queued
/// messages with it. A socket another thread is still in a call on is left alone, and so
/// is everything in a forked child (a lock a thread of the parent held at the fork would
/// never be released there).
extern "C" fn at_exit() {
    if HOOKED_BY.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    // A panic must not cross into the C runtime.
    let _ = std::panic::catch_unwind(|| {
        zmtp_mio::set_loss_reports_from_env();
        crate::socket::close_all();
        let contexts: Vec<Arc<Ctx>> = {
            let map = CONTEXTS.read().unwrap_or_else(|e| e.into_inner());
            map.values().filter(|c| !c.forked()).cloned().collect()
        };
        for ctx in contexts {
            // The last handle of the driver's context: its drop waits for the linger.
            let mio = lock(&ctx.mio).take();
            drop(mio);
        }
    });
}

fn new_ctx() -> Result<*mut c_void, Errno> {
    zmtp_mio::set_loss_reports(false);
    ignore_sigpipe();
    linger_at_exit();
    let mio = zmtp_mio::Context::new().map_err(|_| EMTHREAD)?;
    let ctx = Arc::new(Ctx {
        pid: std::process::id(),
        mio: Mutex::new(Some(mio)),
        terminating: AtomicBool::new(false),
        state: Mutex::new(CtxState {
            sockets: 0,
            io_threads: 1,
            max_sockets: 1023,
            max_msgsz: c_int::MAX,
            ipv6: false,
            blocky: true,
            thread_priority: -1,
            thread_sched_policy: -1,
            thread_affinity: BTreeSet::new(),
            thread_name_prefix: Vec::new(),
            zero_copy_recv: 1,
            closer: None,
        }),
        closed: Condvar::new(),
    });
    // ZAP handlers bind at `inproc://zeromq.zap.01`: the driver asks the socket of this
    // context bound at its name for that endpoint.
    let zap_name = format!("inproc://{}", zmtp_mio::ZAP_HANDLER_NAME);
    let zap = ctx.endpoint(&zap_name)?;
    if let Some(mio) = lock(&ctx.mio).as_ref() {
        mio.set_zap_endpoint(Some(zap));
    }
    let handle = Arc::as_ptr(&ctx) as *mut c_void;
    let mut map = CONTEXTS.write().unwrap_or_else(|e| e.into_inner());
    map.insert(handle as usize, ctx);
    Ok(handle)
}

/// `zmq_ctx_new`: a new context, or NULL (`errno` set) if its I/O thread cannot start.
#[no_mangle]
pub extern "C" fn zmq_ctx_new() -> *mut c_void {
    guard(std::ptr::null_mut(), || match new_ctx() {
        Ok(h) => h,
        Err(e) => {
            crate::error::set_errno(e);
            std::ptr::null_mut()
        }
    })
}

/// `zmq_init`: `zmq_ctx_new` with an I/O thread count (which must not be negative).
#[no_mangle]
pub extern "C" fn zmq_init(io_threads: c_int) -> *mut c_void {
    if io_threads < 0 {
        crate::error::set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let handle = zmq_ctx_new();
    if !handle.is_null() {
        zmq_ctx_set(handle, IO_THREADS, io_threads);
    }
    handle
}

/// `zmq_ctx_shutdown`: every blocked and later call on the context's sockets (but
/// `zmq_close`) returns `ETERM`; returns at once.
#[no_mangle]
pub extern "C" fn zmq_ctx_shutdown(context: *mut c_void) -> c_int {
    guard(-1, || {
        crate::ret(ctx_of(context).map(|ctx| {
            ctx.shutdown();
            0
        }))
    })
}

/// `zmq_ctx_term`: shut the context down, wait until every socket is closed with
/// `zmq_close` and has lingered per `ZMQ_LINGER`, then free it.
#[no_mangle]
pub extern "C" fn zmq_ctx_term(context: *mut c_void) -> c_int {
    guard(-1, || {
        let ctx = match ctx_of(context) {
            Ok(ctx) => ctx,
            Err(e) => return crate::ret::<c_int>(Err(e)),
        };
        if ctx.forked() {
            // A forked child's copy: its I/O thread is the parent's, so there is nothing
            // to wait for and nothing the child may touch; the copy is left as it is.
            let mut map = CONTEXTS.write().unwrap_or_else(|e| e.into_inner());
            map.remove(&(context as usize));
            std::mem::forget(ctx);
            return 0;
        }
        ctx.shutdown();
        let closer = {
            let mut st = ctx.state();
            while st.sockets > 0 {
                st = ctx.closed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.closer.take()
        };
        if let Some(closer) = closer {
            let _ = closer.join();
        }
        // The last handle of the driver's context: dropping it waits for the linger of
        // the sockets closed before.
        let mio = lock(&ctx.mio).take();
        drop(mio);
        let mut map = CONTEXTS.write().unwrap_or_else(|e| e.into_inner());
        map.remove(&(context as usize));
        0
    })
}

/// `zmq_term`: `zmq_ctx_term`.
#[no_mangle]
pub extern "C" fn zmq_term(context: *mut c_void) -> c_int {
    zmq_ctx_term(context)
}

/// `zmq_ctx_destroy`: `zmq_ctx_term`.
#[no_mangle]
pub extern "C" fn zmq_ctx_destroy(context: *mut c_void) -> c_int {
    zmq_ctx_term(context)
}

/// `zmq_ctx_set`: a context option (`ZMQ_IO_THREADS`, `ZMQ_MAX_SOCKETS`, `ZMQ_IPV6`,
/// `ZMQ_BLOCKY`, `ZMQ_THREAD_*`, `ZMQ_MAX_MSGSZ`); others fail with `EINVAL`.
/// `ZMQ_THREAD_AFFINITY_CPU_ADD` and `_REMOVE` pin the context's I/O thread at once
/// (`sched_setaffinity`); a set the system refuses (no CPU of it online) fails with its
/// errno and changes nothing.
#[no_mangle]
pub extern "C" fn zmq_ctx_set(context: *mut c_void, option: c_int, optval: c_int) -> c_int {
    guard(-1, || {
        crate::ret(ctx_of(context).and_then(|ctx| {
            let mut st = ctx.state();
            match option {
                // One I/O thread serves any count asked for.
                IO_THREADS if optval >= 0 => st.io_threads = optval,
                MAX_SOCKETS if (1..=CLIPPED_MAXSOCKETS).contains(&optval) => {
                    st.max_sockets = optval
                }
                THREAD_PRIORITY if optval >= 0 => st.thread_priority = optval,
                THREAD_SCHED_POLICY if optval >= 0 => st.thread_sched_policy = optval,
                THREAD_NAME_PREFIX => st.thread_name_prefix = optval.to_string().into_bytes(),
                THREAD_AFFINITY_CPU_ADD | THREAD_AFFINITY_CPU_REMOVE if optval >= 0 => {
                    let cpu = optval as usize;
                    let mut cpus = st.thread_affinity.clone();
                    let changed = if option == THREAD_AFFINITY_CPU_ADD {
                        cpus.insert(cpu)
                    } else if cpus.remove(&cpu) {
                        true
                    } else {
                        // As libzmq: removing a CPU that is not in the set fails.
                        return Err(libc::EINVAL);
                    };
                    // The I/O thread runs already: it is pinned at once (libzmq pins its
                    // I/O threads when they start, with the first socket).
                    if let (true, Some(mio)) = (changed, lock(&ctx.mio).as_ref()) {
                        mio.set_io_thread_affinity(cpus.iter().copied())
                            .map_err(|e| crate::error::errno_of(&e, false))?;
                    }
                    st.thread_affinity = cpus;
                }
                MAX_MSGSZ if optval >= 0 => st.max_msgsz = optval,
                IPV6 if optval >= 0 => st.ipv6 = optval != 0,
                BLOCKY if optval >= 0 => st.blocky = optval != 0,
                ZERO_COPY_RECV if optval >= 0 => st.zero_copy_recv = optval,
                _ => return Err(libc::EINVAL),
            }
            Ok(0)
        }))
    })
}

/// `zmq_ctx_get`: a context option's value; unknown options fail with `EINVAL`.
#[no_mangle]
pub extern "C" fn zmq_ctx_get(context: *mut c_void, option: c_int) -> c_int {
    guard(-1, || crate::ret(ctx_get(context, option)))
}

/// A context option's value, or why not.
fn ctx_get(context: *mut c_void, option: c_int) -> Result<c_int, Errno> {
    let ctx = ctx_of(context)?;
    let st = ctx.state();
    Ok(match option {
        IO_THREADS => st.io_threads,
        MAX_SOCKETS => st.max_sockets,
        // 3 is both SOCKET_LIMIT (read) and THREAD_PRIORITY (written), as in libzmq.
        SOCKET_LIMIT => CLIPPED_MAXSOCKETS,
        THREAD_SCHED_POLICY => st.thread_sched_policy,
        // As C's `atoi` reads the text.
        THREAD_NAME_PREFIX => atoi(&st.thread_name_prefix),
        MAX_MSGSZ => st.max_msgsz,
        MSG_T_SIZE => c_int::try_from(std::mem::size_of::<crate::msg::zmq_msg_t>()).unwrap_or(64),
        IPV6 => c_int::from(st.ipv6),
        BLOCKY => c_int::from(st.blocky),
        ZERO_COPY_RECV => st.zero_copy_recv,
        _ => return Err(libc::EINVAL),
    })
}

/// The leading decimal number of `text` (0 if none), as C's `atoi`.
fn atoi(text: &[u8]) -> c_int {
    let text = std::str::from_utf8(text).unwrap_or("").trim_start();
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(text.len(), |(i, _)| i);
    text[..end].parse().unwrap_or(0)
}

/// `zmq_ctx_set_ext` (draft): a context option of any size: `ZMQ_THREAD_NAME_PREFIX` as
/// text (1 to 16 bytes) or an `int`; the others as `int`s, as `zmq_ctx_set`.
///
/// # Safety
/// `optval` must point to `optvallen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_set_ext(
    context: *mut c_void,
    option: c_int,
    optval: *const c_void,
    optvallen: usize,
) -> c_int {
    guard(-1, || {
        if optval.is_null() {
            return crate::ret::<c_int>(Err(libc::EINVAL));
        }
        if optvallen == std::mem::size_of::<c_int>() {
            // SAFETY: non-null with `sizeof(int)` bytes; unaligned.
            let v = unsafe { std::ptr::read_unaligned(optval.cast::<c_int>()) };
            return zmq_ctx_set(context, option, v);
        }
        crate::ret(ctx_of(context).and_then(|ctx| {
            if option != THREAD_NAME_PREFIX || optvallen == 0 || optvallen > 16 {
                return Err(libc::EINVAL);
            }
            // SAFETY: non-null with `optvallen` readable bytes, as the caller promises.
            let text = unsafe { std::slice::from_raw_parts(optval.cast::<u8>(), optvallen) };
            ctx.state().thread_name_prefix = text.to_vec();
            Ok(0)
        }))
    })
}

/// `zmq_ctx_get_ext` (draft): a context option into a buffer: `ZMQ_THREAD_NAME_PREFIX` as
/// the bytes set, with a NUL after them if the buffer has room (or as an `int` when the
/// buffer is one), the others as `int`s.
///
/// # Safety
/// `optvallen` must point to a writable `size_t`, `optval` to that many writable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_ctx_get_ext(
    context: *mut c_void,
    option: c_int,
    optval: *mut c_void,
    optvallen: *mut usize,
) -> c_int {
    guard(-1, || {
        if optval.is_null() || optvallen.is_null() {
            return crate::ret::<c_int>(Err(libc::EFAULT));
        }
        // SAFETY: non-null, readable and writable as the caller promises.
        let capacity = unsafe { *optvallen };
        let int_size = std::mem::size_of::<c_int>();
        if option != THREAD_NAME_PREFIX || capacity == int_size {
            if capacity != int_size {
                return crate::ret::<c_int>(Err(libc::EINVAL));
            }
            let v = match ctx_get(context, option) {
                Ok(v) => v,
                Err(e) => return crate::ret::<c_int>(Err(e)),
            };
            // SAFETY: `sizeof(int)` writable bytes at `optval` (non-null); unaligned.
            unsafe { std::ptr::write_unaligned(optval.cast::<c_int>(), v) };
            return 0;
        }
        crate::ret(ctx_of(context).and_then(|ctx| {
            let text = ctx.state().thread_name_prefix.clone();
            // As libzmq: the bytes set (a text given with its NUL keeps it), in a buffer
            // at least that long; a NUL is added after them where there is room.
            if capacity < text.len() {
                return Err(libc::EINVAL);
            }
            let nul = capacity > text.len();
            // SAFETY: `capacity` writable bytes at `optval` (non-null), enough for the
            // text, and for its NUL when `nul`.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), optval.cast::<u8>(), text.len());
                if nul {
                    *optval.cast::<u8>().add(text.len()) = 0;
                }
                *optvallen = text.len() + usize::from(nul);
            }
            Ok(0)
        }))
    })
}
