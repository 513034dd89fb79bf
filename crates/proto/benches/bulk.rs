//! Single-core bulk throughput of the protocol state machine, Brisk beside
//! quinn-proto, in one run.
//!
//! For each implementation one thread runs a client and a server endpoint,
//! datagrams go straight from one to the other in memory (no sockets; each
//! side writes datagrams into one reused buffer, Brisk through
//! `poll_transmit` into one reused buffer, quinn-proto through its `poll_transmit` buffer),
//! every packet is encrypted (Brisk: its negotiated 1-RTT AEAD; quinn-proto:
//! TLS 1.3 through rustls with ring), and the receiver acknowledges as it
//! would on a network (every second ack-eliciting packet, the RFC 9000
//! default both follow). Virtual time stands still while datagrams flow (a
//! path with no delay and no rate limit) and jumps to the next timer when
//! both sides are idle, so the measurement is the CPU cost of the protocol
//! itself. Both move [`TRANSFER_BYTES`] on one unidirectional stream with
//! the same windows (8 MiB per stream and 16 MiB per connection on the
//! receiver, 4 MiB of send buffer) in datagrams of [`DATAGRAM_BYTES`]
//! (quinn-proto's path MTU discovery is off so it cannot grow them). Each
//! side takes datagrams as its API does: quinn-proto's `Endpoint::handle`
//! wants an owned `BytesMut`, so its side copies each datagram into a fresh
//! one (as quinn's own socket driver does), which it decrypts in place;
//! Brisk's `handle_datagram` borrows the sender's buffer and copies it once
//! into a reused buffer to decrypt. `BULK_BRISK_RX=owned` makes Brisk's side
//! do what quinn-proto's does instead (a fresh `BytesMut` per datagram,
//! `handle_datagram_owned`, decrypted in place). Both servers
//! read without copying: quinn-proto through `read(..).next()`, Brisk
//! through `read_chunk`, each handing over slices of the decrypted
//! datagrams.
//!
//! Run: `cargo bench -p brisk-proto --bench bulk` (add
//! `CARGO_TARGET_DIR=...` on a shared machine). It prints, per round, each
//! implementation's Gbit/s per CPU-second and their ratio, then each one's
//! median and best, and the median of the per-round ratios brisk/quinn.
//! `BULK_ROUNDS=n` changes the number of rounds (default 7; the
//! implementations alternate within each round so drift hits both).
//! `BULK_ONLY=brisk` (or `quinn-proto`) runs one implementation, e.g. under
//! `perf record`.
//! Without `--bench` (as `cargo test --benches` runs it) one small transfer
//! per implementation checks that the harness works.
//!
//! Time is the bench thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`)
//! where available, so other work on a shared machine does not distort the
//! result; elsewhere it is wall-clock time.

#[path = "support/cpu_time.rs"]
mod cpu_time;
use brisk_proto::crypto::Keypair;
use brisk_proto::streams::Priority;
use brisk_proto::{ClientConfig, Endpoint, Event, ServerConfig};
use brisk_time::Instant;
use cpu_time::thread_cpu_time;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// Bytes moved per measured transfer.
const TRANSFER_BYTES: usize = 16 << 20;
/// UDP payload size both implementations send.
const DATAGRAM_BYTES: u16 = 1452;
const STREAM_WINDOW_BYTES: u32 = 8 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;
const SEND_BUFFER_BYTES: u64 = 4 << 20;

/// One implementation's client and server in one thread.
trait BulkPeer {
    fn name(&self) -> &'static str;
    /// Connects and moves `bytes` from client to server.
    fn transfer(&mut self, bytes: usize) -> Moved;
}

/// What one transfer did.
#[derive(Clone, Copy, Debug, Default)]
struct Moved {
    /// Stream bytes the server read.
    received: usize,
    /// Datagrams client to server (data).
    forward: u64,
    /// Datagrams server to client (acknowledgements, window updates).
    back: u64,
}

