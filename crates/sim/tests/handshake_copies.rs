//! The handshake's "soft FEC": a connection that asks for FEC sends each
//! handshake message twice, so a lost server reply no longer costs the
//! client's handshake timeout (about a second before any RTT sample).
//! 10 Mbit/s, 220 ms RTT, 10% random loss toward the receiver (the
//! direction the client's Initial takes), 40 fetches of 10 KB each on a
//! fresh connection, on IPv4 and IPv6, with FEC on and without it; the
//! handshake time's 95th percentile is compared.

mod common;

use brisk_sim::scenario::{IpFamily, Scenario};
use common::{FAMILIES, run_on};

const FETCHES: usize = 40;
const RTT_MS: f64 = 220.0;

/// The handshake times in ms of `FETCHES` 10 KB fetches, each on a fresh
/// connection, one every 500 ms (infinite for one that never connected).
fn handshakes(fec: bool, ip: IpFamily) -> Vec<f64> {
    let fec = if fec { ", fec = \"on\"" } else { "" };
    let flows: String = (0..FETCHES)
        .map(|i| {
            format!(
                "  {{ name = \"f{i}\", kind = \"brisk\", start = \"{}ms\", bytes = \"10000B\"{fec} }},\n",
                i * 500
            )
        })
        .collect();
    let text = format!(
        r#"
duration = "25s"
seed = 1
flows = [
{flows}]
[link.down]
rate = "10Mbit"
delay = "110ms"
loss = "10%"
[link.up]
rate = "10Mbit"
delay = "110ms"
[queue.fifo]
limit_packets = 200
"#
    );
    let s = Scenario::parse(&text, "handshake_copies.toml").expect("a valid scenario");
    run_on(&s, ip)
        .flows
        .iter()
        .map(|f| {
            let b = f.brisk.as_ref().expect("a Brisk flow");
            b.transport.handshake_ms.unwrap_or(f64::INFINITY)
        })
        .collect()
}

/// The 95th percentile (nearest rank) of the handshake times over both
/// families, and how many took longer than two round trips.
fn p95(fec: bool) -> (f64, usize) {
    let mut ms: Vec<f64> = FAMILIES
        .iter()
        .flat_map(|&ip| handshakes(fec, ip))
        .collect();
    ms.sort_by(f64::total_cmp);
    let rank = (ms.len() as f64 * 0.95).ceil() as usize;
    let slow = ms.iter().filter(|&&m| m > 2.0 * RTT_MS).count();
    (ms[rank.clamp(1, ms.len()) - 1], slow)
}

#[test]
fn a_lost_reply_costs_no_handshake_timeout_with_fec() {
    let (with, slow_with) = p95(true);
    let (without, slow_without) = p95(false);
    eprintln!(
        "handshake at 220 ms RTT, 10% loss toward the server, {} handshakes: p95 {with:.0} ms \
         with FEC ({slow_with} over two round trips), {without:.0} ms without ({slow_without})",
        2 * FETCHES
    );
    assert!(with <= 1.5 * RTT_MS, "with FEC: p95 {with} ms");
    assert!(without >= 1_000.0, "without FEC: p95 {without} ms");
    assert!(
        slow_with * 4 <= slow_without,
        "{slow_with} vs {slow_without}"
    );
}
