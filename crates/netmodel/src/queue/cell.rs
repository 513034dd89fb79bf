//! A mobile cell's downlink buffer: one deep queue per subscriber, and a
//! scheduler that shares the cell's rate fairly across the subscribers
//! with data waiting.
//!
//! Why: a base station does not keep one FIFO for everybody. Each user
//! (each radio bearer) has its own buffer, often seconds deep (the Teclo
//! talk saw queues of 30 seconds), and the radio scheduler gives every
//! active user a turn. So one user's bulk download builds seconds of delay
//! for that user alone, while another user's ping crosses the cell at
//! once. A shared FIFO or a per-flow FQ discipline models neither: the
//! first makes every user wait behind the heaviest, the second splits one
//! user's flows apart although they share one radio bearer, which is what
//! a per-subscriber optimizer budget is built for.
//!
//! The scheduler is deficit round robin over subscribers, byte fair (a
//! round-robin or proportional-fair scheduler where every user sees the
//! same radio quality). A subscriber is an IP address: the destination in
//! the down direction (the default), the source for an up-direction queue.
//! `discard_after` models the radio's discard timer (LTE's PDCP discard
//! timer): a packet that waited longer is dropped when its turn comes.
//! Radio freezes and losses after idle act on the whole link
//! (`outages`, `outage_every`, `loss_after_idle` in `[link.*]`).

use super::{DropReason, QueueEvent, QueueStats};
use crate::packet::Packet;
use brisk_time::Instant;
use serde::Deserialize;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::time::Duration;

/// Which address names the subscriber a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriberKey {
    /// The packet's destination: the handset, in the down direction.
    Destination,
    /// The packet's source: the handset, in the up direction.
    Source,
}

/// Smallest scheduling quantum: a smaller one only costs more rounds.
const MIN_QUANTUM: u64 = 256;

/// `[queue.cell]`: per-subscriber queues under a fair scheduler.
///
/// ```toml
/// [queue.cell]
/// subscriber = "destination"       # "source" for a [queue_up.cell]
/// subscriber_limit_bytes = "4MB"   # each subscriber's own buffer
/// discard_after = "5s"             # drop what waited longer; default never
/// quantum_bytes = 1514             # bytes per scheduling turn
/// max_subscribers = 4096           # a packet for one more is dropped
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CellConfig {
    /// `subscriber`: `"destination"` (default) or `"source"`.
    pub subscriber: SubscriberKey,
    /// `subscriber_limit_bytes`: the most bytes (whole IP datagrams) one
    /// subscriber's queue holds before tail drop. Default 4 MB: 3.2 s at a
    /// 10 Mbit/s share, 32 s at 1 Mbit/s.
    #[serde(deserialize_with = "positive_bytes")]
    pub subscriber_limit_bytes: u64,
    /// `subscriber_limit_packets`: an optional packet limit per subscriber.
    pub subscriber_limit_packets: Option<usize>,
    /// `discard_after`: a packet that waited longer than this is dropped
    /// when its turn comes. Default none (packets wait as long as it takes).
    #[serde(deserialize_with = "crate::units::opt_duration::deserialize")]
    pub discard_after: Option<Duration>,
    /// `quantum_bytes`: bytes a subscriber may send per turn, at least 256.
    /// Default 1514 (one full Ethernet frame).
    #[serde(deserialize_with = "quantum")]
    pub quantum_bytes: u64,
    /// `max_subscribers`: how many subscribers may have data waiting at
    /// once, at least 1; a packet for one more is dropped, which bounds the
    /// memory a flood of addresses can take. Default 4096.
    #[serde(deserialize_with = "at_least_one")]
    pub max_subscribers: usize,
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig {
            subscriber: SubscriberKey::Destination,
            subscriber_limit_bytes: 4_000_000,
            subscriber_limit_packets: None,
            discard_after: None,
            quantum_bytes: 1514,
            max_subscribers: 4096,
        }
    }
}

