//! The bottleneck: one [`Link`] per [`Direction`], with the accounting
//! every driver of it needs. The simulator's engine, the live router and
//! the transport's test harness all put packets in and take deliveries out
//! here, so the seed streams, the flow-in-packet-id encoding ([`flow_tag`]),
//! the per-flow charging of link events and the result summaries exist
//! once and cannot drift apart between virtual and real time.
//!
//! Driving it: [`Bottleneck::handle_packet`] when a packet reaches the
//! bottleneck, [`Bottleneck::handle_timeout`] at
//! [`Bottleneck::poll_timeout`], then [`Bottleneck::poll`] until it returns
//! `None`: each event is charged to the direction's totals and to the
//! packet's flow in the caller's [`FlowLedger`] before it is handed out.

pub mod flow_metrics;
pub mod flow_results;
pub mod flow_tag;
pub mod run_results;
pub mod summary;

use crate::direction::Direction;
use crate::network::Network;
use crate::{Link, LinkEvent, Packet};
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use flow_metrics::FlowMetrics;
use std::collections::VecDeque;
use std::time::Duration;
use summary::{LinkResults, QueueResults};

/// Where the bottleneck charges a flow's share of its events.
pub trait FlowLedger {
    /// The measurements of `flow`'s packets travelling in `dir`, or `None`
    /// when that flow (or that direction of it) is not accounted.
    fn metrics(&mut self, dir: Direction, flow: usize) -> Option<&mut FlowMetrics>;

    /// Whether the caller adds each flow's queue delays to its direction's
    /// with [`Bottleneck::add_queue_delays`] once the run is over: a delay
    /// charged to a flow is then recorded in one histogram, not two (the
    /// second record of each packet was 0.6% of a one-flow run).
    fn pools_queue_delays(&self) -> bool {
        false
    }
}

/// A ledger that accounts no flow: for drivers that only want the totals.
impl FlowLedger for () {
    fn metrics(&mut self, _: Direction, _: usize) -> Option<&mut FlowMetrics> {
        None
    }
}

/// What [`Bottleneck::poll`] hands out.
#[derive(Debug)]
pub enum BottleneckOutput {
    /// Something the link did, already counted. A dropped or lost packet
    /// comes back inside the event, for its buffer to be reused.
    Event(LinkEvent),
    /// A packet reached the far end of the link at `at`.
    Delivered {
        /// Arrival time at the far end (after serialization, propagation and any hold).
        at: Instant,
        /// The packet as delivered (ECN possibly marked or rewritten).
        packet: Packet,
    },
}

/// Both directions of the bottleneck and what they did.
pub struct Bottleneck {
    links: [Link; 2],
    /// Queue delay of every packet that left each queue.
    queue_delay: [LatencySummary; 2],
    /// Packets each link lost after transmitting them.
    losses: [u64; 2],
    /// Packet Too Big answers to packets one direction dropped for their
    /// size, waiting to be delivered by the other (toward their senders),
    /// indexed by the direction that delivers them.
    returned: [VecDeque<(Instant, Packet)>; 2],
}

impl Bottleneck {
    /// Builds both directions of `network` with the seed streams every
    /// driver shares (queues 1 and 2, links 3 and 4), so the live router
    /// draws what the simulator draws for the same seed.
    pub fn new(network: &Network, seed: u64) -> Bottleneck {
        let rng = |stream| crate::rng(seed, stream);
        let down_q = network.queue.build(rng(1));
        let up_q = network.queue_up.build(rng(2));
        Bottleneck {
            links: [
                Link::new(network.link.down.clone(), down_q, rng(3)),
                Link::new(network.link.up.clone(), up_q, rng(4)),
            ],
            queue_delay: Default::default(),
            losses: [0; 2],
            returned: Default::default(),
        }
    }

    /// Has both links count their dequeues through
    /// [`Bottleneck::poll_quiet`] without making each an event (see
    /// [`Link::keep_dequeues_apart`]): for a driver that polls only with
    /// it. Each dequeue is charged at the next such poll of its direction.
    pub fn keep_dequeues_apart(&mut self) {
        self.links.iter_mut().for_each(Link::keep_dequeues_apart);
    }

    /// The link carrying direction `dir`, with its queue, config and stats.
    #[inline]
    pub fn link(&self, dir: Direction) -> &Link {
        &self.links[dir.index()]
    }

    /// The bottleneck's own round trip (both propagation delays).
    pub fn round_trip(&self) -> Duration {
        self.link(Direction::Down).config().delay + self.link(Direction::Up).config().delay
    }

