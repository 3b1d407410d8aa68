//! The C ABI (`zmtp-libzmq`, libzmq's `zmq.h`) called with arbitrary arguments: NULL,
//! closed and made-up handles, option numbers and value sizes of every kind, malformed
//! endpoints, messages never initialised or closed already, bad lengths. Every call must
//! return what libzmq's contract allows: success, or -1 (NULL) with one of the error
//! numbers libzmq documents for that call. Where libzmq itself would crash or assert (a
//! NULL `option_len`, a NULL message, a NULL buffer with a length), the library here fails
//! with an error instead, and this body expects that error.
//!
//! Nothing blocks and nothing leaves the machine: sends and receives carry `ZMQ_DONTWAIT`,
//! polls have a zero timeout (but for one bounded wait per input, see [`cabi`]), LINGER is
//! always 0, only `inproc://` names and `tcp://127.0.0.1` ports are ever opened (the other
//! endpoints are malformed, of an unknown transport, or too long, and fail before any
//! socket is made), and every context is terminated before the body returns.

// The body calls the C ABI, whose entry points are `unsafe extern "C"`: each call passes
// pointers to buffers the body owns, with their real sizes, or NULL.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_long, c_short, c_void, CStr};
use std::mem::MaybeUninit;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use zmq::ctx::{zmq_ctx_get, zmq_ctx_new, zmq_ctx_set, zmq_ctx_shutdown, zmq_ctx_term, zmq_init};
use zmq::error::{zmq_errno, zmq_strerror, EFSM, EMTHREAD, ENOCOMPATPROTO, ETERM};
use zmq::msg::{
    zmq_msg_close, zmq_msg_copy, zmq_msg_data, zmq_msg_get, zmq_msg_gets, zmq_msg_group,
    zmq_msg_init, zmq_msg_init_buffer, zmq_msg_init_data, zmq_msg_init_size, zmq_msg_more,
    zmq_msg_move, zmq_msg_routing_id, zmq_msg_set, zmq_msg_set_group, zmq_msg_set_routing_id,
    zmq_msg_size, FreeFn,
};
use zmq::options::{zmq_getsockopt, zmq_setsockopt, LAST_ENDPOINT, LINGER};
use zmq::poll::{zmq_poll, zmq_pollitem_t, POLLIN};
use zmq::poller::{
    zmq_poller_add, zmq_poller_add_fd, zmq_poller_destroy, zmq_poller_event_t, zmq_poller_fd,
    zmq_poller_modify, zmq_poller_modify_fd, zmq_poller_new, zmq_poller_remove,
    zmq_poller_remove_fd, zmq_poller_size, zmq_poller_wait, zmq_poller_wait_all,
};
use zmq::socket::{
    zmq_bind, zmq_close, zmq_connect, zmq_disconnect, zmq_join, zmq_leave, zmq_msg_recv,
    zmq_msg_send, zmq_recv, zmq_send, zmq_send_const, zmq_sendiov, zmq_socket, zmq_unbind,
    DONTWAIT,
};
use zmq::util::{zmq_curve_public, zmq_has, zmq_version, zmq_z85_decode, zmq_z85_encode};
use zmq::zmq_msg_t;

use super::input::{pick, Cursor};

/// At most this many operations per input.
pub(super) const MAX_OPS: usize = 64;
/// Sockets in the table at most (a full table skips `zmq_socket`).
const MAX_SOCKETS: usize = 8;
/// Message structs the body owns.
const MSGS: usize = 4;
/// The size of the value, receive and option buffers.
const BUF: usize = 256;
/// Guard bytes after a buffer: a call must never write there.
const CANARY: u8 = 0xA5;
/// The one bounded wait of an input, in milliseconds (see [`cabi`]).
const WAIT_MS: c_long = 25;

/// `ZMQ_BLOCKY`: set to 0 on every context, so that sockets start with LINGER 0.
const BLOCKY: c_int = 70;

/// The operations, by their byte (modulo [`op::COUNT`]).
pub(super) mod op {
    pub const CTX_NEW: u8 = 0;
    pub const CTX_SET: u8 = 1;
    pub const CTX_GET: u8 = 2;
    pub const CTX_SHUTDOWN: u8 = 3;
    pub const CTX_TERM: u8 = 4;
    pub const SOCKET: u8 = 5;
    pub const CLOSE: u8 = 6;
    pub const SETSOCKOPT: u8 = 7;
    pub const GETSOCKOPT: u8 = 8;
    pub const BIND: u8 = 9;
    pub const CONNECT: u8 = 10;
    pub const UNBIND: u8 = 11;
    pub const DISCONNECT: u8 = 12;
    pub const SEND: u8 = 13;
    pub const RECV: u8 = 14;
    pub const MSG_INIT: u8 = 15;
    pub const MSG_CLOSE: u8 = 16;
    pub const MSG_COPY_MOVE: u8 = 17;
    pub const MSG_SEND: u8 = 18;
    pub const MSG_RECV: u8 = 19;
    pub const MSG_QUERY: u8 = 20;
    pub const POLL: u8 = 21;
    pub const WAIT: u8 = 22;
    pub const POLLER: u8 = 23;
    pub const Z85: u8 = 24;
    pub const STRERROR: u8 = 25;
    pub const JOIN: u8 = 26;
    pub const SENDIOV: u8 = 27;
    pub const MISC: u8 = 28;
    pub const COUNT: u8 = 29;
}

/// Endpoint kinds, by their byte (modulo [`ep::COUNT`]).
pub(super) mod ep {
    /// `inproc://a`, `b` or `c` (the next byte picks).
    pub const INPROC: u8 = 0;
    /// `inproc://` and arbitrary bytes (a length byte, then the bytes).
    pub const INPROC_ANY: u8 = 1;
    /// `tcp://127.0.0.1:*`.
    pub const TCP_ANY_PORT: u8 = 2;
    /// A `tcp://` endpoint bound earlier in this input (the next byte picks), else as
    /// [`TCP_ANY_PORT`].
    pub const TCP_BOUND: u8 = 3;
    /// Arbitrary bytes without a scheme (`:` made `_`).
    pub const NO_SCHEME: u8 = 4;
    /// A transport this library does not have, then arbitrary bytes.
    pub const UNKNOWN: u8 = 5;
    /// `ipc://@` and a name too long for a Unix socket address.
    pub const IPC_TOO_LONG: u8 = 6;
    /// `udp://127.0.0.1:*` (not called on the udp types, which would open it).
    pub const UDP: u8 = 7;
    /// `tcp://127.0.0.1:x` and arbitrary bytes: a port that is no number.
    pub const TCP_BAD_PORT: u8 = 8;
    /// NULL.
    pub const NULL: u8 = 9;
    /// `inproc://` with no name.
    pub const INPROC_EMPTY: u8 = 10;
    /// `tcp://127.0.0.1:PORT` (two bytes) to bind; a connect gets [`TCP_BAD_PORT`].
    pub const TCP_PORT: u8 = 11;
    pub const COUNT: u8 = 12;
}

/// Socket options tried besides the numbers 0 to 100 (a byte over 100 picks one).
const ODD_OPTIONS: [c_int; 6] = [-1, c_int::MIN, c_int::MAX, 101, 1000, 0x1_0000];
/// Value lengths for options and buffers (the last entry means "the next byte").
const LENGTHS: [usize; 12] = [0, 1, 2, 4, 8, 32, 40, 41, 255, 256, 5, usize::MAX];
/// Socket types tried besides 0 to 20 (a byte over 24 picks one).
const ODD_TYPES: [c_int; 4] = [-1, 21, 255, c_int::MAX];
/// Transports libzmq has or had that this library has not, and malformed schemes.
const UNKNOWN_SCHEMES: [&str; 8] = ["pgm", "epgm", "norm", "tipc", "vmci", "TCP", "", "inproc:"];

/// What an input did, for the tests of what the seeds reach.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Operations run.
    pub ops: u32,
    /// Sockets made.
    pub sockets: u32,
    /// Whole messages sent (frames without `ZMQ_SNDMORE`).
    pub sent: u32,
    /// Frames received.
    pub received: u32,
    /// Frames received with the bytes of one sent before in this input.
    pub round_trips: u32,
    /// Calls that failed with `ENOTSOCK`, `ETERM`, `EFAULT`, `EINVAL`, `EAGAIN`.
    pub enotsock: u32,
    pub eterm: u32,
    pub efault: u32,
    pub einval: u32,
    pub eagain: u32,
}

/// A context slot.
#[derive(Clone, Copy)]
struct CtxSlot {
    handle: *mut c_void,
    live: bool,
    terminating: bool,
}

/// A socket the library gave out (closed ones stay, to be called again).
#[derive(Clone, Copy)]
struct Sock {
    handle: *mut c_void,
    ctx: usize,
    ty: c_int,
    live: bool,
}

/// What a handle argument is, by the model: a live context or socket (and whether its
/// context is terminating), or not one at all.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Live { index: usize, terminating: bool },
    Bad,
}

/// Frees `zmq_msg_init_data` was asked to make, and those made.
static FREES: AtomicUsize = AtomicUsize::new(0);

/// The free function given to `zmq_msg_init_data`: counts its calls.
extern "C" fn count_free(_data: *mut c_void, _hint: *mut c_void) {
    FREES.fetch_add(1, Ordering::SeqCst);
}

/// Bytes for `zmq_send_const` and `zmq_msg_init_data`: valid and unchanged forever.
static CONSTANT: [u8; 64] = *b"constant bytes, valid for the life of the program, never freed..";

thread_local! {
    /// Panics on this thread, counted by the hook [`count_panics`] installs.
    static PANICS: Cell<u64> = const { Cell::new(0) };
}

