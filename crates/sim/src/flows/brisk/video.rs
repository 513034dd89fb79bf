//! Video: the sending half of a video call (WWDC 2023's L4S demo app).
//!
//! A frame is captured every `1/fps`. Its size follows the transport's own
//! rate estimate, what the controller means to send per smoothed RTT
//! (`pacing_window / srtt`: the window for CUBIC and Prague, the bandwidth
//! estimate for BBR, whose window of two BDPs would oversize frames),
//! clamped to 0.3..8 Mbit/s (a call's usual range), so the encoder neither
//! starves nor floods the path, and scaled by the share of bytes sent so
//! far that were not FEC repair, as repair travels inside the same rate.
//!
//! Two deliveries ([`Delivery`]):
//! - **Datagrams** (the default): each frame is cut into unreliable
//!   datagrams (`frame_datagrams`), sent ahead of any stream data with a
//!   deadline of the frame's capture plus [`FRAME_DEADLINE`] less half the
//!   minimum RTT (the one-way delay it still has to travel), so the
//!   transport drops unsent what would arrive too late anyway; forward
//!   error correction protects each frame's packets, the only way back
//!   from a loss, as datagrams are never retransmitted.
//! - **Streams**: each frame is one unidirectional stream, written whole
//!   and finished: a frame that is lost or late holds back only itself,
//!   never the next. The oldest unfinished frames are sent first (a
//!   decoder needs them in order); a frame not acknowledged within the
//!   deadline is reset, so stale bytes stop taking capacity from fresh
//!   ones. By default every frame is written. With `send_buffer` a frame
//!   is skipped when it would not fit beside what the transport already
//!   holds; with `low_water_mark`, when that many bytes wait unsent.
//!
//! The receiver counts frames read whole within the deadline ("on time"),
//! the share of 100 ms windows without one (stalls), and the on-time frame
//! rate per second.

use super::SendPath;
use super::frame_datagrams::{PIECE_HEADER_LEN, Reassembly, pieces};
use super::report::{FrameReport, TransportReport};
use super::seq::Tracer;
use super::workload::{
    ReadEnd, UNIT_HEADER_LEN, UnitHeader, Workload, count_corrupt, drain_stream, next_tick,
    unit_bytes,
};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;
use std::collections::BTreeMap;
use std::time::Duration;

/// A frame later than this after capture is of no use to a call: ITU-T
/// G.114 puts the limit of good interactivity at 150 ms one way.
pub const FRAME_DEADLINE: Duration = Duration::from_millis(150);
/// The encoder's rate range.
pub const MIN_VIDEO_BPS: u64 = 300_000;
pub const MAX_VIDEO_BPS: u64 = 8_000_000;
/// Stalls are counted in windows this long.
pub const STALL_WINDOW: Duration = Duration::from_millis(100);
/// How the call's frames travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// One stream per frame, written as the send path allows.
    Streams(SendPath),
    /// Unreliable datagrams with a deadline, protected by FEC.
    Datagrams,
}

/// Urgency of the newest frame; older unfinished frames move one level up.
const NEW_FRAME: Priority = Priority(3);
const OLDER_FRAME: Priority = Priority(2);

#[derive(Debug, Clone, Copy)]
struct Outgoing {
    captured: Instant,
}

#[derive(Debug, Default)]
struct Incoming {
    header: Vec<u8>,
    parsed: Option<UnitHeader>,
    got: u64,
}

#[derive(Debug)]
pub(crate) struct Video {
    key: u64,
    fps: u32,
    period: Duration,
    start: Instant,
    stop: Instant,
    delivery: Delivery,
    /// A frame never exceeds one stream's send buffer.
    max_frame_bytes: u64,
    next_frame: Instant,
    first_frame: Option<Instant>,
    outstanding: BTreeMap<StreamId, Outgoing>,
    /// Where the next frame goes in the time-sequence byte space.
    next_base: u64,
    seq: u64,
    sent: u64,
    skipped: u64,
    abandoned: u64,
    written: u64,
    rx: BTreeMap<StreamId, Incoming>,
    /// (arrival, latency) of every frame read whole.
    arrivals: Vec<(Instant, Duration)>,
    received_bytes: u64,
    checked: u64,
    corrupt: u64,
    /// Datagram delivery: frames being put back together.
    reassembly: Reassembly,
}

impl Video {
    pub fn new(
        key: u64,
        fps: u32,
        start: Instant,
        stop: Instant,
        delivery: Delivery,
        max_frame_bytes: u64,
    ) -> Self {
        let fps = fps.max(1);
        Video {
            key,
            fps,
            period: Duration::from_secs(1) / fps,
            start,
            stop,
            delivery,
            max_frame_bytes,
            next_frame: start,
            first_frame: None,
            outstanding: BTreeMap::new(),
            next_base: 0,
            seq: 0,
            sent: 0,
            skipped: 0,
            abandoned: 0,
            written: 0,
            rx: BTreeMap::new(),
            arrivals: Vec::new(),
            received_bytes: 0,
            checked: 0,
            corrupt: 0,
            reassembly: Reassembly::default(),
        }
    }

