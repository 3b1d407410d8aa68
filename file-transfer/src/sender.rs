//! The sender's side of a transfer with its file, without a socket.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::BytesMut;
use zmtp_async::Bytes;

use crate::cache::{DigestCache, FileKey};
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
    /// Where the receiver's first FETCH started (its resume point), once it came.
    from: Option<u64>,
    /// The cache the digest was looked up in, and the file's canonical path there.
    cache: Option<(DigestCache, PathBuf)>,
    /// The digest came from the cache (the file was not read).
    digest_cached: bool,
    /// The last chunks sent, kept to be read into again once the socket has written them
    /// (and so dropped its reference): no allocation and no zeroing per chunk.
    sent: VecDeque<Bytes>,
}

/// The smallest file whose digest goes in a [`DigestCache`]: smaller ones are hashed
/// every time, which costs less than their entry (a tree of many small files would
/// otherwise fill the cache and rewrite its file once per file).
pub const CACHED_MIN: u64 = 64 << 10;

/// How many sent chunks a sender keeps for reuse: the default window's worth (with fewer,
/// a window of chunks still queued in the socket leaves none free). They hold at most
/// this many of the ranges asked for.
const REUSED_CHUNKS: usize = 8;

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
        Command::Tree { .. } => "TREE",
        Command::Dir(_) => "DIR",
        Command::Put { .. } => "PUT",
    }
}

impl FileSender {
    /// Open the file at `path` to be offered under `name` (by default its own file name,
    /// which must then be UTF-8; a relative path such as `dir/file.txt` is allowed, see
    /// [`wire::check_path`]), and compute its BLAKE3 digest (reading it whole; `progress`
    /// hears of each block).
    pub fn open(
        path: &Path,
        name: Option<&str>,
        progress: &mut impl FnMut(Progress),
    ) -> Result<FileSender, TransferError> {
        FileSender::open_cached(path, name, None, progress)
    }

    /// [`open`](Self::open), taking the digest from `cache` when it holds one for this
    /// file as it is now (same canonical path, device, inode, size, and modification and
    /// status-change times), and recording it there after hashing otherwise. A file that
    /// changed in the last moments before hashing, or while it was hashed, is not
    /// recorded (a change within the file system's clock tick would not show in its
    /// times). A path that cannot be made canonical is hashed without the cache, and so
    /// is a file under [`CACHED_MIN`] bytes (hashing it costs less than keeping its entry).
    pub fn open_cached(
        path: &Path,
        name: Option<&str>,
        cache: Option<&DigestCache>,
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
        wire::check_path(&name).map_err(TransferError::BadName)?;
        let shown = path.display().to_string();
        let file = File::open(path).map_err(io_error(format!("open {shown}")))?;
        let meta = file
            .metadata()
            .map_err(io_error(format!("read the size of {shown}")))?;
        let size = meta.len();
        // The key is the open file's own status, so it describes what is read.
        let key = FileKey::of(&meta);
        let cache = cache.filter(|_| size >= CACHED_MIN).and_then(|c| {
            let canonical = std::fs::canonicalize(path).ok()?;
            Some((c.clone(), canonical))
        });
        let found = cache.as_ref().and_then(|(c, p)| c.lookup(p, &key));
        let digest = match found {
            Some(digest) => digest,
            None => {
                let started = SystemTime::now();
                let digest =
                    hash_file(&file, size, progress).map_err(io_error(format!("read {shown}")))?;
                if let Some((c, p)) = &cache {
                    let unchanged = file.metadata().is_ok_and(|m| FileKey::of(&m) == key);
                    // Best effort: a cache that cannot be written only costs a hash.
                    if unchanged && key.settled_before(started) {
                        let _ = c.insert(p.clone(), key, digest);
                    } else {
                        // What it held for the path is stale either way.
                        let _ = c.remove(p);
                    }
                }
                digest
            }
        };
        Ok(FileSender {
            file,
            shown,
            name,
            size,
            digest,
            state: Outgoing::new(size),
            first_fetch: true,
            from: None,
            cache,
            digest_cached: found.is_some(),
            sent: VecDeque::with_capacity(REUSED_CHUNKS),
        })
    }

