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

#![allow(unsafe_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisk_io::{Endpoint, EndpointConfig, KEY_LEN, ServerConfig, keys};
use sha2::{Digest, Sha256};
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
    let mut first = Vec::new();
    // Nothing is appended if either step fails: the caller gets no bytes.
    if ep.connect(now, target, ProtoClient::new(key)).is_ok() {
        ep.poll_transmit(now, 1, &mut first);
    }
    first
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
    /// The transfer's sending rate, bits per second: one the server
    /// sustains unloaded on a small share of a core, so a slowdown under
    /// flood is the flood's doing, not the transfer's own CPU demand.
    pub transfer_rate_bps: u64,
    pub flood: Duration,
    /// The `brisk-flood` binary.
    pub attacker: PathBuf,
    pub newcomer_every: Duration,
    /// The server's half-open timeout: forged handshakes it admitted are
    /// gone this long after the flood.
    pub half_open_timeout: Duration,
    /// How long after the flood the memory is read again (at least the
    /// half-open timeout).
    pub settle: Duration,
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FloodReport {
    pub pattern: Forged,
    pub ip: IpAddr,
    pub transfer_bytes: u64,
    pub transfer_rate_bps: u64,
    pub unloaded_secs: f64,
    pub flooded_secs: f64,
    /// Whether the SHA-256 the server computed over both transfers
    /// matched what the client sent.
    pub digests_match: bool,
    pub newcomers_tried: u32,
    pub newcomers_connected: u32,
    pub newcomer_slowest_ms: f64,
    /// Newcomers that failed without hearing anything from the server
    /// (none of their Initials drew a Retry); the other failures got at
    /// least the Retry.
    pub newcomers_unanswered: u32,
    /// Bytes the process's live allocations hold, counted by the
    /// allocator itself ([`crate::heap::CountingAllocator`]); `None` when
    /// the process does not run on it.
    pub live_before_kib: Option<u64>,
    pub live_after_kib: Option<u64>,
    /// Where live allocations grew most from before to after the flood:
    /// the largest size of the allocations' size class (from half that
    /// size plus one byte) and the growth, both in bytes. A pool of
    /// same-sized buffers that kept its peak shows up here.
    pub largest_growth: Option<(u64, u64)>,
    /// Bytes glibc's arenas count as in use (see [`heap_live_kib`]).
    pub heap_before_kib: u64,
    pub heap_peak_kib: u64,
    pub heap_after_kib: u64,
    pub rss_before_kib: u64,
    pub rss_peak_kib: u64,
    pub rss_after_kib: u64,
    /// Datagrams the kernel dropped at the server's full listening socket.
    pub server_kernel_drops: u64,
    /// Datagrams the server read from established connections' own
    /// sockets, which the flood does not reach (brisk-io's `connected`).
    pub server_own_socket_datagrams: u64,

    pub attack: AttackReport,
    pub retries_sent: u64,
    /// Forged Initials left unanswered: their source had drawn its Retry
    /// packets for that second without echoing a token.
    pub retries_withheld: u64,
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

    /// Memory after the flood over before, by the goal's measure: the
    /// counted live allocations when the process counts them, else glibc's
    /// in-use figure, which also holds chunks its per-thread caches keep
    /// for reuse.
    pub fn heap_growth_after(&self) -> f64 {
        match (self.live_before_kib, self.live_after_kib) {
            (Some(b), Some(a)) => a as f64 / b.max(1) as f64,
            _ => self.heap_after_kib as f64 / self.heap_before_kib.max(1) as f64,
        }
    }

    /// glibc's in-use figure after the flood over before.
    pub fn glibc_growth_after(&self) -> f64 {
        self.heap_after_kib as f64 / self.heap_before_kib.max(1) as f64
    }

    /// One paragraph a network engineer can read.
    pub fn summary(&self) -> String {
        format!(
            "forged Noise {pattern} handshake initiations over {ip}: {rate:.0} datagrams/s ({mb:.0} MB in {secs:.1} s) \
             from one process\n  transfer of {size} MB sent at {mbps} Mbit/s: {u:.3} s unloaded, \
             {f:.3} s under flood ({ratio:.2}x; goal 1.5x), SHA-256 {digest}\n  new clients: {ok} of {tried} connected during the flood, \
             slowest {slow:.0} ms{unanswered}\n  server: {retries} Retry packets, {withheld} Initials of sources past their \
             Retry share left unanswered, {hs} handshakes, \
             {half} half-open after, {drops} datagrams dropped at its full listening \
             socket, {own} read from connections' own sockets\n  \
             process memory, live allocations: {live} ({lg:+.1}%; goal within 10%){grew}\n  \
             process memory, in use by glibc's count (mallinfo2, with its per-thread caches): \
             {hb} KiB before, {hp} KiB peak, {ha} KiB after ({hg:+.1}%)\n  \
             process memory, resident after malloc_trim: \
             {b} KiB before, {p} KiB peak, {a} KiB after ({g:+.1}%)",
            pattern = match self.pattern {
                Forged::Ik => "IK",
                Forged::Xx => "XX",
            },
            ip = self.ip,
            rate = self.attack.datagrams_per_sec(),
            mb = self.attack.bytes as f64 / 1e6,
            secs = self.attack.secs,
            size = self.transfer_bytes / 1_000_000,
            mbps = self.transfer_rate_bps / 1_000_000,
            digest = if self.digests_match {
                "matches"
            } else {
                "DIFFERS"
            },
            u = self.unloaded_secs,
            f = self.flooded_secs,
            ratio = self.slowdown(),
            ok = self.newcomers_connected,
            tried = self.newcomers_tried,
            slow = self.newcomer_slowest_ms,
            unanswered =
                match self.newcomers_tried - self.newcomers_connected.min(self.newcomers_tried) {
                    0 => String::new(),
                    failed => format!(
                        " ({failed} failed: {} never heard the server, {} got its Retry)",
                        self.newcomers_unanswered,
                        failed.saturating_sub(self.newcomers_unanswered)
                    ),
                },
            retries = self.retries_sent,
            withheld = self.retries_withheld,
            hs = self.handshakes,
            half = self.half_open_after,
            drops = self.server_kernel_drops,
            own = self.server_own_socket_datagrams,
            hb = self.heap_before_kib,
            hp = self.heap_peak_kib,
            ha = self.heap_after_kib,
            hg = (self.glibc_growth_after() - 1.0) * 100.0,
            live = match (self.live_before_kib, self.live_after_kib) {
                (Some(b), Some(a)) => format!("{b} KiB before, {a} KiB after"),
                _ => "not counted (no counting allocator)".to_owned(),
            },
            lg = (self.heap_growth_after() - 1.0) * 100.0,
            grew = match self.largest_growth {
                Some((size, grew)) => format!(
                    ", grown most in allocations of {}-{size} bytes: +{} KiB",
                    size / 2 + 1,
                    grew / 1024
                ),
                None => String::new(),
            },
            b = self.rss_before_kib,
            p = self.rss_peak_kib,
            a = self.rss_after_kib,
            g = (self.rss_growth_after() - 1.0) * 100.0,
        )
    }
}

