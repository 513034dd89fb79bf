//! The `brisk` binary run as a user runs it: keygen, serve and get, perf,
//! sim, lab and live, with their outputs checked (not only exit codes).
//! Servers listen on port 0 and the tests read the address they print, so
//! parallel tests never race for a port.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn brisk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_brisk"))
}

/// The repository's root, for its scenario and suite files.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `cmd` and fails with its output when it did not succeed.
fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("brisk runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)))
}

/// A server process killed when the test ends, with the address it
/// printed on its startup line.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    /// Starts `cmd` and reads stderr until the line holding `marker`
    /// followed by the address (`... on ADDR ...`).
    fn start(cmd: &mut Command, marker: &str) -> Server {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let line = lines
            .next()
            .expect("a startup line")
            .expect("readable stderr");
        assert!(line.contains(marker), "startup line: {line}");
        let addr = line
            .split(" on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A key pair in `dir`: (secret file, public file).
fn keygen(dir: &Path) -> (PathBuf, PathBuf) {
    let prefix = dir.join("server");
    run_ok(brisk().arg("keygen").arg("-o").arg(&prefix));
    (prefix.with_extension("key"), prefix.with_extension("pub"))
}

#[test]
fn keygen_writes_a_pair_and_refuses_to_overwrite_it() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    let out = run_ok(brisk().arg("keygen").arg("-o").arg(&prefix));
    let printed = text(&out.stdout).trim().to_string();
    assert_eq!(printed.len(), 64, "stdout: {printed}");
    assert!(printed.chars().all(|c| c.is_ascii_hexdigit()));
    let public = std::fs::read_to_string(prefix.with_extension("pub")).unwrap();
    assert!(public.contains(&printed), "public file: {public}");
    let secret = std::fs::read_to_string(prefix.with_extension("key")).unwrap();
    assert!(
        !secret.contains(&printed),
        "the secret file holds the public key"
    );

    let again = brisk()
        .arg("keygen")
        .arg("-o")
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("k.key"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(prefix.with_extension("pub")).unwrap(),
        public,
        "a refused keygen changed the key"
    );
}

#[test]
fn serve_and_get_move_a_file_with_its_hash_and_timings() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let root = dir.path().join("files");
    std::fs::create_dir(&root).unwrap();
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(root.join("data.bin"), &data).unwrap();
    let server = Server::start(
        brisk()
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(&root)
            .arg("--key")
            .arg(&key),
        "serving",
    );
    let url = format!("brisk://{}/data.bin", server.addr);

    let copy = dir.path().join("copy.bin");
    let out = run_ok(
        brisk()
            .args(["get", &url, "--json", "--server-key"])
            .arg(&public)
            .arg("-o")
            .arg(&copy),
    );
    assert_eq!(std::fs::read(&copy).unwrap(), data);
    let r = json(&out);
    let hash = format!("{:x}", Sha256::digest(&data));
    assert_eq!(r["sha256"], hash);
    assert_eq!(r["bytes"], data.len() as u64);
    let (handshake, first, total) = (
        r["handshake_s"].as_f64().unwrap(),
        r["first_byte_s"].as_f64().unwrap(),
        r["total_s"].as_f64().unwrap(),
    );
    assert!(
        0.0 < handshake && handshake <= first && first <= total,
        "{r}"
    );
    assert!(r["bits_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(
        r["early_data"], true,
        "the request rode in the first flight"
    );
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));

    // Text mode: the curl -w style breakdown on stderr, no progress bar
    // (stderr is not a terminal here).
    let copy2 = dir.path().join("copy2.bin");
    let out = run_ok(
        brisk()
            .args(["get", &url, "--server-key"])
            .arg(&public)
            .arg("-o")
            .arg(&copy2),
    );
    let err = text(&out.stderr);
    for part in [
        "3.00 MB",
        "verified",
        "handshake",
        "first byte",
        "total",
        &hash,
    ] {
        assert!(err.contains(part), "{part:?} missing: {err}");
    }
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    assert_eq!(std::fs::read(&copy2).unwrap(), data);

    // The request after the handshake, as before early data.
    let copy3 = dir.path().join("copy3.bin");
    let out = run_ok(
        brisk()
            .args(["get", &url, "--json", "--no-early", "--server-key"])
            .arg(&public)
            .arg("-o")
            .arg(&copy3),
    );
    assert_eq!(json(&out)["early_data"], false);
    assert_eq!(std::fs::read(&copy3).unwrap(), data);
}

