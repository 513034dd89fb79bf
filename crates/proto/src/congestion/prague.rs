//! Prague, the L4S scalable congestion controller
//! (draft-briscoe-iccrg-prague-congestion-control, after DCTCP).
//!
//! Prague marks its packets ECT(1) so an L4S queue marks CE early and often
//! instead of dropping. It answers the *extent* of marking rather than the
//! mere presence of a mark: `alpha` tracks the fraction of marked packets,
//! and the window is cut by `alpha / 2` at most once per round. Many small
//! cuts keep the queue and the window sawtooth small. Loss is still answered
//! like Reno, by halving.
//!
//! RTT independence: rounds, cuts and the additive increase all run on a
//! "virtual RTT" of at least 25 ms, so a short-RTT flow neither grows faster
//! nor reacts more often than a 25 ms flow would.
//!
//! Classic fallback: if ECN validation falls back from ECT(1) to ECT(0),
//! marks come from classic AQMs that expect a Reno-like answer, so
//! [`Controller::set_path_ecn`] switches the CE response to a halving.
//!
//! Below the two-packet minimum window: the draft leaves a window under two
//! packets to pacing. Here the internal window may shrink to a quarter of a
//! datagram; [`Controller::window`] still reports at least the minimum (so
//! loss recovery keeps working) while [`Controller::pacing_window`] reports
//! the fractional value, which the pacer turns into a lower rate.

use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Ecn;

use super::{AckSample, CcConfig, CcMetrics, Controller, LossSample, Recovery};

/// EWMA gain `g` for `alpha` (the draft's default, 1/16 as in DCTCP).
pub const PRAGUE_ALPHA_GAIN: f64 = 1.0 / 16.0;
/// The reference RTT for RTT independence (the draft's default).
pub const PRAGUE_REFERENCE_RTT: Duration = Duration::from_millis(25);
/// The smallest internal window, in datagrams, left to pacing to honour.
const FRACTIONAL_FLOOR_PACKETS: f64 = 0.25;
/// Reno's reduction on loss.
const LOSS_BETA: f64 = 0.5;

/// Prague congestion control.
#[derive(Clone, Debug)]
pub struct Prague {
    mds: u64,
    minimum_window: u64,
    /// Bytes, fractional; may fall below `minimum_window` (see module doc).
    cwnd: f64,
    /// `u64::MAX` until the first CE mark or loss.
    ssthresh: u64,
    /// EWMA of the fraction of CE-marked packets per virtual round; starts
    /// at 1 so the first mark (normally ending slow start) halves the window.
    alpha: f64,
    /// `alpha` only moves once the path has shown it marks at all.
    saw_ce: bool,
    /// When the current round began; `None` before the first ACK.
    round_start: Option<Instant>,
    round_acked_packets: u64,
    round_marked_packets: u64,
    /// When the window was last cut for CE.
    last_ce_cut: Option<Instant>,
    /// One Reno halving per round trip on loss (and on CE in classic mode).
    loss_recovery: Recovery,
    /// The path did not keep ECT(1): treat CE like loss.
    classic_ecn: bool,
}

impl Prague {
    pub fn new(config: &CcConfig) -> Self {
        Self {
            mds: config.mds(),
            minimum_window: config.minimum_window(),
            cwnd: config.initial_window() as f64,
            ssthresh: u64::MAX,
            alpha: 1.0,
            saw_ce: false,
            round_start: None,
            round_acked_packets: 0,
            round_marked_packets: 0,
            last_ce_cut: None,
            loss_recovery: Recovery::default(),
            classic_ecn: false,
        }
    }

