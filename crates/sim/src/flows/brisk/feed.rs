//! Feed: a page of a social feed loaded over one connection (seed 003's
//! multiplexing with priorities). The receiver (the phone) asks for the
//! first object, a small API response, on the most urgent stream; once it
//! has arrived it asks for all the images at once, each on its own stream,
//! at a lower urgency so they share the path round-robin. The sender (the
//! server) answers each request with the object's bytes. The page is
//! loaded when the last object is read whole.
//!
//! The classic client is the same page with two knobs: `sequential`
//! fetches one object at a time (HTTP/1.1 on one connection), and
//! `setup_round_trips` first makes that many small exchanges (a
//! [`SETUP_REQUEST_LEN`]-byte request answered by [`SETUP_RESPONSE_LEN`]
//! bytes) standing in for TCP's and TLS 1.2's handshakes, so they meet the
//! same queues and losses as the page. Setup objects come first in the
//! object list, one at a time; the report counts only the real ones.
//!
//! With early data the phone is the client (it knows the server's key
//! from an earlier visit) and its first request, finished, rides in its
//! first flight: an idempotent read, answered half a round trip later.

use super::report::TransportReport;
use super::seq::Tracer;
use super::workload::{ReadEnd, Workload, count_corrupt, drain_stream, fill_pattern};
use crate::flows::AppReport;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_proto::{Connection, Idempotent};
use brisk_time::Instant;
use std::collections::BTreeMap;
use std::time::Duration;

/// The API response goes first; images share the next level.
const API_RESPONSE: Priority = Priority(0);
const IMAGE: Priority = Priority(3);
/// Responses are written in pieces of at most this much.
const WRITE_CHUNK: u64 = 64 * 1024;
/// A request is the object's index...
const REQUEST_LEN: usize = 4;
/// ...padded to this for a setup exchange (about a ClientHello).
const SETUP_REQUEST_LEN: usize = 100;
/// A setup exchange's answer (about a ServerHello and certificate flight
/// that fits one packet).
const SETUP_RESPONSE_LEN: u64 = 1200;

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
    /// The setup objects, then the page's.
    sizes: Vec<u64>,
    /// How many of `sizes` are setup exchanges.
    setup: usize,
    sequential: bool,
    /// The first request goes in the client's first flight.
    early_data: bool,
    /// When the first byte of the page's first object was read.
    first_byte_at: Option<Instant>,
    /// Where each object sits in the time-sequence byte space.
    bases: Vec<u64>,
    buffer_limit: u64,
    requested: usize,
    requests: BTreeMap<StreamId, Request>,
    done: Vec<Option<Instant>>,
    latencies: Vec<Duration>,
    received: u64,
    /// Of `received` and `written`: the setup exchanges' bytes, which are
    /// not the page's.
    setup_received: u64,
    setup_written: u64,
    corrupt: u64,
    responses: BTreeMap<StreamId, Response>,
    written: u64,
}

impl Feed {
    pub fn new(
        key: u64,
        objects: Vec<u64>,
        sequential: bool,
        setup: usize,
        early_data: bool,
        buffer_limit: u64,
    ) -> Self {
        let mut sizes = vec![SETUP_RESPONSE_LEN; setup];
        sizes.extend(objects);
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
            setup,
            sequential,
            early_data,
            first_byte_at: None,
            buffer_limit,
            requested: 0,
            requests: BTreeMap::new(),
            latencies: Vec::new(),
            received: 0,
            setup_received: 0,
            setup_written: 0,
            corrupt: 0,
            responses: BTreeMap::new(),
            written: 0,
        }
    }

    /// Setup exchanges and the API response are urgent; images share.
    fn priority(&self, index: usize) -> Priority {
        if index <= self.setup {
            API_RESPONSE
        } else {
            IMAGE
        }
    }

    fn request_len(&self, index: usize) -> usize {
        if index < self.setup {
            SETUP_REQUEST_LEN
        } else {
            REQUEST_LEN
        }
    }

    /// Whether object `index` may be requested yet: setup exchanges and
    /// the API response one after another, then the images all at once
    /// (or one by one when sequential).
    fn may_request(&self, index: usize) -> bool {
        let after = match index {
            0 => return true,
            i if self.sequential || i <= self.setup + 1 => i - 1,
            _ => self.setup,
        };
        self.done.get(after).is_some_and(Option::is_some)
    }

    /// Sends the request for object `index`; `early`: as the first
    /// flight's early data (a read, safe to repeat).
    fn request(&mut self, now: Instant, conn: &mut Connection, index: usize, early: bool) -> bool {
        let mut req = vec![0u8; self.request_len(index)];
        req[..REQUEST_LEN].copy_from_slice(&u32::try_from(index).unwrap_or(u32::MAX).to_be_bytes());
        let opened = if early {
            conn.send_early(Idempotent::declare(&req)).ok()
        } else {
            conn.open_stream(true, self.priority(index))
                .ok()
                .inspect(|&id| {
                    let _ = conn.write(id, &req);
                })
        };
        let Some(id) = opened else {
            return false;
        };
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
        let index = r
            .request
            .first_chunk::<REQUEST_LEN>()
            .map(|b| u32::from_be_bytes(*b) as usize)
            .filter(|i| *i < self.sizes.len());
        let got_len = r.request.len();
        let len_ok = index.is_some_and(|i| got_len == self.request_len(i));
        match index.filter(|_| len_ok) {
            Some(i) => {
                let priority = self.priority(i);
                if let Some(r) = self.responses.get_mut(&id) {
                    r.index = Some(i);
                }
                let _ = conn.set_priority(id, priority);
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
        if req.index == self.setup && got > req.got {
            self.first_byte_at.get_or_insert(now);
        }
        if req.index < self.setup {
            self.setup_received += got - req.got;
        }
        self.corrupt += corrupt;
        req.got = got;
        match end {
            ReadEnd::Open => {}
            ReadEnd::Finished => {
                let (index, sent_at) = (req.index, req.sent_at);
                if got == self.sizes[index] {
                    self.done[index] = Some(now);
                    if index >= self.setup {
                        self.latencies.push(now - sent_at);
                    }
                }
                self.requests.remove(&id);
            }
            ReadEnd::Gone => {
                self.requests.remove(&id);
            }
        }
    }

    fn receiver_writes(&self) -> bool {
        true
    }

    fn poll_receiver(&mut self, now: Instant, conn: &mut Connection) -> bool {
        let mut progressed = false;
        while self.requested < self.sizes.len() && self.may_request(self.requested) {
            if !self.request(now, conn, self.requested, false) {
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
                if i < self.setup {
                    self.setup_written += n;
                }
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

    fn first_flight(&mut self, now: Instant, conn: &mut Connection) {
        if self.early_data && self.requested == 0 && self.request(now, conn, 0, true) {
            self.requested = 1;
        }
    }

    fn finished(&self) -> bool {
        self.done.iter().all(Option::is_some)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written - self.setup_written;
        app.delivered_bytes = self.received - self.setup_received;
        report.latencies = self.latencies.clone();
        let page = self.done.get(self.setup..).unwrap_or_default();
        report.first_object_at = page.first().copied().flatten();
        report.first_byte_at = self.first_byte_at;
        if self.done.iter().all(Option::is_some) {
            report.completed_at = page.iter().flatten().max().copied();
        }
        report.integrity.checked_bytes = self.received;
        report.integrity.corrupt_bytes = self.corrupt;
    }
}
