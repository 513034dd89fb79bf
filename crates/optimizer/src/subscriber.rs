//! One subscriber (a client address): the in-flight budget shared by all
//! its connections and the pacer that spreads what they send.
//!
//! Mobile networks queue per user, so the optimizer manages a user's flows
//! as one: the budget is a small gain over the measured delivery rate
//! times the minimum RTT (enough to keep the radio busy, too little to fill
//! its queue), and each flow with something to send gets an equal share.

use crate::config::Config;
use brisk_time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// A windowed filter keeps at most one sample per this fraction of its
/// window, so its memory is bounded whatever the ACK rate.
const FILTER_SAMPLES: u32 = 32;

/// A windowed extreme (maximum or minimum) over samples younger than a
/// window, each `(time, value)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Windowed {
    samples: VecDeque<(Instant, u64)>,
}

impl Windowed {
    /// Adds a sample. A sample no better than a newer one can never be the
    /// extreme again, so a max filter keeps a decreasing sequence (a min
    /// filter an increasing one); a sample close in time behind a better
    /// one is dropped, never the better one.
    fn push(
        &mut self,
        now: Instant,
        value: u64,
        window: Duration,
        better: impl Fn(u64, u64) -> bool,
    ) {
        while let Some(&(_, last)) = self.samples.back() {
            if better(last, value) {
                break;
            }
            self.samples.pop_back();
        }
        let spacing = window / FILTER_SAMPLES;
        if self
            .samples
            .back()
            .is_some_and(|&(t, _)| now.saturating_duration_since(t) < spacing)
        {
            return;
        }
        self.samples.push_back((now, value));
    }
    fn expire(&mut self, now: Instant, window: Duration) {
        while self.samples.len() > 1
            && self
                .samples
                .front()
                .is_some_and(|&(t, _)| now.saturating_duration_since(t) > window)
        {
            self.samples.pop_front();
        }
    }
    fn best(&self) -> Option<u64> {
        self.samples.front().map(|&(_, v)| v)
    }
}

/// The per-subscriber measurements and pacer.
#[derive(Debug, Clone)]
pub(crate) struct Subscriber {
    /// Bytes the client acknowledged (cumulatively or by SACK), all flows.
    pub(crate) delivered: u64,
    /// When `delivered` last grew.
    pub(crate) delivered_time: Instant,
    /// Windowed maximum delivery rate, bytes per second.
    rate: Windowed,
    /// Windowed minimum RTT, nanoseconds.
    min_rtt: Windowed,
    /// Smoothed RTT (RFC 6298 weights), for probe timeouts.
    pub(crate) srtt: Option<Duration>,
    /// The shortest handshake RTT of its connections (SYN-ACK out to the
    /// client's ACK back): paces the first flight, nothing else.
    handshake_rtt: Option<Duration>,
    /// Pacer credit, bytes (at most one burst).
    tokens: f64,
    /// When the credit was last refilled.
    refilled: Instant,
}

impl Subscriber {
    pub(crate) fn new(now: Instant, config: &Config) -> Subscriber {
        Subscriber {
            delivered: 0,
            delivered_time: now,
            rate: Windowed::default(),
            min_rtt: Windowed::default(),
            srtt: None,
            handshake_rtt: None,
            tokens: config.pacing_burst_bytes as f64,
            refilled: now,
        }
    }

