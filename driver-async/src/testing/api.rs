//! The socket API's conveniences and refusals: text messages, operations a socket type
//! does not offer, options changed one at a time.

use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;

use super::{unique, within};
use crate::{Error, Message, Runtime, Socket, SocketType, TextError};

/// A connected PUSH/PULL pair over inproc.
async fn push_pull<R: Runtime>(tag: &str) -> (Socket<R>, Socket<R>) {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull
        .bind(&format!("inproc://{}", unique(tag)))
        .await
        .unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    (push, pull)
}

/// `recv_string` gives a single-frame UTF-8 message as a `String`; anything else is
/// `Error::NotText` with the message, which is taken all the same.
pub async fn recv_string_gives_text_and_hands_back_what_is_not<R: Runtime>() {
    let (push, pull) = push_pull::<R>("recv-string").await;
    push.send("héllo").await.unwrap();
    assert_eq!(within::<R, _>(pull.recv_string()).await.unwrap(), "héllo");
    push.send(["a", "b"]).await.unwrap();
    match within::<R, _>(pull.recv_string()).await {
        Err(Error::NotText { reason, message }) => {
            assert_eq!(reason, TextError::Frames(2));
            assert_eq!(message, Message::from(["a", "b"]));
        }
        other => panic!("{other:?}"),
    }
    push.send(&b"\xffok"[..]).await.unwrap();
    match within::<R, _>(pull.recv_string()).await {
        Err(Error::NotText {
            reason: TextError::Utf8(_),
            message,
        }) => assert_eq!(message.to_string(), "\u{FFFD}ok"),
        other => panic!("{other:?}"),
    }
    push.send("after").await.unwrap();
    assert_eq!(within::<R, _>(pull.recv_string()).await.unwrap(), "after");
}

/// `recv`, `try_recv`, `recv_string` and the `Stream` on a PUB or PUSH fail (or end) at
/// once instead of waiting for a message that cannot come.
pub async fn recv_on_a_type_that_never_receives_fails_at_once<R: Runtime>() {
    for ty in [SocketType::Pub, SocketType::Push] {
        let s = Socket::<R>::new(ty).unwrap();
        s.bind(&format!("inproc://{}", unique("no-recv")))
            .await
            .unwrap();
        assert!(matches!(s.try_recv(), Err(Error::Unsupported)), "{ty}");
        assert!(
            matches!(within::<R, _>(s.recv()).await, Err(Error::Unsupported)),
            "{ty}"
        );
        assert!(
            matches!(
                within::<R, _>(s.recv_string()).await,
                Err(Error::Unsupported)
            ),
            "{ty}"
        );
        let mut stream = s.stream();
        let next = within::<R, _>(std::future::poll_fn(|cx| {
            Pin::new(&mut stream).poll_next(cx)
        }))
        .await;
        assert!(next.is_none(), "{ty}");
    }
    // A type that receives still waits.
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    assert!(matches!(pull.try_recv(), Ok(None)));
    assert!(
        super::timeout::<R, _>(Duration::from_millis(10), pull.recv())
            .await
            .is_none()
    );
}

/// `subscribe` and `unsubscribe` work on SUB and XSUB and fail elsewhere.
pub async fn subscriptions_only_on_sub_and_xsub<R: Runtime>() {
    for ty in [SocketType::Sub, SocketType::XSub] {
        let s = Socket::<R>::new(ty).unwrap();
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
        let s = Socket::<R>::new(ty).unwrap();
        assert!(matches!(s.subscribe("a"), Err(Error::Unsupported)), "{ty}");
        assert!(
            matches!(s.unsubscribe("a"), Err(Error::Unsupported)),
            "{ty}"
        );
    }
}

/// Each option's setter changes that option on a live socket: a lower SNDHWM blocks sends
/// at once; an invalid value changes nothing.
pub async fn option_setters_change_a_live_socket<R: Runtime>() {
    use crate::{SendError, Sent};
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    // Nobody listens there: the connect's queue holds SNDHWM messages.
    push.connect("tcp://127.0.0.1:1").unwrap();
    push.set_sndhwm(3).unwrap();
    assert_eq!(push.options().sndhwm, 3);
    for i in 0..3 {
        assert_eq!(push.try_send(i.to_string()), Ok(Sent::Queued));
    }
    assert!(matches!(
        push.try_send("over"),
        Err(SendError::WouldBlock(_))
    ));
    assert!(!push.can_send());
    // Raised again, there is room again.
    push.set_sndhwm(4).unwrap();
    assert!(push.can_send());

    push.set_linger(Some(Duration::ZERO)).unwrap();
    assert_eq!(push.options().linger, Some(Duration::ZERO));
    push.set_routing_id("me").unwrap();
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
