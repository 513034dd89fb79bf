//! The live player: a jitter buffer in front of the screen, as a function
//! of when each frame was captured and when it arrived, so the same
//! arrivals always give the same playback.
//!
//! - **Start-up.** The player starts once it holds `buffer` of video from
//!   the first frame on (every frame captured within `buffer` of the first
//!   has arrived). The glass-to-glass latency it has then (capture to
//!   screen) is its target for the rest of the session.
//! - **Playback.** Each frame is shown one capture interval after the one
//!   before, never earlier than its capture plus the target latency.
//! - **Rebuffering.** A frame not there when its turn comes freezes the
//!   picture until the buffer is full again (`buffer` of video from that
//!   frame on has arrived), as at start-up.
//! - **Back to the live edge.** The player then resumes with the newest
//!   frame that has arrived and whose turn at the target latency has come,
//!   passing over (decoding without showing) the frames before it, as live
//!   players seek to the live edge: a viewer of a live event wants the
//!   event now, not a replay of what the freeze hid.
//! - **Catch-up.** While its latency is still above the target and half
//!   a buffer of video waits, the player plays [`CATCH_UP_SPEED`] times
//!   faster, as low-latency players do, until it is back on target.

use brisk_time::Instant;
use std::time::Duration;

/// Playback speed while the player is behind its target latency.
pub const CATCH_UP_SPEED: f64 = 1.2;

/// One frame as the player sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameArrival {
    pub captured: Instant,
    /// `None`: not arrived (whole) by the end of the run.
    pub arrived: Option<Instant>,
    pub bytes: u64,
}

/// What the viewer saw up to the end of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Playback {
    /// When the first frame was shown; `None`: the buffer never filled.
    pub started_at: Option<Instant>,
    /// Capture to screen, per frame shown.
    pub latencies: Vec<Duration>,
    /// Time frozen after start-up, and how many freezes.
    pub stalled: Duration,
    pub stalls: u64,
    /// Frames passed over to get back to the live edge after a freeze.
    pub skipped: u64,
    /// From the first frame shown to the end of the run.
    pub watched: Duration,
    /// Bytes of the frames shown, and the video time they cover.
    pub shown_bytes: u64,
    pub shown_media: Duration,
}

impl Playback {
    /// Share of the watching time the picture was frozen.
    pub fn rebuffering_ratio(&self) -> f64 {
        if self.watched.is_zero() {
            return 0.0;
        }
        self.stalled.as_secs_f64() / self.watched.as_secs_f64()
    }

    /// The rate of the video shown, in bit/s.
    pub fn shown_bps(&self) -> f64 {
        if self.shown_media.is_zero() {
            return 0.0;
        }
        self.shown_bytes as f64 * 8.0 / self.shown_media.as_secs_f64()
    }
}

/// When `buffer` of video from frame `from` on has arrived; `None` if a
/// frame of it never did.
fn filled_at(frames: &[FrameArrival], from: usize, buffer: Duration) -> Option<Instant> {
    let first = frames.get(from)?.captured;
    frames[from..]
        .iter()
        .take_while(|f| f.captured <= first + buffer)
        .map(|f| f.arrived)
        .try_fold(first, |latest, a| a.map(|a| latest.max(a)))
}