/// A perf server on loopback.
fn perf_server(key: &Path) -> Server {
    Server::start(
        brisk()
            .args(["perf", "server", "--listen", "127.0.0.1:0", "--key"])
            .arg(key),
        "listening",
    )
}

fn assert_end(end: &Value, who: &str) {
    assert_eq!(end["end"], who, "{end}");
    for field in [
        "bytes",
        "bits_per_second",
        "packets_sent",
        "packets_received",
        "packets_lost",
        "loss_rate",
        "packets_retransmitted",
        "smoothed_rtt_us",
        "cwnd_bytes",
    ] {
        assert!(end[field].is_number(), "{field} missing: {end}");
    }
}

fn assert_intervals(r: &Value, at_least: usize) -> &Vec<Value> {
    let list = r["intervals"].as_array().expect("intervals");
    assert!(list.len() >= at_least, "{} intervals: {r}", list.len());
    let mut end = 0.0;
    let mut bytes = 0;
    for i in list {
        let (s, e) = (i["start_s"].as_f64().unwrap(), i["end_s"].as_f64().unwrap());
        assert!((s - end).abs() < 1e-9 && e > s, "interval {i} after {end}");
        end = e;
        bytes += i["bytes"].as_u64().unwrap();
        assert!(i["bits_per_second"].as_f64().is_some());
    }
    assert_eq!(
        bytes,
        r["bytes"].as_u64().unwrap(),
        "intervals sum to the total"
    );
    list
}

#[test]
fn perf_download_reports_the_sender_the_receiver_and_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let server = perf_server(&key);
    let url = format!("brisk://{}", server.addr);
    let out = run_ok(
        brisk()
            .args([
                "perf",
                "client",
                &url,
                "--seconds",
                "1.5",
                "-i",
                "0.5",
                "--json",
            ])
            .arg("--server-key")
            .arg(&public),
    );
    let r = json(&out);
    assert_eq!(r["mode"], "download");
    assert_intervals(&r, 3);
    // In a download the server sends: its losses are the ones that count.
    assert_end(&r["sender"], "server");
    assert_end(&r["receiver"], "client");
    let sent = r["sender"]["packets_sent"].as_u64().unwrap();
    let received = r["receiver"]["packets_received"].as_u64().unwrap();
    assert!(sent >= received && received > 0, "{r}");
    assert!(r["sender"]["bytes"].as_u64().unwrap() >= r["bytes"].as_u64().unwrap());
}

#[test]
fn perf_upload_reports_the_client_as_sender_with_interval_losses() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let server = perf_server(&key);
    let url = format!("brisk://{}", server.addr);
    let out = run_ok(
        brisk()
            .args([
                "perf",
                "client",
                &url,
                "--upload",
                "--seconds",
                "1",
                "--json",
            ])
            .arg("--server-key")
            .arg(&public),
    );
    let r = json(&out);
    assert_eq!(r["mode"], "upload");
    for i in assert_intervals(&r, 1) {
        assert!(
            i["packets_lost"].is_number() && i["packets_retransmitted"].is_number(),
            "{i}"
        );
    }
    assert_end(&r["sender"], "client");
    assert_end(&r["receiver"], "server");
    // The server received every byte the client wrote (and the 9-byte
    // test header).
    assert!(r["receiver"]["bytes"].as_u64().unwrap() >= r["bytes"].as_u64().unwrap());
}

