//! "TCP is dead" (OK.ru): TCP's share of a 1 Mbit/s link collapses under
//! random loss, more so at a long RTT, while a sender that does not read
//! random loss as congestion keeps the link. Kernel TCP (CUBIC, BBR) and
//! Brisk (CUBIC, and BBR where this build of `brisk-proto` has it)
//! download one at a time through the live lab's link
//! (`brisk_live::recipes::loss`) on three of the slide's networks: 0% loss
//! at 20 ms, 5% at 20 ms and 5% at 220 ms base RTT, a 50-packet FIFO.
//!
//! Checks:
//! - 0% loss: kernel CUBIC **≥ 90%** of the link (the slide: 99%; a
//!   1500-byte packet carries at most 1448 payload bytes, 96.5%);
//! - 5% loss, 220 ms: kernel CUBIC **≤ 50%** (the slide: 45%; the Mathis
//!   model predicts 29%);
//! - 5% loss, 220 ms: Brisk BBR **≥ 70%**, and **≥ 2x** kernel CUBIC there
//!   (a build without BBR has no number and misses both).

use super::{before_after, constant_down_rate, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;

use brisk_live::recipes::loss::{self, LossExperiment};
use brisk_sim::scenario::Scenario;
use std::time::Duration;

pub struct LossGoodput;

const ID: &str = "loss-goodput";
const CLEAN: &str = "20ms-0pct";
const SHORT: &str = "20ms-5pct";
const LONG: &str = "220ms-5pct";
/// Each transfer's length; utilization counts it from the first byte.
const SECS: u64 = 10;
/// The senders, in table order, and the names of their numbers.
/// The senders, in the experiment's order: label and utilization.
type Sender = (&'static str, fn(&LossNumbers) -> f64);
const SENDERS: [Sender; 4] = [
    ("tcp cubic", |n| n.tcp_cubic_utilization),
    ("tcp bbr", |n| n.tcp_bbr_utilization),
    ("brisk cubic", |n| n.brisk_cubic_utilization),
    ("brisk bbr", |n| n.brisk_bbr_utilization),
];

crate::numbers! {
    /// What one run measured: each sender's goodput from its first byte
    /// over the link rate, 0..1 (NaN: the sender could not run here).
    pub(crate) struct LossNumbers {
        tcp_cubic_utilization,
        tcp_bbr_utilization,
        brisk_cubic_utilization,
        brisk_bbr_utilization,
    }
}

impl Section for LossGoodput {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Goodput under random loss: kernel TCP and Brisk on real sockets"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "TCP's utilization of the link collapses under random loss: 99% without \
                   loss, 74% with 5% loss at 20 ms RTT, 45% with 5% loss at 220 ms. A \
                   user-space protocol whose congestion control does not read random loss \
                   as congestion keeps the link.",
            scope: "One download at a time for 10 s through the live lab's router (1 Mbit/s, \
                    50-packet FIFO, random loss on the data direction): Linux TCP with CUBIC \
                    and BBR, Brisk on UDP sockets (brisk-io) with CUBIC and BBR. \
                    Utilization is the receiving application's goodput from its first byte \
                    divided by the link rate (start-up included). A controller this machine or \
                    build lacks shows no number.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[CLEAN, SHORT, LONG]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (clean, short, long) = (runs.get(CLEAN)?, runs.get(SHORT)?, runs.get(LONG)?);
        let pct = |r: &ScenarioRun, sender: fn(&LossNumbers) -> f64| -> Result<f64, SectionError> {
            Ok(sender(&r.numbers()?) * 100.0)
        };
        let long_cubic = pct(long, |n| n.tcp_cubic_utilization)?;
        let long_bbr = pct(long, |n| n.brisk_bbr_utilization)?;
        let checks = vec![
            Check::new(
                "0% loss, 20 ms: kernel CUBIC utilization",
                "99%",
                pct(clean, |n| n.tcp_cubic_utilization)?,
                "%",
                Bound::AtLeast(90.0),
            )
            .decimals(1),
            Check::new(
                "5% loss, 220 ms: kernel CUBIC utilization",
                "45% (collapse)",
                long_cubic,
                "%",
                Bound::AtMost(50.0),
            )
            .decimals(1),
            Check::new(
                "5% loss, 220 ms: Brisk BBR utilization",
                "keeps most of the link",
                long_bbr,
                "%",
                Bound::AtLeast(70.0),
            )
            .decimals(1),
            Check::new(
                "5% loss, 220 ms: Brisk BBR over kernel CUBIC",
                "several times CUBIC's",
                long_bbr / long_cubic,
                "x",
                Bound::AtLeast(2.0),
            )
            .decimals(2),
        ];
        let conditions = [
            ("0%, 20 ms", clean),
            ("5%, 20 ms", short),
            ("5%, 220 ms", long),
        ];
        let mut rows = Vec::new();
        let mut series = Vec::new();
        for (label, sender) in SENDERS {
            let values = conditions
                .iter()
                .map(|(_, r)| pct(r, sender))
                .collect::<Result<Vec<f64>, _>>()?;
            let mut row = vec![Cell::text(label)];
            row.extend(values.iter().map(|v| Cell::num(*v, "%", 1)));
            rows.push(row);
            series.push((label, values));
        }
        rows.insert(
            0,
            vec![
                Cell::text("OK.ru (talk slides)"),
                Cell::num(99.0, "%", 0),
                Cell::num(74.0, "%", 0),
                Cell::num(45.0, "%", 0),
            ],
        );
        let table = Table {
            caption: "Utilization (goodput over the 1 Mbit/s link rate) per sender and \
                      network; a missing number is a controller this machine or build lacks"
                .into(),
            columns: [
                "sender",
                "0% loss, 20 ms",
                "5% loss, 20 ms",
                "5% loss, 220 ms",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let plots = vec![before_after(
            "Utilization of a 1 Mbit/s link under random loss",
            "Bars: goodput over the link rate, one download at a time (OK.ru: 99%, \
             74%, 45% for TCP).",
            ("utilization", "%"),
            &conditions.map(|(label, _)| label),
            series,
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

impl LiveExperiment for LossGoodput {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if ![CLEAN, SHORT, LONG].contains(&stem) {
            return Err(unknown_stem(ID, stem));
        }
        let rate_bps = constant_down_rate(ID, scenario)?;
        let exp = LossExperiment::okru(Duration::from_secs(SECS));
        let (run, outcome) = in_lab(scenario, IpMode::V4, capture, |lab| {
            loss::run(lab, &exp, rate_bps)
        })?;
        // A sender that could not run has no utilization: NaN, which no
        // bound accepts. The transports are in `SENDERS`' order.
        let u = |i: usize| {
            exp.transports
                .get(i)
                .and_then(|t| outcome.utilization(t))
                .unwrap_or(f64::NAN)
        };
        Ok(with_numbers(
            run,
            &LossNumbers {
                tcp_cubic_utilization: u(0),
                tcp_bbr_utilization: u(1),
                brisk_cubic_utilization: u(2),
                brisk_bbr_utilization: u(3),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_senders_match_the_experiments_transports() {
        let exp = LossExperiment::okru(Duration::from_secs(1));
        let names: Vec<String> = exp.transports.iter().map(|t| t.to_string()).collect();
        let labels: Vec<&str> = SENDERS.iter().map(|(l, _)| *l).collect();
        assert_eq!(names, labels);
        assert_eq!(LossGoodput.scenarios(), &[CLEAN, SHORT, LONG]);
        let e = LossGoodput
            .run_live(
                "x",
                &Scenario::parse("duration = \"1s\"\n", "t.toml").unwrap(),
                false,
            )
            .unwrap_err();
        assert!(
            matches!(&e, LiveRunError::UnknownStem { section: ID, stem } if stem == "x"),
            "{e}"
        );
    }
}
