//! One optimized connection's download direction: the server's segments
//! held until the client has them, acknowledged early in the client's
//! name, sent toward the client under the subscriber's budget, with RACK
//! loss detection (RFC 8985) from the client's SACK blocks and tail-loss
//! probes instead of a retransmission timer.
//!
//! Sequence numbers stay the endpoints': a held segment is the server's
//! datagram, byte for byte, and a local ACK carries the client's sequence
//! number, timestamps and window. Offsets count from the server's first
//! data byte (its ISN + 1), in 64 bits so they never wrap.

use crate::config::Config;
use crate::held::Ring;
use crate::segment::{self, LocalAck, Seen};
use crate::stats::{Reason, Stats};
use crate::subscriber::Subscriber;
use crate::{Side, Transmit};
use brisk_time::Instant;
use brisk_wire::tcp::{SackBlock, TcpFlags};
use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The client's SYN passed.
    SynSeen,
    /// The server's SYN-ACK passed.
    SynAckSeen,
    /// Split-ACK: the optimizer acknowledges and delivers server data.
    Optimizing,
    /// No new data is acknowledged early; what is held is still delivered,
    /// then the connection passes through.
    Draining,
    /// Every packet passes untouched.
    PassThrough,
}

/// What the handshake settled, as both endpoints see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Negotiated {
    /// Shift the client's advertised windows use (0 unless both sent one).
    pub(crate) client_window_shift: u8,
    /// Both endpoints sent timestamps.
    pub(crate) timestamps: bool,
    /// The client's MSS, bytes (536 if it sent none).
    pub(crate) client_mss: u16,
}

/// One server segment the optimizer answers for.
#[derive(Debug, Clone)]
struct Held {
    /// Sequence space: data bytes plus one for a FIN.
    seq_len: u64,
    /// Data bytes only.
    data_len: u64,
    /// The server's datagram as it arrived.
    datagram: Vec<u8>,
    /// Last time it was sent toward the client.
    sent_at: Option<Instant>,
    /// Times sent.
    sends: u32,
    /// The client SACKed it.
    sacked: bool,
    /// RACK or a probe's answer declared it lost; waits to be resent.
    lost: bool,
    /// The subscriber's delivered bytes, and when they last grew, at the
    /// last send: the start of this segment's delivery-rate sample.
    delivered_at_send: u64,
    delivered_time_at_send: Instant,
}

/// What the caller provides a flow while it runs.
pub(crate) struct Ctx<'a> {
    pub(crate) config: &'a Config,
    pub(crate) sub: &'a mut Subscriber,
    pub(crate) out: &'a mut VecDeque<Transmit>,
    pub(crate) stats: &'a mut Stats,
    /// Datagram bytes all connections hold.
    pub(crate) total_held: &'a mut usize,
}

/// An optimized (or once optimized) connection.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub(crate) client: SocketAddr,
    pub(crate) server: SocketAddr,
    pub(crate) phase: Phase,
    pub(crate) last_seen: Instant,
    pub(crate) client_isn: u32,
    pub(crate) server_isn: u32,
    pub(crate) syn_options: crate::segment::SeenOptions,
    pub(crate) negotiated: Negotiated,
    /// When the server's SYN-ACK passed toward the client, if it passed
    /// once: the client's handshake ACK then gives the radio side's first
    /// RTT sample, which paces the first flight.
    pub(crate) synack_at: Option<Instant>,
    /// Offset up to which the optimizer acknowledged the server.
    local_ack: u64,
    /// Held segments by offset, undelivered.
    held: Ring<Held>,
    /// Datagram bytes held.
    held_bytes: usize,
    /// Offsets of held segments declared lost.
    lost: BTreeSet<u64>,
    /// No unsent held segment starts below this offset.
    next_unsent: u64,
    /// The client's cumulative acknowledgment.
    client_acked: u64,
    /// The client's window's right edge.
    client_edge: u64,
    /// The right edge last advertised to the server.
    advertised_edge: u64,
    /// End of the highest sequence the server sent (held or passed on).
    server_high: u64,
    /// End of the highest segment sent toward the client.
    sent_high: u64,
    /// The server's FIN, once held: its offset.
    fin: Option<u64>,
    /// The client's next sequence number (for local ACKs).
    client_next_seq: u32,
    /// Latest TSval from the client and from the server.
    ts_client: u32,
    ts_server: u32,
    /// Sequence bytes sent toward the client, not acknowledged, SACKed or lost.
    pub(crate) in_flight: u64,
    /// RACK: send time and end offset (the tie-break between segments
    /// sent in the same instant) of the most recently sent segment
    /// delivered, and its RTT.
    rack: Option<(Instant, u64, Duration)>,
    reorder_deadline: Option<Instant>,
    probe_deadline: Option<Instant>,
    /// Probes sent since the client last acknowledged anything new.
    probes: u32,
}

