//! Bad input never panics: arbitrary bytes, and valid datagrams and DNS
//! queries with bytes flipped, cut or appended, through every translator,
//! the NAT64 and the DNS64 (checks in `support/check_all.rs`).

#[path = "support/check_all.rs"]
mod check_all;

use check_all::{check_all, template_v4, template_v6};
use proptest::collection::vec;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A real `dig AAAA ipv4only.arpa` query (see `src/dns_tests.rs`).
const DIG_QUERY: &[u8] = &[
    0x2e, 0xbb, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, b'i', b'p', b'v',
    b'4', b'o', b'n', b'l', b'y', 0x04, b'a', b'r', b'p', b'a', 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00,
    0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x08, 0xc2, 0x15,
    0xab, 0xde, 0x17, 0x76, 0xbd, 0x07,
];

/// `base` with a few bytes overwritten and its tail cut or extended.
fn mutated(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = base.len();
    (
        vec((0..len, any::<u8>()), 1..6),
        0..len + 8,
        vec(any::<u8>(), 0..8),
    )
        .prop_map(move |(edits, cut, tail)| {
            let mut b = base.clone();
            for (at, v) in edits {
                b[at] = v;
            }
            b.truncate(cut);
            b.extend_from_slice(&tail);
            b
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes(data in vec(any::<u8>(), 0..1600)) {
        check_all(&data);
    }

    #[test]
    fn mutated_ipv6_datagrams(data in mutated(template_v6())) {
        check_all(&data);
    }

    #[test]
    fn mutated_ipv4_datagrams(data in mutated(template_v4())) {
        check_all(&data);
    }

    #[test]
    fn mutated_dns_queries(data in mutated(DIG_QUERY.to_vec())) {
        check_all(&data);
    }

    /// Small XOR masks over the templates inside `check_all` reach deep
    /// header fields (ICMP types, extension headers, ports).
    #[test]
    fn sparse_masks(data in vec(prop_oneof![9 => Just(0u8), 1 => any::<u8>()], 0..96)) {
        check_all(&data);
    }
}
