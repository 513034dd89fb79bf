//! A two-endpoint harness: a client and a server [`Endpoint`] joined by
//! brisk-netmodel's [`Bottleneck`] (the same links and queues the
//! simulator and the live router drive), stepped in virtual time that
//! jumps to the next wake-up (a delivery, a link event or a timer).
//! Datagrams travel as IPv4 or IPv6 UDP packets; the client-to-server
//! direction is the bottleneck's down link. Each direction is described
//! by a [`LinkConfig`] in the tests' terms (delay, an optional rate and
//! tail-drop queue, a step CE marker, random or burst loss, reordering,
//! duplication, outages, ECN bleaching), translated by [`net_link`] and
//! [`net_queue`].
#![allow(dead_code)]

use brisk_netmodel::link::ecn_rewrite::EcnRewrite as NetEcnRewrite;
use brisk_netmodel::link::loss::{GilbertElliott, LossModel};
use brisk_netmodel::link::outage::Outage;
use brisk_netmodel::link::reorder::{Reorder, ReorderDepth};
use brisk_netmodel::network::Links;
use brisk_netmodel::queue::{DualPi2Config, FifoConfig, QueueConfig, StepThreshold};
use brisk_netmodel::{
    Bottleneck, BottleneckOutput, Direction, LinkEvent, Network, Packet, RateModel,
};
use brisk_proto::crypto::Keypair;
use brisk_proto::streams::StreamId;
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, Event, ServerConfig};
use brisk_time::Instant;
use brisk_wire::Ecn;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

pub const MS: Duration = Duration::from_millis(1);

/// Address family of a test run: every scenario runs over both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

pub const FAMILIES: [Family; 2] = [Family::V4, Family::V6];

impl Family {
    pub fn addrs(self) -> (SocketAddr, SocketAddr) {
        match self {
            Family::V4 => (
                SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 40_000),
                SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)), 4433),
            ),
            Family::V6 => (
                SocketAddr::new(
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
                    40_000,
                ),
                SocketAddr::new(
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 7)),
                    4433,
                ),
            ),
        }
    }
}

/// What the network does to ECN fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnRewrite {
    #[default]
    Keep,
    /// Clear the field (a bleaching middlebox).
    Bleach,
}

/// Gilbert-Elliott bursts: enter the lossy state with `p_enter` per packet,
/// leave it with `p_exit`; every packet in the lossy state is dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstLoss {
    pub p_enter: f64,
    pub p_exit: f64,
}

/// One direction of the path.
#[derive(Debug, Clone, Default)]
pub struct LinkConfig {
    pub delay: Duration,
    /// Bottleneck rate; `None` is as good as infinitely fast
    /// ([`UNLIMITED_BPS`]).
    pub rate_bps: Option<u64>,
    /// Tail-drop limit of the bottleneck queue, in bytes of IP packets.
    pub queue_bytes: u64,
    /// Mark ECN-capable packets CE when they waited in the queue longer
    /// than this (a step AQM, as an L4S queue uses): the queue becomes a
    /// DualPI2 whose L queue steps at this sojourn time.
    pub ce_threshold: Option<Duration>,
    /// Independent loss probability per packet (not with `burst`).
    pub loss: f64,
    pub burst: Option<BurstLoss>,
    /// One packet in `n`, at random, is held back for the extra delay.
    pub reorder_every: Option<u64>,
    pub reorder_delay: Duration,
    pub duplicate: f64,
    pub ecn: EcnRewrite,
    /// Everything leaving the transmitter in these windows is lost.
    pub outages: Vec<(Instant, Instant)>,
    /// The largest IP packet the hop forwards, in bytes.
    pub mtu: Option<u32>,
    /// Answer a packet over the MTU with a Packet Too Big, which the
    /// harness hands to the sending connection.
    pub mtu_icmp: bool,
    /// From this time on the MTU is this many bytes.
    pub mtu_change: Option<(Instant, u32)>,
}

impl LinkConfig {
    pub fn delay(ms: u64) -> Self {
        LinkConfig {
            delay: Duration::from_millis(ms),
            queue_bytes: u64::MAX,
            ..LinkConfig::default()
        }
    }
}

