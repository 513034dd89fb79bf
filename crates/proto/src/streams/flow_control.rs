//! Credit-based flow control (RFC 9000 §4), for one stream or the whole
//! connection.
//!
//! The receiver advertises an absolute limit (MAX_DATA, MAX_STREAM_DATA)
//! and moves it forward as the application consumes data; the sender never
//! transmits past the last limit it heard.
//!
//! The receiver's window tunes itself: when the peer used every byte of
//! credit before the application, having read all it could, released
//! half a window, the window held the sender back rather than the reader,
//! and the next limit is granted from a window twice as large, up to a
//! cap. A fixed window has to cover the bytes in flight plus those held
//! behind a lost packet until its retransmission lands, about two round
//! trips of data on a lossy path; one size cannot fit both a LAN and a
//! 220 ms mobile path without pinning megabytes on every connection. A
//! slow reader never grows the window: it leaves bytes unread, so the
//! sender waited for the reader, not for the window.

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
    /// The limit the peer knows about.
    max: u64,
    /// Highest offset (stream) or sum of highest offsets (connection) seen.
    received: u64,
    /// Bytes the application read or that were discarded, so their credit
    /// can be returned.
    consumed: u64,
}

impl RecvWindow {
    /// A window of `window` bytes that may grow to `cap` (a cap below
    /// `window` keeps it fixed).
    pub(super) fn new(window: u64, cap: u64) -> Self {
        RecvWindow {
            window,
            cap: cap.max(window),
            limit_reached: false,
            max: window,
            received: 0,
            consumed: 0,
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

    /// Returns credit for bytes that left the buffer.
    pub(super) fn consume(&mut self, n: u64) {
        self.consumed += n;
    }

    /// True once the application has consumed about half a window since the
    /// last advertisement: a new limit is then worth a frame.
    pub(super) fn update_due(&self) -> bool {
        self.window > 0 && self.consumed + self.window - self.max >= self.window.div_ceil(2)
    }

    /// Moves the limit to a full window past the consumed data and returns
    /// it. `reader_caught_up`: the application has read every byte it
    /// could; with the peer at the limit, the window is then doubled first
    /// (within the cap).
    pub(super) fn advertise(&mut self, reader_caught_up: bool) -> u64 {
        if std::mem::take(&mut self.limit_reached) && reader_caught_up {
            self.window = self.window.saturating_mul(2).min(self.cap);
        }
        self.max = self.max.max(self.consumed + self.window);
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(w.advertise(true), 1500);
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
        assert_eq!(w.advertise(false), 1500);
        assert_eq!(w.window(), 1000);
        w.record(500);
        w.consume(1000);
        assert_eq!(w.advertise(true), 1500 + 2000);
        assert_eq!(w.window(), 2000);
        // The peer stopped short of the limit: the window was not the limit.
        w.record(1000);
        w.consume(1000);
        assert_eq!(w.advertise(true), 2500 + 2000);
        assert_eq!(w.window(), 2000);
        // At the limit again: grows, but only to the cap.
        w.record(2000);
        w.consume(2000);
        assert_eq!(w.advertise(true), 4500 + 3000);
        assert_eq!(w.window(), 3000);
    }

    #[test]
    fn zero_window_never_asks_for_an_update() {
        let w = RecvWindow::new(0, 0);
        assert!(!w.update_due());
        assert!(w.allows(0));
        assert!(!w.allows(1));
    }
}
