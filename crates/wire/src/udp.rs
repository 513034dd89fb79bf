//! UDP headers (RFC 768), checksummed over the IPv4 or IPv6 pseudo-header.

use crate::{Result, WireError, checksum};
use std::net::IpAddr;

pub const HEADER_LEN: usize = 8;
/// IP protocol / IPv6 next-header number of UDP.
pub const PROTOCOL: u8 = 17;

/// A view of a UDP datagram (header and payload).
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Validates that the length field fits the buffer.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated { need: HEADER_LEN, have: b.len() });
        }
        let len = usize::from(u16::from_be_bytes([b[4], b[5]]));
        if len < HEADER_LEN {
            return Err(WireError::Malformed("udp length under 8"));
        }
        if b.len() < len {
            return Err(WireError::Truncated { need: len, have: b.len() });
        }
        Ok(UdpPacket { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.b()[0], self.b()[1]])
    }
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.b()[2], self.b()[3]])
    }
    pub fn len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[4], self.b()[5]]))
    }
    pub fn is_empty(&self) -> bool {
        self.len() == HEADER_LEN
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.b()[6], self.b()[7]])
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.len()]
    }
    /// Checks the checksum; zero means "none" and is accepted over IPv4 only.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if self.checksum() == 0 {
            return src.is_ipv4();
        }
        let sum = pseudo(src, dst, self.len());
        checksum::finish(checksum::add(sum, &self.b()[..self.len()])) == 0
    }
}

fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u32 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            checksum::pseudo_header(&s.octets(), &d.octets(), PROTOCOL, len as u32)
        }
        (s, d) => {
            let s6 = match s {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            let d6 = match d {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            checksum::pseudo_header(&s6.octets(), &d6.octets(), PROTOCOL, len as u32)
        }
    }
}

/// A parsed UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    /// Parses, verifying the checksum against the pseudo-header.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>, src: IpAddr, dst: IpAddr) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(UdpRepr { src_port: p.src_port(), dst_port: p.dst_port() })
    }

    /// Writes header and payload into `buf`, with the checksum filled in.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr, payload: &[u8]) -> Result<()> {
        let len = HEADER_LEN + payload.len();
        if buf.len() < len {
            return Err(WireError::Truncated { need: len, have: buf.len() });
        }
        let len16 = u16::try_from(len).map_err(|_| WireError::Malformed("udp over 65535"))?;
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..6].copy_from_slice(&len16.to_be_bytes());
        buf[6..8].copy_from_slice(&[0, 0]);
        buf[HEADER_LEN..len].copy_from_slice(payload);
        let mut c = checksum::finish(checksum::add(pseudo(src, dst, len), &buf[..len]));
        if c == 0 {
            c = 0xffff;
        }
        buf[6..8].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const DST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn construct_then_deconstruct() {
        let mut buf = [0u8; 12];
        UdpRepr { src_port: 4433, dst_port: 53 }
            .emit(&mut buf, SRC, DST, b"ping")
            .unwrap();
        assert_eq!(&buf[..6], &[0x11, 0x51, 0x00, 0x35, 0x00, 0x0c]);
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (4433, 53, 12));
        assert_eq!(p.payload(), b"ping");
        assert_eq!(
            UdpRepr::parse(&p, SRC, DST).unwrap(),
            UdpRepr { src_port: 4433, dst_port: 53 }
        );
    }

    #[test]
    fn corrupted_payload_fails_checksum() {
        let mut buf = [0u8; 12];
        UdpRepr { src_port: 1, dst_port: 2 }.emit(&mut buf, SRC, DST, b"data").unwrap();
        buf[9] ^= 0x40;
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, SRC, DST), Err(WireError::BadChecksum));
    }

    #[test]
    fn rejects_bad_lengths() {
        assert!(UdpPacket::new_checked(&[0u8; 7][..]).is_err());
        assert!(UdpPacket::new_checked(&[0, 1, 0, 2, 0, 4, 0, 0][..]).is_err());
        assert!(UdpPacket::new_checked(&[0, 1, 0, 2, 0, 20, 0, 0][..]).is_err());
    }
}
