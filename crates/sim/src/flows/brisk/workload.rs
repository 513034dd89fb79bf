//! What the applications on a brisk flow share: the [`Workload`] trait the
//! glue drives, deterministic payload bytes, a stream digest, and a reader
//! that empties a stream.

use super::report::TransportReport;
use super::seq::Tracer;
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
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
    /// Datagrams wait on the receiver: read them all.
    fn receiver_datagrams(&mut self, _now: Instant, _conn: &mut Connection) {}
    /// Writes what is due on the sender; true if anything changed.
    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool;
    /// Writes what is due on the receiver (requests); true if anything changed.
    fn poll_receiver(&mut self, _now: Instant, _conn: &mut Connection) -> bool {
        false
    }
    /// False when `poll_sender` would certainly do nothing now, so the
    /// glue does not take the connection out (which has the endpoint look
    /// at it again).
    fn sender_may_write(&self, _now: Instant) -> bool {
        true
    }
    /// Whether `poll_receiver` ever does anything (asked once, when the
    /// flow is built); the glue never calls it otherwise. Every workload
    /// states it (no default), so one that writes from the receiver
    /// cannot be left unpolled by omission.
    fn receiver_writes(&self) -> bool;
    /// The receiver's connection was just opened toward the sender (it is
    /// the client: early data) and its first flight has not left: early
    /// data goes in now.
    fn first_flight(&mut self, _now: Instant, _conn: &mut Connection) {}
    /// Everything the workload meant to move has arrived (a feed's page).
    fn finished(&self) -> bool {
        false
    }
    /// The next moment the sender has something to do on its own.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Whether `receiver_event` can move [`Workload::poll_timeout`]: the
    /// glue keeps the timer's last answer across those that cannot (one
    /// per datagram the receiver reads).
    fn receiver_event_moves_timer(&self) -> bool {
        true
    }
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
    match conn.read_chunks(id, READ_CHUNK, |data| f(&data)) {
        Ok(r) if r.fin => ReadEnd::Finished,
        Ok(_) => ReadEnd::Open,
        Err(_) => ReadEnd::Gone,
    }
}

/// The application's one sending stream: opened on first use and placed
/// in the sequence trace with the `len_bytes` it will carry (`u64::MAX` if
/// unknown); none while the peer allows no new stream.
pub(crate) fn sending_stream(
    slot: &mut Option<StreamId>,
    conn: &mut Connection,
    trace: &Tracer,
    len_bytes: u64,
) -> Option<StreamId> {
    if slot.is_none() {
        let id = conn.open_stream(false, Priority::default()).ok()?;
        trace.place(id.0, 0, len_bytes);
        *slot = Some(id);
    }
    *slot
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
