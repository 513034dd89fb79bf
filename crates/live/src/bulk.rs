//! A built-in bulk TCP transfer, so reports can put real kernel TCP beside
//! Brisk: the server sends as fast as its congestion control allows, the
//! client receives and times it. The congestion control is chosen per
//! socket (`TCP_CONGESTION`); ECN is the namespace's `net.ipv4.tcp_ecn`
//! (Linux has no per-socket switch), which [`crate::lab::Lab::set_tcp_ecn`]
//! sets on both sides.
//!
//! Data flows from the server to the client: through the down link, where
//! the scenario's `[queue]` sits.

use crate::error::LiveError;
use crate::netns::Netns;
use crate::sys::{self, TcpInfo};
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The port the built-in sender listens on.
pub const BULK_PORT: u16 = 5299;
const CHUNK_BYTES: usize = 128 * 1024;

/// A bulk transfer to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkConfig {
    /// Congestion control of the sending socket ("cubic", "reno", "bbr").
    pub cc: String,
    pub ecn: bool,
    pub duration: Duration,
}

/// The sender's `TCP_INFO` at the end of the transfer.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SenderInfo {
    pub rtt_ms: f64,
    pub min_rtt_ms: f64,
    pub retransmitted_segments: u32,
    pub cwnd_segments: u32,
    pub ecn_negotiated: bool,
    /// Segments delivered that the receiver reported as CE-marked.
    pub delivered_ce_segments: u32,
    pub delivered_segments: u32,
}

impl From<TcpInfo> for SenderInfo {
    fn from(t: TcpInfo) -> SenderInfo {
        SenderInfo {
            rtt_ms: f64::from(t.rtt_us) / 1000.0,
            min_rtt_ms: f64::from(t.min_rtt_us) / 1000.0,
            retransmitted_segments: t.total_retrans,
            cwnd_segments: t.snd_cwnd,
            ecn_negotiated: t.ecn_negotiated,
            delivered_ce_segments: t.delivered_ce,
            delivered_segments: t.delivered,
        }
    }
}

/// What the receiver measured, plus the sender's view.
#[derive(Debug, Clone, Serialize)]
pub struct BulkReport {
    pub cc: String,
    pub ecn: bool,
    pub received_bytes: u64,
    /// From the first byte received to the end.
    pub duration_s: f64,
    pub goodput_mbps: f64,
    /// Over the second half of the transfer, after start-up.
    pub steady_goodput_mbps: f64,
    pub sender: SenderInfo,
}

/// The sending side, listening in the server's namespace.
pub struct BulkSender {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<SenderInfo, LiveError>>>,
}

impl BulkSender {
    /// Listens on `bind` inside `ns` with congestion control `cc`, and
    /// sends to the first client that connects until it goes away.
    pub fn start(ns: &Netns, bind: SocketAddr, cc: &str) -> Result<BulkSender, LiveError> {
        let listener = ns
            .run(|| TcpListener::bind(bind))?
            .map_err(LiveError::io(format!("listen on {bind}")))?;
        sys::set_tcp_congestion(listener.as_fd(), cc).map_err(|e| {
            LiveError::Config(format!(
                "congestion control {cc:?} is not available: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"
            ))
        })?;
        listener
            .set_nonblocking(true)
            .map_err(LiveError::io("configure the bulk listener"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let cc = cc.to_string();
        let handle = std::thread::Builder::new()
            .name("brisk-bulk-send".into())
            .spawn(move || send(listener, &cc, &flag))
            .map_err(LiveError::io("spawn the bulk sender"))?;
        Ok(BulkSender {
            addr: bind,
            stop,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops sending and returns the sender's last `TCP_INFO`.
    pub fn finish(mut self) -> Result<SenderInfo, LiveError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(LiveError::Router("the bulk sender panicked".into())),
            None => Ok(SenderInfo::default()),
        }
    }
}

impl Drop for BulkSender {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn send(listener: TcpListener, cc: &str, stop: &AtomicBool) -> Result<SenderInfo, LiveError> {
    let mut stream = loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(SenderInfo::default());
        }
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(LiveError::io("accept a bulk client")(e)),
        }
    };
    // Listeners pass their congestion control on, but set it again so a
    // kernel that does not still runs the one asked for.
    sys::set_tcp_congestion(stream.as_fd(), cc).map_err(LiveError::io("set TCP_CONGESTION"))?;
    stream
        .set_write_timeout(Some(Duration::from_millis(100)))
        .map_err(LiveError::io("configure the bulk sender"))?;
    let chunk = vec![0x5a_u8; CHUNK_BYTES];
    let mut info = SenderInfo::default();
    let mut last_info = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match stream.write(&chunk) {
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break, // the receiver is done
        }
        if last_info.elapsed() >= Duration::from_millis(50) {
            if let Ok(t) = sys::tcp_info(stream.as_fd()) {
                info = t.into();
            }
            last_info = std::time::Instant::now();
        }
    }
    if let Ok(t) = sys::tcp_info(stream.as_fd())
        && t.delivered >= info.delivered_segments
    {
        info = t.into();
    }
    Ok(info)
}

