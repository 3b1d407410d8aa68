//! The wire format and the two sides' state machines, without any I/O.
//!
//! Every message is a ZeroMQ multipart message whose first frame is an ASCII command;
//! integers are big-endian. A ROUTER receiver sees the sender's routing id before these
//! frames, and sends it first to address an answer; a DEALER sender sees only these frames.
//!
//! | command  | direction         | frames after the command                        |
//! |----------|-------------------|-------------------------------------------------|
//! | `OFFER`  | sender → receiver | path (UTF-8), size (u64), digest algorithm (`blake3`), digest (32 bytes) |
//! | `FETCH`  | receiver → sender | offset (u64), length (u32)                      |
//! | `CHUNK`  | sender → receiver | offset (u64), data                              |
//! | `DONE`   | receiver → sender | none                                            |
//! | `ERROR`  | receiver → sender | reason (UTF-8)                                  |
//! | `CANCEL` | sender → receiver | reason (UTF-8)                                  |
//! | `TREE`   | sender → receiver | files (u64), bytes (u64): a directory tree follows |
//! | `DIR`    | sender → receiver | path (UTF-8): a directory to create             |
//! | `PUT`    | sender → receiver | an `OFFER`'s four frames, then the whole file (at most [`PUT_MAX`] bytes) |
//!
//! Paths are relative, `/`-separated: see [`check_path`].

use std::collections::VecDeque;
use std::fmt;

use zmtp_async::Bytes;

/// The longest component of a path (a file or directory name), in bytes.
pub const NAME_MAX: usize = 255;

/// What the receiver appends to a name for the part file it writes first (`NAME.zmtp-part`,
/// renamed to `NAME` once checked); its resume record is `NAME.zmtp-part.offer`. No
/// offered name may end in either ([`check_name`]), so a part never has the name of a
/// file or directory of the tree it belongs to.
pub const PART_SUFFIX: &str = ".zmtp-part";

/// What the receiver appends to a part's name for its resume record.
pub const RECORD_SUFFIX: &str = ".zmtp-part.offer";

/// The longest path an `OFFER` or `DIR` may carry, in bytes.
pub const PATH_MAX: usize = 4096;

/// The largest file a `PUT` may carry (64 KiB): an offer with the file's bytes in it,
/// answered like an `OFFER` but without any `FETCH`, so that small files cost no round
/// trip each.
pub const PUT_MAX: u64 = 64 << 10;

/// The digest algorithm of every `OFFER`: BLAKE3 with its 32-byte output.
pub const DIGEST_ALGORITHM: &str = "blake3";

/// The BLAKE3 digest of `data` (what an `OFFER` carries for a file holding `data`).
pub fn digest(data: &[u8]) -> [u8; 32] {
    *blake3::hash(data).as_bytes()
}

/// The longest range a `FETCH` may ask for (16 MiB): a sender refuses longer ones, so that
/// a receiver cannot make it hold more than the window of these.
pub const FETCH_MAX: u32 = 16 << 20;

/// The default number of ranges a receiver keeps outstanding.
pub const DEFAULT_WINDOW: u32 = 8;

/// The default length of the ranges a receiver asks for (256 KiB).
pub const DEFAULT_CHUNK: u32 = 256 << 10;

/// One message of the protocol, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The sender offers a file.
    Offer(Offer),
    /// The receiver asks for `length` bytes at `offset`.
    Fetch {
        /// Where the range starts.
        offset: u64,
        /// How many bytes it holds.
        length: u32,
    },
    /// The sender's answer to a `FETCH`: the bytes at `offset`.
    Chunk {
        /// Where the bytes go.
        offset: u64,
        /// The bytes.
        data: Bytes,
    },
    /// The receiver has the whole file and its digest matches.
    Done,
    /// The receiver refuses or aborts the transfer, and says why.
    Error(String),
    /// The sender gives up, and says why.
    Cancel(String),
    /// The sender announces a directory tree: this many files holding this many bytes
    /// follow (each in its own `OFFER`). Never answered; it starts a new tree, within
    /// which a receiver refuses a path offered twice.
    Tree {
        /// Files the tree holds.
        files: u64,
        /// Bytes they hold together.
        bytes: u64,
    },
    /// The sender asks for a directory (one that holds no file: others are created with
    /// their files). Answered with `DONE` once it exists, or `ERROR`.
    Dir(String),
    /// A small file offered with its bytes (at most [`PUT_MAX`], exactly the offered
    /// size): answered with `DONE` once saved, or `ERROR`, never with a `FETCH`. The
    /// sender need not wait for the answer before sending the next one.
    Put {
        /// What an `OFFER` of it would say.
        offer: Offer,
        /// The whole file.
        data: Bytes,
    },
}

