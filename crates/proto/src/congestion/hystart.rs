//! HyStart++ (RFC 9406): leave the initial slow start when the round trip
//! time says a queue is building, before a deep buffer overflows.
//!
//! Slow start is split into rounds of one round trip each: a round ends
//! when an ACK acknowledges a packet sent after the round began. Each round
//! keeps the smallest RTT of its ACKs. Once a round has seen
//! [`N_RTT_SAMPLE`] samples and its minimum exceeds the previous round's
//! by a threshold (an eighth of that minimum, kept between
//! [`MIN_RTT_THRESH`] and [`MAX_RTT_THRESH`]), the sender moves to
//! Conservative Slow Start: the window grows by a quarter of what standard
//! slow start would add. If a later round's minimum falls below the one
//! that triggered it, the rise was not a queue and standard slow start
//! resumes; after [`CSS_ROUNDS`] rounds it was, and the controller moves to
//! congestion avoidance with its window as the threshold.
//!
//! Only the first slow start of a connection uses it (the controller stops
//! asking once its threshold is set); every sender here is paced, so the
//! RFC's per-ACK burst limit `L` is unlimited.

use std::time::Duration;

use brisk_time::Instant;

use super::AckSample;

/// RFC 9406 `MIN_RTT_THRESH`: the smallest RTT rise taken for a queue.
pub(crate) const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// RFC 9406 `MAX_RTT_THRESH`: the largest RTT rise ever required.
pub(crate) const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// RFC 9406 `MIN_RTT_DIVISOR`: the rise required is this fraction of the
/// previous round's minimum RTT (within the two bounds above).
pub(crate) const MIN_RTT_DIVISOR: u32 = 8;
/// RFC 9406 `N_RTT_SAMPLE`: RTT samples a round needs before it is judged.
pub(crate) const N_RTT_SAMPLE: u32 = 8;
/// RFC 9406 `CSS_GROWTH_DIVISOR`: Conservative Slow Start grows the window
/// by this fraction of the acknowledged bytes.
pub(crate) const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 `CSS_ROUNDS`: rounds of Conservative Slow Start (the round it
/// began in counts as the first) before congestion avoidance.
pub(crate) const CSS_ROUNDS: u32 = 5;

/// Where the initial slow start stands after one ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlowStartPhase {
    /// Standard slow start: the window grows by the bytes acknowledged.
    Standard,
    /// Conservative Slow Start: it grows by a [`CSS_GROWTH_DIVISOR`]th.
    Conservative,
    /// Leave slow start now: the window becomes the threshold.
    Exit,
}

impl SlowStartPhase {
    /// How many acknowledged bytes buy one byte of window in this phase
    /// (zero after the exit: no slow-start growth at all).
    pub(crate) fn growth_divisor(self) -> u64 {
        match self {
            SlowStartPhase::Standard => 1,
            SlowStartPhase::Conservative => CSS_GROWTH_DIVISOR,
            SlowStartPhase::Exit => 0,
        }
    }
}

/// The phase one slow-start ACK of a loss-based controller grows the
/// window in: the detector's say during the `first` slow start when
/// HyStart++ is configured, standard growth otherwise.
pub(crate) fn slow_start_phase(
    hystart: Option<&mut HyStart>,
    first: bool,
    ack: &AckSample,
) -> SlowStartPhase {
    match hystart {
        Some(h) if first => h.on_ack(ack.now, ack.largest_acked_sent_at, ack.rtt_sample()),
        _ => SlowStartPhase::Standard,
    }
}

/// The HyStart++ detector, fed one ACK at a time by a loss-based
/// controller while it is in its initial slow start.
#[derive(Clone, Debug)]
pub(crate) struct HyStart {
    /// The current round began at this time: an ACK of a packet sent later
    /// ends it. `None` before the first ACK.
    round_start: Option<Instant>,
    /// The previous round's smallest RTT (`lastRoundMinRTT`).
    last_round_min_rtt: Option<Duration>,
    /// This round's smallest RTT so far (`currentRoundMinRTT`).
    current_round_min_rtt: Option<Duration>,
    /// RTT samples this round (`rttSampleCount`).
    samples: u32,
    /// In Conservative Slow Start: the round minimum that started it
    /// (`cssBaselineMinRtt`).
    css_baseline: Option<Duration>,
    /// Rounds begun in Conservative Slow Start, the first included.
    css_rounds: u32,
    exited: bool,
}

