//! Address changes (docs/PROTOCOL.md §7.4): path validation, the
//! amplification limit toward an address not yet validated, congestion
//! state per path, and connection ID rotation.
//!
//! When the newest authenticated packet comes from a new address, the
//! connection sends there at once (a NAT that rebound the client's port
//! has already dropped the old mapping), but only three times the bytes
//! that address sent until it echoes a PATH_CHALLENGE, so a spoofed copy
//! of a packet cannot turn the connection into a flood toward a victim.
//! The last validated address is kept: a packet from it moves the
//! connection straight back (the copy was a spoof, the real peer is still
//! there), and so does a challenge that goes unanswered for three probe
//! timeouts. A move to another IP address is a new network: congestion
//! control and the RTT estimate start over, and the old path's state is
//! kept in case the connection moves back; a port-only change is a NAT
//! rebinding on the same path and keeps them (RFC 9000 §9.4). Either way
//! the connection addresses the peer by a connection ID it never used on
//! the old path, so the two flows cannot be linked by ID.

use super::packet_builder::PacketBuilder;
use super::{ConnState, Connection};
use crate::amplification::AMPLIFICATION_FACTOR;
use crate::cid::{CidIssuer, LocalCids, RemoteCidError, RemoteCids};
use crate::congestion::Controller;
use crate::error::code;
use crate::frame::{CHALLENGE_LEN, Frame};
use crate::loss::LossDetection;
use crate::packet::ConnectionId;
use crate::pmtu::Pmtud;
use crate::qlog;
use crate::rtt::RttEstimator;
use crate::sent_packets::SentFrame;
use brisk_time::Instant;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// PATH_RESPONSE frames waiting to be sent at most; more challenges than
/// that in one burst are a peer's error or an attack and are not echoed.
const MAX_PENDING_RESPONSES: usize = 4;

/// Bytes a PATH_CHALLENGE or PATH_RESPONSE frame takes.
const PATH_FRAME_LEN: usize = 1 + CHALLENGE_LEN;

/// Smoothed round trips after the handshake before the first spare
/// connection ID is issued: the handshake's flight and the first rounds
/// of data (a call's first frames, slow start's first windows) leave
/// without them, and a handshake that is never completed costs no key
/// operations for IDs.
const ISSUE_AFTER_RTTS: u32 = 4;

/// The wait for the first spare ID at most: a side that only acknowledges
/// (a server receiving an upload) has no RTT sample, and four times the
/// 333 ms initial RTT would leave its peer without a spare for over a
/// second, while a phone may move at any time.
const ISSUE_AFTER_MAX: std::time::Duration = std::time::Duration::from_millis(100);

/// A new path being validated.
#[derive(Debug)]
struct Validation {
    challenge: [u8; CHALLENGE_LEN],
    started: Instant,
    /// When the challenge goes out (again).
    send_at: Instant,
    /// Bytes received from and sent to the new address while it is not
    /// validated: the peer's own move (the client's `migrate`) is not
    /// limited, as the peer's address is the one that proved itself.
    amplification: Option<(u64, u64)>,
}

/// The last validated path, to move back to.
struct Fallback {
    remote: SocketAddr,
    /// Its `path_first_pn`.
    first_pn: u64,
    /// Its congestion controller, RTT estimate and path MTU search, when
    /// the move to a new network replaced them.
    saved: Option<(Box<dyn Controller>, RttEstimator, Pmtud)>,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("remote", &self.remote)
            .field("saved", &self.saved.is_some())
            .finish()
    }
}

/// A connection's migration state.
#[derive(Debug)]
pub(crate) struct Migration {
    rng: ChaCha20Rng,
    pub(crate) local: LocalCids,
    remote: RemoteCids,
    /// Both sides announced `active_connection_id_limit`: the migration
    /// frames may be sent.
    enabled: bool,
    validating: Option<Validation>,
    fallback: Option<Fallback>,
    responses: VecDeque<[u8; CHALLENGE_LEN]>,
    /// Packets numbered below this left on an earlier path: their losses
    /// say nothing about this one's congestion.
    path_first_pn: u64,
    /// When the handshake completed: spare IDs wait for
    /// [`ISSUE_AFTER_RTTS`] round trips after it.
    pub(crate) established_at: Option<Instant>,
    /// A stall of the path in use waits to be reported
    /// ([`Connection::poll_path_stall`]).
    stall_pending: bool,
    /// A probe timeout went unanswered while the peer was still heard
    /// from: whether that is a stall is decided then
    /// ([`Connection::check_stall`]).
    stall_check: Option<Instant>,
}

