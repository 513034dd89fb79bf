//! IPv6 fixed headers (RFC 8200). Extension headers are left in the payload;
//! [`Ipv6Packet::upper_layer`] skips the common ones to find TCP or UDP.

use crate::{Ecn, Result, WireError};
use std::net::Ipv6Addr;

mod field {
    use core::ops::Range;
    pub(super) const VTC_FLOW: Range<usize> = 0..4;
    pub(super) const PAYLOAD_LEN: Range<usize> = 4..6;
    pub(super) const NEXT_HEADER: usize = 6;
    pub(super) const HOP_LIMIT: usize = 7;
    pub(super) const SRC: Range<usize> = 8..24;
    pub(super) const DST: Range<usize> = 24..40;
}

/// Length of the fixed header in bytes; extension headers come after it.
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
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::BadVersion(b[0] >> 4));
        }
        let total = HEADER_LEN + usize::from(u16::from_be_bytes([b[4], b[5]]));
        if b.len() < total {
            return Err(WireError::Truncated {
                need: total,
                have: b.len(),
            });
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
    /// The DSCP, the upper six bits of the traffic class (RFC 2474), 0 to 63.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    /// The ECN codepoint from the two low bits of the traffic class (RFC 3168).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }
    /// The 20-bit flow label (RFC 6437); 0 means the sender set none.
    pub fn flow_label(&self) -> u32 {
        let b = self.b();
        u32::from_be_bytes([0, b[1] & 0x0f, b[2], b[3]])
    }
    /// Payload length field in bytes: everything after the fixed header,
    /// extension headers included. A jumbogram (field 0 with a hop-by-hop
    /// jumbo option) reads as 0.
    pub fn payload_len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[4], self.b()[5]]))
    }
    /// Fixed header plus payload length, in bytes; bytes past it in the buffer
    /// belong to no getter.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }
    /// The header after the fixed one: an extension header (0, 43, 44, 60) or
    /// the upper layer (6 TCP, 17 UDP, 58 ICMPv6); see `upper_layer`.
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }
    /// Hops left before a router drops the datagram (IPv4's TTL).
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[field::SRC]);
        Ipv6Addr::from(a)
    }
    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[field::DST]);
        Ipv6Addr::from(a)
    }
    /// The bytes after the fixed header up to the payload length, extension
    /// headers included.
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
    /// Gives the buffer back.
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

    /// The bytes after the fixed header up to the payload length, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let t = self.total_len();
        &mut self.buffer.as_mut()[HEADER_LEN..t]
    }

    // The setters below never touch the payload length `new_checked`
    // validated.

    /// Sets the six DSCP bits (higher bits of `dscp` are dropped); ECN stays.
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = self.buffer.as_mut();
        let tc = ((dscp & 0x3f) << 2) | ((b[1] >> 4) & 0b11);
        b[0] = (b[0] & 0xf0) | (tc >> 4);
        b[1] = (b[1] & 0x0f) | (tc << 4);
    }
    /// Sets the 20-bit flow label (higher bits of `label` are dropped).
    pub fn set_flow_label(&mut self, label: u32) {
        let b = self.buffer.as_mut();
        let [_, hi, mid, lo] = label.to_be_bytes();
        b[1] = (b[1] & 0xf0) | (hi & 0x0f);
        b[2] = mid;
        b[3] = lo;
    }
    /// Writes the next-header field; an upper-layer checksum is not updated.
    pub fn set_next_header(&mut self, next_header: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = next_header;
    }
    /// Writes the hop limit.
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hop_limit;
    }
    /// Writes the source address; an upper-layer checksum over the
    /// pseudo-header is not updated.
    pub fn set_src(&mut self, src: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&src.octets());
    }
    /// Writes the destination address; an upper-layer checksum over the
    /// pseudo-header is not updated.
    pub fn set_dst(&mut self, dst: Ipv6Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&dst.octets());
    }
}

/// A parsed IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Next header: what `emit` writes, the upper layer when no extension
    /// headers follow.
    pub next_header: u8,
    /// DSCP, six bits (0 to 63); `emit` refuses larger values.
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Flow label, 20 bits; `emit` refuses larger values.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Bytes after the fixed header, extension headers included; `emit`
    /// refuses more than 65,535 (no jumbograms).
    pub payload_len: usize,
}

impl Ipv6Repr {
    /// Reads the fixed header; IPv6 has no header checksum, so this cannot fail
    /// after `new_checked` (the `Result` matches the other formats).
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

