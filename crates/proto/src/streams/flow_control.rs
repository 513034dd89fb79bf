//! Credit-based flow control (RFC 9000 §4), for one stream or the whole
//! connection.
//!
//! The receiver advertises an absolute limit (MAX_DATA, MAX_STREAM_DATA)
//! and moves it forward as the application consumes data; the sender never
//! transmits past the last limit it heard.
//!
//! The receiver's window tunes itself, doubling (up to a cap) on any of
//! three signs that it, not the reader, held the sender back or is about
//! to:
//!
//! - the peer used every byte of credit before the application, having
//!   read all it could, released half a window (a hole behind a lost
//!   packet pins the rest of the window until its repair lands);
//! - half the window is received behind a hole while the application has
//!   read all it could: the peer has at most half a window of credit left
//!   and the repair is about a round trip away, so the larger limit goes
//!   out at once instead of after the repair. On a 220 ms, 10 Mbit/s path
//!   at 5% loss, the 1 MiB window pinned this way during Startup (whose
//!   queue doubles the round trip) held the sender at 2.1 s and again at
//!   3.0 s, each time until a repair landed and half a window was read.
//!   A slow reader leaves readable bytes
//!   and never grows it; memory stays bounded by the cap, and only bytes
//!   that did arrive are ever held;
//! - twice in a row, the peer said it was blocked at a limit
//!   (STREAM_DATA_BLOCKED) and half a window was then read within two
//!   minimum RTTs of the previous grant. A new limit goes out after each half window read and reaches
//!   the sender half a round trip later, so a window `W` carries at most
//!   about `W / 2` per round trip without loss: 512 KiB per 200 ms, 21
//!   Mbit/s, for the default 1 MiB. That sender never reaches the limit
//!   the receiver last granted (the next one is always on its way), so the
//!   first sign never fires on a clean long path. Half a window read in
//!   under two round trips means the reader keeps up with at least a
//!   quarter window per round trip, so the window is not four times what
//!   the rate needs. The round trip is the path's minimum, not the
//!   smoothed RTT, and the blocked reports are required too: behind a
//!   seconds-long queue the smoothed RTT grows with the queue, and a
//!   receiver's RTT samples come from its few ack-eliciting packets (its
//!   grants), which the sender acknowledges late. Grown on one such grant
//!   during a slow start that ran into the 1 MiB window, Prague through a
//!   classic FQ-CoDel whose rate later drops from 50 to 1 Mbit/s kept its
//!   RTT high for 2.3 s after the drop instead of under 2 s.
//!
//! A fixed window has to cover the bytes in flight plus those held behind a
//! lost packet until its retransmission lands, about two round trips of
//! data on a lossy path; one size cannot fit both a LAN and a 220 ms
//! mobile path without pinning megabytes on every connection. A slow
//! reader never grows the window: it leaves bytes unread, or reads half a
//! window slower than two round trips, so the sender waited for the
//! reader, not for the window.

use brisk_time::Instant;
use std::time::Duration;

/// Grants in a row, each due less than two round trips after the one
/// before with the peer blocked, that double a window. One is not enough:
/// a sender's slow start overshoots its path by up to a factor of two and
/// may run into the window once, and a receiver's first RTT samples (of
/// its grants, acknowledged late behind that overshoot's queue) can be
/// several times the path's (88 ms on a 20 ms path).
const QUICK_BLOCKED_GRANTS: u8 = 2;

/// The sender's view: how far the peer lets us go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendCredit {
    /// The peer's limit, in bytes from the start.
    max: u64,
    /// Bytes counted against the limit so far.
    used: u64,
}

impl SendCredit {
    pub(super) fn new(max: u64) -> Self {
        SendCredit { max, used: 0 }
    }

    pub(super) fn available(&self) -> u64 {
        self.max.saturating_sub(self.used)
    }

    pub(super) fn max(&self) -> u64 {
        self.max
    }

    pub(super) fn consume(&mut self, n: u64) {
        self.used += n;
    }

    /// Applies a MAX_DATA frame; limits never move backwards, since frames
    /// can arrive out of order. Returns whether the limit grew.
    pub(super) fn raise(&mut self, max: u64) -> bool {
        let grew = max > self.max;
        self.max = self.max.max(max);
        grew
    }

