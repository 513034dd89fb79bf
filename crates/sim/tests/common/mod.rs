//! Helpers the transport test files share: run a scenario on one IP
//! family, find a flow, and a flow's share of the goodput.

use brisk_sim::results::{FlowResults, Results};
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use std::path::Path;
use std::time::Duration;

/// Both IP families: every transport case runs on each.
pub const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// A scenario file of the repository, run for `secs` instead of its own
/// duration.
#[allow(dead_code, reason = "not every test file loads scenario files")]
pub fn scenario(file: &str, secs: u64) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let mut s = Scenario::load(&path).unwrap();
    s.duration = Duration::from_secs(secs);
    s
}

/// The results of `s` over `ip`.
#[allow(
    dead_code,
    reason = "a test file that needs the run's outcome runs it itself"
)]
pub fn run_on(s: &Scenario, ip: IpFamily) -> Results {
    run(
        s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    )
    .results
}

/// The flow named `name` (panics if the scenario has none: a test bug).
pub fn flow<'r>(r: &'r Results, name: &str) -> &'r FlowResults {
    r.flows.iter().find(|f| f.name == name).unwrap()
}

/// `name`'s part of the flows' total goodput.
#[allow(dead_code, reason = "not every test file compares shares")]
pub fn share(r: &Results, name: &str) -> f64 {
    let total: f64 = r.flows.iter().map(|f| f.goodput_mbps).sum();
    flow(r, name).goodput_mbps / total
}
