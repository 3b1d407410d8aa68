//! The sender's digest cache: a file sent again (a retry, a resume, the same file to
//! another receiver) is offered without reading it whole again.
//!
//! An entry is keyed on the file's canonical path and on what changes whenever its content
//! may have: device, inode, size, and modification and status-change times to the
//! nanosecond ([`FileKey`]). An entry whose key does not match exactly is ignored, and
//! replaced once the file has been hashed again. The receiver never relies on it: it
//! always hashes what it wrote and compares, so a wrong entry can only make a transfer
//! fail, never save a corrupt file.

use std::collections::HashMap;
use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What identifies one version of a file's content, from its status (`fstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey {
    /// The device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time: seconds since the epoch, and nanoseconds.
    pub mtime: (i64, i64),
    /// Its status-change time (set by the kernel on every write, rename or `touch`):
    /// seconds since the epoch, and nanoseconds.
    pub ctime: (i64, i64),
}

impl FileKey {
    /// The key of a file with this status.
    pub fn of(meta: &Metadata) -> FileKey {
        FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file's last change is far enough before `started` (when hashing
    /// began) that any later change must show in its status-change time. File systems
    /// stamp times from a clock that advances in ticks (of up to 10 ms): a file changed
    /// again within the tick of its last change would keep its key, so a digest of a file
    /// that changed that recently is not kept.
    pub(crate) fn settled_before(&self, started: SystemTime) -> bool {
        let Ok(secs) = u64::try_from(self.ctime.0) else {
            return false;
        };
        let nanos = u32::try_from(self.ctime.1).unwrap_or(0);
        let changed = UNIX_EPOCH + Duration::new(secs, nanos);
        changed + SETTLE < started
    }
}

/// How long before hashing starts a file must last have changed for its digest to be
/// kept (see [`FileKey::settled_before`]).
const SETTLE: Duration = Duration::from_millis(50);

/// The most entries a cache keeps; the least recently used go first.
const MAX_ENTRIES: usize = 4096;

/// The first line of a cache file.
/// Version 2 holds BLAKE3 digests; a file of version 1 (SHA-256) is an empty start.
const HEADER: &str = "zmtp-file digest cache 2 blake3";

#[derive(Debug, Clone)]
struct Entry {
    key: FileKey,
    digest: [u8; 32],
    used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<PathBuf, Entry>,
    /// Where it is kept between runs, if anywhere.
    file: Option<PathBuf>,
    clock: u64,
    hits: u64,
    misses: u64,
    /// Changes are written at most once per [`DEFERRED_WRITE_EVERY`] (a tree's files).
    deferred: bool,
    /// A change is not written yet.
    dirty: bool,
    /// When the file was last written while deferring.
    written_at: Option<Instant>,
}

/// How often a cache whose writes are deferred writes its file.
const DEFERRED_WRITE_EVERY: Duration = Duration::from_secs(1);

/// BLAKE3 digests of files already hashed, for [`SendOptions::digest_cache`]
/// (`crate::SendOptions`). Clones share one cache, so a program can keep one for all
/// its transfers; it is safe to use from several threads.
///
/// [`DigestCache::new`] keeps it in memory; [`DigestCache::persistent`] also in a file,
/// rewritten (whole, through a temporary file and a rename) at every change. Two
/// processes sharing a file each write what they know: the last one wins, and what the
/// other learnt is hashed again next time.
///
/// [`SendOptions::digest_cache`]: crate::SendOptions::digest_cache
#[derive(Debug, Clone, Default)]
pub struct DigestCache {
    inner: Arc<Mutex<Inner>>,
}

impl DigestCache {
    /// An empty cache in memory.
    pub fn new() -> DigestCache {
        DigestCache::default()
    }

    /// A cache kept in `file`: what it holds now is loaded (a missing or unreadable
    /// file, or lines that do not parse, are an empty start, not an error), and every
    /// change is written back to it.
    pub fn persistent(file: impl Into<PathBuf>) -> DigestCache {
        let file = file.into();
        let entries = fs::read(&file).map(|text| parse(&text)).unwrap_or_default();
        DigestCache {
            inner: Arc::new(Mutex::new(Inner {
                entries,
                file: Some(file),
                ..Inner::default()
            })),
        }
    }

