//! Verdicts: a claim is checked by comparing measured numbers against
//! stated thresholds, never by a sentence written by hand.
//!
//! A [`Check`] holds one measured number, what the source says about it
//! and the [`Bound`] it must meet; [`Verdict::of`] folds a section's claim
//! checks into pass (all met), fail (none met) or partial (some met).
//!
//! A check is of one of two [`Kind`]s: a claim (a result the source
//! asserts, which the lab reproduces or not) or a setup check (the
//! scenario is what it says: a link's loss, a profile's base RTT). Setup
//! checks are shown apart and do not count toward the verdict: meeting
//! them shows the experiment is valid, not that the claim holds.

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

/// What a missing number prints as: a dash (tables explain it beside them).
pub const MISSING: &str = "–";

/// `value` with `decimals` digits after the point; [`MISSING`] when not
/// finite.
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
        MISSING.to_string()
    }
}

/// "236.4 ms", "0.7%", "3"; no space before "%"; a bare [`MISSING`] dash,
/// without the unit, when the value is not finite.
pub fn with_unit(value: f64, unit: &str, decimals: usize) -> String {
    if !value.is_finite() {
        return MISSING.to_string();
    }
    let v = fixed(value, decimals);
    match unit {
        "" => v,
        "%" => format!("{v}%"),
        u => format!("{v} {u}"),
    }
}

/// Whether a check tests the claim or only the experiment's setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A result the source asserts; counts toward the verdict.
    Claim,
    /// The scenario is what it says (its configured rate, loss or delay
    /// shows in the measurements); shown apart, not counted.
    Setup,
}

/// One measured number checked against a threshold derived from a claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was measured, e.g. "FIFO: added RTT, median".
    pub name: String,
    pub kind: Kind,
    /// What the source says about it, in its terms.
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
            kind: Kind::Claim,
            claimed: claimed.into(),
            measured,
            unit: unit.to_string(),
            bound,
            decimals: 1,
            passed: bound.holds(measured),
        }
    }

    /// Marks the check as a setup check: it confirms the scenario, not the
    /// claim, and does not count toward the verdict.
    pub fn setup(mut self) -> Check {
        self.kind = Kind::Setup;
        self
    }

    pub fn is_claim(&self) -> bool {
        self.kind == Kind::Claim
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
    /// Over the claim checks only (setup checks aside): pass when every
    /// one is met, fail when none is (or there are none: nothing supports
    /// the claim), partial otherwise.
    pub fn of(checks: &[Check]) -> Verdict {
        let (met, total) = claims_met(checks);
        if total == 0 || met == 0 {
            Verdict::Fail
        } else if met == total {
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

/// How many claim checks were met, and how many there are.
pub fn claims_met(checks: &[Check]) -> (usize, usize) {
    let claims = checks.iter().filter(|c| c.is_claim());
    let total = claims.clone().count();
    (claims.filter(|c| c.passed).count(), total)
}

/// How many setup checks were met, and how many there are.
pub fn setup_met(checks: &[Check]) -> (usize, usize) {
    let setup = checks.iter().filter(|c| !c.is_claim());
    let total = setup.clone().count();
    (setup.filter(|c| c.passed).count(), total)
}

/// "1 of 2 claims met" (singular for one).
pub fn claims_line(checks: &[Check]) -> String {
    let (met, total) = claims_met(checks);
    format!("{met} of {total} {} met", plural(total, "claim", "claims"))
}

/// "4 of 4 setup checks met" (singular for one).
pub fn setup_line(checks: &[Check]) -> String {
    let (met, total) = setup_met(checks);
    let what = plural(total, "setup check", "setup checks");
    format!("{met} of {total} {what} met")
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// The one-line verdict: how many claims were met and, for each check
/// missed, its number against its threshold; a setup check missed is named
/// too, as it puts the experiment in doubt.
pub fn verdict_line(checks: &[Check]) -> String {
    let verdict = Verdict::of(checks);
    let mut line = format!("{}: {}", verdict.name().to_uppercase(), claims_line(checks));
    let missed = |kind: Kind| -> Vec<String> {
        checks
            .iter()
            .filter(|c| !c.passed && c.kind == kind)
            .map(|c| {
                format!(
                    "{} measured {}, needs {}",
                    c.name,
                    c.measured_text(),
                    c.bound_text()
                )
            })
            .collect()
    };
    let claims = missed(Kind::Claim);
    if !claims.is_empty() {
        line.push_str("; missed: ");
        line.push_str(&claims.join("; "));
    }
    let setup = missed(Kind::Setup);
    if !setup.is_empty() {
        line.push_str("; setup not as intended: ");
        line.push_str(&setup.join("; "));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(measured: f64, bound: Bound) -> Check {
        Check::new("x", "the source", measured, "ms", bound)
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
            "PARTIAL: 1 of 2 claims met; missed: CoDel added RTT measured 59.0 ms, needs ≤ 15.0 ms"
        );
        assert_eq!(verdict_line(&checks[..1]), "PASS: 1 of 1 claim met");
    }

    /// A check that only confirms the configuration (the link's loss is
    /// what the file says) neither makes a claim pass nor fail; it is
    /// counted apart.
    #[test]
    fn setup_checks_do_not_count_toward_the_verdict() {
        let rate = || {
            Check::new(
                "link rate",
                "10 Mbit/s",
                10.0,
                "Mbit/s",
                Bound::AtLeast(9.5),
            )
        };
        let claim_missed = check(42.0, Bound::AtLeast(100.0));
        let checks = [rate().setup(), claim_missed.clone()];
        assert_eq!(checks[0].kind, Kind::Setup);
        assert_eq!(Verdict::of(&checks), Verdict::Fail);
        assert_eq!(claims_met(&checks), (0, 1));
        assert_eq!(setup_met(&checks), (1, 1));
        assert!(verdict_line(&checks).starts_with("FAIL: 0 of 1 claim met;"));
        // Setup checks alone support no claim.
        assert_eq!(Verdict::of(&[rate().setup()]), Verdict::Fail);
        // A missed setup check is named, apart from the claims.
        let wrong = Check::new("link rate", "10", 5.0, "Mbit/s", Bound::AtLeast(9.5)).setup();
        let line = verdict_line(&[wrong, check(236.4, Bound::AtLeast(100.0))]);
        assert_eq!(
            line,
            "PASS: 1 of 1 claim met; setup not as intended: link rate measured 5.0 Mbit/s, \
             needs ≥ 9.5 Mbit/s"
        );
        assert_eq!(setup_line(&checks), "1 of 1 setup check met");
        let json = serde_json::to_value(&checks[0]).unwrap();
        assert_eq!(json["kind"], "setup");
        assert_eq!(serde_json::to_value(&checks[1]).unwrap()["kind"], "claim");
    }

    #[test]
    fn numbers_print_with_units_and_without_negative_zero() {
        assert_eq!(with_unit(0.7, "%", 2), "0.70%");
        assert_eq!(with_unit(-0.01, "ms", 1), "0.0 ms");
        // A missing number is a bare dash: no "n/a ms", no "NaN%".
        assert_eq!(with_unit(f64::NAN, "ms", 1), "–");
        assert_eq!(with_unit(f64::NAN, "%", 0), "–");
        assert_eq!(with_unit(f64::INFINITY, "%", 0), "–");
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
