//! Datagrams handed over as owned buffers (`handle_datagram_owned`, which
//! decrypts in place) behave exactly like borrowed ones
//! (`handle_datagram`, which copies to decrypt): the same datagrams in give
//! the same datagrams out, the same statistics and the same bytes read,
//! over IPv4 and IPv6; malformed ones are dropped and counted alike.

mod util;

use brisk_proto::ConnectionStats;
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::time::Duration;
use util::*;

/// Everything observable about one run.
#[derive(Debug, PartialEq)]
struct Outcome {
    done_at: Instant,
    history: Vec<(Dir, Instant, Vec<u8>)>,
    client: ConnectionStats,
    server: ConnectionStats,
}

/// A lossy, reordering, duplicating path, so data arrives out of order
/// (copied into the reassembly buffer) as well as in order (kept as
/// slices), and every `coalesce_every`-th short datagram to the server
/// carries the client's first Initial in front of it.
fn run(family: Family, owned: bool, chunk_max: Option<usize>, coalesce_every: u64) -> Outcome {
    let mut cfg = PairConfig::new(family, 40).link(|l| {
        l.rate_bps = Some(50_000_000);
        l.queue_bytes = 60_000;
        l.loss = 0.03;
        l.reorder_every = Some(17);
        l.reorder_delay = Duration::from_millis(3);
        l.duplicate = 0.02;
    });
    cfg.owned = owned;
    let seed = cfg.seed;
    let mut p = Pair::new(cfg);
    p.record = true;
    let mut initial: Option<Vec<u8>> = None;
    let mut shorts = 0u64;
    let coalesced = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let coalesced_in_tap = coalesced.clone();
    p.tap = Some(Box::new(move |dir, d| {
        if dir == Dir::ToServer {
            if d.first().is_some_and(|b| b & 0x80 != 0) {
                initial.get_or_insert_with(|| d.clone());
            } else if let Some(i) = &initial {
                shorts += 1;
                if shorts.is_multiple_of(coalesce_every) {
                    d.splice(0..0, i.iter().copied());
                    coalesced_in_tap.set(coalesced_in_tap.get() + 1);
                }
            }
        }
        true
    }));
    let data = payload(300_000, seed);
    let mut bulk = Bulk::new(data.clone());
    bulk.chunk_max = chunk_max;
    assert!(p.run_until(Instant::from_millis(60_000), |p| bulk.pump(p)));
    assert_eq!(sha256(&bulk.received), sha256(&data), "byte-exact delivery");
    assert!(
        coalesced.get() >= 10,
        "{} coalesced datagrams",
        coalesced.get()
    );
    Outcome {
        done_at: p.now,
        history: std::mem::take(&mut p.history),
        client: p.client_conn().stats(),
        server: p.server_conn().expect("server connection").stats(),
    }
}

#[test]
fn owned_datagrams_give_the_same_run_as_borrowed_ones() {
    for family in FAMILIES {
        for chunk_max in [None, Some(usize::MAX), Some(700)] {
            let borrowed = run(family, false, chunk_max, 9);
            let owned = run(family, true, chunk_max, 9);
            assert!(owned.server.dropped.duplicate > 0, "{:?}", owned.server);
            assert!(owned.server.packets_received > 200);
            assert!(owned.client.packets_lost > 0, "the path lost packets");
            assert_eq!(borrowed.done_at, owned.done_at, "{family:?} {chunk_max:?}");
            assert_eq!(borrowed.client, owned.client, "{family:?} {chunk_max:?}");
            assert_eq!(borrowed.server, owned.server, "{family:?} {chunk_max:?}");
            assert!(
                borrowed.history == owned.history,
                "{family:?} {chunk_max:?}: the datagrams sent differ"
            );
        }
    }
}

/// [`connected_with_traffic`] with owned buffers delivered.
fn connected_owned(family: Family, seed: u64) -> (Pair, Vec<Vec<u8>>) {
    let mut cfg = PairConfig::new(family, seed);
    cfg.owned = true;
    connected_with_traffic(cfg)
}

#[test]
fn malformed_owned_datagrams_are_dropped_and_counted() {
    for family in FAMILIES {
        let (mut p, short) = connected_owned(family, 41);
        let before = p.server_conn().unwrap().stats();
        let ep_before = p.server.stats();
        // Replays.
        for d in &short[..3] {
            p.inject(Dir::ToServer, Ecn::NotEct, d);
        }
        // Bit flips and truncations of a valid packet.
        let orig = short[short.len() - 1].clone();
        let mut flipped = 0;
        for i in (0..orig.len()).step_by(101).skip(1) {
            let mut d = orig.clone();
            d[i] ^= 0x04;
            p.inject(Dir::ToServer, Ecn::NotEct, &d);
            flipped += 1;
        }
        for cut in [20, 40, orig.len() - 1] {
            p.inject(Dir::ToServer, Ecn::NotEct, &orig[..cut]);
            flipped += 1;
        }
        // Too short for a header, empty, and noise.
        p.inject(Dir::ToServer, Ecn::NotEct, &orig[..5]);
        p.inject(Dir::ToServer, Ecn::NotEct, &[]);
        for seed in 0..20 {
            p.inject(Dir::ToServer, Ecn::Ce, &payload(1 + seed * 61, seed as u64));
        }
        let after = p.server_conn().unwrap().stats();
        assert_eq!(after.dropped.duplicate - before.dropped.duplicate, 3);
        assert_eq!(
            after.dropped.unauthenticated - before.dropped.unauthenticated,
            flipped,
            "{family:?}: {:?}",
            after.dropped
        );
        assert_eq!(after.packets_received, before.packets_received);
        assert_eq!(after.stream_bytes_received, before.stream_bytes_received);
        let ep = p.server.stats();
        assert!(ep.malformed > ep_before.malformed, "{ep:?}");
        assert_eq!(p.server.handles().count(), 1);
        // The connection still works.
        let mut bulk = Bulk::new(payload(10_000, 7));
        bulk.stream = p.client_conn().open_stream(false, Default::default()).ok();
        assert!(p.run_until(p.now + Duration::from_secs(5), |p| bulk.pump(p)));
        assert_eq!(bulk.received, bulk.data);
    }
}
