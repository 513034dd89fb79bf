//! Summaries of what a run measured: percentiles of latencies and sizes,
//! and time series thinned for plotting without hiding spikes.
//!
//! Latencies are kept in an HDR histogram with microsecond units and three
//! significant digits: exact up to 2.048 ms, within 0.1% above, up to one
//! hour (longer values are clamped to the top, never dropped).

use brisk_time::Instant;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Three significant digits: 0.1% resolution, the usual HDR choice.
const SIGNIFICANT_DIGITS: u8 = 3;
/// The longest latency kept apart from the rest: one hour, in microseconds.
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// The largest size kept apart from the rest: 1 TiB, in bytes.
const MAX_SIZE_BYTES: u64 = 1 << 40;

/// The usual report row. Units are those of the summary that produced it:
/// milliseconds for [`LatencySummary`], bytes for [`SizeSummary`]. An empty
/// summary gives all zeros with `count == 0`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// The smallest sample (absent from files written before it was
    /// added: read as zero).
    #[serde(default)]
    pub min: f64,
    /// The median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile: the delay figure Pantheon-style comparisons plot
    /// (absent from files written before it was added: read as zero).
    #[serde(default)]
    pub p95: f64,
    /// 99th percentile: what one request in a hundred waits longer than.
    pub p99: f64,
    /// The largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Samples recorded.
    pub count: u64,
}

/// An HDR histogram over `1..=max` in some integer unit (the second
/// field: larger values count as `max`).
///
/// It covers only up to the largest value recorded so far and grows in
/// steps of one power of two: a histogram up to `max` from the start would
/// take 188 kB for latencies up to an hour, however small the values
/// recorded, which made a tracked flow of the live router (six summaries)
/// cost over 1 MB. Up to 2,048 units it takes 16 kB. Buckets and
/// quantiles are those of a fixed-range histogram.
#[derive(Debug, Clone)]
struct Hist(Histogram<u64>, u64);

impl Hist {
    fn new(max: u64) -> Self {
        // The digits are a constant the crate accepts (at most 5), so this
        // cannot fail.
        Hist(
            Histogram::new(SIGNIFICANT_DIGITS).expect("constant digits are valid"),
            max,
        )
    }

    fn record(&mut self, value: u64) {
        // Clamped to `max` as the fixed range did; growing can only fail
        // on a target whose usize cannot index a 1 h or 1 TiB range.
        let _ = self.0.record(value.min(self.1));
    }

    fn merge(&mut self, other: &Hist) {
        // `self` grows to cover `other`'s largest value, so nothing can
        // fall outside its range.
        let _ = self.0.add(&other.0);
    }

    fn quantile(&self, q: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_quantile(q)
        }
    }

    fn percentiles(&self, scale: f64) -> Percentiles {
        let h = &self.0;
        if h.is_empty() {
            return Percentiles::default();
        }
        // One walk over the recorded buckets for the four quantiles and the
        // mean: asked one by one, the histogram walks its buckets once per
        // question, which summing up a hundred flows' delays was 4% of a
        // run. Same arithmetic in the same order as `value_at_quantile` (the
        // first bucket whose running count reaches ceil(q * count), at
        // least 1; its highest value) and `mean` (each bucket's middle value
        // times its share, added up from the lowest bucket), so the same
        // numbers.
        const QUANTILES: [f64; 4] = [0.50, 0.90, 0.95, 0.99];
        let total = h.len();
        let targets = QUANTILES.map(|q| ((q * total as f64).ceil() as u64).max(1));
        let mut at = [0u64; QUANTILES.len()];
        let (mut next, mut seen, mut mean) = (0, 0u64, 0.0_f64);
        for v in h.iter_recorded() {
            let (value, count) = (v.value_iterated_to(), v.count_at_value());
            seen += count;
            while next < targets.len() && seen >= targets[next] {
                at[next] = value;
                next += 1;
            }
            mean += h.median_equivalent(value) as f64 * count as f64 / total as f64;
        }
        Percentiles {
            min: h.min() as f64 * scale,
            p50: at[0] as f64 * scale,
            p90: at[1] as f64 * scale,
            p95: at[2] as f64 * scale,
            p99: at[3] as f64 * scale,
            max: h.max() as f64 * scale,
            mean: mean * scale,
            count: total,
        }
    }
}

