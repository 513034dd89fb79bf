//! Bursty delivery, as on an aggregating radio (Wi-Fi, DOCSIS, LTE): the
//! transmitter sends only at transmit opportunities, one every `interval`
//! (each moved by a seeded random offset within `jitter`), and each sends
//! at once what the configured `rate` accumulated since the previous one.
//!
//! Packets wait in the queue between opportunities, so the queue (and its
//! AQM) sees sojourn times of up to an interval even on an idle link, and
//! the far end receives trains of back-to-back packets. The mean capacity
//! is still `rate`: a saturated link sends `rate * interval` bytes per
//! opportunity. Budget an opportunity cannot use (the queue ran dry) is
//! lost, as an idle radio banks no air time; a packet larger than what is
//! left sends its remaining bytes at the next opportunities and leaves with
//! the one that completes it.
//!
//! Where the wait for an opportunity happens is a choice. By default the
//! transmitter takes packets straight from the queue discipline, so the
//! queue (and its AQM) counts the wait as sojourn time: the harshest case.
//! With `driver_queue`, packets move at once into a short driver queue
//! below the queue discipline that holds at most that much air time at the
//! current rate, and the opportunities drain the driver queue. This is how
//! Linux Wi-Fi behaves with its airtime queue limits (or BQL on a wired
//! NIC): the aggregation wait happens in the driver, and the queue
//! discipline holds only what the driver has no room for, so its AQM sees
//! its own sojourn time only.
//!
//! In a scenario: `bursts = { interval = "4ms", jitter = "1ms" }` beside a
//! constant or scheduled `rate` (a mahimahi trace has its own timing), and
//! optionally `driver_queue = "8ms"`.

use super::rate::RateModel;
use crate::Rng;
use brisk_time::Instant;
use rand::Rng as _;
use serde::Deserialize;
use std::time::Duration;

/// When transmit opportunities happen: the `k`-th (from 1) at
/// `k * interval` plus an offset drawn uniformly from `[-jitter, +jitter]`.
/// `jitter` is at most half the interval, so opportunities keep their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "BurstsToml")]
pub struct Bursts {
    /// Mean spacing of transmit opportunities; positive.
    pub interval: Duration,
    /// Largest offset either way from each opportunity's nominal time; at most half of `interval`.
    pub jitter: Duration,
    /// Air time the driver queue below the queue discipline holds, or
    /// `None` to take packets from the queue discipline at each
    /// opportunity. At least `interval + 2 * jitter`, the widest spacing
    /// of two opportunities, so one opportunity's budget always fits.
    pub driver_queue: Option<Duration>,
}

impl Bursts {
    /// Checks that the interval is positive and the jitter at most half of
    /// it.
    pub fn new(interval: Duration, jitter: Duration) -> Result<Bursts, String> {
        if interval.is_zero() {
            return Err("bursts interval must be longer than 0".into());
        }
        if jitter > interval / 2 {
            return Err(format!(
                "bursts jitter {jitter:?} must be at most half the interval {interval:?}, \
                 so transmit opportunities keep their order"
            ));
        }
        Ok(Bursts {
            interval,
            jitter,
            driver_queue: None,
        })
    }

