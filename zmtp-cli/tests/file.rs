//! `zmtp send-file` and `zmtp recv-file`: a file end to end, with CURVE, refusals and their
//! exit codes, two senders at once, and a receiver killed halfway then resumed.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{ok, spawn, spawn_env, text, Running, GUARD};
use zmtp_tokio::{Bytes, Message, Socket, SocketType};

/// A fresh directory with an `in` directory inside, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("zmtp-cli-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        TempDir(dir)
    }
    fn inbox(&self) -> String {
        self.0.join("in").display().to_string()
    }
    fn file(&self, name: &str, data: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, data).unwrap();
        path.display().to_string()
    }
    fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.0.join("in"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

/// `recv-file` bound to a free port with `extra` options; it and its endpoint.
fn receiver(dir: &TempDir, extra: &[&str]) -> (Running, String) {
    let inbox = dir.inbox();
    let mut args = vec![
        "recv-file",
        "-b",
        "tcp://127.0.0.1:*",
        "-v",
        "--dir",
        &inbox,
        "--timeout",
        GUARD,
    ];
    args.extend_from_slice(extra);
    let mut r = spawn(&args, None);
    let ep = r.bound_endpoint();
    (r, ep)
}

/// `send-file` of `file` to `ep` with `extra` options; its digest cache is kept in the
/// `cache` directory beside the file (`$XDG_CACHE_HOME`), never in the user's.
fn send_file(ep: &str, file: &str, extra: &[&str]) -> Running {
    let mut args = vec!["send-file", "-c", ep, file, "--timeout", GUARD];
    args.extend_from_slice(extra);
    let cache = Path::new(file).parent().unwrap().join("cache");
    spawn_env(&args, &[("XDG_CACHE_HOME", cache.as_os_str())])
}

#[test]
fn a_file_end_to_end_quietly_when_not_on_a_terminal() {
    let dir = TempDir::new("e2e");
    let data = content(2_000_000, 1);
    let file = dir.file("payload.bin", &data);
    let (r, ep) = receiver(&dir, &["-n", "1", "--window", "3", "--chunk", "100000"]);
    let s = send_file(&ep, &file, &["--name", "renamed.bin"]).finish();
    ok(&s);
    // No progress bar, nothing at all on standard error or output without -v.
    assert!(s.stderr.is_empty() && s.stdout.is_empty(), "{s:?}");
    let r = r.finish();
    ok(&r);
    let saved = dir.0.join("in").join("renamed.bin");
    assert_eq!(text(&r.stdout), format!("{}\n", saved.display()));
    assert!(
        r.stderr
            .contains("saved \"renamed.bin\": 2000000 bytes, 2000000 fetched, resumed at 0"),
        "{r:?}"
    );
    assert!(!r.stderr.contains('\r'), "no progress bar drawn: {r:?}");
    assert_eq!(std::fs::read(saved).unwrap(), data);
    assert_eq!(dir.listing(), ["renamed.bin"]);
}

#[test]
fn curve_end_to_end_and_a_wrong_server_key_fails() {
    let dir = TempDir::new("curve");
    let file = dir.file("c.bin", &content(300_000, 2));
    let server = zmtp_tokio::curve_keypair().unwrap();
    let client = zmtp_tokio::curve_keypair().unwrap();
    let (secret, public) = (
        server.secret.to_z85().to_string(),
        server.public.to_z85().to_string(),
    );
    let (csecret, cpublic) = (
        client.secret.to_z85().to_string(),
        client.public.to_z85().to_string(),
    );
    let (r, ep) = receiver(
        &dir,
        &[
            "-n",
            "1",
            &format!("--curve-server-secret={secret}"),
            &format!("--allow-client={cpublic}"),
        ],
    );
    // Keys may begin with '-': each is given as --option=KEY.
    let server_key = format!("--curve-server-key={public}");
    // A client with a key the server does not allow is refused (exit 2).
    let stranger = send_file(&ep, &file, &[&server_key]).finish();
    assert_eq!(stranger.code, Some(2), "{stranger:?}");
    assert!(
        stranger.stderr.contains("authentication failed"),
        "{stranger:?}"
    );
    let s = send_file(
        &ep,
        &file,
        &[&server_key, &format!("--curve-secret={csecret}")],
    )
    .finish();
    ok(&s);
    let r = r.finish();
    ok(&r);
    assert_eq!(
        std::fs::read(dir.0.join("in/c.bin")).unwrap(),
        content(300_000, 2)
    );
}

#[test]
fn refusals_exit_2_on_both_sides_and_create_nothing() {
    let dir = TempDir::new("refuse");
    let file = dir.file("big.bin", &content(5000, 3));
    std::fs::write(dir.0.join("in/taken.bin"), b"mine").unwrap();
    for (extra, name, says) in [
        (&["--max-size", "4999"][..], "big.bin", "more than the 4999"),
        (&[][..], "taken.bin", "exists already"),
    ] {
        let mut args = vec!["-n", "1"];
        args.extend_from_slice(extra);
        let (r, ep) = receiver(&dir, &args);
        let s = send_file(&ep, &file, &["--name", name]).finish();
        assert_eq!(s.code, Some(2), "{s:?}");
        assert!(
            s.stderr.contains("the receiver refused") && s.stderr.contains(says),
            "{s:?}"
        );
        let r = r.finish();
        assert_eq!(r.code, Some(2), "{r:?}");
        assert!(r.stdout.is_empty());
        assert!(
            r.stderr.contains(&format!("refused \"{name}\"")) && r.stderr.contains(says),
            "{r:?}"
        );
        assert!(r.stderr.contains("1 of 1 transfers failed"), "{r:?}");
        assert_eq!(dir.listing(), ["taken.bin"]);
        assert_eq!(std::fs::read(dir.0.join("in/taken.bin")).unwrap(), b"mine");
    }
    // With --overwrite the file is replaced.
    let (r, ep) = receiver(&dir, &["-n", "1", "--overwrite"]);
    ok(&send_file(&ep, &file, &["--name", "taken.bin"]).finish());
    ok(&r.finish());
    assert_eq!(
        std::fs::read(dir.0.join("in/taken.bin")).unwrap(),
        content(5000, 3)
    );
}

#[test]
fn a_hostile_name_is_refused_with_a_message_on_the_receiver() {
    let dir = TempDir::new("hostile");
    let (r, ep) = receiver(&dir, &["-n", "1"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = rt.block_on(async {
        let dealer = Socket::new(SocketType::Dealer).unwrap();
        dealer.connect(&ep).unwrap();
        let frames = vec![
            Bytes::from_static(b"OFFER"),
            Bytes::from_static(b"../../etc/evil"),
            Bytes::copy_from_slice(&10u64.to_be_bytes()),
            Bytes::from_static(b"blake3"),
            Bytes::copy_from_slice(&[0; 32]),
        ];
        dealer.send(Message::from(frames)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), dealer.recv())
            .await
            .unwrap()
            .unwrap()
    });
    assert_eq!(&answer.frames()[0][..], b"ERROR");
    let r = r.finish();
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr.contains("refused \"../../etc/evil\"") && r.stderr.contains("\"..\""),
        "{r:?}"
    );
    assert!(dir.listing().is_empty());
    assert!(!dir.0.join("etc").exists());
}

#[test]
fn a_malformed_offer_is_counted_and_reported_on_the_receiver() {
    let dir = TempDir::new("malformed");
    let (r, ep) = receiver(&dir, &["-n", "1"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = rt.block_on(async {
        let dealer = Socket::new(SocketType::Dealer).unwrap();
        dealer.connect(&ep).unwrap();
        let frames = vec![
            Bytes::from_static(b"OFFER"),
            Bytes::from_static(b"caf\xe9.bin"),
            Bytes::copy_from_slice(&10u64.to_be_bytes()),
            Bytes::from_static(b"blake3"),
            Bytes::copy_from_slice(&[0; 32]),
        ];
        dealer.send(Message::from(frames)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), dealer.recv())
            .await
            .unwrap()
            .unwrap()
    });
    assert_eq!(&answer.frames()[0][..], b"ERROR");
    // -n 1 counts it: the receiver ends, with a transfer that failed (exit 2).
    let r = r.finish();
    assert_eq!(r.code, Some(2), "{r:?}");
    let refused = r
        .stderr
        .lines()
        .find(|l| l.starts_with("zmtp: refused"))
        .unwrap_or_else(|| panic!("{r:?}"));
    let (start, end) = refused.split_once(" from ").unwrap();
    assert_eq!(start, "zmtp: refused \"caf\u{FFFD}.bin\"");
    assert!(
        end.ends_with(": malformed OFFER: the name is not UTF-8"),
        "{refused}"
    );
    assert!(
        r.stderr.ends_with("zmtp: 1 of 1 transfers failed\n"),
        "{r:?}"
    );
    assert!(dir.listing().is_empty());
}

#[test]
fn recv_file_mkdir_creates_the_directory_and_a_file_is_not_one() {
    let dir = TempDir::new("mkdir");
    let new = dir.0.join("new").join("inbox");
    let new_text = new.display().to_string();
    let args = [
        "recv-file",
        "-b",
        "tcp://127.0.0.1:*",
        "--dir",
        &new_text,
        "--mkdir",
        "-n",
        "1",
        "--timeout",
        "300",
    ];
    let out = spawn(&args, None).finish();
    // Past the directory's check: it waited for a sender until --timeout (exit 3).
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(new.is_dir());
    let file = dir.file("plain", b"x");
    let out = spawn(
        &[
            "recv-file",
            "-b",
            "tcp://127.0.0.1:*",
            "--dir",
            &file,
            "--mkdir",
        ],
        None,
    )
    .finish();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        format!("zmtp: --dir {file}: not a directory (see 'zmtp recv-file --help')\n")
    );
}

#[test]
fn two_senders_at_once() {
    let dir = TempDir::new("two");
    let a = dir.file("a.bin", &content(1_500_000, 4));
    let b = dir.file("b.bin", &content(1_200_000, 5));
    let (r, ep) = receiver(&dir, &["-n", "2", "--chunk", "65536"]);
    let sa = send_file(&ep, &a, &[]);
    let sb = send_file(&ep, &b, &[]);
    ok(&sa.finish());
    ok(&sb.finish());
    let r = r.finish();
    ok(&r);
    assert_eq!(text(&r.stdout).lines().count(), 2, "{r:?}");
    assert_eq!(
        std::fs::read(dir.0.join("in/a.bin")).unwrap(),
        content(1_500_000, 4)
    );
    assert_eq!(
        std::fs::read(dir.0.join("in/b.bin")).unwrap(),
        content(1_200_000, 5)
    );
}

/// A parsed "saved NAME: SIZE bytes, FETCHED fetched, resumed at FROM" line.
fn saved_counts(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" fetched, resumed at "))
        .unwrap_or_else(|| panic!("no saved line in {stderr}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let [.., size, fetched, from] = nums[..] else {
        panic!("{line}")
    };
    (size, fetched, from)
}

