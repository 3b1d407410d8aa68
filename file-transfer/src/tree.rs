//! Whole directory trees: the sender's walk of a tree and its side of the exchange, without
//! a socket.
//!
//! A tree goes as a `TREE` (how many files and bytes follow), a `DIR` for each directory
//! that holds no file to send (others are created with their files), then a message per
//! regular file under its relative path (`root/a/b.txt`), all on one connection. A file of
//! at most [`wire::PUT_MAX`] bytes goes whole in a `PUT`, without waiting for the answers
//! to those before it (at most [`PUT_WINDOW`] bytes of them unanswered): small files cost
//! no round trip each. A larger one is offered (`OFFER`) and fetched as a single file is,
//! the next message leaving as soon as the receiver has been sent every byte it asked for,
//! before its `DONE`: the receiver handles messages in order, so the answer for the file
//! before always comes first.

use std::collections::VecDeque;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use zmtp_async::Bytes;

use crate::sender::{FileSender, SendStep};
use crate::wire::{self, Command};
use crate::{Phase, SendOptions, SendReport, TransferError};

/// Why an entry of the source tree was left out (not an error: the tree's other files go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A symbolic link: never followed, never sent.
    Symlink,
    /// Not a regular file, directory or link: a device, a socket, a FIFO.
    Special,
}

/// An entry of the source tree that was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Where it is.
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            SkipReason::Symlink => "a symbolic link",
            SkipReason::Special => "not a regular file or directory",
        };
        write!(f, "skipped {}: {why}", self.path.display())
    }
}

/// A file of the tree that was not saved.
#[derive(Debug)]
pub struct FileFailure {
    /// Its path in the tree (its name on the receiver's side), or on this side when it
    /// has none that can be offered.
    pub name: String,
    /// Why.
    pub error: TransferError,
}

/// What [`send_tree`](crate::send_tree) did.
#[derive(Debug, Default)]
pub struct TreeReport {
    /// The files the receiver has (its `DONE`), in the order sent.
    pub saved: Vec<SendReport>,
    /// The files it does not have, and why: refused by the receiver, unreadable here, or
    /// with a name that cannot be offered (not UTF-8, too long).
    pub failed: Vec<FileFailure>,
    /// Directories created on the receiver's side with `DIR` (those holding no file).
    pub dirs: u64,
    /// Directories the receiver refused (`DIR` answered with `ERROR`), and why.
    pub dirs_failed: Vec<(String, String)>,
    /// Links and special files left out.
    pub skipped: Vec<Skipped>,
}

impl TreeReport {
    /// Whether every regular file and directory of the tree is on the receiver's side.
    pub fn all_saved(&self) -> bool {
        self.failed.is_empty() && self.dirs_failed.is_empty()
    }
}

/// How far a tree is, in files and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeProgress {
    /// Files ended (saved or not).
    pub files_done: u64,
    /// Files in the tree.
    pub files: u64,
    /// Bytes of the files ended, and of the current file up to the last chunk sent.
    pub bytes_done: u64,
    /// Bytes in the tree.
    pub bytes: u64,
}

/// What [`send_tree`](crate::send_tree) reports as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEvent {
    /// An entry is left out.
    Skipped(Skipped),
    /// A file is being hashed before its offer: `done` of its `total` bytes.
    Hashing {
        /// Its path in the tree.
        name: String,
        /// Bytes hashed.
        done: u64,
        /// Its size.
        total: u64,
    },
    /// The tree's progress (after every chunk, and every file ended).
    Progress(TreeProgress),
    /// The receiver has this file.
    Saved(SendReport),
    /// This file was not saved, for this reason.
    Failed {
        /// Its path in the tree.
        name: String,
        /// Why, in words.
        reason: String,
    },
    /// A directory holding no file: created on the receiver's side, or refused.
    Dir {
        /// Its path in the tree.
        name: String,
        /// `Ok`, or the receiver's reason.
        result: Result<(), String>,
    },
}

/// One regular file found in the tree.
#[derive(Debug, Clone)]
struct FileEntry {
    rel: String,
    path: PathBuf,
    size: u64,
}

