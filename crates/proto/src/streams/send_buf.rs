//! A stream's send buffer: the bytes from the first unacknowledged one to
//! the last one written, dropped from the front as they are acknowledged.
//!
//! Bytes written as a slice are copied into chunks of [`CHUNK_BYTES`] (a
//! growing chunk at the back, frozen once full); bytes handed over as
//! [`Bytes`] are kept as they are, so an application that already owns its
//! data in a `Bytes` pays no copy. Either way a segment leaves the buffer
//! whole, when its last byte is acknowledged, and nothing is ever moved.

use super::byte_queue::CHUNK_BYTES;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Default)]
pub(crate) struct SendBuf {
    /// Frozen segments in order, each with the position of its first byte
    /// (counted from the first byte ever written).
    segs: VecDeque<(u64, Bytes)>,
    /// The bytes after the segments, still growing.
    tail: Vec<u8>,
    /// The position of `tail`'s first byte: the end of the segments.
    tail_start: u64,
    /// The position of the first byte held; the ones before are dropped.
    front: u64,
    /// The index in `segs` of the segment the last copy started in: a
    /// packet's bytes mostly come from there or the next one, so most
    /// copies skip the search. Only a hint: checked before use.
    last_seg: AtomicUsize,
}

impl SendBuf {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub(super) fn len(&self) -> usize {
        (self.end() - self.front) as usize
    }

    fn end(&self) -> u64 {
        self.tail_start + self.tail.len() as u64
    }

    /// Appends a copy of `data`.
    pub(super) fn extend_from_slice(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.tail.len() >= CHUNK_BYTES {
                self.freeze_tail();
            }
            let take = (CHUNK_BYTES - self.tail.len()).min(data.len());
            let (len, cap) = (self.tail.len(), self.tail.capacity());
            if cap - len < take {
                // A stream that filled a chunk is likely to fill the next;
                // otherwise double, as a Vec would, but never past a chunk.
                let want = if self.segs.is_empty() {
                    (len + take).max(2 * cap).min(CHUNK_BYTES)
                } else {
                    CHUNK_BYTES
                };
                self.tail.reserve_exact(want - len);
            }
            self.tail.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
    }

    /// Appends `data` without copying it.
    pub(super) fn push_bytes(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        self.freeze_tail();
        let at = self.tail_start;
        self.tail_start += data.len() as u64;
        self.segs.push_back((at, data));
    }

    /// Moves the growing tail, if it holds anything, to the segments.
    fn freeze_tail(&mut self) {
        if self.tail.is_empty() {
            return;
        }
        let tail = std::mem::take(&mut self.tail);
        let at = self.tail_start;
        self.tail_start += tail.len() as u64;
        self.segs.push_back((at, Bytes::from(tail)));
    }

    /// Drops the first `n` bytes (all of them if fewer are held).
    pub(super) fn drain_front(&mut self, n: usize) {
        self.front = self.front.saturating_add(n as u64).min(self.end());
        while let Some((at, s)) = self.segs.front() {
            if at + s.len() as u64 > self.front {
                break;
            }
            self.segs.pop_front();
        }
        if self.front == self.end() && !self.tail.is_empty() {
            // Keep the tail's allocation for the next bytes.
            self.tail_start = self.front;
            self.tail.clear();
        }
    }

    /// The index of the segment holding the byte at position `at` (the
    /// first whose end is past it; `segs.len()` when it is in the tail).
    fn segment_of(&self, at: u64) -> usize {
        let hint = self.last_seg.load(Ordering::Relaxed);
        for i in [hint, hint.wrapping_add(1)] {
            if let Some((start, s)) = self.segs.get(i)
                && *start <= at
                && at < start + s.len() as u64
            {
                self.last_seg.store(i, Ordering::Relaxed);
                return i;
            }
        }
        let i = self
            .segs
            .partition_point(|(start, s)| start + s.len() as u64 <= at);
        self.last_seg.store(i, Ordering::Relaxed);
        i
    }

