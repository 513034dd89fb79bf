//! ICMPv4 and ICMPv6 numbers, the error type/code mapping of RFC 7915
//! (§4.2 one way, §5.2 the other), and the errors the translator sends on
//! its own behalf (hop limit exhausted, packet too big).

use brisk_wire::Ecn;
use brisk_wire::checksum;
use brisk_wire::ipv4::{self, Ipv4Repr};
use brisk_wire::ipv6::{self, Ipv6Repr};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol number of ICMPv4.
pub const PROTO_ICMP: u8 = 1;
/// IPv6 next-header number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// ICMPv4 type: echo reply (ping answer).
pub const V4_ECHO_REPLY: u8 = 0;
/// ICMPv4 type: destination unreachable (codes say why).
pub const V4_DEST_UNREACHABLE: u8 = 3;
/// ICMPv4 type: echo request (ping).
pub const V4_ECHO_REQUEST: u8 = 8;
/// ICMPv4 type: TTL exceeded in transit (what traceroute reads).
pub const V4_TIME_EXCEEDED: u8 = 11;
/// ICMPv4 type: a header field is invalid; the pointer names its byte.
pub const V4_PARAMETER_PROBLEM: u8 = 12;
/// Destination unreachable code 4: fragmentation needed and DF set.
pub const V4_CODE_FRAG_NEEDED: u8 = 4;

/// ICMPv6 type: destination unreachable (codes say why).
pub const V6_DEST_UNREACHABLE: u8 = 1;
/// ICMPv6 type: packet too big, carrying the next hop's MTU (path MTU
/// discovery, RFC 8201).
pub const V6_PACKET_TOO_BIG: u8 = 2;
/// ICMPv6 type: hop limit exceeded in transit.
pub const V6_TIME_EXCEEDED: u8 = 3;
/// ICMPv6 type: a header field is invalid; the pointer names its byte.
pub const V6_PARAMETER_PROBLEM: u8 = 4;
/// ICMPv6 type: echo request (ping).
pub const V6_ECHO_REQUEST: u8 = 128;
/// ICMPv6 type: echo reply.
pub const V6_ECHO_REPLY: u8 = 129;

/// RFC 1812 §4.3.2.3: an ICMPv4 error carries as much of the offending
/// datagram as fits in 576 bytes.
pub const V4_ERROR_MAX_LEN: usize = 576;
/// RFC 4443 §2.4(c): an ICMPv6 error must fit the IPv6 minimum MTU.
pub const V6_ERROR_MAX_LEN: usize = 1280;

/// Hop limit / TTL of errors the translator originates.
const ERROR_HOP_LIMIT: u8 = 64;

/// RFC 1191 §7 plateau table, used when an old IPv4 router reports "fragmentation
/// needed" with an MTU of zero.
const MTU_PLATEAUS: [u16; 11] = [
    65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68,
];

/// What an ICMP message is, as far as a NAT cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpKind {
    /// A ping; the NAT maps its identifier like a port.
    EchoRequest,
    /// A ping's answer; mapped back by its identifier.
    EchoReply,
    /// An error carrying the start of the datagram that caused it.
    Error,
    /// Anything else: neighbour discovery, MLD, timestamps, redirects...
    /// RFC 7915 drops these; they are single-hop or obsolete.
    Other,
}

/// What an ICMPv4 type is to the NAT; unknown types are `Other`.
pub fn kind_v4(icmp_type: u8) -> IcmpKind {
    match icmp_type {
        V4_ECHO_REQUEST => IcmpKind::EchoRequest,
        V4_ECHO_REPLY => IcmpKind::EchoReply,
        V4_DEST_UNREACHABLE | V4_TIME_EXCEEDED | V4_PARAMETER_PROBLEM => IcmpKind::Error,
        _ => IcmpKind::Other,
    }
}

