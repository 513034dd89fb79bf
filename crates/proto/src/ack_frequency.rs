//! How often to ask the peer to acknowledge our packets: the sender's side
//! of ACK_FREQUENCY (docs/PROTOCOL.md §5.3).
//!
//! Aim for about eight ACKs per congestion window, between every second
//! and every tenth packet, so that:
//! - a small window keeps the default (every second packet), where the ACK
//!   clock and the controller's growth need every ACK;
//! - a large window stops paying a receiver packet, a network slot and a
//!   loss-detection pass for every two data packets. At 100 Mbit/s and
//!   20 ms that is a fifth of the ACKs.
//!
//! Slow start keeps the default too: its window doubles from ACKs, and an
//! overshoot should be seen as early as possible. So does a controller
//! that needs every ACK's delivery sample (BBR, see
//! [`Controller::tolerates_sparse_acks`](crate::congestion::Controller::tolerates_sparse_acks)). The ack delay asked for
//! is a quarter of the smoothed RTT: feedback no staler, relative to the
//! control loop, than RFC 9000's 25 ms on a 100 ms path. It stays within
//! the peer's `min_ack_delay` and `max_ack_delay`, so the probe timeout
//! (which counts the latter) stays valid, and on a short path a tail
//! waits a fraction of a round trip rather than 25 ms.
//!
//! What the receiver does regardless (gaps and CE changes acknowledged at
//! once) keeps loss recovery and L4S feedback prompt; see
//! [`crate::ack_tracker`].

use crate::ack_tracker::DEFAULT_ACK_ELICITING_THRESHOLD;
use crate::frame::AckFrequencyFrame;
use brisk_time::Instant;
use std::time::Duration;

/// ACKs wanted per congestion window.
pub(crate) const ACKS_PER_WINDOW: u64 = 8;
/// The most packets one ACK may cover (RFC 9000 §13.2.2 warns against
/// more: the sender's clock coarsens and bursts grow).
pub(crate) const MAX_PACKETS_PER_ACK: u64 = 10;
/// The ack delay asked for, as a fraction of the smoothed RTT.
const RTT_FRACTION: u32 = 4;

/// What the peer is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckRequest {
    /// Ack-eliciting packets that may wait for an ACK.
    pub threshold: u64,
    pub max_ack_delay: Duration,
}

/// The sender's ACK_FREQUENCY state, for a peer that announced
/// `min_ack_delay`.
#[derive(Debug, Clone)]
pub(crate) struct AckFrequency {
    peer_min_ack_delay: Duration,
    peer_max_ack_delay: Duration,
    /// The newest request sent, or the peer's defaults before any.
    requested: AckRequest,
    /// A request to send with the next ack-eliciting packet.
    pending: Option<AckRequest>,
    /// The sequence number and send time of the newest frame.
    newest: Option<(u64, Instant)>,
    frames_sent: u64,
}

impl AckFrequency {
    pub(crate) fn new(peer_min_ack_delay: Duration, peer_max_ack_delay: Duration) -> Self {
        AckFrequency {
            peer_min_ack_delay,
            peer_max_ack_delay,
            requested: AckRequest {
                threshold: DEFAULT_ACK_ELICITING_THRESHOLD,
                max_ack_delay: peer_max_ack_delay,
            },
            pending: None,
            newest: None,
            frames_sent: 0,
        }
    }

    /// The request that suits a window of `window` bytes and a smoothed
    /// RTT of `srtt`; `keep_default` in slow start, or when the controller
    /// needs every ACK.
    pub(crate) fn target(
        &self,
        window: u64,
        datagram_size: u64,
        srtt: Duration,
        keep_default: bool,
    ) -> AckRequest {
        let packets_per_ack =
            (window / datagram_size.max(1) / ACKS_PER_WINDOW).min(MAX_PACKETS_PER_ACK);
        if keep_default || packets_per_ack <= DEFAULT_ACK_ELICITING_THRESHOLD + 1 {
            return AckRequest {
                threshold: DEFAULT_ACK_ELICITING_THRESHOLD,
                max_ack_delay: self.peer_max_ack_delay,
            };
        }
        AckRequest {
            threshold: packets_per_ack - 1,
            max_ack_delay: (srtt / RTT_FRACTION)
                .clamp(self.peer_min_ack_delay, self.peer_max_ack_delay),
        }
    }

    /// Reconsiders the request after the window or the RTT changed. A new
    /// one goes out at most once per round trip, unless it asks for more
    /// ACKs than the one in force: that is never worth waiting for.
    pub(crate) fn update(
        &mut self,
        now: Instant,
        window: u64,
        datagram_size: u64,
        srtt: Duration,
        keep_default: bool,
    ) {
        let target = self.target(window, datagram_size, srtt, keep_default);
        let r = self.requested;
        let changed = target.threshold != r.threshold
            || target.max_ack_delay.abs_diff(r.max_ack_delay) > r.max_ack_delay / 4;
        let due =
            target.threshold < r.threshold || self.newest.is_none_or(|(_, at)| now >= at + srtt);
        if changed && due {
            self.pending = Some(target);
        }
    }

