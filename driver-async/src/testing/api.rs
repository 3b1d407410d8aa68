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

/// `subscribe` and `unsubscribe` work on SUB, XSUB and an XPUB in manual mode, and fail
/// elsewhere.
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
    // An XPUB in manual mode takes them, for the peer of the last subscription received
    // (with none yet, they change nothing).
    let xpub = Socket::<R>::new(SocketType::XPub).unwrap();
    xpub.set_xpub_manual(true).unwrap();
    xpub.subscribe("a").unwrap();
    xpub.unsubscribe("a").unwrap();
    xpub.set_xpub_manual(false).unwrap();
    assert!(matches!(xpub.subscribe("a"), Err(Error::Unsupported)));
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

/// `send_many` and `recv_many` over tcp with small HWMs on both sides: every message
/// arrives once, in order, whatever the batch boundaries; batches respect `max`; the
/// types that cannot send or receive refuse at once.
pub async fn batches_keep_order_under_small_hwms<R: Runtime>() {
    let options = crate::Options::default().with_rcvhwm(7).with_sndhwm(5);
    let pull = Socket::<R>::with_options(SocketType::Pull, options.clone()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::<R>::with_options(SocketType::Push, options).unwrap();
    push.connect(&ep).unwrap();
    const N: u32 = 5000;
    let bodies: Vec<[u8; 4]> = (0..N).map(u32::to_le_bytes).collect();
    let sender = async {
        let mut rest = &bodies[..];
        while !rest.is_empty() {
            let n = within::<R, _>(push.send_many(rest)).await.unwrap();
            assert!((1..=rest.len()).contains(&n));
            rest = &rest[n..];
        }
    };
    let receiver = async {
        let mut batch = Vec::new();
        let mut next = 0u32;
        while next < N {
            batch.clear();
            let n = within::<R, _>(pull.recv_many(&mut batch, 13))
                .await
                .unwrap();
            assert!((1..=13).contains(&n));
            assert_eq!(batch.len(), n);
            for msg in &batch {
                assert_eq!(
                    msg.frames(),
                    [zmtp_proto::Bytes::copy_from_slice(&next.to_le_bytes())]
                );
                next += 1;
            }
        }
    };
    join(sender, receiver).await;
    assert_eq!(pull.try_recv_many(&mut Vec::new(), 10).unwrap(), 0);
    assert_eq!(push.recv_many(&mut Vec::new(), 0).await.unwrap(), 0);
    assert!(matches!(
        push.try_recv_many(&mut Vec::new(), 10),
        Err(Error::Unsupported)
    ));
    assert!(matches!(
        pull.try_send_many(&["x"]),
        Err(crate::SendError::NotSupported(_))
    ));
    assert_eq!(push.send_many::<&[u8]>(&[]).await.unwrap(), 0);
}

/// Run two futures to completion together.
async fn join(a: impl std::future::Future<Output = ()>, b: impl std::future::Future<Output = ()>) {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut a_done, mut b_done) = (false, false);
    std::future::poll_fn(|cx| {
        a_done = a_done || a.as_mut().poll(cx).is_ready();
        b_done = b_done || b.as_mut().poll(cx).is_ready();
        if a_done && b_done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}
