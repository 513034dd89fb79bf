//! The receiving half of a stream: reassembly, stream-level flow control,
//! the final size, and the RFC 9000 §3.2 state machine (simplified).
//!
//! ```text
//!  Recv --FIN--> SizeKnown --all data--> DataRecvd --app read all--> DataRead
//!    |               |
//!    +---------------+--RESET_STREAM--> ResetRecvd --app told--> ResetRead
//! ```
//!
//! Every frame is checked before anything changes (RFC 9000 §4.5): data past
//! the advertised limit is a flow-control error, a final size that moves or
//! is exceeded is a final-size error.

use super::MAX_OFFSET;
use super::assembler::{Assembler, Piece};
use super::error::StreamError;
use super::flow_control::RecvWindow;
use super::id::StreamId;
use brisk_time::Instant;
use bytes::Bytes;
use std::time::Duration;

/// Receiving-side states of RFC 9000 §3.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvState {
    /// Receiving; the final size is not known yet.
    Recv,
    /// The FIN arrived; holes may remain.
    SizeKnown,
    /// Every byte up to the final size arrived.
    DataRecvd,
    /// The application read everything, FIN included.
    DataRead,
    /// The peer reset the stream; the application has not been told yet.
    ResetRecvd,
    /// The application saw the reset (or had stopped reading).
    ResetRead,
}

/// Outcome of a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadResult {
    /// Bytes copied into the caller's buffer.
    pub bytes: usize,
    /// The stream ended with these bytes; nothing more will come.
    pub fin: bool,
}

/// Outcome of a read that hands over the bytes instead of copying them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadChunk {
    /// The next contiguous bytes: a slice of the datagram they arrived in
    /// when they filled most of it, else a copy. Empty, without `fin`, when
    /// nothing is readable yet.
    pub data: Bytes,
    /// The stream ended with these bytes; nothing more will come.
    pub fin: bool,
}

/// What a local STOP_SENDING changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StopOutcome {
    /// A STOP_SENDING frame must go to the peer.
    pub send_frame: bool,
    /// Buffered bytes thrown away, whose credit the connection gets back.
    pub discarded: u64,
}

#[derive(Debug)]
pub(crate) struct RecvStream {
    id: StreamId,
    state: RecvState,
    assembler: Assembler,
    window: RecvWindow,
    final_size: Option<u64>,
    reset_code: u64,
    /// We sent STOP_SENDING: incoming bytes are dropped as they arrive.
    stopped: bool,
    /// The application wants a Readable event when data is next readable.
    readable_armed: bool,
}

impl RecvStream {
    /// A stream whose window starts at `window` bytes and may tune itself
    /// up to `cap`.
    pub(super) fn new(id: StreamId, window: u64, cap: u64) -> Self {
        RecvStream {
            id,
            state: RecvState::Recv,
            assembler: Assembler::new(),
            window: RecvWindow::new(window, cap),
            final_size: None,
            reset_code: 0,
            stopped: false,
            readable_armed: true,
        }
    }

    pub(super) fn state(&self) -> RecvState {
        self.state
    }

    /// Checks a STREAM frame without changing anything; returns how far it
    /// moves the highest received offset, which is what it costs against
    /// the connection window.
    pub(super) fn check_data(&self, offset: u64, len: u64, fin: bool) -> Result<u64, StreamError> {
        let id = self.id;
        let end = offset
            .checked_add(len)
            .filter(|e| *e <= MAX_OFFSET)
            .ok_or(StreamError::FlowControl { id })?;
        match self.final_size {
            Some(size) if end > size || (fin && end != size) => {
                return Err(StreamError::FinalSize { id });
            }
            None if fin && end < self.window.received() => {
                return Err(StreamError::FinalSize { id });
            }
            _ => {}
        }
        let more = end.saturating_sub(self.window.received());
        if !self.window.allows(more) {
            return Err(StreamError::FlowControl { id });
        }
        Ok(more)
    }

    /// Applies a frame that passed [`Self::check_data`]. Returns the bytes
    /// dropped at once because the stream was stopped.
    pub(super) fn apply_data(&mut self, offset: u64, piece: Piece<'_>, fin: bool) -> u64 {
        let end = offset + piece.data.len() as u64;
        self.window
            .record(end.saturating_sub(self.window.received()));
        if fin && self.final_size.is_none() {
            self.final_size = Some(end);
            self.state = RecvState::SizeKnown;
        }
        if !matches!(self.state, RecvState::Recv | RecvState::SizeKnown) {
            return 0;
        }
        self.assembler.insert(offset, piece);
        let discarded = if self.stopped { self.discard() } else { 0 };
        if self.state == RecvState::SizeKnown
            && self.final_size == Some(self.assembler.read_offset() + self.assembler.readable_len())
        {
            self.state = if self.stopped {
                RecvState::DataRead
            } else {
                RecvState::DataRecvd
            };
        }
        discarded
    }

