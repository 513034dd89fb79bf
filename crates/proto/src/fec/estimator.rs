//! The loss rate and mean burst length the sender's repair count follows,
//! measured over roughly the last [`WINDOW_PACKETS`] packets, and the
//! repair count they call for.
//!
//! Losses are counted from both sources: packets loss detection declared
//! lost, and packets the receiver reported it rebuilt (which were lost on
//! the path all the same). The connection leaves out losses it declares
//! while the RTT shows a standing queue: a full queue's drops are
//! congestion, which repair would only add to. A run of consecutive lost
//! packet numbers is one burst, so a Gilbert-Elliott channel shows up as
//! a mean burst above one.

/// Outcomes kept at full weight: past this, old ones count half.
const WINDOW_PACKETS: f64 = 2000.0;

/// Repair symbols per block at most, whatever the loss rate.
const MAX_REPAIR: usize = 16;

#[derive(Debug, Clone, Default)]
pub(super) struct LossEstimator {
    delivered: f64,
    lost: f64,
    bursts: f64,
    /// The newest packet declared lost, to join runs into bursts.
    last_lost_pn: Option<u64>,
}

impl LossEstimator {
    /// `n` packets were acknowledged.
    pub(super) fn on_delivered(&mut self, n: u64) {
        self.delivered += n as f64;
        self.decay();
    }

    /// Packet `pn` was declared lost.
    pub(super) fn on_lost(&mut self, pn: u64) {
        if self.last_lost_pn != pn.checked_sub(1) {
            self.bursts += 1.0;
        }
        self.last_lost_pn = Some(pn);
        self.lost += 1.0;
        self.decay();
    }

    /// The receiver rebuilt `packets` more packets, lost in `bursts` runs.
    pub(super) fn on_rebuilt(&mut self, packets: u64, bursts: u64) {
        self.lost += packets as f64;
        self.bursts += bursts.clamp(packets.min(1), packets) as f64;
        self.decay();
    }

    fn decay(&mut self) {
        if self.delivered + self.lost > WINDOW_PACKETS {
            self.delivered /= 2.0;
            self.lost /= 2.0;
            self.bursts /= 2.0;
        }
    }

    /// The fraction of packets lost.
    pub(super) fn loss_rate(&self) -> f64 {
        let total = self.delivered + self.lost;
        if total > 0.0 { self.lost / total } else { 0.0 }
    }

    /// Packets measured, recent ones at full weight.
    pub(super) fn packets_seen(&self) -> f64 {
        self.delivered + self.lost
    }

    /// Packets per loss burst, at least 1.
    pub(super) fn mean_burst(&self) -> f64 {
        if self.bursts > 0.0 {
            (self.lost / self.bursts).max(1.0)
        } else {
            1.0
        }
    }
}

/// Repair symbols for a block of `k` source packets so that, with losses
/// at `rate` in bursts of `burst` packets, the block is left unrepairable
/// with a chance of at most `target`: bursts arrive at `rate / burst` per
/// packet and each takes `burst` repair symbols. Zero on a loss-free path.
pub(super) fn repair_count(k: usize, rate: f64, burst: f64, target: f64) -> usize {
    if k == 0 || rate <= 0.0 {
        return 0;
    }
    let burst = burst.max(1.0);
    let q = (rate / burst).min(1.0);
    let per_burst = burst.ceil() as usize;
    let mut bursts = 0;
    loop {
        let m = (bursts * per_burst).min(MAX_REPAIR);
        // Bursts that may hit the block and its repair: more than `bursts`
        // of them leave it unrepairable.
        if binomial_tail(k + m, q, bursts) <= target || m >= MAX_REPAIR {
            return m;
        }
        bursts += 1;
    }
}

/// P(X > c) for X ~ Binomial(n, p).
fn binomial_tail(n: usize, p: f64, c: usize) -> f64 {
    let mut term = (1.0 - p).powi(n as i32);
    let mut cdf = term;
    for i in 0..c.min(n) {
        term *= (n - i) as f64 / (i + 1) as f64 * p / (1.0 - p).max(f64::MIN_POSITIVE);
        cdf += term;
    }
    (1.0 - cdf).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_path_gets_no_repair_and_a_lossy_one_enough() {
        assert_eq!(repair_count(10, 0.0, 1.0, 0.01), 0);
        // 10 packets at 5%: two repairs leave 2% unrepairable, three 0.35%.
        assert_eq!(repair_count(10, 0.05, 1.0, 0.01), 3);
        assert_eq!(repair_count(10, 0.05, 1.0, 0.03), 2);
        // The same rate in bursts of three takes whole bursts.
        assert_eq!(repair_count(10, 0.05, 3.0, 0.01) % 3, 0);
        assert_eq!(repair_count(1000, 0.5, 1.0, 0.01), MAX_REPAIR);
    }

    #[test]
    fn the_estimate_follows_losses_and_joins_runs_into_bursts() {
        let mut e = LossEstimator::default();
        e.on_delivered(90);
        for pn in [10, 11, 12, 40, 41, 42, 70, 71, 72, 99] {
            e.on_lost(pn);
        }
        assert!((e.loss_rate() - 0.1).abs() < 1e-9);
        assert!((e.mean_burst() - 2.5).abs() < 1e-9);
        e.on_rebuilt(2, 2);
        assert!((e.mean_burst() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_binomial_tail_matches_a_direct_sum() {
        // P(X > 1), n = 3, p = 0.5: 1 - 1/8 - 3/8.
        assert!((binomial_tail(3, 0.5, 1) - 0.5).abs() < 1e-12);
        assert!((binomial_tail(5, 0.1, 5)).abs() < 1e-12);
    }
}
