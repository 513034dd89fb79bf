//! A client with two access paths on real sockets, IPv4 and IPv6. Two veth
//! pairs join a client namespace to a server namespace, "Wi-Fi" (20 Mbit/s)
//! and "cellular" (10 Mbit/s), each shaped by htb in both directions, with
//! the client's routes chosen by source address. The client uploads 6 MB
//! from its Wi-Fi address with its cellular address as the standby
//! (`Endpoint::set_standby`); mid-transfer the Wi-Fi path stalls for good
//! (both directions' rate drops to 8 bit/s: the link stays up and carries
//! nothing). The upload must finish over cellular with its SHA-256
//! matching; the receiver's longest wait between reads is printed.
//!
//! Needs root (namespaces, veth, tc): without it a test skips with a
//! message, unless CI=true, where it fails.

mod netns;

use brisk_io::{Endpoint, EndpointConfig, Keypair, ServerConfig};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BYTES: usize = 6 << 20;
/// The Wi-Fi path stalls once the server has read this much.
const STALL_AFTER: u64 = 2 << 20;
/// The whole upload must be done by then.
const DEADLINE: Duration = Duration::from_secs(12);
const PORT: u16 = 4433;

/// Runs `cmd`, panicking with its error output if it fails.
fn run(cmd: &[&str]) {
    let out = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// The two namespaces and their two paths, deleted on drop.
struct TwoPaths {
    client: String,
    server: String,
    /// The veth ends of each path: (client side, server side).
    links: [(String, String); 2],
}

/// One family's addresses: the server's service address, and per path
/// the client's and the server's ends with the prefix length.
struct Plan {
    v6: bool,
    service: &'static str,
    paths: [(&'static str, &'static str); 2],
    prefix: &'static str,
}

const V4: Plan = Plan {
    v6: false,
    service: "10.81.0.1",
    paths: [("10.81.1.2", "10.81.1.1"), ("10.81.2.2", "10.81.2.1")],
    prefix: "24",
};

const V6: Plan = Plan {
    v6: true,
    service: "fd81::1",
    paths: [("fd81:1::2", "fd81:1::1"), ("fd81:2::2", "fd81:2::1")],
    prefix: "64",
};

/// Path rates: Wi-Fi, cellular.
const RATES: [&str; 2] = ["20mbit", "10mbit"];

impl TwoPaths {
    fn create(plan: &Plan) -> TwoPaths {
        let tag = format!("{}{}", if plan.v6 { "6" } else { "4" }, std::process::id());
        let client = format!("twopath8-c{tag}");
        let server = format!("twopath8-s{tag}");
        for ns in [&client, &server] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            run(&["ip", "netns", "add", ns]);
            run(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        let links = [0, 1].map(|i| (format!("tp8c{i}{tag}"), format!("tp8s{i}{tag}")));
        let me = TwoPaths {
            client,
            server,
            links,
        };
        let (c, s) = (me.client.as_str(), me.server.as_str());
        let family = if plan.v6 { "-6" } else { "-4" };
        let service = format!("{}/{}", plan.service, if plan.v6 { 128 } else { 32 });
        run(&["ip", "-n", s, "addr", "add", service.as_str(), "dev", "lo"]);
        for (i, ((cl, sl), (ca, sa))) in me.links.iter().zip(plan.paths).enumerate() {
            let (cl, sl) = (cl.as_str(), sl.as_str());
            run(&[
                "ip",
                "link",
                "add",
                cl,
                "netns",
                c,
                "txqueuelen",
                "64",
                "type",
                "veth",
                "peer",
                "name",
                sl,
                "netns",
                s,
                "txqueuelen",
                "64",
            ]);
            for (ns, dev, addr) in [(c, cl, ca), (s, sl, sa)] {
                let a = format!("{addr}/{}", plan.prefix);
                let mut cmd = vec!["ip", "-n", ns, "addr", "add", a.as_str(), "dev", dev];
                if plan.v6 {
                    cmd.push("nodad");
                }
                run(&cmd);
                run(&["ip", "-n", ns, "link", "set", dev, "up"]);
                run(&[
                    "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "handle",
                    "1:", "htb", "default", "1",
                ]);
                run(&[
                    "ip", "netns", "exec", ns, "tc", "class", "add", "dev", dev, "parent", "1:",
                    "classid", "1:1", "htb", "rate", RATES[i],
                ]);
            }
            // The client's datagrams leave by the path of the address
            // they are sent from, as a phone's per-interface routing does.
            let table = format!("{}", 101 + i);
            run(&[
                "ip",
                family,
                "-n",
                c,
                "rule",
                "add",
                "from",
                ca,
                "table",
                table.as_str(),
            ]);
            run(&[
                "ip",
                family,
                "-n",
                c,
                "route",
                "add",
                plan.service,
                "via",
                sa,
                "dev",
                cl,
                "table",
                table.as_str(),
            ]);
        }
        me
    }

    /// Drops path `i`'s rate to 8 bit/s both ways: the link stays up and
    /// carries nothing, as a stalled Wi-Fi does.
    fn stall(&self, i: usize) {
        let (cl, sl) = &self.links[i];
        for (ns, dev) in [
            (self.client.as_str(), cl.as_str()),
            (self.server.as_str(), sl.as_str()),
        ] {
            run(&[
                "ip", "netns", "exec", ns, "tc", "class", "change", "dev", dev, "parent", "1:",
                "classid", "1:1", "htb", "rate", "8bit",
            ]);
        }
    }
}

impl Drop for TwoPaths {
    fn drop(&mut self) {
        for ns in [&self.client, &self.server] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// Runs `f` on a new thread inside namespace `ns`.
fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("open the namespace");
        // SAFETY: `file` is an open namespace descriptor; setns only moves
        // the calling thread.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 4099) as u8).collect()
}

/// What the server read: the SHA-256, the byte count and the longest wait
/// between two reads after the stall began.
struct Received {
    sha256: Vec<u8>,
    bytes: u64,
    longest_gap: Duration,
}

fn upload_survives_a_stalled_path(plan: &Plan) {
    let test = if plan.v6 {
        "two_path_v6"
    } else {
        "two_path_v4"
    };
    if !netns::root_or_skip(test) {
        return;
    }
    let lab = TwoPaths::create(plan);
    let service: IpAddr = plan.service.parse().unwrap();
    let server_addr = SocketAddr::new(service, PORT);
    let read = Arc::new(AtomicU64::new(0));
    let stalled_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let (key_tx, key_rx) = mpsc::channel();
    let server = {
        let (read, stalled_at) = (read.clone(), stalled_at.clone());
        in_netns(&lab.server, move || {
            runtime().block_on(async move {
                let mut c = ServerConfig::new(server_addr, Keypair::from_private([1; 32]));
                c.endpoint.transport.migration = true;
                let server = Endpoint::server(c).expect("server");
                key_tx.send(server.public_key().unwrap()).unwrap();
                let conn = server.accept().await.expect("a connection");
                let mut s = conn.accept_stream().await.expect("a stream");
                let (mut hash, mut bytes, mut longest_gap) = (Sha256::new(), 0u64, Duration::ZERO);
                let mut last = Instant::now();
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    let n = s.read(&mut buf).await.expect("read");
                    let now = Instant::now();
                    if stalled_at.lock().unwrap().is_some() {
                        longest_gap = longest_gap.max(now - last);
                    }
                    last = now;
                    if n == 0 {
                        break;
                    }
                    hash.update(&buf[..n]);
                    bytes += n as u64;
                    read.store(bytes, Ordering::Relaxed);
                }
                Received {
                    sha256: hash.finalize().to_vec(),
                    bytes,
                    longest_gap,
                }
            })
        })
    };
    let key = key_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server up");
    let (wifi, cellular): (IpAddr, IpAddr) = (
        plan.paths[0].0.parse().unwrap(),
        plan.paths[1].0.parse().unwrap(),
    );
    let finished = Arc::new(AtomicBool::new(false));
    let client_finished = finished.clone();
    let client = in_netns(&lab.client, move || {
        let finished = client_finished;
        runtime().block_on(async move {
            let mut config = EndpointConfig::default();
            config.transport.migration = true;
            config.transport.failover = true;
            let client = Endpoint::client_with(SocketAddr::new(wifi, 0), config).expect("client");
            client
                .set_standby(SocketAddr::new(cellular, 0))
                .expect("standby address");
            let conn = client.connect(server_addr, key).await.expect("connect");
            // The move happens during the upload, and the server's close
            // may end the connection (and its statistics) before this task
            // reads them after the upload: a watcher keeps the last ones.
            let watched = conn.clone();
            let watcher_finished = finished.clone();
            let watcher = tokio::spawn(async move {
                let mut last = None;
                while let Some(s) = watched.stats() {
                    last = Some(s);
                    if watcher_finished.load(Ordering::Relaxed) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                last
            });
            let mut s = conn.open_stream().await.expect("stream");
            s.write_all(&pattern(BYTES)).await.expect("write");
            // The server closes once it read the end, which may beat the
            // ACK this waits for: its byte count and hash are the check.
            let _ = s.shutdown().await;
            // Stay up until the receiver read the last byte, so the data
            // is not torn down with the endpoint.
            let waiting = Instant::now();
            while !finished.load(Ordering::Relaxed) && waiting.elapsed() < 2 * DEADLINE {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let moved = watcher.await.ok().flatten();
            (client.local_addr(), conn.stats().or(moved))
        })
    });
    let start = Instant::now();
    while read.load(Ordering::Relaxed) < STALL_AFTER {
        assert!(
            start.elapsed() < DEADLINE,
            "{test}: the upload never got going"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    lab.stall(0);
    let stall = Instant::now();
    *stalled_at.lock().unwrap() = Some(stall);
    let deadline = Instant::now() + DEADLINE;
    while !server.is_finished() {
        assert!(
            Instant::now() < deadline,
            "{test}: the upload did not finish after the Wi-Fi path stalled ({} of {BYTES} bytes)",
            read.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let done = stall.elapsed();
    finished.store(true, Ordering::Relaxed);
    let got = server.join().expect("server thread");
    let (local, stats) = client.join().expect("client thread");
    let stats = stats.expect("the client's connection statistics");
    eprintln!(
        "{test}: {} of {BYTES} bytes, SHA-256 {}; the rest took {:.2} s after the Wi-Fi path \
         stalled, longest wait between reads {:.0} ms; client now on {local}, path stalls {}, \
         paths validated {}, packets lost {} (machine loaded: wall-clock figures)",
        got.bytes,
        if got.sha256 == Sha256::digest(pattern(BYTES)).to_vec() {
            "matches"
        } else {
            "DIFFERS"
        },
        done.as_secs_f64(),
        got.longest_gap.as_secs_f64() * 1e3,
        stats.path_stalls,
        stats.paths_validated,
        stats.packets_lost,
    );
    assert_eq!(got.bytes, BYTES as u64, "{test}");
    assert_eq!(
        got.sha256,
        Sha256::digest(pattern(BYTES)).to_vec(),
        "{test}"
    );
    assert_eq!(
        local.ip(),
        cellular,
        "{test}: the client moved to its standby address"
    );
    assert!(
        stats.path_stalls >= 1 && stats.paths_validated >= 1,
        "{test}: {stats:?}"
    );
}

#[test]
fn an_upload_moves_to_the_standby_path_when_wifi_stalls_v4() {
    upload_survives_a_stalled_path(&V4);
}

#[test]
fn an_upload_moves_to_the_standby_path_when_wifi_stalls_v6() {
    upload_survives_a_stalled_path(&V6);
}
