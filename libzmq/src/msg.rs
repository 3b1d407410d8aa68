//! Messages: `zmq_msg_t` and the `zmq_msg_*` calls.
//!
//! A `zmq_msg_t` is 64 bytes the application owns (libzmq's size, aligned to a pointer).
//! This library keeps in it a `Repr`: a tag saying the message is initialised, its
//! flags, its routing id, its body as a [`Bytes`] (so a received frame is handed to the
//! application without a copy, and a body made with `zmq_msg_init_data` is sent without
//! one), its group (draft RADIO/DISH) and its sender's properties, both shared. Every access
//! reads and writes the 64 bytes unaligned, so a caller's misaligned message is no fault.
//! A zeroed or closed message has no tag: calls on it fail with `EFAULT`, as libzmq's do.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, Mutex};

use zmtp_mio::{Bytes, PeerProperties};

use crate::error::Errno;
use crate::{guard, lock, ret};

/// libzmq's `zmq_msg_t`: 64 opaque bytes, aligned as a pointer.
#[repr(C, align(8))]
#[allow(non_camel_case_types)]
pub struct zmq_msg_t {
    _opaque: [u8; 64],
}

/// The tag of an initialised message ("ZMTP" in ASCII).
const TAG: u32 = 0x5A4D_5450;

/// `ZMQ_MORE`: another frame of the message follows.
pub(crate) const MORE: c_int = 1;
/// `ZMQ_SRCFD`: the file descriptor of the connection the message came from (deprecated;
/// -1 when none: inproc, or a message made here).
const SRCFD: c_int = 2;
/// `ZMQ_SHARED`: whether the body is shared with another message.
const SHARED: c_int = 3;

/// Flag bit: another frame follows.
pub(crate) const FLAG_MORE: u32 = 1;

/// A free function given to `zmq_msg_init_data`.
pub type FreeFn = unsafe extern "C" fn(data: *mut c_void, hint: *mut c_void);

/// What this library keeps in a `zmq_msg_t`.
#[repr(C)]
pub(crate) struct Repr {
    tag: u32,
    pub(crate) flags: u32,
    /// The routing id (draft CLIENT/SERVER, PEER): 0 is none.
    pub(crate) routing_id: u32,
    _pad: u32,
    pub(crate) body: Bytes,
    /// The group (draft RADIO/DISH), NUL-terminated.
    pub(crate) group: Option<Arc<CString>>,
    /// The sending peer's properties (`zmq_msg_gets`, `ZMQ_SRCFD`): every message of a
    /// connection shares them, as libzmq's messages share their metadata.
    pub(crate) props: Option<Arc<PeerProperties>>,
}

const _: () = assert!(std::mem::size_of::<Repr>() <= 64);
const _: () = assert!(std::mem::size_of::<zmq_msg_t>() == 64);

/// The property values `zmq_msg_gets` handed out, NUL-terminated, by the properties they
/// are of (the address of their allocation). An entry stays while a message may still
/// hold those properties (its `Weak` can be upgraded), so that every pointer handed out
/// is valid as long as a message it was read from; the `Weak` also keeps the allocation,
/// and so the key, from being reused meanwhile. Entries are dropped when another is
/// added after their properties are gone.
static TEXTS: Mutex<Vec<PropertyTexts>> = Mutex::new(Vec::new());

/// The texts of one connection's properties (see [`TEXTS`]).
struct PropertyTexts {
    of: std::sync::Weak<PeerProperties>,
    texts: Vec<(String, CString)>,
}

/// A pointer to `value` (the property `name` of `props`) as a NUL-terminated text that
/// lives as long as `props` does: made once per connection and property.
fn property_text(props: &Arc<PeerProperties>, name: &str, value: &[u8]) -> Option<*const c_char> {
    let mut all = lock(&TEXTS);
    let at = match all
        .iter()
        .position(|t| std::ptr::eq(t.of.as_ptr(), Arc::as_ptr(props)))
    {
        Some(at) => at,
        None => {
            all.retain(|t| t.of.strong_count() > 0);
            all.push(PropertyTexts {
                of: Arc::downgrade(props),
                texts: Vec::new(),
            });
            all.len() - 1
        }
    };
    let texts = &mut all[at].texts;
    if let Some((_, text)) = texts.iter().find(|(n, _)| n == name) {
        return Some(text.as_ptr());
    }
    // A value with a NUL in it is cut there, as C reads it.
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    let text = CString::new(&value[..end]).ok()?;
    let ptr = text.as_ptr();
    texts.push((name.to_owned(), text));
    Some(ptr)
}

impl Repr {
    /// A message with `body` and no metadata.
    pub(crate) fn new(body: Bytes) -> Repr {
        Repr {
            tag: TAG,
            flags: 0,
            routing_id: 0,
            _pad: 0,
            body,
            group: None,
            props: None,
        }
    }
}