    fn discard(&mut self) -> u64 {
        let n = self.assembler.discard_readable();
        self.window.consume(n);
        n
    }

    /// Checks a RESET_STREAM; returns its cost against the connection window.
    pub(super) fn check_reset(&self, final_size: u64) -> Result<u64, StreamError> {
        let id = self.id;
        if self.final_size.is_some_and(|s| s != final_size) || final_size < self.window.received() {
            return Err(StreamError::FinalSize { id });
        }
        let more = final_size - self.window.received();
        if !self.window.allows(more) {
            return Err(StreamError::FlowControl { id });
        }
        Ok(more)
    }

    /// Applies a RESET_STREAM that passed [`Self::check_reset`]. Returns the
    /// bytes up to the final size that were never read, whose credit the
    /// connection gets back, or `None` if the reset came too late to matter.
    pub(super) fn apply_reset(&mut self, error_code: u64, final_size: u64) -> Option<u64> {
        self.window.record(final_size - self.window.received());
        self.final_size = Some(final_size);
        if !matches!(self.state, RecvState::Recv | RecvState::SizeKnown) {
            return None;
        }
        self.state = if self.stopped {
            RecvState::ResetRead
        } else {
            RecvState::ResetRecvd
        };
        self.reset_code = error_code;
        self.assembler.clear();
        let released = final_size - self.window.consumed();
        self.window.consume(released);
        Some(released)
    }

    pub(super) fn read(&mut self, out: &mut [u8]) -> Result<ReadResult, StreamError> {
        self.readable()?;
        let bytes = self.assembler.read(out);
        let fin = self.consumed(bytes);
        Ok(ReadResult { bytes, fin })
    }

    /// Like [`Self::read`], handing over up to `max_len` bytes without
    /// copying them where they were kept as a slice.
    pub(super) fn read_chunk(&mut self, max_len: usize) -> Result<ReadChunk, StreamError> {
        self.readable()?;
        let data = self.assembler.read_chunk(max_len);
        let fin = self.consumed(data.len());
        Ok(ReadChunk { data, fin })
    }

    /// Like [`Self::read_chunk`], handing every readable piece (each at
    /// most `max_len` bytes) to `f` in turn, with the bookkeeping of one
    /// read: a reader that takes all there is needs no last read to learn
    /// that nothing is left.
    pub(super) fn read_each(
        &mut self,
        max_len: usize,
        f: &mut impl FnMut(Bytes),
    ) -> Result<ReadResult, StreamError> {
        self.readable()?;
        let bytes = self.assembler.read_each(max_len, f);
        let fin = self.consumed(bytes);
        Ok(ReadResult { bytes, fin })
    }

    /// Whether the application may read; reports a reset once.
    fn readable(&mut self) -> Result<(), StreamError> {
        let id = self.id;
        self.readable_armed = true;
        match self.state {
            RecvState::ResetRecvd => {
                self.state = RecvState::ResetRead;
                Err(StreamError::Reset {
                    id,
                    error_code: self.reset_code,
                })
            }
            RecvState::ResetRead | RecvState::DataRead => Err(StreamError::Closed { id }),
            _ if self.stopped => Err(StreamError::Closed { id }),
            _ => Ok(()),
        }
    }

    /// The application took `bytes`; returns whether that was the end.
    fn consumed(&mut self, bytes: usize) -> bool {
        self.window.consume(bytes as u64);
        let fin = self.final_size == Some(self.assembler.read_offset());
        if fin {
            self.state = RecvState::DataRead;
        }
        fin
    }

    /// The application heard of the reset through an event.
    pub(super) fn reset_delivered(&mut self) {
        if self.state == RecvState::ResetRecvd {
            self.state = RecvState::ResetRead;
        }
    }

    /// The application no longer wants this stream's data.
    pub(super) fn stop(&mut self) -> StopOutcome {
        match self.state {
            RecvState::Recv | RecvState::SizeKnown if !self.stopped => {
                self.stopped = true;
                StopOutcome {
                    send_frame: true,
                    discarded: self.discard(),
                }
            }
            RecvState::DataRecvd => {
                self.state = RecvState::DataRead;
                StopOutcome {
                    send_frame: false,
                    discarded: self.discard(),
                }
            }
            RecvState::ResetRecvd => {
                self.state = RecvState::ResetRead;
                StopOutcome::default()
            }
            _ => StopOutcome::default(),
        }
    }

    /// Still waiting for a STOP_SENDING to take effect (worth re-sending).
    pub(super) fn is_stopping(&self) -> bool {
        self.stopped && matches!(self.state, RecvState::Recv | RecvState::SizeKnown)
    }

    pub(super) fn wants_credit(&self) -> bool {
        self.state == RecvState::Recv && !self.stopped
    }

