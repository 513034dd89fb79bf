//! Single-core bulk throughput of the protocol state machine: one thread
//! runs a client and a server endpoint, datagrams go straight from one to
//! the other in memory (no sockets), every packet is encrypted, and the
//! receiver acknowledges as it would on a network (every second packet).
//! Virtual time stands still while datagrams flow (a path with no delay
//! and no rate limit) and jumps to the next timer when both sides are idle,
//! so the measurement is the CPU cost of the protocol itself.
//!
//! Each implementation is a [`BulkPeer`]; a second one (quinn-proto, say)
//! is added by implementing the trait and listing it in `peers()`.
//!
//! Run: `cargo bench -p brisk-proto --bench bulk` (report Gbit/s as
//! bytes/s x 8).
//!
//! Time is the bench thread's own CPU time (Linux's per-thread schedstat,
//! in nanoseconds) where available, so other work on a shared machine does
//! not distort the result; elsewhere it is wall-clock time.

use brisk_proto::crypto::Keypair;
use brisk_proto::streams::Priority;
use brisk_proto::{ClientConfig, Endpoint, Event, ServerConfig};
use brisk_time::Instant;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Bytes moved per measured iteration.
const TRANSFER_BYTES: usize = 16 << 20;

/// One implementation's client and server in one thread.
trait BulkPeer {
    fn name(&self) -> &'static str;
    /// Connects, moves `bytes` from client to server, and returns how many
    /// arrived.
    fn transfer(&mut self, bytes: usize) -> usize;
}

struct Brisk {
    chunk: Vec<u8>,
}

impl BulkPeer for Brisk {
    fn name(&self) -> &'static str {
        "brisk"
    }

    fn transfer(&mut self, bytes: usize) -> usize {
        let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(1));
        let mut server_cfg = ServerConfig::new(keys.clone());
        server_cfg.transport.streams.stream_receive_window = 8 << 20;
        server_cfg.transport.streams.connection_receive_window = 16 << 20;
        let mut client_cfg = ClientConfig::new(Some(keys.public()));
        client_cfg.transport.streams.send_buffer_limit = 4 << 20;
        let caddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 1000);
        let saddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 443);
        let mut client = Endpoint::new(1, None);
        let mut server = Endpoint::new(2, Some(server_cfg));
        let ch = client
            .connect(Instant::ZERO, saddr, client_cfg)
            .expect("connect");
        let mut now = Instant::ZERO;
        let mut stream = None;
        let mut server_conn = None;
        let (mut written, mut received) = (0usize, 0usize);
        let mut buf = vec![0u8; 1 << 16];
        let mut finished = false;
        while !finished {
            if let Some(c) = client.connection_mut(ch) {
                if stream.is_none() && c.is_established() {
                    stream = c.open_stream(false, Priority::default()).ok();
                }
                if let Some(id) = stream
                    && written < bytes
                {
                    let n = (bytes - written).min(self.chunk.len());
                    written += c.write(id, &self.chunk[..n]).unwrap_or(0);
                    if written == bytes {
                        c.finish(id).expect("finish");
                    }
                }
            }
            let mut moved = false;
            while let Some(t) = client.poll_transmit(now) {
                server.handle_datagram(now, caddr, t.ecn, &t.contents);
                moved = true;
            }
            while let Some(h) = server.accept() {
                server_conn = Some(h);
            }
            if let (Some(h), Some(id)) = (server_conn, stream)
                && let Some(s) = server.connection_mut(h)
            {
                while let Ok(r) = s.read(id, &mut buf) {
                    received += r.bytes;
                    finished |= r.fin;
                    if r.bytes == 0 || r.fin {
                        break;
                    }
                }
            }
            while let Some(t) = server.poll_transmit(now) {
                client.handle_datagram(now, saddr, t.ecn, &t.contents);
                moved = true;
            }
            while client.poll_event().is_some() {}
            while let Some((_, e)) = server.poll_event() {
                if matches!(e, Event::ConnectionLost(_)) {
                    return received;
                }
            }
            if moved {
                continue;
            }
            let Some(next) = [client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
            else {
                return received;
            };
            now = now.max(next);
            for ep in [&mut client, &mut server] {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.handle_timeout(now);
                }
            }
        }
        received
    }
}

/// CPU time this thread has run, from `/proc/thread-self/schedstat`.
fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn peers() -> Vec<Box<dyn BulkPeer>> {
    vec![Box::new(Brisk {
        chunk: vec![0x5a; 1 << 20],
    })]
}

fn bulk(c: &mut Criterion) {
    let mut g = c.benchmark_group("bulk_transfer");
    g.throughput(Throughput::Bytes(TRANSFER_BYTES as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    for mut peer in peers() {
        g.bench_function(peer.name(), |b| {
            b.iter_custom(|iters| {
                let wall = std::time::Instant::now();
                let cpu = thread_cpu_time();
                for _ in 0..iters {
                    let got = peer.transfer(TRANSFER_BYTES);
                    assert_eq!(got, TRANSFER_BYTES);
                }
                match (cpu, thread_cpu_time()) {
                    (Some(a), Some(b)) => b.saturating_sub(a),
                    _ => wall.elapsed(),
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bulk);
criterion_main!(benches);
