//! Runs every brisk-wire parser over one input and asserts what must hold
//! for any bytes at all. Shared by `tests/never_panics.rs` and the fuzz
//! target `fuzz/fuzz_targets/parse_any.rs`, so both hunt the same bugs.

use brisk_wire::Ecn;
use brisk_wire::ip::{
    self, parse_tcp, parse_udp, parse_udp_trusted, set_ecn, summarize, tcp_datagram, udp_datagram,
};
use brisk_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use brisk_wire::ipv6::{Ipv6Packet, Ipv6Repr};
use brisk_wire::tcp::{TcpOption, TcpOptionIter, TcpPacket, TcpRepr};
use brisk_wire::udp::{UdpPacket, UdpRepr};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const ECNS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

/// Reads `data` as a whole datagram and as a bare TCP or UDP header (with
/// IPv4 and IPv6 pseudo-headers); panics only if an invariant breaks.
pub fn parse_all(data: &[u8]) {
    datagram(data);
    // Random bytes almost never carry valid checksums; repair them so the
    // checks behind checksum verification see mutated headers too.
    if let Some(fixed) = with_checksums_filled(data) {
        datagram(&fixed);
    }
    let v4 = (
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
    );
    let v6 = (
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2)),
    );
    for (src, dst) in [v4, v6] {
        udp(data, src, dst);
        tcp(data, src, dst);
    }
    // The walk stops after its first error, so flatten sees every option.
    for o in TcpOptionIter::new(data).flatten() {
        let mut buf = [0u8; 40];
        let n = o.emit(&mut buf).expect("a parsed option emits");
        let back = TcpOptionIter::new(&buf[..n]).next();
        assert_eq!(back, Some(Ok(o)));
    }
}