/// What a walk of the tree found.
#[derive(Debug, Default)]
struct Walk {
    files: Vec<FileEntry>,
    dirs: Vec<String>,
    skipped: Vec<Skipped>,
    /// Regular files that cannot be offered, and why.
    unsendable: Vec<FileFailure>,
}

/// Walk the tree at `root`, to be named `name` on the receiver's side, never following a
/// link below `root`. Entries are taken in byte order of their names, so a walk of the
/// same tree sends in the same order.
fn walk(root: &Path, name: &str) -> Result<Walk, TransferError> {
    let mut found = Walk::default();
    walk_dir(root, name, &mut found)?;
    Ok(found)
}

/// Walk one directory. One that holds neither a file to send nor a directory is sent with
/// `DIR` (the others are created on the receiver's side with what they hold).
fn walk_dir(dir: &Path, rel: &str, found: &mut Walk) -> Result<(), TransferError> {
    let shown = dir.display();
    let mut entries = fs::read_dir(dir)
        .and_then(|r| r.collect::<Result<Vec<_>, _>>())
        .map_err(crate::io_error(format!("read the directory {shown}")))?;
    entries.sort_by_key(|e| e.file_name());
    let mut holds = false;
    for entry in entries {
        let path = entry.path();
        // The entry's own type: a link is a link, never what it points at.
        let kind = entry.file_type().map_err(crate::io_error(format!(
            "read the type of {}",
            path.display()
        )))?;
        if kind.is_symlink() {
            found.skipped.push(Skipped {
                path,
                reason: SkipReason::Symlink,
            });
            continue;
        }
        if !kind.is_dir() && !kind.is_file() {
            found.skipped.push(Skipped {
                path,
                reason: SkipReason::Special,
            });
            continue;
        }
        let Some(component) = entry.file_name().to_str().map(str::to_owned) else {
            found.unsendable.push(FileFailure {
                name: path.display().to_string(),
                error: TransferError::BadName(format!(
                    "{} has a name that is not UTF-8",
                    path.display()
                )),
            });
            continue;
        };
        let child = format!("{rel}/{component}");
        if let Err(reason) = wire::check_path(&child) {
            found.unsendable.push(FileFailure {
                name: child,
                error: TransferError::BadName(reason),
            });
            continue;
        }
        if kind.is_dir() {
            walk_dir(&path, &child, found)?;
            holds = true;
        } else {
            let size = entry
                .metadata()
                .map_err(crate::io_error(format!(
                    "read the size of {}",
                    path.display()
                )))?
                .len();
            found.files.push(FileEntry {
                rel: child,
                path,
                size,
            });
            holds = true;
        }
    }
    if !holds {
        found.dirs.push(rel.to_owned());
    }
    Ok(())
}

/// How many files (or directories) may have been sent in full and wait for their answer.
const MAX_PENDING: usize = 64;

/// How many bytes of `PUT`s may wait for their answer (the default window's worth): what
/// the sender holds, and the sockets between the two, for the files sent ahead.
const PUT_WINDOW: u64 = 2 << 20;

/// Sent in full, waiting for the receiver's `DONE` or `ERROR`.
#[derive(Debug)]
enum Pending {
    Dir(String),
    File(Box<FileSender>),
    /// A small file sent whole with its offer: the report to give on `DONE`.
    Put(SendReport),
}

/// What to do after [`TreeSender::start`] or [`TreeSender::handle`].
#[derive(Debug)]
pub struct TreeStep {
    /// Messages to send now, in order.
    pub send: Vec<Vec<Bytes>>,
    /// The tree is over (once `send` is sent): its report, or why it stopped early (the
    /// receiver broke the protocol, or the tree could not be read).
    pub end: Option<Result<TreeReport, TransferError>>,
}

