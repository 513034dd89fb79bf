//! Outages: windows in which the radio is down, like the long uplink or
//! downlink freezes mobile networks show (Teclo seed). Scheduled ones
//! (`outages = [{ start = "5s", duration = "2s" }]`) and periodic ones
//! (`outage_every = { period = "10s", duration = "300ms" }`) combine.
//!
//! What an outage does is the link's choice (`outage_drops`): by default the
//! transmitter freezes, so packets wait in the queue (which may overflow) and
//! a packet being serialized pauses; with `outage_drops = true` the
//! transmitter keeps draining and every packet leaving it during the window
//! is lost.

use brisk_time::Instant;
use serde::Deserialize;
use std::time::Duration;

/// One scheduled outage, `{ start = "5s", duration = "2s" }`: the link is
/// down from `start` (since the run's start) for `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// When the link goes down, measured from the run's start.
    #[serde(with = "crate::units::duration")]
    pub start: Duration,
    /// How long it stays down.
    #[serde(with = "crate::units::duration")]
    pub duration: Duration,
}

/// Periodic outages, `{ period = "10s", duration = "300ms" }`: the link is
/// down for `duration` every `period`, the first time at `first` (default:
/// one `period` after the start). `duration` must be shorter than `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "PeriodicOutageToml")]
pub struct PeriodicOutage {
    /// Time from one outage's start to the next; at least [`MIN_OUTAGE_PERIOD`].
    pub period: Duration,
    /// How long each outage lasts; shorter than `period`.
    pub duration: Duration,
    /// Start of the first outage, measured from the run's start.
    pub first: Duration,
}

/// The shortest period of `outage_every`: the link visits every window
/// it passes, and a radio that fails more often than every millisecond is
/// better written as loss.
pub const MIN_OUTAGE_PERIOD: Duration = Duration::from_millis(1);

