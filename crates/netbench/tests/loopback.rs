//! Both tests end to end on loopback, IPv4 and IPv6, with tiny sizes: every
//! contender moves every byte and answers every request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use brisk_netbench::rpc::RpcPlan;
use brisk_netbench::{
    Contender, Outcome, Plan, brisk::Brisk, quic::Quinn, run_contender, tcp::KernelTcp,
};

const BULK_BYTES: u64 = 3 * 1024 * 1024 + 17;

fn plan(ip: IpAddr) -> Plan {
    Plan {
        ip,
        bulk_bytes: Some(BULK_BYTES),
        rpc: Some(RpcPlan {
            warmup: Duration::from_millis(20),
            measure: Duration::from_millis(60),
        }),
        limit: Duration::from_secs(60),
    }
}

fn v6_loopback() -> Option<IpAddr> {
    // Containers without IPv6 have no ::1; skip rather than fail there.
    std::net::UdpSocket::bind((Ipv6Addr::LOCALHOST, 0))
        .ok()
        .map(|_| IpAddr::V6(Ipv6Addr::LOCALHOST))
}

fn check<C: Contender>(contender: C, ip: IpAddr) {
    let name = contender.name();
    let Outcome {
        bulk,
        rpc,
        failures,
    } = run_contender(contender, &plan(ip));
    assert!(failures.is_empty(), "{name} over {ip}: {failures:?}");
    let bulk = bulk.expect("bulk result");
    assert_eq!(bulk.contender, name);
    assert_eq!(bulk.bytes, BULK_BYTES);
    assert!(bulk.wall_secs > 0.0 && bulk.cpu_secs >= 0.0);
    let rpc = rpc.expect("rpc result");
    assert!(rpc.requests() > 0);
    assert!(rpc.p50_us() > 0.0 && rpc.p50_us() <= rpc.p99_us() && rpc.p99_us() <= rpc.max_us());
    assert!(rpc.wall_secs >= 0.06, "measured for the planned time");
}

#[test]
fn tcp_v4() {
    check(KernelTcp, IpAddr::V4(Ipv4Addr::LOCALHOST));
}

#[test]
fn tcp_v6() {
    if let Some(ip) = v6_loopback() {
        check(KernelTcp, ip);
    }
}

#[test]
fn quinn_v4() {
    check(Quinn, IpAddr::V4(Ipv4Addr::LOCALHOST));
}

#[test]
fn quinn_v6() {
    if let Some(ip) = v6_loopback() {
        check(Quinn, ip);
    }
}

#[test]
fn brisk_v4() {
    check(Brisk::default(), IpAddr::V4(Ipv4Addr::LOCALHOST));
}

#[test]
fn brisk_v6() {
    if let Some(ip) = v6_loopback() {
        check(Brisk::default(), ip);
    }
}

#[test]
fn nothing_listens_on_a_non_loopback_failure_is_reported() {
    // TEST-NET-1 is never a local address: binding fails, and the failure
    // is reported per test instead of panicking.
    let outcome = run_contender(KernelTcp, &plan(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))));
    assert!(outcome.bulk.is_none() && outcome.rpc.is_none());
    assert_eq!(outcome.failures.len(), 2);
    assert!(
        outcome.failures[0].error.contains("tcp: bind"),
        "{:?}",
        outcome.failures
    );
}

#[test]
fn brisk_busy_polling_v4_and_v6() {
    let busy = Brisk::with_busy_poll("brisk-bp", std::time::Duration::from_micros(50));
    check(busy, IpAddr::V4(Ipv4Addr::LOCALHOST));
    if let Some(ip) = v6_loopback() {
        check(busy, ip);
    }
}
