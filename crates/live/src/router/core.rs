//! The router as a sans-IO state machine: datagrams in with the time they
//! were read, datagrams out with the time the models deliver them. The
//! real-time loop ([`super::event_loop`]) feeds it from the TUN devices;
//! tests feed it in virtual time.
//!
//! Packets from the server go down the [`Bottleneck`], packets from the
//! client up it: the simulator's own bottleneck, built from the same
//! scenario tables with the same seed streams, charging link events to
//! the router's flows as the simulator charges its own. Only packets
//! between the two namespaces' addresses are forwarded; anything else
//! (router solicitations, multicast, stray destinations) is dropped and
//! counted, so traffic never leaves the lab.
//!
//! The lab's DNS [`Resolver`] and, in the IPv6-only mode, the NAT64
//! [`Gateway`] sit at the server's end of the bottleneck: server datagrams
//! are translated before the down link, datagrams the up link delivers are
//! translated before they reach the server, the client's DNS queries cross
//! the up link and their answers the down link, and the server's queries
//! are answered at once.
//!
//! With [`RouterCore::optimize`], the transparent TCP optimizer
//! (`brisk-optimizer`) sits at the server's end too, between the server
//! (after any NAT64 translation) and the down link, as an operator's box
//! sits between the internet and the radio network: server datagrams go
//! through it before the down link, datagrams the up link delivers go
//! through it before the server, and what it sends itself (local ACKs to
//! the server, held segments toward the client) takes the same paths.

use super::fidelity::DirectionFidelity;
use super::flows::FlowTable;
use super::nat64::Gateway;
use super::rebind::{Rebind, Rebinder};
use super::resolver::Resolver;
use crate::capture::BottleneckCapture;
use crate::topology::Addressing;
use brisk_netmodel::bottleneck::flow_tag::{flow_of, packet_id};
use brisk_netmodel::queue::DropReason;
use brisk_netmodel::{Bottleneck, BottleneckOutput, Direction, LinkEvent, Network, Packet};
use brisk_optimizer::Optimizer;
use brisk_time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// Packet records kept for the event log before the loop drains them.
const RECORD_LIMIT: usize = 1 << 20;

/// An end of the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    /// The direction a packet sent by this side travels.
    pub fn sends(self) -> Direction {
        match self {
            Side::Server => Direction::Down,
            Side::Client => Direction::Up,
        }
    }

    /// The side a packet travelling in `dir` reaches.
    pub fn receiving(dir: Direction) -> Side {
        match dir {
            Direction::Down => Side::Client,
            Direction::Up => Side::Server,
        }
    }
}

/// A datagram to write to `to` now: the models delivered it at `due`.
#[derive(Debug)]
pub struct Transmit {
    pub to: Side,
    pub due: Instant,
    pub packet: Packet,
    /// The packet as the bottleneck carried it, when the gateway has
    /// translated it since (flows are accounted as the bottleneck saw them).
    bottleneck: Option<Packet>,
}

/// What happened to one packet, for the per-packet event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// Left the queue after waiting this long.
    Dequeued(Duration),
    /// Dropped by the queue.
    Dropped(DropReason),
    /// Lost by a link impairment.
    Lost,
    /// Marked CE by the queue.
    Marked,
}

/// One line of the per-packet event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRecord {
    pub at: Instant,
    pub dir: Direction,
    /// Index into [`RouterCore::flows`], if the flow is tracked.
    pub flow: Option<usize>,
    pub packet_id: u64,
    pub kind: RecordKind,
}

/// Datagrams the router refused, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refused {
    /// Not a valid IPv4/IPv6 datagram.
    pub malformed: u64,
    /// Not between the two namespaces' addresses (never forwarded).
    pub foreign: u64,
    /// Dropped by the NAT64 gateway (no translation, no session).
    pub untranslated: u64,
}

/// The router's models and measurements.
pub struct RouterCore {
    bottleneck: Bottleneck,
    addressing: Addressing,
    gateway: Option<Gateway>,
    resolver: Resolver,
    flows: FlowTable,
    next_seq: u64,
    transmits: VecDeque<Transmit>,
    refused: Refused,
    fidelity: [DirectionFidelity; 2],
    records: Option<VecDeque<PacketRecord>>,
    /// Records left out because the log was not drained in time.
    records_dropped: u64,
    /// Every packet leaving either link, when asked for.
    capture: Option<BottleneckCapture>,
    /// The client's NAT binding change, when asked for.
    rebind: Option<Rebinder>,
    /// The TCP optimizer at the server's end, when asked for.
    optimizer: Option<Optimizer>,
}

