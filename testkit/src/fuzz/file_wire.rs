//! The file transfer's wire rules (`zmtp_file::wire`) fed arbitrary messages: decoding,
//! path checks, the receiver's decisions on offers and chunks, the sender's on fetches,
//! and the part record.

use std::path::{Component, Path};

use zmtp_file::wire::{
    check_path, check_put, decode_part_record, encode_part_record, judge_existing, judge_offer,
    Command, Decision, Existing, Incoming, OnDisk, Outgoing, PartInfo, Policy, FETCH_MAX, NAME_MAX,
    PART_RECORD_LEN, PATH_MAX, PUT_MAX,
};
use zmtp_proto::Bytes;

use super::input::{pick, Cursor};

/// The largest sizes a policy allows, picked by the setup byte.
const MAX_SIZES: [u64; 4] = [u64::MAX, 1 << 20, PUT_MAX, 0];
/// Fetch lengths a receiver asks for, picked by the setup byte.
const CHUNKS: [u32; 4] = [1, 4096, 256 << 10, FETCH_MAX];

/// A receiver and a sender following one transfer each, as the messages of the input
/// arrive.
struct Sides {
    policy: Policy,
    window: u32,
    chunk: u32,
    /// The receiver's transfer, and the ranges it asked for that are outstanding (the
    /// model the rules are checked against).
    incoming: Option<(Incoming, std::collections::VecDeque<(u64, u32)>)>,
    /// The sender's transfer.
    outgoing: Option<Outgoing>,
    outcome: Outcome,
}

/// The wire rules on arbitrary messages. The input is a setup byte (overwrite, the
/// largest size, the window and the fetch length), then messages: a disk byte (what the
/// receiver finds under an offered path), a frame count, and each frame's length (one
/// byte, or two when the first is 255) and bytes. Checked:
///
/// - every message that decodes encodes back to frames that decode to the same command;
/// - a path that passes `check_path` is relative, within the length limits, and made of
///   plain components only (joined under a directory, it stays there);
/// - an offer that is taken is fetched from the start or from a part started for the same
///   size and digest, never past the size; the fetches asked for are contiguous, within
///   the window and the fetch length, and end at the size;
/// - a CHUNK is taken exactly when it answers the oldest outstanding fetch with its length,
///   and the file then grows by it; a PUT is taken exactly when its size is at most
///   `PUT_MAX` and its bytes are that size;
/// - a FETCH is answered exactly when it asks for 1 to `FETCH_MAX` bytes within the file;
/// - part records round-trip, and 44 bytes decode only with the record's tag.
pub fn file_wire(data: &[u8]) {
    run_file_wire(data);
}

/// What a [`file_wire`] input did: transfers taken, CHUNKs taken, transfers completed
/// (fetched or PUT), and refusals (offers refused, chunks and fetches breaking the rules).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    pub taken: u32,
    pub chunks: u32,
    pub complete: u32,
    pub refused: u32,
}

/// [`file_wire`], saying what the input did.
pub(super) fn run_file_wire(data: &[u8]) -> Outcome {
    let mut input = Cursor::new(data);
    let setup = input.byte();
    let mut sides = Sides {
        policy: Policy {
            overwrite: setup & 1 != 0,
            max_size: pick(&MAX_SIZES, usize::from(setup >> 1 & 3), 0),
        },
        window: u32::from(setup >> 3 & 7) + 1,
        chunk: pick(&CHUNKS, usize::from(setup >> 6), 1),
        incoming: None,
        outgoing: None,
        outcome: Outcome::default(),
    };
    while !input.is_empty() {
        let disk = input.byte();
        let count = usize::from(input.byte() % 8);
        let frames: Vec<Bytes> = (0..count)
            .map(|_| {
                let len = match input.byte() {
                    255 => usize::from(input.u16()),
                    n => usize::from(n),
                };
                Bytes::copy_from_slice(input.take(len))
            })
            .collect();
        if let Some(record) = frames.first().filter(|f| f.len() == PART_RECORD_LEN) {
            part_record(record);
        }
        let Ok(command) = Command::decode(&frames) else {
            continue;
        };
        assert_eq!(
            Command::decode(&command.encode()).as_ref(),
            Ok(&command),
            "a decoded command encodes back to itself"
        );
        sides.on(command, disk);
    }
    sides.outcome
}

