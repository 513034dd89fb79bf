//! Interoperability: goresponsiveness (the Go client of the IETF draft)
//! measures Brisk's server on loopback and must report an RPM and a
//! throughput. The project's set-up tries to install it into
//! target/tools/bin through the Go module proxy, but the proxy this project
//! can reach refuses that module (403), so the test is ignored by default:
//! with the tool on PATH or in target/tools/bin, run it with
//! `cargo test --release -p brisk-rpm --test goresponsiveness -- --ignored`.
//! Run that way without the tool, it fails rather than pass unchecked.

use brisk_rpm::{Server, ServerOptions};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// The installed binary: target/tools/bin of this workspace, else PATH.
fn find_tool() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let installed = root.join("target/tools/bin/goresponsiveness");
    if installed.is_file() {
        return Some(installed);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("goresponsiveness"))
        .find(|p| p.is_file())
}

/// The first number after `label` on any line of `text`.
fn number_after(text: &str, label: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = &line[line.find(label)? + label.len()..];
        let token: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        token.parse().ok()
    })
}

#[test]
fn number_after_reads_the_tools_summary_lines() {
    let out = "Download:\n\tThroughput: 812.500 Mbps (101.562 MBps), using 4 parallel connections.\nFinal RPM: 2718 (P90)\n";
    assert_eq!(number_after(out, "Final RPM:"), Some(2718.0));
    assert_eq!(number_after(out, "Throughput:"), Some(812.5));
    assert_eq!(number_after(out, "Upload RPM:"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs goresponsiveness, which the reachable Go module proxy refuses (403)"]
async fn goresponsiveness_measures_brisks_server() {
    let tool = find_tool().expect(
        "goresponsiveness is not installed: put it on PATH or in target/tools/bin \
         (scripts/install-goresponsiveness installs it where the Go module proxy serves it)",
    );
    let server = Server::bind(
        "127.0.0.1:0".parse().expect("address"),
        ServerOptions {
            notsent_lowat: Some(16 * 1024),
            names: Vec::new(),
        },
    )
    .await
    .expect("bind");
    let local = server.local_addr().expect("local address");
    let serving = tokio::spawn(server.run());
    let child = tokio::process::Command::new(&tool)
        .args([
            "-url",
            &format!("https://{local}/config"),
            "-insecure-skip-verify=true",
            "-rpm.timeout",
            "8",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start goresponsiveness");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("goresponsiveness finished within 60 s")
        .expect("goresponsiveness output");
    serving.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "exit {}: {stderr}", out.status);
    let rpm = number_after(&stdout, "Final RPM:").expect("a Final RPM line");
    assert!(rpm > 0.0, "RPM {rpm}");
    let mbps = number_after(&stdout, "Throughput:").expect("a Throughput line");
    assert!(mbps > 1.0, "throughput {mbps} Mbit/s");
}
