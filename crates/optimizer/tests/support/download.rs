//! Downloads from a small model of an internet server's TCP (Reno with
//! SACK and a retransmission timer, unpaced, as many servers are) to a
//! mobile client through a bottleneck modelled by brisk-netmodel's
//! `Link`, with the optimizer between the server and the bottleneck or
//! not, one connection after another from the same subscriber. Every run
//! checks the client's bytes against the server's by hash and counts
//! what the bottleneck's queue dropped.

use super::{Family, MSS, stream, tcp};
use brisk_netmodel::LinkEvent;
use brisk_netmodel::queue::{Fifo, FifoConfig};
use brisk_netmodel::{Link, LinkConfig, Packet, RateModel, link::loss::LossModel};
use brisk_optimizer::{Config, Optimizer, Side, SubscriberInfo};
use brisk_time::Instant;
use brisk_wire::ip::parse_tcp;
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

const WSCALE: u8 = 7;
const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The network between the server and the client.
#[derive(Debug, Clone, Copy)]
pub struct Network {
    /// The bottleneck toward the client (and the uplink's rate), bits/s.
    pub rate_bps: u64,
    /// Propagation each way over the bottleneck.
    pub one_way: Duration,
    /// The bottleneck's FIFO, packets.
    pub queue_packets: usize,
    /// Random loss toward the client.
    pub loss: f64,
    /// From the server to the optimizer (and back), each way.
    pub core_delay: Duration,
}

/// What a run asks for.
#[derive(Debug, Clone)]
pub struct Setup {
    pub network: Network,
    /// Download sizes, bytes, each on its own connection, one after the
    /// other (100 ms apart) from the same subscriber.
    pub sizes: Vec<u64>,
    /// The server's initial window, segments.
    pub initial_window: u32,
    /// The optimizer's settings, or none for no optimizer.
    pub optimizer: Option<Config>,
    /// Switches the optimizer off (`stop_all`) at this time.
    pub stop_at: Option<Instant>,
    pub seed: u64,
}

/// What a run measured.
#[derive(Debug)]
pub struct Outcome {
    /// Radio RTT: the bottleneck's queueing and propagation plus the
    /// uplink's propagation, over data packets.
    pub rtt_avg_ms: f64,
    pub rtt_p95_ms: f64,
    /// Data segments sent over the radio a second time, in %.
    pub retransmitted_pct: f64,
    /// Each download's time from its SYN to its last byte, s.
    pub done_s: Vec<f64>,
    /// Every client read exactly the server's bytes.
    pub hash_ok: bool,
    /// Packets the bottleneck's queue was offered, and dropped.
    pub offered: u64,
    pub dropped: u64,
    /// Each drop at the queue: when, the download it hit, and the
    /// optimizer's view of the subscriber then.
    pub drops: Vec<(Instant, Option<usize>, Option<SubscriberInfo>)>,
}

impl Outcome {
    /// Drops over packets offered to the bottleneck's queue, in %.
    pub fn loss_pct(&self) -> f64 {
        100.0 * self.dropped as f64 / self.offered.max(1) as f64
    }
    /// Time of all downloads together, s.
    pub fn total_s(&self) -> f64 {
        self.done_s.iter().sum()
    }
}

/// The server's TCP: Reno congestion control, SACK-based recovery, RTO.
struct Server {
    me: SocketAddr,
    peer: SocketAddr,
    total: u64,
    isn: u32,
    peer_next: u32,
    established: bool,
    una: u64,
    next: u64,
    edge: u64,
    cwnd: f64,
    ssthresh: f64,
    sacked: BTreeSet<u64>,
    recovery: Option<u64>,
    resent: BTreeSet<u64>,
    dupacks: u32,
    sent_at: BTreeMap<u64, (Instant, bool)>,
    srtt: Option<Duration>,
    rto: Duration,
    rto_at: Option<Instant>,
    last_window: u16,
    out: Vec<Vec<u8>>,
}