    /// A packet reaches the link of `dir` at `now`. Tag its id with
    /// [`flow_tag::packet_id`] for its events to be charged to its flow.
    /// A packet too big for the link's MTU answered with a Packet Too Big
    /// (`mtu_icmp`) makes that answer come out of [`Bottleneck::poll`] for
    /// the opposite direction, at once: the router that drops it stands
    /// at the link's entrance, next to the sender.
    pub fn handle_packet(&mut self, now: Instant, dir: Direction, packet: Packet) {
        let link = &mut self.links[dir.index()];
        link.handle_packet(now, packet);
        while let Some(reply) = link.poll_reply() {
            self.returned[dir.opposite().index()].push_back(reply);
        }
    }

    /// The next time the link of `dir` needs [`Bottleneck::handle_timeout`]
    /// (or has a returned Packet Too Big to hand out).
    #[inline]
    pub fn poll_timeout(&self, dir: Direction) -> Option<Instant> {
        let returned = self.returned[dir.index()].front().map(|(at, _)| *at);
        brisk_time::earliest(self.link(dir).poll_timeout(), returned)
    }

    /// Advances the link of `dir` to `now`.
    #[inline]
    pub fn handle_timeout(&mut self, now: Instant, dir: Direction) {
        self.links[dir.index()].handle_timeout(now);
    }

    /// Whether [`Bottleneck::poll`] has anything for `dir`.
    #[inline]
    pub fn has_output(&self, dir: Direction) -> bool {
        self.link(dir).has_output() || !self.returned[dir.index()].is_empty()
    }

    /// The next event or delivery of the link of `dir`, events first (they
    /// happened before the deliveries waiting behind them). Events are
    /// counted in the direction's totals and charged to their flow in
    /// `ledger` on the way out.
    // Inlined into its caller's loop: called out of line it returns each
    // output through memory (1.6% more instructions in a one-flow run).
    #[inline(always)]
    pub fn poll(
        &mut self,
        dir: Direction,
        ledger: &mut impl FlowLedger,
    ) -> Option<BottleneckOutput> {
        self.poll_keeping::<true>(dir, ledger)
    }

    /// [`Bottleneck::poll`] for a driver that keeps no trace: a
    /// [`LinkEvent::Dequeued`], one per packet, is counted and charged but
    /// not handed out.
    #[inline(always)]
    pub fn poll_quiet(
        &mut self,
        dir: Direction,
        ledger: &mut impl FlowLedger,
    ) -> Option<BottleneckOutput> {
        self.poll_keeping::<false>(dir, ledger)
    }

    /// The two polls: `DEQUEUED` says whether dequeue events are handed out.
    #[inline(always)]
    fn poll_keeping<const DEQUEUED: bool>(
        &mut self,
        dir: Direction,
        ledger: &mut impl FlowLedger,
    ) -> Option<BottleneckOutput> {
        if let Some((at, packet)) = self.returned[dir.index()].pop_front() {
            return Some(BottleneckOutput::Delivered { at, packet });
        }
        if !DEQUEUED {
            let summary = &mut self.queue_delay[dir.index()];
            for (at, packet_id, queue_delay) in self.links[dir.index()].kept_dequeues().drain(..) {
                account_dequeue(summary, dir, at, packet_id, queue_delay, ledger);
            }
        }
        while let Some(event) = self.links[dir.index()].poll_event() {
            self.account(dir, &event, ledger);
            if DEQUEUED || !matches!(event, LinkEvent::Dequeued { .. }) {
                return Some(BottleneckOutput::Event(event));
            }
        }
        let (at, packet) = self.links[dir.index()].poll_delivery()?;
        Some(BottleneckOutput::Delivered { at, packet })
    }

    fn account(&mut self, dir: Direction, event: &LinkEvent, ledger: &mut impl FlowLedger) {
        match event {
            LinkEvent::Dequeued {
                at,
                packet_id,
                queue_delay,
            } => account_dequeue(
                &mut self.queue_delay[dir.index()],
                dir,
                *at,
                *packet_id,
                *queue_delay,
                ledger,
            ),
            LinkEvent::QueueDrop { packet, .. } => {
                if let Some(m) = charge(ledger, dir, packet.id) {
                    m.queue_drops += 1;
                }
            }
            LinkEvent::Lost { packet, .. } => {
                self.losses[dir.index()] += 1;
                if let Some(m) = charge(ledger, dir, packet.id) {
                    m.link_losses += 1;
                }
            }
            LinkEvent::Marked { packet_id, .. } => {
                if let Some(m) = charge(ledger, dir, *packet_id) {
                    m.marks += 1;
                }
            }
            LinkEvent::EcnRewritten { .. }
            | LinkEvent::Duplicated { .. }
            | LinkEvent::TooBig { .. }
            | LinkEvent::Reordered { .. } => {}
        }
    }

