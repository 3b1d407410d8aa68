//! File transfer over ZeroMQ: a DEALER sender offers a file, a ROUTER receiver fetches it
//! in ranges, keeping at most a window of them outstanding (credit-based flow control),
//! checks its SHA-256, and renames it into place. Either side may bind.
//!
//! The protocol itself (messages, both sides' rules, resume decisions) is in [`wire`] and
//! does no I/O; this module is the glue to a socket and the file system. It works on any
//! of the async drivers: [`send_file`] and [`recv_files`] take a [`Socket`] of any
//! [`Runtime`] (`zmtp_tokio::Socket`, `zmtp_smol::Socket`), created, secured and bound or
//! connected by the caller. File reads and writes are plain positional calls made on the
//! calling task (a local disk's page cache answers them at once).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use zmtp_file::{recv_files, send_file, RecvOptions};
//! use zmtp_tokio::{Socket, SocketType};
//!
//! let dir = std::env::temp_dir().join(format!("zmtp-file-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("in"))?;
//! let source = dir.join("hello.txt");
//! std::fs::write(&source, b"hello, file")?;
//!
//! let receiver = Socket::new(SocketType::Router)?;
//! let endpoint = receiver.bind("tcp://127.0.0.1:*").await?;
//! let sender = Socket::new(SocketType::Dealer)?;
//! sender.connect(&endpoint)?;
//!
//! let options = RecvOptions::new(dir.join("in"));
//! let (sent, received) = tokio::join!(
//!     send_file(&sender, &source, None, |_| {}),
//!     recv_files(&receiver, &options, Some(1), |_| {}),
//! );
//! assert_eq!(sent?.size, 11);
//! let saved = received?.remove(0).saved().expect("saved");
//! assert_eq!(std::fs::read(&saved.path)?, b"hello, file");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod wire;

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zmtp_async::{Bytes, Message, Runtime, Socket};

use crate::wire::{Command, Incoming, Offer, OnDisk, Outgoing, PartInfo, Policy};

/// Why a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// The socket failed.
    Socket(zmtp_async::Error),
    /// A file could not be read or written.
    Io {
        /// What was being done, in words.
        what: String,
        /// The error.
        error: io::Error,
    },
    /// The receiver refused or aborted the transfer (`ERROR`), for this reason.
    Refused(String),
    /// The peer broke the protocol (the reason says how); the transfer was cancelled.
    Protocol(String),
    /// The name to offer the file under is not one a receiver takes.
    BadName(String),
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransferError::Socket(e) => write!(f, "socket error: {e}"),
            TransferError::Io { what, error } => write!(f, "cannot {what}: {error}"),
            TransferError::Refused(reason) => write!(f, "the receiver refused: {reason}"),
            TransferError::Protocol(reason) => write!(f, "protocol error: {reason}"),
            TransferError::BadName(reason) => write!(f, "bad file name: {reason}"),
        }
    }
}

impl std::error::Error for TransferError {}

impl From<zmtp_async::Error> for TransferError {
    fn from(e: zmtp_async::Error) -> TransferError {
        TransferError::Socket(e)
    }
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> TransferError {
    let what = what.into();
    move |error| TransferError::Io { what, error }
}

/// Where a sender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the file to compute its digest, before offering it.
    Hashing,
    /// Answering the receiver's FETCHes.
    Sending,
}

/// A sender's progress, as reported to its callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What it is doing.
    pub phase: Phase,
    /// Bytes hashed, or bytes of the file the receiver has (its resume point, then every
    /// chunk sent).
    pub done: u64,
    /// The file's size.
    pub total: u64,
}

/// What [`send_file`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    /// The name the file was offered under.
    pub name: String,
    /// Its size.
    pub size: u64,
    /// Bytes sent in CHUNKs (less than `size` when the receiver resumed a part).
    pub sent: u64,
    /// Its SHA-256.
    pub digest: [u8; 32],
}

