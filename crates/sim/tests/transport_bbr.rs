//! BBR, the model-based controller, through the simulator: it keeps the
//! link busy under random loss where the loss-based CUBIC collapses (the
//! OK.ru seed's "packet loss != congestion", on its 1 Mbit/s link), keeps
//! no standing queue in a deep FIFO, follows rate changes, and shares.
//! Each case runs over IPv4 and IPv6; ratios are against CUBIC measured in
//! the same test on the same network.

mod common;

use brisk_sim::scenario::{IpFamily, Scenario, Traffic};
use brisk_sim::{Run, RunOptions, run};
use common::{FAMILIES, flow, run_on, share};

/// A network of `rate` each way, `rtt_ms` base RTT, `loss` on the data
/// direction, a FIFO of `fifo_packets`; `flows` are `[[flows]]` tables.
fn network(
    duration: &str,
    rate: &str,
    rtt_ms: u32,
    loss: &str,
    fifo_packets: u32,
    flows: &str,
) -> Scenario {
    let one_way = f64::from(rtt_ms) / 2.0;
    let text = format!(
        r#"
duration = "{duration}"
[link.down]
rate = {rate}
delay = "{one_way}ms"
loss = "{loss}"
[link.up]
rate = {rate}
delay = "{one_way}ms"
[queue.fifo]
limit_packets = {fifo_packets}
{flows}
"#
    );
    Scenario::parse(&text, "transport_bbr.toml").unwrap()
}

/// One bulk flow named "bulk" with controller `cc`.
fn bulk(cc: &str) -> String {
    format!("[[flows]]\nname = \"bulk\"\nkind = \"brisk\"\ncc = \"{cc}\"\n")
}

/// `a` and `b` as two bulk flows, `b` starting at `start_b`.
fn two(a: &str, b: &str, start_b: &str) -> String {
    format!(
        "[[flows]]\nname = \"a\"\nkind = \"brisk\"\ncc = \"{a}\"\n\
         [[flows]]\nname = \"b\"\nkind = \"brisk\"\ncc = \"{b}\"\nstart = \"{start_b}\"\n"
    )
}

/// `s` with ACK frequency off for every flow.
fn acking_every_second_packet(mut s: Scenario) -> Scenario {
    for f in &mut s.flows {
        if let Traffic::Brisk(b) = &mut f.traffic {
            b.ack_frequency = false;
        }
    }
    s
}

fn run_series(s: &Scenario, ip: IpFamily) -> Run {
    run(
        s,
        RunOptions {
            ip: Some(ip),
            series: true,
            ..Default::default()
        },
    )
}

/// Mbit/s of `name`'s packets (whole datagrams) through the bottleneck
/// between `from` and `to` seconds.
fn rate_between(run: &Run, name: &str, from: f64, to: f64) -> f64 {
    let series = run.outcome.series();
    let f = series.iter().find(|f| f.name == name).unwrap();
    let delivered_by = |t: f64| {
        f.delivered
            .iter()
            .take_while(|(at, _)| at.as_secs_f64() < t)
            .last()
            .map_or(0, |&(_, bytes)| bytes)
    };
    (delivered_by(to) - delivered_by(from)) as f64 * 8.0 / (to - from) / 1e6
}

/// The longest queueing delay `name`'s packets met between `from` and
/// `to` seconds, in ms.
fn worst_queue_ms(run: &Run, name: &str, from: f64, to: f64) -> f64 {
    let series = run.outcome.series();
    let f = series.iter().find(|f| f.name == name).unwrap();
    f.queue_delay
        .iter()
        .filter(|(at, _)| (from..to).contains(&at.as_secs_f64()))
        .map(|(_, d)| d.as_secs_f64() * 1e3)
        .fold(0.0, f64::max)
}

/// The seed's network (1 Mbit/s, a 50-packet FIFO, random loss on the data
/// direction), 20 s of one bulk flow. Utilization is goodput over the link
/// rate; Brisk's headers cap it near 95%. Measured (IPv4), BBR against
/// CUBIC: 95/95% at 0% and 20 ms, 90/86% at 5% and 20 ms, 91/93% at 0% and
/// 220 ms, 89/46% at 2% and 220 ms, 86/27% at 5% and 220 ms.
#[test]
fn random_loss_at_20ms_keeps_most_of_the_link() {
    random_loss_keeps_most_of_the_link_where_cubic_collapses(20);
}

