//! PIE, the Proportional Integral controller Enhanced (RFC 8033), the way
//! Linux's sch_pie runs it.
//!
//! Every `tupdate` a PI controller moves the drop probability by
//! `alpha * (delay - target) + beta * (delay - previous delay)`, with the
//! gains scaled down while the probability is small (RFC 8033 §4.2). Arriving
//! packets are dropped (or, with `ecn`, marked CE) at random with that
//! probability. The queue delay is the sojourn time of the last dequeued
//! packet (Linux's default), or backlog over a measured drain rate (RFC 8033
//! §5.2). A burst allowance (§4.4) lets a fresh queue absorb 150 ms of burst
//! untouched.
//!
//! The update timer runs lazily; `UpdateTimer` (in `pi_common.rs`) says why
//! that is exact.
//!
//! Where Linux and the RFC differ, this follows Linux: the delay used to
//! skip early drops is the current one, the burst allowance drains with the
//! time between dequeues, the probability also climbs 2% per update above
//! 250 ms of delay, idle decay is `p -= p/64`, and derandomization (§5.4) is
//! on by default. One deliberate difference: the derandomization
//! accumulator restarts after every early drop *or mark* (Linux restarts it
//! only on drops, so one run of bad luck past the 8.5 ceiling would mark
//! every ECN packet until the next drop).

use super::backlog::Backlog;
use super::pi_common::UpdateTimer;
use super::{DropReason, Limits, Queue, QueueEvent, QueueStats};
use crate::Rng;
use crate::packet::Packet;
use brisk_time::Instant;
use rand::Rng as _;
use std::time::Duration;

/// The drain-rate estimator measures over this many bytes, and only while
/// at least this much is queued (RFC 8033 §5.2 `DQ_THRESHOLD`, Linux's
/// `QUEUE_THRESHOLD`).
const DQ_THRESHOLD_BYTES: u64 = 16_384;

/// Past this queue delay Linux adds 2% to every update, cap or not.
const HIGH_DELAY: Duration = Duration::from_millis(250);

/// `[queue.pie]`. Defaults are Linux's (`tc qdisc add ... pie`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PieConfig {
    /// Default 1000 packets, like Linux.
    pub limit_packets: Option<usize>,
    /// Most bytes (whole IP datagrams) queued before tail drop on arrival; `None` (default) for no byte limit.
    #[serde(deserialize_with = "crate::units::opt_bytes::deserialize")]
    pub limit_bytes: Option<u64>,
    /// The queue delay PIE steers to (RFC's `QDELAY_REF`), default 15 ms.
    #[serde(with = "crate::units::duration")]
    pub target: Duration,
    /// How often the probability is recomputed, default 15 ms.
    #[serde(with = "super::pi_common::period")]
    pub tupdate: Duration,
    /// Integral gain in Hz, default 0.125.
    #[serde(with = "super::pi_common::gain_hz")]
    pub alpha: f64,
    /// Proportional gain in Hz, default 1.25.
    #[serde(with = "super::pi_common::gain_hz")]
    pub beta: f64,
    /// Burst a fresh queue absorbs before random drops start, default 150 ms.
    #[serde(with = "crate::units::duration")]
    pub max_burst: Duration,
    /// Mark ECN-capable packets CE instead of dropping them while the
    /// probability is below `mark_ecn_threshold`. Off by default, as in Linux.
    pub ecn: bool,
    /// Above this probability even ECN-capable packets are dropped: an
    /// overload that marks cannot cure (RFC 8033 §5.1), default "10%".
    #[serde(with = "crate::units::probability")]
    pub mark_ecn_threshold: f64,
    /// Estimate the delay as backlog / measured drain rate (RFC 8033 §5.2)
    /// instead of from timestamps.
    pub dq_rate_estimator: bool,
    /// Space drops evenly (RFC 8033 §5.4); Linux always does.
    pub derandomize: bool,
    /// Raise the probability by at most 2% per update once it is 10% or
    /// more (RFC 8033 §5.5); Linux always does.
    pub cap_drop_adjustment: bool,
    /// No early drop while fewer than two MTUs are queued. Linux counts the
    /// link header (1514 on Ethernet); Brisk lengths are IP only.
    pub mtu_bytes: u32,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            limit_packets: Some(1000),
            limit_bytes: None,
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            ecn: false,
            mark_ecn_threshold: 0.1,
            dq_rate_estimator: false,
            derandomize: true,
            cap_drop_adjustment: true,
            mtu_bytes: 1500,
        }
    }
}

