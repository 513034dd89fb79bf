//! ECN end to end: Prague marks ECT(1), the receiver echoes exact counts,
//! and a bleaching path is detected with a fallback to classic ECN, then
//! to Not-ECT.

mod util;

use brisk_proto::congestion::{CcAlgorithm, EcnCounts};

use brisk_proto::ecn_validation::EcnState;
use brisk_proto::qlog::{MemorySink, QlogEvent};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::sync::{Arc, Mutex};
use util::*;

const MB: usize = 1 << 20;

/// 20 Mbit/s, 10 ms each way, an L4S-style step marker at 1 ms of queue.
fn l4s_path(family: Family, seed: u64, cc: CcAlgorithm) -> PairConfig {
    let mut cfg = PairConfig::new(family, seed).link(|l| {
        l.rate_bps = Some(20_000_000);
        l.queue_bytes = 200_000;
        l.ce_threshold = Some(std::time::Duration::from_millis(1));
    });
    cfg.client.transport.cc = cc;
    cfg
}

#[test]
fn prague_sends_ect1_and_ce_counts_are_echoed_exactly() {
    for family in FAMILIES {
        let (mut p, _) = bulk_transfer(
            l4s_path(family, 40, CcAlgorithm::Prague),
            2 * MB,
            Instant::from_millis(30_000),
        );
        // A last ack-eliciting packet makes the server acknowledge (and so
        // count back) everything the client sent.
        p.client_conn().ping();
        let end = p.now + std::time::Duration::from_millis(500);
        p.run_until(end, |_| false);
        assert!(
            p.client.connection(p.client_conn).is_some(),
            "{:?} {:?}",
            p.client_events
                .iter()
                .filter(|e| !matches!(e, brisk_proto::Event::Stream(_)))
                .collect::<Vec<_>>(),
            p.server_events
                .iter()
                .filter(|e| !matches!(e, brisk_proto::Event::Stream(_)))
                .collect::<Vec<_>>()
        );
        let c = p.client.connection(p.client_conn).unwrap().stats();
        let s = p.server.connection(p.server_conn.unwrap()).unwrap().stats();
        assert_eq!(c.ecn_state, EcnState::Capable, "{family:?}");
        // The server's ACK-only packets are acknowledged too (on the
        // client's data packets), so its own ECN test passes.
        assert_eq!(
            s.ecn_state,
            EcnState::Capable,
            "{family:?}: {:?}",
            s.ecn_sent
        );
        assert_eq!(c.ecn_codepoint, Ecn::Ect1);
        assert_eq!(
            c.ecn_sent.ect0, 0,
            "Prague never sends ECT(0) on a clean path"
        );
        assert!(c.ecn_sent.ect1 > 1000);
        let marked = p.to_server.stats.ce_marked;
        assert!(marked > 0, "the queue marked");
        // Every packet arrived with the codepoint the path gave it, and the
        // CE count came back exactly. (The client's trailing ACK-only
        // packets are counted by the server but never acknowledged.)
        assert_eq!(s.ecn_received.ce, marked);
        assert_eq!(
            s.ecn_received.ect1 + s.ecn_received.ce,
            c.ecn_sent.ect1,
            "no loss: every packet counted"
        );
        assert_eq!(c.ecn_echoed.ce, marked);
        assert_eq!(c.ecn_echoed.ect0, 0);
        assert!(
            s.ecn_received.ect1 - c.ecn_echoed.ect1 <= 2,
            "{:?} vs {:?}",
            c.ecn_echoed,
            s.ecn_received
        );
        assert!(c.congestion_events > 0 && c.packets_lost == 0, "{c:?}");
        // The WWDC L4S demo: 20 ms base RTT, under 25 ms with L4S.
        assert!(
            c.smoothed_rtt < std::time::Duration::from_millis(25),
            "{:?}",
            c.smoothed_rtt
        );
    }
}

#[test]
fn bleaching_is_detected_and_falls_back_to_classic_then_not_ect() {
    for family in FAMILIES {
        let mut cfg =
            l4s_path(family, 41, CcAlgorithm::Prague).link(|l| l.ecn = EcnRewrite::Bleach);
        cfg.client.transport.streams.low_water_mark = 16 * 1024;
        let mut p = Pair::new(cfg);
        let sink = Arc::new(Mutex::new(MemorySink::default()));
        p.client_conn().set_qlog(Box::new(sink.clone()));
        let mut bulk = Bulk::new(payload(2 * MB, 7));
        assert!(p.run_until(Instant::from_millis(60_000), |p| bulk.pump(p)));
        let c = p.client.connection(p.client_conn).unwrap().stats();
        assert_eq!(c.ecn_state, EcnState::Failed, "{family:?}");
        assert_eq!(c.ecn_codepoint, Ecn::NotEct);
        assert!(
            c.ecn_sent.ect1 > 0 && c.ecn_sent.ect0 > 0,
            "tried ECT(1), then ECT(0): {:?}",
            c.ecn_sent
        );
        assert_eq!(c.ecn_echoed, EcnCounts::default(), "nothing arrived marked");
        let states: Vec<String> = sink
            .lock()
            .unwrap()
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                QlogEvent::EcnStateUpdated { new, trigger, .. } => {
                    Some(format!("{new:?}/{}", trigger.clone().unwrap_or_default()))
                }
                _ => None,
            })
            .collect();
        assert!(states.iter().any(|s| s.contains("bleached")), "{states:?}");
    }
}
