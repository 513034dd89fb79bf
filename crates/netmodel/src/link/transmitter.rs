//! The transmitter: takes packets from the queue head and serializes them
//! per the rate model, honouring outages when they freeze the link.

use super::bursts::{Bursts, OpportunityClock};
use super::driver_queue::DriverQueue;
use super::outage::OutageSchedule;
use super::rate::{MAHIMAHI_OPPORTUNITY_BYTES, MahimahiTrace, RateModel};
use crate::Rng;
use crate::packet::Packet;
use crate::queue::Queue;
use brisk_time::Instant;
use std::time::Duration;

/// What one transmitter step produced, in order.
#[derive(Debug)]
pub(crate) enum TxOutput {
    /// A packet left the queue to be serialized.
    Dequeued {
        at: Instant,
        packet_id: u64,
        queue_delay: Duration,
    },
    /// A packet is fully serialized; `busy` is the air time it used.
    Sent {
        at: Instant,
        packet: Packet,
        busy: Duration,
    },
}

/// Where a transmitter step puts what it produced, in order.
pub(crate) trait TxSink {
    /// `packet` left the queue at `at` to be serialized.
    fn dequeued(&mut self, at: Instant, packet: &Packet);
    /// `packet` finished serialization at `at` after `busy` of air time.
    fn sent(&mut self, at: Instant, packet: Packet, busy: Duration);
}

impl TxSink for Vec<TxOutput> {
    fn dequeued(&mut self, at: Instant, packet: &Packet) {
        self.push(TxOutput::Dequeued {
            at,
            packet_id: packet.id,
            queue_delay: at - packet.enqueued_at,
        });
    }

    fn sent(&mut self, at: Instant, packet: Packet, busy: Duration) {
        self.push(TxOutput::Sent { at, packet, busy });
    }
}

#[derive(Debug)]
pub(crate) struct Transmitter {
    /// Outages that freeze the transmitter (empty in `outage_drops` mode).
    freeze: OutageSchedule,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Constant or scheduled rate.
    Continuous {
        rate: RateModel,
        /// When the last packet finished (or the link woke up idle).
        free_at: Instant,
        /// The packet being serialized, its finish time and air time.
        sending: Option<(Packet, Instant, Duration)>,
    },
    /// Opportunities replayed from a trace.
    Trace {
        trace: MahimahiTrace,
        /// Global index of the next opportunity.
        next: u64,
        /// The packet in transit and its bytes still to send.
        sending: Option<(Packet, usize)>,
    },
    /// A constant or scheduled rate delivered in bursts at transmit
    /// opportunities ([`super::bursts`]).
    Bursty {
        rate: RateModel,
        /// Boxed: its random stream is larger than the other states.
        clock: Box<OpportunityClock>,
        /// The packet in transit and its bytes still to send.
        sending: Option<(Packet, usize)>,
        /// The driver queue the opportunities drain, when the aggregation
        /// wait happens below the queue discipline; `None` drains the
        /// queue discipline itself.
        driver: Option<Driver>,
    },
    /// A trace file that was never loaded: no capacity at all.
    Stalled,
}

/// A driver queue and when it last took packets from the queue discipline.
#[derive(Debug)]
struct Driver {
    queue: DriverQueue,
    /// When it takes from the queue discipline next, if it has room and
    /// the queue discipline holds packets (it empties the queue discipline
    /// whenever it has room, so both hold only for a packet just queued).
    pull_at: Instant,
}

