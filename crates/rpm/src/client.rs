//! The measuring client: load-generating connections added each interval
//! until goodput saturates, foreign and self probes throughout, and the
//! draft's stability test deciding when to stop.

use crate::body::Endless;
use crate::config::Config;
use crate::connect::{self, RequestBody, Target};
use crate::stats::{Components, ProbeSamples, Stability, rating};
use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Which way the load flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Server to client: the load connections fetch the large object.
    Download,
    /// Client to server: the load connections send an endless body.
    Upload,
    /// Both at once, as Apple's networkQuality does by default.
    Both,
}

impl Direction {
    fn download(self) -> bool {
        matches!(self, Direction::Download | Direction::Both)
    }
    fn upload(self) -> bool {
        matches!(self, Direction::Upload | Direction::Both)
    }
}

/// The draft's parameters and this client's limits.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Accept any server certificate (for a lab server with a self-signed one).
    pub insecure: bool,
    /// Which way the load-generating connections carry data.
    pub direction: Direction,
    /// Longest the test runs before reporting what it has (the draft's 20 s).
    pub max_time: Duration,
    /// ID: the interval at which goodput and responsiveness are evaluated.
    pub interval: Duration,
    /// MAD: intervals in a moving average.
    pub mad: usize,
    /// SDT: tolerated standard deviation, as a fraction of the mean.
    pub sdt: f64,
    /// TMP: percentile above which probe samples are trimmed.
    pub trim_percentile: f64,
    /// Time between probe rounds (one foreign and one self probe per round).
    pub probe_every: Duration,
    /// Load-generating connections per direction, at most.
    pub max_connections: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            direction: Direction::Both,
            max_time: Duration::from_secs(20),
            interval: Duration::from_secs(1),
            mad: 4,
            sdt: 0.05,
            trim_percentile: 95.0,
            probe_every: Duration::from_millis(100),
            max_connections: 16,
        }
    }
}

/// What the client knows after each interval, for a progress display.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Time since the test started.
    pub elapsed: Duration,
    /// Download goodput of the last interval, in bits per second.
    pub download_bps: f64,
    /// Upload goodput of the last interval, in bits per second.
    pub upload_bps: f64,
    /// Load-generating download connections open now.
    pub download_connections: usize,
    /// Load-generating upload connections open now.
    pub upload_connections: usize,
    /// Responsiveness of the last interval's probes alone.
    pub interval_rpm: Option<f64>,
}

/// The result, in the units users read.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// Round trips per minute under load: 60,000 over the probes' combined
    /// delay in ms (higher is better).
    pub rpm: f64,
    /// Apple's networkQuality scale: Low under 300, High from 1,000.
    pub rating: &'static str,
    /// The four delays the RPM is made of.
    pub components: Components,
    /// Which way the load ran.
    pub direction: Direction,
    /// Goodput over the last MAD intervals, in bits per second.
    pub download_bps: f64,
    /// Upload goodput over the last MAD intervals, in bits per second.
    pub upload_bps: f64,
    /// Load-generating download connections at the end.
    pub download_connections: usize,
    /// Load-generating upload connections at the end.
    pub upload_connections: usize,
    /// Whether adding connections stopped raising goodput (the draft's
    /// saturation) before the test ended.
    pub goodput_stable: bool,
    /// Whether the RPM's moving average settled within SDT before the test
    /// ended; false means the time limit cut the test short.
    pub responsiveness_stable: bool,
    /// How long the test ran, in seconds.
    pub duration_s: f64,
    /// Probes whose samples made the result (the last MAD intervals).
    pub foreign_probes: usize,
    /// Self probes (on loaded connections) whose samples made the result.
    pub self_probes: usize,
    /// Probes that failed or timed out over the whole run.
    pub failed_probes: usize,
}

enum Sample {
    Foreign {
        tcp: Duration,
        tls: Duration,
        http: Duration,
    },
    SelfProbe(Duration),
    Failed,
}

/// One load-generating connection: its request sender (self probes share
/// it) and the bytes its load moved.
struct LoadConnection {
    sender: SendRequest<RequestBody>,
    direction: Direction,
    /// Downloads: body bytes the application read. Uploads: bytes handed to
    /// HTTP/2, used only where `TCP_INFO` is unavailable.
    bytes: Arc<AtomicU64>,
    socket: Option<std::os::fd::OwnedFd>,
    /// The connection's driver and transfer; dropping them closes it.
    _tasks: JoinSet<()>,
}

