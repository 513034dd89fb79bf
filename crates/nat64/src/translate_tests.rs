//! Tests for [`super`]: every output is re-read by brisk-wire's parsers,
//! which verify IP and transport checksums independently of the
//! incremental patching under test.

use super::*;
use brisk_wire::ip::{parse_tcp, parse_udp};
use brisk_wire::tcp::{TcpFlags, TcpOption, TcpRepr};
use brisk_wire::{Nat64Prefix, tcp_datagram, udp_datagram};
use std::net::SocketAddr;

fn a4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}
fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

const CLIENT: &str = "2001:db8::1";
const SERVER4: &str = "192.0.2.33";
const POOL: &str = "198.51.100.1";

fn server6() -> Ipv6Addr {
    Nat64Prefix::WELL_KNOWN.embed(a4(SERVER4))
}

fn sa(ip: impl Into<IpAddr>, port: u16) -> SocketAddr {
    SocketAddr::new(ip.into(), port)
}

/// Outbound rewrite: client port 5000 becomes pool port 6000.
fn out_rw() -> Rewrite<Ipv4Addr> {
    Rewrite {
        src: a4(POOL),
        dst: a4(SERVER4),
        src_port: 6000,
        dst_port: 53,
    }
}

/// Inbound rewrite: the reply to pool port 6000 goes to client port 5000.
fn in_rw() -> Rewrite<Ipv6Addr> {
    Rewrite {
        src: server6(),
        dst: a6(CLIENT),
        src_port: 53,
        dst_port: 5000,
    }
}

fn udp6(payload: &[u8], ecn: Ecn) -> Vec<u8> {
    udp_datagram(sa(a6(CLIENT), 5000), sa(server6(), 53), ecn, payload).unwrap()
}

fn udp4_reply(payload: &[u8], ecn: Ecn) -> Vec<u8> {
    udp_datagram(sa(a4(SERVER4), 53), sa(a4(POOL), 6000), ecn, payload).unwrap()
}

fn syn_repr(src_port: u16, dst_port: u16) -> TcpRepr {
    TcpRepr {
        src_port,
        dst_port,
        seq_number: 0x81a7_d8d9,
        ack_number: 0,
        flags: TcpFlags::SYN | TcpFlags::ECE | TcpFlags::CWR,
        window: 64240,
        urgent_pointer: 0,
        options: vec![
            TcpOption::Mss(1440),
            TcpOption::SackPermitted,
            TcpOption::Timestamps {
                tsval: 0x80ec_4759,
                tsecr: 0,
            },
            TcpOption::Nop,
            TcpOption::WindowScale(10),
        ],
    }
}

fn cfg() -> TranslateConfig {
    TranslateConfig::default()
}

fn v6_to_v4(bytes: &[u8], plan: &Plan<Ipv4Addr>) -> Result<Vec<u8>> {
    Ipv6Datagram::parse(bytes)?.translate(plan, 0x1234, &cfg())
}

fn v4_to_v6(bytes: &[u8], plan: &Plan<Ipv6Addr>) -> Result<Vec<Vec<u8>>> {
    Ipv4Datagram::parse(bytes)?.translate(plan, &cfg())
}

#[test]
fn udp_v6_to_v4_rewrites_addresses_ports_and_checksum() {
    let input = udp6(b"brisk", Ecn::Ect1);
    let out = v6_to_v4(&input, &Plan::Flow(out_rw())).unwrap();
    let (src, dst, ecn, payload) = parse_udp(&out).unwrap();
    assert_eq!((src, dst), (sa(a4(POOL), 6000), sa(a4(SERVER4), 53)));
    assert_eq!((ecn, payload), (Ecn::Ect1, &b"brisk"[..]));
    let ip = Ipv4Packet::new_checked(&out[..]).unwrap();
    assert_eq!(ip.ttl(), 63, "hop limit 64 minus the router's decrement");
    assert_eq!(ip.ident(), 0x1234);
    assert!(
        !ip.dont_frag(),
        "DF clear at or under 1260 bytes (RFC 7915 §5.1)"
    );
    assert_eq!(ip.total_len(), input.len() - 20);
}

