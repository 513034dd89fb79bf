//! Many connections: one server holding N connections (1,000 or 10,000)
//! from one client endpoint on loopback, idle and then under
//! request/response load, for Brisk and quinn alike.
//!
//! The server runs in a child process ([`server`]) so its memory is its
//! own: heap bytes counted by its allocator ([`crate::heap`]) and its
//! resident set. The client side, in this process, measures per stack:
//! - handshakes: N connections opened with [`CONNECT_IN_FLIGHT`]
//!   handshakes at a time; the wall time for all and each one's latency;
//! - idle memory: the server's heap and resident set once every
//!   connection is established and has sat idle for [`SETTLE`], minus
//!   before the first connection, over N;
//! - requests: `concurrency` requests in flight, each a 512-byte request
//!   on a fresh stream of the next connection in turn answered by 4 KiB,
//!   for a fixed time; requests per second, p50 and p99 latency from
//!   opening the stream to the last response byte, failed requests;
//! - after close: the server's heap over its level before the first
//!   connection, once the client closed every connection and the server
//!   let them go (or [`RETURN_WAIT`] passed).
//!
//! The server is configured as an application would run it: quinn at its
//! defaults, Brisk with `brisk serve`'s default 2 GiB memory budget and
//! `max_connections` set to N; both with a 120 s idle timeout
//! ([`IDLE_TIMEOUT`]), as 10,000 handshakes take longer than the
//! default 30 s.
//!
//! Each end runs one current-thread runtime, so each stack has one core
//! per end on a machine with two; `server_threads` above one gives the
//! server a multi-threaded runtime instead, so its application tasks on
//! different connections run at once beside the endpoint's own task.

mod fleet;
mod report;
pub mod server;

pub use fleet::{BriskFleet, Fleet, IDLE_TIMEOUT, QuinnFleet};
pub use report::{ManyRatio, ManyReport};

use std::cell::RefCell;
use std::net::IpAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::{JoinSet, LocalSet};

use crate::BenchError;
use crate::rpc::{Latencies, REQUEST_BYTES, RESPONSE_BYTES};
use server::{ServerMemory, ServerProcess};

/// How many connections and how long to load them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManyPlan {
    pub connections: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    pub measure: Duration,
    /// Most time the whole case may take, handshakes included.
    pub limit: Duration,
    /// Print progress lines on stderr (at most one a second).
    pub progress: bool,
    /// Worker threads of the server's runtime: 1 runs the endpoint and
    /// every application task on one thread; more lets application tasks
    /// on different connections run at once beside the endpoint task,
    /// the case where per-connection state pays (or one lock contends).
    pub server_threads: usize,
}

/// One stack at one connection count.
#[derive(Debug, Clone, Serialize)]
pub struct ManyResult {
    pub contender: String,
    pub connections: usize,
    /// Wall time to establish all connections, in seconds.
    pub connect_secs: f64,
    pub handshake_p50_ms: f64,
    pub handshake_p99_ms: f64,
    /// Server heap per idle connection, in bytes (`None`: the server
    /// binary does not count its heap).
    pub server_heap_per_connection_bytes: Option<f64>,
    /// Server resident set per idle connection, in bytes.
    pub server_rss_per_connection_bytes: f64,
    /// Requests completed, including those that ended after the
    /// measured time.
    pub requests: u64,
    pub failed_requests: u64,
    /// The first failure's message, if any request failed.
    pub first_failure: Option<String>,
    /// Requests completed within the measured time, per second of it.
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The slowest request (requests started near the end may finish
    /// after the measured time; they count here, not in the rate).
    pub max_ms: f64,
    /// Server heap over its level before the first connection, once every
    /// connection was closed, in bytes (negative: below it).
    pub server_heap_left_after_close_bytes: Option<i64>,
    /// Seconds from the client's close until the server's heap was back
    /// within [`return_slack_bytes`] and had held still for [`STILL`]
    /// (or [`RETURN_WAIT`] if it never was).
    pub heap_return_secs: f64,
}

/// Handshakes in flight at once while connecting.
pub const CONNECT_IN_FLIGHT: usize = 100;
/// Time the idle connections get to settle (the last ACKs, handshake
/// state freed) before the server's memory is read.
pub const SETTLE: Duration = Duration::from_millis(500);
/// How long the server's heap must hold still after close to count as
/// settled.
pub const STILL: Duration = Duration::from_millis(300);
/// Longest wait for the server's heap to come back after close. A
/// connection whose close frame was lost stays until its idle timeout,
/// later than this; the fleets close in batches so that this is rare.
pub const RETURN_WAIT: Duration = Duration::from_secs(20);
/// Heap over the starting level that counts as "back" after `n`
/// connections closed: buffers kept for reuse, independent of N (brisk-io
/// keeps up to 32 send buffers of 65,000 bytes; the runtime its task
/// slabs), plus 1,000 bytes per connection for tables that keep the
/// capacity they grew to (brisk-io's connection table: about 870 bytes
/// per connection of the busiest moment).
pub fn return_slack_bytes(n: usize) -> u64 {
    2_600_000 + 1_000 * n as u64
}

/// Runs the case for `fleet` with `plan`, the server being `server_exe`
/// (a `brisk-netbench` binary) in a child process.
pub fn run<F: Fleet>(
    fleet: F,
    server_exe: &Path,
    ip: IpAddr,
    plan: ManyPlan,
) -> Result<ManyResult, BenchError> {
    server::raise_open_files_limit();
    let (mut server, line) = ServerProcess::spawn(
        server_exe,
        fleet.name(),
        ip,
        plan.connections,
        plan.server_threads,
    )?;
    let ticket = F::parse_ticket(&line)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::io("tokio runtime"))?;
    let fleet = Rc::new(fleet);
    let ticket = Rc::new(ticket);
    let outcome = LocalSet::new().block_on(&rt, async {
        let limit = plan.limit;
        tokio::time::timeout(limit, drive(fleet, ticket, &mut server, plan))
            .await
            .map_err(|_| BenchError::TimedOut { limit })?
    });
    let stopped = server.stop();
    let result = outcome?;
    stopped?;
    Ok(result)
}

