//! The discrete-event engine.
//!
//! Topology: a dumbbell. Flow `i` runs between its own sender host and its
//! own receiver host; all flows share one [`Bottleneck`] (a link per
//! direction, with the scenario's queues), which charges each flow's data
//! direction for what its queue and link did. Each flow's base RTT above the
//! bottleneck's own is added on the sender's access link, a pure delay.
//!
//! Time jumps to the earliest wake-up among all components (flows, access
//! delays, the two bottleneck directions), kept in an agenda ([`Wakeups`])
//! that a component's wake-up is written to only when the engine has just
//! touched it. Components due at
//! the same time are visited in one fixed order (flow by flow: application,
//! access down, access up; then the bottleneck down and up), so a run is a
//! pure function of scenario and seed.

use crate::flows::{AppReport, End, FlowAddrs, FlowApp};
use crate::nat::{Change, ClientNat, Moves};
use crate::scenario::{IpFamily, Scenario};
use crate::wakeups::Wakeups;
/// Which way a packet crosses the bottleneck (what a capture sees).
pub use brisk_netmodel::Direction;
use brisk_netmodel::bottleneck::flow_tag::{flow_of, packet_id};
use brisk_netmodel::packet::HeaderMemo;
use brisk_netmodel::{
    Bottleneck, BottleneckOutput, FlowLedger, FlowMetrics, LinkEvent, Packet, queue::QueueStats,
};
use brisk_time::{Instant, earliest};
use brisk_wire::{Ecn, ip};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// How often a run reports its progress: rare enough to cost nothing,
/// a few times a second of wall time.
const PROGRESS_EVERY_STEPS: u64 = 1 << 16;

/// A component's number in the visiting order: three per flow, then the
/// two bottleneck directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Component {
    App(usize),
    AccessDown(usize),
    AccessUp(usize),
    Link(Direction),
}

impl Component {
    fn index(self, flows: usize) -> usize {
        match self {
            Component::App(i) => 3 * i,
            Component::AccessDown(i) => 3 * i + 1,
            Component::AccessUp(i) => 3 * i + 2,
            Component::Link(Direction::Down) => 3 * flows,
            Component::Link(Direction::Up) => 3 * flows + 1,
        }
    }

    fn from_index(c: usize, flows: usize) -> Component {
        match (c / 3, c % 3) {
            (i, 0) if i < flows => Component::App(i),
            (i, 1) if i < flows => Component::AccessDown(i),
            (i, _) if i < flows => Component::AccessUp(i),
            _ if c == 3 * flows => Component::Link(Direction::Down),
            _ => Component::Link(Direction::Up),
        }
    }
}

/// Receives every packet as it reaches the far end of the bottleneck, in
/// either direction (after the queue's marks, without the packets it
/// dropped): where a capture at the router's egress would see them.
pub trait CaptureSink {
    fn packet(&mut self, at: Instant, direction: Direction, datagram: &[u8]);
}

impl CaptureSink for Vec<(Instant, Direction, Vec<u8>)> {
    fn packet(&mut self, at: Instant, direction: Direction, datagram: &[u8]) {
        self.push((at, direction, datagram.to_vec()));
    }
}

/// A fixed delay that keeps order: a host's access link.
#[derive(Debug, Default)]
struct DelayLine {
    delay: Duration,
    queue: VecDeque<(Instant, Packet)>,
}

impl DelayLine {
    fn next(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }
}

/// One flow's application and the measurements about it.
pub(crate) struct FlowSlot {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) app: Box<dyn FlowApp>,
    pub(crate) addrs: FlowAddrs,
    pub(crate) start: Instant,
    pub(crate) stop: Instant,
    /// Base round trip of this flow's path.
    pub(crate) base_rtt: Duration,
    access_down: DelayLine,
    access_up: DelayLine,
    pub(crate) metrics: FlowMetrics,
    next_seq: u64,
    /// The last header each end sent (sender, receiver): a flow's
    /// datagrams repeat it, and reading it anew was a tenth of a run.
    headers: [HeaderMemo; 2],
    /// The NAT in front of the sender, when its address changes.
    pub(crate) nat: Option<ClientNat>,
}

