//! Rate models: how many bytes the transmitter may send, and when.
//!
//! Two kinds. A *continuous* model (a constant rate, or a schedule of step
//! changes) serializes each packet for `8 * len / rate` seconds, integrating
//! exactly across rate steps. A *trace* model replays a mahimahi
//! packet-delivery trace: discrete delivery opportunities of
//! [`MAHIMAHI_OPPORTUNITY_BYTES`] each, replayed the way mahimahi's
//! `LinkQueue` does (see [`MahimahiTrace`]).
//!
//! Times in schedules and traces count from [`Instant::ZERO`], the start of
//! the run.

use brisk_time::Instant;
use std::path::PathBuf;
use std::time::Duration;

/// Bytes one mahimahi delivery opportunity carries. mahimahi itself counts
/// 1504 because its packets include the 4-byte TUN header; Brisk packets are
/// bare IP datagrams, so a full 1500-byte datagram uses exactly one
/// opportunity, as it does in mahimahi.
pub const MAHIMAHI_OPPORTUNITY_BYTES: usize = 1500;

/// How fast the transmitter drains the queue.
///
/// In a scenario, `rate` takes one of:
/// - `rate = "10Mbit"`: a constant rate (also `{ constant = "10Mbit" }`);
/// - `rate = { schedule = [["0s", "10Mbit"], ["5s", "2Mbit"]] }`: step
///   changes, each rate holding from its time until the next step (the first
///   rate also applies before its time);
/// - `rate = { mahimahi = "traces/lte.down" }`: a mahimahi trace file, read
///   by the caller with [`crate::LinkConfig::load_trace`].
#[derive(Debug, Clone, PartialEq)]
pub enum RateModel {
    /// A fixed rate in bits per second.
    Constant {
        /// Rate in bit/s.
        bps: u64,
    },
    /// Step changes of a constant rate.
    Schedule(RateSchedule),
    /// Delivery opportunities replayed from a mahimahi trace.
    Mahimahi(MahimahiTrace),
    /// A mahimahi trace file named in a scenario, not read yet. A link built
    /// with it never transmits; load it first ([`crate::LinkConfig::load_trace`]),
    /// which [`crate::LinkConfig::validate`] checks.
    MahimahiFile(PathBuf),
}

impl RateModel {
    /// Parses a mahimahi trace (see [`MahimahiTrace::parse`]).
    pub fn from_mahimahi(text: &str) -> Result<RateModel, TraceError> {
        MahimahiTrace::parse(text).map(RateModel::Mahimahi)
    }

    /// The rate in force at `t` and the time it next changes, for continuous
    /// models. A rate of zero is read as 1 bit/s so time always advances.
    pub(crate) fn piece(&self, t: Instant) -> (u64, Option<Instant>) {
        match self {
            RateModel::Constant { bps } => ((*bps).max(1), None),
            RateModel::Schedule(s) => s.piece(t),
            // Trace models are driven by opportunities, not by a rate.
            RateModel::Mahimahi(_) | RateModel::MahimahiFile(_) => (1, None),
        }
    }
}

/// One step of a [`RateSchedule`]: from `at` (since the run's start) the
/// link runs at `bps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStep {
    /// When this rate takes over, measured from the run's start.
    pub at: Duration,
    /// Rate in bit/s from `at` until the next step.
    pub bps: u64,
}

/// Step changes of the link rate, sorted by time, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateSchedule {
    steps: Vec<RateStep>,
}

impl RateSchedule {
    /// Checks that there is at least one step and that times strictly
    /// increase.
    pub fn new(steps: Vec<RateStep>) -> Result<RateSchedule, String> {
        if steps.is_empty() {
            return Err("a rate schedule needs at least one step".into());
        }
        if let Some(w) = steps.windows(2).find(|w| w[1].at <= w[0].at) {
            return Err(format!(
                "rate schedule times must increase: {:?} follows {:?}",
                w[1].at, w[0].at
            ));
        }
        Ok(RateSchedule { steps })
    }