#[test]
fn random_loss_at_220ms_keeps_most_of_the_link_where_cubic_collapses() {
    random_loss_keeps_most_of_the_link_where_cubic_collapses(220);
}

fn random_loss_keeps_most_of_the_link_where_cubic_collapses(rtt_ms: u32) {
    for ip in FAMILIES {
        let mut lossless = 0.0;
        for loss in [0, 1, 2, 5] {
            let at = |cc: &str| {
                let s = network(
                    "20s",
                    "\"1Mbit\"",
                    rtt_ms,
                    &format!("{loss}%"),
                    50,
                    &bulk(cc),
                );
                flow(&run_on(&s, ip), "bulk").goodput_mbps
            };
            let (bbr, cubic) = (at("bbr"), at("cubic"));
            let what = format!("{ip:?} {rtt_ms} ms {loss}%: BBR {bbr:.3} CUBIC {cubic:.3}");
            if loss == 0 {
                lossless = bbr;
                // Startup's rounds and one ProbeRtt cost more of 20 s
                // at 220 ms.
                let full = if rtt_ms == 20 { 0.9 } else { 0.85 };
                assert!(bbr > full, "{what}");
            }
            // BBR never does much worse than CUBIC and keeps most of its
            // loss-free rate; where CUBIC collapses (a long RTT and 2% or
            // more loss) BBR keeps 1.5 times as much at 2%, 2.5 at 5%.
            assert!(bbr > 0.95 * cubic, "{what}");
            assert!(bbr > 0.85 * lossless, "{what}");
            if rtt_ms == 220 && loss >= 2 {
                assert!(bbr > 1.5 * cubic, "{what}");
            }
            if rtt_ms == 220 && loss == 5 {
                assert!(cubic < 0.4 * lossless, "{what}");
                assert!(bbr > 2.5 * cubic, "{what}");
            }
        }
    }
}

/// Loss in both directions (lost data and lost ACKs): every byte arrives,
/// intact and in order.
#[test]
fn every_byte_arrives_under_loss_both_ways() {
    let bytes = 2_000_000;
    let flows = format!(
        "[[flows]]\nname = \"bulk\"\nkind = \"brisk\"\ncc = \"bbr\"\nbytes = \"{bytes}B\"\n"
    );
    let mut s = network("15s", "\"10Mbit\"", 20, "5%", 100, &flows);
    s.network.link.up.loss = s.network.link.down.loss;
    for ip in FAMILIES {
        let r = run_on(&s, ip);
        let f = flow(&r, "bulk");
        let b = f.brisk.as_ref().unwrap();
        let what = format!("{ip:?} {:?}", b.transport);
        assert_eq!((f.sent_bytes, f.delivered_bytes), (bytes, bytes), "{what}");
        assert!(b.transport.data_intact, "{what}");
        assert!(b.transport.error.is_none(), "{what}");
        assert!(b.transport.packets_lost > 0, "{what}");
        // 2 MB at 10 Mbit/s is 1.6 s; loss may stretch it, not collapse it.
        let done = b.completion_time_s.unwrap();
        assert!(done < 4.0, "{what} done at {done}");
    }
}

/// A 400-packet FIFO (480 ms) at 10 Mbit/s and 20 ms: CUBIC fills it and
/// sits behind a standing queue of about 400 ms; BBR paces at the
/// bottleneck rate and keeps the queue near empty. Measured: RTT p50 23 ms
/// for BBR, 434 ms for CUBIC, both with the link full.
#[test]
fn a_deep_fifo_gets_no_standing_queue() {
    for ip in FAMILIES {
        let at = |cc: &str| {
            let s = network("10s", "\"10Mbit\"", 20, "0%", 400, &bulk(cc));
            let r = run_on(&s, ip);
            (r.link.utilization, flow(&r, "bulk").rtt_ms.p50)
        };
        let ((bbr_util, bbr_rtt), (cubic_util, cubic_rtt)) = (at("bbr"), at("cubic"));
        let what =
            format!("{ip:?}: BBR {bbr_util:.3} {bbr_rtt} ms, CUBIC {cubic_util:.3} {cubic_rtt} ms");
        assert!(bbr_util > 0.95 && cubic_util > 0.95, "{what}");
        assert!(bbr_rtt < 40.0, "{what}");
        assert!(bbr_rtt * 8.0 < cubic_rtt, "{what}");
    }
}

