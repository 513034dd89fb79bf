//! `brisk-netbench`: runs every contender's bulk and rpc tests on loopback
//! in one process and prints one table with the ratios (or `--json`);
//! with `--many`, quinn and Brisk with many connections to a server
//! process each (this binary again, as `--serve-many`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use brisk_netbench::heap::CountingAllocator;
use brisk_netbench::many::{self, BriskFleet, ManyPlan, ManyReport, QuinnFleet};
use brisk_netbench::report::{Report, Settings};
use brisk_netbench::rpc::RpcPlan;
use brisk_netbench::{
    Outcome, Plan, brisk::Brisk, quic::Quinn, run_contender, size, tcp::KernelTcp,
};
use clap::{Parser, ValueEnum};

/// Counts live heap bytes, so the `--many` server can report its own.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Brisk vs quinn vs kernel TCP on loopback: bulk throughput per
/// CPU-second and request/response latency, side by side.
#[derive(Debug, Parser)]
#[command(name = "brisk-netbench")]
struct Args {
    /// Bytes for the bulk test (units: B, KB, MB, GB, KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    bytes: u64,
    /// Seconds of rpc warm-up before measuring.
    #[arg(long, default_value_t = 1.0)]
    warmup_secs: f64,
    /// Seconds of measured rpc requests.
    #[arg(long, default_value_t = 5.0)]
    rpc_secs: f64,
    /// Most seconds one test may take before it counts as failed.
    #[arg(long, default_value_t = 300.0)]
    timeout_secs: f64,
    /// Rounds: each round runs every contender once, in order, so load
    /// from elsewhere on the machine falls on all of them alike; each
    /// contender's rounds are pooled. `--bytes` and `--rpc-secs` are per
    /// round.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Use ::1 instead of 127.0.0.1.
    #[arg(long)]
    v6: bool,
    /// Contenders to run, baseline first (ratios compare later with earlier);
    /// with `--many`, only quinn and brisk count, and quinn runs first.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Which::Tcp, Which::Quinn, Which::Brisk])]
    only: Vec<Which>,
    /// Tests to run.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TestName::Bulk, TestName::Rpc])]
    tests: Vec<TestName>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to this file (the table still prints).
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Busy-poll limit of the `brisk` contender in microseconds (0: off);
    /// default: brisk-io's default.
    #[arg(long)]
    brisk_busy_poll_us: Option<u64>,
    /// Busy-poll limit of the `brisk-bp` contender in microseconds, which
    /// is otherwise Brisk at its defaults: `--only brisk,brisk-bp`
    /// compares the setting against the default in one run.
    #[arg(long, default_value_t = 50)]
    bp_us: u64,
    /// Instead of the tests above: quinn and Brisk each with this many
    /// connections to one server process (comma-separated counts, e.g.
    /// 1000,10000): the server's memory per connection, handshake time,
    /// requests/s and p50/p99 latency, for `--rpc-secs` each.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    many: Vec<u64>,
    /// Requests in flight at once in the `--many` case.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    many_concurrency: u64,
    /// Worker threads of the `--many` case's server runtime: above 1, the
    /// server's application tasks on different connections run at once
    /// beside its endpoint task (the contended case).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    many_server_threads: u64,
    /// Internal: run as the `--many` case's server process for this stack
    /// (the benchmark starts it itself).
    #[arg(long, hide = true, value_enum)]
    serve_many: Option<ManyStack>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ManyStack {
    Brisk,
    Quinn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    Tcp,
    Quinn,
    Brisk,
    /// Brisk with the busy-poll limit of `--bp-us`.
    #[value(name = "brisk-bp")]
    BriskBp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestName {
    Bulk,
    Rpc,
}

fn parse_size(text: &str) -> Result<u64, String> {
    match size::parse_bytes(text) {
        Ok(0) => Err("the bulk test needs at least one byte".to_owned()),
        Ok(bytes) => Ok(bytes),
        Err(error) => Err(error.to_string()),
    }
}

fn seconds(name: &str, secs: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("--{name} must be a non-negative number of seconds"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let durations = (
        seconds("warmup-secs", args.warmup_secs),
        seconds("rpc-secs", args.rpc_secs),
        seconds("timeout-secs", args.timeout_secs),
    );
    let (warmup, measure, limit) = match durations {
        (Ok(warmup), Ok(measure), Ok(limit)) => (warmup, measure, limit),
        (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
            eprintln!("brisk-netbench: {error}");
            return ExitCode::from(2);
        }
    };
    let ip = if args.v6 {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let plan = Plan {
        ip,
        bulk_bytes: args.tests.contains(&TestName::Bulk).then_some(args.bytes),
        rpc: args
            .tests
            .contains(&TestName::Rpc)
            .then_some(RpcPlan { warmup, measure }),
        limit,
    };
    if let Some(stack) = args.serve_many {
        return serve_many(stack, ip, &args.many, args.many_server_threads);
    }
    if !args.many.is_empty() {
        return run_many(&args, ip, measure, limit);
    }
    let ip_version = if args.v6 { 6 } else { 4 };
    let settings = Settings::new(ip_version, args.rounds, plan.bulk_bytes, plan.rpc);
    let brisk = match args.brisk_busy_poll_us {
        Some(us) => Brisk::with_busy_poll("brisk", Duration::from_micros(us)),
        None => Brisk::default(),
    };
    let brisk_bp = Brisk::with_busy_poll("brisk-bp", Duration::from_micros(args.bp_us));
    let mut order: Vec<&str> = Vec::new();
    let (mut bulk, mut rpc, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=args.rounds {
        for which in &args.only {
            let (name, outcome): (&str, Outcome) = match which {
                Which::Tcp => ("tcp", run_contender(KernelTcp, &plan)),
                Which::Quinn => ("quinn", run_contender(Quinn, &plan)),
                Which::Brisk => ("brisk", run_contender(brisk, &plan)),
                Which::BriskBp => ("brisk-bp", run_contender(brisk_bp, &plan)),
            };
            if !args.json {
                eprintln!("brisk-netbench: round {round}/{}: {name} done", args.rounds);
            }
            if !order.contains(&name) {
                order.push(name);
            }
            bulk.extend(outcome.bulk);
            rpc.extend(outcome.rpc);
            failures.extend(outcome.failures);
        }
    }
    let report = Report::new(settings, &order, bulk, rpc, failures);
    if !emit(&args, &report) {
        return ExitCode::FAILURE;
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Prints `report` as a table, or as JSON to standard output and/or the
/// `--json-out` file; false (having said why) if the JSON could not be made
/// or written.
fn emit(args: &Args, report: &(impl serde::Serialize + std::fmt::Display)) -> bool {
    if args.json || args.json_out.is_some() {
        let json = match serde_json::to_string_pretty(report) {
            Ok(json) => json,
            Err(error) => {
                eprintln!("brisk-netbench: JSON: {error}");
                return false;
            }
        };
        if let Some(path) = &args.json_out
            && let Err(error) = std::fs::write(path, format!("{json}\n"))
        {
            eprintln!("brisk-netbench: writing {}: {error}", path.display());
            return false;
        }
        if args.json {
            println!("{json}");
        }
    }
    if !args.json {
        print!("{report}");
    }
    true
}

/// The `--many` case's server process (started by [`run_many`]).
fn serve_many(stack: ManyStack, ip: IpAddr, many: &[u64], threads: u64) -> ExitCode {
    let connections = many
        .first()
        .map_or(1, |&n| usize::try_from(n).unwrap_or(usize::MAX));
    let threads = usize::try_from(threads).unwrap_or(1);
    let served = match stack {
        ManyStack::Brisk => many::server::serve_child(BriskFleet, ip, connections, threads),
        ManyStack::Quinn => many::server::serve_child(QuinnFleet, ip, connections, threads),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("brisk-netbench: many server: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The `--many` case: quinn, then Brisk, at each connection count, each
/// against a server process of its own (this binary again).
fn run_many(args: &Args, ip: IpAddr, measure: Duration, limit: Duration) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("brisk-netbench: where is this binary: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut results = Vec::new();
    let mut failed = false;
    let plan = |connections: u64| ManyPlan {
        connections: usize::try_from(connections).unwrap_or(usize::MAX),
        concurrency: usize::try_from(args.many_concurrency).unwrap_or(usize::MAX),
        measure,
        limit,
        progress: true,
        server_threads: usize::try_from(args.many_server_threads).unwrap_or(1),
    };
    // quinn first, as the baseline, whatever order `--only` gives.
    let stacks = [Which::Quinn, Which::Brisk]
        .into_iter()
        .filter(|s| args.only.contains(s));
    let stacks: Vec<Which> = stacks.collect();
    for &n in &args.many {
        for &stack in &stacks {
            let (name, run) = match stack {
                Which::Quinn => ("quinn", many::run(QuinnFleet, &exe, ip, plan(n))),
                _ => ("brisk", many::run(BriskFleet, &exe, ip, plan(n))),
            };
            match run {
                Ok(result) => {
                    failed |= result.failed_requests > 0;
                    results.push(result);
                }
                Err(error) => {
                    eprintln!("brisk-netbench: {name} with {n} connections: {error}");
                    failed = true;
                }
            }
        }
    }
    let report = ManyReport::new(if args.v6 { 6 } else { 4 }, plan(0), results);
    if !emit(args, &report) {
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