impl PieConfig {
    /// The two limit fields as one [`Limits`].
    pub fn limits(&self) -> Limits {
        Limits::new(self.limit_packets, self.limit_bytes)
    }
}

/// The controller's state, compared before and after an update to detect
/// the idle fixed point.
#[derive(Debug, Clone, PartialEq)]
struct PieVars {
    /// Drop probability, 0..=1.
    prob: f64,
    /// Derandomization accumulator (RFC 8033 §5.4).
    accu_prob: f64,
    /// Current queue delay estimate.
    qdelay: Duration,
    /// The delay used by the previous update.
    qdelay_old: Duration,
    /// Burst allowance left; no early drops while positive.
    burst_left: Duration,
    /// Last dequeue (timestamp mode) or start of the current measurement
    /// (rate estimator).
    dq_tstamp: Option<Instant>,
    /// Bytes dequeued in the current measurement; `None` when not measuring.
    dq_count: Option<u64>,
    /// Smoothed drain rate; zero until the first measurement.
    avg_dq_rate_bytes_per_sec: f64,
}

impl PieVars {
    fn new(max_burst: Duration) -> PieVars {
        PieVars {
            prob: 0.0,
            accu_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_left: max_burst,
            dq_tstamp: None,
            dq_count: None,
            avg_dq_rate_bytes_per_sec: 0.0,
        }
    }

    /// Linux's `pie_vars_init`: congestion is over, restore the burst
    /// allowance and start measuring afresh.
    fn restart(&mut self, max_burst: Duration) {
        self.burst_left = max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
        self.dq_count = None;
        self.avg_dq_rate_bytes_per_sec = 0.0;
    }
}

