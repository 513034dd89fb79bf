//! A mobile cell with per-subscriber queues (`[queue.cell]`): two
//! subscribers download more than their share and fill their own deep
//! queues, a third only pings. Against the same total buffer as one shared
//! FIFO, the pinging subscriber's round trip drops from seconds to the
//! path's own, the two downloads split the cell evenly, and each keeps
//! seconds of its own queue. On IPv4 and IPv6, 20 s of the repository's
//! scenario files (radio freezes of 300 ms every 10 s included).

mod common;

use common::{FAMILIES, flow, run_on, scenario};

#[test]
fn per_subscriber_queues_keep_a_light_subscriber_out_of_the_heavy_ones_queues() {
    for ip in FAMILIES {
        let cell = run_on(&scenario("mobile-cell.toml", 20), ip);
        let fifo = run_on(&scenario("mobile-cell-fifo.toml", 20), ip);
        let (ping_cell, ping_fifo) = (flow(&cell, "ping"), flow(&fifo, "ping"));
        let (a, b) = (flow(&cell, "bulk-a"), flow(&cell, "bulk-b"));
        let total = a.goodput_mbps + b.goodput_mbps;
        println!(
            "{ip:?}: ping RTT p50/p95 {:.0}/{:.0} ms in the cell, {:.0}/{:.0} ms behind one FIFO; \
             downloads {:.2} + {:.2} Mbit/s, their queue delay p95 {:.2} s / {:.2} s",
            ping_cell.rtt_ms.p50,
            ping_cell.rtt_ms.p95,
            ping_fifo.rtt_ms.p50,
            ping_fifo.rtt_ms.p95,
            a.goodput_mbps,
            b.goodput_mbps,
            a.queue_delay_ms.p95 / 1e3,
            b.queue_delay_ms.p95 / 1e3,
        );
        // The path's own round trip is 40 ms; one turn of each download
        // adds about 2.4 ms, a 300 ms freeze now and then more.
        assert!(
            ping_cell.rtt_ms.p50 < 60.0,
            "{ip:?}: {:?}",
            ping_cell.rtt_ms
        );
        assert!(
            ping_fifo.rtt_ms.p50 > 1_000.0,
            "{ip:?}: {:?}",
            ping_fifo.rtt_ms
        );
        // Fair shares of a cell that is busy but for its freezes (3%).
        assert!(total > 9.3, "{ip:?}: {total} Mbit/s");
        assert!(
            (a.goodput_mbps / total - 0.5).abs() < 0.03,
            "{ip:?}: {} of {total}",
            a.goodput_mbps
        );
        // Deep queues: 2 MB drained at about 5 Mbit/s is 3.2 s.
        for bulk in [a, b] {
            assert!(
                bulk.queue_delay_ms.p95 > 2_500.0,
                "{ip:?} {}: {:?}",
                bulk.name,
                bulk.queue_delay_ms
            );
        }
    }
}
