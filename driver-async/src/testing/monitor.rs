//! Monitor events name the peer of a connection.

use super::{unique, within};
use crate::{Monitor, MonitorEvent, MonitorEventKind, Runtime, Socket, SocketType};

/// The next event of `kind`, skipping the others.
pub(super) async fn next_of<R: Runtime>(
    monitor: &mut Monitor,
    kind: MonitorEventKind,
) -> MonitorEvent {
    loop {
        let event = within::<R, _>(monitor.next()).await.expect("monitor open");
        if event.kind == kind {
            return event;
        }
    }
}

/// ACCEPTED names the connecting side's `IP:port` (and DISCONNECTED the same), CONNECTED
/// the listener's; over inproc there is no peer address.
pub async fn monitor_events_name_the_peer<R: Runtime>() {
    use MonitorEventKind::{Accepted, Connected, Disconnected, HandshakeSucceeded};
    let server = Socket::<R>::new(SocketType::Pull).unwrap();
    let mut server_monitor = server.monitor();
    let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
    let listen = ep.strip_prefix("tcp://").unwrap().to_string();

    // A bare TCP client, whose source port the test knows.
    let raw = std::net::TcpStream::connect(&listen).unwrap();
    let source = format!("127.0.0.1:{}", raw.local_addr().unwrap().port());
    let accepted = next_of::<R>(&mut server_monitor, Accepted).await;
    assert_eq!(accepted.peer_address, source);
    assert_eq!(accepted.endpoint, ep);
    drop(raw);
    let lost = next_of::<R>(&mut server_monitor, Disconnected).await;
    assert_eq!(lost.peer_address, source);

    // A socket that connects names the listener, on every connection event.
    let client = Socket::<R>::new(SocketType::Push).unwrap();
    let mut client_monitor = client.monitor();
    client.connect(&ep).unwrap();
    let connected = next_of::<R>(&mut client_monitor, Connected).await;
    assert_eq!(connected.peer_address, listen);
    assert_eq!(connected.endpoint, ep);
    let ready = next_of::<R>(&mut client_monitor, HandshakeSucceeded).await;
    assert_eq!(ready.peer_address, listen);
    let other_side = next_of::<R>(&mut server_monitor, HandshakeSucceeded).await;
    let port = other_side.peer_address.strip_prefix("127.0.0.1:").unwrap();
    assert_ne!(port.parse::<u16>().unwrap(), 0);
    assert_ne!(other_side.peer_address, source);

    // inproc peers have no address.
    let name = format!("inproc://{}", unique("peer-address"));
    let server = Socket::<R>::new(SocketType::Pull).unwrap();
    let mut server_monitor = server.monitor();
    server.bind(&name).await.unwrap();
    let client = Socket::<R>::new(SocketType::Push).unwrap();
    let mut client_monitor = client.monitor();
    client.connect(&name).unwrap();
    let accepted = next_of::<R>(&mut server_monitor, Accepted).await;
    assert_eq!(
        (accepted.endpoint.as_str(), accepted.peer_address.as_str()),
        (name.as_str(), "")
    );
    let connected = next_of::<R>(&mut client_monitor, Connected).await;
    assert_eq!(connected.peer_address, "");
}

/// `tcp://source;destination`: the stream is bound to the source before it connects, so
/// the listener's ACCEPTED names the source port; two connects (to different listeners)
/// may share one source port; a bind with a source is refused.
pub async fn tcp_source_addresses_are_bound_before_connecting<R: Runtime>() {
    use MonitorEventKind::Accepted;
    // A port free a moment ago, for the source.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let source = format!("127.0.0.1:{port}");
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    let mut kept = Vec::new();
    for round in 0..2 {
        let pull = Socket::<R>::new(SocketType::Pull).unwrap();
        let mut monitor = pull.monitor();
        let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
        let from = format!("tcp://{source};{}", ep.strip_prefix("tcp://").unwrap());
        push.connect(&from).unwrap();
        // The second connect shares the first one's source port, both connected.
        let accepted = next_of::<R>(&mut monitor, Accepted).await;
        assert_eq!(accepted.peer_address, source, "connect {round}");
        if round == 0 {
            push.send(format!("from {source}")).await.unwrap();
            let got = within::<R, _>(pull.recv()).await.unwrap();
            assert_eq!(got.to_str(), Ok(format!("from {source}").as_str()));
        }
        kept.push((pull, from));
    }
    // Each is disconnected by the text it was connected with.
    for (_, from) in &kept {
        push.disconnect(from).unwrap();
    }
    let refused = within::<R, _>(push.bind(&format!("tcp://{source};127.0.0.1:*"))).await;
    assert!(refused.is_err(), "{refused:?}");
}