/// Count every panic on its thread (then report it as before). The entry points turn a
/// panic into `EINVAL` rather than unwind into C; the body checks that none happened.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
}

fn panics() -> u64 {
    PANICS.with(Cell::get)
}

/// Clear the thread's `errno`, so that a failure without one is seen.
fn clear_errno() {
    // SAFETY: `__errno_location` is the calling thread's `errno`, valid for its life.
    unsafe { *libc::__errno_location() = 0 }
}

/// One body at a time in a process: the handle tables are the process's, and a closed
/// handle of one input must not be a live one of another running alongside.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The C ABI on arbitrary calls. The input is a sequence of at most 64 operations, each an
/// operation byte and its arguments: contexts made, set, read, shut down and terminated;
/// sockets of any type number made and closed (twice); options of any number set and read
/// with any value length (0, too short, too long, NULL with a length, a NULL length
/// pointer); endpoints bound, connected, unbound and disconnected; frames sent and
/// received with any length and flags; four `zmq_msg_t`s initialised every way, closed,
/// copied, moved, sent, received and queried; `zmq_poll` and the draft poller; Z85,
/// `zmq_strerror`, `zmq_join`, `zmq_sendiov`, `zmq_has`, `zmq_curve_public`. Handle
/// arguments are live handles, closed ones, NULL, a handle of the other kind, or the
/// address of a buffer of the body's. Checked after every call:
///
/// - it returns success, or -1 (NULL) with `errno` one of libzmq's numbers for that call,
///   and exactly `ENOTSOCK` for what is not a live socket, `EFAULT` for what is not a live
///   context or message, `ETERM` on the sockets of a terminating context;
/// - no byte past a buffer's stated size is written, lengths written back fit, Z85 round
///   trips, a message's state (initialised or not) is what the calls made it;
/// - no panic happened in the library (its entry points would turn one into `EINVAL`);
/// - at the end (every socket closed, every context terminated) each free function given
///   to `zmq_msg_init_data` has been called exactly once.
///
/// Nothing blocks: `ZMQ_DONTWAIT` on every send and receive, zero poll timeouts, LINGER 0
/// (`ZMQ_BLOCKY` 0 on every context; a LINGER set is made 0), and a context is terminated
/// only once its sockets are closed. One operation may wait, once per input: a poll of up
/// to 25 ms for a frame, when a message was sent and not yet received, so that inputs can
/// reach traffic that crosses the I/O thread.
pub fn cabi(data: &[u8]) {
    run_cabi(data);
}

/// [`cabi`], saying what the input did.
pub(super) fn run_cabi(data: &[u8]) -> Outcome {
    count_panics();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = panics();
    let frees = FREES.load(Ordering::SeqCst);
    let mut world = World::new();
    let mut input = Cursor::new(data);
    while !input.is_empty() && world.outcome.ops < MAX_OPS as u32 {
        world.outcome.ops += 1;
        world.step(&mut input);
        assert_eq!(panics(), before, "a panic in the library");
    }
    world.finish();
    assert_eq!(panics(), before, "a panic in the library");
    assert_eq!(
        FREES.load(Ordering::SeqCst) - frees,
        world.frees_due,
        "every free function called once, after the end"
    );
    world.outcome
}

/// The contexts, sockets, messages and poller of one input, and the model of them.
struct World {
    ctxs: [CtxSlot; 2],
    /// Terminated context handles, to call again.
    dead_ctxs: Vec<*mut c_void>,
    socks: Vec<Sock>,
    /// The messages' storage, reached only through `msg_base` once made.
    _msgs: Vec<MaybeUninit<zmq_msg_t>>,
    msg_base: *mut zmq_msg_t,
    msg_live: [bool; MSGS],
    poller: *mut c_void,
    /// A destroyed poller's handle, to call again.
    dead_poller: *mut c_void,
    /// `tcp://` endpoints bound (as `ZMQ_LAST_ENDPOINT` says), to connect to.
    tcp: Vec<Vec<u8>>,
    /// Bodies of whole messages sent (at most 16 kept).
    sent: Vec<Vec<u8>>,
    /// A buffer whose address stands for a made-up handle.
    bogus: Box<[u8; 64]>,
    waited: bool,
    frees_due: usize,
    outcome: Outcome,
}

impl World {
    fn new() -> World {
        let mut msgs: Vec<MaybeUninit<zmq_msg_t>> =
            (0..MSGS).map(|_| MaybeUninit::zeroed()).collect();
        let msg_base = msgs.as_mut_ptr().cast::<zmq_msg_t>();
        let mut w = World {
            ctxs: [CtxSlot {
                handle: null_mut(),
                live: false,
                terminating: false,
            }; 2],
            dead_ctxs: Vec::new(),
            socks: Vec::new(),
            _msgs: msgs,
            msg_base,
            msg_live: [false; MSGS],
            poller: null_mut(),
            dead_poller: null_mut(),
            tcp: Vec::new(),
            sent: Vec::new(),
            bogus: Box::new([0; 64]),
            waited: false,
            frees_due: 0,
            outcome: Outcome::default(),
        };
        // Most inputs want a context: slot 0 starts with one.
        w.ctx_new(0, false);
        w
    }

    /// The failure of the call just made: its `errno`, which must be set and one of
    /// `allowed`; counted.
    fn failed(&mut self, what: &str, allowed: &[c_int]) -> c_int {
        let e = zmq_errno();
        assert!(
            e != 0 && allowed.contains(&e),
            "{what}: errno {e} ({}), allowed {allowed:?}",
            strerror(e)
        );
        match e {
            libc::ENOTSOCK => self.outcome.enotsock += 1,
            libc::EFAULT => self.outcome.efault += 1,
            libc::EINVAL => self.outcome.einval += 1,
            libc::EAGAIN => self.outcome.eagain += 1,
            ETERM => self.outcome.eterm += 1,
            _ => {}
        }
        e
    }

    /// An `int` result: 0 (or any value ≥ 0), or -1 with an allowed `errno`; the errno,
    /// or 0 on success.
    fn check(&mut self, what: &str, rc: c_int, allowed: &[c_int]) -> c_int {
        assert!(rc >= -1, "{what}: returned {rc}");
        if rc == -1 {
            self.failed(what, allowed)
        } else {
            0
        }
    }

    // Handles.

    fn ctx_new(&mut self, slot: usize, old_api: bool) {
        clear_errno();
        let handle = if old_api { zmq_init(1) } else { zmq_ctx_new() };
        if handle.is_null() {
            // Only when the system refuses a thread.
            self.failed("zmq_ctx_new", &[EMTHREAD]);
            return;
        }
        assert!(
            self.ctxs.iter().all(|c| !c.live || c.handle != handle),
            "a new context with a live one's handle"
        );
        assert_eq!(zmq_ctx_set(handle, BLOCKY, 0), 0, "ZMQ_BLOCKY 0");
        self.ctxs[slot] = CtxSlot {
            handle,
            live: true,
            terminating: false,
        };
    }

    /// A context argument from a byte, and what the model says it is.
    fn ctx_arg(&self, b: u8) -> (*mut c_void, Target) {
        let handle = match b % 6 {
            s @ (0 | 1) => {
                let slot = self.ctxs[usize::from(s)];
                if slot.live {
                    slot.handle
                } else {
                    pick(&self.dead_ctxs, usize::from(b / 6), null_mut())
                }
            }
            2 => null_mut(),
            3 => self
                .socks
                .iter()
                .find(|s| s.live)
                .map_or(self.bogus_ptr(), |s| s.handle),
            4 => self.bogus_ptr(),
            _ => self.msg_ptr(0).cast(),
        };
        (handle, self.ctx_target(handle))
    }

    fn ctx_target(&self, handle: *mut c_void) -> Target {
        match self.ctxs.iter().position(|c| c.live && c.handle == handle) {
            Some(index) => Target::Live {
                index,
                terminating: self.ctxs[index].terminating,
            },
            None => Target::Bad,
        }
    }

    /// A socket argument from a byte, and what the model says it is.
    fn sock_arg(&self, b: u8) -> (*mut c_void, Target) {
        let handle = match b % 12 {
            i @ 0..=7 => self
                .socks
                .get(usize::from(i))
                .map_or(null_mut(), |s| s.handle),
            8 => null_mut(),
            9 => self.ctxs[0].handle,
            10 => self.bogus_ptr(),
            _ => self.msg_ptr(1).cast(),
        };
        (handle, self.sock_target(handle))
    }

    fn sock_target(&self, handle: *mut c_void) -> Target {
        match self.socks.iter().position(|s| s.live && s.handle == handle) {
            Some(index) => Target::Live {
                index,
                terminating: self.ctxs[self.socks[index].ctx].terminating,
            },
            None => Target::Bad,
        }
    }

    fn bogus_ptr(&self) -> *mut c_void {
        self.bogus.as_ptr().cast_mut().cast()
    }

    fn msg_ptr(&self, i: usize) -> *mut zmq_msg_t {
        self.msg_base.wrapping_add(i % MSGS)
    }

    /// A message argument from a byte: one of the four, or NULL; and its slot.
    fn msg_arg(&self, b: u8) -> (*mut zmq_msg_t, Option<usize>) {
        match usize::from(b) % (MSGS + 1) {
            MSGS => (null_mut(), None),
            i => (self.msg_ptr(i), Some(i)),
        }
    }

    /// Whether the message argument holds an initialised message.
    fn msg_is_live(&self, slot: Option<usize>) -> bool {
        slot.is_some_and(|i| self.msg_live[i])
    }