    /// The steps, sorted by strictly increasing `at`; never empty.
    pub fn steps(&self) -> &[RateStep] {
        &self.steps
    }

    fn piece(&self, t: Instant) -> (u64, Option<Instant>) {
        let since = t - Instant::ZERO;
        // Index of the first step that starts after `t`.
        let next = self.steps.partition_point(|s| s.at <= since);
        let current = &self.steps[next.saturating_sub(1)];
        let change = self.steps.get(next).map(|s| Instant::ZERO + s.at);
        (current.bps.max(1), change)
    }
}

/// A mahimahi packet-delivery trace.
///
/// The file holds one integer millisecond timestamp per line, not
/// decreasing; each line is one opportunity to deliver
/// [`MAHIMAHI_OPPORTUNITY_BYTES`] bytes at that time after the start (several
/// lines may share a millisecond). The trace loops with a period equal to
/// its last timestamp, which must be positive.
///
/// Replay follows mahimahi's `LinkQueue::rationalize`: at each opportunity
/// the transmitter has a budget of 1500 bytes. It takes packets from the
/// queue head and spends the budget on them; a packet larger than what is
/// left carries its remaining bytes over to later opportunities, and several
/// small packets may share one opportunity. A packet leaves at the time of
/// the opportunity that completes it. Budget that finds the queue empty is
/// wasted, and a packet that arrives at the very instant of an opportunity
/// misses it (mahimahi drains due opportunities before enqueueing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MahimahiTrace {
    /// Opportunity times in ms within one period, not decreasing.
    opportunities_ms: Vec<u64>,
}

/// A malformed mahimahi trace; line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A line is not a whole number of milliseconds.
    #[error("mahimahi trace line {line}: expected a whole number of milliseconds, got {text:?}")]
    NotANumber {
        /// Line number, from 1.
        line: usize,
        /// The line as read.
        text: String,
    },
    /// A timestamp is smaller than the one before it.
    #[error(
        "mahimahi trace line {line}: {ms} ms comes after {prev} ms (timestamps must not decrease)"
    )]
    Decreasing {
        /// Line number, from 1.
        line: usize,
        /// The offending timestamp, in ms.
        ms: u64,
        /// The previous line's timestamp, in ms.
        prev: u64,
    },
    #[error("mahimahi trace has no delivery opportunities")]
    /// The trace holds no timestamps.
    Empty,
    /// The last timestamp is 0, so the trace has no length to loop over.
    #[error("mahimahi trace lasts 0 ms: its last timestamp must be positive")]
    ZeroLength,
    #[error("mahimahi trace line {line}: {ms} ms is past the longest trace, {MAX_TRACE_MS} ms")]
    /// A timestamp exceeds [`MAX_TRACE_MS`].
    TooLong {
        /// Line number, from 1.
        line: usize,
        /// The offending timestamp, in ms.
        ms: u64,
    },
}

/// The latest timestamp a trace may hold, about 35 years: far beyond any
/// recording, and small enough that its nanoseconds, times a loop count,
/// stay within the simulator's clock.
pub const MAX_TRACE_MS: u64 = 1 << 40;

