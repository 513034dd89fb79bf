//! Bulk: one stream of `bytes` from sender to receiver (or an endless one
//! until the flow's stop), as fast as the transport takes it. The bytes
//! are a deterministic pattern, so the receiver checks every one and both
//! sides hash the stream.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{Fnv64, ReadEnd, Workload, count_corrupt, drain_stream, fill_pattern};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;

/// Writes are made in pieces of at most this much, and only once this much
/// room (or the rest of the transfer) is free, so the pattern is not
/// generated for tiny writes after every ACK.
const WRITE_CHUNK: u64 = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Bulk {
    key: u64,
    total_bytes: Option<u64>,
    stop: Instant,
    /// The stream's send buffer (unacknowledged plus unsent).
    buffer_limit: u64,
    stream: Option<StreamId>,
    written: u64,
    finished: bool,
    sent_hash: Fnv64,
    received: u64,
    received_hash: Fnv64,
    corrupt: u64,
    completed_at: Option<Instant>,
}

impl Bulk {
    pub fn new(key: u64, total_bytes: Option<u64>, stop: Instant, buffer_limit: u64) -> Self {
        Bulk {
            key,
            total_bytes,
            stop,
            buffer_limit,
            stream: None,
            written: 0,
            finished: false,
            sent_hash: Fnv64::default(),
            received: 0,
            received_hash: Fnv64::default(),
            corrupt: 0,
            completed_at: None,
        }
    }

    fn remaining(&self) -> u64 {
        self.total_bytes.map_or(u64::MAX, |t| t - self.written)
    }
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
        let end = drain_stream(conn, id, |data| {
            hash.update(data);
            corrupt += count_corrupt(key, offset, data);
            offset += data.len() as u64;
        });
        self.corrupt += corrupt;
        self.received = offset;
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
        if now >= self.stop || self.remaining() == 0 {
            // Whether or not the stream still takes a FIN, nothing more
            // will be written (and the stop timer must not fire again).
            let _ = conn.finish(id);
            self.finished = true;
            return true;
        }
        loop {
            let room = self
                .buffer_limit
                .saturating_sub(conn.streams().send_buffered_bytes(id));
            let want = self.remaining().min(WRITE_CHUNK).min(self.buffer_limit);
            if room < want {
                break;
            }
            let mut chunk = vec![0u8; want as usize];
            fill_pattern(self.key, self.written, &mut chunk);
            let n = conn.write(id, &chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.sent_hash.update(&chunk[..n]);
            self.written += n as u64;
            progressed = true;
            if self.remaining() == 0 {
                let _ = conn.finish(id);
                self.finished = true;
                break;
            }
        }
        progressed
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (!self.finished && self.total_bytes.is_none()).then_some(self.stop)
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received;
        report.completed_at = self.completed_at;
        report.integrity.sent_hash = self.sent_hash.0;
        report.integrity.received_hash = self.received_hash.0;
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}
