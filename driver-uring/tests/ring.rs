//! The building blocks over real sockets: multishot receives into provided buffers (lent
//! out, exhausted, given back across threads), multishot accept, vectored writes, a
//! timeout and the eventfd wake-up.
#![cfg(target_os = "linux")]

use std::io::{IoSlice, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use zmtp_uring::io_uring::{cqueue, opcode, types};
use zmtp_uring::{BufRing, Ring, Wake};

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