impl Sides {
    fn on(&mut self, command: Command, disk: u8) {
        match command {
            Command::Offer(offer) => {
                let on_disk = on_disk(disk, offer.size, offer.digest);
                match judge_offer(&offer, self.policy, on_disk) {
                    Ok(Decision::Fetch(start)) => {
                        path_is_plain(&offer.name);
                        assert!(
                            offer.size <= self.policy.max_size,
                            "an offer over the limit"
                        );
                        assert!(start <= offer.size, "a resume past the size");
                        let resumable = on_disk.part.filter(|p| {
                            p.size == offer.size && p.digest == offer.digest && p.len <= p.size
                        });
                        assert_eq!(start, resumable.map_or(0, |p| p.len), "the resume point");
                        let incoming = Incoming::new(offer.size, start, self.window, self.chunk);
                        self.outcome.taken += 1;
                        self.outcome.complete += u32::from(incoming.is_complete());
                        self.incoming = Some((incoming, Default::default()));
                        self.fetch();
                        self.outgoing = Some(Outgoing::new(offer.size));
                    }
                    Ok(Decision::CompareExisting) => {
                        path_is_plain(&offer.name);
                        assert!(!self.policy.overwrite, "compared although overwriting");
                        assert_eq!(on_disk.complete, Some(Existing::File(offer.size)));
                        assert!(judge_existing(&offer, &offer.digest).is_ok());
                        let mut other = offer.digest;
                        other[0] ^= 1;
                        assert!(judge_existing(&offer, &other).is_err());
                    }
                    Err(reason) => {
                        assert!(!reason.is_empty(), "a refusal says why");
                        self.outcome.refused += 1;
                    }
                }
            }
            Command::Put { offer, data } => {
                let fits = offer.size <= PUT_MAX && data.len() as u64 == offer.size;
                assert_eq!(
                    check_put(&offer, data.len()).is_ok(),
                    fits,
                    "PUT's size rule"
                );
                if fits {
                    if let Ok(Decision::Fetch(_)) =
                        judge_offer(&offer, self.policy, on_disk(disk, offer.size, offer.digest))
                    {
                        path_is_plain(&offer.name);
                        let mut incoming = Incoming::new(offer.size, 0, self.window, self.chunk);
                        incoming.on_put();
                        assert!(incoming.is_complete() && incoming.have() == offer.size);
                        self.outcome.taken += 1;
                        self.outcome.complete += 1;
                        self.incoming = None;
                    }
                }
            }
            Command::Chunk { offset, data } => {
                let Some((incoming, asked)) = self.incoming.as_mut() else {
                    return;
                };
                let before = incoming.have();
                let answers = asked.front() == Some(&(offset, data.len() as u32));
                match incoming.on_chunk(offset, data.len()) {
                    Ok(()) => {
                        assert!(answers, "a CHUNK taken that answers no fetch");
                        asked.pop_front();
                        assert_eq!(incoming.have(), before + data.len() as u64);
                        assert!(incoming.have() <= incoming.size());
                        self.outcome.chunks += 1;
                        self.outcome.complete += u32::from(incoming.is_complete());
                        self.fetch();
                    }
                    Err(v) => {
                        assert!(!answers, "a CHUNK refused that answers the oldest fetch");
                        assert!(!v.0.is_empty(), "a violation says what");
                        self.outcome.refused += 1;
                        self.incoming = None;
                    }
                }
            }
            Command::Fetch { offset, length } => {
                let Some(outgoing) = self.outgoing.as_mut() else {
                    return;
                };
                let size = self.incoming.as_ref().map(|(i, _)| i.size());
                let before = outgoing.sent();
                let ok = outgoing.on_fetch(offset, length).is_ok();
                if let Some(size) = size {
                    let within = (1..=FETCH_MAX).contains(&length)
                        && offset
                            .checked_add(u64::from(length))
                            .is_some_and(|e| e <= size);
                    assert_eq!(ok, within, "FETCH's range rule");
                }
                self.outcome.refused += u32::from(!ok);
                let grew = if ok { u64::from(length) } else { 0 };
                assert_eq!(outgoing.sent(), before + grew);
            }
            Command::Dir(path) => {
                if check_path(&path).is_ok() {
                    path_is_plain(&path);
                }
            }
            Command::Tree { .. } | Command::Done | Command::Error(_) | Command::Cancel(_) => {}
        }
    }

    /// Ask for what the window allows, checking the ranges against the model.
    fn fetch(&mut self) {
        let Some((incoming, asked)) = self.incoming.as_mut() else {
            return;
        };
        let mut next = asked
            .back()
            .map_or(incoming.have(), |&(o, l)| o + u64::from(l));
        for fetch in incoming.fetches() {
            let Command::Fetch { offset, length } = fetch else {
                panic!("fetches gives FETCH commands only");
            };
            assert_eq!(offset, next, "fetches are contiguous");
            assert!(length >= 1 && length <= self.chunk, "a fetch's length");
            next = offset + u64::from(length);
            assert!(next <= incoming.size(), "a fetch past the size");
            asked.push_back((offset, length));
        }
        assert!(asked.len() <= self.window as usize, "the window holds");
        if asked.len() < self.window as usize {
            assert_eq!(
                next,
                incoming.size(),
                "a window with room asks up to the size"
            );
        }
    }
}

