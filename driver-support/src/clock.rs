//! The clock every driver gives the core: microseconds since one process-wide start.
//!
//! One start for every driver and socket of the process means that a socket's deadlines
//! (LINGER, reconnects, heartbeats) keep their meaning when the socket moves from one
//! driver to another, as a lingering async socket does when its runtime ends (see
//! `zmtp_mio::adopt`).

use std::sync::OnceLock;
use std::time::{Duration, Instant as StdInstant};

use zmtp_proto::Instant;

/// The process's start: the first time any driver read the clock.
pub fn epoch() -> StdInstant {
    static EPOCH: OnceLock<StdInstant> = OnceLock::new();
    *EPOCH.get_or_init(StdInstant::now)
}

/// The core's time now.
pub fn now() -> Instant {
    since(epoch())
}

/// The core's time now, for a caller that read [`epoch`] once and kept it.
#[inline]
pub fn since(epoch: StdInstant) -> Instant {
    Instant::from_micros(u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
}

/// The `std` instant of a core instant.
pub fn at(t: Instant) -> StdInstant {
    epoch() + Duration::from_micros(t.as_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_instants_map_back_to_std_instants_on_the_shared_epoch() {
        let before = StdInstant::now();
        let t = now();
        let back = at(t);
        assert!(back <= StdInstant::now());
        // Within the microsecond the conversion truncates, of when it was read.
        assert!(back + Duration::from_micros(1) >= before);
        assert!(since(epoch()) >= t);
    }
}
