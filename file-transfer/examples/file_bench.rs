//! A file over tcp loopback: `send_file`/`recv_files` against a raw copy through a plain
//! TCP socket, each side a process of its own, side by side on the same file.
//!
//! ```text
//! cargo run --release -p zmtp-file --example file_bench -- DIR [MIB] [ROUNDS]
//! ```
//!
//! Writes a MIB-MiB file (default 1024) of pseudo-random bytes to DIR, then for each round
//! copies it raw (the sender reads 256 KiB blocks and writes them to the socket, the
//! receiver writes what it reads to a file) and with the file transfer (default window
//! and chunk; the time includes the sender's hashing and the receiver's check). Prints the
//! rates, their ratio end to end and for the transfer phase alone (the sender's first
//! FETCH to DONE, after hashing), and each process's peak resident set (VmHWM). Removes
//! what it wrote.

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

fn raw_recv(port_file: &str, dest: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(port_file, listener.local_addr().unwrap().port().to_string()).unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    let mut out = std::fs::File::create(dest).unwrap();
    let mut buf = vec![0u8; BLOCK];
    let mut total = 0u64;
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).unwrap();
        total += n as u64;
    }
    println!("received {total} bytes, peak RSS {} KiB", peak_rss_kib());
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
    println!("sent, peak RSS {} KiB", peak_rss_kib());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn zmtp_recv(port_file: &str, dir: &str) {
    runtime().block_on(async {
        let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Router).unwrap();
        let ep = socket.bind("tcp://127.0.0.1:*").await.unwrap();
        std::fs::write(port_file, ep).unwrap();
        let options = zmtp_file::RecvOptions::new(dir);
        let outcome = zmtp_file::recv_files(&socket, &options, Some(1), |_| {})
            .await
            .unwrap()
            .remove(0)
            .saved()
            .expect("saved");
        println!(
            "received {} bytes, peak RSS {} KiB",
            outcome.fetched,
            peak_rss_kib()
        );
    });
}

fn zmtp_send(ep: &str, source: &str) {
    runtime().block_on(async {
        let socket = zmtp_tokio::Socket::new(zmtp_tokio::SocketType::Dealer).unwrap();
        socket.connect(ep).unwrap();
        let start = Instant::now();
        let mut hashed = None;
        let report = zmtp_file::send_file(&socket, Path::new(source), Some("zmtp.bin"), |p| {
            if p.phase == zmtp_file::Phase::Sending && hashed.is_none() {
                hashed = Some(start.elapsed());
            }
        })
        .await
        .unwrap();
        let hashed = hashed.unwrap_or_default().as_secs_f64();
        let moving = start.elapsed().as_secs_f64() - hashed;
        println!(
            "sent {} bytes, hashing {hashed:.3} s, transfer {moving:.3} s, peak RSS {} KiB",
            report.sent,
            peak_rss_kib()
        );
        socket.close().await;
    });
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("raw-recv") => return raw_recv(&args[1], &args[2]),
        Some("raw-send") => return raw_send(&args[1], &args[2]),
        Some("zmtp-recv") => return zmtp_recv(&args[1], &args[2]),
        Some("zmtp-send") => return zmtp_send(&args[1], &args[2]),
        _ => {}
    }
    let base = PathBuf::from(args.first().expect("usage: file_bench DIR [MIB] [ROUNDS]"));
    let mib: usize = args.get(1).map_or(1024, |s| s.parse().unwrap());
    let rounds: usize = args.get(2).map_or(2, |s| s.parse().unwrap());
    let dir = base.join(format!("file-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let source = dir.join("source.bin");
    make_file(&source, mib);
    let bytes = (mib as f64) * 1048576.0;
    let s = |p: &Path| p.display().to_string();
    let (mut best_raw, mut best_zmtp) = (0f64, 0f64);
    for round in 1..=rounds {
        // Raw TCP.
        let port_file = dir.join("raw.port");
        let _ = std::fs::remove_file(&port_file);
        let raw_dest = dir.join("raw.bin");
        let start = Instant::now();
        let rx = child("raw-recv", &[&s(&port_file), &s(&raw_dest)]);
        let port = wait_for(&port_file);
        let tx = child("raw-send", &[&port, &s(&source)]);
        let (tx, rx) = (output(tx), output(rx));
        let raw = bytes / start.elapsed().as_secs_f64() / 1048576.0;
        std::fs::remove_file(&raw_dest).unwrap();
        println!("round {round} raw tcp:  {raw:8.1} MiB/s  sender: {tx}; receiver: {rx}");
        // The file transfer.
        let ep_file = dir.join("zmtp.ep");
        let _ = std::fs::remove_file(&ep_file);
        let start = Instant::now();
        let rx = child("zmtp-recv", &[&s(&ep_file), &s(&dir.join("in"))]);
        let ep = wait_for(&ep_file);
        let tx = child("zmtp-send", &[&ep, &s(&source)]);
        let (tx, rx) = (output(tx), output(rx));
        let zmtp = bytes / start.elapsed().as_secs_f64() / 1048576.0;
        std::fs::remove_file(dir.join("in/zmtp.bin")).unwrap();
        // The sender's transfer phase (first FETCH to DONE), from its report.
        let moving: f64 = tx
            .split("transfer ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or(f64::NAN);
        let phase = bytes / moving / 1048576.0;
        println!("round {round} zmtp-file: {zmtp:8.1} MiB/s  sender: {tx}; receiver: {rx}");
        println!(
            "round {round} ratios: end to end {:.2}, transfer phase ({phase:.1} MiB/s) {:.2}",
            zmtp / raw,
            phase / raw
        );
        best_raw = best_raw.max(raw);
        best_zmtp = best_zmtp.max(zmtp);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "best of {rounds}: raw {best_raw:.1} MiB/s, zmtp-file {best_zmtp:.1} MiB/s, ratio {:.2}",
        best_zmtp / best_raw
    );
}
