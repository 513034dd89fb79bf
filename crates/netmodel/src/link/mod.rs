//! One direction of a link: packets wait in a queue, leave it one at a time
//! at the link rate, then propagate for the link delay to the far end.
//!
//! Drive it like every Brisk state machine: feed arrivals with
//! [`Link::handle_packet`], call [`Link::handle_timeout`] at (or after)
//! [`Link::poll_timeout`], and drain [`Link::poll_delivery`] and
//! [`Link::poll_event`] after each call. Calling late is allowed: the link
//! replays what happened in between at the exact times it happened.

use crate::Rng;
use crate::packet::Packet;
use crate::queue::{DropReason, Queue, QueueEvent};
use brisk_time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// How fast the transmitter drains the queue. In a scenario: `rate = "10Mbit"`.
#[derive(Debug, Clone, PartialEq)]
pub enum RateModel {
    /// A fixed rate in bits per second.
    Constant { bps: u64 },
}

impl RateModel {
    /// Serialization time of `bytes` starting at `start`.
    fn transmit_time(&self, _start: Instant, bytes: usize) -> Duration {
        match self {
            RateModel::Constant { bps } => {
                Duration::from_nanos((bytes as u64 * 8 * 1_000_000_000).div_ceil((*bps).max(1)))
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for RateModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::units::rate_bps::deserialize(d).map(|bps| RateModel::Constant { bps })
    }
}

/// Settings of one link direction, as a scenario's `[link.down]` or
/// `[link.up]` table. Omitted fields keep their defaults: 10 Mbit/s, no delay.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// `rate = "10Mbit"`: how fast the queue drains.
    pub rate: RateModel,
    /// `delay = "20ms"`: one-way propagation delay.
    #[serde(with = "crate::units::duration")]
    pub delay: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            rate: RateModel::Constant { bps: 10_000_000 },
            delay: Duration::ZERO,
        }
    }
}

/// Something the link did that a trace should show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    /// The queue dropped a packet.
    QueueDrop {
        at: Instant,
        packet: Packet,
        reason: DropReason,
    },
    /// The queue marked a packet CE.
    Marked { at: Instant, packet_id: u64 },
    /// A packet left the queue after waiting `queue_delay`.
    Dequeued {
        at: Instant,
        packet_id: u64,
        queue_delay: Duration,
    },
}

/// Totals over the life of the link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub transmitted_packets: u64,
    pub transmitted_bytes: u64,
    /// Time the transmitter spent sending (for utilization).
    pub busy: Duration,
}

/// One direction of a link.
pub struct Link {
    config: LinkConfig,
    queue: Box<dyn Queue>,
    #[allow(dead_code)] // drawn from by impairments
    rng: Rng,
    /// When the transmitter finishes the packet it is sending.
    busy_until: Instant,
    /// Packets propagating, in arrival order.
    in_flight: VecDeque<(Instant, Packet)>,
    delivered: VecDeque<(Instant, Packet)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
}

