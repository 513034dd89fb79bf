//! [`Optimizer`]: the connection table, the handshake tracker and the
//! per-subscriber scheduler around the flows of `flow.rs`.

use crate::config::Config;
use crate::flow::{Ctx, Flow, Negotiated, Phase};
use crate::segment::{self, Read, Seen};
use crate::stats::{Reason, Stats};
use crate::subscriber::Subscriber;
use crate::{ConnectionKey, Side, Transmit};
use brisk_time::{Deadlines, Instant};
use brisk_wire::tcp::TcpFlags;
use std::collections::{BTreeMap, VecDeque};
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
    flows: BTreeMap<ConnectionKey, Flow>,
    subscribers: BTreeMap<IpAddr, Sub>,
    /// Each flow's next timer (RACK, probe, idle expiry).
    flow_timers: Deadlines<ConnectionKey>,
    /// Each subscriber's next pacing release.
    pacing_timers: Deadlines<IpAddr>,
    out: VecDeque<Transmit>,
    total_held: usize,
    stats: Stats,
}

/// A subscriber's estimators and its optimized flows, with what the
/// scheduler needs kept up to date as flows change, so that sending one
/// segment never visits every flow of a subscriber with thousands.
#[derive(Debug)]
struct Sub {
    state: Subscriber,
    /// Each optimized flow's place in the round robin: the order it joined.
    slots: BTreeMap<ConnectionKey, u64>,
    /// Flows with a segment they may send now, by slot.
    waiting: BTreeMap<u64, ConnectionKey>,
    /// The slot the next joining flow takes.
    next_slot: u64,
    /// Sequence bytes in flight over all the flows in `slots`.
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
            slots: BTreeMap::new(),
            waiting: BTreeMap::new(),
            next_slot: 0,
            in_flight: 0,
            cursor: 0,
            active: 0,
        }
    }

    /// A flow joins the round robin (it holds nothing yet).
    fn join(&mut self, key: ConnectionKey) {
        self.slots.insert(key, self.next_slot);
        self.next_slot += 1;
    }

    /// A flow leaves the round robin, with what it had in flight.
    fn leave(&mut self, key: &ConnectionKey, in_flight: u64) {
        if let Some(slot) = self.slots.remove(key) {
            let was_waiting = self.waiting.remove(&slot).is_some();
            self.in_flight = self.in_flight.saturating_sub(in_flight);
            if was_waiting || in_flight > 0 {
                self.active = self.active.saturating_sub(1);
            }
        }
    }

    /// A member's in flight went from `before` to the flow's now, and it
    /// may or may not have something to send now.
    fn update(&mut self, key: ConnectionKey, before: u64, flow: &Flow) {
        let Some(&slot) = self.slots.get(&key) else {
            return;
        };
        self.in_flight = (self.in_flight + flow.in_flight).saturating_sub(before);
        let (was_waiting, waiting) = if flow.sendable().is_some() {
            (self.waiting.insert(slot, key).is_some(), true)
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
            flows: BTreeMap::new(),
            subscribers: BTreeMap::new(),
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
        self.flows.len()
    }

    /// One connection's state, if tracked.
    pub fn connection(&self, key: &ConnectionKey) -> Option<ConnectionInfo> {
        self.flows.get(key).map(|f| ConnectionInfo {
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

    /// Stops optimizing one connection: nothing new is acknowledged early,
    /// what is held is delivered, then its packets pass through. False if
    /// it was not being optimized.
    pub fn stop_connection(&mut self, key: &ConnectionKey) -> bool {
        let optimizing = self
            .flows
            .get(key)
            .is_some_and(|f| f.phase == Phase::Optimizing);
        if optimizing {
            self.with_flow(*key, |flow, ctx| flow.fall_back(Reason::Requested, ctx));
        }
        optimizing
    }

    /// Stops optimizing every connection (before an upgrade, or when memory
    /// runs short); each passes through once its held data is delivered.
    pub fn stop_all(&mut self) {
        let keys: Vec<ConnectionKey> = self.flows.keys().copied().collect();
        for key in keys {
            self.stop_connection(&key);
        }
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
        while let Some(key) = self.flow_timers.pop_due(now) {
            let Some(flow) = self.flows.get(&key) else {
                continue;
            };
            if now.saturating_duration_since(flow.last_seen) >= self.config.idle_timeout {
                self.stats.idle_expired += 1;
                self.with_flow(key, |flow, ctx| flow.end(ctx));
                self.forget(&key);
                continue;
            }
            self.with_flow(key, |flow, ctx| flow.handle_timeout(now, ctx));
            self.rearm(key);
            // Losses found or a probe answered may free the budget.
            self.schedule(now, key.client.ip());
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
        if mirrored != key && self.flows.contains_key(&mirrored) {
            // A packet of a tracked connection on the other interface: a
            // routing loop or asymmetric integration.
            let reason = if seen.has(TcpFlags::SYN) {
                Reason::SynSeenTwice
            } else {
                Reason::WrongSide
            };
            self.give_up(mirrored, reason);
            self.pass(from, datagram);
            return;
        }
        let Some(phase) = self.flows.get(&key).map(|f| f.phase) else {
            self.maybe_track(now, from, key, seen);
            self.pass(from, datagram);
            return;
        };
        if let Some(flow) = self.flows.get_mut(&key) {
            flow.last_seen = now;
        }
        match phase {
            Phase::SynSeen | Phase::SynAckSeen => {
                let mut datagram = datagram;
                if self.handshake(now, from, key, phase, seen, &mut datagram) {
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
                    self.forget(&key);
                    self.maybe_track(now, from, key, seen);
                }
                self.pass(from, datagram);
            }
            Phase::Optimizing | Phase::Draining => {
                if seen.has(TcpFlags::SYN) {
                    let odd = !(from == Side::Server && seen.has(TcpFlags::ACK));
                    if odd {
                        self.give_up(key, Reason::SynSeenTwice);
                    }
                    self.pass(from, datagram);
                    return;
                }
                let forward = self.with_flow(key, |flow, ctx| match from {
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
        if self.flows.len() >= self.config.max_connections {
            self.stats.refuse(Reason::TableFull);
            return;
        }
        let mut flow = Flow::new(now, seen);
        if seen.options.unknown || seen.payload_len > 0 {
            self.stats.refuse(Reason::UnknownSynOption);
            flow.phase = Phase::PassThrough;
        }
        self.flows.insert(key, flow);
        self.flow_timers
            .rearm(key, Some(now + self.config.idle_timeout));
    }

    /// A packet of a connection in its handshake; true if the optimizer
    /// lowered the window of the client's handshake ACK in `datagram`.
    fn handshake(
        &mut self,
        now: Instant,
        from: Side,
        key: ConnectionKey,
        phase: Phase,
        seen: &Seen,
        datagram: &mut [u8],
    ) -> bool {
        let Some(flow) = self.flows.get_mut(&key) else {
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
                    None
                }
            }
            (Phase::SynAckSeen, Side::Server) if syn && ack => {
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
                    .entry(key.client.ip())
                    .or_insert_with(|| Sub::new(now, &self.config));
                sub.join(key);
                None
            }
            // Anything else before the handshake completes means this box
            // sees only part of the conversation.
            _ => Some(Reason::AsymmetricRouting),
        };
        if let Some(r) = refusal {
            self.stats.refuse(r);
            if let Some(flow) = self.flows.get_mut(&key) {
                flow.phase = Phase::PassThrough;
            }
        }
        lowered
    }

    /// Stops optimizing `key` for good at once: an optimizing flow drains,
    /// one in handshake is refused.
    fn give_up(&mut self, key: ConnectionKey, reason: Reason) {
        let Some(phase) = self.flows.get(&key).map(|f| f.phase) else {
            return;
        };
        match phase {
            Phase::SynSeen | Phase::SynAckSeen => {
                self.stats.refuse(reason);
                if let Some(f) = self.flows.get_mut(&key) {
                    f.phase = Phase::PassThrough;
                }
            }
            Phase::Optimizing | Phase::Draining => {
                self.with_flow(key, |flow, ctx| flow.fall_back(reason, ctx));
            }
            Phase::PassThrough => {}
        }
    }

    /// Runs `f` on a flow with its subscriber, then re-arms its timer and
    /// takes it off its subscriber once it passes through.
    fn with_flow<R>(
        &mut self,
        key: ConnectionKey,
        f: impl FnOnce(&mut Flow, &mut Ctx<'_>) -> R,
    ) -> Option<R> {
        let flow = self.flows.get_mut(&key)?;
        let ip = key.client.ip();
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
        sub.update(key, before, flow);
        let idle = flow.last_seen + self.config.idle_timeout;
        let deadline = flow.deadline().map_or(idle, |d| d.min(idle));
        self.flow_timers.rearm(key, Some(deadline));
        if flow.phase == Phase::PassThrough {
            sub.leave(&key, flow.in_flight);
            if sub.slots.is_empty() {
                self.subscribers.remove(&ip);
                self.pacing_timers.rearm(ip, None);
            }
        }
        Some(r)
    }

    /// Arms a flow's timer: its earliest RACK or probe deadline, or its
    /// idle expiry.
    fn rearm(&mut self, key: ConnectionKey) {
        let deadline = self.flows.get(&key).map(|flow| {
            let idle = flow.last_seen + self.config.idle_timeout;
            flow.deadline().map_or(idle, |d| d.min(idle))
        });
        self.flow_timers.rearm(key, deadline);
    }

    /// Forgets a connection entirely.
    fn forget(&mut self, key: &ConnectionKey) {
        let in_flight = self.flows.remove(key).map_or(0, |flow| {
            debug_assert_eq!(flow.held_bytes(), 0, "a forgotten flow holds nothing");
            flow.in_flight
        });
        self.flow_timers.rearm(*key, None);
        let ip = key.client.ip();
        if let Some(sub) = self.subscribers.get_mut(&ip) {
            sub.leave(key, in_flight);
            if sub.slots.is_empty() {
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
            for (&slot, key) in rotated {
                let Some(flow) = self.flows.get(key) else {
                    continue;
                };
                let Some((off, len)) = flow.sendable() else {
                    continue;
                };
                let w = (slot, *key, off, len);
                first.get_or_insert(w);
                if flow.in_flight + len <= share.max(2 * len) {
                    under = Some(w);
                    break;
                }
            }
            let Some((slot, key, off, len)) = under.or(first) else {
                break;
            };
            if total > 0 && total + len > budget.max(2 * len * sub.active) {
                break;
            }
            if let Err(at) = sub.state.pace(len as usize, &self.config) {
                wake = Some(at);
                break;
            }
            let Some(flow) = self.flows.get_mut(&key) else {
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
            sub.update(key, before, flow);
            sub.state.spend(len as usize);
            sub.cursor = slot + 1;
            let idle = flow.last_seen + self.config.idle_timeout;
            self.flow_timers
                .rearm(key, Some(flow.deadline().map_or(idle, |d| d.min(idle))));
        }
        self.pacing_timers.rearm(ip, wake);
    }
}

/// A SYN without ACK: a client opening a connection.
fn is_bare_syn(seen: &Seen) -> bool {
    seen.has(TcpFlags::SYN) && !seen.has(TcpFlags::ACK)
}
