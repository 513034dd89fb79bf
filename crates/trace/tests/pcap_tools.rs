//! Captures written by `brisk_trace::pcap` must open in the tools people
//! trust: tshark (Wireshark's reader) and tcptrace.
//!
//! When a tool is missing the test is skipped with a message, unless the
//! environment sets `CI=true`, where a missing tool is a failure.

use brisk_time::Instant;
use brisk_trace::pcap::{LinkType, PcapConfig, PcapWriter, TsResolution};
use brisk_wire::tcp::{TcpFlags, TcpRepr};
use brisk_wire::{Ecn, tcp_datagram, udp_datagram};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const FIN: TcpFlags = TcpFlags::FIN;
const SYN: TcpFlags = TcpFlags::SYN;
const PSH: TcpFlags = TcpFlags::PSH;
const ACK: TcpFlags = TcpFlags::ACK;
/// One full-sized data segment's payload.
static DATA: [u8; 1000] = [0x5a; 1000];

/// Whether `tool` can run; panics under CI when it cannot.
fn tool_available(tool: &str) -> bool {
    let found = Command::new(tool).arg("-v").output().is_ok();
    if !found {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{tool} is required under CI (install it with scripts/setup)");
        }
        eprintln!(
            "skipping: {tool} is not installed (scripts/setup installs it); set CI=true to make this fail"
        );
    }
    found
}

fn run(tool: &str, args: &[&str]) -> Output {
    let out = Command::new(tool).args(args).output().expect("tool runs");
    assert!(
        out.status.success(),
        "{tool} {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("brisk-trace-{}-{name}", std::process::id()))
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// The TCP fields the tests vary; ports come from the addresses.
#[derive(Clone, Copy)]
struct Segment<'a> {
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    window: u16,
    ecn: Ecn,
    payload: &'a [u8],
}

fn tcp(src: SocketAddr, dst: SocketAddr, s: Segment) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
        seq_number: s.seq,
        ack_number: s.ack,
        flags: s.flags,
        window: s.window,
        urgent_pointer: 0,
        options: Vec::new(),
    };
    tcp_datagram(src.ip(), dst.ip(), s.ecn, &repr, s.payload).unwrap()
}

/// A whole TCP connection: handshake, five 1000-byte data segments of which
/// the third is lost and retransmitted, ACKs, and FIN both ways. Returns
/// the datagrams with their capture times.
fn tcp_connection(client: SocketAddr, server: SocketAddr, t0_ms: u64) -> Vec<(Instant, Vec<u8>)> {
    let payload: &[u8] = &DATA;
    let (c_isn, s_isn) = (1_000_u32, 50_000_u32);
    let seg = |seq, ack, flags, payload| Segment {
        seq,
        ack,
        flags,
        window: 65_535,
        ecn: Ecn::NotEct,
        payload,
    };
    let mut at = Instant::from_millis(t0_ms);
    let mut out = Vec::new();
    let mut push = |from: SocketAddr, to: SocketAddr, s: Segment| {
        at += Duration::from_micros(1_250);
        out.push((at, tcp(from, to, s)));
    };
    let c = c_isn + 1;
    let s = s_isn + 1;
    push(client, server, seg(c_isn, 0, SYN, &[]));
    push(server, client, seg(s_isn, c, SYN | ACK, &[]));
    push(client, server, seg(c, s, ACK, &[]));
    for i in 0..5 {
        // The third segment (i = 2) is lost on its first transmission:
        // it is in the capture (taken at the sender) but never acked.
        push(client, server, seg(c + 1000 * i, s, ACK | PSH, payload));
    }
    push(server, client, seg(s, c + 1000, ACK, &[]));
    push(server, client, seg(s, c + 2000, ACK, &[]));
    push(server, client, seg(s, c + 2000, ACK, &[]));
    push(server, client, seg(s, c + 2000, ACK, &[]));
    push(client, server, seg(c + 2000, s, ACK | PSH, payload));
    push(server, client, seg(s, c + 5000, ACK, &[]));
    push(client, server, seg(c + 5000, s, FIN | ACK, &[]));
    push(server, client, seg(s, c + 5001, FIN | ACK, &[]));
    push(client, server, seg(c + 5001, s + 1, ACK, &[]));
    out
}

