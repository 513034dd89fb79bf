//! Server-side replay protection for early data (docs/PROTOCOL.md §3.3).
//!
//! An IK first flight can be recorded and sent again; every copy decrypts,
//! so without memory the server would hand its early data to the
//! application once per copy. This register remembers, for a bounded time
//! and number of flights, each first flight whose early data was used, in
//! the manner of RFC 8446 section 8.2 ("client hello recording"):
//!
//! - Each first flight with early data carries the client's wall-clock time
//!   (inside the encrypted, authenticated payload, so a replay cannot
//!   change it). Early data whose time is more than `window` from the
//!   server's clock is refused: a copy replayed later than that is refused
//!   without any memory.
//! - Within the window a flight is named by its time and the client's
//!   ephemeral public key, fresh for every connection. A name seen before
//!   is a replay.
//! - Memory is bounded: past `capacity` names the oldest is forgotten and
//!   the register's horizon moves up to its time. A flight at or before
//!   the horizon cannot be told from a forgotten one, so its early data is
//!   refused too. Refusing never breaks a connection: the client queued
//!   the same bytes on the stream, and they arrive one round trip later
//!   as ordinary data.
//!
//! The register is one per server endpoint; servers that share a key but
//! not an endpoint (several processes, several machines) each keep their
//! own, so a flight replayed to each of N of them can reach the
//! application N times.

use std::collections::BTreeSet;
use std::time::Duration;

/// Bytes of the client's ephemeral key kept per flight. Keys are fresh
/// random X25519 points, so 128 bits tell genuine clients apart; a forged
/// flight that shares a prefix with another client's key (and its exact
/// millisecond) only makes that client's early data wait a round trip.
const KEY_PREFIX_LEN: usize = 16;

/// How much a server remembers to refuse replayed early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AntiReplayConfig {
    /// The largest difference, either way, between the time a first flight
    /// carries and the server's clock for its early data to be used. It
    /// must cover the clients' clock error plus the one-way delay; a
    /// client outside it still connects, one round trip slower.
    pub window: Duration,
    /// First flights remembered at most (each about 24 bytes plus the
    /// set's overhead). A flood of more than this per `window` moves the
    /// horizon forward and makes genuine early data wait a round trip.
    pub capacity: usize,
}

impl Default for AntiReplayConfig {
    /// 10 s either way, 100,000 flights: 10,000 new connections a second
    /// with early data before the horizon has to move.
    fn default() -> Self {
        AntiReplayConfig {
            window: Duration::from_secs(10),
            capacity: 100_000,
        }
    }
}

/// What the register says about one first flight's early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Never seen: use it (and it is now remembered).
    Fresh,
    /// Seen before: a replay.
    Replayed,
    /// Its time is further from the server's clock than the window, or it
    /// carries none.
    OutsideWindow,
    /// At or before the horizon: it may have been seen and forgotten.
    Undecidable,
}

/// The set of recently used first flights, ordered by their time so the
/// oldest is dropped first.
#[derive(Debug)]
pub(crate) struct AntiReplay {
    config: AntiReplayConfig,
    /// (flight time in ms since the Unix epoch, key prefix).
    seen: BTreeSet<(u64, [u8; KEY_PREFIX_LEN])>,
    /// The latest time of a flight forgotten to stay within `capacity`.
    horizon_ms: Option<u64>,
    /// Early data refused, by reason.
    pub(crate) counts: RefusedCounts,
}

/// First flights whose early data the register refused, by reason.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RefusedCounts {
    pub(crate) replayed: u64,
    pub(crate) outside_window: u64,
    pub(crate) undecidable: u64,
}

impl AntiReplay {
    pub(crate) fn new(config: AntiReplayConfig) -> Self {
        AntiReplay {
            config,
            seen: BTreeSet::new(),
            horizon_ms: None,
            counts: RefusedCounts::default(),
        }
    }

