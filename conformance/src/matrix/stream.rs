//! The STREAM-STREAM scenarios: raw byte streams, no ZMTP.
//!
//! Chunk boundaries are whatever the transport delivered, so data is always compared as
//! the byte stream of one connection (the chunks of one routing id, concatenated), never
//! chunk by chunk. A message `[id][empty]` is a notification: a connection came up, or
//! (later, under the same id) went away.

use super::*;

/// The routing id the connecting side gives its connection (`CONNECT_ROUTING_ID`).
const CONNECT_ID: &[u8] = b"to-bound";
/// How long a side must stay silent to count as "nothing more arrived".
const QUIET: Duration = Duration::from_millis(100);

/// Two STREAM sockets and the routing id each knows the other by.
struct Raw {
    a: H,
    b: H,
    /// How `A` addresses its connection to `B`.
    a_to_b: Vec<u8>,
    /// How `B` addresses its connection to `A`.
    b_to_a: Vec<u8>,
    endpoint: String,
}

impl Raw {
    fn handle(&self, side: Side) -> H {
        match side {
            Side::A => self.a,
            Side::B => self.b,
        }
    }

    /// The id `side` knows its connection by.
    fn id(&self, side: Side) -> Vec<u8> {
        match side {
            Side::A => self.a_to_b.clone(),
            Side::B => self.b_to_a.clone(),
        }
    }

    fn set_id(&mut self, side: Side, id: Vec<u8>) {
        match side {
            Side::A => self.a_to_b = id,
            Side::B => self.b_to_a = id,
        }
    }

    /// `from` writes `data` to its connection; `to` reads it back as a byte stream.
    fn exchange(&self, net: &mut Net<'_>, from: Side, data: &[u8]) {
        net.send(self.handle(from), vec![self.id(from), data.to_vec()]);
        let got = gather(
            net,
            self.handle(from.other()),
            &self.id(from.other()),
            data.len(),
        );
        assert!(got == data, "{from:?} to {:?}: bytes differ", from.other());
    }
}

/// The id of a notification `[id][empty]`.
fn notification(m: &Frames, what: &str) -> Vec<u8> {
    assert!(
        m.len() == 2 && m[1].is_empty(),
        "{what}: expected a notification [id][empty], got {}",
        show(m)
    );
    m[0].clone()
}

fn expect_notification(net: &mut Net<'_>, h: H, what: &str) -> Vec<u8> {
    let m = net.expect(h, what);
    notification(&m, what)
}

/// A routing id the socket made up: `00` and a 32-bit counter.
fn assert_generated(id: &[u8], what: &str) {
    assert!(
        id.len() == 5 && id[0] == 0,
        "{what}: not a generated routing id: {}",
        show(&vec![id.to_vec()])
    );
}

/// Nothing arrives at `h` for a while.
fn quiet(net: &mut Net<'_>, h: H, what: &str) {
    if let Some(m) = net.recv(h, QUIET) {
        panic!("{what}: {} received {}", net.describe(h), show(&m));
    }
}

/// Read `h` until `want` bytes came from `id` (data only: a notification fails), and
/// return them; more than `want` fails too.
fn gather(net: &mut Net<'_>, h: H, id: &[u8], want: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(want);
    while data.len() < want {
        let what = format!("{} of {want} bytes", data.len());
        let m = net.expect(h, &what);
        assert!(
            m.len() == 2 && m[0] == id && !m[1].is_empty(),
            "after {what}: expected data from {}, got {}",
            show(&vec![id.to_vec()]),
            show(&m)
        );
        data.extend_from_slice(&m[1]);
    }
    assert_eq!(data.len(), want, "more bytes than were sent");
    data
}

/// Open two STREAM sockets, bind one, connect the other (with [`CONNECT_ID`]) and take
/// each side's up notification, checking the ids.
fn raw_link(net: &mut Net<'_>, c: &Combo) -> Raw {
    let connecting = c.binder.other();
    let cfg = |side: Side| Cfg {
        routing_id: None,
        connect_routing_id: (side == connecting).then(|| CONNECT_ID.to_vec()),
    };
    let a = net.open(c.a, SocketType::Stream, cfg(Side::A));
    let b = net.open(c.b, SocketType::Stream, cfg(Side::B));
    let mut l = Raw {
        a,
        b,
        a_to_b: Vec::new(),
        b_to_a: Vec::new(),
        endpoint: String::new(),
    };
    let (bind_h, conn_h) = (l.handle(c.binder), l.handle(connecting));
    l.endpoint = net.bind(bind_h, &c.transport.fresh_endpoint());
    net.connect(conn_h, &l.endpoint);
    let at_conn = expect_notification(net, conn_h, "the connecting side's up notification");
    assert_eq!(at_conn, CONNECT_ID, "the connecting side's routing id");
    let at_bind = expect_notification(net, bind_h, "the bound side's up notification");
    assert_generated(&at_bind, "the bound side's id");
    l.set_id(connecting, at_conn);
    l.set_id(c.binder, at_bind);
    l
}

