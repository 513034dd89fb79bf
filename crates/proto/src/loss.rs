//! Loss detection: RACK-style time and packet thresholds that adapt to
//! reordering, tail-loss probes instead of retransmission timeouts, and
//! persistent congestion (docs/PROTOCOL.md §6).
//!
//! A packet sent before the largest acknowledged one is declared lost when
//! - `packet_threshold` (3 at first) later packets were acknowledged, or
//! - it was sent more than `max(latest_rtt, smoothed_rtt) + reorder_window`
//!   before now, with `reorder_window = min_rtt / 4` at first (RFC 8985).
//!
//! Mobile paths reorder: one vendor's gear was seen delaying packets by 30
//! positions or 50 ms. When an acknowledgement arrives for a packet already
//! declared lost, the loss was spurious; the packet threshold then grows to
//! the reordering distance observed (up to `max_reordering_packets`, 30) and
//! the reordering window doubles (up to `max(smoothed_rtt,
//! max_reordering_delay)`, 50 ms by default). After 16 loss episodes with no
//! spurious one, both return to their defaults.
//!
//! No retransmission timeout ever declares packets lost or collapses the
//! window. When nothing is acknowledged for a probe timeout, the sender
//! sends one probe (two after a second consecutive timeout): new data if
//! there is any, else the newest unacknowledged data again. The probe
//! timeout is `max(2 * smoothed_rtt, smoothed_rtt + 4 * rttvar) +
//! max_ack_delay`, the TLP timer of RFC 8985 §7.2 made no shorter than
//! RFC 9002's PTO; it doubles only across consecutive timeouts, at most
//! `max_probe_doublings` times (2: four probe timeouts, a few round trips),
//! and never beyond `max_probe_timeout` (1 s) unless the probe timeout
//! itself is longer. Mobile links freeze and fade and then work again: an
//! unbounded backoff leaves a revived path idle for as long as it was
//! frozen, and a sender that probes rarely turns a loss burst counted in
//! packets into one counted in seconds, long enough for the idle timeout
//! to give up on a path that still delivers most of what is sent. Probes
//! are one or two packets per timeout, so the bound costs a dead path a
//! few packets per second until the idle timeout closes it.

use crate::rtt::{RttEstimator, TIMER_GRANULARITY};
use crate::sent_packets::{SentPacket, SentPackets};
use brisk_time::Instant;
use std::collections::BTreeMap;
use std::time::Duration;

/// Loss detection knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LossConfig {
    /// Initial packet reordering threshold (RFC 9002 kPacketThreshold).
    pub packet_threshold: u64,
    /// The packet threshold never grows beyond this.
    pub max_reordering_packets: u64,
    /// The reordering window never grows beyond `max(srtt, this)`.
    #[serde(with = "crate::config::millis")]
    pub max_reordering_delay: Duration,
    /// RFC 9002 kPersistentCongestionThreshold.
    pub persistent_congestion_threshold: u32,
    /// Probe backoff stops growing here (or at the unbacked-off probe
    /// timeout, if that is longer), so a path that comes back after a
    /// radio freeze is probed again within this long.
    #[serde(with = "crate::config::millis")]
    pub max_probe_timeout: Duration,
    /// Consecutive probe timeouts double the timeout at most this many
    /// times, so a stalled sender keeps probing every few round trips.
    pub max_probe_doublings: u32,
}

impl Default for LossConfig {
    fn default() -> Self {
        LossConfig {
            packet_threshold: 3,
            max_reordering_packets: 30,
            max_reordering_delay: Duration::from_millis(50),
            persistent_congestion_threshold: 3,
            max_probe_timeout: Duration::from_secs(1),
            max_probe_doublings: 2,
        }
    }
}

/// Loss episodes without a spurious loss before the thresholds reset.
const REORDER_PERSIST_EPISODES: u32 = 16;
const MAX_REORDER_MULT: u32 = 64;
/// Lost packets remembered at most, to recognise spurious losses.
const MAX_REMEMBERED_LOSSES: usize = 4096;
/// Backoff exponent cap: 2^16 PTOs is longer than any idle timeout.
const MAX_PTO_EXPONENT: u32 = 16;