/// The SHA-256 of `file`, read from the start in large blocks; `progress` after each.
fn hash_file(file: &File, total: u64, mut progress: impl FnMut(u64)) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    let mut reader = file;
    let mut done = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        progress(done.min(total));
    }
    Ok(hasher.finalize().into())
}

/// Hash the first `len` bytes of `file` into `hasher` (a resumed part's content).
fn hash_prefix(file: &File, len: u64, hasher: &mut Sha256) -> io::Result<()> {
    let mut buf = vec![0; 1 << 20];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        hasher.update(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// Offer the file at `path` on `socket` (a DEALER, bound or connected) under `name` (by
/// default the file's own name), answer the receiver's FETCHes, and return once it says
/// `DONE`. `progress` hears of the hashing and of every chunk sent.
///
/// The digest is computed first (the whole file is read once); each FETCH is answered
/// with one positional read, so the sender holds no more than the receiver's window.
/// `ERROR` from the receiver ends it with [`TransferError::Refused`]; a FETCH outside the
/// file, or a message that is not the protocol's, is answered with `CANCEL` and ends it
/// with [`TransferError::Protocol`]. It waits as long as it takes: wrap it in a timeout
/// to give up.
pub async fn send_file<R: Runtime>(
    socket: &Socket<R>,
    path: &Path,
    name: Option<&str>,
    mut progress: impl FnMut(Progress),
) -> Result<SendReport, TransferError> {
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
    let shown = path.display();
    let file = File::open(path).map_err(io_error(format!("open {shown}")))?;
    let size = file
        .metadata()
        .map_err(io_error(format!("read the size of {shown}")))?
        .len();
    let digest = hash_file(&file, size, |done| {
        progress(Progress {
            phase: Phase::Hashing,
            done,
            total: size,
        })
    })
    .map_err(io_error(format!("read {shown}")))?;
    let offer = Command::Offer(Offer {
        name: name.clone(),
        size,
        digest,
    });
    send(socket, offer.encode()).await?;
    let mut state = Outgoing::new(size);
    let mut first_fetch = true;
    loop {
        let msg = socket.recv().await?;
        let command = Command::decode(msg.frames());
        let violation = match command {
            Ok(Command::Fetch { offset, length }) => match state.on_fetch(offset, length) {
                Ok(()) => {
                    if first_fetch {
                        first_fetch = false;
                        progress(Progress {
                            phase: Phase::Sending,
                            done: offset,
                            total: size,
                        });
                    }
                    let mut data = vec![0; length as usize];
                    if let Err(e) = file.read_exact_at(&mut data, offset) {
                        let reason = format!("cannot read {shown} at {offset}: {e}");
                        cancel(socket, &reason).await;
                        return Err(io_error(format!("read {shown} at {offset}"))(e));
                    }
                    let chunk = Command::Chunk {
                        offset,
                        data: Bytes::from(data),
                    };
                    send(socket, chunk.encode()).await?;
                    progress(Progress {
                        phase: Phase::Sending,
                        done: offset + u64::from(length),
                        total: size,
                    });
                    continue;
                }
                Err(v) => v.0,
            },
            Ok(Command::Done) => {
                return Ok(SendReport {
                    name,
                    size,
                    sent: state.sent(),
                    digest,
                })
            }
            Ok(Command::Error(reason)) => return Err(TransferError::Refused(reason)),
            Ok(other) => format!("unexpected {} from the receiver", command_name(&other)),
            Err(e) => e.to_string(),
        };
        cancel(socket, &violation).await;
        return Err(TransferError::Protocol(violation));
    }
}

/// The command word of `c`.
fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Offer(_) => "OFFER",
        Command::Fetch { .. } => "FETCH",
        Command::Chunk { .. } => "CHUNK",
        Command::Done => "DONE",
        Command::Error(_) => "ERROR",
        Command::Cancel(_) => "CANCEL",
    }
}

