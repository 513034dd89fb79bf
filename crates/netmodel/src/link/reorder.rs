//! Explicit reordering: now and then a packet is held back so that later
//! packets overtake it. Teclo saw small packets overtake large ones "by 30
//! segments or over 50 ms" on one vendor's mobile equipment, so the depth
//! is set either in packets or in time.

use crate::packet::Packet;
use brisk_time::Instant;
use std::time::Duration;

/// `reorder = { probability = "1%", depth_packets = 30 }` or
/// `reorder = { probability = "1%", depth = "50ms" }`: each packet, with
/// `probability`, is held back by `depth`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reorder {
    /// Chance that a packet is held back, 0 to 1 (`"1%"` in a scenario).
    pub probability: f64,
    /// How far a held-back packet falls behind.
    pub depth: ReorderDepth,
}

/// How far a reordered packet falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderDepth {
    /// It arrives right after the n-th packet that left the transmitter
    /// after it (n >= 1). If the transmitter runs dry first, it is released
    /// then, behind the last packet sent: reordering happens within a
    /// backlog, and an idle link never holds a packet hostage.
    Packets(u32),
    /// It arrives this much later than it would have; every packet that
    /// would arrive in between overtakes it.
    Time(Duration),
}

/// A packet held back for packet-depth reordering.
#[derive(Debug)]
struct Held {
    packet: Packet,
    /// When it would have arrived without reordering.
    natural: Instant,
    /// Packets still to overtake it.
    remaining: u32,
}

/// Packets held back until enough others overtake them.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    held: Vec<Held>,
}

impl Holds {
    pub(crate) fn hold(&mut self, packet: Packet, natural: Instant, depth_packets: u32) {
        self.held.push(Held {
            packet,
            natural,
            remaining: depth_packets.max(1),
        });
    }

    /// Another packet passed, arriving at `arrival`: returns the held packets
    /// it was the last to overtake, with their arrival times (never before
    /// `arrival`, so they land right behind it).
    pub(crate) fn on_pass(&mut self, arrival: Instant) -> Vec<(Instant, Packet)> {
        let mut released = Vec::new();
        let mut i = 0;
        while i < self.held.len() {
            self.held[i].remaining -= 1;
            if self.held[i].remaining == 0 {
                let h = self.held.remove(i);
                released.push((h.natural.max(arrival), h.packet));
            } else {
                i += 1;
            }
        }
        released
    }

    /// Releases every held packet, none before `not_before`.
    pub(crate) fn flush(&mut self, not_before: Instant) -> Vec<(Instant, Packet)> {
        self.held
            .drain(..)
            .map(|h| (h.natural.max(not_before), h.packet))
            .collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}
