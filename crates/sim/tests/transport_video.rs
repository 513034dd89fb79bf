//! WWDC 2023's video call, on the scenario files in `scenarios/`
//! (shortened): a 30 fps call over Brisk sharing a 10 Mbit/s, 20 ms link
//! with two CUBIC downloads. With L4S (Prague through DualPI2) the seed
//! reports a worst-case RTT under 25 ms, loss near zero and a received
//! frame rate above 25 fps; without it, RTTs up to 45 ms, heavy loss and
//! stalls.

use brisk_sim::results::{FlowResults, FrameResults, Results};
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use std::path::Path;
use std::time::Duration;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

fn run_file(file: &str, secs: u64, ip: IpFamily) -> Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let mut s = Scenario::load(&path).unwrap();
    s.duration = Duration::from_secs(secs);
    run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    )
    .results
}

fn video(r: &Results) -> (&FlowResults, &FrameResults) {
    let f = r.flows.iter().find(|f| f.name == "video").unwrap();
    (f, f.brisk.as_ref().unwrap().frames.as_ref().unwrap())
}

#[test]
fn video_call_with_l4s_keeps_rtt_under_25ms_no_loss_and_full_frame_rate() {
    for ip in FAMILIES {
        let l4s = run_file("brisk-video-l4s.toml", 8, ip);
        let (f, frames) = video(&l4s);
        let what = format!("{ip:?} rtt {:?} loss {} {frames:?}", f.rtt_ms, f.loss_rate);
        assert!(f.rtt_measured && f.rtt_ms.p99 < 25.0, "{what}");
        assert!(f.loss_rate < 0.001, "{what}");
        assert!(frames.sent >= 8 * 30 - 1, "{what}");
        assert!(frames.on_time as f64 >= 0.98 * frames.sent as f64, "{what}");
        assert!(
            frames.fps_min >= 25.0 && frames.stall_fraction < 0.01,
            "{what}"
        );
        let t = &f.brisk.as_ref().unwrap().transport;
        assert_eq!((t.ecn_state.as_str(), t.ecn_codepoint), ("capable", "ect1"));
        // The call got a real share of the link, not a trickle.
        assert!(f.goodput_mbps > 2.0, "{what} goodput {}", f.goodput_mbps);

        // The same call without L4S: the 20-packet FIFO sets the seed's
        // 45 ms worst case, and the call loses packets like the downloads.
        let legacy = run_file("brisk-video-legacy.toml", 8, ip);
        let (g, _) = video(&legacy);
        assert!(
            (40.0..50.0).contains(&g.rtt_ms.p99),
            "{ip:?} legacy {:?}",
            g.rtt_ms
        );
        assert!(g.loss_rate > 0.01, "{ip:?} legacy loss {}", g.loss_rate);
        let lat = |r: &FlowResults| r.brisk.as_ref().unwrap().message_latency_ms.unwrap();
        assert!(
            lat(g).p99 > lat(f).p99,
            "{ip:?} frame latency {:?} {:?}",
            lat(g),
            lat(f)
        );
    }
}

#[test]
fn video_call_behind_a_bloated_buffer_stalls() {
    for ip in FAMILIES {
        let r = run_file("brisk-video-legacy-deep.toml", 8, ip);
        let (f, frames) = video(&r);
        let what = format!("{ip:?} rtt {:?} {frames:?}", f.rtt_ms);
        // Frames arrive, but behind ~400 ms of queue: past the deadline.
        assert!(f.rtt_ms.p50 > 300.0, "{what}");
        assert!(frames.received > frames.sent / 2, "{what}");
        assert!(frames.on_time * 10 < frames.sent, "{what}");
        assert!(
            frames.stall_fraction > 0.9 && frames.fps_mean < 5.0,
            "{what}"
        );
    }
}
