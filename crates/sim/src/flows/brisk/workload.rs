//! What the applications on a brisk flow share: the [`Workload`] trait the
//! glue drives, deterministic payload bytes, a stream hash, and a reader
//! that empties a stream.

use super::report::TransportReport;
use super::seq::Tracer;
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{StreamError, StreamEvent, StreamId};
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

/// SplitMix64: a full-period mix, so nearby offsets give unrelated bytes.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The content of a stream keyed by `key` at `offset..offset + out.len()`:
/// any byte can be recomputed from its offset, so a receiver checks what
/// it got without a copy of what was sent.
pub(crate) fn fill_pattern(key: u64, offset: u64, out: &mut [u8]) {
    let mut at = offset;
    let mut filled = 0;
    while filled < out.len() {
        let word = mix(key ^ mix(at / 8)).to_le_bytes();
        let from = (at % 8) as usize;
        let n = (8 - from).min(out.len() - filled);
        out[filled..filled + n].copy_from_slice(&word[from..from + n]);
        filled += n;
        at += n as u64;
    }
}

/// Bytes of `data` (at `offset` of a stream keyed by `key`) that differ
/// from the pattern.
pub(crate) fn count_corrupt(key: u64, offset: u64, data: &[u8]) -> u64 {
    let mut expected = vec![0u8; data.len()];
    fill_pattern(key, offset, &mut expected);
    data.iter().zip(&expected).filter(|(a, b)| a != b).count() as u64
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

/// Reads everything readable on `id`, handing each piece to `f`.
pub(crate) fn drain_stream(
    conn: &mut Connection,
    id: StreamId,
    mut f: impl FnMut(&[u8]),
) -> ReadEnd {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match conn.read(id, &mut buf) {
            Ok(r) => {
                f(&buf[..r.bytes]);
                if r.fin {
                    return ReadEnd::Finished;
                }
                if r.bytes == 0 {
                    return ReadEnd::Open;
                }
            }
            Err(
                StreamError::Reset { .. }
                | StreamError::Closed { .. }
                | StreamError::UnknownStream { .. },
            ) => {
                return ReadEnd::Gone;
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
