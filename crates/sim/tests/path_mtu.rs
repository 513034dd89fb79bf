//! A brisk bulk flow over a bottleneck whose hop forwards at most 1400-byte
//! IP packets (a link `mtu`), on IPv4 and IPv6: path MTU discovery (on in
//! the simulator whenever a link has an MTU) finds the size within five
//! probes, with and without ICMP Packet Too Big, and the transfer arrives
//! intact; an MTU that drops to 1280 bytes mid-transfer is survived.

use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

fn headers(ip: IpFamily) -> u64 {
    match ip {
        IpFamily::V4 => 28,
        IpFamily::V6 => 48,
    }
}

/// Runs a 4 MB transfer at 20 Mbit/s, 20 ms round trip, with `mtu_lines`
/// in the down (data) direction; returns the flow's completion time in
/// seconds, its data check, the datagram size in use at the end and the
/// probes spent.
fn bulk(ip: IpFamily, mtu_lines: &str) -> (Option<f64>, bool, u64, u64) {
    let text = format!(
        r#"
duration = "20s"
seed = 3
[link.down]
rate = "20Mbit"
delay = "10ms"
{mtu_lines}
[link.up]
rate = "20Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 100
[[flows]]
kind = "brisk"
cc = "cubic"
bytes = "4MB"
"#
    );
    let s = Scenario::parse(&text, "path_mtu.toml").unwrap();
    let r = run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    );
    let b = r.results.flows[0].brisk.as_ref().unwrap();
    let pmtu = b.transport.path_mtu.as_ref().expect("discovery ran");
    println!(
        "{ip:?} [{}]: done in {:?} s, intact {}, datagrams of {} B after {} probes ({} lost), \
         {} black holes, {} Packet Too Big taken",
        mtu_lines.replace('\n', "; "),
        b.completion_time_s,
        b.transport.data_intact,
        pmtu.datagram_bytes,
        pmtu.probes,
        pmtu.probes_lost,
        pmtu.black_holes,
        pmtu.too_big_accepted
    );
    (
        b.completion_time_s,
        b.transport.data_intact,
        pmtu.datagram_bytes,
        pmtu.probes,
    )
}

#[test]
fn a_1400_byte_hop_is_found_within_five_probes_and_the_transfer_completes() {
    for ip in FAMILIES {
        let fits = 1400 - headers(ip);
        for icmp in [false, true] {
            let (done, intact, size, probes) = bulk(ip, &format!("mtu = 1400\nmtu_icmp = {icmp}"));
            assert!(done.is_some() && intact, "{ip:?} icmp {icmp}");
            assert!(probes <= 5, "{ip:?} icmp {icmp}: {probes} probes");
            assert!(
                size <= fits && fits - size <= 16,
                "{ip:?}: {size} B, fits {fits}"
            );
        }
    }
}

#[test]
fn an_mtu_drop_mid_transfer_is_survived() {
    for ip in FAMILIES {
        for icmp in [false, true] {
            let lines = format!("mtu_icmp = {icmp}\nmtu_change = {{ at = \"1s\", mtu = 1280 }}");
            let (done, intact, size, _) = bulk(ip, &lines);
            assert!(done.is_some() && intact, "{ip:?} icmp {icmp}");
            assert!(size <= 1280 - headers(ip), "{ip:?} icmp {icmp}: {size} B");
        }
    }
}