    /// The encoder's target: what the controller means to send per
    /// smoothed RTT.
    fn target_bps(conn: &Connection) -> u64 {
        let stats = conn.stats();
        let srtt = stats.smoothed_rtt.as_secs_f64().max(1e-6);
        let bps = stats.pacing_window_bytes as f64 * 8.0 / srtt;
        (bps as u64).clamp(MIN_VIDEO_BPS, MAX_VIDEO_BPS)
    }

    /// Whether the send path takes a frame of `len` bytes now.
    fn path_open(&self, conn: &Connection, len: u64) -> bool {
        let streams = conn.streams();
        let Delivery::Streams(path) = self.delivery else {
            // Datagrams wait at most until their deadline.
            return true;
        };
        match path {
            SendPath::Unbounded => true,
            SendPath::SendBuffer(limit) => {
                let held: u64 = self
                    .outstanding
                    .keys()
                    .map(|id| streams.send_buffered_bytes(*id))
                    .sum();
                held + len <= limit
            }
            SendPath::LowWaterMark(mark) => {
                let unsent: u64 = self
                    .outstanding
                    .keys()
                    .map(|id| streams.unsent_bytes(*id))
                    .sum();
                unsent < mark
            }
        }
    }

    fn abandon_stale(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        let stale: Vec<StreamId> = self
            .outstanding
            .iter()
            .filter(|(_, f)| now >= f.captured + FRAME_DEADLINE)
            .map(|(id, _)| *id)
            .collect();
        for id in &stale {
            let _ = conn.reset_stream(*id, 0);
            trace.abandon(id.0);
            self.outstanding.remove(id);
            self.abandoned += 1;
        }
        !stale.is_empty()
    }

    /// The next frame's size: what the path carries in one frame interval,
    /// less what earlier frames still have waiting to be sent, so the
    /// sender's own backlog drains instead of growing when the estimate
    /// runs ahead of the path (the encoder follows its queue, as SCReAM's
    /// does).
    fn frame_len(&self, conn: &Connection) -> u64 {
        let fps = u64::from(self.fps);
        // Repair travels inside the same rate: the encoder leaves it its
        // share of what was sent so far, or frames and their repair
        // together outrun the path and wait past their deadline.
        let stats = conn.stats();
        let source_share = if stats.bytes_sent == 0 {
            1.0
        } else {
            1.0 - stats.repair_bytes_sent as f64 / stats.bytes_sent as f64
        };
        let budget = ((Self::target_bps(conn) / 8 / fps) as f64 * source_share) as u64;
        let streams = conn.streams();
        let backlog: u64 = conn.datagram_queued_bytes()
            + self
                .outstanding
                .keys()
                .map(|id| streams.unsent_bytes(*id))
                .sum::<u64>();
        let smallest = (MIN_VIDEO_BPS / 8 / fps).max(UNIT_HEADER_LEN as u64);
        budget
            .saturating_sub(backlog)
            .max(smallest)
            .min(self.max_frame_bytes.max(UNIT_HEADER_LEN as u64))
    }

    fn capture(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        let len = self.frame_len(conn);
        if !self.path_open(conn, len) {
            self.skipped += 1;
            return false;
        }
        if self.delivery == Delivery::Datagrams {
            return self.capture_datagrams(now, conn, len);
        }
        let Ok(id) = conn.open_stream(false, NEW_FRAME) else {
            self.skipped += 1;
            return false;
        };
        for older in self.outstanding.keys() {
            let _ = conn.set_priority(*older, OLDER_FRAME);
        }
        let header = UnitHeader {
            len_bytes: u32::try_from(len).unwrap_or(u32::MAX),
            seq: self.seq,
            written_at: now,
        };
        let frame = unit_bytes(self.key ^ self.seq, header);
        self.seq += 1;
        let n = conn.write(id, &frame).unwrap_or(0);
        if n < frame.len() {
            // The stream would not take the whole frame (its window is
            // smaller than configured): a partial frame is useless.
            let _ = conn.reset_stream(id, 0);
            self.skipped += 1;
            return n > 0;
        }
        let _ = conn.finish(id);
        trace.place(id.0, self.next_base, len);
        self.next_base += len;
        self.written += len;
        self.sent += 1;
        self.outstanding.insert(id, Outgoing { captured: now });
        true
    }

    /// Sends a frame of `len` bytes as datagrams; a frame the transport
    /// refuses (a peer without datagrams, a queue cut short) is skipped.
    fn capture_datagrams(&mut self, now: Instant, conn: &mut Connection, len: u64) -> bool {
        let Some(max) = conn.max_datagram_size() else {
            self.skipped += 1;
            return false;
        };
        let header = UnitHeader {
            len_bytes: u32::try_from(len).unwrap_or(u32::MAX),
            seq: self.seq,
            written_at: now,
        };
        let frame = unit_bytes(self.key ^ self.seq, header);
        let deadline = now + FRAME_DEADLINE.saturating_sub(conn.rtt().min() / 2);
        let mut refused = false;
        for d in pieces(self.seq, &frame, max) {
            refused |= conn.send_datagram(now, d, Some(deadline)).is_err();
        }
        self.seq += 1;
        if refused {
            self.skipped += 1;
            return false;
        }
        self.written += len;
        self.sent += 1;
        true
    }

