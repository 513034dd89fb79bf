//! Multiplexed streams: every stream of one connection, both directions.
//!
//! A pure state machine between the application and the connection. The
//! application opens, writes, reads, finishes, resets and stops streams; the
//! connection asks [`Streams::poll_transmit`] for the next STREAM frame
//! content, reports acknowledgements and losses, feeds in the peer's stream
//! frames, and sends what [`Streams::poll_control`] returns reliably.
//!
//! Design points:
//! - No head-of-line blocking across streams: each stream reassembles on its
//!   own, so a hole in one never delays reading another.
//! - Strict priority across [`Priority`] levels, round-robin within a level,
//!   lost data before new data within a level ([`scheduler`]).
//! - Cancellation is immediate: a reset drops the stream's buffered and
//!   lost-but-unsent bytes, and nothing of it is transmitted again.
//! - The TCP_NOTSENT_LOWAT idea: a stream is writable only while its unsent
//!   bytes are below the low-water mark, so an application that writes one
//!   unit per [`StreamEvent::Writable`] never lets data go stale in the send
//!   buffer (120 KB queued behind a 50 KB/s link is 2.4 s of delay; with a
//!   16 KiB mark it is about 0.35 s).
//! - Flow control per stream and per connection (RFC 9000 §4); a peer can
//!   make us buffer at most the receive window it was given.
//! - Bulk data is not copied on the way in: in-order bytes stay in the
//!   datagram they were decrypted into, as [`bytes::Bytes`] slices that
//!   [`Streams::read_chunk`] hands over ([`Streams::read`] copies once).
//!
//! Modules: [`id`] stream ids, [`error`] errors and RFC 9000 codes,
//! [`range_set`] interval sets, [`byte_queue`] chunked byte storage,
//! [`assembler`] reassembly, [`flow_control`]
//! credit, [`send`] and [`recv`] the two halves of a stream, [`scheduler`]
//! the send order.

mod assembler;
mod byte_queue;
mod error;
mod flow_control;
mod id;
mod range_set;
mod recv;
mod scheduler;
mod send;
mod send_buf;
#[cfg(test)]
mod tests;

use brisk_time::Instant;
use bytes::Bytes;
/// Streams owed an event or a frame, in ID order.
type IdSet = crate::small_set::SmallSet<StreamId>;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

pub(crate) use assembler::Piece;
pub use error::StreamError;
pub use id::{Side, StreamId};
pub use recv::{ReadChunk, ReadResult, RecvState};
pub use scheduler::Priority;
pub(crate) use send::ChunkInfo;
pub use send::SendState;
#[cfg(test)]
pub(crate) use send::StreamChunk;

use crate::frame::StreamFrame;
use flow_control::{RecvWindow, SendCredit};
use recv::RecvStream;
use scheduler::{Queue, Scheduler};
use send::SendStream;

/// One stream's send buffer bounds: `send_buffer_limit` and
/// `send_buffer_limit_max` of [`StreamsConfig`].
#[derive(Debug, Clone, Copy)]
struct BufferLimits {
    base: u64,
    max: u64,
}

impl BufferLimits {
    /// What `s` may hold before the connection's room is counted: the
    /// configured size, or as much as the peer lets it send past its first
    /// unacknowledged byte, up to `max`.
    fn of(self, s: &SendStream) -> u64 {
        self.base.max(s.granted_ahead().min(self.max))
    }
}

/// Largest stream offset a 62-bit varint can carry (RFC 9000 §4.5).
pub(crate) const MAX_OFFSET: u64 = (1 << 62) - 1;

/// Limits this endpoint grants the peer, and its own send-side knobs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamsConfig {
    /// Bidirectional streams the peer may have open at once.
    pub max_streams_bidi: u64,
    /// Unidirectional streams the peer may have open at once.
    pub max_streams_uni: u64,
    /// Bytes the peer may send on one stream beyond what the app has read.
    pub stream_receive_window: u64,
    /// The same, summed over all streams.
    pub connection_receive_window: u64,
    /// The most a stream's receive window grows to when the peer keeps
    /// using all of it while the application keeps up (see
    /// `flow_control`); at or below `stream_receive_window`, windows stay
    /// fixed.
    pub stream_receive_window_max: u64,
    /// The most the connection's receive window grows to; it grows to one
    /// and a half times the largest stream window, so that one stream's
    /// grown window is not cut by the connection's.
    pub connection_receive_window_max: u64,
    /// Bytes one stream may hold, unacknowledged plus unsent.
    pub send_buffer_limit: u64,
    /// The most one stream's buffer grows to while the peer grants a
    /// larger stream window than `send_buffer_limit`: the buffer then
    /// follows that window, which the peer grows only when it held the
    /// sender back (see `flow_control`), so the sender's own buffer does
    /// not hold back a path whose receiver asked for more. At or below
    /// `send_buffer_limit` the buffer stays fixed.
    pub send_buffer_limit_max: u64,
    /// Bytes all streams of the connection may hold together, so a peer
    /// that opens many streams and reads none pins at most this much of
    /// our memory; never below `send_buffer_limit`, so one stream can
    /// always fill its own buffer.
    pub connection_send_buffer_limit: u64,
    /// A stream is writable only while fewer bytes than this wait unsent.
    pub low_water_mark: u64,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            max_streams_bidi: 100,
            max_streams_uni: 100,
            stream_receive_window: 1 << 20,
            connection_receive_window: 4 << 20,
            // Chromium's limits for the same tuning: room for a lossy
            // 100 Mbit/s path at 300 ms, and a bound on what one
            // connection's out-of-order data can pin.
            stream_receive_window_max: 16 << 20,
            connection_receive_window_max: 24 << 20,
            send_buffer_limit: 1 << 20,
            send_buffer_limit_max: 16 << 20,
            connection_send_buffer_limit: 4 << 20,
            low_water_mark: 16 << 10,
        }
    }
}