    /// Close a socket as the body does: LINGER 0 (refused once its context terminates,
    /// where it is 0 already), then `zmq_close`.
    fn close_sock(&mut self, index: usize) {
        let s = self.socks[index];
        let zero: c_int = 0;
        // SAFETY: a live socket handle and a 4-byte value.
        let rc = unsafe { zmq_setsockopt(s.handle, LINGER, (&raw const zero).cast(), 4) };
        if rc != 0 {
            assert!(self.ctxs[s.ctx].terminating && zmq_errno() == ETERM);
        }
        clear_errno();
        assert_eq!(zmq_close(s.handle), 0, "zmq_close of a live socket");
        self.socks[index].live = false;
    }

    /// Terminate a live context: its sockets are closed first, so that it cannot block.
    fn term_ctx(&mut self, slot: usize) {
        for i in 0..self.socks.len() {
            if self.socks[i].live && self.socks[i].ctx == slot {
                self.close_sock(i);
            }
        }
        let handle = self.ctxs[slot].handle;
        clear_errno();
        assert_eq!(zmq_ctx_term(handle), 0, "zmq_ctx_term");
        self.ctxs[slot].live = false;
        if self.dead_ctxs.len() < 4 {
            self.dead_ctxs.push(handle);
        }
    }

    /// Close and terminate everything, checking each.
    fn finish(&mut self) {
        for i in 0..MSGS {
            if self.msg_live[i] {
                assert_eq!(zmq_msg_close(self.msg_ptr(i)), 0, "zmq_msg_close");
                self.msg_live[i] = false;
            }
        }
        if !self.poller.is_null() {
            let mut p = self.poller;
            // SAFETY: a pointer to the body's handle variable.
            assert_eq!(unsafe { zmq_poller_destroy(&raw mut p) }, 0);
            assert!(p.is_null(), "zmq_poller_destroy clears the handle");
            self.poller = null_mut();
        }
        for slot in 0..self.ctxs.len() {
            if self.ctxs[slot].live {
                self.term_ctx(slot);
            }
        }
        assert!(self.socks.iter().all(|s| !s.live));
    }

    // Operations.

    fn step(&mut self, input: &mut Cursor<'_>) {
        let code = input.byte() % op::COUNT;
        match code {
            op::CTX_NEW => {
                let b = input.byte();
                let slot = usize::from(b & 1);
                if !self.ctxs[slot].live {
                    self.ctx_new(slot, b & 2 != 0);
                }
            }
            op::CTX_SET => self.ctx_set(input),
            op::CTX_GET => self.ctx_get(input),
            op::CTX_SHUTDOWN => {
                let (handle, target) = self.ctx_arg(input.byte());
                clear_errno();
                let rc = zmq_ctx_shutdown(handle);
                match target {
                    Target::Live { index, .. } => {
                        assert_eq!(rc, 0, "zmq_ctx_shutdown");
                        self.ctxs[index].terminating = true;
                    }
                    Target::Bad => self.expect_errno("zmq_ctx_shutdown", rc, libc::EFAULT),
                }
            }
            op::CTX_TERM => {
                let (handle, target) = self.ctx_arg(input.byte());
                match target {
                    Target::Live { index, .. } => self.term_ctx(index),
                    Target::Bad => {
                        clear_errno();
                        let rc = zmq_ctx_term(handle);
                        self.expect_errno("zmq_ctx_term", rc, libc::EFAULT);
                    }
                }
            }
            op::SOCKET => self.socket(input),
            op::CLOSE => {
                let (handle, target) = self.sock_arg(input.byte());
                match target {
                    Target::Live { index, .. } => self.close_sock(index),
                    Target::Bad => {
                        clear_errno();
                        let rc = zmq_close(handle);
                        self.expect_errno("zmq_close", rc, libc::ENOTSOCK);
                    }
                }
            }
            op::SETSOCKOPT => self.setsockopt(input),
            op::GETSOCKOPT => self.getsockopt(input),
            op::BIND | op::CONNECT | op::UNBIND | op::DISCONNECT => self.endpoint(code, input),
            op::SEND => self.send(input),
            op::RECV => self.recv(input),
            op::MSG_INIT => self.msg_init(input),
            op::MSG_CLOSE => {
                let (msg, slot) = self.msg_arg(input.byte());
                clear_errno();
                let rc = zmq_msg_close(msg);
                if self.msg_is_live(slot) {
                    assert_eq!(rc, 0, "zmq_msg_close");
                } else {
                    self.expect_errno("zmq_msg_close", rc, libc::EFAULT);
                }
                if let Some(i) = slot {
                    self.msg_live[i] = false;
                }
            }
            op::MSG_COPY_MOVE => {
                let b = input.byte();
                let (dest, d) = self.msg_arg(input.byte());
                let (src, s) = self.msg_arg(input.byte());
                clear_errno();
                let rc = if b & 1 == 0 {
                    zmq_msg_copy(dest, src)
                } else {
                    zmq_msg_move(dest, src)
                };
                if d.is_some() && self.msg_is_live(s) {
                    assert_eq!(rc, 0, "zmq_msg_copy/move");
                    if let Some(d) = d {
                        self.msg_live[d] = true;
                    }
                } else {
                    self.expect_errno("zmq_msg_copy/move", rc, libc::EFAULT);
                }
            }
            op::MSG_SEND | op::MSG_RECV => self.msg_send_recv(code, input),
            op::MSG_QUERY => self.msg_query(input),
            op::POLL => self.poll(input),
            op::WAIT => self.wait(input),
            op::POLLER => self.poller(input),
            op::Z85 => self.z85(input),
            op::STRERROR => {
                let n = i32_of(input);
                let text = strerror(n);
                assert!(!text.is_empty(), "zmq_strerror({n}) is empty");
                if n == EFSM {
                    assert_eq!(text, "Operation cannot be accomplished in current state");
                }
            }
            op::JOIN => self.join(input),
            op::SENDIOV => self.sendiov(input),
            _ => self.misc(input),
        }
    }

    /// A call that must fail with exactly `errno`.
    fn expect_errno(&mut self, what: &str, rc: c_int, errno: c_int) {
        assert_eq!(rc, -1, "{what} must fail");
        self.failed(what, &[errno]);
    }

    fn ctx_set(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.ctx_arg(input.byte());
        let option = c_int::from(input.byte()) - 8;
        let mut value = i32_of(input);
        if option == BLOCKY && value >= 0 {
            value = 0;
        }
        clear_errno();
        let rc = zmq_ctx_set(handle, option, value);
        match target {
            Target::Live { .. } => {
                self.check("zmq_ctx_set", rc, &[libc::EINVAL]);
            }
            Target::Bad => self.expect_errno("zmq_ctx_set", rc, libc::EFAULT),
        }
    }

    fn ctx_get(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.ctx_arg(input.byte());
        let option = c_int::from(input.byte()) - 8;
        clear_errno();
        let rc = zmq_ctx_get(handle, option);
        // -1 is also a value (`ZMQ_THREAD_SCHED_POLICY` unset): errno tells.
        let e = zmq_errno();
        match target {
            Target::Live { .. } if rc == -1 && e != 0 => {
                self.failed("zmq_ctx_get", &[libc::EINVAL]);
            }
            Target::Live { .. } => {}
            Target::Bad => self.expect_errno("zmq_ctx_get", rc, libc::EFAULT),
        }
    }

    fn socket(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.ctx_arg(input.byte());
        let b = input.byte();
        let ty = if b <= 24 {
            c_int::from(b)
        } else {
            pick(&ODD_TYPES, usize::from(b), -1)
        };
        if self.socks.len() >= MAX_SOCKETS {
            return;
        }
        clear_errno();
        let s = zmq_socket(handle, ty);
        if s.is_null() {
            let valid = (0..=20).contains(&ty);
            let allowed: &[c_int] = match target {
                Target::Bad => &[libc::EFAULT],
                Target::Live { .. } if !valid => &[libc::EINVAL],
                Target::Live {
                    terminating: true, ..
                } => &[ETERM],
                Target::Live { .. } => &[libc::EMFILE, EMTHREAD],
            };
            self.failed("zmq_socket", allowed);
            return;
        }
        let Target::Live {
            index,
            terminating: false,
        } = target
        else {
            panic!("zmq_socket made a socket in what is no live context");
        };
        assert!(
            (0..=20).contains(&ty),
            "zmq_socket made a socket of type {ty}"
        );
        assert_eq!(
            self.sock_target(s),
            Target::Bad,
            "a live socket's handle again"
        );
        self.outcome.sockets += 1;
        self.socks.push(Sock {
            handle: s,
            ctx: index,
            ty,
            live: true,
        });
    }

