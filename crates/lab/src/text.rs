//! The summary table `brisk lab` prints: one block per section with its
//! verdict and every check (claims first, then setup checks, marked),
//! aligned for a terminal.

use crate::report::Report;
use crate::verdict::{claims_line, setup_line};
use std::fmt::Write as _;

/// Display width of a string (every char counts one column; the report's
/// text has no wide characters).
fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

/// The summary, ending with a newline.
pub fn summary(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} (suite {}, random seed {}, IP {}{})",
        r.title,
        r.location,
        r.seed,
        r.ip,
        if r.quick { ", quick" } else { "" }
    );
    let name_w = r
        .sections
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| width(&c.name) + 2))
        .chain(r.sections.iter().map(|s| width(s.title)))
        .max()
        .unwrap_or(0);
    let measured_w = r
        .sections
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| width(&c.measured_text())))
        .max()
        .unwrap_or(0);
    let bound_w = r
        .sections
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| width(&c.bound_text())))
        .max()
        .unwrap_or(0);
    for s in &r.sections {
        let mut head = format!(
            "\n{}  {}  {}",
            pad(&s.verdict.name().to_uppercase(), 7),
            pad(s.title, name_w),
            claims_line(&s.checks)
        );
        if s.checks.iter().any(|c| !c.is_claim()) {
            head.push_str(&format!(" (and {})", setup_line(&s.checks)));
        }
        let _ = writeln!(out, "{head}");
        // Claims first, then the setup checks, marked as such.
        let ordered = s
            .checks
            .iter()
            .filter(|c| c.is_claim())
            .chain(s.checks.iter().filter(|c| !c.is_claim()));
        for c in ordered {
            let _ = writeln!(
                out,
                "{}    {}  {}  needs {}  {}{}",
                " ".repeat(7),
                pad(&c.name, name_w.saturating_sub(2)),
                pad_left(&c.measured_text(), measured_w),
                pad(&c.bound_text(), bound_w),
                if c.passed { "met" } else { "MISSED" },
                if c.is_claim() { "" } else { " (setup)" }
            );
        }
    }
    let _ = writeln!(
        out,
        "\nsections: {} pass, {} partial, {} fail",
        r.totals.pass, r.totals.partial, r.totals.fail
    );
    out
}