impl StreamsConfig {
    fn max_streams(&self, dir: usize) -> u64 {
        if dir == BIDI {
            self.max_streams_bidi
        } else {
            self.max_streams_uni
        }
    }
}

/// Limits the peer granted us at the start of the connection (its transport
/// parameters). Later changes arrive as MAX_* frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerLimits {
    pub max_streams_bidi: u64,
    pub max_streams_uni: u64,
    /// Initial MAX_DATA.
    pub max_data: u64,
    /// Initial MAX_STREAM_DATA of every stream.
    pub max_stream_data: u64,
}

impl PeerLimits {
    /// What an endpoint configured with `config` grants its peer.
    pub(crate) fn granted_by(config: &StreamsConfig) -> Self {
        PeerLimits {
            max_streams_bidi: config.max_streams_bidi,
            max_streams_uni: config.max_streams_uni,
            max_data: config.connection_receive_window,
            max_stream_data: config.stream_receive_window,
        }
    }
}

/// Something the application should hear about. Word-sized tag: see
/// [`crate::Event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum StreamEvent {
    /// The peer opened a stream; also queued for [`Streams::accept`].
    Opened(StreamId),
    /// Data (or the end of the stream) can be read. Sent again after each
    /// read that leaves data behind.
    Readable(StreamId),
    /// Unsent bytes fell below the low-water mark (or credit arrived) since
    /// the application's last write: time to write one more unit.
    Writable(StreamId),
    /// Everything sent on the stream, FIN included, was acknowledged.
    Finished(StreamId),
    /// The peer reset its sending half, with this error code. Delivering
    /// this event counts as the application reading the reset: later reads
    /// report [`StreamError::Closed`].
    Reset(StreamId, u64),
    /// The peer sent STOP_SENDING with this code; our half was reset.
    Stopped(StreamId, u64),
    /// After [`Streams::open`] failed, the peer's MAX_STREAMS grew.
    Available {
        /// Whether bidirectional streams became available.
        bidi: bool,
    },
}

/// A frame the connection must deliver reliably; if a packet carrying one is
/// lost, give it back with [`Streams::on_control_lost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlFrame {
    MaxData(u64),
    MaxStreamData {
        id: StreamId,
        max: u64,
    },
    MaxStreams {
        bidi: bool,
        count: u64,
    },
    ResetStream {
        id: StreamId,
        error_code: u64,
        final_size: u64,
    },
    StopSending {
        id: StreamId,
        error_code: u64,
    },
    /// Informational: new data waits for connection credit at this limit.
    DataBlocked(u64),
    /// Informational: a write was cut short by the stream window.
    StreamDataBlocked {
        id: StreamId,
        limit: u64,
    },
}

/// Byte counters over the connection's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamsStats {
    /// New bytes handed out by `poll_transmit`.
    pub bytes_sent: u64,
    /// Bytes handed out again after a loss.
    pub bytes_retransmitted: u64,
    /// Bytes acknowledged, each counted once.
    pub bytes_acked: u64,
    /// Bytes received from the peer, each offset counted once.
    pub bytes_received: u64,
    /// Bytes read by the application.
    pub bytes_read: u64,
}

const BIDI: usize = 0;
const UNI: usize = 1;

fn dir(bidi: bool) -> usize {
    if bidi { BIDI } else { UNI }
}

/// Which half of a stream a peer's frame is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    /// STREAM, RESET_STREAM: the peer sends, we receive.
    Recv,
    /// MAX_STREAM_DATA, STOP_SENDING: about what we send.
    Send,
}

#[derive(Debug)]
struct Stream {
    send: Option<SendStream>,
    recv: Option<RecvStream>,
}

/// All streams of one connection.
///
/// Call order for the connection: feed inputs (`handle_*`, `on_chunk_*`,
/// `on_control_*`), then drain `poll_control` (small and urgent: credit and
/// resets) before `poll_transmit`, and `poll_event` for the application.
#[derive(Debug)]
pub struct Streams {
    side: Side,
    config: StreamsConfig,
    streams: BTreeMap<StreamId, Stream>,
    /// Next index we open, per direction.
    next_local: [u64; 2],
    /// The peer's MAX_STREAMS.
    peer_max_streams: [u64; 2],
    /// Next index the peer has not opened yet.
    next_remote: [u64; 2],
    /// Peer-opened streams fully closed and forgotten.
    remote_closed: [u64; 2],
    /// The MAX_STREAMS we advertised.
    local_max_streams: [u64; 2],
    /// The peer's initial MAX_STREAM_DATA for new streams.
    peer_max_stream_data: u64,
    conn_send: SendCredit,
    conn_recv: RecvWindow,
    scheduler: Scheduler,
    accept_queue: VecDeque<StreamId>,
    events: VecDeque<StreamEvent>,
    /// Streams with a Readable / Writable event due (checked again when
    /// polled, so stale ones are skipped).
    readable: IdSet,
    writable: IdSet,
    control: VecDeque<ControlFrame>,
    max_data_due: bool,
    max_streams_due: [bool; 2],
    max_stream_data_due: IdSet,
    data_blocked_reported: Option<u64>,
    open_blocked: [bool; 2],
    /// Bytes all sending halves hold (unacknowledged plus unsent).
    send_buffered: u64,
    /// Streams a write found short of connection-wide buffer room: they
    /// hear Writable once acknowledgements free some.
    budget_blocked: IdSet,
    stats: StreamsStats,
}

