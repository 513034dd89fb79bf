//! The sender's record of 1-RTT packets not yet acknowledged or declared
//! lost: what each carried (so its content can be handed back for
//! retransmission in a new packet), when it left and with which codepoint.

use crate::streams::{ControlFrame, StreamId};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// A retransmittable piece of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentFrame {
    Stream {
        id: StreamId,
        offset: u64,
        len: u64,
        fin: bool,
    },
    Control(ControlFrame),
    HandshakeDone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentPacket {
    pub time_sent: Instant,
    pub size_bytes: u64,
    /// Carries a frame other than ACK, PADDING or CONNECTION_CLOSE; only
    /// these count towards bytes in flight.
    pub ack_eliciting: bool,
    pub ecn: Ecn,
    /// The sender had nothing more to send when this packet left.
    pub app_limited: bool,
    /// The largest packet number of the ACK frame this packet carried.
    pub largest_acked: Option<u64>,
    pub frames: Vec<SentFrame>,
    /// A probe already handed the frames back for retransmission.
    pub requeued: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SentPackets {
    packets: BTreeMap<u64, SentPacket>,
    bytes_in_flight: u64,
    eliciting_in_flight: u64,
}

impl SentPackets {
    pub fn insert(&mut self, pn: u64, p: SentPacket) {
        if p.ack_eliciting {
            self.bytes_in_flight += p.size_bytes;
            self.eliciting_in_flight += 1;
        }
        self.packets.insert(pn, p);
    }

    fn account_removed(&mut self, p: &SentPacket) {
        if p.ack_eliciting {
            self.bytes_in_flight -= p.size_bytes;
            self.eliciting_in_flight -= 1;
        }
    }

    pub fn remove(&mut self, pn: u64) -> Option<SentPacket> {
        let p = self.packets.remove(&pn)?;
        self.account_removed(&p);
        Some(p)
    }

    /// Removes and returns every packet numbered within `range`, ascending.
    pub fn remove_range(&mut self, range: RangeInclusive<u64>) -> Vec<(u64, SentPacket)> {
        let pns: Vec<u64> = self.packets.range(range).map(|(&pn, _)| pn).collect();
        pns.into_iter()
            .filter_map(|pn| self.remove(pn).map(|p| (pn, p)))
            .collect()
    }

    pub fn get_mut(&mut self, pn: u64) -> Option<&mut SentPacket> {
        self.packets.get_mut(&pn)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &SentPacket)> {
        self.packets.iter().map(|(&pn, p)| (pn, p))
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub fn has_eliciting_in_flight(&self) -> bool {
        self.eliciting_in_flight > 0
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u64, eliciting: bool) -> SentPacket {
        SentPacket {
            time_sent: Instant::ZERO,
            size_bytes: size,
            ack_eliciting: eliciting,
            ecn: Ecn::NotEct,
            app_limited: false,
            largest_acked: None,
            frames: Vec::new(),
            requeued: false,
        }
    }

    #[test]
    fn in_flight_counts_only_ack_eliciting_packets() {
        let mut s = SentPackets::default();
        s.insert(0, pkt(1200, true));
        s.insert(1, pkt(50, false));
        s.insert(2, pkt(1000, true));
        assert_eq!(s.bytes_in_flight(), 2200);
        let removed = s.remove_range(1..=5);
        assert_eq!(
            removed.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(s.bytes_in_flight(), 1200);
        assert!(s.has_eliciting_in_flight());
        assert!(s.remove(0).is_some() && s.remove(0).is_none());
        assert_eq!((s.bytes_in_flight(), s.len()), (0, 0));
        assert!(!s.has_eliciting_in_flight());
    }
}
