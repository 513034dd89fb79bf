//! The sending half of a stream: buffered bytes, what was sent, acknowledged
//! and lost, and the RFC 9000 §3.1 state machine (simplified).
//!
//! ```text
//!  Ready --send--> Send --send FIN--> DataSent --all acked--> DataRecvd
//!    |               |                   |
//!    +---------------+--reset / STOP_SENDING--> ResetSent --acked--> ResetRecvd
//! ```
//!
//! Bytes stay buffered from the lowest unacknowledged offset up to the last
//! byte written; lost ranges are re-sent from that buffer. A reset drops the
//! buffer at once, which is what makes cancellation immediate.

use super::MAX_OFFSET;
use super::error::StreamError;
use super::id::StreamId;
use super::range_set::RangeSet;
use super::scheduler::Priority;
use super::send_buf::SendBuf;

/// Sending-side states of RFC 9000 §3.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendState {
    /// Opened, nothing transmitted yet.
    Ready,
    /// Some data transmitted, no FIN yet.
    Send,
    /// FIN transmitted, waiting for acknowledgements.
    DataSent,
    /// Every byte and the FIN acknowledged.
    DataRecvd,
    /// Reset (by us, or because the peer sent STOP_SENDING).
    ResetSent,
    /// The peer acknowledged the RESET_STREAM.
    ResetRecvd,
}

/// The content of one STREAM frame, chosen by the scheduler.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamChunk {
    pub id: StreamId,
    pub offset: u64,
    pub data: Vec<u8>,
    pub fin: bool,
}

/// Where one STREAM frame's content lies in its stream, without the bytes
/// (they stay in the send buffer until acknowledged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkInfo {
    pub id: StreamId,
    pub offset: u64,
    pub len: u64,
    pub fin: bool,
}

/// What an acknowledgement changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AckOutcome {
    /// Bytes acknowledged for the first time.
    pub newly_acked: u64,
    /// The stream just reached DataRecvd.
    pub finished: bool,
}

#[derive(Debug)]
pub(crate) struct SendStream {
    id: StreamId,
    state: SendState,
    priority: Priority,
    /// Bytes `[acked_offset, write_offset)`.
    buf: SendBuf,
    /// Everything below was acknowledged and dropped.
    acked_offset: u64,
    /// End of the data the application wrote.
    write_offset: u64,
    /// Highest offset ever transmitted; bytes above it are unsent.
    sent_offset: u64,
    /// Acknowledged ranges above `acked_offset`.
    acked: RangeSet,
    /// Ranges declared lost and not yet re-sent.
    lost: RangeSet,
    fin_pending: bool,
    fin_sent: bool,
    fin_acked: bool,
    fin_lost: bool,
    /// The peer's MAX_STREAM_DATA.
    max_stream_data: u64,
    /// The code of the peer's STOP_SENDING, once received.
    stop_code: Option<u64>,
    /// The application wants a Writable event the next time the stream is
    /// writable (it wrote since the last event, or the stream filled up).
    writable_armed: bool,
    /// The limit a STREAM_DATA_BLOCKED was last queued for.
    blocked_reported: Option<u64>,
}

impl SendStream {
    pub(super) fn new(id: StreamId, priority: Priority, max_stream_data: u64) -> Self {
        SendStream {
            id,
            state: SendState::Ready,
            priority,
            buf: SendBuf::new(),
            acked_offset: 0,
            write_offset: 0,
            sent_offset: 0,
            acked: RangeSet::new(),
            lost: RangeSet::new(),
            fin_pending: false,
            fin_sent: false,
            fin_acked: false,
            fin_lost: false,
            max_stream_data,
            stop_code: None,
            writable_armed: false,
            blocked_reported: None,
        }
    }

    pub(super) fn state(&self) -> SendState {
        self.state
    }

    pub(super) fn priority(&self) -> Priority {
        self.priority
    }

    pub(super) fn set_priority(&mut self, priority: Priority) {
        self.priority = priority;
    }

    /// Bytes written but never transmitted (retransmissions not counted).
    pub(super) fn unsent(&self) -> u64 {
        self.write_offset - self.sent_offset
    }

    fn accepts_writes(&self) -> bool {
        matches!(self.state, SendState::Ready | SendState::Send) && !self.fin_pending
    }

    /// How many more bytes `write` would take now.
    /// How far past the first unacknowledged byte the peer lets us send:
    /// about the receive window it grants now.
    pub(super) fn granted_ahead(&self) -> u64 {
        self.max_stream_data.saturating_sub(self.acked_offset)
    }