/// What the process's allocations hold now, in KiB: glibc's in-use heap
/// chunks plus its mmapped blocks (`mallinfo2`). This is the memory
/// goal's measure: unlike the resident set it leaves out pages the
/// allocator keeps free and thread stacks, so it moves only with what the
/// endpoints actually keep.
pub fn heap_live_kib() -> u64 {
    // SAFETY: mallinfo2 only reads glibc's arena statistics.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks.saturating_add(info.hblkhd) / 1024) as u64
}

/// The process's resident set in KiB once the allocator has handed its
/// free pages back (`malloc_trim`): what the live data occupies, not
/// what glibc keeps cached in its arenas after a burst of allocations.
pub fn settled_rss_kib() -> Result<u64, BenchError> {
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
    rss_kib()
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
/// How long a newcomer's endpoint is given to close its connection (or
/// give up on the handshake) before the memory is read again.
const NEWCOMER_DRAIN: Duration = Duration::from_secs(10);

/// Fills `chunk` with the bytes at stream offset `at` of the transfer: a
/// splitmix64 sequence, so a reordered, dropped or repeated piece changes
/// the digest the server returns.
fn fill_payload(chunk: &mut [u8], at: u64) {
    for (i, word) in chunk.chunks_mut(8).enumerate() {
        let mut z = (at / 8 + i as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let bytes = z.to_le_bytes();
        word.copy_from_slice(&bytes[..word.len()]);
    }
}

/// The server's side of a transfer: reads the stream to its end and
/// answers with the byte count (8 bytes, big-endian) and the SHA-256 of
/// what it read.
pub async fn serve_hashed(mut s: brisk_io::Stream) -> std::io::Result<()> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut count = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        count += n as u64;
    }
    let mut answer = count.to_be_bytes().to_vec();
    answer.extend_from_slice(&hasher.finalize());
    s.write_all(&answer).await?;
    s.shutdown().await
}

/// One transfer's outcome.
struct Transferred {
    took: Duration,
    digest_matches: bool,
}

