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
//! the connection falls back to the base at once, hands everything larger
//! still in flight back to be sent again in base-size packets, and
//! re-probes the size it gave up. A congested queue rarely looks like
//! that (it lets full-size packets after the lost ones through); when it
//! does, that probe gets through and the size comes back one round trip
//! later. A lost probe confirms the black hole, and the search goes on
//! below the dead size, which is not tried again before [`RAISE_INTERVAL`].
//!
//! For the pattern to show within one round trip, a bulk sender must send
//! something small among its full-size packets: with size checks on, once
//! [`CHECK_AFTER_FULL`] full-size packets and [`check_interval`] have
//! passed since the last ack-eliciting packet of at most the base size,
//! the next one is cut to the base size (it carries data like any other).
//! The receiver acknowledges it at once, since a gap precedes it, and that
//! acknowledgement is the first evidence: if every full-size packet sent
//! since the last one acknowledged and before the small one is missing
//! (at least [`BLACK_HOLE_LOSSES`] of them) on a path that has shown no
//! reordering, the connection falls back at once, without waiting for loss
//! detection to declare them ([`Pmtud::fall_back`]). That costs about one
//! packet in twenty at high rates and one in four at the lowest, cut
//! short by a few hundred bytes (a few more headers). Without it, the
//! first small packet after a drop is the probe timeout's, several round
//! trips later.
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
/// Full-size ack-eliciting packets sent before a base-size one is due:
/// when the small one is acknowledged and all of them are missing, that
/// is [`BLACK_HOLE_LOSSES`] full-size packets lost past a smaller one, the
/// black hole's first evidence.
pub(crate) const CHECK_AFTER_FULL: u32 = BLACK_HOLE_LOSSES;

/// The least time between base-size checks: a sixteenth of the smoothed
/// RTT (the first small packet after a drop leaves within that, or within
/// [`CHECK_AFTER_FULL`] full-size packets if those take longer), but at
/// least 1 ms, so that on short fast paths (loopback, a LAN) checks stay
/// rare and large send batches stay whole.
pub(crate) fn check_interval(srtt: Duration) -> Duration {
    (srtt / 16).max(Duration::from_millis(1))
}

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
    /// Of those, the times the size given up was re-probed and got
    /// through (the losses were a queue's, and the size came back).
    pub black_holes_refuted: u64,
    /// Ack-eliciting packets of at most the base size sent while a size
    /// check was due (cut short for it, or small anyway).
    pub size_checks_sent: u64,
    /// Packet Too Big messages acted on.
    pub too_big_accepted: u64,
    /// Packet Too Big messages ignored: naming a size below the base, or
    /// no smaller than what is in use (stale, or not about us).
    pub too_big_ignored: u64,
    /// Searches started over from the base because the connection moved
    /// to another network (a port-only NAT rebinding keeps the size).
    pub new_path_restarts: u64,
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
    /// packet got through, and the oldest of them.
    suspicious: u32,
    suspicious_from: Option<u64>,
    /// Whether a base-size packet is cut in among full-size ones now and
    /// then (see the module doc).
    size_checks: bool,
    /// Full-size ack-eliciting packets sent since the last one of at most
    /// the base size, and when that one left.
    full_since_small: u32,
    last_small_at: Option<Instant>,
    /// The size given up for a black hole, while its re-probe is out: an
    /// acknowledgement of that probe refutes the black hole.
    given_up: Option<usize>,
    /// A black hole was just declared: the first base-size packet (the
    /// start of the hole, sent again) leaves before the re-probe.
    repair_first: bool,
    stats: PmtuStats,
}

