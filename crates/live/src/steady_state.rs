//! The steady state of a live download, read back from the run's own
//! records: how busy the down link was, how long the download's packets
//! waited in its queue and how many were CE-marked, over the second half
//! of the transfer, and the same per interval (a per-second trace).
//!
//! The simulator's L4S tests measure the second half of each run, after
//! start-up; a live figure over the whole transfer mixes the controller's
//! first seconds (slow start, its first marks) into the steady state and
//! is not comparable with them. The inputs are what a lab already writes:
//! the bottleneck capture (each packet as it leaves the down link, with its
//! length), the server side's capture (each packet as the router read it
//! from the server: how evenly the sender spaced them) and the router's
//! per-packet log (`events.csv`: each packet's queue delay and each CE
//! mark). All are stamped by the router's clock, so one run's files line
//! up to the nanosecond.
//!
//! Spacing matters on slow links: a packet that reaches a DualPI2 less than
//! one serialization time after the one before waits behind it, and below
//! 12 Mbit/s a 1500-byte packet's time exceeds the 1 ms marking step, so a
//! sender whose packets arrive in pairs is marked however slowly it sends
//! on average.

use crate::recipes::Summary;
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Why a run's records could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SteadyStateError {
    #[error("bottleneck capture: {0}")]
    Capture(String),
    #[error("events.csv line {line}: {message}")]
    Events { line: usize, message: String },
    #[error("the down link delivered no packet from {0}: nothing to measure")]
    NoTransfer(IpAddr),
}

/// One packet in a capture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Captured {
    /// Seconds since the start of the run.
    pub at_s: f64,
    /// The IP datagram's length, in bytes.
    pub len_bytes: u32,
    pub src: IpAddr,
}

/// One line of the router's per-packet log, down link only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DownEvent {
    /// A packet left the queue after waiting this long, at `at_s` seconds.
    Dequeued { at_s: f64, queue_delay: Duration },
    /// The queue marked a packet CE.
    Marked { at_s: f64 },
}

/// One interval of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyBin {
    /// Start of the interval, seconds from the transfer's first packet.
    pub from_s: f64,
    /// The link's delivered bits over its capacity in the interval, 0..1.
    pub busy: f64,
    /// The 99th percentile of queue delay in the interval, in ms.
    pub queue_delay_p99_ms: f64,
    /// Marked packets over dequeued packets, 0..1.
    pub ce_fraction: f64,
}

/// The second half of a transfer, and its per-interval trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyState {
    /// The measured window, seconds since the start of the run.
    pub from_s: f64,
    pub to_s: f64,
    /// The down link's delivered bits over its capacity in the window, 0..1.
    pub busy: f64,
    /// Queue delay of the packets dequeued in the window.
    pub queue_delay: Summary,
    /// Marked over dequeued packets in the window, 0..1.
    pub ce_fraction: f64,
    pub marks: u64,
    /// The share of the download's packets in the window that reached the
    /// router less than one serialization time (of the packet before, at
    /// the link's rate) after the packet before: they had to queue behind
    /// it, 0..1.
    pub close_arrivals: f64,
    /// Time between consecutive arrivals of the download's packets at the
    /// router, in the window.
    pub arrival_gap: Summary,
    /// The whole transfer, interval by interval.
    pub bins: Vec<SteadyBin>,
}

impl SteadyState {
    /// Measures the transfer whose packets come from `server` on a down
    /// link of `rate_bps`, read for `transfer` by its receiver: the second
    /// half of the span from its first `delivered` packet to `transfer`
    /// later (or its last packet, if sooner), and the whole span in
    /// intervals of `bin`. Once the receiver stops reading, flow control
    /// holds the sender back, so packets after that are not counted.
    /// `arrived` holds the packets as the router read them from the
    /// server. Queue delays and marks count every down packet (a lone
    /// download is the down link's only traffic).
    pub fn measure(
        delivered: &[Captured],
        arrived: &[Captured],
        events: &[DownEvent],
        server: IpAddr,
        rate_bps: u64,
        transfer: Duration,
        bin: Duration,
    ) -> Result<SteadyState, SteadyStateError> {
        let times = || delivered.iter().filter(|d| d.src == server).map(|d| d.at_s);
        let (Some(first), Some(last)) = (
            times().min_by(f64::total_cmp),
            times().max_by(f64::total_cmp),
        ) else {
            return Err(SteadyStateError::NoTransfer(server));
        };
        let last = last.min(first + transfer.as_secs_f64());
        let from_s = first + (last - first) / 2.0;
        let window = Window::measure(delivered, events, server, rate_bps, from_s, last);
        let (close_arrivals, arrival_gap) = spacing(arrived, server, rate_bps, from_s, last);
        let bin_s = bin.as_secs_f64().max(1e-3);
        let bins = (0..)
            .map(|i| first + i as f64 * bin_s)
            .take_while(|start| *start < last)
            .map(|start| {
                let w = Window::measure(
                    delivered,
                    events,
                    server,
                    rate_bps,
                    start,
                    (start + bin_s).min(last),
                );
                SteadyBin {
                    from_s: start - first,
                    busy: w.busy,
                    queue_delay_p99_ms: w.queue_delay.p99_ms,
                    ce_fraction: w.ce_fraction,
                }
            })
            .collect();
        Ok(SteadyState {
            from_s,
            to_s: last,
            busy: window.busy,
            queue_delay: window.queue_delay,
            ce_fraction: window.ce_fraction,
            marks: window.marks,
            close_arrivals,
            arrival_gap,
            bins,
        })
    }
}

