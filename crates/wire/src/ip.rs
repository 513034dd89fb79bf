//! Version-agnostic helpers over a whole IP datagram: what a queue, a link
//! or a capture needs without caring whether it is IPv4 or IPv6.

use crate::ipv4::{Ipv4Packet, Ipv4Repr};
use crate::ipv6::{Ipv6Packet, Ipv6Repr};
use crate::udp::{self, UdpRepr};
use crate::{Ecn, Result, WireError};
use std::net::{IpAddr, SocketAddr};

/// The IP version of a datagram, from its first nibble.
pub fn version(bytes: &[u8]) -> Result<u8> {
    match bytes.first().map(|b| b >> 4) {
        Some(v @ (4 | 6)) => Ok(v),
        Some(v) => Err(WireError::BadVersion(v)),
        None => Err(WireError::Truncated { need: 1, have: 0 }),
    }
}

/// The transport 5-tuple a flow-queueing discipline hashes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    /// Zero for protocols without ports and for non-first fragments.
    pub src_port: u16,
    pub dst_port: u16,
}

/// What the network layer shows of a datagram, read in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpSummary {
    pub version: u8,
    pub ecn: Ecn,
    pub dscp: u8,
    /// Bytes of the whole datagram per its length field.
    pub total_len: usize,
    /// Offset of the transport header within the datagram.
    pub transport_offset: usize,
    pub flow: FlowKey,
}

/// Reads version, ECN, DSCP, length and the 5-tuple. Ports are read for TCP
/// and UDP when present; the transport header is not otherwise validated.
pub fn summarize(bytes: &[u8]) -> Result<IpSummary> {
    let (version, ecn, dscp, total_len, off, src, dst, protocol) = match version(bytes)? {
        4 => {
            let p = Ipv4Packet::new_checked(bytes)?;
            // A non-first fragment carries no transport header.
            let off = if frag_offset(bytes) != 0 { usize::MAX } else { p.header_len() };
            let (s, d) = (IpAddr::V4(p.src()), IpAddr::V4(p.dst()));
            (4, p.ecn(), p.dscp(), p.total_len(), off, s, d, p.protocol())
        }
        _ => {
            let p = Ipv6Packet::new_checked(bytes)?;
            let (proto, off) = p.upper_layer().unwrap_or((p.next_header(), usize::MAX));
            let (s, d) = (IpAddr::V6(p.src()), IpAddr::V6(p.dst()));
            (6, p.ecn(), p.dscp(), p.total_len(), off, s, d, proto)
        }
    };
    let (src_port, dst_port) = match (protocol, bytes.get(off..off.saturating_add(4))) {
        (6 | 17, Some(h)) => (u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]])),
        _ => (0, 0),
    };
    Ok(IpSummary {
        version,
        ecn,
        dscp,
        total_len,
        transport_offset: off.min(total_len),
        flow: FlowKey { src, dst, protocol, src_port, dst_port },
    })
}

fn frag_offset(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[6], bytes[7]]) & 0x1fff
}

/// The ECN codepoint of a datagram.
pub fn ecn(bytes: &[u8]) -> Result<Ecn> {
    match version(bytes)? {
        4 => Ok(Ipv4Packet::new_checked(bytes)?.ecn()),
        _ => Ok(Ipv6Packet::new_checked(bytes)?.ecn()),
    }
}

/// Rewrites the ECN codepoint in place, keeping an IPv4 checksum valid.
pub fn set_ecn(bytes: &mut [u8], ecn: Ecn) -> Result<()> {
    match version(bytes)? {
        4 => Ipv4Packet::new_checked(bytes)?.set_ecn(ecn),
        _ => Ipv6Packet::new_checked(bytes)?.set_ecn(ecn),
    }
    Ok(())
}

