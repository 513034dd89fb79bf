//! A five-axis grid with five seeds, run into a Parquet store and run
//! again: every finished run is skipped, the rows come back as they were
//! written, the axes reach the simulator (each one moves its metric), and
//! one thread or many give the same rows. The `ip` axis runs every point
//! over IPv4 and IPv6.

use brisk_sweep::{Cell, Grid, Row, Store, SweepError, SweepOptions, SweepOutcome, Table, sweep};
use std::path::Path;

const GRID: &str = r#"
name = "five-axes"
seeds = 5

[base]
name = "sweep-test"
duration = "400ms"
[base.link.down]
rate = "10Mbit"
delay = "10ms"
[base.link.up]
rate = "10Mbit"
delay = "10ms"
[base.queue.fifo]
limit_packets = 100
[[base.flows]]
name = "bulk"
kind = "brisk"
[[base.flows]]
name = "ping"
kind = "ping"
interval = "20ms"

[axes]
ip = ["v4", "v6"]
"link.down.rate" = ["4Mbit", "16Mbit"]
"link.down.delay" = ["5ms", "40ms"]
queue = [{ fifo = { limit_packets = 200 } }, { codel = {} }]
"flows[0].cc" = ["prague", "cubic"]
"#;

fn grid(text: &str) -> Result<Grid, SweepError> {
    Grid::parse(text, "test-grid.toml", Path::new("."), "test-grid")
}

fn run(grid: &Grid, store: &Store, jobs: usize) -> SweepOutcome {
    sweep(grid, store, &SweepOptions { jobs }, &mut |_| {}).expect("sweep runs")
}

fn float(row: &Row, name: &str) -> f64 {
    match row.get(name) {
        Some(Cell::Float(f)) => *f,
        Some(Cell::Int(i)) => *i as f64,
        other => panic!("{name} is {other:?}"),
    }
}

/// Mean of `metric` over the rows whose `axis` is `value`.
fn mean_where(rows: &[Row], axis: &str, value: &str, metric: &str) -> f64 {
    let picked: Vec<f64> = rows
        .iter()
        .filter(|r| r.text(axis) == Some(value))
        .map(|r| float(r, metric))
        .collect();
    assert!(!picked.is_empty(), "no rows with {axis} = {value}");
    picked.iter().sum::<f64>() / picked.len() as f64
}

#[test]
fn five_axes_five_seeds_land_in_the_store_and_rerun_skips_them() {
    let g = grid(GRID).unwrap();
    assert_eq!(g.axes.len(), 5);
    assert_eq!(g.len(), 32 * 5);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();

    let first = run(&g, &store, 0);
    assert_eq!((first.ran, first.skipped), (160, 0));
    assert_eq!(first.runs.len(), 160);
    assert_eq!(first.flows.len(), 320);
    assert_eq!(store.read(Table::Runs).unwrap().len(), 160);
    assert_eq!(store.read(Table::Flows).unwrap().len(), 320);

    // Every row carries its inputs: the five axes and the seed.
    let mut seen = std::collections::BTreeSet::new();
    for row in &first.runs {
        let inputs: Vec<String> = [
            "ip",
            "link.down.rate",
            "link.down.delay",
            "queue",
            "flows[0].cc",
            "seed",
        ]
        .iter()
        .map(|c| format!("{:?}", row.get(c).expect("input column")))
        .collect();
        assert!(seen.insert(inputs), "two rows with the same inputs");
        assert!(
            row.text("scenario_toml")
                .is_some_and(|t| t.contains("seed = "))
        );
    }

    // The axes reach the simulator: each moves the metric it should.
    let rows = &first.runs;
    let slow = mean_where(rows, "link.down.rate", "4Mbit", "link.throughput_mbps");
    let fast = mean_where(rows, "link.down.rate", "16Mbit", "link.throughput_mbps");
    println!("bottleneck throughput: {slow:.2} Mbit/s at 4 Mbit/s, {fast:.2} Mbit/s at 16 Mbit/s");
    assert!(fast > 2.0 * slow, "{fast} vs {slow}");
    let far = mean_where(&first.flows, "link.down.delay", "40ms", "rtt_ms.min");
    let near_flows = mean_where(&first.flows, "link.down.delay", "5ms", "rtt_ms.min");
    println!("minimum RTT: {near_flows:.1} ms at 5 ms down delay, {far:.1} ms at 40 ms");
    assert!(far - near_flows > 30.0, "{far} vs {near_flows}");
    let cc: Vec<&str> = first
        .flows
        .iter()
        .filter(|f| f.text("name") == Some("bulk"))
        .map(|f| {
            f.text("transport.cc")
                .expect("brisk flows report their controller")
        })
        .collect();
    assert_eq!(cc.iter().filter(|c| **c == "cubic").count(), 80);
    assert_eq!(cc.iter().filter(|c| **c == "prague").count(), 80);
    let fifo = mean_where(
        rows,
        "queue",
        "{ fifo = { limit_packets = 200 } }",
        "queue.delay_ms.p99",
    );
    let codel = mean_where(rows, "queue", "{ codel = {} }", "queue.delay_ms.p99");
    println!("p99 queue delay: {fifo:.1} ms FIFO, {codel:.1} ms CoDel");
    assert!(codel < fifo, "{codel} vs {fifo}");
    // The simulator ran the family the axis asked for.
    let v6: Vec<&Row> = first
        .flows
        .iter()
        .filter(|f| f.text("ip") == Some("v6"))
        .collect();
    assert_eq!(v6.len(), 160);
    assert!(
        v6.iter()
            .all(|f| f.text("src").is_some_and(|s| s.starts_with('[')))
    );

    // Again: nothing runs, and the rows read back are the rows written.
    let second = run(&g, &store, 0);
    assert_eq!((second.ran, second.skipped), (0, 160));
    assert_eq!(second.runs, first.runs);
    assert_eq!(second.flows, first.flows);
    assert_eq!(store.parts(Table::Runs).unwrap().len(), 1);

    // One more seed: only its 32 runs are new.
    let wider = grid(&GRID.replace("seeds = 5", "seeds = 6")).unwrap();
    let third = run(&wider, &store, 0);
    assert_eq!((third.ran, third.skipped), (32, 160));
    assert_eq!(store.read(Table::Runs).unwrap().len(), 192);
}

