//! The experiment client: H2O's measurement of a small urgent response
//! requested while a large one is streaming, plus connection set-up
//! timings (Happy Eyeballs, Fast Open).
//!
//! The large request goes first. As soon as its first byte arrives (plus an
//! optional delay) the small, most urgent request follows. The server's
//! scheduler sends the small response first, so its latency measures only
//! what is already committed to the kernel ahead of it: a send buffer full
//! of the large response without a low-water mark, about one window with
//! write sizing.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::app::{FrameEvent, FrameReader, Request};
use crate::connect::{self, AttemptRecord, ConnectError, ConnectOptions};
use crate::fastopen::{self, Idempotent, TfoError};
use crate::tcp_info::TcpInfo;

/// What to fetch and how to connect.
#[derive(Debug, Clone)]
pub struct GetConfig {
    /// Size of the large response in bytes.
    pub large_bytes: u64,
    /// The urgent response's size; `None` fetches only the large one.
    pub small_bytes: Option<u64>,
    /// Wait this long after the large response's first byte before asking
    /// for the small one.
    pub small_delay: Duration,
    /// Send the first request in the SYN (TCP Fast Open).
    pub fastopen: bool,
    /// How to resolve and race addresses.
    pub connect: ConnectOptions,
    /// Give up after this long.
    pub timeout: Duration,
}

impl Default for GetConfig {
    fn default() -> Self {
        GetConfig {
            large_bytes: 4 << 20,
            small_bytes: Some(2048),
            small_delay: Duration::ZERO,
            fastopen: false,
            connect: ConnectOptions::default(),
            timeout: Duration::from_secs(60),
        }
    }
}

/// One response's timings, from when its request was written.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ResponseTiming {
    /// Payload bytes of the response.
    pub bytes: u64,
    /// Milliseconds from writing the request to the first payload byte.
    pub first_byte_ms: f64,
    /// Milliseconds from writing the request to the last payload byte.
    pub complete_ms: f64,
}

/// Fast Open's part of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FastOpenReport {
    /// Request bytes the SYN carried (0 on a first, cookie-fetching
    /// connection).
    pub syn_bytes: usize,
    /// Whether the server acknowledged the SYN's data (`TCPI_OPT_SYN_DATA`).
    pub syn_data_acked: bool,
}