/// The rate of a direction without `rate_bps`: 1 Tbit/s serializes a
/// 1500-byte packet in 12 ns, far below any delay the tests use.
pub const UNLIMITED_BPS: u64 = 1_000_000_000_000;

/// How much later than its delays alone say a handshake step lands on
/// unlimited links: each datagram still takes about 10 ns to serialize at
/// [`UNLIMITED_BPS`], behind those sent with it; a microsecond bounds a
/// flight of dozens and is far below any round trip the tests claim.
pub const SERIALIZATION_SLACK: Duration = Duration::from_micros(1);

/// Asserts that `got` is `want` or later by at most
/// [`SERIALIZATION_SLACK`].
#[track_caller]
pub fn assert_at(got: Instant, want: Instant, what: &str) {
    assert!(
        got >= want && got - want <= SERIALIZATION_SLACK,
        "{what}: at {got:?}, want {want:?} plus serialization"
    );
}

/// The bottleneck link a test's direction describes.
pub fn net_link(c: &LinkConfig) -> brisk_netmodel::LinkConfig {
    assert!(
        c.burst.is_none() || c.loss == 0.0,
        "a direction has one loss model: `loss` or `burst`"
    );
    let loss = match c.burst {
        // The same chain: enter with p_enter, leave with p_exit, so the
        // mean rate is p_enter / (p_enter + p_exit) and the mean burst
        // 1 / p_exit packets.
        Some(b) => Some(LossModel::GilbertElliott(GilbertElliott {
            loss: b.p_enter / (b.p_enter + b.p_exit),
            burst_packets: 1.0 / b.p_exit,
        })),
        None if c.loss > 0.0 => Some(LossModel::Random {
            probability: c.loss,
        }),
        None => None,
    };
    brisk_netmodel::LinkConfig {
        rate: RateModel::Constant {
            bps: c.rate_bps.unwrap_or(UNLIMITED_BPS),
        },
        delay: c.delay,
        loss,
        reorder: c.reorder_every.map(|n| Reorder {
            probability: 1.0 / n.max(1) as f64,
            depth: ReorderDepth::Time(c.reorder_delay),
        }),
        duplicate: c.duplicate,
        outages: c
            .outages
            .iter()
            .map(|&(start, end)| Outage {
                start: start - Instant::ZERO,
                duration: end.saturating_duration_since(start),
            })
            .collect(),
        outage_drops: true,
        ecn: match c.ecn {
            EcnRewrite::Keep => NetEcnRewrite::Pass,
            EcnRewrite::Bleach => NetEcnRewrite::Bleach,
        },
        mtu: c.mtu,
        mtu_icmp: c.mtu_icmp,
        mtu_change: c.mtu_change.map(|(at, mtu)| brisk_netmodel::MtuChange {
            at: at - Instant::ZERO,
            mtu,
        }),
        ..brisk_netmodel::LinkConfig::default()
    }
}

/// The bottleneck queue a test's direction describes: a tail-drop FIFO,
/// or with `ce_threshold` a DualPI2 marking L4S packets at that step.
pub fn net_queue(c: &LinkConfig) -> QueueConfig {
    let limit_bytes = (c.queue_bytes != u64::MAX).then_some(c.queue_bytes);
    match c.ce_threshold {
        None => QueueConfig::Fifo(FifoConfig {
            limit_packets: None,
            limit_bytes,
        }),
        Some(step) => QueueConfig::DualPi2(DualPi2Config {
            limit_packets: None,
            limit_bytes,
            step_threshold: StepThreshold::Time(step),
            ..DualPi2Config::default()
        }),
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub sent: u64,
    pub delivered: u64,
    /// Dropped by the queue or lost on the link.
    pub dropped: u64,
    pub duplicated: u64,
    pub ce_marked: u64,
    pub bytes_sent: u64,
    /// Dropped at the entrance for exceeding the MTU.
    pub too_big: u64,
}

impl LinkStats {
    /// Counts what the bottleneck reports about this direction.
    fn count(&mut self, event: &LinkEvent) {
        match event {
            LinkEvent::QueueDrop { .. } | LinkEvent::Lost { .. } => self.dropped += 1,
            LinkEvent::Marked { .. } => self.ce_marked += 1,
            LinkEvent::Duplicated { .. } => self.duplicated += 1,
            LinkEvent::TooBig { .. } => self.too_big += 1,
            _ => {}
        }
    }
}

/// Sees (and may change) every datagram; false drops it.
pub type Tap = Box<dyn FnMut(Dir, &mut Vec<u8>) -> bool>;

/// One direction as the tests see it: its settings and what it did.
#[derive(Debug, Clone)]
pub struct LinkSide {
    pub config: LinkConfig,
    pub stats: LinkStats,
}

/// Which way a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    ToServer,
    ToClient,
}

