//! Request/reply: a REP server answers a REQ client.
//!
//! Run with `cargo run -p zmtp-tokio --example req_rep`.

use zmtp_tokio::{Socket, SocketType};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rep = Socket::new(SocketType::Rep)?;
    let endpoint = rep.bind("tcp://127.0.0.1:*").await?;
    let server = tokio::spawn(async move {
        for _ in 0..3 {
            let request = rep.recv().await.expect("request");
            let text = String::from_utf8_lossy(&request.frames()[0]).to_uppercase();
            rep.send(text).await.expect("reply");
        }
    });

    let req = Socket::new(SocketType::Req)?;
    req.connect(&endpoint)?;
    for word in ["hello", "zero", "mq"] {
        req.send(word).await?;
        let reply = req.recv().await?;
        println!("{word} -> {}", String::from_utf8_lossy(&reply.frames()[0]));
    }
    server.await?;
    Ok(())
}
