//! Utilization on a recorded cellular trace is measured against the
//! capacity the trace offered during the run, not against its mean over
//! the whole recording: a saturated link is fully used whatever stretch of
//! the trace the run covers.

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, run_on};
use std::path::Path;

/// A T-Mobile LTE recording from the shared traces, under `load` for 30 s.
fn on_tmobile(load: &str) -> Scenario {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    let trace = traces.join("TMobile-LTE-driving.down");
    assert!(
        trace.exists(),
        "the shared cellular traces are missing ({}): they sit beside the checkout",
        trace.display()
    );
    let text = format!(
        r#"duration = "30s"
[link.down]
rate = {{ mahimahi = "{}" }}
delay = "20ms"
[link.up]
rate = "10Mbit"
delay = "20ms"
[queue.fifo]
limit_packets = 1000
{load}
"#,
        trace.display()
    );
    Scenario::parse_with_traces(&text, "tmobile.toml", |p| std::fs::read_to_string(p)).unwrap()
}

#[test]
fn a_saturated_trace_is_fully_used_and_an_idle_one_is_not() {
    // 100 Mbit/s offered: far above any stretch of the recording.
    let saturated = on_tmobile("[[flows]]\nkind = \"cbr\"\nrate = \"100Mbit\"\n");
    let probe = on_tmobile("[[flows]]\nkind = \"ping\"\ninterval = \"100ms\"\n");
    for ip in FAMILIES {
        let busy = run_on(&saturated, ip).link.utilization;
        // 1500-byte packets in 1504-byte opportunities: 99.7% at most.
        assert!(
            busy > 0.98,
            "{ip:?}: saturated trace {:.1}% used",
            busy * 100.0
        );
        let idle = run_on(&probe, ip).link.utilization;
        assert!(
            idle < 0.01,
            "{ip:?}: pinged trace {:.2}% used",
            idle * 100.0
        );
    }
}
