//! What the applications on a brisk flow share: the [`Workload`] trait the
//! glue drives, deterministic payload bytes, a stream hash, and a reader
//! that empties a stream.

use super::report::TransportReport;
use super::seq::Tracer;
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_time::Instant;
use std::time::Duration;

/// One application: its sending half runs on the sender host's connection
/// (the client), its receiving half on the receiver host's (the server).
///
/// The glue calls the `poll_*` methods after every input and whenever
/// [`Workload::poll_timeout`] is due, and only once that side's handshake is
/// done. A poll that is due must move the timer it was due for.
pub(crate) trait Workload {
    fn sender_event(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        event: StreamEvent,
        trace: &Tracer,
    );
    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent);
    /// Writes what is due on the sender; true if anything changed.
    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool;
    /// Writes what is due on the receiver (requests); true if anything changed.
    fn poll_receiver(&mut self, _now: Instant, _conn: &mut Connection) -> bool {
        false
    }
    /// The next moment the sender has something to do on its own.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Fills the byte counts of `app` and the workload's part of `report`.
    fn report(&self, app: &mut AppReport, report: &mut TransportReport);
}

/// Bytes of the header every message and frame starts with: total length
/// (u32), sequence number (u64), time written (u64 ns).
pub(crate) const UNIT_HEADER_LEN: usize = 20;

/// The header of a message or frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitHeader {
    pub len_bytes: u32,
    pub seq: u64,
    pub written_at: Instant,
}

impl UnitHeader {
    pub fn emit(&self, out: &mut [u8]) {
        if let Some(h) = out.get_mut(..UNIT_HEADER_LEN) {
            h[..4].copy_from_slice(&self.len_bytes.to_be_bytes());
            h[4..12].copy_from_slice(&self.seq.to_be_bytes());
            h[12..20].copy_from_slice(&self.written_at.as_nanos().to_be_bytes());
        }
    }

    pub fn parse(b: &[u8]) -> Option<UnitHeader> {
        Some(UnitHeader {
            len_bytes: u32::from_be_bytes(b.get(..4)?.try_into().ok()?),
            seq: u64::from_be_bytes(b.get(4..12)?.try_into().ok()?),
            written_at: Instant::from_nanos(u64::from_be_bytes(b.get(12..20)?.try_into().ok()?)),
        })
    }
}

/// A unit of `len` bytes: the header, then pattern bytes keyed by `key`.
pub(crate) fn unit_bytes(key: u64, header: UnitHeader) -> Vec<u8> {
    let len = header.len_bytes as usize;
    let mut v = vec![0u8; len.max(UNIT_HEADER_LEN)];
    header.emit(&mut v);
    fill_pattern(key, UNIT_HEADER_LEN as u64, &mut v[UNIT_HEADER_LEN..]);
    v.truncate(len.max(UNIT_HEADER_LEN));
    v
}

/// SplitMix64's increment: its state steps by this odd constant.
const SPLITMIX_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function: a full-period mix, so neighbouring
/// states give unrelated words.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The pattern's 8-byte word number `index` (stream bytes `8 * index..`):
/// output `index + 1` of the SplitMix64 stream seeded with `key`, reached
/// directly (its state is `key + n * gamma`), one mix per word. (Two mixes
/// per word, one of them over the index, cost an eighth of a bulk run.)
fn pattern_word(key: u64, index: u64) -> [u8; 8] {
    mix(pattern_state(key, index)).to_le_bytes()
}

/// The generator's state for word `index`; the next word's is one gamma on.
fn pattern_state(key: u64, index: u64) -> u64 {
    key.wrapping_add(index.wrapping_add(1).wrapping_mul(SPLITMIX_GAMMA))
}

/// How many bytes from stream offset `offset` reach the next word
/// boundary, at most `len`: the piece before whole words begin.
fn head_len(offset: u64, len: usize) -> usize {
    (((8 - offset % 8) % 8) as usize).min(len)
}

