//! "L4S video call" (WWDC 2023): a 30 fps video call over Brisk's
//! transport sharing a 10 Mbit/s, 20 ms link with two CUBIC downloads,
//! three times: over Prague (ECT(1)) through DualPI2 (`l4s`), and over
//! CUBIC through a 20-packet FIFO (`legacy`, the talk's legacy network)
//! and a 400-packet one (`legacy-deep`, a bloated buffer).
//!
//! Checks, against the talk's numbers at a 20 ms minimum RTT, with the
//! base RTT read from the scenario so an edited suite is judged fairly:
//! - with L4S the call's 99th-percentile RTT is at most base + 5 ms (the
//!   talk's "worst case under 25 ms");
//! - without it (shallow FIFO) at least base + 20 ms (the talk's "up to
//!   45 ms", 25 ms above the minimum, less 5 ms of margin);
//! - with L4S at most 1% of the call's packets are lost ("nearly
//!   eliminated");
//! - with L4S at most 10% of the call's seconds run below 25 frames per
//!   second ("above 25 fps most of the time").

use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_sim::results::FrameResults;
use brisk_trace::plot::{Axis, Frame, Samples, cdf_chart, line_chart};
use brisk_trace::stats::Series;

pub struct L4sCall;

const VIDEO: &str = "video";
/// The talk: minimum RTT 20 ms, L4S worst case under 25 ms.
const L4S_TAIL_ABOVE_BASE_MS: f64 = 5.0;
/// The talk: legacy worst case 45 ms at a 20 ms minimum, less 5 ms margin.
const LEGACY_TAIL_ABOVE_BASE_MS: f64 = 20.0;
/// "Nearly eliminated".
const L4S_LOSS_MAX_PERCENT: f64 = 1.0;
/// "Above 25 fps most of the time": at most this share of seconds below.
const L4S_BELOW_25_FPS_MAX_PERCENT: f64 = 10.0;

/// The three variants in report order: (stem, legend label).
const VARIANTS: [(&str, &str); 3] = [
    ("l4s", "Prague through DualPI2"),
    ("legacy", "CUBIC through a 20-packet FIFO"),
    ("legacy-deep", "CUBIC through a 400-packet FIFO"),
];