    /// The live socket's allowed errors, or the one a bad or terminating one must give.
    fn sock_errors(&self, target: Target, live: &'static [c_int]) -> &'static [c_int] {
        match target {
            Target::Bad => &[libc::ENOTSOCK],
            Target::Live {
                terminating: true, ..
            } => &[ETERM],
            Target::Live { .. } => live,
        }
    }

    fn setsockopt(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let option = option_of(input.byte());
        let shape = input.byte();
        let len = length_of(shape >> 1, input);
        let mut value = [b'v'; BUF];
        if shape & 1 == 0 && len <= 41 {
            // The value's bytes (longer values are all `v`).
            let given = input.take(len);
            value[..given.len()].copy_from_slice(given);
        }
        if option == LINGER
            && len == 4
            && i32::from_ne_bytes([value[0], value[1], value[2], value[3]]) >= -1
        {
            // LINGER stays 0: a context's end must never wait.
            value[..4].copy_from_slice(&0i32.to_ne_bytes());
        }
        let ptr: *const c_void = if shape & 1 == 0 {
            value.as_ptr().cast()
        } else {
            null()
        };
        clear_errno();
        // SAFETY: `ptr` is NULL or `value`, which has `BUF >= len` bytes.
        let rc = unsafe { zmq_setsockopt(handle, option, ptr, len) };
        let errors = self.sock_errors(target, &[libc::EINVAL]);
        let e = self.check("zmq_setsockopt", rc, errors);
        if matches!(
            target,
            Target::Live {
                terminating: false,
                ..
            }
        ) && ptr.is_null()
            && len > 0
        {
            assert_eq!(e, libc::EINVAL, "zmq_setsockopt with NULL and a length");
        }
    }

    fn getsockopt(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let option = option_of(input.byte());
        let shape = input.byte();
        let cap = length_of(shape >> 2, input);
        let mut out = [CANARY; BUF + 16];
        let mut len = cap;
        let optval: *mut c_void = if shape & 1 == 0 {
            out.as_mut_ptr().cast()
        } else {
            null_mut()
        };
        let optlen: *mut usize = if shape & 2 == 0 {
            &raw mut len
        } else {
            null_mut()
        };
        clear_errno();
        // SAFETY: `optval` is NULL or `out`, with `BUF + 16 >= cap` bytes; `optlen` is
        // NULL or `len`.
        let rc = unsafe { zmq_getsockopt(handle, option, optval, optlen) };
        let errors = match target {
            Target::Live { .. } if optlen.is_null() => &[libc::EFAULT][..],
            _ => self.sock_errors(target, &[libc::EINVAL]),
        };
        if self.check("zmq_getsockopt", rc, errors) == 0 {
            assert!(len <= cap, "zmq_getsockopt wrote a length {len} over {cap}");
        }
        assert!(
            out[cap.min(BUF)..].iter().all(|&b| b == CANARY) || optval.is_null(),
            "zmq_getsockopt wrote past the {cap} bytes given"
        );
    }

    fn endpoint(&mut self, code: u8, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let mut kind = input.byte() % ep::COUNT;
        let ty = match target {
            Target::Live { index, .. } => Some(self.socks[index].ty),
            Target::Bad => None,
        };
        let udp_type = matches!(ty, Some(14 | 15 | 18));
        if kind == ep::UDP && udp_type {
            // It would open a udp socket.
            return;
        }
        if kind == ep::TCP_PORT && !matches!(code, op::BIND | op::UNBIND) {
            kind = ep::TCP_BAD_PORT;
        }
        let text = self.endpoint_text(kind, input);
        let addr: *const c_char = match &text {
            Some(t) => t.as_ptr().cast(),
            None => null(),
        };
        clear_errno();
        // SAFETY: `addr` is NULL or a NUL-terminated string the body owns.
        let rc = unsafe {
            match code {
                op::BIND => zmq_bind(handle, addr),
                op::CONNECT => zmq_connect(handle, addr),
                op::UNBIND => zmq_unbind(handle, addr),
                _ => zmq_disconnect(handle, addr),
            }
        };
        const PARSE: [c_int; 6] = [
            libc::EINVAL,
            libc::EPROTONOSUPPORT,
            ENOCOMPATPROTO,
            libc::ENAMETOOLONG,
            libc::ENOTSUP,
            EMTHREAD,
        ];
        let live: &'static [c_int] = match code {
            op::BIND => &[
                libc::EINVAL,
                libc::EPROTONOSUPPORT,
                ENOCOMPATPROTO,
                libc::ENAMETOOLONG,
                libc::ENOTSUP,
                EMTHREAD,
                libc::EADDRINUSE,
                libc::EADDRNOTAVAIL,
                libc::EACCES,
                libc::ENODEV,
            ],
            op::CONNECT => &PARSE,
            _ => &[
                libc::EINVAL,
                libc::EPROTONOSUPPORT,
                ENOCOMPATPROTO,
                libc::ENAMETOOLONG,
                libc::ENOTSUP,
                libc::ENOENT,
            ],
        };
        let errors = self.sock_errors(target, live);
        let e = self.check("zmq_bind/connect/unbind/disconnect", rc, errors);
        let fresh = matches!(
            target,
            Target::Live {
                terminating: false,
                ..
            }
        );
        if fresh
            && matches!(
                kind,
                ep::NULL | ep::INPROC_EMPTY | ep::NO_SCHEME | ep::TCP_BAD_PORT
            )
        {
            assert_eq!(rc, -1, "a malformed endpoint taken");
        }
        // (`ZMQ_USE_FD` or `ZMQ_BINDTODEVICE` set: every endpoint is `ENOTSUP` first.)
        if fresh && kind == ep::UDP {
            assert!(
                e == ENOCOMPATPROTO || e == libc::ENOTSUP,
                "udp:// on a socket of type {ty:?}: errno {e}"
            );
        }
        if fresh && kind == ep::IPC_TOO_LONG {
            assert!(
                e == libc::ENAMETOOLONG || e == libc::ENOTSUP,
                "an ipc path too long: errno {e}"
            );
        }
        if rc == 0 && code == op::BIND && matches!(kind, ep::TCP_ANY_PORT | ep::TCP_PORT) {
            self.record_tcp(handle);
        }
    }

    /// Keep the endpoint a `tcp://` bind resolved to, to connect to.
    fn record_tcp(&mut self, handle: *mut c_void) {
        let mut out = [0u8; BUF];
        let mut len = BUF;
        // SAFETY: `out` has `len` bytes; `len` is the body's.
        let rc =
            unsafe { zmq_getsockopt(handle, LAST_ENDPOINT, out.as_mut_ptr().cast(), &raw mut len) };
        assert_eq!(rc, 0, "ZMQ_LAST_ENDPOINT after a bind");
        let text = CStr::from_bytes_until_nul(&out[..len]).expect("a NUL-terminated endpoint");
        let text = text.to_bytes();
        assert!(
            text.starts_with(b"tcp://127.0.0.1:") && !text.ends_with(b":*"),
            "ZMQ_LAST_ENDPOINT {:?}",
            String::from_utf8_lossy(text)
        );
        if self.tcp.len() < 4 {
            self.tcp.push(text.to_vec());
        }
    }

    /// The endpoint text of a kind (NUL-terminated), or None for NULL.
    fn endpoint_text(&self, kind: u8, input: &mut Cursor<'_>) -> Option<Vec<u8>> {
        let mut t: Vec<u8> = match kind {
            ep::INPROC => {
                let name = pick(b"abc", usize::from(input.byte()), b'a');
                [&b"inproc://"[..], &[name]].concat()
            }
            ep::INPROC_ANY => {
                let n = usize::from(input.byte() % 80);
                [b"inproc://", input.take(n)].concat()
            }
            ep::TCP_ANY_PORT => b"tcp://127.0.0.1:*".to_vec(),
            ep::TCP_BOUND => {
                let b = input.byte();
                let n = self.tcp.len().max(1);
                self.tcp
                    .get(usize::from(b) % n)
                    .cloned()
                    .unwrap_or_default()
            }
            ep::NO_SCHEME => {
                let n = usize::from(input.byte() % 64);
                input
                    .take(n)
                    .iter()
                    .map(|&b| if b == b':' { b'_' } else { b })
                    .collect()
            }
            ep::UNKNOWN => {
                let scheme = pick(&UNKNOWN_SCHEMES, usize::from(input.byte()), "pgm");
                let n = usize::from(input.byte() % 32);
                [scheme.as_bytes(), b"://", input.take(n)].concat()
            }
            ep::IPC_TOO_LONG => {
                let n = 107 + usize::from(input.byte() % 64);
                let mut t = b"ipc://@".to_vec();
                t.resize(t.len() + n, b'z');
                t
            }
            ep::UDP => b"udp://127.0.0.1:*".to_vec(),
            ep::TCP_BAD_PORT => {
                // No `:` after the `x`: the host must stay 127.0.0.1 (a name would be
                // looked up).
                let n = usize::from(input.byte() % 16);
                let rest = input
                    .take(n)
                    .iter()
                    .map(|&b| if b == b':' { b'_' } else { b });
                b"tcp://127.0.0.1:x".iter().copied().chain(rest).collect()
            }
            ep::NULL => return None,
            ep::INPROC_EMPTY => b"inproc://".to_vec(),
            _ => format!("tcp://127.0.0.1:{}", input.u16()).into_bytes(),
        };
        if kind == ep::TCP_BOUND && t.is_empty() {
            t = b"tcp://127.0.0.1:*".to_vec();
        }
        t.push(0);
        Some(t)
    }

    /// Flags for a send or receive: any, with `ZMQ_DONTWAIT` always.
    fn flags(b: u8) -> c_int {
        (c_int::from(b) & 0x0F) | DONTWAIT
    }

    fn send(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let shape = input.byte();
        let flags = Self::flags(input.byte());
        let len = length_of(shape >> 2, input).min(BUF);
        let mut body = [b'v'; BUF];
        let constant = shape & 2 != 0;
        if shape & 3 == 0 {
            // The frame's first bytes (at most 64; the rest are `v`).
            let given = input.take(len.min(64));
            body[..given.len()].copy_from_slice(given);
        }
        let len = if constant {
            len.min(CONSTANT.len())
        } else {
            len
        };
        let buf: *const c_void = match (shape & 1 != 0, constant) {
            (true, _) => null(),
            (false, true) => CONSTANT.as_ptr().cast(),
            (false, false) => body.as_ptr().cast(),
        };
        clear_errno();
        // SAFETY: `buf` is NULL or a buffer of at least `len` bytes; `CONSTANT` is static
        // and never changes, as `zmq_send_const` asks.
        let rc = unsafe {
            if constant {
                zmq_send_const(handle, buf, len, flags)
            } else {
                zmq_send(handle, buf, len, flags)
            }
        };
        self.sent_result(rc, len, flags, target, buf.is_null() && len > 0, || {
            if constant {
                CONSTANT[..len].to_vec()
            } else {
                body[..len].to_vec()
            }
        });
    }