#[derive(Debug, Clone, Copy)]
struct LostRecord {
    declared_at: Instant,
    /// The largest acknowledged packet number when the loss was declared.
    largest_acked: u64,
}

/// Packets one detection pass declared lost.
#[derive(Debug, Default)]
pub(crate) struct LostBatch {
    pub packets: Vec<(u64, SentPacket)>,
    /// RFC 9002 §7.6: ack-eliciting packets with consecutive numbers, all
    /// lost, spanning more than the persistent congestion duration.
    pub persistent_congestion: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct LossDetection {
    config: LossConfig,
    largest_acked: Option<u64>,
    packet_threshold: u64,
    reorder_mult: u32,
    episodes_without_spurious: u32,
    loss_time: Option<Instant>,
    pto_count: u32,
    last_eliciting_sent: Option<Instant>,
    first_rtt_sample: Option<Instant>,
    recently_lost: BTreeMap<u64, LostRecord>,
    spurious: u64,
}

impl LossDetection {
    pub(crate) fn new(config: LossConfig) -> Self {
        LossDetection {
            config,
            largest_acked: None,
            packet_threshold: config.packet_threshold.max(1),
            reorder_mult: 1,
            episodes_without_spurious: 0,
            loss_time: None,
            pto_count: 0,
            last_eliciting_sent: None,
            first_rtt_sample: None,
            recently_lost: BTreeMap::new(),
            spurious: 0,
        }
    }

    pub(crate) fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// Later packets acknowledged that make a packet lost: grows on a
    /// path that reorders.
    pub(crate) fn packet_threshold(&self) -> u64 {
        self.packet_threshold
    }

    pub(crate) fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Losses later shown to be reordering.
    pub(crate) fn spurious_losses(&self) -> u64 {
        self.spurious
    }

    /// When a packet not yet lost will be, by the time threshold.
    pub(crate) fn loss_time(&self) -> Option<Instant> {
        self.loss_time
    }

    pub(crate) fn on_eliciting_sent(&mut self, now: Instant) {
        self.last_eliciting_sent = Some(now);
    }

    pub(crate) fn on_rtt_sample(&mut self, now: Instant) {
        self.first_rtt_sample.get_or_insert(now);
    }

    /// An ACK acknowledged `largest`, newly acknowledging something: the
    /// path works, so the probe backoff restarts.
    pub(crate) fn on_ack(&mut self, largest: u64, newly_acked: bool) {
        if self.largest_acked.is_none_or(|l| largest > l) {
            self.largest_acked = Some(largest);
        }
        if newly_acked {
            self.pto_count = 0;
        }
    }

    pub(crate) fn reorder_window(&self, rtt: &RttEstimator) -> Duration {
        let cap = rtt.smoothed().max(self.config.max_reordering_delay);
        (rtt.min() / 4 * self.reorder_mult)
            .min(cap)
            .max(TIMER_GRANULARITY)
    }

    pub(crate) fn loss_delay(&self, rtt: &RttEstimator) -> Duration {
        rtt.latest().max(rtt.smoothed()) + self.reorder_window(rtt)
    }

    /// Removes and returns the packets now deemed lost, and arms
    /// [`loss_time`](Self::loss_time) for the next one (no packet held).
    #[cfg(test)]
    pub(crate) fn detect_lost(
        &mut self,
        now: Instant,
        sent: &mut SentPackets,
        rtt: &RttEstimator,
        max_ack_delay: Duration,
    ) -> LostBatch {
        self.detect_lost_held(now, sent, rtt, max_ack_delay, |_| None)
    }

