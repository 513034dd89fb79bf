//! One direction of a link: packets wait in a queue, a transmitter drains
//! it per a rate model, then impairments act and the packet propagates to
//! the far end.
//!
//! Drive it like every Brisk state machine: feed arrivals with
//! [`Link::handle_packet`], call [`Link::handle_timeout`] at (or after)
//! [`Link::poll_timeout`], and drain [`Link::poll_delivery`] and
//! [`Link::poll_event`] after each call. Calling late is allowed: the link
//! replays what happened in between at the exact times it happened, and
//! draws its random numbers in that same order, so a run depends only on
//! the seed and the inputs.
//!
//! The pipeline, in order (each stage in its own module):
//! 0. the [`mtu`] check at the entrance: a packet larger than the hop's MTU
//!    is dropped (and with `mtu_icmp` answered with a Packet Too Big, which
//!    [`Link::poll_reply`] hands out);
//! 1. the queue discipline ([`crate::queue`]);
//! 2. the transmitter ([`rate`]): constant, scheduled or mahimahi-trace
//!    capacity, optionally sent in [`bursts`] at transmit opportunities
//!    (from a short driver queue below the queue discipline when
//!    configured), frozen during [`outage`]s unless `outage_drops`;
//! 3. [`loss`]: outage losses in `outage_drops` mode, losses after idle,
//!    then random, Gilbert-Elliott or [`fade`] loss; after the transmitter, so lost
//!    packets used capacity;
//! 4. [`ecn_rewrite`] at the hop;
//! 5. duplication;
//! 6. propagation: delay plus [`jitter`], order kept unless
//!    `reorder_on_jitter`, and explicit [`reorder`]ing.
//!
//! [`config`] holds [`LinkConfig`] and its scenario syntax; [`profiles`]
//! names ready-made mobile and Wi-Fi settings from published sources.

pub mod bursts;
pub mod config;
mod driver_queue;
pub mod ecn_rewrite;
pub mod fade;
mod in_flight;
pub mod jitter;
pub mod loss;
pub mod mtu;
pub mod outage;
pub mod profiles;
pub mod rate;
pub mod reorder;
mod transmitter;

pub use bursts::Bursts;
pub use config::{LinkConfig, LinkConfigError};
pub use ecn_rewrite::EcnRewrite;
pub use fade::Fade;
pub use jitter::Jitter;
pub use loss::{GilbertElliott, IdleLoss, LossCause, LossModel};
pub use mtu::MtuChange;
pub use outage::{Outage, PeriodicOutage};
pub use profiles::Profile;
pub use rate::{MahimahiTrace, RateModel, RateSchedule, RateStep, TraceError};
pub use reorder::{Reorder, ReorderDepth};

use crate::Rng;
use crate::packet::Packet;
use crate::queue::{DropReason, Queue, QueueEvent};
use brisk_time::Instant;
use brisk_wire::Ecn;
use in_flight::InFlight;
use loss::LossState;
use outage::OutageSchedule;
use rand::Rng as _;
use reorder::Holds;
use std::collections::VecDeque;
use std::time::Duration;
use transmitter::{Transmitter, TxOutput, TxSink};

/// Something the link did that a trace should show. Events come out in
/// time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    /// The queue dropped a packet.
    QueueDrop {
        /// When the queue dropped it.
        at: Instant,
        /// The dropped packet.
        packet: Packet,
        /// Limit overflow or AQM decision.
        reason: DropReason,
    },
    /// The queue marked a packet CE.
    Marked {
        /// When the mark was applied.
        at: Instant,
        /// [`Packet::id`] of the marked packet.
        packet_id: u64,
    },
    /// A packet left the queue after waiting `queue_delay`.
    Dequeued {
        /// When it left the queue.
        at: Instant,
        /// [`Packet::id`] of the packet.
        packet_id: u64,
        /// Sojourn time in the queue.
        queue_delay: Duration,
    },
    /// The link lost a packet after transmitting it.
    Lost {
        /// When it finished serialization.
        at: Instant,
        /// The lost packet.
        packet: Packet,
        /// Which impairment lost it.
        cause: LossCause,
    },
    /// The hop rewrote a packet's ECN field.
    EcnRewritten {
        /// When the rewrite happened.
        at: Instant,
        /// [`Packet::id`] of the packet.
        packet_id: u64,
        /// Codepoint as it arrived.
        from: Ecn,
        /// Codepoint as it leaves.
        to: Ecn,
    },
    /// A packet was duplicated; both copies carry the same id.
    Duplicated {
        /// When the copy was made.
        at: Instant,
        /// [`Packet::id`] shared by both copies.
        packet_id: u64,
    },
    /// The hop dropped a packet larger than its MTU at the link's entrance.
    TooBig {
        /// When it arrived.
        at: Instant,
        /// The dropped packet.
        packet: Packet,
        /// The MTU in force, in bytes of IP packet.
        mtu: u32,
    },
    /// A packet was held back to be overtaken (explicit reordering).
    Reordered {
        /// When it was held back.
        at: Instant,
        /// [`Packet::id`] of the held packet.
        packet_id: u64,
    },
}

