//! `brisk sim SCENARIO.toml [--seed N] [--duration D] [--json] [--out DIR]
//! [--qlog DIR [--qlog-events LIST]] [--null-cipher]`.

use anyhow::{Context, Result};
use brisk_proto::qlog::{EventClasses, QlogStart};
use brisk_sim::FlowQlog;
use brisk_sim::capture::PcapSink;
use brisk_sim::scenario::{IpFamily, Scenario, parse_duration};
use brisk_sim::{RunOptions, results::Results};
use indicatif::ProgressBar;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
pub struct SimArgs {
    /// The scenario file (TOML; see docs/SCENARIOS.md).
    scenario: PathBuf,
    /// Seed for every random draw (overrides the file's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Virtual time to simulate ("10s", "500ms"), instead of the file's
    /// `duration`; flows still running then are cut short.
    #[arg(long, value_parser = positive_duration)]
    duration: Option<Duration>,
    /// Print the results as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Write results.json, bottleneck.pcap and SVG plots (delivered
    /// bytes, RTT, queue delay, time-sequence graphs) into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write a qlog trace of both ends of every brisk flow into this
    /// directory (`<flow>-client.sqlog`, `<flow>-server.sqlog`), on the
    /// run's virtual clock.
    #[arg(long)]
    qlog: Option<PathBuf>,
    /// qlog event classes: "all" or a list of connectivity, handshake,
    /// packets (one event per packet), recovery, congestion.
    #[arg(long, default_value_t = EventClasses::default())]
    qlog_events: EventClasses,
    /// Run over IPv6 (or IPv4) whatever the file says.
    #[arg(long, value_parser = ["v4", "v6"])]
    ip: Option<String>,
    /// Brisk flows leave their packets unencrypted, with a zero 16-byte
    /// tag in place of the AEAD's: the same sizes and the same results at
    /// less CPU (captures then show the payloads in the clear).
    #[arg(long)]
    null_cipher: bool,
}

pub fn run(args: SimArgs) -> Result<()> {
    let mut scenario = Scenario::load(&args.scenario)?;
    scenario.require_flows(&args.scenario.display().to_string())?;
    for warning in &scenario.warnings {
        eprintln!("warning: {}: {warning}", args.scenario.display());
    }
    if let Some(d) = args.duration {
        scenario.duration = d;
    }
    let mut pcap = match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let path = dir.join("bottleneck.pcap");
            let file =
                File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
            Some(PcapSink::new(
                BufWriter::new(file),
                scenario.capture.snaplen,
            )?)
        }
        None => None,
    };
    let bar = progress_bar(scenario.duration);
    let mut report_progress = |reached: Duration| bar.set_position(reached.as_millis() as u64);
    let options = RunOptions {
        progress: Some(&mut report_progress),
        seed: args.seed,
        capture: pcap
            .as_mut()
            .map(|p| p as &mut dyn brisk_sim::engine::CaptureSink),
        // The plots of --out; the results do not depend on it.
        series: args.out.is_some(),
        qlog: match &args.qlog {
            Some(dir) => Some(qlog_files(dir, args.qlog_events)?),
            None => None,
        },
        ip: args.ip.as_deref().map(|v| {
            if v == "v6" {
                IpFamily::V6
            } else {
                IpFamily::V4
            }
        }),
        null_cipher: args.null_cipher,
    };
    let started = std::time::Instant::now();
    let run = brisk_sim::run(&scenario, options);
    let wall = started.elapsed();
    bar.finish_and_clear();
    if let (Some(dir), Some(pcap)) = (&args.out, pcap) {
        pcap.finish().context("cannot write bottleneck.pcap")?;
        write_results(dir, &run.results)?;
        crate::sim_plots::write(dir, &run)?;
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &run.results)?;
        writeln!(out)?;
    } else {
        print_table(&run.results);
        let hops = run.results.driver.engine.packet_hops as f64;
        eprintln!(
            "simulated {:.1} s in {:.3} s of wall time ({:.2} M packet-hops/s)",
            run.results.duration_s,
            wall.as_secs_f64(),
            hops / wall.as_secs_f64().max(1e-9) / 1e6
        );
        if let Some(dir) = &args.out {
            eprintln!("wrote {}", dir.display());
        }
    }
    Ok(())
}

/// A bar of virtual time on a terminal, cleared when the run ends.
fn progress_bar(duration: Duration) -> ProgressBar {
    let bar = crate::progress::bar(
        duration.as_millis() as u64,
        "simulating {bar:40} {msg} elapsed {elapsed}, eta {eta}",
    );
    let total = duration.as_secs_f64();
    bar.set_message(format!("of {total:.0} s of virtual time"));
    bar
}

/// qlog files in `dir`, one per end of each brisk flow; `reference_time`
/// is the connection's start in milliseconds since the start of the run.
fn qlog_files(dir: &Path, classes: EventClasses) -> Result<FlowQlog> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir.to_path_buf();
    Ok(std::sync::Arc::new(move |flow: &str, s: &QlogStart| {
        let name = format!(
            "{}-{}",
            crate::sim_plots::file_name(flow),
            crate::qlog::side(s.vantage)
        );
        let reference_ms = s.now.as_nanos() as f64 / 1e6;
        crate::qlog::open(&dir, &name, s, reference_ms, classes)
    }))
}

/// Writes `results` as `DIR/results.json` (pretty, newline-terminated): the
/// file `brisk sim` and `brisk live` both leave in their `--out` folder.
pub(crate) fn write_results(dir: &Path, results: &impl serde::Serialize) -> Result<()> {
    let path = dir.join("results.json");
    let json = serde_json::to_string_pretty(results)?;
    std::fs::write(&path, json + "\n").with_context(|| format!("cannot write {}", path.display()))
}

fn print_table(r: &Results) {
    println!(
        "{} (seed {}, {}, {:.1} s): link {:.1}% busy, queue {} drops {} marks {}",
        if r.scenario.is_empty() {
            "scenario"
        } else {
            &r.scenario
        },
        r.seed,
        r.ip,
        r.duration_s,
        r.link.utilization * 100.0,
        r.queue.kind,
        r.queue.drops,
        r.queue.marks
    );
    println!(
        "{:<14} {:<7} {:>10} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "flow", "kind", "goodput", "loss", "CE", "rtt p50", "rtt p99", "queue p50", "queue p99"
    );
    for f in &r.flows {
        println!(
            "{:<14} {:<7} {:>6.2} Mb/s {:>6.2}% {:>5.1}% {:>6.1} ms {:>6.1} ms {:>6.1} ms {:>6.1} ms",
            f.name,
            f.kind,
            f.goodput_mbps,
            f.loss_rate * 100.0,
            f.ce_fraction * 100.0,
            f.rtt_ms.p50,
            f.rtt_ms.p99,
            f.queue_delay_ms.p50,
            f.queue_delay_ms.p99
        );
    }
}

/// A `--duration`: a scenario duration, and more than zero.
fn positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be greater than zero".into()),
        d => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_override_is_a_positive_scenario_duration() {
        assert_eq!(positive_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(positive_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(positive_duration("0s").is_err());
        assert!(positive_duration("fast").is_err());
        assert!(positive_duration("-1s").is_err());
    }
}
