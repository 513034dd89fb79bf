//! A request in the first flight over loopback, each test for IPv4 and
//! IPv6: the server reads it as an ordinary stream and the answer's hash
//! checks; a first flight captured on the way and replayed 22 times from
//! another socket reaches the server's application once.

mod common;

use brisk_io::{Connection, Endpoint, Idempotent, ServerConfig, Stream};
use common::*;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::sync::Mutex;

/// Each stream carries `GET <n>`; the server answers with `n` bytes of
/// `pattern(n, n)` and counts every request its application read.
fn spawn_server(server: Endpoint, requests: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            let requests = requests.clone();
            tokio::spawn(async move {
                while let Ok(s) = conn.accept_stream().await {
                    tokio::spawn(answer(s, requests.clone()));
                }
            });
        }
    });
}

async fn answer(mut s: Stream, requests: Arc<AtomicUsize>) {
    let mut request = Vec::new();
    if s.read_to_end(&mut request).await.is_err() {
        return;
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let Some(n) = std::str::from_utf8(&request)
        .ok()
        .and_then(|r| r.strip_prefix("GET "))
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return;
    };
    if s.write_all(&pattern(n, n as u64)).await.is_ok() {
        let _ = s.shutdown().await;
    }
}

async fn fetch_early(client: &Endpoint, addr: SocketAddr, key: [u8; 32], n: usize) -> Connection {
    let request = format!("GET {n}");
    let (conn, mut s) = client
        .connect_with_request(addr, key, Idempotent::declare(request.as_bytes()))
        .await
        .unwrap();
    let mut got = Vec::with_capacity(n);
    s.read_to_end(&mut got).await.unwrap();
    assert_eq!(got.len(), n);
    assert_eq!(
        Sha256::digest(&got),
        Sha256::digest(pattern(n, n as u64)),
        "answer hash"
    );
    conn
}

async fn answered_from_the_first_flight(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    spawn_server(server.clone(), requests.clone());
    let client = client(v6);
    let conn = fetch_early(&client, addr, key, 300_000).await;
    let sent = conn.stats().unwrap().early_data_sent_bytes;
    assert_eq!(sent, "GET 300000".len() as u64);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    let proto = server.stats().proto;
    assert_eq!(
        proto.anti_replay_entries, 1,
        "the server used the early data"
    );
    conn.close(0, b"done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_from_the_first_flight_v4() {
    answered_from_the_first_flight(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_from_the_first_flight_v6() {
    answered_from_the_first_flight(true).await;
}

/// A relay between one client and the server that keeps the first
/// datagram the client sent, as an on-path recorder would.
async fn spawn_recording_relay(server: SocketAddr, v6: bool) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let front = Arc::new(UdpSocket::bind(loopback(v6)).await.unwrap());
    let back = Arc::new(UdpSocket::bind(loopback(v6)).await.unwrap());
    back.connect(server).await.unwrap();
    let first = Arc::new(Mutex::new(Vec::new()));
    let client_addr = Arc::new(Mutex::new(None::<SocketAddr>));
    let addr = front.local_addr().unwrap();
    {
        let (front, back, first, client_addr) = (
            front.clone(),
            back.clone(),
            first.clone(),
            client_addr.clone(),
        );
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65_536];
            while let Ok((n, from)) = front.recv_from(&mut buf).await {
                *client_addr.lock().await = Some(from);
                let mut f = first.lock().await;
                if f.is_empty() {
                    f.extend_from_slice(&buf[..n]);
                }
                drop(f);
                let _ = back.send(&buf[..n]).await;
            }
        });
    }
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        while let Ok(n) = back.recv(&mut buf).await {
            let to = *client_addr.lock().await;
            if let Some(to) = to {
                let _ = front.send_to(&buf[..n], to).await;
            }
        }
    });
    (addr, first)
}

/// While the handshake a copy started is half-open, a further copy (same
/// connection IDs) is taken for a resent Initial; so the server here keeps
/// one half-open handshake, and a genuine connection before each copy
/// evicts the last copy's, making every copy reach the replay register.
async fn a_replayed_first_flight_is_served_once(v6: bool) {
    let mut config = ServerConfig::new(loopback(v6), keypair(1));
    config.endpoint = common::config();
    config.admission.max_half_open = 1;
    let server = Endpoint::server(config).unwrap();
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    spawn_server(server.clone(), requests.clone());
    let (relay, first) = spawn_recording_relay(addr, v6).await;
    let client = client(v6);
    let conn = fetch_early(&client, relay, key, 10_000).await;
    conn.close(0, b"done");
    drop(conn);
    let flight = first.lock().await.clone();
    assert!(
        flight.len() >= 1200,
        "a first flight: {} bytes",
        flight.len()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A second, genuine client runs while the recording is replayed from
    // a socket of the attacker's, 22 times.
    let live = {
        let client = client.clone();
        tokio::spawn(async move { fetch_early(&client, addr, key, 200_000).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let attacker = UdpSocket::bind(loopback(v6)).await.unwrap();
    for _ in 0..22 {
        client.connect(addr, key).await.unwrap().close(0, b"");
        tokio::time::sleep(Duration::from_millis(5)).await;
        attacker.send_to(&flight, addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    live.await.unwrap().close(0, b"done");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let proto = server.stats().proto;
    let served = requests.load(Ordering::SeqCst);
    println!(
        "v6={v6}: 22 replays of a captured first flight: {served} requests served \
         (original + live client), {} replays refused",
        proto.early_data_replayed
    );
    assert_eq!(served, 2, "the replays reached the application");
    assert_eq!(proto.early_data_replayed, 22);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_first_flight_is_served_once_v4() {
    a_replayed_first_flight_is_served_once(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_first_flight_is_served_once_v6() {
    a_replayed_first_flight_is_served_once(true).await;
}
