//! DualPI2, the DualQ Coupled AQM of L4S (RFC 9332), the way Linux's
//! sch_dualpi2 runs it.
//!
//! Two FIFOs share one buffer. Packets whose ECN field matches the mask
//! (ECT(1) and CE by default, the L4S identifier of RFC 9331) join the L
//! queue, all others the C (classic) queue. One PI controller (PI2) steers
//! the larger of the two head-of-line delays to `target` and yields a base
//! probability p'. The C queue drops Not-ECT packets and marks ECT(0) ones
//! with p_C = p'^2, the square suiting Reno and Cubic, whose rate goes as
//! 1/sqrt(p). The L queue marks with the coupled p_CL = k·p', which scalable
//! senders answer linearly, so with k = 2 both kinds get about the same rate
//! at equal RTT. On top, the L queue's own step AQM marks every packet that
//! waited longer than `step_threshold` (1 ms), which keeps L4S queues
//! shallow: p_L = max(p_CL, step).
//!
//! Overload: once k·p' passes 100% the traffic no longer responds to marks,
//! and L packets get the classic treatment, dropped with p_C like everyone
//! else (`drop_overload`), so unresponsive ECT(1) cannot starve the C queue.
//! A weighted round robin lets the L queue go first yet guarantees the C
//! queue its `classic_protection` share of bytes when both are backlogged.
//!
//! The arithmetic is Linux's fixed point: p' is a fraction of 2^32 − 1, and
//! the gains go through the same conversions as in tc and the kernel (see
//! [`Pi2Gains`]), so a config behaves like `tc qdisc add ... dualpi2` with
//! the same options. Marks and drops happen at dequeue unless `drop_early`.
//! The probability update runs lazily and exactly (see `UpdateTimer` in
//! `pi_common.rs`).

use super::pi_common::UpdateTimer;
use super::{DropReason, Limits, Queue, QueueEvent, QueueStats};
use crate::Rng;
use crate::packet::Packet;
use brisk_time::Instant;
use brisk_wire::Ecn;
use rand::Rng as _;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// p' = 1 in Linux's fixed point.
const MAX_PROB: u32 = u32::MAX;
/// tc exchanges alpha and beta with the kernel in 1/256 Hz.
const TC_GAIN_SCALE: f64 = 256.0;
/// The largest gain the kernel accepts, in tc units (`ALPHA_BETA_MAX`).
const TC_GAIN_MAX: u32 = (1 << 31) - 1;
/// iproute2's `RTT_TYP_TO_MAX`: the RTT given alone is taken as 6x smaller
/// (or larger) than the one omitted.
const RTT_TYP_TO_MAX: u32 = 6;

/// Which ECN codepoints go to the L queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// ECT(1) and CE: the L4S identifier (RFC 9331). The default.
    #[default]
    L4sEct,
    /// Every ECN-capable packet, ECT(0) included (a datacenter setting).
    AnyEct,
}

impl EcnMask {
    fn bits(self) -> u8 {
        match self {
            EcnMask::L4sEct => 0b01,
            EcnMask::AnyEct => 0b11,
        }
    }
}

/// When the L queue's step AQM marks: `"1ms"` (a packet's sojourn time) or
/// `"3p"` (packets still queued behind it), as tc's `step_thresh` reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepThreshold {
    /// Mark when the packet's sojourn time exceeds this.
    Time(Duration),
    /// Mark when more than this many packets remain queued behind it.
    Packets(u32),
}

impl Default for StepThreshold {
    fn default() -> Self {
        StepThreshold::Time(Duration::from_millis(1))
    }
}

impl StepThreshold {
    /// Parses tc's spellings: a duration, or a count with suffix p, pkt,
    /// pkts, packet or packets.
    pub fn parse(s: &str) -> Result<StepThreshold, String> {
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (count, unit) = t.split_at(digits);
        if ["p", "pkt", "pkts", "packet", "packets"].contains(&unit.trim()) {
            return count
                .parse()
                .map(StepThreshold::Packets)
                .map_err(|_| format!("expected a packet count like \"3p\", got {s:?}"));
        }
        crate::units::parse_duration(t)
            .map(StepThreshold::Time)
            .map_err(|_| format!("expected a step threshold like \"1ms\" or \"3p\", got {s:?}"))
    }
}

