//! The futures of [`Socket::send`](crate::Socket::send) and [`Socket::recv`](crate::Socket::recv),
//! written by hand so that the common case (the socket has room, or a message is ready)
//! is one attempt with nothing allocated and a future of a few words. Only a call that has
//! to wait registers on the socket's notification, once per wait, and keeps that
//! registration across polls.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use zmtp_proto::socket::{Message, SendError, Sent};

use crate::{Error, Runtime, Socket};

/// Counts a task waiting on one of the socket's notifications, for as long as it waits
/// (also when its future is dropped mid-wait): nobody is woken when nobody waits.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Retries an attempt until it succeeds, parked on one notification in between.
pub(crate) struct Waiter<'a> {
    notify: &'a Notify,
    count: &'a AtomicUsize,
    /// Present while waiting: counted, and registered before the attempt that failed, so
    /// a notification between that attempt and the next poll is not lost.
    parked: Option<(Waiting<'a>, Pin<Box<Notified<'a>>>)>,
}

impl<'a> Waiter<'a> {
    pub(crate) fn new(notify: &'a Notify, count: &'a AtomicUsize) -> Waiter<'a> {
        Waiter {
            notify,
            count,
            parked: None,
        }
    }

    /// Ready with the first `Some` that `attempt` gives.
    pub(crate) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        attempt: impl FnMut() -> Option<T>,
    ) -> Poll<T> {
        self.poll_with(cx, false, attempt)
    }

    /// [`poll`](Self::poll) after the caller's own attempt failed (`failed`): the waiter
    /// registers first, then tries again, as it would after its own attempt.
    pub(crate) fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut failed: bool,
        mut attempt: impl FnMut() -> Option<T>,
    ) -> Poll<T> {
        loop {
            if !std::mem::take(&mut failed) {
                if let Some(done) = attempt() {
                    self.parked = None;
                    return Poll::Ready(done);
                }
            }
            match &mut self.parked {
                None => {
                    // Count, register, then try once more before sleeping.
                    let waiting = Waiting::new(self.count);
                    let mut notified = Box::pin(self.notify.notified());
                    notified.as_mut().enable();
                    self.parked = Some((waiting, notified));
                }
                Some((_, notified)) => {
                    if notified.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // Woken: register afresh (reusing the allocation), then try again.
                    notified.set(self.notify.notified());
                    notified.as_mut().enable();
                }
            }
        }
    }
}

/// The future of [`Socket::send`] and [`Socket::send_slice`]: resolves once the whole
/// message is queued (or the socket refuses it). Dropping it before then queues nothing.
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, R: Runtime> {
    socket: &'a Socket<R>,
    pending: Pending<'a>,
    waiter: Waiter<'a>,
}

/// What a [`SendFuture`] still has to hand over.
enum Pending<'a> {
    Message(Message),
    /// Still in the caller's buffer: copied only when it is queued, or into a message of
    /// its own if the first attempt has to wait.
    Slice(&'a [u8]),
    Done,
}

impl<'a, R: Runtime> SendFuture<'a, R> {
    pub(crate) fn new(socket: &'a Socket<R>, msg: Message) -> SendFuture<'a, R> {
        SendFuture::with(socket, Pending::Message(msg))
    }

    pub(crate) fn slice(socket: &'a Socket<R>, body: &'a [u8]) -> SendFuture<'a, R> {
        SendFuture::with(socket, Pending::Slice(body))
    }

    fn with(socket: &'a Socket<R>, pending: Pending<'a>) -> SendFuture<'a, R> {
        SendFuture {
            socket,
            pending,
            waiter: Waiter::new(&socket.inner.writable, &socket.inner.send_waiters),
        }
    }
}

impl<R: Runtime> Future for SendFuture<'_, R> {
    type Output = Result<Sent, SendError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let SendFuture {
            socket,
            pending,
            waiter,
        } = self.get_mut();
        let mut failed = false;
        if let (Pending::Slice(body), None) = (&*pending, &waiter.parked) {
            // The common case, a first attempt that succeeds: the result is built where
            // it is returned, not moved through the waiter's layers.
            match socket.try_send_slice(body) {
                Ok(sent) => {
                    *pending = Pending::Done;
                    return Poll::Ready(Ok(sent));
                }
                Err(SendError::WouldBlock(m)) => *pending = Pending::Message(m),
                Err(e) => {
                    *pending = Pending::Done;
                    return Poll::Ready(Err(e));
                }
            }
            failed = true;
        }
        waiter.poll_with(cx, failed, || {
            let sent = match pending {
                // The common case, without moving the pending state around.
                Pending::Slice(body) => socket.try_send_slice(body),
                Pending::Message(_) => match std::mem::replace(pending, Pending::Done) {
                    Pending::Message(m) => socket.try_send(m),
                    _ => unreachable!("matched as a message"),
                },
                Pending::Done => panic!("SendFuture polled after completion"),
            };
            match sent {
                Err(SendError::WouldBlock(m)) => {
                    *pending = Pending::Message(m);
                    None
                }
                done => {
                    *pending = Pending::Done;
                    Some(done)
                }
            }
        })
    }
}

impl<R: Runtime> std::fmt::Debug for SendFuture<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendFuture")
            .field("done", &matches!(self.pending, Pending::Done))
            .finish_non_exhaustive()
    }
}

/// The future of [`Socket::recv`]: resolves with the next message. Dropping it before
/// then takes no message.
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, R: Runtime> {
    socket: &'a Socket<R>,
    waiter: Waiter<'a>,
}

impl<'a, R: Runtime> RecvFuture<'a, R> {
    pub(crate) fn new(socket: &'a Socket<R>) -> RecvFuture<'a, R> {
        RecvFuture {
            socket,
            waiter: Waiter::new(&socket.inner.readable, &socket.inner.recv_waiters),
        }
    }
}

impl<R: Runtime> Future for RecvFuture<'_, R> {
    type Output = Result<Message, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let RecvFuture { socket, waiter } = self.get_mut();
        let mut failed = false;
        if waiter.parked.is_none() {
            // The common case, a message ready at once: returned from here, not moved
            // through the waiter's layers (nor through `try_recv`'s result).
            if let Some(msg) = socket.recv_ready() {
                return Poll::Ready(Ok(msg));
            }
            match socket.try_recv() {
                Ok(Some(msg)) => return Poll::Ready(Ok(msg)),
                Err(e) => return Poll::Ready(Err(e)),
                Ok(None) => failed = true,
            }
        }
        waiter.poll_with(cx, failed, || socket.try_recv().transpose())
    }
}

impl<R: Runtime> std::fmt::Debug for RecvFuture<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvFuture").finish_non_exhaustive()
    }
}
