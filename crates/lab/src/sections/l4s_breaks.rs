//! "L4S where it usually breaks": the cases public L4S tests found Prague
//! failing, replayed through Linux's default DualPI2 (1 ms step, 10%
//! classic protection) and a classic-ECN FQ-CoDel, with Brisk's Prague:
//!
//! - slow links, 4 to 100 Mbit/s at 20 ms base RTT, Prague alone (goal:
//!   the link at least 95% busy) and beside a CUBIC download (goal:
//!   Prague's goodput within 0.67 to 1.5 times CUBIC's), and beside a BBR
//!   download (reported, no goal);
//! - two Prague downloads at 10 and 160 ms base RTT (goal: the shorter
//!   takes at most twice the longer's goodput);
//! - a Wi-Fi-like link sending in 4 ms bursts (goal: 90% busy);
//! - a classic-ECN FQ-CoDel whose rate drops from 50 to 1 Mbit/s, with and
//!   without a hop rewriting ECT(1) to ECT(0) (goal: the RTT back within
//!   100 ms of the base no later than 2 s after the drop).
//!
//! Rates are measured over the second half of each run, as the
//! simulator's L4S tests measure them (`crates/sim/tests/l4s_*.rs`), so
//! both report the same steady state. The runs beside CUBIC last 40 s:
//! DualPI2 marks the classic flow so rarely that CUBIC cuts only a few
//! times per 10 s, and a 10 s second half left the ratio outside 0.67-1.5
//! on some seeds where a 20 s one held it on all. The 160 ms flow of the
//! RTT pair needs about 10 s to converge, so that run lasts 20 s, as do
//! the rest. The runs beside CUBIC and the RTT pair keep their length
//! under `brisk lab --quick`; the rest are cut to its 10 s, whose second
//! half is already past slow start. Setup checks flag runs shorter than
//! that rather than reading them as Prague's result.
//!
//! Every row shows three figures: the one published (or, for the slow-link
//! rows, Brisk's own before its Prague was reworked), the reference UDP
//! Prague controller's in the same network (the `udp_prague` crate, only
//! when the lab is built with the `reference-prague` feature; see
//! [`super::reference_peer`]) and Brisk's. Verdicts are computed from the
//! measurements of the run, whatever Brisk's Prague does.

use super::reference_peer::{self, Twin};
use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::RateModel;
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, bar_chart, line_chart};
use std::time::Duration;

pub struct L4sBreaks;

const PRAGUE: &str = "prague";
const CUBIC: &str = "cubic";
const BBR: &str = "bbr";
const SHORT: &str = "prague-10ms";
const LONG: &str = "prague-160ms";

/// Link rates of the slow-link rows, in Mbit/s.
const RATES: [u32; 5] = [4, 10, 25, 50, 100];
/// Brisk's Prague alone before its rework, utilization in percent, per
/// rate of [`RATES`] (`brisk sim`, same networks, 20 s).
const BEFORE_ALONE_PERCENT: [f64; 5] = [33.0, 28.0, 84.0, 95.0, 97.0];
/// Brisk's Prague beside CUBIC before its rework: (Prague, CUBIC) goodput
/// in Mbit/s, per rate of [`RATES`].
const BEFORE_BESIDE_CUBIC_MBPS: [(f64, f64); 5] = [
    (0.81, 2.99),
    (1.16, 8.33),
    (9.65, 14.20),
    (28.9, 18.7),
    (55.1, 40.1),
];

const ALONE_MIN_PERCENT: f64 = 95.0;
const SHARE_LOW: f64 = 0.67;
const SHARE_HIGH: f64 = 1.5;
/// Published: two Prague flows at 10 and 160 ms split worse than 16:1.
const PUBLISHED_RTT_RATIO: f64 = 16.0;
const RTT_RATIO_MAX: f64 = 2.0;
/// Published: 4 ms bursts cost about half the utilization.
const PUBLISHED_BURSTS_PERCENT: f64 = 50.0;
const BURSTS_MIN_PERCENT: f64 = 90.0;
/// Published: RTTs of 4.3 s, for more than 30 s, after the rate drop.
const PUBLISHED_STEP_RECOVERY_S: f64 = 30.0;
const STEP_RECOVERY_MAX_S: f64 = 2.0;
/// The shortest run beside CUBIC: CUBIC's window follows a handful of
/// marks (3-6 cuts per 10 s at 100 Mbit/s), so the ratio needs a 20 s
/// second half to average them (at 50 and 100 Mbit/s over seeds 1-16, a
/// 10 s one read 0.68-1.68, a 20 s one 0.78-1.50).
const CUBIC_RUN_S: f64 = 40.0;
/// The shortest run of the RTT pair: its 160 ms flow takes about 10 s to
/// converge (in 10 s runs it showed 3.9:1 where 20 s runs show 1.7:1).
const RTT_PAIR_RUN_S: f64 = 20.0;
/// The shortest run for the other cases: their second half starts after
/// slow start and the first cuts.
const SHORT_RUN_S: f64 = 10.0;
/// The runs whose second half is a steady state only at full length; they
/// keep it under `--quick`.
const SLOW_TO_CONVERGE: [&str; 6] = [
    "cubic-4",
    "cubic-10",
    "cubic-25",
    "cubic-50",
    "cubic-100",
    "rtt-10-160",
];
/// How far above the base RTT counts as recovered.
const STEP_RTT_MARGIN_MS: f64 = 100.0;