impl RouterCore {
    /// Builds the bottleneck of `network` as the simulator does for `seed`.
    /// `gateway` translates for an IPv6-only client.
    pub fn new(
        network: &Network,
        seed: u64,
        addressing: Addressing,
        gateway: Option<Gateway>,
        resolver: Resolver,
    ) -> RouterCore {
        RouterCore {
            fidelity: [
                DirectionFidelity::new(&network.link.down),
                DirectionFidelity::new(&network.link.up),
            ],
            bottleneck: Bottleneck::new(network, seed),
            addressing,
            gateway,
            resolver,
            flows: FlowTable::default(),
            next_seq: 0,
            transmits: VecDeque::new(),
            refused: Refused::default(),
            records: None,
            records_dropped: 0,
            capture: None,
            rebind: None,
            optimizer: None,
        }
    }

    /// Puts the transparent TCP optimizer between the server's end and the
    /// down link (see the module doc).
    pub fn optimize(&mut self, config: brisk_optimizer::Config) {
        self.optimizer = Some(Optimizer::new(config));
    }

    /// The optimizer, when the router runs one: its counters and state.
    pub fn optimizer(&self) -> Option<&Optimizer> {
        self.optimizer.as_ref()
    }

    /// Switches the optimizer off for every connection it optimizes: it
    /// acknowledges nothing more early, delivers what it holds, then lets
    /// each connection pass untouched. Nothing without an optimizer.
    pub fn stop_optimizing(&mut self, now: Instant) {
        if let Some(o) = &mut self.optimizer {
            o.stop_all();
            self.optimizer_transmits(now);
        }
    }

    /// Sends what the optimizer sent: toward the client down the link,
    /// toward the server (translated back for an IPv6-only client) at once.
    fn optimizer_transmits(&mut self, now: Instant) {
        let Some(o) = &mut self.optimizer else {
            return;
        };
        let out: Vec<brisk_optimizer::Transmit> =
            std::iter::from_fn(|| o.poll_transmit()).collect();
        for t in out {
            match t.toward {
                brisk_optimizer::Side::Client => self.enter(now, Direction::Down, t.datagram),
                brisk_optimizer::Side::Server => {
                    let data = match &mut self.gateway {
                        Some(g) => g.to_server(now, &t.datagram),
                        None => Some(t.datagram),
                    };
                    match data.map(|d| Packet::new(packet_id(None, 0), now, d)) {
                        Some(Ok(packet)) => self.transmits.push_back(Transmit {
                            to: Side::Server,
                            due: now,
                            packet,
                            bottleneck: None,
                        }),
                        _ => self.refused.untranslated += 1,
                    }
                }
            }
        }
    }

    /// From `r.at` on, rewrite the client's UDP source port as a NAT
    /// whose binding changed would (see [`Rebind`]).
    pub fn rebind_client(&mut self, r: Rebind) {
        self.rebind = Some(Rebinder::new(r));
    }

    /// Datagrams whose client port the rebinding rewrote, both ways.
    pub fn rebound_datagrams(&self) -> u64 {
        self.rebind.as_ref().map_or(0, Rebinder::rewritten)
    }

    /// Keep every packet as it leaves either link (see
    /// [`BottleneckCapture`]), taken back with
    /// [`RouterCore::take_bottleneck_capture`].
    pub fn capture_bottleneck(&mut self, capture: BottleneckCapture) {
        self.capture = Some(capture);
    }

    pub fn take_bottleneck_capture(&mut self) -> Option<BottleneckCapture> {
        self.capture.take()
    }

    /// Keep a record of every queue delay, drop, loss and mark, drained
    /// with [`RouterCore::poll_record`].
    pub fn record_packets(&mut self) {
        self.records = Some(VecDeque::new());
    }

    pub fn bottleneck(&self) -> &Bottleneck {
        &self.bottleneck
    }

    pub fn flows(&self) -> &FlowTable {
        &self.flows
    }

    pub fn refused(&self) -> Refused {
        self.refused
    }