impl Streams {
    /// Streams for one endpoint. Until [`Streams::set_peer_limits`] says
    /// otherwise, the peer is assumed to grant what `config` grants it.
    /// Values past the protocol's limits are clamped.
    pub(crate) fn new(side: Side, config: StreamsConfig) -> Self {
        let mut config = config;
        config.max_streams_bidi = config.max_streams_bidi.min(StreamId::MAX_COUNT);
        config.max_streams_uni = config.max_streams_uni.min(StreamId::MAX_COUNT);
        config.stream_receive_window = config.stream_receive_window.min(MAX_OFFSET);
        config.connection_receive_window = config.connection_receive_window.min(MAX_OFFSET);
        config.stream_receive_window_max = config.stream_receive_window_max.min(MAX_OFFSET);
        config.connection_receive_window_max = config.connection_receive_window_max.min(MAX_OFFSET);
        config.connection_send_buffer_limit = config
            .connection_send_buffer_limit
            .max(config.send_buffer_limit);
        let peer = PeerLimits::granted_by(&config);
        Streams {
            side,
            next_local: [0; 2],
            peer_max_streams: [peer.max_streams_bidi, peer.max_streams_uni],
            next_remote: [0; 2],
            remote_closed: [0; 2],
            local_max_streams: [config.max_streams_bidi, config.max_streams_uni],
            peer_max_stream_data: peer.max_stream_data,
            conn_send: SendCredit::new(peer.max_data),
            conn_recv: RecvWindow::new(
                config.connection_receive_window,
                config.connection_receive_window_max,
            ),
            config,
            streams: BTreeMap::new(),
            scheduler: Scheduler::new(),
            accept_queue: VecDeque::new(),
            events: VecDeque::new(),
            readable: IdSet::default(),
            writable: IdSet::default(),
            control: VecDeque::new(),
            max_data_due: false,
            max_streams_due: [false; 2],
            max_stream_data_due: IdSet::default(),
            data_blocked_reported: None,
            open_blocked: [false; 2],
            send_buffered: 0,
            budget_blocked: IdSet::default(),
            stats: StreamsStats::default(),
        }
    }

    // ---- getters ----

    /// Whether these are a client's or a server's streams.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The limits and windows this side grants.
    pub fn config(&self) -> &StreamsConfig {
        &self.config
    }

    /// Byte counters over the connection's lifetime.
    pub fn stats(&self) -> StreamsStats {
        self.stats
    }

    /// Streams not yet fully closed and forgotten.
    pub fn live_streams(&self) -> usize {
        self.streams.len()
    }

    /// The sending half's state (RFC 9000 §3.1), if `id` has one.
    pub fn send_state(&self, id: StreamId) -> Option<SendState> {
        self.streams.get(&id)?.send.as_ref().map(SendStream::state)
    }

    /// The receiving half's state (RFC 9000 §3.2), if `id` has one.
    pub fn recv_state(&self, id: StreamId) -> Option<RecvState> {
        self.streams.get(&id)?.recv.as_ref().map(RecvStream::state)
    }

    /// Whether a receiving half still waits for bytes: its peer has not
    /// sent (or we have not received) all of it, and it was not reset.
    pub(crate) fn receiving(&self) -> bool {
        self.streams.values().any(|s| {
            s.recv
                .as_ref()
                .is_some_and(|r| matches!(r.state(), RecvState::Recv | RecvState::SizeKnown))
        })
    }

    /// Bytes written on `id` and never transmitted (0 for unknown streams).
    pub fn unsent_bytes(&self, id: StreamId) -> u64 {
        self.send_half(id).map_or(0, SendStream::unsent)
    }

    /// True only while `id`'s unsent bytes are below the low-water mark and
    /// a write would be accepted (buffer room, stream flow-control credit).
    pub fn is_writable(&self, id: StreamId) -> bool {
        self.send_half(id)
            .is_some_and(|s| s.is_writable(self.config.low_water_mark, self.send_limit(s)))
    }

    /// Bytes all streams hold for sending: unacknowledged plus unsent.
    pub fn connection_send_buffered_bytes(&self) -> u64 {
        self.send_buffered
    }

    /// Buffer room `id` has left, within its own limit and the
    /// connection's.
    pub fn send_room(&self, id: StreamId) -> u64 {
        self.send_half(id)
            .map_or(0, |s| self.send_limit(s).saturating_sub(s.buffered()))
    }

    /// Bytes `id` holds for sending: unacknowledged plus unsent.
    pub fn send_buffered_bytes(&self, id: StreamId) -> u64 {
        self.send_half(id).map_or(0, SendStream::buffered)
    }

    /// Memory held by `id`'s reassembly buffer, in bytes.
    pub fn recv_buffered_bytes(&self, id: StreamId) -> u64 {
        self.streams
            .get(&id)
            .and_then(|s| s.recv.as_ref())
            .map_or(0, RecvStream::buffered_span)
    }

    // ---- application API ----

    /// Opens a stream of ours, if the peer's MAX_STREAMS allows it.
    pub(crate) fn open(&mut self, bidi: bool, priority: Priority) -> Result<StreamId, StreamError> {
        let d = dir(bidi);
        if self.next_local[d] >= self.peer_max_streams[d] {
            self.open_blocked[d] = true;
            return Err(StreamError::StreamsBlocked { bidi });
        }
        let id = StreamId::new(self.side, bidi, self.next_local[d]);
        self.next_local[d] += 1;
        let stream = self.new_stream(id, priority);
        self.streams.insert(id, stream);
        Ok(id)
    }

    /// The next stream the peer opened.
    pub(crate) fn accept(&mut self) -> Option<StreamId> {
        self.accept_queue.pop_front()
    }