    /// The current `alpha`, the smoothed fraction of marked packets.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn floor(&self) -> f64 {
        FRACTIONAL_FLOOR_PACKETS * self.mds as f64
    }

    /// The draft's CE response: on the first mark of a round, cut the window
    /// by `alpha / 2` and leave slow start. At most once per virtual RTT:
    /// the marked packet must have been sent after the previous cut (one real
    /// round trip) and the reference RTT must have passed since it.
    fn on_ce(&mut self, ack: &AckSample) {
        if self.classic_ecn {
            return self.halve(ack.now, ack.largest_acked_sent_at);
        }
        let due = self.last_ce_cut.is_none_or(|cut| {
            ack.largest_acked_sent_at > cut && ack.now >= cut + PRAGUE_REFERENCE_RTT
        });
        if !due || self.loss_recovery.covers(ack.largest_acked_sent_at) {
            return;
        }
        self.last_ce_cut = Some(ack.now);
        self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(self.floor());
        self.ssthresh = self.cwnd as u64;
    }

    /// Growth on the unmarked part of an ACK: slow start adds the bytes;
    /// congestion avoidance adds one datagram per window, scaled by
    /// `(srtt / 25 ms)^2` when the RTT is shorter than the reference, so the
    /// *rate* (window / RTT) climbs as fast as a 25 ms flow's would. Below
    /// the minimum window the increase is taken relative to the minimum, so
    /// a fractional window climbs gently instead of jumping.
    fn grow(&mut self, ack: &AckSample, unmarked_bytes: f64) {
        let mut bytes = unmarked_bytes;
        if self.in_slow_start() {
            let slow_start_bytes = bytes.min(self.ssthresh as f64 - self.cwnd);
            self.cwnd += slow_start_bytes;
            bytes -= slow_start_bytes;
        }
        if bytes <= 0.0 {
            return;
        }
        let rtt_ratio = ack.smoothed_rtt.as_secs_f64() / PRAGUE_REFERENCE_RTT.as_secs_f64();
        let scale = rtt_ratio.min(1.0).powi(2);
        let base = self.cwnd.max(self.minimum_window as f64);
        self.cwnd += self.mds as f64 * bytes / base * scale;
    }

    /// The classic response (Reno, RFC 9002 §7.3.2): halve, once per round
    /// trip, for a loss or a classic CE mark.
    fn halve(&mut self, now: Instant, sent_at: Instant) {
        if self.loss_recovery.covers(sent_at) {
            return;
        }
        self.loss_recovery.enter(now);
        self.cwnd = (self.cwnd * LOSS_BETA).max(self.floor());
        self.ssthresh = self.cwnd as u64;
    }

    /// Rounds end when a packet sent after the round began is acknowledged
    /// and at least the reference RTT has passed; then
    /// `alpha = (1 - g) * alpha + g * F` with `F` the marked fraction.
    fn account_round(&mut self, ack: &AckSample, marked_packets: u64) {
        self.round_acked_packets = self.round_acked_packets.saturating_add(ack.acked_packets);
        self.round_marked_packets = self.round_marked_packets.saturating_add(marked_packets);
        let start = *self.round_start.get_or_insert(ack.now);
        if ack.largest_acked_sent_at <= start || ack.now < start + PRAGUE_REFERENCE_RTT {
            return;
        }
        if self.saw_ce && self.round_acked_packets > 0 {
            let fraction = self.round_marked_packets as f64 / self.round_acked_packets as f64;
            self.alpha += PRAGUE_ALPHA_GAIN * (fraction.min(1.0) - self.alpha);
        }
        self.round_start = Some(ack.now);
        self.round_acked_packets = 0;
        self.round_marked_packets = 0;
    }
}

