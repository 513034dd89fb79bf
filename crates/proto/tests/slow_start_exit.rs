//! CUBIC and NewReno leave their first slow start when the RTT shows the
//! queue building (HyStart++), not when a deep drop-tail buffer overflows:
//! each path runs the same bulk upload with HyStart++ on and off (off is
//! the default), over IPv4 and IPv6, and compares the packets the queue
//! dropped.

mod util;

use brisk_proto::congestion::CcAlgorithm;
use brisk_time::Instant;
use std::time::Duration;
use util::*;

/// One drop-tail bottleneck, the same both ways.
#[derive(Clone, Copy, Debug)]
struct Path {
    rate_bps: u64,
    rtt_ms: u64,
    queue_packets: u64,
    /// How long the upload runs, in seconds of virtual time.
    secs: u64,
}

/// 1 Mbit/s, 20 ms, a 50-packet FIFO: the live lab's clean loss run.
const SLOW: Path = Path {
    rate_bps: 1_000_000,
    rtt_ms: 20,
    queue_packets: 50,
    secs: 5,
};

/// 10 Mbit/s, 50 ms, a FIFO of two bandwidth-delay products (104 packets).
const DEEP: Path = Path {
    rate_bps: 10_000_000,
    rtt_ms: 50,
    queue_packets: 104,
    secs: 3,
};

/// The largest IPv6 datagram the connection sends (1200 bytes of UDP
/// payload), so the queue holds that many full packets in either family.
const PACKET_BYTES: u64 = 1248;

/// What one upload did.
#[derive(Debug)]
struct Outcome {
    /// Packets the bottleneck queue dropped.
    dropped: u64,
    /// Bytes the server read, in the run's time.
    received: usize,
}

fn upload(family: Family, path: Path, cc: CcAlgorithm, hystart: bool) -> Outcome {
    let mut cfg = PairConfig::new(family, 71).link(|l| {
        l.delay = Duration::from_millis(path.rtt_ms / 2);
        l.rate_bps = Some(path.rate_bps);
        l.queue_bytes = path.queue_packets * PACKET_BYTES;
    });
    cfg.client.transport.cc = cc;
    cfg.client.transport.cc_config.hystart = hystart;
    let mut p = Pair::new(cfg);
    // More than the link can carry in the run.
    let bytes = (path.rate_bps / 8 * path.secs * 2) as usize;
    let mut bulk = Bulk::new(payload(bytes, 71));
    let done = p.run_until(Instant::from_millis(path.secs * 1000), |p| bulk.pump(p));
    assert!(
        !done,
        "{family:?} {path:?}: the upload should still be running"
    );
    Outcome {
        dropped: p.to_server.stats.dropped,
        received: bulk.received.len(),
    }
}

/// Without HyStart++ the first slow start overflows the queue (tens of
/// packets dropped); with it the queue drops at most half as many in the
/// run, and the upload carries as much.
fn leaves_slow_start_early(cc: CcAlgorithm, path: Path) {
    for family in FAMILIES {
        let on = upload(family, path, cc, true);
        let off = upload(family, path, cc, false);
        eprintln!("{cc} {family:?} {path:?}: HyStart++ on {on:?}, off {off:?}");
        assert!(
            off.dropped >= 20,
            "{cc} {family:?} {path:?}: without HyStart++ slow start should overflow the queue: {off:?}"
        );
        assert!(
            on.dropped * 2 <= off.dropped,
            "{cc} {family:?} {path:?}: HyStart++ dropped {} packets, without it {}",
            on.dropped,
            off.dropped
        );
        assert!(
            on.received as f64 >= 0.97 * off.received as f64,
            "{cc} {family:?} {path:?}: {} bytes with HyStart++, {} without",
            on.received,
            off.received
        );
    }
}

#[test]
fn cubic_leaves_slow_start_before_a_50_packet_fifo_at_1_mbit_overflows() {
    leaves_slow_start_early(CcAlgorithm::Cubic, SLOW);
}

#[test]
fn cubic_leaves_slow_start_before_a_two_bdp_fifo_at_10_mbit_overflows() {
    leaves_slow_start_early(CcAlgorithm::Cubic, DEEP);
}

#[test]
fn newreno_leaves_slow_start_before_a_two_bdp_fifo_at_10_mbit_overflows() {
    leaves_slow_start_early(CcAlgorithm::NewReno, DEEP);
}
