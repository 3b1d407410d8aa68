//! The libzmq side of the security tests: libzmq's CURVE test keys, PLAIN and CURVE
//! socket options on libzmq sockets, and checks of libzmq's monitor.

use std::time::Duration;

use zmtp_proto::curve_crypto::KeyPair;
use zmtp_proto::z85;

use crate::ffi::{
    Ctx, Monitor, MonitorEvent, ZSocket, ZMQ_CURVE_PUBLICKEY, ZMQ_CURVE_SECRETKEY,
    ZMQ_CURVE_SERVER, ZMQ_CURVE_SERVERKEY, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH,
    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL,
    ZMQ_EVENT_HANDSHAKE_SUCCEEDED, ZMQ_PLAIN_PASSWORD, ZMQ_PLAIN_SERVER, ZMQ_PLAIN_USERNAME,
    ZMQ_RCVTIMEO, ZMQ_SNDTIMEO, ZMQ_ZAP_DOMAIN,
};

/// libzmq's client test public key (zmq_curve(7)), in Z85.
pub const CLIENT_PUBLIC: &[u8] = b"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
/// libzmq's client test secret key, in Z85.
pub const CLIENT_SECRET: &[u8] = b"D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
/// libzmq's server test public key, in Z85.
pub const SERVER_PUBLIC: &[u8] = b"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
/// libzmq's server test secret key, in Z85.
pub const SERVER_SECRET: &[u8] = b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

/// A Z85 key as 32 raw bytes.
pub fn key(text: &[u8]) -> [u8; 32] {
    z85::decode_key(text).expect("a valid Z85 key")
}

/// The client test key pair.
pub fn client_keys() -> KeyPair {
    let keys = KeyPair::from_secret(key(CLIENT_SECRET));
    assert_eq!(keys.public.0, key(CLIENT_PUBLIC), "client test key pair");
    keys
}

/// The server test key pair.
pub fn server_keys() -> KeyPair {
    let keys = KeyPair::from_secret(key(SERVER_SECRET));
    assert_eq!(keys.public.0, key(SERVER_PUBLIC), "server test key pair");
    keys
}

/// A key pair nobody trusts, for "wrong server key" scenarios.
pub fn stranger_keys() -> KeyPair {
    KeyPair::from_secret([0x42; 32])
}

/// Make `z` a libzmq PLAIN server (with a ZAP domain, which libzmq forwards to ZAP).
pub fn zplain_server(z: &ZSocket<'_>) {
    z.set_int(ZMQ_PLAIN_SERVER, 1).expect("ZMQ_PLAIN_SERVER");
    z.set_str(ZMQ_ZAP_DOMAIN, "test").expect("ZMQ_ZAP_DOMAIN");
}

/// Make `z` a libzmq PLAIN client.
pub fn zplain_client(z: &ZSocket<'_>, username: &[u8], password: &[u8]) {
    z.set_bytes(ZMQ_PLAIN_USERNAME, username)
        .expect("ZMQ_PLAIN_USERNAME");
    z.set_bytes(ZMQ_PLAIN_PASSWORD, password)
        .expect("ZMQ_PLAIN_PASSWORD");
}

/// Make `z` a libzmq CURVE server with the test server keys.
pub fn zcurve_server(z: &ZSocket<'_>) {
    z.set_int(ZMQ_CURVE_SERVER, 1).expect("ZMQ_CURVE_SERVER");
    z.set_bytes(ZMQ_CURVE_SECRETKEY, &key(SERVER_SECRET))
        .expect("ZMQ_CURVE_SECRETKEY");
    z.set_str(ZMQ_ZAP_DOMAIN, "test").expect("ZMQ_ZAP_DOMAIN");
}

/// Make `z` a libzmq CURVE client with the test client keys, trusting `server_key`.
pub fn zcurve_client(z: &ZSocket<'_>, server_key: &[u8; 32]) {
    z.set_bytes(ZMQ_CURVE_SERVERKEY, server_key)
        .expect("ZMQ_CURVE_SERVERKEY");
    z.set_bytes(ZMQ_CURVE_PUBLICKEY, &key(CLIENT_PUBLIC))
        .expect("ZMQ_CURVE_PUBLICKEY");
    z.set_bytes(ZMQ_CURVE_SECRETKEY, &key(CLIENT_SECRET))
        .expect("ZMQ_CURVE_SECRETKEY");
}

/// The monitor events read so far, one per line, for failure messages and `--nocapture`.
pub fn show(events: &[MonitorEvent]) -> String {
    events
        .iter()
        .map(|e| format!("  {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wait for libzmq's monitor to report a handshake failure, and check that it is
/// HANDSHAKE_FAILED_AUTH with `status` and that no handshake succeeded.
pub fn expect_auth_failure(mon: &mut Monitor<'_>, status: u32, timeout: Duration) {
    let seen = mon.wait_for(timeout, |e| {
        matches!(
            e.event,
            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        )
    });
    eprintln!("libzmq monitor:\n{}", show(mon.events()));
    let e = seen.expect("libzmq reported no handshake failure");
    assert_eq!(
        (e.event, e.value),
        (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, status),
        "libzmq's handshake failure: {e}"
    );
    assert!(
        !mon.events()
            .iter()
            .any(|e| e.event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
        "libzmq reported a successful handshake:\n{}",
        show(mon.events())
    );
}

/// libzmq's blocking send/receive timeout for test sockets, in milliseconds.
pub const BLOCKING_TIMEOUT_MS: std::ffi::c_int = 5000;

/// A libzmq socket of type `kind` with bounded blocking calls.
pub fn zsock(ctx: &Ctx, kind: std::ffi::c_int) -> ZSocket<'_> {
    let z = ctx.socket(kind).expect("zmq_socket");
    z.set_int(ZMQ_SNDTIMEO, BLOCKING_TIMEOUT_MS)
        .expect("ZMQ_SNDTIMEO");
    z.set_int(ZMQ_RCVTIMEO, BLOCKING_TIMEOUT_MS)
        .expect("ZMQ_RCVTIMEO");
    z
}