async fn send<R: Runtime>(socket: &Socket<R>, frames: Vec<Bytes>) -> Result<(), TransferError> {
    socket
        .send(Message::from(frames))
        .await
        .map(|_| ())
        .map_err(|e| TransferError::Socket(e.into()))
}

/// Tell the receiver we give up (best effort: the transfer is over either way).
async fn cancel<R: Runtime>(socket: &Socket<R>, reason: &str) {
    let _ = send(socket, Command::Cancel(reason.to_owned()).encode()).await;
}

/// A receiver's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvOptions {
    /// The directory files are saved in (nothing is written anywhere else).
    pub dir: PathBuf,
    /// Replace a complete file of the same name (default: refuse the offer).
    pub overwrite: bool,
    /// The largest file accepted (default: no limit).
    pub max_size: u64,
    /// Ranges kept outstanding per transfer (default [`wire::DEFAULT_WINDOW`]).
    pub window: u32,
    /// Bytes per range (default [`wire::DEFAULT_CHUNK`], at most [`wire::FETCH_MAX`]).
    pub chunk: u32,
}

impl RecvOptions {
    /// The defaults, saving into `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> RecvOptions {
        RecvOptions {
            dir: dir.into(),
            overwrite: false,
            max_size: u64::MAX,
            window: wire::DEFAULT_WINDOW,
            chunk: wire::DEFAULT_CHUNK,
        }
    }
}

/// A file received whole, its digest checked, under its final name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The sender's routing id.
    pub peer: Bytes,
    /// The name it was offered under.
    pub name: String,
    /// Where it is now.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// Where this transfer started: the length of the part resumed (0 for a new one).
    pub resumed_from: u64,
    /// Bytes that arrived in CHUNKs during this transfer.
    pub fetched: u64,
}

/// A transfer that ended without a file: refused, aborted, or cancelled by the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// The sender's routing id.
    pub peer: Bytes,
    /// The name offered.
    pub name: String,
    /// Why, in words.
    pub reason: String,
}

/// How one offered transfer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The file is saved.
    Saved(Saved),
    /// It is not.
    Failed(Failed),
}

impl Outcome {
    /// The saved file, if it was.
    pub fn saved(self) -> Option<Saved> {
        match self {
            Outcome::Saved(s) => Some(s),
            Outcome::Failed(_) => None,
        }
    }
}

/// What [`recv_files`] reports as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecvEvent {
    /// An offer was accepted: fetching starts at `from` (a resumed part's length, or 0).
    Started {
        /// The sender's routing id.
        peer: Bytes,
        /// The file's name.
        name: String,
        /// Its size.
        size: u64,
        /// Where fetching starts.
        from: u64,
    },
    /// A chunk arrived: `have` bytes of the file are there.
    Progress {
        /// The sender's routing id.
        peer: Bytes,
        /// Bytes there.
        have: u64,
        /// The file's size.
        size: u64,
    },
    /// A transfer ended (also returned by [`recv_files`]).
    Ended(Outcome),
    /// A message from a peer without a transfer, or not the protocol's, answered with
    /// `ERROR` (not counted as a transfer).
    Stray {
        /// The peer's routing id.
        peer: Bytes,
        /// What was wrong.
        reason: String,
    },
}

/// The SHA-256 of a file as it arrives, computed on a thread of its own so that hashing
/// overlaps receiving. It is fed the chunks (shared, not copied) in file order, through a
/// channel of a window's capacity.
struct HashWorker {
    chunks: Option<std::sync::mpsc::SyncSender<Bytes>>,
    done: std::thread::JoinHandle<io::Result<[u8; 32]>>,
}

