//! Waiting on several sockets at once (`zmq_poll`), with the names of `zmtp-mio`'s poller
//! ([`poll`], [`PollItem`], [`POLLIN`], [`POLLOUT`]), so that a program moves between the
//! blocking and the async drivers by changing an import (and adding `.await`).
//!
//! The set is a slice the caller builds for each call, so it may change between calls at
//! no cost: nothing is registered between calls.

use std::future::poll_fn;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::wait::Waiter;
use crate::{Error, Runtime, Socket};

/// Wait until a message can be received (`ZMQ_POLLIN`).
pub const POLLIN: u8 = 1;
/// Wait until a message can be sent without blocking (`ZMQ_POLLOUT`).
pub const POLLOUT: u8 = 2;

/// One socket to [`poll`]: what to wait for, and (after the call) what is ready.
pub struct PollItem<'a, R: Runtime> {
    /// The socket.
    pub socket: &'a Socket<R>,
    /// [`POLLIN`] and/or [`POLLOUT`].
    pub events: u8,
    /// Set by [`poll`]: which of `events` are ready.
    pub revents: u8,
}

impl<'a, R: Runtime> PollItem<'a, R> {
    /// Wait on `socket` for `events` ([`POLLIN`], [`POLLOUT`] or both, or-ed).
    pub fn new(socket: &'a Socket<R>, events: u8) -> PollItem<'a, R> {
        PollItem {
            socket,
            events,
            revents: 0,
        }
    }
}

impl<R: Runtime> std::fmt::Debug for PollItem<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollItem")
            .field("events", &self.events)
            .field("revents", &self.revents)
            .finish_non_exhaustive()
    }
}

/// Wait until at least one item is ready or `timeout` passes (`None`: no limit; zero: look
/// without waiting); returns how many items are ready and sets each item's `revents`
/// (`zmq_poll`). An empty slice returns 0 at once. The sockets may belong to different
/// runtimes; the timeout runs on the first item's.
///
/// Cancel-safe: the future takes nothing from the sockets, so dropping it loses nothing.
/// It waits on the sockets' own notifications (no polling interval), registered only
/// while it waits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zmtp_async::Error> {
/// use std::time::Duration;
/// use zmtp_tokio::{poll, PollItem, Socket, SocketType, POLLIN};
///
/// let (a, b) = (Socket::new(SocketType::Pull)?, Socket::new(SocketType::Pull)?);
/// a.bind("tcp://127.0.0.1:*").await?;
/// let b_endpoint = b.bind("tcp://127.0.0.1:*").await?;
/// let push = Socket::new(SocketType::Push)?;
/// push.connect(&b_endpoint)?;
/// push.send("for b").await?;
///
/// let mut got = Vec::new();
/// while got.is_empty() {
///     let mut items = [PollItem::new(&a, POLLIN), PollItem::new(&b, POLLIN)];
///     if poll(&mut items, Some(Duration::from_secs(5))).await? == 0 {
///         break; // nothing within the timeout
///     }
///     for item in &items {
///         if item.revents & POLLIN != 0 {
///             if let Some(msg) = item.socket.try_recv()? {
///                 got.push(msg.to_string());
///             }
///         }
///     }
/// }
/// assert_eq!(got, ["for b"]);
/// # Ok(()) }
/// ```
///
/// # Errors
/// None so far: the `Result` is the shape of `zmtp-mio`'s `poll`, so that code using it
/// moves between drivers unchanged.
pub async fn poll<R: Runtime>(
    items: &mut [PollItem<'_, R>],
    timeout: Option<Duration>,
) -> Result<usize, Error> {
    let ready = fill_revents(items);
    let Some(first) = items.first().map(|item| item.socket) else {
        return Ok(0);
    };
    if ready > 0 || timeout == Some(Duration::ZERO) {
        return Ok(ready);
    }
    // One waiter per awaited condition, each on its socket's notification.
    let mut waiters: Vec<(&Socket<R>, u8, Waiter<'_>)> = Vec::new();
    for item in items.iter() {
        let socket = item.socket;
        let inner = &*socket.inner;
        if item.events & POLLIN != 0 {
            let waiter = Waiter::new(&inner.readable, &inner.recv_waiters);
            waiters.push((socket, POLLIN, waiter));
        }
        if item.events & POLLOUT != 0 {
            let waiter = Waiter::new(&inner.writable, &inner.send_waiters);
            waiters.push((socket, POLLOUT, waiter));
        }
    }
    if waiters.is_empty() && timeout.is_none() {
        // Nothing to wait for, and no end to the wait: as libzmq, wait forever.
        std::future::pending::<()>().await;
    }
    let wait = poll_fn(|cx| loop {
        let mut woken = false;
        for (socket, event, waiter) in &mut waiters {
            let attempt = || (revents(socket, *event) != 0).then_some(());
            woken |= waiter.poll(cx, attempt).is_ready();
        }
        if !woken {
            return Poll::Pending;
        }
        // A waiter that was ready has let go of its registration: should another task
        // have taken the message (or the room) meanwhile, the next round registers again.
        let ready = fill_revents(items);
        if ready > 0 {
            return Poll::Ready(ready);
        }
    });
    match timeout {
        None => Ok(wait.await),
        Some(limit) => {
            let deadline = Instant::now() + limit;
            let sleep = first.inner.runtime.sleep_until(deadline);
            match crate::core::first(wait, sleep).await {
                crate::core::Either::Left(ready) => Ok(ready),
                crate::core::Either::Right(()) => Ok(0),
            }
        }
    }
}

/// Which of `events` are ready on `socket`. A closed socket is ready for both, as its
/// `recv` and `send` then fail at once.
fn revents<R: Runtime>(socket: &Socket<R>, events: u8) -> u8 {
    let core = socket.inner.lock();
    let mut revents = 0;
    if events & POLLIN != 0
        && (core.closed || core.socket.can_recv() || !socket.inner.ready.is_empty())
    {
        revents |= POLLIN;
    }
    if events & POLLOUT != 0 && (core.closed || core.socket.can_send()) {
        revents |= POLLOUT;
    }
    revents
}

/// Set every item's `revents`; returns how many items are ready.
fn fill_revents<R: Runtime>(items: &mut [PollItem<'_, R>]) -> usize {
    let mut ready = 0;
    for item in items.iter_mut() {
        item.revents = revents(item.socket, item.events);
        ready += usize::from(item.revents != 0);
    }
    ready
}
