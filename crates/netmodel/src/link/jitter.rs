//! Delay variation: each packet's propagation delay is the link delay plus
//! a random offset, clipped so the total is never negative.
//!
//! By default packets keep their order (`reorder_on_jitter = false`): a
//! packet never arrives before the one sent ahead of it, as on a real path
//! whose delay varies because queues and radio schedulers hold packets in
//! order. Its arrival is then `max(own draw, previous arrival)`, which
//! raises the mean delay when packets are closer together than the jitter.

use crate::Rng;
use rand::Rng as _;
use std::time::Duration;

/// The distribution of the delay offset.
///
/// In a scenario: `jitter = "2ms"` (uniform, like netem's `delay 10ms 2ms`;
/// also `{ uniform = "2ms" }`) or `jitter = { normal = "2ms" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Offset uniform in `[-j, +j]`: mean 0, standard deviation `j / sqrt 3`.
    Uniform(Duration),
    /// Offset normal with mean 0 and this standard deviation.
    Normal(Duration),
}

impl Jitter {
    /// The one-way delay for a packet: `delay` plus an offset, at least 0.
    pub(crate) fn apply(&self, delay: Duration, rng: &mut Rng) -> Duration {
        let offset_ns = match self {
            Jitter::Uniform(j) => {
                let j = j.as_nanos() as f64;
                rng.random_range(-1.0..=1.0) * j
            }
            Jitter::Normal(sigma) => standard_normal(rng) * sigma.as_nanos() as f64,
        };
        let total = delay.as_nanos() as f64 + offset_ns;
        Duration::from_nanos(total.max(0.0).round() as u64)
    }
}

/// A standard normal draw (Box-Muller); `1 - u` keeps the log finite.
fn standard_normal(rng: &mut Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(j: Jitter, delay: Duration) -> (f64, f64) {
        let mut rng = crate::rng(3, 0);
        let xs: Vec<f64> = (0..50_000)
            .map(|_| j.apply(delay, &mut rng).as_secs_f64() * 1e3)
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn uniform_and_normal_moments() {
        let d = Duration::from_millis(20);
        let (m, s) = moments(Jitter::Uniform(Duration::from_millis(6)), d);
        assert!((m - 20.0).abs() < 0.05, "{m}");
        assert!((s - 6.0 / 3f64.sqrt()).abs() < 0.05, "{s}");
        let (m, s) = moments(Jitter::Normal(Duration::from_millis(4)), d);
        assert!((m - 20.0).abs() < 0.08, "{m}");
        assert!((s - 4.0).abs() < 0.08, "{s}");
    }

    #[test]
    fn never_negative() {
        let mut rng = crate::rng(4, 0);
        let j = Jitter::Normal(Duration::from_millis(10));
        let zero = (0..10_000)
            .filter(|_| j.apply(Duration::ZERO, &mut rng).is_zero())
            .count();
        // Half the draws fall below zero and are clipped to it.
        assert!((4_500..5_500).contains(&zero), "{zero}");
    }
}
