//! Reassembly of one stream's bytes from out-of-order, overlapping and
//! duplicated pieces.
//!
//! In-order data that fills most of its packet is kept without copying, as
//! [`Bytes`] slices of the decrypted datagram it arrived in (quinn-proto
//! does the same), and can be handed to the reader as such
//! ([`Assembler::read_chunk`]). Everything else, out-of-order pieces, small
//! pieces and whatever arrives while they wait, is copied into one
//! [`ByteQueue`] that starts where the slices end; a [`RangeSet`] says which
//! of its bytes have arrived. Once the reader has drained the queue, data in
//! order is kept as slices again. The caller bounds every piece by the
//! advertised flow-control limit, so the buffer never spans more than the
//! receive window, whatever the peer sends; a slice is kept only when it is
//! at least half its datagram, so the memory slices pin stays under twice
//! the bytes they hold.

use super::byte_queue::ByteQueue;
use super::range_set::RangeSet;
use bytes::Bytes;
use std::collections::VecDeque;

/// A STREAM frame's bytes and, when it came in a datagram the connection
/// may keep, that datagram, so the bytes can be kept without a copy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece<'a> {
    pub data: &'a [u8],
    /// The decrypted datagram `data` lies in.
    pub datagram: Option<&'a Bytes>,
}

impl<'a> Piece<'a> {
    /// Bytes that must be copied to be kept.
    pub(crate) fn borrowed(data: &'a [u8]) -> Self {
        Piece {
            data,
            datagram: None,
        }
    }

