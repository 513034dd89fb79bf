//! The live publisher's encoder: a bitrate ladder of FullHD-class rungs
//! and a fixed group of pictures (GOP) whose key frame is much larger than
//! the frames that follow it.
//!
//! The rung follows the path as the transport reports it. The path is
//! congested when the publisher's backlog (bytes written but not sent
//! yet) holds more than a key frame plus [`BACKLOG_LIMIT`] of video at
//! the current rung,
//! or when the latest RTT sample exceeds the smallest by more than
//! [`QUEUE_LIMIT`]. Then the encoder steps down to the highest rung under
//! [`HEADROOM`] of the rate the path delivered over the last second
//! (bytes acknowledged), less what it takes to drain the backlog within
//! [`DRAIN`]: the delivery rate is the path's only while it is the
//! limit, which congestion says it is. Without congestion it climbs one
//! rung at a key frame (a live encoder starts a higher rung only there:
//! a new rung is a new stream for the player's decoder); a rung too high
//! shows as congestion within the GOP and is undone. It climbs only
//! while the next rung is under [`HEADROOM`] of the controller's rate
//! estimate (what it means to send per smoothed RTT, as the video call
//! reads it): key frames are bursts, and the estimate grows with what
//! they get through.
//!
//! A fixed rate instead of the ladder gives the publisher that does not
//! follow the path, to compare against.

use std::time::Duration;

/// The rungs in bit/s: 480p, 720p, 720p at a higher quality, and two
/// 1080p rates (FullHD live streams are usually sent at 4.5-6 Mbit/s).
pub const LADDER_BPS: [u64; 5] = [1_000_000, 2_000_000, 3_000_000, 4_500_000, 6_000_000];
/// One key frame every two seconds, the usual live-streaming GOP.
pub const GOP: Duration = Duration::from_secs(2);
/// A key frame's size over a predicted frame's, at the same rung (key
/// frames of live H.264 are typically 5-10 times larger).
pub const KEY_FRAME_WEIGHT: u64 = 8;
/// The share of the delivered rate the encoder takes when it steps
/// down, leaving room for the rate's own swings and for FEC repair.
pub const HEADROOM: f64 = 0.8;
/// The encoder plans to send its backlog within this time.
pub const DRAIN: Duration = Duration::from_secs(1);
/// Backlog beyond a key frame, in video time at the current rung, that
/// means congestion.
pub const BACKLOG_LIMIT: Duration = Duration::from_millis(200);
/// Queueing delay (latest RTT over the smallest) that means congestion.
pub const QUEUE_LIMIT: Duration = Duration::from_millis(200);

/// What the transport says about the path when a frame is captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathState {
    /// The controller's rate estimate: what it means to send per smoothed
    /// RTT, in bit/s.
    pub estimate_bps: u64,
    /// Bytes acknowledged over the last second, in bit/s.
    pub delivered_bps: u64,
    /// Bytes written and not sent yet.
    pub backlog_bytes: u64,
    /// Latest RTT sample less the smallest.
    pub queue_delay: Duration,
}

/// The encoder's state: the current rung and where it is in the GOP.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    gop_frames: u64,
    /// A rate that never changes, instead of the ladder.
    fixed_bps: Option<u64>,
    rung: usize,
    frame: u64,
    /// Rung changes so far.
    pub(crate) switches: u64,
    /// The rate of every frame so far, summed: the mean encoded rate is
    /// this over the frame count.
    rate_sum_bps: u64,
}

/// One frame as the encoder produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EncodedFrame {
    pub bytes: u64,
    pub key: bool,
    pub rate_bps: u64,
}

impl Encoder {
    /// An encoder on the ladder, or at `fixed_bps` throughout.
    pub(crate) fn new(fps: u32, fixed_bps: Option<u64>) -> Self {
        Encoder {
            gop_frames: (u64::from(fps.max(1)) * GOP.as_secs()).max(1),
            fixed_bps,
            rung: 0,
            frame: 0,
            switches: 0,
            rate_sum_bps: 0,
        }
    }

