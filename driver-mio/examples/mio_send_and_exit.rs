//! Send numbered messages, then return from `main`: every one is delivered, because
//! dropping the last `Context` handle waits until each dropped socket's queue is written
//! (or LINGER runs out), as `zmq_ctx_term` does.
//!
//! `cargo run -p zmtp-mio --example mio_send_and_exit -- tcp://127.0.0.1:5557 1000`
//! sends "0" … "999" to whatever PULL listens there.

use zmtp_mio::{Context, SocketType};

fn main() -> Result<(), zmtp_mio::Error> {
    let mut args = std::env::args().skip(1);
    let endpoint = args.next().unwrap_or_else(|| "tcp://127.0.0.1:5557".into());
    let count: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);

    let ctx = Context::new()?;
    let push = ctx.socket(SocketType::Push)?;
    push.connect(&endpoint)?;
    for i in 0..count {
        push.send(i.to_string())?;
    }
    // Dropped here in reverse order: `push` (it starts lingering), then `ctx`, whose
    // drop waits for `push`'s queue to be written.
    Ok(())
}
