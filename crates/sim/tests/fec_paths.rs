//! Forward error correction on whole paths, on IPv4 and IPv6: what it
//! costs on a clean path, what it saves in retransmissions, that it
//! survives reordering and duplication, that it stays inside congestion
//! control beside a CUBIC flow, and bulk goodput at 5% loss and 220 ms.
//!
//! The figures in docs/PROTOCOL.md: `cargo test --release -p brisk-sim
//! --test fec_paths -- --nocapture` (and `--ignored` for the longer bulk).

mod common;

use brisk_sim::results::{FlowResults, TransportResults};
use brisk_sim::scenario::{IpFamily, Scenario};
use common::{FAMILIES, run_on, share};

/// One Brisk flow over 10 Mbit/s and 220 ms with `down` extra lines on
/// the data direction; `flow` extra lines on the flow.
fn one(down: &str, flow: &str, ip: IpFamily, seed: u64) -> FlowResults {
    let text = format!(
        r#"
duration = "60s"
seed = {seed}
[link.down]
rate = "10Mbit"
delay = "110ms"
{down}
[link.up]
rate = "10Mbit"
delay = "110ms"
[queue.fifo]
limit_packets = 200
[[flows]]
kind = "brisk"
{flow}
"#
    );
    let r = run_on(&Scenario::parse(&text, "fec_paths.toml").unwrap(), ip);
    let f = r.flows[0].clone();
    let b = f.brisk.as_ref().unwrap();
    assert!(b.transport.data_intact, "{down} {flow} {ip:?}");
    f
}

fn transport(f: &FlowResults) -> &TransportResults {
    &f.brisk.as_ref().unwrap().transport
}

const OBJECT: &str = "app = \"feed\"\nobjects = [\"50kB\"]\ncc = \"bbr\"";

#[test]
fn a_clean_path_pays_under_five_percent() {
    for ip in FAMILIES {
        for (policy, flow) in [
            ("adaptive", "cc = \"bbr\"\nbytes = \"2MB\""),
            ("adaptive", OBJECT),
            ("on", OBJECT),
        ] {
            let plain = one("", flow, ip, 1);
            let fec = one("", &format!("{flow}\nfec = \"{policy}\""), ip, 1);
            let (p, f) = (transport(&plain), transport(&fec));
            // All bytes, repair and the room source packets leave for it.
            let overhead = (f.bytes_sent as f64 - p.bytes_sent as f64) / f.bytes_sent as f64;
            eprintln!(
                "{ip:?} {policy} {}: {} bytes sent without FEC, {} with ({:.1}% more; repair {} bytes)",
                flow.lines().next().unwrap_or(""),
                p.bytes_sent,
                f.bytes_sent,
                100.0 * overhead,
                f.repair_bytes_sent
            );
            // `on` buys protection before any loss was measured: its cost
            // on a clean path is printed, not held to the budget.
            if policy == "adaptive" {
                assert!(overhead < 0.05, "{policy} {flow}: {overhead}");
            }
        }
    }
}

#[test]
fn lost_packets_are_rebuilt_not_retransmitted() {
    for ip in FAMILIES {
        let (mut plain_rtx, mut fec_rtx, mut rebuilt) = (0, 0, 0);
        for seed in 1..=10 {
            let plain = one("loss = \"5%\"", OBJECT, ip, seed);
            let fec = one(
                "loss = \"5%\"",
                &format!("{OBJECT}\nfec = \"on\""),
                ip,
                seed,
            );
            plain_rtx += transport(&plain).bytes_retransmitted;
            fec_rtx += transport(&fec).bytes_retransmitted;
            rebuilt += transport(&fec).packets_rebuilt;
        }
        eprintln!(
            "{ip:?}: 10 fetches of 50 KB at 5% loss: {plain_rtx} stream bytes retransmitted \
             without FEC, {fec_rtx} with; {rebuilt} packets rebuilt"
        );
        assert!(rebuilt > 10, "{rebuilt}");
        assert!(fec_rtx * 5 < plain_rtx, "{fec_rtx} vs {plain_rtx}");
    }
}