    /// Appends the bytes `[pos, pos + len)` (counted from the first byte
    /// held) to `out`; false (and nothing appended) unless all of them are
    /// held.
    pub(super) fn copy_to_vec(&self, pos: usize, len: usize, out: &mut Vec<u8>) -> bool {
        if pos.checked_add(len).is_none_or(|end| end > self.len()) {
            return false;
        }
        out.reserve(len);
        let mut at = self.front + pos as u64;
        let mut left = len;
        let first = self.segment_of(at);
        for (start, s) in self.segs.range(first..) {
            if left == 0 {
                return true;
            }
            let from = (at - start) as usize;
            let take = (s.len() - from).min(left);
            out.extend_from_slice(&s[from..from + take]);
            at += take as u64;
            left -= take;
        }
        if left > 0 {
            let from = (at - self.tail_start) as usize;
            out.extend_from_slice(&self.tail[from..from + left]);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents(q: &SendBuf) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(q.copy_to_vec(0, q.len(), &mut out));
        out
    }

    #[test]
    fn copies_and_owned_bytes_interleave_and_leave_whole() {
        let mut q = SendBuf::new();
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 100).map(|i| i as u8).collect();
        q.extend_from_slice(&data[..10]);
        q.push_bytes(Bytes::copy_from_slice(&data[10..CHUNK_BYTES + 20]));
        q.extend_from_slice(&data[CHUNK_BYTES + 20..]);
        assert_eq!(q.len(), data.len());
        assert_eq!(contents(&q), data);
        let mut piece = Vec::new();
        assert!(q.copy_to_vec(5, 10, &mut piece), "across a segment edge");
        assert_eq!(piece, &data[5..15]);
        q.drain_front(11);
        assert_eq!(q.segs.len(), 3, "the first segment is gone");
        assert_eq!(contents(&q), &data[11..]);
        q.drain_front(usize::MAX);
        assert_eq!((q.len(), q.segs.len()), (0, 0));
        assert!(q.tail.capacity() > 0, "the tail's room is kept");
        q.extend_from_slice(b"again");
        q.push_bytes(Bytes::from_static(b"!"));
        assert_eq!(contents(&q), b"again!");
    }

    #[test]
    fn out_of_range_copies_do_nothing() {
        let mut q = SendBuf::new();
        q.push_bytes(Bytes::from_static(b"abc"));
        q.extend_from_slice(b"def");
        let mut v = b"x".to_vec();
        assert!(!q.copy_to_vec(4, 3, &mut v));
        assert!(!q.copy_to_vec(usize::MAX, 2, &mut v));
        assert_eq!(v, b"x");
        assert!(q.copy_to_vec(2, 3, &mut v));
        assert_eq!(v, b"xcde");
    }

    #[test]
    fn copies_find_their_segment_in_order_backwards_and_after_drops() {
        // Many segments, owned and copied, every byte telling its position:
        // copies that follow one another (packets), go back (resends) or
        // come after front drops all read the bytes they name.
        let mut q = SendBuf::new();
        let mut model: Vec<u8> = Vec::new();
        for i in 0..60usize {
            let n = 100 + (i * 997) % (CHUNK_BYTES + 500);
            let data: Vec<u8> = (model.len()..model.len() + n)
                .map(|b| (b % 251) as u8)
                .collect();
            if i % 3 == 0 {
                q.extend_from_slice(&data);
            } else {
                q.push_bytes(Bytes::from(data.clone()));
            }
            model.extend(&data);
        }
        let mut front = 0;
        for _ in 0..4 {
            let held = model.len() - front;
            let starts: Vec<usize> = (0..held)
                .step_by(1200)
                .chain((0..held).step_by(3700).rev())
                .collect();
            for pos in starts {
                let len = 1200.min(held - pos);
                let mut piece = Vec::new();
                assert!(q.copy_to_vec(pos, len, &mut piece));
                assert_eq!(piece, &model[front + pos..front + pos + len], "at {pos}");
            }
            let drop = held / 3 + 7;
            q.drain_front(drop);
            front += drop;
        }
    }

    proptest! {
        /// Behaves like a `VecDeque<u8>` under copied and owned appends
        /// and front drops of any size.
        #[test]
        fn matches_a_vecdeque(
            ops in proptest::collection::vec((0u8..3, 0usize..3 * CHUNK_BYTES, any::<u8>()), 1..40)
        ) {
            let mut q = SendBuf::new();
            let mut model: VecDeque<u8> = Default::default();
            for (op, n, byte) in ops {
                match op {
                    0 => {
                        let data = vec![byte; n];
                        q.extend_from_slice(&data);
                        model.extend(&data);
                    }
                    1 => {
                        let data = vec![byte; n / 3];
                        q.push_bytes(Bytes::from(data.clone()));
                        model.extend(&data);
                    }
                    _ => {
                        q.drain_front(n);
                        model.drain(..n.min(model.len()));
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                let pos = n.min(model.len());
                let len = (model.len() - pos).min(n / 2 + 1).min(model.len() - pos);
                let mut piece = Vec::new();
                prop_assert!(q.copy_to_vec(pos, len, &mut piece));
                prop_assert!(piece.iter().eq(model.range(pos..pos + len)));
            }
        }
    }
}
