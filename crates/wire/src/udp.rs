//! UDP headers (RFC 768), checksummed over the IPv4 or IPv6 pseudo-header.

use crate::{Result, WireError, checksum};
use std::net::IpAddr;

/// UDP header length in bytes: ports, length, checksum.
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
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        let len = usize::from(u16::from_be_bytes([b[4], b[5]]));
        if len < HEADER_LEN {
            return Err(WireError::Malformed("udp length under 8"));
        }
        if b.len() < len {
            return Err(WireError::Truncated {
                need: len,
                have: b.len(),
            });
        }
        Ok(UdpPacket { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Source port (host byte order).
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.b()[0], self.b()[1]])
    }
    /// Destination port (host byte order).
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.b()[2], self.b()[3]])
    }
    /// The length field in bytes, header included; `new_checked` ensured it lies
    /// between 8 and the buffer's length, so bytes past it (padding) are ignored.
    pub fn len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[4], self.b()[5]]))
    }
    /// True when the datagram carries no payload (length field 8).
    pub fn is_empty(&self) -> bool {
        self.len() == HEADER_LEN
    }
    /// The checksum field as sent; 0 means the sender computed none (IPv4 only).
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.b()[6], self.b()[7]])
    }
    /// The payload up to the length field, not the rest of the buffer.
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

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Writes the source port; the checksum is not updated (see `fill_checksum`).
    pub fn set_src_port(&mut self, port: u16) {
        self.buffer.as_mut()[0..2].copy_from_slice(&port.to_be_bytes());
    }
    /// Writes the destination port; the checksum is not updated (see `fill_checksum`).
    pub fn set_dst_port(&mut self, port: u16) {
        self.buffer.as_mut()[2..4].copy_from_slice(&port.to_be_bytes());
    }
    /// Writes the checksum field as given.
    pub fn set_checksum(&mut self, check: u16) {
        self.buffer.as_mut()[6..8].copy_from_slice(&check.to_be_bytes());
    }
    /// The payload up to the length field, which setters never change.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.len();
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
    /// Recomputes the checksum; a computed zero is sent as 0xffff (RFC 768).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let len = self.len();
        let c = checksum::finish(checksum::add(pseudo(src, dst, len), &self.b()[..len]));
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }
}

fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u32 {
    checksum::pseudo_header_ip(src, dst, PROTOCOL, len)
}

/// A parsed UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Parses, verifying the checksum against the pseudo-header.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>, src: IpAddr, dst: IpAddr) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
        })
    }

    /// Writes header and payload into `buf`, with the checksum filled in.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr, payload: &[u8]) -> Result<()> {
        let len = HEADER_LEN + payload.len();
        if buf.len() < len {
            return Err(WireError::Truncated {
                need: len,
                have: buf.len(),
            });
        }
        buf[HEADER_LEN..len].copy_from_slice(payload);
        self.emit_header(&mut buf[..len], src, dst)
    }

    /// Writes the header in front of the payload `datagram` already holds
    /// after [`HEADER_LEN`] bytes of room, with the checksum filled in.
    pub fn emit_header(&self, datagram: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<()> {
        self.emit_header_unsummed(datagram)?;
        fill_checksum(datagram, src, dst);
        Ok(())
    }

    /// [`UdpRepr::emit_header`] with the checksum field left zero, for a
    /// sender whose datagram nobody verifies before [`fill_checksum`] runs
    /// (if ever).
    pub fn emit_header_unsummed(&self, datagram: &mut [u8]) -> Result<()> {
        let len = datagram.len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: len,
            });
        }
        let len16 = u16::try_from(len).map_err(|_| WireError::Malformed("udp over 65535"))?;
        datagram[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        datagram[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        datagram[4..6].copy_from_slice(&len16.to_be_bytes());
        datagram[6..8].copy_from_slice(&[0, 0]);
        Ok(())
    }
}

