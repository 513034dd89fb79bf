//! The reference UDP Prague peer in the "L4S where it usually breaks"
//! section (built with the `reference-prague` feature): every row gets
//! the reference controller's figure from its twin run, a number, not the
//! reason it is missing; and the section, run at its full 20 s, reads the
//! same steady state as the simulator's L4S tests, so it agrees with the
//! goals they hold.
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
    // a number and beside CUBIC two rates.
    let slow = &section.tables[1];
    assert_eq!(slow.rows.len(), 5);
    for row in &slow.rows {
        number(row, 2);
        let Cell::Text(pair) = &row[5] else {
            panic!("{row:?}")
        };
        assert!(pair.contains(" vs "), "{pair}");
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
