//! Forged handshakes against a Brisk server on loopback while it serves a
//! large transfer and new clients keep arriving.
//!
//! One attacking process (the `brisk-flood` binary, [`attack`]) sends
//! forged Initials as fast as it can for a bounded time: a real client's
//! first datagram (Noise XX or IK), replayed with a fresh destination
//! connection ID each time, from many loopback addresses and ports. XX
//! copies are new handshakes to a server that trusts them; IK copies cost
//! it Diffie-Hellman work before they fail. Meanwhile [`measure`] moves
//! `transfer_bytes` over one connection, connects a fresh client every
//! `newcomer_every`, and samples the process's resident memory from
//! /proc: the report gives the transfer time against the same transfer
//! unloaded, how many newcomers got in, and the memory before, at its
//! peak during, and after the flood.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisk_io::{Endpoint, EndpointConfig, KEY_LEN, ServerConfig, keys};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::BenchError;

/// Which handshake the attacker forges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Forged {
    /// Noise XX first messages: plaintext, accepted as new handshakes.
    Xx,
    /// Noise IK first messages: fail, after the server's key agreement.
    Ik,
}

/// Where the first 8-byte destination connection ID sits in an Initial.
const DCID_AT: std::ops::Range<usize> = 6..14;
/// Source sockets the attacker spreads its datagrams over.
const SOURCES: usize = 32;

/// A real client's first datagram to `target`, to be replayed.
pub fn forged_initial(target: SocketAddr, pattern: Forged, server_key: [u8; KEY_LEN]) -> Vec<u8> {
    use brisk_proto::{ClientConfig as ProtoClient, Endpoint as ProtoEndpoint};
    let mut ep = ProtoEndpoint::new(0x0f1d, None);
    let key = (pattern == Forged::Ik).then_some(server_key);
    let now = brisk_time::Instant::ZERO;
    let first = ep
        .connect(now, target, ProtoClient::new(key))
        .ok()
        .and_then(|_| ep.poll_transmit(now));
    first.map(|t| t.contents).unwrap_or_default()
}

/// What the attacker sent.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct AttackReport {
    pub datagrams: u64,
    pub bytes: u64,
    pub secs: f64,
}

impl AttackReport {
    pub fn datagrams_per_sec(&self) -> f64 {
        self.datagrams as f64 / self.secs.max(1e-9)
    }
}

