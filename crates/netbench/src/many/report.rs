//! The many-connections report: two tables (memory and handshakes;
//! requests) and Brisk's ratio to quinn at each connection count, or the
//! same as JSON.

use serde::Serialize;

use super::{CONNECT_IN_FLIGHT, ManyPlan, ManyResult, RETURN_WAIT, SETTLE};
use crate::rpc::{REQUEST_BYTES, RESPONSE_BYTES};

/// Every result of the case, and Brisk's ratios to quinn at each count.
#[derive(Debug, Clone, Serialize)]
pub struct ManyReport {
    pub ip_version: u8,
    pub concurrency: usize,
    /// Worker threads of each server's runtime.
    pub server_threads: usize,
    pub measure_secs: f64,
    pub results: Vec<ManyResult>,
    pub ratios: Vec<ManyRatio>,
}

/// Brisk over quinn at one connection count: below 1 is Brisk smaller or
/// faster, except `requests_per_sec`, where above 1 is Brisk faster.
#[derive(Debug, Clone, Serialize)]
pub struct ManyRatio {
    pub connections: usize,
    pub server_heap_per_connection: Option<f64>,
    pub server_rss_per_connection: f64,
    pub connect_secs: f64,
    pub requests_per_sec: f64,
    pub p99: f64,
}

impl ManyReport {
    pub fn new(ip_version: u8, plan: ManyPlan, results: Vec<ManyResult>) -> ManyReport {
        let find = |name: &str, n: usize| {
            results
                .iter()
                .find(|r| r.contender == name && r.connections == n)
        };
        let mut counts: Vec<usize> = results.iter().map(|r| r.connections).collect();
        counts.dedup();
        let ratios = counts
            .into_iter()
            .filter_map(|n| {
                let (b, q) = (find("brisk", n)?, find("quinn", n)?);
                Some(ManyRatio {
                    connections: n,
                    server_heap_per_connection: b
                        .server_heap_per_connection_bytes
                        .zip(q.server_heap_per_connection_bytes)
                        .map(|(b, q)| b / q),
                    server_rss_per_connection: b.server_rss_per_connection_bytes
                        / q.server_rss_per_connection_bytes,
                    connect_secs: b.connect_secs / q.connect_secs,
                    requests_per_sec: b.requests_per_sec / q.requests_per_sec,
                    p99: b.p99_ms / q.p99_ms,
                })
            })
            .collect();
        ManyReport {
            ip_version,
            concurrency: plan.concurrency,
            server_threads: plan.server_threads,
            measure_secs: plan.measure.as_secs_f64(),
            results,
            ratios,
        }
    }
}

/// Bytes as KB (1,000 bytes) with one decimal, or `-` when not counted.
fn kb(bytes: Option<f64>) -> String {
    bytes.map_or_else(|| "-".to_owned(), |b| format!("{:.1}", b / 1e3))
}

fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"))
}

impl std::fmt::Display for ManyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "Many connections on IPv{} loopback: one server process, one client endpoint \
             holding N connections to it",
            self.ip_version
        )?;
        writeln!(
            f,
            "\nServer memory and handshakes ({CONNECT_IN_FLIGHT} handshakes in flight; memory \
             after {} ms idle, minus before the first connection, over N):",
            SETTLE.as_millis()
        )?;
        writeln!(
            f,
            "{:<6} {:>7} {:>13} {:>13} {:>14} {:>14} {:>14} {:>16} {:>14}",
            "stack",
            "N",
            "all up (s)",
            "hs p50 (ms)",
            "hs p99 (ms)",
            "heap/conn (KB)",
            "RSS/conn (KB)",
            "heap left (KB)",
            "left after (s)"
        )?;
        for r in &self.results {
            writeln!(
                f,
                "{:<6} {:>7} {:>13.2} {:>13.2} {:>14.2} {:>14} {:>14.1} {:>16} {:>14.1}",
                r.contender,
                r.connections,
                r.connect_secs,
                r.handshake_p50_ms,
                r.handshake_p99_ms,
                kb(r.server_heap_per_connection_bytes),
                r.server_rss_per_connection_bytes / 1e3,
                kb(r.server_heap_left_after_close_bytes.map(|b| b as f64)),
                r.heap_return_secs,
            )?;
        }
        writeln!(
            f,
            "\nRequests ({} in flight, {REQUEST_BYTES} B request and {RESPONSE_BYTES} B response \
             on a fresh stream of the next connection in turn, {:.1} s; server runtime: {}):",
            self.concurrency,
            self.measure_secs,
            match self.server_threads {
                1 => "one thread".to_owned(),
                n => format!("{n} worker threads"),
            }
        )?;
        writeln!(
            f,
            "{:<6} {:>7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "stack", "N", "requests/s", "p50 (ms)", "p99 (ms)", "max (ms)", "requests", "failed"
        )?;
        for r in &self.results {
            writeln!(
                f,
                "{:<6} {:>7} {:>12.0} {:>10.3} {:>10.3} {:>10.1} {:>10} {:>8}",
                r.contender,
                r.connections,
                r.requests_per_sec,
                r.p50_ms,
                r.p99_ms,
                r.max_ms,
                r.requests,
                r.failed_requests
            )?;
            if let Some(failure) = &r.first_failure {
                writeln!(f, "       first failure: {failure}")?;
            }
        }
        if !self.ratios.is_empty() {
            writeln!(
                f,
                "\nBrisk / quinn (below 1: Brisk smaller or faster; requests/s above 1: Brisk \
                 faster):"
            )?;
            writeln!(
                f,
                "{:>7} {:>10} {:>9} {:>11} {:>12} {:>8}",
                "N", "heap/conn", "RSS/conn", "all up (s)", "requests/s", "p99"
            )?;
            for r in &self.ratios {
                writeln!(
                    f,
                    "{:>7} {:>10} {:>9.2} {:>11.2} {:>12.2} {:>8.2}",
                    r.connections,
                    ratio(r.server_heap_per_connection),
                    r.server_rss_per_connection,
                    r.connect_secs,
                    r.requests_per_sec,
                    r.p99
                )?;
            }
        }
        writeln!(
            f,
            "\nKB = 1,000 bytes. heap: bytes the server process allocated and did not free \
             (counted by its allocator); RSS: its resident set, which also holds what the \
             allocator keeps after frees. heap left: the server's heap over its level before \
             the first connection once the client closed every connection ({CONNECT_IN_FLIGHT} \
             closes at a time), read once it held still, at most {} s after the first close \
             (left after: when it was read). hs: one handshake, from connect to established \
             at the client. requests/s: those completed within the measured time; requests: \
             all completed.",
            RETURN_WAIT.as_secs()
        )
    }
}
