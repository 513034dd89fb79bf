//! `brisk perf server|client`: throughput and request/response latency
//! over Brisk.
//!
//! Each test runs on one stream that starts with a 9-byte header: a kind
//! byte and a big-endian u64.
//! - `D n`: the server sends `n` bytes (`u64::MAX`: until the client
//!   closes) and a FIN.
//! - `U 0`: the client sends until its FIN; the server answers with the
//!   8-byte count it received.
//! - `R n`: `n` rounds (`u64::MAX`: until FIN) of a 512-byte request
//!   answered by a 4096-byte response.

use anyhow::{Context, Result, bail};
use brisk_io::{Connection, Endpoint, ServerConfig, Stream, keys};
use brisk_proto::congestion::CcAlgorithm;
use brisk_trace::qlog::EventClasses;
use hdrhistogram::Histogram;
use serde_json::json;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The request/response sizes of the latency test.
pub const REQUEST_BYTES: usize = 512;
pub const RESPONSE_BYTES: usize = 4096;
const CHUNK_BYTES: usize = 256 << 10;

#[derive(clap::Args)]
pub struct PerfArgs {
    #[command(subcommand)]
    command: PerfCommand,
}

#[derive(clap::Subcommand)]
enum PerfCommand {
    /// Answer perf clients.
    Server(ServerArgs),
    /// Measure throughput or request/response latency against a server.
    Client(ClientArgs),
}

#[derive(clap::Args)]
struct ServerArgs {
    #[arg(long)]
    listen: SocketAddr,
    /// Secret key file (from `brisk keygen`).
    #[arg(long)]
    key: PathBuf,
    /// Congestion controller: cubic, newreno, prague or bbr.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Write each connection's qlog (JSON-SEQ) into this directory.
    #[arg(long)]
    qlog: Option<PathBuf>,
    /// qlog event classes: "all" or a list of connectivity, handshake,
    /// packets (one event per packet), recovery, congestion.
    #[arg(long, default_value_t = EventClasses::default())]
    qlog_events: EventClasses,
}

#[derive(clap::Args)]
struct ClientArgs {
    /// brisk://HOST:PORT of the perf server.
    url: String,
    /// The server's public key: a file or 64 hex digits.
    #[arg(long)]
    server_key: String,
    /// `throughput` (server to client; --upload reverses it) or `rpc`
    /// (512-byte requests, 4 KiB responses, one at a time).
    #[arg(long, default_value = "throughput", value_parser = ["throughput", "rpc"])]
    mode: String,
    /// Run for this many seconds...
    #[arg(long, default_value = "10", value_parser = crate::seconds::positive)]
    seconds: Duration,
    /// ...or move exactly this many bytes (throughput) / requests (rpc).
    #[arg(long)]
    count: Option<u64>,
    /// Throughput from client to server.
    #[arg(long)]
    upload: bool,
    /// Congestion controller: cubic, newreno, prague or bbr.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Seconds to wait for the handshake.
    #[arg(long, default_value = "5", value_parser = crate::seconds::positive)]
    timeout: Duration,
    /// Write the connection's qlog (JSON-SEQ) into this directory.
    #[arg(long)]
    qlog: Option<PathBuf>,
    /// qlog event classes: "all" or a list of connectivity, handshake,
    /// packets (one event per packet), recovery, congestion.
    #[arg(long, default_value_t = EventClasses::default())]
    qlog_events: EventClasses,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// A two-thread tokio runtime: the endpoint task and the application.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

pub fn parse_cc(name: &str) -> Result<CcAlgorithm> {
    serde_json::from_value(json!(name)).with_context(|| {
        format!("unknown congestion controller {name:?} (cubic, newreno, prague, bbr)")
    })
}

/// Traces each of `endpoint`'s connections into `dir` (see [`crate::qlog`]).
fn attach_qlog(endpoint: &Endpoint, dir: &Path, classes: EventClasses) -> Result<()> {
    endpoint.set_qlog(crate::qlog::files(dir, classes)?);
    Ok(())
}

pub fn run(args: PerfArgs) -> Result<()> {
    match args.command {
        PerfCommand::Server(a) => serve(a),
        PerfCommand::Client(a) => client(a),
    }
}

fn serve(args: ServerArgs) -> Result<()> {
    let mut config = ServerConfig::new(args.listen, keys::load_secret(&args.key)?);
    config.endpoint.transport.cc = parse_cc(&args.cc)?;
    runtime()?.block_on(async move {
        let server = Endpoint::server(config)
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        eprintln!(
            "brisk perf: listening on {} (public key {})",
            server.local_addr(),
            keys::to_hex(&server.public_key().unwrap_or_default())
        );
        if let Some(dir) = &args.qlog {
            attach_qlog(&server, dir, args.qlog_events)?;
        }
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(async move {
                        if let Err(e) = serve_stream(s).await {
                            eprintln!("brisk perf: stream ended: {e}");
                        }
                    });
                }
            });
        }
        Ok(())
    })
}

