//! Brisk's one notion of time.
//!
//! Every state machine in Brisk (queues, links, connections, controllers)
//! takes `now: Instant` as an argument and never reads a clock. The simulator
//! advances a virtual `Instant`; the live lab and the socket driver map the
//! OS monotonic clock onto the same type at the edge. Durations are
//! `std::time::Duration`.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod deadlines;

pub use deadlines::Deadlines;

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A point in time, in nanoseconds since an arbitrary epoch chosen by the
/// driver (the start of a simulation, or the start of a live process).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// Later than any time a run can reach; handy as "never" in min() folds.
    pub const FAR_FUTURE: Instant = Instant(u64::MAX);

    /// Nanoseconds since the epoch, the type's own resolution: exact.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }

    /// Saturates at `FAR_FUTURE`, as adding a duration does.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us.saturating_mul(1_000))
    }

    /// Saturates at `FAR_FUTURE`, as adding a duration does.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms.saturating_mul(1_000_000))
    }

    /// Seconds since the epoch, rounded down to the nanosecond. Negative
    /// values and NaN give the epoch, values past about 584 years saturate at
    /// `FAR_FUTURE`, so a bad configuration value cannot wrap.
    pub fn from_secs_f64(s: f64) -> Self {
        Instant((s * 1e9).max(0.0) as u64)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Microseconds since the epoch, rounded down.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Milliseconds since the epoch, rounded down.
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// Seconds since the epoch; exact to the nanosecond up to about 104 days
    /// (2^53 ns), then rounded to f64's 53-bit mantissa.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// The time elapsed since the epoch, as a Duration.
    pub const fn since_epoch(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self - earlier`, or `None` when `earlier` is later.
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }

    /// `self + d`, or `None` past `FAR_FUTURE` (the `+` operator saturates
    /// instead).
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        u64::try_from(d.as_nanos())
            .ok()
            .and_then(|n| self.0.checked_add(n))
            .map(Instant)
    }
}

/// The earlier of two optional deadlines (either when only one is set).
/// Written out rather than as `[..].into_iter().flatten().min()`, which
/// compiles to stores and wider reloads that stall on every call of a
/// hot `poll_timeout`.
#[inline]
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at `FAR_FUTURE` rather than wrapping.
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the epoch rather than wrapping.
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(nanos(d)))
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = Instant::from_millis(5);
        assert_eq!(t + Duration::from_millis(1), Instant::from_millis(6));
        assert_eq!(t - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(
            Instant::FAR_FUTURE + Duration::from_secs(1),
            Instant::FAR_FUTURE
        );
        assert_eq!(t.checked_duration_since(Instant::from_millis(6)), None);
    }

    #[test]
    fn earliest_ignores_unset_deadlines() {
        let (a, b) = (Instant::from_millis(5), Instant::from_millis(7));
        assert_eq!(earliest(Some(b), Some(a)), Some(a));
        assert_eq!(earliest(None, Some(b)), Some(b));
        assert_eq!(earliest(Some(a), None), Some(a));
        assert_eq!(earliest(None, None), None);
    }

    #[test]
    fn unit_conversions_round_trip() {
        let t = Instant::from_micros(1_234_567);
        assert_eq!(t.as_nanos(), 1_234_567_000);
        assert_eq!(t.as_millis(), 1_234);
        assert!((t.as_secs_f64() - 1.234567).abs() < 1e-12);
        assert_eq!(format!("{t:?}"), "1.234567000s");
    }
}