/// Percentiles of latencies (RTT, one-way delay, queueing delay,
/// completion time). Reports milliseconds.
#[derive(Debug, Clone)]
pub struct LatencySummary(Hist);

impl Default for LatencySummary {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencySummary {
    /// Empty; keeps latencies up to 1 h at 3 significant digits (a longer
    /// one counts as 1 h).
    pub fn new() -> Self {
        LatencySummary(Hist::new(MAX_LATENCY_US))
    }

    /// Records one latency, rounded down to whole microseconds.
    pub fn record(&mut self, latency: Duration) {
        self.0
            .record(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    /// Adds every sample of `other` (e.g. to pool runs with different seeds).
    pub fn merge(&mut self, other: &LatencySummary) {
        self.0.merge(&other.0);
    }

    /// The latency at quantile `q` in `0.0..=1.0`; zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        Duration::from_micros(self.0.quantile(q))
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.0.0.len()
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.0.0.is_empty()
    }

    /// min, p50, p90, p95, p99, max and mean in milliseconds.
    pub fn percentiles(&self) -> Percentiles {
        self.0.percentiles(1e-3)
    }
}

/// Percentiles of sizes (packet lengths, queue backlogs, burst sizes).
/// Reports bytes.
#[derive(Debug, Clone)]
pub struct SizeSummary(Hist);

impl Default for SizeSummary {
    fn default() -> Self {
        Self::new()
    }
}

impl SizeSummary {
    /// Empty; keeps sizes up to 1 TiB at 3 significant digits (a larger one
    /// counts as 1 TiB).
    pub fn new() -> Self {
        SizeSummary(Hist::new(MAX_SIZE_BYTES))
    }

    /// Records one size in bytes.
    pub fn record(&mut self, len_bytes: u64) {
        self.0.record(len_bytes);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &SizeSummary) {
        self.0.merge(&other.0);
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.0.0.len()
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.0.0.is_empty()
    }

    /// p50, p90, p95, p99, max and mean in bytes.
    pub fn percentiles(&self) -> Percentiles {
        self.0.percentiles(1.0)
    }
}

/// A named time series: `(seconds since the run's start, value in unit)`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Series {
    /// Legend entry and column name.
    pub name: String,
    /// The unit of the values, e.g. "ms" or "Mbit/s"; plots print it.
    pub unit: String,
    /// `(seconds since the run's start, value)` in recording order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// An empty series.
    pub fn new(name: impl Into<String>, unit: impl Into<String>) -> Self {
        Series {
            name: name.into(),
            unit: unit.into(),
            points: Vec::new(),
        }
    }

    /// Appends a value observed `t_s` seconds after the run's start.
    pub fn push(&mut self, t_s: f64, value: f64) {
        self.points.push((t_s, value));
    }

    /// Appends a value observed at `at`, counting seconds from `Instant::ZERO`.
    pub fn push_at(&mut self, at: Instant, value: f64) {
        self.push(at.as_secs_f64(), value);
    }

