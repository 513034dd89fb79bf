//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).

use std::net::IpAddr;

/// Adds `data` as big-endian 16-bit words to a running 32-bit sum.
pub fn add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
    }
    if let [last] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*last) << 8);
    }
    sum
}

/// Folds a running sum to 16 bits and complements it.
pub fn finish(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The checksum of `data` alone.
pub fn of(data: &[u8]) -> u16 {
    finish(add(0, data))
}

/// RFC 1624 eqn. 3: the new checksum after one 16-bit word changed from
/// `old` to `new`, without re-reading the packet.
pub fn update(check: u16, old: u16, new: u16) -> u16 {
    let sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    finish(sum)
}

/// Sum of the TCP/UDP pseudo-header for IPv4 (RFC 768) or IPv6 (RFC 8200 §8.1).
pub fn pseudo_header(src: &[u8], dst: &[u8], protocol: u8, len: u32) -> u32 {
    let mut sum = add(0, src);
    sum = add(sum, dst);
    if src.len() == 4 {
        sum = sum.wrapping_add(u32::from(protocol));
        sum = sum.wrapping_add(len & 0xffff);
    } else {
        sum = sum.wrapping_add(len >> 16).wrapping_add(len & 0xffff);
        sum = sum.wrapping_add(u32::from(protocol));
    }
    sum
}

/// [`pseudo_header`] over typed addresses. An IPv4 address paired with an
/// IPv6 one is summed as its IPv4-mapped IPv6 form, so a mixed pair gives a
/// checksum that no real datagram carries rather than a panic.
pub fn pseudo_header_ip(src: IpAddr, dst: IpAddr, protocol: u8, len: usize) -> u32 {
    // Lengths above u32 cannot occur in a datagram (IPv6 jumbograms top out
    // at 2^32 - 1); saturate instead of wrapping so a bogus one never verifies.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_header(&s.octets(), &d.octets(), protocol, len),
        (s, d) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            pseudo_header(&v6(s).octets(), &v6(d).octets(), protocol, len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // The worked example of RFC 1071 §3: sum 0xddf2, checksum 0x220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(of(&data), !0xddf2);
    }

    #[test]
    fn incremental_update_matches_full_recompute() {
        let mut data = [0x45u8, 0x00, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00];
        let before = of(&data);
        let old = u16::from_be_bytes([data[0], data[1]]);
        data[1] = 0x03;
        let new = u16::from_be_bytes([data[0], data[1]]);
        assert_eq!(update(before, old, new), of(&data));
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(of(&[0x12, 0x34, 0x56]), of(&[0x12, 0x34, 0x56, 0x00]));
    }
}
