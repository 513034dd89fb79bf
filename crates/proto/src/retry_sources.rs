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
//! Two bounded tables count, each for at most [`MAX_SOURCES`] keys a
//! second:
//! - Retry packets per source address and port, at most
//!   [`RETRIES_PER_SOURCE`];
//! - sources (ports) that drew a share, per address (an IPv6 address's
//!   /64, which one host is usually given whole), at most
//!   [`SOURCES_PER_ADDRESS`]: a sender that changes port for every
//!   Initial gets that many fresh shares a second, not one per port.
//!
//! A full table makes room by forgetting its oldest entry that has not
//! echoed a token. Before, a full table answered every source it did not
//! hold, so an attacker who first spent 1,024 spoofed sources each second
//! flooded unlimited from its own. Now spoofed sources only push each
//! other out: a flooding source is forgotten (and drawn a fresh share)
//! only after 1,024 newer sources, so it draws at most eight Retry
//! packets per 1,024 forgeries from fresh sources, each of which drew
//! one itself. A flood of spoofed sources, each seen once, is answered
//! as before, within the server's global reply budget.

use brisk_time::Instant;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Keys each table counts per window at most (both tables full hold
/// about 200 KB).
const MAX_SOURCES: usize = 1024;
/// How long counts last before the tables are cleared.
const WINDOW: Duration = Duration::from_secs(1);
/// Retry packets one source may draw per window: a client resending its
/// Initial every probe timeout needs a few.
pub(crate) const RETRIES_PER_SOURCE: u8 = 8;
/// Sources (ports) of one address that may draw a share per window:
/// room for the clients of a small NAT starting at once, while a sender
/// that changes port for every Initial gets at most
/// `SOURCES_PER_ADDRESS * RETRIES_PER_SOURCE` Retry packets a second.
pub(crate) const SOURCES_PER_ADDRESS: u8 = 64;
/// A source's count once it echoed a valid token in this window.
const TRUSTED: u8 = u8::MAX;
/// A source trusted in the last window: still trusted, so a client
/// endpoint that opens connections without pause is never cut off when
/// the table clears.
const TRUSTED_BEFORE: u8 = u8::MAX - 1;

/// Counts per key for at most [`MAX_SOURCES`] keys; a new key takes the
/// place of the oldest one that is not trusted.
#[derive(Debug)]
struct Counts<K> {
    /// Count and the serial of the key's place in `order`.
    counts: HashMap<K, (u8, u32)>,
    /// Keys, oldest first, each with the serial it was counted under; a
    /// place whose serial no longer matches is a forgotten key's.
    order: VecDeque<(K, u32)>,
    serial: u32,
}

impl<K> Default for Counts<K> {
    fn default() -> Self {
        Counts {
            counts: HashMap::new(),
            order: VecDeque::new(),
            serial: 0,
        }
    }
}

impl<K: Hash + Eq + Copy> Counts<K> {
    fn get_mut(&mut self, key: &K) -> Option<&mut u8> {
        self.counts.get_mut(key).map(|(c, _)| c)
    }

    /// Counts `key` for the first time with `count`, forgetting the oldest
    /// untrusted key if the table is full; false if every key held is
    /// trusted (then `key` is not counted).
    fn insert(&mut self, key: K, count: u8) -> bool {
        if self.counts.len() >= MAX_SOURCES && !self.forget_oldest() {
            return false;
        }
        self.serial = self.serial.wrapping_add(1);
        self.counts.insert(key, (count, self.serial));
        self.order.push_back((key, self.serial));
        true
    }

    /// Forgets the oldest key that is not trusted; false if there is none.
    /// Trusted keys met on the way go to the back, each at most once.
    fn forget_oldest(&mut self) -> bool {
        let mut rotations = self.counts.len();
        while let Some((key, serial)) = self.order.pop_front() {
            match self.counts.get(&key) {
                Some(&(c, s)) if s == serial => {
                    if c < TRUSTED_BEFORE {
                        self.counts.remove(&key);
                        return true;
                    }
                    self.order.push_back((key, serial));
                    if rotations == 0 {
                        return false;
                    }
                    rotations -= 1;
                }
                // A place left by a key already forgotten.
                _ => {}
            }
        }
        false
    }

    /// Keeps only the keys `keep` says, with the count it gives, and gives
    /// back the room a flood took.
    fn retain(&mut self, mut keep: impl FnMut(u8) -> Option<u8>) {
        self.counts.retain(|_, (c, _)| match keep(*c) {
            Some(next) => {
                *c = next;
                true
            }
            None => false,
        });
        let counts = &self.counts;
        self.order
            .retain(|(k, s)| counts.get(k).is_some_and(|&(_, held)| held == *s));
        self.counts.shrink_to(MAX_SOURCES / 4);
        self.order.shrink_to(MAX_SOURCES / 4);
    }
}

/// What one address is counted under: an IPv4 address (also when it
/// reaches a dual-stack socket as an IPv4-mapped IPv6 address), or an
/// IPv6 address's /64.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        v4 => v4,
    }
}

