//! Many connections: one server endpoint, one client endpoint holding N
//! connections to it (1,000 or 10,000), then request/response traffic
//! spread over all of them.
//!
//! Measured per contender, in one process (both ends):
//! - memory: the process's resident set after every handshake completed
//!   and the connections sat idle, minus the resident set before the
//!   endpoints existed, divided by N (so both ends of a connection count);
//! - requests: `concurrency` requests in flight, each on the next
//!   connection in turn (512-byte request on a fresh stream, 4 KiB
//!   response), for a fixed time; requests per second and the p50/p99 of
//!   the latency from opening the stream to the last response byte.
//!
//! Each end runs on its own thread with a current-thread runtime, like the
//! other tests ([`crate::harness`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, watch};

use crate::rpc::{Latencies, REQUEST_BYTES, RESPONSE_BYTES};
use crate::{BenchError, rpc};

/// How many connections and how long to load them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManyPlan {
    pub connections: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    pub measure: Duration,
    /// Most time the whole case may take, handshakes included.
    pub limit: Duration,
}

/// One contender at one connection count.
#[derive(Debug, Clone, Serialize)]
pub struct ManyResult {
    pub contender: String,
    pub connections: usize,
    /// Resident memory per idle connection, both ends, in bytes.
    pub rss_per_connection_bytes: f64,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Wall time to complete every handshake, in seconds.
    pub connect_secs: f64,
}

/// The process's resident set size in bytes (`/proc/self/statm`).
pub fn resident_bytes() -> Result<u64, BenchError> {
    let text = std::fs::read_to_string("/proc/self/statm")
        .map_err(BenchError::io("read /proc/self/statm"))?;
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .ok_or(BenchError::Protocol("/proc/self/statm: no resident field"))?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * u64::try_from(page).unwrap_or(4096))
}

/// The transports this case knows: a server that serves every stream of
/// every connection with [`rpc::serve_stream`], and a client endpoint
/// that opens many connections and streams on them.
pub trait Fleet: Send + Sync + 'static {
    type Ticket: Send + 'static;
    type Client;
    type Conn: Clone + Send + Sync + 'static;
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    fn name(&self) -> &'static str;

    /// Serves on `ip` until `stop`; hands the ticket out once listening.
    fn serve(
        &self,
        ip: IpAddr,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        stop: watch::Receiver<bool>,
    ) -> impl Future<Output = Result<(), BenchError>>;

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError>;

    fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> impl Future<Output = Result<Self::Conn, BenchError>> + Send;

    fn open(conn: &Self::Conn) -> impl Future<Output = Result<Self::Stream, BenchError>> + Send;

    /// Ends the request's sending side without waiting for its ACK.
    fn finish(stream: &mut Self::Stream) -> impl Future<Output = std::io::Result<()>> + Send;

    fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) -> impl Future<Output = ()>;
}

/// Runs the case for `fleet` with `plan`.
pub fn run<F: Fleet>(fleet: Arc<F>, ip: IpAddr, plan: ManyPlan) -> Result<ManyResult, BenchError> {
    let before = resident_bytes()?;
    let (ticket_tx, ticket_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let server_side = Arc::clone(&fleet);
    let server = std::thread::Builder::new()
        .name(format!("{}-server", fleet.name()))
        .spawn(move || -> Result<(), BenchError> {
            runtime()?.block_on(server_side.serve(ip, ticket_tx, stop_rx))
        })
        .map_err(BenchError::io("spawn the server thread"))?;
    let outcome = match ticket_rx.recv() {
        Ok(ticket) => runtime().and_then(|rt| {
            rt.block_on(async {
                let limit = plan.limit;
                tokio::time::timeout(limit, drive(&*fleet, &ticket, plan, before))
                    .await
                    .map_err(|_| BenchError::TimedOut { limit })?
            })
        }),
        Err(_) => Err(BenchError::ServerGone),
    };
    let _ = stop_tx.send(true);
    let served = server.join().map_err(|_| BenchError::Panicked("server"))?;
    let result = outcome?;
    served?;
    Ok(result)
}

fn runtime() -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::io("tokio runtime"))
}

/// Handshakes in flight at once while connecting.
const CONNECT_BATCH: usize = 100;
/// Time the idle connections get to settle (ACKs, freed handshake state)
/// before memory is read.
const SETTLE: Duration = Duration::from_millis(500);