impl Migration {
    pub(crate) fn new(local_cid: ConnectionId, remote_cid: ConnectionId) -> Self {
        // Replaced by the endpoint's seed (`Connection::enable_migration`);
        // until then challenges are at least unpredictable to whoever does
        // not know our random connection ID.
        let mut seed = [0u8; 32];
        seed[..local_cid.len()].copy_from_slice(local_cid.as_bytes());
        Migration {
            rng: ChaCha20Rng::from_seed(seed),
            local: LocalCids::new(local_cid),
            remote: RemoteCids::new(remote_cid),
            enabled: false,
            validating: None,
            fallback: None,
            responses: VecDeque::new(),
            path_first_pn: 0,
            established_at: None,
            stall_pending: false,
            stall_check: None,
        }
    }

    /// Whether a loss of packet `pn` counts as congestion on the current
    /// path.
    pub(crate) fn on_this_path(&self, pn: u64) -> bool {
        pn >= self.path_first_pn
    }

    fn has_frames(&self, now: Instant) -> bool {
        self.enabled
            && (!self.responses.is_empty()
                || self.remote.has_frames()
                || self.validating.as_ref().is_some_and(|v| v.send_at <= now))
    }
}

impl Connection {
    /// Called by the endpoint when it creates the connection: issued IDs
    /// route back here, and challenges come from the endpoint's seeded
    /// randomness.
    pub(crate) fn enable_migration(&mut self, issuer: CidIssuer, seed: [u8; 32]) {
        self.migration.rng = ChaCha20Rng::from_seed(seed);
        self.migration.local.set_issuer(issuer);
        self.migration_params();
    }

    /// The peer's transport parameters are in: `remote_cid` is its
    /// handshake ID, and whether it takes migration frames is known.
    pub(super) fn migration_params(&mut self) {
        let m = &mut self.migration;
        m.remote.set_handshake_cid(self.remote_cid);
        let limit = self
            .peer_params
            .as_ref()
            .and_then(|p| p.active_connection_id_limit);
        m.enabled = self.config.migration && limit.is_some();
        m.local.set_peer_limit(limit.unwrap_or(0));
    }

    /// Whether spare connection IDs may go out: the connection is past
    /// its first round trips ([`ISSUE_AFTER_RTTS`], [`ISSUE_AFTER_MAX`]).
    fn cids_warm(&self, now: Instant) -> bool {
        self.migration.enabled
            && self.migration.established_at.is_some_and(|t| {
                now >= t + (self.rtt.smoothed() * ISSUE_AFTER_RTTS).min(ISSUE_AFTER_MAX)
            })
    }

    /// Whether a spare connection ID must go out now, in a packet of its
    /// own if need be and ahead of data: the peer holds none to move to
    /// (at first, and after it moved and retired one). Further spares only
    /// fill room left over in packets sent anyway
    /// ([`Connection::fill_spare_cid`]), so they never push data into an
    /// extra packet.
    fn cid_urgent(&self, now: Instant) -> bool {
        let l = &self.migration.local;
        self.cids_warm(now) && l.peer_spares() == 0 && (l.has_frames() || l.wants_more())
    }

    /// Writes one NEW_CONNECTION_ID (issuing the ID first if none is
    /// waiting) when `b` has room for it and carries none yet.
    fn write_spare_cid(&mut self, b: &mut PacketBuilder, out: &mut Vec<u8>) {
        const NEW_CID_MAX: usize = 1 + 8 + 8 + 1 + 20 + 16;
        if b.new_cid || b.room(out) < NEW_CID_MAX {
            return;
        }
        let m = &mut self.migration;
        if !m.local.has_frames() {
            m.local.issue_one(&mut m.rng);
        }
        let Some(f) = m.local.poll_frame() else {
            return;
        };
        let seq = f.sequence;
        let f = Frame::NewConnectionId(f);
        f.emit(out);
        b.new_cid = true;
        b.record(
            Some(SentFrame::NewConnectionId(seq)),
            || qlog::frame(&f),
            true,
        );
    }