    pub fn fidelity(&self, dir: Direction) -> &DirectionFidelity {
        &self.fidelity[dir.index()]
    }

    pub fn records_dropped(&self) -> u64 {
        self.records_dropped
    }

    pub fn gateway(&self) -> Option<&Gateway> {
        self.gateway.as_ref()
    }

    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// A datagram read from `from`'s TUN device at `now`.
    pub fn handle_datagram(&mut self, now: Instant, from: Side, data: Vec<u8>) {
        if from == Side::Server
            && let Ok(s) = brisk_wire::ip::summarize(&data)
            && Resolver::is_resolver(s.flow.dst)
        {
            // The resolver sits at the server's end: answer at once.
            let answer = self
                .addressing
                .is_server(s.flow.src)
                .then(|| self.resolver.answer(&data))
                .flatten();
            match answer.map(|d| Packet::new(packet_id(None, 0), now, d)) {
                Some(Ok(packet)) => self.transmits.push_back(Transmit {
                    to: Side::Server,
                    due: now,
                    packet,
                    bottleneck: None,
                }),
                _ => self.refused.foreign += 1,
            }
            return;
        }
        let data = match (from, &mut self.gateway) {
            (Side::Server, Some(g)) => match g.from_server(now, &data) {
                Some(d) => d,
                None => {
                    self.refused.untranslated += 1;
                    self.gateway_transmits(now);
                    return;
                }
            },
            _ => data,
        };
        match (&mut self.optimizer, from) {
            (Some(o), Side::Server) => {
                o.handle_packet(now, brisk_optimizer::Side::Server, data);
                self.optimizer_transmits(now);
            }
            _ => self.enter(now, from.sends(), data),
        }
        self.gateway_transmits(now);
    }

    /// Sends what the NAT64 originated (ICMP errors, fragments, hairpins).
    fn gateway_transmits(&mut self, now: Instant) {
        let Some(g) = &mut self.gateway else {
            return;
        };
        let out: Vec<(bool, Vec<u8>)> = std::iter::from_fn(|| g.poll_transmit()).collect();
        for (to_client, data) in out {
            if to_client {
                self.enter(now, Direction::Down, data);
            } else if let Ok(packet) = Packet::new(packet_id(None, 0), now, data) {
                self.transmits.push_back(Transmit {
                    to: Side::Server,
                    due: now,
                    packet,
                    bottleneck: None,
                });
            }
        }
    }

    /// Puts a datagram on the link of `dir` if it goes between the lab's
    /// two sides.
    fn enter(&mut self, now: Instant, dir: Direction, data: Vec<u8>) {
        let data = match (&mut self.rebind, dir) {
            (Some(r), Direction::Up) => r.client_to_server(now, data),
            (Some(r), Direction::Down) => r.server_to_client(now, data),
            (None, _) => data,
        };
        let Ok(mut packet) = Packet::new(0, now, data) else {
            self.refused.malformed += 1;
            return;
        };
        if !self.allowed(dir, &packet) {
            self.refused.foreign += 1;
            return;
        }
        let flow = self.flows.on_sent(now, dir, &packet);
        packet.id = packet_id(flow, self.next_seq);
        self.next_seq += 1;
        self.bottleneck.handle_packet(now, dir, packet);
        self.drain(now, dir);
    }

    /// Whether a packet on the link of `dir` goes from one side of the lab
    /// to the other (after any translation at the gateway).
    fn allowed(&self, dir: Direction, p: &Packet) -> bool {
        let f = p.flow();
        let a = &self.addressing;
        let server_side = |ip| {
            a.is_server(ip)
                || Resolver::is_resolver(ip)
                || self.gateway.as_ref().is_some_and(|g| g.is_gateway_side(ip))
        };
        match dir {
            Direction::Up => a.is_client(f.src) && server_side(f.dst),
            Direction::Down => server_side(f.src) && a.is_client(f.dst),
        }
    }

    /// The next time the models need [`RouterCore::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        let b = &self.bottleneck;
        let links = match (
            b.poll_timeout(Direction::Down),
            b.poll_timeout(Direction::Up),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        brisk_time::earliest(
            links,
            self.optimizer.as_ref().and_then(Optimizer::poll_timeout),
        )
    }