    fn frame_report(&self) -> FrameReport {
        let t0 = self.first_frame.unwrap_or(self.start);
        let on_time: Vec<Instant> = self
            .arrivals
            .iter()
            .filter(|(_, l)| *l <= FRAME_DEADLINE)
            .map(|(t, _)| *t)
            .collect();
        let span = self.stop - t0;
        let windows = (span.as_nanos() / STALL_WINDOW.as_nanos()) as u64;
        let mut lit = vec![false; windows as usize];
        for t in &on_time {
            let i = ((*t - t0).as_nanos() / STALL_WINDOW.as_nanos()) as usize;
            if let Some(w) = lit.get_mut(i) {
                *w = true;
            }
        }
        let stalled = lit.iter().filter(|w| !**w).count();
        let seconds = span.as_secs();
        let mut per_second = vec![0u64; seconds as usize];
        for t in &on_time {
            if let Some(c) = per_second.get_mut((*t - t0).as_secs() as usize) {
                *c += 1;
            }
        }
        FrameReport {
            fps: self.fps,
            sent: self.sent,
            skipped: self.skipped,
            abandoned: self.abandoned,
            received: self.arrivals.len() as u64,
            on_time: on_time.len() as u64,
            deadline: FRAME_DEADLINE,
            stall_fraction: if windows == 0 {
                0.0
            } else {
                stalled as f64 / windows as f64
            },
            frame_rate: per_second
                .iter()
                .enumerate()
                .map(|(i, c)| (t0 + Duration::from_secs(i as u64 + 1), *c as f64))
                .collect(),
        }
    }
}

impl Workload for Video {
    fn sender_event(&mut self, _: Instant, _: &mut Connection, event: StreamEvent, _: &Tracer) {
        if let StreamEvent::Finished(id) = event {
            self.outstanding.remove(&id);
        }
    }

    fn receiver_event(&mut self, now: Instant, conn: &mut Connection, event: StreamEvent) {
        match event {
            StreamEvent::Readable(id) => {
                let key = self.key;
                let f = self.rx.entry(id).or_default();
                let (mut checked, mut corrupt, mut bytes) = (0, 0, 0);
                let end = drain_stream(conn, id, |mut data| {
                    bytes += data.len() as u64;
                    if f.parsed.is_none() {
                        let take = (UNIT_HEADER_LEN - f.header.len()).min(data.len());
                        f.header.extend_from_slice(&data[..take]);
                        data = &data[take..];
                        f.got += take as u64;
                        f.parsed = UnitHeader::parse(&f.header);
                    }
                    if let Some(h) = f.parsed {
                        corrupt += count_corrupt(key ^ h.seq, f.got, data);
                        checked += data.len() as u64;
                    }
                    f.got += data.len() as u64;
                });
                self.received_bytes += bytes;
                self.checked += checked;
                self.corrupt += corrupt;
                match end {
                    ReadEnd::Open => {}
                    ReadEnd::Finished => {
                        if let Some(f) = self.rx.remove(&id)
                            && let Some(h) = f.parsed
                            && f.got == u64::from(h.len_bytes)
                        {
                            self.arrivals.push((now, now - h.written_at));
                        }
                    }
                    ReadEnd::Gone => {
                        self.rx.remove(&id);
                    }
                }
            }
            StreamEvent::Reset(id, _) => {
                self.rx.remove(&id);
            }
            _ => {}
        }
    }

    fn receiver_datagrams(&mut self, now: Instant, conn: &mut Connection) {
        while let Some(d) = conn.recv_datagram() {
            self.received_bytes += d.len().saturating_sub(PIECE_HEADER_LEN) as u64;
            if let Some(latency) = self.reassembly.on_datagram(now, self.key, &d) {
                self.arrivals.push((now, latency));
            }
        }
    }

    fn poll_sender(&mut self, now: Instant, conn: &mut Connection, trace: &Tracer) -> bool {
        let mut progressed = self.abandon_stale(now, conn, trace);
        if now >= self.next_frame && now < self.stop {
            self.first_frame.get_or_insert(now);
            self.next_frame = next_tick(self.start, self.period, now);
            progressed |= self.capture(now, conn, trace);
        }
        progressed
    }

    fn receiver_writes(&self) -> bool {
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let next = (self.next_frame < self.stop).then_some(self.next_frame);
        let deadline = self
            .outstanding
            .values()
            .map(|f| f.captured + FRAME_DEADLINE)
            .min();
        next.into_iter().chain(deadline).min()
    }

    fn report(&self, app: &mut AppReport, report: &mut TransportReport) {
        app.sent_bytes = self.written;
        app.delivered_bytes = self.received_bytes;
        report.latencies = self.arrivals.iter().map(|(_, l)| *l).collect();
        report.integrity.checked_bytes = self.checked + self.reassembly.checked;
        report.integrity.corrupt_bytes =
            self.corrupt + self.reassembly.corrupt + self.reassembly.malformed;
        report.frames = Some(self.frame_report());
    }
}