/// Sends `bytes` on the established `conn` at `rate_bps` at most (each
/// 64 KiB write waits for its slot on a fixed schedule) and waits for the
/// server's count and digest. The clock runs from the first write to the
/// server's answer, so it covers delivery of every byte.
async fn transfer(
    conn: &brisk_io::Connection,
    bytes: u64,
    rate_bps: u64,
) -> Result<Transferred, BenchError> {
    let mut s = conn
        .open_stream()
        .await
        .map_err(BenchError::transport("flood: open stream"))?;
    let mut chunk = vec![0u8; CHUNK];
    let mut hasher = Sha256::new();
    let start = tokio::time::Instant::now();
    let mut sent = 0u64;
    while sent < bytes {
        let due = Duration::from_secs_f64(sent as f64 * 8.0 / rate_bps.max(1) as f64);
        tokio::time::sleep_until(start + due).await;
        let n = (bytes - sent).min(CHUNK as u64) as usize;
        fill_payload(&mut chunk[..n], sent);
        hasher.update(&chunk[..n]);
        s.write_all(&chunk[..n])
            .await
            .map_err(BenchError::io("flood: write"))?;
        sent += n as u64;
    }
    s.shutdown()
        .await
        .map_err(BenchError::io("flood: finish"))?;
    let mut answer = [0u8; 40];
    s.read_exact(&mut answer)
        .await
        .map_err(BenchError::io("flood: read the count"))?;
    let took = start.elapsed();
    let mut count = [0u8; 8];
    count.copy_from_slice(&answer[..8]);
    let received_bytes = u64::from_be_bytes(count);
    if received_bytes != bytes {
        return Err(BenchError::ShortTransfer {
            sent_bytes: bytes,
            received_bytes,
        });
    }
    Ok(Transferred {
        took,
        digest_matches: answer[8..] == hasher.finalize()[..],
    })
}

/// Runs the plan: an unloaded transfer, then the same transfer and a
/// stream of new clients under the attacker's flood.
///
/// The server runs on a thread of its own (its own single-threaded
/// runtime), the clients on this one: as on two hosts, the flood's work
/// on the server does not hold up the client application's writes, and
/// the kernel shares the cores between the threads.
pub fn measure(plan: &FloodPlan) -> Result<FloodReport, BenchError> {
    let (_, keypair) = keys::generate().map_err(BenchError::transport("flood: server key"))?;
    let key = keypair.public();
    let mut config = ServerConfig::new(SocketAddr::new(plan.ip, 0), keypair);
    config.admission.half_open_timeout = plan.half_open_timeout;
    let (started, server) = std::sync::mpsc::channel();
    let serving = std::thread::spawn(move || serve(config, started));
    let server = server
        .recv()
        .map_err(|_| BenchError::Protocol("flood: the server thread ended early"))?
        .map_err(BenchError::io("flood: server"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::io("tokio runtime"))?;
    let report = rt.block_on(measure_async(plan, &server, key));
    // Stopping the endpoint ends the server thread's accept loop.
    server.abort();
    drop(server);
    serving
        .join()
        .map_err(|_| BenchError::Protocol("flood: the server thread panicked"))?;
    report
}

/// The server thread: starts the endpoint, hands a handle to it back
/// through `started`, and serves each stream (see [`serve_hashed`])
/// until the endpoint stops.
fn serve(config: ServerConfig, started: std::sync::mpsc::Sender<std::io::Result<Endpoint>>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    rt.block_on(async move {
        let server = match Endpoint::server(config) {
            Ok(server) => server,
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        if started.send(Ok(server.clone())).is_err() {
            return;
        }
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(serve_hashed(s));
                }
            });
        }
    });
}