    /// Room left in a packet after its data: a spare connection ID, at
    /// most one per packet, once the connection is past its first round
    /// trips.
    pub(super) fn fill_spare_cid(
        &mut self,
        now: Instant,
        b: &mut PacketBuilder,
        out: &mut Vec<u8>,
    ) {
        if self.cids_warm(now) {
            self.write_spare_cid(b, out);
        }
    }

    /// Client: the driver now sends from a new local address (another
    /// interface or network). The connection addresses the server by a
    /// fresh connection ID, starts congestion control and the RTT estimate
    /// over, and validates the new path with a PATH_CHALLENGE; the first
    /// packet from the new address tells the server. Returns false, and
    /// changes nothing, before the handshake completed or when the server
    /// does not take migration frames.
    pub fn migrate(&mut self, now: Instant) -> bool {
        if self.state != ConnState::Established || !self.migration.enabled {
            return false;
        }
        self.stats.migrations += 1;
        self.new_network_path(now, false);
        self.start_validation(now, None);
        // A probe: the old path's packets still fill the window, and the
        // server learns the new address only from a packet sent on it.
        self.probes_pending = self.probes_pending.max(1);
        self.update_timers(now);
        true
    }

    /// Client: the path in use is gone (its interface went down, or it
    /// stalled: [`Connection::poll_path_stall`]) and the driver now sends
    /// from another local address. As [`Connection::migrate`], and what
    /// is still in flight on the old path is queued again at once, to go
    /// out on the new path in order, and stops counting in flight (the
    /// new path's window starts empty, with no congestion response).
    /// Waiting for the new path's ACKs to show those packets lost would add
    /// one of its round trips to the stall. The packets stay tracked: the
    /// peer got the oldest of them before the path died, and the first
    /// ACK on the new path that says so cancels their second copies.
    /// The first packet on the new path carries an ACK of everything
    /// received, as the ACKs last sent on the old path may have died with
    /// it: a peer that was sending learns at once where the hole in what
    /// it sent begins, so what it resends on the new path is the hole.
    /// Returns false, and changes nothing, when `migrate` would.
    pub fn fail_over(&mut self, now: Instant) -> bool {
        if !self.migrate(now) {
            return false;
        }
        self.requeue_flight();
        self.acks.report_again();
        self.update_timers(now);
        true
    }

    /// Queues again at once, in stream order, what is in flight on the
    /// path being left, and takes it out of flight with no congestion
    /// response; the packets stay tracked, so an ACK for one of them
    /// cancels its second copy.
    fn requeue_flight(&mut self) {
        let pns: Vec<u64> = self
            .sent
            .iter()
            .filter(|(_, p)| p.ack_eliciting)
            .map(|(pn, _)| pn)
            .collect();
        for pn in pns {
            let Some(p) = self.sent.get_mut(pn) else {
                continue;
            };
            let frames = (!p.requeued).then(|| p.frames.clone());
            p.requeued = true;
            self.sent.leave_flight(pn);
            if let Some(frames) = frames {
                self.requeue_frames(&frames);
            }
        }
    }

    /// Whether the ACK being sent should carry a PING: with `failover` on,
    /// a side that receives a response (a stream of the peer's not yet
    /// whole, the peer's last packet carrying stream data) and has nothing
    /// ack-eliciting in flight. A phone that only downloads sends nothing
    /// that asks for an answer, so its path could die unnoticed; with one
    /// PING a round trip riding on its ACKs (the sender's data packets
    /// carry the answer), the stall rule below holds for it too: nothing
    /// acknowledged for one probe timeout. A connection whose peer has
    /// nothing to send (idle, or a response not begun) sends none, and a
    /// peer that pauses answers the PING with an ACK, so neither is a
    /// stall.
    pub(super) fn watch_ping_due(&self) -> bool {
        self.config.failover
            && self.migration.enabled
            && self.state == ConnState::Established
            && self.last_heard.is_some_and(|(_, data)| data)
            && !self.sent.has_eliciting_in_flight()
            && self.streams.receiving()
    }

    /// True once for each stall of the path in use, when
    /// `TransportConfig::failover` is on: the first probe timeout in a row
    /// with data in flight (nothing acknowledged for one probe timeout;
    /// on a side that only receives, its PING: see `watch_ping_due`),
    /// or a path moved to whose challenge went unanswered. A driver with
    /// another local address moves there with [`Connection::fail_over`];
    /// call it after [`Connection::handle_timeout`].
    pub fn poll_path_stall(&mut self) -> bool {
        std::mem::take(&mut self.migration.stall_pending)
    }

