//! Whole directory trees: `send_tree` end to end (tokio, and the blocking driver), resume
//! across a tree, and the receiver's path rules against a hostile sender written here
//! against the wire format.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use zmtp_file::wire::{self, Command};
use zmtp_file::{
    recv_files, send_tree, Outcome, RecvEvent, RecvOptions, SendOptions, SkipReason, TreeEvent,
};
use zmtp_tokio::{Bytes, Message, Socket, SocketType};

/// A fresh empty directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("zmtp-file-tree-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        TempDir(dir)
    }
    fn inbox(&self) -> PathBuf {
        self.0.join("in")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every entry under `root` as (relative path, Some(content) for files, None for
/// directories), sorted; links are listed as errors.
fn listing(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Option<Vec<u8>>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                out.push((rel, None));
                walk(root, &e.path(), out);
            } else if kind.is_file() {
                out.push((rel, Some(std::fs::read(e.path()).unwrap())));
            } else {
                out.push((format!("{rel} (not a file)"), None));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// The source tree: nested files (one over several ranges), an empty file, an empty
/// directory, a link to a file outside it and a FIFO (both skipped).
fn source_tree(dir: &TempDir) -> PathBuf {
    let root = dir.0.join("src");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::create_dir_all(root.join("empty/inner")).unwrap();
    std::fs::write(root.join("top.txt"), b"top").unwrap();
    std::fs::write(root.join("a/one.bin"), content(200_000, 1)).unwrap();
    std::fs::write(root.join("a/b/two.txt"), b"two").unwrap();
    std::fs::write(root.join("a/b/zero"), b"").unwrap();
    std::fs::write(dir.0.join("outside.txt"), b"secret").unwrap();
    symlink(dir.0.join("outside.txt"), root.join("a/link")).unwrap();
    symlink(dir.0.join("in"), root.join("dirlink")).unwrap();
    let fifo = std::ffi::CString::new(root.join("a/fifo").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file system entry.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    root
}

fn small(dir: &Path) -> RecvOptions {
    let mut o = RecvOptions::new(dir);
    o.window = 4;
    o.chunk = 64 << 10;
    o
}

const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

/// What the receiver should hold for the source tree.
fn expected(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut want = vec![
        ("src".to_owned(), None),
        ("src/a".to_owned(), None),
        ("src/a/b".to_owned(), None),
        ("src/empty".to_owned(), None),
        ("src/empty/inner".to_owned(), None),
        ("src/top.txt".to_owned(), Some(b"top".to_vec())),
        ("src/a/b/two.txt".to_owned(), Some(b"two".to_vec())),
        ("src/a/b/zero".to_owned(), Some(Vec::new())),
        (
            "src/a/one.bin".to_owned(),
            Some(std::fs::read(root.join("a/one.bin")).unwrap()),
        ),
    ];
    want.sort();
    want
}

#[tokio::test(flavor = "current_thread")]
async fn a_tree_arrives_whole_and_skips_links_and_special_files() {
    let dir = TempDir::new("whole");
    let root = source_tree(&dir);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let options = small(&dir.inbox());
    let mut events = Vec::new();
    let mut announced = None;
    let mut dirs = Vec::new();
    let plain = SendOptions::default();
    let (sent, received) = within(async {
        tokio::join!(
            send_tree(&sender, &root, &plain, |e| events.push(e.clone())),
            recv_files(&receiver, &options, Some(4), |e| match e {
                RecvEvent::Tree { files, bytes, .. } => announced = Some((*files, *bytes)),
                RecvEvent::Dir { name, result, .. } => dirs.push((name.clone(), result.clone())),
                _ => {}
            })
        )
    })
    .await;
    let report = sent.unwrap();
    assert!(report.all_saved(), "{report:?}");
    let mut names: Vec<&str> = report.saved.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "src/a/b/two.txt",
            "src/a/b/zero",
            "src/a/one.bin",
            "src/top.txt"
        ]
    );
    assert_eq!(report.dirs, 1);
    assert_eq!(dirs, [("src/empty/inner".to_owned(), Ok(()))]);
    assert_eq!(announced, Some((4, 200_006)));
    // The link and the FIFO were skipped, and said so; nothing outside the tree went.
    let mut skipped: Vec<_> = report
        .skipped
        .iter()
        .map(|s| {
            (
                s.path.strip_prefix(&root).unwrap().to_owned(),
                s.reason.clone(),
            )
        })
        .collect();
    skipped.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        skipped,
        [
            (PathBuf::from("a/fifo"), SkipReason::Special),
            (PathBuf::from("a/link"), SkipReason::Symlink),
            (PathBuf::from("dirlink"), SkipReason::Symlink),
        ]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, TreeEvent::Skipped(_)))
            .count(),
        3
    );
    // One progress for the whole tree, ending at every file and byte.
    let last = events
        .iter()
        .rev()
        .find_map(|e| match e {
            TreeEvent::Progress(p) => Some(*p),
            _ => None,
        })
        .unwrap();
    assert_eq!((last.files_done, last.files), (4, 4));
    assert_eq!((last.bytes_done, last.bytes), (200_006, 200_006));
    let outcomes = received.unwrap();
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Saved(_))));
    assert_eq!(listing(&dir.inbox()), expected(&root));
}

