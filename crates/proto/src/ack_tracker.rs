//! The receiver's side of acknowledgements: which packet numbers arrived,
//! how many of them carried each ECN codepoint, and when to send an ACK.
//!
//! When (RFC 9000 §13.2 with the L4S twist of RFC 9331 §4.1's "prompt"
//! feedback):
//! - once more ack-eliciting packets than the threshold are unacknowledged:
//!   every second one by default, or as the sender last asked in an
//!   ACK_FREQUENCY frame;
//! - otherwise at most the ack delay after the first unacknowledged
//!   ack-eliciting packet: `max_ack_delay` (25 ms by default), or what the
//!   sender asked for;
//! - at once when an ack-eliciting packet arrives out of order (a gap opens
//!   or an older packet fills one), so the sender's loss detection and
//!   reordering heuristics work on fresh information;
//! - at once when the CE state of arriving packets changes, so a scalable
//!   controller sees the start and end of each congestion episode within a
//!   packet, as DCTCP's receiver does;
//! - at once when a packet ends a stream ([`AckTracker::ack_now`]): the end
//!   of a message, frame or response, after which the sender likely has
//!   nothing to send that would make the ACK due.
//!
//! The last three hold whatever the sender asks: they are what keeps loss
//! recovery and L4S feedback prompt when ACKs are otherwise sparse.
//!
//! The ranges double as the duplicate filter: a packet number already
//! recorded, or below the forgetting floor, is a replay.

use crate::congestion::EcnCounts;
use crate::frame::{AckEcnCounts, AckFrame, AckFrequencyFrame, emit_ack};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::collections::BTreeMap;
use std::time::Duration;

/// Ack-eliciting packets that may wait for an ACK unless the sender asks
/// otherwise: the next one is acknowledged at once.
pub(crate) const DEFAULT_ACK_ELICITING_THRESHOLD: u64 = 1;
/// Ranges kept at most; older ones are forgotten (and their packet numbers
/// count as duplicates from then on).
pub(crate) const MAX_TRACKED_RANGES: usize = 128;
/// Ranges one ACK frame reports at most (newest first).
pub(crate) const MAX_REPORTED_RANGES: usize = 32;

#[derive(Debug, Clone)]
pub(crate) struct AckTracker {
    /// Received packet numbers: start -> end (inclusive), disjoint, non-adjacent.
    ranges: BTreeMap<u64, u64>,
    /// Packet numbers below this are forgotten.
    floor: u64,
    largest: Option<(u64, Instant)>,
    ecn: EcnCounts,
    last_was_ce: bool,
    /// The longest an ACK waits: our `max_ack_delay`, or the sender's request.
    max_ack_delay: Duration,
    /// Ack-eliciting packets that may wait (see the module docs).
    threshold: u64,
    /// The sequence number of the ACK_FREQUENCY frame in force.
    frequency_sequence: Option<u64>,
    /// Ack-eliciting packets since the last ACK we sent.
    unacked_eliciting: u64,
    /// Some packet arrived since the last ACK we sent.
    pending: bool,
    immediate: bool,
    /// When the first ack-eliciting packet since the last ACK arrived.
    first_unacked_at: Option<Instant>,
}

impl AckTracker {
    pub(crate) fn new(max_ack_delay: Duration) -> Self {
        AckTracker {
            ranges: BTreeMap::new(),
            floor: 0,
            largest: None,
            ecn: EcnCounts::default(),
            last_was_ce: false,
            max_ack_delay,
            threshold: DEFAULT_ACK_ELICITING_THRESHOLD,
            frequency_sequence: None,
            unacked_eliciting: 0,
            pending: false,
            immediate: false,
            first_unacked_at: None,
        }
    }

