//! The translator against an independent one: TAYGA 0.9.2 (Debian 12),
//! a stateless NAT64 in wide use.
//!
//! How the reference bytes were made: the inputs were built by hand in a
//! separate Python script (checksums from RFC 1071's definition). In a
//! private network namespace, TAYGA ran on a TUN device with prefix
//! 2001:db8:64::/96 and the static mapping 198.51.100.1 <-> 2001:db8::1;
//! each input was written into a second TUN device, forwarded by Linux to
//! TAYGA, and the translation read back from the second device after Linux
//! forwarded it again. (A network-specific prefix, because TAYGA refuses
//! TEST-NET addresses under 64:ff9b::/96, as RFC 6052 §3.1 says it may.)
//!
//! What may differ, and why:
//! - TTL / hop limit: Linux forwarded twice around TAYGA, so the reference
//!   is 2 lower than ours.
//! - DF: TAYGA follows RFC 6145 and always sets it; RFC 7915 §5.1 clears it
//!   up to 1260 bytes, as we do. The IPv4 header checksum follows.
//! - IPv4 UDP without checksum: TAYGA drops it (RFC 6145 allowed that); we
//!   compute one (RFC 7915 §4.5's preferred behaviour).
//!
//! Everything else must match byte for byte: transport headers and their
//! incrementally patched checksums, ICMP type/code mapping, the MTU
//! arithmetic, and the packets quoted inside ICMP errors.

use brisk_nat64::Nat64Prefix;
use brisk_nat64::translate::{Ipv4Datagram, Ipv6Datagram, Plan, Rewrite, TranslateConfig};
use brisk_wire::checksum;
use brisk_wire::ip::parse_udp;
use std::net::{Ipv4Addr, Ipv6Addr};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const CLIENT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const POOL: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);

fn prefix() -> Nat64Prefix {
    "2001:db8:64::/96".parse().unwrap()
}

fn server6() -> Ipv6Addr {
    prefix().embed(SERVER)
}

/// Outbound: the client keeps its ports; TAYGA maps addresses only.
fn out(src_port: u16, dst_port: u16) -> Rewrite<Ipv4Addr> {
    Rewrite {
        src: POOL,
        dst: SERVER,
        src_port,
        dst_port,
    }
}

fn back(src_port: u16, dst_port: u16) -> Rewrite<Ipv6Addr> {
    Rewrite {
        src: server6(),
        dst: CLIENT,
        src_port,
        dst_port,
    }
}

fn v6_to_v4(input: &str, plan: Plan<Ipv4Addr>) -> Vec<u8> {
    let input = hex(input);
    Ipv6Datagram::parse(&input)
        .unwrap()
        .translate(&plan, 0, &TranslateConfig::default())
        .unwrap()
}

fn v4_to_v6(input: &str, plan: Plan<Ipv6Addr>) -> Vec<u8> {
    let input = hex(input);
    let mut out = Ipv4Datagram::parse(&input)
        .unwrap()
        .translate(&plan, &TranslateConfig::default())
        .unwrap();
    assert_eq!(out.len(), 1);
    out.remove(0)
}

/// Compares IPv4 headers field by field, allowing the documented TTL and
/// DF differences, and checks our header checksum.
fn same_v4_header(ours: &[u8], reference: &[u8]) {
    assert_eq!(ours.len(), reference.len(), "total length");
    assert_eq!(ours[..6], reference[..6], "version, TOS, length, ident");
    assert_eq!(ours[6] & 0x40, 0, "we clear DF under 1260 bytes");
    assert_ne!(reference[6] & 0x40, 0, "TAYGA always sets DF");
    assert_eq!(
        ours[8],
        reference[8] + 2,
        "TTL: two Linux hops around TAYGA"
    );
    assert_eq!(ours[9], reference[9], "protocol");
    assert_eq!(ours[12..20], reference[12..20], "addresses");
    assert_eq!(checksum::of(&ours[..20]), 0, "our header checksum");
}

fn same_v6_header(ours: &[u8], reference: &[u8]) {
    assert_eq!(ours.len(), reference.len(), "total length");
    assert_eq!(
        ours[..7],
        reference[..7],
        "traffic class, flow label, length, next header"
    );
    assert_eq!(
        ours[7],
        reference[7] + 2,
        "hop limit: two Linux hops around TAYGA"
    );
    assert_eq!(ours[8..40], reference[8..40], "addresses");
}

#[test]
fn udp_v6_to_v4() {
    let ours = v6_to_v4(
        "62912345000d114020010db800000000000000000000000120010db80064000000000000c000022113880035000d9738627269736b",
        Plan::Flow(out(5000, 53)),
    );
    let reference = hex("45290021000040003d11514dc6336401c000022113880035000dc8da627269736b");
    same_v4_header(&ours, &reference);
    assert_eq!(
        ours[20..],
        reference[20..],
        "UDP header, patched checksum, payload"
    );
}