impl Default for HyStart {
    fn default() -> Self {
        Self::new()
    }
}

impl HyStart {
    pub(crate) fn new() -> Self {
        Self {
            round_start: None,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            samples: 0,
            css_baseline: None,
            css_rounds: 0,
            exited: false,
        }
    }

    /// The phase the last ACK left slow start in.
    pub(crate) fn phase(&self) -> SlowStartPhase {
        if self.exited {
            SlowStartPhase::Exit
        } else if self.css_baseline.is_some() {
            SlowStartPhase::Conservative
        } else {
            SlowStartPhase::Standard
        }
    }

    /// The RFC 9406 threshold: the RTT rise over `last` taken for a queue.
    pub(crate) fn rtt_thresh(last: Duration) -> Duration {
        (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
    }

    /// One ACK in slow start: `now`, the send time of the newest packet it
    /// acknowledges, and the RTT sample it produced, if any. Returns the
    /// phase its acknowledged bytes grow the window in.
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        largest_acked_sent_at: Instant,
        rtt_sample: Option<Duration>,
    ) -> SlowStartPhase {
        if self.exited {
            return SlowStartPhase::Exit;
        }
        if self
            .round_start
            .is_none_or(|start| largest_acked_sent_at > start)
        {
            self.start_round(now);
            if self.exited {
                return SlowStartPhase::Exit;
            }
        }
        if let Some(rtt) = rtt_sample {
            self.current_round_min_rtt =
                Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.samples = self.samples.saturating_add(1);
        }
        if self.samples >= N_RTT_SAMPLE
            && let Some(current) = self.current_round_min_rtt
        {
            match self.css_baseline {
                None => {
                    if let Some(last) = self.last_round_min_rtt
                        && current >= last.saturating_add(Self::rtt_thresh(last))
                    {
                        self.css_baseline = Some(current);
                        self.css_rounds = 1;
                    }
                }
                Some(baseline) => {
                    // The RTT fell back: the rise was not a queue.
                    if current < baseline {
                        self.css_baseline = None;
                        self.css_rounds = 0;
                    }
                }
            }
        }
        self.phase()
    }