/// What an ICMPv6 type is to the NAT; unknown types are `Other`.
pub fn kind_v6(icmp_type: u8) -> IcmpKind {
    match icmp_type {
        V6_ECHO_REQUEST => IcmpKind::EchoRequest,
        V6_ECHO_REPLY => IcmpKind::EchoReply,
        V6_DEST_UNREACHABLE | V6_PACKET_TOO_BIG | V6_TIME_EXCEEDED | V6_PARAMETER_PROBLEM => {
            IcmpKind::Error
        }
        _ => IcmpKind::Other,
    }
}

/// An ICMP error after the type/code mapping; the caller fills the 4-byte
/// field after the checksum from `rest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MappedError {
    /// Type and code; the rest of the header is zero.
    Plain {
        /// The other family's ICMP type.
        icmp_type: u8,
        /// Its code.
        code: u8,
    },
    /// Packet Too Big / fragmentation needed: the MTU still has to be
    /// adjusted for the header size difference and the translator's links.
    TooBig {
        /// The MTU the original error reported, in bytes.
        advertised_mtu: u32,
    },
    /// Parameter problem with the pointer already moved to the other header.
    Pointer {
        /// The other family's parameter-problem type.
        icmp_type: u8,
        /// Its code.
        code: u8,
        /// Byte offset of the offending field in the translated header.
        pointer: u8,
    },
}

/// RFC 7915 §4.2: the ICMPv6 error for an ICMPv4 error, or `None` where the
/// RFC says to drop it silently.
pub fn map_error_v4_to_v6(icmp_type: u8, code: u8, rest: [u8; 4]) -> Option<MappedError> {
    let plain = |icmp_type, code| Some(MappedError::Plain { icmp_type, code });
    match (icmp_type, code) {
        // Net/host unreachable, source route failed, unknown/isolated
        // networks and hosts, TOS-specific unreachables: "no route".
        (V4_DEST_UNREACHABLE, 0 | 1 | 5 | 6 | 7 | 8 | 11 | 12) => plain(V6_DEST_UNREACHABLE, 0),
        // Protocol unreachable: parameter problem, unrecognized next header,
        // pointing at the IPv6 next-header field.
        (V4_DEST_UNREACHABLE, 2) => Some(MappedError::Pointer {
            icmp_type: V6_PARAMETER_PROBLEM,
            code: 1,
            pointer: 6,
        }),
        (V4_DEST_UNREACHABLE, 3) => plain(V6_DEST_UNREACHABLE, 4),
        (V4_DEST_UNREACHABLE, V4_CODE_FRAG_NEEDED) => Some(MappedError::TooBig {
            advertised_mtu: u32::from(u16::from_be_bytes([rest[2], rest[3]])),
        }),
        // Administratively prohibited (net, host, communication) and
        // precedence cutoff.
        (V4_DEST_UNREACHABLE, 9 | 10 | 13 | 15) => plain(V6_DEST_UNREACHABLE, 1),
        (V4_TIME_EXCEEDED, 0 | 1) => plain(V6_TIME_EXCEEDED, code),
        // Pointer problem (0) and bad length (2) keep their pointer if the
        // field it names exists in IPv6; "missing option" (1) does not.
        (V4_PARAMETER_PROBLEM, 0 | 2) => Some(MappedError::Pointer {
            icmp_type: V6_PARAMETER_PROBLEM,
            code: 0,
            pointer: pointer_v4_to_v6(rest[0])?,
        }),
        _ => None,
    }
}