/// The sender's side of a tree. Feed it what the receiver sends
/// ([`handle`](Self::handle)) and send what it answers; the socket is the caller's (a
/// DEALER).
#[derive(Debug)]
pub struct TreeSender {
    files: VecDeque<FileEntry>,
    dirs: VecDeque<String>,
    options: SendOptions,
    current: Option<Box<FileSender>>,
    pending: VecDeque<Pending>,
    report: TreeReport,
    progress: TreeProgress,
    /// Bytes of the files ended.
    ended_bytes: u64,
    /// Bytes of `PUT`s not answered yet.
    put_bytes: u64,
}

impl TreeSender {
    /// Walk the directory at `root` (a link there is followed: it is the caller's choice;
    /// none below it is), to be sent under `options.name` (default: the directory's own
    /// name). Reading the tree's structure fails it; a file that cannot be read later
    /// only fails that file.
    pub fn new(root: &Path, options: &SendOptions) -> Result<TreeSender, TransferError> {
        let name = match &options.name {
            Some(n) => n.clone(),
            None => {
                let canonical = fs::canonicalize(root)
                    .map_err(crate::io_error(format!("open {}", root.display())))?;
                canonical
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or_else(|| {
                        TransferError::BadName(format!(
                            "{} has no UTF-8 name to send it under: give one",
                            root.display()
                        ))
                    })?
                    .to_owned()
            }
        };
        wire::check_path(&name).map_err(TransferError::BadName)?;
        let found = walk(root, &name)?;
        if let Some(cache) = &options.digest_cache {
            // Written once a second while the tree goes, and at the end (on drop).
            let _ = cache.defer_writes(true);
        }
        let progress = TreeProgress {
            files_done: 0,
            files: (found.files.len() + found.unsendable.len()) as u64,
            bytes_done: 0,
            bytes: found.files.iter().map(|f| f.size).sum(),
        };
        Ok(TreeSender {
            files: found.files.into(),
            dirs: found.dirs.into(),
            options: options.clone(),
            current: None,
            pending: VecDeque::new(),
            report: TreeReport {
                failed: found.unsendable,
                skipped: found.skipped,
                ..TreeReport::default()
            },
            progress,
            ended_bytes: 0,
            put_bytes: 0,
        })
    }

    /// Files to send (regular files found, including those that cannot be offered).
    pub fn files(&self) -> u64 {
        self.progress.files
    }

    /// Their bytes.
    pub fn bytes(&self) -> u64 {
        self.progress.bytes
    }

    /// The first message, `TREE`. `events` hears of the entries left out (and the files
    /// that cannot be offered). Send it, then call [`offers`](Self::offers).
    pub fn start(&mut self, events: &mut impl FnMut(&TreeEvent)) -> TreeStep {
        for s in &self.report.skipped {
            events(&TreeEvent::Skipped(s.clone()));
        }
        for f in &self.report.failed {
            self.progress.files_done += 1;
            events(&TreeEvent::Failed {
                name: f.name.clone(),
                reason: f.error.to_string(),
            });
        }
        let send = vec![Command::Tree {
            files: self.progress.files,
            bytes: self.progress.bytes,
        }
        .encode()];
        TreeStep { send, end: None }
    }

    /// What to offer next, while no file is being fetched: `DIR`s, then the next files'
    /// `OFFER`s (each file is opened and hashed here, which is why this is apart from
    /// [`handle`](Self::handle): the caller sends what `handle` returned first, so that
    /// the receiver works on the last chunk while this file is hashed). Call it after
    /// sending what [`start`](Self::start) or [`handle`](Self::handle) returned; its
    /// `end` says when the tree is over.
    pub fn offers(&mut self, events: &mut impl FnMut(&TreeEvent)) -> TreeStep {
        let mut send = Vec::new();
        self.advance(&mut send, events);
        self.step(send)
    }

