//! "L4S at the queue" (WWDC 2023): the same traffic through a DualPI2
//! bottleneck twice, once with the video and its ping sent Not-ECT (the
//! legacy call) and once sent ECT(1) (the L4S call), beside an unresponsive
//! classic bulk flow that keeps the bottleneck overloaded.
//!
//! Checks, against the talk's numbers at a 20 ms minimum RTT: with ECT(1)
//! the ping's 99th-percentile RTT stays within 5 ms of the base RTT ("under
//! 25 ms"); it is at least 44% below the legacy call's (45 ms to 25 ms);
//! and the video loses at most 1% of its packets ("nearly eliminated").

use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::queue::{EcnMask, QueueConfig};
use brisk_sim::scenario::EcnSpec;
use brisk_trace::plot::{
    Axis, BarChart, BarSeries, Frame, Samples, bar_chart, cdf_chart, line_chart,
};
use brisk_trace::stats::LatencySummary;

pub struct L4sQueue;

const PING: &str = "ping";
const VIDEO: &str = "video";
/// The talk: minimum RTT 20 ms, L4S worst case under 25 ms.
const L4S_TAIL_ABOVE_BASE_MS: f64 = 5.0;
/// The talk: worst case 45 ms without L4S, under 25 ms with it.
const TAIL_CUT_MIN_PERCENT: f64 = (1.0 - 25.0 / 45.0) * 100.0;
/// "Nearly eliminated".
const L4S_LOSS_MAX_PERCENT: f64 = 1.0;

