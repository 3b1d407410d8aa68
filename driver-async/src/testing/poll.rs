//! Waiting on several sockets ([`poll`](crate::poll)) and the inherent
//! [`MessageStream::next`](crate::MessageStream::next), for every runtime, declared
//! per runtime by [`driver_tests!`](crate::driver_tests).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{runtime, timeout, unique, within};
use crate::runtime::Task as _;
use crate::{poll, PollItem, Runtime, Socket, SocketType, POLLIN, POLLOUT};

/// A PULL socket bound at a fresh inproc name, and a PUSH connected to it.
async fn pull_push<R: Runtime>() -> (Socket<R>, Socket<R>) {
    let ep = format!("inproc://{}", unique("poll"));
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    pull.bind(&ep).await.unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    (pull, push)
}

/// Send `text` on `push` from another task, once `delay` has passed; the task keeps the
/// socket until the message is queued, then closes it (lingering until it is written).
fn send_later<R: Runtime>(push: Socket<R>, delay: Duration, text: &'static str) -> R::Task {
    let rt = runtime::<R>();
    let sleep = rt.sleep_until(Instant::now() + delay);
    rt.spawn(async move {
        sleep.await;
        push.send(text).await.unwrap();
        push.close().await;
    })
}

/// Shared poll test `poll_wakes_for_whichever_socket_gets_a_message`.
pub async fn poll_wakes_for_whichever_socket_gets_a_message<R: Runtime>() {
    for target in [1, 0] {
        let (a, push_a) = pull_push::<R>().await;
        let (b, push_b) = pull_push::<R>().await;
        let (push, idle) = if target == 0 {
            (push_a, push_b)
        } else {
            (push_b, push_a)
        };
        // Nothing is ready yet: the poll has to wait for the message.
        let mut items = [PollItem::new(&a, POLLIN), PollItem::new(&b, POLLIN)];
        assert_eq!(poll(&mut items, Some(Duration::ZERO)).await.unwrap(), 0);
        let _sender = send_later(push, Duration::from_millis(30), "hello");
        let ready = within::<R, _>(poll(&mut items, None)).await.unwrap();
        assert_eq!(ready, 1);
        assert_eq!(items[target].revents, POLLIN);
        assert_eq!(items[1 - target].revents, 0);
        let got = items[target]
            .socket
            .try_recv()
            .unwrap()
            .expect("the message");
        assert_eq!(&got.frames()[0][..], b"hello");
        assert!(items[1 - target].socket.try_recv().unwrap().is_none());
        drop(idle);
    }
}

