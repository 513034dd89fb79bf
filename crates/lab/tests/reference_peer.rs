//! The reference UDP Prague peer in the "L4S where it usually breaks"
//! section (built with the `reference-prague` feature): every row gets
//! the reference controller's figure from its twin run, a number, not the
//! reason it is missing; and the section, run at full length (40 s beside
//! CUBIC, 20 s for the rest), reads the same steady state as the
//! simulator's L4S tests, so it agrees with the goals they hold.
#![cfg(feature = "reference-prague")]

use brisk_lab::runner::RunConfig;
use brisk_lab::section::Cell;
use brisk_lab::suite::Suite;

/// A row's number in `column`, or a failure naming the row.
fn number(row: &[Cell], column: usize) -> f64 {
    match row[column] {
        Cell::Number { value, .. } if value.is_finite() => value,
        _ => panic!("{:?}", row.iter().map(Cell::display).collect::<Vec<_>>()),
    }
}

/// Not `quick`: a 10 s run is too short for the 160 ms flow of the RTT
/// pair to converge (the section flags such runs), and the whole section
/// with its twins takes a few seconds at full length. It prints the
/// section's tables (the slow-link one is docs/PROTOCOL.md's):
/// `cargo test --release -p brisk-lab --features reference-prague --test
/// reference_peer -- --nocapture`.
#[test]
fn every_case_gets_the_reference_figure_beside_brisk() {
    let mut suite = Suite::embedded("default").unwrap();
    suite.sections.retain(|s| s.section.id() == "l4s-breaks");
    assert_eq!(suite.sections.len(), 1);
    let config = RunConfig {
        quick: false,
        jobs: 2,
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).unwrap();
    let section = &lab.report.sections[0];
    assert!(
        section.checks.iter().all(|c| c.is_claim() || c.passed),
        "a setup check failed: {:?}",
        section.checks
    );
    let table = &section.tables[0];
    let position = |prefix: &str| {
        table
            .columns
            .iter()
            .position(|c| c.starts_with(prefix))
            .unwrap()
    };
    let (reference, brisk) = (position("reference"), position("Brisk"));
    // Both tables as Markdown, the slow-link one as docs/PROTOCOL.md
    // keeps it.
    for t in &section.tables {
        eprintln!("\n| {} |", t.columns.join(" | "));
        eprintln!("|{}", " --- |".repeat(t.columns.len()));
        for row in &t.rows {
            let line: Vec<String> = row.iter().map(Cell::display).collect();
            eprintln!("| {} |", line.join(" | "));
        }
    }
    for row in &table.rows {
        number(row, reference);
    }
    // The slow-link table: every rate with the reference's figures, alone
    // a number and beside another flow two rates.
    let slow = &section.tables[1];
    assert_eq!(slow.rows.len(), 5);
    // Beside CUBIC and beside BBR, the reference's two rates, and beside
    // BBR Brisk's too.
    for row in &slow.rows {
        number(row, 2);
        for column in [5, 7, 8] {
            let Cell::Text(pair) = &row[column] else {
                panic!("{row:?}")
            };
            assert!(pair.contains(" vs "), "{pair}");
        }
    }
    // The slow-link rows: the reference keeps a default DualPI2 link busy.
    assert!(number(&table.rows[1], reference) > 50.0);
    // The goals the simulator's tests hold, read from the section's Brisk
    // column: alone at least 95% busy from 4 to 100 Mbit/s, beside CUBIC
    // within 0.67 to 1.5 from 25 to 100 Mbit/s, 10 vs 160 ms within 2:1.
    for row in &table.rows[0..5] {
        assert!(number(row, brisk) >= 95.0, "{:?}", row[0]);
    }
    for row in &table.rows[7..10] {
        assert!((0.67..=1.5).contains(&number(row, brisk)), "{:?}", row[0]);
    }
    assert!(
        number(&table.rows[10], brisk) <= 2.0,
        "{:?}",
        table.rows[10][0]
    );
}

/// The suite's L4S sections (`l4s-queue`, `l4s-call`, `l4s-breaks`) with
/// the reference peer, every check printed with its value and bound, as
/// `brisk lab` runs them (`QUICK=1`: as `brisk lab --quick` does; `IP=v6`:
/// every scenario over IPv6): `cargo test --profile ci -p brisk-lab
/// --features reference-prague --test reference_peer -- --ignored
/// --nocapture every_l4s_check`.
#[test]
#[ignore = "prints every check of the L4S sections; run it by hand"]
fn every_l4s_check() {
    let mut suite = Suite::embedded("default").unwrap();
    suite
        .sections
        .retain(|s| s.section.id().starts_with("l4s-"));
    let quick = std::env::var("QUICK").is_ok_and(|v| v == "1");
    let ip = match std::env::var("IP").as_deref() {
        Ok("v6") => Some(brisk_sim::scenario::IpFamily::V6),
        Ok("v4") => Some(brisk_sim::scenario::IpFamily::V4),
        _ => None,
    };
    let config = RunConfig {
        quick,
        jobs: 2,
        capture: false,
        ip,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).unwrap();
    println!("quick: {quick}, address family: {ip:?} (None: each file's)");
    for s in &lab.report.sections {
        println!("\n{}: {}", s.id, s.verdict_line);
        println!("| check | kind | measured | bound | met |");
        println!("| --- | --- | --- | --- | --- |");
        for c in &s.checks {
            println!(
                "| {} | {} | {} | {} | {} |",
                c.name,
                if c.is_claim() { "claim" } else { "setup" },
                c.measured_text(),
                c.bound_text(),
                if c.passed { "yes" } else { "NO" }
            );
        }
        for t in &s.tables {
            println!("\n| {} |", t.columns.join(" | "));
            println!("|{}", " --- |".repeat(t.columns.len()));
            for row in &t.rows {
                let line: Vec<String> = row.iter().map(Cell::display).collect();
                println!("| {} |", line.join(" | "));
            }
        }
    }
}
