//! The stalled-Wi-Fi case (WWDC 2015) on real sockets: a phone with two
//! access paths downloads from one server, and its Wi-Fi stops delivering
//! mid-download while its cellular path still works.
//!
//! The lab's router path is the Wi-Fi (the scenario's network). The
//! recipe adds the cellular path: a second TUN device in each namespace,
//! joined by a router thread of its own that runs the same link models
//! (rate, one-way delay and a FIFO each way: 10 Mbit/s and a 60 ms round
//! trip by default), with an address of the client's own in another
//! subnet; the client's datagrams leave by the path of the address they
//! are sent from (a rule per source address, as a phone routes per
//! interface). The Wi-Fi stalls when htb on both TUN devices drops to
//! 8 bit/s: the interfaces stay up and nothing gets through either way.
//!
//! Two clients, one after the other, each on a fresh Wi-Fi:
//! - Brisk over `brisk-io`, failover on, its cellular address as the
//!   standby (`Endpoint::set_standby`): the phone only downloads, and its
//!   connection notices the stall and moves to cellular by itself;
//! - kernel TCP, connected with `brisk-tcp`'s Happy Eyeballs racing both
//!   local addresses (Wi-Fi first, cellular one attempt delay later); the
//!   app gives up on a read after a timeout of its own and connects again
//!   the same way, asking for the rest from where it stopped (a range
//!   request), as the talk asks apps to do.
//!
//! Both downloads are checked by SHA-256. Each side's stall is the longest
//! wait between two reads that brought bytes, from the moment the Wi-Fi
//! stalled (the wait that spans the stall included): what the user waits.
//!
//! The connect-while-stalled case ([`run_connect_stalled`]): the Wi-Fi
//! passes nothing before either client starts. Brisk connects with
//! `Endpoint::connect_racing` over both local addresses, kernel TCP with
//! the same Happy Eyeballs as above, both with the same attempt delay;
//! each reports when its first and last response bytes came.

use super::{Background, RecipeError, ms};
use crate::clock::Clock;
use crate::lab::Lab;
use crate::netns::Netns;
use crate::router::RouterCore;
use crate::router::event_loop::{self, LoopConfig, RouterOutcome};
use crate::router::resolver::Resolver;
use crate::topology::{Addressing, MTU_BYTES};
use crate::tun::Tun;
use brisk_io::{Endpoint, EndpointConfig, Keypair, RacePolicy, ServerConfig};
use brisk_nat64::Nat64Prefix;
use brisk_netmodel::Network;
use brisk_tcp::connect::{self, ConnectOptions, Nat64Policy};
use brisk_tcp::happy_eyeballs::{Config as HeConfig, Source};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The Brisk server's UDP port.
const BRISK_PORT: u16 = 4436;
/// The kernel-TCP server's port.
const TCP_PORT: u16 = 8086;
const CHUNK_BYTES: usize = 64 * 1024;

/// The cellular path's addresses: client end, server end, prefix length.
const CELL_V4: (&str, &str, &str) = ("10.98.0.2", "10.98.0.1", "24");
const CELL_V6: (&str, &str, &str) = ("fd98::2", "fd98::1", "64");
/// The client's routing table for its cellular address.
const CELL_TABLE: &str = "102";

/// One run of both clients.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoPathConfig {
    /// Bytes each client downloads.
    pub bytes: u64,
    /// The Wi-Fi stalls once the client has read this many.
    pub stall_after: u64,
    /// The cellular path's rate each way, bit/s.
    pub cellular_bps: u64,
    /// The cellular path's one-way delay (each way).
    pub cellular_delay: Duration,
    /// The TCP app's read timeout: how long it waits for bytes before it
    /// connects again.
    pub tcp_read_timeout: Duration,
    /// Happy Eyeballs' attempt delay (RFC 8305 recommends 250 ms).
    pub attempt_delay: Duration,
    /// Each download must be done within this.
    pub limit: Duration,
}

impl Default for TwoPathConfig {
    fn default() -> Self {
        TwoPathConfig {
            bytes: 3 << 20,
            stall_after: 1 << 20,
            cellular_bps: 10_000_000,
            cellular_delay: Duration::from_millis(30),
            tcp_read_timeout: Duration::from_secs(1),
            attempt_delay: Duration::from_millis(250),
            limit: Duration::from_secs(6),
        }
    }
}