async fn drive<F: Fleet>(
    fleet: &F,
    ticket: &F::Ticket,
    plan: ManyPlan,
    before: u64,
) -> Result<ManyResult, BenchError> {
    let client = fleet.client(ticket)?;
    let started = Instant::now();
    let mut conns = Vec::with_capacity(plan.connections);
    while conns.len() < plan.connections {
        let batch = CONNECT_BATCH.min(plan.connections - conns.len());
        let pending: Vec<_> = (0..batch).map(|_| fleet.connect(&client, ticket)).collect();
        for conn in futures_join_all(pending).await {
            conns.push(conn?);
        }
    }
    let connect_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(SETTLE).await;
    let after = resident_bytes()?;
    let rss_per_connection_bytes =
        after.saturating_sub(before) as f64 / plan.connections.max(1) as f64;

    let conns = Arc::new(conns);
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Latencies::new()));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.concurrency.max(1) {
        let (conns, next, latencies) = (conns.clone(), next.clone(), latencies.clone());
        let measure = plan.measure;
        workers.spawn(async move {
            let mut response = vec![0u8; RESPONSE_BYTES];
            while start.elapsed() < measure {
                let i = next.fetch_add(1, Ordering::Relaxed) % conns.len();
                let began = Instant::now();
                request::<F>(&conns[i], &mut response).await?;
                latencies.lock().await.record(began.elapsed());
            }
            Ok::<(), BenchError>(())
        });
    }
    while let Some(done) = workers.join_next().await {
        done.map_err(|_| BenchError::Panicked("request worker"))??;
    }
    let wall = start.elapsed().as_secs_f64();
    let latencies = latencies.lock().await.clone();
    if latencies.is_empty() {
        return Err(BenchError::NoSamples);
    }
    let conns = Arc::try_unwrap(conns).unwrap_or_default();
    fleet.close(client, conns).await;
    Ok(ManyResult {
        contender: fleet.name().to_owned(),
        connections: plan.connections,
        rss_per_connection_bytes,
        requests: latencies.len(),
        requests_per_sec: latencies.len() as f64 / wall,
        p50_us: latencies.quantile_us(0.50),
        p99_us: latencies.quantile_us(0.99),
        connect_secs,
    })
}

/// Waits for every future of `pending`, polled together; results in order.
async fn futures_join_all<T>(pending: Vec<impl Future<Output = T>>) -> Vec<T> {
    let mut running: Vec<_> = pending.into_iter().map(Box::pin).collect();
    let mut results: Vec<Option<T>> = running.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (f, slot) in running.iter_mut().zip(results.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            match f.as_mut().poll(cx) {
                std::task::Poll::Ready(v) => *slot = Some(v),
                std::task::Poll::Pending => waiting = true,
            }
        }
        if waiting {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results.into_iter().flatten().collect()
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

/// Serves every stream of `streams` in a task of its own until it ends.
pub(crate) async fn serve_streams<S, Fut>(mut next: impl FnMut() -> Fut)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Fut: Future<Output = Option<S>>,
{
    while let Some(stream) = next().await {
        tokio::spawn(async move {
            // A client that leaves mid-request is not the server's failure.
            let _ = rpc::serve_stream(stream).await;
        });
    }
}

/// Brisk through `brisk-io` at its defaults.
#[derive(Debug, Default, Clone, Copy)]
pub struct BriskFleet;

/// quinn at its defaults.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuinnFleet;

impl Fleet for BriskFleet {
    type Ticket = (SocketAddr, [u8; brisk_io::KEY_LEN]);
    type Client = brisk_io::Endpoint;
    type Conn = brisk_io::Connection;
    type Stream = brisk_io::Stream;

    fn name(&self) -> &'static str {
        "brisk"
    }

    async fn serve(
        &self,
        ip: IpAddr,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), BenchError> {
        let (_, keypair) =
            brisk_io::keys::generate().map_err(BenchError::transport("brisk: server key"))?;
        let key = keypair.public();
        let mut config = brisk_io::ServerConfig::new(SocketAddr::new(ip, 0), keypair);
        config.max_connections = usize::MAX;
        let endpoint =
            brisk_io::Endpoint::server(config).map_err(BenchError::io("brisk: server endpoint"))?;
        let _ = ticket.send((endpoint.local_addr(), key));
        let accepting = async {
            while let Some(conn) = endpoint.accept().await {
                tokio::spawn(async move {
                    serve_streams(|| {
                        let conn = conn.clone();
                        async move { conn.accept_stream().await.ok() }
                    })
                    .await;
                });
            }
        };
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            () = accepting => {}
        }
        endpoint.abort();
        Ok(())
    }

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError> {
        brisk_io::Endpoint::client(SocketAddr::new(ticket.0.ip(), 0))
            .map_err(BenchError::io("brisk: client endpoint"))
    }

    async fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> Result<Self::Conn, BenchError> {
        client
            .connect(ticket.0, ticket.1)
            .await
            .map_err(BenchError::transport("brisk: connect"))
    }

    async fn open(conn: &Self::Conn) -> Result<Self::Stream, BenchError> {
        conn.open_stream()
            .await
            .map_err(BenchError::transport("brisk: open stream"))
    }

    async fn finish(stream: &mut Self::Stream) -> std::io::Result<()> {
        stream.finish()
    }

    async fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) {
        for c in &conns {
            c.close(0, b"done");
        }
        drop(conns);
        let _ = tokio::time::timeout(Duration::from_secs(1), client.wait_idle()).await;
    }
}

impl Fleet for QuinnFleet {
    type Ticket = (SocketAddr, rustls::pki_types::CertificateDer<'static>);
    type Client = (quinn::Endpoint, quinn::ClientConfig);
    type Conn = quinn::Connection;
    type Stream = tokio::io::Join<quinn::RecvStream, quinn::SendStream>;

    fn name(&self) -> &'static str {
        "quinn"
    }

