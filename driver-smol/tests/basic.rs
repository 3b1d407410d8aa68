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
