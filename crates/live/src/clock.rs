//! The edge where the OS clock becomes Brisk time: [`Instant::ZERO`] is the
//! start of the run, and every later reading is the monotonic clock's
//! elapsed time since then, in nanoseconds.

use brisk_time::Instant;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Maps `CLOCK_MONOTONIC` onto [`Instant`].
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: std::time::Instant,
    unix_start_nanos: u64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Clock {
            start: std::time::Instant::now(),
            unix_start_nanos: u64::try_from(unix.as_nanos()).unwrap_or(0),
        }
    }

    /// Time since the start of the run.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Wall-clock nanoseconds since the Unix epoch at [`Instant::ZERO`], so
    /// captures show real time.
    pub fn unix_offset_nanos(&self) -> u64 {
        self.unix_start_nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_start_near_zero_and_never_go_back() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(a <= b);
        assert!(a < Instant::from_millis(100));
        assert!(c.unix_offset_nanos() > 1_500_000_000 * 1_000_000_000);
    }
}