/// Sends forged Initials to `target` for `duration`, as fast as the
/// sockets take them. IPv4 sources are spread over 127.0.0.2 to
/// 127.0.0.33; IPv6 has only ::1, so its sources differ by port.
pub fn attack(
    target: SocketAddr,
    pattern: Forged,
    server_key: [u8; KEY_LEN],
    duration: Duration,
) -> std::io::Result<AttackReport> {
    let template = forged_initial(target, pattern, server_key);
    if template.len() < DCID_AT.end {
        return Err(std::io::Error::other("no first flight to forge"));
    }
    let sockets = (0..SOURCES)
        .map(|i| {
            let ip = match target.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i as u8)),
                v6 => v6,
            };
            UdpSocket::bind(SocketAddr::new(ip, 0))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let start = Instant::now();
    let mut d = template;
    let mut sent = 0u64;
    let mut bytes = 0u64;
    let mut counter = 0u64;
    while start.elapsed() < duration {
        for s in &sockets {
            for _ in 0..64 {
                counter = counter.wrapping_add(0x9e37_79b9_7f4a_7c15);
                d[DCID_AT].copy_from_slice(&counter.to_be_bytes());
                // A full socket buffer only slows the attacker down.
                if s.send_to(&d, target).is_ok() {
                    sent += 1;
                    bytes += d.len() as u64;
                }
            }
        }
    }
    Ok(AttackReport {
        datagrams: sent,
        bytes,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct FloodPlan {
    pub ip: IpAddr,
    pub pattern: Forged,
    pub transfer_bytes: u64,
    pub flood: Duration,
    /// The `brisk-flood` binary.
    pub attacker: PathBuf,
    pub newcomer_every: Duration,
    /// How long after the flood the memory is read again.
    pub settle: Duration,
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FloodReport {
    pub pattern: Forged,
    pub ip: IpAddr,
    pub transfer_bytes: u64,
    pub unloaded_secs: f64,
    pub flooded_secs: f64,
    pub newcomers_tried: u32,
    pub newcomers_connected: u32,
    pub newcomer_slowest_ms: f64,
    pub rss_before_kib: u64,
    pub rss_peak_kib: u64,
    pub rss_after_kib: u64,
    pub attack: AttackReport,
    pub retries_sent: u64,
    pub handshakes: u64,
    pub half_open_after: usize,
}

impl FloodReport {
    pub fn slowdown(&self) -> f64 {
        self.flooded_secs / self.unloaded_secs.max(1e-9)
    }

    pub fn rss_growth_after(&self) -> f64 {
        self.rss_after_kib as f64 / self.rss_before_kib.max(1) as f64
    }

    /// One paragraph a network engineer can read.
    pub fn summary(&self) -> String {
        format!(
            "forged {pattern:?} Initials over {ip}: {rate:.0} datagrams/s ({mb:.0} MB in {secs:.1} s) \
             from one process\n  transfer of {size} MB: {u:.3} s unloaded, {f:.3} s under flood \
             ({ratio:.2}x; goal 1.5x)\n  new clients: {ok} of {tried} connected during the flood, \
             slowest {slow:.0} ms\n  server: {retries} Retry packets, {hs} handshakes, \
             {half} half-open after\n  process memory (RSS): {b} KiB before, {p} KiB peak, \
             {a} KiB after ({g:+.1}%; goal within 10%)",
            pattern = self.pattern,
            ip = self.ip,
            rate = self.attack.datagrams_per_sec(),
            mb = self.attack.bytes as f64 / 1e6,
            secs = self.attack.secs,
            size = self.transfer_bytes / 1_000_000,
            u = self.unloaded_secs,
            f = self.flooded_secs,
            ratio = self.slowdown(),
            ok = self.newcomers_connected,
            tried = self.newcomers_tried,
            slow = self.newcomer_slowest_ms,
            retries = self.retries_sent,
            hs = self.handshakes,
            half = self.half_open_after,
            b = self.rss_before_kib,
            p = self.rss_peak_kib,
            a = self.rss_after_kib,
            g = (self.rss_growth_after() - 1.0) * 100.0,
        )
    }
}

/// The process's resident set in KiB (VmRSS of /proc/self/status).
pub fn rss_kib() -> Result<u64, BenchError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(BenchError::io("read /proc/self/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or(BenchError::Protocol("no VmRSS in /proc/self/status"))
}

const CHUNK: usize = 64 * 1024;

/// Sends `bytes` on a fresh connection and waits for the server's count.
async fn transfer(
    client: &Endpoint,
    addr: SocketAddr,
    key: [u8; KEY_LEN],
    bytes: u64,
) -> Result<Duration, BenchError> {
    let start = Instant::now();
    let conn = client
        .connect(addr, key)
        .await
        .map_err(BenchError::transport("flood: connect"))?;
    let mut s = conn
        .open_stream()
        .await
        .map_err(BenchError::transport("flood: open stream"))?;
    let chunk = vec![0xa5u8; CHUNK];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        s.write_all(&chunk[..n])
            .await
            .map_err(BenchError::io("flood: write"))?;
        left -= n as u64;
    }
    s.shutdown()
        .await
        .map_err(BenchError::io("flood: finish"))?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count)
        .await
        .map_err(BenchError::io("flood: read the count"))?;
    let took = start.elapsed();
    conn.close(0, b"done");
    let received_bytes = u64::from_be_bytes(count);
    if received_bytes != bytes {
        return Err(BenchError::ShortTransfer {
            sent_bytes: bytes,
            received_bytes,
        });
    }
    Ok(took)
}

/// Runs the plan: an unloaded transfer, then the same transfer and a
/// stream of new clients under the attacker's flood.
pub fn measure(plan: &FloodPlan) -> Result<FloodReport, BenchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::io("tokio runtime"))?;
    rt.block_on(measure_async(plan))
}

