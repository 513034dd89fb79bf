//! `brisk bench [--seconds S] [--only CASE]... [--repeat N] [--json] [--no-ns3]`:
//! the simulator's speed on the reference loads of `brisk_sim::bench`,
//! beside ns-3 run on the same network in the same invocation. Each Brisk
//! case runs twice: as it is, and with the null cipher (packets left
//! unencrypted at their sealed size), whose results must be identical.
//!
//! ns-3 simulates the `brisk-fq_codel` case (one TCP CUBIC flow and a ping)
//! and the `brisk100-fq_codel` case (100 flows and the ping), each when
//! that case is run, for the same simulated time as Brisk's cases; every
//! ratio printed is computed from two measurements of this run
//! (`compare`): a Brisk case against its ns-3 twin, a CBR load against the
//! one-flow ns-3 run. Without ns-3
//! the bench says why and prints no ratio. The goal is 50 times ns-3, in
//! time per simulated second and in packet-hops per CPU-second. A
//! packet-hop is one packet crossing the bottleneck link, in either
//! direction, to its far end; both simulators count it the same way.
//!
//! CPU time is Brisk's thread's own time on a CPU (Linux's per-thread
//! schedstat) and ns-3's process time as the kernel reports it when the
//! child exits, so other work on a shared machine inflates either far less
//! than wall time; wall time is shown too. Build with `--release`; the bench names
//! the build it runs in.

mod compare;
mod ns3;

use anyhow::{Context, Result, bail};
use brisk_sim::RunOptions;
use brisk_sim::bench::{self, GOAL_SPEEDUP_VS_NS3};
use compare::{Clock, Timing, Versus};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The build this binary is, as named at compile time by the crate's build
/// script: `BRISK_BUILD` when set (a build pipeline names itself, e.g.
/// "release+PGO"), else the cargo profile and its optimisation level.
const BUILD: &str = env!("BRISK_BUILD_LABEL");

/// CPU time per 60 simulated seconds and packet-hops per CPU-second on a
/// 100 Mbit/s, 20 ms dumbbell, beside ns-3 measured in the same run (when
/// installed: Debian's libns3-dev) and the goal of 50 times ns-3. A
/// packet-hop is a packet crossing the bottleneck link.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds per case, for Brisk and ns-3 alike (the reference is 60).
    #[arg(long, default_value = "60", value_parser = crate::seconds::positive)]
    seconds: Duration,
    /// Run only this case (cbr-fq_codel, cbr-fifo, brisk-fq_codel,
    /// brisk100-fq_codel); repeatable.
    #[arg(long)]
    only: Vec<String>,
    /// Run each case this many times, Brisk's and ns-3's alike, and keep
    /// the run with the least CPU of each.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Print one JSON object per case instead of the table.
    #[arg(long)]
    json: bool,
    /// Do not run ns-3 (then no ratio is printed).
    #[arg(long)]
    no_ns3: bool,
}

/// One measured Brisk run.
struct Measured {
    packet_hops: u64,
    steps: u64,
    wall: Duration,
    cpu: Option<Duration>,
    /// The run's results as JSON, to hold the null cipher's run to the
    /// encrypted one's.
    results: String,
}

/// ns-3's side of this invocation: its runs by number of bulk flows, or
/// why there are none.
type Peers = std::result::Result<BTreeMap<u32, ns3::Run>, ns3::Absent>;

