//! ns-3 beside Brisk in `brisk bench`: the dumbbell program (its source is
//! built into the binary) compiled against the system's ns-3 on first use,
//! cached under a name derived from the source and the build flags, and
//! run as a child whose own CPU time the kernel reports when it exits.
//!
//! ns-3 is found with pkg-config (`$PKG_CONFIG`, else `pkg-config`) and
//! compiled with `$CXX`, else `g++`. Debian's `libns3-dev` provides both
//! the modules and the flags; `scripts/setup` installs it.

#![allow(unsafe_code)]

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The program: the bench's `brisk-fq_codel` case written for ns-3, with
/// as many bulk flows as asked (`brisk100-fq_codel` with 100).
const SOURCE: &str = include_str!("../../../../bench/ns3/dumbbell.cc");

/// The ns-3 modules the program uses, as pkg-config names them.
const MODULES: &[&str] = &[
    "ns3-core",
    "ns3-network",
    "ns3-internet",
    "ns3-internet-apps",
    "ns3-point-to-point",
    "ns3-traffic-control",
    "ns3-applications",
];

/// What the program prints (one JSON object) about the run it simulated.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub version: String,
    pub simulated_s: f64,
    /// Bulk TCP flows.
    pub flows: u32,
    pub delivered_bytes: u64,
    pub goodput_bit_s: f64,
    /// Packets that crossed the bottleneck, either direction.
    pub bottleneck_packet_hops: u64,
    /// Packets that crossed any link, access links included.
    pub link_packet_hops: u64,
    pub events: u64,
}

/// One run of the program, timed from outside.
#[derive(Debug, Clone)]
pub struct Run {
    pub report: Report,
    pub wall: Duration,
    /// The child's user plus system time, from the kernel.
    pub cpu: Duration,
}

/// Why there is no ns-3 measurement: said to the user instead of a ratio.
#[derive(Debug, Clone)]
pub enum Absent {
    /// The user asked for none (`--no-ns3`).
    NotRun,
    /// ns-3 or a compiler is not installed; the reason, as found.
    NotFound(String),
}

impl std::fmt::Display for Absent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Absent::NotRun => write!(f, "ns-3 not run (--no-ns3)"),
            Absent::NotFound(why) => write!(f, "ns-3 not found: {}", why.trim_end_matches('.')),
        }
    }
}

/// A compiled program, ready to run.
pub struct Program {
    path: PathBuf,
}

/// Finds ns-3 and a compiler and compiles the program if its cached build
/// is missing. `Ok(Err(_))`: ns-3 or the compiler is not installed.
/// `Err(_)`: they are, but building failed.
pub fn prepare() -> Result<std::result::Result<Program, Absent>> {
    let pkg_config = std::env::var_os("PKG_CONFIG").unwrap_or_else(|| "pkg-config".into());
    let flags = match Command::new(&pkg_config)
        .args(["--cflags", "--libs"])
        .args(MODULES)
        .output()
    {
        Err(e) => {
            return Ok(Err(Absent::NotFound(format!(
                "cannot run {} ({e})",
                pkg_config.to_string_lossy()
            ))));
        }
        Ok(out) if !out.status.success() => {
            let why = String::from_utf8_lossy(&out.stderr);
            let first = why.lines().next().unwrap_or("no ns-3 modules");
            return Ok(Err(Absent::NotFound(format!(
                "pkg-config: {}",
                first.trim()
            ))));
        }
        Ok(out) => String::from_utf8_lossy(&out.stdout).into_owned(),
    };
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let cxx = std::env::var_os("CXX").unwrap_or_else(|| "g++".into());
    let version = match Command::new(&cxx).arg("--version").output() {
        Ok(out) if out.status.success() => out.stdout,
        _ => {
            return Ok(Err(Absent::NotFound(format!(
                "no C++ compiler ({} --version failed)",
                cxx.to_string_lossy()
            ))));
        }
    };
    let mut hash = Sha256::new();
    hash.update(SOURCE);
    hash.update(cxx.as_encoded_bytes());
    hash.update(flags.join(" "));
    hash.update(&version);
    let digest = hash.finalize();
    let tag: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let dir = cache_dir();
    let path = dir.join(format!("ns3-dumbbell-{tag}"));
    if !path.exists() {
        compile(&cxx, &flags, &dir, &path)?;
    }
    Ok(Ok(Program { path }))
}