    /// Buffers what the buffer limit and the peer's stream window allow;
    /// `Ok(0)` means try again after a Writable event.
    pub(crate) fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        self.write_with(id, data.len(), |s, limit| s.write(data, limit))
    }

    /// [`Streams::write`] that keeps the taken part of `data` instead of a
    /// copy.
    pub(crate) fn write_bytes(&mut self, id: StreamId, data: Bytes) -> Result<usize, StreamError> {
        let len = data.len();
        self.write_with(id, len, |s, limit| s.write_bytes(data, limit))
    }

    /// A write of `len` bytes that `put` buffers, up to the limit it is
    /// given.
    fn write_with(
        &mut self,
        id: StreamId,
        len: usize,
        put: impl FnOnce(&mut SendStream, u64) -> Result<usize, StreamError>,
    ) -> Result<usize, StreamError> {
        let room = self.connection_send_room();
        let limits = self.buffer_limits();
        let s = self.app_send(id)?;
        let stream_limit = limits.of(s);
        let limit = stream_limit.min(s.buffered().saturating_add(room));
        let n = put(s, limit)?;
        let blocked = if n < len { s.take_data_blocked() } else { None };
        let (fresh, priority) = (s.has_fresh(), s.priority());
        self.send_buffered += n as u64;
        if n < len && limit < stream_limit {
            self.budget_blocked.insert(id);
        }
        if fresh {
            self.scheduler.push(id, priority, Queue::Fresh);
        }
        if let Some(limit) = blocked {
            self.control
                .push_back(ControlFrame::StreamDataBlocked { id, limit });
        }
        self.update_writable(id);
        Ok(n)
    }

    /// Ends the stream after the data already written.
    pub(crate) fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        let s = self.app_send(id)?;
        s.finish()?;
        let (fresh, priority) = (s.has_fresh(), s.priority());
        if fresh {
            self.scheduler.push(id, priority, Queue::Fresh);
        }
        self.writable.remove(&id);
        Ok(())
    }

    /// Cancels the sending half: buffered and lost data is dropped now and
    /// never transmitted again; the peer gets RESET_STREAM.
    pub(crate) fn reset(&mut self, id: StreamId, error_code: u64) -> Result<(), StreamError> {
        let s = self.app_send(id)?;
        let before = s.buffered();
        let reset = s.reset();
        let after = s.buffered();
        self.release_send_buffer(before.saturating_sub(after));
        if let Some(final_size) = reset {
            self.cancel_send(id);
            self.control.push_back(ControlFrame::ResetStream {
                id,
                error_code,
                final_size,
            });
            self.collect(id);
        }
        Ok(())
    }

    /// Asks the peer to stop sending; data already buffered or still
    /// arriving is dropped and its credit returned.
    pub(crate) fn stop_sending(
        &mut self,
        id: StreamId,
        error_code: u64,
    ) -> Result<(), StreamError> {
        let r = self.app_recv(id)?;
        let out = r.stop();
        if out.send_frame {
            self.control
                .push_back(ControlFrame::StopSending { id, error_code });
        }
        self.readable.remove(&id);
        self.max_stream_data_due.remove(&id);
        self.release_conn_credit(out.discarded);
        self.collect(id);
        Ok(())
    }

    /// Reads contiguous bytes. `Ok` with 0 bytes and no FIN means nothing
    /// is readable yet; a reset stream reports [`StreamError::Reset`] once,
    /// unless the [`StreamEvent::Reset`] was polled first.
    pub(crate) fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<ReadResult, StreamError> {
        let r = self.app_recv(id)?;
        let result = r.read(buf);
        let bytes = result.map_or(0, |res| res.bytes);
        let due = r.after_read();
        self.after_read(id, bytes, due);
        result
    }

    /// Like [`Self::read`], handing over up to `max_len` bytes as one
    /// [`bytes::Bytes`]: without a copy when they filled most of the
    /// datagram they came in (the bulk case), else copied once.
    pub(crate) fn read_chunk(
        &mut self,
        id: StreamId,
        max_len: usize,
    ) -> Result<ReadChunk, StreamError> {
        let r = self.app_recv(id)?;
        let result = r.read_chunk(max_len);
        let bytes = result.as_ref().map_or(0, |c| c.data.len());
        let due = r.after_read();
        self.after_read(id, bytes, due);
        result
    }

    /// Every readable piece of `id`, each at most `max_len` bytes, handed
    /// to `f` in order without copying; the same as reading chunks until
    /// one comes back empty, in one call.
    pub(crate) fn read_each(
        &mut self,
        id: StreamId,
        max_len: usize,
        mut f: impl FnMut(Bytes),
    ) -> Result<ReadResult, StreamError> {
        let r = self.app_recv(id)?;
        let result = r.read_each(max_len, &mut f);
        let bytes = result.as_ref().map_or(0, |r| r.bytes);
        let due = r.after_read();
        self.after_read(id, bytes, due);
        result
    }

    /// Book-keeping after the application read `bytes` of `id`, which
    /// left it owing credit, readable and its receiving half done as
    /// `(credit_due, readable, done)` say.
    fn after_read(
        &mut self,
        id: StreamId,
        bytes: usize,
        (credit_due, readable, done): (bool, bool, bool),
    ) {
        if credit_due {
            self.max_stream_data_due.insert(id);
        }
        if readable {
            self.readable.insert(id);
        }
        self.stats.bytes_read += bytes as u64;
        self.release_conn_credit(bytes as u64);
        // A stream is forgotten only once its receiving half is done.
        if done {
            self.collect(id);
        }
    }

    pub(crate) fn set_priority(
        &mut self,
        id: StreamId,
        priority: Priority,
    ) -> Result<(), StreamError> {
        let s = self.app_send(id)?;
        s.set_priority(priority);
        self.scheduler.set_priority(id, priority);
        Ok(())
    }

    // ---- transport side ----

    /// Applies the peer's transport parameters. Call before any stream data
    /// is transmitted: the values replace the assumed ones.
    pub(crate) fn set_peer_limits(&mut self, limits: PeerLimits) {
        self.peer_max_streams = [
            limits.max_streams_bidi.min(StreamId::MAX_COUNT),
            limits.max_streams_uni.min(StreamId::MAX_COUNT),
        ];
        self.conn_send.set(limits.max_data.min(MAX_OFFSET));
        self.peer_max_stream_data = limits.max_stream_data.min(MAX_OFFSET);
        let ids: Vec<StreamId> = self.streams.keys().copied().collect();
        for id in ids {
            if let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
                s.set_max_stream_data(self.peer_max_stream_data);
                if s.has_fresh() {
                    self.scheduler.push(id, s.priority(), Queue::Fresh);
                }
            }
            self.update_writable(id);
        }
        for bidi in [true, false] {
            self.announce_available(bidi);
        }
    }

    /// The next STREAM frame content, at most `max_len` data bytes: most
    /// urgent level first; within it lost data before new data, streams
    /// taking turns; never past the peer's windows.
    #[cfg(test)]
    pub(crate) fn poll_transmit(&mut self, max_len: usize) -> Option<StreamChunk> {
        let c = self.poll_chunk(max_len)?;
        let mut data = Vec::with_capacity(c.len as usize);
        if let Some(s) = self.streams.get(&c.id).and_then(|s| s.send.as_ref()) {
            s.copy_range(c.offset, c.len, &mut data);
        }
        Some(StreamChunk {
            id: c.id,
            offset: c.offset,
            data,
            fin: c.fin,
        })
    }

    /// Like [`Streams::poll_transmit`], but leaves the bytes in the send
    /// buffer.
    #[cfg(test)]
    pub(crate) fn poll_chunk(&mut self, max_len: usize) -> Option<ChunkInfo> {
        self.poll_chunk_within(Budget::Data(max_len), None)
            .map(|(c, _)| c)
    }

    /// Like [`Streams::poll_chunk`], for a STREAM frame of at most
    /// `frame_len` bytes, header included: the header is sized for the
    /// stream and offset chosen, so a full packet ends exactly at its
    /// budget (equal-sized packets can leave as one GSO train). The frame,
    /// header and bytes, is appended to `out` while the stream is at hand
    /// (a second lookup per packet otherwise); the flag is false, with
    /// nothing appended, if the chunk's bytes are no longer buffered.
    pub(crate) fn poll_frame_chunk(
        &mut self,
        frame_len: usize,
        out: &mut Vec<u8>,
    ) -> Option<(ChunkInfo, bool)> {
        self.poll_chunk_within(Budget::Frame(frame_len), Some(out))
    }

    fn poll_chunk_within(
        &mut self,
        budget: Budget,
        mut out: Option<&mut Vec<u8>>,
    ) -> Option<(ChunkInfo, bool)> {
        let mut conn_blocked = false;
        let mut level = self.scheduler.next_level(None);
        while let Some(l) = level {
            for q in [Queue::Retransmit, Queue::Fresh] {
                if let Some(chunk) =
                    self.transmit_from(l, q, budget, &mut conn_blocked, out.as_deref_mut())
                {
                    return Some(chunk);
                }
            }
            level = self.scheduler.next_level(Some(l));
        }
        let limit = self.conn_send.max();
        if conn_blocked && self.data_blocked_reported != Some(limit) {
            self.data_blocked_reported = Some(limit);
            self.control.push_back(ControlFrame::DataBlocked(limit));
        }
        None
    }

    /// Tries each stream queued at `level` for `q` once, in turn; the
    /// chunk found goes to `out` as a STREAM frame if given.
    fn transmit_from(
        &mut self,
        level: u8,
        q: Queue,
        budget: Budget,
        conn_blocked: &mut bool,
        out: Option<&mut Vec<u8>>,
    ) -> Option<(ChunkInfo, bool)> {
        let (lowat, limits) = (self.config.low_water_mark, self.buffer_limits());
        let room = self.connection_send_room();
        let mut turns = None;
        loop {
            // One lookup of the queue per stream tried.
            let queue = self.scheduler.queue_mut(level, q)?;
            let left = turns.get_or_insert(queue.len());
            if *left == 0 {
                return None;
            }
            *left -= 1;
            let id = *queue.front()?;
            let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                self.scheduler.pop(level, q);
                continue;
            };
            let credit = self.conn_send.available();
            let max_len = match budget {
                #[cfg(test)]
                Budget::Data(len) => len,
                Budget::Frame(len) => {
                    let offset = s.next_offset(q == Queue::Retransmit);
                    len.saturating_sub(StreamFrame::header_len(id.0, offset, len))
                }
            };
            let (chunk, more) = match q {
                Queue::Retransmit => (s.take_retransmit(max_len), s.has_retransmit()),
                Queue::Fresh => (s.take_fresh(max_len, credit), s.has_fresh()),
            };
            // A stream that still has work goes to the back of its queue
            // (its level is its priority: set_priority keeps them equal);
            // alone in it, it is already there.
            if more {
                if queue.len() > 1 {
                    queue.pop_front();
                    queue.push_back(id);
                }
            } else {
                self.scheduler.pop(level, q);
            }
            let Some(chunk) = chunk else {
                *conn_blocked |= q == Queue::Fresh && more && credit == 0;
                continue;
            };
            let limit = limits.of(s).min(s.buffered().saturating_add(room));
            let writable = s.take_writable_edge(lowat, limit);
            let len = chunk.len;
            match q {
                Queue::Retransmit => self.stats.bytes_retransmitted += len,
                Queue::Fresh => {
                    self.conn_send.consume(len);
                    self.stats.bytes_sent += len;
                }
            }
            if writable {
                self.writable.insert(id);
            }
            let copied = out.is_some_and(|out| {
                let frame_start = out.len();
                StreamFrame::emit_header(id.0, chunk.offset, len as usize, chunk.fin, out);
                let copied = s.copy_range(chunk.offset, len, out);
                if !copied {
                    out.truncate(frame_start);
                }
                copied
            });
            return Some((chunk, copied));
        }
    }

    pub(crate) fn on_chunk_acked(&mut self, id: StreamId, offset: u64, len: u64, fin: bool) {
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        let before = s.buffered();
        let out = s.on_acked(offset, len, fin);
        let freed = before.saturating_sub(s.buffered());
        self.release_send_buffer(freed);
        let room = self.connection_send_room();
        let (lowat, limits) = (self.config.low_water_mark, self.buffer_limits());
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if s.take_writable_edge(lowat, limits.of(s).min(s.buffered().saturating_add(room))) {
            self.writable.insert(id);
        }
        self.stats.bytes_acked += out.newly_acked;
        if out.finished {
            self.events.push_back(StreamEvent::Finished(id));
            // Only this transition can complete the sending half here.
            self.collect(id);
        }
    }

    /// Queues the chunk's bytes again, unless the stream was reset or they
    /// were acknowledged meanwhile.
    pub(crate) fn on_chunk_lost(&mut self, id: StreamId, offset: u64, len: u64, fin: bool) {
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if s.on_lost(offset, len, fin) {
            self.scheduler.push(id, s.priority(), Queue::Retransmit);
        }
    }

    /// A STREAM frame from the peer. Errors are connection errors.
    pub(crate) fn handle_stream_frame(
        &mut self,
        id: StreamId,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<(), StreamError> {
        self.handle_stream_piece(id, offset, Piece::borrowed(data), fin)
    }

    /// [`Self::handle_stream_frame`] for bytes that may be kept as a slice
    /// of the datagram they arrived in.
    pub(crate) fn handle_stream_piece(
        &mut self,
        id: StreamId,
        offset: u64,
        piece: Piece<'_>,
        fin: bool,
    ) -> Result<(), StreamError> {
        let data = piece.data;
        self.peer_frame_stream_opened(id, Half::Recv)?;
        let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        let more = r.check_data(offset, data.len() as u64, fin)?;
        if !self.conn_recv.allows(more) {
            return Err(StreamError::FlowControl { id });
        }
        self.conn_recv.record(more);
        self.stats.bytes_received += more;
        let discarded = r.apply_data(offset, piece, fin);
        let (readable, held, done) = r.after_data();
        if readable {
            self.readable.insert(id);
        }
        if held {
            self.max_stream_data_due.insert(id);
        }
        self.release_conn_credit(discarded);
        // A stream is forgotten only once its receiving half is done.
        if done {
            self.collect(id);
        }
        Ok(())
    }

    /// A RESET_STREAM from the peer. Errors are connection errors.
    pub(crate) fn handle_reset(
        &mut self,
        id: StreamId,
        error_code: u64,
        final_size: u64,
    ) -> Result<(), StreamError> {
        if !self.peer_frame_stream(id, Half::Recv)? {
            return Ok(());
        }
        let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        let more = r.check_reset(final_size)?;
        if !self.conn_recv.allows(more) {
            return Err(StreamError::FlowControl { id });
        }
        self.conn_recv.record(more);
        let released = r.apply_reset(error_code, final_size);
        let tell_app = r.state() == RecvState::ResetRecvd;
        if let Some(released) = released {
            if tell_app {
                self.events.push_back(StreamEvent::Reset(id, error_code));
            }
            self.readable.remove(&id);
            self.max_stream_data_due.remove(&id);
            self.release_conn_credit(released);
        }
        self.collect(id);
        Ok(())
    }

    /// A STOP_SENDING from the peer: our half is reset with its code.
    pub(crate) fn handle_stop_sending(
        &mut self,
        id: StreamId,
        error_code: u64,
    ) -> Result<(), StreamError> {
        if !self.peer_frame_stream(id, Half::Send)? {
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return Ok(());
        };
        let before = s.buffered();
        let stopped = s.stop(error_code);
        let after = s.buffered();
        self.release_send_buffer(before.saturating_sub(after));
        if let Some(final_size) = stopped {
            self.cancel_send(id);
            self.control.push_back(ControlFrame::ResetStream {
                id,
                error_code,
                final_size,
            });
            self.events.push_back(StreamEvent::Stopped(id, error_code));
            self.collect(id);
        }
        Ok(())
    }

    pub(crate) fn handle_max_data(&mut self, max: u64) {
        self.conn_send.raise(max.min(MAX_OFFSET));
    }

    pub(crate) fn handle_max_stream_data(
        &mut self,
        id: StreamId,
        max: u64,
    ) -> Result<(), StreamError> {
        if !self.peer_frame_stream(id, Half::Send)? {
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return Ok(());
        };
        if s.raise_max_stream_data(max.min(MAX_OFFSET)) {
            if s.has_fresh() {
                self.scheduler.push(id, s.priority(), Queue::Fresh);
            }
            self.update_writable(id);
        }
        Ok(())
    }

    /// The peer says its sending half of `id` was blocked at `limit`
    /// (STREAM_DATA_BLOCKED): a sign for the stream's window tuning. A
    /// stream we do not hold, or no longer receive on, is ignored.
    pub(crate) fn handle_stream_data_blocked(&mut self, id: StreamId, limit: u64) {
        if let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut())
            && r.wants_credit()
        {
            r.peer_blocked_at(limit);
        }
    }

    pub(crate) fn handle_max_streams(&mut self, bidi: bool, max: u64) {
        let d = dir(bidi);
        self.peer_max_streams[d] = self.peer_max_streams[d].max(max.min(StreamId::MAX_COUNT));
        self.announce_available(bidi);
    }

    /// The peer acknowledged a control frame we sent.
    pub(crate) fn on_control_acked(&mut self, frame: ControlFrame) {
        if let ControlFrame::ResetStream { id, .. } = frame
            && let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut())
        {
            s.on_reset_acked();
        }
    }

    /// A packet carrying `frame` was lost: send it (or a fresher value) again
    /// if it still matters.
    pub(crate) fn on_control_lost(&mut self, frame: ControlFrame) {
        match frame {
            ControlFrame::MaxData(_) => self.max_data_due = true,
            ControlFrame::MaxStreams { bidi, .. } => self.max_streams_due[dir(bidi)] = true,
            ControlFrame::MaxStreamData { id, .. } => {
                if self.recv_half(id).is_some_and(RecvStream::wants_credit) {
                    self.max_stream_data_due.insert(id);
                }
            }
            ControlFrame::ResetStream { id, .. } => {
                if self.send_state(id) != Some(SendState::ResetRecvd) {
                    self.control.push_back(frame);
                }
            }
            ControlFrame::StopSending { id, .. } => {
                if self.recv_half(id).is_some_and(RecvStream::is_stopping) {
                    self.control.push_back(frame);
                }
            }
            ControlFrame::DataBlocked(_) => self.data_blocked_reported = None,
            ControlFrame::StreamDataBlocked { .. } => {}
        }
    }

    /// Whether [`Streams::poll_control`] or a chunk poll might give
    /// anything: false means both would give nothing and change nothing,
    /// so a sender with no ACK due can skip starting a packet.
    pub(crate) fn may_have_frames(&self) -> bool {
        self.may_have_control() || !self.scheduler.is_empty()
    }

    /// Whether [`Streams::poll_control`] may have a frame: false only when
    /// it surely has none, so a packet skips asking.
    pub(crate) fn may_have_control(&self) -> bool {
        !self.control.is_empty()
            || self.max_data_due
            || self.max_streams_due.contains(&true)
            || !self.max_stream_data_due.is_empty()
    }

    /// The next frame to send reliably, at `now` with the path's minimum
    /// RTT `min_rtt` (a stream's receive window tunes itself by how soon
    /// half of it is read again).
    pub(crate) fn poll_control(&mut self, now: Instant, min_rtt: Duration) -> Option<ControlFrame> {
        if let Some(frame) = self.control.pop_front() {
            return Some(frame);
        }
        if std::mem::take(&mut self.max_data_due) {
            // The connection's window grows only with its streams' (below).
            return Some(ControlFrame::MaxData(self.conn_recv.advertise()));
        }
        for bidi in [true, false] {
            let d = dir(bidi);
            if std::mem::take(&mut self.max_streams_due[d]) {
                let count =
                    (self.remote_closed[d] + self.config.max_streams(d)).min(StreamId::MAX_COUNT);
                self.local_max_streams[d] = self.local_max_streams[d].max(count);
                return Some(ControlFrame::MaxStreams {
                    bidi,
                    count: self.local_max_streams[d],
                });
            }
        }
        while let Some(id) = self.max_stream_data_due.pop_first() {
            if let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut())
                && r.wants_credit()
            {
                let before = r.window();
                let max = r.advertise(now, min_rtt);
                if r.window() > before {
                    self.conn_recv.widen_to(r.window().saturating_mul(3) / 2);
                }
                return Some(ControlFrame::MaxStreamData { id, max });
            }
        }
        None
    }

    /// The next thing the application should hear about.
    pub(crate) fn poll_event(&mut self) -> Option<StreamEvent> {
        if !self.may_have_event() {
            return None;
        }
        if let Some(event) = self.events.pop_front() {
            if let StreamEvent::Reset(id, _) = event
                && let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut())
            {
                // Telling the application is what RFC 9000 §3.2 calls reading
                // the reset; the stream can then be forgotten.
                r.reset_delivered();
                self.collect(id);
            }
            return Some(event);
        }
        while let Some(id) = self.readable.pop_first() {
            if let Some(r) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) {
                if r.is_readable() {
                    return Some(StreamEvent::Readable(id));
                }
                r.rearm_readable();
            }
        }
        let (lowat, limits) = (self.config.low_water_mark, self.buffer_limits());
        let room = self.connection_send_room();
        while let Some(id) = self.writable.pop_first() {
            if let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
                if s.is_writable(lowat, limits.of(s).min(s.buffered().saturating_add(room))) {
                    return Some(StreamEvent::Writable(id));
                }
                s.rearm_writable();
            }
        }
        None
    }

    /// Whether [`Streams::poll_event`] might give anything: false means it
    /// would give nothing and change nothing.
    pub(crate) fn may_have_event(&self) -> bool {
        !self.events.is_empty() || !self.readable.is_empty() || !self.writable.is_empty()
    }

    // ---- internals ----

    fn is_local(&self, id: StreamId) -> bool {
        id.initiator() == self.side
    }

    fn can_send(&self, id: StreamId) -> bool {
        id.is_bidi() || self.is_local(id)
    }

    fn can_recv(&self, id: StreamId) -> bool {
        id.is_bidi() || !self.is_local(id)
    }

    fn new_stream(&self, id: StreamId, priority: Priority) -> Stream {
        Stream {
            send: self
                .can_send(id)
                .then(|| SendStream::new(id, priority, self.peer_max_stream_data)),
            recv: self.can_recv(id).then(|| {
                RecvStream::new(
                    id,
                    self.config.stream_receive_window,
                    self.config.stream_receive_window_max,
                )
            }),
        }
    }

    fn send_half(&self, id: StreamId) -> Option<&SendStream> {
        self.streams.get(&id)?.send.as_ref()
    }

    fn recv_half(&self, id: StreamId) -> Option<&RecvStream> {
        self.streams.get(&id)?.recv.as_ref()
    }

    /// The error for a stream the application names but we do not hold.
    fn missing(&self, id: StreamId) -> StreamError {
        let d = dir(id.is_bidi());
        let opened = if self.is_local(id) {
            self.next_local[d]
        } else {
            self.next_remote[d]
        };
        if id.index() < opened {
            StreamError::Closed { id }
        } else {
            StreamError::UnknownStream { id }
        }
    }

    fn app_send(&mut self, id: StreamId) -> Result<&mut SendStream, StreamError> {
        if !self.can_send(id) {
            return Err(StreamError::WrongDirection { id });
        }
        let missing = self.missing(id);
        self.streams
            .get_mut(&id)
            .and_then(|s| s.send.as_mut())
            .ok_or(missing)
    }

    fn app_recv(&mut self, id: StreamId) -> Result<&mut RecvStream, StreamError> {
        if !self.can_recv(id) {
            return Err(StreamError::WrongDirection { id });
        }
        let missing = self.missing(id);
        self.streams
            .get_mut(&id)
            .and_then(|s| s.recv.as_mut())
            .ok_or(missing)
    }

    /// Validates the stream a peer's frame names, opening the peer streams
    /// it implies (RFC 9000 §3.2). `Ok(false)`: closed already, ignore it.
    fn peer_frame_stream(&mut self, id: StreamId, half: Half) -> Result<bool, StreamError> {
        self.peer_frame_stream_opened(id, half)?;
        Ok(self.streams.contains_key(&id))
    }

    /// [`Self::peer_frame_stream`] without the final look-up, for a caller
    /// that looks the stream up next anyway.
    fn peer_frame_stream_opened(&mut self, id: StreamId, half: Half) -> Result<(), StreamError> {
        let d = dir(id.is_bidi());
        let local = self.is_local(id);
        if !id.is_bidi() && local == (half == Half::Recv) {
            // The peer cannot send on our unidirectional streams, nor ask
            // about sending on its own.
            return Err(StreamError::StreamState { id });
        }
        if local {
            if id.index() >= self.next_local[d] {
                return Err(StreamError::StreamState { id });
            }
        } else {
            if id.index() >= self.local_max_streams[d] {
                return Err(StreamError::StreamLimit { id });
            }
            while self.next_remote[d] <= id.index() {
                let opened = StreamId::new(self.side.peer(), id.is_bidi(), self.next_remote[d]);
                self.next_remote[d] += 1;
                let stream = self.new_stream(opened, Priority::default());
                self.streams.insert(opened, stream);
                self.accept_queue.push_back(opened);
                self.events.push_back(StreamEvent::Opened(opened));
            }
        }
        Ok(())
    }

    fn update_writable(&mut self, id: StreamId) {
        let (lowat, limits) = (self.config.low_water_mark, self.buffer_limits());
        let room = self.connection_send_room();
        if let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut())
            && s.take_writable_edge(lowat, limits.of(s).min(s.buffered().saturating_add(room)))
        {
            self.writable.insert(id);
        }
    }

    /// Room left in the connection-wide send buffer.
    fn connection_send_room(&self) -> u64 {
        self.config
            .connection_send_buffer_limit
            .saturating_sub(self.send_buffered)
    }

    /// What one stream may hold: its own limit, or less when the other
    /// streams leave less of the connection's room.
    fn send_limit(&self, s: &SendStream) -> u64 {
        self.buffer_limits()
            .of(s)
            .min(s.buffered().saturating_add(self.connection_send_room()))
    }

    /// The configured bounds of one stream's send buffer.
    fn buffer_limits(&self) -> BufferLimits {
        BufferLimits {
            base: self.config.send_buffer_limit,
            max: self.config.send_buffer_limit_max,
        }
    }

    /// `bytes` of send buffer were freed (acknowledged, or dropped by a
    /// reset): streams a write found short of connection-wide room may
    /// take more now, and are told so.
    fn release_send_buffer(&mut self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.send_buffered = self.send_buffered.saturating_sub(bytes);
        while let Some(id) = self.budget_blocked.pop_first() {
            if let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
                s.rearm_writable();
                self.writable.insert(id);
            }
        }
    }

    /// After a reset: nothing of the stream may be scheduled or announced.
    fn cancel_send(&mut self, id: StreamId) {
        self.scheduler.remove(id);
        self.writable.remove(&id);
    }

    fn release_conn_credit(&mut self, bytes: u64) {
        self.conn_recv.consume(bytes);
        if self.conn_recv.update_due() {
            self.max_data_due = true;
        }
    }

    fn announce_available(&mut self, bidi: bool) {
        let d = dir(bidi);
        if self.open_blocked[d] && self.next_local[d] < self.peer_max_streams[d] {
            self.open_blocked[d] = false;
            self.events.push_back(StreamEvent::Available { bidi });
        }
    }

    /// Forgets `id` once both halves are done; a peer stream's slot then
    /// goes back to the peer through MAX_STREAMS.
    fn collect(&mut self, id: StreamId) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let done = s.send.as_ref().is_none_or(SendStream::is_done)
            && s.recv.as_ref().is_none_or(RecvStream::is_done);
        if !done {
            return;
        }
        if let Some(send) = self.streams.remove(&id).and_then(|s| s.send) {
            self.release_send_buffer(send.buffered());
        }
        self.budget_blocked.remove(&id);
        self.scheduler.remove(id);
        self.readable.remove(&id);
        self.writable.remove(&id);
        self.max_stream_data_due.remove(&id);
        if !self.is_local(id) {
            let d = dir(id.is_bidi());
            self.remote_closed[d] += 1;
            let max = self.config.max_streams(d);
            let count = (self.remote_closed[d] + max).min(StreamId::MAX_COUNT);
            if count.saturating_sub(self.local_max_streams[d]) >= max.div_ceil(2).max(1) {
                self.max_streams_due[d] = true;
            }
        }
    }
}

/// What a chunk must fit in: its data alone, or a whole STREAM frame.
#[derive(Debug, Clone, Copy)]
enum Budget {
    /// Data bytes alone (the tests' copying `poll_transmit`).
    #[cfg(test)]
    Data(usize),
    Frame(usize),
}
