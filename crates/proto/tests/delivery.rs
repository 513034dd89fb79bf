//! Byte-exact delivery under loss, bursts, reordering, duplication and
//! outages, over IPv4 and IPv6.

mod util;

use brisk_time::Instant;
use std::time::Duration;
use util::*;

const MB: usize = 1 << 20;

fn deadline(s: u64) -> Instant {
    Instant::from_millis(s * 1000)
}

/// 20 Mbit/s bottleneck, 10 ms each way, a 100 KB queue.
fn path(family: Family, seed: u64) -> PairConfig {
    PairConfig::new(family, seed).link(|l| {
        l.rate_bps = Some(20_000_000);
        l.queue_bytes = 100_000;
    })
}

#[test]
fn clean_path_delivers_exactly() {
    for family in FAMILIES {
        let (p, at) = bulk_transfer(path(family, 10), 4 * MB, deadline(30));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        // 4 MiB at 20 Mbit/s is 1.7 s; slow start and the handshake add some.
        assert!(at < Instant::from_millis(4_000), "{family:?}: {at:?}");
        assert!(c.smoothed_rtt >= Duration::from_millis(20), "{c:?}");
        eprintln!("{family:?} clean {at:?} {c:?}");
    }
}

fn lossy(loss: f64, seed: u64) {
    for family in FAMILIES {
        let cfg = path(family, seed).link(|l| l.loss = loss);
        let (p, at) = bulk_transfer(cfg, MB, deadline(120));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        let s = p.server.connection(p.server_conn.unwrap()).unwrap().stats();
        eprintln!(
            "{family:?} loss {loss} {at:?} lost {} retx {} ptos {} spurious {} cwnd {} dup {}",
            c.packets_lost,
            c.stream_bytes_retransmitted,
            c.ptos,
            c.spurious_losses,
            c.cwnd_bytes,
            s.dropped.duplicate
        );
        // Every retransmission is a new packet; losses are detected, not
        // timed out: probes stay a small share.
        assert!(c.packets_lost > 0 && c.stream_bytes_retransmitted > 0);
        assert!(
            c.ptos < c.packets_lost,
            "{family:?}: {} PTOs for {} losses",
            c.ptos,
            c.packets_lost
        );
    }
}

#[test]
fn random_loss_1_percent() {
    lossy(0.01, 11);
}

#[test]
fn random_loss_5_percent() {
    lossy(0.05, 12);
}

#[test]
fn random_loss_20_percent() {
    lossy(0.20, 13);
}

#[test]
fn burst_loss() {
    for family in FAMILIES {
        let mut cfg = path(family, 14);
        cfg.to_server.burst = Some(BurstLoss {
            p_enter: 0.01,
            p_exit: 0.25,
        });
        let (p, at) = bulk_transfer(cfg, 2 * MB, deadline(120));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        eprintln!(
            "{family:?} burst {at:?} lost {} ptos {} pc {}",
            c.packets_lost, c.ptos, c.persistent_congestion_events
        );
        assert!(p.to_server.stats.dropped > 20);
    }
}

#[test]
fn reordering_by_30_packets() {
    for family in FAMILIES {
        // 10 Mbit/s: a 1.2 KB packet every ~1 ms, so a 30 ms hold-back
        // lets about 30 later packets overtake.
        let cfg = PairConfig::new(family, 15).link(|l| {
            l.rate_bps = Some(10_000_000);
            l.queue_bytes = 200_000;
            l.reorder_every = Some(20);
            l.reorder_delay = Duration::from_millis(30);
        });
        let (p, at) = bulk_transfer(cfg, 2 * MB, deadline(120));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        eprintln!(
            "{family:?} reorder {at:?} lost {} spurious {} retx {} cwnd {} ptos {}",
            c.packets_lost, c.spurious_losses, c.stream_bytes_retransmitted, c.cwnd_bytes, c.ptos
        );
    }
}

#[test]
fn chunked_reads_deliver_exactly_under_loss_reordering_and_duplication() {
    for family in FAMILIES {
        // Data kept as slices of its datagrams and data copied around holes
        // both reach a reader that takes odd-sized chunks.
        let cfg = path(family, 17).link(|l| {
            l.loss = 0.03;
            l.duplicate = 0.02;
            l.reorder_every = Some(25);
            l.reorder_delay = Duration::from_millis(5);
        });
        let (p, _) = bulk_transfer_read_by(cfg, MB, deadline(60), Some(1000));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        assert!(c.packets_lost > 0, "{family:?}: the path lost nothing");
    }
}

