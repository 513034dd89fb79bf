//! The simulator's speed with a transport inside, Brisk beside quinn-proto,
//! in one run: what "transport included" costs, against a peer.
//!
//! Both carry one CUBIC bulk transfer (client to server, one
//! unidirectional stream, every packet encrypted) across the reference
//! dumbbell of `brisk_sim::bench` (100 Mbit/s each way, 10 ms each way,
//! FQ-CoDel) for [`SIM_SECONDS`] simulated seconds. Brisk runs as the
//! simulator's own `brisk` flow; quinn-proto 0.11 (rustls with aws-lc-rs,
//! TLS 1.3 with AES-256-GCM as rustls prefers it, the AEAD Brisk uses; its
//! default CUBIC, pacing and ECN) runs as a
//! flow written here on the same `FlowApp` interface. Both get the same
//! windows (1 MiB per stream and 4 MiB per connection on the receiver,
//! 1 MiB of send buffer) and datagrams that fill 1500-byte IP packets
//! (quinn-proto's path MTU discovery off). The network, the engine and
//! the IP and UDP headers around each payload are the same code for both.
//! Brisk's `poll_transmit` writes its payload after room for those
//! headers, so its packets are built in place;
//! quinn-proto's `poll_transmit` wants an empty buffer, so its payload is
//! copied into the packet, as its socket driver's is into the kernel.
//!
//! Run: `cargo bench -p brisk-sim --bench quinn_peer`. It prints, per
//! round, each transport's CPU seconds per simulated minute and goodput,
//! then each one's median and the median of the per-round ratios
//! quinn-proto/Brisk. `PEER_ROUNDS=n` sets the rounds (default 5; the two
//! alternate within a round so drift hits both); `PEER_IP=v6` runs over
//! IPv6 (default IPv4). Without `--bench` (as `cargo test` runs it) one
//! simulated second of each, on each family, checks that both move data.
//!
//! Time is the thread's own CPU time (`/proc/thread-self/schedstat`)
//! where readable, else wall-clock time.

use brisk_sim::engine::{Engine, FlowSetup, flow_addrs};
use brisk_sim::flows::{AppReport, BriskConfig, BriskFlow, BriskWorkload, End, FlowAddrs, FlowApp};
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::sync::Arc;
use std::time::Duration;

/// Simulated seconds per measured run.
const SIM_SECONDS: u64 = 10;
const MTU_BYTES: usize = 1500;
const STREAM_WINDOW_BYTES: u32 = 1 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 4 << 20;
const SEND_BUFFER_BYTES: u64 = 1 << 20;
/// Datagram buffers kept for reuse, as many as the Brisk flow keeps.
const SPARE_BUFFERS: usize = 256;
/// Bytes the sending application hands over per write.
const WRITE_BYTES: usize = 64 << 10;

