//! The building blocks over real sockets: multishot receives into provided buffers (lent
//! out, exhausted, given back across threads), multishot accept, vectored writes, a
//! timeout and the eventfd wake-up.
#![cfg(target_os = "linux")]

use std::io::{IoSlice, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use zmtp_uring::io_uring::{cqueue, opcode, types};
use zmtp_uring::{BufRing, Reaped, Ring, Wake};

fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (a, b)
}

/// Submit `entry` and wait for at least one completion; returns all that are there.
fn submit_wait(
    ring: &mut Ring,
    entry: Option<&zmtp_uring::io_uring::squeue::Entry>,
) -> Vec<cqueue::Entry> {
    if let Some(e) = entry {
        // SAFETY: every entry these tests submit points only at memory that outlives its
        // completion (buffers and iovecs kept alive by the test until it is reaped).
        unsafe {
            ring.uring()
                .submission()
                .push(e)
                .expect("room in the queue")
        };
    }
    ring.uring().submit_and_wait(1).expect("submit");
    ring.uring().completion().collect()
}

fn recv_multi(fd: &TcpStream, group: u16) -> zmtp_uring::io_uring::squeue::Entry {
    opcode::RecvMulti::new(types::Fd(fd.as_raw_fd()), group)
        .build()
        .user_data(7)
}

#[test]
fn a_multishot_receive_lends_each_buffer_without_a_copy() {
    let mut ring = Ring::new(16).unwrap();
    let mut bufs = BufRing::new(&ring, 1, 8, 4096).unwrap();
    let (mut a, b) = pair();
    a.write_all(b"hello").unwrap();
    let cqes = submit_wait(&mut ring, Some(&recv_multi(&b, bufs.group())));
    assert_eq!(cqes.len(), 1);
    let c = &cqes[0];
    assert_eq!((c.user_data(), c.result()), (7, 5));
    assert!(cqueue::more(c.flags()), "the receive stays armed");
    let bid = cqueue::buffer_select(c.flags()).expect("a buffer was chosen");
    let first = bufs.take(bid, 5).unwrap();
    assert_eq!(&first[..], b"hello");
    assert_eq!(bufs.lent_out(), 1);
    // Not lent twice, nor past its size, nor out of range.
    assert!(bufs.take(bid, 5).is_none());
    assert!(bufs.take(100, 1).is_none());
    // More data: another buffer, the same armed receive.
    a.write_all(b"world").unwrap();
    let cqes = submit_wait(&mut ring, None);
    let bid2 = cqueue::buffer_select(cqes[0].flags()).unwrap();
    assert_ne!(bid, bid2);
    let second = bufs.take(bid2, cqes[0].result() as usize).unwrap();
    assert_eq!(&second[..], b"world");
    // A slice shares the buffer: it goes back only with the last reference.
    let tail = first.slice(1..);
    drop(first);
    assert_eq!(bufs.recycle(), 0);
    drop(tail);
    drop(second);
    assert_eq!(bufs.recycle(), 2);
    assert_eq!(bufs.lent_out(), 0);
    bufs.release(&ring).unwrap();
}

#[test]
fn exhausted_buffers_end_the_receive_until_they_come_back_from_any_thread() {
    let mut ring = Ring::new(16).unwrap();
    let mut bufs = BufRing::new(&ring, 2, 2, 16).unwrap();
    let wake = std::sync::Arc::new(Wake::new().unwrap());
    bufs.wake_on_return(wake.clone());
    let (mut a, b) = pair();
    let sent: Vec<u8> = (0..100u8).collect();
    a.write_all(&sent).unwrap();
    let mut got = Vec::new();
    let mut held = Vec::new();
    let mut entry = Some(recv_multi(&b, bufs.group()));
    let mut ended = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < sent.len() {
        assert!(
            Instant::now() < deadline,
            "received {} of {}",
            got.len(),
            sent.len()
        );
        for c in submit_wait(&mut ring, entry.take().as_ref()) {
            if c.result() >= 0 {
                let bid = cqueue::buffer_select(c.flags()).unwrap();
                let bytes = bufs.take(bid, c.result() as usize).unwrap();
                got.extend_from_slice(&bytes);
                held.push(bytes);
            } else {
                // Out of buffers: the multishot receive ends (-ENOBUFS, no MORE).
                assert_eq!(-c.result(), rustix::io::Errno::NOBUFS.raw_os_error());
                assert!(!cqueue::more(c.flags()));
                ended += 1;
                // Give them back from another thread, which wakes the ring's thread
                // (once) since the ring is starving; then arm the receive again.
                bufs.starving();
                let back = std::mem::take(&mut held);
                std::thread::spawn(move || drop(back)).join().unwrap();
                let mut count = [0u8; 8];
                assert_eq!(rustix::io::read(&*wake, &mut count).unwrap(), 8);
                assert_eq!(u64::from_ne_bytes(count), 1, "one wake for the returns");
                wake.woken();
                assert_eq!(bufs.recycle(), 2);
                entry = Some(recv_multi(&b, bufs.group()));
            }
        }
    }
    assert_eq!(got, sent, "every byte, in order");
    assert!(
        ended >= 1,
        "two 16-byte buffers cannot hold 100 bytes at once"
    );
    drop(held);
    bufs.recycle();
    bufs.release(&ring).unwrap();
}

