//! Connections and streams over loopback, IPv4 and IPv6.

mod common;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves one connection: echoes every stream back.
async fn echo_server(server: brisk_io::Endpoint) {
    while let Some(conn) = server.accept().await {
        tokio::spawn(async move {
            while let Ok(mut s) = conn.accept_stream().await {
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    s.read_to_end(&mut buf).await.unwrap();
                    s.write_all(&buf).await.unwrap();
                    s.shutdown().await.unwrap();
                });
            }
        });
    }
}

async fn echo_once(v6: bool) {
    let server = server(v6);
    let addr = server.local_addr();
    let key = server.public_key().unwrap();
    tokio::spawn(echo_server(server.clone()));
    let client = client(v6);
    let conn = client.connect(addr, key).await.unwrap();
    let mut s = conn.open_stream().await.unwrap();
    let msg = pattern(100_000, 3);
    s.write_all(&msg).await.unwrap();
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, msg);
    let stats = conn.stats().unwrap();
    assert!(stats.smoothed_rtt > std::time::Duration::ZERO);
    assert!(stats.stream_bytes_received >= msg.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_v4() {
    echo_once(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_v6() {
    echo_once(true).await;
}

/// The low-water-mark notification, a stream reset and a close with an
/// application code, as the peer sees them.
async fn writable_reset_and_close(v6: bool) {
    let server = server(v6);
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let client = client(v6);
    let conn = client.connect(addr, key).await.unwrap();
    let mut s = conn.open_stream().await.unwrap();
    let room = s.writable().await.unwrap();
    assert!(room > 0);
    // The connection runs on its own between the two readings: a path-MTU
    // probe it sends meanwhile takes its size out of the room, so the second
    // reading may be one datagram lower, never zero.
    let now = s.writable_bytes();
    assert!(now > 0 && now.abs_diff(room) <= 1500, "{now} vs {room}");
    s.write_all(b"first").await.unwrap();
    let peer = server.accept().await.unwrap();
    let mut ps = peer.accept_stream().await.unwrap();
    let mut first = [0u8; 5];
    ps.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"first");
    s.reset(7).unwrap();
    let err = ps.read(&mut first).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    conn.close(42, b"bye");
    let reason = peer.closed().await;
    assert_eq!(
        reason,
        brisk_io::ConnectionError::Lost(brisk_proto::ConnectionError::ApplicationClosed {
            code: 42,
            reason: "bye".into()
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writable_reset_and_close_v4() {
    writable_reset_and_close(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writable_reset_and_close_v6() {
    writable_reset_and_close(true).await;
}
