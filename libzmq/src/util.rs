//! The rest of the API: version and capabilities, Z85, CURVE keys, atomic counters,
//! stopwatches, `zmq_sleep`, and the proxies.

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::error::{set_errno, ETERM};
use crate::socket::sock_of;
use crate::{guard, ret};

/// `zmq_version`: libzmq 4.3.5, whose ABI this library has. NULL arguments are skipped.
///
/// # Safety
/// Each argument must be NULL or point to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn zmq_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) {
    for (p, v) in [(major, 4), (minor, 3), (patch, 5)] {
        if !p.is_null() {
            // SAFETY: the caller promises a writable `int` where non-null.
            unsafe { *p = v };
        }
    }
}

/// `zmq_has`: 1 for what this library has (`ipc`, `curve`, `ws`, `wss`, and `draft`: the
/// draft API, which it always exports), 0 otherwise (`pgm`, `tipc`, `norm`, `gssapi`,
/// `vmci`).
///
/// # Safety
/// `capability` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_has(capability: *const c_char) -> c_int {
    if capability.is_null() {
        return 0;
    }
    // SAFETY: the caller promises a NUL-terminated string, checked non-null.
    let name = unsafe { CStr::from_ptr(capability) }.to_bytes();
    c_int::from(matches!(
        name,
        b"ipc" | b"curve" | b"ws" | b"wss" | b"draft"
    ))
}

/// `zmq_z85_encode`: write the Z85 text of `size` bytes at `data` (a multiple of 4) to
/// `dest` (`size * 5 / 4 + 1` bytes, NUL included); returns `dest`, or NULL with `EINVAL`.
///
/// # Safety
/// `data` must point to `size` readable bytes and `dest` to `size * 5 / 4 + 1` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_z85_encode(
    dest: *mut c_char,
    data: *const u8,
    size: usize,
) -> *mut c_char {
    guard(std::ptr::null_mut(), || {
        if dest.is_null() || (data.is_null() && size > 0) || !size.is_multiple_of(4) {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        let input: &[u8] = if size == 0 {
            &[]
        } else {
            // SAFETY: the caller promises `size` readable bytes at `data` (non-null).
            unsafe { std::slice::from_raw_parts(data, size) }
        };
        let out_len = size / 4 * 5;
        // SAFETY: the caller promises `out_len + 1` writable bytes at `dest` (non-null).
        let out = unsafe { std::slice::from_raw_parts_mut(dest.cast::<u8>(), out_len + 1) };
        match zmtp_mio::z85::encode(input, &mut out[..out_len]) {
            Ok(n) => {
                out[n] = 0;
                dest
            }
            Err(_) => {
                set_errno(libc::EINVAL);
                std::ptr::null_mut()
            }
        }
    })
}

/// `zmq_z85_decode`: decode Z85 text (a multiple of 5 characters) into `dest`
/// (`strlen * 4 / 5` bytes); returns `dest`, or NULL with `EINVAL`.
///
/// # Safety
/// `string` must be a NUL-terminated string and `dest` must have `strlen(string) * 4 / 5`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_z85_decode(dest: *mut u8, string: *const c_char) -> *mut u8 {
    guard(std::ptr::null_mut(), || {
        if dest.is_null() || string.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: the caller promises a NUL-terminated string, checked non-null.
        let text = unsafe { CStr::from_ptr(string) }.to_bytes();
        if !text.len().is_multiple_of(5) {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        let n = text.len() / 5 * 4;
        let mut decoded = vec![0u8; n];
        match zmtp_mio::z85::decode(text, &mut decoded) {
            Ok(len) => {
                // SAFETY: the caller promises `n` writable bytes at `dest` (non-null);
                // `len <= n`.
                unsafe { std::ptr::copy_nonoverlapping(decoded.as_ptr(), dest, len) };
                dest
            }
            Err(_) => {
                set_errno(libc::EINVAL);
                std::ptr::null_mut()
            }
        }
    })
}

/// Write a key's 40 Z85 characters and a NUL to `dest`.
///
/// # Safety
/// `dest` must have 41 writable bytes.
unsafe fn write_key(dest: *mut c_char, key: &[u8; 32]) {
    let text = zmtp_mio::z85::encode_key(key);
    let text = text.as_str().as_bytes();
    // SAFETY: the caller promises 41 writable bytes; the text is 40 characters.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), dest.cast::<u8>(), text.len());
        *dest.add(text.len()) = 0;
    }
}

/// `zmq_curve_keypair`: a new CURVE key pair from the system's random generator, each
/// key written as 40 Z85 characters and a NUL.
///
/// # Safety
/// Each argument must point to 41 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_curve_keypair(public: *mut c_char, secret: *mut c_char) -> c_int {
    guard(-1, || {
        if public.is_null() || secret.is_null() {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        match zmtp_mio::curve_keypair() {
            Ok(keys) => {
                let secret_bytes = keys.secret.to_z85();
                let secret_raw = zmtp_mio::z85::decode_key(secret_bytes.as_str());
                let Ok(secret_raw) = secret_raw else {
                    return ret::<c_int>(Err(libc::EINVAL));
                };
                // SAFETY: the caller promises 41 writable bytes at each (non-null).
                unsafe {
                    write_key(public, &keys.public.0);
                    write_key(secret, &secret_raw);
                }
                0
            }
            Err(_) => ret::<c_int>(Err(libc::EIO)),
        }
    })
}

