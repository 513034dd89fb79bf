//! Datagrams out: the handshake message when due, then one 1-RTT packet
//! (built by [`super::packet_builder`]), within the congestion window, the
//! pacer and, for a server that has not yet validated the client's address,
//! three times the bytes received from that address (over all its
//! unvalidated connections). Full-sized datagrams in a row leave as one GSO
//! train: equal segments, the last one possibly shorter.

use super::packet_builder::Sizing;
use super::{ConnState, Connection, Transmit, hs_payload};
use crate::crypto::TAG_LEN;
use crate::frame::{CloseFrame, Frame};
use crate::handshake::HandshakePayload;
use crate::packet::{Header, LongType, TruncatedPn};
use crate::qlog::{PacketEvent, PacketHeader, PacketType, QlogEvent, RawInfo};
use crate::streams::Side;
use brisk_time::Instant;
use brisk_wire::Ecn;

/// Close reasons are cut to this many bytes.
const MAX_REASON: usize = 256;

/// The most bytes one GSO train may hold: the kernel sends a train in one
/// UDP send, which carries at most 64 KiB less the IP and UDP headers.
pub const MAX_TRAIN_BYTES: usize = 65_000;

/// The least room a datagram must have for a poll to ask the pacer before
/// building anything: a short header at its longest, the AEAD tag and the
/// smallest payload worth a packet fit in far less, so the full path would
/// reach the gate too.
const PACE_FIRST_ROOM: usize = 128;

/// One datagram appended by [`Connection::transmit_one`].
struct Datagram {
    ecn: Ecn,
    /// Its 1-RTT packet filled all the room it had.
    full: bool,
}

