//! `brisk live SCENARIO.toml --server 'CMD' --client 'CMD' [--json] [--out DIR]`:
//! real programs in network namespaces joined by the real-time router.

use crate::live_summary;
use anyhow::{Result, bail};
use brisk_live::bulk::BulkConfig;
use brisk_live::router::LoopConfig;
use brisk_live::{IpMode, LabConfig, LiveResults, LiveRun, Workload};
use brisk_netmodel::network::QueueTables;
use brisk_sim::scenario::Scenario;
use indicatif::ProgressBar;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct LiveArgs {
    /// The scenario file: its [link.*] and [queue*] tables shape the path
    /// (see docs/LIVE.md).
    scenario: PathBuf,
    /// Command run in the server's namespace (`sh -c`); stopped at the end.
    #[arg(long)]
    server: Option<String>,
    /// Command run in the client's namespace (`sh -c`) with BRISK_SERVER
    /// set; the run ends when it exits, with its exit code.
    #[arg(long, conflicts_with_all = ["shell", "bulk"])]
    client: Option<String>,
    /// Open an interactive shell in the client's namespace instead.
    #[arg(long, conflicts_with = "bulk")]
    shell: bool,
    /// Run the built-in bulk download (server to client) for the
    /// scenario's duration instead of a client command.
    #[arg(long, value_parser = ["tcp"])]
    bulk: Option<String>,
    /// Congestion control of the bulk sender (see
    /// /proc/sys/net/ipv4/tcp_available_congestion_control).
    #[arg(long, default_value = "cubic", requires = "bulk")]
    cc: String,
    /// Classic ECN for the bulk transfer (net.ipv4.tcp_ecn in both
    /// namespaces).
    #[arg(long, default_value = "off", value_parser = ["on", "off"], requires = "bulk")]
    ecn: String,
    /// Seed for every random draw of the models (overrides the file's).
    #[arg(long)]
    seed: Option<u64>,
    /// Address family: dual stack pointing programs at IPv4 (v4) or IPv6
    /// (v6), or an IPv6-only client reaching an IPv4-only server through
    /// the router's NAT64/DNS64 (v6only). Default: the file's `ip`.
    #[arg(long, value_parser = ["v4", "v6", "v6only"])]
    ip: Option<String>,
    /// Print the results as one JSON object on stdout (the programs'
    /// stdout then goes to stderr).
    #[arg(long)]
    json: bool,
    /// Write results.json, client.pcap, server.pcap, bottleneck.pcap and
    /// events.csv here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// End the run after this many seconds even if the client still runs.
    #[arg(long, value_parser = crate::seconds::positive)]
    max_time: Option<Duration>,
    /// Busy-poll this many microseconds before each model deadline.
    #[arg(long, default_value_t = 50)]
    spin_us: u64,
    /// Do not ask for a real-time priority for the router thread.
    #[arg(long)]
    no_realtime: bool,
}

