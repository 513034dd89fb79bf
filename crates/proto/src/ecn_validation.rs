//! ECN validation: is it safe to mark our packets ECN-capable on this path?
//!
//! RFC 9000 §13.4.2 and its Appendix A.4, extended for L4S. Some paths erase
//! the ECN field (bleaching), rewrite ECT(1) to ECT(0), mark every packet CE,
//! or drop ECN-capable packets outright. A sender that trusted such a path
//! would either ignore real congestion or starve itself, so it first tests:
//!
//! - **Testing.** The first [`TEST_PACKETS`] packets (or those sent within
//!   three PTOs) carry the preferred codepoint; after that, packets go out
//!   Not-ECT until the test packets are all acknowledged or lost.
//! - Every ACK that raises the largest acknowledged packet number is checked
//!   (RFC 9000 §13.4.2.1): the peer's reported ECT and CE counts must rise by
//!   at least the number of newly acknowledged packets we sent with that
//!   codepoint, must never fall, and must never exceed what we sent.
//! - The test ends **Capable** as soon as an ACK shows a test packet arrived
//!   with our codepoint intact (that codepoint's count rose). Once the
//!   budget is spent and every test packet is acknowledged or lost (or twice
//!   the test period has passed, since packets that are never acknowledged,
//!   such as pure ACKs, are never accounted for), it fails if every
//!   acknowledged test packet came back CE (a path that marks everything) or
//!   none came back at all (an ECN black hole).
//! - On failure the codepoint falls back one step, ECT(1) → ECT(0) (classic
//!   ECN) → Not-ECT, and is tested again at each step. A path that has
//!   failed, or only passed with a fallback codepoint, is re-tested with the
//!   preferred codepoint after [`RETEST_AFTER`], doubling per consecutive
//!   failure up to [`RETEST_AFTER_MAX`]: paths change, and a bleaching
//!   middlebox may be routed around.
//!
//! Validation keeps checking while Capable: a path can change mid-connection.

use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Ecn;

use crate::congestion::EcnCounts;

/// How many ECN-capable packets a test sends (RFC 9000 Appendix A.4).
pub(crate) const TEST_PACKETS: u64 = 10;
/// How many PTOs a test may send ECN-capable packets for.
pub(crate) const TEST_PTOS: u32 = 3;
/// The PTO assumed until [`EcnValidator::set_pto`] is called (RFC 9002's
/// initial PTO: 333 ms + 4 * 166.5 ms).
pub(crate) const DEFAULT_PTO: Duration = Duration::from_millis(999);
/// First re-test delay after a failure.
pub(crate) const RETEST_AFTER: Duration = Duration::from_secs(60);
/// The re-test delay stops doubling here.
pub(crate) const RETEST_AFTER_MAX: Duration = Duration::from_secs(480);

/// Where validation stands; [`EcnValidator::ect`] says for which codepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EcnState {
    /// Marked packets are out and being checked against the peer's counts.
    Testing,
    /// The path and the peer carry the codepoint faithfully.
    Capable,
    /// Marks were lost, bleached or miscounted: packets go out Not-ECT
    /// until a later re-test.
    Failed,
}

/// Why the last test of a codepoint failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EcnFailure {
    /// Counts did not rise for packets we sent ECN-capable: the field was
    /// erased on the way, or the peer does not report.
    Bleached,
    /// Our codepoint arrived as the other ECT codepoint.
    Remarked,
    /// Every acknowledged test packet was reported CE.
    AllCe,
    /// Every test packet was lost.
    BlackHole,
    /// Reported counts fell, or exceeded what we sent.
    InvalidCounts,
}

impl EcnFailure {
    pub(crate) const fn name(self) -> &'static str {
        match self {
            EcnFailure::Bleached => "bleached",
            EcnFailure::Remarked => "remarked",
            EcnFailure::AllCe => "all_ce",
            EcnFailure::BlackHole => "black_hole",
            EcnFailure::InvalidCounts => "invalid_counts",
        }
    }
}