    /// The same bursts with a driver queue of `airtime` below the queue
    /// discipline; refused when one opportunity's budget would not fit.
    pub fn with_driver_queue(self, airtime: Duration) -> Result<Bursts, String> {
        let widest = self.interval + 2 * self.jitter;
        if airtime < widest {
            return Err(format!(
                "bursts driver_queue {airtime:?} must hold at least the widest spacing of two \
                 transmit opportunities (interval + 2 * jitter = {widest:?}), or the link \
                 could never run at its rate"
            ));
        }
        Ok(Bursts {
            driver_queue: Some(airtime),
            ..self
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BurstsToml {
    #[serde(with = "crate::units::duration")]
    interval: Duration,
    #[serde(default, with = "crate::units::duration")]
    jitter: Duration,
    #[serde(default, deserialize_with = "crate::units::opt_duration::deserialize")]
    driver_queue: Option<Duration>,
}

impl TryFrom<BurstsToml> for Bursts {
    type Error = String;

    fn try_from(t: BurstsToml) -> Result<Bursts, String> {
        let b = Bursts::new(t.interval, t.jitter)?;
        match t.driver_queue {
            Some(airtime) => b.with_driver_queue(airtime),
            None => Ok(b),
        }
    }
}

/// The transmitter's clock of opportunities: the next one, the one before
/// (what its budget accumulates from) and the random offsets, drawn from a
/// stream of its own in the order the opportunities come.
#[derive(Debug)]
pub(crate) struct OpportunityClock {
    bursts: Bursts,
    rng: Rng,
    /// Index of the next opportunity (from 1).
    index: u64,
    next: Instant,
    previous: Instant,
}

impl OpportunityClock {
    pub(crate) fn new(bursts: Bursts, rng: Rng) -> OpportunityClock {
        let mut clock = OpportunityClock {
            bursts,
            rng,
            index: 1,
            next: Instant::ZERO,
            previous: Instant::ZERO,
        };
        clock.next = clock.draw(1);
        clock
    }

    /// When the next opportunity is.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }

    /// Moves to the opportunity after the next one.
    pub(crate) fn advance(&mut self) {
        self.previous = self.next;
        self.index += 1;
        self.next = self.draw(self.index);
    }

    /// Moves to the first opportunity after `t` (at or after `t` when
    /// `inclusive`); those skipped found nothing to send and are gone. The
    /// next one's budget then counts from one nominal interval before it.
    pub(crate) fn skip_to(&mut self, t: Instant, inclusive: bool) {
        let passed = |at: Instant| if inclusive { at < t } else { at <= t };
        if !passed(self.next) {
            return;
        }
        let interval = self.bursts.interval.as_nanos().max(1);
        // The first index whose latest possible time is past `t`; those
        // before it are certainly gone and need no draw.
        let slack = self.bursts.jitter.as_nanos();
        let first = ((t - Instant::ZERO).as_nanos().saturating_sub(slack) / interval) as u64;
        self.index = (self.index + 1).max(first);
        loop {
            self.next = self.draw(self.index);
            if !passed(self.next) {
                break;
            }
            self.index += 1;
        }
        self.previous = self.nominal(self.index.saturating_sub(1));
    }

    /// Bytes `rate` carries from the previous opportunity to the next one.
    pub(crate) fn budget_bytes(&self, rate: &RateModel) -> usize {
        let (mut t, end) = (self.previous, self.next);
        let mut bit_ns: u128 = 0;
        while t < end {
            let (bps, change) = rate.piece(t);
            let until = change.map_or(end, |c| c.min(end));
            bit_ns += u128::from(bps) * (until - t).as_nanos();
            t = until;
        }
        usize::try_from(bit_ns / 8_000_000_000).unwrap_or(usize::MAX)
    }

    fn nominal(&self, index: u64) -> Instant {
        let ns = u128::from(index) * self.bursts.interval.as_nanos();
        Instant::ZERO + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    fn draw(&mut self, index: u64) -> Instant {
        let nominal = self.nominal(index);
        let j = self.bursts.jitter.as_nanos() as i64;
        if j == 0 {
            return nominal;
        }
        let offset = self.rng.random_range(-j..=j);
        let ns = (nominal - Instant::ZERO).as_nanos() as i64 + offset;
        Instant::ZERO + Duration::from_nanos(ns.max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn opportunities_keep_their_grid_and_order() {
        let b = Bursts::new(Duration::from_millis(4), Duration::from_millis(2)).unwrap();
        let mut c = OpportunityClock::new(b, crate::rng(5, 0));
        let mut last = Instant::ZERO;
        for k in 1..=1000u64 {
            let at = c.next();
            assert!(at >= ms(4 * k - 2) && at <= ms(4 * k + 2), "{k}: {at:?}");
            assert!(at >= last);
            last = at;
            c.advance();
        }
        // Without jitter they sit on the grid exactly.
        let mut c = OpportunityClock::new(
            Bursts::new(Duration::from_millis(4), Duration::ZERO).unwrap(),
            crate::rng(5, 0),
        );
        c.skip_to(ms(8), false);
        assert_eq!(c.next(), ms(12));
        c.skip_to(ms(12), true);
        assert_eq!(c.next(), ms(12));
    }

    #[test]
    fn each_budget_is_what_the_rate_accumulated() {
        // 4 Mbit/s for 4 ms is 2000 bytes.
        let b = Bursts::new(Duration::from_millis(4), Duration::ZERO).unwrap();
        let mut c = OpportunityClock::new(b, crate::rng(1, 0));
        let rate = RateModel::Constant { bps: 4_000_000 };
        assert_eq!(c.budget_bytes(&rate), 2000);
        // After a skip the budget still covers one nominal interval.
        c.skip_to(ms(101), false);
        assert_eq!(c.next(), ms(104));
        assert_eq!(c.budget_bytes(&rate), 2000);
    }

    #[test]
    fn bad_settings_are_refused_with_a_reason() {
        assert!(Bursts::new(Duration::ZERO, Duration::ZERO).is_err());
        let e = Bursts::new(Duration::from_millis(4), Duration::from_millis(3)).unwrap_err();
        assert!(e.contains("half the interval"), "{e}");
    }
}