#[test]
fn multishot_accept_and_a_vectored_write() {
    let mut ring = Ring::new(16).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let accept = opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
        .build()
        .user_data(1);
    let c1 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let mut c2 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let mut accepted = Vec::new();
    let mut entry = Some(accept);
    while accepted.len() < 2 {
        for c in submit_wait(&mut ring, entry.take().as_ref()) {
            assert!(c.result() >= 0, "accept: {}", c.result());
            assert!(cqueue::more(c.flags()), "the accept stays armed");
            // SAFETY: a successful accept's result is a new descriptor that nothing else
            // owns.
            accepted.push(unsafe { OwnedFd::from_raw_fd(c.result()) });
        }
    }
    // Two slices in one operation, to the accepted side of the second connection.
    let mine = accepted
        .into_iter()
        .map(TcpStream::from)
        .find(|s| s.peer_addr().unwrap() == c2.local_addr().unwrap())
        .expect("the second connection was accepted");
    drop(c1);
    // `IoSlice` has the layout of `struct iovec` on Unix.
    let iov = [IoSlice::new(b"head:"), IoSlice::new(b"body")];
    let w = opcode::Writev::new(types::Fd(mine.as_raw_fd()), iov.as_ptr().cast(), 2)
        .build()
        .user_data(2);
    let done = submit_wait(&mut ring, Some(&w));
    assert_eq!((done[0].user_data(), done[0].result()), (2, 9));
    let mut buf = [0u8; 9];
    c2.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"head:body");
}

#[test]
fn a_timeout_fires_and_a_wake_ends_the_wait() {
    let mut ring = Ring::new(16).unwrap();
    let ts = types::Timespec::new().nsec(20_000_000);
    let t = opcode::Timeout::new(&ts).build().user_data(3);
    let start = Instant::now();
    let c = submit_wait(&mut ring, Some(&t));
    assert_eq!(c[0].user_data(), 3);
    assert_eq!(-c[0].result(), rustix::io::Errno::TIME.raw_os_error());
    assert!(start.elapsed() >= Duration::from_millis(20));

    let wake = std::sync::Arc::new(Wake::new().unwrap());
    let mut counter = [0u8; 8];
    let read = opcode::Read::new(types::Fd(wake.raw_fd()), counter.as_mut_ptr(), 8)
        .build()
        .user_data(4);
    let other = wake.clone();
    let waker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        assert!(other.wake(), "the first wake writes");
        assert!(
            !other.wake(),
            "a second one, before the ring saw the first, does not"
        );
    });
    let c = submit_wait(&mut ring, Some(&read));
    assert_eq!((c[0].user_data(), c[0].result()), (4, 8));
    assert_eq!(u64::from_ne_bytes(counter), 1);
    waker.join().unwrap();
    wake.woken();
    assert!(wake.wake(), "after the ring saw it, a wake writes again");
}

/// Reap until `done` says so, within five seconds.
fn reap_until(ring: &mut Ring, reaped: &mut Reaped, mut done: impl FnMut(&Reaped) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done(reaped) {
        assert!(Instant::now() < deadline, "nothing more came: {reaped:?}");
        let ts = types::Timespec::from(Duration::from_millis(50));
        let args = types::SubmitArgs::new().timespec(&ts);
        let _ = ring.uring().submitter().submit_with_args(1, &args);
        ring.reap(reaped);
    }
}

