//! What becomes of a socket that still lingers when its runtime ends.
//!
//! A program that sends and returns from `main` without closing anything must not lose
//! what it sent, as with libzmq (whose `zmq_ctx_term` waits, and which pyzmq runs at
//! interpreter exit) and with this project's blocking driver. An async runtime cannot
//! wait in a `drop`, and its tasks, which write a dropped socket's queue while it
//! lingers, end with it. So:
//!
//! 1. A dropped [`Socket`](crate::Socket) starts closing and lingers on its runtime's
//!    tasks, as before; it is noted here ([`orphaned`]).
//! 2. When the last of its tasks goes away before it finished (its runtime ended: a
//!    `#[tokio::main]` returning, a `zmtp_smol::block_on` done), the socket is handed
//!    over (`Core::hand_over`): its state machine, its peers' connections as `std`
//!    streams on duplicated descriptors (TLS sessions included) and its connects in
//!    flight go to `zmtp_mio::handover`, whose I/O thread lingers with them, blocking
//!    I/O, until everything is written or LINGER runs out.
//! 3. When the process exits (`main` returns, or `std::process::exit`), a hook
//!    registered with `atexit(3)` hands over the noted sockets that still linger on a
//!    runtime that is still there (a runtime on another thread, or one nobody runs any
//!    more), then waits until every socket handed over has finished, each bounded by its
//!    own LINGER (forever by default, as in libzmq).
//!
//! What LINGER cuts off is said on standard error (`zmtp_driver::loss`).
//!
//! Limits: a process killed by a signal, or ended by `libc::_exit` or an abort, waits for
//! nothing. `inproc://` peers live in the process's runtimes: a socket's queue for an
//! in-process peer ends with the runtime. A socket still in use (its handle kept, not
//! dropped) when the process exits is not closed by the hook: drop or close it first.

use std::sync::{Arc, Mutex, Once, Weak};

use crate::core::Inner;
use crate::Runtime;

/// A dropped socket that may still linger on its runtime.
pub(crate) trait Orphan: Send + Sync {
    /// Hand it over to linger with blocking I/O, if it still lingers.
    fn hand_over(&self);
}

impl<R: Runtime> Orphan for Inner<R> {
    fn hand_over(&self) {
        self.lock().hand_over();
    }
}

/// The dropped sockets that may still linger.
static ORPHANS: Mutex<Vec<Weak<dyn Orphan>>> = Mutex::new(Vec::new());

/// Note a socket whose handle was dropped while it lingers.
pub(crate) fn orphaned<R: Runtime>(inner: &Arc<Inner<R>>) {
    let weak: Weak<dyn Orphan> = Arc::downgrade(inner) as Weak<dyn Orphan>;
    let mut orphans = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    // Those that finished (and were freed) are forgotten.
    orphans.retain(|o| o.strong_count() > 0);
    orphans.push(weak);
    drop(orphans);
    wait_at_exit();
}

/// Let a closing socket linger on zmtp-mio's I/O thread.
pub(crate) fn linger_elsewhere(handover: zmtp_mio::handover::Handover) {
    wait_at_exit();
    // A failure (no I/O thread could be started) has been said on standard error.
    let _ = zmtp_mio::handover::adopt(handover);
}

/// Hand over every dropped socket that still lingers, and wait until every socket handed
/// over has written its queue or run out of LINGER. What the exit hook runs; a program
/// may call it itself, e.g. before a `libc::_exit`.
pub fn linger_all() {
    let orphans: Vec<Weak<dyn Orphan>> =
        std::mem::take(&mut *ORPHANS.lock().unwrap_or_else(|e| e.into_inner()));
    for orphan in orphans.iter().filter_map(Weak::upgrade) {
        orphan.hand_over();
    }
    zmtp_mio::handover::wait();
}

/// Register [`linger_all`] to run when the process exits (once).
fn wait_at_exit() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // SAFETY: `atexit` only records the function pointer; `at_exit` is an
        // `extern "C" fn()` with no arguments that never unwinds into the C caller (it
        // catches panics), as `atexit` requires.
        let registered = unsafe { libc::atexit(at_exit) };
        if registered != 0 {
            eprintln!(
                "zmtp: could not register the exit hook: sockets still lingering when the \
                 process exits will not be waited for"
            );
        }
    });
}

extern "C" fn at_exit() {
    // A panic must not cross into the C runtime: it would abort the exit.
    let _ = std::panic::catch_unwind(linger_all);
}