    /// Replaces the limit (the peer's transport parameters).
    pub(super) fn set(&mut self, max: u64) {
        self.max = max;
    }
}

/// The receiver's view: what we advertised, what arrived, what was consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvWindow {
    /// How far ahead of the consumed data we let the peer send.
    window: u64,
    /// The most `window` may grow to.
    cap: u64,
    /// The peer reached the advertised limit since it last moved.
    limit_reached: bool,
    /// The peer reported being blocked by a recent limit since the last
    /// grant.
    peer_blocked: bool,
    /// Grants in a row that came less than two round trips after the
    /// previous one with the peer reporting itself blocked.
    quick_blocked_grants: u8,
    /// The limit the peer knows about.
    max: u64,
    /// Highest offset (stream) or sum of highest offsets (connection) seen.
    received: u64,
    /// Bytes the application read or that were discarded, so their credit
    /// can be returned.
    consumed: u64,
    /// When the latest limit was granted after reads (none yet: the first
    /// limit is the transport parameter).
    advertised_at: Option<Instant>,
}

impl RecvWindow {
    /// A window of `window` bytes that may grow to `cap` (a cap below
    /// `window` keeps it fixed).
    pub(super) fn new(window: u64, cap: u64) -> Self {
        RecvWindow {
            window,
            cap: cap.max(window),
            limit_reached: false,
            peer_blocked: false,
            quick_blocked_grants: 0,
            max: window,
            received: 0,
            consumed: 0,
            advertised_at: None,
        }
    }

    pub(super) fn received(&self) -> u64 {
        self.received
    }

    pub(super) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Whether `more` further bytes stay within the advertised limit.
    pub(super) fn allows(&self, more: u64) -> bool {
        self.received
            .checked_add(more)
            .is_some_and(|r| r <= self.max)
    }

    /// Counts bytes that arrived; the caller checked [`Self::allows`].
    pub(super) fn record(&mut self, more: u64) {
        self.received += more;
        self.limit_reached |= self.received >= self.max;
    }

    /// The current window, in bytes.
    pub(super) fn window(&self) -> u64 {
        self.window
    }

    /// Widens the window to at least `bytes` (within the cap), as the
    /// connection's must to carry a stream's grown window.
    pub(super) fn widen_to(&mut self, bytes: u64) {
        self.window = self.window.max(bytes.min(self.cap));
    }

    /// The peer says it was blocked at `limit` (STREAM_DATA_BLOCKED): worth
    /// noting if the limit is within a window of the latest one, not a
    /// report delayed past several grants.
    pub(super) fn peer_blocked_at(&mut self, limit: u64) {
        if limit.saturating_add(self.window) >= self.max {
            self.peer_blocked = true;
        }
    }

    /// Returns credit for bytes that left the buffer.
    pub(super) fn consume(&mut self, n: u64) {
        self.consumed += n;
    }

    /// Whether a hole, not the reader, is about to hold the sender: the
    /// application read every byte it could (`reader_caught_up`), yet half
    /// the window sits received behind a missing packet, so the peer has
    /// at most half a window of credit left until the repair lands, about a
    /// round trip away. A window below its cap is then worth doubling at
    /// once, before the peer runs into the limit.
    pub(super) fn held_by_hole(&self, reader_caught_up: bool) -> bool {
        reader_caught_up
            && self.window < self.cap
            && self.window > 0
            && self.received.saturating_sub(self.consumed) >= self.window.div_ceil(2)
    }

    /// True once the application has consumed about half a window since the
    /// last advertisement: a new limit is then worth a frame.
    pub(super) fn update_due(&self) -> bool {
        self.window > 0 && self.consumed + self.window - self.max >= self.window.div_ceil(2)
    }

    /// Moves the limit to a full window past the consumed data and returns
    /// it; the window stays as it is (the connection's, which grows only
    /// with its streams').
    pub(super) fn advertise(&mut self) -> u64 {
        self.limit_reached = false;
        self.peer_blocked = false;
        self.max = self.max.max(self.consumed + self.window);
        self.max
    }

