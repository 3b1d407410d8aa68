//! PLAIN, CURVE and ZAP between our own sockets on the smol driver: the shared tests of
//! `zmtp_async::testing::security` on `zmtp_smol::block_on`.

use zmtp_smol::Smol;

zmtp_async::security_tests!(Smol, zmtp_smol::block_on);
