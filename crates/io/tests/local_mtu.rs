//! A path MTU probe larger than the local interface carries: the kernel
//! refuses to send it (`EMSGSIZE`) and the probe counts as lost at once,
//! on IPv4 and IPv6. In a network namespace of its own whose loopback
//! takes 1280-byte IP packets, a client set to send up to 1452 bytes of
//! UDP payload (as if its route were wider) downloads 2 MB: both ends'
//! probes at that size are refused, the search settles within five
//! probes at a size the interface carries, and the data arrives intact.
//!
//! Needs root (a namespace): skips with a message otherwise, unless
//! CI=true, where it fails.

mod common;
mod netns;

use brisk_io::{Endpoint, EndpointConfig};
use common::*;
use netns::{Netns, root_or_skip};
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The loopback MTU in the test's namespace, in bytes of IP packet.
const LOCAL_MTU: u64 = 1280;
/// What the client is told it may send: more than the interface takes.
const CONFIGURED_PAYLOAD: u64 = 1452;
const LEN: usize = 2 << 20;

fn probe_refused_locally(v6: bool) {
    let test = format!("probe_refused_locally_v{}", if v6 { 6 } else { 4 });
    if !root_or_skip(&test) {
        return;
    }
    let ns = Netns::create(&format!("mtu8-{}", if v6 { 6 } else { 4 }));
    ns.set_loopback_mtu(LOCAL_MTU as u32);
    let (client, server, socket) = ns.run(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        rt.block_on(async move {
            let wide = EndpointConfig {
                max_datagram_size: Some(CONFIGURED_PAYLOAD),
                ..config()
            };
            let server = server_on(loopback(v6), 1, wide.clone());
            let (addr, key) = (server.local_addr(), server.public_key().unwrap());
            // The client says when it has read everything; the server's
            // statistics are taken then, while the connection is up.
            let (read_all, all_read) = tokio::sync::oneshot::channel::<()>();
            let serving = tokio::spawn(async move {
                let conn = server.accept().await.expect("a connection");
                let mut s = conn.accept_stream().await.expect("a stream");
                let mut request = [0u8; 1];
                s.read_exact(&mut request).await.expect("the request");
                s.write_all(&pattern(LEN, 8)).await.expect("the answer");
                s.shutdown().await.expect("its end");
                let _ = tokio::time::timeout(Duration::from_secs(10), all_read).await;
                conn.stats().expect("server connection stats")
            });
            let endpoint = Endpoint::client_with(loopback(v6), wide).unwrap();
            let conn = endpoint.connect(addr, key).await.expect("connects");
            let mut s = conn.open_stream().await.unwrap();
            s.write_all(b"G").await.unwrap();
            s.shutdown().await.unwrap();
            let mut got = Vec::with_capacity(LEN);
            s.read_to_end(&mut got).await.unwrap();
            assert_eq!(
                Sha256::digest(&got),
                Sha256::digest(pattern(LEN, 8)),
                "hash mismatch"
            );
            let client = conn.stats().unwrap();
            let _ = read_all.send(());
            let server = serving.await.expect("server task");
            conn.close(0, b"done");
            (client, server, endpoint.stats().socket)
        })
    });
    let headers = if v6 { 48 } else { 28 };
    let fits = LOCAL_MTU - headers;
    for (side, s) in [("client", &client), ("server", &server)] {
        let p = s.pmtu;
        eprintln!(
            "{test} {side}: {} B in use (the interface fits {fits}), {} probes sent, {} lost, \
             {} refused with a size, {} black holes",
            p.current_bytes, p.probes_sent, p.probes_lost, p.too_big_accepted, p.black_holes
        );
        assert!(p.current_bytes <= fits, "{side}: {p:?}");
        assert!(
            fits - p.current_bytes <= (CONFIGURED_PAYLOAD - 1200).div_ceil(16),
            "{side}: {p:?}"
        );
        assert!(p.probes_sent <= 5 && p.probes_lost >= 1, "{side}: {p:?}");
        assert_eq!(p.black_holes, 0, "{side}: {p:?}");
    }
    eprintln!(
        "{test} client socket: {} sends refused, {} too-big reports",
        socket.send_errors, socket.errors.too_big
    );
    assert!(socket.errors.too_big >= 1, "{socket:?}");
}

#[test]
fn probe_refused_locally_v4() {
    probe_refused_locally(false);
}

#[test]
fn probe_refused_locally_v6() {
    probe_refused_locally(true);
}
