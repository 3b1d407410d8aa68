//! Hello World with blocking sockets: a REP server thread answers "World" to each "Hello"
//! of a REQ client.
//!
//! Run with `cargo run -p zmtp-mio --example mio_hello_world`.
//!
//! A `Context` owns the I/O thread; its sockets are used from any thread, and `send` and
//! `recv` block the calling thread (until RCVTIMEO/SNDTIMEO, when set).

use std::thread;
use std::time::Duration;

use zmtp_mio::{Context, SocketType};

const REQUESTS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new()?;

    // RCVTIMEO on both sides: fail instead of waiting forever if the other one is gone.
    let server = ctx.socket(SocketType::Rep)?;
    let endpoint = server.bind("tcp://127.0.0.1:*")?;
    println!("server: bound to {endpoint}");
    server.set_rcvtimeo(Some(Duration::from_secs(5)));
    let server_thread = thread::spawn(move || -> Result<(), zmtp_mio::Error> {
        for _ in 0..REQUESTS {
            let request = server.recv_string()?;
            println!("server: received {request:?}");
            thread::sleep(Duration::from_millis(10)); // "work"
            server.send("World")?;
        }
        Ok(())
    });

    let client = ctx.socket(SocketType::Req)?;
    client.set_rcvtimeo(Some(Duration::from_secs(5)));
    client.connect(&endpoint)?;
    for n in 0..REQUESTS {
        client.send("Hello")?;
        let reply = client.recv_string()?;
        println!("client: reply {n}: {reply}");
        if reply != "World" {
            return Err(format!("unexpected reply {reply:?}").into());
        }
    }
    server_thread.join().map_err(|_| "the server panicked")??;
    println!("{REQUESTS} requests answered");
    Ok(())
}