async fn measure_async(plan: &FloodPlan) -> Result<FloodReport, BenchError> {
    let (_, keypair) = keys::generate().map_err(BenchError::transport("flood: server key"))?;
    let key = keypair.public();
    let config = ServerConfig::new(SocketAddr::new(plan.ip, 0), keypair);
    let server = Arc::new(Endpoint::server(config).map_err(BenchError::io("flood: server"))?);
    let addr = server.local_addr();
    let acceptor = server.clone();
    let accepting = tokio::spawn(async move {
        while let Some(conn) = acceptor.accept().await {
            tokio::spawn(async move {
                if let Ok(s) = conn.accept_stream().await {
                    let _ = crate::bulk::serve_stream(s).await;
                }
            });
        }
    });
    let bind = SocketAddr::new(plan.ip, 0);
    let client = Endpoint::client(bind).map_err(BenchError::io("flood: client"))?;
    // Warm up (allocator, page cache, a newcomer's endpoint), then the
    // unloaded baseline.
    transfer(&client, addr, key, plan.transfer_bytes.min(8 << 20)).await?;
    {
        let warm = Endpoint::client_with(bind, EndpointConfig::default())
            .map_err(BenchError::io("flood: warm-up client"))?;
        if let Ok(c) = warm.connect(addr, key).await {
            c.close(0, b"warm-up");
        }
    }
    let unloaded = transfer(&client, addr, key, plan.transfer_bytes).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_before = rss_kib()?;

    let child = Command::new(&plan.attacker)
        .args([
            "--target",
            &addr.to_string(),
            "--pattern",
            match plan.pattern {
                Forged::Xx => "xx",
                Forged::Ik => "ik",
            },
            "--key",
            &keys::to_hex(&key),
            "--secs",
            &plan.flood.as_secs_f64().to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(BenchError::io("flood: start the attacker"))?;
    let flood_start = Instant::now();
    let peak = Arc::new(AtomicU64::new(rss_before));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                if let Ok(r) = rss_kib() {
                    peak.fetch_max(r, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let flooding = Arc::new(AtomicBool::new(true));
    let waiter = {
        let flooding = flooding.clone();
        tokio::spawn(async move {
            let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await;
            flooding.store(false, Ordering::Relaxed);
            out
        })
    };
    // New clients, one every `newcomer_every`, for as long as the flood
    // lasts, beside the transfer.
    let newcomers = {
        let flooding = flooding.clone();
        let every = plan.newcomer_every;
        tokio::spawn(async move {
            let (mut tried, mut connected, mut slowest) = (0u32, 0u32, Duration::ZERO);
            tokio::time::sleep(every).await;
            while flooding.load(Ordering::Relaxed) {
                let Ok(newcomer) = Endpoint::client_with(bind, EndpointConfig::default()) else {
                    break;
                };
                tried += 1;
                let asked = Instant::now();
                if let Ok(c) = newcomer.connect(addr, key).await {
                    connected += 1;
                    slowest = slowest.max(asked.elapsed());
                    c.close(0, b"hello");
                }
                tokio::time::sleep(every.saturating_sub(asked.elapsed())).await;
            }
            (tried, connected, slowest)
        })
    };
    // Let the flood reach its rate before the transfer starts.
    tokio::time::sleep(Duration::from_millis(300).min(plan.flood / 4)).await;
    let flooded = transfer(&client, addr, key, plan.transfer_bytes).await;
    let flood_secs = flood_start.elapsed();
    let output = waiter
        .await
        .map_err(|_| BenchError::Protocol("flood: the attacker's waiter panicked"))?
        .map_err(|_| BenchError::Protocol("flood: the attacker's waiter panicked"))?
        .map_err(BenchError::io("flood: wait for the attacker"))?;
    let (tried, connected, slowest) = newcomers
        .await
        .map_err(|_| BenchError::Protocol("flood: the newcomers' task panicked"))?;
    let flooded = flooded?;
    if flood_secs > plan.flood {
        eprintln!(
            "note: the transfer outlasted the {} s flood",
            plan.flood.as_secs_f64()
        );
    }
    let attack: AttackReport = serde_json::from_slice(&output.stdout)
        .map_err(|_| BenchError::Protocol("flood: the attacker printed no report"))?;
    tokio::time::sleep(plan.settle).await;
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let rss_after = rss_kib()?;
    let stats = server.stats().proto;
    let half_open_after = server.half_open();
    server.close(0, b"bench over");
    accepting.abort();
    Ok(FloodReport {
        pattern: plan.pattern,
        ip: plan.ip,
        transfer_bytes: plan.transfer_bytes,
        unloaded_secs: unloaded.as_secs_f64(),
        flooded_secs: flooded.as_secs_f64(),
        newcomers_tried: tried,
        newcomers_connected: connected,
        newcomer_slowest_ms: slowest.as_secs_f64() * 1e3,
        rss_before_kib: rss_before,
        rss_peak_kib: peak.load(Ordering::Relaxed),
        rss_after_kib: rss_after,
        attack,
        retries_sent: stats.retries_sent,
        handshakes: stats.connections_accepted + stats.handshake_failed,
        half_open_after,
    })
}
