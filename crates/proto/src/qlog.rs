//! qlog glue: a connection reports packet, recovery and ECN events to an
//! optional [`QlogSink`]; `brisk-trace`'s JSON-SEQ [`QlogWriter`] is one.
//!
//! Events are only built when a sink is set, so an untraced connection pays
//! nothing.

use crate::frame::Frame;
use brisk_time::Instant;
pub use brisk_trace::qlog::{
    EcnState as QlogEcnState, ErrorSpace, LossTrigger, Metrics, PacketEvent, PacketHeader,
    PacketType, QlogEvent, QlogFrame, QlogWriter, RawInfo, StreamType,
};
use std::io::Write;

/// Where a connection's qlog events go.
pub trait QlogSink: Send {
    fn emit(&mut self, time: Instant, event: QlogEvent);
}

impl<W: Write + Send> QlogSink for QlogWriter<W> {
    /// Write errors are dropped: tracing must never break the connection.
    fn emit(&mut self, time: Instant, event: QlogEvent) {
        let _ = self.event(time, &event);
    }
}

/// Collects events in memory; handy in tests.
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
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
