//! `send_file` and `recv_files` end to end on tokio and smol, and the receiver's rules
//! against a hostile sender written here against the wire format (a raw DEALER).

use std::path::{Path, PathBuf};
use std::time::Duration;

use zmtp_file::wire::{self, Command, Offer};
use zmtp_file::{recv_files, send_file, Outcome, Phase, RecvEvent, RecvOptions, TransferError};
use zmtp_tokio::{
    curve_keypair, Authenticator, Bytes, Message, Options, Security, Socket, SocketType,
};

/// A fresh empty directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zmtp-file-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        TempDir(dir)
    }
    fn inbox(&self) -> PathBuf {
        self.0.join("in")
    }
    /// The names in the receiver's directory, sorted.
    fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.inbox())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random content.
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

fn write_source(dir: &TempDir, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.0.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn sha(data: &[u8]) -> [u8; 32] {
    wire::digest(data)
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

#[tokio::test(flavor = "current_thread")]
async fn a_file_arrives_whole_on_tokio() {
    let dir = TempDir::new("tokio");
    let data = content(1_000_003, 1);
    let source = write_source(&dir, "data.bin", &data);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let options = small(&dir.inbox());
    let mut sent_progress = Vec::new();
    let mut outstanding_max = 0u64;
    let mut have_seen = Vec::new();
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |p| sent_progress.push(p)),
            recv_files(&receiver, &options, Some(1), |e| {
                if let RecvEvent::Progress { have, .. } = e {
                    have_seen.push(*have);
                }
            })
        )
    })
    .await;
    let sent = sent.unwrap();
    assert_eq!(
        (sent.name.as_str(), sent.size, sent.sent),
        ("data.bin", 1_000_003, 1_000_003)
    );
    assert_eq!(sent.digest, sha(&data));
    let saved = received.unwrap().remove(0).saved().expect("saved");
    assert_eq!(saved.path, dir.inbox().join("data.bin"));
    assert_eq!((saved.fetched, saved.resumed_from), (1_000_003, 0));
    assert_eq!(std::fs::read(&saved.path).unwrap(), data);
    // Only the final name is left: no part, no record.
    assert_eq!(dir.listing(), ["data.bin"]);
    // Progress: hashing, then sending, each rising to the size.
    assert_eq!(sent_progress.first().unwrap().phase, Phase::Hashing);
    let last = sent_progress.last().unwrap();
    assert_eq!(
        (last.phase, last.done, last.total),
        (Phase::Sending, 1_000_003, 1_000_003)
    );
    assert!(sent_progress
        .windows(2)
        .all(|w| w[0].phase != w[1].phase || w[0].done <= w[1].done));
    // 16 chunks of 64 KiB (the last short): one progress event each, rising.
    assert_eq!(have_seen.len(), 16);
    assert!(have_seen.windows(2).all(|w| w[0] < w[1]));
    for w in have_seen.windows(2) {
        outstanding_max = outstanding_max.max(w[1] - w[0]);
    }
    assert!(outstanding_max <= 64 << 10);
}

#[test]
fn a_file_arrives_whole_on_smol_with_the_sender_bound() {
    use zmtp_smol::{Socket, SocketType};
    let dir = TempDir::new("smol");
    let data = content(300_000, 2);
    let source = write_source(&dir, "s.bin", &data);
    zmtp_smol::block_on(async {
        let sender = Socket::new(SocketType::Dealer).unwrap();
        let ep = sender.bind("tcp://127.0.0.1:*").await.unwrap();
        let receiver = Socket::new(SocketType::Router).unwrap();
        receiver.connect(&ep).unwrap();
        let options = small(&dir.inbox());
        let (sent, received) = futures_join(
            send_file(&sender, &source, Some("renamed.bin"), |_| {}),
            zmtp_file::recv_file(&receiver, &options, |_| {}),
        )
        .await;
        assert_eq!(sent.unwrap().sent, 300_000);
        let saved = received.unwrap();
        assert_eq!(std::fs::read(saved.path).unwrap(), data);
    });
    assert_eq!(dir.listing(), ["renamed.bin"]);
}

