//! Verdicts: a claim is checked by comparing measured numbers against
//! stated thresholds, never by a sentence written by hand.
//!
//! A [`Check`] holds one measured number, what the seed says about it and
//! the [`Bound`] it must meet; [`Verdict::of`] folds a section's checks into
//! pass (all met), fail (none met) or partial (some met).

use serde::Serialize;
use std::fmt;

/// The range a measured number must fall in for its check to pass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    AtLeast(f64),
    AtMost(f64),
    /// Both ends included.
    Within {
        low: f64,
        high: f64,
    },
}

impl Bound {
    /// Whether `value` meets the bound; a non-finite value never does.
    pub fn holds(&self, value: f64) -> bool {
        value.is_finite()
            && match *self {
                Bound::AtLeast(low) => value >= low,
                Bound::AtMost(high) => value <= high,
                Bound::Within { low, high } => (low..=high).contains(&value),
            }
    }

    /// "≥ 100 ms", "≤ 15 ms", "200 to 240 ms".
    pub fn describe(&self, unit: &str, decimals: usize) -> String {
        let n = |v: f64| with_unit(v, unit, decimals);
        match *self {
            Bound::AtLeast(low) => format!("≥ {}", n(low)),
            Bound::AtMost(high) => format!("≤ {}", n(high)),
            Bound::Within { low, high } => {
                format!("{} to {}", fixed(low, decimals), n(high))
            }
        }
    }
}

/// `value` with `decimals` digits after the point; "n/a" when not finite.
pub fn fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        // Avoid "-0.0" for values that round to zero.
        let text = format!("{value:.decimals$}");
        if text
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            text.trim_start_matches('-').to_string()
        } else {
            text
        }
    } else {
        "n/a".to_string()
    }
}

/// "236.4 ms", "0.7%", "3"; no space before "%".
pub fn with_unit(value: f64, unit: &str, decimals: usize) -> String {
    let v = fixed(value, decimals);
    match unit {
        "" => v,
        "%" => format!("{v}%"),
        u => format!("{v} {u}"),
    }
}

/// One measured number checked against a threshold derived from a claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was measured, e.g. "FIFO: added RTT, median".
    pub name: String,
    /// What the seed says about it, in its terms.
    pub claimed: String,
    pub measured: f64,
    /// Unit of `measured` and of the bound.
    pub unit: String,
    pub bound: Bound,
    /// Digits shown after the point.
    #[serde(skip)]
    pub decimals: usize,
    /// Computed from `measured` and `bound` when the check is made.
    pub passed: bool,
}

impl Check {
    pub fn new(
        name: impl Into<String>,
        claimed: impl Into<String>,
        measured: f64,
        unit: &str,
        bound: Bound,
    ) -> Check {
        Check {
            name: name.into(),
            claimed: claimed.into(),
            measured,
            unit: unit.to_string(),
            bound,
            decimals: 1,
            passed: bound.holds(measured),
        }
    }

    /// Shows `decimals` digits after the point (default 1).
    pub fn decimals(mut self, decimals: usize) -> Check {
        self.decimals = decimals;
        self
    }

    pub fn measured_text(&self) -> String {
        with_unit(self.measured, &self.unit, self.decimals)
    }

    pub fn bound_text(&self) -> String {
        self.bound.describe(&self.unit, self.decimals)
    }
}

/// The outcome of a section: how many of its checks were met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Partial,
    Fail,
}

impl Verdict {
    /// Pass when every check is met, fail when none is (or there are no
    /// checks: nothing supports the claim), partial otherwise.
    pub fn of(checks: &[Check]) -> Verdict {
        let met = checks.iter().filter(|c| c.passed).count();
        if checks.is_empty() || met == 0 {
            Verdict::Fail
        } else if met == checks.len() {
            Verdict::Pass
        } else {
            Verdict::Partial
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Partial => "partial",
            Verdict::Fail => "fail",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The one-line verdict: how many checks were met and, for each one
/// missed, its number against its threshold.
pub fn verdict_line(checks: &[Check]) -> String {
    let met = checks.iter().filter(|c| c.passed).count();
    let verdict = Verdict::of(checks);
    let mut line = format!(
        "{}: {met} of {} checks met",
        verdict.name().to_uppercase(),
        checks.len()
    );
    let missed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            format!(
                "{} measured {}, needs {}",
                c.name,
                c.measured_text(),
                c.bound_text()
            )
        })
        .collect();
    if !missed.is_empty() {
        line.push_str("; missed: ");
        line.push_str(&missed.join("; "));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(measured: f64, bound: Bound) -> Check {
        Check::new("x", "seed", measured, "ms", bound)
    }

    #[test]
    fn bounds_include_their_ends_and_reject_non_finite() {
        assert!(Bound::AtLeast(100.0).holds(100.0));
        assert!(!Bound::AtLeast(100.0).holds(99.9));
        assert!(Bound::AtMost(15.0).holds(15.0));
        assert!(!Bound::AtMost(15.0).holds(15.01));
        let within = Bound::Within {
            low: 209.0,
            high: 231.0,
        };
        assert!(within.holds(209.0) && within.holds(231.0) && within.holds(220.0));
        assert!(!within.holds(208.9) && !within.holds(231.1));
        for b in [Bound::AtLeast(0.0), Bound::AtMost(1e9), within] {
            assert!(!b.holds(f64::NAN));
            assert!(!b.holds(f64::INFINITY));
        }
    }

    #[test]
    fn a_claim_met_passes_and_one_missed_fails() {
        // The bufferbloat claim: a deep FIFO adds hundreds of ms.
        let met = check(236.4, Bound::AtLeast(100.0));
        assert!(met.passed);
        assert_eq!(Verdict::of(std::slice::from_ref(&met)), Verdict::Pass);
        let missed = check(42.0, Bound::AtLeast(100.0));
        assert!(!missed.passed);
        assert_eq!(Verdict::of(std::slice::from_ref(&missed)), Verdict::Fail);
        assert_eq!(Verdict::of(&[met, missed]), Verdict::Partial);
        assert_eq!(Verdict::of(&[]), Verdict::Fail);
    }

    #[test]
    fn the_verdict_line_names_what_was_missed() {
        let checks = [
            check(236.4, Bound::AtLeast(100.0)),
            Check::new("CoDel added RTT", "short", 59.0, "ms", Bound::AtMost(15.0)),
        ];
        assert_eq!(
            verdict_line(&checks),
            "PARTIAL: 1 of 2 checks met; missed: CoDel added RTT measured 59.0 ms, needs ≤ 15.0 ms"
        );
        assert_eq!(verdict_line(&checks[..1]), "PASS: 1 of 1 checks met");
    }

    #[test]
    fn numbers_print_with_units_and_without_negative_zero() {
        assert_eq!(with_unit(0.7, "%", 2), "0.70%");
        assert_eq!(with_unit(-0.01, "ms", 1), "0.0 ms");
        assert_eq!(with_unit(f64::NAN, "ms", 1), "n/a ms");
        assert_eq!(with_unit(3.0, "", 0), "3");
        assert_eq!(
            Bound::Within {
                low: 0.29,
                high: 0.71
            }
            .describe("%", 2),
            "0.29 to 0.71%"
        );
    }
}