    /// At most `max_points` points that keep the shape, for plotting.
    ///
    /// Points with a non-finite time or value are dropped. The rest are cut
    /// into `max_points / 2` runs of consecutive points and each run keeps
    /// its minimum and its maximum, in time order, so a one-sample spike
    /// (a delay burst, a rate collapse) survives any amount of thinning.
    /// With `max_points == 1` the single point kept is the maximum.
    pub fn downsample(&self, max_points: usize) -> Series {
        let finite: Vec<(f64, f64)> = self
            .points
            .iter()
            .copied()
            .filter(|(t, v)| t.is_finite() && v.is_finite())
            .collect();
        let points = if finite.len() <= max_points {
            finite
        } else if max_points < 2 {
            finite
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .into_iter()
                .take(max_points)
                .collect()
        } else {
            let buckets = max_points / 2;
            let chunk = finite.len().div_ceil(buckets);
            let mut out = Vec::with_capacity(max_points);
            for run in finite.chunks(chunk) {
                let lo = (0..run.len()).min_by(|&a, &b| run[a].1.total_cmp(&run[b].1));
                let hi = (0..run.len()).max_by(|&a, &b| run[a].1.total_cmp(&run[b].1));
                if let (Some(lo), Some(hi)) = (lo, hi) {
                    out.push(run[lo.min(hi)]);
                    if lo != hi {
                        out.push(run[lo.max(hi)]);
                    }
                }
            }
            out
        };
        Series {
            name: self.name.clone(),
            unit: self.unit.clone(),
            points,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The growing histogram reports what one fixed to `1..=max` from the
    /// start reports, for the same values (spread over eleven decades,
    /// one past `max`), merged or not, and costs far less memory while
    /// its values are small.
    #[test]
    fn a_growing_histogram_matches_a_fixed_range_one() {
        let mut fixed = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_US, 3).unwrap();
        let (mut a, mut b) = (Hist::new(MAX_LATENCY_US), Hist::new(MAX_LATENCY_US));
        let mut x: u64 = 12_345;
        for i in 0..20_000u64 {
            // A deterministic spread over 1 us to 10^10 us.
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = (x >> 40) % 10u64.pow(1 + (i % 10) as u32);
            fixed.saturating_record(v);
            if i % 2 == 0 { a.record(v) } else { b.record(v) }
        }
        a.merge(&b);
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.quantile(q), fixed.value_at_quantile(q), "q {q}");
        }
        assert_eq!((a.0.len(), a.0.max()), (fixed.len(), fixed.max()));
        let small = Hist::new(MAX_LATENCY_US);
        assert!(
            small.0.distinct_values() * 8 <= fixed.distinct_values(),
            "{} counters against {}",
            small.0.distinct_values(),
            fixed.distinct_values()
        );
    }

