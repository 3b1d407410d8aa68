//! The raw floor, an anchor: plain blocking std sockets (TCP with `TCP_NODELAY`, or Unix),
//! no ZeroMQ library, no handshake, carrying the same ZMTP frames a ZeroMQ socket would.
//!
//! - Throughput (PUSH/PULL, and PUB/SUB, whose data frames are the same): the sender copies
//!   each message from its reused buffer into a 256 KiB batch of frames (short frame: flags
//!   0 and a length byte; long frame: flags 0x02 and an 8-byte big-endian length) and
//!   writes the batch with one `write_all` when the next frame does not fit. The receiver
//!   reads up to 256 KiB at a time, parses every frame and checks it as the other peers do
//!   (size, tag, sequence number). So it is what a ZMTP implementation could reach with no
//!   per-message cost beyond framing, copying and checking. For PUB/SUB the sender first
//!   writes one warm-up frame, which the receiver takes as the sign that it is in place, as a
//!   subscriber's first warm-up message is for the others; there is no subscription.
//! - Latency (REQ/REP): a ping-pong. The REQ writes what a ZeroMQ REQ writes (an empty
//!   delimiter frame with MORE, then the body frame) in one write and reads until the reply
//!   is whole; the REP reads a whole request and writes the same bytes back in one write.
//!   With `ZMTP_BENCH_RAW_WAIT=poll` both sides' sockets are non-blocking and every read
//!   that would block first waits in `poll(2)` on the socket and an eventfd, as a thread
//!   that can be woken for something else must (a driver's receiving thread): the floor
//!   for such a wait, against the blocking `read` of the default.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Instant;

use crate::peer::{
    fill, go_signal, latency_result, say, throughput_result, tick, Checker, PeerArgs, Role, DATA,
    WARMUP,
};

/// Bytes written (and read) at a time by the throughput peers.
const BATCH: usize = 256 * 1024;
/// The frame flag bits: more frames follow, and an 8-byte length.
const MORE: u8 = 0x01;
const LONG: u8 = 0x02;

fn err(e: impl std::fmt::Display) -> String {
    format!("raw: {e}")
}

