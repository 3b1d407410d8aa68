//! The hand-off models (see the crate documentation). Each `loom::model` explores every
//! interleaving of its threads; a lost wake-up shows as loom's deadlock report, a wrong
//! count as a failed assertion.

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use zmtp_loom_model::Waiters;

/// A socket's state under the context's lock, as far as a receive is concerned.
#[derive(Default)]
struct Sock {
    waiters: Waiters,
    /// Messages queued for the application.
    queued: usize,
    /// A thread waits in the kernel on the socket's streams (`Sock::fd_waiting`).
    fd_waiting: bool,
}

/// The context: its lock, and the socket's condition variable.
#[derive(Default)]
struct Shared {
    state: Mutex<Sock>,
    cond: Condvar,
}

/// An I/O thread delivering `n` messages.
fn spawn_io(shared: &Arc<Shared>, n: usize) -> thread::JoinHandle<()> {
    let shared = shared.clone();
    thread::spawn(move || {
        for _ in 0..n {
            shared.deliver();
        }
    })
}

impl Shared {
    /// The I/O thread queues a message and signals, as `Notify::touch` then
    /// `Notify::signal`: the decision under the lock, the signal after it.
    fn deliver(&self) -> bool {
        let signal = {
            let mut s = self.state.lock().unwrap();
            s.queued += 1;
            s.waiters.take()
        };
        if signal {
            self.cond.notify_all();
        }
        signal
    }

    /// At the end: every message taken, and nobody counted as waiting.
    fn check_quiet(&self) {
        let mut s = self.state.lock().unwrap();
        assert_eq!(s.queued, 0);
        assert!(
            !s.waiters.take(),
            "nobody waits, yet the count says someone does"
        );
    }

    /// A receive, as `Socket::recv` with no timeout: take a message, or wait for one
    /// signal (`Shared::wait_for`) and look again.
    fn recv(&self) {
        let mut s = self.state.lock().unwrap();
        loop {
            if s.queued > 0 {
                s.queued -= 1;
                return;
            }
            let generation = s.waiters.enter();
            s = self.cond.wait(s).unwrap();
            s.waiters.leave(generation);
        }
    }
}

#[test]
fn a_receive_is_woken_by_the_message_that_comes_while_it_waits() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        let io = spawn_io(&shared, 1);
        shared.recv();
        io.join().unwrap();
        shared.check_quiet();
    });
}

#[test]
fn two_receivers_and_two_messages_each_get_one() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        let other = {
            let shared = shared.clone();
            thread::spawn(move || shared.recv())
        };
        let io = spawn_io(&shared, 2);
        shared.recv();
        other.join().unwrap();
        io.join().unwrap();
        shared.check_quiet();
    });
}

#[test]
fn a_wait_that_times_out_leaves_the_count_right() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        // A receive with a timeout that runs out before any signal: it entered and leaves
        // without having been woken (`leave` with its own generation), possibly while the
        // I/O thread signals.
        let timed_out = {
            let shared = shared.clone();
            thread::spawn(move || {
                let generation = shared.state.lock().unwrap().waiters.enter();
                let mut s = shared.state.lock().unwrap();
                s.waiters.leave(generation);
            })
        };
        let io = spawn_io(&shared, 1);
        timed_out.join().unwrap();
        io.join().unwrap();
        // Nobody waits now: the count says so, whatever the order was (a count left at one
        // would signal nobody; one that went below zero would have panicked).
        assert!(!shared.state.lock().unwrap().waiters.take());
        // And the next receive is still woken by the next message.
        let io = spawn_io(&shared, 1);
        shared.recv();
        shared.recv();
        io.join().unwrap();
        shared.check_quiet();
    });
}

/// The kernel side of a receive that waits on its streams: the stream's input and the
/// socket's event counter (the driver's eventfd), with `poll` as a wait on their change.
#[derive(Default)]
struct Kernel {
    state: Mutex<KernelState>,
    changed: Condvar,
}

#[derive(Default)]
struct KernelState {
    /// Bytes in the stream's receive buffer.
    stream: usize,
    /// The eventfd's counter.
    counter: u64,
}

impl Kernel {
    fn arrive(&self) {
        self.state.lock().unwrap().stream += 1;
        self.changed.notify_all();
    }

    fn write_counter(&self) {
        self.state.lock().unwrap().counter += 1;
        self.changed.notify_all();
    }

    /// `poll` on the stream and the counter: returns once either has something, reading
    /// the counter if it was set and taking the stream's input.
    fn poll_and_read(&self) -> usize {
        let mut k = self.state.lock().unwrap();
        while k.stream == 0 && k.counter == 0 {
            k = self.changed.wait(k).unwrap();
        }
        k.counter = 0;
        std::mem::take(&mut k.stream)
    }
}

