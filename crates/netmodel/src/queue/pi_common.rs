//! What PIE and DualPI2 share: a drop/mark probability recomputed every
//! `tupdate` by a timer that Brisk runs lazily, and the config checks for
//! that period and for the controllers' gains.

use brisk_time::Instant;
use std::time::Duration;

/// The periodic probability update of PIE and DualPI2, without a timer.
///
/// Linux recomputes the probability from a kernel timer every `tupdate`. A
/// Brisk queue has no timer of its own, so it catches up instead: before it
/// handles an enqueue or dequeue at `now`, it runs every update that fell due
/// since its last call, each at its own due time and in order. Nothing
/// enters or leaves the queue between two calls, so each missed update sees
/// exactly the state a real timer would have shown it: the catch-up is exact,
/// not an approximation. The first update is due one period after the first
/// call.
///
/// After a long idle spell the updates reach a fixed point (probability
/// decayed to zero, delay zero); the owner then calls
/// [`UpdateTimer::skip_through`] so that a day of idleness costs one update,
/// not millions.
#[derive(Debug, Clone)]
pub(crate) struct UpdateTimer {
    period: Duration,
    next: Option<Instant>,
}

/// The shortest accepted period; a zero period would never let time advance.
const MIN_PERIOD: Duration = Duration::from_micros(1);

impl UpdateTimer {
    /// A period below 1 µs (only reachable by building a config in code;
    /// the TOML reader refuses it) is raised to 1 µs.
    pub(crate) fn new(period: Duration) -> UpdateTimer {
        UpdateTimer {
            period: period.max(MIN_PERIOD),
            next: None,
        }
    }

    /// When the next update is due; `None` until the first call arms it.
    pub(crate) fn next_update(&self) -> Option<Instant> {
        self.next
    }

    /// The next update due at or before `now`, if any, and moves past it.
    /// The first call arms the timer one period after `now`.
    pub(crate) fn next_due(&mut self, now: Instant) -> Option<Instant> {
        let next = *self.next.get_or_insert(now + self.period);
        if next > now {
            return None;
        }
        self.next = Some(next + self.period);
        Some(next)
    }

    /// Drops every update due at or before `now`: the owner found that an
    /// update changed nothing and that the following ones cannot either.
    pub(crate) fn skip_through(&mut self, now: Instant) {
        let Some(next) = self.next else { return };
        if next > now {
            return;
        }
        let period_ns = u64::try_from(self.period.as_nanos()).unwrap_or(u64::MAX);
        let missed = (now - next).as_nanos() as u64 / period_ns + 1;
        self.next = Some(next + Duration::from_nanos(missed.saturating_mul(period_ns)));
    }
}

/// Serde adapter for `tupdate`: a positive duration such as "15ms".
pub(crate) mod period {
    use serde::Deserializer;
    use serde::de::Error;
    use std::time::Duration;

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let p = crate::units::duration::deserialize(d)?;
        if p < super::MIN_PERIOD {
            return Err(D::Error::custom(format!(
                "the update period must be at least 1us, got {p:?}"
            )));
        }
        Ok(p)
    }
}

/// Serde adapter for the PI gains `alpha` and `beta`: finite and not
/// negative, in Hz (probability change per second of queue delay error).
pub(crate) mod gain_hz {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let g = f64::deserialize(d)?;
        if !g.is_finite() || g < 0.0 {
            return Err(D::Error::custom(format!(
                "a gain must be a finite number of Hz >= 0, got {g}"
            )));
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_each_period_after_the_first_call_and_catches_up_in_order() {
        let mut t = UpdateTimer::new(Duration::from_millis(15));
        assert_eq!(t.next_due(Instant::from_millis(100)), None);
        assert_eq!(t.next_update(), Some(Instant::from_millis(115)));
        let due: Vec<_> = std::iter::from_fn(|| t.next_due(Instant::from_millis(160))).collect();
        assert_eq!(
            due,
            vec![
                Instant::from_millis(115),
                Instant::from_millis(130),
                Instant::from_millis(145),
                Instant::from_millis(160)
            ]
        );
        assert_eq!(t.next_update(), Some(Instant::from_millis(175)));
    }

    #[test]
    fn skipping_keeps_the_grid() {
        let mut t = UpdateTimer::new(Duration::from_millis(10));
        t.next_due(Instant::ZERO);
        t.skip_through(Instant::from_millis(1_000_005));
        assert_eq!(t.next_update(), Some(Instant::from_millis(1_000_010)));
        t.skip_through(Instant::from_millis(1_000_009));
        assert_eq!(t.next_update(), Some(Instant::from_millis(1_000_010)));
        let mut z = UpdateTimer::new(Duration::ZERO);
        assert_eq!(z.next_due(Instant::ZERO), None);
        assert_eq!(
            z.next_due(Instant::from_micros(1)),
            Some(Instant::from_micros(1))
        );
    }
}