    /// The next limit, at `now` with the path's minimum RTT `min_rtt`;
    /// the window grows first if the peer used all of it while the
    /// application read everything it could, or if the peer reported being
    /// blocked and half of it was read within two minimum RTTs of the
    /// previous limit.
    pub(super) fn advertise(&mut self, now: Instant, min_rtt: Duration) -> u64 {
        self.window
            .advertise_tuned(now, min_rtt, self.assembler.readable_len() == 0)
    }

    /// The peer reported being blocked at `limit` on this stream.
    pub(super) fn peer_blocked_at(&mut self, limit: u64) {
        self.window.peer_blocked_at(limit);
    }

    /// The stream's current window, in bytes.
    pub(super) fn window(&self) -> u64 {
        self.window.window()
    }

    pub(super) fn is_readable(&self) -> bool {
        self.is_readable_with(self.assembler.readable_len())
    }

    /// [`Self::is_readable`] for a caller that knows the readable length.
    fn is_readable_with(&self, readable_len: u64) -> bool {
        !self.stopped
            && matches!(
                self.state,
                RecvState::Recv | RecvState::SizeKnown | RecvState::DataRecvd
            )
            && (readable_len > 0 || self.final_size == Some(self.assembler.read_offset()))
    }

    /// After a read, in one pass: whether a MAX_STREAM_DATA is worth
    /// sending (the final size is unknown and the application consumed
    /// about half a window, or half the window is received behind a hole
    /// while the application read all it could), whether a Readable event
    /// is due (disarmed then until the next read) and whether the stream
    /// is done. Every read asks all three, and the readable length they
    /// share is worked out once.
    #[inline]
    pub(super) fn after_read(&mut self) -> (bool, bool, bool) {
        let readable_len = self.assembler.readable_len();
        let credit_due = self.wants_credit()
            && (self.window.update_due() || self.window.held_by_hole(readable_len == 0));
        let readable = self.is_readable_with(readable_len)
            && std::mem::replace(&mut self.readable_armed, false);
        (credit_due, readable, self.is_done())
    }

    /// After a STREAM frame, in one pass: whether a Readable event is due
    /// (disarmed then until the next read); whether half the window is
    /// received behind a hole while the application read all it could, so
    /// the window, not the reader, is about to hold the peer and a larger
    /// limit is worth a frame now; and whether the stream is done.
    #[inline]
    pub(super) fn after_data(&mut self) -> (bool, bool, bool) {
        let readable_len = self.assembler.readable_len();
        let readable = self.is_readable_with(readable_len)
            && std::mem::replace(&mut self.readable_armed, false);
        let held = self.wants_credit() && self.window.held_by_hole(readable_len == 0);
        (readable, held, self.is_done())
    }

    /// Keeps waiting for readability after a stale event was dropped.
    pub(super) fn rearm_readable(&mut self) {
        self.readable_armed = true;
    }

    /// Nothing more will be delivered to the application.
    pub(super) fn is_done(&self) -> bool {
        matches!(self.state, RecvState::DataRead | RecvState::ResetRead)
    }

