//! The discrete-event engine.
//!
//! Topology: a dumbbell. Flow `i` runs between its own sender host and its
//! own receiver host; all flows share one bottleneck link (a [`Link`] per
//! direction, with the scenario's queue). Each flow's base RTT above the
//! bottleneck's own is added on the sender's access link, a pure delay.
//!
//! Time jumps to the earliest wake-up among all components (flows, access
//! delays, the two bottleneck directions). Components are always visited
//! in the same order, so a run is a pure function of scenario and seed.

use crate::flows::{AppReport, End, FlowAddrs, FlowApp};
use crate::metrics::FlowMetrics;
use crate::scenario::{IpFamily, Scenario};
use brisk_netmodel::{Link, LinkEvent, Packet, queue::QueueStats};
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use brisk_wire::Ecn;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Packet ids carry their flow in the high bits, so link events (which name
/// only a packet id) can be charged to the right flow.
const FLOW_SHIFT: u32 = 40;

/// Where a capture saw a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Down,
    Up,
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
}

/// What the engine hands back when a run ends.
pub struct Outcome {
    pub(crate) flows: Vec<FlowSlot>,
    pub(crate) down: Link,
    pub(crate) up: Link,
    pub(crate) down_delay: LatencySummary,
    pub(crate) up_delay: LatencySummary,
    pub(crate) down_losses: u64,
    pub(crate) up_losses: u64,
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

    pub fn queue_stats(&self) -> (QueueStats, QueueStats) {
        (self.down.queue().stats(), self.up.queue().stats())
    }
}

