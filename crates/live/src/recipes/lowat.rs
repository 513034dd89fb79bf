//! `TCP_NOTSENT_LOWAT` on an interactive stream behind a bulk one (WWDC
//! 2015): a screen-sharing-like sender keeps a bulk stream going and, on a
//! fixed schedule, produces small interactive messages on the same
//! connection. Its writer ([`brisk_tcp::LowatWriter`]) writes one unit per
//! writable event, a due message before any bulk, so a message waits only
//! behind what the kernel already holds: a whole send buffer by default,
//! about the mark (plus what is in flight) with one.
//!
//! A message's latency runs from the moment it was due (its place in the
//! schedule, when the application had it) to its last byte at the
//! receiving application. Both ends are threads of this process, so they
//! share one monotonic clock.

use super::{Background, RecipeError, Summary, block_on_in, ms, server_bind};
use crate::lab::Lab;
use brisk_tcp::app::{FrameEvent, FrameHeader, FrameReader, HEADER_LEN};
use brisk_tcp::lowat::{LowatWriter, WriterConfig};
use brisk_tcp::{TcpInfo, sockopt};
use serde::Serialize;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// One run: the sender's buffer, mark and schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LowatExperiment {
    /// `SO_SNDBUF` as requested. Linux doubles it and charges each
    /// buffer's overhead against it, so the payload it holds is about 0.6
    /// of the doubled value: 96 KiB holds about the seed's 120 KB.
    pub send_buffer_request_bytes: usize,
    /// The mark; `None` keeps the kernel default (no limit).
    pub lowat_bytes: Option<u32>,
    /// Size of each bulk write.
    pub bulk_unit_bytes: usize,
    pub message_bytes: usize,
    pub message_interval: Duration,
    pub messages: u32,
    /// Bulk only, before the first message: time for the buffer to fill.
    pub warmup: Duration,
    pub timeout: Duration,
}