    /// Queue delay of every packet that left the queue of `dir`.
    pub fn queue_delay(&self, dir: Direction) -> &LatencySummary {
        &self.queue_delay[dir.index()]
    }

    /// Adds a flow's queue delays in `dir`, charged to it by a ledger that
    /// [pools](FlowLedger::pools_queue_delays) them, to the direction's.
    pub fn add_queue_delays(&mut self, dir: Direction, delays: &LatencySummary) {
        self.queue_delay[dir.index()].merge(delays);
    }

    /// Packets the link of `dir` lost after transmitting them.
    pub fn losses(&self, dir: Direction) -> u64 {
        self.losses[dir.index()]
    }

    /// What the link of `dir` carried over a run of `duration` that began
    /// at [`Instant::ZERO`].
    pub fn link_results(&self, dir: Direction, duration: Duration) -> LinkResults {
        let link = self.link(dir);
        let st = link.stats();
        let secs = duration.as_secs_f64().max(1e-9);
        // A trace's capacity varies: measure use against what it offered.
        let utilization = match link.offered_bytes(Instant::ZERO + duration) {
            Some(offered) => st.transmitted_bytes as f64 / offered.max(1) as f64,
            None => st.busy.as_secs_f64() / secs,
        };
        LinkResults {
            utilization: utilization.min(1.0),
            transmitted_packets: st.transmitted_packets,
            transmitted_bytes: st.transmitted_bytes,
            throughput_mbps: st.transmitted_bytes as f64 * 8.0 / secs / 1e6,
            lost_packets: self.losses(dir),
        }
    }

    /// What the queue of `dir` did.
    pub fn queue_results(&self, dir: Direction) -> QueueResults {
        let q = self.link(dir).queue();
        let st = q.stats();
        QueueResults {
            kind: q.name(),
            drops: st.drops(),
            drops_overflow: st.dropped_overflow,
            drops_aqm: st.dropped_aqm,
            marks: st.marked,
            enqueued_packets: st.enqueued_packets,
            delay_ms: self.queue_delay(dir).percentiles(),
        }
    }
}

/// Charges a dequeue's queue delay to its flow, and to the link's summary
/// `summary` unless the ledger pools the flows' delays itself.
fn account_dequeue(
    summary: &mut LatencySummary,
    dir: Direction,
    at: Instant,
    packet_id: u64,
    queue_delay: Duration,
    ledger: &mut impl FlowLedger,
) {
    let pooled = ledger.pools_queue_delays();
    match charge(ledger, dir, packet_id) {
        Some(m) => {
            m.on_queue_delay(at, queue_delay);
            if !pooled {
                summary.record(queue_delay);
            }
        }
        None => summary.record(queue_delay),
    }
}