    /// Removes and returns the packets now deemed lost, with a hold on some:
    /// `hold(pn)` names a later packet `(number, send time)` that stands
    /// in for `pn` in both thresholds (forward error correction: the
    /// block's last repair packet, which may still rebuild `pn`). A packet
    /// number of `u64::MAX` or no send time hold it outright, until its
    /// repair has left.
    pub(crate) fn detect_lost_held(
        &mut self,
        now: Instant,
        sent: &mut SentPackets,
        rtt: &RttEstimator,
        max_ack_delay: Duration,
        hold: impl Fn(u64) -> Option<(u64, Option<Instant>)>,
    ) -> LostBatch {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else {
            return LostBatch::default();
        };
        let delay = self.loss_delay(rtt);
        let mut lost = Vec::new();
        for (pn, p) in sent.iter() {
            if pn > largest {
                break;
            }
            let (count_pn, time_sent) = match hold(pn) {
                Some((after, at)) => (after, at),
                None => (pn, Some(p.time_sent)),
            };
            let by_time = time_sent.is_some_and(|t| t + delay <= now);
            let by_count = largest >= count_pn.saturating_add(self.packet_threshold);
            if by_time || by_count {
                lost.push(pn);
            } else if let Some(t) = time_sent {
                let at = t + delay;
                self.loss_time = Some(self.loss_time.map_or(at, |t| t.min(at)));
            }
        }
        if lost.is_empty() {
            // The common ACK: nothing lost, no run to measure.
            self.forget_old_losses(now, rtt);
            return LostBatch::default();
        }
        let packets: Vec<(u64, SentPacket)> = lost
            .into_iter()
            .filter_map(|pn| sent.remove(pn).map(|p| (pn, p)))
            .collect();
        if packets.iter().any(|(_, p)| p.ack_eliciting) {
            self.episodes_without_spurious += 1;
            if self.episodes_without_spurious >= REORDER_PERSIST_EPISODES {
                self.reset_reordering();
            }
        }
        for (pn, p) in &packets {
            if p.ack_eliciting {
                self.recently_lost.insert(
                    *pn,
                    LostRecord {
                        declared_at: now,
                        largest_acked: largest,
                    },
                );
            }
        }
        self.forget_old_losses(now, rtt);
        let pc = (rtt.pto_base() + max_ack_delay) * self.config.persistent_congestion_threshold;
        let persistent_congestion = self.persistent_congestion(&packets, pc);
        LostBatch {
            packets,
            persistent_congestion,
        }
    }

    /// A run is broken by any gap in the packet numbers (a packet in the
    /// gap was acknowledged or declared lost earlier); its span is measured
    /// between ack-eliciting packets sent after the first RTT sample.
    fn persistent_congestion(&self, lost: &[(u64, SentPacket)], duration: Duration) -> bool {
        let Some(first_sample) = self.first_rtt_sample else {
            return false;
        };
        let mut start: Option<Instant> = None;
        let mut prev: Option<u64> = None;
        for (pn, p) in lost {
            if prev.is_some_and(|q| q + 1 != *pn) {
                start = None;
            }
            prev = Some(*pn);
            if !p.ack_eliciting || p.time_sent < first_sample {
                continue;
            }
            match start {
                None => start = Some(p.time_sent),
                Some(s) if p.time_sent - s > duration => return true,
                Some(_) => {}
            }
        }
        false
    }

    fn forget_old_losses(&mut self, now: Instant, rtt: &RttEstimator) {
        if self.recently_lost.is_empty() {
            return;
        }
        let horizon = (rtt.smoothed() * 4).max(Duration::from_secs(1));
        self.recently_lost
            .retain(|_, r| r.declared_at + horizon > now);
        while self.recently_lost.len() > MAX_REMEMBERED_LOSSES {
            self.recently_lost.pop_first();
        }
    }

    fn reset_reordering(&mut self) {
        self.packet_threshold = self.config.packet_threshold.max(1);
        self.reorder_mult = 1;
        self.episodes_without_spurious = 0;
    }

