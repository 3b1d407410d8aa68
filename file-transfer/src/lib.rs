//! File transfer over ZeroMQ: a DEALER sender offers a file, a ROUTER receiver fetches it
//! in ranges, keeping at most a window of them outstanding (credit-based flow control),
//! checks its BLAKE3 digest, and renames it into place. Either side may bind. Whole
//! directory trees go the same way, file after file on one connection ([`send_tree`]).
//!
//! The protocol itself (messages, both sides' rules, resume decisions) is in [`wire`] and
//! does no I/O. [`FileSender`] and [`FileReceiver`] add the file system (hashing, positional
//! reads and writes, the part file, the rename) but no socket: each turns a received
//! message into the messages to send. The loops around them are a few lines per driver:
//! [`send_file`] and [`recv_files`] take a [`Socket`] of any [`Runtime`]
//! (`zmtp_tokio::Socket`, `zmtp_smol::Socket`), and [`blocking`] takes a `zmtp_mio::Socket`;
//! the caller creates, secures and binds or connects it. File reads and writes are plain
//! positional calls made on the calling task (a local disk's page cache answers them at
//! once); the receiver hashes each chunk as it writes it.
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
#![deny(missing_docs)]

pub mod blocking;
mod cache;
mod receiver;
mod sender;
mod tree;
pub mod wire;

use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::task::Poll;
use std::time::{Duration, Instant};

use zmtp_async::{Bytes, Message, Runtime, Socket};

pub use crate::cache::{DigestCache, FileKey};
pub use crate::receiver::{FileReceiver, Handled, TREE_PATHS_MAX};
pub use crate::sender::{FileSender, SendStep, CACHED_MIN};
pub use crate::tree::{
    FileFailure, SkipReason, Skipped, TreeEvent, TreeProgress, TreeReport, TreeSender, TreeStep,
};

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
    /// [`recv_file`]: the transfer ended without a file (refused, aborted or cancelled).
    NotSaved(Failed),
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransferError::Socket(e) => write!(f, "socket error: {e}"),
            TransferError::Io { what, error } => write!(f, "cannot {what}: {error}"),
            TransferError::Refused(reason) => write!(f, "the receiver refused: {reason}"),
            TransferError::Protocol(reason) => write!(f, "protocol error: {reason}"),
            TransferError::BadName(reason) => write!(f, "bad file name: {reason}"),
            TransferError::NotSaved(failed) => {
                write!(f, "{:?} was not saved: {}", failed.name, failed.reason)
            }
        }
    }
}

impl std::error::Error for TransferError {}

impl From<zmtp_async::Error> for TransferError {
    fn from(e: zmtp_async::Error) -> TransferError {
        TransferError::Socket(e)
    }
}

pub(crate) fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> TransferError {
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
    /// Its BLAKE3 digest.
    pub digest: [u8; 32],
    /// Whether the digest came from the [`DigestCache`] (the file was not read to
    /// compute it).
    pub digest_cached: bool,
}

/// A sender's settings, for [`send_file_with`].
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// The name to offer the file under (default: its own file name, which must then be
    /// UTF-8).
    pub name: Option<String>,
    /// Where to look up the file's digest before hashing it, and to record it after
    /// (default: none, the file is hashed every time). See [`DigestCache`]: the receiver
    /// checks what it wrote either way.
    pub digest_cache: Option<DigestCache>,
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
    /// How long a sender may stay silent in the middle of a transfer (default
    /// [`DEFAULT_IDLE_TIMEOUT`]; `None`: for ever). Past it the transfer stops: the
    /// sender is sent `ERROR`, the transfer ends as failed, and its part is kept so that
    /// the same offer later resumes it.
    pub idle_timeout: Option<Duration>,
}

/// How long a receiver waits for a silent sender by default (60 s).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

impl RecvOptions {
    /// The defaults, saving into `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> RecvOptions {
        RecvOptions {
            dir: dir.into(),
            overwrite: false,
            max_size: u64::MAX,
            window: wire::DEFAULT_WINDOW,
            chunk: wire::DEFAULT_CHUNK,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }
}

