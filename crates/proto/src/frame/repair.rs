//! The forward error correction frames (docs/PROTOCOL.md §6.6), sent only
//! between peers that both announced the `fec` transport parameter.
//!
//! ```text
//! REPAIR   type (0x20) | first packet number | source count | repair count
//!          | repair index | symbol length | symbol bytes
//! REPAIRED type (0x21) | packets rebuilt | bursts rebuilt | largest rebuilt
//! ```
//!
//! A REPAIR frame holds repair symbol `repair index` (of `repair count`)
//! over the block of `source count` consecutive packets from `first packet
//! number`; it travels alone in its packet, so the symbol may take the
//! whole payload. REPAIRED carries running totals, so a lost copy costs
//! nothing: the next one says all of it.

use super::{FrameError, ty};
use crate::varint::{self, Reader};

/// One repair symbol of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairFrame<'a> {
    /// The block's first source packet.
    pub first_pn: u64,
    /// Source packets in the block (consecutive packet numbers).
    pub source_count: u64,
    /// Repair symbols the block has in all.
    pub repair_count: u64,
    /// Which of them this is, from 0.
    pub index: u64,
    /// The symbol: as long as the block's longest payload plus 2, even.
    pub shard: &'a [u8],
}

impl<'a> RepairFrame<'a> {
    /// Reads the fields after the type.
    pub(super) fn parse(r: &mut Reader<'a>) -> Result<Self, FrameError> {
        let first_pn = r.varint()?;
        let source_count = r.varint()?;
        let repair_count = r.varint()?;
        let index = r.varint()?;
        let len = r.varint_len()?;
        Ok(RepairFrame {
            first_pn,
            source_count,
            repair_count,
            index,
            shard: r.bytes(len)?,
        })
    }

    /// Appends the frame.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(ty::REPAIR);
        for v in [
            self.first_pn,
            self.source_count,
            self.repair_count,
            self.index,
            self.shard.len() as u64,
        ] {
            varint::write(out, v);
        }
        out.extend_from_slice(self.shard);
    }

    /// Bytes [`RepairFrame::emit`] appends.
    pub fn encoded_len(&self) -> usize {
        let v = |x: u64| varint::size(x).unwrap_or(8);
        1 + v(self.first_pn)
            + v(self.source_count)
            + v(self.repair_count)
            + v(self.index)
            + v(self.shard.len() as u64)
            + self.shard.len()
    }
}

/// What the receiver rebuilt so far, as running totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairedFrame {
    /// Packets rebuilt from repair since the connection began.
    pub packets: u64,
    /// Runs of consecutive packet numbers among them.
    pub bursts: u64,
    /// The highest packet number rebuilt.
    pub largest_pn: u64,
}

impl RepairedFrame {
    /// Reads the fields after the type.
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Self, FrameError> {
        let f = RepairedFrame {
            packets: r.varint()?,
            bursts: r.varint()?,
            largest_pn: r.varint()?,
        };
        if f.bursts > f.packets {
            return Err(FrameError::Invalid(
                "REPAIRED with more bursts than packets",
            ));
        }
        Ok(f)
    }

    /// Appends the frame.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(ty::REPAIRED);
        varint::write(out, self.packets);
        varint::write(out, self.bursts);
        varint::write(out, self.largest_pn);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Frame, FrameIter};
    use super::*;

    /// REPAIR: first 0x1234 (2-byte varint), 10 sources, 3 repairs, index
    /// 2, a 4-byte symbol.
    const REPAIR: [u8; 12] = [
        0x20, 0x52, 0x34, 0x0a, 0x03, 0x02, 0x04, 0xde, 0xad, 0xbe, 0xef, 0x00,
    ];

    #[test]
    fn repair_parses_emits_and_rejects_a_short_symbol() {
        let f: Vec<_> = FrameIter::new(&REPAIR[..11]).collect();
        let want = RepairFrame {
            first_pn: 0x1234,
            source_count: 10,
            repair_count: 3,
            index: 2,
            shard: &[0xde, 0xad, 0xbe, 0xef],
        };
        assert_eq!(f, vec![Ok(Frame::Repair(want))]);
        let mut out = Vec::new();
        want.emit(&mut out);
        assert_eq!(out, REPAIR[..11]);
        assert_eq!(want.encoded_len(), 11);
        let short: Vec<_> = FrameIter::new(&REPAIR[..9]).collect();
        assert!(short[0].is_err());
    }

    #[test]
    fn repaired_round_trips_and_checks_its_counts() {
        let f = RepairedFrame {
            packets: 7,
            bursts: 5,
            largest_pn: 300,
        };
        let mut out = Vec::new();
        f.emit(&mut out);
        assert_eq!(out, [0x21, 0x07, 0x05, 0x41, 0x2c]);
        let back: Vec<_> = FrameIter::new(&out).collect();
        assert_eq!(back, vec![Ok(Frame::Repaired(f))]);
        let bad: Vec<_> = FrameIter::new(&[0x21, 0x01, 0x02, 0x00]).collect();
        assert!(bad[0].is_err());
        assert!(!Frame::Repaired(f).is_ack_eliciting());
    }
}
