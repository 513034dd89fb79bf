//! `brisk`: one command for the lab, the transport and the TCP tools.
//!
//! Layer: the edge. Parses arguments, reads files, prints and writes
//! results; everything else lives in the library crates.

// System calls live in the few modules that allow `unsafe` below.
#![deny(unsafe_code)]

mod bench;
mod closed_pipe;
mod get;
mod keygen;
mod lab;
mod live;
mod live_summary;
mod optimize;
mod perf;
mod progress;
mod qlog;
mod rpm;
mod seconds;
mod serve;
mod sim;
mod sim_plots;
mod sweep;
mod tcp;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "brisk",
    version,
    about = "Make network apps feel instant: measure and remove delay."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario in the deterministic simulator.
    Sim(sim::SimArgs),
    /// Run a grid of scenarios (axes x seeds) on all cores into a Parquet store.
    Sweep(sweep::SweepArgs),
    /// Measure the simulator's speed on reference loads, beside ns-3.
    Bench(bench::BenchArgs),
    /// Run a lab suite and write its report (report.html, results.json).
    Lab(lab::LabArgs),
    /// Kernel TCP tools: doctor, responsive server, measuring client.
    Tcp(tcp::TcpArgs),
    /// Run real programs through the simulator's models in real time (root).
    Live(live::LiveArgs),
    /// Bridge two interfaces through the transparent TCP optimizer (root).
    Optimize(optimize::OptimizeArgs),
    /// Write a server key pair: PREFIX.key (secret) and PREFIX.pub.
    Keygen(keygen::KeygenArgs),
    /// Serve the files under a directory over Brisk.
    Serve(serve::ServeArgs),
    /// Fetch a file from `brisk serve`, checking its SHA-256.
    Get(get::GetArgs),
    /// Throughput and request/response latency over Brisk.
    Perf(perf::PerfArgs),
    /// Responsiveness under load (round trips per minute) over HTTP/2.
    Rpm(rpm::RpmArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Sim(_) | Command::Sweep(_) | Command::Bench(_)
    ) {
        closed_pipe::end_quietly_on_closed_pipe();
    }
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Lab(args) => lab::run(args),
        Command::Tcp(args) => tcp::run(args),
        Command::Live(args) => live::run(args),
        Command::Optimize(args) => optimize::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Get(args) => get::run(args),
        Command::Perf(args) => perf::run(args),
        Command::Rpm(args) => rpm::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brisk: {e:#}");
            ExitCode::FAILURE
        }
    }
}
