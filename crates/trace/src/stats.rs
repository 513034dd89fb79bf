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

/// An HDR histogram over `1..=max` in some integer unit (larger values
/// count as `max`): the buckets of [`Histogram`] at three significant
/// digits, counted here. Recording into the crate's histogram checked its
/// range and kept its minimum and maximum on every sample, three samples
/// per packet in a saturated run; here a sample is one index and one
/// increment, and the crate's histogram is built from the counts when one
/// is wanted, with the same buckets and so the same answers.
///
/// It covers only up to the largest value recorded so far: a histogram up
/// to `max` from the start would take 188 kB for latencies up to an hour,
/// however small the values recorded, which made a tracked flow of the
/// live router (six summaries) cost over 1 MB. Up to 2,048 units it takes
/// 16 kB.
#[derive(Debug, Clone)]
struct Hist {
    /// Samples by bucket index (see [`bucket`]).
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

/// Buckets of one unit below this value; above, each power of two is cut
/// in half this many buckets (three significant digits).
const SUB_BUCKETS: u64 = 2048;

/// The index of the bucket holding `value`: the one [`Histogram`] at
/// three significant digits from a lowest value of 1 gives it.
#[inline]
fn bucket(value: u64) -> usize {
    // The power of two above the exact range, 0 inside it.
    let power = (SUB_BUCKETS - 1).leading_zeros() - (value | (SUB_BUCKETS - 1)).leading_zeros();
    let sub = value >> power;
    (u64::from(power) * (SUB_BUCKETS / 2) + sub) as usize
}

/// The lowest value of bucket `index`, its width, and so its highest
/// value and middle as [`Histogram`] has them.
fn bucket_span(index: usize) -> (u64, u64) {
    let half = SUB_BUCKETS / 2;
    let index = index as u64;
    if index < SUB_BUCKETS {
        return (index, 1);
    }
    let power = index / half - 1;
    let sub = index % half + half;
    (sub << power, 1 << power)
}

impl Hist {
    fn new(max: u64) -> Self {
        Hist {
            counts: Vec::new(),
            total: 0,
            max,
        }
    }

    #[inline]
    fn record(&mut self, value: u64) {
        let i = bucket(value.min(self.max));
        if i >= self.counts.len() {
            self.grow(i);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    /// Makes room up to bucket `i`, in steps of one power of two of the
    /// values covered.
    #[cold]
    fn grow(&mut self, i: usize) {
        let half = (SUB_BUCKETS / 2) as usize;
        let len = (i / half + 1) * half;
        self.counts.resize(len.max(SUB_BUCKETS as usize), 0);
    }

    fn merge(&mut self, other: &Hist) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
    }

    /// The recorded buckets, lowest first: (lowest value, width, count).
    fn recorded(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| {
                let (low, width) = bucket_span(i);
                (low, width, *c)
            })
    }

    /// The same samples in the crate's histogram (each bucket's count at
    /// its lowest value).
    fn hdr(&self) -> Histogram<u64> {
        // The digits are a constant the crate accepts (at most 5), so this
        // cannot fail; it grows to any value a bucket here starts at.
        let mut h = Histogram::new(SIGNIFICANT_DIGITS).expect("constant digits are valid");
        for (low, _, count) in self.recorded() {
            let _ = h.record_n(low, count);
        }
        h
    }

    fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.hdr().value_at_quantile(q)
        }
    }

    fn percentiles(&self, scale: f64) -> Percentiles {
        if self.total == 0 {
            return Percentiles::default();
        }
        // One walk over the recorded buckets for the four quantiles and the
        // mean, with the arithmetic of [`Histogram`], in the same order:
        // `value_at_quantile` (the first bucket whose running count reaches
        // ceil(q * count), at least 1; its highest value), `mean` (each
        // bucket's middle value times its share, added up from the lowest
        // bucket), `min` (the lowest bucket's lowest value) and `max` (the
        // highest bucket's highest value), so the same numbers.
        const QUANTILES: [f64; 4] = [0.50, 0.90, 0.95, 0.99];
        let total = self.total;
        let targets = QUANTILES.map(|q| ((q * total as f64).ceil() as u64).max(1));
        let mut at = [0u64; QUANTILES.len()];
        let (mut next, mut seen, mut mean) = (0, 0u64, 0.0_f64);
        let (mut min, mut max) = (None, 0);
        for (low, width, count) in self.recorded() {
            let high = low + width - 1;
            min.get_or_insert(low);
            max = high;
            seen += count;
            while next < targets.len() && seen >= targets[next] {
                at[next] = high;
                next += 1;
            }
            mean += (low + width / 2) as f64 * count as f64 / total as f64;
        }
        Percentiles {
            min: min.unwrap_or(0) as f64 * scale,
            p50: at[0] as f64 * scale,
            p90: at[1] as f64 * scale,
            p95: at[2] as f64 * scale,
            p99: at[3] as f64 * scale,
            max: max as f64 * scale,
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

    /// Records one latency, rounded down to whole microseconds. Counted in
    /// `u64` (saturating, as the cap would clamp it anyway) rather than
    /// through `as_micros`'s `u128`: the bottleneck records two per packet.
    #[inline]
    pub fn record(&mut self, latency: Duration) {
        let micros = latency
            .as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(latency.subsec_micros()));
        self.0.record(micros);
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
        self.0.total
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.0.total == 0
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
        self.0.total
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.0.total == 0
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
        assert_eq!((a.hdr().len(), a.hdr().max()), (fixed.len(), fixed.max()));
        let small = Hist::new(MAX_LATENCY_US);
        assert!(
            small.counts.len() * 8 <= fixed.distinct_values(),
            "{} counters against {}",
            small.counts.len(),
            fixed.distinct_values()
        );
    }

    #[test]
    fn buckets_are_those_of_the_crates_histogram() {
        // Every power of two's edges and a spread in between, up to past
        // the largest size kept apart.
        let h = Histogram::<u64>::new_with_bounds(1, MAX_SIZE_BYTES * 4, 3).unwrap();
        let mut x: u64 = 7;
        let edges = (0..43).flat_map(|p| {
            let v = 1u64 << p;
            [v - 1, v, v + 1]
        });
        let spread = (0..50_000).map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 20) % 10u64.pow(1 + (i % 13) as u32)
        });
        for v in edges.chain(spread).chain([0]) {
            let (low, width) = bucket_span(bucket(v));
            assert_eq!(
                (low, low + width - 1),
                (h.lowest_equivalent(v), h.highest_equivalent(v)),
                "{v}"
            );
        }
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
            // The crate's histogram, fed every sample, beside ours.
            let mut h = Hist::new(MAX_LATENCY_US);
            let mut direct = Histogram::<u64>::new(SIGNIFICANT_DIGITS).unwrap();
            let n = 1 + draw() % 3000;
            let span = 1 + draw() % 10u64.pow(1 + (case % 7) as u32);
            // Zero is a value too, in every fourth case.
            let least = u64::from(case % 4 != 0);
            for _ in 0..n {
                let v = least + draw() % span;
                let times = if draw() % 4 == 0 { 2 } else { 1 };
                for _ in 0..times {
                    h.record(v);
                    direct.record(v).unwrap();
                }
            }
            let p = h.percentiles(1.0);
            let want = [0.50, 0.90, 0.95, 0.99].map(|q| direct.value_at_quantile(q) as f64);
            assert_eq!([p.p50, p.p90, p.p95, p.p99], want, "case {case}");
            assert_eq!(p.mean.to_bits(), direct.mean().to_bits(), "case {case}");
            assert_eq!(
                (p.min, p.max, p.count),
                (direct.min() as f64, direct.max() as f64, direct.len())
            );
            let q = [0.0, 0.3, 1.0];
            assert_eq!(
                q.map(|q| h.quantile(q)),
                q.map(|q| direct.value_at_quantile(q))
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