    fn write_room(&self, buffer_limit: u64) -> u64 {
        let buffered = self.write_offset - self.acked_offset;
        buffer_limit
            .saturating_sub(buffered)
            .min(self.max_stream_data.saturating_sub(self.write_offset))
            .min(MAX_OFFSET - self.write_offset)
    }

    /// The TCP_NOTSENT_LOWAT rule: worth writing only while the bytes that
    /// have not left yet are below the low-water mark, and a write would be
    /// accepted (buffer room and stream flow-control credit).
    pub(super) fn is_writable(&self, low_water_mark: u64, buffer_limit: u64) -> bool {
        self.accepts_writes() && self.unsent() < low_water_mark && self.write_room(buffer_limit) > 0
    }

    /// True when a Writable event is due; disarms until the next write.
    pub(super) fn take_writable_edge(&mut self, low_water_mark: u64, buffer_limit: u64) -> bool {
        if !self.is_writable(low_water_mark, buffer_limit) {
            // Crossing back below the mark later must be reported.
            self.writable_armed = self.accepts_writes();
            return false;
        }
        std::mem::replace(&mut self.writable_armed, false)
    }

    /// Keeps waiting for writability after a stale event was dropped.
    pub(super) fn rearm_writable(&mut self) {
        self.writable_armed = self.accepts_writes();
    }

    fn closed_error(&self) -> StreamError {
        match self.stop_code {
            Some(error_code) => StreamError::Stopped {
                id: self.id,
                error_code,
            },
            None => StreamError::Closed { id: self.id },
        }
    }

    /// Buffers as much of `data` as the buffer limit and the peer's stream
    /// window allow; returns how much.
    pub(super) fn write(&mut self, data: &[u8], buffer_limit: u64) -> Result<usize, StreamError> {
        let n = self.admit(data.len(), buffer_limit)?;
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    /// [`SendStream::write`] that keeps the taken part of `data` itself
    /// instead of a copy.
    pub(super) fn write_bytes(
        &mut self,
        mut data: bytes::Bytes,
        buffer_limit: u64,
    ) -> Result<usize, StreamError> {
        let n = self.admit(data.len(), buffer_limit)?;
        data.truncate(n);
        self.buf.push_bytes(data);
        Ok(n)
    }

    /// How many of `len` bytes offered a write takes, counted as written.
    fn admit(&mut self, len: usize, buffer_limit: u64) -> Result<usize, StreamError> {
        if !self.accepts_writes() {
            return Err(self.closed_error());
        }
        self.writable_armed = true;
        let room = self.write_room(buffer_limit);
        let n = usize::try_from(room).map_or(len, |r| r.min(len));
        self.write_offset += n as u64;
        Ok(n)
    }

    /// The limit to report in STREAM_DATA_BLOCKED, once per limit, when the
    /// peer's stream window stopped a write.
    pub(super) fn take_data_blocked(&mut self) -> Option<u64> {
        if self.write_offset < self.max_stream_data
            || self.blocked_reported == Some(self.max_stream_data)
        {
            return None;
        }
        self.blocked_reported = Some(self.max_stream_data);
        self.blocked_reported
    }

    pub(super) fn finish(&mut self) -> Result<(), StreamError> {
        if !self.accepts_writes() {
            return Err(self.closed_error());
        }
        self.fin_pending = true;
        Ok(())
    }

    /// Abandons the stream: drops every buffered byte and every pending
    /// retransmission. Returns the final size for RESET_STREAM, or `None`
    /// when there was nothing left to reset.
    pub(super) fn reset(&mut self) -> Option<u64> {
        if !matches!(
            self.state,
            SendState::Ready | SendState::Send | SendState::DataSent
        ) {
            return None;
        }
        self.state = SendState::ResetSent;
        self.buf = SendBuf::new();
        self.acked = RangeSet::new();
        self.lost = RangeSet::new();
        self.fin_lost = false;
        self.write_offset = self.sent_offset;
        self.writable_armed = false;
        Some(self.sent_offset)
    }

    /// The peer asked us to stop (STOP_SENDING): reset with its code.
    pub(super) fn stop(&mut self, error_code: u64) -> Option<u64> {
        let final_size = self.reset()?;
        self.stop_code = Some(error_code);
        Some(final_size)
    }

    pub(super) fn on_reset_acked(&mut self) {
        if self.state == SendState::ResetSent {
            self.state = SendState::ResetRecvd;
        }
    }

    /// Nothing more will ever be sent or re-sent.
    pub(super) fn is_done(&self) -> bool {
        matches!(
            self.state,
            SendState::DataRecvd | SendState::ResetSent | SendState::ResetRecvd
        )
    }

    /// The offset of the next chunk of this kind: exact for fresh bytes,
    /// an upper bound for retransmissions. The STREAM frame header's size
    /// depends on it.
    pub(super) fn next_offset(&self, retransmit: bool) -> u64 {
        if retransmit {
            self.write_offset
        } else {
            self.sent_offset
        }
    }

    /// Bytes (or a FIN) never sent that the stream window lets us send.
    pub(super) fn has_fresh(&self) -> bool {
        matches!(self.state, SendState::Ready | SendState::Send)
            && ((self.sent_offset < self.write_offset && self.sent_offset < self.max_stream_data)
                || (self.fin_pending && self.sent_offset == self.write_offset))
    }

    pub(super) fn has_retransmit(&self) -> bool {
        matches!(self.state, SendState::Send | SendState::DataSent)
            && (!self.lost.is_empty() || self.fin_lost)
    }

    /// Appends the buffered bytes `[offset, offset + len)` to `out`;
    /// false (and nothing appended) when they are not all buffered.
    pub(super) fn copy_range(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        let Some(start) = offset.checked_sub(self.acked_offset) else {
            return false;
        };
        let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
            return false;
        };
        self.buf.copy_to_vec(start, len, out)
    }

