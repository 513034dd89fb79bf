//! Runs every brisk-nat64 entry point over one input and asserts what must
//! hold for any bytes: the translators, a NAT64 with live sessions, the DNS
//! parser and the DNS64 responder. Shared by `tests/never_panics.rs` and
//! the fuzz target `fuzz/fuzz_targets/nat64_any.rs`.

use brisk_nat64::dns::Message;
use brisk_nat64::translate::{Content, Ipv4Datagram, Ipv6Datagram, Plan, Rewrite};
use brisk_nat64::{Dns64, Nat64, Nat64Config, Nat64Prefix, Side, TranslateConfig};
use brisk_time::Instant;
use brisk_wire::ipv4::Ipv4Packet;
use brisk_wire::ipv6::Ipv6Packet;
use brisk_wire::{Ecn, checksum, udp_datagram};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

pub const POOL: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
pub const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);
pub const CLIENT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

/// A valid outbound UDP datagram, client port 5000 to the server's 53.
pub fn template_v6() -> Vec<u8> {
    let dst = Nat64Prefix::WELL_KNOWN.embed(SERVER);
    udp_datagram(
        SocketAddr::new(CLIENT.into(), 5000),
        SocketAddr::new(dst.into(), 53),
        Ecn::Ect1,
        b"fuzz",
    )
    .unwrap_or_default()
}

/// The server's reply to [`template_v6`] as it reaches the pool.
pub fn template_v4() -> Vec<u8> {
    udp_datagram(
        SocketAddr::new(SERVER.into(), 53),
        SocketAddr::new(POOL.into(), 5000),
        Ecn::Ce,
        b"fuzz",
    )
    .unwrap_or_default()
}

/// `template` with `data` XORed over its start, IPv4 header checksum
/// repaired so mutations get past it.
pub fn mutate(template: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = template.to_vec();
    for (b, d) in out.iter_mut().zip(data) {
        *b ^= d;
    }
    if data.len() > out.len() {
        out.extend_from_slice(&data[out.len()..]);
    }
    if out.first().is_some_and(|b| b >> 4 == 4) {
        let ihl = usize::from(out[0] & 0x0f) * 4;
        if ihl >= 20 && out.len() >= ihl {
            out[10..12].copy_from_slice(&[0, 0]);
            let c = checksum::of(&out[..ihl]);
            out[10..12].copy_from_slice(&c.to_be_bytes());
        }
    }
    out
}

/// Every check, on the raw input and on the input spliced into valid
/// datagrams.
pub fn check_all(data: &[u8]) {
    translators(data);
    nat(data);
    dns(data);
}

fn translators(data: &[u8]) {
    let cfg = TranslateConfig::default();
    for input in [data.to_vec(), mutate(&template_v6(), data)] {
        let Ok(d) = Ipv6Datagram::parse(&input) else {
            continue;
        };
        let rw = Rewrite {
            src: POOL,
            dst: SERVER,
            src_port: 1,
            dst_port: 2,
        };
        let plan = match d.content() {
            Content::Flow { .. } => Plan::Flow(rw),
            Content::Error { .. } => Plan::Error {
                src: POOL,
                dst: SERVER,
                inner: rw,
            },
        };
        if let Ok(out) = d.translate(&plan, 7, &cfg) {
            let p = Ipv4Packet::new_checked(&out[..]).expect("translator output is IPv4");
            assert_eq!(p.total_len(), out.len());
            assert!(p.verify_checksum());
            assert_eq!(p.ecn(), d.ecn(), "ECN preserved");
            assert!(out.len() <= cfg.ipv4_mtu);
        }
    }
    for input in [data.to_vec(), mutate(&template_v4(), data)] {
        let Ok(d) = Ipv4Datagram::parse(&input) else {
            continue;
        };
        let rw = Rewrite {
            src: Nat64Prefix::WELL_KNOWN.embed(SERVER),
            dst: CLIENT,
            src_port: 1,
            dst_port: 2,
        };
        let plan = match d.content() {
            Content::Flow { .. } => Plan::Flow(rw),
            Content::Error { .. } => Plan::Error {
                src: rw.src,
                dst: CLIENT,
                inner: rw,
            },
        };
        if let Ok(out) = d.translate(&plan, &cfg) {
            assert!(!out.is_empty());
            for f in out {
                let p = Ipv6Packet::new_checked(&f[..]).expect("translator output is IPv6");
                assert_eq!(p.total_len(), f.len());
                assert_eq!(p.ecn(), d.ecn(), "ECN preserved");
                assert!(f.len() <= cfg.ipv6_mtu);
            }
        }
    }
}

fn nat(data: &[u8]) {
    let mut config = Nat64Config::new(Nat64Prefix::WELL_KNOWN, vec![POOL]);
    config.max_sessions = 8;
    let Ok(mut nat) = Nat64::new(config) else {
        return;
    };
    let t0 = Instant::ZERO;
    // A live session, so inbound mutations can match it.
    let _ = nat.handle_v6(t0, &template_v6());
    let inputs = [
        (Side::V6, data.to_vec()),
        (Side::V4, data.to_vec()),
        (Side::V6, mutate(&template_v6(), data)),
        (Side::V4, mutate(&template_v4(), data)),
    ];
    for (i, (side, input)) in inputs.iter().enumerate() {
        let now = Instant::from_millis(i as u64 * 1000);
        let out = match side {
            Side::V6 => nat.handle_v6(now, input),
            Side::V4 => nat.handle_v4(now, input),
        };
        if let Ok(out) = out {
            let version = out.first().map(|b| b >> 4);
            assert_eq!(version, Some(if *side == Side::V6 { 4 } else { 6 }));
        }
        while let Some(t) = nat.poll_transmit() {
            let version = t.datagram.first().map(|b| b >> 4);
            assert_eq!(version, Some(if t.side == Side::V6 { 6 } else { 4 }));
        }
    }
    let st = nat.stats();
    assert!(st.sessions <= 8 && st.bindings <= st.sessions);
    nat.handle_timeout(Instant::from_millis(10_000_000));
    assert_eq!(nat.stats().sessions, 0, "everything expires");
}

fn dns(data: &[u8]) {
    let round_trip = Message::parse(data).and_then(|m| Ok((m.to_bytes()?, m)));
    if let Ok((bytes, m)) = round_trip {
        assert_eq!(
            Message::parse(&bytes).as_ref(),
            Ok(&m),
            "parse/build round trip"
        );
    }
    let zone = BTreeMap::from([("server.brisk.test".to_string(), vec![IpAddr::V4(SERVER)])]);
    let Ok(d) = Dns64::new(Nat64Prefix::WELL_KNOWN, zone) else {
        return;
    };
    if let Some(resp) = d.handle_query(data) {
        let m = Message::parse(&resp).expect("responses parse");
        assert!(m.header.qr);
        assert_eq!(
            Some(m.header.id),
            data.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]))
        );
        assert!(resp.len() <= 1232);
    }
}
