//! Emit-then-parse gives back what was emitted, for every format and both
//! address families; set_ecn keeps any IPv4 header's checksum valid.

#[path = "support/strategies.rs"]
mod strategies;

use brisk_wire::checksum;
use brisk_wire::ip::{self, TcpSegment, parse_tcp, parse_udp, tcp_datagram, udp_datagram};
use brisk_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use brisk_wire::ipv6::{Ipv6Packet, Ipv6Repr};
use brisk_wire::tcp::{TcpPacket, TcpRepr};
use brisk_wire::udp::{UdpPacket, UdpRepr};
use proptest::collection::vec;
use proptest::prelude::*;
use std::net::SocketAddr;
use strategies::{addr_pair, config, ecn, ipv4_repr, ipv6_repr, payload, tcp_repr, valid_datagram};

/// An IPv4 header with any IHL (options bytes random), any TOS, any total
/// length that fits the buffer, and a correct checksum.
fn ipv4_header_any() -> impl Strategy<Value = Vec<u8>> {
    (5u8..16, vec(any::<u8>(), 60), 0usize..64).prop_map(|(ihl, mut b, extra)| {
        let header_len = usize::from(ihl) * 4;
        b[0] = 0x40 | ihl;
        let total = header_len + extra;
        b.resize(total, 0xee);
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[10..12].copy_from_slice(&[0, 0]);
        let c = checksum::of(&b[..header_len]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn ipv4(r in ipv4_repr()) {
        let mut buf = vec![0u8; r.header_len() + r.payload_len];
        r.emit(&mut buf).unwrap();
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn ipv6(r in ipv6_repr()) {
        let mut buf = vec![0u8; r.header_len() + r.payload_len];
        r.emit(&mut buf).unwrap();
        let p = Ipv6Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv6Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn udp((src, dst) in addr_pair(), ports in any::<(u16, u16)>(), data in payload()) {
        let r = UdpRepr { src_port: ports.0, dst_port: ports.1 };
        let mut buf = vec![0u8; 8 + data.len()];
        r.emit(&mut buf, src, dst, &data).unwrap();
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(UdpRepr::parse(&p, src, dst).unwrap(), r);
        prop_assert_eq!(p.payload(), &data[..]);
    }

    #[test]
    fn tcp((src, dst) in addr_pair(), r in tcp_repr(), data in payload()) {
        let mut buf = vec![0u8; r.header_len() + data.len()];
        r.emit(&mut buf, src, dst, &data).unwrap();
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(p.header_len(), r.header_len());
        prop_assert_eq!(p.flags(), r.flags);
        prop_assert_eq!(TcpRepr::parse(&p, src, dst).unwrap(), r);
        prop_assert_eq!(p.payload(), &data[..]);
    }

    #[test]
    fn udp_datagram_both_families((src, dst) in addr_pair(), ports in any::<(u16, u16)>(), e in ecn(), data in payload()) {
        let (a, b) = (SocketAddr::new(src, ports.0), SocketAddr::new(dst, ports.1));
        let d = udp_datagram(a, b, e, &data).unwrap();
        prop_assert_eq!(parse_udp(&d).unwrap(), (a, b, e, &data[..]));
    }

    #[test]
    fn udp_datagram_in_place_builds_the_same_bytes(
        (src, dst) in addr_pair(),
        ports in any::<(u16, u16)>(),
        e in ecn(),
        data in payload(),
        junk in any::<u8>(),
    ) {
        let (a, b) = (SocketAddr::new(src, ports.0), SocketAddr::new(dst, ports.1));
        let room = ip::udp_headroom(src);
        let mut packet = vec![junk; room];
        packet.extend_from_slice(&data);
        ip::udp_datagram_in_place(a, b, e, &mut packet).unwrap();
        prop_assert_eq!(packet, udp_datagram(a, b, e, &data).unwrap());
    }

    #[test]
    fn tcp_datagram_both_families((src, dst) in addr_pair(), r in tcp_repr(), e in ecn(), data in payload()) {
        let d = tcp_datagram(src, dst, e, &r, &data).unwrap();
        let s = ip::summarize(&d).unwrap();
        prop_assert_eq!((s.flow.src_port, s.flow.dst_port, s.flow.protocol), (r.src_port, r.dst_port, 6));
        let want = TcpSegment { src, dst, ecn: e, tcp: r, payload: &data[..] };
        prop_assert_eq!(parse_tcp(&d).unwrap(), want);
    }

    #[test]
    fn built_datagrams_summarize_to_their_own_length(d in valid_datagram()) {
        let s = ip::summarize(&d).unwrap();
        prop_assert_eq!(s.total_len, d.len());
        let transport = (parse_tcp(&d).is_ok(), parse_udp(&d).is_ok());
        prop_assert_eq!(transport, (s.flow.protocol == 6, s.flow.protocol == 17));
    }

    #[test]
    fn set_ecn_keeps_any_ipv4_checksum_valid(mut b in ipv4_header_any(), e in ecn()) {
        let before = b.clone();
        prop_assert!(Ipv4Packet::new_checked(&b[..]).unwrap().verify_checksum());
        ip::set_ecn(&mut b, e).unwrap();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(p.ecn(), e);
        // Only the ECN bits and the checksum may change.
        prop_assert_eq!(b[1] & !0b11, before[1] & !0b11);
        prop_assert_eq!(&b[2..10], &before[2..10]);
        prop_assert_eq!(&b[12..], &before[12..]);
    }

    #[test]
    fn set_ecn_touches_only_the_ipv6_ecn_bits(r in ipv6_repr(), e in ecn()) {
        let r = Ipv6Repr { payload_len: r.payload_len % 64, ..r };
        let mut b = vec![0u8; 40 + r.payload_len];
        r.emit(&mut b).unwrap();
        ip::set_ecn(&mut b, e).unwrap();
        let back = Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()).unwrap();
        prop_assert_eq!(back, Ipv6Repr { ecn: e, ..r });
        prop_assert_eq!(ip::ecn(&b).unwrap(), e);
    }
}