    /// The file a program's cache is usually kept in: `zmtp/digests` under
    /// `$XDG_CACHE_HOME`, or under `$HOME/.cache` when that is not set (`None` when
    /// neither is).
    pub fn default_file() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|d| !d.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            })?;
        Some(base.join("zmtp").join("digests"))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave the map half-changed: keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The digest recorded for the file at `path` (canonical) if its key is exactly
    /// `key`; counts a hit or a miss.
    pub fn lookup(&self, path: &Path, key: &FileKey) -> Option<[u8; 32]> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let found = match inner.entries.get_mut(path) {
            Some(e) if e.key == *key => {
                e.used = now;
                Some(e.digest)
            }
            _ => None,
        };
        if found.is_some() {
            inner.hits += 1;
        } else {
            inner.misses += 1;
        }
        found
    }

    /// Record `digest` for the file at `path` (canonical) with this `key`, replacing what
    /// was recorded for that path. A persistent cache is written back; a failure to write
    /// it is returned (the entry stays in memory either way).
    pub fn insert(&self, path: PathBuf, key: FileKey, digest: [u8; 32]) -> io::Result<()> {
        let mut inner = self.lock();
        inner.clock += 1;
        let used = inner.clock;
        inner.entries.insert(path, Entry { key, digest, used });
        if inner.entries.len() > MAX_ENTRIES {
            let oldest = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                inner.entries.remove(&p);
            }
        }
        changed(&mut inner)
    }

    /// Forget the file at `path` (canonical). A persistent cache is written back.
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        let mut inner = self.lock();
        if inner.entries.remove(path).is_some() {
            changed(&mut inner)
        } else {
            Ok(())
        }
    }

    /// Defer writing a persistent cache's file (`on`): changes are then written at most
    /// once a second, instead of at every change (sending a tree of thousands of files
    /// would otherwise rewrite it once per file). Turning it off writes what is pending.
    /// The setting is the cache's, shared by its clones. [`send_tree`](crate::send_tree)
    /// defers while it sends, and turns it off at the end.
    pub fn defer_writes(&self, on: bool) -> io::Result<()> {
        let mut inner = self.lock();
        inner.deferred = on;
        if !on && inner.dirty {
            inner.dirty = false;
            return save(&inner);
        }
        Ok(())
    }

    /// Lookups that found a digest.
    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    /// Lookups that found none (no entry, or one whose key did not match).
    pub fn misses(&self) -> u64 {
        self.lock().misses
    }

    /// Files recorded.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no file is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file it is kept in, if it is persistent.
    pub fn file(&self) -> Option<PathBuf> {
        self.lock().file.clone()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One entry as a line: digest, device, inode, size, mtime (s, ns), ctime (s, ns), and
/// the path's bytes in hex (any byte may be in a path).
fn line(path: &Path, e: &Entry) -> String {
    let k = &e.key;
    format!(
        "{} {} {} {} {} {} {} {} {}\n",
        hex(&e.digest),
        k.dev,
        k.ino,
        k.size,
        k.mtime.0,
        k.mtime.1,
        k.ctime.0,
        k.ctime.1,
        hex(path.as_os_str().as_bytes())
    )
}

fn parse_line(text: &str) -> Option<(PathBuf, Entry)> {
    let mut f = text.split(' ');
    let digest: [u8; 32] = unhex(f.next()?)?.try_into().ok()?;
    let mut num = || f.next()?.parse::<i64>().ok();
    let (dev, ino, size) = (num()?, num()?, num()?);
    let mtime = (num()?, num()?);
    let ctime = (num()?, num()?);
    let path = std::ffi::OsStr::from_bytes(&unhex(f.next()?)?).to_owned();
    if f.next().is_some() {
        return None;
    }
    let key = FileKey {
        dev: dev as u64,
        ino: ino as u64,
        size: u64::try_from(size).ok()?,
        mtime,
        ctime,
    };
    Some((
        PathBuf::from(path),
        Entry {
            key,
            digest,
            used: 0,
        },
    ))
}

/// The entries of a cache file; anything that does not parse is left out.
fn parse(text: &[u8]) -> HashMap<PathBuf, Entry> {
    let Ok(text) = std::str::from_utf8(text) else {
        return HashMap::new();
    };
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return HashMap::new();
    }
    lines.filter_map(parse_line).take(MAX_ENTRIES).collect()
}

/// After a change: write the file now, or later if writes are deferred.
fn changed(inner: &mut Inner) -> io::Result<()> {
    if inner.deferred {
        let now = Instant::now();
        if inner
            .written_at
            .is_some_and(|t| now.duration_since(t) < DEFERRED_WRITE_EVERY)
        {
            inner.dirty = true;
            return Ok(());
        }
        inner.written_at = Some(now);
    }
    inner.dirty = false;
    save(inner)
}