/// What an `OFFER` says about the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The path the file is to have under the receiver's directory (not yet checked:
    /// see [`check_path`]).
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// The BLAKE3 digest of its content (the algorithm frame says `blake3`).
    pub digest: [u8; 32],
}

/// Why a message is not one of the protocol's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

fn u64_frame(v: u64) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

fn text(frame: &Bytes, what: &str) -> Result<String, Malformed> {
    std::str::from_utf8(frame)
        .map(str::to_owned)
        .map_err(|_| Malformed(format!("the {what} is not UTF-8")))
}

fn fixed<const N: usize>(frame: &Bytes, what: &str) -> Result<[u8; N], Malformed> {
    <[u8; N]>::try_from(&frame[..])
        .map_err(|_| Malformed(format!("the {what} is {} bytes, not {N}", frame.len())))
}

impl Command {
    /// The frames of this command, command frame first.
    pub fn encode(&self) -> Vec<Bytes> {
        match self {
            Command::Offer(o) => vec![
                Bytes::from_static(b"OFFER"),
                Bytes::copy_from_slice(o.name.as_bytes()),
                u64_frame(o.size),
                Bytes::from_static(DIGEST_ALGORITHM.as_bytes()),
                Bytes::copy_from_slice(&o.digest),
            ],
            Command::Fetch { offset, length } => vec![
                Bytes::from_static(b"FETCH"),
                u64_frame(*offset),
                Bytes::copy_from_slice(&length.to_be_bytes()),
            ],
            Command::Chunk { offset, data } => vec![
                Bytes::from_static(b"CHUNK"),
                u64_frame(*offset),
                data.clone(),
            ],
            Command::Done => vec![Bytes::from_static(b"DONE")],
            Command::Error(reason) => vec![
                Bytes::from_static(b"ERROR"),
                Bytes::copy_from_slice(reason.as_bytes()),
            ],
            Command::Cancel(reason) => vec![
                Bytes::from_static(b"CANCEL"),
                Bytes::copy_from_slice(reason.as_bytes()),
            ],
            Command::Tree { files, bytes } => vec![
                Bytes::from_static(b"TREE"),
                u64_frame(*files),
                u64_frame(*bytes),
            ],
            Command::Dir(path) => vec![
                Bytes::from_static(b"DIR"),
                Bytes::copy_from_slice(path.as_bytes()),
            ],
            Command::Put { offer, data } => vec![
                Bytes::from_static(b"PUT"),
                Bytes::copy_from_slice(offer.name.as_bytes()),
                u64_frame(offer.size),
                Bytes::from_static(DIGEST_ALGORITHM.as_bytes()),
                Bytes::copy_from_slice(&offer.digest),
                data.clone(),
            ],
        }
    }

    /// The command `frames` hold (the routing id, if any, already taken off). Every frame
    /// count and length is checked, and an `OFFER`'s digest algorithm (one other than
    /// [`DIGEST_ALGORITHM`] is malformed, named in the reason); nothing else is (paths:
    /// [`check_path`]).
    pub fn decode(frames: &[Bytes]) -> Result<Command, Malformed> {
        let Some((command, rest)) = frames.split_first() else {
            return Err(Malformed("no frames".into()));
        };
        let want = |n: usize| -> Result<(), Malformed> {
            if rest.len() == n {
                Ok(())
            } else {
                Err(Malformed(format!(
                    "{} takes {n} frames after the command, not {}",
                    String::from_utf8_lossy(command),
                    rest.len()
                )))
            }
        };
        match &command[..] {
            b"OFFER" => {
                want(4)?;
                Ok(Command::Offer(decode_offer(rest)?))
            }
            b"PUT" => {
                want(5)?;
                Ok(Command::Put {
                    offer: decode_offer(&rest[..4])?,
                    data: rest[4].clone(),
                })
            }
            b"TREE" => {
                want(2)?;
                Ok(Command::Tree {
                    files: u64::from_be_bytes(fixed(&rest[0], "file count")?),
                    bytes: u64::from_be_bytes(fixed(&rest[1], "byte count")?),
                })
            }
            b"DIR" => {
                want(1)?;
                Ok(Command::Dir(text(&rest[0], "directory path")?))
            }
            b"FETCH" => {
                want(2)?;
                Ok(Command::Fetch {
                    offset: u64::from_be_bytes(fixed(&rest[0], "offset")?),
                    length: u32::from_be_bytes(fixed(&rest[1], "length")?),
                })
            }
            b"CHUNK" => {
                want(2)?;
                Ok(Command::Chunk {
                    offset: u64::from_be_bytes(fixed(&rest[0], "offset")?),
                    data: rest[1].clone(),
                })
            }
            b"DONE" => want(0).map(|()| Command::Done),
            b"ERROR" => {
                want(1)?;
                Ok(Command::Error(
                    String::from_utf8_lossy(&rest[0]).into_owned(),
                ))
            }
            b"CANCEL" => {
                want(1)?;
                Ok(Command::Cancel(
                    String::from_utf8_lossy(&rest[0]).into_owned(),
                ))
            }
            other => Err(Malformed(format!(
                "unknown command {:?}",
                String::from_utf8_lossy(other)
            ))),
        }
    }
}

