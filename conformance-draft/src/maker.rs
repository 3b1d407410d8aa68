//! The draft libzmq as an implementation of the conformance suite's draft scenarios
//! ([`zmtp_conformance::draft`]): [`Libzmq`] makes libzmq sockets behind its
//! [`DraftSocket`] trait, so that every scenario runs with libzmq on either side, against
//! itself and against each of our drivers.

use std::ffi::c_int;
use std::sync::OnceLock;

use zmtp_conformance::draft::{Curve, Draft, DraftMaker, DraftSocket, Refusal};
use zmtp_conformance::ffi::{
    Ctx, ZSocket, ZmqError, ZMQ_CURVE_PUBLICKEY, ZMQ_CURVE_SECRETKEY, ZMQ_CURVE_SERVER,
    ZMQ_CURVE_SERVERKEY, ZMQ_DONTWAIT, ZMQ_RCVTIMEO, ZMQ_RECONNECT_IVL, ZMQ_SNDTIMEO,
};
use zmtp_conformance::our::Transport;
use zmtp_proto::curve_crypto::KeyPair;
use zmtp_proto::SocketType;

use crate::draft::DraftZSocket;

/// The libzmq context of every socket [`Libzmq`] makes: one per process, never terminated
/// (the sockets are boxed as `'static` trait objects, so they borrow it for good).
fn context() -> &'static Ctx {
    static CTX: OnceLock<Ctx> = OnceLock::new();
    CTX.get_or_init(Ctx::new)
}

/// The draft libzmq as a [`DraftMaker`], named `libzmq` in reports. It offers tcp and both
/// kinds of ipc (libzmq's inproc reaches only its own context).
#[derive(Debug, Clone, Copy, Default)]
pub struct Libzmq;

impl Libzmq {
    /// Set the CURVE options of `z` for `curve`.
    fn secure(z: &ZSocket<'_>, curve: &Curve) -> Result<(), ZmqError> {
        let own = |keys: &KeyPair| -> Result<(), ZmqError> {
            z.set_bytes(ZMQ_CURVE_PUBLICKEY, &keys.public.0)?;
            z.set_bytes(ZMQ_CURVE_SECRETKEY, keys.secret.as_bytes())
        };
        match curve {
            Curve::Off => Ok(()),
            Curve::Server(keys) => {
                z.set_int(ZMQ_CURVE_SERVER, 1)?;
                own(keys)
            }
            Curve::Client { server, keys } => {
                z.set_bytes(ZMQ_CURVE_SERVERKEY, server)?;
                own(keys)
            }
        }
    }
}

impl DraftMaker for Libzmq {
    fn name(&self) -> &'static str {
        "libzmq"
    }

    /// A libzmq socket of `ty` (whose discriminant is libzmq's number) that never blocks:
    /// zero send and receive timeouts, and a short reconnect interval like our sockets'.
    ///
    /// # Panics
    /// If libzmq refuses the socket or an option.
    fn socket(&self, ty: SocketType, curve: &Curve) -> Box<dyn DraftSocket> {
        let z = context()
            .socket(ty as c_int)
            .unwrap_or_else(|e| panic!("zmq_socket({ty:?}): {e}"));
        z.set_int(ZMQ_SNDTIMEO, 0).expect("ZMQ_SNDTIMEO");
        z.set_int(ZMQ_RCVTIMEO, 0).expect("ZMQ_RCVTIMEO");
        z.set_int(ZMQ_RECONNECT_IVL, 20).expect("ZMQ_RECONNECT_IVL");
        Libzmq::secure(&z, curve).unwrap_or_else(|e| panic!("CURVE options: {e}"));
        Box::new(LibzmqDraft(z))
    }

    fn transports(&self) -> &'static [Transport] {
        &[Transport::Tcp, Transport::Ipc, Transport::IpcAbstract]
    }
}

/// One libzmq socket behind [`DraftSocket`].
struct LibzmqDraft(ZSocket<'static>);

/// A failed send as the suite sees it: `EAGAIN` is "try later", the rest is described.
fn refusal(e: ZmqError) -> Refusal {
    if e.is_again() {
        Refusal::WouldBlock
    } else {
        Refusal::Other(e.to_string())
    }
}

/// The draft flags of a send: never wait.
const SEND_FLAGS: c_int = ZMQ_DONTWAIT;

impl DraftSocket for LibzmqDraft {
    fn bind(&mut self, endpoint: &str) -> Result<String, String> {
        self.0.bind(endpoint).map_err(|e| e.to_string())?;
        self.0.last_endpoint().map_err(|e| e.to_string())
    }

    fn connect(&mut self, endpoint: &str) -> Result<(), String> {
        self.0.connect(endpoint).map_err(|e| e.to_string())
    }

    fn connect_peer(&mut self, endpoint: &str) -> Result<u32, String> {
        self.0.connect_peer(endpoint).map_err(|e| e.to_string())
    }

    /// # Panics
    /// If libzmq refuses the join (the group is joined already, or too long).
    fn join(&mut self, group: &[u8]) {
        self.0
            .join(group)
            .unwrap_or_else(|e| panic!("zmq_join({group:?}): {e}"));
    }

    /// # Panics
    /// If libzmq refuses the leave (the group was not joined).
    fn leave(&mut self, group: &[u8]) {
        self.0
            .leave(group)
            .unwrap_or_else(|e| panic!("zmq_leave({group:?}): {e}"));
    }

    fn try_send(&mut self, msg: &Draft) -> Result<(), Refusal> {
        match (msg.routing_id, &msg.group) {
            (Some(id), None) => self.0.send_to(id, &msg.body, SEND_FLAGS),
            (None, Some(group)) => self.0.send_group(group, &msg.body, SEND_FLAGS),
            (None, None) => self.0.send(&msg.body, SEND_FLAGS),
            (Some(_), Some(_)) => panic!("a message with both a routing id and a group"),
        }
        .map_err(refusal)
    }

    fn try_send_multipart(&mut self, frames: &[&[u8]]) -> Result<(), Refusal> {
        self.0.try_send_multipart(frames).map_err(refusal)
    }

    /// # Panics
    /// On any receive error but `EAGAIN`.
    fn try_recv(&mut self) -> Option<Draft> {
        match self.0.recv_draft() {
            Ok(m) => Some(Draft {
                body: m.body,
                routing_id: (m.routing_id != 0).then_some(m.routing_id),
                group: (!m.group.is_empty()).then_some(m.group),
            }),
            Err(e) if e.is_again() => None,
            Err(e) => panic!("zmq_msg_recv: {e}"),
        }
    }

    /// libzmq does its I/O on its own threads.
    fn pump(&mut self) {}
}
