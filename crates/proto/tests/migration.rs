//! Address changes (docs/PROTOCOL.md §7.4) over IPv4 and IPv6: a NAT
//! rebinding, a client moving to another network, a spoofed copy of a
//! packet, and ten moves in one transfer with the stall of each measured.

mod util;

use brisk_proto::packet::LOCAL_CID_LEN;
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;
use util::*;

const MB: usize = 1 << 20;

/// 20 Mbit/s, 10 ms each way, a 100 KB queue.
fn path(family: Family, seed: u64) -> PairConfig {
    let mut cfg = PairConfig::new(family, seed).link(|l| {
        l.rate_bps = Some(20_000_000);
        l.queue_bytes = 100_000;
    });
    cfg.client.transport.migration = true;
    cfg.server.transport.migration = true;
    cfg
}

/// The client's address on its `n`th network.
fn network(family: Family, n: u16) -> SocketAddr {
    let ip = match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1 + n as u8)),
        Family::V6 => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, n, 0, 0, 0, 1)),
    };
    SocketAddr::new(ip, 40_000 + n)
}

/// The destination connection IDs of short-header datagrams in `dir`
/// sent in `[from, to)`.
fn dcids(p: &Pair, dir: Dir, from: Instant, to: Instant) -> BTreeSet<Vec<u8>> {
    p.history
        .iter()
        .filter(|(d, at, b)| *d == dir && *at >= from && *at < to && b[0] & 0x80 == 0)
        .map(|(_, _, b)| b[1..1 + LOCAL_CID_LEN].to_vec())
        .collect()
}

#[test]
fn nat_rebinding_is_validated_and_keeps_congestion_state() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 40));
        p.record = true;
        let mut bulk = Bulk::new(payload(2 * MB, 40));
        p.run_until(Instant::from_millis(300), |p| bulk.pump(p));
        assert!(!bulk.fin);
        let moved_at = p.now;
        let srtt_before = p.server_conn().unwrap().stats().smoothed_rtt;
        p.client_addr.set_port(50_123);
        assert!(p.run_until(Instant::from_millis(30_000), |p| bulk.pump(p)));
        assert_eq!(sha256(&bulk.received), sha256(&bulk.data));
        let s = p.server_conn().unwrap();
        let st = s.stats();
        eprintln!(
            "{family:?} rebinding: migrations {} validated {} failed {} srtt {:?} -> {:?}",
            st.migrations,
            st.paths_validated,
            st.path_validations_failed,
            srtt_before,
            st.smoothed_rtt
        );
        assert_eq!(s.remote_address().port(), 50_123, "{family:?}");
        assert_eq!(st.migrations, 1);
        assert_eq!(st.paths_validated, 1, "the new port answered the challenge");
        assert_eq!(st.path_validations_failed, 0);
        assert!(!s.path_validating());
        // Same network: the RTT estimate was kept, not started over from
        // the 333 ms default.
        assert!(st.smoothed_rtt < Duration::from_millis(150), "{st:?}");
        // The server addresses the client by an ID it never used before.
        let before = dcids(&p, Dir::ToClient, Instant::ZERO, moved_at);
        let after = dcids(
            &p,
            Dir::ToClient,
            moved_at + Duration::from_millis(100),
            p.now,
        );
        assert!(
            !after.is_empty() && before.is_disjoint(&after),
            "{family:?}"
        );
    }
}

