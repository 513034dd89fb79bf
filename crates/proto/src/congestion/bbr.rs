//! BBR, a model-based controller (BBRv1 after
//! draft-cardwell-iccrg-bbr-congestion-control-00, with Linux's packet
//! conservation on loss): it paces at its estimate of the bottleneck
//! bandwidth and keeps about two bandwidth-delay products in flight,
//! instead of reading every loss as congestion.
//!
//! The model: `btl_bw`, the largest delivery rate ([`DeliveryRate`]) seen
//! over the last 10 round trips, and `min_rtt`, the smallest RTT of the last
//! 10 s. Their product is the BDP.
//!
//! States: Startup (pacing and window gain 2/ln 2, so the sending rate
//! doubles per round trip) until the bandwidth grew less than 25% in three
//! rounds; with `bbr_bounded_startup`, a window of two BDPs of the delivery
//! rate (BBRv3's), so a buffer of about one BDP does not overflow, and an
//! end on a round that lost well above the random loss share; Drain (the
//! inverse gain) until the queue Startup built is gone;
//! ProbeBw, cycling the pacing gain through 1.25, 0.75 and six rounds of 1
//! with a window of twice the BDP; ProbeRtt, entered when `min_rtt` is 10 s
//! old, holding half the BDP in flight (BBRv2's choice; BBRv1 holds four
//! packets) for 200 ms and one round so the queue empties and a fresh
//! minimum can be seen. An RTT within 1/32 of the minimum shows the queue
//! empty already and keeps the minimum fresh, so a flow that keeps no
//! queue rarely needs ProbeRtt at all.
//!
//! Loss: random loss changes neither the bandwidth nor the RTT estimate, so
//! the rate stays where the model says; the window only loses the lost
//! bytes, regained with the next ACKs. The delivery rate it measures,
//! though, lacks the lost packets, which used the link all the same: paced
//! at it, BBR leaves the link idle by the loss rate. So BBR keeps the share
//! of packets lost in rounds whose RTTs showed no queue (a running average
//! per round, at most 15%, reset by a loss with a queue) and takes the
//! bottleneck's rate as the delivery rate divided by one minus that share. A loss while the RTT shows a queue
//! (over 1.5 times `min_rtt`, more than ProbeBw's own probe builds) is
//! taken for overflow: it starts a recovery episode in which, for one round
//! trip, the window is held to packet conservation (send one for each
//! delivered, do not replace what was lost), then the window before the
//! episode comes back. Linux conserves on every loss episode; gating on
//! the queue keeps a path with random loss and no queue out of it.
//! Persistent congestion (RFC 9002 §7.6) collapses the window to four
//! packets, from which it regrows by what each ACK delivers.
//!
//! Known limit (BBRv1's): through a FIFO smaller than the BDP, BBR's probes
//! keep overflowing it and a CUBIC flow beside it keeps only a few percent
//! of the link; BBRv2's loss-bounded in-flight cap is the answer, at the
//! price of tolerating less random loss.
//!
//! ECN: BBRv1 has no answer to CE marks, so BBR sends Not-ECT and an
//! ECN-marking queue drops its packets instead, which BBR sees as loss. A
//! CE response (BBRv2's in-flight cap) is not implemented.
//!
//! Pacing: BBR hands the pacer its rate as it is, `pacing_gain * btl_bw`,
//! 1% under to drain what jitter adds ([`Controller::pacing_rate`]); the
//! pacer applies no gain of its own to it. Before the first bandwidth
//! sample the pacer spreads the initial window at Startup's gain.
//! [`Controller::pacing_window`] stays what every controller reports to
//! applications: the rate per smoothed RTT before the headroom the pacer
//! gives window-based controllers, so an application sizing its output
//! from it treats every controller alike.

use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Ecn;

use super::delivery_rate::{DeliveryRate, RateSample};
use super::{AckSample, CcConfig, CcMetrics, Controller, LossSample, Recovery};

/// Startup's pacing and window gain, `2 / ln 2`: the smallest gain that
/// doubles the delivery rate every round trip.
pub(super) const BBR_HIGH_GAIN: f64 = 2.885;
/// ProbeBw's pacing gains, one per phase of about one `min_rtt`: probe for
/// more bandwidth, drain the queue the probe built, then cruise.
pub(super) const BBR_PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// ProbeBw's window, in BDPs: room for delayed and aggregated ACKs.
pub(super) const BBR_CWND_GAIN: f64 = 2.0;
/// Startup's window with `bbr_bounded_startup`, in BDPs (BBRv3's): the
/// pacing gain still doubles the rate per round, but the window stops one
/// BDP of queue above the pipe instead of 1.9 (2/ln 2 BDPs), so a buffer
/// of about one BDP does not overflow in the round the pipe fills.
pub(super) const STARTUP_CWND_GAIN: f64 = 2.0;
/// Round trips the bandwidth filter remembers.
pub(super) const BTL_BW_FILTER_ROUNDS: u64 = 10;
/// How long a minimum RTT stays valid before ProbeRtt looks again.
pub(super) const MIN_RTT_FILTER: Duration = Duration::from_secs(10);
/// How long ProbeRtt holds the window at the minimum.
pub(super) const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// The smallest window, in packets: enough for delayed ACKs to keep coming.
pub(super) const MIN_PIPE_PACKETS: u64 = 4;
/// Startup ends when the bandwidth grew less than this factor...
const FULL_BW_GROWTH: f64 = 1.25;
/// ...in this many round trips in a row.
const FULL_BW_ROUNDS: u32 = 3;
/// Startup also ends at the end of a round that lost a share of its
/// packets this much above the random loss share: the queue overflowed.
const STARTUP_EXCESS_LOSS: f64 = 0.1;
/// Pacing slightly under the estimate, as Linux does, so a queue left by
/// jitter drains.
const PACING_MARGIN: f64 = 0.99;
/// Packets added to every window target for pacing bursts and ACK
/// aggregation (Linux's quantization budget).
const QUANTA_PACKETS: u64 = 3;
/// A loss is taken for congestion only while the RTT shows a queue of at
/// least this fraction of `min_rtt`: more than ProbeBw's own 1.25 probe
/// builds, so random loss on an unqueued path changes nothing.
const CONGESTION_QUEUE_FRACTION: f64 = 0.5;
/// A round counts toward the random loss share only if no RTT in it
/// exceeded `min_rtt` by more than this fraction plus
/// [`RANDOM_LOSS_QUEUE_SLACK`]: its losses met no queue to overflow.
const RANDOM_LOSS_QUEUE_FRACTION: f64 = 0.125;
/// See [`RANDOM_LOSS_QUEUE_FRACTION`]: room for ACK delay and pacing bursts.
const RANDOM_LOSS_QUEUE_SLACK: Duration = Duration::from_millis(1);
/// Weight of each unqueued round in the random loss share.
const RANDOM_LOSS_GAIN: f64 = 0.125;
/// The random loss share the model makes up for at most.
const RANDOM_LOSS_MAX: f64 = 0.15;
/// Rounds that delivered fewer packets than this say too little about the
/// loss rate to count.
const RANDOM_LOSS_MIN_PACKETS: u64 = 16;
/// An RTT within this fraction of `min_rtt` shows the queue (nearly) empty,
/// so it keeps the minimum fresh: ProbeRtt is only needed when no such
/// sample came for [`MIN_RTT_FILTER`].
const MIN_RTT_STABLE_FRACTION: f64 = 1.0 / 32.0;
/// ProbeRtt's window, in BDPs (BBRv2's): low enough to empty the queue,
/// high enough to keep the link half busy meanwhile.
const PROBE_RTT_CWND_GAIN: f64 = 0.5;