/// Both futures to completion, on whatever runtime polls this.
async fn futures_join<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let std::task::Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let std::task::Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    (ra.unwrap(), rb.unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn two_senders_at_once_are_told_apart() {
    let dir = TempDir::new("two");
    let a = content(700_000, 3);
    let b = content(500_000, 4);
    let pa = write_source(&dir, "a.bin", &a);
    let pb = write_source(&dir, "b.bin", &b);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let s1 = Socket::new(SocketType::Dealer).unwrap();
    let s2 = Socket::new(SocketType::Dealer).unwrap();
    s1.connect(&ep).unwrap();
    s2.connect(&ep).unwrap();
    let options = small(&dir.inbox());
    // Interleaving: count the chunks that arrive for one peer while the other is active.
    let mut order: Vec<Bytes> = Vec::new();
    let (r1, r2, received) = within(async {
        tokio::join!(
            send_file(&s1, &pa, None, |_| {}),
            send_file(&s2, &pb, None, |_| {}),
            recv_files(&receiver, &options, Some(2), |e| {
                if let RecvEvent::Progress { peer, .. } = e {
                    order.push(peer.clone());
                }
            })
        )
    })
    .await;
    assert_eq!(r1.unwrap().sent, 700_000);
    assert_eq!(r2.unwrap().sent, 500_000);
    let outcomes = received.unwrap();
    assert_eq!(outcomes.len(), 2);
    let peers: std::collections::HashSet<Bytes> = outcomes
        .into_iter()
        .map(|o| o.saved().expect("saved").peer)
        .collect();
    assert_eq!(peers.len(), 2, "two routing ids");
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        switches >= 2,
        "the transfers ran at the same time ({switches} switches)"
    );
    assert_eq!(std::fs::read(dir.inbox().join("a.bin")).unwrap(), a);
    assert_eq!(std::fs::read(dir.inbox().join("b.bin")).unwrap(), b);
    assert_eq!(dir.listing(), ["a.bin", "b.bin"]);
}

#[tokio::test(flavor = "current_thread")]
async fn curve_end_to_end() {
    let dir = TempDir::new("curve");
    let data = content(200_000, 5);
    let source = write_source(&dir, "secret.bin", &data);
    let server_keys = curve_keypair().unwrap();
    let client_keys = curve_keypair().unwrap();
    let receiver = Socket::with_options(
        SocketType::Router,
        Options::default().with_security(Security::curve_server(server_keys.clone())),
    )
    .unwrap();
    receiver.set_authenticator(Some(Authenticator::new().curve_allow(client_keys.public)));
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::with_options(
        SocketType::Dealer,
        Options::default().with_security(Security::curve_client(server_keys.public, client_keys)),
    )
    .unwrap();
    sender.connect(&ep).unwrap();
    let options = small(&dir.inbox());
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |_| {}),
            recv_files(&receiver, &options, Some(1), |_| {})
        )
    })
    .await;
    assert_eq!(sent.unwrap().sent, 200_000);
    let saved = received.unwrap().remove(0).saved().expect("saved");
    assert_eq!(std::fs::read(saved.path).unwrap(), data);
}

#[tokio::test(flavor = "current_thread")]
async fn an_existing_file_is_refused_unless_overwrite_and_sizes_above_the_limit() {
    let dir = TempDir::new("exists");
    let data = content(10_000, 6);
    let source = write_source(&dir, "x.bin", &data);
    std::fs::write(dir.inbox().join("x.bin"), b"old").unwrap();
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut options = small(&dir.inbox());
    for (overwrite, max_size, expect) in [
        (false, u64::MAX, Some("exists")),
        (true, 9_999, Some("more than")),
        (true, 10_000, None),
    ] {
        options.overwrite = overwrite;
        options.max_size = max_size;
        let sender = Socket::new(SocketType::Dealer).unwrap();
        sender.connect(&ep).unwrap();
        let (sent, received) = within(async {
            tokio::join!(
                send_file(&sender, &source, None, |_| {}),
                recv_files(&receiver, &options, Some(1), |_| {})
            )
        })
        .await;
        let outcome = received.unwrap().remove(0);
        match expect {
            Some(what) => {
                let Err(TransferError::Refused(reason)) = sent else {
                    panic!("not refused: {sent:?}");
                };
                assert!(reason.contains(what), "{reason}");
                let Outcome::Failed(f) = outcome else {
                    panic!("saved")
                };
                assert_eq!(f.reason, reason);
                // Nothing created, the old file untouched.
                assert_eq!(dir.listing(), ["x.bin"]);
                assert_eq!(std::fs::read(dir.inbox().join("x.bin")).unwrap(), b"old");
            }
            None => {
                assert_eq!(sent.unwrap().sent, 10_000);
                assert!(outcome.saved().is_some());
                assert_eq!(std::fs::read(dir.inbox().join("x.bin")).unwrap(), data);
            }
        }
    }
}