fn client_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 1000)
}

fn server_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 443)
}

struct Brisk {
    keys: Keypair,
    chunk: Vec<u8>,
    /// Hand datagrams over as owned buffers (`BULK_BRISK_RX=owned`).
    owned: bool,
}

impl Brisk {
    fn new() -> Self {
        Brisk {
            keys: Keypair::generate(&mut ChaCha8Rng::seed_from_u64(1)),
            chunk: vec![0x5a; 1 << 20],
            owned: std::env::var("BULK_BRISK_RX").is_ok_and(|v| v == "owned"),
        }
    }
}

impl BulkPeer for Brisk {
    fn name(&self) -> &'static str {
        "brisk"
    }

    fn transfer(&mut self, bytes: usize) -> Moved {
        let mut server_cfg = ServerConfig::new(self.keys.clone());
        server_cfg.transport.max_datagram_size = u64::from(DATAGRAM_BYTES);
        server_cfg.transport.streams.stream_receive_window = u64::from(STREAM_WINDOW_BYTES);
        server_cfg.transport.streams.connection_receive_window = u64::from(CONNECTION_WINDOW_BYTES);
        let mut client_cfg = ClientConfig::new(Some(self.keys.public()));
        client_cfg.transport.max_datagram_size = u64::from(DATAGRAM_BYTES);
        client_cfg.transport.streams.send_buffer_limit = SEND_BUFFER_BYTES;
        // An ACK every second packet, as quinn-proto's default: ACK
        // frequency would spare Brisk's receiver most of its ACKs here, and
        // this bench compares the same work.
        server_cfg.transport.ack_frequency = false;
        client_cfg.transport.ack_frequency = false;
        let (caddr, saddr) = (client_addr(), server_addr());
        let mut client = Endpoint::new(1, None);
        let mut server = Endpoint::new(2, Some(server_cfg));
        let ch = client
            .connect(Instant::ZERO, saddr, client_cfg)
            .expect("connect");
        let mut now = Instant::ZERO;
        let mut stream = None;
        let mut server_conn = None;
        let mut written = 0usize;
        let mut moved_total = Moved::default();
        let mut tx_buf = Vec::with_capacity(usize::from(DATAGRAM_BYTES));
        let mut ack_buf = Vec::with_capacity(usize::from(DATAGRAM_BYTES));
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
            while let Some(t) = {
                tx_buf.clear();
                client.poll_transmit(now, 1, &mut tx_buf)
            } {
                brisk_handle(&mut server, now, caddr, t.ecn, &tx_buf, self.owned);
                moved_total.forward += 1;
                moved = true;
                // The server answers before the next datagram arrives, as
                // on a wire, so its ACKs follow its own policy instead of
                // one per burst.
                moved_total.back += brisk_deliver(
                    now,
                    &mut server,
                    saddr,
                    &mut client,
                    &mut ack_buf,
                    self.owned,
                );
            }
            while let Some(h) = server.accept() {
                server_conn = Some(h);
            }
            if let (Some(h), Some(id)) = (server_conn, stream)
                && let Some(s) = server.connection_mut(h)
            {
                // Without copying, as quinn-proto's side reads below.
                while let Ok(c) = s.read_chunk(id, usize::MAX) {
                    moved_total.received += c.data.len();
                    finished |= c.fin;
                    if c.data.is_empty() || c.fin {
                        break;
                    }
                }
            }
            let back = brisk_deliver(
                now,
                &mut server,
                saddr,
                &mut client,
                &mut tx_buf,
                self.owned,
            );
            moved_total.back += back;
            moved |= back > 0;
            while client.poll_event().is_some() {}
            while let Some((_, e)) = server.poll_event() {
                if matches!(e, Event::ConnectionLost(_)) {
                    return moved_total;
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
                return moved_total;
            };
            now = now.max(next);
            for ep in [&mut client, &mut server] {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.handle_timeout(now);
                }
            }
        }
        moved_total
    }
}