impl LowatExperiment {
    /// The seed's sender: about 120 KB waiting in the send buffer, 4 KB
    /// bulk units, a 1 KB message every 200 ms for 5 s after a 1 s
    /// warm-up.
    pub fn seed(lowat_bytes: Option<u32>) -> LowatExperiment {
        LowatExperiment {
            send_buffer_request_bytes: 98_304,
            lowat_bytes,
            bulk_unit_bytes: 4096,
            message_bytes: 1024,
            message_interval: Duration::from_millis(200),
            messages: 25,
            warmup: Duration::from_secs(1),
            timeout: Duration::from_secs(40),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LowatOutcome {
    pub lowat_bytes: Option<u32>,
    /// The send buffer as the kernel reports it.
    pub send_buffer_bytes: usize,
    /// From each message being due to its last byte at the receiver.
    pub latency: Summary,
    /// Bytes the kernel held ahead of each message when it was written
    /// (unsent plus in flight), median.
    pub queued_ahead_p50_bytes: f64,
    /// Bulk bytes the receiver got during the run.
    pub bulk_bytes: u64,
    pub duration_ms: f64,
}

/// What the sender shares with the measurement.
#[derive(Default)]
struct Shared {
    /// When the schedule started (the connection was accepted).
    base: OnceLock<Instant>,
    send_buffer_bytes: OnceLock<usize>,
    queued_ahead_bytes: Mutex<Vec<f64>>,
}

/// Runs one sender and receiver in `lab` (server to client).
pub fn run(lab: &Lab, exp: &LowatExperiment) -> Result<LowatOutcome, RecipeError> {
    let shared = Arc::new(Shared::default());
    let bind = server_bind(lab);
    let sender = {
        let (shared, exp) = (shared.clone(), *exp);
        Background::start(lab.server_ns(), "lowat-sender", move |ready| async move {
            let listener = match TcpListener::bind(bind).await {
                Ok(l) => l,
                Err(e) => return ready.fail(format!("bind {bind}: {e}")),
            };
            ready.ok();
            if let Ok((stream, _)) = listener.accept().await {
                // An error ends the run; the receiver then times out and
                // says so.
                let _ = send(stream, &exp, &shared).await;
            }
        })?
    };
    let target = SocketAddr::new(lab.server_addr(), bind.port());
    let exp_copy = *exp;
    let received = block_on_in(lab.client_ns(), move || async move {
        tokio::time::timeout(exp_copy.timeout, receive(target, &exp_copy)).await
    })?;
    drop(sender);
    let (arrivals, bulk_bytes, duration) = received
        .map_err(|_| RecipeError::failed("low-water-mark run", "timed out"))?
        .map_err(|e| RecipeError::failed("low-water-mark receiver", e))?;
    let base = *shared
        .base
        .get()
        .ok_or_else(|| RecipeError::failed("low-water-mark run", "the sender never started"))?;
    let latencies: Vec<f64> = arrivals
        .iter()
        .enumerate()
        .map(|(i, at)| {
            let due = base + exp.warmup + exp.message_interval * i as u32;
            at.map_or(f64::NAN, |at| ms(at.saturating_duration_since(due)))
        })
        .collect();
    let ahead = shared
        .queued_ahead_bytes
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    Ok(LowatOutcome {
        lowat_bytes: exp.lowat_bytes,
        send_buffer_bytes: shared.send_buffer_bytes.get().copied().unwrap_or(0),
        latency: Summary::of(&latencies),
        queued_ahead_p50_bytes: Summary::of(&ahead).p50_ms,
        bulk_bytes,
        duration_ms: ms(duration),
    })
}

/// A frame of `len` zero bytes on `stream`.
fn frame(stream: u32, len: usize, fin: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + len);
    FrameHeader {
        stream,
        len: u32::try_from(len).unwrap_or(u32::MAX),
        fin,
    }
    .emit(&mut out);
    out.resize(HEADER_LEN + len, 0);
    out
}

/// The sender: bulk on stream 0, message `i` on stream `i + 1`, one unit
/// per writable event, a due message first.
async fn send(stream: TcpStream, exp: &LowatExperiment, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    sockopt::set_send_buffer(&stream, exp.send_buffer_request_bytes).map_err(io::Error::other)?;
    let _ = shared
        .send_buffer_bytes
        .set(sockopt::send_buffer(&stream).unwrap_or(0));
    let config = WriterConfig {
        lowat_bytes: exp.lowat_bytes,
        sizing: None,
    };
    let mut writer = LowatWriter::new(&stream, config).map_err(io::Error::other)?;
    let base = *shared.base.get_or_init(Instant::now);
    let mut next = 0u32;
    while next < exp.messages {
        writer.ready().await?;
        let due = base + exp.warmup + exp.message_interval * next;
        let unit = if Instant::now() >= due {
            if let Ok(info) = TcpInfo::read(&stream) {
                let in_flight = u64::from(info.unacked_pkts) * u64::from(info.snd_mss_bytes);
                let unsent = u64::from(info.notsent_bytes.unwrap_or(0));
                if let Ok(mut v) = shared.queued_ahead_bytes.lock() {
                    v.push((in_flight + unsent) as f64);
                }
            }
            next += 1;
            frame(next, exp.message_bytes, true)
        } else {
            frame(0, exp.bulk_unit_bytes, false)
        };
        writer.write_unit(&unit).await?;
    }
    // Keep the connection until the receiver has everything and closes.
    let mut buf = [0u8; 256];
    loop {
        stream.readable().await?;
        match stream.try_read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

type Received = (Vec<Option<Instant>>, u64, Duration);

/// The receiver: reads as fast as it can and notes when each message's
/// last byte arrived.
async fn receive(target: SocketAddr, exp: &LowatExperiment) -> io::Result<Received> {
    let start = Instant::now();
    let stream = TcpStream::connect(target).await?;
    let mut arrivals = vec![None; exp.messages as usize];
    let mut got = 0;
    let mut bulk_bytes = 0u64;
    let mut reader = FrameReader::default();
    let mut events = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while got < arrivals.len() {
        stream.readable().await?;
        let n = match stream.try_read(&mut buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        events.clear();
        reader.handle_bytes(&buf[..n], &mut events);
        for FrameEvent::Data { stream, bytes, fin } in events.iter().copied() {
            match stream {
                0 => bulk_bytes += bytes,
                s if fin => {
                    if let Some(slot) = arrivals.get_mut(s as usize - 1) {
                        got += usize::from(slot.is_none());
                        *slot = Some(now);
                    }
                }
                _ => {}
            }
        }
    }
    Ok((arrivals, bulk_bytes, start.elapsed()))
}