#[test]
fn tcp_syn_with_options_v6_to_v4() {
    let ours = v6_to_v4(
        "600000000028064020010db800000000000000000000000120010db80064000000000000c00002219c4001bb81a7d8d900000000a0c2fd206b750000020405a00402080a80ec4759000000000103030a",
        Plan::Flow(out(40000, 443)),
    );
    let reference = hex(
        "4500003c000040003d065166c6336401c00002219c4001bb81a7d8d900000000a0c2fd209d170000020405a00402080a80ec4759000000000103030a",
    );
    same_v4_header(&ours, &reference);
    assert_eq!(ours[20..], reference[20..]);
}

#[test]
fn icmpv6_echo_request_to_icmpv4() {
    let ours = v6_to_v4(
        "6020000000143a4020010db800000000000000000000000120010db80064000000000000c00002218000191c0d0d000170696e672d7061796c6f6164",
        Plan::Flow(out(0x0d0d, 0x0d0d)),
    );
    let reference =
        hex("45020028000040003d01517dc6336401c00002210800af630d0d000170696e672d7061796c6f6164");
    same_v4_header(&ours, &reference);
    assert_eq!(
        ours[20..],
        reference[20..],
        "type 8, checksum without pseudo-header"
    );
}

#[test]
fn udp_v4_to_v6_keeps_dscp_and_ce() {
    let ours = v4_to_v6(
        "45bb00221c46400040113174c0000221c633640100351388000ec566616e73776572",
        Plan::Flow(back(53, 5000)),
    );
    let reference = hex(
        "6bb00000000e113d20010db80064000000000000c000022120010db800000000000000000000000100351388000e93c4616e73776572",
    );
    same_v6_header(&ours, &reference);
    assert_eq!(ours[40..], reference[40..]);
}

#[test]
fn icmpv4_echo_reply_to_icmpv6() {
    let ours = v4_to_v6(
        "450000281c46400040013239c0000221c63364010000b7630d0d000170696e672d7061796c6f6164",
        Plan::Flow(back(0x0d0d, 0x0d0d)),
    );
    let reference = hex(
        "6000000000143a3d20010db80064000000000000c000022120010db80000000000000000000000018100181c0d0d000170696e672d7061796c6f6164",
    );
    same_v6_header(&ours, &reference);
    assert_eq!(ours[40..], reference[40..], "type 129, pseudo-header added");
}

#[test]
fn fragmentation_needed_to_packet_too_big() {
    let router = Ipv4Addr::new(203, 0, 113, 9);
    let ours = v4_to_v6(
        "4500003d1c4640004001b83bcb007109c63364010304e3f800000578450100211c4640003f11332fc6336401c000022113880035000dc8da627269736b",
        Plan::Error {
            src: prefix().embed(router),
            dst: CLIENT,
            inner: Rewrite {
                src: CLIENT,
                dst: server6(),
                src_port: 5000,
                dst_port: 53,
            },
        },
    );
    let reference = hex(
        "60000000003d3a3d20010db80064000000000000cb00710920010db80000000000000000000000010200eedc0000058c60100000000d113f20010db800000000000000000000000120010db80064000000000000c000022113880035000d9738627269736b",
    );
    same_v6_header(&ours, &reference);
    // Type 2, MTU 1400 + 20 = 1420 (0x58c), and the quoted datagram is the
    // client's original UDP datagram, checksum and all.
    assert_eq!(ours[40..], reference[40..]);
}

#[test]
fn icmpv6_port_unreachable_to_icmpv4() {
    let ours = v6_to_v4(
        "60000000003c3a4020010db800000000000000000000000120010db80064000000000000c000022101046f5f0000000060000000000c113e20010db80064000000000000c000022120010db800000000000000000000000100351388000ced596c617465",
        Plan::Error {
            src: POOL,
            dst: SERVER,
            inner: Rewrite {
                src: SERVER,
                dst: POOL,
                src_port: 53,
                dst_port: 5000,
            },
        },
    );
    let reference = hex(
        "4500003c000040003d01516bc6336401c00002210303e9700000000045000020000040003e115077c0000221c633640100351388000c1efc6c617465",
    );
    same_v4_header(&ours, &reference);
    let (icmp, ref_icmp) = (&ours[20..], &reference[20..]);
    assert_eq!(icmp[..2], ref_icmp[..2], "type 3 code 3");
    assert_eq!(icmp[4..8], ref_icmp[4..8]);
    assert_eq!(checksum::of(icmp), 0, "our ICMP checksum");
    // The quoted header differs only in DF (and so its checksum).
    let (q, ref_q) = (&icmp[8..], &ref_icmp[8..]);
    assert_eq!(q[..6], ref_q[..6]);
    assert_eq!((q[6] & 0x40, ref_q[6] & 0x40), (0, 0x40));
    assert_eq!(q[8..10], ref_q[8..10], "quoted TTL untouched, protocol 17");
    assert_eq!(q[12..20], ref_q[12..20]);
    assert_eq!(checksum::of(&q[..20]), 0);
    assert_eq!(q[20..], ref_q[20..], "quoted UDP with its checksum patched");
}

#[test]
fn udp_without_checksum_is_computed_where_tayga_drops() {
    let ours = v4_to_v6(
        "450000221c4640004011322fc0000221c633640100351388000e00006e6f73756d21",
        Plan::Flow(back(53, 5000)),
    );
    let (_, _, _, payload) = parse_udp(&ours).unwrap();
    assert_eq!(payload, b"nosum!");
}