#[test]
fn a_receiver_killed_halfway_resumes_and_fetches_only_the_rest() {
    let dir = TempDir::new("resume");
    let size = 4usize << 20;
    let data = content(size, 6);
    let file = PathBuf::from(dir.file("big.bin", &data));
    let inbox = dir.inbox();
    let part = dir.0.join("in/big.bin.zmtp-part");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The sender runs here (and binds); the receiver is a child process that connects.
    let receiver_args = |ep: &str| -> Vec<String> {
        [
            "recv-file",
            "-c",
            ep,
            "-v",
            "--dir",
            &inbox,
            "-n",
            "1",
            "--window",
            "2",
            "--chunk",
            "65536",
            "--timeout",
            GUARD,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let spawn_receiver = |ep: &str| {
        let args = receiver_args(ep);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn(&args, None)
    };
    let part_len_at_kill = rt.block_on(async {
        let sender = Socket::new(SocketType::Dealer).unwrap();
        let ep = sender.bind("tcp://127.0.0.1:*").await.unwrap();
        let mut child = Some(spawn_receiver(&ep));
        let killed = Arc::new(tokio::sync::Notify::new());
        let k = killed.clone();
        let transfer = zmtp_file::send_file(&sender, &file, None, |p| {
            if p.phase == zmtp_file::Phase::Sending && p.done >= size as u64 / 2 {
                // Dropping it kills the process (SIGKILL) and waits for it.
                if child.take().is_some() {
                    k.notify_one();
                }
            }
        });
        tokio::select! {
            r = transfer => panic!("the transfer ended before the kill: {r:?}"),
            () = killed.notified() => {}
            () = tokio::time::sleep(Duration::from_secs(20)) => panic!("no progress"),
        }
        std::fs::metadata(&part).unwrap().len()
    });
    assert!(
        part_len_at_kill >= size as u64 / 4 && part_len_at_kill < size as u64,
        "killed at about half: {part_len_at_kill} of {size}"
    );
    assert_eq!(
        dir.listing(),
        ["big.bin.zmtp-part", "big.bin.zmtp-part.offer"]
    );
    // Second run: a new receiver resumes from the part; the sender counts what it sends.
    let (sent, out) = rt.block_on(async {
        let sender = Socket::new(SocketType::Dealer).unwrap();
        let ep = sender.bind("tcp://127.0.0.1:*").await.unwrap();
        let child = spawn_receiver(&ep);
        let report = tokio::time::timeout(
            Duration::from_secs(20),
            zmtp_file::send_file(&sender, &file, None, |_| {}),
        )
        .await
        .unwrap()
        .unwrap();
        (report.sent, child.finish())
    });
    ok(&out);
    let (total, fetched, from) = saved_counts(&out.stderr);
    assert_eq!(total, size as u64);
    assert_eq!(from, part_len_at_kill);
    assert_eq!(fetched, size as u64 - part_len_at_kill);
    assert_eq!(sent, fetched, "the sender sent only the rest");
    eprintln!(
        "resume: part of {part_len_at_kill} of {size} bytes at the kill; the second run \
         fetched {fetched} bytes (the sender sent {sent}), resumed at {from}"
    );
    assert_eq!(std::fs::read(dir.0.join("in/big.bin")).unwrap(), data);
    assert_eq!(dir.listing(), ["big.bin"]);
}

#[test]
fn usage_errors() {
    for (args, needle) in [
        (&["recv-file", "-b", "tcp://127.0.0.1:*"][..], "--dir"),
        (&["recv-file", "--dir", "/tmp"][..], "endpoint"),
        (
            &["recv-file", "-b", "x", "--dir", "/tmp", "--window", "0"][..],
            "--window",
        ),
        (
            &[
                "recv-file",
                "-b",
                "x",
                "--dir",
                "/tmp",
                "--chunk",
                "99999999",
            ][..],
            "--chunk",
        ),
        (&["send-file", "-c", "x"][..], "FILE"),
        (
            &["send-file", "-c", "x", "f", "--plain-user", "u"][..],
            "--plain-password",
        ),
    ] {
        let out = spawn(args, None).finish();
        assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
        assert!(out.stderr.contains(needle), "{args:?}: {out:?}");
    }
    let out = spawn(
        &[
            "recv-file",
            "-b",
            "tcp://127.0.0.1:*",
            "--dir",
            "/nonexistent-dir-x",
        ],
        None,
    )
    .finish();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        "zmtp: --dir /nonexistent-dir-x: no such directory: create it, or add --mkdir (see \
         'zmtp recv-file --help')\n"
    );
    let out = spawn(
        &[
            "send-file",
            "-c",
            "tcp://127.0.0.1:1",
            "f",
            "--name",
            "a/../b",
        ],
        None,
    )
    .finish();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("--name"), "{out:?}");
}

