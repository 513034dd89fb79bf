//! Calibrated paths on a short recording: CUBIC and BBR over the
//! stationary T-Mobile trace for 4 simulated seconds, one seed, on IPv4
//! and IPv6, and a small search. The fitted emulator must be closer to the
//! recording than the naive constant path at the trace's mean rate, every
//! scheme's reported error must be what its numbers say, and the scenario
//! file written for the fit must reproduce the fitted numbers when run.
//! The full calibration: `brisk sweep scenarios/grids/pantheon-cellular.toml
//! --calibrate DIR` (docs/SWEEPS.md).

use brisk_sim::RunOptions;
use brisk_sim::scenario::Scenario;
use brisk_sweep::calibrate::{Search, calibrate};
use brisk_sweep::{Grid, Store, SweepOptions, sweep};
use std::path::{Path, PathBuf};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/traces"))
        .find(|t| t.join("TMobile-LTE-short.down").exists())
        .expect("the shared cellular traces sit beside the checkout (shared/traces)")
}

fn grid() -> Grid {
    let text = format!(
        r#"
name = "calibration-test"
seeds = 1
[base]
duration = "4s"
[base.link.down]
rate = "12Mbit"
delay = "20ms"
[base.link.up]
rate = "10Mbit"
delay = "20ms"
[base.queue.fifo]
limit_packets = 200
[[base.flows]]
name = "bulk"
kind = "brisk"
[axes]
ip = ["v4", "v6"]
path = [
  {{ name = "short trace", "link.down.rate" = {{ mahimahi = "{}/TMobile-LTE-short.down" }} }},
]
"flows[0].cc" = ["cubic", "bbr"]
"#,
        traces().display()
    );
    Grid::parse(
        &text,
        "calibration-test.toml",
        Path::new("."),
        "calibration-test",
    )
    .expect("the test grid parses")
}

#[test]
fn a_fitted_emulator_beats_the_mean_rate_and_its_file_reproduces_it() {
    let grid = grid();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("calibration-test-store");
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir.join("grid")).expect("store");
    let outcome = sweep(&grid, &store, &SweepOptions::default(), &mut |_| {}).expect("grid runs");
    let search = Search {
        rate_factors: vec![0.8, 1.0, 1.2],
        extra_delays_ms: vec![0, 10, 40],
        losses: vec![0.0, 0.01],
        buffers_packets: vec![20, 50, 200],
        rounds: 2,
        seeds: 1,
    };
    let cal = Store::open(&dir.join("calibration")).expect("store");
    let fits = calibrate(
        &grid,
        &outcome.flows,
        "flows[0].cc",
        &cal,
        &search,
        &SweepOptions::default(),
        &mut |_, _| {},
    )
    .expect("calibration runs");
    assert_eq!(fits.len(), 2, "one recorded path per family");
    for (fit, ip) in fits.iter().zip(["v4", "v6"]) {
        println!(
            "{}: start {} ({:.1}% off) -> fitted {} ({:.1}% off), {} emulators, {} runs",
            fit.path,
            fit.start.describe(),
            fit.start_error * 100.0,
            fit.emulator.describe(),
            fit.error() * 100.0,
            fit.tried,
            fit.ran
        );
        assert!(fit.path.contains(&format!("ip = {ip}")), "{}", fit.path);
        assert!(
            fit.error() < fit.start_error,
            "{}: the fit ({:.3}) is no closer than the mean rate ({:.3})",
            fit.path,
            fit.error(),
            fit.start_error
        );
        let mean = fit.trace_mean_bps;
        assert!(
            fit.emulator.rate_bps as f64 >= 0.79 * mean
                && fit.emulator.rate_bps as f64 <= 1.21 * mean,
            "{}: rate {} outside the candidates around {mean}",
            fit.path,
            fit.emulator.rate_bps
        );
        assert_eq!(fit.schemes.len(), 2);
        for s in &fit.schemes {
            println!(
                "  {:6} trace {:.2} Mbit/s {:.1} ms, fitted {:.2} Mbit/s ({:+.1}%) {:.1} ms ({:+.1}%)",
                s.scheme,
                s.trace_mbps,
                s.trace_p95_ms,
                s.fitted_mbps,
                s.throughput_error() * 100.0,
                s.fitted_p95_ms,
                s.delay_error() * 100.0
            );
            assert!(s.trace_mbps > 0.5 && s.trace_p95_ms >= 20.0, "{s:?}");
            let e = ((s.fitted_mbps / s.trace_mbps - 1.0).abs()
                + (s.fitted_p95_ms / s.trace_p95_ms - 1.0).abs())
                / 2.0;
            assert!((s.error() - e).abs() < 1e-9, "{s:?}");
        }
        // The scenario file holds the fitted path: run with the grid's seed
        // and each scheme, it gives the fitted numbers again.
        let text = fit
            .scenario_file("brisk sweep calibration-test.toml --calibrate DIR")
            .expect("the fit writes a scenario");
        assert!(
            text.starts_with("# A constant-rate emulator fitted"),
            "{text}"
        );
        for s in &fit.schemes {
            let with_cc = text.replace("cc = \"cubic\"", &format!("cc = \"{}\"", s.scheme));
            let scenario = Scenario::parse_with_traces(&with_cc, "fitted.toml", |p| {
                std::fs::read_to_string(p)
            })
            .expect("the fitted scenario parses");
            assert_eq!(scenario.ip.name(), ip);
            let run = brisk_sim::run(
                &scenario,
                RunOptions {
                    seed: Some(grid.seeds[0]),
                    ..RunOptions::default()
                },
            );
            let flow = &run.results.flows[0];
            assert!(
                (flow.goodput_mbps - s.fitted_mbps).abs() < 1e-9
                    && (flow.one_way_delay_ms.p95 - s.fitted_p95_ms).abs() < 1e-9,
                "{}: the file gives {} Mbit/s {} ms, the fit said {} and {}",
                s.scheme,
                flow.goodput_mbps,
                flow.one_way_delay_ms.p95,
                s.fitted_mbps,
                s.fitted_p95_ms
            );
        }
    }
}