/// The ECN validation state machine of one path.
#[derive(Clone, Debug)]
pub(crate) struct EcnValidator {
    preferred: Ecn,
    /// The codepoint under test or validated; Not-ECT once everything failed.
    ect: Ecn,
    state: EcnState,
    pto: Duration,
    test: Test,
    /// Everything we ever sent and the peer ever reported, per codepoint.
    sent: EcnCounts,
    reported: EcnCounts,
    largest_acked: Option<u64>,
    /// ECT(1) was seen arriving as ECT(0) (or the reverse): the peer's count
    /// of the other codepoint may exceed what we sent of it by that much.
    ect1_remarked: bool,
    ect0_remarked: bool,
    last_failure: Option<EcnFailure>,
    failures_in_a_row: u32,
    retest_at: Option<Instant>,
}

/// Book-keeping of the current test.
#[derive(Clone, Copy, Debug)]
struct Test {
    started_at: Instant,
    first_pn: Option<u64>,
    sent: u64,
    acked: u64,
    lost: u64,
    ce: u64,
    /// How much our codepoint's reported count rose on ACKs of test packets.
    intact: u64,
    /// The test budget is spent: send Not-ECT until the test concludes.
    probing_done: bool,
}

impl Test {
    fn new(now: Instant) -> Self {
        Self {
            started_at: now,
            first_pn: None,
            sent: 0,
            acked: 0,
            lost: 0,
            ce: 0,
            intact: 0,
            probing_done: false,
        }
    }
}

impl EcnValidator {
    /// Starts testing `preferred` (ECT(1) for Prague, ECT(0) for classic
    /// controllers); Not-ECT (or CE, which no sender may choose) disables ECN.
    pub(crate) fn new(preferred: Ecn, now: Instant) -> Self {
        let preferred = match preferred {
            Ecn::Ect1 | Ecn::Ect0 => preferred,
            Ecn::NotEct | Ecn::Ce => Ecn::NotEct,
        };
        Self {
            preferred,
            ect: preferred,
            state: if preferred == Ecn::NotEct {
                EcnState::Failed
            } else {
                EcnState::Testing
            },
            pto: DEFAULT_PTO,
            test: Test::new(now),
            sent: EcnCounts::default(),
            reported: EcnCounts::default(),
            largest_acked: None,
            ect1_remarked: false,
            ect0_remarked: false,
            last_failure: None,
            failures_in_a_row: 0,
            retest_at: None,
        }
    }

    /// The codepoint to put on the next packet.
    pub(crate) fn codepoint(&self) -> Ecn {
        match self.state {
            EcnState::Testing if !self.test.probing_done => self.ect,
            EcnState::Testing | EcnState::Failed => Ecn::NotEct,
            EcnState::Capable => self.ect,
        }
    }

    pub(crate) fn state(&self) -> EcnState {
        self.state
    }

    /// The codepoint being tested or validated (Not-ECT once all failed).
    pub(crate) fn ect(&self) -> Ecn {
        self.ect
    }

    /// Why the most recent failure happened, for stats and qlog.
    pub(crate) fn last_failure(&self) -> Option<EcnFailure> {
        self.last_failure
    }

    /// Updates the PTO that sizes the test period (three PTOs).
    pub(crate) fn set_pto(&mut self, pto: Duration) {
        self.pto = pto;
    }

    fn test_period(&self) -> Duration {
        self.pto.saturating_mul(TEST_PTOS)
    }

    /// A packet numbered `pn` left with codepoint `ecn`. Only ack-eliciting
    /// packets count towards a test: the peer need not acknowledge an
    /// ACK-only packet until it has something of its own to send, so a test
    /// made of them could end in a false black hole while the application is
    /// merely quiet.
    /// The test's clock starts with its first packet, not with the
    /// connection: a handshake or a quiet spell must not eat the time the
    /// test packets' acknowledgements need.
    pub(crate) fn on_sent(&mut self, now: Instant, pn: u64, ecn: Ecn, ack_eliciting: bool) {
        self.sent.add(ecn, 1);
        if self.state == EcnState::Testing && ecn == self.ect && ack_eliciting {
            if self.test.first_pn.is_none() {
                self.test.first_pn = Some(pn);
                self.test.started_at = self.test.started_at.max(now);
            }
            self.test.sent = self.test.sent.saturating_add(1);
            if self.test.sent >= TEST_PACKETS {
                self.test.probing_done = true;
            }
        }
    }