impl LoadConnection {
    /// Bytes moved so far. An upload counts what the server's TCP
    /// acknowledged (`TCP_INFO`), not what sits in buffers on the way.
    fn moved(&self) -> u64 {
        if self.direction == Direction::Upload
            && let Some(acked) = self
                .socket
                .as_ref()
                .and_then(|s| brisk_tcp::tcp_info::TcpInfo::read(s).ok())
                .and_then(|i| i.bytes_acked)
        {
            return acked;
        }
        self.bytes.load(Ordering::Relaxed)
    }
}

fn empty() -> RequestBody {
    Empty::<Bytes>::new().boxed()
}

fn request(method: Method, uri: &Uri, body: RequestBody) -> Result<Request<RequestBody>, String> {
    Request::builder()
        .method(method)
        .uri(uri.clone())
        .body(body)
        .map_err(|e| format!("request to {uri}: {e}"))
}

/// Sends a GET and reads the whole body; returns the body and the time
/// from sending to the last byte.
async fn get(
    sender: &mut SendRequest<RequestBody>,
    uri: &Uri,
) -> Result<(Bytes, Duration), String> {
    let start = Instant::now();
    sender
        .ready()
        .await
        .map_err(|e| format!("connection closed: {e}"))?;
    let response = sender
        .send_request(request(Method::GET, uri, empty())?)
        .await
        .map_err(|e| format!("GET {uri}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {uri}: status {}", response.status()));
    }
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("GET {uri}: {e}"))?
        .to_bytes();
    Ok((body, start.elapsed()))
}

fn parse_uri(field: &str, url: &str) -> Result<Uri, String> {
    url.parse()
        .map_err(|e| format!("{field}: {url:?} is not a URL: {e}"))
}

