//! When a periodic source sends: a nominal grid plus a host's timing noise.
//!
//! Two sources on exact grids reach the bottleneck at the same instants
//! again and again, and whichever the engine serves first wins every tie: a
//! ping behind a constant-rate load then meets a full drop-tail queue at
//! each probe, although a probe sent at a random moment finds room about
//! half the time. Floyd and Jacobson named this the traffic phase effect
//! ("On Traffic Phase Effects in Packet-Switched Gateways", 1992), and
//! RFC 2330 (section 11.1) warns that periodic sampling can lock onto
//! periodic network behaviour. Real hosts never keep such a phase: timers
//! fire late by scheduling and interrupt noise, and clocks drift.
//!
//! So each send leaves a uniform random delay in `[0, jitter)` after its
//! nominal time. The nominal grid itself does not move, so the mean rate is
//! exact, and a jitter of at most one interval keeps sends in order. By
//! default the jitter is one whole interval: each send falls anywhere in
//! its own slot, which is what frees a probe from the load's phase.

use brisk_netmodel::Rng;
use brisk_time::Instant;
use rand::Rng as _;
use std::time::Duration;

/// How much a periodic source's sends wander from their grid.
#[derive(Debug, Clone)]
pub struct SendJitter {
    /// The largest delay after a nominal send time; `None` is one whole
    /// interval. Capped at the interval, so sends never swap places.
    pub max: Option<Duration>,
    /// The source's own random stream.
    pub rng: Rng,
}

/// The send times of a periodic source.
#[derive(Debug)]
pub(crate) struct SendClock {
    /// Jitter in nanoseconds; 0 sends exactly on the grid.
    jitter_ns: u64,
    /// The grid time of the next send.
    nominal: Instant,
    /// The next send: `nominal` plus this send's draw.
    next: Instant,
    rng: Rng,
}

impl SendClock {
    /// A clock whose first send is due at `first` (plus its draw), for a
    /// source that sends every `interval`.
    pub(crate) fn new(first: Instant, interval: Duration, jitter: SendJitter) -> Self {
        let max = jitter.max.unwrap_or(interval).min(interval);
        let mut clock = SendClock {
            jitter_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
            nominal: first,
            next: first,
            rng: jitter.rng,
        };
        clock.set_nominal(first);
        clock
    }

    /// When the next send is due.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }

    /// The grid time of the next send.
    pub(crate) fn nominal(&self) -> Instant {
        self.nominal
    }

    /// Moves the next send to grid time `nominal`, with a fresh draw.
    pub(crate) fn set_nominal(&mut self, nominal: Instant) {
        self.nominal = nominal;
        let delay = if self.jitter_ns == 0 {
            0
        } else {
            self.rng.random_range(0..self.jitter_ns)
        };
        self.next = nominal + Duration::from_nanos(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jitter(max: Option<Duration>) -> SendJitter {
        SendJitter {
            max,
            rng: brisk_netmodel::rng(7, 1),
        }
    }

    fn sends(mut c: SendClock, interval: Duration, n: usize) -> Vec<Instant> {
        (0..n)
            .map(|_| {
                let t = c.next();
                let nominal = c.nominal() + interval;
                c.set_nominal(nominal);
                t
            })
            .collect()
    }

    #[test]
    fn zero_jitter_keeps_the_exact_grid() {
        let i = Duration::from_millis(10);
        let c = SendClock::new(Instant::ZERO, i, jitter(Some(Duration::ZERO)));
        let t = sends(c, i, 5);
        assert_eq!(
            t,
            (0..5)
                .map(|k| Instant::from_millis(10 * k))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn each_send_falls_in_its_own_slot_and_covers_it() {
        let i = Duration::from_millis(10);
        let t = sends(SendClock::new(Instant::ZERO, i, jitter(None)), i, 2000);
        let mut early = 0;
        let mut late = 0;
        for (k, at) in t.iter().enumerate() {
            let slot = Instant::from_millis(10 * k as u64);
            assert!(*at >= slot && *at < slot + i, "send {k} at {at:?}");
            let into = *at - slot;
            early += usize::from(into < Duration::from_millis(2));
            late += usize::from(into >= Duration::from_millis(8));
        }
        // Uniform over the slot: a fifth of the sends in each end fifth.
        assert!((300..500).contains(&early), "{early}");
        assert!((300..500).contains(&late), "{late}");
        assert!(t.windows(2).all(|w| w[0] < w[1]), "sends stay in order");
    }

    #[test]
    fn jitter_larger_than_the_interval_is_capped() {
        let i = Duration::from_millis(1);
        let c = SendClock::new(Instant::ZERO, i, jitter(Some(Duration::from_secs(1))));
        let t = sends(c, i, 500);
        for (k, at) in t.iter().enumerate() {
            assert!(*at < Instant::from_millis(k as u64 + 1));
        }
    }
}