    /// Check a send's result; keep what was sent.
    fn sent_result(
        &mut self,
        rc: c_int,
        len: usize,
        flags: c_int,
        target: Target,
        null_buffer: bool,
        sent: impl FnOnce() -> Vec<u8>,
    ) {
        const SEND: [c_int; 6] = [
            libc::EAGAIN,
            libc::ENOTSUP,
            libc::EINVAL,
            EFSM,
            libc::EHOSTUNREACH,
            libc::EMSGSIZE,
        ];
        if null_buffer {
            // Checked before the socket (libzmq would read from NULL).
            return self.expect_errno("zmq_send", rc, libc::EFAULT);
        }
        let errors = self.sock_errors(target, &SEND);
        if self.check("zmq_send", rc, errors) == 0 {
            assert_eq!(
                usize::try_from(rc).ok(),
                Some(len),
                "zmq_send returns the size"
            );
            if flags & 2 == 0 {
                self.outcome.sent += 1;
                if self.sent.len() < 16 {
                    self.sent.push(sent());
                }
            }
        }
    }

    fn recv(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let shape = input.byte();
        let flags = Self::flags(input.byte());
        let len = length_of(shape >> 1, input).min(BUF);
        let mut out = [CANARY; BUF + 16];
        let buf: *mut c_void = if shape & 1 == 0 {
            out.as_mut_ptr().cast()
        } else {
            null_mut()
        };
        clear_errno();
        // SAFETY: `buf` is NULL or `out`, with at least `len` bytes.
        let rc = unsafe { zmq_recv(handle, buf, len, flags) };
        if buf.is_null() && len > 0 {
            return self.expect_errno("zmq_recv", rc, libc::EFAULT);
        }
        let errors = self.sock_errors(target, &[libc::EAGAIN, libc::ENOTSUP, EFSM]);
        if self.check("zmq_recv", rc, errors) == 0 {
            let size = usize::try_from(rc).unwrap_or(0);
            let copied = size.min(len);
            if !buf.is_null() {
                self.received(&out[..copied], size);
            }
        }
        assert!(
            buf.is_null() || out[len..].iter().all(|&b| b == CANARY),
            "zmq_recv wrote past the {len} bytes given"
        );
    }

    /// A frame received: `bytes` of its `size` seen.
    fn received(&mut self, bytes: &[u8], size: usize) {
        self.outcome.received += 1;
        if bytes.len() == size && size > 0 && self.sent.iter().any(|s| s == bytes) {
            self.outcome.round_trips += 1;
        }
    }

    fn msg_init(&mut self, input: &mut Cursor<'_>) {
        let (msg, slot) = self.msg_arg(input.byte());
        let kind = input.byte();
        let size = usize::from(input.byte()) * 4;
        let mut buf = [0u8; BUF * 4];
        if kind % 9 == 3 {
            // `zmq_msg_init_buffer`'s first bytes (at most 16).
            let given = input.take(size.min(16));
            buf[..given.len()].copy_from_slice(given);
        }
        if let Some(i) = slot.filter(|&i| self.msg_live[i]) {
            // Initialising a live message would leak its content: close it first.
            assert_eq!(zmq_msg_close(msg), 0);
            self.msg_live[i] = false;
        }
        let data = CONSTANT.as_ptr().cast_mut().cast::<c_void>();
        let small = size.min(CONSTANT.len());
        let free: Option<FreeFn> = Some(count_free);
        clear_errno();
        // SAFETY: `msg` is NULL or one of the body's messages; the buffers are NULL or
        // have the sizes given; `CONSTANT` is static, never written.
        let (rc, expect) = unsafe {
            match kind % 9 {
                0 => (zmq_msg_init(msg), 0),
                1 => (zmq_msg_init_size(msg, size), 0),
                2 => (zmq_msg_init_size(msg, usize::MAX - size), libc::ENOMEM),
                3 => (zmq_msg_init_buffer(msg, buf.as_ptr().cast(), size), 0),
                4 => (zmq_msg_init_buffer(msg, null(), size.max(1)), libc::EFAULT),
                5 => (zmq_msg_init_data(msg, data, small, free, null_mut()), 0),
                6 => (
                    zmq_msg_init_data(msg, null_mut(), size.max(1), free, null_mut()),
                    libc::EINVAL,
                ),
                7 => (zmq_msg_init_data(msg, data, small, None, null_mut()), 0),
                _ => (
                    zmq_msg_init_size(msg, isize::MAX as usize + 1),
                    libc::ENOMEM,
                ),
            }
        };
        let expect = if msg.is_null() { libc::EFAULT } else { expect };
        if expect == 0 {
            assert_eq!(rc, 0, "zmq_msg_init* ({})", kind % 9);
            if let Some(i) = slot {
                self.msg_live[i] = true;
            }
            if kind % 9 == 5 {
                self.frees_due += 1;
            }
        } else {
            self.expect_errno("zmq_msg_init*", rc, expect);
        }
    }

    fn msg_send_recv(&mut self, code: u8, input: &mut Cursor<'_>) {
        let (msg, slot) = self.msg_arg(input.byte());
        let (handle, target) = self.sock_arg(input.byte());
        let flags = Self::flags(input.byte());
        let live = self.msg_is_live(slot);
        let before = if live { msg_bytes(msg) } else { Vec::new() };
        clear_errno();
        let rc = if code == op::MSG_SEND {
            zmq_msg_send(msg, handle, flags)
        } else {
            zmq_msg_recv(msg, handle, flags)
        };
        let errors: &[c_int] = match target {
            Target::Bad => &[libc::ENOTSOCK],
            _ if !live => &[libc::EFAULT],
            _ if code == op::MSG_SEND => self.sock_errors(
                target,
                &[
                    libc::EAGAIN,
                    libc::ENOTSUP,
                    libc::EINVAL,
                    EFSM,
                    libc::EHOSTUNREACH,
                    libc::EMSGSIZE,
                ],
            ),
            _ => self.sock_errors(target, &[libc::EAGAIN, libc::ENOTSUP, EFSM]),
        };
        if self.check("zmq_msg_send/recv", rc, errors) != 0 {
            if live {
                // A message not sent (or the old one, not received into) stays.
                assert_eq!(msg_bytes(msg), before, "a failed call changed the message");
            }
            return;
        }
        let size = usize::try_from(rc).unwrap_or(0);
        if code == op::MSG_SEND {
            assert_eq!(size, before.len(), "zmq_msg_send returns the size");
            assert_eq!(zmq_msg_size(msg), 0, "a sent message is emptied");
            if flags & 2 == 0 {
                self.outcome.sent += 1;
                if self.sent.len() < 16 {
                    self.sent.push(before);
                }
            }
        } else {
            let bytes = msg_bytes(msg);
            assert_eq!(bytes.len(), size, "zmq_msg_recv returns the size");
            self.received(&bytes, size);
        }
    }

    fn msg_query(&mut self, input: &mut Cursor<'_>) {
        let (msg, slot) = self.msg_arg(input.byte());
        let kind = input.byte();
        let arg = i32_of(input);
        let live = self.msg_is_live(slot);
        clear_errno();
        match kind % 10 {
            0 => {
                let p = zmq_msg_data(msg);
                if live {
                    assert!(!p.is_null(), "zmq_msg_data of a live message");
                } else {
                    assert!(p.is_null(), "zmq_msg_data of no message");
                    self.failed("zmq_msg_data", &[libc::EFAULT]);
                }
            }
            1 => {
                let n = zmq_msg_size(msg);
                assert!(live || n == 0, "zmq_msg_size of no message: {n}");
                let more = zmq_msg_more(msg);
                assert!(more == 0 || (live && more == 1));
            }
            2 => {
                let rc = zmq_msg_get(msg, arg % 5);
                let allowed: &[c_int] = if live {
                    &[libc::EINVAL]
                } else {
                    &[libc::EFAULT]
                };
                // ZMQ_SRCFD answers -1 with no error.
                if rc == -1 && zmq_errno() != 0 {
                    self.failed("zmq_msg_get", allowed);
                }
            }
            3 => {
                let rc = zmq_msg_set(msg, arg, arg);
                let e = if live { libc::EINVAL } else { libc::EFAULT };
                self.expect_errno("zmq_msg_set", rc, e);
            }
            4 | 5 => {
                let name: &[u8] = pick(
                    &[
                        &b"Socket-Type\0"[..],
                        b"Routing-Id\0",
                        b"User-Id\0",
                        b"X-Nope\0",
                        b"\xff\0",
                    ],
                    usize::from(kind / 10),
                    b"\0",
                );
                let property: *const c_char = if kind % 10 == 4 {
                    name.as_ptr().cast()
                } else {
                    null()
                };
                // SAFETY: `property` is NULL or a NUL-terminated string.
                let p = unsafe { zmq_msg_gets(msg, property) };
                if p.is_null() {
                    self.failed("zmq_msg_gets", &[libc::EINVAL, libc::EFAULT]);
                } else {
                    // SAFETY: a non-NULL answer is a NUL-terminated string.
                    let _ = unsafe { CStr::from_ptr(p) };
                }
            }
            6 => {
                let _ = zmq_msg_routing_id(msg);
                let rc = zmq_msg_set_routing_id(msg, arg as u32);
                if !live || arg == 0 {
                    self.check("zmq_msg_set_routing_id", rc, &[libc::EINVAL, libc::EFAULT]);
                    assert_eq!(rc, -1);
                } else {
                    assert_eq!(rc, 0, "zmq_msg_set_routing_id");
                }
            }
            7 | 8 => {
                let n = usize::try_from(arg).unwrap_or(0) % 300;
                let mut group = vec![b'g'; n];
                let given = input.take(n.min(32));
                group[..given.len()].copy_from_slice(given);
                group.push(0);
                let g: *const c_char = if kind % 10 == 7 {
                    group.as_ptr().cast()
                } else {
                    null()
                };
                // SAFETY: `g` is NULL or a NUL-terminated string.
                let rc = unsafe { zmq_msg_set_group(msg, g) };
                let text_len = group.iter().position(|&b| b == 0).unwrap_or(0);
                if live && !g.is_null() && text_len <= 255 {
                    assert_eq!(rc, 0, "zmq_msg_set_group");
                    let p = zmq_msg_group(msg);
                    assert!(!p.is_null());
                    // SAFETY: a non-NULL answer is a NUL-terminated string.
                    let back = unsafe { CStr::from_ptr(p) }.to_bytes();
                    assert_eq!(back, &group[..text_len], "the group set");
                } else {
                    self.check("zmq_msg_set_group", rc, &[libc::EINVAL, libc::EFAULT]);
                    assert_eq!(rc, -1);
                }
            }
            _ => {
                let p = zmq_msg_group(msg);
                if live {
                    assert!(!p.is_null(), "zmq_msg_group of a live message");
                } else {
                    assert!(p.is_null());
                    self.failed("zmq_msg_group", &[libc::EFAULT]);
                }
            }
        }
    }