    /// An ACK covered `range`: any packet in it that was declared lost was
    /// only reordered. Returns how many such packets there were.
    pub(crate) fn check_spurious(&mut self, range: std::ops::RangeInclusive<u64>) -> u64 {
        let pns: Vec<u64> = self.recently_lost.range(range).map(|(&pn, _)| pn).collect();
        for pn in &pns {
            let Some(r) = self.recently_lost.remove(pn) else {
                continue;
            };
            self.spurious += 1;
            let distance = r.largest_acked.saturating_sub(*pn) + 1;
            self.packet_threshold = self.packet_threshold.max(distance).min(
                self.config
                    .max_reordering_packets
                    .max(self.config.packet_threshold),
            );
            self.reorder_mult = (self.reorder_mult * 2).min(MAX_REORDER_MULT);
            self.episodes_without_spurious = 0;
        }
        pns.len() as u64
    }

    /// The probe timeout before backoff.
    pub(crate) fn pto_base(rtt: &RttEstimator, max_ack_delay: Duration) -> Duration {
        Duration::from_nanos(pto_base_nanos(rtt, max_ack_delay))
    }

    /// [`LossDetection::pto_base`] in integer nanoseconds.
    pub(crate) fn pto_base_nanos(rtt: &RttEstimator, max_ack_delay: Duration) -> u64 {
        pto_base_nanos(rtt, max_ack_delay)
    }

    /// The probe timeout with the backoff of consecutive timeouts.
    #[cfg(test)]
    pub(crate) fn pto(&self, rtt: &RttEstimator, max_ack_delay: Duration) -> Duration {
        Duration::from_nanos(self.pto_nanos(rtt, max_ack_delay))
    }

    /// [`LossDetection::pto`] in integer nanoseconds.
    fn pto_nanos(&self, rtt: &RttEstimator, max_ack_delay: Duration) -> u64 {
        let base = pto_base_nanos(rtt, max_ack_delay);
        let doublings = self
            .pto_count
            .min(self.config.max_probe_doublings)
            .min(MAX_PTO_EXPONENT);
        let backed_off = base.saturating_mul(1 << doublings);
        backed_off.min(base.max(nanos(self.config.max_probe_timeout)))
    }

    /// When to probe if nothing is acknowledged, given that ack-eliciting
    /// packets are in flight.
    pub(crate) fn pto_deadline(
        &self,
        rtt: &RttEstimator,
        max_ack_delay: Duration,
    ) -> Option<Instant> {
        let at = self.last_eliciting_sent?;
        Some(Instant::from_nanos(
            at.as_nanos()
                .saturating_add(self.pto_nanos(rtt, max_ack_delay)),
        ))
    }

    /// A probe timeout fired; returns how many probes to send.
    pub(crate) fn on_pto(&mut self) -> u8 {
        self.pto_count += 1;
        if self.pto_count == 1 { 1 } else { 2 }
    }
}

/// `d` in nanoseconds, saturating (at 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// [`LossDetection::pto_base`] in integer nanoseconds: the timers are
/// re-armed after every datagram in or out, so the RTT part is kept by the
/// estimator.
fn pto_base_nanos(rtt: &RttEstimator, max_ack_delay: Duration) -> u64 {
    rtt.pto_rtt_nanos().saturating_add(nanos(max_ack_delay))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;

    const MS: Duration = Duration::from_millis(1);

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn pkt(sent_ms: u64) -> SentPacket {
        SentPacket {
            time_sent: t(sent_ms),
            size_bytes: 1200,
            ack_eliciting: true,
            ecn: Ecn::NotEct,
            app_limited: false,
            largest_acked: None,
            frames: crate::sent_packets::SentFrames::new(),
            requeued: false,
        }
    }

    /// A 100 ms path: srtt = latest = min = 100 ms.
    fn rtt100() -> RttEstimator {
        let mut r = RttEstimator::new(Duration::from_millis(333));
        r.update(100 * MS, Duration::ZERO, t(100));
        r
    }

    fn sent(n: u64, spacing_ms: u64) -> SentPackets {
        let mut s = SentPackets::default();
        for pn in 0..n {
            s.insert(pn, pkt(pn * spacing_ms));
        }
        s
    }

    #[test]
    fn integer_pto_matches_the_duration_formula() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..500 {
            let mut rtt = RttEstimator::default();
            for k in 0..rng.random_range(1..4u64) {
                let latest = Duration::from_nanos(rng.random_range(1..5_000_000_000));
                let delay = Duration::from_nanos(rng.random_range(0..30_000_000));
                rtt.update(latest, delay, t(k));
            }
            let mad = Duration::from_nanos(rng.random_range(0..100_000_000));
            let base = (rtt.smoothed() * 2).max(rtt.pto_base()) + mad;
            assert_eq!(LossDetection::pto_base(&rtt, mad), base);
            let mut l = LossDetection::new(LossConfig::default());
            l.pto_count = rng.random_range(0..20);
            let backed_off = base * (1u32 << l.pto_count.min(2));
            let want = backed_off.min(base.max(l.config.max_probe_timeout));
            assert_eq!(l.pto(&rtt, mad), want);
        }
    }
    #[test]
    fn packet_threshold_declares_third_older_packet_lost() {
        let rtt = rtt100();
        let mut l = LossDetection::new(LossConfig::default());
        let mut s = sent(10, 1);
        for pn in 1..=3 {
            s.remove(pn);
        }
        l.on_ack(3, true);
        let b = l.detect_lost(t(110), &mut s, &rtt, 25 * MS);
        assert_eq!(
            b.packets.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(),
            vec![0]
        );
        assert!(!b.persistent_congestion);
    }

