//! Closing sockets that other drivers hand over to linger here, with blocking I/O.
//!
//! An async runtime cannot wait: when it ends (a `#[tokio::main]` returning, a
//! `smol::block_on` done) while one of its sockets still lingers with unwritten messages,
//! the socket's tasks end with it. zmtp-async then hands the socket (its state machine,
//! already closing, and its peers' streams, as `std` streams on the same connections) to
//! [`adopt`], which lets it linger on in a context of this crate whose I/O thread outlives
//! the runtime, exactly as a dropped socket of this crate lingers; [`wait`] (run when the
//! process exits) waits until every socket handed over has written its messages or run
//! out of LINGER, as `zmq_ctx_term` does.

use std::sync::Mutex;

use zmtp_driver::{StdTransport, Tls};
use zmtp_proto::socket::{EndpointId, PeerId, Socket as ProtoSocket};

use crate::{Context, Error};

/// The context that adopted sockets linger in: made by the first [`adopt`], ended by
/// [`wait`].
static CONTEXT: Mutex<Option<Context>> = Mutex::new(None);

/// A closing socket and its connections, as another driver hands them over.
#[derive(Debug)]
pub struct Handover {
    /// The state machine, closing (`close` was called on it).
    pub socket: ProtoSocket,
    /// Its peers' streams, in non-blocking mode, by the peer each belongs to.
    pub streams: Vec<(PeerId, StdTransport)>,
    /// Its connect endpoints whose connection was in flight: they are tried again here.
    pub connecting: Vec<EndpointId>,
    /// Its TLS settings, to reconnect to `wss://` endpoints.
    pub tls: Tls,
}

/// Let a closing socket of another driver linger on here until it has written its
/// messages or run out of LINGER; what LINGER cuts off is said on standard error
/// (`zmtp_driver::loss`). Fails only if no context can be made (no I/O thread).
pub fn adopt(handover: Handover) -> Result<(), Error> {
    let context = {
        let mut context = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
        match &*context {
            Some(c) => c.clone(),
            None => match Context::new() {
                Ok(c) => context.insert(c).clone(),
                Err(e) => {
                    zmtp_driver::loss::report_abandoned(
                        &handover.socket,
                        &format!("no thread could be started to write them ({e})"),
                    );
                    return Err(e);
                }
            },
        }
    };
    context.shared.adopt(
        handover.socket,
        handover.streams,
        &handover.connecting,
        handover.tls,
    );
    Ok(())
}

/// Wait until every socket handed over has finished lingering (at once if none was).
pub fn wait() {
    let context = CONTEXT.lock().unwrap_or_else(|e| e.into_inner()).take();
    // The last handle's drop waits for the sockets dropped in it.
    drop(context);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use zmtp_proto::socket::Options;
    use zmtp_proto::SocketType;

    /// A socket whose connection had not been made yet when it was handed over: it
    /// connects here and delivers what was queued.
    #[test]
    fn a_socket_handed_over_before_it_connected_connects_and_delivers() {
        let ctx = Context::new().unwrap();
        let pull = ctx.socket(SocketType::Pull).unwrap();
        pull.set_rcvtimeo(Some(Duration::from_secs(5)));
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();

        let mut push = zmtp_driver::new_socket(SocketType::Push, Options::default()).unwrap();
        let now = zmtp_driver::clock::now();
        let id = push.connect(&endpoint).unwrap();
        // The other driver took the command to connect, and its connection was in flight.
        assert!(matches!(
            push.poll_command(),
            Some(zmtp_proto::socket::Command::Connect { .. })
        ));
        for i in 0..100u32 {
            push.send(i.to_be_bytes().to_vec(), || now).unwrap();
        }
        push.close(now);
        adopt(Handover {
            socket: push,
            streams: Vec::new(),
            connecting: vec![id],
            tls: Tls::default(),
        })
        .unwrap();
        for i in 0..100u32 {
            assert_eq!(&pull.recv().unwrap().frames()[0][..], &i.to_be_bytes());
        }
        wait();
    }
}
