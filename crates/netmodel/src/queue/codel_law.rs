//! The CoDel control law (RFC 8289) shared by [`Codel`](super::Codel) and
//! each flow queue of [`FqCodel`](super::FqCodel).
//!
//! It follows Linux's `include/net/codel.h` and `codel_impl.h` step for step,
//! including their fixed-point arithmetic, so drop and mark times agree with
//! Linux and ns-3 to the bit:
//! - time is a `u32` count of 1024 ns units (`CODEL_SHIFT` = 10), compared
//!   with wrapping arithmetic;
//! - `1/sqrt(count)` is kept as a Q0.16 number refined by one Newton step
//!   per drop instead of computed exactly;
//! - the next drop is `drop_next + interval * rec_inv_sqrt`, a
//!   multiply-and-shift ("reciprocal scale") rather than a division.

use crate::packet::Packet;
use brisk_time::Instant;
use std::time::Duration;

/// CoDel's clock: nanoseconds divided by 1024, wrapping every ~73 minutes.
pub(crate) type CodelTime = u32;

const CODEL_SHIFT: u32 = 10;
/// `rec_inv_sqrt` has 16 significant bits; this shift makes it Q0.32.
const REC_INV_SQRT_SHIFT: u32 = 32 - 16;

pub(crate) fn codel_time(t: Instant) -> CodelTime {
    (t.as_nanos() >> CODEL_SHIFT) as u32
}

/// A configured duration in CoDel units, saturated so comparisons against
/// it stay within the signed half of the wrapping clock.
pub(crate) fn codel_duration(d: Duration) -> CodelTime {
    (d.as_nanos() >> CODEL_SHIFT).min(i32::MAX as u128) as u32
}

fn time_after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

fn time_after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

fn time_before(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// One Newton iteration towards `1/sqrt(count)`:
/// `x' = x/2 * (3 - count * x^2)`, with `x` in Q0.16 (0xFFFF is ~1.0).
/// Wrapping where Linux's unsigned C arithmetic wraps.
pub(crate) fn newton_step(rec_inv_sqrt: u16, count: u32) -> u16 {
    let invsqrt = u32::from(rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((u64::from(invsqrt) * u64::from(invsqrt)) >> 32) as u32;
    let val = (3u64 << 32).wrapping_sub(u64::from(count) * u64::from(invsqrt2));
    // Pre-shift by two so the next product fits in 64 bits.
    let val = ((val >> 2).wrapping_mul(u64::from(invsqrt))) >> (32 - 2 + 1);
    (val >> REC_INV_SQRT_SHIFT) as u16
}

/// `t + interval / sqrt(count)`, with `1/sqrt(count)` given as Q0.16.
pub(crate) fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let scale = u64::from(rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
    t.wrapping_add(((u64::from(interval) * scale) >> 32) as u32)
}

/// The settings of one CoDel instance, already in CoDel units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CodelParams {
    pub target: CodelTime,
    pub interval: CodelTime,
    /// Mark ECN-capable packets whose sojourn exceeds this (step marking).
    pub ce_threshold: Option<CodelTime>,
    /// Linux's `ce_threshold_selector`/`ce_threshold_mask`: when the mask is
    /// non-zero, step marking applies only to packets whose DS field
    /// (DSCP and ECN bits) masked equals the selector.
    pub ce_selector: u8,
    pub ce_mask: u8,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Below this backlog in bytes CoDel never drops: the queue holds less
    /// than one packet's worth of standing delay.
    pub mtu_bytes: u64,
}

impl CodelParams {
    pub(crate) fn new(
        target: Duration,
        interval: Duration,
        ecn: bool,
        mtu_bytes: u64,
    ) -> CodelParams {
        CodelParams {
            target: codel_duration(target),
            interval: codel_duration(interval),
            ce_threshold: None,
            ce_selector: 0,
            ce_mask: 0,
            ecn,
            mtu_bytes,
        }
    }

    fn step_marks(&self, packet: &Packet) -> bool {
        self.ce_mask == 0 || ds_field(packet) & self.ce_mask == self.ce_selector
    }
}

/// The IPv4 TOS byte or IPv6 traffic class: DSCP in the upper six bits,
/// ECN in the lower two.
fn ds_field(packet: &Packet) -> u8 {
    let b0 = packet.data.first().copied().unwrap_or(0);
    let b1 = packet.data.get(1).copied().unwrap_or(0);
    if b0 >> 4 == 4 {
        b1
    } else {
        (b0 << 4) | (b1 >> 4)
    }
}

/// What one CoDel instance did, for traces and reference tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodelCounters {
    /// Packets the control law dropped.
    pub dropped: u64,
    /// Packets the control law marked CE instead of dropping (Linux's
    /// `ecn_mark`, ns-3's "target exceeded" marks).
    pub target_marked: u64,
    /// Packets marked CE because their sojourn exceeded `ce_threshold`
    /// (Linux's `ce_mark`). Unlike Linux, and like ns-3, a packet the
    /// control law already marked is not counted again here.
    pub ce_threshold_marked: u64,
    /// Largest packet seen at dequeue, in bytes.
    pub max_packet_bytes: u64,
}