    /// Memory the reassembly buffer spans.
    pub(super) fn buffered_span(&self) -> u64 {
        self.assembler.buffered_span()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: StreamId = StreamId(1);

    fn deliver(
        r: &mut RecvStream,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<u64, StreamError> {
        let more = r.check_data(offset, data.len() as u64, fin)?;
        r.apply_data(offset, Piece::borrowed(data), fin);
        Ok(more)
    }

    fn read_all(r: &mut RecvStream) -> (Vec<u8>, bool) {
        let mut out = vec![0; 1 << 16];
        let res = r.read(&mut out).unwrap();
        out.truncate(res.bytes);
        (out, res.fin)
    }

    #[test]
    fn states_follow_data_and_fin() {
        let mut r = RecvStream::new(ID, 1000, 1000);
        assert_eq!(deliver(&mut r, 5, b"world", true), Ok(10));
        assert_eq!(r.state(), RecvState::SizeKnown);
        assert!(!r.is_readable());
        assert_eq!(
            deliver(&mut r, 0, b"hello", false),
            Ok(0),
            "below the highest offset: free"
        );
        assert_eq!(r.state(), RecvState::DataRecvd);
        assert!(r.after_data().0);
        assert_eq!(read_all(&mut r), (b"helloworld".to_vec(), true));
        assert_eq!(r.state(), RecvState::DataRead);
        assert!(r.is_done());
        assert_eq!(r.read(&mut [0; 4]), Err(StreamError::Closed { id: ID }));
    }

    #[test]
    fn data_past_the_window_is_a_flow_control_error() {
        let mut r = RecvStream::new(ID, 100, 100);
        assert_eq!(deliver(&mut r, 90, &[0; 10], false), Ok(100));
        assert_eq!(
            deliver(&mut r, 95, &[0; 6], false),
            Err(StreamError::FlowControl { id: ID })
        );
        assert_eq!(
            r.check_data(u64::MAX, 1, false),
            Err(StreamError::FlowControl { id: ID })
        );
        assert_eq!(
            r.check_data(MAX_OFFSET, 1, false),
            Err(StreamError::FlowControl { id: ID })
        );
        assert!(r.buffered_span() <= 100);
    }

    #[test]
    fn final_size_violations_are_errors() {
        let mut r = RecvStream::new(ID, 1000, 1000);
        deliver(&mut r, 0, &[0; 50], false).unwrap();
        let fs = Err(StreamError::FinalSize { id: ID });
        assert_eq!(
            r.check_data(0, 40, true),
            fs,
            "FIN below data already received"
        );
        deliver(&mut r, 0, &[0; 60], true).unwrap();
        assert_eq!(r.check_data(55, 10, false), fs, "data past the final size");
        assert_eq!(r.check_data(0, 50, true), fs, "a second, different FIN");
        assert_eq!(
            r.check_data(50, 10, true),
            Ok(0),
            "the same FIN again is fine"
        );
        assert_eq!(r.check_reset(61), fs);
        assert_eq!(r.check_reset(60), Ok(0));
    }

    #[test]
    fn reset_releases_unread_credit_and_is_reported_once() {
        let mut r = RecvStream::new(ID, 1000, 1000);
        deliver(&mut r, 0, &[0; 100], false).unwrap();
        let mut buf = [0; 30];
        r.read(&mut buf).unwrap();
        let fs = Err(StreamError::FinalSize { id: ID });
        assert_eq!(r.check_reset(99), fs, "final size below received data");
        assert_eq!(
            r.check_reset(1001),
            Err(StreamError::FlowControl { id: ID })
        );
        assert_eq!(r.check_reset(200), Ok(100));
        assert_eq!(r.apply_reset(7, 200), Some(170));
        assert_eq!(r.state(), RecvState::ResetRecvd);
        assert_eq!(r.buffered_span(), 0);
        assert_eq!(
            r.read(&mut buf),
            Err(StreamError::Reset {
                id: ID,
                error_code: 7
            })
        );
        assert_eq!(r.state(), RecvState::ResetRead);
        assert!(r.is_done());
        // Data that was in flight when the peer reset is still checked.
        assert_eq!(r.check_data(150, 60, false), fs);
        assert_eq!(r.check_data(150, 50, false), Ok(0));
    }

    #[test]
    fn credit_is_due_after_half_a_window_is_read() {
        let mut r = RecvStream::new(ID, 100, 100);
        deliver(&mut r, 0, &[0; 100], false).unwrap();
        let mut buf = [0; 49];
        r.read(&mut buf).unwrap();
        assert!(!r.after_read().0);
        r.read(&mut [0; 1]).unwrap();
        assert!(r.after_read().0);
        assert_eq!(r.advertise(Instant::ZERO, Duration::ZERO), 150);
        assert!(!r.after_read().0);
        assert_eq!(deliver(&mut r, 100, &[0; 50], false), Ok(50));
        assert_eq!(
            r.check_data(150, 1, false),
            Err(StreamError::FlowControl { id: ID })
        );
    }

    #[test]
    fn stopped_stream_drops_data_but_keeps_checking_it() {
        let mut r = RecvStream::new(ID, 100, 100);
        deliver(&mut r, 0, &[0; 40], false).unwrap();
        let out = r.stop();
        assert_eq!(
            out,
            StopOutcome {
                send_frame: true,
                discarded: 40
            }
        );
        assert!(r.is_stopping());
        assert!(!r.after_read().0, "no more credit for a stream we stopped");
        assert_eq!(
            r.check_data(90, 20, false),
            Err(StreamError::FlowControl { id: ID })
        );
        assert_eq!(r.apply_data(40, Piece::borrowed(&[0; 20]), true), 20);
        assert_eq!(r.state(), RecvState::DataRead);
        assert_eq!(r.stop(), StopOutcome::default());
        assert_eq!(r.read(&mut [0; 4]), Err(StreamError::Closed { id: ID }));
    }

    #[test]
    fn readable_edge_rearms_on_read() {
        let mut r = RecvStream::new(ID, 100, 100);
        deliver(&mut r, 0, &[0; 10], false).unwrap();
        assert!(r.after_data().0);
        deliver(&mut r, 10, &[0; 10], false).unwrap();
        assert!(!r.after_data().0, "no new event until the app reads");
        r.read(&mut [0; 5]).unwrap();
        assert!(r.after_read().1, "still readable after a short read");
        r.read(&mut [0; 100]).unwrap();
        assert!(!r.after_read().1);
    }
}
