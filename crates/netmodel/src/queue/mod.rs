//! Queue disciplines behind one small trait, and a mobile cell's
//! per-subscriber queues ([`Cell`]).
//!
//! A queue is a pure state machine: `enqueue(now, packet)` and
//! `dequeue(now)`. Disciplines that update state on a timer (PIE, DualPI2)
//! catch up lazily from `now` on each call, so the driver never has to
//! schedule wake-ups for them. Where the algorithm signals congestion, an
//! ECN-capable packet is marked CE in its real header; a Not-ECT packet is
//! dropped. Every drop and mark is reported through [`Queue::poll_event`] so
//! traces can show them.

mod backlog;
mod cell;
mod codel;
mod codel_law;
mod dualpi2;
mod fifo;
mod flow_hash;
mod fq_codel;
mod pi_common;
mod pie;

pub use cell::{Cell, CellConfig, SubscriberKey};
pub use codel::{Codel, CodelConfig};
pub use codel_law::CodelCounters;
pub use dualpi2::{
    DualPi2, DualPi2Config, DualPi2ConfigError, DualPi2Stats, EcnMask, Pi2Gains, StepThreshold,
    SubQueueStats,
};
pub use fifo::{Fifo, FifoConfig};
pub use fq_codel::{FlowList, FlowSnapshot, FqCodel, FqCodelConfig, FqCodelStats, MtuBacklog};
pub use pie::{Pie, PieConfig};

use crate::Rng;
use crate::packet::Packet;
use brisk_time::Instant;
use serde::Deserialize;

/// A queue discipline and its settings, as written in a scenario: a table
/// named for the discipline, e.g. `[queue.codel]` with `target = "5ms"`.
/// Omitted fields take the discipline's published defaults. (Externally
/// tagged on purpose: serde can then report a bad field with its line.)
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// Tail-drop FIFO, `[queue.fifo]`.
    Fifo(FifoConfig),
    /// CoDel (RFC 8289), `[queue.codel]`.
    Codel(CodelConfig),
    /// FQ-CoDel (RFC 8290), `[queue.fq_codel]`.
    FqCodel(FqCodelConfig),
    /// PIE (RFC 8033), `[queue.pie]`.
    Pie(PieConfig),
    /// DualPI2 (RFC 9332), `[queue.dualpi2]`.
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Config),
    /// A mobile cell's per-subscriber queues under a fair scheduler, `[queue.cell]`.
    Cell(CellConfig),
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig::Fifo(FifoConfig::default())
    }
}

impl QueueConfig {
    /// Builds the discipline. `rng` feeds disciplines that draw random
    /// numbers (PIE, DualPI2) and seeds flow hashing (FQ-CoDel).
    pub fn build(&self, rng: Rng) -> Box<dyn Queue> {
        let _ = rng;
        match self {
            QueueConfig::Fifo(c) => Box::new(Fifo::new(c.clone())),
            QueueConfig::Codel(c) => Box::new(Codel::new(c.clone())),
            QueueConfig::FqCodel(c) => Box::new(FqCodel::new(c.clone(), rng)),
            QueueConfig::Pie(c) => Box::new(Pie::new(c.clone(), rng)),
            QueueConfig::DualPi2(c) => Box::new(DualPi2::new(c.clone(), rng)),
            QueueConfig::Cell(c) => Box::new(Cell::new(c.clone())),
        }
    }
}

/// Why a queue dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The packet or byte limit was reached (tail drop or its FQ variant).
    Overflow,
    /// The AQM's control law chose to drop (Not-ECT, or ECN overloaded).
    Aqm,
}

/// Something a queue did that a trace should show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueEvent {
    /// The queue dropped this packet, on arrival or, for disciplines that act at dequeue, when it reached the head.
    Dropped {
        /// When the drop happened.
        at: Instant,
        /// The dropped packet, handed back whole.
        packet: Packet,
        /// Limit overflow or AQM decision.
        reason: DropReason,
    },
    /// The packet with this id was marked CE; it stays in the queue.
    Marked {
        /// When the mark was applied.
        at: Instant,
        /// [`Packet::id`] of the marked packet.
        packet_id: u64,
    },
}

