//! Messages: an interactive sender (screen sharing, a chat, a game's state)
//! writing timestamped messages on one stream, the receiver measuring how
//! long each took from the sending application's write to its own read.
//!
//! A message is generated only when the stream is writable, stamped with
//! the moment it was generated, and written whole before the next one. What
//! "writable" means is the transport's configuration, and is the whole
//! experiment of the send-buffer seed (WWDC 2015, H2O):
//! - the classic path (`send_buffer`): writable while the stream's buffer
//!   (unacknowledged plus unsent) has room, like a socket with SO_SNDBUF;
//!   a full buffer ahead of each message is its delay;
//! - the low-water-mark path: writable only while fewer than the mark's
//!   bytes wait unsent (TCP_NOTSENT_LOWAT), so each message is fresh.
//!
//! With an `interval`, at most one message per period is generated (a late
//! one is written at the next writable moment and the schedule stays on its
//! grid); without one, a message goes in whenever the stream is writable,
//! as a screen-sharing sender grabs a frame whenever the socket takes one.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{
    Fnv64, ReadEnd, UNIT_HEADER_LEN, UnitHeader, Workload, count_corrupt, drain_stream, next_tick,
    sending_stream, unit_bytes, write_some,
};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_time::Instant;
use std::time::Duration;

#[derive(Debug)]
pub(crate) struct Messages {
    key: u64,
    size_bytes: u32,
    interval: Option<Duration>,
    start: Instant,
    stop: Instant,
    stream: Option<StreamId>,
    next_due: Instant,
    /// The message being written, and how much of it went in.
    pending: Vec<u8>,
    pending_done: usize,
    seq: u64,
    written: u64,
    sent_hash: Fnv64,
    stopped: bool,
    rx: Reassembly,
}

impl Messages {
    pub fn new(
        key: u64,
        size_bytes: u64,
        interval: Option<Duration>,
        start: Instant,
        stop: Instant,
    ) -> Self {
        Messages {
            key,
            size_bytes: u32::try_from(size_bytes.max(UNIT_HEADER_LEN as u64)).unwrap_or(u32::MAX),
            interval,
            start,
            stop,
            stream: None,
            next_due: start,
            pending: Vec::new(),
            pending_done: 0,
            seq: 0,
            written: 0,
            sent_hash: Fnv64::default(),
            stopped: false,
            rx: Reassembly::default(),
        }
    }

    /// Writes the rest of the pending message; true if it is all in.
    fn write_pending(
        &mut self,
        conn: &mut Connection,
        id: StreamId,
        progressed: &mut bool,
    ) -> bool {
        let before = self.pending_done;
        if write_some(conn, id, &self.pending, &mut self.pending_done) {
            self.sent_hash
                .update(&self.pending[before..self.pending_done]);
            self.written += (self.pending_done - before) as u64;
            *progressed = true;
        }
        self.pending_done >= self.pending.len()
    }
}

impl Workload for Messages {
    fn sender_event(&mut self, _: Instant, _: &mut Connection, _: StreamEvent, _: &Tracer) {}

    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent) {
        if let StreamEvent::Readable(id) = event {
            self.rx.read_from(now, self.key, conn, id);
        }
    }

    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        let Some(id) = sending_stream(&mut self.stream, conn, trace, u64::MAX) else {
            return false;
        };
        let mut progressed = false;
        loop {
            if !self.write_pending(conn, id, &mut progressed) {
                return progressed;
            }
            if now >= self.stop {
                if !self.stopped {
                    let _ = conn.finish(id);
                    self.stopped = true;
                    progressed = true;
                }
                return progressed;
            }
            if self.interval.is_some() && now < self.next_due {
                return progressed;
            }
            if !conn.streams().is_writable(id) {
                return progressed;
            }
            let header = UnitHeader {
                len_bytes: self.size_bytes,
                seq: self.seq,
                written_at: now,
            };
            self.pending = unit_bytes(self.key ^ self.seq, header);
            self.pending_done = 0;
            self.seq += 1;
            if let Some(period) = self.interval {
                self.next_due = next_tick(self.start, period, now);
            }
        }
    }

    fn receiver_writes(&self) -> bool {
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        // A half-written message waits for the stream, not for the clock.
        let idle = self.pending_done >= self.pending.len();
        Some(match self.interval {
            Some(_) if idle => self.next_due.min(self.stop),
            _ => self.stop,
        })
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.rx.bytes;
        report.latencies = self.rx.read.iter().map(|u| u.at - u.written_at).collect();
        report.integrity.sent_hash = self.sent_hash.0;
        report.integrity.received_hash = self.rx.hash.0;
        report.integrity.stream_complete = self.rx.complete;
        report.integrity.checked_bytes = self.rx.checked;
        report.integrity.corrupt_bytes = self.rx.corrupt;
    }
}

