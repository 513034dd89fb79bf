//! [`Optimizer`]: the connection table, the handshake tracker and the
//! per-subscriber scheduler around the flows of `flow.rs`.

use crate::config::Config;
use crate::flow::{Ctx, Flow, Negotiated, Phase};
use crate::hash::Keyed;
use crate::segment::{self, Read, Seen};
use crate::stats::{Reason, Stats};
use crate::subscriber::Subscriber;
use crate::{ConnectionKey, Side, Transmit};
use brisk_time::{Deadlines, Instant};
use brisk_wire::tcp::TcpFlags;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;

/// A transparent TCP optimizer between the internet (server side) and a
/// mobile network (client side).
///
/// Inputs: [`Optimizer::handle_packet`] with each datagram and the side it
/// arrived from, [`Optimizer::handle_timeout`] when [`Optimizer::poll_timeout`]
/// is due. Output: [`Optimizer::poll_transmit`] until it returns `None`,
/// after every input. Nothing a peer sends can make it panic, and it holds
/// at most [`Config::max_total_buffer_bytes`] of datagrams.
#[derive(Debug)]
pub struct Optimizer {
    config: Config,
    /// Every tracked connection, by its place in `slab`: looked up by
    /// hash once per packet, then named by that place (a small integer)
    /// in the timers and the subscribers' round robins.
    index: HashMap<ConnectionKey, FlowId, Keyed>,
    slab: Vec<Option<Tracked>>,
    /// Places in `slab` left by forgotten connections, reused first.
    free: Vec<FlowId>,
    subscribers: HashMap<IpAddr, Sub, Keyed>,
    /// Each flow's next timer (RACK, probe, idle expiry).
    flow_timers: Deadlines<FlowId>,
    /// Each subscriber's next pacing release.
    pacing_timers: Deadlines<IpAddr>,
    out: VecDeque<Transmit>,
    total_held: usize,
    stats: Stats,
}

/// A connection's place in the optimizer's table.
type FlowId = u32;

/// A tracked connection and, while it is optimized, its place in its
/// subscriber's round robin (the order it joined).
#[derive(Debug)]
struct Tracked {
    flow: Flow,
    slot: Option<u64>,
}

/// A flow with a segment it may send now.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    id: FlowId,
    /// The segment's offset and sequence length ([`Flow::sendable`]).
    off: u64,
    len: u64,
    /// The flow's bytes in flight.
    in_flight: u64,
}

/// A subscriber's estimators and its optimized flows, with what the
/// scheduler needs kept up to date as flows change, so that sending one
/// segment never visits every flow of a subscriber with thousands.
#[derive(Debug)]
struct Sub {
    state: Subscriber,
    /// Optimized flows in the round robin.
    members: usize,
    /// Flows with a segment they may send now, by slot, with what the
    /// scheduler weighs (kept current by [`Sub::update`], which runs after
    /// every change to a member), so a pick reads no flow.
    waiting: BTreeMap<u64, Waiting>,
    /// The slot the next joining flow takes.
    next_slot: u64,
    /// Sequence bytes in flight over all its members.
    in_flight: u64,
    /// Round robin: the first slot considered at the next pick.
    cursor: u64,
    /// Flows with something in flight or waiting to be sent.
    active: u64,
}

impl Sub {
    fn new(now: Instant, config: &Config) -> Sub {
        Sub {
            state: Subscriber::new(now, config),
            members: 0,
            waiting: BTreeMap::new(),
            next_slot: 0,
            in_flight: 0,
            cursor: 0,
            active: 0,
        }
    }

    /// A flow joins the round robin (it holds nothing yet): its slot.
    fn join(&mut self) -> u64 {
        self.members += 1;
        self.next_slot += 1;
        self.next_slot - 1
    }

    /// A flow leaves the round robin from `slot`, with what it had in
    /// flight.
    fn leave(&mut self, slot: Option<u64>, in_flight: u64) {
        if let Some(slot) = slot {
            self.members = self.members.saturating_sub(1);
            let was_waiting = self.waiting.remove(&slot).is_some();
            self.in_flight = self.in_flight.saturating_sub(in_flight);
            if was_waiting || in_flight > 0 {
                self.active = self.active.saturating_sub(1);
            }
        }
    }

