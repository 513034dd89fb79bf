//! `brisk optimize --radio IF --internet IF [--config FILE] [--subscriber PREFIX]...`:
//! the transparent TCP optimizer as a bump in the wire between two real
//! interfaces (root). Counters go to stderr every report interval; Ctrl-C
//! or SIGTERM stops it with a summary.

use anyhow::{Context, Result, bail};
use brisk_live::bridge::{Bridge, BridgeSettings, Prefix};
use brisk_live::signal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct OptimizeArgs {
    /// The interface toward the mobile clients (the radio network).
    #[arg(long)]
    radio: Option<String>,
    /// The interface toward the servers (the internet).
    #[arg(long)]
    internet: Option<String>,
    /// A TOML settings file (interfaces, subscribers, [optimizer] limits;
    /// docs/OPTIMIZER.md); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Optimize only clients in this prefix (repeat for more); default
    /// every client. Others pass untouched.
    #[arg(long = "subscriber", value_name = "PREFIX")]
    subscribers: Vec<Prefix>,
    /// Bridge without optimizing anything (a baseline to compare against).
    #[arg(long)]
    no_optimize: bool,
    /// Seconds between counter reports on stderr (0: only the summary).
    #[arg(long, value_parser = report_seconds)]
    report_every: Option<Duration>,
}

/// A number of seconds, zero allowed (no reports).
fn report_seconds(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    crate::seconds::positive(text)
}

pub fn run(args: OptimizeArgs) -> Result<()> {
    let mut settings = BridgeSettings::new("", "");
    if let Some(path) = &args.config {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        settings
            .apply_file(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    if let Some(r) = args.radio {
        settings.radio = r;
    }
    if let Some(i) = args.internet {
        settings.internet = i;
    }
    if !args.subscribers.is_empty() {
        settings.subscribers = args.subscribers;
    }
    if args.no_optimize {
        settings.optimizer = None;
    }
    if let Some(every) = args.report_every {
        settings.report_every = (!every.is_zero()).then_some(every);
    }
    signal::install();
    let bridge = Bridge::open(&settings)?;
    for note in bridge.notes() {
        eprintln!("brisk optimize: {note}");
    }
    eprintln!("brisk optimize: running; Ctrl-C or SIGTERM stops it with a summary");
    let summary = bridge.run(&|| signal::received().is_some(), &mut |line| {
        eprintln!("brisk optimize: {line}")
    })?;
    eprintln!("brisk optimize: {}", summary.text);
    if summary.held_bytes_left > 0 {
        bail!(
            "stopped with {} bytes acknowledged to servers but not delivered to clients",
            summary.held_bytes_left
        );
    }
    Ok(())
}