/// What the engine hands back when a run ends.
pub struct Outcome {
    pub(crate) flows: Vec<FlowSlot>,
    pub(crate) bottleneck: Bottleneck,
    pub(crate) steps: u64,
    pub(crate) packet_hops: u64,
    pub(crate) end: Instant,
}

/// One flow's time series, recorded when the run asked for series.
#[derive(Debug, Clone)]
pub struct FlowSeries {
    pub name: String,
    pub kind: &'static str,
    /// Round trips the application measured: (when, rtt).
    pub rtt: Vec<(Instant, Duration)>,
    /// Each data packet's wait in the bottleneck queue: (dequeue time, wait).
    pub queue_delay: Vec<(Instant, Duration)>,
    /// Cumulative IP bytes delivered to the receiver: (arrival, total).
    pub delivered: Vec<(Instant, u64)>,
}

impl Outcome {
    /// Time series of every flow (empty vectors unless `series` was on).
    /// Each flow's sender address changes (`migrate_every`,
    /// `nat_rebind_every`), in order: when, and which kind.
    pub fn moves(&self) -> Vec<Vec<(Instant, Change)>> {
        self.flows
            .iter()
            .map(|f| f.nat.as_ref().map(|n| n.log.clone()).unwrap_or_default())
            .collect()
    }

    pub fn series(&self) -> Vec<FlowSeries> {
        self.flows
            .iter()
            .map(|f| FlowSeries {
                name: f.name.clone(),
                kind: f.kind,
                rtt: f.app.report().rtt_samples,
                queue_delay: f.metrics.queue_delay_series.clone().unwrap_or_default(),
                delivered: f.metrics.delivered_series.clone().unwrap_or_default(),
            })
            .collect()
    }

    pub fn reports(&self) -> Vec<AppReport> {
        self.flows.iter().map(|f| f.app.report()).collect()
    }

    /// Packets that crossed one bottleneck direction to its far end.
    pub fn packet_hops(&self) -> u64 {
        self.packet_hops
    }

    pub fn queue_stats(&self) -> (QueueStats, QueueStats) {
        let stats = |dir| self.bottleneck.link(dir).queue().stats();
        (stats(Direction::Down), stats(Direction::Up))
    }
}

/// A network and its traffic, ready to run.
pub struct Engine<'c> {
    now: Instant,
    end: Instant,
    bottleneck: Bottleneck,
    flows: Vec<FlowSlot>,
    routes: HashMap<IpAddr, (usize, End)>,
    /// Per flow: whether `routes` sends its two addresses to its own two
    /// ends (always, unless flows share addresses), so a packet's route can
    /// be read from the flow in its id instead of the map.
    own_routes: Vec<bool>,
    wakeups: Wakeups,
    capture: Option<&'c mut dyn CaptureSink>,
    /// A captured datagram whose UDP checksum its sender left unset is
    /// completed here first, so captures carry valid checksums.
    capture_scratch: Vec<u8>,
    progress: Option<&'c mut dyn FnMut(Duration)>,
    steps: u64,
    packet_hops: u64,
}

/// The addresses of flow `i`'s hosts: senders on one /24 (or /64), receivers
/// on another, as on the two sides of a router.
pub fn flow_addrs(family: IpFamily, i: usize) -> FlowAddrs {
    let host = u16::try_from(i + 1).unwrap_or(u16::MAX);
    let (s, r): (IpAddr, IpAddr) = match family {
        IpFamily::V4 => {
            let [hi, lo] = host.to_be_bytes();
            (
                Ipv4Addr::new(10, 1, hi, lo).into(),
                Ipv4Addr::new(10, 2, hi, lo).into(),
            )
        }
        IpFamily::V6 => (
            Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, host).into(),
            Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, host).into(),
        ),
    };
    // Ports no dissector claims, so captures show plain UDP.
    FlowAddrs {
        sender: SocketAddr::new(s, 40_000),
        receiver: SocketAddr::new(r, 42_000),
    }
}

