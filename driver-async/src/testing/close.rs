//! Closing and ending: what `close` reports, and a context's `term`.

use std::time::Duration;

use super::{text, within};
use crate::{Context, Error, Options, Runtime, Socket, SocketType};

/// A PUSH connected to a port where nobody listens, with `linger`.
fn push_to_nowhere<R: Runtime>(ctx: &Context<R>, linger: Option<Duration>) -> Socket<R> {
    let push = ctx
        .socket_with(SocketType::Push, Options::default().with_linger(linger))
        .unwrap();
    // The discard port: nothing listens there on a test machine.
    push.connect("tcp://127.0.0.1:9").unwrap();
    push
}

/// `close` reports what LINGER cut off, and nothing when everything was written.
pub async fn close_reports_what_linger_cut_off<R: Runtime>() {
    let ctx = Context::<R>::new().unwrap();
    let push = push_to_nowhere(&ctx, Some(Duration::from_millis(50)));
    for i in 0..3u32 {
        push.send(i.to_string()).await.unwrap();
    }
    let report = within::<R, _>(push.close()).await;
    assert!(!report.delivered_all());
    assert_eq!(report.unsent_messages, 3, "{report:?}");

    let pull = ctx.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    push.send("all of it").await.unwrap();
    let report = within::<R, _>(push.close()).await;
    assert!(report.delivered_all(), "{report}");
    assert_eq!(
        text(&within::<R, _>(pull.recv()).await.unwrap()),
        ["all of it"]
    );
}

/// `Context::term` closes the sockets still in use, waits for the dropped ones to write
/// their queues, and sums what LINGER cut off.
pub async fn context_term_flushes_dropped_sockets_and_closes_the_rest<R: Runtime>() {
    let receiver = Context::<R>::new().unwrap();
    let pull = receiver.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();

    let ctx = Context::<R>::new().unwrap();
    let dropped = ctx.socket(SocketType::Push).unwrap();
    dropped.connect(&ep).unwrap();
    for i in 0..2000u32 {
        dropped.send(i.to_string()).await.unwrap();
    }
    drop(dropped);
    let kept = ctx.socket(SocketType::Pull).unwrap();
    let stuck = push_to_nowhere(&ctx, Some(Duration::from_millis(50)));
    stuck.send("never").await.unwrap();

    let report = within::<R, _>(ctx.term()).await;
    assert_eq!(report.unsent_messages, 1, "only the stuck one: {report:?}");
    for i in 0..2000u32 {
        assert_eq!(
            text(&within::<R, _>(pull.recv()).await.unwrap()),
            [i.to_string()]
        );
    }
    assert!(
        matches!(kept.try_recv(), Err(Error::Closed)),
        "closed by term"
    );
    assert!(matches!(
        stuck.try_send("late"),
        Err(crate::SendError::Closed(_))
    ));
    assert!(within::<R, _>(receiver.term()).await.delivered_all());
}
