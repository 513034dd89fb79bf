//! The bursty link model in the live lab's router (root only; skipped
//! without it unless `CI=true`): UDP probes through a down link that sends
//! only at a transmit opportunity every 20 ms wait for the next one, so
//! their round trips spread over the 20 ms above the base, where a plain
//! link keeps them within a millisecond or two. Both address families.

use brisk_live::echo::{self, EchoServer, PingConfig};
use brisk_live::{IpMode, Lab, LabConfig};
use brisk_sim::scenario::Scenario;
use std::net::SocketAddr;
use std::time::Duration;

/// Whether this machine can run live labs; says so when it cannot.
fn can_run_live(test: &str) -> bool {
    if brisk_live::sys::has_net_admin() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: the live tests need root (CAP_NET_ADMIN) in CI");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: SKIPPED: needs root (CAP_NET_ADMIN) for namespaces and TUN devices"
    );
    false
}

const BASE_MS: f64 = 10.0;
const INTERVAL_MS: f64 = 20.0;

/// Round trips of 150 probes, every 7 ms (out of step with the 20 ms
/// opportunities), in ms, sorted; and how late the router says it ran.
fn probe(mode: IpMode, bursts: bool) -> (Vec<f64>, f64) {
    let burst_line = if bursts {
        "bursts = { interval = \"20ms\" }\n"
    } else {
        ""
    };
    let text = format!(
        "duration = \"10s\"\n[link.down]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n{burst_line}\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n"
    );
    let mut config = LabConfig::new(
        Scenario::parse(&text, "bursts.toml")
            .expect("parses")
            .network,
    );
    config.ip = mode;
    let lab = Lab::up(config).expect("lab comes up");
    let server = SocketAddr::new(lab.server_bind_addr(), echo::ECHO_PORT);
    let _echo = EchoServer::start(lab.server_ns(), server).expect("echo server");
    let report = echo::ping(
        lab.client_ns(),
        SocketAddr::new(lab.server_addr(), echo::ECHO_PORT),
        PingConfig {
            interval: Duration::from_millis(7),
            count: 150,
            ..PingConfig::default()
        },
    )
    .expect("ping runs");
    let results = lab.finish(None, None).expect("lab finishes");
    assert_eq!(report.received, report.sent, "no probe may be lost");
    let f = &results.driver.fidelity;
    let late = f.down.delay_error_ms.p99 + f.up.delay_error_ms.p99;
    let mut rtts: Vec<f64> = report
        .rtts
        .iter()
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    rtts.sort_by(f64::total_cmp);
    (rtts, late)
}

fn at(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64) as usize).min(sorted.len() - 1)]
}

/// Attempts per family: the probes' timing is wall-clock, and a host busy
/// with other work can bunch a few sends or wake the router late.
const ATTEMPTS: usize = 3;

/// One family's run, judged; the reason when it misses.
fn check(mode: IpMode) -> Result<(), String> {
    let (plain, late_plain) = probe(mode, false);
    let (bursty, late) = probe(mode, true);
    let spread = |s: &[f64]| at(s, 0.9) - at(s, 0.1);
    eprintln!(
        "{mode:?}: plain p10 {:.2} p90 {:.2} ms; bursts p10 {:.2} p50 {:.2} p90 {:.2} p99 {:.2} max {:.2} ms; \
         router late {late_plain:.2} / {late:.2} ms",
        at(&plain, 0.1),
        at(&plain, 0.9),
        at(&bursty, 0.1),
        at(&bursty, 0.5),
        at(&bursty, 0.9),
        at(&bursty, 0.99),
        at(&bursty, 1.0),
    );
    // Waits spread over the interval: the middle 80% of round trips
    // span 16 ms when the 7 ms sends are on time, and at least half of
    // it when a loaded host bunches them, against a millisecond or two
    // for the plain link.
    if spread(&bursty) <= 0.5 * INTERVAL_MS {
        return Err(format!("bursts spread {:.2} ms", spread(&bursty)));
    }
    if spread(&plain) >= 0.25 * INTERVAL_MS + late_plain {
        return Err(format!("plain spread {:.2} ms", spread(&plain)));
    }
    // No probe waits more than one interval beyond the base (plus the
    // hosts and the router's own lateness), and none beats the base.
    if at(&bursty, 0.0) < BASE_MS {
        return Err(format!("a probe beat the base: {:.2} ms", at(&bursty, 0.0)));
    }
    let bound = BASE_MS + INTERVAL_MS + 3.0 + late;
    if at(&bursty, 0.99) >= bound {
        return Err(format!(
            "p99 {:.2} ms, bound {bound:.2} ms: {bursty:?}",
            at(&bursty, 0.99)
        ));
    }
    Ok(())
}

#[test]
fn probes_wait_for_the_next_transmit_opportunity_in_the_live_router() {
    if !can_run_live("probes_wait_for_the_next_transmit_opportunity_in_the_live_router") {
        return;
    }
    for mode in [IpMode::V4, IpMode::V6] {
        let mut misses = Vec::new();
        for attempt in 1..=ATTEMPTS {
            match check(mode) {
                Ok(()) => break,
                Err(why) => {
                    eprintln!("{mode:?}, attempt {attempt} of {ATTEMPTS}: {why}");
                    misses.push(why);
                }
            }
        }
        assert!(
            misses.len() < ATTEMPTS,
            "{mode:?}: every attempt missed: {misses:?}"
        );
    }
}
