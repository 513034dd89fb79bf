//! A server command that fails on its own is reported, and fails the run;
//! one that is stopped at the end, as every server is, does not.

mod common;

use brisk_live::{LabConfig, LiveOutcome, LiveRun, Workload};

fn run_with_server(server: &str) -> LiveOutcome {
    let lab = LabConfig::new(common::scenario(
        "[link.down]\nrate = \"10Mbit\"\n[link.up]\nrate = \"10Mbit\"\n",
    ));
    brisk_live::run(LiveRun {
        lab,
        server: Some(server.into()),
        workload: Workload::Command("sleep 0.3".into()),
        quiet_stdout: true,
        max_time: None,
    })
    .expect("the run completes")
}

#[test]
fn a_server_that_fails_before_the_client_ends_fails_the_run() {
    let Some(_g) = common::lab_guard("a_server_that_fails_before_the_client_ends_fails_the_run")
    else {
        return;
    };
    let failed = run_with_server("exit 3");
    assert_eq!(failed.exit_code, 0, "the client itself succeeded");
    assert_eq!(failed.server_failure, Some(3));
    assert_eq!(failed.process_exit_code(), 1);
    let killed = run_with_server("kill -9 $$");
    assert_eq!(killed.server_failure, Some(128 + 9));
    // Stopped at the end of the run: not a failure.
    let stopped = run_with_server("sleep 30");
    assert_eq!(stopped.server_failure, None);
    assert_eq!(stopped.process_exit_code(), 0);
    // Done by itself with success (`iperf3 -s -1` after its one test).
    let done = run_with_server("true");
    assert_eq!(done.server_failure, None);
}
