//! Calls of the C API with arbitrary arguments, from a seeded generator: NULL, made-up,
//! closed and live handles, option numbers and sizes of every kind, malformed endpoints,
//! messages zeroed, live and closed. Every call must return (none may block: sends and
//! receives are `ZMQ_DONTWAIT`, polls have a zero timeout) with a result libzmq's
//! contract allows, `errno` set on every failure, and never crash.

use std::ffi::{c_int, c_void, CString};
use std::ptr::null_mut;

use zmq::ctx::*;
use zmq::error::zmq_errno;
use zmq::msg::*;
use zmq::options::{zmq_getsockopt, zmq_setsockopt};
use zmq::poll::*;
use zmq::socket::*;

/// xorshift64*: a small deterministic generator, so that a failure replays by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const ENDPOINTS: &[&str] = &[
    "tcp://127.0.0.1:*",
    "tcp://127.0.0.1:1",
    "tcp://[::1]:*",
    "tcp://no-port",
    "tcp://:",
    "ipc://@zmtp-random-misuse",
    "inproc://random-misuse",
    "inproc://",
    "udp://127.0.0.1:*",
    "ws://127.0.0.1:*",
    "nope://x",
    "",
    "tcp://127.0.0.1:99999",
    "tcp://127.0.0.1:*;junk",
];