/// What [`CodelVars::dequeue`] needs from the queue it manages.
pub(crate) trait CodelSource {
    /// Removes the packet at the head, updating the backlog.
    fn pop(&mut self) -> Option<Packet>;
    /// The backlog the "less than one MTU" rule looks at, in bytes, after
    /// the last `pop`.
    fn backlog_bytes(&self) -> u64;
}

/// The state of one CoDel instance (Linux's `struct codel_vars`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CodelVars {
    /// Drops (or marks) since entering the dropping state, adjusted by the
    /// re-entry rule; drives the drop rate.
    pub count: u32,
    lastcount: u32,
    dropping: bool,
    /// `1/sqrt(count)` in Q0.16.
    rec_inv_sqrt: u16,
    /// When the sojourn time will have been above target for an interval;
    /// `None` while it is below.
    first_above_time: Option<CodelTime>,
    drop_next: CodelTime,
    /// Sojourn time of the last packet examined.
    ldelay: CodelTime,
    pub counters: CodelCounters,
}

impl CodelVars {
    pub(crate) fn is_dropping(&self) -> bool {
        self.dropping
    }

    /// Has the sojourn time of `packet` been above target for at least an
    /// interval (and is there more than one MTU queued)?
    fn should_drop(
        &mut self,
        packet: Option<&Packet>,
        params: &CodelParams,
        backlog_bytes: u64,
        now: CodelTime,
    ) -> bool {
        let Some(packet) = packet else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.wrapping_sub(codel_time(packet.enqueued_at));
        self.counters.max_packet_bytes = self.counters.max_packet_bytes.max(packet.len() as u64);
        if time_before(self.ldelay, params.target) || backlog_bytes <= params.mtu_bytes {
            // Went below: it must now stay above for a whole interval.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now.wrapping_add(params.interval));
                false
            }
            Some(t) => time_after(now, t),
        }
    }

    /// Signals congestion on `packet`: marks it if ECN is on and it is
    /// ECN-capable. Returns false when it must be dropped instead.
    fn try_mark(&mut self, packet: &mut Packet, params: &CodelParams) -> bool {
        let marked = params.ecn && packet.try_mark_ce();
        if marked {
            self.counters.target_marked += 1;
        }
        marked
    }

    /// CoDel's dequeue (RFC 8289 section 5.5, as in Linux's
    /// `codel_dequeue`): takes packets from `source` until one may leave,
    /// pushing the ones it drops onto `dropped`; sets `marked` if it marked
    /// the one it lets through CE. (Returned beside the packet, the flag
    /// left seven bytes of padding that each move copied in two
    /// overlapping halves, a stall.) Inlined into each queue's
    /// one call: left to the compiler it was sometimes called out of line,
    /// a tenth of FQ-CoDel's dequeue dearer.
    #[inline(always)]
    pub(crate) fn dequeue(
        &mut self,
        now: Instant,
        params: &CodelParams,
        source: &mut impl CodelSource,
        dropped: &mut Vec<Packet>,
        marked: &mut bool,
    ) -> Option<Packet> {
        let Some(mut packet) = source.pop() else {
            self.dropping = false;
            return None;
        };
        let now = codel_time(now);
        let drop = self.should_drop(Some(&packet), params, source.backlog_bytes(), now);
        if self.dropping {
            if !drop {
                // Sojourn time fell below target: leave the dropping state.
                self.dropping = false;
            } else {
                // A large backlog can make several drops due at once.
                while self.dropping && time_after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
                    if self.try_mark(&mut packet, params) {
                        *marked = true;
                        self.drop_next =
                            control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                        break;
                    }
                    self.counters.dropped += 1;
                    dropped.push(packet);
                    let Some(next) = source.pop() else {
                        self.should_drop(None, params, 0, now);
                        self.dropping = false;
                        return None;
                    };
                    packet = next;
                    if self.should_drop(Some(&packet), params, source.backlog_bytes(), now) {
                        self.drop_next =
                            control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if drop {
            if self.try_mark(&mut packet, params) {
                *marked = true;
            } else {
                self.counters.dropped += 1;
                dropped.push(packet);
                match source.pop() {
                    Some(next) => {
                        packet = next;
                        self.should_drop(Some(&packet), params, source.backlog_bytes(), now);
                    }
                    None => {
                        // Linux still enters the dropping state here; the
                        // next dequeue of an empty queue leaves it.
                        self.should_drop(None, params, 0, now);
                        self.enter_dropping(now, params);
                        return None;
                    }
                }
            }
            self.enter_dropping(now, params);
        }
        if let Some(ce) = params.ce_threshold
            && !*marked
            && time_after(self.ldelay, ce)
            && params.step_marks(&packet)
            && packet.try_mark_ce()
        {
            self.counters.ce_threshold_marked += 1;
            *marked = true;
        }
        Some(packet)
    }

    fn enter_dropping(&mut self, now: CodelTime, params: &CodelParams) {
        self.dropping = true;
        // If we were dropping recently, resume near the drop rate that
        // controlled the queue last time instead of starting over.
        let delta = self.count.wrapping_sub(self.lastcount);
        if delta > 1
            && time_before(
                now.wrapping_sub(self.drop_next),
                params.interval.wrapping_mul(16),
            )
        {
            self.count = delta;
            self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
        } else {
            self.count = 1;
            self.rec_inv_sqrt = u16::MAX;
        }
        self.lastcount = self.count;
        self.drop_next = control_law(now, params.interval, self.rec_inv_sqrt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux's Newton step written again with 128-bit intermediates, to
    /// check the shifts and truncations of the 64-bit version.
    fn newton_step_wide(rec_inv_sqrt: u16, count: u32) -> u16 {
        let x = u128::from(rec_inv_sqrt) << 16;
        let x2 = (x * x) >> 32;
        let three = 3u128 << 32;
        let v = three.checked_sub(u128::from(count) * x2).unwrap();
        (((((v >> 2) * x) >> 31) >> 16) & 0xFFFF) as u16
    }

    // ns-3 src/traffic-control/test/codel-queue-disc-test-suite.cc, test 3
    // ("NewtonStep arithmetic unit test"): the same spot checks, against an
    // independent wide-integer port of Linux's codel_Newton_step.
    #[test]
    fn newton_step_matches_linux_in_operating_range() {
        let mut rec = 0xffu16;
        while rec > 0 {
            let mut count = 1u32;
            while count < 0xff {
                assert_eq!(
                    newton_step(rec, count),
                    newton_step_wide(rec, count),
                    "rec {rec:#x} count {count}"
                );
                count *= 2;
            }
            rec /= 2;
        }
        // And along the path CoDel takes: one step per increment of count.
        let mut rec = u16::MAX;
        for count in 2..5000u32 {
            let next = newton_step(rec, count);
            assert_eq!(next, newton_step_wide(rec, count), "count {count}");
            rec = next;
        }
    }

    #[test]
    fn newton_steps_converge_to_reciprocal_sqrt() {
        // Repeated steps at a fixed count converge to 1/sqrt(count) from
        // anywhere in Newton's basin (below sqrt(3/count)), here 40% off.
        for count in [1u32, 2, 3, 4, 10, 100, 1000, 10_000] {
            let want = 1.0 / f64::from(count).sqrt();
            let mut rec = (0.6 * want * 65536.0) as u16;
            for _ in 0..20 {
                rec = newton_step(rec, count);
            }
            let got = f64::from(rec) / 65536.0;
            assert!(
                (got - want).abs() < 1e-3 * want + 2.0 / 65536.0,
                "{count}: {got} vs {want}"
            );
        }
        // As CoDel uses it: one step per increment of count.
        let mut rec = u16::MAX;
        for count in 2..=400u32 {
            rec = newton_step(rec, count);
        }
        let got = f64::from(rec) / 65536.0;
        assert!((got - 0.05).abs() < 0.005, "{got}");
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 4 ("ControlLaw arithmetic
    // unit test"): times 0..20 s in 100 ms steps, several rec_inv_sqrt.
    #[test]
    fn control_law_matches_linux_reciprocal_scale() {
        let interval = codel_duration(Duration::from_millis(100));
        assert_eq!(interval, 97_656);
        for step in 0..=200u64 {
            let t = codel_time(Instant::from_millis(step * 100));
            let mut rec = 0xffu16;
            while rec > 0 {
                let want = t + ((u64::from(interval) * (u64::from(rec) << 16)) >> 32) as u32;
                assert_eq!(control_law(t, interval, rec), want);
                rec /= 2;
            }
        }
        // interval / sqrt(count) in real units, within the Q0.16 rounding.
        let mut rec = u16::MAX;
        for count in 2..=50u32 {
            rec = newton_step(rec, count);
        }
        let next = control_law(0, interval, rec);
        let want = f64::from(interval) / 50f64.sqrt();
        assert!(
            (f64::from(next) - want).abs() / want < 0.01,
            "{next} vs {want}"
        );
    }

    #[test]
    fn wrapping_clock_compares_across_the_wrap() {
        assert!(time_after(5, u32::MAX - 5));
        assert!(time_before(u32::MAX - 5, 5));
        assert!(time_after_eq(7, 7));
        assert_eq!(codel_time(Instant::from_millis(5)), 4882);
        assert_eq!(
            codel_duration(Duration::from_secs(1 << 40)),
            i32::MAX as u32
        );
    }
}