pub struct PairConfig {
    pub family: Family,
    pub seed: u64,
    pub client: ClientConfig,
    pub server: ServerConfig,
    pub to_server: LinkConfig,
    pub to_client: LinkConfig,
    /// Deliver datagrams through `handle_datagram_owned` instead of the
    /// borrowing `handle_datagram`.
    pub owned: bool,
    /// Have `poll_transmit` append datagrams after this many bytes of room
    /// (checked untouched, then cut off); 0 for an empty buffer.
    pub headroom: usize,
    /// Traces both endpoints' connections from their creation.
    pub qlog: Option<brisk_proto::qlog::QlogFactory>,
}

impl PairConfig {
    /// IK (the client knows the server's key), 10 ms each way, no loss.
    pub fn new(family: Family, seed: u64) -> Self {
        let server_keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x5e5e));
        PairConfig {
            family,
            seed,
            client: ClientConfig::new(Some(server_keys.public())),
            server: ServerConfig::new(server_keys),
            to_server: LinkConfig::delay(10),
            to_client: LinkConfig::delay(10),
            owned: false,
            headroom: 0,
            qlog: None,
        }
    }

    /// Both directions.
    pub fn link(mut self, f: impl Fn(&mut LinkConfig)) -> Self {
        f(&mut self.to_server);
        f(&mut self.to_client);
        self
    }
}

pub struct Pair {
    pub now: Instant,
    pub client: Endpoint,
    pub server: Endpoint,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
    /// Both directions: client to server is [`Direction::Down`].
    pub net: Bottleneck,
    pub to_server: LinkSide,
    pub to_client: LinkSide,
    /// The id the next packet handed to the bottleneck gets.
    next_packet_id: u64,
    pub client_conn: ConnectionHandle,
    pub server_conn: Option<ConnectionHandle>,
    pub client_events: Vec<Event>,
    pub server_events: Vec<Event>,
    /// Every datagram sent, when `record` is set.
    pub record: bool,
    pub history: Vec<(Dir, Instant, Vec<u8>)>,
    /// Called on every datagram before it enters a link; return false to
    /// drop it.
    pub tap: Option<Tap>,
    /// See [`PairConfig::owned`].
    pub owned: bool,
    /// See [`PairConfig::headroom`].
    pub headroom: usize,
    pub steps: u64,
    /// Steps taken without time moving: a guard against livelock.
    stalled_steps: u64,
}

impl Pair {
    /// Builds both endpoints and starts the client's connection (its first
    /// flight leaves at the first step).
    pub fn new(cfg: PairConfig) -> Pair {
        let (client_addr, server_addr) = cfg.family.addrs();
        let mut client = Endpoint::new(cfg.seed, None);
        let mut server = Endpoint::new(cfg.seed.wrapping_add(1), Some(cfg.server));
        if let Some(f) = cfg.qlog {
            client.set_qlog(f.clone());
            server.set_qlog(f);
        }
        let client_conn = client
            .connect(Instant::ZERO, server_addr, cfg.client)
            .expect("connect");
        Pair {
            now: Instant::ZERO,
            client,
            server,
            client_addr,
            server_addr,
            net: Bottleneck::new(
                &Network {
                    link: Links {
                        down: net_link(&cfg.to_server),
                        up: net_link(&cfg.to_client),
                    },
                    queue: net_queue(&cfg.to_server),
                    queue_up: net_queue(&cfg.to_client),
                    ..Network::default()
                },
                cfg.seed.wrapping_add(2),
            ),
            to_server: LinkSide {
                config: cfg.to_server,
                stats: LinkStats::default(),
            },
            to_client: LinkSide {
                config: cfg.to_client,
                stats: LinkStats::default(),
            },
            next_packet_id: 0,
            client_conn,
            server_conn: None,
            client_events: Vec::new(),
            server_events: Vec::new(),
            record: false,
            history: Vec::new(),
            tap: None,
            owned: cfg.owned,
            headroom: cfg.headroom,
            steps: 0,
            stalled_steps: 0,
        }
    }

