//! The hostile-peer suites' raw ZMTP peer ([`zmtp_testkit::raw_peer`], re-exported here),
//! and what they check of a well-behaved libzmq peer beside it.

pub use zmtp_testkit::raw_peer::*;

use crate::ffi::{Monitor, ZMQ_EVENT_DISCONNECTED, ZMQ_EVENT_HANDSHAKE_SUCCEEDED};
use crate::security::show;

/// The well-behaved libzmq peer kept its one connection throughout: one handshake, no
/// disconnection, per its monitor.
pub fn libzmq_undisturbed(mon: &mut Monitor<'_>, who: &str) {
    mon.poll();
    let count = |event| mon.events().iter().filter(|e| e.event == event).count();
    assert_eq!(
        (
            count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
            count(ZMQ_EVENT_DISCONNECTED)
        ),
        (1, 0),
        "{who}: libzmq's monitor:\n{}",
        show(mon.events())
    );
}
