//! The live-streaming part of "Lossy mobile links": one live stream
//! (the simulator's `stream` application: a 1-6 Mbit/s publisher that
//! follows the path, a player with a 600 ms buffer) over Brisk (BBR,
//! adaptive FEC) on each of OK.ru's networks, without loss and with 5%
//! random loss, 10 Mbit/s and a 200-packet FIFO as the fetches have.
//!
//! Check: OK.ru's goal for its live protocol, at most one second glass
//! to glass (p99) on LTE (220 ms), with and without loss.

use super::lossy_mobile::NETWORKS;
use crate::section::{Cell, Runs, SectionError, Table};
use crate::verdict::{Bound, Check};

/// The stream's flow name in its scenarios.
const STREAM: &str = "stream";
/// The loss conditions streamed through: (stem suffix, label).
const STREAM_LOSSES: [(&str, &str); 2] = [("0pct", "none"), ("5pct", "5%")];
/// OK.ru's latency goal for live video, glass to glass.
const LIVE_P99_MS: f64 = 1_000.0;
/// The network the goal is stated for.
const GOAL_RTT_MS: u32 = 220;

/// The stream scenarios' stems.
pub(super) static STREAM_STEMS: [&str; 8] = [
    "stream-110ms-0pct",
    "stream-110ms-5pct",
    "stream-220ms-0pct",
    "stream-220ms-5pct",
    "stream-550ms-0pct",
    "stream-550ms-5pct",
    "stream-900ms-0pct",
    "stream-900ms-5pct",
];

/// The live-stream checks and table.
pub(super) fn stream(runs: &Runs<'_>) -> Result<(Vec<Check>, Table), SectionError> {
    let mut checks = Vec::new();
    let mut rows = Vec::new();
    for (rtt_ms, network) in NETWORKS {
        for (loss, label) in STREAM_LOSSES {
            let run = runs.get(&format!("stream-{rtt_ms}ms-{loss}"))?;
            let s = run
                .flow(STREAM)?
                .brisk
                .as_ref()
                .and_then(|b| b.stream.as_ref())
                .ok_or_else(|| SectionError::Unsuitable {
                    scenario: run.path.clone(),
                    message: format!("flow {STREAM:?} must be a brisk flow with app = \"stream\""),
                })?;
            let latency = s.glass_to_glass_ms.unwrap_or_default();
            // A stream that never started has no latency: count it as
            // missing the goal by the whole run.
            let p99 = s
                .glass_to_glass_ms
                .map_or(run.scenario.duration.as_secs_f64() * 1000.0, |l| l.p99);
            if rtt_ms == GOAL_RTT_MS {
                checks.push(
                    Check::new(
                        format!("Live stream on {network} ({rtt_ms} ms), loss {label}: glass-to-glass p99"),
                        format!("at most {LIVE_P99_MS:.0} ms (OK.ru's live protocol)"),
                        p99,
                        "ms",
                        Bound::AtMost(LIVE_P99_MS),
                    )
                    .decimals(0),
                );
            }
            rows.push(vec![
                Cell::text(format!("{network}, {rtt_ms} ms")),
                Cell::text(label),
                Cell::num(latency.p50, "ms", 0),
                Cell::num(p99, "ms", 0),
                Cell::num(s.startup_ms.unwrap_or(f64::NAN), "ms", 0),
                Cell::num(s.rebuffering_ratio * 100.0, "%", 2),
                Cell::num(s.delivered_mbps, "Mbit/s", 2),
                Cell::count(s.rung_switches),
            ]);
        }
    }
    let table = Table {
        caption: "Live stream (1-6 Mbit/s ladder following the path, key frame every 2 s, \
                  30 fps) to a player with a 600 ms buffer that freezes until the buffer \
                  refills when a frame is late and plays 1.2x fast to catch up; glass to \
                  glass is capture to screen; rebuffering is frozen time over watching time; \
                  delivered is the bitrate of the video shown. Brisk (BBR, adaptive FEC), \
                  10 Mbit/s, 200-packet FIFO, loss on the data direction"
            .into(),
        columns: [
            "network",
            "loss",
            "glass to glass p50",
            "p99",
            "start-up",
            "rebuffering",
            "delivered",
            "rung changes",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    Ok((checks, table))
}