impl HashWorker {
    /// A worker that first hashes the `prefix` bytes `file` holds (a resumed part), then
    /// each chunk it is given.
    fn start(file: File, prefix: u64, capacity: usize) -> io::Result<HashWorker> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Bytes>(capacity.max(1));
        let done = std::thread::Builder::new()
            .name("zmtp-file-sha256".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                hash_prefix(&file, prefix, &mut hasher)?;
                drop(file);
                for chunk in rx {
                    hasher.update(&chunk);
                }
                Ok(hasher.finalize().into())
            })?;
        Ok(HashWorker {
            chunks: Some(tx),
            done,
        })
    }

    /// Hash `chunk` next (waits while the worker is a window behind).
    fn feed(&self, chunk: Bytes) {
        if let Some(tx) = &self.chunks {
            // The worker only stops early on a read error, which `finish` reports.
            let _ = tx.send(chunk);
        }
    }

    /// The digest of everything fed.
    fn finish(mut self) -> io::Result<[u8; 32]> {
        self.chunks = None;
        self.done
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the hashing thread panicked")))
    }
}

/// One transfer in progress.
struct Active {
    name: String,
    digest: [u8; 32],
    state: Incoming,
    file: File,
    hasher: HashWorker,
    part: PathBuf,
    record: PathBuf,
    target: PathBuf,
}

fn part_paths(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    (
        dir.join(name),
        dir.join(format!("{name}.part")),
        dir.join(format!("{name}.part.offer")),
    )
}

/// Remove a part and its record (best effort: they may not exist).
fn discard(part: &Path, record: &Path) {
    let _ = fs::remove_file(part);
    let _ = fs::remove_file(record);
}