/// A network and its traffic, ready to run.
pub struct Engine<'c> {
    now: Instant,
    end: Instant,
    down: Link,
    up: Link,
    flows: Vec<FlowSlot>,
    routes: HashMap<IpAddr, (usize, End)>,
    down_delay: LatencySummary,
    up_delay: LatencySummary,
    down_losses: u64,
    up_losses: u64,
    capture: Option<&'c mut dyn CaptureSink>,
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
        let rng = |stream| brisk_netmodel::rng(seed, stream);
        let down_q = scenario.queue.build(rng(1));
        let up_q = scenario.queue_up.build(rng(2));
        Engine {
            now: Instant::ZERO,
            end: Instant::ZERO + scenario.duration,
            down: Link::new(scenario.link.down.clone(), down_q, rng(3)),
            up: Link::new(scenario.link.up.clone(), up_q, rng(4)),
            flows: Vec::new(),
            routes: HashMap::new(),
            down_delay: LatencySummary::default(),
            up_delay: LatencySummary::default(),
            down_losses: 0,
            up_losses: 0,
            capture,
            steps: 0,
            packet_hops: 0,
        }
    }

    /// The bottleneck's own round trip (both propagation delays).
    pub fn bottleneck_rtt(&self) -> Duration {
        self.down.config().delay + self.up.config().delay
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
        });
    }

    /// Runs to the end of the scenario.
    pub fn run(mut self) -> Outcome {
        // Give every flow a chance to send at time zero.
        for i in 0..self.flows.len() {
            self.drain_flow(i);
        }
        while let Some(t) = self.next_wakeup().filter(|t| *t <= self.end) {
            self.now = t;
            self.steps += 1;
            self.step();
        }
        self.drain_link(Direction::Down);
        self.drain_link(Direction::Up);
        Outcome {
            flows: self.flows,
            down: self.down,
            up: self.up,
            down_delay: self.down_delay,
            up_delay: self.up_delay,
            down_losses: self.down_losses,
            up_losses: self.up_losses,
            steps: self.steps,
            packet_hops: self.packet_hops,
            end: self.end,
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let mut next = [self.down.poll_timeout(), self.up.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        for f in &self.flows {
            for t in [
                f.app.poll_timeout(),
                f.access_down.next(),
                f.access_up.next(),
            ]
            .into_iter()
            .flatten()
            {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        }
        next
    }

    fn step(&mut self) {
        let now = self.now;
        for i in 0..self.flows.len() {
            if self.flows[i].app.poll_timeout().is_some_and(|t| t <= now) {
                self.flows[i].app.handle_timeout(now);
            }
            self.drain_flow(i);
            while let Some((_, p)) = pop_due(&mut self.flows[i].access_down, now) {
                self.down.handle_packet(now, p);
            }
            while let Some((at, p)) = pop_due(&mut self.flows[i].access_up, now) {
                self.deliver(at, i, End::Sender, p);
            }
        }
        if self.down.poll_timeout().is_some_and(|t| t <= now) {
            self.down.handle_timeout(now);
        }
        if self.up.poll_timeout().is_some_and(|t| t <= now) {
            self.up.handle_timeout(now);
        }
        self.drain_link(Direction::Down);
        self.drain_link(Direction::Up);
    }

    /// Sends everything flow `i` has to send now.
    fn drain_flow(&mut self, i: usize) {
        let now = self.now;
        while let Some((end, datagram)) = self.flows[i].app.poll_transmit(now) {
            let f = &mut self.flows[i];
            let id = ((i as u64) << FLOW_SHIFT) | f.next_seq;
            f.next_seq += 1;
            // A flow that emits a malformed datagram loses it, as a NIC would.
            let Ok(packet) = Packet::new(id, now, datagram) else {
                continue;
            };
            match end {
                End::Sender => {
                    f.metrics.sent_packets += 1;
                    f.metrics.sent_bytes += packet.len() as u64;
                    if f.access_down.delay.is_zero() {
                        self.down.handle_packet(now, packet);
                    } else {
                        f.access_down
                            .queue
                            .push_back((now + f.access_down.delay, packet));
                    }
                }
                End::Receiver => self.up.handle_packet(now, packet),
            }
        }
    }

    /// Routes what a bottleneck direction delivered and records its events.
    fn drain_link(&mut self, dir: Direction) {
        loop {
            let link = match dir {
                Direction::Down => &mut self.down,
                Direction::Up => &mut self.up,
            };
            if let Some(event) = link.poll_event() {
                self.on_link_event(dir, event);
                continue;
            }
            let Some((at, packet)) = link.poll_delivery() else {
                break;
            };
            self.packet_hops += 1;
            if let Some(sink) = &mut self.capture {
                sink.packet(at, dir, &packet.data);
            }
            let dst = packet.flow().dst;
            match (dir, self.routes.get(&dst).copied()) {
                (Direction::Down, Some((i, End::Receiver))) => {
                    self.deliver(at, i, End::Receiver, packet)
                }
                (Direction::Up, Some((i, End::Sender))) => {
                    let line = &mut self.flows[i].access_up;
                    if line.delay.is_zero() {
                        self.deliver(at, i, End::Sender, packet);
                    } else {
                        line.queue.push_back((at + line.delay, packet));
                    }
                }
                // No host there: the router drops it.
                _ => {}
            }
        }
    }

    fn on_link_event(&mut self, dir: Direction, event: LinkEvent) {
        let flow_of = |id: u64| (id >> FLOW_SHIFT) as usize;
        match event {
            LinkEvent::Dequeued {
                at,
                packet_id,
                queue_delay,
            } => match dir {
                Direction::Down => {
                    self.down_delay.record(queue_delay);
                    if let Some(f) = self.flows.get_mut(flow_of(packet_id)) {
                        f.metrics.on_queue_delay(at, queue_delay);
                    }
                }
                Direction::Up => self.up_delay.record(queue_delay),
            },
            LinkEvent::QueueDrop { packet, .. } => {
                if dir == Direction::Down
                    && let Some(f) = self.flows.get_mut(flow_of(packet.id))
                {
                    f.metrics.queue_drops += 1;
                }
            }
            LinkEvent::Lost { packet, .. } => {
                match dir {
                    Direction::Down => self.down_losses += 1,
                    Direction::Up => self.up_losses += 1,
                }
                if dir == Direction::Down
                    && let Some(f) = self.flows.get_mut(flow_of(packet.id))
                {
                    f.metrics.link_losses += 1;
                }
            }
            LinkEvent::Marked { .. }
            | LinkEvent::EcnRewritten { .. }
            | LinkEvent::Duplicated { .. }
            | LinkEvent::Reordered { .. } => {}
        }
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
        self.drain_flow(i);
    }
}

fn pop_due(line: &mut DelayLine, now: Instant) -> Option<(Instant, Packet)> {
    if line.next().is_some_and(|t| t <= now) {
        line.queue.pop_front()
    } else {
        None
    }
}
