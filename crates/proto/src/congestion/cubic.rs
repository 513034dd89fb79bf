//! CUBIC (RFC 9438), windows in bytes, CE marks treated like loss.

use brisk_time::Instant;
use brisk_wire::Ecn;

use super::hystart::{HyStart, SlowStartPhase, slow_start_phase};
use super::{AckSample, CcConfig, CcMetrics, Controller, LossSample, Recovery};

/// RFC 9438 §4.1 `C`: how aggressively the window probes, in segments/s³.
pub(super) const CUBIC_C: f64 = 0.4;
/// RFC 9438 §4.1 `β_cubic`: the window keeps 70% on congestion.
pub(super) const CUBIC_BETA: f64 = 0.7;
/// RFC 9438 §4.3 `α_cubic = 3(1 - β)/(1 + β)`: the Reno-friendly increase
/// per RTT that gives the same average rate as Reno for the same loss rate.
const CUBIC_ALPHA: f64 = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);

/// The cubic window function of RFC 9438 §4.2, in bytes:
/// `W_cubic(t) = C * (t - K)^3 + W_max`, with `t` and `K` in seconds and
/// `C` scaled from segments to bytes by `mds`.
pub(super) fn w_cubic(t_secs: f64, k_secs: f64, w_max_bytes: f64, mds: f64) -> f64 {
    CUBIC_C * (t_secs - k_secs).powi(3) * mds + w_max_bytes
}

/// RFC 9438 §4.2 `K = cbrt((W_max - cwnd_epoch) / C)`: the time the cubic
/// function takes to climb from the window at the start of the epoch back
/// to `W_max` (zero when the window already exceeds it).
pub(super) fn cubic_k(w_max_bytes: f64, cwnd_epoch_bytes: f64, mds: f64) -> f64 {
    ((w_max_bytes - cwnd_epoch_bytes).max(0.0) / mds / CUBIC_C).cbrt()
}

/// CUBIC congestion control.
#[derive(Clone, Debug)]
pub(crate) struct Cubic {
    mds: u64,
    minimum_window: u64,
    /// Bytes, fractional so per-ACK increments below one byte add up.
    cwnd: f64,
    /// `cwnd` in whole bytes, at least the minimum: what `window()` says,
    /// converted once per ACK or loss instead of on every question (the
    /// sender asks several times per packet).
    window_bytes: u64,
    /// `u64::MAX` until the first congestion event.
    ssthresh: u64,
    /// Window just before the last reduction, after fast convergence; zero
    /// when unknown (start, persistent congestion).
    w_max: f64,
    /// Window just before the last reduction, without fast convergence:
    /// the Reno-friendly estimate switches to Reno's slope once past it.
    cwnd_prior: f64,
    /// Start of the current congestion avoidance epoch.
    epoch_start: Option<Instant>,
    k_secs: f64,
    /// RFC 9438 §4.3 `W_est`: the window Reno would have by now.
    w_est: f64,
    recovery: Recovery,
    last_sent_at: Option<Instant>,
    /// HyStart++ for the first slow start; `None` when configured off.
    hystart: Option<HyStart>,
}

impl Cubic {
    pub(crate) fn new(config: &CcConfig) -> Self {
        Self {
            mds: config.mds(),
            minimum_window: config.minimum_window(),
            cwnd: config.initial_window() as f64,
            window_bytes: config.initial_window().max(config.minimum_window()),
            ssthresh: u64::MAX,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch_start: None,
            k_secs: 0.0,
            w_est: 0.0,
            recovery: Recovery::default(),
            last_sent_at: None,
            hystart: config.hystart.then(HyStart::new),
        }
    }

    fn mds_f(&self) -> f64 {
        self.mds as f64
    }

