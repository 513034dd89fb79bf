//! Path MTU discovery for a datagram transport (DPLPMTUD, RFC 8899), as a
//! small state machine the connection feeds with its packets' fates.
//!
//! Every path carries 1200-byte UDP payloads (the base, RFC 8899's
//! BASE_PLPMTU, and QUIC's minimum), so a connection starts there. It then
//! sends probes, one at a time: a PING padded to the size under test, in
//! flight like any packet but never resent, and whose loss is not taken
//! for congestion (a probe is lost to its size far more often than to a
//! queue). The first probe tries the ceiling (the smaller of this side's
//! `max_datagram_size` and the peer's `max_udp_payload`: on most paths it
//! fits, and one probe settles it); after a loss the search halves the gap
//! between the largest size acknowledged and the smallest lost, and stops
//! once that gap is a sixteenth of the range from the base to the ceiling
//! or less ([`SEARCH_STEPS`] halvings: five probes in all; 16 bytes under
//! a 1452-byte ceiling, about 1% of a packet). A Packet Too Big
//! message (ICMP) that names a size between the base and the size in use
//! is taken at its word: the next probe tries exactly that size, or, if the
//! message is about data, the connection sends that size from then on.
//!
//! Paths that drop large packets without a word (filtered ICMP) are black
//! holes for them: when [`BLACK_HOLE_LOSSES`] full-size packets are lost
//! while a smaller packet sent after them was acknowledged and no
//! full-size one sent after them was, the size in use no longer fits;
//! the connection falls back to the base and searches again. A congested
//! queue cannot look like that: it lets full-size packets after the lost
//! ones through.
//!
//! A finished search is tried again after [`RAISE_INTERVAL`], since paths
//! change (RFC 8899's PMTU_RAISE_TIMER).

use brisk_time::Instant;
use std::time::Duration;

/// The UDP payload every path carries (RFC 8899's BASE_PLPMTU for QUIC).
pub(crate) const BASE_UDP_PAYLOAD: usize = 1200;
/// Halvings of the range from the base to the ceiling after the ceiling's
/// own probe failed: the search stops when the largest size acknowledged
/// and the smallest lost are at most (ceiling - base) / 2^4 apart, so a
/// path is found within five probes whatever the ceiling.
pub(crate) const SEARCH_STEPS: u32 = 4;

/// The gap at which a search below `ceiling` stops (at least one byte).
pub(crate) fn search_precision(ceiling: usize) -> usize {
    ceiling
        .saturating_sub(BASE_UDP_PAYLOAD)
        .div_ceil(1 << SEARCH_STEPS)
        .max(1)
}
/// How long a finished search stands before probing upward again (RFC
/// 8899's PMTU_RAISE_TIMER, 600 s).
pub(crate) const RAISE_INTERVAL: Duration = Duration::from_secs(600);
/// Full-size packets lost in the black-hole pattern before the size in use
/// is given up (RFC 8899 leaves the number to the transport; three is
/// QUIC's packet reordering threshold, so one lost flight suffices).
pub(crate) const BLACK_HOLE_LOSSES: u32 = 3;

/// What path MTU discovery did over a connection's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmtuStats {
    /// The UDP payload size in use now, in bytes.
    pub current_bytes: u64,
    /// Probe packets sent.
    pub probes_sent: u64,
    /// Probes acknowledged (their size fits the path).
    pub probes_acked: u64,
    /// Probes lost, or refused by a Packet Too Big message.
    pub probes_lost: u64,
    /// Times the size in use was given up for the base after losses.
    pub black_holes: u64,
    /// Packet Too Big messages acted on.
    pub too_big_accepted: u64,
    /// Packet Too Big messages ignored: naming a size below the base, or
    /// no smaller than what is in use (stale, or not about us).
    pub too_big_ignored: u64,
}

