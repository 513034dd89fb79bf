//! Proptest strategies for every brisk-wire `Repr`, and the fixed-seed
//! config that keeps runs repeatable.

use brisk_wire::Ecn;
use brisk_wire::ip::{tcp_datagram, udp_datagram};
use brisk_wire::ipv4::Ipv4Repr;
use brisk_wire::ipv6::Ipv6Repr;
use brisk_wire::tcp::option::kind;
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption, TcpRepr};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `cases` runs from a fixed seed; a failure reproduces on every machine.
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x0062_7269_736b),
        failure_persistence: None,
        ..Config::default()
    }
}

pub fn ecn() -> impl Strategy<Value = Ecn> {
    (0u8..4).prop_map(Ecn::from_bits)
}

/// A source and destination of the same family, IPv4 or IPv6.
pub fn addr_pair() -> impl Strategy<Value = (IpAddr, IpAddr)> {
    prop_oneof![
        any::<([u8; 4], [u8; 4])>().prop_map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
        any::<([u8; 16], [u8; 16])>().prop_map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
    ]
}

pub fn ipv4_repr() -> impl Strategy<Value = Ipv4Repr> {
    (
        any::<([u8; 4], [u8; 4], u8, u8, u16)>(),
        0u8..64,
        ecn(),
        0usize..=65515,
    )
        .prop_map(
            |((src, dst, protocol, ttl, ident), dscp, ecn, payload_len)| Ipv4Repr {
                src: Ipv4Addr::from(src),
                dst: Ipv4Addr::from(dst),
                protocol,
                dscp,
                ecn,
                ttl,
                ident,
                payload_len,
            },
        )
}

pub fn ipv6_repr() -> impl Strategy<Value = Ipv6Repr> {
    (
        any::<([u8; 16], [u8; 16], u8, u8)>(),
        0u8..64,
        ecn(),
        0u32..=0xf_ffff,
        0usize..=65535,
    )
        .prop_map(
            |((src, dst, next_header, hop_limit), dscp, ecn, flow_label, payload_len)| Ipv6Repr {
                src: Ipv6Addr::from(src),
                dst: Ipv6Addr::from(dst),
                next_header,
                dscp,
                ecn,
                flow_label,
                hop_limit,
                payload_len,
            },
        )
}

fn is_known_kind(k: u8) -> bool {
    [
        kind::END_OF_LIST,
        kind::NOP,
        kind::MSS,
        kind::WINDOW_SCALE,
        kind::SACK_PERMITTED,
        kind::SACK,
        kind::TIMESTAMPS,
        kind::FAST_OPEN,
    ]
    .contains(&k)
}

/// Any option a repr may hold (never `EndOfList`).
pub fn tcp_option() -> impl Strategy<Value = TcpOption> {
    let sack_block = any::<(u32, u32)>().prop_map(|(left, right)| SackBlock { left, right });
    let cookie_len = prop_oneof![Just(0usize), (2usize..=8).prop_map(|n| 2 * n)];
    prop_oneof![
        Just(TcpOption::Nop),
        any::<u16>().prop_map(TcpOption::Mss),
        any::<u8>().prop_map(TcpOption::WindowScale),
        Just(TcpOption::SackPermitted),
        vec(sack_block, 1..=4).prop_map(TcpOption::Sack),
        any::<(u32, u32)>().prop_map(|(tsval, tsecr)| TcpOption::Timestamps { tsval, tsecr }),
        cookie_len
            .prop_flat_map(|n| vec(any::<u8>(), n))
            .prop_map(TcpOption::FastOpen),
        (
            any::<u8>().prop_filter("raw kinds only", |k| !is_known_kind(*k)),
            vec(any::<u8>(), 0..=38)
        )
            .prop_map(|(kind, data)| TcpOption::Unknown { kind, data }),
    ]
}

/// Options in random order, cut to what fits in 40 bytes.
pub fn tcp_options() -> impl Strategy<Value = Vec<TcpOption>> {
    vec(tcp_option(), 0..8).prop_map(|all| {
        let mut used = 0;
        all.into_iter()
            .filter(|o| {
                let fits = used + o.len_bytes() <= 40;
                if fits {
                    used += o.len_bytes();
                }
                fits
            })
            .collect()
    })
}

pub fn tcp_repr() -> impl Strategy<Value = TcpRepr> {
    (
        any::<(u16, u16, u32, u32)>(),
        any::<(u16, u16, u16)>(),
        tcp_options(),
    )
        .prop_map(
            |(
                (src_port, dst_port, seq_number, ack_number),
                (flags, window, urgent_pointer),
                options,
            )| {
                TcpRepr {
                    src_port,
                    dst_port,
                    seq_number,
                    ack_number,
                    flags: TcpFlags::from_bits_truncate(flags),
                    window,
                    urgent_pointer,
                    options,
                }
            },
        )
}

pub fn payload() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..300)
}

/// A valid IPv4 or IPv6 datagram carrying TCP or UDP.
pub fn valid_datagram() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (addr_pair(), ecn(), tcp_repr(), payload()).prop_map(|((s, d), e, tcp, p)| {
            tcp_datagram(s, d, e, &tcp, &p).expect("strategy builds valid TCP")
        }),
        (addr_pair(), any::<(u16, u16)>(), ecn(), payload()).prop_map(
            |((s, d), (sp, dp), e, p)| {
                udp_datagram(SocketAddr::new(s, sp), SocketAddr::new(d, dp), e, &p)
                    .expect("strategy builds valid UDP")
            }
        ),
    ]
}
