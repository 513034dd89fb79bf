//! The receiving side: the payloads of recently received packets (source
//! symbols), the repair symbols of blocks still missing packets, and the
//! packets rebuilt from them, handed to the connection to be processed and
//! acknowledged as if they had arrived.

use super::codec;
use crate::frame::RepairFrame;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

/// Packet numbers behind the largest received whose payloads are kept
/// (about 360 KB at most): a block's repair follows its last packet, so
/// eight blocks of the largest size leave room for reordering.
const KEEP_PACKETS: u64 = 256;
/// Bounds on a block a peer may describe (the code's), so a REPAIR frame
/// cannot make the receiver keep or decode more than a window of packets.
const MAX_SOURCE: u64 = codec::MAX_SOURCES as u64;
const MAX_REPAIR: u64 = codec::MAX_REPAIRS as u64;
/// Blocks waiting for more repair at most; past that the oldest goes, so a
/// peer's symbols for blocks that never complete cannot pile up.
const MAX_PENDING_BLOCKS: usize = 64;
/// ACK-carrying packets a new REPAIRED report rides in, against its loss.
const REPORT_REPEATS: u8 = 3;

#[derive(Debug)]
struct PendingBlock {
    source_count: u64,
    repair_count: u64,
    shard_len: usize,
    repairs: Vec<(usize, Bytes)>,
}

/// What the receiver reports in REPAIRED frames: running totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RebuiltTotals {
    pub(crate) packets: u64,
    pub(crate) bursts: u64,
    pub(crate) largest_pn: u64,
}

/// The receiver's FEC state: see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct FecReceiver {
    kept: BTreeMap<u64, Bytes>,
    blocks: BTreeMap<u64, PendingBlock>,
    rebuilt: VecDeque<(u64, Bytes)>,
    totals: RebuiltTotals,
    report_pending: u8,
    /// Blocks whose repair did not decode (a peer's error, or symbols of
    /// different blocks under one number).
    pub(crate) decode_failures: u64,
}

impl FecReceiver {
    /// Packet `pn` authenticated with this payload.
    pub(crate) fn on_packet(&mut self, pn: u64, payload: Bytes) {
        self.kept.insert(pn, payload);
        let newest = self.kept.last_key_value().map_or(pn, |(&n, _)| n);
        let cutoff = newest.saturating_sub(KEEP_PACKETS);
        while self
            .kept
            .first_key_value()
            .is_some_and(|(&n, _)| n < cutoff)
        {
            self.kept.pop_first();
        }
        while self
            .blocks
            .first_key_value()
            .is_some_and(|(&n, _)| n < cutoff)
        {
            self.blocks.pop_first();
        }
        if let Some((&first, b)) = self.blocks.range(..=pn).next_back()
            && pn < first + b.source_count
        {
            self.try_decode(first);
        }
    }

