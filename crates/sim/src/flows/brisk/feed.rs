//! Feed: a page of a social feed loaded over one connection (seed 003's
//! multiplexing with priorities). The receiver (the phone) asks for the
//! first object, a small API response, on the most urgent stream; once it
//! has arrived it asks for all the images at once, each on its own stream,
//! at a lower urgency so they share the path round-robin. The sender (the
//! server) answers each request with the object's bytes. The page is
//! loaded when the last object is read whole.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{ReadEnd, Workload, count_corrupt, drain_stream, fill_pattern};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;
use std::collections::BTreeMap;
use std::time::Duration;

/// The API response goes first; images share the next level.
const API_RESPONSE: Priority = Priority(0);
const IMAGE: Priority = Priority(3);
/// Responses are written in pieces of at most this much.
const WRITE_CHUNK: u64 = 64 * 1024;
/// A request is the object's index.
const REQUEST_LEN: usize = 4;

#[derive(Debug)]
struct Request {
    index: usize,
    sent_at: Instant,
    got: u64,
}

#[derive(Debug, Default)]
struct Response {
    request: Vec<u8>,
    index: Option<usize>,
    written: u64,
}

#[derive(Debug)]
pub(crate) struct Feed {
    key: u64,
    sizes: Vec<u64>,
    /// Where each object sits in the time-sequence byte space.
    bases: Vec<u64>,
    buffer_limit: u64,
    requested: usize,
    requests: BTreeMap<StreamId, Request>,
    done: Vec<Option<Instant>>,
    latencies: Vec<Duration>,
    received: u64,
    corrupt: u64,
    responses: BTreeMap<StreamId, Response>,
    written: u64,
}

impl Feed {
    pub fn new(key: u64, sizes: Vec<u64>, buffer_limit: u64) -> Self {
        let bases = sizes
            .iter()
            .scan(0u64, |acc, s| {
                let b = *acc;
                *acc += s;
                Some(b)
            })
            .collect();
        Feed {
            key,
            done: vec![None; sizes.len()],
            bases,
            sizes,
            buffer_limit,
            requested: 0,
            requests: BTreeMap::new(),
            latencies: Vec::new(),
            received: 0,
            corrupt: 0,
            responses: BTreeMap::new(),
            written: 0,
        }
    }

    fn request(&mut self, now: Instant, conn: &mut Connection, index: usize) -> bool {
        let priority = if index == 0 { API_RESPONSE } else { IMAGE };
        let Ok(id) = conn.open_stream(true, priority) else {
            return false;
        };
        let req = u32::try_from(index).unwrap_or(u32::MAX).to_be_bytes();
        let _ = conn.write(id, &req);
        let _ = conn.finish(id);
        self.requests.insert(
            id,
            Request {
                index,
                sent_at: now,
                got: 0,
            },
        );
        true
    }

    /// Reads a request on the sender; once whole, the response is due.
    fn read_request(&mut self, conn: &mut Connection, id: StreamId, trace: &Tracer) {
        let r = self.responses.entry(id).or_default();
        let end = drain_stream(conn, id, |d| r.request.extend_from_slice(d));
        if end != ReadEnd::Finished || r.index.is_some() {
            return;
        }
        let index = <[u8; REQUEST_LEN]>::try_from(r.request.as_slice())
            .ok()
            .map(|b| u32::from_be_bytes(b) as usize)
            .filter(|i| *i < self.sizes.len());
        match index {
            Some(i) => {
                r.index = Some(i);
                let _ = conn.set_priority(id, if i == 0 { API_RESPONSE } else { IMAGE });
                trace.place(id.0, self.bases[i], self.sizes[i]);
            }
            None => {
                let _ = conn.reset_stream(id, 1);
                self.responses.remove(&id);
            }
        }
    }
}

impl Workload for Feed {
    fn sender_event(
        &mut self,
        _: Instant,
        conn: &mut Connection,
        event: StreamEvent,
        trace: &Tracer,
    ) {
        match event {
            StreamEvent::Opened(_) => while conn.accept_stream().is_some() {},
            StreamEvent::Readable(id) => self.read_request(conn, id, trace),
            _ => {}
        }
    }

    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent) {
        let StreamEvent::Readable(id) = event else {
            return;
        };
        let Some(req) = self.requests.get_mut(&id) else {
            return;
        };
        let key = self.key ^ req.index as u64;
        let (mut got, mut corrupt) = (req.got, 0);
        let end = drain_stream(conn, id, |d| {
            corrupt += count_corrupt(key, got, d);
            got += d.len() as u64;
        });
        self.received += got - req.got;
        self.corrupt += corrupt;
        req.got = got;
        match end {
            ReadEnd::Open => {}
            ReadEnd::Finished => {
                let (index, sent_at) = (req.index, req.sent_at);
                if got == self.sizes[index] {
                    self.done[index] = Some(now);
                    self.latencies.push(now - sent_at);
                }
                self.requests.remove(&id);
            }
            ReadEnd::Gone => {
                self.requests.remove(&id);
            }
        }
    }

    fn poll_receiver(&mut self, now: Instant, conn: &mut Connection) -> bool {
        let mut progressed = false;
        if self.requested == 0 && self.request(now, conn, 0) {
            self.requested = 1;
            progressed = true;
        }
        while self.requested >= 1 && self.requested < self.sizes.len() && self.done[0].is_some() {
            if !self.request(now, conn, self.requested) {
                break;
            }
            self.requested += 1;
            progressed = true;
        }
        progressed
    }

    fn poll_sender(&mut self, _: Instant, conn: &mut Connection, _: &Tracer) -> bool {
        let mut progressed = false;
        let mut finished = Vec::new();
        for (id, r) in self.responses.iter_mut() {
            let Some(i) = r.index else { continue };
            let size = self.sizes[i];
            loop {
                let room = self
                    .buffer_limit
                    .saturating_sub(conn.streams().send_buffered_bytes(*id));
                let want = (size - r.written).min(WRITE_CHUNK).min(room);
                if want == 0 {
                    break;
                }
                let mut chunk = vec![0u8; want as usize];
                fill_pattern(self.key ^ i as u64, r.written, &mut chunk);
                let n = conn.write(*id, &chunk).unwrap_or(0) as u64;
                if n == 0 {
                    break;
                }
                r.written += n;
                self.written += n;
                progressed = true;
            }
            if r.written == size {
                let _ = conn.finish(*id);
                finished.push(*id);
                progressed = true;
            }
        }
        for id in finished {
            self.responses.remove(&id);
        }
        progressed
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received;
        report.latencies = self.latencies.clone();
        report.first_object_at = self.done.first().copied().flatten();
        if self.done.iter().all(Option::is_some) {
            report.completed_at = self.done.iter().flatten().max().copied();
        }
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}