/// Receive files on `socket` (a ROUTER, bound or connected) into `options.dir`, from any
/// number of senders at once (told apart by routing id, one transfer each), until `count`
/// transfers have ended (saved, refused or aborted; `None`: for ever). Returns how each
/// ended, in order; `events` hears of every step.
///
/// Each offer is judged by [`wire::judge_offer`] before anything is created, and refused
/// with `ERROR` when it breaks a rule. An accepted file is written at each CHUNK's offset
/// into `NAME.part` (next to `NAME.part.offer`, the offer it is for, which lets a later
/// identical offer resume it), hashed as it arrives, and renamed to `NAME` once whole and
/// its digest matches; then the sender gets `DONE`. A CHUNK that was not asked for, a
/// digest mismatch or a write error aborts the transfer with `ERROR` and removes the
/// part; a sender's `CANCEL` keeps it, to be resumed.
///
/// Only a socket error ends the call early.
pub async fn recv_files<R: Runtime>(
    socket: &Socket<R>,
    options: &RecvOptions,
    count: Option<u64>,
    mut events: impl FnMut(&RecvEvent),
) -> Result<Vec<Outcome>, TransferError> {
    let mut active: HashMap<Bytes, Active> = HashMap::new();
    let mut outcomes = Vec::new();
    let policy = Policy {
        max_size: options.max_size,
        overwrite: options.overwrite,
    };
    while count.is_none_or(|c| (outcomes.len() as u64) < c) {
        let mut frames = socket.recv().await?.into_frames();
        if frames.is_empty() {
            continue;
        }
        let peer = frames.remove(0);
        let reply = |frames: Vec<Bytes>| {
            let mut all = Vec::with_capacity(frames.len() + 1);
            all.push(peer.clone());
            all.extend(frames);
            all
        };
        let mut ended = |outcome: Outcome, events: &mut dyn FnMut(&RecvEvent)| {
            let event = RecvEvent::Ended(outcome);
            events(&event);
            if let RecvEvent::Ended(o) = event {
                outcomes.push(o);
            }
        };
        match Command::decode(&frames) {
            Ok(Command::Offer(offer)) => {
                // A new offer replaces what this peer was doing (its part is kept).
                active.remove(&peer);
                match start(&offer, policy, options, &mut active) {
                    Ok(mut t) => {
                        events(&RecvEvent::Started {
                            peer: peer.clone(),
                            name: t.name.clone(),
                            size: offer.size,
                            from: t.state.have(),
                        });
                        if t.state.is_complete() {
                            let outcome = finish(t, &peer);
                            answer(socket, reply(outcome_reply(&outcome))).await?;
                            ended(outcome, &mut events);
                        } else {
                            for f in t.state.fetches() {
                                answer(socket, reply(f.encode())).await?;
                            }
                            active.insert(peer.clone(), t);
                        }
                    }
                    Err(reason) => {
                        answer(socket, reply(Command::Error(reason.clone()).encode())).await?;
                        ended(
                            Outcome::Failed(Failed {
                                peer: peer.clone(),
                                name: offer.name,
                                reason,
                            }),
                            &mut events,
                        );
                    }
                }
            }
            Ok(Command::Chunk { offset, data }) => {
                let Some(t) = active.get_mut(&peer) else {
                    let reason = "a CHUNK without a transfer in progress".to_string();
                    answer(socket, reply(Command::Error(reason.clone()).encode())).await?;
                    events(&RecvEvent::Stray { peer, reason });
                    continue;
                };
                let step = t
                    .state
                    .on_chunk(offset, data.len())
                    .map_err(|v| v.0)
                    .and_then(|()| {
                        t.file
                            .write_all_at(&data, offset)
                            .map_err(|e| format!("cannot write {}: {e}", t.part.display()))
                    });
                match step {
                    Ok(()) => {
                        t.hasher.feed(data);
                        events(&RecvEvent::Progress {
                            peer: peer.clone(),
                            have: t.state.have(),
                            size: t.state.size(),
                        });
                        if t.state.is_complete() {
                            let t = active.remove(&peer).expect("present");
                            let outcome = finish(t, &peer);
                            answer(socket, reply(outcome_reply(&outcome))).await?;
                            ended(outcome, &mut events);
                        } else {
                            for f in t.state.fetches() {
                                answer(socket, reply(f.encode())).await?;
                            }
                        }
                    }
                    Err(reason) => {
                        let t = active.remove(&peer).expect("present");
                        discard(&t.part, &t.record);
                        answer(socket, reply(Command::Error(reason.clone()).encode())).await?;
                        ended(
                            Outcome::Failed(Failed {
                                peer: peer.clone(),
                                name: t.name,
                                reason,
                            }),
                            &mut events,
                        );
                    }
                }
            }
            Ok(Command::Cancel(why)) => {
                // Never answered: a CANCEL ends the exchange.
                if let Some(t) = active.remove(&peer) {
                    ended(
                        Outcome::Failed(Failed {
                            peer: peer.clone(),
                            name: t.name,
                            reason: format!("the sender cancelled: {why}"),
                        }),
                        &mut events,
                    );
                }
            }
            Ok(other) => {
                let reason = format!("unexpected {} from a sender", command_name(&other));
                stray(socket, &mut active, peer, reason, &mut events, &mut ended).await?;
            }
            Err(e) => {
                let reason = e.to_string();
                stray(socket, &mut active, peer, reason, &mut events, &mut ended).await?;
            }
        }
    }
    Ok(outcomes)
}

/// A message that is not a sender's: `ERROR`, and the end of the peer's transfer if any.
async fn stray<R: Runtime>(
    socket: &Socket<R>,
    active: &mut HashMap<Bytes, Active>,
    peer: Bytes,
    reason: String,
    events: &mut impl FnMut(&RecvEvent),
    ended: &mut impl FnMut(Outcome, &mut dyn FnMut(&RecvEvent)),
) -> Result<(), TransferError> {
    let mut frames = vec![peer.clone()];
    frames.extend(Command::Error(reason.clone()).encode());
    answer(socket, frames).await?;
    match active.remove(&peer) {
        Some(t) => {
            discard(&t.part, &t.record);
            ended(
                Outcome::Failed(Failed {
                    peer,
                    name: t.name,
                    reason,
                }),
                events,
            );
        }
        None => events(&RecvEvent::Stray { peer, reason }),
    }
    Ok(())
}