    pub fn client_conn(&mut self) -> &mut brisk_proto::Connection {
        self.client
            .connection_mut(self.client_conn)
            .expect("client connection")
    }

    pub fn server_conn(&mut self) -> Option<&mut brisk_proto::Connection> {
        let h = self.server_conn?;
        self.server.connection_mut(h)
    }

    /// Sends everything both endpoints want to send now.
    pub fn flush(&mut self) {
        for dir in [Dir::ToServer, Dir::ToClient] {
            while let Some((ecn, data)) = self.poll_transmit(dir) {
                self.push(dir, ecn, data);
            }
        }
    }

    /// The next datagram from the endpoint sending in `dir`.
    fn poll_transmit(&mut self, dir: Dir) -> Option<(Ecn, Vec<u8>)> {
        let from = match dir {
            Dir::ToServer => &mut self.client,
            Dir::ToClient => &mut self.server,
        };
        let room: Vec<u8> = (0..self.headroom).map(|i| (i as u8) ^ 0x5a).collect();
        let mut buf = room.clone();
        let t = from.poll_transmit(self.now, 1, &mut buf);
        assert_eq!(buf[..room.len()], room[..], "the room in front was touched");
        let Some(t) = t else {
            assert_eq!(
                buf.len(),
                room.len(),
                "nothing to send, yet bytes were left"
            );
            return None;
        };
        Some((t.ecn, buf.split_off(room.len())))
    }

    fn push(&mut self, dir: Dir, ecn: Ecn, mut data: Vec<u8>) {
        if self.record {
            self.history.push((dir, self.now, data.clone()));
        }
        if let Some(tap) = self.tap.as_mut()
            && !tap(dir, &mut data)
        {
            return;
        }
        let (src, dst, side, direction) = match dir {
            Dir::ToServer => (
                self.client_addr,
                self.server_addr,
                &mut self.to_server,
                Direction::Down,
            ),
            Dir::ToClient => (
                self.server_addr,
                self.client_addr,
                &mut self.to_client,
                Direction::Up,
            ),
        };
        side.stats.sent += 1;
        side.stats.bytes_sent += data.len() as u64;
        let bytes = brisk_wire::ip::udp_datagram(src, dst, ecn, &data).expect("a UDP datagram");
        let packet = Packet::new(self.next_packet_id, self.now, bytes).expect("a valid IP packet");
        self.next_packet_id += 1;
        self.net.handle_packet(self.now, direction, packet);
    }

    /// Advances the bottleneck's direction `dir` to now, counts what it
    /// did and hands each datagram that arrived to its endpoint.
    fn deliver_due(&mut self, dir: Dir) {
        let (direction, side, to, conn, addr) = match dir {
            Dir::ToServer => (
                Direction::Down,
                &mut self.to_server,
                &mut self.server,
                self.server_conn,
                self.server_addr,
            ),
            Dir::ToClient => (
                Direction::Up,
                &mut self.to_client,
                &mut self.client,
                Some(self.client_conn),
                self.client_addr,
            ),
        };
        self.net.handle_timeout(self.now, direction);
        while let Some(out) = self.net.poll(direction, &mut ()) {
            match out {
                BottleneckOutput::Event(e) => side.stats.count(&e),
                // A router's answer to one of this side's packets that was
                // too big: the connection hears of it, as a socket driver's
                // error queue would tell it.
                BottleneckOutput::Delivered { packet, .. }
                    if packet.flow().protocol != brisk_wire::udp::PROTOCOL =>
                {
                    let ptb = brisk_wire::icmp::parse_packet_too_big(&packet.data)
                        .expect("only Packet Too Big messages besides UDP");
                    if ptb.quoted_src == addr
                        && let Some(c) = conn.and_then(|h| to.connection_mut(h))
                    {
                        let quoted = &packet.data[ptb.quoted_payload_at..];
                        c.handle_packet_too_big(self.now, ptb.mtu, quoted);
                    }
                }
                BottleneckOutput::Delivered { packet, .. } => {
                    side.stats.delivered += 1;
                    let (src, _, ecn, payload) =
                        brisk_wire::ip::parse_udp(&packet.data).expect("the datagram sent");
                    deliver(to, self.now, src, ecn, payload, self.owned);
                }
            }
        }
    }