/// Counters every discipline keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets accepted into the queue; overflow drops at arrival are not counted.
    pub enqueued_packets: u64,
    /// Bytes (whole IP datagrams) accepted into the queue.
    pub enqueued_bytes: u64,
    /// Packets handed to the link; AQM drops at dequeue are not counted.
    pub dequeued_packets: u64,
    /// Bytes (whole IP datagrams) handed to the link.
    pub dequeued_bytes: u64,
    /// Packets dropped because the packet or byte limit was reached.
    pub dropped_overflow: u64,
    /// Packets dropped by the AQM's control law.
    pub dropped_aqm: u64,
    /// Packets marked CE (ECN) instead of dropped; a marked packet is still delivered.
    pub marked: u64,
    /// Packets and bytes queued now.
    pub backlog_packets: u64,
    /// Bytes queued now (whole IP datagrams).
    pub backlog_bytes: u64,
}

impl QueueStats {
    /// All drops: overflow plus AQM.
    pub fn drops(&self) -> u64 {
        self.dropped_overflow + self.dropped_aqm
    }
}

/// A queue discipline.
pub trait Queue: Send {
    /// Short lower-case name ("fifo", "codel", ...), as used in scenarios.
    fn name(&self) -> &'static str;

    /// Offers a packet arriving at `now`. The queue stores it, marks it, or
    /// drops it (or, in FQ disciplines, drops another packet instead).
    fn enqueue(&mut self, now: Instant, packet: Packet);

    /// Takes the next packet to transmit at `now`, if any. AQMs that act at
    /// dequeue (CoDel) may drop packets here before returning one.
    fn dequeue(&mut self, now: Instant) -> Option<Packet>;

    /// Counters, including the current backlog.
    fn stats(&self) -> QueueStats;

    /// The next drop or mark since the last call, oldest first.
    fn poll_event(&mut self) -> Option<QueueEvent>;

    /// The backlog in packets. The link asks on every packet, so
    /// disciplines answer from their counters rather than through
    /// [`Queue::stats`].
    fn len_packets(&self) -> usize {
        self.stats().backlog_packets as usize
    }

    /// The backlog in bytes (whole IP datagrams), answered the same way.
    fn len_bytes(&self) -> usize {
        self.stats().backlog_bytes as usize
    }

    /// True when no packet is queued.
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

/// Packet and byte limits shared by every discipline; `None` is unlimited.
/// Configs spell these as two plain fields, `limit_packets = 200` and
/// `limit_bytes = "150kB"` (not a nested table), and convert with
/// [`Limits::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most packets the queue may hold; `None` for no packet limit.
    pub packets: Option<usize>,
    /// Most bytes (whole IP datagrams) the queue may hold; `None` for no byte limit.
    pub bytes: Option<usize>,
}

impl Limits {
    /// Takes the two config fields; a byte limit too large for `usize` becomes `usize::MAX`.
    pub fn new(packets: Option<usize>, bytes: Option<u64>) -> Limits {
        Limits {
            packets,
            bytes: bytes.map(|b| usize::try_from(b).unwrap_or(usize::MAX)),
        }
    }

    /// A packet limit of `n` and no byte limit.
    pub const fn packets(n: usize) -> Limits {
        Limits {
            packets: Some(n),
            bytes: None,
        }
    }

    /// Would a queue holding `packets` and `bytes` overflow by adding `len`?
    pub fn would_overflow(&self, packets: usize, bytes: usize, len: usize) -> bool {
        self.packets.is_some_and(|l| packets + 1 > l) || self.bytes.is_some_and(|l| bytes + len > l)
    }
}