/// Computes and writes the checksum of `datagram` (UDP header and
/// payload, at least [`HEADER_LEN`] bytes) between `src` and `dst`.
pub fn fill_checksum(datagram: &mut [u8], src: IpAddr, dst: IpAddr) {
    if datagram.len() < HEADER_LEN {
        return;
    }
    datagram[6..8].copy_from_slice(&[0, 0]);
    let mut c = checksum::finish(checksum::add(pseudo(src, dst, datagram.len()), datagram));
    if c == 0 {
        c = 0xffff;
    }
    datagram[6..8].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{UDP4, UDP6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const SRC4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const DST4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
    const SRC6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    const DST6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

    /// Each fixture as (UDP bytes, source, destination, repr, checksum).
    fn cases() -> [(&'static [u8], IpAddr, IpAddr, UdpRepr, u16); 2] {
        [
            (
                &UDP4[20..],
                SRC4,
                DST4,
                UdpRepr {
                    src_port: 57040,
                    dst_port: 40003,
                },
                0xc9d5,
            ),
            (
                &UDP6[40..],
                SRC6,
                DST6,
                UdpRepr {
                    src_port: 57387,
                    dst_port: 40004,
                },
                0xf108,
            ),
        ]
    }

    #[test]
    fn deconstruct() {
        for (bytes, src, dst, repr, check) in cases() {
            let p = UdpPacket::new_checked(bytes).unwrap();
            assert_eq!((p.src_port(), p.dst_port()), (repr.src_port, repr.dst_port));
            assert_eq!((p.len(), p.checksum()), (13, check));
            assert!(!p.is_empty());
            assert_eq!(p.payload(), b"brisk");
            assert!(p.verify_checksum(src, dst));
        }
    }

    #[test]
    fn construct() {
        for (bytes, src, dst, repr, _) in cases() {
            // Keep the length field; setters do the rest.
            let mut buf = vec![0u8; bytes.len()];
            buf[4..6].copy_from_slice(&bytes[4..6]);
            let mut p = UdpPacket::new_checked(&mut buf[..]).unwrap();
            p.set_src_port(repr.src_port);
            p.set_dst_port(repr.dst_port);
            p.payload_mut().copy_from_slice(b"brisk");
            p.fill_checksum(src, dst);
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn parse() {
        for (bytes, src, dst, repr, _) in cases() {
            let p = UdpPacket::new_checked(bytes).unwrap();
            assert_eq!(UdpRepr::parse(&p, src, dst).unwrap(), repr);
        }
    }

    #[test]
    fn emit() {
        for (bytes, src, dst, repr, _) in cases() {
            let mut buf = vec![0xa5u8; bytes.len()];
            repr.emit(&mut buf, src, dst, b"brisk").unwrap();
            assert_eq!(buf, bytes);
            assert!(repr.emit(&mut buf[..12], src, dst, b"brisk").is_err());
        }
    }

    #[test]
    fn zero_checksum_means_none_over_ipv4_only() {
        for (bytes, src, dst, _, _) in cases() {
            let mut b = bytes.to_vec();
            b[6..8].copy_from_slice(&[0, 0]);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            assert_eq!(p.verify_checksum(src, dst), src.is_ipv4());
        }
    }

    #[test]
    fn corrupted_payload_fails_checksum() {
        for (bytes, src, dst, _, _) in cases() {
            let mut b = bytes.to_vec();
            b[9] ^= 0x40;
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            assert_eq!(UdpRepr::parse(&p, src, dst), Err(WireError::BadChecksum));
        }
    }

    #[test]
    fn rejects_bad_lengths() {
        assert!(UdpPacket::new_checked(&[0u8; 7][..]).is_err());
        assert!(UdpPacket::new_checked(&[0, 1, 0, 2, 0, 4, 0, 0][..]).is_err());
        assert!(UdpPacket::new_checked(&[0, 1, 0, 2, 0, 20, 0, 0][..]).is_err());
    }
}