impl Section for L4sQueue {
    fn id(&self) -> &'static str {
        "l4s-queue"
    }

    fn title(&self) -> &'static str {
        "L4S at the queue"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2023,
            text: "On a constrained 10 Mbit/s network shared with other traffic, a video \
                   call without L4S saw round trips of up to 45 ms over a 20 ms minimum \
                   and lost over 40% of its packets at times; with L4S (ECT(1) packets, \
                   an L4S queue at the bottleneck) the worst case fell below 25 ms, \
                   about half, and loss nearly vanished.",
            scope: "Queue-only check: the video is unresponsive on/off UDP, so this shows \
                    what DualPI2's L queue does for ECT(1) packets (short queue, CE marks \
                    instead of drops), not a scalable sender reacting to those marks. \
                    The Prague-versus-CUBIC call with frame rates arrives with Brisk's \
                    transport.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &["legacy", "l4s"]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let legacy = runs.get("legacy")?;
        let l4s = runs.get("l4s")?;
        let l_mask = l_queue_mask(l4s)?;

        let base_ms = ms(l4s.base_rtt(PING)?);
        let l4s_p99 = l4s.flow(PING)?.rtt_ms.p99;
        let legacy_p99 = legacy.flow(PING)?.rtt_ms.p99;
        let cut = if legacy_p99 > 0.0 {
            (1.0 - l4s_p99 / legacy_p99) * 100.0
        } else {
            f64::NAN
        };
        let video = l4s.flow(VIDEO)?;
        let checks = vec![
            Check::new(
                "With L4S: ping RTT, 99th percentile",
                format!("under 25 ms at a 20 ms minimum (here {base_ms:.0} ms + 5 ms)"),
                l4s_p99,
                "ms",
                Bound::AtMost(base_ms + L4S_TAIL_ABOVE_BASE_MS),
            ),
            Check::new(
                "Worst-case (p99) RTT cut by L4S",
                "about half: 45 ms to under 25 ms",
                cut,
                "%",
                Bound::AtLeast(TAIL_CUT_MIN_PERCENT),
            ),
            Check::new(
                "With L4S: video packets lost",
                "nearly none (over 40% without)",
                video.loss_rate * 100.0,
                "%",
                Bound::AtMost(L4S_LOSS_MAX_PERCENT),
            )
            .decimals(2),
        ];

        let mut flow_rows = Vec::new();
        for (call, run) in [("without L4S", legacy), ("with L4S", l4s)] {
            let mask = l_queue_mask(run)?;
            for (spec, f) in run.scenario.flows.iter().zip(&run.results.flows) {
                let in_l = is_l(spec.traffic.source_ecn(), mask);
                flow_rows.push(vec![
                    Cell::text(call),
                    Cell::text(&f.name),
                    Cell::text(if in_l { "L (ECT(1))" } else { "C (Not-ECT)" }),
                    Cell::num(f.queue_delay_ms.p50, "ms", 2),
                    Cell::num(f.queue_delay_ms.p99, "ms", 2),
                    if f.rtt_measured {
                        Cell::num(f.rtt_ms.p99, "ms", 1)
                    } else {
                        Cell::text("")
                    },
                    Cell::count(f.ce_packets),
                    Cell::count(f.queue_drops),
                    Cell::num(f.loss_rate * 100.0, "%", 2),
                ]);
            }
        }
        let flows_table = Table {
            caption: "Every flow in both calls, data direction (CE marked: packets delivered \
                      with CE)"
                .into(),
            columns: [
                "call",
                "flow",
                "DualPI2 queue",
                "queue delay p50",
                "queue delay p99",
                "RTT p99",
                "CE marked",
                "dropped",
                "loss",
            ]
            .map(String::from)
            .to_vec(),
            rows: flow_rows,
        };

        let (l_delay, c_delay) = queue_delays(l4s, l_mask)?;
        let (_, legacy_delay) = queue_delays(legacy, l_queue_mask(legacy)?)?;
        let queue_rows = [
            ("with L4S: L queue (ECT(1))", &l_delay),
            ("with L4S: C queue (Not-ECT)", &c_delay),
            ("without L4S: C queue (everything)", &legacy_delay),
        ]
        .iter()
        .map(|(name, d)| {
            let mut h = LatencySummary::default();
            d.iter()
                .for_each(|v| h.record(std::time::Duration::from_secs_f64(v / 1000.0)));
            let p = h.percentiles();
            vec![
                Cell::text(*name),
                Cell::count(p.count),
                Cell::num(p.p50, "ms", 2),
                Cell::num(p.p90, "ms", 2),
                Cell::num(p.p99, "ms", 2),
                Cell::num(p.max, "ms", 2),
            ]
        })
        .collect();
        let queue_table = Table {
            caption: "Bottleneck queue delay by DualPI2 queue, over every data packet".into(),
            columns: ["queue", "packets", "p50", "p90", "p99", "max"]
                .map(String::from)
                .to_vec(),
            rows: queue_rows,
        };

        let delay = Axis::new("queue delay", "ms");
        let rtt_axis = Axis::new("ping RTT", "ms");
        let over_time = vec![
            legacy.rtt_series(PING, "ping without L4S (Not-ECT)")?,
            l4s.rtt_series(PING, "ping with L4S (ECT(1))")?,
        ];
        let marks: Vec<String> = l4s.results.flows.iter().map(|f| f.name.clone()).collect();
        let ce: Vec<f64> = l4s
            .results
            .flows
            .iter()
            .map(|f| f.ce_packets as f64)
            .collect();
        let drops: Vec<f64> = l4s
            .results
            .flows
            .iter()
            .map(|f| f.queue_drops as f64)
            .collect();
        let plots = vec![
            plot(
                "Queue delay: L queue vs C queue",
                "Every data packet's wait at the bottleneck. ECT(1) packets wait in the \
                 L queue behind a 1 ms marking step; Not-ECT packets share the classic \
                 queue that PI2 steers to its 15 ms target.",
                || {
                    cdf_chart(
                        &Frame::new(
                            "Queue delay: L queue vs C queue",
                            delay,
                            Axis::new("fraction of packets", ""),
                        ),
                        &[
                            Samples::new("with L4S: L queue", l_delay.clone()),
                            Samples::new("with L4S: C queue", c_delay.clone()),
                            Samples::new("without L4S: all", legacy_delay.clone()),
                        ],
                    )
                },
            )?,
            plot(
                "The call's ping RTT over time",
                "The same ping, sent Not-ECT (legacy call) and ECT(1) (L4S call).",
                || {
                    line_chart(
                        &Frame::new(
                            "The call's ping RTT over time",
                            Axis::new("time", "s"),
                            rtt_axis,
                        ),
                        &over_time,
                    )
                },
            )?,
            plot(
                "Congestion signals with L4S: marks vs drops",
                "Packets of each flow the bottleneck marked CE or dropped in the L4S call.",
                || {
                    bar_chart(
                        &Frame::new(
                            "Congestion signals with L4S: marks vs drops",
                            Axis::new("flow", ""),
                            Axis::new("packets", ""),
                        ),
                        &BarChart {
                            categories: marks,
                            series: vec![
                                BarSeries::new("CE marked", ce),
                                BarSeries::new("dropped", drops),
                            ],
                            reference: None,
                        },
                    )
                },
            )?,
        ];
        Ok(Findings {
            checks,
            tables: vec![queue_table, flows_table],
            plots,
        })
    }
}

/// The DualPI2 classifier of a run; the section needs that queue.
fn l_queue_mask(run: &ScenarioRun) -> Result<EcnMask, SectionError> {
    match &run.scenario.network.queue {
        QueueConfig::DualPi2(c) => Ok(c.ecn_mask),
        _ => Err(SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: "this section reads DualPI2's two queues: use [queue.dualpi2]".into(),
        }),
    }
}

/// Whether packets sent with `ecn` go to DualPI2's L queue.
fn is_l(ecn: Option<EcnSpec>, mask: EcnMask) -> bool {
    match ecn {
        Some(EcnSpec::Ect1) => true,
        Some(EcnSpec::Ect0) => mask == EcnMask::AnyEct,
        Some(EcnSpec::NotEct) | None => false,
    }
}

/// Every data packet's queue delay in ms, split into (L queue, C queue).
fn queue_delays(run: &ScenarioRun, mask: EcnMask) -> Result<(Vec<f64>, Vec<f64>), SectionError> {
    let (mut l, mut c) = (Vec::new(), Vec::new());
    for (i, spec) in run.scenario.flows.iter().enumerate() {
        let series = run.series(&spec.label(i))?;
        let out = if is_l(spec.traffic.source_ecn(), mask) {
            &mut l
        } else {
            &mut c
        };
        out.extend(series.queue_delay.iter().map(|(_, d)| ms(*d)));
    }
    Ok((l, c))
}