/// A raw DEALER speaking the wire format by hand.
struct Hostile {
    socket: Socket,
}

impl Hostile {
    async fn new(ep: &str) -> Hostile {
        let socket = Socket::new(SocketType::Dealer).unwrap();
        socket.connect(ep).unwrap();
        Hostile { socket }
    }
    async fn send(&self, frames: Vec<Bytes>) {
        self.socket.send(Message::from(frames)).await.unwrap();
    }
    async fn offer(&self, name: &[u8], size: u64, digest: [u8; 32]) {
        self.offer_with(name, size, b"blake3", &digest).await;
    }
    async fn offer_with(&self, name: &[u8], size: u64, algorithm: &[u8], digest: &[u8]) {
        self.send(vec![
            Bytes::from_static(b"OFFER"),
            Bytes::copy_from_slice(name),
            Bytes::copy_from_slice(&size.to_be_bytes()),
            Bytes::copy_from_slice(algorithm),
            Bytes::copy_from_slice(digest),
        ])
        .await;
    }
    async fn chunk(&self, offset: u64, data: &[u8]) {
        self.send(vec![
            Bytes::from_static(b"CHUNK"),
            Bytes::copy_from_slice(&offset.to_be_bytes()),
            Bytes::copy_from_slice(data),
        ])
        .await;
    }
    /// The next command from the receiver.
    async fn next(&self) -> Command {
        let msg = within(self.socket.recv()).await.unwrap();
        Command::decode(msg.frames()).unwrap()
    }
}

/// Run the receiver for `count` transfers while `script` plays the hostile sender.
async fn against<F: std::future::Future<Output = ()>>(
    options: &RecvOptions,
    count: u64,
    script: impl FnOnce(String) -> F,
) -> Vec<Outcome> {
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let (outcomes, ()) = within(async {
        tokio::join!(
            recv_files(&receiver, options, Some(count), |_| {}),
            script(ep)
        )
    })
    .await;
    outcomes.unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_names_are_refused_and_create_nothing() {
    let dir = TempDir::new("names");
    let options = small(&dir.inbox());
    let long = vec![b'a'; 256];
    let bad: Vec<&[u8]> = vec![
        b"",
        b".",
        b"..",
        b"../escape",
        b"sub/../../file",
        b"sub//file",
        b"sub/",
        b"/etc/passwd",
        b"..\\win",
        b"nul\0byte",
        b"line\nbreak",
        b"\x1b[31m",
        &long,
    ];
    let n = bad.len() as u64;
    let outcomes = against(&options, n, |ep| async move {
        let h = Hostile::new(&ep).await;
        for name in &bad {
            h.offer(name, 10, [0; 32]).await;
            let Command::Error(reason) = h.next().await else {
                panic!("{name:?} not refused");
            };
            assert!(
                reason.contains("name") || reason.contains("absolute"),
                "{reason}"
            );
        }
    })
    .await;
    assert_eq!(outcomes.len() as u64, n);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Failed(_))));
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
    // Nor next to the directory.
    let beside: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
    assert_eq!(beside.len(), 1, "only the inbox");
}

