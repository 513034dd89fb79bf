//! A probe sees the same queue wherever its send times fall against other
//! traffic: moving a ping's interval a few microseconds onto or off a
//! constant-rate load's grid changes neither its loss nor its round trip
//! beyond sampling noise. On exact grids the engine's fixed order for
//! simultaneous events decided every tie against the ping (94% loss on
//! the grid against 57% off it, in the 10 Mbit/s FIFO below).

mod common;

use brisk_sim::results::FlowResults;
use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

/// `load` of 1500-byte datagrams into a 10 Mbit/s, 200-packet FIFO beside a
/// ping every `interval`, for `secs`.
fn overload(load: &str, interval: &str, secs: u32, jitter: Option<&str>) -> Scenario {
    let jitter = jitter.map_or(String::new(), |j| format!("send_jitter = \"{j}\"\n"));
    let text = format!(
        r#"duration = "{secs}s"
seed = 1
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 200
[[flows]]
name = "load"
kind = "cbr"
rate = "{load}"
size = "1500B"
{jitter}
[[flows]]
name = "ping"
kind = "ping"
interval = "{interval}"
{jitter}
"#
    );
    Scenario::parse(&text, "probe-phase.toml").unwrap()
}

fn ping_of(s: &Scenario, ip: brisk_sim::scenario::IpFamily) -> FlowResults {
    flow(&run_on(s, ip), "ping").clone()
}

/// The offset the issue's report moved the ping by: 37 microseconds.
const OFF_GRID: f64 = 0.0371;

#[test]
fn ping_loss_and_rtt_do_not_depend_on_the_loads_grid() {
    // Loads whose 1500-byte interval divides each probe interval exactly
    // (12 Mbit/s: 1 ms; 15 Mbit/s: 0.8 ms).
    for ip in FAMILIES {
        for load in ["12Mbit", "15Mbit"] {
            for ms in [20.0, 37.0, 50.0, 100.0] {
                // About 4,000 probes each, so sampling noise stays near 1%.
                let secs = (4000.0 * ms / 1000.0) as u32;
                let on = ping_of(&overload(load, &format!("{ms}ms"), secs, None), ip);
                let off_iv = format!("{}ms", ms + OFF_GRID);
                let off = ping_of(&overload(load, &off_iv, secs, None), ip);
                let what = format!("{ip:?} {load} every {ms} ms");
                assert!(
                    (on.loss_rate - off.loss_rate).abs() < 0.04,
                    "{what}: loss {:.3} on the grid, {:.3} off it",
                    on.loss_rate,
                    off.loss_rate
                );
                // The queue is full: every answered probe waits about the
                // whole queue (200 x 1.2 ms) plus the base 20 ms.
                for p in [&on, &off] {
                    assert!(
                        p.rtt_ms.p50 > 240.0 && p.rtt_ms.p50 < 270.0,
                        "{what}: median RTT {:.1} ms",
                        p.rtt_ms.p50
                    );
                }
                assert!(
                    (on.rtt_ms.p50 - off.rtt_ms.p50).abs() < 0.03 * off.rtt_ms.p50,
                    "{what}: median RTT {:.1} ms on the grid, {:.1} off it",
                    on.rtt_ms.p50,
                    off.rtt_ms.p50
                );
                // A full drop-tail queue has room part of the time only.
                assert!(
                    (0.2..0.8).contains(&on.loss_rate),
                    "{what}: loss {:.3}",
                    on.loss_rate
                );
            }
        }
    }
}

#[test]
fn exact_grids_still_show_the_phase_effect_when_asked_for() {
    // With `send_jitter = "0s"` both sources keep their exact grids, and
    // the engine's fixed order of simultaneous events loses the ping at
    // nearly every probe: the artifact the default timing removes. This
    // holds the knob to its meaning and the test above to a real effect.
    for ip in FAMILIES {
        let on = ping_of(&overload("12Mbit", "50ms", 200, Some("0s")), ip);
        let jittered = ping_of(&overload("12Mbit", "50ms", 200, None), ip);
        assert!(on.loss_rate > 0.9, "{ip:?}: loss {:.3}", on.loss_rate);
        assert!(
            jittered.loss_rate < on.loss_rate - 0.3,
            "{ip:?}: {:.3} with host timing, {:.3} on exact grids",
            jittered.loss_rate,
            on.loss_rate
        );
    }
}

#[test]
fn two_identical_loads_share_a_full_fifo_evenly() {
    // Two 6 Mbit/s sources that start together on the same grid: with
    // exact grids the first in the engine's order wins every tie for a
    // freed slot; with host timing both lose about the same share.
    for ip in FAMILIES {
        let text = r#"duration = "60s"
seed = 3
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 100
[[flows]]
name = "a"
kind = "cbr"
rate = "6Mbit"
[[flows]]
name = "b"
kind = "cbr"
rate = "6Mbit"
"#;
        let r = run_on(&Scenario::parse(text, "twins.toml").unwrap(), ip);
        let (a, b) = (flow(&r, "a").loss_rate, flow(&r, "b").loss_rate);
        assert!(a > 0.1 && b > 0.1, "{ip:?}: loss {a:.3} and {b:.3}");
        assert!((a - b).abs() < 0.02, "{ip:?}: loss {a:.3} against {b:.3}");
    }
}

#[test]
fn the_shipped_fifo_overload_reads_the_same_on_and_off_the_grid() {
    // The repository's first example, as shipped (a ping every 50 ms), and
    // with the ping moved 37 microseconds off the load's grid.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fifo-overload.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("interval = \"50ms\""), "the example changed");
    let off = text.replace("interval = \"50ms\"", "interval = \"50.0371ms\"");
    for ip in FAMILIES {
        let on = ping_of(&Scenario::parse(&text, "on.toml").unwrap(), ip);
        let off = ping_of(&Scenario::parse(&off, "off.toml").unwrap(), ip);
        assert!(
            (on.loss_rate - off.loss_rate).abs() < 0.04,
            "{ip:?}: loss {:.3} on the grid, {:.3} off it",
            on.loss_rate,
            off.loss_rate
        );
        assert!(
            (on.rtt_ms.p50 - off.rtt_ms.p50).abs() < 0.03 * off.rtt_ms.p50,
            "{ip:?}: median RTT {:.1} ms on the grid, {:.1} off it",
            on.rtt_ms.p50,
            off.rtt_ms.p50
        );
    }
}
