//! One 1-RTT packet, assembled in three steps that each do one thing:
//!
//! 1. **Gate**: whether a packet may and should start now (ACK due, probe,
//!    congestion window, pacer), decided before a byte is written.
//! 2. **Fill**: frame sources are asked in [`PRIORITY`] order, each while
//!    the packet has room; a [`PacketBuilder`] keeps what was written (the
//!    frames to track for loss, the qlog frames, whether the packet asks for
//!    an ACK). A new kind of frame (path frames, say) is one more
//!    [`FrameSource`] and one arm in [`Connection::fill_from`], as FEC
//!    repair and datagrams are.
//! 3. **Seal and track**: encryption, then the bookkeeping every sent packet
//!    needs (packet number, sent-packet map, congestion controller, pacer,
//!    timers, statistics, qlog), in [`Connection::seal_and_track`].
//!
//! The qlog frames are collected only when a qlog sink wants packet events:
//! the builder holds `Some(list)` then and `None` otherwise, so no source
//! needs to be told whether it is traced.

use super::Connection;
use super::timer::Timer;
use crate::congestion::{PaceBy, SendView};
use crate::crypto::TAG_LEN;
use crate::frame::{Frame, RepairFrame, RepairedFrame, StreamFrame};
use crate::packet::{Header, TruncatedPn};
use crate::qlog::{self, PacketEvent, PacketHeader, PacketType, QlogEvent, QlogFrame, RawInfo};
use crate::sent_packets::{SentFrame, SentFrames, SentPacket};
use brisk_time::Instant;
use brisk_wire::Ecn;

/// Room below which no further STREAM frame is started: the worst-case
/// header for chunks under 16 KiB (type, 8-byte id, 8-byte offset, 2-byte
/// length). A frame started gets its exact header size.
const STREAM_HEADER_MAX: usize = 19;
/// Room a control frame may need at most.
const CONTROL_FRAME_MAX: usize = 40;
/// The smallest payload room worth starting a packet for.
const MIN_PAYLOAD_ROOM: usize = 16;
/// Payload room source packets leave unused while FEC is on, so a repair
/// symbol over any of them fits a packet with its REPAIR frame header
/// (type, four varints of up to 8, 2, 2 and 2 bytes, a 2-byte length),
/// the source shard's length prefix and padding to an even length, and a
/// packet number up to 3 bytes longer than the source packet's.
pub(super) const FEC_RESERVE: usize = 28;

/// Where the frames of a 1-RTT packet come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameSource {
    /// A repair symbol (forward error correction), alone in its packet:
    /// it goes before new data so a block's repair leaves with its flight.
    Repair,
    /// The acknowledgement of what we received, when one is due or may
    /// ride along.
    Ack,
    /// HANDSHAKE_DONE, once, from the server.
    HandshakeDone,
    /// ACK_FREQUENCY: how often we want the peer to acknowledge.
    AckFrequency,
    /// Flow-control updates, stream resets and STOP_SENDING.
    Control,
    /// Unreliable datagrams, oldest first: ahead of stream data, as what
    /// an application sends unreliably is what it wants soonest, and a
    /// datagram that waits may pass its deadline.
    Datagram,
    /// Stream data, new or retransmitted, in stream priority order.
    Stream,
    /// PING, when the application or a probe asked for one and nothing
    /// else in the packet asks for an acknowledgement.
    Ping,
}

/// The order in which a packet is filled: what keeps the peer's sending
/// and flow control moving goes before data, and PING only fills a gap.
pub(crate) const PRIORITY: [FrameSource; 8] = [
    FrameSource::Repair,
    FrameSource::Ack,
    FrameSource::HandshakeDone,
    FrameSource::AckFrequency,
    FrameSource::Control,
    FrameSource::Datagram,
    FrameSource::Stream,
    FrameSource::Ping,
];

/// What the gate decided for one packet.
#[derive(Debug, Clone, Copy)]
struct Gate {
    /// An ACK must go out now.
    ack_due: bool,
    /// A probe timeout asked for an ack-eliciting packet.
    probe: bool,
    /// Ack-eliciting frames may be sent (probe, or window and pacer allow).
    may_elicit: bool,
}