#[test]
fn a_tree_goes_from_the_blocking_driver() {
    let dir = TempDir::new("mio");
    let root = source_tree(&dir);
    let ctx = zmtp_mio::Context::new().unwrap();
    let router = ctx.socket(zmtp_mio::SocketType::Router).unwrap();
    let ep = router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
    dealer.connect(&ep).unwrap();
    router.set_rcvtimeo(Some(LIMIT));
    dealer.set_rcvtimeo(Some(LIMIT));
    let options = small(&dir.inbox());
    let saving = std::thread::spawn(move || {
        zmtp_file::blocking::recv_files(&router, &options, Some(4), |_| {})
    });
    let named = SendOptions {
        name: Some("renamed/here".into()),
        digest_cache: None,
    };
    let report = zmtp_file::blocking::send_tree(&dealer, &root, &named, |_| {}).unwrap();
    assert!(report.all_saved(), "{report:?}");
    assert_eq!(report.saved.len(), 4);
    assert!(saving.join().unwrap().unwrap().len() == 4);
    let got = listing(&dir.inbox().join("renamed"));
    let want: Vec<_> = expected(&root)
        .into_iter()
        .map(|(p, c)| (p.replacen("src", "here", 1), c))
        .collect();
    assert_eq!(got, want);
}

/// One `send_tree` of `root` from a new DEALER to `receiver`, which waits for 3 files.
async fn once(
    receiver: &Socket,
    ep: &str,
    options: &RecvOptions,
    root: &Path,
) -> (zmtp_file::TreeReport, Vec<Outcome>) {
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(ep).unwrap();
    let plain = SendOptions::default();
    let (sent, received) = within(async {
        tokio::join!(
            send_tree(&sender, root, &plain, |_| {}),
            recv_files(receiver, options, Some(3), |_| {})
        )
    })
    .await;
    (sent.unwrap(), received.unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn a_tree_sent_again_sends_only_what_is_missing() {
    let dir = TempDir::new("resume");
    let root = dir.0.join("src");
    std::fs::create_dir_all(root.join("d")).unwrap();
    let big = content(1_000_000, 3);
    std::fs::write(root.join("d/big.bin"), &big).unwrap();
    std::fs::write(root.join("d/done.txt"), b"already there").unwrap();
    std::fs::write(root.join("gone.txt"), b"to send again").unwrap();
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let options = small(&dir.inbox());
    let (first, _) = once(&receiver, &ep, &options, &root).await;
    assert!(first.all_saved());
    // An interruption: one file lost, the big one cut to a part of 400,000 bytes (with
    // the record of its offer, as a receiver killed there leaves it).
    let inbox = dir.inbox().join("src");
    std::fs::remove_file(inbox.join("gone.txt")).unwrap();
    std::fs::remove_file(inbox.join("d/big.bin")).unwrap();
    std::fs::write(inbox.join("d/big.bin.zmtp-part"), &big[..400_000]).unwrap();
    std::fs::write(
        inbox.join("d/big.bin.zmtp-part.offer"),
        wire::encode_part_record(big.len() as u64, &wire::digest(&big)),
    )
    .unwrap();
    let (second, outcomes) = once(&receiver, &ep, &options, &root).await;
    assert!(second.all_saved(), "{second:?}");
    let sent: Vec<(&str, u64)> = second
        .saved
        .iter()
        .map(|s| (s.name.as_str(), s.sent))
        .collect();
    // The small files go whole in their PUTs (13 bytes each): the receiver writes only
    // the one it lacks.
    assert_eq!(
        sent,
        [
            ("src/d/big.bin", 600_000),
            ("src/d/done.txt", 13),
            ("src/gone.txt", 13)
        ]
    );
    let saved: Vec<_> = outcomes.into_iter().map(|o| o.saved().unwrap()).collect();
    assert!(saved[1].unchanged && !saved[0].unchanged && !saved[2].unchanged);
    assert_eq!(
        (saved[0].resumed_from, saved[0].fetched),
        (400_000, 600_000)
    );
    assert_eq!(std::fs::read(inbox.join("d/big.bin")).unwrap(), big);
    assert_eq!(
        std::fs::read(inbox.join("gone.txt")).unwrap(),
        b"to send again"
    );
    // A file changed at the source since is not taken for done: refused, not replaced.
    std::fs::write(root.join("d/done.txt"), b"already THERE").unwrap();
    let (third, _) = once(&receiver, &ep, &options, &root).await;
    assert_eq!(third.failed.len(), 1);
    assert!(
        third.failed[0].error.to_string().contains("other content"),
        "{}",
        third.failed[0].error
    );
    assert_eq!(
        std::fs::read(inbox.join("d/done.txt")).unwrap(),
        b"already there"
    );
}

/// A tree may hold a file and another named like the first one's part used to be
/// (`a` and `a.part`): both arrive whole, whatever their order. A file named like a part
/// now is (`a.zmtp-part`) is reported as not sendable.
#[tokio::test(flavor = "current_thread")]
async fn files_named_like_parts_arrive_whole_and_the_reserved_names_are_refused() {
    let dir = TempDir::new("partnames");
    let root = dir.0.join("src");
    std::fs::create_dir_all(&root).unwrap();
    let a = content(300_000, 5);
    let a_part = content(200_000, 6);
    std::fs::write(root.join("a"), &a).unwrap();
    std::fs::write(root.join("a.part"), &a_part).unwrap();
    std::fs::write(root.join("a.part.offer"), b"not a record").unwrap();
    std::fs::write(root.join("a.zmtp-part"), b"reserved").unwrap();
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let options = small(&dir.inbox());
    let (report, _) = once(&receiver, &ep, &options, &root).await;
    let inbox = dir.inbox().join("src");
    assert_eq!(std::fs::read(inbox.join("a")).unwrap(), a);
    assert_eq!(std::fs::read(inbox.join("a.part")).unwrap(), a_part);
    assert_eq!(
        std::fs::read(inbox.join("a.part.offer")).unwrap(),
        b"not a record"
    );
    assert!(!inbox.join("a.zmtp-part").exists());
    assert_eq!(report.saved.len(), 3, "{report:?}");
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(report.failed[0].name, "src/a.zmtp-part");
    assert!(
        report.failed[0].error.to_string().contains("part files"),
        "{}",
        report.failed[0].error
    );
    let mut names: Vec<_> = std::fs::read_dir(&inbox)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "a.part", "a.part.offer"]);
}

