//! Request/response latency: one connection, sequential 512-byte requests
//! each answered by 4 KiB.
//!
//! Stream-multiplexed transports open a new stream per request (the request
//! and its end travel together; the response ends the stream); TCP sends
//! every request on its one connection. A warm-up runs first; then requests
//! go back to back for a fixed time and each latency, from before the
//! stream is opened to the last response byte read, goes into an
//! hdrhistogram in nanoseconds.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::ser::{Serialize, SerializeStruct, Serializer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{BenchError, Contender, cpu};

/// Environment variable naming a file to which every measured request is
/// appended as `contender,index,start_us,latency_us` (start from the
/// measurement's start): to see whether slow requests are periodic or
/// line up with transport events.
pub const TRACE_ENV: &str = "NETBENCH_RPC_TRACE";

/// Request size on the wire (application bytes).
pub const REQUEST_BYTES: usize = 512;
/// Response size on the wire (application bytes).
pub const RESPONSE_BYTES: usize = 4096;

/// Highest latency the histogram keeps exactly: one minute.
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// How long to warm up and how long to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcPlan {
    pub warmup: Duration,
    pub measure: Duration,
}

/// One contender's request/response result. Its JSON form gives the
/// latency quantiles in microseconds and the derived rates.
#[derive(Debug, Clone)]
pub struct RpcResult {
    pub contender: String,
    /// How many measured runs were pooled into this result.
    pub rounds: u32,
    pub latencies: Latencies,
    pub wall_secs: f64,
    pub cpu_secs: f64,
}

impl RpcResult {
    /// Pools another round of the same contender: latencies merge into one
    /// histogram, wall and CPU time add up.
    pub fn absorb(&mut self, other: &RpcResult) {
        self.rounds += other.rounds;
        self.latencies.absorb(&other.latencies);
        self.wall_secs += other.wall_secs;
        self.cpu_secs += other.cpu_secs;
    }

    /// Completed requests.
    pub fn requests(&self) -> u64 {
        self.latencies.len()
    }

    /// Completed requests per second of measured wall time.
    pub fn requests_per_sec(&self) -> f64 {
        self.requests() as f64 / self.wall_secs
    }

    /// CPU time (both ends) per request, in microseconds.
    pub fn cpu_us_per_request(&self) -> f64 {
        self.cpu_secs * 1e6 / self.requests() as f64
    }

    pub fn p50_us(&self) -> f64 {
        self.latencies.quantile_us(0.50)
    }

    pub fn p99_us(&self) -> f64 {
        self.latencies.quantile_us(0.99)
    }

    pub fn max_us(&self) -> f64 {
        self.latencies.max_us()
    }
}

impl Serialize for RpcResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("RpcResult", 10)?;
        s.serialize_field("contender", &self.contender)?;
        s.serialize_field("rounds", &self.rounds)?;
        s.serialize_field("requests", &self.requests())?;
        s.serialize_field("wall_secs", &self.wall_secs)?;
        s.serialize_field("cpu_secs", &self.cpu_secs)?;
        s.serialize_field("p50_us", &self.p50_us())?;
        s.serialize_field("p99_us", &self.p99_us())?;
        s.serialize_field("max_us", &self.max_us())?;
        s.serialize_field("requests_per_sec", &self.requests_per_sec())?;
        s.serialize_field("cpu_us_per_request", &self.cpu_us_per_request())?;
        s.end()
    }
}

/// Latencies of the measured requests.
#[derive(Debug, Clone)]
pub struct Latencies {
    histogram: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    /// An empty histogram with three significant digits.
    pub fn new() -> Self {
        let histogram =
            Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("constant bounds are valid");
        Self { histogram }
    }

    /// Adds one latency; longer than a minute counts as a minute.
    pub fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.histogram
            .saturating_record(ns.clamp(1, MAX_LATENCY_NS));
    }

    /// Adds every latency `other` holds (same bounds, so nothing is lost).
    pub fn absorb(&mut self, other: &Latencies) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms with the same bounds always merge");
    }

    /// Number of recorded latencies.
    pub fn len(&self) -> u64 {
        self.histogram.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The latency at quantile `q` (0..=1), in microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        self.histogram.value_at_quantile(q) as f64 / 1e3
    }

    /// The largest latency, in microseconds.
    pub fn max_us(&self) -> f64 {
        self.histogram.max() as f64 / 1e3
    }
}

/// Runs the client side: warm up, then measure for `plan.measure`.
pub async fn run_client<C: Contender>(
    contender: &C,
    client: &mut C::Client,
    plan: RpcPlan,
) -> Result<RpcResult, BenchError> {
    let mut exchange = Exchange::<C> {
        request: [0x51; REQUEST_BYTES],
        response: vec![0; RESPONSE_BYTES],
        shared: None,
    };
    let warm_start = Instant::now();
    while warm_start.elapsed() < plan.warmup {
        exchange.run(contender, client).await?;
    }
    let mut latencies = Latencies::new();
    let trace_path = std::env::var_os(TRACE_ENV);
    let mut trace: Vec<(Duration, Duration)> = Vec::new();
    let cpu_start = cpu::process_cpu().map_err(BenchError::io("getrusage"))?;
    let start = Instant::now();
    while start.elapsed() < plan.measure {
        let began = start.elapsed();
        let latency = exchange.run(contender, client).await?;
        latencies.record(latency);
        if trace_path.is_some() {
            trace.push((began, latency));
        }
    }
    let wall = start.elapsed();
    let cpu = cpu::process_cpu().map_err(BenchError::io("getrusage"))? - cpu_start;
    if let Some(path) = trace_path {
        append_trace(&path, contender.name(), &trace).map_err(BenchError::io("rpc: trace"))?;
    }
    if latencies.is_empty() {
        return Err(BenchError::NoSamples);
    }
    Ok(RpcResult {
        contender: contender.name().to_owned(),
        rounds: 1,
        latencies,
        wall_secs: wall.as_secs_f64(),
        cpu_secs: cpu.as_secs_f64(),
    })
}

