//! Waiting on several sockets on the smol driver: the shared tests of
//! `zmtp_async::testing::poll` on `zmtp_smol::block_on`.

use zmtp_smol::Smol;

zmtp_async::poll_tests!(Smol, zmtp_smol::block_on);