impl Flow {
    /// A connection whose client SYN just passed.
    pub(crate) fn new(now: Instant, seen: &Seen) -> Flow {
        Flow {
            client: seen.src,
            server: seen.dst,
            phase: Phase::SynSeen,
            last_seen: now,
            client_isn: seen.seq,
            server_isn: 0,
            syn_options: seen.options.clone(),
            negotiated: Negotiated::default(),
            synack_at: None,
            local_ack: 0,
            held: Ring::default(),
            held_bytes: 0,
            lost: BTreeSet::new(),
            next_unsent: 0,
            client_acked: 0,
            client_edge: 0,
            advertised_edge: 0,
            server_high: 0,
            sent_high: 0,
            fin: None,
            client_next_seq: seen.seq.wrapping_add(1),
            ts_client: 0,
            ts_server: 0,
            in_flight: 0,
            rack: None,
            reorder_deadline: None,
            probe_deadline: None,
            probes: 0,
        }
    }

    /// The client's handshake ACK (or first data), `datagram`, completed
    /// the handshake: start optimizing with what both sides negotiated.
    ///
    /// The window this ACK offers the server is one the optimizer must
    /// honour: local ACKs never move a right edge back, and the server may
    /// fill that window long before the client acknowledges anything. A
    /// client offering more than `room` (payload bytes the buffers can
    /// hold) would have a window-abiding server overrun them, so the
    /// window field is lowered to `room` (checksum fixed), the one change
    /// the optimizer makes to a handshake; the client's own window reaches
    /// the server again with the first ACK the optimizer forwards after it
    /// stops. Returns true if it was lowered.
    pub(crate) fn establish(
        &mut self,
        seen: &Seen,
        negotiated: Negotiated,
        room: u64,
        datagram: &mut [u8],
    ) -> bool {
        self.phase = Phase::Optimizing;
        self.negotiated = negotiated;
        self.client_next_seq = seen.seq.wrapping_add(seen.seq_len() as u32);
        let shift = negotiated.client_window_shift;
        self.client_edge = u64::from(seen.window) << shift;
        self.advertised_edge = self.client_edge;
        if let Some((tsval, _)) = seen.options.timestamps {
            self.ts_client = tsval;
        }
        if self.client_edge <= room {
            return false;
        }
        let window = (room >> shift).min(u64::from(u16::MAX));
        let lowered = segment::set_window(datagram, window as u16);
        if lowered {
            self.advertised_edge = window << shift;
        }
        lowered
    }

    /// Datagram bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// The offset of sequence number `seq`, if it is not before the
    /// server's first data byte (taken within 2^31 of the local ACK).
    fn offset(&self, seq: u32) -> Option<u64> {
        let reference = self.seq(self.local_ack);
        let d = i64::from(seq.wrapping_sub(reference) as i32);
        u64::try_from(self.local_ack as i64 + d).ok()
    }

    /// The sequence number of offset `off`.
    fn seq(&self, off: u64) -> u32 {
        self.server_isn.wrapping_add(1).wrapping_add(off as u32)
    }

    /// The right edge the server may send to: the client's, but no further
    /// than the buffers can hold (nine tenths of the datagram bytes left,
    /// for headers), so a well-behaved server never overruns them.
    fn allowed_edge(&self, ctx: &Ctx<'_>) -> u64 {
        let own = ctx
            .config
            .max_connection_buffer_bytes
            .saturating_sub(self.held_bytes);
        let all = ctx
            .config
            .max_total_buffer_bytes
            .saturating_sub(*ctx.total_held);
        let room = own.min(all) as u64 / 10 * 9;
        self.client_edge.min(self.local_ack + room)
    }

