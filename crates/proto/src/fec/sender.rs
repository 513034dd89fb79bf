//! The sending side: which packets form a block, when a block closes, how
//! many repair symbols it gets, and the hold on loss detection while a
//! block's repair may still save its packets.
//!
//! A block opens at the first packet that carries data of a protected
//! stream and takes every 1-RTT packet after it (packet numbers are
//! consecutive; repair packets are never in a block). It closes:
//! - at the tail of a flight (the streams had nothing more to send): the
//!   repair goes out at once, where the sender would otherwise wait for a
//!   probe timeout ("soft FEC");
//! - when the congestion window has room only for the block's repair: the
//!   repair is part of the same flight, inside the window;
//! - at [`FecConfig::max_block_packets`] (at most the code's 192).
//!
//! Repair packets wait their turn like any other: they are sent only when
//! the congestion window and the pacer allow, ahead of new stream data.

use super::codec;
use super::estimator::{LossEstimator, repair_count};
use super::{FecConfig, FecPolicy, ON_PRIOR_PACKETS};
use crate::streams::StreamId;
use brisk_time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// Closed blocks remembered for the loss-detection hold and for the send
/// time of rebuilt packets.
const GUARDS_KEPT: usize = 256;

/// One repair symbol waiting to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repair {
    pub(crate) first_pn: u64,
    pub(crate) source_count: u64,
    pub(crate) repair_count: u64,
    pub(crate) index: u64,
    pub(crate) shard: Vec<u8>,
}

/// A block's hold on loss detection: its packets are not declared lost
/// by packet count before packet `after_pn` (its last repair packet) is
/// `packet_threshold` packets behind the largest acknowledged, nor by time
/// before the time threshold has passed since that repair left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Guard {
    first_pn: u64,
    last_pn: u64,
    /// `u64::MAX` while repair is still to be sent.
    pub(crate) after_pn: u64,
    /// When the last repair left; `None` while it is still to be sent.
    pub(crate) sent_at: Option<Instant>,
    /// When the block's last source packet left.
    source_sent_at: Instant,
}

#[derive(Debug)]
struct OpenBlock {
    first_pn: u64,
    payloads: Vec<Vec<u8>>,
    /// The loss rate the block is protected against at least.
    floor: f64,
    /// A packet of the block carried datagrams.
    datagrams: bool,
    last_sent_at: Instant,
}

/// The sender's FEC state: see the module documentation.
#[derive(Debug)]
pub(crate) struct FecSender {
    config: FecConfig,
    policies: BTreeMap<StreamId, FecPolicy>,
    open: Option<OpenBlock>,
    repairs: VecDeque<Repair>,
    guards: VecDeque<Guard>,
    estimator: LossEstimator,
    /// The receiver's last REPAIRED totals (packets, bursts).
    rebuilt_seen: (u64, u64),
}

impl FecSender {
    pub(crate) fn new(config: FecConfig) -> Self {
        FecSender {
            config,
            policies: BTreeMap::new(),
            open: None,
            repairs: VecDeque::new(),
            guards: VecDeque::new(),
            estimator: LossEstimator::default(),
            rebuilt_seen: (0, 0),
        }
    }

    pub(crate) fn set_policy(&mut self, id: StreamId, policy: FecPolicy) {
        self.policies.insert(id, policy);
    }

    /// The loss rate a packet with data of stream `id` is protected
    /// against at least; `None`: the stream is not protected.
    pub(crate) fn protection(&self, id: StreamId) -> Option<f64> {
        super::policy_floor(
            self.policies
                .get(&id)
                .copied()
                .unwrap_or(self.config.default_policy),
        )
    }

    /// A 1-RTT packet other than a repair packet is being sent, with this
    /// plaintext payload; `protection` from its streams' and datagrams'
    /// policies; `datagrams`: it carries datagrams.
    pub(crate) fn on_packet_sent(
        &mut self,
        now: Instant,
        pn: u64,
        payload: &[u8],
        protection: Option<f64>,
        datagrams: bool,
    ) {
        if let Some(b) = &self.open
            && b.first_pn + b.payloads.len() as u64 != pn
        {
            self.close();
        }
        let b = match (&mut self.open, protection) {
            (Some(b), _) => b,
            (None, None) => return,
            (None, Some(floor)) => self.open.insert(OpenBlock {
                first_pn: pn,
                payloads: Vec::new(),
                floor,
                datagrams: false,
                last_sent_at: now,
            }),
        };
        b.payloads.push(payload.to_vec());
        b.floor = b.floor.max(protection.unwrap_or(0.0));
        b.datagrams |= datagrams;
        b.last_sent_at = now;
    }

