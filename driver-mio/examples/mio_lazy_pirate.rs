//! Reliable request/reply on the client side ("Lazy Pirate"): `poll` with a timeout,
//! and a fresh socket for each retry.
//!
//! Run with `cargo run -p zmtp-mio --example mio_lazy_pirate`.
//!
//! A REQ socket that sent a request and got no reply is stuck: it may not send again
//! before it receives. So the client polls for the reply with a timeout and, when none
//! comes, closes the socket (LINGER 0: the unanswered request is thrown away), opens a
//! new one and sends the request again, a few times before it gives up. The server here
//! answers each request with its sequence number, is too slow for one of them, and then
//! stops altogether; the client rides out the first and abandons at the second.

use std::thread;
use std::time::Duration;

use zmtp_mio::{poll, Context, PollItem, Socket, SocketType, POLLIN};

const REQUEST_TIMEOUT: Duration = Duration::from_millis(400);
const REQUEST_RETRIES: usize = 3;
/// The server answers requests 1 to `SERVED`, then stops.
const SERVED: u32 = 5;
/// The request the server is too slow for.
const SLOW: u32 = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new()?;

    let server = ctx.socket(SocketType::Rep)?;
    let endpoint = server.bind("tcp://127.0.0.1:*")?;
    println!("server: bound to {endpoint}");
    // Fail instead of waiting forever if the client stops sending.
    server.set_rcvtimeo(Some(Duration::from_secs(5)));
    let server_thread = thread::spawn(move || -> Result<(), zmtp_mio::Error> {
        let mut slowed = false;
        loop {
            let request = server.recv_string()?;
            if request == (SERVED + 1).to_string() {
                // Gone: this request is never answered.
                println!("server: request {request}, stopping");
                break;
            }
            if request == SLOW.to_string() && !slowed {
                // Overloaded: the reply comes after the client has given up on this
                // request; it goes to the closed socket and is lost.
                println!("server: request {request}, busy");
                thread::sleep(REQUEST_TIMEOUT * 3 / 2);
                slowed = true;
            } else {
                println!("server: request {request}");
            }
            server.send(request)?;
        }
        server.close();
        Ok(())
    });

    let mut answered = Vec::new();
    let mut abandoned = None;
    for sequence in 1..=SERVED + 1 {
        match request(&ctx, &endpoint, sequence)? {
            true => answered.push(sequence),
            false => {
                println!("client: server seems to be offline, abandoning");
                abandoned = Some(sequence);
                break;
            }
        }
    }
    server_thread.join().map_err(|_| "the server panicked")??;

    println!("client: answered {answered:?}, abandoned {abandoned:?}");
    if answered != (1..=SERVED).collect::<Vec<_>>() || abandoned != Some(SERVED + 1) {
        return Err("the client did not ride out the slow reply or did not give up".into());
    }
    Ok(())
}

/// Send request `sequence` until its reply comes, with a fresh socket for each retry:
/// `Ok(true)` when answered, `Ok(false)` when every try timed out.
fn request(ctx: &Context, endpoint: &str, sequence: u32) -> Result<bool, zmtp_mio::Error> {
    for attempt in 1..=REQUEST_RETRIES {
        let client = new_client(ctx, endpoint)?;
        client.send(sequence.to_string())?;
        let mut items = [PollItem::new(&client, POLLIN)];
        if poll(&mut items, Some(REQUEST_TIMEOUT))? > 0 && items[0].revents & POLLIN != 0 {
            let reply = client.recv_string()?;
            if reply == sequence.to_string() {
                println!("client: request {sequence}: server replied OK");
                return Ok(true);
            }
            println!("client: request {sequence}: malformed reply {reply:?}");
        } else {
            println!(
                "client: request {sequence}: no response (attempt {attempt} of {REQUEST_RETRIES})"
            );
        }
        // Dropped here: with LINGER 0, at once, taking its unanswered request with it.
    }
    Ok(false)
}

fn new_client(ctx: &Context, endpoint: &str) -> Result<Socket, zmtp_mio::Error> {
    let client = ctx.socket(SocketType::Req)?;
    client.set_linger(Some(Duration::ZERO))?;
    client.connect(endpoint)?;
    Ok(client)
}