/// Write a persistent cache to its file (readable by its owner only).
fn save(inner: &Inner) -> io::Result<()> {
    let Some(file) = &inner.file else {
        return Ok(());
    };
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut text = String::from(HEADER);
    text.push('\n');
    for (path, e) in &inner.entries {
        text.push_str(&line(path, e));
    }
    let mut tmp = file.clone().into_os_string();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| fs::rename(&tmp, file));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: i64) -> FileKey {
        FileKey {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (n, 5),
            ctime: (n, 7),
        }
    }

    #[test]
    fn a_key_that_differs_in_any_field_misses() {
        let cache = DigestCache::new();
        let path = PathBuf::from("/a/b");
        cache.insert(path.clone(), key(10), [1; 32]).unwrap();
        assert_eq!(cache.lookup(&path, &key(10)), Some([1; 32]));
        let variants = [
            FileKey { dev: 9, ..key(10) },
            FileKey { ino: 9, ..key(10) },
            FileKey { size: 9, ..key(10) },
            FileKey {
                mtime: (10, 6),
                ..key(10)
            },
            FileKey {
                ctime: (10, 8),
                ..key(10)
            },
            key(11),
        ];
        for k in variants {
            assert_eq!(cache.lookup(&path, &k), None, "{k:?}");
        }
        assert_eq!(cache.lookup(Path::new("/a/c"), &key(10)), None);
        assert_eq!((cache.hits(), cache.misses()), (1, 7));
        // Replaced by the next digest for the path.
        cache.insert(path.clone(), key(11), [2; 32]).unwrap();
        assert_eq!(cache.lookup(&path, &key(10)), None);
        assert_eq!(cache.lookup(&path, &key(11)), Some([2; 32]));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_persistent_cache_survives_and_skips_what_does_not_parse() {
        let dir = std::env::temp_dir().join(format!("zmtp-file-cache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let file = dir.join("sub/digests");
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/x y\n\xff"));
        {
            let cache = DigestCache::persistent(&file);
            assert!(cache.is_empty());
            cache.insert(odd.clone(), key(1), [3; 32]).unwrap();
            cache.insert(PathBuf::from("/p"), key(2), [4; 32]).unwrap();
        }
        let mode = fs::metadata(&file).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut text = fs::read_to_string(&file).unwrap();
        text.push_str("not a line\n");
        text.push_str(&"ab ".repeat(9));
        fs::write(&file, text).unwrap();
        let again = DigestCache::persistent(&file);
        assert_eq!(again.len(), 2);
        assert_eq!(again.lookup(&odd, &key(1)), Some([3; 32]));
        again.remove(Path::new("/p")).unwrap();
        assert_eq!(DigestCache::persistent(&file).len(), 1);
        // Another header: nothing is trusted.
        fs::write(&file, "something else\n").unwrap();
        assert!(DigestCache::persistent(&file).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn deferred_writes_are_written_when_deferring_ends() {
        let dir =
            std::env::temp_dir().join(format!("zmtp-file-cache-defer-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let file = dir.join("digests");
        let cache = DigestCache::persistent(&file);
        cache.defer_writes(true).unwrap();
        for n in 0..100 {
            cache
                .insert(PathBuf::from(format!("/f{n}")), key(n), [n as u8; 32])
                .unwrap();
        }
        // The first change is written at once, the others within the second are not.
        assert!(DigestCache::persistent(&file).len() < 100);
        cache.defer_writes(false).unwrap();
        assert_eq!(DigestCache::persistent(&file).len(), 100);
        // Not deferring: every change is written.
        cache.remove(Path::new("/f0")).unwrap();
        assert_eq!(DigestCache::persistent(&file).len(), 99);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_changed_just_before_hashing_is_not_settled() {
        let now = SystemTime::now();
        let since = now.duration_since(UNIX_EPOCH).unwrap();
        let at = |d: Duration| FileKey {
            ctime: (d.as_secs() as i64, i64::from(d.subsec_nanos())),
            ..key(0)
        };
        assert!(!at(since).settled_before(now));
        assert!(!at(since - Duration::from_millis(10)).settled_before(now));
        assert!(at(since - Duration::from_secs(1)).settled_before(now));
    }
}
