//! Datagrams out: the handshake message when due, then one 1-RTT packet
//! filled in priority order (ACK, HANDSHAKE_DONE, control frames, stream
//! data), within the congestion window, the pacer and, for a server that has
//! not yet validated the client's address, three times the bytes received
//! from that address (over all its unvalidated connections).

use super::timer::Timer;
use super::{ConnState, Connection, Transmit, TransmitMeta, hs_payload};
use crate::crypto::TAG_LEN;
use crate::frame::{CloseFrame, Frame, StreamFrame};
use crate::handshake::HandshakePayload;
use crate::packet::{Header, LongType, TruncatedPn};
use crate::qlog::{self, PacketEvent, PacketHeader, PacketType, QlogEvent, QlogFrame, RawInfo};
use crate::sent_packets::{SentFrame, SentFrames, SentPacket};
use crate::streams::Side;
use brisk_time::Instant;
use brisk_wire::Ecn;

/// Room below which no further STREAM frame is started: the worst-case
/// header for chunks under 16 KiB (type, 8-byte id, 8-byte offset, 2-byte
/// length). A frame started gets its exact header size.
const STREAM_HEADER_MAX: usize = 19;
/// Room a control frame may need at most.
const CONTROL_FRAME_MAX: usize = 40;
/// Close reasons are cut to this many bytes.
const MAX_REASON: usize = 256;

