//! The reference UDP Prague peer in the "L4S where it usually breaks"
//! section (built with the `reference-prague` feature): every row gets
//! the reference controller's figure from its twin run, a number, not the
//! reason it is missing.
#![cfg(feature = "reference-prague")]

use brisk_lab::runner::RunConfig;
use brisk_lab::section::Cell;
use brisk_lab::suite::Suite;

#[test]
fn every_case_gets_the_reference_figure_beside_brisk() {
    let mut suite = Suite::embedded("default").unwrap();
    suite.sections.retain(|s| s.section.id() == "l4s-breaks");
    assert_eq!(suite.sections.len(), 1);
    let config = RunConfig {
        quick: true,
        jobs: 2,
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).unwrap();
    let section = &lab.report.sections[0];
    let table = &section.tables[0];
    let column = table
        .columns
        .iter()
        .position(|c| c.starts_with("reference"))
        .unwrap();
    for row in &table.rows {
        let line: Vec<String> = row.iter().map(Cell::display).collect();
        eprintln!("{}", line.join(" | "));
        assert!(
            matches!(row[column], Cell::Number { value, .. } if value.is_finite()),
            "{line:?}"
        );
    }
    // The slow-link rows: the reference keeps a default DualPI2 link busy.
    let alone_10 = &table.rows[1];
    assert!(matches!(alone_10[column], Cell::Number { value, .. } if value > 50.0));
}
