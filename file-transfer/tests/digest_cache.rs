//! The sender's digest cache end to end: a cached digest spares the hashing, a changed
//! file is hashed again, and a forged entry cannot make the receiver keep a wrong file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use zmtp_file::{
    recv_files, send_file_with, DigestCache, FileKey, Outcome, Phase, Progress, RecvOptions,
    SendOptions, SendReport, TransferError,
};
use zmtp_tokio::{Socket, SocketType};

/// A fresh empty directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("zmtp-file-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        TempDir(dir)
    }
    fn inbox(&self) -> PathBuf {
        self.0.join("in")
    }
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

/// Write `data` to `path` and wait until the change is older than the time a digest
/// must have settled for the cache to keep it.
fn write_settled(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap();
    std::thread::sleep(Duration::from_millis(200));
}

/// One transfer of `source` (overwriting what the receiver has) with `cache`: the
/// sender's result, how the receiver's transfer ended, and the sender's progress.
async fn transfer(
    dir: &TempDir,
    source: &Path,
    cache: &DigestCache,
) -> (Result<SendReport, TransferError>, Outcome, Vec<Progress>) {
    let receiver = Socket::new(SocketType::Router).unwrap();
    let ep = receiver.bind("tcp://127.0.0.1:*").await.unwrap();
    let sender = Socket::new(SocketType::Dealer).unwrap();
    sender.connect(&ep).unwrap();
    let mut options = RecvOptions::new(dir.inbox());
    options.overwrite = true;
    options.chunk = 64 << 10;
    let send_options = SendOptions {
        name: None,
        digest_cache: Some(cache.clone()),
    };
    let mut progress = Vec::new();
    let (sent, received) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(
            send_file_with(&sender, source, &send_options, |p| progress.push(p)),
            recv_files(&receiver, &options, Some(1), |_| {}),
        )
    })
    .await
    .expect("timed out");
    (sent, received.unwrap().remove(0), progress)
}

fn hashed(progress: &[Progress]) -> bool {
    progress.iter().any(|p| p.phase == Phase::Hashing)
}

#[tokio::test(flavor = "current_thread")]
async fn a_cached_digest_is_used_and_a_changed_file_is_hashed_again() {
    let dir = TempDir::new("reuse");
    let source = dir.0.join("data.bin");
    let first = content(300_001, 1);
    write_settled(&source, &first);
    let cache = DigestCache::new();

    // The first time the file is read and hashed, and its digest recorded.
    let (sent, outcome, progress) = transfer(&dir, &source, &cache).await;
    let sent = sent.unwrap();
    assert!(!sent.digest_cached);
    assert!(hashed(&progress));
    assert_eq!(sent.digest, zmtp_file::wire::digest(&first));
    assert!(outcome.saved().is_some());
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (0, 1, 1));

    // The second time the digest comes from the cache: no hashing progress at all.
    let (sent, outcome, progress) = transfer(&dir, &source, &cache).await;
    let sent = sent.unwrap();
    assert!(sent.digest_cached);
    assert!(!hashed(&progress), "{progress:?}");
    assert_eq!(sent.digest, zmtp_file::wire::digest(&first));
    let saved = outcome.saved().expect("saved");
    assert_eq!(std::fs::read(&saved.path).unwrap(), first);
    assert_eq!((cache.hits(), cache.misses()), (1, 1));

    // Rewritten with other bytes of the same size: hashed again, the new bytes arrive.
    let second = content(300_001, 2);
    write_settled(&source, &second);
    let (sent, outcome, progress) = transfer(&dir, &source, &cache).await;
    let sent = sent.unwrap();
    assert!(!sent.digest_cached);
    assert!(hashed(&progress));
    assert_eq!(sent.digest, zmtp_file::wire::digest(&second));
    let saved = outcome.saved().expect("saved");
    assert_eq!(std::fs::read(&saved.path).unwrap(), second);
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (1, 2, 1));

    // Only touched (the content unchanged, its times new): hashed again too.
    let file = std::fs::File::options().write(true).open(&source).unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    drop(file);
    std::thread::sleep(Duration::from_millis(200));
    let (sent, _, progress) = transfer(&dir, &source, &cache).await;
    assert!(!sent.unwrap().digest_cached);
    assert!(hashed(&progress));
    assert_eq!((cache.hits(), cache.misses()), (1, 3));
    // ...and cached again.
    let (sent, _, _) = transfer(&dir, &source, &cache).await;
    assert!(sent.unwrap().digest_cached);
}

