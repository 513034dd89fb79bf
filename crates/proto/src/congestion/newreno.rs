//! NewReno as specified for QUIC (RFC 9002 §7), with CE marks as congestion.

use brisk_time::Instant;
use brisk_wire::Ecn;

use super::hystart::{HyStart, SlowStartPhase, slow_start_phase};
use super::{AckSample, CcConfig, CcMetrics, Controller, LossSample, Recovery};

/// RFC 9002 `kLossReductionFactor`: the window halves on congestion.
const LOSS_REDUCTION_NUM: u64 = 1;
const LOSS_REDUCTION_DEN: u64 = 2;

/// Slow start, congestion avoidance and one halving per round trip.
#[derive(Clone, Debug)]
pub(crate) struct NewReno {
    mds: u64,
    minimum_window: u64,
    cwnd: u64,
    /// `u64::MAX` until the first congestion event.
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the window last grew.
    ca_acked_bytes: u64,
    recovery: Recovery,
    /// HyStart++ for the first slow start; `None` when configured off.
    hystart: Option<HyStart>,
}

impl NewReno {
    pub(crate) fn new(config: &CcConfig) -> Self {
        Self {
            mds: config.mds(),
            minimum_window: config.minimum_window(),
            cwnd: config.initial_window(),
            ssthresh: u64::MAX,
            ca_acked_bytes: 0,
            recovery: Recovery::default(),
            hystart: config.hystart.then(HyStart::new),
        }
    }

    /// RFC 9002 §7.3.2 (`OnCongestionEvent`): a loss or CE on a packet sent
    /// after the current recovery period began halves the window (but not
    /// below the minimum) and starts a new period; anything older is part of
    /// the event already handled.
    fn on_congestion_event(&mut self, now: Instant, sent_at: Instant) {
        if self.recovery.covers(sent_at) {
            return;
        }
        self.recovery.enter(now);
        self.ssthresh = self.cwnd / LOSS_REDUCTION_DEN * LOSS_REDUCTION_NUM;
        self.cwnd = self.ssthresh.max(self.minimum_window);
        self.ca_acked_bytes = 0;
    }

    /// RFC 9002 §7.3.1 and §7.3.3: below ssthresh the window grows by the
    /// bytes acknowledged (doubling per round trip); above it by one datagram
    /// per window of bytes acknowledged. Bytes that carry the window past
    /// ssthresh count towards congestion avoidance. The first slow start
    /// grows and ends as HyStart++ says: by a quarter of the bytes in its
    /// conservative phase, and at its exit the window becomes ssthresh.
    fn grow(&mut self, ack: &AckSample) {
        let mut acked_bytes = ack.acked_bytes;
        if self.cwnd < self.ssthresh {
            let phase = slow_start_phase(self.hystart.as_mut(), self.ssthresh == u64::MAX, ack);
            if phase == SlowStartPhase::Exit {
                self.ssthresh = self.cwnd;
            }
            let divisor = phase.growth_divisor();
            // No divisor after HyStart++'s exit: all of it is avoidance.
            if let Some(wanted) = acked_bytes.checked_div(divisor) {
                let slow_start_bytes = wanted.min(self.ssthresh - self.cwnd);
                self.cwnd += slow_start_bytes;
                if slow_start_bytes == wanted {
                    return;
                }
                acked_bytes -= slow_start_bytes * divisor;
            }
        }
        self.ca_acked_bytes = self.ca_acked_bytes.saturating_add(acked_bytes);
        // Normally zero or one step; a stretch ACK of several windows takes
        // them all at the current window size.
        let steps = self.ca_acked_bytes / self.cwnd.max(1);
        self.ca_acked_bytes -= steps * self.cwnd.max(1);
        self.cwnd = self.cwnd.saturating_add(steps.saturating_mul(self.mds));
    }
}

