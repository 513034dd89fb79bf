//! Forged handshake floods against a real Brisk server on loopback (one
//! attacking process, IPv4 and IPv6, XX and IK): a large transfer and new
//! clients keep working (all of them in the long run, nine in ten in the
//! short one), and memory returns to where it was.
//!
//! The setup, exactly: this test process runs the server, the transfer's
//! client and the newcomers on one tokio thread; the `brisk-flood`
//! process sends forged Initials from 32 sockets as fast as one thread
//! can, so on a 2-core machine each side has about one core. The
//! transfer goes over one connection set up before the flood, client to
//! server, at a fixed 200 Mbit/s the application paces (64 KiB writes on
//! a fixed schedule): a rate the server sustains unloaded on a small share
//! of its core, as a path-limited transfer would, so its time under flood
//! measures what the flood takes from established traffic rather than the
//! transfer's own CPU demand (a CPU-bound loopback transfer sharing one
//! core with the flood's receive work slows by construction). The same
//! transfer runs unloaded first, then 300 ms into the flood; the server
//! answers each with the SHA-256 of what it read. Memory is the bytes
//! the process's live allocations hold, counted by its allocator, before
//! the flood and after the half-open timeout that follows it. glibc's own
//! count (`mallinfo2`), printed beside it, also holds the chunks its
//! per-thread caches keep for reuse; the resident set (after
//! `malloc_trim`) also counts pages the allocator keeps and a thread
//! stack the harness starts, which no endpoint owns.
//!
//! The default run floods for 3 s with a 30 MB transfer and a 1 s
//! half-open timeout, XX over IPv4 and IK over IPv6 (about 11 s each);
//! the long run, 20 s of each forgery over each family with a 400 MB
//! transfer and the default 5 s timeout, is one command:
//! `cargo test --release -p brisk-netbench --test flood -- --ignored handshake_flood_long_run --nocapture`

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use brisk_netbench::flood::{FloodPlan, FloodReport, Forged, measure};
use brisk_netbench::heap::CountingAllocator;

/// Counts live heap bytes: the memory goal's measure (glibc's own count
/// also holds what its per-thread caches keep).
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The transfer's paced rate, bits per second.
const RATE_BPS: u64 = 200_000_000;

/// `half_open_secs` is the server's half-open timeout; memory is read
/// again a second after it.
fn plan(
    ip: IpAddr,
    pattern: Forged,
    bytes: u64,
    flood_secs: u64,
    half_open_secs: u64,
) -> FloodPlan {
    FloodPlan {
        ip,
        pattern,
        transfer_bytes: bytes,
        transfer_rate_bps: RATE_BPS,
        flood: Duration::from_secs(flood_secs),
        attacker: PathBuf::from(env!("CARGO_BIN_EXE_brisk-flood")),
        newcomer_every: Duration::from_millis(250),
        half_open_timeout: Duration::from_secs(half_open_secs),
        settle: Duration::from_secs(half_open_secs + 1),
    }
}

fn v6_loopback() -> Option<IpAddr> {
    let up = std::net::UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).is_ok();
    if !up && std::env::var("CI").as_deref() == Ok("true") {
        panic!("no IPv6 loopback on CI");
    }
    up.then_some(IpAddr::V6(Ipv6Addr::LOCALHOST))
}

fn families() -> Vec<IpAddr> {
    let mut f = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    match v6_loopback() {
        Some(v6) => f.push(v6),
        None => eprintln!("skipping IPv6: no ::1 on this host"),
    }
    f
}

/// What must hold whatever the machine's load: the transfer arrives
/// intact, the forgeries cost Retry packets rather than handshakes, and
/// no forged handshake is left.
fn check(r: &FloodReport) {
    assert!(r.digests_match, "the transfer arrived altered: {r:?}");
    assert!(r.attack.datagrams > 1_000, "the attacker barely sent");
    assert!(r.retries_sent > 0, "{r:?}");
    assert!(
        r.handshakes < r.attack.datagrams / 10,
        "forgeries bought handshakes: {r:?}"
    );
    assert_eq!(r.half_open_after, 0, "{r:?}");
}