/// Resolves a URL's host (or the configuration's test endpoint) to the
/// address to connect to.
async fn target_for(
    uri: &Uri,
    endpoint: Option<&str>,
    tls: rustls::ClientConfig,
) -> Result<Target, String> {
    let host = uri
        .host()
        .ok_or_else(|| format!("{uri} names no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(443);
    let connect_host = endpoint.filter(|e| !e.is_empty()).unwrap_or(host);
    let addr = tokio::net::lookup_host((connect_host, port))
        .await
        .map_err(|e| format!("cannot resolve {connect_host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{connect_host} has no address"))?;
    Target::new(addr, host, tls)
}

/// Runs the whole test against the configuration at `config_url`, calling
/// `progress` after every interval.
pub async fn run(
    config_url: &str,
    options: &ClientOptions,
    mut progress: impl FnMut(&Progress),
) -> Result<Report, String> {
    let tls = crate::tls::client_config(options.insecure)?;
    let config_uri = parse_uri("configuration URL", config_url)?;
    if config_uri.scheme_str() != Some("https") {
        return Err(format!(
            "configuration URL {config_url:?} must start with https://"
        ));
    }
    let mut tasks = JoinSet::new();
    let config_target = target_for(&config_uri, None, tls.clone()).await?;
    let mut config_conn = connect::open(&config_target, &mut tasks).await?;
    let (json, _) = get(&mut config_conn.sender, &config_uri).await?;
    let config = Config::parse(&json)?;
    drop(config_conn);

    let small = parse_uri(
        "small_https_download_url",
        &config.urls.small_https_download_url,
    )?;
    let large = parse_uri(
        "large_https_download_url",
        &config.urls.large_https_download_url,
    )?;
    let upload = parse_uri("https_upload_url", &config.urls.https_upload_url)?;
    let target = target_for(&small, config.test_endpoint.as_deref(), tls).await?;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut downloads: Vec<LoadConnection> = Vec::new();
    let mut uploads: Vec<LoadConnection> = Vec::new();
    let mut probe_tasks = JoinSet::new();
    // Connections being opened: the loop keeps probing meanwhile.
    let mut opening: JoinSet<Result<LoadConnection, String>> = JoinSet::new();
    let (mut opening_down, mut opening_up) = (0usize, 0usize);

    let start = Instant::now();
    // The first connections are awaited, so an unreachable endpoint is
    // reported at once.
    if options.direction.download() {
        downloads.push(open_load(target.clone(), large.clone(), Direction::Download).await?);
    }
    if options.direction.upload() {
        uploads.push(open_load(target.clone(), upload.clone(), Direction::Upload).await?);
    }

    let mut down_stability = Stability::new(options.mad, options.sdt);
    let mut up_stability = Stability::new(options.mad, options.sdt);
    let mut rpm_stability = Stability::new(options.mad, options.sdt);
    let mut intervals: Vec<ProbeSamples> = Vec::new();
    let mut current = ProbeSamples::default();
    let mut failed = 0usize;
    let mut down_history: Vec<f64> = Vec::new();
    let mut up_history: Vec<f64> = Vec::new();
    let (mut last_down, mut last_up) = (0u64, 0u64);
    let mut goodput_stable = false;
    let mut rpm_stable = false;
    let mut self_turn = 0usize;

    let mut probe_tick = tokio::time::interval(options.probe_every);
    let mut interval_tick = tokio::time::interval_at(
        tokio::time::Instant::now() + options.interval,
        options.interval,
    );
    interval_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_tick = Instant::now();
    let deadline = tokio::time::Instant::now() + options.max_time;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => break,
            Some(joined) = opening.join_next() => match joined {
                Ok(Ok(conn)) => {
                    if conn.direction == Direction::Upload {
                        opening_up -= 1;
                        uploads.push(conn);
                    } else {
                        opening_down -= 1;
                        downloads.push(conn);
                    }
                }
                Ok(Err(e)) => return Err(format!("adding a load-generating connection: {e}")),
                Err(e) => return Err(format!("adding a load-generating connection: {e}")),
            },
            Some(sample) = rx.recv() => match sample {
                Sample::Foreign { tcp, tls, http } => {
                    current.tcp_foreign_ms.push(ms(tcp));
                    current.tls_foreign_ms.push(ms(tls));
                    current.http_foreign_ms.push(ms(http));
                }
                Sample::SelfProbe(d) => current.http_self_ms.push(ms(d)),
                Sample::Failed => failed += 1,
            },
            _ = probe_tick.tick() => {
                let probe_timeout = deadline.saturating_duration_since(tokio::time::Instant::now());
                spawn_foreign_probe(&mut probe_tasks, target.clone(), small.clone(), tx.clone(), probe_timeout);
                let loaded: Vec<&LoadConnection> = downloads.iter().chain(uploads.iter()).collect();
                if !loaded.is_empty() {
                    let conn = loaded[self_turn % loaded.len()];
                    self_turn += 1;
                    spawn_self_probe(&mut probe_tasks, conn.sender.clone(), small.clone(), tx.clone(), probe_timeout);
                }
            }
            _ = interval_tick.tick() => {
                // The actual time since the last evaluation: a busy host
                // delays ticks, and the rate must not inherit that error.
                let now = Instant::now();
                let secs = (now - last_tick).as_secs_f64().max(1e-3);
                last_tick = now;
                let down_total: u64 = downloads.iter().map(LoadConnection::moved).sum();
                let up_total: u64 = uploads.iter().map(LoadConnection::moved).sum();
                let down_bps = down_total.saturating_sub(last_down) as f64 * 8.0 / secs;
                let up_bps = up_total.saturating_sub(last_up) as f64 * 8.0 / secs;
                (last_down, last_up) = (down_total, up_total);
                down_history.push(down_bps);
                up_history.push(up_bps);

                let mut saturated = true;
                if options.direction.download() && !down_stability.push(down_bps) {
                    saturated = false;
                    if downloads.len() + opening_down < options.max_connections {
                        opening_down += 1;
                        opening.spawn(open_load(target.clone(), large.clone(), Direction::Download));
                    }
                }
                if options.direction.upload() && !up_stability.push(up_bps) {
                    saturated = false;
                    if uploads.len() + opening_up < options.max_connections {
                        opening_up += 1;
                        opening.spawn(open_load(target.clone(), upload.clone(), Direction::Upload));
                    }
                }
                goodput_stable = saturated;

                let interval_rpm = Components::from_samples(&current, options.trim_percentile).map(|c| c.rpm());
                if let Some(r) = interval_rpm {
                    rpm_stable = rpm_stability.push(r);
                }
                intervals.push(std::mem::take(&mut current));
                progress(&Progress {
                    elapsed: start.elapsed(),
                    download_bps: down_bps,
                    upload_bps: up_bps,
                    download_connections: downloads.len(),
                    upload_connections: uploads.len(),
                    interval_rpm,
                });
                if goodput_stable && rpm_stable {
                    break;
                }
            }
        }
    }
    let duration = start.elapsed();
    drop(probe_tasks);
    drop(opening);
    let (download_connections, upload_connections) = (downloads.len(), uploads.len());
    drop(downloads);
    drop(uploads);
    drop(tasks);

    // The result: the probes and goodput of the last MAD intervals, the
    // span the stability test judged.
    let mut recent = ProbeSamples::default();
    for s in intervals.iter().rev().take(options.mad) {
        recent.extend(s);
    }
    if recent.foreign_count() == 0 || recent.self_count() == 0 {
        recent.extend(&current);
    }
    let components = Components::from_samples(&recent, options.trim_percentile).ok_or_else(|| {
        format!(
            "no complete probe in {:.1} s ({} foreign, {} self, {failed} failed); is the server reachable and answering {}?",
            duration.as_secs_f64(),
            recent.foreign_count(),
            recent.self_count(),
            small
        )
    })?;
    let rpm = components.rpm();
    Ok(Report {
        rpm,
        rating: rating(rpm),
        components,
        direction: options.direction,
        download_bps: recent_mean(&down_history, options.mad),
        upload_bps: recent_mean(&up_history, options.mad),
        download_connections,
        upload_connections,
        goodput_stable,
        responsiveness_stable: rpm_stable,
        duration_s: duration.as_secs_f64(),
        foreign_probes: recent.foreign_count(),
        self_probes: recent.self_count(),
        failed_probes: failed,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn recent_mean(history: &[f64], n: usize) -> f64 {
    let tail = &history[history.len().saturating_sub(n)..];
    if tail.is_empty() {
        0.0
    } else {
        tail.iter().sum::<f64>() / tail.len() as f64
    }
}

/// Opens one load-generating connection and starts its endless transfer:
/// a GET of the large endpoint, or a POST to the upload endpoint.
async fn open_load(
    target: Target,
    uri: Uri,
    direction: Direction,
) -> Result<LoadConnection, String> {
    let mut tasks = JoinSet::new();
    let mut conn = connect::open(&target, &mut tasks).await?;
    let bytes = Arc::new(AtomicU64::new(0));
    conn.sender
        .ready()
        .await
        .map_err(|e| format!("load connection closed: {e}"))?;
    if direction == Direction::Upload {
        let body = Endless::new(bytes.clone()).boxed();
        let response = conn.sender.send_request(request(Method::POST, &uri, body)?);
        tasks.spawn(async move {
            let _ = response.await;
        });
    } else {
        let response = conn
            .sender
            .send_request(request(Method::GET, &uri, empty())?);
        let counter = bytes.clone();
        tasks.spawn(async move {
            let Ok(response) = response.await else { return };
            let mut body = response.into_body();
            while let Some(Ok(frame)) = body.frame().await {
                if let Some(d) = frame.data_ref() {
                    counter.fetch_add(d.len() as u64, Ordering::Relaxed);
                }
            }
        });
    }
    Ok(LoadConnection {
        sender: conn.sender,
        direction,
        bytes,
        socket: conn.socket,
        _tasks: tasks,
    })
}

fn spawn_foreign_probe(
    tasks: &mut JoinSet<()>,
    target: Target,
    small: Uri,
    tx: mpsc::UnboundedSender<Sample>,
    limit: Duration,
) {
    tasks.spawn(async move {
        let probe = async {
            let mut conns = JoinSet::new();
            let mut conn = connect::open(&target, &mut conns).await?;
            let (_, http) = get(&mut conn.sender, &small).await?;
            Ok::<_, String>(Sample::Foreign {
                tcp: conn.tcp,
                tls: conn.tls,
                http,
            })
        };
        let sample = match tokio::time::timeout(limit, probe).await {
            Ok(Ok(s)) => s,
            _ => Sample::Failed,
        };
        let _ = tx.send(sample);
    });
}

fn spawn_self_probe(
    tasks: &mut JoinSet<()>,
    mut sender: SendRequest<RequestBody>,
    small: Uri,
    tx: mpsc::UnboundedSender<Sample>,
    limit: Duration,
) {
    tasks.spawn(async move {
        let sample = match tokio::time::timeout(limit, get(&mut sender, &small)).await {
            Ok(Ok((_, d))) => Sample::SelfProbe(d),
            _ => Sample::Failed,
        };
        let _ = tx.send(sample);
    });
}
