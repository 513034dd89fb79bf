//! Prague's RTT independence: two Prague flows at 10 and 160 ms base RTT
//! through one Linux-default DualPI2. A window-based flow's rate goes as
//! 1/RTT, so with no correction the 10 ms flow would take 16 times the
//! other's rate; the L4S team's reports show Prague implementations
//! splitting worse than that. Brisk's Prague grows every flow's window as
//! a 25 ms flow's would (docs/PROTOCOL.md): the split must stay within 2:1.

mod l4s_common;

use brisk_sim::scenario::IpFamily;
use l4s_common::{DUALPI2_LINUX, FAMILIES, bulk, dumbbell, rate_mbps, run_series, series};
use std::time::Duration;

/// The short- and long-RTT flows' rates over the last half of the run.
fn split(mbit: u64, ip: IpFamily) -> (f64, f64) {
    let secs = 40;
    let s = dumbbell(
        &format!("\"{mbit}Mbit\""),
        DUALPI2_LINUX,
        "",
        &[bulk("short", "prague", 10), bulk("long", "prague", 160)],
        secs,
    );
    let (_, all) = run_series(&s, ip);
    let (from, to) = (Duration::from_secs(secs / 2), Duration::from_secs(secs));
    (
        rate_mbps(series(&all, "short"), from, to),
        rate_mbps(series(&all, "long"), from, to),
    )
}

#[test]
fn prague_at_10ms_and_160ms_split_within_two_to_one() {
    for mbit in [20, 50] {
        for ip in FAMILIES {
            let (short, long) = split(mbit, ip);
            let ratio = short / long;
            let what = format!("{mbit} Mbit/s {ip:?}: 10 ms {short:.2}, 160 ms {long:.2} Mbit/s");
            println!("{what}, ratio {ratio:.2}");
            assert!((0.5..=2.0).contains(&ratio), "{what}, ratio {ratio:.2}");
            assert!(short + long > 0.9 * mbit as f64, "{what}");
        }
    }
}