impl<'de> serde::Deserialize<'de> for StepThreshold {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = StepThreshold;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step threshold such as \"1ms\" or \"3p\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<StepThreshold, E> {
                StepThreshold::parse(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Why a DualPI2 configuration is not one Linux would accept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DualPi2ConfigError {
    /// `typical_rtt` is larger than `max_rtt`, so tc's derivation of target and gains does not apply.
    #[error("typical_rtt ({typical:?}) must not exceed max_rtt ({max:?})")]
    TypicalRttAboveMax {
        /// The configured `typical_rtt`.
        typical: Duration,
        /// The configured `max_rtt`.
        max: Duration,
    },
    /// `alpha` or `beta` is outside what Linux's fixed point holds (1/256 to 8388607 Hz).
    #[error("{name} = {hz} Hz cannot be represented: Linux takes 1/256 to 8388607 Hz")]
    GainOutOfRange {
        /// `"alpha"` or `"beta"`.
        name: &'static str,
        /// The configured gain, in Hz.
        hz: f64,
    },
    /// `coupling_factor` (RFC 9332's k) is 0, which would never mark L4S traffic by coupling.
    #[error("coupling_factor must be at least 1")]
    ZeroCoupling,
    /// `limit_packets` is 0: the queue could never hold a packet.
    #[error("limit_packets must be at least 1")]
    ZeroLimit,
}

/// `[queue.dualpi2]`. Defaults are Linux's (`tc qdisc add ... dualpi2`).
///
/// Give `typical_rtt` and/or `max_rtt` instead of `target`, `tupdate`,
/// `alpha` and `beta` to derive those four as tc does (they then win over
/// explicit values, as in tc); see [`DualPi2Config::from_rtt`].
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2Config {
    /// Both queues together; default 10000 packets.
    pub limit_packets: Option<usize>,
    /// Most bytes (whole IP datagrams) in both queues together; `None` (default) for no byte limit.
    #[serde(deserialize_with = "crate::units::opt_bytes::deserialize")]
    pub limit_bytes: Option<u64>,
    /// The delay PI2 steers the larger head-of-line delay to, default 15 ms.
    #[serde(with = "crate::units::duration")]
    pub target: Duration,
    /// How often p' is recomputed, default 16 ms.
    #[serde(with = "super::pi_common::period")]
    pub tupdate: Duration,
    /// Integral gain in Hz; default 41/256 (about 0.16), Linux's value.
    #[serde(with = "super::pi_common::gain_hz")]
    pub alpha: f64,
    /// Proportional gain in Hz; default 819/256 (about 3.2), Linux's value.
    #[serde(with = "super::pi_common::gain_hz")]
    pub beta: f64,
    /// The RTT most flows have; derives target and friends (tc's
    /// `typical_rtt`). Alone, max_rtt is taken 6x larger.
    #[serde(deserialize_with = "crate::units::opt_duration::deserialize")]
    pub typical_rtt: Option<Duration>,
    /// The largest RTT the controller must keep stable (tc's `max_rtt`).
    /// Alone, typical_rtt is taken 6x smaller.
    #[serde(deserialize_with = "crate::units::opt_duration::deserialize")]
    pub max_rtt: Option<Duration>,
    /// k in p_CL = k·p'; 2 gives rate fairness at equal RTT.
    pub coupling_factor: u8,
    /// The L queue's step AQM threshold, default "1ms".
    pub step_threshold: StepThreshold,
    /// The step only applies to packets that found at least this many
    /// packets in the L queue; default 0 (always).
    pub min_qlen_step: u32,
    /// The C queue's guaranteed share of bytes when both queues are
    /// backlogged, default "10%".
    #[serde(with = "crate::units::probability")]
    pub classic_protection: f64,
    /// Which codepoints are L4S; default `"l4s_ect"`.
    pub ecn_mask: EcnMask,
    /// On overload, drop L packets with p_C (true, the default) rather than
    /// keep marking them and let the queue overflow.
    pub drop_overload: bool,
    /// Decide drops and PI marks at enqueue instead of dequeue (default).
    pub drop_early: bool,
    /// Link MTU: no PI drop or mark while less than two MTUs are queued,
    /// and the scheduler's credit unit. Linux counts the link header (1514
    /// on Ethernet); Brisk lengths are IP only.
    pub mtu_bytes: u32,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            limit_packets: Some(10_000),
            limit_bytes: None,
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(16),
            alpha: 41.0 / TC_GAIN_SCALE,
            beta: 819.0 / TC_GAIN_SCALE,
            typical_rtt: None,
            max_rtt: None,
            coupling_factor: 2,
            step_threshold: StepThreshold::default(),
            min_qlen_step: 0,
            classic_protection: 0.1,
            ecn_mask: EcnMask::L4sEct,
            drop_overload: true,
            drop_early: false,
            mtu_bytes: 1500,
        }
    }
}

