//! Packets propagating on a link, taken out in (arrival, sequence) order.
//!
//! Almost every packet arrives no earlier than the one scheduled before it
//! (a fixed delay keeps order), so those go on a plain FIFO; only packets
//! that jitter or reordering moves ahead of a later-scheduled one go to an
//! ordered map. Taking the smaller head of the two gives exactly the order
//! one ordered map would.
//!
//! A link whose packets never overtake one another leaves a packet that
//! arrived at the front of the FIFO until the far end takes it
//! ([`InFlight::mark_arrived`]): moving it to an output queue first was a
//! push, a pop and a copy of every packet.
//!
//! The packet at the head of the in-order FIFO has its header prefetched:
//! in a deep queue the datagram's bytes go cold, and whoever takes the
//! packet at the far end reads its header first thing.

#![allow(unsafe_code)]

use crate::packet::Packet;
use brisk_time::Instant;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Arrivals never decreasing from front to back. A packet here needs
    /// no sequence number: one in the map due at the same time was always
    /// scheduled after it (a packet goes to the map only while a later
    /// arrival is here, and that one cannot leave before the map's packet
    /// does), so on a tie this FIFO goes first.
    in_order: VecDeque<(Instant, Packet)>,
    /// Packets that would have broken `in_order`'s order, by (arrival,
    /// sequence).
    overtaking: BTreeMap<(Instant, u64), Packet>,
    next_seq: u64,
    /// Packets at the front of `in_order` that have arrived and wait to be
    /// taken; zero unless [`InFlight::mark_arrived`] is used.
    arrived: usize,
}

impl InFlight {
    /// Schedules `packet` to arrive at `arrival`, after every packet already
    /// scheduled for the same time.
    pub(crate) fn insert(&mut self, arrival: Instant, packet: Packet) {
        if self.in_order.back().is_none_or(|(t, _)| *t <= arrival) {
            if self.in_order.is_empty() {
                prefetch(&packet.data);
            }
            self.in_order.push_back((arrival, packet));
        } else {
            self.overtaking.insert((arrival, self.next_seq), packet);
            self.next_seq += 1;
        }
    }

    /// The earliest arrival time of a packet that has not arrived, if any.
    pub(crate) fn first_arrival(&self) -> Option<Instant> {
        let a = self.in_order.get(self.arrived).map(|(t, _)| *t);
        // The map is empty unless jitter or reordering moved a packet.
        if self.overtaking.is_empty() {
            return a;
        }
        let b = self.overtaking.first_key_value().map(|((t, _), _)| *t);
        brisk_time::earliest(a, b)
    }

    /// Counts the earliest packet that has not arrived as arrived, leaving
    /// it for [`InFlight::take_arrived`]; returns the next arrival time
    /// after it. Only for packets that never overtake (none of them went to
    /// the map), and never mixed with [`InFlight::pop_first`].
    #[inline]
    pub(crate) fn mark_arrived(&mut self) -> Option<Instant> {
        debug_assert!(self.overtaking.is_empty() && self.arrived < self.in_order.len());
        self.arrived += 1;
        self.first_arrival()
    }

    /// Whether a packet counted by [`InFlight::mark_arrived`] waits.
    #[inline]
    pub(crate) fn has_arrived(&self) -> bool {
        self.arrived > 0
    }

    /// Takes the oldest packet counted by [`InFlight::mark_arrived`].
    #[inline]
    pub(crate) fn take_arrived(&mut self) -> Option<(Instant, Packet)> {
        if self.arrived == 0 {
            return None;
        }
        self.arrived -= 1;
        // Before the pop: kept across it, the packet taken was copied once
        // more.
        if let Some((_, next)) = self.in_order.get(1) {
            prefetch(&next.data);
        }
        self.in_order.pop_front()
    }

    /// Removes the earliest packet (ties in scheduling order).
    pub(crate) fn pop_first(&mut self) -> Option<(Instant, Packet)> {
        let from_map = !self.overtaking.is_empty()
            && match (self.in_order.front(), self.overtaking.first_key_value()) {
                (Some((a, _)), Some(((b, _), _))) => b < a,
                (None, Some(_)) => true,
                _ => false,
            };
        if from_map {
            self.overtaking.pop_first().map(|((t, _), p)| (t, p))
        } else {
            let first = self.in_order.pop_front();
            if let Some((_, next)) = self.in_order.front() {
                prefetch(&next.data);
            }
            first
        }
    }
}

/// Asks the CPU to start loading the cache line at the start of `bytes`
/// without waiting for it; no effect on results. Inlined: the engine takes
/// arrived packets, and a call there made it keep the packet on the stack.
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint that never faults and writes
        // nothing, and the pointer comes from a live slice. SSE is part of
        // the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use brisk_wire::Ecn;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pops_in_the_order_of_one_ordered_map(
            ops in proptest::collection::vec((0u64..50, any::<bool>()), 0..200),
        ) {
            // Reference: the single BTreeMap the link used to keep.
            let mut reference = BTreeMap::new();
            let mut f = InFlight::default();
            let mut seq = 0;
            for (i, (t, pop)) in ops.into_iter().enumerate() {
                if pop {
                    let want = reference.pop_first().map(|((t, _), id)| (t, id));
                    let got = f.pop_first().map(|(t, p)| (t, p.id));
                    prop_assert_eq!(got, want);
                } else {
                    let at = Instant::from_micros(t);
                    reference.insert((at, seq), i as u64);
                    seq += 1;
                    f.insert(at, udp(i as u64, 0, 100, Ecn::NotEct));
                }
                prop_assert_eq!(
                    f.first_arrival(),
                    reference.first_key_value().map(|((t, _), _)| *t)
                );
            }
        }
    }
}