    /// `data[skip..]` as a slice of the datagram, if it is one and worth
    /// keeping: at least half the datagram.
    fn shared_tail(&self, skip: usize) -> Option<Bytes> {
        let datagram = self.datagram?;
        let len = self.data.len().checked_sub(skip)?;
        if len == 0 || len.saturating_mul(2) < datagram.len() {
            return None;
        }
        let start = (self.data.as_ptr() as usize)
            .checked_sub(datagram.as_ptr() as usize)?
            .checked_add(skip)?;
        let end = start.checked_add(len).filter(|&e| e <= datagram.len())?;
        Some(datagram.slice(start..end))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Assembler {
    /// Stream offset of the first byte held; everything below was handed to
    /// the reader.
    read_offset: u64,
    /// In-order slices of received datagrams, from `read_offset` on.
    shared: VecDeque<Bytes>,
    /// Bytes in `shared`.
    shared_len: usize,
    /// Copied bytes from `read_offset + shared_len` up to the highest
    /// offset received, with holes zero-filled until their data arrives.
    buf: ByteQueue,
    /// Offsets of `buf` that have arrived.
    received: RangeSet,
}

impl Assembler {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Stream offset of `buf[0]`.
    fn buf_offset(&self) -> u64 {
        self.read_offset + self.shared_len as u64
    }

    /// Stores `piece` found at stream `offset`. Bytes already held are
    /// ignored; bytes that arrive twice in the queue are written again.
    #[inline]
    pub(super) fn insert(&mut self, offset: u64, piece: Piece<'_>) {
        let data = piece.data;
        let end = offset.saturating_add(data.len() as u64);
        let buf_offset = self.buf_offset();
        if end <= buf_offset {
            return;
        }
        let start = offset.max(buf_offset);
        let Ok(skip) = usize::try_from(start - offset) else {
            return;
        };
        let Ok(rel) = usize::try_from(start - buf_offset) else {
            return;
        };
        if rel == 0
            && self.buf.len() == 0
            && let Some(slice) = piece.shared_tail(skip)
        {
            self.shared_len += slice.len();
            self.shared.push_back(slice);
            return;
        }
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

    /// Readable bytes of the queue, those without a hole before them.
    fn buf_readable_len(&self) -> u64 {
        match self.received.first() {
            Some(r) if r.start == self.buf_offset() => r.end - r.start,
            _ => 0,
        }
    }

    /// Bytes that can be read now, without a hole before them.
    pub(super) fn readable_len(&self) -> u64 {
        self.shared_len as u64 + self.buf_readable_len()
    }

    /// Copies contiguous bytes into `out`; returns how many.
    pub(super) fn read(&mut self, out: &mut [u8]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(front) = self.shared.front_mut() else {
                break;
            };
            let take = front.len().min(out.len() - n);
            out[n..n + take].copy_from_slice(&front[..take]);
            n += take;
            self.take_shared(take);
        }
        let rest = &mut out[n..];
        let m = usize::try_from(self.buf_readable_len()).map_or(rest.len(), |r| r.min(rest.len()));
        self.buf.copy_to_slice(0, &mut rest[..m]);
        self.consume_buf(m);
        n + m
    }

    /// Up to `max_len` contiguous bytes, without copying them if they were
    /// kept as a slice; empty if nothing is readable.
    pub(super) fn read_chunk(&mut self, max_len: usize) -> Bytes {
        if let Some(front) = self.shared.front_mut() {
            let chunk = if front.len() <= max_len {
                self.shared.pop_front().unwrap_or_default()
            } else {
                front.split_to(max_len)
            };
            self.shared_len -= chunk.len();
            self.read_offset += chunk.len() as u64;
            return chunk;
        }
        let n = usize::try_from(self.buf_readable_len()).map_or(max_len, |r| r.min(max_len));
        if n == 0 {
            return Bytes::new();
        }
        let mut out = Vec::new();
        self.buf.copy_to_vec(0, n, &mut out);
        self.consume_buf(n);
        Bytes::from(out)
    }

    /// Hands every contiguous byte to `f`, in pieces of at most `max_len`,
    /// as [`Assembler::read_chunk`] would call after call; returns how
    /// many. The slices go in one pass, and the queue is only looked at
    /// when it holds bytes: no last call to learn that nothing is left.
    #[inline]
    pub(super) fn read_each(&mut self, max_len: usize, f: &mut impl FnMut(Bytes)) -> usize {
        if max_len == 0 {
            return 0;
        }
        let shared = self.shared_len;
        while let Some(front) = self.shared.front_mut() {
            let chunk = if front.len() <= max_len {
                self.shared.pop_front().unwrap_or_default()
            } else {
                front.split_to(max_len)
            };
            f(chunk);
        }
        self.shared_len = 0;
        self.read_offset += shared as u64;
        let mut n = shared;
        while self.buf.len() > 0 {
            let chunk = self.read_chunk(max_len);
            if chunk.is_empty() {
                break;
            }
            n += chunk.len();
            f(chunk);
        }
        n
    }

    /// Drops the contiguous bytes without copying them; returns how many.
    pub(super) fn discard_readable(&mut self) -> u64 {
        let shared = self.shared_len;
        self.shared.clear();
        self.shared_len = 0;
        self.read_offset += shared as u64;
        let n = usize::try_from(self.buf_readable_len()).unwrap_or(usize::MAX);
        self.consume_buf(n);
        shared as u64 + n as u64
    }

    /// Drops `n` bytes from the front slice (which holds at least `n`).
    fn take_shared(&mut self, n: usize) {
        if let Some(front) = self.shared.front_mut() {
            if n >= front.len() {
                self.shared.pop_front();
            } else {
                bytes::Buf::advance(front, n);
            }
        }
        self.shared_len -= n;
        self.read_offset += n as u64;
    }

    /// Drops the first `n` bytes of the queue (no slices are left).
    fn consume_buf(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let new_offset = self.read_offset + n as u64;
        self.received.remove(self.read_offset..new_offset);
        // Chunks the reader is done with are freed as it goes, so a burst
        // does not pin its memory.
        self.buf.drain_front(n);
        self.read_offset = new_offset;
    }

    /// Frees everything held (after a reset).
    pub(super) fn clear(&mut self) {
        self.shared = VecDeque::new();
        self.shared_len = 0;
        self.buf = ByteQueue::new();
        self.received = RangeSet::new();
    }

    pub(super) fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// Bytes of memory the buffer spans, holes included.
    pub(super) fn buffered_span(&self) -> u64 {
        self.shared_len as u64 + self.buf.len() as u64
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
        a.insert(5, Piece::borrowed(b"fghij"));
        assert_eq!(a.readable_len(), 0);
        assert!(read_all(&mut a).is_empty());
        a.insert(0, Piece::borrowed(b"abcde"));
        assert_eq!(read_all(&mut a), b"abcdefghij");
        assert_eq!(a.read_offset(), 10);
        assert_eq!(a.buffered_span(), 0);
    }

    #[test]
    fn overlaps_and_duplicates_count_once() {
        let mut a = Assembler::new();
        a.insert(2, Piece::borrowed(b"cdef"));
        a.insert(0, Piece::borrowed(b"abcd"));
        a.insert(4, Piece::borrowed(b"efgh"));
        a.insert(2, Piece::borrowed(b"cdef"));
        assert_eq!(a.readable_len(), 8);
        assert_eq!(read_all(&mut a), b"abcdefgh");
        // Already-read data is ignored, partly-read data is trimmed.
        a.insert(0, Piece::borrowed(b"abcdefgh"));
        assert_eq!(a.readable_len(), 0);
        a.insert(6, Piece::borrowed(b"ghij"));
        assert_eq!(read_all(&mut a), b"ij");
    }

    #[test]
    fn short_reads_keep_the_rest() {
        let mut a = Assembler::new();
        a.insert(0, Piece::borrowed(b"hello world"));
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
        a.insert(999, Piece::borrowed(b"x"));
        assert_eq!(a.buffered_span(), 1000);
        a.clear();
        assert_eq!(a.buffered_span(), 0);
        assert_eq!(a.readable_len(), 0);
    }

    /// `payload` behind `header_len` bytes of header, as a decrypted
    /// datagram.
    fn datagram(header_len: usize, payload: &[u8]) -> Bytes {
        let mut d = vec![0xee; header_len];
        d.extend_from_slice(payload);
        Bytes::from(d)
    }

    fn shared(d: &Bytes, header_len: usize) -> Piece<'_> {
        Piece {
            data: &d[header_len..],
            datagram: Some(d),
        }
    }

    #[test]
    fn in_order_full_pieces_are_handed_over_without_a_copy() {
        let mut a = Assembler::new();
        let d1 = datagram(20, &[1; 100]);
        let d2 = datagram(20, &[2; 100]);
        a.insert(0, shared(&d1, 20));
        a.insert(100, shared(&d2, 20));
        assert_eq!(a.readable_len(), 200);
        let c = a.read_chunk(30);
        assert_eq!((c.as_ptr(), c.len()), (d1[20..].as_ptr(), 30));
        let c = a.read_chunk(usize::MAX);
        assert_eq!((c.as_ptr(), c.len()), (d1[50..].as_ptr(), 70));
        // A copying read takes from the slices too.
        let mut out = [0u8; 10];
        assert_eq!(a.read(&mut out), 10);
        assert_eq!(out, [2; 10]);
        let c = a.read_chunk(usize::MAX);
        assert_eq!((c.as_ptr(), c.len()), (d2[30..].as_ptr(), 90));
        assert!(a.read_chunk(usize::MAX).is_empty());
        assert_eq!((a.read_offset(), a.buffered_span()), (200, 0));
    }

    #[test]
    fn small_and_out_of_order_pieces_are_copied_until_the_queue_drains() {
        let mut a = Assembler::new();
        // Less than half its datagram: copied, so it cannot pin it.
        let small = datagram(100, &[1; 50]);
        a.insert(0, shared(&small, 100));
        let c = a.read_chunk(usize::MAX);
        assert_eq!(&c[..], &[1; 50]);
        assert!(!small.as_ptr_range().contains(&c.as_ptr()));
        // Out of order: copied; the in-order piece that fills the hole is
        // copied behind it.
        let late = datagram(10, &[3; 100]);
        let early = datagram(10, &[2; 100]);
        a.insert(150, shared(&late, 10));
        a.insert(50, shared(&early, 10));
        assert_eq!(a.readable_len(), 200);
        let c = a.read_chunk(usize::MAX);
        assert_eq!(c.len(), 200);
        assert!(!early.as_ptr_range().contains(&c.as_ptr()));
        // The queue is drained: in order data is kept as slices again,
        // trimmed to what is new.
        let next = datagram(10, &[4; 100]);
        a.insert(240, shared(&next, 10));
        let c = a.read_chunk(usize::MAX);
        assert_eq!((c.as_ptr(), c.len()), (next[20..].as_ptr(), 90));
        // A retransmission with a few new bytes is copied, not pinned.
        let mostly_old = datagram(10, &[5; 100]);
        a.insert(250, shared(&mostly_old, 10));
        let c = a.read_chunk(usize::MAX);
        assert_eq!(c.len(), 10);
        assert!(!mostly_old.as_ptr_range().contains(&c.as_ptr()));
    }

    #[test]
    fn discard_and_clear_drop_slices_and_queue() {
        let mut a = Assembler::new();
        let d = datagram(0, &[7; 64]);
        a.insert(0, shared(&d, 0));
        a.insert(64, Piece::borrowed(b"tail"));
        a.insert(100, Piece::borrowed(b"far"));
        assert_eq!(a.discard_readable(), 68);
        assert_eq!((a.read_offset(), a.buffered_span()), (68, 35));
        a.clear();
        assert_eq!((a.readable_len(), a.buffered_span()), (0, 0));
    }

    /// `0..len` cut at `cuts` into consecutive, non-empty `(start, end)` pieces.
    fn pieces_of(len: usize, cuts: &[prop::sample::Index]) -> Vec<(usize, usize)> {
        let mut bounds: Vec<usize> = cuts.iter().map(|i| i.index(len)).collect();
        bounds.push(0);
        bounds.push(len);
        bounds.sort_unstable();
        bounds.dedup();
        bounds.windows(2).map(|w| (w[0], w[1])).collect()
    }

    proptest! {
        /// Pieces kept as slices or copied, read by copy or as chunks,
        /// reassemble the original.
        #[test]
        fn shared_and_copied_pieces_reassemble(
            data in proptest::collection::vec(any::<u8>(), 1..3000),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            headers in proptest::collection::vec(0usize..400, 1..10),
            seed in any::<u64>(),
            read_len in 1usize..700,
        ) {
            let mut pieces = pieces_of(data.len(), &cuts);
            let mut x = seed | 1;
            let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            // Mostly in order, with some neighbours swapped.
            for i in 1..pieces.len() {
                if next() % 4 == 0 {
                    pieces.swap(i - 1, i);
                }
            }
            let mut a = Assembler::new();
            let mut out = Vec::new();
            let mut buf = vec![0u8; read_len];
            // By copy, as one chunk, or all there is as chunks.
            let mut drain = |a: &mut Assembler, out: &mut Vec<u8>, how: u64| -> Result<(), TestCaseError> {
                match how {
                    0 => out.extend_from_slice(&a.read_chunk(read_len)),
                    1 => {
                        let n = a.read(&mut buf);
                        out.extend_from_slice(&buf[..n]);
                    }
                    _ => {
                        let mut pieces = Vec::new();
                        let n = a.read_each(read_len, &mut |c| pieces.push(c));
                        prop_assert_eq!(n, pieces.iter().map(Bytes::len).sum::<usize>());
                        prop_assert!(pieces.iter().all(|c| (1..=read_len).contains(&c.len())));
                        prop_assert_eq!(a.readable_len(), 0);
                        pieces.iter().for_each(|c| out.extend_from_slice(c));
                    }
                }
                Ok(())
            };
            for (k, (s, e)) in pieces.into_iter().enumerate() {
                let header_len = headers[k % headers.len()];
                let d = datagram(header_len, &data[s..e]);
                a.insert(s as u64, shared(&d, header_len));
                prop_assert!(a.buffered_span() <= data.len() as u64);
                drain(&mut a, &mut out, next() % 3)?;
            }
            while a.readable_len() > 0 {
                drain(&mut a, &mut out, next() % 3)?;
            }
            prop_assert_eq!(out, data);
        }

        /// Any chunking, order and duplication reassembles the original.
        #[test]
        fn random_chunks_reassemble(
            data in proptest::collection::vec(any::<u8>(), 1..3000),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            dups in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
            seed in any::<u64>(),
            read_len in 1usize..700,
        ) {
            let mut pieces = pieces_of(data.len(), &cuts);
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
                a.insert(s as u64, Piece::borrowed(&data[s..e]));
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
