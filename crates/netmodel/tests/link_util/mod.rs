//! Shared helpers for the link tests: packets, queues and a driver that
//! runs a link the way the simulator does.
#![allow(dead_code)] // each test file uses a different subset

use brisk_netmodel::queue::{Fifo, FifoConfig};
use brisk_netmodel::{Link, LinkConfig, LinkEvent, Packet};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// A UDP datagram of `len` bytes in total, IPv4 or IPv6.
pub fn udp(id: u64, v6: bool, len: usize, ecn: Ecn) -> Packet {
    let (src, dst): (SocketAddr, SocketAddr) = if v6 {
        (
            "[2001:db8::1]:1000".parse().unwrap(),
            "[2001:db8::2]:5000".parse().unwrap(),
        )
    } else {
        (
            "10.0.0.1:1000".parse().unwrap(),
            "10.0.1.1:5000".parse().unwrap(),
        )
    };
    let header = if v6 { 48 } else { 28 };
    let payload = vec![0u8; len.saturating_sub(header)];
    let data = ip::udp_datagram(src, dst, ecn, &payload).unwrap();
    Packet::new(id, Instant::ZERO, data).unwrap()
}

/// A link behind a FIFO holding up to `limit` packets.
pub fn link(config: LinkConfig, limit: usize, seed: u64) -> Link {
    let fifo = Fifo::new(FifoConfig {
        limit_packets: Some(limit),
        limit_bytes: None,
    });
    Link::new(config, Box::new(fifo), brisk_netmodel::rng(seed, 7))
}

/// `n` packets of `len` bytes, one every `gap`, starting at 0; ids count
/// from 0 and `sent_at` is the arrival time.
pub fn paced(n: u64, gap: std::time::Duration, len: usize, v6: bool) -> Vec<(Instant, Packet)> {
    (0..n)
        .map(|i| {
            let at = Instant::ZERO + gap * i as u32;
            let mut p = udp(i, v6, len, Ecn::NotEct);
            p.sent_at = at;
            (at, p)
        })
        .collect()
}

/// Feeds `arrivals` (sorted by time) at their times, waking the link at
/// each `poll_timeout` in between, until it is idle. Returns deliveries
/// and events in the order they came out.
pub fn run(
    link: &mut Link,
    arrivals: Vec<(Instant, Packet)>,
) -> (Vec<(Instant, Packet)>, Vec<LinkEvent>) {
    let mut arrivals: VecDeque<_> = arrivals.into();
    let (mut delivered, mut events) = (Vec::new(), Vec::new());
    loop {
        let next = arrivals.front().map(|(t, _)| *t);
        match (next, link.poll_timeout()) {
            (Some(a), Some(t)) if t < a => link.handle_timeout(t),
            (Some(_), _) => {
                let (at, p) = arrivals.pop_front().unwrap();
                link.handle_packet(at, p);
            }
            (None, Some(t)) => link.handle_timeout(t),
            (None, None) => break,
        }
        delivered.extend(std::iter::from_fn(|| link.poll_delivery()));
        events.extend(std::iter::from_fn(|| link.poll_event()));
    }
    (delivered, events)
}

/// Bytes delivered with arrival in `[from, to)`, as bits per second.
pub fn rate_bps(delivered: &[(Instant, Packet)], from: Instant, to: Instant) -> f64 {
    let bytes: usize = delivered
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, p)| p.len())
        .sum();
    bytes as f64 * 8.0 / (to - from).as_secs_f64()
}

pub fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}
