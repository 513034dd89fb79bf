//! Failover (docs/PROTOCOL.md §7.4) over IPv4 and IPv6: a client whose
//! path dies both ways mid-upload hears of the stall once, at the first
//! probe timeout, only with `failover` on; `fail_over` then queues again
//! what was in flight on the dead path and empties the new path's flight,
//! with no congestion response. The
//! move itself onto a working path is the simulator's two-path test
//! (crates/sim/tests/two_path.rs): this harness has one path.

mod util;

use brisk_time::Instant;
use util::*;

/// 20 Mbit/s, 10 ms each way, dead both ways from 300 ms on.
fn dying_path(family: Family, seed: u64, failover: bool) -> PairConfig {
    let dead = (Instant::from_millis(300), Instant::from_millis(1_000_000));
    let mut cfg = PairConfig::new(family, seed).link(|l| {
        l.rate_bps = Some(20_000_000);
        l.queue_bytes = 100_000;
        l.outages = vec![dead];
    });
    cfg.client.transport.migration = true;
    cfg.server.transport.migration = true;
    cfg.client.transport.failover = failover;
    cfg
}

#[test]
fn a_stall_is_reported_once_at_the_first_probe_timeout_and_fail_over_resends_the_flight() {
    for family in FAMILIES {
        let mut reports = Vec::new();
        for failover in [false, true] {
            let mut p = Pair::new(dying_path(family, 51, failover));
            assert!(p.connect());
            let mut bulk = Bulk::new(payload(4 << 20, 51));
            // Until the first stall report (or 2 s without one).
            let mut first = None;
            p.run_until(Instant::from_millis(2_000), |p| {
                bulk.pump(p);
                if first.is_none() && p.client_conn().poll_path_stall() {
                    first = Some(p.now);
                }
                false
            });
            let c = p.client_conn();
            let st = c.stats();
            let pto = c.probe_timeout();
            eprintln!(
                "{family:?} failover {failover}: stall reported at {first:?}, path stalls {}, \
                 PTOs {}, probe timeout {pto:?}",
                st.path_stalls, st.ptos
            );
            // Several probe timeouts fired in 1.7 s of silence, one report.
            assert!(st.ptos >= 3, "{family:?}: {st:?}");
            reports.push((first, st.path_stalls));
            if !failover {
                continue;
            }
            let at = first.expect("a stall report");
            assert!(
                at > Instant::from_millis(300) && at < Instant::from_millis(300) + pto * 3,
                "{family:?}: reported at {at:?}"
            );
            assert!(!c.poll_path_stall(), "{family:?}: reported twice");
            let before = c.stats();
            assert!(before.bytes_in_flight > 0);
            let now = p.now;
            let c = p.client_conn();
            assert!(c.fail_over(now));
            let after = c.stats();
            eprintln!(
                "{family:?}: fail_over took {} bytes out of flight; congestion events {} -> {}",
                before.bytes_in_flight, before.congestion_events, after.congestion_events
            );
            assert_eq!(after.bytes_in_flight, 0, "{family:?}");
            assert_eq!(after.congestion_events, before.congestion_events);
            assert_eq!(after.migrations, before.migrations + 1);
            assert!(c.path_validating());
        }
        assert_eq!(
            reports[0],
            (None, 0),
            "{family:?}: failover off reports nothing"
        );
        assert_eq!(reports[1].1, 1, "{family:?}");
    }
}

#[test]
fn fail_over_before_the_handshake_changes_nothing() {
    for family in FAMILIES {
        let mut p = Pair::new(dying_path(family, 52, true));
        let now = p.now;
        assert!(!p.client_conn().fail_over(now));
        assert!(p.connect());
    }
}
