//! IPv6 fixed headers (RFC 8200). Extension headers are left in the payload;
//! [`Ipv6Packet::upper_layer`] skips the common ones to find TCP or UDP.

use crate::{Ecn, Result, WireError};
use std::net::Ipv6Addr;

mod field {
    use core::ops::Range;
    pub const VTC_FLOW: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Range<usize> = 8..24;
    pub const DST: Range<usize> = 24..40;
}

pub const HEADER_LEN: usize = 40;

/// A read (and, over `&mut [u8]`, write) view of an IPv6 datagram.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Validates version and payload length against the buffer.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated { need: HEADER_LEN, have: b.len() });
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::BadVersion(b[0] >> 4));
        }
        let total = HEADER_LEN + usize::from(u16::from_be_bytes([b[4], b[5]]));
        if b.len() < total {
            return Err(WireError::Truncated { need: total, have: b.len() });
        }
        Ok(Ipv6Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn traffic_class(&self) -> u8 {
        let b = self.b();
        (b[0] << 4) | (b[1] >> 4)
    }
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }
    pub fn flow_label(&self) -> u32 {
        let b = self.b();
        u32::from_be_bytes([0, b[1] & 0x0f, b[2], b[3]])
    }
    pub fn payload_len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[4], self.b()[5]]))
    }
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    pub fn src(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[field::SRC]);
        Ipv6Addr::from(a)
    }
    pub fn dst(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[field::DST]);
        Ipv6Addr::from(a)
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.total_len()]
    }

    /// Walks hop-by-hop, routing, destination-options and fragment headers
    /// and returns `(protocol, offset of the upper-layer header)`. A
    /// non-first fragment has no upper-layer header and yields `None`.
    pub fn upper_layer(&self) -> Option<(u8, usize)> {
        let b = &self.b()[..self.total_len()];
        let mut next = self.next_header();
        let mut off = HEADER_LEN;
        for _ in 0..8 {
            match next {
                0 | 43 | 60 => {
                    let h = b.get(off..off + 2)?;
                    next = h[0];
                    off += (usize::from(h[1]) + 1) * 8;
                }
                44 => {
                    let h = b.get(off..off + 8)?;
                    if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 {
                        return None;
                    }
                    next = h[0];
                    off += 8;
                }
                _ => return (off <= b.len()).then_some((next, off)),
            }
        }
        None
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Rewrites the ECN bits (IPv6 has no header checksum to fix).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = self.buffer.as_mut();
        b[1] = (b[1] & !0x30) | (ecn.bits() << 4);
    }

    /// Decrements the hop limit; false when the packet must die.
    pub fn decrement_hop_limit(&mut self) -> bool {
        let b = self.buffer.as_mut();
        if b[field::HOP_LIMIT] <= 1 {
            return false;
        }
        b[field::HOP_LIMIT] -= 1;
        true
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let t = self.total_len();
        &mut self.buffer.as_mut()[HEADER_LEN..t]
    }
}

/// A parsed IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub next_header: u8,
    pub dscp: u8,
    pub ecn: Ecn,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub payload_len: usize,
}

impl Ipv6Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Self> {
        Ok(Ipv6Repr {
            src: p.src(),
            dst: p.dst(),
            next_header: p.next_header(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            flow_label: p.flow_label(),
            hop_limit: p.hop_limit(),
            payload_len: p.payload_len(),
        })
    }

    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header into `buf[..40]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated { need: HEADER_LEN, have: buf.len() });
        }
        let len = u16::try_from(self.payload_len)
            .map_err(|_| WireError::Malformed("ipv6 payload over 65535 bytes (no jumbograms)"))?;
        let tc = u32::from((self.dscp << 2) | self.ecn.bits());
        let word = (6u32 << 28) | (tc << 20) | (self.flow_label & 0x000f_ffff);
        buf[field::VTC_FLOW].copy_from_slice(&word.to_be_bytes());
        buf[field::PAYLOAD_LEN].copy_from_slice(&len.to_be_bytes());
        buf[field::NEXT_HEADER] = self.next_header;
        buf[field::HOP_LIMIT] = self.hop_limit;
        buf[field::SRC].copy_from_slice(&self.src.octets());
        buf[field::DST].copy_from_slice(&self.dst.octets());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2001:db8::1 -> 2001:db8::2, UDP, DSCP 10 + ECT(0), flow label 0x12345, 2-byte payload.
    const BYTES: [u8; 42] = [
        0x62, 0xa1, 0x23, 0x45, 0x00, 0x02, 17, 64, //
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
        0xaa, 0xbb,
    ];

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            next_header: 17,
            dscp: 10,
            ecn: Ecn::Ect0,
            flow_label: 0x12345,
            hop_limit: 64,
            payload_len: 2,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Ipv6Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.dscp(), 10);
        assert_eq!(p.ecn(), Ecn::Ect0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        assert_eq!(p.upper_layer(), Some((17, 40)));
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 42];
        repr().emit(&mut buf).unwrap();
        buf[40..].copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn parse() {
        let p = Ipv6Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn set_ecn_keeps_dscp_and_flow_label() {
        let mut buf = BYTES;
        let mut p = Ipv6Packet::new_checked(&mut buf[..]).unwrap();
        p.set_ecn(Ecn::Ce);
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.dscp(), 10);
        assert_eq!(p.flow_label(), 0x12345);
    }

    #[test]
    fn rejects_malformed() {
        assert!(Ipv6Packet::new_checked(&BYTES[..39]).is_err());
        assert!(Ipv6Packet::new_checked(&BYTES[..41]).is_err());
        let mut b = BYTES;
        b[0] = 0x40;
        assert_eq!(Ipv6Packet::new_checked(&b[..]).err(), Some(WireError::BadVersion(4)));
    }
}
