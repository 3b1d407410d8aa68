//! Waiting on several sockets on the tokio driver: the shared tests of
//! `zmtp_async::testing::poll` on a current-thread runtime.

use zmtp_tokio::Tokio;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

zmtp_async::poll_tests!(Tokio, block_on);
