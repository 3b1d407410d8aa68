//! Send numbered messages, then return from `main` without closing anything: every one is
//! delivered all the same. The socket is dropped at the end of `main` and lingers; when the
//! runtime ends under it, it lingers on with blocking I/O, and the process waits for it at
//! exit (bounded by LINGER), as a libzmq program's `zmq_ctx_term` does. What LINGER cuts
//! off is said on standard error.
//!
//! `cargo run -p zmtp-tokio --example tokio_send_and_exit -- tcp://127.0.0.1:5557 1000`
//! sends "0" … "999" to whatever PULL listens there. A third argument sets LINGER in
//! milliseconds; for `wss://`, `ZMTP_EXAMPLE_CA` names the PEM file of the roots to trust.
//! With `ZMTP_EXAMPLE_RUNTIME=kept` the runtime is never shut down (its worker threads
//! still run when `main` returns): the exit hook takes the socket from it.

use std::time::Duration;

use zmtp_tokio::{Socket, SocketType, Tls};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Runtime::new()?;
    let sent = runtime.block_on(send());
    if std::env::var("ZMTP_EXAMPLE_RUNTIME").is_ok_and(|r| r == "kept") {
        std::mem::forget(runtime);
    }
    sent
}

/// What `#[tokio::main] async fn main` would hold.
async fn send() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let endpoint = args.next().unwrap_or_else(|| "tcp://127.0.0.1:5557".into());
    let count: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let linger: Option<u64> = args.next().and_then(|n| n.parse().ok());

    let push = Socket::new(SocketType::Push)?;
    if let Some(ms) = linger {
        push.set_linger(Some(Duration::from_millis(ms)))?;
    }
    if let Ok(ca) = std::env::var("ZMTP_EXAMPLE_CA") {
        push.set_tls(Tls::new().with_roots_file(ca)?);
    }
    push.connect(&endpoint)?;
    for i in 0..count {
        push.send(i.to_string()).await?;
    }
    // No `close().await`, no `Context::term().await`: nothing is lost for that.
    Ok(())
}