#[test]
fn perf_text_prints_intervals_and_both_ends_in_readable_units() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let server = perf_server(&key);
    let url = format!("brisk://{}", server.addr);
    let out = run_ok(
        brisk()
            .args(["perf", "client", &url, "--seconds", "1", "-i", "0.25"])
            .arg("--server-key")
            .arg(&public),
    );
    let s = text(&out.stdout);
    let intervals = s.lines().filter(|l| l.starts_with("[  0.")).count();
    assert!(intervals >= 3, "{s}");
    for part in [
        "download:",
        "sender (server):",
        "lost",
        "retransmitted",
        "receiver (client):",
    ] {
        assert!(s.contains(part), "{part:?} missing: {s}");
    }
    assert!(s.contains("Mbit/s") || s.contains("Gbit/s"), "{s}");
    let off = run_ok(
        brisk()
            .args(["perf", "client", &url, "--seconds", "0.3", "-i", "0"])
            .arg("--server-key")
            .arg(&public),
    );
    assert!(
        !text(&off.stdout).contains("[  0."),
        "{}",
        text(&off.stdout)
    );
}

#[test]
fn sim_runs_a_shipped_scenario_as_json() {
    let out = run_ok(
        brisk()
            .arg("sim")
            .arg(repo().join("scenarios/fifo-overload.toml"))
            .args(["--duration", "2s", "--json"]),
    );
    let r = json(&out);
    assert_eq!(r["scenario"], "fifo-overload");
    assert_eq!(r["queue"]["kind"], "fifo");
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{r}");
    // 12 Mbit/s into 10 Mbit/s: the link is busy and the FIFO drops.
    assert!(
        r["link"]["utilization"].as_f64().unwrap() > 0.9,
        "{}",
        r["link"]
    );
    assert!(r["queue"]["drops"].as_u64().unwrap() > 0, "{}", r["queue"]);
}

/// `brisk sim ... | head -1`: the reader leaves before the report is
/// written; brisk ends as `cat` would, without a panic message.
#[test]
fn sim_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = brisk()
        .arg("sim")
        .arg(repo().join("scenarios/fifo-overload.toml"))
        .args(["--duration", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("brisk runs");
    // Close the only reader before the run has printed anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("brisk ends");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
        "{}: {stderr}",
        out.status
    );
}

#[test]
fn lab_writes_a_report_for_a_small_suite() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("small");
    std::fs::create_dir_all(suite.join("send-buffer")).unwrap();
    std::fs::write(
        suite.join("suite.toml"),
        "title = \"One section\"\nquick_duration = \"2s\"\n",
    )
    .unwrap();
    for f in ["classic.toml", "lowat.toml"] {
        std::fs::copy(
            repo().join("lab/default/send-buffer").join(f),
            suite.join("send-buffer").join(f),
        )
        .unwrap();
    }
    let out_dir = dir.path().join("out");
    run_ok(
        brisk()
            .args(["lab", "--quick", "--jobs", "1", "--no-capture", "--suite"])
            .arg(&suite)
            .arg("--out")
            .arg(&out_dir),
    );
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("One section"), "the report names its suite");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    let all = results.to_string();
    assert!(
        all.contains("classic") && all.contains("lowat"),
        "{all:.400}"
    );
}

/// Whether this test may create network namespaces; prints why not, and
/// fails instead of skipping when CI=true.
fn live_lab_available() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| text(&o.stdout).trim() == "0");
    let have = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let why = if !root {
        "it needs root (network namespaces and TUN devices)"
    } else if !have("iperf3") {
        "iperf3 is not installed (scripts/setup installs it)"
    } else {
        return true;
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "live lab test cannot run under CI: {why}"
    );
    eprintln!("skipping the live lab test: {why}");
    false
}

/// The namespaces `brisk live` process `pid` left behind.
fn leftover_namespaces(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("brk{pid}x");
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(String::from)
        .collect()
}