/// Totals over the life of the link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets and bytes that finished serialization (lost ones included).
    pub transmitted_packets: u64,
    /// Bytes (whole IP datagrams) that finished serialization, lost ones included.
    pub transmitted_bytes: u64,
    /// Time the transmitter spent sending (for utilization). For a mahimahi
    /// trace: the air time at the trace's mean rate (utilization there is
    /// measured against [`Link::offered_bytes`] instead).
    pub busy: Duration,
    /// Packets lost after transmission, whatever the cause.
    pub lost_packets: u64,
    /// Packets that were sent twice (each counted once here).
    pub duplicated_packets: u64,
    /// Packets held back so that later ones overtook them.
    pub reordered_packets: u64,
    /// Packets whose ECN field the hop rewrote.
    pub ecn_rewritten_packets: u64,
    /// Packets handed to the far end (duplicates count twice).
    pub delivered_packets: u64,
    /// Packets dropped at the entrance for exceeding the MTU.
    pub too_big_packets: u64,
    /// Packet Too Big messages sent back toward senders (`mtu_icmp`).
    pub too_big_replies: u64,
}

/// One direction of a link.
pub struct Link {
    config: LinkConfig,
    queue: Box<dyn Queue>,
    rng: Rng,
    tx: Transmitter,
    /// Outages that lose packets (`outage_drops`); empty otherwise.
    drop_outages: OutageSchedule,
    loss: Option<LossState>,
    /// When the previous packet left the transmitter.
    last_sent: Instant,
    /// Packets still to lose after an idle period.
    idle_losses_left: u32,
    holds: Holds,
    /// Latest arrival given to a packet that keeps its order.
    last_in_order: Instant,
    /// Packets propagating, by (arrival, sequence) so ties keep send order.
    in_flight: InFlight,
    tx_out: Vec<TxOutput>,
    /// A plain link's dequeues of one transmitter step (at, packet id,
    /// queue delay), reported after the queue's own events of the step.
    tx_dequeued: Vec<(Instant, u64, Duration)>,
    /// A plain link's dequeues stay in `tx_dequeued` for
    /// [`Link::kept_dequeues`] instead of becoming events (see
    /// [`Link::keep_dequeues_apart`]).
    dequeues_apart: bool,
    /// Packets that reached the far end, for a link that is not plain (a
    /// plain link's wait at the front of `in_flight`).
    delivered: VecDeque<(Instant, Packet)>,
    /// Packet Too Big answers waiting to go back toward their senders.
    replies: VecDeque<(Instant, Packet)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    /// [`Link::poll_timeout`]'s answer, worked out once at the end of each
    /// call that changed the link (only [`Link::advance`] changes what it
    /// depends on, and it ends by setting it): the engine asks after every
    /// visit, and a call with nothing due can return at once.
    next_due: Option<Instant>,
    /// [`Transmitter::due`] as of the last change to the transmitter or
    /// its queue, so that [`Link::advance`] need not ask it again on
    /// every visit. Only a step or a packet queued changes it, and a
    /// packet queued behind a busy transmitter without a driver queue
    /// leaves it as it was.
    tx_due: Option<Instant>,
    /// No impairment after the transmitter (no loss of any kind, ECN
    /// rewrite, duplication, jitter or reordering): a sent packet only
    /// propagates, and none of the stages that would draw a random number
    /// or change it need asking, packet after packet.
    plain: bool,
}