    #[test]
    fn time_threshold_uses_rtt_plus_quarter_min_rtt() {
        let rtt = rtt100();
        let mut l = LossDetection::new(LossConfig::default());
        let mut s = sent(3, 1);
        s.remove(1);
        l.on_ack(1, true);
        // Packet 0 was sent at 0 ms; loss delay is 100 + 25 = 125 ms.
        assert_eq!(l.loss_delay(&rtt), 125 * MS);
        assert!(
            l.detect_lost(t(124), &mut s, &rtt, 25 * MS)
                .packets
                .is_empty()
        );
        assert_eq!(l.loss_time(), Some(t(125)));
        let b = l.detect_lost(t(125), &mut s, &rtt, 25 * MS);
        assert_eq!(b.packets.len(), 1);
        assert_eq!(l.loss_time(), None);
    }

    #[test]
    fn spurious_losses_widen_thresholds_up_to_the_caps() {
        let rtt = rtt100();
        let mut l = LossDetection::new(LossConfig::default());
        let mut s = sent(100, 1);
        s.remove_range(1..=40);
        l.on_ack(40, true);
        let lost = l.detect_lost(t(41), &mut s, &rtt, 25 * MS);
        assert_eq!(lost.packets.len(), 1, "packet 0, 40 positions behind");
        // Packet 0 was only late: the threshold follows, capped at 30.
        assert_eq!(l.check_spurious(0..=0), 1);
        assert_eq!(l.packet_threshold(), 30);
        assert_eq!(l.reorder_window(&rtt), 50 * MS);
        for _ in 0..6 {
            l.recently_lost.insert(
                1,
                LostRecord {
                    declared_at: t(41),
                    largest_acked: 2,
                },
            );
            l.check_spurious(1..=1);
        }
        assert_eq!(
            l.reorder_window(&rtt),
            100 * MS,
            "capped at max(srtt, 50 ms)"
        );
        assert_eq!(l.spurious_losses(), 7);
        assert_eq!(l.check_spurious(0..=99), 0);
    }

