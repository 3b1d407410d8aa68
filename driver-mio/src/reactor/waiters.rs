//! Application threads waiting on a socket (in `send`, `recv`, `close`) or on the context
//! (in `poll`): counted, so that a condition variable is signalled only when someone
//! waits, and once per wait.

use std::sync::{Arc, Condvar, MutexGuard};
use std::time::Instant as StdInstant;

use super::{Shared, Sock, State};

/// The threads waiting on a condition variable, counted so that it is signalled only
/// when someone waits, and once per wait: a signal wakes every thread then waiting, which
/// no longer count (a new generation begins).
#[derive(Default)]
pub(super) struct Waiters {
    count: usize,
    generation: u64,
}

impl Waiters {
    /// A thread starts waiting: returns the generation to hand to `leave`.
    pub(super) fn enter(&mut self) -> u64 {
        self.count += 1;
        self.generation
    }

    /// A thread woke up: it still counted if no signal came (a timeout, a spurious wake).
    pub(super) fn leave(&mut self, generation: u64) {
        if self.generation == generation {
            self.count -= 1;
        }
    }

    /// Whether to signal: someone waits. They are then woken, and no longer count.
    pub(super) fn take(&mut self) -> bool {
        if self.count == 0 {
            return false;
        }
        self.count = 0;
        self.generation += 1;
        true
    }
}

/// Condition variables to signal once the lock is released.
#[derive(Default)]
pub(super) struct Notify {
    conds: Vec<Arc<Condvar>>,
    polled: bool,
}

impl Notify {
    /// Note that socket `id` changed: its waiters, and those in `poll`, are to be woken.
    pub(super) fn touch(&mut self, st: &mut State, id: usize) {
        if let Some(s) = st.sockets.get_mut(&id) {
            if s.waiters.take() {
                self.conds.push(s.cond.clone());
            }
        }
        self.polled |= st.poll_waiters.take();
    }

    /// Signal (without the lock).
    pub(super) fn signal(&mut self, shared: &Shared) {
        for cond in self.conds.drain(..) {
            cond.notify_all();
        }
        if std::mem::take(&mut self.polled) {
            shared.polled.notify_all();
        }
    }
}

fn wait_on<'a>(
    cond: &Condvar,
    st: MutexGuard<'a, State>,
    deadline: Option<StdInstant>,
) -> MutexGuard<'a, State> {
    match deadline {
        None => cond.wait(st).unwrap_or_else(|e| e.into_inner()),
        Some(d) => {
            let left = d.saturating_duration_since(StdInstant::now());
            cond.wait_timeout(st, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0)
        }
    }
}

impl Shared {
    /// If `ready` does not hold for socket `id` (and it exists), wait for one signal on
    /// it or until `deadline`. Returns whether `ready` held (or the socket is gone), so
    /// that callers loop until it does.
    pub(crate) fn wait_for(
        &self,
        id: usize,
        deadline: Option<StdInstant>,
        ready: impl Fn(&Sock) -> bool,
    ) -> bool {
        let mut st = self.lock();
        let Some(s) = st.sockets.get_mut(&id) else {
            return true;
        };
        if ready(s) {
            return true;
        }
        s.waited = true;
        let generation = s.waiters.enter();
        let cond = s.cond.clone();
        let mut st = wait_on(&cond, st, deadline);
        if let Some(s) = st.sockets.get_mut(&id) {
            s.waiters.leave(generation);
        }
        false
    }

    /// Wait (from [`poll`](crate::poll)) for any socket of this context to change, or
    /// until `deadline`.
    pub(crate) fn wait_polled<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        deadline: Option<StdInstant>,
    ) {
        let generation = st.poll_waiters.enter();
        let mut st = wait_on(&self.polled, st, deadline);
        st.poll_waiters.leave(generation);
    }
}

#[cfg(test)]
mod tests {
    use super::Waiters;

    #[test]
    fn waiters_are_signalled_once_per_wait() {
        let mut w = Waiters::default();
        assert!(!w.take(), "nobody waits");
        let a = w.enter();
        let b = w.enter();
        assert!(w.take());
        // Both were woken by that signal: no second one until someone waits again.
        assert!(!w.take());
        w.leave(a);
        w.leave(b);
        assert_eq!(w.count, 0);
        let c = w.enter();
        assert!(w.take());
        w.leave(c);
        assert_eq!(w.count, 0);
    }

    #[test]
    fn a_waiter_that_times_out_stops_counting() {
        let mut w = Waiters::default();
        let a = w.enter();
        let b = w.enter();
        // `a` timed out before any signal.
        w.leave(a);
        assert_eq!(w.count, 1);
        assert!(w.take());
        w.leave(b);
        assert_eq!(w.count, 0);
        assert!(!w.take());
    }
}