    async fn serve(
        &self,
        ip: IpAddr,
        ticket: std::sync::mpsc::Sender<Self::Ticket>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), BenchError> {
        let (config, cert) = crate::quic::server_config()?;
        let endpoint = quinn::Endpoint::server(config, SocketAddr::new(ip, 0))
            .map_err(BenchError::io("quinn: server endpoint"))?;
        let addr = endpoint
            .local_addr()
            .map_err(BenchError::io("quinn: local address"))?;
        let _ = ticket.send((addr, cert));
        let accepting = async {
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else {
                        return;
                    };
                    serve_streams(|| {
                        let conn = conn.clone();
                        async move {
                            let (send, recv) = conn.accept_bi().await.ok()?;
                            Some(tokio::io::join(recv, send))
                        }
                    })
                    .await;
                });
            }
        };
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            () = accepting => {}
        }
        endpoint.close(0u32.into(), b"done");
        Ok(())
    }

    fn client(&self, ticket: &Self::Ticket) -> Result<Self::Client, BenchError> {
        let config = crate::quic::client_config(ticket.1.clone())?;
        let endpoint = quinn::Endpoint::client(SocketAddr::new(ticket.0.ip(), 0))
            .map_err(BenchError::io("quinn: client endpoint"))?;
        Ok((endpoint, config))
    }

    async fn connect(
        &self,
        client: &Self::Client,
        ticket: &Self::Ticket,
    ) -> Result<Self::Conn, BenchError> {
        client
            .0
            .connect_with(client.1.clone(), ticket.0, crate::quic::SERVER_NAME)
            .map_err(BenchError::transport("quinn: connect"))?
            .await
            .map_err(BenchError::transport("quinn: client handshake"))
    }

    async fn open(conn: &Self::Conn) -> Result<Self::Stream, BenchError> {
        let (send, recv) = conn
            .open_bi()
            .await
            .map_err(BenchError::transport("quinn: open stream"))?;
        Ok(tokio::io::join(recv, send))
    }

    async fn finish(stream: &mut Self::Stream) -> std::io::Result<()> {
        stream.shutdown().await
    }

    async fn close(&self, client: Self::Client, conns: Vec<Self::Conn>) {
        for c in &conns {
            c.close(0u32.into(), b"done");
        }
        drop(conns);
        let _ = tokio::time::timeout(Duration::from_secs(1), client.0.wait_idle()).await;
    }
}

/// Every result of the case, and Brisk's ratios to quinn at each count.
#[derive(Debug, Clone, Serialize)]
pub struct ManyReport {
    pub concurrency: usize,
    pub measure_secs: f64,
    pub results: Vec<ManyResult>,
    pub ratios: Vec<ManyRatio>,
}

/// Brisk over quinn at one connection count (below 1 is Brisk smaller or
/// faster, except `requests_per_sec`, where above 1 is Brisk faster).
#[derive(Debug, Clone, Serialize)]
pub struct ManyRatio {
    pub connections: usize,
    pub rss_per_connection: f64,
    pub requests_per_sec: f64,
    pub p99: f64,
}

impl ManyReport {
    pub fn new(plan: ManyPlan, results: Vec<ManyResult>) -> ManyReport {
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
                    rss_per_connection: b.rss_per_connection_bytes / q.rss_per_connection_bytes,
                    requests_per_sec: b.requests_per_sec / q.requests_per_sec,
                    p99: b.p99_us / q.p99_us,
                })
            })
            .collect();
        ManyReport {
            concurrency: plan.concurrency,
            measure_secs: plan.measure.as_secs_f64(),
            results,
            ratios,
        }
    }
}

impl std::fmt::Display for ManyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "many connections on loopback: {} requests in flight ({REQUEST_BYTES} B request, \
             {RESPONSE_BYTES} B response, one stream each), {:.1} s measured",
            self.concurrency, self.measure_secs
        )?;
        writeln!(
            f,
            "{:<8} {:>11} {:>16} {:>11} {:>13} {:>10} {:>10}",
            "",
            "connections",
            "RSS/conn (KiB)",
            "connect (s)",
            "requests/s",
            "p50 (us)",
            "p99 (us)"
        )?;
        for r in &self.results {
            writeln!(
                f,
                "{:<8} {:>11} {:>16.1} {:>11.2} {:>13.0} {:>10.0} {:>10.0}",
                r.contender,
                r.connections,
                r.rss_per_connection_bytes / 1024.0,
                r.connect_secs,
                r.requests_per_sec,
                r.p50_us,
                r.p99_us
            )?;
        }
        for r in &self.ratios {
            writeln!(
                f,
                "brisk/quinn at {} connections: RSS per connection x{:.2}, requests/s x{:.2}, \
                 p99 x{:.2}",
                r.connections, r.rss_per_connection, r.requests_per_sec, r.p99
            )?;
        }
        writeln!(
            f,
            "RSS per connection: the process's resident set after every handshake and {} ms idle, \
             minus before the endpoints, over N (both ends counted)",
            SETTLE.as_millis()
        )
    }
}
