//! A phone's transfer across address changes, over IPv4 and IPv6: the
//! sender's NAT rebinds its port every 15 s and every second time the
//! phone moves to another network (`nat_rebind_every`, `migrate_every`).
//! Every byte must arrive intact, and no move may stall delivery for more
//! than one round trip and one probe timeout.

use brisk_sim::nat::Change;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use brisk_time::Instant;
use std::time::Duration;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// The peer's largest ACK delay (the transport's default): part of the
/// probe timeout.
const MAX_ACK_DELAY: Duration = Duration::from_millis(25);

fn scenario(bytes: &str, duration: &str, moves: &str) -> Scenario {
    let text = format!(
        r#"
duration = "{duration}"
[link.down]
rate = "4Mbit"
delay = "10ms"
[link.up]
rate = "4Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 20
[[flows]]
kind = "brisk"
bytes = "{bytes}"
{moves}
"#
    );
    Scenario::parse(&text, "migration.toml").unwrap()
}

/// The longest wait between two deliveries to the receiver that spans
/// `at` or starts within a second after it.
fn stall_around(delivered: &[(Instant, u64)], at: Instant) -> Duration {
    delivered
        .windows(2)
        .filter(|w| w[1].0 >= at && w[0].0 <= at + Duration::from_secs(1))
        .map(|w| w[1].0 - w[0].0)
        .max()
        .unwrap_or_default()
}

/// The sender's last RTT sample before `at`.
fn rtt_before(samples: &[(Instant, Duration)], at: Instant) -> Duration {
    samples
        .iter()
        .rev()
        .find(|(t, _)| *t < at)
        .map(|(_, r)| *r)
        .unwrap_or_default()
}

#[test]
fn ten_migrations_and_a_rebinding_every_15s_lose_nothing_and_stall_less_than_an_rtt_and_a_pto() {
    let s = scenario(
        "160MB",
        "400s",
        "migrate_every = \"30s\"\nnat_rebind_every = \"15s\"",
    );
    for ip in FAMILIES {
        let r = run(
            &s,
            RunOptions {
                ip: Some(ip),
                series: true,
                ..Default::default()
            },
        );
        let f = &r.results.flows[0];
        let b = f.brisk.as_ref().unwrap();
        assert!(b.transport.error.is_none(), "{ip:?}: {:?}", b.transport);
        assert!(b.transport.data_intact, "{ip:?}: {:?}", b.transport);
        let done = b.completion_time_s.expect("the transfer completed");
        let moves = &r.outcome.moves()[0];
        let during: Vec<_> = moves
            .iter()
            .filter(|(t, _)| t.as_secs_f64() < done)
            .collect();
        let migrations = during
            .iter()
            .filter(|(_, c)| *c == Change::NewNetwork)
            .count();
        let rebindings = during.len() - migrations;
        assert!(migrations >= 10 && rebindings >= 10, "{ip:?}: {moves:?}");
        let series = &r.outcome.series()[0];
        let mut stalls = Vec::new();
        for &(at, change) in &during {
            let rtt = rtt_before(&series.rtt, *at);
            // The smallest probe timeout that RTT allows (no variance).
            let bound = rtt + rtt + MAX_ACK_DELAY;
            let stall = stall_around(&series.delivered, *at);
            eprintln!(
                "{ip:?} {:>6.1} s {:<13} stall {:>6.1} ms (RTT {:>5.1} ms, bound {:>6.1} ms)",
                at.as_secs_f64(),
                match change {
                    Change::NewNetwork => "new network",
                    Change::Rebinding => "NAT rebinding",
                },
                stall.as_secs_f64() * 1e3,
                rtt.as_secs_f64() * 1e3,
                bound.as_secs_f64() * 1e3,
            );
            assert!(stall <= bound, "{ip:?} at {at:?}: {stall:?} > {bound:?}");
            stalls.push(stall);
        }
        stalls.sort();
        let st = b.transport.clone();
        eprintln!(
            "{ip:?}: {migrations} migrations, {rebindings} rebindings, completed in {done:.1} s, \
             stall max {:.1} ms p50 {:.1} ms, data intact {}; {:?}",
            stalls[stalls.len() - 1].as_secs_f64() * 1e3,
            stalls[stalls.len() / 2].as_secs_f64() * 1e3,
            st.data_intact,
            f.delivered_bytes
        );
    }
}

#[test]
fn move_fields_are_checked_with_their_line() {
    let text = "duration = \"10s\"\n[[flows]]\nkind = \"brisk\"\nmigrate_every = \"0s\"\n";
    let e = Scenario::parse(text, "m.toml").unwrap_err().to_string();
    assert!(e.contains("migrate_every") && e.contains("line 4"), "{e}");
    let text = "duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\nnat_rebind_every = \"15s\"\n";
    let e = Scenario::parse(text, "m.toml").unwrap_err().to_string();
    assert!(
        e.contains("nat_rebind_every") && e.contains("line 5"),
        "{e}"
    );
}
