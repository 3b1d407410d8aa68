//! Two connections talking in memory: prints every byte on the wire and what each side
//! receives. No sockets and no clock: time is whatever we say it is.

use zmtp_proto::{Buffered, Config, Instant, OwnedItem, SocketType};

fn hex(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(48).map(|b| format!("{b:02x}")).collect();
    let more = if bytes.len() > 48 { " …" } else { "" };
    format!("{}{more}", shown.join(" "))
}

/// Move what `from` has queued to `to`, printing it; returns the number of bytes moved.
fn deliver(label: &str, from: &mut Buffered, to: &mut Buffered, now: Instant) -> usize {
    from.poll_transmit();
    let bytes = from.transmit().to_vec();
    from.advance(bytes.len());
    if !bytes.is_empty() {
        println!("{label} {:>5} bytes: {}", bytes.len(), hex(&bytes));
    }
    to.receive(&bytes);
    while let Some(item) = to.poll_item(now).expect("valid stream") {
        match item {
            OwnedItem::Ready(_) => println!(
                "   handshake complete, peer {:?}",
                to.connection().peer_socket_type()
            ),
            OwnedItem::Frame { body, more } => {
                println!(
                    "   frame {:?}{}",
                    String::from_utf8_lossy(&body),
                    if more { " (more)" } else { "" }
                )
            }
            other => println!("   {other:?}"),
        }
    }
    bytes.len()
}

fn main() {
    let now = Instant::ZERO;
    let mut dealer_cfg = Config::new(SocketType::Dealer);
    dealer_cfg
        .set_identity(b"client-1")
        .expect("short identity");
    let mut dealer = Buffered::new(dealer_cfg, now);
    let mut router = Buffered::new(Config::new(SocketType::Router), now);

    while deliver("DEALER -> ROUTER", &mut dealer, &mut router, now)
        + deliver("ROUTER -> DEALER", &mut router, &mut dealer, now)
        > 0
    {}

    dealer.send_frame(b"", true).expect("established");
    dealer.send_frame(b"hello", false).expect("established");
    router.send_frame(b"", true).expect("established");
    router.send_frame(b"world", false).expect("established");
    deliver("DEALER -> ROUTER", &mut dealer, &mut router, now);
    deliver("ROUTER -> DEALER", &mut router, &mut dealer, now);
    println!(
        "router sees peer identity {:?}",
        String::from_utf8_lossy(router.connection().peer_identity())
    );
}