    /// The probe timeout of the path in use (RFC 9002 §6.2.1, without
    /// backoff): how long a stall goes unnoticed.
    pub fn probe_timeout(&self) -> std::time::Duration {
        LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay)
    }

    /// A probe timeout fired with data in flight: the first in a row on
    /// an established connection is a stall, with `failover` on, once
    /// the peer has also been silent for a smoothed round trip
    /// ([`Connection::check_stall`]).
    pub(super) fn note_path_stall(&mut self, now: Instant) {
        if self.config.failover
            && self.migration.enabled
            && self.state == ConnState::Established
            && self.loss.pto_count() == 1
        {
            self.migration.stall_check = Some(now);
            self.check_stall(now);
        }
    }

    /// A probe timeout went unanswered: a stall if nothing at all came
    /// from the peer for a smoothed round trip either. A receiver's PING
    /// rides among the sender's data, and its answer can be lost with a
    /// data packet while the data keeps coming: that is no stall. While
    /// packets keep arriving the check waits for a round trip of silence
    /// after the last one, as long as what timed out stays unanswered.
    pub(super) fn check_stall(&mut self, now: Instant) {
        if self.migration.stall_check.is_none() {
            return;
        }
        self.migration.stall_check = None;
        if !self.sent.has_eliciting_in_flight() || self.loss.pto_count() == 0 {
            return;
        }
        let quiet = self.rtt.smoothed();
        match self.last_heard {
            Some((at, _)) if at + quiet > now => self.migration.stall_check = Some(at + quiet),
            _ => self.report_stall(),
        }
    }

    /// When [`Connection::check_stall`] runs next.
    pub(super) fn stall_check_deadline(&self) -> Option<Instant> {
        self.migration.stall_check
    }

    fn report_stall(&mut self) {
        self.migration.stall_pending = true;
        self.stats.path_stalls += 1;
    }

    /// Spare connection IDs of the peer's we may move to.
    pub fn spare_peer_cids(&self) -> usize {
        self.migration.remote.spares()
    }

    /// Whether the current path is being validated.
    pub fn path_validating(&self) -> bool {
        self.migration.validating.is_some()
    }

    /// The connection ID we address the peer by now.
    pub fn peer_cid(&self) -> ConnectionId {
        self.remote_cid
    }

    /// The newest authenticated packet, `packet_len` bytes, came from
    /// `remote`, which is not the address we send to.
    pub(super) fn on_peer_address(&mut self, now: Instant, remote: SocketAddr, packet_len: usize) {
        self.stats.migrations += 1;
        if !self.migration.enabled {
            // A peer without migration frames: follow it, as version 1 did.
            self.remote = remote;
            return;
        }
        if self
            .migration
            .fallback
            .as_ref()
            .is_some_and(|f| f.remote == remote)
        {
            self.return_to_fallback();
            return;
        }
        let old = self.remote;
        self.remote = remote;
        let new_network = remote.ip() != old.ip();
        if self.migration.validating.is_none() {
            // The path we leave was validated: it is the one to go back to.
            self.migration.fallback = Some(Fallback {
                remote: old,
                first_pn: self.migration.path_first_pn,
                saved: None,
            });
        }
        // The old path fell silent (nothing new acknowledged for a
        // smoothed round trip, or a probe timeout fired since) and the
        // peer turns up on another network: it failed over, and what we
        // sent to the old address is gone. It goes out again at once on
        // the new path rather than after the new path's ACKs show it lost.
        let silent = self.loss.pto_count() > 0
            || self
                .last_newly_acked
                .is_none_or(|t| now.saturating_duration_since(t) > self.rtt.smoothed());
        let failed_over = new_network && self.sent.has_eliciting_in_flight() && silent;
        if new_network {
            self.new_network_path(now, true);
        } else {
            self.rotate_peer_cid();
        }
        if failed_over {
            self.requeue_flight();
            self.stats.peer_failovers += 1;
        }
        self.start_validation(now, Some(packet_len as u64));
        // The challenge leaves at once, whatever the window holds of
        // packets sent to the old address.
        self.probes_pending = self.probes_pending.max(1);
    }

    /// Bytes from `remote` arrived: they raise what may be sent to it
    /// while it is not validated.
    pub(super) fn on_path_bytes(&mut self, remote: SocketAddr, bytes: u64) {
        if let Some(v) = self.migration.validating.as_mut()
            && let Some((rx, _)) = v.amplification.as_mut()
            && remote == self.remote
        {
            *rx += bytes;
        }
    }

    /// What may still be sent to the current address while it is not
    /// validated; `None` when there is no limit.
    pub(super) fn path_allowance(&self) -> Option<u64> {
        let (rx, tx) = self.migration.validating.as_ref()?.amplification?;
        Some((AMPLIFICATION_FACTOR * rx).saturating_sub(tx))
    }

    pub(super) fn on_path_sent(&mut self, bytes: u64) {
        if let Some(v) = self.migration.validating.as_mut()
            && let Some((_, tx)) = v.amplification.as_mut()
        {
            *tx += bytes;
        }
    }

    /// Starts over the congestion controller, the RTT estimate and the
    /// path MTU search (from 1200 bytes: the new network's hops are
    /// unknown) for a new network, keeping the old ones with the fallback
    /// (when `keep` is set and there is one), and moves to a fresh peer ID.
    fn new_network_path(&mut self, now: Instant, keep: bool) {
        let cc = self.config.cc.build(&self.config.cc_config);
        let old_cc = std::mem::replace(&mut self.cc, cc);
        let old_rtt = std::mem::replace(&mut self.rtt, RttEstimator::new(self.config.initial_rtt));
        let old_pmtu = self.pmtu.clone();
        self.pmtu.restart_for_new_path();
        self.cc.set_path_ecn(self.path_ecn);
        self.ecn
            .set_pto(LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay));
        if keep
            && let Some(f) = self.migration.fallback.as_mut()
            && f.saved.is_none()
        {
            f.saved = Some((old_cc, old_rtt, old_pmtu));
        }
        self.migration.path_first_pn = self.next_pn;
        self.rotate_peer_cid();
        self.log_metrics(now);
    }

    fn rotate_peer_cid(&mut self) {
        if self.migration.remote.rotate() {
            self.remote_cid = self.migration.remote.current();
        }
    }

    fn start_validation(&mut self, now: Instant, received: Option<u64>) {
        let mut challenge = [0u8; CHALLENGE_LEN];
        self.migration.rng.fill_bytes(&mut challenge);
        self.migration.validating = Some(Validation {
            challenge,
            started: now,
            send_at: now,
            amplification: received.map(|rx| (rx, 0)),
        });
    }

    /// Back to the last validated path: a packet from it showed the peer
    /// is still there, or the new path never answered.
    fn return_to_fallback(&mut self) {
        let Some(f) = self.migration.fallback.take() else {
            return;
        };
        self.remote = f.remote;
        self.migration.validating = None;
        self.migration.path_first_pn = f.first_pn;
        if let Some((cc, rtt, pmtu)) = f.saved {
            self.cc = cc;
            self.rtt = rtt;
            self.pmtu = pmtu;
            self.ecn
                .set_pto(LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay));
        }
        self.stats.path_validations_failed += 1;
    }

    /// When the path validation timer fires next: the challenge's resend
    /// or the end of the wait for an answer. A challenge already due waits
    /// for the congestion window, not for a timer.
    pub(super) fn path_deadline(&self, now: Instant) -> Option<Instant> {
        let v = self.migration.validating.as_ref()?;
        let give_up = v.started + self.validation_timeout();
        Some(if v.send_at > now {
            v.send_at.min(give_up)
        } else {
            give_up
        })
    }

    /// Three probe timeouts of the current path, as RFC 9000 §8.2.4 waits.
    fn validation_timeout(&self) -> std::time::Duration {
        LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay) * 3
    }

    pub(super) fn on_path_timeout(&mut self, now: Instant) {
        let Some(v) = self.migration.validating.as_ref() else {
            return;
        };
        if now >= v.started + self.validation_timeout() {
            if self.migration.fallback.is_some() {
                self.return_to_fallback();
            } else {
                self.migration.validating = None;
                self.stats.path_validations_failed += 1;
                // The path we moved to never answered: the driver may
                // have another.
                if self.config.failover {
                    self.report_stall();
                }
            }
        }
    }

    /// Whether a migration frame waits to be sent.
    pub(super) fn path_frames_pending(&self, now: Instant) -> bool {
        self.migration.has_frames(now) || self.cid_urgent(now)
    }

    /// The migration frames of one packet: responses first (the peer waits
    /// on them), then our challenge, a spare ID when the peer holds none,
    /// and IDs retired.
    pub(super) fn fill_path_frames(
        &mut self,
        now: Instant,
        b: &mut PacketBuilder,
        out: &mut Vec<u8>,
    ) {
        if !self.migration.enabled {
            return;
        }
        while b.room(out) >= PATH_FRAME_LEN {
            let Some(data) = self.migration.responses.pop_front() else {
                break;
            };
            let f = Frame::PathResponse(data);
            f.emit(out);
            b.record(None, || qlog::frame(&f), true);
        }
        let timeout = self.pto_for_challenge();
        if let Some(v) = self.migration.validating.as_mut()
            && v.send_at <= now
            && b.room(out) >= PATH_FRAME_LEN
        {
            let f = Frame::PathChallenge(v.challenge);
            f.emit(out);
            v.send_at = now + timeout;
            // Our own move: the peer may send the new address three times
            // what it got from it until the challenge is answered, so the
            // datagram is padded to full size (RFC 9000 §8.2.1).
            b.pad |= v.amplification.is_none();
            b.record(None, || qlog::frame(&f), true);
        }
        if self.cid_urgent(now) {
            self.write_spare_cid(b, out);
        }
        // Type and an 8-byte sequence number at most.
        const RETIRE_MAX: usize = 9;
        while b.room(out) >= RETIRE_MAX {
            let Some(seq) = self.migration.remote.poll_retire() else {
                break;
            };
            let f = Frame::RetireConnectionId(seq);
            f.emit(out);
            b.record(
                Some(SentFrame::RetireConnectionId(seq)),
                || qlog::frame(&f),
                true,
            );
        }
    }

    /// A challenge is sent again after a probe timeout of the new path.
    fn pto_for_challenge(&self) -> std::time::Duration {
        LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay)
    }

    /// A migration frame from the peer. Frames from a peer that did not
    /// announce migration, and ID frames that break the rules, close the
    /// connection.
    pub(super) fn handle_path_frame(&mut self, now: Instant, f: Frame<'_>) {
        let frame_type = f.frame_type().into();
        if !self.migration.enabled {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                frame_type,
                "a migration frame from a peer that did not announce migration",
            );
            return;
        }
        let result = match f {
            Frame::PathChallenge(data) => {
                if self.migration.responses.len() < MAX_PENDING_RESPONSES {
                    self.migration.responses.push_back(data);
                    // The peer waits on the answer to use the path: it
                    // goes now, as a probe, not when the window opens.
                    self.probes_pending = self.probes_pending.max(1);
                }
                Ok(())
            }
            Frame::PathResponse(data) => {
                if self
                    .migration
                    .validating
                    .as_ref()
                    .is_some_and(|v| v.challenge == data)
                {
                    self.migration.validating = None;
                    self.migration.fallback = None;
                    self.stats.paths_validated += 1;
                }
                Ok(())
            }
            Frame::NewConnectionId(n) => match self.migration.remote.on_new(&n) {
                Ok(moved) => {
                    if moved {
                        self.remote_cid = self.migration.remote.current();
                    }
                    Ok(())
                }
                Err(RemoteCidError::TooMany) => Err((
                    CONNECTION_ID_LIMIT_ERROR,
                    "more connection IDs than active_connection_id_limit",
                )),
                Err(RemoteCidError::Changed) => Err((
                    code::PROTOCOL_VIOLATION,
                    "NEW_CONNECTION_ID changed an ID already given",
                )),
            },
            Frame::RetireConnectionId(seq) => self
                .migration
                .local
                .on_retire(seq)
                .map_err(|reason| (code::PROTOCOL_VIOLATION, reason)),
            _ => Ok(()),
        };
        if let Err((code, reason)) = result {
            self.transport_error(now, code, frame_type, reason);
        }
    }

    /// A lost packet carried these migration frames: send them again.
    pub(super) fn requeue_path_frame(&mut self, f: SentFrame) {
        match f {
            SentFrame::NewConnectionId(seq) => self.migration.local.on_lost(seq),
            SentFrame::RetireConnectionId(seq) => self.migration.remote.on_retire_lost(seq),
            _ => {}
        }
    }
}

/// CONNECTION_ID_LIMIT_ERROR (RFC 9000 §20.1): more IDs than we keep.
const CONNECTION_ID_LIMIT_ERROR: u64 = 0x09;
