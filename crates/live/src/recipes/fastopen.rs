//! TCP Fast Open saving a round trip on repeat connections (WWDC 2015,
//! OK.ru): a client fetches a small response on a few fresh connections
//! in a row and times the first response byte from the start of each
//! connection. Without Fast Open each fetch costs the handshake's round
//! trip plus the request's. With it, the first connection only asks for a
//! cookie (the same two round trips); later ones carry the request in the
//! SYN and the answer follows the SYN-ACK, one round trip in all.
//!
//! Linux gates Fast Open per network namespace (`net.ipv4.tcp_fastopen`,
//! 3 = client and server), so the run sets it in both of the lab's.

use super::{RecipeError, block_on_in, median, server_bind, set_fastopen, start_server};
use crate::lab::Lab;
use brisk_tcp::client::{self, GetConfig};
use brisk_tcp::connect::{ConnectOptions, Nat64Policy};
use brisk_tcp::server::ServeConfig;
use serde::Serialize;
use std::time::Duration;

/// One configuration's connections.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TfoExperiment {
    pub fastopen: bool,
    /// Fresh connections in a row (the first fetches the cookie).
    pub connections: u32,
    pub response_bytes: u64,
}

impl TfoExperiment {
    pub fn new(fastopen: bool) -> TfoExperiment {
        TfoExperiment {
            fastopen,
            connections: 4,
            response_bytes: 1024,
        }
    }
}

/// One connection's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TfoConnection {
    /// First response byte, from the start of the connection.
    pub first_byte_ms: f64,
    pub connect_ms: f64,
    /// Request bytes the SYN carried.
    pub syn_bytes: usize,
    pub syn_data_acked: bool,
}

/// What the connections measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TfoOutcome {
    pub fastopen: bool,
    pub connections: Vec<TfoConnection>,
    /// The first connection's time to first byte.
    pub first_ms: f64,
    /// Median over the repeat connections.
    pub repeat_ms: f64,
    /// Whether every repeat connection's SYN data was acknowledged.
    pub repeat_syn_data_acked: bool,
    /// The client's smoothed RTT on the last connection.
    pub rtt_ms: f64,
}

/// Runs the connections against a server in `lab`.
pub fn run(lab: &Lab, exp: &TfoExperiment) -> Result<TfoOutcome, RecipeError> {
    if exp.fastopen {
        set_fastopen(lab, 3)?;
    }
    let bind = server_bind(lab);
    let mut serve = ServeConfig::new(bind);
    serve.fastopen_queue = exp.fastopen.then_some(64);
    let _server = start_server(lab, serve)?;
    let host = lab.server_addr().to_string();
    let get = GetConfig {
        large_bytes: exp.response_bytes,
        small_bytes: None,
        small_delay: Duration::ZERO,
        fastopen: exp.fastopen,
        connect: ConnectOptions {
            nat64: Nat64Policy::Off,
            ..ConnectOptions::default()
        },
        timeout: Duration::from_secs(10),
    };
    let mut connections = Vec::new();
    let mut rtt_ms = f64::NAN;
    for _ in 0..exp.connections {
        let r = block_on_in(lab.client_ns(), || client::get(&host, bind.port(), &get))?
            .map_err(|e| RecipeError::failed("Fast Open fetch", e))?;
        rtt_ms = r
            .tcp_info
            .as_ref()
            .map_or(f64::NAN, |i| f64::from(i.rtt_us) / 1e3);
        connections.push(TfoConnection {
            first_byte_ms: r.first_byte_ms,
            connect_ms: r.connect_ms,
            syn_bytes: r.fastopen.map_or(0, |f| f.syn_bytes),
            syn_data_acked: r.fastopen.is_some_and(|f| f.syn_data_acked),
        });
    }
    let repeats = connections.get(1..).unwrap_or(&[]);
    Ok(TfoOutcome {
        fastopen: exp.fastopen,
        first_ms: connections.first().map_or(f64::NAN, |c| c.first_byte_ms),
        repeat_ms: median(&repeats.iter().map(|c| c.first_byte_ms).collect::<Vec<_>>()),
        repeat_syn_data_acked: !repeats.is_empty() && repeats.iter().all(|c| c.syn_data_acked),
        rtt_ms,
        connections,
    })
}
