//! The video call on datagrams against the same call on streams, on lossy
//! long paths, IPv4 and IPv6: each frame in unreliable datagrams with FEC
//! repair and a sender-side deadline should show fewer frozen and late
//! frames, and a shorter frame delay, than one stream per frame, which
//! waits a round trip for every retransmission.

mod common;

use brisk_sim::results::{FlowResults, FrameResults, Results};
use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

/// A 30 fps call alone on a 10 Mbit/s path of `rtt_ms` base RTT with
/// `loss` random loss each way, frames delivered as `delivery` says.
fn call(rtt_ms: u64, loss: &str, delivery: &str) -> Scenario {
    let one_way = rtt_ms / 2;
    let text = format!(
        "name = \"lossy-call\"\nduration = \"20s\"\n\
         [link.down]\nrate = \"10Mbit\"\ndelay = \"{one_way}ms\"\nloss = \"{loss}\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"{one_way}ms\"\nloss = \"{loss}\"\n\
         [[flows]]\nname = \"video\"\nkind = \"brisk\"\ncc = \"bbr\"\napp = \"video\"\n\
         fps = 30\ndelivery = \"{delivery}\"\n"
    );
    Scenario::parse(&text, "video_datagrams test").unwrap()
}

fn frames(r: &Results) -> (&FlowResults, &FrameResults) {
    let f = flow(r, "video");
    (f, f.brisk.as_ref().unwrap().frames.as_ref().unwrap())
}

/// Frame delay (capture to the last byte read) percentiles, in ms.
fn delay(f: &FlowResults) -> (f64, f64) {
    let l = f.brisk.as_ref().unwrap().message_latency_ms.unwrap();
    (l.p90, l.p99)
}

#[test]
fn datagrams_with_fec_beat_streams_on_lossy_long_paths() {
    for (rtt_ms, loss) in [(100, "3%"), (200, "5%")] {
        for ip in FAMILIES {
            let d = run_on(&call(rtt_ms, loss, "datagrams"), ip);
            let s = run_on(&call(rtt_ms, loss, "streams"), ip);
            let ((df, dfr), (sf, sfr)) = (frames(&d), frames(&s));
            let what = format!(
                "{ip:?} {rtt_ms} ms {loss}: datagrams {dfr:?} delay {:?}, streams {sfr:?} delay {:?}",
                delay(df),
                delay(sf)
            );
            println!("{what}");
            let (dt, st) = (
                &df.brisk.as_ref().unwrap().transport,
                &sf.brisk.as_ref().unwrap().transport,
            );
            println!(
                "  datagrams: sent {} expired {} received {}, repair packets {}, rebuilt {}; streams: retransmitted packets {}",
                dt.datagrams_sent,
                dt.datagrams_expired,
                dt.datagrams_received,
                dt.repair_packets_sent,
                dt.packets_rebuilt,
                st.packets_retransmitted
            );
            assert!(dt.data_intact && st.data_intact, "{what}");
            assert!(
                dt.repair_packets_sent > 0 && dt.packets_rebuilt > 0,
                "{what}"
            );
            assert_eq!(dt.packets_retransmitted, 0, "{what}");
            // Fewer frozen 100 ms windows, more frames on time.
            assert!(dfr.stall_fraction < sfr.stall_fraction, "{what}");
            let on_time = |f: &FrameResults| f.on_time as f64 / f.sent.max(1) as f64;
            assert!(on_time(dfr) > on_time(sfr), "{what}");
            // Shorter frame delay at the tail.
            let ((d90, d99), (s90, s99)) = (delay(df), delay(sf));
            assert!(d90 < s90 && d99 < s99, "{what}");
        }
    }
}
