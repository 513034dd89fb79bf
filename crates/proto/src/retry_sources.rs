//! Retry packets per source address and port, per second: a source that
//! keeps sending Initials without echoing a token stops drawing Retry
//! packets until the next second. A source that echoed a valid token in
//! this second or the one before is not limited: one client endpoint may
//! open thousands of connections from one address and port, and each
//! proves the address.
//!
//! Why: under a flood the server's cost per forged Initial is mostly the
//! Retry it answers with (an HMAC, a packet, a send). What the server
//! cannot read in time the kernel drops at its listening socket, a
//! newcomer's Initials among the forgeries. A real client sends a handful
//! of Initials a second at most; a flooding socket sends thousands.
//! Leaving the rest of a noisy source's second unanswered makes each of
//! its forgeries cost only its parsing, and stops the server from
//! sending a Retry stream toward the flood's sources.
//!
//! Sources are counted exactly, in a table of at most [`MAX_SOURCES`]
//! per second; once it is full, sources not in it are answered as
//! before. So a flood from random spoofed sources (each seen once) is
//! neither slowed nor able to crowd anyone out: it fills the table with
//! sources that never reach the limit, and the global reply budget bounds
//! it as before. Only a source seen more than [`RETRIES_PER_SOURCE`]
//! times in one second without a token is ever left unanswered.

use brisk_time::Instant;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Sources counted per window at most (about 40 KB).
const MAX_SOURCES: usize = 1024;
/// How long counts last before the table is cleared.
const WINDOW: Duration = Duration::from_secs(1);
/// Retry packets one source may draw per window: a client resending its
/// Initial every probe timeout needs a few.
pub(crate) const RETRIES_PER_SOURCE: u8 = 8;
/// A source's count once it echoed a valid token in this window.
const TRUSTED: u8 = u8::MAX;
/// A source trusted in the last window: still trusted, so a client
/// endpoint that opens connections without pause is never cut off when
/// the table clears.
const TRUSTED_BEFORE: u8 = u8::MAX - 1;

#[derive(Debug, Default)]
pub(crate) struct RetrySources {
    counts: HashMap<SocketAddr, u8>,
    window_start: Instant,
}

impl RetrySources {
    /// Counts one Retry to `source`; false if its share of this window is
    /// spent (send nothing).
    pub(crate) fn allows(&mut self, now: Instant, source: SocketAddr) -> bool {
        self.roll(now);
        let full = self.counts.len() >= MAX_SOURCES;
        match self.counts.get_mut(&source) {
            Some(&mut (TRUSTED | TRUSTED_BEFORE)) => true,
            Some(c) if *c < RETRIES_PER_SOURCE => {
                *c += 1;
                true
            }
            Some(_) => false,
            None => {
                if !full {
                    self.counts.insert(source, 1);
                }
                true
            }
        }
    }

    /// `source` echoed a valid token: it answers at its address, so it is
    /// not limited for the rest of this window and the next.
    pub(crate) fn trust(&mut self, now: Instant, source: SocketAddr) {
        self.roll(now);
        if let Some(c) = self.counts.get_mut(&source) {
            *c = TRUSTED;
        } else if self.counts.len() < MAX_SOURCES {
            self.counts.insert(source, TRUSTED);
        }
    }

    /// Clears the table once its window has passed; sources trusted in it
    /// stay trusted for one more.
    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.window_start) < WINDOW {
            return;
        }
        self.counts.retain(|_, c| *c == TRUSTED);
        for c in self.counts.values_mut() {
            *c = TRUSTED_BEFORE;
        }
        // A table that held a flood's sources gives its room back.
        self.counts.shrink_to(MAX_SOURCES / 4);
        self.window_start = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_noisy_source_is_cut_off_until_the_next_second_and_others_are_not() {
        for (noisy, quiet) in [
            ("192.0.2.1:4000", "192.0.2.1:4001"),
            ("[2001:db8::1]:4000", "[2001:db8::1]:4001"),
        ] {
            let (noisy, quiet) = (addr(noisy), addr(quiet));
            let mut s = RetrySources::default();
            let t = Instant::from_millis(5);
            let allowed = (0..1000).filter(|_| s.allows(t, noisy)).count();
            assert_eq!(allowed, usize::from(RETRIES_PER_SOURCE));
            // Another port of the same host has its own share.
            assert!(s.allows(t, quiet));
            // A second later the noisy source is answered again.
            assert!(!s.allows(Instant::from_millis(900), noisy));
            assert!(s.allows(Instant::from_millis(1_006), noisy));
        }
    }

    #[test]
    fn a_source_that_echoed_a_token_is_not_limited() {
        for src in ["192.0.2.9:4000", "[2001:db8::9]:4000"] {
            let src = addr(src);
            let mut s = RetrySources::default();
            let t = Instant::from_millis(1);
            for _ in 0..RETRIES_PER_SOURCE {
                assert!(s.allows(t, src));
            }
            assert!(!s.allows(t, src));
            s.trust(t, src);
            assert!((0..10_000).all(|_| s.allows(t, src)));
            // Trusted through the next window too, then counted again.
            let next = Instant::from_millis(1_002);
            assert!((0..100).all(|_| s.allows(next, src)));
            let after = Instant::from_millis(2_003);
            let allowed = (0..100).filter(|_| s.allows(after, src)).count();
            assert_eq!(allowed, usize::from(RETRIES_PER_SOURCE));
        }
    }

    /// Random spoofed sources, each seen once: none is ever refused, and
    /// a newcomer after them is answered, however many there were.
    #[test]
    fn a_spoofed_flood_is_never_limited_and_crowds_nobody_out() {
        let mut s = RetrySources::default();
        let t = Instant::from_millis(1);
        let passed = (0..100_000u32)
            .filter(|&i| {
                let ip = std::net::Ipv4Addr::from(0xc633_6400 | (i >> 16));
                s.allows(t, SocketAddr::from((ip, (i & 0xffff) as u16)))
            })
            .count();
        assert_eq!(passed, 100_000);
        for _ in 0..RETRIES_PER_SOURCE {
            assert!(s.allows(t, addr("[2001:db8::7]:443")));
        }
    }
}
