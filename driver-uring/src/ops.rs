//! Operations whose completions carry something the ring must hand over safely: the
//! descriptors of multishot accepts, and the buffers of vectored writes and zero-copy
//! sends.
//!
//! Both are submitted through [`Ring`] and taken back through [`Ring::reap`], which reads
//! each completion once from the kernel's queue: an accept's descriptor becomes an
//! [`OwnedFd`] there and nowhere else (so it has exactly one owner), and a write's
//! buffers, owned by the ring from submission on (its iovecs point into them), come back
//! only with the write's completion.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use bytes::{Bytes, BytesMut};
use io_uring::{cqueue, opcode, squeue, types};

use crate::Ring;

/// Most iovecs in one vectored write (`IOV_MAX` on Linux): chunks past them stay in the
/// write's buffers, unwritten, and come back with its completion.
pub const MAX_IOVECS: usize = 1024;

/// `IORING_SEND_ZC_REPORT_USAGE` (in the submission's `ioprio`): the notification of a
/// zero-copy send says whether the kernel copied the data after all.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`: set in a notification's result when the data was copied.
const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;

/// A write in flight: its chunks, and the iovecs (and for a zero-copy send, the message
/// header) the kernel reads, pointing into them.
struct InFlight {
    bufs: VecDeque<Bytes>,
    /// Boxed: the kernel reads this array (at submission, or later when the write waits
    /// for room), so its address holds while the write is in flight.
    _iov: Box<[libc::iovec]>,
    /// A zero-copy send's header, pointing at `_iov`; boxed for the same reason.
    msg: Option<Box<libc::msghdr>>,
}

/// What the ring tracks of accepts and writes in flight.
#[derive(Default)]
pub(crate) struct Ops {
    /// `user_data` of the multishot accepts that may still complete.
    accepts: HashSet<u64>,
    /// The writes in flight, by `user_data`.
    writes: HashMap<u64, InFlight>,
    /// Zero-copy sends that completed and whose pages the kernel may still read: their
    /// chunks (the same bytes as those given back) are kept until the notification.
    pinned: HashMap<u64, InFlight>,
    /// The reads in flight, by `user_data`: the buffers the kernel fills.
    reads: HashMap<u64, BytesMut>,
}

// SAFETY: the iovecs and the message header are plain addresses into the `Bytes` beside
// them (which are `Send`) and into each other; nothing ties them to a thread.
unsafe impl Send for InFlight {}

/// A completion of a multishot accept ([`Ring::accept_multi`]).
#[derive(Debug)]
pub struct Accepted {
    /// The accept's `user_data`.
    pub user_data: u64,
    /// The accepted connection (non-blocking, close-on-exec), or why the accept failed.
    pub result: io::Result<OwnedFd>,
    /// The accept stays armed (`IORING_CQE_F_MORE`); when not, the kernel ended it and it
    /// is to be submitted again if still wanted.
    pub more: bool,
}

/// The completion of a vectored write ([`Ring::writev`], [`Ring::send_zc`]).
pub struct Written {
    /// The write's `user_data`.
    pub user_data: u64,
    /// Bytes written, or the (negative) error number.
    pub result: i32,
    /// The chunks submitted, all of them, given back: written or not.
    pub bufs: VecDeque<Bytes>,
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The chunks by their lengths: their bytes say nothing here.
        f.debug_struct("Written")
            .field("user_data", &self.user_data)
            .field("result", &self.result)
            .field("chunks", &self.bufs.len())
            .field("len", &self.bufs.iter().map(Bytes::len).sum::<usize>())
            .finish()
    }
}

/// The completion of a read into a buffer of the caller's ([`Ring::recv_into`]).
#[derive(Debug)]
pub struct Received {
    /// The read's `user_data`.
    pub user_data: u64,
    /// Bytes read (0: the peer closed the stream), or the (negative) error number.
    pub result: i32,
    /// The buffer given, with the bytes read appended.
    pub buf: BytesMut,
}

/// Completions taken from the ring by [`Ring::reap`], sorted.
#[derive(Debug, Default)]
pub struct Reaped {
    /// Completions of multishot accepts submitted with [`Ring::accept_multi`].
    pub accepted: Vec<Accepted>,
    /// Completions of writes submitted with [`Ring::writev`] or [`Ring::send_zc`].
    pub written: Vec<Written>,
    /// The ends of zero-copy sends ([`Ring::send_zc`]), one for each, after its
    /// [`Written`]: the kernel is done with the chunks of the send under `user_data`, and
    /// says whether it copied them after all (`true`: as it does for a peer on this host,
    /// over loopback; `false` too for a send that failed without taking them).
    pub zero_copy_done: Vec<(u64, bool)>,
    /// Completions of reads submitted with [`Ring::recv_into`].
    pub received: Vec<Received>,
    /// Every other completion, as the kernel posted it.
    pub other: Vec<cqueue::Entry>,
}

impl Reaped {
    /// Whether nothing was reaped.
    pub fn is_empty(&self) -> bool {
        self.accepted.is_empty()
            && self.written.is_empty()
            && self.zero_copy_done.is_empty()
            && self.received.is_empty()
            && self.other.is_empty()
    }
}