    /// Applies an ACK_FREQUENCY frame the connection has validated, unless
    /// a newer one is already in force.
    pub(crate) fn on_ack_frequency(&mut self, f: &AckFrequencyFrame) {
        if self.frequency_sequence.is_some_and(|s| f.sequence <= s) {
            return;
        }
        self.frequency_sequence = Some(f.sequence);
        self.threshold = f.ack_eliciting_threshold;
        self.max_ack_delay = f.request_max_ack_delay;
        if self.unacked_eliciting > self.threshold {
            self.immediate = true;
        }
    }

    /// The largest packet number received, used to expand truncated ones.
    pub(crate) fn largest(&self) -> Option<u64> {
        self.largest.map(|(pn, _)| pn)
    }

    /// True when `pn` was received already or is too old to tell.
    pub(crate) fn is_duplicate(&self, pn: u64) -> bool {
        // The common case: a packet past the largest received, which no
        // range can hold.
        if let Some((largest, _)) = self.largest
            && pn > largest
        {
            return pn < self.floor;
        }
        pn < self.floor
            || self
                .ranges
                .range(..=pn)
                .next_back()
                .is_some_and(|(_, &end)| pn <= end)
    }

    /// Records an authenticated packet that was not a duplicate.
    pub(crate) fn on_packet(&mut self, now: Instant, pn: u64, ecn: Ecn, ack_eliciting: bool) {
        let out_of_order = match self.largest {
            Some((l, _)) => pn != l + 1,
            None => pn != 0,
        };
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        self.insert(pn);
        self.ecn.add(ecn, 1);
        let is_ce = ecn == Ecn::Ce;
        let ce_changed = is_ce != self.last_was_ce;
        self.last_was_ce = is_ce;
        self.pending = true;
        if ce_changed {
            self.immediate = true;
        }
        if ack_eliciting {
            self.unacked_eliciting += 1;
            if out_of_order || self.unacked_eliciting > self.threshold {
                self.immediate = true;
            }
            self.first_unacked_at.get_or_insert(now);
        }
    }

    /// Makes an ACK due at once: the packet just recorded ended a stream,
    /// after which the sender likely has nothing more to send soon.
    pub(crate) fn ack_now(&mut self) {
        self.immediate = true;
    }

    fn insert(&mut self, pn: u64) {
        // The common case: the next packet in order extends the newest
        // range, which has nothing above it to merge with.
        if let Some(mut newest) = self.ranges.last_entry()
            && newest.get().checked_add(1) == Some(pn)
        {
            *newest.get_mut() = pn;
            return;
        }
        let mut start = pn;
        let mut end = pn;
        if let Some((&s, &e)) = self.ranges.range(..=pn).next_back()
            && e + 1 >= pn
        {
            start = s;
            end = end.max(e);
            self.ranges.remove(&s);
        }
        if let Some(&e) = self.ranges.get(&(end + 1)) {
            self.ranges.remove(&(end + 1));
            end = e;
        }
        self.ranges.insert(start, end);
        while self.ranges.len() > MAX_TRACKED_RANGES {
            if let Some((_, e)) = self.ranges.pop_first() {
                self.floor = self.floor.max(e + 1);
            }
        }
    }

    /// An ACK should go out now (alone if nothing else is to be sent).
    pub(crate) fn ack_due(&self, now: Instant) -> bool {
        self.pending && (self.immediate || self.deadline().is_some_and(|d| d <= now))
    }

    /// Something arrived since the last ACK, so a packet that goes out
    /// anyway should carry one. This includes the peer's ACK-only packets:
    /// acknowledging them (for free, on packets sent anyway) lets the peer
    /// validate ECN on its ACK path and forget old ranges.
    pub(crate) fn has_pending(&self) -> bool {
        self.pending
    }

