//! A provided-buffer ring: buffers the kernel fills for multishot receives, lent out as
//! [`Bytes`] and returned to the ring when the last reference goes.

use std::alloc::{self, Layout};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use io_uring::types::BufRingEntry;

use crate::{Ring, Wake};

/// The buffers' memory: written by the kernel while a buffer is in the ring, read through
/// [`Lent`] while it is lent out, never both at once. Freed when the ring and every lent
/// buffer are gone.
struct Slab {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the slab is plain memory with no thread affinity; who may touch which buffer
// when is governed by the ring protocol (see `Lent`), not by the thread.
unsafe impl Send for Slab {}
// SAFETY: as above; shared references only read buffers that are lent out, which neither
// the kernel nor any other code writes until they come back.
unsafe impl Sync for Slab {}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: allocated in `BufRing::new` with this very layout, and freed only here,
        // once: the last `Arc<Slab>` is gone, so no `Lent` reads it and the ring (which
        // holds one too while registered) no longer hands it to the kernel.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Buffers given back by dropped [`Lent`]s, for [`BufRing::recycle`], and who to wake when
/// one comes back while the ring is starving.
#[derive(Default)]
struct Returns {
    list: Mutex<Vec<u16>>,
    /// A receive ran out of buffers ([`BufRing::starving`]): the next return wakes.
    starving: AtomicBool,
    wake: OnceLock<Arc<Wake>>,
}

type Returned = Arc<Returns>;

/// One received buffer, lent out: the owner behind a [`Bytes`] from [`BufRing::take`].
/// Dropping it (with the last `Bytes` that shares it) gives the buffer back.
pub struct Lent {
    slab: Arc<Slab>,
    returned: Returned,
    offset: usize,
    len: usize,
    bid: u16,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `offset + len` lies within the slab (checked in `take`), which is alive
        // while `self.slab` is. The kernel wrote these bytes before posting the completion
        // that named this buffer and took the buffer out of the ring; it writes the
        // buffer again only once it is back in the ring, which happens after this `Lent`
        // is dropped (see `Drop` and `BufRing::recycle`). `take` lends each buffer once.
        unsafe { std::slice::from_raw_parts(self.slab.ptr.add(self.offset), self.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.returned
            .list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.bid);
        if self.returned.starving.swap(false, Ordering::AcqRel) {
            if let Some(wake) = self.returned.wake.get() {
                wake.wake();
            }
        }
    }
}

/// A provided-buffer ring of `count` buffers of `size` bytes, registered with a [`Ring`]
/// under a buffer group id.
pub struct BufRing {
    /// The ring of entries the kernel reads: page-aligned, `count` entries.
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    slab: Arc<Slab>,
    returned: Returned,
    /// Whether each buffer is lent out now.
    lent: Vec<bool>,
    size: usize,
    count: u16,
    /// Our producer position: entries up to it are published.
    tail: u16,
    group: u16,
    registered: bool,
}

// SAFETY: the entry ring is memory this value owns alone (besides the kernel, which only
// reads it); nothing ties it to a thread.
unsafe impl Send for BufRing {}

impl BufRing {
    /// Register `count` buffers (a power of two, at most 32768) of `size` bytes each with
    /// `ring` as buffer group `group`, all of them given to the kernel.
    pub fn new(ring: &Ring, group: u16, count: u16, size: usize) -> io::Result<BufRing> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        if !count.is_power_of_two() || count > 32768 {
            return Err(invalid("buffer count: a power of two, at most 32768"));
        }
        if size == 0 || size > u32::MAX as usize {
            return Err(invalid("buffer size"));
        }
        let page = rustix::param::page_size();
        let entries_layout = Layout::from_size_align(
            usize::from(count) * std::mem::size_of::<BufRingEntry>(),
            page,
        )
        .map_err(|_| invalid("entry ring layout"))?;
        let slab_len = usize::from(count)
            .checked_mul(size)
            .ok_or_else(|| invalid("buffers too large"))?;
        let slab_layout =
            Layout::from_size_align(slab_len, 64).map_err(|_| invalid("buffer layout"))?;
        // SAFETY: both layouts have a non-zero size (count >= 1, size >= 1); a null result
        // is handled as an allocation failure.
        let (entries, slab_ptr) = unsafe {
            (
                alloc::alloc_zeroed(entries_layout).cast::<BufRingEntry>(),
                alloc::alloc(slab_layout),
            )
        };
        if entries.is_null() || slab_ptr.is_null() {
            // SAFETY: each pointer freed here was allocated just above with its layout.
            unsafe {
                if !entries.is_null() {
                    alloc::dealloc(entries.cast(), entries_layout);
                }
                if !slab_ptr.is_null() {
                    alloc::dealloc(slab_ptr, slab_layout);
                }
            }
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut this = BufRing {
            entries,
            entries_layout,
            slab: Arc::new(Slab {
                ptr: slab_ptr,
                layout: slab_layout,
            }),
            returned: Arc::new(Returns::default()),
            lent: vec![false; usize::from(count)],
            size,
            count,
            tail: 0,
            group,
            registered: false,
        };
        // SAFETY: the entry ring is `count` entries of page-aligned memory that stays
        // allocated until it is unregistered (`release`) or leaked (`Drop`), never freed
        // while registered.
        unsafe {
            ring.uring_ref().submitter().register_buf_ring_with_flags(
                entries as u64,
                count,
                group,
                0,
            )?;
        }
        this.registered = true;
        for bid in 0..count {
            this.push(bid);
        }
        this.publish();
        Ok(this)
    }