/// The four frames of an offer: path, size, digest algorithm, digest.
fn decode_offer(frames: &[Bytes]) -> Result<Offer, Malformed> {
    let name = text(&frames[0], "name")?;
    let size = u64::from_be_bytes(fixed(&frames[1], "size")?);
    if &frames[2][..] != DIGEST_ALGORITHM.as_bytes() {
        return Err(Malformed(format!(
            "unknown digest algorithm {:?} (this receiver knows {DIGEST_ALGORITHM:?})",
            String::from_utf8_lossy(&frames[2])
        )));
    }
    Ok(Offer {
        name,
        size,
        digest: fixed(&frames[3], "digest")?,
    })
}

/// Check a `PUT` before anything is created: at most [`PUT_MAX`] bytes, and exactly the
/// offered size.
pub fn check_put(offer: &Offer, data_len: usize) -> Result<(), String> {
    if offer.size > PUT_MAX {
        return Err(format!(
            "a PUT of {:?} is {} bytes, more than {PUT_MAX} (offer it instead)",
            offer.name, offer.size
        ));
    }
    if data_len as u64 != offer.size {
        return Err(format!(
            "a PUT of {:?} holds {data_len} bytes, not the {} it says",
            offer.name, offer.size
        ));
    }
    Ok(())
}

/// Whether `name` may be one component of a path (a file or directory name): 1 to
/// [`NAME_MAX`] bytes, no `/`, `\`, NUL or other control character, neither `.` nor
/// `..`, and not ending in [`PART_SUFFIX`] or [`RECORD_SUFFIX`] (the receiver's own
/// names). Names that pass cannot point outside the directory they are in.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the file name is empty".into());
    }
    if name.len() > NAME_MAX {
        return Err(format!(
            "the file name {:?}... is {} bytes long (at most {NAME_MAX})",
            name.chars().take(16).collect::<String>(),
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("the file name {name:?} is not a file's"));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c == '/' || c == '\\' || c.is_control())
    {
        return Err(format!(
            "the file name {name:?} contains {c:?} (no path separators or control characters)"
        ));
    }
    if let Some(suffix) = [PART_SUFFIX, RECORD_SUFFIX]
        .into_iter()
        .find(|s| name.ends_with(s))
    {
        return Err(format!(
            "the file name {name:?} ends in {suffix:?}, which receivers keep for their part \
             files"
        ));
    }
    Ok(())
}

/// Whether `path` may name a file or directory under the receiver's directory: relative
/// (not starting with `/`), at most [`PATH_MAX`] bytes, its `/`-separated components each
/// passing [`check_name`] (so no empty component, `.`, `..`, `\` or control
/// character). Paths that pass cannot point outside the directory by themselves (the
/// receiver also refuses one that goes through a symbolic link it has).
pub fn check_path(path: &str) -> Result<(), String> {
    if path.len() > PATH_MAX {
        return Err(format!(
            "the path is {} bytes long (at most {PATH_MAX})",
            path.len()
        ));
    }
    if path.starts_with('/') {
        return Err(format!("the path {path:?} is absolute"));
    }
    for component in path.split('/') {
        check_name(component).map_err(|e| {
            if path.contains('/') {
                format!("in the path {path:?}: {e}")
            } else {
                e
            }
        })?;
    }
    Ok(())
}

/// What is already under the offered path on the receiver's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// A regular file of this length (complete: the final name only appears then).
    File(u64),
    /// A symbolic link (never followed, never replaced).
    Symlink,
    /// Something else: a directory, a device, a socket.
    Other,
}

/// What the receiver knows of a file it is offered, gathered by the caller from its
/// directory (without following symbolic links).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OnDisk {
    /// What has the offered path now, if anything.
    pub complete: Option<Existing>,
    /// The part file left by an earlier transfer: its recorded offer (size and digest) and
    /// its length.
    pub part: Option<PartInfo>,
}