#[test]
fn udp_v4_to_v6_rewrites_addresses_ports_and_checksum() {
    let input = udp4_reply(b"answer", Ecn::Ect0);
    let out = v4_to_v6(&input, &Plan::Flow(in_rw())).unwrap();
    assert_eq!(out.len(), 1);
    let (src, dst, ecn, payload) = parse_udp(&out[0]).unwrap();
    assert_eq!((src, dst), (sa(server6(), 53), sa(a6(CLIENT), 5000)));
    assert_eq!((ecn, payload), (Ecn::Ect0, &b"answer"[..]));
    let ip = Ipv6Packet::new_checked(&out[0][..]).unwrap();
    assert_eq!((ip.hop_limit(), ip.flow_label()), (63, 0));
}

#[test]
fn udp_without_checksum_gets_one_in_ipv6() {
    let mut input = udp4_reply(b"no sum", Ecn::NotEct);
    input[26..28].copy_from_slice(&[0, 0]);
    let out = v4_to_v6(&input, &Plan::Flow(in_rw())).unwrap();
    let u = UdpPacket::new_checked(&out[0][40..]).unwrap();
    assert_ne!(u.checksum(), 0);
    assert!(parse_udp(&out[0]).is_ok());
}

#[test]
fn corrupted_payload_stays_detectably_corrupted() {
    let mut input = udp6(b"brisk", Ecn::NotEct);
    *input.last_mut().unwrap() ^= 0x01;
    let out = v6_to_v4(&input, &Plan::Flow(out_rw())).unwrap();
    assert_eq!(parse_udp(&out), Err(WireError::BadChecksum));
}

#[test]
fn tcp_with_options_round_trips_both_ways() {
    let syn = syn_repr(5000, 443);
    let input = tcp_datagram(a6(CLIENT).into(), server6().into(), Ecn::NotEct, &syn, &[]).unwrap();
    let rw = Rewrite {
        dst_port: 443,
        ..out_rw()
    };
    let out = v6_to_v4(&input, &Plan::Flow(rw)).unwrap();
    let seg = parse_tcp(&out).unwrap();
    assert_eq!((seg.src, seg.dst), (a4(POOL).into(), a4(SERVER4).into()));
    assert_eq!(
        seg.tcp,
        TcpRepr {
            src_port: 6000,
            ..syn.clone()
        }
    );

    // The server's SYN-ACK with data comes back to the client.
    let synack = TcpRepr {
        src_port: 443,
        dst_port: 6000,
        flags: TcpFlags::SYN | TcpFlags::ACK | TcpFlags::ECE,
        ack_number: 0x81a7_d8da,
        ..syn.clone()
    };
    let reply = tcp_datagram(
        a4(SERVER4).into(),
        a4(POOL).into(),
        Ecn::Ce,
        &synack,
        b"hello\n",
    )
    .unwrap();
    let back = v4_to_v6(
        &reply,
        &Plan::Flow(Rewrite {
            src_port: 443,
            ..in_rw()
        }),
    )
    .unwrap();
    let seg = parse_tcp(&back[0]).unwrap();
    assert_eq!((seg.src, seg.dst), (server6().into(), a6(CLIENT).into()));
    assert_eq!(
        seg.tcp,
        TcpRepr {
            dst_port: 5000,
            ..synack
        }
    );
    assert_eq!((seg.ecn, seg.payload), (Ecn::Ce, &b"hello\n"[..]));
}

#[test]
fn ecn_and_dscp_survive_both_directions() {
    for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
        for dscp in [0u8, 10, 46] {
            let mut input = udp6(b"x", ecn);
            Ipv6Packet::new_checked(&mut input[..])
                .unwrap()
                .set_dscp(dscp);
            let out = v6_to_v4(&input, &Plan::Flow(out_rw())).unwrap();
            let p = Ipv4Packet::new_checked(&out[..]).unwrap();
            assert_eq!(
                (p.ecn(), p.dscp()),
                (ecn, dscp),
                "v6->v4 {ecn:?} dscp {dscp}"
            );
            assert!(p.verify_checksum());

            let mut input = udp4_reply(b"y", ecn);
            let mut p = Ipv4Packet::new_checked(&mut input[..]).unwrap();
            p.set_dscp(dscp);
            p.fill_checksum();
            let out = v4_to_v6(&input, &Plan::Flow(in_rw())).unwrap();
            let p = Ipv6Packet::new_checked(&out[0][..]).unwrap();
            assert_eq!(
                (p.ecn(), p.dscp()),
                (ecn, dscp),
                "v4->v6 {ecn:?} dscp {dscp}"
            );
        }
    }
}

