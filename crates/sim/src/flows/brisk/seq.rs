//! tcptrace-style time-sequence data from the sender's qlog events.
//!
//! The chart's y axis is one byte space for the whole connection: each
//! stream the application writes is placed at a base offset it registers
//! (the bytes it wrote before), so a bulk stream, a run of messages or a
//! series of video frames read as one sequence, as a TCP connection's would.
//! From the events the sender's connection emits:
//! - a STREAM frame sent beyond the stream's highest byte so far is `Data`,
//!   one below it a `Retransmit`;
//! - each ACK frame received gives the cumulative ACK (the contiguous
//!   acknowledged prefix of the byte space) and the window's right edge
//!   (the peer's connection-level MAX_DATA); it is marked `ce` when the
//!   peer's CE count grew.
//!
//! Frames of unregistered streams (control, requests) are left out.

use brisk_proto::qlog::{PacketType, QlogEvent, QlogFrame, QlogSink};
use brisk_time::Instant;
use brisk_trace::plot::{SeqEvent, SeqKind};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a stream sits in the connection's byte space.
#[derive(Debug, Clone, Copy)]
struct Placement {
    base: u64,
    len_bytes: u64,
}

/// Builds the events as the connection reports packets.
#[derive(Debug, Default)]
struct Recorder {
    streams: BTreeMap<u64, Placement>,
    /// Highest stream offset sent so far, per stream.
    sent_end: BTreeMap<u64, u64>,
    /// Byte-space ranges carried by each unacknowledged packet.
    in_flight: BTreeMap<u64, Vec<(u64, u64)>>,
    /// Acknowledged (or abandoned) byte-space ranges not yet joined to the
    /// cumulative ACK: start -> end.
    acked: BTreeMap<u64, u64>,
    cumulative: u64,
    window_edge: u64,
    ce_count: u64,
    events: Vec<SeqEvent>,
}

impl Recorder {
    fn push(&mut self, at: Instant, start: u64, end: u64, kind: SeqKind, ce: bool) {
        self.events.push(SeqEvent {
            time_s: at.as_secs_f64(),
            start,
            end,
            kind,
            ce,
        });
    }

    fn on_stream_sent(&mut self, at: Instant, pn: u64, id: u64, offset: u64, len: u64) {
        let Some(p) = self.streams.get(&id).copied() else {
            return;
        };
        if len == 0 {
            return;
        }
        let end = offset.saturating_add(len);
        let high = self.sent_end.entry(id).or_insert(0);
        let old_high = *high;
        *high = old_high.max(end);
        let (s, e) = (p.base.saturating_add(offset), p.base.saturating_add(end));
        let split = p.base.saturating_add(old_high).clamp(s, e);
        if split > s {
            self.push(at, s, split, SeqKind::Retransmit, false);
        }
        if e > split {
            self.push(at, split, e, SeqKind::Data, false);
        }
        self.in_flight.entry(pn).or_default().push((s, e));
    }

    fn mark_acked(&mut self, start: u64, end: u64) {
        if end <= self.cumulative {
            return;
        }
        let start = start.max(self.cumulative);
        let e = self.acked.entry(start).or_insert(end);
        *e = (*e).max(end);
        // Join ranges that now touch the cumulative point.
        while let Some((&s, &e)) = self.acked.first_key_value() {
            if s > self.cumulative {
                break;
            }
            self.acked.pop_first();
            self.cumulative = self.cumulative.max(e);
        }
    }

    fn on_ack(&mut self, at: Instant, ranges: &[[u64; 2]], ce: Option<u64>) {
        for &[first, last] in ranges {
            let pns: Vec<u64> = self
                .in_flight
                .range(first..=last)
                .map(|(pn, _)| *pn)
                .collect();
            for pn in pns {
                for (s, e) in self.in_flight.remove(&pn).unwrap_or_default() {
                    self.mark_acked(s, e);
                }
            }
        }
        let ce_grew = ce.is_some_and(|c| c > self.ce_count);
        self.ce_count = self.ce_count.max(ce.unwrap_or(0));
        let (cumulative, edge) = (self.cumulative, self.window_edge.max(self.cumulative));
        self.push(at, cumulative, edge, SeqKind::Ack, ce_grew);
    }
}

impl QlogSink for Tracer {
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        let Some(mut r) = self.lock() else { return };
        match event {
            QlogEvent::PacketSent(p) if p.header.packet_type == PacketType::OneRtt => {
                for f in &p.frames {
                    if let QlogFrame::Stream {
                        stream_id,
                        offset,
                        length_bytes,
                        ..
                    } = *f
                    {
                        r.on_stream_sent(
                            time,
                            p.header.packet_number,
                            stream_id,
                            offset,
                            length_bytes,
                        );
                    }
                }
            }
            QlogEvent::PacketReceived(p) => {
                for f in &p.frames {
                    match f {
                        QlogFrame::MaxData { maximum } => {
                            r.window_edge = r.window_edge.max(*maximum)
                        }
                        QlogFrame::Ack {
                            acked_ranges, ce, ..
                        } => r.on_ack(time, acked_ranges, *ce),
                        _ => {}
                    }
                }
            }
            QlogEvent::PacketLost { header, .. } => {
                r.in_flight.remove(&header.packet_number);
            }
            _ => {}
        }
    }
}