/// A 30 fps video call alone on 4 Mbit/s, 20 ms, a 100-packet FIFO. The
/// encoder sizes frames from what the controller means to send per RTT;
/// for BBR that is its bandwidth estimate, not its window of two BDPs, so
/// frames fit the link and none waits behind the last (sized from the
/// window, frames took 86 ms at the median and four were abandoned).
/// CUBIC, sized from its window, fills the FIFO and misses the deadline.
#[test]
fn a_video_call_over_bbr_sizes_frames_to_the_link() {
    for ip in FAMILIES {
        let call = |cc: &str| {
            let app = format!(
                "[[flows]]\nname = \"video\"\nkind = \"brisk\"\ncc = \"{cc}\"\n\
                 app = \"video\"\nfps = 30\n"
            );
            let r = run_on(&network("20s", "\"4Mbit\"", 20, "0%", 100, &app), ip);
            let b = flow(&r, "video").brisk.clone().unwrap();
            (
                b.message_latency_ms.unwrap(),
                b.frames.unwrap(),
                r.link.utilization,
            )
        };
        let ((bbr_latency, b, bbr_util), (cubic_latency, c, _)) = (call("bbr"), call("cubic"));
        let what = format!(
            "{ip:?}: BBR latency {bbr_latency:?} util {bbr_util:.3} {b:?}; \
             CUBIC latency {cubic_latency:?} {c:?}"
        );
        assert!(bbr_latency.p50 < 50.0, "{what}");
        assert!(b.abandoned == 0 && b.on_time + 2 >= b.sent, "{what}");
        assert!(b.stall_fraction < 0.01, "{what}");
        // The frames still use most of the link.
        assert!(bbr_util > 0.7, "{what}");
        assert!(cubic_latency.p50 > 4.0 * bbr_latency.p50, "{what}");
        assert!(c.stall_fraction > 0.5, "{what}");
    }
}

/// 10 Mbit/s, a drop to 2 Mbit/s at 4 s, back to 10 at 8 s. BBR's
/// bandwidth filter remembers the old rate for 10 rounds, so after the drop
/// it fills the queue up to its window (two old BDPs, about 200 ms at the
/// new rate) until the filter forgets, then drains it; after the rise it
/// climbs 25% per gain cycle. Measured: 2.0 Mbit/s with 200 ms of queue
/// for 3 s, 27 ms in the fourth second; 7.6 Mbit/s in the first second
/// after the rise, 9 over the two seconds after that.
#[test]
fn follows_a_rate_step_down_and_up() {
    let rate = r#"{ schedule = [["0s", "10Mbit"], ["4s", "2Mbit"], ["8s", "10Mbit"]] }"#;
    let s = network("11s", rate, 20, "0%", 200, &bulk("bbr"));
    for ip in FAMILIES {
        let r = run_series(&s, ip);
        let rate = |from, to| rate_between(&r, "bulk", from, to);
        let what = format!("{ip:?}");
        assert!(rate(2.5, 4.0) > 9.5, "{what} {}", rate(2.5, 4.0));
        assert!(worst_queue_ms(&r, "bulk", 2.5, 4.0) < 15.0, "{what}");
        assert!(rate(4.5, 8.0) > 1.9, "{what} {}", rate(4.5, 8.0));
        assert!(worst_queue_ms(&r, "bulk", 7.0, 8.0) < 50.0, "{what}");
        // ProbeRtt (the 10 s old minimum) costs a quarter second near 10 s.
        assert!(rate(9.0, 11.0) > 8.5, "{what} {}", rate(9.0, 11.0));
    }
}

/// Two BBR flows on 10 Mbit/s, 20 ms, a 100-packet FIFO, starting together
/// or 2 s apart: each gets roughly half. Measured: 53/47% and 47/53%.
#[test]
fn two_bbr_flows_share_roughly_fairly() {
    for start in ["0s", "2s"] {
        let s = network(
            "20s",
            "\"10Mbit\"",
            20,
            "0%",
            100,
            &two("bbr", "bbr", start),
        );
        for ip in FAMILIES {
            let r = run_on(&s, ip);
            let a = share(&r, "a");
            assert!((0.35..0.65).contains(&a), "{ip:?} start {start}: share {a}");
            assert!(r.link.utilization > 0.95, "{ip:?}");
        }
    }
}