pub fn run(args: BenchArgs) -> Result<()> {
    let simulated = args.seconds;
    let seconds = simulated.as_secs_f64();
    let mut cases = bench::cases(simulated).context("built-in bench scenarios")?;
    for name in &args.only {
        if !cases.iter().any(|c| c.name == name) {
            let known: Vec<&str> = cases.iter().map(|c| c.name).collect();
            bail!("no bench case {name:?}; cases: {}", known.join(", "));
        }
    }
    cases.retain(|c| args.only.is_empty() || args.only.iter().any(|o| o == c.name));
    let peers: Peers = if args.no_ns3 {
        Err(ns3::Absent::NotRun)
    } else {
        match ns3::prepare()? {
            Ok(program) => {
                let twins: BTreeSet<u32> = cases.iter().map(|c| c.ns3_flows).collect();
                let mut runs = BTreeMap::new();
                for flows in twins {
                    runs.insert(flows, program.run_best(simulated, flows, args.repeat)?);
                }
                Ok(runs)
            }
            Err(absent) => Err(absent),
        }
    };
    if !args.json {
        print_header(seconds, args.repeat, &peers);
    }
    for case in &cases {
        let brisk = case.name.starts_with("brisk");
        let m = measure_best(&case.scenario, args.repeat, false)?;
        let row = Row::new(case, &m, simulated, &peers);
        // The Brisk cases again with the null cipher: the same packets and
        // results (checked here), without the AEAD's work.
        let null = if brisk {
            let n = measure_best(&case.scenario, args.repeat, true)?;
            if n.results != m.results {
                bail!(
                    "{}: the run without encryption gave other results than the run with it",
                    case.name
                );
            }
            Some((Row::new(case, &n, simulated, &peers), n))
        } else {
            None
        };
        if args.json {
            let mut out = json_row(
                case.name,
                seconds,
                &m,
                &peers,
                row.twin,
                row.versus.as_ref(),
            );
            if let Some((r, n)) = &null {
                out["null_cipher"] = json!({
                    "cpu_s": n.cpu.map(|c| c.as_secs_f64().max(1e-9)),
                    "wall_s": n.wall.as_secs_f64().max(1e-9),
                    "s_per_60_simulated_s": n.cpu.unwrap_or(n.wall).as_secs_f64() * 60.0 / seconds,
                    "results_identical": true,
                    "versus_ns3": r.versus,
                });
            }
            println!("{out}");
        } else {
            print_row(case.name, seconds, &m, row.versus.as_ref());
            if let Some((r, n)) = &null {
                print_row(&format!("{}*", case.name), seconds, n, r.versus.as_ref());
            }
        }
    }
    if !args.json && cases.iter().any(|c| c.name.starts_with("brisk")) {
        println!(
            "* the same case with the null cipher: Brisk's packets unencrypted, each with a \
             zero 16-byte tag in place of the AEAD's, so the same sizes and the same results \
             (checked in this run); ns-3's TCP encrypts nothing."
        );
    }
    Ok(())
}

/// A case's ns-3 twin and the comparison with it.
struct Row<'p> {
    twin: Option<&'p ns3::Run>,
    versus: Option<Versus>,
}

impl<'p> Row<'p> {
    fn new(case: &bench::BenchCase, m: &Measured, simulated: Duration, peers: &'p Peers) -> Self {
        let timing = Timing {
            simulated,
            packet_hops: m.packet_hops,
            wall: m.wall,
            cpu: m.cpu,
        };
        let twin = peers.as_ref().ok().and_then(|p| p.get(&case.ns3_flows));
        let ns3_timing = twin.map(|r| Timing {
            simulated,
            packet_hops: r.report.bottleneck_packet_hops,
            wall: r.wall,
            cpu: Some(r.cpu),
        });
        Row {
            twin,
            versus: compare::versus(&timing, ns3_timing.as_ref()),
        }
    }
}

/// The run with the least CPU of `repeat`.
fn measure_best(
    scenario: &brisk_sim::scenario::Scenario,
    repeat: u32,
    null_cipher: bool,
) -> Result<Measured> {
    (0..repeat.max(1))
        .map(|_| measure(scenario, null_cipher))
        .min_by_key(|m| m.cpu.unwrap_or(m.wall))
        .context("at least one run")
}

fn measure(scenario: &brisk_sim::scenario::Scenario, null_cipher: bool) -> Measured {
    let cpu_before = bench::thread_cpu();
    let started = Instant::now();
    let options = RunOptions {
        null_cipher,
        ..RunOptions::default()
    };
    let r = brisk_sim::run(scenario, options).results;
    let wall = started.elapsed();
    let cpu = bench::thread_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    Measured {
        packet_hops: r.driver.engine.packet_hops,
        steps: r.driver.engine.steps,
        wall,
        cpu,
        results: serde_json::to_string(&r).unwrap_or_default(),
    }
}

