//! A server's per-connection sockets on loopback, IPv4 and IPv6: an
//! established connection's datagrams arrive on its own socket while the
//! listening socket is flooded, a client whose address changes (NAT
//! rebinding, through a relay that switches its outgoing port) is followed
//! to a new socket, closed connections give their sockets back (several
//! from one client address and port share one), past the limit
//! connections share the listening socket, and a second server still
//! cannot bind a port in use.

mod common;

use brisk_io::{Connection, Endpoint, EndpointConfig, ServerConfig, Stream};
use common::*;
use sha2::{Digest, Sha256};
use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// Answers each stream with the SHA-256 of everything read on it.
fn spawn_hash_server(server: Endpoint) {
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(hash_back(s));
                }
            });
        }
    });
}

async fn hash_back(mut s: Stream) {
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => hash.update(&buf[..n]),
            Err(_) => return,
        }
    }
    let _ = s.write_all(&hash.finalize()).await;
    let _ = s.shutdown().await;
}

/// Uploads `n` bytes on a new stream; panics unless the server's hash of
/// what it read matches.
async fn upload(conn: &Connection, n: usize, seed: u64) {
    let body = pattern(n, seed);
    let mut s = conn.open_stream().await.expect("a stream");
    for chunk in body.chunks(64 << 10) {
        s.write_all(chunk).await.expect("the upload");
    }
    s.shutdown().await.expect("the FIN");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.expect("the server's hash");
    assert!(
        answer[..] == Sha256::digest(&body)[..],
        "the server read other bytes than were sent"
    );
}

/// Datagrams the server read from its listening socket (all minus those
/// read from connections' own sockets).
fn listening_received(server: &Endpoint) -> u64 {
    let s = server.stats().socket;
    s.datagrams_received - s.connected.datagrams
}

/// Polls `done` every 10 ms for up to 10 s.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 10 s: {what}");
}

/// Sends garbage to `target` from another thread as fast as it can until
/// `stop`; returns the datagrams sent.
fn flood(target: SocketAddr, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let bind = if target.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    };
    let socket = StdUdpSocket::bind(bind).expect("a flood socket");
    // A short header with a connection ID nobody has: the server reads it
    // and counts it as an unknown connection.
    let mut junk = vec![0x5au8; 1200];
    junk[0] = 0x40;
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                if socket.send_to(&junk, target).is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
}

const UPLOAD_BYTES: usize = 8 << 20;

