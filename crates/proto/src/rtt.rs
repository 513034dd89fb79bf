//! Round-trip time estimation (RFC 9002 §5).
//!
//! One estimator per path. The connection feeds it one sample per ACK that
//! newly acknowledges the largest packet number and at least one
//! ack-eliciting packet; congestion control, pacing, loss detection and the
//! probe timeout all read from it.

use std::time::Duration;

use brisk_time::Instant;

/// RFC 9002 `kGranularity`: the timer granularity the PTO never drops below.
pub(crate) const TIMER_GRANULARITY: Duration = Duration::from_millis(1);

/// RFC 9002 `kInitialRtt`: the RTT assumed before the first sample.
pub(crate) const DEFAULT_INITIAL_RTT: Duration = Duration::from_millis(333);

/// The pacer spreads the window over the latest sample once the smoothed
/// RTT exceeds it this many times ([`RttEstimator::pacing_rtt`]).
const PACING_LATEST_FACTOR: u32 = 2;

/// Smoothed RTT, RTT variation, minimum and latest RTT of one path.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    latest: Duration,
    /// The peer's ACK delay reported with `latest`, as limited by the caller.
    latest_ack_delay: Duration,
    smoothed: Duration,
    var: Duration,
    min: Duration,
    /// When the last sample was taken; `None` before the first one.
    last_sample_at: Option<Instant>,
    /// [`pto_rtt_nanos`] of `smoothed` and `var`, kept with them: the
    /// probe timeout is read after every datagram in or out, a sample
    /// comes at most once per ACK.
    pto_rtt_nanos: u64,
}

impl RttEstimator {
    /// Before any sample, RFC 9002 §5.3 has `smoothed_rtt = initial_rtt` and
    /// `rttvar = initial_rtt / 2`; min and latest also report `initial_rtt`
    /// so callers never see a zero RTT.
    pub(crate) fn new(initial_rtt: Duration) -> Self {
        Self {
            latest: initial_rtt,
            latest_ack_delay: Duration::ZERO,
            smoothed: initial_rtt,
            var: initial_rtt / 2,
            min: initial_rtt,
            last_sample_at: None,
            pto_rtt_nanos: pto_rtt_nanos(initial_rtt, initial_rtt / 2),
        }
    }

    /// Takes one RTT sample.
    ///
    /// `ack_delay` is the peer's reported delay, already limited by the caller
    /// to `max_ack_delay` once the handshake is confirmed (RFC 9002 §5.3).
    ///
    /// RFC 9002 §5.2-5.3, in short: the minimum RTT ignores ack delay; the ack
    /// delay is taken off the sample only when the result would not fall below
    /// the minimum (so a peer cannot talk us into an RTT shorter than the path
    /// has ever shown); then `rttvar` moves 1/4 of the way towards
    /// `|smoothed - adjusted|` and `smoothed` moves 1/8 of the way towards
    /// `adjusted`. The first sample initialises everything directly.
    pub(crate) fn update(&mut self, latest_rtt: Duration, ack_delay: Duration, now: Instant) {
        self.latest = latest_rtt;
        self.latest_ack_delay = ack_delay;
        if self.last_sample_at.is_none() {
            self.min = latest_rtt;
            self.smoothed = latest_rtt;
            self.var = latest_rtt / 2;
            self.last_sample_at = Some(now);
            self.pto_rtt_nanos = pto_rtt_nanos(self.smoothed, self.var);
            return;
        }
        self.last_sample_at = Some(now);
        self.min = self.min.min(latest_rtt);
        let adjusted = if latest_rtt >= self.min.saturating_add(ack_delay) {
            latest_rtt - ack_delay
        } else {
            latest_rtt
        };
        let deviation = self.smoothed.abs_diff(adjusted);
        // Saturating: a peer's absurd ack delay or a stalled clock must not
        // panic the estimator.
        self.var = self.var.saturating_mul(3).saturating_add(deviation) / 4;
        self.smoothed = self.smoothed.saturating_mul(7).saturating_add(adjusted) / 8;
        self.pto_rtt_nanos = pto_rtt_nanos(self.smoothed, self.var);
    }

    /// RFC 9002 §5.2: after persistent congestion the old minimum may belong
    /// to a path that no longer exists, so it restarts from the latest sample.
    pub(crate) fn reset_min(&mut self) {
        self.min = self.latest;
    }