    #[cfg(test)]
    fn chunk(&self, c: ChunkInfo) -> StreamChunk {
        let mut data = Vec::with_capacity(c.len as usize);
        self.copy_range(c.offset, c.len, &mut data);
        StreamChunk {
            id: self.id,
            offset: c.offset,
            data,
            fin: c.fin,
        }
    }

    #[cfg(test)]
    /// New data: at most `max_len` bytes, within the stream window and the
    /// connection credit `conn_credit`.
    pub(super) fn poll_fresh(&mut self, max_len: usize, conn_credit: u64) -> Option<StreamChunk> {
        let c = self.take_fresh(max_len, conn_credit)?;
        Some(self.chunk(c))
    }

    /// New data: at most `max_len` bytes, within the stream window and the
    /// connection credit `conn_credit`. The range is marked sent but not
    /// copied; [`SendStream::copy_range`] fetches the bytes.
    pub(super) fn take_fresh(&mut self, max_len: usize, conn_credit: u64) -> Option<ChunkInfo> {
        if !matches!(self.state, SendState::Ready | SendState::Send) {
            return None;
        }
        let len = self
            .unsent()
            .min(max_len as u64)
            .min(self.max_stream_data.saturating_sub(self.sent_offset))
            .min(conn_credit);
        let fin = self.fin_pending && self.sent_offset + len == self.write_offset;
        if len == 0 && !fin {
            return None;
        }
        let chunk = ChunkInfo {
            id: self.id,
            offset: self.sent_offset,
            len,
            fin,
        };
        self.sent_offset += len;
        if fin {
            self.fin_sent = true;
            self.state = SendState::DataSent;
        } else {
            self.state = SendState::Send;
        }
        Some(chunk)
    }

    #[cfg(test)]
    /// The lowest lost range (and a lost FIN), at most `max_len` bytes.
    pub(super) fn poll_retransmit(&mut self, max_len: usize) -> Option<StreamChunk> {
        let c = self.take_retransmit(max_len)?;
        Some(self.chunk(c))
    }

