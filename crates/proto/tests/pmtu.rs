//! Path MTU discovery over a simulated hop with a smaller MTU, IPv4 and
//! IPv6: the size found and the probes it took, a transfer over a
//! 1400-byte hop (which fails outright without discovery), and an MTU drop
//! in the middle of a transfer with and without ICMP Packet Too Big.

mod util;

use brisk_time::Instant;
use std::time::Duration;
use util::*;

const KB: usize = 1 << 10;

/// The UDP payload a 1500-byte interface allows: what brisk-io announces.
fn interface_payload(family: Family) -> u64 {
    match family {
        Family::V4 => 1500 - 28,
        Family::V6 => 1500 - 48,
    }
}

/// The UDP payload an IP MTU leaves.
fn payload_within(family: Family, mtu: u32) -> u64 {
    u64::from(mtu)
        - match family {
            Family::V4 => 28,
            Family::V6 => 48,
        }
}

/// 10 Mbit/s, 10 ms each way, a 60 KB queue; both sides may send
/// 1500-byte IP packets, discovery `pmtud`; the client-to-server hop
/// forwards at most `mtu` bytes.
fn path(family: Family, seed: u64, pmtud: bool, mtu: u32, icmp: bool) -> PairConfig {
    let mut cfg = PairConfig::new(family, seed).link(|l| {
        l.rate_bps = Some(10_000_000);
        l.queue_bytes = 60_000;
    });
    for t in [&mut cfg.client.transport, &mut cfg.server.transport] {
        t.max_datagram_size = interface_payload(family);
        t.pmtud = pmtud;
    }
    cfg.to_server.mtu = Some(mtu);
    cfg.to_server.mtu_icmp = icmp;
    cfg
}

/// Moves `len` bytes client to server; returns the pair, whether all
/// arrived intact by `deadline`, and (time, bytes received) at each step
/// the server's in-order bytes grew.
fn transfer(cfg: PairConfig, len: usize, deadline: Instant) -> (Pair, bool, Vec<(Instant, usize)>) {
    let seed = cfg.seed;
    let mut p = Pair::new(cfg);
    let mut bulk = Bulk::new(payload(len, seed));
    let mut progress = Vec::new();
    let done = p.run_until(deadline, |p| {
        let done = bulk.pump(p);
        let n = bulk.received.len();
        if progress.last().is_none_or(|&(_, m)| m < n) {
            progress.push((p.now, n));
        }
        done
    });
    let intact = done && sha256(&bulk.received) == sha256(&bulk.data);
    (p, intact, progress)
}

/// The longest wait for new in-order bytes at the receiver among the
/// waits that end within `[from, to)`.
fn longest_wait(progress: &[(Instant, usize)], from: Instant, to: Instant) -> Duration {
    progress
        .windows(2)
        .filter(|w| w[1].0 >= from && w[1].0 < to)
        .map(|w| w[1].0 - w[0].0)
        .max()
        .unwrap_or_default()
}

#[test]
fn a_1400_byte_hop_fails_without_discovery_and_is_found_within_five_probes_with_it() {
    for family in FAMILIES {
        for icmp in [false, true] {
            // Without discovery the first flight is too large for the hop.
            let (p, intact, _) = transfer(
                path(family, 1, false, 1400, icmp),
                256 * KB,
                Instant::from_millis(5_000),
            );
            assert!(
                !intact && !p.client_connected(),
                "{family:?}: a 1452-byte flight got through"
            );
            let (p, intact, _) = transfer(
                path(family, 1, true, 1400, icmp),
                2048 * KB,
                Instant::from_millis(10_000),
            );
            assert!(
                intact,
                "{family:?} icmp {icmp}: transfer failed by {:?}",
                p.now
            );
            let c = p.client.connection(p.client_conn).unwrap().stats();
            let fits = payload_within(family, 1400);
            println!(
                "{family:?} 1400-byte hop, icmp {icmp}: {} B found (fits {fits}) in {} probes \
                 ({} lost), done at {:?}; lost data packets {}, congestion events {}",
                c.pmtu.current_bytes,
                c.pmtu.probes_sent,
                c.pmtu.probes_lost,
                p.now,
                c.packets_lost,
                c.congestion_events
            );
            assert!(c.pmtu.probes_sent <= 5, "{family:?}: {:?}", c.pmtu);
            // Within a sixteenth of the range searched (272 bytes over
            // IPv4, 252 over IPv6).
            let precision = (interface_payload(family) - 1200).div_ceil(16);
            assert!(
                c.pmtu.current_bytes <= fits && fits - c.pmtu.current_bytes <= precision,
                "{family:?} icmp {icmp}: {:?}",
                c.pmtu
            );
            if icmp {
                // Told the size, the search needs the refused probe and one more.
                assert_eq!(c.pmtu.current_bytes, fits, "{:?}", c.pmtu);
                assert_eq!(c.pmtu.probes_sent, 2, "{:?}", c.pmtu);
            }
            // The other direction has no small hop: one probe at the ceiling.
            let s = p.server.connection(p.server_conn.unwrap()).unwrap().stats();
            assert_eq!(
                s.pmtu.current_bytes,
                interface_payload(family),
                "{:?}",
                s.pmtu
            );
            assert_eq!(s.pmtu.probes_sent, 1);
        }
    }
}