/// Progress lines on stderr, at most one a second.
struct Progress {
    on: bool,
    label: String,
    last: Instant,
}

impl Progress {
    fn say(&mut self, force: bool, what: std::fmt::Arguments<'_>) {
        if self.on && (force || self.last.elapsed() >= Duration::from_secs(1)) {
            eprintln!("brisk-netbench: {}: {what}", self.label);
            self.last = Instant::now();
        }
    }
}

async fn drive<F: Fleet>(
    fleet: Rc<F>,
    ticket: Rc<F::Ticket>,
    server: &mut ServerProcess,
    plan: ManyPlan,
) -> Result<ManyResult, BenchError> {
    let n = plan.connections.max(1);
    let mut progress = Progress {
        on: plan.progress,
        label: format!("{} with {n} connections", fleet.name()),
        last: Instant::now(),
    };
    let before = server.memory()?;
    let client = Rc::new(fleet.client(&ticket)?);

    let started = Instant::now();
    let mut handshakes = Latencies::new();
    let mut conns = Vec::with_capacity(n);
    let mut pending = JoinSet::new();
    let mut launched = 0;
    while conns.len() < n {
        while launched < n && pending.len() < CONNECT_IN_FLIGHT {
            let (fleet, client, ticket) = (fleet.clone(), client.clone(), ticket.clone());
            pending.spawn_local(async move {
                let began = Instant::now();
                let conn = fleet.connect(&client, &ticket).await?;
                Ok::<_, BenchError>((conn, began.elapsed()))
            });
            launched += 1;
        }
        let Some(done) = pending.join_next().await else {
            break;
        };
        let (conn, took) = done.map_err(|_| BenchError::Panicked("connect"))??;
        handshakes.record(took);
        conns.push(conn);
        progress.say(false, format_args!("{} of {n} connected", conns.len()));
    }
    let connect_secs = started.elapsed().as_secs_f64();
    progress.say(
        true,
        format_args!(
            "{n} connected in {connect_secs:.1} s; idle for {} ms",
            SETTLE.as_millis()
        ),
    );
    tokio::time::sleep(SETTLE).await;
    let idle = server.memory()?;

    let load = load::<F>(conns, plan, &mut progress).await;
    let conns = Rc::try_unwrap(load.conns).unwrap_or_default();
    let client =
        Rc::try_unwrap(client).map_err(|_| BenchError::Protocol("many: client still shared"))?;
    progress.say(true, format_args!("closing"));
    let closed = Instant::now();
    fleet.close(client, conns).await;
    // Until the heap is back within the slack and holds still (the last
    // draining connection is gone), or RETURN_WAIT passed.
    let mut after = server.memory()?;
    let mut still_since = Instant::now();
    loop {
        let back = match (after.heap_bytes, before.heap_bytes) {
            (Some(h), Some(b)) => h <= b + return_slack_bytes(n),
            _ => true,
        };
        if (back && still_since.elapsed() >= STILL) || closed.elapsed() >= RETURN_WAIT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = server.memory()?;
        if now.heap_bytes != after.heap_bytes {
            still_since = Instant::now();
        }
        after = now;
    }
    let heap_return_secs = closed.elapsed().as_secs_f64();

    let per_connection = |b: u64, a: u64| a.saturating_sub(b) as f64 / n as f64;
    let heap = |m: ServerMemory| m.heap_bytes;
    Ok(ManyResult {
        contender: fleet.name().to_owned(),
        connections: n,
        connect_secs,
        handshake_p50_ms: handshakes.quantile_us(0.50) / 1e3,
        handshake_p99_ms: handshakes.quantile_us(0.99) / 1e3,
        server_heap_per_connection_bytes: heap(before)
            .zip(heap(idle))
            .map(|(b, a)| per_connection(b, a)),
        server_rss_per_connection_bytes: per_connection(before.resident_bytes, idle.resident_bytes),
        requests: load.latencies.len(),
        failed_requests: load.failed,
        first_failure: load.first_failure,
        requests_per_sec: load.in_window as f64 / plan.measure.as_secs_f64(),
        max_ms: load.latencies.max_us() / 1e3,
        p50_ms: load.latencies.quantile_us(0.50) / 1e3,
        p99_ms: load.latencies.quantile_us(0.99) / 1e3,
        server_heap_left_after_close_bytes: heap(before)
            .zip(heap(after))
            .map(|(b, a)| a as i64 - b as i64),
        heap_return_secs,
    })
}

