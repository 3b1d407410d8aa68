//! The sender's side of a transfer with its file, without a socket.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use sha2::{Digest, Sha256};
use zmtp_async::Bytes;

use crate::wire::{self, Command, Offer, Outgoing};
use crate::{io_error, Phase, Progress, SendReport, TransferError};

/// One file being sent: its digest computed, the FETCHes it has answered. Feed it what
/// the receiver sends ([`handle`](Self::handle)) and send what it answers; the socket is
/// the caller's (a DEALER).
#[derive(Debug)]
pub struct FileSender {
    file: File,
    shown: String,
    name: String,
    size: u64,
    digest: [u8; 32],
    state: Outgoing,
    first_fetch: bool,
}

/// What to do after a message from the receiver.
#[derive(Debug)]
pub enum SendStep {
    /// Send these frames (a CHUNK) and wait for the next message.
    Reply(Vec<Bytes>),
    /// The receiver has the file: the transfer is over.
    Done(SendReport),
    /// The transfer failed; send `reply` (a CANCEL) first if there is one.
    Failed {
        /// The CANCEL to send, if the receiver is to be told.
        reply: Option<Vec<Bytes>>,
        /// Why.
        error: TransferError,
    },
}

/// The command word of `c`.
pub(crate) fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Offer(_) => "OFFER",
        Command::Fetch { .. } => "FETCH",
        Command::Chunk { .. } => "CHUNK",
        Command::Done => "DONE",
        Command::Error(_) => "ERROR",
        Command::Cancel(_) => "CANCEL",
    }
}

impl FileSender {
    /// Open the file at `path` to be offered under `name` (by default its own file name,
    /// which must then be UTF-8), and compute its SHA-256 (reading it whole; `progress`
    /// hears of each block).
    pub fn open(
        path: &Path,
        name: Option<&str>,
        progress: &mut impl FnMut(Progress),
    ) -> Result<FileSender, TransferError> {
        let name = match name {
            Some(n) => n.to_owned(),
            None => path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| {
                    TransferError::BadName(format!(
                        "{} has no UTF-8 file name: give one",
                        path.display()
                    ))
                })?
                .to_owned(),
        };
        wire::check_name(&name).map_err(TransferError::BadName)?;
        let shown = path.display().to_string();
        let file = File::open(path).map_err(io_error(format!("open {shown}")))?;
        let size = file
            .metadata()
            .map_err(io_error(format!("read the size of {shown}")))?
            .len();
        let digest = hash_file(&file, size, progress).map_err(io_error(format!("read {shown}")))?;
        Ok(FileSender {
            file,
            shown,
            name,
            size,
            digest,
            state: Outgoing::new(size),
            first_fetch: true,
        })
    }

    /// The OFFER to send first.
    pub fn offer(&self) -> Vec<Bytes> {
        Command::Offer(Offer {
            name: self.name.clone(),
            size: self.size,
            digest: self.digest,
        })
        .encode()
    }

    /// The file's SHA-256.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// Handle one message from the receiver (`frames`, as a DEALER receives them).
    pub fn handle(&mut self, frames: &[Bytes], progress: &mut impl FnMut(Progress)) -> SendStep {
        let violation = match Command::decode(frames) {
            Ok(Command::Fetch { offset, length }) => match self.state.on_fetch(offset, length) {
                Ok(()) => return self.chunk(offset, length, progress),
                Err(v) => v.0,
            },
            Ok(Command::Done) => {
                return SendStep::Done(SendReport {
                    name: self.name.clone(),
                    size: self.size,
                    sent: self.state.sent(),
                    digest: self.digest,
                })
            }
            Ok(Command::Error(reason)) => {
                return SendStep::Failed {
                    reply: None,
                    error: TransferError::Refused(reason),
                }
            }
            Ok(other) => format!("unexpected {} from the receiver", command_name(&other)),
            Err(e) => e.to_string(),
        };
        SendStep::Failed {
            reply: Some(Command::Cancel(violation.clone()).encode()),
            error: TransferError::Protocol(violation),
        }
    }

    /// The CHUNK answering a FETCH already checked.
    fn chunk(&mut self, offset: u64, length: u32, progress: &mut impl FnMut(Progress)) -> SendStep {
        if self.first_fetch {
            // A resumed transfer starts where the receiver's part ends.
            self.first_fetch = false;
            progress(Progress {
                phase: Phase::Sending,
                done: offset,
                total: self.size,
            });
        }
        let mut data = vec![0; length as usize];
        if let Err(e) = self.file.read_exact_at(&mut data, offset) {
            let shown = &self.shown;
            return SendStep::Failed {
                reply: Some(
                    Command::Cancel(format!("cannot read {shown} at {offset}: {e}")).encode(),
                ),
                error: io_error(format!("read {shown} at {offset}"))(e),
            };
        }
        progress(Progress {
            phase: Phase::Sending,
            done: offset + u64::from(length),
            total: self.size,
        });
        SendStep::Reply(
            Command::Chunk {
                offset,
                data: Bytes::from(data),
            }
            .encode(),
        )
    }
}

/// The SHA-256 of `file`, read whole: a thread reads the next blocks while this one hashes
/// (the blocks go back and forth, so three are allocated in all). `progress` hears of each
/// block hashed.
fn hash_file(
    file: &File,
    size: u64,
    progress: &mut impl FnMut(Progress),
) -> std::io::Result<[u8; 32]> {
    const BLOCK: usize = 1 << 20;
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    for _ in 0..3 {
        let _ = empty_tx.send(vec![0; BLOCK]);
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut reader = file;
            for mut buf in empty_rx {
                buf.resize(BLOCK, 0);
                match reader.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        buf.truncate(n);
                        if full_tx.send(Ok(buf)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = full_tx.send(Err(e));
                        return;
                    }
                }
            }
        });
        let mut hasher = Sha256::new();
        let mut done = 0u64;
        // Ends when the reader does (end of file, or an error it sent first).
        for block in full_rx {
            let block = block?;
            hasher.update(&block);
            done += block.len() as u64;
            progress(Progress {
                phase: Phase::Hashing,
                done: done.min(size),
                total: size,
            });
            let _ = empty_tx.send(block);
        }
        Ok(hasher.finalize().into())
    })
}
