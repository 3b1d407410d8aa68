//! Threads waiting on a condition variable, counted: the signalling rule of the driver's
//! hand-off between application threads and the I/O thread. Kept free of everything else
//! (it is pure bookkeeping under the state's lock), so that the concurrency model in
//! `loom-model/` checks this very code under every interleaving it explores.

/// The threads waiting on a condition variable, counted so that it is signalled only
/// when someone waits, and once per wait: a signal wakes every thread then waiting, which
/// no longer count (a new generation begins).
#[derive(Default)]
pub struct Waiters {
    count: usize,
    generation: u64,
}

impl Waiters {
    /// A thread starts waiting: returns the generation to hand to `leave`.
    pub fn enter(&mut self) -> u64 {
        self.count += 1;
        self.generation
    }

    /// A thread woke up: it still counted if no signal came (a timeout, a spurious wake).
    pub fn leave(&mut self, generation: u64) {
        if self.generation == generation {
            self.count -= 1;
        }
    }

    /// Whether some thread waits.
    pub fn waiting(&self) -> bool {
        self.count > 0
    }

    /// Whether to signal: someone waits. They are then woken, and no longer count.
    pub fn take(&mut self) -> bool {
        if self.count == 0 {
            return false;
        }
        self.count = 0;
        self.generation += 1;
        true
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