    /// Flights remembered now.
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }

    /// Decides on the early data of a first flight sent at `flight_ms`
    /// (client's clock, ms since the Unix epoch; `None` if it carried no
    /// time) by the client whose ephemeral public key is `ephemeral`, at
    /// server time `now_ms`. Only a `Fresh` verdict lets the data through,
    /// and it records the flight.
    pub(crate) fn check(
        &mut self,
        now_ms: u64,
        flight_ms: Option<u64>,
        ephemeral: &[u8],
    ) -> Verdict {
        let verdict = self.decide(now_ms, flight_ms, ephemeral);
        match verdict {
            Verdict::Fresh => {}
            Verdict::Replayed => self.counts.replayed += 1,
            Verdict::OutsideWindow => self.counts.outside_window += 1,
            Verdict::Undecidable => self.counts.undecidable += 1,
        }
        verdict
    }

    fn decide(&mut self, now_ms: u64, flight_ms: Option<u64>, ephemeral: &[u8]) -> Verdict {
        let window_ms = self.config.window.as_millis() as u64;
        // Flights older than the window are refused by their time alone.
        let oldest_ms = now_ms.saturating_sub(window_ms);
        while self.seen.first().is_some_and(|&(t, _)| t < oldest_ms) {
            self.seen.pop_first();
        }
        let Some(t) = flight_ms else {
            return Verdict::OutsideWindow;
        };
        if t.abs_diff(now_ms) > window_ms {
            return Verdict::OutsideWindow;
        }
        if self.horizon_ms.is_some_and(|h| t <= h) || self.config.capacity == 0 {
            return Verdict::Undecidable;
        }
        let mut key = [0u8; KEY_PREFIX_LEN];
        let n = ephemeral.len().min(KEY_PREFIX_LEN);
        key[..n].copy_from_slice(&ephemeral[..n]);
        if !self.seen.insert((t, key)) {
            return Verdict::Replayed;
        }
        let mut verdict = Verdict::Fresh;
        while self.seen.len() > self.config.capacity {
            let Some(oldest) = self.seen.pop_first() else {
                break;
            };
            self.horizon_ms = Some(self.horizon_ms.map_or(oldest.0, |h| h.max(oldest.0)));
            if oldest == (t, key) {
                // The new flight is the oldest: it cannot be remembered.
                verdict = Verdict::Undecidable;
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> [u8; 32] {
        let mut k = [0u8; 32];
        k[..8].copy_from_slice(&i.to_le_bytes());
        k[8..16].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
        k
    }

    fn register(window_s: u64, capacity: usize) -> AntiReplay {
        AntiReplay::new(AntiReplayConfig {
            window: Duration::from_secs(window_s),
            capacity,
        })
    }

    #[test]
    fn a_flight_is_fresh_once_then_a_replay() {
        let mut r = register(10, 100);
        assert_eq!(r.check(1_000, Some(1_000), &key(1)), Verdict::Fresh);
        for _ in 0..22 {
            assert_eq!(r.check(1_500, Some(1_000), &key(1)), Verdict::Replayed);
        }
        // Another client at the same millisecond is a different flight.
        assert_eq!(r.check(1_500, Some(1_000), &key(2)), Verdict::Fresh);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn times_outside_the_window_are_refused_and_forgotten() {
        let mut r = register(10, 100);
        let now = 100_000;
        assert_eq!(r.check(now, None, &key(1)), Verdict::OutsideWindow);
        assert_eq!(
            r.check(now, Some(now - 10_001), &key(1)),
            Verdict::OutsideWindow
        );
        assert_eq!(
            r.check(now, Some(now + 10_001), &key(1)),
            Verdict::OutsideWindow
        );
        assert_eq!(r.check(now, Some(now - 10_000), &key(1)), Verdict::Fresh);
        assert_eq!(r.check(now, Some(now + 10_000), &key(2)), Verdict::Fresh);
        // A millisecond later the first has left the window: dropped from
        // memory, and a replay of it is refused by its time.
        assert_eq!(
            r.check(now + 1, Some(now - 10_000), &key(1)),
            Verdict::OutsideWindow
        );
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn memory_stays_bounded_under_a_flood_and_old_flights_are_refused() {
        let capacity = 100_000;
        let mut r = register(10, capacity);
        let now = 50_000;
        let flood = 3 * capacity as u64;
        let mut fresh = 0;
        for i in 0..flood {
            // Forged flights spread over the window, each with its own key.
            let t = now - 10_000 + (i * 20_000) / flood;
            if r.check(now, Some(t), &key(1_000_000 + i)) == Verdict::Fresh {
                fresh += 1;
            }
            assert!(r.len() <= capacity);
        }
        assert_eq!(r.len(), capacity);
        assert_eq!(fresh, flood);
        // Every flight the flood pushed out is now undecidable, never
        // fresh again.
        assert_eq!(
            r.check(now, Some(now - 10_000), &key(1_000_000)),
            Verdict::Undecidable
        );
        // A new flight after the horizon still gets through.
        assert_eq!(r.check(now, Some(now + 10_000), &key(7)), Verdict::Fresh);
    }

    #[test]
    fn a_flight_older_than_everything_remembered_is_undecidable_when_full() {
        let mut r = register(10, 2);
        assert_eq!(r.check(5_000, Some(5_000), &key(1)), Verdict::Fresh);
        assert_eq!(r.check(5_000, Some(5_001), &key(2)), Verdict::Fresh);
        assert_eq!(r.check(5_000, Some(4_000), &key(3)), Verdict::Undecidable);
        assert_eq!(r.len(), 2);
        assert_eq!(r.check(5_000, Some(4_000), &key(3)), Verdict::Undecidable);
    }

    #[test]
    fn a_zero_capacity_register_refuses_all_early_data() {
        let mut r = register(10, 0);
        assert_eq!(r.check(0, Some(0), &key(1)), Verdict::Undecidable);
        assert_eq!(r.len(), 0);
    }
}
