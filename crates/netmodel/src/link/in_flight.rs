//! Packets propagating on a link, taken out in (arrival, sequence) order.
//!
//! Almost every packet arrives no earlier than the one scheduled before it
//! (a fixed delay keeps order), so those go on a plain FIFO; only packets
//! that jitter or reordering moves ahead of a later-scheduled one go to an
//! ordered map. Taking the smaller head of the two gives exactly the order
//! one ordered map would.
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
    /// Keys strictly increasing from front to back.
    in_order: VecDeque<((Instant, u64), Packet)>,
    /// Packets that would have broken `in_order`'s order.
    overtaking: BTreeMap<(Instant, u64), Packet>,
    next_seq: u64,
}

impl InFlight {
    /// Schedules `packet` to arrive at `arrival`, after every packet already
    /// scheduled for the same time.
    pub(crate) fn insert(&mut self, arrival: Instant, packet: Packet) {
        let key = (arrival, self.next_seq);
        self.next_seq += 1;
        if self.in_order.back().is_none_or(|(k, _)| *k < key) {
            if self.in_order.is_empty() {
                prefetch(&packet.data);
            }
            self.in_order.push_back((key, packet));
        } else {
            self.overtaking.insert(key, packet);
        }
    }

    /// The earliest arrival time, if any.
    pub(crate) fn first_arrival(&self) -> Option<Instant> {
        // The map is empty unless jitter or reordering moved a packet.
        if self.overtaking.is_empty() {
            return self.in_order.front().map(|((t, _), _)| *t);
        }
        let a = self.in_order.front().map(|(k, _)| *k);
        let b = self.overtaking.first_key_value().map(|(k, _)| *k);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b).0),
            (a, b) => a.or(b).map(|k| k.0),
        }
    }

    /// Removes the earliest packet (ties in scheduling order).
    pub(crate) fn pop_first(&mut self) -> Option<(Instant, Packet)> {
        let from_map = !self.overtaking.is_empty()
            && match (self.in_order.front(), self.overtaking.first_key_value()) {
                (Some((a, _)), Some((b, _))) => b < a,
                (None, Some(_)) => true,
                _ => false,
            };
        if from_map {
            self.overtaking.pop_first().map(|((t, _), p)| (t, p))
        } else {
            let first = self.in_order.pop_front().map(|((t, _), p)| (t, p));
            if let Some((_, next)) = self.in_order.front() {
                prefetch(&next.data);
            }
            first
        }
    }
}

/// Asks the CPU to start loading the cache line at the start of `bytes`
/// without waiting for it; no effect on results.
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