    /// The window field of a local ACK: the allowed right edge, never
    /// moved back, as seen from the local acknowledgment, at the client's
    /// scale.
    fn window_field(&mut self, ctx: &Ctx<'_>) -> u16 {
        let edge = self.allowed_edge(ctx).max(self.advertised_edge);
        let shift = self.negotiated.client_window_shift;
        let window = (edge.saturating_sub(self.local_ack) >> shift).min(u64::from(u16::MAX));
        self.advertised_edge = self.local_ack + (window << shift);
        window as u16
    }

    /// Sends the server an ACK in the client's name.
    fn send_local_ack(&mut self, ctx: &mut Ctx<'_>) {
        let window = self.window_field(ctx);
        let mut blocks: Vec<SackBlock> = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        for (off, h) in self.held.range(self.local_ack + 1..u64::MAX) {
            match run {
                Some((l, r)) if r == off => run = Some((l, r + h.seq_len)),
                _ => {
                    if let Some((l, r)) = run {
                        blocks.push(SackBlock {
                            left: self.seq(l),
                            right: self.seq(r),
                        });
                    }
                    run = Some((off, off + h.seq_len));
                }
            }
        }
        if let Some((l, r)) = run {
            blocks.push(SackBlock {
                left: self.seq(l),
                right: self.seq(r),
            });
        }
        let ack = LocalAck {
            from: self.client,
            to: self.server,
            seq: self.client_next_seq,
            ack: self.seq(self.local_ack),
            window,
            timestamps: self
                .negotiated
                .timestamps
                .then_some((self.ts_client, self.ts_server)),
            sack: &blocks,
        };
        if let Some(datagram) = segment::local_ack(&ack) {
            ctx.stats.local_acks += 1;
            ctx.out.push_back(Transmit {
                toward: Side::Server,
                datagram,
            });
        }
    }

    /// Stops acknowledging early. Held data is still delivered; the
    /// connection passes through once none is left.
    pub(crate) fn fall_back(&mut self, reason: Reason, ctx: &mut Ctx<'_>) {
        if self.phase == Phase::Optimizing {
            ctx.stats.stop(reason);
            self.phase = Phase::Draining;
        }
        self.release_if_drained(ctx);
    }

    fn release_if_drained(&mut self, ctx: &mut Ctx<'_>) {
        if self.phase == Phase::Draining && self.held.is_empty() {
            self.end(ctx);
        }
    }

    /// Forgets everything held and passes every later packet through.
    pub(crate) fn end(&mut self, ctx: &mut Ctx<'_>) {
        *ctx.total_held -= self.held_bytes;
        self.held_bytes = 0;
        self.held.clear();
        self.lost.clear();
        self.in_flight = 0;
        self.reorder_deadline = None;
        self.probe_deadline = None;
        self.phase = Phase::PassThrough;
    }