impl Transmitter {
    /// `bursts` comes with the random stream its opportunities draw from;
    /// a trace keeps its own timing and ignores it
    /// ([`crate::LinkConfig::validate`] refuses the pair).
    pub(crate) fn new(
        rate: &RateModel,
        freeze: OutageSchedule,
        bursts: Option<(Bursts, Rng)>,
    ) -> Transmitter {
        let state = match (rate, bursts) {
            (RateModel::Constant { .. } | RateModel::Schedule(_), Some((b, rng))) => {
                State::Bursty {
                    rate: rate.clone(),
                    clock: Box::new(OpportunityClock::new(b, rng)),
                    sending: None,
                    driver: b.driver_queue.map(|airtime| Driver {
                        queue: DriverQueue::new(airtime),
                        pull_at: Instant::ZERO,
                    }),
                }
            }
            (RateModel::Constant { .. } | RateModel::Schedule(_), None) => State::Continuous {
                rate: rate.clone(),
                free_at: Instant::ZERO,
                sending: None,
            },
            (RateModel::Mahimahi(trace), _) => State::Trace {
                trace: trace.clone(),
                next: 0,
                sending: None,
            },
            (RateModel::MahimahiFile(_), _) => State::Stalled,
        };
        Transmitter { freeze, state }
    }

    /// Bytes a trace offered in `[0, until)`: its delivery opportunities,
    /// less those a freezing outage took. `None` for rate models, whose
    /// busy time already measures use against what the link offered.
    pub(crate) fn offered_bytes(&self, until: Instant) -> Option<u64> {
        let State::Trace { trace, .. } = &self.state else {
            return None;
        };
        let mut opportunities = 0u64;
        let mut t = Instant::ZERO;
        while t < until {
            if let Some(up) = self.freeze.up_again(t) {
                t = up;
                continue;
            }
            // Up from `t` until the next outage starts (or the end).
            let down = self
                .freeze
                .next_start_after(t)
                .map_or(until, |s| s.min(until));
            let (from, to) = (
                trace.first_opportunity(t, true),
                trace.first_opportunity(down, true),
            );
            opportunities = opportunities.saturating_add(to.saturating_sub(from));
            t = down;
        }
        Some(opportunities.saturating_mul(MAHIMAHI_OPPORTUNITY_BYTES as u64))
    }

    /// True when no packet is partly or wholly being serialized (nor
    /// waits in a driver queue).
    pub(crate) fn is_idle(&self) -> bool {
        match &self.state {
            State::Continuous { sending, .. } => sending.is_none(),
            State::Trace { sending, .. } => sending.is_none(),
            State::Bursty {
                sending, driver, ..
            } => sending.is_none() && driver.as_ref().is_none_or(|d| d.queue.is_empty()),
            State::Stalled => true,
        }
    }

    /// Whether packets pass through a driver queue below the queue
    /// discipline.
    pub(crate) fn has_driver(&self) -> bool {
        matches!(
            self.state,
            State::Bursty {
                driver: Some(_),
                ..
            }
        )
    }

    /// A packet is about to be queued at `now`: true when a driver queue
    /// has room for it and takes it at once, so the caller must step the
    /// transmitter at `now`.
    pub(crate) fn pulls(&mut self, now: Instant) -> bool {
        match &mut self.state {
            State::Bursty {
                rate,
                driver: Some(d),
                ..
            } if d.queue.has_room(rate.piece(now).0) => {
                d.pull_at = now;
                true
            }
            _ => false,
        }
    }

    /// A packet is about to be queued at `now` while the transmitter is idle
    /// and the queue empty.
    pub(crate) fn wake(&mut self, now: Instant) {
        match &mut self.state {
            State::Continuous { free_at, .. } => *free_at = (*free_at).max(now),
            // Opportunities up to and including `now` found nothing to send
            // and are gone (mahimahi drains them before enqueueing).
            State::Trace { trace, next, .. } => {
                *next = (*next).max(trace.first_opportunity(now, false));
            }
            // Likewise for bursts: a packet arriving at the instant of an
            // opportunity waits for the next.
            State::Bursty { clock, .. } => clock.skip_to(now, false),
            State::Stalled => {}
        }
    }

    /// When the transmitter next has something to do, given the queue it
    /// drains (asked only when it matters: mid-packet it does not).
    #[inline]
    pub(crate) fn due(&self, queue: &dyn Queue) -> Option<Instant> {
        // A busy link asks after every packet it starts: answered in
        // line, without a call.
        if let State::Continuous {
            sending: Some((_, finish, _)),
            ..
        } = &self.state
        {
            return Some(*finish);
        }
        self.due_otherwise(queue)
    }

