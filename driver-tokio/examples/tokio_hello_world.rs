//! Hello World: a REP server answers "World" to each "Hello" of a REQ client.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_hello_world`.
//!
//! REQ and REP take turns: the client sends one request, then must receive its reply
//! before it sends the next; the server receives one request, then must reply.

use std::time::Duration;

use zmtp_tokio::{Socket, SocketType};

const REQUESTS: usize = 10;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server binds; the port is picked by the system and returned.
    let server = Socket::new(SocketType::Rep)?;
    let endpoint = server.bind("tcp://127.0.0.1:*").await?;
    println!("server: bound to {endpoint}");
    let server_task = tokio::spawn(async move {
        for _ in 0..REQUESTS {
            let request = server.recv_string().await?;
            println!("server: received {request:?}");
            tokio::time::sleep(Duration::from_millis(10)).await; // "work"
            server.send("World").await?;
        }
        Ok::<(), zmtp_tokio::Error>(())
    });

    // The client connects: `connect` returns at once, and the connection is made in the
    // background (a request sent before it is up waits for it).
    let client = Socket::new(SocketType::Req)?;
    client.connect(&endpoint)?;
    for n in 0..REQUESTS {
        client.send("Hello").await?;
        let reply = client.recv_string().await?;
        println!("client: reply {n}: {reply}");
        if reply != "World" {
            return Err(format!("unexpected reply {reply:?}").into());
        }
    }
    server_task.await??;
    println!("{REQUESTS} requests answered");
    Ok(())
}