#[test]
fn reordering_and_duplication_do_not_confuse_repair() {
    let down =
        "loss = \"5%\"\nduplicate = \"5%\"\nreorder = { probability = \"5%\", depth_packets = 10 }";
    for ip in FAMILIES {
        let mut rebuilt = 0;
        for seed in 1..=5 {
            let f = one(down, &format!("{OBJECT}\nfec = \"on\""), ip, seed);
            rebuilt += transport(&f).packets_rebuilt;
            assert_eq!(f.delivered_bytes, 50_000, "{ip:?} seed {seed}");
        }
        assert!(rebuilt > 3, "{ip:?}: {rebuilt}");
    }
}

/// A CUBIC flow with FEC beside a CUBIC flow without, through one FIFO
/// at 1% loss: their shares of the goodput.
fn shares(ip: IpFamily, seed: u64) -> (f64, f64) {
    let text = format!(
        r#"
duration = "30s"
seed = {seed}
[link.down]
rate = "10Mbit"
delay = "20ms"
loss = "1%"
[link.up]
rate = "10Mbit"
delay = "20ms"
[queue.fifo]
limit_packets = 100
[[flows]]
name = "fec"
kind = "brisk"
cc = "cubic"
fec = "adaptive"
[[flows]]
name = "plain"
kind = "brisk"
cc = "cubic"
"#
    );
    let r = run_on(&Scenario::parse(&text, "fec_fair.toml").unwrap(), ip);
    (share(&r, "fec"), share(&r, "plain"))
}

#[test]
fn fec_beside_cubic_takes_its_fair_share() {
    for ip in FAMILIES {
        let (fec, plain) = shares(ip, 1);
        eprintln!("{ip:?}: at 1% loss, the FEC flow's share {fec:.3}, the plain one's {plain:.3}");
        assert!((fec - 0.5).abs() <= 0.1, "{ip:?}: {fec} vs {plain}");
    }
}

/// Goodput in Mbit/s of `bytes` in bulk at 5% loss, 220 ms, 10 Mbit/s.
fn bulk_goodput(bytes: u64, cc: &str, fec: Option<&str>, ip: IpFamily) -> f64 {
    let fec = fec.map_or(String::new(), |f| format!("fec = \"{f}\""));
    let f = one(
        "loss = \"5%\"",
        &format!("cc = \"{cc}\"\nbytes = \"{bytes}B\"\n{fec}"),
        ip,
        1,
    );
    assert_eq!(f.delivered_bytes, bytes);
    let s = f.brisk.as_ref().unwrap().completion_time_s.unwrap();
    bytes as f64 * 8.0 / s / 1e6
}

/// Bulk data gains little from repair: a loss costs it goodput, not a
/// round trip, and retransmission resends only what was lost. The test
/// holds adaptive repair to costing at most a tenth of the goodput; the
/// issue's goal (8.55 Mbit/s) is not met, see docs/PROTOCOL.md.
#[test]
fn bulk_at_five_percent_loss_keeps_its_goodput() {
    for ip in FAMILIES {
        let plain = bulk_goodput(3_000_000, "bbr", None, ip);
        let fec = bulk_goodput(3_000_000, "bbr", Some("adaptive"), ip);
        eprintln!(
            "{ip:?}: 3 MB at 5% loss, 220 ms, 10 Mbit/s: BBR {plain:.2} Mbit/s without FEC, \
             {fec:.2} with (goal 8.55)"
        );
        assert!(fec > 0.9 * plain, "{fec} vs {plain}");
    }
}

#[test]
#[ignore = "the 20 MB bulk figures for docs/PROTOCOL.md"]
fn bulk_table() {
    for ip in FAMILIES {
        for (cc, fec) in [
            ("bbr", None),
            ("bbr", Some("adaptive")),
            ("bbr", Some("on")),
            ("cubic", None),
            ("cubic", Some("adaptive")),
        ] {
            let g = bulk_goodput(20_000_000, cc, fec, ip);
            eprintln!("{ip:?} {cc} fec {fec:?}: {g:.2} Mbit/s (goal 8.55)");
        }
    }
}
