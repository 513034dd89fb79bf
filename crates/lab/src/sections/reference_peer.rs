//! The reference UDP Prague peer beside Brisk: a scenario's twin with
//! every Brisk Prague flow replaced by the reference controller (the
//! `udp_prague` crate, flow kind `udp_prague`), run with the same seed in
//! the same network, so a section can show both side by side.
//!
//! The crate includes GPL-2.0-only code, so the lab runs it only when built
//! with its `reference-prague` feature; without it, [`twin`] says so and the
//! section's column stays empty with that reason.

use crate::section::ScenarioRun;

/// The twin of one run.
#[cfg_attr(
    not(feature = "reference-prague"),
    expect(dead_code, reason = "only a build with the reference peer runs twins")
)]
pub(crate) enum Twin {
    Ran(Box<ScenarioRun>),
    /// This build has no reference peer ([`unavailable`] says why).
    NotBuilt,
    /// The twin could not run (why).
    Failed(String),
}

/// Why this build has no reference peer, if it has none.
pub(crate) fn unavailable() -> Option<&'static str> {
    if cfg!(feature = "reference-prague") {
        None
    } else {
        Some(
            "this lab was built without the reference peer, whose crate includes \
             GPL-2.0-only code; run `cargo run --release -p brisk-cli --features \
             brisk-lab/reference-prague -- lab` to fill it",
        )
    }
}

/// Runs `run`'s scenario again with its Brisk Prague flows replaced by the
/// reference controller.
pub(crate) fn twin(run: &ScenarioRun) -> Twin {
    if unavailable().is_some() {
        return Twin::NotBuilt;
    }
    run_twin(run)
}

#[cfg(feature = "reference-prague")]
fn run_twin(run: &ScenarioRun) -> Twin {
    use brisk_sim::scenario::Traffic;
    let mut scenario = run.scenario.clone();
    let mut replaced = 0;
    for f in &mut scenario.flows {
        if matches!(&f.traffic, Traffic::Brisk(b) if b.cc.name() == "prague") {
            f.traffic = Traffic::UdpPrague;
            replaced += 1;
        }
    }
    if replaced == 0 {
        return Twin::Failed("the scenario has no Brisk Prague flow to replace".into());
    }
    let done = brisk_sim::run(
        &scenario,
        brisk_sim::RunOptions {
            seed: Some(run.results.seed),
            capture: None,
            series: true,
            ip: None,
            qlog: None,
            progress: None,
            null_cipher: false,
        },
    );
    Twin::Ran(Box::new(ScenarioRun {
        stem: run.stem.clone(),
        path: run.path.clone(),
        series: done.outcome.series(),
        reports: done.outcome.reports(),
        scenario,
        results: done.results,
        measured: Default::default(),
    }))
}

#[cfg(not(feature = "reference-prague"))]
fn run_twin(_run: &ScenarioRun) -> Twin {
    Twin::NotBuilt
}
