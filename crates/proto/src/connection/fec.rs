//! Forward error correction inside the connection: the hold it puts on
//! loss detection, the REPAIR and REPAIRED frames as they arrive, and the
//! packets rebuilt from repair, processed and acknowledged as if they had
//! arrived (`crate::fec` holds the state and the code).

use super::Connection;
use crate::congestion::LossSample;
use crate::error::code;
use crate::frame::{RepairFrame, RepairedFrame, ty};
use crate::loss::LostBatch;
use brisk_time::Instant;
use brisk_wire::Ecn;
use bytes::Bytes;
use std::net::SocketAddr;

impl Connection {
    /// Loss detection, holding packets whose block's repair may still
    /// rebuild them at the receiver: declaring them lost first would
    /// retransmit what the receiver is about to recover.
    pub(super) fn detect_lost(&mut self, now: Instant) -> LostBatch {
        let fec = self.fec_tx.as_ref().filter(|_| self.fec_rx.is_some());
        self.loss.detect_lost_held(
            now,
            &mut self.sent,
            &self.rtt,
            self.peer_max_ack_delay,
            |pn| {
                fec.and_then(|f| f.guard(pn))
                    .map(|g| (g.after_pn, g.sent_at))
            },
        )
    }

    /// Keeps a copy of an authenticated packet's payload as a source
    /// symbol: a copy, as a slice would pin the whole receive buffer
    /// (a GRO batch) the packet came in for as long as it is kept.
    pub(super) fn keep_for_fec(&mut self, pn: u64, plain: &Bytes) {
        if let Some(rx) = self.fec_rx.as_mut() {
            rx.on_packet(pn, Bytes::copy_from_slice(plain));
        }
    }

    /// A REPAIR frame: allowed only once both sides announced `fec`.
    pub(super) fn handle_repair(&mut self, now: Instant, r: &RepairFrame<'_>) {
        let Some(rx) = self.fec_rx.as_mut() else {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                ty::REPAIR.into(),
                "REPAIR without fec negotiated",
            );
            return;
        };
        if let Err(why) = rx.on_repair(r) {
            self.transport_error(now, code::PROTOCOL_VIOLATION, ty::REPAIR.into(), why);
        }
    }

    /// A REPAIRED frame: the packets the peer rebuilt were lost on the
    /// path, and congestion control hears of them as of any loss (see
    /// docs/PROTOCOL.md §6.6 for why).
    pub(super) fn handle_repaired(&mut self, now: Instant, r: RepairedFrame) {
        if r.largest_pn >= self.next_pn {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                ty::REPAIRED.into(),
                "REPAIRED names a packet never sent",
            );
            return;
        }
        let queue_free = self.rtt.latest() <= self.rtt.min() + self.rtt.min() / 4;
        let Some(tx) = self.fec_active() else {
            self.transport_error(
                now,
                code::PROTOCOL_VIOLATION,
                ty::REPAIRED.into(),
                "REPAIRED without fec negotiated",
            );
            return;
        };
        let Some((packets, sent_at)) =
            tx.on_rebuilt_report(r.packets, r.bursts, r.largest_pn, queue_free)
        else {
            return;
        };
        let mds = self.mds() as u64;
        let before = self.cc.window();
        self.cc.on_loss(&LossSample {
            now,
            lost_bytes: packets * mds,
            lost_packets: packets,
            largest_lost_sent_at: sent_at.unwrap_or(now - self.rtt.smoothed()),
            persistent_congestion: false,
            bytes_in_flight: self.sent.bytes_in_flight(),
        });
        if self.cc.window() < before {
            self.stats.congestion_events += 1;
        }
        self.log_metrics(now);
    }

    /// Processes the packets repair just rebuilt, as packets that arrived
    /// with the repair packet's codepoint (the path marks a flight alike):
    /// their frames take effect and they are acknowledged, so the sender
    /// never retransmits them.
    pub(super) fn process_rebuilt(&mut self, now: Instant, remote: SocketAddr, ecn: Ecn) {
        while let Some((pn, payload)) = self.fec_rx.as_mut().and_then(|rx| rx.pop_rebuilt()) {
            if self.acks.is_duplicate(pn) {
                continue;
            }
            self.handle_payload(
                now,
                remote,
                ecn,
                pn,
                &payload,
                Some(&payload),
                payload.len(),
            );
            if !matches!(self.state, super::ConnState::Established) {
                return;
            }
        }
    }
}
