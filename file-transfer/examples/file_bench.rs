//! A file over tcp loopback: `send_file`/`recv_files` against a raw copy through a plain
//! TCP socket, each side a process of its own, side by side on the same file; or a tree
//! (`send_tree`) against a tar stream over a plain TCP socket.
//!
//! ```text
//! cargo run --release -p zmtp-file --example file_bench -- DIR [MIB] [ROUNDS] [tokio|mio]
//! cargo run --release -p zmtp-file --example file_bench -- DIR tree [FILES] [BIG_MIB] [ROUNDS] [tokio|mio]
//! ```
//!
//! Tree: writes a tree of FILES files of 4 KiB (default 10,000, 100 per directory) and one
//! of BIG_MIB MiB (default 256), then for each round (default 3) copies it twice: the
//! system's `tar` streaming it over a plain TCP socket into `tar -x` on the other side
//! (`tar -c | nc`, without nc), then `send_tree`/`recv_files`; it prints each copy's time,
//! files per second and MiB/s end to end, their ratio, and the peak resident set of the
//! zmtp processes (and of the processes copying the tar stream, tar's own not included).
//! Every copy is kept until the end (DIR needs room for 2 × ROUNDS copies of the tree).
//!
//! File: writes a MIB-MiB file (default 1024) of pseudo-random bytes to DIR, then for each
//! of ROUNDS rounds (default 3) copies it four times, one after the other:
//!
//! - raw: the sender reads 256 KiB blocks and writes them to a plain TCP socket, the
//!   receiver writes what it reads to a file (no check);
//! - raw+hash: the same, the receiver also hashing each block it writes with BLAKE3: a
//!   reference for what checking a digest of what arrived adds to the raw copy;
//! - cold: the file transfer with no digest cached: the sender hashes the whole file
//!   before its OFFER (and records the digest in a cache file);
//! - warm: the file transfer again, the digest taken from that cache file.
//!
//! Both transfers use the default window and chunk, on tokio (or on the blocking `mio`
//! driver), and include the receiver's check. Prints each copy's rate end to end (from
//! starting the receiver process to both processes' exit), the transfer phase alone (the
//! sender's first FETCH to DONE), the ratios to the raw copies of the same round, and each
//! process's peak resident set (VmHWM) and CPU time; then every round's numbers together.
//! Removes what it wrote, each copy's output after `sync` has written it back (so no
//! writeback runs during the next copy). Says on standard error when the kernel's free
//! page reporting is on (a virtual machine's balloon), which makes the rounds noisy.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const BLOCK: usize = 256 << 10;

/// This process's peak resident set in KiB, from /proc/self/status.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn make_file(path: &Path, mib: usize) {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mib {
        for word in block.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            word.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&block).unwrap();
    }
    f.flush().unwrap();
}

/// Write every dirty page to disk (outside any copy's time): the writeback of a copy's
/// output (a gigabyte of page cache) must not run on the same two cores during the next
/// copy. A file copy's output is written back this way before it is removed.
fn settle() {
    let ok = Command::new("sync").status().is_ok_and(|s| s.success());
    assert!(ok, "sync failed");
}

/// Run this program as `role` with `args`; its one line of output.
fn child(role: &str, args: &[&str]) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .arg(role)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

fn output(c: std::process::Child) -> String {
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "a child failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The raw receiver: what it reads, written to `dest`; with `hash`, also hashed with
/// BLAKE3 right after each write, while the block is still in cache (a hashing thread of
/// its own, fed the same blocks, ran slower here), its digest printed.
fn raw_recv(port_file: &str, dest: &str, hash: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(port_file, listener.local_addr().unwrap().port().to_string()).unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    let mut out = std::fs::File::create(dest).unwrap();
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; BLOCK];
    let mut total = 0u64;
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).unwrap();
        if hash {
            hasher.update(&buf[..n]);
        }
        total += n as u64;
    }
    let digest = hash.then(|| format!(", digest {}", &hasher.finalize().to_hex()[..16]));
    println!(
        "received {total} bytes{}, peak RSS {} KiB, cpu {:.2} s",
        digest.unwrap_or_default(),
        peak_rss_kib(),
        cpu_seconds()
    );
}