#[test]
fn handshake_flood_short() {
    // Both forgeries and both address families, in two runs so the test
    // stays within its time budget: the long run covers all four pairs.
    let mut runs = vec![(IpAddr::V4(Ipv4Addr::LOCALHOST), Forged::Xx)];
    match v6_loopback() {
        Some(v6) => runs.push((v6, Forged::Ik)),
        None => {
            eprintln!("skipping IPv6: no ::1 on this host");
            runs.push((IpAddr::V4(Ipv4Addr::LOCALHOST), Forged::Ik));
        }
    }
    for (ip, pattern) in runs {
        let r = measure(&plan(ip, pattern, 30_000_000, 3, 1)).expect("flood run");
        println!("{}", r.summary());
        check(&r);
        check_newcomers(&r, 9, 10);
        check_transfer(&r);
        check_memory(&r);
    }
}

/// The newcomers' goal: every new client connects during the flood (the
/// long run); the short run, meant for a shared 2-core CI machine, lets
/// one in ten miss its 5 s handshake timeout. At load average 15 to 17
/// the 20 s runs connected 295 of 295 once the server read up to 16
/// batches of the listening socket a turn, against 252 of 290 at one
/// batch (a newcomer's two Initials and its Initial with the Retry token
/// cross the flooded listening socket, where the kernel dropped them with
/// the forgeries the server did not read in time).
fn check_newcomers(r: &FloodReport, at_least: u32, of: u32) {
    assert!(r.newcomers_tried > 0);
    assert!(
        r.newcomers_connected * of >= r.newcomers_tried * at_least,
        "{} of {} newcomers connected (goal: {at_least} of {of}): {r:?}",
        r.newcomers_connected,
        r.newcomers_tried
    );
}

/// The memory goal: the process's live allocations back within 10% of
/// their level before the flood. What the flood's peak left behind was
/// pools that kept their largest size: the receiving connection's
/// decryption buffers (pinned one per packet while its reader lagged),
/// its sent-packet ring and the socket's spare send buffers; each now
/// gives its room back once the load is gone. The reading used to swing
/// by up to 700 KB from run to run (+8% to +10%) because the transfer's
/// client kept a decryption buffer made before path MTU discovery raised
/// the datagram size at the front of its pool, which then grew by a
/// buffer a packet; such a buffer is now let go, and the runs read -4%
/// to 0%.
fn check_memory(r: &FloodReport) {
    assert!(
        r.heap_growth_after() <= 1.10,
        "memory after the flood is {:+.1}% of before: {r:?}",
        (r.heap_growth_after() - 1.0) * 100.0
    );
}

/// The transfer goal: within 1.5 times its unloaded time. Established
/// connections have sockets of their own, which the flood does not
/// reach, so this holds on a loaded machine too (1.00x to 1.02x at load
/// average 8 to 10, against 2.4x to 2.6x when the transfer shared the
/// listening socket).
fn check_transfer(r: &FloodReport) {
    assert!(
        r.slowdown() <= 1.5,
        "the flood slowed the transfer {:.2}x: {r:?}",
        r.slowdown()
    );
}

/// The 20-second flood of each kind with a 400 MB transfer, held to the
/// same goals as the short run.
#[test]
#[ignore = "long run: 20 s floods; run by name"]
fn handshake_flood_long_run() {
    // Every pair runs before the goals are checked, so one miss still
    // prints the figures of all four.
    let mut reports = Vec::new();
    for ip in families() {
        for pattern in [Forged::Xx, Forged::Ik] {
            let r = measure(&plan(ip, pattern, 400_000_000, 20, 5)).expect("flood run");
            println!("{}", r.summary());
            reports.push(r);
        }
    }
    for r in &reports {
        check(r);
        check_newcomers(r, 1, 1);
        check_transfer(r);
        check_memory(r);
    }
}