/// BBR's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BbrState {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The largest rate over the last [`BTL_BW_FILTER_ROUNDS`] round trips
/// that gave a sample: one slot per round, reused ten rounds later. Rounds
/// without samples (app-limited ones) do not age the estimate, as in
/// Linux, where the filter only moves when a sample goes in.
#[derive(Clone, Copy, Debug, Default)]
struct MaxBwFilter {
    /// (round, largest rate in bytes/s seen in it).
    slots: [(u64, f64); BTL_BW_FILTER_ROUNDS as usize],
    /// The round of the newest sample.
    latest_round: u64,
}

impl MaxBwFilter {
    fn update(&mut self, round: u64, bw: f64) {
        let slot = &mut self.slots[(round % BTL_BW_FILTER_ROUNDS) as usize];
        if slot.0 != round {
            *slot = (round, 0.0);
        }
        slot.1 = slot.1.max(bw);
        self.latest_round = self.latest_round.max(round);
    }

    fn get(&self) -> f64 {
        let round = self.latest_round;
        self.slots
            .iter()
            .filter(|(r, _)| *r <= round && round - r < BTL_BW_FILTER_ROUNDS)
            .fold(0.0, |max, (_, bw)| max.max(*bw))
    }
}

/// BBR congestion control.
#[derive(Clone, Debug)]
pub(crate) struct Bbr {
    mds: u64,
    initial_window: u64,
    /// [`MIN_PIPE_PACKETS`] datagrams, and at least the configured minimum.
    min_pipe_cwnd: u64,
    state: BbrState,
    rate: DeliveryRate,
    max_bw: MaxBwFilter,
    round_count: u64,
    /// Total delivered when the current round began: a round ends when a
    /// packet sent after that is acknowledged.
    next_round_delivered: u64,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    /// The RTT of the newest packet acknowledged.
    latest_rtt: Option<Duration>,
    /// The minimum RTT was older than [`MIN_RTT_FILTER`] at the last ACK.
    min_rtt_expired: bool,
    /// Startup saw the bandwidth stop growing.
    filled_pipe: bool,
    full_bw: f64,
    full_bw_count: u32,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_index: usize,
    cycle_stamp: Instant,
    cwnd: u64,
    /// The window to come back to after recovery or ProbeRtt.
    prior_cwnd: u64,
    recovery: Recovery,
    /// Inside a recovery episode: packet conservation until a packet sent
    /// after the episode began is acknowledged.
    in_recovery: bool,
    /// Bytes declared lost since the last ACK: a probe that loses stops.
    lost_since_ack: u64,
    probe_rtt_done_at: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Bytes declared lost since the current round began.
    round_lost: u64,
    /// Delivered bytes when the current round began.
    round_delivered_start: u64,
    /// An RTT of the current round showed a queue (see
    /// [`RANDOM_LOSS_QUEUE_FRACTION`]).
    round_queued: bool,
    /// The share of packets the round that ended last lost.
    last_round_loss: f64,
    /// Rounds that have counted toward the random loss share, up to
    /// 1 / [`RANDOM_LOSS_GAIN`]: with `bounded_startup` the first ones are
    /// averaged alike.
    random_loss_rounds: u32,
    /// [`CcConfig::bbr_bounded_startup`].
    bounded_startup: bool,
    /// The share of packets lost in rounds that built no queue (a running
    /// average): loss the path adds whatever the rate, which the model
    /// makes up for; zero until such a round lost something, and again
    /// after a loss with a queue.
    random_loss: f64,
    /// Bytes per second; zero until the first bandwidth sample.
    pacing_rate: f64,
    /// The smoothed RTT of the latest ACK: the one the pacer divides by.
    srtt: Duration,
    /// xorshift state for the ProbeBw starting phase, seeded by the first
    /// send time so runs are reproducible.
    rng: u64,
}

