//! Test helpers: hand-built samples and a tiny single-bottleneck path model.
//!
//! [`PathSim`] is an ACK-clocked sender (no pacing, one ACK per packet) in
//! front of one bottleneck link with either a drop-tail buffer or a step
//! marker that sets CE when a packet's queueing delay exceeds a threshold,
//! the shape of an L4S queue. Loss is detected by the RFC 9002 packet
//! threshold (three later packets acknowledged), or, when nothing is left to
//! acknowledge, after two smoothed RTTs. Optionally the sender is paced the
//! way the connection paces ([`Pacer`] fed with
//! [`Controller::pacing_window`]), packets are lost at random before the
//! bottleneck (a seeded xorshift), and the rate changes mid-run. Everything
//! runs in virtual time and is deterministic.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use brisk_time::Instant;

use super::{AckSample, Controller, EcnCounts, LossSample};
use crate::pacing::Pacer;
use crate::rtt::RttEstimator;

/// The datagram size all controller tests use (`CcConfig::default()`).
pub(crate) const MDS: u64 = 1200;

/// An ACK of `bytes` (whole datagrams) sent at `sent_at`, `ce` of them marked.
pub(crate) fn ack(now: Instant, sent_at: Instant, bytes: u64, ce: u64) -> AckSample {
    let rtt = now - sent_at;
    AckSample {
        now,
        acked_bytes: bytes,
        acked_packets: bytes.div_ceil(MDS),
        latest_rtt: rtt,
        rtt_sampled: true,
        latest_ack_delay: Duration::ZERO,
        smoothed_rtt: rtt,
        min_rtt: rtt,
        ecn_delta: EcnCounts {
            ce,
            ..EcnCounts::default()
        },
        largest_acked_sent_at: sent_at,
        bytes_in_flight: 0,
        app_limited: false,
    }
}

/// One lost datagram sent at `sent_at`.
pub(crate) fn loss(now: Instant, sent_at: Instant, persistent_congestion: bool) -> LossSample {
    LossSample {
        now,
        lost_bytes: MDS,
        lost_packets: 1,
        largest_lost_sent_at: sent_at,
        persistent_congestion,
        bytes_in_flight: 0,
    }
}

/// One round trip of ACKs: as many one-datagram ACKs as the window held at
/// the start, spread evenly over `rtt` from `start`, each for a packet sent
/// `rtt` earlier; ACK `i` carries a CE mark when `marked(i)`. Returns the
/// start of the next round.
pub(crate) fn ack_round(
    cc: &mut dyn Controller,
    start: Instant,
    rtt: Duration,
    marked: impl Fn(u64) -> bool,
) -> Instant {
    let packets = (cc.window() / MDS).max(1);
    let spacing = rtt / u32::try_from(packets).unwrap_or(u32::MAX);
    for i in 0..packets {
        let now = start + spacing * u32::try_from(i).unwrap_or(u32::MAX);
        cc.on_ack(&ack(now, now - rtt, MDS, u64::from(marked(i))));
    }
    start + rtt
}

/// A packet on its way to the receiver and back.
struct Flight {
    sent_at: Instant,
}

/// One ACK-clocked flow through one bottleneck.
pub(crate) struct PathSim<C: Controller + ?Sized = dyn Controller> {
    pub(crate) cc: Box<C>,
    /// Drop-tail limit, counting the packet in service.
    pub(crate) buffer_packets: Option<usize>,
    /// Step marking: CE when the queueing delay a packet meets exceeds this.
    pub(crate) mark_threshold: Option<Duration>,
    /// Pace sends as the connection does.
    pub(crate) pacer: Option<Pacer>,
    /// Probability that a packet is lost before the bottleneck.
    pub(crate) loss_probability: f64,
    rng: u64,
    serialization: Duration,
    base_rtt: Duration,
    now: Instant,
    link_free_at: Instant,
    queue_departures: VecDeque<Instant>,
    in_flight: BTreeMap<u64, Flight>,
    /// ACK arrivals keyed by (time, packet number), carrying the CE flag.
    acks: BTreeMap<(Instant, u64), bool>,
    next_pn: u64,
    bytes_in_flight: u64,
    rtt: RttEstimator,
    /// (departure time, queueing delay met) per delivered packet.
    deliveries: Vec<(Instant, Duration)>,
    /// (time, window bytes) after every ACK.
    trace: Vec<(Instant, u64)>,
    pub(crate) lost_packets: u64,
    pub(crate) marked_packets: u64,
}