/// What one stretch of time `[from_s, to_s)` holds.
struct Window {
    busy: f64,
    queue_delay: Summary,
    ce_fraction: f64,
    marks: u64,
}

impl Window {
    fn measure(
        delivered: &[Captured],
        events: &[DownEvent],
        server: IpAddr,
        rate_bps: u64,
        from_s: f64,
        to_s: f64,
    ) -> Window {
        let inside = |t: f64| t >= from_s && t < to_s;
        let bits: f64 = delivered
            .iter()
            .filter(|d| d.src == server && inside(d.at_s))
            .map(|d| f64::from(d.len_bytes) * 8.0)
            .sum();
        let span_s = to_s - from_s;
        let busy = if span_s > 0.0 && rate_bps > 0 {
            bits / (rate_bps as f64 * span_s)
        } else {
            f64::NAN
        };
        let mut delays_ms = Vec::new();
        let mut marks = 0u64;
        for e in events {
            match *e {
                DownEvent::Dequeued { at_s, queue_delay } if inside(at_s) => {
                    delays_ms.push(queue_delay.as_secs_f64() * 1e3);
                }
                DownEvent::Marked { at_s } if inside(at_s) => marks += 1,
                _ => {}
            }
        }
        let ce_fraction = if delays_ms.is_empty() {
            f64::NAN
        } else {
            marks as f64 / delays_ms.len() as f64
        };
        Window {
            busy,
            queue_delay: Summary::of(&delays_ms),
            ce_fraction,
            marks,
        }
    }
}

/// How the packets from `server` in `arrived` were spaced in
/// `[from_s, to_s)`: the share that came less than one serialization time
/// after the one before, and the gaps.
fn spacing(
    arrived: &[Captured],
    server: IpAddr,
    rate_bps: u64,
    from_s: f64,
    to_s: f64,
) -> (f64, Summary) {
    let mut from_server: Vec<&Captured> = arrived.iter().filter(|a| a.src == server).collect();
    from_server.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let mut gaps_ms = Vec::new();
    let mut close = 0u64;
    for pair in from_server.windows(2) {
        let (before, this) = (pair[0], pair[1]);
        if this.at_s < from_s || this.at_s >= to_s {
            continue;
        }
        let gap_s = this.at_s - before.at_s;
        let serialization_s = f64::from(before.len_bytes) * 8.0 / rate_bps.max(1) as f64;
        close += u64::from(gap_s < serialization_s);
        gaps_ms.push(gap_s * 1e3);
    }
    let share = if gaps_ms.is_empty() {
        f64::NAN
    } else {
        close as f64 / gaps_ms.len() as f64
    };
    (share, Summary::of(&gaps_ms))
}

/// A pcap file's global header.
const FILE_HEADER_BYTES: usize = 24;
/// A record's own header: seconds, nanoseconds, kept and original length.
const RECORD_HEADER_BYTES: usize = 16;
/// The magic of a little-endian pcap with nanosecond timestamps.
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;