#[test]
fn a_receive_waiting_on_its_streams_is_woken_by_input_or_by_a_signal() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        let kernel = Arc::new(Kernel::default());
        // Whether the message comes as input on the silenced stream (read by the waiting
        // thread itself) or from the I/O thread (which queued it from elsewhere and
        // signals through the counter): both are explored.
        let through_io = AtomicBool::new(false);
        let through_io = Arc::new(through_io);
        let sender = {
            let (shared, kernel, through_io) = (shared.clone(), kernel.clone(), through_io.clone());
            thread::spawn(move || {
                if through_io.load(Ordering::SeqCst) {
                    // `Sock::signal` with `fd_waiting`: the counter is written after the
                    // lock is released, as `Signal::send` does.
                    let write = {
                        let mut s = shared.state.lock().unwrap();
                        s.queued += 1;
                        s.waiters.take() && s.fd_waiting
                    };
                    if write {
                        kernel.write_counter();
                    }
                } else {
                    kernel.arrive();
                }
            })
        };
        let chooser = {
            let through_io = through_io.clone();
            thread::spawn(move || through_io.store(true, Ordering::SeqCst))
        };
        // The receiving thread, as `Shared::wait_on_streams` inside `recv`'s loop.
        loop {
            let generation = {
                let mut s = shared.state.lock().unwrap();
                if s.queued > 0 {
                    s.queued -= 1;
                    break;
                }
                s.fd_waiting = true;
                s.waiters.enter()
            };
            let read = kernel.poll_and_read();
            let mut s = shared.state.lock().unwrap();
            s.waiters.leave(generation);
            s.fd_waiting = false;
            // What it read from the stream becomes a message at once.
            s.queued += read;
        }
        sender.join().unwrap();
        chooser.join().unwrap();
    });
}

/// A stream's read claim (`PeerIo::read_queued`, `PeerIo::read_edge`) and the work queue,
/// with the kernel's receive buffer.
#[derive(Default)]
struct Stream {
    read_queued: bool,
    read_edge: bool,
    /// Read work items queued for the I/O thread's worker.
    work: usize,
    /// The producer of input is done.
    done: bool,
    /// Bytes handed to the state machine.
    taken: usize,
}

#[derive(Default)]
struct Reads {
    state: Mutex<Stream>,
    work_cond: Condvar,
    /// The kernel's receive buffer.
    kernel: Mutex<usize>,
}

/// The read buffer's size in the model: a read takes at most this much, so a read that
/// fills it may have left more behind.
const BUF: usize = 1;

impl Reads {
    /// A readable edge reaches the I/O thread (`Shared::ready`): note it, and queue a
    /// read unless one is queued or running (`work::queue`).
    fn edge(&self) {
        let mut s = self.state.lock().unwrap();
        s.read_edge = true;
        if !s.read_queued {
            s.read_queued = true;
            s.work += 1;
            self.work_cond.notify_all();
        }
    }

    /// Run a claimed read: `prepare` (the edge is consumed), the read without the lock,
    /// then `apply`'s rule. Returns whether the read goes on (queued again).
    fn run_read(&self) -> bool {
        self.state.lock().unwrap().read_edge = false;
        let n = {
            let mut k = self.kernel.lock().unwrap();
            let n = (*k).min(BUF);
            *k -= n;
            n
        };
        let mut s = self.state.lock().unwrap();
        s.taken += n;
        // A short read (or none: would block) with no edge since it began ends the claim;
        // otherwise the read goes again.
        if n < BUF && !s.read_edge {
            s.read_queued = false;
            false
        } else {
            true
        }
    }

    /// The I/O thread's worker: run queued reads until input is over and nothing is
    /// queued.
    fn worker(&self) {
        loop {
            {
                let mut s = self.state.lock().unwrap();
                while s.work == 0 && !s.done {
                    s = self.work_cond.wait(s).unwrap();
                }
                if s.work == 0 {
                    return;
                }
                s.work -= 1;
            }
            while self.run_read() {}
        }
    }

    /// An application thread about to sleep reads the stream itself if no one reads it
    /// (`Shared::read_here`: the claim, then the same read).
    fn read_here(&self) {
        {
            let mut s = self.state.lock().unwrap();
            if s.read_queued {
                return;
            }
            s.read_queued = true;
        }
        if self.run_read() {
            // More may be there: left to the I/O thread (queued), as `read_claimed_on`
            // does after its own few reads.
            let mut s = self.state.lock().unwrap();
            s.work += 1;
            self.work_cond.notify_all();
        }
    }
}

/// The explored interleavings of the read model: up to this many preemptions (forced
/// switches away from a thread that could go on) per execution. Two arrivals, a worker
/// and an application thread make a large space; 3 preemptions cover every case of an
/// arrival during a read (the bugs of this kind need one or two) in well under a minute.
const READ_PREEMPTIONS: usize = 3;

#[test]
fn input_that_arrives_during_a_read_is_never_left_unread() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(READ_PREEMPTIONS);
    builder.check(|| {
        let reads = Arc::new(Reads::default());
        let worker = {
            let reads = reads.clone();
            thread::spawn(move || reads.worker())
        };
        let app = {
            let reads = reads.clone();
            thread::spawn(move || reads.read_here())
        };
        // The network: two arrivals, each raising an edge (edge-triggered readiness).
        for _ in 0..2 {
            *reads.kernel.lock().unwrap() += 1;
            reads.edge();
        }
        app.join().unwrap();
        {
            let mut s = reads.state.lock().unwrap();
            s.done = true;
            reads.work_cond.notify_all();
        }
        worker.join().unwrap();
        // Everything that arrived was read: nothing is left in the kernel with no read
        // claimed and no edge to come.
        assert_eq!(*reads.kernel.lock().unwrap(), 0, "input left unread");
        assert_eq!(reads.state.lock().unwrap().taken, 2);
    });
}
