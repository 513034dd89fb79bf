//! `brisk-netbench`: Brisk, quinn and kernel TCP side by side on loopback,
//! in one process run.
//!
//! Layer: a benchmark on top of the transports; nothing depends on it.
//! Two tests, with the same sizes, runtime layout and measurement code for
//! every contender:
//! - bulk: one connection, one stream, N bytes client -> server; Gbit/s of
//!   wall time and CPU-seconds per GiB ([`bulk`]);
//! - rpc: sequential 512 B requests answered by 4 KiB; requests/s, p50,
//!   p99 and max latency from an hdrhistogram ([`rpc`]).
//!
//! Modules:
//! - [`contender`]: the [`Contender`] trait (server + client on loopback,
//!   handing out `AsyncRead`/`AsyncWrite` streams).
//! - [`tcp`], [`quic`], [`brisk`]: kernel TCP (tokio), quinn 0.11 (rustls,
//!   ring) and Brisk through `brisk-io`.
//! - [`harness`]: one thread and one current-thread runtime per end.
//! - [`many`]: 1,000 or 10,000 connections to one server process: its
//!   heap and resident memory per idle connection and after close,
//!   handshake time, requests per second and p50/p99 latency.
//! - [`first_contact`]: one request on a cold connection, Brisk with and
//!   without early data, TLS 1.3 over TCP, quinn 1-RTT and 0-RTT: the
//!   peers of the live lab's first-contact section.
//! - [`heap`]: live heap bytes through a counting global allocator.
//! - [`cpu`]: process CPU time from `getrusage`.
//! - [`report`]: the table, the ratios and the JSON form.
//! - [`size`]: byte counts such as `1GiB` on the command line.
//!
//! Run it with `cargo run --release -p brisk-netbench -- --help`;
//! docs/PERFORMANCE.md ("Transport on loopback") explains the numbers.

// System calls and the counting allocator live in the few modules that
// allow `unsafe` below.
#![deny(unsafe_code)]

pub mod brisk;
pub mod bulk;
pub mod contender;
pub mod cpu;
mod error;
pub mod first_contact;
pub mod flood;
pub mod harness;
pub mod heap;
pub mod many;
pub mod quic;
pub mod report;
pub mod rpc;
pub mod size;
pub mod tcp;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

pub use contender::{Contender, Test};
pub use error::BenchError;

use bulk::BulkResult;
use report::Failure;
use rpc::{RpcPlan, RpcResult};

/// Which tests to run, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Loopback address of the family under test.
    pub ip: IpAddr,
    /// Bytes for the bulk test; `None` skips it.
    pub bulk_bytes: Option<u64>,
    /// Timing of the rpc test; `None` skips it.
    pub rpc: Option<RpcPlan>,
    /// Most time one test may take, handshake included.
    pub limit: Duration,
}

/// What one contender produced: results, and failures in their place.
#[derive(Debug, Default)]
pub struct Outcome {
    pub bulk: Option<BulkResult>,
    pub rpc: Option<RpcResult>,
    pub failures: Vec<Failure>,
}

/// Runs the planned tests for one contender, each on a fresh server and
/// connection. A failed test is recorded and the next one still runs.
pub fn run_contender<C: Contender>(contender: C, plan: &Plan) -> Outcome {
    let contender = Arc::new(contender);
    let mut outcome = Outcome::default();
    let fail = |test, error: BenchError| Failure {
        contender: contender.name().to_owned(),
        test,
        error: error.to_string(),
    };
    if let Some(bytes) = plan.bulk_bytes {
        let run = harness::run_pair(
            &contender,
            plan.ip,
            Test::Bulk,
            plan.limit,
            async |c, client| bulk::run_client(c, client, bytes).await,
        );
        match run {
            Ok(result) => outcome.bulk = Some(result),
            Err(error) => outcome.failures.push(fail("bulk", error)),
        }
    }
    if let Some(rpc_plan) = plan.rpc {
        let run = harness::run_pair(
            &contender,
            plan.ip,
            Test::Rpc,
            plan.limit,
            async |c, client| rpc::run_client(c, client, rpc_plan).await,
        );
        match run {
            Ok(result) => outcome.rpc = Some(result),
            Err(error) => outcome.failures.push(fail("rpc", error)),
        }
    }
    outcome
}