/// Reads the lab's bottleneck capture (raw IP, nanosecond timestamps, as
/// `crate::capture::BottleneckCapture` writes it): each packet's time
/// since the run's start (`unix_offset_nanos` is the run's zero in Unix
/// time, `crate::Lab::unix_offset_nanos`), length and source address.
pub fn read_capture(
    pcap: &[u8],
    unix_offset_nanos: u64,
) -> Result<Vec<Captured>, SteadyStateError> {
    let bad = |m: &str| SteadyStateError::Capture(m.to_string());
    let header = pcap
        .get(..FILE_HEADER_BYTES)
        .ok_or_else(|| bad("shorter than a pcap header"))?;
    if le_u32(header, 0) != Some(MAGIC_NANOS) {
        return Err(bad("not a little-endian pcap with nanosecond timestamps"));
    }
    let mut out = Vec::new();
    let mut at = FILE_HEADER_BYTES;
    while at < pcap.len() {
        let record = pcap
            .get(at..at + RECORD_HEADER_BYTES)
            .ok_or_else(|| bad("a record header runs past the end"))?;
        let (secs, nanos, incl, orig) = match (
            le_u32(record, 0),
            le_u32(record, 4),
            le_u32(record, 8),
            le_u32(record, 12),
        ) {
            (Some(s), Some(n), Some(i), Some(o)) => (s, n, i as usize, o),
            _ => return Err(bad("a record header runs past the end")),
        };
        let body = pcap
            .get(at + RECORD_HEADER_BYTES..at + RECORD_HEADER_BYTES + incl)
            .ok_or_else(|| bad("a packet runs past the end"))?;
        let unix_nanos = u64::from(secs) * 1_000_000_000 + u64::from(nanos);
        let since_start = unix_nanos.saturating_sub(unix_offset_nanos);
        let src = source(body).ok_or_else(|| bad("a packet without a whole IP source"))?;
        out.push(Captured {
            at_s: since_start as f64 / 1e9,
            len_bytes: orig,
            src,
        });
        at += RECORD_HEADER_BYTES + incl;
    }
    Ok(out)
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
}

/// The source address of a raw IPv4 or IPv6 datagram's first bytes.
fn source(ip: &[u8]) -> Option<IpAddr> {
    match ip.first()? >> 4 {
        4 => {
            let a: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(a)))
        }
        6 => {
            let a: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => None,
    }
}

