//! A phone with two access paths toward one server: its Wi-Fi and its
//! cellular interface, each with an address of its own and a network of
//! its own (rate, delay, queue, loss, outages), as two `Bottleneck`s. The
//! phone uploads a stream over the first path, or downloads one (its
//! request acknowledged, it then only receives); when its connection
//! reports a stall it moves to the second
//! ([`crate::flows::brisk::Failover`]).
//!
//! A datagram takes the path of the client address it carries: from the
//! client by its source, toward the client by its destination, as a
//! phone's routing table and the internet's would send it. The loop is
//! the engine's in miniature (jump to the earliest wake-up of the flow and
//! the four links, run what is due, route what came out), so a run is a
//! pure function of its settings and seed. A run also records when the
//! receiving application last got bytes in order over each path, which is
//! what a user waits on during a move.

use crate::engine::flow_addrs;
use crate::flows::brisk::{BriskConfig, BriskFlow, BriskWorkload, Failover};
use crate::flows::{End, FlowAddrs, FlowApp};
use crate::scenario::IpFamily;
use brisk_netmodel::{Bottleneck, BottleneckOutput, Direction, Network, Packet, RateModel};
use brisk_proto::congestion::CcAlgorithm;
use brisk_time::Instant;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// One run: the two paths and the upload.
#[derive(Debug, Clone)]
pub struct TwoPathRun {
    /// The path the phone starts on (its Wi-Fi).
    pub first: Network,
    /// Its other path (cellular).
    pub second: Network,
    /// Whether the phone may use the second path; false is the baseline,
    /// a phone with one path whose transfer waits on it.
    pub use_second: bool,
    pub ip: IpFamily,
    pub seed: u64,
    /// Bytes the phone uploads (or downloads), each checked by the
    /// receiver.
    pub bytes: u64,
    /// The phone downloads `bytes` from the server instead of uploading
    /// them.
    pub download: bool,
    /// Virtual time the run may take at most.
    pub duration: Duration,
    /// Virtual time the run goes on after the last byte arrived, the
    /// connection left idle (zero: the run ends with the last byte).
    pub linger: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct TwoPathOutcome {
    /// When the receiver read the last byte.
    pub completed_at: Option<Instant>,
    /// Bytes the receiving application read in order.
    pub delivered_bytes: u64,
    /// Bytes it read that differ from what the phone wrote.
    pub corrupt_bytes: u64,
    /// Why the connection failed, if it did (the baseline's idle timeout).
    pub error: Option<String>,
    /// The phone's moves to its other path.
    pub failovers: Vec<Failover>,
    /// When bytes last reached the receiving application in order over
    /// the first path, and first over the second.
    pub last_on_first: Option<Instant>,
    pub first_on_second: Option<Instant>,
    /// Bytes the receiving application had read in order, at each
    /// increase.
    pub delivered: Vec<(Instant, u64)>,
    /// Base round trip of each path (both propagation delays).
    pub base_rtts: [Duration; 2],
    /// Each path's round trip of one full-size (1500-byte) packet each
    /// way: both propagation delays and both serializations (at the
    /// links' rates when those are constant, else the base round trip).
    pub full_size_rtts: [Duration; 2],
    /// New paths the phone's connection validated (PATH_CHALLENGE
    /// answered).
    pub paths_validated: u64,
    /// Stalls the phone's connection reported.
    pub path_stalls: u64,
    /// Times the server saw the phone turn up on another network after
    /// its path fell silent, and resent its flight at once.
    pub peer_failovers: u64,
    /// When the run ended (the receiver read the last byte, or the
    /// duration ran out).
    pub end: Instant,
}

impl TwoPathOutcome {
    /// The receiver's wait across the move: from its last in-order bytes
    /// over the first path to its first over the second.
    pub fn stall(&self) -> Option<Duration> {
        Some(self.first_on_second? - self.last_on_first?)
    }

    /// How long after its last in-order bytes over the first path the
    /// phone moved: the stall's detection, about one probe timeout.
    pub fn detection(&self) -> Option<Duration> {
        Some(self.failovers.first()?.at - self.last_on_first?)
    }