impl Connection {
    /// The next UDP payload to send, or `None` when nothing may or needs to
    /// go out now (see [`Connection::poll_timeout`] for when to ask again).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let mut contents = Vec::new();
        let meta = self.poll_transmit_into(now, &mut contents)?;
        Some(meta.with_contents(contents))
    }

    /// Like [`Connection::poll_transmit`], but writes the datagram into
    /// `buf` (cleared first), so a caller can reuse one buffer rather than
    /// allocate one per datagram.
    pub fn poll_transmit_into(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<TransmitMeta> {
        buf.clear();
        self.poll_transmit_append(now, buf)
    }

    /// Like [`Connection::poll_transmit_into`], but appends the datagram
    /// after what `buf` already holds and leaves those bytes alone, so a
    /// caller can keep room in front for lower-layer headers and build the
    /// whole packet in place. On `None`, `buf` is as it was.
    pub fn poll_transmit_append(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<TransmitMeta> {
        let base = buf.len();
        let t = self.build_datagram(now, buf);
        if t.is_some() {
            let len = (buf.len() - base) as u64;
            self.stats.datagrams_sent += 1;
            self.stats.bytes_sent += len;
            if !self.validated {
                self.allowance.on_sent(len);
            }
        }
        if t.is_some() || self.timers_updated_at != Some(now) {
            self.update_timers(now);
        } else {
            // Nothing left and nothing changed since the timers were set
            // at this very instant (see `timers_updated_at`).
            // Debug builds (the tests) check that claim.
            #[cfg(debug_assertions)]
            {
                let kept = self.timers;
                self.update_timers(now);
                assert_eq!(kept, self.timers, "timers went stale");
            }
        }
        t
    }

    /// Bytes this datagram may hold.
    fn datagram_budget(&self) -> usize {
        let mds = self.mds();
        if self.validated {
            return mds;
        }
        // Shared with every unvalidated connection to the same address.
        let allowed = self.allowance.remaining();
        usize::try_from(allowed).map_or(mds, |a| a.min(mds))
    }

    /// Appends the next datagram to `out`. The writers below take `budget`
    /// as the length `out` may reach, so bytes already in front count
    /// against nothing.
    fn build_datagram(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<TransmitMeta> {
        if matches!(self.state, ConnState::Draining | ConnState::Drained) {
            return None;
        }
        let base = out.len();
        let budget = base + self.datagram_budget();
        out.reserve(budget - base);
        if self.state == ConnState::Closing {
            if !self.close_pending {
                return None;
            }
            let ecn = self.write_close(out, budget)?;
            self.close_pending = false;
            return Some(TransmitMeta {
                destination: self.remote,
                ecn,
            });
        }
        if self.hs.send_pending {
            self.write_handshake(now, out, budget);
        }
        let mut ecn = Ecn::NotEct;
        if self.state == ConnState::Established
            && let Some(e) = self.write_one_rtt(now, out, budget)
        {
            ecn = e;
        }
        if out.len() == base {
            return None;
        }
        Some(TransmitMeta {
            destination: self.remote,
            ecn,
        })
    }

    /// Writes (and for the client's first flight, first creates) our last
    /// handshake message in a long packet.
    fn write_handshake(&mut self, now: Instant, out: &mut Vec<u8>, budget: usize) {
        if self.hs.last_msg.is_none() && self.side == Side::Client {
            let payload = HandshakePayload {
                params: self.hs.local_params.clone(),
                early: self.hs.early.as_ref().map(|(id, d)| (id.0, d.clone())),
            };
            let Some(noise) = self.hs.noise.as_mut() else {
                return;
            };
            match noise.write(&payload.emit()) {
                Ok(msg) => {
                    self.hs.last_msg =
                        Some((LongType::Initial, hs_payload(Some(self.hs.pattern), &msg)));
                }
                Err(e) => {
                    self.events.push_back(super::Event::ConnectionLost(
                        crate::error::ConnectionError::Handshake(e),
                    ));
                    self.drain_now();
                    return;
                }
            }
        }
        let Some((ty, payload)) = self.hs.last_msg.as_ref() else {
            self.hs.send_pending = false;
            return;
        };
        let pn = TruncatedPn::encode(self.hs.next_pn, None);
        let mut header = Header::Long {
            ty: *ty,
            version: self.version,
            dcid: self.remote_cid,
            scid: self.local_cid,
            pn,
            payload_len: payload.len(),
        };
        // The client pads its Initial to a full datagram, so the server's
        // 3x allowance is worth a whole reply, and small paths are found out.
        if *ty == LongType::Initial {
            let mds = self.config.mds();
            for _ in 0..3 {
                let Header::Long {
                    payload_len: pl, ..
                } = header
                else {
                    break;
                };
                let fitted = (pl + mds)
                    .saturating_sub(header_len_for(pl, &header))
                    .max(payload.len());
                if let Header::Long { payload_len, .. } = &mut header {
                    *payload_len = fitted;
                }
            }
        }
        let Header::Long { payload_len, .. } = header else {
            return;
        };
        if out.len() + header.len() + payload_len > budget {
            self.stats.amplification_blocked += 1;
            return;
        }
        let start = out.len();
        header.emit(out);
        out.extend_from_slice(payload);
        out.resize(start + header.len() + payload_len, 0);
        if let Some(q) = self.qlog.as_mut() {
            let packet_type = if *ty == LongType::Initial {
                PacketType::Initial
            } else {
                PacketType::Handshake
            };
            q.emit(
                now,
                QlogEvent::PacketSent(PacketEvent {
                    header: PacketHeader {
                        packet_type,
                        packet_number: self.hs.next_pn,
                    },
                    frames: Vec::new(),
                    raw: Some(RawInfo {
                        length_bytes: (out.len() - start) as u64,
                    }),
                }),
            );
        }
        self.hs.next_pn += 1;
        self.hs.send_pending = false;
        self.hs.first_sent_at.get_or_insert(now);
        self.hs.last_sent_at = Some(now);
    }

    /// A 1-RTT packet with only CONNECTION_CLOSE; not tracked for loss.
    fn write_close(&mut self, out: &mut Vec<u8>, budget: usize) -> Option<Ecn> {
        let info = self.close.clone()?;
        let (tx, _) = self.keys.as_ref()?;
        let pn = self.next_pn;
        let header = Header::Short {
            dcid: self.remote_cid,
            pn: TruncatedPn::encode(pn, self.loss.largest_acked()),
        };
        let reason = &info.reason[..info.reason.len().min(MAX_REASON)];
        let frame = Frame::Close(CloseFrame {
            error_code: info.code,
            frame_type: info.frame_type,
            reason,
        });
        let start = out.len();
        if start + header.len() + frame.len() + TAG_LEN > budget {
            self.stats.amplification_blocked += 1;
            return None;
        }
        header.emit(out);
        frame.emit(out);
        tx.seal(pn, out, start, start + header.len());
        self.next_pn += 1;
        self.stats.packets_sent += 1;
        Some(Ecn::NotEct)
    }

    /// Appends one 1-RTT packet if there is anything worth sending; returns
    /// the packet's ECN codepoint.
    fn write_one_rtt(&mut self, now: Instant, out: &mut Vec<u8>, budget: usize) -> Option<Ecn> {
        if self.keys.as_ref().is_some_and(|(tx, _)| {
            tx.cipher()
                .confidentiality_limit_blocks()
                .is_some_and(|limit| self.sealed_blocks >= limit)
        }) {
            // Version 1 has no key update: the connection must end.
            self.transport_error(
                now,
                crate::error::code::AEAD_LIMIT_REACHED,
                0,
                "packet key used up",
            );
            return None;
        }
        let start = out.len();
        let pn = self.next_pn;
        let header = Header::Short {
            dcid: self.remote_cid,
            pn: TruncatedPn::encode(pn, self.loss.largest_acked()),
        };
        let header_len = header.len();
        let Some(space) = budget
            .checked_sub(start + header_len + TAG_LEN)
            .filter(|&s| s >= 16)
        else {
            if !self.validated {
                self.stats.amplification_blocked += 1;
            }
            return None;
        };
        let ack_due = self.acks.ack_due(now);
        let probe = self.probes_pending > 0;
        let mds = self.mds() as u64;
        let cwnd_ok = self.sent.bytes_in_flight() + mds <= self.cc.window();
        let mut pacing_ok = true;
        if !probe && cwnd_ok {
            let at = self.pacer.next_send_time(
                now,
                mds,
                self.cc.pacing_window(),
                self.rtt.smoothed(),
                self.cc.pacing(),
            );
            if at > now {
                pacing_ok = false;
                self.timers.set(Timer::Pacing, at);
            }
        }
        if pacing_ok {
            self.timers.stop(Timer::Pacing);
        }
        let may_elicit = probe || (cwnd_ok && pacing_ok);
        if !may_elicit && !ack_due {
            return None;
        }
        // No ACK due and nothing that would elicit one: the packet below
        // would be cut off again, so do not start it (a receiver is asked
        // this after every datagram it takes). Every source of an
        // ack-eliciting frame written below must be listed here.
        if !ack_due
            && !probe
            && !self.hs.done_frame_pending
            && !self.ping_pending
            && !self.ack_frequency.as_ref().is_some_and(|a| a.has_pending())
            && !self.streams.may_have_frames()
        {
            return None;
        }

        header.emit(out);
        let payload_start = out.len();
        let limit = payload_start + space;
        let tracing = self
            .qlog
            .as_ref()
            .is_some_and(|q| q.wants(qlog::EventClass::Packets));
        let mut qframes: Vec<QlogFrame> = Vec::new();
        let mut frames = SentFrames::new();
        let mut largest_acked = None;
        let with_ack = ack_due || (may_elicit && self.acks.has_pending());
        if with_ack && let Some(largest) = self.acks.emit(now, out) {
            largest_acked = Some(largest);
            if tracing && let Some(ack) = self.acks.build(now) {
                qframes.push(qlog::frame(&Frame::Ack(ack)));
            }
        }
        let mut eliciting = false;
        let mut app_limited = false;
        let retransmitted_before = self.streams.stats().bytes_retransmitted;
        if may_elicit {
            if self.hs.done_frame_pending && out.len() < limit {
                Frame::HandshakeDone.emit(out);
                self.hs.done_frame_pending = false;
                frames.push(SentFrame::HandshakeDone);
                qframes.push(QlogFrame::HandshakeDone);
                eliciting = true;
            }
            if limit.saturating_sub(out.len()) >= CONTROL_FRAME_MAX
                && let Some(af) = self.ack_frequency.as_mut().and_then(|a| a.poll_frame(now))
            {
                af.emit(out);
                if tracing {
                    qframes.push(qlog::frame(&Frame::AckFrequency(af)));
                }
                frames.push(SentFrame::AckFrequency(af.sequence));
                eliciting = true;
            }
            while limit.saturating_sub(out.len()) >= CONTROL_FRAME_MAX {
                let Some(c) = self.streams.poll_control() else {
                    break;
                };
                let f = control_frame(c);
                f.emit(out);
                if tracing {
                    qframes.push(qlog::frame(&f));
                }
                frames.push(SentFrame::Control(c));
                eliciting = true;
            }
            app_limited = self.fill_stream_data(
                out,
                limit,
                &mut frames,
                &mut qframes,
                tracing,
                &mut eliciting,
            );
            if probe && !eliciting && self.requeue_newest_in_flight() {
                self.fill_stream_data(
                    out,
                    limit,
                    &mut frames,
                    &mut qframes,
                    tracing,
                    &mut eliciting,
                );
            }
            if (self.ping_pending || (probe && !eliciting)) && out.len() < limit {
                Frame::Ping.emit(out);
                qframes.push(QlogFrame::Ping);
                eliciting = true;
            }
            if eliciting {
                self.ping_pending = false;
            }
        }
        if !eliciting && !ack_due {
            out.truncate(start);
            return None;
        }
        if out.len() == payload_start {
            out.truncate(start);
            return None;
        }
        let (tx, _) = self.keys.as_ref()?;
        tx.seal(pn, out, start, payload_start);
        let size = (out.len() - start) as u64;
        self.sealed_blocks += crate::crypto::sealed_blocks(size as usize);
        let ecn = self.ecn.codepoint();
        if self.streams.stats().bytes_retransmitted > retransmitted_before {
            self.stats.packets_retransmitted += 1;
        }
        self.next_pn += 1;
        self.stats.packets_sent += 1;
        self.stats.ecn_sent.add(ecn, 1);
        self.ecn.on_sent(now, pn, ecn, eliciting);
        if largest_acked.is_some() {
            self.stats.ack_frames_sent += 1;
        }
        if with_ack {
            self.acks.on_ack_sent();
            self.timers.stop(Timer::AckDelay);
        }
        // ACK-only packets are kept too (outside bytes in flight): their
        // acknowledgements validate ECN and prune the peer's ACK ranges.
        self.sent.insert(
            pn,
            SentPacket {
                time_sent: now,
                size_bytes: size,
                ack_eliciting: eliciting,
                ecn,
                app_limited,
                largest_acked,
                frames,
                requeued: false,
            },
        );
        if eliciting {
            self.loss.on_eliciting_sent(now);
            self.cc.on_sent(now, size, self.sent.bytes_in_flight());
            self.pacer.on_sent(now, size);
            if !self.eliciting_sent_since_rx {
                self.restart_idle_timer(now);
                self.eliciting_sent_since_rx = true;
            }
            if let Some(i) = self.config.keep_alive_interval {
                self.timers.set(Timer::KeepAlive, now + i);
            }
            if probe {
                self.probes_pending -= 1;
                self.stats.probes_sent += 1;
            }
        }
        if let Some(q) = self.qlog.as_mut().filter(|_| tracing) {
            q.emit(
                now,
                QlogEvent::PacketSent(PacketEvent {
                    header: PacketHeader {
                        packet_type: PacketType::OneRtt,
                        packet_number: pn,
                    },
                    frames: qframes,
                    raw: Some(RawInfo { length_bytes: size }),
                }),
            );
        }
        Some(ecn)
    }

    /// Adds STREAM frames until the packet is full or the streams have
    /// nothing more; returns true in the latter case (application-limited).
    fn fill_stream_data(
        &mut self,
        out: &mut Vec<u8>,
        limit: usize,
        frames: &mut SentFrames,
        qframes: &mut Vec<QlogFrame>,
        tracing: bool,
        eliciting: &mut bool,
    ) -> bool {
        loop {
            let room = limit.saturating_sub(out.len());
            if room <= STREAM_HEADER_MAX {
                return false;
            }
            let Some(chunk) = self.streams.poll_frame_chunk(room) else {
                return true;
            };
            // Header, then the bytes straight from the send buffer.
            let frame_start = out.len();
            StreamFrame::emit_header(chunk.id.0, chunk.offset, chunk.len as usize, chunk.fin, out);
            let data_start = out.len();
            if !self.streams.copy_chunk(&chunk, out) {
                out.truncate(frame_start);
                continue;
            }
            if tracing {
                qframes.push(qlog::frame(&Frame::Stream(StreamFrame {
                    id: chunk.id.0,
                    offset: chunk.offset,
                    fin: chunk.fin,
                    data: &out[data_start..],
                })));
            }
            frames.push(SentFrame::Stream {
                id: chunk.id,
                offset: chunk.offset,
                len: chunk.len,
                fin: chunk.fin,
            });
            *eliciting = true;
        }
    }

    /// For a probe with no new data: hands the newest in-flight packet's
    /// content back to be sent again (RFC 8985's tail loss probe).
    fn requeue_newest_in_flight(&mut self) -> bool {
        let Some(pn) = self
            .sent
            .iter()
            .rev()
            .find(|(_, p)| {
                !p.requeued
                    && p.frames
                        .iter()
                        .any(|f| !matches!(f, SentFrame::HandshakeDone))
            })
            .map(|(pn, _)| pn)
        else {
            return false;
        };
        let Some(p) = self.sent.get_mut(pn) else {
            return false;
        };
        p.requeued = true;
        let frames = p.frames.clone();
        for &f in &frames {
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
            }
        }
        true
    }
}

/// The length `header` would have with `payload_len`, plus that payload.
fn header_len_for(payload_len: usize, header: &Header) -> usize {
    let mut h = header.clone();
    if let Header::Long { payload_len: p, .. } = &mut h {
        *p = payload_len;
    }
    h.len() + payload_len
}

fn control_frame(c: crate::streams::ControlFrame) -> Frame<'static> {
    use crate::streams::ControlFrame as C;
    match c {
        C::MaxData(m) => Frame::MaxData(m),
        C::MaxStreamData { id, max } => Frame::MaxStreamData { id: id.0, max },
        C::MaxStreams { bidi, count } => Frame::MaxStreams { bidi, count },
        C::ResetStream {
            id,
            error_code,
            final_size,
        } => Frame::ResetStream {
            id: id.0,
            error_code,
            final_size,
        },
        C::StopSending { id, error_code } => Frame::StopSending {
            id: id.0,
            error_code,
        },
        C::DataBlocked(l) => Frame::DataBlocked(l),
        C::StreamDataBlocked { id, limit } => Frame::StreamDataBlocked { id: id.0, limit },
    }
}