impl Server {
    fn new(me: SocketAddr, peer: SocketAddr, total: u64, isn: u32, iw: u32) -> Server {
        Server {
            me,
            peer,
            total,
            isn,
            peer_next: 0,
            established: false,
            una: 0,
            next: 0,
            edge: 0,
            cwnd: f64::from(iw) * MSS as f64,
            ssthresh: f64::INFINITY,
            sacked: BTreeSet::new(),
            recovery: None,
            resent: BTreeSet::new(),
            dupacks: 0,
            sent_at: BTreeMap::new(),
            srtt: None,
            rto: Duration::from_secs(1),
            rto_at: None,
            last_window: 0,
            out: Vec::new(),
        }
    }
    fn seq(&self, off: u64) -> u32 {
        self.isn.wrapping_add(1).wrapping_add(off as u32)
    }
    fn flight(&self) -> u64 {
        (self.next - self.una).saturating_sub(self.sacked.len() as u64 * MSS as u64)
    }
    fn segment(&mut self, now: Instant, off: u64, again: bool) {
        let len = (self.total - off).min(MSS as u64) as usize;
        let d = tcp(
            self.me,
            self.peer,
            self.seq(off),
            self.peer_next,
            TcpFlags::ACK | TcpFlags::PSH,
            4096,
            vec![],
            &stream(off, len),
        );
        self.sent_at.insert(off, (now, again));
        self.out.push(d);
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto);
        }
    }
    fn send(&mut self, now: Instant) {
        if !self.established {
            return;
        }
        if let Some(point) = self.recovery {
            let high = self.sacked.last().copied().unwrap_or(self.una);
            let mut off = self.una;
            while off < high.min(point) && (self.flight() as f64) < self.cwnd {
                if !self.sacked.contains(&off) && self.resent.insert(off) {
                    self.segment(now, off, true);
                }
                off += MSS as u64;
            }
        }
        while self.next < self.total
            && (self.flight() + MSS as u64) as f64 <= self.cwnd
            && self.next + MSS as u64 <= self.edge
        {
            let off = self.next;
            let again = self.sent_at.contains_key(&off);
            self.segment(now, off, again);
            self.next = (off + MSS as u64).min(self.total);
        }
    }
    fn handle(&mut self, now: Instant, d: &[u8]) {
        let Ok(p) = parse_tcp(d) else { return };
        let t = &p.tcp;
        if t.flags.contains(TcpFlags::SYN) {
            self.peer_next = t.seq_number.wrapping_add(1);
            let o = vec![
                TcpOption::Mss(1460),
                TcpOption::SackPermitted,
                TcpOption::Nop,
                TcpOption::WindowScale(WSCALE),
            ];
            self.out.push(tcp(
                self.me,
                self.peer,
                self.isn,
                self.peer_next,
                TcpFlags::SYN | TcpFlags::ACK,
                65535,
                o,
                &[],
            ));
            return;
        }
        if !t.flags.contains(TcpFlags::ACK) {
            return;
        }
        let ack = u64::from(t.ack_number.wrapping_sub(self.seq(0)));
        if ack > self.total + 1 {
            return;
        }
        if !self.established {
            self.established = true;
            self.edge = u64::from(t.window) << WSCALE;
            self.send(now);
            return;
        }
        let window_update = t.window != self.last_window;
        self.last_window = t.window;
        self.edge = self.edge.max(ack + (u64::from(t.window) << WSCALE));
        for b in t.sack_blocks() {
            let l = u64::from(b.left.wrapping_sub(self.seq(0)));
            let r = u64::from(b.right.wrapping_sub(self.seq(0)));
            if l < r && r <= self.total {
                let mut o = l.div_ceil(MSS as u64) * MSS as u64;
                while o + (MSS as u64).min(self.total - o) <= r && o < self.total {
                    self.sacked.insert(o);
                    o += MSS as u64;
                }
            }
        }
        let flight = self.flight();
        if ack > self.una {
            // Karn: only a segment sent once gives an RTT sample.
            let last = ack - (ack - self.una).min(MSS as u64);
            if let Some(&(at, false)) = self.sent_at.get(&last) {
                let rtt = now.saturating_duration_since(at);
                let s = self.srtt.map_or(rtt, |s| (s * 7 + rtt) / 8);
                self.srtt = Some(s);
                self.rto = (s * 2).max(Duration::from_millis(200));
            }
            let acked = (ack - self.una) as f64;
            self.una = ack;
            // After a timeout sent `next` back, the client may acknowledge
            // past it what it held out of order.
            self.next = self.next.max(ack);
            self.sacked = self.sacked.split_off(&ack);
            self.dupacks = 0;
            match self.recovery {
                Some(p) if ack >= p => {
                    self.recovery = None;
                    self.cwnd = self.ssthresh;
                }
                Some(_) => {}
                None if self.cwnd < self.ssthresh => self.cwnd += acked,
                None => self.cwnd += MSS as f64 * acked / self.cwnd,
            }
            self.rto_at = (self.una < self.next).then(|| now + self.rto);
        } else if ack == self.una && self.una < self.next && !window_update {
            // RFC 5681 §2: an ACK that changes the window is no duplicate.
            self.dupacks += 1;
        }
        if self.recovery.is_none()
            && (self.dupacks >= 3 || self.sacked.len() >= 3)
            && self.una < self.next
        {
            self.ssthresh = (flight as f64 / 2.0).max(2.0 * MSS as f64);
            self.cwnd = self.ssthresh;
            self.recovery = Some(self.next);
            self.resent.clear();
        }
        self.send(now);
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.rto_at.is_some_and(|t| t <= now) {
            self.ssthresh = (self.flight() as f64 / 2.0).max(2.0 * MSS as f64);
            self.cwnd = MSS as f64;
            self.next = self.una;
            self.sacked.clear();
            self.recovery = None;
            self.rto = (self.rto * 2).min(Duration::from_secs(60));
            self.rto_at = None;
            self.send(now);
        }
    }
}

