//! `brisk optimize` as an operator meets it: mistakes end it at once with
//! a message and exit status 1; with root, it bridges two interfaces of a
//! namespace, reports counters, and a SIGTERM ends it with a summary and
//! exit status 0.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output};
use std::time::Duration;

fn brisk_optimize(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_brisk"))
        .arg("optimize")
        .args(args)
        .output()
        .expect("brisk runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn mistakes_end_it_with_a_message_and_status_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad_file = dir.path().join("optimize.toml");
    std::fs::write(
        &bad_file,
        "radio = \"a0\"\n[subscribers]\noptimize = [\"10.0.0.0/99\"]\n",
    )
    .expect("write");
    let bad_file = bad_file.to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--radio", "brisknope0", "--internet", "brisknope1"],
            "no interface named \"brisknope0\"",
        ),
        (&["--radio", "lo", "--internet", "lo"], "both lo"),
        (&["--internet", "lo"], "name both interfaces"),
        (&["--config", &bad_file], "line 3: [subscribers] optimize"),
    ];
    for (args, want) in cases {
        let out = brisk_optimize(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_sigterm_ends_it_with_a_summary() {
    if !brisk_live::sys::has_net_admin() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the bridge test needs root in CI"
        );
        eprintln!(
            "a_sigterm_ends_it_with_a_summary: SKIPPED: needs root for namespaces and raw sockets"
        );
        return;
    }
    let ns = brisk_live::netns::Netns::create(&format!("bridge8-{}-sig", std::process::id()))
        .expect("netns");
    // Two pairs, not one: a bridge between the two ends of one veth pair
    // would send every frame round in a loop.
    for args in [
        &["link", "add", "a0", "type", "veth", "peer", "name", "a1"][..],
        &["link", "add", "b0", "type", "veth", "peer", "name", "b1"],
        &["link", "set", "a0", "up"],
        &["link", "set", "a1", "up"],
        &["link", "set", "b0", "up"],
        &["link", "set", "b1", "up"],
    ] {
        ns.ip(args).expect("ip");
    }
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns.name(),
            env!("CARGO_BIN_EXE_brisk"),
            "optimize",
        ])
        .args(["--radio", "a0", "--internet", "b0", "--report-every", "0.2"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("brisk runs");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr piped")).lines();
    let mut err = String::new();
    // Signal only once it says it runs (its handlers are in place), after
    // a few reports.
    for line in lines.by_ref() {
        let line = line.expect("stderr reads");
        err.push_str(&line);
        err.push('\n');
        if line.contains("running;") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    // `ip netns exec` replaces itself with brisk: the pid is brisk's.
    brisk_live::sys::send_signal(child.id() as i32, libc::SIGTERM).expect("signal");
    for line in lines {
        err.push_str(&line.expect("stderr reads"));
        err.push('\n');
    }
    let status = child.wait().expect("brisk ends");
    assert_eq!(status.code(), Some(0), "{err}");
    for want in [
        "bridging a0 (radio) and b0 (internet), MTU 1500 bytes, optimizing every subscriber",
        "connections: 0 tracked now",
        "summary: [",
    ] {
        assert!(err.contains(want), "{want:?} in {err}");
    }
}