    /// A new round begins at `now`: the last round's minimum becomes the
    /// reference, and a Conservative Slow Start that has run its rounds ends.
    fn start_round(&mut self, now: Instant) {
        if self.round_start.is_some() && self.css_baseline.is_some() {
            if self.css_rounds >= CSS_ROUNDS {
                self.exited = true;
                return;
            }
            self.css_rounds += 1;
        }
        self.round_start = Some(now);
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = None;
        self.samples = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Drives one round of `acks` ACKs spaced 1 ms apart from `start`,
    /// each an RTT sample of `rtt`, for packets sent after the round began.
    /// Returns the phase after the last ACK and the next round's start.
    fn round(
        h: &mut HyStart,
        start: Instant,
        acks: u32,
        rtt: Duration,
    ) -> (SlowStartPhase, Instant) {
        let mut phase = h.phase();
        let mut now = start;
        for i in 0..acks {
            now = start + MS * i;
            // Every ACK of this round is for a packet sent just after the
            // previous round began (one RTT back, at least).
            phase = h.on_ack(now, start - rtt + MS / 2, Some(rtt));
        }
        (phase, now + MS)
    }

    #[test]
    fn threshold_is_an_eighth_of_the_rtt_within_bounds() {
        assert_eq!(HyStart::rtt_thresh(10 * MS), MIN_RTT_THRESH);
        assert_eq!(HyStart::rtt_thresh(80 * MS), 10 * MS);
        assert_eq!(HyStart::rtt_thresh(500 * MS), MAX_RTT_THRESH);
    }

    #[test]
    fn steady_rtt_stays_in_standard_slow_start() {
        let mut h = HyStart::new();
        let mut t = Instant::from_millis(1_000);
        for _ in 0..20 {
            let (phase, next) = round(&mut h, t, 16, 50 * MS);
            assert_eq!(phase, SlowStartPhase::Standard);
            t = next + 50 * MS;
        }
    }

    #[test]
    fn a_rise_past_the_threshold_starts_css_only_after_enough_samples() {
        let mut h = HyStart::new();
        let t = Instant::from_millis(1_000);
        let (_, t) = round(&mut h, t, 10, 80 * MS);
        // 80 ms: the threshold is 10 ms. A rise of 9 ms is not a queue.
        let (phase, t) = round(&mut h, t + 80 * MS, 10, 89 * MS);
        assert_eq!(phase, SlowStartPhase::Standard);
        // 10 ms over the last round's 89 ms is below its 11.1 ms threshold.
        let (phase, t) = round(&mut h, t + 89 * MS, 10, 99 * MS);
        assert_eq!(phase, SlowStartPhase::Standard);
        // 13 ms over 99 ms passes its 12.4 ms threshold: a queue, but only
        // judged from the eighth sample on.
        let start = t + 99 * MS;
        for i in 0..N_RTT_SAMPLE {
            let phase = h.on_ack(start + MS * i, start - MS, Some(112 * MS));
            let want = if i + 1 < N_RTT_SAMPLE {
                SlowStartPhase::Standard
            } else {
                SlowStartPhase::Conservative
            };
            assert_eq!(phase, want, "sample {i}");
        }
    }

    #[test]
    fn css_runs_its_rounds_then_exits() {
        let mut h = HyStart::new();
        let t = Instant::from_millis(1_000);
        let (_, t) = round(&mut h, t, 10, 40 * MS);
        let (phase, mut t) = round(&mut h, t + 40 * MS, 10, 50 * MS);
        assert_eq!(phase, SlowStartPhase::Conservative);
        // The triggering round was the first; four more stay conservative,
        // with the RTT still at (or above) the baseline.
        for r in 0..CSS_ROUNDS - 1 {
            let (phase, next) = round(&mut h, t + 50 * MS, 10, 50 * MS + MS * r);
            assert_eq!(phase, SlowStartPhase::Conservative, "round {r}");
            t = next;
        }
        // The first ACK of the next round ends slow start, for good.
        assert_eq!(
            h.on_ack(t + 60 * MS, t + MS, Some(60 * MS)),
            SlowStartPhase::Exit
        );
        assert_eq!(
            h.on_ack(t + 61 * MS, t + 2 * MS, Some(20 * MS)),
            SlowStartPhase::Exit
        );
    }

    #[test]
    fn a_falling_rtt_in_css_resumes_standard_slow_start() {
        let mut h = HyStart::new();
        let t = Instant::from_millis(1_000);
        let (_, t) = round(&mut h, t, 10, 40 * MS);
        let (phase, t) = round(&mut h, t + 40 * MS, 10, 50 * MS);
        assert_eq!(phase, SlowStartPhase::Conservative);
        // Seven samples below the baseline are not yet enough to judge.
        let start = t + 50 * MS;
        for i in 0..N_RTT_SAMPLE - 1 {
            assert_eq!(
                h.on_ack(start + MS * i, start - MS, Some(45 * MS)),
                SlowStartPhase::Conservative
            );
        }
        assert_eq!(
            h.on_ack(start + 10 * MS, start - MS, Some(45 * MS)),
            SlowStartPhase::Standard
        );
        // And the CSS round count starts over on the next rise.
        let (_, t) = round(&mut h, start + 20 * MS, 10, 45 * MS);
        let (phase, mut t) = round(&mut h, t + 45 * MS, 10, 60 * MS);
        assert_eq!(phase, SlowStartPhase::Conservative);
        for _ in 0..CSS_ROUNDS - 1 {
            let (phase, next) = round(&mut h, t + 60 * MS, 10, 60 * MS);
            assert_eq!(phase, SlowStartPhase::Conservative);
            t = next;
        }
        assert_eq!(
            h.on_ack(t + 60 * MS, t + MS, Some(60 * MS)),
            SlowStartPhase::Exit
        );
    }

    #[test]
    fn acks_without_rtt_samples_are_not_judged() {
        let mut h = HyStart::new();
        let t = Instant::from_millis(1_000);
        let (_, t) = round(&mut h, t, 10, 40 * MS);
        // A round of ACKs that carried no RTT sample (the newest packet
        // they acknowledge was acknowledged before) never triggers.
        for i in 0..20 {
            assert_eq!(h.on_ack(t + MS * i, t - MS, None), SlowStartPhase::Standard);
        }
    }
}
