//! The share of bytes a path loses at random, which BBR adds back to its
//! delivery-rate estimate.
//!
//! BBR's bandwidth estimate counts bytes acknowledged per second. A link
//! that loses packets after its transmitter (a radio hop, a lossy wire)
//! spent its capacity on the lost packets too, so it carries
//! `delivered / (1 - loss)`; pacing at the delivery rate alone leaves the
//! lost share of it idle (at 5% loss, 5% of the link). The estimate here
//! counts bytes acknowledged and bytes declared lost while the RTT showed
//! no queue; a loss with a queue is overflow, which BBR answers by
//! conserving packets and which must never make it push harder. Old counts
//! halve once [`WINDOW_PACKETS`] are counted, so the share follows a
//! changing path within a few thousand packets.
//!
//! A policer that drops without queueing looks like random loss; the share
//! is capped at [`MAX_SHARE`] so that BBR never paces more than 1/(1 -
//! 0.1) = 1.11 times the rate the path delivered, less than ProbeBw's own
//! 1.25 probe.

/// Packets counted at full weight; past this, old counts halve.
const WINDOW_PACKETS: u64 = 2000;
/// Below this many packets counted the share is taken as zero: a few
/// early losses say little.
const MIN_PACKETS: u64 = 200;
/// The largest share made up for.
pub(super) const MAX_SHARE: f64 = 0.1;

#[derive(Clone, Debug)]
pub(super) struct RandomLoss {
    /// Bytes of one full datagram, the unit of the window.
    mds: f64,
    delivered_bytes: f64,
    lost_bytes: f64,
}

impl RandomLoss {
    pub(super) fn new(mds: u64) -> Self {
        RandomLoss {
            mds: mds.max(1) as f64,
            delivered_bytes: 0.0,
            lost_bytes: 0.0,
        }
    }

    /// `bytes` were acknowledged.
    pub(super) fn on_delivered(&mut self, bytes: u64) {
        self.delivered_bytes += bytes as f64;
        self.decay();
    }

    /// `bytes` were declared lost while the RTT showed no queue.
    pub(super) fn on_random_loss(&mut self, bytes: u64) {
        self.lost_bytes += bytes as f64;
        self.decay();
    }

    fn decay(&mut self) {
        if self.delivered_bytes + self.lost_bytes > WINDOW_PACKETS as f64 * self.mds {
            self.delivered_bytes /= 2.0;
            self.lost_bytes /= 2.0;
        }
    }

    /// The share of bytes lost at random, zero until [`MIN_PACKETS`] were
    /// counted, at most [`MAX_SHARE`].
    pub(super) fn share(&self) -> f64 {
        let total = self.delivered_bytes + self.lost_bytes;
        if total < MIN_PACKETS as f64 * self.mds {
            return 0.0;
        }
        (self.lost_bytes / total).min(MAX_SHARE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDS: u64 = 1200;

    /// `n` packets, every `every`th of them lost.
    fn feed(r: &mut RandomLoss, n: u64, every: u64) {
        for i in 0..n {
            if i % every == every - 1 {
                r.on_random_loss(MDS);
            } else {
                r.on_delivered(MDS);
            }
        }
    }

    #[test]
    fn measures_the_share_once_there_is_evidence() {
        let mut r = RandomLoss::new(MDS);
        feed(&mut r, MIN_PACKETS - 1, 20);
        assert_eq!(r.share(), 0.0);
        feed(&mut r, 10_000, 20);
        assert!((r.share() - 0.05).abs() < 0.002, "{}", r.share());
    }

    #[test]
    fn follows_a_path_that_becomes_clean_and_caps_heavy_loss() {
        let mut r = RandomLoss::new(MDS);
        feed(&mut r, 10_000, 2);
        assert_eq!(r.share(), MAX_SHARE);
        // About four windows of clean packets: the 50% is down to a few
        // percent of its weight.
        feed(&mut r, 4 * WINDOW_PACKETS, u64::MAX);
        assert!(r.share() < 0.01, "{}", r.share());
    }

    #[test]
    fn zero_sized_datagrams_and_huge_counts_do_not_panic() {
        let mut r = RandomLoss::new(0);
        r.on_delivered(u64::MAX);
        r.on_random_loss(u64::MAX);
        assert!(r.share().is_finite());
    }
}