impl<C: Controller + ?Sized> PathSim<C> {
    pub(crate) fn new(cc: Box<C>, rate_bps: f64, base_rtt: Duration) -> Self {
        Self {
            cc,
            buffer_packets: None,
            mark_threshold: None,
            pacer: None,
            loss_probability: 0.0,
            rng: 0x2545_f491_4f6c_dd1d,
            serialization: Duration::from_secs_f64(MDS as f64 * 8.0 / rate_bps),
            base_rtt,
            now: Instant::ZERO,
            link_free_at: Instant::ZERO,
            queue_departures: VecDeque::new(),
            in_flight: BTreeMap::new(),
            acks: BTreeMap::new(),
            next_pn: 0,
            bytes_in_flight: 0,
            rtt: RttEstimator::default(),
            deliveries: Vec::new(),
            trace: Vec::new(),
            lost_packets: 0,
            marked_packets: 0,
        }
    }

    /// Paces the sender from now on.
    pub(crate) fn paced(mut self) -> Self {
        self.pacer = Some(Pacer::new(MDS));
        self
    }

    /// Changes the bottleneck rate for packets that arrive from now on.
    pub(crate) fn set_rate_bps(&mut self, rate_bps: f64) {
        self.serialization = Duration::from_secs_f64(MDS as f64 * 8.0 / rate_bps);
    }

    /// The current virtual time.
    pub(crate) fn now(&self) -> Instant {
        self.now
    }