#[test]
fn transfers_over_a_1400_byte_hop_never_fail_even_with_loss() {
    for family in FAMILIES {
        for seed in 0..8 {
            let mut cfg = path(family, 100 + seed, true, 1400, seed % 2 == 0);
            cfg.to_server.loss = 0.02;
            cfg.to_client.loss = 0.02;
            let (p, intact, _) = transfer(cfg, 512 * KB, Instant::from_millis(20_000));
            let c = p.client.connection(p.client_conn).unwrap().stats();
            assert!(
                intact,
                "{family:?} seed {seed}: failed by {:?}: {:?}",
                p.now, c.pmtu
            );
            assert!(c.pmtu.current_bytes <= payload_within(family, 1400));
        }
    }
}

/// What a transfer across an MTU drop showed.
struct Drop {
    pair: Pair,
    intact: bool,
    /// The longest wait for new in-order bytes at the receiver in the 2 s
    /// after the drop, and in the 0.5 s before it.
    stall: Duration,
    before: Duration,
    /// The sender's smoothed RTT just before the drop.
    srtt: Duration,
}

/// A transfer (4 MB per 10 Mbit/s) at `rate_bps` across an MTU drop from 1500 to 1280
/// bytes at 1 s, under BBR and a deep queue (no congestion loss, so every
/// wait for new bytes comes from the drop), size checks `checks`.
fn mtu_drop(family: Family, icmp: bool, checks: bool, rate_bps: u64) -> Drop {
    let change = Instant::from_millis(1_000);
    let mut cfg = path(family, 7, true, 1500, icmp).link(|l| {
        l.queue_bytes = 400_000;
        l.rate_bps = Some(rate_bps);
    });
    cfg.client.transport.cc = brisk_proto::congestion::CcAlgorithm::Bbr;
    cfg.client.transport.pmtu_size_checks = checks;
    cfg.to_server.mtu_change = Some((change, 1280));
    let mut pair = Pair::new(cfg);
    // 4 MB per 10 Mbit/s: the transfer outlasts the drop.
    let len = 4096 * KB * (rate_bps / 10_000_000) as usize;
    let mut bulk = Bulk::new(payload(len, 7));
    let mut progress: Vec<(Instant, usize)> = Vec::new();
    let mut step = |p: &mut Pair, until: Instant| {
        p.run_until(until, |p| {
            let done = bulk.pump(p);
            let n = bulk.received.len();
            if progress.last().is_none_or(|&(_, m)| m < n) {
                progress.push((p.now, n));
            }
            done
        })
    };
    assert!(!step(&mut pair, change), "done before the drop");
    let srtt = pair.client_conn().stats().smoothed_rtt;
    let done = step(&mut pair, Instant::from_millis(20_000));
    let intact = done && sha256(&bulk.received) == sha256(&bulk.data);
    let stall = longest_wait(&progress, change, change + Duration::from_millis(2_000));
    let before = longest_wait(&progress, change - Duration::from_millis(500), change);
    Drop {
        pair,
        intact,
        stall,
        before,
        srtt,
    }
}