/// What the request phase leaves.
struct Load<C> {
    conns: Rc<Vec<C>>,
    latencies: Latencies,
    failed: u64,
    first_failure: Option<String>,
    /// Requests that completed within the measured time.
    in_window: u64,
}

/// `plan.concurrency` workers, each sending one request after another on
/// the next connection in turn until `plan.measure` has passed.
async fn load<F: Fleet>(
    conns: Vec<F::Conn>,
    plan: ManyPlan,
    progress: &mut Progress,
) -> Load<F::Conn> {
    progress.say(
        true,
        format_args!(
            "{} requests in flight for {:.1} s",
            plan.concurrency,
            plan.measure.as_secs_f64()
        ),
    );
    let conns = Rc::new(conns);
    let next = Rc::new(RefCell::new(0usize));
    let latencies = Rc::new(RefCell::new(Latencies::new()));
    let failures = Rc::new(RefCell::new((0u64, None::<String>)));
    let in_window = Rc::new(RefCell::new(0u64));
    let start = Instant::now();
    let mut workers = JoinSet::new();
    for _ in 0..plan.concurrency.max(1) {
        let (conns, next, latencies, failures, in_window) = (
            conns.clone(),
            next.clone(),
            latencies.clone(),
            failures.clone(),
            in_window.clone(),
        );
        workers.spawn_local(async move {
            let mut response = vec![0u8; RESPONSE_BYTES];
            while start.elapsed() < plan.measure {
                let i = {
                    let mut next = next.borrow_mut();
                    *next = (*next + 1) % conns.len();
                    *next
                };
                let began = Instant::now();
                match request::<F>(&conns[i], &mut response).await {
                    Ok(()) => {
                        latencies.borrow_mut().record(began.elapsed());
                        if start.elapsed() <= plan.measure {
                            *in_window.borrow_mut() += 1;
                        }
                    }
                    Err(error) => {
                        let mut f = failures.borrow_mut();
                        f.0 += 1;
                        f.1.get_or_insert_with(|| error.to_string());
                    }
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    let in_window = *in_window.borrow();
    let latencies = latencies.borrow().clone();
    let (failed, first_failure) = failures.borrow().clone();
    Load {
        conns,
        latencies,
        failed,
        first_failure,
        in_window,
    }
}

/// One request on a fresh stream of `conn`, answered in full.
async fn request<F: Fleet>(conn: &F::Conn, response: &mut [u8]) -> Result<(), BenchError> {
    let mut stream = F::open(conn).await?;
    stream
        .write_all(&[0x51; REQUEST_BYTES])
        .await
        .map_err(BenchError::io("many: write the request"))?;
    F::finish(&mut stream)
        .await
        .map_err(BenchError::io("many: finish the request"))?;
    stream
        .read_exact(response)
        .await
        .map_err(BenchError::io("many: read the response"))?;
    let mut extra = [0u8; 1];
    let len = stream
        .read(&mut extra)
        .await
        .map_err(BenchError::io("many: read the end of the response"))?;
    if len != 0 {
        return Err(BenchError::Protocol(
            "many: response longer than 4096 bytes",
        ));
    }
    Ok(())
}
