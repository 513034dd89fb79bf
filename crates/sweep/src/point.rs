//! One run of a grid: a scenario, a seed, and the key that finds it in
//! the results store.

use brisk_sim::scenario::Scenario;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use toml::Value;

/// The version that goes into every run key: results of another Brisk
/// version are run again, not reused.
pub const BRISK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One run.
#[derive(Debug, Clone)]
pub struct Point {
    /// Position in the grid's order.
    pub index: usize,
    /// The axis values that make this point, in axis order.
    pub inputs: Vec<(String, Value)>,
    pub seed: u64,
    /// The whole scenario as canonical TOML (keys sorted, the seed set):
    /// `brisk sim` on this text reproduces the run.
    pub scenario_toml: String,
    /// Hex SHA-256 of the Brisk version, the seed and `scenario_toml`
    /// (with the point's `live.*` inputs, if any).
    pub key: String,
    pub scenario: Arc<Scenario>,
}

impl Point {
    pub(crate) fn new(
        index: usize,
        inputs: Vec<(String, Value)>,
        seed: u64,
        scenario_toml: String,
        scenario: Arc<Scenario>,
    ) -> Point {
        // Inputs of the live lab's driver are not in the scenario: they
        // join its text in the key, so each makes a run of its own.
        let mut keyed = scenario_toml.clone();
        for (name, value) in &inputs {
            if name.starts_with(crate::grid::LIVE_PREFIX) {
                keyed.push_str(&format!("\n# {name} = {value}"));
            }
        }
        let key = run_key(&keyed, seed);
        Point {
            index,
            inputs,
            seed,
            scenario_toml,
            key,
            scenario,
        }
    }
}

/// The key of a run of `scenario_toml` with `seed` by this Brisk version.
pub fn run_key(scenario_toml: &str, seed: u64) -> String {
    let mut h = Sha256::new();
    h.update(format!("brisk {BRISK_VERSION}\nseed {seed}\n").as_bytes());
    h.update(scenario_toml.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Point {
    /// The value of input `name` (an axis path), if the grid has that axis.
    pub fn input(&self, name: &str) -> Option<&Value> {
        self.inputs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}