#[tokio::test(flavor = "current_thread")]
async fn a_name_that_is_not_utf8_is_refused() {
    let dir = TempDir::new("utf8");
    let options = small(&dir.inbox());
    // An offer that does not decode is refused as one that does: both are counted.
    let outcomes = against(&options, 2, |ep| async move {
        let h = Hostile::new(&ep).await;
        h.offer(b"\xff\xfe", 10, [0; 32]).await;
        let Command::Error(reason) = h.next().await else {
            panic!("not refused");
        };
        assert!(reason.contains("UTF-8"), "{reason}");
        h.offer(b"..", 10, [0; 32]).await;
        assert!(matches!(h.next().await, Command::Error(_)));
    })
    .await;
    assert!(
        matches!(&outcomes[..], [Outcome::Failed(a), Outcome::Failed(b)]
            if a.name == "\u{FFFD}\u{FFFD}" && b.name == ".."),
        "{outcomes:?}"
    );
    assert!(dir.listing().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_chunks_abort_and_leave_nothing() {
    let dir = TempDir::new("chunks");
    let options = small(&dir.inbox()); // window 4 × 64 KiB
    let size = 600_000u64;
    let data = content(size as usize, 7);
    let digest = sha(&data);
    let k = 64 << 10;
    // Each case: what the hostile sender sends after the first FETCHes, and the word the
    // receiver's ERROR must hold.
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, Box<dyn Fn() -> (u64, Vec<u8>)>, &str)> = vec![
        (
            "not-requested",
            Box::new(|| (5 * k, vec![1; k as usize])),
            "not asked",
        ),
        (
            "out-of-order",
            Box::new(|| (k, vec![1; k as usize])),
            "not asked",
        ),
        (
            "longer",
            Box::new(|| (0, vec![1; k as usize + 1])),
            "longer",
        ),
        ("shorter", Box::new(|| (0, vec![1; 10])), "shorter"),
        ("past-size", Box::new(|| (size - 10, vec![1; 20])), "past"),
    ];
    let n = cases.len() as u64;
    let outcomes = against(&options, n, |ep| {
        let listing = || {
            let mut v: Vec<String> = std::fs::read_dir(dir.inbox())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        async move {
            for (name, make, word) in &cases {
                let h = Hostile::new(&ep).await;
                h.offer(name.as_bytes(), size, digest).await;
                for i in 0..4 {
                    assert_eq!(
                        h.next().await,
                        Command::Fetch {
                            offset: i * k,
                            length: k as u32
                        }
                    );
                }
                let (offset, bytes) = make();
                h.chunk(offset, &bytes).await;
                let Command::Error(reason) = h.next().await else {
                    panic!("{name}: not aborted");
                };
                assert!(reason.contains(word), "{name}: {reason}");
                // The part is gone, and no final name appeared.
                assert!(listing().is_empty(), "{name}: {:?}", listing());
            }
        }
    })
    .await;
    assert_eq!(outcomes.len() as u64, n);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Failed(_))));
}

#[tokio::test(flavor = "current_thread")]
async fn a_digest_mismatch_keeps_nothing_under_the_final_name() {
    let dir = TempDir::new("digest");
    let options = small(&dir.inbox());
    let data = content(100_000, 8);
    let outcomes = against(&options, 1, |ep| {
        let data = data.clone();
        async move {
            let h = Hostile::new(&ep).await;
            // Offered with the digest of other bytes.
            h.offer(b"forged.bin", 100_000, sha(b"something else"))
                .await;
            let mut asked = 0;
            loop {
                match h.next().await {
                    Command::Fetch { offset, length } => {
                        asked += 1;
                        let r = offset as usize..offset as usize + length as usize;
                        h.chunk(offset, &data[r]).await;
                    }
                    Command::Error(reason) => {
                        assert!(reason.contains("BLAKE3"), "{reason}");
                        break;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            assert_eq!(asked, 2);
        }
    })
    .await;
    assert!(matches!(&outcomes[..], [Outcome::Failed(_)]));
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
}

#[tokio::test(flavor = "current_thread")]
async fn stray_and_malformed_messages_are_answered_with_error() {
    let dir = TempDir::new("stray");
    let options = small(&dir.inbox());
    let outcomes = against(&options, 1, |ep| async move {
        let h = Hostile::new(&ep).await;
        h.chunk(0, b"uninvited").await;
        let Command::Error(reason) = h.next().await else {
            panic!("stray chunk accepted")
        };
        assert!(reason.contains("without a transfer"), "{reason}");
        h.send(vec![Bytes::from_static(b"GIMME")]).await;
        let Command::Error(reason) = h.next().await else {
            panic!("garbage accepted")
        };
        assert!(reason.contains("unknown command"), "{reason}");
        // A transfer in progress ends at a malformed message.
        h.offer(b"m.bin", 10, [0; 32]).await;
        assert!(matches!(h.next().await, Command::Fetch { .. }));
        h.send(vec![Bytes::from_static(b"CHUNK")]).await;
        let Command::Error(reason) = h.next().await else {
            panic!("malformed accepted")
        };
        assert!(reason.contains("malformed"), "{reason}");
    })
    .await;
    assert!(matches!(&outcomes[..], [Outcome::Failed(f)] if f.name == "m.bin"));
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
}

#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_transfer_resumes_from_its_part() {
    let dir = TempDir::new("resume");
    let options = small(&dir.inbox());
    let size = 1_000_000usize;
    let data = content(size, 9);
    let source = write_source(&dir, "big.bin", &data);
    let digest = sha(&data);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    // First: a sender that answers FETCHes up to about half, then cancels.
    let first = async {
        let h = Hostile::new(&ep).await;
        h.offer(b"big.bin", size as u64, digest).await;
        let mut answered = 0usize;
        while answered < size / 2 {
            let Command::Fetch { offset, length } = h.next().await else {
                panic!("not a fetch")
            };
            let r = offset as usize..offset as usize + length as usize;
            h.chunk(offset, &data[r]).await;
            answered += length as usize;
        }
        h.send(Command::Cancel("stopping halfway".into()).encode())
            .await;
        answered
    };
    let (outcomes, answered) =
        within(async { tokio::join!(recv_files(&receiver, &options, Some(1), |_| {}), first) })
            .await;
    let Outcome::Failed(f) = outcomes.unwrap().remove(0) else {
        panic!("saved")
    };
    assert!(f.reason.contains("cancelled"), "{}", f.reason);
    let part_len = std::fs::metadata(dir.inbox().join("big.bin.zmtp-part"))
        .unwrap()
        .len();
    assert_eq!(part_len as usize, answered);
    assert_eq!(
        dir.listing(),
        ["big.bin.zmtp-part", "big.bin.zmtp-part.offer"]
    );
    // Then the real sender: only the rest is fetched.
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let mut started_at = None;
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |_| {}),
            recv_files(&receiver, &options, Some(1), |e| {
                if let RecvEvent::Started { from, .. } = e {
                    started_at = Some(*from);
                }
            })
        )
    })
    .await;
    assert_eq!(started_at, Some(part_len));
    assert_eq!(sent.unwrap().sent, size as u64 - part_len);
    let saved = received.unwrap().remove(0).saved().expect("saved");
    assert_eq!(
        (saved.resumed_from, saved.fetched),
        (part_len, size as u64 - part_len)
    );
    assert_eq!(sha(&std::fs::read(saved.path).unwrap()), digest);
    assert_eq!(dir.listing(), ["big.bin"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_different_offer_under_the_same_name_starts_over() {
    let dir = TempDir::new("restart");
    let options = small(&dir.inbox());
    // A part recorded for another digest.
    std::fs::write(dir.inbox().join("f.bin.zmtp-part"), vec![0u8; 5000]).unwrap();
    std::fs::write(
        dir.inbox().join("f.bin.zmtp-part.offer"),
        wire::encode_part_record(20_000, &[1; 32]),
    )
    .unwrap();
    let data = content(20_000, 10);
    let source = write_source(&dir, "f.bin", &data);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |_| {}),
            recv_files(&receiver, &options, Some(1), |_| {})
        )
    })
    .await;
    assert_eq!(sent.unwrap().sent, 20_000);
    assert_eq!(received.unwrap().remove(0).saved().unwrap().resumed_from, 0);
    assert_eq!(std::fs::read(dir.inbox().join("f.bin")).unwrap(), data);
}

