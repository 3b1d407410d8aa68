//! The scenarios through a driver's socket: what an application pays per message with
//! zmtp-tokio on a current-thread runtime, the core's cost and the driver's together.
//!
//! A PUSH and a PULL over `inproc://` in one process (no system calls on the measured
//! path, so the figure does not depend on the kernel or on timing), taking turns: the
//! PUSH sends [`BATCH`] messages, then the PULL receives them and checks each. The
//! per-message calls (`send_slice`, `recv`) and the batch calls (`send_many`,
//! `recv_many`) run the same traffic, so their figures compare directly.

use zmtp_tokio::{Socket, SocketType};

use crate::{is_body, Failure, BATCH, BODY_LEN, WARM_UP};

/// The PUSH and PULL, connected over `inproc://`, with a warm-up batch through them.
async fn pair() -> Result<(Socket, Socket), Failure> {
    let fail = |what: &str, e: &dyn std::fmt::Display| Failure(format!("{what}: {e}"));
    let pull = Socket::new(SocketType::Pull).map_err(|e| fail("PULL", &e))?;
    pull.bind("inproc://icount-driver")
        .await
        .map_err(|e| fail("bind", &e))?;
    let push = Socket::new(SocketType::Push).map_err(|e| fail("PUSH", &e))?;
    push.connect("inproc://icount-driver")
        .map_err(|e| fail("connect", &e))?;
    Ok((push, pull))
}

fn body(k: u64) -> [u8; BODY_LEN] {
    let mut body = [0u8; BODY_LEN];
    body[..8].copy_from_slice(&(k % BATCH as u64).to_le_bytes());
    body[BODY_LEN - 1] = (k % BATCH as u64) as u8;
    body
}

/// `count` messages (after [`WARM_UP`]), one `send_slice` and one `recv` each, or one
/// `send_many` and one `recv_many` per batch (`many`).
pub(crate) fn tokio_push_pull(count: u64, many: bool) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("runtime: {e}")))?;
    runtime.block_on(async {
        let (push, pull) = pair().await?;
        let bodies: Vec<[u8; BODY_LEN]> = (0..BATCH as u64).map(body).collect();
        let mut batch = Vec::with_capacity(BATCH);
        let total = WARM_UP + count;
        let mut done = 0u64;
        while done < total {
            let n = (total - done).min(BATCH as u64) as usize;
            if many {
                let mut rest = &bodies[..n];
                while !rest.is_empty() {
                    let sent = push.send_many(rest).await;
                    let sent = sent.map_err(|e| Failure(format!("send_many: {e}")))?;
                    rest = &rest[sent..];
                }
            } else {
                for b in &bodies[..n] {
                    let sent = push.send_slice(b).await;
                    sent.map_err(|e| Failure(format!("send_slice: {e}")))?;
                }
            }
            let mut k = 0;
            while k < n {
                batch.clear();
                if many {
                    let got = pull.recv_many(&mut batch, n - k).await;
                    got.map_err(|e| Failure(format!("recv_many: {e}")))?;
                } else {
                    let msg = pull.recv().await;
                    batch.push(msg.map_err(|e| Failure(format!("recv: {e}")))?);
                }
                for msg in &batch {
                    let ok = msg.len() == 1 && msg.first().is_some_and(|f| is_body(f, k as u64));
                    if !ok {
                        return Err(Failure(format!("message {}: {msg:?}", done + k as u64)));
                    }
                    k += 1;
                }
            }
            done += n as u64;
        }
        Ok(())
    })
}