    /// The highest rung under [`HEADROOM`] of `rate_bps` less what
    /// draining `backlog_bytes` within [`DRAIN`] takes.
    pub(crate) fn fitting_rung(rate_bps: u64, backlog_bytes: u64) -> usize {
        let drain_bps = backlog_bytes as f64 * 8.0 / DRAIN.as_secs_f64();
        let room = rate_bps as f64 * HEADROOM - drain_bps;
        LADDER_BPS
            .iter()
            .rposition(|r| *r as f64 <= room)
            .unwrap_or(0)
    }

    /// Whether `path` says the current rung is more than it carries. A
    /// key frame is a burst the path takes a while to carry, not a sign
    /// of congestion: the backlog counts beyond one key frame's size.
    fn congested(&self, path: PathState) -> bool {
        let rate_bps = LADDER_BPS[self.rung];
        let key_bytes = self.frame_bytes(rate_bps, true);
        let beyond = path.backlog_bytes.saturating_sub(key_bytes);
        let backlog = Duration::from_secs_f64(beyond as f64 * 8.0 / rate_bps as f64);
        backlog > BACKLOG_LIMIT || path.queue_delay > QUEUE_LIMIT
    }

    /// A frame's bytes at `rate_bps`: a GOP holds one key frame and
    /// gop - 1 predicted ones.
    fn frame_bytes(&self, rate_bps: u64, key: bool) -> u64 {
        let gop_bytes = rate_bps * GOP.as_secs() / 8;
        let unit = gop_bytes / (KEY_FRAME_WEIGHT + self.gop_frames - 1);
        if key { unit * KEY_FRAME_WEIGHT } else { unit }
    }

    /// Encodes the next frame.
    pub(crate) fn next_frame(&mut self, path: PathState) -> EncodedFrame {
        let key = self.frame.is_multiple_of(self.gop_frames);
        if self.fixed_bps.is_some() {
            // No ladder to move on.
        } else if self.congested(path) {
            let fits = Self::fitting_rung(path.delivered_bps, path.backlog_bytes);
            if fits < self.rung {
                self.rung = fits;
                self.switches += 1;
            }
        } else if key
            && self.frame > 0
            && LADDER_BPS
                .get(self.rung + 1)
                .is_some_and(|next| *next as f64 <= path.estimate_bps as f64 * HEADROOM)
        {
            self.rung += 1;
            self.switches += 1;
        }
        self.frame += 1;
        let rate_bps = self.fixed_bps.unwrap_or(LADDER_BPS[self.rung]);
        self.rate_sum_bps += rate_bps;
        EncodedFrame {
            bytes: self.frame_bytes(rate_bps, key),
            key,
            rate_bps,
        }
    }