async fn measure_async(
    plan: &FloodPlan,
    server: &Endpoint,
    key: [u8; KEY_LEN],
) -> Result<FloodReport, BenchError> {
    let addr = server.local_addr();
    let bind = SocketAddr::new(plan.ip, 0);
    let client = Endpoint::client(bind).map_err(BenchError::io("flood: client"))?;
    // One connection carries the warm-up, the unloaded baseline and the
    // transfer under flood: it is in progress when the flood begins.
    let conn = client
        .connect(addr, key)
        .await
        .map_err(BenchError::transport("flood: connect"))?;
    let rate = plan.transfer_rate_bps;
    // Warm up (allocator, page cache, a newcomer's endpoint), then the
    // unloaded baseline.
    transfer(&conn, plan.transfer_bytes.min(8 << 20), rate).await?;
    {
        let warm = Endpoint::client_with(bind, EndpointConfig::default())
            .map_err(BenchError::io("flood: warm-up client"))?;
        if let Ok(c) = warm.connect(addr, key).await {
            c.close(0, b"warm-up");
        }
    }
    let unloaded = transfer(&conn, plan.transfer_bytes, rate).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_before = settled_rss_kib()?;
    let heap_before = heap_live_kib();
    let live_before = crate::heap::live_bytes().map(|b| b / 1024);
    let classes_before = crate::heap::live_by_class();

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
    let heap_peak = Arc::new(AtomicU64::new(heap_before));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, heap_peak, sampling) = (peak.clone(), heap_peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                if let Ok(r) = rss_kib() {
                    peak.fetch_max(r, Ordering::Relaxed);
                }
                heap_peak.fetch_max(heap_live_kib(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let flooding = Arc::new(AtomicBool::new(true));
    // The attacker is waited for on a thread of its own that ends with it:
    // a thread of tokio's blocking pool would stay (idle, with what it
    // allocated) past the memory reading after the flood.
    let waiter = {
        let flooding = flooding.clone();
        let (ended, on_end) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            let out = child.wait_with_output();
            let _ = ended.send(());
            out
        });
        tokio::spawn(async move {
            let _ = on_end.await;
            flooding.store(false, Ordering::Relaxed);
            thread.join()
        })
    };
    // New clients, one every `newcomer_every` for as long as the flood
    // lasts, each on its own endpoint and without waiting for the one
    // before, beside the transfer.
    let newcomers = {
        let flooding = flooding.clone();
        let every = plan.newcomer_every;
        tokio::spawn(async move {
            let mut attempts = Vec::new();
            tokio::time::sleep(every).await;
            while flooding.load(Ordering::Relaxed) {
                attempts.push(tokio::spawn(async move {
                    let newcomer = Endpoint::client_with(bind, EndpointConfig::default()).ok()?;
                    let asked = Instant::now();
                    let connected = newcomer.connect(addr, key).await;
                    let took = asked.elapsed();
                    if let Ok(c) = &connected {
                        c.close(0, b"hello");
                    }
                    let connected = connected.is_ok();
                    // What a failed newcomer heard: nothing (its Initials
                    // never got an answer) or the server's Retry at least.
                    let heard = newcomer.stats().proto.datagrams_received > 0;
                    // Its socket and buffers (a failed attempt's too) are
                    // gone before the memory is read again.
                    let _ = tokio::time::timeout(NEWCOMER_DRAIN, newcomer.wait_idle()).await;
                    Some(if connected { Ok(took) } else { Err(heard) })
                }));
                tokio::time::sleep(every).await;
            }
            let (mut connected, mut slowest, mut unanswered) = (0u32, Duration::ZERO, 0u32);
            let tried = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
            for attempt in attempts {
                match attempt.await {
                    Ok(Some(Ok(took))) => {
                        connected += 1;
                        slowest = slowest.max(took);
                    }
                    Ok(Some(Err(false))) => unanswered += 1,
                    _ => {}
                }
            }
            (tried, connected, slowest, unanswered)
        })
    };
    // Let the flood reach its rate before the transfer starts.
    tokio::time::sleep(Duration::from_millis(300).min(plan.flood / 4)).await;
    let flooded = transfer(&conn, plan.transfer_bytes, rate).await;
    let flood_secs = flood_start.elapsed();
    let output = waiter
        .await
        .map_err(|_| BenchError::Protocol("flood: the attacker's waiter panicked"))?
        .map_err(|_| BenchError::Protocol("flood: the attacker's waiter panicked"))?
        .map_err(BenchError::io("flood: wait for the attacker"))?;
    let (tried, connected, slowest, unanswered) = newcomers
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
    let rss_after = settled_rss_kib()?;
    let heap_after = heap_live_kib();
    let live_after = crate::heap::live_bytes().map(|b| b / 1024);
    let largest_growth = live_before.and(crate::heap::largest_growth(
        &classes_before,
        &crate::heap::live_by_class(),
    ));
    conn.close(0, b"done");
    let server_stats = server.stats();
    let stats = server_stats.proto;
    let half_open_after = server.half_open();
    Ok(FloodReport {
        pattern: plan.pattern,
        ip: plan.ip,
        transfer_bytes: plan.transfer_bytes,
        transfer_rate_bps: rate,
        unloaded_secs: unloaded.took.as_secs_f64(),
        flooded_secs: flooded.took.as_secs_f64(),
        digests_match: unloaded.digest_matches && flooded.digest_matches,
        newcomers_tried: tried,
        newcomers_connected: connected,
        newcomer_slowest_ms: slowest.as_secs_f64() * 1e3,
        newcomers_unanswered: unanswered,
        live_before_kib: live_before,
        live_after_kib: live_after,
        largest_growth,
        heap_before_kib: heap_before,
        heap_peak_kib: heap_peak.load(Ordering::Relaxed),
        heap_after_kib: heap_after,
        rss_before_kib: rss_before,
        rss_peak_kib: peak.load(Ordering::Relaxed),
        rss_after_kib: rss_after,
        attack,
        retries_sent: stats.retries_sent,
        retries_withheld: stats.retries_withheld,
        handshakes: stats.connections_accepted + stats.handshake_failed,
        half_open_after,
        server_kernel_drops: server_stats.socket.errors.kernel_drops,
        server_own_socket_datagrams: server_stats.socket.connected.datagrams,
    })
}