/// An ICMP echo message of `icmp_type` with id, seq and payload, checksum
/// filled for its family.
fn echo6(icmp_type: u8, src: Ipv6Addr, dst: Ipv6Addr, id: u16, ecn: Ecn) -> Vec<u8> {
    let mut icmp = vec![icmp_type, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&7u16.to_be_bytes());
    icmp.extend_from_slice(b"ping payload");
    icmp::fill_icmpv6_checksum(&mut icmp, src, dst);
    let mut out = v6_header(src, dst, icmp::PROTO_ICMPV6, ecn.bits(), 64, icmp.len()).unwrap();
    out.extend_from_slice(&icmp);
    out
}

fn echo4(icmp_type: u8, src: Ipv4Addr, dst: Ipv4Addr, id: u16) -> Vec<u8> {
    let mut icmp = vec![icmp_type, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&7u16.to_be_bytes());
    icmp.extend_from_slice(b"ping payload");
    icmp::fill_icmpv4_checksum(&mut icmp);
    let mut out = v4_header(src, dst, icmp::PROTO_ICMP, 0, 64, 1, icmp.len()).unwrap();
    out.extend_from_slice(&icmp);
    out
}

#[test]
fn icmpv6_echo_request_becomes_icmpv4_echo_request() {
    let input = echo6(
        icmp::V6_ECHO_REQUEST,
        a6(CLIENT),
        server6(),
        0x0101,
        Ecn::Ect0,
    );
    let d = Ipv6Datagram::parse(&input).unwrap();
    let Content::Flow { flow, echo, .. } = d.content() else {
        panic!("echo is a flow")
    };
    assert_eq!(
        (flow.proto, flow.src_port, flow.dst_port),
        (Proto::Icmp, 0x0101, 0x0101)
    );
    assert_eq!(*echo, Some(Echo::Request));
    let rw = Rewrite {
        src_port: 0x0202,
        dst_port: 0x0202,
        ..out_rw()
    };
    let out = d.translate(&Plan::Flow(rw), 9, &cfg()).unwrap();
    let p = Ipv4Packet::new_checked(&out[..]).unwrap();
    assert_eq!((p.protocol(), p.ecn()), (icmp::PROTO_ICMP, Ecn::Ect0));
    let icmp = p.payload();
    assert_eq!((icmp[0], icmp[1]), (icmp::V4_ECHO_REQUEST, 0));
    assert_eq!(&icmp[4..8], &[0x02, 0x02, 0, 7]);
    assert_eq!(&icmp[8..], b"ping payload");
    assert!(
        icmp::verify_icmpv4(icmp),
        "incremental checksum drops the pseudo-header"
    );
}

#[test]
fn icmpv4_echo_reply_becomes_icmpv6_echo_reply() {
    let input = echo4(icmp::V4_ECHO_REPLY, a4(SERVER4), a4(POOL), 0x0202);
    let rw = Rewrite {
        src_port: 0x0101,
        dst_port: 0x0101,
        ..in_rw()
    };
    let out = v4_to_v6(&input, &Plan::Flow(rw)).unwrap();
    let p = Ipv6Packet::new_checked(&out[0][..]).unwrap();
    let icmp = p.payload();
    assert_eq!(
        (p.next_header(), icmp[0]),
        (icmp::PROTO_ICMPV6, icmp::V6_ECHO_REPLY)
    );
    assert_eq!(&icmp[4..6], &[0x01, 0x01]);
    assert!(
        icmp::verify_icmpv6(icmp, p.src(), p.dst()),
        "pseudo-header added"
    );
}

