//! FIFO with tail drop: the bufferbloat baseline found in most home routers
//! and cellular base stations.

use super::{DropReason, Limits, Queue, QueueEvent, QueueStats};
use crate::packet::Packet;
use brisk_time::Instant;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FifoConfig {
    pub limits: Limits,
}

impl Default for FifoConfig {
    /// 1000 packets, like Linux's default txqueuelen.
    fn default() -> Self {
        FifoConfig { limits: Limits::packets(1000) }
    }
}

#[derive(Debug)]
pub struct Fifo {
    config: FifoConfig,
    queue: VecDeque<Packet>,
    stats: QueueStats,
    events: VecDeque<QueueEvent>,
}

impl Fifo {
    pub fn new(config: FifoConfig) -> Fifo {
        Fifo { config, queue: VecDeque::new(), stats: QueueStats::default(), events: VecDeque::new() }
    }
}

impl Queue for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn enqueue(&mut self, now: Instant, mut packet: Packet) {
        let (n, b) = (self.stats.backlog_packets as usize, self.stats.backlog_bytes as usize);
        if self.config.limits.would_overflow(n, b, packet.len()) {
            self.stats.dropped_overflow += 1;
            self.events.push_back(QueueEvent::Dropped { at: now, packet, reason: DropReason::Overflow });
            return;
        }
        packet.enqueued_at = now;
        self.stats.enqueued_packets += 1;
        self.stats.enqueued_bytes += packet.len() as u64;
        self.stats.backlog_packets += 1;
        self.stats.backlog_bytes += packet.len() as u64;
        self.queue.push_back(packet);
    }

    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += p.len() as u64;
        self.stats.backlog_packets -= 1;
        self.stats.backlog_bytes -= p.len() as u64;
        Some(p)
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }

    fn poll_event(&mut self) -> Option<QueueEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use brisk_wire::Ecn;

    #[test]
    fn tail_drops_past_the_packet_limit_in_order() {
        let mut q = Fifo::new(FifoConfig { limits: Limits::packets(3) });
        for i in 0..5 {
            q.enqueue(Instant::ZERO, udp(i, 0, 100, Ecn::Ect0));
        }
        assert_eq!(q.stats().dropped_overflow, 2);
        let dropped: Vec<u64> = std::iter::from_fn(|| q.poll_event())
            .map(|e| match e {
                QueueEvent::Dropped { packet, .. } => packet.id,
                QueueEvent::Marked { .. } => panic!("fifo never marks"),
            })
            .collect();
        assert_eq!(dropped, vec![3, 4]);
        let out: Vec<u64> = std::iter::from_fn(|| q.dequeue(Instant::ZERO)).map(|p| p.id).collect();
        assert_eq!(out, vec![0, 1, 2]);
        assert!(q.is_empty());
    }

    #[test]
    fn byte_limit_counts_whole_datagrams() {
        let mut q = Fifo::new(FifoConfig { limits: Limits { packets: None, bytes: Some(250) } });
        for i in 0..3 {
            q.enqueue(Instant::ZERO, udp(i, 0, 100, Ecn::NotEct));
        }
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 200));
        assert_eq!(q.stats().drops(), 1);
    }
}
