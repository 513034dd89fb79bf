//! One whole run as `brisk live` performs it: lab up, server started,
//! client (a command, an interactive shell, or the built-in bulk transfer)
//! run to its end, server stopped, results built, lab torn down.

use crate::bulk::{self, BulkConfig, BulkReport};
use crate::capture::{BOTTLENECK_CAPTURE_LIMIT_BYTES, BottleneckPcap};
use crate::error::LiveError;
use crate::lab::{Lab, LabConfig};
use crate::process::{self, Program, Streams};
use crate::results::LiveResults;
use crate::signal;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Grace a server gets between SIGTERM and SIGKILL at the end of a run.
const SERVER_GRACE: Duration = Duration::from_millis(300);

/// What runs in the client's namespace.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `sh -c COMMAND`; the run ends when it exits.
    Command(String),
    /// An interactive shell (`$SHELL`, else `/bin/sh`).
    Shell,
    /// The built-in bulk TCP download from the server.
    Bulk(BulkConfig),
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct LiveRun {
    pub lab: LabConfig,
    /// `sh -c COMMAND` in the server's namespace, stopped at the end.
    pub server: Option<String>,
    pub workload: Workload,
    /// Send the programs' stdout to stderr (keeps `--json` output clean).
    pub quiet_stdout: bool,
    /// End the run after this long even if the client still runs.
    pub max_time: Option<Duration>,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct LiveOutcome {
    pub results: LiveResults,
    /// The client's exit code (the shell convention: 128 + signal when
    /// killed; 124 when `max_time` ended it; 0 for a bulk transfer).
    pub exit_code: i32,
    /// The server command's exit code (shell convention) when it failed
    /// on its own before the client finished; a server that ends when
    /// told to, or exits 0 by itself (`iperf3 -s -1`), is not a failure.
    pub server_failure: Option<i32>,
}

impl LiveOutcome {
    /// What `brisk live` exits with: the client's code, else 1 when the
    /// server failed (its measurements are then not to be trusted).
    pub fn process_exit_code(&self) -> i32 {
        match (self.exit_code, self.server_failure) {
            (0, Some(_)) => 1,
            (code, _) => code,
        }
    }
}

/// Runs `run` to its end; Ctrl-C or SIGTERM end it early, cleanly.
pub fn run(run: LiveRun) -> Result<LiveOutcome, LiveError> {
    signal::install();
    let streams = if run.quiet_stdout {
        Streams::StdoutToStderr
    } else {
        Streams::Inherit
    };
    let mut config = run.lab;
    let out_dir = config.out.clone();
    if out_dir.is_some() && config.bottleneck_capture_bytes.is_none() {
        config.bottleneck_capture_bytes = Some(BOTTLENECK_CAPTURE_LIMIT_BYTES);
    }
    let lab = Lab::up(config)?;
    if let Workload::Bulk(b) = &run.workload {
        lab.set_tcp_ecn(b.ecn)?;
    }
    let mut server = match &run.server {
        Some(cmd) => Some(lab.spawn_server(cmd, streams)?),
        None => None,
    };
    let (exit_code, bulk) = match &run.workload {
        Workload::Command(cmd) => {
            let mut client = lab.spawn_client(cmd, streams)?;
            (finish_client(&lab, &mut client, run.max_time, false)?, None)
        }
        Workload::Shell => {
            let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
            eprintln!(
                "brisk live: shell in namespace {} (BRISK_SERVER={}); exit it to end the run",
                lab.names().client,
                lab.server_addr()
            );
            let mut client = Program::spawn_argv(
                lab.client_ns(),
                "shell",
                &[&shell],
                &lab.env(),
                Streams::Interactive,
            )?;
            (finish_client(&lab, &mut client, run.max_time, true)?, None)
        }
        Workload::Bulk(b) => (0, Some(run_bulk(&lab, b)?)),
    };
    let mut server_failure = None;
    if let Some(mut s) = server.take() {
        server_failure = failed_on_its_own(&mut s, run.server.as_deref().unwrap_or_default())?;
        s.stop(SERVER_GRACE);
    }
    let (results, pcap) = lab.finish_with_pcap(Some(exit_code), bulk)?;
    if let (Some(dir), Some(pcap)) = (out_dir, pcap) {
        write_bottleneck_pcap(&dir, &pcap)?;
    }
    Ok(LiveOutcome {
        results,
        exit_code,
        server_failure,
    })
}

/// Checks, before the run stops it, whether the server already ended with
/// a failure; says so on stderr and returns its exit code. Its own stderr
/// went to the terminal, above the warning.
fn failed_on_its_own(server: &mut Program, command: &str) -> Result<Option<i32>, LiveError> {
    let Some(status) = server.try_wait()? else {
        return Ok(None);
    };
    if status.success() {
        return Ok(None);
    }
    eprintln!(
        "brisk live: warning: the server command {command:?} {} before the client finished \
         (its own error output, if any, is above); the run is reported as failed",
        process::describe_exit(status)
    );
    Ok(Some(process::exit_code(status)))
}

/// Writes `bottleneck.pcap` beside the run's other files, and says on
/// stderr when the capture's memory limit cut it short.
fn write_bottleneck_pcap(dir: &Path, pcap: &BottleneckPcap) -> Result<(), LiveError> {
    let path = dir.join("bottleneck.pcap");
    std::fs::write(&path, &pcap.bytes)
        .map_err(LiveError::io(format!("write {}", path.display())))?;
    if pcap.skipped_packets > 0 {
        eprintln!(
            "brisk live: bottleneck.pcap holds {} packets; {} more were left out (past its {} MiB limit, or not raw IP)",
            pcap.packets,
            pcap.skipped_packets,
            pcap.limit_bytes >> 20
        );
    }
    Ok(())
}

fn run_bulk(lab: &Lab, b: &BulkConfig) -> Result<BulkReport, LiveError> {
    let bind = SocketAddr::new(lab.server_bind_addr(), bulk::BULK_PORT);
    let target = SocketAddr::new(lab.server_addr(), bulk::BULK_PORT);
    bulk::run(lab.server_ns(), bind, lab.client_ns(), target, b)
}

/// Waits for the client and turns how it ended into an exit code.
fn finish_client(
    lab: &Lab,
    client: &mut Program,
    max_time: Option<Duration>,
    interactive: bool,
) -> Result<i32, LiveError> {
    match lab.wait(client, max_time, interactive)? {
        Some(status) => Ok(process::exit_code(status)),
        None => Ok(match signal::received() {
            Some(sig) => 128 + sig,
            None => 124,
        }),
    }
}
