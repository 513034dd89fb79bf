//! The ACK-frequency extension against its baseline, an ACK every second
//! packet: the same run with `ack_frequency = false`. Fewer ACKs must cost
//! nothing the user feels: goodput, queue delay (L4S's above all), loss
//! and loss recovery stay where the baseline has them. Each case runs
//! over IPv4 and IPv6.

mod common;

use brisk_sim::results::Results;
use brisk_sim::scenario::{IpFamily, Scenario, Traffic};
use common::{FAMILIES, flow, run_on, scenario, share};

/// `s` with every brisk flow's ACK frequency on or off.
fn with_ack_frequency(s: &Scenario, on: bool) -> Scenario {
    let mut s = s.clone();
    for f in &mut s.flows {
        if let Traffic::Brisk(b) = &mut f.traffic {
            b.ack_frequency = on;
        }
    }
    s
}

/// The run with the extension and the baseline run, on `ip`.
fn both(s: &Scenario, ip: IpFamily) -> (Results, Results) {
    (
        run_on(&with_ack_frequency(s, true), ip),
        run_on(&with_ack_frequency(s, false), ip),
    )
}

/// The receiver's ACK packets and the sender's ACK_FREQUENCY frames.
fn acks(r: &Results, name: &str) -> (u64, u64) {
    let t = &flow(r, name).brisk.as_ref().unwrap().transport;
    (t.receiver_acks, t.ack_frequency_sent)
}

#[test]
fn reference_network_a_fifth_of_the_acks_same_goodput_and_delay() {
    // The network of `brisk bench`: 100 Mbit/s, 20 ms, FQ-CoDel, CUBIC.
    let s = scenario("brisk-ack-frequency.toml", 6);
    for ip in FAMILIES {
        let (on, off) = both(&s, ip);
        let (acks_on, frames) = acks(&on, "cubic");
        let (acks_off, none) = acks(&off, "cubic");
        let (c_on, c_off) = (flow(&on, "cubic"), flow(&off, "cubic"));
        let what = format!(
            "{ip:?}: acks {acks_on} vs {acks_off}, {frames} frames, goodput {} vs {}",
            c_on.goodput_mbps, c_off.goodput_mbps
        );
        assert_eq!(none, 0, "{what}");
        assert!((1..50).contains(&frames), "a handful of requests: {what}");
        assert!(acks_on * 4 < acks_off, "{what}");
        assert!(c_on.goodput_mbps > 0.99 * c_off.goodput_mbps, "{what}");
        assert!(c_on.goodput_mbps > 85.0, "{what}");
        // Its own packets' queueing: ten packets per ACK leave in paced
        // bursts, at most a millisecond more.
        assert!(
            c_on.queue_delay_ms.p99 < c_off.queue_delay_ms.p99 + 1.0,
            "{what}; queue delay p99 {} vs {}",
            c_on.queue_delay_ms.p99,
            c_off.queue_delay_ms.p99
        );
        // The ping beside it sees the same queue.
        let (p_on, p_off) = (flow(&on, "ping"), flow(&off, "ping"));
        assert!(
            p_on.rtt_ms.p99 < p_off.rtt_ms.p99 + 1.0,
            "{what}; ping p99 {} vs {}",
            p_on.rtt_ms.p99,
            p_off.rtt_ms.p99
        );
        assert!(
            on.link.utilization > 0.95 && off.link.utilization > 0.95,
            "{what}"
        );
        assert!(c_on.brisk.as_ref().unwrap().transport.data_intact);
    }
}

/// The reference network (100 Mbit/s each way, 10 ms one-way delay) for
/// `secs`, with `link` added to both directions, `queue` and brisk bulk
/// flows of the given names and controllers.
fn network_100m(secs: u64, link: &str, queue: &str, flows: &[(&str, &str)]) -> Scenario {
    let mut text = format!("duration = \"{secs}s\"\n");
    for dir in ["down", "up"] {
        text += &format!("[link.{dir}]\nrate = \"100Mbit\"\ndelay = \"10ms\"\n{link}\n");
    }
    text += &format!("[queue.{queue}]\n");
    for (name, cc) in flows {
        text += &format!("[[flows]]\nname = \"{name}\"\nkind = \"brisk\"\ncc = \"{cc}\"\n");
    }
    Scenario::parse(&text, "network-100m.toml").unwrap()
}