/// Each side announces the connection once; nothing else arrives; the ids route.
pub(super) fn notify(net: &mut Net<'_>, c: &Combo) {
    let l = raw_link(net, c);
    // Neither side writes a byte on its own (no greeting), nor announces anything twice.
    quiet(net, l.a, "after the up notification");
    quiet(net, l.b, "after the up notification");
    l.exchange(net, Side::A, b"ping");
    l.exchange(net, Side::B, b"pong");
    quiet(net, l.a, "after the exchange");
    quiet(net, l.b, "after the exchange");
}

/// The chunks of a byte stream: 300 of varied sizes (1 to 1500 bytes) with a 1 MiB one
/// in the middle, each byte depending on its position and `seed`.
fn chunks(seed: u8) -> Vec<Vec<u8>> {
    let mut pos = 0usize;
    let mut out = Vec::new();
    for i in 0..300usize {
        let len = if i == 150 {
            1 << 20
        } else {
            (i * 37) % 1500 + 1
        };
        out.push(
            (pos..pos + len)
                .map(|p| (p.wrapping_mul(131) ^ (p >> 9)) as u8 ^ seed)
                .collect(),
        );
        pos += len;
    }
    out
}

/// Two chunked byte streams, sent both ways at once, arrive intact and in order.
pub(super) fn bytes(net: &mut Net<'_>, c: &Combo) {
    let l = raw_link(net, c);
    let (to_b, to_a) = (chunks(0x00), chunks(0x5A));
    // Interleaved: each side writes while the other does.
    for (x, y) in to_b.iter().zip(&to_a) {
        net.send(l.a, vec![l.a_to_b.clone(), x.clone()]);
        net.send(l.b, vec![l.b_to_a.clone(), y.clone()]);
    }
    let want_b = to_b.concat();
    let got_b = gather(net, l.b, &l.b_to_a, want_b.len());
    let want_a = to_a.concat();
    let got_a = gather(net, l.a, &l.a_to_b, want_a.len());
    let first_difference = |got: &[u8], want: &[u8]| got.iter().zip(want).position(|(g, w)| g != w);
    assert!(
        got_b == want_b,
        "A to B: the byte stream differs at byte {:?}",
        first_difference(&got_b, &want_b)
    );
    assert!(
        got_a == want_a,
        "B to A: the byte stream differs at byte {:?}",
        first_difference(&got_a, &want_a)
    );
    quiet(net, l.a, "after the byte stream");
    quiet(net, l.b, "after the byte stream");
}

/// The bound side (the hub) routes by id to two connected peers.
pub(super) fn route(net: &mut Net<'_>, c: &Combo) {
    let hub_kind = c.kind(c.binder);
    let spoke_kind = c.kind(c.binder.other());
    let hub = net.open(hub_kind, SocketType::Stream, Cfg::default());
    let endpoint = net.bind(hub, &c.transport.fresh_endpoint());
    let names: [&[u8]; 2] = [b"spoke-0", b"spoke-1"];
    let mut spokes = Vec::new();
    for name in names {
        let cfg = Cfg {
            routing_id: None,
            connect_routing_id: Some(b"hub".to_vec()),
        };
        let s = net.open(spoke_kind, SocketType::Stream, cfg);
        net.connect(s, &endpoint);
        let id = expect_notification(net, s, "a spoke's up notification");
        assert_eq!(id, b"hub", "a spoke's routing id for the hub");
        // Each spoke says who it is.
        net.send(s, vec![b"hub".to_vec(), name.to_vec()]);
        spokes.push(s);
    }
    // The hub: two up notifications, then each spoke's name (in whatever order and
    // chunking the connections deliver).
    let mut ups: Vec<Vec<u8>> = Vec::new();
    let mut heard: Heard = Vec::new();
    while heard.iter().map(|(_, d)| d.len()).sum::<usize>() < names.iter().map(|n| n.len()).sum() {
        let m = net.expect(hub, "the spokes' notifications and names");
        assert!(m.len() == 2, "the hub got {}", show(&m));
        if m[1].is_empty() {
            assert!(
                !ups.contains(&m[0]),
                "a connection announced twice: {}",
                show(&m)
            );
            ups.push(m[0].clone());
            continue;
        }
        assert!(
            ups.contains(&m[0]),
            "data before its notification: {}",
            show(&m)
        );
        match heard.iter_mut().find(|(id, _)| *id == m[0]) {
            Some((_, d)) => d.extend_from_slice(&m[1]),
            None => heard.push((m[0].clone(), m[1].clone())),
        }
    }
    assert_eq!(ups.len(), 2, "two connections announced");
    let mut id_of = [Vec::new(), Vec::new()];
    for (id, said) in &heard {
        assert_generated(id, "a spoke's id at the hub");
        let k = names
            .iter()
            .position(|n| n == said)
            .unwrap_or_else(|| panic!("the hub heard {:?}", String::from_utf8_lossy(said)));
        id_of[k] = id.clone();
    }
    assert_ne!(id_of[0], id_of[1], "one id per connection");
    // Interleaved writes to both ids; each spoke gets exactly its own stream.
    let stream_for = |k: usize, i: usize| format!("to spoke {k}, chunk {i:02};").into_bytes();
    for i in 0..40 {
        for (k, id) in id_of.iter().enumerate() {
            net.send(hub, vec![id.clone(), stream_for(k, i)]);
        }
    }
    for (k, &s) in spokes.iter().enumerate() {
        let want: Vec<u8> = (0..40).flat_map(|i| stream_for(k, i)).collect();
        let got = gather(net, s, b"hub", want.len());
        assert!(
            got == want,
            "spoke {k} got {:?}",
            String::from_utf8_lossy(&got)
        );
        quiet(net, s, "a spoke after its stream");
    }
    quiet(net, hub, "the hub after routing");
}

