//! Path MTU discovery at the connection: when a probe goes out, what a
//! Packet Too Big message does, and which losses are the path's size
//! rather than congestion. The search itself is [`crate::pmtu`].

use super::{ConnState, Connection};
use crate::pmtu::{BASE_UDP_PAYLOAD, TooBig};
use brisk_time::Instant;

/// IP and UDP header bytes in front of a UDP payload.
const IPV4_UDP_HEADERS: usize = 20 + 8;
const IPV6_UDP_HEADERS: usize = 40 + 8;

impl Connection {
    /// A Packet Too Big message (ICMP "fragmentation needed" or ICMPv6
    /// Packet Too Big) about this connection's path arrived: a hop
    /// forwards IP packets of at most `mtu` bytes. `quoted` is the start
    /// of the refused datagram's UDP payload as the message quotes it
    /// (empty if it quotes none); the driver has checked that its
    /// addresses and ports are this connection's. A quote that names a
    /// packet of ours (connection ID and packet number) which is not in
    /// flight, or not larger than the size named, makes the message void.
    /// Otherwise it counts only if the size lies between the 1200-byte
    /// base and the size in use (or the probe in flight), so a forged or
    /// stale message can at most bring the size down to what every path
    /// carries. The refused packet and the larger ones sent after it are
    /// sent again at once, without a congestion response (packets sent
    /// before it crossed that hop before it). Without `pmtud` the message
    /// is ignored (and counted).
    pub fn handle_packet_too_big(&mut self, now: Instant, mtu: u32, quoted: &[u8]) {
        let headers = if self.remote.ip().to_canonical().is_ipv4() {
            IPV4_UDP_HEADERS
        } else {
            IPV6_UDP_HEADERS
        };
        let size = (mtu as usize).saturating_sub(headers);
        let refused = self.quoted_packet_number(quoted);
        if let Some(pn) = refused
            && !self
                .sent
                .iter()
                .any(|(p, s)| p == pn && s.size_bytes as usize > size)
        {
            self.pmtu.on_implausible_too_big();
            return;
        }
        match self.pmtu.on_packet_too_big(size) {
            TooBig::Ignored => {}
            TooBig::ProbeRefused(pn) => {
                self.sent.remove(pn);
            }
            // Without a packet number, loss detection finds what was lost.
            TooBig::Lowered => {
                if let Some(pn) = refused {
                    self.resend_larger_than(size, pn);
                }
            }
        }
        self.timers_updated_at = None;
        self.update_timers(now);
    }

    /// The local stack refused to send one of our datagrams as too big
    /// (`EMSGSIZE`: the outgoing interface, or a route the kernel knows,
    /// carries less than the datagram, whether or not it said how much);
    /// `quoted` is the datagram's start. A refused path MTU probe counts
    /// as lost at once, so the search goes on below its size without
    /// waiting for loss detection. Anything else is left to loss recovery
    /// (and to [`Connection::handle_packet_too_big`] when a size came
    /// with the refusal).
    pub fn handle_send_too_big(&mut self, now: Instant, quoted: &[u8]) {
        let Some(pn) = self.quoted_packet_number(quoted) else {
            return;
        };
        if self.pmtu.probe_in_flight() != Some(pn) {
            return;
        }
        if let Some(p) = self.sent.remove(pn) {
            self.pmtu.on_lost(pn, p.size_bytes as usize);
        }
        self.timers_updated_at = None;
        self.update_timers(now);
    }

    /// The packet number of one of our 1-RTT packets, read from the start
    /// of a datagram a Packet Too Big quotes: `None` when the quote is too
    /// short or is no 1-RTT packet to our peer's connection ID.
    fn quoted_packet_number(&self, quoted: &[u8]) -> Option<u64> {
        let view = crate::packet::HeaderView::new_checked(quoted, self.remote_cid.len()).ok()?;
        if view.is_long() || view.dcid() != self.remote_cid.as_bytes() {
            return None;
        }
        let largest_sent = self.next_pn.checked_sub(1)?;
        Some(crate::packet::decode_packet_number(
            Some(largest_sent),
            view.packet_number(),
        ))
    }