impl Pmtud {
    /// A search that starts at the base if `enabled`; a disabled one never
    /// probes and [`Pmtud::current`] is not used. `size_checks`: cut a
    /// base-size packet in among full-size ones now and then, so a black
    /// hole shows within a round trip.
    pub(crate) fn new(enabled: bool, size_checks: bool) -> Self {
        Pmtud {
            enabled,
            size_checks,
            full_since_small: 0,
            last_small_at: None,
            given_up: None,
            repair_first: false,
            current: BASE_UDP_PAYLOAD,
            too_big: None,
            probe: None,
            hint: None,
            raise_at: None,
            largest_small_acked: None,
            largest_full_acked: None,
            suspicious: 0,
            suspicious_from: None,
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

    /// The packet number of the probe in flight, if one is.
    pub(crate) fn probe_in_flight(&self) -> Option<u64> {
        self.probe.map(|(pn, _)| pn)
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
        if !self.enabled || self.probe.is_some() || self.repair_first {
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

    /// Whether the next ack-eliciting packet should be cut to the base
    /// size as a black-hole check, the smoothed RTT being `srtt`.
    pub(crate) fn size_check_due(&self, now: Instant, srtt: Duration) -> bool {
        self.enabled
            && self.size_checks
            && self.current > BASE_UDP_PAYLOAD
            && self.full_since_small >= CHECK_AFTER_FULL
            && self
                .last_small_at
                .is_none_or(|t| now >= t + check_interval(srtt))
    }

    /// An ack-eliciting packet other than a probe, of `size` bytes, left
    /// (the smoothed RTT being `srtt`).
    pub(crate) fn on_eliciting_sent(&mut self, now: Instant, size: usize, srtt: Duration) {
        self.repair_first = false;
        if size <= BASE_UDP_PAYLOAD {
            self.stats.size_checks_sent += u64::from(self.size_check_due(now, srtt));
            self.full_since_small = 0;
            self.last_small_at = Some(now);
        } else {
            self.full_since_small = self.full_since_small.saturating_add(1);
        }
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
            if self.given_up.take().is_some_and(|g| size >= g) {
                self.stats.black_holes_refuted += 1;
            }
            return;
        }
        if size <= BASE_UDP_PAYLOAD {
            self.largest_small_acked = self.largest_small_acked.max(Some(pn));
        } else if size <= self.current {
            self.largest_full_acked = self.largest_full_acked.max(Some(pn));
            self.suspicious = 0;
            self.suspicious_from = None;
        }
    }

    /// Packet `pn` of `size` bytes was declared lost. When this loss made
    /// the connection give up its size for the base (a black hole),
    /// returns the oldest packet lost to it: that one and every larger
    /// packet sent since are lost to the path's size.
    pub(crate) fn on_lost(&mut self, pn: u64, size: usize) -> Option<u64> {
        if let Some((p, probed)) = self.probe
            && p == pn
        {
            self.probe = None;
            self.too_big = Some(self.too_big.map_or(probed, |t| t.min(probed)));
            self.given_up = None;
            self.stats.probes_lost += 1;
            return None;
        }
        let full = size > BASE_UDP_PAYLOAD && size <= self.current;
        let smaller_got_through = self.largest_small_acked.is_some_and(|s| s > pn);
        let no_full_after = self.largest_full_acked.is_none_or(|f| f < pn);
        if !(self.enabled && full && smaller_got_through && no_full_after) {
            return None;
        }
        self.suspicious += 1;
        let from = self.suspicious_from.map_or(pn, |f| f.min(pn));
        self.suspicious_from = Some(from);
        if self.suspicious < BLACK_HOLE_LOSSES {
            return None;
        }
        self.fall_back();
        Some(from)
    }

    /// The largest packet number acknowledged of a full-size packet (larger
    /// than the base, at most the size in use).
    pub(crate) fn largest_full_acked(&self) -> Option<u64> {
        self.largest_full_acked
    }

    /// Whether a packet of `size` bytes is full-size: larger than the base
    /// and no larger than the size in use, while discovery runs.
    pub(crate) fn is_full_size(&self, size: usize) -> bool {
        self.enabled && size > BASE_UDP_PAYLOAD && size <= self.current
    }

    /// The size in use no longer fits (a black hole): falls back to the
    /// base, and probes the size given up first. Lost, that probe confirms
    /// the black hole and the search goes on below it; acknowledged, the
    /// losses were a queue's and the size is back.
    pub(crate) fn fall_back(&mut self) {
        if !self.enabled || self.current <= BASE_UDP_PAYLOAD {
            return;
        }
        self.given_up = Some(self.current);
        self.repair_first = true;
        self.hint = Some(self.current);
        self.too_big = None;
        self.current = BASE_UDP_PAYLOAD;
        self.probe = None;
        self.raise_at = None;
        self.suspicious = 0;
        self.suspicious_from = None;
        self.stats.black_holes += 1;
    }

    /// The connection moved to another network: nothing found on the old
    /// path holds there, so the size goes back to the base and the search
    /// starts over at once. A probe still in flight belongs to the old
    /// path and is forgotten; the totals are kept.
    pub(crate) fn restart_for_new_path(&mut self) {
        if !self.enabled {
            return;
        }
        *self = Pmtud {
            stats: PmtuStats {
                new_path_restarts: self.stats.new_path_restarts + 1,
                ..self.stats
            },
            ..Pmtud::new(true, self.size_checks)
        };
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
            self.given_up = None;
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
        self.given_up = None;
        self.suspicious = 0;
        self.suspicious_from = None;
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
    fn a_new_network_starts_over_from_the_base_and_searches_at_once() {
        let mut p = Pmtud::new(true, true);
        assert_eq!(search(&mut p, Instant::ZERO, 1452, 1472), vec![1452]);
        // A probe in flight on the old path when the connection moved.
        p.on_probe_sent(77, 1452);
        p.restart_for_new_path();
        assert_eq!(p.current(), BASE_UDP_PAYLOAD);
        assert_eq!(p.stats().new_path_restarts, 1);
        p.on_acked(77, 1452);
        assert_eq!(
            p.current(),
            BASE_UDP_PAYLOAD,
            "an old path's probe proves nothing"
        );
        // The new path carries less: found again, well before RAISE_INTERVAL.
        let probed = search(&mut p, Instant::from_millis(1), 1452, 1352);
        assert!(probed.len() <= 5, "{probed:?}");
        assert!((1300..=1352).contains(&p.current()), "{}", p.current());
        let mut off = Pmtud::new(false, true);
        off.restart_for_new_path();
        assert_eq!(off.stats().new_path_restarts, 0);
    }

    #[test]
    fn a_path_that_carries_the_ceiling_takes_one_probe() {
        let mut p = Pmtud::new(true, true);
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
            let mut p = Pmtud::new(true, true);
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
        let mut p = Pmtud::new(true, true);
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
        let mut p = Pmtud::new(true, true);
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
        assert!(Pmtud::new(false, true).on_packet_too_big(1300) == TooBig::Ignored);
    }

    #[test]
    fn full_size_losses_past_a_smaller_ack_are_a_black_hole_but_congestion_is_not() {
        let mut p = Pmtud::new(true, true);
        search(&mut p, Instant::ZERO, 1452, 1452);
        // Congestion: packets 10-14 lost, 15 (full size) got through.
        p.on_acked(15, 1452);
        for pn in 10..15 {
            assert_eq!(p.on_lost(pn, 1452), None);
        }
        assert_eq!(p.current(), 1452);
        // Black hole: 20-29 lost, only a base-size probe timeout packet 30 got through.
        p.on_acked(30, 1200);
        let fell: Vec<_> = (20..23).map(|pn| p.on_lost(pn, 1452)).collect();
        assert_eq!(fell, vec![None, None, Some(20)], "lost from packet 20 on");
        assert_eq!(p.current(), BASE_UDP_PAYLOAD);
        assert_eq!(p.stats().black_holes, 1);
        // The hole's first bytes go out again before any probe.
        assert_eq!(p.next_probe(Instant::ZERO, 1452), None);
        p.on_eliciting_sent(Instant::ZERO, 1200, Duration::from_millis(20));
        // It re-probes the size it gave up once, then searches below it,
        // within five probes in all.
        let probed = search(&mut p, Instant::ZERO, 1452, 1252);
        assert_eq!(probed[0], 1452, "{probed:?}");
        assert!(probed[1..].iter().all(|&s| s < 1452), "{probed:?}");
        assert!(probed.len() <= 5, "{probed:?}");
        assert!(p.current() <= 1252 && 1252 - p.current() <= search_precision(1452));
        assert_eq!(p.stats().black_holes_refuted, 0);
        // The dead size is not tried again before the raise timer.
        assert_eq!(p.next_probe(Instant::from_millis(1), 1452), None);
    }

    #[test]
    fn a_black_hole_that_was_a_queue_is_refuted_by_its_probe() {
        let mut p = Pmtud::new(true, true);
        search(&mut p, Instant::ZERO, 1452, 1452);
        // A run of full-size losses right before an acknowledged small
        // packet, as a tail-drop queue can make.
        p.on_acked(30, 1200);
        assert!((27..30).filter_map(|pn| p.on_lost(pn, 1452)).eq([27]));
        assert_eq!(p.current(), BASE_UDP_PAYLOAD);
        p.on_eliciting_sent(Instant::ZERO, 1200, Duration::from_millis(20));
        // The path still carries the size: the re-probe brings it back.
        assert_eq!(search(&mut p, Instant::ZERO, 1452, 1452), vec![1452]);
        assert_eq!(p.current(), 1452);
        let s = p.stats();
        assert_eq!((s.black_holes, s.black_holes_refuted), (1, 1));
    }

    #[test]
    fn a_base_size_check_is_due_after_three_full_packets_and_a_sixteenth_of_an_rtt() {
        let srtt = Duration::from_millis(40);
        let t = Instant::from_micros;
        let mut p = Pmtud::new(true, true);
        // Nothing to check while the size in use is the base.
        for _ in 0..10 {
            p.on_eliciting_sent(t(0), 1200, srtt);
        }
        assert!(!p.size_check_due(t(0), srtt));
        search(&mut p, t(0), 1452, 1452);
        p.on_eliciting_sent(t(0), 1000, srtt);
        for _ in 0..2 {
            p.on_eliciting_sent(t(1_000), 1452, srtt);
        }
        assert!(
            !p.size_check_due(t(10_000), srtt),
            "only two full-size packets"
        );
        p.on_eliciting_sent(t(2_000), 1452, srtt);
        assert!(
            !p.size_check_due(t(2_400), srtt),
            "an application's small packet left 2.4 ms ago"
        );
        assert!(p.size_check_due(t(2_500), srtt));
        p.on_eliciting_sent(t(2_500), 1200, srtt);
        assert!(!p.size_check_due(t(2_500), srtt));
        assert_eq!(p.stats().size_checks_sent, 1);
        // At least 1 ms apart on a short path, and never with checks off.
        assert_eq!(
            check_interval(Duration::from_micros(100)),
            Duration::from_millis(1)
        );
        let mut off = Pmtud::new(true, false);
        search(&mut off, t(0), 1452, 1452);
        (0..10).for_each(|_| off.on_eliciting_sent(t(0), 1452, srtt));
        assert!(!off.size_check_due(t(100), srtt));
    }

    #[test]
    fn disabled_never_probes() {
        let mut p = Pmtud::new(false, true);
        assert_eq!(p.next_probe(Instant::ZERO, 1452), None);
        p.on_acked(30, 1200);
        assert!((0..10).all(|pn| p.on_lost(pn, 1452).is_none()));
    }
}
