//! Brisk's Prague and the reference UDP Prague peer (`kind =
//! "udp_prague"`, built with the `reference-prague` feature) side by side
//! in one run, through DualPI2 exactly as Linux configures it by default
//! (1 ms step, 10% classic protection) at 20 ms base RTT: alone, beside a
//! Brisk CUBIC download and beside a Brisk BBR download, 4 to 100 Mbit/s,
//! both address families. The runs are those of `l4s_slow_links`: alone
//! 9 s, beside CUBIC 40 s, beside BBR 20 s, rates over the second half,
//! the scenarios' seed (1).
//!
//! The table: `cargo test --profile ci -p brisk-sim --features
//! reference-prague --test l4s_reference_table -- --ignored --nocapture
//! table`; the trace behind Prague's share beside BBR: `... --nocapture
//! bbr_trace` (`RATE` in Mbit/s, default 4; `STEP=3p` for DualPI2's step
//! counted in packets).
#![cfg(feature = "reference-prague")]

mod l4s_common;

use brisk_sim::engine::FlowSeries;
use brisk_sim::results::Results;
use brisk_sim::scenario::IpFamily;
use brisk_sim::{RunOptions, run};
use brisk_time::Instant;
use l4s_common::{
    DUALPI2_LINUX, FAMILIES, Flow, WindowSample, bulk, dumbbell, queue_delay_ms, rate_mbps,
    run_series, series, window_qlog,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The link rates of the table, in Mbit/s.
const RATES: [f64; 5] = [4.0, 10.0, 25.0, 50.0, 100.0];
const RTT_MS: u64 = 20;
/// Prague alone runs as long as in `l4s_slow_links`.
const ALONE_SECS: u64 = 8 + RTT_MS / 20;
/// Beside CUBIC too: CUBIC's few cuts need a 20 s second half to average
/// out.
const BESIDE_CUBIC_SECS: u64 = 40;
/// Beside BBR too.
const BESIDE_BBR_SECS: u64 = 20;

/// How long a run of Prague beside `other` lasts.
fn beside_secs(other: &str) -> u64 {
    if other == "cubic" {
        BESIDE_CUBIC_SECS
    } else {
        BESIDE_BBR_SECS
    }
}

/// Which Prague: Brisk's transport with its Prague controller, or the
/// reference UDP Prague sender.
#[derive(Clone, Copy, PartialEq)]
enum Prague {
    Brisk,
    Reference,
}

impl Prague {
    fn flow(self) -> Flow<'static> {
        match self {
            Prague::Brisk => bulk("prague", "prague", RTT_MS),
            Prague::Reference => Flow {
                name: "prague",
                body: "kind = \"udp_prague\"",
                rtt_ms: RTT_MS,
            },
        }
    }
}

fn rate(mbit: f64) -> String {
    format!("\"{}kbit\"", (mbit * 1000.0) as u64)
}

/// Prague alone: the link's share it delivered and its queue delay p99
/// (ms), over the second half.
fn alone(p: Prague, mbit: f64, ip: IpFamily) -> (f64, f64) {
    let s = dumbbell(&rate(mbit), DUALPI2_LINUX, "", &[p.flow()], ALONE_SECS);
    let (_, all) = run_series(&s, ip);
    let f = series(&all, "prague");
    let (from, to) = half(ALONE_SECS);
    (
        rate_mbps(f, from, to) / mbit,
        queue_delay_ms(f, from, to, 0.99),
    )
}

/// Prague beside a Brisk bulk flow with controller `other`: both runs'
/// results and series.
fn beside_run(p: Prague, mbit: f64, other: &str, ip: IpFamily) -> (Results, Vec<FlowSeries>) {
    let s = dumbbell(
        &rate(mbit),
        DUALPI2_LINUX,
        "",
        &[p.flow(), bulk(other, other, RTT_MS)],
        beside_secs(other),
    );
    run_series(&s, ip)
}

