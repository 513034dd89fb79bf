//! Datagrams in: handshake packets, 1-RTT packets and their frames, ACK
//! processing and the reaction to losses.

use super::{ConnState, Connection, Event, hs_payload, parse_hs_payload};
use crate::congestion::{AckSample, EcnCounts, LossSample};
use crate::ecn_validation::EcnState;
use crate::error::{ConnectionError, code};
use crate::frame::{AckFrame, AckFrequencyFrame, Frame, FrameIter, StreamFrame, ty};
use crate::handshake::HandshakePayload;
use crate::loss::{LossDetection, LostBatch};
use crate::packet::{HeaderView, LOCAL_CID_LEN, Layout, LongType, decode_packet_number};
use crate::qlog::{self, LossTrigger, PacketEvent, PacketHeader, PacketType, QlogEvent, RawInfo};
use crate::sent_packets::{SentFrame, SentFrames, SentPacket};
use crate::streams::{Piece, Side, StreamError, StreamId, Streams};
use crate::transport_params::MAX_ACK_DELAY_LIMIT;
use brisk_time::Instant;
use brisk_wire::Ecn;
use bytes::{Buf, Bytes, BytesMut};
use std::net::SocketAddr;

/// Frames of a packet kept from the validating parse to act on.
const KEPT_FRAMES: usize = 2;

/// Room for newly acknowledged packets kept between ACKs however few the
/// last ones acknowledged.
const KEPT_ACKED: usize = 64;

/// Decryption buffers a connection may keep for reuse however small its
/// receive window, and the most it keeps once a backlog is read.
pub(super) const RX_BUFS_MIN: usize = 64;

/// A decryption buffer of the pool and the bytes of room it was made
/// with: free of slices, it can take a packet of at most that size.
pub(super) struct RxBuf {
    buf: BytesMut,
    room: usize,
}

/// A received datagram: borrowed from the caller, or handed over.
enum Datagram<'a> {
    Borrowed(&'a [u8]),
    Owned(BytesMut),
}

impl Datagram<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Datagram::Borrowed(b) => b,
            Datagram::Owned(b) => b,
        }
    }
}

/// A short-header packet: where it lies, and whether it must be copied to
/// be decrypted.
enum ShortPacket<'a> {
    Borrowed(&'a [u8]),
    Owned(BytesMut),
}

/// What a short header says, read before the packet is taken apart.
struct ShortHeader {
    dcid_ok: bool,
    pn: crate::packet::TruncatedPn,
    header_len: usize,
}

impl Connection {
    /// A UDP payload from `remote` arrived with `ecn` in its IP header.
    /// Anything that does not parse, authenticate or fit the state is
    /// dropped and counted in [`crate::ConnectionStats::dropped`].
    ///
    /// The packet is copied once, to be decrypted; a caller that owns the
    /// buffer spares the copy with [`Connection::handle_datagram_owned`].
    pub fn handle_datagram(&mut self, now: Instant, remote: SocketAddr, ecn: Ecn, data: &[u8]) {
        self.handle_datagram_from(now, remote, ecn, Datagram::Borrowed(data), None);
    }

