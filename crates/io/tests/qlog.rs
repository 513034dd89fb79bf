//! qlog on real sockets: an endpoint given a qlog factory traces each
//! connection from its first handshake packet, with the wall-clock
//! reference time the factory passes, over IPv4 and IPv6 loopback.

mod common;

use brisk_proto::qlog::{
    EventClasses, QlogFactory, QlogSink, QlogWriter, TraceStart, VantagePoint,
};
use brisk_trace::qlog_check::check;
use common::*;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

/// A factory writing into `buf` with the wall clock as reference time.
fn factory(buf: SharedBuf) -> QlogFactory {
    QlogFactory(Arc::new(move |s| {
        let start = TraceStart {
            title: "loopback".into(),
            vantage: VantagePoint::new(s.vantage, "brisk"),
            reference: s.now,
            reference_time_ms: epoch_ms(),
            group_id: Some(s.group_id.clone()),
            classes: EventClasses::default(),
        };
        let w = QlogWriter::new(buf.clone(), &start).ok()?;
        Some(Box::new(w) as Box<dyn QlogSink>)
    }))
}

async fn traced_exchange(v6: bool) {
    let before = epoch_ms();
    let (client_buf, server_buf) = (SharedBuf::default(), SharedBuf::default());
    let server = server(v6);
    server.set_qlog(factory(server_buf.clone()));
    let client = client(v6);
    client.set_qlog(factory(client_buf.clone()));
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    // The client closes only once the server's end of the stream is done:
    // closing on the echo's last byte could beat the acknowledgement that
    // the server's shutdown waits for.
    let (echoed, echo_done) = tokio::sync::oneshot::channel();
    let serve = tokio::spawn(async move {
        let conn = server.accept().await.unwrap();
        let mut s = conn.accept_stream().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        s.write_all(&got).await.unwrap();
        s.shutdown().await.unwrap();
        echoed.send(()).unwrap();
        conn.closed().await;
    });
    let conn = client.connect(addr, key).await.unwrap();
    let mut s = conn.open_stream().await.unwrap();
    s.write_all(&pattern(50_000, 3)).await.unwrap();
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).await.unwrap();
    assert_eq!(back.len(), 50_000);
    echo_done.await.unwrap();
    conn.close(0, b"done");
    serve.await.unwrap();
    let after = epoch_ms();

    let family = if v6 { "ipv6" } else { "ipv4" };
    for (buf, side, first) in [
        (client_buf, "client", "transport:packet_sent"),
        (server_buf, "server", "transport:packet_received"),
    ] {
        let t = check(&buf.0.lock().unwrap()).unwrap_or_else(|e| panic!("{side}: {e}"));
        assert_eq!(t.header["trace"]["vantage_point"]["type"], side);
        let reference = t.header["trace"]["common_fields"]["reference_time"]
            .as_f64()
            .unwrap();
        assert!((before..=after).contains(&reference), "{side}: {reference}");
        assert_eq!(t.events[0]["name"], "connectivity:connection_started");
        assert_eq!(t.events[0]["data"]["ip_version"], family);
        let p = &t.events[1];
        assert_eq!(p["name"], first, "{side}");
        assert_eq!(p["data"]["header"]["packet_type"], "initial");
        assert_eq!(p["data"]["header"]["packet_number"], 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_start_at_the_initial_v4() {
    traced_exchange(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_start_at_the_initial_v6() {
    traced_exchange(true).await;
}
