//! How closely the real-time router followed its models.
//!
//! The models say when each packet should reach the far end (`due`); the
//! router writes it at some real time after. The difference is the error
//! of the added delay. The achieved rate is measured over packets the
//! model sent back to back (the queue was busy): their bytes over the real
//! time between their writes.

use brisk_netmodel::{LinkConfig, RateModel};
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use std::time::Duration;

/// A packet written later than this after its due time counts as one the
/// router could not keep up with.
pub const LATE_THRESHOLD: Duration = Duration::from_millis(1);

/// Per-direction delivery accuracy.
#[derive(Debug, Clone)]
pub struct DirectionFidelity {
    /// The constant rate to check against; `None` for scheduled or trace
    /// rates, or where jitter or reordering moves delivery times.
    pub configured_bps: Option<u64>,
    /// Real write time minus model delivery time, per packet.
    pub delay_error: LatencySummary,
    /// Packets written more than [`LATE_THRESHOLD`] after their due time.
    pub late_packets: u64,
    prev: Option<(Instant, Instant)>,
    busy_bytes: u64,
    busy_wall: Duration,
}

impl DirectionFidelity {
    pub fn new(config: &LinkConfig) -> DirectionFidelity {
        let steady = config.jitter.is_none() && config.reorder.is_none();
        let configured_bps = match config.rate {
            RateModel::Constant { bps } if steady && bps > 0 => Some(bps),
            _ => None,
        };
        DirectionFidelity {
            configured_bps,
            delay_error: LatencySummary::default(),
            late_packets: 0,
            prev: None,
            busy_bytes: 0,
            busy_wall: Duration::ZERO,
        }
    }

    /// A packet the model delivers at `due` was written at `written`.
    pub fn on_written(&mut self, due: Instant, written: Instant, len_bytes: usize) {
        let error = written.saturating_duration_since(due);
        self.delay_error.record(error);
        if error > LATE_THRESHOLD {
            self.late_packets += 1;
        }
        if let (Some(bps), Some((prev_due, prev_written))) = (self.configured_bps, self.prev) {
            let serialization_ns = len_bytes as u128 * 8 * 1_000_000_000 / u128::from(bps);
            let gap_ns = due.saturating_duration_since(prev_due).as_nanos();
            // Back to back in the model (within rounding): the link was busy.
            if gap_ns.abs_diff(serialization_ns) <= 1_000 {
                self.busy_bytes += len_bytes as u64;
                self.busy_wall += written.saturating_duration_since(prev_written);
            }
        }
        self.prev = Some((due, written));
    }

    /// Bits per second the router achieved while the model's link was busy.
    pub fn achieved_bps(&self) -> Option<f64> {
        (self.busy_wall > Duration::from_millis(10))
            .then(|| self.busy_bytes as f64 * 8.0 / self.busy_wall.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bps: u64) -> LinkConfig {
        LinkConfig {
            rate: RateModel::Constant { bps },
            ..LinkConfig::default()
        }
    }

    #[test]
    fn back_to_back_writes_measure_the_real_rate() {
        // 1500-byte packets at 12 Mbit/s are due every 1 ms; the router
        // writes each 1% late relative to the first: 1% slower.
        let mut f = DirectionFidelity::new(&config(12_000_000));
        for i in 0..100u64 {
            let due = Instant::from_millis(i);
            let written = Instant::from_micros(i * 1010);
            f.on_written(due, written, 1500);
        }
        let got = f.achieved_bps().unwrap();
        assert!((got / 12e6 - 1.0 / 1.01).abs() < 1e-6, "{got}");
        assert_eq!(f.late_packets, 0);
        assert!(f.delay_error.quantile(1.0) >= Duration::from_micros(980));
    }

    #[test]
    fn idle_gaps_do_not_count_and_late_packets_do() {
        let mut f = DirectionFidelity::new(&config(12_000_000));
        // Two packets 5 ms apart in the model: not back to back.
        f.on_written(Instant::ZERO, Instant::ZERO, 1500);
        f.on_written(Instant::from_millis(5), Instant::from_millis(7), 1500);
        assert_eq!(f.achieved_bps(), None);
        assert_eq!(f.late_packets, 1);
        let jittery = LinkConfig {
            jitter: Some(brisk_netmodel::link::Jitter::Uniform(
                Duration::from_millis(1),
            )),
            ..config(12_000_000)
        };
        assert_eq!(DirectionFidelity::new(&jittery).configured_bps, None);
    }
}