/// What the connection must do about a Packet Too Big message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooBig {
    /// Nothing: the message was implausible or changes nothing.
    Ignored,
    /// It answered the probe with this packet number: forget that packet
    /// (it will never be acknowledged); the next probe tries the size named.
    ProbeRefused(u64),
    /// The size in use went down to the size named: packets in flight
    /// larger than it will not arrive and should be sent again at once.
    Lowered,
}

/// The search's state for one connection.
#[derive(Debug, Clone)]
pub(crate) struct Pmtud {
    enabled: bool,
    /// The UDP payload size confirmed to fit (RFC 8899's PLPMTU).
    current: usize,
    /// The smallest size found not to fit; `None` while the ceiling is
    /// untried.
    too_big: Option<usize>,
    /// The probe in flight: packet number and size.
    probe: Option<(u64, usize)>,
    /// The size a Packet Too Big named, to be probed next.
    hint: Option<usize>,
    /// When a finished search starts again; `None` while searching.
    raise_at: Option<Instant>,
    /// The largest packet number acknowledged of a packet no larger than
    /// the base, and of a full-size (larger than the base) one.
    largest_small_acked: Option<u64>,
    largest_full_acked: Option<u64>,
    /// Full-size losses in the black-hole pattern since the last full-size
    /// packet got through.
    suspicious: u32,
    stats: PmtuStats,
}

impl Pmtud {
    /// A search that starts at the base if `enabled`; a disabled one never
    /// probes and [`Pmtud::current`] is not used.
    pub(crate) fn new(enabled: bool) -> Self {
        Pmtud {
            enabled,
            current: BASE_UDP_PAYLOAD,
            too_big: None,
            probe: None,
            hint: None,
            raise_at: None,
            largest_small_acked: None,
            largest_full_acked: None,
            suspicious: 0,
            stats: PmtuStats {
                current_bytes: BASE_UDP_PAYLOAD as u64,
                ..PmtuStats::default()
            },
        }
    }

    /// Whether the connection searches at all.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The UDP payload size confirmed to fit the path.
    pub(crate) fn current(&self) -> usize {
        self.current
    }

    /// The totals so far.
    pub(crate) fn stats(&self) -> PmtuStats {
        PmtuStats {
            current_bytes: self.current as u64,
            ..self.stats
        }
    }

    /// The size to probe now, if any, for a path whose sizes may go up to
    /// `ceiling` bytes; the caller sends it and reports it with
    /// [`Pmtud::on_probe_sent`].
    pub(crate) fn next_probe(&mut self, now: Instant, ceiling: usize) -> Option<usize> {
        if !self.enabled || self.probe.is_some() {
            return None;
        }
        if let Some(at) = self.raise_at {
            if now < at {
                return None;
            }
            self.raise_at = None;
            self.too_big = None;
        }
        if let Some(h) = self.hint.filter(|&h| h > self.current && h <= ceiling) {
            return Some(h);
        }
        // Exclusive upper bound of the sizes still worth trying.
        let upper = self.too_big.map_or(ceiling + 1, |t| t.min(ceiling + 1));
        if upper <= self.current + search_precision(ceiling) || self.current >= ceiling {
            self.raise_at = Some(now + RAISE_INTERVAL);
            return None;
        }
        Some(match self.too_big {
            None => ceiling,
            Some(_) => (self.current + upper) / 2,
        })
    }

    /// A probe of `size` bytes left as packet `pn`.
    pub(crate) fn on_probe_sent(&mut self, pn: u64, size: usize) {
        self.probe = Some((pn, size));
        self.hint = None;
        self.stats.probes_sent += 1;
    }

    /// Packet `pn` of `size` bytes was acknowledged.
    pub(crate) fn on_acked(&mut self, pn: u64, size: usize) {
        if self.probe.is_some_and(|(p, _)| p == pn) {
            self.probe = None;
            self.current = self.current.max(size);
            self.stats.probes_acked += 1;
            return;
        }
        if size <= BASE_UDP_PAYLOAD {
            self.largest_small_acked = self.largest_small_acked.max(Some(pn));
        } else if size <= self.current {
            self.largest_full_acked = self.largest_full_acked.max(Some(pn));
            self.suspicious = 0;
        }
    }