/// What a caller provides to build a flow's application.
pub struct FlowSetup {
    pub name: String,
    pub kind: &'static str,
    pub app: Box<dyn FlowApp>,
    pub addrs: FlowAddrs,
    pub start: Instant,
    pub stop: Instant,
    /// Base RTT of the flow's path; at least the bottleneck's round trip.
    pub rtt: Duration,
}

impl<'c> Engine<'c> {
    /// Builds the dumbbell for `scenario` with `seed`. Flows are added with
    /// [`Engine::add_flow`].
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        capture: Option<&'c mut dyn CaptureSink>,
    ) -> Engine<'c> {
        Engine {
            now: Instant::ZERO,
            end: Instant::ZERO + scenario.duration,
            bottleneck: {
                // The engine only counts dequeues (`drain_link`).
                let mut b = Bottleneck::new(&scenario.network, seed);
                b.keep_dequeues_apart();
                b
            },
            flows: Vec::new(),
            routes: HashMap::new(),
            own_routes: Vec::new(),
            wakeups: Wakeups::default(),
            capture,
            capture_scratch: Vec::new(),
            progress: None,
            steps: 0,
            packet_hops: 0,
        }
    }

    /// Tells `progress` the virtual time reached every few ten thousand
    /// steps, so a long run can show how far it is.
    pub fn set_progress(&mut self, progress: &'c mut dyn FnMut(Duration)) {
        self.progress = Some(progress);
    }

    /// The bottleneck's own round trip (both propagation delays).
    pub fn bottleneck_rtt(&self) -> Duration {
        self.bottleneck.round_trip()
    }

    pub fn add_flow(&mut self, setup: FlowSetup, series: bool) {
        let i = self.flows.len();
        let extra = setup.rtt.saturating_sub(self.bottleneck_rtt());
        self.routes
            .insert(setup.addrs.sender.ip(), (i, End::Sender));
        self.routes
            .insert(setup.addrs.receiver.ip(), (i, End::Receiver));
        // The extra delay is split over the two directions of the access link.
        let half = extra / 2;
        self.flows.push(FlowSlot {
            name: setup.name,
            kind: setup.kind,
            app: setup.app,
            addrs: setup.addrs,
            start: setup.start,
            stop: setup.stop,
            base_rtt: self.bottleneck_rtt() + extra,
            access_down: DelayLine {
                delay: half,
                queue: VecDeque::new(),
            },
            access_up: DelayLine {
                delay: extra - half,
                queue: VecDeque::new(),
            },
            metrics: FlowMetrics::with_series(series),
            next_seq: 0,
            headers: Default::default(),
            nat: None,
        });
    }

    /// Puts flow `i`'s sender behind a NAT that changes its address on
    /// `moves`' schedule.
    pub fn set_moves(&mut self, i: usize, moves: Moves) {
        if let Some(f) = self.flows.get_mut(i)
            && !moves.is_empty()
        {
            f.nat = Some(ClientNat::new(f.addrs.sender, moves, f.start));
        }
    }

    /// Makes the address changes of flow `i`'s NAT due by now, telling the
    /// sender of a move to a new network.
    fn advance_nat(&mut self, i: usize) {
        let now = self.now;
        let f = &mut self.flows[i];
        let Some(nat) = f.nat.as_mut() else {
            return;
        };
        while let Some(change) = nat.advance(now) {
            if change == Change::NewNetwork {
                f.app.on_moved(now);
            }
        }
    }

    /// Runs to the end of the scenario.
    pub fn run(mut self) -> Outcome {
        let n = self.flows.len();
        self.own_routes = (0..n)
            .map(|i| {
                let a = self.flows[i].addrs;
                self.routes.get(&a.sender.ip()) == Some(&(i, End::Sender))
                    && self.routes.get(&a.receiver.ip()) == Some(&(i, End::Receiver))
            })
            .collect();
        let count = Component::Link(Direction::Up).index(n) + 1;
        self.wakeups = Wakeups::new(count);
        // Each component by its number, looked up once per visit.
        let order: Vec<Component> = (0..count).map(|c| Component::from_index(c, n)).collect();
        // Give every flow a chance to send at time zero.
        for i in 0..n {
            self.drain_flow(i);
        }
        for i in 0..n {
            self.reschedule(Component::App(i));
            self.reschedule(Component::AccessDown(i));
            self.reschedule(Component::AccessUp(i));
        }
        self.reschedule(Component::Link(Direction::Down));
        self.reschedule(Component::Link(Direction::Up));
        while let Some(t) = self.wakeups.next_time().filter(|t| *t <= self.end) {
            self.now = t;
            self.steps += 1;
            if self.steps.is_multiple_of(PROGRESS_EVERY_STEPS)
                && let Some(progress) = self.progress.as_mut()
            {
                progress(t - Instant::ZERO);
            }
            self.wakeups.start_round(t);
            while let Some(c) = self.wakeups.pop_due() {
                self.visit(order[c]);
            }
            // Only a link the round called into has anything to give.
            for dir in Direction::BOTH {
                if self.bottleneck.has_output(dir) {
                    self.drain_link(dir);
                }
            }
            self.wakeups.end_round();
        }
        self.drain_link(Direction::Down);
        self.drain_link(Direction::Up);
        // The ledger pools the down direction's queue delays.
        for f in &self.flows {
            self.bottleneck
                .add_queue_delays(Direction::Down, &f.metrics.queue_delay);
        }
        Outcome {
            flows: self.flows,
            bottleneck: self.bottleneck,
            steps: self.steps,
            packet_hops: self.packet_hops,
            end: self.end,
        }
    }

    /// Reads a component's next wake-up into the agenda; called after
    /// anything that may have changed it. Inlined: each caller names its
    /// component, so only that component's arm is left at each, and a
    /// wake-up that did not move costs no call.
    #[inline(always)]
    fn reschedule(&mut self, c: Component) {
        let at = match c {
            Component::App(i) => {
                let f = &self.flows[i];
                earliest(
                    f.app.poll_timeout(),
                    f.nat.as_ref().and_then(ClientNat::next_change),
                )
            }
            Component::AccessDown(i) => self.flows[i].access_down.next(),
            Component::AccessUp(i) => self.flows[i].access_up.next(),
            Component::Link(dir) => self.bottleneck.poll_timeout(dir),
        };
        self.wakeups.schedule(c.index(self.flows.len()), at);
    }

    /// Runs a component the agenda says is due now.
    fn visit(&mut self, c: Component) {
        let now = self.now;
        match c {
            Component::App(i) => {
                self.advance_nat(i);
                // Without a NAT the agenda woke the flow for its own
                // timeout, read at the engine's last touch of it: no need
                // to ask again whether it is due.
                let f = &self.flows[i];
                if f.nat.is_none() || f.app.poll_timeout().is_some_and(|t| t <= now) {
                    self.flows[i].app.handle_timeout(now);
                }
                self.drain_flow(i);
            }
            Component::AccessDown(i) => {
                while let Some((_, p)) = pop_due(&mut self.flows[i].access_down, now) {
                    self.bottleneck.handle_packet(now, Direction::Down, p);
                }
                self.reschedule(c);
                self.reschedule(Component::Link(Direction::Down));
            }
            Component::AccessUp(i) => {
                while let Some((at, p)) = pop_due(&mut self.flows[i].access_up, now) {
                    self.deliver(at, i, End::Sender, p);
                }
                self.reschedule(c);
            }
            Component::Link(dir) => {
                self.bottleneck.handle_timeout(now, dir);
                self.reschedule(c);
            }
        }
    }

    /// Sends everything flow `i` has to send now.
    fn drain_flow(&mut self, i: usize) {
        let now = self.now;
        let (mut down, mut up, mut access) = (false, false, false);
        self.advance_nat(i);
        while let Some((end, mut datagram)) = self.flows[i].app.poll_transmit(now) {
            let f = &mut self.flows[i];
            if end == End::Sender
                && let Some(rewritten) = f.nat.as_ref().and_then(|n| n.outbound(&datagram))
            {
                f.app.recycle(std::mem::replace(&mut datagram, rewritten));
            }
            let id = packet_id(Some(i), f.next_seq);
            f.next_seq += 1;
            // A flow that emits a malformed datagram loses it, as a NIC would.
            let memo = &mut f.headers[usize::from(end == End::Receiver)];
            let Ok(packet) = Packet::new_with_memo(id, now, datagram, memo) else {
                continue;
            };
            match end {
                End::Sender => {
                    f.metrics.sent_packets += 1;
                    f.metrics.sent_bytes += packet.len() as u64;
                    if f.access_down.delay.is_zero() {
                        self.bottleneck.handle_packet(now, Direction::Down, packet);
                        down = true;
                    } else {
                        f.access_down
                            .queue
                            .push_back((now + f.access_down.delay, packet));
                        access = true;
                    }
                }
                End::Receiver => {
                    self.bottleneck.handle_packet(now, Direction::Up, packet);
                    up = true;
                }
            }
        }
        self.reschedule(Component::App(i));
        if access {
            self.reschedule(Component::AccessDown(i));
        }
        if down {
            self.reschedule(Component::Link(Direction::Down));
        }
        if up {
            self.reschedule(Component::Link(Direction::Up));
        }
    }

    /// Routes what a bottleneck direction delivered and records its events.
    fn drain_link(&mut self, dir: Direction) {
        loop {
            let ledger = &mut DataLedger(&mut self.flows);
            let (at, packet) = match self.bottleneck.poll_quiet(dir, ledger) {
                None => break,
                Some(BottleneckOutput::Delivered { at, packet }) => (at, packet),
                Some(BottleneckOutput::Event(
                    LinkEvent::QueueDrop { packet, .. } | LinkEvent::Lost { packet, .. },
                )) => {
                    self.recycle(packet);
                    continue;
                }
                Some(BottleneckOutput::Event(_)) => continue,
            };
            self.packet_hops += 1;
            if let Some(sink) = &mut self.capture {
                if ip::udp_checksum_unset(&packet.data) {
                    self.capture_scratch.clear();
                    self.capture_scratch.extend_from_slice(&packet.data);
                    ip::fill_udp_checksum(&mut self.capture_scratch);
                    sink.packet(at, dir, &self.capture_scratch);
                } else {
                    sink.packet(at, dir, &packet.data);
                }
            }
            let packet = match self.through_nat(dir, packet) {
                Ok(p) => p,
                Err(p) => {
                    self.recycle(p);
                    continue;
                }
            };
            match (dir, self.route(&packet)) {
                (Direction::Down, Some((i, End::Receiver))) => {
                    self.deliver(at, i, End::Receiver, packet)
                }
                (Direction::Up, Some((i, End::Sender))) => {
                    let line = &mut self.flows[i].access_up;
                    if line.delay.is_zero() {
                        self.deliver(at, i, End::Sender, packet);
                    } else {
                        line.queue.push_back((at + line.delay, packet));
                        self.reschedule(Component::AccessUp(i));
                    }
                }
                // No host there: the router drops it.
                _ => self.recycle(packet),
            }
        }
    }

    /// A reply on its way to a sender behind a NAT, addressed to the
    /// sender's own address; `Err` when the NAT drops it (an old mapping).
    fn through_nat(&mut self, dir: Direction, packet: Packet) -> Result<Packet, Packet> {
        if dir != Direction::Up {
            return Ok(packet);
        }
        let Some(i) = flow_of(packet.id) else {
            return Ok(packet);
        };
        // Changes are made at their own wake-up (`reschedule`), so the
        // flow hears of a move when it can answer it.
        let Some(nat) = self.flows.get(i).and_then(|f| f.nat.as_ref()) else {
            return Ok(packet);
        };
        match nat.inbound(&packet.data) {
            Some(d) => Packet::new(packet.id, packet.sent_at, d).map_err(|_| packet),
            None => Err(packet),
        }
    }

    /// The host a packet is addressed to: its own flow's other end as a
    /// rule, looked up by address otherwise.
    fn route(&self, packet: &Packet) -> Option<(usize, End)> {
        let dst = packet.flow().dst;
        if let Some(i) = flow_of(packet.id)
            && self.own_routes.get(i) == Some(&true)
        {
            let a = self.flows[i].addrs;
            if a.receiver.ip() == dst {
                return Some((i, End::Receiver));
            }
            if a.sender.ip() == dst {
                return Some((i, End::Sender));
            }
        }
        self.routes.get(&dst).copied()
    }

    /// Hands a packet to flow `i`'s application at `end`.
    fn deliver(&mut self, at: Instant, i: usize, end: End, packet: Packet) {
        let f = &mut self.flows[i];
        if end == End::Receiver {
            let ce = packet.ecn() == Ecn::Ce;
            f.metrics
                .on_delivered(at, packet.len(), ce, at - packet.sent_at);
        }
        f.app.handle_datagram(at, end, &packet.data);
        let answers = f.app.answers_datagrams(end);
        self.recycle(packet);
        if answers {
            self.drain_flow(i);
        }
    }

    /// Hands a packet's buffer back to the flow that sent it.
    fn recycle(&mut self, packet: Packet) {
        if let Some(f) = flow_of(packet.id).and_then(|i| self.flows.get_mut(i)) {
            f.app.recycle(packet.data);
        }
    }
}

