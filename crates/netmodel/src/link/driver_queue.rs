//! The driver queue of an aggregating radio ([`super::bursts`] with
//! `driver_queue`): a short FIFO below the queue discipline that holds at
//! most a set air time of packets at the link's current rate. It takes a
//! packet from the queue discipline whenever it holds less than that, as
//! Linux's byte queue limits and Wi-Fi airtime queue limits let a driver
//! pull from the qdisc, so one packet may take it past its limit. The
//! transmit opportunities drain it. It never drops: the queue discipline
//! above it holds (and drops, or marks) whatever it has no room for.

use crate::packet::Packet;
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Debug)]
pub(crate) struct DriverQueue {
    /// Air time it holds at most, at the rate of the moment.
    airtime: Duration,
    packets: VecDeque<Packet>,
    /// IP bytes of `packets`.
    bytes: usize,
}

impl DriverQueue {
    pub(crate) fn new(airtime: Duration) -> DriverQueue {
        DriverQueue {
            airtime,
            packets: VecDeque::new(),
            bytes: 0,
        }
    }

    /// True when what it holds takes less than its air time at `bps`, so
    /// it takes another packet.
    pub(crate) fn has_room(&self, bps: u64) -> bool {
        let held_bit_ns = self.bytes as u128 * 8 * 1_000_000_000;
        held_bit_ns < self.airtime.as_nanos() * u128::from(bps)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub(crate) fn push(&mut self, packet: Packet) {
        self.bytes += packet.len();
        self.packets.push_back(packet);
    }

    pub(crate) fn pop(&mut self) -> Option<Packet> {
        let packet = self.packets.pop_front()?;
        self.bytes -= packet.len();
        Some(packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use brisk_wire::Ecn;

    #[test]
    fn takes_packets_while_below_its_air_time_and_keeps_their_order() {
        // 8 ms at 10 Mbit/s is 10,000 bytes: ten 1000-byte packets fill it.
        let mut d = DriverQueue::new(Duration::from_millis(8));
        let mut n = 0;
        while d.has_room(10_000_000) {
            d.push(udp(n, 0, 1000, Ecn::NotEct));
            n += 1;
        }
        assert_eq!(n, 10);
        // At a quarter of the rate the same bytes are four times the air time.
        assert!(!d.has_room(2_500_000));
        // A faster rate makes room.
        assert!(d.has_room(20_000_000));
        let order: Vec<u64> = std::iter::from_fn(|| d.pop()).map(|p| p.id).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
        assert!(d.is_empty() && d.has_room(1));
    }
}