/// The state of one 1-RTT packet while its frames are written into the
/// caller's buffer.
#[derive(Debug)]
pub(crate) struct PacketBuilder {
    pn: u64,
    /// Where the packet's header starts in the buffer.
    start: usize,
    /// Where its payload starts.
    payload_start: usize,
    /// The payload may run up to here (room for the AEAD tag is kept).
    limit: usize,
    /// Frames to hand back to their sources if the packet is lost.
    frames: SentFrames,
    /// The frames for qlog; `None` when no sink wants packet events.
    qframes: Option<Vec<QlogFrame>>,
    eliciting: bool,
    /// The ACK frame was written (`with_ack`), and the largest packet
    /// number it acknowledges.
    with_ack: bool,
    largest_acked: Option<u64>,
    /// The streams had no more data for this packet.
    app_limited: bool,
    /// A source stopped for lack of room: the packet is as large as it
    /// can be, so a GSO train may go on with another of the same size.
    full: bool,
    /// The packet carries a repair symbol and nothing else.
    repair: bool,
    /// DATAGRAM frames written.
    datagrams: usize,
    /// The next datagram did not fit: a packet holding only an ACK must
    /// leave anyway (with a PING), so the datagram gets the next one.
    datagram_blocked: bool,
    /// A path MTU probe: PING and PADDING, kept out of FEC.
    mtu_probe: bool,
    /// A NEW_CONNECTION_ID frame was written: one per packet is enough.
    pub(super) new_cid: bool,
    /// The packet carries the PATH_CHALLENGE of our own move: it is padded
    /// to the datagram's full size, so the peer may answer with that much
    /// data before the new path is validated.
    pub(super) pad: bool,
}

impl PacketBuilder {
    /// Bytes the payload may still take.
    pub(super) fn room(&self, out: &[u8]) -> usize {
        self.limit.saturating_sub(out.len())
    }

    /// A DATAGRAM frame was written: ack-eliciting, and nothing for loss
    /// recovery to resend.
    pub(super) fn record_datagram(&mut self, logged: impl FnOnce() -> QlogFrame) {
        self.datagrams += 1;
        self.record(None, logged, true);
    }

    /// The next datagram needs more room than is left. The packet is not
    /// marked full: a GSO train must not go on at a size the datagram may
    /// not fit either.
    pub(super) fn datagram_blocked(&mut self) {
        self.datagram_blocked = true;
    }

    /// Records one frame written: `sent` is what loss recovery must know
    /// of it, `logged` builds its qlog form (called only when traced).
    pub(super) fn record(
        &mut self,
        sent: Option<SentFrame>,
        logged: impl FnOnce() -> QlogFrame,
        eliciting: bool,
    ) {
        if let Some(f) = sent {
            self.frames.push(f);
        }
        if let Some(q) = self.qframes.as_mut() {
            q.push(logged());
        }
        self.eliciting |= eliciting;
    }
}

/// What a datagram is sized and gated by, read once per datagram (nothing
/// before its 1-RTT packet's gate changes it).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizing {
    /// The current [`Connection::mds`].
    pub(super) full: usize,
    /// The 1-RTT packet's size, [`Connection::send_size_of`] `full`.
    pub(super) send: usize,
    /// The controller's view of `full`.
    pub(super) cc: SendView,
}

/// What one written 1-RTT packet turned out to be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    pub(crate) ecn: Ecn,
    /// See [`PacketBuilder::full`].
    pub(crate) full: bool,
}

