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

/// What a raw DEALER peer sends first: a libzmq greeting, then a DEALER's READY.
pub fn dealer_hello() -> Vec<u8> {
    let mut out = LIBZMQ_GREETING.to_vec();
    out.extend_from_slice(DEALER_READY);
    out
}

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

/// ZWS 2.0 (`ws://`), seen on the wire against a draft build of libzmq 4.3.5.
pub mod zws {
    /// READY from a libzmq PAIR server: FIN + binary, length 27 = flags `02` (COMMAND) +
    /// the command body.
    pub const SERVER_READY: &[u8] = b"\x82\x1b\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PAIR";

    /// The masking key of [`CLIENT_READY`].
    pub const CLIENT_MASK: [u8; 4] = [0xa3, 0x8e, 0x1f, 0x29];

    /// READY from a libzmq PAIR client: the payload of [`SERVER_READY`] masked with
    /// [`CLIENT_MASK`] (the mask covers the flags byte too).
    pub const CLIENT_READY: &[u8] = &[
        0x82, 0x9b, 0xa3, 0x8e, 0x1f, 0x29, 0xa1, 0x8b, 0x4d, 0x6c, 0xe2, 0xca, 0x46, 0x22, 0xf0,
        0xe1, 0x7c, 0x42, 0xc6, 0xfa, 0x32, 0x7d, 0xda, 0xfe, 0x7a, 0x29, 0xa3, 0x8e, 0x1b, 0x79,
        0xe2, 0xc7, 0x4d,
    ];

    /// A one-frame message `pong` from a libzmq server (flags `00`).
    pub const SERVER_DATA: &[u8] = b"\x82\x05\x00pong";

    /// libzmq's answer to any ping: a pong with an empty payload.
    pub const PONG: &[u8] = b"\x8a\x00";

    /// libzmq's answer to a close with code 1000 and reason `bye`: the same payload.
    pub const CLOSE_ECHO: &[u8] = b"\x88\x05\x03\xe8bye";

    /// The 16 bytes behind libzmq's first `Sec-WebSocket-Key` in any process (it never
    /// seeds `rand()`): the first four `rand()` values, little-endian.
    pub const LIBZMQ_NONCE: [u8; 16] = [
        0x67, 0x45, 0x8b, 0x6b, 0x69, 0x98, 0x3c, 0xe4, 0x51, 0xdc, 0xb0, 0xf4, 0x4a, 0x94, 0xe8,
        0x2a,
    ];

    /// The `Sec-WebSocket-Key` of [`LIBZMQ_NONCE`].
    pub const LIBZMQ_KEY: &str = "Z0WLa2mYPORR3LD0SpToKg==";

    /// The upgrade request of a libzmq NULL client connecting to
    /// `ws://127.0.0.1:5555/some/path?q=1`, with [`LIBZMQ_KEY`].
    pub const NULL_REQUEST: &[u8] = b"GET /path?q=1 HTTP/1.1\r\n\
Host: 127.0.0.1\r\n\
Upgrade: websocket\r\n\
Connection: Upgrade\r\n\
Sec-WebSocket-Key: Z0WLa2mYPORR3LD0SpToKg==\r\n\
Sec-WebSocket-Protocol: ZWS2.0/NULL,ZWS2.0\r\n\
Sec-WebSocket-Version: 13\r\n\r\n";

    /// A libzmq NULL server's answer to [`NULL_REQUEST`] (the accept value is RFC 6455's
    /// for [`LIBZMQ_KEY`]).
    pub const NULL_RESPONSE: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\n\
Upgrade: websocket\r\n\
Connection: Upgrade\r\n\
Sec-WebSocket-Accept: /M1LsUpCyYJVVMypSkXZRJ/IOlc=\r\n\
Sec-WebSocket-Protocol: ZWS2.0/NULL\r\n\r\n";
}