impl Connection {
    /// Appends the next datagrams to send to `buf`, after what it already
    /// holds (a caller may keep room in front for lower-layer headers), and
    /// says where they go; `None` when nothing may or needs to go out now
    /// (see [`Connection::poll_timeout`] for when to ask again), with `buf`
    /// as it was.
    ///
    /// Up to `max_datagrams` datagrams are appended as one GSO train: all
    /// [`Transmit::segment_bytes`] long except the last, which may be
    /// shorter, together at most [`MAX_TRAIN_BYTES`]. A train goes on only
    /// while each packet filled its whole room, so none is cut shorter
    /// than it would have been on its own; 1 asks for a single datagram.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let base = buf.len();
        let first = self.transmit_one(now, buf, usize::MAX)?;
        let segment_bytes = buf.len() - base;
        let mut datagrams = 1;
        let mut full = first.full;
        while full
            && datagrams < max_datagrams
            && buf.len() - base + segment_bytes <= MAX_TRAIN_BYTES
            && self.may_extend_train(first.ecn)
        {
            let before = buf.len();
            let Some(next) = self.transmit_one(now, buf, segment_bytes) else {
                break;
            };
            datagrams += 1;
            // A shorter datagram ends the train.
            full = next.full && buf.len() - before == segment_bytes;
        }
        Some(Transmit {
            destination: self.remote,
            ecn: first.ecn,
            len_bytes: buf.len() - base,
            segment_bytes,
        })
    }

    /// Whether the next datagram, if any, would be a 1-RTT packet sent
    /// with `ecn`, as a train's datagrams must be.
    fn may_extend_train(&self, ecn: Ecn) -> bool {
        self.state == ConnState::Established && !self.hs.send_pending && self.ecn.codepoint() == ecn
    }

    /// Appends one datagram of at most `max_len` bytes to `buf`.
    fn transmit_one(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
        max_len: usize,
    ) -> Option<Datagram> {
        let base = buf.len();
        let t = self.build_datagram(now, buf, max_len);
        if t.is_some() {
            let len = (buf.len() - base) as u64;
            self.stats.datagrams_sent += 1;
            self.stats.bytes_sent += len;
            if !self.validated {
                self.allowance.on_sent(len);
            }
            self.on_path_sent(len);
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

    /// Bytes this datagram may hold, with `mds` the current
    /// [`Connection::mds`].
    fn datagram_budget(&self, mds: usize) -> usize {
        let mds = self.probe_timeout_budget(mds);
        if let Some(path) = self.path_allowance() {
            return usize::try_from(path).map_or(mds, |a| a.min(mds));
        }
        if self.validated {
            return mds;
        }
        // Shared with every unvalidated connection to the same address.
        let allowed = self.allowance.remaining();
        usize::try_from(allowed).map_or(mds, |a| a.min(mds))
    }

    /// Appends the next datagram, of at most `max_len` bytes, to `out`.
    /// The writers below take `budget` as the length `out` may reach, so
    /// bytes already in front count against nothing.
    fn build_datagram(
        &mut self,
        now: Instant,
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Option<Datagram> {
        if matches!(self.state, ConnState::Draining | ConnState::Drained) {
            return None;
        }
        // The datagram size and the 1-RTT packet's, read once: nothing
        // below changes them before that packet is written.
        let mds = self.mds();
        let view = self.cc.send_view(mds as u64);
        let sizing = Sizing {
            full: mds,
            send: self.send_size_of(mds, &view),
            cc: view,
        };
        let send_size = sizing.send;
        // An established connection in its steady state is answered here
        // when it has nothing to send or is held by its window or the
        // pacer, before the budget and the header are worked out; either
        // way the pacer is asked the one question the full path's gate
        // would ask, and gives the same answer. The pacer goes first: a
        // paced sender's poll right after a packet is held there without
        // looking at the frame sources.
        let mut paced = None;
        if self.steady(now) {
            if max_len == usize::MAX && send_size >= PACE_FIRST_ROOM {
                let (cwnd_ok, pacing_ok) = self.pace(now, sizing, false);
                if !(cwnd_ok && pacing_ok) || self.nothing_to_send(now) {
                    return None;
                }
                paced = Some((cwnd_ok, pacing_ok));
            } else if self.nothing_to_send(now) {
                self.pace(now, sizing, false);
                return None;
            }
        }
        let base = out.len();
        // A size check is one short datagram, alone or the last of a train.
        let size_check = self.size_check_due(now);
        let mut room = self.datagram_budget(mds).min(max_len);
        if size_check {
            room = room.min(crate::pmtu::BASE_UDP_PAYLOAD);
        }
        let budget = base + room;
        out.reserve(budget - base);
        if self.state == ConnState::Closing {
            if !self.close_pending {
                return None;
            }
            let ecn = self.write_close(out, budget)?;
            self.close_pending = false;
            return Some(Datagram { ecn, full: false });
        }
        if self.hs.send_pending {
            self.write_handshake(now, out, budget);
        }
        // A path MTU probe leaves alone, as the first datagram of a call.
        if out.len() == base
            && max_len == usize::MAX
            && let Some(size) = self.mtu_probe_due(now)
            && let Some(ecn) = self.write_mtu_probe(now, out, size)
        {
            return Some(Datagram { ecn, full: false });
        }
        let mut datagram = Datagram {
            ecn: Ecn::NotEct,
            full: false,
        };
        let one_rtt_budget = budget.min(base + send_size);
        if self.state == ConnState::Established
            && let Some(w) = self.write_one_rtt(now, out, one_rtt_budget, sizing, paced)
        {
            datagram = Datagram {
                ecn: w.ecn,
                full: w.full && !size_check,
            };
        }
        if out.len() == base {
            return None;
        }
        Some(datagram)
    }

    /// Whether the connection is established and in its steady state: the
    /// first datagram of a poll goes straight to the 1-RTT packet's gate
    /// (no handshake message, close, path MTU probe or size check, no
    /// amplification or path limit, its key not used up), with neither an
    /// ACK due nor a probe, so that the gate's answer is the pacer's alone.
    fn steady(&self, now: Instant) -> bool {
        self.state == ConnState::Established
            && !self.hs.send_pending
            && self.probes_pending == 0
            && self.validated
            && !self.path_validating()
            && !self.pmtu.enabled()
            && !self.acks.ack_due(now)
            && self.keys.as_ref().is_some_and(|(tx, _)| {
                tx.cipher()
                    .confidentiality_limit_blocks()
                    .is_none_or(|limit| self.sealed_blocks < limit)
            })
    }

    /// For a [`steady`](Self::steady) connection: whether this poll can be
    /// answered "nothing" from a few flags, without building a header or
    /// walking the frame sources: no source of an ack-eliciting frame (the
    /// same list the packet gate reads, plus FEC). A receiver is asked this
    /// after every datagram it takes, so it must stay cheap; false only
    /// means the full path decides.
    fn nothing_to_send(&self, now: Instant) -> bool {
        !self.ping_pending
            && !self.hs.done_frame_pending
            && self.fec_rx.is_none()
            && !self.streams.may_have_frames()
            && !self.datagrams_queued()
            && self.ack_frequency.as_ref().is_none_or(|a| !a.has_pending())
            && !self.path_frames_pending(now)
    }

    /// Writes (and for the client's first flight, first creates) our last
    /// handshake message in a long packet.
    fn write_handshake(&mut self, now: Instant, out: &mut Vec<u8>, budget: usize) {
        if self.hs.last_msg.is_none() && self.side == Side::Client {
            let mut payload = HandshakePayload {
                params: self.hs.local_params.clone(),
                early: self.hs.early.as_ref().map(|(id, d)| (id.0, d.clone())),
            };
            if payload.early.is_some() {
                // The server's replay window reads this (anti_replay).
                let wall = self.hs.wall_clock_at_zero + now.since_epoch();
                payload.params.first_flight_time_ms = Some(wall.as_millis() as u64);
                payload.params.early_data_fin = self.hs.early_fin;
            }
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
        // 3x allowance is worth a whole reply, and small paths are found out;
        // with path MTU discovery, to the base size every path carries.
        if *ty == LongType::Initial {
            let mds = if self.config.pmtud {
                crate::pmtu::BASE_UDP_PAYLOAD
            } else {
                self.config.mds()
            };
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
        self.on_handshake_message_sent();
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
}

/// The length `header` would have with `payload_len`, plus that payload.
fn header_len_for(payload_len: usize, header: &Header) -> usize {
    let mut h = header.clone();
    if let Header::Long { payload_len: p, .. } = &mut h {
        *p = payload_len;
    }
    h.len() + payload_len
}
