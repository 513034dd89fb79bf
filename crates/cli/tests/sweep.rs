//! `brisk sweep` as a user runs it: the example five-axis grid with five
//! seeds (IPv4 and IPv6 as one axis) into a fresh store, then again, which
//! must skip every run; the CSV has one row per run with every axis.

use std::path::Path;
use std::process::Command;

fn sweep(store: &Path, csv: &Path) -> String {
    let grid =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/grids/queues-by-cc.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .arg("sweep")
        .arg(grid)
        .arg("--store")
        .arg(store)
        .arg("--csv")
        .arg(csv)
        .output()
        .expect("brisk runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn example_grid_runs_once_and_reruns_skip_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let (store, csv) = (dir.path().join("store"), dir.path().join("runs.csv"));
    let first = sweep(&store, &csv);
    assert!(first.contains("160 runs = ip (2) x link.down.rate (2) x link.down.delay (2) x queue (2) x flows[0].cc (2) x 5 seeds"), "{first}");
    assert!(first.contains("ran 160 runs"), "{first}");
    assert!(first.contains("skipped 0 "), "{first}");
    let second = sweep(&store, &csv);
    assert!(second.contains("ran 0 runs"), "{second}");
    assert!(second.contains("skipped 160 "), "{second}");
    assert!(second.contains("160 run rows, 320 flow rows"), "{second}");

    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "run_key",
        "seed",
        "ip",
        "link.down.rate",
        "link.down.delay",
        "queue",
        "flows[0].cc",
        "link.throughput_mbps",
    ] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    // A record starts with its run key; `scenario_toml` spans lines.
    let records = lines
        .filter(|l| {
            l.split(',')
                .next()
                .is_some_and(|k| k.len() == 64 && k.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .count();
    assert_eq!(records, 160);
    for table in ["runs", "flows"] {
        let parts = std::fs::read_dir(store.join(table)).unwrap().count();
        assert_eq!(
            parts, 1,
            "{table}: one part from the first sweep, none from the second"
        );
    }
}