/// The engine's flows as the bottleneck charges them: each flow's data
/// direction (down, sender to receiver) only; the up direction counts in
/// the link's totals.
struct DataLedger<'f>(&'f mut [FlowSlot]);

impl FlowLedger for DataLedger<'_> {
    fn metrics(&mut self, dir: Direction, flow: usize) -> Option<&mut FlowMetrics> {
        match dir {
            Direction::Down => self.0.get_mut(flow).map(|f| &mut f.metrics),
            Direction::Up => None,
        }
    }

    fn pools_queue_delays(&self) -> bool {
        true
    }
}

fn pop_due(line: &mut DelayLine, now: Instant) -> Option<(Instant, Packet)> {
    if line.next().is_some_and(|t| t <= now) {
        line.queue.pop_front()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::{ConstantRate, SendJitter};

    /// One second over a 10 Mbit/s, 5 ms link each way.
    const LINKS: &str = r#"
duration = "1s"
[link.down]
rate = "10Mbit"
delay = "5ms"
[link.up]
rate = "10Mbit"
delay = "5ms"
"#;

    fn scenario() -> Scenario {
        Scenario::parse(LINKS, "test.toml").unwrap()
    }

    fn cbr(addrs: FlowAddrs, start_ms: u64) -> FlowSetup {
        let start = Instant::from_millis(start_ms);
        let stop = Instant::from_millis(500);
        FlowSetup {
            name: String::new(),
            kind: "cbr",
            app: Box::new(ConstantRate::new(
                addrs,
                1_000_000,
                500,
                28,
                Ecn::NotEct,
                start,
                stop,
                None,
                SendJitter {
                    max: Some(Duration::ZERO),
                    rng: brisk_netmodel::rng(1, 1),
                },
            )),
            addrs,
            start,
            stop,
            rtt: Duration::from_millis(30),
        }
    }

    #[test]
    fn hosts_sharing_an_address_are_routed_by_address_not_by_flow() {
        // Both flows send to one receiver address; the later flow's host
        // owns it, as the router's table says.
        for family in [IpFamily::V4, IpFamily::V6] {
            let s = scenario();
            let mut e = Engine::new(&s, 1, None);
            let shared = flow_addrs(family, 0);
            e.add_flow(cbr(shared, 0), false);
            e.add_flow(cbr(shared, 1), false);
            let o = e.run();
            let sent: u64 = o.flows.iter().map(|f| f.metrics.sent_packets).sum();
            assert_eq!(sent, 250);
            assert_eq!(o.flows[0].metrics.delivered_packets, 0);
            assert_eq!(o.flows[1].metrics.delivered_packets, sent);
        }
    }

    /// A flow that asks to be drained after every datagram, whatever the
    /// flow inside says.
    struct AlwaysAsked(ConstantRate);

    impl FlowApp for AlwaysAsked {
        fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]) {
            self.0.handle_datagram(now, end, datagram);
        }
        fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
            self.0.poll_transmit(now)
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.0.poll_timeout()
        }
        fn handle_timeout(&mut self, now: Instant) {
            self.0.handle_timeout(now);
        }
        fn report(&self) -> AppReport {
            self.0.report()
        }
        fn recycle(&mut self, datagram: Vec<u8>) {
            self.0.recycle(datagram);
        }
    }

    #[test]
    fn skipping_a_cbr_receiver_after_each_datagram_changes_nothing() {
        // Two CBR flows (one on/off) overloading a short FIFO: the
        // capture, counts and delays are the same as when the engine asks
        // both after every datagram.
        for family in [IpFamily::V4, IpFamily::V6] {
            let run = |asked: bool| {
                let text = format!("{LINKS}[queue.fifo]\nlimit_packets = 20\n");
                let s = Scenario::parse(&text, "test.toml").unwrap();
                let mut cap: Vec<(Instant, Direction, Vec<u8>)> = Vec::new();
                let mut e = Engine::new(&s, 1, Some(&mut cap));
                for i in 0..2 {
                    let addrs = flow_addrs(family, i);
                    let (start, stop) = (Instant::from_millis(i as u64), Instant::from_millis(800));
                    let on_off =
                        (i == 1).then(|| (Duration::from_millis(30), Duration::from_millis(20)));
                    let cbr = ConstantRate::new(
                        addrs,
                        8_000_000,
                        1200,
                        28,
                        Ecn::Ect0,
                        start,
                        stop,
                        on_off,
                        SendJitter {
                            max: None,
                            rng: brisk_netmodel::rng(1, i as u64),
                        },
                    );
                    let app: Box<dyn FlowApp> = if asked {
                        Box::new(AlwaysAsked(cbr))
                    } else {
                        Box::new(cbr)
                    };
                    let setup = FlowSetup {
                        name: String::new(),
                        kind: "cbr",
                        app,
                        addrs,
                        start,
                        stop,
                        rtt: Duration::from_millis(30 + 10 * i as u64),
                    };
                    e.add_flow(setup, false);
                }
                let o = e.run();
                let flows: Vec<_> = o
                    .flows
                    .iter()
                    .map(|f| {
                        let m = &f.metrics;
                        let d = m.one_way_delay.percentiles();
                        (
                            m.sent_packets,
                            m.delivered_packets,
                            m.queue_drops,
                            d.p50,
                            d.max,
                        )
                    })
                    .collect();
                let delivered: Vec<u64> = o.reports().iter().map(|r| r.delivered_bytes).collect();
                (flows, delivered, o.steps, cap)
            };
            let (skipped, asked) = (run(false), run(true));
            assert!(skipped.0.iter().all(|f| f.2 > 0), "{:?}", skipped.0);
            assert_eq!(skipped, asked);
        }
    }

    #[test]
    fn same_time_components_run_in_flow_order_whatever_the_start_order() {
        // Two flows start at the same instant: flow 0's packet is always
        // enqueued, serialized and captured before flow 1's.
        let s = scenario();
        let mut cap: Vec<(Instant, Direction, Vec<u8>)> = Vec::new();
        let mut e = Engine::new(&s, 1, Some(&mut cap));
        for i in 0..2 {
            e.add_flow(cbr(flow_addrs(IpFamily::V4, i), 100), false);
        }
        let o = e.run();
        assert_eq!(o.flows[0].metrics.delivered_packets, 100);
        let first_two: Vec<u8> = cap.iter().take(2).map(|(_, _, d)| d[19]).collect();
        assert_eq!(first_two, vec![1, 2], "host byte of each destination");
    }
}