#[test]
fn a_client_moving_to_another_network_is_not_linkable_by_id() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 41));
        p.record = true;
        let mut bulk = Bulk::new(payload(3 * MB, 41));
        p.run_until(Instant::from_millis(400), |p| bulk.pump(p));
        assert!(!bulk.fin);
        let spares = p.client_conn().spare_peer_cids();
        assert!(spares >= 1, "the server issued spare IDs: {spares}");
        let cwnd_before = p.client_conn().stats().cwnd_bytes;
        let moved_at = p.now;
        let now = p.now;
        assert!(p.client_conn().migrate(now));
        p.client_addr = network(family, 1);
        // A new network: the controller starts over from its initial window.
        let c = p.client_conn().stats();
        assert!(
            c.cwnd_bytes < cwnd_before,
            "{cwnd_before} -> {}",
            c.cwnd_bytes
        );
        assert!(p.run_until(Instant::from_millis(30_000), |p| bulk.pump(p)));
        assert_eq!(sha256(&bulk.received), sha256(&bulk.data));
        let c = p.client_conn().stats();
        let s = p.server_conn().unwrap();
        let st = s.stats();
        eprintln!(
            "{family:?} new network: client validated {} server validated {} migrations {}",
            c.paths_validated, st.paths_validated, st.migrations
        );
        assert_eq!(s.remote_address(), network(family, 1));
        assert_eq!((c.paths_validated, st.paths_validated), (1, 1));
        // No ID seen on the old network appears on the new one, either way.
        let settle = moved_at + Duration::from_millis(100);
        for dir in [Dir::ToServer, Dir::ToClient] {
            let before = dcids(&p, dir, Instant::ZERO, moved_at);
            let after = dcids(&p, dir, settle, p.now);
            assert!(!after.is_empty(), "{family:?} {dir:?}");
            assert!(before.is_disjoint(&after), "{family:?} {dir:?} linkable");
        }
    }
}

#[test]
fn a_spoofed_copy_cannot_redirect_the_connection() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 42));
        let mut bulk = Bulk::new(payload(2 * MB, 42));
        p.run_until(Instant::from_millis(300), |p| bulk.pump(p));
        // An attacker on the path takes the client's next datagram and
        // races it to the server from another address (a victim's).
        let taken = std::rc::Rc::new(std::cell::RefCell::new(None));
        let t = taken.clone();
        p.tap = Some(Box::new(move |dir, data: &mut Vec<u8>| {
            if dir == Dir::ToServer && data[0] & 0x80 == 0 && t.borrow().is_none() {
                *t.borrow_mut() = Some(data.clone());
                return false;
            }
            true
        }));
        while taken.borrow().is_none() {
            assert!(p.step());
            bulk.pump(&mut p);
        }
        p.tap = None;
        let copy = taken.borrow_mut().take().unwrap();
        let victim = network(family, 9);
        p.server.handle_datagram(p.now, victim, Ecn::NotEct, &copy);
        assert_eq!(p.server_conn().unwrap().remote_address(), victim);
        assert!(p.run_until(Instant::from_millis(30_000), |p| bulk.pump(p)));
        assert_eq!(sha256(&bulk.received), sha256(&bulk.data));
        let to_victim: usize = p
            .stray
            .iter()
            .filter(|(a, _)| *a == victim)
            .map(|(_, n)| n)
            .sum();
        let client_addr = p.client_addr;
        let s = p.server_conn().unwrap();
        let st = s.stats();
        eprintln!(
            "{family:?} spoof: {} bytes in; {to_victim} bytes to the victim; migrations {} failed {}",
            copy.len(),
            st.migrations,
            st.path_validations_failed
        );
        assert_eq!(s.remote_address(), client_addr, "back on the real path");
        assert!(to_victim <= 3 * copy.len(), "amplification: {to_victim}");
        assert!(to_victim > 0, "the challenge went to the new address");
        assert_eq!(st.paths_validated, 0);
        assert_eq!(st.path_validations_failed, 1);
    }
}

#[test]
fn an_unanswered_challenge_returns_to_the_old_path() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 43));
        assert!(p.connect());
        let mut bulk = Bulk::new(payload(200_000, 43));
        assert!(p.run_until(Instant::from_millis(5_000), |p| bulk.pump(p)));
        p.run_until(p.now + Duration::from_millis(200), |_| false);
        // A copy of the client's last datagram, but with a fresh packet
        // number, cannot be forged; a replay of an old one is a duplicate
        // and moves nothing.
        p.record = true;
        p.client_conn().ping();
        p.flush();
        let (_, _, last) = p
            .history
            .iter()
            .rev()
            .find(|(d, _, _)| *d == Dir::ToServer)
            .cloned()
            .unwrap();
        let victim = network(family, 9);
        p.server.handle_datagram(p.now, victim, Ecn::NotEct, &last);
        assert_eq!(p.server_conn().unwrap().remote_address(), victim);
        // The client stays silent; the server gives up after 3 PTOs.
        p.run_until(p.now + Duration::from_secs(3), |_| false);
        let client_addr = p.client_addr;
        let s = p.server_conn().unwrap();
        assert_eq!(s.remote_address(), client_addr, "{family:?}");
        assert_eq!(s.stats().path_validations_failed, 1);
        assert!(!s.path_validating());
    }
}