/// Whole microseconds, the unit tc reads durations in.
fn micros_u32(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

impl DualPi2Config {
    /// The two limit fields as one [`Limits`].
    pub fn limits(&self) -> Limits {
        Limits::new(self.limit_packets, self.limit_bytes)
    }

    /// The defaults with target, tupdate, alpha and beta derived from the
    /// flows' typical and largest RTT, by iproute2's rules (tc/q_dualpi2.c):
    /// target = typical_rtt, tupdate = min(typical_rtt, max_rtt / 3),
    /// alpha = 0.1 · tupdate / max_rtt² and beta = 0.3 / max_rtt (RFC 9332
    /// Appendix A's stability rules), computed in whole microseconds with
    /// tc's single-precision constants.
    pub fn from_rtt(
        typical_rtt: Duration,
        max_rtt: Duration,
    ) -> Result<DualPi2Config, DualPi2ConfigError> {
        let c = DualPi2Config {
            typical_rtt: Some(typical_rtt),
            max_rtt: Some(max_rtt),
            ..DualPi2Config::default()
        }
        .resolved();
        c.validate_with(Some((typical_rtt, max_rtt)))?;
        Ok(c)
    }

    /// This config with `typical_rtt`/`max_rtt`, if set, turned into
    /// target, tupdate, alpha and beta (and cleared).
    pub fn resolved(&self) -> DualPi2Config {
        let mut c = self.clone();
        let (typ, max) = match (self.typical_rtt, self.max_rtt) {
            (None, None) => return c,
            (Some(t), Some(m)) => (micros_u32(t).max(1), micros_u32(m).max(1)),
            (Some(t), None) => {
                let t = micros_u32(t).max(1);
                (t, t.saturating_mul(RTT_TYP_TO_MAX))
            }
            (None, Some(m)) => {
                let m = micros_u32(m).max(1);
                ((m / RTT_TYP_TO_MAX).max(1), m)
            }
        };
        let max_f = f64::from(max);
        let third = max_f / 3.0;
        let tupdate = if f64::from(typ) < third {
            typ
        } else {
            third as u32
        }
        .max(1);
        c.target = Duration::from_micros(u64::from(typ));
        c.tupdate = Duration::from_micros(u64::from(tupdate));
        c.alpha = f64::from(tupdate) / max_f / max_f * 1e6 * f64::from(0.1f32);
        c.beta = f64::from(0.3f32) / max_f * 1e6;
        c.typical_rtt = None;
        c.max_rtt = None;
        c
    }

    /// Checks what Linux and tc would refuse: a typical RTT above the
    /// maximum, gains tc cannot express, a zero coupling factor or limit.
    /// `DualPi2::new` never fails; it clamps such values instead.
    pub fn validate(&self) -> Result<(), DualPi2ConfigError> {
        self.resolved()
            .validate_with(self.typical_rtt.zip(self.max_rtt))
    }

    fn validate_with(&self, rtts: Option<(Duration, Duration)>) -> Result<(), DualPi2ConfigError> {
        if let Some((typical, max)) = rtts.filter(|(typical, max)| typical > max) {
            return Err(DualPi2ConfigError::TypicalRttAboveMax { typical, max });
        }
        for (name, hz) in [("alpha", self.alpha), ("beta", self.beta)] {
            let units = hz * TC_GAIN_SCALE;
            if !(1.0..=f64::from(TC_GAIN_MAX)).contains(&units) {
                return Err(DualPi2ConfigError::GainOutOfRange { name, hz });
            }
        }
        if self.coupling_factor == 0 {
            return Err(DualPi2ConfigError::ZeroCoupling);
        }
        if self.limit_packets == Some(0) {
            return Err(DualPi2ConfigError::ZeroLimit);
        }
        Ok(())
    }
}

/// PI2's gains in Linux's fixed point: 64 times the change of p' (in units
/// of 1/(2^32 − 1)) per nanosecond of delay error.
///
/// A gain in Hz becomes tc units by truncating `hz * 256` (as tc does), and
/// the kernel scales those to its internal units, truncating again. So the
/// controller's effective gains differ slightly from the configured ones,
/// and `tc qdisc show`, which converts back, prints slightly smaller values
/// still (0.05 Hz is shown as 0.042969).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pi2Gains {
    alpha: u32,
    beta: u32,
}

impl Pi2Gains {
    /// Converts gains in Hz as tc does; values past Linux's ceiling saturate and NaN becomes 0.
    pub fn from_hz(alpha_hz: f64, beta_hz: f64) -> Pi2Gains {
        // `as` saturates (and maps NaN to 0); the kernel's ceiling is lower.
        let tc = |hz: f64| ((hz * TC_GAIN_SCALE) as u32).min(TC_GAIN_MAX);
        Pi2Gains {
            alpha: scale_gain(tc(alpha_hz)),
            beta: scale_gain(tc(beta_hz)),
        }
    }

    /// (alpha, beta) as the update applies them, in Hz.
    pub fn effective_hz(&self) -> (f64, f64) {
        let hz = |g: u32| f64::from(g) * 1e9 / (64.0 * f64::from(MAX_PROB));
        (hz(self.alpha), hz(self.beta))
    }

    /// (alpha, beta) as `tc qdisc show` prints them, in Hz.
    pub fn reported_hz(&self) -> (f64, f64) {
        let hz = |g: u32| f64::from(unscale_gain(g)) / TC_GAIN_SCALE;
        (hz(self.alpha), hz(self.beta))
    }
}

/// The kernel's `dualpi2_scale_alpha_beta`.
fn scale_gain(tc_units: u32) -> u32 {
    let scaled = (u64::from(tc_units) * u64::from(MAX_PROB)) >> 2;
    u32::try_from(scaled / 1_000_000_000).unwrap_or(u32::MAX)
}

/// The kernel's `dualpi2_unscale_alpha_beta`, used when dumping.
fn unscale_gain(internal: u32) -> u32 {
    let units = ((u128::from(internal) * 1_000_000_000) << 2) / u128::from(MAX_PROB);
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// Counters of one of the two queues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubQueueStats {
    /// Packets accepted into this queue.
    pub enqueued_packets: u64,
    /// Bytes (whole IP datagrams) accepted into this queue.
    pub enqueued_bytes: u64,
    /// Packets handed to the link from this queue.
    pub dequeued_packets: u64,
    /// Bytes (whole IP datagrams) handed to the link from this queue.
    pub dequeued_bytes: u64,
    /// Packets marked CE (each counted once, whatever marked it).
    pub marked: u64,
    /// Packets the AQM dropped instead of marking (ECN-incapable, or overload with `drop_overload`).
    pub dropped_aqm: u64,
    /// Packets dropped on arrival because the shared limit was reached.
    pub dropped_overflow: u64,
    /// Packets queued here now.
    pub backlog_packets: u64,
    /// Bytes (whole IP datagrams) queued here now.
    pub backlog_bytes: u64,
}