    /// The first path's probe timeout when the phone moved plus one round
    /// trip of the second path (of a full-size packet each way: the
    /// challenge that tells the server, then the first bytes it resends):
    /// the wait the task aims for.
    pub fn stall_goal(&self) -> Option<Duration> {
        Some(self.failovers.first()?.pto + self.full_size_rtts[1])
    }

    /// What the move may cost: the first path's probe timeout (to notice)
    /// plus two base round trips of the second path, one for the ACK that
    /// shows where the receiver's gap begins (the phone cannot know
    /// sooner which of its packets in flight arrived) and at most one
    /// more for the gap's bytes, their queueing and serialization.
    pub fn stall_bound(&self) -> Option<Duration> {
        Some(self.failovers.first()?.pto + 2 * self.base_rtts[1])
    }

    /// Whether every byte arrived, none corrupt.
    pub fn intact(&self, bytes: u64) -> bool {
        self.completed_at.is_some() && self.delivered_bytes == bytes && self.corrupt_bytes == 0
    }
}

/// The phone's address on its second path: another network than its
/// first address's, so a move there is a new network to the server.
pub fn second_address(ip: IpFamily) -> SocketAddr {
    let a: IpAddr = match ip {
        IpFamily::V4 => Ipv4Addr::new(10, 3, 0, 1).into(),
        IpFamily::V6 => Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, 0, 1).into(),
    };
    SocketAddr::new(a, 40_000)
}

/// A phone's Brisk flow on the two-path topology: CUBIC with ECN, migration
/// on, nothing optional; shared by the failover and the connect race.
pub(crate) fn phone_config(
    ip: IpFamily,
    seed: u64,
    addrs: FlowAddrs,
    start: Instant,
    stop: Instant,
    workload: BriskWorkload,
) -> BriskConfig {
    BriskConfig {
        addrs,
        seed,
        cc: CcAlgorithm::Cubic,
        ecn: true,
        ack_frequency: true,
        prague_small_datagrams: false,
        prague_burst_floor: true,
        prague_pipe_cap: false,
        bbr_bounded_startup: false,
        fec: None,
        pmtud: false,
        migration: true,
        header_len: ip.udp_header_bytes() as usize,
        start,
        stop,
        workload,
        series: false,
        null_cipher: false,
        qlog: None,
    }
}

/// Runs the upload over the two paths.
pub fn run_two_path(run: &TwoPathRun) -> TwoPathOutcome {
    let addrs = flow_addrs(run.ip, 0);
    let second = second_address(run.ip);
    let end = Instant::ZERO + run.duration;
    let config = phone_config(
        run.ip,
        run.seed,
        addrs,
        Instant::ZERO,
        end,
        if run.download {
            BriskWorkload::Download { bytes: run.bytes }
        } else {
            BriskWorkload::Bulk {
                bytes: Some(run.bytes),
            }
        },
    );
    let mut flow = BriskFlow::new(config);
    if run.use_second {
        flow = flow.with_standby(second);
    }
    let mut net = Paths {
        links: [
            Bottleneck::new(&run.first, run.seed),
            Bottleneck::new(&run.second, run.seed ^ 0x2d5e_c0de),
        ],
        second: second.ip(),
        next_id: 0,
        last_on_first: None,
        first_on_second: None,
        delivered: Vec::new(),
    };
    let mut now = Instant::ZERO;
    let mut end = end;
    let mut done = false;
    net.send(&mut flow, now);
    while let Some(t) = net.next_wakeup(&flow).filter(|t| *t <= end) {
        now = t;
        if flow.poll_timeout().is_some_and(|t| t <= now) {
            flow.handle_timeout(now);
        }
        for link in &mut net.links {
            for dir in Direction::BOTH {
                if link.poll_timeout(dir).is_some_and(|t| t <= now) {
                    link.handle_timeout(now, dir);
                }
            }
        }
        net.drain(&mut flow, now);
        if !done && flow.delivered_bytes() >= run.bytes {
            if run.linger.is_zero() {
                break;
            }
            done = true;
            end = end.min(now + run.linger);
        }
    }
    let report = flow.report();
    let transport = report.transport.unwrap_or_default();
    TwoPathOutcome {
        completed_at: transport.completed_at,
        delivered_bytes: report.delivered_bytes,
        corrupt_bytes: transport.integrity.corrupt_bytes,
        error: transport.error,
        failovers: flow.failovers().to_vec(),
        last_on_first: net.last_on_first,
        first_on_second: net.first_on_second,
        delivered: net.delivered,
        base_rtts: [net.links[0].round_trip(), net.links[1].round_trip()],
        full_size_rtts: [
            full_size_round_trip(&net.links[0]),
            full_size_round_trip(&net.links[1]),
        ],
        paths_validated: transport.sender.as_ref().map_or(0, |s| s.paths_validated),
        path_stalls: transport.sender.as_ref().map_or(0, |s| s.path_stalls),
        peer_failovers: transport.receiver.as_ref().map_or(0, |s| s.peer_failovers),
        // A run left idle ends at the end of its idle time, whether or not
        // anything happened then.
        end: if done { end } else { now },
    }
}