    /// An ACK frame arrived. `newly_acked` counts the codepoints we sent on
    /// the packets it newly acknowledges; `reported_delta` is the increase of
    /// the peer's ECN counts it carries.
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        newly_acked: &EcnCounts,
        reported_delta: &EcnCounts,
        largest_acked_pn: u64,
    ) {
        let raises_largest = self.largest_acked.is_none_or(|l| largest_acked_pn > l);
        if raises_largest {
            self.largest_acked = Some(largest_acked_pn);
        }
        self.reported = self.reported.saturating_add(reported_delta);
        self.check_ack(
            now,
            newly_acked,
            reported_delta,
            largest_acked_pn,
            raises_largest,
        );
    }

    /// Like [`on_ack`](Self::on_ack) but with the peer's cumulative counts as
    /// carried in the ACK frame, which lets the validator catch counts that
    /// fall. Returns the increase to hand to congestion control (zero when
    /// the counts are stale or invalid).
    pub(crate) fn on_ack_totals(
        &mut self,
        now: Instant,
        newly_acked: &EcnCounts,
        reported_totals: &EcnCounts,
        largest_acked_pn: u64,
    ) -> EcnCounts {
        if let Some(delta) = reported_totals.checked_sub(&self.reported) {
            self.on_ack(now, newly_acked, &delta, largest_acked_pn);
            return delta;
        }
        let raises_largest = self.largest_acked.is_none_or(|l| largest_acked_pn > l);
        if raises_largest {
            // RFC 9000 §13.4.2.1: counts in a newer ACK must not go down.
            self.largest_acked = Some(largest_acked_pn);
            self.reported = EcnCounts {
                ect0: self.reported.ect0.max(reported_totals.ect0),
                ect1: self.reported.ect1.max(reported_totals.ect1),
                ce: self.reported.ce.max(reported_totals.ce),
            };
            if self.state != EcnState::Failed {
                self.fail(now, EcnFailure::InvalidCounts);
            }
        } else {
            // An older ACK overtaken by a newer one: its counts are stale.
            self.on_ack(now, newly_acked, &EcnCounts::default(), largest_acked_pn);
        }
        EcnCounts::default()
    }

    /// A packet sent with `ecn` was declared lost.
    pub(crate) fn on_lost(&mut self, now: Instant, ecn: Ecn) {
        if self.state == EcnState::Testing && ecn == self.ect {
            self.test.lost = self.test.lost.saturating_add(1);
            self.try_conclude(now);
        }
    }

    /// The next time [`handle_timeout`](Self::handle_timeout) has work: the
    /// end of the probing period, the test's deadline, or a re-test.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            EcnState::Testing if !self.test.probing_done => {
                Some(self.test.started_at + self.test_period())
            }
            EcnState::Testing => Some(self.test.started_at + self.test_period().saturating_mul(2)),
            EcnState::Capable | EcnState::Failed => self.retest_at,
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            EcnState::Testing => {
                if !self.test.probing_done && now >= self.test.started_at + self.test_period() {
                    if self.test.sent == 0 {
                        // Nothing was sent: the test has not really begun.
                        self.test.started_at = self.test.started_at.max(now);
                    } else {
                        self.test.probing_done = true;
                    }
                }
                self.try_conclude(now);
            }
            EcnState::Capable | EcnState::Failed => {
                if self.retest_at.is_some_and(|at| now >= at) {
                    self.retest_at = None;
                    self.start_test(now, self.preferred);
                }
            }
        }
    }

    fn start_test(&mut self, now: Instant, ect: Ecn) {
        self.ect = ect;
        self.state = EcnState::Testing;
        self.test = Test::new(now);
    }

    fn check_ack(
        &mut self,
        now: Instant,
        newly_acked: &EcnCounts,
        delta: &EcnCounts,
        largest_acked_pn: u64,
        raises_largest: bool,
    ) {
        if self.state == EcnState::Failed {
            return;
        }
        if let Some(failure) = self.check_totals() {
            return self.fail(now, failure);
        }
        let newly = newly_acked.get(self.ect);
        // RFC 9000 §13.4.2.1: only an ACK that raises the largest
        // acknowledged is checked (older ones may carry older counts). Our
        // codepoint's count plus CE must rise by at least the packets we
        // newly see acknowledged with that codepoint.
        if raises_largest && newly > 0 {
            let seen = delta.get(self.ect).saturating_add(delta.ce);
            if seen < newly {
                let other = delta.get(other_ect(self.ect));
                let failure = if seen.saturating_add(other) >= newly {
                    self.note_remark();
                    EcnFailure::Remarked
                } else {
                    EcnFailure::Bleached
                };
                return self.fail(now, failure);
            }
        }
        if self.state == EcnState::Testing {
            self.test.acked = self.test.acked.saturating_add(newly);
            let covers_test = self
                .test
                .first_pn
                .is_some_and(|first| largest_acked_pn >= first);
            if raises_largest && covers_test {
                self.test.ce = self.test.ce.saturating_add(delta.ce.min(newly));
                self.test.intact = self.test.intact.saturating_add(delta.get(self.ect));
            }
            self.try_conclude(now);
        }
    }

    /// RFC 9000 §13.4.2.1: reported counts may not exceed what we sent with
    /// that codepoint. A remark seen earlier excuses the other codepoint's
    /// count by what we sent of the remarked one.
    fn check_totals(&mut self) -> Option<EcnFailure> {
        let sent_ecn = self
            .sent
            .ect0
            .saturating_add(self.sent.ect1)
            .saturating_add(self.sent.ce);
        if self.reported.total() > sent_ecn {
            return Some(EcnFailure::InvalidCounts);
        }
        let ect0_allowance = if self.ect1_remarked {
            self.sent.ect1
        } else {
            0
        };
        let ect1_allowance = if self.ect0_remarked {
            self.sent.ect0
        } else {
            0
        };
        let ect0_excess = self.reported.ect0 > self.sent.ect0.saturating_add(ect0_allowance);
        let ect1_excess = self.reported.ect1 > self.sent.ect1.saturating_add(ect1_allowance);
        if ect0_excess || ect1_excess {
            // Counts of the codepoint we are not using: a remark of ours.
            let remark =
                (ect0_excess && self.ect == Ecn::Ect1) || (ect1_excess && self.ect == Ecn::Ect0);
            if remark {
                self.note_remark();
                return Some(EcnFailure::Remarked);
            }
            return Some(EcnFailure::InvalidCounts);
        }
        None
    }

    fn note_remark(&mut self) {
        match self.ect {
            Ecn::Ect1 => self.ect1_remarked = true,
            Ecn::Ect0 => self.ect0_remarked = true,
            Ecn::NotEct | Ecn::Ce => {}
        }
    }

    /// Passes the test as soon as a test packet is seen arriving intact;
    /// otherwise decides once the budget is spent and every test packet is
    /// accounted for (or twice the test period has passed).
    fn try_conclude(&mut self, now: Instant) {
        let t = self.test;
        if self.state != EcnState::Testing {
            return;
        }
        if t.acked > 0 && t.intact > 0 {
            return self.pass();
        }
        if !t.probing_done || t.sent == 0 {
            return;
        }
        let resolved = t.acked.saturating_add(t.lost) >= t.sent;
        if !resolved && now < t.started_at + self.test_period().saturating_mul(2) {
            return;
        }
        // Acknowledged packets whose counts rose, but never for our
        // codepoint, all came back CE. One such packet is ordinary
        // congestion; all of several is a path that sets CE on everything,
        // which would throttle us to nothing.
        match t.acked {
            0 => self.fail(now, EcnFailure::BlackHole),
            1 => self.pass(),
            _ => self.fail(now, EcnFailure::AllCe),
        }
    }

    fn pass(&mut self) {
        self.state = EcnState::Capable;
        if self.ect == self.preferred {
            self.failures_in_a_row = 0;
            self.retest_at = None;
        }
    }

    /// Falls back one codepoint and schedules a re-test of the preferred one.
    fn fail(&mut self, now: Instant, failure: EcnFailure) {
        self.last_failure = Some(failure);
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        let backoff = RETEST_AFTER
            .saturating_mul(1 << (self.failures_in_a_row - 1).min(8))
            .min(RETEST_AFTER_MAX);
        self.retest_at = Some(now + backoff);
        if self.ect == Ecn::Ect1 {
            self.start_test(now, Ecn::Ect0);
        } else {
            self.ect = Ecn::NotEct;
            self.state = EcnState::Failed;
        }
    }
}

