//! A byte queue in fixed-size chunks: the storage of a stream's send buffer
//! and of its reassembly buffer.
//!
//! Bytes are appended at the back and dropped from the front. Dropping
//! frees whole chunks without moving the bytes behind them, and growing
//! adds a chunk without copying the ones before it, so a buffer of
//! megabytes never pays a reallocation copy (a `VecDeque<u8>` doubling up
//! to a 4 MiB send buffer copies about 4 MiB per connection, and more each
//! time a drained buffer is freed and grows again). Only the first chunk
//! grows gradually, so a stream that buffers a few bytes holds a few bytes.
//!
//! Every chunk but the last is exactly [`CHUNK_BYTES`] long, which makes a
//! position's chunk a division: position `p` lives at `head + p` counted
//! from the start of the first chunk.

use std::collections::VecDeque;

/// Bytes per chunk: a STREAM frame's bytes span at most two chunks, and
/// chunks stay below the allocator's mmap threshold (128 KiB in glibc), so
/// a freed chunk is reused warm rather than unmapped and faulted in again.
pub(crate) const CHUNK_BYTES: usize = 32 * 1024;

#[derive(Debug, Default)]
pub(crate) struct ByteQueue {
    chunks: VecDeque<Vec<u8>>,
    /// Bytes of the first chunk already dropped.
    head: usize,
    /// Bytes held, from `head` on.
    len: usize,
}

impl ByteQueue {
    pub(super) fn new() -> Self {
        Self::default()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends `data`.
    pub(super) fn extend_from_slice(&mut self, data: &[u8]) {
        self.append(data.len(), |chunk, at, n| {
            chunk.extend_from_slice(&data[at..at + n]);
        });
    }

    /// Grows the queue to `new_len` bytes with zeros (never shrinks).
    pub(super) fn resize_zeroed(&mut self, new_len: usize) {
        let n = new_len.saturating_sub(self.len);
        self.append(n, |chunk, _, n| chunk.resize(chunk.len() + n, 0));
    }

    /// Appends `n` bytes, chunk by chunk: `fill(chunk, done, take)` must
    /// add `take` bytes to `chunk`, the ones after the first `done`.
    fn append(&mut self, n: usize, mut fill: impl FnMut(&mut Vec<u8>, usize, usize)) {
        let mut done = 0;
        while done < n {
            if self.chunks.back().is_none_or(|c| c.len() >= CHUNK_BYTES) {
                // A stream that fills a chunk is likely to fill the next.
                let cap = if self.chunks.is_empty() {
                    0
                } else {
                    CHUNK_BYTES
                };
                self.chunks.push_back(Vec::with_capacity(cap));
            }
            let Some(chunk) = self.chunks.back_mut() else {
                return;
            };
            let take = (CHUNK_BYTES - chunk.len()).min(n - done);
            if chunk.capacity() - chunk.len() < take {
                // Double, as a Vec would, but never past one chunk.
                let want = (chunk.len() + take)
                    .max(2 * chunk.capacity())
                    .min(CHUNK_BYTES);
                chunk.reserve_exact(want - chunk.len());
            }
            fill(chunk, done, take);
            done += take;
        }
        self.len += n;
    }

    /// Drops the first `n` bytes (all of them if fewer are held).
    pub(super) fn drain_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        if self.len == 0 {
            // Keep one allocation for the next bytes.
            while self.chunks.len() > 1 {
                self.chunks.pop_front();
            }
            if let Some(c) = self.chunks.front_mut() {
                c.clear();
            }
            self.head = 0;
            return;
        }
        self.head += n;
        while self.head >= CHUNK_BYTES {
            self.chunks.pop_front();
            self.head -= CHUNK_BYTES;
        }
    }