impl PeriodicOutage {
    /// Checks `period` against [`MIN_OUTAGE_PERIOD`] and `duration < period`; `first` defaults to one `period`. The error is a message for the user.
    pub fn new(
        period: Duration,
        duration: Duration,
        first: Option<Duration>,
    ) -> Result<PeriodicOutage, String> {
        if period < MIN_OUTAGE_PERIOD {
            return Err(format!(
                "outage period {period:?} is below the floor of {MIN_OUTAGE_PERIOD:?} (for faster failures use `loss`)"
            ));
        }
        if duration >= period {
            return Err(format!(
                "outage duration {duration:?} must be shorter than its period {period:?}"
            ));
        }
        Ok(PeriodicOutage {
            period,
            duration,
            first: first.unwrap_or(period),
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeriodicOutageToml {
    #[serde(with = "crate::units::duration")]
    period: Duration,
    #[serde(with = "crate::units::duration")]
    duration: Duration,
    #[serde(default, deserialize_with = "crate::units::opt_duration::deserialize")]
    first: Option<Duration>,
}

impl TryFrom<PeriodicOutageToml> for PeriodicOutage {
    type Error = String;
    fn try_from(t: PeriodicOutageToml) -> Result<Self, String> {
        PeriodicOutage::new(t.period, t.duration, t.first)
    }
}

/// All outage windows of a link, as half-open `[start, end)` intervals.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutageSchedule {
    /// Scheduled windows sorted by start; empty ones removed.
    windows: Vec<(Instant, Instant)>,
    periodic: Option<PeriodicOutage>,
}

impl OutageSchedule {
    pub(crate) fn new(list: &[Outage], periodic: Option<PeriodicOutage>) -> OutageSchedule {
        let mut windows: Vec<(Instant, Instant)> = list
            .iter()
            .filter(|o| !o.duration.is_zero())
            .map(|o| {
                let start = Instant::ZERO + o.start;
                (start, start + o.duration)
            })
            .collect();
        windows.sort();
        OutageSchedule {
            windows,
            periodic: periodic.filter(|p| !p.duration.is_zero()),
        }
    }

    /// No outage at all: the common link, asked on every packet, so the
    /// callers below check this inline before any search.
    pub(crate) fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.periodic.is_none()
    }

    #[inline]
    pub(crate) fn is_down(&self, t: Instant) -> bool {
        !self.is_empty() && self.window_end(t).is_some()
    }

    /// If the link is down at `t`, when it is up again (after any windows
    /// that overlap or touch).
    #[inline]
    pub(crate) fn up_again(&self, t: Instant) -> Option<Instant> {
        if self.is_empty() {
            return None;
        }
        let mut up = self.window_end(t)?;
        while let Some(end) = self.window_end(up) {
            up = end;
        }
        Some(up)
    }

    /// The first time strictly after `t` that an outage starts.
    #[inline]
    pub(crate) fn next_start_after(&self, t: Instant) -> Option<Instant> {
        if self.is_empty() {
            return None;
        }
        let i = self.windows.partition_point(|(s, _)| *s <= t);
        let listed = self.windows.get(i).map(|(s, _)| *s);
        let periodic = self.periodic.map(|p| {
            let first = Instant::ZERO + p.first;
            if t < first {
                first
            } else {
                let k = (t - first).as_nanos() / p.period.as_nanos() + 1;
                first + nanos(k * p.period.as_nanos())
            }
        });
        match (listed, periodic) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The end of a window that contains `t`, if any.
    fn window_end(&self, t: Instant) -> Option<Instant> {
        // Listed windows that start at or before `t`; the latest-ending one
        // decides (windows may overlap).
        let i = self.windows.partition_point(|(s, _)| *s <= t);
        let listed = self.windows[..i]
            .iter()
            .map(|(_, e)| *e)
            .filter(|e| *e > t)
            .max();
        let periodic = self.periodic.and_then(|p| {
            let first = Instant::ZERO + p.first;
            if t < first {
                return None;
            }
            let k = (t - first).as_nanos() / p.period.as_nanos();
            let end = first + nanos(k * p.period.as_nanos()) + p.duration;
            (t < end).then_some(end)
        });
        listed.max(periodic)
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    fn d(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn listed_windows_merge_and_report_edges() {
        let s = OutageSchedule::new(
            &[
                Outage {
                    start: d(100),
                    duration: d(50),
                },
                Outage {
                    start: d(140),
                    duration: d(30),
                },
                Outage {
                    start: d(500),
                    duration: d(0),
                },
            ],
            None,
        );
        assert!(!s.is_down(ms(99)));
        assert!(s.is_down(ms(100)));
        assert_eq!(s.up_again(ms(120)), Some(ms(170)));
        assert_eq!(s.up_again(ms(170)), None);
        assert_eq!(s.next_start_after(ms(0)), Some(ms(100)));
        assert_eq!(s.next_start_after(ms(100)), Some(ms(140)));
        assert_eq!(s.next_start_after(ms(140)), None);
        assert!(!s.is_down(ms(500)));
    }

    #[test]
    fn periodic_windows() {
        let p = PeriodicOutage::new(d(1000), d(300), None).unwrap();
        let s = OutageSchedule::new(&[], Some(p));
        assert!(!s.is_down(ms(999)));
        assert_eq!(s.up_again(ms(1000)), Some(ms(1300)));
        assert_eq!(s.up_again(ms(2299)), Some(ms(2300)));
        assert!(!s.is_down(ms(2300)));
        assert_eq!(s.next_start_after(ms(0)), Some(ms(1000)));
        assert_eq!(s.next_start_after(ms(1000)), Some(ms(2000)));
        assert!(PeriodicOutage::new(d(100), d(100), None).is_err());
        let e = PeriodicOutage::new(Duration::from_nanos(2), Duration::from_nanos(1), None);
        assert!(e.unwrap_err().contains("floor of 1ms"));
        assert!(PeriodicOutage::new(MIN_OUTAGE_PERIOD, Duration::ZERO, None).is_ok());
    }
}
