//! The smol driver between our own sockets, over every transport: the shared driver tests
//! of `zmtp_async::testing`, on the single-threaded `zmtp_smol::block_on`, plus smol's
//! global (multi-threaded) executor.

use zmtp_smol::Smol;

zmtp_async::driver_tests!(Smol, zmtp_smol::block_on);

#[test]
fn dealer_router_many_peers_on_the_global_executor() {
    // Sockets made outside `zmtp_smol::block_on` run on smol's global executor, on a
    // thread of its own: every wake-up crosses threads.
    smol::block_on(zmtp_async::testing::dealer_router_many_peers::<Smol>());
}

#[test]
fn block_on_drops_the_sockets_its_tasks_own() {
    use zmtp_async::runtime::Runtime;
    use zmtp_smol::{Socket, SocketType};
    let name = "inproc://smol-block-on-drops";
    zmtp_smol::block_on(async {
        let handler = Socket::new(SocketType::Rep).unwrap();
        handler.bind(name).await.unwrap();
        // The socket moves into a task that never ends (as a ZAP handler's loop would).
        let _task = Smol::current().unwrap().spawn(async move {
            let _ = handler.recv().await;
        });
    });
    // The executor went with its tasks and the socket they held: the name is free again.
    zmtp_smol::block_on(async {
        let again = Socket::new(SocketType::Rep).unwrap();
        again
            .bind(name)
            .await
            .expect("the first socket was dropped");
    });
}