    /// A member's in flight went from `before` to the flow's now, and it
    /// may or may not have something to send now.
    fn update(&mut self, id: FlowId, slot: Option<u64>, before: u64, flow: &Flow) {
        let Some(slot) = slot else {
            return;
        };
        self.in_flight = (self.in_flight + flow.in_flight).saturating_sub(before);
        let (was_waiting, waiting) = if let Some((off, len)) = flow.sendable() {
            let w = Waiting {
                id,
                off,
                len,
                in_flight: flow.in_flight,
            };
            (self.waiting.insert(slot, w).is_some(), true)
        } else {
            (self.waiting.remove(&slot).is_some(), false)
        };
        match (was_waiting || before > 0, waiting || flow.in_flight > 0) {
            (false, true) => self.active += 1,
            (true, false) => self.active = self.active.saturating_sub(1),
            _ => {}
        }
    }
}

/// A subscriber as the optimizer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriberInfo {
    /// Bytes its flows may have in flight together.
    pub budget_bytes: usize,
    /// Sequence bytes in flight over all its flows.
    pub in_flight_bytes: u64,
    /// Windowed maximum delivery rate, bits per second, once measured.
    pub delivery_rate_bps: Option<u64>,
    /// Windowed minimum RTT toward the client, once measured.
    pub min_rtt: Option<std::time::Duration>,
    /// The rate its sends are paced at, bits per second.
    pub pacing_rate_bps: u64,
}

/// A connection as the optimizer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// Where it is in its life.
    pub phase: Phase,
    /// Datagram bytes held for it, undelivered.
    pub held_bytes: usize,
    /// Sequence bytes sent toward the client and not yet acknowledged.
    pub in_flight_bytes: u64,
}

impl Optimizer {
    /// An optimizer tracking nothing yet.
    pub fn new(config: Config) -> Optimizer {
        Optimizer {
            config,
            index: HashMap::default(),
            slab: Vec::new(),
            free: Vec::new(),
            subscribers: HashMap::default(),
            flow_timers: Deadlines::default(),
            pacing_timers: Deadlines::default(),
            out: VecDeque::new(),
            total_held: 0,
            stats: Stats::default(),
        }
    }

    /// Totals so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Datagram bytes held for all connections.
    pub fn held_bytes(&self) -> usize {
        self.total_held
    }

    /// Connections tracked (in handshake, optimized, or remembered as
    /// pass-through).
    pub fn connection_count(&self) -> usize {
        self.index.len()
    }

    /// One connection's state, if tracked.
    pub fn connection(&self, key: &ConnectionKey) -> Option<ConnectionInfo> {
        self.flow_of(key).map(|f| ConnectionInfo {
            phase: f.phase,
            held_bytes: f.held_bytes(),
            in_flight_bytes: f.in_flight,
        })
    }

    /// A subscriber's in-flight budget, bytes, while it has optimized flows.
    pub fn subscriber_budget(&self, client: IpAddr) -> Option<usize> {
        self.subscribers
            .get(&client)
            .map(|s| s.state.budget(&self.config))
    }

    /// A subscriber's measurements, budget and pacing, while it has
    /// optimized flows.
    pub fn subscriber(&self, client: IpAddr) -> Option<SubscriberInfo> {
        let s = self.subscribers.get(&client)?;
        Some(SubscriberInfo {
            budget_bytes: s.state.budget(&self.config),
            in_flight_bytes: s.in_flight,
            delivery_rate_bps: s.state.rate_bytes_per_s().map(|r| r * 8),
            min_rtt: s.state.min_rtt(),
            pacing_rate_bps: (s.state.pacing_rate(&self.config) * 8.0) as u64,
        })
    }

    /// Stops optimizing one connection: nothing new is acknowledged early,
    /// what is held is delivered, then its packets pass through. False if
    /// it was not being optimized.
    pub fn stop_connection(&mut self, key: &ConnectionKey) -> bool {
        let Some(&id) = self.index.get(key) else {
            return false;
        };
        self.stop_id(id)
    }