#[test]
fn fragmentation_needed_becomes_packet_too_big_with_mtu_plus_20() {
    // The client's TCP segment as the NAT sent it to the IPv4 side...
    let syn = syn_repr(6000, 443);
    let sent = tcp_datagram(
        a4(POOL).into(),
        a4(SERVER4).into(),
        Ecn::Ect1,
        &syn,
        b"data",
    )
    .unwrap();
    // ...bounced by an IPv4 router with a 1400-byte next hop.
    let router = a4("203.0.113.9");
    let error = icmp::v4_error(router, a4(POOL), 3, 4, [0, 0, 0x05, 0x78], &sent);
    let d = Ipv4Datagram::parse(&error).unwrap();
    let Content::Error { inner } = d.content() else {
        panic!("an error")
    };
    assert_eq!(
        (inner.src, inner.src_port, inner.dst, inner.dst_port),
        (a4(POOL), 6000, a4(SERVER4), 443)
    );

    let plan = Plan::Error {
        src: Nat64Prefix::WELL_KNOWN.embed(router),
        dst: a6(CLIENT),
        inner: Rewrite {
            src: a6(CLIENT),
            dst: server6(),
            src_port: 5000,
            dst_port: 443,
        },
    };
    let out = d.translate(&plan, &cfg()).unwrap();
    let p = Ipv6Packet::new_checked(&out[0][..]).unwrap();
    let icmp = p.payload();
    assert_eq!((icmp[0], icmp[1]), (icmp::V6_PACKET_TOO_BIG, 0));
    assert_eq!(
        u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]),
        1420
    );
    assert!(icmp::verify_icmpv6(icmp, p.src(), p.dst()));
    // The quoted packet is the client's own segment again, checksum valid.
    let seg = parse_tcp(&icmp[8..]).unwrap();
    assert_eq!((seg.src, seg.dst), (a6(CLIENT).into(), server6().into()));
    assert_eq!(
        (seg.tcp.src_port, seg.tcp.dst_port, seg.ecn),
        (5000, 443, Ecn::Ect1)
    );
    assert_eq!(seg.payload, b"data");
}

#[test]
fn icmpv6_port_unreachable_becomes_icmpv4_port_unreachable() {
    // The server's datagram as delivered to the client...
    let delivered = udp_datagram(
        sa(server6(), 53),
        sa(a6(CLIENT), 5000),
        Ecn::NotEct,
        b"late",
    )
    .unwrap();
    // ...refused by the client.
    let error = icmp::v6_error(
        a6(CLIENT),
        server6(),
        icmp::V6_DEST_UNREACHABLE,
        4,
        [0; 4],
        &delivered,
    );
    let d = Ipv6Datagram::parse(&error).unwrap();
    let plan = Plan::Error {
        src: a4(POOL),
        dst: a4(SERVER4),
        inner: Rewrite {
            src: a4(SERVER4),
            dst: a4(POOL),
            src_port: 53,
            dst_port: 6000,
        },
    };
    let out = d.translate(&plan, 1, &cfg()).unwrap();
    let p = Ipv4Packet::new_checked(&out[..]).unwrap();
    assert!(p.verify_checksum());
    let icmp = p.payload();
    assert_eq!((icmp[0], icmp[1]), (icmp::V4_DEST_UNREACHABLE, 3));
    assert!(icmp::verify_icmpv4(icmp));
    let (src, dst, _, payload) = parse_udp(&icmp[8..]).unwrap();
    assert_eq!(
        (src, dst, payload),
        (sa(a4(SERVER4), 53), sa(a4(POOL), 6000), &b"late"[..])
    );
}

#[test]
fn packet_too_big_from_ipv6_becomes_fragmentation_needed() {
    let delivered =
        udp_datagram(sa(server6(), 53), sa(a6(CLIENT), 5000), Ecn::NotEct, b"x").unwrap();
    let error = icmp::v6_error(
        a6("2001:db8:1::1"),
        server6(),
        icmp::V6_PACKET_TOO_BIG,
        0,
        1280u32.to_be_bytes(),
        &delivered,
    );
    let plan = Plan::Error {
        src: a4(POOL),
        dst: a4(SERVER4),
        inner: Rewrite {
            src: a4(SERVER4),
            dst: a4(POOL),
            src_port: 53,
            dst_port: 6000,
        },
    };
    let out = v6_to_v4(&error, &plan).unwrap();
    let icmp = &out[20..];
    assert_eq!((icmp[0], icmp[1]), (3, 4));
    assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1260);
}