fn positive_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let b = crate::units::bytes::deserialize(d)?;
    if b == 0 {
        return Err(serde::de::Error::custom(
            "subscriber_limit_bytes must be more than 0",
        ));
    }
    Ok(b)
}

fn quantum<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let q = crate::units::bytes::deserialize(d)?;
    if q < MIN_QUANTUM {
        return Err(serde::de::Error::custom(format!(
            "quantum_bytes must be at least {MIN_QUANTUM}, got {q}"
        )));
    }
    Ok(q)
}

fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = usize::deserialize(d)?;
    if n == 0 {
        return Err(serde::de::Error::custom(
            "max_subscribers must be at least 1",
        ));
    }
    Ok(n)
}

/// One subscriber's queue and its scheduling credit.
#[derive(Debug, Default)]
struct Subscriber {
    packets: VecDeque<Packet>,
    bytes: u64,
    /// Bytes it may still send in its current turn (deficit round robin).
    deficit: u64,
}

/// Per-subscriber queues drained in deficit round robin; see the module
/// docs. Subscribers with nothing waiting take no memory.
#[derive(Debug)]
pub struct Cell {
    config: CellConfig,
    subscribers: BTreeMap<IpAddr, Subscriber>,
    /// Subscribers with data waiting, in turn order; the front is served.
    turns: VecDeque<IpAddr>,
    stats: QueueStats,
    events: VecDeque<QueueEvent>,
}

impl Cell {
    /// An empty cell.
    pub fn new(config: CellConfig) -> Cell {
        Cell {
            config,
            subscribers: BTreeMap::new(),
            turns: VecDeque::new(),
            stats: QueueStats::default(),
            events: VecDeque::new(),
        }
    }

    /// How many subscribers have data waiting.
    pub fn active_subscribers(&self) -> usize {
        self.turns.len()
    }

    /// Bytes waiting for subscriber `addr`.
    pub fn subscriber_backlog_bytes(&self, addr: IpAddr) -> u64 {
        self.subscribers.get(&addr).map_or(0, |s| s.bytes)
    }

    fn key(&self, packet: &Packet) -> IpAddr {
        let flow = packet.flow();
        match self.config.subscriber {
            SubscriberKey::Destination => flow.dst,
            SubscriberKey::Source => flow.src,
        }
    }

    fn drop(&mut self, at: Instant, packet: Packet, reason: DropReason) {
        match reason {
            DropReason::Overflow => self.stats.dropped_overflow += 1,
            DropReason::Aqm => self.stats.dropped_aqm += 1,
        }
        self.events
            .push_back(QueueEvent::Dropped { at, packet, reason });
    }

    /// Takes the head packet of the subscriber at the front of the turn
    /// order off its queue, forgetting the subscriber once it is empty.
    fn pop_front_subscriber(&mut self, addr: IpAddr) -> Option<Packet> {
        let sub = self.subscribers.get_mut(&addr)?;
        let p = sub.packets.pop_front()?;
        let len = p.len() as u64;
        sub.bytes -= len;
        sub.deficit = sub.deficit.saturating_sub(len);
        self.stats.backlog_packets -= 1;
        self.stats.backlog_bytes -= len;
        if sub.packets.is_empty() {
            self.subscribers.remove(&addr);
            self.turns.pop_front();
        }
        Some(p)
    }
}

