//! Allocations per message in steady state: PUSH to PULL over tcp on zmtp-mio. Messages
//! go in windows of 100 (`send_slice` of a reused buffer, then 100 `recv`s, each checked
//! and dropped); the allocations of the whole process (the reactor's thread included) are
//! counted over 10,000 messages after a warm-up of 2,000.
//!
//! Not zero, and not per message: 1 to 4 allocations per window of 100 messages (0.010 to
//! 0.036 per message over repeated runs, idle or loaded), almost all of them the reactor's
//! writes: it hands a peer's encoded output to a write job as owned bytes
//! (`transmit_bytes`, one copy per write, not per message), so the count follows how the
//! reactor's turns fall. The bound, 0.1 per message, leaves room for that and still fails
//! on any allocation made per message (that is 1 per message or more).

use std::time::Duration;

use zmtp_mio::{Context, Options, Socket, SocketType};
use zmtp_testkit::allocations::{Counting, InProcess};

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
const BOUND: f64 = 0.1;

/// The body of message `i`: 64 bytes, its number first.
fn body(i: u64) -> [u8; 64] {
    let mut b = [i as u8; 64];
    b[..8].copy_from_slice(&i.to_le_bytes());
    b
}

const T: Option<Duration> = Some(Duration::from_secs(10));

/// Send `WINDOW` messages from `first` on, then receive and check them.
fn window(push: &Socket, pull: &Socket, first: u64) {
    for i in first..first + WINDOW {
        push.send_slice(&body(i)).expect("send");
    }
    for i in first..first + WINDOW {
        let msg = pull.recv_timeout(T).expect("recv");
        assert_eq!(msg.frames().len(), 1, "message {i}");
        assert_eq!(msg.frames()[0][..], body(i)[..], "message {i}");
    }
}

#[test]
fn push_to_pull_over_tcp_allocates_a_few_times_per_window_not_per_message() {
    check_the_counter();
    let ctx = Context::new().expect("context");
    // Everything sent is received; LINGER 0 all the same, so that the end never waits.
    let options = Options::default().with_linger(Some(Duration::ZERO));
    let pull = ctx
        .socket_with(SocketType::Pull, options.clone())
        .expect("PULL");
    let endpoint = pull.bind("tcp://127.0.0.1:*").expect("bind");
    let push = ctx.socket_with(SocketType::Push, options).expect("PUSH");
    push.connect(&endpoint).expect("connect");
    let mut next = 0;
    while next < WARM_UP {
        window(&push, &pull, next);
        next += WINDOW;
    }
    let count = InProcess::start();
    while next < WARM_UP + MESSAGES {
        window(&push, &pull, next);
        next += WINDOW;
    }
    let allocations = count.stop();
    let per_message = allocations as f64 / MESSAGES as f64;
    println!(
        "zmtp-mio PUSH->PULL over tcp: {allocations} allocations in {MESSAGES} messages \
         ({per_message:.4} per message)"
    );
    assert!(
        per_message < BOUND,
        "allocations per message: {per_message}"
    );
}
