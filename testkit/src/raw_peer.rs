//! A ZMTP peer written by hand over a plain `TcpStream`, for the hostile-peer suites (the
//! async drivers', the blocking driver's and the C ABI's): frames and commands built byte
//! by byte, a NULL handshake, reads that tell a closed connection, and the process's
//! resident memory and open descriptors. Plain Rust over `std::net`, linking no libzmq, so
//! that the C ABI's tests can use it without the system libzmq's `zmq_*` symbols.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The process's open file descriptors (the entries of `/proc/self/fd`).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// The process's resident memory in bytes: `resident` pages of `/proc/self/statm` (4 KiB
/// pages, as on x86-64 and most aarch64 kernels).
pub fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("resident pages in /proc/self/statm");
    pages * 4096
}

/// The socket address of `tcp://127.0.0.1:port`.
pub fn tcp_addr(endpoint: &str) -> SocketAddr {
    endpoint
        .strip_prefix("tcp://")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("not a tcp endpoint: {endpoint}"))
}

/// A valid ZMTP 3.1 NULL greeting, as-server 0 (libzmq's).
pub fn greeting() -> [u8; 64] {
    crate::wire::LIBZMQ_GREETING
}

/// A frame of `body` with `flags` (0x01 MORE, 0x04 command); the long form (flag 0x02, an
/// 8-byte size) when the body needs it.
pub fn frame(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut frame = match u8::try_from(body.len()) {
        Ok(len) => vec![flags, len],
        Err(_) => {
            let mut header = vec![flags | 0x02];
            header.extend_from_slice(&(body.len() as u64).to_be_bytes());
            header
        }
    };
    frame.extend_from_slice(body);
    frame
}

/// A command frame: `name` then `data`.
pub fn command(name: &[u8], data: &[u8]) -> Vec<u8> {
    let mut body = vec![name.len() as u8];
    body.extend_from_slice(name);
    body.extend_from_slice(data);
    frame(0x04, &body)
}

/// A READY command frame with only `Socket-Type`.
pub fn ready(socket_type: &str) -> Vec<u8> {
    let mut properties = vec![11];
    properties.extend_from_slice(b"Socket-Type");
    properties.extend_from_slice(&(socket_type.len() as u32).to_be_bytes());
    properties.extend_from_slice(socket_type.as_bytes());
    command(b"READY", &properties)
}

/// A SUBSCRIBE command frame (ZMTP 3.1).
pub fn subscribe(topic: &[u8]) -> Vec<u8> {
    command(b"SUBSCRIBE", topic)
}

/// Read one frame: its flags and body.
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut flags = [0u8; 1];
    s.read_exact(&mut flags)?;
    let len = if flags[0] & 0x02 != 0 {
        let mut len = [0u8; 8];
        s.read_exact(&mut len)?;
        u64::from_be_bytes(len)
    } else {
        let mut len = [0u8; 1];
        s.read_exact(&mut len)?;
        u64::from(len[0])
    };
    assert!(len < 1 << 20, "a frame of {len} bytes from our socket");
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body)?;
    Ok((flags[0], body))
}

/// Connect and complete a NULL handshake as `socket_type`: send our greeting and READY, read
/// the socket's greeting and READY. The stream reads with a timeout afterwards.
pub fn raw_handshake(addr: SocketAddr, socket_type: &str) -> TcpStream {
    raw_handshake_within(addr, socket_type, Duration::from_secs(2))
}

/// [`raw_handshake`] with the stream's read timeout `limit`.
pub fn raw_handshake_within(addr: SocketAddr, socket_type: &str, limit: Duration) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("raw connect");
    s.set_nodelay(true).expect("TCP_NODELAY");
    s.set_read_timeout(Some(limit)).expect("read timeout");
    let mut out = greeting().to_vec();
    out.extend_from_slice(&ready(socket_type));
    s.write_all(&out).expect("raw greeting and READY");
    let mut theirs = [0u8; 64];
    s.read_exact(&mut theirs).expect("our socket's greeting");
    assert_eq!(
        (theirs[0], theirs[9] & 1, theirs[10]),
        (0xff, 1, 3),
        "greeting {theirs:02x?}"
    );
    assert_eq!(&theirs[12..16], b"NULL", "mechanism in {theirs:02x?}");
    let (flags, body) = read_frame(&mut s).expect("our socket's READY");
    assert_eq!(flags & 0x04, 0x04, "READY is a command");
    assert!(body.starts_with(b"\x05READY"), "READY body {body:02x?}");
    s
}

/// Read and discard until the peer closes (EOF or reset); when it did, or `None` if it was
/// still open at `limit`.
pub fn wait_closed(s: &mut TcpStream, limit: Duration) -> Option<Instant> {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left)).expect("read timeout");
        match s.read(&mut buf) {
            Ok(0) => return Some(Instant::now()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Some(Instant::now()),
        }
    }
}

/// What a read of everything a non-blocking stream has showed.
pub struct Drained {
    /// Some bytes came.
    pub data: bool,
    /// The peer closed (EOF or reset).
    pub closed: bool,
}

/// Read what a non-blocking stream has, and whether its peer has closed it.
pub fn drain(s: &mut TcpStream) -> Drained {
    let mut buf = [0u8; 512];
    let mut data = false;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Drained { data, closed: true },
            Ok(_) => data = true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                return Drained {
                    data,
                    closed: false,
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Drained { data, closed: true },
        }
    }
}