    /// Like [`Self::advertise`], at `now` with the path's minimum RTT
    /// `rtt`, doubling the window first (within the cap) when the peer
    /// reached the limit while the application read every byte it could
    /// (`reader_caught_up`) or half the window waits behind a hole that
    /// reader cannot pass ([`Self::held_by_hole`]), or when, for
    /// [`QUICK_BLOCKED_GRANTS`] grants
    /// in a row, the peer reported being blocked and half a window was
    /// read less than two `rtt` after the previous grant. A grant sent again because the last one was lost, before
    /// half a window was read, neither grows the window nor restarts that
    /// clock.
    pub(super) fn advertise_tuned(
        &mut self,
        now: Instant,
        rtt: Duration,
        reader_caught_up: bool,
    ) -> u64 {
        let pinned = self.held_by_hole(reader_caught_up);
        let at_limit = std::mem::take(&mut self.limit_reached) && reader_caught_up;
        let mut held_back = false;
        if self.update_due() {
            let quick = self
                .advertised_at
                .is_some_and(|at| now.saturating_duration_since(at) < rtt.saturating_mul(2));
            self.quick_blocked_grants = if quick && std::mem::take(&mut self.peer_blocked) {
                self.quick_blocked_grants.saturating_add(1)
            } else {
                0
            };
            held_back = self.quick_blocked_grants >= QUICK_BLOCKED_GRANTS;
            self.advertised_at = Some(now);
            self.peer_blocked = false;
        }
        if at_limit || held_back || pinned {
            self.window = self.window.saturating_mul(2).min(self.cap);
            self.quick_blocked_grants = 0;
        }
        self.max = self.max.max(self.consumed + self.window);
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Most grants here come at one instant with a zero RTT, so only the
    /// first sign can grow a window; the second has a test of its own.
    const T0: Instant = Instant::ZERO;
    const RTT: Duration = Duration::ZERO;

    #[test]
    fn send_credit_only_grows_from_frames() {
        let mut c = SendCredit::new(100);
        c.consume(60);
        assert_eq!(c.available(), 40);
        assert!(!c.raise(80), "an old MAX_DATA is ignored");
        assert_eq!(c.available(), 40);
        assert!(c.raise(160));
        assert_eq!(c.available(), 100);
        c.set(50);
        assert_eq!(c.available(), 0);
        assert_eq!(c.max(), 50);
    }

    #[test]
    fn receive_window_updates_after_half_is_consumed() {
        let mut w = RecvWindow::new(1000, 1000);
        assert!(w.allows(1000));
        assert!(!w.allows(1001));
        assert!(!w.allows(u64::MAX));
        w.record(1000);
        w.consume(499);
        assert!(!w.update_due());
        w.consume(1);
        assert!(w.update_due());
        assert_eq!(w.advertise_tuned(T0, RTT, true), 1500);
        assert!(!w.update_due());
        assert!(w.allows(500));
        assert!(!w.allows(501));
    }

    #[test]
    fn window_doubles_when_the_peer_used_it_all_and_the_reader_kept_up() {
        let mut w = RecvWindow::new(1000, 3000);
        w.record(1000);
        w.consume(500);
        // The reader still has bytes to read: the reader held the sender.
        assert_eq!(w.advertise_tuned(T0, RTT, false), 1500);
        assert_eq!(w.window(), 1000);
        w.record(500);
        w.consume(1000);
        assert_eq!(w.advertise_tuned(T0, RTT, true), 1500 + 2000);
        assert_eq!(w.window(), 2000);
        // The peer stopped short of the limit: the window was not the limit.
        w.record(1000);
        w.consume(1000);
        assert_eq!(w.advertise_tuned(T0, RTT, true), 2500 + 2000);
        assert_eq!(w.window(), 2000);
        // At the limit again: grows, but only to the cap.
        w.record(2000);
        w.consume(2000);
        assert_eq!(w.advertise_tuned(T0, RTT, true), 4500 + 3000);
        assert_eq!(w.window(), 3000);
    }

    #[test]
    fn window_doubles_when_a_blocked_peer_twice_has_half_of_it_read_within_two_round_trips() {
        let rtt = Duration::from_millis(200);
        let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut w = RecvWindow::new(1000, 4000);
        let read = |w: &mut RecvWindow, n: u64| {
            w.record(n);
            w.consume(n);
            assert!(w.update_due());
        };
        // The first grant after the transport parameter only starts the
        // clock. The reader keeps up and the sender never reaches the
        // limit, the next grant being always on its way.
        read(&mut w, 600);
        assert_eq!(w.advertise_tuned(at(0), rtt, true), 1600);
        // Half a window read 300 ms later, within two round trips, but
        // the peer did not say it was blocked: its congestion window, not
        // ours, may have set the pace.
        read(&mut w, 500);
        assert_eq!(w.advertise_tuned(at(300), rtt, true), 2100);
        // Blocked at the limit before last (the latest one was on its
        // way), once: maybe a slow start's overshoot.
        w.peer_blocked_at(1600);
        read(&mut w, 500);
        assert_eq!(w.advertise_tuned(at(600), rtt, true), 2600);
        assert_eq!(w.window(), 1000);
        // The same grant again (the frame was lost) before another half
        // window is read: it counts for nothing.
        w.peer_blocked_at(2600);
        assert_eq!(w.advertise_tuned(at(610), rtt, true), 2600);
        // Blocked and quick a second time in a row: the window held the
        // sender to 500 bytes per round trip.
        read(&mut w, 500);
        assert_eq!(w.advertise_tuned(at(900), rtt, true), 2100 + 2000);
        assert_eq!(w.window(), 2000);
        // Half of it read 450 ms after the last grant, blocked or not: a
        // reader (or a path) that needs no more.
        w.peer_blocked_at(4100);
        read(&mut w, 1000);
        assert_eq!(w.advertise_tuned(at(1350), rtt, true), 5100);
        // A report about a limit more than a window old says nothing.
        w.peer_blocked_at(2000);
        read(&mut w, 1000);
        assert_eq!(w.advertise_tuned(at(1400), rtt, true), 6100);
        assert_eq!(w.window(), 2000);
        // Twice blocked and quick again: grows, but only to the cap.
        let mut grants = Vec::new();
        for (ms, n) in [(1450, 1000), (1500, 1000), (1550, 2000), (1600, 2000)] {
            w.peer_blocked_at(w.max);
            read(&mut w, n);
            grants.push((w.advertise_tuned(at(ms), rtt, true), w.window()));
        }
        assert_eq!(
            grants,
            [(7100, 2000), (10_100, 4000), (12_100, 4000), (14_100, 4000)]
        );
        // The connection's grant never grows the window by itself.
        let mut c = RecvWindow::new(1000, 4000);
        c.record(1000);
        c.consume(1000);
        c.peer_blocked_at(1000);
        assert_eq!(c.advertise(), 2000);
        assert_eq!(c.window(), 1000);
    }

    #[test]
    fn window_doubles_when_half_of_it_waits_behind_a_hole_the_reader_cannot_pass() {
        let mut w = RecvWindow::new(1000, 4000);
        // 300 bytes read, then a hole; 200 bytes wait behind it: the peer
        // still has half the window of credit.
        w.record(500);
        w.consume(300);
        assert!(!w.held_by_hole(true));
        // 500 bytes wait behind the hole, the reader took all it could:
        // the window, not the reader, is about to hold the peer, before
        // half a window was read.
        w.record(300);
        assert!(!w.update_due());
        assert!(w.held_by_hole(true));
        // The same bytes unread by a slow reader are not a hole's doing.
        assert!(!w.held_by_hole(false));
        assert_eq!(w.advertise_tuned(T0, RTT, false), 300 + 1000);
        assert_eq!(w.window(), 1000);
        // Doubled at once: the limit moves a new window past the consumed
        // data, and the bytes behind the hole no longer fill half of it.
        assert_eq!(w.advertise_tuned(T0, RTT, true), 300 + 2000);
        assert_eq!(w.window(), 2000);
        assert!(!w.held_by_hole(true));
        // At the cap, a hole no longer grows it.
        w.consume(200);
        w.record(1500);
        assert!(w.held_by_hole(true));
        assert_eq!(w.advertise_tuned(T0, RTT, true), 500 + 4000);
        assert_eq!(w.window(), 4000);
        w.record(2200);
        assert!(!w.held_by_hole(true), "the window is at its cap");
    }

    #[test]
    fn zero_window_never_asks_for_an_update() {
        let w = RecvWindow::new(0, 0);
        assert!(!w.update_due());
        assert!(w.allows(0));
        assert!(!w.allows(1));
    }
}