async fn established_traffic_keeps_its_own_socket(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_hash_server(server.clone());
    let client = client(v6);
    let conn = client.connect(addr, key).await.expect("connect");
    upload(&conn, 1000, 1).await;
    eventually("the connection's socket opens", || {
        server.stats().socket.connected.open == 1
    })
    .await;
    let (stop, sent) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    flood(addr, stop.clone(), sent.clone());
    eventually("the flood reaches the server", || {
        server.stats().proto.unknown_connection > 1000
    })
    .await;
    let before = server.stats().socket;
    upload(&conn, UPLOAD_BYTES, 2).await;
    stop.store(true, Ordering::Relaxed);
    let after = server.stats();
    let own = after.socket.connected.datagrams - before.connected.datagrams;
    let listening =
        listening_received(&server) - (before.datagrams_received - before.connected.datagrams);
    eprintln!(
        "{}: {} junk datagrams sent, the listening socket read {listening} during the \
         upload, the connection's own socket {own}; kernel drops at the listening socket {}",
        if v6 { "IPv6" } else { "IPv4" },
        sent.load(Ordering::Relaxed),
        after.socket.errors.kernel_drops,
    );
    // Every datagram of the upload came through the connection's socket:
    // at least one per full-sized datagram of data.
    assert!(own as usize >= UPLOAD_BYTES / 1452, "{own} datagrams");
    assert!(
        listening > 0,
        "the flood did not reach the listening socket"
    );
    assert_eq!(after.socket.connected.opened, 1);
    assert_eq!(after.socket.connected.fallbacks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn established_traffic_keeps_its_own_socket_v4() {
    established_traffic_keeps_its_own_socket(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn established_traffic_keeps_its_own_socket_v6() {
    established_traffic_keeps_its_own_socket(true).await;
}

/// A UDP relay between one client and `server`, like a NAT: the client
/// talks to `front`; each message on `moves` makes the relay send from a
/// fresh port, as a NAT does when its mapping changes.
async fn relay(front: UdpSocket, server: SocketAddr, mut moves: mpsc::Receiver<()>) {
    let bind = if server.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    };
    let mut back = UdpSocket::bind(bind).await.expect("a relay socket");
    let mut client = None;
    let (mut up, mut down) = (vec![0u8; 65_536], vec![0u8; 65_536]);
    loop {
        tokio::select! {
            r = front.recv_from(&mut up) => {
                let Ok((n, from)) = r else { return };
                client = Some(from);
                let _ = back.send_to(&up[..n], server).await;
            }
            r = back.recv_from(&mut down) => {
                let Ok((n, _)) = r else { return };
                if let Some(c) = client {
                    let _ = front.send_to(&down[..n], c).await;
                }
            }
            m = moves.recv() => {
                if m.is_none() {
                    return;
                }
                back = UdpSocket::bind(bind).await.expect("a relay socket");
            }
        }
    }
}

async fn rebinding_moves_the_socket(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_hash_server(server.clone());
    let front = UdpSocket::bind(loopback(v6)).await.unwrap();
    let front_addr = front.local_addr().unwrap();
    let (move_tx, move_rx) = mpsc::channel(1);
    tokio::spawn(relay(front, addr, move_rx));
    let client = client(v6);
    let conn = client.connect(front_addr, key).await.expect("connect");
    upload(&conn, 256 << 10, 3).await;
    eventually("the connection's socket opens", || {
        server.stats().socket.connected.open == 1
    })
    .await;
    move_tx.send(()).await.unwrap();
    upload(&conn, 256 << 10, 4).await;
    eventually("a socket connected to the new address", || {
        server.stats().socket.connected.rebound == 1
    })
    .await;
    let before = listening_received(&server);
    upload(&conn, 1 << 20, 5).await;
    let s = server.stats().socket.connected;
    assert_eq!((s.opened, s.open, s.rebound), (2, 1, 1), "{s:?}");
    assert_eq!(
        listening_received(&server),
        before,
        "datagrams from the new address still reach the listening socket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebinding_moves_the_socket_v4() {
    rebinding_moves_the_socket(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebinding_moves_the_socket_v6() {
    rebinding_moves_the_socket(true).await;
}

/// UDP sockets the kernel has bound to `addr`'s port (of its family), from
/// /proc/net/udp or udp6: the listening socket and the connections' own.
fn sockets_on(addr: SocketAddr) -> usize {
    let table = if addr.is_ipv6() {
        "/proc/net/udp6"
    } else {
        "/proc/net/udp"
    };
    let port = format!(":{:04X}", addr.port());
    std::fs::read_to_string(table)
        .expect("the kernel's UDP socket table")
        .lines()
        .skip(1)
        .filter(|line| {
            line.split_whitespace()
                .nth(1)
                .is_some_and(|local| local.ends_with(&port))
        })
        .count()
}

const CONNECTIONS: usize = 20;

/// Each client endpoint has its own port, so its connection gets a
/// socket of its own; a second connection from the same endpoint (same
/// address and port) shares its socket.
async fn closed_connections_give_their_sockets_back(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_hash_server(server.clone());
    let clients: Vec<Endpoint> = (0..CONNECTIONS).map(|_| client(v6)).collect();
    assert_eq!(sockets_on(addr), 1, "the listening socket alone");
    let mut conns = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let conn = client.connect(addr, key).await.expect("connect");
        upload(&conn, 10_000, i as u64).await;
        conns.push(conn);
    }
    let second = clients[0].connect(addr, key).await.expect("connect");
    upload(&second, 10_000, 99).await;
    conns.push(second);
    eventually("every connection has its socket", || {
        let s = server.stats().socket.connected;
        s.open == CONNECTIONS as u64 && s.connections == CONNECTIONS as u64 + 1
    })
    .await;
    assert_eq!(sockets_on(addr), CONNECTIONS + 1);
    for conn in conns.drain(..) {
        conn.close(0, b"done");
    }
    eventually("every socket is closed", || {
        let s = server.stats().socket.connected;
        s.open == 0 && s.connections == 0
    })
    .await;
    let s = server.stats().socket.connected;
    assert_eq!(s.opened, CONNECTIONS as u64);
    assert_eq!(sockets_on(addr), 1, "sockets left open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connections_give_their_sockets_back_v4() {
    closed_connections_give_their_sockets_back(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connections_give_their_sockets_back_v6() {
    closed_connections_give_their_sockets_back(true).await;
}

async fn past_the_limit_connections_share_the_listening_socket(v6: bool) {
    let mut config = config();
    config.socket.connected_sockets = 2;
    let server = server_on(loopback(v6), 1, config);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_hash_server(server.clone());
    let clients: Vec<Endpoint> = (0..4).map(|_| client(v6)).collect();
    let mut conns = Vec::new();
    for (i, client) in (0u64..).zip(&clients) {
        let conn = client.connect(addr, key).await.expect("connect");
        upload(&conn, 10_000, i).await;
        conns.push(conn);
    }
    eventually("two sockets and two fallbacks", || {
        let s = server.stats().socket.connected;
        s.open == 2 && s.fallbacks == 2
    })
    .await;
    for (i, conn) in conns.iter().enumerate() {
        upload(conn, 200_000, 10 + i as u64).await;
    }
    assert_eq!(server.stats().socket.connected.opened, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_connections_share_the_listening_socket_v4() {
    past_the_limit_connections_share_the_listening_socket(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_connections_share_the_listening_socket_v6() {
    past_the_limit_connections_share_the_listening_socket(true).await;
}

/// `SO_REUSEPORT` is set on the listening socket only after its bind, so
/// a second server on the same port is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_cannot_take_the_port() {
    for v6 in [false, true] {
        let first = server(v6);
        let mut c = brisk_io::ServerConfig::new(first.local_addr(), keypair(2));
        c.endpoint = EndpointConfig::default();
        let second = Endpoint::server(c).map(|_| ());
        assert_eq!(
            second.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::AddrInUse)
        );
    }
}

/// With Retry (always, as a loaded server answers), a client's Initial
/// with the token proves its address, and its handshake gets its own
/// socket at once: the listening socket reads only the two Initials, and
/// every later datagram of the handshake and the upload arrives on the
/// connection's socket, where a flood of forged Initials cannot drop it.
async fn a_retry_proved_handshake_leaves_the_listening_socket(v6: bool) {
    let mut c = ServerConfig::new(loopback(v6), keypair(1));
    c.endpoint = config();
    c.admission.retry = brisk_proto::RetryPolicy::Always;
    let server = Endpoint::server(c).expect("a server");
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_hash_server(server.clone());
    let client = client(v6);
    let conn = client.connect(addr, key).await.expect("connect");
    // Handshake messages the client resent (a loaded machine may delay
    // the server past the client's probe timeout): each can reach the
    // listening socket before the handshake's socket opens.
    let resent = conn.stats().map_or(0, |s| s.ptos);
    upload(&conn, 100_000, 3).await;
    let s = server.stats();
    assert_eq!(s.proto.retries_sent, 1);
    let listening = listening_received(&server);
    assert!(
        (2..=2 + resent).contains(&listening),
        "only the Initial and the Initial with the token (resent {resent} times) should \
         reach the listening socket, not {listening}"
    );
    assert!(
        s.socket.connected.datagrams > 10,
        "{:?}",
        s.socket.connected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_proved_handshake_leaves_the_listening_socket_v4() {
    a_retry_proved_handshake_leaves_the_listening_socket(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_proved_handshake_leaves_the_listening_socket_v6() {
    a_retry_proved_handshake_leaves_the_listening_socket(true).await;
}
