//! Tests for [`super::Nat64`]: sessions, filtering, timeouts in virtual
//! time, limits, ICMP errors and hairpinning, all through real datagrams.

use super::*;
use brisk_wire::ip::{parse_tcp, parse_udp};
use brisk_wire::ipv4::Ipv4Packet;
use brisk_wire::ipv6::Ipv6Packet;
use brisk_wire::tcp::{TcpFlags, TcpRepr};
use brisk_wire::{Ecn, tcp_datagram, udp_datagram};
use std::net::{IpAddr, SocketAddr};

const POOL: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);
const OTHER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 44);

fn host(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n)
}

fn syn6(v4: Ipv4Addr) -> Ipv6Addr {
    Nat64Prefix::WELL_KNOWN.embed(v4)
}

fn secs(s: u64) -> Instant {
    Instant::from_millis(s * 1000)
}

fn config() -> Nat64Config {
    Nat64Config::new(Nat64Prefix::WELL_KNOWN, vec![POOL])
}

fn nat() -> Nat64 {
    Nat64::new(config()).unwrap()
}

fn udp_out(from: Ipv6Addr, port: u16, to: Ipv4Addr, to_port: u16) -> Vec<u8> {
    let src = SocketAddr::new(from.into(), port);
    let dst = SocketAddr::new(syn6(to).into(), to_port);
    udp_datagram(src, dst, Ecn::Ect1, b"query").unwrap()
}

fn udp_in(from: Ipv4Addr, port: u16, to_port: u16) -> Vec<u8> {
    let src = SocketAddr::new(from.into(), port);
    let dst = SocketAddr::new(POOL.into(), to_port);
    udp_datagram(src, dst, Ecn::Ce, b"reply").unwrap()
}

fn tcp(src: IpAddr, dst: IpAddr, sport: u16, dport: u16, flags: TcpFlags) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: sport,
        dst_port: dport,
        seq_number: 1,
        ack_number: 0,
        flags,
        window: 65535,
        urgent_pointer: 0,
        options: vec![],
    };
    tcp_datagram(src, dst, Ecn::NotEct, &repr, &[]).unwrap()
}

fn sa(ip: impl Into<IpAddr>, port: u16) -> SocketAddr {
    SocketAddr::new(ip.into(), port)
}

