//! An XSUB/XPUB proxy between publishers and subscribers.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_proxy`.
//!
//! Publishers connect to the proxy's XSUB, subscribers to its XPUB, and neither side
//! needs to know the other's address. The proxy forwards both ways: messages from the
//! XSUB to the XPUB, and the subscriptions (messages of byte 1 or 0 and a prefix) that
//! the XPUB receives from subscribers back up through the XSUB to the publishers, so
//! that the publishers send only what someone wants.

use std::collections::BTreeSet;
use std::time::Duration;

use zmtp_tokio::{Socket, SocketType};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let frontend = Socket::new(SocketType::XSub)?;
    let backend = Socket::new(SocketType::XPub)?;
    let publishers_endpoint = frontend.bind("tcp://127.0.0.1:*").await?;
    let subscribers_endpoint = backend.bind("tcp://127.0.0.1:*").await?;
    println!(
        "proxy: publishers connect to {publishers_endpoint}, subscribers to {subscribers_endpoint}"
    );
    let proxy = tokio::spawn(forward(frontend, backend));

    for name in ["publisher-1", "publisher-2"] {
        let endpoint = publishers_endpoint.clone();
        tokio::spawn(async move {
            let publisher = Socket::new(SocketType::Pub)?;
            publisher.connect(&endpoint)?;
            for n in 0.. {
                // Until a subscription has come up through the proxy, these are dropped.
                publisher.send(format!("weather {n} from {name}")).await?;
                publisher.send(format!("news {n} from {name}")).await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<(), zmtp_tokio::Error>(())
        });
    }

    let subscriber = Socket::new(SocketType::Sub)?;
    subscriber.connect(&subscribers_endpoint)?;
    subscriber.subscribe("weather")?;
    // At least six updates, and until both publishers have been heard.
    let mut heard = BTreeSet::new();
    let mut received = 0;
    while received < 6 || heard.len() < 2 {
        let msg = tokio::time::timeout(Duration::from_secs(2), subscriber.recv_string())
            .await
            .map_err(|_| "no update through the proxy")??;
        println!("subscriber: {msg}");
        if !msg.starts_with("weather ") {
            return Err(format!("{msg:?} passed the subscription \"weather\"").into());
        }
        heard.insert(msg.rsplit(' ').next().unwrap_or_default().to_owned());
        received += 1;
    }
    if proxy.is_finished() {
        return Err(format!("the proxy stopped: {:?}", proxy.await?).into());
    }
    println!("subscriber: {received} weather updates from {heard:?} through the proxy");
    Ok(())
}

/// The proxy's loop: messages down, subscriptions up, until a socket fails.
async fn forward(frontend: Socket, backend: Socket) -> Result<(), zmtp_tokio::Error> {
    loop {
        // Both `recv`s are cancel-safe: the one that loses the race takes nothing.
        tokio::select! {
            msg = frontend.recv() => backend.send(msg?).await?,
            msg = backend.recv() => {
                let msg = msg?;
                let frame = &msg.frames()[0];
                let action = if frame.first() == Some(&1) { "subscribe" } else { "unsubscribe" };
                println!("proxy: {action} {:?} (upstream)", String::from_utf8_lossy(&frame[1..]));
                frontend.send(msg).await?
            }
        };
    }
}