    fn poll(&mut self, input: &mut Cursor<'_>) {
        let b = input.byte();
        let n = c_int::from(b % 6) - 1;
        let mut items: Vec<zmq_pollitem_t> = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..n.max(0) {
            let sel = input.byte();
            let events = c_short::from(input.byte());
            let (socket, target, fd) = match self.sock_arg(sel) {
                // A NULL socket is a file descriptor's item.
                (h, _) if h.is_null() || sel >= 240 => (
                    null_mut(),
                    None,
                    pick(&[-1, 0, 1_000_000], usize::from(sel), -1),
                ),
                (h, t) => (h, Some(t), -1),
            };
            targets.push(target);
            items.push(zmq_pollitem_t {
                socket,
                fd,
                events,
                revents: 0x5555,
            });
        }
        let ptr = if b & 0x80 != 0 {
            null_mut()
        } else {
            items.as_mut_ptr()
        };
        clear_errno();
        // SAFETY: `ptr` is NULL or `items`, with `n` items (n <= items.len()).
        let rc = unsafe { zmq_poll(ptr, n, 0) };
        let sockets: Vec<Target> = targets.iter().flatten().copied().collect();
        if n < 0 {
            return self.expect_errno("zmq_poll", rc, libc::EINVAL);
        }
        if n > 0 && ptr.is_null() {
            return self.expect_errno("zmq_poll", rc, libc::EFAULT);
        }
        if sockets.contains(&Target::Bad) {
            return self.expect_errno("zmq_poll", rc, libc::ENOTSOCK);
        }
        if sockets.iter().any(|t| {
            matches!(
                t,
                Target::Live {
                    terminating: true,
                    ..
                }
            )
        }) {
            return self.expect_errno("zmq_poll", rc, ETERM);
        }
        assert!((0..=n).contains(&rc), "zmq_poll: {rc} of {n}");
        let ready = items.iter().filter(|i| i.revents != 0).count();
        assert_eq!(
            usize::try_from(rc).ok(),
            Some(ready),
            "zmq_poll counts the ready"
        );
        for (item, target) in items.iter().zip(&targets) {
            if target.is_some() {
                assert_eq!(item.revents & !item.events & 3, 0, "revents not asked for");
            }
        }
    }

    /// The one bounded wait of an input: a poll for a frame on a socket, when a message
    /// is in flight.
    fn wait(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let in_flight = self.outcome.sent > self.outcome.received;
        let timeout = match target {
            Target::Live {
                terminating: false, ..
            } if in_flight && !self.waited => {
                self.waited = true;
                WAIT_MS
            }
            _ => 0,
        };
        let mut item = zmq_pollitem_t {
            socket: handle,
            fd: -1,
            events: POLLIN as c_short,
            revents: 0,
        };
        clear_errno();
        // SAFETY: one item, the body's.
        let rc = unsafe { zmq_poll(&raw mut item, 1, timeout) };
        let errors = self.sock_errors(target, &[]);
        self.check("zmq_poll", rc, errors);
        assert!((-1..=1).contains(&rc));
    }

    fn poller(&mut self, input: &mut Cursor<'_>) {
        let kind = input.byte();
        let which = input.byte();
        let handle = match which % 4 {
            0 | 1 => self.poller,
            2 => self.dead_poller,
            _ => self.bogus_ptr(),
        };
        let live = !handle.is_null() && handle == self.poller;
        let bad_poller: &[c_int] = &[libc::EFAULT];
        let (socket, target) = self.sock_arg(input.byte());
        let events = c_short::from_be_bytes([input.byte() % 32, input.byte()]);
        let fd = pick(&[-1, 0, 1_000_000, c_int::MIN], usize::from(which / 4), -1);
        let user = self.bogus_ptr();
        clear_errno();
        match kind % 12 {
            0 => {
                if self.poller.is_null() {
                    let p = zmq_poller_new();
                    assert!(!p.is_null(), "zmq_poller_new");
                    self.poller = p;
                }
            }
            1 => {
                let mut h = handle;
                let pp: *mut *mut c_void = if which & 0x80 != 0 {
                    null_mut()
                } else {
                    &raw mut h
                };
                // SAFETY: `pp` is NULL or the body's handle variable.
                let rc = unsafe { zmq_poller_destroy(pp) };
                if live && !pp.is_null() {
                    assert_eq!(rc, 0, "zmq_poller_destroy");
                    assert!(h.is_null());
                    self.dead_poller = self.poller;
                    self.poller = null_mut();
                } else {
                    self.expect_errno("zmq_poller_destroy", rc, libc::EFAULT);
                }
            }
            2 => {
                let rc = zmq_poller_size(handle);
                self.poller_result("zmq_poller_size", rc, live, bad_poller, &[]);
            }
            k @ (3..=5) => {
                let rc = match k {
                    3 => zmq_poller_add(handle, socket, user, events),
                    4 => zmq_poller_modify(handle, socket, events),
                    _ => zmq_poller_remove(handle, socket),
                };
                if target == Target::Bad {
                    // The socket is checked first.
                    return self.expect_errno("zmq_poller_add/modify/remove", rc, libc::ENOTSOCK);
                }
                self.poller_result(
                    "zmq_poller_add/modify/remove",
                    rc,
                    live,
                    bad_poller,
                    &[libc::EINVAL],
                );
            }
            k @ (6..=8) => {
                let rc = match k {
                    6 => zmq_poller_add_fd(handle, fd, user, events),
                    7 => zmq_poller_modify_fd(handle, fd, events),
                    _ => zmq_poller_remove_fd(handle, fd),
                };
                if fd < 0 {
                    return self.expect_errno("zmq_poller_*_fd", rc, libc::EBADF);
                }
                self.poller_result("zmq_poller_*_fd", rc, live, bad_poller, &[libc::EINVAL]);
            }
            9 => {
                let mut fd_out: c_int = -7;
                // SAFETY: `fd_out` is a writable int for the duration of the call.
                let rc = unsafe { zmq_poller_fd(handle, &raw mut fd_out) };
                self.poller_result("zmq_poller_fd", rc, live, bad_poller, &[libc::EINVAL]);
                // A descriptor given is open (the poller's own, left to it).
                if rc == 0 {
                    // SAFETY: fcntl on any int is defined; it only reads the flags.
                    let open = unsafe { libc::fcntl(fd_out, libc::F_GETFD) } != -1;
                    assert!(open, "zmq_poller_fd gave {fd_out}, not an open descriptor");
                }
            }
            k => {
                let mut out: Vec<zmq_poller_event_t> = (0..4)
                    .map(|_| zmq_poller_event_t {
                        socket: null_mut(),
                        fd: 0,
                        user_data: null_mut(),
                        events: 0,
                    })
                    .collect();
                let n = c_int::from(which % 6) - 1;
                let ptr = if which & 0x80 != 0 {
                    null_mut()
                } else {
                    out.as_mut_ptr()
                };
                // SAFETY: `ptr` is NULL or `out`, with 4 >= n events.
                let rc = unsafe {
                    if k == 10 {
                        zmq_poller_wait(handle, ptr, 0)
                    } else {
                        zmq_poller_wait_all(handle, ptr, n, 0)
                    }
                };
                let waiting = [
                    libc::EAGAIN,
                    libc::EFAULT,
                    libc::EINVAL,
                    libc::ENOTSOCK,
                    ETERM,
                ];
                self.poller_result("zmq_poller_wait", rc, live, bad_poller, &waiting);
                if k != 10 {
                    assert!(rc <= n.max(0), "zmq_poller_wait_all: {rc} of {n}");
                }
            }
        }
    }

    fn poller_result(
        &mut self,
        what: &str,
        rc: c_int,
        live: bool,
        bad: &[c_int],
        allowed: &[c_int],
    ) {
        if live {
            self.check(what, rc, allowed);
        } else {
            assert_eq!(rc, -1, "{what} on no poller");
            self.failed(what, bad);
        }
    }