    /// RFC 9438 §4.6-4.7 on a loss or CE mark outside the current recovery
    /// period: remember where the window was (`W_max`, lowered to
    /// `cwnd * (1 + β) / 2` by fast convergence when the window did not even
    /// reach the previous `W_max`, so a newcomer gets room), then cut the
    /// window to `β * cwnd` (at least the minimum) and end the epoch.
    fn on_congestion_event(&mut self, now: Instant, sent_at: Instant) {
        if self.recovery.covers(sent_at) {
            return;
        }
        self.recovery.enter(now);
        self.epoch_start = None;
        self.w_max = if self.cwnd < self.w_max {
            self.cwnd * (1.0 + CUBIC_BETA) / 2.0
        } else {
            self.cwnd
        };
        self.cwnd_prior = self.cwnd;
        let reduced = (self.cwnd * CUBIC_BETA).max(self.minimum_window as f64);
        self.ssthresh = reduced as u64;
        self.cwnd = reduced;
    }

    /// RFC 9438 §4.2-4.5: congestion avoidance for one ACK.
    fn congestion_avoidance(&mut self, ack: &AckSample) {
        let mds = self.mds_f();
        let epoch_start = match self.epoch_start {
            Some(start) => start,
            None => {
                // A new epoch. Without a remembered W_max (start-up, after
                // persistent congestion) the curve starts flat at the current
                // window: K = 0, W_max = cwnd (§4.8).
                self.epoch_start = Some(ack.now);
                if self.w_max < self.cwnd {
                    self.w_max = self.cwnd;
                }
                self.k_secs = cubic_k(self.w_max, self.cwnd, mds);
                self.w_est = self.cwnd;
                ack.now
            }
        };
        let acked = ack.acked_bytes as f64;
        let t = (ack.now - epoch_start).as_secs_f64();

        // §4.3: W_est grows like Reno with α_cubic per RTT, and with Reno's
        // own slope of one segment once it passes the pre-reduction window.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            CUBIC_ALPHA
        };
        self.w_est += alpha * acked * mds / self.cwnd;

        let w_now = w_cubic(t, self.k_secs, self.w_max, mds);
        if w_now < self.w_est {
            // Reno-friendly region: be at least as fast as Reno would be.
            self.cwnd = self.cwnd.max(self.w_est);
            return;
        }
        // §4.4-4.5: aim at where the curve will be one RTT from now, but
        // never shrink on an ACK and never grow more than 50% per RTT.
        let rtt = ack.smoothed_rtt.as_secs_f64();
        let target =
            w_cubic(t + rtt, self.k_secs, self.w_max, mds).clamp(self.cwnd, 1.5 * self.cwnd);
        self.cwnd += (target - self.cwnd) * acked / self.cwnd;
    }

    /// RFC 9438 on one ACK: a CE mark is a congestion event; outside
    /// recovery the window grows by slow start, then along the curve.
    fn grow_or_cut_on_ack(&mut self, ack: &AckSample) {
        if ack.ecn_delta.ce > 0 {
            self.on_congestion_event(ack.now, ack.largest_acked_sent_at);
        }
        if self.recovery.covers(ack.largest_acked_sent_at) || ack.app_limited {
            return;
        }
        let mut acked = ack.acked_bytes;
        if self.in_slow_start() {
            // §4.10: slow start below ssthresh; the first one grows as
            // HyStart++ says, and ends where it says (the window becomes
            // ssthresh, the rest of the ACK goes to congestion avoidance).
            let phase = slow_start_phase(self.hystart.as_mut(), self.ssthresh == u64::MAX, ack);
            if phase == SlowStartPhase::Exit {
                self.ssthresh = self.cwnd as u64;
            }
            let divisor = phase.growth_divisor();
            if divisor > 0 {
                let room = (self.ssthresh as f64 - self.cwnd).max(0.0);
                let wanted = acked as f64 / divisor as f64;
                let slow_start_bytes = wanted.min(room);
                self.cwnd += slow_start_bytes;
                if slow_start_bytes >= wanted {
                    return;
                }
                acked = acked.saturating_sub((slow_start_bytes as u64).saturating_mul(divisor));
                if acked == 0 {
                    return;
                }
            }
        }
        self.congestion_avoidance(&AckSample {
            acked_bytes: acked,
            ..*ack
        });
    }

    fn whole_window(&self) -> u64 {
        (self.cwnd as u64).max(self.minimum_window)
    }
}