/// A file received whole, its digest checked, under its final name. Its `Debug` shows
/// the peer's routing id in hex (`peer: 006b8b4567`).
#[derive(Clone, PartialEq, Eq)]
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
    /// The file was there already, complete, with the offered size and digest: nothing
    /// was fetched or written (a tree sent again after an interruption).
    pub unchanged: bool,
}

/// A transfer that ended without a file: refused, aborted, or cancelled by the sender.
/// Its `Debug` shows the peer's routing id in hex, as [`Saved`]'s does.
#[derive(Clone, PartialEq, Eq)]
pub struct Failed {
    /// The sender's routing id.
    pub peer: Bytes,
    /// The name offered.
    pub name: String,
    /// Why, in words.
    pub reason: String,
}

/// A routing id in `Debug`: lowercase hex, as `zmtp recv-file -v` prints it.
struct Hex<'a>(&'a [u8]);

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Saved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Saved")
            .field("peer", &Hex(&self.peer))
            .field("name", &self.name)
            .field("path", &self.path)
            .field("size", &self.size)
            .field("resumed_from", &self.resumed_from)
            .field("fetched", &self.fetched)
            .field("unchanged", &self.unchanged)
            .finish()
    }
}

impl fmt::Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failed")
            .field("peer", &Hex(&self.peer))
            .field("name", &self.name)
            .field("reason", &self.reason)
            .finish()
    }
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
    /// A sender announced a directory tree (`TREE`): this many files and bytes follow.
    Tree {
        /// The sender's routing id.
        peer: Bytes,
        /// Files announced.
        files: u64,
        /// Bytes they hold.
        bytes: u64,
    },
    /// A sender asked for a directory (`DIR`): created (or there already), or refused
    /// (not counted as a transfer).
    Dir {
        /// The sender's routing id.
        peer: Bytes,
        /// The path it asked for.
        name: String,
        /// Where it is (under the receiver's directory).
        path: PathBuf,
        /// `Ok` once it exists, or why it was refused.
        result: Result<(), String>,
    },
    /// A message from a peer without a transfer, or not the protocol's, answered with
    /// `ERROR` (not counted as a transfer).
    Stray {
        /// The peer's routing id.
        peer: Bytes,
        /// What was wrong.
        reason: String,
    },
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
    progress: impl FnMut(Progress),
) -> Result<SendReport, TransferError> {
    let options = SendOptions {
        name: name.map(str::to_owned),
        digest_cache: None,
    };
    send_file_with(socket, path, &options, progress).await
}

/// [`send_file`] with its settings: the name, and a [`DigestCache`] to take the digest
/// from (no [`Phase::Hashing`] progress then) or to record it in.
pub async fn send_file_with<R: Runtime>(
    socket: &Socket<R>,
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
    send(socket, sender.offer()).await?;
    loop {
        let msg = socket.recv().await?;
        match sender.handle(msg.frames(), &mut progress) {
            SendStep::Reply(frames) => send(socket, frames).await?,
            SendStep::Done(report) => return Ok(report),
            SendStep::Failed { reply, error } => {
                if let Some(frames) = reply {
                    // Best effort: the transfer is over either way.
                    let _ = send(socket, frames).await;
                }
                return Err(error);
            }
        }
    }
}

/// Send the directory tree at `root` on `socket` (a DEALER, bound or connected): every
/// regular file under it, each offered under its path below the tree's name
/// (`options.name`, by default the directory's own name: `photos/2024/a.jpg`), one
/// after the other on this connection; directories that hold no file are created with
/// `DIR`. Symbolic links and special files under `root` are skipped (reported to
/// `events`), never followed. Returns once every file has been answered: the report says
/// which were saved and which not (a refused file does not stop the others). A
/// receiver that kept files from an interrupted send of the same tree answers those at
/// once, and resumes a part: only what is missing is sent.
///
/// Fails early only when the tree cannot be read, the socket fails, or the receiver
/// breaks the protocol (then it is sent `CANCEL`).
pub async fn send_tree<R: Runtime>(
    socket: &Socket<R>,
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
                match (send(socket, frames).await, &end) {
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
        let msg = socket.recv().await?;
        step = tree.handle(msg.frames(), &mut events);
    }
}

async fn send<R: Runtime>(socket: &Socket<R>, frames: Vec<Bytes>) -> Result<(), TransferError> {
    // A ROUTER drops what is addressed to a peer that has gone: nothing to do about it.
    socket
        .send(Message::from(frames))
        .await
        .map(|_| ())
        .map_err(|e| TransferError::Socket(e.into()))
}

