//! The bookkeeping every single-FIFO discipline shares: the packets, the
//! limits, the counters and the event log. A discipline decides *whether*
//! a packet is queued, dropped or marked; `Backlog` records it the same way
//! for all of them, so their statistics can be compared.

use super::{DropReason, Limits, QueueEvent, QueueStats};
use crate::packet::Packet;
use brisk_time::Instant;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Backlog {
    packets: VecDeque<Packet>,
    limits: Limits,
    stats: QueueStats,
    events: VecDeque<QueueEvent>,
}

impl Backlog {
    pub(crate) fn new(limits: Limits) -> Backlog {
        Backlog {
            packets: VecDeque::new(),
            limits,
            stats: QueueStats::default(),
            events: VecDeque::new(),
        }
    }

    /// Would queuing `len` more bytes break a limit?
    pub(crate) fn would_overflow(&self, len: usize) -> bool {
        let (n, b) = (self.packets.len(), self.stats.backlog_bytes as usize);
        self.limits.would_overflow(n, b, len)
    }

    /// Appends `packet` at `now`, stamping its enqueue time.
    pub(crate) fn push(&mut self, now: Instant, mut packet: Packet) {
        packet.enqueued_at = now;
        let len = packet.len() as u64;
        self.stats.enqueued_packets += 1;
        self.stats.enqueued_bytes += len;
        self.stats.backlog_packets += 1;
        self.stats.backlog_bytes += len;
        self.packets.push_back(packet);
    }

    /// Tail drop: appends `packet`, or drops it when a limit is reached.
    pub(crate) fn push_or_tail_drop(&mut self, now: Instant, packet: Packet) {
        if self.would_overflow(packet.len()) {
            self.drop(now, packet, DropReason::Overflow);
        } else {
            self.push(now, packet);
        }
    }

    /// Takes the head packet off the backlog. It is not yet counted as
    /// dequeued: the discipline may still drop it ([`Backlog::drop`]) or
    /// release it ([`Backlog::count_dequeued`]).
    pub(crate) fn pop(&mut self) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.stats.backlog_packets -= 1;
        self.stats.backlog_bytes -= p.len() as u64;
        Some(p)
    }

    /// Counts a packet handed to the link.
    pub(crate) fn count_dequeued(&mut self, packet: &Packet) {
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += packet.len() as u64;
    }

    /// Records a drop decided by the discipline (or by the limits).
    pub(crate) fn drop(&mut self, at: Instant, packet: Packet, reason: DropReason) {
        match reason {
            DropReason::Overflow => self.stats.dropped_overflow += 1,
            DropReason::Aqm => self.stats.dropped_aqm += 1,
        }
        self.events
            .push_back(QueueEvent::Dropped { at, packet, reason });
    }

    /// Records that the packet with `packet_id` was marked CE.
    pub(crate) fn mark(&mut self, at: Instant, packet_id: u64) {
        self.stats.marked += 1;
        self.events.push_back(QueueEvent::Marked { at, packet_id });
    }

    pub(crate) fn backlog_bytes(&self) -> u64 {
        self.stats.backlog_bytes
    }

    pub(crate) fn len_packets(&self) -> usize {
        self.stats.backlog_packets as usize
    }

    pub(crate) fn stats(&self) -> QueueStats {
        self.stats
    }

    pub(crate) fn poll_event(&mut self) -> Option<QueueEvent> {
        self.events.pop_front()
    }
}