/// The content of a stream keyed by `key` at `offset..offset + out.len()`:
/// any byte can be recomputed from its offset, so a receiver checks what
/// it got without a copy of what was sent. Written a whole word at a time
/// between a partial first and last word.
pub(crate) fn fill_pattern(key: u64, offset: u64, out: &mut [u8]) {
    let head = head_len(offset, out.len());
    let (first, rest) = out.split_at_mut(head);
    let from = (offset % 8) as usize;
    first.copy_from_slice(&pattern_word(key, offset / 8)[from..from + head]);
    let mut state = pattern_state(key, (offset + head as u64) / 8);
    let mut words = rest.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&mix(state).to_le_bytes());
        state = state.wrapping_add(SPLITMIX_GAMMA);
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&mix(state).to_le_bytes()[..n]);
}

/// Bytes of `data` (at `offset` of a stream keyed by `key`) that differ
/// from the pattern, compared a whole word at a time without a copy.
pub(crate) fn count_corrupt(key: u64, offset: u64, data: &[u8]) -> u64 {
    let differing =
        |got: &[u8], want: &[u8]| got.iter().zip(want).filter(|(a, b)| a != b).count() as u64;
    let head = head_len(offset, data.len());
    let (first, rest) = data.split_at(head);
    let from = (offset % 8) as usize;
    let mut corrupt = differing(first, &pattern_word(key, offset / 8)[from..]);
    let mut state = pattern_state(key, (offset + head as u64) / 8);
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        let want = mix(state).to_le_bytes();
        let mut got = [0u8; 8];
        got.copy_from_slice(w);
        if got != want {
            corrupt += differing(&got, &want);
        }
        state = state.wrapping_add(SPLITMIX_GAMMA);
    }
    corrupt + differing(words.remainder(), &mix(state).to_le_bytes())
}

/// An order-sensitive 64-bit digest of a byte stream fed in pieces of any
/// size, to compare what one side wrote with what the other read at
/// volume: it takes 8-byte words in four independent lanes (each word
/// xored in, multiplied and rotated, so a change in any bit spreads), and
/// the digest mixes the lanes, the leftover bytes and the length. A byte
/// at a time (FNV-1a) costs several cycles per byte in one dependent
/// chain; this costs a fraction of one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct StreamHash {
    lanes: [u64; 4],
    /// The start of a 32-byte block still being filled.
    partial: [u8; 32],
    partial_len: usize,
    len_bytes: u64,
}

/// FNV's 64-bit prime, an odd multiplier with well-spread bits.
const LANE_PRIME: u64 = 0x0000_0100_0000_01b3;

impl StreamHash {
    pub fn update(&mut self, data: &[u8]) {
        self.len_bytes += data.len() as u64;
        let mut data = data;
        if self.partial_len > 0 {
            let n = (32 - self.partial_len).min(data.len());
            self.partial[self.partial_len..self.partial_len + n].copy_from_slice(&data[..n]);
            self.partial_len += n;
            data = &data[n..];
            if self.partial_len < 32 {
                return;
            }
            let block = self.partial;
            self.block(&block);
            self.partial_len = 0;
        }
        let mut blocks = data.chunks_exact(32);
        for b in &mut blocks {
            self.block(b);
        }
        let rest = blocks.remainder();
        self.partial[..rest.len()].copy_from_slice(rest);
        self.partial_len = rest.len();
    }

    /// Takes one 32-byte block, a word per lane.
    fn block(&mut self, block: &[u8]) {
        for (lane, w) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            *lane = ((*lane ^ u64::from_le_bytes(word)).wrapping_mul(LANE_PRIME)).rotate_left(29);
        }
    }

    /// The digest of everything fed so far.
    pub fn digest(&self) -> u64 {
        let mut h = mix(self.len_bytes);
        for lane in self.lanes {
            h = mix(h ^ lane);
        }
        for &b in &self.partial[..self.partial_len] {
            h = mix(h ^ u64::from(b));
        }
        h
    }
}

