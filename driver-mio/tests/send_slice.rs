//! `send_slice`: a reused buffer copied once per send, the HWM, and SNDTIMEO.

use std::time::{Duration, Instant};

use zmtp_mio::{Context, Error, Options, SendError, Sent, SocketType};

const T: Option<Duration> = Some(Duration::from_secs(5));

#[test]
fn send_slice_copies_a_reused_buffer() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let mut buf = [0u8; 64];
    for i in 0..5000u32 {
        buf[..4].copy_from_slice(&i.to_le_bytes());
        assert_eq!(push.send_slice(&buf).unwrap(), Sent::Queued);
    }
    for i in 0..5000u32 {
        let m = pull.recv_timeout(T).unwrap();
        assert_eq!(m.frames().len(), 1);
        assert_eq!(m.frames()[0].len(), 64);
        assert_eq!(m.frames()[0][..4], i.to_le_bytes());
    }
}

#[test]
fn send_slice_at_the_hwm_hands_back_a_copy_then_times_out() {
    let ctx = Context::new().unwrap();
    let mut options = Options::default();
    options.sndhwm = 1;
    // What stays queued is dropped at the end, not waited for by the context.
    options.linger = Some(Duration::ZERO);
    let push = ctx.socket_with(SocketType::Push, options).unwrap();
    // Nobody listens there: the connect queue holds SNDHWM = 1 message.
    push.connect("tcp://127.0.0.1:1").unwrap();
    assert_eq!(push.try_send_slice(b"first"), Ok(Sent::Queued));
    match push.try_send_slice(b"second") {
        Err(SendError::WouldBlock(back)) => assert_eq!(&back.frames()[0][..], b"second"),
        other => panic!("{other:?}"),
    }
    push.set_sndtimeo(Some(Duration::from_millis(100)));
    let start = Instant::now();
    assert!(matches!(push.send_slice(b"third"), Err(Error::Timeout)));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(90) && waited < Duration::from_secs(2),
        "waited {waited:?}"
    );
}
