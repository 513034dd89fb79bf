//! A token bucket in virtual time: at most `rate_per_s` events a second on
//! average, and never more than `burst` at once.
//!
//! The endpoint keeps one per kind of work an unauthenticated datagram can
//! make it do (a Diffie-Hellman handshake, a stateless reply, a stateless
//! reset), so a flood buys at most a fixed share of the CPU and of the
//! uplink whatever its rate. Time is an argument, so the simulator and the
//! socket driver see the same limits.

use brisk_time::Instant;

const NANOS_PER_S: u128 = 1_000_000_000;

/// Tokens are kept in billionths, so a rate of a few per second refills
/// without rounding away.
const SCALE: u128 = NANOS_PER_S;

#[derive(Debug, Clone)]
pub(crate) struct RateLimit {
    rate_per_s: u64,
    burst: u64,
    /// Tokens times [`SCALE`].
    tokens: u128,
    updated: Instant,
}

impl RateLimit {
    /// Starts full: the first `burst` events pass at once.
    pub(crate) fn new(rate_per_s: u64, burst: u64) -> Self {
        RateLimit {
            rate_per_s,
            burst,
            tokens: u128::from(burst) * SCALE,
            updated: Instant::ZERO,
        }
    }

    fn refill(&mut self, now: Instant) {
        if now <= self.updated {
            return;
        }
        let elapsed_ns = u128::from(now.as_nanos() - self.updated.as_nanos());
        // rate/s * ns / 1e9 tokens, times SCALE (= 1e9): rate * ns.
        let add = u128::from(self.rate_per_s).saturating_mul(elapsed_ns);
        let cap = u128::from(self.burst) * SCALE;
        self.tokens = self.tokens.saturating_add(add).min(cap);
        self.updated = now;
    }

    /// Takes one token if there is one.
    pub(crate) fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= SCALE {
            self.tokens -= SCALE;
            true
        } else {
            false
        }
    }

    /// Whether a token is there, without taking it.
    pub(crate) fn has_token(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_rate() {
        let mut r = RateLimit::new(1_000, 5);
        let t0 = Instant::from_millis(0);
        let passed = (0..100).filter(|_| r.try_take(t0)).count();
        assert_eq!(passed, 5, "the burst, then nothing at the same instant");
        // 1000 per second is one per millisecond.
        let t1 = Instant::from_millis(10);
        let passed = (0..100).filter(|_| r.try_take(t1)).count();
        assert_eq!(passed, 5, "ten earned, capped at the burst of five");
        let t2 = Instant::from_micros(10_500);
        assert!(!r.try_take(t2), "half a token is none");
        assert!(r.try_take(Instant::from_micros(11_000)));
    }

    #[test]
    fn slow_rates_accumulate_and_time_going_back_is_ignored() {
        let mut r = RateLimit::new(2, 1);
        assert!(r.try_take(Instant::ZERO));
        assert!(!r.has_token(Instant::from_millis(499)));
        assert!(r.has_token(Instant::from_millis(500)));
        // An earlier `now` than the last one neither refills nor loses.
        assert!(r.try_take(Instant::from_millis(100)));
        assert!(!r.try_take(Instant::from_millis(500)));
        let mut zero = RateLimit::new(0, 0);
        assert!(!zero.try_take(Instant::from_millis(1_000_000)));
    }
}
