//! A live Brisk server, alone in a network namespace, sent forged ICMP and
//! ICMPv6 errors of every kind by a raw socket, each quoting a datagram
//! the server really sent to a client (to the client's port and to a
//! wrong one), in the middle of a transfer: the transfer completes with
//! the right bytes, every error is counted under its kind, a "too big"
//! leaves its MTU on the connection, and new clients are still served.
//! Then a flood of port-unreachable errors: a client arriving after it
//! still connects and transfers. IPv4, IPv6, and a dual-stack server.
//!
//! Needs root (see `netns::root_or_skip`).

mod common;
mod netns;

use brisk_io::socket_error::{ErrorStats, ReportKind};
use brisk_io::{Connection, Endpoint, Stream};
use common::*;
use netns::{Capture, Forged, Forger, Netns, root_or_skip};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// Bytes of the transfer the errors interrupt.
const TRANSFER_BYTES: usize = 4 << 20;
/// The MTU forged "too big" errors report.
const FORGED_MTU: u16 = 1400;

/// Every IPv4 error kind: destination unreachable codes 0-15, time
/// exceeded, parameter problem; with the kind each must be counted as
/// (`None`: the kernel does not pass it to the socket).
fn icmp_errors() -> Vec<(Forged, Option<ReportKind>)> {
    use ReportKind::*;
    let unreachable = [
        Unreachable,     // 0 net
        Unreachable,     // 1 host
        Protocol,        // 2 protocol
        PortUnreachable, // 3 port
        TooBig,          // 4 fragmentation needed
        Protocol,        // 5 source route failed
        Unreachable,     // 6 net unknown
        Unreachable,     // 7 host unknown
        Unreachable,     // 8 host isolated
        Prohibited,      // 9 net prohibited
        Prohibited,      // 10 host prohibited
        Unreachable,     // 11 net unreachable for TOS
        Unreachable,     // 12 host unreachable for TOS
        Prohibited,      // 13 communication prohibited
        Prohibited,      // 14 host precedence violation
        Prohibited,      // 15 precedence cutoff
    ];
    let mut all: Vec<_> = (0u8..)
        .zip(unreachable)
        .map(|(code, kind)| {
            let f = Forged::new(3, code);
            let f = if code == 4 { f.with_mtu(FORGED_MTU) } else { f };
            (f, Some(kind))
        })
        .collect();
    all.push((Forged::new(11, 0), Some(TimeExceeded)));
    // Fragment reassembly time exceeded: Linux drops it (icmp_unreach).
    all.push((Forged::new(11, 1), None));
    all.extend((0..3).map(|code| (Forged::new(12, code), Some(Protocol))));
    all
}

/// Every ICMPv6 error: destination unreachable codes 0-7, packet too big,
/// time exceeded, parameter problem.
fn icmpv6_errors() -> Vec<(Forged, Option<ReportKind>)> {
    use ReportKind::*;
    let unreachable = [
        Unreachable,     // 0 no route
        Prohibited,      // 1 administratively prohibited
        Unreachable,     // 2 beyond the source's scope
        Unreachable,     // 3 address unreachable
        PortUnreachable, // 4 port
        Prohibited,      // 5 source address failed policy
        Unreachable,     // 6 reject route
        Unreachable,     // 7 error in source routing header
    ];
    let mut all: Vec<_> = (0u8..)
        .zip(unreachable)
        .map(|(code, kind)| (Forged::new(1, code), Some(kind)))
        .collect();
    all.push((Forged::new(2, 0).with_mtu(FORGED_MTU), Some(TooBig)));
    all.extend((0..2).map(|code| (Forged::new(3, code), Some(TimeExceeded))));
    all.extend((0..4).map(|code| (Forged::new(4, code), Some(Protocol))));
    all
}

/// Adds one report of `kind` to `stats`, as the endpoint should.
fn tally(stats: &mut ErrorStats, kind: ReportKind) {
    match kind {
        ReportKind::PortUnreachable => stats.port_unreachable += 1,
        ReportKind::Unreachable => stats.unreachable += 1,
        ReportKind::Prohibited => stats.prohibited += 1,
        ReportKind::TooBig => stats.too_big += 1,
        ReportKind::Protocol => stats.protocol += 1,
        ReportKind::TimeExceeded => stats.time_exceeded += 1,
        ReportKind::Other => stats.other += 1,
    }
}