    /// A frame is waiting to go out.
    pub(crate) fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The frame to send now, if any.
    pub(crate) fn poll_frame(&mut self, now: Instant) -> Option<AckFrequencyFrame> {
        let r = self.pending.take()?;
        let sequence = self.newest.map_or(0, |(s, _)| s + 1);
        self.newest = Some((sequence, now));
        self.requested = r;
        self.frames_sent += 1;
        Some(AckFrequencyFrame {
            sequence,
            ack_eliciting_threshold: r.threshold,
            request_max_ack_delay: r.max_ack_delay,
        })
    }

    /// The packet carrying frame `sequence` was lost. Only the newest frame
    /// matters: it is sent again (under a new number) unless a newer
    /// request is already waiting.
    pub(crate) fn on_lost(&mut self, sequence: u64) {
        if self.newest.is_some_and(|(s, _)| s == sequence) {
            self.pending.get_or_insert(self.requested);
        }
    }

    /// ACK_FREQUENCY frames sent, first copies and repeats alike.
    pub(crate) fn frames_sent(&self) -> u64 {
        self.frames_sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const MDS: u64 = 1_000;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// A frame's (sequence, threshold, requested delay).
    fn fields(f: &AckFrequencyFrame) -> (u64, u64, Duration) {
        (
            f.sequence,
            f.ack_eliciting_threshold,
            f.request_max_ack_delay,
        )
    }

    fn rate() -> AckFrequency {
        AckFrequency::new(MS, 25 * MS)
    }

    #[test]
    fn target_follows_the_window_between_every_second_and_tenth_packet() {
        let a = rate();
        let default = AckRequest {
            threshold: 1,
            max_ack_delay: 25 * MS,
        };
        // Up to 23 packets per window: 2 per ACK, the default.
        assert_eq!(a.target(23 * MDS, MDS, 20 * MS, false), default);
        assert_eq!(
            a.target(24 * MDS, MDS, 20 * MS, false),
            AckRequest {
                threshold: 2,
                max_ack_delay: 5 * MS
            }
        );
        assert_eq!(a.target(64 * MDS, MDS, 20 * MS, false).threshold, 7);
        assert_eq!(a.target(10_000 * MDS, MDS, 20 * MS, false).threshold, 9);
        assert_eq!(a.target(10_000 * MDS, MDS, 20 * MS, true), default);
        // The delay stays within what the peer can do and announced.
        assert_eq!(
            a.target(100 * MDS, MDS, 2 * MS, false).max_ack_delay,
            MS,
            "min_ack_delay"
        );
        assert_eq!(
            a.target(100 * MDS, MDS, 400 * MS, false).max_ack_delay,
            25 * MS,
            "the peer's max_ack_delay"
        );
    }

    #[test]
    fn requests_go_out_once_per_round_trip_with_growing_sequence_numbers() {
        let mut a = rate();
        a.update(t(0), 20 * MDS, MDS, 20 * MS, false);
        assert!(!a.has_pending(), "the default needs no frame");
        a.update(t(0), 200 * MDS, MDS, 20 * MS, false);
        assert_eq!(fields(&a.poll_frame(t(0)).unwrap()), (0, 9, 5 * MS));
        assert!(a.poll_frame(t(0)).is_none());
        // Fewer ACKs again within the round trip: wait for it to end.
        a.update(t(5), 80 * MDS, MDS, 20 * MS, false);
        a.update(t(10), 300 * MDS, MDS, 20 * MS, false);
        assert!(!a.has_pending(), "same request");
        // A longer RTT moves the delay by more than a quarter.
        a.update(t(15), 200 * MDS, MDS, 30 * MS, false);
        assert!(!a.has_pending(), "within the (new) round trip");
        a.update(t(30), 200 * MDS, MDS, 30 * MS, false);
        let f = a.poll_frame(t(30)).unwrap();
        assert_eq!(
            (f.sequence, f.request_max_ack_delay),
            (1, 7_500 * Duration::from_micros(1))
        );
        // A small RTT change is not worth a frame.
        a.update(t(60), 200 * MDS, MDS, 32 * MS, false);
        assert!(!a.has_pending());
        // More ACKs (a collapsed window, slow start) go out at once.
        a.update(t(61), 200 * MDS, MDS, 32 * MS, true);
        assert_eq!(fields(&a.poll_frame(t(61)).unwrap()), (2, 1, 25 * MS));
        assert_eq!(a.frames_sent(), 3);
    }

    #[test]
    fn only_the_newest_lost_frame_is_sent_again() {
        let mut a = rate();
        a.update(t(0), 200 * MDS, MDS, 20 * MS, false);
        a.poll_frame(t(0)).unwrap();
        // 40 packets per window: every 5th, asked at once (more ACKs).
        a.update(t(1), 40 * MDS, MDS, 20 * MS, false);
        a.poll_frame(t(1)).unwrap();
        a.on_lost(0);
        assert!(!a.has_pending(), "superseded");
        a.on_lost(1);
        let f = a.poll_frame(t(40)).unwrap();
        assert_eq!((f.sequence, f.ack_eliciting_threshold), (2, 4));
    }
}