fn other_ect(ect: Ecn) -> Ecn {
    match ect {
        Ecn::Ect1 => Ecn::Ect0,
        _ => Ecn::Ect1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Instant = Instant::from_millis(1_000);

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn counts(ect0: u64, ect1: u64, ce: u64) -> EcnCounts {
        EcnCounts { ect0, ect1, ce }
    }

    /// Sends `n` packets from `next_pn` with whatever codepoint the validator
    /// asks for; returns what was sent.
    fn send(v: &mut EcnValidator, next_pn: &mut u64, n: u64) -> EcnCounts {
        let mut sent = EcnCounts::default();
        for _ in 0..n {
            let cp = v.codepoint();
            v.on_sent(T0, *next_pn, cp, true);
            sent.add(cp, 1);
            *next_pn += 1;
        }
        sent
    }

    #[test]
    fn happy_path_validates_ect1_after_ten_packets() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(send(&mut v, &mut pn, 10), counts(0, 10, 0));
        // Budget spent: Not-ECT until the test packets come back.
        assert_eq!(send(&mut v, &mut pn, 2), EcnCounts::default());
        assert_eq!(v.state(), EcnState::Testing);
        // The first ACK, one packet CE-marked by a congested queue, already
        // shows ECT(1) arriving intact. Packets never acknowledged (pure
        // ACKs) do not hold the test up.
        v.on_ack(T0 + ms(20), &counts(0, 5, 0), &counts(0, 4, 1), 4);
        assert_eq!(v.state(), EcnState::Capable);
        v.on_ack(T0 + ms(21), &counts(0, 3, 0), &counts(0, 3, 0), 11);
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.codepoint(), Ecn::Ect1);
        assert_eq!(v.poll_timeout(), None);
        assert_eq!(v.last_failure(), None);
        // Capable keeps sending ECT(1).
        assert_eq!(send(&mut v, &mut pn, 3), counts(0, 3, 0));
    }

    #[test]
    fn bleaching_falls_back_to_ect0_then_not_ect_then_retests() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        let t1 = T0 + ms(30);
        // The counts do not move: the field was erased.
        v.on_ack(t1, &counts(0, 3, 0), &EcnCounts::default(), 2);
        assert_eq!(v.last_failure(), Some(EcnFailure::Bleached));
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(v.codepoint(), Ecn::Ect0);
        assert_eq!(send(&mut v, &mut pn, 10), counts(10, 0, 0));
        let t2 = t1 + ms(30);
        v.on_ack(t2, &counts(10, 0, 0), &EcnCounts::default(), 19);
        assert_eq!(v.state(), EcnState::Failed);
        assert_eq!(v.ect(), Ecn::NotEct);
        assert_eq!(v.codepoint(), Ecn::NotEct);
        // Second failure in a row: re-test after 2 * 60 s, with ECT(1) again.
        let retest = t2 + Duration::from_secs(120);
        assert_eq!(v.poll_timeout(), Some(retest));
        v.handle_timeout(retest - ms(1));
        assert_eq!(v.state(), EcnState::Failed);
        v.handle_timeout(retest);
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(v.codepoint(), Ecn::Ect1);
    }

    #[test]
    fn ect1_remarked_as_ect0_falls_back_to_classic_ecn() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        let t1 = T0 + ms(30);
        v.on_ack(t1, &counts(0, 10, 0), &counts(10, 0, 0), 9);
        assert_eq!(v.last_failure(), Some(EcnFailure::Remarked));
        assert_eq!(v.codepoint(), Ecn::Ect0);
        // Classic ECN passes on the same path, even though the peer's ECT(0)
        // count now exceeds what we sent as ECT(0).
        send(&mut v, &mut pn, 10);
        v.on_ack(t1 + ms(30), &counts(10, 0, 0), &counts(10, 0, 0), 19);
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.codepoint(), Ecn::Ect0);
        // ECT(1) is re-tested later.
        assert_eq!(v.poll_timeout(), Some(t1 + RETEST_AFTER));
    }

    #[test]
    fn all_ce_marking_fails_but_some_ce_does_not() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        v.on_ack(T0 + ms(30), &counts(0, 10, 0), &counts(0, 0, 10), 9);
        assert_eq!(v.last_failure(), Some(EcnFailure::AllCe));
        assert_eq!(v.codepoint(), Ecn::Ect0);
        send(&mut v, &mut pn, 10);
        v.on_ack(T0 + ms(60), &counts(10, 0, 0), &counts(0, 0, 10), 19);
        assert_eq!(v.state(), EcnState::Failed);

        let mut ok = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut ok, &mut pn, 10);
        ok.on_ack(T0 + ms(30), &counts(0, 10, 0), &counts(0, 1, 9), 9);
        assert_eq!(ok.state(), EcnState::Capable);
    }

    #[test]
    fn ack_only_packets_do_not_make_a_test_fail_while_the_app_is_quiet() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        v.set_pto(ms(10));
        // The handshake is over and the application is silent: only ACKs
        // leave, and the peer never acknowledges them.
        for pn in 0..20 {
            v.on_sent(T0, pn, v.codepoint(), false);
        }
        v.handle_timeout(T0 + ms(500));
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(v.codepoint(), Ecn::Ect1);
        assert_eq!(v.last_failure(), None);
        // Data starts long after: its test packets arrive intact.
        let start = T0 + ms(1_000);
        let mut pn = 20;
        let sent = send(&mut v, &mut pn, 10);
        assert_eq!(sent, counts(0, 10, 0));
        v.on_ack(start + ms(5), &sent, &counts(0, 10, 0), pn - 1);
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.ect(), Ecn::Ect1);
    }

    #[test]
    fn the_test_clock_starts_with_the_first_test_packet() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        v.set_pto(ms(10));
        // The first packet leaves just before the first test period would
        // have ended, counted from the validator's creation.
        let first = T0 + ms(29);
        for pn in 0..10 {
            v.on_sent(first, pn, v.codepoint(), true);
        }
        // Two periods after creation, but not after the first packet.
        v.handle_timeout(T0 + ms(61));
        assert_eq!((v.state(), v.ect()), (EcnState::Testing, Ecn::Ect1));
        v.on_ack(T0 + ms(70), &counts(0, 10, 0), &counts(0, 10, 0), 9);
        assert_eq!((v.state(), v.ect()), (EcnState::Capable, Ecn::Ect1));
        assert_eq!(v.last_failure(), None);
    }

    #[test]
    fn losing_every_test_packet_is_a_black_hole() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        for i in 0..10 {
            assert_eq!(v.state(), EcnState::Testing);
            assert_eq!(v.ect(), Ecn::Ect1);
            v.on_lost(T0 + ms(100 + i), Ecn::Ect1);
        }
        assert_eq!(v.last_failure(), Some(EcnFailure::BlackHole));
        assert_eq!(v.ect(), Ecn::Ect0);
        send(&mut v, &mut pn, 10);
        for _ in 0..10 {
            v.on_lost(T0 + ms(300), Ecn::Ect0);
        }
        assert_eq!(v.state(), EcnState::Failed);
        // Some losses with some ACKs is ordinary congestion.
        let mut ok = EcnValidator::new(Ecn::Ect0, T0);
        send(&mut ok, &mut pn, 10);
        for _ in 0..9 {
            ok.on_lost(T0, Ecn::Ect0);
        }
        ok.on_ack(T0, &counts(1, 0, 0), &counts(1, 0, 0), pn - 1);
        assert_eq!(ok.state(), EcnState::Capable);
    }

    #[test]
    fn probing_ends_after_three_ptos_and_test_concludes_by_deadline() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        v.set_pto(ms(100));
        let mut pn = 0;
        send(&mut v, &mut pn, 3);
        assert_eq!(v.poll_timeout(), Some(T0 + ms(300)));
        v.handle_timeout(T0 + ms(300));
        assert_eq!(v.codepoint(), Ecn::NotEct);
        // Two test packets acked, both CE, the third never accounted for:
        // the deadline (two test periods) decides with what is known.
        v.on_ack(T0 + ms(320), &counts(0, 2, 0), &counts(0, 0, 2), 1);
        assert_eq!(v.state(), EcnState::Testing);
        assert_eq!(v.poll_timeout(), Some(T0 + ms(600)));
        v.handle_timeout(T0 + ms(599));
        assert_eq!(v.state(), EcnState::Testing);
        v.handle_timeout(T0 + ms(600));
        assert_eq!(v.last_failure(), Some(EcnFailure::AllCe));
        assert_eq!(v.codepoint(), Ecn::Ect0);
    }

    #[test]
    fn an_idle_test_period_does_not_end_probing() {
        let mut v = EcnValidator::new(Ecn::Ect0, T0);
        v.handle_timeout(T0 + Duration::from_secs(3));
        assert_eq!(v.codepoint(), Ecn::Ect0);
        assert_eq!(
            v.poll_timeout(),
            Some(T0 + Duration::from_secs(3) + DEFAULT_PTO * 3)
        );
    }

    #[test]
    fn counts_above_what_was_sent_or_falling_fail_validation() {
        let mut v = EcnValidator::new(Ecn::Ect0, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        v.on_ack(T0, &counts(5, 0, 0), &counts(11, 0, 0), 4);
        assert_eq!(v.last_failure(), Some(EcnFailure::InvalidCounts));
        assert_eq!(v.state(), EcnState::Failed);

        let mut v = EcnValidator::new(Ecn::Ect0, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        assert_eq!(
            v.on_ack_totals(T0, &counts(5, 0, 0), &counts(5, 0, 0), 4),
            counts(5, 0, 0)
        );
        // A newer ACK with a lower count.
        assert_eq!(
            v.on_ack_totals(T0, &counts(3, 0, 0), &counts(4, 0, 0), 7),
            EcnCounts::default()
        );
        assert_eq!(v.last_failure(), Some(EcnFailure::InvalidCounts));
        assert_eq!(v.state(), EcnState::Failed);
    }

    #[test]
    fn stale_acks_are_not_checked_and_totals_yield_deltas() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        assert_eq!(
            v.on_ack_totals(T0, &counts(0, 6, 0), &counts(0, 7, 1), 9),
            counts(0, 7, 1)
        );
        // An older ACK arriving late newly acknowledges packets 0..4 but
        // carries older (lower) counts: ignored, not a failure.
        assert_eq!(
            v.on_ack_totals(T0, &counts(0, 4, 0), &counts(0, 3, 0), 3),
            EcnCounts::default()
        );
        assert_eq!(v.last_failure(), None);
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn a_capable_path_that_starts_bleaching_falls_back() {
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        v.on_ack(T0, &counts(0, 10, 0), &counts(0, 10, 0), 9);
        assert_eq!(v.state(), EcnState::Capable);
        send(&mut v, &mut pn, 5);
        let later = T0 + Duration::from_secs(5);
        v.on_ack(later, &counts(0, 5, 0), &counts(0, 2, 0), pn - 1);
        assert_eq!(v.last_failure(), Some(EcnFailure::Bleached));
        assert_eq!(v.ect(), Ecn::Ect0);
        assert_eq!(v.state(), EcnState::Testing);
    }

    #[test]
    fn retest_delay_doubles_up_to_the_cap() {
        let mut v = EcnValidator::new(Ecn::Ect0, T0);
        let mut pn = 0;
        let mut now = T0;
        let mut delays = Vec::new();
        for _ in 0..6 {
            send(&mut v, &mut pn, 10);
            v.on_ack(now, &counts(10, 0, 0), &EcnCounts::default(), pn - 1);
            assert_eq!(v.state(), EcnState::Failed);
            let at = v.poll_timeout().unwrap();
            delays.push((at - now).as_secs());
            now = at;
            v.handle_timeout(now);
            assert_eq!(v.codepoint(), Ecn::Ect0);
        }
        assert_eq!(delays, [60, 120, 240, 480, 480, 480]);
    }

    #[test]
    fn absurd_counts_and_ptos_fail_validation_without_panicking() {
        let huge = counts(u64::MAX, u64::MAX, u64::MAX);
        let mut v = EcnValidator::new(Ecn::Ect1, T0);
        v.set_pto(Duration::MAX);
        let mut pn = 0;
        send(&mut v, &mut pn, 10);
        v.on_ack(T0, &huge, &huge, u64::MAX);
        assert_eq!(v.last_failure(), Some(EcnFailure::InvalidCounts));
        let _ = v.on_ack_totals(Instant::FAR_FUTURE, &huge, &EcnCounts::default(), u64::MAX);
        v.on_lost(Instant::FAR_FUTURE, Ecn::Ect0);
        v.handle_timeout(Instant::FAR_FUTURE);
        let _ = v.poll_timeout();
    }

    #[test]
    fn not_ect_preference_disables_ecn_for_good() {
        for pref in [Ecn::NotEct, Ecn::Ce] {
            let mut v = EcnValidator::new(pref, T0);
            assert_eq!(v.state(), EcnState::Failed);
            assert_eq!(v.codepoint(), Ecn::NotEct);
            assert_eq!(v.poll_timeout(), None);
            v.on_sent(T0, 0, Ecn::NotEct, true);
            v.on_ack(T0, &EcnCounts::default(), &counts(0, 0, 1), 0);
            v.handle_timeout(T0 + Duration::from_secs(3600));
            assert_eq!(v.codepoint(), Ecn::NotEct);
        }
    }
}
