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
/// a larger one is split into the subtrees of BLAKE3's tree of at most [`LEAF`] bytes,
/// which this thread and a second one read and hash in turn (both cores at work, the reads
/// of one overlapping the hashing of the other), and their chaining values are merged into
/// the root. `progress` hears of each block hashed.
fn hash_file(
    file: &File,
    size: u64,
    progress: &mut impl FnMut(Progress),
) -> std::io::Result<[u8; 32]> {
    const BLOCK: usize = 1 << 20;
    if size <= BLOCK as u64 {
        // Read to the end, whatever the size said: the file may have grown.
        let mut data = Vec::with_capacity(size as usize + 1);
        let mut reader = file;
        reader.read_to_end(&mut data)?;
        if data.len() <= BLOCK {
            progress(Progress {
                phase: Phase::Hashing,
                done: (data.len() as u64).min(size),
                total: size,
            });
            return Ok(wire::digest(&data));
        }
        // It grew past a block: hashed as a large one (its first `size` bytes; the
        // receiver finds out if they are not what it is sent).
    }
    hash_tree(file, size, LEAF, progress)
}

/// The largest subtree one thread reads and hashes at a time (16 MiB).
const LEAF: u64 = 16 << 20;

/// The subtrees of the BLAKE3 tree of `len` bytes at `offset` that are at most `leaf`
/// bytes, in order (the canonical tree: each node's left child is the largest power of two
/// of chunks that leaves something to the right).
fn leaves(offset: u64, len: u64, leaf: u64, out: &mut Vec<(u64, u64)>) {
    if len <= leaf {
        out.push((offset, len));
    } else {
        let left = blake3::hazmat::left_subtree_len(len);
        leaves(offset, left, leaf, out);
        leaves(offset + left, len - left, leaf, out);
    }
}

/// The chaining value of the subtree of `len` bytes whose leaves come next in `cvs`.
fn merge_subtree(
    len: u64,
    leaf: u64,
    cvs: &mut impl Iterator<Item = blake3::hazmat::ChainingValue>,
) -> blake3::hazmat::ChainingValue {
    use blake3::hazmat::{left_subtree_len, merge_subtrees_non_root, Mode};
    if len <= leaf {
        return cvs.next().expect("one chaining value per leaf");
    }
    let left = left_subtree_len(len);
    let l = merge_subtree(left, leaf, cvs);
    let r = merge_subtree(len - left, leaf, cvs);
    merge_subtrees_non_root(&l, &r, Mode::Hash)
}

/// The BLAKE3 digest of the first `size` bytes of `file` (more than one chunk of 1 KiB),
/// its subtrees of at most `leaf` bytes (a power of two, at least 1 KiB) hashed by two
/// threads. A file shorter than `size` is an error.
fn hash_tree(
    file: &File,
    size: u64,
    leaf: u64,
    progress: &mut impl FnMut(Progress),
) -> std::io::Result<[u8; 32]> {
    use blake3::hazmat::{merge_subtrees_root, HasherExt, Mode};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    const BLOCK: usize = 1 << 20;
    let mut parts = Vec::new();
    leaves(0, size, leaf, &mut parts);
    let next = AtomicUsize::new(0);
    let hashed = AtomicU64::new(0);
    // Each worker takes the next leaf until none is left; the hashers come back by index.
    let work = |report: &mut dyn FnMut()| -> std::io::Result<Vec<(usize, blake3::Hasher)>> {
        let mut buf = vec![0; BLOCK];
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(offset, len)) = parts.get(i) else {
                return Ok(done);
            };
            let mut hasher = blake3::Hasher::new();
            if offset > 0 {
                hasher.set_input_offset(offset);
            }
            let mut at = 0;
            while at < len {
                let n = (len - at).min(BLOCK as u64) as usize;
                file.read_exact_at(&mut buf[..n], offset + at)?;
                hasher.update(&buf[..n]);
                at += n as u64;
                hashed.fetch_add(n as u64, Ordering::Relaxed);
                report();
            }
            done.push((i, hasher));
        }
    };
    let mut hashers: Vec<Option<blake3::Hasher>> = vec![None; parts.len()];
    std::thread::scope(|scope| -> std::io::Result<()> {
        let second = (parts.len() > 1).then(|| scope.spawn(|| work(&mut || {})));
        let mine = work(&mut || {
            progress(Progress {
                phase: Phase::Hashing,
                done: hashed.load(Ordering::Relaxed).min(size),
                total: size,
            })
        });
        let theirs = match second {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
            None => Ok(Vec::new()),
        };
        for (i, h) in mine?.into_iter().chain(theirs?) {
            hashers[i] = Some(h);
        }
        Ok(())
    })?;
    // The second thread may have hashed the last blocks: the end is told here.
    progress(Progress {
        phase: Phase::Hashing,
        done: hashed.load(Ordering::Relaxed).min(size),
        total: size,
    });
    let hashers: Vec<blake3::Hasher> = hashers.into_iter().flatten().collect();
    if hashers.len() == 1 {
        return Ok(*hashers[0].finalize().as_bytes());
    }
    let mut cvs = hashers.iter().map(|h| h.finalize_non_root());
    let left = blake3::hazmat::left_subtree_len(size);
    let l = merge_subtree(left, leaf, &mut cvs);
    let r = merge_subtree(size - left, leaf, &mut cvs);
    Ok(*merge_subtrees_root(&l, &r, Mode::Hash).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_hash_of_two_threads_is_blake3s() {
        let path = std::env::temp_dir().join(format!("zmtp-file-tree-hash-{}", std::process::id()));
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let data: Vec<u8> = (0..(3 << 20) + 7)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        for size in [1025, 2048, 4097, 70_000, (1 << 20) + 1, data.len()] {
            for leaf in [1024, 4096, 1 << 20, LEAF] {
                let mut last = 0;
                let digest = hash_tree(&file, size as u64, leaf, &mut |p| last = p.done).unwrap();
                assert_eq!(digest, wire::digest(&data[..size]), "{size} {leaf}");
                assert_eq!(last, size as u64, "progress ends at the size");
            }
        }
        // A file shorter than it said: an error, not a digest (nor a panic).
        assert!(hash_tree(&file, data.len() as u64 + 5000, 4096, &mut |_| {}).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