    /// Smoothed RTT (RFC 9002 §5.3); the initial RTT before any sample.
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }

    /// The RTT the pacer spreads the window over: the smoothed RTT, unless
    /// the latest sample is below half of it, then that sample. After a
    /// standing queue of a second drains, the samples fall to the path's
    /// own RTT while the smoothed one, moving 1/8 per sample, stays near a
    /// second; a small window spread over that second sends a packet every
    /// few hundred milliseconds, so samples come that rarely and the
    /// smoothed RTT (and the rate) take seconds to catch up while the link
    /// idles, and the window grows meanwhile on ACKs the pacer, not the
    /// window, held back. In steady state no sample falls to half the
    /// smoothed RTT and this is the smoothed RTT.
    pub(crate) fn pacing_rtt(&self) -> Duration {
        // In u128 nanoseconds, where the product cannot overflow: the
        // pacer asks before every datagram, and `Duration::saturating_mul`
        // renormalises seconds and nanoseconds.
        let latest = self.latest.as_nanos() * u128::from(PACING_LATEST_FACTOR);
        if latest < self.smoothed.as_nanos() {
            self.latest
        } else {
            self.smoothed
        }
    }

    /// RTT variation (RFC 9002 §5.3).
    pub fn rttvar(&self) -> Duration {
        self.var
    }

    /// Smallest RTT sample seen (until a persistent-congestion reset).
    pub fn min(&self) -> Duration {
        self.min
    }

    /// The most recent RTT sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The ACK delay the peer reported with the latest sample: a receiver
    /// that holds its ACK for a lone packet adds up to `max_ack_delay` to
    /// [`Self::latest`] that no queue caused.
    pub(crate) fn latest_ack_delay(&self) -> Duration {
        self.latest_ack_delay
    }

    /// True once a real sample has replaced the initial guess.
    pub fn has_sample(&self) -> bool {
        self.last_sample_at.is_some()
    }

    /// When the most recent sample was taken.
    pub fn last_sample_at(&self) -> Option<Instant> {
        self.last_sample_at
    }

    /// The PTO before max_ack_delay and backoff (RFC 9002 §6.2.1):
    /// `smoothed_rtt + max(4 * rttvar, kGranularity)`.
    pub(crate) fn pto_base(&self) -> Duration {
        self.smoothed
            .saturating_add(self.var.saturating_mul(4).max(TIMER_GRANULARITY))
    }

    /// [`RttEstimator::pto_base`], never below twice the smoothed RTT, in
    /// integer nanoseconds (saturating).
    pub(crate) fn pto_rtt_nanos(&self) -> u64 {
        self.pto_rtt_nanos
    }
}

/// [`RttEstimator::pto_rtt_nanos`] of a smoothed RTT and RTT variation.
fn pto_rtt_nanos(smoothed: Duration, var: Duration) -> u64 {
    let smoothed = nanos(smoothed);
    let variation = nanos(var).saturating_mul(4).max(nanos(TIMER_GRANULARITY));
    smoothed
        .saturating_mul(2)
        .max(smoothed.saturating_add(variation))
}

