//! A Brisk bulk download through a running lab, on real UDP sockets
//! (`brisk-io`): a server in the server's namespace sends one stream as
//! fast as its congestion controller allows, a client in the client's
//! namespace reads it for a while. The packets carry the codepoint the
//! sender's controller asks for (Prague: ECT(1)) in their real IP headers,
//! so the router's queues see and mark them as any L4S sender's.
//!
//! The sender's RTT is read from its connection statistics on a fixed
//! interval: the RTT Brisk itself measures (latest sample, ACK delay
//! included), the figure the simulator reports for its Brisk flows.

use super::{Background, RecipeError, Summary, block_on_in};
use crate::lab::Lab;
use crate::sys;
use brisk_io::{ConnectionStats, Endpoint, EndpointConfig, Keypair, ServerConfig};
use brisk_proto::ClientConfig;
use brisk_proto::congestion::CcAlgorithm;
use brisk_proto::fec::{FecConfig, FecPolicy};
use brisk_proto::qlog::{
    EventClasses, QlogFactory, QlogSink, QlogStart, QlogWriter, TraceStart, VantageKind,
    VantagePoint,
};
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The port the Brisk server listens on (UDP).
pub const BRISK_PORT: u16 = 4433;
const CHUNK_BYTES: usize = 64 * 1024;
/// Time the client allows for the handshake (lossy, long paths need
/// retransmissions) and the close, beyond the transfer itself.
const SETUP_WAIT: Duration = Duration::from_secs(10);
/// How long the client lets its close leave before the runtime ends.
const CLOSE_WAIT: Duration = Duration::from_millis(300);
/// The request byte that starts the download.
const REQUEST: &[u8] = b"D";
/// The real-time priority of both ends' threads when asked for: below the
/// lab router's, so the router still runs first.
const ENDPOINT_RT_PRIORITY: i32 = 30;

/// A download to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriskBulkConfig {
    /// Congestion controller of both ends by name ("prague", "cubic",
    /// "newreno", and whatever else `brisk-proto` offers): the server's
    /// drives the download.
    pub cc: String,
    pub duration: Duration,
    /// How often the sender's RTT is read.
    pub rtt_sample_interval: Duration,
    /// The server's static key is derived from this, so runs repeat.
    pub key_seed: u8,
    /// Run both ends' threads at a real-time (SCHED_FIFO) priority, below
    /// the router's, as the router's own thread runs. A sender that paces
    /// one packet at a time (Prague) cannot catch up later on time its
    /// thread spent waiting for a core: on a loaded host that time is link
    /// time lost for good, and the run measures the host's scheduler more
    /// than the transport.
    pub realtime: bool,
    /// Forward error correction on both ends, repair at the measured loss
    /// rate (`FecPolicy::Adaptive`, bulk data's policy).
    pub fec: bool,
    /// Write both ends' qlog traces, every event class, into this
    /// directory (`server.sqlog`, `client.sqlog`), to set a live run beside
    /// a simulated one.
    pub qlog_dir: Option<PathBuf>,
    /// The IP MTU of the lab's path, in bytes, when the run knows it: each
    /// end then probes up to the largest UDP payload it carries in its
    /// address family (1472 bytes over IPv4, 1452 over IPv6 at 1500), as
    /// the simulator's flows fill their links' packets. `None`: brisk-io's
    /// default ceiling, which leaves 20 bytes for a tunnel on an unknown
    /// path (1452 / 1432 bytes).
    pub path_mtu: Option<u32>,
}

impl BriskBulkConfig {
    pub fn new(cc: &str, duration: Duration) -> BriskBulkConfig {
        BriskBulkConfig {
            cc: cc.to_string(),
            duration,
            rtt_sample_interval: Duration::from_millis(10),
            key_seed: 7,
            realtime: false,
            fec: false,
            qlog_dir: None,
            path_mtu: None,
        }
    }
}

/// Whether `brisk-proto` has a congestion controller called `name`.
pub fn controller_available(name: &str) -> bool {
    CcAlgorithm::from_str(name).is_ok()
}

fn controller(name: &str) -> Result<CcAlgorithm, RecipeError> {
    CcAlgorithm::from_str(name)
        .map_err(|e| RecipeError::Unsupported(format!("brisk-proto in this build: {e}")))
}