/// `zmq_curve_public`: the public key of a Z85 secret key, as 40 Z85 characters and a
/// NUL.
///
/// # Safety
/// `public` must have 41 writable bytes; `secret` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_curve_public(public: *mut c_char, secret: *const c_char) -> c_int {
    guard(-1, || {
        if public.is_null() || secret.is_null() {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        // SAFETY: the caller promises a NUL-terminated string, checked non-null.
        let text = unsafe { CStr::from_ptr(secret) }.to_bytes();
        match zmtp_mio::SecretKey::from_z85(text) {
            Ok(secret) => {
                let public_key = secret.public_key();
                // SAFETY: the caller promises 41 writable bytes (non-null).
                unsafe { write_key(public, &public_key.0) };
                0
            }
            Err(_) => ret::<c_int>(Err(libc::EINVAL)),
        }
    })
}

/// `zmq_atomic_counter_new`: a new counter at 0.
#[no_mangle]
pub extern "C" fn zmq_atomic_counter_new() -> *mut c_void {
    Box::into_raw(Box::new(AtomicI32::new(0))).cast()
}

/// The counter behind a handle.
///
/// # Safety
/// `counter` must be NULL or come from `zmq_atomic_counter_new`, not yet destroyed.
unsafe fn counter<'a>(counter: *mut c_void) -> Option<&'a AtomicI32> {
    // SAFETY: per the caller, NULL or a live `AtomicI32` made by `zmq_atomic_counter_new`.
    unsafe { counter.cast::<AtomicI32>().as_ref() }
}

/// `zmq_atomic_counter_set`: set the counter.
///
/// # Safety
/// `counter` must come from `zmq_atomic_counter_new`, not yet destroyed (NULL is skipped).
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_set(c: *mut c_void, value: c_int) {
    // SAFETY: forwarded from the caller.
    if let Some(c) = unsafe { counter(c) } {
        c.store(value, Ordering::SeqCst);
    }
}

/// `zmq_atomic_counter_inc`: add one; returns the value before.
///
/// # Safety
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_inc(c: *mut c_void) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { counter(c) }.map_or(0, |c| c.fetch_add(1, Ordering::SeqCst))
}

/// `zmq_atomic_counter_dec`: take one away; returns 1 if the counter is still above 0
/// afterwards, 0 otherwise.
///
/// # Safety
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_dec(c: *mut c_void) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { counter(c) }.map_or(0, |c| c_int::from(c.fetch_sub(1, Ordering::SeqCst) - 1 > 0))
}

/// `zmq_atomic_counter_value`: the value.
///
/// # Safety
/// As `zmq_atomic_counter_set`.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_value(c: *mut c_void) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { counter(c) }.map_or(0, |c| c.load(Ordering::SeqCst))
}

/// `zmq_atomic_counter_destroy`: free the counter and set the handle to NULL.
///
/// # Safety
/// `counter_p` must be NULL or point to NULL or to a counter from
/// `zmq_atomic_counter_new`, not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn zmq_atomic_counter_destroy(counter_p: *mut *mut c_void) {
    if counter_p.is_null() {
        return;
    }
    // SAFETY: per the caller, a readable and writable pointer to the handle.
    let c = unsafe { *counter_p };
    if !c.is_null() {
        // SAFETY: the handle came from `Box::into_raw` in `zmq_atomic_counter_new`.
        drop(unsafe { Box::from_raw(c.cast::<AtomicI32>()) });
        // SAFETY: as above.
        unsafe { *counter_p = std::ptr::null_mut() };
    }
}

/// `zmq_stopwatch_start`: a stopwatch started now.
#[no_mangle]
pub extern "C" fn zmq_stopwatch_start() -> *mut c_void {
    Box::into_raw(Box::new(Instant::now())).cast()
}

/// Microseconds since the stopwatch started.
fn elapsed_us(watch: *mut c_void) -> c_ulong {
    // SAFETY: the stopwatch functions' callers pass a handle from `zmq_stopwatch_start`
    // (NULL is answered with 0).
    match unsafe { watch.cast::<Instant>().as_ref() } {
        Some(start) => c_ulong::try_from(start.elapsed().as_micros()).unwrap_or(c_ulong::MAX),
        None => 0,
    }
}

/// `zmq_stopwatch_intermediate`: microseconds since the start; the watch runs on.
///
/// # Safety
/// `watch` must come from `zmq_stopwatch_start`, not yet stopped.
#[no_mangle]
pub unsafe extern "C" fn zmq_stopwatch_intermediate(watch: *mut c_void) -> c_ulong {
    elapsed_us(watch)
}