/// A failed call: -1 with some errno.
fn check(rc: c_int, what: &str, seed: u64) {
    assert!(rc >= -1, "{what}: {rc} (seed {seed})");
    if rc == -1 {
        assert_ne!(zmq_errno(), 0, "{what}: -1 without errno (seed {seed})");
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed | 1);
    let ctx = zmq_ctx_new();
    let mut bogus = [0u8; 128];
    let mut live: Vec<*mut c_void> = Vec::new();
    let mut dead: Vec<*mut c_void> = Vec::new();
    let mut buf = [0u8; 512];
    let mut msgs: Vec<std::mem::MaybeUninit<zmq_msg_t>> =
        (0..4).map(|_| std::mem::MaybeUninit::zeroed()).collect();
    for step in 0..steps {
        for b in bogus.iter_mut().take(16) {
            *b = rng.next() as u8;
        }
        let handle = match rng.below(6) {
            0 => null_mut(),
            1 => bogus.as_mut_ptr().cast(),
            2 => dead
                .get(rng.below(dead.len().max(1)))
                .copied()
                .unwrap_or(null_mut()),
            3 => ctx,
            _ => live
                .get(rng.below(live.len().max(1)))
                .copied()
                .unwrap_or(null_mut()),
        };
        let len = match rng.below(4) {
            0 => 4,
            1 => 8,
            2 => rng.below(48),
            _ => rng.below(300),
        };
        for b in buf.iter_mut().take(64) {
            *b = rng.next() as u8;
        }
        let ptr_or_null =
            |rng: &mut Rng, p: *mut c_void| if rng.below(8) == 0 { null_mut() } else { p };
        let m = msgs[rng.below(4)].as_mut_ptr();
        let op = rng.below(18);
        let what = format!("step {step} op {op}");
        // SAFETY (all calls below): every buffer passed is `buf` (512 bytes) or `bogus`
        // (128 bytes) with a length within it, or NULL; the calls under test must reject
        // whatever else is wrong.
        unsafe {
            match op {
                0 => {
                    if live.len() < 12 {
                        let s = zmq_socket(ctx, rng.below(24) as c_int - 2);
                        if s.is_null() {
                            assert_ne!(zmq_errno(), 0);
                        } else {
                            // Nothing queued may keep the context's end waiting.
                            let zero: c_int = 0;
                            zmq_setsockopt(s, 17, (&zero as *const c_int).cast(), 4);
                            live.push(s);
                        }
                    }
                }
                1 => {
                    let rc = zmq_close(handle);
                    check(rc, &what, seed);
                    if rc == 0 {
                        live.retain(|&s| s != handle);
                        dead.push(handle);
                    }
                }
                2 => {
                    let p = ptr_or_null(&mut rng, buf.as_mut_ptr().cast());
                    // Any option but ZMQ_LINGER (17), which stays 0.
                    let option = match rng.below(130) as c_int {
                        17 => 16,
                        o => o,
                    };
                    let rc = zmq_setsockopt(handle, option, p, len);
                    check(rc, &what, seed);
                }
                3 => {
                    let mut l = len;
                    let p = ptr_or_null(&mut rng, buf.as_mut_ptr().cast());
                    let lp = if rng.below(10) == 0 {
                        null_mut()
                    } else {
                        &mut l as *mut usize
                    };
                    let rc = zmq_getsockopt(handle, rng.below(130) as c_int, p, lp);
                    check(rc, &what, seed);
                    if rc == 0 {
                        assert!(l <= len, "{what}: wrote {l} of {len} (seed {seed})");
                    }
                }
                4 | 5 => {
                    let e = CString::new(ENDPOINTS[rng.below(ENDPOINTS.len())]).unwrap();
                    let rc = if op == 4 {
                        zmq_bind(handle, e.as_ptr())
                    } else {
                        zmq_connect(handle, e.as_ptr())
                    };
                    check(rc, &what, seed);
                }
                6 => {
                    let e = CString::new(ENDPOINTS[rng.below(ENDPOINTS.len())]).unwrap();
                    let rc = if rng.below(2) == 0 {
                        zmq_unbind(handle, e.as_ptr())
                    } else {
                        zmq_disconnect(handle, e.as_ptr())
                    };
                    check(rc, &what, seed);
                }
                7 => {
                    let p = ptr_or_null(&mut rng, buf.as_mut_ptr().cast());
                    let flags = DONTWAIT | (rng.below(2) as c_int * SNDMORE);
                    check(zmq_send(handle, p, len.min(64), flags), &what, seed);
                }
                8 => {
                    let p = ptr_or_null(&mut rng, buf.as_mut_ptr().cast());
                    check(zmq_recv(handle, p, len, DONTWAIT), &what, seed);
                }
                9 => check(zmq_msg_init(m), &what, seed),
                10 => check(zmq_msg_init_size(m, len), &what, seed),
                11 => check(zmq_msg_close(m), &what, seed),
                12 => {
                    let flags = DONTWAIT | (rng.below(2) as c_int * SNDMORE);
                    check(zmq_msg_send(m, handle, flags), &what, seed);
                }
                13 => check(zmq_msg_recv(m, handle, DONTWAIT), &what, seed),
                14 => {
                    let other = msgs[rng.below(4)].as_mut_ptr();
                    let rc = if rng.below(2) == 0 {
                        zmq_msg_copy(m, other)
                    } else {
                        zmq_msg_move(m, other)
                    };
                    check(rc, &what, seed);
                    let _ = zmq_msg_size(m);
                    let _ = zmq_msg_more(m);
                    let _ = zmq_msg_data(m);
                }
                15 => {
                    let mut items: Vec<zmq_pollitem_t> = (0..rng.below(4))
                        .map(|_| zmq_pollitem_t {
                            socket: if rng.below(3) == 0 {
                                null_mut()
                            } else {
                                handle
                            },
                            fd: rng.below(8) as c_int - 1,
                            events: rng.below(16) as i16,
                            revents: 0,
                        })
                        .collect();
                    check(
                        zmq_poll(items.as_mut_ptr(), items.len() as c_int, 0),
                        &what,
                        seed,
                    );
                }
                16 => {
                    let v = rng.below(2000) as c_int - 2;
                    check(zmq_ctx_set(handle, rng.below(12) as c_int, v), &what, seed);
                    let _ = zmq_ctx_get(handle, rng.below(12) as c_int);
                }
                _ => {
                    let name =
                        CString::new(["Socket-Type", "User-Id", "", "X-a"][rng.below(4)]).unwrap();
                    let _ = zmq_msg_gets(m, name.as_ptr());
                    let _ = zmq_msg_get(m, rng.below(5) as c_int);
                }
            }
        }
    }
    for m in msgs.iter_mut() {
        let _ = zmq_msg_close(m.as_mut_ptr());
    }
    // Nothing may keep the context's end waiting: LINGER 0 on what is left.
    let zero: c_int = 0;
    for s in live {
        unsafe { zmq_setsockopt(s, 17, (&zero as *const c_int).cast(), 4) };
        assert_eq!(zmq_close(s), 0);
    }
    let _ = zmq_ctx_set(ctx, 2, 1023);
    assert_eq!(zmq_ctx_term(ctx), 0, "seed {seed}");
}

#[test]
fn arbitrary_calls_fail_cleanly() {
    for seed in 1..=32u64 {
        run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 4000);
    }
}
