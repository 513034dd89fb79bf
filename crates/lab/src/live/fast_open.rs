//! "TCP Fast Open saves a round trip on repeat connections" (WWDC 2015)
//! with kernel TCP: a client fetches a 1 KB response on four fresh
//! connections in a row, at 100 ms RTT, with Fast Open off and on
//! (`brisk_live::recipes::fastopen`; `net.ipv4.tcp_fastopen = 3` in both
//! namespaces for the second). The first connection with Fast Open only
//! fetches the server's cookie; the next ones carry the request in the SYN.
//!
//! Checks, in RTTs of the scenario's base round trip:
//! - without Fast Open, repeat connections' first byte **1.8 to 2.6 RTT**
//!   after the start (handshake, then request);
//! - with Fast Open and a cookie **0.9 to 1.5 RTT** (the request rides the
//!   SYN, the answer follows the SYN-ACK);
//! - the saving **≥ 0.7 RTT** (the seed: one round trip);
//! - the server acknowledged the SYN's data on every repeat connection.

use super::{base_rtt_ms, before_after, flag, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::fastopen::{self, TfoExperiment};
use brisk_sim::scenario::Scenario;

pub struct FastOpen;

const ID: &str = "fast-open";
const BEFORE: &str = "tfo-off";
const AFTER: &str = "tfo-on";

impl Section for FastOpen {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "TCP Fast Open on repeat connections (kernel TCP)"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "TCP Fast Open sends the first request in the SYN of a repeat connection \
                   (with a cookie from an earlier one), so the response starts one round \
                   trip sooner; only idempotent requests may go early.",
            scope: "Real Linux TCP in network namespaces through the live lab's router, \
                    50 ms each way at 10 Mbit/s. brisk-tcp's client (sendto with \
                    MSG_FASTOPEN, the request marked idempotent) and server (TCP_FASTOPEN \
                    on the listener). Time to the first response byte from the start of \
                    each of four connections; repeat numbers are the median of the last \
                    three. Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[BEFORE, AFTER]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (off, on) = (runs.get(BEFORE)?, runs.get(AFTER)?);
        let rtt = base_rtt_ms(&on.scenario);
        let off_repeat = off.numbers::<FastOpenNumbers>()?.repeat_ms;
        let on_repeat = on.numbers::<FastOpenNumbers>()?.repeat_ms;
        let checks = vec![
            Check::new(
                "without Fast Open: repeat connection, first byte in RTTs",
                "handshake then request: 2 RTT",
                off_repeat / rtt,
                "RTT",
                Bound::Within {
                    low: 1.8,
                    high: 2.6,
                },
            )
            .decimals(2),
            Check::new(
                "with Fast Open: repeat connection, first byte in RTTs",
                "request in the SYN: 1 RTT",
                on_repeat / rtt,
                "RTT",
                Bound::Within {
                    low: 0.9,
                    high: 1.5,
                },
            )
            .decimals(2),
            Check::new(
                "saving, in RTTs",
                "one round trip",
                (off_repeat - on_repeat) / rtt,
                "RTT",
                Bound::AtLeast(0.7),
            )
            .decimals(2),
            Check::new(
                "repeat connections whose SYN data the server acknowledged",
                "the server takes the request from the SYN",
                on.numbers::<FastOpenNumbers>()?.repeat_syn_data_acked,
                "",
                Bound::AtLeast(1.0),
            )
            .decimals(0)
            .setup(),
        ];
        let row = |label: &str, r: &ScenarioRun| -> Result<Vec<Cell>, SectionError> {
            Ok(vec![
                Cell::text(label),
                Cell::num(r.numbers::<FastOpenNumbers>()?.first_ms, "ms", 0),
                Cell::num(r.numbers::<FastOpenNumbers>()?.repeat_ms, "ms", 0),
                Cell::num(r.numbers::<FastOpenNumbers>()?.repeat_syn_bytes, "B", 0),
                Cell::text(
                    if r.numbers::<FastOpenNumbers>()?.repeat_syn_data_acked >= 1.0 {
                        "yes"
                    } else {
                        "no"
                    },
                ),
            ])
        };
        let table = Table {
            caption: "Time to the first response byte from the start of the connection: the \
                      first connection, and the median of the three after it"
                .into(),
            columns: [
                "client",
                "first connection",
                "repeat connections",
                "request bytes in the SYN",
                "SYN data acknowledged",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![row("Fast Open off", off)?, row("Fast Open on", on)?],
        };
        let plots = vec![before_after(
            "Time to first byte, first and repeat connections",
            "Bars: from the start of a connection to the first response byte. With Fast \
             Open the first connection fetches a cookie; repeat ones save a round trip.",
            ("time to first byte", "ms"),
            &["first connection", "repeat connections"],
            vec![
                (
                    "Fast Open off",
                    vec![off.numbers::<FastOpenNumbers>()?.first_ms, off_repeat],
                ),
                (
                    "Fast Open on",
                    vec![on.numbers::<FastOpenNumbers>()?.first_ms, on_repeat],
                ),
            ],
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

crate::numbers! {
    /// What one run measured: the first and the repeat connection.
    pub(crate) struct FastOpenNumbers {
        first_ms,
        repeat_ms,
        /// Data bytes the repeat connection carried in its SYN.
        repeat_syn_bytes,
        /// 1 if the server acknowledged that data, else 0.
        repeat_syn_data_acked,
        rtt_ms,
    }
}

impl LiveExperiment for FastOpen {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        let on = match stem {
            BEFORE => false,
            AFTER => true,
            other => return Err(unknown_stem(ID, other)),
        };
        let exp = TfoExperiment::new(on);
        let (run, o) = in_lab(scenario, IpMode::V4, capture, |lab| {
            fastopen::run(lab, &exp)
        })?;
        let repeat_syn_bytes = o.connections.last().map_or(0, |c| c.syn_bytes);
        Ok(with_numbers(
            run,
            &FastOpenNumbers {
                first_ms: o.first_ms,
                repeat_ms: o.repeat_ms,
                repeat_syn_bytes: repeat_syn_bytes as f64,
                repeat_syn_data_acked: flag(o.repeat_syn_data_acked),
                rtt_ms: o.rtt_ms,
            },
        ))
    }
}
