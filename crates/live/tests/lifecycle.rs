//! Namespaces, devices and processes come and go with the lab, even when
//! the lab process is killed with SIGKILL.

mod common;

use brisk_live::netns;
use brisk_live::process::{Program, Streams};
use brisk_live::registry::{self, RUN_DIR};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn process_gone(pid: i32) -> bool {
    // Gone, or a zombie nobody will reap (its parent was killed).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.split_whitespace().nth(2) == Some("Z"),
    }
}

fn ours(prefix: &str) -> Vec<String> {
    netns::list()
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[test]
fn lab_leaves_no_namespace_device_route_or_process() {
    let Some(_g) = common::lab_guard("lab_leaves_no_namespace_device_route_or_process") else {
        return;
    };
    let lab = common::lab("");
    let names = lab.names().clone();
    assert_eq!(ours(&names.prefix).len(), 2);
    // Addresses and routes are in place, on the TUN device.
    let routes = lab.client_ns().ip(&["route", "show"]).unwrap();
    assert!(
        routes.contains(&format!("default dev {}", names.client)),
        "{routes}"
    );
    let addrs = lab.server_ns().ip(&["-6", "addr", "show"]).unwrap();
    assert!(addrs.contains("2001:db8:1::1/64"), "{addrs}");
    // The root namespace never sees the devices.
    let root_links = netns::ip(&["link", "show"]).unwrap();
    assert!(!root_links.contains(&names.prefix), "{root_links}");
    // A program and a grandchild it leaves behind in the background.
    let p = Program::spawn(
        lab.server_ns(),
        "server",
        "sleep 60 & exec sleep 60",
        &lab.env(),
        Streams::Inherit,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let pids = netns::pids(&names.server);
    assert!(pids.len() >= 2, "{pids:?}");
    drop(p);
    lab.finish(None, None).unwrap();
    assert!(ours(&names.prefix).is_empty());
    for pid in pids {
        assert!(process_gone(pid), "process {pid} survived the lab");
    }
    let entry = Path::new(RUN_DIR).join(format!("{}.lock", names.prefix));
    assert!(!entry.exists(), "registry entry {} left", entry.display());
}

#[test]
fn a_panicking_test_still_tears_down() {
    let Some(_g) = common::lab_guard("a_panicking_test_still_tears_down") else {
        return;
    };
    let prefix = std::sync::Mutex::new(String::new());
    let r = std::panic::catch_unwind(|| {
        let lab = common::lab("");
        *prefix.lock().unwrap() = lab.names().prefix.clone();
        panic!("boom");
    });
    assert!(r.is_err());
    let prefix = prefix.into_inner().unwrap();
    assert!(!prefix.is_empty());
    assert!(ours(&prefix).is_empty(), "{:?}", ours(&prefix));
}

/// Set in the child process this test starts.
const CHILD_ENV: &str = "BRISK_LIVE_TEST_CHILD_LAB";

#[test]
fn sigkill_leftovers_are_cleaned_by_the_next_start() {
    if std::env::var(CHILD_ENV).is_ok() {
        // The child: a lab with a server and an orphan-to-be, then wait to
        // be killed.
        let lab = common::lab("");
        let _p = Program::spawn(
            lab.server_ns(),
            "server",
            "sleep 300 & exec sleep 300",
            &lab.env(),
            Streams::Inherit,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        println!("READY {}", lab.names().prefix);
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let Some(_g) = common::lab_guard("sigkill_leftovers_are_cleaned_by_the_next_start") else {
        return;
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "sigkill_leftovers_are_cleaned_by_the_next_start",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let prefix = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.split("READY ").nth(1).map(str::to_string))
        .expect("the child lab comes up");
    let server = format!("{prefix}s");
    let pids = netns::pids(&server);
    assert!(!pids.is_empty());
    child.kill().unwrap(); // SIGKILL: no cleanup runs in the child
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // The namespaces and the orphan survive the kill...
    assert_eq!(ours(&prefix).len(), 2);
    assert!(pids.iter().any(|p| !process_gone(*p)), "{pids:?}");
    // ...until the next start cleans them (Lab::up calls this first).
    let removed = registry::clean_stale(Path::new(RUN_DIR)).unwrap();
    assert!(removed.contains(&server), "{removed:?}");
    assert!(ours(&prefix).is_empty());
    for pid in pids {
        assert!(process_gone(pid), "process {pid} survived cleanup");
    }
}