/// Everything one `get` measured. Times are milliseconds from the start
/// of the connection attempt unless named otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GetReport {
    /// The address that won the connection race.
    pub peer: SocketAddr,
    /// Handshake done (for Fast Open: SYN-ACK received).
    pub connect_ms: f64,
    /// First byte of the large response, from the start: the number Fast
    /// Open shortens by one RTT.
    pub first_byte_ms: f64,
    /// Milliseconds until both responses were complete.
    pub total_ms: f64,
    /// The large response.
    pub large: ResponseTiming,
    /// The small response, when one was asked for.
    pub small: Option<ResponseTiming>,
    /// Large-response bytes that arrived between asking for the small one
    /// and receiving all of it: what it queued behind.
    pub small_waited_behind_bytes: u64,
    /// Fast Open's outcome, when it was asked for.
    pub fastopen: Option<FastOpenReport>,
    /// Every connection attempt the race made.
    pub attempts: Vec<AttemptRecord>,
    /// The client's view of the connection at the end.
    pub tcp_info: Option<TcpInfo>,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    #[error(transparent)]
    /// Resolving or connecting failed.
    Connect(#[from] ConnectError),
    #[error(transparent)]
    /// The Fast Open connect failed.
    FastOpen(#[from] TfoError),
    #[error("cannot resolve {0} for Fast Open")]
    /// The host could not be resolved to an address for the Fast Open
    /// connect; carries the host.
    Resolve(String),
    #[error("connection: {0}")]
    /// Reading or writing the connection failed.
    Io(#[from] io::Error),
    #[error("server closed the connection before both responses finished")]
    /// The peer closed before both responses were complete.
    Truncated,
    #[error("no complete answer within {0:?}")]
    /// The responses did not finish within [`GetConfig::timeout`].
    Timeout(Duration),
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Fetches from `host:port` (name or literal) and measures.
pub async fn get(host: &str, port: u16, config: &GetConfig) -> Result<GetReport, GetError> {
    tokio::time::timeout(config.timeout, run(host, port, config))
        .await
        .map_err(|_| GetError::Timeout(config.timeout))?
}

async fn run(host: &str, port: u16, config: &GetConfig) -> Result<GetReport, GetError> {
    let large_line = Request::new(config.large_bytes, 3).to_line();
    let start = Instant::now();
    let (mut stream, fastopen, attempts) = if config.fastopen {
        let addr = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
            .await?
            .next()
            .ok_or_else(|| GetError::Resolve(host.to_string()))?;
        // A GET of generated bytes changes nothing on the server, so a
        // replayed SYN is harmless: this is what early data is for.
        let early = Idempotent::assume_replay_safe(large_line.as_bytes());
        let tfo = fastopen::connect(addr, early).await?;
        let report = FastOpenReport {
            syn_bytes: tfo.syn_bytes,
            syn_data_acked: tfo.syn_data_acked,
        };
        (tfo.stream, Some(report), Vec::new())
    } else {
        let c = connect::connect(host, port, &config.connect).await?;
        (c.stream, None, c.attempts)
    };
    let connect_ms = ms(start.elapsed());
    stream.set_nodelay(true)?;
    let large_sent = if fastopen.is_some() {
        start
    } else {
        stream.write_all(large_line.as_bytes()).await?;
        Instant::now()
    };
    let peer = stream.peer_addr()?;
    let mut m = Measure::new(config);
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Vec::new();
    while !m.done() {
        let wait = m
            .small_due()
            .map(|due| due.saturating_duration_since(Instant::now()));
        tokio::select! {
            readable = stream.readable() => {
                readable?;
                let n = match stream.try_read(&mut buf) {
                    Ok(0) => return Err(GetError::Truncated),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e.into()),
                };
                let now = Instant::now();
                events.clear();
                m.reader.handle_bytes(&buf[..n], &mut events);
                for event in &events {
                    m.handle_event(*event, now);
                }
            }
            _ = sleep_for(wait) => {
                m.send_small(&mut stream).await?;
            }
        }
    }
    let tcp_info = TcpInfo::read(&stream).ok();
    let total_ms = ms(start.elapsed());
    Ok(GetReport {
        peer,
        connect_ms,
        first_byte_ms: ms(m.large.first.unwrap_or(large_sent) - start),
        total_ms,
        large: m.large.timing(large_sent),
        small: m.small_sent.map(|sent| m.small.timing(sent)),
        small_waited_behind_bytes: m.behind_bytes,
        fastopen,
        attempts,
        tcp_info,
    })
}

async fn sleep_for(wait: Option<Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

#[derive(Debug, Default)]
struct Progress {
    bytes: u64,
    first: Option<Instant>,
    complete: Option<Instant>,
}

impl Progress {
    fn timing(&self, sent: Instant) -> ResponseTiming {
        let since =
            |t: Option<Instant>| t.map_or(f64::NAN, |t| ms(t.saturating_duration_since(sent)));
        ResponseTiming {
            bytes: self.bytes,
            first_byte_ms: since(self.first),
            complete_ms: since(self.complete),
        }
    }
}

/// The measurement's state: which response got what, when.
struct Measure {
    reader: FrameReader,
    large: Progress,
    small: Progress,
    small_request: Option<Request>,
    small_delay: Duration,
    small_sent: Option<Instant>,
    behind_bytes: u64,
}

impl Measure {
    fn new(config: &GetConfig) -> Self {
        Measure {
            reader: FrameReader::default(),
            large: Progress::default(),
            small: Progress::default(),
            small_request: config.small_bytes.map(|b| Request::new(b, 0)),
            small_delay: config.small_delay,
            small_sent: None,
            behind_bytes: 0,
        }
    }

    /// When the small request should go out, if it has not yet.
    fn small_due(&self) -> Option<Instant> {
        if self.small_sent.is_some() || self.small_request.is_none() {
            return None;
        }
        self.large.first.map(|t| t + self.small_delay)
    }

    async fn send_small(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        if let Some(request) = self.small_request {
            stream.write_all(request.to_line().as_bytes()).await?;
            self.small_sent = Some(Instant::now());
        }
        Ok(())
    }

    fn handle_event(&mut self, event: FrameEvent, now: Instant) {
        let FrameEvent::Data { stream, bytes, fin } = event;
        let progress = match stream {
            0 => &mut self.large,
            _ => &mut self.small,
        };
        progress.bytes += bytes;
        progress.first.get_or_insert(now);
        if fin {
            progress.complete = Some(now);
        }
        if stream == 0 && self.small_sent.is_some() && self.small.complete.is_none() {
            self.behind_bytes += bytes;
        }
    }

    fn done(&self) -> bool {
        let small_done = self.small_request.is_none() || self.small.complete.is_some();
        self.large.complete.is_some() && small_done
    }
}
