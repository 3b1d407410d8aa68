//! The tokio driver between our own sockets, over every transport: the shared driver tests
//! of `zmtp_async::testing` on a current-thread runtime, plus what only tokio has.

use zmtp_tokio::{Socket, SocketType, Tokio};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

zmtp_async::driver_tests!(Tokio, block_on);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dealer_router_many_peers_multithreaded() {
    zmtp_async::testing::dealer_router_many_peers::<Tokio>().await;
}

#[test]
fn outside_a_runtime_is_an_error_not_a_panic() {
    assert!(matches!(
        Socket::new(SocketType::Pair),
        Err(zmtp_tokio::Error::NoRuntime)
    ));
}

/// An accepted connection's greeting waits for one read of the peer's (so that both
/// leave in one write when the peer's is there already); a peer that waits for ours
/// before it sends anything still gets it at once, and the handshake completes.
#[tokio::test]
async fn a_peer_that_waits_for_our_greeting_gets_it() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use zmtp_tokio::Message;

    let router = Socket::new(SocketType::Router).unwrap();
    let endpoint = router.bind("tcp://127.0.0.1:*").await.unwrap();
    let addr = endpoint.strip_prefix("tcp://").unwrap();
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut signature = [0u8; 10];
    tokio::time::timeout(Duration::from_secs(5), raw.read_exact(&mut signature))
        .await
        .expect("no greeting from the ROUTER while the peer waits")
        .unwrap();
    assert_eq!((signature[0], signature[9]), (0xFF, 0x7F));
    // Now the peer's greeting and READY, then a message: it arrives.
    let mut hello = zmtp_testkit::wire::dealer_hello();
    hello.extend_from_slice(&[0x00, 0x02, b'h', b'i']);
    raw.write_all(&hello).await.unwrap();
    let got: Message = tokio::time::timeout(Duration::from_secs(5), router.recv())
        .await
        .expect("no message")
        .unwrap();
    assert_eq!(got.frames().last().map(|f| &f[..]), Some(&b"hi"[..]));
}