    #[test]
    fn one_walk_gives_what_each_question_alone_gives() {
        // Spreads from one repeated value to six decades, with runs of
        // equal values and buckets left empty: the single walk answers
        // exactly as the histogram asked quantile by quantile.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut draw = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..200u64 {
            let mut h = Hist::new(MAX_LATENCY_US);
            let n = 1 + draw() % 3000;
            let span = 1 + draw() % 10u64.pow(1 + (case % 7) as u32);
            for _ in 0..n {
                let v = 1 + draw() % span;
                h.record(v);
                if draw() % 4 == 0 {
                    h.record(v);
                }
            }
            let p = h.percentiles(1.0);
            let want = [0.50, 0.90, 0.95, 0.99].map(|q| h.0.value_at_quantile(q) as f64);
            assert_eq!([p.p50, p.p90, p.p95, p.p99], want, "case {case}");
            assert_eq!(p.mean.to_bits(), h.0.mean().to_bits(), "case {case}");
            assert_eq!(
                (p.min, p.max, p.count),
                (h.0.min() as f64, h.0.max() as f64, h.0.len())
            );
        }
    }

    #[test]
    fn percentiles_of_a_uniform_spread() {
        // 1..=1000 ms: the pth percentile is p% of 1000 ms, within the
        // histogram's 0.1% resolution.
        let mut s = LatencySummary::new();
        for ms in 1..=1000 {
            s.record(Duration::from_millis(ms));
        }
        let p = s.percentiles();
        assert_eq!(p.count, 1000);
        for (got, want) in [
            (p.min, 1.0),
            (p.p50, 500.0),
            (p.p90, 900.0),
            (p.p95, 950.0),
            (p.p99, 990.0),
            (p.max, 1000.0),
            (p.mean, 500.5),
        ] {
            assert!((got - want).abs() <= want * 1e-3, "got {got}, want {want}");
        }
    }

    #[test]
    fn latencies_are_microsecond_exact_below_two_ms_and_reach_past_100_s() {
        let mut s = LatencySummary::new();
        s.record(Duration::from_micros(1_234));
        assert_eq!(s.quantile(1.0), Duration::from_micros(1_234));
        assert_eq!(s.percentiles().max, 1.234);
        s.record(Duration::from_micros(1_999));
        assert_eq!(s.percentiles().min, 1.234);

        let mut zero = LatencySummary::new();
        zero.record(Duration::ZERO);
        zero.record(Duration::from_nanos(999));
        assert_eq!((zero.len(), zero.percentiles().max), (2, 0.0));
        assert_eq!(zero.percentiles().min, 0.0);

        let mut long = LatencySummary::new();
        long.record(Duration::from_secs(150));
        let max = long.percentiles().max;
        assert!((max - 150_000.0).abs() <= 150.0, "{max}");
        // Beyond the range a value is clamped, not lost.
        long.record(Duration::from_secs(86_400));
        assert_eq!(long.len(), 2);
        assert!(long.percentiles().max >= 3_600_000.0 * 0.999);
    }

    #[test]
    fn empty_summary_is_zeros_and_serializes() {
        let s = LatencySummary::new();
        assert!(s.is_empty());
        assert_eq!(s.percentiles(), Percentiles::default());
        assert_eq!(s.quantile(0.5), Duration::ZERO);
        let json = serde_json::to_string(&s.percentiles()).unwrap();
        assert_eq!(
            json,
            r#"{"min":0.0,"p50":0.0,"p90":0.0,"p95":0.0,"p99":0.0,"max":0.0,"mean":0.0,"count":0}"#
        );
        // Files written before `min` and `p95` existed still read.
        let old: Percentiles = serde_json::from_str(
            r#"{"p50":1.0,"p90":2.0,"p99":3.0,"max":4.0,"mean":1.5,"count":2}"#,
        )
        .unwrap();
        assert_eq!((old.min, old.p50, old.p95, old.count), (0.0, 1.0, 0.0, 2));
    }

    #[test]
    fn merge_pools_samples() {
        let (mut a, mut b) = (LatencySummary::new(), LatencySummary::new());
        a.record(Duration::from_millis(10));
        b.record(Duration::from_millis(30));
        a.merge(&b);
        assert_eq!(a.len(), 2);
        assert!((a.percentiles().mean - 20.0).abs() < 0.02);
    }

    #[test]
    fn sizes_report_bytes() {
        let mut s = SizeSummary::new();
        for len in [40, 1200, 1200, 1500] {
            s.record(len);
        }
        let p = s.percentiles();
        assert_eq!((p.min, p.p50, p.max, p.count), (40.0, 1200.0, 1500.0, 4));
        assert!((p.mean - 985.0).abs() < 1.0);
        let mut t = SizeSummary::new();
        t.merge(&s);
        assert_eq!(t.len(), 4);
        assert!(SizeSummary::new().is_empty());
    }

    fn ramp_with_spikes(n: usize) -> Series {
        let mut s = Series::new("rtt", "ms");
        for i in 0..n {
            let v = match i {
                4_321 => 900.0,
                7_777 => -50.0,
                _ => 20.0 + (i % 10) as f64,
            };
            s.push(i as f64 * 1e-3, v);
        }
        s
    }

    #[test]
    fn downsample_keeps_spikes_and_order() {
        let s = ramp_with_spikes(10_000);
        for n in [2, 3, 100, 999] {
            let d = s.downsample(n);
            assert!(d.points.len() <= n, "{n}: {}", d.points.len());
            assert!(d.points.iter().any(|p| p.1 == 900.0), "{n} lost the peak");
            assert!(d.points.iter().any(|p| p.1 == -50.0), "{n} lost the dip");
            assert!(
                d.points.windows(2).all(|w| w[0].0 < w[1].0),
                "{n} out of order"
            );
            assert_eq!((d.name.as_str(), d.unit.as_str()), ("rtt", "ms"));
        }
        // Short series come back whole.
        assert_eq!(s.downsample(20_000).points, s.points);
    }

    #[test]
    fn downsample_edge_cases() {
        let s = ramp_with_spikes(10);
        assert!(s.downsample(0).points.is_empty());
        let one = ramp_with_spikes(10_000).downsample(1);
        assert_eq!(
            one.points.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![900.0]
        );
        assert!(Series::new("x", "").downsample(10).points.is_empty());

        let mut bad = Series::new("x", "ms");
        bad.push(0.0, f64::NAN);
        bad.push(f64::INFINITY, 1.0);
        bad.push(1.0, 2.0);
        assert_eq!(bad.downsample(10).points, vec![(1.0, 2.0)]);
    }

    #[test]
    fn push_at_counts_seconds_from_zero() {
        let mut s = Series::new("rate", "Mbit/s");
        s.push_at(Instant::from_millis(1_500), 12.0);
        assert_eq!(s.points, vec![(1.5, 12.0)]);
    }
}