#[test]
fn an_mtu_drop_mid_transfer_is_survived() {
    for family in FAMILIES {
        let cases = [
            (true, true, 10_000_000),
            (false, false, 10_000_000),
            (false, true, 10_000_000),
            (false, false, 50_000_000),
            (false, true, 50_000_000),
        ];
        for (icmp, checks, rate_bps) in cases {
            let Drop {
                pair: mut p,
                intact,
                stall,
                before,
                srtt,
            } = mtu_drop(family, icmp, checks, rate_bps);
            let c = p.client_conn().stats();
            assert!(
                intact,
                "{family:?} icmp {icmp}: failed by {:?}: {:?}",
                p.now, c.pmtu
            );
            let rtt = c.min_rtt;
            println!(
                "{family:?} {} Mbit/s, MTU 1500 -> 1280 at 1 s, icmp {icmp}, size checks {checks}: longest \
                 wait for new bytes after it {:.1} ms (before it {:.1} ms), min RTT {:.1} ms, \
                 smoothed RTT at the drop {:.1} ms; now {} B after {} probes, {} black holes, {} \
                 Packet Too Big taken, {} size checks sent of {} packets; done at {:?}",
                rate_bps / 1_000_000,
                stall.as_secs_f64() * 1e3,
                before.as_secs_f64() * 1e3,
                rtt.as_secs_f64() * 1e3,
                srtt.as_secs_f64() * 1e3,
                c.pmtu.current_bytes,
                c.pmtu.probes_sent,
                c.pmtu.black_holes,
                c.pmtu.too_big_accepted,
                c.pmtu.size_checks_sent,
                c.packets_sent,
                p.now
            );
            assert!(
                c.pmtu.current_bytes <= payload_within(family, 1280),
                "{:?}",
                c.pmtu
            );
            if icmp {
                assert_eq!(c.pmtu.too_big_accepted, 1, "{:?}", c.pmtu);
                assert!(stall <= rtt, "{family:?}: stalled {stall:?}, RTT {rtt:?}");
            } else {
                assert_eq!(c.pmtu.black_holes, 1, "{:?}", c.pmtu);
                assert_eq!(c.pmtu.black_holes_refuted, 0, "{:?}", c.pmtu);
                // Found again within five probes after the drop (one
                // before it, at the start).
                assert!(c.pmtu.probes_sent <= 6, "{:?}", c.pmtu);
            }
            if !icmp && checks {
                // One RTT as packets saw it at the drop, plus the spacing
                // of size checks (the next one leaves after five
                // full-size packets and an eighth of the smoothed RTT) and
                // the check's own time on the link, plus 2 ms for the
                // resent packet's trip through the link.
                let packet = Duration::from_secs_f64(1500.0 * 8.0 / rate_bps as f64);
                let spacing = (srtt / 8).max(5 * packet) + packet;
                let bound = srtt + spacing + Duration::from_millis(2);
                assert!(
                    stall <= bound,
                    "{family:?}: stalled {stall:?}, bound {bound:?} (RTT {srtt:?})"
                );
            }
            if !icmp && !checks {
                // The baseline waits for a probe timeout: several RTTs.
                assert!(stall > 3 * rtt, "{family:?}: stalled {stall:?}");
            }
        }
    }
}

/// Ordinary random loss (1, 3 and 5% each way, iid) on a path whose size
/// never changes: full-size losses happen right before small packets that
/// get through, but not as a run that no later full-size packet follows,
/// so no black hole is declared (a refuted one would cost a round trip at
/// the base size).
#[test]
fn random_loss_never_looks_like_a_black_hole() {
    for family in FAMILIES {
        for (seed, loss) in [(11, 0.01), (12, 0.03), (13, 0.05)] {
            let mut cfg = path(family, seed, true, 1500, false);
            cfg.to_server.loss = loss;
            cfg.to_client.loss = loss;
            let (p, intact, _) = transfer(cfg, 2048 * KB, Instant::from_millis(30_000));
            let c = p.client.connection(p.client_conn).unwrap().stats();
            println!(
                "{family:?} {:.0}% random loss: {} B in use, {} black holes ({} refuted), \
                 {} size checks of {} packets, {} lost, done at {:?}",
                loss * 100.0,
                c.pmtu.current_bytes,
                c.pmtu.black_holes,
                c.pmtu.black_holes_refuted,
                c.pmtu.size_checks_sent,
                c.packets_sent,
                c.packets_lost,
                p.now
            );
            assert!(intact, "{family:?} {loss}: failed by {:?}", p.now);
            assert!(c.pmtu.size_checks_sent > 0, "{:?}", c.pmtu);
            assert_eq!(c.pmtu.black_holes, 0, "{family:?} {loss}: {:?}", c.pmtu);
            assert_eq!(c.pmtu.current_bytes, interface_payload(family));
        }
    }
}