/// The digest cache file of the senders of `dir` (see [`send_file`]).
fn cache_file(dir: &TempDir) -> PathBuf {
    dir.0.join("cache/zmtp/digests")
}

/// `file`, written and then left alone long enough for its digest to be cached.
fn settled_file(dir: &TempDir, name: &str, data: &[u8]) -> String {
    let file = dir.file(name, data);
    std::thread::sleep(Duration::from_millis(200));
    file
}

#[test]
fn a_second_send_takes_the_digest_from_the_cache_unless_told_not_to() {
    let dir = TempDir::new("cache");
    let data = content(500_000, 7);
    let file = settled_file(&dir, "cached.bin", &data);
    let send = |extra: &[&str]| {
        let (r, ep) = receiver(&dir, &["-n", "1", "--overwrite"]);
        let mut args = vec!["-v"];
        args.extend_from_slice(extra);
        let s = send_file(&ep, &file, &args).finish();
        ok(&s);
        ok(&r.finish());
        assert_eq!(std::fs::read(dir.0.join("in/cached.bin")).unwrap(), data);
        s.stderr
    };
    // Without the cache: computed, and no cache file written.
    let stderr = send(&["--no-digest-cache"]);
    assert!(stderr.contains("digest computed"), "{stderr}");
    assert!(!cache_file(&dir).exists());
    // First with it: computed and recorded; then taken from the file.
    let stderr = send(&[]);
    assert!(stderr.contains("digest computed"), "{stderr}");
    let recorded = std::fs::read_to_string(cache_file(&dir)).unwrap();
    assert_eq!(recorded.lines().count(), 2, "{recorded}");
    let stderr = send(&[]);
    assert!(stderr.contains("digest from the cache"), "{stderr}");
    // --no-digest-cache ignores what is recorded.
    let stderr = send(&["--no-digest-cache"]);
    assert!(stderr.contains("digest computed"), "{stderr}");
    // Rewritten with the same size: hashed again.
    let other = content(500_000, 8);
    std::fs::write(&file, &other).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (r, ep) = receiver(&dir, &["-n", "1", "--overwrite"]);
    let s = send_file(&ep, &file, &["-v"]).finish();
    ok(&s);
    ok(&r.finish());
    assert!(s.stderr.contains("digest computed"), "{s:?}");
    assert_eq!(std::fs::read(dir.0.join("in/cached.bin")).unwrap(), other);
}

