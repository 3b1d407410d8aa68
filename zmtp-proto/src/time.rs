//! Time as the caller gives it: the core never reads a clock.

use core::time::Duration;

/// A point in time: microseconds since an origin chosen by the driver.
///
/// Only differences matter. A driver typically maps its runtime's monotonic clock onto this
/// (for example `start.elapsed().as_micros()`); tests use virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Instant {
        Instant(micros)
    }

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Instant {
        Instant(millis.saturating_mul(1000))
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl core::ops::Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating: a far-future deadline stays in the far future.
    fn add(self, d: Duration) -> Instant {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(micros))
    }
}

/// The current time, passed to calls that need it only on some of their paths (a socket's
/// `send`, `recv`, `advance`): an [`Instant`] the caller already has, or a function that
/// reads the driver's clock, called only when the core actually needs the time. Either way
/// the time is the caller's, never one the core remembered from an earlier call.
///
/// ```
/// use zmtp_proto::{Clock, Instant};
/// fn deadline(now: impl Clock) -> Instant {
///     now.now()
/// }
/// assert_eq!(deadline(Instant::from_millis(5)), Instant::from_millis(5));
/// assert_eq!(deadline(|| Instant::from_millis(7)), Instant::from_millis(7));
/// ```
pub trait Clock {
    /// The time now.
    fn now(&self) -> Instant;
}

impl Clock for Instant {
    #[inline]
    fn now(&self) -> Instant {
        *self
    }
}

impl<F: Fn() -> Instant> Clock for F {
    #[inline]
    fn now(&self) -> Instant {
        self()
    }
}