impl Bbr {
    pub(crate) fn new(config: &CcConfig) -> Self {
        let mds = config.mds();
        let min_pipe_cwnd = MIN_PIPE_PACKETS
            .saturating_mul(mds)
            .max(config.minimum_window());
        let initial_window = config.initial_window().max(min_pipe_cwnd);
        Self {
            mds,
            initial_window,
            min_pipe_cwnd,
            state: BbrState::Startup,
            rate: DeliveryRate::default(),
            max_bw: MaxBwFilter::default(),
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            latest_rtt: None,
            min_rtt_expired: false,
            filled_pipe: false,
            full_bw: 0.0,
            full_bw_count: 0,
            pacing_gain: BBR_HIGH_GAIN,
            cwnd_gain: BBR_HIGH_GAIN,
            cycle_index: 0,
            cycle_stamp: Instant::ZERO,
            cwnd: initial_window,
            prior_cwnd: initial_window,
            recovery: Recovery::default(),
            in_recovery: false,
            lost_since_ack: 0,
            probe_rtt_done_at: None,
            probe_rtt_round_done: false,
            round_lost: 0,
            round_delivered_start: 0,
            round_queued: false,
            last_round_loss: 0.0,
            random_loss_rounds: 0,
            bounded_startup: config.bbr_bounded_startup,
            random_loss: 0.0,
            pacing_rate: 0.0,
            srtt: Duration::ZERO,
            rng: 0,
        }
    }

    #[cfg(test)]
    /// The current mode.
    pub(crate) fn state(&self) -> BbrState {
        self.state
    }

    /// The bottleneck bandwidth estimate in bytes per second.
    pub(crate) fn btl_bw(&self) -> f64 {
        self.max_bw.get()
    }

    #[cfg(test)]
    /// The minimum RTT estimate, once there is one.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    #[cfg(test)]
    /// The current pacing gain (ProbeBw's cycle, Startup's or Drain's).
    pub(crate) fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// The rate the bottleneck's link carries: the delivery rate, and the
    /// random loss share on top, since a packet lost at random after the
    /// bottleneck used the link as much as one delivered. Without it BBR
    /// paces at the delivery rate and leaves the link idle by the loss
    /// rate.
    fn model_bw(&self) -> f64 {
        self.btl_bw() / (1.0 - self.random_loss)
    }

    /// `gain` BDPs plus the quantization budget; the initial window while
    /// the model is still empty.
    fn inflight(&self, gain: f64) -> u64 {
        let bw = self.model_bw();
        match self.min_rtt {
            Some(rtt) if bw > 0.0 => ((gain * bw * rtt.as_secs_f64()).ceil() as u64)
                .saturating_add(QUANTA_PACKETS.saturating_mul(self.mds)),
            _ => self.initial_window,
        }
    }

