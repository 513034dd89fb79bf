//! "Send-buffer delay" (WWDC 2015): a screen-sharing sender over Brisk
//! writes 4 KB updates on a 50 KB/s (400 kbit/s) link behind FQ-CoDel,
//! 20 ms base RTT, twice: with a classic 120 KB send buffer it keeps full
//! (`classic`), and writing only while less than a 16 KiB low-water mark
//! waits unsent (`lowat`, TCP_NOTSENT_LOWAT).
//!
//! Checks:
//! - classic: the median message latency within 2.0 to 3.0 s, the seed's
//!   2.5 s give or take 20% (120 KB drained at 50 KB/s is 2.4 s, plus the
//!   trip and the message's own transmission);
//! - low-water mark: the median at most a quarter of the classic one, the
//!   buffer held ahead of each message shrinking from 120 KB to 16 KiB
//!   plus a window in flight.

use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, plot};
use crate::verdict::{Bound, Check};
use brisk_trace::plot::{Axis, Frame, Samples, cdf_chart};
use brisk_trace::stats::Percentiles;

pub struct SendBuffer;

const SCREEN: &str = "screen";
const PING: &str = "ping";
/// The seed: about 2.5 s of stale data, give or take 20%.
const CLASSIC_MIN_MS: f64 = 2000.0;
const CLASSIC_MAX_MS: f64 = 3000.0;
/// The low-water mark's median at most this fraction of the classic one.
const LOWAT_MAX_FRACTION: f64 = 0.25;

const VARIANTS: [(&str, &str); 2] = [
    ("classic", "120 KB send buffer"),
    ("lowat", "16 KiB low-water mark"),
];

impl Section for SendBuffer {
    fn id(&self) -> &'static str {
        "send-buffer"
    }

    fn title(&self) -> &'static str {
        "Send-buffer delay"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "A sender that keeps a 120 KB socket buffer full on a link draining about \
                   50 KB/s makes every new write wait about 2.5 s behind stale data, while \
                   the network itself answers in tens of milliseconds; writing only when \
                   little data is unsent (TCP_NOTSENT_LOWAT) removes that delay.",
            scope: "Brisk's transport with its messages workload: the send buffer and the \
                    low-water mark are Brisk's, modelled on the kernel's, not a TCP socket. \
                    The link is FQ-CoDel so the network adds little; the delay measured is \
                    the sender's own, from the application's write to the receiving \
                    application's read.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &["classic", "lowat"]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let classic = latency(runs.get("classic")?)?;
        let lowat = latency(runs.get("lowat")?)?;
        let checks = vec![
            Check::new(
                "120 KB send buffer: message latency, median",
                "about 2.5 s (120 KB at 50 KB/s)",
                classic.p50,
                "ms",
                Bound::Within {
                    low: CLASSIC_MIN_MS,
                    high: CLASSIC_MAX_MS,
                },
            ),
            Check::new(
                "Low-water mark: median latency over the classic one",
                "the sender's delay removed (here at least 4x lower)",
                lowat.p50 / classic.p50 * 100.0,
                "%",
                Bound::AtMost(LOWAT_MAX_FRACTION * 100.0),
            ),
        ];

        let mut rows = Vec::new();
        let mut sets = Vec::new();
        for (stem, label) in VARIANTS {
            let run = runs.get(stem)?;
            let p = latency(run)?;
            let f = run.flow(SCREEN)?;
            rows.push(vec![
                Cell::text(label),
                Cell::count(p.count),
                Cell::num(p.p50, "ms", 0),
                Cell::num(p.p90, "ms", 0),
                Cell::num(p.p99, "ms", 0),
                Cell::num(p.max, "ms", 0),
                Cell::num(run.flow(PING)?.rtt_ms.p50, "ms", 1),
                Cell::num(f.goodput_mbps * 1000.0 / 8.0, "KB/s", 1),
            ]);
            let samples = run
                .transport(SCREEN)?
                .latencies
                .iter()
                .map(|d| d.as_secs_f64() * 1000.0)
                .collect();
            sets.push(Samples::new(label, samples));
        }
        let table = Table {
            caption: "Message latency (the application's write to the receiver's read) and \
                      the network's own round trip (a ping beside it)"
                .into(),
            columns: [
                "sender",
                "messages",
                "p50",
                "p90",
                "p99",
                "max",
                "ping RTT p50",
                "goodput",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let plots = vec![plot(
            "Message latency",
            "Every 4 KB update's latency from write to read, with a full 120 KB send \
             buffer and with a 16 KiB low-water mark.",
            || {
                cdf_chart(
                    &Frame::new(
                        "Message latency",
                        Axis::new("latency", "ms"),
                        Axis::new("fraction of messages", ""),
                    ),
                    &sets,
                )
            },
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

/// The messages' latency percentiles; the section needs a messages flow.
fn latency(run: &ScenarioRun) -> Result<Percentiles, SectionError> {
    run.flow(SCREEN)?
        .brisk
        .as_ref()
        .and_then(|b| b.message_latency_ms)
        .ok_or_else(|| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: "flow \"screen\" must be a brisk flow with app = \"messages\"".into(),
        })
}
