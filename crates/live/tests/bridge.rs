//! `brisk optimize`'s bridge between two real interfaces with kernel TCP
//! on both sides: three namespaces (server, bridge, client) joined by veth
//! pairs, the bridge's radio interface shaped to 20 Mbit/s by htb (its
//! 1000-packet queue is the radio's buffer), and a 4 MB download checked
//! by SHA-256 over IPv4 and IPv6, with the optimizer off (the baseline)
//! and on, in one run. With it on, the bridge acknowledges the server's
//! data in the client's name, so the server's kernel measures the short
//! RTT to the bridge instead of the radio queue's delay.

mod common;

use brisk_live::bridge::packet_socket::{self, Feature};
use brisk_live::bridge::{Bridge, BridgeError, BridgeSettings, BridgeSummary};
use brisk_live::netns::Netns;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Every namespace this test makes starts with this.
const PREFIX: &str = "bridge8";
const DOWNLOAD_BYTES: usize = 4_000_000;
const PORT: u16 = 5201;

struct Topology {
    server: Netns,
    bridge: Netns,
    client: Netns,
}

fn must(r: Result<String, brisk_live::LiveError>) {
    r.expect("ip command runs");
}

/// server [srv0] == [inet0] bridge [radio0] == [cli0] client, one subnet
/// per family across the bridge, which has no address of its own.
fn topology() -> Topology {
    let pid = std::process::id();
    let make = |role: &str| Netns::create(&format!("{PREFIX}-{pid}-{role}")).expect("netns");
    let (server, bridge, client) = (make("srv"), make("br"), make("cli"));
    for key in [
        "ipv6.conf.all.disable_ipv6",
        "ipv6.conf.default.disable_ipv6",
    ] {
        bridge.sysctl(key, "1").expect("sysctl");
    }
    let br = bridge.name().to_string();
    must(server.ip(&[
        "link", "add", "srv0", "type", "veth", "peer", "name", "inet0", "netns", &br,
    ]));
    must(client.ip(&[
        "link", "add", "cli0", "type", "veth", "peer", "name", "radio0", "netns", &br,
    ]));
    for (ns, dev, v4, v6) in [
        (&server, "srv0", "10.88.0.1/24", "fd88::1/64"),
        (&client, "cli0", "10.88.0.2/24", "fd88::2/64"),
    ] {
        must(ns.ip(&["addr", "add", v4, "dev", dev]));
        must(ns.ip(&["addr", "add", v6, "dev", dev, "nodad"]));
        must(ns.ip(&["link", "set", dev, "up"]));
        // A host's own frames would leave with the checksum left for a
        // card a veth does not have (and, with it, as 64 KB segments).
        ns.run(|| packet_socket::set_feature(dev, Feature::TransmitChecksums, false))
            .expect("enter namespace")
            .expect("turn off transmit checksums");
    }
    for dev in ["inet0", "radio0"] {
        must(bridge.ip(&["link", "set", dev, "up"]));
    }
    for args in [
        "qdisc add dev radio0 root handle 1: htb default 10",
        "class add dev radio0 parent 1: classid 1:10 htb rate 20mbit",
    ] {
        let out = std::process::Command::new("tc")
            .args(["-n", &br])
            .args(args.split(' '))
            .output()
            .expect("tc runs");
        assert!(out.status.success(), "tc {args}: {out:?}");
    }
    Topology {
        server,
        bridge,
        client,
    }
}

/// Seeded bytes, the same on both ends.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

struct Download {
    seconds: f64,
    server_rtt_ms: f64,
    server_retransmits: u32,
    bridge: BridgeSummary,
}

/// Asks the bridge to stop when dropped, so a failed check never leaves
/// it running.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One download through a fresh bridge; the bridge is stopped (as by a
/// signal) once the client has every byte.
fn download(t: &Topology, server_ip: IpAddr, settings: &BridgeSettings, seed: u64) -> Download {
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = StopOnDrop(stop.clone());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let bridge = {
        let (settings, stop) = (settings.clone(), stop.clone());
        t.bridge
            .spawn("bridge", move || -> Result<BridgeSummary, BridgeError> {
                let opened = Bridge::open(&settings);
                let _ = ready_tx.send(opened.as_ref().map(drop).map_err(|e| e.to_string()));
                opened?.run(&|| stop.load(Ordering::SeqCst), &mut |line| {
                    eprintln!("bridge: {line}")
                })
            })
            .expect("bridge thread")
    };
    ready_rx
        .recv()
        .expect("bridge thread answers")
        .expect("bridge opens");
    let addr = SocketAddr::new(server_ip, PORT);
    let listener = t
        .server
        .run(|| TcpListener::bind(addr))
        .expect("enter namespace")
        .expect("listen");
    let sent = data(DOWNLOAD_BYTES, seed);
    let want = Sha256::digest(&sent);
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        // The RTT is read three quarters into the transfer: at its end the
        // optimizer's server sees its FIN acknowledged only by the client,
        // once everything held is delivered, which is one long sample.
        let (head, tail) = sent.split_at(DOWNLOAD_BYTES / 4 * 3);
        s.write_all(head).expect("send");
        let info = brisk_live::sys::tcp_info(s.as_fd()).expect("TCP_INFO");
        s.write_all(tail).expect("send");
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let _ = s.read(&mut [0u8; 1]);
        let end = brisk_live::sys::tcp_info(s.as_fd()).expect("TCP_INFO");
        (info.rtt_us, end.total_retrans)
    });
    let start = Instant::now();
    let mut stream = t
        .client
        .run(|| TcpStream::connect_timeout(&addr, Duration::from_secs(5)))
        .expect("enter namespace")
        .expect("connect through the bridge");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut got = Vec::with_capacity(DOWNLOAD_BYTES);
    stream.read_to_end(&mut got).expect("download");
    let seconds = start.elapsed().as_secs_f64();
    drop(stream);
    let (server_rtt_us, server_retransmits) = server.join().expect("server thread");
    drop(stopper);
    let summary = bridge
        .join()
        .expect("bridge thread ends")
        .expect("bridge thread enters namespace")
        .expect("bridge runs");
    assert_eq!(got.len(), DOWNLOAD_BYTES, "bytes received");
    assert_eq!(Sha256::digest(&got), want, "SHA-256 of what arrived");
    Download {
        seconds,
        server_rtt_ms: f64::from(server_rtt_us) / 1000.0,
        server_retransmits,
        bridge: summary,
    }
}