#[test]
fn a_forged_cache_entry_is_caught_by_the_receiver() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let dir = TempDir::new("forged-cache");
    let data = content(300_000, 9);
    let file = settled_file(&dir, "forged.bin", &data);
    // An entry with this file's exact key and a wrong digest.
    let path = std::fs::canonicalize(&file).unwrap();
    let m = std::fs::metadata(&path).unwrap();
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let line = format!(
        "{} {} {} {} {} {} {} {} {}\n",
        hex(&[0x5a; 32]),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        hex(path.as_os_str().as_bytes())
    );
    std::fs::create_dir_all(cache_file(&dir).parent().unwrap()).unwrap();
    std::fs::write(
        cache_file(&dir),
        format!("zmtp-file digest cache 2 blake3\n{line}"),
    )
    .unwrap();
    let (r, ep) = receiver(&dir, &["-n", "1"]);
    let s = send_file(&ep, &file, &[]).finish();
    let r = r.finish();
    assert_eq!(s.code, Some(2), "{s:?}");
    assert!(s.stderr.contains("BLAKE3"), "{s:?}");
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("BLAKE3"), "{r:?}");
    // Nothing under the final name, no part.
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
    // The refused entry is gone: the next send hashes the file and succeeds.
    let (r, ep) = receiver(&dir, &["-n", "1"]);
    let s = send_file(&ep, &file, &["-v"]).finish();
    ok(&s);
    ok(&r.finish());
    assert!(s.stderr.contains("digest computed"), "{s:?}");
    assert_eq!(std::fs::read(dir.0.join("in/forged.bin")).unwrap(), data);
}