    /// An RTT sample from a segment sent once and acknowledged.
    pub(crate) fn on_rtt(&mut self, now: Instant, rtt: Duration, config: &Config) {
        let ns = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX);
        self.min_rtt
            .push(now, ns, config.min_rtt_window, |old, new| old < new);
        self.min_rtt.expire(now, config.min_rtt_window);
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
    }

    /// A handshake's RTT, from the optimizer to the client and back.
    pub(crate) fn on_handshake_rtt(&mut self, rtt: Duration) {
        self.handshake_rtt = Some(self.handshake_rtt.map_or(rtt, |r| r.min(rtt)));
    }

    /// A delivery-rate sample: `bytes` delivered over `interval`.
    pub(crate) fn on_rate(
        &mut self,
        now: Instant,
        bytes: u64,
        interval: Duration,
        config: &Config,
    ) {
        // Shorter than the path's RTT, the interval measures ACK compression,
        // not the radio.
        if interval.is_zero() || self.min_rtt().is_some_and(|m| interval < m) {
            return;
        }
        let bps = (bytes as f64 / interval.as_secs_f64()) as u64;
        self.rate
            .push(now, bps, config.rate_window, |old, new| old > new);
        self.rate.expire(now, config.rate_window);
    }

    /// Windowed minimum RTT.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.best().map(Duration::from_nanos)
    }

    /// Windowed maximum delivery rate, bytes per second.
    pub(crate) fn rate_bytes_per_s(&self) -> Option<u64> {
        self.rate.best()
    }

    /// Bytes this subscriber's flows may have in flight together.
    pub(crate) fn budget(&self, config: &Config) -> usize {
        match (self.rate_bytes_per_s(), self.min_rtt()) {
            (Some(rate), Some(rtt)) => {
                let bdp = rate as f64 * rtt.as_secs_f64() * config.budget_gain;
                (bdp as usize).clamp(config.min_budget_bytes, config.max_budget_bytes)
            }
            _ => config.initial_budget_bytes,
        }
    }

    /// Pacing rate, bytes per second: the gain over the measured delivery
    /// rate; before the first measurement, the gain over the initial
    /// budget per min RTT (or handshake RTT), so the first flight reaches
    /// a slower radio spread over most of a round trip instead of as one
    /// burst its buffer may not hold; with no RTT either, the ceiling.
    pub(crate) fn pacing_rate(&self, config: &Config) -> f64 {
        let max = config.max_pacing_rate_bps as f64 / 8.0;
        let min = config.min_pacing_rate_bps as f64 / 8.0;
        let rtt = self.min_rtt().or(self.handshake_rtt);
        let rate = match (self.rate_bytes_per_s(), rtt) {
            (Some(r), _) => r as f64,
            (None, Some(rtt)) if !rtt.is_zero() => {
                config.initial_budget_bytes as f64 / rtt.as_secs_f64()
            }
            _ => return max,
        };
        (rate * config.pacing_gain).clamp(min, max)
    }

    /// Refills the pacer up to `now`.
    pub(crate) fn refill(&mut self, now: Instant, config: &Config) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.pacing_rate(config))
            .min(config.pacing_burst_bytes as f64);
        self.refilled = now;
    }

    /// Whether `len` bytes may leave now; if not, when they may.
    pub(crate) fn pace(&self, len: usize, config: &Config) -> Result<(), Instant> {
        // A datagram larger than a burst waits for a full burst.
        let need = (len as f64).min(config.pacing_burst_bytes as f64);
        if self.tokens >= need {
            return Ok(());
        }
        let wait = (need - self.tokens) / self.pacing_rate(config);
        // Round up to a whole nanosecond so the wake-up finds the credit.
        Err(self.refilled + Duration::from_nanos((wait * 1e9).ceil() as u64 + 1))
    }

    /// Takes `len` bytes of credit.
    pub(crate) fn spend(&mut self, len: usize) {
        self.tokens -= len as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn budget_is_gain_times_rate_times_min_rtt() {
        let c = Config::default();
        let mut s = Subscriber::new(at(0), &c);
        assert_eq!(s.budget(&c), c.initial_budget_bytes);
        s.on_rtt(at(10), Duration::from_millis(80), &c);
        s.on_rtt(at(20), Duration::from_millis(50), &c);
        s.on_rtt(at(30), Duration::from_millis(90), &c);
        assert_eq!(s.min_rtt(), Some(Duration::from_millis(50)));
        // 1.25 MB/s (10 Mbit/s) over 100 ms.
        s.on_rate(at(40), 125_000, Duration::from_millis(100), &c);
        assert_eq!(s.rate_bytes_per_s(), Some(1_250_000));
        // 1.25 x 1.25 MB/s x 50 ms = 78,125 bytes.
        assert_eq!(s.budget(&c), 78_125);
        // An interval under the min RTT is ACK compression: ignored.
        s.on_rate(at(50), 125_000, Duration::from_millis(10), &c);
        assert_eq!(s.rate_bytes_per_s(), Some(1_250_000));
    }

    #[test]
    fn a_rising_rtt_never_pushes_the_minimum_out() {
        let c = Config::default();
        let mut s = Subscriber::new(at(0), &c);
        for i in 0..1000 {
            s.on_rtt(at(i), Duration::from_millis(40 + i), &c);
        }
        assert_eq!(s.min_rtt(), Some(Duration::from_millis(40)));
        assert!(s.min_rtt.samples.len() <= FILTER_SAMPLES as usize + 1);
    }

    #[test]
    fn windowed_max_forgets_old_peaks() {
        let c = Config::default();
        let mut s = Subscriber::new(at(0), &c);
        s.on_rate(at(0), 200_000, Duration::from_millis(100), &c);
        s.on_rate(at(1000), 100_000, Duration::from_millis(100), &c);
        assert_eq!(s.rate_bytes_per_s(), Some(2_000_000));
        s.on_rate(at(3000), 50_000, Duration::from_millis(100), &c);
        assert_eq!(s.rate_bytes_per_s(), Some(1_000_000));
    }

    #[test]
    fn before_any_rate_the_first_flight_is_paced_over_the_handshake_rtt() {
        let c = Config::default();
        let mut s = Subscriber::new(at(0), &c);
        // No RTT either: the ceiling, 20 MB/s.
        assert_eq!(s.pacing_rate(&c), 20e6);
        // A 40 ms handshake: 1.25 x 64 KiB per 40 ms, about 2 MB/s, so
        // the initial budget leaves over 32 ms, not 3 ms.
        s.on_handshake_rtt(Duration::from_millis(40));
        assert_eq!(s.min_rtt(), None, "a handshake RTT paces, nothing else");
        let rate = s.pacing_rate(&c);
        assert!((rate - 1.25 * 65_536.0 / 0.040).abs() < 1.0, "{rate}");
        // Once measured, the gain over the delivery rate.
        s.on_rate(at(100), 125_000, Duration::from_millis(50), &c);
        assert!((s.pacing_rate(&c) - 1.25 * 2_500_000.0).abs() < 1.0);
    }

    #[test]
    fn pacer_releases_20_kb_per_millisecond_at_the_ceiling() {
        let c = Config::default();
        let mut s = Subscriber::new(at(0), &c);
        assert!(s.pace(3_000, &c).is_ok());
        s.spend(3_000);
        let next = s.pace(1500, &c).unwrap_err();
        // 1500 bytes at 20 MB/s: 75 us.
        assert_eq!(next.saturating_duration_since(at(0)).as_micros(), 75);
        s.refill(at(1), &c);
        // A full millisecond refills more than a burst; the credit stops at one.
        assert!(s.pace(3_000, &c).is_ok());
        s.spend(3_000);
        assert!(s.pace(1, &c).is_err());
    }
}
