//! Bytes seen on the wire from libzmq 4.3, shared by the wire tests and the seed corpus.

/// A libzmq greeting (NULL, 3.1): its padding holds routing-id length + 1 (G1), as-server
/// is 0 (G2).
pub const LIBZMQ_GREETING: [u8; 64] = {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[8] = 0x01;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 1;
    g[12] = b'N';
    g[13] = b'U';
    g[14] = b'L';
    g[15] = b'L';
    g
};

/// READY from a libzmq DEALER with no routing id.
pub const DEALER_READY: &[u8] =
    b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00";

/// READY from a libzmq SUB.
pub const SUB_READY: &[u8] = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB";

/// The names of the commands ZMTP 3.1 defines (besides the mechanisms' handshake commands).
pub const KNOWN_COMMANDS: [&[u8]; 8] = [
    b"READY",
    b"ERROR",
    b"PING",
    b"PONG",
    b"SUBSCRIBE",
    b"CANCEL",
    b"JOIN",
    b"LEAVE",
];