#[tokio::test(flavor = "current_thread")]
async fn a_sender_cancels_fetches_outside_its_file() {
    let dir = TempDir::new("hostile-recv");
    let source = write_source(&dir, "s.bin", &content(1000, 11));
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let fake_receiver = async {
        let mut msg = receiver.recv().await.unwrap().into_frames();
        let peer = msg.remove(0);
        let Ok(Command::Offer(Offer { size, .. })) = Command::decode(&msg) else {
            panic!("no offer")
        };
        assert_eq!(size, 1000);
        let mut fetch = vec![peer];
        fetch.extend(
            Command::Fetch {
                offset: 990,
                length: 100,
            }
            .encode(),
        );
        receiver.send(Message::from(fetch)).await.unwrap();
        let mut msg = receiver.recv().await.unwrap().into_frames();
        msg.remove(0);
        Command::decode(&msg).unwrap()
    };
    let (sent, answer) =
        within(async { tokio::join!(send_file(&sender, &source, None, |_| {}), fake_receiver) })
            .await;
    assert!(matches!(sent, Err(TransferError::Protocol(ref r)) if r.contains("past the end")));
    assert!(matches!(answer, Command::Cancel(ref r) if r.contains("past the end")));
}

#[tokio::test(flavor = "current_thread")]
async fn a_sender_refuses_a_bad_name_before_offering() {
    let dir = TempDir::new("badname");
    let source = write_source(&dir, "ok.bin", b"x");
    let sender = Socket::new(SocketType::Dealer).unwrap();
    for name in ["../up", "a//b", "/abs", "a/../b", ""] {
        let r = send_file(&sender, &source, Some(name), |_| {}).await;
        assert!(
            matches!(r, Err(TransferError::BadName(_))),
            "{name:?}: {r:?}"
        );
    }
}