#[test]
fn a_ring_accept_hands_out_owned_nonblocking_descriptors_until_cancelled() {
    let mut ring = Ring::new(16).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    // As the driver's listeners are.
    l.set_nonblocking(true).unwrap();
    assert!(ring.accept_multi(l.as_raw_fd(), 10));
    let c1 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let c2 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let mut reaped = Reaped::default();
    reap_until(&mut ring, &mut reaped, |r| r.accepted.len() >= 2);
    let mut peers = Vec::new();
    for a in reaped.accepted.drain(..) {
        assert_eq!(a.user_data, 10);
        assert!(a.more, "the accept stays armed");
        let fd = a.result.expect("accepted");
        let flags = rustix::fs::fcntl_getfl(&fd).unwrap();
        assert!(flags.contains(rustix::fs::OFlags::NONBLOCK), "non-blocking");
        let fdflags = rustix::io::fcntl_getfd(&fd).unwrap();
        assert!(
            fdflags.contains(rustix::io::FdFlags::CLOEXEC),
            "close-on-exec"
        );
        peers.push(TcpStream::from(fd).peer_addr().unwrap());
    }
    peers.sort();
    let mut want = vec![c1.local_addr().unwrap(), c2.local_addr().unwrap()];
    want.sort();
    assert_eq!(peers, want);
    // Cancelled: a last completion without `more`, and the ring forgets the accept.
    let cancel = opcode::AsyncCancel::new(10).build().user_data(11);
    // SAFETY: a cancel points at no memory.
    unsafe { ring.uring().submission().push(&cancel).unwrap() };
    reap_until(&mut ring, &mut reaped, |r| !r.accepted.is_empty());
    let last = reaped.accepted.pop().unwrap();
    assert!(!last.more, "the kernel ended it");
    assert_eq!(
        last.result.unwrap_err().raw_os_error(),
        Some(rustix::io::Errno::CANCELED.raw_os_error())
    );
    // A connection now waits in the backlog, unaccepted; armed again, the ring takes it.
    let c3 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    ring.reap(&mut reaped);
    assert!(reaped.accepted.is_empty(), "no accept runs: {reaped:?}");
    assert!(ring.accept_multi(l.as_raw_fd(), 12));
    reap_until(&mut ring, &mut reaped, |r| !r.accepted.is_empty());
    let a = reaped.accepted.pop().unwrap();
    assert_eq!(a.user_data, 12);
    let s = TcpStream::from(a.result.unwrap());
    assert_eq!(s.peer_addr().unwrap(), c3.local_addr().unwrap());
}

/// Drop the first `n` bytes, written, off `rest`.
fn drop_written(rest: &mut std::collections::VecDeque<bytes::Bytes>, mut n: usize) {
    while let Some(front) = rest.front_mut() {
        if n < front.len() {
            *front = front.slice(n..);
            break;
        }
        n -= front.len();
        rest.pop_front();
    }
}

#[test]
fn a_ring_write_gives_its_chunks_back_and_a_partial_one_goes_on_with_the_rest() {
    let mut ring = Ring::new(16).unwrap();
    let (mut a, b) = pair();
    b.set_nonblocking(true).unwrap();
    // Small buffers both ways, so that 4 MiB cannot go at once.
    rustix::net::sockopt::set_socket_send_buffer_size(&b, 16 * 1024).unwrap();
    rustix::net::sockopt::set_socket_recv_buffer_size(&a, 16 * 1024).unwrap();
    let sent: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut rest: std::collections::VecDeque<bytes::Bytes> = sent
        .chunks(100_000)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        // Slowly at first, so that writes find the buffer full.
        std::thread::sleep(Duration::from_millis(50));
        a.read_to_end(&mut got).unwrap();
        got
    });
    let mut reaped = Reaped::default();
    let (mut partial, mut again, mut writes) = (0, 0, 0);
    let mut total = 0;
    let mut user_data = 100;
    while !rest.is_empty() {
        let before: usize = rest.iter().map(|b| b.len()).sum();
        ring.writev(b.as_raw_fd(), user_data, std::mem::take(&mut rest))
            .expect("queued");
        assert_eq!(ring.writes_in_flight(), 1);
        reap_until(&mut ring, &mut reaped, |r| !r.written.is_empty());
        let w = reaped.written.pop().unwrap();
        assert_eq!(w.user_data, user_data);
        assert_eq!(ring.writes_in_flight(), 0);
        let back: usize = w.bufs.iter().map(|b| b.len()).sum();
        assert_eq!(back, before, "every chunk comes back");
        rest = w.bufs;
        writes += 1;
        if w.result == -rustix::io::Errno::AGAIN.raw_os_error() {
            // Full, on a kernel that does not wait for room: wait here, as the driver
            // does for a writable edge.
            again += 1;
            std::thread::sleep(Duration::from_millis(1));
        } else {
            assert!(w.result > 0, "write: {}", w.result);
            let n = w.result as usize;
            total += n;
            if n < before {
                partial += 1;
            }
            drop_written(&mut rest, n);
        }
        user_data += 1;
    }
    drop(b);
    assert_eq!(total, sent.len());
    assert!(
        partial >= 1,
        "some write was partial ({writes} writes, {again} full)"
    );
    assert_eq!(reader.join().unwrap(), sent, "every byte, in order");
}

