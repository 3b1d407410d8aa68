//! A thread's own small ring, to wait for a stream's input and read it in one system call.
//!
//! A thread blocked in a receive on a socket with one peer would otherwise wait for the
//! stream to be readable (`poll(2)`) and then read it: two system calls per message,
//! where a program on plain sockets makes one (a blocking `recv`). Here the thread
//! submits the read itself and, beside it, a poll of an event counter that other threads
//! write to wake it; one `io_uring_enter` submits both and waits for the first to
//! complete. The poll stays armed from one wait to the next while it does not fire, so
//! that a wait on the same counter submits the read alone.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use crate::Unavailable;

/// `user_data` of the read.
const READ: u64 = 1;
/// `user_data` of a cancellation (its own completion says nothing of interest).
const CANCEL: u64 = 2;
/// `user_data` of a poll of the event counter: this bit, and the poll's number below it
/// (a cancelled poll's completion may come during a later wait, under an older number).
const POLL: u64 = 1 << 63;

/// How a [`RecvWaiter::wait`] ended.
#[derive(Debug)]
pub struct Waited {
    /// What the read returned, if it completed: bytes read (0 at the stream's end), or the
    /// error. `None` if it was cancelled before it took anything.
    pub received: Option<io::Result<usize>>,
    /// The event counter became readable (the caller reads it to reset it).
    pub woken: bool,
}

/// A thread's own ring for [waiting on a stream and reading it](Self::wait).
pub struct RecvWaiter {
    ring: IoUring,
    /// The event counter a poll is armed on, kept open while it is, and that poll's
    /// number.
    armed: Option<(Arc<OwnedFd>, u64)>,
    /// Polls submitted so far.
    polls: u64,
}

impl RecvWaiter {
    /// A new ring for one thread, or why there can be none.
    pub fn new() -> Result<RecvWaiter, Unavailable> {
        let (ring, _) = crate::ring::setup(8)?;
        Ok(RecvWaiter {
            ring,
            armed: None,
            polls: 0,
        })
    }