async fn answer<R: Runtime>(socket: &Socket<R>, frames: Vec<Bytes>) -> Result<(), TransferError> {
    // A ROUTER drops what is addressed to a peer that has gone: nothing to do about it.
    send(socket, frames).await
}

fn outcome_reply(outcome: &Outcome) -> Vec<Bytes> {
    match outcome {
        Outcome::Saved(_) => Command::Done.encode(),
        Outcome::Failed(f) => Command::Error(f.reason.clone()).encode(),
    }
}

/// Judge an offer against the directory and open its part: the new transfer, or why not.
fn start(
    offer: &Offer,
    policy: Policy,
    options: &RecvOptions,
    active: &mut HashMap<Bytes, Active>,
) -> Result<Active, String> {
    // The name is checked before it is used in any path.
    wire::check_name(&offer.name)?;
    let (target, part, record) = part_paths(&options.dir, &offer.name);
    if let Some((other, t)) = active.iter().find(|(_, t)| t.name == offer.name) {
        if t.digest != offer.digest || t.state.size() != offer.size {
            return Err(format!(
                "{:?} is being received from another sender",
                offer.name
            ));
        }
        // The same file offered again by a new peer: its sender restarted. Take over.
        let other = other.clone();
        active.remove(&other);
    }
    let recorded = fs::read(&record)
        .ok()
        .and_then(|r| wire::decode_part_record(&r));
    let part_len = fs::metadata(&part).ok().map(|m| m.len());
    let disk = OnDisk {
        complete_exists: fs::symlink_metadata(&target).is_ok(),
        part: match (recorded, part_len) {
            (Some((size, digest)), Some(len)) => Some(PartInfo { size, digest, len }),
            _ => None,
        },
    };
    let from = wire::judge_offer(offer, policy, disk)?;
    let shown = part.display();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(from == 0)
        .open(&part)
        .map_err(|e| format!("cannot create {shown}: {e}"))?;
    if from == 0 {
        fs::write(&record, wire::encode_part_record(offer.size, &offer.digest)).map_err(|e| {
            discard(&part, &record);
            format!("cannot write {}: {e}", record.display())
        })?;
    }
    // What a resumed part holds counts toward the digest: the worker reads it first.
    let hasher = file
        .try_clone()
        .and_then(|f| HashWorker::start(f, from, options.window as usize))
        .map_err(|e| format!("cannot hash {shown}: {e}"))?;
    Ok(Active {
        name: offer.name.clone(),
        digest: offer.digest,
        state: Incoming::new(offer.size, from, options.window, options.chunk),
        file,
        hasher,
        part,
        record,
        target,
    })
}

/// A complete transfer: check the digest, rename into place.
fn finish(t: Active, peer: &Bytes) -> Outcome {
    let failed = |reason: String| {
        discard(&t.part, &t.record);
        Outcome::Failed(Failed {
            peer: peer.clone(),
            name: t.name.clone(),
            reason,
        })
    };
    let digest = match t.hasher.finish() {
        Ok(d) => d,
        Err(e) => {
            let reason = format!("cannot read {}: {e}", t.part.display());
            discard(&t.part, &t.record);
            return Outcome::Failed(Failed {
                peer: peer.clone(),
                name: t.name,
                reason,
            });
        }
    };
    if digest != t.digest {
        return failed(format!(
            "{:?}: the SHA-256 of what arrived does not match the offer",
            t.name
        ));
    }
    if let Err(e) = fs::rename(&t.part, &t.target) {
        return failed(format!(
            "cannot rename {} to {}: {e}",
            t.part.display(),
            t.target.display()
        ));
    }
    let _ = fs::remove_file(&t.record);
    Outcome::Saved(Saved {
        peer: peer.clone(),
        name: t.name.clone(),
        path: t.target.clone(),
        size: t.state.size(),
        resumed_from: t.state.size() - t.state.fetched(),
        fetched: t.state.fetched(),
    })
}
