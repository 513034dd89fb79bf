//! Bulk: one stream of `bytes` from sender to receiver (or an endless one
//! until the flow's stop), as fast as the transport takes it. The stream's
//! bytes repeat a table of pattern bytes with a prime period, so the
//! sender hands the transport slices of the table (shared, not copied:
//! `Connection::write_bytes`) and the receiver compares every byte it
//! reads with the table at that byte's offset: no byte is generated,
//! copied into the send buffer or hashed per run. (Generating and hashing the stream took
//! 15% of a 100 Mbit/s run's instructions; the comparison is a `memcmp`.)

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{ReadEnd, Workload, drain_stream, fill_pattern, sending_stream};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_time::Instant;
use bytes::Bytes;

/// The stream repeats itself every this many bytes: a prime, so no packet,
/// chunk or buffer size is a multiple of it and bytes put at a wrong
/// offset by the transport differ from the ones due there; small enough
/// that the table stays in the L2 cache.
const PERIOD: usize = 65_521;

/// The sender writes the stream in chunks of this much.
const WRITE_CHUNK: usize = 64 * 1024;

/// The stream's first `PERIOD + WRITE_CHUNK` bytes, so the next
/// `WRITE_CHUNK` bytes from any offset are one slice of it.
#[derive(Debug)]
struct Table(Bytes);

impl Table {
    fn new(key: u64) -> Self {
        let mut bytes = vec![0u8; PERIOD + WRITE_CHUNK];
        fill_pattern(key, 0, &mut bytes[..PERIOD]);
        for at in PERIOD..bytes.len() {
            bytes[at] = bytes[at - PERIOD];
        }
        Table(Bytes::from(bytes))
    }

    /// Up to `len` stream bytes from `offset`, as many as one slice holds
    /// (at least `WRITE_CHUNK`).
    fn at(&self, offset: u64, len: usize) -> &[u8] {
        let from = (offset % PERIOD as u64) as usize;
        &self.0[from..from + len.min(self.0.len() - from)]
    }

    /// The same bytes as [`Table::at`], as a shared slice of the table.
    fn bytes_at(&self, offset: u64, len: usize) -> Bytes {
        let from = (offset % PERIOD as u64) as usize;
        self.0.slice(from..from + len.min(self.0.len() - from))
    }

    /// Bytes of `data`, read at stream `offset`, that differ from the
    /// stream's bytes there.
    fn count_corrupt(&self, mut offset: u64, mut data: &[u8]) -> u64 {
        let mut corrupt = 0;
        while !data.is_empty() {
            let want = self.at(offset, data.len());
            let (got, rest) = data.split_at(want.len());
            if got != want {
                corrupt += got.iter().zip(want).filter(|(a, b)| a != b).count() as u64;
            }
            offset += got.len() as u64;
            data = rest;
        }
        corrupt
    }
}

#[derive(Debug)]
pub(crate) struct Bulk {
    total_bytes: Option<u64>,
    stop: Instant,
    stream: Option<StreamId>,
    table: Table,
    written: u64,
    /// The last write was cut short: nothing more is written until the
    /// transport says the stream is writable again.
    blocked: bool,
    finished: bool,
    received: u64,
    corrupt: u64,
    completed_at: Option<Instant>,
    /// When the receiver last read new bytes, and the longest wait for
    /// new bytes that ended in each whole second of the run.
    last_read_at: Option<Instant>,
    read_gaps: Vec<std::time::Duration>,
}

impl Bulk {
    pub fn new(key: u64, total_bytes: Option<u64>, stop: Instant) -> Self {
        Bulk {
            total_bytes,
            stop,
            stream: None,
            table: Table::new(key),
            written: 0,
            blocked: false,
            finished: false,
            received: 0,
            corrupt: 0,
            completed_at: None,
            last_read_at: None,
            read_gaps: Vec::new(),
        }
    }

    /// Bytes not yet written.
    fn remaining(&self) -> u64 {
        self.total_bytes.map_or(u64::MAX, |t| t - self.written)
    }
}

