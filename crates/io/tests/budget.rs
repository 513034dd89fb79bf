//! Clients that ask for a lot and never read cannot take a server past
//! its memory budget: ten clients each open 100 streams, ask for 8 MiB on
//! each and read nothing. The server's writers block once their
//! connection's send budget (its share of `memory_budget_bytes`) is full,
//! so its heap stays within the budget plus the fixed cost of the
//! connections and streams, and a well-behaved client that arrives
//! meanwhile still gets its 4 MiB whole (SHA-256 checked).
//!
//! Without the budget each connection could pin the transport's default
//! 4 MiB send buffer, 40 MiB for the ten, five times the bound here.
//!
//! The server sends with UDP GSO, as by default: every queued message's
//! buffer holds a full train, and the socket layer keeps at most four
//! trains' worth of spare buffers.
//!
//! Heap is counted per side (`common/counting.rs`); the server runs on a
//! thread and runtime of its own. One test function, since the counters
//! belong to the whole binary.

mod common;
#[path = "common/counting.rs"]
mod counting;

use brisk_io::{Endpoint, ServerConfig, Stream};
use counting::{Counting, Side, live, set_side};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Clients that never read, and the streams each opens (the default
/// stream limit).
const GREEDY_CLIENTS: usize = 10;
const STREAMS_EACH: usize = 100;
/// What each greedy stream asks for: far more than any window.
const GREEDY_BYTES: usize = 8 << 20;
/// What the well-behaved client downloads.
const GOOD_BYTES: usize = 4 << 20;
/// The server's memory budget and the connections it plans for: 256 KiB
/// of send budget and 256 KiB of receive window per connection.
const BUDGET_BYTES: u64 = 8 << 20;
const MAX_CONNECTIONS: usize = 16;
/// What the server holds besides stream data: 11 connections (about
/// 12 KB each), 1,000 streams with their tasks, datagram buffers.
const FIXED_BYTES: i64 = 4 << 20;
/// How long the greedy clients sit before the good one comes.
const FILL_TIME: Duration = Duration::from_secs(1);

/// The greedy streams' bytes: one buffer every writer repeats.
static SOURCE: [u8; 64 << 10] = [0x5a; 64 << 10];

/// Answers `?` with [`GREEDY_BYTES`] and `g` with the good download.
async fn serve(mut s: Stream, good: Arc<Vec<u8>>) {
    let mut request = [0u8; 1];
    if s.read_exact(&mut request).await.is_err() {
        return;
    }
    if request[0] == b'g' {
        if s.write_all(&good).await.is_ok() {
            let _ = s.shutdown().await;
        }
        return;
    }
    let mut left = GREEDY_BYTES;
    while left > 0 {
        let n = left.min(SOURCE.len());
        if s.write_all(&SOURCE[..n]).await.is_err() {
            return;
        }
        left -= n;
    }
}

/// Starts the server thread; returns its address and key, and a sender
/// that stops it when dropped.
fn start_server(
    v6: bool,
    good: Arc<Vec<u8>>,
) -> (
    std::net::SocketAddr,
    [u8; brisk_io::KEY_LEN],
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        set_side(Side::Server);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut config = ServerConfig::new(common::loopback(v6), common::keypair(1));
            config.memory_budget_bytes = Some(BUDGET_BYTES);
            config.max_connections = MAX_CONNECTIONS;
            let server = Endpoint::server(config).unwrap();
            ready_tx
                .send((server.local_addr(), server.public_key().unwrap()))
                .unwrap();
            let accepting = async {
                while let Some(conn) = server.accept().await {
                    let good = good.clone();
                    tokio::spawn(async move {
                        while let Ok(s) = conn.accept_stream().await {
                            tokio::spawn(serve(s, good.clone()));
                        }
                    });
                }
            };
            tokio::select! {
                _ = stop_rx => {}
                () = accepting => {}
            }
            server.abort();
        });
    });
    let (addr, key) = ready_rx.recv().unwrap();
    (addr, key, stop_tx, thread)
}

/// Samples the server's heap every millisecond until `done`; the peak.
fn sample_peak(done: Arc<AtomicBool>, peak: Arc<AtomicI64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !done.load(Ordering::Relaxed) {
            peak.fetch_max(live(Side::Server), Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

fn family(v6: bool) {
    let good = Arc::new(common::pattern(GOOD_BYTES, 7));
    let want = Sha256::digest(&*good);
    let (addr, key, stop, server) = start_server(v6, good);
    set_side(Side::Client);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicI64::new(0));
    let (base, got) = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let base = live(Side::Server);
        peak.store(base, Ordering::Relaxed);
        let sampler = sample_peak(done.clone(), peak.clone());
        let mut held = Vec::new();
        let mut endpoints = Vec::new();
        for _ in 0..GREEDY_CLIENTS {
            let client = common::client(v6);
            let conn = client.connect(addr, key).await.unwrap();
            for _ in 0..STREAMS_EACH {
                let mut s = conn.open_stream().await.unwrap();
                s.write_all(b"?").await.unwrap();
                held.push(s);
            }
            endpoints.push((client, conn));
        }
        tokio::time::sleep(FILL_TIME).await;
        let client = common::client(v6);
        let conn = client.connect(addr, key).await.unwrap();
        let mut s = conn.open_stream().await.unwrap();
        s.write_all(b"g").await.unwrap();
        s.finish().unwrap();
        let mut got = Vec::with_capacity(GOOD_BYTES);
        tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut got))
            .await
            .expect("the good download finishes while the greedy clients sit")
            .unwrap();
        conn.close(0, b"done");
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap();
        drop(held);
        drop(endpoints);
        (base, got)
    });
    drop(rt);
    set_side(Side::Other);
    drop(stop);
    server.join().unwrap();
    let peak = peak.load(Ordering::Relaxed) - base;
    let bound = BUDGET_BYTES as i64 + FIXED_BYTES;
    println!(
        "IPv{}: {GREEDY_CLIENTS} clients x {STREAMS_EACH} streams asking {GREEDY_BYTES} B each, \
         never reading: server heap peak {peak} B over its start (budget {BUDGET_BYTES} B, \
         bound {bound} B); good client got {} B",
        if v6 { 6 } else { 4 },
        got.len()
    );
    assert_eq!(got.len(), GOOD_BYTES);
    assert_eq!(Sha256::digest(&got), want, "the good download's SHA-256");
    assert!(peak <= bound, "server heap peak {peak} B over {bound} B");
}

#[test]
fn never_reading_clients_keep_the_server_within_its_memory_budget() {
    family(false);
    family(true);
}