    /// Packet `pn` of `size` bytes was declared lost. Returns true when
    /// this loss made the connection give up its size for the base (a
    /// black hole).
    pub(crate) fn on_lost(&mut self, pn: u64, size: usize) -> bool {
        if let Some((p, probed)) = self.probe
            && p == pn
        {
            self.probe = None;
            self.too_big = Some(self.too_big.map_or(probed, |t| t.min(probed)));
            self.stats.probes_lost += 1;
            return false;
        }
        let full = size > BASE_UDP_PAYLOAD && size <= self.current;
        let smaller_got_through = self.largest_small_acked.is_some_and(|s| s > pn);
        let no_full_after = self.largest_full_acked.is_none_or(|f| f < pn);
        if !(self.enabled && full && smaller_got_through && no_full_after) {
            return false;
        }
        self.suspicious += 1;
        if self.suspicious < BLACK_HOLE_LOSSES {
            return false;
        }
        // The size in use no longer fits: search below it from the base.
        self.too_big = Some(self.current);
        self.current = BASE_UDP_PAYLOAD;
        self.probe = None;
        self.hint = None;
        self.raise_at = None;
        self.suspicious = 0;
        self.stats.black_holes += 1;
        true
    }

    /// A Packet Too Big message quoted a packet that cannot have drawn it.
    pub(crate) fn on_implausible_too_big(&mut self) {
        self.stats.too_big_ignored += 1;
    }

