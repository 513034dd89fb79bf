//! "Bufferbloat" (WWDC 2015), in two halves.
//!
//! Queues under overload: the same slightly excessive unresponsive load
//! and a ping through a deep FIFO and through each AQM. Checks: the FIFO's
//! standing queue adds at least 100 ms to the ping's median RTT ("hundreds
//! of ms"); every AQM keeps the median added RTT at or below the path's
//! base RTT (the queue at most doubles the round trip, where the FIFO
//! multiplies it). Medians measure the standing queue the claim is about;
//! start-up transients and tails are in the table and plots.
//!
//! With a transfer: a Brisk CUBIC bulk flow and a ping through the FIFO and
//! through CoDel with ECN, with its time-sequence graphs and stalls; its
//! checks are in [`super::bufferbloat_flow`].

use super::{bufferbloat_flow, queue_label};
use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_trace::plot::{
    Axis, BarChart, BarSeries, Frame, Samples, bar_chart, cdf_chart, line_chart,
};

pub struct Bufferbloat;

/// The ping whose RTT the section reads, and the load beside it.
const PING: &str = "ping";
const LOAD: &str = "load";
/// The queue-only half's scenarios; the transfer half's are read by
/// [`bufferbloat_flow`].
const QUEUE_ONLY: [&str; 5] = ["fifo", "codel", "fq_codel", "pie", "dualpi2"];
/// "Hundreds of ms": the least that qualifies.
const FIFO_ADDED_MIN_MS: f64 = 100.0;

