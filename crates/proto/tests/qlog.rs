//! qlog: a traced connection writes JSON-SEQ records through brisk-trace's
//! writer, with packet, recovery and ECN events.

mod util;

use brisk_proto::qlog::QlogWriter;
use brisk_time::Instant;
use brisk_trace::qlog::{VantageKind, VantagePoint};
use std::io::Write;
use std::sync::{Arc, Mutex};
use util::*;

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn traced_transfer_writes_parseable_qlog() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 50).link(|l| {
            l.rate_bps = Some(10_000_000);
            l.queue_bytes = 30_000;
        }));
        let buf = SharedBuf::default();
        let w = QlogWriter::new(
            buf.clone(),
            "bulk",
            VantagePoint::new(VantageKind::Client, "client"),
        )
        .unwrap();
        p.client_conn().set_qlog(Box::new(w));
        let mut bulk = Bulk::new(payload(300_000, 1));
        assert!(p.run_until(Instant::from_millis(10_000), |p| bulk.pump(p)));
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let records: Vec<serde_json::Value> = text
            .split('\u{1e}')
            .filter(|r| !r.trim().is_empty())
            .map(|r| serde_json::from_str(r).expect("each record is JSON"))
            .collect();
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
        let count = |name: &str| records.iter().filter(|r| r["name"] == name).count();
        let stats = p.client_conn().stats();
        let sent = count("transport:packet_sent");
        // One event per 1-RTT packet, plus the Initial.
        assert_eq!(sent as u64, stats.packets_sent + 1);
        assert!(count("transport:packet_received") > 10);
        assert!(count("recovery:metrics_updated") > 10);
        assert_eq!(count("recovery:packet_lost") as u64, stats.packets_lost);
        assert!(
            stats.packets_lost > 0,
            "the small queue overflows in slow start"
        );
        assert!(count("recovery:congestion_state_updated") >= 1);
        assert!(
            count("recovery:ecn_state_updated") >= 1,
            "testing -> capable"
        );
    }
}