/// DualPI2's state as `tc -s qdisc show` reports it, plus the derived
/// probabilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DualPi2Stats {
    /// p', the PI2 output.
    pub prob_base: f64,
    /// p_C = p'^2: the C queue's drop/mark probability.
    pub prob_classic: f64,
    /// p_CL = min(k·p', 1): the coupled L4S marking probability.
    pub prob_coupled: f64,
    /// p_L = max(p_CL, step) for the packet now at the L queue's head.
    pub prob_l4s: f64,
    /// Head-of-line sojourn times now (zero when empty).
    pub delay_l: Duration,
    /// Head-of-line sojourn time of the C (Classic) queue.
    pub delay_c: Duration,
    /// Packets the step AQM marked.
    pub step_marks: u64,
    /// The scheduler's credit in bytes: positive means the C queue goes next.
    pub credit_bytes: i64,
    /// Counters of the L (L4S) queue.
    pub l: SubQueueStats,
    /// Counters of the C (Classic) queue.
    pub c: SubQueueStats,
}

/// A queued packet with what classification decided for it.
#[derive(Debug)]
struct Entry {
    packet: Packet,
    /// The codepoint at classification (drop decisions use it, not a CE the
    /// queue itself may have written since).
    ecn: Ecn,
    l4s: bool,
    apply_step: bool,
    marked: bool,
}

/// A DualPI2 queue.
#[derive(Debug)]
pub struct DualPi2 {
    config: DualPi2Config,
    limits: Limits,
    gains: Pi2Gains,
    rng: Rng,
    timer: UpdateTimer,
    /// p' of MAX_PROB.
    prob: u32,
    last_qdelay_ns: u64,
    /// Weights of the C and L queues in percent, and the WRR credit.
    wc: i64,
    wl: i64,
    credit: i64,
    credit_init: i64,
    l: VecDeque<Entry>,
    c: VecDeque<Entry>,
    l_stats: SubQueueStats,
    c_stats: SubQueueStats,
    step_marks: u64,
    events: VecDeque<QueueEvent>,
}

impl DualPi2 {
    /// `rng` draws the random marks and drops. The config is resolved (RTT
    /// fields applied) and clamped where Linux would refuse it (see
    /// [`DualPi2Config::validate`]): k = 0 counts as 1.
    pub fn new(config: DualPi2Config, rng: Rng) -> DualPi2 {
        let mut config = config.resolved();
        config.coupling_factor = config.coupling_factor.max(1);
        let wc = (config.classic_protection.clamp(0.0, 1.0) * 100.0).round() as i64;
        let wl = 100 - wc;
        let credit_init = i64::from(config.mtu_bytes) * (wc - wl);
        DualPi2 {
            limits: config.limits(),
            gains: Pi2Gains::from_hz(config.alpha, config.beta),
            rng,
            timer: UpdateTimer::new(config.tupdate),
            prob: 0,
            last_qdelay_ns: 0,
            wc,
            wl,
            credit: credit_init,
            credit_init,
            l: VecDeque::new(),
            c: VecDeque::new(),
            l_stats: SubQueueStats::default(),
            c_stats: SubQueueStats::default(),
            step_marks: 0,
            events: VecDeque::new(),
            config,
        }
    }

    /// The resolved config in use.
    pub fn config(&self) -> &DualPi2Config {
        &self.config
    }

    /// The PI2 gains the controller actually applies (from `alpha`/`beta` after tc's truncation).
    pub fn gains(&self) -> Pi2Gains {
        self.gains
    }