    /// Like [`Connection::handle_datagram`], for a datagram whose first
    /// header the endpoint validated while routing it, with the layout it
    /// found: the header is not parsed a second time.
    pub(crate) fn handle_routed_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: &[u8],
        first: Layout,
    ) {
        self.handle_datagram_from(now, remote, ecn, Datagram::Borrowed(data), Some(first));
    }

    /// Like [`Connection::handle_datagram`], for a datagram the caller hands
    /// over: it is decrypted where it lies, and stream data in it reaches
    /// [`Connection::read_chunk`] as slices of it, never copied.
    pub fn handle_datagram_owned(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: BytesMut,
    ) {
        self.handle_datagram_from(now, remote, ecn, Datagram::Owned(data), None);
    }

    /// [`Connection::handle_routed_datagram`] for a datagram the caller
    /// hands over.
    pub(crate) fn handle_routed_datagram_owned(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        data: BytesMut,
        first: Layout,
    ) {
        self.handle_datagram_from(now, remote, ecn, Datagram::Owned(data), Some(first));
    }

    fn handle_datagram_from(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        mut data: Datagram<'_>,
        mut first: Option<Layout>,
    ) {
        let total = data.bytes().len();
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += total as u64;
        if self.state == ConnState::Drained {
            self.stats.dropped.unexpected += 1;
            return;
        }
        // Only what came from the client's own address buys replies to it:
        // copies of its packets sent from elsewhere must not.
        if !self.validated && remote.ip() == self.remote.ip() {
            self.allowance.on_received(total as u64);
        }
        self.on_path_bytes(remote, total as u64);
        // Nearly every datagram is one routed short-header packet, which
        // runs to the datagram's end: it goes straight to `handle_short`,
        // without the loop's tests for the long header forms.
        if let Some(layout) = first {
            let view = HeaderView::with_layout(data.bytes(), layout);
            if let Some((pn, header_len)) = view.short_number_and_header_len() {
                let header = ShortHeader {
                    dcid_ok: self.local_cid.matches(view.dcid())
                        || self.migration.local.contains(view.dcid()),
                    pn,
                    header_len,
                };
                let len = view.packet_len();
                let packet = match data {
                    Datagram::Borrowed(d) => {
                        ShortPacket::Borrowed(d.get(..len).unwrap_or_default())
                    }
                    Datagram::Owned(mut d) => {
                        d.truncate(len);
                        ShortPacket::Owned(d)
                    }
                };
                self.handle_short(now, remote, ecn, header, packet);
                self.update_timers(now);
                return;
            }
        }
        let mut at = 0;
        while at < total {
            let rest = data.bytes().get(at..).unwrap_or_default();
            // The first header was validated by the endpoint already.
            let checked = match first.take() {
                Some(layout) => Ok(HeaderView::with_layout(rest, layout)),
                None => HeaderView::new_checked(rest, LOCAL_CID_LEN),
            };
            let view = match checked {
                Ok(v) => v,
                Err(_) => {
                    self.stats.dropped.malformed += 1;
                    break;
                }
            };
            let len = view.packet_len();
            if view.is_version_negotiation() {
                self.handle_version_negotiation(&view);
                break;
            }
            if let Some(ty) = view.long_type() {
                self.handle_long(now, ty, &view);
                at += len;
                continue;
            }
            let (pn, header_len) = view.packet_number_and_header_len();
            let header = ShortHeader {
                dcid_ok: self.local_cid.matches(view.dcid())
                    || self.migration.local.contains(view.dcid()),
                pn,
                header_len,
            };
            let end = at + len;
            let packet = match &mut data {
                Datagram::Borrowed(d) => ShortPacket::Borrowed(d.get(at..end).unwrap_or_default()),
                Datagram::Owned(d) => {
                    // The packet, without copying: a short header runs to
                    // the end of the datagram, so nothing follows it.
                    let mut p = if at == 0 {
                        std::mem::take(d)
                    } else {
                        d.split_off(at)
                    };
                    p.truncate(len);
                    ShortPacket::Owned(p)
                }
            };
            self.handle_short(now, remote, ecn, header, packet);
            at = end;
        }
        self.update_timers(now);
    }

    fn handle_version_negotiation(&mut self, view: &HeaderView<&[u8]>) {
        let ours = self.version;
        if self.side == Side::Client
            && self.state == ConnState::Handshake
            && !view.versions().any(|v| v == ours)
        {
            self.events
                .push_back(Event::ConnectionLost(ConnectionError::VersionMismatch));
            self.drain_now();
        } else {
            self.stats.dropped.unexpected += 1;
        }
    }

    fn handle_long(&mut self, now: Instant, ty: LongType, view: &HeaderView<&[u8]>) {
        let initial = ty == LongType::Initial;
        let from_peer_side = match self.side {
            Side::Server => true,
            Side::Client => !initial,
        };
        if view.version() != self.version
            || !from_peer_side
            || view.dcid() != self.expected_long_dcid(initial)
        {
            self.stats.dropped.unexpected += 1;
            return;
        }
        let Some((_, msg)) = parse_hs_payload(initial, view.payload()) else {
            self.stats.dropped.malformed += 1;
            return;
        };
        self.log_long_received(now, ty, view);
        let expecting = self.hs.noise.as_ref().is_some_and(|n| !n.is_my_turn()) && !initial;
        if !expecting {
            // A retransmission of a message we already processed: the peer
            // may be missing our answer.
            if self.hs.last_msg.is_some() && !self.hs.confirmed {
                self.hs.send_pending = true;
            } else if self.keys.is_some()
                && !matches!(self.state, ConnState::Closing | ConnState::Draining)
            {
                self.ping_pending = true;
            }
            self.stats.dropped.duplicate += 1;
            return;
        }
        let Some(noise) = self.hs.noise.as_mut() else {
            return;
        };
        let payload = match noise.read(msg) {
            Ok(p) => p,
            Err(_) => {
                self.stats.dropped.bad_handshake += 1;
                return;
            }
        };
        let finished = noise.is_finished();
        // The server cannot reply to its own message: reading it proves the
        // client received ours, so its address is real.
        if self.side == Side::Server {
            self.validated = true;
        }
        self.restart_idle_timer(now);
        self.eliciting_sent_since_rx = false;
        match self.side {
            Side::Client => self.client_read_server_message(now, view, &payload),
            Side::Server => {
                // XX message 3: nothing in its payload matters.
                if finished {
                    self.hs.last_msg = None;
                    self.on_handshake_complete(now);
                }
            }
        }
    }

    /// Which destination ID a long packet must carry.
    fn expected_long_dcid(&self, initial: bool) -> &[u8] {
        if initial {
            self.initial_dcid.as_bytes()
        } else {
            self.local_cid.as_bytes()
        }
    }

    fn client_read_server_message(
        &mut self,
        now: Instant,
        view: &HeaderView<&[u8]>,
        payload: &[u8],
    ) {
        let params = match HandshakePayload::parse(payload) {
            Ok(p) => p.params,
            Err(e) => {
                self.events
                    .push_back(Event::ConnectionLost(ConnectionError::Handshake(e.into())));
                self.drain_now();
                return;
            }
        };
        let scid_ok = params.source_cid.as_bytes() == view.scid();
        let odcid_ok = params.original_dcid == Some(self.initial_dcid);
        if !scid_ok || !odcid_ok {
            self.transport_error(
                now,
                code::TRANSPORT_PARAMETER_ERROR,
                0,
                "connection ids do not match",
            );
            return;
        }
        // The server answers with the one cipher it chose from our list.
        let cipher = match params.packet_ciphers.as_slice() {
            [c] if self.config.packet_ciphers.contains(c) => *c,
            _ => {
                self.transport_error(
                    now,
                    code::TRANSPORT_PARAMETER_ERROR,
                    0,
                    "packet cipher not offered",
                );
                return;
            }
        };
        self.hs.cipher = Some(cipher);
        if let (Some(sent), false) = (self.hs.first_sent_at, self.hs.resent) {
            self.rtt.update(now - sent, std::time::Duration::ZERO, now);
            self.loss.on_rtt_sample(now);
            self.ecn
                .set_pto(LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay));
        }
        self.remote_cid = params.source_cid;
        self.apply_peer_params(params);
        let Some(noise) = self.hs.noise.as_mut() else {
            return;
        };
        if noise.is_my_turn() && !noise.is_finished() {
            // XX: the third message; its payload is empty.
            match noise.write(&[]) {
                Ok(msg) => {
                    self.hs.last_msg = Some((LongType::Handshake, hs_payload(None, &msg)));
                    self.hs.send_pending = true;
                    self.hs.pto_count = 0;
                    self.hs.copy = super::handshake_copy::HandshakeCopy::First;
                }
                Err(e) => {
                    self.events
                        .push_back(Event::ConnectionLost(ConnectionError::Handshake(e)));
                    self.drain_now();
                    return;
                }
            }
        } else {
            self.hs.last_msg = None;
        }
        if self.hs.noise.as_ref().is_some_and(|n| n.is_finished()) {
            self.on_handshake_complete(now);
        }
    }

    fn handle_short(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        header: ShortHeader,
        packet: ShortPacket<'_>,
    ) {
        if !header.dcid_ok {
            self.stats.dropped.unexpected += 1;
            return;
        }
        let Some((_, rx)) = self.keys.as_ref() else {
            self.stats.dropped.undecryptable += 1;
            return;
        };
        let pn = decode_packet_number(self.acks.largest(), header.pn);
        let (plain, packet_len) = match packet {
            ShortPacket::Borrowed(packet) => {
                let (aad, sealed) = packet.split_at(header.header_len.min(packet.len()));
                self.ready_rx_buf(sealed.len());
                let (Some(rx_buf), Some((_, rx))) = (self.rx_bufs.back_mut(), self.keys.as_ref())
                else {
                    return;
                };
                let buf = &mut rx_buf.buf;
                buf.extend_from_slice(sealed);
                let opened = rx.open_in_place(pn, aad, buf);
                let plain = opened.map(|n| {
                    buf.truncate(n);
                    buf.split().freeze()
                });
                (plain, packet.len())
            }
            ShortPacket::Owned(mut packet) => {
                let packet_len = packet.len();
                let header_len = header.header_len.min(packet_len);
                let (aad, sealed) = packet.split_at_mut(header_len);
                let plain = rx.open_in_place(pn, aad, sealed).map(|n| {
                    packet.advance(header_len);
                    packet.truncate(n);
                    packet.freeze()
                });
                (plain, packet_len)
            }
        };
        let Ok(plain) = plain else {
            self.stats.dropped.unauthenticated += 1;
            return;
        };
        if self.acks.is_duplicate(pn) {
            self.stats.dropped.duplicate += 1;
            // Stale, but it authenticated: the path still delivers.
            self.restart_idle_timer(now);
            return;
        }
        self.keep_for_fec(pn, &plain);
        self.handle_payload(now, remote, ecn, pn, &plain, Some(&plain), packet_len);
        self.process_rebuilt(now, remote, ecn);
    }

    /// Makes the pool's last buffer an empty one for decrypting `len`
    /// bytes: the last one itself if no slice of it is left, else the
    /// oldest one if none of it is left, else a new one. A reader that
    /// takes each packet's data at once frees the last one, whose lines
    /// are still in cache, where the oldest of a rotating pool (about
    /// 100 KB) is cold at every copy; and it is used in place, not taken
    /// out of the pool and put back. The connection keeps at most a
    /// receive window of datagrams' buffers (at least [`RX_BUFS_MIN`]);
    /// past that the oldest is let go, to be freed with its last slice.
    ///
    /// A reader that falls behind (a busy application task) pins a buffer
    /// per packet, so the pool grows with the backlog; once the reader has
    /// caught up, the free buffers beyond [`RX_BUFS_MIN`] go at the next
    /// packet, and the pool no longer holds its peak for the rest of the
    /// connection (hundreds of KB after a burst).
    ///
    /// A buffer too small for the packet (made before path MTU discovery
    /// raised the datagram size, or for a smaller packet) is let go when
    /// it comes to either end, pinned or not: kept, it would look pinned
    /// for ever, and every later packet would take a new buffer until the
    /// pool held a receive window's worth (about 500 idle buffers, 700 KB,
    /// on a loopback connection whose datagrams grew from 1200 to 1452
    /// bytes).
    fn ready_rx_buf(&mut self, len: usize) {
        let mds = self.mds();
        let need = len.max(mds);
        while self.rx_bufs.front().is_some_and(|b| b.room < need) {
            self.rx_bufs.pop_front();
        }
        while self.rx_bufs.back().is_some_and(|b| b.room < need) {
            self.rx_bufs.pop_back();
        }
        if let Some(back) = self.rx_bufs.back_mut() {
            back.buf.clear();
            if back.buf.try_reclaim(need) {
                self.trim_rx_bufs(need);
                return;
            }
        }
        if let Some(front) = self.rx_bufs.front_mut() {
            front.buf.clear();
            if front.buf.try_reclaim(need)
                && let Some(buf) = self.rx_bufs.pop_front()
            {
                self.rx_bufs.push_back(buf);
                self.trim_rx_bufs(need);
                return;
            }
        }
        let window = self.config.streams.connection_receive_window / mds.max(1) as u64;
        let max = usize::try_from(window).map_or(usize::MAX, |w| w.max(RX_BUFS_MIN));
        if self.rx_bufs.len() >= max {
            self.rx_bufs.pop_front();
        }
        let buf = BytesMut::with_capacity(need);
        self.rx_bufs.push_back(RxBuf {
            room: buf.capacity(),
            buf,
        });
    }

    /// Frees the buffers a read left without slices: a backlog's buffers go
    /// as the application reads it, not at the next packet, which may never
    /// come (the last packets of a transfer that ended while the reader
    /// lagged kept the pool at its peak for the connection's life).
    pub(super) fn release_rx_bufs(&mut self) {
        if self.rx_bufs.len() > RX_BUFS_MIN {
            let need = self.mds();
            self.trim_rx_bufs(need);
        }
    }

    /// Frees the oldest buffers while no slice of them is left (or they
    /// are too small for `need` bytes) and more than [`RX_BUFS_MIN`] are
    /// kept (the reader frees them in order).
    fn trim_rx_bufs(&mut self, need: usize) {
        while self.rx_bufs.len() > RX_BUFS_MIN {
            let Some(front) = self.rx_bufs.front_mut() else {
                break;
            };
            if front.room >= need {
                front.buf.clear();
                if !front.buf.try_reclaim(need) {
                    break;
                }
            }
            self.rx_bufs.pop_front();
        }
    }

    /// Number of decryption buffers kept (for the pool's tests).
    #[cfg(test)]
    pub(super) fn rx_bufs_kept(&self) -> usize {
        self.rx_bufs.len()
    }

    /// Where the allocation of the buffer returned last starts (for the
    /// pool's tests): a decrypted packet's slice took its front.
    #[cfg(test)]
    pub(super) fn rx_buf_last(&self) -> Option<usize> {
        let b = self.rx_bufs.back()?;
        Some(b.buf.as_ptr() as usize + b.buf.capacity() - b.room)
    }

    /// The room of each decryption buffer kept, oldest first (for the
    /// pool's tests).
    #[cfg(test)]
    pub(super) fn rx_buf_rooms(&self) -> Vec<usize> {
        self.rx_bufs.iter().map(|b| b.room).collect()
    }

    /// Feeds `payload` to the frame handlers as the content of an
    /// authenticated 1-RTT packet numbered one past the largest received,
    /// so a fuzzer can reach frame processing without forging the AEAD.
    #[cfg(feature = "fuzzing")]
    pub fn fuzz_authenticated_payload(&mut self, now: Instant, payload: &[u8]) {
        if self.keys.is_none() {
            return;
        }
        let pn = self.acks.largest().map_or(0, |l| l + 1);
        let remote = self.remote;
        // As a datagram the streams may keep slices of, like a real one.
        let datagram = Bytes::copy_from_slice(payload);
        self.handle_payload(
            now,
            remote,
            Ecn::NotEct,
            pn,
            &datagram,
            Some(&datagram),
            datagram.len(),
        );
        self.update_timers(now);
    }

    /// The frames of an authenticated, non-duplicate 1-RTT packet;
    /// `datagram` is `plain` as a buffer the streams may keep slices of.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_payload(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Ecn,
        pn: u64,
        plain: &[u8],
        datagram: Option<&Bytes>,
        packet_len: usize,
    ) {
        // A first pass validates every frame before any takes effect. The
        // first few frames (all of a typical packet's) are kept from it;
        // any after them are parsed again to act on them, not collected.
        let mut ack_eliciting = false;
        let mut any = false;
        let mut kept: [Option<Frame<'_>>; KEPT_FRAMES] = [None, None];
        let mut after_kept: &[u8] = &[];
        let mut ends_stream = false;
        let mut carries_data = false;
        let mut frames = FrameIter::new(plain);
        let mut count = 0;
        while let Some(f) = frames.next() {
            match f {
                Ok(f) => {
                    any = true;
                    ack_eliciting |= f.is_ack_eliciting();
                    ends_stream |= matches!(f, Frame::Stream(StreamFrame { fin: true, .. }));
                    carries_data |= matches!(f, Frame::Stream(_) | Frame::Datagram(_));
                    if let Some(slot) = kept.get_mut(count) {
                        *slot = Some(f);
                        after_kept = frames.rest();
                    }
                    count += 1;
                }
                Err(_) => {
                    any = false;
                    break;
                }
            }
        }
        if !any {
            self.transport_error(now, code::FRAME_ENCODING_ERROR, 0, "malformed frame");
            return;
        }
        self.stats.packets_received += 1;
        self.stats.ecn_received.add(ecn, 1);
        if self.acks.largest().is_none_or(|l| pn > l) && remote != self.remote {
            self.on_peer_address(now, remote, packet_len);
        }
        self.acks.on_packet(now, pn, ecn, ack_eliciting);
        if ends_stream {
            self.acks.ack_now();
        }
        self.validated = true;
        if !self.hs.confirmed {
            self.hs.confirmed = true;
            self.hs.last_msg = None;
            self.hs.send_pending = false;
        }
        self.on_peer_heard(now, carries_data);
        if let Some(q) = self
            .qlog
            .as_mut()
            .filter(|q| q.wants(qlog::EventClass::Packets))
        {
            q.emit(
                now,
                QlogEvent::PacketReceived(PacketEvent {
                    header: PacketHeader {
                        packet_type: PacketType::OneRtt,
                        packet_number: pn,
                    },
                    frames: FrameIter::new(plain)
                        .flatten()
                        .map(|f| qlog::frame(&f))
                        .collect(),
                    raw: Some(RawInfo {
                        length_bytes: packet_len as u64,
                    }),
                }),
            );
        }
        match self.state {
            ConnState::Closing => {
                self.close_pending = true;
                return;
            }
            ConnState::Draining | ConnState::Drained => return,
            _ => {}
        }
        // Acted on where they lie, slot by slot: moving the array into an
        // iterator chain copied it and dropping the chain walked it again.
        for slot in &kept {
            let Some(f) = slot else {
                break;
            };
            self.handle_frame(now, f, datagram);
            if !matches!(self.state, ConnState::Established) {
                return;
            }
        }
        // Most packets have no frames past the kept ones: no iterator then.
        if after_kept.is_empty() {
            return;
        }
        for f in FrameIter::new(after_kept).flatten() {
            self.handle_frame(now, &f, datagram);
            if !matches!(self.state, ConnState::Established) {
                return;
            }
        }
    }

    /// Acts on one validated frame. Taken by reference: the frames of a
    /// packet stay where the validating pass put them instead of being
    /// moved (an ACK frame is about 100 bytes) on their way here.
    pub(super) fn handle_frame(&mut self, now: Instant, f: &Frame<'_>, datagram: Option<&Bytes>) {
        let result = match f {
            Frame::Padding(_) | Frame::Ping | Frame::DataBlocked(_) => Ok(()),
            &Frame::StreamDataBlocked { id, limit } => {
                self.streams.handle_stream_data_blocked(StreamId(id), limit);
                Ok(())
            }
            Frame::Ack(a) => {
                self.handle_ack(now, a);
                Ok(())
            }
            Frame::Stream(s) => {
                let piece = Piece {
                    data: s.data,
                    datagram,
                };
                self.streams
                    .handle_stream_piece(StreamId(s.id), s.offset, piece, s.fin)
            }
            &Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => self
                .streams
                .handle_reset(StreamId(id), error_code, final_size),
            &Frame::StopSending { id, error_code } => {
                self.streams.handle_stop_sending(StreamId(id), error_code)
            }
            &Frame::MaxData(m) => {
                self.streams.handle_max_data(m);
                Ok(())
            }
            &Frame::MaxStreamData { id, max } => {
                self.streams.handle_max_stream_data(StreamId(id), max)
            }
            &Frame::MaxStreams { bidi, count } => {
                self.streams.handle_max_streams(bidi, count);
                Ok(())
            }
            Frame::Close(c) => {
                let reason = String::from_utf8_lossy(c.reason).into_owned();
                let err = match c.frame_type {
                    Some(_) => ConnectionError::PeerTransportError {
                        code: c.error_code,
                        reason,
                    },
                    None => ConnectionError::ApplicationClosed {
                        code: c.error_code,
                        reason,
                    },
                };
                self.events.push_back(Event::ConnectionLost(err));
                self.start_draining(now);
                Ok(())
            }
            Frame::AckFrequency(f) => {
                self.handle_ack_frequency(now, f);
                Ok(())
            }
            Frame::Repair(r) => {
                self.handle_repair(now, r);
                Ok(())
            }
            &Frame::Repaired(r) => {
                self.handle_repaired(now, r);
                Ok(())
            }
            &Frame::Datagram(d) => {
                self.handle_datagram_frame(now, d);
                Ok(())
            }
            Frame::NewConnectionId(_)
            | Frame::RetireConnectionId(_)
            | Frame::PathChallenge(_)
            | Frame::PathResponse(_) => {
                self.handle_path_frame(now, f.clone());
                Ok(())
            }
            Frame::HandshakeDone => {
                if self.side == Side::Server && self.hs.pattern == crate::handshake::Pattern::Xx {
                    self.transport_error(
                        now,
                        code::PROTOCOL_VIOLATION,
                        ty::HANDSHAKE_DONE.into(),
                        "HANDSHAKE_DONE from the client",
                    );
                }
                Ok(())
            }
        };
        // The frame's type is read only for an error: the frame is still here.
        if let Err(e) = result {
            self.stream_error(now, f.frame_type(), e);
        }
    }

    /// A request for a new ACK rate: allowed only if we announced
    /// `min_ack_delay`, and never for a shorter delay than that.
    fn handle_ack_frequency(&mut self, now: Instant, f: &AckFrequencyFrame) {
        let Some(min) = self.hs.local_params.min_ack_delay else {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                ty::ACK_FREQUENCY.into(),
                "ACK_FREQUENCY without min_ack_delay",
            );
            return;
        };
        if f.request_max_ack_delay < min || f.request_max_ack_delay > MAX_ACK_DELAY_LIMIT {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                ty::ACK_FREQUENCY.into(),
                "requested ack delay out of range",
            );
            return;
        }
        self.acks.on_ack_frequency(f);
    }

    /// Peer violations close the connection, naming the frame of type
    /// `frame_type` that broke the rule; other stream errors concern only
    /// the local application and are ignored here.
    fn stream_error(&mut self, now: Instant, frame_type: u8, e: StreamError) {
        if let Some(c) = e.transport_error_code() {
            self.transport_error(now, c, frame_type.into(), &e.to_string());
        }
    }

    fn handle_ack(&mut self, now: Instant, ack: &AckFrame) {
        let largest = ack.largest();
        if largest >= self.next_pn {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                if ack.ecn.is_some() {
                    ty::ACK_ECN
                } else {
                    ty::ACK
                }
                .into(),
                "ACK of a packet never sent",
            );
            return;
        }
        let mut newly = std::mem::take(&mut self.acked_scratch);
        newly.clear();
        for r in &ack.ranges {
            self.sent.remove_range_into(r.clone(), &mut newly);
            self.loss.check_spurious(r.clone());
        }
        self.loss.on_ack(largest, !newly.is_empty());
        if !newly.is_empty() {
            self.last_newly_acked = Some(now);
            self.on_newly_acked(now, ack, &newly);
        }
        // Kept between ACKs at the size ACKs need lately: one that once
        // acknowledged a large flight does not pin that room for good.
        let acked = newly.len();
        newly.clear();
        if newly.capacity() > KEPT_ACKED && acked < newly.capacity() / 4 {
            newly.shrink_to((2 * acked).max(KEPT_ACKED));
        }
        self.acked_scratch = newly;
    }

    /// The part of [`Connection::handle_ack`] for an ACK that acknowledged
    /// `newly` (ascending packet numbers) for the first time.
    fn on_newly_acked(&mut self, now: Instant, ack: &AckFrame, newly: &[(u64, SentPacket)]) {
        let largest = ack.largest();
        let eliciting = newly.iter().any(|(_, p)| p.ack_eliciting);
        let mut largest_sent_at = Instant::ZERO;
        let mut app_limited = false;
        let mut rtt_sampled = false;
        if let Some((_, p)) = newly.iter().find(|(pn, _)| *pn == largest) {
            largest_sent_at = p.time_sent;
            app_limited = p.app_limited;
            // A packet sent before a move to a new network says nothing
            // of the new path's round trip (it is acknowledged there when
            // the ACKs sent over the old path died with it).
            if eliciting && self.migration.on_this_path(largest) {
                rtt_sampled = true;
                let delay = if self.hs.confirmed {
                    ack.ack_delay.min(self.peer_max_ack_delay)
                } else {
                    ack.ack_delay
                };
                self.rtt.update(now - p.time_sent, delay, now);
                self.loss.on_rtt_sample(now);
                self.ecn
                    .set_pto(LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay));
            }
        } else if let Some((_, p)) = newly.last() {
            largest_sent_at = p.time_sent;
            app_limited = p.app_limited;
        }
        let mut acked_bytes = 0;
        let mut acked_packets = 0;
        let mut newly_ecn = EcnCounts::default();
        let mut acked_ack = None;
        let mut small_acked = None;
        // Stream bytes acknowledged in a row (packet after packet of one
        // stream) reach the stream as one range: the same outcome as
        // chunk by chunk, in one call.
        let mut run = AckedRun::default();
        for (pn, p) in newly {
            self.pmtu.on_acked(*pn, p.size_bytes as usize);
            if p.ack_eliciting && p.size_bytes as usize <= crate::pmtu::BASE_UDP_PAYLOAD {
                small_acked = Some(*pn);
            }
            if p.ack_eliciting {
                acked_bytes += p.size_bytes;
                acked_packets += 1;
            }
            newly_ecn.add(p.ecn, 1);
            acked_ack = acked_ack.max(p.largest_acked);
            for f in &p.frames {
                match *f {
                    SentFrame::Stream {
                        id,
                        offset,
                        len,
                        fin,
                    } => run.add(&mut self.streams, id, offset, len, fin),
                    SentFrame::Control(c) => {
                        run.flush(&mut self.streams);
                        self.streams.on_control_acked(c);
                    }
                    SentFrame::HandshakeDone
                    | SentFrame::AckFrequency(_)
                    | SentFrame::NewConnectionId(_)
                    | SentFrame::RetireConnectionId(_) => {}
                }
            }
        }
        run.flush(&mut self.streams);
        // Only the newest acknowledged ACK matters: the peer knows all it
        // reported.
        if let Some(l) = acked_ack {
            self.acks.on_ack_of_ack(l);
        }
        let totals: EcnCounts = ack.ecn.unwrap_or_default().into();
        self.stats.ecn_echoed = EcnCounts {
            ect0: self.stats.ecn_echoed.ect0.max(totals.ect0),
            ect1: self.stats.ecn_echoed.ect1.max(totals.ect1),
            ce: self.stats.ecn_echoed.ce.max(totals.ce),
        };
        if let Some(f) = self.fec_active() {
            f.on_delivered(acked_packets);
        }
        let delta = self.ecn.on_ack_totals(now, &newly_ecn, &totals, largest);
        self.log_ecn_state(now);
        if let Some(small) = small_acked {
            self.black_hole_on_small_ack(small);
        }
        let lost = self.detect_lost(now);
        self.on_packets_lost(now, lost, LossTrigger::ReorderingThreshold);
        if acked_bytes > 0 {
            let before = self.cc.window();
            let ecn_delta = if self.ecn.state() == EcnState::Failed {
                EcnCounts::default()
            } else {
                delta
            };
            self.cc.on_ack(&AckSample {
                now,
                acked_bytes,
                acked_packets,
                latest_rtt: self.rtt.latest(),
                rtt_sampled,
                latest_ack_delay: self.rtt.latest_ack_delay(),
                smoothed_rtt: self.rtt.smoothed(),
                min_rtt: self.rtt.min(),
                ecn_delta,
                largest_acked_sent_at: largest_sent_at,
                bytes_in_flight: self.sent.bytes_in_flight(),
                app_limited,
            });
            if self.cc.window() < before {
                self.stats.congestion_events += 1;
            }
        }
        self.update_ack_frequency(now);
        self.log_metrics(now);
    }

    /// Hands the frames of a packet taken for lost (or requeued for a tail
    /// loss probe) back to their owners to be sent again.
    pub(super) fn requeue_frames(&mut self, frames: &SentFrames) {
        for &f in frames {
            match f {
                SentFrame::Stream {
                    id,
                    offset,
                    len,
                    fin,
                } => self.streams.on_chunk_lost(id, offset, len, fin),
                SentFrame::Control(c) => self.streams.on_control_lost(c),
                SentFrame::HandshakeDone => self.hs.done_frame_pending = true,
                SentFrame::AckFrequency(seq) => {
                    if let Some(a) = self.ack_frequency.as_mut() {
                        a.on_lost(seq);
                    }
                }
                SentFrame::NewConnectionId(_) | SentFrame::RetireConnectionId(_) => {
                    self.requeue_path_frame(f)
                }
            }
        }
    }

    /// Hands the content of lost packets back for retransmission and tells
    /// congestion control and ECN validation.
    pub(super) fn on_packets_lost(&mut self, now: Instant, batch: LostBatch, trigger: LossTrigger) {
        if batch.packets.is_empty() {
            return;
        }
        let mut lost_bytes = 0;
        let mut lost_packets = 0;
        let mut largest_lost_sent_at = Instant::ZERO;
        // Path MTU discovery first: a black hole it finds here makes every
        // lost packet larger than the base the path's doing, not a queue's,
        // and what is larger still in flight is sent again at once.
        let mut black_hole_from = None;
        for (pn, p) in &batch.packets {
            if let Some(from) = self.pmtu.on_lost(*pn, p.size_bytes as usize) {
                black_hole_from = Some(from);
            }
        }
        if let Some(from) = black_hole_from {
            self.resend_larger_than(crate::pmtu::BASE_UDP_PAYLOAD, from);
        }
        for (pn, p) in &batch.packets {
            let path_size = self.lost_to_path_size(p.size_bytes);
            // Packets sent on the path we left are retransmitted, but
            // their loss says nothing about this path's congestion.
            if p.ack_eliciting && !path_size && self.migration.on_this_path(*pn) {
                lost_bytes += p.size_bytes;
                lost_packets += 1;
                largest_lost_sent_at = largest_lost_sent_at.max(p.time_sent);
            }
            if p.ack_eliciting {
                self.stats.packets_lost += 1;
                self.stats.bytes_lost += p.size_bytes;
                // A loss behind a standing queue is the congestion
                // controller's business; repair is for the path's own.
                let queue_free = self.rtt.latest() <= self.rtt.min() + self.rtt.min() / 4;
                if let Some(f) = self.fec_active().filter(|_| queue_free) {
                    f.on_lost(*pn);
                }
            }
            if p.ack_eliciting && p.ecn.is_ecn_capable() && !path_size {
                self.ecn.on_lost(now, p.ecn);
            }
            if !p.requeued {
                self.requeue_frames(&p.frames);
            }
            if let Some(q) = self.qlog.as_mut() {
                q.emit(
                    now,
                    QlogEvent::PacketLost {
                        header: PacketHeader {
                            packet_type: PacketType::OneRtt,
                            packet_number: *pn,
                        },
                        frames: Vec::new(),
                        trigger: Some(trigger),
                    },
                );
            }
        }
        self.log_ecn_state(now);
        if lost_packets == 0 {
            return;
        }
        let before = self.cc.window();
        self.cc.on_loss(&LossSample {
            now,
            lost_bytes,
            lost_packets,
            largest_lost_sent_at,
            persistent_congestion: batch.persistent_congestion,
            bytes_in_flight: self.sent.bytes_in_flight(),
        });
        if self.cc.window() < before {
            self.stats.congestion_events += 1;
        }
        if batch.persistent_congestion {
            self.stats.persistent_congestion_events += 1;
            self.rtt.reset_min();
        }
        self.update_ack_frequency(now);
        self.log_metrics(now);
    }

    /// Lets the ACK rate we ask of the peer follow the window.
    fn update_ack_frequency(&mut self, now: Instant) {
        let mds = self.mds() as u64;
        if let Some(a) = self.ack_frequency.as_mut() {
            a.update(
                now,
                self.cc.window(),
                mds,
                self.rtt.smoothed(),
                self.cc.in_slow_start() || !self.cc.tolerates_sparse_acks(),
            );
        }
    }

    pub(super) fn log_metrics(&mut self, now: Instant) {
        let slow_start = self.cc.in_slow_start();
        let Some(q) = self.qlog.as_mut() else {
            self.last_slow_start = slow_start;
            return;
        };
        let m = self.cc.metrics();
        q.emit(
            now,
            QlogEvent::MetricsUpdated(qlog::Metrics {
                min_rtt: Some(self.rtt.min()),
                smoothed_rtt: Some(self.rtt.smoothed()),
                latest_rtt: Some(self.rtt.latest()),
                rtt_variance: Some(self.rtt.rttvar()),
                pto_count: Some(self.loss.pto_count()),
                congestion_window_bytes: Some(m.cwnd_bytes),
                bytes_in_flight: Some(self.sent.bytes_in_flight()),
                ssthresh_bytes: m.ssthresh_bytes,
                pacing_rate_bps: Some(self.pacer.rate_bps()),
            }),
        );
        if slow_start != self.last_slow_start {
            let name = |s: bool| {
                if s {
                    "slow_start"
                } else {
                    "congestion_avoidance"
                }
                .to_owned()
            };
            q.emit(
                now,
                QlogEvent::CongestionStateUpdated {
                    old: Some(name(self.last_slow_start)),
                    new: name(slow_start),
                    trigger: None,
                },
            );
            self.last_slow_start = slow_start;
        }
    }

    pub(crate) fn log_long_received(
        &mut self,
        now: Instant,
        ty: LongType,
        view: &HeaderView<&[u8]>,
    ) {
        if let Some(q) = self.qlog.as_mut() {
            let packet_type = if ty == LongType::Initial {
                PacketType::Initial
            } else {
                PacketType::Handshake
            };
            q.emit(
                now,
                QlogEvent::PacketReceived(PacketEvent {
                    header: PacketHeader {
                        packet_type,
                        packet_number: u64::from(view.packet_number().value),
                    },
                    frames: Vec::new(),
                    raw: Some(RawInfo {
                        length_bytes: view.packet_len() as u64,
                    }),
                }),
            );
        }
    }
}

/// Acknowledged stream bytes gathered while they continue one another:
/// `(stream, offset, len)`.
#[derive(Default)]
struct AckedRun(Option<(StreamId, u64, u64)>);

impl AckedRun {
    /// Adds an acknowledged chunk; one that does not continue the run
    /// hands the run over first, and a FIN ends it.
    fn add(&mut self, streams: &mut Streams, id: StreamId, offset: u64, len: u64, fin: bool) {
        match &mut self.0 {
            Some((i, o, l)) if *i == id && *o + *l == offset => *l += len,
            _ => {
                self.flush(streams);
                self.0 = Some((id, offset, len));
            }
        }
        if fin && let Some((i, o, l)) = self.0.take() {
            streams.on_chunk_acked(i, o, l, true);
        }
    }

    /// Hands the run to its stream.
    fn flush(&mut self, streams: &mut Streams) {
        if let Some((i, o, l)) = self.0.take() {
            streams.on_chunk_acked(i, o, l, false);
        }
    }
}