    pub(crate) fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        while self.now < end {
            let pace_at = self.send_allowed();
            let next_ack = self.acks.first_key_value().map(|(&(at, _), _)| at);
            if let Some(at) = pace_at.filter(|&p| next_ack.is_none_or(|a| p < a)) {
                self.now = at.min(end);
                continue;
            }
            match self.acks.pop_first() {
                Some(((at, pn), ce)) => {
                    self.now = at;
                    self.on_ack_arrival(pn, ce);
                }
                None if !self.in_flight.is_empty() => {
                    // Everything left is lost: declare it after 2 SRTT.
                    self.now += self.rtt.smoothed() * 2;
                    let lost: Vec<u64> = self.in_flight.keys().copied().collect();
                    self.declare_lost(&lost);
                }
                None => break,
            }
        }
    }

    /// Sends what the window and the pacer allow now; returns when the
    /// pacer will allow the next packet, if it holds one back.
    fn send_allowed(&mut self) -> Option<Instant> {
        while self.bytes_in_flight + MDS <= self.cc.window() {
            if let Some(pacer) = self.pacer.as_mut() {
                // As the connection paces: at the controller's own rate
                // when it has one, else its window per smoothed RTT.
                let at = match self.cc.pacing_rate() {
                    Some(rate) => {
                        pacer.next_send_time_at_rate(self.now, MDS, rate, self.cc.pacing())
                    }
                    None => pacer.next_send_time(
                        self.now,
                        MDS,
                        self.cc.pacing_window(),
                        self.rtt.pacing_rtt(),
                        self.cc.pacing(),
                    ),
                };
                if at > self.now {
                    return Some(at);
                }
                pacer.on_sent(self.now, MDS);
            }
            let pn = self.next_pn;
            self.next_pn += 1;
            while self
                .queue_departures
                .front()
                .is_some_and(|&d| d <= self.now)
            {
                self.queue_departures.pop_front();
            }
            let dropped = self
                .buffer_packets
                .is_some_and(|limit| self.queue_departures.len() >= limit)
                || self.random_loss();
            if !dropped {
                let queueing = self.link_free_at - self.now;
                let ce = self.mark_threshold.is_some_and(|th| queueing > th);
                let departs = self.link_free_at.max(self.now) + self.serialization;
                self.link_free_at = departs;
                self.queue_departures.push_back(departs);
                self.deliveries.push((departs, queueing));
                self.acks.insert((departs + self.base_rtt, pn), ce);
            }
            self.in_flight.insert(pn, Flight { sent_at: self.now });
            self.bytes_in_flight += MDS;
            self.cc.on_sent(self.now, MDS, self.bytes_in_flight);
        }
        None
    }

    fn random_loss(&mut self) -> bool {
        if self.loss_probability <= 0.0 {
            return false;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        ((self.rng >> 11) as f64 / (1u64 << 53) as f64) < self.loss_probability
    }

    fn on_ack_arrival(&mut self, pn: u64, ce: bool) {
        let Some(flight) = self.in_flight.remove(&pn) else {
            return;
        };
        self.bytes_in_flight -= MDS;
        self.rtt
            .update(self.now - flight.sent_at, Duration::ZERO, self.now);
        let lost: Vec<u64> = self
            .in_flight
            .range(..pn.saturating_sub(2))
            .map(|(&p, _)| p)
            .collect();
        self.declare_lost(&lost);
        self.marked_packets += u64::from(ce);
        self.cc.on_ack(&AckSample {
            now: self.now,
            acked_bytes: MDS,
            acked_packets: 1,
            latest_rtt: self.rtt.latest(),
            rtt_sampled: true,
            latest_ack_delay: self.rtt.latest_ack_delay(),
            smoothed_rtt: self.rtt.smoothed(),
            min_rtt: self.rtt.min(),
            ecn_delta: EcnCounts {
                ce: u64::from(ce),
                ..EcnCounts::default()
            },
            largest_acked_sent_at: flight.sent_at,
            bytes_in_flight: self.bytes_in_flight,
            app_limited: false,
        });
        self.trace.push((self.now, self.cc.window()));
    }

    fn declare_lost(&mut self, pns: &[u64]) {
        let mut largest_sent_at = None;
        for pn in pns {
            if let Some(f) = self.in_flight.remove(pn) {
                self.bytes_in_flight -= MDS;
                self.lost_packets += 1;
                largest_sent_at = Some(f.sent_at);
            }
        }
        if let Some(sent_at) = largest_sent_at {
            let lost_packets = pns.len() as u64;
            self.cc.on_loss(&LossSample {
                now: self.now,
                lost_bytes: lost_packets * MDS,
                lost_packets,
                largest_lost_sent_at: sent_at,
                persistent_congestion: false,
                bytes_in_flight: self.bytes_in_flight,
            });
        }
    }

    fn since(&self, last: Duration) -> Instant {
        self.now - last
    }

    /// Lowest and highest window, in datagrams, over the last `last`.
    pub(crate) fn window_range_packets(&self, last: Duration) -> (f64, f64) {
        let from = self.since(last);
        self.trace.iter().filter(|(t, _)| *t >= from).fold(
            (f64::MAX, 0.0f64),
            |(lo, hi), &(_, w)| {
                let packets = w as f64 / MDS as f64;
                (lo.min(packets), hi.max(packets))
            },
        )
    }

    /// Fraction of the last `last` the bottleneck spent sending.
    pub(crate) fn utilization(&self, last: Duration) -> f64 {
        let from = self.since(last);
        let sent = self
            .deliveries
            .iter()
            .filter(|(t, _)| *t >= from && *t <= self.now)
            .count();
        sent as f64 * self.serialization.as_secs_f64() / last.as_secs_f64()
    }

    /// The worst queueing delay a packet met over the last `last`.
    pub(crate) fn max_queue_delay(&self, last: Duration) -> Duration {
        let from = self.since(last);
        self.deliveries
            .iter()
            .filter(|(t, _)| *t >= from)
            .map(|&(_, q)| q)
            .max()
            .unwrap_or_default()
    }
}