    /// When the next p' update is due (`None` before the first packet).
    /// Calling [`DualPi2::handle_timeout`] then is optional: every enqueue
    /// and dequeue catches up by itself.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer.next_update()
    }

    /// Runs every p' update due at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(at) = self.timer.next_due(now) {
            let before = (self.prob, self.last_qdelay_ns);
            self.update_probability(at);
            // With both queues empty the update no longer depends on the
            // time; once it changes nothing, neither will the rest.
            let idle = self.l.is_empty() && self.c.is_empty();
            if idle && before == (self.prob, self.last_qdelay_ns) {
                self.timer.skip_through(now);
            }
        }
    }

    /// Probabilities, delays and per-queue counters at `now` (after running
    /// any update due).
    pub fn dualpi2_stats(&mut self, now: Instant) -> DualPi2Stats {
        self.handle_timeout(now);
        let p = f64::from(self.prob) / f64::from(MAX_PROB);
        let prob_coupled = (p * f64::from(self.config.coupling_factor)).min(1.0);
        let step = self
            .l
            .front()
            .is_some_and(|e| e.apply_step && self.step_exceeded(e, self.l.len() - 1, now));
        let head_delay = |q: &VecDeque<Entry>| {
            q.front().map_or(Duration::ZERO, |e| {
                now.saturating_duration_since(e.packet.enqueued_at)
            })
        };
        DualPi2Stats {
            prob_base: p,
            prob_classic: p * p,
            prob_coupled,
            prob_l4s: if step { 1.0 } else { prob_coupled },
            delay_l: head_delay(&self.l),
            delay_c: head_delay(&self.c),
            step_marks: self.step_marks,
            credit_bytes: self.credit,
            l: self.l_stats,
            c: self.c_stats,
        }
    }

    /// Linux's `calculate_probability`: p' += alpha·(qdelay − target) +
    /// beta·(qdelay − qdelay at the last update), qdelay being the larger
    /// of the two head-of-line sojourn times at `at`.
    fn update_probability(&mut self, at: Instant) {
        let sojourn = |q: &VecDeque<Entry>| {
            q.front().map_or(0, |e| {
                u64::try_from(
                    at.saturating_duration_since(e.packet.enqueued_at)
                        .as_nanos(),
                )
                .unwrap_or(u64::MAX)
            })
        };
        let qdelay = sojourn(&self.l).max(sojourn(&self.c));
        let target = i128::try_from(self.config.target.as_nanos()).unwrap_or(i128::MAX);
        let (q, last) = (i128::from(qdelay), i128::from(self.last_qdelay_ns));
        let delta =
            (q - target) * i128::from(self.gains.alpha) + (q - last) * i128::from(self.gains.beta);
        self.last_qdelay_ns = qdelay;
        // Internal gains carry a factor 64 for precision (Linux's
        // ALPHA_BETA_GRANULARITY); division truncates toward zero as there.
        let p = (i128::from(self.prob) + delta / 64).clamp(0, i128::from(MAX_PROB));
        let mut p = u32::try_from(p).unwrap_or(MAX_PROB);
        if !self.config.drop_overload {
            // Keep p_CL at or below 100%, so overload never turns into drops.
            p = p.min(MAX_PROB / u32::from(self.config.coupling_factor));
        }
        self.prob = p;
    }

    /// True with probability `p` of MAX_PROB: certain at MAX_PROB, never at
    /// 0. (Linux compares `<=`, which fires at p = 0 once in 2^32 draws.)
    fn roll(&mut self, p: u32) -> bool {
        p == MAX_PROB || self.rng.random::<u32>() < p
    }

    fn backlog_bytes(&self) -> u64 {
        self.l_stats.backlog_bytes + self.c_stats.backlog_bytes
    }

    fn sub_stats(&mut self, l4s_queue: bool) -> &mut SubQueueStats {
        if l4s_queue {
            &mut self.l_stats
        } else {
            &mut self.c_stats
        }
    }

    /// Marks `e` CE, counting and reporting it once however many times the
    /// AQM decides to mark it.
    fn mark(&mut self, e: &mut Entry, now: Instant) -> bool {
        if !e.packet.try_mark_ce() {
            return false;
        }
        if !e.marked {
            e.marked = true;
            self.sub_stats(e.l4s).marked += 1;
            self.events.push_back(QueueEvent::Marked {
                at: now,
                packet_id: e.packet.id,
            });
        }
        true
    }

    /// Linux's `must_drop`: applies the PI2 probabilities to `e`, marking
    /// it where ECN allows; true when it must be dropped instead.
    fn must_drop(&mut self, e: &mut Entry, now: Instant) -> bool {
        if self.backlog_bytes() < 2 * u64::from(self.config.mtu_bytes) {
            return false;
        }
        let p = self.prob;
        let coupled = u64::from(p) * u64::from(self.config.coupling_factor);
        let overload = coupled > u64::from(MAX_PROB);
        if !e.l4s {
            // p_C = p'^2 as two independent draws.
            if self.roll(p) && self.roll(p) {
                if overload || e.ecn == Ecn::NotEct {
                    return true;
                }
                self.mark(e, now);
            }
            return false;
        }
        if overload {
            if self.config.drop_overload && self.roll(p) && self.roll(p) {
                return true;
            }
            self.mark(e, now);
            return false;
        }
        // The mask only admits ECN-capable packets to the L queue, so the
        // coupled probability always marks.
        let coupled = u32::try_from(coupled).unwrap_or(MAX_PROB);
        if self.roll(coupled) {
            self.mark(e, now);
        }
        false
    }

    /// Has the step threshold been crossed for `e`, leaving the L queue at
    /// `now` with `behind` packets still queued?
    fn step_exceeded(&self, e: &Entry, behind: usize, now: Instant) -> bool {
        match self.config.step_threshold {
            StepThreshold::Time(t) => now.saturating_duration_since(e.packet.enqueued_at) > t,
            StepThreshold::Packets(n) => behind > n as usize,
        }
    }

    /// Takes the next packet by Linux's WRR: the L queue goes first while
    /// the credit is not positive; each packet sent from one queue while
    /// the other waits moves the credit by its length times the other's
    /// weight. Returns the entry, whether it came from L, and the credit
    /// change to apply if it is sent.
    fn pick(&mut self) -> Option<(Entry, bool, i64)> {
        let c_waiting = !self.c.is_empty();
        if !self.l.is_empty() && (!c_waiting || self.credit <= 0) {
            let e = self.l.pop_front()?;
            let change = if c_waiting { self.wc } else { 0 };
            return Some((e, true, change));
        }
        let e = self.c.pop_front()?;
        let change = if self.l.is_empty() { 0 } else { -self.wl };
        Some((e, false, change))
    }

    fn discard(&mut self, now: Instant, e: Entry, reason: DropReason) {
        let s = self.sub_stats(e.l4s);
        match reason {
            DropReason::Overflow => s.dropped_overflow += 1,
            DropReason::Aqm => s.dropped_aqm += 1,
        }
        self.events.push_back(QueueEvent::Dropped {
            at: now,
            packet: e.packet,
            reason,
        });
    }
}