    /// After a packet left: closes the open block if the flight ends
    /// (`app_limited`), if the window (`cwnd` bytes, `in_flight` used) has
    /// room only for the block's repair, or if the block is full.
    ///
    /// A block of adaptive stream data that fills up while the flight goes
    /// on (bulk) closes without repair: in the middle of a transfer a
    /// repair symbol costs a packet of goodput whether or not a loss needs
    /// it, where a retransmission resends only what was lost and the
    /// transfer does not wait for it. The flight's last block, and one the
    /// window closes, keep theirs.
    pub(crate) fn after_sent(&mut self, in_flight: u64, cwnd: u64, mds: u64, app_limited: bool) {
        let Some(b) = &self.open else {
            return;
        };
        let k = b.payloads.len();
        let m = self.repair_for(k, b.floor) as u64;
        let full = k >= self.config.max_block_packets.min(codec::MAX_SOURCES);
        let window = in_flight + (m + 1) * mds > cwnd;
        if full && !app_limited && !window && b.floor == 0.0 && !b.datagrams {
            self.open = None;
        } else if app_limited || full || window {
            self.close();
        }
    }

    fn repair_for(&self, k: usize, floor: f64) -> usize {
        let seen = self.estimator.packets_seen();
        let rate = self
            .estimator
            .loss_rate()
            .max(floor * ON_PRIOR_PACKETS / (ON_PRIOR_PACKETS + seen));
        let m = repair_count(
            k,
            rate,
            self.estimator.mean_burst(),
            if floor > 0.0 {
                self.config.target_block_failure
            } else {
                self.config.adaptive_block_failure
            },
        );
        // A protected-at-least block always gets one.
        if floor > 0.0 { m.max(1) } else { m }
    }

    /// Ends the open block and queues its repair.
    fn close(&mut self) {
        let Some(b) = self.open.take() else {
            return;
        };
        let k = b.payloads.len();
        let m = self.repair_for(k, b.floor);
        if m == 0 {
            return;
        }
        // Payloads are at most a datagram, so the code takes them all; a
        // block it refuses goes unprotected.
        let Ok((_, shards)) = codec::encode(&b.payloads, m) else {
            return;
        };
        for (index, shard) in shards.into_iter().enumerate() {
            self.repairs.push_back(Repair {
                first_pn: b.first_pn,
                source_count: k as u64,
                repair_count: m as u64,
                index: index as u64,
                shard,
            });
        }
        if self.guards.len() >= GUARDS_KEPT {
            self.guards.pop_front();
        }
        self.guards.push_back(Guard {
            first_pn: b.first_pn,
            last_pn: b.first_pn + k as u64 - 1,
            after_pn: u64::MAX,
            sent_at: None,
            source_sent_at: b.last_sent_at,
        });
    }

    /// The next repair symbol to send, if any.
    pub(crate) fn next_repair(&self) -> Option<&Repair> {
        self.repairs.front()
    }

    /// The repair symbol [`FecSender::next_repair`] named left in packet
    /// `pn`.
    pub(crate) fn on_repair_sent(&mut self, now: Instant, pn: u64) {
        let Some(r) = self.repairs.pop_front() else {
            return;
        };
        let last = self
            .repairs
            .front()
            .is_none_or(|n| n.first_pn != r.first_pn);
        if last && let Some(g) = self.guards.iter_mut().find(|g| g.first_pn == r.first_pn) {
            g.after_pn = pn;
            g.sent_at = Some(now);
        }
    }

    /// Drops the repair symbol [`FecSender::next_repair`] named, unsent;
    /// the block's hold ends with its last symbol, sent or not.
    pub(crate) fn drop_repair(&mut self) {
        let Some(r) = self.repairs.pop_front() else {
            return;
        };
        if self
            .repairs
            .front()
            .is_none_or(|n| n.first_pn != r.first_pn)
        {
            self.guards.retain(|g| g.first_pn != r.first_pn);
        }
    }

    /// The hold on packet `pn`, if it is in a block whose repair may still
    /// save it.
    pub(crate) fn guard(&self, pn: u64) -> Option<Guard> {
        if let Some(b) = &self.open
            && pn >= b.first_pn
        {
            return Some(Guard {
                first_pn: b.first_pn,
                last_pn: u64::MAX,
                after_pn: u64::MAX,
                sent_at: None,
                source_sent_at: b.last_sent_at,
            });
        }
        let i = self.guards.partition_point(|g| g.first_pn <= pn);
        let g = self.guards.get(i.checked_sub(1)?)?;
        (pn <= g.last_pn).then_some(*g)
    }

    /// `n` ack-eliciting packets were acknowledged.
    pub(crate) fn on_delivered(&mut self, n: u64) {
        self.estimator.on_delivered(n);
    }

    /// Packet `pn` was declared lost.
    pub(crate) fn on_lost(&mut self, pn: u64) {
        self.estimator.on_lost(pn);
    }

    /// The receiver's REPAIRED totals; returns how many packets it rebuilt
    /// since the last report and when the newest of them was sent (if it
    /// is still remembered).
    pub(crate) fn on_rebuilt_report(
        &mut self,
        total: u64,
        bursts: u64,
        largest_pn: u64,
        queue_free: bool,
    ) -> Option<(u64, Option<Instant>)> {
        let (seen, seen_bursts) = self.rebuilt_seen;
        let new = total.checked_sub(seen).filter(|&n| n > 0)?;
        let new_bursts = bursts.saturating_sub(seen_bursts);
        self.rebuilt_seen = (total, bursts.max(seen_bursts));
        if queue_free {
            self.estimator.on_rebuilt(new, new_bursts);
        }
        let sent_at = self
            .guards
            .iter()
            .find(|g| (g.first_pn..=g.last_pn).contains(&largest_pn))
            .map(|g| g.source_sent_at);
        Some((new, sent_at))
    }