/// The sender's connection at the end of the transfer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BriskSenderStats {
    /// "Testing", "Capable" or "Failed" (ECN validation).
    pub ecn_state: String,
    /// Packets sent per codepoint.
    pub sent_ect0: u64,
    pub sent_ect1: u64,
    /// CE marks the receiver reported back.
    pub echoed_ce: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub congestion_events: u64,
    pub cwnd_bytes: u64,
    pub smoothed_rtt_ms: f64,
    pub min_rtt_ms: f64,
    /// The UDP payload size path MTU discovery settled on, bytes, and the
    /// packets cut to 1200 bytes to check the path still carries it.
    pub datagram_bytes: u64,
    pub size_checks: u64,
    /// Packets that waited for the pacer, those that left after the
    /// release time it gave, their mean and largest lateness, and the
    /// lateness credited back to the schedule.
    pub paced_waits: u64,
    pub paced_late: u64,
    pub paced_late_mean_ms: f64,
    pub paced_late_max_ms: f64,
    pub paced_credited_ms: f64,
}

impl From<&ConnectionStats> for BriskSenderStats {
    fn from(s: &ConnectionStats) -> BriskSenderStats {
        BriskSenderStats {
            ecn_state: format!("{:?}", s.ecn_state),
            sent_ect0: s.ecn_sent.ect0,
            sent_ect1: s.ecn_sent.ect1,
            echoed_ce: s.ecn_echoed.ce,
            packets_sent: s.packets_sent,
            packets_lost: s.packets_lost,
            congestion_events: s.congestion_events,
            cwnd_bytes: s.cwnd_bytes,
            smoothed_rtt_ms: super::ms(s.smoothed_rtt),
            min_rtt_ms: super::ms(s.min_rtt),
            datagram_bytes: s.pmtu.current_bytes,
            size_checks: s.pmtu.size_checks_sent,
            paced_waits: s.pacing.waits,
            paced_late: s.pacing.late_sends,
            paced_late_mean_ms: super::ms(s.pacing.late_total) / s.pacing.late_sends.max(1) as f64,
            paced_late_max_ms: super::ms(s.pacing.late_max),
            paced_credited_ms: super::ms(s.pacing.credited),
        }
    }
}

/// What the receiver measured, plus the sender's view.
#[derive(Debug, Clone, Serialize)]
pub struct BriskBulkReport {
    pub cc: String,
    pub received_bytes: u64,
    /// From the first byte received to the end.
    pub duration_s: f64,
    pub goodput_mbps: f64,
    /// Over the second half of the transfer, after start-up.
    pub steady_goodput_mbps: f64,
    /// The sender's latest RTT sample, read every `rtt_sample_interval`
    /// while data flowed.
    pub rtt: Summary,
    pub sender: BriskSenderStats,
    /// Whether both ends ran at the real-time priority asked for.
    pub realtime: bool,
    /// Codepoints on the packets the receiver got.
    pub received_ect0: u64,
    pub received_ect1: u64,
    pub received_ce: u64,
}

/// What the sender shares with the measurement.
#[derive(Default)]
struct SenderShared {
    rtt_ms: Mutex<Vec<f64>>,
    last: Mutex<Option<ConnectionStats>>,
    /// Whether the server's thread got the real-time priority.
    realtime: AtomicBool,
}

impl SenderShared {
    fn record(&self, stats: ConnectionStats, sample_rtt: bool) {
        if sample_rtt
            && stats.latest_rtt > Duration::ZERO
            && let Ok(mut v) = self.rtt_ms.lock()
        {
            v.push(super::ms(stats.latest_rtt));
        }
        if let Ok(mut last) = self.last.lock() {
            *last = Some(stats);
        }
    }
}