impl Controller for Cubic {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// RFC 9438 §5.8: time spent idle must not count towards the cubic
    /// curve, or the first ACKs after a pause would jump the window. When a
    /// packet leaves with nothing else in flight, the epoch start moves
    /// forward by the gap since the previous send.
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        if bytes_in_flight <= bytes
            && let (Some(start), Some(last)) = (self.epoch_start, self.last_sent_at)
        {
            self.epoch_start = Some(start + (now - last));
        }
        self.last_sent_at = Some(now);
    }

    fn on_ack(&mut self, ack: &AckSample) {
        self.grow_or_cut_on_ack(ack);
        self.window_bytes = self.whole_window();
    }

    fn on_loss(&mut self, loss: &LossSample) {
        self.on_congestion_event(loss.now, loss.largest_lost_sent_at);
        // §4.8: after a timeout-like collapse, restart from the minimum
        // window; the next epoch begins with K = 0 and W_max = its window.
        if loss.persistent_congestion {
            self.cwnd = self.minimum_window as f64;
            self.w_max = 0.0;
            self.epoch_start = None;
            self.recovery.reset();
        }
        self.window_bytes = self.whole_window();
    }

    fn window(&self) -> u64 {
        self.window_bytes
    }

    fn ecn(&self) -> Ecn {
        Ecn::Ect0
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh as f64
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd_bytes: self.window(),
            ssthresh_bytes: (self.ssthresh != u64::MAX).then_some(self.ssthresh),
            extra: Some(("w_max_bytes", self.w_max)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::congestion::test_path::{MDS, PathSim, ack, ack_round, loss};

    const RTT: Duration = Duration::from_millis(100);

    fn cubic() -> Cubic {
        Cubic::new(&CcConfig::default())
    }

    /// A CUBIC whose window is `packets` datagrams in slow start, after
    /// one loss at t0.
    fn after_loss_at(packets: u64) -> (Cubic, Instant) {
        let mut cc = Cubic::new(&CcConfig {
            initial_window_packets: packets,
            ..CcConfig::default()
        });
        let t0 = Instant::from_millis(1_000);
        cc.on_loss(&loss(t0, t0 - RTT, false));
        (cc, t0)
    }

    #[test]
    fn w_cubic_matches_rfc9438_formula_at_hand_worked_points() {
        let mds = MDS as f64;
        // W_max = 100 segments, window after the cut 70 segments:
        // K = cbrt(30 / 0.4) = cbrt(75) = 4.217163 s.
        let k = cubic_k(100.0 * mds, 70.0 * mds, mds);
        assert!((k - 4.217_163).abs() < 1e-6, "K = {k}");
        // (t, W in segments) worked by hand from 0.4 (t - K)^3 + 100.
        for (t, segments) in [
            (0.0, 70.0),
            (1.0, 86.680_8),
            (2.0, 95.640_3),
            (k, 100.0),
            (5.0, 100.191_9),
            (6.0, 102.266_7),
            (2.0 * k, 130.0),
        ] {
            let w = w_cubic(t, k, 100.0 * mds, mds) / mds;
            assert!((w - segments).abs() < 1e-3, "W({t}) = {w}, want {segments}");
        }
        // Nothing to climb back to: K = 0.
        assert_eq!(cubic_k(50.0 * mds, 70.0 * mds, mds), 0.0);
    }

    #[test]
    fn slow_start_doubles_each_round_trip() {
        let mut cc = cubic();
        let mut t = Instant::from_millis(100);
        for expected_packets in [20, 40, 80] {
            t = ack_round(&mut cc, t, RTT, |_| false);
            assert_eq!(cc.window(), expected_packets * MDS);
        }
    }

    #[test]
    fn one_loss_cuts_to_beta_and_remembers_w_max() {
        let (cc, _) = after_loss_at(80);
        assert_eq!(cc.window(), 56 * MDS);
        assert_eq!(cc.metrics().ssthresh_bytes, Some(56 * MDS));
        assert_eq!(cc.metrics().extra, Some(("w_max_bytes", (80 * MDS) as f64)));
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn one_reduction_per_round_trip_and_ce_counts_as_congestion() {
        let (mut cc, t0) = after_loss_at(80);
        cc.on_loss(&loss(
            t0 + Duration::from_millis(3),
            t0 - Duration::from_millis(1),
            false,
        ));
        cc.on_ack(&ack(t0 + Duration::from_millis(4), t0, MDS, 1));
        assert_eq!(cc.window(), 56 * MDS);
        // A CE on a packet sent after the cut is a new event, with fast
        // convergence since 56 < W_max = 80: W_max = 56 * 1.7 / 2 = 47.6.
        let t1 = t0 + RTT + Duration::from_millis(10);
        cc.on_ack(&ack(t1, t0 + Duration::from_millis(10), MDS, 1));
        assert!(
            cc.window().abs_diff(56 * 7 * MDS / 10) <= 1,
            "window {}",
            cc.window()
        );
        let w_max = cc.metrics().extra.unwrap().1 / MDS as f64;
        assert!((w_max - 47.6).abs() < 1e-9, "W_max {w_max}");
    }

    /// Drive RTT-spaced rounds of ACKs after a cut at W = 100 segments and
    /// compare the window with the RFC: the larger of the cubic curve and
    /// the Reno-friendly estimate (70 + 0.53 segments per RTT until 100,
    /// then one per RTT; it overtakes the curve after about 6 s at 100 ms).
    /// Each ACK aims at `W(t + RTT)`, so after round `r` the window sits
    /// between the models at `r - 1` and `r + 1` rounds, give or take one
    /// segment.
    #[test]
    fn window_follows_the_cubic_curve() {
        let (mut cc, t0) = after_loss_at(100);
        let mds = MDS as f64;
        let k = cubic_k(100.0 * mds, 70.0 * mds, mds);
        let rounds_to_prior = 30.0 / CUBIC_ALPHA;
        let model = |rounds: f64| {
            let cubic = w_cubic(rounds * 0.1, k, 100.0 * mds, mds) / mds;
            let reno = if rounds <= rounds_to_prior {
                70.0 + CUBIC_ALPHA * rounds
            } else {
                100.0 + rounds - rounds_to_prior
            };
            cubic.max(reno)
        };
        // The epoch starts with the first ACK of a packet sent after the cut.
        let epoch = t0 + RTT;
        let mut t = epoch;
        let mut reno_region = 0;
        for round in 1..=70 {
            t = ack_round(&mut cc, t, RTT, |_| false);
            let r = f64::from(round);
            let w = cc.window() as f64 / mds;
            let (lo, hi) = (model(r - 1.0), model(r + 1.0));
            assert!(
                w >= lo - 1.0 && w <= hi + 1.0,
                "round {round}: {w:.1} not in [{lo:.1}, {hi:.1}]"
            );
            let cubic = w_cubic(r * 0.1, k, 100.0 * mds, mds) / mds;
            reno_region += u32::from(w > cubic + 2.0);
        }
        // Both regions were exercised.
        assert!(
            (3..=10).contains(&reno_region),
            "{reno_region} rounds in the Reno-friendly region"
        );
        // The plateau: at t = K the window is back at W_max.
        let mut cc2 = after_loss_at(100).0;
        let mut t = epoch;
        while (t - epoch).as_secs_f64() < k {
            t = ack_round(&mut cc2, t, RTT, |_| false);
        }
        let w = cc2.window() as f64 / mds;
        assert!((98.0..=101.0).contains(&w), "window at K: {w}");
    }

    /// At a 2 ms RTT Reno would outgrow the cubic curve: CUBIC follows the
    /// Reno-friendly estimate, α_cubic = 0.53 segments per RTT until it
    /// passes the pre-cut window of 100, then one segment per RTT.
    #[test]
    fn reno_friendly_region_at_short_rtt() {
        let (mut cc, t0) = after_loss_at(100);
        let rtt = Duration::from_millis(2);
        let mut t = t0 + RTT;
        for _ in 0..100 {
            t = ack_round(&mut cc, t, rtt, |_| false);
        }
        // 30 segments at 0.529/RTT take 56.7 RTTs; the remaining 43.3 RTTs
        // add one segment each: about 143 segments. The per-ACK steps use
        // the growing window, so allow two segments of slack below.
        let w = cc.window() as f64 / MDS as f64;
        assert!((141.0..=144.0).contains(&w), "window {w}");
        let cubic_only = w_cubic(0.2, cubic_k(100.0, 70.0, 1.0), 100.0, 1.0);
        assert!(w > cubic_only + 30.0);
    }

    #[test]
    fn persistent_congestion_restarts_with_a_flat_curve() {
        let (mut cc, t0) = after_loss_at(80);
        cc.on_loss(&loss(t0 + RTT, t0 + Duration::from_millis(1), true));
        assert_eq!(cc.window(), 2 * MDS);
        // Slow start up to ssthresh (0.7 * 56 = 39.2 segments), then an
        // epoch with K = 0 whose W_max is the window at its start.
        let mut t = t0 + RTT * 3;
        while cc.in_slow_start() {
            t = ack_round(&mut cc, t, RTT, |_| false);
        }
        ack_round(&mut cc, t, RTT, |_| false);
        let w_max = cc.metrics().extra.unwrap().1;
        assert!(
            w_max >= (39 * MDS) as f64 && w_max <= (48 * MDS) as f64,
            "W_max {w_max}"
        );
    }

    #[test]
    fn idle_time_does_not_advance_the_curve() {
        let run = |idle: Duration| {
            let (mut cc, t0) = after_loss_at(100);
            let mut t = t0 + RTT;
            t = ack_round(&mut cc, t, RTT, |_| false);
            // The flow goes quiet, then sends again with nothing in flight.
            cc.on_sent(t, MDS, MDS);
            t += idle;
            cc.on_sent(t, MDS, MDS);
            ack_round(&mut cc, t, RTT, |_| false);
            cc.window()
        };
        assert_eq!(run(Duration::from_secs(10)), run(Duration::ZERO));
    }

    #[test]
    fn sawtooth_on_a_drop_tail_path_keeps_most_of_the_window() {
        let mut sim = PathSim::new(Box::new(cubic()), 12e6, Duration::from_millis(20));
        sim.buffer_packets = Some(25);
        sim.run_for(Duration::from_secs(20));
        let (lo, hi) = sim.window_range_packets(Duration::from_secs(10));
        // Peak near BDP + buffer = 50, cut to 0.7 of it.
        assert!((45.0..=56.0).contains(&hi), "peak {hi}");
        assert!((30.0..=40.0).contains(&lo), "trough {lo}");
        assert!(sim.utilization(Duration::from_secs(10)) > 0.95);
    }

    /// The window kept in whole bytes always equals the fractional window
    /// converted, through slow start, CE marks, losses, persistent
    /// congestion, app-limited ACKs and the curve.
    #[test]
    fn kept_window_equals_the_converted_fractional_window() {
        let mut cc = cubic();
        let converted = |cc: &Cubic| (cc.cwnd as u64).max(cc.minimum_window);
        assert_eq!(cc.window(), converted(&cc));
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut now = Instant::from_millis(100);
        for i in 0..5_000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            now += Duration::from_micros(300 + rng % 5_000);
            let sent_at = now - RTT;
            match rng % 100 {
                0..=1 => cc.on_loss(&loss(now, sent_at, i % 7 == 0)),
                2..=4 => cc.on_ack(&ack(now, sent_at, MDS, 1)),
                5..=9 => cc.on_ack(&AckSample {
                    app_limited: true,
                    ..ack(now, sent_at, MDS, 0)
                }),
                _ => cc.on_ack(&ack(now, sent_at, MDS * (1 + rng % 3), 0)),
            }
            assert_eq!(cc.window(), converted(&cc), "step {i}");
        }
        assert!(cc.w_max > 0.0 && cc.ssthresh < u64::MAX);
    }

    /// HyStart++: a 20 ms rise of the round's smallest RTT (over a
    /// 12.5 ms threshold at 100 ms) slows growth to a quarter of the
    /// acknowledged bytes from the eighth sample on, and five rounds later
    /// the window becomes ssthresh. Without HyStart++ the same round
    /// doubles the window.
    #[test]
    fn hystart_slows_growth_on_an_rtt_rise_then_hands_over() {
        let rise = RTT + Duration::from_millis(20);
        let run = |hystart: bool| {
            let mut cc = Cubic::new(&CcConfig {
                hystart,
                ..CcConfig::default()
            });
            let mut t = Instant::from_millis(100);
            for _ in 0..2 {
                t = ack_round(&mut cc, t, RTT, |_| false);
            }
            assert_eq!(cc.window(), 40 * MDS);
            t = ack_round(&mut cc, t, rise, |_| false);
            (cc, t)
        };
        let (off, _) = run(false);
        assert_eq!(off.window(), 80 * MDS);
        let (mut cc, mut t) = run(true);
        // The round's first ACKs still grow by whole datagrams, the rest by
        // a quarter: well short of the doubling.
        let w = cc.window() / MDS;
        assert!((48..=66).contains(&w), "window {w} packets");
        assert!(cc.in_slow_start() && cc.metrics().ssthresh_bytes.is_none());
        let mut rounds = 0;
        while cc.in_slow_start() {
            let before = cc.window();
            t = ack_round(&mut cc, t, rise, |_| false);
            rounds += 1;
            assert!(cc.window() <= before * 13 / 10, "round {rounds}");
            assert!(rounds <= 5, "still in slow start");
        }
        assert!((4..=5).contains(&rounds), "{rounds} rounds");
        let ssthresh = cc.metrics().ssthresh_bytes.unwrap();
        assert!(ssthresh <= cc.window() && cc.window() <= ssthresh * 11 / 10);
        // A slow start after persistent congestion is the standard one.
        cc.on_loss(&loss(t, t - Duration::from_millis(1), true));
        let mut t = t + RTT;
        let mut last = cc.window();
        for round in 0..3u32 {
            t = ack_round(&mut cc, t, rise + RTT * round, |_| false);
            assert_eq!(cc.window(), 2 * last, "round {round}");
            last = cc.window();
        }
    }

    /// A rise that falls back within Conservative Slow Start was jitter:
    /// standard slow start resumes and doubles again.
    #[test]
    fn hystart_resumes_slow_start_when_the_rtt_falls_back() {
        let mut cc = Cubic::new(&CcConfig {
            hystart: true,
            ..CcConfig::default()
        });
        let mut t = Instant::from_millis(100);
        for _ in 0..2 {
            t = ack_round(&mut cc, t, RTT, |_| false);
        }
        t = ack_round(&mut cc, t, RTT + Duration::from_millis(20), |_| false);
        t = ack_round(&mut cc, t, RTT, |_| false);
        let before = cc.window();
        ack_round(&mut cc, t, RTT, |_| false);
        assert_eq!(cc.window(), 2 * before);
        assert!(cc.in_slow_start());
    }
}
