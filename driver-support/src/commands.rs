//! One command loop for every driver.
//!
//! After each input a driver drains what its socket asks of it: the monitor events
//! ([`Socket::poll_monitor`]) and the commands ([`Socket::poll_command`]: listen, connect,
//! stop listening, close a peer, resume reading, ask the ZAP handler, closed). The order
//! and the dispatch are written once here, in [`run_commands`]; each driver says what a
//! command means for its I/O by implementing [`CommandHandler`], and matches on no
//! [`Command`] itself. The trait does no I/O of its own, so an in-memory test network
//! implements it as well as a real driver does.

use zmtp_proto::socket::{Command, Endpoint, EndpointId, MonitorEvent, PeerId, Socket, ZapRequest};

use crate::UdpOpen;

/// `EPROTONOSUPPORT`: what a driver without udp answers an `OpenUdp` with.
const EPROTONOSUPPORT: u32 = 93;

/// What a driver does for each command of its socket: one method per [`Command`].
///
/// Implement it on whatever reaches both the socket and the driver's I/O at the time
/// (often a short-lived context holding the driver's lock guard), and call
/// [`run_commands`] after every input to the socket. Each method carries out one command
/// and answers the socket as the command's documentation says (`handle_listening`,
/// `handle_connected`, `handle_auth`...), at once or later.
pub trait CommandHandler {
    /// The socket whose commands these are; `None` once the driver has forgotten it (for
    /// example in [`closed`](Self::closed)), which ends [`run_commands`].
    fn socket(&mut self) -> Option<&mut Socket>;

    /// [`Command::Listen`]: bind `addr`, then answer `handle_listening` with the resolved
    /// endpoint, or `handle_bind_failed`.
    fn listen(&mut self, endpoint: EndpointId, addr: Endpoint);

    /// [`Command::Connect`]: open a stream to `addr` (to each address a host name resolves
    /// to, in order, until one connects), then answer `handle_connected` or
    /// `handle_connect_failed`.
    fn connect(&mut self, endpoint: EndpointId, addr: Endpoint);

    /// [`Command::StopListening`]: close the listener of `endpoint` (and remove its socket
    /// file).
    fn stop_listening(&mut self, endpoint: EndpointId);

    /// [`Command::ClosePeer`]: close the peer's stream.
    fn close_peer(&mut self, peer: PeerId);

    /// [`Command::Resume`]: the peer may be read again.
    fn resume(&mut self, peer: PeerId);

    /// [`Command::Authenticate`]: ask the ZAP handler about the peer and answer
    /// `handle_auth`, or answer `AuthReply::NoHandler` when there is none.
    fn authenticate(&mut self, peer: PeerId, request: ZapRequest);

    /// [`Command::OpenUdp`]: open the UDP socket of a `udp://` endpoint (with
    /// [`open_udp`](crate::open_udp)), answer a bind with `handle_listening`, a failure
    /// with `handle_udp_failed`, and from then on send what `poll_datagram` gives and hand
    /// what a bound one receives to `handle_datagram`. By default udp is not supported:
    /// the endpoint fails with `EPROTONOSUPPORT`.
    fn open_udp(&mut self, endpoint: EndpointId, open: UdpOpen) {
        let _ = open;
        if let Some(socket) = self.socket() {
            socket.handle_udp_failed(endpoint, EPROTONOSUPPORT);
        }
    }

    /// A monitor event, in the order the socket raised it among the commands.
    fn monitor(&mut self, event: MonitorEvent);

    /// [`Command::Closed`]: the socket finished closing; let go of every stream and
    /// listener.
    fn closed(&mut self);
}

/// Drain the socket's monitor events and commands into `handler`, until both queues are
/// empty (carrying out a command may raise more) or the socket is gone. Monitor events
/// raised before a command are handed over before it is carried out (the last events
/// before [`Command::Closed`] reach the monitor). Returns how many commands were carried
/// out.
pub fn run_commands(handler: &mut impl CommandHandler) -> usize {
    let mut commands = 0;
    loop {
        let Some(socket) = handler.socket() else {
            return commands;
        };
        if let Some(event) = socket.poll_monitor() {
            handler.monitor(event);
            continue;
        }
        let Some(command) = socket.poll_command() else {
            return commands;
        };
        commands += 1;
        dispatch(handler, command);
    }
}

