//! A socket monitor: the connection events of a server and of a client.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_monitor`.
//!
//! `Socket::monitor` returns a `Monitor` of the socket's events from then on (libzmq's
//! `zmq_socket_monitor`, without the PAIR socket): read them with `next().await`, or as a
//! `Stream`. Take it before `bind` or `connect` to see their events too.

use std::time::Duration;

use zmtp_tokio::{Monitor, MonitorEventKind, Socket, SocketType};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Socket::new(SocketType::Rep)?;
    let mut server_events = server.monitor();
    let endpoint = server.bind("tcp://127.0.0.1:*").await?;

    let client = Socket::new(SocketType::Req)?;
    let mut client_events = client.monitor();
    client.connect(&endpoint)?;
    client.send("ping").await?;
    let request = server.recv().await?;
    server.send(request).await?;
    println!("client: reply {}", client.recv().await?);

    // The server sees the client arrive...
    expect(
        "server",
        &mut server_events,
        &[
            MonitorEventKind::Listening,
            MonitorEventKind::Accepted,
            MonitorEventKind::HandshakeSucceeded,
        ],
    )
    .await?;
    expect(
        "client",
        &mut client_events,
        &[
            MonitorEventKind::Connected,
            MonitorEventKind::HandshakeSucceeded,
        ],
    )
    .await?;

    // ...and leave.
    client.close().await;
    expect(
        "server",
        &mut server_events,
        &[MonitorEventKind::Disconnected],
    )
    .await?;
    // The client's monitor ends with the socket.
    while let Some(event) = client_events.next().await {
        println!("client: {} {}", event.kind, event.endpoint);
    }
    println!("client: monitor ended");
    Ok(())
}

/// Print the monitor's events until each of `kinds` has been seen, in this order (other
/// events may come between them); fail after a second without the next one.
async fn expect(
    name: &str,
    monitor: &mut Monitor,
    kinds: &[MonitorEventKind],
) -> Result<(), String> {
    for &kind in kinds {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(1), monitor.next())
                .await
                .map_err(|_| format!("{name}: no {kind} event"))?
                .ok_or_else(|| format!("{name}: the monitor ended before {kind}"))?;
            println!(
                "{name}: {} {} (value {})",
                event.kind, event.endpoint, event.value
            );
            if event.kind == kind {
                break;
            }
        }
    }
    Ok(())
}