#[test]
fn kernel_tcp_downloads_through_the_bridge_whole_and_optimized() {
    let Some(_g) = common::lab_guard("kernel_tcp_downloads_through_the_bridge_whole_and_optimized")
    else {
        return;
    };
    let t = topology();
    for (family, server_ip) in [
        ("IPv4", "10.88.0.1".parse::<IpAddr>().unwrap()),
        ("IPv6", "fd88::1".parse().unwrap()),
    ] {
        let mut off = BridgeSettings::new("radio0", "inet0");
        off.optimizer = None;
        off.report_every = None;
        let mut on = off.clone();
        on.optimizer = Some(brisk_optimizer::Config::default());
        on.subscribers = vec![
            "10.88.0.0/24".parse().unwrap(),
            "fd88::/64".parse().unwrap(),
        ];
        common::within_attempts(family, || {
            let base = download(&t, server_ip, &off, 7);
            let opt = download(&t, server_ip, &on, 8);
            for (name, d) in [("off", &base), ("on", &opt)] {
                eprintln!(
                    "{family} optimizer {name}: {:.1} MB in {:.2} s ({:.1} Mbit/s), SHA-256 matches; \
                     server's kernel RTT 3 MB in {:.2} ms, server retransmitted {} segments",
                    DOWNLOAD_BYTES as f64 / 1e6,
                    d.seconds,
                    DOWNLOAD_BYTES as f64 * 8.0 / d.seconds / 1e6,
                    d.server_rtt_ms,
                    d.server_retransmits
                );
                eprintln!("{family} optimizer {name}: bridge {}", d.bridge.text);
            }
            // Structural: with the optimizer off nothing is tracked; with it
            // on the download's connection was optimized and the bridge
            // acknowledged data in the client's name.
            assert!(base.bridge.stats.is_none());
            assert!(base.bridge.counters.passed_other_subscribers > 0);
            let stats = opt.bridge.stats.as_ref().expect("optimizer ran");
            assert!(stats.optimized_connections >= 1, "{}", opt.bridge.text);
            assert!(stats.local_acks > 0, "{}", opt.bridge.text);
            assert!(stats.segments_sent > 0, "{}", opt.bridge.text);
            assert_eq!(opt.bridge.held_bytes_left, 0, "{}", opt.bridge.text);
            // The effect against the baseline: the server no longer sees
            // the radio queue's delay.
            if opt.server_rtt_ms * 2.0 < base.server_rtt_ms {
                Ok(())
            } else {
                Err(format!(
                    "server's RTT {:.1} ms with the optimizer, {:.1} ms without: not halved",
                    opt.server_rtt_ms, base.server_rtt_ms
                ))
            }
        });
    }
}

/// Mistakes an operator makes get a clear error before anything runs.
#[test]
fn missing_down_and_mismatched_interfaces_are_refused_clearly() {
    let Some(_g) = common::lab_guard("missing_down_and_mismatched_interfaces_are_refused_clearly")
    else {
        return;
    };
    let ns = Netns::create(&format!("{PREFIX}-{}-err", std::process::id())).expect("netns");
    must(ns.ip(&["link", "add", "a0", "type", "veth", "peer", "name", "b0"]));
    let open = |radio: &str, internet: &str| {
        let s = BridgeSettings::new(radio, internet);
        ns.run(move || Bridge::open(&s).map(drop))
            .expect("enter namespace")
            .expect_err("refused")
    };
    let e = open("nope0", "a0");
    assert!(
        matches!(e, BridgeError::NoSuchInterface(ref n) if n == "nope0"),
        "{e}"
    );
    let e = open("a0", "b0");
    assert!(
        matches!(e, BridgeError::InterfaceDown(ref n) if n == "a0"),
        "{e}"
    );
    assert!(e.to_string().contains("ip link set a0 up"), "{e}");
    must(ns.ip(&["link", "set", "b0", "mtu", "1400"]));
    must(ns.ip(&["link", "set", "a0", "up"]));
    must(ns.ip(&["link", "set", "b0", "up"]));
    let e = open("a0", "b0");
    assert!(
        matches!(
            e,
            BridgeError::MtuMismatch {
                radio_mtu: 1500,
                internet_mtu: 1400,
                ..
            }
        ),
        "{e}"
    );
    let e = open("a0", "a0");
    assert!(e.to_string().contains("both a0"), "{e}");
    must(ns.ip(&["link", "set", "b0", "mtu", "1500"]));
    ns.run(|| Bridge::open(&BridgeSettings::new("a0", "b0")).map(drop))
        .expect("enter namespace")
        .expect("two up interfaces of one MTU open");
}