impl Link {
    /// Builds a link direction. `rng` feeds every random impairment; give
    /// each link its own stream ([`crate::rng`]). A config that names a
    /// mahimahi file it has not loaded yields a link that never transmits
    /// ([`LinkConfig::validate`] reports it). With `bursts`, the
    /// opportunities draw from a stream seeded by `rng`'s first draw.
    pub fn new(config: LinkConfig, queue: Box<dyn Queue>, mut rng: Rng) -> Link {
        let outages = OutageSchedule::new(&config.outages, config.outage_every);
        let (freeze, drop_outages) = if config.outage_drops {
            (OutageSchedule::default(), outages)
        } else {
            (outages, OutageSchedule::default())
        };
        let bursts = config.bursts.map(|b| {
            use rand::SeedableRng as _;
            (b, Rng::seed_from_u64(rng.random()))
        });
        // A probability the stages below skip (they test `p > 0.0`).
        let never = |p: f64| p <= 0.0 || p.is_nan();
        let plain = config.loss.is_none()
            && config.loss_after_idle.is_none()
            && drop_outages.is_empty()
            && config.ecn == EcnRewrite::Pass
            && never(config.duplicate)
            && config.jitter.is_none()
            && config.reorder.is_none_or(|r| never(r.probability));
        let mut link = Link {
            plain,
            tx: Transmitter::new(&config.rate, freeze, bursts),
            drop_outages,
            loss: config.loss.map(LossState::new),
            last_sent: Instant::ZERO,
            idle_losses_left: 0,
            config,
            queue,
            rng,
            holds: Holds::default(),
            last_in_order: Instant::ZERO,
            in_flight: InFlight::default(),
            tx_out: Vec::new(),
            tx_dequeued: Vec::new(),
            dequeues_apart: false,
            delivered: VecDeque::new(),
            replies: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
            next_due: None,
            tx_due: None,
        };
        // A queue handed in may hold packets already.
        link.tx_due = link.tx.due(link.queue.as_ref());
        link.next_due = link.due_times().0;
        link
    }

    /// The configuration the link was built from.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The queue discipline in front of the transmitter, for its stats and state.
    pub fn queue(&self) -> &dyn Queue {
        self.queue.as_ref()
    }

    /// Totals so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// For a mahimahi trace, the bytes its delivery opportunities offered
    /// in `[0, until)` outside freezing outages: what utilization is
    /// measured against, since a trace's capacity comes and goes and a
    /// saturated link uses all of it, whatever the trace's mean. `None`
    /// for rate models: their busy time measures the same.
    pub fn offered_bytes(&self, until: Instant) -> Option<u64> {
        self.tx.offered_bytes(until)
    }

    /// A packet arrives at the link's input at `now`.
    pub fn handle_packet(&mut self, now: Instant, packet: Packet) {
        self.advance_if_due(now);
        if let Some(mtu) = mtu::mtu_at(self.config.mtu, self.config.mtu_change, now)
            && packet.len() > mtu as usize
        {
            self.too_big(now, packet, mtu);
            return;
        }
        let idle = self.tx.is_idle();
        if idle && self.queue.is_empty() {
            self.tx.wake(now);
        }
        let pulls = self.tx.pulls(now);
        self.queue.enqueue(now, packet);
        self.drain_queue_events();
        // A busy transmitter is next due when its packet is done, whatever
        // the queue holds, and nothing else moved: the remembered wake-up
        // stands (and nothing is due by `now`, `advance_if_due` saw to it).
        // A driver queue with room takes the packet at once, though.
        if idle || pulls {
            self.tx_due = self.tx.due(self.queue.as_ref());
            self.advance(now);
        } else if self.tx.has_driver() {
            // A full driver queue may still take from the queue
            // discipline once it has room: the packet counts for that.
            self.tx_due = self.tx.due(self.queue.as_ref());
        }
    }