fn raw_send(port: &str, source: &str) {
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    let mut file = std::fs::File::open(source).unwrap();
    let mut buf = vec![0u8; BLOCK];
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        stream.write_all(&buf[..n]).unwrap();
    }
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    println!(
        "sent, peak RSS {} KiB, cpu {:.2} s",
        peak_rss_kib(),
        cpu_seconds()
    );
}

/// This process's CPU time (user and system, all threads) in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses): utime is the 12th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn zmtp_recv(driver: &str, port_file: &str, dir: &str) {
    let options = zmtp_file::RecvOptions::new(dir);
    let outcome = if driver == "mio" {
        let ctx = zmtp_mio::Context::new().unwrap();
        let socket = ctx.socket(zmtp_mio::SocketType::Router).unwrap();
        let ep = socket.bind("tcp://127.0.0.1:*").unwrap();
        std::fs::write(port_file, ep).unwrap();
        zmtp_file::blocking::recv_files(&socket, &options, Some(1), |_| {}).unwrap()
    } else {
        runtime().block_on(async {
            let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Router).unwrap();
            let ep = socket.bind("tcp://127.0.0.1:*").await.unwrap();
            std::fs::write(port_file, ep).unwrap();
            zmtp_file::recv_files(&socket, &options, Some(1), |_| {})
                .await
                .unwrap()
        })
    };
    let saved = outcome.into_iter().next().and_then(|o| o.saved());
    println!(
        "received {} bytes, peak RSS {} KiB, cpu {:.2} s",
        saved.expect("saved").fetched,
        peak_rss_kib(),
        cpu_seconds()
    );
}

fn zmtp_send(driver: &str, ep: &str, source: &str, cache: &str) {
    let options = zmtp_file::SendOptions {
        name: Some("zmtp.bin".into()),
        digest_cache: Some(zmtp_file::DigestCache::persistent(cache)),
    };
    let start = Instant::now();
    let mut hashed = None;
    let progress = |p: zmtp_file::Progress| {
        if p.phase == zmtp_file::Phase::Sending && hashed.is_none() {
            hashed = Some(start.elapsed());
        }
    };
    let report = if driver == "mio" {
        let ctx = zmtp_mio::Context::new().unwrap();
        let socket = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
        socket.connect(ep).unwrap();
        let report =
            zmtp_file::blocking::send_file_with(&socket, Path::new(source), &options, progress)
                .unwrap();
        socket.close();
        report
    } else {
        runtime().block_on(async {
            let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Dealer).unwrap();
            socket.connect(ep).unwrap();
            let report = zmtp_file::send_file_with(&socket, Path::new(source), &options, progress)
                .await
                .unwrap();
            socket.close().await;
            report
        })
    };
    let end = start.elapsed().as_secs_f64();
    let hashed = hashed.unwrap_or_default().as_secs_f64();
    println!(
        "sent {} bytes, digest {}, to first FETCH {hashed:.3} s, transfer {:.3} s, peak RSS {} KiB, \
         cpu {:.2} s",
        report.sent,
        if report.digest_cached { "cached" } else { "hashed" },
        end - hashed,
        peak_rss_kib(),
        cpu_seconds()
    );
}

