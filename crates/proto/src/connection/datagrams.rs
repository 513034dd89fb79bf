//! Unreliable datagrams inside the connection: the application's calls,
//! the DATAGRAM frame source of the packet builder and the frames as they
//! arrive (`crate::datagrams` holds the queues and counters).

use super::packet_builder::{FEC_RESERVE, PacketBuilder};
use super::{ConnState, Connection, Event};
use crate::crypto::TAG_LEN;
use crate::datagrams::{DatagramError, DatagramStats};
use crate::error::code;
use crate::fec::FecPolicy;
use crate::frame::{DatagramFrame, Frame, ty};
use crate::qlog;
use crate::varint;
use brisk_time::Instant;
use bytes::Bytes;

/// The longest short-header packet number, in bytes: a datagram the
/// application was told fits must fit whatever number its packet gets.
const PN_LEN_MAX: usize = 4;

impl Connection {
    /// The largest datagram [`Connection::send_datagram`] takes now: what
    /// one packet carries in a DATAGRAM frame, and no more than the peer
    /// announced. `None` until the handshake finished, and for a peer that
    /// takes no datagrams.
    pub fn max_datagram_size(&self) -> Option<usize> {
        if self.state != ConnState::Established {
            return None;
        }
        let peer_max = self.peer_params.as_ref()?.max_datagram_frame_size?;
        let peer_max = usize::try_from(peer_max).unwrap_or(usize::MAX);
        let from_peer = peer_max.saturating_sub(1 + varint::size(peer_max as u64).unwrap_or(8));
        let fec = if self.fec_rx.is_some() {
            FEC_RESERVE
        } else {
            0
        };
        let room = self
            .mds()
            .saturating_sub(1 + self.remote_cid.len() + PN_LEN_MAX + TAG_LEN + fec);
        // Frame type and a length varint of up to 2 bytes (under 16 KiB).
        let from_packet = room.saturating_sub(3);
        Some(from_peer.min(from_packet))
    }

    /// Queues an unreliable datagram: sent once, in order with the other
    /// datagrams, ahead of stream data, never retransmitted, and dropped
    /// unsent (counted in [`DatagramStats::expired`]) if it has not left by
    /// `deadline`. A full send queue drops its oldest datagram.
    pub fn send_datagram(
        &mut self,
        now: Instant,
        data: Bytes,
        deadline: Option<Instant>,
    ) -> Result<(), DatagramError> {
        if self.state != ConnState::Established {
            return Err(DatagramError::NotEstablished);
        }
        if self
            .peer_params
            .as_ref()
            .is_none_or(|p| p.max_datagram_frame_size.is_none())
        {
            return Err(DatagramError::UnsupportedByPeer);
        }
        let max = self.max_datagram_size().unwrap_or(0);
        if data.len() > max {
            return Err(DatagramError::TooLarge {
                len: data.len(),
                max,
            });
        }
        if deadline.is_some_and(|d| now > d) {
            return Err(DatagramError::DeadlinePassed);
        }
        self.datagrams.push_send(data, deadline);
        Ok(())
    }

    /// The oldest received datagram the application has not read.
    pub fn recv_datagram(&mut self) -> Option<Bytes> {
        self.datagrams.pop_recv()
    }

    /// How much forward error correction protects packets carrying
    /// datagrams (see [`crate::DatagramConfig::fec_policy`]); no effect
    /// unless FEC is negotiated.
    pub fn set_datagram_fec(&mut self, policy: FecPolicy) {
        self.datagrams.set_fec_policy(policy);
    }

    /// Bytes of datagrams queued and not sent yet: an encoder sizes its
    /// next frame after what still waits, as with a stream's unsent bytes.
    pub fn datagram_queued_bytes(&self) -> u64 {
        self.datagrams.queued_bytes()
    }

    /// The datagram counters alone (also in [`Connection::stats`]).
    pub fn datagram_stats(&self) -> DatagramStats {
        self.datagrams.stats()
    }

    /// The loss rate a packet carrying datagrams is protected against at
    /// least, as for a stream with the datagram policy.
    pub(super) fn datagram_protection(&self) -> Option<f64> {
        crate::fec::policy_floor(self.datagrams.config().fec_policy)
    }

    /// Whether datagrams wait to be sent, after dropping those past their
    /// deadline.
    pub(super) fn datagrams_pending(&mut self, now: Instant) -> bool {
        self.datagrams.drop_expired(now);
        self.datagrams.has_queued()
    }

    /// Whether datagrams still wait, without dropping any.
    pub(super) fn datagrams_queued(&self) -> bool {
        self.datagrams.has_queued()
    }

    /// Writes waiting datagrams into the packet, oldest first, while they
    /// fit; one that does not fit waits for the next packet (never
    /// split).
    pub(super) fn fill_datagrams(
        &mut self,
        now: Instant,
        b: &mut PacketBuilder,
        out: &mut Vec<u8>,
    ) {
        self.datagrams.drop_expired(now);
        while let Some(len) = self.datagrams.next_len() {
            if DatagramFrame::encoded_len(len) > b.room(out) {
                b.datagram_blocked();
                return;
            }
            let Some(data) = self.datagrams.pop_send() else {
                return;
            };
            let frame = DatagramFrame { data: &data };
            frame.emit(out);
            b.record_datagram(|| qlog::frame(&Frame::Datagram(frame)));
        }
    }

    /// A DATAGRAM frame: allowed only if we announced
    /// `max_datagram_frame_size`, and no larger than that (RFC 9221 §3).
    pub(super) fn handle_datagram_frame(&mut self, now: Instant, d: DatagramFrame<'_>) {
        let size = DatagramFrame::encoded_len(d.data.len()) as u64;
        let why = match self.hs.local_params.max_datagram_frame_size {
            None => Some("DATAGRAM without max_datagram_frame_size announced"),
            Some(max) if size > max => Some("DATAGRAM larger than max_datagram_frame_size"),
            Some(_) => None,
        };
        if let Some(why) = why {
            self.datagrams.on_rejected();
            self.transport_error(now, code::PROTOCOL_VIOLATION, ty::DATAGRAM_LEN.into(), why);
            return;
        }
        if self.datagrams.on_received(d.data) {
            self.events.push_back(Event::DatagramsReadable);
        }
    }
}