#[test]
fn hop_limit_and_ttl_exhaustion_are_refused() {
    let mut input = udp6(b"x", Ecn::NotEct);
    Ipv6Packet::new_checked(&mut input[..])
        .unwrap()
        .set_hop_limit(1);
    assert_eq!(
        v6_to_v4(&input, &Plan::Flow(out_rw())),
        Err(TranslateError::HopLimitExceeded)
    );

    let mut input = udp4_reply(b"x", Ecn::NotEct);
    let mut p = Ipv4Packet::new_checked(&mut input[..]).unwrap();
    p.set_ttl(1);
    p.fill_checksum();
    assert_eq!(
        v4_to_v6(&input, &Plan::Flow(in_rw())),
        Err(TranslateError::HopLimitExceeded)
    );
}

#[test]
fn df_is_set_only_above_1260_bytes() {
    // 1260-byte IPv4 result: 1280-byte IPv6 input with a 1232-byte payload.
    let input = udp6(&[0u8; 1232], Ecn::NotEct);
    let out = v6_to_v4(&input, &Plan::Flow(out_rw())).unwrap();
    assert_eq!(out.len(), 1260);
    assert!(!Ipv4Packet::new_checked(&out[..]).unwrap().dont_frag());
    let input = udp6(&[0u8; 1233], Ecn::NotEct);
    let out = v6_to_v4(&input, &Plan::Flow(out_rw())).unwrap();
    assert!(Ipv4Packet::new_checked(&out[..]).unwrap().dont_frag());
    assert!(parse_udp(&out).is_ok());
}

#[test]
fn too_big_for_ipv4_link_reports_mtu_plus_20() {
    let input = udp6(&[0u8; 1452], Ecn::NotEct); // 1500 bytes of IPv6
    let small = TranslateConfig {
        ipv4_mtu: 1400,
        ..cfg()
    };
    let d = Ipv6Datagram::parse(&input).unwrap();
    assert_eq!(
        d.translate(&Plan::Flow(out_rw()), 0, &small),
        Err(TranslateError::PacketTooBig { mtu: 1420 })
    );
    assert!(d.translate(&Plan::Flow(out_rw()), 0, &cfg()).is_ok());
}

#[test]
fn ipv4_df_too_big_is_refused_and_without_df_is_fragmented() {
    let payload: Vec<u8> = (0..1472u16).map(|i| i as u8).collect();
    let input = udp4_reply(&payload, Ecn::Ect1); // 1500 bytes, DF set
    assert_eq!(
        v4_to_v6(&input, &Plan::Flow(in_rw())),
        Err(TranslateError::FragmentationNeeded { mtu: 1480 })
    );

    let mut input = input;
    let mut p = Ipv4Packet::new_checked(&mut input[..]).unwrap();
    p.set_dont_frag(false);
    p.set_ident(0xbeef);
    p.fill_checksum();
    let frags = v4_to_v6(&input, &Plan::Flow(in_rw())).unwrap();
    assert_eq!(frags.len(), 2);
    let mut udp = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        assert!(f.len() <= 1280);
        let p = Ipv6Packet::new_checked(&f[..]).unwrap();
        assert_eq!((p.next_header(), p.ecn()), (EXT_FRAGMENT, Ecn::Ect1));
        let h = &p.payload()[..8];
        assert_eq!(h[0], PROTO_UDP);
        let offset_flags = u16::from_be_bytes([h[2], h[3]]);
        assert_eq!(
            usize::from(offset_flags >> 3) * 8,
            udp.len(),
            "fragment {i} offset"
        );
        assert_eq!(offset_flags & 1 == 1, i == 0, "M flag on all but the last");
        assert_eq!(u32::from_be_bytes([h[4], h[5], h[6], h[7]]), 0xbeef);
        udp.extend_from_slice(&p.payload()[8..]);
    }
    // Reassembled, the UDP datagram carries a checksum valid for IPv6.
    let whole = UdpPacket::new_checked(&udp[..]).unwrap();
    assert!(whole.verify_checksum(server6().into(), a6(CLIENT).into()));
    assert_eq!(whole.payload(), &payload[..]);
}

