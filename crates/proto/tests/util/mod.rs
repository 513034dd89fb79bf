//! A two-endpoint harness: a client and a server [`Endpoint`] joined by a
//! tiny in-memory network, driven in virtual time that jumps to the next
//! wake-up (a delivery or a timer). Each direction is a [`Link`] with
//! delay, an optional bottleneck rate and queue, seeded random and burst
//! loss, reordering, duplication, outages and ECN rewriting.
#![allow(dead_code)]

use brisk_proto::crypto::Keypair;
use brisk_proto::streams::StreamId;
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, Event, ServerConfig};
use brisk_time::Instant;
use brisk_wire::Ecn;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
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
    /// Bottleneck rate; `None` is infinitely fast.
    pub rate_bps: Option<u64>,
    /// Tail-drop limit of the bottleneck queue.
    pub queue_bytes: u64,
    /// Mark ECN-capable packets CE when the queue holds more than this
    /// much delay (a step AQM, as an L4S queue uses).
    pub ce_threshold: Option<Duration>,
    pub loss: f64,
    pub burst: Option<BurstLoss>,
    /// Every `n`-th packet is held back for the extra delay.
    pub reorder_every: Option<u64>,
    pub reorder_delay: Duration,
    pub duplicate: f64,
    pub ecn: EcnRewrite,
    /// Everything sent in these windows is lost.
    pub outages: Vec<(Instant, Instant)>,
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub duplicated: u64,
    pub ce_marked: u64,
    pub bytes_sent: u64,
}

/// A datagram on the wire: source, destination, ECN field, bytes.
pub type InFlight = (SocketAddr, SocketAddr, Ecn, Vec<u8>);

/// Sees (and may change) every datagram; false drops it.
pub type Tap = Box<dyn FnMut(Dir, &mut Vec<u8>) -> bool>;

#[derive(Debug)]
pub struct Link {
    pub config: LinkConfig,
    rng: ChaCha8Rng,
    in_burst: bool,
    busy_until: Instant,
    count: u64,
    seq: u64,
    /// (deliver at, sequence) -> (source, destination, ecn, bytes)
    pending: BTreeMap<(Instant, u64), InFlight>,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Link {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            in_burst: false,
            busy_until: Instant::ZERO,
            count: 0,
            seq: 0,
            pending: BTreeMap::new(),
            stats: LinkStats::default(),
        }
    }

    pub fn send(
        &mut self,
        now: Instant,
        src: SocketAddr,
        dst: SocketAddr,
        mut ecn: Ecn,
        data: Vec<u8>,
    ) {
        self.stats.sent += 1;
        self.stats.bytes_sent += data.len() as u64;
        self.count += 1;
        let c = &self.config;
        if c.outages.iter().any(|&(a, b)| now >= a && now < b) {
            self.stats.dropped += 1;
            return;
        }
        if let Some(b) = c.burst {
            let flip = self.rng.random::<f64>();
            self.in_burst = if self.in_burst {
                flip >= b.p_exit
            } else {
                flip < b.p_enter
            };
            if self.in_burst {
                self.stats.dropped += 1;
                return;
            }
        }
        if c.loss > 0.0 && self.rng.random::<f64>() < c.loss {
            self.stats.dropped += 1;
            return;
        }
        let mut depart = now;
        if let Some(rate) = c.rate_bps {
            let backlog = self.busy_until.max(now) - now;
            let backlog_bytes = (backlog.as_secs_f64() * rate as f64 / 8.0) as u64;
            if backlog_bytes + data.len() as u64 > c.queue_bytes {
                self.stats.dropped += 1;
                return;
            }
            if let Some(th) = c.ce_threshold
                && backlog > th
                && ecn.is_ecn_capable()
            {
                ecn = Ecn::Ce;
                self.stats.ce_marked += 1;
            }
            let tx = Duration::from_secs_f64(data.len() as f64 * 8.0 / rate as f64);
            depart = self.busy_until.max(now) + tx;
            self.busy_until = depart;
        }
        if c.ecn == EcnRewrite::Bleach {
            ecn = Ecn::NotEct;
        }
        let mut at = depart + c.delay;
        if c.reorder_every
            .is_some_and(|n| self.count.is_multiple_of(n))
        {
            at += c.reorder_delay;
        }
        if c.duplicate > 0.0 && self.rng.random::<f64>() < c.duplicate {
            self.stats.duplicated += 1;
            self.seq += 1;
            self.pending
                .insert((at + MS, self.seq), (src, dst, ecn, data.clone()));
        }
        self.seq += 1;
        self.pending.insert((at, self.seq), (src, dst, ecn, data));
    }

    pub fn next_delivery(&self) -> Option<Instant> {
        self.pending.keys().next().map(|(t, _)| *t)
    }

    pub fn take_due(&mut self, now: Instant) -> Option<InFlight> {
        let (&key, _) = self.pending.iter().next()?;
        if key.0 > now {
            return None;
        }
        self.stats.delivered += 1;
        self.pending.remove(&key)
    }
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
    pub to_server: Link,
    pub to_client: Link,
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
            to_server: Link::new(cfg.to_server, cfg.seed.wrapping_add(2)),
            to_client: Link::new(cfg.to_client, cfg.seed.wrapping_add(3)),
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
        match dir {
            Dir::ToServer => {
                self.to_server
                    .send(self.now, self.client_addr, self.server_addr, ecn, data)
            }
            Dir::ToClient => {
                self.to_client
                    .send(self.now, self.server_addr, self.client_addr, ecn, data)
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
            self.to_server.next_delivery(),
            self.to_client.next_delivery(),
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
        while let Some((src, _, ecn, d)) = self.to_server.take_due(self.now) {
            deliver(&mut self.server, self.now, src, ecn, &d, self.owned);
        }
        while let Some((src, _, ecn, d)) = self.to_client.take_due(self.now) {
            deliver(&mut self.client, self.now, src, ecn, &d, self.owned);
        }
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