/// FNV-1a, 64 bits: a cheap order-sensitive digest of a byte stream, to
/// compare what one side wrote with what the other read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fnv64(pub u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    pub fn update(&mut self, data: &[u8]) {
        for &b in data {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// How a read pass over a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// More may come.
    Open,
    /// The FIN was read: the stream is complete.
    Finished,
    /// The peer reset it, or it is gone.
    Gone,
}

/// Bytes a read pass takes from the stream at a time.
pub(crate) const READ_CHUNK: usize = 16 * 1024;

/// Reads everything readable on `id`, handing each piece to `f`. The
/// pieces are the transport's own (slices of the datagrams the bytes came
/// in, no copy into a buffer of ours), so how the stream is cut into them
/// is the transport's choice: readers must not depend on it.
pub(crate) fn drain_stream(
    conn: &mut Connection,
    id: StreamId,
    mut f: impl FnMut(&[u8]),
) -> ReadEnd {
    loop {
        match conn.read_chunk(id, READ_CHUNK) {
            Ok(chunk) => {
                f(&chunk.data);
                if chunk.fin {
                    return ReadEnd::Finished;
                }
                if chunk.data.is_empty() {
                    return ReadEnd::Open;
                }
            }
            Err(_) => return ReadEnd::Gone,
        }
    }
}

/// Writes as much of `data[*done..]` as the stream takes; true if any byte
/// went in.
pub(crate) fn write_some(
    conn: &mut Connection,
    id: StreamId,
    data: &[u8],
    done: &mut usize,
) -> bool {
    let Some(rest) = data.get(*done..).filter(|r| !r.is_empty()) else {
        return false;
    };
    match conn.write(id, rest) {
        Ok(n) if n > 0 => {
            *done += n;
            true
        }
        _ => false,
    }
}