async fn serve_stream(mut s: Stream) -> std::io::Result<()> {
    let mut header = [0u8; 9];
    s.read_exact(&mut header).await?;
    let mut n = [0u8; 8];
    n.copy_from_slice(&header[1..]);
    let n = u64::from_be_bytes(n);
    match header[0] {
        b'D' => {
            let chunk = vec![0x5a; CHUNK_BYTES];
            let mut left = n;
            while left > 0 {
                let step = left.min(CHUNK_BYTES as u64) as usize;
                s.write_all(&chunk[..step]).await?;
                left -= step as u64;
            }
            s.shutdown().await
        }
        b'U' => {
            let mut buf = vec![0u8; CHUNK_BYTES];
            let mut total = 0u64;
            loop {
                let got = s.read(&mut buf).await?;
                if got == 0 {
                    break;
                }
                total += got as u64;
            }
            s.write_all(&total.to_be_bytes()).await?;
            s.shutdown().await
        }
        b'R' => {
            let mut request = [0u8; REQUEST_BYTES];
            let response = [0xa5u8; RESPONSE_BYTES];
            for _ in 0..n {
                match s.read_exact(&mut request).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
                s.write_all(&response).await?;
            }
            s.shutdown().await
        }
        _ => Err(std::io::Error::other("unknown perf test")),
    }
}

fn client(args: ClientArgs) -> Result<()> {
    let url = crate::get::parse_url(&args.url)?;
    let key = keys::load_public(&args.server_key)?;
    let cc = parse_cc(&args.cc)?;
    let duration = args.seconds.max(Duration::from_millis(10));
    runtime()?.block_on(async move {
        let addr = crate::get::resolve(&url.host, url.port).await?;
        let client = crate::get::client_for(addr, args.timeout.max(Duration::from_millis(100)))?;
        let config = brisk_proto::ClientConfig::new(Some(key)).with_cc(cc);
        if let Some(dir) = &args.qlog {
            attach_qlog(&client, dir, args.qlog_events)?;
        }
        let conn = client.connect_with(addr, config).await?;
        let mut report = if args.mode == "rpc" {
            rpc(&conn, duration, args.count).await?
        } else {
            throughput(&conn, duration, args.count, args.upload).await?
        };
        if let Some(st) = conn.stats() {
            report["connection"] = json!({
                "smoothed_rtt_us": st.smoothed_rtt.as_micros() as u64,
                "min_rtt_us": st.min_rtt.as_micros() as u64,
                "cwnd_bytes": st.cwnd_bytes,
                "packets_sent": st.packets_sent,
                "packets_lost": st.packets_lost,
                "ecn_state": format!("{:?}", st.ecn_state),
                "ecn_sent": [st.ecn_sent.ect0, st.ecn_sent.ect1, st.ecn_sent.ce],
                "ecn_received": [st.ecn_received.ect0, st.ecn_received.ect1, st.ecn_received.ce],
            });
        }
        let socket = client.stats().socket;
        report["socket"] = json!({
            "gso": socket.gso, "gro": socket.gro,
            "datagrams_sent": socket.datagrams_sent,
            "datagrams_received": socket.datagrams_received,
            "send_calls": socket.send_calls, "recv_calls": socket.recv_calls,
        });
        conn.close(0, b"done");
        if args.json {
            println!("{report}");
        } else {
            print_report(&report);
        }
        Ok(())
    })
}