#[test]
fn duplication_is_filtered() {
    for family in FAMILIES {
        let cfg = path(family, 16).link(|l| l.duplicate = 0.1);
        let (p, _) = bulk_transfer(cfg, MB, deadline(60));
        let s = p.server.connection(p.server_conn.unwrap()).unwrap().stats();
        assert!(p.to_server.stats.duplicated > 50);
        assert!(
            s.dropped.duplicate >= p.to_server.stats.duplicated * 9 / 10,
            "{:?}",
            s.dropped
        );
    }
}

#[test]
fn five_second_outage_is_survived() {
    for family in FAMILIES {
        let outage = (Instant::from_millis(500), Instant::from_millis(5_500));
        let cfg = path(family, 17).link(|l| l.outages = vec![outage]);
        let (p, at) = bulk_transfer(cfg, 4 * MB, deadline(60));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        eprintln!(
            "{family:?} outage {at:?} ptos {} probes {} pc {} lost {}",
            c.ptos, c.probes_sent, c.persistent_congestion_events, c.packets_lost
        );
        assert!(at > outage.1);
        assert!(c.ptos >= 3, "tail-loss probes during the outage");
        assert!(
            !p.client_events
                .iter()
                .any(|e| matches!(e, brisk_proto::Event::ConnectionLost(_)))
        );
    }
}

#[test]
fn nat_rebinding_keeps_the_connection() {
    for family in FAMILIES {
        let mut p = Pair::new(path(family, 18));
        let mut bulk = Bulk::new(payload(2 * MB, 18));
        p.run_until(Instant::from_millis(300), |p| bulk.pump(p));
        assert!(!bulk.fin);
        // The client's NAT picks a new port mid-transfer.
        let old = p.client_addr;
        p.client_addr.set_port(50_123);
        assert!(p.run_until(deadline(30), |p| bulk.pump(p)));
        assert_eq!(sha256(&bulk.received), sha256(&bulk.data));
        let s = p.server_conn().unwrap();
        assert_eq!(s.remote_address().port(), 50_123, "{family:?}");
        assert_ne!(s.remote_address(), old);
        assert_eq!(s.stats().migrations, 1);
    }
}

#[test]
fn runs_are_deterministic_per_seed() {
    for family in FAMILIES {
        let run = |seed| {
            let mut cfg = path(family, seed).link(|l| l.loss = 0.02);
            cfg.to_server.reorder_every = Some(13);
            cfg.to_server.reorder_delay = Duration::from_millis(7);
            let mut p = Pair::new(cfg);
            p.record = true;
            let mut bulk = Bulk::new(payload(300_000, seed));
            assert!(p.run_until(deadline(30), |p| bulk.pump(p)));
            let wire: Vec<u8> = p
                .history
                .iter()
                .flat_map(|(_, t, d)| {
                    t.as_nanos()
                        .to_be_bytes()
                        .into_iter()
                        .chain(d.iter().copied())
                })
                .collect();
            (p.now, sha256(&wire), p.history.len())
        };
        let a = run(19);
        assert_eq!(
            a,
            run(19),
            "{family:?}: same seed, same bytes at the same times"
        );
        assert_ne!(a.1, run(20).1, "another seed, another run");
    }
}

#[test]
fn datagrams_respect_the_peers_max_udp_payload() {
    for family in FAMILIES {
        let mut cfg = path(family, 21);
        cfg.client.transport.max_datagram_size = 1452;
        cfg.server.transport.max_datagram_size = 1300;
        let mut p = Pair::new(cfg);
        p.record = true;
        let mut bulk = Bulk::new(payload(200_000, 21));
        assert!(p.run_until(deadline(10), |p| bulk.pump(p)));
        let sizes = |dir| {
            p.history
                .iter()
                .filter(move |(d, _, _)| *d == dir)
                .map(|(_, _, b)| b.len())
        };
        // The client's Initial fills its own size; after that the server's
        // limit applies.
        assert_eq!(sizes(Dir::ToServer).next(), Some(1452), "{family:?}");
        let max = sizes(Dir::ToServer).skip(1).max().unwrap();
        assert!((1250..=1300).contains(&max), "{family:?}: {max}");
        assert!(sizes(Dir::ToClient).max() <= Some(1300));
    }
}