#[derive(Debug, Default)]
pub(crate) struct RetrySources {
    /// Retry packets drawn per source this window (or a trust mark).
    sources: Counts<SocketAddr>,
    /// Sources that drew a share this window, per address.
    addresses: Counts<IpAddr>,
    window_start: Instant,
}

impl RetrySources {
    /// Counts one Retry to `source`; false if its share of this window is
    /// spent, or its address's shares are (send nothing).
    pub(crate) fn allows(&mut self, now: Instant, source: SocketAddr) -> bool {
        self.roll(now);
        match self.sources.get_mut(&source) {
            Some(&mut (TRUSTED | TRUSTED_BEFORE)) => true,
            Some(c) if *c < RETRIES_PER_SOURCE => {
                *c += 1;
                true
            }
            Some(_) => false,
            None => {
                let address = address_key(source.ip());
                match self.addresses.get_mut(&address) {
                    Some(n) if *n >= SOURCES_PER_ADDRESS => return false,
                    Some(n) => *n += 1,
                    None => {
                        self.addresses.insert(address, 1);
                    }
                }
                self.sources.insert(source, 1);
                true
            }
        }
    }

    /// `source` echoed a valid token: it answers at its address, so it is
    /// not limited for the rest of this window and the next.
    pub(crate) fn trust(&mut self, now: Instant, source: SocketAddr) {
        self.roll(now);
        match self.sources.get_mut(&source) {
            Some(c) => *c = TRUSTED,
            None => {
                self.sources.insert(source, TRUSTED);
            }
        }
    }

    /// Clears the tables once their window has passed; sources trusted in
    /// it stay trusted for one more.
    fn roll(&mut self, now: Instant) {
        if now.saturating_duration_since(self.window_start) < WINDOW {
            return;
        }
        self.sources
            .retain(|c| (c == TRUSTED).then_some(TRUSTED_BEFORE));
        self.addresses.retain(|_| None);
        self.window_start = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// A source `i` of a spoofed flood: a fresh address each time.
    fn spoofed(v6: bool, i: u32) -> SocketAddr {
        if v6 {
            let ip = Ipv6Addr::new(0x2001, 0xdb8, (i >> 16) as u16, i as u16, 0, 0, 0, 1);
            SocketAddr::from((ip, 443))
        } else {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 | i);
            SocketAddr::from((ip, 443))
        }
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
        for v6 in [false, true] {
            let mut s = RetrySources::default();
            let t = Instant::from_millis(1);
            let passed = (0..100_000)
                .filter(|&i| s.allows(t, spoofed(v6, i)))
                .count();
            assert_eq!(passed, 100_000);
            let newcomer = if v6 {
                "[2001:db8::7]:443"
            } else {
                "192.0.2.7:443"
            };
            for _ in 0..RETRIES_PER_SOURCE {
                assert!(s.allows(t, addr(newcomer)));
            }
        }
    }