/// A part file and the offer it was started for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartInfo {
    /// The size the earlier offer announced.
    pub size: u64,
    /// The digest the earlier offer announced.
    pub digest: [u8; 32],
    /// How many bytes the part holds.
    pub len: u64,
}

/// The receiver's rules for offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The largest size accepted.
    pub max_size: u64,
    /// Replace a complete file of the same name.
    pub overwrite: bool,
}

/// What to do with an offer that is not refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Fetch the file from this offset (a resumed part's length, or 0).
    Fetch(u64),
    /// A complete file of the offered size is there (and replacing it is not allowed):
    /// compute its digest and give it to [`judge_existing`]. The same content is
    /// answered with `DONE` at once (a tree sent again after an interruption sends only
    /// what is missing); other content is refused.
    CompareExisting,
}

/// Decide on an offer: [`Decision::Fetch`] from the part's length when the part was
/// started for the same size and digest (else from 0), [`Decision::CompareExisting`] when
/// a file of that size is there already and `overwrite` is off, or `Err(reason)` to refuse
/// it (answered with `ERROR`).
pub fn judge_offer(offer: &Offer, policy: Policy, disk: OnDisk) -> Result<Decision, String> {
    check_path(&offer.name)?;
    if offer.size > policy.max_size {
        return Err(format!(
            "{:?} is {} bytes, more than the {} this receiver takes",
            offer.name, offer.size, policy.max_size
        ));
    }
    match disk.complete {
        Some(Existing::Symlink) => {
            return Err(format!(
                "{:?} is a symbolic link on the receiver (never followed or replaced)",
                offer.name
            ))
        }
        Some(Existing::Other) => {
            return Err(format!(
                "{:?} exists already and is not a regular file",
                offer.name
            ))
        }
        Some(Existing::File(len)) if !policy.overwrite => {
            if len == offer.size {
                return Ok(Decision::CompareExisting);
            }
            return Err(format!(
                "{:?} exists already ({len} bytes, not the {} offered)",
                offer.name, offer.size
            ));
        }
        _ => {}
    }
    Ok(Decision::Fetch(match disk.part {
        Some(p) if p.size == offer.size && p.digest == offer.digest && p.len <= offer.size => p.len,
        _ => 0,
    }))
}

/// After [`Decision::CompareExisting`]: `Ok` when the file there has the offer's digest
/// (answer `DONE`, nothing to fetch), or why the offer is refused.
pub fn judge_existing(offer: &Offer, existing: &[u8; 32]) -> Result<(), String> {
    if *existing == offer.digest {
        Ok(())
    } else {
        Err(format!(
            "{:?} exists already, with other content (its BLAKE3 digest differs)",
            offer.name
        ))
    }
}

/// Why a transfer is aborted: the peer broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Violation {}

/// The receiver's side of one transfer: which ranges it has asked for, in order, and how
/// much of the file it has. A CHUNK must answer the oldest outstanding FETCH (ZeroMQ keeps
/// a connection's messages in order, and a sender answers in the order asked), with
/// exactly its length: the file then grows as a prefix, which is what resuming relies on.
#[derive(Debug, Clone)]
pub struct Incoming {
    size: u64,
    /// The end of the ranges asked for so far.
    asked: u64,
    /// The end of what has arrived (everything before it has).
    have: u64,
    /// Where the transfer started (a resumed one: the part's length).
    start: u64,
    outstanding: VecDeque<(u64, u32)>,
    window: usize,
    chunk: u32,
}

impl Incoming {
    /// A transfer of a `size`-byte file of which the first `start` bytes are there, asking
    /// for at most `window` ranges of `chunk` bytes at a time (both at least 1; `chunk` at
    /// most [`FETCH_MAX`]).
    pub fn new(size: u64, start: u64, window: u32, chunk: u32) -> Incoming {
        let start = start.min(size);
        Incoming {
            size,
            asked: start,
            have: start,
            start,
            outstanding: VecDeque::new(),
            window: window.max(1) as usize,
            chunk: chunk.clamp(1, FETCH_MAX),
        }
    }

    /// The ranges to ask for now: as many as the window has room for.
    pub fn fetches(&mut self) -> Vec<Command> {
        let mut out = Vec::new();
        while self.outstanding.len() < self.window && self.asked < self.size {
            let length = (self.size - self.asked).min(u64::from(self.chunk)) as u32;
            self.outstanding.push_back((self.asked, length));
            out.push(Command::Fetch {
                offset: self.asked,
                length,
            });
            self.asked += u64::from(length);
        }
        out
    }