/// Prague's and `other`'s delivered rates (Mbit/s) over the second half.
fn beside(p: Prague, mbit: f64, other: &str, ip: IpFamily) -> (f64, f64) {
    let (_, all) = beside_run(p, mbit, other, ip);
    let (from, to) = half(beside_secs(other));
    (
        rate_mbps(series(&all, "prague"), from, to),
        rate_mbps(series(&all, other), from, to),
    )
}

/// The classic control: Brisk CUBIC's and Brisk BBR's rates (Mbit/s)
/// sharing the same DualPI2 (both in its C queue), over the second half.
fn cubic_beside_bbr(mbit: f64, ip: IpFamily) -> (f64, f64) {
    let s = dumbbell(
        &rate(mbit),
        DUALPI2_LINUX,
        "",
        &[bulk("cubic", "cubic", RTT_MS), bulk("bbr", "bbr", RTT_MS)],
        BESIDE_BBR_SECS,
    );
    let (_, all) = run_series(&s, ip);
    let (from, to) = half(BESIDE_BBR_SECS);
    (
        rate_mbps(series(&all, "cubic"), from, to),
        rate_mbps(series(&all, "bbr"), from, to),
    )
}

fn half(secs: u64) -> (Duration, Duration) {
    (Duration::from_secs(secs) / 2, Duration::from_secs(secs))
}

/// The table for Brisk and the reference, both families, printed
/// as Markdown (run by hand, about a minute in the ci profile).
#[test]
#[ignore = "prints a table; run it by hand"]
fn table() {
    println!(
        "Linux-default DualPI2, 20 ms base RTT, second half of each run \
         (alone {ALONE_SECS} s, beside CUBIC {BESIDE_CUBIC_SECS} s, beside BBR \
         {BESIDE_BBR_SECS} s), seed 1"
    );
    println!(
        "| family | link | alone: Brisk | alone: reference | beside CUBIC: Brisk | \
         beside CUBIC: reference | beside BBR: Brisk | beside BBR: reference | \
         CUBIC beside BBR |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for ip in FAMILIES {
        for mbit in RATES {
            let mut cells = Vec::new();
            for p in [Prague::Brisk, Prague::Reference] {
                let (u, q) = alone(p, mbit, ip);
                cells.push(format!("{:.1}%, {q:.2} ms", 100.0 * u));
            }
            for other in ["cubic", "bbr"] {
                for p in [Prague::Brisk, Prague::Reference] {
                    let (a, b) = beside(p, mbit, other, ip);
                    cells.push(format!("{a:.2} vs {b:.2} ({:.2})", a / b));
                }
            }
            let (c, b) = cubic_beside_bbr(mbit, ip);
            cells.push(format!("{c:.2} vs {b:.2} ({:.2})", c / b));
            println!("| {ip:?} | {mbit} Mbit/s | {} |", cells.join(" | "));
        }
    }
}