/// RFC 7915 §5.2: the ICMPv4 error for an ICMPv6 error, or `None` to drop.
pub fn map_error_v6_to_v4(icmp_type: u8, code: u8, rest: [u8; 4]) -> Option<MappedError> {
    let plain = |icmp_type, code| Some(MappedError::Plain { icmp_type, code });
    match (icmp_type, code) {
        // No route, beyond scope, address unreachable: host unreachable.
        (V6_DEST_UNREACHABLE, 0 | 2 | 3) => plain(V4_DEST_UNREACHABLE, 1),
        (V6_DEST_UNREACHABLE, 1) => plain(V4_DEST_UNREACHABLE, 10),
        (V6_DEST_UNREACHABLE, 4) => plain(V4_DEST_UNREACHABLE, 3),
        (V6_PACKET_TOO_BIG, 0) => Some(MappedError::TooBig {
            advertised_mtu: u32::from_be_bytes(rest),
        }),
        (V6_TIME_EXCEEDED, 0 | 1) => plain(V4_TIME_EXCEEDED, code),
        (V6_PARAMETER_PROBLEM, 0) => Some(MappedError::Pointer {
            icmp_type: V4_PARAMETER_PROBLEM,
            code: 0,
            pointer: pointer_v6_to_v4(u32::from_be_bytes(rest))?,
        }),
        // Unrecognized next header: protocol unreachable.
        (V6_PARAMETER_PROBLEM, 1) => plain(V4_DEST_UNREACHABLE, 2),
        _ => None,
    }
}

/// RFC 7915 Figure 3: an IPv4 header offset to the IPv6 field that holds the
/// same information; identification, flags and checksum have none.
fn pointer_v4_to_v6(pointer: u8) -> Option<u8> {
    match pointer {
        0 => Some(0),
        1 => Some(1),
        2 | 3 => Some(4),
        8 => Some(7),
        9 => Some(6),
        12..=15 => Some(8),
        16..=19 => Some(24),
        _ => None,
    }
}

/// RFC 7915 Figure 6: the reverse mapping; the flow label has no IPv4 home.
fn pointer_v6_to_v4(pointer: u32) -> Option<u8> {
    match pointer {
        0 => Some(0),
        1 => Some(1),
        4 | 5 => Some(2),
        6 => Some(9),
        7 => Some(8),
        8..=23 => Some(12),
        24..=39 => Some(16),
        _ => None,
    }
}

/// RFC 7915 §4.2: the MTU for an ICMPv6 Packet Too Big made from an ICMPv4
/// "fragmentation needed": the smaller of the advertised MTU + 20, the
/// IPv6 next hop and the IPv4 next hop + 20. A zero advertised MTU (a router
/// older than RFC 1191) is replaced by the largest plateau below the
/// offending datagram's total length.
pub fn mtu_v4_to_v6(
    advertised: u32,
    inner_total_len: usize,
    ipv4_mtu: usize,
    ipv6_mtu: usize,
) -> u32 {
    let advertised = if advertised == 0 {
        MTU_PLATEAUS
            .iter()
            .map(|&p| u32::from(p))
            .find(|&p| usize::try_from(p).is_ok_and(|p| p < inner_total_len))
            .unwrap_or(68)
    } else {
        advertised
    };
    let ipv6_mtu = u32::try_from(ipv6_mtu).unwrap_or(u32::MAX);
    let ipv4_mtu = u32::try_from(ipv4_mtu).unwrap_or(u32::MAX);
    (advertised.saturating_add(20))
        .min(ipv6_mtu)
        .min(ipv4_mtu.saturating_add(20))
}

/// RFC 7915 §5.2: the MTU for an ICMPv4 "fragmentation needed" made from an
/// ICMPv6 Packet Too Big: the smaller of the advertised MTU - 20, the IPv4
/// next hop and the IPv6 next hop - 20; it must fit the 16-bit field.
pub fn mtu_v6_to_v4(advertised: u32, ipv4_mtu: usize, ipv6_mtu: usize) -> u16 {
    let ipv6_mtu = u32::try_from(ipv6_mtu).unwrap_or(u32::MAX);
    let ipv4_mtu = u32::try_from(ipv4_mtu).unwrap_or(u32::MAX);
    let mtu = advertised
        .saturating_sub(20)
        .min(ipv4_mtu)
        .min(ipv6_mtu.saturating_sub(20));
    u16::try_from(mtu).unwrap_or(u16::MAX)
}

