//! Bad input never panics: every `new_checked`, `parse`, `summarize` and
//! `set_ecn` entry point over arbitrary bytes, over bytes that look like
//! IPv4/IPv6/TCP headers, and over valid datagrams with bytes flipped or cut.

#[path = "support/parse_all.rs"]
mod parse_all;
#[path = "support/strategies.rs"]
mod strategies;

use brisk_wire::ipv4::Ipv4Repr;
use brisk_wire::ipv6::Ipv6Repr;
use parse_all::parse_all;
use proptest::collection::vec;
use proptest::prelude::*;
use strategies::{config, ipv4_repr, ipv6_repr, valid_datagram};

/// Bytes whose first nibble is 4 or 6, so parsing gets past the version.
fn ip_like() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![0x40u8..0x50, 0x60u8..0x70],
        vec(any::<u8>(), 0..120),
    )
        .prop_map(|(first, mut rest)| {
            rest.insert(0, first);
            rest
        })
}

/// Bytes with a plausible TCP data offset (5..=15 words) at byte 12.
fn tcp_like() -> impl Strategy<Value = Vec<u8>> {
    (5u8..16, vec(any::<u8>(), 20..100)).prop_map(|(off, mut b)| {
        b[12] = (off << 4) | (b[12] & 0x0f);
        b
    })
}

/// A valid IPv4 or IPv6 header (any protocol) followed by random bytes, so
/// the transport parsers see real addresses and lengths.
fn valid_ip_random_transport() -> impl Strategy<Value = Vec<u8>> {
    let v4 = (ipv4_repr(), vec(any::<u8>(), 0..120)).prop_map(|(r, body)| {
        let r = Ipv4Repr {
            payload_len: body.len(),
            ..r
        };
        let mut b = vec![0u8; 20];
        r.emit(&mut b).unwrap();
        b.extend_from_slice(&body);
        b
    });
    let v6 = (ipv6_repr(), vec(any::<u8>(), 0..120)).prop_map(|(r, body)| {
        let r = Ipv6Repr {
            payload_len: body.len(),
            ..r
        };
        let mut b = vec![0u8; 40];
        r.emit(&mut b).unwrap();
        b.extend_from_slice(&body);
        b
    });
    prop_oneof![v4, v6]
}

/// A valid datagram with up to 4 bytes XORed and maybe a cut tail.
fn mutated_datagram() -> impl Strategy<Value = Vec<u8>> {
    (
        valid_datagram(),
        vec((any::<prop::sample::Index>(), 1u8..), 0..4),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(mut d, flips, cut, do_cut)| {
            for (i, x) in flips {
                let i = i.index(d.len());
                d[i] ^= x;
            }
            if do_cut {
                d.truncate(cut.index(d.len() + 1));
            }
            d
        })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes(data in vec(any::<u8>(), 0..160)) {
        parse_all(&data);
    }

    #[test]
    fn ip_like_bytes(data in ip_like()) {
        parse_all(&data);
    }

    #[test]
    fn tcp_like_bytes(data in tcp_like()) {
        parse_all(&data);
    }

    #[test]
    fn valid_ip_headers_over_random_transport(data in valid_ip_random_transport()) {
        parse_all(&data);
    }

    #[test]
    fn mutated_valid_datagrams(data in mutated_datagram()) {
        parse_all(&data);
    }

    #[test]
    fn valid_datagrams(data in valid_datagram()) {
        parse_all(&data);
        // Valid input must get all the way through one of the two parsers.
        prop_assert!(brisk_wire::ip::parse_tcp(&data).is_ok() || brisk_wire::ip::parse_udp(&data).is_ok());
    }
}