/// Prague (Brisk's or the reference) beside Brisk BBR at `RATE` Mbit/s
/// (default 4), per second: each flow's rate and queue delay (Prague's in
/// the L queue, BBR's in the C queue), the senders' windows and pacing
/// rates; then the whole run's CE share of Prague's packets and BBR's
/// drops, from which DualPI2's base probability p' follows (BBR's packets
/// are dropped with p'^2, Prague's marked with 2p' or by the step).
#[test]
#[ignore = "prints a trace; run it by hand"]
fn bbr_trace() {
    let mbit: f64 = std::env::var("RATE").map_or(4.0, |r| r.parse().expect("RATE: Mbit/s"));
    // `STEP=3p`: the step counts packets queued instead of 1 ms of
    // sojourn, so a packet waiting behind one on the wire is not marked.
    let queue = match std::env::var("STEP") {
        Ok(step) => format!("{DUALPI2_LINUX}\nstep_threshold = \"{step}\""),
        Err(_) => DUALPI2_LINUX.to_string(),
    };
    println!("queue: {queue:?}");
    for p in [Prague::Brisk, Prague::Reference] {
        let s = dumbbell(
            &rate(mbit),
            &queue,
            "",
            &[p.flow(), bulk("bbr", "bbr", RTT_MS)],
            BESIDE_BBR_SECS,
        );
        let samples: Arc<Mutex<Vec<WindowSample>>> = Arc::default();
        let qlog = window_qlog(&samples);
        let done = run(
            &s,
            RunOptions {
                ip: Some(IpFamily::V4),
                series: true,
                qlog: Some(qlog),
                ..Default::default()
            },
        );
        let all = done.outcome.series();
        let samples = samples.lock().expect("the run is over");
        let who = if p == Prague::Brisk {
            "Brisk Prague"
        } else {
            "reference UDP Prague"
        };
        println!("\n{who} beside Brisk BBR, {mbit} Mbit/s, 20 ms, Linux-default DualPI2, IPv4");
        println!(
            "from s | Prague Mbit/s | BBR Mbit/s | Prague queue p50/p99 ms | \
             BBR queue p50/p99 ms | Prague cwnd kB, pacing Mbit/s | BBR cwnd kB, pacing Mbit/s, srtt ms"
        );
        let last = |flow: &str, to: Instant| {
            samples
                .iter()
                .rfind(|w| w.flow == flow && w.client && w.at < to)
                .cloned()
        };
        for sec in 0..BESIDE_BBR_SECS {
            let (from, to) = (Duration::from_secs(sec), Duration::from_secs(sec + 1));
            let z = Instant::ZERO + to;
            let q = |f: &FlowSeries| {
                if f.queue_delay
                    .iter()
                    .any(|(t, _)| *t >= Instant::ZERO + from && *t <= z)
                {
                    format!(
                        "{:.2} / {:.2}",
                        queue_delay_ms(f, from, to, 0.5),
                        queue_delay_ms(f, from, to, 0.99)
                    )
                } else {
                    "-".into()
                }
            };
            let (pf, bf) = (series(&all, "prague"), series(&all, "bbr"));
            let window = |s: Option<WindowSample>, rtt: bool| match s {
                Some(s) if rtt => format!(
                    "{:.1}, {:.2}, {:.1}",
                    s.cwnd_bytes as f64 / 1e3,
                    s.pacing_bps as f64 / 1e6,
                    s.srtt.as_secs_f64() * 1e3
                ),
                Some(s) => format!(
                    "{:.1}, {:.2}",
                    s.cwnd_bytes as f64 / 1e3,
                    s.pacing_bps as f64 / 1e6
                ),
                None => "-".into(),
            };
            println!(
                "{sec:>2} | {:.2} | {:.2} | {} | {} | {} | {}",
                rate_mbps(pf, from, to),
                rate_mbps(bf, from, to),
                q(pf),
                q(bf),
                window(last("prague", z), false),
                window(last("bbr", z), true),
            );
        }
        let flow = |name: &str| {
            done.results
                .flows
                .iter()
                .find(|f| f.name == name)
                .expect("flow")
        };
        let (pr, bb) = (flow("prague"), flow("bbr"));
        let drop_share = bb.queue_drops as f64 / bb.sent_packets.max(1) as f64;
        let (from, to) = half(BESIDE_BBR_SECS);
        let waits = &series(&all, "prague").queue_delay;
        let over_step = waits
            .iter()
            .filter(|(_, d)| *d > Duration::from_millis(1))
            .count() as f64
            / waits.len().max(1) as f64;
        println!(
            "whole run: Prague CE {:.1}% of {} packets delivered, {:.1}% waited over the \
             1 ms step; BBR {} of {} packets \
             dropped ({:.2}%, so p' about {:.3} and the coupled mark 2p' {:.3}); \
             second half: Prague {:.2}, BBR {:.2} Mbit/s",
            100.0 * pr.ce_fraction,
            pr.delivered_packets,
            100.0 * over_step,
            bb.queue_drops,
            bb.sent_packets,
            100.0 * drop_share,
            drop_share.sqrt(),
            2.0 * drop_share.sqrt(),
            rate_mbps(series(&all, "prague"), from, to),
            rate_mbps(series(&all, "bbr"), from, to),
        );
    }
    // The control: a classic flow that answers drops (Brisk CUBIC) beside
    // the same BBR, both in the C queue.
    let s = dumbbell(
        &rate(mbit),
        &queue,
        "",
        &[bulk("cubic", "cubic", RTT_MS), bulk("bbr", "bbr", RTT_MS)],
        BESIDE_BBR_SECS,
    );
    let (r, all) = run_series(&s, IpFamily::V4);
    let (from, to) = half(BESIDE_BBR_SECS);
    let drops = |name: &str| {
        let f = r.flows.iter().find(|f| f.name == name).expect("flow");
        format!(
            "{} of {} packets dropped, {} CE",
            f.queue_drops, f.sent_packets, f.ce_packets
        )
    };
    println!(
        "\nBrisk CUBIC beside Brisk BBR, {mbit} Mbit/s, second half: CUBIC {:.2}, BBR {:.2} \
         Mbit/s; CUBIC's queue p50 {:.2} ms, BBR's {:.2} ms; CUBIC {}; BBR {}",
        rate_mbps(series(&all, "cubic"), from, to),
        rate_mbps(series(&all, "bbr"), from, to),
        queue_delay_ms(series(&all, "cubic"), from, to, 0.5),
        queue_delay_ms(series(&all, "bbr"), from, to, 0.5),
        drops("cubic"),
        drops("bbr"),
    );
}

