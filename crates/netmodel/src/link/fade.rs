//! Fades: bursty loss whose bursts last a time, not a number of packets.
//!
//! A radio fade (a user walking behind a wall, a train in a cutting) lasts
//! for some milliseconds whatever is sent into it. The per-packet
//! Gilbert-Elliott chain ([`super::loss::GilbertElliott`]) steps once per
//! packet instead, so a sender that slows down during a burst stretches the
//! burst: at one probe every 2 s, a "5-packet" burst lasts 10 s. Here the
//! channel is a two-state Markov chain in continuous time: it stays Good
//! (nothing lost) for an exponentially distributed time with mean
//! `good`, then Bad (everything lost) for an exponential time with mean
//! `bad`, and so on. The long-run loss rate is the share of time in Bad,
//! `bad / (good + bad)`, for a sender that sends evenly in time.
//!
//! The state is only looked at when a packet leaves, and the chain is
//! advanced over the whole gap in one step, exactly: with leaving rates
//! `a = 1/good` and `b = 1/bad`, the chance of being Bad a time `t` after
//! being in state `s` is `pi + (s - pi) e^(-(a + b) t)` where
//! `pi = a / (a + b)` (s is 1 for Bad, 0 for Good). The exponential's lack
//! of memory makes that the whole story, so one draw per packet suffices
//! however long the link was idle.

use crate::Rng;
use brisk_time::Instant;
use rand::Rng as _;
use std::time::Duration;

/// `loss = { fade = { good = "500ms", bad = "20ms" } }`: mean times in the
/// Good and Bad states, both exponentially distributed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fade {
    /// Mean time between fades.
    pub good: Duration,
    /// Mean length of a fade, during which every packet is lost.
    pub bad: Duration,
}

/// Shortest mean a fade state may have: below a microsecond the chain
/// flips many times per packet at any rate a link here runs, and the
/// model would be plain random loss with extra steps.
pub const MIN_FADE_STATE: Duration = Duration::from_micros(1);

impl Fade {
    /// Checks both means are at least [`MIN_FADE_STATE`].
    pub fn new(good: Duration, bad: Duration) -> Result<Fade, String> {
        for (name, d) in [("good", good), ("bad", bad)] {
            if d < MIN_FADE_STATE {
                return Err(format!(
                    "fade {name} must be at least {} us, got {} ns",
                    MIN_FADE_STATE.as_micros(),
                    d.as_nanos()
                ));
            }
        }
        Ok(Fade { good, bad })
    }

    /// The long-run share of time in a fade: the loss rate seen by a
    /// sender that sends evenly in time.
    pub fn mean_loss(&self) -> f64 {
        let (g, b) = (self.good.as_secs_f64(), self.bad.as_secs_f64());
        b / (g + b)
    }
}

/// The running state of a [`Fade`] channel.
#[derive(Debug, Clone)]
pub(crate) struct FadeState {
    fade: Fade,
    /// The state when last looked at, and when; the chain starts Good at
    /// the first packet.
    last: Option<(Instant, bool)>,
}

impl FadeState {
    pub(crate) fn new(fade: Fade) -> FadeState {
        FadeState { fade, last: None }
    }

    /// Advances the chain to `now` and returns whether it is in a fade.
    pub(crate) fn in_fade(&mut self, now: Instant, rng: &mut Rng) -> bool {
        let bad = match self.last {
            None => false,
            Some((then, was_bad)) => {
                let t = now.saturating_duration_since(then).as_secs_f64();
                let a = 1.0 / self.fade.good.as_secs_f64();
                let b = 1.0 / self.fade.bad.as_secs_f64();
                let pi = a / (a + b);
                let s = if was_bad { 1.0 } else { 0.0 };
                let p_bad = pi + (s - pi) * (-(a + b) * t).exp();
                rng.random::<f64>() < p_bad
            }
        };
        self.last = Some((now, bad));
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    /// Sends one packet every `gap` for `n` packets; returns the loss rate
    /// and the mean length of a loss run in time.
    fn sample(fade: Fade, gap: Duration, n: u64, seed: u64) -> (f64, Duration) {
        let mut s = FadeState::new(fade);
        let mut rng = crate::rng(seed, 0);
        let (mut lost, mut runs, mut run_time) = (0u64, 0u64, Duration::ZERO);
        let mut run_start: Option<Instant> = None;
        for i in 0..n {
            let now = Instant::ZERO + gap * i as u32;
            if s.in_fade(now, &mut rng) {
                lost += 1;
                run_start.get_or_insert(now);
            } else if let Some(t) = run_start.take() {
                runs += 1;
                run_time += now - t;
            }
        }
        (lost as f64 / n as f64, run_time / runs.max(1) as u32)
    }

    #[test]
    fn loss_rate_is_the_share_of_time_in_a_fade_at_any_sending_rate() {
        let fade = Fade::new(Duration::from_millis(95), Duration::from_millis(5)).unwrap();
        assert!((fade.mean_loss() - 0.05).abs() < 1e-12);
        for (gap, n) in [(100 * US, 400_000), (10_000 * US, 40_000)] {
            let (loss, _) = sample(fade, gap, n, 7);
            assert!((loss - 0.05).abs() < 0.006, "gap {gap:?}: {loss}");
        }
    }

    #[test]
    fn bursts_last_a_time_not_a_number_of_packets() {
        // Mean fade 20 ms: a sender every 0.1 ms sees ~200-packet bursts,
        // one every 5 ms ~4-packet bursts; both see ~20 ms of loss. (Runs
        // are measured from first to first-after, so they read a gap long.)
        let fade = Fade::new(Duration::from_millis(200), Duration::from_millis(20)).unwrap();
        let (_, fast) = sample(fade, 100 * US, 1_000_000, 3);
        let (_, slow) = sample(fade, 5_000 * US, 40_000, 3);
        for (name, run, gap) in [("fast", fast, 0.1), ("slow", slow, 5.0)] {
            let ms = run.as_secs_f64() * 1e3;
            assert!((16.0..25.0).contains(&(ms - gap / 2.0)), "{name}: {ms} ms");
        }
        // The per-packet chain, for contrast, would give the slow sender
        // bursts 50 times longer in time.
    }

    #[test]
    fn starts_good_and_a_long_idle_forgets_the_state() {
        let fade = Fade::new(Duration::from_millis(1), Duration::from_secs(1000)).unwrap();
        let mut s = FadeState::new(fade);
        let mut rng = crate::rng(1, 0);
        assert!(!s.in_fade(Instant::ZERO, &mut rng), "the chain starts Good");
        // After a long gap the state is Bad with the stationary chance,
        // here ~1: every later packet is lost.
        let later = Instant::from_millis(10_000);
        assert!(s.in_fade(later, &mut rng));
    }

    #[test]
    fn means_below_a_microsecond_are_refused() {
        assert!(Fade::new(Duration::from_nanos(999), Duration::from_millis(1)).is_err());
        assert!(Fade::new(Duration::from_millis(1), Duration::ZERO).is_err());
        assert!(Fade::new(US, US).is_ok());
    }

    #[test]
    fn same_seed_same_losses() {
        let fade = Fade::new(Duration::from_millis(50), Duration::from_millis(10)).unwrap();
        let a = sample(fade, 300 * US, 20_000, 11);
        let b = sample(fade, 300 * US, 20_000, 11);
        let c = sample(fade, 300 * US, 20_000, 12);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