fn header(kind: u8, n: u64) -> [u8; 9] {
    let mut h = [0u8; 9];
    h[0] = kind;
    h[1..].copy_from_slice(&n.to_be_bytes());
    h
}

async fn throughput(
    conn: &Connection,
    duration: Duration,
    count: Option<u64>,
    upload: bool,
) -> Result<serde_json::Value> {
    let mut s = conn.open_stream().await?;
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + duration;
    let mut moved = 0u64;
    if upload {
        s.write_all(&header(b'U', 0)).await?;
        let chunk = vec![0x5au8; CHUNK_BYTES];
        let limit = count.unwrap_or(u64::MAX);
        while moved < limit && (count.is_some() || tokio::time::Instant::now() < deadline) {
            let step = (limit - moved).min(CHUNK_BYTES as u64) as usize;
            s.write_all(&chunk[..step]).await?;
            moved += step as u64;
        }
        s.shutdown().await?;
        let mut got = [0u8; 8];
        s.read_exact(&mut got).await?;
        if u64::from_be_bytes(got) != moved {
            bail!(
                "the server counted {} bytes of {moved}",
                u64::from_be_bytes(got)
            );
        }
    } else {
        s.write_all(&header(b'D', count.unwrap_or(u64::MAX)))
            .await?;
        let mut buf = vec![0u8; CHUNK_BYTES];
        loop {
            let read = s.read(&mut buf);
            let n = if count.is_some() {
                read.await?
            } else {
                match tokio::time::timeout_at(deadline, read).await {
                    Ok(n) => n?,
                    Err(_) => break,
                }
            };
            if n == 0 {
                break;
            }
            moved += n as u64;
        }
        if let Some(c) = count
            && moved != c
        {
            bail!("received {moved} of {c} bytes");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(json!({
        "mode": if upload { "upload" } else { "download" },
        "bytes": moved,
        "seconds": secs,
        "gbit_per_s": moved as f64 * 8.0 / secs.max(1e-9) / 1e9,
    }))
}

async fn rpc(
    conn: &Connection,
    duration: Duration,
    count: Option<u64>,
) -> Result<serde_json::Value> {
    let mut s = conn.open_stream().await?;
    s.write_all(&header(b'R', count.unwrap_or(u64::MAX)))
        .await?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let request = [0x11u8; REQUEST_BYTES];
    let mut response = vec![0u8; RESPONSE_BYTES];
    let start = Instant::now();
    let mut done = 0u64;
    while count.map_or(start.elapsed() < duration, |c| done < c) {
        let t = Instant::now();
        s.write_all(&request).await?;
        s.read_exact(&mut response).await?;
        hist.record((t.elapsed().as_micros() as u64).max(1))?;
        done += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    s.shutdown().await?;
    Ok(json!({
        "mode": "rpc",
        "requests": done,
        "seconds": secs,
        "requests_per_s": done as f64 / secs.max(1e-9),
        "p50_us": hist.value_at_quantile(0.5),
        "p99_us": hist.value_at_quantile(0.99),
        "p999_us": hist.value_at_quantile(0.999),
        "max_us": hist.max(),
    }))
}

fn print_report(r: &serde_json::Value) {
    if r["mode"] == "rpc" {
        println!(
            "rpc: {} requests in {:.2} s = {:.0} req/s; latency p50 {} us, p99 {} us, p99.9 {} us, max {} us",
            r["requests"],
            r["seconds"].as_f64().unwrap_or(0.0),
            r["requests_per_s"].as_f64().unwrap_or(0.0),
            r["p50_us"],
            r["p99_us"],
            r["p999_us"],
            r["max_us"]
        );
    } else {
        println!(
            "{}: {} bytes in {:.2} s = {:.3} Gbit/s",
            r["mode"].as_str().unwrap_or(""),
            r["bytes"],
            r["seconds"].as_f64().unwrap_or(0.0),
            r["gbit_per_s"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(c) = r.get("connection") {
        println!("connection: {c}");
    }
    if let Some(s) = r.get("socket") {
        println!("socket: {s}");
    }
}