    /// Advances internal state to `now`.
    #[inline]
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance_if_due(now);
    }

    /// The next time the link has something to do, if any.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_due
    }

    /// Whether [`Link::poll_delivery`] or [`Link::poll_event`] has
    /// something to give.
    #[inline]
    pub fn has_output(&self) -> bool {
        self.in_flight.has_arrived() || !(self.delivered.is_empty() && self.events.is_empty())
    }

    /// The next packet that reached the far end, with its arrival time.
    #[inline]
    pub fn poll_delivery(&mut self) -> Option<(Instant, Packet)> {
        if self.plain {
            self.in_flight.take_arrived()
        } else {
            self.delivered.pop_front()
        }
    }

    /// From now on a plain link keeps each dequeue (when, packet id, queue
    /// delay) for [`Link::kept_dequeues`] instead of making it a
    /// [`LinkEvent::Dequeued`]: for a driver that only counts them, which
    /// then need not go through the event queue one by one. The order
    /// among dequeues is kept; against the other events it is not.
    pub fn keep_dequeues_apart(&mut self) {
        self.dequeues_apart = true;
    }

    /// The dequeues kept (see [`Link::keep_dequeues_apart`]), oldest
    /// first; the caller drains them.
    #[inline]
    pub fn kept_dequeues(&mut self) -> &mut Vec<(Instant, u64, Duration)> {
        &mut self.tx_dequeued
    }

    /// The next trace event since the last call, oldest first.
    #[inline]
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    /// The next Packet Too Big answer (`mtu_icmp`), with the time it was
    /// sent, addressed to the sender of the packet it quotes: it travels
    /// back the way that packet came, not over this link. It keeps the
    /// dropped packet's id, so it is charged to the same flow.
    pub fn poll_reply(&mut self) -> Option<(Instant, Packet)> {
        self.replies.pop_front()
    }

    /// Drops `packet`, larger than the `mtu` in force, and answers it if
    /// configured to.
    fn too_big(&mut self, now: Instant, packet: Packet, mtu: u32) {
        self.stats.too_big_packets += 1;
        if self.config.mtu_icmp
            && let Ok(reply) = brisk_wire::icmp::packet_too_big(&packet.data, mtu)
            && let Ok(reply) = Packet::new(packet.id, now, reply)
        {
            self.stats.too_big_replies += 1;
            self.replies.push_back((now, reply));
        }
        self.events.push_back(LinkEvent::TooBig {
            at: now,
            packet,
            mtu,
        });
    }

    /// The overall wake-up ([`Link::poll_timeout`]) and the times the
    /// transmitter and the first arrival are due.
    fn due_times(&self) -> (Option<Instant>, Option<Instant>, Option<Instant>) {
        let tx = self.tx_due;
        let rx = self.in_flight.first_arrival();
        let first = match (tx, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (first, tx, rx)
    }

    /// [`Link::advance`], skipped when nothing is due by `now`.
    fn advance_if_due(&mut self, now: Instant) {
        if self.next_due.is_some_and(|t| t <= now) {
            self.advance(now);
        }
    }

    fn advance(&mut self, now: Instant) {
        // In nanoseconds, none being the end of time (which no `now`
        // reaches, so a wake-up there counts as none): the loop then
        // compares plain numbers.
        const NEVER: u64 = u64::MAX;
        let nanos = |t: Option<Instant>| t.map_or(NEVER, Instant::as_nanos);
        let now = now.as_nanos();
        let mut tx = nanos(self.tx_due);
        let mut rx = nanos(self.in_flight.first_arrival());
        loop {
            // Arrivals first on ties: they were scheduled earlier.
            if rx <= now && rx <= tx {
                // An arrival touches neither the queue nor the
                // transmitter: only the next arrival is new.
                rx = nanos(self.arrive());
            } else if tx <= now {
                self.transmit(Instant::from_nanos(tx));
                tx = nanos(self.tx_due);
                // A plain link's packets go behind those in flight: only
                // the first one sent can be the next arrival.
                if !self.plain || rx == NEVER {
                    rx = nanos(self.in_flight.first_arrival());
                }
            } else {
                break;
            }
        }
        let first = tx.min(rx);
        self.next_due = (first != NEVER).then(|| Instant::from_nanos(first));
    }

    /// Delivers the first packet due to arrive (one is); returns the next
    /// arrival time. A plain link's packets never overtake, so they wait
    /// in the in-flight queue to be taken.
    fn arrive(&mut self) -> Option<Instant> {
        self.stats.delivered_packets += 1;
        if self.plain {
            return self.in_flight.mark_arrived();
        }
        if let Some(p) = self.in_flight.pop_first() {
            self.delivered.push_back(p);
        }
        self.in_flight.first_arrival()
    }

    // Kept out of `advance`: inlined there it made the loop dearer than
    // the call it saved.
    #[inline(never)]
    fn transmit(&mut self, at: Instant) {
        // A transmitter freed at `at` with packets waiting starts the next
        // one at once instead of through another turn of `advance` (where
        // arrivals due at `at` would go first: they touch neither the
        // queue nor the events, so the order between them does not show).
        while self.transmit_once(at) {}
        self.tx_due = self.tx.due(self.queue.as_ref());
    }

    /// One transmitter step and what follows from it; true if the
    /// transmitter is due again at `at`.
    fn transmit_once(&mut self, at: Instant) -> bool {
        if self.plain {
            return self.transmit_plain(at);
        }
        let mut out = std::mem::take(&mut self.tx_out);
        let again = self.tx.step(at, self.queue.as_mut(), &mut out, false);
        // Drops an AQM made while dequeuing happened at `at`, before the
        // packet it returned left.
        self.drain_queue_events();
        for o in out.drain(..) {
            match o {
                TxOutput::Dequeued {
                    at,
                    packet_id,
                    queue_delay,
                } => self.events.push_back(LinkEvent::Dequeued {
                    at,
                    packet_id,
                    queue_delay,
                }),
                TxOutput::Sent { at, packet, busy } => {
                    self.stats.transmitted_packets += 1;
                    self.stats.transmitted_bytes += packet.len() as u64;
                    self.stats.busy += busy;
                    self.impair(at, busy, packet);
                }
            }
        }
        self.tx_out = out;
        if !self.holds.is_empty() && self.tx.is_idle() && self.queue.is_empty() {
            // The transmitter ran dry: nothing more will overtake them.
            for (t, p) in self.holds.flush(self.last_in_order) {
                self.schedule(t, p);
            }
        }
        again
    }

    /// [`Link::transmit_once`] for a plain link: a sent packet goes
    /// straight to propagation instead of through a list of outputs, and
    /// only the dequeues wait, to follow the queue's events of the step as
    /// they do there.
    fn transmit_plain(&mut self, at: Instant) -> bool {
        let mut sink = PlainSink {
            in_flight: &mut self.in_flight,
            last_in_order: &mut self.last_in_order,
            stats: &mut self.stats,
            delay: self.config.delay,
            keep_order: !self.config.reorder_on_jitter,
            dequeued: &mut self.tx_dequeued,
        };
        // A plain link's sent packet only propagates, adding no event
        // between the queue's, so the next packet may start in the same
        // step: one step, one drain of queue events, per packet.
        let again = self.tx.step(at, self.queue.as_mut(), &mut sink, true);
        self.drain_queue_events();
        if self.dequeues_apart {
            return again;
        }
        for (at, packet_id, queue_delay) in self.tx_dequeued.drain(..) {
            self.events.push_back(LinkEvent::Dequeued {
                at,
                packet_id,
                queue_delay,
            });
        }
        again
    }

    /// Stages after the transmitter, for a packet that finished
    /// serialization at `at` after `busy` of air time.
    fn impair(&mut self, at: Instant, busy: Duration, mut packet: Packet) {
        let idle = (at - busy) - self.last_sent;
        self.last_sent = at;
        if let Some(il) = self.config.loss_after_idle
            && idle >= il.idle
        {
            self.idle_losses_left = il.packets;
        }
        let cause = if self.drop_outages.is_down(at) {
            Some(LossCause::Outage)
        } else if self.idle_losses_left > 0 {
            self.idle_losses_left -= 1;
            Some(LossCause::AfterIdle)
        } else {
            self.loss.as_mut().and_then(|l| l.draw(at, &mut self.rng))
        };
        if let Some(cause) = cause {
            self.stats.lost_packets += 1;
            self.events.push_back(LinkEvent::Lost { at, packet, cause });
            return;
        }
        if let Some((from, to)) = self.config.ecn.apply(&mut packet) {
            self.stats.ecn_rewritten_packets += 1;
            self.events.push_back(LinkEvent::EcnRewritten {
                at,
                packet_id: packet.id,
                from,
                to,
            });
        }
        let dup = self.config.duplicate > 0.0 && self.rng.random::<f64>() < self.config.duplicate;
        if dup {
            self.stats.duplicated_packets += 1;
            self.events.push_back(LinkEvent::Duplicated {
                at,
                packet_id: packet.id,
            });
            let copy = packet.clone();
            self.propagate(at, packet);
            self.propagate(at, copy);
        } else {
            self.propagate(at, packet);
        }
    }

    /// Delay, jitter and reordering for a packet that left at `at`.
    fn propagate(&mut self, at: Instant, packet: Packet) {
        let one_way = match self.config.jitter {
            Some(j) => j.apply(self.config.delay, &mut self.rng),
            None => self.config.delay,
        };
        let natural = at + one_way;
        if let Some(r) = self.config.reorder
            && r.probability > 0.0
            && self.rng.random::<f64>() < r.probability
        {
            self.stats.reordered_packets += 1;
            self.events.push_back(LinkEvent::Reordered {
                at,
                packet_id: packet.id,
            });
            match r.depth {
                ReorderDepth::Packets(n) => self.holds.hold(packet, natural, n),
                ReorderDepth::Time(d) => self.schedule(natural + d, packet),
            }
            return;
        }
        let arrival = self.in_order(natural, packet);
        for (t, p) in self.holds.on_pass(arrival) {
            self.schedule(t, p);
        }
    }

    /// Schedules a packet that would arrive at `natural` and keeps order
    /// (unless `reorder_on_jitter`); returns its arrival.
    fn in_order(&mut self, natural: Instant, packet: Packet) -> Instant {
        let arrival = if self.config.reorder_on_jitter {
            natural
        } else {
            natural.max(self.last_in_order)
        };
        self.last_in_order = self.last_in_order.max(arrival);
        self.schedule(arrival, packet);
        arrival
    }

    fn schedule(&mut self, arrival: Instant, packet: Packet) {
        self.in_flight.insert(arrival, packet);
    }

    // Inlined: called out of line it cost more than its usual empty loop.
    #[inline(always)]
    fn drain_queue_events(&mut self) {
        while let Some(e) = self.queue.poll_event() {
            self.events.push_back(match e {
                QueueEvent::Dropped { at, packet, reason } => {
                    LinkEvent::QueueDrop { at, packet, reason }
                }
                QueueEvent::Marked { at, packet_id } => LinkEvent::Marked { at, packet_id },
            });
        }
    }
}

