//! Path MTU discovery on real sockets: Brisk downloads (`brisk-io`, the
//! `transfer` recipe, SHA-256 checked end to end) through the lab's router
//! whose links forward at most 1400-byte IP packets, while the namespaces'
//! own interfaces take 1500: the first connection over such a path used
//! to fail ("Message too long") because its first flight was sized for
//! the local interface. Cases: the router answers with ICMP Packet Too
//! Big; it drops silently (a black hole for large packets); the MTU drops
//! from 1500 to 1280 bytes one second into the transfer, with ICMP and
//! without (a black hole that opens mid-transfer). IPv4 and IPv6. Each
//! line prints the transfer's longest wait for new bytes, the stall. And
//! the ceiling a server in a namespace starts from: its own interfaces'.

mod common;

use brisk_live::recipes::transfer::{self, TransferConfig};
use brisk_live::{Lab, LabConfig};
use std::time::Duration;

struct Case {
    name: &'static str,
    /// Lines for both `[link.*]` tables.
    lines: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "1400-byte hop answering with ICMP",
        lines: "mtu = 1400\nmtu_icmp = true",
    },
    Case {
        name: "1400-byte hop without ICMP",
        lines: "mtu = 1400",
    },
    Case {
        name: "MTU 1500 to 1280 at 1 s, with ICMP",
        lines: "mtu_icmp = true\nmtu_change = { at = \"1s\", mtu = 1280 }",
    },
    Case {
        name: "MTU 1500 to 1280 at 1 s, without ICMP",
        lines: "mtu_change = { at = \"1s\", mtu = 1280 }",
    },
];

fn lab(case: &Case, ip: &str) -> Lab {
    let link = |dir: &str| {
        format!(
            "[link.{dir}]\nrate = \"20Mbit\"\ndelay = \"10ms\"\n{}\n",
            case.lines
        )
    };
    let text = format!(
        "ip = \"{ip}\"\n{}{}[queue.fifo]\nlimit_packets = 200\n",
        link("down"),
        link("up")
    );
    Lab::up(LabConfig::new(common::scenario(&text))).expect("lab comes up")
}

#[test]
fn downloads_cross_a_smaller_hop_with_matching_hashes() {
    let test = "downloads_cross_a_smaller_hop_with_matching_hashes";
    let Some(_g) = common::lab_guard(test) else {
        return;
    };
    let mut failed = Vec::new();
    for case in CASES {
        for ip in ["v4", "v6"] {
            let lab = lab(case, ip);
            let config = TransferConfig {
                cc: "bbr".into(),
                bytes: 3_000_000,
                limit: Duration::from_secs(30),
                seed: 5,
                client_rebind_at: None,
            };
            let result = transfer::run(&lab, &config);
            let _ = lab.finish(None, None);
            match result {
                Ok(r) => eprintln!(
                    "{:<41} {ip}: {} bytes in {:.2} s, longest wait for new bytes {:.1} ms \
                     (RTT 20 ms), SHA-256 {}...",
                    case.name,
                    r.bytes,
                    r.completion.as_secs_f64(),
                    r.longest_read_gap.as_secs_f64() * 1e3,
                    &r.sha256[..12]
                ),
                Err(e) => {
                    eprintln!("{:<38} {ip}: FAILED: {e}", case.name);
                    failed.push(format!("{} {ip}: {e}", case.name));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A server inside a lab namespace sizes its datagrams by that namespace's
/// own interfaces (loopback and the 1500-byte TUN device), whatever the
/// host's are. A thread that entered the namespace with `setns` still
/// sees the host's /sys/class/net, and the lab's Brisk server once took a
/// host interface's 1400 bytes from there (1372/1352-byte datagrams on a
/// path that carries 1472/1452).
#[test]
fn a_server_in_a_namespace_sizes_by_that_namespaces_interfaces() {
    let Some(_g) = common::lab_guard("a_server_in_a_namespace_sizes_by_that_namespaces_interfaces")
    else {
        return;
    };
    let lab = common::lab("[link.down]\nrate = \"10Mbit\"\n[link.up]\nrate = \"10Mbit\"\n");
    let mtu = lab
        .server_ns()
        .run(brisk_io::socket::smallest_interface_mtu)
        .expect("a thread runs in the server's namespace");
    let _ = lab.finish(None, None);
    assert_eq!(mtu, Some(brisk_live::topology::MTU_BYTES as usize));
}