/// What one client measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideReport {
    pub bytes: u64,
    /// The SHA-256 of what it read matches what the server sent.
    pub sha256_ok: bool,
    /// The longest wait between reads from the stall on, ms.
    pub stall_ms: f64,
    /// From the stall to the last byte, ms.
    pub after_stall_ms: f64,
    /// The whole download, ms.
    pub total_ms: f64,
    /// Whether the last bytes came over the cellular path.
    pub finished_on_cellular: bool,
    /// Brisk: stalls its connection reported; TCP: reads that timed out.
    pub stalls_noticed: u64,
    /// Brisk: new paths validated; TCP: connections made after the first.
    pub moves: u64,
}

/// Both clients, in the same topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwoPathReport {
    pub brisk: SideReport,
    pub tcp: SideReport,
    /// The cellular path's rate, Mbit/s.
    pub cellular_mbps: f64,
    /// The cellular path's base round trip, ms.
    pub cellular_rtt_ms: f64,
    pub tcp_read_timeout_ms: f64,
    pub attempt_delay_ms: f64,
}

/// The seed of the cellular path's models (it has no random loss or
/// jitter, so any seed gives the same path).
const CELL_SEED: u64 = 0xce11;
/// Packets the cellular path's FIFO holds each way.
const CELL_QUEUE_PACKETS: usize = 100;

/// The cellular path: its router thread stops (and its TUN devices go)
/// when this is dropped, before the lab's namespaces.
struct Cellular {
    /// The client's address on it.
    client: IpAddr,
    stop: Arc<AtomicBool>,
    router: Option<JoinHandle<RouterOutcome>>,
}

impl Drop for Cellular {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.router.take() {
            let _ = r.join();
        }
    }
}

/// The cellular path's network: `config`'s rate and one-way delay each
/// way, a FIFO of [`CELL_QUEUE_PACKETS`] each way.
fn cellular_network(config: &TwoPathConfig) -> Result<Network, RecipeError> {
    let delay_us = config.cellular_delay.as_micros();
    let bps = config.cellular_bps;
    let text = format!(
        "[link.down]\nrate = \"{bps}bit\"\ndelay = \"{delay_us}us\"\n\
         [link.up]\nrate = \"{bps}bit\"\ndelay = \"{delay_us}us\"\n\
         [queue.fifo]\nlimit_packets = {CELL_QUEUE_PACKETS}\n\
         [queue_up.fifo]\nlimit_packets = {CELL_QUEUE_PACKETS}\n"
    );
    Network::parse(&text).map_err(|e| RecipeError::failed("the cellular path's network", e))
}