#[test]
fn one_thread_and_many_give_the_same_rows() {
    let small = GRID
        .replace("seeds = 5", "seeds = [7, 8]")
        .replace("\"link.down.delay\" = [\"5ms\", \"40ms\"]\n", "");
    let g = grid(&small).unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = run(&g, &Store::open(a.path()).unwrap(), 1);
    let many = run(&g, &Store::open(b.path()).unwrap(), 4);
    assert_eq!(one.runs.len(), 32);
    assert_eq!(one.runs, many.runs);
    assert_eq!(one.flows, many.flows);
}

#[test]
fn bad_grids_name_the_field_and_line() {
    // The base scenario alone: GRID from its `[base]` table to `[axes]`.
    let base = &GRID[GRID.find("[base]").unwrap()..GRID.find("[axes]").unwrap()];
    let cases = [
        (
            "",
            "\"link.down.rate\" = \"5Mbit\"",
            "`axes.link.down.rate`",
            "a list",
        ),
        ("seeds = [1, 1]", "", "`seeds`", "twice"),
        ("seeds = \"many\"", "", "`seeds`", "list of seeds"),
        (
            "",
            "\"flows[9].cc\" = [\"cubic\"]",
            "`axes.flows[9].cc`",
            "no `flows[9]`",
        ),
        (
            "",
            "\"link..rate\" = [1]",
            "`axes.link..rate`",
            "not a field path",
        ),
        ("", "seed = [1, 2]", "`axes.seed`", "seeds"),
        (
            "",
            "\"flows[0].cc\" = [\"cubic\", \"warp\"]",
            "flows[0].cc = \"warp\"",
            "invalid",
        ),
        ("colour = 3", "", "test-grid.toml", "colour"),
        (
            "",
            "path = [\"5Mbit\"]",
            "`axes.path`",
            "a table of field paths",
        ),
        (
            "",
            "path = [{ name = \"x\" }]",
            "`axes.path`",
            "at least one field",
        ),
        (
            "",
            "path = [{ \"flows[9].cc\" = \"cubic\" }]",
            "`axes.path`",
            "no `flows[9]`",
        ),
    ];
    for (top, axes, place, what) in cases {
        let text = format!("{top}\n{base}\n[axes]\n{axes}\n");
        let e = grid(&text)
            .and_then(|g| g.points().map(|_| ()))
            .expect_err(&text)
            .to_string();
        assert!(e.contains(place) && e.contains(what), "{top}{axes}: {e}");
    }
    // The line is the axis's own line.
    let e = grid("base = { name = \"x\" }\n\n[axes]\nqueue = 3\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("test-grid.toml:4: `axes.queue`"), "{e}");
}

#[test]
fn a_path_axis_sets_several_fields_and_live_axes_stay_out_of_the_simulator() {
    let base = &GRID[GRID.find("[base]").unwrap()..GRID.find("[axes]").unwrap()];
    let text = format!(
        "seeds = 1\n{base}\n[axes]\npath = [{{ name = \"slow, deep\", \"link.down.rate\" = \"2Mbit\", \
         queue = {{ fifo = {{ limit_packets = 400 }} }} }}, {{ \"link.down.rate\" = \"8Mbit\" }}]\n"
    );
    let g = grid(&text).unwrap();
    let points = g.points().unwrap();
    assert_eq!(points.len(), 2);
    assert!(points[0].scenario_toml.contains("rate = \"2Mbit\""));
    assert!(points[0].scenario_toml.contains("limit_packets = 400"));
    assert!(
        !points[0].scenario_toml.contains("slow, deep"),
        "the name is no field"
    );
    assert!(points[1].scenario_toml.contains("rate = \"8Mbit\""));
    let dir = tempfile::tempdir().unwrap();
    let out = run(&g, &Store::open(dir.path()).unwrap(), 1);
    let rate = |i: usize| match out.runs[i].get("link.throughput_mbps") {
        Some(Cell::Float(f)) => *f,
        other => panic!("{other:?}"),
    };
    assert!(rate(0) < 2.01 && rate(1) > 2.5, "{} {}", rate(0), rate(1));

    // A live axis: same scenario, one key per value, and no simulator run.
    let live = format!(
        "{}\"live.scheme\" = [\"tcp cubic\", \"brisk cubic\"]\n",
        text
    );
    let g = grid(&live).unwrap();
    assert!(g.is_live());
    let points = g.points().unwrap();
    assert_eq!(points.len(), 4);
    assert_eq!(points[0].scenario_toml, points[1].scenario_toml);
    assert_ne!(points[0].key, points[1].key);
    let e = brisk_sweep::plan(&g, &Store::open(dir.path()).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("live.scheme") && e.contains("--live"), "{e}");
    let e = brisk_sweep::simulate(&points[0]).unwrap_err().to_string();
    assert!(e.contains("live.scheme"), "{e}");
}