    /// Always 40: `emit` writes no extension headers.
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header into `buf[..40]`. Fails when the buffer or
    /// payload length does not fit, when `dscp` has more than six bits or
    /// `flow_label` more than twenty.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: buf.len(),
            });
        }
        if self.dscp > 0x3f {
            return Err(WireError::Malformed("dscp over 63"));
        }
        if self.flow_label > 0x000f_ffff {
            return Err(WireError::Malformed("ipv6 flow label over 20 bits"));
        }
        let len = u16::try_from(self.payload_len)
            .map_err(|_| WireError::Malformed("ipv6 payload over 65535 bytes (no jumbograms)"))?;
        let tc = u32::from((self.dscp << 2) | self.ecn.bits());
        let word = (6u32 << 28) | (tc << 20) | self.flow_label;
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
    use crate::fixtures::{TCP6_SYNACK, UDP6};

    /// The header of `fixtures::UDP6`: DSCP 10 + ECT(0), a Linux UDP send.
    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            next_header: 17,
            dscp: 10,
            ecn: Ecn::Ect0,
            flow_label: 0xffce0,
            hop_limit: 64,
            payload_len: 13,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Ipv6Packet::new_checked(&UDP6[..]).unwrap();
        assert_eq!(p.dscp(), 10);
        assert_eq!(p.ecn(), Ecn::Ect0);
        assert_eq!(p.flow_label(), 0xffce0);
        assert_eq!(p.payload_len(), 13);
        assert_eq!(p.total_len(), 53);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst(), "2001:db8::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.payload(), &UDP6[40..]);
        assert_eq!(p.upper_layer(), Some((17, 40)));

        let p = Ipv6Packet::new_checked(&TCP6_SYNACK[..]).unwrap();
        let got = (p.next_header(), p.ecn(), p.flow_label(), p.upper_layer());
        assert_eq!(got, (6, Ecn::NotEct, 0x51d7e, Some((6, 40))));
    }

    #[test]
    fn construct() {
        // Keep the version and payload length; setters do the rest.
        let mut buf = [0u8; 53];
        buf[0] = 0x60;
        buf[4..6].copy_from_slice(&UDP6[4..6]);
        let mut p = Ipv6Packet::new_checked(&mut buf[..]).unwrap();
        p.set_dscp(10);
        p.set_ecn(Ecn::Ect0);
        p.set_flow_label(0xffce0);
        p.set_next_header(17);
        p.set_hop_limit(64);
        p.set_src("2001:db8::1".parse().unwrap());
        p.set_dst("2001:db8::2".parse().unwrap());
        p.payload_mut().copy_from_slice(&UDP6[40..]);
        assert_eq!(buf, UDP6);
    }

    #[test]
    fn parse() {
        let p = Ipv6Packet::new_checked(&UDP6[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn emit() {
        let mut buf = [0xa5u8; 40];
        repr().emit(&mut buf).unwrap();
        assert_eq!(buf, UDP6[..40]);
        for bad in [
            Ipv6Repr { dscp: 64, ..repr() },
            Ipv6Repr {
                flow_label: 0x10_0000,
                ..repr()
            },
            Ipv6Repr {
                payload_len: 65536,
                ..repr()
            },
        ] {
            assert!(bad.emit(&mut buf).is_err(), "{bad:?}");
        }
        assert!(repr().emit(&mut buf[..39]).is_err());
    }

    #[test]
    fn field_setters_leave_their_neighbours_alone() {
        let mut buf = UDP6;
        let mut p = Ipv6Packet::new_checked(&mut buf[..]).unwrap();
        p.set_ecn(Ecn::Ce);
        assert_eq!((p.ecn(), p.dscp(), p.flow_label()), (Ecn::Ce, 10, 0xffce0));
        p.set_dscp(0x2e);
        assert_eq!(
            (p.ecn(), p.dscp(), p.flow_label()),
            (Ecn::Ce, 0x2e, 0xffce0)
        );
        p.set_flow_label(0xfff0_0001);
        assert_eq!((p.ecn(), p.dscp(), p.flow_label()), (Ecn::Ce, 0x2e, 1));
        assert!(p.decrement_hop_limit());
        assert_eq!(p.hop_limit(), 63);
        p.set_hop_limit(1);
        assert!(!p.decrement_hop_limit());
        assert_eq!(buf[0] >> 4, 6);
    }

    #[test]
    fn upper_layer_skips_extension_headers() {
        // UDP6 with an 8-byte hop-by-hop header (one PadN option) inserted
        // in front of the UDP header.
        let mut b = UDP6[..40].to_vec();
        b[6] = 0;
        b[5] += 8;
        b.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        b.extend_from_slice(&UDP6[40..]);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.upper_layer(), Some((17, 48)));
        // A non-first fragment has no transport header.
        b[6] = 44;
        b[42..44].copy_from_slice(&0x0008u16.to_be_bytes());
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.upper_layer(), None);
        // A length running past the datagram is not followed.
        b[6] = 60;
        b[41] = 200;
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.upper_layer(), None);
    }

    #[test]
    fn rejects_malformed() {
        assert!(Ipv6Packet::new_checked(&UDP6[..39]).is_err());
        assert!(Ipv6Packet::new_checked(&UDP6[..52]).is_err());
        let mut b = UDP6;
        b[0] = 0x40;
        let got = Ipv6Packet::new_checked(&b[..]).err();
        assert_eq!(got, Some(WireError::BadVersion(4)));
    }
}