impl Ring {
    /// Queue `entry`, handing what is queued to the kernel first when the queue is full.
    /// `false` if even that failed.
    ///
    /// # Safety
    ///
    /// Whatever memory `entry` points at stays valid and unmoved until its last completion.
    unsafe fn push_entry(&mut self, entry: &squeue::Entry) -> bool {
        loop {
            // SAFETY: the caller keeps `entry`'s memory valid (this function's contract).
            if unsafe { self.uring().submission().push(entry) }.is_ok() {
                return true;
            }
            // Full: hand the queued entries to the kernel (completions wait in its overflow
            // list if the completion queue is full too).
            if self.uring().submit().is_err() {
                return false;
            }
        }
    }

    /// Submit a multishot accept on the listening socket `fd`: each connection accepted
    /// comes out of [`reap`](Self::reap) as an [`Accepted`] under `user_data`, non-blocking
    /// and close-on-exec. The kernel may end it (a completion without `more`: an error, or
    /// its completion queue overflowed); cancel it with an `AsyncCancel` of `user_data`.
    /// Returns whether it was queued.
    pub fn accept_multi(&mut self, fd: RawFd, user_data: u64) -> bool {
        let flags = rustix::net::SocketFlags::NONBLOCK | rustix::net::SocketFlags::CLOEXEC;
        let entry = opcode::AcceptMulti::new(types::Fd(fd))
            .flags(flags.bits() as i32)
            .build()
            .user_data(user_data);
        // SAFETY: a multishot accept points at no memory (no peer address is asked for).
        let pushed = unsafe { self.push_entry(&entry) };
        if pushed {
            self.ops.accepts.insert(user_data);
        }
        pushed
    }

    /// Submit a vectored write of `bufs` (the first [`MAX_IOVECS`] of them) to `fd`, under
    /// `user_data`. The ring owns the chunks until the write completes, then gives them all
    /// back through [`reap`](Self::reap) as a [`Written`]. A write to a socket whose
    /// buffer is full waits in the kernel for room (cancel it with an `AsyncCancel` of
    /// `user_data`), or, where the kernel honours the socket's `O_NONBLOCK` there,
    /// completes at once with `-EAGAIN`. Err gives `bufs` back if the
    /// write could not be queued (or `user_data` names a write in flight).
    pub fn writev(
        &mut self,
        fd: RawFd,
        user_data: u64,
        bufs: VecDeque<Bytes>,
    ) -> Result<(), VecDeque<Bytes>> {
        self.submit_write(fd, user_data, bufs, false)
    }

    /// Submit `bufs` (the first [`MAX_IOVECS`] of them) to the socket `fd` as a zero-copy
    /// send (`IORING_OP_SENDMSG_ZC`; check [`has_send_zc`](Self::has_send_zc) first): the
    /// kernel sends from the chunks' own pages rather than copying them into the socket's
    /// buffer. It completes as [`writev`](Self::writev) does (a [`Written`] under
    /// `user_data`, with the chunks given back), and later, once the kernel no longer reads
    /// the pages, `user_data` comes in [`Reaped::zero_copy_done`] with whether the kernel
    /// copied after all; the ring keeps the chunks alive until then. Only sockets that support it (TCP, UDP) take it;
    /// others complete with an error (`-EOPNOTSUPP`).
    pub fn send_zc(
        &mut self,
        fd: RawFd,
        user_data: u64,
        bufs: VecDeque<Bytes>,
    ) -> Result<(), VecDeque<Bytes>> {
        self.submit_write(fd, user_data, bufs, true)
    }

    fn submit_write(
        &mut self,
        fd: RawFd,
        user_data: u64,
        bufs: VecDeque<Bytes>,
        zero_copy: bool,
    ) -> Result<(), VecDeque<Bytes>> {
        if self.ops.writes.contains_key(&user_data)
            || self.ops.pinned.contains_key(&user_data)
            || self.ops.reads.contains_key(&user_data)
        {
            return Err(bufs);
        }
        let iov: Box<[libc::iovec]> = (bufs.iter().take(MAX_IOVECS))
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        let count = u32::try_from(iov.len()).unwrap_or(0);
        let (entry, msg) = if zero_copy {
            // SAFETY: `msghdr` is a plain C struct for which all zeroes is a valid value
            // (no name, no control data, no flags).
            let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
            msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = iov.len() as _;
            let entry = opcode::SendMsgZc::new(types::Fd(fd), &*msg)
                .ioprio(SEND_ZC_REPORT_USAGE)
                .build()
                .user_data(user_data);
            (entry, Some(msg))
        } else {
            let entry = opcode::Writev::new(types::Fd(fd), iov.as_ptr(), count)
                .build()
                .user_data(user_data);
            (entry, None)
        };
        // SAFETY: the entry points at `iov` (or at `msg`, which points at `iov`), boxes
        // kept (unmoved: only the boxes move) in `self.ops.writes` until the write's
        // completion is reaped, and for a zero-copy send then in `self.ops.pinned` until
        // its notification; each iovec points into a chunk of `bufs`, kept there as long,
        // and a `Bytes`' data does not move when the handle does. If the ring goes first,
        // `Drop for Ring` leaks them.
        let pushed = unsafe { self.push_entry(&entry) };
        if !pushed {
            return Err(bufs);
        }
        self.ops.writes.insert(
            user_data,
            InFlight {
                bufs,
                _iov: iov,
                msg,
            },
        );
        Ok(())
    }