/// Reads the down link's queue delays and CE marks from `events.csv`
/// (`time_s,direction,flow,packet_id,event,queue_delay_us`, as
/// `crate::capture::Captures` writes it); other lines are skipped.
pub fn read_events(csv: &str) -> Result<Vec<DownEvent>, SteadyStateError> {
    let mut out = Vec::new();
    for (i, line) in csv.lines().enumerate().skip(1) {
        let bad = |message: &str| SteadyStateError::Events {
            line: i + 1,
            message: message.to_string(),
        };
        let fields: Vec<&str> = line.split(',').collect();
        let [time, dir, _flow, _id, event, delay] = fields[..] else {
            return Err(bad("not six fields"));
        };
        if dir != "down" {
            continue;
        }
        let at_s: f64 = time.parse().map_err(|_| bad("time_s is not a number"))?;
        match event {
            "dequeue" => {
                let us: u64 = delay
                    .parse()
                    .map_err(|_| bad("queue_delay_us is not a whole number"))?;
                out.push(DownEvent::Dequeued {
                    at_s,
                    queue_delay: Duration::from_micros(us),
                });
            }
            "mark_ce" => out.push(DownEvent::Marked { at_s }),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_time::Instant;
    use brisk_trace::pcap::{PcapConfig, PcapWriter};

    const SERVER4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));
    const CLIENT4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2));
    const SERVER6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 2, 0, 0, 0, 2));
    const CLIENT6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 1, 0, 0, 0, 2));

    fn datagram(src: IpAddr, dst: IpAddr, payload: usize) -> Vec<u8> {
        let a = std::net::SocketAddr::new(src, 4433);
        let b = std::net::SocketAddr::new(dst, 5000);
        brisk_wire::ip::udp_datagram(a, b, brisk_wire::Ecn::Ect1, &vec![0u8; payload])
            .expect("a valid datagram")
    }

    /// A capture of `n` packets of 1500 bytes from `server`, one every
    /// `gap`, and an ACK from `client` after each, starting 1 s in.
    fn capture(server: IpAddr, client: IpAddr, n: u64, gap: Duration, offset: u64) -> Vec<u8> {
        let config = PcapConfig {
            unix_offset_nanos: offset,
            ..PcapConfig::default()
        };
        let mut w = PcapWriter::new(Vec::new(), config).unwrap();
        let data = datagram(
            server,
            client,
            1500 - if server.is_ipv4() { 28 } else { 48 },
        );
        assert_eq!(data.len(), 1500);
        let ack = datagram(client, server, 40);
        for i in 0..n {
            let t = Instant::from_millis(1000) + gap * i as u32;
            w.write_packet(t, &data).unwrap();
            w.write_packet(t + Duration::from_micros(100), &ack)
                .unwrap();
        }
        w.into_inner().unwrap()
    }

    #[test]
    fn a_link_sending_every_other_slot_is_half_busy_on_both_families() {
        // 10 Mbit/s: a 1500-byte packet takes 1.2 ms; one every 2.4 ms.
        for (server, client) in [(SERVER4, CLIENT4), (SERVER6, CLIENT6)] {
            let offset = 1_700_000_000_000_000_000;
            let pcap = capture(server, client, 1000, Duration::from_micros(2400), offset);
            let delivered = read_capture(&pcap, offset).unwrap();
            assert_eq!(delivered.len(), 2000);
            assert_eq!(delivered[0].src, server);
            assert!((delivered[0].at_s - 1.0).abs() < 1e-9);
            assert_eq!(delivered[0].len_bytes, 1500);
            // Queue delays: 1 ms in the first half, 3 ms in the second;
            // every fourth packet of the second half marked.
            let events: Vec<DownEvent> = (0..1000u32)
                .flat_map(|i| {
                    let at_s = 1.0 + 0.0024 * f64::from(i);
                    let late = i >= 500;
                    let d = DownEvent::Dequeued {
                        at_s,
                        queue_delay: Duration::from_millis(if late { 3 } else { 1 }),
                    };
                    let mark = (late && i % 4 == 0).then_some(DownEvent::Marked { at_s });
                    std::iter::once(d).chain(mark)
                })
                .collect();
            // The sender's packets reached the router in pairs 0.1 ms
            // apart, a pair every 4.8 ms: every other one queued.
            let arrived: Vec<Captured> = (0..1000u32)
                .map(|i| Captured {
                    at_s: 1.0 + 0.0048 * f64::from(i / 2) + 0.0001 * f64::from(i % 2),
                    len_bytes: 1500,
                    src: server,
                })
                .collect();
            let s = SteadyState::measure(
                &delivered,
                &arrived,
                &events,
                server,
                10_000_000,
                Duration::from_secs(10),
                Duration::from_secs(1),
            )
            .unwrap();
            assert!(
                (s.close_arrivals - 0.5).abs() < 0.01,
                "{}",
                s.close_arrivals
            );
            assert!(
                (s.arrival_gap.p99_ms - 4.7).abs() < 0.01,
                "{:?}",
                s.arrival_gap
            );
            assert!((s.busy - 0.5).abs() < 0.01, "{}", s.busy);
            assert_eq!(s.queue_delay.p50_ms, 3.0);
            assert!((s.ce_fraction - 0.25).abs() < 0.01, "{}", s.ce_fraction);
            // 2.4 s of transfer: three intervals, the last one short.
            assert_eq!(s.bins.len(), 3);
            assert_eq!(s.bins[0].queue_delay_p99_ms, 1.0);
            assert_eq!(s.bins[0].ce_fraction, 0.0);
            assert!(
                s.bins.iter().all(|b| (b.busy - 0.5).abs() < 0.01),
                "{:?}",
                s.bins
            );
            // A receiver that read for 2 s: the window is its second second.
            let cut = SteadyState::measure(
                &delivered,
                &arrived,
                &events,
                server,
                10_000_000,
                Duration::from_secs(2),
                Duration::from_secs(1),
            )
            .unwrap();
            assert!((cut.from_s - 2.0).abs() < 1e-9 && (cut.to_s - 3.0).abs() < 1e-9);
            assert_eq!(cut.bins.len(), 2);
        }
    }

    #[test]
    fn a_run_without_the_servers_packets_is_refused() {
        let offset = 1_700_000_000_000_000_000;
        let pcap = capture(SERVER4, CLIENT4, 10, Duration::from_millis(1), offset);
        let delivered = read_capture(&pcap, offset).unwrap();
        assert_eq!(
            SteadyState::measure(
                &delivered,
                &delivered,
                &[],
                SERVER6,
                1_000_000,
                Duration::from_secs(10),
                Duration::from_secs(1)
            ),
            Err(SteadyStateError::NoTransfer(SERVER6))
        );
    }

    #[test]
    fn broken_records_are_refused_with_a_reason() {
        let offset = 1_700_000_000_000_000_000;
        let pcap = capture(SERVER4, CLIENT4, 2, Duration::from_millis(1), offset);
        assert!(matches!(
            read_capture(&pcap[..10], offset),
            Err(SteadyStateError::Capture(_))
        ));
        assert!(matches!(
            read_capture(&pcap[..pcap.len() - 3], offset),
            Err(SteadyStateError::Capture(m)) if m.contains("past the end")
        ));
        let header = "time_s,direction,flow,packet_id,event,queue_delay_us\n";
        let ok = format!(
            "{header}0.5,down,0,1,dequeue,1500\n0.5,down,0,1,mark_ce,\n0.6,up,1,2,dequeue,9\n"
        );
        assert_eq!(
            read_events(&ok).unwrap(),
            vec![
                DownEvent::Dequeued {
                    at_s: 0.5,
                    queue_delay: Duration::from_micros(1500)
                },
                DownEvent::Marked { at_s: 0.5 }
            ]
        );
        assert_eq!(
            read_events(&format!("{header}0.5,down,0,1,dequeue,x\n")),
            Err(SteadyStateError::Events {
                line: 2,
                message: "queue_delay_us is not a whole number".into()
            })
        );
        assert!(matches!(
            read_events(&format!("{header}0.5,down\n")),
            Err(SteadyStateError::Events { line: 2, .. })
        ));
    }
}
