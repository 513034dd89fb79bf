//! `brisk lab [--suite NAME|DIR] [--out DIR] [--seed N] [--quick] [--jobs N]
//! [--ip v4|v6] [--force] [--no-capture]`: runs a lab suite and writes its report.

use anyhow::{Context, Result};
use brisk_lab::output::check_dir;
use brisk_lab::suite::{DEFAULT_SUITE, Suite};
use brisk_lab::{Progress, RunConfig};
use brisk_sim::scenario::IpFamily;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct LabArgs {
    /// A built-in suite ("default", shipped in lab/default) or a suite
    /// directory of the same layout (see docs/LAB.md).
    #[arg(long, default_value = DEFAULT_SUITE)]
    suite: String,
    /// Where report.html, results.json and each run's files go. Refused if
    /// it exists and is not empty, unless --force.
    #[arg(long, default_value = "brisk-lab-out")]
    out: PathBuf,
    /// Seed of every scenario (the report is a pure function of it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Shorten every scenario to the suite's quick duration (CI).
    #[arg(long)]
    quick: bool,
    /// Scenarios run at once (default: the available cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run every scenario over IPv4 or IPv6, whatever its file says.
    #[arg(long, value_parser = ["v4", "v6"])]
    ip: Option<String>,
    /// Write into a non-empty --out, replacing files of the same names.
    #[arg(long)]
    force: bool,
    /// Keep no bottleneck pcap per run: less memory and disk for long
    /// suites; the report then links no captures.
    #[arg(long)]
    no_capture: bool,
}

pub fn run(args: LabArgs) -> Result<()> {
    check_dir(&args.out, args.force)?;
    let suite = Suite::find(&args.suite)?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let config = RunConfig {
        seed: args.seed,
        quick: args.quick,
        jobs,
        ip: args.ip.as_deref().map(|v| {
            if v == "v6" {
                IpFamily::V6
            } else {
                IpFamily::V4
            }
        }),
        capture: !args.no_capture,
    };
    let total = suite.scenario_count();
    eprintln!(
        "brisk lab: {} scenarios of suite {} on {} threads{}",
        total,
        suite.location,
        jobs.clamp(1, total.max(1)),
        if args.quick { ", quick" } else { "" }
    );
    // The bar draws on stderr when both streams are a terminal; otherwise
    // (CI, a pipe, stdout to a file) each finished scenario is one plain
    // line on stderr.
    let interactive = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let bar = interactive.then(|| {
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:32.cyan/blue} {pos}/{len} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = |p: Progress<'_>| match &bar {
        Some(bar) => {
            bar.set_position(p.done as u64);
            bar.set_message(p.path.to_string());
        }
        None => eprintln!("[{}/{}] {}", p.done, p.total, p.path),
    };
    let started = std::time::Instant::now();
    let lab = brisk_lab::run(&suite, &config, &progress)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let wall = started.elapsed();
    let files = lab
        .write_to(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    print!("{}", brisk_lab::text::summary(&lab.report));
    eprintln!(
        "ran in {:.2} s of wall time; wrote {} ({files} files)",
        wall.as_secs_f64(),
        args.out.join("report.html").display()
    );
    Ok(())
}
