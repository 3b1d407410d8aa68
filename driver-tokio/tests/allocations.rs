//! Allocations per message in steady state: PUSH to PULL over tcp on zmtp-tokio, a
//! current-thread runtime. Messages go in windows of 100 (`send_slice` of a reused buffer,
//! then 100 `recv`s, each checked and dropped); the allocations of the whole process are
//! counted over 10,000 messages after a warm-up of 2,000.
//!
//! Not zero, and not per message: about 3 allocations per window of 100 messages (0.03 per
//! message when measured). Each window's first `recv` finds nothing yet and parks: its
//! future boxes a `Notified` (zmtp-async's `Waiter`). And the 100 messages received in a
//! window are slices of the receive buffer, held until the application takes them: a
//! read while they are held cannot reuse the buffer and replaces it (a new buffer, and its
//! shared header when the first frame is split off). The bound, 0.05 per message, fails on
//! any allocation made per message (that is 1 per message or more).

use zmtp_testkit::allocations::{Counting, InProcess};
use zmtp_tokio::{Socket, SocketType};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocator counts (a check of the counting itself).
fn check_the_counter() {
    let count = InProcess::start();
    let b = std::hint::black_box(Box::new(1u64));
    assert_eq!(count.stop(), 1);
    let count = InProcess::start();
    drop(b);
    assert_eq!(count.stop(), 0, "freeing is not allocating");
}

/// Messages counted, messages before the count, and messages sent before the receiver
/// takes them (a window: the sender runs ahead of the receiver by this much).
const MESSAGES: u64 = 10_000;
const WARM_UP: u64 = 2_000;
const WINDOW: u64 = 100;

/// Allocations per message allowed: some per window (see the file's documentation), none
/// per message.
const BOUND: f64 = 0.05;

/// The body of message `i`: 64 bytes, its number first.
fn body(i: u64) -> [u8; 64] {
    let mut b = [i as u8; 64];
    b[..8].copy_from_slice(&i.to_le_bytes());
    b
}

/// Send `WINDOW` messages from `first` on, then receive and check them.
async fn window(push: &Socket, pull: &Socket, first: u64) {
    for i in first..first + WINDOW {
        push.send_slice(&body(i)).await.expect("send");
    }
    for i in first..first + WINDOW {
        let msg = pull.recv().await.expect("recv");
        assert_eq!(msg.frames().len(), 1, "message {i}");
        assert_eq!(msg.frames()[0][..], body(i)[..], "message {i}");
    }
}

#[test]
fn push_to_pull_over_tcp_allocates_a_few_times_per_window_not_per_message() {
    check_the_counter();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let pull = Socket::new(SocketType::Pull).expect("PULL");
        let endpoint = pull.bind("tcp://127.0.0.1:*").await.expect("bind");
        let push = Socket::new(SocketType::Push).expect("PUSH");
        push.connect(&endpoint).expect("connect");
        let mut next = 0;
        while next < WARM_UP {
            window(&push, &pull, next).await;
            next += WINDOW;
        }
        // Everything the runtime does on the way is counted too: one thread does it all.
        let count = InProcess::start();
        while next < WARM_UP + MESSAGES {
            window(&push, &pull, next).await;
            next += WINDOW;
        }
        let allocations = count.stop();
        let per_message = allocations as f64 / MESSAGES as f64;
        println!(
            "zmtp-tokio PUSH->PULL over tcp: {allocations} allocations in {MESSAGES} \
             messages ({per_message:.4} per message)"
        );
        assert!(
            per_message < BOUND,
            "allocations per message: {per_message}"
        );
    });
}