#[test]
fn a_zero_copy_send_keeps_its_chunks_until_the_kernel_is_done_and_says_it_copied_on_loopback() {
    let mut ring = Ring::new(16).unwrap();
    assert!(
        ring.has_send_zc(),
        "this machine's kernel sends without copying"
    );
    let (mut a, b) = pair();
    b.set_nonblocking(true).unwrap();
    let sent: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    let mut rest: std::collections::VecDeque<bytes::Bytes> = sent
        .chunks(64 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        a.read_to_end(&mut got).unwrap();
        got
    });
    let mut reaped = Reaped::default();
    let mut total = 0;
    let mut user_data = 200;
    let mut notified = Vec::new();
    while !rest.is_empty() {
        let before: usize = rest.iter().map(|b| b.len()).sum();
        ring.send_zc(b.as_raw_fd(), user_data, std::mem::take(&mut rest))
            .expect("queued");
        reap_until(&mut ring, &mut reaped, |r| !r.written.is_empty());
        let w = reaped.written.pop().unwrap();
        assert_eq!(w.user_data, user_data);
        let back: usize = w.bufs.iter().map(|b| b.len()).sum();
        assert_eq!(back, before, "every chunk comes back with the completion");
        notified.append(&mut reaped.zero_copy_done);
        rest = w.bufs;
        if w.result == -rustix::io::Errno::AGAIN.raw_os_error() {
            std::thread::sleep(Duration::from_millis(1));
        } else {
            assert!(w.result > 0, "send: {}", w.result);
            let n = w.result as usize;
            total += n;
            drop_written(&mut rest, n);
        }
        user_data += 1;
    }
    // Every send that went out is notified once; until then it counts as in flight.
    let sends = (200..user_data).collect::<Vec<u64>>();
    while notified.len() < sends.len() {
        assert!(ring.writes_in_flight() > 0);
        reap_until(&mut ring, &mut reaped, |r| !r.zero_copy_done.is_empty());
        notified.append(&mut reaped.zero_copy_done);
    }
    assert_eq!(ring.writes_in_flight(), 0);
    let mut seen: Vec<u64> = notified.iter().map(|&(u, _)| u).collect();
    seen.sort_unstable();
    assert_eq!(seen, sends);
    // A peer on this host gets its bytes copied at delivery: the kernel reports it.
    assert!(notified.iter().all(|&(_, copied)| copied), "{notified:?}");
    drop(b);
    assert_eq!(total, sent.len());
    assert_eq!(reader.join().unwrap(), sent, "every byte, in order");
}

#[test]
fn a_zero_copy_send_on_a_unix_socket_fails_and_gives_its_chunks_back() {
    let mut ring = Ring::new(16).unwrap();
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    let bufs: std::collections::VecDeque<bytes::Bytes> =
        [bytes::Bytes::from_static(b"hello")].into_iter().collect();
    ring.send_zc(a.as_raw_fd(), 7, bufs).expect("queued");
    let mut reaped = Reaped::default();
    reap_until(&mut ring, &mut reaped, |r| !r.written.is_empty());
    let w = reaped.written.pop().unwrap();
    assert!(
        w.result < 0,
        "a unix socket takes no zero-copy send: {}",
        w.result
    );
    assert_eq!(&w.bufs[0][..], b"hello");
    // Its end comes once, with the completion or after it (this kernel notifies, and
    // reports a copy); until then its chunks count as in flight.
    reap_until(&mut ring, &mut reaped, |r| !r.zero_copy_done.is_empty());
    assert_eq!(reaped.zero_copy_done.len(), 1);
    assert_eq!(reaped.zero_copy_done[0].0, 7);
    assert_eq!(ring.writes_in_flight(), 0);
}

#[test]
fn a_read_into_a_callers_buffer_appends_and_gives_it_back() {
    let mut ring = Ring::new(16).unwrap();
    let (mut a, b) = pair();
    b.set_nonblocking(true).unwrap();
    let mut buf = bytes::BytesMut::with_capacity(64);
    buf.extend_from_slice(b"held:");
    // Nothing to read yet: it waits in the kernel, owning the buffer.
    ring.recv_into(b.as_raw_fd(), 1, buf).expect("queued");
    a.write_all(b"hello").unwrap();
    let mut reaped = Reaped::default();
    reap_until(&mut ring, &mut reaped, |r| !r.received.is_empty());
    let r = reaped.received.pop().unwrap();
    assert_eq!((r.user_data, r.result), (1, 5));
    assert_eq!(&r.buf[..], b"held:hello", "appended to what it held");
    // A full buffer is refused and given back.
    let full = bytes::BytesMut::new();
    assert!(ring.recv_into(b.as_raw_fd(), 2, full).is_err());
    // The peer's end: a read of 0, the buffer as it was.
    drop(a);
    ring.recv_into(b.as_raw_fd(), 3, r.buf).expect("queued");
    reap_until(&mut ring, &mut reaped, |r| !r.received.is_empty());
    let r = reaped.received.pop().unwrap();
    assert_eq!((r.user_data, r.result), (3, 0));
    assert_eq!(&r.buf[..], b"held:hello");
}