/// Whether `msg` holds an initialised message.
pub(crate) fn is_live(msg: *const zmq_msg_t) -> bool {
    if msg.is_null() {
        return false;
    }
    // SAFETY: `msg` is non-null and points to the caller's 64-byte `zmq_msg_t`; the tag
    // is its first four bytes, read unaligned.
    let tag = unsafe { std::ptr::read_unaligned(msg.cast::<u32>()) };
    tag == TAG
}

/// Take the message out of `msg` (leaving it closed), or `EFAULT` if it holds none.
pub(crate) fn take(msg: *mut zmq_msg_t) -> Result<Repr, Errno> {
    if !is_live(msg) {
        return Err(libc::EFAULT);
    }
    // SAFETY: the tag says `msg` holds a `Repr` written by `put`; it is moved out, and the
    // tag cleared so that it is not read twice.
    let repr = unsafe { std::ptr::read_unaligned(msg.cast::<Repr>()) };
    // SAFETY: as above; `msg` is valid for writes of its 64 bytes.
    unsafe { std::ptr::write_unaligned(msg.cast::<u32>(), 0) };
    Ok(repr)
}

/// Store `repr` in `msg`, whatever `msg` held (an initialised message there is
/// overwritten, not closed: callers close it first where libzmq does).
pub(crate) fn put(msg: *mut zmq_msg_t, repr: Repr) {
    // SAFETY: callers check that `msg` is non-null; it points to 64 writable bytes, more
    // than a `Repr` needs, written unaligned.
    unsafe { std::ptr::write_unaligned(msg.cast::<Repr>(), repr) }
}

/// Store `repr` in `msg`, releasing what an initialised message there held (a closed one
/// is overwritten, as [`put`] does).
pub(crate) fn replace(msg: *mut zmq_msg_t, repr: Repr) {
    let old = take(msg).ok();
    put(msg, repr);
    drop(old);
}

/// Run `f` on the message in `msg` without moving it (the per-message getters,
/// `zmq_msg_data`, `zmq_msg_size`, `zmq_msg_more`...), or `EFAULT`.
pub(crate) fn peek<R>(msg: *const zmq_msg_t, f: impl FnOnce(&Repr) -> R) -> Result<R, Errno> {
    if !is_live(msg) {
        return Err(libc::EFAULT);
    }
    // SAFETY: the tag says `msg` holds a `Repr` written by `put`. The copy is only read,
    // by shared reference, while the original stays where it is (a `zmq_msg_t` is used by
    // one thread at a time, as libzmq requires), and is never dropped: the original
    // still owns what it refers to.
    let repr = std::mem::ManuallyDrop::new(unsafe { std::ptr::read_unaligned(msg.cast::<Repr>()) });
    Ok(f(&repr))
}

/// Run `f` on the message in `msg` (put back afterwards), or `EFAULT`.
pub(crate) fn with<R>(msg: *const zmq_msg_t, f: impl FnOnce(&mut Repr) -> R) -> Result<R, Errno> {
    let msg = msg.cast_mut();
    let mut repr = take(msg)?;
    let r = f(&mut repr);
    put(msg, repr);
    Ok(r)
}

/// A body that calls the application's free function when its last user lets go.
struct Foreign {
    data: *mut c_void,
    len: usize,
    free: Option<FreeFn>,
    hint: *mut c_void,
}

// SAFETY: the data is the application's, handed over by `zmq_msg_init_data` to be read
// from any thread and freed once (by whichever thread drops the last reference), as
// libzmq does with it.
unsafe impl Send for Foreign {}
// SAFETY: as above; the data is only read through shared references.
unsafe impl Sync for Foreign {}

impl AsRef<[u8]> for Foreign {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 || self.data.is_null() {
            return &[];
        }
        // SAFETY: `zmq_msg_init_data`'s caller promises `len` readable bytes at `data`
        // until the free function is called, which happens only in `drop`.
        unsafe { std::slice::from_raw_parts(self.data.cast::<u8>(), self.len) }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: the application's free function, called once with the data and
            // hint it was given with, as libzmq calls it.
            unsafe { free(self.data, self.hint) }
        }
    }
}

/// `zmq_msg_init`: an empty message.
#[no_mangle]
pub extern "C" fn zmq_msg_init(msg: *mut zmq_msg_t) -> c_int {
    guard(-1, || {
        if msg.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        put(msg, Repr::new(Bytes::new()));
        0
    })
}

