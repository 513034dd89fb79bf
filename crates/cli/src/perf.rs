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
//! - `S 0`: the server answers with its connection's statistics as one
//!   JSON object and a FIN. The client asks after a throughput test, so
//!   it reports both ends: the sender's losses and retransmissions are
//!   only known to the sender, which is the server in a download.
//!
//! A timed download ends with the client's STOP_SENDING on the `D`
//! stream; the server takes it as the end of the test.

use anyhow::{Context, Result, bail};
use brisk_io::{Connection, Endpoint, ServerConfig, Stream, keys};
use brisk_proto::ConnectionStats;
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
    /// Answer perf clients. Early data in a client's first flight is not
    /// acted on: every perf request makes the server send or count bytes,
    /// and a first flight can be replayed by anyone who captured it, so a
    /// request is served only once it arrives on its stream after the
    /// handshake (half a round trip later).
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
    /// Seconds between interval reports of a throughput test (0: none).
    #[arg(short = 'i', long, default_value = "1", value_parser = interval_seconds)]
    interval: Duration,
    /// qlog event classes: "all" or a list of connectivity, handshake,
    /// packets (one event per packet), recovery, congestion.
    #[arg(long, default_value_t = EventClasses::default())]
    qlog_events: EventClasses,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// `-i 0` turns interval reports off, as in iperf3.
fn interval_seconds(text: &str) -> Result<Duration, String> {
    if text.trim().parse::<f64>() == Ok(0.0) {
        return Ok(Duration::ZERO);
    }
    crate::seconds::positive(text)
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
    // No perf request is safe to repeat (a `D` makes the server send up
    // to 2^64 bytes), and a replayed first flight would be accepted as a
    // new connection each time. Refused early data still reaches the
    // stream as ordinary data once the client has proved its address.
    config.accept_early_data = false;
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
        Err(server_stopped(&server))
    })
}

/// Why a server's accept loop ended: it never does unless its endpoint
/// stopped, which for a server is always a failure worth a non-zero exit.
pub fn server_stopped(server: &Endpoint) -> anyhow::Error {
    match server.failure() {
        Some(e) => anyhow::anyhow!(e),
        None => anyhow::anyhow!("the endpoint on {} stopped", server.local_addr()),
    }
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
                match s.write_all(&chunk[..step]).await {
                    Ok(()) => {}
                    // The client's STOP_SENDING: a timed test is over.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(e),
                }
                left -= step as u64;
            }
            s.shutdown().await
        }
        b'S' => {
            let stats = s.connection().stats().map(|st| end_stats(&st));
            s.write_all(json!(stats).to_string().as_bytes()).await?;
            // The client closes the connection once it has read the
            // answer, so the FIN's acknowledgement may never come.
            s.finish()
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
            let mut report = rpc(&conn, duration, args.count).await?;
            report["connection"] = json!(conn.stats().map(|st| end_stats(&st)));
            report
        } else {
            let intervals =
                Intervals::new(Some(args.interval).filter(|i| !i.is_zero()), !args.json);
            throughput(&conn, duration, args.count, args.upload, intervals).await?
        };
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

/// One end's view of the connection, as the `S` answer carries it and
/// the report prints it. Losses and retransmissions are the sender's to
/// count; the receiver's `packets_lost` only covers what it sent (ACKs).
fn end_stats(st: &ConnectionStats) -> serde_json::Value {
    json!({
        "stream_bytes_sent": st.stream_bytes_sent,
        "stream_bytes_received": st.stream_bytes_received,
        "packets_sent": st.packets_sent,
        "packets_received": st.packets_received,
        "packets_lost": st.packets_lost,
        "bytes_lost": st.bytes_lost,
        "loss_rate": st.packets_lost as f64 / st.packets_sent.max(1) as f64,
        "packets_retransmitted": st.packets_retransmitted,
        "stream_bytes_retransmitted": st.stream_bytes_retransmitted,
        "spurious_losses": st.spurious_losses,
        "ptos": st.ptos,
        "congestion_events": st.congestion_events,
        "smoothed_rtt_us": st.smoothed_rtt.as_micros() as u64,
        "min_rtt_us": st.min_rtt.as_micros() as u64,
        "cwnd_bytes": st.cwnd_bytes,
        "ecn_state": format!("{:?}", st.ecn_state),
        "ecn_sent": [st.ecn_sent.ect0, st.ecn_sent.ect1, st.ecn_sent.ce],
        "ecn_received": [st.ecn_received.ect0, st.ecn_received.ect1, st.ecn_received.ce],
    })
}