/// The counts by kind, the rest of the statistics left out.
fn kinds(s: &ErrorStats) -> [u64; 7] {
    [
        s.port_unreachable,
        s.unreachable,
        s.prohibited,
        s.too_big,
        s.protocol,
        s.time_exceeded,
        s.other,
    ]
}

/// A request for this many bytes is an upload instead: the client sends
/// until it closes, the server answers with the byte count and SHA-256.
const UPLOAD: u64 = u64::MAX;

/// Serves `n` bytes of `pattern(n, n)` per stream (the request is the
/// 8-byte `n`), holding the second half back until `gate` opens, or takes
/// an upload ([`UPLOAD`]); keeps each accepted connection in `accepted`.
fn spawn_gated_server(
    server: Endpoint,
    gate: watch::Receiver<bool>,
    accepted: Arc<Mutex<Vec<Connection>>>,
) {
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            accepted.lock().unwrap().push(conn.clone());
            let gate = gate.clone();
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(serve(s, gate.clone()));
                }
            });
        }
    });
}

async fn serve(mut s: Stream, mut gate: watch::Receiver<bool>) {
    let mut len = [0u8; 8];
    if s.read_exact(&mut len).await.is_err() {
        return;
    }
    if u64::from_be_bytes(len) == UPLOAD {
        let mut hash = Sha256::new();
        let mut count = 0u64;
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(got) = s.read(&mut buf).await {
            if got == 0 {
                break;
            }
            hash.update(&buf[..got]);
            count += got as u64;
        }
        let _ = s.write_all(&count.to_be_bytes()).await;
        let _ = s.write_all(&hash.finalize()).await;
        let _ = s.shutdown().await;
        return;
    }
    let n = u64::from_be_bytes(len) as usize;
    let body = pattern(n, n as u64);
    let (first, second) = body.split_at(n / 2);
    if s.write_all(first).await.is_err() || gate.wait_for(|open| *open).await.is_err() {
        return;
    }
    if s.write_all(second).await.is_ok() {
        let _ = s.shutdown().await;
    }
}

/// Asks for `n` bytes on a new stream.
async fn request(conn: &Connection, n: usize) -> Stream {
    let mut s = conn.open_stream().await.expect("open a stream");
    s.write_all(&(n as u64).to_be_bytes()).await.unwrap();
    s.shutdown().await.unwrap();
    s
}

/// Fetches `n` bytes on a new stream and checks them.
async fn fetch_checked(conn: &Connection, n: usize) {
    let mut s = request(conn, n).await;
    let mut got = Vec::with_capacity(n);
    s.read_to_end(&mut got).await.expect("read the answer");
    assert!(got == pattern(n, n as u64), "{n} bytes came back wrong");
}

fn loopback_ip(v6: bool) -> IpAddr {
    if v6 {
        Ipv6Addr::LOCALHOST.into()
    } else {
        Ipv4Addr::LOCALHOST.into()
    }
}

/// A server on `bind`, its gate, and a client of `v6`'s family connected
/// to it with a capture of what the server sent that client: the first
/// short-header (established) datagram's head.
struct Setup {
    server: Endpoint,
    server_addr: SocketAddr,
    gate: watch::Sender<bool>,
    accepted: Arc<Mutex<Vec<Connection>>>,
    client: Endpoint,
    conn: Connection,
}

async fn setup(bind: SocketAddr, v6: bool, gate_open: bool) -> Setup {
    let server = server_on(bind, 1, config());
    let server_addr = SocketAddr::new(loopback_ip(v6), server.local_addr().port());
    let (gate, gate_rx) = watch::channel(gate_open);
    let accepted = Arc::new(Mutex::new(Vec::new()));
    spawn_gated_server(server.clone(), gate_rx, accepted.clone());
    let client = client(v6);
    let conn = client
        .connect(server_addr, server.public_key().unwrap())
        .await
        .expect("connect");
    Setup {
        server,
        server_addr,
        gate,
        accepted,
        client,
        conn,
    }
}

/// The head of a short-header datagram the server sent to `client`.
async fn captured(capture: Capture, server: SocketAddr, client: SocketAddr) -> Vec<u8> {
    tokio::task::spawn_blocking(move || {
        capture.datagram(
            server.port(),
            client.port(),
            Duration::from_secs(2),
            |head| brisk_proto::packet::long_header_source_cid(head).is_none(),
        )
    })
    .await
    .unwrap()
    .expect("no datagram from the server to the client was captured")
}

