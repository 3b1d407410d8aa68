//! libzmq's draft API (`zmq.h` of 4.3.5, the part under `ZMQ_BUILD_DRAFT_API`): the draft
//! socket types, and the calls they need beside the stable API, added to
//! [`zmtp_conformance::ffi`]'s safe types.
//!
//! The draft socket types are single-part: a SERVER or PEER message carries the `u32`
//! routing id of the pipe it came from (or is sent to), a RADIO/DISH message carries its
//! group. Both live in the `zmq_msg_t`, not in frames, so they are set and read on a
//! [`Msg`] ([`DraftMsg`]); [`DraftZSocket`] wraps the usual send and receive around that.
//!
//! A group is bytes without NUL, at most [`ZMQ_GROUP_MAX_LENGTH`] of them (libzmq passes
//! groups as C strings).

use std::ffi::{c_int, CStr, CString};

use zmtp_conformance::ffi::{check, Msg, ZSocket, ZmqError};

/// Socket type `ZMQ_SERVER` (draft): talks to CLIENTs, replies by routing id.
pub const ZMQ_SERVER: c_int = 12;
/// Socket type `ZMQ_CLIENT` (draft): talks to SERVERs, round robin.
pub const ZMQ_CLIENT: c_int = 13;
/// Socket type `ZMQ_RADIO` (draft): sends each message to the DISHes that joined its group.
pub const ZMQ_RADIO: c_int = 14;
/// Socket type `ZMQ_DISH` (draft): receives the groups it joined from RADIOs.
pub const ZMQ_DISH: c_int = 15;
/// Socket type `ZMQ_GATHER` (draft): receives from SCATTERs, fair queued.
pub const ZMQ_GATHER: c_int = 16;
/// Socket type `ZMQ_SCATTER` (draft): sends to GATHERs, round robin.
pub const ZMQ_SCATTER: c_int = 17;
/// Socket type `ZMQ_DGRAM` (draft): UDP datagrams, `[address][body]`.
pub const ZMQ_DGRAM: c_int = 18;
/// Socket type `ZMQ_PEER` (draft): talks to PEERs, connects with `zmq_connect_peer` and
/// addresses them by routing id.
pub const ZMQ_PEER: c_int = 19;
/// Socket type `ZMQ_CHANNEL` (draft): one CHANNEL peer, like PAIR.
pub const ZMQ_CHANNEL: c_int = 20;

/// The longest group in bytes (`ZMQ_GROUP_MAX_LENGTH`).
pub const ZMQ_GROUP_MAX_LENGTH: usize = 255;

/// The raw draft calls. Declarations follow `zmq.h` of libzmq 4.3.5 exactly; like those of
/// [`zmtp_conformance::ffi`] they name no library (this package's build script links the
/// static draft build).
mod sys {
    use std::ffi::{c_char, c_int, c_void};

    // `void *` socket handles, `zmq_msg_t *` messages (passed as `void *`: the type is
    // opaque here and comes from `Msg::as_raw`), NUL-terminated group and endpoint strings.
    unsafe extern "C" {
        pub fn zmq_join(s: *mut c_void, group: *const c_char) -> c_int;
        pub fn zmq_leave(s: *mut c_void, group: *const c_char) -> c_int;
        pub fn zmq_connect_peer(s: *mut c_void, addr: *const c_char) -> u32;

        pub fn zmq_msg_set_routing_id(msg: *mut c_void, routing_id: u32) -> c_int;
        pub fn zmq_msg_routing_id(msg: *mut c_void) -> u32;
        pub fn zmq_msg_set_group(msg: *mut c_void, group: *const c_char) -> c_int;
        pub fn zmq_msg_group(msg: *mut c_void) -> *const c_char;
    }
}

/// `group` as a C string for libzmq.
///
/// # Panics
/// If `group` contains a NUL byte or is longer than [`ZMQ_GROUP_MAX_LENGTH`]: libzmq would
/// cut the first short silently, and `zmq_msg_set_group` the second.
fn group_cstring(group: &[u8]) -> CString {
    assert!(
        group.len() <= ZMQ_GROUP_MAX_LENGTH,
        "a group has at most {ZMQ_GROUP_MAX_LENGTH} bytes, not {}",
        group.len()
    );
    CString::new(group).expect("group without NUL bytes")
}

/// The draft properties of a libzmq message.
pub trait DraftMsg {
    /// The routing id of the pipe a SERVER or PEER received this message from; 0 for none
    /// (`zmq_msg_routing_id`).
    fn routing_id(&mut self) -> u32;

    /// Address this message to the pipe `routing_id` before a SERVER or PEER sends it
    /// (`zmq_msg_set_routing_id`); 0 is refused (`EINVAL`).
    fn set_routing_id(&mut self, routing_id: u32) -> Result<(), ZmqError>;

    /// The group a DISH received this message in, empty for none (`zmq_msg_group`).
    fn group(&mut self) -> Vec<u8>;

    /// Put this message in `group` before a RADIO sends it (`zmq_msg_set_group`).
    ///
    /// # Panics
    /// If `group` contains a NUL byte or is longer than [`ZMQ_GROUP_MAX_LENGTH`].
    fn set_group(&mut self, group: &[u8]) -> Result<(), ZmqError>;
}

impl DraftMsg for Msg {
    fn routing_id(&mut self) -> u32 {
        // SAFETY: `as_raw` points to this initialised `zmq_msg_t`, alive for the call;
        // libzmq only reads the routing id field.
        unsafe { sys::zmq_msg_routing_id(self.as_raw()) }
    }

