//! Download: the client (the phone) asks for `bytes` with an 8-byte
//! request on a stream it opens, and the server answers on the same
//! stream; the client checks every byte it reads against the pattern. Once
//! its request is acknowledged the client sends nothing that asks for an
//! answer, which is what makes a stalled path hard for it to notice.
//!
//! The workload's halves are swapped against the others': the sending
//! half (the client's connection) asks and reads, the receiving half (the
//! server's) writes.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{ReadEnd, Workload, count_corrupt, drain_stream, fill_pattern};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;

/// The response is written in pieces of at most this much.
const WRITE_CHUNK: u64 = 64 * 1024;
/// The request: the response's length in bytes, big-endian.
const REQUEST_LEN: usize = 8;

#[derive(Debug)]
pub(crate) struct Download {
    key: u64,
    bytes: u64,
    /// Server-side write limit per stream (unacknowledged plus unsent).
    buffer_limit: u64,
    /// The client's stream, once its request is written.
    request: Option<StreamId>,
    received: u64,
    corrupt: u64,
    completed_at: Option<Instant>,
    /// The server's view: the request read so far, the length asked for
    /// once it is whole, and what was written of the answer.
    asked: Vec<u8>,
    response: Option<(StreamId, u64)>,
    written: u64,
    finished: bool,
}

impl Download {
    pub fn new(key: u64, bytes: u64, buffer_limit: u64) -> Self {
        Download {
            key,
            bytes,
            buffer_limit,
            request: None,
            received: 0,
            corrupt: 0,
            completed_at: None,
            asked: Vec::new(),
            response: None,
            written: 0,
            finished: false,
        }
    }
}

impl Workload for Download {
    fn sender_event(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        event: StreamEvent,
        _: &Tracer,
    ) {
        let StreamEvent::Readable(id) = event else {
            return;
        };
        if Some(id) != self.request {
            return;
        }
        let (key, mut got, mut corrupt) = (self.key, self.received, 0);
        let end = drain_stream(conn, id, |d| {
            corrupt += count_corrupt(key, got, d);
            got += d.len() as u64;
        });
        self.received = got;
        self.corrupt += corrupt;
        if end == ReadEnd::Finished && got == self.bytes {
            self.completed_at.get_or_insert(now);
        }
    }

    fn receiver_event(&mut self, _: Instant, conn: &mut Connection, event: StreamEvent) {
        match event {
            StreamEvent::Opened(_) => while conn.accept_stream().is_some() {},
            StreamEvent::Readable(id) if self.response.is_none() => {
                let asked = &mut self.asked;
                let end = drain_stream(conn, id, |d| asked.extend_from_slice(d));
                if end != ReadEnd::Finished {
                    return;
                }
                match <[u8; REQUEST_LEN]>::try_from(self.asked.as_slice()) {
                    Ok(b) => self.response = Some((id, u64::from_be_bytes(b))),
                    Err(_) => {
                        let _ = conn.reset_stream(id, 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn poll_sender(&mut self, _: Instant, conn: &mut Connection, _: &Tracer) -> bool {
        if self.request.is_some() {
            return false;
        }
        let Ok(id) = conn.open_stream(true, Priority(0)) else {
            return false;
        };
        let _ = conn.write(id, &self.bytes.to_be_bytes());
        let _ = conn.finish(id);
        self.request = Some(id);
        true
    }

    fn poll_receiver(&mut self, _: Instant, conn: &mut Connection) -> bool {
        let Some((id, size)) = self.response else {
            return false;
        };
        if self.finished {
            return false;
        }
        let mut progressed = false;
        loop {
            let room = self
                .buffer_limit
                .saturating_sub(conn.streams().send_buffered_bytes(id));
            let want = (size - self.written).min(WRITE_CHUNK).min(room);
            if want == 0 {
                break;
            }
            let mut chunk = vec![0u8; want as usize];
            fill_pattern(self.key, self.written, &mut chunk);
            let n = conn.write(id, &chunk).unwrap_or(0) as u64;
            if n == 0 {
                break;
            }
            self.written += n;
            progressed = true;
        }
        if self.written == size {
            let _ = conn.finish(id);
            self.finished = true;
            progressed = true;
        }
        progressed
    }

    /// The server writes the response.
    fn receiver_writes(&self) -> bool {
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received;
        report.completed_at = self.completed_at;
        report.integrity.stream_complete = self.completed_at.is_some();
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}