    /// A Packet Too Big message says the path carries UDP payloads of at
    /// most `size` bytes.
    pub(crate) fn on_packet_too_big(&mut self, size: usize) -> TooBig {
        if !self.enabled || size < BASE_UDP_PAYLOAD {
            self.stats.too_big_ignored += 1;
            return TooBig::Ignored;
        }
        if let Some((pn, probed)) = self.probe
            && size < probed
            && size >= self.current
        {
            self.probe = None;
            self.stats.probes_lost += 1;
            self.stats.too_big_accepted += 1;
            self.too_big = Some(size + 1);
            self.raise_at = None;
            self.hint = (size > self.current).then_some(size);
            return TooBig::ProbeRefused(pn);
        }
        if size >= self.current {
            self.stats.too_big_ignored += 1;
            return TooBig::Ignored;
        }
        self.stats.too_big_accepted += 1;
        self.current = size;
        self.too_big = Some(size + 1);
        self.probe = None;
        self.hint = None;
        self.suspicious = 0;
        TooBig::Lowered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a path carrying `path` bytes, every probe
    /// answered before the next; returns the sizes probed.
    fn search(p: &mut Pmtud, now: Instant, ceiling: usize, path: usize) -> Vec<usize> {
        let mut probed = Vec::new();
        let mut pn = 1_000 * (p.stats.probes_sent + 1);
        while let Some(size) = p.next_probe(now, ceiling) {
            assert!(probed.len() < 20, "search does not end: {probed:?}");
            probed.push(size);
            pn += 1;
            p.on_probe_sent(pn, size);
            if size <= path {
                p.on_acked(pn, size);
            } else {
                p.on_lost(pn, size);
            }
        }
        probed
    }

    #[test]
    fn a_path_that_carries_the_ceiling_takes_one_probe() {
        let mut p = Pmtud::new(true);
        assert_eq!(search(&mut p, Instant::ZERO, 1452, 1472), vec![1452]);
        assert_eq!(p.current(), 1452);
    }

    #[test]
    fn a_silent_smaller_hop_is_found_within_five_probes_to_a_sixteenth_of_the_range() {
        // A 1400-byte IP hop: 1372 bytes of UDP payload over IPv4, 1352
        // over IPv6; ceilings from a 1500-byte interface, with and without
        // 20 bytes kept for a tunnel, and a 9000-byte one.
        let cases = [
            (1452, 1372),
            (1432, 1352),
            (1472, 1372),
            (1452, 1352),
            (1452, 1252),
            (1452, 1200),
            (8972, 1372),
        ];
        for (ceiling, path) in cases {
            let mut p = Pmtud::new(true);
            let probed = search(&mut p, Instant::ZERO, ceiling, path);
            assert!(probed.len() <= 5, "{ceiling} {path}: {probed:?}");
            assert!(
                p.current() <= path && path - p.current() <= search_precision(ceiling),
                "{ceiling} {path}: found {} after {probed:?}",
                p.current()
            );
        }
    }

    #[test]
    fn a_too_big_answer_to_a_probe_makes_the_next_probe_exact() {
        let mut p = Pmtud::new(true);
        assert_eq!(p.next_probe(Instant::ZERO, 1452), Some(1452));
        p.on_probe_sent(7, 1452);
        assert_eq!(p.on_packet_too_big(1372), TooBig::ProbeRefused(7));
        assert_eq!(p.next_probe(Instant::ZERO, 1452), Some(1372));
        p.on_probe_sent(9, 1372);
        p.on_acked(9, 1372);
        assert_eq!(p.next_probe(Instant::ZERO, 1452), None);
        assert_eq!(p.current(), 1372);
        assert_eq!(p.stats().probes_sent, 2);
    }

    #[test]
    fn a_too_big_for_data_lowers_the_size_and_implausible_ones_are_ignored() {
        let mut p = Pmtud::new(true);
        search(&mut p, Instant::ZERO, 1452, 1452);
        assert_eq!(p.on_packet_too_big(1100), TooBig::Ignored, "below the base");
        assert_eq!(p.on_packet_too_big(1452), TooBig::Ignored, "not smaller");
        assert_eq!(p.on_packet_too_big(1252), TooBig::Lowered);
        assert_eq!(p.current(), 1252);
        assert_eq!(
            p.next_probe(Instant::ZERO, 1452),
            None,
            "searched to the size named"
        );
        let s = p.stats();
        assert_eq!((s.too_big_accepted, s.too_big_ignored), (1, 2));
        // The raise timer tries upward again.
        let later = Instant::ZERO + RAISE_INTERVAL;
        assert_eq!(p.next_probe(later, 1452), Some(1452));
        assert!(Pmtud::new(false).on_packet_too_big(1300) == TooBig::Ignored);
    }

    #[test]
    fn full_size_losses_past_a_smaller_ack_are_a_black_hole_but_congestion_is_not() {
        let mut p = Pmtud::new(true);
        search(&mut p, Instant::ZERO, 1452, 1452);
        // Congestion: packets 10-14 lost, 15 (full size) got through.
        p.on_acked(15, 1452);
        for pn in 10..15 {
            assert!(!p.on_lost(pn, 1452));
        }
        assert_eq!(p.current(), 1452);
        // Black hole: 20-29 lost, only a base-size probe timeout packet 30 got through.
        p.on_acked(30, 1200);
        let fell: Vec<bool> = (20..23).map(|pn| p.on_lost(pn, 1452)).collect();
        assert_eq!(fell, vec![false, false, true]);
        assert_eq!(p.current(), BASE_UDP_PAYLOAD);
        assert_eq!(p.stats().black_holes, 1);
        // It searches again below the size that failed.
        let probed = search(&mut p, Instant::ZERO, 1452, 1252);
        assert!(probed.iter().all(|&s| s < 1452), "{probed:?}");
        assert!(p.current() <= 1252 && 1252 - p.current() <= search_precision(1452));
    }

    #[test]
    fn disabled_never_probes() {
        let mut p = Pmtud::new(false);
        assert_eq!(p.next_probe(Instant::ZERO, 1452), None);
        p.on_acked(30, 1200);
        assert!((0..10).all(|pn| !p.on_lost(pn, 1452)));
    }
}