    /// Drop the buffers kept for reading chunks into (the file is sent in full and only
    /// its answer is to come).
    pub fn release_buffers(&mut self) {
        self.sent = VecDeque::new();
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

    /// The file's BLAKE3 digest.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// The name it is offered under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes sent in CHUNKs so far.
    pub fn sent(&self) -> u64 {
        self.state.sent()
    }

    /// Whether the receiver has asked for, and been sent, every byte it lacked: only its
    /// `DONE` (or `ERROR`) is still to come. A sender of several files may offer the next
    /// one then: the receiver answers this one first, since it handles messages in order.
    pub fn all_sent(&self) -> bool {
        match self.from {
            Some(from) => self.state.sent() >= self.size - from,
            None => self.size == 0,
        }
    }

    /// Whether the digest came from the cache (the file was not read to compute it).
    pub fn digest_cached(&self) -> bool {
        self.digest_cached
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
                    digest_cached: self.digest_cached,
                })
            }
            Ok(Command::Error(reason)) => {
                // The receiver may have refused the digest itself: a cached one is not
                // offered again, so a retry hashes the file.
                if let (true, Some((c, p))) = (self.digest_cached, &self.cache) {
                    let _ = c.remove(p);
                }
                return SendStep::Failed {
                    reply: None,
                    error: TransferError::Refused(reason),
                };
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
            self.from = Some(offset);
            progress(Progress {
                phase: Phase::Sending,
                done: offset,
                total: self.size,
            });
        }
        let mut data = self.buffer(length as usize);
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
        let data = data.freeze();
        if self.sent.len() == REUSED_CHUNKS {
            self.sent.pop_front();
        }
        self.sent.push_back(data.clone());
        SendStep::Reply(Command::Chunk { offset, data }.encode())
    }

    /// A buffer of `length` bytes to read a chunk into: a chunk sent before whose bytes
    /// the socket no longer holds, or a new one.
    fn buffer(&mut self, length: usize) -> BytesMut {
        for _ in 0..self.sent.len() {
            let Some(old) = self.sent.pop_front() else {
                break;
            };
            match old.try_into_mut() {
                Ok(mut buf) => {
                    // Its bytes are initialized: only a longer range needs zeroes added.
                    if buf.len() >= length {
                        buf.truncate(length);
                    } else {
                        buf.resize(length, 0);
                    }
                    return buf;
                }
                // Still queued in the socket: keep it for later.
                Err(old) => self.sent.push_back(old),
            }
        }
        BytesMut::zeroed(length)
    }
}

/// The BLAKE3 digest of `file`, read whole. A file of one block is read and hashed here;
/// a larger one is read ahead by a thread while this one hashes (the blocks go back and
/// forth, so three are allocated in all). `progress` hears of each block hashed.
fn hash_file(
    file: &File,
    size: u64,
    progress: &mut impl FnMut(Progress),
) -> std::io::Result<[u8; 32]> {
    const BLOCK: usize = 1 << 20;
    let mut hasher = blake3::Hasher::new();
    if size <= BLOCK as u64 {
        // Read to the end, whatever the size said: the file may have grown.
        let mut data = Vec::with_capacity(size as usize + 1);
        let mut reader = file;
        reader.read_to_end(&mut data)?;
        if data.len() <= BLOCK {
            hasher.update(&data);
            progress(Progress {
                phase: Phase::Hashing,
                done: (data.len() as u64).min(size),
                total: size,
            });
            return Ok(*hasher.finalize().as_bytes());
        }
        // It grew past a block: hash it as a large one, from the start.
        return hash_blocks(file, size, progress);
    }
    hash_blocks(file, size, progress)
}

/// [`hash_file`] for a file of more than one block, from its start.
fn hash_blocks(
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
            let mut at = 0u64;
            for mut buf in empty_rx {
                buf.resize(BLOCK, 0);
                let read = loop {
                    match file.read_at(&mut buf, at) {
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        other => break other,
                    }
                };
                match read {
                    Ok(0) => return,
                    Ok(n) => {
                        at += n as u64;
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
        let mut hasher = blake3::Hasher::new();
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
        Ok(*hasher.finalize().as_bytes())
    })
}
