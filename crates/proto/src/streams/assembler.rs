//! Reassembly of one stream's bytes from out-of-order, overlapping and
//! duplicated pieces.
//!
//! The bytes live in one [`ByteQueue`] that starts at the read offset; a
//! [`RangeSet`] says which of them have arrived. The caller bounds every
//! piece by the advertised flow-control limit, so the buffer never spans more
//! than the receive window, whatever the peer sends.

use super::byte_queue::ByteQueue;
use super::range_set::RangeSet;

#[derive(Debug, Default)]
pub(crate) struct Assembler {
    /// Stream offset of `buf[0]`; everything below was handed to the reader.
    read_offset: u64,
    /// Bytes from `read_offset` up to the highest offset received, with
    /// holes zero-filled until their data arrives.
    buf: ByteQueue,
    /// Offsets at or above `read_offset` that have arrived.
    received: RangeSet,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `data` found at stream `offset`. Bytes already read are
    /// ignored; bytes that arrive twice are simply written again.
    pub fn insert(&mut self, offset: u64, data: &[u8]) {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.read_offset {
            return;
        }
        let start = offset.max(self.read_offset);
        let Ok(skip) = usize::try_from(start - offset) else {
            return;
        };
        let Ok(rel) = usize::try_from(start - self.read_offset) else {
            return;
        };
        let Some(data) = data.get(skip..) else { return };
        if rel == self.buf.len() {
            // In order: append, without zero-filling first.
            self.buf.extend_from_slice(data);
            self.received.insert(start..end);
            return;
        }
        let need = rel.saturating_add(data.len());
        self.buf.resize_zeroed(need);
        self.buf.write_at(rel, data);
        self.received.insert(start..end);
    }

    /// Bytes that can be read now, without a hole before them.
    pub fn readable_len(&self) -> u64 {
        match self.received.first() {
            Some(r) if r.start == self.read_offset => r.end - r.start,
            _ => 0,
        }
    }

    /// Copies contiguous bytes into `out`; returns how many.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = usize::try_from(self.readable_len()).map_or(out.len(), |r| r.min(out.len()));
        self.buf.copy_to_slice(0, &mut out[..n]);
        self.consume(n as u64);
        n
    }

    /// Drops the contiguous bytes without copying them; returns how many.
    pub fn discard_readable(&mut self) -> u64 {
        let n = self.readable_len();
        self.consume(n);
        n
    }

    fn consume(&mut self, n: u64) {
        let new_offset = self.read_offset + n;
        self.received.remove(self.read_offset..new_offset);
        // Chunks the reader is done with are freed as it goes, so a burst
        // does not pin its memory.
        self.buf.drain_front(n as usize);
        self.read_offset = new_offset;
    }

    /// Frees everything held (after a reset).
    pub fn clear(&mut self) {
        self.buf = ByteQueue::new();
        self.received = RangeSet::new();
    }

    pub fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// Bytes of memory the buffer spans, holes included.
    pub fn buffered_span(&self) -> u64 {
        self.buf.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(a: &mut Assembler) -> Vec<u8> {
        let mut out = vec![0; 4096];
        let n = a.read(&mut out);
        out.truncate(n);
        out
    }

    #[test]
    fn out_of_order_pieces_wait_for_the_hole() {
        let mut a = Assembler::new();
        a.insert(5, b"fghij");
        assert_eq!(a.readable_len(), 0);
        assert!(read_all(&mut a).is_empty());
        a.insert(0, b"abcde");
        assert_eq!(read_all(&mut a), b"abcdefghij");
        assert_eq!(a.read_offset(), 10);
        assert_eq!(a.buffered_span(), 0);
    }

    #[test]
    fn overlaps_and_duplicates_count_once() {
        let mut a = Assembler::new();
        a.insert(2, b"cdef");
        a.insert(0, b"abcd");
        a.insert(4, b"efgh");
        a.insert(2, b"cdef");
        assert_eq!(a.readable_len(), 8);
        assert_eq!(read_all(&mut a), b"abcdefgh");
        // Already-read data is ignored, partly-read data is trimmed.
        a.insert(0, b"abcdefgh");
        assert_eq!(a.readable_len(), 0);
        a.insert(6, b"ghij");
        assert_eq!(read_all(&mut a), b"ij");
    }

    #[test]
    fn short_reads_keep_the_rest() {
        let mut a = Assembler::new();
        a.insert(0, b"hello world");
        let mut out = [0u8; 5];
        assert_eq!(a.read(&mut out), 5);
        assert_eq!(&out, b"hello");
        assert_eq!(a.readable_len(), 6);
        assert_eq!(a.discard_readable(), 6);
        assert_eq!(a.read_offset(), 11);
    }

    #[test]
    fn buffer_spans_only_up_to_the_highest_offset() {
        let mut a = Assembler::new();
        a.insert(999, b"x");
        assert_eq!(a.buffered_span(), 1000);
        a.clear();
        assert_eq!(a.buffered_span(), 0);
        assert_eq!(a.readable_len(), 0);
    }

    proptest! {
        /// Any chunking, order and duplication reassembles the original.
        #[test]
        fn random_chunks_reassemble(
            data in proptest::collection::vec(any::<u8>(), 1..3000),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            dups in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
            seed in any::<u64>(),
            read_len in 1usize..700,
        ) {
            let mut bounds: Vec<usize> = cuts.iter().map(|i| i.index(data.len())).collect();
            bounds.push(0);
            bounds.push(data.len());
            bounds.sort_unstable();
            bounds.dedup();
            let mut pieces: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
            // Overlapping duplicates: a piece widened into its neighbours.
            for d in &dups {
                let (s, e) = pieces[d.index(pieces.len())];
                pieces.push((s.saturating_sub(7), (e + 7).min(data.len())));
            }
            // Deterministic shuffle from the seed.
            let mut x = seed | 1;
            for i in (1..pieces.len()).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                pieces.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut a = Assembler::new();
            let mut out = Vec::new();
            let mut buf = vec![0u8; read_len];
            for (s, e) in pieces {
                a.insert(s as u64, &data[s..e]);
                prop_assert!(a.buffered_span() <= data.len() as u64);
                let n = a.read(&mut buf);
                out.extend_from_slice(&buf[..n]);
            }
            loop {
                let n = a.read(&mut buf);
                if n == 0 { break; }
                out.extend_from_slice(&buf[..n]);
            }
            prop_assert_eq!(out, data);
        }
    }
}