    /// The attack the old table fell to: fill it with spoofed sources,
    /// then flood from one source, which a full table used to answer every
    /// time (10,000 Retry packets for 10,000 Initials here). Now the
    /// flooder is forgotten, and drawn a fresh share, only after a table's
    /// worth of newer sources: beside one fresh spoofed source per
    /// forgery it draws at most eight per 1,024 of them, while the
    /// spoofing itself draws one per source, as before.
    #[test]
    fn spoofed_sources_cannot_blind_the_table_to_a_flooder() {
        for (v6, flooder) in [
            (false, "198.51.100.1:5000"),
            (true, "[2001:db8:ff::1]:5000"),
        ] {
            let flooder = addr(flooder);
            let t = Instant::from_millis(1);
            let mut alone = RetrySources::default();
            let baseline = (0..10_000).filter(|_| alone.allows(t, flooder)).count();
            assert_eq!(baseline, usize::from(RETRIES_PER_SOURCE));

            let mut s = RetrySources::default();
            let mut spoof = 0u32;
            for _ in 0..MAX_SOURCES {
                assert!(s.allows(t, spoofed(v6, spoof)));
                spoof += 1;
            }
            let mut drawn = 0;
            for _ in 0..10_000 {
                drawn += usize::from(s.allows(t, flooder));
                assert!(s.allows(t, spoofed(v6, spoof)));
                spoof += 1;
            }
            let shares = 1 + 10_000 / MAX_SOURCES;
            assert!(
                drawn <= shares * baseline,
                "v6 {v6}: the flooder drew {drawn} Retry packets"
            );
            assert!(drawn >= baseline, "v6 {v6}: {drawn}");
        }
    }

    /// A sender that takes a new port for every Initial: the old table
    /// gave each port a fresh share (10,000 Retry packets for 10,000
    /// Initials); now its address stops drawing after
    /// `SOURCES_PER_ADDRESS` ports in a second, and a different address
    /// is still answered.
    #[test]
    fn changing_port_does_not_buy_fresh_shares_past_the_address_limit() {
        for (host, other) in [
            ("192.0.2.50", "192.0.2.51:443"),
            // Another address in the same /64 counts as the same host.
            ("2001:db8:1:2::50", "[2001:db8:1:3::50]:443"),
        ] {
            let ip: IpAddr = host.parse().unwrap();
            let mut s = RetrySources::default();
            let t = Instant::from_millis(1);
            let drawn = (0..10_000u16)
                .filter(|&p| s.allows(t, SocketAddr::new(ip, 1024 + p)))
                .count();
            assert_eq!(drawn, usize::from(SOURCES_PER_ADDRESS));
            if let IpAddr::V6(v6) = ip {
                let neighbour = Ipv6Addr::from(u128::from(v6) + 1);
                assert!(!s.allows(t, SocketAddr::new(IpAddr::V6(neighbour), 9)));
            }
            assert!(s.allows(t, addr(other)));
            // The next second the address is answered again.
            assert!(s.allows(Instant::from_millis(1_002), SocketAddr::new(ip, 20_000)));
        }
    }

    /// An IPv4 client reaching a dual-stack socket is counted under its
    /// IPv4 address, not under the mapped addresses' shared /64.
    #[test]
    fn mapped_ipv4_sources_are_counted_per_ipv4_address() {
        let mut s = RetrySources::default();
        let t = Instant::from_millis(1);
        for p in 0..u16::from(SOURCES_PER_ADDRESS) {
            assert!(s.allows(t, addr(&format!("[::ffff:192.0.2.1]:{}", 1000 + p))));
        }
        assert!(!s.allows(t, addr("[::ffff:192.0.2.1]:9")));
        assert!(s.allows(t, addr("[::ffff:192.0.2.2]:9")));
    }
}
