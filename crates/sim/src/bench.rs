//! The reference loads the simulator's speed is measured on (`brisk bench`
//! and the criterion benchmark `benches/engine.rs`), and the goal it is
//! held to against ns-3, which `brisk bench` runs on the same network in
//! the same invocation (no figure of ns-3 is stored here).
//!
//! The network is a dumbbell: 100 Mbit/s each way, 10 ms each way (20 ms
//! base RTT). The bottleneck is kept saturated: a constant-rate UDP
//! overload of 110 Mbit/s in 1500-byte datagrams plus a ping every 10 ms,
//! through FQ-CoDel and through a 1000-packet FIFO; one Brisk CUBIC bulk
//! transfer plus the same ping through FQ-CoDel, the case ns-3 reproduces
//! with one TCP CUBIC flow; and the same with 100 bulk transfers, which
//! ns-3 reproduces with 100 TCP CUBIC flows.
//!
//! Speed is counted in packet-hops: a packet crossing the bottleneck link,
//! in either direction, to its far end (`engine.packet_hops`). The access
//! links are pure delays and count none; the ns-3 program counts its
//! bottleneck the same way (its access links are real links, with events
//! of their own), so wall or CPU time per simulated minute remains the
//! like-for-like comparison.

use crate::scenario::{Scenario, ScenarioError};
use std::time::Duration;

/// The speed goal: 50 times ns-3, in time per simulated second and in
/// packet-hops per CPU-second, both against ns-3 measured in the same run.
pub const GOAL_SPEEDUP_VS_NS3: f64 = 50.0;

/// One reference load.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// Short name: "cbr-fq_codel", "cbr-fifo", "brisk-fq_codel",
    /// "brisk100-fq_codel".
    pub name: &'static str,
    pub scenario: Scenario,
    /// How many bulk TCP flows the ns-3 run this case is compared with
    /// has: its own twin for the Brisk cases, the one-flow run for the CBR
    /// loads (the same network under a different load).
    pub ns3_flows: u32,
}

/// The network shared by every case, `duration_ms` long.
fn network(name: &str, duration_ms: u128, queue: &str) -> String {
    format!(
        r#"name = "{name}"
duration = "{duration_ms}ms"
seed = 1
[link.down]
rate = "100Mbit"
delay = "10ms"
[link.up]
rate = "100Mbit"
delay = "10ms"
{queue}
"#
    )
}

const FQ_CODEL: &str = "[queue.fq_codel]";
const FIFO: &str = "[queue.fifo]\nlimit_packets = 1000";

const CBR_OVERLOAD: &str = r#"
[[flows]]
name = "overload"
kind = "cbr"
rate = "110Mbit"
size = "1500B"
"#;

const CUBIC: &str = r#"
[[flows]]
name = "cubic"
kind = "brisk"
cc = "cubic"
"#;

/// `n` Brisk CUBIC bulk flows, named "cubic-1" to "cubic-n".
fn cubic_flows(n: u32) -> String {
    (1..=n)
        .map(|i| format!("\n[[flows]]\nname = \"cubic-{i}\"\nkind = \"brisk\"\ncc = \"cubic\"\n"))
        .collect()
}

const PING: &str = r#"
[[flows]]
name = "ping"
kind = "ping"
interval = "10ms"
"#;

/// The reference loads, each simulating `duration`.
pub fn cases(duration: Duration) -> Result<Vec<BenchCase>, ScenarioError> {
    let ms = duration.as_millis().max(1);
    [
        ("cbr-fq_codel", FQ_CODEL, CBR_OVERLOAD.to_string(), 1),
        ("cbr-fifo", FIFO, CBR_OVERLOAD.to_string(), 1),
        ("brisk-fq_codel", FQ_CODEL, CUBIC.to_string(), 1),
        ("brisk100-fq_codel", FQ_CODEL, cubic_flows(100), 100),
    ]
    .into_iter()
    .map(|(name, queue, load, ns3_flows)| {
        let text = network(name, ms, queue) + &load + PING;
        Ok(BenchCase {
            name,
            scenario: Scenario::parse(&text, name)?,
            ns3_flows,
        })
    })
    .collect()
}

/// The calling thread's time on a CPU so far (Linux), if readable: what
/// speed figures are counted in, so other work on a shared machine does
/// not count against a run.
pub fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunOptions, run};

    #[test]
    fn every_case_saturates_the_bottleneck() {
        // Long enough for CUBIC to leave slow start and fill the pipe.
        for case in cases(Duration::from_secs(2)).unwrap() {
            let r = run(&case.scenario, RunOptions::default()).results;
            let bulk = if case.name.starts_with("brisk") {
                case.ns3_flows as usize
            } else {
                1
            };
            assert_eq!(r.flows.len(), bulk + 1, "{}", case.name);
            assert!(
                r.link.utilization > 0.8,
                "{} {}",
                case.name,
                r.link.utilization
            );
            assert!(r.driver.engine.packet_hops > 10_000, "{}", case.name);
            assert_eq!(r.queue.kind, &case.name[case.name.find('-').unwrap() + 1..]);
        }
    }
}