#[test]
fn a_blocking_sender_on_mio_to_a_tokio_receiver() {
    let dir = TempDir::new("mio");
    let data = content(400_000, 12);
    let source = write_source(&dir, "m.bin", &data);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let receiver = rt
        .block_on(async { Socket::new(SocketType::Router) })
        .unwrap();
    let ep = rt.block_on(receiver.bind("tcp://127.0.0.1:*")).unwrap();
    let sending = std::thread::spawn(move || {
        let ctx = zmtp_mio::Context::new().unwrap();
        let dealer = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
        dealer.set_rcvtimeo(Some(LIMIT));
        dealer.connect(&ep).unwrap();
        zmtp_file::blocking::send_file(&dealer, &source, None, |_| {})
    });
    let options = small(&dir.inbox());
    let outcomes = rt
        .block_on(within(recv_files(&receiver, &options, Some(1), |_| {})))
        .unwrap();
    assert_eq!(sending.join().unwrap().unwrap().sent, 400_000);
    let saved = outcomes.into_iter().next().unwrap().saved().expect("saved");
    assert_eq!(std::fs::read(saved.path).unwrap(), data);
}

#[test]
fn the_two_sides_talk_without_a_socket() {
    use zmtp_file::{FileReceiver, FileSender, SendStep};
    let dir = TempDir::new("nosocket");
    let data = content(150_000, 13);
    let source = write_source(&dir, "n.bin", &data);
    let mut sender = FileSender::open(&source, None, &mut |_| {}).unwrap();
    let mut receiver = FileReceiver::new(small(&dir.inbox()));
    let peer = Bytes::from_static(b"\0peer");
    let routed = |frames: Vec<Bytes>| {
        let mut all = vec![peer.clone()];
        all.extend(frames);
        all
    };
    // Messages in flight each way, as the sockets would carry them.
    let mut to_receiver = vec![routed(sender.offer())];
    let mut messages = 0;
    let report = 'talk: loop {
        let mut to_sender = Vec::new();
        for m in to_receiver.drain(..) {
            let handled = receiver.handle(m, &mut |_| {});
            for mut reply in handled.replies {
                assert_eq!(
                    reply.remove(0),
                    peer,
                    "answers go to the sender's routing id"
                );
                to_sender.push(reply);
            }
        }
        assert!(!to_sender.is_empty(), "the exchange stalled");
        for m in to_sender {
            messages += 1;
            match sender.handle(&m, &mut |_| {}) {
                SendStep::Reply(frames) => to_receiver.push(routed(frames)),
                SendStep::Done(report) => break 'talk report,
                SendStep::Failed { error, .. } => panic!("{error}"),
            }
        }
    };
    // 3 chunks of 64 KiB (the last short), then DONE.
    assert_eq!(messages, 4);
    assert_eq!(report.sent, 150_000);
    assert_eq!(receiver.in_progress(), 0);
    assert_eq!(std::fs::read(dir.inbox().join("n.bin")).unwrap(), data);
}