/// Receive files on `socket` (a ROUTER, bound or connected) into `options.dir`, from any
/// number of senders at once (told apart by routing id, one transfer each), until `count`
/// transfers have ended (saved, refused or aborted; `None`: for ever). Returns how each
/// ended, in order; `events` hears of every step. See [`FileReceiver`] for the rules.
///
/// Only a socket error ends the call early.
pub async fn recv_files<R: Runtime>(
    socket: &Socket<R>,
    options: &RecvOptions,
    count: Option<u64>,
    mut events: impl FnMut(&RecvEvent),
) -> Result<Vec<Outcome>, TransferError> {
    let mut receiver = FileReceiver::new(options.clone());
    let mut outcomes = Vec::new();
    while count.is_none_or(|c| (outcomes.len() as u64) < c) {
        let msg = match receiver.idle_deadline() {
            None => socket.recv().await?,
            Some(deadline) => match recv_until(socket, deadline).await? {
                Some(msg) => msg,
                None => {
                    while let Some(handled) = receiver.expire_idle(Instant::now(), &mut events) {
                        for reply in handled.replies {
                            send(socket, reply).await?;
                        }
                        outcomes.extend(handled.ended);
                    }
                    continue;
                }
            },
        };
        let handled = receiver.handle(msg.into_frames(), &mut events);
        for reply in handled.replies {
            send(socket, reply).await?;
        }
        outcomes.extend(handled.ended);
    }
    Ok(outcomes)
}

/// The next message, or `None` if `deadline` comes first (outside a runtime the socket
/// knows of, it waits for the message).
async fn recv_until<R: Runtime>(
    socket: &Socket<R>,
    deadline: Instant,
) -> Result<Option<Message>, TransferError> {
    let Some(runtime) = R::current() else {
        return Ok(Some(socket.recv().await?));
    };
    let mut recv = std::pin::pin!(socket.recv());
    let mut sleep = std::pin::pin!(runtime.sleep_until(deadline));
    std::future::poll_fn(|cx| {
        // A message that is there wins over a deadline that has passed.
        if let Poll::Ready(r) = recv.as_mut().poll(cx) {
            return Poll::Ready(r.map(Some).map_err(TransferError::from));
        }
        if sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(None));
        }
        Poll::Pending
    })
    .await
}
/// Receive one file: [`recv_files`] until the first transfer ends, its [`Saved`] file, or
/// [`TransferError::NotSaved`] if that transfer was refused or aborted.
pub async fn recv_file<R: Runtime>(
    socket: &Socket<R>,
    options: &RecvOptions,
    events: impl FnMut(&RecvEvent),
) -> Result<Saved, TransferError> {
    let outcome = recv_files(socket, options, Some(1), events).await?.pop();
    one_saved(outcome)
}

/// The saved file of the one transfer a receiver waited for.
pub(crate) fn one_saved(outcome: Option<Outcome>) -> Result<Saved, TransferError> {
    match outcome {
        Some(Outcome::Saved(saved)) => Ok(saved),
        Some(Outcome::Failed(failed)) => Err(TransferError::NotSaved(failed)),
        None => unreachable!("recv_files returns once a transfer has ended"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_show_the_peer_routing_id_in_hex() {
        let peer = Bytes::from_static(&[0x00, 0x6b, 0x8b, 0x45, 0x67]);
        let saved = Saved {
            peer: peer.clone(),
            name: "a.bin".into(),
            path: PathBuf::from("/in/a.bin"),
            size: 10,
            resumed_from: 4,
            fetched: 6,
            unchanged: false,
        };
        assert_eq!(
            format!("{saved:?}"),
            "Saved { peer: 006b8b4567, name: \"a.bin\", path: \"/in/a.bin\", size: 10, \
             resumed_from: 4, fetched: 6, unchanged: false }"
        );
        let failed = Failed {
            peer,
            name: "b.bin".into(),
            reason: "no room".into(),
        };
        assert_eq!(
            format!("{:?}", Outcome::Failed(failed)),
            "Failed(Failed { peer: 006b8b4567, name: \"b.bin\", reason: \"no room\" })"
        );
    }
}