    /// Handle one message from the receiver (`frames`, as a DEALER receives them); then
    /// send what it returns, and call [`offers`](Self::offers).
    pub fn handle(&mut self, frames: &[Bytes], events: &mut impl FnMut(&TreeEvent)) -> TreeStep {
        let mut send = Vec::new();
        let word = frames.first().map(|w| &w[..]);
        match word {
            Some(b"DONE" | b"ERROR") => {
                if let Some(p) = self.pending.pop_front() {
                    self.settle(p, frames, events);
                } else if let Some(c) = self.current.take() {
                    self.settle(Pending::File(c), frames, events);
                } else {
                    return self.violation("an answer to no offer".into());
                }
            }
            Some(b"FETCH") => {
                let Some(current) = self.current.as_mut() else {
                    return self.violation("a FETCH for no file being offered".into());
                };
                let base = self.ended_bytes;
                let mut last = None;
                let step = current.handle(frames, &mut |p| {
                    if p.phase == Phase::Sending {
                        last = Some(p.done);
                    }
                });
                match step {
                    SendStep::Reply(chunk) => {
                        send.push(chunk);
                        if let Some(done) = last {
                            self.progress.bytes_done = base + done;
                            events(&TreeEvent::Progress(self.progress));
                        }
                        if current.all_sent() {
                            if let Some(mut c) = self.current.take() {
                                c.release_buffers();
                                self.pending.push_back(Pending::File(c));
                            }
                        }
                    }
                    SendStep::Failed {
                        reply,
                        error: error @ TransferError::Io { .. },
                    } => {
                        // This file cannot be read: the receiver is told, the tree goes on.
                        send.extend(reply);
                        if let Some(c) = self.current.take() {
                            self.file_ended(c.name().to_owned(), c.size(), Err(error), events);
                        }
                    }
                    SendStep::Failed { reply, error } => {
                        send.extend(reply);
                        return TreeStep {
                            send,
                            end: Some(Err(error)),
                        };
                    }
                    SendStep::Done(_) => unreachable!("a FETCH is never a DONE"),
                }
            }
            _ => {
                let reason = match Command::decode(frames) {
                    Ok(c) => format!(
                        "unexpected {} from the receiver",
                        crate::sender::command_name(&c)
                    ),
                    Err(e) => e.to_string(),
                };
                return self.violation(reason);
            }
        }
        TreeStep { send, end: None }
    }

    /// The receiver broke the protocol: `CANCEL`, and the tree ends.
    fn violation(&mut self, reason: String) -> TreeStep {
        TreeStep {
            send: vec![Command::Cancel(reason.clone()).encode()],
            end: Some(Err(TransferError::Protocol(reason))),
        }
    }

    /// `send`, and the report if nothing is left.
    fn step(&mut self, send: Vec<Vec<Bytes>>) -> TreeStep {
        let over = self.current.is_none()
            && self.pending.is_empty()
            && self.files.is_empty()
            && self.dirs.is_empty();
        TreeStep {
            send,
            end: over.then(|| Ok(std::mem::take(&mut self.report))),
        }
    }

    /// The receiver's answer (`DONE` or `ERROR`) for `p`.
    fn settle(&mut self, p: Pending, frames: &[Bytes], events: &mut impl FnMut(&TreeEvent)) {
        match p {
            Pending::Dir(name) => {
                let result = match Command::decode(frames) {
                    Ok(Command::Done) => Ok(()),
                    Ok(Command::Error(reason)) => Err(reason),
                    Ok(_) => unreachable!("only DONE and ERROR are settled"),
                    Err(e) => Err(e.to_string()),
                };
                match &result {
                    Ok(()) => self.report.dirs += 1,
                    Err(reason) => self.report.dirs_failed.push((name.clone(), reason.clone())),
                }
                events(&TreeEvent::Dir { name, result });
            }
            Pending::Put(report) => {
                self.put_bytes -= report.size;
                let result = match Command::decode(frames) {
                    Ok(Command::Done) => Ok(report.clone()),
                    Ok(Command::Error(reason)) => Err(TransferError::Refused(reason)),
                    Ok(_) => unreachable!("only DONE and ERROR are settled"),
                    Err(e) => Err(TransferError::Protocol(e.to_string())),
                };
                self.file_ended(report.name, report.size, result, events);
            }
            Pending::File(mut f) => {
                let result = match f.handle(frames, &mut |_| {}) {
                    SendStep::Done(report) => Ok(report),
                    SendStep::Failed { error, .. } => Err(error),
                    SendStep::Reply(_) => unreachable!("DONE and ERROR are never answered"),
                };
                self.file_ended(f.name().to_owned(), f.size(), result, events);
            }
        }
    }