/// The bytes of a full-size packet on an Ethernet-sized path.
const FULL_SIZE_BYTES: u64 = 1500;

/// `link`'s base round trip plus one full-size packet's serialization in
/// each direction whose rate is constant.
pub(crate) fn full_size_round_trip(link: &Bottleneck) -> Duration {
    let serialization = Direction::BOTH.map(|d| match link.link(d).config().rate {
        RateModel::Constant { bps } if bps > 0 => {
            Duration::from_nanos(FULL_SIZE_BYTES * 8 * 1_000_000_000 / bps)
        }
        _ => Duration::ZERO,
    });
    link.round_trip() + serialization.into_iter().sum::<Duration>()
}

/// The two paths and what the receiver got over each.
struct Paths {
    links: [Bottleneck; 2],
    /// The phone's address on the second path.
    second: IpAddr,
    next_id: u64,
    last_on_first: Option<Instant>,
    first_on_second: Option<Instant>,
    delivered: Vec<(Instant, u64)>,
}

impl Paths {
    fn next_wakeup(&self, flow: &BriskFlow) -> Option<Instant> {
        let links = self
            .links
            .iter()
            .flat_map(|l| Direction::BOTH.map(|d| l.poll_timeout(d)));
        links.chain([flow.poll_timeout()]).flatten().min()
    }

    /// Which path a datagram of the phone's address `client` takes.
    fn path_of(&self, client: IpAddr) -> usize {
        usize::from(client == self.second)
    }

    /// Hands the links everything the flow has to send now.
    fn send(&mut self, flow: &mut BriskFlow, now: Instant) {
        while let Some((end, datagram)) = flow.poll_transmit(now) {
            self.next_id += 1;
            // A malformed datagram is lost, as a NIC would drop it.
            let Ok(packet) = Packet::new(self.next_id, now, datagram) else {
                continue;
            };
            let key = packet.flow();
            let (dir, client) = match end {
                End::Sender => (Direction::Down, key.src),
                End::Receiver => (Direction::Up, key.dst),
            };
            self.links[self.path_of(client)].handle_packet(now, dir, packet);
        }
    }

    /// Delivers what the links have for the flow, and sends its answers,
    /// until neither has more.
    fn drain(&mut self, flow: &mut BriskFlow, now: Instant) {
        loop {
            self.send(flow, now);
            let mut delivered = false;
            for path in 0..2 {
                for dir in Direction::BOTH {
                    while let Some(out) = self.links[path].poll(dir, &mut ()) {
                        let BottleneckOutput::Delivered { at, packet } = out else {
                            continue;
                        };
                        delivered = true;
                        self.deliver(flow, path, dir, at, packet);
                    }
                }
            }
            if !delivered {
                return;
            }
        }
    }

    fn deliver(
        &mut self,
        flow: &mut BriskFlow,
        path: usize,
        dir: Direction,
        at: Instant,
        packet: Packet,
    ) {
        // Toward the server (an upload's data), or toward the phone (a
        // download's).
        let end = match dir {
            Direction::Down => End::Receiver,
            Direction::Up => End::Sender,
        };
        let before = flow.delivered_bytes();
        flow.handle_datagram(at, end, &packet.data);
        let after = flow.delivered_bytes();
        if after > before {
            self.delivered.push((at, after));
            if path == 0 {
                self.last_on_first = Some(at);
            } else {
                self.first_on_second.get_or_insert(at);
            }
        }
        flow.recycle(packet.data);
    }
}