/// What a plain link does with a transmitter step's outputs: what
/// [`Link::impair`] and [`Link::propagate`] come to without impairments
/// (`last_sent` only serves idle loss, and no packet is ever held).
struct PlainSink<'a> {
    in_flight: &'a mut InFlight,
    last_in_order: &'a mut Instant,
    stats: &'a mut LinkStats,
    delay: Duration,
    /// Not `reorder_on_jitter`.
    keep_order: bool,
    dequeued: &'a mut Vec<(Instant, u64, Duration)>,
}

impl TxSink for PlainSink<'_> {
    fn dequeued(&mut self, at: Instant, packet: &Packet) {
        self.dequeued.push((at, packet.id, at - packet.enqueued_at));
    }

    fn sent(&mut self, at: Instant, packet: Packet, busy: Duration) {
        self.stats.transmitted_packets += 1;
        self.stats.transmitted_bytes += packet.len() as u64;
        self.stats.busy += busy;
        // As `Link::in_order` has it.
        let natural = at + self.delay;
        let arrival = if self.keep_order {
            natural.max(*self.last_in_order)
        } else {
            natural
        };
        *self.last_in_order = (*self.last_in_order).max(arrival);
        self.in_flight.insert(arrival, packet);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use crate::queue::{Fifo, FifoConfig};

    fn link(bps: u64, delay_ms: u64) -> Link {
        let config = LinkConfig {
            rate: RateModel::Constant { bps },
            delay: Duration::from_millis(delay_ms),
            ..LinkConfig::default()
        };
        Link::new(
            config,
            Box::new(Fifo::new(FifoConfig::default())),
            crate::rng(1, 0),
        )
    }

    /// Runs the link as a simulator would: wake at each poll_timeout.
    fn drain(l: &mut Link) -> Vec<(Instant, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.poll_timeout() {
            l.handle_timeout(t);
            while let Some((at, p)) = l.poll_delivery() {
                out.push((at, p.id));
            }
        }
        out
    }

    #[test]
    fn serializes_back_to_back_then_propagates() {
        // 1000-byte packets at 8 Mbit/s take 1 ms each; 10 ms of delay.
        let mut l = link(8_000_000, 10);
        for i in 0..3 {
            l.handle_packet(Instant::ZERO, udp(i, 0, 1000, Ecn::NotEct));
        }
        let got = drain(&mut l);
        let want: Vec<(Instant, u64)> = (0..3).map(|i| (Instant::from_millis(11 + i), i)).collect();
        assert_eq!(got, want);
        assert_eq!(l.stats().busy, Duration::from_millis(3));
        assert_eq!(l.stats().delivered_packets, 3);
    }

    #[test]
    fn idle_transmitter_starts_on_arrival_and_late_calls_replay_exactly() {
        let mut l = link(8_000_000, 0);
        l.handle_packet(Instant::from_millis(5), udp(1, 0, 1000, Ecn::NotEct));
        l.handle_packet(Instant::from_millis(5), udp(2, 0, 1000, Ecn::NotEct));
        // Called long after both finished: arrival times are still exact.
        l.handle_timeout(Instant::from_millis(100));
        let got: Vec<_> = std::iter::from_fn(|| l.poll_delivery())
            .map(|(t, p)| (t, p.id))
            .collect();
        assert_eq!(
            got,
            vec![(Instant::from_millis(6), 1), (Instant::from_millis(7), 2)]
        );
    }

    #[test]
    fn events_come_out_in_time_order() {
        let config = LinkConfig {
            rate: RateModel::Constant { bps: 8_000_000 },
            loss: Some(LossModel::Random { probability: 0.5 }),
            ..LinkConfig::default()
        };
        let mut l = Link::new(
            config,
            Box::new(Fifo::new(FifoConfig {
                limit_packets: Some(5),
                limit_bytes: None,
            })),
            crate::rng(9, 0),
        );
        for i in 0..20 {
            l.handle_packet(Instant::from_micros(300 * i), udp(i, 0, 1000, Ecn::NotEct));
        }
        drain(&mut l);
        let times: Vec<Instant> = std::iter::from_fn(|| l.poll_event())
            .map(|e| match e {
                LinkEvent::QueueDrop { at, .. }
                | LinkEvent::Marked { at, .. }
                | LinkEvent::Dequeued { at, .. }
                | LinkEvent::Lost { at, .. }
                | LinkEvent::EcnRewritten { at, .. }
                | LinkEvent::Duplicated { at, .. }
                | LinkEvent::TooBig { at, .. }
                | LinkEvent::Reordered { at, .. } => at,
            })
            .collect();
        assert!(times.len() > 20);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        let s = l.stats();
        assert_eq!(s.transmitted_packets, s.lost_packets + s.delivered_packets);
    }

    /// The same with a driver queue below the queue discipline, which takes
    /// packets as they arrive: every packet comes out, in order, and the
    /// remembered wake-up never goes stale.
    #[test]
    fn a_driver_queue_keeps_the_wake_up_exact_and_loses_nothing() {
        use rand::Rng as _;
        let bursts = Bursts::new(Duration::from_millis(4), Duration::from_millis(1))
            .and_then(|b| b.with_driver_queue(Duration::from_millis(6)))
            .unwrap();
        let config = LinkConfig {
            rate: RateModel::Constant { bps: 8_000_000 },
            delay: Duration::from_millis(3),
            bursts: Some(bursts),
            outage_every: Some(PeriodicOutage {
                period: Duration::from_millis(50),
                duration: Duration::from_millis(7),
                first: Duration::from_millis(20),
            }),
            ..LinkConfig::default()
        };
        let fifo = Box::new(Fifo::new(FifoConfig::default()));
        let mut l = Link::new(config, fifo, crate::rng(3, 0));
        let mut rng = crate::rng(4, 0);
        let mut now = Instant::ZERO;
        let (mut sent, mut delivered) = (0u64, Vec::new());
        for i in 0..3_000 {
            now += Duration::from_micros(rng.random_range(0..1_500));
            if rng.random_bool(0.5) {
                l.handle_packet(now, udp(sent, 0, 1000, Ecn::NotEct));
                sent += 1;
            } else if let Some(t) = l.poll_timeout().filter(|t| *t <= now) {
                l.handle_timeout(t);
            } else {
                l.handle_timeout(now);
            }
            assert_eq!(l.poll_timeout(), l.due_times().0, "after step {i}");
            let (had_output, before) = (l.has_output(), delivered.len());
            let events = std::iter::from_fn(|| l.poll_event()).count();
            delivered.extend(std::iter::from_fn(|| l.poll_delivery()).map(|(_, p)| p.id));
            assert_eq!(
                had_output,
                events + delivered.len() > before,
                "after step {i}"
            );
            assert!(!l.has_output());
        }
        while let Some(t) = l.poll_timeout() {
            l.handle_timeout(t);
            delivered.extend(std::iter::from_fn(|| l.poll_delivery()).map(|(_, p)| p.id));
        }
        assert!(sent > 1_000, "{sent}");
        assert_eq!(delivered, (0..sent).collect::<Vec<_>>());
    }

    #[test]
    fn remembered_wake_up_is_always_the_one_worked_out_afresh() {
        // Every impairment that moves a wake-up: jitter and reordering
        // (the ordered map), loss, duplication, freezing outages.
        use rand::Rng as _;
        let config = LinkConfig {
            rate: RateModel::Constant { bps: 8_000_000 },
            delay: Duration::from_millis(3),
            jitter: Some(Jitter::Uniform(Duration::from_millis(2))),
            reorder_on_jitter: true,
            loss: Some(LossModel::Random { probability: 0.1 }),
            reorder: Some(Reorder {
                probability: 0.2,
                depth: ReorderDepth::Packets(3),
            }),
            duplicate: 0.1,
            outage_every: Some(PeriodicOutage {
                period: Duration::from_millis(50),
                duration: Duration::from_millis(7),
                first: Duration::from_millis(20),
            }),
            ..LinkConfig::default()
        };
        let fifo = || {
            Box::new(Fifo::new(FifoConfig {
                limit_packets: Some(8),
                limit_bytes: None,
            }))
        };
        let mut l = Link::new(config, fifo(), crate::rng(3, 0));
        let mut rng = crate::rng(4, 0);
        let mut now = Instant::ZERO;
        let (mut delivered, mut woken) = (0, 0);
        for i in 0..3_000 {
            now += Duration::from_micros(rng.random_range(0..1_500));
            if rng.random_bool(0.5) {
                l.handle_packet(now, udp(i, 0, 1000, Ecn::NotEct));
            } else if let Some(t) = l.poll_timeout().filter(|t| *t <= now) {
                l.handle_timeout(t);
                woken += 1;
            } else {
                l.handle_timeout(now);
            }
            assert_eq!(l.poll_timeout(), l.due_times().0, "after step {i}");
            let had_output = l.has_output();
            let mut output = false;
            while l.poll_event().is_some() {
                output = true;
            }
            while l.poll_delivery().is_some() {
                (output, delivered) = (true, delivered + 1);
            }
            assert_eq!(had_output, output);
            assert!(!l.has_output());
        }
        assert!(delivered > 500 && woken > 500, "{delivered} {woken}");
        let s = l.stats();
        assert!(s.reordered_packets > 0 && s.duplicated_packets > 0 && s.lost_packets > 0);
        // A queue that already holds a packet makes a new link due at once.
        let mut q = fifo();
        q.enqueue(Instant::ZERO, udp(1, 0, 1000, Ecn::NotEct));
        let l = Link::new(LinkConfig::default(), q, crate::rng(3, 0));
        assert_eq!(l.poll_timeout(), Some(Instant::ZERO));
    }
}
