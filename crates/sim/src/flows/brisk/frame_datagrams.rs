//! A video frame carried in unreliable datagrams: how the sender cuts it
//! and how the receiver puts it back together.
//!
//! Each datagram holds a 16-byte header, then a piece of the frame's
//! bytes (the frame's own 20-byte header and its pattern, as on a
//! stream):
//!
//! ```text
//! frame seq (u64) | offset in the frame (u32) | frame length (u32) | bytes
//! ```
//!
//! A frame counts only once every byte of it arrived: a decoder cannot
//! show part of one. The receiver keeps at most [`PARTIAL_FRAMES`]
//! incomplete frames, forgetting the oldest, since a piece lost in the
//! network never comes back (datagrams are not retransmitted).

use super::workload::{UNIT_HEADER_LEN, UnitHeader, count_corrupt};
use brisk_time::Instant;
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::BTreeMap;
use std::time::Duration;

/// Bytes of the header in front of each piece.
pub(crate) const PIECE_HEADER_LEN: usize = 16;

/// Incomplete frames the receiver keeps at most.
pub(crate) const PARTIAL_FRAMES: usize = 64;

/// Cuts `frame` (sequence number `seq`) into datagrams of at most
/// `max_datagram` bytes each.
pub(crate) fn pieces(seq: u64, frame: &[u8], max_datagram: usize) -> Vec<Bytes> {
    let room = max_datagram.saturating_sub(PIECE_HEADER_LEN).max(1);
    let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
    frame
        .chunks(room)
        .enumerate()
        .map(|(i, chunk)| {
            let mut d = BytesMut::with_capacity(PIECE_HEADER_LEN + chunk.len());
            d.put_u64(seq);
            d.put_u32(u32::try_from(i * room).unwrap_or(u32::MAX));
            d.put_u32(len);
            d.put_slice(chunk);
            d.freeze()
        })
        .collect()
}

/// One incomplete frame.
#[derive(Debug, Default)]
struct Partial {
    len: u64,
    got: u64,
    header: Option<UnitHeader>,
}

/// The receiver's frames being put back together, and what it checked.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    partial: BTreeMap<u64, Partial>,
    /// Frames whose pieces stopped coming before they were whole.
    pub(crate) incomplete: u64,
    /// Frame bytes checked against the pattern, and those that differed.
    pub(crate) checked: u64,
    pub(crate) corrupt: u64,
    /// Datagrams too short for their header or pointing outside their
    /// frame.
    pub(crate) malformed: u64,
}

impl Reassembly {
    /// Takes one datagram; returns the frame's latency from capture once
    /// its last piece is in.
    pub(crate) fn on_datagram(&mut self, now: Instant, key: u64, d: &[u8]) -> Option<Duration> {
        let (Some(seq), Some(offset), Some(len)) = (
            d.get(..8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes),
            d.get(8..12)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes),
            d.get(12..16)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes),
        ) else {
            self.malformed += 1;
            return None;
        };
        let (offset, len) = (u64::from(offset), u64::from(len));
        let data = d.get(PIECE_HEADER_LEN..).unwrap_or_default();
        if offset + data.len() as u64 > len {
            self.malformed += 1;
            return None;
        }
        if !self.partial.contains_key(&seq) && self.partial.len() >= PARTIAL_FRAMES {
            self.partial.pop_first();
            self.incomplete += 1;
        }
        let p = self.partial.entry(seq).or_default();
        p.len = len;
        p.got += data.len() as u64;
        // The frame's own header sits in its first piece (pieces are far
        // longer than the header); the pattern follows it.
        let pattern_from = UNIT_HEADER_LEN as u64;
        if offset == 0 {
            p.header = UnitHeader::parse(data);
        }
        let skip = pattern_from.saturating_sub(offset).min(data.len() as u64) as usize;
        let body = &data[skip..];
        self.corrupt += count_corrupt(key ^ seq, offset + skip as u64, body);
        self.checked += body.len() as u64;
        if p.got < p.len {
            return None;
        }
        let done = self.partial.remove(&seq)?;
        done.header.map(|h| now - h.written_at)
    }
}

#[cfg(test)]
mod tests {
    use super::super::workload::unit_bytes;
    use super::*;

    #[test]
    fn a_frame_cut_into_pieces_comes_back_whole_in_any_order() {
        let written_at = Instant::from_millis(5);
        let header = UnitHeader {
            len_bytes: 3_000,
            seq: 9,
            written_at,
        };
        let frame = unit_bytes(77 ^ 9, header);
        let mut p = pieces(9, &frame, 1_200);
        assert_eq!(p.len(), 3);
        assert!(p.iter().all(|d| d.len() <= 1_200));
        p.swap(0, 2);
        let mut r = Reassembly::default();
        let now = Instant::from_millis(30);
        assert_eq!(r.on_datagram(now, 77, &p[0]), None);
        assert_eq!(r.on_datagram(now, 77, &p[1]), None);
        assert_eq!(
            r.on_datagram(now, 77, &p[2]),
            Some(Duration::from_millis(25))
        );
        assert_eq!((r.checked, r.corrupt), (3_000 - 20, 0));
        assert_eq!(r.on_datagram(now, 77, &[1, 2, 3]), None);
        assert_eq!(r.malformed, 1);
    }

    #[test]
    fn the_oldest_incomplete_frame_is_forgotten() {
        let mut r = Reassembly::default();
        let now = Instant::from_millis(1);
        for seq in 0..=PARTIAL_FRAMES as u64 {
            let header = UnitHeader {
                len_bytes: 2_000,
                seq,
                written_at: now,
            };
            let frame = unit_bytes(seq, header);
            // Only the first of two pieces arrives.
            r.on_datagram(now, 0, &pieces(seq, &frame, 1_200)[0]);
        }
        assert_eq!(r.incomplete, 1);
        assert_eq!(r.partial.len(), PARTIAL_FRAMES);
    }
}