/// The mobile client's TCP receiver: reassembly, a hash of what it read,
/// an ACK with SACK blocks for every segment.
struct Client {
    me: SocketAddr,
    peer: SocketAddr,
    total: u64,
    isn: u32,
    server_isn: Option<u32>,
    read: u64,
    hash: u64,
    ooo: BTreeMap<u64, Vec<u8>>,
    out: Vec<Vec<u8>>,
    /// When the SYN is sent again if no SYN-ACK came (1 s, as Linux).
    syn_again: Option<Instant>,
}

impl Client {
    fn new(me: SocketAddr, peer: SocketAddr, total: u64, isn: u32) -> Client {
        Client {
            me,
            peer,
            total,
            isn,
            server_isn: None,
            read: 0,
            hash: FNV0,
            ooo: BTreeMap::new(),
            out: Vec::new(),
            syn_again: None,
        }
    }
    fn syn(&mut self, now: Instant) {
        self.syn_again = Some(now + Duration::from_secs(1));
        let o = vec![
            TcpOption::Mss(1400),
            TcpOption::SackPermitted,
            TcpOption::Nop,
            TcpOption::WindowScale(WSCALE),
        ];
        self.out.push(tcp(
            self.me,
            self.peer,
            self.isn,
            0,
            TcpFlags::SYN,
            65535,
            o,
            &[],
        ));
    }
    fn ack(&mut self, newest: Option<u64>) {
        let Some(sisn) = self.server_isn else { return };
        let seq = |o: u64| sisn.wrapping_add(1).wrapping_add(o as u32);
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (&o, d) in &self.ooo {
            match ranges.last_mut() {
                Some((_, r)) if *r == o => *r += d.len() as u64,
                _ => ranges.push((o, o + d.len() as u64)),
            }
        }
        if let Some(n) = newest {
            ranges.sort_by_key(|&(l, r)| !(l <= n && n < r));
        }
        let mut o = Vec::new();
        if !ranges.is_empty() {
            o.push(TcpOption::Nop);
            o.push(TcpOption::Nop);
            o.push(TcpOption::Sack(
                ranges
                    .iter()
                    .take(3)
                    .map(|&(l, r)| SackBlock {
                        left: seq(l),
                        right: seq(r),
                    })
                    .collect(),
            ));
        }
        let window = ((4u64 << 20) >> WSCALE) as u16;
        self.out.push(tcp(
            self.me,
            self.peer,
            self.isn.wrapping_add(1),
            seq(self.read),
            TcpFlags::ACK,
            window,
            o,
            &[],
        ));
    }
    fn handle(&mut self, d: &[u8]) {
        let Ok(p) = parse_tcp(d) else { return };
        if p.tcp.flags.contains(TcpFlags::SYN) {
            self.server_isn = Some(p.tcp.seq_number);
            self.syn_again = None;
            self.ack(None);
            return;
        }
        let Some(sisn) = self.server_isn else { return };
        if p.payload.is_empty() {
            return;
        }
        let off = u64::from(p.tcp.seq_number.wrapping_sub(sisn.wrapping_add(1)));
        if off >= self.read && off < self.total {
            self.ooo.entry(off).or_insert_with(|| p.payload.to_vec());
        }
        while let Some(d) = self.ooo.remove(&self.read) {
            self.hash = fnv(self.hash, &d);
            self.read += d.len() as u64;
        }
        self.ack(Some(off));
    }
    fn complete(&self) -> bool {
        self.read >= self.total
    }
}

