//! The draft's aggregation as pure functions: the trimmed mean, the moving
//! average and the stability test, and the RPM formula. No clock, no network:
//! every number a run prints is computed here from plain samples.

/// Mean of the samples after dropping those above the `percentile`-th
/// percentile (the draft uses 95: the slowest 5% are set aside, so a few
/// stragglers cannot dominate). `None` when there are no samples.
pub fn trimmed_mean(samples: &[f64], percentile: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted: Vec<f64> = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let fraction = (percentile / 100.0).clamp(0.0, 1.0);
    let keep = ((sorted.len() as f64) * fraction).ceil() as usize;
    let kept = &sorted[..keep.clamp(1, sorted.len())];
    Some(kept.iter().sum::<f64>() / kept.len() as f64)
}

/// Decides when a per-interval series has settled: the draft keeps a moving
/// average over the last MAD intervals and calls the series stable once the
/// last MAD moving averages have a standard deviation within SDT (a fraction)
/// of their mean.
#[derive(Debug, Clone)]
pub struct Stability {
    mad: usize,
    sdt: f64,
    values: Vec<f64>,
    averages: Vec<f64>,
}

impl Stability {
    /// `mad`: intervals in each moving average (and averages compared);
    /// `sdt`: the tolerated standard deviation as a fraction of the mean.
    pub fn new(mad: usize, sdt: f64) -> Self {
        Self {
            mad: mad.max(1),
            sdt,
            values: Vec::new(),
            averages: Vec::new(),
        }
    }

    /// Adds one interval's value and returns whether the series is stable now.
    pub fn push(&mut self, value: f64) -> bool {
        self.values.push(value);
        let window = &self.values[self.values.len().saturating_sub(self.mad)..];
        self.averages
            .push(window.iter().sum::<f64>() / window.len() as f64);
        self.is_stable()
    }

    /// The latest moving average, if any interval was pushed.
    pub fn moving_average(&self) -> Option<f64> {
        self.averages.last().copied()
    }

    /// Stable once MAD full moving averages exist and their standard
    /// deviation is at most SDT times their mean.
    pub fn is_stable(&self) -> bool {
        // A full moving average needs MAD values; MAD of them need 2*MAD-1.
        if self.values.len() < 2 * self.mad - 1 {
            return false;
        }
        let last = &self.averages[self.averages.len() - self.mad..];
        let mean = last.iter().sum::<f64>() / last.len() as f64;
        if mean <= 0.0 {
            return false;
        }
        let variance = last.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / last.len() as f64;
        variance.sqrt() <= self.sdt * mean
    }
}

/// The four trimmed means the RPM is made of, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Components {
    /// TCP handshake on new (foreign) connections.
    pub tcp_foreign_ms: f64,
    /// TLS handshake on new connections.
    pub tls_foreign_ms: f64,
    /// HTTP/2 request and response on new connections.
    pub http_foreign_ms: f64,
    /// HTTP/2 request and response on the loaded connections (self probes).
    pub http_self_ms: f64,
}

impl Components {
    /// Trims each kind of sample at `percentile` and keeps the means; `None`
    /// when any kind has no sample.
    pub fn from_samples(samples: &ProbeSamples, percentile: f64) -> Option<Self> {
        Some(Self {
            tcp_foreign_ms: trimmed_mean(&samples.tcp_foreign_ms, percentile)?,
            tls_foreign_ms: trimmed_mean(&samples.tls_foreign_ms, percentile)?,
            http_foreign_ms: trimmed_mean(&samples.http_foreign_ms, percentile)?,
            http_self_ms: trimmed_mean(&samples.http_self_ms, percentile)?,
        })
    }

    /// Round trips per minute: 60,000 ms over the average of the foreign
    /// probes' mean round trip (the three handshakes averaged) and the self
    /// probes' round trip, each weighing one half.
    pub fn rpm(&self) -> f64 {
        let foreign = (self.tcp_foreign_ms + self.tls_foreign_ms + self.http_foreign_ms) / 3.0;
        let delay = foreign / 2.0 + self.http_self_ms / 2.0;
        if delay > 0.0 {
            60_000.0 / delay
        } else {
            f64::INFINITY
        }
    }
}

/// Probe durations in milliseconds, by kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeSamples {
    /// TCP handshake times on new connections.
    pub tcp_foreign_ms: Vec<f64>,
    /// TLS handshake times on new connections.
    pub tls_foreign_ms: Vec<f64>,
    /// HTTP/2 request-response times on new connections.
    pub http_foreign_ms: Vec<f64>,
    /// HTTP/2 request-response times on the loaded connections.
    pub http_self_ms: Vec<f64>,
}

impl ProbeSamples {
    /// Appends the samples of `other`.
    pub fn extend(&mut self, other: &ProbeSamples) {
        self.tcp_foreign_ms.extend_from_slice(&other.tcp_foreign_ms);
        self.tls_foreign_ms.extend_from_slice(&other.tls_foreign_ms);
        self.http_foreign_ms
            .extend_from_slice(&other.http_foreign_ms);
        self.http_self_ms.extend_from_slice(&other.http_self_ms);
    }