/// Traces every connection of an endpoint into `dir/<side>.sqlog`, every
/// event class, times from the wall clock at the connection's start.
fn qlog_files(dir: &Path) -> io::Result<QlogFactory> {
    std::fs::create_dir_all(dir)?;
    let dir = dir.to_path_buf();
    Ok(QlogFactory(Arc::new(move |s: &QlogStart| {
        let side = match s.vantage {
            VantageKind::Client => "client",
            _ => "server",
        };
        let epoch_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let start = TraceStart {
            title: format!("brisk bulk {side}"),
            vantage: VantagePoint::new(s.vantage, "brisk"),
            reference: s.now,
            reference_time_ms: epoch_ms,
            group_id: Some(s.group_id.clone()),
            classes: EventClasses::ALL,
        };
        let file = std::fs::File::create(dir.join(format!("{side}.sqlog"))).ok()?;
        let writer = QlogWriter::new(io::BufWriter::new(file), &start).ok()?;
        Some(Box::new(writer) as Box<dyn QlogSink>)
    })))
}

/// Runs one download in `lab`: server to client, for `config.duration`.
pub fn run(lab: &Lab, config: &BriskBulkConfig) -> Result<BriskBulkReport, RecipeError> {
    let cc = controller(&config.cc)?;
    let fec = FecConfig {
        enabled: config.fec,
        default_policy: FecPolicy::Adaptive,
        ..FecConfig::default()
    };
    let keypair = Keypair::from_private([config.key_seed; 32]);
    let server_key = keypair.public();
    let bind = SocketAddr::new(lab.server_bind_addr(), BRISK_PORT);
    let shared = Arc::new(SenderShared::default());
    let qlog = match &config.qlog_dir {
        Some(dir) => Some(
            qlog_files(dir)
                .map_err(|e| RecipeError::failed(format!("qlog directory {}", dir.display()), e))?,
        ),
        None => None,
    };
    let ends = Ends {
        cc,
        fec,
        qlog,
        path_mtu: config.path_mtu,
    };
    let server = {
        let ends = ends.clone();
        let shared = shared.clone();
        let interval = config.rtt_sample_interval;
        let realtime = config.realtime;
        Background::start(lab.server_ns(), "brisk-bulk-server", move |ready| {
            if realtime {
                shared.realtime.store(
                    sys::set_realtime_priority(ENDPOINT_RT_PRIORITY),
                    Ordering::Relaxed,
                );
            }
            serve(bind, keypair, ends, interval, shared, ready)
        })?
    };
    let target = SocketAddr::new(lab.server_addr(), BRISK_PORT);
    let duration = config.duration;
    let realtime = config.realtime;
    let (client_realtime, received) = block_on_in(lab.client_ns(), move || async move {
        let granted = realtime && sys::set_realtime_priority(ENDPOINT_RT_PRIORITY);
        let received = tokio::time::timeout(
            duration + SETUP_WAIT,
            receive(target, server_key, ends, duration),
        )
        .await;
        (granted, received)
    })?;
    // Stops the sender at once, so a flow beside this one has the link.
    drop(server);
    let r = received
        .map_err(|_| RecipeError::failed("brisk bulk download", "timed out"))?
        .map_err(|e| RecipeError::failed("brisk bulk download", e))?;
    let rtt = shared.rtt_ms.lock().map(|v| v.clone()).unwrap_or_default();
    let sender = shared
        .last
        .lock()
        .ok()
        .and_then(|l| l.as_ref().map(BriskSenderStats::from))
        .unwrap_or_default();
    Ok(BriskBulkReport {
        cc: config.cc.clone(),
        received_bytes: r.bytes,
        duration_s: r.span.as_secs_f64(),
        goodput_mbps: r.bytes as f64 * 8.0 / r.span.as_secs_f64().max(1e-9) / 1e6,
        steady_goodput_mbps: r.steady_bytes as f64 * 8.0
            / r.steady_span.as_secs_f64().max(1e-9)
            / 1e6,
        rtt: Summary::of(&rtt),
        sender,
        realtime: client_realtime && shared.realtime.load(Ordering::Relaxed),
        received_ect0: r.ecn_received[0],
        received_ect1: r.ecn_received[1],
        received_ce: r.ecn_received[2],
    })
}

/// How both ends are set up.
#[derive(Clone)]
struct Ends {
    cc: CcAlgorithm,
    fec: FecConfig,
    qlog: Option<QlogFactory>,
    path_mtu: Option<u32>,
}

impl Ends {
    /// The datagram ceiling for a path to or from `addr`, if the path's
    /// MTU is known.
    fn max_datagram_size(&self, addr: SocketAddr) -> Option<u64> {
        self.path_mtu
            .map(|mtu| brisk_io::socket::payload_for_mtu(mtu as usize, addr) as u64)
    }
}