    /// Check a CHUNK of `len` bytes at `offset`: `Ok` when it answers the oldest
    /// outstanding FETCH exactly (its bytes may then be written at `offset`).
    pub fn on_chunk(&mut self, offset: u64, len: usize) -> Result<(), Violation> {
        if offset.saturating_add(len as u64) > self.size {
            return Err(Violation(format!(
                "a CHUNK of {len} bytes at {offset} goes past the offered size {}",
                self.size
            )));
        }
        let Some(&(want_offset, want_len)) = self.outstanding.front() else {
            return Err(Violation(format!(
                "a CHUNK at {offset} that was not asked for (nothing is outstanding)"
            )));
        };
        if offset != want_offset {
            return Err(Violation(format!(
                "a CHUNK at {offset} that was not asked for (the next range asked for is at \
                 {want_offset})"
            )));
        }
        if len != want_len as usize {
            let how = if len > want_len as usize {
                "longer"
            } else {
                "shorter"
            };
            return Err(Violation(format!(
                "a CHUNK of {len} bytes at {offset}, {how} than the {want_len} asked for"
            )));
        }
        self.outstanding.pop_front();
        self.have += len as u64;
        Ok(())
    }

    /// The whole file arrived with its offer (a `PUT`, checked by [`check_put`] for the
    /// offered size): nothing is outstanding, every byte is there.
    pub fn on_put(&mut self) {
        self.outstanding.clear();
        self.asked = self.size;
        self.have = self.size;
    }

    /// Whether every byte has arrived.
    pub fn is_complete(&self) -> bool {
        self.have == self.size
    }

    /// Bytes of the file there so far.
    pub fn have(&self) -> u64 {
        self.have
    }

    /// Bytes that arrived in CHUNKs (not counting what a resumed part held).
    pub fn fetched(&self) -> u64 {
        self.have - self.start
    }

    /// The offered size.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// The sender's side: a FETCH is answered only within the file and [`FETCH_MAX`].
#[derive(Debug, Clone, Copy)]
pub struct Outgoing {
    size: u64,
    sent: u64,
}

impl Outgoing {
    /// Sending a `size`-byte file.
    pub fn new(size: u64) -> Outgoing {
        Outgoing { size, sent: 0 }
    }

    /// Check a FETCH; `Ok` when it may be answered with the `length` bytes at `offset`.
    pub fn on_fetch(&mut self, offset: u64, length: u32) -> Result<(), Violation> {
        if length == 0 || length > FETCH_MAX {
            return Err(Violation(format!(
                "a FETCH of {length} bytes (1 to {FETCH_MAX})"
            )));
        }
        if offset.saturating_add(u64::from(length)) > self.size {
            return Err(Violation(format!(
                "a FETCH of {length} bytes at {offset}, past the end of the {}-byte file",
                self.size
            )));
        }
        self.sent += u64::from(length);
        Ok(())
    }