/// `$XDG_CACHE_HOME/brisk`, else `~/.cache/brisk`, else the temp dir.
fn cache_dir() -> PathBuf {
    let xdg = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty());
    match (xdg, std::env::var_os("HOME")) {
        (Some(d), _) => PathBuf::from(d).join("brisk"),
        (None, Some(home)) => PathBuf::from(home).join(".cache").join("brisk"),
        (None, None) => std::env::temp_dir().join("brisk-cache"),
    }
}

fn compile(cxx: &OsString, flags: &[&str], dir: &Path, out: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Written and renamed under this process's own names, so two benches
    // compiling at once never see each other's half-written files.
    let pid = std::process::id();
    let source = dir.join(format!("ns3-dumbbell-{pid}.cc"));
    let partial = dir.join(format!("ns3-dumbbell-{pid}.partial"));
    std::fs::write(&source, SOURCE).with_context(|| format!("writing {}", source.display()))?;
    let spinner = crate::progress::spinner("{spinner} {msg}", Duration::from_millis(120));
    spinner.set_message("compiling the ns-3 program (first use; it is cached afterwards)");
    let result = Command::new(cxx)
        .args(["-O2", "-std=c++17", "-w", "-o"])
        .arg(&partial)
        .arg(&source)
        .args(flags)
        .output();
    spinner.finish_and_clear();
    let _ = std::fs::remove_file(&source);
    let output = result.with_context(|| format!("running {}", cxx.to_string_lossy()))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "compiling the ns-3 program failed:\n{}",
            tail(&String::from_utf8_lossy(&output.stderr), 20)
        );
    }
    std::fs::rename(&partial, out).with_context(|| format!("moving to {}", out.display()))
}

impl Program {
    /// The run with the least CPU of `repeat`: Brisk's cases keep their
    /// best of as many, so neither side gains from the other's noise.
    pub fn run_best(&self, simulated: Duration, flows: u32, repeat: u32) -> Result<Run> {
        let mut best: Option<Run> = None;
        for _ in 0..repeat.max(1) {
            let run = self.run(simulated, flows)?;
            if best.as_ref().is_none_or(|b| run.cpu < b.cpu) {
                best = Some(run);
            }
        }
        best.context("at least one run")
    }

    /// Simulates `simulated` seconds with `flows` bulk flows, showing
    /// progress on a terminal.
    pub fn run(&self, simulated: Duration, flows: u32) -> Result<Run> {
        let seconds = simulated.as_secs_f64();
        let started = Instant::now();
        let mut child = Command::new(&self.path)
            .arg(format!("--seconds={seconds}"))
            .arg(format!("--flows={flows}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", self.path.display()))?;
        let bar = crate::progress::bar(
            seconds.ceil() as u64,
            "ns-3 {bar:32.cyan/blue} {pos}/{len} simulated s, {elapsed} {wide_msg}",
        );
        let stderr = child.stderr.take().context("ns-3's stderr")?;
        let progress = bar.clone();
        // Reads progress lines as they come and keeps the rest for errors.
        let errors = std::thread::spawn(move || {
            let mut kept = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                match line.strip_prefix("progress ").map(str::parse::<u64>) {
                    Some(Ok(s)) => progress.set_position(s),
                    _ => {
                        kept.push_str(&line);
                        kept.push('\n');
                    }
                }
            }
            kept
        });
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .context("ns-3's stdout")?
            .read_to_string(&mut stdout)
            .context("reading ns-3's output")?;
        let (status, cpu) = wait_with_cpu(child.id())?;
        let wall = started.elapsed();
        let errors = errors.join().unwrap_or_default();
        bar.finish_and_clear();
        if !status.success() {
            bail!("the ns-3 program failed ({status}):\n{}", tail(&errors, 20));
        }
        let report: Report = serde_json::from_str(stdout.trim())
            .with_context(|| format!("reading the ns-3 program's output {:?}", stdout.trim()))?;
        Ok(Run { report, wall, cpu })
    }
}

/// Reaps the child and returns its exit status and CPU time (user plus
/// system), as the kernel counted them.
fn wait_with_cpu(pid: u32) -> Result<(std::process::ExitStatus, Duration)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(pid).context("child pid")?;
    let mut status = 0;
    // SAFETY: `rusage` is plain integers, for which all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; the pid is our own child,
    // which nothing else reaps (its `Child` is never waited on).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        bail!("waiting for ns-3: {}", std::io::Error::last_os_error());
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let cpu = time(usage.ru_utime) + time(usage.ru_stime);
    Ok((std::process::ExitStatus::from_raw(status), cpu))
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