impl Controller for NewReno {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, _bytes_in_flight: u64) {}

    fn on_ack(&mut self, ack: &AckSample) {
        // RFC 9002 §7.1: an increase in the CE count is a congestion signal,
        // dated by the send time of the largest acknowledged packet.
        if ack.ecn_delta.ce > 0 {
            self.on_congestion_event(ack.now, ack.largest_acked_sent_at);
        }
        // RFC 9002 §7.3.2 and §7.8: no growth for packets sent before the
        // recovery period started, nor while the application left the window
        // unused.
        if self.recovery.covers(ack.largest_acked_sent_at) || ack.app_limited {
            return;
        }
        self.grow(ack);
    }

    fn on_loss(&mut self, loss: &LossSample) {
        self.on_congestion_event(loss.now, loss.largest_lost_sent_at);
        // RFC 9002 §7.6.2: persistent congestion collapses the window to the
        // minimum and forgets the recovery period.
        if loss.persistent_congestion {
            self.cwnd = self.minimum_window;
            self.ca_acked_bytes = 0;
            self.recovery.reset();
        }
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ecn(&self) -> Ecn {
        Ecn::Ect0
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd_bytes: self.cwnd,
            ssthresh_bytes: (self.ssthresh != u64::MAX).then_some(self.ssthresh),
            extra: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::congestion::test_path::{MDS, PathSim, ack, ack_round, loss};

    fn reno() -> NewReno {
        NewReno::new(&CcConfig::default())
    }

    const RTT: Duration = Duration::from_millis(50);

    #[test]
    fn slow_start_doubles_each_round_trip() {
        let mut cc = reno();
        let mut t = Instant::from_millis(100);
        for expected_packets in [20, 40, 80, 160] {
            t = ack_round(&mut cc, t, RTT, |_| false);
            assert_eq!(cc.window(), expected_packets * MDS);
            assert!(cc.in_slow_start());
        }
    }

    #[test]
    fn one_loss_halves_and_starts_congestion_avoidance() {
        let mut cc = reno();
        let mut t = Instant::from_millis(100);
        for _ in 0..3 {
            t = ack_round(&mut cc, t, RTT, |_| false);
        }
        assert_eq!(cc.window(), 80 * MDS);
        cc.on_loss(&loss(t, t - RTT, false));
        assert_eq!(cc.window(), 40 * MDS);
        assert_eq!(cc.metrics().ssthresh_bytes, Some(40 * MDS));
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn one_reduction_per_round_trip() {
        let mut cc = reno();
        let t0 = Instant::from_secs_f64(1.0);
        cc.on_loss(&loss(t0, t0 - RTT, false));
        assert_eq!(cc.window(), 5 * MDS);
        // More losses and a CE mark on packets sent before t0: same event.
        cc.on_loss(&loss(
            t0 + Duration::from_millis(1),
            t0 - Duration::from_millis(1),
            false,
        ));
        cc.on_ack(&ack(t0 + Duration::from_millis(2), t0, MDS, 1));
        cc.on_loss(&loss(t0 + Duration::from_millis(3), t0, false));
        assert_eq!(cc.window(), 5 * MDS);
        // A loss of a packet sent after t0 is a new event.
        let t1 = t0 + RTT + Duration::from_millis(5);
        cc.on_loss(&loss(t1, t0 + Duration::from_millis(5), false));
        assert_eq!(cc.window(), 2 * MDS + MDS / 2);
    }

    #[test]
    fn no_growth_in_recovery_or_when_app_limited() {
        let mut cc = reno();
        let t0 = Instant::from_secs_f64(1.0);
        cc.on_loss(&loss(t0, t0 - RTT, false));
        let w = cc.window();
        // ACKs of packets sent before recovery started do not grow the window.
        for i in 0..20 {
            cc.on_ack(&ack(
                t0 + Duration::from_millis(i),
                t0 - Duration::from_millis(20 - i),
                MDS,
                0,
            ));
        }
        assert_eq!(cc.window(), w);
        let mut app_limited = ack(t0 + RTT * 2, t0 + RTT, 100 * MDS, 0);
        app_limited.app_limited = true;
        cc.on_ack(&app_limited);
        assert_eq!(cc.window(), w);
    }

    #[test]
    fn congestion_avoidance_adds_one_datagram_per_window() {
        let mut cc = reno();
        let t0 = Instant::from_secs_f64(1.0);
        cc.on_loss(&loss(t0, t0 - RTT, false));
        assert_eq!(cc.window(), 5 * MDS);
        let mut t = t0 + RTT + Duration::from_millis(1);
        for round in 0..10u64 {
            let w = cc.window();
            t = ack_round(&mut cc, t, RTT, |_| false);
            assert_eq!(cc.window(), w + MDS, "round {round}");
        }
        assert_eq!(cc.window(), 15 * MDS);
    }

    #[test]
    fn ce_is_a_congestion_event_like_loss() {
        let mut cc = reno();
        let mut t = Instant::from_millis(100);
        t = ack_round(&mut cc, t, RTT, |_| false);
        assert_eq!(cc.window(), 20 * MDS);
        // Every packet of the next round is CE-marked: one halving only.
        t = ack_round(&mut cc, t, RTT, |_| true);
        assert_eq!(cc.window(), 10 * MDS);
        assert!(!cc.in_slow_start());
        // The following round is marked again: one more halving.
        ack_round(&mut cc, t, RTT, |i| i == 3);
        assert_eq!(cc.window(), 5 * MDS);
    }

    #[test]
    fn persistent_congestion_collapses_to_minimum_window() {
        let mut cc = reno();
        let t = ack_round(&mut cc, Instant::from_millis(100), RTT, |_| false);
        cc.on_loss(&loss(t, t - RTT, true));
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.metrics().ssthresh_bytes, Some(10 * MDS));
        // The next loss is a new event even for an older packet.
        cc.on_loss(&loss(t + RTT, t - RTT, false));
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.metrics().ssthresh_bytes, Some(MDS));
    }

    /// On a drop-tail bottleneck the window saws between roughly half and all
    /// of BDP + buffer, the classic Reno shape.
    #[test]
    fn sawtooth_on_a_drop_tail_path() {
        let mut sim = PathSim::new(Box::new(reno()), 12e6, Duration::from_millis(20));
        sim.buffer_packets = Some(25);
        sim.run_for(Duration::from_secs(20));
        let (lo, hi) = sim.window_range_packets(Duration::from_secs(10));
        // BDP = 25 packets, buffer = 25 packets: peak near 50, trough near 25.
        assert!((45.0..=56.0).contains(&hi), "peak {hi}");
        assert!((20.0..=30.0).contains(&lo), "trough {lo}");
        assert!(sim.utilization(Duration::from_secs(10)) > 0.9);
    }

    /// HyStart++: after a 20 ms rise of the round's smallest RTT the window
    /// grows by a quarter of the acknowledged bytes, and within five rounds
    /// slow start ends with the window as ssthresh.
    #[test]
    fn hystart_slows_growth_on_an_rtt_rise_then_hands_over() {
        let mut cc = NewReno::new(&CcConfig {
            hystart: true,
            ..CcConfig::default()
        });
        let mut t = Instant::from_millis(100);
        for _ in 0..2 {
            t = ack_round(&mut cc, t, RTT, |_| false);
        }
        assert_eq!(cc.window(), 40 * MDS);
        let rise = RTT + Duration::from_millis(20);
        t = ack_round(&mut cc, t, rise, |_| false);
        let w = cc.window() / MDS;
        assert!((48..=66).contains(&w), "window {w} packets");
        let mut rounds = 0;
        while cc.in_slow_start() {
            t = ack_round(&mut cc, t, rise, |_| false);
            rounds += 1;
            assert!(rounds <= 5, "still in slow start");
        }
        let ssthresh = cc.metrics().ssthresh_bytes.unwrap();
        assert!(ssthresh <= cc.window() && cc.window() <= ssthresh + MDS);
    }
}