/// Shared poll test `poll_times_out_and_looks_without_waiting`.
pub async fn poll_times_out_and_looks_without_waiting<R: Runtime>() {
    let (a, _push) = pull_push::<R>().await;
    let mut items = [PollItem::new(&a, POLLIN)];
    let start = Instant::now();
    // The future may move between threads (`tokio::spawn`).
    let look = poll(&mut items, Some(Duration::ZERO));
    is_send(&look);
    assert_eq!(look.await.unwrap(), 0);
    let limit = Duration::from_millis(60);
    let ready = within::<R, _>(poll(&mut items, Some(limit))).await.unwrap();
    assert_eq!(ready, 0);
    assert_eq!(items[0].revents, 0);
    assert!(start.elapsed() >= limit, "waited {:?}", start.elapsed());
    // No items: nothing to wait for.
    let mut none: [PollItem<'_, R>; 0] = [];
    assert_eq!(within::<R, _>(poll(&mut none, None)).await.unwrap(), 0);
    // Already ready: at once, whatever the timeout.
    _push.send("x").await.unwrap();
    let ready = within::<R, _>(poll(&mut items, None)).await.unwrap();
    assert_eq!((ready, items[0].revents), (1, POLLIN));
    assert_eq!(poll(&mut items, Some(Duration::ZERO)).await.unwrap(), 1);
}

/// Shared poll test `poll_out_waits_for_a_peer_with_room`.
pub async fn poll_out_waits_for_a_peer_with_room<R: Runtime>() {
    // A PUSH without a peer cannot send.
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    let mut items = [PollItem::new(&push, POLLIN | POLLOUT)];
    let ready = poll(&mut items, Some(Duration::from_millis(30))).await;
    assert_eq!(ready.unwrap(), 0);
    assert_eq!(items[0].revents, 0);
    // A peer arrives while the poll waits.
    let ep = format!("inproc://{}", unique("pollout"));
    let rt = runtime::<R>();
    let later = rt.sleep_until(Instant::now() + Duration::from_millis(30));
    let ep2 = ep.clone();
    let peer = rt.spawn(async move {
        later.await;
        let pull = Socket::<R>::new(SocketType::Pull).unwrap();
        pull.bind(&ep2).await.unwrap();
        // Kept open until the test ends.
        let _pull = pull;
        std::future::pending::<()>().await;
    });
    push.connect(&ep).unwrap();
    let ready = within::<R, _>(poll(&mut items, None)).await.unwrap();
    // Writable, and only that: a PUSH never has anything to receive.
    assert_eq!((ready, items[0].revents), (1, POLLOUT));
    assert!(push.try_send("now").is_ok());
    peer.abort();
    // Its peer is gone: the message goes nowhere, and the process must not wait for it.
    push.set_linger(Some(Duration::ZERO)).unwrap();
}

/// Shared poll test `poll_set_changes_between_calls`.
pub async fn poll_set_changes_between_calls<R: Runtime>() {
    let (a, push_a) = pull_push::<R>().await;
    let (b, push_b) = pull_push::<R>().await;
    let (c, push_c) = pull_push::<R>().await;
    // Once b has a message, a set without b still waits.
    push_b.send("for b").await.unwrap();
    let mut only_b = [PollItem::new(&b, POLLIN)];
    assert_eq!(within::<R, _>(poll(&mut only_b, None)).await.unwrap(), 1);
    let mut only_a = [PollItem::new(&a, POLLIN)];
    let ready = poll(&mut only_a, Some(Duration::from_millis(50))).await;
    assert_eq!(ready.unwrap(), 0);
    // With b in the set, b is ready.
    let mut a_and_b = [PollItem::new(&a, POLLIN), PollItem::new(&b, POLLIN)];
    let ready = within::<R, _>(poll(&mut a_and_b, None)).await.unwrap();
    assert_eq!(ready, 1);
    assert_eq!((a_and_b[0].revents, a_and_b[1].revents), (0, POLLIN));
    assert_eq!(&b.try_recv().unwrap().unwrap().frames()[0][..], b"for b");
    // A new set of three: a message for c, added last, wakes it.
    let mut three = [
        PollItem::new(&a, POLLIN),
        PollItem::new(&b, POLLIN),
        PollItem::new(&c, POLLIN),
    ];
    let _sender = send_later(push_c, Duration::from_millis(30), "for c");
    let ready = within::<R, _>(poll(&mut three, None)).await.unwrap();
    assert_eq!(ready, 1);
    let revents: Vec<u8> = three.iter().map(|i| i.revents).collect();
    assert_eq!(revents, [0, 0, POLLIN]);
    // And two sockets ready at once count twice.
    push_a.send("for a").await.unwrap();
    push_b.send("for b again").await.unwrap();
    let mut a_and_b = [PollItem::new(&a, POLLIN), PollItem::new(&b, POLLIN)];
    let deadline = Instant::now() + Duration::from_secs(5);
    // The two messages travel separately: wait until both are there.
    loop {
        let ready = within::<R, _>(poll(&mut a_and_b, None)).await.unwrap();
        if ready == 2 || Instant::now() > deadline {
            assert_eq!(ready, 2);
            break;
        }
        runtime::<R>().yield_now().await;
    }
}

/// Shared poll test `cancelled_poll_takes_nothing_and_leaves_no_waiter`.
pub async fn cancelled_poll_takes_nothing_and_leaves_no_waiter<R: Runtime>() {
    let (a, push) = pull_push::<R>().await;
    let mut items = [PollItem::new(&a, POLLIN | POLLOUT)];
    let waited = timeout::<R, _>(Duration::from_millis(30), poll(&mut items, None)).await;
    assert!(waited.is_none(), "nothing was ready");
    // The dropped poll no longer counts as waiting on either notification.
    assert_eq!(a.inner.recv_waiters.load(Ordering::SeqCst), 0);
    assert_eq!(a.inner.send_waiters.load(Ordering::SeqCst), 0);
    push.send("kept").await.unwrap();
    let got = within::<R, _>(a.recv()).await.unwrap();
    assert_eq!(&got.frames()[0][..], b"kept");
}

/// Shared poll test `message_stream_next_without_stream_ext`.
pub async fn message_stream_next_without_stream_ext<R: Runtime>() {
    let (pull, push) = pull_push::<R>().await;
    let mut stream = pull.stream();
    let _sender = send_later(push, Duration::from_millis(20), "one");
    let next = stream.next();
    is_send(&next);
    let got = within::<R, _>(next).await.expect("a message");
    assert_eq!(&got.frames()[0][..], b"one");
    // With nothing more sent, it waits.
    assert!(timeout::<R, _>(Duration::from_millis(20), stream.next())
        .await
        .is_none());
    // The re-exported traits name what the stream implements.
    fn is_stream_and_sink<S: crate::Stream + crate::Sink<crate::Message>>(_: &S) {}
    is_stream_and_sink(&stream);
}

fn is_send<T: Send>(_: &T) {}