/// Asks the server for its view of the connection (the `S` test).
async fn server_stats(conn: &Connection) -> Result<serde_json::Value> {
    let ask = async {
        let mut s = conn.open_stream().await?;
        s.write_all(&header(b'S', 0)).await?;
        s.finish()?;
        let mut text = Vec::new();
        s.read_to_end(&mut text).await?;
        anyhow::Ok(serde_json::from_slice(&text)?)
    };
    tokio::time::timeout(Duration::from_secs(5), ask)
        .await
        .context("no answer within 5 s")?
}

/// One end's summary: its stream bytes in the test's direction over the
/// test's time, beside its connection statistics.
fn end_summary(end: &str, sender: bool, stats: serde_json::Value, secs: f64) -> serde_json::Value {
    let key = if sender {
        "stream_bytes_sent"
    } else {
        "stream_bytes_received"
    };
    let bytes = stats[key].as_u64().unwrap_or(0);
    let mut summary = json!({
        "end": end,
        "bytes": bytes,
        "bits_per_second": bytes as f64 * 8.0 / secs.max(1e-9),
    });
    if let (Some(out), Some(fields)) = (summary.as_object_mut(), stats.as_object()) {
        out.extend(fields.clone());
    }
    summary
}

async fn throughput(
    conn: &Connection,
    duration: Duration,
    count: Option<u64>,
    upload: bool,
    mut intervals: Intervals,
) -> Result<serde_json::Value> {
    let mut s = conn.open_stream().await?;
    let start = Instant::now();
    intervals.start(start);
    let deadline = tokio::time::Instant::now() + duration;
    let mut moved = 0u64;
    if upload {
        s.write_all(&header(b'U', 0)).await?;
        let chunk = vec![0x5au8; CHUNK_BYTES];
        let limit = count.unwrap_or(u64::MAX);
        while moved < limit && (count.is_some() || tokio::time::Instant::now() < deadline) {
            let step = (limit - moved).min(CHUNK_BYTES as u64) as usize;
            let until = intervals.wake(count.is_none().then_some(deadline));
            if let Ok(n) = tokio::time::timeout_at(until, s.write(&chunk[..step])).await {
                moved += n? as u64;
            }
            intervals.tick(moved, conn.stats());
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
            let until = intervals.wake(count.is_none().then_some(deadline));
            match tokio::time::timeout_at(until, s.read(&mut buf)).await {
                Ok(n) => {
                    let n = n?;
                    if n == 0 {
                        break;
                    }
                    moved += n as u64;
                }
                Err(_) if count.is_none() && tokio::time::Instant::now() >= deadline => break,
                Err(_) => {}
            }
            intervals.tick(moved, None);
        }
        if let Some(c) = count
            && moved != c
        {
            bail!("received {moved} of {c} bytes");
        }
        if count.is_none() {
            // Tells the server its timed test is over.
            let _ = s.stop(0);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    intervals.finish(moved, conn.stats().filter(|_| upload));
    let own = conn.stats().map(|st| end_stats(&st));
    let theirs = match server_stats(conn).await {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!("brisk perf: the server did not send its statistics: {e:#}");
            None
        }
    };
    let (sender, receiver) = if upload {
        (
            own.map(|v| end_summary("client", true, v, secs)),
            theirs.map(|v| end_summary("server", false, v, secs)),
        )
    } else {
        (
            theirs.map(|v| end_summary("server", true, v, secs)),
            own.map(|v| end_summary("client", false, v, secs)),
        )
    };
    Ok(json!({
        "mode": if upload { "upload" } else { "download" },
        "bytes": moved,
        "seconds": secs,
        "bits_per_second": moved as f64 * 8.0 / secs.max(1e-9),
        "intervals": intervals.list,
        "sender": sender,
        "receiver": receiver,
    }))
}

/// The reports every `-i` seconds of a throughput test, printed as they
/// close (text mode) and kept for the JSON report. When the client sends,
/// each also carries its own losses, retransmissions and window.
struct Intervals {
    every: Option<Duration>,
    print: bool,
    start: Instant,
    /// End of the open interval, from `start`.
    next: Duration,
    opened: Duration,
    bytes_before: u64,
    lost_before: u64,
    retransmitted_before: u64,
    list: Vec<serde_json::Value>,
}

impl Intervals {
    fn new(every: Option<Duration>, print: bool) -> Intervals {
        Intervals {
            every,
            print,
            start: Instant::now(),
            next: every.unwrap_or(Duration::MAX),
            opened: Duration::ZERO,
            bytes_before: 0,
            lost_before: 0,
            retransmitted_before: 0,
            list: Vec::new(),
        }
    }

    fn start(&mut self, at: Instant) {
        self.start = at;
    }

    /// When a blocked read or write should give up to close an interval
    /// or end the test at `deadline`; an hour when neither applies.
    fn wake(&self, deadline: Option<tokio::time::Instant>) -> tokio::time::Instant {
        let tick = self
            .every
            .map(|_| tokio::time::Instant::from_std(self.start + self.next));
        let far = tokio::time::Instant::now() + Duration::from_secs(3600);
        [tick, deadline]
            .into_iter()
            .flatten()
            .fold(far, |a, b| a.min(b))
    }

    /// Closes the open interval if its end has passed.
    fn tick(&mut self, moved: u64, sender: Option<ConnectionStats>) {
        let Some(every) = self.every else { return };
        let now = self.start.elapsed();
        if now >= self.next {
            self.close(now, moved, sender);
            while self.next <= now {
                self.next += every;
            }
        }
    }

    /// Closes the last, possibly shorter, interval: always when bytes
    /// moved since the previous one closed, so the intervals add up to the
    /// total.
    fn finish(&mut self, moved: u64, sender: Option<ConnectionStats>) {
        let now = self.start.elapsed();
        let more = moved > self.bytes_before || now > self.opened + Duration::from_millis(1);
        if self.every.is_some() && more {
            self.close(now, moved, sender);
        }
    }

    fn close(&mut self, now: Duration, moved: u64, sender: Option<ConnectionStats>) {
        let secs = (now - self.opened).as_secs_f64().max(1e-9);
        let bytes = moved - self.bytes_before;
        let bps = bytes as f64 * 8.0 / secs;
        let mut entry = json!({
            "start_s": self.opened.as_secs_f64(),
            "end_s": now.as_secs_f64(),
            "bytes": bytes,
            "bits_per_second": bps,
        });
        let mut line = format!(
            "[{:6.2}-{:6.2} s] {:>10} {:>14}",
            self.opened.as_secs_f64(),
            now.as_secs_f64(),
            format_bytes(bytes),
            format_rate(bps)
        );
        if let Some(st) = sender {
            let lost = st.packets_lost - self.lost_before.min(st.packets_lost);
            let retransmitted =
                st.packets_retransmitted - self.retransmitted_before.min(st.packets_retransmitted);
            entry["packets_lost"] = json!(lost);
            entry["packets_retransmitted"] = json!(retransmitted);
            entry["cwnd_bytes"] = json!(st.cwnd_bytes);
            line += &format!(
                "  lost {lost:>5}  retransmitted {retransmitted:>5}  cwnd {}",
                format_bytes(st.cwnd_bytes)
            );
            self.lost_before = st.packets_lost;
            self.retransmitted_before = st.packets_retransmitted;
        }
        if self.print {
            println!("{line}");
        }
        self.list.push(entry);
        self.opened = now;
        self.bytes_before = moved;
    }
}

/// A rate in the unit a reader expects: kbit/s, Mbit/s or Gbit/s.
pub fn format_rate(bits_per_second: f64) -> String {
    if bits_per_second >= 1e9 {
        format!("{:.2} Gbit/s", bits_per_second / 1e9)
    } else if bits_per_second >= 1e6 {
        format!("{:.1} Mbit/s", bits_per_second / 1e6)
    } else {
        format!("{:.1} kbit/s", bits_per_second / 1e3)
    }
}

/// A byte count in decimal units (kB, MB, GB).
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
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
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let u = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    if r["mode"] == "rpc" {
        println!(
            "rpc: {} requests in {:.2} s = {:.0} req/s; latency p50 {} us, p99 {} us, p99.9 {} us, max {} us",
            r["requests"],
            f(&r["seconds"]),
            f(&r["requests_per_s"]),
            r["p50_us"],
            r["p99_us"],
            r["p999_us"],
            r["max_us"]
        );
        if let Some(c) = r.get("connection") {
            println!("connection: {c}");
        }
    } else {
        println!(
            "{}: {} in {:.2} s = {}",
            r["mode"].as_str().unwrap_or(""),
            format_bytes(u(&r["bytes"])),
            f(&r["seconds"]),
            format_rate(f(&r["bits_per_second"]))
        );
        for role in ["sender", "receiver"] {
            let e = &r[role];
            if e.is_null() {
                println!("{role}: unknown (the server sent no statistics)");
                continue;
            }
            let mut line = format!(
                "{role} ({}): {}, {}; ",
                e["end"].as_str().unwrap_or(""),
                format_bytes(u(&e["bytes"])),
                format_rate(f(&e["bits_per_second"]))
            );
            if role == "sender" {
                line += &format!(
                    "{} packets sent, {} lost ({:.2}%), {} retransmitted; rtt {:.1} ms (min {:.1} ms), cwnd {}",
                    e["packets_sent"],
                    e["packets_lost"],
                    f(&e["loss_rate"]) * 100.0,
                    e["packets_retransmitted"],
                    f(&e["smoothed_rtt_us"]) / 1000.0,
                    f(&e["min_rtt_us"]) / 1000.0,
                    format_bytes(u(&e["cwnd_bytes"]))
                );
            } else {
                line += &format!("{} packets received", e["packets_received"]);
            }
            println!("{line}");
        }
    }
    if let Some(s) = r.get("socket") {
        println!("socket: {s}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_sizes_pick_the_unit_a_reader_expects() {
        assert_eq!(format_rate(2.0e6), "2.0 Mbit/s");
        assert_eq!(format_rate(999.9e6), "999.9 Mbit/s");
        assert_eq!(format_rate(3.61e9), "3.61 Gbit/s");
        assert_eq!(format_rate(64e3), "64.0 kbit/s");
        assert_eq!(format_bytes(999), "999 B");
        assert_eq!(format_bytes(13_900), "13.9 kB");
        assert_eq!(format_bytes(3_000_017), "3.00 MB");
        assert_eq!(format_bytes(1_130_000_000), "1.13 GB");
    }

    #[test]
    fn interval_zero_turns_reports_off_and_bad_values_are_refused() {
        assert_eq!(interval_seconds("0"), Ok(Duration::ZERO));
        assert_eq!(interval_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(interval_seconds("-1").is_err());
        assert!(interval_seconds("often").is_err());
    }

    #[test]
    fn intervals_tile_the_test_and_sum_to_its_bytes() {
        let mut iv = Intervals::new(Some(Duration::from_millis(1)), false);
        iv.start(Instant::now());
        let mut moved = 0;
        while iv.list.len() < 3 {
            moved += 1000;
            iv.tick(moved, None);
        }
        moved += 7;
        std::thread::sleep(Duration::from_millis(2));
        iv.finish(moved, None);
        let sum: u64 = iv
            .list
            .iter()
            .map(|i| i["bytes"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(sum, moved);
        for pair in iv.list.windows(2) {
            assert_eq!(pair[0]["end_s"], pair[1]["start_s"]);
        }
    }

    #[test]
    fn bytes_just_after_the_last_tick_still_count() {
        // The test ends right after an interval closed: the few bytes
        // since then make a last, very short interval of their own.
        let mut iv = Intervals::new(Some(Duration::from_millis(1)), false);
        iv.start(Instant::now());
        let mut moved = 0;
        while iv.list.is_empty() {
            moved += 1000;
            iv.tick(moved, None);
        }
        moved += 861_953;
        iv.finish(moved, None);
        let sum: u64 = iv.list.iter().filter_map(|i| i["bytes"].as_u64()).sum();
        assert_eq!(sum, moved);
    }
}