/// The reference network of `brisk bench`'s brisk-fq_codel case, `secs`
/// long, without that case's own flows.
fn network(secs: u64, ip: IpFamily) -> Scenario {
    let mut scenario = brisk_sim::bench::cases(Duration::from_secs(secs))
        .expect("the reference loads parse")
        .into_iter()
        .find(|c| c.name == "brisk-fq_codel")
        .expect("the brisk-fq_codel reference load")
        .scenario;
    scenario.flows.clear();
    scenario.ip = ip;
    scenario
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Measured {
    cpu_s_per_sim_minute: f64,
    goodput_mbps: f64,
    packet_hops: u64,
}

/// Runs `app` alone over the network for `secs` and times it.
fn measure(
    secs: u64,
    ip: IpFamily,
    app: impl FnOnce(&Scenario, FlowAddrs) -> Box<dyn FlowApp>,
) -> Measured {
    let scenario = network(secs, ip);
    let addrs = flow_addrs(ip, 0);
    let stop = Instant::ZERO + scenario.duration;
    let mut engine = Engine::new(&scenario, 1, None);
    let start_cpu = cpu_now();
    engine.add_flow(
        FlowSetup {
            name: "bulk".into(),
            kind: "bulk",
            app: app(&scenario, addrs),
            addrs,
            start: Instant::ZERO,
            stop,
            rtt: Duration::from_millis(20),
        },
        false,
    );
    let outcome = engine.run();
    let cpu = cpu_now() - start_cpu;
    let reports = outcome.reports();
    let delivered = reports.first().map_or(0, |r| r.delivered_bytes);
    Measured {
        cpu_s_per_sim_minute: cpu.as_secs_f64() * 60.0 / secs as f64,
        goodput_mbps: delivered as f64 * 8.0 / secs as f64 / 1e6,
        packet_hops: outcome.packet_hops(),
    }
}

fn brisk(scenario: &Scenario, addrs: FlowAddrs) -> Box<dyn FlowApp> {
    Box::new(BriskFlow::new(BriskConfig {
        addrs,
        seed: 1,
        cc: brisk_proto::congestion::CcAlgorithm::Cubic,
        ecn: true,
        ack_frequency: true,
        prague_small_datagrams: false,
        prague_burst_floor: true,
        prague_pipe_cap: false,
        bbr_bounded_startup: false,
        fec: None,
        pmtud: false,
        migration: false,
        header_len: scenario.header_bytes() as usize,
        start: Instant::ZERO,
        stop: Instant::ZERO + scenario.duration,
        workload: BriskWorkload::Bulk { bytes: None },
        series: false,
        // quinn seals its packets: so does Brisk here.
        null_cipher: false,
        qlog: None,
    }))
}

fn quinn(scenario: &Scenario, addrs: FlowAddrs) -> Box<dyn FlowApp> {
    Box::new(QuinnBulk::new(
        addrs,
        MTU_BYTES - scenario.header_bytes() as usize,
    ))
}

/// A quinn-proto client (the sender) and server (the receiver) on the two
/// hosts of a flow, moving one endless unidirectional stream.
struct QuinnBulk {
    addrs: FlowAddrs,
    /// The real clock's instant that stands for simulated time zero:
    /// quinn-proto counts in `std::time::Instant`.
    epoch: std::time::Instant,
    client: quinn_proto::Endpoint,
    server: quinn_proto::Endpoint,
    client_conn: (quinn_proto::ConnectionHandle, quinn_proto::Connection),
    server_conn: Option<(quinn_proto::ConnectionHandle, quinn_proto::Connection)>,
    stream: Option<quinn_proto::StreamId>,
    incoming: Option<quinn_proto::StreamId>,
    connected: bool,
    pattern: Vec<u8>,
    written: u64,
    delivered: u64,
    payload: Vec<u8>,
    response: Vec<u8>,
    malformed: u64,
    /// Both connections' next timer, read after every call that may move
    /// it (quinn-proto's `poll_timeout` wants `&mut`).
    next_timeout: Option<Instant>,
    /// Datagram buffers the network handed back, reused as the Brisk flow
    /// reuses its own.
    spare: Vec<Vec<u8>>,
}

impl QuinnBulk {
    fn new(addrs: FlowAddrs, max_payload: usize) -> Self {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])
            .expect("self-signed certificate");
        let cert_der = cert.cert.der().clone();
        let key_der = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
        let mut transport = quinn_proto::TransportConfig::default();
        transport
            .stream_receive_window(STREAM_WINDOW_BYTES.into())
            .receive_window(CONNECTION_WINDOW_BYTES.into())
            .send_window(SEND_BUFFER_BYTES)
            .initial_mtu(u16::try_from(max_payload).unwrap_or(u16::MAX))
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
        let endpoint_config = Arc::new(quinn_proto::EndpointConfig::default());
        let mut client = quinn_proto::Endpoint::new(endpoint_config.clone(), None, false, None);
        let server =
            quinn_proto::Endpoint::new(endpoint_config, Some(Arc::new(server_config)), false, None);
        let epoch = std::time::Instant::now();
        let client_conn = client
            .connect(epoch, client_config, addrs.receiver, "localhost")
            .expect("connect");
        QuinnBulk {
            addrs,
            epoch,
            client,
            server,
            client_conn,
            server_conn: None,
            stream: None,
            incoming: None,
            connected: false,
            pattern: (0..WRITE_BYTES).map(|i| (i % 251) as u8).collect(),
            written: 0,
            delivered: 0,
            payload: Vec::with_capacity(MTU_BYTES),
            response: Vec::new(),
            malformed: 0,
            next_timeout: None,
            spare: Vec::new(),
        }
    }

    /// The next datagram either end has ready, in an IP packet.
    fn transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        let t = self.real(now);
        self.payload.clear();
        let (end, tx, src, dst) =
            if let Some(tx) = self.client_conn.1.poll_transmit(t, 1, &mut self.payload) {
                (End::Sender, tx, self.addrs.sender, self.addrs.receiver)
            } else {
                let (_, sc) = self.server_conn.as_mut()?;
                let tx = sc.poll_transmit(t, 1, &mut self.payload)?;
                (End::Receiver, tx, self.addrs.receiver, self.addrs.sender)
            };
        let ecn = match tx.ecn {
            None => Ecn::NotEct,
            Some(quinn_proto::EcnCodepoint::Ect0) => Ecn::Ect0,
            Some(quinn_proto::EcnCodepoint::Ect1) => Ecn::Ect1,
            Some(quinn_proto::EcnCodepoint::Ce) => Ecn::Ce,
        };
        let mut out = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(MTU_BYTES));
        out.clear();
        brisk_wire::ip::udp_datagram_into(src, dst, ecn, &self.payload[..tx.size], &mut out)
            .ok()?;
        Some((end, out))
    }

    fn refresh_timeout(&mut self) {
        let server = self
            .server_conn
            .as_mut()
            .and_then(|(_, s)| s.poll_timeout());
        self.next_timeout = [self.client_conn.1.poll_timeout(), server]
            .into_iter()
            .flatten()
            .min()
            .map(|t| self.simulated(t));
    }

    fn real(&self, t: Instant) -> std::time::Instant {
        self.epoch + t.since_epoch()
    }

    fn simulated(&self, t: std::time::Instant) -> Instant {
        let ns = t.saturating_duration_since(self.epoch).as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Hands endpoint events over, lets the sender write and the receiver
    /// read: what an application does after each input.
    fn run_apps(&mut self) {
        let (ch, cc) = &mut self.client_conn;
        while let Some(ev) = cc.poll_endpoint_events() {
            if let Some(back) = self.client.handle_event(*ch, ev) {
                cc.handle_event(back);
            }
        }
        while let Some(e) = cc.poll() {
            self.connected |= matches!(e, quinn_proto::Event::Connected);
        }
        if self.connected && self.stream.is_none() {
            self.stream = cc.streams().open(quinn_proto::Dir::Uni);
        }
        if let Some(id) = self.stream {
            let mut s = cc.send_stream(id);
            loop {
                let from = (self.written % WRITE_BYTES as u64) as usize;
                match s.write(&self.pattern[from..]) {
                    Ok(n) if n > 0 => self.written += n as u64,
                    _ => break,
                }
            }
        }
        let Some((sh, sc)) = &mut self.server_conn else {
            return;
        };
        while let Some(ev) = sc.poll_endpoint_events() {
            if let Some(back) = self.server.handle_event(*sh, ev) {
                sc.handle_event(back);
            }
        }
        while sc.poll().is_some() {}
        if self.incoming.is_none() {
            self.incoming = sc.streams().accept(quinn_proto::Dir::Uni);
        }
        if let Some(id) = self.incoming {
            let mut rs = sc.recv_stream(id);
            if let Ok(mut chunks) = rs.read(true) {
                while let Ok(Some(c)) = chunks.next(usize::MAX) {
                    self.delivered += c.bytes.len() as u64;
                }
                let _ = chunks.finalize();
            }
        }
    }
}

