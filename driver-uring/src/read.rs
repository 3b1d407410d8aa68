//! A read straight into a buffer's spare capacity, for the driver's reads that need no
//! ring (a thread reading a stream it claimed).

use std::io;
use std::os::fd::BorrowedFd;

use bytes::BytesMut;

/// Read from `fd` once into the spare capacity of `buf` (the caller reserves it),
/// appending what was read: one `read(2)`, with neither a copy nor the zeroing a safe
/// read into a slice would need first. Returns how many bytes were read: 0 at the
/// stream's end, or if `buf` has no spare capacity.
pub fn read_into(fd: BorrowedFd<'_>, buf: &mut BytesMut) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    if spare.is_empty() {
        return Ok(0);
    }
    let (read, _) = rustix::io::read(fd, spare)?;
    let n = read.len();
    // SAFETY: `read(2)` initialised the first `n` bytes of the spare capacity (rustix hands
    // them back as the initialised part), which follow the buffer's initialised `len`
    // bytes: the first `len + n` bytes are initialised, and within its capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn a_read_appends_what_came_and_says_when_nothing_did_or_the_stream_ended() {
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut buf = BytesMut::from(&b"kept"[..]);
        buf.reserve(16);
        let e = read_into(b.as_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(&buf[..], b"kept");
        a.write_all(b"0123456789abcdefXYZ").unwrap();
        // At most the spare capacity: the rest waits for the next read.
        let room = buf.capacity() - buf.len();
        let n = read_into(b.as_fd(), &mut buf).unwrap();
        assert_eq!(n, room.min(19));
        assert_eq!(&buf[..4 + n], &b"kept0123456789abcdefXYZ"[..4 + n]);
        buf.reserve(64);
        let m = read_into(b.as_fd(), &mut buf).unwrap();
        assert_eq!(n + m, 19);
        assert_eq!(&buf[..], b"kept0123456789abcdefXYZ");
        // No room: nothing read.
        let mut full = BytesMut::new();
        assert_eq!(read_into(b.as_fd(), &mut full).unwrap(), 0);
        drop(a);
        buf.reserve(8);
        assert_eq!(read_into(b.as_fd(), &mut buf).unwrap(), 0, "the end");
    }
}