#[test]
fn a_silent_sender_is_given_up_after_the_idle_timeout_and_its_part_kept() {
    let dir = TempDir::new("idle");
    let (r, ep) = receiver(&dir, &["-n", "1", "--idle-timeout", "300"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let last = rt.block_on(async {
        let dealer = Socket::new(SocketType::Dealer).unwrap();
        dealer.connect(&ep).unwrap();
        let frames = vec![
            Bytes::from_static(b"OFFER"),
            Bytes::from_static(b"quiet.bin"),
            Bytes::copy_from_slice(&1_000_000u64.to_be_bytes()),
            Bytes::from_static(b"blake3"),
            Bytes::copy_from_slice(&[1; 32]),
        ];
        dealer.send(Message::from(frames)).await.unwrap();
        // Never a CHUNK: the FETCHes come, then the ERROR.
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(10), dealer.recv())
                .await
                .unwrap()
                .unwrap();
            if &msg.frames()[0][..] != b"FETCH" {
                return msg;
            }
        }
    });
    assert_eq!(&last.frames()[0][..], b"ERROR");
    let r = r.finish();
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr.contains("nothing from the sender for 0.300 s"),
        "{r:?}"
    );
    assert_eq!(
        dir.listing(),
        ["quiet.bin.zmtp-part", "quiet.bin.zmtp-part.offer"]
    );
}

