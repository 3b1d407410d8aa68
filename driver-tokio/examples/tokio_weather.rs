//! Weather updates over PUB/SUB, and the "slow joiner".
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_weather`.
//!
//! A publisher sends "ZIP TEMPERATURE HUMIDITY" updates for random zip codes; a
//! subscriber asks only for zip codes starting with "1001" and averages the temperature
//! of the first updates it gets.
//!
//! The slow joiner: a PUB sends each message only to the subscribers whose subscription
//! has already arrived. Connecting and handshaking take a moment, so whatever a PUB
//! sends right after `bind` goes nowhere (`send` returns `Sent::Dropped`), however
//! early the subscriber called `connect`. A sleep before publishing is a guess. The fix
//! shown here: the publisher is an XPUB, a PUB that also hands its subscriptions to the
//! application, and it starts publishing when the subscription has arrived (with many
//! subscribers, count them, or have each one say so on a second socket pair). A
//! subscriber that only needs the updates from some point on may simply ignore the loss.

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::watch;
use zmtp_tokio::{Sent, Socket, SocketType};

/// The zip codes the subscriber wants: a SUB filters by prefix, byte for byte.
const FILTER: &str = "1001";
const UPDATES: usize = 20;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let publisher = Socket::new(SocketType::XPub)?;
    let endpoint = publisher.bind("tcp://127.0.0.1:*").await?;
    println!("publisher: bound to {endpoint}");

    let subscriber = Socket::new(SocketType::Sub)?;
    subscriber.connect(&endpoint)?;
    subscriber.subscribe(FILTER)?;
    println!("subscriber: connected, subscribed to zip codes {FILTER}*");

    // The caveat: the subscription has not travelled yet, so this update reaches no one.
    let early = publisher.send(format!("{FILTER}0 70 40")).await?;
    println!("publisher: an update sent right away: {early:?}");

    let (stop, stopped) = watch::channel(false);
    let publishing = tokio::spawn(publish(publisher, stopped));

    let mut total = 0i64;
    for n in 1..=UPDATES {
        let update = subscriber.recv_string().await?;
        let fields: Vec<&str> = update.split(' ').collect();
        let [zip, temperature, _humidity] = fields[..] else {
            return Err(format!("malformed update {update:?}").into());
        };
        if !zip.starts_with(FILTER) {
            return Err(format!("update for zip code {zip} passed the filter").into());
        }
        println!("subscriber: update {n}: {update}");
        total += temperature.parse::<i64>()?;
    }
    println!(
        "average temperature for zip codes {FILTER}*: {}F over {UPDATES} updates",
        total / UPDATES as i64
    );

    stop.send(true)?;
    let (sent, unwanted) = publishing.await??;
    println!("publisher: {sent} updates sent to the subscriber, {unwanted} wanted by no one");
    Ok(())
}

/// Wait for the first subscription, then publish until told to stop. Returns how many
/// updates went to a subscriber and how many matched no subscription (an XPUB, like a
/// PUB, drops those: `Sent::Dropped`).
async fn publish(
    publisher: Socket,
    mut stopped: watch::Receiver<bool>,
) -> Result<(usize, usize), zmtp_tokio::Error> {
    // An XPUB receives each subscription as a message: byte 1 and the prefix (byte 0 for
    // an unsubscription).
    let subscription = publisher.recv().await?;
    let frame = &subscription.frames()[0];
    println!(
        "publisher: subscription {:?} arrived, publishing",
        String::from_utf8_lossy(&frame[1..])
    );

    let mut random = Random::seeded();
    let (mut sent, mut unwanted) = (0, 0);
    while !*stopped.borrow_and_update() {
        // Zip codes 10000 to 10199: one in twenty passes the subscriber's filter.
        let zip = 10000 + random.below(200);
        let temperature = random.below(215) as i64 - 80;
        let humidity = 10 + random.below(50);
        let update = format!("{zip:05} {temperature} {humidity}");
        match publisher.send(update).await? {
            Sent::Queued => sent += 1,
            Sent::Dropped => unwanted += 1,
        }
        // A PUB never waits for its subscribers: let the subscriber's task run.
        tokio::task::yield_now().await;
    }
    Ok((sent, unwanted))
}

/// A small xorshift generator, so that the example needs no other crate.
struct Random(u64);

impl Random {
    fn seeded() -> Random {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Random(nanos | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
