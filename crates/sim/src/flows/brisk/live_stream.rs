//! Live streaming after OK.ru's OKMP: a publisher sending FullHD-class
//! video at a rate that follows the path, and a player with a jitter
//! buffer, measured glass to glass (capture to screen).
//!
//! The publisher captures a frame every `1/fps` and sizes it with the
//! encoder ([`stream_encoder`](super::stream_encoder)): a bitrate ladder
//! of 1 to 6 Mbit/s, a key frame every 2 s, the rung chosen from what the
//! transport reports (its send queue, RTT samples, rate estimate, and the
//! bytes it got acknowledged). The viewer's side is the player
//! ([`stream_player`](super::stream_player)).
//!
//! **Delivery: one reliable stream, not datagrams.** A live viewer sits
//! `buffer` (hundreds of milliseconds) behind the publisher, several
//! round trips even on a 220 ms path, so a lost packet can be sent again
//! in time, and every frame arrives. A call cannot wait that long (its
//! 150 ms budget is under one such round trip), which is why the call
//! uses datagrams with FEC and gives up late frames. The player shows
//! frames in order and a predicted frame cannot be decoded without the
//! ones before it, so in-order delivery on one stream costs the player
//! nothing a per-frame stream would save. The flow's `fec` policy
//! protects the stream's packets as it does any stream's.
//!
//! Frames are written whole, in capture order; what the transport does
//! not take yet waits in the publisher and counts in its backlog. The
//! publisher's last frame is captured at the flow's stop, when it
//! finishes the stream; the player is measured up to the same moment.

use super::messages::Reassembly;
use super::report::{StreamReport, TransportReport};
use super::seq::Tracer;
use super::stream_encoder::{Encoder, PathState};
use super::stream_player::{FrameArrival, play};
use super::workload::{
    Fnv64, UNIT_HEADER_LEN, UnitHeader, Workload, next_tick, sending_stream, unit_bytes, write_some,
};
use crate::flows::AppReport;
use brisk_proto::Connection;
use brisk_proto::streams::{StreamEvent, StreamId};
use brisk_time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// The delivery rate the encoder steps down to is measured over this.
const DELIVERY_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct LiveStream {
    key: u64,
    fps: u32,
    period: Duration,
    start: Instant,
    stop: Instant,
    /// The player's start-up and refill buffer.
    buffer: Duration,
    encoder: Encoder,
    stream: Option<StreamId>,
    next_frame: Instant,
    /// Frame bytes the transport has not taken yet, and how many of them
    /// went in.
    pending: Vec<u8>,
    pending_done: usize,
    /// Every frame captured: (when, bytes), in sequence order.
    captured: Vec<(Instant, u64)>,
    written: u64,
    /// (when, bytes acknowledged so far) over the last
    /// [`DELIVERY_WINDOW`], one sample per frame.
    acked: VecDeque<(Instant, u64)>,
    sent_hash: Fnv64,
    finished: bool,
    rx: Reassembly,
}

impl LiveStream {
    pub fn new(
        key: u64,
        fps: u32,
        buffer: Duration,
        fixed_bps: Option<u64>,
        start: Instant,
        stop: Instant,
    ) -> Self {
        let fps = fps.max(1);
        LiveStream {
            key,
            fps,
            period: Duration::from_secs(1) / fps,
            start,
            stop,
            buffer,
            encoder: Encoder::new(fps, fixed_bps),
            stream: None,
            next_frame: start,
            pending: Vec::new(),
            pending_done: 0,
            captured: Vec::new(),
            written: 0,
            acked: VecDeque::new(),
            sent_hash: Fnv64::default(),
            finished: false,
            rx: Reassembly::default(),
        }
    }

