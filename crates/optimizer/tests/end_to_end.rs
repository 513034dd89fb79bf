//! A download from a small model of an internet server's TCP (Reno with
//! SACK and a retransmission timer, unpaced, as many servers are) to a
//! mobile client, through a cell modelled by brisk-netmodel's `Link`: 10
//! Mbit/s, 20 ms each way, a 1000-packet FIFO (over a second of buffer,
//! as mobile networks have) and 0.5% random loss; the server sits 10 ms
//! behind the optimizer. The same seeded run with the optimizer off and
//! on, for IPv4 and IPv6, compares the RTT of the radio side (queue plus
//! propagation, as the talk's trial measured it), the share of segments
//! sent over the radio twice, and the download time; every run checks
//! the client's bytes against the server's by hash.

mod support;

use brisk_netmodel::queue::{Fifo, FifoConfig};
use brisk_netmodel::{Link, LinkConfig, Packet, RateModel, link::loss::LossModel};
use brisk_optimizer::{Config, Optimizer, Phase, Side};
use brisk_time::Instant;
use brisk_wire::ip::parse_tcp;
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;
use support::{FAMILIES, Family, MSS, stream, tcp};

const TOTAL: u64 = 3_000_000;
const CORE_DELAY: Duration = Duration::from_millis(10);
const UP_DELAY: Duration = Duration::from_millis(20);
const WSCALE: u8 = 7;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}
const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// The server's TCP: Reno congestion control, SACK-based recovery, RTO.
struct Server {
    me: SocketAddr,
    peer: SocketAddr,
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
    fn seq(&self, off: u64) -> u32 {
        self.isn.wrapping_add(1).wrapping_add(off as u32)
    }
    fn flight(&self) -> u64 {
        (self.next - self.una).saturating_sub(self.sacked.len() as u64 * MSS as u64)
    }
    fn segment(&mut self, now: Instant, off: u64, again: bool) {
        let len = (TOTAL - off).min(MSS as u64) as usize;
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
        while self.next < TOTAL
            && (self.flight() + MSS as u64) as f64 <= self.cwnd
            && self.next + MSS as u64 <= self.edge
        {
            let off = self.next;
            let again = self.sent_at.contains_key(&off);
            self.segment(now, off, again);
            self.next = (off + MSS as u64).min(TOTAL);
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
        if ack > TOTAL + 1 {
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
            if l < r && r <= TOTAL {
                let mut o = l.div_ceil(MSS as u64) * MSS as u64;
                while o + (MSS as u64).min(TOTAL - o) <= r && o < TOTAL {
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
    isn: u32,
    server_isn: Option<u32>,
    read: u64,
    hash: u64,
    ooo: BTreeMap<u64, Vec<u8>>,
    out: Vec<Vec<u8>>,
}

impl Client {
    fn syn(&mut self) {
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
            self.ack(None);
            return;
        }
        let Some(sisn) = self.server_isn else { return };
        if p.payload.is_empty() {
            return;
        }
        let off = u64::from(p.tcp.seq_number.wrapping_sub(sisn.wrapping_add(1)));
        if off >= self.read && off < TOTAL {
            self.ooo.entry(off).or_insert_with(|| p.payload.to_vec());
        }
        while let Some(d) = self.ooo.remove(&self.read) {
            self.hash = fnv(self.hash, &d);
            self.read += d.len() as u64;
        }
        self.ack(Some(off));
    }
}

#[derive(Debug)]
struct Outcome {
    rtt_avg_ms: f64,
    rtt_p95_ms: f64,
    retransmitted_pct: f64,
    done_s: f64,
    hash_ok: bool,
}

fn down_link(seed: u64) -> Link {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: 10_000_000 },
        delay: Duration::from_millis(20),
        loss: Some(LossModel::Random { probability: 0.005 }),
        ..LinkConfig::default()
    };
    let queue = Fifo::new(FifoConfig {
        limit_packets: Some(1000),
        limit_bytes: None,
    });
    Link::new(config, Box::new(queue), brisk_netmodel::rng(seed, 1))
}

fn up_link(seed: u64) -> Link {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: 10_000_000 },
        delay: UP_DELAY,
        ..LinkConfig::default()
    };
    Link::new(
        config,
        Box::new(Fifo::new(FifoConfig::default())),
        brisk_netmodel::rng(seed, 2),
    )
}