fn datagram(data: &[u8]) {
    let _ = ip::version(data);
    let _ = ip::ecn(data);
    if let Ok(p) = Ipv4Packet::new_checked(data) {
        let _ = (p.header_len(), p.dscp(), p.ecn(), p.total_len(), p.ident());
        let _ = (
            p.dont_frag(),
            p.is_fragment(),
            p.ttl(),
            p.protocol(),
            p.checksum(),
        );
        let _ = (p.src(), p.dst(), p.payload());
        if let Ok(r) = Ipv4Repr::parse(&p) {
            let mut buf = vec![0u8; r.header_len() + r.payload_len];
            r.emit(&mut buf).expect("a parsed ipv4 header emits");
            let back = Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap();
            assert_eq!(back, r);
        }
    }
    if let Ok(p) = Ipv6Packet::new_checked(data) {
        let _ = (
            p.dscp(),
            p.ecn(),
            p.flow_label(),
            p.payload_len(),
            p.total_len(),
        );
        let _ = (
            p.next_header(),
            p.hop_limit(),
            p.src(),
            p.dst(),
            p.payload(),
        );
        if let Some((_, off)) = p.upper_layer() {
            assert!(off <= p.total_len());
        }
        let r = Ipv6Repr::parse(&p).expect("ipv6 parse is infallible after new_checked");
        let mut buf = vec![0u8; r.header_len() + r.payload_len];
        r.emit(&mut buf).expect("a parsed ipv6 header emits");
        let back = Ipv6Repr::parse(&Ipv6Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(back, r);
    }
    let Ok(summary) = summarize(data) else {
        return;
    };
    assert!(summary.total_len <= data.len());
    assert!(summary.transport_offset <= summary.total_len);
    let v4_valid = Ipv4Packet::new_checked(data).is_ok_and(|p| p.verify_checksum());
    for e in ECNS {
        let mut copy = data.to_vec();
        set_ecn(&mut copy, e).expect("set_ecn works wherever summarize does");
        let after = summarize(&copy).expect("set_ecn keeps a datagram readable");
        assert_eq!(after.ecn, e);
        assert_eq!(
            (after.dscp, after.flow, after.total_len),
            (summary.dscp, summary.flow, summary.total_len)
        );
        if v4_valid {
            assert!(
                Ipv4Packet::new_checked(&copy[..])
                    .unwrap()
                    .verify_checksum()
            );
        }
        assert_eq!(copy.len(), data.len());
    }
    if let Some(segment) = data.get(summary.transport_offset..summary.total_len) {
        udp(segment, summary.flow.src, summary.flow.dst);
        tcp(segment, summary.flow.src, summary.flow.dst);
    }
    if let Ok((src, dst, e, payload)) = parse_udp(data) {
        let again = udp_datagram(src, dst, e, payload).expect("a parsed udp datagram rebuilds");
        assert_eq!(parse_udp(&again), Ok((src, dst, e, payload)));
    }
    // Trusting the UDP checksum changes what is accepted, never what is read.
    if let Ok((src, dst, e, payload)) = parse_udp_trusted(data) {
        if let Ok(checked) = parse_udp(data) {
            assert_eq!(checked, (src, dst, e, payload));
        }
        let again = udp_datagram(src, dst, e, payload).expect("a parsed udp datagram rebuilds");
        assert_eq!(parse_udp(&again), Ok((src, dst, e, payload)));
    } else {
        assert!(parse_udp(data).is_err());
    }
    if let Ok(seg) = parse_tcp(data) {
        let again = tcp_datagram(seg.src, seg.dst, seg.ecn, &seg.tcp, seg.payload)
            .expect("a parsed tcp datagram rebuilds");
        assert_eq!(parse_tcp(&again), Ok(seg));
    }
}

/// `data` with its IPv4 header checksum and TCP or UDP checksum recomputed,
/// when it reads as a datagram at all.
fn with_checksums_filled(data: &[u8]) -> Option<Vec<u8>> {
    let s = summarize(data).ok()?;
    let mut d = data.to_vec();
    if s.version == 4 {
        Ipv4Packet::new_checked(&mut d[..]).ok()?.fill_checksum();
    }
    let segment = d.get_mut(s.transport_offset..s.total_len)?;
    match s.flow.protocol {
        6 => TcpPacket::new_checked(segment)
            .ok()?
            .fill_checksum(s.flow.src, s.flow.dst),
        17 => UdpPacket::new_checked(segment)
            .ok()?
            .fill_checksum(s.flow.src, s.flow.dst),
        _ => {}
    }
    Some(d)
}

fn udp(data: &[u8], src: IpAddr, dst: IpAddr) {
    let Ok(p) = UdpPacket::new_checked(data) else {
        return;
    };
    let _ = (
        p.src_port(),
        p.dst_port(),
        p.len(),
        p.is_empty(),
        p.checksum(),
        p.payload(),
    );
    if let Ok(r) = UdpRepr::parse(&p, src, dst) {
        let mut buf = vec![0u8; p.len()];
        r.emit(&mut buf, src, dst, p.payload())
            .expect("a parsed udp header emits");
        let back = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(UdpRepr::parse(&back, src, dst), Ok(r));
        assert_eq!(back.payload(), p.payload());
    }
}

fn tcp(data: &[u8], src: IpAddr, dst: IpAddr) {
    let Ok(p) = TcpPacket::new_checked(data) else {
        return;
    };
    let _ = (
        p.src_port(),
        p.dst_port(),
        p.seq_number(),
        p.ack_number(),
        p.header_len(),
    );
    let _ = (
        p.flags(),
        p.ace(),
        p.window(),
        p.checksum(),
        p.urgent_pointer(),
    );
    let _ = (
        p.options_bytes(),
        p.payload(),
        p.len(),
        p.verify_checksum(src, dst),
    );
    let options: Vec<_> = p.options().collect();
    // The walk ends at the first error or end-of-list.
    if let Some(i) = options
        .iter()
        .position(|o| matches!(o, Err(_) | Ok(TcpOption::EndOfList)))
    {
        assert_eq!(i, options.len() - 1);
    }
    if let Ok(r) = TcpRepr::parse(&p, src, dst) {
        assert!(r.header_len() <= p.header_len());
        let mut buf = vec![0u8; r.header_len() + p.payload().len()];
        r.emit(&mut buf, src, dst, p.payload())
            .expect("a parsed tcp header emits");
        let back = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(TcpRepr::parse(&back, src, dst), Ok(r));
        assert_eq!(back.payload(), p.payload());
    }
}