/// `(routing id, bytes heard)`, in the order first heard.
type Heard = Vec<(Vec<u8>, Vec<u8>)>;

/// Closing by `[id][empty]`: the other side sees a disconnect notification once, the
/// closer none.
pub(super) fn close(net: &mut Net<'_>, c: &Combo) {
    let mut l = raw_link(net, c);
    let connecting = c.binder.other();
    let (bind_h, conn_h) = (l.handle(c.binder), l.handle(connecting));
    l.exchange(net, connecting, b"before the close");
    let closed = l.id(c.binder);
    net.send(bind_h, vec![closed.clone(), Vec::new()]);
    if c.kind(c.binder) != Kind::Libzmq {
        // Our closer forgets the id at once.
        let refused = net.try_send(bind_h, vec![closed.clone(), b"late".to_vec()]);
        assert_eq!(refused, Err(Refusal::Unreachable), "sending to a closed id");
    }
    let down = expect_notification(net, conn_h, "the disconnect notification");
    assert_eq!(
        down,
        l.id(connecting),
        "the disconnect names the connection"
    );
    // The connecting side comes back (reconnect); the closer never announces the end of
    // the connection it closed: its next message is the new connection's notification,
    // under a new id. The connecting side keeps its id, ours as libzmq's (whose pipe
    // outlives the TCP connection: what is sent meanwhile goes to the next one).
    let back = expect_notification(net, conn_h, "the connecting side's new connection");
    assert_eq!(back, l.id(connecting), "a connect peer keeps its id");
    let again = expect_notification(net, bind_h, "the bound side's new connection");
    assert_ne!(
        again, closed,
        "the closed connection's id was announced again"
    );
    assert_generated(&again, "the bound side's new id");
    l.set_id(connecting, back);
    l.set_id(c.binder, again.clone());
    l.exchange(net, c.binder, b"after the reconnect");
    quiet(net, conn_h, "the connecting side after the reconnect");
    // Now the connecting side closes: the bound side sees that connection go, once.
    net.send(conn_h, vec![l.id(connecting), Vec::new()]);
    let down = expect_notification(net, bind_h, "the bound side's disconnect notification");
    assert_eq!(down, again, "the disconnect names the connection");
    // Whatever comes next (the connecting side may reconnect) is a new connection.
    if let Some(m) = net.recv(bind_h, QUIET) {
        let id = notification(&m, "after the disconnect");
        assert_ne!(id, again, "the closed connection announced twice");
    }
}

/// Our connecting side: the bound peer goes away and a new one binds the same endpoint.
/// As libzmq's, the connect peer keeps its id throughout: what is sent while it is down
/// is written to the next connection.
pub(super) fn reconnect(net: &mut Net<'_>, c: &Combo) {
    let mut l = raw_link(net, c);
    let connecting = c.binder.other();
    let conn_h = l.handle(connecting);
    l.exchange(net, connecting, b"before");
    l.exchange(net, c.binder, b"before, back");
    let old = l.handle(c.binder);
    net.close(old);
    let down = expect_notification(net, conn_h, "the disconnect notification");
    assert_eq!(down, CONNECT_ID, "the disconnect names the connection");
    const MEANWHILE: &[u8] = b"sent while down";
    let kept = net.try_send(conn_h, vec![CONNECT_ID.to_vec(), MEANWHILE.to_vec()]);
    assert_eq!(kept, Ok(()), "sending to a connect peer while it is down");
    let new = net.reopen(old);
    let endpoint = l.endpoint.clone();
    net.bind(new, &endpoint);
    match c.binder {
        Side::A => l.a = new,
        Side::B => l.b = new,
    }
    let back = expect_notification(net, conn_h, "the reconnected connection");
    assert_eq!(back, CONNECT_ID, "the reconnection keeps the id");
    let at_new = expect_notification(net, new, "the new bound peer's up notification");
    assert_generated(&at_new, "the new bound peer's id");
    let got = gather(net, new, &at_new, MEANWHILE.len());
    assert!(got == MEANWHILE, "what was sent while down came first");
    l.set_id(c.binder, at_new);
    l.exchange(net, connecting, b"after");
    l.exchange(net, c.binder, b"after, back");
    quiet(net, conn_h, "after the reconnect");
}