#[test]
fn l4s_queue_delay_holds_with_fewer_acks() {
    // Windows large enough for an ACK every tenth packet; the L queue must
    // stay about a packet.
    let s = network_100m(
        8,
        "",
        "dualpi2",
        &[("prague", "prague"), ("cubic", "cubic")],
    );
    for ip in FAMILIES {
        let (on, off) = both(&s, ip);
        let (p_on, p_off) = (flow(&on, "prague"), flow(&off, "prague"));
        let (acks_on, frames) = acks(&on, "prague");
        let (acks_off, _) = acks(&off, "prague");
        let what = format!(
            "{ip:?}: prague acks {acks_on} vs {acks_off} ({frames} frames), queue delay p99 {} vs {} ms, goodput {} vs {}",
            p_on.queue_delay_ms.p99,
            p_off.queue_delay_ms.p99,
            p_on.goodput_mbps,
            p_off.goodput_mbps
        );
        assert!(frames > 0 && acks_on * 2 < acks_off, "{what}");
        assert!(
            p_on.queue_delay_ms.p99 < p_off.queue_delay_ms.p99 + 0.3,
            "{what}"
        );
        assert!(p_on.queue_delay_ms.p99 < 2.0, "{what}");
        let total = |r: &Results| r.flows.iter().map(|f| f.goodput_mbps).sum::<f64>();
        assert!(total(&on) > 0.98 * total(&off), "{what}");
        // The coupling still shares the link as it did.
        let (s_on, s_off) = (share(&on, "prague"), share(&off, "prague"));
        assert!(
            (s_on - s_off).abs() < 0.1,
            "{what}; share {s_on} vs {s_off}"
        );
    }
}

#[test]
fn loss_recovery_is_as_quick_on_a_lossy_path() {
    // 1% random loss both ways: every gap is acknowledged at once, so
    // recovery (and with it goodput) must not suffer from sparse ACKs.
    let s = network_100m(6, "loss = \"1%\"", "fq_codel", &[("cubic", "cubic")]);
    for ip in FAMILIES {
        let (on, off) = both(&s, ip);
        let (c_on, c_off) = (flow(&on, "cubic"), flow(&off, "cubic"));
        let (t_on, t_off) = (
            &c_on.brisk.as_ref().unwrap().transport,
            &c_off.brisk.as_ref().unwrap().transport,
        );
        let what = format!(
            "{ip:?}: on {t_on:?} {}; off {t_off:?} {}",
            c_on.goodput_mbps, c_off.goodput_mbps
        );
        assert!(t_on.data_intact && t_off.data_intact, "{what}");
        assert!(c_on.goodput_mbps > 0.95 * c_off.goodput_mbps, "{what}");
        assert!(t_on.ptos <= t_off.ptos + 2, "{what}");
        assert!(t_on.spurious_losses <= t_off.spurious_losses + 2, "{what}");
    }
}

#[test]
fn deep_fifo_loss_is_not_raised() {
    // A loss-based flow filling a 400-packet FIFO: its window is large,
    // so ACKs thin out, and the overshoot that ends each cycle must cost
    // no more packets than with an ACK every second packet.
    let s = scenario("brisk-cubic-fifo.toml", 20);
    for ip in FAMILIES {
        let (on, off) = both(&s, ip);
        let (c_on, c_off) = (flow(&on, "cubic"), flow(&off, "cubic"));
        let (acks_on, _) = acks(&on, "cubic");
        let (acks_off, _) = acks(&off, "cubic");
        let what = format!(
            "{ip:?}: loss {} vs {}, goodput {} vs {}, acks {acks_on} vs {acks_off}",
            c_on.loss_rate, c_off.loss_rate, c_on.goodput_mbps, c_off.goodput_mbps
        );
        assert!(acks_on * 3 < acks_off, "{what}");
        assert!(c_on.loss_rate < c_off.loss_rate * 1.15 + 0.001, "{what}");
        assert!(c_on.goodput_mbps > 0.98 * c_off.goodput_mbps, "{what}");
    }
}