    fn set_routing_id(&mut self, routing_id: u32) -> Result<(), ZmqError> {
        // SAFETY: `as_raw` points to this initialised `zmq_msg_t`, alive and not otherwise
        // borrowed for the call; libzmq only stores the id in it.
        check(unsafe { sys::zmq_msg_set_routing_id(self.as_raw(), routing_id) })?;
        Ok(())
    }

    fn group(&mut self) -> Vec<u8> {
        // SAFETY: `as_raw` points to this initialised `zmq_msg_t`; libzmq returns a pointer
        // to the NUL-terminated group stored in (or owned by) the message, never null.
        let group = unsafe { sys::zmq_msg_group(self.as_raw()) };
        // SAFETY: `group` is a valid NUL-terminated string that lives as long as the
        // message, which is not changed before the bytes are copied out here.
        unsafe { CStr::from_ptr(group) }.to_bytes().to_vec()
    }

    fn set_group(&mut self, group: &[u8]) -> Result<(), ZmqError> {
        let c = group_cstring(group);
        // SAFETY: `as_raw` points to this initialised `zmq_msg_t`; `c` is a NUL-terminated
        // string of at most `ZMQ_GROUP_MAX_LENGTH` bytes that outlives the call (libzmq
        // copies it into the message).
        check(unsafe { sys::zmq_msg_set_group(self.as_raw(), c.as_ptr()) })?;
        Ok(())
    }
}

/// A message received on a draft socket: its single frame and its draft properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftMessage {
    /// The body.
    pub body: Vec<u8>,
    /// The routing id of the pipe it came from (SERVER, PEER); 0 on other types.
    pub routing_id: u32,
    /// Its group (DISH); empty on other types.
    pub group: Vec<u8>,
}

/// The draft calls on a libzmq socket.
pub trait DraftZSocket {
    /// Join `group` on a DISH (`zmq_join`): the RADIOs it is connected to start sending that
    /// group's messages. Joining a group twice fails with `EINVAL`.
    ///
    /// # Panics
    /// If `group` contains a NUL byte or is longer than [`ZMQ_GROUP_MAX_LENGTH`].
    fn join(&self, group: &[u8]) -> Result<(), ZmqError>;

    /// Leave `group` on a DISH (`zmq_leave`).
    ///
    /// # Panics
    /// If `group` contains a NUL byte or is longer than [`ZMQ_GROUP_MAX_LENGTH`].
    fn leave(&self, group: &[u8]) -> Result<(), ZmqError>;

    /// Connect a PEER to `endpoint` (`zmq_connect_peer`) and return the routing id of the
    /// new pipe, to send to it with [`DraftZSocket::send_to`]. Fails with `ENOTSUP` on other
    /// socket types.
    ///
    /// # Panics
    /// If `endpoint` contains a NUL byte.
    fn connect_peer(&self, endpoint: &str) -> Result<u32, ZmqError>;

    /// Send `body` to the pipe `routing_id` of a SERVER or PEER. `flags` may hold
    /// `ZMQ_DONTWAIT`; an unknown id fails with `EHOSTUNREACH`.
    fn send_to(&self, routing_id: u32, body: &[u8], flags: c_int) -> Result<(), ZmqError>;

    /// Send `body` in `group` from a RADIO. `flags` may hold `ZMQ_DONTWAIT`.
    ///
    /// # Panics
    /// If `group` contains a NUL byte or is longer than [`ZMQ_GROUP_MAX_LENGTH`].
    fn send_group(&self, group: &[u8], body: &[u8], flags: c_int) -> Result<(), ZmqError>;

    /// Receive one message with its routing id and group, blocking up to `ZMQ_RCVTIMEO`
    /// (`EAGAIN` on timeout).
    fn recv_draft(&self) -> Result<DraftMessage, ZmqError>;
}

impl DraftZSocket for ZSocket<'_> {
    fn join(&self, group: &[u8]) -> Result<(), ZmqError> {
        let c = group_cstring(group);
        // SAFETY: `as_raw` is this live socket, used on its own thread; `c` is a
        // NUL-terminated string that outlives the call (libzmq copies it).
        check(unsafe { sys::zmq_join(self.as_raw(), c.as_ptr()) })?;
        Ok(())
    }

    fn leave(&self, group: &[u8]) -> Result<(), ZmqError> {
        let c = group_cstring(group);
        // SAFETY: as in `join`: a live socket and a NUL-terminated string outliving the call.
        check(unsafe { sys::zmq_leave(self.as_raw(), c.as_ptr()) })?;
        Ok(())
    }

    fn connect_peer(&self, endpoint: &str) -> Result<u32, ZmqError> {
        let c = CString::new(endpoint).expect("endpoint without NUL bytes");
        // SAFETY: `as_raw` is this live socket; `c` is a NUL-terminated string that outlives
        // the call (libzmq copies it). libzmq checks the socket type itself.
        let routing_id = unsafe { sys::zmq_connect_peer(self.as_raw(), c.as_ptr()) };
        if routing_id == 0 {
            return Err(ZmqError::last());
        }
        Ok(routing_id)
    }

    fn send_to(&self, routing_id: u32, body: &[u8], flags: c_int) -> Result<(), ZmqError> {
        let mut msg = Msg::with_data(body);
        msg.set_routing_id(routing_id)?;
        self.send_msg(&mut msg, flags)
    }

    fn send_group(&self, group: &[u8], body: &[u8], flags: c_int) -> Result<(), ZmqError> {
        let mut msg = Msg::with_data(body);
        msg.set_group(group)?;
        self.send_msg(&mut msg, flags)
    }

    fn recv_draft(&self) -> Result<DraftMessage, ZmqError> {
        let mut msg = Msg::new();
        self.recv_msg(&mut msg)?;
        Ok(DraftMessage {
            body: msg.data().to_vec(),
            routing_id: msg.routing_id(),
            group: msg.group(),
        })
    }
}