fn write_capture(path: &Path, config: PcapConfig, packets: &[(Instant, Vec<u8>)]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(file, config).unwrap();
    for (at, d) in packets {
        w.write_packet(*at, d).unwrap();
    }
    assert_eq!(w.packets(), packets.len() as u64);
    w.into_inner().unwrap();
}

/// Mixed IPv4/IPv6, UDP/TCP datagrams with every ECN codepoint.
fn mixed_packets() -> Vec<(Instant, Vec<u8>)> {
    let ecns = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
    let mut out = Vec::new();
    let pairs = [
        ("192.0.2.1:51000", "198.51.100.7:51001"),
        ("[2001:db8::1]:51000", "[2001:db8::7]:51001"),
    ];
    for (i, (a, b)) in pairs.into_iter().enumerate() {
        for (j, ecn) in ecns.into_iter().enumerate() {
            let t =
                Instant::from_nanos(1_000_000_000 * (i as u64 * 8 + j as u64 * 2 + 1) + 123_456);
            out.push((t, udp_datagram(addr(a), addr(b), ecn, b"brisk").unwrap()));
            let seq = 1 + 3 * j as u32;
            let s = Segment {
                seq,
                ack: 1,
                flags: ACK,
                window: 1000,
                ecn,
                payload: b"tcp",
            };
            out.push((t + Duration::from_nanos(1), tcp(addr(a), addr(b), s)));
        }
    }
    out
}