    /// A REPAIR frame; an error names the rule the peer broke.
    pub(crate) fn on_repair(&mut self, r: &RepairFrame<'_>) -> Result<(), &'static str> {
        if r.source_count == 0 || r.source_count > MAX_SOURCE {
            return Err("REPAIR block of 0 or over 192 packets");
        }
        if r.repair_count == 0 || r.repair_count > MAX_REPAIR || r.index >= r.repair_count {
            return Err("REPAIR index outside its repair count");
        }
        if r.shard.is_empty() || !r.shard.len().is_multiple_of(2) {
            return Err("REPAIR symbol of odd length");
        }
        let newest = self.kept.last_key_value().map_or(0, |(&n, _)| n);
        // Too old to rebuild, or for packets far beyond any received.
        if r.first_pn + r.source_count + KEEP_PACKETS < newest || r.first_pn > newest + KEEP_PACKETS
        {
            return Ok(());
        }
        if !self.blocks.contains_key(&r.first_pn) && self.blocks.len() >= MAX_PENDING_BLOCKS {
            self.blocks.pop_first();
        }
        let b = self.blocks.entry(r.first_pn).or_insert(PendingBlock {
            source_count: r.source_count,
            repair_count: r.repair_count,
            shard_len: r.shard.len(),
            repairs: Vec::new(),
        });
        if (b.source_count, b.repair_count, b.shard_len)
            != (r.source_count, r.repair_count, r.shard.len())
        {
            return Err("REPAIR frames of one block disagree");
        }
        let index = r.index as usize;
        if !b.repairs.iter().any(|(i, _)| *i == index) {
            b.repairs.push((index, Bytes::copy_from_slice(r.shard)));
        }
        self.try_decode(r.first_pn);
        Ok(())
    }

    /// Rebuilds block `first`'s missing packets once it has enough repair.
    fn try_decode(&mut self, first: u64) {
        let Some(b) = self.blocks.get(&first) else {
            return;
        };
        let end = first + b.source_count;
        let missing: Vec<u64> = (first..end)
            .filter(|pn| !self.kept.contains_key(pn))
            .collect();
        if missing.is_empty() {
            self.blocks.remove(&first);
            return;
        }
        if b.repairs.len() < missing.len() {
            return;
        }
        let present: Vec<(usize, &Bytes)> = self
            .kept
            .range(first..end)
            .map(|(&pn, p)| ((pn - first) as usize, p))
            .collect();
        let result = codec::decode(
            b.source_count as usize,
            b.repair_count as usize,
            b.shard_len,
            &present,
            &b.repairs,
        );
        self.blocks.remove(&first);
        let Ok(rebuilt) = result else {
            self.decode_failures += 1;
            return;
        };
        let mut previous = None;
        for (index, payload) in rebuilt {
            let pn = first + index as u64;
            if previous != pn.checked_sub(1) {
                self.totals.bursts += 1;
            }
            previous = Some(pn);
            self.totals.packets += 1;
            self.totals.largest_pn = self.totals.largest_pn.max(pn);
            let payload = Bytes::from(payload);
            self.kept.insert(pn, payload.clone());
            self.rebuilt.push_back((pn, payload));
        }
        self.report_pending = REPORT_REPEATS;
    }

    /// The next rebuilt packet to process: its number and payload.
    pub(crate) fn pop_rebuilt(&mut self) -> Option<(u64, Bytes)> {
        self.rebuilt.pop_front()
    }

    /// The totals to report in the packet being built, if a report is due.
    pub(crate) fn poll_report(&mut self) -> Option<RebuiltTotals> {
        if self.report_pending == 0 {
            return None;
        }
        self.report_pending -= 1;
        Some(self.totals)
    }

    /// Packets rebuilt so far.
    pub(crate) fn rebuilt_packets(&self) -> u64 {
        self.totals.packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(pn: u64) -> Bytes {
        Bytes::from(vec![pn as u8; 50 + pn as usize])
    }

    #[test]
    fn lost_packets_come_back_from_repair_in_any_order() {
        let payloads: Vec<Bytes> = (10..16).map(payload).collect();
        let (_, shards) = codec::encode(&payloads, 2).unwrap();
        let mut rx = FecReceiver::default();
        // 11 and 14 are lost; one repair comes before the last source, one
        // after, and a duplicate changes nothing.
        for pn in [10, 12, 13] {
            rx.on_packet(pn, payload(pn));
        }
        let frame = |i: usize| RepairFrame {
            first_pn: 10,
            source_count: 6,
            repair_count: 2,
            index: i as u64,
            shard: &shards[i],
        };
        rx.on_repair(&frame(1)).unwrap();
        rx.on_repair(&frame(1)).unwrap();
        assert_eq!(rx.pop_rebuilt(), None);
        rx.on_packet(15, payload(15));
        rx.on_repair(&frame(0)).unwrap();
        assert_eq!(rx.pop_rebuilt(), Some((11, payload(11))));
        assert_eq!(rx.pop_rebuilt(), Some((14, payload(14))));
        assert_eq!(rx.pop_rebuilt(), None);
        assert_eq!(
            rx.poll_report(),
            Some(RebuiltTotals {
                packets: 2,
                bursts: 2,
                largest_pn: 14
            })
        );
    }

    #[test]
    fn symbols_for_far_or_too_many_blocks_do_not_pile_up() {
        let mut rx = FecReceiver::default();
        rx.on_packet(1000, payload(1000));
        let frame = |first_pn| RepairFrame {
            first_pn,
            source_count: 4,
            repair_count: 2,
            index: 0,
            shard: &[0, 0],
        };
        rx.on_repair(&frame(1001 + KEEP_PACKETS)).unwrap();
        rx.on_repair(&frame(1000 - KEEP_PACKETS - 5)).unwrap();
        assert!(rx.blocks.is_empty());
        // 65 blocks within reach: the oldest goes.
        for i in 0..100 {
            rx.on_repair(&frame(1000 + i * 4)).unwrap();
        }
        assert_eq!(rx.blocks.len(), MAX_PENDING_BLOCKS);
    }

    #[test]
    fn a_block_the_peer_describes_out_of_bounds_is_refused() {
        let mut rx = FecReceiver::default();
        let bad = RepairFrame {
            first_pn: 0,
            source_count: 4,
            repair_count: 2,
            index: 2,
            shard: &[0, 0],
        };
        assert!(rx.on_repair(&bad).is_err());
        let odd = RepairFrame {
            index: 0,
            shard: &[0],
            ..bad
        };
        assert!(rx.on_repair(&odd).is_err());
        let too_many = RepairFrame {
            source_count: MAX_SOURCE + 1,
            index: 0,
            ..bad
        };
        assert!(rx.on_repair(&too_many).is_err());
        assert!(rx.on_repair(&RepairFrame { index: 0, ..bad }).is_ok());
    }
}
