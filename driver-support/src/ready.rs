//! Messages a driver's `recv` took from the socket in a batch and hands out one per call,
//! so that a receiver calling `recv` per message takes the socket's lock (and pays for the
//! socket's bookkeeping) once per batch, as `recv_many` does. The batch is as long as the
//! core allows (`Socket::recv_batch_len`: plain fair-queuing types only, a quarter of
//! RCVHWM at most), so that taking it changes nothing `recv` would give.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use zmtp_proto::socket::Message;

/// The batch: its own small lock, never taken while the socket's is held (the socket's
/// lock is taken inside this one, to refill it). Shared by the socket's handle and its
/// state, so that whoever waits to receive sees what is left in it.
#[derive(Debug, Default)]
pub struct Ready {
    /// In the order `recv` gives them.
    msgs: Mutex<VecDeque<Message>>,
    /// How many are left, readable without the lock (for `can_recv`, `poll` and waking
    /// waiters while the socket's lock is held).
    left: AtomicUsize,
}

impl Ready {
    /// Whether no message is left (a glance: another thread may be changing it).
    pub fn is_empty(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }

    /// The next message: the batch's next, or, with none left, the first of a new batch
    /// that `refill` appends (in the order `recv` gives them) to the empty list it is
    /// given; `more` is called when a new batch leaves messages after the first (others
    /// waiting to receive may take them).
    #[inline(always)]
    pub fn next(
        &self,
        refill: impl FnOnce(&mut Vec<Message>),
        more: impl FnOnce(),
    ) -> Option<Message> {
        let mut msgs = self.msgs.lock().unwrap_or_else(|e| e.into_inner());
        if msgs.is_empty() {
            Self::refill(&mut msgs, refill);
            if msgs.len() > 1 {
                more();
            }
        }
        let msg = msgs.pop_front();
        self.left.store(msgs.len(), Ordering::Release);
        msg
    }

    /// Refill the emptied list, reusing its buffer (a `Vec` and a `VecDeque` starting at
    /// the front of their buffer convert into each other without a copy).
    #[cold]
    fn refill(msgs: &mut VecDeque<Message>, refill: impl FnOnce(&mut Vec<Message>)) {
        let mut list = Vec::from(std::mem::take(msgs));
        list.clear();
        refill(&mut list);
        *msgs = VecDeque::from(list);
    }

    /// Move up to `max` of the messages left to `out`, in order; returns how many.
    pub fn drain_into(&self, out: &mut Vec<Message>, max: usize) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut msgs = self.msgs.lock().unwrap_or_else(|e| e.into_inner());
        let n = max.min(msgs.len());
        out.extend(msgs.drain(..n));
        self.left.store(msgs.len(), Ordering::Release);
        n
    }
}
