//! The unit that flows through queues and links: a real IP datagram plus the
//! bookkeeping a model needs (an id for tracing, timestamps for delay).

use brisk_time::Instant;
use brisk_wire::{Ecn, FlowKey, WireError, ip};

/// A real IPv4 or IPv6 datagram in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The whole datagram, IP header first. Rewrite its ECN field with
    /// [`Packet::set_ecn`], which keeps the copy the packet reads it from.
    pub data: Vec<u8>,
    /// Unique within a run; assigned by whoever created the packet.
    pub id: u64,
    /// When the packet entered the network (sent by its host).
    pub sent_at: Instant,
    /// When it entered the current queue; set by the queue.
    pub enqueued_at: Instant,
    flow: FlowKey,
    /// The header's ECN codepoint, kept beside it: a packet that waited in
    /// a deep queue has a cold header, and reading it there was the
    /// costliest load of a saturated run.
    ecn: Ecn,
}

impl Packet {
    /// Wraps a datagram, validating its IP header once. Malformed bytes are
    /// an error, so every model downstream may rely on a valid header.
    pub fn new(id: u64, sent_at: Instant, data: Vec<u8>) -> Result<Packet, WireError> {
        let s = ip::summarize(&data)?;
        let mut data = data;
        data.truncate(s.total_len);
        Ok(Packet {
            data,
            id,
            sent_at,
            enqueued_at: sent_at,
            flow: s.flow,
            ecn: s.ecn,
        })
    }

    /// Bytes on the wire (the IP datagram; link-layer framing is not counted).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The 5-tuple, read once at construction.
    pub fn flow(&self) -> FlowKey {
        self.flow
    }

    /// The ECN codepoint as it is now in the header.
    pub fn ecn(&self) -> Ecn {
        self.ecn
    }

    /// Rewrites the ECN codepoint in the real header (checksum kept valid).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        // The header was validated in `new`, so this cannot fail.
        if ip::set_ecn(&mut self.data, ecn).is_ok() {
            self.ecn = ecn;
        }
    }

    /// Marks CE if the packet is ECN-capable; returns whether it was.
    /// A queue calls this where it would otherwise drop.
    pub fn try_mark_ce(&mut self) -> bool {
        if self.ecn().is_ecn_capable() {
            self.set_ecn(Ecn::Ce);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// A UDP packet of `len` bytes in total from flow `flow` with codepoint `ecn`.
    pub fn udp(id: u64, flow: u16, len: usize, ecn: Ecn) -> Packet {
        let src: SocketAddr = format!("10.0.0.1:{}", 1000 + flow).parse().unwrap();
        let dst: SocketAddr = "10.0.1.1:5000".parse().unwrap();
        let payload = vec![0u8; len.saturating_sub(28)];
        let data = ip::udp_datagram(src, dst, ecn, &payload).unwrap();
        Packet::new(id, Instant::ZERO, data).unwrap()
    }

    #[test]
    fn marking_rewrites_real_header() {
        let mut p = udp(1, 0, 100, Ecn::Ect0);
        assert_eq!(p.len(), 100);
        assert!(p.try_mark_ce());
        assert_eq!(ip::ecn(&p.data).unwrap(), Ecn::Ce);
        assert_eq!(p.ecn(), Ecn::Ce);
        let mut n = udp(2, 0, 100, Ecn::NotEct);
        assert!(!n.try_mark_ce());
        assert_eq!(n.ecn(), Ecn::NotEct);
    }

    #[test]
    fn malformed_bytes_are_refused() {
        assert!(Packet::new(1, Instant::ZERO, vec![0x45, 0, 0]).is_err());
        assert!(Packet::new(1, Instant::ZERO, Vec::new()).is_err());
    }
}
