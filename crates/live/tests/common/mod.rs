//! Shared by the live tests: the root check, one lab at a time, networks
//! from scenario TOML text.
#![allow(dead_code)]

use brisk_live::{Lab, LabConfig};
use brisk_netmodel::Network;
use std::sync::{Mutex, MutexGuard};

/// Labs measure timing on a 2-core machine: run them one at a time.
static ONE_LAB: Mutex<()> = Mutex::new(());

/// Holds the lab lock for a test, or returns `None` (after saying why) when
/// the test cannot run here: not root and not in CI. In CI (`CI=true`) a
/// missing privilege fails the test instead.
pub fn lab_guard(test: &str) -> Option<MutexGuard<'static, ()>> {
    if !brisk_live::sys::has_net_admin() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{test}: the live tests need root (CAP_NET_ADMIN) in CI");
        }
        // Straight to stderr, past the test harness's capture, so the skip
        // shows in a normal `cargo test` run.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{test}: SKIPPED: needs root (CAP_NET_ADMIN) for namespaces and TUN devices"
        );
        return None;
    }
    Some(ONE_LAB.lock().unwrap_or_else(|e| e.into_inner()))
}

pub fn scenario(toml: &str) -> Network {
    Network::parse(toml).expect("test network parses")
}

pub fn lab(toml: &str) -> Lab {
    Lab::up(LabConfig::new(scenario(toml))).expect("lab comes up")
}

/// Runs the built-in bulk download (server to client) in `lab`.
pub fn bulk(
    lab: &Lab,
    cc: &str,
    ecn: bool,
    duration: std::time::Duration,
) -> brisk_live::bulk::BulkReport {
    use brisk_live::bulk::{self, BulkConfig};
    use std::net::SocketAddr;
    lab.set_tcp_ecn(ecn).expect("set tcp_ecn");
    let config = BulkConfig {
        cc: cc.into(),
        ecn,
        duration,
    };
    bulk::run(
        lab.server_ns(),
        SocketAddr::new(lab.server_bind_addr(), bulk::BULK_PORT),
        lab.client_ns(),
        SocketAddr::new(lab.server_addr(), bulk::BULK_PORT),
        &config,
    )
    .expect("bulk transfer runs")
}

/// Runs a timing measurement up to three times and passes on the first
/// attempt whose numbers hold.
///
/// The lab runs in real time on a shared 2-core VM: the host may pause any
/// thread for milliseconds, and one such pause moves a tail percentile or a
/// short goodput window. A broken model (a missing, doubled or wrong delay or
/// rate) fails every attempt; a host hiccup does not repeat three times.
/// Structural checks belong outside `check`, as plain asserts. Returns
/// what the passing attempt measured.
pub fn within_attempts<T>(test: &str, check: impl FnMut() -> Result<T, String>) -> T {
    within_n_attempts(test, 3, check)
}

/// [`within_attempts`] with `attempts` tries, for measurements a shared
/// host disturbs more often.
pub fn within_n_attempts<T>(
    test: &str,
    attempts: usize,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let mut failures = Vec::new();
    for attempt in 1..=attempts {
        match check() {
            Ok(kept) => return kept,
            Err(e) => {
                eprintln!("{test}: attempt {attempt} of {attempts} out of bounds: {e}");
                failures.push(e);
            }
        }
    }
    panic!("{test}: out of bounds in all {attempts} attempts: {failures:#?}");
}

/// `Err(message)` unless `ok`: the bound checks inside [`within_attempts`].
pub fn bound(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(message()) }
}

/// How late the router says it ran, both ways: the p99 of its delay error
/// down plus up. A busy host delays the router and the applications alike,
/// so end-to-end delay bounds allow this much more; on an idle VM it is a
/// fraction of a millisecond.
pub fn router_lateness_ms(f: &brisk_live::results::FidelityResults) -> f64 {
    f.down.delay_error_ms.p99 + f.up.delay_error_ms.p99
}