#[test]
fn udp_session_is_created_reused_and_matched_by_replies() {
    let mut nat = nat();
    let out = nat
        .handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    let (src, dst, ecn, payload) = parse_udp(&out).unwrap();
    assert_eq!(
        (src, dst),
        (sa(POOL, 5000), sa(SERVER, 53)),
        "port preserved"
    );
    assert_eq!((ecn, payload), (Ecn::Ect1, &b"query"[..]));

    // Same flow: same session. Another peer: same binding (endpoint-
    // independent mapping), new session.
    let again = nat
        .handle_v6(secs(1), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    assert_eq!(parse_udp(&again).unwrap().0, sa(POOL, 5000));
    let other = nat
        .handle_v6(secs(1), &udp_out(host(1), 5000, OTHER, 53))
        .unwrap();
    assert_eq!(parse_udp(&other).unwrap().0, sa(POOL, 5000));
    let st = nat.stats();
    assert_eq!(
        (st.sessions, st.bindings, st.sessions_created, st.v6_to_v4),
        (2, 1, 2, 3)
    );

    let back = nat.handle_v4(secs(2), &udp_in(SERVER, 53, 5000)).unwrap();
    let (src, dst, ecn, payload) = parse_udp(&back).unwrap();
    assert_eq!((src, dst), (sa(syn6(SERVER), 53), sa(host(1), 5000)));
    assert_eq!((ecn, payload), (Ecn::Ce, &b"reply"[..]));
}

#[test]
fn a_taken_port_moves_the_second_host_elsewhere() {
    let mut nat = nat();
    nat.handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    let out = nat
        .handle_v6(secs(0), &udp_out(host(2), 5000, SERVER, 53))
        .unwrap();
    let (src, ..) = parse_udp(&out).unwrap();
    assert_eq!(src.ip(), IpAddr::V4(POOL));
    assert_ne!(src.port(), 5000);
    let back = nat
        .handle_v4(secs(1), &udp_in(SERVER, 53, src.port()))
        .unwrap();
    assert_eq!(parse_udp(&back).unwrap().1, sa(host(2), 5000));
}

#[test]
fn unsolicited_inbound_is_dropped_and_counted() {
    let mut nat = nat();
    assert_eq!(
        nat.handle_v4(secs(0), &udp_in(SERVER, 53, 7000)),
        Err(Nat64Drop::NoBinding)
    );
    let syn = tcp(SERVER.into(), POOL.into(), 80, 7000, TcpFlags::SYN);
    assert_eq!(nat.handle_v4(secs(0), &syn), Err(Nat64Drop::NoBinding));
    let st = nat.stats();
    assert_eq!(
        (st.drops.no_binding, st.drops.total(), st.sessions),
        (2, 2, 0)
    );
}

#[test]
fn filtering_endpoint_independent_by_default_address_dependent_on_request() {
    for (filtering, expect) in [
        (Filtering::EndpointIndependent, Ok(())),
        (Filtering::AddressDependent, Err(Nat64Drop::Filtered)),
    ] {
        let mut nat = Nat64::new(Nat64Config {
            filtering,
            ..config()
        })
        .unwrap();
        nat.handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
            .unwrap();
        // The contacted host may answer from any port...
        assert!(
            nat.handle_v4(secs(1), &udp_in(SERVER, 9999, 5000)).is_ok(),
            "{filtering:?}"
        );
        // ...a stranger only under endpoint-independent filtering.
        let stranger = nat.handle_v4(secs(1), &udp_in(OTHER, 53, 5000)).map(|_| ());
        assert_eq!(stranger, expect, "{filtering:?}");
    }
}

#[test]
fn udp_session_expires_in_virtual_time_and_refreshes_on_traffic() {
    let mut nat = nat();
    nat.handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    assert_eq!(
        nat.poll_timeout(),
        Some(secs(300)),
        "RFC 6146 UDP_DEFAULT is 5 minutes"
    );
    nat.handle_timeout(secs(299));
    assert_eq!(nat.stats().sessions, 1);
    // A reply refreshes it.
    nat.handle_v4(secs(200), &udp_in(SERVER, 53, 5000)).unwrap();
    assert_eq!(nat.poll_timeout(), Some(secs(500)));
    nat.handle_timeout(secs(500));
    let st = nat.stats();
    assert_eq!((st.sessions, st.bindings, st.sessions_expired), (0, 0, 1));
    assert_eq!(nat.poll_timeout(), None);
    assert_eq!(
        nat.handle_v4(secs(501), &udp_in(SERVER, 53, 5000)),
        Err(Nat64Drop::NoBinding)
    );
}

#[test]
fn expiry_is_exact_even_without_a_timer_call() {
    let mut nat = nat();
    nat.handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    // The router never called handle_timeout; the reply after 5 minutes
    // still finds no session.
    assert_eq!(
        nat.handle_v4(secs(300), &udp_in(SERVER, 53, 5000)),
        Err(Nat64Drop::NoBinding)
    );
}

#[test]
fn tcp_session_lifecycle() {
    let mut nat = nat();
    let (client, server) = (IpAddr::V6(host(1)), IpAddr::V6(syn6(SERVER)));
    // Only a SYN opens a session.
    let ack = tcp(client, server, 40000, 443, TcpFlags::ACK);
    assert_eq!(nat.handle_v6(secs(0), &ack), Err(Nat64Drop::NoSession));

    let syn = tcp(client, server, 40000, 443, TcpFlags::SYN);
    let out = nat.handle_v6(secs(0), &syn).unwrap();
    let seg = parse_tcp(&out).unwrap();
    assert_eq!((seg.src, seg.tcp.src_port), (IpAddr::V4(POOL), 40000));
    let state = |nat: &Nat64| nat.sessions().next().and_then(|s| s.tcp);
    assert_eq!(state(&nat), Some(TcpState::V6Init));
    assert_eq!(
        nat.poll_timeout(),
        Some(secs(240)),
        "TCP_TRANS while opening"
    );

    let synack = tcp(
        SERVER.into(),
        POOL.into(),
        443,
        40000,
        TcpFlags::SYN | TcpFlags::ACK,
    );
    let back = nat.handle_v4(secs(1), &synack).unwrap();
    assert_eq!(parse_tcp(&back).unwrap().tcp.dst_port, 40000);
    assert_eq!(state(&nat), Some(TcpState::Established));
    assert_eq!(
        nat.poll_timeout(),
        Some(secs(1 + 7440)),
        "TCP_EST is 2 h 4 min"
    );

    nat.handle_v6(
        secs(10),
        &tcp(client, server, 40000, 443, TcpFlags::FIN | TcpFlags::ACK),
    )
    .unwrap();
    assert_eq!(state(&nat), Some(TcpState::V6FinRcv));
    nat.handle_v4(
        secs(11),
        &tcp(
            SERVER.into(),
            POOL.into(),
            443,
            40000,
            TcpFlags::FIN | TcpFlags::ACK,
        ),
    )
    .unwrap();
    assert_eq!(state(&nat), Some(TcpState::V4FinV6FinRcv));
    assert_eq!(nat.poll_timeout(), Some(secs(11 + 240)));
    nat.handle_timeout(secs(251));
    assert_eq!(nat.stats().sessions, 0);
}

#[test]
fn idle_established_tcp_gets_a_transitory_grace_period() {
    let mut nat = nat();
    let (client, server) = (IpAddr::V6(host(1)), IpAddr::V6(syn6(SERVER)));
    nat.handle_v6(secs(0), &tcp(client, server, 40000, 443, TcpFlags::SYN))
        .unwrap();
    nat.handle_v4(
        secs(0),
        &tcp(
            SERVER.into(),
            POOL.into(),
            443,
            40000,
            TcpFlags::SYN | TcpFlags::ACK,
        ),
    )
    .unwrap();
    nat.handle_timeout(secs(7440));
    assert_eq!(
        nat.sessions().next().and_then(|s| s.tcp),
        Some(TcpState::Trans)
    );
    // Traffic revives it; silence ends it.
    nat.handle_v6(secs(7441), &tcp(client, server, 40000, 443, TcpFlags::ACK))
        .unwrap();
    assert_eq!(
        nat.sessions().next().and_then(|s| s.tcp),
        Some(TcpState::Established)
    );
    nat.handle_timeout(secs(7441 + 7440 + 240));
    assert_eq!(nat.stats().sessions, 0);
}

#[test]
fn inbound_syn_to_a_binding_opens_v4_init() {
    let mut nat = nat();
    let (client, server) = (IpAddr::V6(host(1)), IpAddr::V6(syn6(SERVER)));
    nat.handle_v6(secs(0), &tcp(client, server, 40000, 443, TcpFlags::SYN))
        .unwrap();
    // A different IPv4 host connects to the bound transport address.
    let syn = tcp(OTHER.into(), POOL.into(), 5555, 40000, TcpFlags::SYN);
    let v6 = nat.handle_v4(secs(1), &syn).unwrap();
    assert_eq!(parse_tcp(&v6).unwrap().dst, client);
    let s = nat.sessions().find(|s| s.remote.0 == OTHER).unwrap();
    assert_eq!(s.tcp, Some(TcpState::V4Init));
}

fn echo6(from: Ipv6Addr, to: Ipv4Addr, icmp_type: u8, id: u16, hop_limit: u8) -> Vec<u8> {
    let (src, dst) = (from, syn6(to));
    let mut icmp = vec![icmp_type, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&[0, 1]);
    icmp.extend_from_slice(b"abcdefgh");
    icmp::fill_icmpv6_checksum(&mut icmp, src, dst);
    let mut out = vec![0u8; 40];
    brisk_wire::ipv6::Ipv6Repr {
        src,
        dst,
        next_header: icmp::PROTO_ICMPV6,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
        hop_limit,
        payload_len: icmp.len(),
    }
    .emit(&mut out)
    .unwrap();
    out.extend_from_slice(&icmp);
    out
}

fn echo_reply4(from: Ipv4Addr, id: u16) -> Vec<u8> {
    let mut icmp = vec![icmp::V4_ECHO_REPLY, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&[0, 1]);
    icmp.extend_from_slice(b"abcdefgh");
    icmp::fill_icmpv4_checksum(&mut icmp);
    let mut out = vec![0u8; 20];
    brisk_wire::ipv4::Ipv4Repr {
        src: from,
        dst: POOL,
        protocol: icmp::PROTO_ICMP,
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: 64,
        ident: 0,
        payload_len: icmp.len(),
    }
    .emit(&mut out)
    .unwrap();
    out.extend_from_slice(&icmp);
    out
}

#[test]
fn icmp_echo_sessions_map_identifiers_and_expire_after_60_s() {
    let mut nat = nat();
    // Identifier 7 is outside the port range, so the NAT picks one.
    let out = nat
        .handle_v6(
            secs(0),
            &echo6(host(1), SERVER, icmp::V6_ECHO_REQUEST, 7, 64),
        )
        .unwrap();
    let p = Ipv4Packet::new_checked(&out[..]).unwrap();
    let id = u16::from_be_bytes([p.payload()[4], p.payload()[5]]);
    assert!(config().ports.contains(&id));
    assert!(icmp::verify_icmpv4(p.payload()));
    // An unsolicited reply (another id) is dropped; the real one maps back.
    assert_eq!(
        nat.handle_v4(secs(1), &echo_reply4(SERVER, id ^ 1)),
        Err(Nat64Drop::NoBinding)
    );
    let back = nat.handle_v4(secs(1), &echo_reply4(SERVER, id)).unwrap();
    let p = Ipv6Packet::new_checked(&back[..]).unwrap();
    assert_eq!(
        p.payload()[..6],
        [icmp::V6_ECHO_REPLY, 0, p.payload()[2], p.payload()[3], 0, 7]
    );
    assert!(icmp::verify_icmpv6(p.payload(), p.src(), p.dst()));
    // An echo reply from the IPv6 side opens nothing.
    let stray = echo6(host(2), SERVER, icmp::V6_ECHO_REPLY, 9, 64);
    assert_eq!(nat.handle_v6(secs(1), &stray), Err(Nat64Drop::NoSession));
    assert_eq!(nat.poll_timeout(), Some(secs(61)));
    nat.handle_timeout(secs(61));
    assert_eq!(nat.stats().sessions, 0);
}

#[test]
fn a_flood_from_one_host_fills_only_its_quota() {
    let mut nat = Nat64::new(Nat64Config {
        max_sessions: 100,
        max_sessions_per_host: 10,
        ..config()
    })
    .unwrap();
    for port in 0..50 {
        let _ = nat.handle_v6(secs(0), &udp_out(host(1), 10_000 + port, SERVER, 53));
    }
    let st = nat.stats();
    assert_eq!((st.sessions, st.drops.host_limit), (10, 40));
    // Other hosts still get in, until the table is full.
    for h in 2..=20 {
        for port in 0..10 {
            let _ = nat.handle_v6(secs(0), &udp_out(host(h), 10_000 + port, SERVER, 53));
        }
    }
    let st = nat.stats();
    assert_eq!((st.sessions, st.drops.table_full), (100, 100));
    assert!(st.bindings <= st.sessions);
    // Expiry gives the room back.
    nat.handle_timeout(secs(300));
    assert_eq!(nat.stats().sessions, 0);
    assert!(
        nat.handle_v6(secs(301), &udp_out(host(1), 1234, SERVER, 53))
            .is_ok()
    );
}

#[test]
fn pool_exhaustion_is_refused_not_panicked() {
    let mut nat = Nat64::new(Nat64Config {
        ports: 2000..=2003,
        ..config()
    })
    .unwrap();
    for h in 1..=4 {
        assert!(
            nat.handle_v6(secs(0), &udp_out(host(h), 5000, SERVER, 53))
                .is_ok()
        );
    }
    let out = nat.handle_v6(secs(0), &udp_out(host(5), 5000, SERVER, 53));
    assert_eq!(out, Err(Nat64Drop::PoolExhausted));
    let ports: BTreeSet<u16> = nat.sessions().map(|s| s.v4.1).collect();
    assert_eq!(ports, (2000..=2003).collect());
}

#[test]
fn expired_hop_limit_sends_time_exceeded_and_creates_nothing() {
    let mut nat = nat();
    let probe = echo6(host(1), SERVER, icmp::V6_ECHO_REQUEST, 7, 1);
    assert_eq!(
        nat.handle_v6(secs(0), &probe),
        Err(Nat64Drop::Translate(TranslateError::HopLimitExceeded))
    );
    assert_eq!(nat.stats().sessions, 0);
    let t = nat.poll_transmit().unwrap();
    assert_eq!(t.side, Side::V6);
    let p = Ipv6Packet::new_checked(&t.datagram[..]).unwrap();
    assert_eq!((p.src(), p.dst()), (syn6(POOL), host(1)));
    assert_eq!(p.payload()[0], icmp::V6_TIME_EXCEEDED);
    assert!(icmp::verify_icmpv6(p.payload(), p.src(), p.dst()));
    assert_eq!(&p.payload()[8..], &probe[..]);
    assert_eq!(nat.poll_transmit(), None);
}

#[test]
fn icmp_errors_are_rate_limited() {
    let mut nat = Nat64::new(Nat64Config {
        icmp_errors_per_s: 10,
        ..config()
    })
    .unwrap();
    let probe = echo6(host(1), SERVER, icmp::V6_ECHO_REQUEST, 7, 1);
    for _ in 0..50 {
        let _ = nat.handle_v6(secs(0), &probe);
    }
    assert_eq!(
        (
            nat.stats().icmp_errors_sent,
            nat.stats().icmp_errors_suppressed
        ),
        (10, 40)
    );
    // Half a second refills five.
    for _ in 0..50 {
        let _ = nat.handle_v6(Instant::from_millis(500), &probe);
    }
    assert_eq!(nat.stats().icmp_errors_sent, 15);
}

#[test]
fn ipv4_df_too_big_sends_fragmentation_needed() {
    let mut nat = nat();
    nat.handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    let big = udp_datagram(sa(SERVER, 53), sa(POOL, 5000), Ecn::NotEct, &[7u8; 1472]).unwrap();
    assert_eq!(
        nat.handle_v4(secs(1), &big),
        Err(Nat64Drop::Translate(TranslateError::FragmentationNeeded {
            mtu: 1480
        }))
    );
    let t = nat.poll_transmit().unwrap();
    assert_eq!(t.side, Side::V4);
    let p = Ipv4Packet::new_checked(&t.datagram[..]).unwrap();
    assert_eq!((p.src(), p.dst()), (POOL, SERVER));
    let icmp = p.payload();
    assert_eq!(
        (icmp[0], icmp[1], u16::from_be_bytes([icmp[6], icmp[7]])),
        (3, 4, 1480)
    );

    // Without DF it arrives as IPv6 fragments: one returned, one queued.
    let mut big = big;
    let mut p = Ipv4Packet::new_checked(&mut big[..]).unwrap();
    p.set_dont_frag(false);
    p.fill_checksum();
    let first = nat.handle_v4(secs(1), &big).unwrap();
    let rest = nat.poll_transmit().unwrap();
    assert_eq!(rest.side, Side::V6);
    assert_eq!(first.len() + rest.datagram.len(), 1472 + 8 + 2 * (40 + 8));
    assert_eq!(nat.stats().fragments_sent, 1);
}

#[test]
fn icmpv4_error_about_a_session_reaches_the_ipv6_host() {
    let mut nat = nat();
    let sent = nat
        .handle_v6(secs(0), &udp_out(host(1), 5000, SERVER, 53))
        .unwrap();
    let router = Ipv4Addr::new(203, 0, 113, 1);
    let error = icmp::v4_error(router, POOL, 3, 3, [0; 4], &sent);
    let v6 = nat.handle_v4(secs(1), &error).unwrap();
    let p = Ipv6Packet::new_checked(&v6[..]).unwrap();
    assert_eq!((p.src(), p.dst()), (syn6(router), host(1)));
    assert_eq!(&p.payload()[..2], &[icmp::V6_DEST_UNREACHABLE, 4]);
    let (src, dst, ..) = parse_udp(&p.payload()[8..]).unwrap();
    assert_eq!((src, dst), (sa(host(1), 5000), sa(syn6(SERVER), 53)));
    // Errors neither create nor refresh sessions.
    assert_eq!(nat.poll_timeout(), Some(secs(300)));
    // An error quoting a flow the NAT never saw is dropped.
    let forged = udp_datagram(sa(POOL, 6000), sa(SERVER, 53), Ecn::NotEct, b"?").unwrap();
    let error = icmp::v4_error(router, POOL, 3, 3, [0; 4], &forged);
    assert_eq!(nat.handle_v4(secs(1), &error), Err(Nat64Drop::NoSession));
}

#[test]
fn hairpinning_loops_back_to_ipv6() {
    let mut nat = nat();
    // Host 2 is reachable at POOL:6000 after talking to anyone.
    nat.handle_v6(secs(0), &udp_out(host(2), 6000, SERVER, 53))
        .unwrap();
    // Host 1 writes to the synthesized address of POOL:6000.
    let to_pool = udp_out(host(1), 5000, POOL, 6000);
    assert_eq!(nat.handle_v6(secs(1), &to_pool), Err(Nat64Drop::Hairpinned));
    let t = nat.poll_transmit().unwrap();
    assert_eq!(t.side, Side::V6);
    let (src, dst, _, payload) = parse_udp(&t.datagram).unwrap();
    assert_eq!(
        (src, dst, payload),
        (sa(syn6(POOL), 5000), sa(host(2), 6000), &b"query"[..])
    );
    assert_eq!((nat.stats().hairpinned, nat.stats().drops.total()), (1, 0));

    let mut off = Nat64::new(Nat64Config {
        hairpinning: false,
        ..config()
    })
    .unwrap();
    assert_eq!(
        off.handle_v6(secs(1), &to_pool),
        Err(Nat64Drop::HairpinDisabled)
    );
}

#[test]
fn addresses_outside_the_nat_are_refused() {
    let mut nat = nat();
    let off_prefix = udp_datagram(sa(host(1), 1), sa(host(2), 2), Ecn::NotEct, b"").unwrap();
    assert_eq!(
        nat.handle_v6(secs(0), &off_prefix),
        Err(Nat64Drop::NotForPrefix)
    );
    let spoofed = udp_datagram(sa(syn6(OTHER), 1), sa(syn6(SERVER), 2), Ecn::NotEct, b"").unwrap();
    assert_eq!(nat.handle_v6(secs(0), &spoofed), Err(Nat64Drop::BadSource));
    let broadcast = udp_out(host(1), 1, Ipv4Addr::BROADCAST, 2);
    assert_eq!(
        nat.handle_v6(secs(0), &broadcast),
        Err(Nat64Drop::BadDestination)
    );
    let elsewhere = udp_datagram(sa(SERVER, 1), sa(OTHER, 2), Ecn::NotEct, b"").unwrap();
    assert_eq!(
        nat.handle_v4(secs(0), &elsewhere),
        Err(Nat64Drop::NotForPool)
    );
    assert_eq!(
        nat.handle_v4(secs(0), &[0x45, 0, 0]),
        Err(Nat64Drop::Translate(TranslateError::Malformed(
            brisk_wire::WireError::Truncated { need: 20, have: 3 }
        )))
    );
    let st = nat.stats();
    assert_eq!(
        (
            st.drops.not_for_prefix,
            st.drops.bad_address,
            st.drops.not_for_pool,
            st.drops.malformed
        ),
        (1, 2, 1, 1)
    );
}

#[test]
fn bad_configs_are_refused() {
    let bad = |c: Nat64Config| Nat64::new(c).err();
    assert_eq!(
        bad(Nat64Config {
            pool: vec![],
            ..config()
        }),
        Some(ConfigError::EmptyPool)
    );
    #[allow(clippy::reversed_empty_ranges)]
    let empty = 10..=9;
    assert_eq!(
        bad(Nat64Config {
            ports: empty,
            ..config()
        }),
        Some(ConfigError::EmptyPortRange)
    );
    assert_eq!(
        bad(Nat64Config {
            max_sessions: 0,
            ..config()
        }),
        Some(ConfigError::ZeroLimit)
    );
    let translate = TranslateConfig {
        ipv6_mtu: 1000,
        ..TranslateConfig::default()
    };
    assert_eq!(
        bad(Nat64Config {
            translate,
            ..config()
        }),
        Some(ConfigError::MtuTooSmall)
    );
}

#[test]
fn same_inputs_same_outputs() {
    let run = || {
        let mut nat = nat();
        let mut outs = Vec::new();
        for h in 1..=5 {
            for p in [5000, 5000, 6000] {
                outs.push(nat.handle_v6(secs(u64::from(h)), &udp_out(host(h), p, SERVER, 53)));
            }
        }
        (outs, nat.stats())
    };
    assert_eq!(run(), run());
}
