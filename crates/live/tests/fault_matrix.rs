//! The fault matrix, live: Brisk downloads on real UDP sockets
//! (`brisk-io`) through the lab's router under each fault a mobile or home
//! network throws at a transfer, each checked end to end by SHA-256 (the
//! `transfer` recipe). Every case must complete, on IPv4 and on IPv6.
//!
//! The server sends with `brisk serve`'s default controller (BBR). The quick
//! matrix keeps the transfers small enough for CI (under a minute in all,
//! lab setup included); the long one, `cargo test --release -p brisk-live
//! --test fault_matrix -- --ignored --nocapture`, moves 20 MB per case.
//! `BRISK_FAULT_CASE=<part of a case's name>` runs only the matching cases.

mod common;

use brisk_live::recipes::transfer::{self, TransferConfig};
use brisk_live::router::Rebind;
use brisk_live::{Lab, LabConfig};
use std::time::{Duration, Instant};

/// One fault: extra lines for both link tables (or the whole link setup)
/// and what to move through it.
struct Case {
    name: &'static str,
    /// Lines of `[link.down]` and `[link.up]`, each after its rate and
    /// delay.
    both: &'static str,
    rate: &'static str,
    one_way_ms: u64,
    /// Transfer sizes: quick and long.
    bytes: (u64, u64),
    rebind_at: Option<Duration>,
    /// Rebind again this often after `rebind_at` (a mobile carrier's NAT).
    rebind_every: Option<Duration>,
}

const CASES: &[Case] = &[
    Case {
        name: "10% random loss both ways",
        both: "loss = \"10%\"",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (1_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "20% random loss both ways",
        both: "loss = \"20%\"",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (500_000, 5_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "5% loss in bursts of 5 packets both ways",
        both: "loss = { gilbert_elliott = { loss = \"5%\", burst_packets = 5 } }",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (1_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "fades of 50 ms every 1 s both ways",
        both: "loss = { fade = { good = \"1s\", bad = \"50ms\" } }",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (1_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "reordering by 30 packets",
        both: "reorder = { probability = \"2%\", depth_packets = 30 }",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (1_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "5% duplication both ways",
        both: "duplicate = \"5%\"",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (1_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "a 5 s outage both ways",
        both: "outages = [{ start = \"1s\", duration = \"5s\" }]\noutage_drops = true",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (3_000_000, 20_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "1 Mbit/s at 300 ms",
        both: "",
        rate: "1Mbit",
        one_way_ms: 150,
        bytes: (200_000, 2_000_000),
        rebind_at: None,
        rebind_every: None,
    },
    Case {
        name: "NAT rebinding of the client's port",
        both: "",
        rate: "20Mbit",
        one_way_ms: 10,
        bytes: (3_000_000, 20_000_000),
        rebind_at: Some(Duration::from_millis(700)),
        rebind_every: None,
    },
    Case {
        name: "NAT rebinding of the client's port every 2 s",
        both: "",
        rate: "10Mbit",
        one_way_ms: 20,
        bytes: (8_000_000, 40_000_000),
        rebind_at: Some(Duration::from_secs(1)),
        rebind_every: Some(Duration::from_secs(2)),
    },
];

/// The controller `brisk serve` uses unless told otherwise: the matrix
/// checks what a user of `brisk get` sees.
const SERVE_DEFAULT_CC: &str = "bbr";

fn lab(case: &Case, ip: &str) -> Lab {
    let link = |dir: &str| {
        format!(
            "[link.{dir}]\nrate = \"{}\"\ndelay = \"{}ms\"\n{}\n",
            case.rate, case.one_way_ms, case.both
        )
    };
    let text = format!(
        "ip = \"{ip}\"\n{}{}[queue.fifo]\nlimit_packets = 200\n",
        link("down"),
        link("up")
    );
    let mut config = LabConfig::new(common::scenario(&text));
    config.rebind = case.rebind_at.map(|at| Rebind {
        at,
        port_offset: 1000,
        every: case.rebind_every,
    });
    Lab::up(config).expect("lab comes up")
}

/// Runs every case on both families; fails listing each that did not
/// complete with matching hashes.
fn matrix(test: &str, long: bool) {
    let Some(_g) = common::lab_guard(test) else {
        return;
    };
    let started = Instant::now();
    let mut failed = Vec::new();
    // Narrows the run to the cases whose name contains this text.
    let only = std::env::var("BRISK_FAULT_CASE").unwrap_or_default();
    for case in CASES.iter().filter(|c| c.name.contains(only.as_str())) {
        for ip in ["v4", "v6"] {
            let bytes = if long { case.bytes.1 } else { case.bytes.0 };
            let lab = lab(case, ip);
            let config = TransferConfig {
                cc: SERVE_DEFAULT_CC.into(),
                bytes,
                limit: Duration::from_secs(if long { 300 } else { 40 }),
                seed: 11,
                client_rebind_at: None,
            };
            let result = transfer::run(&lab, &config);
            let _ = lab.finish(None, None);
            match result {
                Ok(r) => {
                    eprintln!(
                        "{:<42} {ip}: {:>9} bytes in {:>6.2} s, SHA-256 {}..., migrations {}",
                        case.name,
                        r.bytes,
                        r.completion.as_secs_f64(),
                        &r.sha256[..12],
                        r.server_migrations
                    );
                    if case.rebind_at.is_some() && r.server_migrations == 0 {
                        failed.push(format!("{} {ip}: no migration seen", case.name));
                    }
                    // Every rebinding during the transfer (after the
                    // first second) is seen: each moves the connection.
                    if let Some(every) = case.rebind_every {
                        let due = r
                            .completion
                            .saturating_sub(Duration::from_secs(2))
                            .as_secs()
                            / every.as_secs().max(1);
                        if r.server_migrations < due {
                            failed.push(format!(
                                "{} {ip}: {} migrations seen, {due} due",
                                case.name, r.server_migrations
                            ));
                        }
                    }
                }
                Err(e) => {
                    eprintln!("{:<42} {ip}: FAILED: {e}", case.name);
                    failed.push(format!("{} {ip}: {e}", case.name));
                }
            }
        }
    }
    eprintln!("{test}: {:.1} s in all", started.elapsed().as_secs_f64());
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn every_fault_is_survived_with_matching_hashes() {
    matrix("every_fault_is_survived_with_matching_hashes", false);
}

#[test]
#[ignore = "the long matrix: 20 MB per case, several minutes"]
fn every_fault_is_survived_with_matching_hashes_long() {
    matrix("every_fault_is_survived_with_matching_hashes_long", true);
}