    /// A segment from the server side of an optimizing or draining
    /// connection. Returns the datagram if it is to be forwarded untouched.
    pub(crate) fn handle_server_segment(
        &mut self,
        now: Instant,
        seen: &Seen,
        datagram: Vec<u8>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Vec<u8>> {
        if seen.has(TcpFlags::RST) {
            ctx.stats.stop(Reason::Closed);
            self.end(ctx);
            return Some(datagram);
        }
        let len = seen.seq_len();
        let (Some(off), false) = (self.offset(seen.seq), seen.has(TcpFlags::SYN)) else {
            return Some(datagram);
        };
        if len == 0 {
            // An ACK or window update for the client's data: not ours.
            return Some(datagram);
        }
        let end = off + len;
        self.server_high = self.server_high.max(end);
        if let Some((tsval, _)) = seen.options.timestamps
            && off <= self.local_ack
        {
            self.ts_server = tsval;
        }
        let data_end = end - u64::from(seen.has(TcpFlags::FIN));
        if seen.has(TcpFlags::FIN) && self.fin == Some(data_end) && data_end <= self.local_ack {
            // A copy of the FIN held here: the server's timer fired before
            // the client's ACK of it crossed the radio. The held one is on
            // its way; only the client's ACK may answer it.
            ctx.stats.duplicates_dropped += 1;
            return None;
        }
        if data_end <= self.local_ack && (end == data_end || self.held.contains(off)) {
            // A copy of what the optimizer holds or delivered: the local
            // ACK was lost or late. Say it again; the copy goes nowhere.
            ctx.stats.duplicates_dropped += 1;
            self.send_local_ack(ctx);
            return None;
        }
        if let Some(h) = self.held.get(off)
            && h.seq_len == len
        {
            ctx.stats.duplicates_dropped += 1;
            self.send_local_ack(ctx);
            return None;
        }
        if self.phase == Phase::Draining {
            return Some(datagram);
        }
        let overlaps = off < self.local_ack
            || self
                .held
                .before(end)
                .is_some_and(|(o, h)| o + h.seq_len > off);
        if overlaps {
            self.fall_back(Reason::Overlap, ctx);
            return Some(datagram);
        }
        let size = datagram.len();
        if self.held_bytes + size > ctx.config.max_connection_buffer_bytes
            || *ctx.total_held + size > ctx.config.max_total_buffer_bytes
        {
            self.fall_back(Reason::BufferFull, ctx);
            return Some(datagram);
        }
        if seen.has(TcpFlags::FIN) {
            self.fin = Some(data_end);
        }
        self.held.insert(
            off,
            Held {
                seq_len: len,
                data_len: len - u64::from(seen.has(TcpFlags::FIN)),
                datagram,
                sent_at: None,
                sends: 0,
                sacked: false,
                lost: false,
                delivered_at_send: 0,
                delivered_time_at_send: now,
            },
        );
        self.held_bytes += size;
        *ctx.total_held += size;
        self.next_unsent = self.next_unsent.min(off);
        // Acknowledge what is now contiguous, but never the FIN: the
        // client's own ACK of it goes to the server.
        while let Some(h) = self.held.get(self.local_ack) {
            let stop = h.seq_len != h.data_len;
            self.local_ack += h.data_len;
            if stop || h.data_len == 0 {
                break;
            }
        }
        self.send_local_ack(ctx);
        None
    }

    /// A packet from the client side of an optimizing or draining
    /// connection. Returns the datagram (possibly with its acknowledgment
    /// moved) if it is to be forwarded to the server.
    pub(crate) fn handle_client_segment(
        &mut self,
        now: Instant,
        seen: &Seen,
        mut datagram: Vec<u8>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Vec<u8>> {
        if seen.has(TcpFlags::RST) {
            ctx.stats.stop(Reason::Closed);
            self.end(ctx);
            return Some(datagram);
        }
        let next = seen.seq.wrapping_add(seen.seq_len() as u32);
        if (next.wrapping_sub(self.client_next_seq) as i32) > 0 {
            self.client_next_seq = next;
        }
        if let Some((tsval, _)) = seen.options.timestamps {
            self.ts_client = tsval;
        }
        let Some(ack) = seen
            .has(TcpFlags::ACK)
            .then(|| self.offset(seen.ack))
            .flatten()
        else {
            return Some(datagram);
        };
        if ack > self.server_high
            || (self.phase == Phase::Optimizing && ack > self.sent_high.max(self.local_ack))
        {
            self.fall_back(Reason::UnexpectedAck, ctx);
            return Some(datagram);
        }
        if ack >= self.client_acked {
            let edge = ack + (u64::from(seen.window) << self.negotiated.client_window_shift);
            self.client_edge = self.client_edge.max(edge);
        }
        let progressed = self.on_ack(now, ack, &seen.options.sack, ctx);
        if progressed {
            self.probes = 0;
        }
        self.detect_losses(now, ctx);
        self.arm_probe(now, ctx, progressed);
        let server_must_see = seen.payload_len > 0
            || [TcpFlags::SYN, TcpFlags::FIN, TcpFlags::URG]
                .iter()
                .any(|f| seen.has(*f));
        let forward = if ack > self.local_ack {
            // It acknowledges what the optimizer never acknowledged (a FIN,
            // or data passed through while draining): the server's to see.
            Some(datagram)
        } else if server_must_see {
            if ack < self.local_ack {
                let window = self.window_field(ctx);
                if segment::move_ack(&mut datagram, self.seq(self.local_ack), window) {
                    ctx.stats.client_acks_moved += 1;
                }
            }
            Some(datagram)
        } else {
            ctx.stats.client_acks_absorbed += 1;
            // The client's window, or the room in the buffers, opened to
            // over twice what the server was last told: say so, or the
            // server may stall on a stale window.
            // Smaller openings wait for the next local ACK, so as not to
            // double the ACKs the server handles.
            let told = self.advertised_edge.saturating_sub(self.local_ack);
            let allowed = self.allowed_edge(ctx).saturating_sub(self.local_ack);
            if self.phase == Phase::Optimizing && allowed > 2 * told {
                self.send_local_ack(ctx);
            }
            None
        };
        if self.fin.is_some_and(|f| self.client_acked > f) {
            ctx.stats.stop(Reason::Closed);
            self.end(ctx);
        }
        self.release_if_drained(ctx);
        forward
    }

    /// Applies a cumulative ACK and SACK blocks; true if anything new was
    /// delivered. Each delivery feeds the estimators as it is found, in
    /// offset order, with no list built per ACK.
    fn on_ack(&mut self, now: Instant, ack: u64, sack: &[SackBlock], ctx: &mut Ctx<'_>) -> bool {
        let mut any = false;
        if ack > self.client_acked {
            self.client_acked = ack;
            while let Some((off, h)) = self.held.first() {
                if off + h.seq_len > ack {
                    break;
                }
                let Some((off, h)) = self.held.pop_first() else {
                    break;
                };
                self.held_bytes -= h.datagram.len();
                *ctx.total_held -= h.datagram.len();
                self.lost.remove(&off);
                if !h.sacked {
                    any |= delivered(off, &h, now, &mut self.in_flight, &mut self.rack, ctx);
                }
            }
            self.held.shrink();
            self.next_unsent = self.next_unsent.max(ack);
        }
        for b in sack {
            let (Some(l), Some(r)) = (self.offset(b.left), self.offset(b.right)) else {
                continue;
            };
            if l >= r || r > self.sent_high || l < self.client_acked {
                continue;
            }
            for (o, h) in self.held.range_mut(l..r) {
                if h.sacked || o + h.seq_len > r || h.sent_at.is_none() {
                    continue;
                }
                h.sacked = true;
                self.lost.remove(&o);
                any |= delivered(o, h, now, &mut self.in_flight, &mut self.rack, ctx);
            }
        }
        any
    }

    /// RACK: a segment sent before the most recently delivered one, and
    /// older than its RTT plus the reordering window, is lost.
    fn detect_losses(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.reorder_deadline = None;
        let Some((rack_sent, rack_end, rack_rtt)) = self.rack else {
            return;
        };
        let window = self.reorder_window(ctx);
        let mut newly_lost = Vec::new();
        // Only segments below `sent_high` were ever sent: the unsent tail,
        // most of a full buffer, is not visited on each ACK.
        for (off, h) in self.held.range(0..self.sent_high) {
            let Some(sent_at) = h.sent_at else {
                continue;
            };
            if h.sacked || h.lost || (sent_at, off + h.seq_len) >= (rack_sent, rack_end) {
                continue;
            }
            let due = sent_at + rack_rtt + window;
            if due <= now {
                newly_lost.push(off);
            } else {
                self.reorder_deadline = Some(self.reorder_deadline.map_or(due, |d| d.min(due)));
            }
        }
        for off in newly_lost {
            if let Some(h) = self.held.get_mut(off) {
                h.lost = true;
                self.in_flight = self.in_flight.saturating_sub(h.seq_len);
                self.lost.insert(off);
                ctx.stats.rack_losses += 1;
            }
        }
    }

    /// A quarter of the min RTT (RFC 8985 §6.2), within the configured bounds.
    fn reorder_window(&self, ctx: &Ctx<'_>) -> Duration {
        ctx.sub
            .min_rtt()
            .map_or(ctx.config.initial_reorder_window, |m| m / 4)
            .min(ctx.config.max_reorder_window)
    }

    /// The probe timeout: two smoothed RTTs, doubled per unanswered probe.
    fn probe_timeout(&self, ctx: &Ctx<'_>) -> Duration {
        let base = ctx.sub.srtt.map_or(ctx.config.initial_probe_timeout, |s| {
            (s * 2).max(Duration::from_millis(10))
        });
        base.saturating_mul(1 << self.probes.min(16))
            .min(ctx.config.max_probe_timeout)
    }

    fn arm_probe(&mut self, now: Instant, ctx: &Ctx<'_>, restart: bool) {
        if self.in_flight == 0 {
            self.probe_deadline = None;
        } else if restart || self.probe_deadline.is_none() {
            self.probe_deadline = Some(now + self.probe_timeout(ctx));
        }
    }

    /// The first segment to send: a lost one, else the first unsent one
    /// inside the client's window. Its offset and sequence length.
    pub(crate) fn sendable(&self) -> Option<(u64, u64)> {
        if let Some(&off) = self.lost.first() {
            return self.held.get(off).map(|h| (off, h.seq_len));
        }
        let (off, h) = self
            .held
            .range(self.next_unsent..u64::MAX)
            .find(|(_, h)| h.sent_at.is_none())?;
        (off + h.data_len <= self.client_edge).then_some((off, h.seq_len))
    }

    /// Sends the held segment at `off` toward the client.
    pub(crate) fn send(&mut self, now: Instant, off: u64, idle: bool, ctx: &mut Ctx<'_>) {
        let Some(h) = self.held.get_mut(off) else {
            return;
        };
        if h.sends == 0 {
            ctx.stats.segments_sent += 1;
        } else {
            ctx.stats.retransmissions += 1;
        }
        if idle {
            ctx.sub.delivered_time = now;
        }
        h.sends += 1;
        h.sent_at = Some(now);
        h.lost = false;
        h.delivered_at_send = ctx.sub.delivered;
        h.delivered_time_at_send = ctx.sub.delivered_time;
        self.in_flight += h.seq_len;
        self.sent_high = self.sent_high.max(off + h.seq_len);
        self.lost.remove(&off);
        ctx.out.push_back(Transmit {
            toward: Side::Client,
            datagram: h.datagram.clone(),
        });
        // No unsent segment starts below `next_unsent`: a retransmission
        // does not walk the segments sent since.
        if let Some((o, _)) = self
            .held
            .range(self.next_unsent.max(off + 1)..u64::MAX)
            .find(|(_, h)| h.sent_at.is_none())
        {
            self.next_unsent = self.next_unsent.max(o.min(off + 1));
        }
        self.arm_probe(now, ctx, false);
    }

    /// The earliest of the flow's timers.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        brisk_time::earliest(self.reorder_deadline, self.probe_deadline)
    }

    /// Runs the timers due at `now`.
    pub(crate) fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.reorder_deadline.is_some_and(|t| t <= now) {
            self.detect_losses(now, ctx);
        }
        if self.probe_deadline.is_some_and(|t| t <= now) {
            self.probe(now, ctx);
        }
    }