/// `d` in nanoseconds, saturating (at 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(DEFAULT_INITIAL_RTT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn before_any_sample_uses_initial_rtt() {
        let rtt = RttEstimator::default();
        assert!(!rtt.has_sample());
        assert_eq!(rtt.smoothed(), ms(333));
        assert_eq!(rtt.rttvar(), Duration::from_micros(166_500));
        // RFC 9002 §6.2.2: 333 ms + 4 * 166.5 ms = 999 ms before max_ack_delay.
        assert_eq!(rtt.pto_base(), ms(999));
        assert_eq!(rtt.pto_rtt_nanos(), 999_000_000);
    }

    #[test]
    fn first_sample_sets_all_estimates_and_ignores_ack_delay() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(100), ms(10), Instant::from_millis(100));
        assert!(rtt.has_sample());
        assert_eq!(rtt.latest(), ms(100));
        assert_eq!(rtt.min(), ms(100));
        assert_eq!(rtt.smoothed(), ms(100));
        assert_eq!(rtt.rttvar(), ms(50));
        assert_eq!(rtt.pto_base(), ms(300));
        assert_eq!(rtt.pto_rtt_nanos(), 300_000_000);
        assert_eq!(rtt.last_sample_at(), Some(Instant::from_millis(100)));
    }

    /// Worked by hand from the RFC 9002 §5.3 formulas.
    #[test]
    fn ewma_matches_hand_worked_rfc9002_numbers() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(100), ms(10), Instant::from_millis(100));
        // 120 >= 100 + 10, so the ack delay comes off: adjusted = 110.
        // rttvar = 3/4 * 50 + 1/4 * |100 - 110| = 40
        // smoothed = 7/8 * 100 + 1/8 * 110 = 101.25
        rtt.update(ms(120), ms(10), Instant::from_millis(220));
        assert_eq!(rtt.rttvar(), ms(40));
        assert_eq!(rtt.smoothed(), Duration::from_micros(101_250));
        // 105 < 100 + 10, so the ack delay is ignored: adjusted = 105.
        // rttvar = 3/4 * 40 + 1/4 * 3.75 = 30.9375
        // smoothed = 7/8 * 101.25 + 1/8 * 105 = 101.71875
        rtt.update(ms(105), ms(10), Instant::from_millis(330));
        assert_eq!(rtt.rttvar(), Duration::from_nanos(30_937_500));
        assert_eq!(rtt.smoothed(), Duration::from_nanos(101_718_750));
        assert_eq!(rtt.min(), ms(100));
        // pto_base = 101.71875 + 4 * 30.9375 = 225.46875
        assert_eq!(rtt.pto_base(), Duration::from_nanos(225_468_750));
        assert_eq!(rtt.pto_rtt_nanos(), 225_468_750);
    }

    /// The kept probe-timeout RTT follows every sample; once the variation
    /// has decayed, twice the smoothed RTT is the larger term.
    #[test]
    fn pto_rtt_tracks_samples_and_floors_at_twice_smoothed() {
        let mut rtt = RttEstimator::new(ms(333));
        for i in 0..40 {
            rtt.update(
                ms(100 + i % 3),
                Duration::ZERO,
                Instant::from_millis(100 * i),
            );
            let want = (rtt.smoothed() * 2).max(rtt.pto_base());
            assert_eq!(u128::from(rtt.pto_rtt_nanos()), want.as_nanos());
        }
        assert!(rtt.pto_base() < rtt.smoothed() * 2);
    }

    #[test]
    fn min_rtt_ignores_ack_delay_and_only_falls() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(50), Duration::ZERO, Instant::ZERO);
        rtt.update(ms(40), ms(30), Instant::from_millis(50));
        assert_eq!(rtt.min(), ms(40));
        rtt.update(ms(80), Duration::ZERO, Instant::from_millis(100));
        assert_eq!(rtt.min(), ms(40));
        rtt.reset_min();
        assert_eq!(rtt.min(), ms(80));
    }

    #[test]
    fn absurd_samples_saturate_instead_of_panicking() {
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::MAX, Duration::MAX, Instant::FAR_FUTURE);
        rtt.update(Duration::MAX, Duration::MAX, Instant::FAR_FUTURE);
        rtt.update(Duration::ZERO, Duration::MAX, Instant::ZERO);
        assert_eq!(rtt.min(), Duration::ZERO);
        assert!(rtt.pto_base() >= rtt.smoothed());
    }

    #[test]
    fn pto_never_below_granularity() {
        let mut rtt = RttEstimator::new(ms(333));
        for i in 0..200 {
            rtt.update(
                Duration::from_micros(100),
                Duration::ZERO,
                Instant::from_millis(i),
            );
        }
        assert!(rtt.rttvar() < Duration::from_micros(1));
        assert_eq!(rtt.pto_base(), rtt.smoothed() + TIMER_GRANULARITY);
    }

    #[test]
    fn pacing_follows_the_latest_sample_once_it_falls_below_half_the_smoothed_rtt() {
        let mut rtt = RttEstimator::default();
        let t = Instant::ZERO;
        rtt.update(ms(1000), Duration::ZERO, t);
        assert_eq!(rtt.pacing_rtt(), ms(1000));
        // Within a factor of two of the smoothed RTT: the smoothed RTT.
        rtt.update(ms(600), Duration::ZERO, t);
        assert_eq!(rtt.pacing_rtt(), rtt.smoothed());
        assert!(rtt.smoothed() > ms(900));
        // The queue drained: pace over the sample.
        rtt.update(ms(40), Duration::ZERO, t);
        assert!(rtt.smoothed() > ms(800));
        assert_eq!(rtt.pacing_rtt(), ms(40));
        // Until the smoothed RTT has come within a factor of two.
        for _ in 0..40 {
            rtt.update(ms(40), Duration::ZERO, t);
        }
        assert!(rtt.smoothed() < ms(80));
        assert_eq!(rtt.pacing_rtt(), rtt.smoothed());
    }
}
