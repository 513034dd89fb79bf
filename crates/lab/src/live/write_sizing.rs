//! "Write sizing from TCP_INFO saves a round trip" (Kazuho Oku, H2O) with
//! kernel TCP: at the seed's 250 ms RTT a client asks for a 1 MB page and,
//! when its first byte arrives, for a 2 KB urgent script; the server sends
//! the urgent response ahead of the page's remaining bytes
//! (`brisk_live::recipes::write_sizing`, three fetches per setting,
//! medians). By default the kernel already holds about another window of
//! the page, so the script waits a round trip more; sized writes keep only
//! the window plus two segments in the kernel.
//!
//! Checks, in RTTs of the scenario's base round trip (250 ms):
//! - default writes: the script **≥ 1.6 RTT** after its request (the
//!   seed: 511 ms, 2 RTT; how much more depends on how far the kernel's
//!   send-buffer autotuning ran ahead of the window, 2 to 3 RTT here);
//! - sized writes: **0.96 to 1.44 RTT** (the seed: 250 ms, 1 RTT; a
//!   request and response cannot take less than one);
//! - the saving **≥ 0.6 RTT** (the seed: about one).

use super::{base_rtt_ms, before_after, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::numbers::{Measured, Numbers};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::write_sizing::{self, SizingExperiment};
use brisk_sim::scenario::Scenario;

pub struct WriteSizing;

const ID: &str = "write-sizing";
const BEFORE: &str = "baseline";
const AFTER: &str = "sized";

impl Section for WriteSizing {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Write sizing from TCP_INFO at 250 ms RTT (kernel TCP)"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Oku,
            text: "When the RTT is long and the window small, a server that writes only what \
                   the congestion window can send now (cwnd minus unacked, plus two \
                   segments, read from TCP_INFO) lets a high-priority response overtake a \
                   large one: a small script behind a large page, Ireland to Tokyo at \
                   250 ms RTT, arrived in 250 ms instead of 511 ms (1 RTT instead of 2).",
            scope: "Real Linux TCP (CUBIC) in network namespaces through the live lab's \
                    router: 125 ms each way, 20 Mbit/s, a deep FIFO (the window, not the \
                    link, limits the page). brisk-tcp's server with H2O's defaults \
                    (min RTT 50 ms, max cwnd 65 535 bytes, additional delay 0.1). The \
                    script is requested when the page's first byte arrives; its time runs \
                    from its request to its last byte. Medians of three fetches; \
                    wall-clock numbers that vary a little between runs.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[BEFORE, AFTER]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (before, after) = (runs.get(BEFORE)?, runs.get(AFTER)?);
        let rtt = base_rtt_ms(&after.scenario);
        let b = before.numbers::<SizingNumbers>()?.small_complete_ms;
        let a = after.numbers::<SizingNumbers>()?.small_complete_ms;
        let checks = vec![
            Check::new(
                "default writes: urgent response, in RTTs",
                "511 ms at 250 ms RTT: 2 RTT",
                b / rtt,
                "RTT",
                Bound::AtLeast(1.6),
            )
            .decimals(2),
            Check::new(
                "sized writes: urgent response, in RTTs",
                "250 ms at 250 ms RTT: 1 RTT",
                a / rtt,
                "RTT",
                Bound::Within {
                    low: 0.96,
                    high: 1.44,
                },
            )
            .decimals(2),
            Check::new(
                "saving, in RTTs",
                "about one RTT",
                (b - a) / rtt,
                "RTT",
                Bound::AtLeast(0.6),
            )
            .decimals(2),
        ];
        let row = |label: &str, r: &ScenarioRun| -> Result<Vec<Cell>, SectionError> {
            let n: SizingNumbers = r.numbers()?;
            let runs: Vec<String> = n.small_runs_ms.iter().map(|v| format!("{v:.0}")).collect();
            Ok(vec![
                Cell::text(label),
                Cell::num(n.small_complete_ms, "ms", 0),
                Cell::text(format!("{} ms", runs.join(", "))),
                Cell::num(n.waited_behind_bytes / 1000.0, "kB", 1),
                Cell::num(n.large_complete_ms, "ms", 0),
                Cell::num(n.rtt_ms, "ms", 0),
            ])
        };
        let table = Table {
            caption: "The urgent response's time from its request (median and each fetch), \
                      the page bytes that arrived while it was pending, the page's own time \
                      and the client's smoothed RTT"
                .into(),
            columns: [
                "server writes",
                "urgent response",
                "each fetch",
                "page bytes ahead",
                "page complete",
                "smoothed RTT",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![row("default", before)?, row("sized (H2O)", after)?],
        };
        let plots = vec![before_after(
            "Urgent response behind a large one at 250 ms RTT",
            "Bars: time from the urgent request to its last byte, with the seed's numbers \
             beside the measured ones (511 ms and 250 ms).",
            ("time", "ms"),
            &["default writes", "sized writes"],
            vec![
                ("measured", vec![b, a]),
                ("H2O (Oku 2016)", vec![511.0, 250.0]),
            ],
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

/// What one run measured: the urgent response behind the page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SizingNumbers {
    /// The urgent response's time from its request, median of the fetches.
    small_complete_ms: f64,
    /// The same, per fetch in order (kept as `small_run_<i>_ms`).
    small_runs_ms: Vec<f64>,
    /// Page bytes that arrived while the urgent response was pending.
    waited_behind_bytes: f64,
    large_complete_ms: f64,
    /// The client's smoothed RTT.
    rtt_ms: f64,
}

impl Numbers for SizingNumbers {
    fn write(&self, prefix: &str, into: &mut Measured) {
        let fixed = [
            ("small_complete_ms", self.small_complete_ms),
            ("waited_behind_bytes", self.waited_behind_bytes),
            ("large_complete_ms", self.large_complete_ms),
            ("rtt_ms", self.rtt_ms),
        ];
        for (k, v) in fixed {
            into.insert(format!("{prefix}{k}"), v);
        }
        for (i, v) in self.small_runs_ms.iter().enumerate() {
            into.insert(format!("{prefix}small_run_{i}_ms"), *v);
        }
    }

    fn read(prefix: &str, from: &Measured) -> Result<Self, String> {
        let get = |k: &str| {
            let key = format!("{prefix}{k}");
            from.get(&key).copied().ok_or(key)
        };
        Ok(SizingNumbers {
            small_complete_ms: get("small_complete_ms")?,
            small_runs_ms: (0..)
                .map_while(|i| get(&format!("small_run_{i}_ms")).ok())
                .collect(),
            waited_behind_bytes: get("waited_behind_bytes")?,
            large_complete_ms: get("large_complete_ms")?,
            rtt_ms: get("rtt_ms")?,
        })
    }
}

impl LiveExperiment for WriteSizing {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        let sizing = match stem {
            BEFORE => false,
            AFTER => true,
            other => return Err(unknown_stem(ID, other)),
        };
        let exp = SizingExperiment::seed(sizing);
        let (run, o) = in_lab(scenario, IpMode::V4, capture, |lab| {
            write_sizing::run(lab, &exp)
        })?;
        Ok(with_numbers(
            run,
            &SizingNumbers {
                small_complete_ms: o.small_complete_ms,
                small_runs_ms: o.small_complete_runs_ms.clone(),
                waited_behind_bytes: o.waited_behind_bytes,
                large_complete_ms: o.large_complete_ms,
                rtt_ms: o.rtt_ms,
            },
        ))
    }
}