/// `zmq_stopwatch_stop`: microseconds since the start; the watch is freed.
///
/// # Safety
/// `watch` must come from `zmq_stopwatch_start`, not yet stopped.
#[no_mangle]
pub unsafe extern "C" fn zmq_stopwatch_stop(watch: *mut c_void) -> c_ulong {
    let us = elapsed_us(watch);
    if !watch.is_null() {
        // SAFETY: the handle came from `Box::into_raw` in `zmq_stopwatch_start`.
        drop(unsafe { Box::from_raw(watch.cast::<Instant>()) });
    }
    us
}

/// `zmq_sleep`: sleep for whole seconds.
#[no_mangle]
pub extern "C" fn zmq_sleep(seconds: c_int) {
    if let Ok(s) = u64::try_from(seconds) {
        std::thread::sleep(Duration::from_secs(s));
    }
}

/// `zmq_proxy_steerable`: move messages between `frontend` and `backend` (copying each to
/// `capture` if not NULL), obeying `PAUSE`, `RESUME`, `TERMINATE` and `STATISTICS` on
/// `control` if not NULL. Returns 0 after `TERMINATE`, -1 with `ETERM` when the context
/// ends.
#[no_mangle]
pub extern "C" fn zmq_proxy_steerable(
    frontend: *mut c_void,
    backend: *mut c_void,
    capture: *mut c_void,
    control: *mut c_void,
) -> c_int {
    guard(-1, || {
        let optional = |h: *mut c_void| (!h.is_null()).then(|| sock_of(h)).transpose();
        let sockets = sock_of(frontend)
            .and_then(|f| Ok((f, sock_of(backend)?, optional(capture)?, optional(control)?)));
        let (f, b, cap, ctl) = match sockets {
            Ok(s) => s,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        let done = zmtp_mio::proxy_steerable(
            &f.sock,
            &b.sock,
            cap.as_ref().map(|s| &s.sock),
            ctl.as_ref().map(|s| &s.sock),
        );
        match done {
            Ok(()) => 0,
            Err(e) if f.ctx.terminating() => {
                let _ = e;
                ret::<c_int>(Err(ETERM))
            }
            Err(e) => ret::<c_int>(Err(f.errno(&e))),
        }
    })
}

/// `zmq_proxy`: `zmq_proxy_steerable` without a control socket; returns only when the
/// context ends (-1, `ETERM`).
#[no_mangle]
pub extern "C" fn zmq_proxy(
    frontend: *mut c_void,
    backend: *mut c_void,
    capture: *mut c_void,
) -> c_int {
    zmq_proxy_steerable(frontend, backend, capture, std::ptr::null_mut())
}

/// `zmq_device`: the old name of `zmq_proxy` (the device type is not looked at).
#[no_mangle]
pub extern "C" fn zmq_device(_type: c_int, frontend: *mut c_void, backend: *mut c_void) -> c_int {
    zmq_proxy(frontend, backend, std::ptr::null_mut())
}

/// A thread function of `zmq_threadstart`.
pub type ThreadFn = unsafe extern "C" fn(arg: *mut c_void);

/// `zmq_threadstart`: run `func(arg)` on a new thread; returns a handle for
/// `zmq_threadclose`, or NULL if no thread could be started.
#[no_mangle]
pub extern "C" fn zmq_threadstart(func: Option<ThreadFn>, arg: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let Some(func) = func else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        let arg = arg as usize;
        let thread = std::thread::Builder::new().spawn(move || {
            // SAFETY: the application's thread function with its argument, as
            // `zmq_threadstart` promises to call it.
            unsafe { func(arg as *mut c_void) }
        });
        match thread {
            Ok(handle) => Box::into_raw(Box::new(handle)).cast(),
            Err(_) => {
                set_errno(crate::error::EMTHREAD);
                std::ptr::null_mut()
            }
        }
    })
}

/// `zmq_threadclose`: wait for a thread of `zmq_threadstart` to end, and free it.
///
/// # Safety
/// `thread` must be NULL or a handle from `zmq_threadstart`, not yet closed.
#[no_mangle]
pub unsafe extern "C" fn zmq_threadclose(thread: *mut c_void) {
    if thread.is_null() {
        return;
    }
    // SAFETY: per the caller, the handle came from `Box::into_raw` in `zmq_threadstart`.
    let handle = unsafe { Box::from_raw(thread.cast::<std::thread::JoinHandle<()>>()) };
    let _ = handle.join();
}

/// Hashing for the handle tables (keys are addresses): one multiplication, its high half
/// folded into the low one (the table indexes by the low bits, which an aligned address
/// alone would leave zero), where the standard SipHash costs more than the rest of a
/// per-message call's lookup. Handles are addresses of our own allocations, so nobody
/// picks the keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        let h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// A handle table: handles (addresses) to what they stand for.
pub(crate) type Handles<T> =
    std::collections::HashMap<usize, T, std::hash::BuildHasherDefault<AddrHasher>>;