impl Section for L4sCall {
    fn id(&self) -> &'static str {
        "l4s-call"
    }

    fn title(&self) -> &'static str {
        "L4S video call"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2023,
            text: "A video call on a constrained 10 Mbit/s network shared with downloads: \
                   without L4S round trips reached 45 ms over a 20 ms minimum, loss \
                   passed 40% and the frame rate fell to 0 fps at times; with L4S the \
                   worst-case round trip stayed under 25 ms, loss nearly vanished and \
                   the received frame rate stayed above 25 fps most of the time.",
            scope: "Brisk's own transport end to end: the call's encoder follows Prague's \
                    (or CUBIC's) window, and Prague reacts to DualPI2's CE marks. The \
                    downloads are Brisk CUBIC flows, not the talk's unknown devices, and \
                    the legacy network is modelled as a FIFO (shallow and bloated); the \
                    talk's 40% loss is not reproduced by a congestion-controlled call \
                    through a FIFO, so loss is checked only for the L4S call.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &["l4s", "legacy", "legacy-deep"]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let l4s = runs.get("l4s")?;
        let legacy = runs.get("legacy")?;
        let base_ms = ms(l4s.base_rtt(VIDEO)?);
        let legacy_base_ms = ms(legacy.base_rtt(VIDEO)?);
        let l4s_video = l4s.flow(VIDEO)?;
        let l4s_frames = frames(l4s)?;
        let checks = vec![
            Check::new(
                "With L4S: call RTT, 99th percentile",
                format!("under 25 ms at a 20 ms minimum (here {base_ms:.0} ms + 5 ms)"),
                l4s_video.rtt_ms.p99,
                "ms",
                Bound::AtMost(base_ms + L4S_TAIL_ABOVE_BASE_MS),
            ),
            Check::new(
                "Without L4S (20-packet FIFO): call RTT, 99th percentile",
                format!(
                    "up to 45 ms at a 20 ms minimum (here at least {legacy_base_ms:.0} ms + 20 ms)"
                ),
                legacy.flow(VIDEO)?.rtt_ms.p99,
                "ms",
                Bound::AtLeast(legacy_base_ms + LEGACY_TAIL_ABOVE_BASE_MS),
            ),
            Check::new(
                "With L4S: call packets lost",
                "nearly none (over 40% without)",
                l4s_video.loss_rate * 100.0,
                "%",
                Bound::AtMost(L4S_LOSS_MAX_PERCENT),
            )
            .decimals(2),
            Check::new(
                "With L4S: seconds of the call below 25 fps",
                "above 25 fps most of the time",
                l4s_frames.below_25_fps_fraction * 100.0,
                "%",
                Bound::AtMost(L4S_BELOW_25_FPS_MAX_PERCENT),
            ),
        ];

        let mut rows = Vec::new();
        let mut rtts = Vec::new();
        let mut fps_series = Vec::new();
        for (stem, label) in VARIANTS {
            let run = runs.get(stem)?;
            let f = run.flow(VIDEO)?;
            let fr = frames(run)?;
            rows.push(vec![
                Cell::text(label),
                Cell::num(f.rtt_ms.p50, "ms", 1),
                Cell::num(f.rtt_ms.p99, "ms", 1),
                Cell::num(f.rtt_ms.max, "ms", 1),
                Cell::num(f.loss_rate * 100.0, "%", 2),
                Cell::count(f.ce_packets),
                Cell::num(fr.stall_fraction * 100.0, "%", 1),
                Cell::num(fr.fps_mean, "fps", 1),
                Cell::num(fr.fps_min, "fps", 0),
                Cell::num(fr.below_25_fps_fraction * 100.0, "%", 0),
                Cell::num(f.goodput_mbps, "Mbit/s", 2),
            ]);
            rtts.push(Samples::new(label, run.rtt_samples_ms(VIDEO)?));
            let mut s = Series::new(label, "fps");
            if let Some(report) = &run.transport(VIDEO)?.frames {
                for (at, fps) in &report.frame_rate {
                    s.push_at(*at, *fps);
                }
            }
            fps_series.push(s);
        }
        let table = Table {
            caption: "The video call in each variant (stall: share of 100 ms windows with no \
                      frame on time; frame rates count frames on time, one value per second)"
                .into(),
            columns: [
                "variant",
                "RTT p50",
                "RTT p99",
                "RTT max",
                "loss",
                "CE marked",
                "stall",
                "fps mean",
                "fps min",
                "seconds below 25 fps",
                "goodput",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };

        let plots = vec![
            plot(
                "The call's RTT distribution",
                "Every RTT sample of the call's transport. The talk's L4S call stayed \
                 under 25 ms; its legacy call reached 45 ms.",
                || {
                    cdf_chart(
                        &Frame::new(
                            "The call's RTT distribution",
                            Axis::new("RTT", "ms"),
                            Axis::new("fraction of samples", ""),
                        ),
                        &rtts,
                    )
                },
            )?,
            plot(
                "Received frame rate over time",
                "Frames received within the call's deadline, per second of the call.",
                || {
                    line_chart(
                        &Frame::new(
                            "Received frame rate over time",
                            Axis::new("time", "s"),
                            Axis::new("frame rate", "fps"),
                        ),
                        &fps_series,
                    )
                },
            )?,
        ];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

/// The call's frame statistics; the section needs a video flow.
fn frames(run: &ScenarioRun) -> Result<&FrameResults, SectionError> {
    run.flow(VIDEO)?
        .brisk
        .as_ref()
        .and_then(|b| b.frames.as_ref())
        .ok_or_else(|| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: "flow \"video\" must be a brisk flow with app = \"video\"".into(),
        })
}
