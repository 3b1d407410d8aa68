//! Send numbered messages, then return from `main` without closing anything: every one is
//! delivered, because dropping the last `Context` handle waits until each dropped socket's
//! queue is written or LINGER runs out, as `zmq_ctx_term` does. What LINGER cuts off is said on
//! standard error.
//!
//! `cargo run -p zmtp-mio --example mio_send_and_exit -- tcp://127.0.0.1:5557 1000`
//! sends "0" … "999" to whatever PULL listens there. A third argument sets LINGER in
//! milliseconds; for `wss://`, `ZMTP_EXAMPLE_CA` names the PEM file of the roots to trust.

use std::time::Duration;

use zmtp_mio::{Context, SocketType, Tls};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let endpoint = args.next().unwrap_or_else(|| "tcp://127.0.0.1:5557".into());
    let count: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let linger: Option<u64> = args.next().and_then(|n| n.parse().ok());

    let ctx = Context::new()?;
    let push = ctx.socket(SocketType::Push)?;
    if let Some(ms) = linger {
        push.set_linger(Some(Duration::from_millis(ms)))?;
    }
    if let Ok(ca) = std::env::var("ZMTP_EXAMPLE_CA") {
        push.set_tls(Tls::new().with_roots_file(ca)?);
    }
    push.connect(&endpoint)?;
    for i in 0..count {
        push.send(i.to_string())?;
    }
    // No `close`, no `Context::term`: dropped here in reverse order, `push` (it starts
    // lingering), then `ctx`, whose drop waits for `push`'s queue to be written.
    Ok(())
}