/// Forges each error of `errors` about `head` (sent from `server` to
/// `client`) twice: quoting the client's port, then a wrong one.
async fn forge_all(
    errors: Vec<(Forged, Option<ReportKind>)>,
    server: SocketAddr,
    client: SocketAddr,
    head: Vec<u8>,
) {
    tokio::task::spawn_blocking(move || {
        let forger = Forger::new(client.is_ipv6());
        let wrong = SocketAddr::new(client.ip(), client.port() ^ 0x5a5a);
        for (f, _) in &errors {
            for to in [client, wrong] {
                let m = forger.message(*f, server, to, &head);
                forger.send(server.ip(), &m).expect("send a forged error");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    })
    .await
    .unwrap();
}

/// Waits up to 3 s for the server to have read `n` error reports.
async fn reports_reach(server: &Endpoint, n: u64) -> ErrorStats {
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let errors = server.stats().socket.errors;
        if errors.reports() >= n || Instant::now() > end {
            return errors;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Uploads until `stop` is set, then checks the server's count and hash.
async fn upload_until(conn: Connection, stop: Arc<AtomicBool>) -> u64 {
    let mut s = conn.open_stream().await.expect("open a stream");
    s.write_all(&UPLOAD.to_be_bytes()).await.unwrap();
    let chunk = pattern(16 << 10, 7);
    let mut hash = Sha256::new();
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        s.write_all(&chunk).await.expect("upload");
        hash.update(&chunk);
        sent += chunk.len() as u64;
    }
    s.shutdown().await.expect("finish the upload");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)
        .await
        .expect("the server's answer");
    assert_eq!(answer.len(), 8 + 32, "the server's answer");
    assert_eq!(answer[..8], sent.to_be_bytes(), "bytes the server received");
    assert!(answer[8..] == hash.finalize()[..], "the upload's hash");
    sent
}

/// The transfers survive every error kind of the client's family, and
/// the server serves a new client afterwards. Two transfers run: a
/// download held half-way, and an upload at full speed while the errors
/// arrive, so the server meets them in its receive and send calls too,
/// not only in its error queue.
async fn every_kind(bind: SocketAddr, v6: bool) {
    let capture = Capture::start(v6);
    let s = setup(bind, v6, false).await;
    let client_addr = s.client.local_addr();
    let mut stream = request(&s.conn, TRANSFER_BYTES).await;
    let mut got = vec![0u8; TRANSFER_BYTES / 2];
    stream.read_exact(&mut got).await.expect("the first half");
    let head = captured(capture, s.server_addr, client_addr).await;
    let stop = Arc::new(AtomicBool::new(false));
    let upload = tokio::spawn(upload_until(s.conn.clone(), stop.clone()));
    // The upload is under way before the first error.
    while s.server.stats().socket.datagrams_received < 200 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let errors = if v6 { icmpv6_errors() } else { icmp_errors() };
    let mut expected = ErrorStats::default();
    for kind in errors.iter().filter_map(|(_, kind)| *kind) {
        tally(&mut expected, kind);
        tally(&mut expected, kind);
    }
    let received_before = s.server.stats().socket.datagrams_received;
    forge_all(errors, s.server_addr, client_addr, head).await;
    let received_during = s.server.stats().socket.datagrams_received - received_before;
    stop.store(true, Ordering::Relaxed);
    let uploaded = upload.await.expect("the upload");
    // The server read every one.
    let seen = reports_reach(&s.server, expected.reports()).await;
    eprintln!(
        "{}: {} forged errors; the server received {received_during} datagrams meanwhile, \
         met {} of the errors in a receive or send call, the upload moved {uploaded} bytes",
        if v6 { "ICMPv6" } else { "ICMP" },
        expected.reports(),
        seen.peer,
    );
    assert_eq!(kinds(&seen), kinds(&expected), "{seen:?}");
    let mtu = s.accepted.lock().unwrap()[0].reported_path_mtu();
    assert_eq!(mtu, Some(u32::from(FORGED_MTU)));
    // The rest of the transfer, then more on the same connection and on
    // a new client's.
    s.gate.send(true).unwrap();
    let mut rest = Vec::new();
    stream
        .read_to_end(&mut rest)
        .await
        .expect("the second half");
    got.extend_from_slice(&rest);
    assert!(
        got == pattern(TRANSFER_BYTES, TRANSFER_BYTES as u64),
        "the transfer's bytes came back wrong"
    );
    fetch_checked(&s.conn, 100_000).await;
    let late = client(v6);
    let conn = late
        .connect(s.server_addr, s.server.public_key().unwrap())
        .await
        .expect("a new client connects after the errors");
    fetch_checked(&conn, 1 << 20).await;
    assert_eq!(s.server.failure(), None);
    assert_eq!(s.server.stats().proto.connections_accepted, 2);
}

/// Forged port-unreachable errors sent as fast as a raw socket goes.
const FLOOD_ERRORS: usize = 50_000;

/// After a flood of port-unreachable errors about an idle connection's
/// datagrams, a new client still connects and transfers.
async fn flood(bind: SocketAddr, v6: bool) {
    let capture = Capture::start(v6);
    let s = setup(bind, v6, true).await;
    let client_addr = s.client.local_addr();
    fetch_checked(&s.conn, 200_000).await;
    let head = captured(capture, s.server_addr, client_addr).await;
    let server_addr = s.server_addr;
    let forge_time = tokio::task::spawn_blocking(move || {
        let forger = Forger::new(v6);
        let f = if v6 {
            Forged::new(1, 4)
        } else {
            Forged::new(3, 3)
        };
        let m = forger.message(f, server_addr, client_addr, &head);
        let start = Instant::now();
        for _ in 0..FLOOD_ERRORS {
            forger
                .send(server_addr.ip(), &m)
                .expect("send a forged error");
        }
        start.elapsed()
    })
    .await
    .unwrap();
    let after_flood = Instant::now();
    let late = client(v6);
    let conn = late
        .connect(s.server_addr, s.server.public_key().unwrap())
        .await
        .expect("a new client connects after the flood");
    let connected = after_flood.elapsed();
    fetch_checked(&conn, 1 << 20).await;
    fetch_checked(&s.conn, 200_000).await;
    let transferred = after_flood.elapsed();
    let errors = s.server.stats().socket.errors;
    eprintln!(
        "{}: {FLOOD_ERRORS} forged port-unreachable errors sent in {} ms; the server read \
         {} of them ({} read turns hit the bound of {} entries), the kernel dropped {} \
         datagrams; a new client connected {} ms after the flood and fetched 1 MiB \
         within {} ms",
        if v6 { "IPv6" } else { "IPv4" },
        forge_time.as_millis(),
        errors.port_unreachable,
        errors.queue_bound_reached,
        brisk_io::socket_error::MAX_ERRORS_PER_TURN,
        errors.kernel_drops,
        connected.as_millis(),
        transferred.as_millis(),
    );
    assert!(errors.port_unreachable > 0, "{errors:?}");
    assert_eq!(errors.unreachable + errors.other, 0, "{errors:?}");
    assert_eq!(s.server.failure(), None);
}

/// Runs `test` on a two-thread runtime inside a namespace of its own.
fn in_namespace<F: std::future::Future<Output = ()>>(
    tag: &'static str,
    test: impl FnOnce() -> F + Send + 'static,
) {
    if !root_or_skip(tag) {
        return;
    }
    let ns = Netns::create(tag);
    ns.run(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(test())
    });
}

fn bind(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn every_icmp_error_kind_v4() {
    in_namespace("kinds4", || every_kind(bind("127.0.0.1:0"), false));
}

#[test]
fn every_icmpv6_error_kind_v6() {
    in_namespace("kinds6", || every_kind(bind("[::1]:0"), true));
}

/// A dual-stack socket gets IPv4 errors through its IPv6 socket.
#[test]
fn every_icmp_error_kind_dual_stack_v4() {
    in_namespace("kindsd4", || every_kind(bind("[::]:0"), false));
}

#[test]
fn every_icmpv6_error_kind_dual_stack_v6() {
    in_namespace("kindsd6", || every_kind(bind("[::]:0"), true));
}

#[test]
fn port_unreachable_flood_v4() {
    in_namespace("flood4", || flood(bind("127.0.0.1:0"), false));
}

#[test]
fn port_unreachable_flood_v6() {
    in_namespace("flood6", || flood(bind("[::1]:0"), true));
}