/// Prague beside Brisk BBR at 4 Mbit/s: BBR keeps a standing queue in the
/// C queue at DualPI2's 15 ms target and answers its drops barely, so the
/// PI controller holds its base probability high (BBR loses several
/// percent of its packets), and most of Prague's packets come back marked
/// (coupled marks at twice that probability, plus the step for any packet
/// that waits behind one of BBR's 3 ms packets). Brisk's Prague keeps a
/// small share there, yet more than the reference does in the same
/// network (0.22 / 0.26 of BBR's rate against 0.06 / 0.10, IPv4 / IPv6).
#[test]
fn beside_bbr_at_4mbit_prague_is_marked_on_most_packets_and_keeps_more_than_the_reference() {
    let (from, to) = half(BESIDE_BBR_SECS);
    for ip in FAMILIES {
        let mut ratios = Vec::new();
        for p in [Prague::Brisk, Prague::Reference] {
            let (r, all) = beside_run(p, 4.0, "bbr", ip);
            let flow = |name: &str| r.flows.iter().find(|f| f.name == name).expect("flow");
            let (prague, bbr) = (series(&all, "prague"), series(&all, "bbr"));
            let ratio = rate_mbps(prague, from, to) / rate_mbps(bbr, from, to);
            let bbr_queue_ms = queue_delay_ms(bbr, from, to, 0.5);
            let bbr_drops = flow("bbr").queue_drops as f64 / flow("bbr").sent_packets as f64;
            let ce = flow("prague").ce_fraction;
            let what = format!(
                "{ip:?} {}: Prague / BBR {ratio:.2}, BBR's queue p50 {bbr_queue_ms:.1} ms, \
                 BBR's drops {:.1}%, Prague's CE {:.1}%",
                if p == Prague::Brisk {
                    "Brisk"
                } else {
                    "reference"
                },
                100.0 * bbr_drops,
                100.0 * ce
            );
            println!("{what}");
            assert!(bbr_queue_ms >= 10.0, "{what}");
            assert!(bbr_drops >= 0.005, "{what}");
            assert!(ce >= 0.7, "{what}");
            ratios.push(ratio);
        }
        assert!(
            ratios[0] > 1.5 * ratios[1],
            "{ip:?}: Brisk {:.2}, reference {:.2}",
            ratios[0],
            ratios[1]
        );
    }
}