/// A handle on the recorder, shared by the sender's connection (as its
/// qlog sink) and the application (which places its streams). The
/// disabled handle records nothing and costs nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tracer(Option<Arc<Mutex<Recorder>>>);

impl Tracer {
    /// A recording tracer; `window_bytes` is the receiver's initial
    /// connection window.
    pub fn enabled(window_bytes: u64) -> Self {
        Tracer(Some(Arc::new(Mutex::new(Recorder {
            window_edge: window_bytes,
            ..Recorder::default()
        }))))
    }

    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    fn lock(&self) -> Option<MutexGuard<'_, Recorder>> {
        self.0.as_ref()?.lock().ok()
    }

    /// Places stream `id` at `base` of the byte space; `len_bytes` is how
    /// much the application will write on it (`u64::MAX` if unknown).
    pub fn place(&self, id: u64, base: u64, len_bytes: u64) {
        if let Some(mut r) = self.lock() {
            r.streams.insert(id, Placement { base, len_bytes });
        }
    }

    /// The application gave up on stream `id` (a reset frame): its bytes
    /// no longer hold the cumulative ACK back.
    pub fn abandon(&self, id: u64) {
        if let Some(mut r) = self.lock()
            && let Some(p) = r.streams.get(&id).copied()
        {
            r.mark_acked(p.base, p.base.saturating_add(p.len_bytes));
        }
    }

    /// Everything recorded so far.
    pub fn events(&self) -> Vec<SeqEvent> {
        self.lock().map(|r| r.events.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_proto::qlog::{PacketEvent, PacketHeader};

    fn sent(pn: u64, frames: Vec<QlogFrame>) -> QlogEvent {
        QlogEvent::PacketSent(PacketEvent {
            header: PacketHeader {
                packet_type: PacketType::OneRtt,
                packet_number: pn,
            },
            frames,
            raw: None,
        })
    }

    fn stream(id: u64, offset: u64, len: u64) -> QlogFrame {
        QlogFrame::Stream {
            stream_id: id,
            offset,
            length_bytes: len,
            fin: false,
        }
    }

    fn ack(ranges: Vec<[u64; 2]>, ce: u64) -> QlogEvent {
        QlogEvent::PacketReceived(PacketEvent {
            header: PacketHeader {
                packet_type: PacketType::OneRtt,
                packet_number: 0,
            },
            frames: vec![QlogFrame::Ack {
                ack_delay: None,
                acked_ranges: ranges,
                ect1: Some(0),
                ect0: Some(0),
                ce: Some(ce),
            }],
            raw: None,
        })
    }

    #[test]
    fn data_retransmissions_and_cumulative_acks_in_one_byte_space() {
        let mut t = Tracer::enabled(10_000);
        t.place(2, 0, 100);
        t.place(6, 100, 50);
        let at = Instant::from_millis(1);
        t.emit(at, sent(0, vec![stream(2, 0, 60)]));
        t.emit(at, sent(1, vec![stream(2, 60, 40), stream(6, 0, 50)]));
        // Stream 99 is not placed: left out.
        t.emit(at, sent(2, vec![stream(99, 0, 10)]));
        // Packet 0 is lost and sent again; packet 1 is acknowledged first.
        t.emit(at, ack(vec![[1, 1]], 0));
        t.emit(
            at,
            QlogEvent::PacketLost {
                header: PacketHeader {
                    packet_type: PacketType::OneRtt,
                    packet_number: 0,
                },
                frames: vec![],
                trigger: None,
            },
        );
        t.emit(at, sent(3, vec![stream(2, 0, 60)]));
        t.emit(at, ack(vec![[1, 3]], 2));
        let e = t.events();
        let kinds: Vec<(SeqKind, u64, u64, bool)> =
            e.iter().map(|e| (e.kind, e.start, e.end, e.ce)).collect();
        assert_eq!(
            kinds,
            vec![
                (SeqKind::Data, 0, 60, false),
                (SeqKind::Data, 60, 100, false),
                (SeqKind::Data, 100, 150, false),
                (SeqKind::Ack, 0, 10_000, false),
                (SeqKind::Retransmit, 0, 60, false),
                (SeqKind::Ack, 150, 10_000, true),
            ]
        );
    }

    #[test]
    fn abandoned_streams_release_the_cumulative_ack() {
        let mut t = Tracer::enabled(0);
        t.place(2, 0, 100);
        t.place(6, 100, 100);
        let at = Instant::ZERO;
        t.emit(at, sent(0, vec![stream(2, 0, 100)]));
        t.emit(at, sent(1, vec![stream(6, 0, 100)]));
        t.abandon(2);
        t.emit(at, ack(vec![[1, 1]], 0));
        let last = t.events().last().copied().unwrap();
        assert_eq!((last.start, last.end), (200, 200));
        assert!(!Tracer::default().is_enabled());
        Tracer::default().place(1, 0, 1);
        assert!(Tracer::default().events().is_empty());
    }
}
