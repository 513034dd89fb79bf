//! Datagrams `poll_transmit` appends after room for lower-layer headers
//! (how the simulator builds whole IP packets in place) are the datagrams
//! it writes into an empty buffer: the same run, byte for byte, handshake
//! to close, over IPv4 and IPv6, and the room is never touched (the pair
//! checks it on every datagram).

mod util;

use brisk_time::Instant;
use std::time::Duration;
use util::*;

/// Every datagram a run sent: which way, when, and its bytes.
type History = Vec<(Dir, Instant, Vec<u8>)>;

/// Everything a run sent, how each side stood when the transfer was done,
/// and when the client closed.
fn run(family: Family, headroom: usize) -> (History, String, Instant) {
    let mut cfg = PairConfig::new(family, 7).link(|l| {
        l.rate_bps = Some(20_000_000);
        l.queue_bytes = 40_000;
        l.loss = 0.02;
        l.reorder_every = Some(23);
        l.reorder_delay = Duration::from_millis(2);
    });
    cfg.headroom = headroom;
    let mut p = Pair::new(cfg);
    p.record = true;
    let data = payload(200_000, 7);
    let mut bulk = Bulk::new(data.clone());
    assert!(p.run_until(Instant::from_millis(30_000), |p| bulk.pump(p)));
    assert_eq!(sha256(&bulk.received), sha256(&data), "byte-exact delivery");
    let ends = format!(
        "{:?} {:?}",
        p.client_conn().stats(),
        p.server_conn().map(|c| c.stats())
    );
    // The close goes out through the same call.
    let now = p.now;
    p.client_conn().close(now, 7, b"done");
    p.run_until(now + Duration::from_secs(1), |_| false);
    (std::mem::take(&mut p.history), ends, now)
}

#[test]
fn appended_datagrams_are_the_datagrams_polled_alone() {
    for family in FAMILIES {
        let (alone, alone_ends, closed_at) = run(family, 0);
        assert!(alone.len() > 200, "{family:?}: {} datagrams", alone.len());
        assert!(
            alone
                .iter()
                .any(|(d, at, _)| *d == Dir::ToServer && *at >= closed_at),
            "{family:?}: no close sent"
        );
        for headroom in [28, 48, 1] {
            let (appended, appended_ends, _) = run(family, headroom);
            assert_eq!(alone.len(), appended.len(), "{family:?} +{headroom}");
            assert!(
                alone == appended,
                "{family:?} +{headroom}: the datagrams sent differ"
            );
            assert_eq!(alone_ends, appended_ends, "{family:?} +{headroom}");
        }
    }
}
