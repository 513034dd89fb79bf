//! Renders one example of each plot kind from illustrative, deterministic
//! data, to see what a report's figures look like:
//!
//! ```text
//! cargo run -p brisk-trace --example plots -- /tmp/trace-plots
//! ```
//!
//! The numbers are made up to exercise the plots; they are not results.

use brisk_trace::plot::{
    Axis, BarChart, BarSeries, Frame, Samples, SeqEvent, SeqKind, bar_chart, cdf_chart, line_chart,
    time_sequence_chart,
};
use brisk_trace::stats::Series;
use std::path::PathBuf;

/// A small deterministic pseudo-random sequence in `0..1` (xorshift), so the
/// example needs no RNG dependency and renders the same every time.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// RTT over 10 s: a FIFO that fills to a sawtooth, and an L4S queue that
/// stays near the base RTT, both around a 20 ms path.
fn rtt_series(noise: &mut Noise) -> (Series, Series) {
    let mut legacy = Series::new("FIFO, Cubic", "ms");
    let mut l4s = Series::new("DualPI2, Prague", "ms");
    for i in 0..10_000 {
        let t = i as f64 * 0.001;
        let saw = (t % 2.5) / 2.5;
        legacy.push(t, 20.0 + 25.0 * saw + 1.5 * noise.next());
        l4s.push(t, 20.0 + 1.0 + 3.0 * noise.next().powi(3));
    }
    (legacy, l4s)
}

/// The Mathis et al. bound, MSS / RTT * sqrt(3/2) / sqrt(p), as a share of
/// the link rate (at most 100%).
fn mathis_utilization_pct(loss: f64, mss_bytes: f64, rtt_s: f64, link_bps: f64) -> f64 {
    if loss <= 0.0 {
        return 100.0;
    }
    let bps = mss_bytes * 8.0 / rtt_s * (1.5_f64).sqrt() / loss.sqrt();
    (bps / link_bps * 100.0).min(100.0)
}

/// A window-limited transfer over a 40 ms path with two losses, each
/// repaired by fast retransmit after three duplicate ACKs. Every segment
/// takes the same path delay, so the receiver's state can be advanced at
/// send time and its ACK timestamped one RTT later.
fn transfer(noise: &mut Noise) -> Vec<SeqEvent> {
    let (mss, rtt_s, rwnd, tick_s) = (1_448_u64, 0.040, 64 * 1_448_u64, 0.0005);
    let lost_once = [150_u64, 400];
    let mut events = Vec::new();
    let mut received = std::collections::BTreeSet::new();
    let mut in_order = 0_u64; // receiver: first missing segment
    let mut acks: std::collections::VecDeque<(f64, u64, bool)> = Default::default();
    let (mut next, mut acked, mut last_ack, mut dups) = (0_u64, 0_u64, 0_u64, 0);
    let mut t = 0.0;
    while t < 0.45 {
        while let Some(&(at, ack, ce)) = acks.front().filter(|a| a.0 <= t) {
            acks.pop_front();
            events.push(SeqEvent {
                time_s: at,
                start: ack,
                end: ack + rwnd,
                kind: SeqKind::Ack,
                ce,
            });
            acked = acked.max(ack);
            dups = if ack == last_ack { dups + 1 } else { 0 };
            last_ack = ack;
            if dups == 3 {
                let seg = ack / mss;
                events.push(SeqEvent {
                    time_s: at,
                    start: seg * mss,
                    end: (seg + 1) * mss,
                    kind: SeqKind::Retransmit,
                    ce: false,
                });
                received.insert(seg);
                while received.contains(&in_order) {
                    in_order += 1;
                }
                acks.push_back((at + rtt_s, in_order * mss, false));
            }
        }
        if (next + 1) * mss <= acked + rwnd {
            let ce = next % 29 == 11;
            let at = t + 0.0001 * noise.next();
            events.push(SeqEvent {
                time_s: at,
                start: next * mss,
                end: (next + 1) * mss,
                kind: SeqKind::Data,
                ce,
            });
            if !lost_once.contains(&next) {
                received.insert(next);
                while received.contains(&in_order) {
                    in_order += 1;
                }
                acks.push_back((at + rtt_s, in_order * mss, ce));
            }
            next += 1;
        }
        t += tick_s;
    }
    events
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "trace-plots".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);

    let (legacy, l4s) = rtt_series(&mut noise);
    let frame = Frame::new(
        "RTT over time, 20 ms path (illustrative)",
        Axis::new("time", "s"),
        Axis::new("RTT", "ms"),
    );
    std::fs::write(
        dir.join("line.svg"),
        line_chart(&frame, &[legacy.clone(), l4s.clone()])?,
    )?;

    let values = |s: &Series| s.points.iter().map(|p| p.1).collect::<Vec<f64>>();
    let frame = Frame::new(
        "RTT distribution (illustrative)",
        Axis::new("RTT", "ms"),
        Axis::new("fraction of packets", ""),
    );
    let sets = [
        Samples::new(&legacy.name, values(&legacy)),
        Samples::new(&l4s.name, values(&l4s)),
    ];
    std::fs::write(dir.join("cdf.svg"), cdf_chart(&frame, &sets)?)?;

    let frame = Frame::new(
        "Time-sequence graph (illustrative)",
        Axis::new("time", "s"),
        Axis::new("sequence offset", "bytes"),
    );
    std::fs::write(
        dir.join("tseq.svg"),
        time_sequence_chart(&frame, &transfer(&mut noise))?,
    )?;

    let losses = [0.0, 0.005, 0.01, 0.02, 0.05];
    let mathis = losses
        .iter()
        .map(|&p| mathis_utilization_pct(p, 1_448.0, 0.020, 10e6))
        .collect();
    let chart = BarChart {
        categories: losses.iter().map(|p| format!("{}", p * 100.0)).collect(),
        series: vec![
            BarSeries::new("NewReno", vec![99.0, 84.0, 71.0, 55.0, 38.0]),
            BarSeries::new("Cubic", vec![99.0, 90.0, 80.0, 64.0, 45.0]),
            BarSeries::new("Prague", vec![98.0, 91.0, 82.0, 66.0, 47.0]),
        ],
        reference: Some(BarSeries::new("Mathis bound", mathis)),
    };
    let frame = Frame::new(
        "Utilization under random loss, 20 ms, 10 Mbit/s (illustrative)",
        Axis::new("packet loss", "%"),
        Axis::new("link utilization", "%"),
    );
    std::fs::write(dir.join("bars.svg"), bar_chart(&frame, &chart)?)?;

    println!(
        "wrote line.svg, cdf.svg, tseq.svg, bars.svg to {}",
        dir.display()
    );
    Ok(())
}
