//! IPv4 headers (RFC 791).

use crate::{Ecn, Result, WireError, checksum};
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub(super) const VER_IHL: usize = 0;
    pub(super) const TOS: usize = 1;
    pub(super) const LEN: Range<usize> = 2..4;
    pub(super) const IDENT: Range<usize> = 4..6;
    pub(super) const FLG_OFF: Range<usize> = 6..8;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: Range<usize> = 10..12;
    pub(super) const SRC: Range<usize> = 12..16;
    pub(super) const DST: Range<usize> = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// A read (and, over `&mut [u8]`, write) view of an IPv4 datagram.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Validates version, header length and total length against the buffer.
    /// After this, no getter panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        if b[field::VER_IHL] >> 4 != 4 {
            return Err(WireError::BadVersion(b[field::VER_IHL] >> 4));
        }
        let ihl = usize::from(b[field::VER_IHL] & 0x0f) * 4;
        if ihl < HEADER_LEN {
            return Err(WireError::Malformed("ipv4 header length under 20"));
        }
        let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if total < ihl {
            return Err(WireError::Malformed(
                "ipv4 total length under header length",
            ));
        }
        if b.len() < total {
            return Err(WireError::Truncated {
                need: total,
                have: b.len(),
            });
        }
        Ok(Ipv4Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Header length in bytes (IHL × 4), options included; 20 to 60.
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::VER_IHL] & 0x0f) * 4
    }
    /// The DSCP, the upper six bits of the TOS byte (RFC 2474), 0 to 63.
    pub fn dscp(&self) -> u8 {
        self.b()[field::TOS] >> 2
    }
    /// The ECN codepoint from the two low bits of the TOS byte (RFC 3168).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.b()[field::TOS])
    }
    /// Total length field in bytes, header included; bytes past it in the
    /// buffer (Ethernet padding) belong to no getter.
    pub fn total_len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[2], self.b()[3]]))
    }
    /// Identification field, the key fragments of one datagram share.
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes([
            self.b()[field::IDENT.start],
            self.b()[field::IDENT.start + 1],
        ])
    }
    /// The DF flag: routers must drop rather than fragment (the basis of PMTU
    /// discovery, RFC 1191).
    pub fn dont_frag(&self) -> bool {
        self.b()[field::FLG_OFF.start] & 0x40 != 0
    }
    /// True for a fragment other than a whole datagram (MF set or offset > 0).
    pub fn is_fragment(&self) -> bool {
        let v = u16::from_be_bytes([self.b()[6], self.b()[7]]);
        v & 0x2000 != 0 || v & 0x1fff != 0
    }
    /// Time to live: hops left before a router drops the datagram.
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }
    /// The upper-layer protocol number (6 TCP, 17 UDP, 1 ICMP).
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }
    /// The header checksum field as received (not verified here).
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.b()[10], self.b()[11]])
    }
    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        let s = &self.b()[field::SRC];
        Ipv4Addr::new(s[0], s[1], s[2], s[3])
    }
    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        let s = &self.b()[field::DST];
        Ipv4Addr::new(s[0], s[1], s[2], s[3])
    }
    /// True when the header checksum, options included, is correct. The
    /// payload is not covered: UDP and TCP carry their own.
    pub fn verify_checksum(&self) -> bool {
        checksum::of(&self.b()[..self.header_len()]) == 0
    }
    /// The bytes after the header, up to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len()]
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Rewrites the ECN bits and patches the header checksum incrementally.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = self.buffer.as_mut();
        let old = u16::from_be_bytes([b[0], b[1]]);
        b[field::TOS] = (b[field::TOS] & !0b11) | ecn.bits();
        let new = u16::from_be_bytes([b[0], b[1]]);
        let c = checksum::update(u16::from_be_bytes([b[10], b[11]]), old, new);
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }

    /// Decrements TTL (as a router hop does), patching the checksum.
    /// Returns false when TTL was already 0 or 1 and the packet must die.
    pub fn decrement_ttl(&mut self) -> bool {
        let b = self.buffer.as_mut();
        if b[field::TTL] <= 1 {
            return false;
        }
        let old = u16::from_be_bytes([b[8], b[9]]);
        b[field::TTL] -= 1;
        let new = u16::from_be_bytes([b[8], b[9]]);
        let c = checksum::update(u16::from_be_bytes([b[10], b[11]]), old, new);
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        true
    }

    /// The bytes after the header, up to the total length, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (h, t) = (self.header_len(), self.total_len());
        &mut self.buffer.as_mut()[h..t]
    }

    // The setters below leave the header checksum stale (call
    // `fill_checksum` when done) and never touch the lengths `new_checked`
    // validated.

    /// Sets the six DSCP bits (higher bits of `dscp` are dropped); ECN stays.
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = self.buffer.as_mut();
        b[field::TOS] = ((dscp & 0x3f) << 2) | (b[field::TOS] & 0b11);
    }
    /// Writes the identification field.
    pub fn set_ident(&mut self, ident: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&ident.to_be_bytes());
    }
    /// Sets or clears DF; MF and the fragment offset stay.
    pub fn set_dont_frag(&mut self, df: bool) {
        let b = self.buffer.as_mut();
        let df_bit = if df { 0x40 } else { 0 };
        b[field::FLG_OFF.start] = (b[field::FLG_OFF.start] & !0x40) | df_bit;
    }
    /// Writes the TTL.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }
    /// Writes the protocol number; the pseudo-header checksum of an upper layer
    /// already written is not updated.
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }
    /// Writes the source address; an upper-layer checksum over the
    /// pseudo-header is not updated.
    pub fn set_src(&mut self, src: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&src.octets());
    }
    /// Writes the destination address; an upper-layer checksum over the
    /// pseudo-header is not updated.
    pub fn set_dst(&mut self, dst: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&dst.octets());
    }
    /// Recomputes the header checksum (options included).
    pub fn fill_checksum(&mut self) {
        let h = self.header_len();
        let b = self.buffer.as_mut();
        b[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum::of(&b[..h]);
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

/// A parsed IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Upper-layer protocol number (6 TCP, 17 UDP).
    pub protocol: u8,
    /// DSCP, six bits (0 to 63); `emit` refuses larger values.
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Time to live in hops.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// Bytes after the header (total length minus header length); `emit`
    /// refuses more than 65,515.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Parses and validates a datagram, including its header checksum.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self> {
        if !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(Ipv4Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            ttl: p.ttl(),
            ident: p.ident(),
            payload_len: p.total_len() - p.header_len(),
        })
    }

    /// Always 20: `emit` writes no options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (DF set, no options) with a valid checksum into
    /// `buf[..20]`. Fails when the buffer or payload length does not fit, or
    /// when `dscp` has more than six bits.
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
        let total = u16::try_from(HEADER_LEN + self.payload_len)
            .map_err(|_| WireError::Malformed("ipv4 datagram over 65535 bytes"))?;
        buf[field::VER_IHL] = 0x45;
        buf[field::TOS] = (self.dscp << 2) | self.ecn.bits();
        buf[field::LEN].copy_from_slice(&total.to_be_bytes());
        buf[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        buf[field::FLG_OFF].copy_from_slice(&0x4000u16.to_be_bytes());
        buf[field::TTL] = self.ttl;
        buf[field::PROTOCOL] = self.protocol;
        buf[field::CHECKSUM].copy_from_slice(&[0, 0]);
        buf[field::SRC].copy_from_slice(&self.src.octets());
        buf[field::DST].copy_from_slice(&self.dst.octets());
        let c = checksum::of(&buf[..HEADER_LEN]);
        buf[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TCP4_SYN, UDP4};

    /// The header of `fixtures::UDP4`: DSCP 10 + ECT(1), a Linux UDP send.
    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(192, 0, 2, 1),
            dst: Ipv4Addr::new(192, 0, 2, 2),
            protocol: 17,
            dscp: 10,
            ecn: Ecn::Ect1,
            ttl: 64,
            ident: 0xa2d3,
            payload_len: 13,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Ipv4Packet::new_checked(&UDP4[..]).unwrap();
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.dscp(), 10);
        assert_eq!(p.ecn(), Ecn::Ect1);
        assert_eq!(p.total_len(), 33);
        assert_eq!(p.ident(), 0xa2d3);
        assert!(p.dont_frag() && !p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 17);
        assert_eq!(p.checksum(), 0x13cc);
        assert_eq!(p.src(), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(p.dst(), Ipv4Addr::new(192, 0, 2, 2));
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &UDP4[20..]);

        let p = Ipv4Packet::new_checked(&TCP4_SYN[..]).unwrap();
        let got = (p.protocol(), p.ecn(), p.dscp(), p.ident());
        assert_eq!(got, (6, Ecn::NotEct, 0, 0x5d2e));
        assert!(p.verify_checksum());
    }

    #[test]
    fn construct() {
        // Keep version, header length and total length; setters do the rest.
        let mut buf = [0u8; 33];
        buf[0] = UDP4[0];
        buf[2..4].copy_from_slice(&UDP4[2..4]);
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_dscp(10);
        p.set_ecn(Ecn::Ect1);
        p.set_ident(0xa2d3);
        p.set_dont_frag(true);
        p.set_ttl(64);
        p.set_protocol(17);
        p.set_src(Ipv4Addr::new(192, 0, 2, 1));
        p.set_dst(Ipv4Addr::new(192, 0, 2, 2));
        p.fill_checksum();
        p.payload_mut().copy_from_slice(&UDP4[20..]);
        assert_eq!(buf, UDP4);
    }

    #[test]
    fn parse() {
        let p = Ipv4Packet::new_checked(&UDP4[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn emit() {
        let mut buf = [0xa5u8; 20];
        repr().emit(&mut buf).unwrap();
        assert_eq!(buf, UDP4[..20]);
        let bad_dscp = Ipv4Repr { dscp: 64, ..repr() };
        assert!(bad_dscp.emit(&mut buf).is_err());
        let too_big = Ipv4Repr {
            payload_len: 65516,
            ..repr()
        };
        assert!(too_big.emit(&mut buf).is_err());
        assert!(repr().emit(&mut buf[..19]).is_err());
    }

    #[test]
    fn router_edits_keep_checksum_valid() {
        let mut buf = UDP4;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_ecn(Ecn::Ce);
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.dscp(), 10);
        assert!(p.verify_checksum());
        assert!(p.decrement_ttl());
        assert_eq!(p.ttl(), 63);
        assert!(p.verify_checksum());
        p.set_ttl(1);
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert!(!p.decrement_ttl());
    }

    #[test]
    fn rejects_malformed() {
        assert!(matches!(
            Ipv4Packet::new_checked(&UDP4[..19]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            Ipv4Packet::new_checked(&UDP4[..32]),
            Err(WireError::Truncated { .. })
        ));
        let mut b = UDP4;
        b[0] = 0x44;
        assert!(Ipv4Packet::new_checked(&b[..]).is_err());
        let mut b = UDP4;
        b[3] = 0x10;
        assert!(Ipv4Packet::new_checked(&b[..]).is_err());
        let mut b = UDP4;
        b[0] = 0x65;
        let got = Ipv4Packet::new_checked(&b[..]).err();
        assert_eq!(got, Some(WireError::BadVersion(6)));
        let mut b = UDP4;
        b[12] ^= 1;
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(WireError::BadChecksum));
    }
}