const STEP_CASES: [(&str, &str); 2] = [
    ("classic-drop", "classic FQ-CoDel, 50 → 1 Mbit/s"),
    (
        "classic-drop-ect0",
        "classic FQ-CoDel, 50 → 1 Mbit/s, ECT(1) rewritten to ECT(0)",
    ),
];

impl Section for L4sBreaks {
    fn id(&self) -> &'static str {
        "l4s-breaks"
    }

    fn title(&self) -> &'static str {
        "L4S where it usually breaks"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::L4sTests,
            text: "Public tests of TCP Prague found it taking more than twice CUBIC's share \
                   at equal RTT, two Prague flows at 10 and 160 ms RTT splitting worse than \
                   16:1, 4 ms Wi-Fi-like bursts costing about half the utilization, and, \
                   through a classic-ECN FQ-CoDel whose rate fell from 50 to 1 Mbit/s, \
                   round trips of 4.3 s for more than 30 s. Before its rework Brisk's own \
                   Prague also left slow DualPI2 links two-thirds idle (33% busy at \
                   4 Mbit/s). The goals: 95% busy alone, 0.67 to 1.5 times CUBIC's share, \
                   at most 2:1 between RTTs, 90% busy with 4 ms bursts, and the RTT back \
                   within 100 ms of the base within 2 s of the rate drop. Shares beside \
                   CUBIC are read over the second half of 40 s runs: DualPI2 marks CUBIC \
                   so rarely that a shorter span samples too few of its cuts.",
            scope: "Brisk's Prague over its own transport in the simulator; CUBIC is Brisk's \
                    CUBIC, not the kernel's. DualPI2 runs Linux's defaults. The bursts are \
                    the simulator's model of an aggregating radio (a transmit opportunity \
                    every 4 ± 1 ms), not a measured Wi-Fi trace. As in Linux Wi-Fi, the \
                    wait for the next opportunity happens in a driver queue below DualPI2 \
                    (at most 12 ms of air time, Linux's default airtime queue limit), so DualPI2 sees only its own sojourn \
                    time. The reference column runs \
                    the udp_prague crate's controller (a port of the L4S team's UDP Prague) \
                    in the same networks, when the lab is built with it.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[
            "alone-4",
            "alone-10",
            "alone-25",
            "alone-50",
            "alone-100",
            "cubic-4",
            "cubic-10",
            "cubic-25",
            "cubic-50",
            "cubic-100",
            "bbr-4",
            "bbr-10",
            "bbr-25",
            "bbr-50",
            "bbr-100",
            "rtt-10-160",
            "bursts-4ms",
            "classic-drop",
            "classic-drop-ect0",
        ]
    }

    /// The runs whose shares need their full length keep it under
    /// `--quick`: cut to 10 s, the 10/160 ms pair read 3.9:1 and Prague
    /// beside CUBIC at 4 Mbit/s was still climbing; beside CUBIC a 5 s
    /// second half samples even fewer of CUBIC's cuts than 10 s.
    fn full_length_under_quick(&self) -> &'static [&'static str] {
        &SLOW_TO_CONVERGE
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        // The shortest run, in seconds, of the scenarios `pick` keeps (the
        // rate-drop cases are timed from their drop, not halved).
        let shortest = |pick: &dyn Fn(&str) -> bool| -> Result<f64, SectionError> {
            Ok(self
                .scenarios()
                .iter()
                .filter(|stem| !stem.starts_with("classic-drop") && pick(stem))
                .map(|stem| runs.get(stem).map(|r| r.scenario.duration.as_secs_f64()))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .fold(f64::INFINITY, f64::min))
        };
        let mut checks = vec![
            Check::new(
                "Shortest run beside CUBIC, rates measured over its second half",
                "long enough to average CUBIC's few cuts",
                shortest(&|stem| stem.starts_with("cubic-"))?,
                "s",
                Bound::AtLeast(CUBIC_RUN_S),
            )
            .decimals(0)
            .setup(),
            Check::new(
                "Run of the 10/160 ms pair",
                "long enough for the 160 ms flow to converge",
                shortest(&|stem| stem == "rtt-10-160")?,
                "s",
                Bound::AtLeast(RTT_PAIR_RUN_S),
            )
            .decimals(0)
            .setup(),
            Check::new(
                "Shortest of the other runs, rates measured over its second half",
                "second half past slow start",
                shortest(&|stem| !SLOW_TO_CONVERGE.contains(&stem))?,
                "s",
                Bound::AtLeast(SHORT_RUN_S),
            )
            .decimals(0)
            .setup(),
        ];
        let mut rows = Vec::new();
        let mut bars = [Vec::new(), Vec::new(), Vec::new()];
        // The slow-link table, one row per rate: link busy alone and the
        // two rates beside CUBIC, before, reference and Brisk.
        let mut slow_rows: Vec<Vec<Cell>> = Vec::new();

        for (i, rate) in RATES.iter().enumerate() {
            let run = runs.get(&format!("alone-{rate}"))?;
            let twin = reference_peer::twin(run);
            let brisk = utilization_percent(run)?;
            let reference = twin.value(utilization_percent)?;
            let case = format!("Prague alone, {rate} Mbit/s: link busy");
            checks.push(Check::new(
                &case,
                "at least 95% (before: a third at 4 Mbit/s)",
                brisk,
                "%",
                Bound::AtLeast(ALONE_MIN_PERCENT),
            ));
            rows.push(row(
                &case,
                BEFORE_ALONE_PERCENT[i],
                &reference,
                brisk,
                "%",
                1,
                "≥ 95%",
            ));
            slow_rows.push(vec![
                Cell::text(format!("{rate} Mbit/s")),
                Cell::num(BEFORE_ALONE_PERCENT[i], "%", 0),
                value_cell(&reference, "%", 1),
                Cell::num(brisk, "%", 1),
            ]);
            bars[0].push(BEFORE_ALONE_PERCENT[i]);
            bars[1].push(reference.number());
            bars[2].push(brisk);
        }

        for (i, rate) in RATES.iter().enumerate() {
            let run = runs.get(&format!("cubic-{rate}"))?;
            let twin = reference_peer::twin(run);
            let brisk = share(run, PRAGUE, CUBIC)?;
            let reference = twin.value(|r| share(r, PRAGUE, CUBIC))?;
            let (p, c) = BEFORE_BESIDE_CUBIC_MBPS[i];
            slow_rows[i].push(Cell::text(format!("{p:.2} vs {c:.2}")));
            slow_rows[i].push(match &twin {
                Twin::Ran(r) => Cell::text(pair(r, CUBIC)?),
                _ => value_cell(&reference, "", 2),
            });
            slow_rows[i].push(Cell::text(pair(run, CUBIC)?));
            let case = format!("Prague beside CUBIC, {rate} Mbit/s: goodput ratio");
            checks.push(
                Check::new(
                    &case,
                    "within 0.67 to 1.5 (published: over 2)",
                    brisk,
                    "",
                    Bound::Within {
                        low: SHARE_LOW,
                        high: SHARE_HIGH,
                    },
                )
                .decimals(2),
            );
            rows.push(row(&case, p / c, &reference, brisk, "", 2, "0.67 to 1.5"));
        }

        // Beside BBR: reported in the slow-link table, no goal (BBR keeps
        // its own queue on the classic side and does not slow down for
        // DualPI2's drops; docs/PROTOCOL.md).
        for (i, rate) in RATES.iter().enumerate() {
            let run = runs.get(&format!("bbr-{rate}"))?;
            let twin = reference_peer::twin(run);
            slow_rows[i].push(match &twin {
                Twin::Ran(r) => Cell::text(pair(r, BBR)?),
                other => value_cell(&other.value(|r| share(r, PRAGUE, BBR))?, "", 2),
            });
            slow_rows[i].push(Cell::text(pair(run, BBR)?));
        }

        let run = runs.get("rtt-10-160")?;
        let twin = reference_peer::twin(run);
        let brisk = share(run, SHORT, LONG)?;
        let reference = twin.value(|r| share(r, SHORT, LONG))?;
        let case = "Two Prague flows, 10 ms and 160 ms: goodput ratio";
        checks.push(
            Check::new(
                case,
                "at most 2 (published: worse than 16)",
                brisk,
                "",
                Bound::AtMost(RTT_RATIO_MAX),
            )
            .decimals(2),
        );
        rows.push(row(
            case,
            PUBLISHED_RTT_RATIO,
            &reference,
            brisk,
            "",
            2,
            "≤ 2",
        ));

        let run = runs.get("bursts-4ms")?;
        let twin = reference_peer::twin(run);
        let brisk = utilization_percent(run)?;
        let reference = twin.value(utilization_percent)?;
        let case = "Prague alone, 50 Mbit/s in 4 ms bursts: link busy";
        checks.push(Check::new(
            case,
            "at least 90% (published: about half)",
            brisk,
            "%",
            Bound::AtLeast(BURSTS_MIN_PERCENT),
        ));
        rows.push(row(
            case,
            PUBLISHED_BURSTS_PERCENT,
            &reference,
            brisk,
            "%",
            1,
            "≥ 90%",
        ));

        let mut rtt_lines = Vec::new();
        for (stem, label) in STEP_CASES {
            let run = runs.get(stem)?;
            let twin = reference_peer::twin(run);
            let brisk = recovery_s(run)?;
            let reference = twin.value(recovery_s)?;
            let case = format!("{label}: RTT back within 100 ms of base");
            checks.push(
                Check::new(
                    &case,
                    "within 2 s of the drop (published: over 30 s at 4.3 s)",
                    brisk,
                    "s",
                    Bound::AtMost(STEP_RECOVERY_MAX_S),
                )
                .decimals(2),
            );
            rows.push(row(
                &case,
                PUBLISHED_STEP_RECOVERY_S,
                &reference,
                brisk,
                "s",
                2,
                "≤ 2 s",
            ));
            rtt_lines.push(run.rtt_series(PRAGUE, &format!("Brisk: {label}"))?);
            if let Twin::Ran(r) = &twin {
                rtt_lines.push(r.rtt_series(PRAGUE, &format!("reference: {label}"))?);
            }
        }

        let reference_note = match reference_peer::unavailable() {
            Some(why) => format!(" The reference column is empty: {why}."),
            None => String::new(),
        };
        let table = Table {
            caption: format!(
                "Each case: the published figure (slow-link rows: Brisk before its Prague \
                 rework), the reference UDP Prague controller in the same network, and \
                 Brisk. Link busy is Prague's delivered rate over the link rate and ratios \
                 are the first flow's delivered rate over the second's, both over the \
                 second half of the run; recovery counts from the rate drop to the last \
                 RTT sample more than 100 ms above the base.{reference_note}"
            ),
            columns: [
                "case",
                "published / before",
                "reference udp_prague",
                "Brisk",
                "goal",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let slow_table = Table {
            caption: format!(
                "The slow links, 20 ms base RTT: Prague alone (link busy), Prague beside a \
                 CUBIC download and beside a BBR download (each one's delivered rate in \
                 Mbit/s, Prague first), over the second half of the run (40 s beside \
                 CUBIC); before, the \
                 reference UDP Prague controller and Brisk. No goal is set beside BBR, which \
                 does not slow down for DualPI2's drops.{reference_note}"
            ),
            columns: [
                "link",
                "alone: before",
                "alone: reference udp_prague",
                "alone: Brisk",
                "beside CUBIC: before (Mbit/s)",
                "beside CUBIC: reference udp_prague (Mbit/s)",
                "beside CUBIC: Brisk (Mbit/s)",
                "beside BBR: reference udp_prague (Mbit/s)",
                "beside BBR: Brisk (Mbit/s)",
            ]
            .map(String::from)
            .to_vec(),
            rows: slow_rows,
        };

        let categories: Vec<String> = RATES.iter().map(|r| format!("{r} Mbit/s")).collect();
        let [before, reference, brisk] = bars;
        let mut series = vec![BarSeries::new("before the rework", before)];
        if reference.iter().any(|v| v.is_finite()) {
            series.push(BarSeries::new("reference udp_prague", reference));
        }
        series.push(BarSeries::new("Brisk", brisk));
        let plots = vec![
            plot(
                "Prague alone through default DualPI2: link busy",
                "Prague's delivered rate over the link rate in the second half of the run, \
                 one Prague download at 20 ms base RTT; the dashed line is the 95% goal.",
                || {
                    bar_chart(
                        &Frame::new(
                            "Prague alone through default DualPI2: link busy",
                            Axis::new("link rate", ""),
                            Axis::new("link busy", "%"),
                        ),
                        &BarChart {
                            categories: categories.clone(),
                            series,
                            reference: Some(BarSeries::new(
                                "goal",
                                vec![ALONE_MIN_PERCENT; RATES.len()],
                            )),
                        },
                    )
                },
            )?,
            plot(
                "RTT through a classic FQ-CoDel whose rate drops to 1 Mbit/s",
                "Every RTT sample of the Prague download; the rate falls from 50 to \
                 1 Mbit/s at 4 s.",
                || {
                    line_chart(
                        &Frame::new(
                            "RTT through a classic FQ-CoDel whose rate drops to 1 Mbit/s",
                            Axis::new("time", "s"),
                            Axis::new("RTT", "ms"),
                        ),
                        &rtt_lines,
                    )
                },
            )?,
        ];
        Ok(Findings {
            checks,
            tables: vec![table, slow_table],
            plots,
        })
    }
}

/// Prague's and `other`'s delivered rates over the steady window, in
/// Mbit/s, as "P vs O".
fn pair(run: &ScenarioRun, other: &str) -> Result<String, SectionError> {
    Ok(format!(
        "{:.2} vs {:.2}",
        steady_bps(run, PRAGUE)? / 1e6,
        steady_bps(run, other)? / 1e6
    ))
}

/// One table row: case, the published or earlier figure, the reference's,
/// Brisk's and the goal.
fn row(
    case: &str,
    published: f64,
    reference: &Value,
    brisk: f64,
    unit: &'static str,
    decimals: usize,
    goal: &str,
) -> Vec<Cell> {
    vec![
        Cell::text(case),
        Cell::num(published, unit, decimals),
        value_cell(reference, unit, decimals),
        Cell::num(brisk, unit, decimals),
        Cell::text(goal),
    ]
}

/// A reference figure as a cell: the number, or why there is none.
fn value_cell(value: &Value, unit: &'static str, decimals: usize) -> Cell {
    match value {
        Value::Measured(v) => Cell::num(*v, unit, decimals),
        Value::Missing(why) => Cell::text(why),
    }
}

/// A figure of the reference column: measured, or why there is none.
pub(crate) enum Value {
    Measured(f64),
    Missing(String),
}

impl Value {
    fn number(&self) -> f64 {
        match self {
            Value::Measured(v) => *v,
            Value::Missing(_) => f64::NAN,
        }
    }
}

impl Twin {
    /// `measure` applied to the twin's run, or why there is none.
    fn value(
        &self,
        measure: impl Fn(&ScenarioRun) -> Result<f64, SectionError>,
    ) -> Result<Value, SectionError> {
        Ok(match self {
            Twin::Ran(run) => Value::Measured(measure(run)?),
            Twin::NotBuilt => Value::Missing("not built".into()),
            Twin::Failed(why) => Value::Missing(format!("failed: {why}")),
        })
    }
}

/// The steady state the rates are measured over: the second half of the
/// run. Slow start, the first cuts and CUBIC's first epoch fall in the
/// first half; counted in, they decided the ratios of a 10 s run (0.78
/// beside CUBIC at 50 Mbit/s where a 20 s run's second half gives 1.31). The
/// simulator's L4S tests measure the same window.
fn steady_window(run: &ScenarioRun) -> (Duration, Duration) {
    let d = run.scenario.duration;
    (d / 2, d)
}

/// IP bits per second flow `name` delivered over the steady window.
fn steady_bps(run: &ScenarioRun, name: &str) -> Result<f64, SectionError> {
    let (from, to) = steady_window(run);
    let delivered = &run.series(name)?.delivered;
    let total_at = |t: Duration| {
        let t = brisk_time::Instant::ZERO + t;
        delivered
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map_or(0, |&(_, total)| total)
    };
    let bytes = total_at(to).saturating_sub(total_at(from));
    Ok(bytes as f64 * 8.0 / (to - from).as_secs_f64().max(1e-9))
}

/// Prague's delivered rate over the steady window as a share of the data
/// direction's constant rate, in percent. Delivered bytes rather than the
/// transmitter's busy time, so that a bursty link is measured like a
/// smooth one.
fn utilization_percent(run: &ScenarioRun) -> Result<f64, SectionError> {
    let bps = match &run.scenario.network.link.down.rate {
        RateModel::Constant { bps } => *bps as f64,
        _ => {
            return Err(SectionError::Unsuitable {
                scenario: run.path.clone(),
                message: "the down link's rate must be constant".into(),
            });
        }
    };
    Ok(steady_bps(run, PRAGUE)? / bps.max(1.0) * 100.0)
}

/// Flow `a`'s delivered rate over flow `b`'s, over the steady window.
fn share(run: &ScenarioRun, a: &str, b: &str) -> Result<f64, SectionError> {
    let (a, b) = (steady_bps(run, a)?, steady_bps(run, b)?);
    // A starved second flow shows as a very large ratio, not an infinite
    // one (results.json has no infinity).
    Ok(a / b.max(1e3))
}

/// Seconds from the rate drop to the last RTT sample more than
/// [`STEP_RTT_MARGIN_MS`] above the base RTT (0 if none was); the whole
/// rest of the run when its last sample is still above it.
fn recovery_s(run: &ScenarioRun) -> Result<f64, SectionError> {
    let drop = rate_drop(run)?;
    let limit = ms(run.base_rtt(PRAGUE)?) + STEP_RTT_MARGIN_MS;
    let after: Vec<_> = run
        .series(PRAGUE)?
        .rtt
        .iter()
        .filter(|(at, _)| (*at - brisk_time::Instant::ZERO) >= drop)
        .collect();
    if after.last().is_some_and(|(_, rtt)| ms(*rtt) > limit) {
        return Ok(run.scenario.duration.saturating_sub(drop).as_secs_f64());
    }
    Ok(after
        .iter()
        .rev()
        .find(|(_, rtt)| ms(*rtt) > limit)
        .map_or(0.0, |(at, _)| {
            ((*at - brisk_time::Instant::ZERO) - drop).as_secs_f64()
        }))
}

/// When the data direction's rate schedule drops (its second step).
fn rate_drop(run: &ScenarioRun) -> Result<Duration, SectionError> {
    match &run.scenario.network.link.down.rate {
        RateModel::Schedule(s) if s.steps().len() >= 2 => Ok(s.steps()[1].at),
        _ => Err(SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: "the down link's rate must be a schedule that drops".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe named like the section's flow through a FIFO whose link
    /// rate drops at 2 s, beside `load` of constant traffic, as a run.
    fn stepped(load: &str) -> ScenarioRun {
        let text = format!(
            "duration = \"5s\"\n\
             [link.down]\nrate = {{ schedule = [[\"0s\", \"10Mbit\"], [\"2s\", \"1Mbit\"]] }}\n\
             delay = \"10ms\"\n[link.up]\ndelay = \"10ms\"\n\
             [[flows]]\nname = \"prague\"\nkind = \"ping\"\ninterval = \"10ms\"\n\
             [[flows]]\nname = \"load\"\nkind = \"cbr\"\nrate = \"{load}\"\n"
        );
        let scenario = brisk_sim::scenario::Scenario::parse(&text, "step.toml").unwrap();
        let done = brisk_sim::run(
            &scenario,
            brisk_sim::RunOptions {
                series: true,
                ..Default::default()
            },
        );
        ScenarioRun {
            stem: "step".into(),
            path: "step.toml".into(),
            series: done.outcome.series(),
            reports: done.outcome.reports(),
            scenario,
            results: done.results,
            measured: Default::default(),
        }
    }

    #[test]
    fn recovery_counts_from_the_drop_to_the_last_high_rtt() {
        // A light load fits 1 Mbit/s: the RTT never leaves the base.
        assert_eq!(recovery_s(&stepped("100kbit")).unwrap(), 0.0);
        // An unresponsive 2 Mbit/s load fills the FIFO and keeps it full:
        // not back by the end, so the whole rest of the run (3 s).
        assert_eq!(recovery_s(&stepped("2Mbit")).unwrap(), 3.0);
        // A run without a rate drop is refused with a reason.
        let mut flat = stepped("100kbit");
        flat.scenario.network.link.down.rate = RateModel::Constant { bps: 1_000_000 };
        assert!(matches!(
            recovery_s(&flat),
            Err(SectionError::Unsuitable { .. })
        ));
    }
}