/// The next point of a `period` grid starting at `first` that is after
/// `now`.
pub(crate) fn next_tick(first: Instant, period: Duration, now: Instant) -> Instant {
    let period_ns = period.as_nanos().max(1) as u64;
    let elapsed = (now - first).as_nanos() as u64;
    first + Duration::from_nanos((elapsed / period_ns + 1).saturating_mul(period_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_the_splitmix64_stream_of_its_key() {
        // Published SplitMix64 outputs: seed 0, and the first two of seed
        // 1234567 (the reference generator by Vigna).
        let words = |key, n: u64| (0..n).map(move |i| u64::from_le_bytes(pattern_word(key, i)));
        assert_eq!(words(0, 1).collect::<Vec<_>>(), [0xe220_a839_7b1d_cdaf]);
        assert_eq!(
            words(1_234_567, 2).collect::<Vec<_>>(),
            [6_457_827_717_110_365_317, 3_203_168_211_198_807_973]
        );
    }

    #[test]
    fn pattern_is_a_function_of_offset() {
        let mut whole = vec![0u8; 100];
        fill_pattern(7, 3, &mut whole);
        let mut part = vec![0u8; 10];
        fill_pattern(7, 50, &mut part);
        assert_eq!(&whole[47..57], &part[..]);
        assert_eq!(count_corrupt(7, 50, &part), 0);
        part[4] ^= 1;
        assert_eq!(count_corrupt(7, 50, &part), 1);
        let mut other = vec![0u8; 10];
        fill_pattern(8, 50, &mut other);
        assert_ne!(other, part);
    }

    /// The pattern as first written, a byte at a time: the word-wise code
    /// must give the same bytes, so streams and captures do not change.
    fn pattern_bytewise(key: u64, offset: u64, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            let at = offset + i as u64;
            let state = key.wrapping_add((at / 8 + 1).wrapping_mul(SPLITMIX_GAMMA));
            *b = mix(state).to_le_bytes()[(at % 8) as usize];
        }
    }

    proptest::proptest! {
        #[test]
        fn word_wise_pattern_equals_the_byte_wise_one(
            key in proptest::prelude::any::<u64>(),
            offset in 0u64..1_000_000,
            len in 0usize..200,
            flips in proptest::collection::vec((0usize..200, 1u8..=255), 0..6),
        ) {
            let mut want = vec![0u8; len];
            pattern_bytewise(key, offset, &mut want);
            let mut got = vec![0xa5u8; len];
            fill_pattern(key, offset, &mut got);
            proptest::prop_assert_eq!(&got, &want);
            // Corrupt some bytes: exactly those are counted.
            for (at, x) in flips {
                if let Some(b) = got.get_mut(at) {
                    *b ^= x;
                }
            }
            let differing = got.iter().zip(&want).filter(|(a, b)| a != b).count() as u64;
            proptest::prop_assert_eq!(count_corrupt(key, offset, &got), differing);
        }

        #[test]
        fn stream_hash_ignores_how_the_stream_is_cut(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            cuts in proptest::collection::vec(0usize..300, 0..8),
        ) {
            let mut whole = StreamHash::default();
            whole.update(&data);
            let mut pieces = StreamHash::default();
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c <= data.len()).collect();
            cuts.sort_unstable();
            let mut from = 0;
            for c in cuts.into_iter().chain([data.len()]) {
                pieces.update(&data[from..c]);
                from = c;
            }
            proptest::prop_assert_eq!(whole.digest(), pieces.digest());
        }
    }

    #[test]
    fn stream_hash_sees_changed_moved_and_missing_bytes() {
        let mut data = vec![0u8; 4096];
        fill_pattern(3, 0, &mut data);
        let digest = |d: &[u8]| {
            let mut h = StreamHash::default();
            h.update(d);
            h.digest()
        };
        let base = digest(&data);
        // Every single-bit flip at a spread of positions and bits.
        for at in (0..data.len()).step_by(97) {
            for bit in 0..8 {
                let mut d = data.clone();
                d[at] ^= 1 << bit;
                assert_ne!(digest(&d), base, "byte {at} bit {bit}");
            }
        }
        // The same top bit flipped in two words of one lane.
        let mut d = data.clone();
        d[7] ^= 0x80;
        d[39] ^= 0x80;
        assert_ne!(digest(&d), base);
        // Two words swapped, a byte missing, a byte added.
        let mut d = data.clone();
        let (first, second) = d.split_at_mut(8);
        first.swap_with_slice(&mut second[..8]);
        assert_ne!(digest(&d), base);
        assert_ne!(digest(&data[1..]), base);
        let mut d = data.clone();
        d.push(0);
        assert_ne!(digest(&d), base);
    }

    #[test]
    fn headers_round_trip_and_units_have_their_length() {
        let h = UnitHeader {
            len_bytes: 64,
            seq: 9,
            written_at: Instant::from_millis(1234),
        };
        let u = unit_bytes(1, h);
        assert_eq!(u.len(), 64);
        assert_eq!(UnitHeader::parse(&u), Some(h));
        assert_eq!(
            count_corrupt(1, UNIT_HEADER_LEN as u64, &u[UNIT_HEADER_LEN..]),
            0
        );
        assert_eq!(UnitHeader::parse(&u[..19]), None);
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        // FNV-1a 64 of "" and "a" (the published test vectors).
        assert_eq!(Fnv64::default().0, 0xcbf2_9ce4_8422_2325);
        let mut h = Fnv64::default();
        h.update(b"a");
        assert_eq!(h.0, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn ticks_stay_on_their_grid() {
        let t0 = Instant::from_millis(100);
        let p = Duration::from_millis(10);
        assert_eq!(next_tick(t0, p, t0), Instant::from_millis(110));
        assert_eq!(
            next_tick(t0, p, Instant::from_millis(134)),
            Instant::from_millis(140)
        );
        assert_eq!(
            next_tick(t0, p, Instant::from_millis(140)),
            Instant::from_millis(150)
        );
    }
}