/// Inserts an 8-byte extension header of `kind` after the IPv6 header of
/// `packet`; `rest` is its bytes 2..8.
fn with_extension(packet: &[u8], kind: u8, rest: [u8; 6]) -> Vec<u8> {
    let mut out = packet[..40].to_vec();
    let next = out[6];
    out[6] = kind;
    let len = u16::from_be_bytes([out[4], out[5]]) + 8;
    out[4..6].copy_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&[next, 0]);
    out.extend_from_slice(&rest);
    out.extend_from_slice(&packet[40..]);
    out
}

#[test]
fn extension_headers_are_skipped_or_refused() {
    let input = udp6(b"ext", Ecn::NotEct);
    let hbh = with_extension(&input, EXT_HOP_BY_HOP, [1, 4, 0, 0, 0, 0]);
    let out = v6_to_v4(&hbh, &Plan::Flow(out_rw())).unwrap();
    assert_eq!(out.len(), input.len() - 20, "extension header dropped");
    assert!(parse_udp(&out).is_ok());

    let atomic = with_extension(&input, EXT_FRAGMENT, [0, 0, 0, 0, 0, 1]);
    assert!(v6_to_v4(&atomic, &Plan::Flow(out_rw())).is_ok());
    let first = with_extension(&input, EXT_FRAGMENT, [0, 1, 0, 0, 0, 1]);
    assert_eq!(
        v6_to_v4(&first, &Plan::Flow(out_rw())),
        Err(TranslateError::Fragment)
    );

    let routing = with_extension(&input, EXT_ROUTING, [0, 1, 0, 0, 0, 0]);
    assert_eq!(
        v6_to_v4(&routing, &Plan::Flow(out_rw())),
        Err(TranslateError::SegmentsLeft)
    );
    let routed = with_extension(&input, EXT_ROUTING, [0, 0, 0, 0, 0, 0]);
    assert!(v6_to_v4(&routed, &Plan::Flow(out_rw())).is_ok());
}

#[test]
fn ipv4_fragments_unknown_protocols_and_local_icmp_are_refused() {
    let mut input = udp4_reply(b"frag", Ecn::NotEct);
    input[6] |= 0x20; // more fragments
    let mut p = Ipv4Packet::new_checked(&mut input[..]).unwrap();
    p.fill_checksum();
    assert_eq!(
        v4_to_v6(&input, &Plan::Flow(in_rw())),
        Err(TranslateError::Fragment)
    );

    let mut sctp = udp4_reply(b"sctp", Ecn::NotEct);
    let mut p = Ipv4Packet::new_checked(&mut sctp[..]).unwrap();
    p.set_protocol(132);
    p.fill_checksum();
    assert_eq!(
        v4_to_v6(&sctp, &Plan::Flow(in_rw())),
        Err(TranslateError::UnknownProtocol(132))
    );

    // Neighbour solicitation never leaves its link.
    let ns = echo6(135, a6(CLIENT), server6(), 0, Ecn::NotEct);
    assert_eq!(
        v6_to_v4(&ns, &Plan::Flow(out_rw())),
        Err(TranslateError::UntranslatableIcmp {
            icmp_type: 135,
            code: 0
        })
    );
}

#[test]
fn bad_ipv4_header_checksum_is_refused() {
    let mut input = udp4_reply(b"x", Ecn::NotEct);
    input[8] ^= 1;
    assert_eq!(
        Ipv4Datagram::parse(&input).err(),
        Some(TranslateError::BadChecksum)
    );
}

#[test]
fn plan_must_match_content() {
    let input = udp6(b"x", Ecn::NotEct);
    let plan = Plan::Error {
        src: a4(POOL),
        dst: a4(SERVER4),
        inner: out_rw(),
    };
    assert_eq!(v6_to_v4(&input, &plan), Err(TranslateError::PlanMismatch));
}

#[test]
fn checksum_adjust_matches_recompute() {
    // RFC 1624's example: a header word changing from 0x5555 to 0x3285.
    let mut data = [0x12u8, 0x34, 0x55, 0x55, 0xab, 0xcd];
    let before = checksum::of(&data);
    data[2..4].copy_from_slice(&[0x32, 0x85]);
    let after = adjust(before, 0x5555, 0x3285);
    assert_eq!(after, checksum::of(&data));
}