    /// Hands a datagram to an endpoint right now, bypassing the links.
    pub fn inject(&mut self, dir: Dir, ecn: Ecn, data: &[u8]) {
        let (to, from) = match dir {
            Dir::ToServer => (&mut self.server, self.client_addr),
            Dir::ToClient => (&mut self.client, self.server_addr),
        };
        deliver(to, self.now, from, ecn, data, self.owned);
    }

    fn drain_events(&mut self) {
        while let Some((_, e)) = self.client.poll_event() {
            self.client_events.push(e);
        }
        while let Some(h) = self.server.accept() {
            self.server_conn.get_or_insert(h);
        }
        while let Some((_, e)) = self.server.poll_event() {
            self.server_events.push(e);
        }
    }

    /// One step: send, jump to the next event, deliver and fire timers.
    /// Returns false when nothing will ever happen again.
    pub fn step(&mut self) -> bool {
        self.step_before(Instant::FAR_FUTURE)
    }

    /// Like [`step`](Self::step), but never jumps past `deadline`: if the
    /// next event is later, time stops at `deadline` and this returns false.
    pub fn step_before(&mut self, deadline: Instant) -> bool {
        self.flush();
        self.drain_events();
        let next = [
            self.client.poll_timeout(),
            self.server.poll_timeout(),
            self.net.poll_timeout(Direction::Down),
            self.net.poll_timeout(Direction::Up),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else {
            return false;
        };
        if t > deadline {
            self.now = self.now.max(deadline);
            return false;
        }
        self.steps += 1;
        if t <= self.now {
            self.stalled_steps += 1;
            assert!(
                self.stalled_steps < 100_000,
                "livelock: time stuck at {:?}",
                self.now
            );
        } else {
            self.stalled_steps = 0;
        }
        self.now = self.now.max(t);
        self.deliver_due(Dir::ToServer);
        self.deliver_due(Dir::ToClient);
        if self.client.poll_timeout().is_some_and(|x| x <= self.now) {
            self.client.handle_timeout(self.now);
        }
        if self.server.poll_timeout().is_some_and(|x| x <= self.now) {
            self.server.handle_timeout(self.now);
        }
        self.drain_events();
        true
    }

    /// Steps until `done` holds (checked after every step) or virtual time
    /// passes `deadline`; returns whether `done` held.
    pub fn run_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&mut Pair) -> bool,
    ) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if self.now >= deadline || !self.step_before(deadline) {
                return done(self);
            }
        }
    }

    pub fn client_connected(&self) -> bool {
        self.client_events.contains(&Event::Connected)
    }

    pub fn server_connected(&self) -> bool {
        self.server_events.contains(&Event::Connected)
    }

    /// Runs until both sides report Connected.
    pub fn connect(&mut self) -> bool {
        self.run_until(Instant::from_millis(10_000), |p| {
            p.client_connected() && p.server_connected()
        })
    }
}

/// Hands `data` to `to`, borrowed or (when `owned`) as a buffer of its own.
fn deliver(to: &mut Endpoint, now: Instant, from: SocketAddr, ecn: Ecn, data: &[u8], owned: bool) {
    if owned {
        to.handle_datagram_owned(now, from, ecn, bytes::BytesMut::from(data));
    } else {
        to.handle_datagram(now, from, ecn, data);
    }
}

/// Deterministic pseudo-random payload.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    v
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

