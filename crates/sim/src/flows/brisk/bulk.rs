//! Bulk: one stream of `bytes` from sender to receiver (or an endless one
//! until the flow's stop), as fast as the transport takes it. The bytes
//! are a deterministic pattern, so the receiver checks every one and both
//! sides hash the stream (a word at a time: at 100 Mbit/s these checks
//! cost as much as the transport when done a byte at a time). The sender
//! keeps each generated piece until the receiver has read past it, and the
//! receiver checks against those bytes (a comparison of slices) instead of
//! generating the pattern a second time.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{
    ReadEnd, StreamHash, Workload, count_corrupt, drain_stream, fill_pattern, write_some,
};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;
use std::collections::VecDeque;

/// The pattern is generated in pieces of this much, each written as the
/// stream takes it.
const WRITE_CHUNK: u64 = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Bulk {
    key: u64,
    total_bytes: Option<u64>,
    stop: Instant,
    stream: Option<StreamId>,
    /// Generated pieces with the stream offset of each, oldest first. The
    /// stream has not taken the last one's bytes from `pending_done` on;
    /// the others wait for the receiver to read past them.
    generated: VecDeque<(u64, Vec<u8>)>,
    pending_done: usize,
    /// A checked piece's buffer, to generate the next one in.
    spare: Option<Vec<u8>>,
    written: u64,
    finished: bool,
    sent_hash: StreamHash,
    received: u64,
    received_hash: StreamHash,
    corrupt: u64,
    completed_at: Option<Instant>,
}

impl Bulk {
    pub fn new(key: u64, total_bytes: Option<u64>, stop: Instant) -> Self {
        Bulk {
            key,
            total_bytes,
            stop,
            stream: None,
            generated: VecDeque::new(),
            pending_done: 0,
            spare: None,
            written: 0,
            finished: false,
            sent_hash: StreamHash::default(),
            received: 0,
            received_hash: StreamHash::default(),
            corrupt: 0,
            completed_at: None,
        }
    }

    /// Bytes of the piece being written that the stream has not taken.
    fn pending_len(&self) -> usize {
        self.generated
            .back()
            .map_or(0, |(_, piece)| piece.len() - self.pending_done)
    }

    /// Bytes not yet generated.
    fn remaining(&self) -> u64 {
        let generated = self.written + self.pending_len() as u64;
        self.total_bytes.map_or(u64::MAX, |t| t - generated)
    }

    /// Drops the pieces the receiver has read past, but the one being
    /// written, keeping one buffer for the next piece.
    fn forget_checked(&mut self) {
        while self.generated.len() > 1
            && self
                .generated
                .front()
                .is_some_and(|(start, piece)| start + piece.len() as u64 <= self.received)
        {
            self.spare = self.generated.pop_front().map(|(_, piece)| piece);
        }
    }
}

/// Bytes of `data`, read at stream `offset`, that differ from what the
/// sender generated there: compared with the generated `pieces` where they
/// still hold those bytes, with the pattern itself elsewhere. The same
/// count as [`count_corrupt`] over all of `data`.
fn count_corrupt_against(
    key: u64,
    pieces: &VecDeque<(u64, Vec<u8>)>,
    offset: u64,
    data: &[u8],
) -> u64 {
    let (mut at, mut rest, mut corrupt) = (offset, data, 0);
    for (start, piece) in pieces {
        let end = start + piece.len() as u64;
        if rest.is_empty() || at < *start {
            break;
        }
        if at >= end {
            continue;
        }
        let from = (at - start) as usize;
        let n = rest.len().min(piece.len() - from);
        let (got, later) = rest.split_at(n);
        let want = piece.get(from..from + n).unwrap_or_default();
        if got != want {
            corrupt += got.iter().zip(want).filter(|(a, b)| a != b).count() as u64;
        }
        at += n as u64;
        rest = later;
    }
    corrupt + count_corrupt(key, at, rest)
}

impl Workload for Bulk {
    fn sender_event(&mut self, _: Instant, _: &mut Connection, _: StreamEvent, _: &Tracer) {}

    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent) {
        let StreamEvent::Readable(id) = event else {
            return;
        };
        let (key, mut offset) = (self.key, self.received);
        let mut corrupt = 0;
        let hash = &mut self.received_hash;
        let pieces = &self.generated;
        let end = drain_stream(conn, id, |data| {
            hash.update(data);
            corrupt += count_corrupt_against(key, pieces, offset, data);
            offset += data.len() as u64;
        });
        self.corrupt += corrupt;
        self.received = offset;
        self.forget_checked();
        if end == ReadEnd::Finished && self.completed_at.is_none() {
            self.completed_at = Some(now);
        }
    }

    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        if self.finished {
            return false;
        }
        let id = match self.stream {
            Some(id) => id,
            None => {
                let Ok(id) = conn.open_stream(false, Priority::default()) else {
                    return false;
                };
                trace.place(id.0, 0, self.total_bytes.unwrap_or(u64::MAX));
                self.stream = Some(id);
                id
            }
        };
        let mut progressed = false;
        loop {
            if self.pending_len() == 0 {
                if now >= self.stop || self.remaining() == 0 {
                    // Whether or not the stream still takes a FIN, nothing
                    // more will be written (and the stop timer must not
                    // fire again).
                    let _ = conn.finish(id);
                    self.finished = true;
                    return true;
                }
                let len = self.remaining().min(WRITE_CHUNK) as usize;
                let mut piece = self.spare.take().unwrap_or_default();
                piece.resize(len, 0);
                fill_pattern(self.key, self.written, &mut piece);
                self.generated.push_back((self.written, piece));
                self.pending_done = 0;
                self.forget_checked();
            }
            let Some((_, piece)) = self.generated.back() else {
                return progressed;
            };
            let before = self.pending_done;
            if !write_some(conn, id, piece, &mut self.pending_done) {
                return progressed;
            }
            self.sent_hash.update(&piece[before..self.pending_done]);
            self.written += (self.pending_done - before) as u64;
            progressed = true;
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (!self.finished && self.total_bytes.is_none()).then_some(self.stop)
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received;
        report.completed_at = self.completed_at;
        report.integrity.sent_hash = self.sent_hash.digest();
        report.integrity.received_hash = self.received_hash.digest();
        report.integrity.stream_complete = self.completed_at.is_some();
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checking_against_kept_pieces_counts_what_the_pattern_counts() {
        let key = 0x5eed;
        // Three pieces of 100 bytes from offset 1000, the first one gone.
        let mut pieces = VecDeque::new();
        for start in [1100u64, 1200, 1300] {
            let mut piece = vec![0; 100];
            fill_pattern(key, start, &mut piece);
            pieces.push_back((start, piece));
        }
        // Reads straddling a forgotten piece, piece edges, and the end of
        // what was kept, with some bytes flipped.
        for (offset, len) in [(1050u64, 100usize), (1195, 10), (1100, 300), (1350, 120)] {
            let mut data = vec![0; len];
            fill_pattern(key, offset, &mut data);
            for i in (0..len).step_by(37) {
                data[i] ^= 0x80;
            }
            let want = count_corrupt(key, offset, &data);
            assert!(want > 0);
            assert_eq!(count_corrupt_against(key, &pieces, offset, &data), want);
            let mut clean = vec![0; len];
            fill_pattern(key, offset, &mut clean);
            assert_eq!(count_corrupt_against(key, &pieces, offset, &clean), 0);
        }
    }
}