impl Queue for DualPi2 {
    fn name(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, now: Instant, packet: Packet) {
        self.handle_timeout(now);
        let ecn = packet.ecn();
        let l4s = ecn.bits() & self.config.ecn_mask.bits() != 0;
        let total = self.stats();
        let mut e = Entry {
            apply_step: l4s && self.l.len() >= self.config.min_qlen_step as usize,
            packet,
            ecn,
            l4s,
            marked: false,
        };
        let len = e.packet.len();
        if self.limits.would_overflow(
            total.backlog_packets as usize,
            total.backlog_bytes as usize,
            len,
        ) {
            self.discard(now, e, DropReason::Overflow);
            return;
        }
        if self.config.drop_early && self.must_drop(&mut e, now) {
            self.discard(now, e, DropReason::Aqm);
            return;
        }
        e.packet.enqueued_at = now;
        let s = self.sub_stats(l4s);
        s.enqueued_packets += 1;
        s.enqueued_bytes += len as u64;
        s.backlog_packets += 1;
        s.backlog_bytes += len as u64;
        if l4s {
            self.l.push_back(e);
        } else {
            self.c.push_back(e);
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.handle_timeout(now);
        loop {
            let Some((mut e, from_l, weight)) = self.pick() else {
                self.credit = self.credit_init;
                return None;
            };
            let len = e.packet.len();
            let s = self.sub_stats(from_l);
            s.backlog_packets -= 1;
            s.backlog_bytes -= len as u64;
            if !self.config.drop_early && self.must_drop(&mut e, now) {
                self.discard(now, e, DropReason::Aqm);
                continue;
            }
            if from_l
                && e.apply_step
                && self.step_exceeded(&e, self.l.len(), now)
                && self.mark(&mut e, now)
            {
                self.step_marks += 1;
            }
            self.credit += weight * len as i64;
            let s = self.sub_stats(from_l);
            s.dequeued_packets += 1;
            s.dequeued_bytes += len as u64;
            return Some(e.packet);
        }
    }

    fn stats(&self) -> QueueStats {
        let (l, c) = (&self.l_stats, &self.c_stats);
        QueueStats {
            enqueued_packets: l.enqueued_packets + c.enqueued_packets,
            enqueued_bytes: l.enqueued_bytes + c.enqueued_bytes,
            dequeued_packets: l.dequeued_packets + c.dequeued_packets,
            dequeued_bytes: l.dequeued_bytes + c.dequeued_bytes,
            dropped_overflow: l.dropped_overflow + c.dropped_overflow,
            dropped_aqm: l.dropped_aqm + c.dropped_aqm,
            marked: l.marked + c.marked,
            backlog_packets: l.backlog_packets + c.backlog_packets,
            backlog_bytes: l.backlog_bytes + c.backlog_bytes,
        }
    }

    fn poll_event(&mut self) -> Option<QueueEvent> {
        self.events.pop_front()
    }

    fn len_packets(&self) -> usize {
        (self.l_stats.backlog_packets + self.c_stats.backlog_packets) as usize
    }

    fn len_bytes(&self) -> usize {
        (self.l_stats.backlog_bytes + self.c_stats.backlog_bytes) as usize
    }

    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::ip;
    use std::net::SocketAddr;

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

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn dualpi2(config: DualPi2Config) -> DualPi2 {
        DualPi2::new(config, crate::rng(3, 0))
    }

    #[derive(serde::Deserialize)]
    struct Scenario {
        queue: crate::queue::QueueConfig,
    }

    fn parse(body: &str) -> Result<DualPi2Config, String> {
        let s: Scenario =
            toml::from_str(&format!("[queue.dualpi2]\n{body}")).map_err(|e| e.to_string())?;
        match s.queue {
            crate::queue::QueueConfig::DualPi2(c) => Ok(c),
            other => Err(format!("parsed as {other:?}")),
        }
    }

    #[test]
    fn defaults_are_linux_and_the_rfc() {
        // Linux's tc-testing vector a4c7 (tools/testing/selftests/tc-testing/
        // tc-tests/qdiscs/dualpi2.json) shows the defaults as "limit 10000p
        // ... step_thresh 1ms min_qlen_step 0p coupling_factor 2
        // drop_on_overload drop_dequeue classic_protection 10% l4s_ect".
        let c = DualPi2Config::default();
        assert_eq!(c.limit_packets, Some(10_000));
        assert_eq!(c.step_threshold, StepThreshold::Time(ms(1)));
        assert_eq!((c.min_qlen_step, c.coupling_factor), (0, 2));
        assert!(c.drop_overload && !c.drop_early);
        assert_eq!((c.classic_protection, c.ecn_mask), (0.1, EcnMask::L4sEct));
        assert_eq!((c.target, c.tupdate), (ms(15), ms(16)));
        assert_eq!(parse("").unwrap(), c);
        c.validate().unwrap();
        // RFC 9332's alpha 0.16 Hz and beta 3.2 Hz, within the kernel's
        // fixed-point rounding.
        let (alpha, beta) = Pi2Gains::from_hz(c.alpha, c.beta).effective_hz();
        assert!((alpha / 0.16 - 1.0).abs() < 0.002, "{alpha}");
        assert!((beta / 3.2 - 1.0).abs() < 0.002, "{beta}");
    }

    #[test]
    fn rtt_auto_configuration_matches_the_tc_testing_vectors() {
        // tools/testing/selftests/tc-testing/tc-tests/qdiscs/dualpi2.json:
        // 2130 "typical_rtt 20ms max_rtt 200ms" shows "target 20ms tupdate
        // 20ms alpha 0.042969 beta 1.496094"; 90c1 "max_rtt 300ms" shows
        // "target 50ms tupdate 50ms alpha 0.050781 beta 0.996094".
        let shown = |c: &DualPi2Config| {
            let (a, b) = Pi2Gains::from_hz(c.alpha, c.beta).reported_hz();
            (c.target, c.tupdate, format!("{a:.6}"), format!("{b:.6}"))
        };
        let c = DualPi2Config::from_rtt(ms(20), ms(200)).unwrap();
        let want = (
            ms(20),
            ms(20),
            "0.042969".to_string(),
            "1.496094".to_string(),
        );
        assert_eq!(shown(&c), want);
        assert_eq!(
            shown(
                &parse("typical_rtt = \"20ms\"\nmax_rtt = \"200ms\"")
                    .unwrap()
                    .resolved()
            ),
            want
        );
        // RFC 9332 Appendix A before any rounding: 0.1 * 20 ms / (200 ms)^2
        // and 0.3 / 200 ms (tc's float constants add ~1e-8).
        assert!((c.alpha - 0.05).abs() < 1e-7 && (c.beta - 1.5).abs() < 1e-7);

        let c = parse("max_rtt = \"300ms\"").unwrap();
        let want = (
            ms(50),
            ms(50),
            "0.050781".to_string(),
            "0.996094".to_string(),
        );
        assert_eq!(shown(&c.resolved()), want);
        // A queue built from it runs with those parameters.
        let q = dualpi2(c);
        assert_eq!((q.config().target, q.config().tupdate), (ms(50), ms(50)));
        assert_eq!(
            q.gains(),
            Pi2Gains::from_hz(q.config().alpha, q.config().beta)
        );

        // typical_rtt alone: max_rtt = 6 x 10 ms, tupdate = min(10, 60/3).
        let c = parse("typical_rtt = \"10ms\"").unwrap().resolved();
        assert_eq!((c.target, c.tupdate), (ms(10), ms(10)));
        assert!((c.alpha - 0.1 * 0.010 / (0.060 * 0.060)).abs() < 1e-6);
    }

    #[test]
    fn configs_linux_would_refuse_are_reported() {
        assert_eq!(
            DualPi2Config::from_rtt(ms(300), ms(200)),
            Err(DualPi2ConfigError::TypicalRttAboveMax {
                typical: ms(300),
                max: ms(200)
            })
        );
        // tc: "Large max_rtt ... rounds down alpha".
        let err = DualPi2Config::from_rtt(ms(100), Duration::from_secs(20)).unwrap_err();
        assert!(matches!(
            err,
            DualPi2ConfigError::GainOutOfRange { name: "alpha", .. }
        ));
        let zero_k = DualPi2Config {
            coupling_factor: 0,
            ..DualPi2Config::default()
        };
        assert_eq!(zero_k.validate(), Err(DualPi2ConfigError::ZeroCoupling));
        // The queue itself never fails: k = 0 runs as k = 1.
        assert_eq!(dualpi2(zero_k).config().coupling_factor, 1);
    }

    #[test]
    fn toml_spells_options_as_tc_does() {
        // The option vectors of dualpi2.json: 456b step_thresh 3p, 7b3c
        // any_ect, 49a3 overflow, d0a1 drop_enqueue, 610c min_qlen_step 1,
        // b4fa coupling_factor 1, 37f1 classic_protection 0.
        let c = parse(
            "step_threshold = \"3p\"\necn_mask = \"any_ect\"\ndrop_overload = false\n\
             drop_early = true\nmin_qlen_step = 1\ncoupling_factor = 1\nclassic_protection = \"0%\"",
        )
        .unwrap();
        assert_eq!(c.step_threshold, StepThreshold::Packets(3));
        assert_eq!(c.ecn_mask, EcnMask::AnyEct);
        assert!(!c.drop_overload && c.drop_early);
        assert_eq!(
            (c.min_qlen_step, c.coupling_factor, c.classic_protection),
            (1, 1, 0.0)
        );
        assert_eq!(
            parse("step_threshold = \"500us\"").unwrap().step_threshold,
            StepThreshold::Time(Duration::from_micros(500))
        );
        for (bad, field) in [
            ("\nstep_threshold = \"3 parsecs\"", "parsecs"),
            ("\necn_mask = \"ect0\"", "ecn_mask"),
            ("\ntupdate = \"0s\"", "tupdate"),
            ("\nmax_rtt = \"long\"", "max_rtt"),
            ("\nclassic_protection = \"110%\"", "classic_protection"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("line 3") && err.contains(field), "{err}");
        }
    }

    #[test]
    fn classification_follows_the_ecn_mask() {
        for v6 in [false, true] {
            let mut q = dualpi2(DualPi2Config::default());
            for (i, ecn) in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce]
                .into_iter()
                .enumerate()
            {
                q.enqueue(Instant::ZERO, packet(i as u64, 100, ecn, v6));
            }
            let s = q.dualpi2_stats(Instant::ZERO);
            assert_eq!((s.l.enqueued_packets, s.c.enqueued_packets), (2, 2));
            let any = DualPi2Config {
                ecn_mask: EcnMask::AnyEct,
                ..DualPi2Config::default()
            };
            let mut q = dualpi2(any);
            for (i, ecn) in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce]
                .into_iter()
                .enumerate()
            {
                q.enqueue(Instant::ZERO, packet(i as u64, 100, ecn, v6));
            }
            let s = q.dualpi2_stats(Instant::ZERO);
            assert_eq!((s.l.enqueued_packets, s.c.enqueued_packets), (3, 1));
        }
    }

    /// Fills both queues at t = 0 and drains them at t = 0 (no update, no
    /// sojourn: nothing is marked or dropped), returning the order served.
    fn wrr_order(classic_protection: f64) -> Vec<bool> {
        let mut q = dualpi2(DualPi2Config {
            classic_protection,
            ..DualPi2Config::default()
        });
        for i in 0..200 {
            q.enqueue(Instant::ZERO, packet(i, 1500, Ecn::Ect1, i % 2 == 0));
            q.enqueue(
                Instant::ZERO,
                packet(1000 + i, 1500, Ecn::NotEct, i % 2 == 1),
            );
        }
        std::iter::from_fn(|| q.dequeue(Instant::ZERO))
            .map(|p| p.id < 1000)
            .collect()
    }

    #[test]
    fn scheduler_gives_the_classic_queue_its_weight() {
        // Credit starts at mtu * (10 - 90); each L packet sent while C waits
        // adds 10 * len, each C packet sent while L waits takes 90 * len:
        // with equal sizes, nine L packets then one C, over and over.
        let order = wrr_order(0.1);
        assert_eq!(order.len(), 400);
        let first_c: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, from_l)| !**from_l)
            .map(|(i, _)| i)
            .take(5)
            .collect();
        assert_eq!(first_c, vec![9, 19, 29, 39, 49]);
        // The L queue runs out after 200 + 22 packets; the rest is C.
        assert!(order[..222].iter().filter(|l| !**l).count() == 22);
        // Without protection C waits for L to empty.
        let order = wrr_order(0.0);
        assert!(order[..200].iter().all(|l| *l) && order[200..].iter().all(|l| !*l));
    }

    #[test]
    fn overload_drops_l4s_like_classic_unless_told_to_overflow() {
        for drop_overload in [true, false] {
            let mut q = dualpi2(DualPi2Config {
                drop_overload,
                ..DualPi2Config::default()
            });
            for i in 0..4000 {
                let ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
                q.enqueue(Instant::ZERO, packet(i, 1000, ecn, false));
            }
            // p' = 0.8: k·p' = 1.6 is overload; p_C = 0.64.
            q.prob = (0.8 * f64::from(MAX_PROB)) as u32;
            let out: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO)).collect();
            let s = q.dualpi2_stats(Instant::ZERO);
            // Classic ECT(0) is dropped, not marked, in overload.
            let c_drop = s.c.dropped_aqm as f64 / 2000.0;
            assert!((c_drop - 0.64).abs() < 0.05, "{c_drop}");
            assert_eq!(s.c.marked, 0);
            // Every L packet is dropped (with p_C) or marked.
            let l_out: Vec<&Packet> = out.iter().filter(|p| p.id % 2 == 0).collect();
            assert!(l_out.iter().all(|p| p.ecn() == Ecn::Ce));
            let l_drop = s.l.dropped_aqm as f64 / 2000.0;
            if drop_overload {
                assert!((l_drop - 0.64).abs() < 0.05, "{l_drop}");
            } else {
                assert_eq!(s.l.dropped_aqm, 0);
            }
            assert_eq!(s.l.marked as usize, l_out.len());
        }
    }

    #[test]
    fn coupled_marking_below_overload_and_two_mtu_floor() {
        let mut q = dualpi2(DualPi2Config::default());
        for i in 0..4000 {
            let ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct };
            q.enqueue(Instant::ZERO, packet(i, 1000, ecn, true));
        }
        // p' = 0.3: p_CL = 0.6 marks L; p_C = 0.09 drops Not-ECT.
        q.prob = (0.3 * f64::from(MAX_PROB)) as u32;
        let out: Vec<Packet> = std::iter::from_fn(|| q.dequeue(Instant::ZERO)).collect();
        let s = q.dualpi2_stats(Instant::ZERO);
        assert!((s.prob_coupled - 0.6).abs() < 1e-9 && (s.prob_classic - 0.09).abs() < 1e-9);
        let l_marked = s.l.marked as f64 / 2000.0;
        assert!((l_marked - 0.6).abs() < 0.05, "{l_marked}");
        assert_eq!(s.l.dropped_aqm, 0);
        let c_dropped = s.c.dropped_aqm as f64 / 2000.0;
        assert!((c_dropped - 0.09).abs() < 0.03, "{c_dropped}");
        // The last two packets left with less than two MTUs behind them.
        assert!(out[out.len() - 2..].iter().all(|p| p.ecn() != Ecn::Ce));
    }

    #[test]
    fn a_long_idle_spell_ends_at_zero_on_the_update_grid() {
        let mut q = dualpi2(DualPi2Config::default());
        q.enqueue(Instant::ZERO, packet(1, 1000, Ecn::NotEct, false));
        q.prob = MAX_PROB / 2;
        q.dequeue(Instant::ZERO);
        let s = q.dualpi2_stats(Instant::from_secs_f64(86_400.0));
        assert_eq!(s.prob_base, 0.0);
        let next = q.poll_timeout().unwrap();
        assert!(next > Instant::from_secs_f64(86_400.0));
        assert!(next <= Instant::from_secs_f64(86_400.0) + ms(16));
    }
}