/// What the network is, how ns-3 was measured (or why it was not), and
/// the table's header and ns-3 rows.
fn print_header(seconds: f64, repeat: u32, peers: &Peers) {
    println!(
        "{seconds} simulated s per case; 100 Mbit/s each way, 20 ms base RTT.\n\
         packet-hop: a packet crossing the bottleneck link (either direction), \
         counted alike in both simulators. steps: Brisk's engine steps; for ns-3, \
         its scheduled events.\n\
         build: {BUILD}{unoptimised}",
        unoptimised = if cfg!(debug_assertions) {
            " (unoptimised: build with --release to measure speed)"
        } else {
            ""
        }
    );
    if repeat > 1 {
        println!(
            "Every case ran {repeat} times, Brisk's and ns-3's alike; each row keeps its run \
             with the least CPU."
        );
    }
    match peers {
        Ok(runs) => {
            for (flows, r) in runs {
                println!(
                    "ns-{} measured now on the same network: {flows} TCP CUBIC flow(s) and a \
                     10 ms ping through FQ-CoDel (Brisk's {} case), {:.1} Mbit/s goodput.",
                    r.report.version,
                    twin_case(*flows),
                    r.report.goodput_bit_s / 1e6,
                );
            }
            println!(
                "Each brisk row is compared with its ns-3 twin, the cbr rows with the one-flow \
                 run (a different load on the same network).\n\
                 goal: {GOAL_SPEEDUP_VS_NS3:.0}x ns-3 in time per simulated second and in \
                 packet-hops per second."
            );
        }
        Err(absent @ ns3::Absent::NotRun) => println!("{absent}; no ratio printed."),
        Err(ns3::Absent::NotFound(why)) => println!(
            "ns-3 not found: install Debian's libns3-dev to compare; no ratio printed ({}).",
            why.trim_end_matches('.')
        ),
    }
    let ratios = peers.is_ok();
    print!(
        "{:<18} {:>9} {:>12} {:>13} {:>8} {:>9}",
        "case", "hops", "Mhops/CPU-s", "CPU s per 60s", "wall s", "steps"
    );
    if ratios {
        print!(
            " {:>9} {:>9} {:>6} {:>6}",
            "x ns-3 t", "x ns-3 h", "goal t", "goal h"
        );
    }
    println!();
    for (flows, r) in peers.iter().flatten() {
        let cpu_s = r.cpu.as_secs_f64().max(1e-9);
        println!(
            "{:<18} {:>9} {:>12.3} {:>13.1} {:>8.3} {:>9} {:>9} {:>9} {:>6} {:>6}",
            format!("ns-{} {flows} flow(s)", r.report.version),
            r.report.bottleneck_packet_hops,
            r.report.bottleneck_packet_hops as f64 / cpu_s / 1e6,
            cpu_s * 60.0 / seconds,
            r.wall.as_secs_f64(),
            r.report.events,
            "1x",
            "1x",
            "-",
            "-",
        );
    }
}

/// The Brisk case the ns-3 run with `flows` bulk flows reproduces.
fn twin_case(flows: u32) -> String {
    if flows == 1 {
        "brisk-fq_codel".to_string()
    } else {
        format!("brisk{flows}-fq_codel")
    }
}

fn print_row(name: &str, seconds: f64, m: &Measured, versus: Option<&Versus>) {
    let wall_s = m.wall.as_secs_f64().max(1e-9);
    let cpu_s = m.cpu.map(|c| c.as_secs_f64().max(1e-9));
    // Without a CPU clock the wall clock stands in, marked with a `w`.
    let clock = if cpu_s.is_some() { "" } else { "w" };
    let spent = cpu_s.unwrap_or(wall_s);
    print!(
        "{:<18} {:>9} {:>11.2}{clock:1} {:>12.3}{clock:1} {:>8.3} {:>9}",
        name,
        m.packet_hops,
        m.packet_hops as f64 / spent / 1e6,
        spent * 60.0 / seconds,
        wall_s,
        m.steps,
    );
    if let Some(v) = versus {
        let mark = if v.clock == Clock::Wall { "w" } else { "" };
        print!(
            " {:>8.1}x{mark:1} {:>8.1}x{mark:1} {:>6} {:>6}",
            v.speedup_time,
            v.speedup_packet_hops,
            yes_no(v.meets_time_goal),
            yes_no(v.meets_hop_goal),
        );
    }
    println!();
}

fn json_row(
    name: &str,
    seconds: f64,
    m: &Measured,
    peers: &Peers,
    twin: Option<&ns3::Run>,
    versus: Option<&Versus>,
) -> serde_json::Value {
    let wall_s = m.wall.as_secs_f64().max(1e-9);
    let cpu_s = m.cpu.map(|c| c.as_secs_f64().max(1e-9));
    let hops = m.packet_hops as f64;
    let mut row = json!({
        "case": name,
        "simulated_s": seconds,
        "packet_hops": m.packet_hops,
        "steps": m.steps,
        "build": BUILD,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "packet_hops_per_wall_s": hops / wall_s,
        "packet_hops_per_cpu_s": cpu_s.map(|c| hops / c),
        "s_per_60_simulated_s": cpu_s.unwrap_or(wall_s) * 60.0 / seconds,
        "ns3": twin.map(|r| json!({
            "case": twin_case(r.report.flows),
            "report": r.report,
            "wall_s": r.wall.as_secs_f64(),
            "cpu_s": r.cpu.as_secs_f64(),
            "s_per_60_simulated_s": r.cpu.as_secs_f64() * 60.0 / seconds,
        })),
        "versus_ns3": versus,
    });
    if let Err(absent) = peers {
        row["ns3_absent"] = json!(absent.to_string());
    }
    row
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
