//! The options about connections coming and going on the async drivers (their setters come
//! from the same table as the core's options): a refused connect with `RECONNECT_STOP`,
//! and the hello and hiccup messages.

use std::time::Duration;

use zmtp_tokio::{Message, ReconnectStop, Socket, SocketType};

const T: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_refused_connect_ends_the_endpoint_with_reconnect_stop_conn_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("tcp://127.0.0.1:{port}");
    for stop in [ReconnectStop::NEVER, ReconnectStop::from_bits(1)] {
        let sub = Socket::new(SocketType::Sub).unwrap();
        sub.set_reconnect_stop(stop).unwrap();
        sub.connect(&ep).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(sub.disconnect(&ep).is_err(), stop.conn_refused, "{stop:?}");
    }
}

#[tokio::test]
async fn hello_and_hiccup_messages() {
    let server = Socket::new(SocketType::Server).unwrap();
    let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
    let client = Socket::new(SocketType::Client).unwrap();
    client.set_hello_msg("H").unwrap();
    client.set_hiccup_msg("HICCUP").unwrap();
    client.connect(&ep).unwrap();
    let hello: Message = tokio::time::timeout(T, server.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&hello.frames()[0][..], b"H");
    drop(server);
    let hiccup: Message = tokio::time::timeout(T, client.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&hiccup.frames()[0][..], b"HICCUP");
}