/// RFC 8033 §4.2: while the probability is small, the gains shrink by the
/// factor returned, so that one update cannot jump it by orders of magnitude.
fn gain_scale(prob: f64) -> f64 {
    const STEPS: [(f64, f64); 6] = [
        (0.1, 1.0),
        (0.01, 1.0 / 2.0),
        (0.001, 1.0 / 8.0),
        (0.000_1, 1.0 / 32.0),
        (0.000_01, 1.0 / 128.0),
        (0.000_001, 1.0 / 512.0),
    ];
    STEPS
        .iter()
        .find(|(floor, _)| prob >= *floor)
        .map_or(1.0 / 2048.0, |(_, scale)| *scale)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A PIE queue.
#[derive(Debug)]
pub struct Pie {
    config: PieConfig,
    rng: Rng,
    timer: UpdateTimer,
    vars: PieVars,
    backlog: Backlog,
}

impl Pie {
    /// `rng` draws the random drops. Gains that are negative or not finite
    /// (only possible from code; the TOML reader refuses them) count as 0.
    pub fn new(config: PieConfig, rng: Rng) -> Pie {
        let mut config = config;
        for g in [&mut config.alpha, &mut config.beta] {
            if !(g.is_finite() && *g >= 0.0) {
                *g = 0.0;
            }
        }
        Pie {
            rng,
            timer: UpdateTimer::new(config.tupdate),
            vars: PieVars::new(config.max_burst),
            backlog: Backlog::new(config.limits()),
            config,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &PieConfig {
        &self.config
    }

    /// The current drop (or mark) probability, 0..=1.
    pub fn drop_probability(&self) -> f64 {
        self.vars.prob
    }

    /// The queue delay the controller currently sees.
    pub fn queue_delay(&self) -> Duration {
        self.vars.qdelay
    }

    /// Burst allowance left before random drops may start.
    pub fn burst_allowance(&self) -> Duration {
        self.vars.burst_left
    }

    /// When the next probability update is due (`None` before the first
    /// packet). Calling [`Pie::handle_timeout`] then is optional: every
    /// enqueue and dequeue catches up by itself.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer.next_update()
    }

    /// Runs every probability update due at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while self.timer.next_due(now).is_some() {
            let before = self.vars.clone();
            self.update_probability();
            // The update reads only the state and the backlog, which stay
            // put until the next call: if it changed nothing, neither will
            // the rest.
            if self.vars == before {
                self.timer.skip_through(now);
            }
        }
    }

    /// Linux's `pie_calculate_probability`, in seconds and probabilities.
    fn update_probability(&mut self) {
        let c = &self.config;
        let v = &mut self.vars;
        let backlog = self.backlog.backlog_bytes();
        let qdelay_old = v.qdelay_old;
        let qdelay = if c.dq_rate_estimator {
            if v.avg_dq_rate_bytes_per_sec > 0.0 {
                // A rate estimate near zero saturates instead of panicking.
                Duration::try_from_secs_f64(backlog as f64 / v.avg_dq_rate_bytes_per_sec)
                    .unwrap_or(Duration::MAX)
            } else {
                Duration::ZERO
            }
        } else {
            v.qdelay
        };

        let scale = gain_scale(v.prob);
        let mut delta = scale
            * (c.alpha * (secs(qdelay) - secs(c.target))
                + c.beta * (secs(qdelay) - secs(qdelay_old)));
        if c.cap_drop_adjustment && v.prob >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        if qdelay > HIGH_DELAY {
            delta += 0.02;
        }
        v.prob = (v.prob + delta).clamp(0.0, 1.0);

        // Decay while idle: no delay now nor at the last update. A backlog
        // too small to show a delay yet is not idleness.
        if qdelay.is_zero() && qdelay_old.is_zero() && backlog == 0 {
            v.prob -= v.prob / 64.0;
        }

        v.qdelay = qdelay;
        let half_target = c.target / 2;
        if qdelay < half_target
            && qdelay_old < half_target
            && v.prob == 0.0
            && (!c.dq_rate_estimator || v.avg_dq_rate_bytes_per_sec > 0.0)
        {
            v.restart(c.max_burst);
        }
        v.qdelay_old = qdelay;
    }

    /// Linux's `pie_drop_early`: should this arrival be dropped (or marked)?
    fn drop_early(&mut self) -> bool {
        let c = &self.config;
        let v = &mut self.vars;
        if !v.burst_left.is_zero() {
            return false;
        }
        // Work conservation: little delay and a low probability.
        if v.qdelay < c.target / 2 && v.prob < 0.2 {
            return false;
        }
        if self.backlog.backlog_bytes() < 2 * u64::from(c.mtu_bytes) {
            return false;
        }
        let p = v.prob;
        if c.derandomize {
            if p == 0.0 {
                v.accu_prob = 0.0;
            } else {
                v.accu_prob += p;
            }
            if v.accu_prob < 0.85 {
                return false;
            }
            if v.accu_prob >= 8.5 {
                v.accu_prob = 0.0;
                return true;
            }
        }
        if self.rng.random::<f64>() < p {
            v.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// Linux's `pie_process_dequeue`: delay sample, drain rate, and burst
    /// allowance, after `packet` left at `now`.
    fn after_dequeue(&mut self, now: Instant, packet: &Packet) {
        let backlog = self.backlog.backlog_bytes();
        let v = &mut self.vars;
        let dtime = if self.config.dq_rate_estimator {
            if backlog >= DQ_THRESHOLD_BYTES && v.dq_count.is_none() {
                v.dq_tstamp = Some(now);
                v.dq_count = Some(0);
            }
            let Some(count) = v.dq_count else { return };
            let count = count + packet.len() as u64;
            v.dq_count = Some(count);
            if count < DQ_THRESHOLD_BYTES {
                return;
            }
            let dtime = now.saturating_duration_since(v.dq_tstamp.unwrap_or(now));
            if dtime.is_zero() {
                return;
            }
            let rate = count as f64 / dtime.as_secs_f64();
            let avg = v.avg_dq_rate_bytes_per_sec;
            v.avg_dq_rate_bytes_per_sec = if avg == 0.0 {
                rate
            } else {
                avg - avg / 8.0 + rate / 8.0
            };
            if backlog < DQ_THRESHOLD_BYTES {
                v.dq_count = None;
            } else {
                v.dq_count = Some(0);
                v.dq_tstamp = Some(now);
            }
            dtime
        } else {
            v.qdelay = if backlog == 0 {
                Duration::ZERO
            } else {
                now.saturating_duration_since(packet.enqueued_at)
            };
            let dtime = v
                .dq_tstamp
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
            v.dq_tstamp = Some(now);
            dtime
        };
        v.burst_left = v.burst_left.saturating_sub(dtime);
    }

    fn discard(&mut self, now: Instant, packet: Packet, reason: DropReason) {
        self.vars.accu_prob = 0.0;
        self.backlog.drop(now, packet, reason);
    }
}

impl Queue for Pie {
    fn name(&self) -> &'static str {
        "pie"
    }

    fn enqueue(&mut self, now: Instant, mut packet: Packet) {
        self.handle_timeout(now);
        if self.backlog.would_overflow(packet.len()) {
            self.discard(now, packet, DropReason::Overflow);
            return;
        }
        if self.drop_early() {
            let may_mark = self.config.ecn && self.vars.prob < self.config.mark_ecn_threshold;
            if may_mark && packet.try_mark_ce() {
                self.backlog.mark(now, packet.id);
            } else {
                self.discard(now, packet, DropReason::Aqm);
                return;
            }
        }
        self.backlog.push(now, packet);
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.handle_timeout(now);
        let p = self.backlog.pop()?;
        self.backlog.count_dequeued(&p);
        self.after_dequeue(now, &p);
        Some(p)
    }

    fn stats(&self) -> QueueStats {
        self.backlog.stats()
    }

    fn len_packets(&self) -> usize {
        self.backlog.len_packets()
    }

    fn len_bytes(&self) -> usize {
        self.backlog.backlog_bytes() as usize
    }

    fn is_empty(&self) -> bool {
        self.backlog.len_packets() == 0
    }

    fn poll_event(&mut self) -> Option<QueueEvent> {
        self.backlog.poll_event()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::{Ecn, ip};
    use std::net::SocketAddr;

    /// A UDP datagram of exactly `len` bytes over IPv4 or IPv6.
    fn packet(id: u64, len: usize, ecn: Ecn, v6: bool) -> Packet {
        let (src, dst, headers) = if v6 {
            ("[2001:db8::1]:1000", "[2001:db8::2]:5000", 48)
        } else {
            ("10.0.0.1:1000", "10.0.1.1:5000", 28)
        };
        let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let data = ip::udp_datagram(src, dst, ecn, &vec![0; len - headers]).unwrap();
        Packet::new(id, Instant::ZERO, data).unwrap()
    }

    fn pie(config: PieConfig) -> Pie {
        Pie::new(config, crate::rng(7, 0))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn gain_scale_follows_the_rfc_table() {
        // RFC 8033 §4.2: p < 1e-6 -> /2048, < 1e-5 -> /512, < 1e-4 -> /128,
        // < 1e-3 -> /32, < 1e-2 -> /8, < 0.1 -> /2, else unscaled.
        let cases = [
            (0.0, 2048.0),
            (9e-7, 2048.0),
            (1e-6, 512.0),
            (5e-5, 128.0),
            (1e-4, 32.0),
            (0.005, 8.0),
            (0.01, 2.0),
            (0.099, 2.0),
            (0.1, 1.0),
            (0.9, 1.0),
        ];
        for (p, div) in cases {
            assert_eq!(gain_scale(p), 1.0 / div, "p = {p}");
        }
    }

    #[test]
    fn one_update_by_hand_then_idle_decay() {
        let mut q = pie(PieConfig::default());
        // Arm the timer at 0 (first update due at 15 ms), then plant a
        // 40 ms delay sample and a 5% probability.
        q.handle_timeout(Instant::ZERO);
        q.vars.qdelay = ms(40);
        q.vars.prob = 0.05;
        q.vars.burst_left = Duration::ZERO;
        q.handle_timeout(Instant::from_millis(15));
        // 5% is in the [1%, 10%) band: gains halved.
        let want = 0.05 + 0.5 * (0.125 * (0.040 - 0.015) + 1.25 * (0.040 - 0.0));
        assert!(
            (q.drop_probability() - want).abs() < 1e-12,
            "{}",
            q.drop_probability()
        );

        // The queue empties: delay 0 twice in a row, so each update both
        // pulls p down by alpha * target (scaled) and decays it by 1/64.
        q.vars.qdelay = Duration::ZERO;
        let mut p = want;
        let mut old = 0.040;
        for k in 2..=12u64 {
            q.handle_timeout(Instant::from_millis(15 * k));
            let delta = gain_scale(p) * (0.125 * (0.0 - 0.015) + 1.25 * (0.0 - old));
            p = (p + delta).clamp(0.0, 1.0);
            if old == 0.0 {
                p -= p / 64.0;
            }
            old = 0.0;
            assert!((q.drop_probability() - p).abs() < 1e-12, "update {k}");
        }
        assert!(p < want / 2.0);
    }

    #[test]
    fn long_idle_spell_costs_little_and_restores_the_burst_allowance() {
        let mut q = pie(PieConfig::default());
        q.handle_timeout(Instant::ZERO);
        q.vars.prob = 0.3;
        q.vars.burst_left = Duration::ZERO;
        // A day later: the probability decayed to zero and the controller
        // restarted, without a day's worth of updates.
        q.enqueue(
            Instant::from_secs_f64(86_400.0),
            packet(1, 1000, Ecn::NotEct, false),
        );
        assert_eq!(q.drop_probability(), 0.0);
        assert_eq!(q.burst_allowance(), ms(150));
        assert_eq!(q.stats().enqueued_packets, 1);
    }

    #[test]
    fn ecn_marks_below_the_threshold_and_drops_above() {
        for v6 in [false, true] {
            let config = PieConfig {
                ecn: true,
                derandomize: false,
                ..PieConfig::default()
            };
            let mut q = pie(config);
            q.handle_timeout(Instant::ZERO);
            q.vars.burst_left = Duration::ZERO;
            q.vars.qdelay = ms(20);
            for i in 0..3 {
                q.enqueue(Instant::ZERO, packet(i, 1500, Ecn::NotEct, v6));
            }
            // p = 1: every arrival is hit. Below 10% ECT packets are marked.
            q.vars.prob = 1.0;
            q.enqueue(Instant::ZERO, packet(10, 1500, Ecn::Ect0, v6));
            q.vars.prob = 0.0999;
            q.vars.accu_prob = 0.0;
            // Draws until one hits, each on a fresh ECT(0) and Not-ECT pair.
            let mut id = 100;
            while q.stats().marked == 0 {
                q.enqueue(Instant::ZERO, packet(id, 1500, Ecn::Ect1, v6));
                id += 1;
            }
            let s = q.stats();
            assert_eq!(s.dropped_aqm, 1, "the ECT(0) arrival at p = 1 was dropped");
            assert_eq!(s.marked, 1);
            let marked = std::iter::from_fn(|| q.poll_event())
                .find_map(|e| match e {
                    QueueEvent::Marked { packet_id, .. } => Some(packet_id),
                    QueueEvent::Dropped { .. } => None,
                })
                .unwrap();
            let p = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
                .find(|p| p.id == marked)
                .unwrap();
            assert_eq!(p.ecn(), Ecn::Ce);
        }
    }

    #[test]
    fn burst_allowance_shields_a_fresh_queue() {
        let mut q = pie(PieConfig::default());
        q.handle_timeout(Instant::ZERO);
        q.vars.prob = 1.0;
        q.vars.qdelay = ms(100);
        // Dequeues every 10 ms wear the 150 ms allowance down; until then
        // nothing is dropped even at p = 1.
        let mut t = 0;
        for i in 0..5 {
            q.enqueue(Instant::from_millis(t), packet(i, 1500, Ecn::NotEct, false));
        }
        loop {
            t += 10;
            q.dequeue(Instant::from_millis(t));
            if q.burst_allowance().is_zero() {
                break;
            }
            q.enqueue(
                Instant::from_millis(t),
                packet(100 + t, 1500, Ecn::NotEct, false),
            );
            q.vars.prob = 1.0;
            assert_eq!(q.stats().dropped_aqm, 0);
        }
        assert_eq!(t, 160, "the first dequeue only starts the clock");
        q.enqueue(Instant::from_millis(t), packet(1, 1500, Ecn::NotEct, false));
        assert_eq!(q.stats().dropped_aqm, 1);
    }

    #[test]
    fn config_from_toml_with_units_and_line_numbers() {
        use crate::queue::QueueConfig;
        #[derive(serde::Deserialize)]
        struct Scenario {
            queue: QueueConfig,
        }
        let s: Scenario = toml::from_str(
            "[queue.pie]\ntarget = \"20ms\"\necn = true\nmark_ecn_threshold = \"30%\"\nalpha = 1",
        )
        .unwrap();
        let want = PieConfig {
            target: ms(20),
            ecn: true,
            mark_ecn_threshold: 0.3,
            alpha: 1.0,
            ..PieConfig::default()
        };
        assert_eq!(s.queue, QueueConfig::Pie(want));
        for (bad, field) in [
            ("[queue.pie]\n\ntupdate = \"0ms\"", "tupdate"),
            ("[queue.pie]\n\nbeta = -1.0", "beta"),
            ("[queue.pie]\n\nalpha = nan", "alpha"),
            ("[queue.pie]\n\nmax_burts = \"1s\"", "max_burts"),
        ] {
            let err = toml::from_str::<Scenario>(bad).err().unwrap().to_string();
            assert!(err.contains("line 3") && err.contains(field), "{err}");
        }
    }

    /// ns-3's PIE test suite (src/traffic-control/test/
    /// pie-queue-disc-test-suite.cc in ns-3-dev), ported: the same
    /// scenarios and expected outcomes, with 1000-byte packets over IPv4
    /// and IPv6, and the 300-packet limit expressed in packets and in bytes
    /// as ns-3 runs each. ns-3's defaults differ from Linux's in one place
    /// that matters: derandomization is off unless a test turns it on.
    mod ns3 {
        use super::*;

        #[derive(Debug, Default)]
        struct Outcome {
            forced_drops: u64,
            unforced_drops: u64,
            marks: u64,
            max_prob: f64,
            /// Largest rise between two arrivals once p was above 10%. Rises
            /// from an update that saw more than 250 ms of delay are left
            /// out: Linux adds 2% more there, ns-3 does not, and tests 7 and
            /// 8 are about the cap alone.
            max_prob_rise: f64,
        }

        enum Stage {
            BeforeEnqueue,
            AfterEnqueue,
        }

        fn ns3_config() -> PieConfig {
            PieConfig {
                derandomize: false,
                ..PieConfig::default()
            }
        }

        /// ns-3's EnqueueWithDelay and DequeueWithDelay: 400 arrivals every
        /// 10 ms from 10 ms, 400 dequeues every `dequeue_every` from
        /// `dequeue_every`; at equal times the arrival goes first, as ns-3
        /// scheduled it first. `hook` sees the queue (caught up) around
        /// each arrival, like the ns-3 test's probes.
        fn run(
            config: PieConfig,
            bytes_limit: bool,
            v6: bool,
            ecn: Ecn,
            dequeue_every: Duration,
            hook: &mut dyn FnMut(&mut Pie, Stage),
        ) -> Outcome {
            let (limit_packets, limit_bytes) = if bytes_limit {
                (None, Some(300_000))
            } else {
                (Some(300), None)
            };
            let mut q = pie(PieConfig {
                limit_packets,
                limit_bytes,
                ..config
            });
            let mut out = Outcome::default();
            let mut prev_prob = 0.0;
            let (mut arrivals, mut departures) = (0u32, 0u32);
            while arrivals < 400 || departures < 400 {
                let t_arrive = ms(10) * (arrivals + 1);
                let t_depart = dequeue_every * (departures + 1);
                if arrivals < 400 && (departures == 400 || t_arrive <= t_depart) {
                    let now = Instant::ZERO + t_arrive;
                    q.handle_timeout(now);
                    hook(&mut q, Stage::BeforeEnqueue);
                    q.enqueue(now, packet(u64::from(arrivals), 1000, ecn, v6));
                    hook(&mut q, Stage::AfterEnqueue);
                    let p = q.drop_probability();
                    out.max_prob = out.max_prob.max(p);
                    if prev_prob > 0.1 && q.vars.qdelay_old <= HIGH_DELAY {
                        out.max_prob_rise = out.max_prob_rise.max(p - prev_prob);
                    }
                    prev_prob = p;
                    arrivals += 1;
                } else {
                    q.dequeue(Instant::ZERO + t_depart);
                    departures += 1;
                }
            }
            let s = q.stats();
            out.forced_drops = s.dropped_overflow;
            out.unforced_drops = s.dropped_aqm;
            out.marks = s.marked;
            out
        }

        fn each_variant(mut f: impl FnMut(bool, bool)) {
            for bytes_limit in [false, true] {
                for v6 in [false, true] {
                    f(bytes_limit, v6);
                }
            }
        }

        fn plain(config: PieConfig, bytes: bool, v6: bool, ecn: Ecn, every_ms: u64) -> Outcome {
            run(config, bytes, v6, ecn, ms(every_ms), &mut |_, _| {})
        }

        #[test]
        fn test1_fifo_order_without_drops() {
            each_variant(|_, v6| {
                let mut q = pie(ns3_config());
                for i in 0..8 {
                    q.enqueue(Instant::ZERO, packet(i, 1000, Ecn::NotEct, v6));
                    assert_eq!(q.len_packets(), i as usize + 1);
                }
                let ids: Vec<u64> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
                    .map(|p| p.id)
                    .collect();
                assert_eq!(ids, (0..8).collect::<Vec<_>>());
                assert!(q.dequeue(Instant::ZERO).is_none());
            });
        }

        #[test]
        fn tests2_to_5_target_rate_and_tupdate_move_the_drop_count() {
            each_variant(|bytes, v6| {
                let base = PieConfig {
                    tupdate: ms(30),
                    target: ms(20),
                    max_burst: ms(100),
                    ..ns3_config()
                };
                let t2 = plain(base.clone(), bytes, v6, Ecn::NotEct, 12);
                assert!(t2.unforced_drops > 0, "test 2: {t2:?}");
                assert_eq!(t2.forced_drops, 0, "test 2");
                // A higher target drops less.
                let t3 = plain(
                    PieConfig {
                        target: ms(80),
                        ..base.clone()
                    },
                    bytes,
                    v6,
                    Ecn::NotEct,
                    12,
                );
                assert!(
                    t3.unforced_drops < t2.unforced_drops,
                    "test 3: {t3:?} vs {t2:?}"
                );
                assert_eq!(t3.forced_drops, 0, "test 3");
                // A slower link drops more.
                let t4 = plain(base.clone(), bytes, v6, Ecn::NotEct, 15);
                assert!(
                    t4.unforced_drops > t2.unforced_drops,
                    "test 4: {t4:?} vs {t2:?}"
                );
                assert_eq!(t4.forced_drops, 0, "test 4");
                // Updating less often drops less.
                let t5 = plain(
                    PieConfig {
                        tupdate: ms(90),
                        ..base
                    },
                    bytes,
                    v6,
                    Ecn::NotEct,
                    15,
                );
                assert!(
                    t5.unforced_drops < t4.unforced_drops,
                    "test 5: {t5:?} vs {t4:?}"
                );
                assert_eq!(t5.forced_drops, 0, "test 5");
            });
        }

        #[test]
        fn test6_dequeue_rate_estimator_drops_too() {
            each_variant(|bytes, v6| {
                let config = PieConfig {
                    dq_rate_estimator: true,
                    ..ns3_config()
                };
                let o = plain(config, bytes, v6, Ecn::NotEct, 14);
                assert!(o.unforced_drops > 0, "{o:?}");
                assert_eq!(o.forced_drops, 0);
            });
        }

        #[test]
        fn tests7_and_8_cap_drop_adjustment_limits_each_rise_to_2_percent() {
            each_variant(|bytes, v6| {
                let off = PieConfig {
                    cap_drop_adjustment: false,
                    ..ns3_config()
                };
                let o = plain(off, bytes, v6, Ecn::NotEct, 14);
                assert!(o.unforced_drops > 0 && o.forced_drops == 0, "test 7: {o:?}");
                assert!(o.max_prob_rise > 0.02, "test 7: {o:?}");
                let o = plain(ns3_config(), bytes, v6, Ecn::NotEct, 14);
                assert!(o.unforced_drops > 0 && o.forced_drops == 0, "test 8: {o:?}");
                assert!(o.max_prob_rise <= 0.02 + 1e-12, "test 8: {o:?}");
            });
        }

        #[test]
        fn tests9_to_11_ecn_needs_both_the_queue_and_the_packet() {
            each_variant(|bytes, v6| {
                let ecn_on = PieConfig {
                    ecn: true,
                    mark_ecn_threshold: 0.3,
                    ..ns3_config()
                };
                let ecn_off = PieConfig {
                    ecn: false,
                    ..ecn_on.clone()
                };
                let o = plain(ecn_on.clone(), bytes, v6, Ecn::NotEct, 14);
                assert_eq!(o.marks, 0, "test 9: {o:?}");
                assert!(o.unforced_drops > 0 && o.forced_drops == 0, "test 9: {o:?}");
                let o = plain(ecn_off, bytes, v6, Ecn::Ect0, 14);
                assert_eq!(o.marks, 0, "test 10: {o:?}");
                assert!(
                    o.unforced_drops > 0 && o.forced_drops == 0,
                    "test 10: {o:?}"
                );
                // Marks while p < 30%; beyond, even ECT packets are dropped.
                let o = plain(ecn_on, bytes, v6, Ecn::Ect0, 14);
                assert!(o.marks > 0, "test 11: {o:?}");
                assert!(
                    o.unforced_drops > 0 && o.forced_drops == 0,
                    "test 11: {o:?}"
                );
                assert!(o.max_prob > 0.3, "test 11: {o:?}");
            });
        }

        #[test]
        fn test12_derandomization_accumulates_the_probability() {
            each_variant(|bytes, v6| {
                let config = PieConfig {
                    derandomize: true,
                    ..ns3_config()
                };
                let (mut before, mut increments) = ((0.0, 0.0), 0);
                let o = run(config, bytes, v6, Ecn::NotEct, ms(14), &mut |q, stage| {
                    let now = (q.vars.accu_prob, q.vars.prob);
                    match stage {
                        Stage::BeforeEnqueue => before = now,
                        Stage::AfterEnqueue => {
                            let (accu0, p) = before;
                            let accu1 = now.0;
                            // Untouched (no early-drop test reached), restarted
                            // (a drop, or p = 0), or grown by exactly p.
                            assert!(
                                accu1 == accu0 || accu1 == 0.0 || accu1 == accu0 + p,
                                "{accu0} + {p} -> {accu1}"
                            );
                            if p > 0.0 && accu1 == accu0 + p {
                                increments += 1;
                            }
                        }
                    }
                });
                assert!(o.unforced_drops > 0 && o.forced_drops == 0, "{o:?}");
                assert!(increments > 0);
            });
        }

        #[test]
        fn test13_accumulator_below_the_low_threshold_never_drops() {
            each_variant(|bytes, v6| {
                let config = PieConfig {
                    derandomize: true,
                    ..ns3_config()
                };
                // At most -0.16 + 1 = 0.84 < 0.85 when a packet is judged.
                let o = run(config, bytes, v6, Ecn::NotEct, ms(14), &mut |q, stage| {
                    if let Stage::BeforeEnqueue = stage {
                        q.vars.accu_prob = -0.16;
                    }
                });
                assert_eq!((o.unforced_drops, o.forced_drops), (0, 0), "{o:?}");
            });
        }

        #[test]
        fn test14_accumulator_above_the_high_threshold_always_drops() {
            each_variant(|bytes, v6| {
                let config = PieConfig {
                    derandomize: true,
                    max_burst: Duration::ZERO,
                    ..ns3_config()
                };
                let mut expected = 0;
                // At least 8.6 + 0.001 >= 8.5: every packet judged is dropped,
                // i.e. every arrival that finds more than two packets queued.
                let o = run(config, bytes, v6, Ecn::NotEct, ms(14), &mut |q, stage| {
                    if let Stage::BeforeEnqueue = stage {
                        q.vars.accu_prob = 8.6;
                        q.vars.prob = 0.001;
                        if q.len_packets() > 2 {
                            expected += 1;
                        }
                    }
                });
                assert!(expected > 0);
                assert_eq!(o.unforced_drops, expected, "{o:?}");
                assert_eq!(o.forced_drops, 0);
            });
        }
    }
}
