//! The amplification limit per remote address (docs/PROTOCOL.md §3.6).
//!
//! Until a client proves it receives at its address, a server may send it
//! at most three times the bytes it received from it. Counted per
//! connection, an attacker multiplies that by opening many connections in
//! the victim's name, or by sending copies of a victim's Initial from
//! elsewhere; so every unvalidated connection to one IP address draws on
//! one shared [`Allowance`], and only bytes that arrived from that address
//! add to it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes a server may send per byte received from an unvalidated address.
pub(crate) const AMPLIFICATION_FACTOR: u64 = 3;

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    sent: AtomicU64,
}

/// Bytes received from and sent to one address while unvalidated, shared
/// by all its connections (cloning shares it).
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowance(Arc<Counters>);

impl Allowance {
    pub(crate) fn on_received(&self, bytes: u64) {
        self.0.received.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn on_sent(&self, bytes: u64) {
        self.0.sent.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes that may still be sent.
    pub(crate) fn remaining(&self) -> u64 {
        let rx = self.0.received.load(Ordering::Relaxed);
        let tx = self.0.sent.load(Ordering::Relaxed);
        (AMPLIFICATION_FACTOR * rx).saturating_sub(tx)
    }

    #[cfg(test)]
    /// `(received, sent)` bytes.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.0.received.load(Ordering::Relaxed),
            self.0.sent.load(Ordering::Relaxed),
        )
    }
}

/// The endpoint's allowances by IP address. An entry lives while a
/// connection holds it; entries no connection holds are swept out when
/// the table has doubled since the last sweep, so the cost stays constant
/// per insertion and the table stays within twice the live addresses.
#[derive(Debug, Default)]
pub(crate) struct Allowances {
    by_ip: HashMap<IpAddr, Allowance>,
    sweep_at: usize,
}

impl Allowances {
    /// The allowance of `ip`, shared with its other unvalidated connections.
    pub(crate) fn for_ip(&mut self, ip: IpAddr) -> Allowance {
        if self.by_ip.len() >= self.sweep_at {
            self.by_ip.retain(|_, a| Arc::strong_count(&a.0) > 1);
            self.sweep_at = (2 * self.by_ip.len()).max(64);
        }
        self.by_ip.entry(ip).or_default().clone()
    }

    #[cfg(test)]
    /// Addresses tracked (some possibly no longer held).
    pub(crate) fn len(&self) -> usize {
        self.by_ip.len()
    }

    #[cfg(test)]
    /// The allowance of `ip` if tracked.
    pub(crate) fn get(&self, ip: &IpAddr) -> Option<&Allowance> {
        self.by_ip.get(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn connections_of_one_address_share_one_allowance() {
        let mut t = Allowances::default();
        for ip in [
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ] {
            let a = t.for_ip(ip);
            let b = t.for_ip(ip);
            a.on_received(1200);
            assert_eq!(b.remaining(), 3600);
            b.on_sent(3000);
            assert_eq!(a.remaining(), 600, "one budget for both");
            a.on_sent(1000);
            assert_eq!(b.remaining(), 0);
        }
    }

    #[test]
    fn unheld_entries_are_swept() {
        let mut t = Allowances::default();
        let kept = t.for_ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        for i in 0..10_000u32 {
            drop(t.for_ip(IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + i))));
        }
        assert!(t.len() <= 129, "{} entries", t.len());
        kept.on_received(1);
        assert_eq!(
            t.get(&IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)))
                .map(Allowance::totals),
            Some((1, 0)),
            "a held entry survives"
        );
    }
}