/// Builds a complete IPv4 or IPv6 datagram carrying one UDP payload, with
/// valid checksums. `src` and `dst` must be of the same family.
pub fn udp_datagram(src: SocketAddr, dst: SocketAddr, ecn: Ecn, payload: &[u8]) -> Result<Vec<u8>> {
    let udp_len = udp::HEADER_LEN + payload.len();
    let repr = UdpRepr { src_port: src.port(), dst_port: dst.port() };
    match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let ip = Ipv4Repr {
                src: s,
                dst: d,
                protocol: udp::PROTOCOL,
                dscp: 0,
                ecn,
                ttl: 64,
                ident: 0,
                payload_len: udp_len,
            };
            let mut buf = vec![0u8; ip.header_len() + udp_len];
            ip.emit(&mut buf)?;
            repr.emit(&mut buf[ip.header_len()..], src.ip(), dst.ip(), payload)?;
            Ok(buf)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let ip = Ipv6Repr {
                src: s,
                dst: d,
                next_header: udp::PROTOCOL,
                dscp: 0,
                ecn,
                flow_label: 0,
                hop_limit: 64,
                payload_len: udp_len,
            };
            let mut buf = vec![0u8; ip.header_len() + udp_len];
            ip.emit(&mut buf)?;
            repr.emit(&mut buf[ip.header_len()..], src.ip(), dst.ip(), payload)?;
            Ok(buf)
        }
        _ => Err(WireError::FamilyMismatch),
    }
}

/// The UDP payload and addresses of a datagram built by [`udp_datagram`] (or
/// any valid IP/UDP datagram), checksums verified.
pub fn parse_udp(bytes: &[u8]) -> Result<(SocketAddr, SocketAddr, Ecn, &[u8])> {
    let s = summarize(bytes)?;
    if s.flow.protocol != udp::PROTOCOL || s.transport_offset >= s.total_len {
        return Err(WireError::Malformed("not a udp datagram"));
    }
    if s.version == 4 {
        Ipv4Repr::parse(&Ipv4Packet::new_checked(bytes)?)?;
    }
    let u = udp::UdpPacket::new_checked(&bytes[s.transport_offset..s.total_len])?;
    UdpRepr::parse(&u, s.flow.src, s.flow.dst)?;
    let start = s.transport_offset + udp::HEADER_LEN;
    Ok((
        SocketAddr::new(s.flow.src, s.flow.src_port),
        SocketAddr::new(s.flow.dst, s.flow.dst_port),
        s.ecn,
        &bytes[start..start + u.len() - udp::HEADER_LEN],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_round_trip_both_families() {
        for (a, b) in [("10.0.0.1:1000", "10.0.0.2:2000"), ("[2001:db8::1]:1000", "[2001:db8::2]:2000")] {
            let (a, b): (SocketAddr, SocketAddr) = (a.parse().unwrap(), b.parse().unwrap());
            let mut d = udp_datagram(a, b, Ecn::Ect1, b"hello").unwrap();
            let s = summarize(&d).unwrap();
            assert_eq!(s.ecn, Ecn::Ect1);
            assert_eq!(s.total_len, d.len());
            assert_eq!((s.flow.src_port, s.flow.dst_port, s.flow.protocol), (1000, 2000, 17));
            set_ecn(&mut d, Ecn::Ce).unwrap();
            let (src, dst, e, payload) = parse_udp(&d).unwrap();
            assert_eq!((src, dst, e, payload), (a, b, Ecn::Ce, &b"hello"[..]));
        }
    }

    #[test]
    fn mixed_families_are_refused() {
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "[::1]:1".parse().unwrap();
        assert_eq!(udp_datagram(a, b, Ecn::NotEct, b"").err(), Some(WireError::FamilyMismatch));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(summarize(&[]).is_err());
        assert!(summarize(&[0x45]).is_err());
        assert!(summarize(&[0x60; 39]).is_err());
        assert!(set_ecn(&mut [0x10, 0, 0], Ecn::Ce).is_err());
    }
}