impl super::Queue for Cell {
    fn name(&self) -> &'static str {
        "cell"
    }

    fn enqueue(&mut self, now: Instant, mut packet: Packet) {
        let addr = self.key(&packet);
        let len = packet.len() as u64;
        let known = self.subscribers.contains_key(&addr);
        if !known && self.subscribers.len() >= self.config.max_subscribers {
            self.drop(now, packet, DropReason::Overflow);
            return;
        }
        let (limit_bytes, limit_packets) = (
            self.config.subscriber_limit_bytes,
            self.config.subscriber_limit_packets,
        );
        let sub = self.subscribers.entry(addr).or_default();
        let full = sub.bytes + len > limit_bytes
            || limit_packets.is_some_and(|l| sub.packets.len() + 1 > l);
        if full {
            if sub.packets.is_empty() {
                self.subscribers.remove(&addr);
            }
            self.drop(now, packet, DropReason::Overflow);
            return;
        }
        if sub.packets.is_empty() {
            sub.deficit = self.config.quantum_bytes;
            self.turns.push_back(addr);
        }
        packet.enqueued_at = now;
        sub.bytes += len;
        sub.packets.push_back(packet);
        self.stats.enqueued_packets += 1;
        self.stats.enqueued_bytes += len;
        self.stats.backlog_packets += 1;
        self.stats.backlog_bytes += len;
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        loop {
            let addr = *self.turns.front()?;
            let sub = self
                .subscribers
                .get(&addr)
                .expect("every subscriber in the turn order has packets waiting");
            let head = sub
                .packets
                .front()
                .expect("a subscriber with no packets leaves the turn order");
            let (head_len, waited) = (head.len() as u64, now - head.enqueued_at);
            if self.config.discard_after.is_some_and(|d| waited > d) {
                if let Some(p) = self.pop_front_subscriber(addr) {
                    self.drop(now, p, DropReason::Aqm);
                }
                continue;
            }
            if sub.deficit < head_len {
                // Turn over: credit for the next one, and to the back.
                let quantum = self.config.quantum_bytes;
                if let Some(sub) = self.subscribers.get_mut(&addr) {
                    sub.deficit = sub.deficit.saturating_add(quantum);
                }
                self.turns.rotate_left(1);
                continue;
            }
            let p = self.pop_front_subscriber(addr)?;
            self.stats.dequeued_packets += 1;
            self.stats.dequeued_bytes += p.len() as u64;
            return Some(p);
        }
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }

    fn poll_event(&mut self) -> Option<QueueEvent> {
        self.events.pop_front()
    }

    fn len_packets(&self) -> usize {
        self.stats.backlog_packets as usize
    }

    fn len_bytes(&self) -> usize {
        self.stats.backlog_bytes as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Queue, QueueConfig};
    use brisk_wire::{Ecn, ip};
    use std::net::SocketAddr;

    /// Subscriber `n`'s address (and the server's) on `family` 4 or 6.
    fn addr(family: u8, n: u16) -> IpAddr {
        if family == 4 {
            format!("10.2.{}.{}", n >> 8, n & 0xff).parse().unwrap()
        } else {
            format!("2001:db8:2::{n:x}").parse().unwrap()
        }
    }

    /// A UDP datagram of `len` bytes in total from the server to subscriber `to`.
    fn to_sub(family: u8, id: u64, to: u16, len: usize, at: Instant) -> Packet {
        let server = SocketAddr::new(addr(family, 999), 443);
        let dst = SocketAddr::new(addr(family, to), 40_000);
        let header = if family == 4 { 28 } else { 48 };
        let data = ip::udp_datagram(server, dst, Ecn::NotEct, &vec![0; len - header]).unwrap();
        Packet::new(id, at, data).unwrap()
    }

    fn cell(config: CellConfig) -> Cell {
        Cell::new(config)
    }

    /// Bytes dequeued per subscriber over `n` dequeues.
    fn drain_bytes(q: &mut Cell, n: usize) -> BTreeMap<IpAddr, u64> {
        let mut got = BTreeMap::new();
        for _ in 0..n {
            let p = q.dequeue(Instant::ZERO).unwrap();
            *got.entry(p.flow().dst).or_default() += p.len() as u64;
        }
        got
    }

    #[test]
    fn subscribers_with_different_packet_sizes_share_bytes_fairly() {
        for family in [4, 6] {
            let mut q = cell(CellConfig::default());
            for i in 0..2000 {
                q.enqueue(Instant::ZERO, to_sub(family, i, 1, 1500, Instant::ZERO));
                q.enqueue(Instant::ZERO, to_sub(family, i, 2, 300, Instant::ZERO));
                q.enqueue(Instant::ZERO, to_sub(family, i, 2, 300, Instant::ZERO));
            }
            let got = drain_bytes(&mut q, 1800);
            let (a, b) = (got[&addr(family, 1)], got[&addr(family, 2)]);
            // Equal bytes to within one quantum, not equal packets: a
            // per-packet round robin would give the big packets 5x.
            assert!(a.abs_diff(b) <= 1514, "IPv{family}: {a} vs {b} bytes");
            assert!(a > 200_000, "IPv{family}: {a}");
            assert_eq!(q.active_subscribers(), 2);
        }
    }

    #[test]
    fn a_light_subscriber_waits_one_turn_not_behind_a_deep_queue() {
        for family in [4, 6] {
            let mut q = cell(CellConfig::default());
            for i in 0..2000 {
                q.enqueue(Instant::ZERO, to_sub(family, i, 1, 1500, Instant::ZERO));
            }
            // 3 MB wait for subscriber 1: 2.4 s at 10 Mbit/s.
            assert_eq!(q.len_bytes(), 3_000_000);
            let _ = q.dequeue(Instant::ZERO);
            q.enqueue(Instant::ZERO, to_sub(family, 9999, 2, 100, Instant::ZERO));
            let next: Vec<u64> = (0..2)
                .map(|_| q.dequeue(Instant::ZERO).unwrap().id)
                .collect();
            assert!(next.contains(&9999), "IPv{family}: {next:?}");
            assert_eq!(q.active_subscribers(), 1, "IPv{family}");
        }
    }

    #[test]
    fn each_subscriber_overflows_its_own_buffer_only() {
        for family in [4, 6] {
            let mut q = cell(CellConfig {
                subscriber_limit_bytes: 15_000,
                ..CellConfig::default()
            });
            for i in 0..20 {
                q.enqueue(Instant::ZERO, to_sub(family, i, 1, 1500, Instant::ZERO));
            }
            for i in 0..5 {
                q.enqueue(
                    Instant::ZERO,
                    to_sub(family, 100 + i, 2, 1500, Instant::ZERO),
                );
            }
            let s = q.stats();
            assert_eq!(s.dropped_overflow, 10, "IPv{family}");
            assert_eq!(q.subscriber_backlog_bytes(addr(family, 1)), 15_000);
            assert_eq!(q.subscriber_backlog_bytes(addr(family, 2)), 7_500);
            let dropped: Vec<u64> = std::iter::from_fn(|| q.poll_event())
                .map(|e| match e {
                    QueueEvent::Dropped { packet, reason, .. } => {
                        assert_eq!(reason, DropReason::Overflow);
                        packet.id
                    }
                    QueueEvent::Marked { .. } => panic!("the cell never marks"),
                })
                .collect();
            assert_eq!(dropped, (10..20).collect::<Vec<u64>>(), "IPv{family}");
            let mut q = cell(CellConfig {
                subscriber_limit_packets: Some(3),
                ..CellConfig::default()
            });
            for i in 0..5 {
                q.enqueue(Instant::ZERO, to_sub(family, i, 1, 100, Instant::ZERO));
            }
            assert_eq!((q.len_packets(), q.stats().drops()), (3, 2));
        }
    }

    #[test]
    fn the_discard_timer_drops_what_waited_too_long_when_its_turn_comes() {
        for family in [4, 6] {
            let mut q = cell(CellConfig {
                discard_after: Some(Duration::from_millis(500)),
                ..CellConfig::default()
            });
            for i in 0..10 {
                let at = Instant::from_millis(i * 100);
                q.enqueue(at, to_sub(family, i, 1, 1000, at));
            }
            // At 1.05 s, packets queued at 0-500 ms waited over 500 ms.
            let p = q.dequeue(Instant::from_millis(1050)).unwrap();
            assert_eq!(p.id, 6, "IPv{family}");
            let s = q.stats();
            assert_eq!((s.dropped_aqm, s.dequeued_packets), (6, 1), "IPv{family}");
            assert_eq!(q.len_packets(), 3);
            // Everything too old: the queue empties and says so.
            assert!(q.dequeue(Instant::from_millis(5_000)).is_none());
            assert!(q.is_empty() && q.active_subscribers() == 0);
        }
    }

    #[test]
    fn the_up_direction_keys_subscribers_by_source() {
        for family in [4, 6] {
            let mut q = cell(CellConfig {
                subscriber: SubscriberKey::Source,
                subscriber_limit_packets: Some(4),
                ..CellConfig::default()
            });
            // Every packet comes from the one server: one subscriber.
            for i in 0..6 {
                q.enqueue(
                    Instant::ZERO,
                    to_sub(family, i, i as u16 + 1, 100, Instant::ZERO),
                );
            }
            assert_eq!((q.active_subscribers(), q.stats().drops()), (1, 2));
        }
    }

    #[test]
    fn a_flood_of_addresses_is_bounded_by_max_subscribers() {
        for family in [4, 6] {
            let mut q = cell(CellConfig {
                max_subscribers: 3,
                ..CellConfig::default()
            });
            for n in 1..=10 {
                q.enqueue(
                    Instant::ZERO,
                    to_sub(family, n, n as u16, 100, Instant::ZERO),
                );
            }
            assert_eq!((q.active_subscribers(), q.stats().drops()), (3, 7));
            // A known subscriber still gets in, and a served-out one frees its place.
            q.enqueue(Instant::ZERO, to_sub(family, 11, 1, 100, Instant::ZERO));
            assert_eq!(q.len_packets(), 4);
            let first = q.dequeue(Instant::ZERO).unwrap();
            let _ = q.dequeue(Instant::ZERO);
            assert_eq!(first.flow().dst, addr(family, 1));
            q.enqueue(Instant::ZERO, to_sub(family, 12, 7, 100, Instant::ZERO));
            assert_eq!(q.stats().drops(), 7, "IPv{family}");
            let mut out = 0;
            while q.dequeue(Instant::ZERO).is_some() {
                out += 1;
            }
            assert_eq!((out, q.len_bytes()), (3, 0));
        }
    }

    #[test]
    fn config_from_toml_with_units_and_errors_naming_field_and_line() {
        #[derive(serde::Deserialize)]
        struct Scenario {
            queue: QueueConfig,
        }
        let s: Scenario = toml::from_str(
            "[queue.cell]\nsubscriber_limit_bytes = \"2MB\"\ndiscard_after = \"4s\"\nsubscriber = \"source\"\n",
        )
        .unwrap();
        let want = CellConfig {
            subscriber: SubscriberKey::Source,
            subscriber_limit_bytes: 2_000_000,
            discard_after: Some(Duration::from_secs(4)),
            ..CellConfig::default()
        };
        assert_eq!(s.queue, QueueConfig::Cell(want));
        for (text, field, line) in [
            ("[queue.cell]\n\nquantum_bytes = 10\n", "quantum_bytes", 3),
            ("[queue.cell]\nmax_subscribers = 0\n", "max_subscribers", 2),
            ("[queue.cell]\nsubscriber = \"user\"\n", "destination", 2),
            (
                "[queue.cell]\nsubscriber_limit_bytes = \"0B\"\n",
                "subscriber_limit_bytes",
                2,
            ),
            (
                "[queue.cell]\ndiscard_after = \"soon\"\n",
                "discard_after",
                2,
            ),
            ("[queue.cell]\nlimit_bytes = \"1MB\"\n", "limit_bytes", 2),
        ] {
            let err = toml::from_str::<Scenario>(text).err().unwrap().to_string();
            assert!(
                err.contains(field) && err.contains(&format!("line {line}")),
                "{text}: {err}"
            );
        }
    }
}