/// `zmq_msg_init_size`: a message of `size` bytes (zeroed here), to be filled through
/// `zmq_msg_data`.
#[no_mangle]
pub extern "C" fn zmq_msg_init_size(msg: *mut zmq_msg_t, size: usize) -> c_int {
    guard(-1, || {
        if msg.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        let mut body = Vec::new();
        if body.try_reserve_exact(size).is_err() {
            return ret::<c_int>(Err(libc::ENOMEM));
        }
        body.resize(size, 0);
        put(msg, Repr::new(Bytes::from(body)));
        0
    })
}

/// `zmq_msg_init_buffer` (draft): a message holding a copy of `size` bytes at `buf`.
///
/// # Safety
/// `buf` must point to `size` readable bytes (or be anything when `size` is 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init_buffer(
    msg: *mut zmq_msg_t,
    buf: *const c_void,
    size: usize,
) -> c_int {
    guard(-1, || {
        if msg.is_null() || (buf.is_null() && size > 0) {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        let body = if size == 0 {
            Bytes::new()
        } else {
            // SAFETY: the caller promises `size` readable bytes at `buf`, checked non-null.
            Bytes::copy_from_slice(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) })
        };
        put(msg, Repr::new(body));
        0
    })
}

/// `zmq_msg_init_data`: a message over the application's `size` bytes at `data`, without
/// a copy; `ffn` (if not NULL) is called with `data` and `hint` when the library is done
/// with them, from any thread.
///
/// # Safety
/// `data` must point to `size` readable bytes that stay valid until `ffn` is called (or,
/// without `ffn`, for as long as any message holds them).
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_init_data(
    msg: *mut zmq_msg_t,
    data: *mut c_void,
    size: usize,
    ffn: Option<FreeFn>,
    hint: *mut c_void,
) -> c_int {
    guard(-1, || {
        if msg.is_null() {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        if data.is_null() && size > 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        let foreign = Foreign {
            data,
            len: size,
            free: ffn,
            hint,
        };
        put(msg, Repr::new(Bytes::from_owner(foreign)));
        0
    })
}

/// `zmq_msg_close`: release the message (its body is freed when no other message shares
/// it). `EFAULT` on a message not initialised or already closed.
#[no_mangle]
pub extern "C" fn zmq_msg_close(msg: *mut zmq_msg_t) -> c_int {
    guard(-1, || ret(take(msg).map(|_| 0)))
}

/// `zmq_msg_move`: move `src`'s content to `dest` (whose old content is released);
/// `src` becomes empty.
#[no_mangle]
pub extern "C" fn zmq_msg_move(dest: *mut zmq_msg_t, src: *mut zmq_msg_t) -> c_int {
    guard(-1, || {
        if dest.is_null() || !is_live(src) {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        if dest == src {
            return 0;
        }
        let moved = match take(src) {
            Ok(m) => m,
            Err(e) => return ret::<c_int>(Err(e)),
        };
        // The old content of `dest`, if any, is released.
        let _ = take(dest);
        put(dest, moved);
        put(src, Repr::new(Bytes::new()));
        0
    })
}

/// `zmq_msg_copy`: `dest` shares `src`'s content (no copy of the body).
#[no_mangle]
pub extern "C" fn zmq_msg_copy(dest: *mut zmq_msg_t, src: *mut zmq_msg_t) -> c_int {
    guard(-1, || {
        if dest.is_null() || !is_live(src) {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        if dest == src {
            return 0;
        }
        let copy = with(src, |m| Repr {
            tag: TAG,
            flags: m.flags,
            routing_id: m.routing_id,
            _pad: 0,
            body: m.body.clone(),
            group: m.group.clone(),
            props: m.props.clone(),
        });
        match copy {
            Ok(copy) => {
                let _ = take(dest);
                put(dest, copy);
                0
            }
            Err(e) => ret::<c_int>(Err(e)),
        }
    })
}

/// `zmq_msg_data`: the message's body, or NULL (`EFAULT`) for a message not initialised.
#[no_mangle]
pub extern "C" fn zmq_msg_data(msg: *mut zmq_msg_t) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        match peek(msg, |m| m.body.as_ptr().cast_mut().cast::<c_void>()) {
            Ok(p) => p,
            Err(e) => {
                crate::error::set_errno(e);
                std::ptr::null_mut()
            }
        }
    })
}

/// `zmq_msg_size`: the body's size in bytes (0 for a message not initialised).
#[no_mangle]
pub extern "C" fn zmq_msg_size(msg: *const zmq_msg_t) -> usize {
    guard(0, || peek(msg, |m| m.body.len()).unwrap_or(0))
}

/// `zmq_msg_more`: 1 if another frame of the message follows, 0 otherwise.
#[no_mangle]
pub extern "C" fn zmq_msg_more(msg: *const zmq_msg_t) -> c_int {
    guard(0, || {
        peek(msg, |m| c_int::from(m.flags & FLAG_MORE != 0)).unwrap_or(0)
    })
}