/// The measurements a packet's events are charged to, if its flow is
/// tagged in its id and accounted in `ledger`.
fn charge<L: FlowLedger>(ledger: &mut L, dir: Direction, id: u64) -> Option<&mut FlowMetrics> {
    flow_tag::flow_of(id).and_then(|f| ledger.metrics(dir, f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;
    use brisk_wire::ip::udp_datagram;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

    /// Two tracked flows, each direction accounted.
    #[derive(Default)]
    struct Ledger([[FlowMetrics; 2]; 2]);

    impl FlowLedger for Ledger {
        fn metrics(&mut self, dir: Direction, flow: usize) -> Option<&mut FlowMetrics> {
            self.0.get_mut(flow).map(|f| &mut f[dir.index()])
        }
    }

    fn hosts(v6: bool) -> (SocketAddr, SocketAddr) {
        let (a, b): (IpAddr, IpAddr) = if v6 {
            (
                Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1).into(),
                Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1).into(),
            )
        } else {
            (
                Ipv4Addr::new(10, 1, 0, 1).into(),
                Ipv4Addr::new(10, 2, 0, 1).into(),
            )
        };
        (SocketAddr::new(a, 40_000), SocketAddr::new(b, 42_000))
    }

    /// Runs both links to the end, returning deliveries per direction.
    fn run_out(b: &mut Bottleneck, ledger: &mut impl FlowLedger) -> [u64; 2] {
        let mut delivered = [0; 2];
        loop {
            for dir in Direction::BOTH {
                while let Some(out) = b.poll(dir, ledger) {
                    if let BottleneckOutput::Delivered { .. } = out {
                        delivered[dir.index()] += 1;
                    }
                }
            }
            let next = Direction::BOTH
                .into_iter()
                .filter_map(|d| b.poll_timeout(d).map(|t| (t, d)))
                .min();
            let Some((t, dir)) = next else {
                return delivered;
            };
            b.handle_timeout(t, dir);
        }
    }

    #[test]
    fn a_packet_too_big_comes_back_at_once_from_the_other_direction() {
        let text = "[link.down]\ndelay = \"5ms\"\nmtu = 1400\nmtu_icmp = true\n\
                    [link.up]\ndelay = \"5ms\"\n";
        let network = Network::parse(text).unwrap();
        for v6 in [false, true] {
            let mut b = Bottleneck::new(&network, 1);
            let (s, r) = hosts(v6);
            let at = Instant::from_millis(3);
            for (seq, len) in [(0, 1300), (1, 1400)] {
                let d = udp_datagram(s, r, Ecn::NotEct, &vec![0; len]).unwrap();
                let p = Packet::new(flow_tag::packet_id(Some(1), seq), at, d).unwrap();
                b.handle_packet(at, Direction::Down, p);
            }
            assert!(b.has_output(Direction::Up), "v6 {v6}");
            assert_eq!(b.poll_timeout(Direction::Up), Some(at));
            let Some(BottleneckOutput::Delivered { at: back, packet }) =
                b.poll(Direction::Up, &mut ())
            else {
                panic!("v6 {v6}: no Packet Too Big");
            };
            let ptb = brisk_wire::icmp::parse_packet_too_big(&packet.data).unwrap();
            assert_eq!((back, ptb.mtu, ptb.quoted_src), (at, 1400, s), "v6 {v6}");
            assert_eq!(flow_tag::flow_of(packet.id), Some(1));
            let delivered = run_out(&mut b, &mut Ledger::default());
            assert_eq!(delivered, [1, 0], "v6 {v6}: only the small one arrives");
            assert_eq!(b.link(Direction::Down).stats().too_big_packets, 1);
        }
    }

    #[test]
    fn link_events_are_charged_to_the_flow_in_the_packet_id_and_to_the_totals() {
        // A 4-packet FIFO down, 10 Mbit/s each way: 10 back-to-back
        // packets of flow 1 and 2 untracked ones overflow it; 3 packets of
        // flow 0 go up.
        let text = "[link.down]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
                    [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
                    [queue.fifo]\nlimit_packets = 4\n";
        let network = Network::parse(text).unwrap();
        for v6 in [false, true] {
            let mut b = Bottleneck::new(&network, 1);
            let (s, r) = hosts(v6);
            let data = |seq| {
                let d = udp_datagram(s, r, Ecn::Ect0, &[0; 1000]).unwrap();
                Packet::new(flow_tag::packet_id(Some(1), seq), Instant::ZERO, d).unwrap()
            };
            for seq in 0..10 {
                b.handle_packet(Instant::ZERO, Direction::Down, data(seq));
            }
            for seq in 0..2 {
                let d = udp_datagram(s, r, Ecn::NotEct, &[0; 1000]).unwrap();
                let p = Packet::new(flow_tag::packet_id(None, seq), Instant::ZERO, d).unwrap();
                b.handle_packet(Instant::ZERO, Direction::Down, p);
            }
            for seq in 0..3 {
                let d = udp_datagram(r, s, Ecn::NotEct, &[0; 40]).unwrap();
                let p = Packet::new(flow_tag::packet_id(Some(0), seq), Instant::ZERO, d).unwrap();
                b.handle_packet(Instant::ZERO, Direction::Up, p);
            }
            let mut ledger = Ledger::default();
            let delivered = run_out(&mut b, &mut ledger);
            let [f0, f1] = &ledger.0;
            let (down, up) = (&f1[0], &f0[1]);
            let q = b.queue_results(Direction::Down);
            // One packet goes on the wire at once and four wait: flow 1
            // loses five, and both untracked packets drop too.
            assert_eq!(q.drops, 7, "v6 {v6}");
            assert_eq!(delivered, [5, 3], "v6 {v6}");
            assert_eq!(down.queue_drops, 5, "v6 {v6}");
            assert_eq!(down.queue_delay.len(), 5, "v6 {v6}");
            assert_eq!(up.queue_delay.len(), 3, "v6 {v6}");
            // The totals hold every packet, tracked or not.
            assert_eq!(b.queue_delay(Direction::Down).len(), 5, "v6 {v6}");
            assert_eq!(q.delay_ms.count, 5);
            // Nothing is charged to a direction or flow it did not cross.
            assert_eq!(f0[0].queue_delay.len() + f1[1].queue_delay.len(), 0);
            let l = b.link_results(Direction::Down, Duration::from_secs(1));
            assert_eq!((l.transmitted_packets, l.lost_packets), (5, 0));
        }
    }

    #[test]
    fn a_quiet_poll_hands_out_all_but_the_dequeues_and_charges_the_same_kept_apart_or_not() {
        // The FIFO overflows: drops, dequeues and deliveries interleave.
        let text = "[link.down]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
                    [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
                    [queue.fifo]\nlimit_packets = 3\n";
        let network = Network::parse(text).unwrap();
        let (s, r) = hosts(true);
        // `apart`: the dequeues are kept apart, not made events.
        let run = |quiet: bool, apart: bool| {
            let mut b = Bottleneck::new(&network, 1);
            if apart {
                b.keep_dequeues_apart();
            }
            for seq in 0..8 {
                let d = udp_datagram(s, r, Ecn::NotEct, &[0; 900]).unwrap();
                let at = Instant::from_micros(200 * seq);
                let p = Packet::new(flow_tag::packet_id(Some(0), seq), at, d).unwrap();
                b.handle_packet(at, Direction::Down, p);
            }
            let mut ledger = Ledger::default();
            let mut out = Vec::new();
            loop {
                while let Some(o) = if quiet {
                    b.poll_quiet(Direction::Down, &mut ledger)
                } else {
                    b.poll(Direction::Down, &mut ledger)
                } {
                    if !matches!(o, BottleneckOutput::Event(LinkEvent::Dequeued { .. })) {
                        out.push(format!("{o:?}"));
                    }
                }
                let Some(t) = b.poll_timeout(Direction::Down) else {
                    break;
                };
                b.handle_timeout(t, Direction::Down);
            }
            let m = &ledger.0[0][0];
            let delays = b.queue_results(Direction::Down).delay_ms;
            (out, m.queue_drops, m.queue_delay.percentiles(), delays)
        };
        let (loud, quiet) = (run(false, false), run(true, false));
        assert_eq!(loud.0.len(), 8, "{:?}", loud.0);
        assert_eq!((loud.1, loud.3.count), (3, 5));
        assert_eq!(loud, quiet);
        assert_eq!(run(true, true), quiet);
    }

    /// [`Ledger`], pooling the queue delays it is charged.
    #[derive(Default)]
    struct Pooling(Ledger);

    impl FlowLedger for Pooling {
        fn metrics(&mut self, dir: Direction, flow: usize) -> Option<&mut FlowMetrics> {
            self.0.metrics(dir, flow)
        }
        fn pools_queue_delays(&self) -> bool {
            true
        }
    }

    #[test]
    fn pooled_queue_delays_added_back_give_the_same_totals() {
        // Packets of two flows and untracked ones wait behind each other.
        let text = "[link.down]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n\
                    [link.up]\nrate = \"10Mbit\"\ndelay = \"5ms\"\n";
        let network = Network::parse(text).unwrap();
        let (s, r) = hosts(false);
        let fill = |b: &mut Bottleneck| {
            for seq in 0..12 {
                let d = udp_datagram(s, r, Ecn::NotEct, &vec![0; 200 + 100 * seq]).unwrap();
                let flow = [Some(0), Some(1), None][seq % 3];
                let at = Instant::from_micros(300 * seq as u64);
                let p = Packet::new(flow_tag::packet_id(flow, seq as u64), at, d).unwrap();
                b.handle_packet(at, Direction::Down, p);
            }
        };
        let mut plain = Bottleneck::new(&network, 1);
        fill(&mut plain);
        run_out(&mut plain, &mut Ledger::default());
        let mut pooled = Bottleneck::new(&network, 1);
        fill(&mut pooled);
        let mut ledger = Pooling::default();
        run_out(&mut pooled, &mut ledger);
        // Only the untracked packets went to the direction's own record.
        assert_eq!(pooled.queue_delay(Direction::Down).len(), 4);
        for f in &ledger.0.0 {
            assert_eq!(f[0].queue_delay.len(), 4);
            pooled.add_queue_delays(Direction::Down, &f[0].queue_delay);
        }
        let delays = |b: &Bottleneck| b.queue_results(Direction::Down).delay_ms;
        assert_eq!(delays(&pooled), delays(&plain));
        assert!(
            delays(&plain).max > delays(&plain).min,
            "{:?}",
            delays(&plain)
        );
    }
}