/// An ICMPv6 error from `src` to `dst` quoting `invoking`, truncated so the
/// whole datagram fits 1280 bytes.
pub fn v6_error(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    icmp_type: u8,
    code: u8,
    rest: [u8; 4],
    invoking: &[u8],
) -> Vec<u8> {
    let quote = invoking.len().min(V6_ERROR_MAX_LEN - ipv6::HEADER_LEN - 8);
    let icmp_len = 8 + quote;
    let mut out = vec![0u8; ipv6::HEADER_LEN + icmp_len];
    let repr = Ipv6Repr {
        src,
        dst,
        next_header: PROTO_ICMPV6,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
        hop_limit: ERROR_HOP_LIMIT,
        payload_len: icmp_len,
    };
    // The lengths are bounded above, so emit cannot fail.
    if repr.emit(&mut out).is_err() {
        return Vec::new();
    }
    let icmp = &mut out[ipv6::HEADER_LEN..];
    icmp[0] = icmp_type;
    icmp[1] = code;
    icmp[4..8].copy_from_slice(&rest);
    icmp[8..].copy_from_slice(&invoking[..quote]);
    fill_icmpv6_checksum(icmp, src, dst);
    out
}

/// An ICMPv4 error from `src` to `dst` quoting `invoking`, truncated so the
/// whole datagram fits 576 bytes.
pub fn v4_error(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    icmp_type: u8,
    code: u8,
    rest: [u8; 4],
    invoking: &[u8],
) -> Vec<u8> {
    let quote = invoking.len().min(V4_ERROR_MAX_LEN - ipv4::HEADER_LEN - 8);
    let icmp_len = 8 + quote;
    let mut out = vec![0u8; ipv4::HEADER_LEN + icmp_len];
    let repr = Ipv4Repr {
        src,
        dst,
        protocol: PROTO_ICMP,
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: ERROR_HOP_LIMIT,
        ident: 0,
        payload_len: icmp_len,
    };
    if repr.emit(&mut out).is_err() {
        return Vec::new();
    }
    let icmp = &mut out[ipv4::HEADER_LEN..];
    icmp[0] = icmp_type;
    icmp[1] = code;
    icmp[4..8].copy_from_slice(&rest);
    icmp[8..].copy_from_slice(&invoking[..quote]);
    fill_icmpv4_checksum(icmp);
    out
}

