//! "NOTSENT_LOWAT keeps stale data out of the kernel" (WWDC 2015) with
//! kernel TCP: a sender with the seed's 120 KB send buffer keeps a bulk
//! stream going over the seed's 50 KB/s link and produces a 1 KB
//! interactive message every 200 ms on the same connection, written ahead
//! of any bulk unit (`brisk_live::recipes::lowat`). Without a mark each
//! message waits behind whatever fills the buffer; with a 16 KiB mark the
//! writer is woken only when less than that is unsent.
//!
//! Checks:
//! - default buffer: median message delay **1.5 to 3.5 s** (the seed:
//!   120 KB at 50 KB/s is about 2.5 s; what the kernel counts as the
//!   buffer holds a little less payload);
//! - 16 KiB mark: 99th percentile **≤ 0.7 s** (16 KiB unsent plus a few
//!   segments in flight drain in about 0.4 s at 50 KB/s);
//! - the mark's median over the default's **≤ 0.25**.

use super::{before_after, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::lowat::{self, LowatExperiment};
use brisk_sim::scenario::Scenario;

pub struct NotsentLowat;

const ID: &str = "notsent-lowat";
const BEFORE: &str = "default-buffer";
const AFTER: &str = "lowat-16k";
const MARK_BYTES: u32 = 16_384;

impl Section for NotsentLowat {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "NOTSENT_LOWAT: an interactive stream behind a bulk one (kernel TCP)"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "Data an app has handed to the kernel waits in the socket's send buffer: \
                   120 KB draining at 50 KB/s is about 2.5 s of delay for anything written \
                   after it. Setting TCP_NOTSENT_LOWAT (16 KB) and writing only when the \
                   socket reports writable removes that delay.",
            scope: "Real Linux TCP (CUBIC) in network namespaces, through the live lab's \
                    router running a 400 kbit/s FQ-CoDel link with 20 ms base RTT. One \
                    connection carries a bulk stream and a 1 KB message every 200 ms (25 \
                    messages); a message's delay runs from when the application had it to \
                    its last byte at the receiving application. Wall-clock numbers: they \
                    vary a little between runs.",
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
        let n = |r: &ScenarioRun| r.numbers::<LowatNumbers>();
        let (b50, b99) = (n(before)?.latency_p50_ms, n(before)?.latency_p99_ms);
        let (a50, a99) = (n(after)?.latency_p50_ms, n(after)?.latency_p99_ms);
        let checks = vec![
            Check::new(
                "default send buffer: message delay, median",
                "120 KB at 50 KB/s: about 2.5 s",
                b50,
                "ms",
                Bound::Within {
                    low: 1500.0,
                    high: 3500.0,
                },
            )
            .decimals(0),
            Check::new(
                "16 KiB mark: message delay, 99th percentile",
                "the mark removes the buffer's delay",
                a99,
                "ms",
                Bound::AtMost(700.0),
            )
            .decimals(0),
            Check::new(
                "median delay with the mark over without",
                "most of the delay gone",
                a50 / b50,
                "",
                Bound::AtMost(0.25),
            )
            .decimals(2),
        ];
        let row = |label: &str, r: &ScenarioRun| -> Result<Vec<Cell>, SectionError> {
            Ok(vec![
                Cell::text(label),
                Cell::num(n(r)?.latency_p50_ms, "ms", 0),
                Cell::num(n(r)?.latency_p99_ms, "ms", 0),
                Cell::num(n(r)?.send_buffer_bytes / 1000.0, "kB", 1),
                Cell::num(n(r)?.queued_ahead_p50_bytes / 1000.0, "kB", 1),
                Cell::num(n(r)?.bulk_goodput_kbps, "kbit/s", 0),
                Cell::count(n(r)?.messages as u64),
            ])
        };
        let table = Table {
            caption: "Message delay and what the kernel held ahead of each message (unsent \
                      plus in flight, median), with the bulk stream's goodput"
                .into(),
            columns: [
                "sender",
                "delay p50",
                "delay p99",
                "send buffer (kernel)",
                "queued ahead",
                "bulk goodput",
                "messages",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![row("default buffer", before)?, row("16 KiB mark", after)?],
        };
        let plots = vec![before_after(
            "Interactive message delay behind a bulk stream",
            "Bars: delay from a message being produced to its arrival, without and with \
             TCP_NOTSENT_LOWAT = 16 KiB (WWDC 2015: about 2.5 s without).",
            ("delay", "ms"),
            &["median", "99th percentile"],
            vec![
                ("default buffer", vec![b50, b99]),
                ("16 KiB mark", vec![a50, a99]),
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
    /// What one run measured: message delay behind a bulk stream.
    pub(crate) struct LowatNumbers {
        latency_p50_ms,
        latency_p99_ms,
        latency_max_ms,
        /// Messages measured.
        messages,
        send_buffer_bytes,
        /// Bytes the kernel held ahead of each message (unsent plus in flight), median.
        queued_ahead_p50_bytes,
        bulk_goodput_kbps,
    }
}

impl LiveExperiment for NotsentLowat {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        let mark = match stem {
            BEFORE => None,
            AFTER => Some(MARK_BYTES),
            other => return Err(unknown_stem(ID, other)),
        };
        let exp = LowatExperiment::seed(mark);
        let (run, o) = in_lab(scenario, IpMode::V4, capture, |lab| lowat::run(lab, &exp))?;
        let goodput_kbps = o.bulk_bytes as f64 * 8.0 / o.duration_ms;
        Ok(with_numbers(
            run,
            &LowatNumbers {
                latency_p50_ms: o.latency.p50_ms,
                latency_p99_ms: o.latency.p99_ms,
                latency_max_ms: o.latency.max_ms,
                messages: o.latency.count as f64,
                send_buffer_bytes: o.send_buffer_bytes as f64,
                queued_ahead_p50_bytes: o.queued_ahead_p50_bytes,
                bulk_goodput_kbps: goodput_kbps,
            },
        ))
    }
}
