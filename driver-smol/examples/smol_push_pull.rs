//! PUSH/PULL and REQ/REP on smol: `cargo run -p zmtp-smol --example smol_push_pull`.

use zmtp_smol::{Socket, SocketType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One thread runs the future and every socket created inside it.
    zmtp_smol::block_on(async {
        // PUSH/PULL: a pipeline.
        let pull = Socket::new(SocketType::Pull)?;
        let endpoint = pull.bind("tcp://127.0.0.1:*").await?;
        let push = Socket::new(SocketType::Push)?;
        push.connect(&endpoint)?;
        push.send("task").await?;
        let task = pull.recv_string().await?;
        println!("PULL got {task:?}");

        // REQ/REP: request and reply, in process.
        let rep = Socket::new(SocketType::Rep)?;
        let endpoint = rep.bind("inproc://smol-quick-start").await?;
        let req = Socket::new(SocketType::Req)?;
        req.connect(&endpoint)?;
        req.send("ping").await?;
        let request = rep.recv().await?;
        rep.send(request).await?;
        let reply = req.recv_string().await?;
        println!("REQ got {reply:?}");
        if task != "task" || reply != "ping" {
            return Err("unexpected messages".into());
        }
        Ok(())
    })
}