/// Plays `frames` (in capture order, one every `period`) through a
/// buffer of `buffer` until `end`.
pub(crate) fn play(
    frames: &[FrameArrival],
    buffer: Duration,
    period: Duration,
    end: Instant,
) -> Playback {
    let mut pb = Playback::default();
    let Some(first) = frames.first() else {
        return pb;
    };
    let Some(start) = filled_at(frames, 0, buffer).filter(|t| *t <= end) else {
        return pb;
    };
    pb.started_at = Some(start);
    pb.watched = end - start;
    let mut target = start - first.captured;
    // The fastest a frame has come: the target never needs more than the
    // buffer on top of it.
    let mut fastest = Duration::MAX;
    let mut t = start;
    let mut prev: Option<Instant> = None;
    let mut last_shown = None;
    let mut i = 0;
    while let Some(f) = frames.get(i) {
        if let Some(prev) = prev {
            let gap = f.captured - prev;
            // Faster only while half a buffer of video waits from this
            // frame on, so catching up does not run it dry.
            let ahead = filled_at(frames, i, buffer / 2).is_some_and(|r| r <= t);
            let step = if t - prev > target && ahead {
                gap.div_f64(CATCH_UP_SPEED)
            } else {
                gap
            };
            t = (t + step).max(f.captured + target);
        }
        if t > end {
            break;
        }
        let mut shown = i;
        if f.arrived.is_none_or(|a| a > t) {
            pb.stalls += 1;
            let Some(resume) = filled_at(frames, i, buffer).filter(|r| *r <= end) else {
                pb.stalled += end - t;
                break;
            };
            pb.stalled += resume - t;
            t = resume;
            // Back to the live edge: the newest frame in whose turn at
            // the target latency has come (frame i's has).
            shown = frames[i..]
                .iter()
                .rposition(|g| g.captured + target <= t && g.arrived.is_some_and(|a| a <= t))
                .map_or(i, |k| i + k);
            pb.skipped += (shown - i) as u64;
        }
        let Some(f) = frames.get(shown) else {
            break;
        };
        if let Some(a) = f.arrived {
            fastest = fastest.min(a - f.captured);
            target = target.min(fastest + buffer);
        }
        pb.latencies.push(t - f.captured);
        pb.shown_bytes += f.bytes;
        last_shown = Some(f.captured);
        prev = Some(f.captured);
        i = shown + 1;
    }
    if let Some(last) = last_shown {
        pb.shown_media = last - first.captured + period;
    }
    pb
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_millis(40);
    const BUFFER: Duration = Duration::from_millis(400);

    /// `n` frames every 40 ms from 1 s on, each arriving `delay(i)` later.
    fn frames(n: u64, delay: impl Fn(u64) -> Option<u64>) -> Vec<FrameArrival> {
        (0..n)
            .map(|i| {
                let captured = Instant::from_millis(1_000 + 40 * i);
                FrameArrival {
                    captured,
                    arrived: delay(i).map(|d| captured + Duration::from_millis(d)),
                    bytes: 1_000,
                }
            })
            .collect()
    }

    #[test]
    fn steady_arrivals_play_at_buffer_plus_delay_without_a_freeze() {
        let f = frames(100, |_| Some(100));
        let pb = play(&f, BUFFER, PERIOD, Instant::from_millis(10_000));
        // Frame 10 (400 ms of video after the first) arrives at 1.5 s.
        assert_eq!(pb.started_at, Some(Instant::from_millis(1_500)));
        assert_eq!(pb.latencies.len(), 100);
        assert!(
            pb.latencies
                .iter()
                .all(|l| *l == Duration::from_millis(500))
        );
        assert_eq!((pb.stalls, pb.stalled), (0, Duration::ZERO));
        assert_eq!(pb.shown_media, Duration::from_secs(4));
        assert_eq!(pb.shown_bps(), 200_000.0);
    }

    #[test]
    fn a_late_frame_freezes_until_the_buffer_refills_then_jumps_to_the_live_edge() {
        // The stream stalls in the network: frames 50 on (frame 50 was
        // captured at 3 s, due on screen at 3.5 s) arrive no earlier than
        // 4.1 s, in one go.
        let f = frames(200, |i| {
            Some(if i >= 50 {
                4_100u64.saturating_sub(1_000 + 40 * i).max(100)
            } else {
                100
            })
        });
        let pb = play(&f, BUFFER, PERIOD, Instant::from_millis(20_000));
        assert_eq!((pb.stalls, pb.stalled), (1, Duration::from_millis(600)));
        // At 4.1 s the newest frame due at 500 ms is frame 65 (3.6 s).
        assert_eq!(pb.skipped, 15);
        assert_eq!(pb.latencies.len(), 185);
        assert!(
            pb.latencies
                .iter()
                .all(|l| *l == Duration::from_millis(500))
        );
        let ratio = pb.rebuffering_ratio();
        assert!((ratio - 0.6 / 18.5).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn a_player_behind_its_target_catches_up_only_with_a_full_buffer() {
        // Frames 50-99 take 1.1 s instead of 100 ms; frame 100 on arrive
        // in order behind them (not before 6.06 s), then on time.
        let f = frames(300, |i| {
            Some(match i {
                0..50 => 100,
                50..100 => 1_100,
                _ => 6_060u64.saturating_sub(1_000 + 40 * i).max(100),
            })
        });
        let pb = play(&f, BUFFER, PERIOD, Instant::from_millis(20_000));
        // Frame 50 is due at 3.5 s; frames 50-60 are in at 4.5 s, when
        // the newest frame in is 60: 1.1 s behind.
        assert_eq!((pb.stalls, pb.stalled), (1, Duration::from_secs(1)));
        assert_eq!(pb.skipped, 10);
        assert_eq!(pb.latencies[50], Duration::from_millis(1_100));
        // No faster play while the late frames trickle in (it would
        // freeze again), then back to 500 ms at 1.2x.
        assert_eq!(pb.latencies[89], Duration::from_millis(1_100));
        assert!(pb.latencies[120] < Duration::from_millis(1_000));
        assert_eq!(*pb.latencies.last().unwrap(), Duration::from_millis(500));
    }

    #[test]
    fn a_frame_that_never_arrives_freezes_the_picture_to_the_end() {
        let f = frames(100, |i| (i != 30).then_some(100));
        let pb = play(&f, BUFFER, PERIOD, Instant::from_millis(10_000));
        assert_eq!(pb.latencies.len(), 30);
        assert_eq!(pb.stalls, 1);
        // Frame 30's turn: 1.5 s + 30 x 40 ms = 2.7 s.
        assert_eq!(pb.stalled, Duration::from_millis(7_300));
    }

    #[test]
    fn a_buffer_that_never_fills_never_starts() {
        let f = frames(100, |i| (i != 3).then_some(100));
        let pb = play(&f, BUFFER, PERIOD, Instant::from_millis(10_000));
        assert_eq!(pb.started_at, None);
        assert!(pb.latencies.is_empty());
        assert_eq!(pb.rebuffering_ratio(), 0.0);
        assert_eq!(
            play(&[], BUFFER, PERIOD, Instant::from_millis(1)),
            Playback::default()
        );
    }
}