#[tokio::test(flavor = "current_thread")]
async fn an_old_sha256_part_record_starts_over() {
    let dir = TempDir::new("oldrecord");
    let data = content(300_000, 4);
    let source = dir.0.join("f.bin");
    std::fs::write(&source, &data).unwrap();
    // A part and the 40-byte record (size, SHA-256) an earlier version left.
    std::fs::write(dir.inbox().join("f.bin.zmtp-part"), &data[..100_000]).unwrap();
    let mut old = (data.len() as u64).to_be_bytes().to_vec();
    old.extend([0x5a; 32]);
    std::fs::write(dir.inbox().join("f.bin.zmtp-part.offer"), &old).unwrap();
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let options = small(&dir.inbox());
    let (sent, received) = within(async {
        tokio::join!(
            zmtp_file::send_file(&sender, &source, None, |_| {}),
            recv_files(&receiver, &options, Some(1), |_| {})
        )
    })
    .await;
    assert_eq!(sent.unwrap().sent, 300_000);
    let saved = received.unwrap().remove(0).saved().unwrap();
    assert_eq!((saved.resumed_from, saved.fetched), (0, 300_000));
    assert_eq!(std::fs::read(&saved.path).unwrap(), data);
}

/// A raw DEALER speaking the wire format by hand.
struct Hostile {
    socket: Socket,
}