    /// [`Transmitter::due`], out of line for the rarer states.
    fn due_otherwise(&self, queue: &dyn Queue) -> Option<Instant> {
        let queue_has_packets = || !queue.is_empty();
        match &self.state {
            State::Continuous {
                sending: Some((_, finish, _)),
                ..
            } => Some(*finish),
            State::Continuous { free_at, .. } => {
                queue_has_packets().then(|| self.freeze.up_again(*free_at).unwrap_or(*free_at))
            }
            State::Trace {
                trace,
                next,
                sending,
            } => (sending.is_some() || queue_has_packets()).then(|| trace.opportunity_at(*next)),
            State::Bursty {
                clock,
                sending,
                driver: None,
                ..
            } => (sending.is_some() || queue_has_packets()).then(|| clock.next()),
            State::Bursty {
                rate,
                clock,
                sending,
                driver: Some(d),
            } => {
                let send = (sending.is_some() || !d.queue.is_empty()).then(|| clock.next());
                let pull = (d.queue.has_room(rate.piece(d.pull_at).0) && queue_has_packets())
                    .then_some(d.pull_at);
                match (send, pull) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            State::Stalled => None,
        }
    }

    /// Does what is due at `at` (a time [`Transmitter::due`] returned).
    /// True when it finished a packet at `at` and is due again at `at` to
    /// start the next one, so the caller can step again at once. With
    /// `chain` a continuous transmitter starts that next packet in the
    /// same step instead: for a caller whose handling of a sent packet
    /// leaves no trace event, the outputs come out in the same order.
    pub(crate) fn step<S: TxSink>(
        &mut self,
        at: Instant,
        queue: &mut dyn Queue,
        out: &mut S,
        chain: bool,
    ) -> bool {
        let frozen_until = self.freeze.up_again(at);
        match &mut self.state {
            State::Continuous {
                rate,
                free_at,
                sending,
            } => {
                if let Some((packet, finish, busy)) = sending.take_if(|s| s.1 <= at) {
                    *free_at = finish;
                    out.sent(finish, packet, busy);
                    // What `due` would answer now, without its questions.
                    let again = finish == at && frozen_until.is_none() && !queue.is_empty();
                    if !(again && chain) {
                        return again;
                    }
                } else if sending.is_some() {
                    return false;
                }
                if let Some(up) = frozen_until {
                    *free_at = up;
                    return false;
                }
                let Some(packet) = queue.dequeue(at) else {
                    *free_at = at;
                    return false;
                };
                out.dequeued(at, &packet);
                let (finish, busy) = finish_time(rate, &self.freeze, at, packet.len());
                *sending = Some((packet, finish, busy));
            }
            State::Trace {
                trace,
                next,
                sending,
            } => {
                if let Some(up) = frozen_until {
                    // The radio is down: these opportunities are lost.
                    *next = trace.first_opportunity(up, true);
                    return false;
                }
                *next += 1;
                // Air time at the trace's mean rate.
                let mean_bps = trace.mean_bps();
                send_budget(
                    at,
                    MAHIMAHI_OPPORTUNITY_BYTES,
                    &mut |out| from_queue(at, queue, out),
                    sending,
                    out,
                    |len| Duration::from_secs_f64(len as f64 * 8.0 / mean_bps),
                );
            }
            State::Bursty {
                rate,
                clock,
                sending,
                driver,
            } => {
                let bps = rate.piece(at).0;
                let air = |len: usize| {
                    Duration::from_nanos((len as u64 * 8_000_000_000).div_ceil(bps.max(1)))
                };
                let Some(d) = driver else {
                    if let Some(up) = frozen_until {
                        // The radio is down: these opportunities are lost.
                        clock.skip_to(up, true);
                        return false;
                    }
                    let budget = clock.budget_bytes(rate);
                    clock.advance();
                    send_budget(
                        at,
                        budget,
                        &mut |out| from_queue(at, queue, out),
                        sending,
                        out,
                        air,
                    );
                    return false;
                };
                if let Some(up) = frozen_until {
                    // The radio is down: these opportunities are lost, but
                    // the driver still fills from the queue discipline.
                    clock.skip_to(up, true);
                } else if clock.next() <= at && (sending.is_some() || !d.queue.is_empty()) {
                    let budget = clock.budget_bytes(rate);
                    clock.advance();
                    let driver_queue = &mut d.queue;
                    send_budget(at, budget, &mut |_| driver_queue.pop(), sending, out, air);
                }
                d.pull_at = at;
                while d.queue.has_room(bps) {
                    let Some(packet) = from_queue(at, queue, out) else {
                        break;
                    };
                    d.queue.push(packet);
                }
            }
            State::Stalled => {}
        }
        false
    }
}

/// Spends `budget` bytes at the opportunity `at`: finishes the packet in
/// transit, then takes packets from `next` (the queue head or a driver
/// queue) until the budget runs out; a packet it cannot finish keeps its
/// remaining bytes in `sending`. Every packet finished leaves at `at`,
/// with the air time `air(len)`.
fn send_budget<S: TxSink>(
    at: Instant,
    mut budget: usize,
    next: &mut dyn FnMut(&mut S) -> Option<Packet>,
    sending: &mut Option<(Packet, usize)>,
    out: &mut S,
    air: impl Fn(usize) -> Duration,
) {
    while budget > 0 {
        if sending.is_none() {
            let Some(packet) = next(out) else {
                break;
            };
            let len = packet.len();
            *sending = Some((packet, len));
        }
        let Some((_, left)) = sending.as_mut() else {
            break;
        };
        let used = budget.min(*left);
        *left -= used;
        budget -= used;
        if let Some((packet, _)) = sending.take_if(|s| s.1 == 0) {
            let busy = air(packet.len());
            out.sent(at, packet, busy);
        }
    }
}

/// The queue discipline's head at `at`, reported as it leaves.
fn from_queue<S: TxSink>(at: Instant, queue: &mut dyn Queue, out: &mut S) -> Option<Packet> {
    let packet = queue.dequeue(at)?;
    out.dequeued(at, &packet);
    Some(packet)
}

/// When a packet of `len_bytes` started at `start` is fully serialized, and
/// the air time it used: the rate integrated exactly over rate steps, with
/// the transmitter paused in freezing outages. Works in bit-nanoseconds so
/// no rounding accumulates across steps.
fn finish_time(
    rate: &RateModel,
    freeze: &OutageSchedule,
    start: Instant,
    len_bytes: usize,
) -> (Instant, Duration) {
    // The common link: one constant rate, never frozen. The loop below
    // comes to this one division (in 64 bits, as it does).
    if let RateModel::Constant { bps } = rate
        && freeze.is_empty()
        && let Some(need) = (len_bytes as u64).checked_mul(8_000_000_000)
    {
        let air = Duration::from_nanos(need.div_ceil((*bps).max(1)));
        return (start + air, air);
    }
    let mut t = start;
    let mut need = len_bytes as u128 * 8 * 1_000_000_000;
    let mut busy_ns: u128 = 0;
    loop {
        if let Some(up) = freeze.up_again(t) {
            t = up;
            continue;
        }
        let (bps, rate_change) = rate.piece(t);
        let bps = u128::from(bps);
        let change = match (rate_change, freeze.next_start_after(t)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // 64-bit division when it fits (always, for real packet sizes).
        let full_ns = match (u64::try_from(need), u64::try_from(bps)) {
            (Ok(n), Ok(b)) => u128::from(n.div_ceil(b)),
            _ => need.div_ceil(bps),
        };
        match change {
            Some(c) if (c - t).as_nanos() < full_ns => {
                let dt = (c - t).as_nanos();
                need -= bps * dt;
                busy_ns += dt;
                t = c;
            }
            _ => {
                let dt = nanos(full_ns);
                return (t + dt, nanos(busy_ns + full_ns));
            }
        }
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::super::outage::Outage;
    use super::super::rate::{RateSchedule, RateStep};
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn integrates_across_rate_steps() {
        // 8 Mbit/s until 10 ms, then 1 Mbit/s: a 2000-byte packet started at
        // 9 ms sends 1000 B by 10 ms and the other 1000 B in 8 ms.
        let rate = RateModel::Schedule(
            RateSchedule::new(vec![
                RateStep {
                    at: Duration::ZERO,
                    bps: 8_000_000,
                },
                RateStep {
                    at: Duration::from_millis(10),
                    bps: 1_000_000,
                },
            ])
            .unwrap(),
        );
        let none = OutageSchedule::default();
        let (finish, busy) = finish_time(&rate, &none, ms(9), 2000);
        assert_eq!(finish, ms(18));
        assert_eq!(busy, Duration::from_millis(9));
    }

    #[test]
    fn a_constant_rate_finishes_as_the_same_rate_in_a_schedule() {
        // The constant rate's shortcut against the loop, with rates that
        // do and do not divide a packet's bits evenly.
        let none = OutageSchedule::default();
        for bps in [1, 999_983, 8_000_000, 100_000_000, 12_345_678_901] {
            let schedule = RateModel::Schedule(
                RateSchedule::new(vec![RateStep {
                    at: Duration::ZERO,
                    bps,
                }])
                .unwrap(),
            );
            for len in [1, 40, 1_252, 1_500, 65_535] {
                let start = Instant::from_nanos(123_456_789);
                assert_eq!(
                    finish_time(&RateModel::Constant { bps }, &none, start, len),
                    finish_time(&schedule, &none, start, len),
                    "{bps} bit/s, {len} B"
                );
            }
        }
    }

    #[test]
    fn pauses_in_a_freezing_outage() {
        let rate = RateModel::Constant { bps: 8_000_000 };
        let freeze = OutageSchedule::new(
            &[Outage {
                start: Duration::from_millis(1),
                duration: Duration::from_millis(5),
            }],
            None,
        );
        // 2000 B take 2 ms: 1 ms before the outage, 1 ms after it.
        assert_eq!(
            finish_time(&rate, &freeze, ms(0), 2000),
            (ms(7), Duration::from_millis(2))
        );
        // Starting inside the outage waits for its end.
        assert_eq!(finish_time(&rate, &freeze, ms(3), 1000).0, ms(7));
    }

    #[test]
    fn a_trace_offers_its_opportunities_less_the_frozen_ones() {
        // Opportunities at 1, 2, 2, 4 ms, looping every 4 ms.
        let trace = MahimahiTrace::parse("1\n2\n2\n4\n").unwrap();
        let rate = RateModel::Mahimahi(trace);
        let open = Transmitter::new(&rate, OutageSchedule::default(), None);
        let bytes = |n: u64| Some(n * MAHIMAHI_OPPORTUNITY_BYTES as u64);
        // [0, 4 ms): the opportunities at 1, 2 and 2 ms.
        assert_eq!(open.offered_bytes(ms(4)), bytes(3));
        // [0, 40 ms): ten periods of four, less the one at 40 ms itself.
        assert_eq!(open.offered_bytes(ms(40)), bytes(39));
        // Frozen over [5 ms, 8 ms): the opportunities at 5, 6 and 6 ms go.
        let freeze = OutageSchedule::new(
            &[Outage {
                start: Duration::from_millis(5),
                duration: Duration::from_millis(3),
            }],
            None,
        );
        let frozen = Transmitter::new(&rate, freeze, None);
        assert_eq!(frozen.offered_bytes(ms(40)), bytes(36));
        // A rate model's busy time is its measure instead.
        let constant = Transmitter::new(
            &RateModel::Constant { bps: 1_000_000 },
            OutageSchedule::default(),
            None,
        );
        assert_eq!(constant.offered_bytes(ms(40)), None);
    }
}