/// Ten moves in one transfer, every 400 ms: odd ones NAT rebindings
/// (a new port), even ones a new network (a new address, `migrate`).
/// Prints the longest gap in delivered bytes around each move against
/// one RTT plus one probe timeout.
#[test]
fn ten_moves_lose_nothing_and_stall_at_most_an_rtt_and_a_pto() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 44));
        let mut bulk = Bulk::new(payload(16 * MB, 44));
        let mut growth: Vec<Instant> = Vec::new();
        let mut seen = 0;
        let mut moves: Vec<(Instant, Duration)> = Vec::new();
        let mut step = |p: &mut Pair, bulk: &mut Bulk, until: Instant| {
            p.run_until(until, |p| {
                let done = bulk.pump(p);
                if bulk.received.len() > seen {
                    seen = bulk.received.len();
                    growth.push(p.now);
                }
                done
            })
        };
        step(&mut p, &mut bulk, Instant::from_millis(600));
        for n in 1..=10u16 {
            let now = p.now;
            let c = p.client_conn();
            let st = c.stats();
            let pto = st.smoothed_rtt
                + (4 * st.rttvar).max(Duration::from_millis(1))
                + Duration::from_millis(25);
            let bound = st.smoothed_rtt + pto;
            if n % 2 == 0 {
                assert!(c.migrate(now));
                p.client_addr = network(family, n);
            } else {
                p.client_addr.set_port(41_000 + n);
            }
            moves.push((p.now, bound));
            assert!(!step(&mut p, &mut bulk, now + Duration::from_millis(400)));
        }
        assert!(step(&mut p, &mut bulk, Instant::from_millis(60_000)));
        assert_eq!(sha256(&bulk.received), sha256(&bulk.data), "{family:?}");
        let mut stalls = Vec::new();
        for (i, &(at, bound)) in moves.iter().enumerate() {
            let gap = growth
                .windows(2)
                .filter(|w| w[1] >= at && w[0] <= at + Duration::from_millis(300))
                .map(|w| w[1] - w[0])
                .max()
                .unwrap_or_default();
            eprintln!(
                "{family:?} move {} ({}): longest gap in delivery {:.1} ms, bound (1 RTT + 1 PTO) {:.1} ms",
                i + 1,
                if i % 2 == 0 {
                    "NAT rebinding"
                } else {
                    "new network"
                },
                gap.as_secs_f64() * 1e3,
                bound.as_secs_f64() * 1e3
            );
            assert!(
                gap <= bound,
                "{family:?} move {}: {gap:?} > {bound:?}",
                i + 1
            );
            stalls.push(gap);
        }
        stalls.sort();
        let st = p.server_conn().unwrap().stats();
        eprintln!(
            "{family:?} ten moves: stall max {:.1} ms p50 {:.1} ms; server migrations {} validated {} failed {}",
            stalls[9].as_secs_f64() * 1e3,
            stalls[4].as_secs_f64() * 1e3,
            st.migrations,
            st.paths_validated,
            st.path_validations_failed
        );
        assert_eq!(st.migrations, 10);
        assert_eq!(st.paths_validated, 10);
    }
}

/// The UDP payload a 1500-byte interface allows, and the one a 1400-byte
/// IP hop lets through.
fn payloads(family: Family) -> (u64, u64) {
    match family {
        Family::V4 => (1500 - 28, 1400 - 28),
        Family::V6 => (1500 - 48, 1400 - 48),
    }
}

