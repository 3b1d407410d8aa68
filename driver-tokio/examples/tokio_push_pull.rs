//! A pipeline: a PUSH socket hands work to a PULL socket.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_push_pull`.

use zmtp_tokio::{Socket, SocketType};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pull = Socket::new(SocketType::Pull)?;
    let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
    println!("PULL bound to {endpoint}");

    let push = Socket::new(SocketType::Push)?;
    push.connect(&endpoint)?;
    for i in 0..5 {
        push.send(format!("task {i}")).await?;
    }

    // A single PUSH to a single PULL: every task arrives, in order.
    for i in 0..5 {
        let task = pull.recv_string().await?;
        println!("PULL got {task:?}");
        if task != format!("task {i}") {
            return Err(format!("expected task {i}, got {task:?}").into());
        }
    }
    Ok(())
}