    /// What the transport says about the path now; records the bytes
    /// acknowledged so far.
    fn path_state(&mut self, now: Instant, conn: &Connection, id: StreamId) -> PathState {
        let streams = conn.streams();
        let acked = self.written - streams.send_buffered_bytes(id);
        self.acked.push_back((now, acked));
        while self
            .acked
            .front()
            .is_some_and(|(t, _)| now - *t > DELIVERY_WINDOW)
        {
            self.acked.pop_front();
        }
        let delivered_bps = self.acked.front().map_or(0, |(t, a)| {
            let span = (now - *t).as_secs_f64();
            if span > 0.0 {
                ((acked - a) as f64 * 8.0 / span) as u64
            } else {
                0
            }
        });
        let stats = conn.stats();
        let srtt = stats.smoothed_rtt.as_secs_f64().max(1e-6);
        PathState {
            estimate_bps: (stats.pacing_window_bytes as f64 * 8.0 / srtt) as u64,
            delivered_bps,
            backlog_bytes: (self.pending.len() - self.pending_done) as u64
                + streams.unsent_bytes(id),
            queue_delay: stats.latest_rtt.saturating_sub(stats.min_rtt),
        }
    }

    /// Hands the transport what it takes of the pending bytes; true if
    /// any went in.
    fn write_pending(&mut self, conn: &mut Connection, id: StreamId) -> bool {
        let before = self.pending_done;
        if !write_some(conn, id, &self.pending, &mut self.pending_done) {
            return false;
        }
        self.sent_hash
            .update(&self.pending[before..self.pending_done]);
        self.written += (self.pending_done - before) as u64;
        true
    }

    fn capture(&mut self, now: Instant, conn: &Connection, id: StreamId) {
        let path = self.path_state(now, conn, id);
        let frame = self
            .encoder
            .next_frame(path)
            .bytes
            .max(UNIT_HEADER_LEN as u64);
        let seq = self.captured.len() as u64;
        let header = UnitHeader {
            len_bytes: u32::try_from(frame).unwrap_or(u32::MAX),
            seq,
            written_at: now,
        };
        let bytes = unit_bytes(self.key ^ seq, header);
        self.pending.drain(..self.pending_done);
        self.pending_done = 0;
        self.pending.extend_from_slice(&bytes);
        self.captured.push((now, bytes.len() as u64));
    }

    /// What the viewer saw.
    fn stream_report(&self) -> StreamReport {
        let mut arrived = vec![None; self.captured.len()];
        for u in &self.rx.read {
            if let Some(a) = arrived.get_mut(u.seq as usize) {
                *a = Some(u.at);
            }
        }
        let frames: Vec<FrameArrival> = self
            .captured
            .iter()
            .zip(arrived)
            .map(|(&(captured, bytes), arrived)| FrameArrival {
                captured,
                arrived,
                bytes,
            })
            .collect();
        let pb = play(&frames, self.buffer, self.period, self.stop);
        StreamReport {
            fps: self.fps,
            buffer: self.buffer,
            frames_sent: self.captured.len() as u64,
            frames_shown: pb.latencies.len() as u64,
            frames_skipped: pb.skipped,
            startup: pb.started_at.map(|t| t - self.start),
            rebuffering_ratio: pb.rebuffering_ratio(),
            shown_bps: pb.shown_bps(),
            stalled: pb.stalled,
            stalls: pb.stalls,
            glass_to_glass: pb.latencies,
            encoded_bps: self.encoder.mean_rate_bps(),
            rung_switches: self.encoder.switches,
        }
    }
}

impl Workload for LiveStream {
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
        let mut progressed = self.write_pending(conn, id);
        if now >= self.next_frame && now < self.stop {
            self.next_frame = next_tick(self.start, self.period, now);
            self.capture(now, conn, id);
            self.write_pending(conn, id);
            progressed = true;
        }
        if now >= self.stop && self.pending_done >= self.pending.len() && !self.finished {
            let _ = conn.finish(id);
            self.finished = true;
            progressed = true;
        }
        progressed
    }

    fn receiver_writes(&self) -> bool {
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.finished {
            return None;
        }
        // Bytes the transport has not taken wait for the stream, not for
        // the clock; the stream is finished at the stop.
        Some(if self.next_frame < self.stop {
            self.next_frame
        } else {
            self.stop
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
        report.stream = Some(self.stream_report());
    }
}
