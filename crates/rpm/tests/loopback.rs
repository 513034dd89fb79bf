//! Brisk's client against Brisk's server on loopback, IPv4 and IPv6.

use brisk_rpm::{ClientOptions, Direction, Server, ServerOptions};
use std::net::SocketAddr;
use std::time::Duration;

async fn measure(bind: &str, direction: Direction, lowat: Option<u32>) -> brisk_rpm::Report {
    let addr: SocketAddr = bind.parse().expect("address");
    let server = Server::bind(
        addr,
        ServerOptions {
            notsent_lowat: lowat,
            names: Vec::new(),
        },
    )
    .await
    .expect("bind");
    let local = server.local_addr().expect("local address");
    let serving = tokio::spawn(server.run());
    let url = format!("https://{local}/config");
    let options = ClientOptions {
        insecure: true,
        direction,
        max_time: Duration::from_secs(3),
        interval: Duration::from_millis(500),
        max_connections: 4,
        ..ClientOptions::default()
    };
    let mut intervals = 0;
    let report = brisk_rpm::client::run(&url, &options, |_| intervals += 1)
        .await
        .expect("measurement");
    serving.abort();
    assert!(intervals >= 2, "progress called {intervals} times");
    report
}

fn check_plausible(r: &brisk_rpm::Report) {
    // Loopback round trips take microseconds to a few milliseconds even
    // under load: far above 300 RPM, and never a zero or infinite delay.
    assert!(r.rpm.is_finite() && r.rpm > 300.0, "RPM {}", r.rpm);
    let c = r.components;
    for v in [
        c.tcp_foreign_ms,
        c.tls_foreign_ms,
        c.http_foreign_ms,
        c.http_self_ms,
    ] {
        assert!(v > 0.0 && v < 1000.0, "component {v} ms in {c:?}");
    }
    assert!(r.foreign_probes > 0 && r.self_probes > 0, "{r:?}");
    assert!(r.duration_s <= 4.0, "ran {} s", r.duration_s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_directions_over_ipv4() {
    let r = measure("127.0.0.1:0", Direction::Both, None).await;
    check_plausible(&r);
    // Loopback moves far more than 10 Mbit/s each way.
    assert!(r.download_bps > 10e6, "download {} bit/s", r.download_bps);
    assert!(r.upload_bps > 10e6, "upload {} bit/s", r.upload_bps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_over_ipv6_with_notsent_lowat() {
    let r = measure("[::1]:0", Direction::Download, Some(16 * 1024)).await;
    check_plausible(&r);
    assert!(r.download_bps > 10e6, "download {} bit/s", r.download_bps);
    assert_eq!(r.upload_bps, 0.0);
    assert_eq!(r.upload_connections, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_is_refused_without_insecure() {
    let server = Server::bind(
        "127.0.0.1:0".parse().expect("address"),
        ServerOptions::default(),
    )
    .await
    .expect("bind");
    let local = server.local_addr().expect("local address");
    let serving = tokio::spawn(server.run());
    let options = ClientOptions {
        max_time: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let err = brisk_rpm::client::run(&format!("https://{local}/config"), &options, |_| {})
        .await
        .expect_err("a self-signed certificate must not pass verification");
    serving.abort();
    assert!(err.contains("TLS") || err.contains("certificate"), "{err}");
}
