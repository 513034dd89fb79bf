//! A handshake under heavy random loss on both directions completes within
//! the 5 s that `brisk get` and `brisk-io` wait for it, over 200 seeds on
//! IPv4 and IPv6. Each lost handshake message is resent after a probe
//! timeout (a second, from the initial RTT of 333 ms); were the resends to
//! double without bound, the fourth attempt would leave 7 s in, and at
//! 20% loss each way about one handshake in 200 missed the 5 s.

use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];
const SEEDS: u64 = 200;
/// How long a client waits for the handshake by default.
const CONNECT_TIMEOUT_MS: f64 = 5_000.0;

/// The handshake time in ms of a small transfer with `loss` on both
/// directions (infinite if it never completed).
fn handshake_ms(loss: &str, seed: u64, ip: IpFamily) -> f64 {
    let text = format!(
        r#"
duration = "60s"
seed = {seed}
[link.down]
rate = "20Mbit"
delay = "10ms"
loss = "{loss}"
[link.up]
rate = "20Mbit"
delay = "10ms"
loss = "{loss}"
[queue.fifo]
limit_packets = 100
[[flows]]
kind = "brisk"
bytes = "10000B"
"#
    );
    let s = Scenario::parse(&text, "handshake.toml").unwrap();
    let r = run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    );
    let b = r.results.flows[0].brisk.as_ref().unwrap();
    b.transport.handshake_ms.unwrap_or(f64::INFINITY)
}

fn all_within_the_connect_timeout(loss: &str) {
    let mut ms: Vec<f64> = FAMILIES
        .iter()
        .flat_map(|&ip| (1..=SEEDS).map(move |seed| handshake_ms(loss, seed, ip)))
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q) as usize];
    eprintln!(
        "{loss} loss both ways, {} handshakes: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    let late = ms.iter().filter(|&&m| m > CONNECT_TIMEOUT_MS).count();
    assert_eq!(late, 0, "{loss}: {late} handshakes took over 5 s");
}

#[test]
fn at_10_percent_loss_both_ways() {
    all_within_the_connect_timeout("10%");
}

#[test]
fn at_20_percent_loss_both_ways() {
    all_within_the_connect_timeout("20%");
}
