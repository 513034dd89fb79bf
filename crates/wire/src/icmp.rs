//! The ICMP messages a path reports its MTU with: ICMPv4 "fragmentation
//! needed" (type 3 code 4, RFC 792 with RFC 1191's next-hop MTU field) and
//! ICMPv6 "Packet Too Big" (type 2, RFC 4443 §3.2).
//!
//! A router that cannot forward a datagram because it exceeds the next
//! link's MTU drops it and may answer the sender with one of these, quoting
//! the start of the dropped datagram so the sender can tell which of its
//! flows it concerns. [`packet_too_big`] builds such an answer (the link
//! model's routers send it), [`parse_packet_too_big`] reads one back (the
//! simulated hosts hand it to their transport).

use crate::checksum;
use crate::ip::summarize;
use crate::{Result, WireError};
use std::net::{IpAddr, SocketAddr};

/// ICMP's protocol number in an IPv4 header.
pub const PROTOCOL_V4: u8 = 1;
/// ICMPv6's next-header number.
pub const PROTOCOL_V6: u8 = 58;

/// Bytes of the dropped datagram an ICMPv4 error quotes at most: RFC 1812
/// lets the error grow to 576 bytes (less its own 20 + 8 bytes of headers).
const QUOTE_MAX_V4: usize = 548;
/// Bytes an ICMPv6 error quotes at most: as much as keeps it within the
/// IPv6 minimum MTU of 1280 bytes (RFC 4443 §2.4 (c)).
const QUOTE_MAX_V6: usize = 1232;

/// What a Packet Too Big message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketTooBig {
    /// The MTU of the hop that dropped the datagram, in bytes of IP packet.
    pub mtu: u32,
    /// Source of the quoted datagram: the host the message is about.
    pub quoted_src: SocketAddr,
    /// Destination of the quoted datagram (its UDP or TCP port included).
    pub quoted_dst: SocketAddr,
    /// The quoted datagram's total length as its own IP header gives it:
    /// what was too big.
    pub quoted_len: usize,
    /// Where the quoted datagram's transport payload starts in the message
    /// (the message's length when nothing of it is quoted): a transport
    /// reads its own header there to tell which packet was refused.
    pub quoted_payload_at: usize,
}

/// The Packet Too Big answer to `original` (a whole IP datagram) from a
/// router whose next hop carries at most `mtu` bytes. It goes from the
/// original's destination address back to its source (a model's router
/// has no address of its own; hosts match the quote, not the sender).
pub fn packet_too_big(original: &[u8], mtu: u32) -> Result<Vec<u8>> {
    let s = summarize(original)?;
    let quoted = &original[..s.total_len];
    match (s.flow.src, s.flow.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let q = &quoted[..quoted.len().min(QUOTE_MAX_V4)];
            let total = 20 + 8 + q.len();
            let mut out = Vec::with_capacity(total);
            out.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0, 0, 64, PROTOCOL_V4, 0, 0]);
            out[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            out.extend_from_slice(&dst.octets());
            out.extend_from_slice(&src.octets());
            let ip_sum = checksum::of(&out[..20]);
            out[10..12].copy_from_slice(&ip_sum.to_be_bytes());
            let next_hop = u16::try_from(mtu).unwrap_or(u16::MAX);
            out.extend_from_slice(&[3, 4, 0, 0, 0, 0]);
            out.extend_from_slice(&next_hop.to_be_bytes());
            out.extend_from_slice(q);
            let sum = checksum::of(&out[20..]);
            out[22..24].copy_from_slice(&sum.to_be_bytes());
            Ok(out)
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            let q = &quoted[..quoted.len().min(QUOTE_MAX_V6)];
            let icmp_len = 8 + q.len();
            let mut out = Vec::with_capacity(40 + icmp_len);
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(icmp_len as u16).to_be_bytes());
            out.extend_from_slice(&[PROTOCOL_V6, 64]);
            out.extend_from_slice(&dst.octets());
            out.extend_from_slice(&src.octets());
            out.extend_from_slice(&[2, 0, 0, 0]);
            out.extend_from_slice(&mtu.to_be_bytes());
            out.extend_from_slice(q);
            let pseudo =
                checksum::pseudo_header(&dst.octets(), &src.octets(), PROTOCOL_V6, icmp_len as u32);
            let sum = checksum::finish(checksum::add(pseudo, &out[40..]));
            out[42..44].copy_from_slice(&sum.to_be_bytes());
            Ok(out)
        }
        _ => Err(WireError::FamilyMismatch),
    }
}