/// `zmq_msg_get`: `ZMQ_MORE`, `ZMQ_SRCFD` (-1 when the message came from no descriptor)
/// or `ZMQ_SHARED`.
#[no_mangle]
pub extern "C" fn zmq_msg_get(msg: *const zmq_msg_t, property: c_int) -> c_int {
    guard(-1, || {
        ret(peek(msg, |m| match property {
            MORE => Ok(c_int::from(m.flags & FLAG_MORE != 0)),
            SRCFD => Ok(source_fd(m).unwrap_or(-1)),
            SHARED => Ok(c_int::from(!m.body.is_unique())),
            _ => Err(libc::EINVAL),
        })
        .and_then(|r| r))
    })
}

/// The descriptor of the connection `m` came from, if it came from one.
fn source_fd(m: &Repr) -> Option<c_int> {
    m.props.as_ref()?.fd
}

/// `zmq_msg_set`: libzmq accepts no property here (`EINVAL`).
#[no_mangle]
pub extern "C" fn zmq_msg_set(msg: *mut zmq_msg_t, _property: c_int, _optval: c_int) -> c_int {
    guard(-1, || {
        if !is_live(msg) {
            return ret::<c_int>(Err(libc::EFAULT));
        }
        ret::<c_int>(Err(libc::EINVAL))
    })
}

/// `zmq_msg_gets`: a property of the peer that sent the message (`Socket-Type`,
/// `Routing-Id`, `User-Id`, `X-` properties, and those the ZAP handler added), or NULL
/// with `EINVAL` when it has none. The text lives as long as the message.
///
/// # Safety
/// `property` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_gets(
    msg: *const zmq_msg_t,
    property: *const c_char,
) -> *const c_char {
    guard(std::ptr::null(), || {
        if property.is_null() {
            crate::error::set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: the caller promises a NUL-terminated string, checked non-null.
        let name = unsafe { CStr::from_ptr(property) };
        let Ok(name) = name.to_str() else {
            crate::error::set_errno(libc::EINVAL);
            return std::ptr::null();
        };
        let found = peek(msg, |m| {
            let props = m.props.as_ref()?;
            // libzmq's private property behind `ZMQ_SRCFD`.
            let fd;
            let value = if name == "__fd" {
                fd = props.fd?.to_string();
                fd.as_bytes()
            } else {
                props.get(name)?
            };
            property_text(props, name, value)
        });
        match found {
            Ok(Some(p)) => p,
            Ok(None) => {
                crate::error::set_errno(libc::EINVAL);
                std::ptr::null()
            }
            Err(e) => {
                crate::error::set_errno(e);
                std::ptr::null()
            }
        }
    })
}

/// `zmq_msg_routing_id` (draft): the routing id (0: none).
#[no_mangle]
pub extern "C" fn zmq_msg_routing_id(msg: *mut zmq_msg_t) -> u32 {
    guard(0, || peek(msg, |m| m.routing_id).unwrap_or(0))
}

/// `zmq_msg_set_routing_id` (draft): address the message to a peer; 0 is refused with
/// `EINVAL`.
#[no_mangle]
pub extern "C" fn zmq_msg_set_routing_id(msg: *mut zmq_msg_t, routing_id: u32) -> c_int {
    guard(-1, || {
        if routing_id == 0 {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        ret(with(msg, |m| {
            m.routing_id = routing_id;
            0
        }))
    })
}

/// `zmq_msg_group` (draft): the group, or NULL when none is set... as libzmq, an empty
/// string.
#[no_mangle]
pub extern "C" fn zmq_msg_group(msg: *mut zmq_msg_t) -> *const c_char {
    guard(std::ptr::null(), || {
        match peek(msg, |m| m.group.as_deref().map(|g| g.as_ptr())) {
            Ok(Some(p)) => p,
            Ok(None) => c"".as_ptr(),
            Err(e) => {
                crate::error::set_errno(e);
                std::ptr::null()
            }
        }
    })
}

/// `zmq_msg_set_group` (draft): set the group (at most 255 bytes; `EINVAL` otherwise).
///
/// # Safety
/// `group` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zmq_msg_set_group(msg: *mut zmq_msg_t, group: *const c_char) -> c_int {
    guard(-1, || {
        if group.is_null() {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        // SAFETY: the caller promises a NUL-terminated string, checked non-null.
        let group = unsafe { CStr::from_ptr(group) };
        if group.to_bytes().len() > zmtp_mio::GROUP_MAX_LEN {
            return ret::<c_int>(Err(libc::EINVAL));
        }
        ret(with(msg, |m| {
            m.group = Some(Arc::new(group.to_owned()));
            0
        }))
    })
}