    /// Submit a read from the socket `fd` into the spare capacity of `buf` (the caller
    /// reserves it), under `user_data`: the ring owns the buffer until the read completes,
    /// then gives it back through [`reap`](Self::reap) as a [`Received`], with the bytes
    /// read appended. A read of a socket with nothing to read waits in the kernel (cancel
    /// it with an `AsyncCancel` of `user_data`). Err gives `buf` back if the read could not
    /// be queued, `buf` has no spare capacity, or `user_data` names an operation in flight.
    pub fn recv_into(
        &mut self,
        fd: RawFd,
        user_data: u64,
        mut buf: BytesMut,
    ) -> Result<(), BytesMut> {
        let room = buf.capacity() - buf.len();
        if room == 0
            || self.ops.reads.contains_key(&user_data)
            || self.ops.writes.contains_key(&user_data)
        {
            return Err(buf);
        }
        let spare = buf.spare_capacity_mut();
        let entry = opcode::Recv::new(
            types::Fd(fd),
            spare.as_mut_ptr().cast::<u8>(),
            u32::try_from(room).unwrap_or(u32::MAX),
        )
        .build()
        .user_data(user_data);
        // SAFETY: the entry points at `buf`'s spare capacity, `room` bytes of the buffer's
        // heap allocation, which stays where it is (only the `BytesMut` handle moves) and
        // is touched by nothing else while the buffer is kept in `self.ops.reads` until
        // the read's completion is reaped. If the ring goes first, `Drop for Ring` leaks it.
        let pushed = unsafe { self.push_entry(&entry) };
        if !pushed {
            return Err(buf);
        }
        self.ops.reads.insert(user_data, buf);
        Ok(())
    }

    /// Writes in flight: not yet completed, or zero-copy sends not yet notified.
    pub fn writes_in_flight(&self) -> usize {
        self.ops.writes.len() + self.ops.pinned.len()
    }

    /// Take every completion posted, sorted into `out` (appended to): accepts and writes
    /// submitted through this ring, and the rest.
    pub fn reap(&mut self, out: &mut Reaped) {
        let Ring { ring, ops, .. } = self;
        for c in ring.completion() {
            let data = c.user_data();
            let more = cqueue::more(c.flags());
            if ops.accepts.contains(&data) {
                if !more {
                    ops.accepts.remove(&data);
                }
                let result = if c.result() >= 0 {
                    // SAFETY: a successful accept's result is a descriptor the kernel just
                    // installed for this process, which nothing else owns: each completion
                    // is read from the queue once, here, and `accepts` holds only the
                    // `user_data` of accepts this ring submitted.
                    Ok(unsafe { OwnedFd::from_raw_fd(c.result()) })
                } else {
                    Err(io::Error::from_raw_os_error(-c.result()))
                };
                out.accepted.push(Accepted {
                    user_data: data,
                    result,
                    more,
                });
            } else if let Some(mut buf) = ops.reads.remove(&data) {
                if c.result() > 0 {
                    let n = (c.result() as usize).min(buf.capacity() - buf.len());
                    // SAFETY: the kernel wrote `n` bytes at the start of the spare capacity
                    // this read was given (`recv_into`), and `n` is within it.
                    unsafe { buf.set_len(buf.len() + n) };
                }
                out.received.push(Received {
                    user_data: data,
                    result: c.result(),
                    buf,
                });
            } else if cqueue::notif(c.flags()) {
                if ops.pinned.remove(&data).is_some() {
                    let copied = c.result() as u32 & NOTIF_USAGE_ZC_COPIED != 0;
                    out.zero_copy_done.push((data, copied));
                }
            } else if let Some(mut done) = ops.writes.remove(&data) {
                let bufs = if done.msg.is_some() && more {
                    // A notification follows: until it comes the kernel may read the
                    // pages, so the ring keeps the chunks (the same bytes, shared).
                    let given = done.bufs.iter().cloned().collect();
                    ops.pinned.insert(data, done);
                    given
                } else {
                    if done.msg.is_some() {
                        // No notification follows (the send failed before it took the
                        // pages): the kernel is done with them already.
                        out.zero_copy_done.push((data, false));
                    }
                    std::mem::take(&mut done.bufs)
                };
                out.written.push(Written {
                    user_data: data,
                    result: c.result(),
                    bufs,
                });
            } else {
                out.other.push(c);
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Writes still in flight may be read by the kernel while the ring winds down after
        // its descriptor is closed: their chunks and iovecs are leaked rather than freed
        // under it.
        for (_, w) in self.ops.writes.drain().chain(self.ops.pinned.drain()) {
            std::mem::forget(w);
        }
        for (_, buf) in self.ops.reads.drain() {
            std::mem::forget(buf);
        }
    }
}
