//! The same transfers on the blocking driver (`zmtp-mio`): each call blocks its thread
//! until it is over. Give the socket a receive timeout (`set_rcvtimeo`) to give up.
//!
//! ```
//! use zmtp_file::{blocking, RecvOptions};
//! use zmtp_mio::{Context, SocketType};
//!
//! let dir = std::env::temp_dir().join(format!("zmtp-file-blocking-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("in"))?;
//! std::fs::write(dir.join("a.txt"), b"blocking")?;
//!
//! let ctx = Context::new()?;
//! let receiver = ctx.socket(SocketType::Router)?;
//! let endpoint = receiver.bind("tcp://127.0.0.1:*")?;
//! let sender = ctx.socket(SocketType::Dealer)?;
//! sender.connect(&endpoint)?;
//! let options = RecvOptions::new(dir.join("in"));
//! let saving = std::thread::spawn(move || blocking::recv_files(&receiver, &options, Some(1), |_| {}));
//! let report = blocking::send_file(&sender, &dir.join("a.txt"), None, |_| {})?;
//! assert_eq!(report.sent, 8);
//! let outcomes = saving.join().unwrap()?;
//! assert!(outcomes[0].clone().saved().is_some());
//! assert_eq!(std::fs::read(dir.join("in/a.txt"))?, b"blocking");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;
use std::time::Instant;

use zmtp_async::{Bytes, Message};
use zmtp_mio::Socket;

use crate::{
    one_saved, FileReceiver, FileSender, Outcome, Progress, RecvEvent, RecvOptions, Saved,
    SendOptions, SendReport, SendStep, TransferError, TreeEvent, TreeReport, TreeSender,
};

fn send(socket: &Socket, frames: Vec<Bytes>) -> Result<(), TransferError> {
    socket
        .send(Message::from(frames))
        .map(|_| ())
        .map_err(TransferError::Socket)
}

/// [`crate::send_file`] on a blocking DEALER.
pub fn send_file(
    socket: &Socket,
    path: &Path,
    name: Option<&str>,
    progress: impl FnMut(Progress),
) -> Result<SendReport, TransferError> {
    let options = SendOptions {
        name: name.map(str::to_owned),
        digest_cache: None,
    };
    send_file_with(socket, path, &options, progress)
}

/// [`crate::send_file_with`] on a blocking DEALER.
pub fn send_file_with(
    socket: &Socket,
    path: &Path,
    options: &SendOptions,
    mut progress: impl FnMut(Progress),
) -> Result<SendReport, TransferError> {
    let mut sender = FileSender::open_cached(
        path,
        options.name.as_deref(),
        options.digest_cache.as_ref(),
        &mut progress,
    )?;
    send(socket, sender.offer())?;
    loop {
        let msg = socket.recv()?;
        match sender.handle(msg.frames(), &mut progress) {
            SendStep::Reply(frames) => send(socket, frames)?,
            SendStep::Done(report) => return Ok(report),
            SendStep::Failed { reply, error } => {
                if let Some(frames) = reply {
                    let _ = send(socket, frames);
                }
                return Err(error);
            }
        }
    }
}

/// [`crate::send_tree`] on a blocking DEALER.
pub fn send_tree(
    socket: &Socket,
    root: &Path,
    options: &SendOptions,
    mut events: impl FnMut(&TreeEvent),
) -> Result<TreeReport, TransferError> {
    let mut tree = TreeSender::new(root, options)?;
    let mut step = tree.start(&mut events);
    loop {
        // What the last message asked for, then the next offers (hashed meanwhile).
        for next in [false, true] {
            if next {
                step = tree.offers(&mut events);
            }
            let end = step.end.take();
            for frames in step.send.drain(..) {
                match (send(socket, frames), &end) {
                    (Ok(()), _) => {}
                    // The tree failed already: the CANCEL is best effort.
                    (Err(_), Some(Err(_))) => break,
                    (Err(e), _) => return Err(e),
                }
            }
            if let Some(end) = end {
                return end;
            }
        }
        let msg = socket.recv()?;
        step = tree.handle(msg.frames(), &mut events);
    }
}

/// [`crate::recv_files`] on a blocking ROUTER. The socket's receive timeout
/// (`set_rcvtimeo`) ends it with [`TransferError::Socket`] when no message comes for
/// that long; a transfer's sender silent for [`RecvOptions::idle_timeout`] ends only
/// that transfer.
pub fn recv_files(
    socket: &Socket,
    options: &RecvOptions,
    count: Option<u64>,
    mut events: impl FnMut(&RecvEvent),
) -> Result<Vec<Outcome>, TransferError> {
    let mut receiver = FileReceiver::new(options.clone());
    let mut outcomes = Vec::new();
    while count.is_none_or(|c| (outcomes.len() as u64) < c) {
        let msg = match receiver.idle_deadline() {
            None => socket.recv()?,
            Some(deadline) => {
                let wait = deadline.saturating_duration_since(Instant::now());
                // The socket's own receive timeout still ends the call if it is shorter.
                let (limit, idle) = match socket.rcvtimeo() {
                    Some(own) if own < wait => (own, false),
                    _ => (wait, true),
                };
                match socket.recv_timeout(Some(limit)) {
                    Ok(msg) => msg,
                    Err(zmtp_mio::Error::Timeout) if idle => {
                        while let Some(handled) = receiver.expire_idle(Instant::now(), &mut events)
                        {
                            for reply in handled.replies {
                                send(socket, reply)?;
                            }
                            outcomes.extend(handled.ended);
                        }
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let handled = receiver.handle(msg.into_frames(), &mut events);
        for reply in handled.replies {
            send(socket, reply)?;
        }
        outcomes.extend(handled.ended);
    }
    Ok(outcomes)
}

/// [`crate::recv_file`] on a blocking ROUTER.
pub fn recv_file(
    socket: &Socket,
    options: &RecvOptions,
    events: impl FnMut(&RecvEvent),
) -> Result<Saved, TransferError> {
    one_saved(recv_files(socket, options, Some(1), events)?.pop())
}