impl FlowApp for QuinnBulk {
    fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]) {
        let Ok((from, _, ecn, payload)) = brisk_wire::ip::parse_udp(datagram) else {
            self.malformed += 1;
            return;
        };
        let ecn = match ecn {
            Ecn::NotEct => None,
            Ecn::Ect0 => Some(quinn_proto::EcnCodepoint::Ect0),
            Ecn::Ect1 => Some(quinn_proto::EcnCodepoint::Ect1),
            Ecn::Ce => Some(quinn_proto::EcnCodepoint::Ce),
        };
        // quinn-proto takes each datagram as an owned buffer, as its own
        // socket driver hands it over.
        let data = bytes::BytesMut::from(payload);
        let t = self.real(now);
        self.response.clear();
        match end {
            End::Sender => {
                if let Some(quinn_proto::DatagramEvent::ConnectionEvent(_, ev)) = self
                    .client
                    .handle(t, from, None, ecn, data, &mut self.response)
                {
                    self.client_conn.1.handle_event(ev);
                }
            }
            End::Receiver => match self
                .server
                .handle(t, from, None, ecn, data, &mut self.response)
            {
                Some(quinn_proto::DatagramEvent::NewConnection(incoming)) => {
                    if let Ok(accepted) = self.server.accept(incoming, t, &mut self.response, None)
                    {
                        self.server_conn = Some(accepted);
                    }
                }
                Some(quinn_proto::DatagramEvent::ConnectionEvent(_, ev)) => {
                    if let Some((_, sc)) = &mut self.server_conn {
                        sc.handle_event(ev);
                    }
                }
                Some(quinn_proto::DatagramEvent::Response(_)) | None => {}
            },
        }
        self.run_apps();
        self.refresh_timeout();
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        let sent = self.transmit(now);
        // Sending moves the pacer and the loss timers.
        self.refresh_timeout();
        sent
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_timeout
    }

    fn handle_timeout(&mut self, now: Instant) {
        let t = self.real(now);
        if self.client_conn.1.poll_timeout().is_some_and(|d| d <= t) {
            self.client_conn.1.handle_timeout(t);
        }
        if let Some((_, sc)) = &mut self.server_conn
            && sc.poll_timeout().is_some_and(|d| d <= t)
        {
            sc.handle_timeout(t);
        }
        self.run_apps();
        self.refresh_timeout();
    }

    fn recycle(&mut self, datagram: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            self.spare.push(datagram);
        }
    }

    fn report(&self) -> AppReport {
        AppReport {
            sent_bytes: self.written,
            delivered_bytes: self.delivered,
            unanswered: self.malformed,
            ..AppReport::default()
        }
    }
}

