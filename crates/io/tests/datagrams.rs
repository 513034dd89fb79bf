//! Unreliable datagrams through the socket driver on loopback, IPv4 and
//! IPv6: an echo of datagrams with deadlines, and the clear error a peer
//! that did not announce datagram support gives on send.

mod common;

use brisk_io::{DatagramSendError, Endpoint, EndpointConfig};
use brisk_proto::DatagramError;
use common::*;
use std::time::Duration;

/// The helpers' configuration, taking datagrams or not.
fn with_datagrams(on: bool) -> EndpointConfig {
    let mut c = config();
    c.transport.datagrams.max_frame_bytes = on.then_some(1_400);
    c
}

/// Echoes every datagram of every connection back to its sender.
fn spawn_echo_server(server: Endpoint) {
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(d) = conn.recv_datagram().await {
                    if conn.send_datagram(d, Some(Duration::from_secs(1))).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

async fn echo(v6: bool) {
    let server = server_on(loopback(v6), 1, with_datagrams(true));
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    spawn_echo_server(server.clone());
    let client = Endpoint::client_with(loopback(v6), with_datagrams(true)).unwrap();
    let conn = client.connect(addr, key).await.unwrap();
    let max = conn.max_datagram_size().unwrap();
    assert!(max >= 1_000, "{max}");
    // One at a time, each answered before the next, so no queue on the
    // way can overflow and a loopback run loses none.
    for i in 0..20u8 {
        let sent = vec![i; 100 + usize::from(i) * 40];
        conn.send_datagram(sent.clone(), Some(Duration::from_secs(1)))
            .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), conn.recv_datagram())
            .await
            .expect("echo within 5 s")
            .unwrap();
        assert_eq!(got, sent, "datagram {i}");
    }
    let s = conn.datagram_stats().unwrap();
    assert_eq!((s.sent, s.received, s.expired), (20, 20, 0));
    // The limit follows the path MTU that discovery has found by now.
    let max = conn.max_datagram_size().unwrap();
    assert!(matches!(
        conn.send_datagram(vec![0; max + 1], None),
        Err(DatagramSendError::Datagram(DatagramError::TooLarge { .. }))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datagrams_echo_v4() {
    echo(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datagrams_echo_v6() {
    echo(true).await;
}

async fn peer_without_datagrams(v6: bool) {
    let server = server_on(loopback(v6), 1, with_datagrams(false));
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let client = Endpoint::client_with(loopback(v6), with_datagrams(true)).unwrap();
    let conn = client.connect(addr, key).await.unwrap();
    assert_eq!(conn.max_datagram_size(), None);
    assert_eq!(
        conn.send_datagram(vec![1; 10], None),
        Err(DatagramSendError::Datagram(
            DatagramError::UnsupportedByPeer
        ))
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_without_datagrams_is_refused_on_send_v4() {
    peer_without_datagrams(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_without_datagrams_is_refused_on_send_v6() {
    peer_without_datagrams(true).await;
}