    /// Bytes answered so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// The first bytes of a part record: its format (a BLAKE3 digest follows the size).
/// Records without it (those of the SHA-256 format, 40 bytes) are not resumed from.
pub const PART_RECORD_TAG: [u8; 4] = *b"ZPB3";

/// The length of a part record.
pub const PART_RECORD_LEN: usize = 44;

/// The part file's record of the offer it was started for: [`PART_RECORD_TAG`], size
/// (u64, big-endian), then the BLAKE3 digest; 44 bytes, kept next to the part.
pub fn encode_part_record(size: u64, digest: &[u8; 32]) -> [u8; PART_RECORD_LEN] {
    let mut out = [0; PART_RECORD_LEN];
    out[..4].copy_from_slice(&PART_RECORD_TAG);
    out[4..12].copy_from_slice(&size.to_be_bytes());
    out[12..].copy_from_slice(digest);
    out
}

/// The size and digest of a part record; `None` unless it is exactly
/// [`PART_RECORD_LEN`] bytes starting with [`PART_RECORD_TAG`] (an older record, of
/// another digest, is not resumed from: its part starts over).
pub fn decode_part_record(bytes: &[u8]) -> Option<(u64, [u8; 32])> {
    let bytes: &[u8; PART_RECORD_LEN] = bytes.try_into().ok()?;
    let (tag, rest) = bytes.split_at(4);
    if tag != PART_RECORD_TAG {
        return None;
    }
    let (size, digest) = rest.split_at(8);
    Some((
        u64::from_be_bytes(size.try_into().ok()?),
        digest.try_into().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(name: &str, size: u64) -> Offer {
        Offer {
            name: name.into(),
            size,
            digest: [7; 32],
        }
    }

    const POLICY: Policy = Policy {
        max_size: 1000,
        overwrite: false,
    };

    #[test]
    fn every_command_round_trips() {
        for c in [
            Command::Offer(offer("a.txt", 1 << 40)),
            Command::Fetch {
                offset: 1 << 33,
                length: 262_144,
            },
            Command::Chunk {
                offset: 5,
                data: Bytes::from_static(b"hello"),
            },
            Command::Done,
            Command::Error("no".into()),
            Command::Cancel("bye".into()),
            Command::Tree {
                files: 10_001,
                bytes: 1 << 35,
            },
            Command::Dir("a/b".into()),
            Command::Put {
                offer: offer("a/b", 5),
                data: Bytes::from_static(b"hello"),
            },
        ] {
            assert_eq!(Command::decode(&c.encode()), Ok(c));
        }
    }

    #[test]
    fn integers_are_big_endian() {
        let f = Command::Fetch {
            offset: 0x0102,
            length: 0x0304,
        }
        .encode();
        assert_eq!(&f[0][..], b"FETCH");
        assert_eq!(&f[1][..], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&f[2][..], &[0, 0, 3, 4]);
    }

    #[test]
    fn malformed_messages_are_refused() {
        let b = |s: &'static [u8]| Bytes::from_static(s);
        for frames in [
            vec![],
            vec![b(b"NOPE")],
            // The SHA-256 format's OFFER, without an algorithm frame.
            vec![b(b"OFFER"), b(b"x"), b(&[0; 8]), b(&[0; 32])],
            vec![b(b"OFFER"), b(b"x"), b(&[0; 8]), b(b"blake3")],
            vec![b(b"OFFER"), b(b"x"), b(&[0; 7]), b(b"blake3"), b(&[0; 32])],
            vec![b(b"OFFER"), b(b"x"), b(&[0; 8]), b(b"blake3"), b(&[0; 31])],
            vec![
                b(b"OFFER"),
                b(&[0xff]),
                b(&[0; 8]),
                b(b"blake3"),
                b(&[0; 32]),
            ],
            vec![b(b"FETCH"), b(&[0; 8]), b(&[0; 8])],
            vec![b(b"CHUNK"), b(&[0; 8])],
            vec![b(b"DONE"), b(b"")],
            vec![b(b"TREE"), b(&[0; 8])],
            vec![b(b"TREE"), b(&[0; 8]), b(&[0; 4])],
            vec![b(b"DIR")],
            vec![b(b"DIR"), b(&[0xc3])],
            vec![b(b"PUT"), b(b"x"), b(&[0; 8]), b(b"blake3"), b(&[0; 32])],
            vec![
                b(b"PUT"),
                b(b"x"),
                b(&[0; 8]),
                b(b"md5"),
                b(&[0; 32]),
                b(b""),
            ],
        ] {
            assert!(Command::decode(&frames).is_err(), "{frames:?}");
        }
    }

    #[test]
    fn an_offer_names_its_digest_algorithm() {
        let frames = Command::Offer(offer("a", 3)).encode();
        assert_eq!(frames.len(), 5);
        assert_eq!(&frames[3][..], b"blake3");
        assert_eq!(&frames[4][..], &[7; 32]);
        // Another algorithm is refused by name, whatever its digest's length.
        let mut other = frames.clone();
        other[3] = Bytes::from_static(b"sha256");
        let e = Command::decode(&other).unwrap_err();
        assert!(e.0.contains("unknown digest algorithm \"sha256\""), "{e}");
        other[4] = Bytes::from_static(&[1; 64]);
        assert!(Command::decode(&other).unwrap_err().0.contains("sha256"));
    }

    #[test]
    fn a_put_holds_exactly_its_size_and_at_most_put_max() {
        assert_eq!(check_put(&offer("a", 5), 5), Ok(()));
        assert!(check_put(&offer("a", 5), 4)
            .unwrap_err()
            .contains("4 bytes"));
        assert!(check_put(&offer("a", 5), 6)
            .unwrap_err()
            .contains("6 bytes"));
        assert_eq!(check_put(&offer("a", PUT_MAX), PUT_MAX as usize), Ok(()));
        assert!(check_put(&offer("a", PUT_MAX + 1), PUT_MAX as usize + 1)
            .unwrap_err()
            .contains("more than"));
    }

    /// A small deterministic generator for the random inputs below.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        /// Bytes drawn mostly from those that matter to paths.
        fn bytes(&mut self, max: u64) -> Vec<u8> {
            const PICK: &[u8] = b"ab./\\\0\n\x7f\xc3\xa9\xff";
            let len = self.below(max + 1);
            (0..len)
                .map(|_| match self.below(4) {
                    0 => self.next() as u8,
                    _ => PICK[self.below(PICK.len() as u64) as usize],
                })
                .collect()
        }
    }

    #[test]
    fn random_frames_decode_or_are_refused_without_panicking() {
        let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
        let words: [&[u8]; 9] = [
            b"OFFER", b"PUT", b"FETCH", b"CHUNK", b"DONE", b"ERROR", b"CANCEL", b"TREE", b"DIR",
        ];
        for _ in 0..20_000 {
            let mut frames = vec![Bytes::from_static(words[rng.below(9) as usize])];
            for _ in 0..rng.below(7) {
                let frame = match rng.below(4) {
                    0 => rng.next().to_be_bytes().to_vec(),
                    1 => b"blake3".to_vec(),
                    2 => vec![rng.next() as u8; 32],
                    _ => rng.bytes(40),
                };
                frames.push(Bytes::from(frame));
            }
            if let Ok(c) = Command::decode(&frames) {
                // What decodes encodes back to the same frames (reasons are read lossily:
                // only UTF-8 ones come back the same).
                let lossy = matches!(c, Command::Error(_) | Command::Cancel(_))
                    && std::str::from_utf8(&frames[1]).is_err();
                if !lossy {
                    assert_eq!(c.encode(), frames);
                }
            }
        }
    }

    #[test]
    fn random_paths_that_pass_stay_inside_the_directory() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut passed = 0;
        for _ in 0..50_000 {
            let bytes = rng.bytes(12);
            let Ok(path) = std::str::from_utf8(&bytes) else {
                continue;
            };
            if check_path(path).is_ok() {
                passed += 1;
                assert!(!path.starts_with('/') && !path.is_empty(), "{path:?}");
                for c in path.split('/') {
                    assert!(!c.is_empty() && c != "." && c != "..", "{path:?}");
                    assert!(!c.contains('\\') && !c.chars().any(char::is_control));
                }
                // The standard library sees only normal components in it.
                assert!(std::path::Path::new(path)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_))));
            }
        }
        assert!(
            passed > 1000,
            "the generator makes valid paths too: {passed}"
        );
    }

    #[test]
    fn the_digest_is_blake3() {
        // The BLAKE3 test vector of the empty input.
        assert_eq!(
            digest(b"")[..4],
            [0xaf, 0x13, 0x49, 0xb9],
            "BLAKE3(\"\") starts af1349b9"
        );
    }

    #[test]
    fn unsafe_names_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../x",
            "a\\b",
            "a\0b",
            "a\nb",
            "\u{7f}",
            "\u{85}x",
            &"x".repeat(256),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "...", ".hidden", "résumé.pdf", &"x".repeat(255)] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn unsafe_paths_are_refused() {
        let long_component = format!("a/{}/b", "x".repeat(256));
        let long_path = ["y"; 2049].join("/");
        for bad in [
            "",
            "/etc/passwd",
            "/",
            "a/",
            "a//b",
            "./a",
            "a/./b",
            "../x",
            "a/../../x",
            "a/..",
            "a\\b/c",
            "a/b\nc",
            "a/\0",
            &long_component,
            &long_path,
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
            assert!(
                judge_offer(&offer(bad, 1), POLICY, OnDisk::default()).is_err(),
                "{bad:?}"
            );
        }
        assert!(check_path("/x").unwrap_err().contains("absolute"));
        assert!(check_path(&long_path).unwrap_err().contains("4097"));
        let at_most = ["y"; 2048].join("/");
        for good in ["a", "a/b/c.txt", ".hidden/...", "résumé/x", &at_most] {
            assert_eq!(check_path(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn offers_are_judged_on_size_existence_and_part() {
        let fetch = Decision::Fetch;
        assert!(judge_offer(&offer("a", 1001), POLICY, OnDisk::default())
            .unwrap_err()
            .contains("1001"));
        assert_eq!(
            judge_offer(&offer("a", 1000), POLICY, OnDisk::default()),
            Ok(fetch(0))
        );
        let there = |e| OnDisk {
            complete: Some(e),
            part: None,
        };
        // A complete file of another size is refused; of the same size, compared.
        assert!(
            judge_offer(&offer("a", 5), POLICY, there(Existing::File(4)))
                .unwrap_err()
                .contains("exists already")
        );
        assert_eq!(
            judge_offer(&offer("a", 5), POLICY, there(Existing::File(5))),
            Ok(Decision::CompareExisting)
        );
        assert_eq!(judge_existing(&offer("a", 5), &[7; 32]), Ok(()));
        assert!(judge_existing(&offer("a", 5), &[8; 32])
            .unwrap_err()
            .contains("other content"));
        let overwrite = Policy {
            overwrite: true,
            ..POLICY
        };
        assert_eq!(
            judge_offer(&offer("a", 5), overwrite, there(Existing::File(5))),
            Ok(fetch(0))
        );
        // A link or a directory in the way is refused, even with overwrite.
        for p in [POLICY, overwrite] {
            assert!(judge_offer(&offer("a", 5), p, there(Existing::Symlink))
                .unwrap_err()
                .contains("symbolic link"));
            assert!(judge_offer(&offer("a", 5), p, there(Existing::Other)).is_err());
        }
        let part = |size, digest, len| OnDisk {
            complete: None,
            part: Some(PartInfo { size, digest, len }),
        };
        // The same offer resumes at the part's length; another starts over.
        assert_eq!(
            judge_offer(&offer("a", 500), POLICY, part(500, [7; 32], 123)),
            Ok(fetch(123))
        );
        assert_eq!(
            judge_offer(&offer("a", 500), POLICY, part(500, [8; 32], 123)),
            Ok(fetch(0))
        );
        assert_eq!(
            judge_offer(&offer("a", 500), POLICY, part(499, [7; 32], 123)),
            Ok(fetch(0))
        );
        assert_eq!(
            judge_offer(&offer("a", 500), POLICY, part(500, [7; 32], 501)),
            Ok(fetch(0))
        );
    }

    #[test]
    fn the_window_bounds_the_ranges_outstanding() {
        let mut t = Incoming::new(1000, 0, 3, 100);
        let first = t.fetches();
        assert_eq!(first.len(), 3);
        assert_eq!(
            first[2],
            Command::Fetch {
                offset: 200,
                length: 100
            }
        );
        assert!(t.fetches().is_empty(), "no credit left");
        t.on_chunk(0, 100).unwrap();
        assert_eq!(
            t.fetches(),
            [Command::Fetch {
                offset: 300,
                length: 100
            }]
        );
        assert_eq!(t.have(), 100);
    }

    #[test]
    fn the_last_range_is_short_and_resume_starts_at_the_part() {
        let mut t = Incoming::new(250, 120, 8, 100);
        assert_eq!(
            t.fetches(),
            [
                Command::Fetch {
                    offset: 120,
                    length: 100
                },
                Command::Fetch {
                    offset: 220,
                    length: 30
                }
            ]
        );
        t.on_chunk(120, 100).unwrap();
        t.on_chunk(220, 30).unwrap();
        assert!(t.is_complete());
        assert_eq!(t.fetched(), 130);
        assert!(Incoming::new(0, 0, 8, 100).is_complete());
    }

    #[test]
    fn chunks_not_asked_for_abort() {
        let mut t = Incoming::new(1000, 0, 2, 100);
        assert!(t.on_chunk(0, 100).is_err(), "nothing asked yet");
        t.fetches();
        assert!(t.on_chunk(100, 100).unwrap_err().0.contains("not asked"));
        assert!(t.on_chunk(0, 101).unwrap_err().0.contains("longer"));
        assert!(t.on_chunk(0, 99).unwrap_err().0.contains("shorter"));
        assert!(t.on_chunk(950, 100).unwrap_err().0.contains("past"));
        assert!(t.on_chunk(u64::MAX, 1).unwrap_err().0.contains("past"));
        assert_eq!(t.have(), 0);
    }

    #[test]
    fn a_sender_answers_only_fetches_within_the_file() {
        let mut s = Outgoing::new(1000);
        assert!(s.on_fetch(0, 0).is_err());
        assert!(s.on_fetch(0, FETCH_MAX + 1).is_err());
        assert!(s.on_fetch(999, 2).is_err());
        assert!(s.on_fetch(u64::MAX, 1).is_err());
        s.on_fetch(900, 100).unwrap();
        assert_eq!(s.sent(), 100);
    }

    #[test]
    fn part_records_round_trip() {
        let r = encode_part_record(42, &[9; 32]);
        assert_eq!(r.len(), 44);
        assert_eq!(decode_part_record(&r), Some((42, [9; 32])));
        assert_eq!(decode_part_record(&r[..43]), None);
        // The SHA-256 format's record (size then digest, 40 bytes) is not resumed from,
        // nor is a record of the right length with another tag.
        assert_eq!(decode_part_record(&r[4..]), None);
        let mut other = r;
        other[..4].copy_from_slice(b"ZPS2");
        assert_eq!(decode_part_record(&other), None);
    }
}