/// This thread's CPU time so far, or the wall clock where unreadable.
fn cpu_now() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    brisk_sim::bench::thread_cpu()
        .unwrap_or_else(|| START.get_or_init(std::time::Instant::now).elapsed())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        // A smoke run: both transports connect and move data, on both
        // address families.
        type App = fn(&Scenario, FlowAddrs) -> Box<dyn FlowApp>;
        for ip in [IpFamily::V4, IpFamily::V6] {
            for (name, app) in [("brisk", brisk as App), ("quinn-proto", quinn)] {
                let m = measure(1, ip, app);
                println!(
                    "quinn_peer smoke: {name} over {ip:?} moved {:.1} Mbit/s",
                    m.goodput_mbps
                );
                assert!(m.goodput_mbps > 20.0, "{name} over {ip:?}: {m:?}");
            }
        }
        return;
    }
    let rounds: usize = std::env::var("PEER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let ip = match std::env::var("PEER_IP").as_deref() {
        Ok("v6") => IpFamily::V6,
        _ => IpFamily::V4,
    };
    println!(
        "one CUBIC bulk flow over {ip:?}, {SIM_SECONDS} simulated s of the 100 Mbit/s, 20 ms \
         dumbbell through FQ-CoDel; CPU s per simulated minute (lower is better)"
    );
    let (mut b, mut q, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mb = measure(SIM_SECONDS, ip, brisk);
        let mq = measure(SIM_SECONDS, ip, quinn);
        println!(
            "round {round}: brisk {:.3} s ({:.1} Mbit/s, {} hops)  quinn-proto {:.3} s \
             ({:.1} Mbit/s, {} hops)  ratio {:.2}",
            mb.cpu_s_per_sim_minute,
            mb.goodput_mbps,
            mb.packet_hops,
            mq.cpu_s_per_sim_minute,
            mq.goodput_mbps,
            mq.packet_hops,
            mq.cpu_s_per_sim_minute / mb.cpu_s_per_sim_minute,
        );
        b.push(mb.cpu_s_per_sim_minute);
        q.push(mq.cpu_s_per_sim_minute);
        ratios.push(mq.cpu_s_per_sim_minute / mb.cpu_s_per_sim_minute);
    }
    println!(
        "median: brisk {:.3} s, quinn-proto {:.3} s per simulated minute; \
         ratio quinn-proto/brisk: median per round {:.2}",
        median(&mut b),
        median(&mut q),
        median(&mut ratios)
    );
}
