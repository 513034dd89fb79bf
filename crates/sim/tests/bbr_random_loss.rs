//! BBR on the issue's lossy mobile path (10 Mbit/s, 220 ms RTT, a
//! 200-packet FIFO), on IPv4 and IPv6: a connection opened long after the
//! clock's zero starts like one opened at it (its first minimum RTT is not
//! taken for a stale one), which every fetch after a process's first 10 s
//! depends on.

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

/// The lossy path with `flows` (`[[flows]]` tables) for `duration`.
fn path(duration: &str, loss: &str, flows: &str) -> Scenario {
    let text = format!(
        r#"
duration = "{duration}"
[link.down]
rate = "10Mbit"
delay = "110ms"
loss = "{loss}"
[link.up]
rate = "10Mbit"
delay = "110ms"
[queue.fifo]
limit_packets = 200
{flows}
"#
    );
    Scenario::parse(&text, "bbr_random_loss.toml").unwrap()
}

/// A 50 KB fetch on a clean path takes the same time whether its
/// connection opens at 0 s or 30 s in: a BBR that took its first minimum
/// RTT for a stale one entered ProbeRtt on its first ACK (819 ms against
/// 1,102 ms).
#[test]
fn a_late_connection_fetches_as_fast_as_an_early_one() {
    let fetch = |name: &str, start: &str| {
        format!(
            "[[flows]]\nname = \"{name}\"\nkind = \"brisk\"\ncc = \"bbr\"\nstart = \"{start}\"\n\
             app = \"feed\"\nobjects = [\"50kB\"]\n"
        )
    };
    let flows = format!("{}{}", fetch("early", "0s"), fetch("late", "30s"));
    for ip in FAMILIES {
        let r = run_on(&path("35s", "0%", &flows), ip);
        let done = |name: &str| {
            flow(&r, name)
                .brisk
                .as_ref()
                .and_then(|b| b.completion_time_s)
                .unwrap_or_else(|| panic!("{ip:?}: {name} did not finish"))
        };
        let (early, late) = (done("early"), done("late"));
        assert!(
            (late - early).abs() <= 0.01 * early,
            "{ip:?}: early {early} s, late {late} s"
        );
    }
}