/// Appends one line per request to the trace file (see [`TRACE_ENV`]).
fn append_trace(
    path: &std::ffi::OsStr,
    name: &str,
    trace: &[(Duration, Duration)],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut text = String::with_capacity(trace.len() * 32);
    for (index, (began, latency)) in trace.iter().enumerate() {
        text.push_str(&format!(
            "{name},{index},{:.1},{:.1}\n",
            began.as_secs_f64() * 1e6,
            latency.as_secs_f64() * 1e6
        ));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The client's buffers and, for TCP, its one stream.
struct Exchange<C: Contender> {
    request: [u8; REQUEST_BYTES],
    response: Vec<u8>,
    shared: Option<C::Stream>,
}

impl<C: Contender> Exchange<C> {
    /// One request and its response; returns the latency.
    async fn run(&mut self, contender: &C, client: &mut C::Client) -> Result<Duration, BenchError> {
        let start = Instant::now();
        if !contender.stream_per_request() {
            let stream = match &mut self.shared {
                Some(stream) => stream,
                None => self.shared.insert(contender.open_stream(client).await?),
            };
            stream
                .write_all(&self.request)
                .await
                .map_err(BenchError::io("rpc: write the request"))?;
            stream
                .read_exact(&mut self.response)
                .await
                .map_err(BenchError::io("rpc: read the response"))?;
            return Ok(start.elapsed());
        }
        let mut stream = contender.open_stream(client).await?;
        stream
            .write_all(&self.request)
            .await
            .map_err(BenchError::io("rpc: write the request"))?;
        contender
            .finish(&mut stream)
            .await
            .map_err(BenchError::io("rpc: finish the request"))?;
        stream
            .read_exact(&mut self.response)
            .await
            .map_err(BenchError::io("rpc: read the response"))?;
        let latency = start.elapsed();
        // Read the stream's end outside the clock, so the stream closes
        // cleanly instead of being cancelled.
        let mut extra = [0u8; 1];
        let len = stream
            .read(&mut extra)
            .await
            .map_err(BenchError::io("rpc: read the end of the response"))?;
        if len != 0 {
            return Err(BenchError::Protocol("rpc: response longer than 4096 bytes"));
        }
        Ok(latency)
    }
}

/// Server side: answer every whole request with a response, until the
/// stream ends.
pub async fn serve_stream<S>(mut stream: S) -> Result<(), BenchError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut request = [0u8; REQUEST_BYTES];
    let response = [0x52u8; RESPONSE_BYTES];
    loop {
        match stream.read_exact(&mut request).await {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::UnexpectedEof => break,
            Err(error) => return Err(BenchError::io("rpc: server read")(error)),
        }
        stream
            .write_all(&response)
            .await
            .map_err(BenchError::io("rpc: server write"))?;
    }
    stream
        .shutdown()
        .await
        .map_err(BenchError::io("rpc: server finishes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_in_microseconds() {
        let mut latencies = Latencies::new();
        for us in 1..=1000u64 {
            latencies.record(Duration::from_micros(us));
        }
        assert_eq!(latencies.len(), 1000);
        // Three significant digits: within 0.1% of the exact order statistic.
        assert!((latencies.quantile_us(0.5) - 500.0).abs() <= 0.5);
        assert!((latencies.quantile_us(0.99) - 990.0).abs() <= 1.0);
        assert!((latencies.max_us() - 1000.0).abs() <= 1.0);
    }

    #[test]
    fn rounds_pool_into_one_histogram() {
        let mut fast = Latencies::new();
        let mut slow = Latencies::new();
        for _ in 0..98 {
            fast.record(Duration::from_micros(100));
        }
        for _ in 0..2 {
            slow.record(Duration::from_micros(5000));
        }
        let mut pooled = RpcResult {
            contender: "x".into(),
            rounds: 1,
            latencies: fast,
            wall_secs: 1.0,
            cpu_secs: 0.5,
        };
        let other = RpcResult {
            latencies: slow,
            ..pooled.clone()
        };
        pooled.absorb(&other);
        assert_eq!((pooled.rounds, pooled.requests()), (2, 100));
        assert!((pooled.requests_per_sec() - 50.0).abs() < 1e-9);
        assert!((pooled.cpu_us_per_request() - 10_000.0).abs() < 1e-9);
        assert!((pooled.p50_us() - 100.0).abs() < 0.1);
        // 2 of 100 are slow, so the 99th percentile is one of them.
        assert!((pooled.p99_us() - 5000.0).abs() < 5.0);
    }

    #[test]
    fn absurd_latencies_saturate() {
        let mut latencies = Latencies::new();
        latencies.record(Duration::ZERO);
        latencies.record(Duration::from_secs(3600));
        assert_eq!(latencies.len(), 2);
        assert!(latencies.max_us() <= MAX_LATENCY_NS as f64 / 1e3 * 1.001);
    }

    #[tokio::test]
    async fn server_answers_each_request() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn(serve_stream(server));
        let mut response = [0u8; RESPONSE_BYTES];
        for _ in 0..3 {
            client.write_all(&[7u8; REQUEST_BYTES]).await.unwrap();
            client.read_exact(&mut response).await.unwrap();
            assert!(response.iter().all(|&b| b == 0x52));
        }
        // Half a request, then the end: no answer, clean finish.
        client.write_all(&[7u8; 100]).await.unwrap();
        client.shutdown().await.unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        serving.await.unwrap().unwrap();
    }
}