    /// Startup's window: [`STARTUP_CWND_GAIN`] BDPs of the delivery rate
    /// itself, without the random loss share made up for: the queue a
    /// bottleneck a BDP deep holds must take the second BDP whole.
    fn startup_inflight(&self) -> u64 {
        let bw = self.btl_bw();
        match self.min_rtt {
            Some(rtt) if bw > 0.0 => ((STARTUP_CWND_GAIN * bw * rtt.as_secs_f64()).ceil() as u64)
                .saturating_add(QUANTA_PACKETS.saturating_mul(self.mds)),
            _ => self.initial_window,
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64: never zero once seeded non-zero.
        let mut x = self.rng.max(1);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn update_round(&mut self, ack: &AckSample, sample: Option<&RateSample>) {
        self.round_start = false;
        let prior = sample
            .map(|s| s.prior_delivered_bytes)
            .or_else(|| self.rate.prior_delivered(ack.largest_acked_sent_at));
        if prior.is_some_and(|p| p >= self.next_round_delivered) {
            self.next_round_delivered = self.rate.delivered_bytes();
            self.round_count = self.round_count.saturating_add(1);
            self.round_start = true;
            self.update_random_loss();
        }
    }

    /// At the end of a round: a round that built no queue and delivered
    /// enough to measure adds its loss share to the running average.
    fn update_random_loss(&mut self) {
        let delivered = self
            .rate
            .delivered_bytes()
            .saturating_sub(self.round_delivered_start);
        let sent = delivered.saturating_add(self.round_lost);
        let enough = sent >= RANDOM_LOSS_MIN_PACKETS.saturating_mul(self.mds.max(1));
        let share = if enough {
            self.round_lost as f64 / sent as f64
        } else {
            0.0
        };
        if !self.round_queued && enough {
            // With a bounded Startup the first rounds weigh alike (a plain
            // mean), so the share is known by Startup's end; then a running
            // average.
            let max_rounds = (1.0 / RANDOM_LOSS_GAIN) as u32;
            self.random_loss_rounds = (self.random_loss_rounds + 1).min(max_rounds);
            let gain = if self.bounded_startup {
                1.0 / f64::from(self.random_loss_rounds)
            } else {
                RANDOM_LOSS_GAIN
            };
            self.random_loss += gain * (share - self.random_loss);
            self.random_loss = self.random_loss.clamp(0.0, RANDOM_LOSS_MAX);
        }
        self.last_round_loss = share;
        self.round_delivered_start = self.rate.delivered_bytes();
        self.round_lost = 0;
        self.round_queued = false;
    }

    /// Marks the round as queued when `rtt` shows a queue beyond
    /// [`RANDOM_LOSS_QUEUE_FRACTION`].
    fn note_round_rtt(&mut self, rtt: Duration) {
        if let Some(min) = self.min_rtt {
            let limit = min.as_secs_f64() * (1.0 + RANDOM_LOSS_QUEUE_FRACTION)
                + RANDOM_LOSS_QUEUE_SLACK.as_secs_f64();
            if rtt.as_secs_f64() > limit {
                self.round_queued = true;
            }
        }
    }

    /// An app-limited sample only counts if it beats the estimate: the path
    /// carried at least that much, but a lower rate says nothing.
    fn update_btl_bw(&mut self, sample: Option<&RateSample>) {
        if let Some(s) = sample {
            let bw = s.rate_bytes_per_sec();
            if !s.app_limited || bw >= self.btl_bw() {
                self.max_bw.update(self.round_count, bw);
            }
        }
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.state = BbrState::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = BBR_CWND_GAIN;
        // Start in any phase but the draining one, so flows that start
        // together do not probe in lockstep.
        let len = BBR_PACING_GAIN_CYCLE.len();
        let r = (self.next_random() % (len as u64 - 1)) as usize;
        self.cycle_index = len - 1 - r;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_stamp = now;
        self.cycle_index = (self.cycle_index + 1) % BBR_PACING_GAIN_CYCLE.len();
        self.pacing_gain = BBR_PACING_GAIN_CYCLE[self.cycle_index];
    }

    /// A phase lasts one `min_rtt`; the probe runs on until it loses or
    /// fills its extra quarter BDP, the drain ends early once the queue is
    /// gone.
    fn check_cycle_phase(&mut self, now: Instant, prior_inflight: u64) {
        if self.state != BbrState::ProbeBw {
            return;
        }
        let full_length = now - self.cycle_stamp > self.min_rtt.unwrap_or_default();
        let next = if self.pacing_gain > 1.0 {
            full_length
                && (self.lost_since_ack > 0 || prior_inflight >= self.inflight(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_inflight <= self.inflight(1.0)
        } else {
            full_length
        };
        if next {
            self.advance_cycle_phase(now);
        }
    }

    fn check_full_pipe(&mut self, app_limited: bool) {
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        if self.bounded_startup && self.startup_loss_excessive() {
            self.filled_pipe = true;
            return;
        }
        let bw = self.btl_bw();
        if bw >= self.full_bw * FULL_BW_GROWTH && bw > 0.0 {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    /// The round that just ended lost [`STARTUP_EXCESS_LOSS`] more of its
    /// packets than the random loss share.
    fn startup_loss_excessive(&self) -> bool {
        self.last_round_loss > self.random_loss + STARTUP_EXCESS_LOSS
    }

    fn check_drain(&mut self, now: Instant, bytes_in_flight: u64) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.state = BbrState::Drain;
            self.pacing_gain = 1.0 / BBR_HIGH_GAIN;
            self.cwnd_gain = BBR_HIGH_GAIN;
        }
        if self.state == BbrState::Drain && bytes_in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    /// Only a minimum the filter holds can expire: a connection whose
    /// first ACK comes more than [`MIN_RTT_FILTER`] after the clock's zero
    /// (any connection opened after a process's first 10 s) must not start
    /// in ProbeRtt.
    fn update_min_rtt(&mut self, now: Instant, rtt: Duration) {
        self.min_rtt_expired = self.min_rtt.is_some()
            && self
                .min_rtt_stamp
                .checked_add(MIN_RTT_FILTER)
                .is_some_and(|expiry| now > expiry);
        if self.min_rtt.is_none_or(|min| rtt <= min) || self.min_rtt_expired {
            self.min_rtt = Some(rtt);
            self.min_rtt_stamp = now;
        } else if self.min_rtt.is_some_and(|min| {
            rtt.as_secs_f64() <= min.as_secs_f64() * (1.0 + MIN_RTT_STABLE_FRACTION)
        }) {
            // The queue is (nearly) empty: the minimum still holds.
            self.min_rtt_stamp = now;
        }
    }

    /// The latest RTT exceeds the minimum by [`CONGESTION_QUEUE_FRACTION`]:
    /// a queue has built, so a loss now is more likely overflow than noise.
    fn queue_evident(&self) -> bool {
        match (self.latest_rtt, self.min_rtt) {
            (Some(latest), Some(min)) => {
                latest.as_secs_f64() > min.as_secs_f64() * (1.0 + CONGESTION_QUEUE_FRACTION)
            }
            _ => false,
        }
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn check_probe_rtt(&mut self, now: Instant, bytes_in_flight: u64) {
        if self.state != BbrState::ProbeRtt && self.min_rtt_expired {
            self.save_cwnd();
            self.state = BbrState::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.probe_rtt_done_at = None;
        }
        if self.state != BbrState::ProbeRtt {
            return;
        }
        match self.probe_rtt_done_at {
            None if bytes_in_flight <= self.probe_rtt_cwnd() => {
                // The queue is gone: hold it so for 200 ms and a full round.
                self.probe_rtt_done_at = now.checked_add(PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = self.rate.delivered_bytes();
                if self.probe_rtt_done_at.is_none() {
                    self.exit_probe_rtt(now);
                }
            }
            None => {}
            Some(done_at) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && now > done_at {
                    self.exit_probe_rtt(now);
                }
            }
        }
    }

    fn exit_probe_rtt(&mut self, now: Instant) {
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        if self.filled_pipe {
            self.enter_probe_bw(now);
        } else {
            self.state = BbrState::Startup;
            self.pacing_gain = BBR_HIGH_GAIN;
            self.cwnd_gain = BBR_HIGH_GAIN;
        }
    }

    /// Startup never lowers the rate (a sample may be short of the round);
    /// once the pipe is full the rate follows the model both ways.
    fn set_pacing_rate(&mut self) {
        let bw = self.model_bw();
        if bw <= 0.0 {
            return;
        }
        let rate = self.pacing_gain * bw * PACING_MARGIN;
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ack: &AckSample) {
        let acked = ack.acked_bytes;
        if self.in_recovery && !self.recovery.covers(ack.largest_acked_sent_at) {
            // A packet sent after the loss arrived: the episode is over.
            self.in_recovery = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        if self.in_recovery {
            self.cwnd = self.cwnd.max(ack.bytes_in_flight.saturating_add(acked));
        } else {
            let target = if self.bounded_startup && self.state == BbrState::Startup {
                self.startup_inflight()
            } else {
                self.inflight(self.cwnd_gain)
            };
            if self.filled_pipe {
                self.cwnd = self.cwnd.saturating_add(acked).min(target);
            } else if self.cwnd < target || self.rate.delivered_bytes() < self.initial_window {
                self.cwnd = self.cwnd.saturating_add(acked);
            }
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd);
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// ProbeRtt's window: [`PROBE_RTT_CWND_GAIN`] BDPs, at least
    /// [`MIN_PIPE_PACKETS`].
    fn probe_rtt_cwnd(&self) -> u64 {
        let bw = self.model_bw();
        let bdp = match self.min_rtt {
            Some(rtt) if bw > 0.0 => (PROBE_RTT_CWND_GAIN * bw * rtt.as_secs_f64()) as u64,
            _ => 0,
        };
        bdp.max(self.min_pipe_cwnd)
    }
}

impl Controller for Bbr {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        if self.rng == 0 {
            self.rng = now.as_nanos() ^ 0x9e37_79b9_7f4a_7c15;
        }
        self.rate.on_sent(now, bytes, bytes_in_flight);
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let prior_inflight = ack.bytes_in_flight.saturating_add(ack.acked_bytes);
        self.srtt = ack.smoothed_rtt;
        let sample = self.rate.on_ack(ack);
        self.update_round(ack, sample.as_ref());
        self.update_btl_bw(sample.as_ref());
        self.check_cycle_phase(ack.now, prior_inflight);
        self.check_full_pipe(sample.map_or(ack.app_limited, |s| s.app_limited));
        self.check_drain(ack.now, ack.bytes_in_flight);
        if let Some(rtt) = ack.now.checked_duration_since(ack.largest_acked_sent_at) {
            self.latest_rtt = Some(rtt);
            self.update_min_rtt(ack.now, rtt);
            self.note_round_rtt(rtt);
        }
        self.check_probe_rtt(ack.now, ack.bytes_in_flight);
        self.lost_since_ack = 0;
        self.set_pacing_rate();
        self.set_cwnd(ack);
    }

    fn on_loss(&mut self, loss: &LossSample) {
        self.lost_since_ack = self.lost_since_ack.saturating_add(loss.lost_bytes);
        self.round_lost = self.round_lost.saturating_add(loss.lost_bytes);
        if self.queue_evident() {
            // Overflow, not noise: nothing to make up for.
            self.random_loss = 0.0;
            self.round_queued = true;
        }
        if loss.persistent_congestion {
            // RFC 9002 §7.6.2: collapse; the next loss is a new episode.
            self.cwnd = self.min_pipe_cwnd;
            self.prior_cwnd = self.min_pipe_cwnd;
            self.in_recovery = false;
            self.recovery.reset();
            return;
        }
        if !self.in_recovery
            && !self.recovery.covers(loss.largest_lost_sent_at)
            && self.queue_evident()
        {
            // A new episode: conserve packets for one round trip.
            self.save_cwnd();
            self.in_recovery = true;
            self.recovery.enter(loss.now);
            self.cwnd = loss.bytes_in_flight.saturating_add(self.mds);
        } else {
            self.cwnd = self.cwnd.saturating_sub(loss.lost_bytes);
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd);
    }

    fn window(&self) -> u64 {
        self.cwnd.max(self.min_pipe_cwnd)
    }

    /// BBR's rate once it has a bandwidth sample and an RTT; before that
    /// the pacer spreads [`pacing_window`](Controller::pacing_window).
    fn pacing_rate(&self) -> Option<f64> {
        (self.pacing_rate > 0.0 && self.srtt > Duration::ZERO).then_some(self.pacing_rate)
    }

    /// The rate per smoothed RTT, divided by the gain the pacer gives a
    /// window (only reported: the pacer itself takes
    /// [`pacing_rate`](Controller::pacing_rate)). Before a bandwidth sample,
    /// the initial window at Startup's gain, which the pacer does spread.
    /// Less the random loss share the rate makes up for: an application
    /// sizing its output from it gets what reaches the receiver, not what
    /// the loss takes on the way.
    fn pacing_window(&self) -> u64 {
        let pacer_gain = self.pacing().gain;
        let srtt = self.srtt.as_secs_f64();
        let window = if self.pacing_rate > 0.0 && srtt > 0.0 {
            self.pacing_rate * (1.0 - self.random_loss) * srtt / pacer_gain
        } else {
            // No bandwidth sample yet: the initial window at Startup's gain.
            BBR_HIGH_GAIN * self.window() as f64 / pacer_gain
        };
        (window.ceil() as u64).max(1)
    }

    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }

    /// BBRv1 sizes its window (two BDPs) with room for ordinary delayed
    /// ACKs only; without an estimate of ACK aggregation (Linux's
    /// `extra_acked`), an ACK every fourth to tenth packet leaves it
    /// window-limited: 0.8% less goodput alone through a 10 Mbit/s FIFO
    /// and a different share beside CUBIC.
    fn tolerates_sparse_acks(&self) -> bool {
        false
    }

    fn in_slow_start(&self) -> bool {
        self.state == BbrState::Startup
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd_bytes: self.window(),
            ssthresh_bytes: None,
            extra: Some(("btl_bw_bps", self.btl_bw() * 8.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::Cubic;
    use crate::congestion::test_path::{MDS, PathSim, ack, loss};
    use crate::pacing::SLOW_START_GAIN;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn bbr() -> Bbr {
        Bbr::new(&CcConfig::default())
    }

    /// A paced BBR on a 12 Mbit/s path (1250 packets/s) with a deep buffer.
    fn path(rtt: Duration) -> PathSim<Bbr> {
        let mut sim = PathSim::new(Box::new(bbr()), 12e6, rtt).paced();
        sim.buffer_packets = Some(1000);
        sim
    }

    const PATH_BYTES_PER_SEC: f64 = 12e6 / 8.0;

    /// A fixed-rate sender: one datagram every `gap` while the window has
    /// room, each acknowledged one RTT later (the RTT it had when sent).
    #[derive(Default)]
    struct Steady {
        now: Instant,
        /// (sent at, acknowledged at) in send order.
        sent: std::collections::VecDeque<(Instant, Instant)>,
    }

    impl Steady {
        fn run(
            &mut self,
            cc: &mut Bbr,
            duration: Duration,
            gap: Duration,
            rtt: Duration,
            app_limited: bool,
        ) {
            let end = self.now + duration;
            while self.now < end {
                let t = self.now;
                while let Some(&(s, at)) = self.sent.front().filter(|&&(_, at)| at <= t) {
                    self.sent.pop_front();
                    cc.on_ack(&AckSample {
                        bytes_in_flight: self.sent.len() as u64 * MDS,
                        app_limited,
                        ..ack(at, s, MDS, 0)
                    });
                }
                if (self.sent.len() as u64 + 1) * MDS <= cc.window() {
                    self.sent.push_back((t, t + rtt));
                    cc.on_sent(t, MDS, self.sent.len() as u64 * MDS);
                }
                self.now += gap;
            }
        }
    }

    #[test]
    fn starts_like_the_other_controllers() {
        let cc = bbr();
        assert_eq!(cc.window(), 12_000);
        assert!(cc.in_slow_start());
        assert_eq!(cc.state(), BbrState::Startup);
        assert_eq!(cc.ecn(), Ecn::NotEct);
        // No sample yet: the pacer gets the initial window at 2/ln 2.
        assert_eq!(cc.pacing_rate(), None);
        assert_eq!(
            cc.pacing_window(),
            (BBR_HIGH_GAIN * 12_000.0 / SLOW_START_GAIN).ceil() as u64
        );
    }

    /// A connection opened long after the clock's zero starts in Startup
    /// and stays there on its first ACKs: its minimum RTT is new, not
    /// stale. (It used to enter ProbeRtt on its first ACK, cutting its
    /// window to four packets.)
    #[test]
    fn a_late_connection_does_not_start_in_probe_rtt() {
        let mut cc = bbr();
        let start = Instant::from_millis(60_000);
        let mut steady = Steady {
            now: start,
            ..Steady::default()
        };
        steady.run(&mut cc, ms(300), ms(1), ms(100), false);
        assert_eq!(cc.state(), BbrState::Startup);
        assert!(cc.window() > 12_000, "window {}", cc.window());
    }

    /// Startup doubles the delivery rate each round, then three rounds
    /// without 25% growth end it; Drain empties the queue Startup built and
    /// ProbeBw keeps it near empty. 12 Mbit/s, 40 ms: a BDP of 50 packets
    /// from an initial window of 10 takes about log2(5) + 3 rounds.
    #[test]
    fn startup_fills_the_pipe_then_drain_empties_the_queue() {
        let mut sim = path(ms(40));
        let mut states = vec![(Instant::ZERO, BbrState::Startup)];
        while sim.now() < Instant::from_millis(3_000) {
            sim.run_for(ms(1));
            let s = sim.cc.state();
            if states.last().is_some_and(|&(_, last)| last != s) {
                states.push((sim.now(), s));
            }
        }
        let order: Vec<BbrState> = states.iter().map(|&(_, s)| s).collect();
        assert_eq!(
            order,
            [BbrState::Startup, BbrState::Drain, BbrState::ProbeBw],
            "{states:?}"
        );
        // Startup took 5 to 9 rounds of at least 40 ms each.
        let startup = states[1].0 - Instant::ZERO;
        assert!((ms(200)..ms(600)).contains(&startup), "{startup:?}");
        // Drain took at most a few rounds.
        let drain = states[2].0 - states[1].0;
        assert!(drain < ms(200), "{drain:?}");
        let bw = sim.cc.btl_bw();
        assert!(
            (bw / PATH_BYTES_PER_SEC - 1.0).abs() < 0.05,
            "btl_bw {bw} B/s"
        );
        assert_eq!(sim.cc.min_rtt(), Some(ms(40) + Duration::from_micros(800)));
        // In ProbeBw the queue stays within the 1.25 probe's quarter BDP
        // (10 ms at 40 ms), far from the 1000-packet buffer.
        assert!(sim.max_queue_delay(ms(1_000)) <= ms(15));
        assert!(sim.utilization(ms(1_000)) > 0.9);
    }

    /// ProbeBw cycles 1.25, 0.75, then six phases at 1, each about one
    /// min_rtt long.
    #[test]
    fn probe_bw_cycles_its_pacing_gain() {
        let mut sim = path(ms(20));
        sim.run_for(ms(1_000));
        assert_eq!(sim.cc.state(), BbrState::ProbeBw);
        let mut phases: Vec<(Instant, f64)> = Vec::new();
        while sim.now() < Instant::from_millis(2_000) {
            sim.run_for(ms(1));
            let g = sim.cc.pacing_gain();
            if phases.last().is_none_or(|&(_, last)| last != g) {
                phases.push((sim.now(), g));
            }
        }
        // Gain changes only between the probe, the drain and cruising, in
        // that order.
        let gains: Vec<f64> = phases.iter().map(|&(_, g)| g).collect();
        let probe = gains.iter().position(|&g| g == 1.25).unwrap();
        for w in gains[probe..].windows(2) {
            let ok = matches!((w[0], w[1]), (1.25, 0.75) | (0.75, 1.0) | (1.0, 1.25));
            assert!(ok, "{gains:?}");
        }
        // A whole cycle (probe to probe) is eight phases of about 20.8 ms.
        let probes: Vec<Instant> = phases
            .iter()
            .filter(|&&(_, g)| g == 1.25)
            .map(|&(t, _)| t)
            .collect();
        assert!(probes.len() >= 4, "{phases:?}");
        for w in probes.windows(2) {
            let cycle = w[1] - w[0];
            assert!((ms(160)..ms(200)).contains(&cycle), "{cycle:?}");
        }
    }

    /// The minimum RTT is 10 s old (the path's delay grew): ProbeRtt drops
    /// the window to half the BDP for 200 ms and a round, takes the new
    /// minimum, and gives the window back.
    #[test]
    fn stale_min_rtt_triggers_probe_rtt_and_recovers() {
        let mut cc = bbr();
        let gap = ms(1);
        let mut flow = Steady::default();
        flow.run(&mut cc, ms(1_000), gap, ms(20), false);
        assert_eq!(cc.min_rtt(), Some(ms(20)));
        let before = cc.window();
        // 30 ms from now on: nothing refreshes the 20 ms minimum.
        flow.run(&mut cc, ms(9_000), gap, ms(30), false);
        assert_ne!(cc.state(), BbrState::ProbeRtt);
        let mut entered = None;
        let mut left = None;
        let mut min_window = u64::MAX;
        for _ in 0..2_000 {
            flow.run(&mut cc, ms(1), gap, ms(30), false);
            let now = flow.now;
            if cc.state() == BbrState::ProbeRtt {
                entered.get_or_insert(now);
                min_window = min_window.min(cc.window());
            } else if entered.is_some() && left.is_none() {
                left = Some(now);
            }
        }
        let (entered, left) = (entered.unwrap(), left.unwrap());
        assert!(entered >= Instant::from_millis(11_000), "{entered:?}");
        // Half the BDP: the expired minimum has already given way to the
        // 30 ms sample, so half of 30 packets.
        assert_eq!(min_window, 15 * MDS);
        let held = left - entered;
        assert!((ms(200)..ms(300)).contains(&held), "{held:?}");
        assert_eq!(cc.min_rtt(), Some(ms(30)));
        assert_eq!(cc.state(), BbrState::ProbeBw);
        assert!(cc.window() >= before.min(cc.inflight(BBR_CWND_GAIN)));
    }

    /// An application sending slowly delivers slowly: with its samples
    /// marked app-limited the estimate keeps the rate the path showed;
    /// without the mark the 10-round filter forgets it.
    #[test]
    fn app_limited_samples_do_not_lower_the_estimate() {
        let run = |app_limited: bool| {
            let mut cc = bbr();
            let mut flow = Steady::default();
            flow.run(&mut cc, ms(1_000), ms(1), ms(20), false);
            let fast = cc.btl_bw();
            assert!((fast - MDS as f64 * 1000.0).abs() < 0.02 * fast, "{fast}");
            flow.run(&mut cc, ms(2_000), ms(10), ms(20), app_limited);
            cc.btl_bw() / fast
        };
        assert!(run(true) > 0.99);
        assert!(run(false) < 0.15);
    }

    /// Random loss changes neither the model nor, outside one round of
    /// packet conservation, the window: at 5% loss BBR keeps the link busy
    /// where CUBIC, measured on the same path, collapses.
    #[test]
    fn random_loss_does_not_collapse_the_rate() {
        let run = |cc: Box<dyn Controller>| {
            let mut sim = PathSim::new(cc, 12e6, ms(100)).paced();
            sim.buffer_packets = Some(250);
            sim.loss_probability = 0.05;
            sim.run_for(Duration::from_secs(20));
            assert!(sim.lost_packets > 50);
            sim.utilization(Duration::from_secs(10))
        };
        let bbr = run(Box::new(bbr()));
        let cubic = run(Box::new(Cubic::new(&CcConfig::default())));
        // Measured: BBR 0.95, CUBIC 0.03.
        assert!(bbr > 0.9, "BBR {bbr}");
        assert!(bbr > 3.0 * cubic, "BBR {bbr} CUBIC {cubic}");
    }

    /// RTTs within 1/32 of the minimum keep it fresh: a flow whose RTT
    /// wanders by a few percent without a queue never enters ProbeRtt.
    #[test]
    fn an_rtt_near_the_minimum_keeps_it_fresh() {
        let mut cc = bbr();
        let mut flow = Steady::default();
        flow.run(&mut cc, ms(1_000), ms(1), ms(40), false);
        for _ in 0..30 {
            flow.run(&mut cc, ms(1_000), ms(1), ms(41), false);
            assert_ne!(cc.state(), BbrState::ProbeRtt);
        }
        assert_eq!(cc.min_rtt(), Some(ms(40)));
    }

    /// Loss before the bottleneck at 5% leaves a BBR that paces at the
    /// delivery rate 5% short of the link; made up for, the link is busy.
    #[test]
    fn random_loss_is_made_up_for() {
        let mut sim = PathSim::new(Box::new(bbr()), 12e6, ms(100)).paced();
        sim.buffer_packets = Some(250);
        sim.loss_probability = 0.05;
        sim.run_for(Duration::from_secs(20));
        let share = sim.cc.random_loss;
        assert!((0.04..0.065).contains(&share), "{share}");
        let busy = sim.utilization(Duration::from_secs(10));
        assert!(busy > 0.97, "{busy}");
        // No standing queue came of it.
        let q = sim.max_queue_delay(Duration::from_secs(10));
        assert!(q < ms(40), "{q:?}");
    }

    /// The bottleneck drops to a quarter, then comes back: the estimate
    /// forgets the old rate after its 10 rounds and the queue that built
    /// meanwhile drains; the new rate is found by the 1.25 probes, 25% per
    /// eight-phase cycle.
    #[test]
    fn follows_a_rate_step_down_and_up() {
        let mut sim = path(ms(20));
        sim.run_for(ms(2_000));
        let near = |sim: &PathSim<Bbr>, bps: f64| (sim.cc.btl_bw() * 8.0 / bps - 1.0).abs() < 0.1;
        assert!(near(&sim, 12e6));
        // Until the filter forgets, BBR paces at 12 Mbit/s into 3 and the
        // queue grows to the window, two old BDPs (50 packets, 160 ms), so
        // the ten rounds last about 2 s.
        sim.set_rate_bps(3e6);
        sim.run_for(ms(4_000));
        assert!(near(&sim, 3e6), "{}", sim.cc.btl_bw() * 8.0);
        let q = sim.max_queue_delay(ms(1_000));
        assert!(q < ms(20), "{q:?}");
        sim.set_rate_bps(12e6);
        sim.run_for(ms(3_000));
        assert!(near(&sim, 12e6), "{}", sim.cc.btl_bw() * 8.0);
        assert!(sim.utilization(ms(1_000)) > 0.9);
    }

    /// A loss on a path without a queue is noise: the window only loses
    /// the lost bytes, to regrow with the next ACKs. A loss while the RTT
    /// shows a queue starts one round of packet conservation: the window
    /// falls to what is in flight, grows only by what is delivered, and
    /// comes back when a packet sent after the loss is acknowledged.
    #[test]
    fn loss_with_a_queue_conserves_packets_for_one_round() {
        let mut cc = bbr();
        let mut flow = Steady::default();
        flow.run(&mut cc, ms(1_000), ms(1), ms(20), false);
        let t = flow.now;
        let before = cc.window();
        assert!(before > 30 * MDS, "{before}");
        cc.on_loss(&LossSample {
            bytes_in_flight: 15 * MDS,
            ..loss(t, t - ms(25), false)
        });
        assert_eq!(cc.window(), before - MDS);
        assert!(!cc.in_recovery);
        // The RTT rises to 40 ms over a 20 ms minimum: a queue.
        cc.on_ack(&AckSample {
            bytes_in_flight: 16 * MDS,
            ..ack(t + ms(1), t - ms(39), MDS, 0)
        });
        let t = t + ms(1);
        cc.on_loss(&LossSample {
            bytes_in_flight: 15 * MDS,
            ..loss(t, t - ms(25), false)
        });
        assert_eq!(cc.window(), 16 * MDS);
        // A second loss from the same round only removes what was lost.
        cc.on_loss(&LossSample {
            bytes_in_flight: 14 * MDS,
            ..loss(t + ms(1), t - ms(24), false)
        });
        assert_eq!(cc.window(), 15 * MDS);
        cc.on_ack(&AckSample {
            bytes_in_flight: 14 * MDS,
            ..ack(t + ms(2), t - ms(18), 2 * MDS, 0)
        });
        assert_eq!(cc.window(), 16 * MDS);
        // A packet sent after the loss: the episode ends, the window returns.
        cc.on_ack(&AckSample {
            bytes_in_flight: 14 * MDS,
            ..ack(t + ms(22), t + ms(2), MDS, 0)
        });
        assert_eq!(cc.window(), before);
        // Persistent congestion collapses it to the four-packet floor.
        cc.on_loss(&loss(t + ms(500), t + ms(400), true));
        assert_eq!(cc.window(), MIN_PIPE_PACKETS * MDS);
    }

    /// The pacer is handed BBR's rate itself in every state once there is
    /// one; the reported window is that rate per smoothed RTT with the
    /// pacer's window gain divided out, rounded up to a byte.
    #[test]
    fn the_pacer_gets_bbrs_rate_and_the_window_reports_it() {
        let mut sim = path(ms(20));
        let mut checked = 0;
        for _ in 0..400 {
            sim.run_for(ms(5));
            let cc = &sim.cc;
            if cc.pacing_rate == 0.0 {
                assert_eq!(cc.pacing_rate(), None);
                continue;
            }
            let want = cc.pacing_rate;
            assert_eq!(cc.pacing_rate(), Some(want));
            let gain = cc.pacing().gain;
            let srtt = cc.srtt.as_secs_f64();
            let reported = gain * cc.pacing_window() as f64 / srtt;
            assert!(
                reported >= want * (1.0 - 1e-9) && reported <= want + gain / srtt,
                "{reported} B/s reported, {want} B/s paced"
            );
            checked += 1;
        }
        assert!(checked > 300, "{checked} of 400 samples had a rate");
        let rate = sim.cc.pacing_rate / sim.cc.pacing_gain();
        assert!((rate / PATH_BYTES_PER_SEC - 1.0).abs() < 0.05, "{rate}");
    }

    #[test]
    fn max_filter_forgets_after_ten_rounds() {
        let mut f = MaxBwFilter::default();
        f.update(1, 100.0);
        f.update(2, 50.0);
        assert_eq!(f.get(), 100.0);
        f.update(10, 1.0);
        assert_eq!(f.get(), 100.0);
        // Round 11 reuses round 1's slot: 100 is forgotten.
        f.update(11, 10.0);
        assert_eq!(f.get(), 50.0);
        f.update(12, 10.0);
        assert_eq!(f.get(), 10.0);
        // Rounds without samples do not age it.
        assert_eq!(f.get(), 10.0);
    }

    #[test]
    fn zero_and_huge_samples_do_not_panic() {
        for mds in [0, 1, 1200, u64::MAX] {
            let mut cc = Bbr::new(&CcConfig {
                max_datagram_size: mds,
                ..CcConfig::default()
            });
            for now in [Instant::ZERO, Instant::from_nanos(1), Instant::FAR_FUTURE] {
                cc.on_sent(now, 0, 0);
                cc.on_sent(now, u64::MAX, u64::MAX);
                for (sent_at, bytes) in [(Instant::ZERO, 0), (now, u64::MAX), (now, 1)] {
                    cc.on_ack(&AckSample {
                        bytes_in_flight: u64::MAX,
                        smoothed_rtt: Duration::MAX,
                        ..ack(now, sent_at, bytes, 0)
                    });
                    cc.on_loss(&LossSample {
                        lost_bytes: u64::MAX,
                        bytes_in_flight: u64::MAX,
                        ..loss(now, sent_at, false)
                    });
                }
            }
            assert!(cc.window() >= MIN_PIPE_PACKETS.saturating_mul(mds.max(1)));
            assert!(cc.pacing_window() >= 1);
            let m = cc.metrics();
            assert!(m.extra.is_some_and(|(_, bw)| bw.is_finite()));
        }
    }
}