    /// A tail-loss probe: the client has been silent for a probe timeout
    /// with data in flight. Resend the last segment sent so that its ACK's
    /// SACK blocks let RACK find what was lost; never reduce the budget.
    fn probe(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.probe_deadline = None;
        // Every segment ever sent starts below `sent_high`.
        let tail = self
            .held
            .range(0..self.sent_high)
            .rev()
            .find(|(_, h)| h.sent_at.is_some() && !h.sacked && !h.lost)
            .map(|(o, _)| o);
        let Some(off) = tail else {
            return;
        };
        ctx.stats.tail_loss_probes += 1;
        if let Some(h) = self.held.get(off) {
            // The probe is the same segment: it stays in flight once.
            self.in_flight = self.in_flight.saturating_sub(h.seq_len);
        }
        self.probes += 1;
        self.send(now, off, false, ctx);
        self.probe_deadline = Some(now + self.probe_timeout(ctx));
    }
}

/// A segment at `off` reached the client: what it tells the estimators
/// (the subscriber's RTT and delivery rate, the flow's RACK state) and
/// the flow's in-flight count. False if it was never sent.
fn delivered(
    off: u64,
    h: &Held,
    now: Instant,
    in_flight: &mut u64,
    rack: &mut Option<(Instant, u64, Duration)>,
    ctx: &mut Ctx<'_>,
) -> bool {
    let Some(sent_at) = h.sent_at else {
        return false;
    };
    if !h.lost {
        *in_flight = in_flight.saturating_sub(h.seq_len);
    }
    ctx.sub.delivered += h.data_len;
    ctx.sub.delivered_time = now;
    let rtt = now.saturating_duration_since(sent_at);
    // An ACK sooner than the path allows answers an earlier send.
    let ambiguous = h.sends > 1 && ctx.sub.min_rtt().is_some_and(|m| rtt < m);
    if h.sends == 1 {
        ctx.sub.on_rtt(now, rtt, ctx.config);
    }
    let end = off + h.seq_len;
    if !ambiguous && rack.is_none_or(|(t, e, _)| (sent_at, end) >= (t, e)) {
        *rack = Some((sent_at, end, rtt));
    }
    let bytes = ctx.sub.delivered - h.delivered_at_send;
    let interval = now.saturating_duration_since(h.delivered_time_at_send);
    ctx.sub.on_rate(now, bytes, interval, ctx.config);
    true
}