/// What the receiving side measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Received {
    pub bytes: u64,
    pub duration: Duration,
    pub goodput_bps: f64,
    pub steady_goodput_bps: f64,
}

/// Connects from `ns` to `server` and receives for `duration`.
pub fn receive(ns: &Netns, server: SocketAddr, duration: Duration) -> Result<Received, LiveError> {
    ns.run(|| receive_here(server, duration))?
}

fn receive_here(server: SocketAddr, duration: Duration) -> Result<Received, LiveError> {
    let mut stream = TcpStream::connect_timeout(&server, Duration::from_secs(5)).map_err(
        LiveError::io(format!("connect to the bulk sender at {server}")),
    )?;
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(LiveError::io("configure the bulk receiver"))?;
    let started = std::time::Instant::now();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut total = 0u64;
    let mut first: Option<std::time::Instant> = None;
    let half = duration / 2;
    let mut at_half: Option<u64> = None;
    // Ctrl-C or SIGTERM ends the transfer early (the lab then tears down).
    while started.elapsed() < duration && crate::signal::received().is_none() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                first.get_or_insert_with(std::time::Instant::now);
                total += n as u64;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(LiveError::io("receive bulk data")(e)),
        }
        if at_half.is_none() && started.elapsed() >= half {
            at_half = Some(total);
        }
    }
    let end = std::time::Instant::now();
    let span = first.map_or(Duration::ZERO, |f| end - f);
    let steady_span = (end - started).saturating_sub(half);
    let steady = total - at_half.unwrap_or(total);
    Ok(Received {
        bytes: total,
        duration: span,
        goodput_bps: total as f64 * 8.0 / span.as_secs_f64().max(1e-9),
        steady_goodput_bps: steady as f64 * 8.0 / steady_span.as_secs_f64().max(1e-9),
    })
}

/// Runs a whole transfer: the sender listens on `bind` in `server_ns`, the
/// receiver in `client_ns` connects to `target` (the same address, or its
/// NAT64 form for an IPv6-only client).
pub fn run(
    server_ns: &Netns,
    bind: SocketAddr,
    client_ns: &Netns,
    target: SocketAddr,
    config: &BulkConfig,
) -> Result<BulkReport, LiveError> {
    let sender = BulkSender::start(server_ns, bind, &config.cc)?;
    let received = receive(client_ns, target, config.duration);
    let info = sender.finish()?;
    let r = received?;
    Ok(BulkReport {
        cc: config.cc.clone(),
        ecn: config.ecn,
        received_bytes: r.bytes,
        duration_s: r.duration.as_secs_f64(),
        goodput_mbps: r.goodput_bps / 1e6,
        steady_goodput_mbps: r.steady_goodput_bps / 1e6,
        sender: info,
    })
}