    /// The lowest lost range (and a lost FIN), at most `max_len` bytes,
    /// without copying the bytes.
    pub(super) fn take_retransmit(&mut self, max_len: usize) -> Option<ChunkInfo> {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return None;
        }
        let id = self.id;
        if let Some(r) = self.lost.pop_front(max_len as u64) {
            let fin = self.fin_lost && r.end == self.write_offset;
            self.fin_lost &= !fin;
            return Some(ChunkInfo {
                id,
                offset: r.start,
                len: r.end - r.start,
                fin,
            });
        }
        if self.fin_lost && self.lost.is_empty() {
            self.fin_lost = false;
            return Some(ChunkInfo {
                id,
                offset: self.write_offset,
                len: 0,
                fin: true,
            });
        }
        None
    }

    pub(super) fn on_acked(&mut self, offset: u64, len: u64, fin: bool) -> AckOutcome {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return AckOutcome::default();
        }
        let start = offset.max(self.acked_offset);
        let end = offset.saturating_add(len).min(self.sent_offset);
        let mut newly_acked = 0;
        if start == self.acked_offset && start < end && self.acked.is_empty() {
            // In order, nothing acknowledged above: the front just moves.
            newly_acked = end - start;
            if !self.lost.is_empty() {
                self.lost.remove(start..end);
            }
            self.buf.drain_front(newly_acked as usize);
            self.acked_offset = end;
        } else if start < end {
            newly_acked = self.acked.insert(start..end);
            self.lost.remove(start..end);
        }
        if let Some(r) = self.acked.first().filter(|r| r.start == self.acked_offset) {
            self.acked.remove(r.clone());
            self.buf.drain_front((r.end - r.start) as usize);
            self.acked_offset = r.end;
        }
        if fin && self.fin_sent {
            self.fin_acked = true;
            self.fin_lost = false;
        }
        let finished = self.state == SendState::DataSent
            && self.fin_acked
            && self.acked_offset == self.write_offset;
        if finished {
            self.state = SendState::DataRecvd;
            self.buf = SendBuf::new();
        }
        AckOutcome {
            newly_acked,
            finished,
        }
    }

    /// Queues the unacknowledged part of a lost chunk for retransmission;
    /// returns whether the stream now has something to re-send.
    pub(super) fn on_lost(&mut self, offset: u64, len: u64, fin: bool) -> bool {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return false;
        }
        let start = offset.max(self.acked_offset);
        let end = offset.saturating_add(len).min(self.sent_offset);
        if start < end {
            self.lost.insert(start..end);
            for r in self.acked.overlapping(start..end) {
                self.lost.remove(r);
            }
        }
        if fin && self.fin_sent && !self.fin_acked {
            self.fin_lost = true;
        }
        self.has_retransmit()
    }

    /// Applies MAX_STREAM_DATA; returns whether the window grew.
    pub(super) fn raise_max_stream_data(&mut self, max: u64) -> bool {
        let grew = max > self.max_stream_data;
        self.max_stream_data = self.max_stream_data.max(max);
        grew
    }

    /// Replaces the window (the peer's transport parameters).
    pub(super) fn set_max_stream_data(&mut self, max: u64) {
        self.max_stream_data = max;
    }

    /// Buffered bytes: unacknowledged plus unsent.
    pub(super) fn buffered(&self) -> u64 {
        self.buf.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 1 << 20;

    fn stream(max_stream_data: u64) -> SendStream {
        SendStream::new(StreamId(0), Priority::default(), max_stream_data)
    }

    #[test]
    fn writes_stop_at_the_buffer_limit_and_the_peer_window() {
        let mut s = stream(100);
        assert_eq!(s.write(&[1; 60], 50), Ok(50), "buffer limit");
        assert_eq!(s.write(&[1; 60], 1000), Ok(50), "peer window of 100");
        assert_eq!(s.write(&[1; 60], 1000), Ok(0));
        assert_eq!(s.take_data_blocked(), Some(100));
        assert_eq!(s.take_data_blocked(), None, "reported once per limit");
        assert!(s.raise_max_stream_data(150));
        assert!(!s.raise_max_stream_data(120));
        assert_eq!(s.write(&[1; 60], 1000), Ok(50));
    }

    #[test]
    fn fresh_chunks_follow_credit_and_carry_fin_last() {
        let mut s = stream(LIMIT);
        s.write(b"hello world", LIMIT).unwrap();
        s.finish().unwrap();
        assert_eq!(
            s.write(b"x", LIMIT),
            Err(StreamError::Closed { id: StreamId(0) })
        );
        assert_eq!(
            s.poll_fresh(5, 3).unwrap().data,
            b"hel",
            "connection credit bounds the chunk"
        );
        assert_eq!(s.state(), SendState::Send);
        let c = s.poll_fresh(5, 100).unwrap();
        assert_eq!((c.offset, &c.data[..], c.fin), (3, &b"lo wo"[..], false));
        let c = s.poll_fresh(100, 100).unwrap();
        assert_eq!((c.offset, &c.data[..], c.fin), (8, &b"rld"[..], true));
        assert_eq!(s.state(), SendState::DataSent);
        assert!(s.poll_fresh(100, 100).is_none());
        assert!(!s.has_fresh());
    }

    #[test]
    fn empty_finished_stream_sends_a_bare_fin() {
        let mut s = stream(0);
        s.finish().unwrap();
        assert!(s.has_fresh());
        let c = s.poll_fresh(0, 0).unwrap();
        assert_eq!((c.offset, c.data.len(), c.fin), (0, 0, true));
        assert!(s.on_lost(0, 0, true));
        let c = s.poll_retransmit(0).unwrap();
        assert!(c.fin && c.data.is_empty());
        let out = s.on_acked(0, 0, true);
        assert!(out.finished);
        assert_eq!(s.state(), SendState::DataRecvd);
    }

    #[test]
    fn lost_ranges_skip_what_was_acked_and_resend_from_the_buffer() {
        let mut s = stream(LIMIT);
        s.write(b"0123456789", LIMIT).unwrap();
        s.finish().unwrap();
        let c = s.poll_fresh(100, 100).unwrap();
        assert!(c.fin);
        assert_eq!(s.on_acked(4, 2, false).newly_acked, 2);
        assert!(s.on_lost(0, 10, true));
        let r1 = s.poll_retransmit(100).unwrap();
        assert_eq!((r1.offset, &r1.data[..], r1.fin), (0, &b"0123"[..], false));
        let r2 = s.poll_retransmit(3).unwrap();
        assert_eq!((r2.offset, &r2.data[..], r2.fin), (6, &b"678"[..], false));
        let r3 = s.poll_retransmit(3).unwrap();
        assert_eq!((r3.offset, &r3.data[..], r3.fin), (9, &b"9"[..], true));
        assert!(s.poll_retransmit(100).is_none());
        // Acks free the buffer from the front only.
        assert_eq!(s.on_acked(6, 4, true).newly_acked, 4);
        assert_eq!(s.buffered(), 10);
        let out = s.on_acked(0, 10, false);
        assert_eq!(out.newly_acked, 4);
        assert!(out.finished);
        assert_eq!(s.buffered(), 0);
    }

    #[test]
    fn a_late_ack_cancels_a_spurious_loss() {
        let mut s = stream(LIMIT);
        s.write(&[7; 100], LIMIT).unwrap();
        s.poll_fresh(100, LIMIT).unwrap();
        assert!(s.on_lost(0, 100, false));
        s.on_acked(0, 100, false);
        assert!(!s.has_retransmit());
        assert!(s.poll_retransmit(100).is_none());
        assert_eq!(
            s.on_acked(0, 100, false).newly_acked,
            0,
            "duplicate ack counts nothing"
        );
    }

    #[test]
    fn reset_drops_everything_at_once() {
        let mut s = stream(LIMIT);
        s.write(&[1; 1000], LIMIT).unwrap();
        s.poll_fresh(300, LIMIT).unwrap();
        s.on_lost(0, 300, false);
        assert_eq!(s.reset(), Some(300), "final size is what was sent");
        assert_eq!(s.state(), SendState::ResetSent);
        assert_eq!(s.buffered(), 0);
        assert_eq!(s.unsent(), 0);
        assert!(!s.has_fresh() && !s.has_retransmit());
        assert!(s.poll_fresh(1000, LIMIT).is_none() && s.poll_retransmit(1000).is_none());
        assert!(
            !s.on_lost(0, 300, false),
            "losses after a reset are not re-sent"
        );
        assert_eq!(s.reset(), None);
        assert!(s.is_done());
        s.on_reset_acked();
        assert_eq!(s.state(), SendState::ResetRecvd);
    }

    #[test]
    fn stop_sending_resets_and_reports_the_code() {
        let mut s = stream(LIMIT);
        s.write(&[1; 10], LIMIT).unwrap();
        assert_eq!(s.stop(42), Some(0));
        assert_eq!(
            s.write(b"x", LIMIT),
            Err(StreamError::Stopped {
                id: StreamId(0),
                error_code: 42
            })
        );
        assert_eq!(
            s.finish(),
            Err(StreamError::Stopped {
                id: StreamId(0),
                error_code: 42
            })
        );
    }

    #[test]
    fn writability_follows_unsent_bytes_not_buffered_bytes() {
        let lowat = 100;
        let mut s = stream(LIMIT);
        assert!(s.is_writable(lowat, LIMIT));
        s.write(&[0; 150], LIMIT).unwrap();
        assert!(!s.is_writable(lowat, LIMIT));
        assert!(!s.take_writable_edge(lowat, LIMIT));
        s.poll_fresh(60, LIMIT).unwrap();
        // 90 unsent, 60 in flight and unacknowledged: writable again.
        assert_eq!(s.unsent(), 90);
        assert!(s.is_writable(lowat, LIMIT));
        assert!(s.take_writable_edge(lowat, LIMIT));
        assert!(
            !s.take_writable_edge(lowat, LIMIT),
            "one event per crossing"
        );
        s.write(&[0; 1], LIMIT).unwrap();
        assert!(
            s.take_writable_edge(lowat, LIMIT),
            "a write re-arms the event"
        );
        assert!(!s.is_writable(lowat, 151), "a full buffer is not writable");
    }
}