    fn file_ended(
        &mut self,
        name: String,
        size: u64,
        result: Result<SendReport, TransferError>,
        events: &mut impl FnMut(&TreeEvent),
    ) {
        self.ended_bytes += size;
        self.progress.files_done += 1;
        self.progress.bytes_done = self.ended_bytes;
        match result {
            Ok(report) => {
                events(&TreeEvent::Saved(report.clone()));
                self.report.saved.push(report);
            }
            Err(error) => {
                events(&TreeEvent::Failed {
                    name: name.clone(),
                    reason: error.to_string(),
                });
                self.report.failed.push(FileFailure { name, error });
            }
        }
        events(&TreeEvent::Progress(self.progress));
    }

    /// Offer what comes next while no file is being fetched.
    fn advance(&mut self, send: &mut Vec<Vec<Bytes>>, events: &mut impl FnMut(&TreeEvent)) {
        while self.current.is_none()
            && self.pending.len() < MAX_PENDING
            && self.put_bytes < PUT_WINDOW
        {
            if let Some(dir) = self.dirs.pop_front() {
                send.push(Command::Dir(dir.clone()).encode());
                self.pending.push_back(Pending::Dir(dir));
                continue;
            }
            let Some(entry) = self.files.pop_front() else {
                break;
            };
            if entry.size <= wire::PUT_MAX {
                match read_small(&entry.path) {
                    Ok(Some(data)) => {
                        let report = SendReport {
                            name: entry.rel,
                            size: data.len() as u64,
                            sent: data.len() as u64,
                            digest: wire::digest(&data),
                            digest_cached: false,
                        };
                        let offer = wire::Offer {
                            name: report.name.clone(),
                            size: report.size,
                            digest: report.digest,
                        };
                        send.push(
                            Command::Put {
                                offer,
                                data: Bytes::from(data),
                            }
                            .encode(),
                        );
                        // What the walk saw may have changed: the offer's size counts.
                        self.progress.bytes = self.progress.bytes - entry.size + report.size;
                        self.put_bytes += report.size;
                        self.pending.push_back(Pending::Put(report));
                        continue;
                    }
                    // It grew past a PUT since the walk: offered as a large file.
                    Ok(None) => {}
                    Err(e) => {
                        let shown = entry.path.display();
                        let error = crate::io_error(format!("read {shown}"))(e);
                        self.file_ended(entry.rel, entry.size, Err(error), events);
                        continue;
                    }
                }
            }
            let rel = entry.rel.clone();
            let opened = FileSender::open_cached(
                &entry.path,
                Some(&entry.rel),
                self.options.digest_cache.as_ref(),
                &mut |p| {
                    events(&TreeEvent::Hashing {
                        name: rel.clone(),
                        done: p.done,
                        total: p.total,
                    })
                },
            );
            match opened {
                Ok(sender) => {
                    send.push(sender.offer());
                    // What the walk saw may have changed: the offer's size counts.
                    self.progress.bytes = self.progress.bytes - entry.size + sender.size();
                    let sender = Box::new(sender);
                    if sender.all_sent() {
                        self.pending.push_back(Pending::File(sender));
                    } else {
                        self.current = Some(sender);
                    }
                }
                Err(error) => self.file_ended(entry.rel, entry.size, Err(error), events),
            }
        }
    }
}

/// The bytes of a small file (opened without following a link: the walk saw a regular
/// file there), or `None` if it holds more than [`wire::PUT_MAX`] now.
fn read_small(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let mut data = Vec::new();
    file.take(wire::PUT_MAX + 1).read_to_end(&mut data)?;
    Ok((data.len() as u64 <= wire::PUT_MAX).then_some(data))
}

impl Drop for TreeSender {
    fn drop(&mut self) {
        if let Some(cache) = &self.options.digest_cache {
            // Best effort: a cache that cannot be written only costs a hash next time.
            let _ = cache.defer_writes(false);
        }
    }
}