/// The server: one connection, one stream, data until the client goes.
async fn serve(
    bind: SocketAddr,
    keypair: Keypair,
    ends: Ends,
    interval: Duration,
    shared: Arc<SenderShared>,
    ready: super::Ready,
) {
    let mut config = ServerConfig::new(bind, keypair);
    config.endpoint.transport.cc = ends.cc;
    config.endpoint.max_datagram_size = ends.max_datagram_size(bind);
    config.endpoint.transport.fec = ends.fec;
    let server = match Endpoint::server(config) {
        Ok(s) => s,
        Err(e) => return ready.fail(format!("brisk server on {bind}: {e}")),
    };
    if let Some(q) = ends.qlog {
        server.set_qlog(q);
    }
    ready.ok();
    let Some(conn) = server.accept().await else {
        return;
    };
    let sending = std::cell::Cell::new(false);
    let sampler = async {
        let mut tick = tokio::time::interval(interval);
        loop {
            tick.tick().await;
            if let Some(s) = conn.stats() {
                shared.record(s, sending.get());
            }
        }
    };
    let sender = async {
        let mut stream = conn.accept_stream().await.map_err(io::Error::from)?;
        let mut request = [0u8; REQUEST.len()];
        stream.read_exact(&mut request).await?;
        sending.set(true);
        let chunk = vec![0x5a_u8; CHUNK_BYTES];
        loop {
            stream.write_all(&chunk).await?;
        }
    };
    // The sender ends with an error once the client closes; the client's
    // own measurement reports what it saw.
    let _: io::Result<()> = tokio::select! {
        r = sender => r,
        _ = sampler => Ok(()),
    };
    if let Some(s) = conn.stats() {
        shared.record(s, false);
    }
}

struct Received {
    bytes: u64,
    span: Duration,
    steady_bytes: u64,
    steady_span: Duration,
    /// ECT(0), ECT(1), CE on the packets received.
    ecn_received: [u64; 3],
}

async fn receive(
    target: SocketAddr,
    server_key: [u8; 32],
    ends: Ends,
    duration: Duration,
) -> io::Result<Received> {
    let bind = SocketAddr::new(
        match target.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        },
        0,
    );
    let client = Endpoint::client_with(
        bind,
        EndpointConfig {
            max_datagram_size: ends.max_datagram_size(target),
            ..EndpointConfig::default()
        },
    )?;
    if let Some(q) = ends.qlog {
        client.set_qlog(q);
    }
    let mut config = ClientConfig::new(Some(server_key)).with_cc(ends.cc);
    config.transport.fec = ends.fec;
    let conn = client
        .connect_with(target, config)
        .await
        .map_err(io::Error::other)?;
    let mut stream = conn.open_stream().await.map_err(io::Error::from)?;
    stream.write_all(REQUEST).await?;
    stream.flush().await?;
    let started = Instant::now();
    let deadline = tokio::time::Instant::from_std(started + duration);
    let half = started + duration / 2;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let (mut total, mut first, mut at_half) = (0u64, None, None);
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => break,
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => {
                first.get_or_insert_with(Instant::now);
                total += n as u64;
            }
            Ok(Err(e)) => return Err(e),
        }
        if at_half.is_none() && Instant::now() >= half {
            at_half = Some(total);
        }
    }
    let end = Instant::now();
    let ecn_received = conn.stats().map_or([0; 3], |s| {
        [s.ecn_received.ect0, s.ecn_received.ect1, s.ecn_received.ce]
    });
    conn.close(0, b"done");
    drop(stream);
    let _ = tokio::time::timeout(CLOSE_WAIT, client.wait_idle()).await;
    Ok(Received {
        bytes: total,
        span: first.map_or(Duration::ZERO, |f| end - f),
        steady_bytes: total - at_half.unwrap_or(total),
        steady_span: end.saturating_duration_since(half),
        ecn_received,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_are_looked_up_by_name() {
        assert!(controller_available("prague"));
        assert!(controller_available("CUBIC"));
        assert!(!controller_available("vegas"));
        assert!(matches!(
            controller("vegas"),
            Err(RecipeError::Unsupported(m)) if m.contains("vegas")
        ));
    }
}