/// A one-way bulk transfer: the client writes `data` on one stream and
/// finishes; the server reads it all.
pub struct Bulk {
    pub data: Vec<u8>,
    pub written: usize,
    pub stream: Option<StreamId>,
    pub received: Vec<u8>,
    pub fin: bool,
    /// Read with `read_chunk(.., max)` instead of copying reads.
    pub chunk_max: Option<usize>,
}

impl Bulk {
    pub fn new(data: Vec<u8>) -> Self {
        Bulk {
            data,
            written: 0,
            stream: None,
            received: Vec::new(),
            fin: false,
            chunk_max: None,
        }
    }

    /// Writes what the client can, reads what the server has. Returns true
    /// once the server saw the whole stream.
    pub fn pump(&mut self, p: &mut Pair) -> bool {
        if p.client_connected() {
            let c = p.client_conn();
            if self.stream.is_none() {
                self.stream = c.open_stream(false, Default::default()).ok();
            }
            if let Some(id) = self.stream
                && self.written < self.data.len()
            {
                if let Ok(n) = c.write(id, &self.data[self.written..]) {
                    self.written += n;
                }
                if self.written == self.data.len() {
                    c.finish(id).expect("finish");
                }
            }
        }
        if let Some(s) = p.server_conn() {
            let mut buf = vec![0u8; 65_536];
            while let Some(id) = s.accept_stream() {
                assert_eq!(Some(id), self.stream, "one stream expected");
            }
            if let (Some(id), Some(max)) = (self.stream, self.chunk_max) {
                while let Ok(c) = s.read_chunk(id, max) {
                    assert!(c.data.len() <= max);
                    self.received.extend_from_slice(&c.data);
                    self.fin |= c.fin;
                    if c.data.is_empty() {
                        break;
                    }
                }
            } else if let Some(id) = self.stream {
                while let Ok(r) = s.read(id, &mut buf) {
                    self.received.extend_from_slice(&buf[..r.bytes]);
                    if r.fin {
                        self.fin = true;
                    }
                    if r.bytes == 0 {
                        break;
                    }
                }
            }
        }
        self.fin
    }
}

/// Connects and moves some data so there are 1-RTT datagrams to replay;
/// returns the pair and the client's longer short-header datagrams.
pub fn connected_with_traffic(cfg: PairConfig) -> (Pair, Vec<Vec<u8>>) {
    let seed = cfg.seed;
    let mut p = Pair::new(cfg);
    p.record = true;
    assert!(p.connect());
    let mut bulk = Bulk::new(payload(20_000, seed));
    assert!(p.run_until(Instant::from_millis(5_000), |p| bulk.pump(p)));
    let short: Vec<Vec<u8>> = p
        .history
        .iter()
        .filter(|(d, _, b)| *d == Dir::ToServer && b[0] & 0x80 == 0 && b.len() > 200)
        .map(|(_, _, b)| b.clone())
        .collect();
    assert!(short.len() >= 5);
    (p, short)
}

/// Connects, moves `len` bytes client -> server and checks them byte for
/// byte; returns the pair and the completion time.
pub fn bulk_transfer(cfg: PairConfig, len: usize, deadline: Instant) -> (Pair, Instant) {
    bulk_transfer_read_by(cfg, len, deadline, None)
}

/// [`bulk_transfer`] with the server reading by `read_chunk(.., max)` when
/// `chunk_max` is given.
pub fn bulk_transfer_read_by(
    cfg: PairConfig,
    len: usize,
    deadline: Instant,
    chunk_max: Option<usize>,
) -> (Pair, Instant) {
    let seed = cfg.seed;
    let mut p = Pair::new(cfg);
    let mut bulk = Bulk::new(payload(len, seed));
    bulk.chunk_max = chunk_max;
    let done = p.run_until(deadline, |p| bulk.pump(p));
    assert!(
        done,
        "transfer incomplete at {:?}: {} of {} bytes; client {:?}",
        p.now,
        bulk.received.len(),
        len,
        p.client.connection(p.client_conn).map(|c| c.stats())
    );
    assert_eq!(bulk.received.len(), len);
    assert_eq!(
        sha256(&bulk.received),
        sha256(&bulk.data),
        "byte-exact delivery"
    );
    let at = p.now;
    (p, at)
}