/// Gives `dev` (a TUN device in `ns`) its address on the cellular subnet,
/// with no default route: the namespace's default stays the Wi-Fi.
fn configure_cell_tun(
    ns: &Netns,
    dev: &str,
    addr: &str,
    prefix: &str,
    v6: bool,
) -> Result<(), RecipeError> {
    ns.sysctl(&format!("ipv4.conf.{dev}.rp_filter"), "0")?;
    if v6 {
        ns.sysctl(&format!("ipv6.conf.{dev}.disable_ipv6"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.accept_dad"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.accept_ra"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.router_solicitations"), "0")?;
    }
    let mtu = MTU_BYTES.to_string();
    ns.ip(&["link", "set", "dev", dev, "mtu", &mtu, "up"])?;
    let a = format!("{addr}/{prefix}");
    let mut args = vec!["addr", "add", a.as_str(), "dev", dev];
    if v6 {
        args.push("nodad");
    }
    ns.ip(&args)?;
    Ok(())
}

/// Adds the cellular path (a TUN device in each namespace and its router
/// thread) and the client's route by source address.
fn add_cellular(lab: &Lab, config: &TwoPathConfig) -> Result<Cellular, RecipeError> {
    let network = cellular_network(config)?;
    let v6 = lab.server_addr().is_ipv6();
    let (client_addr, server_end, prefix) = if v6 { CELL_V6 } else { CELL_V4 };
    let client: IpAddr = client_addr
        .parse()
        .map_err(|e| RecipeError::failed("cellular address", e))?;
    let names = lab.names();
    let (cdev, sdev) = (format!("{}m", names.prefix), format!("{}n", names.prefix));
    let (cns, sns) = (lab.client_ns(), lab.server_ns());
    let ctun = Tun::create_in(cns, &cdev)?;
    let stun = Tun::create_in(sns, &sdev)?;
    configure_cell_tun(cns, &cdev, client_addr, prefix, v6)?;
    configure_cell_tun(sns, &sdev, server_end, prefix, v6)?;
    // Replies from the server's address come back on the cellular device
    // while the main table routes that address to the Wi-Fi's.
    cns.sysctl("ipv4.conf.all.rp_filter", "0")?;
    let family = if v6 { "-6" } else { "-4" };
    cns.ip(&[
        family,
        "rule",
        "add",
        "from",
        client_addr,
        "table",
        CELL_TABLE,
    ])?;
    let server = lab.server_addr().to_string();
    cns.ip(&[
        family, "route", "add", &server, "dev", &cdev, "table", CELL_TABLE,
    ])?;
    let wifi = lab.addressing();
    let addressing = Addressing {
        mode: wifi.mode,
        client_v4: match client {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        },
        client_v6: match client {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        },
        server_v4: wifi.server_v4,
        server_v6: wifi.server_v6,
    };
    let servers: Vec<IpAddr> = [
        wifi.server_v4.map(IpAddr::from),
        wifi.server_v6.map(IpAddr::from),
    ]
    .into_iter()
    .flatten()
    .collect();
    let resolver = Resolver::new(Nat64Prefix::WELL_KNOWN, servers, vec![client])
        .map_err(|e| RecipeError::failed("the cellular path's resolver", e))?;
    let core = RouterCore::new(&network, CELL_SEED, addressing, None, resolver);
    let stop = Arc::new(AtomicBool::new(false));
    let router = std::thread::Builder::new()
        .name("brisk-cellular".into())
        .spawn({
            let stop = stop.clone();
            move || {
                let never = AtomicBool::new(false);
                event_loop::run(
                    core,
                    ctun,
                    stun,
                    Clock::start(),
                    None,
                    &stop,
                    &never,
                    LoopConfig::default(),
                )
            }
        })
        .map_err(|e| RecipeError::failed("spawn the cellular router", e))?;
    Ok(Cellular {
        client,
        stop,
        router: Some(router),
    })
}

fn tc(ns: &str, args: &[&str]) -> Result<(), RecipeError> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "tc"])
        .args(args)
        .output()
        .map_err(|e| RecipeError::failed("run tc", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(RecipeError::Unsupported(format!(
            "tc {} in {ns}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Shapes what `dev` sends to `rate` (htb, one class).
fn htb(ns: &str, dev: &str, rate: &str) -> Result<(), RecipeError> {
    tc(
        ns,
        &[
            "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
        ],
    )?;
    tc(
        ns,
        &[
            "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate,
        ],
    )
}

/// Stops (or lets again) every packet on the Wi-Fi path, both ways: htb
/// on the client's and the server's TUN devices drops all they send.
fn set_wifi_stalled(lab: &Lab, stalled: bool) -> Result<(), RecipeError> {
    let names = lab.names();
    for (ns, dev) in [
        (lab.client_ns().name(), names.client.as_str()),
        (lab.server_ns().name(), names.server.as_str()),
    ] {
        if stalled {
            htb(ns, dev, "8bit")?;
        } else {
            tc(ns, &["qdisc", "del", "dev", dev, "root"])?;
        }
    }
    Ok(())
}

/// The download's bytes: any range can be made from its offset, so a
/// client that connects again asks for the rest.
fn fill(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8;
    }
}

fn expected_sha256(bytes: u64) -> Vec<u8> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut at = 0;
    while at < bytes {
        let n = (bytes - at).min(CHUNK_BYTES as u64) as usize;
        fill(at, &mut buf[..n]);
        h.update(&buf[..n]);
        at += n as u64;
    }
    h.finalize().to_vec()
}

/// What a client shares with the recipe while it reads.
#[derive(Default)]
struct Progress {
    read: AtomicU64,
    stalled_at: Mutex<Option<Instant>>,
}

/// The reading side of one download: hash, times, the stall's gap.
struct Reader {
    progress: Arc<Progress>,
    hash: Sha256,
    bytes: u64,
    started: Instant,
    last: Instant,
    longest_after_stall: Duration,
}

impl Reader {
    fn new(progress: Arc<Progress>) -> Reader {
        let now = Instant::now();
        Reader {
            progress,
            hash: Sha256::new(),
            bytes: 0,
            started: now,
            last: now,
            longest_after_stall: Duration::ZERO,
        }
    }

    fn got(&mut self, data: &[u8]) {
        let now = Instant::now();
        let stalled = *self
            .progress
            .stalled_at
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if stalled.is_some() {
            self.longest_after_stall = self.longest_after_stall.max(now - self.last);
        }
        self.last = now;
        self.hash.update(data);
        self.bytes += data.len() as u64;
        self.progress.read.store(self.bytes, Ordering::Relaxed);
    }

    fn report(self, expected: &[u8], on_cellular: bool, noticed: u64, moves: u64) -> SideReport {
        let stalled = *self
            .progress
            .stalled_at
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        SideReport {
            bytes: self.bytes,
            sha256_ok: self.hash.finalize().as_slice() == expected,
            stall_ms: ms(self.longest_after_stall),
            after_stall_ms: stalled
                .map_or(f64::NAN, |s| ms(self.last.saturating_duration_since(s))),
            total_ms: ms(self.last - self.started),
            finished_on_cellular: on_cellular,
            stalls_noticed: noticed,
            moves,
        }
    }
}

/// Starts `client` on a thread in the client's namespace, stalls the
/// Wi-Fi once it has read `stall_after` bytes, and waits for its report.
fn drive(
    lab: &Lab,
    config: &TwoPathConfig,
    what: &str,
    client: impl FnOnce(Arc<Progress>) -> io::Result<SideReport> + Send + 'static,
) -> Result<SideReport, RecipeError> {
    let progress = Arc::new(Progress::default());
    let handle = lab.client_ns().spawn(what, {
        let progress = progress.clone();
        move || client(progress)
    })?;
    let start = Instant::now();
    let mut stalled = false;
    let result = loop {
        if handle.is_finished() {
            break handle
                .join()
                .map_err(|_| RecipeError::failed(what, "the client panicked"))?
                .map_err(RecipeError::Live)?
                .map_err(|e| RecipeError::failed(what, e));
        }
        if !stalled && progress.read.load(Ordering::Relaxed) >= config.stall_after {
            set_wifi_stalled(lab, true)?;
            *progress
                .stalled_at
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            stalled = true;
        }
        if start.elapsed() > config.limit + Duration::from_secs(2) {
            break Err(RecipeError::failed(what, "the client did not return"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if stalled {
        set_wifi_stalled(lab, false)?;
    }
    let report = result?;
    if !stalled {
        return Err(RecipeError::failed(
            what,
            format!("the download ended before {} bytes", config.stall_after),
        ));
    }
    Ok(report)
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The Brisk server: it answers a stream carrying a length (8 bytes,
/// big-endian) with that many bytes of the download; returns it and its
/// public key.
fn start_brisk_server(
    lab: &Lab,
    config: &TwoPathConfig,
) -> Result<(Background, [u8; brisk_io::KEY_LEN]), RecipeError> {
    let keypair = Keypair::from_private([0x5c; 32]);
    let key = keypair.public();
    let bind = SocketAddr::new(lab.server_bind_addr(), BRISK_PORT);
    let limit = config.limit;
    let server = Background::start(
        lab.server_ns(),
        "two-path-brisk-server",
        move |ready| async move {
            let mut c = ServerConfig::new(bind, keypair);
            c.endpoint.transport.migration = true;
            let server = match Endpoint::server(c) {
                Ok(s) => s,
                Err(e) => return ready.fail(format!("brisk server on {bind}: {e}")),
            };
            ready.ok();
            // Each connection on a task of its own: one whose path went
            // silent must not hold up the next.
            while let Some(conn) = server.accept().await {
                tokio::spawn(async move {
                    let send = async {
                        let mut s = conn.accept_stream().await.map_err(io::Error::from)?;
                        let mut request = [0u8; 8];
                        s.read_exact(&mut request).await?;
                        let len = u64::from_be_bytes(request);
                        let mut buf = vec![0u8; CHUNK_BYTES];
                        let mut at = 0;
                        while at < len {
                            let n = (len - at).min(CHUNK_BYTES as u64) as usize;
                            fill(at, &mut buf[..n]);
                            s.write_all(&buf[..n]).await?;
                            at += n as u64;
                        }
                        s.finish()?;
                        io::Result::Ok(())
                    };
                    if send.await.is_ok() {
                        let _ = tokio::time::timeout(limit, conn.closed()).await;
                    }
                });
            }
        },
    )?;
    Ok((server, key))
}

/// Brisk: the server sends `bytes` on the stream the client opened with
/// its request.
fn brisk_side(
    lab: &Lab,
    cell: &Cellular,
    config: &TwoPathConfig,
) -> Result<SideReport, RecipeError> {
    let (_server, key) = start_brisk_server(lab, config)?;
    let bytes = config.bytes;
    let limit = config.limit;
    let wifi = SocketAddr::new(lab.client_addr(), 0);
    let standby = SocketAddr::new(cell.client, 0);
    let target = SocketAddr::new(lab.server_addr(), BRISK_PORT);
    let expected = expected_sha256(bytes);
    drive(lab, config, "two-path-brisk-client", move |progress| {
        runtime()?.block_on(async move {
            let mut reader = Reader::new(progress);
            let mut ec = EndpointConfig::default();
            ec.transport.migration = true;
            ec.transport.failover = true;
            let client = Endpoint::client_with(wifi, ec)?;
            client.set_standby(standby)?;
            let download = async {
                let conn = client
                    .connect(target, key)
                    .await
                    .map_err(io::Error::other)?;
                let mut s = conn.open_stream().await.map_err(io::Error::from)?;
                s.write_all(&bytes.to_be_bytes()).await?;
                s.flush().await?;
                let mut buf = vec![0u8; CHUNK_BYTES];
                loop {
                    let n = s.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    reader.got(&buf[..n]);
                }
                let stats = conn
                    .stats()
                    .map_or((0, 0), |s| (s.path_stalls, s.paths_validated));
                conn.close(0, b"done");
                io::Result::Ok(stats)
            };
            let stats = tokio::time::timeout(limit, download)
                .await
                .map_err(|_| io::Error::other(format!("not done in {limit:?}")))??;
            let on_cellular = client.local_addr().ip() == standby.ip();
            let _ = tokio::time::timeout(Duration::from_millis(300), client.wait_idle()).await;
            Ok(reader.report(&expected, on_cellular, stats.0, stats.1))
        })
    })
}

/// The kernel-TCP server: it answers a request (offset and length, 8
/// bytes each, big-endian) with those bytes of the download.
fn start_tcp_server(lab: &Lab) -> Result<Background, RecipeError> {
    let bind = SocketAddr::new(lab.server_bind_addr(), TCP_PORT);
    Background::start(
        lab.server_ns(),
        "two-path-tcp-server",
        move |ready| async move {
            let listener = match TcpListener::bind(bind).await {
                Ok(l) => l,
                Err(e) => return ready.fail(format!("bind {bind}: {e}")),
            };
            ready.ok();
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0u8; 16];
                    s.read_exact(&mut request).await?;
                    let (from, len) = request.split_at(8);
                    let from = u64::from_be_bytes(from.try_into().unwrap_or_default());
                    let end = from + u64::from_be_bytes(len.try_into().unwrap_or_default());
                    let mut buf = vec![0u8; CHUNK_BYTES];
                    let mut at = from;
                    while at < end {
                        let n = (end - at).min(CHUNK_BYTES as u64) as usize;
                        fill(at, &mut buf[..n]);
                        s.write_all(&buf[..n]).await?;
                        at += n as u64;
                    }
                    s.shutdown().await?;
                    io::Result::Ok(())
                });
            }
        },
    )
}

/// Kernel TCP: the server answers a request (offset, length) with those
/// bytes; the client races both local addresses, and connects again the
/// same way when a read times out.
fn tcp_side(lab: &Lab, cell: &Cellular, config: &TwoPathConfig) -> Result<SideReport, RecipeError> {
    let _server = start_tcp_server(lab)?;
    let (wifi, cellular) = (lab.client_addr(), cell.client);
    let server = lab.server_addr();
    let (bytes, limit) = (config.bytes, config.limit);
    let read_timeout = config.tcp_read_timeout;
    let he = HeConfig::with_attempt_delay(config.attempt_delay)
        .map_err(|e| RecipeError::failed("attempt delay", e))?;
    let expected = expected_sha256(bytes);
    drive(lab, config, "two-path-tcp-client", move |progress| {
        runtime()?.block_on(async move {
            let mut reader = Reader::new(progress);
            let options = ConnectOptions {
                config: he,
                sources: vec![Source::Ip(wifi), Source::Ip(cellular)],
                nat64: Nat64Policy::Off,
                attempt_timeout: limit,
                ..ConnectOptions::default()
            };
            let (mut timeouts, mut connections, mut last_source) = (0u64, 0u64, None);
            let download = async {
                while reader.bytes < bytes {
                    let c = connect::connect_addrs(&[server], TCP_PORT, &options)
                        .await
                        .map_err(io::Error::other)?;
                    connections += 1;
                    last_source = Some(c.candidate.source.clone());
                    let mut s = c.stream;
                    let mut request = [0u8; 16];
                    request[..8].copy_from_slice(&reader.bytes.to_be_bytes());
                    request[8..].copy_from_slice(&(bytes - reader.bytes).to_be_bytes());
                    s.write_all(&request).await?;
                    let mut buf = vec![0u8; CHUNK_BYTES];
                    loop {
                        match tokio::time::timeout(read_timeout, s.read(&mut buf)).await {
                            Ok(Ok(0)) => break,
                            Ok(Ok(n)) => reader.got(&buf[..n]),
                            Ok(Err(e)) => return Err(e),
                            Err(_) => {
                                // The app's own stall detection: connect
                                // again and ask for the rest.
                                timeouts += 1;
                                break;
                            }
                        }
                    }
                }
                io::Result::Ok(())
            };
            tokio::time::timeout(limit, download)
                .await
                .map_err(|_| io::Error::other(format!("not done in {limit:?}")))??;
            let on_cellular = last_source == Some(Source::Ip(cellular));
            Ok(reader.report(
                &expected,
                on_cellular,
                timeouts,
                connections.saturating_sub(1),
            ))
        })
    })
}

/// The connect-while-stalled case: the Wi-Fi passes nothing from before
/// either client starts, and each must race its cellular address.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectStalledConfig {
    /// Bytes each client downloads once connected.
    pub bytes: u64,
    /// The cellular path's rate each way, bit/s, and one-way delay.
    pub cellular_bps: u64,
    pub cellular_delay: Duration,
    /// Both clients' attempt delay (RFC 8305 recommends 250 ms).
    pub attempt_delay: Duration,
    /// Each download must be done within this.
    pub limit: Duration,
}

impl Default for ConnectStalledConfig {
    fn default() -> Self {
        let two_path = TwoPathConfig::default();
        ConnectStalledConfig {
            bytes: 256 << 10,
            cellular_bps: two_path.cellular_bps,
            cellular_delay: two_path.cellular_delay,
            attempt_delay: two_path.attempt_delay,
            limit: Duration::from_secs(4),
        }
    }
}

impl ConnectStalledConfig {
    /// The two-path settings its cellular path and servers are made from.
    fn two_path(&self) -> TwoPathConfig {
        TwoPathConfig {
            bytes: self.bytes,
            cellular_bps: self.cellular_bps,
            cellular_delay: self.cellular_delay,
            attempt_delay: self.attempt_delay,
            limit: self.limit,
            ..TwoPathConfig::default()
        }
    }
}

/// What one client measured, from the moment it started to connect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstContactReport {
    pub bytes: u64,
    pub sha256_ok: bool,
    /// Until the first response byte, ms.
    pub first_byte_ms: f64,
    /// Until the last, ms.
    pub total_ms: f64,
    /// Whether the attempt that won went over cellular.
    pub on_cellular: bool,
    /// Connection attempts started (Brisk: paths raced).
    pub attempts: u64,
}

/// Both clients connecting while the Wi-Fi is stalled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectStalledReport {
    /// Brisk, `Endpoint::connect_racing` over both local addresses.
    pub brisk: FirstContactReport,
    /// Kernel TCP, Happy Eyeballs over both local addresses.
    pub tcp: FirstContactReport,
    pub cellular_rtt_ms: f64,
    pub attempt_delay_ms: f64,
}

/// Throwaway datagrams (and their payload bytes) that spend a new htb
/// class's bucket.
const SPEND_DATAGRAMS: usize = 3;
const SPEND_BYTES: usize = 1200;

/// Stalls the Wi-Fi both ways before anything is sent. A new htb class
/// starts with a full bucket (about one full-size packet) and lets it
/// through whatever its rate, so a few throwaway full-size datagrams each
/// way spend it: from then on the Wi-Fi passes nothing, as an associated
/// access point that forwards nothing would.
fn stall_wifi_from_the_start(lab: &Lab) -> Result<(), RecipeError> {
    set_wifi_stalled(lab, true)?;
    let spend = |ns: &Netns, from: IpAddr, to: IpAddr| -> Result<(), RecipeError> {
        let sent = ns
            .spawn("two-path-spend-burst", move || {
                let socket = std::net::UdpSocket::bind(SocketAddr::new(from, 0))?;
                for _ in 0..SPEND_DATAGRAMS {
                    socket.send_to(&[0; SPEND_BYTES], SocketAddr::new(to, 9))?;
                }
                io::Result::Ok(())
            })?
            .join()
            .map_err(|_| RecipeError::failed("spend the htb burst", "the thread panicked"))?
            .map_err(RecipeError::Live)?;
        sent.map_err(|e| RecipeError::failed("spend the htb burst", e))
    };
    spend(lab.client_ns(), lab.client_addr(), lab.server_addr())?;
    spend(lab.server_ns(), lab.server_bind_addr(), lab.client_addr())?;
    // Let the throwaway datagrams leave before the clients start.
    std::thread::sleep(Duration::from_millis(20));
    Ok(())
}

/// Reads `s` to its end into a hash; returns the bytes, whether the hash
/// matches, and when the first and last bytes came.
async fn read_all<R: tokio::io::AsyncRead + Unpin>(
    s: &mut R,
    bytes: u64,
) -> io::Result<(u64, bool, Option<Instant>, Instant)> {
    let mut hash = Sha256::new();
    let (mut got, mut first) = (0u64, None);
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        hash.update(&buf[..n]);
        got += n as u64;
    }
    let ok = hash.finalize().as_slice() == expected_sha256(bytes).as_slice();
    Ok((got, ok, first, Instant::now()))
}

/// Runs `client` on a thread in the client's namespace and waits for it.
fn in_client_ns<T: Send + 'static>(
    lab: &Lab,
    what: &str,
    client: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, RecipeError> {
    lab.client_ns()
        .spawn(what, client)?
        .join()
        .map_err(|_| RecipeError::failed(what, "the client panicked"))?
        .map_err(RecipeError::Live)?
        .map_err(|e| RecipeError::failed(what, e))
}

/// Brisk connecting with `Endpoint::connect_racing`: Wi-Fi first, then
/// cellular after the attempt delay.
fn brisk_connect_stalled(
    lab: &Lab,
    cell: &Cellular,
    config: &ConnectStalledConfig,
) -> Result<FirstContactReport, RecipeError> {
    let (_server, key) = start_brisk_server(lab, &config.two_path())?;
    let (bytes, limit) = (config.bytes, config.limit);
    let paths = [lab.client_addr(), cell.client].map(|a| SocketAddr::new(a, 0));
    let target = SocketAddr::new(lab.server_addr(), BRISK_PORT);
    let policy = RacePolicy {
        attempt_delay: config.attempt_delay,
        ..RacePolicy::default()
    };
    in_client_ns(lab, "two-path-brisk-race", move || {
        runtime()?.block_on(async move {
            let endpoints = paths
                .iter()
                .map(|a| Endpoint::client_with(*a, EndpointConfig::default()))
                .collect::<io::Result<Vec<_>>>()?;
            let began = Instant::now();
            let download = async {
                let raced = Endpoint::connect_racing(endpoints, target, key, policy)
                    .await
                    .map_err(io::Error::other)?;
                let mut s = raced
                    .connection
                    .open_stream()
                    .await
                    .map_err(io::Error::from)?;
                s.write_all(&bytes.to_be_bytes()).await?;
                s.flush().await?;
                let read = read_all(&mut s, bytes).await?;
                raced.connection.close(0, b"done");
                io::Result::Ok((raced.path, raced.attempts, read))
            };
            let (path, attempts, (got, ok, first, last)) = tokio::time::timeout(limit, download)
                .await
                .map_err(|_| io::Error::other(format!("not done in {limit:?}")))??;
            Ok(FirstContactReport {
                bytes: got,
                sha256_ok: ok,
                first_byte_ms: first.map_or(f64::NAN, |t| ms(t - began)),
                total_ms: ms(last - began),
                on_cellular: path == 1,
                attempts: attempts as u64,
            })
        })
    })
}

/// Kernel TCP connecting with Happy Eyeballs over both local addresses.
fn tcp_connect_stalled(
    lab: &Lab,
    cell: &Cellular,
    config: &ConnectStalledConfig,
) -> Result<FirstContactReport, RecipeError> {
    let _server = start_tcp_server(lab)?;
    let (wifi, cellular) = (lab.client_addr(), cell.client);
    let server = lab.server_addr();
    let (bytes, limit) = (config.bytes, config.limit);
    let he = HeConfig::with_attempt_delay(config.attempt_delay)
        .map_err(|e| RecipeError::failed("attempt delay", e))?;
    in_client_ns(lab, "two-path-tcp-race", move || {
        runtime()?.block_on(async move {
            let options = ConnectOptions {
                config: he,
                sources: vec![Source::Ip(wifi), Source::Ip(cellular)],
                nat64: Nat64Policy::Off,
                attempt_timeout: limit,
                ..ConnectOptions::default()
            };
            let began = Instant::now();
            let download = async {
                let c = connect::connect_addrs(&[server], TCP_PORT, &options)
                    .await
                    .map_err(io::Error::other)?;
                let source = c.candidate.source.clone();
                let mut s = c.stream;
                let mut request = [0u8; 16];
                request[8..].copy_from_slice(&bytes.to_be_bytes());
                s.write_all(&request).await?;
                let read = read_all(&mut s, bytes).await?;
                io::Result::Ok((source, read))
            };
            let (source, (got, ok, first, last)) =
                tokio::time::timeout(limit, download)
                    .await
                    .map_err(|_| io::Error::other(format!("not done in {limit:?}")))??;
            let on_cellular = source == Source::Ip(cellular);
            Ok(FirstContactReport {
                bytes: got,
                sha256_ok: ok,
                first_byte_ms: first.map_or(f64::NAN, |t| ms(t - began)),
                total_ms: ms(last - began),
                on_cellular,
                attempts: if on_cellular { 2 } else { 1 },
            })
        })
    })
}

/// Connects Brisk, then kernel TCP, each racing both local addresses,
/// while the Wi-Fi passes nothing, in `lab` with a cellular path added;
/// the Wi-Fi is let go again afterwards.
pub fn run_connect_stalled(
    lab: &Lab,
    config: &ConnectStalledConfig,
) -> Result<ConnectStalledReport, RecipeError> {
    let cell = add_cellular(lab, &config.two_path())?;
    connect_stalled_on(lab, &cell, config)
}

fn connect_stalled_on(
    lab: &Lab,
    cell: &Cellular,
    config: &ConnectStalledConfig,
) -> Result<ConnectStalledReport, RecipeError> {
    stall_wifi_from_the_start(lab)?;
    let brisk = brisk_connect_stalled(lab, cell, config);
    let tcp = tcp_connect_stalled(lab, cell, config);
    set_wifi_stalled(lab, false)?;
    Ok(ConnectStalledReport {
        brisk: brisk?,
        tcp: tcp?,
        cellular_rtt_ms: ms(2 * config.cellular_delay),
        attempt_delay_ms: ms(config.attempt_delay),
    })
}

/// Runs Brisk, then kernel TCP, each downloading over Wi-Fi until it
/// stalls, in `lab` with a cellular path added.
pub fn run(lab: &Lab, config: &TwoPathConfig) -> Result<TwoPathReport, RecipeError> {
    let cell = add_cellular(lab, config)?;
    run_on(lab, &cell, config)
}

/// [`run`], then [`run_connect_stalled`] over the same cellular path.
pub fn run_both(
    lab: &Lab,
    config: &TwoPathConfig,
    connect: &ConnectStalledConfig,
) -> Result<(TwoPathReport, ConnectStalledReport), RecipeError> {
    let cell = add_cellular(lab, config)?;
    let moved = run_on(lab, &cell, config)?;
    let connected = connect_stalled_on(lab, &cell, connect)?;
    Ok((moved, connected))
}

fn run_on(
    lab: &Lab,
    cell: &Cellular,
    config: &TwoPathConfig,
) -> Result<TwoPathReport, RecipeError> {
    let brisk = brisk_side(lab, cell, config)?;
    let tcp = tcp_side(lab, cell, config)?;
    Ok(TwoPathReport {
        brisk,
        tcp,
        cellular_mbps: config.cellular_bps as f64 / 1e6,
        cellular_rtt_ms: ms(2 * config.cellular_delay),
        tcp_read_timeout_ms: ms(config.tcp_read_timeout),
        attempt_delay_ms: ms(config.attempt_delay),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_of_the_data_is_the_same_bytes() {
        let mut whole = vec![0u8; 1000];
        fill(0, &mut whole);
        let mut tail = vec![0u8; 400];
        fill(600, &mut tail);
        assert_eq!(&whole[600..], &tail[..]);
        assert_ne!(&whole[..400], &tail[..]);
    }
}