#[tokio::test(flavor = "current_thread")]
async fn recv_file_reports_a_refusal_as_not_saved() {
    let dir = TempDir::new("notsaved");
    let source = write_source(&dir, "big.bin", &content(5000, 14));
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let mut options = small(&dir.inbox());
    options.max_size = 4096;
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |_| {}),
            zmtp_file::recv_file(&receiver, &options, |_| {})
        )
    })
    .await;
    assert!(matches!(sent, Err(TransferError::Refused(ref r)) if r.contains("4096")));
    let Err(TransferError::NotSaved(failed)) = received else {
        panic!("{received:?}")
    };
    assert_eq!(failed.name, "big.bin");
    assert!(dir.listing().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_silent_sender_times_out_and_its_part_is_kept_for_resume() {
    let dir = TempDir::new("idle");
    let mut options = small(&dir.inbox());
    options.idle_timeout = Some(Duration::from_millis(300));
    let size = 500_000usize;
    let data = content(size, 12);
    let source = write_source(&dir, "quiet.bin", &data);
    let digest = sha(&data);
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    // A sender that answers the first FETCH, then goes silent (without a CANCEL).
    let silent = async {
        let h = Hostile::new(&ep).await;
        h.offer(b"quiet.bin", size as u64, digest).await;
        let Command::Fetch { offset, length } = h.next().await else {
            panic!("not a fetch")
        };
        assert_eq!(offset, 0);
        h.chunk(0, &data[..length as usize]).await;
        // The receiver gives up on it with ERROR (after the FETCHes the chunk freed).
        let started = std::time::Instant::now();
        loop {
            match h.next().await {
                Command::Fetch { .. } => {}
                Command::Error(reason) => {
                    assert!(reason.contains("nothing from the sender"), "{reason}");
                    break;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
        length as u64
    };
    let (outcomes, answered) =
        within(async { tokio::join!(recv_files(&receiver, &options, Some(1), |_| {}), silent) })
            .await;
    let Outcome::Failed(f) = outcomes.unwrap().remove(0) else {
        panic!("saved")
    };
    assert!(f.reason.contains("nothing from the sender"), "{}", f.reason);
    // The part and its record are kept, the part holding what arrived.
    assert_eq!(
        dir.listing(),
        ["quiet.bin.zmtp-part", "quiet.bin.zmtp-part.offer"]
    );
    let part_len = std::fs::metadata(dir.inbox().join("quiet.bin.zmtp-part"))
        .unwrap()
        .len();
    assert_eq!(part_len, answered);
    // Holding only what arrived: the blocks reserved for the whole file went back.
    let allocated = {
        use std::os::unix::fs::MetadataExt;
        let part = std::fs::metadata(dir.inbox().join("quiet.bin.zmtp-part")).unwrap();
        part.blocks() * 512
    };
    assert!(
        allocated < size as u64 / 2,
        "{allocated} bytes allocated for {part_len}"
    );
    // A real sender resumes it.
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let (sent, received) = within(async {
        tokio::join!(
            send_file(&sender, &source, None, |_| {}),
            recv_files(&receiver, &options, Some(1), |_| {})
        )
    })
    .await;
    assert_eq!(sent.unwrap().sent, size as u64 - part_len);
    let saved = received.unwrap().remove(0).saved().expect("saved");
    assert_eq!(saved.resumed_from, part_len);
    assert_eq!(std::fs::read(saved.path).unwrap(), data);
}

#[test]
fn a_silent_sender_times_out_on_the_blocking_receiver_too() {
    let dir = TempDir::new("idle-mio");
    let mut options = small(&dir.inbox());
    options.idle_timeout = Some(Duration::from_millis(200));
    let ctx = zmtp_mio::Context::new().unwrap();
    let router = ctx.socket(zmtp_mio::SocketType::Router).unwrap();
    let ep = router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
    dealer.connect(&ep).unwrap();
    // An offer (of more than one range: a part of one range has no record, it is never
    // resumed), and then nothing but listening: the FETCHes, then the ERROR.
    let sender = std::thread::spawn(move || {
        let offer = Command::Offer(Offer {
            name: "mute.bin".into(),
            size: 100_000,
            digest: [7; 32],
        });
        dealer
            .send(zmtp_mio::Message::from(offer.encode()))
            .unwrap();
        loop {
            let msg = dealer.recv_timeout(Some(LIMIT)).unwrap();
            match Command::decode(msg.frames()).unwrap() {
                Command::Fetch { .. } => {}
                Command::Error(reason) => return reason,
                other => panic!("unexpected {other:?}"),
            }
        }
    });
    let outcomes = zmtp_file::blocking::recv_files(&router, &options, Some(1), |_| {}).unwrap();
    let Outcome::Failed(f) = &outcomes[0] else {
        panic!("saved")
    };
    assert!(f.reason.contains("nothing from the sender"), "{}", f.reason);
    assert_eq!(sender.join().unwrap(), f.reason);
    assert_eq!(
        dir.listing(),
        ["mute.bin.zmtp-part", "mute.bin.zmtp-part.offer"]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_symlink_planted_as_the_part_is_not_followed() {
    let dir = TempDir::new("symlink");
    let options = small(&dir.inbox());
    // A file outside the receiver's directory, and links to it where the part and the
    // record of two offered names would go.
    let outside = dir.0.join("outside.txt");
    std::fs::write(&outside, b"not yours").unwrap();
    std::os::unix::fs::symlink(&outside, dir.inbox().join("a.bin.zmtp-part")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.inbox().join("b.bin.zmtp-part.offer")).unwrap();
    let a = content(70_000, 13);
    let b = content(70_000, 14);
    let outcomes = against(&options, 2, |ep| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let h = Hostile::new(&ep).await;
            for (name, data) in [(&b"a.bin"[..], &a), (&b"b.bin"[..], &b)] {
                h.offer(name, data.len() as u64, sha(data)).await;
                // Refused before a byte is asked for: the link makes the open fail.
                let Command::Error(reason) = h.next().await else {
                    panic!("{name:?} not refused");
                };
                assert!(reason.contains("cannot"), "{reason}");
            }
        }
    })
    .await;
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Failed(_))));
    // The file the links point to is untouched, and the links are still links.
    assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");
    for link in ["a.bin.zmtp-part", "b.bin.zmtp-part.offer"] {
        let m = std::fs::symlink_metadata(dir.inbox().join(link)).unwrap();
        assert!(m.file_type().is_symlink(), "{link}");
    }
    assert_eq!(dir.listing(), ["a.bin.zmtp-part", "b.bin.zmtp-part.offer"]);
}

#[test]
fn the_blocking_receivers_own_receive_timeout_still_ends_it_mid_transfer() {
    let dir = TempDir::new("rcvtimeo-mio");
    let mut options = small(&dir.inbox());
    options.idle_timeout = Some(Duration::from_secs(30));
    let ctx = zmtp_mio::Context::new().unwrap();
    let router = ctx.socket(zmtp_mio::SocketType::Router).unwrap();
    router.set_rcvtimeo(Some(Duration::from_millis(300)));
    let ep = router.bind("tcp://127.0.0.1:*").unwrap();
    let dealer = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
    dealer.connect(&ep).unwrap();
    // An offer, then silence: the FETCHes are read and never answered.
    let sender = std::thread::spawn(move || {
        let offer = Command::Offer(Offer {
            name: "slow.bin".into(),
            size: 1000,
            digest: [7; 32],
        });
        dealer
            .send(zmtp_mio::Message::from(offer.encode()))
            .unwrap();
        let msg = dealer.recv_timeout(Some(LIMIT)).unwrap();
        assert!(matches!(
            Command::decode(msg.frames()),
            Ok(Command::Fetch { .. })
        ));
        // Kept open until the receiver has given up.
        std::thread::sleep(Duration::from_secs(2));
    });
    let started = std::time::Instant::now();
    let result = zmtp_file::blocking::recv_files(&router, &options, Some(1), |_| {});
    let took = started.elapsed();
    assert!(
        matches!(result, Err(TransferError::Socket(zmtp_mio::Error::Timeout))),
        "{result:?}"
    );
    // The socket's 300 ms, not the transfer's 30 s.
    assert!(took < Duration::from_secs(10), "{took:?}");
    sender.join().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_malformed_offer_is_a_failed_transfer_that_counts() {
    let dir = TempDir::new("bad-offer");
    let options = small(&dir.inbox());
    // Counted: the one transfer recv_files waits for is this refused offer.
    let outcomes = against(&options, 1, |ep| async move {
        let h = Hostile::new(&ep).await;
        h.offer(b"caf\xe9.bin", 10, [0; 32]).await;
        let Command::Error(reason) = h.next().await else {
            panic!("a name that is not UTF-8 accepted")
        };
        assert_eq!(reason, "malformed OFFER: the name is not UTF-8");
    })
    .await;
    let [Outcome::Failed(f)] = &outcomes[..] else {
        panic!("{outcomes:?}")
    };
    assert_eq!(f.name, "caf\u{FFFD}.bin");
    assert_eq!(f.reason, "malformed OFFER: the name is not UTF-8");
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
}

#[tokio::test(flavor = "current_thread")]
async fn an_offer_larger_than_the_disk_is_refused_before_any_chunk() {
    let dir = TempDir::new("no-room");
    // A file system that cannot reserve blocks writes as it goes: nothing to refuse early.
    let probe = std::fs::File::create(dir.0.join("probe")).unwrap();
    let flags = rustix::fs::FallocateFlags::KEEP_SIZE;
    if let Err(e) = rustix::fs::fallocate(&probe, flags, 0, 4096) {
        eprintln!("skipped: {} cannot reserve blocks ({e})", dir.0.display());
        return;
    }
    let options = small(&dir.inbox());
    // 4 EiB: more than any disk (and than ext4's largest file).
    let size = 1u64 << 62;
    let outcomes = against(&options, 1, |ep| async move {
        let h = Hostile::new(&ep).await;
        h.offer(b"huge.bin", size, [0; 32]).await;
        let Command::Error(reason) = h.next().await else {
            panic!("an offer of 4 EiB accepted")
        };
        assert!(reason.starts_with("no room for huge.bin ("), "{reason}");
        assert!(reason.contains(&format!("({size} bytes)")), "{reason}");
    })
    .await;
    assert!(
        matches!(&outcomes[..], [Outcome::Failed(_)]),
        "{outcomes:?}"
    );
    // Neither the part nor its record is left.
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
}
