//! The many-connections benchmark, CI-sized: 200 connections to a server
//! process, quinn and Brisk, IPv4 and IPv6. Every request must succeed,
//! and Brisk's server must hold at most 20 KB of heap per idle connection
//! and give it back after close. No timing is asserted: the figures print.
//!
//! The full run, 1,000 and 10,000 connections (docs/PERFORMANCE.md, "Many
//! connections"):
//! `cargo run --release -p brisk-netbench -- --many 1000,10000 --rpc-secs 5`

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::Duration;

use brisk_netbench::many::{self, BriskFleet, ManyPlan, ManyReport, QuinnFleet};

/// The goal: server heap per idle connection, in bytes (20 KB).
const GOAL_BYTES: f64 = 20_000.0;

const CONNECTIONS: usize = 200;

fn plan() -> ManyPlan {
    ManyPlan {
        connections: CONNECTIONS,
        concurrency: 16,
        measure: Duration::from_millis(300),
        limit: Duration::from_secs(60),
        progress: false,
        server_threads: 1,
    }
}

#[test]
fn two_hundred_connections_serve_every_request_and_brisk_stays_small() {
    let exe = Path::new(env!("CARGO_BIN_EXE_brisk-netbench"));
    for (version, ip) in [
        (4, IpAddr::V4(Ipv4Addr::LOCALHOST)),
        (6, IpAddr::V6(Ipv6Addr::LOCALHOST)),
    ] {
        let quinn = many::run(QuinnFleet, exe, ip, plan()).expect("the quinn case runs");
        let brisk = many::run(BriskFleet, exe, ip, plan()).expect("the Brisk case runs");
        let report = ManyReport::new(version, plan(), vec![quinn.clone(), brisk.clone()]);
        println!("{report}");
        for r in [&quinn, &brisk] {
            assert_eq!(r.connections, CONNECTIONS);
            assert!(r.requests > 0, "{}: no request completed", r.contender);
            assert_eq!(
                r.failed_requests, 0,
                "{}: {:?}",
                r.contender, r.first_failure
            );
        }
        let per_connection = brisk
            .server_heap_per_connection_bytes
            .expect("the benchmark binary counts its heap");
        assert!(
            per_connection <= GOAL_BYTES,
            "IPv{version}: Brisk's server holds {per_connection:.0} B per idle connection"
        );
        let left = brisk
            .server_heap_left_after_close_bytes
            .expect("the benchmark binary counts its heap");
        assert!(
            left <= many::return_slack_bytes(CONNECTIONS) as i64,
            "IPv{version}: {left} B of Brisk's server heap stayed after every connection closed"
        );
    }
}
