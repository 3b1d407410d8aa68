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