/// Hands one datagram to `to`: borrowed (the connection copies it into a
/// reused buffer to decrypt), or, with `owned`, copied into a fresh
/// `BytesMut` and handed over as quinn-proto's side does.
fn brisk_handle(
    to: &mut Endpoint,
    now: Instant,
    from_addr: SocketAddr,
    ecn: brisk_wire::Ecn,
    datagram: &[u8],
    owned: bool,
) {
    if owned {
        let data = bytes::BytesMut::from(datagram);
        to.handle_datagram_owned(now, from_addr, ecn, data);
    } else {
        to.handle_datagram(now, from_addr, ecn, datagram);
    }
}

/// Hands every datagram `from` has ready to `to`; returns how many.
fn brisk_deliver(
    now: Instant,
    from: &mut Endpoint,
    from_addr: SocketAddr,
    to: &mut Endpoint,
    buf: &mut Vec<u8>,
    owned: bool,
) -> u64 {
    let mut n = 0;
    while let Some(t) = {
        buf.clear();
        from.poll_transmit(now, 1, buf)
    } {
        brisk_handle(to, now, from_addr, t.ecn, buf, owned);
        n += 1;
    }
    n
}

/// quinn-proto 0.11 with rustls and ring, driven like [`Brisk`].
struct Quinn {
    server_config: Arc<quinn_proto::ServerConfig>,
    client_config: quinn_proto::ClientConfig,
    chunk: Vec<u8>,
}

impl Quinn {
    fn new() -> Self {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])
            .expect("self-signed certificate");
        let cert_der = cert.cert.der().clone();
        let key_der = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
        let mut transport = quinn_proto::TransportConfig::default();
        transport
            .stream_receive_window(STREAM_WINDOW_BYTES.into())
            .receive_window(CONNECTION_WINDOW_BYTES.into())
            .send_window(SEND_BUFFER_BYTES)
            .initial_mtu(DATAGRAM_BYTES)
            .mtu_discovery_config(None);
        let transport = Arc::new(transport);
        let mut server_config =
            quinn_proto::ServerConfig::with_single_cert(vec![cert_der.clone()], key_der.into())
                .expect("server config");
        server_config.transport_config(transport.clone());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert_der).expect("root certificate");
        let mut client_config = quinn_proto::ClientConfig::with_root_certificates(Arc::new(roots))
            .expect("client config");
        client_config.transport_config(transport);
        Quinn {
            server_config: Arc::new(server_config),
            client_config,
            chunk: vec![0x5a; 1 << 20],
        }
    }
}