    /// Foreign probes counted once each (one TCP sample per probe).
    pub fn foreign_count(&self) -> usize {
        self.http_foreign_ms.len()
    }

    /// Self probes counted.
    pub fn self_count(&self) -> usize {
        self.http_self_ms.len()
    }
}

/// Apple's networkQuality scale, the frame the draft's figures are read in.
pub fn rating(rpm: f64) -> &'static str {
    if rpm < 300.0 {
        "Low"
    } else if rpm < 1000.0 {
        "Medium"
    } else {
        "High"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_mean_drops_the_slowest_five_percent() {
        // 19 samples of 10 ms and one of 1000 ms: the straggler is trimmed.
        let mut s = vec![10.0; 19];
        s.push(1000.0);
        assert_eq!(trimmed_mean(&s, 95.0), Some(10.0));
        // Untrimmed it would pull the mean to 59.5 ms.
        assert_eq!(trimmed_mean(&s, 100.0), Some(59.5));
    }

    #[test]
    fn trimmed_mean_keeps_small_sets_whole() {
        // Fewer than 20 samples: 95% rounds up to all of them.
        assert_eq!(trimmed_mean(&[1.0, 2.0, 6.0], 95.0), Some(3.0));
        assert_eq!(trimmed_mean(&[7.0], 95.0), Some(7.0));
        assert_eq!(trimmed_mean(&[], 95.0), None);
    }

    #[test]
    fn trimmed_mean_ignores_order() {
        let a = [5.0, 1.0, 3.0, 100.0, 2.0];
        let b = [100.0, 2.0, 1.0, 5.0, 3.0];
        assert_eq!(trimmed_mean(&a, 80.0), trimmed_mean(&b, 80.0));
        assert_eq!(trimmed_mean(&a, 80.0), Some(2.75));
    }

    #[test]
    fn constant_series_is_stable_after_seven_intervals_with_mad_four() {
        let mut s = Stability::new(4, 0.05);
        for i in 0..6 {
            assert!(!s.push(100.0), "stable too early at interval {i}");
        }
        assert!(s.push(100.0));
        assert_eq!(s.moving_average(), Some(100.0));
    }

    #[test]
    fn growing_series_is_not_stable() {
        // Goodput still climbing by 20% an interval: more connections needed.
        let mut s = Stability::new(4, 0.05);
        let mut v = 10.0;
        for _ in 0..12 {
            assert!(!s.push(v));
            v *= 1.2;
        }
    }

    #[test]
    fn series_settles_once_the_ramp_leaves_the_window() {
        let mut s = Stability::new(4, 0.05);
        for v in [10.0, 40.0, 80.0] {
            assert!(!s.push(v));
        }
        let mut stable_at = None;
        for i in 0..10 {
            if s.push(100.0) && stable_at.is_none() {
                stable_at = Some(i);
            }
        }
        // The ramp has to leave every one of the last four moving averages.
        let at = stable_at.expect("never stable");
        assert!((3..=6).contains(&at), "stable at {at}");
    }

    #[test]
    fn small_jitter_within_tolerance_is_stable() {
        let mut s = Stability::new(4, 0.05);
        let mut last = false;
        for v in [100.0, 104.0, 97.0, 102.0, 99.0, 103.0, 98.0] {
            last = s.push(v);
        }
        assert!(last);
    }

    #[test]
    fn rpm_weighs_foreign_and_self_halves() {
        // Foreign handshakes 10, 20, 30 ms (mean 20), self probes 40 ms:
        // 0.5 * 20 + 0.5 * 40 = 30 ms, 60,000 / 30 = 2,000 RPM.
        let c = Components {
            tcp_foreign_ms: 10.0,
            tls_foreign_ms: 20.0,
            http_foreign_ms: 30.0,
            http_self_ms: 40.0,
        };
        assert!((c.rpm() - 2000.0).abs() < 1e-9);
    }

    #[test]
    fn components_need_every_kind_of_probe() {
        let mut p = ProbeSamples {
            tcp_foreign_ms: vec![1.0],
            tls_foreign_ms: vec![2.0],
            http_foreign_ms: vec![3.0],
            http_self_ms: vec![],
        };
        assert_eq!(Components::from_samples(&p, 95.0), None);
        p.http_self_ms.push(4.0);
        let c = Components::from_samples(&p, 95.0).expect("all kinds present");
        assert_eq!(c.http_self_ms, 4.0);
    }

    #[test]
    fn scale_follows_networkquality() {
        assert_eq!(rating(299.0), "Low");
        assert_eq!(rating(300.0), "Medium");
        assert_eq!(rating(999.0), "Medium");
        assert_eq!(rating(1000.0), "High");
    }
}