    /// When the delayed ACK is due.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if self.pending {
            self.first_unacked_at.map(|t| t + self.max_ack_delay)
        } else {
            None
        }
    }

    /// The ACK frame describing what arrived, newest ranges first.
    pub(crate) fn build(&self, now: Instant) -> Option<AckFrame> {
        let (_, received_at) = self.largest?;
        let ranges = self.reported_ranges().collect();
        Some(AckFrame {
            ranges,
            ack_delay: now - received_at,
            ecn: Some(self.ecn.into()),
        })
    }

    /// The ranges an ACK reports: newest first, at most
    /// `MAX_REPORTED_RANGES`, none below the floor.
    fn reported_ranges(&self) -> impl Iterator<Item = std::ops::RangeInclusive<u64>> + '_ {
        self.ranges
            .iter()
            .rev()
            .take(MAX_REPORTED_RANGES)
            .map(|(&s, &e)| s.max(self.floor)..=e)
    }

    /// Writes the frame [`build`](Self::build) would return, byte for byte,
    /// without collecting its ranges; returns its largest acknowledged
    /// number (0 without ranges, as [`AckFrame::largest`]), or `None` when
    /// nothing arrived yet.
    pub(crate) fn emit(&self, now: Instant, out: &mut Vec<u8>) -> Option<u64> {
        let (_, received_at) = self.largest?;
        let ranges = self.reported_ranges();
        let count = self.ranges.len().min(MAX_REPORTED_RANGES);
        let largest = emit_ack(out, ranges, count, now - received_at, Some(self.ecn.into()));
        Some(largest.unwrap_or(0))
    }

    /// The ACKs sent lately may all have been lost (the path they took
    /// died): the next packet carries an ACK again, whatever arrived since.
    pub(crate) fn report_again(&mut self) {
        if self.largest.is_some() {
            self.pending = true;
            self.immediate = true;
        }
    }

    /// An ACK frame went out.
    pub(crate) fn on_ack_sent(&mut self) {
        self.pending = false;
        self.immediate = false;
        self.unacked_eliciting = 0;
        self.first_unacked_at = None;
    }

    /// The peer acknowledged a packet of ours carrying an ACK whose largest
    /// was `largest`: it knows about everything up to there, so older ranges
    /// need not be reported again.
    ///
    /// Ranges wholly below the new floor are dropped; one that straddles it
    /// is kept whole and clipped when reported, which spares the map a
    /// removal and an insertion on every ACK of an ACK.
    pub(crate) fn on_ack_of_ack(&mut self, largest: u64) {
        if largest <= self.floor {
            return;
        }
        self.floor = largest;
        while let Some(first) = self.ranges.first_entry()
            && *first.get() < largest
        {
            first.remove();
        }
    }
}

/// The counts this receiver reports, as an ACK_ECN frame carries them.
impl From<EcnCounts> for AckEcnCounts {
    fn from(c: EcnCounts) -> Self {
        AckEcnCounts {
            ect0: c.ect0,
            ect1: c.ect1,
            ce: c.ce,
        }
    }
}

