//! Send numbered messages, then end: every one is delivered, because the program ends
//! with `Context::term`, which waits until each socket's queue is written (or LINGER
//! runs out), as `zmq_ctx_term` does.
//!
//! `cargo run -p zmtp-smol --example smol_send_and_exit -- tcp://127.0.0.1:5557 1000`
//! sends "0" … "999" to whatever PULL listens there, and exits 1 if LINGER cut any off.

use zmtp_smol::{Context, SocketType};

fn main() -> Result<(), zmtp_smol::Error> {
    let mut args = std::env::args().skip(1);
    let endpoint = args.next().unwrap_or_else(|| "tcp://127.0.0.1:5557".into());
    let count: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);

    let report = zmtp_smol::block_on(async {
        let ctx = Context::new()?;
        let push = ctx.socket(SocketType::Push)?;
        push.connect(&endpoint)?;
        for i in 0..count {
            push.send(i.to_string()).await?;
        }
        // The socket may be dropped (or kept): `term` closes it and waits.
        drop(push);
        Ok::<_, zmtp_smol::Error>(ctx.term().await)
    })?;
    if !report.delivered_all() {
        eprintln!("{report}");
        std::process::exit(1);
    }
    Ok(())
}