/// Wait for a child to write its endpoint to `file`.
fn wait_for(file: &Path) -> String {
    for _ in 0..2000 {
        if let Ok(s) = std::fs::read_to_string(file) {
            if !s.is_empty() {
                return s;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("no endpoint from the receiver");
}

/// A number after `label` in a child's line.
fn field(line: &str, label: &str) -> f64 {
    line.split(label)
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or(f64::NAN)
}

/// One copy's numbers.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// End to end, MiB/s.
    rate: f64,
    /// The sender's first FETCH to DONE, MiB/s (NaN for raw).
    phase: f64,
    /// Seconds from the sender's start to the first FETCH (opening the file and hashing it
    /// or looking its digest up, then the OFFER's round trip).
    before: f64,
    rss: (f64, f64),
    cpu: (f64, f64),
}

/// The lowest, median and highest of `v`.
fn spread(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return "-".into();
    }
    format!(
        "lowest {:.2}, median {:.2}, highest {:.2}",
        v[0],
        v[v.len() / 2],
        v[v.len() - 1]
    )
}

/// The kernel's free page reporting, where a virtual machine's balloon device has it:
/// free memory is handed back to the host, and the guest's next use of those pages (a
/// copy's page cache) costs a fault in the host for each. On a 2-vCPU guest this made 1 GiB
/// copies of every kind, raw ones included, take up to twice the CPU in whichever copy
/// drew such pages, and the rounds bimodal.
const PAGE_REPORTING: &str = "/sys/module/page_reporting/parameters";

/// Say so when free page reporting is on (its order at most the buddy allocator's
/// largest, 10): the rounds will be noisy. As root, an order above it turns it off.
fn warn_page_reporting() {
    let order = std::fs::read_to_string(format!("{PAGE_REPORTING}/page_reporting_order"));
    if let Some(order) = order.ok().and_then(|o| o.trim().parse::<u32>().ok()) {
        if order <= 10 {
            eprintln!(
                "note: free page reporting is on (order {order}): pages this guest frees go back \
                 to the host, and copies that draw them pay a fault each in the host (rounds \
                 up to twice as slow, whichever the copy). As root, \
                 `echo 11 > {PAGE_REPORTING}/page_reporting_order` turns it off."
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("raw-recv") => return raw_recv(&args[1], &args[2], false),
        Some("raw-hash-recv") => return raw_recv(&args[1], &args[2], true),
        Some("raw-send") => return raw_send(&args[1], &args[2]),
        Some("zmtp-recv") => return zmtp_recv(&args[1], &args[2], &args[3]),
        Some("zmtp-send") => return zmtp_send(&args[1], &args[2], &args[3], &args[4]),
        Some("tar-recv") => return tar_recv(&args[1], &args[2]),
        Some("tar-send") => return tar_send(&args[1], &args[2]),
        Some("tree-recv") => return tree_recv(&args[1], &args[2], &args[3], &args[4]),
        Some("tree-send") => return tree_send(&args[1], &args[2], &args[3]),
        _ => {}
    }
    warn_page_reporting();
    if args.get(1).map(String::as_str) == Some("tree") {
        return tree_bench(&args);
    }
    let usage = "usage: file_bench DIR [MIB] [ROUNDS] [tokio|mio]";
    let base = PathBuf::from(args.first().expect(usage));
    let mib: usize = args.get(1).map_or(1024, |s| s.parse().expect(usage));
    let rounds: usize = args.get(2).map_or(3, |s| s.parse().expect(usage));
    let driver = args.get(3).map_or("tokio", String::as_str);
    assert!(driver == "tokio" || driver == "mio", "{usage}");
    let dir = base.join(format!("file-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let source = dir.join("source.bin");
    make_file(&source, mib);
    settle();
    let cache = dir.join("digests");
    let bytes = (mib as f64) * 1048576.0;
    let s = |p: &Path| p.display().to_string();
    let mut table: Vec<[Run; 4]> = Vec::new();
    println!("{mib} MiB, {rounds} rounds, file transfer on {driver}");
    for round in 1..=rounds {
        // Raw TCP, then the same with the receiver hashing what it gets.
        let mut runs = Vec::new();
        for (role, what) in [("raw-recv", "raw"), ("raw-hash-recv", "raw+hash")] {
            let port_file = dir.join("raw.port");
            let _ = std::fs::remove_file(&port_file);
            let raw_dest = dir.join("raw.bin");
            let start = Instant::now();
            let rx = child(role, &[&s(&port_file), &s(&raw_dest)]);
            let port = wait_for(&port_file);
            let tx = child("raw-send", &[&port, &s(&source)]);
            let (tx, rx) = (output(tx), output(rx));
            let rate = bytes / start.elapsed().as_secs_f64() / 1048576.0;
            settle();
            std::fs::remove_file(&raw_dest).unwrap();
            println!("round {round} {what}: {rate:7.1} MiB/s  sender: {tx}; receiver: {rx}");
            runs.push(Run {
                rate,
                phase: f64::NAN,
                before: 0.0,
                rss: (field(&tx, "RSS ") / 1024.0, field(&rx, "RSS ") / 1024.0),
                cpu: (field(&tx, "cpu "), field(&rx, "cpu ")),
            });
        }
        let raw = runs[0];
        // The file transfer, without then with the digest cached.
        let _ = std::fs::remove_file(&cache);
        for what in ["cold", "warm"] {
            let ep_file = dir.join("zmtp.ep");
            let _ = std::fs::remove_file(&ep_file);
            let start = Instant::now();
            let rx = child("zmtp-recv", &[driver, &s(&ep_file), &s(&dir.join("in"))]);
            let ep = wait_for(&ep_file);
            let tx = child("zmtp-send", &[driver, &ep, &s(&source), &s(&cache)]);
            let (tx, rx) = (output(tx), output(rx));
            let rate = bytes / start.elapsed().as_secs_f64() / 1048576.0;
            settle();
            std::fs::remove_file(dir.join("in/zmtp.bin")).unwrap();
            let run = Run {
                rate,
                phase: bytes / field(&tx, "transfer ") / 1048576.0,
                before: field(&tx, "FETCH "),
                rss: (field(&tx, "RSS ") / 1024.0, field(&rx, "RSS ") / 1024.0),
                cpu: (field(&tx, "cpu "), field(&rx, "cpu ")),
            };
            println!("round {round} {what}: {rate:7.1} MiB/s  sender: {tx}; receiver: {rx}");
            println!(
                "round {round} {what} ratios to raw: end to end {:.2}, transfer phase \
                 ({:.1} MiB/s) {:.2}",
                run.rate / raw.rate,
                run.phase,
                run.phase / raw.rate
            );
            runs.push(run);
        }
        table.push(runs.try_into().unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let list = |f: &dyn Fn(&[Run; 4]) -> String| -> String {
        table.iter().map(f).collect::<Vec<_>>().join(", ")
    };
    println!("\nall rounds ({driver}):");
    println!(
        "raw MiB/s:                 {}",
        list(&|r| format!("{:.0}", r[0].rate))
    );
    println!(
        "raw+hash MiB/s:            {}",
        list(&|r| format!("{:.0}", r[1].rate))
    );
    println!(
        "raw+hash / raw:            {}",
        list(&|r| format!("{:.2}", r[1].rate / r[0].rate))
    );
    for (i, what) in [(2, "cold"), (3, "warm")] {
        println!(
            "{what} end to end MiB/s:     {}",
            list(&|r| format!("{:.0}", r[i].rate))
        );
        println!(
            "{what} end to end / raw:     {}",
            list(&|r| format!("{:.2}", r[i].rate / r[0].rate))
        );
        println!(
            "{what} transfer phase MiB/s: {}",
            list(&|r| format!("{:.0}", r[i].phase))
        );
        println!(
            "{what} transfer phase / raw: {}",
            list(&|r| format!("{:.2}", r[i].phase / r[0].rate))
        );
        println!(
            "{what} to first FETCH s:     {}",
            list(&|r| format!("{:.3}", r[i].before))
        );
    }
    let ratios = |i: usize, to: usize| -> Vec<f64> {
        table.iter().map(|r| r[i].rate / r[to].rate).collect()
    };
    println!("raw+hash / raw: {}", spread(&ratios(1, 0)));
    for (i, what) in [(2, "cold"), (3, "warm")] {
        println!("{what} end to end / raw: {}", spread(&ratios(i, 0)));
        println!("{what} end to end / raw+hash: {}", spread(&ratios(i, 1)));
    }
    for (i, what) in [(0, "raw"), (1, "raw+hash"), (2, "cold"), (3, "warm")] {
        println!(
            "{what} peak RSS MiB, sender / receiver: {}",
            list(&|r| format!("{:.1} / {:.1}", r[i].rss.0, r[i].rss.1))
        );
        println!(
            "{what} CPU s, sender / receiver:       {}",
            list(&|r| format!("{:.2} / {:.2}", r[i].cpu.0, r[i].cpu.1))
        );
    }
}

/// The tree: `FILES` files of 4 KiB, 100 per directory, and `big.bin` of `BIG_MIB` MiB.
fn make_tree(root: &Path, files: usize, big_mib: usize) {
    let mut block = vec![0u8; 4096];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..files {
        let sub = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        for word in block.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            word.copy_from_slice(&x.to_le_bytes());
        }
        std::fs::write(sub.join(format!("f{i:05}.dat")), &block).unwrap();
    }
    make_file(&root.join("big.bin"), big_mib);
}

/// Receive a tar stream on a TCP socket into `tar -x` in `dest`.
fn tar_recv(port_file: &str, dest: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(port_file, listener.local_addr().unwrap().port().to_string()).unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    let mut tar = Command::new("tar")
        .args(["-x", "-f", "-", "-C", dest])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = tar.stdin.take().unwrap();
    let total = std::io::copy(&mut stream, &mut stdin).unwrap();
    drop(stdin);
    assert!(tar.wait().unwrap().success(), "tar -x failed");
    println!(
        "received {total} bytes, peak RSS {} KiB, cpu {:.2} s",
        peak_rss_kib(),
        cpu_seconds()
    );
}

/// Send `tar -c` of the tree `root` (its parent, and its name) to a TCP socket.
fn tar_send(port: &str, root: &str) {
    let root = Path::new(root);
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    let mut tar = Command::new("tar")
        .arg("-c")
        .arg("-f")
        .arg("-")
        .arg("-C")
        .arg(root.parent().unwrap())
        .arg(root.file_name().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = tar.stdout.take().unwrap();
    std::io::copy(&mut stdout, &mut stream).unwrap();
    assert!(tar.wait().unwrap().success(), "tar -c failed");
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    println!(
        "sent, peak RSS {} KiB, cpu {:.2} s",
        peak_rss_kib(),
        cpu_seconds()
    );
}

fn tree_recv(driver: &str, port_file: &str, dir: &str, count: &str) {
    let options = zmtp_file::RecvOptions::new(dir);
    let count: u64 = count.parse().unwrap();
    let outcomes = if driver == "mio" {
        let ctx = zmtp_mio::Context::new().unwrap();
        let socket = ctx.socket(zmtp_mio::SocketType::Router).unwrap();
        let ep = socket.bind("tcp://127.0.0.1:*").unwrap();
        std::fs::write(port_file, ep).unwrap();
        zmtp_file::blocking::recv_files(&socket, &options, Some(count), |_| {}).unwrap()
    } else {
        runtime().block_on(async {
            let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Router).unwrap();
            let ep = socket.bind("tcp://127.0.0.1:*").await.unwrap();
            std::fs::write(port_file, ep).unwrap();
            zmtp_file::recv_files(&socket, &options, Some(count), |_| {})
                .await
                .unwrap()
        })
    };
    let saved = outcomes
        .iter()
        .filter(|o| matches!(o, zmtp_file::Outcome::Saved(_)));
    assert_eq!(saved.count() as u64, count, "every file saved");
    println!(
        "received {count} files, peak RSS {} KiB, cpu {:.2} s",
        peak_rss_kib(),
        cpu_seconds()
    );
}

fn tree_send(driver: &str, ep: &str, root: &str) {
    let options = zmtp_file::SendOptions::default();
    let report = if driver == "mio" {
        let ctx = zmtp_mio::Context::new().unwrap();
        let socket = ctx.socket(zmtp_mio::SocketType::Dealer).unwrap();
        socket.connect(ep).unwrap();
        let report =
            zmtp_file::blocking::send_tree(&socket, Path::new(root), &options, |_| {}).unwrap();
        socket.close();
        report
    } else {
        runtime().block_on(async {
            let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Dealer).unwrap();
            socket.connect(ep).unwrap();
            let report = zmtp_file::send_tree(&socket, Path::new(root), &options, |_| {})
                .await
                .unwrap();
            socket.close().await;
            report
        })
    };
    assert!(report.all_saved(), "every file saved");
    println!(
        "sent {} files, peak RSS {} KiB, cpu {:.2} s",
        report.saved.len(),
        peak_rss_kib(),
        cpu_seconds()
    );
}

/// `file_bench DIR tree [FILES] [BIG_MIB] [ROUNDS] [tokio|mio]`.
fn tree_bench(args: &[String]) {
    let usage = "usage: file_bench DIR tree [FILES] [BIG_MIB] [ROUNDS] [tokio|mio]";
    let base = PathBuf::from(&args[0]);
    let files: usize = args.get(2).map_or(10_000, |s| s.parse().expect(usage));
    let big_mib: usize = args.get(3).map_or(256, |s| s.parse().expect(usage));
    let rounds: usize = args.get(4).map_or(3, |s| s.parse().expect(usage));
    let driver = args.get(5).map_or("tokio", String::as_str);
    assert!(driver == "tokio" || driver == "mio", "{usage}");
    let dir = base.join(format!("file-bench-tree-{}", std::process::id()));
    let root = dir.join("tree");
    make_tree(&root, files, big_mib);
    let count = files + 1;
    let bytes = (files * 4096) as f64 + (big_mib as f64) * 1048576.0;
    let s = |p: &Path| p.display().to_string();
    println!(
        "a tree of {files} files of 4 KiB and one of {big_mib} MiB, {rounds} rounds, \
         send_tree on {driver}"
    );
    let mut rows = Vec::new();
    for round in 1..=rounds {
        let mut secs = [0.0; 2];
        let mut lines = [String::new(), String::new()];
        for (i, what) in ["tar", "zmtp"].iter().enumerate() {
            // Each copy into a directory of its own, all removed at the end: removing a
            // tree of thousands of files between copies would make the next one's file
            // creations slower on ext4 (it skips inodes freed in the last minutes).
            let dest = dir.join(format!("in-{round}-{what}"));
            std::fs::create_dir_all(&dest).unwrap();
            let port_file = dir.join("port");
            let _ = std::fs::remove_file(&port_file);
            settle();
            let start = Instant::now();
            let (tx, rx) = if *what == "tar" {
                let rx = child("tar-recv", &[&s(&port_file), &s(&dest)]);
                let port = wait_for(&port_file);
                let tx = child("tar-send", &[&port, &s(&root)]);
                (tx, rx)
            } else {
                let rx = child(
                    "tree-recv",
                    &[driver, &s(&port_file), &s(&dest), &count.to_string()],
                );
                let ep = wait_for(&port_file);
                let tx = child("tree-send", &[driver, &ep, &s(&root)]);
                (tx, rx)
            };
            let (tx, rx) = (output(tx), output(rx));
            secs[i] = start.elapsed().as_secs_f64();
            let big = std::fs::metadata(dest.join("tree/big.bin")).unwrap().len();
            assert_eq!(big, (big_mib as u64) << 20);
            println!(
                "round {round} {what}: {:.3} s, {:.0} files/s, {:.1} MiB/s  sender: {tx}; \
                 receiver: {rx}",
                secs[i],
                count as f64 / secs[i],
                bytes / secs[i] / 1048576.0
            );
            lines[i] = format!("{tx}; {rx}");
        }
        println!("round {round} zmtp / tar rate: {:.2}", secs[0] / secs[1]);
        rows.push((secs, lines));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    println!("\nall rounds ({driver}):");
    let tar: Vec<f64> = rows.iter().map(|r| r.0[0]).collect();
    let zmtp: Vec<f64> = rows.iter().map(|r| r.0[1]).collect();
    let ratio: Vec<f64> = rows.iter().map(|r| r.0[0] / r.0[1]).collect();
    println!("tar seconds:        {}", spread(&tar));
    println!("zmtp seconds:       {}", spread(&zmtp));
    println!("zmtp / tar rate:    {}", spread(&ratio));
    let rss = |side: &str| -> Vec<f64> {
        rows.iter()
            .map(|r| {
                let (tx, rx) = r.1[1].split_once("; ").unwrap();
                field(if side == "tx" { tx } else { rx }, "RSS ") / 1024.0
            })
            .collect()
    };
    println!("zmtp sender peak RSS MiB:   {}", spread(&rss("tx")));
    println!("zmtp receiver peak RSS MiB: {}", spread(&rss("rx")));
}