/// Moves 8 MB while, at 1 s, the client-to-server hop starts forwarding
/// at most 1400-byte IP packets (no ICMP) and the client either moves to
/// another network (`new_network`) or has its port rebound. Returns the
/// client's path MTU statistics just after the move and at the end, and
/// the longest wait for delivered bytes in the second after the move.
fn move_onto_a_1400_byte_hop(
    family: Family,
    new_network: bool,
    size_checks: bool,
) -> (brisk_proto::PmtuStats, brisk_proto::PmtuStats, Duration) {
    let (interface, _) = payloads(family);
    let mut cfg = path(family, 46);
    for t in [&mut cfg.client.transport, &mut cfg.server.transport] {
        t.max_datagram_size = interface;
        t.pmtud = true;
        t.pmtu_size_checks = size_checks;
    }
    let move_at = Instant::from_millis(1_000);
    cfg.to_server.mtu = Some(1500);
    cfg.to_server.mtu_change = Some((move_at, 1400));
    let mut p = Pair::new(cfg);
    let mut bulk = Bulk::new(payload(8 * MB, 46));
    let mut growth: Vec<Instant> = Vec::new();
    let mut seen = 0;
    let mut step = |p: &mut Pair, bulk: &mut Bulk, until: Instant| {
        p.run_until(until, |p| {
            let done = bulk.pump(p);
            if bulk.received.len() > seen {
                seen = bulk.received.len();
                growth.push(p.now);
            }
            done
        })
    };
    assert!(!step(&mut p, &mut bulk, move_at));
    assert_eq!(p.client_conn().stats().pmtu.current_bytes, interface);
    let now = p.now;
    if new_network {
        assert!(p.client_conn().migrate(now));
        p.client_addr = network(family, 1);
    } else {
        p.client_addr.set_port(41_001);
    }
    let just_after = p.client_conn().stats().pmtu;
    assert!(step(&mut p, &mut bulk, Instant::from_millis(30_000)));
    assert_eq!(sha256(&bulk.received), sha256(&bulk.data), "{family:?}");
    let stall = growth
        .windows(2)
        .filter(|w| w[1] >= now && w[0] <= now + Duration::from_secs(1))
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    (just_after, p.client_conn().stats().pmtu, stall)
}

/// A move to another network starts path MTU discovery over from 1200
/// bytes, so the new network's smaller hop is found by probes, within
/// five, instead of by the black-hole detection the old size would need.
/// The baseline is the same hop behind a port-only NAT rebinding, which
/// keeps the size (the same network, as far as the client can tell), with
/// black holes found without size checks (after a probe timeout); with
/// them, the rebinding's black hole costs about one RTT, less than the
/// new network's path validation.
#[test]
fn a_new_network_searches_the_path_mtu_again_from_1200_bytes() {
    for family in FAMILIES {
        let (interface, fits) = payloads(family);
        let (after, end, stall) = move_onto_a_1400_byte_hop(family, true, true);
        let (kept, kept_end, kept_stall) = move_onto_a_1400_byte_hop(family, false, false);
        let (_, checked_end, checked_stall) = move_onto_a_1400_byte_hop(family, false, true);
        eprintln!(
            "{family:?} port rebinding with size checks: black holes {}, longest wait {:.1} ms",
            checked_end.black_holes,
            checked_stall.as_secs_f64() * 1e3
        );
        assert_eq!(checked_end.black_holes, 1, "{checked_end:?}");
        assert!(
            checked_stall < kept_stall,
            "{checked_stall:?} vs {kept_stall:?}"
        );
        eprintln!(
            "{family:?} 1400-byte hop after the move: new network {} bytes right after, {} found with {} probes, black holes {}, longest wait {:.1} ms; port rebinding without size checks (baseline) {} bytes right after, {} at the end, black holes {}, longest wait {:.1} ms",
            after.current_bytes,
            end.current_bytes,
            end.probes_sent - after.probes_sent,
            end.black_holes,
            stall.as_secs_f64() * 1e3,
            kept.current_bytes,
            kept_end.current_bytes,
            kept_end.black_holes,
            kept_stall.as_secs_f64() * 1e3,
        );
        assert_eq!(after.current_bytes, 1200, "{family:?}");
        assert_eq!(after.new_path_restarts, 1);
        assert!(end.probes_sent - after.probes_sent <= 5, "{end:?}");
        assert!(
            end.current_bytes <= fits && fits - end.current_bytes <= 20,
            "{family:?} {end:?}"
        );
        assert_eq!(end.black_holes, 0, "found by probing, not by losses");
        // The baseline keeps the old size and finds the hop by losses.
        assert_eq!(kept.current_bytes, interface);
        assert_eq!(kept.new_path_restarts, 0);
        assert_eq!(kept_end.black_holes, 1, "{kept_end:?}");
        assert!(stall < kept_stall, "{stall:?} vs {kept_stall:?}");
    }
}