/// Carry out one command (out of line: commands are rare next to the data path that
/// calls [`run_commands`] to find none).
#[inline(never)]
fn dispatch(handler: &mut impl CommandHandler, command: Command) {
    match command {
        Command::Listen { endpoint, addr } => handler.listen(endpoint, addr),
        Command::Connect { endpoint, addr } => handler.connect(endpoint, addr),
        Command::StopListening { endpoint } => handler.stop_listening(endpoint),
        Command::ClosePeer { peer } => handler.close_peer(peer),
        Command::Resume { peer } => handler.resume(peer),
        Command::Authenticate { peer, request } => handler.authenticate(peer, request),
        Command::Closed => handler.closed(),
        Command::OpenUdp {
            endpoint,
            addr,
            bind,
            multicast_loop,
            multicast_hops,
        } => handler.open_udp(
            endpoint,
            UdpOpen {
                addr,
                bind,
                multicast_loop,
                multicast_hops,
            },
        ),
        // A command added to the core later than this crate: nothing to carry out.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmtp_proto::socket::Options;
    use zmtp_proto::{Instant, SocketType};

    /// Records what it is asked and answers like a network where every bind and connect
    /// succeeds.
    struct Recorder {
        socket: Option<Socket>,
        log: Vec<String>,
    }

    impl CommandHandler for Recorder {
        fn socket(&mut self) -> Option<&mut Socket> {
            self.socket.as_mut()
        }
        fn listen(&mut self, endpoint: EndpointId, addr: Endpoint) {
            self.log.push(format!("listen {addr}"));
            let s = self.socket.as_mut().unwrap();
            s.handle_listening(endpoint, "tcp://127.0.0.1:5555");
        }
        fn connect(&mut self, endpoint: EndpointId, addr: Endpoint) {
            self.log.push(format!("connect {addr}"));
            let s = self.socket.as_mut().unwrap();
            s.handle_connected(endpoint, "127.0.0.1", Instant::ZERO);
        }
        fn stop_listening(&mut self, _: EndpointId) {
            self.log.push("stop listening".into());
        }
        fn close_peer(&mut self, _: PeerId) {
            self.log.push("close peer".into());
        }
        fn resume(&mut self, _: PeerId) {
            self.log.push("resume".into());
        }
        fn authenticate(&mut self, _: PeerId, _: ZapRequest) {
            self.log.push("authenticate".into());
        }
        fn monitor(&mut self, event: MonitorEvent) {
            self.log.push(format!("monitor {:?}", event.kind));
        }
        fn closed(&mut self) {
            self.log.push("closed".into());
            // Forgotten: the loop ends even with more queued.
            self.socket = None;
        }
    }

    #[test]
    fn commands_and_monitor_events_in_order() {
        let mut socket = Socket::new(SocketType::Dealer, Options::default(), 1).unwrap();
        socket.set_monitor(0xFFFF);
        socket.bind("tcp://127.0.0.1:*").unwrap();
        socket.connect("tcp://localhost:6666").unwrap();
        let mut r = Recorder {
            socket: Some(socket),
            log: Vec::new(),
        };
        let n = run_commands(&mut r);
        assert_eq!(n, 2);
        // Monitor events are handed over before the next command; an answer's events
        // after the command that caused them.
        assert_eq!(
            r.log,
            [
                "monitor ConnectDelayed",
                "listen tcp://127.0.0.1:*",
                "monitor Listening",
                "connect tcp://localhost:6666",
                "monitor Connected",
            ]
        );
        // Nothing left.
        assert_eq!(run_commands(&mut r), 0);

        // Closing without linger: the peer and the listener go, then the socket.
        r.log.clear();
        let s = r.socket.as_mut().unwrap();
        let mut options = s.options().clone();
        options.linger = Some(std::time::Duration::ZERO);
        s.set_options(options).unwrap();
        s.close(Instant::ZERO);
        run_commands(&mut r);
        assert_eq!(
            r.log.last().map(String::as_str),
            Some("closed"),
            "{:?}",
            r.log
        );
        assert!(r.log.contains(&"close peer".to_string()), "{:?}", r.log);
        assert!(r.socket.is_none());
    }
}
