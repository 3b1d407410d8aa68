//! What a program hears, without a logger, when a socket nobody waits for loses messages.
//!
//! A socket closed by `close()` (or a context's `term`) returns a
//! [`CloseReport`](zmtp_proto::socket::CloseReport): its caller is told. A socket that was
//! dropped, or whose async runtime ended while it lingered, has no caller left; when its
//! LINGER runs out with messages unwritten, every driver prints one line on standard
//! error naming the socket type, the endpoints and the whole messages lost:
//!
//! ```text
//! zmtp: a PUSH socket lost 500 message(s) for tcp://127.0.0.1:5555: LINGER (100 ms) ran out before they were written
//! ```
//!
//! [`set_loss_reports(false)`](set_loss_reports) turns the line off for the process (the
//! environment variable `ZMTP_LOSS_REPORTS=0` does too).

use std::sync::atomic::{AtomicU8, Ordering};

use zmtp_proto::socket::{Loss, Socket};

/// 0: not decided yet (read the environment); 1: on; 2: off.
static REPORTS: AtomicU8 = AtomicU8::new(0);

/// Whether a socket nobody waits for says on standard error what its close lost (on by
/// default). Applies to every driver of the process.
pub fn set_loss_reports(on: bool) {
    REPORTS.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Loss reports as `ZMTP_LOSS_REPORTS` says (on unless it turns them off), whatever
/// [`set_loss_reports`] said before. The C library, whose `zmq_close` stays silent as
/// libzmq's, calls it when the process exits with sockets still lingering.
pub fn set_loss_reports_from_env() {
    REPORTS.store(0, Ordering::Relaxed);
}

/// Whether loss reports are on: as set, else as `ZMTP_LOSS_REPORTS` says (`0`, `off`,
/// `false` turn them off).
pub fn loss_reports() -> bool {
    match REPORTS.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let off = std::env::var("ZMTP_LOSS_REPORTS")
                .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false" | "no"));
            set_loss_reports(!off);
            !off
        }
    }
}

/// `zmtp: a PUSH socket lost 3 message(s) for tcp://…: {why}` (`lost` being `verb`), if
/// `losses` has any.
fn lost_line(socket: &Socket, losses: &[Loss], verb: &str, why: &str) -> Option<String> {
    if losses.is_empty() {
        return None;
    }
    Some(format!(
        "zmtp: a {} socket {verb} {}: {why}",
        socket.socket_type(),
        listed(losses),
    ))
}

/// `3 message(s) for tcp://…, 1 message(s) for peers of ipc://…`.
fn listed(losses: &[Loss]) -> String {
    let what: Vec<String> = losses.iter().map(ToString::to_string).collect();
    what.join(", ")
}

/// The line that says what a finished close of `socket` lost, if it lost anything.
pub fn loss_line(socket: &Socket) -> Option<String> {
    loss_line_while(socket, false)
}

/// [`loss_line`] for a close that ran out of LINGER while the driver was `writing` some
/// of the output (a write under way without the socket's lock, whose result comes after
/// the close): those messages may have arrived, and the line says so.
pub fn loss_line_while(socket: &Socket, writing: bool) -> Option<String> {
    let linger = match socket.options().linger {
        Some(l) => format!("LINGER ({} ms)", l.as_millis()),
        None => "LINGER".to_string(),
    };
    let (verb, why) = if writing {
        (
            "may have lost",
            format!("{linger} ran out while they were being written"),
        )
    } else {
        ("lost", format!("{linger} ran out before they were written"))
    };
    lost_line(socket, socket.close_losses(), verb, &why)
}

/// Print [`loss_line`] on standard error, unless loss reports are off.
pub fn report_loss(socket: &Socket) {
    report_loss_while(socket, false);
}

/// Print [`loss_line_while`] on standard error, unless loss reports are off.
pub fn report_loss_while(socket: &Socket, writing: bool) {
    if let Some(line) = loss_line_while(socket, writing).filter(|_| loss_reports()) {
        eprintln!("{line}");
    }
}

/// Print on standard error, unless loss reports are off, that `losses` of `socket` (what
/// it has queued for some of its endpoints) are lost, and `why`.
pub fn report_lost(socket: &Socket, losses: &[Loss], why: &str) {
    if let Some(line) = lost_line(socket, losses, "lost", why).filter(|_| loss_reports()) {
        eprintln!("{line}");
    }
}

