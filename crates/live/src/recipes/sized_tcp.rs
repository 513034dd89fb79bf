//! Kernel TCP downloads of fixed sizes through a running lab, one after
//! another on fresh connections, each timed by the client from its
//! connect to the server's FIN, with the server's own retransmission
//! counters from `TCP_INFO`.
//!
//! Why fixed sizes: a mobile optimizer helps short and long downloads
//! differently (a 100 KB page lives in slow start, a 10 MB download in
//! steady state), so "faster downloads" needs a size beside it. The
//! server's initial window is set on its default routes (`initcwnd`), as
//! an operator's servers do, because Linux has no per-socket switch.

use super::RecipeError;
use crate::lab::Lab;
use crate::netns::Netns;
use crate::sys;
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// The port the sized-download server listens on.
pub const SIZED_PORT: u16 = 5301;
const CHUNK_BYTES: usize = 64 * 1024;
/// How long the server waits for the client to connect.
const ACCEPT_LIMIT: Duration = Duration::from_secs(10);

/// One series of downloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizedConfig {
    /// The server's congestion control ("cubic", "bbr").
    pub cc: String,
    /// Bytes of each download, in order.
    pub sizes: Vec<u64>,
    /// Each download must end within this.
    pub limit: Duration,
}

/// One completed download.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SizedDownload {
    pub bytes: u64,
    /// From the client's connect to the last byte read, in seconds.
    pub completion_s: f64,
    /// `bytes` over `completion_s`, in Mbit/s.
    pub goodput_mbps: f64,
    /// Data segments the server sent, retransmissions included.
    pub server_data_segments: u32,
    /// Segments the server retransmitted.
    pub server_retransmitted_segments: u32,
    /// The server kernel's smoothed RTT at the end, in ms.
    pub server_rtt_ms: f64,
}

/// Sets the server's initial congestion window, in segments, on its
/// default route of each family it has.
pub fn set_server_initcwnd(lab: &Lab, segments: u32) -> Result<(), RecipeError> {
    set_initcwnd(lab.server_ns(), segments)
}

fn set_initcwnd(ns: &Netns, segments: u32) -> Result<(), RecipeError> {
    let n = segments.to_string();
    for family in ["-4", "-6"] {
        let routes = ns.ip(&[family, "route", "show", "default"])?;
        for route in routes.lines().filter(|l| l.starts_with("default")) {
            // Drop an earlier initcwnd, then state the route again with ours.
            let mut words: Vec<&str> = Vec::new();
            let mut it = route.split_whitespace();
            while let Some(w) = it.next() {
                if w == "initcwnd" {
                    it.next();
                } else {
                    words.push(w);
                }
            }
            let mut args = vec![family, "route", "change"];
            args.extend(words);
            args.extend(["initcwnd", n.as_str()]);
            ns.ip(&args)?;
        }
    }
    Ok(())
}

/// Runs `config`'s downloads in order, each on a new connection from the
/// client to the server.
pub fn run(lab: &Lab, config: &SizedConfig) -> Result<Vec<SizedDownload>, RecipeError> {
    let bind = SocketAddr::new(lab.server_bind_addr(), SIZED_PORT);
    let target = SocketAddr::new(lab.server_addr(), SIZED_PORT);
    let listener = lab
        .server_ns()
        .run(|| TcpListener::bind(bind))?
        .map_err(|e| RecipeError::failed(format!("listen on {bind}"), e))?;
    sys::set_tcp_congestion(listener.as_fd(), &config.cc).map_err(|e| {
        RecipeError::Unsupported(format!(
            "congestion control {:?}: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)",
            config.cc
        ))
    })?;
    let mut out = Vec::with_capacity(config.sizes.len());
    for &bytes in &config.sizes {
        let accepted = listener
            .try_clone()
            .map_err(|e| RecipeError::failed("share the listener", e))?;
        let cc = config.cc.clone();
        let server = lab
            .server_ns()
            .spawn("brisk-sized-send", move || serve_one(&accepted, &cc, bytes))?;
        let received = lab.client_ns().run(|| fetch(target, bytes, config.limit))?;
        let counters = server
            .join()
            .map_err(|_| RecipeError::failed("sized-download server", "panicked"))??;
        let completion = received?;
        let (segments, retransmitted, rtt_ms) = counters?;
        let completion_s = completion.as_secs_f64();
        out.push(SizedDownload {
            bytes,
            completion_s,
            goodput_mbps: bytes as f64 * 8.0 / completion_s.max(1e-9) / 1e6,
            server_data_segments: segments,
            server_retransmitted_segments: retransmitted,
            server_rtt_ms: rtt_ms,
        });
    }
    Ok(out)
}

/// Accepts one client, sends it `bytes`, waits until they are all
/// acknowledged, and returns the server's (data segments, retransmitted
/// segments, smoothed RTT in ms).
fn serve_one(listener: &TcpListener, cc: &str, bytes: u64) -> Result<(u32, u32, f64), RecipeError> {
    let fail = |what: &str| {
        let what = what.to_string();
        move |e: std::io::Error| RecipeError::failed(what, e)
    };
    // Accept without blocking for ever: a client that never connects
    // must not hang the run.
    listener
        .set_nonblocking(true)
        .map_err(fail("configure the listener"))?;
    let deadline = Instant::now() + ACCEPT_LIMIT;
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(fail("accept a download")(e)),
        }
    };
    stream
        .set_nonblocking(false)
        .map_err(fail("configure the server socket"))?;
    sys::set_tcp_congestion(stream.as_fd(), cc).map_err(fail("set TCP_CONGESTION"))?;
    let chunk = vec![0x5a_u8; CHUNK_BYTES];
    let mut left = bytes;
    while left > 0 {
        let n = usize::try_from(left)
            .unwrap_or(CHUNK_BYTES)
            .min(CHUNK_BYTES);
        stream
            .write_all(&chunk[..n])
            .map_err(fail("send a download"))?;
        left -= n as u64;
    }
    stream
        .shutdown(std::net::Shutdown::Write)
        .map_err(fail("close the download"))?;
    // The client closes once it has read everything; by then every
    // segment is acknowledged and the counters are final.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(fail("configure the server socket"))?;
    let mut sink = [0u8; 512];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let info = sys::tcp_info(stream.as_fd()).map_err(fail("read TCP_INFO"))?;
    Ok((
        info.data_segs_out,
        info.total_retrans,
        f64::from(info.rtt_us) / 1000.0,
    ))
}

/// Connects to `server`, reads until its FIN, checks the byte count and
/// returns the time from connect to the last byte.
fn fetch(server: SocketAddr, bytes: u64, limit: Duration) -> Result<Duration, RecipeError> {
    let start = Instant::now();
    let mut stream = TcpStream::connect_timeout(&server, Duration::from_secs(5))
        .map_err(|e| RecipeError::failed(format!("connect to {server}"), e))?;
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| RecipeError::failed("configure the client socket", e))?;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut got = 0u64;
    let mut last = start;
    loop {
        if start.elapsed() > limit {
            return Err(RecipeError::failed(
                format!("download of {bytes} B"),
                format!("only {got} B within {} s", limit.as_secs_f64()),
            ));
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got += n as u64;
                last = Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(RecipeError::failed(format!("download of {bytes} B"), e)),
        }
    }
    if got != bytes {
        return Err(RecipeError::failed(
            format!("download of {bytes} B"),
            format!("the server closed after {got} B"),
        ));
    }
    Ok(last - start)
}
