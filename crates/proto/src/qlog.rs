//! qlog glue: a connection reports packet, recovery and ECN events to an
//! optional [`QlogSink`]; `brisk-trace`'s JSON-SEQ [`QlogWriter`] is one.
//!
//! Events are only built when a sink is set, so an untraced connection pays
//! nothing. An endpoint given a [`QlogFactory`] asks it for a sink the
//! moment a connection is created, so the trace starts with the
//! connection's first handshake packet.

use crate::frame::Frame;
use crate::packet::ConnectionId;
use brisk_time::Instant;
pub use brisk_trace::qlog::{
    ConnectionStarted, EcnState as QlogEcnState, ErrorSpace, EventClass, EventClasses, LossTrigger,
    Metrics, PacketEvent, PacketHeader, PacketType, QlogEvent, QlogFrame, QlogWriter, RawInfo,
    StreamType, TraceStart, VantageKind, VantagePoint,
};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a connection's qlog events go.
pub trait QlogSink: Send {
    /// Takes one event, stamped with the connection's clock.
    fn emit(&mut self, time: Instant, event: QlogEvent);

    /// Whether events of `class` are kept; the connection skips building
    /// the per-packet ones nobody keeps.
    fn wants(&self, _class: EventClass) -> bool {
        true
    }
}

impl<W: Write + Send> QlogSink for QlogWriter<W> {
    /// Write errors are dropped: tracing must never break the connection.
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        let _ = self.event(time, &event);
    }

    fn wants(&self, class: EventClass) -> bool {
        QlogWriter::wants(self, class)
    }
}

/// Two sinks fed the same events, e.g. a file and an in-memory analysis.
pub struct Tee(pub Box<dyn QlogSink>, pub Box<dyn QlogSink>);

impl QlogSink for Tee {
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        if self.0.wants(EventClass::of(&event)) {
            self.0.emit(time, event.clone());
        }
        self.1.emit(time, event);
    }

    fn wants(&self, class: EventClass) -> bool {
        self.0.wants(class) || self.1.wants(class)
    }
}

/// What an endpoint tells its [`QlogFactory`] about a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QlogStart {
    /// Client or server.
    pub vantage: VantageKind,
    /// When the connection was created, on the endpoint's clock.
    pub now: Instant,
    /// The peer's address.
    pub remote: SocketAddr,
    /// The client's first destination connection ID, in hex: the same at
    /// both ends, so it names and groups the two traces.
    pub group_id: String,
}

/// Makes the qlog sink of each new connection (or `None`: not traced).
/// It runs at the edge, so it may read the wall clock and open files.
#[derive(Clone)]
pub struct QlogFactory(pub Arc<MakeSink>);

/// The function inside a [`QlogFactory`].
pub(crate) type MakeSink = dyn Fn(&QlogStart) -> Option<Box<dyn QlogSink>> + Send + Sync;

impl std::fmt::Debug for QlogFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QlogFactory")
    }
}

/// A connection ID in qlog's form: lowercase hex.
pub(crate) fn hex(cid: &ConnectionId) -> String {
    format!("{cid:?}")
}

/// Collects events in memory; handy in tests.
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    /// Every event emitted, in order, with its time.
    pub events: Vec<(Instant, QlogEvent)>,
}

impl QlogSink for MemorySink {
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        self.events.push((time, event));
    }
}

impl QlogSink for std::sync::Arc<std::sync::Mutex<MemorySink>> {
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        if let Ok(mut s) = self.lock() {
            s.emit(time, event);
        }
    }
}

/// The qlog form of a frame.
pub fn frame(f: &Frame<'_>) -> QlogFrame {
    match f {
        Frame::Padding(n) => QlogFrame::Padding {
            length_bytes: *n as u64,
        },
        Frame::Ping => QlogFrame::Ping,
        Frame::Ack(a) => QlogFrame::Ack {
            ack_delay: Some(a.ack_delay),
            acked_ranges: a
                .ranges
                .iter()
                .rev()
                .map(|r| [*r.start(), *r.end()])
                .collect(),
            ect1: a.ecn.map(|e| e.ect1),
            ect0: a.ecn.map(|e| e.ect0),
            ce: a.ecn.map(|e| e.ce),
        },
        Frame::ResetStream {
            id,
            error_code,
            final_size,
        } => QlogFrame::ResetStream {
            stream_id: *id,
            error_code: *error_code,
            final_size: *final_size,
        },
        Frame::StopSending { id, error_code } => QlogFrame::StopSending {
            stream_id: *id,
            error_code: *error_code,
        },
        Frame::Stream(s) => QlogFrame::Stream {
            stream_id: s.id,
            offset: s.offset,
            length_bytes: s.data.len() as u64,
            fin: s.fin,
        },
        Frame::MaxData(m) => QlogFrame::MaxData { maximum: *m },
        Frame::MaxStreamData { id, max } => QlogFrame::MaxStreamData {
            stream_id: *id,
            maximum: *max,
        },
        Frame::MaxStreams { bidi, count } => QlogFrame::MaxStreams {
            stream_type: if *bidi {
                StreamType::Bidirectional
            } else {
                StreamType::Unidirectional
            },
            maximum: *count,
        },
        Frame::DataBlocked(l) => QlogFrame::DataBlocked { limit: *l },
        Frame::StreamDataBlocked { id, limit } => QlogFrame::StreamDataBlocked {
            stream_id: *id,
            limit: *limit,
        },
        Frame::Close(c) => QlogFrame::ConnectionClose {
            error_space: if c.frame_type.is_some() {
                ErrorSpace::Transport
            } else {
                ErrorSpace::Application
            },
            error_code: c.error_code,
            reason: String::from_utf8_lossy(c.reason).into_owned(),
        },
        Frame::HandshakeDone => QlogFrame::HandshakeDone,
        Frame::AckFrequency(a) => QlogFrame::AckFrequency {
            sequence_number: a.sequence,
            ack_eliciting_threshold: a.ack_eliciting_threshold,
            request_max_ack_delay: a.request_max_ack_delay,
        },
        Frame::Repair(r) => QlogFrame::Repair {
            first_packet_number: r.first_pn,
            source_count: r.source_count,
            repair_count: r.repair_count,
            repair_index: r.index,
            length_bytes: r.shard.len() as u64,
        },
        Frame::Repaired(r) => QlogFrame::Repaired {
            packets: r.packets,
            bursts: r.bursts,
            largest_packet_number: r.largest_pn,
        },
        Frame::Datagram(d) => QlogFrame::Datagram {
            length_bytes: d.data.len() as u64,
        },
        // The migration frames are logged by type only for now.
        Frame::NewConnectionId(_)
        | Frame::RetireConnectionId(_)
        | Frame::PathChallenge(_)
        | Frame::PathResponse(_) => QlogFrame::Unknown {
            raw_frame_type: f.frame_type().into(),
        },
    }
}

/// The qlog name of an ECN validation state.
pub fn ecn_state(s: crate::ecn_validation::EcnState) -> QlogEcnState {
    match s {
        crate::ecn_validation::EcnState::Testing => QlogEcnState::Testing,
        crate::ecn_validation::EcnState::Capable => QlogEcnState::Capable,
        crate::ecn_validation::EcnState::Failed => QlogEcnState::Failed,
    }
}