impl Link {
    pub fn new(config: LinkConfig, queue: Box<dyn Queue>, rng: Rng) -> Link {
        Link {
            config,
            queue,
            rng,
            busy_until: Instant::ZERO,
            in_flight: VecDeque::new(),
            delivered: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    pub fn queue(&self) -> &dyn Queue {
        self.queue.as_ref()
    }

    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// A packet arrives at the link's input at `now`.
    pub fn handle_packet(&mut self, now: Instant, packet: Packet) {
        self.advance(now);
        self.queue.enqueue(now, packet);
        self.drain_queue_events();
        if self.busy_until < now {
            self.busy_until = now;
        }
        self.advance(now);
    }

    /// Advances internal state to `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next time the link has something to do, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = (!self.queue.is_empty()).then_some(self.busy_until);
        let rx = self.in_flight.front().map(|(t, _)| *t);
        match (tx, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet that reached the far end, with its arrival time.
    pub fn poll_delivery(&mut self) -> Option<(Instant, Packet)> {
        self.delivered.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn advance(&mut self, now: Instant) {
        loop {
            let next_rx = self
                .in_flight
                .front()
                .map(|(t, _)| *t)
                .filter(|t| *t <= now);
            let next_tx =
                (!self.queue.is_empty() && self.busy_until <= now).then_some(self.busy_until);
            match (next_tx, next_rx) {
                (Some(tx), Some(rx)) if rx <= tx => self.arrive(),
                (Some(tx), _) => self.transmit(tx),
                (None, Some(_)) => self.arrive(),
                (None, None) => break,
            }
        }
    }

    fn arrive(&mut self) {
        if let Some(p) = self.in_flight.pop_front() {
            self.delivered.push_back(p);
        }
    }

    /// The transmitter is free at `start`: take the next packet and send it.
    fn transmit(&mut self, start: Instant) {
        let packet = self.queue.dequeue(start);
        self.drain_queue_events();
        let Some(packet) = packet else { return };
        let queue_delay = start - packet.enqueued_at;
        self.events.push_back(LinkEvent::Dequeued {
            at: start,
            packet_id: packet.id,
            queue_delay,
        });
        let tx = self.config.rate.transmit_time(start, packet.len());
        self.busy_until = start + tx;
        self.stats.transmitted_packets += 1;
        self.stats.transmitted_bytes += packet.len() as u64;
        self.stats.busy += tx;
        self.in_flight
            .push_back((self.busy_until + self.config.delay, packet));
    }

    fn drain_queue_events(&mut self) {
        while let Some(e) = self.queue.poll_event() {
            self.events.push_back(match e {
                QueueEvent::Dropped { at, packet, reason } => {
                    LinkEvent::QueueDrop { at, packet, reason }
                }
                QueueEvent::Marked { at, packet_id } => LinkEvent::Marked { at, packet_id },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use crate::queue::{Fifo, FifoConfig};
    use brisk_wire::Ecn;

    fn link(bps: u64, delay_ms: u64) -> Link {
        let config = LinkConfig {
            rate: RateModel::Constant { bps },
            delay: Duration::from_millis(delay_ms),
        };
        Link::new(
            config,
            Box::new(Fifo::new(FifoConfig::default())),
            crate::rng(1, 0),
        )
    }

    /// Runs the link as a simulator would: wake at each poll_timeout.
    fn drain(l: &mut Link) -> Vec<(Instant, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.poll_timeout() {
            l.handle_timeout(t);
            while let Some((at, p)) = l.poll_delivery() {
                out.push((at, p.id));
            }
        }
        out
    }

    #[test]
    fn serializes_back_to_back_then_propagates() {
        // 1000-byte packets at 8 Mbit/s take 1 ms each; 10 ms of delay.
        let mut l = link(8_000_000, 10);
        for i in 0..3 {
            l.handle_packet(Instant::ZERO, udp(i, 0, 1000, Ecn::NotEct));
        }
        let got = drain(&mut l);
        let want: Vec<(Instant, u64)> = (0..3).map(|i| (Instant::from_millis(11 + i), i)).collect();
        assert_eq!(got, want);
        assert_eq!(l.stats().busy, Duration::from_millis(3));
    }

    #[test]
    fn config_defaults_and_toml() {
        let c: LinkConfig = toml::from_str("rate = \"2Mbit\"\ndelay = \"10ms\"").unwrap();
        assert_eq!(c.rate, RateModel::Constant { bps: 2_000_000 });
        assert_eq!(c.delay, Duration::from_millis(10));
        let d: LinkConfig = toml::from_str("").unwrap();
        assert_eq!(d, LinkConfig::default());
        let err = toml::from_str::<LinkConfig>("\nrate = \"quick\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("quick"), "{err}");
    }

    #[test]
    fn idle_transmitter_starts_on_arrival_and_late_calls_replay_exactly() {
        let mut l = link(8_000_000, 0);
        l.handle_packet(Instant::from_millis(5), udp(1, 0, 1000, Ecn::NotEct));
        l.handle_packet(Instant::from_millis(5), udp(2, 0, 1000, Ecn::NotEct));
        // Called long after both finished: arrival times are still exact.
        l.handle_timeout(Instant::from_millis(100));
        let got: Vec<_> = std::iter::from_fn(|| l.poll_delivery())
            .map(|(t, p)| (t, p.id))
            .collect();
        assert_eq!(
            got,
            vec![(Instant::from_millis(6), 1), (Instant::from_millis(7), 2)]
        );
    }
}