    /// The first evidence of a black hole: `small`, a packet of at most
    /// the base size, was just acknowledged while every full-size packet
    /// sent since the last full-size one acknowledged and before it is
    /// missing, at least [`crate::pmtu::BLACK_HOLE_LOSSES`] of them. On a
    /// path that has shown no reordering, with no queue in the small
    /// packet's RTT, those are lost, and for their size: the connection falls back to the base at once and sends their
    /// content again in base-size packets (with every larger packet still
    /// in flight), without waiting for loss detection to declare them, and
    /// without a congestion response. The re-probe of the size given up
    /// confirms or refutes the black hole ([`crate::pmtu`]).
    pub(super) fn black_hole_on_small_ack(&mut self, small: u64) {
        // A path that reorders may deliver the small packet first; a
        // queue near its limit may take a small packet where full-size
        // ones overflowed it (its delay then shows in the small packet's
        // RTT). Both are left to loss detection's pattern, which waits
        // for later full-size packets.
        let queue_free = self.rtt.latest() <= self.rtt.min() + self.rtt.min() / 4;
        if !self.pmtu.enabled()
            || !queue_free
            || self.loss.packet_threshold() > u64::from(crate::pmtu::BLACK_HOLE_LOSSES)
        {
            return;
        }
        let floor = self.pmtu.largest_full_acked().map_or(0, |l| l + 1);
        let mut missing = 0u32;
        let mut from = None;
        // Walk back from the small packet; a small packet in between is
        // fine, a full-size one acknowledged would have moved the floor.
        // Bounded: a longer run than this is loss detection's business.
        for pn in (floor..small).rev().take(256) {
            let Some(p) = self.sent.get(pn) else {
                continue;
            };
            if p.ack_eliciting && self.pmtu.is_full_size(p.size_bytes as usize) {
                missing += 1;
                from = Some(pn);
            }
        }
        let Some(from) = from.filter(|_| missing >= crate::pmtu::BLACK_HOLE_LOSSES) else {
            return;
        };
        self.pmtu.fall_back();
        self.resend_larger_than(BASE_UDP_PAYLOAD, from);
    }

    /// Hands the content of packet `from` and of every later packet in
    /// flight larger than `size` bytes back to be sent again: the path
    /// dropped them for their size.
    pub(super) fn resend_larger_than(&mut self, size: usize, from: u64) {
        let large: Vec<u64> = self
            .sent
            .iter()
            .filter(|(pn, p)| *pn >= from && p.ack_eliciting && p.size_bytes as usize > size)
            .map(|(pn, _)| pn)
            .collect();
        for pn in large {
            if let Some(p) = self.sent.remove(pn) {
                self.stats.packets_lost += 1;
                self.stats.bytes_lost += p.size_bytes;
                if !p.requeued {
                    self.requeue_frames(&p.frames);
                }
            }
        }
    }

    /// The size of the path MTU probe to send now, if one is due and the
    /// congestion window has room for it: only once the handshake is over
    /// and the peer's address proved (a new path's too, after a move),
    /// since a probe is larger than what the path is known to carry.
    pub(super) fn mtu_probe_due(&mut self, now: Instant) -> Option<usize> {
        if self.state != ConnState::Established
            || !self.validated
            || !self.hs.confirmed
            || self.path_validating()
        {
            return None;
        }
        // Without path MTU discovery (asked before every datagram) there
        // is nothing to work out.
        if !self.pmtu.enabled() {
            return None;
        }
        let ceiling = self.mds_ceiling();
        // Asked again at the next send if the window is full: the search
        // moves on only when a probe leaves.
        let size = self.pmtu.next_probe(now, ceiling)?;
        (self.sent.bytes_in_flight() + size as u64 <= self.cc.window()).then_some(size)
    }

    /// A lost packet of `size` bytes that the path's size lost, not a
    /// queue: a probe, or a packet larger than what the path now carries.
    /// Congestion control and ECN validation do not hear of it.
    pub(super) fn lost_to_path_size(&self, size: u64) -> bool {
        self.pmtu.enabled() && size as usize > self.mds()
    }

    /// Whether the next datagram should be cut to the base size as a
    /// black-hole check ([`crate::pmtu`]).
    pub(super) fn size_check_due(&self, now: Instant) -> bool {
        self.state == ConnState::Established && self.pmtu.size_check_due(now, self.rtt.smoothed())
    }

    /// The most a probe timeout's packet may hold: the base while path MTU
    /// discovery runs, so that on a path that became a black hole for the
    /// size in use the probe gets through, and its acknowledgement shows
    /// the pattern ([`crate::pmtu`]) that brings the size down.
    pub(super) fn probe_timeout_budget(&self, mds: usize) -> usize {
        if self.pmtu.enabled() && self.probes_pending > 0 {
            mds.min(BASE_UDP_PAYLOAD)
        } else {
            mds
        }
    }
}