impl Connection {
    /// Appends one 1-RTT packet if there is anything worth sending, with
    /// `out` allowed to grow to `budget` bytes, sized by `sizes`. `paced`:
    /// the pacer's answer, when this poll already asked it.
    pub(super) fn write_one_rtt(
        &mut self,
        now: Instant,
        out: &mut Vec<u8>,
        budget: usize,
        sizes: Sizing,
        paced: Option<(bool, bool)>,
    ) -> Option<Written> {
        // A poll that asked the pacer first found the connection steady,
        // its key among other things not used up.
        if paced.is_none()
            && self.keys.as_ref().is_some_and(|(tx, _)| {
                tx.cipher()
                    .confidentiality_limit_blocks()
                    .is_some_and(|limit| self.sealed_blocks >= limit)
            })
        {
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
        let Some(space) = budget
            .checked_sub(start + header.len() + TAG_LEN)
            .filter(|&s| s >= MIN_PAYLOAD_ROOM)
        else {
            if !self.validated {
                self.stats.amplification_blocked += 1;
            }
            return None;
        };
        let gate = self.gate(now, sizes, paced)?;
        // A source packet leaves room for its repair; a repair packet
        // takes it.
        let repair_next =
            gate.may_elicit && self.fec_active().is_some_and(|f| f.next_repair().is_some());
        let space = if self.fec_rx.is_some() && !repair_next {
            space.saturating_sub(FEC_RESERVE)
        } else {
            space
        };
        header.emit(out);
        let payload_start = out.len();
        let traced = self
            .qlog
            .as_ref()
            .is_some_and(|q| q.wants(qlog::EventClass::Packets));
        let mut b = PacketBuilder {
            pn,
            start,
            payload_start,
            limit: payload_start + space,
            frames: SentFrames::new(),
            qframes: traced.then(Vec::new),
            eliciting: false,
            with_ack: false,
            largest_acked: None,
            app_limited: false,
            full: false,
            repair: false,
            datagrams: 0,
            datagram_blocked: false,
            mtu_probe: false,
            new_cid: false,
            pad: false,
        };
        let retransmitted_before = self.streams.stats().bytes_retransmitted;
        // Written out, each call inlined for its one source: a loop over
        // the list paid a call and a dispatch per source per packet.
        let [s0, s1, s2, s3, s4, s5, s6, s7] = PRIORITY;
        self.fill_from(s0, now, gate, &mut b, out);
        self.fill_from(s1, now, gate, &mut b, out);
        self.fill_from(s2, now, gate, &mut b, out);
        self.fill_from(s3, now, gate, &mut b, out);
        self.fill_from(s4, now, gate, &mut b, out);
        self.fill_from(s5, now, gate, &mut b, out);
        self.fill_from(s6, now, gate, &mut b, out);
        self.fill_from(s7, now, gate, &mut b, out);
        if b.eliciting {
            self.ping_pending = false;
        }
        if (!b.eliciting && !gate.ack_due) || out.len() == payload_start {
            out.truncate(start);
            return None;
        }
        if b.pad && out.len() < b.limit {
            let padding = b.limit - out.len();
            // PADDING frames are zero bytes.
            out.resize(b.limit, 0);
            b.record(None, || qlog::frame(&Frame::Padding(padding)), false);
        }
        let retransmits = self.streams.stats().bytes_retransmitted > retransmitted_before;
        let full = b.full;
        let ecn = self.seal_and_track(now, gate, &mut b, out, retransmits)?;
        Some(Written { ecn, full })
    }

    /// Appends a path MTU probe of `size` bytes: a PING padded to that
    /// size, ack-eliciting and in flight, with nothing to resend if lost.
    pub(super) fn write_mtu_probe(
        &mut self,
        now: Instant,
        out: &mut Vec<u8>,
        size: usize,
    ) -> Option<Ecn> {
        self.keys.as_ref()?;
        let start = out.len();
        let pn = self.next_pn;
        let header = Header::Short {
            dcid: self.remote_cid,
            pn: TruncatedPn::encode(pn, self.loss.largest_acked()),
        };
        let end = start + size;
        if header.len() + 1 + TAG_LEN > size {
            return None;
        }
        out.reserve(size);
        header.emit(out);
        let payload_start = out.len();
        Frame::Ping.emit(out);
        // PADDING frames are zero bytes.
        out.resize(end - TAG_LEN, 0);
        let traced = self
            .qlog
            .as_ref()
            .is_some_and(|q| q.wants(qlog::EventClass::Packets));
        let mut b = PacketBuilder {
            pn,
            start,
            payload_start,
            limit: out.len(),
            frames: SentFrames::new(),
            qframes: traced.then(|| {
                vec![
                    QlogFrame::Ping,
                    qlog::frame(&Frame::Padding(end - TAG_LEN - payload_start - 1)),
                ]
            }),
            eliciting: true,
            with_ack: false,
            largest_acked: None,
            app_limited: false,
            full: false,
            repair: false,
            datagrams: 0,
            datagram_blocked: false,
            mtu_probe: true,
            new_cid: false,
            pad: false,
        };
        let gate = Gate {
            ack_due: false,
            probe: false,
            may_elicit: true,
        };
        let ecn = self.seal_and_track(now, gate, &mut b, out, false)?;
        self.pmtu.on_probe_sent(pn, size);
        Some(ecn)
    }

    /// Whether a packet may and should start now; sets or stops the
    /// pacing timer on the way, unless `paced` holds the pacer's answer
    /// (given only by a poll that found the connection steady at `now`,
    /// so with no ACK due).
    fn gate(&mut self, now: Instant, sizes: Sizing, paced: Option<(bool, bool)>) -> Option<Gate> {
        let ack_due = paced.is_none() && self.acks.ack_due(now);
        let probe = self.probes_pending > 0;
        let (cwnd_ok, pacing_ok) = match paced {
            Some(p) => p,
            None => self.pace(now, sizes, probe),
        };
        let may_elicit = probe || (cwnd_ok && pacing_ok);
        if !may_elicit && !ack_due {
            return None;
        }
        // No ACK due and nothing that would elicit one: the packet would
        // be cut off again, so do not start it (a receiver is asked this
        // after every datagram it takes). Every source of an ack-eliciting
        // frame in `fill_from` must be listed here.
        if !ack_due
            && !probe
            && !self.hs.done_frame_pending
            && !self.ping_pending
            && !self.ack_frequency.as_ref().is_some_and(|a| a.has_pending())
            && !self.streams.may_have_frames()
            && !(self.datagrams_queued() && self.datagrams_pending(now))
            && !self.path_frames_pending(now)
            && self.fec_active().is_none_or(|f| f.next_repair().is_none())
        {
            return None;
        }
        Some(Gate {
            ack_due,
            probe,
            may_elicit,
        })
    }

    /// Whether the congestion window and the pacer let a packet of
    /// `sizes.send` go now, as `(cwnd_ok, pacing_ok)`; sets or stops the
    /// pacing timer on the way. Asked before every packet, and by a poll
    /// that finds nothing to send (`Connection::nothing_to_send`): the answer
    /// moves the pacing timer and the pacer's late credit, so it is asked
    /// the same whether or not a packet follows. In line: it is asked by
    /// every poll.
    #[inline(always)]
    pub(super) fn pace(&mut self, now: Instant, sizes: Sizing, probe: bool) -> (bool, bool) {
        let mds = sizes.send as u64;
        let cwnd_ok = self.sent.bytes_in_flight() + mds <= sizes.cc.window;
        let mut pacing_ok = true;
        if !probe && cwnd_ok {
            let small = (mds < sizes.full as u64).then_some(mds);
            self.pacer.set_burst_datagram(now, small);
            let params = sizes.cc.pacing;
            let at = match sizes.cc.pace_by {
                PaceBy::Rate(rate) => self.pacer.next_send_time_at_rate(now, mds, rate, params),
                PaceBy::Window(window) => {
                    self.pacer
                        .next_send_time(now, mds, window, self.rtt.pacing_rtt(), params)
                }
            };
            if at > now {
                pacing_ok = false;
                self.timers.set(Timer::Pacing, at);
            }
        } else if !cwnd_ok {
            self.pacer.held_elsewhere();
        }
        if pacing_ok {
            self.timers.stop(Timer::Pacing);
        }
        (cwnd_ok, pacing_ok)
    }

    /// Writes what `source` has for the packet, within its room.
    #[inline(always)]
    fn fill_from(
        &mut self,
        source: FrameSource,
        now: Instant,
        gate: Gate,
        b: &mut PacketBuilder,
        out: &mut Vec<u8>,
    ) {
        if (source != FrameSource::Ack && !gate.may_elicit) || b.repair {
            return;
        }
        match source {
            FrameSource::Repair => {
                let room = b.room(out);
                let Some(r) = self.fec_active().and_then(|f| f.next_repair()) else {
                    return;
                };
                let frame = RepairFrame {
                    first_pn: r.first_pn,
                    source_count: r.source_count,
                    repair_count: r.repair_count,
                    index: r.index,
                    shard: &r.shard,
                };
                // Fits: source packets left FEC_RESERVE unused. A symbol
                // that does not (a packet number 4 bytes longer than its
                // sources') is dropped rather than kept waiting.
                if frame.encoded_len() <= room {
                    frame.emit(out);
                    b.record(None, || qlog::frame(&Frame::Repair(frame)), true);
                    b.repair = true;
                } else if let Some(f) = self.fec_active() {
                    f.drop_repair();
                }
            }
            FrameSource::Ack => {
                b.with_ack = gate.ack_due || (gate.may_elicit && self.acks.has_pending());
                let ack_start = out.len();
                if b.with_ack
                    && let Some(largest) = self.acks.emit(now, out)
                {
                    if out.len() > b.limit {
                        // Many ranges and little room (an amplification
                        // limit): the ACK waits for a packet it fits in,
                        // rather than send more than the limit allows.
                        out.truncate(ack_start);
                        b.with_ack = false;
                        return;
                    }
                    b.largest_acked = Some(largest);
                    if let Some(q) = b.qframes.as_mut()
                        && let Some(ack) = self.acks.build(now)
                    {
                        q.push(qlog::frame(&Frame::Ack(ack)));
                    }
                }
                // What repair rebuilt rides with the ACK that reports it.
                if b.with_ack
                    && b.room(out) >= CONTROL_FRAME_MAX
                    && let Some(t) = self.fec_rx.as_mut().and_then(|r| r.poll_report())
                {
                    let f = RepairedFrame {
                        packets: t.packets,
                        bursts: t.bursts,
                        largest_pn: t.largest_pn,
                    };
                    f.emit(out);
                    b.record(None, || qlog::frame(&Frame::Repaired(f)), false);
                }
            }
            FrameSource::HandshakeDone => {
                if self.hs.done_frame_pending && b.room(out) > 0 {
                    Frame::HandshakeDone.emit(out);
                    self.hs.done_frame_pending = false;
                    b.record(
                        Some(SentFrame::HandshakeDone),
                        || QlogFrame::HandshakeDone,
                        true,
                    );
                }
            }
            FrameSource::AckFrequency => {
                if b.room(out) >= CONTROL_FRAME_MAX
                    && let Some(af) = self.ack_frequency.as_mut().and_then(|a| a.poll_frame(now))
                {
                    af.emit(out);
                    b.record(
                        Some(SentFrame::AckFrequency(af.sequence)),
                        || qlog::frame(&Frame::AckFrequency(af)),
                        true,
                    );
                }
            }
            FrameSource::Control => {
                self.fill_path_frames(now, b, out);
                while self.streams.may_have_control() && b.room(out) >= CONTROL_FRAME_MAX {
                    let Some(c) = self.streams.poll_control(now, self.rtt.min()) else {
                        break;
                    };
                    let f = control_frame(c);
                    f.emit(out);
                    b.record(Some(SentFrame::Control(c)), || qlog::frame(&f), true);
                }
            }
            // Datagrams expire only while queued: an empty queue has none
            // to drop.
            FrameSource::Datagram => {
                if self.datagrams_queued() {
                    self.fill_datagrams(now, b, out);
                }
            }
            FrameSource::Stream => {
                b.app_limited = self.fill_stream_data(b, out) && !self.datagrams_queued();
                if gate.probe && !b.eliciting && self.requeue_newest_in_flight() {
                    self.fill_stream_data(b, out);
                }
            }
            FrameSource::Ping => {
                self.fill_spare_cid(now, b, out);
                // An ACK that left a datagram no room still leaves now.
                let alone = !b.eliciting
                    && (gate.probe || (b.datagram_blocked && b.largest_acked.is_some()));
                // A receiver watching its path for a stall makes an ACK it
                // sends anyway ack-eliciting (`Connection::watch_ping_due`).
                let watch = !b.eliciting && b.with_ack && self.watch_ping_due();
                if (self.ping_pending || alone || watch) && b.room(out) > 0 {
                    Frame::Ping.emit(out);
                    b.record(None, || QlogFrame::Ping, true);
                }
            }
        }
    }

    /// Adds STREAM frames until the packet is full or the streams have
    /// nothing more; returns true in the latter case (application-limited).
    fn fill_stream_data(&mut self, b: &mut PacketBuilder, out: &mut Vec<u8>) -> bool {
        loop {
            let room = b.room(out);
            if room <= STREAM_HEADER_MAX {
                b.full = true;
                return false;
            }
            // The frame goes in straight from the send buffer.
            let Some((chunk, copied)) = self.streams.poll_frame_chunk(room, out) else {
                return true;
            };
            if !copied {
                continue;
            }
            let sent = SentFrame::Stream {
                id: chunk.id,
                offset: chunk.offset,
                len: chunk.len,
                fin: chunk.fin,
            };
            let data = &out[out.len() - chunk.len as usize..];
            b.record(
                Some(sent),
                || {
                    qlog::frame(&Frame::Stream(StreamFrame {
                        id: chunk.id.0,
                        offset: chunk.offset,
                        fin: chunk.fin,
                        data,
                    }))
                },
                true,
            );
        }
    }

    /// Encrypts the packet `b` describes and does the bookkeeping of a
    /// sent packet; returns its ECN codepoint. `retransmits`: it carries
    /// stream bytes sent before. `b` is borrowed, its frames taken: moved
    /// whole, the builder was copied in wide loads from the narrow stores
    /// that had just filled it, which the processor cannot forward.
    fn seal_and_track(
        &mut self,
        now: Instant,
        gate: Gate,
        b: &mut PacketBuilder,
        out: &mut Vec<u8>,
        retransmits: bool,
    ) -> Option<Ecn> {
        self.keys.as_ref()?;
        let pn = b.pn;
        if !b.repair && !b.mtu_probe && self.fec_rx.is_some() {
            self.fec_on_source_sent(now, pn, b, out);
        }
        let (tx, _) = self.keys.as_ref()?;
        tx.seal(pn, out, b.start, b.payload_start);
        let size = (out.len() - b.start) as u64;
        self.sealed_blocks += crate::crypto::sealed_blocks(size as usize);
        let ecn = self.ecn.codepoint();
        if retransmits {
            self.stats.packets_retransmitted += 1;
        }
        self.next_pn += 1;
        self.stats.packets_sent += 1;
        self.stats.ecn_sent.add(ecn, 1);
        self.ecn.on_sent(now, pn, ecn, b.eliciting);
        if b.largest_acked.is_some() {
            self.stats.ack_frames_sent += 1;
        }
        if b.with_ack {
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
                ack_eliciting: b.eliciting,
                ecn,
                app_limited: b.app_limited,
                largest_acked: b.largest_acked,
                frames: std::mem::take(&mut b.frames),
                requeued: false,
            },
        );
        if b.eliciting && !b.mtu_probe {
            let srtt = self.rtt.smoothed();
            self.pmtu.on_eliciting_sent(now, size as usize, srtt);
        }
        if b.eliciting {
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
            if gate.probe {
                self.probes_pending -= 1;
                self.stats.probes_sent += 1;
            }
        }
        if b.repair {
            self.stats.repair_packets_sent += 1;
            self.stats.repair_bytes_sent += size;
            if let Some(f) = self.fec_active() {
                f.on_repair_sent(now, pn);
            }
        } else if !b.mtu_probe && self.fec_active().is_some() {
            // What the FEC sender is told is read only when there is one.
            let in_flight = self.sent.bytes_in_flight();
            let cwnd = self.cc.window();
            let mds = self.mds() as u64;
            let tail =
                b.app_limited || (!self.streams.may_have_frames() && !self.datagrams_queued());
            if let Some(f) = self.fec_active() {
                f.after_sent(in_flight, cwnd, mds, tail);
            }
        }
        if let (Some(q), Some(frames)) = (self.qlog.as_mut(), b.qframes.take()) {
            q.emit(
                now,
                QlogEvent::PacketSent(PacketEvent {
                    header: PacketHeader {
                        packet_type: PacketType::OneRtt,
                        packet_number: pn,
                    },
                    frames,
                    raw: Some(RawInfo { length_bytes: size }),
                }),
            );
        }
        Some(ecn)
    }

    /// Hands a packet about to be sealed to the FEC sender as a source
    /// symbol, protected as its streams' policies say.
    fn fec_on_source_sent(&mut self, now: Instant, pn: u64, b: &PacketBuilder, out: &[u8]) {
        let datagrams = if b.datagrams > 0 {
            self.datagram_protection()
        } else {
            None
        };
        let Some(f) = self.fec_tx.as_mut() else {
            return;
        };
        let protection = b
            .frames
            .iter()
            .filter_map(|fr| match fr {
                SentFrame::Stream { id, .. } => f.protection(*id),
                _ => None,
            })
            .chain(datagrams)
            .reduce(f64::max);
        let payload = out.get(b.payload_start..).unwrap_or_default();
        f.on_packet_sent(now, pn, payload, protection, b.datagrams > 0);
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
        self.requeue_frames(&frames);
        true
    }
}

/// The frame a stream-layer control request is sent as.
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
