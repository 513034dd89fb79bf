//! The socket driver on loopback, each test for IPv4 and IPv6: many
//! connections and streams, a large transfer with a hash check, ECN on the
//! wire, server restart, a wrong server key, and a garbage flood.

mod common;

use brisk_io::{ConnectError, ConnectionError, Endpoint, EndpointConfig, Stream};
use brisk_proto::congestion::CcAlgorithm;
use brisk_proto::ecn_validation::EcnState;
use brisk_wire::Ecn;
use common::*;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Each stream carries an 8-byte length `n`; the server answers with `n`
/// bytes of `pattern(n, n)` and a FIN.
fn spawn_source_server(server: Endpoint) {
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(serve_source(s));
                }
            });
        }
    });
}

async fn serve_source(mut s: Stream) {
    let mut len = [0u8; 8];
    if s.read_exact(&mut len).await.is_err() {
        return;
    }
    let n = u64::from_be_bytes(len) as usize;
    let body = pattern(n, n as u64);
    for chunk in body.chunks(256 << 10) {
        if s.write_all(chunk).await.is_err() {
            return;
        }
    }
    let _ = s.shutdown().await;
}

/// Asks for `n` bytes on a new stream and returns what arrived.
async fn fetch(conn: &brisk_io::Connection, n: usize) -> Vec<u8> {
    let mut s = conn.open_stream().await.unwrap();
    s.write_all(&(n as u64).to_be_bytes()).await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = Vec::with_capacity(n);
    s.read_to_end(&mut got).await.unwrap();
    got
}