    /// The mean rate of the frames encoded so far, in bit/s.
    pub(crate) fn mean_rate_bps(&self) -> u64 {
        self.rate_sum_bps.checked_div(self.frame).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAR: PathState = PathState {
        estimate_bps: 100_000_000,
        delivered_bps: 0,
        backlog_bytes: 0,
        queue_delay: Duration::ZERO,
    };

    fn congested(delivered_bps: u64) -> PathState {
        PathState {
            delivered_bps,
            queue_delay: Duration::from_millis(250),
            ..CLEAR
        }
    }

    #[test]
    fn a_gop_at_one_rung_adds_up_to_its_rate() {
        let mut e = Encoder::new(30, None);
        // Four key frames after the first climb to the top rung.
        for _ in 0..5 * 60 {
            e.next_frame(CLEAR);
        }
        let frames: Vec<EncodedFrame> = (0..60).map(|_| e.next_frame(CLEAR)).collect();
        assert!(frames.iter().all(|f| f.rate_bps == 6_000_000));
        assert!(frames[0].key && !frames[1].key);
        assert_eq!(frames[0].bytes, KEY_FRAME_WEIGHT * frames[1].bytes);
        let bytes: u64 = frames.iter().map(|f| f.bytes).sum();
        let want = 6_000_000 * 2 / 8;
        assert!(bytes <= want && bytes > want * 99 / 100, "{bytes} B");
        assert!(e.next_frame(CLEAR).key);
    }

    #[test]
    fn the_rung_drops_at_once_under_congestion_and_climbs_one_rung_per_key_frame() {
        let mut e = Encoder::new(30, None);
        // The first frame starts at the lowest rung.
        assert_eq!(e.next_frame(CLEAR).rate_bps, 1_000_000);
        for _ in 1..60 {
            e.next_frame(CLEAR);
        }
        assert_eq!(e.next_frame(CLEAR).rate_bps, 2_000_000);
        // The queue grows while the path delivers 1.5 Mbit/s: 1.2 Mbit/s
        // usable, the lowest rung.
        assert_eq!(e.next_frame(congested(1_500_000)).rate_bps, 1_000_000);
        // The path clears mid-GOP: the rung holds until the key frame.
        for _ in 62..120 {
            assert_eq!(e.next_frame(CLEAR).rate_bps, 1_000_000);
        }
        let f = e.next_frame(CLEAR);
        assert!(f.key);
        assert_eq!(f.rate_bps, 2_000_000);
        assert_eq!(e.switches, 3);
        // A path whose estimate has no room for the next rung keeps this one.
        for _ in 121..180 {
            e.next_frame(CLEAR);
        }
        let f = e.next_frame(PathState {
            estimate_bps: 3_000_000,
            ..CLEAR
        });
        assert!(f.key);
        assert_eq!(f.rate_bps, 2_000_000);
        // An application-limited delivery rate without congestion is no
        // reason to step down.
        assert_eq!(
            e.next_frame(PathState {
                delivered_bps: 1_000,
                ..CLEAR
            })
            .rate_bps,
            2_000_000
        );
    }

    #[test]
    fn a_backlog_is_congestion_and_lowers_the_rung() {
        let mut e = Encoder::new(30, None);
        for _ in 0..61 {
            e.next_frame(CLEAR);
        }
        // At 2 Mbit/s a key frame is 59.7 kB: that much waiting is not
        // congestion, 120 kB (240 ms of video beyond it) is.
        let waiting = |backlog_bytes, delivered_bps| PathState {
            delivered_bps,
            backlog_bytes,
            ..CLEAR
        };
        assert_eq!(e.next_frame(waiting(60_000, 100_000)).rate_bps, 2_000_000);
        assert_eq!(
            e.next_frame(waiting(120_000, 10_000_000)).rate_bps,
            2_000_000
        );
        // Delivering 2 Mbit/s: 1.6 usable less 0.96 to drain.
        assert_eq!(
            e.next_frame(waiting(120_000, 2_000_000)).rate_bps,
            1_000_000
        );
        // 10 Mbit/s delivered: 8 usable; 500 kB waiting costs 4 Mbit/s to
        // drain in a second, leaving the 3 Mbit/s rung.
        assert_eq!(Encoder::fitting_rung(10_000_000, 0), 4);
        assert_eq!(Encoder::fitting_rung(10_000_000, 500_000), 2);
        // Nothing fits: the lowest rung still plays.
        assert_eq!(Encoder::fitting_rung(100_000, 10_000_000), 0);
    }

    #[test]
    fn a_fixed_rate_ignores_the_path() {
        let mut e = Encoder::new(25, Some(5_000_000));
        assert_eq!(e.next_frame(congested(1_000_000)).rate_bps, 5_000_000);
        assert_eq!(e.next_frame(congested(1_000_000)).rate_bps, 5_000_000);
        assert_eq!(e.mean_rate_bps(), 5_000_000);
    }
}