/// Writes the ICMPv4 checksum (bytes 2..4) over the whole message.
/// `icmp` must be at least 4 bytes.
pub fn fill_icmpv4_checksum(icmp: &mut [u8]) {
    icmp[2..4].copy_from_slice(&[0, 0]);
    let c = checksum::of(icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
}

/// Writes the ICMPv6 checksum (bytes 2..4), which covers the pseudo-header.
/// `icmp` must be at least 4 bytes.
pub fn fill_icmpv6_checksum(icmp: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr) {
    icmp[2..4].copy_from_slice(&[0, 0]);
    let pseudo =
        checksum::pseudo_header_ip(IpAddr::V6(src), IpAddr::V6(dst), PROTO_ICMPV6, icmp.len());
    let c = checksum::finish(checksum::add(pseudo, icmp));
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
}

/// Whether an ICMPv4 message's checksum is right.
pub fn verify_icmpv4(icmp: &[u8]) -> bool {
    checksum::of(icmp) == 0
}

/// Whether an ICMPv6 message's checksum (with pseudo-header) is right.
pub fn verify_icmpv6(icmp: &[u8], src: Ipv6Addr, dst: Ipv6Addr) -> bool {
    let pseudo =
        checksum::pseudo_header_ip(IpAddr::V6(src), IpAddr::V6(dst), PROTO_ICMPV6, icmp.len());
    checksum::finish(checksum::add(pseudo, icmp)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7915_error_mapping_v4_to_v6() {
        let m = |t, c| map_error_v4_to_v6(t, c, [0; 4]);
        let plain = |icmp_type, code| Some(MappedError::Plain { icmp_type, code });
        assert_eq!(m(3, 0), plain(1, 0));
        assert_eq!(m(3, 1), plain(1, 0));
        assert_eq!(m(3, 3), plain(1, 4));
        assert_eq!(m(3, 13), plain(1, 1));
        assert_eq!(m(11, 0), plain(3, 0));
        assert_eq!(m(11, 1), plain(3, 1));
        // Host precedence violation, source quench, redirect: dropped.
        assert_eq!(m(3, 14), None);
        assert_eq!(m(4, 0), None);
        assert_eq!(m(5, 0), None);
        assert_eq!(
            m(3, 2),
            Some(MappedError::Pointer {
                icmp_type: 4,
                code: 1,
                pointer: 6
            })
        );
        assert_eq!(
            map_error_v4_to_v6(3, 4, [0, 0, 0x05, 0x78]),
            Some(MappedError::TooBig {
                advertised_mtu: 1400
            })
        );
        // Pointer at the TTL moves to the hop limit; at the checksum, drop.
        assert_eq!(
            map_error_v4_to_v6(12, 0, [8, 0, 0, 0]),
            Some(MappedError::Pointer {
                icmp_type: 4,
                code: 0,
                pointer: 7
            })
        );
        assert_eq!(map_error_v4_to_v6(12, 0, [10, 0, 0, 0]), None);
        assert_eq!(map_error_v4_to_v6(12, 1, [0, 0, 0, 0]), None);
    }

    #[test]
    fn rfc7915_error_mapping_v6_to_v4() {
        let m = |t, c| map_error_v6_to_v4(t, c, [0; 4]);
        let plain = |icmp_type, code| Some(MappedError::Plain { icmp_type, code });
        assert_eq!(m(1, 0), plain(3, 1));
        assert_eq!(m(1, 1), plain(3, 10));
        assert_eq!(m(1, 3), plain(3, 1));
        assert_eq!(m(1, 4), plain(3, 3));
        assert_eq!(m(1, 5), None);
        assert_eq!(m(3, 1), plain(11, 1));
        assert_eq!(m(4, 1), plain(3, 2));
        assert_eq!(m(4, 2), None);
        assert_eq!(
            map_error_v6_to_v4(4, 0, 24u32.to_be_bytes()),
            Some(MappedError::Pointer {
                icmp_type: 12,
                code: 0,
                pointer: 16
            })
        );
        // The flow label has no IPv4 counterpart.
        assert_eq!(map_error_v6_to_v4(4, 0, 2u32.to_be_bytes()), None);
    }

    #[test]
    fn packet_too_big_mtu_adjustment() {
        // Advertised 1400 over IPv4 -> 1420 over IPv6 when links allow.
        assert_eq!(mtu_v4_to_v6(1400, 1500, 1500, 1500), 1420);
        // Capped by the IPv6 next hop.
        assert_eq!(mtu_v4_to_v6(1500, 1500, 1500, 1500), 1500);
        // Zero MTU: largest RFC 1191 plateau under the datagram length 1500
        // is 1492.
        assert_eq!(mtu_v4_to_v6(0, 1500, 9000, 9000), 1512);
        assert_eq!(mtu_v6_to_v4(1280, 1500, 1500), 1260);
        assert_eq!(mtu_v6_to_v4(9000, 1500, 1500), 1480);
    }

    #[test]
    fn built_errors_have_valid_checksums_and_bounded_size() {
        let big = vec![0x45u8; 4000];
        let e6 = v6_error(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
            V6_TIME_EXCEEDED,
            0,
            [0; 4],
            &big,
        );
        assert_eq!(e6.len(), V6_ERROR_MAX_LEN);
        let p = brisk_wire::ipv6::Ipv6Packet::new_checked(&e6[..]).unwrap();
        assert!(verify_icmpv6(p.payload(), p.src(), p.dst()));

        let e4 = v4_error(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(192, 0, 2, 2),
            V4_DEST_UNREACHABLE,
            V4_CODE_FRAG_NEEDED,
            [0, 0, 0x05, 0xc8],
            &big,
        );
        assert_eq!(e4.len(), V4_ERROR_MAX_LEN);
        let p = brisk_wire::ipv4::Ipv4Packet::new_checked(&e4[..]).unwrap();
        assert!(p.verify_checksum());
        assert!(verify_icmpv4(p.payload()));
    }
}