/// Runs the lab; exits the process with the client's exit code when it is
/// not zero, or 1 when the server command failed (after everything is torn
/// down and written).
pub fn run(args: LiveArgs) -> Result<()> {
    let scenario = Scenario::load(&args.scenario)?;
    let tables = scenario.network.queue_tables.clone();
    for warning in &scenario.warnings {
        eprintln!("warning: {}: {warning}", args.scenario.display());
    }
    if !scenario.flows.is_empty() {
        eprintln!(
            "brisk live: the scenario's [[flows]] are simulator traffic and are not run here; \
             use --client/--server or --bulk"
        );
    }
    let workload = match (&args.client, args.shell, &args.bulk) {
        (Some(cmd), false, None) => Workload::Command(cmd.clone()),
        (None, true, None) => Workload::Shell,
        (None, false, Some(_)) => Workload::Bulk(BulkConfig {
            cc: args.cc.clone(),
            ecn: args.ecn == "on",
            duration: scenario.duration,
        }),
        _ => bail!("give one of --client 'CMD', --shell or --bulk tcp"),
    };
    let text = std::fs::read_to_string(&args.scenario)?;
    let optimizer = brisk_live::optimizer_table::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.scenario.display()))?;
    let mut lab = LabConfig::new(scenario.network);
    lab.optimizer = optimizer;
    lab.name = scenario.name;
    lab.seed = args.seed.unwrap_or(scenario.seed);
    lab.ip = scenario.ip.into();
    lab.snaplen = scenario.capture.snaplen;
    if let Some(ip) = &args.ip {
        lab.ip = match ip.as_str() {
            "v6" => IpMode::V6,
            "v6only" => IpMode::V6Only,
            _ => IpMode::V4,
        };
    }
    lab.out = args.out.clone();
    lab.router = LoopConfig {
        spin: Duration::from_micros(args.spin_us),
        realtime: !args.no_realtime,
        ..LoopConfig::default()
    };
    let max_time = args.max_time;
    let bar = bulk_progress(&workload, args.json);
    let outcome = brisk_live::run(LiveRun {
        lab,
        server: args.server.clone(),
        workload,
        quiet_stdout: args.json,
        max_time,
    });
    bar.finish_and_clear();
    let outcome = outcome?;
    if let Some(dir) = &args.out {
        crate::sim::write_results(dir, &outcome.results)?;
    }
    let r = &outcome.results;
    let kinds = [r.queue.kind, r.queue_up.kind];
    for w in live_summary::unconfigured_queue_warnings(live_summary::traffic(r), kinds, &tables) {
        eprintln!("warning: {w}");
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &outcome.results)?;
        writeln!(out)?;
    } else {
        print_summary(&outcome.results, &tables);
        if let Some(dir) = &args.out {
            eprintln!("wrote {}", dir.display());
        }
    }
    if outcome.process_exit_code() != 0 {
        std::io::stdout().flush()?;
        std::process::exit(outcome.process_exit_code());
    }
    Ok(())
}

/// A ticking line while the built-in bulk transfer runs, when stderr is a
/// terminal: a client command shows its own output instead.
fn bulk_progress(workload: &Workload, json: bool) -> ProgressBar {
    let Workload::Bulk(b) = workload else {
        return ProgressBar::hidden();
    };
    if json {
        return ProgressBar::hidden();
    }
    let bar = crate::progress::spinner(
        "{spinner} bulk tcp transfer: {elapsed} {msg}",
        Duration::from_millis(200),
    );
    bar.set_message(format!("of {:.0} s", b.duration.as_secs_f64()));
    bar
}

fn print_summary(r: &LiveResults, tables: &QueueTables) {
    print!("{}", live_summary::summary(r, tables));
    if let Some(b) = &r.driver.bulk {
        println!(
            "bulk tcp ({}, ecn {}): {:.3} Mbit/s ({:.3} in the second half), {} retransmits, rtt {:.1} ms",
            b.cc,
            if b.ecn { "on" } else { "off" },
            b.goodput_mbps,
            b.steady_goodput_mbps,
            b.sender.retransmitted_segments,
            b.sender.rtt_ms
        );
    }
    let f = &r.driver.fidelity;
    let rate = |d: &brisk_live::results::DirectionFidelityResults| match d.rate_error {
        Some(e) => format!("{:+.3}%", e * 100.0),
        None => "n/a".into(),
    };
    println!(
        "fidelity: delay error p50/p99 down {:.3}/{:.3} ms up {:.3}/{:.3} ms; rate error down {} up {}; \
         timer lateness p99 {:.3} ms; router cpu {:.0}%; tun drops {}",
        f.down.delay_error_ms.p50,
        f.down.delay_error_ms.p99,
        f.up.delay_error_ms.p50,
        f.up.delay_error_ms.p99,
        rate(&f.down),
        rate(&f.up),
        f.timer_lateness_ms.p99,
        f.router_cpu_fraction * 100.0,
        f.tun_drops
    );
    for w in &f.warnings {
        eprintln!("warning: {w}");
    }
}