    /// Advances both links to `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(o) = &mut self.optimizer
            && o.poll_timeout().is_some_and(|t| t <= now)
        {
            o.handle_timeout(now);
            self.optimizer_transmits(now);
        }
        for dir in Direction::BOTH {
            if self.bottleneck.poll_timeout(dir).is_some_and(|t| t <= now) {
                self.bottleneck.handle_timeout(now, dir);
                self.drain(now, dir);
            }
        }
    }

    /// The next datagram to write, in the order the models delivered them.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The datagram `t` was written at `written`: account for it.
    pub fn on_written(&mut self, written: Instant, t: &Transmit) {
        let dir = match t.to {
            Side::Client => Direction::Down,
            Side::Server => Direction::Up,
        };
        let p = t.bottleneck.as_ref().unwrap_or(&t.packet);
        self.fidelity[dir.index()].on_written(t.due, written, p.len());
        if let Some(flow) = flow_of(p.id) {
            self.flows.on_delivered(written, dir, flow, p);
        }
    }

    /// The next per-packet record, if recording.
    pub fn poll_record(&mut self) -> Option<PacketRecord> {
        self.records.as_mut().and_then(VecDeque::pop_front)
    }

    /// Takes what the link of `dir` did up to `now`.
    fn drain(&mut self, now: Instant, dir: Direction) {
        let mut answers = Vec::new();
        let mut optimized = false;
        while let Some(output) = self.bottleneck.poll(dir, &mut self.flows) {
            let (due, packet) = match output {
                BottleneckOutput::Event(e) => {
                    self.record(dir, e);
                    continue;
                }
                BottleneckOutput::Delivered { at, packet } => (at, packet),
            };
            if let Some(c) = &mut self.capture {
                c.packet(due, &packet.data);
            }
            let to = Side::receiving(dir);
            if to == Side::Client {
                self.transmits.push_back(Transmit {
                    to,
                    due,
                    packet,
                    bottleneck: None,
                });
                continue;
            }
            if let Some(o) = &mut self.optimizer
                && !Resolver::is_resolver(packet.flow().dst)
            {
                // The optimizer stands before the server: it may absorb the
                // datagram, so the flow is charged with its delivery here.
                if let Some(f) = flow_of(packet.id) {
                    self.flows.on_delivered(now, dir, f, &packet);
                }
                o.handle_packet(now, brisk_optimizer::Side::Client, packet.data);
                optimized = true;
                continue;
            }
            if Resolver::is_resolver(packet.flow().dst) {
                if let Some(f) = flow_of(packet.id) {
                    self.flows.on_delivered(now, dir, f, &packet);
                }
                match self.resolver.answer(&packet.data) {
                    Some(reply) => answers.push(reply),
                    None => self.refused.foreign += 1,
                }
                continue;
            }
            let Some(g) = self.gateway.as_mut() else {
                self.transmits.push_back(Transmit {
                    to,
                    due,
                    packet,
                    bottleneck: None,
                });
                continue;
            };
            match g
                .to_server(now, &packet.data)
                .map(|v4| Packet::new(packet.id, packet.sent_at, v4))
            {
                Some(Ok(p)) => self.transmits.push_back(Transmit {
                    to,
                    due,
                    packet: p,
                    bottleneck: Some(packet),
                }),
                _ => self.refused.untranslated += 1,
            }
        }
        // The resolver's answers cross the down link like server traffic.
        for reply in answers {
            self.enter(now, Direction::Down, reply);
        }
        if optimized {
            self.optimizer_transmits(now);
        }
        if dir == Direction::Up {
            self.gateway_transmits(now);
        }
    }

    /// Logs an event the bottleneck has already charged, if recording.
    fn record(&mut self, dir: Direction, event: LinkEvent) {
        let (at, id, kind) = match event {
            LinkEvent::Dequeued {
                at,
                packet_id,
                queue_delay,
            } => (at, packet_id, RecordKind::Dequeued(queue_delay)),
            LinkEvent::QueueDrop { at, packet, reason } => {
                (at, packet.id, RecordKind::Dropped(reason))
            }
            LinkEvent::Lost { at, packet, .. } | LinkEvent::TooBig { at, packet, .. } => {
                (at, packet.id, RecordKind::Lost)
            }
            LinkEvent::Marked { at, packet_id } => (at, packet_id, RecordKind::Marked),
            LinkEvent::EcnRewritten { .. }
            | LinkEvent::Duplicated { .. }
            | LinkEvent::Reordered { .. } => return,
        };
        if let Some(records) = &mut self.records {
            if records.len() < RECORD_LIMIT {
                records.push_back(PacketRecord {
                    at,
                    dir,
                    flow: flow_of(id),
                    packet_id: id,
                    kind,
                });
            } else {
                self.records_dropped += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::BOTTLENECK_CAPTURE_LIMIT_BYTES;
    use crate::topology::IpMode;
    use brisk_nat64::Nat64Prefix;
    use brisk_wire::Ecn;
    use brisk_wire::ip::udp_datagram;
    use std::net::{IpAddr, SocketAddr};

    fn core(mode: IpMode, queue: &str) -> RouterCore {
        let text = format!(
            "duration = \"1s\"\n[link.down]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
             [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n{queue}"
        );
        let network = Network::parse(&text).unwrap();
        let resolver = Resolver::new(Nat64Prefix::WELL_KNOWN, Vec::new(), Vec::new()).unwrap();
        RouterCore::new(&network, 1, Addressing::new(mode), None, resolver)
    }

    /// Runs the core's timers to the end, writing every transmit at once.
    fn run_out(core: &mut RouterCore) -> usize {
        let mut written = 0;
        while let Some(t) = core.poll_timeout() {
            core.handle_timeout(t);
            while let Some(tx) = core.poll_transmit() {
                core.on_written(t, &tx);
                written += 1;
            }
        }
        written
    }

    /// Both directions land in the capture at the model's delivery time,
    /// CE marks included and drops left out, over IPv4 and IPv6.
    #[test]
    fn the_bottleneck_capture_holds_what_both_links_delivered() {
        use crate::topology::{CLIENT_V4, CLIENT_V6, SERVER_V4, SERVER_V6};
        for (mode, client, server) in [
            (IpMode::V4, IpAddr::V4(CLIENT_V4), IpAddr::V4(SERVER_V4)),
            (IpMode::V6, IpAddr::V6(CLIENT_V6), IpAddr::V6(SERVER_V6)),
        ] {
            // A 5-packet FIFO: of 10 back-to-back packets, the rest drop.
            let mut core = core(mode, "[queue.fifo]\nlimit_packets = 5\n");
            core.capture_bottleneck(
                BottleneckCapture::new(128, 0, BOTTLENECK_CAPTURE_LIMIT_BYTES).unwrap(),
            );
            let (c, s) = (SocketAddr::new(client, 4000), SocketAddr::new(server, 5000));
            let payload = [7u8; 1000];
            for _ in 0..10 {
                let d = udp_datagram(s, c, Ecn::Ect0, &payload).unwrap();
                core.handle_datagram(Instant::ZERO, Side::Server, d);
            }
            let d = udp_datagram(c, s, Ecn::NotEct, &payload[..100]).unwrap();
            core.handle_datagram(Instant::ZERO, Side::Client, d);
            let written = run_out(&mut core);
            let pcap = core.take_bottleneck_capture().unwrap().finish().unwrap();
            let dropped = core
                .bottleneck()
                .link(Direction::Down)
                .queue()
                .stats()
                .drops();
            assert!(dropped > 0, "{mode:?}: the FIFO dropped nothing");
            assert_eq!(pcap.packets, written as u64, "{mode:?}");
            assert_eq!(pcap.packets, 11 - dropped, "{mode:?}");
            assert_eq!(pcap.skipped_packets, 0);
            // The first record: 5 ms of propagation after the up link's
            // 100-byte datagram or the down link's first packet.
            let first_ns = u32::from_le_bytes(pcap.bytes[28..32].try_into().unwrap());
            assert!(first_ns >= 5_000_000, "{mode:?}: {first_ns}");
            assert!(core.take_bottleneck_capture().is_none());
        }
    }

    /// With the optimizer, a server's data segment is acknowledged to the
    /// server in the client's name at once, while the segment itself takes
    /// the down link; without it, nothing answers before the client does.
    /// The handshake crosses untouched either way; IPv4 and IPv6.
    #[test]
    fn the_optimizer_acknowledges_server_data_at_the_servers_end() {
        use crate::topology::{CLIENT_V4, CLIENT_V6, SERVER_V4, SERVER_V6};
        use brisk_wire::ip::{parse_tcp, tcp_datagram};
        use brisk_wire::tcp::{TcpFlags, TcpOption, TcpRepr};
        let ms = Instant::from_millis;
        for (mode, client, server) in [
            (IpMode::V4, IpAddr::V4(CLIENT_V4), IpAddr::V4(SERVER_V4)),
            (IpMode::V6, IpAddr::V6(CLIENT_V6), IpAddr::V6(SERVER_V6)),
        ] {
            for optimized in [false, true] {
                let mut core = core(mode, "");
                if optimized {
                    core.optimize(brisk_optimizer::Config::default());
                }
                let (c, s) = (SocketAddr::new(client, 40000), SocketAddr::new(server, 443));
                let seg = |from: SocketAddr,
                           to: SocketAddr,
                           seq: u32,
                           ack: u32,
                           flags: TcpFlags,
                           payload: &[u8]| {
                    let options = if flags.contains(TcpFlags::SYN) {
                        vec![
                            TcpOption::Mss(1400),
                            TcpOption::SackPermitted,
                            TcpOption::WindowScale(7),
                        ]
                    } else {
                        Vec::new()
                    };
                    let repr = TcpRepr {
                        src_port: from.port(),
                        dst_port: to.port(),
                        seq_number: seq,
                        ack_number: ack,
                        flags,
                        window: 8192,
                        urgent_pointer: 0,
                        options,
                    };
                    tcp_datagram(from.ip(), to.ip(), Ecn::NotEct, &repr, payload).unwrap()
                };
                // Everything written until `until`, with the time it is due.
                let run_to = |core: &mut RouterCore, until: Instant| {
                    let mut out = Vec::new();
                    while let Some(tx) = core.poll_transmit() {
                        out.push(tx);
                    }
                    while let Some(t) = core.poll_timeout().filter(|&t| t <= until) {
                        core.handle_timeout(t);
                        while let Some(tx) = core.poll_transmit() {
                            out.push(tx);
                        }
                    }
                    out
                };
                let syn = seg(c, s, 100, 0, TcpFlags::SYN, &[]);
                core.handle_datagram(ms(0), Side::Client, syn.clone());
                let out = run_to(&mut core, ms(20));
                assert_eq!(out.len(), 1);
                assert_eq!(
                    (out[0].to, &out[0].packet.data),
                    (Side::Server, &syn),
                    "{mode:?}"
                );
                let synack = seg(s, c, 5000, 101, TcpFlags::SYN | TcpFlags::ACK, &[]);
                core.handle_datagram(ms(20), Side::Server, synack);
                assert_eq!(run_to(&mut core, ms(40)).len(), 1);
                core.handle_datagram(
                    ms(40),
                    Side::Client,
                    seg(c, s, 101, 5001, TcpFlags::ACK, &[]),
                );
                assert_eq!(run_to(&mut core, ms(60)).len(), 1);
                core.handle_datagram(
                    ms(60),
                    Side::Server,
                    seg(s, c, 5001, 101, TcpFlags::ACK, &[9; 1000]),
                );
                let at_once: Vec<Transmit> = std::iter::from_fn(|| core.poll_transmit()).collect();
                let later = run_to(&mut core, ms(100));
                if optimized {
                    assert_eq!(at_once.len(), 1, "{mode:?}: one local ACK");
                    let ack = parse_tcp(&at_once[0].packet.data).unwrap();
                    assert_eq!(at_once[0].to, Side::Server);
                    assert_eq!(
                        (ack.src, ack.tcp.src_port),
                        (client, 40000),
                        "in the client's name"
                    );
                    assert_eq!((ack.tcp.seq_number, ack.tcp.ack_number), (101, 6001));
                    assert_eq!(core.optimizer().unwrap().stats().optimized_connections, 1);
                } else {
                    assert!(at_once.is_empty(), "{mode:?}");
                }
                let data: Vec<&Transmit> = later.iter().filter(|t| t.to == Side::Client).collect();
                assert_eq!(data.len(), 1, "{mode:?} optimized {optimized}");
                assert!(
                    data[0].due >= ms(65),
                    "{mode:?}: the data took the down link"
                );
                assert_eq!(
                    parse_tcp(&data[0].packet.data).unwrap().payload,
                    &[9; 1000][..]
                );
            }
        }
    }
}
