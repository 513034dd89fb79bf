//! A tiny UDP echo and the pinger that uses it: round trips through the
//! router measured by the application, as `ping` would, without needing
//! raw sockets. Each probe carries its sequence number and send time.
//! Both run at a real-time priority (below the router's) when allowed, so
//! a busy machine's scheduling delays do not pass for network delay.

use crate::error::LiveError;
use crate::netns::Netns;
use brisk_trace::stats::LatencySummary;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The port the echo server listens on.
pub const ECHO_PORT: u16 = 5298;
/// Bytes of the probe header: sequence number and send time.
const HEADER_BYTES: usize = 16;
/// SCHED_FIFO priority of the echo and ping threads.
const RT_PRIORITY: i32 = 30;

/// An echo server running in a namespace; dropping it stops it.
pub struct EchoServer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl EchoServer {
    /// Echoes every datagram sent to `bind` inside `ns` back to its sender.
    pub fn start(ns: &Netns, bind: SocketAddr) -> Result<EchoServer, LiveError> {
        let socket = ns
            .run(|| UdpSocket::bind(bind))?
            .map_err(LiveError::io(format!("bind the echo server to {bind}")))?;
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(LiveError::io("configure the echo server"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("brisk-echo".into())
            .spawn(move || {
                crate::sys::set_realtime_priority(RT_PRIORITY);
                let mut buf = [0u8; 2048];
                while !flag.load(Ordering::Relaxed) {
                    if let Ok((n, from)) = socket.recv_from(&mut buf) {
                        let _ = socket.send_to(&buf[..n], from);
                    }
                }
            })
            .map_err(LiveError::io("spawn the echo server"))?;
        Ok(EchoServer {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// How to ping.
#[derive(Debug, Clone, Copy)]
pub struct PingConfig {
    pub interval: Duration,
    pub count: u64,
    /// UDP payload bytes per probe (at least 16).
    pub payload_bytes: usize,
    /// How long to wait for the last replies.
    pub linger: Duration,
}

impl Default for PingConfig {
    fn default() -> Self {
        PingConfig {
            interval: Duration::from_millis(20),
            count: 50,
            payload_bytes: 64,
            linger: Duration::from_millis(500),
        }
    }
}

/// What a ping run measured.
#[derive(Debug, Clone)]
pub struct PingReport {
    pub sent: u64,
    pub received: u64,
    /// Every round trip, in the order replies came.
    pub rtts: Vec<Duration>,
    pub summary: LatencySummary,
}

impl PingReport {
    /// The round trip at quantile `q` (nearest rank over the exact samples).
    pub fn quantile(&self, q: f64) -> Duration {
        let mut v = self.rtts.clone();
        v.sort();
        if v.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }
}

/// Pings `target` from inside `ns`.
pub fn ping(ns: &Netns, target: SocketAddr, config: PingConfig) -> Result<PingReport, LiveError> {
    ns.run(|| ping_here(target, config))?
}

fn ping_here(target: SocketAddr, config: PingConfig) -> Result<PingReport, LiveError> {
    crate::sys::set_realtime_priority(RT_PRIORITY);
    let bind: SocketAddr = if target.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let socket = UdpSocket::bind(bind).map_err(LiveError::io("bind the pinger"))?;
    socket
        .connect(target)
        .map_err(LiveError::io(format!("connect the pinger to {target}")))?;
    let base = Instant::now();
    let mut report = PingReport {
        sent: 0,
        received: 0,
        rtts: Vec::new(),
        summary: LatencySummary::default(),
    };
    let mut probe = vec![0u8; config.payload_bytes.max(HEADER_BYTES)];
    let mut buf = [0u8; 2048];
    let end_of_sending = config.interval * config.count as u32;
    loop {
        let elapsed = base.elapsed();
        if report.sent < config.count && elapsed >= config.interval * report.sent as u32 {
            probe[..8].copy_from_slice(&report.sent.to_be_bytes());
            let t = base.elapsed().as_nanos() as u64;
            probe[8..16].copy_from_slice(&t.to_be_bytes());
            socket
                .send(&probe)
                .map_err(LiveError::io(format!("send a probe to {target}")))?;
            report.sent += 1;
            continue;
        }
        if report.sent >= config.count
            && (report.received >= report.sent || elapsed >= end_of_sending + config.linger)
        {
            break;
        }
        let next_send = if report.sent < config.count {
            config.interval * report.sent as u32
        } else {
            end_of_sending + config.linger
        };
        let wait = next_send
            .saturating_sub(elapsed)
            .max(Duration::from_micros(50));
        socket
            .set_read_timeout(Some(wait))
            .map_err(LiveError::io("configure the pinger"))?;
        match socket.recv(&mut buf) {
            Ok(n) if n >= HEADER_BYTES => {
                let now = base.elapsed().as_nanos() as u64;
                let sent_at = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
                let rtt = Duration::from_nanos(now.saturating_sub(sent_at));
                report.received += 1;
                report.rtts.push(rtt);
                report.summary.record(rtt);
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            // An ICMP error from a lost path shows up here; keep probing.
            Err(_) => {}
        }
    }
    Ok(report)
}