    /// The measured loss rate (fraction of packets).
    #[cfg(test)]
    pub(crate) fn loss_rate(&self) -> f64 {
        self.estimator.loss_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fec::ON_LOSS_FLOOR;

    fn sender(policy: FecPolicy) -> FecSender {
        FecSender::new(FecConfig {
            enabled: true,
            default_policy: policy,
            ..FecConfig::default()
        })
    }

    const T: Instant = Instant::ZERO;

    #[test]
    fn a_flight_tail_closes_the_block_and_queues_its_repair() {
        let mut s = sender(FecPolicy::On);
        let p = s.protection(StreamId(0));
        for pn in 5..9 {
            s.on_packet_sent(T, pn, &[pn as u8; 100], p, false);
            s.after_sent(0, 1_000_000, 1200, pn == 8);
        }
        let r = s.next_repair().expect("repair at the tail").clone();
        assert_eq!((r.first_pn, r.source_count), (5, 4));
        assert!(r.repair_count >= 1);
        assert_eq!(s.guard(6).map(|g| g.after_pn), Some(u64::MAX));
        for i in 0..r.repair_count {
            s.on_repair_sent(T, 9 + i);
        }
        assert_eq!(s.guard(6).map(|g| g.after_pn), Some(8 + r.repair_count));
        assert_eq!(s.guard(9 + r.repair_count), None);
    }

    #[test]
    fn a_full_window_closes_the_block_with_room_for_its_repair() {
        let mut s = sender(FecPolicy::On);
        let p = s.protection(StreamId(0));
        s.on_packet_sent(T, 0, &[1; 1000], p, false);
        s.after_sent(8 * 1200, 10 * 1200, 1200, false);
        assert!(s.next_repair().is_none());
        s.on_packet_sent(T, 1, &[1; 1000], p, false);
        s.after_sent(9 * 1200, 10 * 1200, 1200, false);
        assert!(s.next_repair().is_some());
    }

    #[test]
    fn off_and_a_clean_adaptive_stream_send_no_repair() {
        for policy in [FecPolicy::Off, FecPolicy::Adaptive] {
            let mut s = sender(policy);
            let p = s.protection(StreamId(0));
            s.on_packet_sent(T, 0, &[1; 100], p, false);
            s.after_sent(0, 100_000, 1200, true);
            assert!(s.next_repair().is_none(), "{policy:?}");
        }
        let mut s = sender(FecPolicy::Off);
        s.set_policy(StreamId(4), FecPolicy::On);
        assert_eq!(s.protection(StreamId(4)), Some(ON_LOSS_FLOOR));
    }

    /// At 5% measured loss an adaptive stream's block that fills up in the
    /// middle of a flight (bulk) closes without repair; the flight's last
    /// block gets its repair, and so does a full block of datagrams.
    #[test]
    fn adaptive_bulk_repairs_only_the_flights_tail() {
        let lossy = |s: &mut FecSender| {
            s.on_delivered(950);
            for pn in 0..50 {
                s.on_lost(pn * 20);
            }
        };
        let mut s = sender(FecPolicy::Adaptive);
        lossy(&mut s);
        let p = s.protection(StreamId(0));
        let mut pn = 1_000;
        for _ in 0..3 * 32 {
            s.on_packet_sent(T, pn, &[1; 1000], p, false);
            s.after_sent(0, 10_000_000, 1200, false);
            pn += 1;
        }
        assert!(s.next_repair().is_none());
        assert_eq!(s.guard(1_000), None);
        for i in 0..5 {
            s.on_packet_sent(T, pn, &[1; 1000], p, false);
            s.after_sent(0, 10_000_000, 1200, i == 4);
            pn += 1;
        }
        let r = s.next_repair().expect("the tail's repair").clone();
        assert_eq!((r.first_pn, r.source_count), (pn - 5, 5));
        // Datagrams keep repair in every block.
        let mut s = sender(FecPolicy::Adaptive);
        lossy(&mut s);
        for pn in 1_000..1_032 {
            s.on_packet_sent(T, pn, &[1; 1000], Some(0.0), true);
            s.after_sent(0, 10_000_000, 1200, false);
        }
        let r = s.next_repair().expect("the datagrams' repair").clone();
        assert_eq!((r.first_pn, r.source_count), (1_000, 32));
    }

    #[test]
    fn rebuilt_reports_count_once() {
        let mut s = sender(FecPolicy::On);
        assert_eq!(s.on_rebuilt_report(0, 0, 0, true), None);
        assert_eq!(s.on_rebuilt_report(2, 1, 7, true).map(|r| r.0), Some(2));
        assert_eq!(s.on_rebuilt_report(2, 1, 7, true), None);
        assert!(s.loss_rate() > 0.0);
    }
}
