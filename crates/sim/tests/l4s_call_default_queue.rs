//! The L4S video call of the lab's "L4S video call" section
//! (`lab/default/l4s-call/l4s.toml`): a 30 fps call over Prague beside two
//! CUBIC downloads through a 10 Mbit/s DualPI2 with Linux's defaults (1 ms
//! step, 10% classic protection), 20 ms base RTT, 20 s. Any change to
//! Prague's increase or its answer to marks shows here first: the call is
//! application-limited between frames, its encoder sizes each frame from
//! Prague's window, and its packets queue beside classic ones.

mod common;

use brisk_sim::results::{FlowResults, FrameResults, Results};
use brisk_sim::scenario::{IpFamily, Scenario};
use std::path::Path;
use std::time::Duration;

fn run_call(ip: IpFamily, secs: u64) -> Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/default/l4s-call/l4s.toml");
    let mut s = Scenario::load(&path).unwrap();
    s.duration = Duration::from_secs(secs);
    common::run_on(&s, ip)
}

fn video(r: &Results) -> (&FlowResults, &FrameResults) {
    let f = common::flow(r, "video");
    (f, f.brisk.as_ref().unwrap().frames.as_ref().unwrap())
}

/// The lab section's checks: RTT p99 at most 5 ms above the 20 ms base,
/// at most 1% of packets lost, at most 10% of seconds below 25 fps; over
/// the full 20 s and over the lab's quick 10 s, where the start-up weighs
/// twice as much.
#[test]
fn the_l4s_call_through_default_dualpi2_keeps_its_frame_rate_and_rtt() {
    for (ip, secs) in common::FAMILIES
        .into_iter()
        .flat_map(|ip| [(ip, 20), (ip, 10)])
    {
        let r = run_call(ip, secs);
        let (f, frames) = video(&r);
        let what = format!(
            "{ip:?}, {secs} s: rtt p50 {:.1} p99 {:.1} ms, loss {:.4}, goodput {:.2} Mbit/s, {frames:?}",
            f.rtt_ms.p50, f.rtt_ms.p99, f.loss_rate, f.goodput_mbps
        );
        println!("{what}");
        assert!(f.rtt_measured && f.rtt_ms.p99 <= 25.0, "{what}");
        assert!(f.loss_rate <= 0.01, "{what}");
        assert!(frames.below_25_fps_fraction <= 0.10, "{what}");
    }
}