/// Runs one download; `stop_at` switches the optimizer off mid-transfer.
fn download(
    f: Family,
    seed: u64,
    optimizer: bool,
    stop_at: Option<Instant>,
) -> (Outcome, Option<Optimizer>) {
    let client_addr = f.client(1);
    let server_addr = f.server();
    let mut server = Server {
        me: server_addr,
        peer: client_addr,
        isn: 0x8000_0000 ^ seed as u32,
        peer_next: 0,
        established: false,
        una: 0,
        next: 0,
        edge: 0,
        cwnd: 10.0 * MSS as f64,
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
    };
    let mut client = Client {
        me: client_addr,
        peer: server_addr,
        isn: 7 + seed as u32,
        server_isn: None,
        read: 0,
        hash: FNV0,
        ooo: BTreeMap::new(),
        out: Vec::new(),
    };
    let mut opt = optimizer.then(|| Optimizer::new(Config::default()));
    let mut down = down_link(seed);
    let mut up = up_link(seed);
    let mut to_opt_from_server: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_server: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut entered: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut seen_seq: HashSet<u32> = HashSet::new();
    let (mut data_in, mut again) = (0u64, 0u64);
    let mut rtts: Vec<f64> = Vec::new();
    let mut id = 0u64;
    let mut now = Instant::ZERO;
    client.syn();
    let limit = Instant::from_millis(60_000);
    let mut done = None;
    while now < limit {
        // Hand each component's outputs on, then find the next event.
        for d in client.out.drain(..) {
            id += 1;
            up.handle_packet(now, Packet::new(id, now, d).expect("valid"));
        }
        for d in server.out.drain(..) {
            to_opt_from_server.push_back((now + CORE_DELAY, d));
        }
        let mut toward_client = Vec::new();
        if let Some(o) = opt.as_mut() {
            while let Some(t) = o.poll_transmit() {
                match t.toward {
                    Side::Client => toward_client.push(t.datagram),
                    Side::Server => to_server.push_back((now + CORE_DELAY, t.datagram)),
                }
            }
        }
        for d in toward_client {
            if let Ok(p) = parse_tcp(&d)
                && !p.payload.is_empty()
            {
                data_in += 1;
                if !seen_seq.insert(p.tcp.seq_number) {
                    again += 1;
                }
            }
            id += 1;
            entered.insert(id, now);
            down.handle_packet(now, Packet::new(id, now, d).expect("valid"));
        }
        if done.is_none() && client.read >= TOTAL {
            done = Some(now);
        }
        // Run on a little so the client's last ACKs reach the server.
        if done.is_some_and(|d| now >= d + Duration::from_millis(200)) {
            break;
        }
        let next = [
            server.rto_at,
            opt.as_ref().and_then(|o| o.poll_timeout()),
            to_opt_from_server.front().map(|x| x.0),
            to_server.front().map(|x| x.0),
            down.poll_timeout(),
            up.poll_timeout(),
            stop_at.filter(|&t| t > now),
            done.map(|d| d + Duration::from_millis(200)),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { break };
        now = now.max(t);
        if stop_at == Some(now)
            && let Some(o) = opt.as_mut()
        {
            o.stop_all();
        }
        server.handle_timeout(now);
        while to_opt_from_server.front().is_some_and(|x| x.0 <= now) {
            let (_, d) = to_opt_from_server.pop_front().expect("front checked");
            match opt.as_mut() {
                Some(o) => o.handle_packet(now, Side::Server, d),
                None => {
                    if let Ok(p) = parse_tcp(&d)
                        && !p.payload.is_empty()
                    {
                        data_in += 1;
                        if !seen_seq.insert(p.tcp.seq_number) {
                            again += 1;
                        }
                    }
                    id += 1;
                    entered.insert(id, now);
                    down.handle_packet(now, Packet::new(id, now, d).expect("valid"));
                }
            }
        }
        while to_server.front().is_some_and(|x| x.0 <= now) {
            let (_, d) = to_server.pop_front().expect("front checked");
            server.handle(now, &d);
        }
        if let Some(o) = opt.as_mut() {
            o.handle_timeout(now);
        }
        down.handle_timeout(now);
        while let Some((at, p)) = down.poll_delivery() {
            if let Some(t0) = entered.remove(&p.id)
                && p.len() > 100
            {
                rtts.push((at.saturating_duration_since(t0) + UP_DELAY).as_secs_f64() * 1e3);
            }
            client.handle(&p.data);
        }
        up.handle_timeout(now);
        while let Some((_, p)) = up.poll_delivery() {
            match opt.as_mut() {
                Some(o) => o.handle_packet(now, Side::Client, p.data),
                None => to_server.push_back((now + CORE_DELAY, p.data)),
            }
        }
    }
    rtts.sort_by(f64::total_cmp);
    let expected = fnv(FNV0, &stream(0, TOTAL as usize));
    let outcome = Outcome {
        rtt_avg_ms: rtts.iter().sum::<f64>() / rtts.len().max(1) as f64,
        rtt_p95_ms: rtts.get(rtts.len() * 95 / 100).copied().unwrap_or(0.0),
        retransmitted_pct: 100.0 * again as f64 / data_in.max(1) as f64,
        done_s: done.map_or(f64::INFINITY, |d| d.as_secs_f64()),
        hash_ok: client.read == TOTAL && client.hash == expected,
    };
    (outcome, opt)
}

/// Four seeds per family (each seed draws its own losses); the goals are
/// held on the means, since one seed's unoptimized server may lose a
/// packet early in slow start and never fill the queue at all.
#[test]
fn the_optimizer_halves_radio_rtt_and_cuts_retransmissions_over_a_deep_lossy_cell() {
    for f in FAMILIES {
        let mut sums = [[0.0f64; 3]; 2];
        for seed in 1..=4 {
            let (off, _) = download(f, seed, false, None);
            let (on, opt) = download(f, seed, true, None);
            eprintln!(
                "{f:?} seed {seed}: radio RTT avg {:.0} -> {:.0} ms, p95 {:.0} -> {:.0} ms, \
                 sent twice over the radio {:.2}% -> {:.2}%, 3 MB download {:.2} -> {:.2} s",
                off.rtt_avg_ms,
                on.rtt_avg_ms,
                off.rtt_p95_ms,
                on.rtt_p95_ms,
                off.retransmitted_pct,
                on.retransmitted_pct,
                off.done_s,
                on.done_s
            );
            assert!(off.hash_ok && on.hash_ok, "{f:?} seed {seed}: bytes differ");
            assert_eq!(opt.expect("on").stats().optimized_connections, 1);
            for (sum, o) in sums.iter_mut().zip([&off, &on]) {
                sum[0] += o.rtt_avg_ms / 4.0;
                sum[1] += o.retransmitted_pct / 4.0;
                sum[2] += o.done_s / 4.0;
            }
        }
        let [off, on] = sums;
        eprintln!(
            "{f:?} mean of 4: radio RTT {:.0} -> {:.0} ms, sent twice {:.2}% -> {:.2}%, download {:.2} -> {:.2} s",
            off[0], on[0], off[1], on[1], off[2], on[2]
        );
        assert!(on[0] <= off[0] / 2.0, "{f:?} RTT {off:?} -> {on:?}");
        assert!(
            on[1] <= off[1] / 3.0,
            "{f:?} retransmissions {off:?} -> {on:?}"
        );
        assert!(on[2] <= off[2], "{f:?} download time {off:?} -> {on:?}");
    }
}

#[test]
fn switching_the_optimizer_off_mid_transfer_delivers_every_byte() {
    for f in FAMILIES {
        for stop_ms in [100, 120, 150, 300, 1000, 2000] {
            let (out, opt) = download(f, 3, true, Some(Instant::from_millis(stop_ms)));
            assert!(out.hash_ok, "{f:?} stop at {stop_ms} ms: {out:?}");
            let opt = opt.expect("on");
            let key = brisk_optimizer::ConnectionKey::new(f.client(1), f.server());
            assert_eq!(
                opt.connection(&key).map(|c| c.phase),
                Some(Phase::PassThrough),
                "{f:?} stop at {stop_ms} ms: {out:?} {:?}",
                opt.stats()
            );
            assert_eq!(opt.held_bytes(), 0);
            assert_eq!(
                opt.stats().stopped.get(&brisk_optimizer::Reason::Requested),
                Some(&1)
            );
        }
    }
}
