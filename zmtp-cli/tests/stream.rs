//! The `zmtp` binary with `-t stream` (raw TCP): `recv` printing chunks and notifications,
//! `recv --echo` writing chunks back, and `send` writing its frames raw and closing.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

use common::{ok, run, spawn, text, GUARD};

/// The `host:port` of a `tcp://` endpoint.
fn addr(ep: &str) -> &str {
    ep.strip_prefix("tcp://").expect("a tcp endpoint")
}

#[test]
fn recv_prints_notifications_and_chunks_by_routing_id() {
    let mut recv = spawn(
        &[
            "recv",
            "-t",
            "stream",
            "-b",
            "tcp://127.0.0.1:*",
            "-v",
            "-n",
            "3",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = recv.bound_endpoint();
    let mut client = TcpStream::connect(addr(&ep)).unwrap();
    client.write_all(b"hello\tworld\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    client.shutdown(Shutdown::Both).unwrap();
    drop(client);
    let out = recv.finish();
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(lines.len(), 3, "{out:?}");
    let id = lines[0];
    assert_eq!(id.len(), 10, "a 5-byte id in hex: {out:?}");
    assert!(id.starts_with("00"), "{out:?}");
    assert_eq!(lines[1], format!("{id}\thello\\tworld\\n"));
    assert_eq!(lines[2], id, "the disconnect notification");
}

#[test]
fn recv_echo_writes_every_chunk_back() {
    let mut recv = spawn(
        &[
            "recv",
            "-t",
            "stream",
            "-b",
            "tcp://127.0.0.1:*",
            "-v",
            "--echo",
            "--hex",
            "-n",
            "2",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = recv.bound_endpoint();
    let mut client = TcpStream::connect(addr(&ep)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    client.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
    let out = recv.finish();
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(lines[1], format!("{}\t70696e67", lines[0]), "{out:?}");
}

#[test]
fn send_writes_the_frames_raw_then_closes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://{}", listener.local_addr().unwrap());
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut all = Vec::new();
        conn.read_to_end(&mut all).unwrap();
        all
    });
    let out = run(
        &[
            "send",
            "-t",
            "stream",
            "-c",
            &ep,
            "--timeout",
            GUARD,
            "GET / HTTP/1.0\r\n",
            "\r\n",
        ],
        None,
    );
    ok(&out);
    // Everything, then the end of the stream: no greeting, no framing.
    assert_eq!(reader.join().unwrap(), b"GET / HTTP/1.0\r\n\r\n");
}

#[test]
fn send_to_recv_over_stream() {
    let mut recv = spawn(
        &[
            "recv",
            "-t",
            "stream",
            "-b",
            "tcp://127.0.0.1:*",
            "-v",
            "-n",
            "3",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = recv.bound_endpoint();
    ok(&run(
        &[
            "send",
            "-t",
            "stream",
            "-c",
            &ep,
            "--timeout",
            GUARD,
            "raw bytes",
        ],
        None,
    ));
    let out = recv.finish();
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(
        lines,
        [
            lines[0].to_string(),
            format!("{}\traw bytes", lines[0]),
            lines[0].to_string()
        ],
        "{out:?}"
    );
}