/// Reads `bytes` (a whole IP datagram) as a Packet Too Big message with its
/// checksum verified; anything else is an error naming what did not fit.
pub fn parse_packet_too_big(bytes: &[u8]) -> Result<PacketTooBig> {
    let s = summarize(bytes)?;
    let body = bytes
        .get(s.transport_offset..s.total_len)
        .filter(|b| b.len() >= 8)
        .ok_or(WireError::Truncated {
            need: s.transport_offset + 8,
            have: bytes.len(),
        })?;
    let mtu = match (s.version, s.flow.protocol, body[0], body[1]) {
        (4, PROTOCOL_V4, 3, 4) => {
            if checksum::of(body) != 0 {
                return Err(WireError::BadChecksum);
            }
            u32::from(u16::from_be_bytes([body[6], body[7]]))
        }
        (6, PROTOCOL_V6, 2, _) => {
            let pseudo =
                checksum::pseudo_header_ip(s.flow.src, s.flow.dst, PROTOCOL_V6, body.len());
            if checksum::finish(checksum::add(pseudo, body)) != 0 {
                return Err(WireError::BadChecksum);
            }
            u32::from_be_bytes([body[4], body[5], body[6], body[7]])
        }
        _ => return Err(WireError::Malformed("not a packet too big message")),
    };
    let quote = &body[8..];
    let q = quoted_summary(quote)?;
    let quote_at = s.transport_offset + 8;
    Ok(PacketTooBig {
        mtu,
        quoted_src: SocketAddr::new(q.0, q.2),
        quoted_dst: SocketAddr::new(q.1, q.3),
        quoted_len: q.4,
        quoted_payload_at: (quote_at + q.5 + 8).min(s.total_len),
    })
}

/// Addresses, ports, stated length and IP header length of a quoted
/// (possibly cut) datagram: its length field may exceed the bytes quoted.
fn quoted_summary(quote: &[u8]) -> Result<(IpAddr, IpAddr, u16, u16, usize, usize)> {
    let need = |n: usize| {
        if quote.len() < n {
            Err(WireError::Truncated {
                need: n,
                have: quote.len(),
            })
        } else {
            Ok(())
        }
    };
    need(1)?;
    let (src, dst, len, off) = match quote[0] >> 4 {
        4 => {
            need(20)?;
            let ihl = usize::from(quote[0] & 0x0f) * 4;
            let mut s = [0u8; 4];
            let mut d = [0u8; 4];
            s.copy_from_slice(&quote[12..16]);
            d.copy_from_slice(&quote[16..20]);
            let len = usize::from(u16::from_be_bytes([quote[2], quote[3]]));
            (IpAddr::from(s), IpAddr::from(d), len, ihl)
        }
        6 => {
            need(40)?;
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&quote[8..24]);
            d.copy_from_slice(&quote[24..40]);
            let len = 40 + usize::from(u16::from_be_bytes([quote[4], quote[5]]));
            (IpAddr::from(s), IpAddr::from(d), len, 40)
        }
        v => return Err(WireError::BadVersion(v)),
    };
    need(off + 4)?;
    let sp = u16::from_be_bytes([quote[off], quote[off + 1]]);
    let dp = u16::from_be_bytes([quote[off + 2], quote[off + 3]]);
    Ok((src, dst, sp, dp, len, off))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ecn, udp_datagram};

    fn addrs(v6: bool) -> (SocketAddr, SocketAddr) {
        if v6 {
            (
                "[2001:db8::1]:4433".parse().unwrap(),
                "[2001:db8::2]:443".parse().unwrap(),
            )
        } else {
            (
                "10.0.0.1:4433".parse().unwrap(),
                "10.0.0.2:443".parse().unwrap(),
            )
        }
    }

    #[test]
    fn round_trip_names_the_flow_the_mtu_and_the_size_on_both_families() {
        for v6 in [false, true] {
            let (src, dst) = addrs(v6);
            let original = udp_datagram(src, dst, Ecn::NotEct, &[7u8; 1452]).unwrap();
            let reply = packet_too_big(&original, 1400).unwrap();
            let s = summarize(&reply).unwrap();
            assert_eq!((s.flow.src, s.flow.dst), (dst.ip(), src.ip()), "v6 {v6}");
            let ptb = parse_packet_too_big(&reply).unwrap();
            let headers = if v6 { 48 } else { 28 };
            assert_eq!(
                ptb,
                PacketTooBig {
                    mtu: 1400,
                    quoted_src: src,
                    quoted_dst: dst,
                    quoted_len: original.len(),
                    quoted_payload_at: 2 * headers,
                },
                "v6 {v6}"
            );
            assert!(reply[ptb.quoted_payload_at..].iter().all(|&b| b == 7));
            // Within what every path carries, so the answer itself gets through.
            assert!(
                reply.len() <= if v6 { 1280 } else { 576 },
                "{}",
                reply.len()
            );
        }
    }

    #[test]
    fn a_corrupt_or_foreign_message_is_an_error_not_a_panic() {
        for v6 in [false, true] {
            let (src, dst) = addrs(v6);
            let original = udp_datagram(src, dst, Ecn::NotEct, &[1u8; 100]).unwrap();
            let mut reply = packet_too_big(&original, 1280).unwrap();
            let last = reply.len() - 1;
            reply[last] ^= 0xff;
            assert_eq!(parse_packet_too_big(&reply), Err(WireError::BadChecksum));
            assert!(parse_packet_too_big(&original).is_err());
            let good = packet_too_big(&original, 1280).unwrap();
            for cut in 0..good.len() {
                let _ = parse_packet_too_big(&good[..cut]);
            }
        }
    }
}