/// The line that says why the end of a program waits for `socket` (it lingers with
/// messages unwritten), if it has any: printed by a driver whose exit has waited a while.
pub fn waiting_line(socket: &Socket) -> Option<String> {
    let unsent = socket.unsent_by_endpoint();
    if unsent.is_empty() {
        return None;
    }
    let bound = match socket.options().linger {
        Some(l) => format!("for at most LINGER ({} ms)", l.as_millis()),
        None => {
            "for as long as it takes: LINGER is forever (set LINGER to bound the wait)".to_string()
        }
    };
    Some(format!(
        "zmtp: waiting for a {} socket to write {}, {bound}",
        socket.socket_type(),
        listed(&unsent),
    ))
}

/// [`report_lost`] for everything `socket` has queued: a socket that went away unclosed.
pub fn report_abandoned(socket: &Socket, why: &str) {
    report_lost(socket, &socket.unsent_by_endpoint(), why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use zmtp_proto::socket::Options;
    use zmtp_proto::{Instant, SocketType};

    #[test]
    fn a_close_that_ran_out_of_linger_names_the_type_the_endpoint_and_the_messages() {
        let options = Options::default().with_linger(Some(Duration::from_millis(100)));
        let mut push = Socket::new(SocketType::Push, options, 1).unwrap();
        push.connect("tcp://127.0.0.1:5555").unwrap();
        for i in 0..3u8 {
            push.send(vec![i], || Instant::ZERO).unwrap();
        }
        push.close(Instant::ZERO);
        assert!(loss_line(&push).is_none(), "not finished yet");
        push.handle_timeout(Instant::from_micros(200_000));
        assert!(push.is_closed());
        assert_eq!(
            loss_line(&push).as_deref(),
            Some(
                "zmtp: a PUSH socket lost 3 message(s) for tcp://127.0.0.1:5555: \
                 LINGER (100 ms) ran out before they were written"
            )
        );
        assert_eq!(
            loss_line_while(&push, true).as_deref(),
            Some(
                "zmtp: a PUSH socket may have lost 3 message(s) for tcp://127.0.0.1:5555: \
                 LINGER (100 ms) ran out while they were being written"
            )
        );
    }

    #[test]
    fn a_socket_that_lingers_says_what_it_waits_for() {
        let mut push = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
        assert_eq!(waiting_line(&push), None);
        push.connect("ipc://@nobody").unwrap();
        push.send(vec![1], || Instant::ZERO).unwrap();
        push.close(Instant::ZERO);
        assert_eq!(
            waiting_line(&push).as_deref(),
            Some(
                "zmtp: waiting for a PUSH socket to write 1 message(s) for ipc://@nobody, for \
                 as long as it takes: LINGER is forever (set LINGER to bound the wait)"
            )
        );
    }

    /// A connect endpoint whose last attempt failed: the lines say why nothing took its
    /// messages, until a handshake over it succeeds.
    #[test]
    fn the_lines_name_why_the_last_connect_failed() {
        let options = Options::default().with_linger(Some(Duration::from_millis(100)));
        let mut push = Socket::new(SocketType::Push, options, 1).unwrap();
        let ep = push.connect("tcp://127.0.0.1:5555").unwrap();
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        push.note_connect_error(ep, &refused);
        push.handle_connect_refused(ep, Instant::ZERO);
        push.send(vec![1], || Instant::ZERO).unwrap();
        push.close(Instant::ZERO);
        let waiting = waiting_line(&push).unwrap();
        assert!(
            waiting.starts_with(
                "zmtp: waiting for a PUSH socket to write 1 message(s) for \
                 tcp://127.0.0.1:5555 (its last attempt failed: connection refused), for at \
                 most LINGER (100 ms)"
            ),
            "{waiting}"
        );
        push.handle_timeout(Instant::from_micros(200_000));
        assert!(push.is_closed());
        let lost = loss_line(&push).unwrap();
        assert!(
            lost.contains("1 message(s) for tcp://127.0.0.1:5555 (its last attempt failed: connection refused): LINGER (100 ms) ran out"),
            "{lost}"
        );
    }

    #[test]
    fn a_close_that_delivered_everything_says_nothing() {
        let mut push = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
        push.close(Instant::ZERO);
        assert!(push.is_closed());
        assert_eq!(loss_line(&push), None);
    }
}