impl MahimahiTrace {
    /// Parses trace text. Blank lines and surrounding spaces are ignored.
    pub fn parse(text: &str) -> Result<MahimahiTrace, TraceError> {
        let mut opportunities_ms: Vec<u64> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let s = raw.trim();
            if s.is_empty() {
                continue;
            }
            let ms: u64 = s.parse().map_err(|_| TraceError::NotANumber {
                line,
                text: s.to_string(),
            })?;
            if let Some(&prev) = opportunities_ms.last()
                && ms < prev
            {
                return Err(TraceError::Decreasing { line, ms, prev });
            }
            if ms > MAX_TRACE_MS {
                return Err(TraceError::TooLong { line, ms });
            }
            opportunities_ms.push(ms);
        }
        match opportunities_ms.last() {
            None => Err(TraceError::Empty),
            Some(0) => Err(TraceError::ZeroLength),
            Some(_) => Ok(MahimahiTrace { opportunities_ms }),
        }
    }

    /// How long the trace runs before it loops.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms())
    }

    /// Delivery opportunities in one period.
    pub fn opportunities_per_period(&self) -> usize {
        self.opportunities_ms.len()
    }

    /// Average rate over one period, in bits per second.
    pub fn mean_bps(&self) -> f64 {
        let bits = (self.opportunities_ms.len() * MAHIMAHI_OPPORTUNITY_BYTES * 8) as f64;
        bits / self.period().as_secs_f64()
    }

    fn period_ms(&self) -> u64 {
        self.opportunities_ms.last().copied().unwrap_or(1).max(1)
    }

    /// When global opportunity `k` happens (counting over all periods).
    pub(crate) fn opportunity_at(&self, k: u64) -> Instant {
        let n = self.opportunities_ms.len().max(1) as u64;
        let within = self.opportunities_ms.get((k % n) as usize).copied();
        let ms = (k / n)
            .saturating_mul(self.period_ms())
            .saturating_add(within.unwrap_or(0));
        Instant::from_millis(ms)
    }

    /// The first global opportunity at or after `t` (`inclusive`), or
    /// strictly after it.
    pub(crate) fn first_opportunity(&self, t: Instant, inclusive: bool) -> u64 {
        let period_ns = self.period_ms() * 1_000_000;
        let n = self.opportunities_ms.len() as u64;
        let (p, offset_ns) = (t.as_nanos() / period_ns, t.as_nanos() % period_ns);
        // Index within a period of the first opportunity at or after
        // `offset_ns` (or after it), possibly `n` (none left).
        let within = |offset_ns: u64| {
            self.opportunities_ms.partition_point(|&ms| {
                let ns = ms * 1_000_000;
                if inclusive {
                    ns < offset_ns
                } else {
                    ns <= offset_ns
                }
            }) as u64
        };
        // The previous period's last opportunities fall exactly on this
        // period's start, since the last timestamp is the period.
        if p > 0 {
            let i = within(offset_ns + period_ns);
            if i < n {
                return (p - 1).saturating_mul(n).saturating_add(i);
            }
        }
        p.saturating_mul(n).saturating_add(within(offset_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_loops_like_mahimahi() {
        let t = MahimahiTrace::parse("0\n0\n5\n\n10\n").unwrap();
        assert_eq!(t.period(), Duration::from_millis(10));
        assert_eq!(t.opportunities_per_period(), 4);
        let times: Vec<u64> = (0..9).map(|k| t.opportunity_at(k).as_millis()).collect();
        // The period's last opportunity (10) and the next period's first
        // ones (10 + 0) coincide, as in mahimahi.
        assert_eq!(times, vec![0, 0, 5, 10, 10, 10, 15, 20, 20]);
        // 4 x 1500 B per 10 ms = 4.8 Mbit/s.
        assert!((t.mean_bps() - 4.8e6).abs() < 1.0);
    }

    #[test]
    fn finds_the_next_opportunity() {
        let t = MahimahiTrace::parse("2\n5\n10").unwrap();
        let ms = |x| Instant::from_millis(x);
        assert_eq!(t.first_opportunity(ms(0), false), 0);
        assert_eq!(t.first_opportunity(ms(2), false), 1);
        assert_eq!(t.first_opportunity(ms(2), true), 0);
        assert_eq!(t.first_opportunity(ms(11), false), 3);
        assert_eq!(t.opportunity_at(3), ms(12));
        assert_eq!(t.first_opportunity(ms(20), true), 5);
        assert_eq!(t.opportunity_at(5), ms(20));
        assert_eq!(t.first_opportunity(ms(20), false), 6);
    }

    #[test]
    fn malformed_traces_name_the_line() {
        let e = MahimahiTrace::parse("1\n2\nx3\n").unwrap_err();
        assert_eq!(
            e,
            TraceError::NotANumber {
                line: 3,
                text: "x3".into()
            }
        );
        assert!(e.to_string().contains("line 3"), "{e}");
        let e = MahimahiTrace::parse("1\n5\n4").unwrap_err();
        assert_eq!(
            e,
            TraceError::Decreasing {
                line: 3,
                ms: 4,
                prev: 5
            }
        );
        assert_eq!(
            MahimahiTrace::parse("-1"),
            Err(TraceError::NotANumber {
                line: 1,
                text: "-1".into()
            })
        );
        assert_eq!(MahimahiTrace::parse("\n \n"), Err(TraceError::Empty));
        assert_eq!(MahimahiTrace::parse("0\n0"), Err(TraceError::ZeroLength));
        assert!(MahimahiTrace::parse("1.5").is_err());
    }

    proptest::proptest! {
        /// Any trace text gives a trace or a message naming the problem;
        /// an accepted trace's opportunities never go back in time, and
        /// the one found for an instant is the first at or after it.
        #[test]
        fn traces_parse_or_say_why_and_replay_in_order(
            steps in proptest::collection::vec(0u64..20, 0..12),
            huge in proptest::option::of(0u32..64),
            garbage in proptest::option::of(("\\PC{0,6}", 0usize..12)),
            probe_ns in proptest::prelude::any::<u64>(),
        ) {
            // Non-decreasing timestamps, perhaps ending far out, perhaps
            // with a line of garbage.
            let mut lines: Vec<String> = steps
                .iter()
                .scan(0u64, |at, step| {
                    *at += step;
                    Some(at.to_string())
                })
                .collect();
            if let Some(b) = huge {
                lines.push((1u64 << b).max(steps.iter().sum()).to_string());
            }
            if let Some((text, at)) = garbage {
                lines.insert(at.min(lines.len()), text);
            }
            let Ok(t) = MahimahiTrace::parse(&lines.join("\n")) else {
                return Ok(());
            };
            proptest::prop_assert!(t.mean_bps() > 0.0 && t.mean_bps().is_finite());
            let mut prev = Instant::ZERO;
            for k in 0..(3 * t.opportunities_per_period() as u64) {
                let at = t.opportunity_at(k);
                proptest::prop_assert!(at >= prev, "opportunity {k} at {at:?} before {prev:?}");
                prev = at;
            }
            for probe in [Instant::ZERO, Instant::from_nanos(probe_ns % (1 << 50)), prev] {
                let k = t.first_opportunity(probe, true);
                proptest::prop_assert!(t.opportunity_at(k) >= probe);
                if k > 0 {
                    proptest::prop_assert!(t.opportunity_at(k - 1) < probe);
                }
            }
        }
    }

    #[test]
    fn traces_past_the_longest_are_refused() {
        let e = MahimahiTrace::parse("5\n288230376151711744\n").unwrap_err();
        assert_eq!(
            e,
            TraceError::TooLong {
                line: 2,
                ms: 1 << 58
            }
        );
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(MahimahiTrace::parse(&MAX_TRACE_MS.to_string()).is_ok());
    }

    #[test]
    fn schedule_pieces() {
        let s = RateSchedule::new(vec![
            RateStep {
                at: Duration::from_secs(1),
                bps: 10,
            },
            RateStep {
                at: Duration::from_secs(2),
                bps: 20,
            },
        ])
        .unwrap();
        let at = |ms| Instant::from_millis(ms);
        assert_eq!(s.piece(at(0)), (10, Some(at(1000))));
        assert_eq!(s.piece(at(1500)), (10, Some(at(2000))));
        assert_eq!(s.piece(at(2000)), (20, None));
        assert!(RateSchedule::new(vec![]).is_err());
        let dup = RateStep {
            at: Duration::ZERO,
            bps: 1,
        };
        assert!(RateSchedule::new(vec![dup, dup]).is_err());
    }
}