    #[test]
    fn persistent_congestion_needs_a_long_run_of_consecutive_losses() {
        let rtt = rtt100();
        // PC duration: (100 + 4 * 50 + 25) * 3 = 975 ms.
        let mut l = LossDetection::new(LossConfig::default());
        l.on_rtt_sample(t(0));
        let mut s = sent(20, 100); // packets every 100 ms for 2 s
        s.insert(20, pkt(2000));
        l.on_ack(20, true);
        s.remove(20);
        let b = l.detect_lost(t(2100), &mut s, &rtt, 25 * MS);
        assert_eq!(b.packets.len(), 20);
        assert!(b.persistent_congestion);

        let mut l = LossDetection::new(LossConfig::default());
        l.on_rtt_sample(t(0));
        let mut s = sent(20, 100);
        s.remove(10); // acknowledged in the middle: no run spans 975 ms
        s.insert(20, pkt(2000));
        s.remove(20);
        l.on_ack(20, true);
        let b = l.detect_lost(t(2100), &mut s, &rtt, 25 * MS);
        assert_eq!(b.packets.len(), 19);
        assert!(!b.persistent_congestion);

        // Lost ACK-only packets between the data packets keep the run going.
        let mut l = LossDetection::new(LossConfig::default());
        l.on_rtt_sample(t(0));
        let mut s = SentPackets::default();
        for pn in 0..20 {
            s.insert(
                pn,
                SentPacket {
                    ack_eliciting: pn % 2 == 0,
                    ..pkt(pn * 100)
                },
            );
        }
        s.insert(20, pkt(2000));
        s.remove(20);
        l.on_ack(20, true);
        assert!(
            l.detect_lost(t(2100), &mut s, &rtt, 25 * MS)
                .persistent_congestion
        );
    }

    #[test]
    fn probe_timeout_is_twice_srtt_plus_ack_delay_and_backs_off_only_in_a_row() {
        let rtt = rtt100();
        let mut l = LossDetection::new(LossConfig::default());
        // max(200, 100 + 4 * 50) + 25 = 325 ms
        assert_eq!(l.pto(&rtt, 25 * MS), 325 * MS);
        let mut r = RttEstimator::new(Duration::from_millis(333));
        r.update(100 * MS, Duration::ZERO, t(0));
        for i in 1..20 {
            r.update(100 * MS, Duration::ZERO, t(i * 100));
        }
        assert!(
            l.pto(&r, 25 * MS) >= 225 * MS && l.pto(&r, 25 * MS) < 240 * MS,
            "low variance: ~2 srtt"
        );
        assert_eq!(l.pto_deadline(&rtt, 25 * MS), None, "nothing sent");
        l.on_eliciting_sent(t(1000));
        assert_eq!(l.on_pto(), 1);
        assert_eq!(l.pto(&rtt, 25 * MS), 2 * 325 * MS);
        assert_eq!(l.pto_deadline(&rtt, 25 * MS), Some(t(1000) + 2 * 325 * MS));
        assert_eq!(l.on_pto(), 2);
        assert_eq!(l.pto(&rtt, 25 * MS), 1000 * MS, "backoff capped at 1 s");
        l.on_pto();
        assert_eq!(l.pto(&rtt, 25 * MS), 1000 * MS);
        l.on_ack(5, false);
        assert_eq!(l.pto_count(), 3, "an ACK of nothing new keeps the backoff");
        l.on_ack(5, true);
        assert_eq!(l.pto_count(), 0);
    }

    #[test]
    fn a_stalled_sender_keeps_probing_every_four_probe_timeouts() {
        // 20 ms path: base = max(40, 20 + 4 * 10) + 25 = 85 ms.
        let mut r = RttEstimator::new(Duration::from_millis(333));
        r.update(20 * MS, Duration::ZERO, t(0));
        let mut l = LossDetection::new(LossConfig::default());
        assert_eq!(l.pto(&r, 25 * MS), 85 * MS);
        let gaps: Vec<Duration> = (0..6)
            .map(|_| {
                l.on_pto();
                l.pto(&r, 25 * MS)
            })
            .collect();
        assert_eq!(gaps[0], 170 * MS);
        assert!(gaps[1..].iter().all(|&g| g == 340 * MS), "{gaps:?}");
        // A path whose probe timeout alone exceeds the cap keeps it.
        let mut slow = RttEstimator::new(Duration::from_millis(333));
        slow.update(800 * MS, Duration::ZERO, t(0));
        assert_eq!(
            l.pto(&slow, 25 * MS),
            LossDetection::pto_base(&slow, 25 * MS)
        );
    }
}