impl Workload for Bulk {
    fn sender_event(&mut self, _: Instant, _: &mut Connection, event: StreamEvent, _: &Tracer) {
        if let StreamEvent::Writable(id) = event
            && Some(id) == self.stream
        {
            self.blocked = false;
        }
    }

    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent) {
        let StreamEvent::Readable(id) = event else {
            return;
        };
        let (table, mut offset, mut corrupt) = (&self.table, self.received, 0);
        let end = drain_stream(conn, id, |data| {
            corrupt += table.count_corrupt(offset, data);
            offset += data.len() as u64;
        });
        self.corrupt += corrupt;
        if offset > self.received {
            if let Some(last) = self.last_read_at {
                let second = now.since_epoch().as_secs() as usize;
                if self.read_gaps.len() <= second {
                    self.read_gaps.resize(second + 1, std::time::Duration::ZERO);
                }
                self.read_gaps[second] = self.read_gaps[second].max(now - last);
            }
            self.last_read_at = Some(now);
        }
        self.received = offset;
        if end == ReadEnd::Finished && self.completed_at.is_none() {
            self.completed_at = Some(now);
        }
    }

    fn sender_may_write(&self, now: Instant) -> bool {
        !(self.finished || (self.blocked && now < self.stop))
    }

    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        if !self.sender_may_write(now) {
            return false;
        }
        let Some(id) = sending_stream(
            &mut self.stream,
            conn,
            trace,
            self.total_bytes.unwrap_or(u64::MAX),
        ) else {
            return false;
        };
        let mut progressed = false;
        loop {
            // A write chunk once begun is written whole, as an application
            // writes out a buffer it has filled.
            let into_chunk = (self.written % WRITE_CHUNK as u64) as usize;
            if self.remaining() == 0 || (now >= self.stop && into_chunk == 0) {
                // Whether or not the stream still takes a FIN, nothing
                // more will be written (and the stop timer must not fire
                // again).
                let _ = conn.finish(id);
                self.finished = true;
                return true;
            }
            let len = self.remaining().min((WRITE_CHUNK - into_chunk) as u64) as usize;
            match conn.write_bytes(id, self.table.bytes_at(self.written, len)) {
                Ok(n) => {
                    self.written += n as u64;
                    progressed |= n > 0;
                    if n < len {
                        self.blocked = true;
                        return progressed;
                    }
                }
                Err(_) => return progressed,
            }
        }
    }

    fn receiver_writes(&self) -> bool {
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (!self.finished && self.total_bytes.is_none()).then_some(self.stop)
    }

    fn receiver_event_moves_timer(&self) -> bool {
        false
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received;
        report.completed_at = self.completed_at;
        report.read_gaps = self.read_gaps.clone();
        report.integrity.stream_complete = self.completed_at.is_some();
        report.integrity.missing_bytes = if self.completed_at.is_some() {
            self.written.saturating_sub(self.received)
        } else {
            0
        };
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream's byte at `offset`, from the pattern itself.
    fn byte_at(key: u64, offset: u64) -> u8 {
        let mut b = [0u8];
        fill_pattern(key, offset % PERIOD as u64, &mut b);
        b[0]
    }

    #[test]
    fn the_table_is_the_pattern_repeated_every_period() {
        let table = Table::new(0x5eed);
        for offset in [
            0u64,
            1,
            4095,
            65_520,
            65_521,
            65_522,
            131_041,
            200_000,
            1 << 33,
        ] {
            let slice = table.at(offset, WRITE_CHUNK);
            assert_eq!(slice.len(), WRITE_CHUNK, "{offset}");
            assert_eq!(&table.bytes_at(offset, WRITE_CHUNK)[..], slice, "{offset}");
            for (i, &b) in slice.iter().enumerate().step_by(251) {
                assert_eq!(b, byte_at(0x5eed, offset + i as u64), "{offset} + {i}");
            }
        }
        // Another key, other bytes.
        assert_ne!(Table::new(1).at(0, 64), Table::new(2).at(0, 64));
    }

    #[test]
    fn reads_are_checked_byte_by_byte_across_the_table_end() {
        let table = Table::new(7);
        // A read longer than any one slice, starting just before the wrap.
        let offset = PERIOD as u64 - 10;
        let mut data: Vec<u8> = (0..3 * WRITE_CHUNK as u64)
            .map(|i| byte_at(7, offset + i))
            .collect();
        assert_eq!(table.count_corrupt(offset, &data), 0);
        for i in (0..data.len()).step_by(1009) {
            data[i] ^= 0x40;
        }
        assert_eq!(
            table.count_corrupt(offset, &data),
            data.len().div_ceil(1009) as u64
        );
    }

    #[test]
    fn bytes_at_a_wrong_offset_are_corrupt() {
        // Shifts a transport might get wrong: a byte, a frame header, a
        // packet's payload, a chunk, a power of two.
        let table = Table::new(3);
        let data = table.at(10_000, 4096).to_vec();
        for shift in [1u64, 8, 17, 1200, 1452, 4096, 16_384, 65_536, 1 << 20] {
            let wrong = table.count_corrupt(10_000 + shift, &data);
            assert!(wrong > 4000, "shift {shift}: {wrong} of 4096 differ");
        }
    }
}
