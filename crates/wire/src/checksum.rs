//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).

use std::net::IpAddr;

/// Adds `data` as big-endian 16-bit words to a running sum (an odd last
/// byte is padded with zero). The result is congruent to the plain sum
/// modulo 0xffff and zero only if both inputs are, which is all
/// [`finish`] needs; it is not the plain sum itself.
///
/// Works on 32-bit little-endian words accumulated in 64 bits and swaps
/// the folded result (RFC 1071 §2: the sum is independent of byte order
/// and word size), so the loop has no byte swaps and no carries to chase.
pub fn add(sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(4);
    let mut acc: u64 = 0;
    for c in &mut chunks {
        acc += u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let mut tail = [0u8; 4];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    acc += u64::from(u32::from_le_bytes(tail));
    // Little-endian 16-bit words, then big-endian by a swap.
    let data_sum = fold16(acc).swap_bytes();
    // 2^32 = 1 (mod 0xffff): folding the top half in keeps the class.
    let total = u64::from(sum) + u64::from(data_sum);
    (total as u32).wrapping_add((total >> 32) as u32)
}

/// Folds to 16 bits with end-around carry; non-zero stays non-zero.
fn fold16(mut x: u64) -> u16 {
    while x >> 16 != 0 {
        x = (x & 0xffff) + (x >> 16);
    }
    x as u16
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

    /// RFC 1071 taken literally: big-endian words summed one by one.
    fn reference(sum: u32, data: &[u8]) -> u16 {
        let mut s = u64::from(sum);
        for c in data.chunks(2) {
            s += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn all_zero_and_all_ones_keep_their_distinct_checksums() {
        // A zero sum complements to 0xffff, a sum of 0xffff to zero: the
        // two zeros of ones' complement must not be confused.
        assert_eq!(of(&[0; 6]), 0xffff);
        assert_eq!(of(&[0xff; 6]), 0);
        assert_eq!(finish(add(0xffff, &[])), 0);
        assert_eq!(finish(add(0, &[0; 3])), 0xffff);
    }

    #[test]
    fn sums_past_128_kib_do_not_wrap() {
        // 0xffff words overflow a 32-bit running sum after 64 Ki words.
        let data = vec![0xffu8; 300_000];
        assert_eq!(of(&data), reference(0, &data));
        let data: Vec<u8> = (0..200_001u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(
            finish(add(0xfedc_ba98, &data)),
            reference(0xfedc_ba98, &data)
        );
    }

    proptest::proptest! {
        #[test]
        fn matches_the_word_by_word_definition(
            sum in proptest::prelude::any::<u32>(),
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000),
        ) {
            proptest::prop_assert_eq!(finish(add(sum, &data)), reference(sum, &data));
        }

        #[test]
        fn chaining_equals_one_call(
            a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            // `add` treats each call's data as starting on a word boundary.
            let a = &a[..a.len() & !1];
            let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(finish(add(add(0, a), &b)), of(&whole));
        }
    }
}