impl Section for Bufferbloat {
    fn id(&self) -> &'static str {
        "bufferbloat"
    }

    fn title(&self) -> &'static str {
        "Bufferbloat: deep FIFOs and smart queues"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "At a 10 Mbit/s bottleneck, a simple FIFO of about 200 packets, \
                   typical of home gateways, fills up and stays full: every packet \
                   waits behind the whole queue, adding hundreds of milliseconds of \
                   delay, and arrivals are dropped at its tail. A smart queue such as \
                   CoDel signals congestion as soon as a standing queue forms and keeps \
                   the delay short.",
            scope: "Two halves. Queue only: unresponsive UDP at 5% over capacity \
                    through every queue, so the AQMs act by dropping and nothing slows \
                    down. With a transfer: Brisk's own CUBIC bulk flow (ECN-capable) \
                    stands in for the talk's TCP download, through the FIFO and \
                    through CoDel with ECN; its stalls are read from the sender's \
                    cumulative ACK, not from a TCP trace.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[
            "fifo",
            "codel",
            "fq_codel",
            "pie",
            "dualpi2",
            "bulk-fifo",
            "bulk-codel",
        ]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let mut rows = Vec::new();
        let mut checks = Vec::new();
        let mut over_time = Vec::new();
        let mut cdfs = Vec::new();
        let (mut medians, mut p99s, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        for &stem in &QUEUE_ONLY {
            let run = runs.get(stem)?;
            let m = Measured::of(run)?;
            let label = queue_label(&run.scenario.network.queue);
            if stem == "fifo" {
                checks.push(Check::new(
                    format!("{label}, UDP overload: RTT added by the queue, median"),
                    "hundreds of ms",
                    m.added_p50_ms,
                    "ms",
                    Bound::AtLeast(FIFO_ADDED_MIN_MS),
                ));
            } else {
                checks.push(Check::new(
                    format!("{label}, UDP overload: RTT added by the queue, median"),
                    "short (at most the base RTT)",
                    m.added_p50_ms,
                    "ms",
                    Bound::AtMost(m.base_ms),
                ));
            }
            rows.push(vec![
                Cell::text(&label),
                Cell::num(m.base_ms, "ms", 1),
                Cell::num(m.rtt_p50_ms, "ms", 1),
                Cell::num(m.rtt_p99_ms, "ms", 1),
                Cell::num(m.added_p50_ms, "ms", 1),
                Cell::num(m.added_p99_ms, "ms", 1),
                Cell::num(m.ping_loss * 100.0, "%", 1),
                Cell::num(m.load_goodput_mbps, "Mbit/s", 2),
                Cell::count(run.results.queue.drops),
            ]);
            over_time.push(run.rtt_series(PING, &label)?);
            cdfs.push(Samples::new(&label, run.rtt_samples_ms(PING)?));
            medians.push(m.added_p50_ms);
            p99s.push(m.added_p99_ms);
            labels.push(label);
        }
        let table = Table {
            caption: "The ping beside the load, per queue (pings dropped: echo requests \
                      the queue dropped)"
                .into(),
            columns: [
                "queue",
                "base RTT",
                "RTT p50",
                "RTT p99",
                "added p50",
                "added p99",
                "pings dropped",
                "load goodput",
                "queue drops",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        // The FIFO's set left empty, so every queue keeps its colour.
        let smart: Vec<Samples> = cdfs
            .iter()
            .zip(QUEUE_ONLY)
            .map(|(c, stem)| {
                let values = if stem == "fifo" {
                    Vec::new()
                } else {
                    c.values.clone()
                };
                Samples::new(&c.name, values)
            })
            .collect();
        let time = Axis::new("time", "s");
        let rtt = Axis::new("ping RTT", "ms");
        let mut plots = vec![
            plot(
                "Ping RTT over time",
                "Each point is one answered ping. The FIFO's delay climbs until the \
                 queue is full and stays there; the AQMs hold it near their targets.",
                || {
                    line_chart(
                        &Frame::new("Ping RTT over time", time, rtt.clone()),
                        &over_time,
                    )
                },
            )?,
            plot(
                "Ping RTT distribution",
                "Fraction of answered pings at or below each RTT; further left is better.",
                || {
                    cdf_chart(
                        &Frame::new(
                            "Ping RTT distribution",
                            rtt.clone(),
                            Axis::new("fraction of pings", ""),
                        ),
                        &cdfs,
                    )
                },
            )?,
            plot(
                "Ping RTT distribution, smart queues only",
                "The same distributions without the FIFO, on an axis that separates the \
                 AQMs: FQ-CoDel isolates the sparse ping from the load; CoDel steers to \
                 5 ms, PIE and DualPI2 to 15 ms.",
                || {
                    cdf_chart(
                        &Frame::new(
                            "Ping RTT distribution, smart queues only",
                            rtt.clone(),
                            Axis::new("fraction of pings", ""),
                        ),
                        &smart,
                    )
                },
            )?,
            plot(
                "RTT added by each queue",
                "The ping's RTT minus the path's base RTT: median and 99th percentile.",
                || {
                    bar_chart(
                        &Frame::new(
                            "RTT added by each queue",
                            Axis::new("queue", ""),
                            Axis::new("added RTT", "ms"),
                        ),
                        &BarChart {
                            categories: labels.clone(),
                            series: vec![
                                BarSeries::new("median", medians.clone()),
                                BarSeries::new("99th percentile", p99s.clone()),
                            ],
                            reference: None,
                        },
                    )
                },
            )?,
        ];
        let (flow_checks, flow_table, flow_plots) =
            bufferbloat_flow::findings(runs.get("bulk-fifo")?, runs.get("bulk-codel")?)?;
        checks.extend(flow_checks);
        plots.extend(flow_plots);
        Ok(Findings {
            checks,
            tables: vec![table, flow_table],
            plots,
        })
    }
}

/// What the section reads from one run.
struct Measured {
    base_ms: f64,
    rtt_p50_ms: f64,
    rtt_p99_ms: f64,
    added_p50_ms: f64,
    added_p99_ms: f64,
    ping_loss: f64,
    load_goodput_mbps: f64,
}

impl Measured {
    fn of(run: &ScenarioRun) -> Result<Measured, SectionError> {
        let ping = run.flow(PING)?;
        if !ping.rtt_measured || ping.rtt_ms.count == 0 {
            return Err(SectionError::Unsuitable {
                scenario: run.path.clone(),
                message: format!("flow {PING:?} measured no round trip (is it a ping?)"),
            });
        }
        let base_ms = ms(run.base_rtt(PING)?);
        Ok(Measured {
            base_ms,
            rtt_p50_ms: ping.rtt_ms.p50,
            rtt_p99_ms: ping.rtt_ms.p99,
            added_p50_ms: ping.rtt_ms.p50 - base_ms,
            added_p99_ms: ping.rtt_ms.p99 - base_ms,
            ping_loss: ping.loss_rate,
            load_goodput_mbps: run.flow(LOAD)?.goodput_mbps,
        })
    }
}