fn down_link(n: &Network, seed: u64) -> Link {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: n.rate_bps },
        delay: n.one_way,
        loss: (n.loss > 0.0).then_some(LossModel::Random {
            probability: n.loss,
        }),
        ..LinkConfig::default()
    };
    let queue = Fifo::new(FifoConfig {
        limit_packets: Some(n.queue_packets),
        limit_bytes: None,
    });
    Link::new(config, Box::new(queue), brisk_netmodel::rng(seed, 1))
}

fn up_link(n: &Network, seed: u64) -> Link {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: n.rate_bps },
        delay: n.one_way,
        ..LinkConfig::default()
    };
    Link::new(
        config,
        Box::new(Fifo::new(FifoConfig::default())),
        brisk_netmodel::rng(seed, 2),
    )
}

/// Which download a datagram belongs to, by the client's port.
fn connection_of(f: Family, d: &[u8], toward_client: bool) -> Option<usize> {
    let p = parse_tcp(d).ok()?;
    let port = if toward_client {
        p.tcp.dst_port
    } else {
        p.tcp.src_port
    };
    Some(usize::from(port.checked_sub(f.client(1).port())?))
}

/// Runs `setup`'s downloads; the optimizer, if any, after the run.
pub fn download(f: Family, setup: &Setup) -> (Outcome, Option<Optimizer>) {
    let net = &setup.network;
    let seed = setup.seed;
    let n = setup.sizes.len();
    let mut servers: Vec<Server> = Vec::new();
    let mut clients: Vec<Client> = Vec::new();
    for (i, &total) in setup.sizes.iter().enumerate() {
        let (c, s) = (f.client(1 + i as u16), f.server());
        let salt = (i as u32) << 20;
        servers.push(Server::new(
            s,
            c,
            total,
            0x8000_0000 ^ seed as u32 ^ salt,
            setup.initial_window,
        ));
        clients.push(Client::new(c, s, total, 7 + seed as u32 + salt));
    }
    let mut opt = setup.optimizer.clone().map(Optimizer::new);
    let mut down = down_link(net, seed);
    let mut up = up_link(net, seed);
    let mut to_opt_from_server: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_server: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut entered: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut seen_seq: HashSet<(usize, u32)> = HashSet::new();
    let (mut data_in, mut again) = (0u64, 0u64);
    let mut rtts: Vec<f64> = Vec::new();
    let mut drops = Vec::new();
    let mut id = 0u64;
    let mut now = Instant::ZERO;
    let limit = Instant::from_millis(120_000);
    // The running download, when it started, and when each finished.
    let mut current = 0;
    let mut started = vec![None; n];
    let mut done: Vec<Option<Instant>> = vec![None; n];
    let mut next_start = Some(now);
    let gap = Duration::from_millis(100);
    let mut count_radio = |d: &[u8], data_in: &mut u64, again: &mut u64| {
        if let Ok(p) = parse_tcp(d)
            && !p.payload.is_empty()
        {
            *data_in += 1;
            let conn = usize::from(p.tcp.dst_port);
            if !seen_seq.insert((conn, p.tcp.seq_number)) {
                *again += 1;
            }
        }
    };
    while now < limit {
        if next_start.is_some_and(|t| t <= now) && current < n {
            clients[current].syn(now);
            started[current] = Some(now);
            next_start = None;
        }
        // Hand each component's outputs on, then find the next event.
        for c in clients.iter_mut() {
            for d in c.out.drain(..) {
                id += 1;
                up.handle_packet(now, Packet::new(id, now, d).expect("valid"));
            }
        }
        for s in servers.iter_mut() {
            for d in s.out.drain(..) {
                to_opt_from_server.push_back((now + net.core_delay, d));
            }
        }
        let mut toward_client = Vec::new();
        if let Some(o) = opt.as_mut() {
            while let Some(t) = o.poll_transmit() {
                match t.toward {
                    Side::Client => toward_client.push(t.datagram),
                    Side::Server => to_server.push_back((now + net.core_delay, t.datagram)),
                }
            }
        }
        for d in toward_client {
            count_radio(&d, &mut data_in, &mut again);
            id += 1;
            entered.insert(id, now);
            down.handle_packet(now, Packet::new(id, now, d).expect("valid"));
        }
        while let Some(e) = down.poll_event() {
            if let LinkEvent::QueueDrop { at, packet, .. } = e {
                let sub = opt.as_ref().and_then(|o| o.subscriber(f.client(1).ip()));
                drops.push((at, connection_of(f, &packet.data, true), sub));
            }
        }
        if current < n && done[current].is_none() && clients[current].complete() {
            done[current] = Some(now);
            current += 1;
            next_start = Some(now + gap);
        }
        let last_done = done[n - 1];
        // Run on a little so the client's last ACKs reach the server.
        if last_done.is_some_and(|d| now >= d + Duration::from_millis(200)) {
            break;
        }
        let next = [
            servers.iter().filter_map(|s| s.rto_at).min(),
            clients.iter().filter_map(|c| c.syn_again).min(),
            opt.as_ref().and_then(|o| o.poll_timeout()),
            to_opt_from_server.front().map(|x| x.0),
            to_server.front().map(|x| x.0),
            down.poll_timeout(),
            up.poll_timeout(),
            setup.stop_at.filter(|&t| t > now),
            next_start.filter(|_| current < n),
            last_done.map(|d| d + Duration::from_millis(200)),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { break };
        now = now.max(t);
        if setup.stop_at == Some(now)
            && let Some(o) = opt.as_mut()
        {
            o.stop_all();
        }
        for s in servers.iter_mut() {
            s.handle_timeout(now);
        }
        for c in clients.iter_mut() {
            if c.syn_again.is_some_and(|t| t <= now) {
                c.syn(now);
            }
        }
        while to_opt_from_server.front().is_some_and(|x| x.0 <= now) {
            let (_, d) = to_opt_from_server.pop_front().expect("front checked");
            match opt.as_mut() {
                Some(o) => o.handle_packet(now, Side::Server, d),
                None => {
                    count_radio(&d, &mut data_in, &mut again);
                    id += 1;
                    entered.insert(id, now);
                    down.handle_packet(now, Packet::new(id, now, d).expect("valid"));
                }
            }
        }
        while to_server.front().is_some_and(|x| x.0 <= now) {
            let (_, d) = to_server.pop_front().expect("front checked");
            if let Some(s) = connection_of(f, &d, false).and_then(|i| servers.get_mut(i)) {
                s.handle(now, &d);
            }
        }
        if let Some(o) = opt.as_mut() {
            o.handle_timeout(now);
        }
        down.handle_timeout(now);
        while let Some((at, p)) = down.poll_delivery() {
            if let Some(t0) = entered.remove(&p.id)
                && p.len() > 100
            {
                rtts.push((at.saturating_duration_since(t0) + net.one_way).as_secs_f64() * 1e3);
            }
            if let Some(c) = connection_of(f, &p.data, true).and_then(|i| clients.get_mut(i)) {
                c.handle(&p.data);
            }
        }
        up.handle_timeout(now);
        while let Some((_, p)) = up.poll_delivery() {
            match opt.as_mut() {
                Some(o) => o.handle_packet(now, Side::Client, p.data),
                None => to_server.push_back((now + net.core_delay, p.data)),
            }
        }
    }
    rtts.sort_by(f64::total_cmp);
    let q = down.queue().stats();
    let outcome = Outcome {
        rtt_avg_ms: rtts.iter().sum::<f64>() / rtts.len().max(1) as f64,
        rtt_p95_ms: rtts.get(rtts.len() * 95 / 100).copied().unwrap_or(0.0),
        retransmitted_pct: 100.0 * again as f64 / data_in.max(1) as f64,
        done_s: started
            .iter()
            .zip(&done)
            .map(|(s, d)| match (s, d) {
                (Some(s), Some(d)) => d.saturating_duration_since(*s).as_secs_f64(),
                _ => f64::INFINITY,
            })
            .collect(),
        hash_ok: clients
            .iter()
            .all(|c| c.read == c.total && c.hash == fnv(FNV0, &stream(0, c.total as usize))),
        offered: q.enqueued_packets + q.dropped_overflow,
        dropped: q.drops(),
        drops,
    };
    (outcome, opt)
}
