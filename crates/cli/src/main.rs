//! `brisk`: one command for the lab, the transport and the TCP tools.
//!
//! Layer: the edge. Parses arguments, reads files, prints and writes
//! results; everything else lives in the library crates.

mod bench;
mod lab;
mod live;
mod sim;
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
    /// Measure the simulator's speed on reference loads, beside ns-3.
    Bench(bench::BenchArgs),
    /// Run a lab suite and write its report (report.html, results.json).
    Lab(lab::LabArgs),
    /// Kernel TCP tools: doctor, responsive server, measuring client.
    Tcp(tcp::TcpArgs),
    /// Run real programs through the simulator's models in real time (root).
    Live(live::LiveArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Lab(args) => lab::run(args),
        Command::Tcp(args) => tcp::run(args),
        Command::Live(args) => live::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brisk: {e:#}");
            ExitCode::FAILURE
        }
    }
}