/// Either kind of connected stream.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.retry(libc::POLLIN, |s| match s {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        })
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.retry(libc::POLLOUT, |s| match s {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The eventfd a `ZMTP_BENCH_RAW_WAIT=poll` peer waits on beside its socket (never
/// written: it stands for the wake-ups a real receiver must be open to).
static POLL_WAIT: std::sync::OnceLock<std::os::fd::OwnedFd> = std::sync::OnceLock::new();

/// With `ZMTP_BENCH_RAW_WAIT=poll`, make `stream` non-blocking, its reads waiting in
/// `poll(2)` (round trips only: the throughput peers block).
fn poll_wait(stream: &Stream) -> Result<(), String> {
    match std::env::var("ZMTP_BENCH_RAW_WAIT").as_deref() {
        Err(_) | Ok("read") => return Ok(()),
        Ok("poll") => {}
        Ok(other) => return Err(format!("ZMTP_BENCH_RAW_WAIT={other}: read or poll")),
    }
    // SAFETY: eventfd(2) with valid flags; a non-negative result is a new descriptor that
    // nothing else owns.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(err(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just created and is owned here alone.
    let _ = POLL_WAIT.set(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
    match stream {
        Stream::Tcp(s) => s.set_nonblocking(true),
        Stream::Unix(s) => s.set_nonblocking(true),
    }
    .map_err(err)
}

impl Stream {
    /// `op` (a read or a write), after waits for `events` while it would block (only
    /// with `ZMTP_BENCH_RAW_WAIT=poll`: otherwise the socket blocks).
    fn retry(
        &mut self,
        events: libc::c_short,
        mut op: impl FnMut(&mut Stream) -> std::io::Result<usize>,
    ) -> std::io::Result<usize> {
        loop {
            match (op(self), POLL_WAIT.get()) {
                (Err(e), Some(wake)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wait(wake, events)?
                }
                (done, _) => return done,
            }
        }
    }

    /// Wait until the socket has `events` or `wake` is readable.
    fn wait(&self, wake: &std::os::fd::OwnedFd, events: libc::c_short) -> std::io::Result<()> {
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        };
        let mut fds = [
            libc::pollfd {
                fd,
                events,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Run one peer.
pub fn run(args: &PeerArgs) -> Result<Option<String>, String> {
    match args.role {
        Role::Pull | Role::Sub => receive_timed(accept(&args.endpoint)?, args),
        Role::Push | Role::Pub => send_all(connect(&args.endpoint)?, args).map(|()| None),
        Role::Rep => echo(accept(&args.endpoint)?, args).map(|()| None),
        Role::Req => round_trips(connect(&args.endpoint)?, args).map(Some),
        Role::Radio | Role::Dish => Err(crate::peer::OURS_ONLY.to_string()),
    }
}

/// Bind, report the endpoint, accept one connection.
fn accept(endpoint: &str) -> Result<Stream, String> {
    if let Some(addr) = endpoint.strip_prefix("tcp://") {
        let listener = TcpListener::bind(addr.replace(":*", ":0")).map_err(err)?;
        say(&format!(
            "ENDPOINT tcp://{}",
            listener.local_addr().map_err(err)?
        ));
        let (stream, _) = listener.accept().map_err(err)?;
        stream.set_nodelay(true).map_err(err)?;
        Ok(Stream::Tcp(stream))
    } else if let Some(path) = endpoint.strip_prefix("ipc://") {
        let listener = UnixListener::bind(path).map_err(err)?;
        say(&format!("ENDPOINT ipc://{path}"));
        let (stream, _) = listener.accept().map_err(err)?;
        Ok(Stream::Unix(stream))
    } else {
        Err(format!("unsupported endpoint {endpoint}"))
    }
}

fn connect(endpoint: &str) -> Result<Stream, String> {
    if let Some(addr) = endpoint.strip_prefix("tcp://") {
        let stream = TcpStream::connect(addr).map_err(err)?;
        stream.set_nodelay(true).map_err(err)?;
        Ok(Stream::Tcp(stream))
    } else if let Some(path) = endpoint.strip_prefix("ipc://") {
        Ok(Stream::Unix(UnixStream::connect(path).map_err(err)?))
    } else {
        Err(format!("unsupported endpoint {endpoint}"))
    }
}

/// Append one frame (flags, length, body) to `out`.
fn put_frame(out: &mut Vec<u8>, more: bool, body: &[u8]) {
    let more = if more { MORE } else { 0 };
    match u8::try_from(body.len()) {
        Ok(len) => out.extend_from_slice(&[more, len]),
        Err(_) => {
            out.push(more | LONG);
            out.extend_from_slice(&(body.len() as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(body);
}

/// The bytes one frame of `size` bytes takes on the wire.
fn frame_len(size: usize) -> usize {
    size + if size <= 255 { 2 } else { 9 }
}

/// The frame at the start of `buf`, if it is whole: (flags, body range).
fn parse_frame(buf: &[u8]) -> Result<Option<(u8, std::ops::Range<usize>)>, String> {
    let Some(&flags) = buf.first() else {
        return Ok(None);
    };
    if flags & !(MORE | LONG) != 0 {
        return Err(format!("unexpected frame flags {flags:#x}"));
    }
    let (header, len) = if flags & LONG == 0 {
        match buf.get(1) {
            Some(&len) => (2, usize::from(len)),
            None => return Ok(None),
        }
    } else {
        match buf.get(1..9) {
            Some(bytes) => {
                let mut len = [0u8; 8];
                len.copy_from_slice(bytes);
                let len = usize::try_from(u64::from_be_bytes(len)).map_err(err)?;
                (9, len)
            }
            None => return Ok(None),
        }
    };
    if buf.len() - header < len {
        return Ok(None);
    }
    Ok(Some((flags, header..header + len)))
}

/// Received bytes not yet parsed: `buf[start..end]`.
struct Input {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Input {
    fn new(stream: Stream, capacity: usize) -> Input {
        Input {
            stream,
            buf: vec![0; capacity],
            start: 0,
            end: 0,
        }
    }

    /// The next whole frame (flags and body), reading as needed.
    fn frame(&mut self) -> Result<(u8, &[u8]), String> {
        loop {
            if let Some((flags, body)) = parse_frame(&self.buf[self.start..self.end])? {
                let body = self.start + body.start..self.start + body.end;
                self.start = body.end;
                return Ok((flags, &self.buf[body]));
            }
            // Move the partial frame to the front, grow if one frame needs more, read.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.end == self.buf.len() {
                let len = self.buf.len();
                self.buf.resize(len * 2, 0);
            }
            let n = self.stream.read(&mut self.buf[self.end..]).map_err(err)?;
            if n == 0 {
                return Err("the connection ended".to_string());
            }
            self.end += n;
        }
    }

    /// The next single-frame message.
    fn message(&mut self) -> Result<&[u8], String> {
        match self.frame()? {
            (0 | LONG, body) => Ok(body),
            (flags, _) => Err(format!("a multipart message (flags {flags:#x})")),
        }
    }
}

fn receive_timed(stream: Stream, args: &PeerArgs) -> Result<Option<String>, String> {
    let mut input = Input::new(stream, BATCH.max(2 * frame_len(args.size)));
    let mut checker = Checker::new(args.size);
    while !checker.first(args.role, input.message()?)? {}
    let start = Instant::now();
    for i in 1..args.count {
        checker.check(input.message()?)?;
        tick(i);
    }
    Ok(Some(throughput_result(
        start.elapsed(),
        args.count.saturating_sub(1),
    )))
}

fn send_all(mut stream: Stream, args: &PeerArgs) -> Result<(), String> {
    let mut msg = vec![0u8; args.size];
    let mut batch = Vec::with_capacity(BATCH.max(frame_len(args.size)));
    if args.role == Role::Pub {
        // One warm-up frame tells the receiver the connection is up; then wait for GO.
        let go = go_signal();
        fill(&mut msg, WARMUP, 0);
        put_frame(&mut batch, false, &msg);
        stream.write_all(&batch).map_err(err)?;
        batch.clear();
        while !go.load(std::sync::atomic::Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    for seq in 0..args.count {
        if batch.len() + frame_len(args.size) > batch.capacity() {
            stream.write_all(&batch).map_err(err)?;
            batch.clear();
        }
        fill(&mut msg, DATA, seq);
        put_frame(&mut batch, false, &msg);
        tick(seq);
    }
    stream.write_all(&batch).map_err(err)?;
    Ok(())
}

fn echo(stream: Stream, args: &PeerArgs) -> Result<(), String> {
    poll_wait(&stream)?;
    let mut input = Input::new(stream, 2 * frame_len(args.size) + 64);
    let mut reply = Vec::with_capacity(frame_len(args.size) + 2);
    for i in 0..args.warmup + args.count {
        reply.clear();
        loop {
            let (flags, body) = input.frame()?;
            put_frame(&mut reply, flags & MORE != 0, body);
            if flags & MORE == 0 {
                break;
            }
        }
        input.stream.write_all(&reply).map_err(err)?;
        tick(i);
    }
    Ok(())
}

fn round_trips(stream: Stream, args: &PeerArgs) -> Result<String, String> {
    poll_wait(&stream)?;
    let mut input = Input::new(stream, 2 * frame_len(args.size) + 64);
    let mut msg = vec![0u8; args.size];
    let mut request = Vec::with_capacity(frame_len(args.size) + 2);
    let mut samples = Vec::with_capacity(usize::try_from(args.count).unwrap_or(0));
    for i in 0..args.warmup + args.count {
        fill(&mut msg, DATA, i);
        let start = Instant::now();
        request.clear();
        put_frame(&mut request, true, &[]);
        put_frame(&mut request, false, &msg);
        input.stream.write_all(&request).map_err(err)?;
        match input.frame()? {
            (MORE, []) => {}
            (flags, body) => {
                return Err(format!(
                    "reply {i} starts with a {}-byte frame (flags {flags:#x}), not the delimiter",
                    body.len()
                ))
            }
        }
        let body = input.message()?;
        let took = start.elapsed();
        if body != &msg[..] {
            return Err(format!("reply {i} differs from its request"));
        }
        if i >= args.warmup {
            samples.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
        tick(i);
    }
    Ok(latency_result(samples))
}