    /// The bytes `[pos, pos + len)` as up to a few slices, in order; empty
    /// unless all of them are held.
    fn segments(&self, pos: usize, len: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let held = pos.checked_add(len).is_some_and(|end| end <= self.len);
        let mut at = self.head + pos;
        let mut left = if held { len } else { 0 };
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let from = self.chunks.get(at / CHUNK_BYTES)?.get(at % CHUNK_BYTES..)?;
            let take = from.len().min(left);
            if take == 0 {
                return None;
            }
            at += take;
            left -= take;
            Some(&from[..take])
        })
    }

    /// Appends the bytes `[pos, pos + len)` to `out`; false (and nothing
    /// appended) unless all of them are held.
    pub(super) fn copy_to_vec(&self, pos: usize, len: usize, out: &mut Vec<u8>) -> bool {
        if pos.checked_add(len).is_none_or(|end| end > self.len) {
            return false;
        }
        out.reserve(len);
        for s in self.segments(pos, len) {
            out.extend_from_slice(s);
        }
        true
    }

    /// Fills `out` with the bytes from `pos` on; false (and `out` left
    /// alone) unless all of them are held.
    pub(super) fn copy_to_slice(&self, pos: usize, out: &mut [u8]) -> bool {
        if pos.checked_add(out.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        let mut at = 0;
        for s in self.segments(pos, out.len()) {
            out[at..at + s.len()].copy_from_slice(s);
            at += s.len();
        }
        true
    }

    /// Overwrites the bytes from `pos` on with `data`; false (and nothing
    /// written) unless all of them are held.
    pub(super) fn write_at(&mut self, pos: usize, data: &[u8]) -> bool {
        if pos.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        let mut at = self.head + pos;
        let mut data = data;
        while !data.is_empty() {
            let Some(to) = self
                .chunks
                .get_mut(at / CHUNK_BYTES)
                .and_then(|c| c.get_mut(at % CHUNK_BYTES..))
            else {
                return false;
            };
            let take = to.len().min(data.len());
            if take == 0 {
                return false;
            }
            to[..take].copy_from_slice(&data[..take]);
            at += take;
            data = &data[take..];
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents(q: &ByteQueue) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(q.copy_to_vec(0, q.len(), &mut out));
        out
    }

    #[test]
    fn spans_chunks_and_drops_whole_chunks_from_the_front() {
        let mut q = ByteQueue::new();
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 100).map(|i| i as u8).collect();
        q.extend_from_slice(&data[..10]);
        q.extend_from_slice(&data[10..]);
        assert_eq!(q.len(), data.len());
        assert_eq!(q.chunks.len(), 4);
        assert!(
            q.chunks
                .iter()
                .rev()
                .skip(1)
                .all(|c| c.len() == CHUNK_BYTES)
        );
        let mut piece = Vec::new();
        let at = CHUNK_BYTES - 5;
        assert!(q.copy_to_vec(at, 10, &mut piece), "across a chunk edge");
        assert_eq!(piece, &data[at..at + 10]);
        q.drain_front(CHUNK_BYTES + 7);
        assert_eq!(q.chunks.len(), 3, "the first chunk is freed");
        assert_eq!(contents(&q), &data[CHUNK_BYTES + 7..]);
        q.drain_front(usize::MAX);
        assert_eq!((q.len(), q.chunks.len(), q.head), (0, 1, 0));
        q.extend_from_slice(b"again");
        assert_eq!(contents(&q), b"again");
    }

    #[test]
    fn out_of_range_copies_and_writes_do_nothing() {
        let mut q = ByteQueue::new();
        q.extend_from_slice(b"abcdef");
        let mut v = b"x".to_vec();
        assert!(!q.copy_to_vec(4, 3, &mut v));
        assert!(!q.copy_to_vec(usize::MAX, 2, &mut v));
        assert_eq!(v, b"x");
        let mut s = [0u8; 3];
        assert!(!q.copy_to_slice(5, &mut s));
        assert!(!q.write_at(5, b"zz"));
        assert!(q.write_at(4, b"EF") && q.copy_to_slice(3, &mut s));
        assert_eq!(&s, b"dEF");
    }

    #[test]
    fn a_small_queue_allocates_little() {
        let mut q = ByteQueue::new();
        q.extend_from_slice(&[1; 100]);
        assert!(q.chunks[0].capacity() < 1024);
        q.resize_zeroed(CHUNK_BYTES + 1);
        assert_eq!(q.chunks.len(), 2);
        let mut s = [9u8; 3];
        assert!(q.copy_to_slice(99, &mut s));
        assert_eq!(s, [1, 0, 0]);
    }

    proptest! {
        /// Behaves like a `VecDeque<u8>` under appends, zero-fills,
        /// overwrites and front drops of any size.
        #[test]
        fn matches_a_vecdeque(
            ops in proptest::collection::vec((0u8..4, 0usize..3 * CHUNK_BYTES, any::<u8>()), 1..40)
        ) {
            let mut q = ByteQueue::new();
            let mut model: std::collections::VecDeque<u8> = Default::default();
            for (op, n, byte) in ops {
                match op {
                    0 => {
                        let data = vec![byte; n];
                        q.extend_from_slice(&data);
                        model.extend(&data);
                    }
                    1 => {
                        let to = model.len() + n / 7;
                        q.resize_zeroed(to);
                        model.resize(to, 0);
                    }
                    2 => {
                        let pos = n.min(model.len());
                        let data = vec![byte; (n / 5).min(model.len() - pos)];
                        prop_assert!(q.write_at(pos, &data));
                        for (i, b) in data.iter().enumerate() {
                            model[pos + i] = *b;
                        }
                    }
                    _ => {
                        q.drain_front(n);
                        model.drain(..n.min(model.len()));
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                let pos = n.min(model.len());
                let mut piece = Vec::new();
                prop_assert!(q.copy_to_vec(pos, model.len() - pos, &mut piece));
                prop_assert!(piece.iter().eq(model.range(pos..)));
            }
        }
    }
}
