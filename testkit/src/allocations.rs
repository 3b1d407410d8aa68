//! A counting allocator for allocation tests: [`Counting`] wraps the system allocator and
//! counts allocations (and reallocations) made on one thread ([`on_this_thread`]) or in the
//! whole process ([`InProcess`]). A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: zmtp_testkit::allocations::Counting = zmtp_testkit::allocations::Counting;
//! ```
//!
//! Counting touches only atomics and `const`-initialized thread-locals, so it never
//! allocates itself. A binary that counts the whole process should hold one test only.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The system allocator, counting.
pub struct Counting;

thread_local! {
    /// Whether this thread's allocations are being counted.
    static THREAD_COUNTING: Cell<bool> = const { Cell::new(false) };
    /// This thread's allocations while counting.
    static THREAD_COUNT: Cell<u64> = const { Cell::new(0) };
}

static PROCESS_COUNTING: AtomicBool = AtomicBool::new(false);
static PROCESS_COUNT: AtomicU64 = AtomicU64::new(0);

fn note() {
    if PROCESS_COUNTING.load(Ordering::Relaxed) {
        PROCESS_COUNT.fetch_add(1, Ordering::Relaxed);
    }
    // `try_with`: the thread-locals may already be gone while a thread ends. Both are
    // `const`-initialized with no destructor, so reading them never allocates.
    let _ = THREAD_COUNTING.try_with(|on| {
        if on.get() {
            let _ = THREAD_COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every method forwards to `System` with the arguments it was given, unchanged, so
// the `GlobalAlloc` contract holds as it does for `System`; counting touches only atomics
// and thread-locals that never allocate (const-initialized `Cell`s).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's guarantees for `alloc` are passed on as they are.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` and `layout` come from this allocator, that is from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Run `f` and count the allocations it makes on this thread (with [`Counting`]
/// installed; 0 otherwise).
pub fn on_this_thread<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = THREAD_COUNT.with(Cell::get);
    THREAD_COUNTING.with(|on| on.set(true));
    let r = f();
    THREAD_COUNTING.with(|on| on.set(false));
    (r, THREAD_COUNT.with(Cell::get) - before)
}

/// Counting the allocations of every thread of the process, from [`start`](Self::start)
/// to [`stop`](Self::stop) (with [`Counting`] installed).
#[must_use = "stop() gives the count"]
pub struct InProcess {
    before: u64,
}

impl InProcess {
    /// Start counting.
    pub fn start() -> InProcess {
        let before = PROCESS_COUNT.load(Ordering::SeqCst);
        PROCESS_COUNTING.store(true, Ordering::SeqCst);
        InProcess { before }
    }

    /// Stop counting: the allocations since `start`.
    pub fn stop(self) -> u64 {
        PROCESS_COUNTING.store(false, Ordering::SeqCst);
        PROCESS_COUNT.load(Ordering::SeqCst) - self.before
    }
}