impl Hostile {
    fn new(ep: &str) -> Hostile {
        let socket = Socket::new(SocketType::Dealer).unwrap();
        socket.connect(ep).unwrap();
        Hostile { socket }
    }
    async fn send(&self, c: Command) {
        self.socket.send(Message::from(c.encode())).await.unwrap();
    }
    async fn offer(&self, name: &str, data: &[u8]) {
        self.send(Command::Offer(wire::Offer {
            name: name.into(),
            size: data.len() as u64,
            digest: wire::digest(data),
        }))
        .await;
    }
    async fn next(&self) -> Command {
        let msg = within(self.socket.recv()).await.unwrap();
        Command::decode(msg.frames()).unwrap()
    }
    /// Offer `name` holding `data`, answer its FETCHes: the receiver's final answer.
    async fn give(&self, name: &str, data: &[u8]) -> Command {
        self.offer(name, data).await;
        loop {
            match self.next().await {
                Command::Fetch { offset, length } => {
                    let r = offset as usize..offset as usize + length as usize;
                    self.send(Command::Chunk {
                        offset,
                        data: Bytes::copy_from_slice(&data[r]),
                    })
                    .await;
                }
                other => return other,
            }
        }
    }
}

fn refused(c: Command, what: &str) {
    match c {
        Command::Error(reason) => assert!(reason.contains(what), "{what:?} not in {reason:?}"),
        other => panic!("not refused ({what}): {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_tree_paths_are_refused_and_nothing_leaves_the_directory() {
    let dir = TempDir::new("hostile");
    let outside = dir.0.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(dir.0.join("target.txt"), b"keep").unwrap();
    let inbox = dir.inbox();
    // Links planted on the receiver's side: to a directory outside, and to a file.
    symlink(&outside, inbox.join("link")).unwrap();
    std::fs::create_dir_all(inbox.join("real")).unwrap();
    symlink(&outside, inbox.join("real/deeper")).unwrap();
    symlink(dir.0.join("target.txt"), inbox.join("file-link")).unwrap();
    std::fs::write(inbox.join("plain"), b"a file").unwrap();
    let options = small(&inbox);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let long = format!("t/{}/x", "n".repeat(256));
    let script = async {
        let h = Hostile::new(&ep);
        h.send(Command::Tree {
            files: 20,
            bytes: 100,
        })
        .await;
        refused(h.give("t/../../escape", b"x").await, "\"..\"");
        refused(h.give("t/a/../../../escape", b"x").await, "\"..\"");
        refused(h.give("/tmp/escape", b"x").await, "absolute");
        refused(h.give("link/escape", b"x").await, "symbolic link");
        refused(h.give("real/deeper/escape", b"x").await, "symbolic link");
        refused(h.give("file-link", b"x").await, "symbolic link");
        refused(h.give("plain/x", b"x").await, "not a directory");
        refused(h.give(&long, b"x").await, "256 bytes");
        refused(h.give("t/./x", b"x").await, "\".\"");
        // The receiver's own names: the part of `t/x`, and a directory named so.
        refused(h.give("t/x.zmtp-part", b"x").await, "part files");
        refused(h.give("t/d.zmtp-part.offer/x", b"x").await, "part files");
        // A file offered twice in one tree: the second is refused, the first kept.
        assert_eq!(h.give("t/twice", b"first").await, Command::Done);
        refused(h.give("t/twice", b"first").await, "twice");
        // Directories: the same rules.
        h.send(Command::Dir("t/../../up".into())).await;
        refused(h.next().await, "\"..\"");
        h.send(Command::Dir("link/sub".into())).await;
        refused(h.next().await, "symbolic link");
        h.send(Command::Dir("/abs".into())).await;
        refused(h.next().await, "absolute");
        h.send(Command::Dir("t/ok/deep".into())).await;
        assert_eq!(h.next().await, Command::Done);
        // A new tree: the path may be offered again (and is there already, the same).
        h.send(Command::Tree { files: 1, bytes: 5 }).await;
        assert_eq!(h.give("t/twice", b"first").await, Command::Done);
    };
    let (outcomes, ()) =
        within(async { tokio::join!(recv_files(&receiver, &options, Some(14), |_| {}), script) })
            .await;
    let outcomes = outcomes.unwrap();
    let saved = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Saved(_)))
        .count();
    assert_eq!(saved, 2, "{outcomes:?}");
    // Nothing was written through a link or outside the directory.
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(std::fs::read(dir.0.join("target.txt")).unwrap(), b"keep");
    let mut beside: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    beside.sort();
    assert_eq!(beside, ["in", "outside", "target.txt"]);
    let mut inside = listing(&inbox);
    inside.retain(|(p, _)| !p.contains("link") && !p.starts_with("real/deeper"));
    assert_eq!(
        inside,
        [
            ("plain".to_owned(), Some(b"a file".to_vec())),
            ("real".to_owned(), None),
            ("t".to_owned(), None),
            ("t/ok".to_owned(), None),
            ("t/ok/deep".to_owned(), None),
            ("t/twice".to_owned(), Some(b"first".to_vec())),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_puts_are_refused_and_puts_are_answered_in_order() {
    let dir = TempDir::new("puts");
    let inbox = dir.inbox();
    std::fs::create_dir_all(dir.0.join("outside")).unwrap();
    symlink(dir.0.join("outside"), inbox.join("link")).unwrap();
    let options = small(&inbox);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let put = |name: &str, size: u64, digest: [u8; 32], data: &[u8]| Command::Put {
        offer: wire::Offer {
            name: name.into(),
            size,
            digest,
        },
        data: Bytes::copy_from_slice(data),
    };
    let big = vec![7u8; wire::PUT_MAX as usize + 1];
    let script = async {
        let h = Hostile::new(&ep);
        h.send(put("short", 5, wire::digest(b"abcde"), b"abcd"))
            .await;
        refused(h.next().await, "holds 4 bytes, not the 5");
        h.send(put("long", 3, wire::digest(b"abc"), b"abcd")).await;
        refused(h.next().await, "holds 4 bytes");
        h.send(put("big", big.len() as u64, wire::digest(&big), &big))
            .await;
        refused(h.next().await, "more than 65536");
        h.send(put("forged", 3, wire::digest(b"xyz"), b"abc")).await;
        refused(h.next().await, "BLAKE3");
        h.send(put("link/x", 3, wire::digest(b"abc"), b"abc")).await;
        refused(h.next().await, "symbolic link");
        h.send(put("../x", 3, wire::digest(b"abc"), b"abc")).await;
        refused(h.next().await, "\"..\"");
        let mut frames = put("alg", 3, wire::digest(b"abc"), b"abc").encode();
        frames[3] = Bytes::from_static(b"sha256");
        h.socket.send(Message::from(frames)).await.unwrap();
        refused(
            h.next().await,
            "malformed PUT: unknown digest algorithm \"sha256\"",
        );
        // Five at once, without waiting: five answers, in order (the third refused).
        for i in 0..5u8 {
            let data = vec![i; 1000 * usize::from(i)];
            let digest = if i == 2 { [0; 32] } else { wire::digest(&data) };
            h.send(put(&format!("p/{i}"), data.len() as u64, digest, &data))
                .await;
        }
        for i in 0..5 {
            match h.next().await {
                Command::Done if i != 2 => {}
                Command::Error(reason) if i == 2 => assert!(reason.contains("\"p/2\"")),
                other => panic!("answer {i}: {other:?}"),
            }
        }
    };
    let (outcomes, ()) =
        within(async { tokio::join!(recv_files(&receiver, &options, Some(12), |_| {}), script) })
            .await;
    let saved: Vec<String> = outcomes
        .unwrap()
        .into_iter()
        .filter_map(|o| o.saved().map(|s| s.name))
        .collect();
    assert_eq!(saved, ["p/0", "p/1", "p/3", "p/4"]);
    assert_eq!(std::fs::read_dir(dir.0.join("outside")).unwrap().count(), 0);
    let mut got = listing(&inbox);
    got.retain(|(p, _)| !p.starts_with("link"));
    let names: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["p", "p/0", "p/1", "p/3", "p/4"]);
    assert_eq!(got[4].1.as_deref(), Some(&[4u8; 4000][..]));
}

#[test]
fn random_hostile_messages_never_write_outside_the_directory() {
    let dir = TempDir::new("random");
    let inbox = dir.inbox();
    let outside = dir.0.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, inbox.join("link")).unwrap();
    symlink(outside.join("target"), inbox.join("dangling")).unwrap();
    let mut receiver = zmtp_file::FileReceiver::new(small(&inbox));
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let parts = [
        "a",
        "..",
        ".",
        "link",
        "dangling",
        "",
        "b",
        "c.zmtp-part",
        "/",
    ];
    let path = |next: &mut dyn FnMut(u64) -> u64| -> String {
        (0..1 + next(4))
            .map(|_| parts[next(parts.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join("/")
    };
    for i in 0..3000u64 {
        let peer = Bytes::from(vec![next(3) as u8 + 1]);
        let data = vec![i as u8; next(300) as usize];
        let offer = wire::Offer {
            name: path(&mut next),
            size: if next(4) == 0 {
                next(1000)
            } else {
                data.len() as u64
            },
            digest: if next(3) == 0 {
                [0; 32]
            } else {
                wire::digest(&data)
            },
        };
        let command = match next(7) {
            0 => Command::Offer(offer),
            1 | 2 => Command::Put {
                offer,
                data: Bytes::from(data),
            },
            3 => Command::Dir(path(&mut next)),
            4 => Command::Tree { files: 3, bytes: 9 },
            5 => Command::Chunk {
                offset: next(400),
                data: Bytes::from(data),
            },
            _ => Command::Cancel("bye".into()),
        };
        let mut frames = vec![peer];
        frames.extend(command.encode());
        let _ = receiver.handle(frames, &mut |_| {});
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    let mut beside: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    beside.sort();
    assert_eq!(beside, ["in", "outside"]);
    // The links are still links, and something was saved (the generator makes valid
    // offers too).
    assert!(std::fs::symlink_metadata(inbox.join("link"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(listing(&inbox).iter().any(|(_, c)| c.is_some()));
}

#[tokio::test(flavor = "current_thread")]
async fn a_large_part_is_resumed_and_its_prefix_counts_toward_the_digest() {
    let dir = TempDir::new("bigpart");
    let data = content(3 << 20, 8);
    let source = dir.0.join("big.bin");
    std::fs::write(&source, &data).unwrap();
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let options = small(&dir.inbox());
    let part = dir.inbox().join("big.bin.zmtp-part");
    let record = wire::encode_part_record(data.len() as u64, &wire::digest(&data));
    // First a part whose first byte was damaged: what is fetched matches, the whole does
    // not, and nothing is kept. Then an intact part: the rest is fetched and it is saved.
    for damaged in [true, false] {
        let mut prefix = data[..1 << 20].to_vec();
        if damaged {
            prefix[0] ^= 1;
        }
        std::fs::write(&part, &prefix).unwrap();
        std::fs::write(dir.inbox().join("big.bin.zmtp-part.offer"), record).unwrap();
        let sender = Socket::new(SocketType::Dealer).unwrap();
        sender.connect(&ep).unwrap();
        let (sent, received) = within(async {
            tokio::join!(
                zmtp_file::send_file(&sender, &source, None, |_| {}),
                recv_files(&receiver, &options, Some(1), |_| {})
            )
        })
        .await;
        let outcome = received.unwrap().remove(0);
        if damaged {
            let err = sent.unwrap_err().to_string();
            assert!(err.contains("BLAKE3"), "{err}");
            assert!(matches!(outcome, Outcome::Failed(_)));
            assert!(!part.exists() && !dir.inbox().join("big.bin").exists());
        } else {
            assert_eq!(sent.unwrap().sent, 2 << 20);
            let saved = outcome.saved().unwrap();
            assert_eq!((saved.resumed_from, saved.fetched), (1 << 20, 2 << 20));
            assert_eq!(std::fs::read(&saved.path).unwrap(), data);
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_tree_sent_twice_takes_its_large_files_digests_from_the_cache() {
    let dir = TempDir::new("cache");
    let root = dir.0.join("src");
    std::fs::create_dir_all(&root).unwrap();
    for n in 0..5u64 {
        std::fs::write(root.join(format!("big{n}.bin")), content(100_000, n)).unwrap();
    }
    std::fs::write(root.join("small.txt"), b"small").unwrap();
    // Older than the time a digest must have settled for the cache to keep it.
    std::thread::sleep(Duration::from_millis(200));
    let cache_file = dir.0.join("digests");
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut options = small(&dir.inbox());
    options.overwrite = true;
    for round in 0..2 {
        let send_options = SendOptions {
            name: None,
            digest_cache: Some(zmtp_file::DigestCache::persistent(&cache_file)),
        };
        let sender = Socket::new(SocketType::Dealer).unwrap();
        sender.connect(&ep).unwrap();
        let (sent, received) = within(async {
            tokio::join!(
                send_tree(&sender, &root, &send_options, |_| {}),
                recv_files(&receiver, &options, Some(6), |_| {})
            )
        })
        .await;
        let report = sent.unwrap();
        assert!(report.all_saved(), "{report:?}");
        assert!(received
            .unwrap()
            .iter()
            .all(|o| matches!(o, Outcome::Saved(_))));
        let cached: Vec<bool> = report.saved.iter().map(|r| r.digest_cached).collect();
        // The five large files: hashed the first time, from the cache file the second;
        // the small one (under 64 KiB) hashed both times.
        let want = [round == 1; 5]
            .into_iter()
            .chain([false])
            .collect::<Vec<_>>();
        assert_eq!(cached, want, "round {round}");
        // The deferred writes were made when the tree ended.
        assert_eq!(zmtp_file::DigestCache::persistent(&cache_file).len(), 5);
    }
}
