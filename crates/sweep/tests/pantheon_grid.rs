//! The built-in Pantheon-style grid (scenarios/grids/pantheon-cellular.toml),
//! cut short for CI: 8 simulated seconds, one seed, over IPv4 and IPv6.
//! Every path gets a panel with a point per congestion controller, no
//! controller gets more than a constant path carries, on the constant
//! paths BBR holds less than half the p95 delay of CUBIC and NewReno at
//! their throughput, and the panels draw.
//! The full grid: `brisk sweep scenarios/grids/pantheon-cellular.toml --plots DIR`.

use brisk_sweep::compare::{CompareError, Panel, panels};
use brisk_sweep::{Grid, Store, SweepOptions, sweep};
use std::path::{Path, PathBuf};

const SCHEMES: [&str; 4] = ["cubic", "bbr", "prague", "newreno"];

/// The shared traces: `shared/traces` in the nearest directory above the
/// crate that has one (beside the checkout in CI).
fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/traces"))
        .find(|t| t.join("TMobile-LTE-driving.down").exists())
        .expect("the shared cellular traces sit beside the checkout (shared/traces)")
}

fn short_grid() -> Grid {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/grids/pantheon-cellular.toml");
    let text = std::fs::read_to_string(&file).expect("the built-in grid is readable");
    let text = text
        .replace(
            "../../../shared/traces/",
            &format!("{}/", traces().display()),
        )
        .replace("duration = \"30s\"", "duration = \"8s\"")
        .replace("seeds = 3", "seeds = 1")
        + "ip = [\"v4\", \"v6\"]\n";
    Grid::parse(
        &text,
        "pantheon-cellular.toml",
        Path::new("."),
        "pantheon-cellular",
    )
    .expect("the built-in grid parses")
}

/// The paths of the built-in grid: the recorded ones, the constant ones
/// and the fitted ones.
fn paths(grid: &Grid) -> usize {
    grid.axes[0].values.len()
}

fn run() -> (Grid, Vec<Panel>) {
    let grid = short_grid();
    let store_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pantheon-grid-store");
    let _ = std::fs::remove_dir_all(&store_dir);
    let store = Store::open(&store_dir).expect("the store opens");
    let outcome =
        sweep(&grid, &store, &SweepOptions { jobs: 0 }, &mut |_| {}).expect("the grid runs");
    assert_eq!(
        outcome.ran,
        paths(&grid) * 4 * 2,
        "every path x four schemes x two families"
    );
    let panels =
        panels(&grid, &outcome.flows, "flows[0].cc").expect("the grid has the scheme axis");
    (grid, panels)
}

#[test]
fn every_path_compares_every_scheme_within_its_capacity() {
    let (grid, panels) = run();
    assert!(
        paths(&grid) >= 5,
        "three traces and two constant paths at least"
    );
    assert_eq!(
        panels.len(),
        paths(&grid) * 2,
        "one panel per path and family"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pantheon-plots");
    std::fs::create_dir_all(&dir).expect("the plot directory can be made");
    for (i, panel) in panels.iter().enumerate() {
        let names: Vec<&str> = panel.schemes.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, SCHEMES, "{}", panel.title);
        // A constant path's capacity in Mbit/s, from its title.
        let capacity = ["5.17 Mbit/s", "12.77 Mbit/s"]
            .iter()
            .find(|r| panel.title.contains(*r))
            .map(|r| {
                r.trim_end_matches(" Mbit/s")
                    .parse::<f64>()
                    .expect("a rate")
            });
        for s in &panel.schemes {
            let (delay_ms, mbps) = s.mean().expect("a finite point per scheme");
            println!(
                "{}: {:8} p95 one-way delay {delay_ms:7.1} ms, {mbps:6.2} Mbit/s",
                panel.title, s.name
            );
            assert!(
                delay_ms >= 20.0,
                "{} {}: below the 20 ms path delay",
                panel.title,
                s.name
            );
            assert!(mbps > 0.5, "{} {}: {mbps} Mbit/s", panel.title, s.name);
            if let Some(cap) = capacity {
                assert!(
                    mbps <= cap,
                    "{} {}: {mbps} Mbit/s over {cap}",
                    panel.title,
                    s.name
                );
            }
        }
        // On a steady path a 200-packet drop-tail buffer is what the
        // loss-based schemes fill (Prague too: no ECN marks in a FIFO) and
        // what BBR's model of the path keeps empty, at the same throughput.
        if capacity.is_some() {
            let (bbr_ms, bbr_mbps) = panel.schemes[1].mean().expect("bbr ran");
            for s in [&panel.schemes[0], &panel.schemes[3]] {
                let (ms, mbps) = s.mean().expect("ran");
                assert!(
                    bbr_ms < ms / 2.0 && bbr_mbps > 0.95 * mbps,
                    "{}: bbr {bbr_ms:.1} ms {bbr_mbps:.2} Mbit/s against {} {ms:.1} ms {mbps:.2} Mbit/s",
                    panel.title,
                    s.name
                );
            }
        }
        let svg = panel.svg().expect("the panel draws");
        for text in SCHEMES.iter().chain(&["throughput (Mbit/s)"]) {
            assert!(svg.contains(text), "{}: no {text} in the SVG", panel.title);
        }
        std::fs::write(dir.join(format!("panel-{i}.svg")), svg).expect("the SVG is written");
    }
}

#[test]
fn a_grid_without_the_scheme_axis_is_refused_by_name() {
    let grid = short_grid();
    assert_eq!(
        panels(&grid, &[], "flows[1].cc"),
        Err(CompareError::NoSchemeAxis(
            "flows[1].cc".into(),
            "path, flows[0].cc, ip".into()
        ))
    );
}