    fn z85(&mut self, input: &mut Cursor<'_>) {
        let kind = input.byte();
        let n = usize::from(input.byte() % 72);
        let bytes = input.take(n);
        if kind & 1 == 0 {
            // Encode `n` bytes (any length: not a multiple of 4 is EINVAL).
            let mut dest = vec![CANARY; n * 5 / 4 + 1 + 16];
            let need = n * 5 / 4 + 1;
            let d: *mut c_char = if kind & 2 == 0 {
                dest.as_mut_ptr().cast()
            } else {
                null_mut()
            };
            let src: *const u8 = if kind & 4 == 0 || n == 0 {
                bytes.as_ptr()
            } else {
                null()
            };
            let bytes_len = bytes.len();
            clear_errno();
            // SAFETY: `src` is NULL or `bytes`, whose length is passed; `d` is NULL or
            // `dest`, with `len * 5 / 4 + 1` bytes and more.
            let p = unsafe { zmq_z85_encode(d, src, bytes_len) };
            let ok =
                !d.is_null() && (!src.is_null() || bytes_len == 0) && bytes_len.is_multiple_of(4);
            if !ok {
                assert!(p.is_null(), "zmq_z85_encode took bad arguments");
                self.failed("zmq_z85_encode", &[libc::EINVAL]);
                return;
            }
            assert_eq!(p, d, "zmq_z85_encode returns dest");
            let need_here = bytes_len * 5 / 4 + 1;
            assert!(need_here <= need);
            assert_eq!(dest[need_here - 1], 0, "zmq_z85_encode ends with a NUL");
            assert!(
                dest[need_here..].iter().all(|&b| b == CANARY),
                "zmq_z85_encode overran"
            );
            let mut back = vec![CANARY; bytes_len + 16];
            // SAFETY: `dest` is NUL-terminated text of `bytes_len * 5 / 4` characters;
            // `back` has `bytes_len` bytes and more.
            let q = unsafe { zmq_z85_decode(back.as_mut_ptr(), dest.as_ptr().cast()) };
            assert_eq!(q, back.as_mut_ptr(), "zmq_z85_decode of our encoding");
            assert_eq!(&back[..bytes_len], bytes, "Z85 round trip");
        } else {
            // Decode arbitrary text (NUL-terminated where it has one).
            let mut text = bytes.to_vec();
            text.push(0);
            let len = text.iter().position(|&b| b == 0).unwrap_or(0);
            let mut dest = vec![CANARY; len * 4 / 5 + 16];
            let d: *mut u8 = if kind & 2 == 0 {
                dest.as_mut_ptr()
            } else {
                null_mut()
            };
            let s: *const c_char = if kind & 4 == 0 {
                text.as_ptr().cast()
            } else {
                null()
            };
            clear_errno();
            // SAFETY: `s` is NULL or NUL-terminated text of `len` characters; `d` is NULL
            // or `dest`, with `len * 4 / 5` bytes and more.
            let p = unsafe { zmq_z85_decode(d, s) };
            if p.is_null() {
                self.failed("zmq_z85_decode", &[libc::EINVAL]);
                return;
            }
            assert!(!d.is_null() && !s.is_null() && len % 5 == 0);
            let out = len * 4 / 5;
            assert!(
                dest[out..].iter().all(|&b| b == CANARY),
                "zmq_z85_decode overran"
            );
            let mut again = vec![0u8; len + 1];
            // SAFETY: `dest` has `out` bytes (a multiple of 4); `again` has `len + 1`.
            let q = unsafe { zmq_z85_encode(again.as_mut_ptr().cast(), dest.as_ptr(), out) };
            assert!(!q.is_null());
            assert_eq!(&again[..len], &text[..len], "Z85 text decoded encodes back");
        }
    }

    fn join(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let kind = input.byte();
        let n = usize::from(input.byte()) * 2;
        let mut group = vec![b'g'; n];
        let given = input.take(n.min(16));
        group[..given.len()].copy_from_slice(given);
        group.push(0);
        let g: *const c_char = if kind & 2 == 0 {
            group.as_ptr().cast()
        } else {
            null()
        };
        clear_errno();
        // SAFETY: `g` is NULL or a NUL-terminated string.
        let rc = unsafe {
            if kind & 1 == 0 {
                zmq_join(handle, g)
            } else {
                zmq_leave(handle, g)
            }
        };
        let errors = self.sock_errors(target, &[libc::EINVAL, libc::ENOTSUP]);
        self.check("zmq_join/leave", rc, errors);
    }

    fn sendiov(&mut self, input: &mut Cursor<'_>) {
        let (handle, target) = self.sock_arg(input.byte());
        let shape = input.byte();
        let flags = Self::flags(input.byte());
        let count = usize::from(shape % 4);
        let mut bodies: Vec<Vec<u8>> = Vec::new();
        for _ in 0..count {
            let n = usize::from(input.byte() % 16);
            bodies.push(input.take(n).to_vec());
        }
        let mut iov: Vec<libc::iovec> = bodies
            .iter_mut()
            .enumerate()
            .map(|(i, b)| libc::iovec {
                // A NULL base with a length is taken as an empty frame.
                iov_base: if shape & (0x10 << i) != 0 {
                    null_mut()
                } else {
                    b.as_mut_ptr().cast()
                },
                iov_len: b.len(),
            })
            .collect();
        let ptr = if shape & 4 != 0 {
            null_mut()
        } else {
            iov.as_mut_ptr()
        };
        clear_errno();
        // SAFETY: `ptr` is NULL or `iov`, `count` iovecs over the body's buffers.
        let rc = unsafe { zmq_sendiov(handle, ptr, count, flags) };
        let errors: &[c_int] = match target {
            Target::Bad => &[libc::ENOTSOCK],
            _ if count == 0 || ptr.is_null() => &[libc::EINVAL],
            _ => self.sock_errors(
                target,
                &[
                    libc::EAGAIN,
                    libc::ENOTSUP,
                    libc::EINVAL,
                    EFSM,
                    libc::EHOSTUNREACH,
                    libc::EMSGSIZE,
                ],
            ),
        };
        if self.check("zmq_sendiov", rc, errors) == 0 {
            self.outcome.sent += 1;
        }
    }

    fn misc(&mut self, input: &mut Cursor<'_>) {
        let kind = input.byte();
        let n = usize::from(input.byte() % 48);
        let mut text = input.take(n).to_vec();
        text.push(0);
        let t: *const c_char = if kind & 0x10 == 0 {
            text.as_ptr().cast()
        } else {
            null()
        };
        match kind % 3 {
            0 => {
                // SAFETY: `t` is NULL or a NUL-terminated string.
                let rc = unsafe { zmq_has(t) };
                assert!(rc == 0 || rc == 1, "zmq_has: {rc}");
            }
            1 => {
                let mut v = [-1 as c_int; 3];
                let p = |i: usize, v: &mut [c_int; 3]| -> *mut c_int {
                    if kind & (0x20 << i) != 0 {
                        null_mut()
                    } else {
                        (&raw mut v[i]).cast()
                    }
                };
                let (a, b, c) = (p(0, &mut v), p(1, &mut v), p(2, &mut v));
                // SAFETY: each is NULL or one of the body's `int`s.
                unsafe { zmq_version(a, b, c) };
                assert!(v[0] == -1 || v[0] == 4);
            }
            _ => {
                let mut public = [CANARY; 41 + 16];
                let out: *mut c_char = if kind & 0x40 == 0 {
                    public.as_mut_ptr().cast()
                } else {
                    null_mut()
                };
                clear_errno();
                // SAFETY: `out` is NULL or 41 bytes and more; `t` NULL or a string.
                let rc = unsafe { zmq_curve_public(out, t) };
                self.check("zmq_curve_public", rc, &[libc::EINVAL]);
                if rc == 0 {
                    assert_eq!(public[40], 0);
                }
                assert!(
                    public[41..].iter().all(|&b| b == CANARY),
                    "zmq_curve_public overran"
                );
            }
        }
    }
}

/// The bytes of a live message.
fn msg_bytes(msg: *mut zmq_msg_t) -> Vec<u8> {
    let size = zmq_msg_size(msg);
    let data = zmq_msg_data(msg);
    if size == 0 || data.is_null() {
        return Vec::new();
    }
    // SAFETY: a live message's data has its size in bytes, valid until it changes.
    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec()
}

