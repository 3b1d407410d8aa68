//! The socket API's conveniences and refusals: text messages, operations a socket type
//! does not offer, timeouts and options changed through `&self`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zmtp_mio::{Context, Error, Message, Socket, SocketType, TextError};

const T: Option<Duration> = Some(Duration::from_secs(5));

fn push_pull(ctx: &Context) -> (Socket, Socket) {
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    (push, pull)
}

#[test]
fn recv_string_gives_text_and_hands_back_what_is_not() {
    let ctx = Context::new().unwrap();
    let (push, pull) = push_pull(&ctx);
    pull.set_rcvtimeo(T);
    push.send("héllo").unwrap();
    assert_eq!(pull.recv_string().unwrap(), "héllo");
    push.send(["a", "b"]).unwrap();
    match pull.recv_string() {
        Err(Error::NotText { reason, message }) => {
            assert_eq!(reason, TextError::Frames(2));
            assert_eq!(message, Message::from(["a", "b"]));
        }
        other => panic!("{other:?}"),
    }
    push.send(&b"\xffok"[..]).unwrap();
    match pull.recv_string() {
        Err(Error::NotText {
            reason: TextError::Utf8(_),
            message,
        }) => assert_eq!(message.to_string(), "\u{FFFD}ok"),
        other => panic!("{other:?}"),
    }
    // What was not text was taken: the next message is next.
    push.send("after").unwrap();
    assert_eq!(pull.recv_string().unwrap(), "after");
}

#[test]
fn recv_on_a_type_that_never_receives_fails_at_once() {
    let ctx = Context::new().unwrap();
    for ty in [SocketType::Pub, SocketType::Push] {
        let s = ctx.socket(ty).unwrap();
        s.bind("tcp://127.0.0.1:*").unwrap();
        // Without the check these would wait for RCVTIMEO (or forever) and time out.
        s.set_rcvtimeo(T);
        let start = Instant::now();
        assert!(matches!(s.recv(), Err(Error::Unsupported)), "{ty}");
        assert!(matches!(s.recv_string(), Err(Error::Unsupported)), "{ty}");
        assert!(matches!(s.try_recv(), Err(Error::Unsupported)), "{ty}");
        assert!(
            matches!(s.recv_timeout(None), Err(Error::Unsupported)),
            "{ty}"
        );
        assert!(start.elapsed() < Duration::from_secs(1), "{ty}");
    }
    // A type that receives still waits.
    let pull = ctx.socket(SocketType::Pull).unwrap();
    assert!(matches!(pull.try_recv(), Ok(None)));
    assert!(matches!(
        pull.recv_timeout(Some(Duration::from_millis(10))),
        Err(Error::Timeout)
    ));
}

#[test]
fn subscriptions_only_on_sub_and_xsub() {
    let ctx = Context::new().unwrap();
    for ty in [SocketType::Sub, SocketType::XSub] {
        let s = ctx.socket(ty).unwrap();
        s.subscribe("a").unwrap();
        s.unsubscribe("a").unwrap();
        // As in libzmq, cancelling what is not subscribed is no error.
        s.unsubscribe("never").unwrap();
    }
    for ty in [
        SocketType::Pub,
        SocketType::Push,
        SocketType::Req,
        SocketType::XPub,
    ] {
        let s = ctx.socket(ty).unwrap();
        assert!(matches!(s.subscribe("a"), Err(Error::Unsupported)), "{ty}");
        assert!(
            matches!(s.unsubscribe("a"), Err(Error::Unsupported)),
            "{ty}"
        );
    }
}

#[test]
fn timeouts_change_through_a_shared_socket() {
    let ctx = Context::new().unwrap();
    let pull = Arc::new(ctx.socket(SocketType::Pull).unwrap());
    assert_eq!((pull.rcvtimeo(), pull.sndtimeo()), (None, None));
    let other = pull.clone();
    std::thread::spawn(move || {
        other.set_rcvtimeo(Some(Duration::from_millis(50)));
        other.set_sndtimeo(Some(Duration::from_secs(3)));
    })
    .join()
    .unwrap();
    assert_eq!(pull.rcvtimeo(), Some(Duration::from_millis(50)));
    assert_eq!(pull.sndtimeo(), Some(Duration::from_secs(3)));
    let start = Instant::now();
    assert!(matches!(pull.recv(), Err(Error::Timeout)));
    assert!(start.elapsed() < Duration::from_secs(2));
    pull.set_rcvtimeo(None);
    assert_eq!(pull.rcvtimeo(), None);
    // Beyond what fits: as good as forever.
    pull.set_sndtimeo(Some(Duration::MAX));
    assert_eq!(pull.sndtimeo(), None);
}

#[test]
fn option_setters_change_a_live_socket() {
    let ctx = Context::new().unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    // Nobody listens there: the connect's queue holds SNDHWM messages.
    push.connect("tcp://127.0.0.1:1").unwrap();
    push.set_sndhwm(3).unwrap();
    assert_eq!(push.options().sndhwm, 3);
    for i in 0..3 {
        assert_eq!(push.try_send(i.to_string()), Ok(zmtp_mio::Sent::Queued));
    }
    assert!(matches!(
        push.try_send("over"),
        Err(zmtp_mio::SendError::WouldBlock(_))
    ));
    assert!(!push.can_send());
    // Raised again, there is room again.
    push.set_sndhwm(4).unwrap();
    assert!(push.can_send());

    push.set_linger(Some(Duration::ZERO)).unwrap();
    assert_eq!(push.options().linger, Some(Duration::ZERO));
    push.set_routing_id("me").unwrap();
    // An invalid value changes nothing.
    assert!(matches!(
        push.set_routing_id(vec![0u8; 256]),
        Err(Error::Options(_))
    ));
    assert_eq!(&push.options().routing_id[..], b"me");
    push.update_options(|o| {
        o.rcvhwm = 5;
        o.immediate = true;
    })
    .unwrap();
    let o = push.options();
    assert_eq!((o.rcvhwm, o.immediate, o.sndhwm), (5, true, 4));
}