/// The peer's report from an ACK_ECN frame, as ECN validation and the
/// congestion controller count.
impl From<AckEcnCounts> for EcnCounts {
    fn from(c: AckEcnCounts) -> Self {
        EcnCounts {
            ect0: c.ect0,
            ect1: c.ect1,
            ce: c.ce,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn acks_every_second_eliciting_packet_or_after_max_delay() {
        let mut a = AckTracker::new(25 * MS);
        a.on_packet(t(0), 0, Ecn::NotEct, true);
        assert!(!a.ack_due(t(0)));
        assert_eq!(a.deadline(), Some(t(25)));
        assert!(a.ack_due(t(25)));
        a.on_packet(t(1), 1, Ecn::NotEct, true);
        assert!(a.ack_due(t(1)));
        let f = a.build(t(3)).unwrap();
        assert_eq!(f.ranges, vec![0..=1]);
        assert_eq!(f.ack_delay, 2 * MS);
        a.on_ack_sent();
        assert!(!a.ack_due(t(100)));
        // A non-eliciting packet alone never forces an ACK, but one rides
        // on the next packet that leaves anyway.
        a.on_packet(t(5), 2, Ecn::NotEct, false);
        assert!(!a.ack_due(t(100)) && a.has_pending());
    }

    #[test]
    fn an_ack_is_due_again_after_a_move_and_reports_everything_received() {
        let mut a = AckTracker::new(25 * MS);
        // Nothing received: nothing to report, so nothing becomes due.
        a.report_again();
        assert!(!a.ack_due(t(0)) && !a.has_pending());
        for pn in 0..4 {
            a.on_packet(t(pn), pn, Ecn::Ect0, true);
        }
        a.on_ack_sent();
        assert!(!a.ack_due(t(100)) && !a.has_pending());
        // The ACKs sent died with the path: the next packet reports all
        // that arrived, at once.
        a.report_again();
        assert!(a.ack_due(t(100)));
        assert_eq!(a.build(t(100)).unwrap().ranges, vec![0..=3]);
        a.on_ack_sent();
        assert!(!a.ack_due(t(200)));
    }

    fn frequency(sequence: u64, threshold: u64, delay_ms: u64) -> AckFrequencyFrame {
        AckFrequencyFrame {
            sequence,
            ack_eliciting_threshold: threshold,
            request_max_ack_delay: MS * delay_ms as u32,
        }
    }

    #[test]
    fn ack_frequency_frames_set_threshold_and_delay_newest_first() {
        let mut a = AckTracker::new(25 * MS);
        a.on_ack_frequency(&frequency(3, 4, 5));
        for pn in 0..5 {
            a.on_packet(t(pn), pn, Ecn::Ect1, true);
            assert_eq!(a.ack_due(t(pn)), pn == 4, "every 5th packet, pn {pn}");
        }
        assert_eq!(a.deadline(), Some(t(5)), "5 ms after the first");
        a.on_ack_sent();
        a.on_packet(t(10), 5, Ecn::Ect1, true);
        assert!(!a.ack_due(t(14)) && a.ack_due(t(15)));
        // An older or repeated frame changes nothing.
        a.on_ack_frequency(&frequency(2, 0, 1));
        a.on_ack_frequency(&frequency(3, 0, 1));
        assert!(!a.ack_due(t(14)));
        // Gaps and CE changes still cut the wait short.
        a.on_packet(t(11), 7, Ecn::Ect1, true);
        assert!(a.ack_due(t(11)));
        a.on_ack_sent();
        a.on_packet(t(12), 8, Ecn::Ce, true);
        assert!(a.ack_due(t(12)));
        a.on_ack_sent();
        // A newer frame asking for more ACKs than are now waiting for one
        // makes the ACK due at once.
        a.on_packet(t(13), 9, Ecn::Ce, true);
        a.on_packet(t(13), 10, Ecn::Ce, true);
        assert!(!a.ack_due(t(13)));
        a.on_ack_frequency(&frequency(4, 1, 25));
        assert!(a.ack_due(t(13)));
    }

    #[test]
    fn the_end_of_a_stream_is_acknowledged_at_once() {
        let mut a = AckTracker::new(25 * MS);
        a.on_packet(t(0), 0, Ecn::Ect1, true);
        assert!(!a.ack_due(t(0)));
        a.ack_now();
        assert!(a.ack_due(t(0)));
        a.on_ack_sent();
        a.on_packet(t(1), 1, Ecn::Ect1, true);
        assert!(!a.ack_due(t(1)), "once only");
    }

    #[test]
    fn reordering_and_ce_changes_ack_at_once() {
        let mut a = AckTracker::new(25 * MS);
        a.on_packet(t(0), 0, Ecn::Ect1, true);
        a.on_ack_sent();
        a.on_packet(t(1), 2, Ecn::Ect1, true); // gap: 1 missing
        assert!(a.ack_due(t(1)));
        a.on_ack_sent();
        a.on_packet(t(2), 1, Ecn::Ect1, true); // fills the gap late
        assert!(a.ack_due(t(2)));
        assert_eq!(a.build(t(2)).unwrap().ranges, vec![0..=2]);
        a.on_ack_sent();
        a.on_packet(t(3), 3, Ecn::Ce, true); // CE starts
        assert!(a.ack_due(t(3)));
        a.on_ack_sent();
        a.on_packet(t(4), 4, Ecn::Ce, true); // still CE: no hurry
        assert!(!a.ack_due(t(4)));
        a.on_packet(t(4), 5, Ecn::Ect1, false); // CE ends
        assert!(a.ack_due(t(4)));
        let e = a.build(t(4)).unwrap().ecn.unwrap();
        assert_eq!(
            e,
            AckEcnCounts {
                ect0: 0,
                ect1: 4,
                ce: 2
            }
        );
    }

    #[test]
    fn ranges_merge_report_newest_first_and_detect_duplicates() {
        let mut a = AckTracker::new(25 * MS);
        for pn in [0, 1, 2, 5, 6, 9, 4, 3] {
            assert!(!a.is_duplicate(pn));
            a.on_packet(t(0), pn, Ecn::NotEct, true);
            assert!(a.is_duplicate(pn));
        }
        assert_eq!(a.build(t(0)).unwrap().ranges, vec![9..=9, 0..=6]);
        assert!(!a.is_duplicate(7) && !a.is_duplicate(10));
        a.on_ack_of_ack(5);
        assert!(a.is_duplicate(4), "below the floor");
        assert!(!a.is_duplicate(7));
        assert_eq!(a.build(t(0)).unwrap().ranges, vec![9..=9, 5..=6]);
        // The clipped range still grows and merges.
        a.on_packet(t(0), 7, Ecn::NotEct, true);
        a.on_packet(t(0), 8, Ecn::NotEct, true);
        assert_eq!(a.build(t(0)).unwrap().ranges, vec![5..=9]);
        a.on_ack_of_ack(10);
        assert!(a.is_duplicate(9) && !a.is_duplicate(10));
        assert_eq!(a.ranges.len(), 0, "ranges below the floor are dropped");
    }

    #[test]
    fn range_count_is_bounded() {
        let mut a = AckTracker::new(25 * MS);
        for i in 0..1000u64 {
            a.on_packet(t(0), i * 2, Ecn::NotEct, true);
        }
        assert!(a.ranges.len() <= MAX_TRACKED_RANGES);
        assert_eq!(a.build(t(0)).unwrap().ranges.len(), MAX_REPORTED_RANGES);
        assert!(a.is_duplicate(0), "forgotten packets count as duplicates");
    }

    /// `emit` writes exactly the bytes of `build`'s frame and reports the
    /// same largest number.
    fn assert_emit_matches_build(a: &AckTracker, now: Instant) {
        let mut direct = Vec::new();
        let largest = a.emit(now, &mut direct);
        let built = a.build(now);
        let mut via_frame = Vec::new();
        if let Some(f) = &built {
            crate::frame::Frame::Ack(f.clone()).emit(&mut via_frame);
        }
        assert_eq!(direct, via_frame);
        assert_eq!(largest, built.map(|f| f.largest()));
    }

    #[test]
    fn emitting_in_place_matches_the_built_frame() {
        let mut a = AckTracker::new(25 * MS);
        assert_emit_matches_build(&a, t(0));
        for (i, pn) in [0u64, 1, 2, 5, 6, 9, 4, 3, 300, 70_000]
            .into_iter()
            .enumerate()
        {
            let ecn = [Ecn::Ect1, Ecn::Ce, Ecn::Ect0, Ecn::NotEct][i % 4];
            a.on_packet(t(i as u64), pn, ecn, true);
            assert_emit_matches_build(&a, t(40));
        }
        a.on_ack_of_ack(5);
        assert_emit_matches_build(&a, t(41));
        a.on_ack_of_ack(80_000);
        assert_emit_matches_build(&a, t(42));
        let mut many = AckTracker::new(25 * MS);
        for i in 0..100u64 {
            many.on_packet(t(0), i * 3, Ecn::Ect1, true);
        }
        assert_emit_matches_build(&many, t(3_000));
    }
}