impl BulkPeer for Quinn {
    fn name(&self) -> &'static str {
        "quinn-proto"
    }

    fn transfer(&mut self, bytes: usize) -> Moved {
        use quinn_proto::{DatagramEvent, Dir, EndpointConfig};
        let (caddr, saddr) = (client_addr(), server_addr());
        let endpoint_config = Arc::new(EndpointConfig::default());
        let mut client = quinn_proto::Endpoint::new(endpoint_config.clone(), None, false, None);
        let mut server = quinn_proto::Endpoint::new(
            endpoint_config,
            Some(self.server_config.clone()),
            false,
            None,
        );
        let start = std::time::Instant::now();
        let mut now = start;
        let (ch, mut cc) = client
            .connect(now, self.client_config.clone(), saddr, "localhost")
            .expect("connect");
        let mut sc: Option<(quinn_proto::ConnectionHandle, quinn_proto::Connection)> = None;
        let mut stream = None;
        let mut server_stream = None;
        let mut written = 0usize;
        let mut moved_total = Moved::default();
        let mut finished = false;
        let mut tx_buf = Vec::with_capacity(usize::from(DATAGRAM_BYTES));
        let mut ack_buf = Vec::with_capacity(usize::from(DATAGRAM_BYTES));
        let mut resp_buf = Vec::new();
        let mut connected = false;
        while !finished {
            while let Some(e) = cc.poll() {
                if matches!(e, quinn_proto::Event::Connected) {
                    connected = true;
                }
            }
            if connected && stream.is_none() {
                stream = cc.streams().open(Dir::Uni);
            }
            if let Some(id) = stream
                && written < bytes
            {
                let n = (bytes - written).min(self.chunk.len());
                written += cc.send_stream(id).write(&self.chunk[..n]).unwrap_or(0);
                if written == bytes {
                    cc.send_stream(id).finish().expect("finish");
                }
            }
            let mut moved = false;
            tx_buf.clear();
            while let Some(t) = cc.poll_transmit(now, 1, &mut tx_buf) {
                let data = bytes::BytesMut::from(&tx_buf[..t.size]);
                tx_buf.clear();
                moved_total.forward += 1;
                moved = true;
                match server.handle(now, caddr, None, t.ecn, data, &mut resp_buf) {
                    Some(DatagramEvent::NewConnection(incoming)) => {
                        let accepted = server
                            .accept(incoming, now, &mut resp_buf, None)
                            .expect("accept");
                        sc = Some(accepted);
                    }
                    Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                        if let Some((_, s)) = sc.as_mut() {
                            s.handle_event(ev);
                        }
                    }
                    Some(DatagramEvent::Response(_)) | None => {}
                }
                // As for Brisk: the server answers before the next datagram.
                if let Some((_, s)) = sc.as_mut() {
                    moved_total.back += quinn_deliver(
                        now,
                        s,
                        saddr,
                        &mut client,
                        &mut cc,
                        &mut ack_buf,
                        &mut resp_buf,
                    );
                }
            }
            while let Some(ev) = cc.poll_endpoint_events() {
                if let Some(back) = client.handle_event(ch, ev) {
                    cc.handle_event(back);
                }
            }
            if let Some((sh, s)) = sc.as_mut() {
                while let Some(ev) = s.poll_endpoint_events() {
                    if let Some(back) = server.handle_event(*sh, ev) {
                        s.handle_event(back);
                    }
                }
                while s.poll().is_some() {}
                if server_stream.is_none() {
                    server_stream = s.streams().accept(Dir::Uni);
                }
                if let Some(id) = server_stream {
                    let mut rs = s.recv_stream(id);
                    if let Ok(mut chunks) = rs.read(true) {
                        loop {
                            match chunks.next(usize::MAX) {
                                Ok(Some(c)) => moved_total.received += c.bytes.len(),
                                Ok(None) => {
                                    finished = true;
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        let _ = chunks.finalize();
                    }
                }
                let back = quinn_deliver(
                    now,
                    s,
                    saddr,
                    &mut client,
                    &mut cc,
                    &mut tx_buf,
                    &mut resp_buf,
                );
                moved_total.back += back;
                moved |= back > 0;
            }
            if moved {
                continue;
            }
            let next = [
                cc.poll_timeout(),
                sc.as_mut().and_then(|(_, s)| s.poll_timeout()),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else {
                return moved_total;
            };
            now = now.max(next);
            if cc.poll_timeout().is_some_and(|t| t <= now) {
                cc.handle_timeout(now);
            }
            if let Some((_, s)) = sc.as_mut()
                && s.poll_timeout().is_some_and(|t| t <= now)
            {
                s.handle_timeout(now);
            }
        }
        moved_total
    }
}

/// Hands every datagram the server connection `s` has ready to the client;
/// returns how many.
fn quinn_deliver(
    now: std::time::Instant,
    s: &mut quinn_proto::Connection,
    from_addr: SocketAddr,
    client: &mut quinn_proto::Endpoint,
    cc: &mut quinn_proto::Connection,
    buf: &mut Vec<u8>,
    resp_buf: &mut Vec<u8>,
) -> u64 {
    let mut n = 0;
    buf.clear();
    while let Some(t) = s.poll_transmit(now, 1, buf) {
        let data = bytes::BytesMut::from(&buf[..t.size]);
        buf.clear();
        n += 1;
        if let Some(quinn_proto::DatagramEvent::ConnectionEvent(_, ev)) =
            client.handle(now, from_addr, None, t.ecn, data, resp_buf)
        {
            cc.handle_event(ev);
        }
    }
    n
}

/// Gbit/s of one transfer of `bytes`, per second of this thread's CPU,
/// and what the transfer moved.
fn measure(peer: &mut dyn BulkPeer, bytes: usize) -> (f64, Moved) {
    let wall = std::time::Instant::now();
    let cpu = thread_cpu_time();
    let moved = peer.transfer(bytes);
    let spent = match (cpu, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    assert_eq!(
        moved.received,
        bytes,
        "{} delivered {} of {bytes} bytes",
        peer.name(),
        moved.received
    );
    let gbps = bytes as f64 * 8.0 / spent.as_secs_f64().max(1e-9) / 1e9;
    (gbps, moved)
}

/// Datagrams back to the sender per 100 data datagrams: the ACK rate.
fn acks_per_100(m: &Moved) -> f64 {
    100.0 * m.back as f64 / m.forward.max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut peers: Vec<Box<dyn BulkPeer>> = vec![Box::new(Brisk::new()), Box::new(Quinn::new())];
    if let Ok(only) = std::env::var("BULK_ONLY") {
        peers.retain(|p| p.name() == only);
    }
    if !std::env::args().any(|a| a == "--bench") {
        for p in &mut peers {
            let (gbps, moved) = measure(p.as_mut(), 1 << 20);
            println!(
                "bulk smoke test: {} moved 1 MiB ({gbps:.2} Gbit/s, {:.0} datagrams back per 100 sent)",
                p.name(),
                acks_per_100(&moved)
            );
            // The receiver must acknowledge as on a network (about every
            // second packet), not once per burst.
            assert!(
                acks_per_100(&moved) > 20.0,
                "{}: only {} datagrams back for {} sent",
                p.name(),
                moved.back,
                moved.forward
            );
        }
        return;
    }
    let rounds: usize = std::env::var("BULK_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(7);
    // Warm-up: page in code, grow allocator arenas.
    for p in &mut peers {
        measure(p.as_mut(), TRANSFER_BYTES);
    }
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); peers.len()];
    let mut last_moved = vec![Moved::default(); peers.len()];
    println!(
        "bulk transfer: {} MiB per transfer, {DATAGRAM_BYTES}-byte datagrams, Gbit/s per CPU-second",
        TRANSFER_BYTES >> 20
    );
    for round in 0..rounds {
        let mut line = format!("round {round}:");
        for ((p, r), m) in peers.iter_mut().zip(&mut results).zip(&mut last_moved) {
            let (gbps, moved) = measure(p.as_mut(), TRANSFER_BYTES);
            r.push(gbps);
            *m = moved;
            line.push_str(&format!("  {} {gbps:.2}", p.name()));
        }
        if let [brisk, quinn] = &results[..] {
            line.push_str(&format!("  ratio {:.2}", brisk[round] / quinn[round]));
        }
        println!("{line}");
    }
    for ((p, r), m) in peers.iter().zip(&results).zip(&last_moved) {
        let best = r.iter().copied().fold(0.0, f64::max);
        println!(
            "{:<12} median {:.2} Gbit/s, best {best:.2} Gbit/s ({} datagrams sent, {:.0} back per 100)",
            p.name(),
            median(r.clone()),
            m.forward,
            acks_per_100(m)
        );
    }
    // The two run within milliseconds of each other in a round, so the
    // ratio per round cancels most of the shared machine's drift.
    if let [brisk, quinn] = &results[..] {
        let ratios = brisk.iter().zip(quinn).map(|(b, q)| b / q).collect();
        println!(
            "ratio brisk/quinn-proto: median per round {:.2}",
            median(ratios)
        );
    }
}
