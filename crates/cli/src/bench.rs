//! `brisk bench [--seconds S] [--only CASE]... [--repeat N] [--json]`: the
//! simulator's speed on the reference loads of `brisk_sim::bench`, beside
//! ns-3's figures for the same network.
//!
//! CPU time is the thread's own time on a CPU (Linux's per-thread
//! schedstat), so other work on a shared machine inflates it far less than
//! wall time; wall time is shown too. Build with `--release`.

use anyhow::{Context, Result, bail};
use brisk_sim::RunOptions;
use brisk_sim::bench::{self, NS3_PACKET_HOPS_PER_S, NS3_WALL_S_PER_60S};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds per case (the reference is 60).
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Run only this case (cbr-fq_codel, cbr-fifo, brisk-fq_codel); repeatable.
    #[arg(long)]
    only: Vec<String>,
    /// Run each case this many times and keep the run with the least CPU.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Print one JSON object per case instead of the table.
    #[arg(long)]
    json: bool,
}

/// One measured run.
struct Measured {
    packet_hops: u64,
    steps: u64,
    wall: Duration,
    cpu: Option<Duration>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        bail!("--seconds must be a positive number, got {}", args.seconds);
    }
    let simulated = Duration::from_secs_f64(args.seconds);
    let mut cases = bench::cases(simulated).context("built-in bench scenarios")?;
    for name in &args.only {
        if !cases.iter().any(|c| c.name == name) {
            let known: Vec<&str> = cases.iter().map(|c| c.name).collect();
            bail!("no bench case {name:?}; cases: {}", known.join(", "));
        }
    }
    cases.retain(|c| args.only.is_empty() || args.only.iter().any(|o| o == c.name));
    if !args.json {
        println!(
            "{:.0} s simulated per case; 100 Mbit/s each way, 20 ms base RTT; ns-3.37 takes {NS3_WALL_S_PER_60S:.0} s \
             per 60 s at {:.0} k packet-hops/s.\n\
             per 60 s: CPU seconds per 60 simulated seconds (one thread: an idle machine's wall time); \
             x ns3 t: ns-3's time over that; x ns3 h: packet-hops per CPU second over ns-3's.",
            args.seconds,
            NS3_PACKET_HOPS_PER_S / 1e3
        );
        println!(
            "{:<15} {:>9} {:>9} {:>8} {:>8} {:>10} {:>10} {:>10} {:>8} {:>8}",
            "case",
            "hops",
            "steps",
            "wall s",
            "cpu s",
            "Mhop/wall",
            "Mhop/cpu",
            "per 60 s",
            "x ns3 t",
            "x ns3 h"
        );
    }
    for case in &cases {
        let m = (0..args.repeat.max(1))
            .map(|_| measure(&case.scenario))
            .min_by_key(|m| m.cpu.unwrap_or(m.wall))
            .context("at least one run")?;
        report(case.name, args.seconds, &m, args.json);
    }
    Ok(())
}

fn measure(scenario: &brisk_sim::scenario::Scenario) -> Measured {
    let cpu_before = thread_cpu();
    let started = Instant::now();
    let r = brisk_sim::run(scenario, RunOptions::default()).results;
    let wall = started.elapsed();
    let cpu = thread_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    Measured {
        packet_hops: r.engine.packet_hops,
        steps: r.engine.steps,
        wall,
        cpu,
    }
}

fn report(name: &str, seconds: f64, m: &Measured, as_json: bool) {
    let hops = m.packet_hops as f64;
    let wall_s = m.wall.as_secs_f64().max(1e-9);
    let cpu_s = m.cpu.map(|c| c.as_secs_f64().max(1e-9));
    let per_wall = hops / wall_s;
    let per_cpu = cpu_s.map(|c| hops / c);
    // Time for 60 simulated seconds, CPU if known: what the issue compares.
    let per_60s = cpu_s.unwrap_or(wall_s) * 60.0 / seconds;
    let x_time = NS3_WALL_S_PER_60S / per_60s;
    let x_hops = per_cpu.unwrap_or(per_wall) / NS3_PACKET_HOPS_PER_S;
    if as_json {
        let row = json!({
            "case": name,
            "simulated_s": seconds,
            "packet_hops": m.packet_hops,
            "steps": m.steps,
            "wall_s": wall_s,
            "cpu_s": cpu_s,
            "packet_hops_per_wall_s": per_wall,
            "packet_hops_per_cpu_s": per_cpu,
            "s_per_60_simulated_s": per_60s,
            "ns3_wall_s_per_60s": NS3_WALL_S_PER_60S,
            "ns3_packet_hops_per_s": NS3_PACKET_HOPS_PER_S,
            "speedup_time_vs_ns3": x_time,
            "speedup_hops_vs_ns3": x_hops,
        });
        println!("{row}");
        return;
    }
    let cpu_col = |v: Option<f64>, w: usize, p: usize| match v {
        Some(v) => format!("{v:>w$.p$}"),
        None => format!("{:>w$}", "n/a"),
    };
    println!(
        "{:<15} {:>9} {:>9} {:>8.3} {} {:>10.2} {} {:>8.3} s {:>7.0}x {:>7.0}x",
        name,
        m.packet_hops,
        m.steps,
        wall_s,
        cpu_col(cpu_s, 8, 3),
        per_wall / 1e6,
        cpu_col(per_cpu.map(|v| v / 1e6), 10, 2),
        per_60s,
        x_time,
        x_hops
    );
}

/// The calling thread's time on a CPU so far (Linux), if readable.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}