#[test]
fn live_names_both_directions_and_warns_about_the_unconfigured_up_queue() {
    if !live_lab_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("upload.toml");
    std::fs::write(
        &scenario,
        "name = \"upload-through-default\"\nduration = \"2s\"\n\
         [link.down]\nrate = \"20Mbit\"\ndelay = \"5ms\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
         [queue.fq_codel]\n",
    )
    .unwrap();
    // iperf3's default test is an upload: its data crosses the up queue.
    let child = brisk()
        .arg("live")
        .arg(&scenario)
        .args([
            "--server",
            "iperf3 -s -1 -p 5201",
            "--client",
            "iperf3 -c \"$BRISK_SERVER\" -p 5201 -t 1",
            "--max-time",
            "20",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        leftover_namespaces(pid).is_empty(),
        "namespaces left behind"
    );
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {stdout}"))
            .to_string()
    };
    let down = row("down (server to client)");
    let up = row("up (client to server)");
    assert!(down.contains("fq_codel") && down.contains("Mb/s"), "{down}");
    assert!(up.contains("fifo*") && up.contains("Mb/s"), "{up}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning:") && l.contains("up (client to server)"))
        .unwrap_or_else(|| panic!("no warning for the up queue: {stderr}"));
    assert!(warning.contains("through a fifo queue"), "{warning}");
    assert!(warning.contains("[queue_up.fq_codel]"), "{warning}");
    assert!(
        !stderr.contains("down (server to client) through"),
        "the configured direction was warned about: {stderr}"
    );
    // The upload shows as an up flow that moved data.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("tcp ") && l.contains(" up ")),
        "{stdout}"
    );
}

#[test]
fn live_perf_download_counts_losses_where_they_happen_at_the_sender() {
    if !live_lab_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let scenario = dir.path().join("lossy.toml");
    std::fs::write(
        &scenario,
        "name = \"lossy-download\"\nduration = \"2s\"\n\
         [link.down]\nrate = \"20Mbit\"\ndelay = \"10ms\"\nloss = \"3%\"\n\
         [link.up]\nrate = \"20Mbit\"\ndelay = \"10ms\"\n\
         [queue.fifo]\n[queue_up.fifo]\n",
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_brisk");
    let child = brisk()
        .arg("live")
        .arg(&scenario)
        .arg("--json")
        .arg("--server")
        .arg(format!(
            "{bin} perf server --listen 0.0.0.0:4433 --key {}",
            key.display()
        ))
        .arg("--client")
        .arg(format!(
            "{bin} perf client brisk://$BRISK_SERVER:4433 --server-key {} --seconds 2 --json",
            public.display()
        ))
        .args(["--max-time", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", text(&out.stdout));
    assert!(
        leftover_namespaces(pid).is_empty(),
        "namespaces left behind"
    );
    let live = json(&out);
    // With --json the programs' stdout goes to stderr: the perf report.
    let perf: Value = stderr
        .lines()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v["mode"].is_string())
        })
        .unwrap_or_else(|| panic!("no perf JSON: {stderr}"));
    let link_lost = live["link"]["lost_packets"].as_u64().unwrap();
    assert!(link_lost > 0, "the link lost nothing: {}", live["link"]);
    let sender = &perf["sender"];
    assert_eq!(sender["end"], "server", "{perf}");
    let lost = sender["packets_lost"].as_u64().unwrap();
    let spurious = sender["spurious_losses"].as_u64().unwrap();
    // The sender declares (about) the losses the link made; the receiver,
    // whose packets were not lost, is not where to read them.
    assert!(lost > 0, "sender saw no loss over a lossy link: {perf}");
    let dropped = live["queue"]["drops"].as_u64().unwrap();
    assert!(
        lost - spurious.min(lost) <= link_lost + dropped,
        "{lost} > {link_lost} + {dropped}: {perf}"
    );
    assert!(2 * lost >= link_lost, "{lost} of {link_lost}: {perf}");
    assert!(
        sender["packets_retransmitted"].as_u64().unwrap() > 0,
        "{perf}"
    );
    assert!(perf["intervals"].as_array().unwrap().len() >= 2, "{perf}");
}