/// A source tree under `dir`: `tree/` with small files at two depths, an empty directory,
/// a link (skipped), and `tree/z/big.bin` of `big` bytes (sent last).
fn tree(dir: &TempDir, big: usize) -> (PathBuf, Vec<u8>) {
    let root = dir.0.join("tree");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::create_dir_all(root.join("z")).unwrap();
    std::fs::write(root.join("a/one.txt"), b"one").unwrap();
    std::fs::write(root.join("a/b/two.txt"), b"two").unwrap();
    std::fs::write(root.join("three.txt"), b"three").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("a/link")).unwrap();
    let data = content(big, 11);
    std::fs::write(root.join("z/big.bin"), &data).unwrap();
    (root, data)
}

#[test]
fn a_tree_end_to_end_with_a_line_per_file() {
    let dir = TempDir::new("tree");
    let (root, data) = tree(&dir, 300_000);
    let (r, ep) = receiver(&dir, &["-n", "4"]);
    let s = send_file(&ep, root.to_str().unwrap(), &["-v"]).finish();
    ok(&s);
    for name in [
        "tree/a/one.txt",
        "tree/a/b/two.txt",
        "tree/three.txt",
        "tree/z/big.bin",
    ] {
        assert!(
            s.stderr.contains(&format!("sent \"{name}\"")),
            "{name}: {s:?}"
        );
    }
    assert!(
        s.stderr.contains("directory \"tree/empty\" created"),
        "{s:?}"
    );
    assert!(
        s.stderr.contains("skipped") && s.stderr.contains("a/link: a symbolic link"),
        "{s:?}"
    );
    let r = r.finish();
    ok(&r);
    let inbox = dir.0.join("in");
    assert_eq!(text(&r.stdout).lines().count(), 4, "{r:?}");
    assert_eq!(std::fs::read(inbox.join("tree/z/big.bin")).unwrap(), data);
    assert_eq!(
        std::fs::read(inbox.join("tree/a/b/two.txt")).unwrap(),
        b"two"
    );
    assert!(inbox.join("tree/empty").is_dir());
    assert!(!inbox.join("tree/a/link").exists());
    assert!(std::fs::symlink_metadata(inbox.join("tree/a/link")).is_err());
}