async fn many_connections_and_streams(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_source_server(server.clone());
    let client = client(v6);
    let mut tasks = Vec::new();
    let mut conns = Vec::new();
    for c in 0..16 {
        let conn = client.connect(addr, key).await.unwrap();
        conns.push(conn.clone());
        for s in 0..8 {
            let conn = conn.clone();
            let n = 1000 + 997 * (c * 8 + s);
            tasks.push(tokio::spawn(async move {
                let got = fetch(&conn, n).await;
                assert_eq!(got, pattern(n, n as u64), "connection {c} stream {s}");
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(server.stats().proto.connections_accepted, 16);
    // Every established connection, on both sides, ran behind its own
    // lock rather than the endpoint's.
    assert_eq!(client.stats().own_lock, 16);
    assert_eq!(server.stats().own_lock, 16);
    drop(conns);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_and_streams_v4() {
    many_connections_and_streams(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_and_streams_v6() {
    many_connections_and_streams(true).await;
}

async fn large_transfer(v6: bool, len: usize) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_source_server(server.clone());
    let client = client(v6);
    let conn = client.connect(addr, key).await.unwrap();
    let got = fetch(&conn, len).await;
    assert_eq!(got.len(), len);
    assert_eq!(
        Sha256::digest(&got),
        Sha256::digest(pattern(len, len as u64)),
        "hash mismatch"
    );
    let stats = conn.stats().unwrap();
    assert!(stats.stream_bytes_received >= len as u64);
    // Path MTU discovery started at 1200 bytes and took the default
    // ceiling with one probe: loopback carries anything.
    let ceiling = if v6 { 1432 } else { 1452 };
    assert_eq!(
        (stats.pmtu.current_bytes, stats.pmtu.probes_sent),
        (ceiling, 1),
        "{:?}",
        stats.pmtu
    );
    // Datagrams were full-sized: 1452 on IPv4, 1432 on IPv6 by default.
    let sent = server.stats().socket;
    assert!(sent.datagrams_sent as usize > len / 1452);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_transfer_v4() {
    large_transfer(false, 64 << 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_transfer_v6() {
    large_transfer(true, 64 << 20).await;
}

/// A Prague client sends 2 MiB after staying quiet for `quiet` after the
/// handshake; returns the server's socket counts, and the client's and the
/// server's connection stats, taken once no packet is between them (the
/// last ACKs may still be in flight when the transfer ends).
async fn prague_upload(
    v6: bool,
    quiet: Duration,
) -> (
    brisk_io::socket::SocketStats,
    brisk_io::ConnectionStats,
    brisk_io::ConnectionStats,
) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let client = client(v6);
    let config = brisk_proto::ClientConfig::new(Some(key)).with_cc(CcAlgorithm::Prague);
    let accept = tokio::spawn({
        let server = server.clone();
        async move {
            let conn = server.accept().await.unwrap();
            let mut s = conn.accept_stream().await.unwrap();
            let mut sink = Vec::new();
            s.read_to_end(&mut sink).await.unwrap();
            s.shutdown().await.unwrap();
            (sink.len(), conn)
        }
    });
    let conn = client.connect_with(addr, config).await.unwrap();
    tokio::time::sleep(quiet).await;
    let mut s = conn.open_stream().await.unwrap();
    s.write_all(&pattern(2 << 20, 5)).await.unwrap();
    s.shutdown().await.unwrap();
    let (len, server_conn) = accept.await.unwrap();
    assert_eq!(len, 2 << 20);
    let mut snapshot = (
        server.stats().socket,
        conn.stats().unwrap(),
        server_conn.stats().unwrap(),
    );
    for _ in 0..100 {
        if snapshot.1.ecn_sent == snapshot.2.ecn_received {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        snapshot = (
            server.stats().socket,
            conn.stats().unwrap(),
            server_conn.stats().unwrap(),
        );
    }
    snapshot
}

/// The socket layer's part: every codepoint the client's core chose
/// reaches the server's socket unchanged (IP_TOS / IPV6_TCLASS out, the
/// IP_RECVTOS / IPV6_RECVTCLASS control message in), ECT(1) among them,
/// and no CE on an idle loopback.
async fn prague_codepoints_arrive_as_sent(v6: bool) {
    let (socket, client, server_conn) = prague_upload(v6, Duration::ZERO).await;
    assert!(socket.ecn_received[1] > 0, "{socket:?}");
    assert_eq!(socket.ecn_received[1], client.ecn_sent.ect1);
    assert_eq!(socket.ecn_received[2], client.ecn_sent.ect0);
    assert_eq!(socket.ecn_received[3], 0, "{socket:?}");
    assert_eq!(server_conn.ecn_received, client.ecn_sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_codepoints_arrive_as_sent_v4() {
    prague_codepoints_arrive_as_sent(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_codepoints_arrive_as_sent_v6() {
    prague_codepoints_arrive_as_sent(true).await;
}

/// End to end: loopback leaves the ECN field alone, so the core's ECN
/// validation must end Capable with ECT(1), never falling back to ECT(0),
/// and the upload arrives as ECT(1) (only the handshake and packets sent
/// while the test awaited its acknowledgements go Not-ECT), also after a
/// quiet period that leaves only ACK-only packets in flight.
async fn prague_keeps_ect1(v6: bool, quiet: Duration) {
    let (socket, client, _) = prague_upload(v6, quiet).await;
    assert_eq!(client.ecn_state, EcnState::Capable, "{client:?}");
    assert_eq!(client.ecn_codepoint, Ecn::Ect1, "{client:?}");
    assert_eq!(client.ecn_sent.ect0, 0, "{client:?}");
    assert_eq!(socket.ecn_received[2], 0, "{socket:?}");
    let received = socket.datagrams_received;
    assert!(
        socket.ecn_received[1] * 10 >= received * 9,
        "ECT(1) on {} of {received} datagrams: {socket:?}",
        socket.ecn_received[1]
    );
}

// Ignored until brisk-proto's ECN test fits loopback timing: the test
// period is three PTOs without the peer's max_ack_delay (about 1 ms each
// on loopback, while the server delays its ACKs by up to 25 ms) and runs
// from the connection's creation, so the handshake uses it up. The first
// ack-eliciting 1-RTT packet is then often declared a black hole before
// its ACK arrives, and the connection falls back to ECT(0) (observed in 2
// to 4 of every 5 runs, with or without the quiet period).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_keeps_ect1_v4() {
    prague_keeps_ect1(false, Duration::ZERO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_keeps_ect1_v6() {
    prague_keeps_ect1(true, Duration::ZERO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_keeps_ect1_after_quiet_v4() {
    prague_keeps_ect1(false, Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prague_keeps_ect1_after_quiet_v6() {
    prague_keeps_ect1(true, Duration::from_millis(100)).await;
}

/// Sequential requests (512 B up, 4 KiB down, a stream each): the core's
/// deadline moves with every packet, but the endpoint task re-arms its
/// timer only when the deadline comes sooner, so far less than once per
/// request (7 in 200 here; re-arming on every change cost about 2.1 per
/// request at the client).
async fn sequential_requests_rarely_rearm_the_timer(v6: bool) {
    const REQUESTS: u64 = 200;
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_source_server(server.clone());
    let client = client(v6);
    let conn = client.connect(addr, key).await.unwrap();
    let before = client.stats().socket.timer_arms;
    for _ in 0..REQUESTS {
        let got = fetch(&conn, 4096).await;
        assert_eq!(got.len(), 4096);
    }
    let arms = client.stats().socket.timer_arms - before;
    assert!(arms < REQUESTS, "{arms} timer arms for {REQUESTS} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_requests_rarely_rearm_the_timer_v4() {
    sequential_requests_rarely_rearm_the_timer(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_requests_rarely_rearm_the_timer_v6() {
    sequential_requests_rarely_rearm_the_timer(true).await;
}

/// Sequential requests, each ended with `finish`, from a client whose loop
/// is a `block_on` future, against a server on a thread of its own (the
/// netbench layout): the client's ACK of each answer leaves with its next
/// request, and no receive call comes back empty. With a non-zero
/// `busy_poll`, both ends spin while they await an answer; the datagrams
/// stay the same.
fn acks_ride_with_the_next_request(v6: bool, busy_poll: Duration) {
    let config = move || brisk_io::EndpointConfig {
        busy_poll,
        ..Default::default()
    };
    const REQUESTS: u64 = 200;
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let (ticket_tx, ticket_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server_thread = std::thread::spawn(move || {
        runtime().block_on(async move {
            let server = server_on(loopback(v6), 1, config());
            ticket_tx
                .send((server.local_addr(), server.public_key().unwrap()))
                .unwrap();
            spawn_source_server(server.clone());
            let _ = stop_rx.await;
        })
    });
    let (addr, key) = ticket_rx.recv().unwrap();
    let (sent, empty_receives, socket) = runtime().block_on(async move {
        let client = Endpoint::client_with(loopback(v6), config()).unwrap();
        let conn = client.connect(addr, key).await.unwrap();
        let request = |n: u64| {
            let conn = conn.clone();
            async move {
                let mut s = conn.open_stream().await.unwrap();
                s.write_all(&n.to_be_bytes()).await.unwrap();
                s.finish().unwrap();
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                assert_eq!(got.len() as u64, n);
            }
        };
        // Past slow start and the ECN test period.
        for _ in 0..20 {
            request(4096).await;
        }
        let before = client.stats().socket;
        for _ in 0..REQUESTS {
            request(4096).await;
        }
        let after = client.stats().socket;
        (
            after.datagrams_sent - before.datagrams_sent,
            after.recv_would_block - before.recv_would_block,
            after,
        )
    });
    let _ = stop_tx.send(());
    server_thread.join().unwrap();
    // One datagram per request (two when each ACK left alone); a few
    // timer-driven ACKs may leave on their own.
    assert!(
        sent <= REQUESTS + REQUESTS / 10,
        "{sent} datagrams for {REQUESTS} requests"
    );
    if busy_poll.is_zero() {
        // One per wake-up when readiness was cleared by an empty receive.
        assert!(
            empty_receives <= REQUESTS / 10,
            "{empty_receives} empty receives for {REQUESTS} requests"
        );
        assert_eq!(
            (socket.busy_polls, socket.busy_poll_no_core),
            (0, 0),
            "busy polling is off"
        );
        return;
    }
    let limit = busy_poll;
    // The client spun while its requests were out, unless the machine had
    // no core to spare (a loaded test machine), each spin within the limit
    // (a millisecond of slack for the clock reads around it).
    assert!(
        socket.busy_polls > 0 || socket.busy_poll_no_core > 0,
        "{socket:?}"
    );
    assert!(socket.busy_poll_hits <= socket.busy_polls);
    assert!(
        socket.busy_poll_ns <= socket.busy_polls * (limit.as_nanos() as u64 + 1_000_000),
        "{socket:?}"
    );
}

#[test]
fn acks_ride_with_the_next_request_v4() {
    acks_ride_with_the_next_request(false, Duration::ZERO);
}

#[test]
fn acks_ride_with_the_next_request_v6() {
    acks_ride_with_the_next_request(true, Duration::ZERO);
}

#[test]
fn busy_polling_keeps_one_datagram_per_request_v4() {
    acks_ride_with_the_next_request(false, Duration::from_millis(2));
}

#[test]
fn busy_polling_keeps_one_datagram_per_request_v6() {
    acks_ride_with_the_next_request(true, Duration::from_millis(2));
}

/// Binds a server on `addr`, retrying while the old socket is released.
async fn rebind(addr: SocketAddr) -> Endpoint {
    for _ in 0..100 {
        let mut c = brisk_io::ServerConfig::new(addr, keypair(1));
        c.endpoint = quick_config();
        if let Ok(ep) = Endpoint::server(c) {
            return ep;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{addr} stayed busy");
}

async fn server_restart(v6: bool) {
    let first = server_on(loopback(v6), 1, quick_config());
    let (addr, key) = (first.local_addr(), first.public_key().unwrap());
    spawn_source_server(first.clone());
    let client = Endpoint::client_with(loopback(v6), quick_config()).unwrap();
    let old = client.connect(addr, key).await.unwrap();
    assert_eq!(fetch(&old, 5000).await.len(), 5000);
    // A crash: the socket goes away without a word to the peer.
    first.abort();
    drop(first);
    // The old connection writes to the dead port: port unreachable. The
    // kernel reports it against the address, on the client's next receive
    // or send (perhaps the new handshake's), but the error quotes the old
    // connection's short header, so the new handshake to the same address
    // must not fail because of it.
    let mut s = old.open_stream().await.unwrap();
    let _ = s.write_all(b"hello?").await;
    // The port closes once the server's task has ended; the old
    // connection's probes then draw the errors.
    let waited = tokio::time::timeout(Duration::from_secs(3), async {
        while client.stats().socket.icmp_errors == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert!(waited.await.is_ok(), "no ICMP error within 3 s");
    let second = rebind(addr).await;
    spawn_source_server(second.clone());
    let new = client.connect(addr, key).await.unwrap();
    assert_eq!(fetch(&new, 5000).await, pattern(5000, 5000));
    // The old connection's packets reach a server that does not know it
    // but holds the same key: it answers with a stateless reset, and the
    // old connection fails with that, well within its idle timeout.
    let err = tokio::time::timeout(Duration::from_secs(5), old.closed())
        .await
        .expect("the old connection must fail within the idle timeout");
    assert_eq!(
        err,
        ConnectionError::Lost(brisk_proto::ConnectionError::StatelessReset)
    );
    assert!(second.stats().proto.unknown_connection > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_v4() {
    server_restart(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_v6() {
    server_restart(true).await;
}

async fn wrong_key_and_no_server(v6: bool) {
    let server = server_on(loopback(v6), 1, quick_config());
    let addr = server.local_addr();
    let client = Endpoint::client_with(loopback(v6), quick_config()).unwrap();
    let wrong = keypair(9).public();
    let err = client.connect(addr, wrong).await.unwrap_err();
    match &err {
        ConnectError::WrongServerKey {
            expected,
            presented,
            ..
        } => {
            assert_eq!(*expected, brisk_io::keys::to_hex(&wrong));
            assert_eq!(*presented, brisk_io::keys::to_hex(&keypair(1).public()));
        }
        other => panic!("expected WrongServerKey, got {other}"),
    }
    assert!(err.to_string().starts_with("wrong server key"), "{err}");
    assert!(server.stats().proto.handshake_failed > 0);
    // Nothing listens on the port once the server is gone.
    server.abort();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Loopback answers with ICMP port unreachable, which fails the
    // handshake at once; where ICMP is rate-limited, the handshake timeout
    // does.
    let err = client.connect(addr, keypair(1).public()).await.unwrap_err();
    match &err {
        ConnectError::Failed {
            reason: ConnectionError::Unreachable { addr: to, .. },
            ..
        } => {
            assert_eq!(*to, addr);
            assert!(err.to_string().contains("Connection refused"), "{err}");
        }
        ConnectError::TimedOut { .. } => {
            assert!(err.to_string().contains("no answer from"), "{err}")
        }
        other => panic!("expected refused or timed out, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_and_no_server_v4() {
    wrong_key_and_no_server(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_and_no_server_v6() {
    wrong_key_and_no_server(true).await;
}

/// Random datagrams at the server while a transfer runs: the transfer
/// completes intact and every garbage datagram is counted as dropped.
async fn garbage_flood(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_source_server(server.clone());
    let client = client(v6);
    let conn = client.connect(addr, key).await.unwrap();
    const GARBAGE: u64 = 4000;
    let flood = tokio::spawn(async move {
        let sock = tokio::net::UdpSocket::bind(loopback(v6)).await.unwrap();
        let junk = pattern(1500 * 64, 77);
        for i in 0..GARBAGE as usize {
            let len = 1 + (i * 7919) % 1500;
            let start = (i * 131) % (junk.len() - len);
            sock.send_to(&junk[start..start + len], addr).await.unwrap();
            if i % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let len = 16 << 20;
    let got = fetch(&conn, len).await;
    assert_eq!(
        Sha256::digest(&got),
        Sha256::digest(pattern(len, len as u64))
    );
    flood.await.unwrap();
    let counted = |s: brisk_proto::EndpointStats| {
        s.malformed
            + s.unknown_connection
            + s.short_initial
            + s.handshake_failed
            + s.refused
            + s.version_negotiations_sent
    };
    for _ in 0..200 {
        if counted(server.stats().proto) >= GARBAGE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stats = server.stats();
    assert_eq!(counted(stats.proto), GARBAGE, "{stats:?}");
    assert_eq!(stats.proto.connections_accepted, 1);
    assert!(conn.stats().is_some(), "the connection survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_flood_v4() {
    garbage_flood(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_flood_v6() {
    garbage_flood(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_server_serves_both_families() {
    let mut c = brisk_io::ServerConfig::new("[::]:0".parse().unwrap(), keypair(1));
    c.endpoint = EndpointConfig::default();
    let server = Endpoint::server(c).unwrap();
    let port = server.local_addr().port();
    let key = server.public_key().unwrap();
    spawn_source_server(server.clone());
    for (client_bind, target) in [
        ("127.0.0.1:0", format!("127.0.0.1:{port}")),
        ("[::1]:0", format!("[::1]:{port}")),
    ] {
        let client = Endpoint::client(client_bind.parse().unwrap()).unwrap();
        let conn = client.connect(target.parse().unwrap(), key).await.unwrap();
        assert_eq!(fetch(&conn, 30_000).await, pattern(30_000, 30_000));
        // IPv4 peers appear as IPv4 addresses, not v4-mapped ones.
        let remote = conn.remote_address().unwrap();
        assert_eq!(remote, target.parse::<SocketAddr>().unwrap());
    }
    assert_eq!(server.stats().proto.connections_accepted, 2);
}
