//! Moving clients on real sockets: Brisk downloads (`brisk-io`, the
//! `transfer` recipe, SHA-256 checked end to end) through the lab's
//! router while it rewrites the client's UDP port every second, as a
//! mobile carrier's NAT does (every 15-30 s there; faster here so a short
//! run sees several), and while the client itself moves its endpoint to a
//! new local port (`Endpoint::rebind`, client-initiated migration) on top
//! of the rebinding. IPv4 and IPv6.

mod common;

use brisk_live::recipes::transfer::{self, TransferConfig};
use brisk_live::router::Rebind;
use brisk_live::{Lab, LabConfig};
use std::time::Duration;

struct Case {
    name: &'static str,
    /// The client moves its endpoint this long after it started.
    client_rebind_at: Option<Duration>,
}

const CASES: &[Case] = &[
    Case {
        name: "NAT rebinding every 1 s",
        client_rebind_at: None,
    },
    Case {
        name: "NAT rebinding every 1 s, client moves at 1.5 s",
        client_rebind_at: Some(Duration::from_millis(1_500)),
    },
];

/// 10 Mbit/s, 20 ms each way; the NAT rebinds at 1 s and every second
/// after.
fn lab(ip: &str) -> Lab {
    let link = |dir: &str| format!("[link.{dir}]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n");
    let text = format!(
        "ip = \"{ip}\"\n{}{}[queue.fifo]\nlimit_packets = 200\n",
        link("down"),
        link("up")
    );
    let mut config = LabConfig::new(common::scenario(&text));
    config.rebind = Some(Rebind {
        at: Duration::from_secs(1),
        port_offset: 1000,
        every: Some(Duration::from_secs(1)),
    });
    Lab::up(config).expect("lab comes up")
}

#[test]
fn downloads_survive_nat_rebinding_and_a_client_move_with_matching_hashes() {
    let test = "downloads_survive_nat_rebinding_and_a_client_move_with_matching_hashes";
    let Some(_g) = common::lab_guard(test) else {
        return;
    };
    let mut failed = Vec::new();
    for case in CASES {
        for ip in ["v4", "v6"] {
            let lab = lab(ip);
            let config = TransferConfig {
                cc: "bbr".into(),
                bytes: 4_000_000,
                limit: Duration::from_secs(30),
                seed: 7,
                client_rebind_at: case.client_rebind_at,
            };
            let result = transfer::run(&lab, &config);
            let _ = lab.finish(None, None);
            match result {
                Ok(r) => {
                    eprintln!(
                        "{:<48} {ip}: {} bytes in {:.2} s, SHA-256 {}..., server saw {} address changes, client moved to {:?}",
                        case.name,
                        r.bytes,
                        r.completion.as_secs_f64(),
                        &r.sha256[..12],
                        r.server_migrations,
                        r.client_moved_to
                    );
                    // Each whole second of the transfer after the first
                    // brought a rebinding; the client's own move is one more.
                    let rebindings = r.completion.as_secs().saturating_sub(1);
                    let moved = u64::from(r.client_moved_to.is_some());
                    if r.server_migrations < rebindings + moved {
                        failed.push(format!(
                            "{} {ip}: {} address changes seen, {} due",
                            case.name,
                            r.server_migrations,
                            rebindings + moved
                        ));
                    }
                    if case.client_rebind_at.is_some() && r.client_moved_to.is_none() {
                        failed.push(format!("{} {ip}: ended before the move", case.name));
                    }
                }
                Err(e) => {
                    eprintln!("{:<48} {ip}: FAILED: {e}", case.name);
                    failed.push(format!("{} {ip}: {e}", case.name));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