/// Splits a received stream of units (messages, or a live stream's
/// frames) back into units.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    pub(crate) bytes: u64,
    pub(crate) hash: Fnv64,
    header: Vec<u8>,
    /// The message being read and how many of its bytes are still to come.
    current: Option<(UnitHeader, u64)>,
    /// Every unit read whole, in stream order.
    pub(crate) read: Vec<ReadUnit>,
    pub(crate) checked: u64,
    pub(crate) corrupt: u64,
    /// The FIN was read.
    pub(crate) complete: bool,
}

/// A unit read whole: its sequence number, when it was written, and when
/// its last byte was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadUnit {
    pub seq: u64,
    pub written_at: Instant,
    pub at: Instant,
}

impl Reassembly {
    /// Reads everything readable on `id` into the units, noting the
    /// stream's end.
    pub(crate) fn read_from(
        &mut self,
        now: Instant,
        key: u64,
        conn: &mut Connection,
        id: StreamId,
    ) {
        let end = drain_stream(conn, id, |data| self.consume(now, key, data));
        self.complete |= end == ReadEnd::Finished;
    }

    pub(crate) fn consume(&mut self, now: Instant, key: u64, mut data: &[u8]) {
        self.bytes += data.len() as u64;
        self.hash.update(data);
        while !data.is_empty() {
            let Some((h, left)) = self.current else {
                let take = (UNIT_HEADER_LEN - self.header.len()).min(data.len());
                self.header.extend_from_slice(&data[..take]);
                data = &data[take..];
                if let Some(h) = UnitHeader::parse(&self.header) {
                    self.header.clear();
                    let body = u64::from(h.len_bytes).saturating_sub(UNIT_HEADER_LEN as u64);
                    self.current = Some((h, body));
                    self.finish_if_done(now);
                }
                continue;
            };
            let take = left.min(data.len() as u64) as usize;
            let offset = u64::from(h.len_bytes) - left;
            self.corrupt += count_corrupt(key ^ h.seq, offset, &data[..take]);
            self.checked += take as u64;
            data = &data[take..];
            self.current = Some((h, left - take as u64));
            self.finish_if_done(now);
        }
    }

    fn finish_if_done(&mut self, now: Instant) {
        if let Some((h, 0)) = self.current {
            self.read.push(ReadUnit {
                seq: h.seq,
                written_at: h.written_at,
                at: now,
            });
            self.current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembly_splits_messages_across_reads() {
        let mut stream = Vec::new();
        for seq in 0..3u64 {
            let h = UnitHeader {
                len_bytes: 50,
                seq,
                written_at: Instant::from_millis(seq * 10),
            };
            stream.extend(unit_bytes(9 ^ seq, h));
        }
        let mut rx = Reassembly::default();
        for (i, piece) in stream.chunks(7).enumerate() {
            rx.consume(Instant::from_millis(100 + i as u64), 9, piece);
        }
        assert_eq!(rx.read.len(), 3);
        assert_eq!(rx.corrupt, 0);
        assert_eq!(rx.checked, 3 * 30);
        // The last message's final byte is in read 21 (at 121 ms), written at 20 ms.
        assert_eq!(
            rx.read[2].at - rx.read[2].written_at,
            Duration::from_millis(101)
        );
        assert_eq!(rx.bytes, 150);
    }
}
