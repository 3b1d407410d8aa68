//! Memory under hostile input, measured with a counting allocator: with MAXMSGSIZE set,
//! decoding arbitrary bytes allocates no more than the bytes given plus a constant.
//!
//! - The codec and `Connection` allocate nothing at all, whatever the input.
//! - `Buffered`, which owns the receive buffer, holds at most twice the bytes received
//!   (buffer growth doubles) plus a constant (its read-ahead for an announced frame is
//!   capped), never anything sized by what a header announces.
//!
//! One test function only: the allocator's counters are process-wide, and a second test
//! running on another thread would disturb them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use zmtp_proto::{Buffered, Config, Connection, Instant, SocketType};

/// Counts live heap bytes and every allocation.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; the counters are plain atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let live =
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed) + layout.size() as isize;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout (see the impl's comment).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let delta = new_size as isize - layout.size() as isize;
        let live = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator with `layout`; forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Start measuring: the peak restarts from what is live now.
fn reset() -> isize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn now() -> Instant {
    Instant::from_millis(1)
}

/// libzmq's greeting and a READY from a PUSH: what a real peer sends first.
fn handshake_bytes() -> Vec<u8> {
    let mut g = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 1];
    g.extend_from_slice(b"NULL");
    g.resize(64, 0);
    g.extend_from_slice(b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH");
    g
}

fn config(max: u64) -> Config {
    let mut c = Config::new(SocketType::Pull);
    c.max_message_size = Some(max);
    c
}

/// Hostile input after a valid handshake: random bytes, with frame headers announcing
/// sizes up to 2^63 mixed in.
fn hostile() -> impl Strategy<Value = (Vec<Vec<u8>>, u64)> {
    let header = prop_oneof![
        any::<u64>().prop_map(|n| {
            let mut h = vec![0x03];
            h.extend_from_slice(&n.to_be_bytes());
            h
        }),
        any::<u8>().prop_map(|n| vec![0x01, n]),
        vec(any::<u8>(), 0..2048),
    ];
    (vec(header, 1..40), 1u64..4 << 20)
}

#[test]
fn decoding_allocates_at_most_the_input_plus_a_constant() {
    let mut runner = TestRunner::new(RunnerConfig {
        cases: 256,
        ..RunnerConfig::default()
    });
    runner
        .run(&hostile(), |(chunks, max)| {
            let mut input = handshake_bytes();
            for c in &chunks {
                input.extend_from_slice(c);
            }

            // The connection alone: not one allocation, whatever arrives.
            let mut conn = Connection::new(config(max), now());
            let mut scratch = input.clone();
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            let mut at = 0;
            while let Some(rest) = scratch.get_mut(at..) {
                match conn.handle_input(now(), rest) {
                    Ok(step) if step.consumed > 0 => at += step.consumed,
                    _ => break,
                }
            }
            prop_assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), before);

            // The buffered layer, fed chunk by chunk as a driver would.
            let base = reset();
            let mut b = Buffered::new(config(max), now());
            let mut given = 0usize;
            for chunk in std::iter::once(handshake_bytes()).chain(chunks) {
                given += chunk.len();
                b.receive(&chunk);
                while let Ok(Some(_item)) = b.poll_item(now()) {}
            }
            let peak = (PEAK.load(Ordering::Relaxed) - base).max(0) as usize;
            // Twice the input (buffer doubling) plus a constant: the connection's own
            // state and the read-ahead cap (256 KiB) plus one 8 KiB chunk, rounded up.
            let bound = 2 * given + 320 * 1024;
            prop_assert!(
                peak <= bound,
                "peak {} bytes for {} bytes given (bound {})",
                peak,
                given,
                bound
            );
            Ok(())
        })
        .unwrap();
}