impl Controller for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, _bytes_in_flight: u64) {}

    fn on_ack(&mut self, ack: &AckSample) {
        // The peer's CE count can cover packets acknowledged by earlier,
        // lost ACK frames; never count more marks than packets.
        let marked = ack.ecn_delta.ce.min(ack.acked_packets);
        if ack.ecn_delta.ce > 0 {
            self.saw_ce = true;
            self.on_ce(ack);
        }
        if !self.loss_recovery.covers(ack.largest_acked_sent_at)
            && !ack.app_limited
            && ack.acked_packets > 0
        {
            let unmarked = (ack.acked_packets - marked) as f64 / ack.acked_packets as f64;
            self.grow(ack, ack.acked_bytes as f64 * unmarked);
        }
        self.account_round(ack, marked);
    }

    /// Loss means a classic (or no) AQM: halve like Reno, once per round
    /// trip; persistent congestion collapses to the minimum window.
    fn on_loss(&mut self, loss: &LossSample) {
        self.halve(loss.now, loss.largest_lost_sent_at);
        if loss.persistent_congestion {
            self.cwnd = self.cwnd.min(self.minimum_window as f64);
            self.loss_recovery.reset();
        }
    }

    fn set_path_ecn(&mut self, ecn: Ecn) {
        self.classic_ecn = ecn != Ecn::Ect1;
    }

    fn window(&self) -> u64 {
        (self.cwnd as u64).max(self.minimum_window)
    }

    fn pacing_window(&self) -> u64 {
        (self.cwnd as u64).max(1)
    }

    fn ecn(&self) -> Ecn {
        Ecn::Ect1
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh as f64
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd_bytes: self.window(),
            ssthresh_bytes: (self.ssthresh != u64::MAX).then_some(self.ssthresh),
            extra: Some(("alpha", self.alpha)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::NewReno;
    use crate::congestion::test_path::{MDS, PathSim, ack, ack_round, loss};

    const RTT: Duration = Duration::from_millis(40);

    fn prague() -> Prague {
        Prague::new(&CcConfig::default())
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A Prague that left slow start on one CE at 40 segments (cut to 20).
    fn in_avoidance() -> (Prague, Instant) {
        let mut cc = prague();
        let mut t = Instant::from_millis(100);
        t = ack_round(&mut cc, t, RTT, |_| false);
        t = ack_round(&mut cc, t, RTT, |_| false);
        assert_eq!(cc.window(), 40 * MDS);
        cc.on_ack(&ack(t, t - RTT, MDS, 1));
        (cc, t + RTT)
    }

    #[test]
    fn sends_ect1_and_slow_starts_like_reno() {
        let mut cc = prague();
        assert_eq!(cc.ecn(), Ecn::Ect1);
        let mut t = Instant::from_millis(100);
        for expected in [20, 40, 80] {
            t = ack_round(&mut cc, t, RTT, |_| false);
            assert_eq!(cc.window(), expected * MDS);
            assert!(cc.in_slow_start());
        }
        // No mark seen yet: alpha has not moved from 1.
        assert_eq!(cc.alpha(), 1.0);
    }

    #[test]
    fn first_ce_ends_slow_start_with_a_halving() {
        let (cc, _) = in_avoidance();
        assert_eq!(cc.window(), 20 * MDS);
        assert!(!cc.in_slow_start());
        assert_eq!(cc.metrics().ssthresh_bytes, Some(20 * MDS));
    }

    /// 10% of packets marked every round: alpha converges to 0.1, as the EWMA
    /// `alpha_n = 0.1 + 0.9 (15/16)^n` predicts, and each round's cut is then
    /// about 5%.
    #[test]
    fn alpha_converges_to_the_marking_fraction() {
        let (mut cc, mut t) = in_avoidance();
        let mut rounds = 0;
        while rounds < 120 {
            t = ack_round(&mut cc, t, RTT, |i| i % 10 == 5);
            rounds += 1;
            if rounds == 16 {
                // (15/16)^16 = 0.356: alpha near 0.42 (rounds are not exactly
                // one window, so allow some slack).
                assert!(
                    (cc.alpha() - 0.42).abs() < 0.05,
                    "alpha after 16 rounds {}",
                    cc.alpha()
                );
            }
        }
        assert!((cc.alpha() - 0.1).abs() < 0.01, "alpha {}", cc.alpha());
        // The next cut: ratio 1 - alpha / 2, about 0.95.
        let alpha = cc.alpha();
        let before = cc.cwnd;
        // Sent after the previous round's cut, more than 25 ms after it.
        cc.on_ack(&ack(t + ms(20), t - ms(20), MDS, 1));
        let ratio = cc.cwnd / before;
        assert!((ratio - (1.0 - alpha / 2.0)).abs() < 1e-12);
        assert!((0.94..=0.96).contains(&ratio), "cut ratio {ratio}");
        assert!(matches!(cc.metrics().extra, Some(("alpha", a)) if a == alpha));
    }

    #[test]
    fn at_most_one_cut_per_virtual_rtt() {
        // Real RTT 5 ms, every ACK marked for 100 ms: cuts at 0, 25, 50, 75 ms
        // (the 25 ms reference), not every 5 ms.
        let count_cuts = |rtt: Duration| {
            let (mut cc, t0) = in_avoidance();
            let mut cuts = 0;
            for i in 0..100u64 {
                let now = t0 + ms(i);
                let before = cc.cwnd;
                cc.on_ack(&ack(now, now - rtt, MDS, 1));
                cuts += u32::from(cc.cwnd < before);
            }
            cuts
        };
        assert_eq!(count_cuts(ms(5)), 4);
        // Real RTT 40 ms: once per real round trip, at 1, 42 and 83 ms (the
        // marked packet must have been sent after the previous cut).
        assert_eq!(count_cuts(ms(40)), 3);
    }

    /// RTT independence: in congestion avoidance a 12.5 ms flow adds a
    /// quarter segment per RTT (`(12.5/25)^2`), so its rate climbs as fast as
    /// a 25 ms flow's that adds a whole segment per RTT; a 100 ms flow is
    /// not scaled up.
    #[test]
    fn additive_increase_is_rtt_independent() {
        let rate_gain_per_second = |rtt: Duration| {
            let (mut cc, mut t) = in_avoidance();
            let start = cc.cwnd;
            let rounds = (1.0 / rtt.as_secs_f64()).round() as u32;
            for _ in 0..rounds {
                t = ack_round(&mut cc, t, rtt, |_| false);
            }
            (cc.cwnd - start) / MDS as f64 / rtt.as_secs_f64()
        };
        let at_25 = rate_gain_per_second(ms(25));
        let at_12 = rate_gain_per_second(Duration::from_micros(12_500));
        // 40 rounds of +1 segment at 25 ms: 1600 segments/s per second (a
        // little less: each ACK's step uses the window grown so far).
        assert!(
            (1500.0..=1600.0).contains(&at_25),
            "25 ms: {at_25} segments/s per s"
        );
        assert!(
            (at_12 / at_25 - 1.0).abs() < 0.05,
            "12.5 ms {at_12} vs 25 ms {at_25}"
        );
        let at_100 = rate_gain_per_second(ms(100));
        // 10 rounds of +1 segment at 100 ms: 100 segments/s per second.
        assert!((94.0..=100.0).contains(&at_100), "100 ms: {at_100}");
    }

    #[test]
    fn loss_falls_back_to_reno_halving() {
        let (mut cc, t) = in_avoidance();
        let before = cc.cwnd;
        cc.on_loss(&loss(t, t - RTT, false));
        assert_eq!(cc.cwnd, before * 0.5);
        // Same round trip: no second halving, and no CE cut either.
        cc.on_loss(&loss(t + ms(1), t - ms(1), false));
        cc.on_ack(&ack(t + ms(2), t, MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Persistent congestion: the minimum window.
        cc.on_loss(&loss(t + ms(500), t + ms(100), true));
        assert_eq!(cc.window(), 2 * MDS);
    }

    #[test]
    fn classic_ecn_fallback_answers_ce_like_loss() {
        let (mut cc, t) = in_avoidance();
        cc.set_path_ecn(Ecn::Ect0);
        let before = cc.cwnd;
        cc.on_ack(&ack(t, t - RTT, MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Once per round trip, like Reno.
        cc.on_ack(&ack(t + ms(30), t - ms(5), MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Back on an L4S path: the alpha-scaled cut again.
        cc.set_path_ecn(Ecn::Ect1);
        let before = cc.cwnd;
        cc.on_ack(&ack(t + RTT * 2, t + RTT, MDS, 1));
        assert!(cc.cwnd > before * 0.5 && cc.cwnd < before);
    }

    #[test]
    fn fractional_window_is_left_to_pacing() {
        let (mut cc, t0) = in_avoidance();
        // Marks on every packet for 5 s at a 5 ms RTT: cut every 25 ms.
        for i in 0..5_000u64 {
            let now = t0 + ms(i);
            cc.on_ack(&ack(now, now - ms(5), MDS, 1));
        }
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.pacing_window(), MDS / 4);
        // An unmarked ACK grows it by half a datagram (one datagram per
        // minimum window acknowledged), not by the 4 datagrams Reno's
        // `mds * acked / cwnd` would give at a quarter-datagram window.
        let now = t0 + ms(5_100);
        cc.on_ack(&ack(now, now - ms(25), MDS, 0));
        assert_eq!(cc.pacing_window(), MDS / 4 + MDS / 2);
        assert_eq!(cc.window(), 2 * MDS);
    }

    /// An L4S step marker at 1 ms of queue on a 12 Mbit/s, 20 ms path
    /// (BDP 25 segments): Prague keeps the link full with a sawtooth of a few
    /// segments and a sub-2 ms queue; Reno under the same marks halves and
    /// swings by about half its window.
    #[test]
    fn small_sawtooth_under_step_marking() {
        let run = |cc: Box<dyn Controller>| {
            let mut sim = PathSim::new(cc, 12e6, ms(20));
            sim.mark_threshold = Some(ms(1));
            sim.run_for(Duration::from_secs(30));
            let last = Duration::from_secs(20);
            let (lo, hi) = sim.window_range_packets(last);
            (
                hi - lo,
                sim.utilization(last),
                sim.max_queue_delay(last),
                sim.lost_packets,
            )
        };
        let (swing, utilization, queue, lost) = run(Box::new(prague()));
        assert!(swing <= 4.0, "prague sawtooth {swing} segments");
        assert!(utilization > 0.95, "prague utilization {utilization}");
        assert!(queue < ms(2), "prague queue {queue:?}");
        assert_eq!(lost, 0);
        let (reno_swing, ..) = run(Box::new(NewReno::new(&CcConfig::default())));
        assert!(reno_swing >= 10.0, "reno sawtooth {reno_swing} segments");
        assert!(swing * 3.0 < reno_swing);
    }

    /// Without ECN marks, on a drop-tail queue, Prague behaves like Reno:
    /// the window halves at each overflow.
    #[test]
    fn reno_like_sawtooth_on_a_drop_tail_path() {
        let mut sim = PathSim::new(Box::new(prague()), 12e6, ms(20));
        sim.buffer_packets = Some(25);
        sim.run_for(Duration::from_secs(30));
        let (lo, hi) = sim.window_range_packets(Duration::from_secs(20));
        assert!(sim.lost_packets > 0);
        assert!((lo / hi - 0.5).abs() < 0.1, "trough {lo} / peak {hi}");
    }
}