    /// Wait until the stream `fd` has input, which is then read into `buf`, or the event
    /// counter `wake` is readable, or `timeout` passes (`None`: no limit), whichever comes
    /// first, in one system call when the stream's input comes first.
    ///
    /// The read is over when this returns: if it did not complete (woken, timed out or
    /// interrupted), it is cancelled, and what it read if it completed meanwhile is
    /// reported all the same. An interrupted wait returns with nothing received and not
    /// woken, as a timeout does.
    pub fn wait(
        &mut self,
        fd: BorrowedFd<'_>,
        buf: &mut [u8],
        wake: &Arc<OwnedFd>,
        timeout: Option<Duration>,
    ) -> Waited {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut waited = Waited {
            received: None,
            woken: false,
        };
        // A poll armed on another counter is cancelled (its completion, under its own
        // number, is passed over whenever it comes).
        if let Some((counter, number)) = self.armed.take() {
            if Arc::ptr_eq(&counter, wake) {
                self.armed = Some((counter, number));
            } else {
                let cancel = opcode::AsyncCancel::new(POLL | number)
                    .build()
                    .user_data(CANCEL);
                self.push(&cancel);
            }
        }
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let read = opcode::Recv::new(types::Fd(fd.as_raw_fd()), buf.as_mut_ptr(), len)
            .build()
            .user_data(READ);
        self.push(&read);
        if self.armed.is_none() {
            self.polls += 1;
            let number = self.polls & !POLL;
            let poll = opcode::PollAdd::new(types::Fd(wake.as_raw_fd()), libc::POLLIN as u32)
                .build()
                .user_data(POLL | number);
            self.push(&poll);
            self.armed = Some((wake.clone(), number));
        }
        // Submit, then wait until the read or the poll completes, or the deadline.
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let entered = match left {
                Some(left) if left.is_zero() => self.ring.submit(),
                Some(left) => {
                    let ts = types::Timespec::from(left);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    self.ring.submitter().submit_with_args(1, &args)
                }
                None => self.ring.submit_and_wait(1),
            };
            self.reap(&mut waited);
            if waited.received.is_some() || waited.woken {
                break;
            }
            let timed_out =
                left.is_some_and(|l| l.is_zero()) || deadline.is_some_and(|d| Instant::now() >= d);
            // An interrupted wait (or any failure to wait) ends it as a timeout does.
            if timed_out || entered.is_err() {
                break;
            }
        }
        if waited.received.is_none() {
            self.cancel_read(&mut waited);
        }
        waited
    }

    /// Take every completion posted: the read's result, and whether the current poll
    /// fired.
    fn reap(&mut self, waited: &mut Waited) {
        for c in self.ring.completion() {
            match c.user_data() {
                READ => {
                    let r = c.result();
                    waited.received = Some(if r >= 0 {
                        Ok(r as usize)
                    } else {
                        Err(io::Error::from_raw_os_error(-r))
                    });
                }
                data if data & POLL != 0 => {
                    let current = self
                        .armed
                        .as_ref()
                        .is_some_and(|(_, number)| POLL | number == data);
                    if current {
                        self.armed = None;
                        // A cancelled poll (this one is never cancelled while armed)
                        // or one that fired: either way the counter is to be looked at.
                        waited.woken = true;
                    }
                }
                _ => {}
            }
        }
    }

    /// Cancel the read and wait for its completion: the kernel must be done with the
    /// caller's buffer before [`wait`](Self::wait) returns. It may have completed
    /// meanwhile, with input: then that is reported.
    fn cancel_read(&mut self, waited: &mut Waited) {
        let cancel = opcode::AsyncCancel::new(READ).build().user_data(CANCEL);
        self.push(&cancel);
        while waited.received.is_none() {
            if let Err(e) = self.ring.submit_and_wait(1) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // The kernel would keep a read of the caller's buffer in flight past
                    // this call: nothing sound is left to do.
                    std::process::abort();
                }
            }
            self.reap(waited);
        }
        if let Some(Err(e)) = &waited.received {
            if e.raw_os_error() == Some(rustix::io::Errno::CANCELED.raw_os_error()) {
                waited.received = None;
            }
        }
    }

    /// Queue `entry`, handing the queue to the kernel first if it is full.
    fn push(&mut self, entry: &io_uring::squeue::Entry) {
        loop {
            // SAFETY: the entries queued here point at nothing (a cancellation, a poll) or
            // at the buffer the caller of `wait` lends for the call, which `wait` does not
            // return before the read's completion is reaped (`cancel_read`).
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return;
            }
            if self.ring.submit().is_err() {
                // Cannot happen with at most four entries queued per wait in a ring of
                // eight; should it, nothing sound is left to do with the read queued.
                std::process::abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    use super::*;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    fn counter() -> Arc<OwnedFd> {
        let flags = rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK;
        Arc::new(rustix::event::eventfd(0, flags).unwrap())
    }

    #[test]
    fn input_already_there_is_read_and_input_that_comes_later_too() {
        let mut w = RecvWaiter::new().unwrap();
        let (mut a, b) = pair();
        let wake = counter();
        let mut buf = [0u8; 64];
        a.write_all(b"first").unwrap();
        let got = w.wait(b.as_fd(), &mut buf, &wake, Some(Duration::from_secs(5)));
        assert!(!got.woken);
        assert_eq!(got.received.unwrap().unwrap(), 5);
        assert_eq!(&buf[..5], b"first");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            a.write_all(b"second!").unwrap();
            a
        });
        let got = w.wait(b.as_fd(), &mut buf, &wake, None);
        assert_eq!(got.received.unwrap().unwrap(), 7);
        assert_eq!(&buf[..7], b"second!");
        // The stream's end reads as 0.
        drop(writer.join().unwrap());
        let got = w.wait(b.as_fd(), &mut buf, &wake, Some(Duration::from_secs(5)));
        assert_eq!(got.received.unwrap().unwrap(), 0);
    }

    #[test]
    fn a_wake_or_a_timeout_ends_the_wait_with_the_read_cancelled() {
        let mut w = RecvWaiter::new().unwrap();
        let (mut a, b) = pair();
        let wake = counter();
        let mut buf = [0u8; 64];
        let start = Instant::now();
        let got = w.wait(b.as_fd(), &mut buf, &wake, Some(Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(got.received.is_none() && !got.woken);
        // Woken from another thread: the poll armed by the first wait serves this one.
        let waker = wake.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            rustix::io::write(&*waker, &1u64.to_ne_bytes()).unwrap();
        });
        let got = w.wait(b.as_fd(), &mut buf, &wake, None);
        t.join().unwrap();
        assert!(got.woken);
        assert!(got.received.is_none());
        rustix::io::read(&*wake, &mut [0u8; 8]).unwrap();
        // The cancelled reads took nothing: what comes next is read whole, in order.
        a.write_all(b"after").unwrap();
        let got = w.wait(b.as_fd(), &mut buf, &wake, Some(Duration::from_secs(5)));
        assert_eq!(got.received.unwrap().unwrap(), 5);
        assert_eq!(&buf[..5], b"after");
        assert!(!got.woken);
    }

    #[test]
    fn a_wait_on_another_counter_is_not_woken_by_the_first() {
        let mut w = RecvWaiter::new().unwrap();
        let (_a, b) = pair();
        let (one, two) = (counter(), counter());
        let mut buf = [0u8; 16];
        let got = w.wait(b.as_fd(), &mut buf, &one, Some(Duration::from_millis(5)));
        assert!(!got.woken);
        // `one`'s poll is cancelled: writing it does not wake a wait on `two`.
        rustix::io::write(&*one, &1u64.to_ne_bytes()).unwrap();
        let got = w.wait(b.as_fd(), &mut buf, &two, Some(Duration::from_millis(30)));
        assert!(!got.woken && got.received.is_none());
        rustix::io::write(&*two, &1u64.to_ne_bytes()).unwrap();
        let got = w.wait(b.as_fd(), &mut buf, &two, Some(Duration::from_secs(5)));
        assert!(got.woken);
    }
}