/// What the receiver finds under an offered path, from a byte: nothing, a file (of the
/// offered size or another), a symbolic link or something else; and a part (for this
/// offer or another, shorter or longer than the size), or none.
fn on_disk(b: u8, size: u64, digest: [u8; 32]) -> OnDisk {
    let complete = match b & 7 {
        1 => Some(Existing::File(size)),
        2 => Some(Existing::File(size ^ 1)),
        3 => Some(Existing::Symlink),
        4 => Some(Existing::Other),
        _ => None,
    };
    let mut other = digest;
    other[31] ^= 0x80;
    let part = match b >> 3 & 7 {
        1 => Some(PartInfo {
            size,
            digest,
            len: size / 2,
        }),
        2 => Some(PartInfo {
            size,
            digest,
            len: size,
        }),
        3 => Some(PartInfo {
            size,
            digest,
            len: size.saturating_add(1),
        }),
        4 => Some(PartInfo {
            size,
            digest: other,
            len: size / 2,
        }),
        5 => Some(PartInfo {
            size: size ^ 1,
            digest,
            len: 0,
        }),
        _ => None,
    };
    OnDisk { complete, part }
}

/// A path `check_path` took: relative, within the limits, plain components only.
fn path_is_plain(path: &str) {
    assert!(check_path(path).is_ok());
    assert!(
        !path.is_empty() && path.len() <= PATH_MAX,
        "the path's length"
    );
    for name in path.split('/') {
        assert!(
            !name.is_empty() && name.len() <= NAME_MAX,
            "a component's length"
        );
        assert!(name != "." && name != "..", "a dot component");
        assert!(!name.contains('\\') && !name.chars().any(char::is_control));
    }
    assert!(
        Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_))),
        "{path:?} would leave the directory"
    );
}

/// A part record decodes only with its tag, and what decodes encodes back to it.
fn part_record(bytes: &[u8]) {
    match decode_part_record(bytes) {
        Some((size, digest)) => assert_eq!(&encode_part_record(size, &digest)[..], bytes),
        None => assert!(!bytes.starts_with(b"ZPB3"), "a tagged record refused"),
    }
}

/// Seeds: a fetched transfer answered in order, a resumed one, a PUT, a wrong chunk, a
/// FETCH past the end, hostile paths, and a part record.
pub(super) fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let message = |disk: u8, frames: &[&[u8]]| {
        let mut out = vec![disk, frames.len() as u8];
        for f in frames {
            if f.len() >= 255 {
                out.push(255);
                out.extend_from_slice(&(f.len() as u16).to_be_bytes());
            } else {
                out.push(f.len() as u8);
            }
            out.extend_from_slice(f);
        }
        out
    };
    let digest = zmtp_file::wire::digest(b"hello world");
    let offer = |name: &[u8], size: u64, disk: u8| {
        message(
            disk,
            &[b"OFFER", name, &size.to_be_bytes(), b"blake3", &digest],
        )
    };
    let chunk = |offset: u64, data: &[u8]| message(0, &[b"CHUNK", &offset.to_be_bytes(), data]);
    let fetch = |offset: u64, length: u32| {
        message(0, &[b"FETCH", &offset.to_be_bytes(), &length.to_be_bytes()])
    };
    // Setup: a window of 8 fetches of 1 byte, no size limit, overwrite as given.
    let setup = |overwrite: bool| u8::from(overwrite) | 7 << 3;
    let mut fetched = vec![setup(false)];
    fetched.extend(offer(b"dir/hello.txt", 3, 0));
    for (i, b) in b"abc".iter().enumerate() {
        fetched.extend(chunk(i as u64, &[*b]));
    }
    fetched.extend(fetch(0, 3));
    let mut resumed = vec![setup(false)];
    resumed.extend(offer(b"part.bin", 4, 1 << 3));
    resumed.extend(chunk(2, b"c"));
    resumed.extend(chunk(3, b"d"));
    let mut put = vec![setup(true)];
    put.extend(message(
        0,
        &[
            b"PUT",
            b"small.txt",
            &11u64.to_be_bytes(),
            b"blake3",
            &digest,
            b"hello world",
        ],
    ));
    let mut wrong = vec![setup(false)];
    wrong.extend(offer(b"w", 2, 0));
    wrong.extend(chunk(1, b"x"));
    let mut past_end = vec![setup(false)];
    past_end.extend(offer(b"f", 10, 0));
    past_end.extend(fetch(8, 4));
    past_end.extend(fetch(0, 0));
    let mut hostile = vec![setup(false)];
    for name in [
        &b"../etc/passwd"[..],
        b"/abs",
        b"a//b",
        b"a/./b",
        b"a\\b",
        &[b'n'; 256],
    ] {
        hostile.extend(offer(name, 1, 0));
        hostile.extend(message(0, &[b"DIR", name]));
    }
    hostile.extend(offer(b"link", 1, 3));
    hostile.extend(offer(b"same", 11, 1));
    let mut record = vec![setup(false)];
    record.extend(message(0, &[&encode_part_record(11, &digest)]));
    record.extend(message(0, &[&[b'Z'; PART_RECORD_LEN]]));
    vec![
        ("fetched_in_order", fetched),
        ("resumed_part", resumed),
        ("put_small", put),
        ("chunk_out_of_order", wrong),
        ("fetch_past_end", past_end),
        ("hostile_paths", hostile),
        ("part_record", record),
    ]
}