/// BBR beside CUBIC through FIFOs of 10, 30, 100 and 400 packets (0.6,
/// 1.8, 6 and 24 BDPs at 10 Mbit/s, 20 ms). BBRv1 keeps two BDPs of its
/// own estimate in flight whatever the queue and whatever CUBIC's losses,
/// while CUBIC grows into the buffer. Measured (IPv4), CUBIC's share: 6%
/// at 10 packets (BBR's probes keep overflowing a buffer smaller than the
/// BDP and CUBIC halves each time: the known BBRv1 weakness BBRv2's loss
/// bound on in-flight data addresses), 34% at 30, 87% at 100 and 97% at
/// 400 (CUBIC's standing queue sets the RTT, BBR's window is two BDPs of
/// the empty path until its minimum RTT expires, and its conservation
/// answers CUBIC's overflows). Bounds: CUBIC is never starved outright,
/// and from 1.8 BDPs of buffer up it keeps a quarter.
///
/// At 30 packets one run's split is chaotic: starting CUBIC 0 to 19 ms
/// after BBR moves its share between 0.35 and 0.54 (IPv4) and 0.37 and
/// 0.52 (IPv6). Changing BBR's pacing rate by about 1e-4 (the pacer taking
/// BBR's rate instead of a window rounded up to a byte) moved the IPv6 run
/// at 0 ms from 0.38 to 0.52, while the mean over those 20 starts moved by
/// under 0.01. So that case is judged on ten runs, CUBIC starting 0 to 9 ms
/// after BBR: every one keeps a quarter, and their mean (0.41 on IPv4,
/// 0.43 on IPv6) stays under half.
///
/// Both flows are acknowledged every second packet, as TCP's were in the
/// measurements these shapes are known from. With CUBIC asking for sparser
/// ACKs (`ack_frequency`, the default) the shape is the same but the even
/// split comes a few packets of buffer earlier: CUBIC's share at 30
/// packets is 0.56 (IPv4) and 0.44 (IPv6) instead of 0.38 and 0.40, at 25
/// and 35 packets within 0.08 of the every-second-packet figures.
#[test]
fn beside_cubic_in_a_fifo_does_not_starve_it() {
    let s = network(
        "20s",
        "\"10Mbit\"",
        20,
        "0%",
        10,
        &two("bbr", "cubic", "0s"),
    );
    let s = acking_every_second_packet(s);
    for ip in FAMILIES {
        let r = run_on(&s, ip);
        let cubic = share(&r, "b");
        assert!(
            (0.03..0.25).contains(&cubic),
            "{ip:?} FIFO 10: CUBIC share {cubic}"
        );
    }
    for ip in FAMILIES {
        let mut shares = Vec::new();
        for offset_ms in 0..10 {
            let s = network(
                "20s",
                "\"10Mbit\"",
                20,
                "0%",
                30,
                &two("bbr", "cubic", &format!("{offset_ms}ms")),
            );
            let r = run_on(&acking_every_second_packet(s), ip);
            let cubic = share(&r, "b");
            assert!(
                cubic > 0.25,
                "{ip:?} FIFO 30, CUBIC {offset_ms} ms later: CUBIC share {cubic}"
            );
            assert!(r.link.utilization > 0.95, "{ip:?} FIFO 30 {offset_ms} ms");
            shares.push(cubic);
        }
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        assert!(
            mean < 0.5,
            "{ip:?} FIFO 30: CUBIC's mean share {mean} ({shares:?})"
        );
    }
    for fifo in [100, 400] {
        let s = network(
            "20s",
            "\"10Mbit\"",
            20,
            "0%",
            fifo,
            &two("bbr", "cubic", "0s"),
        );
        let s = acking_every_second_packet(s);
        for ip in FAMILIES {
            let r = run_on(&s, ip);
            let cubic = share(&r, "b");
            assert!(cubic > 0.25, "{ip:?} FIFO {fifo}: CUBIC share {cubic}");
            assert!(r.link.utilization > 0.95, "{ip:?} FIFO {fifo}");
        }
    }
}