#[tokio::test(flavor = "current_thread")]
async fn a_file_changed_just_now_is_not_cached() {
    let dir = TempDir::new("fresh");
    let source = dir.0.join("fresh.bin");
    std::fs::write(&source, content(100_000, 3)).unwrap();
    let cache = DigestCache::new();
    let (sent, _, _) = transfer(&dir, &source, &cache).await;
    assert!(!sent.unwrap().digest_cached);
    // Its change time is within the last moments: a change in the same clock tick would
    // not show, so nothing is recorded.
    assert!(cache.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_forged_entry_fails_at_the_receiver_and_keeps_nothing() {
    let dir = TempDir::new("forged");
    let source = dir.0.join("forged.bin");
    let data = content(200_000, 4);
    write_settled(&source, &data);
    let cache = DigestCache::new();
    let canonical = std::fs::canonicalize(&source).unwrap();
    let key = FileKey::of(&std::fs::metadata(&source).unwrap());
    cache.insert(canonical, key, [0xAB; 32]).unwrap();

    let (sent, outcome, progress) = transfer(&dir, &source, &cache).await;
    assert!(!hashed(&progress));
    match sent {
        Err(TransferError::Refused(reason)) => assert!(reason.contains("BLAKE3"), "{reason}"),
        other => panic!("the sender was not refused: {other:?}"),
    }
    match outcome {
        Outcome::Failed(f) => assert!(f.reason.contains("BLAKE3"), "{}", f.reason),
        Outcome::Saved(s) => panic!("a file was saved: {s:?}"),
    }
    // Nothing under the final name, no part left.
    assert!(dir.listing().is_empty(), "{:?}", dir.listing());
    // The refused digest is forgotten: the next try hashes the file and succeeds.
    assert!(cache.is_empty());
    let (sent, outcome, progress) = transfer(&dir, &source, &cache).await;
    assert!(!sent.unwrap().digest_cached);
    assert!(hashed(&progress));
    let saved = outcome.saved().expect("saved");
    assert_eq!(std::fs::read(&saved.path).unwrap(), data);
}

#[test]
fn a_small_file_is_hashed_every_time_and_not_recorded() {
    let dir = TempDir::new("small");
    let source = dir.0.join("small.bin");
    write_settled(&source, &content(zmtp_file::CACHED_MIN as usize - 1, 6));
    let cache = DigestCache::new();
    for _ in 0..2 {
        let mut hashing = 0;
        let sender =
            zmtp_file::FileSender::open_cached(&source, None, Some(&cache), &mut |p: Progress| {
                hashing += usize::from(p.phase == Phase::Hashing)
            })
            .unwrap();
        assert!(!sender.digest_cached());
        assert!(hashing > 0);
    }
    assert!(cache.is_empty());
    assert_eq!((cache.hits(), cache.misses()), (0, 0));
}

#[test]
fn a_cache_file_of_sha256_digests_is_not_used() {
    let dir = TempDir::new("v1");
    let source = dir.0.join("old.bin");
    let data = content(100_000, 7);
    write_settled(&source, &data);
    let canonical = std::fs::canonicalize(&source).unwrap();
    let key = FileKey::of(&std::fs::metadata(&source).unwrap());
    // The file the SHA-256 version wrote: its header, and a line for this very file.
    let file = dir.0.join("digests");
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let line = format!(
        "{} {} {} {} {} {} {} {} {}",
        hex(&[0x11; 32]),
        key.dev,
        key.ino,
        key.size,
        key.mtime.0,
        key.mtime.1,
        key.ctime.0,
        key.ctime.1,
        hex(canonical.as_os_str().as_encoded_bytes())
    );
    std::fs::write(&file, format!("zmtp-file digest cache 1\n{line}\n")).unwrap();
    let cache = DigestCache::persistent(&file);
    assert!(cache.is_empty());
    let sender =
        zmtp_file::FileSender::open_cached(&source, None, Some(&cache), &mut |_| {}).unwrap();
    assert!(!sender.digest_cached());
    assert_eq!(sender.digest(), zmtp_file::wire::digest(&data));
    // Rewritten in the new format, with the BLAKE3 digest.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("zmtp-file digest cache 2 blake3\n"),
        "{text}"
    );
    assert!(text.contains(&hex(&sender.digest())), "{text}");
}

#[test]
fn a_persistent_cache_spares_the_hashing_in_another_run() {
    let dir = TempDir::new("persist");
    let source = dir.0.join("kept.bin");
    let data = content(100_000, 5);
    write_settled(&source, &data);
    let file = dir.0.join("cache/digests");
    let mut hashing = 0;
    let cache = DigestCache::persistent(&file);
    let first =
        zmtp_file::FileSender::open_cached(&source, None, Some(&cache), &mut |p: Progress| {
            hashing += usize::from(p.phase == Phase::Hashing)
        })
        .unwrap();
    assert!(!first.digest_cached());
    assert!(hashing > 0);
    // A new cache from the same file, as a later run would open it.
    let again = DigestCache::persistent(&file);
    let mut hashing = 0;
    let second =
        zmtp_file::FileSender::open_cached(&source, None, Some(&again), &mut |p: Progress| {
            hashing += usize::from(p.phase == Phase::Hashing)
        })
        .unwrap();
    assert!(second.digest_cached());
    assert_eq!(hashing, 0);
    assert_eq!(second.digest(), first.digest());
}