    /// The buffer group id to name in receives.
    pub fn group(&self) -> u16 {
        self.group
    }

    /// The size of each buffer: the most one completion delivers.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Wake `wake` when a buffer comes back while the ring is [`starving`](Self::starving):
    /// the thread that recycles buffers may be waiting, with a receive stopped for want of
    /// them, while the last ones are dropped on other threads.
    pub fn wake_on_return(&self, wake: Arc<Wake>) {
        let _ = self.returned.wake.set(wake);
    }

    /// A receive ran out of buffers: the next buffer given back wakes the
    /// [`wake_on_return`](Self::wake_on_return) thread (once).
    pub fn starving(&self) {
        self.returned.starving.store(true, Ordering::Release);
        // Buffers returned before the flag was seen are in the list: no wake needed.
    }

    /// How many buffers are lent out now.
    pub fn lent_out(&self) -> usize {
        self.lent.iter().filter(|l| **l).count()
    }

    /// A completion named buffer `bid` with `len` bytes received: lend them out, without a
    /// copy. `None` for a buffer id out of range, a buffer already lent, or a length over
    /// the buffer's size (none of which a kernel reports).
    pub fn take(&mut self, bid: u16, len: usize) -> Option<Bytes> {
        let lent = self.lent.get_mut(usize::from(bid))?;
        if *lent || len > self.size {
            return None;
        }
        *lent = true;
        Some(Bytes::from_owner(Lent {
            slab: self.slab.clone(),
            returned: self.returned.clone(),
            offset: usize::from(bid) * self.size,
            len,
            bid,
        }))
    }

    /// Give a buffer the kernel filled with nothing (a completion without data, or an
    /// error that named it) straight back. Returns whether it was taken from the kernel.
    pub fn give_back(&mut self, bid: u16) -> bool {
        match self.lent.get(usize::from(bid)) {
            Some(false) => {
                self.push(bid);
                self.publish();
                true
            }
            _ => false,
        }
    }

    /// Put every buffer returned since the last call back in the ring; returns how many.
    pub fn recycle(&mut self) -> usize {
        let back = {
            let mut returned = self.returned.list.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *returned)
        };
        let mut n = 0;
        for bid in back {
            if let Some(lent) = self.lent.get_mut(usize::from(bid)) {
                if *lent {
                    *lent = false;
                    self.push(bid);
                    n += 1;
                }
            }
        }
        if n > 0 {
            self.publish();
        }
        n
    }

    /// Unregister from `ring` and free the entry ring. Lent buffers stay valid until
    /// dropped.
    pub fn release(mut self, ring: &Ring) -> io::Result<()> {
        self.unregister(ring)
    }

    /// Unregister from `ring`: once it is, dropping this frees the memory (the buffers'
    /// once the lent ones are dropped too). Call it only when no receive that may still
    /// take a buffer is in flight (they have all posted their last completion), since a
    /// receive that already chose a buffer may still be filling it.
    pub fn unregister(&mut self, ring: &Ring) -> io::Result<()> {
        if self.registered {
            ring.uring_ref()
                .submitter()
                .unregister_buf_ring(self.group)?;
            self.registered = false;
        }
        Ok(())
    }

    /// Write buffer `bid` into the next free entry (not yet published).
    fn push(&mut self, bid: u16) {
        let mask = self.count - 1;
        let index = usize::from(self.tail & mask);
        // SAFETY: `index < count`, so the entry lies in the ring's allocation. At most
        // `count` buffers exist and each is in the ring at most once, so the entry at our
        // tail is one the kernel has consumed: it does not read it until we publish.
        let entry = unsafe { &mut *self.entries.add(index) };
        entry.set_addr(self.slab.ptr as u64 + (usize::from(bid) * self.size) as u64);
        entry.set_len(self.size as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publish the entries pushed so far to the kernel.
    fn publish(&self) {
        // SAFETY: the entry ring's base is page-aligned and its tail field (inside the
        // first entry) is a naturally aligned u16 that the kernel reads and we alone write;
        // a release store makes the entries written before it visible first.
        unsafe {
            let tail = BufRingEntry::tail(self.entries).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.registered {
            // Still registered (not `release`d): the kernel may read the entries and fill
            // buffers for as long as its ring lives, so neither may be freed. Leak both.
            std::mem::forget(self.slab.clone());
            return;
        }
        // SAFETY: allocated in `new` with this layout; unregistered, so the kernel no
        // longer reads it.
        unsafe { alloc::dealloc(self.entries.cast(), self.entries_layout) }
    }
}