/// tshark's fields for each packet, one line each, comma-separated, with
/// IP, UDP and TCP checksum verification switched on.
fn tshark_fields(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-r",
        path.to_str().unwrap(),
        "-T",
        "fields",
        "-E",
        "separator=,",
    ];
    for o in [
        "ip.check_checksum:TRUE",
        "udp.check_checksum:TRUE",
        "tcp.check_checksum:TRUE",
    ] {
        args.extend(["-o", o]);
    }
    for f in fields {
        args.extend(["-e", f]);
    }
    let out = run("tshark", &args);
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn tshark_reads_ipv4_ipv6_udp_tcp_with_ecn_and_nanoseconds() {
    if !tool_available("tshark") {
        return;
    }
    let packets = mixed_packets();
    let micros = PcapConfig::for_tcptrace();
    for (name, config) in [
        ("mixed.pcap", PcapConfig::default()),
        ("mixed-headers-us.pcap", micros.headers_only()),
    ] {
        let path = temp_path(name);
        write_capture(&path, config, &packets);
        let rows = tshark_fields(
            &path,
            &[
                "frame.time_epoch",
                "frame.protocols",
                "ip.dsfield.ecn",
                "ipv6.tclass.ecn",
                "udp.srcport",
                "tcp.srcport",
                "ip.checksum.status",
                "udp.checksum.status",
                "tcp.checksum.status",
                "_ws.malformed",
            ],
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(rows.len(), packets.len(), "{name}: {rows:?}");
        for (cols, (at, d)) in rows.iter().zip(&packets) {
            let line = cols.join(",");
            let (secs, ns) = (at.as_nanos() / 1_000_000_000, at.as_nanos() % 1_000_000_000);
            // tshark prints the epoch time with nine decimals.
            let want_time = match config.resolution {
                TsResolution::Nanos => format!("{secs}.{ns:09}"),
                TsResolution::Micros => format!("{secs}.{:06}000", ns / 1_000),
            };
            assert_eq!(cols[0], want_time, "{name}: {line}");
            let version = d[0] >> 4;
            let is_udp = d[if version == 4 { 9 } else { 6 }] == 17;
            let want_protocols = match (version, is_udp) {
                (4, true) => "ip:udp:data",
                (4, false) => "ip:tcp:data",
                (_, true) => "ipv6:udp:data",
                (_, false) => "ipv6:tcp:data",
            };
            assert!(cols[1].ends_with(want_protocols), "{name}: {line}");
            let ecn = brisk_wire::ip::ecn(d).unwrap();
            let ecn_col = if version == 4 { &cols[2] } else { &cols[3] };
            assert_eq!(*ecn_col, ecn.bits().to_string(), "{name}: {line}");
            assert_eq!(cols[if is_udp { 4 } else { 5 }], "51000", "{name}: {line}");
            if config.snaplen_bytes >= d.len() as u32 {
                // Status 1 is "Good"; IPv6 has no header checksum.
                let want_ip = if version == 4 { "1" } else { "" };
                assert_eq!(cols[6], want_ip, "{name}: {line}");
                assert_eq!(cols[if is_udp { 7 } else { 8 }], "1", "{name}: {line}");
                assert_eq!(cols[9], "", "{name}: malformed {line}");
            }
        }
    }
}

#[test]
fn tshark_reads_single_family_link_types() {
    if !tool_available("tshark") {
        return;
    }
    let packets = mixed_packets();
    for (link, version, prefix) in [(LinkType::Ipv4, 4, "ip:"), (LinkType::Ipv6, 6, "ipv6:")] {
        let path = temp_path(&format!("link-{version}.pcap"));
        let mine: Vec<_> = packets
            .iter()
            .filter(|(_, d)| d[0] >> 4 == version)
            .cloned()
            .collect();
        write_capture(
            &path,
            PcapConfig {
                link,
                ..PcapConfig::default()
            },
            &mine,
        );
        let rows = tshark_fields(&path, &["frame.protocols"]);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(rows.len(), mine.len(), "{rows:?}");
        assert!(
            rows.iter().all(|r| r[0].starts_with(prefix)),
            "{link:?}: {rows:?}"
        );
    }
}

/// A count from tcptrace's long output for the first direction (a2b), the
/// first number after `key`.
fn tcptrace_count(text: &str, key: &str) -> u64 {
    let line = text
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in {text}"));
    line[key.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// tcptrace reads the capture through libpcap, which accepts both magic
/// numbers and scales nanoseconds to microseconds: both formats must give
/// the same analysis, in both address families.
#[test]
fn tcptrace_analyses_tcp_captures_in_both_resolutions_and_families() {
    if !tool_available("tcptrace") {
        return;
    }
    for (family, client, server) in [
        ("4", "10.0.0.1:40000", "10.0.0.2:80"),
        ("6", "[2001:db8::1]:40000", "[2001:db8::2]:80"),
    ] {
        let packets = tcp_connection(addr(client), addr(server), 5);
        for resolution in [TsResolution::Nanos, TsResolution::Micros] {
            let name = format!("tcp{family}-{resolution:?}.pcap");
            let path = temp_path(&name);
            write_capture(
                &path,
                PcapConfig {
                    resolution,
                    ..PcapConfig::default()
                },
                &packets,
            );
            let out = run("tcptrace", &["-l", "-n", path.to_str().unwrap()]);
            std::fs::remove_file(&path).unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(text.contains("1 TCP connection traced"), "{name}: {text}");
            // The client (a2b) sent SYN, ACK, 5 data, 1 retransmission, FIN
            // and the last ACK: 10 packets, 5000 unique bytes, one rexmt.
            assert_eq!(
                tcptrace_count(&text, "total packets:"),
                17,
                "{name}: {text}"
            );
            let a2b = text.split_once("a->b:").map(|(_, t)| t).unwrap_or_default();
            assert_eq!(tcptrace_count(a2b, "total packets:"), 10, "{name}: {text}");
            assert_eq!(
                tcptrace_count(a2b, "unique bytes sent:"),
                5000,
                "{name}: {text}"
            );
            assert_eq!(tcptrace_count(a2b, "rexmt data pkts:"), 1, "{name}: {text}");
            // First packet at 5 ms + 1.25 ms, last 16 steps later.
            assert!(
                text.contains("first packet:  Thu Jan  1 00:00:00.006250 1970"),
                "{name}: {text}"
            );
            assert!(
                text.contains("elapsed time:  0:00:00.020000"),
                "{name}: {text}"
            );
        }
    }
}
