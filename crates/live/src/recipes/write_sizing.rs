//! H2O's write sizing at a long RTT (Kazuho Oku): a client asks for a
//! large response and, when its first byte arrives (a browser finding a
//! script at the top of a page), for a small urgent one. The server's
//! scheduler sends the urgent response first, so its latency measures what
//! the kernel had already committed ahead of it: with the default send
//! buffer (autotuned to about twice the window) a further round trip of the
//! large response; with `TCP_INFO` write sizing about two segments.
//! The seed measured 511 ms -> 250 ms at 250 ms RTT.

use super::{RecipeError, block_on_in, median, server_bind, start_server};
use crate::lab::Lab;
use brisk_tcp::client::{self, GetConfig, GetReport};
use brisk_tcp::connect::{ConnectOptions, Nat64Policy};
use brisk_tcp::lowat::WriterConfig;
use brisk_tcp::server::ServeConfig;
use brisk_tcp::write_sizing::WriteSizingConfig;
use serde::Serialize;
use std::time::Duration;

/// One configuration's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SizingExperiment {
    /// Size writes from `TCP_INFO` (H2O's defaults) or not.
    pub sizing: bool,
    pub large_bytes: u64,
    pub small_bytes: u64,
    /// Fetches, each on a new connection; the report takes medians.
    pub repeats: u32,
}

impl SizingExperiment {
    /// A 1 MB page and a 2 KB script, three fetches.
    pub fn seed(sizing: bool) -> SizingExperiment {
        SizingExperiment {
            sizing,
            large_bytes: 1 << 20,
            small_bytes: 2048,
            repeats: 3,
        }
    }
}

/// What the runs measured (medians over the repeats).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizingOutcome {
    pub sizing: bool,
    /// The small response's latency from its request: the H2O number.
    pub small_complete_ms: f64,
    pub small_complete_runs_ms: Vec<f64>,
    /// Large-response bytes that arrived while the small one was pending.
    pub waited_behind_bytes: f64,
    /// The client's smoothed RTT at the end, from `TCP_INFO`.
    pub rtt_ms: f64,
    pub large_complete_ms: f64,
}

/// Runs the fetches against a server in `lab` with sizing on or off.
pub fn run(lab: &Lab, exp: &SizingExperiment) -> Result<SizingOutcome, RecipeError> {
    let bind = server_bind(lab);
    let mut serve = ServeConfig::new(bind);
    serve.writer = WriterConfig {
        lowat_bytes: None,
        sizing: exp.sizing.then(WriteSizingConfig::default),
    };
    let _server = start_server(lab, serve)?;
    let host = lab.server_addr().to_string();
    let get = GetConfig {
        large_bytes: exp.large_bytes,
        small_bytes: Some(exp.small_bytes),
        small_delay: Duration::ZERO,
        fastopen: false,
        connect: ConnectOptions {
            nat64: Nat64Policy::Off,
            ..ConnectOptions::default()
        },
        timeout: Duration::from_secs(30),
    };
    let mut reports: Vec<GetReport> = Vec::new();
    for _ in 0..exp.repeats {
        let report = block_on_in(lab.client_ns(), || client::get(&host, bind.port(), &get))?
            .map_err(|e| RecipeError::failed("write-sizing fetch", e))?;
        reports.push(report);
    }
    let small: Vec<f64> = reports
        .iter()
        .map(|r| r.small.map_or(f64::NAN, |s| s.complete_ms))
        .collect();
    let of = |f: fn(&GetReport) -> f64| median(&reports.iter().map(f).collect::<Vec<_>>());
    Ok(SizingOutcome {
        sizing: exp.sizing,
        small_complete_ms: median(&small),
        small_complete_runs_ms: small,
        waited_behind_bytes: of(|r| r.small_waited_behind_bytes as f64),
        rtt_ms: of(|r| r.tcp_info.map_or(f64::NAN, |i| f64::from(i.rtt_us) / 1e3)),
        large_complete_ms: of(|r| r.large.complete_ms),
    })
}