#[test]
fn a_tree_with_a_file_refused_exits_2_and_saves_the_others() {
    let dir = TempDir::new("tree-refused");
    let (root, _) = tree(&dir, 1000);
    std::fs::create_dir_all(dir.0.join("in/tree")).unwrap();
    std::fs::write(dir.0.join("in/tree/three.txt"), b"THREE").unwrap();
    let (r, ep) = receiver(&dir, &["-n", "4"]);
    let s = send_file(&ep, root.to_str().unwrap(), &[]).finish();
    assert_eq!(s.code, Some(2), "{s:?}");
    assert!(s.stderr.contains("not saved \"tree/three.txt\""), "{s:?}");
    assert!(
        s.stderr.ends_with("zmtp: 1 of 4 files were not saved\n"),
        "{s:?}"
    );
    let r = r.finish();
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(text(&r.stdout).lines().count(), 3, "{r:?}");
    assert_eq!(
        std::fs::read(dir.0.join("in/tree/three.txt")).unwrap(),
        b"THREE"
    );
    assert!(dir.0.join("in/tree/a/b/two.txt").exists());
}

#[test]
fn a_tree_sent_again_after_the_receiver_was_killed_sends_only_the_rest() {
    let dir = TempDir::new("tree-resume");
    let size = 4usize << 20;
    let (root, data) = tree(&dir, size);
    let inbox = dir.inbox();
    let part = dir.0.join("in/tree/z/big.bin.zmtp-part");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // First run: the sender here (bound), the receiver a child killed at about half of
    // the big file, which goes last.
    let part_len_at_kill = rt.block_on(async {
        let sender = Socket::new(SocketType::Dealer).unwrap();
        let ep = sender.bind("tcp://127.0.0.1:*").await.unwrap();
        let args = [
            "recv-file",
            "-c",
            &ep,
            "--dir",
            &inbox,
            "--window",
            "2",
            "--chunk",
            "65536",
            "--timeout",
            GUARD,
        ];
        let mut child = Some(spawn(&args, None));
        let killed = Arc::new(tokio::sync::Notify::new());
        let k = killed.clone();
        let options = zmtp_file::SendOptions::default();
        let transfer = zmtp_file::send_tree(&sender, &root, &options, |e| {
            if let zmtp_file::TreeEvent::Progress(p) = e {
                if p.bytes_done >= (size / 2) as u64 && child.take().is_some() {
                    k.notify_one();
                }
            }
        });
        tokio::select! {
            r = transfer => panic!("the tree ended before the kill: {r:?}"),
            () = killed.notified() => {}
            () = tokio::time::sleep(Duration::from_secs(20)) => panic!("no progress"),
        }
        std::fs::metadata(&part).unwrap().len()
    });
    assert!(
        part_len_at_kill > 0 && part_len_at_kill < size as u64,
        "killed within the big file: {part_len_at_kill} of {size}"
    );
    // Second run, both commands: the small files are answered at once, the big one
    // resumed from its part.
    let (r, ep) = receiver(&dir, &["-n", "4", "--window", "2", "--chunk", "65536"]);
    let s = send_file(&ep, root.to_str().unwrap(), &["-v"]).finish();
    ok(&s);
    let r = r.finish();
    ok(&r);
    for name in ["tree/a/one.txt", "tree/a/b/two.txt", "tree/three.txt"] {
        assert!(
            r.stderr.contains(&format!("saved \"{name}\": "))
                && s.stderr.contains(&format!("sent \"{name}\"")),
            "{name}: {r:?} {s:?}"
        );
    }
    assert_eq!(
        r.stderr
            .matches("there already with the same digest")
            .count(),
        3,
        "{r:?}"
    );
    let (total, fetched, from) = saved_counts(&r.stderr);
    assert_eq!((total, from), (size as u64, part_len_at_kill));
    assert_eq!(fetched, size as u64 - part_len_at_kill);
    assert!(
        s.stderr.contains(&format!(
            "sent \"tree/z/big.bin\": {size} bytes, {fetched} of them in this transfer"
        )),
        "{s:?}"
    );
    eprintln!(
        "tree resume: part of {part_len_at_kill} of {size} bytes at the kill; the second run \
         fetched {fetched} bytes and answered the 3 small files at once"
    );
    assert_eq!(
        std::fs::read(dir.0.join("in/tree/z/big.bin")).unwrap(),
        data
    );
}