    fn stop_id(&mut self, id: FlowId) -> bool {
        let optimizing = self.flow(id).is_some_and(|f| f.phase == Phase::Optimizing);
        if optimizing {
            self.with_flow(id, |flow, ctx| flow.fall_back(Reason::Requested, ctx));
        }
        optimizing
    }

    /// Stops optimizing every connection (before an upgrade, or when memory
    /// runs short); each passes through once its held data is delivered.
    pub fn stop_all(&mut self) {
        for id in 0..self.slab.len() {
            self.stop_id(id as FlowId);
        }
    }

    /// The flow at `id`, if tracked.
    fn flow(&self, id: FlowId) -> Option<&Flow> {
        self.slab.get(id as usize)?.as_ref().map(|t| &t.flow)
    }

    fn flow_mut(&mut self, id: FlowId) -> Option<&mut Flow> {
        self.slab
            .get_mut(id as usize)?
            .as_mut()
            .map(|t| &mut t.flow)
    }

    fn flow_of(&self, key: &ConnectionKey) -> Option<&Flow> {
        self.index.get(key).and_then(|&id| self.flow(id))
    }

    /// The next datagram to send, and which side it goes to.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// When [`Optimizer::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        brisk_time::earliest(self.flow_timers.first(), self.pacing_timers.first())
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(id) = self.flow_timers.pop_due(now) {
            let Some(flow) = self.flow(id) else {
                continue;
            };
            let ip = flow.client.ip();
            if now.saturating_duration_since(flow.last_seen) >= self.config.idle_timeout {
                self.stats.idle_expired += 1;
                self.with_flow(id, |flow, ctx| flow.end(ctx));
                self.forget(id);
                continue;
            }
            self.with_flow(id, |flow, ctx| flow.handle_timeout(now, ctx));
            self.rearm(id);
            // Losses found or a probe answered may free the budget.
            self.schedule(now, ip);
        }
        while let Some(ip) = self.pacing_timers.pop_due(now) {
            self.schedule(now, ip);
        }
    }

    /// A datagram arrived from `from`. Whatever the optimizer does not act
    /// on is queued for the other side exactly as it came.
    pub fn handle_packet(&mut self, now: Instant, from: Side, datagram: Vec<u8>) {
        match segment::read(&datagram) {
            Read::NotTcp => {
                self.stats.not_tcp += 1;
                self.pass(from, datagram);
            }
            Read::Broken => {
                self.stats.broken += 1;
                self.pass(from, datagram);
            }
            Read::Segment(seen) => self.on_segment(now, from, &seen, datagram),
        }
    }

    fn pass(&mut self, from: Side, datagram: Vec<u8>) {
        self.stats.passed_untouched += 1;
        self.out.push_back(Transmit {
            toward: from.other(),
            datagram,
        });
    }

    fn on_segment(&mut self, now: Instant, from: Side, seen: &Seen, datagram: Vec<u8>) {
        let (key, mirrored) = match from {
            Side::Client => (
                ConnectionKey::new(seen.src, seen.dst),
                ConnectionKey::new(seen.dst, seen.src),
            ),
            Side::Server => (
                ConnectionKey::new(seen.dst, seen.src),
                ConnectionKey::new(seen.src, seen.dst),
            ),
        };
        if mirrored != key
            && let Some(&other) = self.index.get(&mirrored)
        {
            // A packet of a tracked connection on the other interface: a
            // routing loop or asymmetric integration.
            let reason = if seen.has(TcpFlags::SYN) {
                Reason::SynSeenTwice
            } else {
                Reason::WrongSide
            };
            self.give_up(other, reason);
            self.pass(from, datagram);
            return;
        }
        let Some(&id) = self.index.get(&key) else {
            self.maybe_track(now, from, key, seen);
            self.pass(from, datagram);
            return;
        };
        let Some(flow) = self.flow_mut(id) else {
            self.pass(from, datagram);
            return;
        };
        flow.last_seen = now;
        let phase = flow.phase;
        match phase {
            Phase::SynSeen | Phase::SynAckSeen => {
                let mut datagram = datagram;
                if self.handshake(now, from, id, phase, seen, &mut datagram) {
                    self.stats.handshake_windows_lowered += 1;
                    self.out.push_back(Transmit {
                        toward: from.other(),
                        datagram,
                    });
                } else {
                    self.pass(from, datagram);
                }
            }
            Phase::PassThrough => {
                if from == Side::Client && is_bare_syn(seen) {
                    // The tuple reused after a close: a new connection.
                    self.forget(id);
                    self.maybe_track(now, from, key, seen);
                }
                self.pass(from, datagram);
            }
            Phase::Optimizing | Phase::Draining => {
                if seen.has(TcpFlags::SYN) {
                    let odd = !(from == Side::Server && seen.has(TcpFlags::ACK));
                    if odd {
                        self.give_up(id, Reason::SynSeenTwice);
                    }
                    self.pass(from, datagram);
                    return;
                }
                let forward = self.with_flow(id, |flow, ctx| match from {
                    Side::Server => flow.handle_server_segment(now, seen, datagram, ctx),
                    Side::Client => flow.handle_client_segment(now, seen, datagram, ctx),
                });
                if let Some(Some(d)) = forward {
                    if from == Side::Server {
                        self.stats.passed_untouched += 1;
                    }
                    self.out.push_back(Transmit {
                        toward: from.other(),
                        datagram: d,
                    });
                }
                self.schedule(now, key.client.ip());
            }
        }
    }

    /// A packet of an untracked connection: a client's SYN starts tracking
    /// (or is remembered as refused).
    fn maybe_track(&mut self, now: Instant, from: Side, key: ConnectionKey, seen: &Seen) {
        if from != Side::Client || !is_bare_syn(seen) {
            return;
        }
        if self.index.len() >= self.config.max_connections {
            self.stats.refuse(Reason::TableFull);
            return;
        }
        let mut flow = Flow::new(now, seen);
        if seen.options.unknown || seen.payload_len > 0 {
            self.stats.refuse(Reason::UnknownSynOption);
            flow.phase = Phase::PassThrough;
        }
        let tracked = Some(Tracked { flow, slot: None });
        let id = match self.free.pop() {
            Some(id) => {
                self.slab[id as usize] = tracked;
                id
            }
            None => {
                // `max_connections` bounds the table far below 2^32.
                let Ok(id) = FlowId::try_from(self.slab.len()) else {
                    self.stats.refuse(Reason::TableFull);
                    return;
                };
                self.slab.push(tracked);
                id
            }
        };
        self.index.insert(key, id);
        self.flow_timers
            .rearm(id, Some(now + self.config.idle_timeout));
    }

    /// A packet of a connection in its handshake; true if the optimizer
    /// lowered the window of the client's handshake ACK in `datagram`.
    fn handshake(
        &mut self,
        now: Instant,
        from: Side,
        id: FlowId,
        phase: Phase,
        seen: &Seen,
        datagram: &mut [u8],
    ) -> bool {
        let Some(Some(Tracked { flow, slot })) = self.slab.get_mut(id as usize) else {
            return false;
        };
        let mut lowered = false;
        let syn = seen.has(TcpFlags::SYN);
        let ack = seen.has(TcpFlags::ACK);
        let refusal = match (phase, from) {
            _ if seen.has(TcpFlags::RST) => Some(Reason::Closed),
            (Phase::SynSeen, Side::Client) if is_bare_syn(seen) => (seen.seq != flow.client_isn
                || seen.options != flow.syn_options)
                .then_some(Reason::SynSeenTwice),
            (Phase::SynSeen, Side::Server) if syn && ack => {
                if seen.ack != flow.client_isn.wrapping_add(1) {
                    Some(Reason::AsymmetricRouting)
                } else if seen.options.unknown || seen.payload_len > 0 {
                    Some(Reason::UnknownSynOption)
                } else if !(seen.options.sack_permitted && flow.syn_options.sack_permitted) {
                    Some(Reason::NoSack)
                } else {
                    flow.server_isn = seen.seq;
                    let both_scale = seen.options.window_scale.is_some()
                        && flow.syn_options.window_scale.is_some();
                    flow.negotiated = Negotiated {
                        client_window_shift: if both_scale {
                            flow.syn_options.window_scale.unwrap_or(0)
                        } else {
                            0
                        },
                        timestamps: seen.options.timestamps.is_some()
                            && flow.syn_options.timestamps.is_some(),
                        client_mss: flow.syn_options.mss.unwrap_or(536),
                    };
                    flow.phase = Phase::SynAckSeen;
                    flow.synack_at = Some(now);
                    None
                }
            }
            (Phase::SynAckSeen, Side::Server) if syn && ack => {
                // A repeated SYN-ACK: which one the client answers is unknown.
                flow.synack_at = None;
                (seen.seq != flow.server_isn).then_some(Reason::SynSeenTwice)
            }
            (Phase::SynAckSeen, Side::Client) if is_bare_syn(seen) => {
                (seen.seq != flow.client_isn).then_some(Reason::SynSeenTwice)
            }
            (Phase::SynAckSeen, Side::Client)
                if ack
                    && !syn
                    && seen.ack == flow.server_isn.wrapping_add(1)
                    && seen.seq == flow.client_isn.wrapping_add(1) =>
            {
                let negotiated = flow.negotiated;
                // Payload bytes the buffers can take (nine tenths of the
                // datagram bytes, for headers), as later local ACKs offer.
                let room = self.config.max_connection_buffer_bytes.min(
                    self.config
                        .max_total_buffer_bytes
                        .saturating_sub(self.total_held),
                ) as u64
                    / 10
                    * 9;
                lowered = flow.establish(seen, negotiated, room, datagram);
                self.stats.optimized_connections += 1;
                let sub = self
                    .subscribers
                    .entry(flow.client.ip())
                    .or_insert_with(|| Sub::new(now, &self.config));
                if let Some(t) = flow.synack_at.take() {
                    sub.state.on_handshake_rtt(now.saturating_duration_since(t));
                }
                *slot = Some(sub.join());
                None
            }
            // Anything else before the handshake completes means this box
            // sees only part of the conversation.
            _ => Some(Reason::AsymmetricRouting),
        };
        if let Some(r) = refusal {
            self.stats.refuse(r);
            flow.phase = Phase::PassThrough;
        }
        lowered
    }

    /// Stops optimizing `id` for good at once: an optimizing flow drains,
    /// one in handshake is refused.
    fn give_up(&mut self, id: FlowId, reason: Reason) {
        let Some(phase) = self.flow(id).map(|f| f.phase) else {
            return;
        };
        match phase {
            Phase::SynSeen | Phase::SynAckSeen => {
                self.stats.refuse(reason);
                if let Some(f) = self.flow_mut(id) {
                    f.phase = Phase::PassThrough;
                }
            }
            Phase::Optimizing | Phase::Draining => {
                self.with_flow(id, |flow, ctx| flow.fall_back(reason, ctx));
            }
            Phase::PassThrough => {}
        }
    }

    /// Runs `f` on a flow with its subscriber, then re-arms its timer and
    /// takes it off its subscriber once it passes through.
    fn with_flow<R>(
        &mut self,
        id: FlowId,
        f: impl FnOnce(&mut Flow, &mut Ctx<'_>) -> R,
    ) -> Option<R> {
        let Tracked { flow, slot } = self.slab.get_mut(id as usize)?.as_mut()?;
        let ip = flow.client.ip();
        let sub = self.subscribers.get_mut(&ip)?;
        let before = flow.in_flight;
        let mut ctx = Ctx {
            config: &self.config,
            sub: &mut sub.state,
            out: &mut self.out,
            stats: &mut self.stats,
            total_held: &mut self.total_held,
        };
        let r = f(flow, &mut ctx);
        sub.update(id, *slot, before, flow);
        let idle = flow.last_seen + self.config.idle_timeout;
        let deadline = flow.deadline().map_or(idle, |d| d.min(idle));
        self.flow_timers.rearm(id, Some(deadline));
        if flow.phase == Phase::PassThrough {
            sub.leave(slot.take(), flow.in_flight);
            if sub.members == 0 {
                self.subscribers.remove(&ip);
                self.pacing_timers.rearm(ip, None);
            }
        }
        Some(r)
    }

    /// Arms a flow's timer: its earliest RACK or probe deadline, or its
    /// idle expiry.
    fn rearm(&mut self, id: FlowId) {
        let deadline = self.flow(id).map(|flow| {
            let idle = flow.last_seen + self.config.idle_timeout;
            flow.deadline().map_or(idle, |d| d.min(idle))
        });
        self.flow_timers.rearm(id, deadline);
    }

    /// Forgets a connection entirely; its place in the table is reused.
    fn forget(&mut self, id: FlowId) {
        let Some(Tracked { flow, slot }) = self.slab.get_mut(id as usize).and_then(Option::take)
        else {
            return;
        };
        debug_assert_eq!(flow.held_bytes(), 0, "a forgotten flow holds nothing");
        self.index
            .remove(&ConnectionKey::new(flow.client, flow.server));
        self.free.push(id);
        self.flow_timers.rearm(id, None);
        let ip = flow.client.ip();
        if let Some(sub) = self.subscribers.get_mut(&ip) {
            sub.leave(slot, flow.in_flight);
            if sub.members == 0 {
                self.subscribers.remove(&ip);
                self.pacing_timers.rearm(ip, None);
            }
        }
    }

    /// Sends what a subscriber's flows may send now: round robin over the
    /// flows with something to send, each within an equal share of the
    /// budget unless no other flow wants it, all within the budget and the
    /// pacer. Only the flows with something to send are visited.
    fn schedule(&mut self, now: Instant, ip: IpAddr) {
        let Some(sub) = self.subscribers.get_mut(&ip) else {
            return;
        };
        sub.state.refill(now, &self.config);
        let mut wake = None;
        // Every flow may have two segments in flight whatever the budget
        // and its share: a receiver acknowledges every second full segment
        // at once but holds the ACK of a lone one for its delayed-ACK timer
        // (40 ms and more on Linux), so a share of one segment would stall
        // each of a busy subscriber's many flows that long per segment.
        loop {
            let budget = sub.state.budget(&self.config) as u64;
            let total = sub.in_flight;
            let share = budget.div_ceil(sub.waiting.len().max(1) as u64);
            // Round robin from the cursor; a flow over its share yields to
            // any waiting flow under it.
            let mut first = None;
            let mut under = None;
            let rotated = sub
                .waiting
                .range(sub.cursor..)
                .chain(sub.waiting.range(..sub.cursor));
            for (&slot, w) in rotated {
                let pick = (slot, w.id, w.off, w.len);
                first.get_or_insert(pick);
                if w.in_flight + w.len <= share.max(2 * w.len) {
                    under = Some(pick);
                    break;
                }
            }
            let Some((slot, id, off, len)) = under.or(first) else {
                break;
            };
            if total > 0 && total + len > budget.max(2 * len * sub.active) {
                break;
            }
            if let Err(at) = sub.state.pace(len as usize, &self.config) {
                wake = Some(at);
                break;
            }
            let Some(Some(Tracked { flow, slot: member })) = self.slab.get_mut(id as usize) else {
                break;
            };
            let before = flow.in_flight;
            let mut ctx = Ctx {
                config: &self.config,
                sub: &mut sub.state,
                out: &mut self.out,
                stats: &mut self.stats,
                total_held: &mut self.total_held,
            };
            flow.send(now, off, total == 0, &mut ctx);
            sub.update(id, *member, before, flow);
            sub.state.spend(len as usize);
            sub.cursor = slot + 1;
            let idle = flow.last_seen + self.config.idle_timeout;
            self.flow_timers
                .rearm(id, Some(flow.deadline().map_or(idle, |d| d.min(idle))));
        }
        self.pacing_timers.rearm(ip, wake);
    }
}

/// A SYN without ACK: a client opening a connection.
fn is_bare_syn(seen: &Seen) -> bool {
    seen.has(TcpFlags::SYN) && !seen.has(TcpFlags::ACK)
}
