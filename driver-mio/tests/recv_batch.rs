//! `recv` takes the ready messages of a PULL in a batch and hands them out one per call:
//! what it took is still the socket's to give, to `poll`, `can_recv`, `try_recv_many` and
//! other threads receiving on the same socket, in order.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use zmtp_mio::{poll, Context, PollItem, SocketType, POLLIN};

const LIMIT: Option<Duration> = Some(Duration::from_secs(5));

fn pair(ctx: &Context) -> (zmtp_mio::Socket, zmtp_mio::Socket) {
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(LIMIT);
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&endpoint).unwrap();
    (push, pull)
}

#[test]
fn what_a_batch_left_is_seen_by_poll_can_recv_and_recv_many_in_order() {
    let ctx = Context::new().unwrap();
    let (push, pull) = pair(&ctx);
    for i in 0..10 {
        push.send(format!("m{i}")).unwrap();
    }
    // Wait until they have arrived (sent in one write), so that the first recv takes
    // them in one batch.
    let mut items = [PollItem::new(&pull, POLLIN)];
    assert_eq!(poll(&mut items, LIMIT).unwrap(), 1);
    thread::sleep(Duration::from_millis(200));
    assert_eq!(pull.recv_string().unwrap(), "m0");
    // The other nine were taken with it: still ready.
    assert!(pull.can_recv());
    let mut items = [PollItem::new(&pull, POLLIN)];
    assert_eq!(poll(&mut items, Some(Duration::ZERO)).unwrap(), 1);
    let mut batch = Vec::new();
    assert_eq!(pull.try_recv_many(&mut batch, 3).unwrap(), 3);
    let texts: Vec<_> = batch.iter().map(|m| m.to_string()).collect();
    assert_eq!(texts, ["m1", "m2", "m3"]);
    for i in 4..10 {
        assert_eq!(pull.recv_string().unwrap(), format!("m{i}"));
    }
    assert!(!pull.can_recv());
    assert_eq!(pull.try_recv().unwrap(), None);
}

#[test]
fn a_thread_waiting_on_the_socket_gets_what_another_threads_batch_left() {
    let ctx = Context::new().unwrap();
    let (push, pull) = pair(&ctx);
    let pull = Arc::new(pull);
    // Both wait before anything arrives; one takes a single message and stops.
    let one = {
        let pull = pull.clone();
        thread::spawn(move || pull.recv_string().unwrap())
    };
    let rest = {
        let pull = pull.clone();
        thread::spawn(move || {
            (0..9)
                .map(|_| pull.recv_string().map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        })
    };
    thread::sleep(Duration::from_millis(100));
    let bodies: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    assert_eq!(push.send_many(&bodies).unwrap(), 10);
    let first = one.join().unwrap();
    let rest = rest
        .join()
        .unwrap()
        .expect("the other thread received the rest");
    let mut all: Vec<String> = rest.clone();
    all.push(first);
    all.sort_by_key(|m| m[1..].parse::<u32>().unwrap());
    let expected: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    assert_eq!(all, expected);
    // Each thread saw its messages in order.
    let numbers: Vec<u32> = rest.iter().map(|m| m[1..].parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
}