/// `zmq_strerror`'s text.
fn strerror(e: c_int) -> String {
    let p = zmq_strerror(e);
    assert!(!p.is_null(), "zmq_strerror({e}) is NULL");
    // SAFETY: `zmq_strerror` returns a NUL-terminated static text.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Four bytes as an `int` (big-endian).
fn i32_of(input: &mut Cursor<'_>) -> c_int {
    c_int::from_be_bytes([input.byte(), input.byte(), input.byte(), input.byte()])
}

/// An option number: 0 to 120 as they are (libzmq's go to 116), others from
/// [`ODD_OPTIONS`]. `ZMQ_USE_FD` (89) gives the socket a descriptor to own: arbitrary
/// numbers would hand it descriptors the process uses elsewhere (the caller's contract
/// forbids it, in libzmq too), so it becomes an unknown option here.
fn option_of(b: u8) -> c_int {
    const USE_FD: c_int = 89;
    match c_int::from(b) {
        USE_FD => -1,
        n if n <= 120 => n,
        _ => pick(&ODD_OPTIONS, usize::from(b), -1),
    }
}

/// A length from [`LENGTHS`] (the last: the next byte).
fn length_of(b: u8, input: &mut Cursor<'_>) -> usize {
    match pick(&LENGTHS, usize::from(b), 0) {
        usize::MAX => usize::from(input.byte()),
        n => n,
    }
}

/// Seeds: meaningful sequences (see the tests of what each reaches).
pub(super) fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    // Socket arguments: table entries 0.., NULL 8, a context 9, a buffer 10.
    const S0: u8 = 0;
    const S1: u8 = 1;
    const NULL_SOCK: u8 = 8;
    // Option values are native `int`s; a context option's value is read big-endian.
    let int = |v: i32| v.to_ne_bytes();
    let be = |v: i32| v.to_be_bytes();
    let mut seeds = Vec::new();

    // PULL binds inproc://a, PUSH connects (and queues at once), a frame goes and comes back whole; the same
    // with zmq_msg_send and zmq_msg_recv on inproc://b.
    let mut round = vec![op::SOCKET, 0, 8, op::SOCKET, 0, 7];
    round.extend([op::BIND, S1, ep::INPROC, 0]);
    round.extend([op::CONNECT, S0, ep::INPROC, 0]);
    // zmq_send: buffer, length kind 10 (5 bytes), flags 0.
    round.extend([op::SEND, S0, 10 << 2, 0]);
    round.extend(b"hello");
    round.extend([op::WAIT, S1]);
    // zmq_recv into the buffer, length kind 9 (256).
    round.extend([op::RECV, S1, 9 << 1, 0]);
    seeds.push(("inproc_round_trip", round.clone()));

    let mut msgs = vec![op::SOCKET, 0, 8, op::SOCKET, 0, 7];
    msgs.extend([op::BIND, S1, ep::INPROC, 1, op::CONNECT, S0, ep::INPROC, 1]);
    // Message 0 from a 4-byte buffer (size byte 1 = 4 bytes), sent by the PUSH.
    msgs.extend([op::MSG_INIT, 0, 3, 1]);
    msgs.extend(b"ping");
    msgs.extend([op::MSG_SEND, 0, S0, 0, op::WAIT, S1]);
    msgs.extend([op::MSG_INIT, 1, 0, 0, op::MSG_RECV, 1, S1, 0]);
    msgs.extend([op::MSG_COPY_MOVE, 0, 2, 1, op::MSG_COPY_MOVE, 1, 3, 2]);
    msgs.extend([
        op::MSG_QUERY,
        3,
        1,
        0,
        0,
        0,
        0,
        op::MSG_CLOSE,
        3,
        op::MSG_CLOSE,
        3,
    ]);
    seeds.push(("msg_round_trip", msgs));

    // Over tcp: bind 127.0.0.1:*, connect to what it resolved to.
    let mut tcp = vec![op::SOCKET, 0, 8, op::SOCKET, 0, 7];
    tcp.extend([
        op::BIND,
        S1,
        ep::TCP_ANY_PORT,
        op::CONNECT,
        S0,
        ep::TCP_BOUND,
        0,
    ]);
    tcp.extend([op::SEND, S0, 10 << 2, 0]);
    tcp.extend(b"overt");
    tcp.extend([op::WAIT, S1, op::RECV, S1, 9 << 1, 0]);
    seeds.push(("tcp_round_trip", tcp));

    // A socket closed, then every call on it: ENOTSOCK (zmq_close twice included).
    let mut closed = vec![op::SOCKET, 0, 5, op::CLOSE, S0, op::CLOSE, S0];
    closed.extend([op::SETSOCKOPT, S0, 23, 3 << 1]);
    closed.extend(int(10));
    closed.extend([op::GETSOCKOPT, S0, 16, 3 << 2]);
    closed.extend([op::BIND, S0, ep::INPROC, 0, op::CONNECT, S0, ep::INPROC, 0]);
    closed.extend([op::SEND, S0, 1 << 2, 0, b'x', op::RECV, S0, 0, 0]);
    closed.extend([op::MSG_INIT, 0, 0, 0, op::MSG_SEND, 0, S0, 0]);
    closed.extend([op::POLL, 2, S0, 1, op::JOIN, S0, 0, 1, b'g', b'g']);
    seeds.push(("closed_socket", closed));

    // NULL and made-up handles, NULL values with lengths, a NULL option_len, NULL
    // buffers, bad sizes, unknown options and types, malformed endpoints.
    let mut misuse = vec![op::SOCKET, 0, 21, op::SOCKET, 2, 1, op::SOCKET, 0, 2];
    misuse.extend([op::SETSOCKOPT, S0, 6, (3 << 1) | 1]);
    misuse.extend([op::SETSOCKOPT, S0, 5, 9 << 1]);
    misuse.extend([op::SETSOCKOPT, S0, 17, 1 << 1, 7]);
    misuse.extend([op::SETSOCKOPT, S0, 200, 3 << 1, 0, 0, 0, 1]);
    misuse.extend([op::GETSOCKOPT, S0, 16, 2]);
    misuse.extend([op::GETSOCKOPT, S0, 32, 1 << 2]);
    misuse.extend([op::GETSOCKOPT, S0, 5, 3 << 2]);
    misuse.extend([op::GETSOCKOPT, NULL_SOCK, 16, 3 << 2]);
    misuse.extend([op::BIND, S0, ep::NULL, op::BIND, S0, ep::INPROC_EMPTY]);
    misuse.extend([op::BIND, S0, ep::UNKNOWN, 0, 3, b'a', b':', b'1']);
    misuse.extend([op::CONNECT, S0, ep::NO_SCHEME, 4, b'h', b'o', b's', b't']);
    misuse.extend([op::CONNECT, S0, ep::IPC_TOO_LONG, 0, op::BIND, S0, ep::UDP]);
    misuse.extend([op::CONNECT, S0, ep::TCP_BAD_PORT, 2, b'9', b'9']);
    misuse.extend([
        op::UNBIND,
        S0,
        ep::INPROC,
        2,
        op::DISCONNECT,
        S0,
        ep::INPROC,
        2,
    ]);
    misuse.extend([op::SEND, S0, (1 << 2) | 1, 0, op::RECV, S0, (1 << 1) | 1, 0]);
    misuse.extend([op::MSG_CLOSE, 4, op::MSG_CLOSE, 0, op::MSG_SEND, 0, S0, 0]);
    misuse.extend([
        op::MSG_INIT,
        4,
        0,
        0,
        op::MSG_INIT,
        0,
        2,
        0,
        op::MSG_INIT,
        0,
        4,
        3,
    ]);
    misuse.extend([op::MSG_INIT, 0, 6, 3, op::MSG_INIT, 0, 8, 0]);
    misuse.extend([op::POLL, 0, op::POLL, 0x80, S0, 1, op::CTX_GET, 2, 10]);
    misuse.extend([op::CTX_SET, 4, 9]);
    misuse.extend(be(1));
    seeds.push(("null_and_bad_arguments", misuse));

    // Options of every kind on a ROUTER and a SUB: sizes exact, short, long.
    let mut options = vec![op::SOCKET, 0, 6, op::SOCKET, 0, 2];
    for (opt, shape, value) in [
        (23u8, 3u8 << 1, int(0).to_vec()),
        (24, 3 << 1, int(-1).to_vec()),
        (22, 4 << 1, (-1i64).to_be_bytes().to_vec()),
        (5, 1 << 1, vec![b'r']),
        (33, 3 << 1, int(1).to_vec()),
        (55, 5 << 1, vec![b'z'; 32]),
        (
            49,
            6 << 1,
            b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6".to_vec(),
        ),
        (47, 3 << 1, int(1).to_vec()),
    ] {
        options.extend([op::SETSOCKOPT, S0, opt, shape]);
        options.extend(value);
    }
    for opt in [16u8, 23, 32, 43, 49, 22, 13, 15, 14] {
        options.extend([op::GETSOCKOPT, S0, opt, 3 << 2]);
        options.extend([op::GETSOCKOPT, S0, opt, 7 << 2]);
    }
    options.extend([
        op::SETSOCKOPT,
        S1,
        6,
        1 << 1,
        b'a',
        op::SETSOCKOPT,
        S1,
        7,
        0,
    ]);
    seeds.push(("socket_options", options));

    // A context shut down: ETERM on its sockets, then terminated with one still open;
    // calls on the terminated context: EFAULT.
    let mut term = vec![op::CTX_NEW, 1, op::SOCKET, 1, 8, op::SOCKET, 1, 7];
    term.extend([op::CONNECT, S0, ep::INPROC, 0, op::CTX_SHUTDOWN, 1]);
    term.extend([op::SEND, S0, 1 << 2, 0, b'x', op::RECV, S1, 9 << 1, 0]);
    term.extend([op::POLL, 2, S1, 1, op::SOCKET, 1, 8, op::CLOSE, S0]);
    term.extend([op::CTX_TERM, 1, op::CTX_TERM, 1, op::SOCKET, 1, 0]);
    term.extend([op::CTX_GET, 1, 10, op::CTX_SHUTDOWN, 1]);
    seeds.push(("context_shutdown_and_term", term));

    // The poller, Z85, strerror, and the rest.
    let mut rest = vec![op::SOCKET, 0, 7, op::POLLER, 0, 0, 0, 0, 0];
    rest.extend([op::POLLER, 3, 0, S0, 0, 1, op::POLLER, 3, 0, S0, 0, 1]);
    rest.extend([op::POLLER, 6, 0, S0, 0, 1, op::POLLER, 2, 0, S0, 0, 0]);
    rest.extend([op::POLLER, 11, 5, S0, 0, 0, op::POLLER, 1, 0, S0, 0, 0]);
    rest.extend([op::POLLER, 1, 2, S0, 0, 0]);
    rest.extend([op::Z85, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
    rest.extend([op::Z85, 1, 10]);
    rest.extend(b"HelloWorld");
    rest.extend([
        op::Z85,
        0,
        3,
        1,
        2,
        3,
        op::Z85,
        1,
        4,
        b'a',
        b'b',
        b'c',
        b'd',
    ]);
    rest.push(op::STRERROR);
    rest.extend(be(EFSM));
    rest.push(op::STRERROR);
    rest.extend(be(libc::EAGAIN));
    rest.extend([
        op::MISC,
        0,
        3,
        b'i',
        b'p',
        b'c',
        op::MISC,
        1,
        0,
        op::MISC,
        2,
        40,
    ]);
    rest.extend(b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6");
    rest.extend([
        op::SENDIOV,
        S0,
        2,
        0,
        1,
        b'a',
        1,
        b'b',
        op::JOIN,
        S0,
        0,
        1,
        b'g',
        b'g',
    ]);
    seeds.push(("poller_z85_and_rest", rest));

    seeds
}
