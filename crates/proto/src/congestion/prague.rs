//! Prague, the L4S scalable congestion controller
//! (draft-briscoe-iccrg-prague-congestion-control, after DCTCP).
//!
//! Prague marks its packets ECT(1) so an L4S queue marks CE early and often
//! instead of dropping. It answers the *extent* of marking rather than the
//! mere presence of a mark: `alpha` tracks the fraction of marked packets,
//! and the window is cut by `alpha / 2` at most once per round. Many small
//! cuts keep the queue and the window sawtooth small. Loss is still answered
//! like Reno, by halving.
//!
//! Pacing, not the window, sets the sending rate ([`Controller::pacing`]):
//! exactly `cwnd / srtt`, one datagram at a time, with the window left a
//! little larger than `cwnd` so it only stops the sender when ACKs stall.
//! An L4S queue's step marks any packet that waited over 1 ms, and below
//! 12 Mbit/s a 1500-byte packet takes longer than that to serialize: a
//! packet sent back to back behind another is always marked, whatever the
//! queue. With bursts of two (the default pacer) or an ACK-clocked window,
//! half the packets were marked, `alpha` stayed near 1/2 and the window
//! collapsed. docs/PROTOCOL.md has the analysis.
//!
//! RTT independence: rounds and cuts run on a "virtual RTT" of at least
//! 25 ms, and the additive increase is scaled so that every flow's *rate*
//! climbs about as fast as a 25 ms flow's: by `(srtt / 25 ms)^2` below
//! 25 ms (the draft's rule), and by `(srtt / 25 ms)^1.5` above it, where
//! cuts come once per real RTT (Brisk's extension: with the draft's rule a
//! 160 ms flow gets a sixth of a 25 ms flow's rate at the same marking).
//! The increase itself is half a datagram per reference RTT, not the
//! draft's whole one, for a fair share beside CUBIC in DualPI2
//! ([`rtt_scale`]).
//!
//! Classic AQMs: RFC 9331 §4.3 asks an L4S sender to notice a classic
//! (RFC 3168) AQM marking its ECT(1) packets and to answer it like Reno.
//! Two signals switch the CE response to a halving: ECN validation falling
//! back from ECT(1) ([`Controller::set_path_ecn`]), and marks arriving
//! while the queue is deep. Per round with marks, the queueing delay seen
//! by the least-delayed packet (smallest RTT of the round minus the path's
//! minimum) is compared with what an L4S queue allows (2 ms plus one packet
//! time): above it, the evidence score rises by 1/4; below it, it falls by
//! 1/16; at 1/2 or more the path is treated as classic. On top, any
//! reduction taken while the RTT is more than twice what a shallow queue
//! gives cuts the window to the share of the RTT that is not queue, so a
//! standing queue of seconds after a rate drop drains within about two
//! round trips instead of one halving per round trip.
//!
//! Leaving slow start on a long or wide path (above the reference RTT, or
//! at least [`EXIT_SHORT_RTT_MIN_PIPE`] datagrams): slow start paces each
//! doubling at twice the window's rate, so its flight queues up and is
//! marked before the window reaches the BDP. If the path
//! delivered more than half the window per minimum RTT, the first mark
//! keeps the smaller of the two instead of halving, the queue that burst
//! left is not answered for one round trip, and `alpha` starts from the
//! marked share of slow start's last flight ([`Prague::exit_slow_start`]).
//!
//! Aggregating links: on a Wi-Fi-like link every round's RTT samples
//! spread over the burst interval, and the radio's driver holds a standing
//! queue below the AQM that marks come with. There a CE cut stops at what
//! the path delivered per minimum RTT ([`Prague::on_ce_above_delivered`],
//! `CcConfig::prague_burst_floor`), so a halving for marks that read as a
//! classic AQM's does not leave the link idle.
//!
//! Low rates (on by default, `CcConfig::prague_small_datagrams`): out of
//! slow start, on a path that has marked CE and never delivered more than
//! about 3 Mbit/s, Prague asks for datagrams of 4 ms of the path's rate
//! ([`Controller::datagram_size`]) and, alone, counts its increase in
//! 0.5 ms of it (whole datagrams from 6 Mbit/s), so a 1 Mbit/s link stays
//! busy with a queue of a millisecond or two; beside a classic flow both
//! stay full size. The path's rate is the largest delivery rate the
//! connection has measured, not the flow's own rate, so a flow squeezed
//! by another keeps its increase ([`Prague::path_rate`]).
//!
//! Pipe cap (on by default, `CcConfig::prague_pipe_cap`): growth stops at
//! the largest recent delivery rate times the minimum RTT plus 0.5 ms,
//! plus a datagram (none below 12 Mbit/s, where one datagram outlasts
//! the step), which bounds the queue without waiting a round trip for
//! the first mark ([`PipeCap`], [`Prague::pipe_limited`]). From a 100 ms
//! minimum RTT, a CE cut taken while the cap is in force stops at the
//! pipe and halves the cap's margin, which on a full-size minimum RTT
//! at 25 Mbit/s is itself 0.98 ms of queue ([`Prague::cut_above_pipe`]).
//! While it holds small datagrams at a low rate, the cap also holds
//! through the refill after a cut and learns how far its estimate
//! overstates the link ([`Prague::learn_pipe_scale`]).
//!
//! Below the two-packet minimum window: the draft leaves a window under two
//! packets to pacing. Here the internal window may shrink to a quarter of a
//! datagram; [`Controller::window`] still reports at least the minimum (so
//! loss recovery keeps working) while [`Controller::pacing_window`] reports
//! the fractional value, which the pacer turns into a lower rate.

use std::time::Duration;

use brisk_time::Instant;
use brisk_wire::Ecn;

use super::prague_cap::PipeCap;
use super::{AckSample, CcConfig, CcMetrics, Controller, LossSample, Recovery};
use crate::ack_frequency::{ACKS_PER_WINDOW, MAX_PACKETS_PER_ACK};
use crate::pacing::{PacingParams, SLOW_START_GAIN};

/// EWMA gain `g` for `alpha` (the draft's default, 1/16 as in DCTCP).
pub(super) const PRAGUE_ALPHA_GAIN: f64 = 1.0 / 16.0;
/// The reference RTT for RTT independence (the draft's default).
pub(super) const PRAGUE_REFERENCE_RTT: Duration = Duration::from_millis(25);
/// The smallest internal window, in datagrams, left to pacing to honour.
const FRACTIONAL_FLOOR_PACKETS: f64 = 0.25;
/// Reno's reduction on loss.
const LOSS_BETA: f64 = 0.5;
/// Datagrams added per 25 ms of a 25 ms flow (see [`rtt_scale`]).
const ADDITIVE_INCREASE_PACKETS: f64 = 0.5;
/// How the increase per RTT grows above the reference RTT.
const LONG_RTT_EXPONENT: f64 = 1.5;
/// The window exceeds `cwnd` by this fraction plus one datagram, so the
/// pacer, not the window, spaces the packets (the L4S team's UDP Prague
/// uses 3%).
const WINDOW_HEADROOM: f64 = 0.03;
/// Queueing delay an L4S queue may hold besides one packet time: its step
/// marks at 1 ms, plus a millisecond for ACK timing noise.
const L4S_QUEUE_ALLOWANCE: Duration = Duration::from_millis(2);
/// The longest packet time the L4S queue allowance excuses.
const MAX_PACKET_TIME: Duration = Duration::from_millis(12);
/// A classic AQM's target delay (CoDel's 5 ms): the shallow-queue RTT is
/// the minimum RTT plus this.
const CLASSIC_TARGET: Duration = Duration::from_millis(5);
/// Classic-AQM evidence: added per deep marked round, removed per shallow
/// one; the path counts as classic from `CLASSIC_THRESHOLD` on.
const CLASSIC_STEP_UP: f64 = 0.25;
const CLASSIC_STEP_DOWN: f64 = 1.0 / 16.0;
const CLASSIC_THRESHOLD: f64 = 0.5;
/// Packet spacing from which the additive increase grows with the spacing:
/// DualPI2's step threshold, 1 ms by default (see `Prague::spacing_boost`).
const SPACING_REFERENCE: Duration = Duration::from_millis(1);
/// The largest factor the spacing may put on the additive increase: with
/// 8 the L4S video call's start-up (where `alpha` is still near 1) swung
/// its window down to the floor for half a second and lost frames.
const MAX_SPACING_BOOST: f64 = 6.0;
/// The largest factor once most of Prague's packets are marked (a classic
/// flow beside it, `Prague::spacing_boost_cap`): beside CUBIC at 4 Mbit/s
/// and 20 ms, Prague kept 0.64-0.83 of CUBIC's rate over seeds 1-6 with
/// 6, and 0.82-0.98 with 8.
const MARKED_SPACING_BOOST: f64 = 8.0;
/// The boost grows as the spacing (in step thresholds) to this power: with
/// 1 Prague kept 0.55 of CUBIC's rate at 10 Mbit/s, with 1.6 about 0.8.
const SPACING_EXPONENT: f64 = 1.6;
/// Slow start's exit trusts the current round's delivery rate alone from
/// this many acknowledged packets on.
const EXIT_RATE_MIN_PACKETS: u64 = 8;
/// At or below the reference RTT, slow start ends without a cut only on
/// a pipe of at least this many datagrams: at 100 Mbit/s and 20 ms the
/// first mark came at half the pipe and the window took 6 s to climb back;
/// on a pipe of a few datagrams the uncut window's queue cost 1 Mbit/s a
/// tenth of its rate.
const EXIT_SHORT_RTT_MIN_PIPE: f64 = 16.0;
/// Gain, per round, of the running share of rounds that carried a mark.
const MARKED_ROUNDS_GAIN: f64 = 1.0 / 8.0;
/// The spacing boost fades in as the share of marked rounds goes from the
/// first to the second value: marks in nearly every round are what a
/// competing classic flow's packets cause, marks in some rounds are what
/// Prague's own overshoot causes.
const BOOST_FADE: (f64, f64) = (0.7, 0.9);
/// Out of slow start, a datagram carries this much of the path's rate
/// ([`Prague::path_rate`]), so below about 3 Mbit/s datagrams shrink with
/// the rate and the step sees Prague's queue in finer steps (see
/// [`Prague::low_rate_datagram`]).
const DATAGRAM_TIME: Duration = Duration::from_millis(4);
/// The smallest datagram Prague asks for: headers take about 55 bytes.
const MIN_DATAGRAM_BYTES: f64 = 300.0;
/// Alone (no spacing boost), the additive increase counts in this much of
/// the path's rate rather than in datagrams, up to one datagram: at
/// 1 Mbit/s a datagram is a quarter of the window (see
/// [`Prague::increase_unit`]).
const INCREASE_UNIT_TIME: Duration = Duration::from_micros(500);
/// The increase unit moves from [`INCREASE_UNIT_TIME`] of the path's rate
/// back to a whole datagram as that rate goes from the first to the
/// second value, bits per second: the small unit is what a 1-2 Mbit/s
/// link needs, and above it a 160 ms flow that slow start left at
/// 15 Mbit/s of a 50 Mbit/s link beside a 10 ms one grew by 0.64 of a
/// datagram and stayed at 0.43 of the other's rate.
const INCREASE_UNIT_FULL_RATE: (f64, f64) = (3e6, 6e6);
/// Below this many small datagrams in the window, the window gets one
/// more of them as headroom ([`Prague::small_window_headroom`]).
const SMALL_WINDOW_DATAGRAMS: f64 = 4.0;
/// Datagrams stay full size, whatever the rate, as the smoothed fraction
/// of marked packets (counted from zero) goes from the first to the
/// second value: beside a classic flow on a slow link 60-75% of Prague's
/// packets are marked, alone 10-30%.
const FULL_SIZE_FADE: (f64, f64) = (0.4, 0.55);
/// A round counts as aggregated when its RTT samples spread over more than
/// this beyond one of Prague's own packet times: an aggregating radio holds
/// each packet until its next transmit opportunity, so every round's RTTs
/// spread over the burst interval (4 ms on Wi-Fi-like links), whether or
/// not a queue builds.
const AGGREGATION_SPREAD: Duration = Duration::from_millis(2);
/// Gain, per round, of the running share of aggregated rounds.
const AGGREGATED_ROUNDS_GAIN: f64 = 1.0 / 8.0;
/// From this share of aggregated rounds on, a CE cut keeps the window at
/// least at what the path delivers per minimum RTT.
const AGGREGATED_THRESHOLD: f64 = 0.9;
/// The pipe cap (`CcConfig::prague_pipe_cap`) holds the window only while
/// the share of marked rounds is below this: alone under the cap few
/// rounds carry a mark; a 160 ms flow sharing the queue with a 10 ms one
/// sees one in most, and with the cap up to 0.7 it was held back to 0.38
/// of the other's rate at 50 Mbit/s.
const PIPE_CAP_MARKED_ROUNDS: f64 = 0.35;
/// ... and only while an RTT sample of the last [`PIPE_CAP_QUEUE_MEMORY`]
/// round trips showed at least this much queue: with none the window is
/// below the pipe whatever the estimate says (at 20 ms and 25 to
/// 100 Mbit/s a cap without this held the link 65-73% busy with an empty
/// queue). Asking it of the latest sample instead let a round trip's
/// increase through before the queue showed, as without the cap.
const PIPE_CAP_QUEUE_SEEN: Duration = Duration::from_micros(250);
/// The pipe cap holds only while the share of aggregated rounds is below
/// this: on a link that sends in bursts every packet also waits for the
/// next transmit opportunity, so the pipe is more than the delivery rate
/// times the luckiest packet's RTT, and a cap there held 4 ms bursts at
/// 50 Mbit/s and 20 ms to 71% of the link (95% without it).
const PIPE_CAP_AGGREGATED_ROUNDS: f64 = 0.5;
/// At low rates (a full datagram at the estimate takes longer than the
/// step, [`SPACING_REFERENCE`], below 12 Mbit/s) the pipe cap holds while
/// fewer than this share of rounds carry a mark, counted from zero (see
/// [`Prague::pipe_low_rate`]): there any packet that waits behind another
/// is marked, so a flow alone overshooting the pipe marks most rounds and
/// the boost's share, which starts at 1, kept the cap off for good (4 Mbit/s
/// at 200 ms: 89.4%, a queue p99 of 56 ms). A flow sharing the queue with
/// a faster one still sees a mark in nearly every round, and the cap steps
/// aside within a few rounds (10 vs 160 ms at 20 Mbit/s: 0.80 with 0.5,
/// 0.78 with 0.7).
const PIPE_CAP_LOW_RATE_MARKED_ROUNDS: f64 = 0.5;
/// ... on a pipe of at least this many datagrams: at 4 Mbit/s and 5 ms
/// (under 3 datagrams of pipe) the cap without its datagram held the link
/// 85.4% busy on IPv4 (98.7% as before on that path).
const PIPE_CAP_LOW_RATE_MIN_PIPE: f64 = 4.0;
/// The least share of its estimate the pipe cap's limit takes while it
/// holds small datagrams ([`Prague::learn_pipe_scale`]).
const PIPE_SCALE_MIN: f64 = 0.9;
/// Round trips a queue seen keeps the pipe cap on.
const PIPE_CAP_QUEUE_MEMORY: u32 = 4;
/// From this minimum RTT the pipe cap holds without a queue seen (but
/// not while its low-rate case holds small datagrams, see
/// [`Prague::pipe_limited`]), and only from it does the low-rate case
/// take small datagrams ([`Prague::pipe_low_rate`]): there
/// the first approach to the pipe, with no queue yet, let 11 datagrams
/// of increase per round trip through (100 Mbit/s at 200 ms: 94.8%,
/// 2.48 ms of queue p99 with the queue condition, 99.6%, 0.77 ms without).
const PIPE_CAP_ALWAYS_RTT: Duration = Duration::from_millis(100);

/// Each CE cut taken with the window at the pipe cap's limit multiplies
/// the cap's margin above the pipe (its queue target and datagram) by
/// this, down to [`CAP_MARGIN_MIN`] (see [`Prague::cap_margin_limit`]).
const CAP_MARGIN_CUT: f64 = 0.5;
const CAP_MARGIN_MIN: f64 = 0.25;

/// Prague congestion control.
#[derive(Clone, Debug)]
pub(crate) struct Prague {
    mds: u64,
    minimum_window: u64,
    /// Bytes, fractional; may fall below `minimum_window` (see module doc).
    cwnd: f64,
    /// `u64::MAX` until the first CE mark or loss.
    ssthresh: u64,
    /// EWMA of the fraction of CE-marked packets per virtual round; starts
    /// at 1 so the first mark (normally ending slow start) halves the window.
    alpha: f64,
    /// `alpha` only moves once the path has shown it marks at all.
    saw_ce: bool,
    /// When the current round began; `None` before the first ACK.
    round_start: Option<Instant>,
    round_acked_packets: u64,
    round_marked_packets: u64,
    /// The smallest RTT sample of the current round.
    round_min_rtt: Option<Duration>,
    /// Some ACK of the current round was application-limited.
    round_app_limited: bool,
    /// Bytes acknowledged in the current round and in the previous one,
    /// and when the previous one began: the delivery rate the exit from
    /// slow start sizes the window from.
    round_acked_bytes: u64,
    previous_round: Option<(Instant, u64)>,
    /// Set when slow start ended on a CE mark: when the packets sent before
    /// that moment have been acknowledged, `alpha` is set to the fraction of
    /// them that were marked instead of moving from its starting value.
    exit_round_pending: bool,
    /// Running share (gain [`MARKED_ROUNDS_GAIN`]) of the rounds limited
    /// by the network that carried a mark; starts at 1.
    marked_rounds: f64,
    /// When the window was last cut for CE.
    last_ce_cut: Option<Instant>,
    /// One Reno halving per round trip on loss (and on CE in classic mode).
    loss_recovery: Recovery,
    /// The window before the latest classic halving for a mark taken out
    /// of slow start, and that mark's RTT: the flight that the packets
    /// marked during its recovery period were sent with (in slow start the
    /// window doubled while they were sent, so it tells nothing).
    halved_from: Option<(f64, Duration)>,
    /// ECN validation did not keep ECT(1) on this path.
    path_classic: bool,
    /// Evidence, 0 to 1, that the AQM marking us is a classic one.
    classic_score: f64,
    /// Smaller datagrams and increase at low rates (`CcConfig`).
    small_datagrams: bool,
    /// The EWMA of the marked fraction that `alpha` is, but starting at 0
    /// (see [`FULL_SIZE_FADE`]).
    marked_share: f64,
    /// The latest smoothed RTT an ACK reported (zero before the first).
    srtt: Duration,
    /// CE cuts stop at the delivered window on aggregating links
    /// (`CcConfig::prague_burst_floor`).
    burst_floor: bool,
    /// The largest path RTT of the current round.
    round_max_rtt: Option<Duration>,
    /// Running share (gain [`AGGREGATED_ROUNDS_GAIN`]) of rounds whose RTT
    /// samples spread over a burst interval; starts at 0.
    aggregated_rounds: f64,
    /// Growth stops at the delivered pipe (`CcConfig::prague_pipe_cap`).
    pipe_cap: Option<PipeCap>,
    /// When an RTT sample last showed a queue (see [`PIPE_CAP_QUEUE_SEEN`]).
    pipe_queue_seen: Option<Instant>,
    /// When growth was last below the pipe cap's limit, while its low-rate
    /// case holds small datagrams (see [`Prague::pipe_limited`]).
    pipe_below_limit: Option<Instant>,
    /// The share of the estimate the pipe cap's limit takes while it
    /// holds small datagrams ([`Prague::learn_pipe_scale`]); starts at 1.
    pipe_scale: f64,
    /// Running share (gain [`MARKED_ROUNDS_GAIN`]) of the rounds limited by
    /// the network that carried a mark, as `marked_rounds` but starting at
    /// 0: the pipe cap's gate at low rates.
    pipe_marked_rounds: f64,
    /// The pipe cap held the latest growth at a low rate on a path of at
    /// least [`PIPE_CAP_ALWAYS_RTT`]: the window then also covers what the
    /// receiver holds back for its ACK ([`Prague::ack_holdback`]).
    pipe_holdback: bool,
    /// The largest delivery rate the path has shown this connection, bytes
    /// per second (see [`Prague::path_rate`]).
    path_rate_max: f64,
    /// Where a CE cut stops while the pipe cap is in force (the pipe: the
    /// estimate times the minimum RTT, bytes), as of the latest growth;
    /// `None` when it is not.
    cap_floor: Option<f64>,
    /// The latest growth reached the pipe cap's limit.
    cap_at_limit: bool,
    /// The share, [`CAP_MARGIN_MIN`] to 1, of the cap's margin above the
    /// pipe that growth may use (see [`Prague::cap_margin_limit`]).
    cap_margin: f64,
}

impl Prague {
    pub(crate) fn new(config: &CcConfig) -> Self {
        Self {
            mds: config.mds(),
            minimum_window: config.minimum_window(),
            cwnd: config.initial_window() as f64,
            ssthresh: u64::MAX,
            alpha: 1.0,
            saw_ce: false,
            round_start: None,
            round_acked_packets: 0,
            round_marked_packets: 0,
            round_min_rtt: None,
            round_app_limited: false,
            round_acked_bytes: 0,
            previous_round: None,
            exit_round_pending: false,
            marked_rounds: 1.0,
            last_ce_cut: None,
            loss_recovery: Recovery::default(),
            halved_from: None,
            path_classic: false,
            classic_score: 0.0,
            small_datagrams: config.prague_small_datagrams,
            marked_share: 0.0,
            srtt: Duration::ZERO,
            burst_floor: config.prague_burst_floor,
            round_max_rtt: None,
            aggregated_rounds: 0.0,
            pipe_cap: config.prague_pipe_cap.then(PipeCap::default),
            pipe_queue_seen: None,
            pipe_below_limit: None,
            pipe_scale: 1.0,
            pipe_marked_rounds: 0.0,
            pipe_holdback: false,
            path_rate_max: 0.0,
            cap_floor: None,
            cap_at_limit: false,
            cap_margin: 1.0,
        }
    }

    /// Prague's own sending rate, `cwnd / srtt`, in bytes per second;
    /// `None` before an RTT sample.
    fn rate(&self) -> Option<f64> {
        (!self.srtt.is_zero()).then(|| self.cwnd.max(1.0) / self.srtt.as_secs_f64())
    }

    /// The rate the low-rate path sizes datagrams and the increase unit
    /// from, bytes per second: the largest delivery rate this connection
    /// has measured (the pipe cap's estimate, kept for the connection's
    /// life), or Prague's own rate if that is higher. Alone on a 1 Mbit/s
    /// link it is 1 Mbit/s; a flow squeezed by a competitor keeps the
    /// rate it once had, so its increase does not shrink with its share
    /// (an increase in proportion to the flow's own rate leaves two
    /// Prague flows with no pull toward an even split). `None` before an
    /// RTT sample.
    fn path_rate(&self) -> Option<f64> {
        self.rate().map(|r| r.max(self.path_rate_max))
    }

    /// How far datagrams and the increase unit stay at full size because
    /// most packets are marked (a classic flow beside Prague), 0 to 1.
    fn full_size_weight(&self) -> f64 {
        let (low, high) = FULL_SIZE_FADE;
        ((self.marked_share - low) / (high - low)).clamp(0.0, 1.0)
    }

    /// The datagram size Prague asks for below the path's `full` one, the
    /// low-rate path: [`DATAGRAM_TIME`] of the path's rate, at least
    /// [`MIN_DATAGRAM_BYTES`], moved toward `full` by
    /// [`Self::full_size_weight`]. Continuous in the rate. At 1 Mbit/s a
    /// 1500-byte packet takes 12 ms, a quarter of the window; in 500-byte
    /// ones the step marks Prague's own queue within a millisecond or so
    /// of it passing the step, and the window moves in finer steps.
    /// Beside a classic flow, smaller datagrams only mean more chances per
    /// round for a mark from the classic flow's packet in service, so
    /// more cuts: Prague beside CUBIC at 4 Mbit/s fell from 0.74 to 0.2 of
    /// CUBIC's rate with them. There most packets are marked, and the
    /// datagrams stay full. `None` in slow start, when switched off, on a
    /// path that has not marked a packet (a drop-tail queue: smaller
    /// datagrams there only add headers and, at a random loss rate per
    /// packet, losses), or at full size.
    fn low_rate_datagram(&self, full: u64) -> Option<u64> {
        if !self.small_datagrams || self.in_slow_start() || !self.saw_ce {
            return None;
        }
        let full = full as f64;
        let small = (self.path_rate()? * DATAGRAM_TIME.as_secs_f64()).max(MIN_DATAGRAM_BYTES);
        let size = small + self.full_size_weight() * (full - small).max(0.0);
        (size < full).then_some(size as u64)
    }

    /// Window headroom beyond [`WINDOW_HEADROOM`] and a datagram: one more
    /// small datagram while the window holds fewer than
    /// [`SMALL_WINDOW_DATAGRAMS`] of them. At 2 Mbit/s and 5 ms the window
    /// is under three 1000-byte datagrams; without it the window, not the
    /// pacer, held the sender and the link was 93-94% busy (99% with it).
    fn small_window_headroom(&self) -> f64 {
        self.low_rate_datagram(self.mds)
            .map(|d| d as f64)
            .filter(|&d| self.cwnd < SMALL_WINDOW_DATAGRAMS * d)
            .unwrap_or(0.0)
    }

    /// What the additive increase counts in, in bytes: one datagram, or on
    /// the low-rate path [`INCREASE_UNIT_TIME`] of the path's rate (at
    /// most a datagram), moved back toward a datagram as the spacing
    /// boost comes in (`boost_weight`), so beside a classic flow the
    /// increase is what it was, and as the path's rate rises through
    /// [`INCREASE_UNIT_FULL_RATE`]. Alone at 1 Mbit/s half a datagram per RTT
    /// is 6 ms of queue, and the cut that answers it takes the window well
    /// below the BDP; 0.5 ms of the rate per RTT keeps the sawtooth within
    /// the step.
    fn increase_unit(&self, boost_weight: f64) -> f64 {
        let mds = self.mds as f64;
        if !self.small_datagrams || self.in_slow_start() {
            return mds;
        }
        let Some(rate) = self.path_rate() else {
            return mds;
        };
        let small = (rate * INCREASE_UNIT_TIME.as_secs_f64()).min(mds);
        let (low, high) = INCREASE_UNIT_FULL_RATE;
        let fast = ((rate * 8.0 - low) / (high - low)).clamp(0.0, 1.0);
        let weight = boost_weight.max(fast);
        small + weight * (mds - small)
    }

    #[cfg(test)]
    /// The current `alpha`, the smoothed fraction of marked packets.
    pub(crate) fn alpha(&self) -> f64 {
        self.alpha
    }

    /// True while CE marks are answered like a loss: ECN validation fell
    /// back from ECT(1), or the marks come with a deep queue.
    pub(crate) fn classic_mode(&self) -> bool {
        self.path_classic || self.classic_score >= CLASSIC_THRESHOLD
    }

    fn floor(&self) -> f64 {
        FRACTIONAL_FLOOR_PACKETS * self.mds as f64
    }

    /// One datagram's time at the rate `cwnd / srtt`, at most that of a
    /// 1500-byte packet at 1 Mbit/s: the bottleneck is at least as fast as
    /// we send, and a collapsed window must not excuse any queue.
    fn packet_time(&self, srtt: Duration) -> Duration {
        srtt.mul_f64((self.mds as f64 / self.cwnd.max(1.0)).min(1e6))
            .min(MAX_PACKET_TIME)
    }

    /// How much faster than [`rtt_scale`] the window grows when Prague's
    /// own packets leave more than one step threshold apart: the spacing
    /// `srtt * mds / cwnd` over [`SPACING_REFERENCE`], to the power
    /// [`SPACING_EXPONENT`], from 1 up to [`MAX_SPACING_BOOST`]. At such
    /// spacings the L4S queue's step marks a packet for waiting behind one
    /// classic packet being serialized, which happens at a rate that does
    /// not fall as Prague slows down; with a fixed increase the window
    /// settles where the increase matches those marks, a few packets per
    /// RTT (0.2 Mbit/s beside CUBIC at 4 Mbit/s). The boost lets the
    /// increase win back the share as the spacing widens.
    ///
    /// It applies only once the path has marked at all (on a path that only
    /// drops, Prague grows as it did), and only in full when nearly every
    /// round limited by the network carries a mark ([`BOOST_FADE`]): alone,
    /// Prague's own overshoot marks some rounds and not others, and a
    /// boosted increase would only overshoot further (a queue p99 of 1 ms
    /// plus 1.5 packet times at 4 Mbit/s). Application-limited rounds (a
    /// video call between frames) say nothing about the marks a full
    /// sender meets, so they leave the share where it is.
    #[cfg(test)]
    fn spacing_boost(&self, srtt: Duration) -> f64 {
        let (full, weight) = self.spacing_boost_parts(srtt);
        1.0 + weight * (full - 1.0)
    }

    /// The spacing boost at its full weight, and the weight the share of
    /// marked rounds gives it (see `spacing_boost`).
    fn spacing_boost_parts(&self, srtt: Duration) -> (f64, f64) {
        let spacing = srtt.as_secs_f64() * self.mds as f64 / self.cwnd.max(1.0);
        let full = (spacing / SPACING_REFERENCE.as_secs_f64())
            .powf(SPACING_EXPONENT)
            .clamp(1.0, self.spacing_boost_cap());
        let (low, high) = BOOST_FADE;
        let weight = ((self.marked_rounds - low) / (high - low)).clamp(0.0, 1.0);
        (full, weight)
    }

    /// The largest spacing boost: [`MAX_SPACING_BOOST`], raised toward
    /// [`MARKED_SPACING_BOOST`] as most of Prague's packets come back
    /// marked ([`Self::full_size_weight`]), as a classic flow's packets
    /// beside it cause. That share starts at zero, so a start-up (where
    /// `alpha` is still near 1) keeps the lower cap. Alone at 1 Mbit/s,
    /// where a full-size packet outlasts the step, most of them are marked
    /// and the cap rose there as well; the low-rate path's smaller
    /// datagrams keep that share low (docs/PROTOCOL.md).
    fn spacing_boost_cap(&self) -> f64 {
        MAX_SPACING_BOOST + self.full_size_weight() * (MARKED_SPACING_BOOST - MAX_SPACING_BOOST)
    }

    /// The RTT the path has with a shallow queue: the minimum plus a
    /// classic AQM's target delay.
    fn shallow_rtt(&self, ack: &AckSample) -> Duration {
        ack.min_rtt.saturating_add(CLASSIC_TARGET)
    }

    /// A reduction taken while the RTT is more than twice the shallow-queue
    /// RTT goes further: to the share of the window that is not queue,
    /// `cwnd * shallow / latest`. A rate drop under a full window leaves a
    /// queue of seconds; halving once per (seconds-long) round trip would
    /// keep it for many seconds.
    fn drain_deep_queue(&mut self, before: f64, ack_rtt: (Duration, Duration)) {
        let (latest, shallow) = ack_rtt;
        if latest > shallow.saturating_mul(2) && !latest.is_zero() {
            let share = shallow.as_secs_f64() / latest.as_secs_f64();
            self.cwnd = self.cwnd.min(before * share).max(self.floor());
            self.ssthresh = self.cwnd as u64;
        }
    }

    /// The draft's CE response: on the first mark of a round, cut the window
    /// by `alpha / 2` and leave slow start. At most once per virtual RTT:
    /// the marked packet must have been sent after the previous cut (one real
    /// round trip) and the reference RTT must have passed since it.
    fn on_ce(&mut self, ack: &AckSample) {
        let rtts = (path_rtt(ack), self.shallow_rtt(ack));
        if self.classic_mode() {
            return self.halve(ack.now, ack.largest_acked_sent_at, rtts);
        }
        if self.ssthresh == u64::MAX && self.exit_slow_start(ack, rtts) {
            return;
        }
        let due = self.last_ce_cut.is_none_or(|cut| {
            ack.largest_acked_sent_at > cut && ack.now >= cut + PRAGUE_REFERENCE_RTT
        });
        if !due || self.loss_recovery.covers(ack.largest_acked_sent_at) {
            return;
        }
        self.last_ce_cut = Some(ack.now);
        let before = self.cwnd;
        self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(self.floor());
        self.cut_above_pipe(before, rtts.0.saturating_sub(ack.min_rtt));
        self.ssthresh = self.cwnd as u64;
        self.drain_deep_queue(before, rtts);
    }

    /// The first CE mark on a path whose minimum RTT exceeds the reference
    /// RTT, or that holds at least [`EXIT_SHORT_RTT_MIN_PIPE`] datagrams,
    /// ends slow start without a cut when the path delivered more than
    /// half the window per minimum RTT (the delivery rate of the latest
    /// rounds times the minimum RTT): the window becomes the smaller of the
    /// two. At a long RTT slow start paces its doubling at twice the
    /// window's rate, so a queue (and marks) builds while the window is
    /// still below the BDP; halving there left a quarter of a 200 ms path
    /// idle. The queue that burst left drains over the next round trip,
    /// so marks on packets sent within one smoothed RTT of the exit cut
    /// nothing. A round starts here; once the packets sent before it are
    /// acknowledged, `alpha` becomes the share of them that were marked
    /// ([`Prague::settle_exit_alpha`]). Returns false, leaving the usual
    /// `alpha / 2` cut to the caller, anywhere else (a short path of a few
    /// datagrams, where the uncut window's queue costs more than the cut).
    fn exit_slow_start(&mut self, ack: &AckSample, rtts: (Duration, Duration)) -> bool {
        let delivered = self.delivery_rate(ack) * ack.min_rtt.as_secs_f64();
        let short_pipe = delivered < EXIT_SHORT_RTT_MIN_PIPE * self.mds as f64;
        if (ack.min_rtt <= PRAGUE_REFERENCE_RTT && short_pipe) || delivered <= self.cwnd * 0.5 {
            return false;
        }
        let before = self.cwnd;
        self.cwnd = delivered.min(self.cwnd).max(self.floor());
        self.ssthresh = self.cwnd as u64;
        self.last_ce_cut = Some(ack.now + ack.smoothed_rtt);
        self.drain_deep_queue(before, rtts);
        self.round_start = Some(ack.now);
        self.round_acked_packets = 0;
        self.round_marked_packets = 0;
        self.round_acked_bytes = 0;
        self.round_min_rtt = None;
        self.round_app_limited = false;
        self.previous_round = None;
        self.exit_round_pending = true;
        true
    }

    /// Bytes per second acknowledged over the current and the previous
    /// round, or over the current round alone once it holds
    /// [`EXIT_RATE_MIN_PACKETS`], whichever is larger (slow start's paced
    /// bursts leave each round's ACKs bunched at its start); zero before
    /// any.
    fn delivery_rate(&self, ack: &AckSample) -> f64 {
        let rate = |since: Instant, bytes: u64| {
            let span = ack.now.saturating_duration_since(since).as_secs_f64();
            if span > 0.0 { bytes as f64 / span } else { 0.0 }
        };
        let current_bytes = self.round_acked_bytes.saturating_add(ack.acked_bytes);
        let current = match self.round_start {
            Some(start)
                if self.round_acked_packets.saturating_add(ack.acked_packets)
                    >= EXIT_RATE_MIN_PACKETS =>
            {
                rate(start, current_bytes)
            }
            _ => 0.0,
        };
        let both = match self.previous_round {
            Some((start, bytes)) => rate(start, bytes.saturating_add(current_bytes)),
            None => 0.0,
        };
        current.max(both)
    }

    /// After slow start ended on a mark, the first ACK for a packet sent
    /// after that moment sets `alpha` to the marked fraction of the ACKs
    /// since then (the packets of slow start's last flight), before this
    /// ACK's own mark is answered.
    fn settle_exit_alpha(&mut self, ack: &AckSample, marked_packets: u64) {
        let Some(exit) = self.round_start else {
            return;
        };
        if !self.exit_round_pending || ack.largest_acked_sent_at <= exit {
            return;
        }
        self.exit_round_pending = false;
        let acked = self.round_acked_packets.saturating_add(ack.acked_packets);
        let marked = self.round_marked_packets.saturating_add(marked_packets);
        if acked > 0 {
            self.alpha = (marked as f64 / acked as f64).min(1.0);
        }
    }

    /// Growth on the unmarked part of an ACK: slow start adds the bytes;
    /// congestion avoidance adds one datagram per window, scaled for RTT
    /// independence (see the module doc) unless the path is classic, where
    /// Prague must grow like Reno. Below the minimum window the increase is
    /// taken relative to the minimum, so a fractional window climbs gently
    /// instead of jumping.
    fn grow(&mut self, ack: &AckSample, unmarked_bytes: f64) {
        let mut bytes = unmarked_bytes;
        if self.in_slow_start() {
            let slow_start_bytes = bytes.min(self.ssthresh as f64 - self.cwnd);
            self.cwnd += slow_start_bytes;
            bytes -= slow_start_bytes;
        }
        if bytes <= 0.0 {
            return;
        }
        let (unit, scale) = if self.classic_mode() {
            (self.mds as f64, 1.0)
        } else if self.saw_ce {
            let (full, weight) = self.spacing_boost_parts(ack.smoothed_rtt);
            let boost = 1.0 + weight * (full - 1.0);
            (
                self.increase_unit(weight),
                rtt_scale(ack.smoothed_rtt) * boost,
            )
        } else {
            (self.mds as f64, rtt_scale(ack.smoothed_rtt))
        };
        let base = self.cwnd.max(self.minimum_window as f64);
        let grown = self.cwnd + unit * bytes / base * scale;
        self.cwnd = self.pipe_limited(ack, grown);
    }

    /// `grown`, held at the pipe cap's limit ([`PipeCap`]) out of slow
    /// start on an L4S path while fewer than [`PIPE_CAP_MARKED_ROUNDS`] of
    /// the rounds carry a mark (at low rates, fewer than
    /// [`PIPE_CAP_LOW_RATE_MARKED_ROUNDS`] counted from zero); a window
    /// already above the limit keeps its size (marks take it down). At low
    /// rates the limit leaves out its datagram, and on paths of
    /// [`PIPE_CAP_ALWAYS_RTT`] or more the window then covers the
    /// receiver's ACK holdback ([`Controller::window`]) while datagrams
    /// are full. With small datagrams the cap also asks for a queue seen
    /// in the last few round trips at every RTT: without it, 1 Mbit/s at
    /// 100 and 200 ms kept 73% and 44% of the link with an empty queue
    /// (an estimate below the pipe that the flow's own rate could not
    /// raise). There a round trip with the window below the limit counts
    /// as one with a queue: after a cut the window refilled for 5-8 round
    /// trips, the memory ran out, and it passed the limit by a round's
    /// increase (2 Mbit/s at 200 ms: 5.5 ms of queue, two cuts, 93.8%
    /// busy). And the limit takes [`Prague::learn_pipe_scale`]'s share
    /// of the estimate.
    fn pipe_limited(&mut self, ack: &AckSample, grown: f64) -> f64 {
        let low_rate = self.pipe_low_rate(ack.min_rtt);
        let small = self.low_rate_datagram(self.mds).is_some();
        let marked_off = if low_rate {
            self.pipe_marked_rounds >= PIPE_CAP_LOW_RATE_MARKED_ROUNDS
        } else {
            self.marked_rounds >= PIPE_CAP_MARKED_ROUNDS
        };
        self.pipe_holdback = false;
        self.cap_floor = None;
        self.cap_at_limit = false;
        let gated = self.in_slow_start()
            || self.classic_mode()
            || marked_off
            || self.aggregated_rounds >= PIPE_CAP_AGGREGATED_ROUNDS;
        let datagram = if low_rate { 0 } else { self.mds };
        // At low rates the limit takes the pipe over the RTT of full
        // datagrams, which holds their serialization at the bottleneck.
        let rtt = if low_rate {
            self.pipe_cap
                .as_ref()
                .and_then(|c| c.min_rtt_for(self.sent_datagram()))
                .map_or(ack.min_rtt, |m| m.max(ack.min_rtt))
        } else {
            ack.min_rtt
        };
        // Small datagrams at a low rate: round trips spent refilling below
        // the limit keep the cap's queue memory as a queue seen would, and
        // the limit takes the estimate as the queue at it corrected it
        // ([`Prague::learn_pipe_scale`]).
        let refill = low_rate && small;
        let scale = if refill { self.pipe_scale } else { 1.0 };
        let raw_limit = self
            .pipe_cap
            .as_ref()
            .and_then(|c| c.limit(rtt, datagram))
            .map(|l| l * scale);
        if refill && !gated && raw_limit.is_some_and(|l| grown < l) {
            self.pipe_below_limit = Some(ack.now);
        }
        let fresh = |at: Option<Instant>| {
            at.is_some_and(|at| ack.now <= at + ack.smoothed_rtt * PIPE_CAP_QUEUE_MEMORY)
        };
        let seen = fresh(self.pipe_queue_seen) || (refill && fresh(self.pipe_below_limit));
        if gated || ((ack.min_rtt < PIPE_CAP_ALWAYS_RTT || refill) && !seen) {
            return grown;
        }
        match raw_limit {
            Some(limit) => {
                let limit = if low_rate
                    || self.low_rate_datagram(self.mds).is_some()
                    || ack.min_rtt < PIPE_CAP_ALWAYS_RTT
                {
                    limit
                } else {
                    self.cap_margin_limit(limit, ack.min_rtt, grown)
                };
                self.pipe_holdback = low_rate && !small && ack.min_rtt >= PIPE_CAP_ALWAYS_RTT;
                if refill && grown >= limit {
                    self.learn_pipe_scale(ack, rtt);
                }
                grown.min(limit.max(self.cwnd))
            }
            None => grown,
        }
    }

    /// The pipe cap's low-rate case: a full datagram at the estimate takes
    /// longer than the step ([`SPACING_REFERENCE`]), so a standing queue of
    /// one datagram is marked on every packet, and the cap's datagram goes
    /// (the minimum RTT already holds a full datagram's serialization at
    /// the bottleneck: the limit takes the smallest RTT of full datagrams,
    /// [`PipeCap::min_rtt_for`]). While Prague sends small datagrams
    /// ([`Prague::low_rate_datagram`]) the same holds for them, taking the
    /// RTT of datagrams of their size, on paths of [`PIPE_CAP_ALWAYS_RTT`]
    /// or more (1 Mbit/s at 100 ms: 95.3% busy, 3.6 ms of queue p99,
    /// 89.0% and 9.5 ms with the marks alone; below 100 ms it cost 1 Mbit/s
    /// at 50 ms on IPv6 1.4 points, to 93.9%). Not on a pipe of fewer than
    /// [`PIPE_CAP_LOW_RATE_MIN_PIPE`] datagrams over `min_rtt`. Where small
    /// datagrams may be sent, full datagrams too get the low-rate case only
    /// from [`PIPE_CAP_ALWAYS_RTT`]: below it, over real sockets at 4 Mbit/s
    /// and 20 ms, a pacer that wakes late makes the flow deliver a little
    /// less than its estimate, the estimate follows it down, and the link
    /// stayed 52-69% busy with no marks on a loaded machine (the simulator's
    /// exact pacer kept 100%; with the ordinary cap, 96.2% there).
    fn pipe_low_rate(&self, min_rtt: Duration) -> bool {
        let dg = self.sent_datagram();
        (!self.small_datagrams || min_rtt >= PIPE_CAP_ALWAYS_RTT)
            && self.pipe_cap.as_ref().is_some_and(|c| {
                c.packet_time(dg) > SPACING_REFERENCE
                    && c.bandwidth() * min_rtt.as_secs_f64()
                        >= PIPE_CAP_LOW_RATE_MIN_PIPE * dg as f64
            })
    }

    /// The size of the datagrams Prague asks for now, bytes.
    fn sent_datagram(&self) -> u64 {
        self.low_rate_datagram(self.mds).unwrap_or(self.mds)
    }

    /// Bytes the receiver may hold unacknowledged under the ACK rate this
    /// sender asks for at a window of `cwnd` (about [`ACKS_PER_WINDOW`]
    /// ACKs per window, at most [`MAX_PACKETS_PER_ACK`] packets per ACK;
    /// every second packet below that, which the window's datagram
    /// covers). Above a 100 ms RTT the 3% headroom is less than that below
    /// about 40 Mbit/s: at 10 Mbit/s and 100 ms a window at the pipe cap
    /// (84 datagrams of pipe, 3% and a datagram of headroom) stalled while
    /// the receiver held up to 10 packets, and the link stayed 94.9% busy
    /// with an empty queue.
    fn ack_holdback(&self) -> f64 {
        let mds = self.mds as f64;
        let per_ack = (self.cwnd / mds / ACKS_PER_WINDOW as f64).min(MAX_PACKETS_PER_ACK as f64);
        if per_ack <= 2.0 { 0.0 } else { per_ack * mds }
    }

    /// The classic response (Reno, RFC 9002 §7.3.2): halve, once per round
    /// trip, for a loss or a classic CE mark; further if the queue is deep.
    /// A mark on a packet sent before the halving still drains: after a
    /// rate drop the first mark shows only the start of the queue, and the
    /// later ones of the same flight show how deep it grew, so the window
    /// follows them down to the share of that flight that is not queue
    /// (without this, a window several times the new path's size outlived
    /// the seconds-long recovery period and rebuilt a queue of 150 ms).
    /// Only once the RTT has doubled since the halving's mark (the queue
    /// outgrew what the flight alone builds: the rate dropped), and not
    /// after a halving in slow start, whose flight was still growing.
    fn halve(&mut self, now: Instant, sent_at: Instant, rtts: (Duration, Duration)) {
        if self.loss_recovery.covers(sent_at) {
            if let Some((flight, cut_rtt)) = self.halved_from
                && rtts.0 > cut_rtt.saturating_mul(2)
            {
                self.drain_deep_queue(flight, rtts);
            }
            return;
        }
        self.loss_recovery.enter(now);
        let before = self.cwnd;
        self.halved_from = (!self.in_slow_start() && !rtts.0.is_zero()).then_some((before, rtts.0));
        self.cwnd = (self.cwnd * LOSS_BETA).max(self.floor());
        self.ssthresh = self.cwnd as u64;
        self.drain_deep_queue(before, rtts);
    }

    /// Rounds end when a packet sent after the round began is acknowledged
    /// and at least the reference RTT has passed; then
    /// `alpha = (1 - g) * alpha + g * F` with `F` the marked fraction, and a
    /// round with marks adds to or takes from the classic-AQM evidence.
    fn account_round(&mut self, ack: &AckSample, marked_packets: u64) {
        self.round_acked_packets = self.round_acked_packets.saturating_add(ack.acked_packets);
        self.round_marked_packets = self.round_marked_packets.saturating_add(marked_packets);
        self.round_acked_bytes = self.round_acked_bytes.saturating_add(ack.acked_bytes);
        self.round_app_limited |= ack.app_limited;
        if ack.acked_packets > 0 {
            let rtt = path_rtt(ack);
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        let start = *self.round_start.get_or_insert(ack.now);
        if ack.largest_acked_sent_at <= start || ack.now < start + PRAGUE_REFERENCE_RTT {
            return;
        }
        if self.saw_ce && self.round_acked_packets > 0 {
            let fraction = self.round_marked_packets as f64 / self.round_acked_packets as f64;
            self.alpha += PRAGUE_ALPHA_GAIN * (fraction.min(1.0) - self.alpha);
            self.marked_share += PRAGUE_ALPHA_GAIN * (fraction.min(1.0) - self.marked_share);
            if !self.round_app_limited {
                let marked = if self.round_marked_packets > 0 {
                    1.0
                } else {
                    0.0
                };
                self.marked_rounds += MARKED_ROUNDS_GAIN * (marked - self.marked_rounds);
                self.pipe_marked_rounds += MARKED_ROUNDS_GAIN * (marked - self.pipe_marked_rounds);
            }
        }
        if self.round_marked_packets > 0
            && let Some(round_min) = self.round_min_rtt
        {
            let queue = round_min.saturating_sub(ack.min_rtt);
            let allowed = L4S_QUEUE_ALLOWANCE + self.packet_time(ack.smoothed_rtt);
            self.classic_score = if queue > allowed {
                (self.classic_score + CLASSIC_STEP_UP).min(1.0)
            } else {
                (self.classic_score - CLASSIC_STEP_DOWN).max(0.0)
            };
        }
        self.previous_round = Some((start, self.round_acked_bytes));
        self.round_start = Some(ack.now);
        self.round_acked_packets = 0;
        self.round_marked_packets = 0;
        self.round_acked_bytes = 0;
        self.round_min_rtt = None;
        self.round_app_limited = false;
    }
}

impl Prague {
    /// While the pipe cap holds small datagrams' growth, the window over
    /// the RTT this ACK met (`base`, the limit's RTT, plus the queue it
    /// shows) is the rate the pacer sends at; once the queue has settled
    /// that is what the path delivers, and the limit takes no more of the
    /// estimate than that rate over it. A delivery-rate estimate is the
    /// largest of many samples, each over an interval between two ACKs,
    /// and ACK timing pushes the largest above the link's rate (1.5% at
    /// 1 Mbit/s, 200 ms: 3 ms of the pipe, over the step). Not within two
    /// round trips of a CE cut, while the queue drains.
    fn learn_pipe_scale(&mut self, ack: &AckSample, base: Duration) {
        let Some(bw) = self.pipe_cap.as_ref().map(|c| c.bandwidth()) else {
            return;
        };
        if bw <= 0.0
            || !ack.rtt_sampled
            || self
                .last_ce_cut
                .is_some_and(|cut| ack.now < cut + ack.smoothed_rtt * 2)
        {
            return;
        }
        let rtt = path_rtt(ack).max(base);
        let delivered = self.cwnd / rtt.as_secs_f64() / bw;
        self.pipe_scale = self.pipe_scale.min(delivered).max(PIPE_SCALE_MIN);
    }

    /// The pipe cap's `limit`, where it holds full-size datagrams with its
    /// datagram of margin on a path of at least [`PIPE_CAP_ALWAYS_RTT`]
    /// (with it below, a 10 ms flow beside a 160 ms one at 50 Mbit/s took
    /// 2.11 times the other's rate), with only [`Prague::cap_margin`]'s share of
    /// its margin above the pipe (the estimate times `min_rtt`); notes the
    /// floor, and whether `grown` reaches that limit, for the next CE cut
    /// ([`Prague::cut_above_pipe`]).
    ///
    /// The margin (0.5 ms of the rate plus a datagram) is a standing
    /// queue only when the minimum RTT came from a full-size datagram: one
    /// from a smaller packet lacks a full one's serialization, which the
    /// datagram then pays for. At 25 Mbit/s a datagram takes 0.48 ms, so
    /// with a full-size minimum the cap holds 0.98 ms of queue, 20 us
    /// under the step, and a round whose ACKs bunch a little has nearly
    /// every packet marked (docs/PROTOCOL.md). Marks taken at the limit
    /// say the margin does not fit under this path's step, and it shrinks
    /// for the rest of the connection.
    fn cap_margin_limit(&mut self, limit: f64, min_rtt: Duration, grown: f64) -> f64 {
        let Some(cap) = self.pipe_cap.as_ref() else {
            return limit;
        };
        let pipe = cap.bandwidth() * min_rtt.as_secs_f64();
        let limit = pipe + self.cap_margin * (limit - pipe).max(0.0);
        self.cap_floor = Some(pipe);
        self.cap_at_limit = grown >= limit;
        limit
    }

    /// A CE cut taken while the pipe cap is in force (Prague alone at the
    /// pipe: few rounds carry a mark) stops at the pipe: the marks report
    /// a queue above the step, which is the window beyond the pipe, while
    /// `alpha` may still carry slow start's overshoot, which a round trip
    /// of 200 ms takes down by only a sixteenth (at 25 Mbit/s and 200 ms
    /// it was 0.29 four seconds out of slow start: a 14% cut and two
    /// seconds of refill). With the window at the cap's limit, the cap's
    /// margin shrinks as well ([`CAP_MARGIN_CUT`]), so the next approach
    /// stays under the step. Only while the ACK's `queue` (its path RTT
    /// above the minimum) is within what an L4S queue allows
    /// ([`L4S_QUEUE_ALLOWANCE`]): a deeper one means the pipe narrowed
    /// below the estimate, and the cut goes on as the draft's. As marks
    /// come in more rounds the cap, and this floor with it, step aside.
    fn cut_above_pipe(&mut self, before: f64, queue: Duration) {
        let Some(floor) = self.cap_floor else {
            return;
        };
        if queue > L4S_QUEUE_ALLOWANCE {
            return;
        }
        self.cwnd = self.cwnd.max(floor.min(before));
        if self.cap_at_limit {
            self.cap_at_limit = false;
            self.cap_margin = (self.cap_margin * CAP_MARGIN_CUT).max(CAP_MARGIN_MIN);
        }
    }

    /// [`Prague::on_ce`], but on an aggregating link (nearly every round's
    /// RTTs spread over a burst interval) the cut stops at the window the
    /// path delivered per minimum RTT: the delivery rate of the latest
    /// rounds times the minimum RTT. An aggregating radio's driver holds
    /// up to its airtime limit (12 ms per station in Linux) below the AQM,
    /// so marks come with a standing queue that reads as a classic AQM's;
    /// halving for them took the window below what the link needs and left
    /// it idle for a tenth of the time. A deep queue (more than twice a
    /// shallow one's RTT) is still drained as [`Prague::drain_deep_queue`]
    /// does, and loss is answered as before.
    fn on_ce_above_delivered(&mut self, ack: &AckSample) {
        let before = self.cwnd;
        let floor = self.delivered_window(ack);
        self.on_ce(ack);
        let Some(floor) = floor else {
            return;
        };
        if self.cwnd < before && path_rtt(ack) <= self.shallow_rtt(ack).saturating_mul(2) {
            let kept = self.cwnd.max(floor.min(before));
            if kept > self.cwnd {
                self.cwnd = kept;
                self.ssthresh = self.cwnd as u64;
            }
        }
    }

    /// What the path delivered per minimum RTT, when the switch is on and
    /// the link aggregates; `None` otherwise. The rate is taken over the
    /// previous round and the current one, at least a reference RTT: a
    /// burst's ACKs arrive together, so a part of one round overstates it.
    fn delivered_window(&self, ack: &AckSample) -> Option<f64> {
        if !self.burst_floor || self.aggregated_rounds < AGGREGATED_THRESHOLD {
            return None;
        }
        let (start, bytes) = self.previous_round?;
        let span = ack.now.saturating_duration_since(start).as_secs_f64();
        let bytes = bytes
            .saturating_add(self.round_acked_bytes)
            .saturating_add(ack.acked_bytes);
        (span > 0.0).then(|| bytes as f64 / span * ack.min_rtt.as_secs_f64())
    }

    /// Keeps the round's largest path RTT and, when the round ends (as
    /// [`Prague::account_round`] decides), moves the share of aggregated
    /// rounds: rounds whose RTTs spread over more than
    /// [`AGGREGATION_SPREAD`] beyond one of Prague's own packet times
    /// (which a serialization at Prague's rate or slower explains).
    /// Application-limited rounds leave it where it is.
    fn track_aggregation(&mut self, ack: &AckSample) {
        if !self.burst_floor && self.pipe_cap.is_none() {
            return;
        }
        let rtt = (ack.acked_packets > 0).then(|| path_rtt(ack));
        if let Some(rtt) = rtt {
            self.round_max_rtt = Some(self.round_max_rtt.map_or(rtt, |m| m.max(rtt)));
        }
        let Some(start) = self.round_start else {
            return;
        };
        if ack.largest_acked_sent_at <= start || ack.now < start + PRAGUE_REFERENCE_RTT {
            return;
        }
        let min = match (self.round_min_rtt, rtt) {
            (Some(m), Some(r)) => Some(m.min(r)),
            (m, r) => m.or(r),
        };
        if let (Some(min), Some(max)) = (min, self.round_max_rtt)
            && !(self.round_app_limited || ack.app_limited)
        {
            let spread = max.saturating_sub(min);
            let excused = AGGREGATION_SPREAD + self.packet_time(ack.smoothed_rtt);
            let aggregated = if spread > excused { 1.0 } else { 0.0 };
            self.aggregated_rounds +=
                AGGREGATED_ROUNDS_GAIN * (aggregated - self.aggregated_rounds);
        }
        self.round_max_rtt = None;
    }
}

/// The latest RTT sample less the ACK delay the peer reported, but never
/// below the minimum: the path's delay, queue included. A receiver holds
/// its ACK for a lone packet for up to its `max_ack_delay` (25 ms by
/// default), which at a rate of less than two packets per RTT would read
/// as a standing queue.
fn path_rtt(ack: &AckSample) -> Duration {
    ack.latest_rtt
        .saturating_sub(ack.latest_ack_delay)
        .max(ack.min_rtt.min(ack.latest_rtt))
}

/// The additive increase per RTT, in datagrams: half a datagram per
/// 25 ms, so a flow beside CUBIC in a coupled DualPI2 gets about the same
/// rate (with the draft's whole datagram Prague took twice CUBIC's rate
/// from 25 to 100 Mbit/s), scaled so that every flow's rate climbs about
/// as fast as a 25 ms flow's: by `(rtt / 25 ms)^2` below the reference
/// (cuts come once per 25 ms), by `(rtt / 25 ms)^1.5` above it (cuts come
/// once per RTT; the exponent is the one that held two Prague flows at 10
/// and 160 ms within 2:1 in the simulator, where the first-order model's
/// `rtt / 25 ms` left 2.5:1). A zero RTT (no sample yet) counts as 25 ms.
fn rtt_scale(srtt: Duration) -> f64 {
    if srtt.is_zero() {
        return ADDITIVE_INCREASE_PACKETS;
    }
    let ratio = srtt.as_secs_f64() / PRAGUE_REFERENCE_RTT.as_secs_f64();
    let scale = if ratio < 1.0 {
        ratio * ratio
    } else {
        ratio.powf(LONG_RTT_EXPONENT)
    };
    ADDITIVE_INCREASE_PACKETS * scale
}

impl Controller for Prague {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "prague"
    }

    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        if let Some(cap) = &mut self.pipe_cap {
            cap.on_sent(now, bytes, bytes_in_flight);
        }
    }

    fn on_ack(&mut self, ack: &AckSample) {
        // The peer's CE count can cover packets acknowledged by earlier,
        // lost ACK frames; never count more marks than packets.
        let marked = ack.ecn_delta.ce.min(ack.acked_packets);
        self.settle_exit_alpha(ack, marked);
        self.srtt = ack.smoothed_rtt;
        if let Some(cap) = &mut self.pipe_cap {
            // The queue this ACK's RTT shows, against the smallest RTT of
            // datagrams at least as large as the ones it acknowledges (a
            // full datagram's RTT exceeds a smaller one's by the difference
            // in serialization, which is no queue); the estimate counts it
            // only beyond one full datagram's serialization.
            let size = ack.acked_bytes / ack.acked_packets.max(1);
            if ack.rtt_sampled && ack.acked_packets > 0 {
                cap.on_rtt(path_rtt(ack), size);
            }
            let base = cap
                .min_rtt_for(size)
                .map_or(ack.min_rtt, |m| m.max(ack.min_rtt));
            let queue = ack.rtt_sampled.then(|| path_rtt(ack).saturating_sub(base));
            let queued = queue.is_some_and(|q| q > PIPE_CAP_QUEUE_SEEN);
            cap.on_ack(
                ack,
                queue.is_some_and(|q| q > PIPE_CAP_QUEUE_SEEN + cap.packet_time(self.mds)),
            );
            if queued {
                self.pipe_queue_seen = Some(ack.now);
            }
            self.path_rate_max = self.path_rate_max.max(cap.bandwidth());
        }
        if ack.ecn_delta.ce > 0 {
            self.saw_ce = true;
            self.on_ce_above_delivered(ack);
        }
        if !self.loss_recovery.covers(ack.largest_acked_sent_at)
            && !ack.app_limited
            && ack.acked_packets > 0
        {
            let unmarked = (ack.acked_packets - marked) as f64 / ack.acked_packets as f64;
            self.grow(ack, ack.acked_bytes as f64 * unmarked);
        }
        self.track_aggregation(ack);
        self.account_round(ack, marked);
    }

    /// Loss means a classic (or no) AQM: halve like Reno, once per round
    /// trip; persistent congestion collapses to the minimum window. The
    /// loss sample carries no RTT, so the deep-queue cut is left to CE.
    fn on_loss(&mut self, loss: &LossSample) {
        self.halve(
            loss.now,
            loss.largest_lost_sent_at,
            (Duration::ZERO, Duration::ZERO),
        );
        if loss.persistent_congestion {
            self.cwnd = self.cwnd.min(self.minimum_window as f64);
            self.loss_recovery.reset();
        }
    }

    fn set_path_ecn(&mut self, ecn: Ecn) {
        self.path_classic = ecn != Ecn::Ect1;
    }

    /// After slow start, `cwnd` plus headroom, so pacing sets the rate
    /// (see the module doc); never below the minimum window. While the
    /// pipe cap holds a slow, long path the headroom is at least the
    /// receiver's ACK holdback ([`Prague::ack_holdback`]).
    fn window(&self) -> u64 {
        let headroom = if self.in_slow_start() {
            0.0
        } else {
            let holdback = if self.pipe_holdback {
                self.ack_holdback()
            } else {
                0.0
            };
            (self.cwnd * WINDOW_HEADROOM).max(holdback)
                + self.mds as f64
                + self.small_window_headroom()
        };
        ((self.cwnd + headroom) as u64).max(self.minimum_window)
    }

    fn pacing_window(&self) -> u64 {
        (self.cwnd as u64).max(1)
    }

    fn datagram_size(&self, full: u64) -> Option<u64> {
        self.low_rate_datagram(full)
    }

    /// Exactly the window per smoothed RTT, one datagram at a time (twice
    /// that in slow start, as the default pacer does).
    fn pacing(&self) -> PacingParams {
        PacingParams {
            gain: if self.in_slow_start() {
                SLOW_START_GAIN
            } else {
                1.0
            },
            min_burst_packets: 1,
        }
    }

    fn ecn(&self) -> Ecn {
        Ecn::Ect1
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh as f64
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd_bytes: self.window(),
            ssthresh_bytes: (self.ssthresh != u64::MAX).then_some(self.ssthresh),
            extra: Some(("alpha", self.alpha)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::NewReno;
    use crate::congestion::test_path::{MDS, PathSim, ack, ack_round, loss};

    const RTT: Duration = Duration::from_millis(40);

    fn prague() -> Prague {
        Prague::new(&CcConfig::default())
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// While the pipe cap holds small datagrams at its limit, the window
    /// over the RTT an ACK met is the rate the path delivers: the limit
    /// takes that share of an estimate that overstates it (here the queue
    /// settled at 3.5 ms instead of the cap's 0.5 ms), at least 0.9 of it,
    /// and learns nothing while a cut's queue drains.
    #[test]
    fn the_low_rate_limit_learns_how_far_the_estimate_overstates_the_link() {
        let rtt = ms(200);
        let per_round = 50u64;
        let mut cap = PipeCap::default();
        let mut t = Instant::from_millis(100);
        let mut sent = std::collections::VecDeque::new();
        for _ in 0..per_round * 6 {
            cap.on_sent(t, MDS, per_round * MDS);
            sent.push_back(t);
            if let Some(&s) = sent.front()
                && t - s >= rtt
            {
                sent.pop_front();
                cap.on_ack(&ack(t, s, MDS, 0), true);
            }
            t += rtt / per_round as u32;
        }
        let bw = cap.bandwidth();
        assert!(bw > 0.0);
        let mut cc = prague();
        cc.pipe_cap = Some(cap);
        let target = Duration::from_micros(500);
        cc.cwnd = bw * (rtt + target).as_secs_f64();
        let met = |queue: Duration| AckSample {
            latest_rtt: rtt + queue,
            ..ack(t, t - rtt, MDS, 0)
        };
        cc.learn_pipe_scale(&met(ms(3) + target), rtt);
        let want = (rtt + target).as_secs_f64() / (rtt + ms(3) + target).as_secs_f64();
        assert!((cc.pipe_scale - want).abs() < 1e-9, "{}", cc.pipe_scale);
        // A queue at the target teaches nothing new: the smallest share stays.
        cc.learn_pipe_scale(&met(target), rtt);
        assert!((cc.pipe_scale - want).abs() < 1e-9);
        // Not within two round trips of a CE cut.
        cc.pipe_scale = 1.0;
        cc.last_ce_cut = Some(t - rtt);
        cc.learn_pipe_scale(&met(ms(3)), rtt);
        assert_eq!(cc.pipe_scale, 1.0);
        // Never below 0.9 of the estimate.
        cc.last_ce_cut = None;
        cc.learn_pipe_scale(&met(ms(60)), rtt);
        assert_eq!(cc.pipe_scale, PIPE_SCALE_MIN);
    }

    /// A Prague that left slow start on one CE at 40 segments (cut to 20).
    fn in_avoidance() -> (Prague, Instant) {
        let mut cc = prague();
        let mut t = Instant::from_millis(100);
        t = ack_round(&mut cc, t, RTT, |_| false);
        t = ack_round(&mut cc, t, RTT, |_| false);
        assert_eq!(cc.window(), 40 * MDS);
        cc.on_ack(&ack(t, t - RTT, MDS, 1));
        (cc, t + RTT)
    }

    /// [`in_avoidance`] with a window of 400 datagrams, whose packets leave
    /// 0.1 ms apart at 40 ms: the spacing boost stays out of the way.
    fn in_avoidance_wide() -> (Prague, Instant) {
        let (mut cc, t) = in_avoidance();
        cc.cwnd = 400.0 * MDS as f64;
        cc.ssthresh = cc.cwnd as u64;
        (cc, t)
    }

    #[test]
    fn sends_ect1_and_slow_starts_like_reno() {
        let mut cc = prague();
        assert_eq!(cc.ecn(), Ecn::Ect1);
        let mut t = Instant::from_millis(100);
        for expected in [20, 40, 80] {
            t = ack_round(&mut cc, t, RTT, |_| false);
            assert_eq!(cc.window(), expected * MDS);
            assert!(cc.in_slow_start());
        }
        // No mark seen yet: alpha has not moved from 1.
        assert_eq!(cc.alpha(), 1.0);
    }

    #[test]
    fn first_ce_ends_slow_start_with_a_halving() {
        let (cc, _) = in_avoidance();
        assert_eq!(cc.cwnd, 20.0 * MDS as f64);
        assert!(!cc.in_slow_start());
        assert_eq!(cc.metrics().ssthresh_bytes, Some(20 * MDS));
        // Out of slow start the window leaves the pacer room: 3% and one
        // datagram over cwnd.
        assert_eq!(cc.window(), 20 * MDS + 20 * MDS * 3 / 100 + MDS);
        assert_eq!(cc.pacing_window(), 20 * MDS);
    }

    /// At 200 ms the first mark comes while the window is still below what
    /// the path delivers per minimum RTT (slow start's bursts, paced at
    /// twice the window's rate, queue up): the window is kept, marks on
    /// packets sent in the round trip after the exit (the queue it left)
    /// cut nothing, and `alpha` is then the marked share of slow start's
    /// last flight, not 1.
    #[test]
    fn a_mark_below_the_delivered_window_ends_slow_start_without_a_cut() {
        let rtt = ms(200);
        let mut cc = prague();
        let mut t = Instant::from_millis(100);
        for _ in 0..3 {
            t = ack_round(&mut cc, t, rtt, |_| false);
        }
        assert_eq!(cc.window(), 80 * MDS);
        // After a pause, 41 ACKs 1 ms apart (the first ends the last round):
        // 1 datagram per ms, 200 datagrams per 200 ms, more than the
        // window; every fourth of them marked from the 22nd on.
        t += ms(100);
        let acks = |cc: &mut Prague, range: std::ops::Range<u64>| {
            for i in range {
                let now = t + ms(i);
                let ce = u64::from(i > 20 && i % 4 == 1);
                cc.on_ack(&ack(now, now - rtt, MDS, ce));
            }
        };
        // The first mark ends slow start without a cut, at 80 + 21
        // datagrams.
        acks(&mut cc, 0..22);
        assert!(!cc.in_slow_start());
        assert_eq!(cc.cwnd, 101.0 * MDS as f64);
        acks(&mut cc, 22..41);
        let exit = t + ms(21);
        assert_eq!(cc.alpha(), 1.0);
        // Marks on packets sent up to one smoothed RTT after the exit cut
        // nothing; the first ACK for a packet sent after the exit sets
        // alpha to the marked share since it (5 of 20, then this one).
        let now = exit + rtt + ms(1);
        cc.on_ack(&ack(now, exit + ms(1), MDS, 1));
        assert!((cc.alpha() - 6.0 / 21.0).abs() < 1e-9, "{}", cc.alpha());
        let before = cc.cwnd;
        cc.on_ack(&ack(exit + rtt + ms(150), exit + ms(150), MDS, 1));
        assert!(cc.cwnd >= before, "{} < {before}", cc.cwnd);
        // A mark on a packet sent later is answered with alpha / 2.
        let (before, alpha) = (cc.cwnd, cc.alpha());
        cc.on_ack(&ack(exit + rtt * 2 + ms(30), exit + rtt + ms(30), MDS, 1));
        assert!((cc.cwnd - before * (1.0 - alpha / 2.0)).abs() < 1e-6);
    }

    /// Pacing at exactly the window per RTT, one datagram at a time, after
    /// slow start (which paces at twice that, like the default).
    #[test]
    fn paces_one_datagram_at_a_time_at_cwnd_per_srtt() {
        let mut cc = prague();
        assert_eq!(cc.pacing().gain, SLOW_START_GAIN);
        assert_eq!(cc.pacing().min_burst_packets, 1);
        let t = Instant::from_millis(100);
        cc.on_ack(&ack(t, t - RTT, MDS, 1));
        assert_eq!(
            cc.pacing(),
            PacingParams {
                gain: 1.0,
                min_burst_packets: 1
            }
        );
    }

    /// 10% of packets marked every round: alpha converges to 0.1, as the EWMA
    /// `alpha_n = 0.1 + 0.9 (15/16)^n` predicts, and each round's cut is then
    /// about 5%.
    #[test]
    fn alpha_converges_to_the_marking_fraction() {
        let (mut cc, mut t) = in_avoidance_wide();
        let mut rounds = 0;
        while rounds < 120 {
            t = ack_round(&mut cc, t, RTT, |i| i % 10 == 5);
            rounds += 1;
            if rounds == 16 {
                // (15/16)^16 = 0.356: alpha near 0.42 (rounds are not exactly
                // one window, so allow some slack).
                assert!(
                    (cc.alpha() - 0.42).abs() < 0.05,
                    "alpha after 16 rounds {}",
                    cc.alpha()
                );
            }
        }
        assert!((cc.alpha() - 0.1).abs() < 0.01, "alpha {}", cc.alpha());
        // The next cut: ratio 1 - alpha / 2, about 0.95.
        let alpha = cc.alpha();
        let before = cc.cwnd;
        // Sent after the previous round's cut, more than 25 ms after it.
        cc.on_ack(&ack(t + ms(20), t - ms(20), MDS, 1));
        let ratio = cc.cwnd / before;
        assert!((ratio - (1.0 - alpha / 2.0)).abs() < 1e-12);
        assert!((0.94..=0.96).contains(&ratio), "cut ratio {ratio}");
        assert!(matches!(cc.metrics().extra, Some(("alpha", a)) if a == cc.alpha()));
    }

    #[test]
    fn at_most_one_cut_per_virtual_rtt() {
        // Real RTT 5 ms, every ACK marked for 100 ms: cuts at 0, 25, 50, 75 ms
        // (the 25 ms reference), not every 5 ms.
        let count_cuts = |rtt: Duration| {
            let (mut cc, t0) = in_avoidance();
            let mut cuts = 0;
            for i in 0..100u64 {
                let now = t0 + ms(i);
                let before = cc.cwnd;
                cc.on_ack(&ack(now, now - rtt, MDS, 1));
                cuts += u32::from(cc.cwnd < before);
            }
            cuts
        };
        assert_eq!(count_cuts(ms(5)), 4);
        // Real RTT 40 ms: once per real round trip, at 1, 42 and 83 ms (the
        // marked packet must have been sent after the previous cut).
        assert_eq!(count_cuts(ms(40)), 3);
    }

    /// RTT independence: in congestion avoidance a 12.5 ms flow adds an
    /// eighth of a segment per RTT (`0.5 (12.5/25)^2`), so its rate climbs
    /// as fast as a 25 ms flow's that adds half a segment per RTT; a 100 ms
    /// flow adds four per RTT (`0.5 * 4^1.5`).
    #[test]
    fn additive_increase_is_rtt_independent() {
        let rate_gain_per_second = |rtt: Duration| {
            let (mut cc, mut t) = in_avoidance_wide();
            let start = cc.cwnd;
            let rounds = (1.0 / rtt.as_secs_f64()).round() as u32;
            for _ in 0..rounds {
                t = ack_round(&mut cc, t, rtt, |_| false);
            }
            (cc.cwnd - start) / MDS as f64 / rtt.as_secs_f64()
        };
        let at_25 = rate_gain_per_second(ms(25));
        let at_12 = rate_gain_per_second(Duration::from_micros(12_500));
        // 40 rounds of +1/2 segment at 25 ms: 800 segments/s per second (a
        // little more: a round acknowledges the window and its headroom).
        assert!(
            (750.0..=850.0).contains(&at_25),
            "25 ms: {at_25} segments/s per s"
        );
        assert!(
            (at_12 / at_25 - 1.0).abs() < 0.05,
            "12.5 ms {at_12} vs 25 ms {at_25}"
        );
        let at_100 = rate_gain_per_second(ms(100));
        // 10 rounds of +4 segments at 100 ms: 400 segments/s per second.
        assert!((380.0..=440.0).contains(&at_100), "100 ms: {at_100}");
        assert!((rtt_scale(ms(160)) - 0.5 * 6.4f64.powf(1.5)).abs() < 1e-9);
        assert_eq!(rtt_scale(Duration::ZERO), 0.5);
    }

    #[test]
    fn loss_falls_back_to_reno_halving() {
        let (mut cc, t) = in_avoidance();
        let before = cc.cwnd;
        cc.on_loss(&loss(t, t - RTT, false));
        assert_eq!(cc.cwnd, before * 0.5);
        // Same round trip: no second halving, and no CE cut either.
        cc.on_loss(&loss(t + ms(1), t - ms(1), false));
        cc.on_ack(&ack(t + ms(2), t, MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Persistent congestion: the minimum window.
        cc.on_loss(&loss(t + ms(500), t + ms(100), true));
        assert_eq!(cc.window(), 2 * MDS);
    }

    #[test]
    fn classic_ecn_fallback_answers_ce_like_loss() {
        let (mut cc, t) = in_avoidance();
        cc.set_path_ecn(Ecn::Ect0);
        assert!(cc.classic_mode());
        let before = cc.cwnd;
        cc.on_ack(&ack(t, t - RTT, MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Once per round trip, like Reno.
        cc.on_ack(&ack(t + ms(30), t - ms(5), MDS, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        // Back on an L4S path: the alpha-scaled cut again.
        cc.set_path_ecn(Ecn::Ect1);
        let before = cc.cwnd;
        cc.on_ack(&ack(t + RTT * 2, t + RTT, MDS, 1));
        assert!(cc.cwnd > before * 0.5 && cc.cwnd < before);
    }

    /// The boost's cap is 6 until most packets come back marked (a
    /// classic flow beside Prague), then 8; a start-up, whose share of
    /// marked packets starts at zero, keeps 6 even with every packet
    /// marked for a few rounds.
    #[test]
    fn the_boost_cap_rises_only_once_most_packets_are_marked() {
        let (mut cc, t0) = in_avoidance();
        assert_eq!(cc.spacing_boost_cap(), MAX_SPACING_BOOST);
        // Every packet marked for 100 ms (four rounds): still 6.
        for i in 0..100u64 {
            let now = t0 + ms(i);
            cc.on_ack(&ack(now, now - ms(5), MDS, 1));
        }
        assert_eq!(cc.spacing_boost_cap(), MAX_SPACING_BOOST);
        // For 5 s: 8.
        for i in 100..5_000u64 {
            let now = t0 + ms(i);
            cc.on_ack(&ack(now, now - ms(5), MDS, 1));
        }
        assert_eq!(cc.spacing_boost_cap(), MARKED_SPACING_BOOST);
        // A quarter of them marked, as alone on a slow link: back to 6.
        for i in 5_000..15_000u64 {
            let now = t0 + ms(i);
            cc.on_ack(&ack(now, now - ms(5), MDS, u64::from(i % 4 == 0)));
        }
        assert_eq!(cc.spacing_boost_cap(), MAX_SPACING_BOOST);
    }

    #[test]
    fn fractional_window_is_left_to_pacing() {
        let (mut cc, t0) = in_avoidance();
        // Marks on every packet for 5 s at a 5 ms RTT: cut every 25 ms.
        for i in 0..5_000u64 {
            let now = t0 + ms(i);
            cc.on_ack(&ack(now, now - ms(5), MDS, 1));
        }
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.pacing_window(), MDS / 4);
        // An unmarked ACK grows it by a quarter datagram (half a datagram
        // per minimum window acknowledged), not by the 2 datagrams
        // `0.5 * mds * acked / cwnd` would give at a quarter-datagram window,
        // times the spacing boost: one datagram per 100 ms is 100 step
        // thresholds apart, and every round was marked, so the boost is at
        // its cap, the higher one since every packet was marked.
        let now = t0 + ms(5_100);
        cc.on_ack(&ack(now, now - ms(25), MDS, 0));
        let boost = MARKED_SPACING_BOOST as u64;
        assert_eq!(cc.pacing_window(), MDS / 4 + boost * (MDS / 4));
        // Out of slow start the window adds its headroom to that.
        let grown = (MDS / 4 + boost * (MDS / 4)) as f64;
        assert_eq!(cc.window(), (grown * 1.03 + MDS as f64) as u64);
    }

    /// With `prague_small_datagrams` (the default), out of slow start,
    /// datagrams carry 4 ms of the path's rate (at least 300 bytes) while
    /// few packets are marked and move back to full size as most are; the
    /// increase counts in 0.5 ms of the rate until the spacing boost comes
    /// in, and in whole datagrams from 6 Mbit/s. The path's rate is the
    /// largest the connection measured: a flow whose own rate falls keeps
    /// full units. Off, nothing changes.
    #[test]
    fn small_datagrams_follow_the_path_rate_and_the_marked_fraction() {
        let config = CcConfig {
            prague_small_datagrams: true,
            ..CcConfig::default()
        };
        let run = |config: &CcConfig| {
            let mut cc = Prague::new(config);
            let mut t = Instant::from_millis(100);
            assert_eq!(cc.datagram_size(1472), None, "slow start");
            t = ack_round(&mut cc, t, RTT, |_| false);
            t = ack_round(&mut cc, t, RTT, |_| false);
            cc.on_ack(&ack(t, t - RTT, MDS, 1));
            assert!(!cc.in_slow_start());
            // The windows set below stay out of slow start.
            cc.ssthresh = 0;
            cc
        };
        let mut cc = run(&config);
        // 20 datagrams per 40 ms is 4.8 Mbit/s: 4 ms of it is more than a
        // datagram.
        assert_eq!(cc.datagram_size(1472), None);
        // 5 kB per 40 ms is 1 Mbit/s: 500-byte datagrams, and an increase
        // unit of 62.5 bytes until the boost weighs in.
        cc.cwnd = 5_000.0;
        cc.marked_share = 0.0;
        assert_eq!(cc.datagram_size(1472), Some(500));
        assert!((cc.increase_unit(0.0) - 62.5).abs() < 1e-9);
        assert_eq!(cc.increase_unit(1.0), MDS as f64);
        assert!((cc.increase_unit(0.5) - (62.5 + MDS as f64) / 2.0).abs() < 1e-9);
        // Halfway through the fade, halfway to full size; past it, full.
        cc.marked_share = 0.475;
        assert!(matches!(cc.datagram_size(1472), Some(985..=986)));
        cc.marked_share = 0.55;
        assert_eq!(cc.datagram_size(1472), None);
        // Never below 300 bytes.
        cc.cwnd = 2_000.0;
        cc.marked_share = 0.0;
        assert_eq!(cc.datagram_size(1472), Some(300));
        // A path that once delivered 20 Mbit/s: full datagrams and a whole
        // datagram of increase, whatever the flow's own rate now.
        cc.path_rate_max = 20e6 / 8.0;
        assert_eq!(cc.datagram_size(1472), None);
        assert_eq!(cc.increase_unit(0.0), MDS as f64);
        // 4.5 Mbit/s: full datagrams, the unit halfway from 0.5 ms of the
        // rate (281.25 bytes) to a datagram.
        cc.path_rate_max = 4.5e6 / 8.0;
        assert_eq!(cc.datagram_size(1472), None);
        let half = (281.25 + MDS as f64) / 2.0;
        assert!((cc.increase_unit(0.0) - half).abs() < 1e-6);
        // 1 Mbit/s measured, 0.4 Mbit/s now: sized from the path's rate.
        cc.path_rate_max = 1e6 / 8.0;
        assert_eq!(cc.datagram_size(1472), Some(500));
        assert!((cc.increase_unit(0.0) - 62.5).abs() < 1e-9);
        // Out of slow start on a path that dropped and never marked: full
        // datagrams.
        let mut lossy = Prague::new(&config);
        let t = ack_round(&mut lossy, Instant::from_millis(100), RTT, |_| false);
        lossy.on_loss(&loss(t, t - RTT, false));
        assert!(!lossy.in_slow_start());
        lossy.cwnd = 5_000.0;
        assert_eq!(lossy.datagram_size(1472), None);
        // Switched off: full datagrams, whole-datagram increase.
        let mut off = run(&CcConfig {
            prague_small_datagrams: false,
            ..CcConfig::default()
        });
        off.cwnd = 5_000.0;
        off.marked_share = 0.0;
        assert_eq!(off.datagram_size(1472), None);
        assert_eq!(off.increase_unit(0.0), MDS as f64);
    }

    /// Rounds limited by the application leave the share of marked rounds
    /// where it is; unmarked rounds limited by the network lower it, and
    /// the spacing boost fades out with it.
    #[test]
    fn only_rounds_limited_by_the_network_move_the_share_of_marked_rounds() {
        let (mut cc, mut t) = in_avoidance();
        // Two datagrams per 40 ms are 20 step thresholds apart: full boost.
        cc.cwnd = 2.0 * MDS as f64;
        assert_eq!(cc.spacing_boost(RTT), MAX_SPACING_BOOST);
        for _ in 0..20 {
            t += RTT;
            let mut a = ack(t, t - RTT, MDS, 0);
            a.app_limited = true;
            cc.on_ack(&a);
        }
        assert_eq!(cc.cwnd, 2.0 * MDS as f64);
        assert_eq!(cc.spacing_boost(RTT), MAX_SPACING_BOOST);
        for _ in 0..20 {
            t += RTT;
            cc.on_ack(&ack(t, t - RTT, MDS, 0));
        }
        assert!(cc.marked_rounds < BOOST_FADE.0, "{}", cc.marked_rounds);
        assert_eq!(cc.spacing_boost(RTT), 1.0);
    }

    /// An ACK at `now` for a packet sent one `rtt` earlier, on a path whose
    /// minimum RTT is `min_rtt`.
    fn ack_with_queue(now: Instant, rtt: Duration, min_rtt: Duration, ce: u64) -> AckSample {
        AckSample {
            min_rtt,
            smoothed_rtt: rtt,
            ..ack(now, now - rtt, MDS, ce)
        }
    }

    /// Marks that come while every packet of the round waited 20 ms (a
    /// classic AQM's standing queue; an L4S queue marks from 1 ms) make
    /// Prague answer like Reno after two such rounds; marks with a shallow
    /// queue take the evidence back, more slowly.
    #[test]
    fn marks_with_a_standing_queue_switch_to_the_classic_response() {
        let (mut cc, mut t) = in_avoidance();
        let (min, deep) = (ms(20), ms(40));
        // One ACK every 2 ms, every tenth marked, each packet sent one RTT
        // earlier: a round lasts about an RTT. Returns the time it took.
        fn run_until(
            cc: &mut Prague,
            t: &mut Instant,
            rtt: Duration,
            ce: bool,
            stop: &dyn Fn(&Prague) -> bool,
        ) -> Duration {
            let start = *t;
            for i in 0..10_000u64 {
                if stop(cc) {
                    break;
                }
                *t += ms(2);
                let min = ms(20);
                cc.on_ack(&ack_with_queue(*t, rtt, min, u64::from(ce && i % 10 == 5)));
            }
            *t - start
        }
        let took = run_until(&mut cc, &mut t, deep, true, &|cc| cc.classic_mode());
        assert!((ms(40)..=ms(130)).contains(&took), "classic after {took:?}");
        // A CE mark now halves (once per round trip).
        let before = cc.cwnd;
        cc.on_ack(&ack_with_queue(t + ms(50), deep, min, 1));
        assert_eq!(cc.cwnd, before * 0.5);
        t += ms(50);
        // Evidence saturates after a few more deep rounds; then shallow
        // marked rounds need nine 25 ms rounds (1 - 9/16 < 1/2) to switch
        // back.
        run_until(&mut cc, &mut t, deep, true, &|cc| cc.classic_score >= 1.0);
        let took = run_until(&mut cc, &mut t, min, true, &|cc| !cc.classic_mode());
        assert!(
            (ms(200)..=ms(300)).contains(&took),
            "l4s again after {took:?}"
        );
        // Unmarked rounds with a deep queue (a FIFO, say) are no evidence.
        run_until(&mut cc, &mut t, deep, false, &|_| false);
        assert!(!cc.classic_mode());
    }

    /// A mark that arrives with an RTT of a second on a 20 ms path (a rate
    /// drop under a full window) cuts the window to the part that is not
    /// queue, not just by alpha / 2.
    #[test]
    fn a_mark_with_a_queue_of_a_second_drains_it() {
        let (mut cc, t) = in_avoidance();
        let before = cc.cwnd;
        cc.on_ack(&ack_with_queue(t + ms(1_000), ms(1_000), ms(20), 1));
        // Shallow RTT: 20 ms + CoDel's 5 ms (two packet times at this
        // window are less).
        let expected = before * 25.0 / 1_000.0;
        assert!(
            (cc.cwnd - expected).abs() < 1.0,
            "{} vs {expected}",
            cc.cwnd
        );
        // At twice the shallow RTT or less, the usual alpha / 2 cut.
        let (mut cc, t) = in_avoidance();
        let (before, alpha) = (cc.cwnd, cc.alpha());
        cc.on_ack(&ack_with_queue(t + ms(50), ms(50), ms(20), 1));
        assert_eq!(cc.cwnd, before * (1.0 - alpha / 2.0));
    }

    /// After a rate drop under a classic AQM the first mark shows only the
    /// start of the queue; marks on later packets of the same flight, each
    /// with a deeper queue, take the window down to that flight's share
    /// that is not queue, within the one halving of the round trip.
    #[test]
    fn marks_within_the_recovery_period_follow_the_queue_down() {
        let (mut cc, t) = in_avoidance_wide();
        cc.set_path_ecn(Ecn::Ect0);
        let before = cc.cwnd;
        // Shallow RTT: 20 ms + CoDel's 5 ms.
        cc.on_ack(&ack_with_queue(t + ms(100), ms(100), ms(20), 1));
        assert!((cc.cwnd - before * 25.0 / 100.0).abs() < 1.0);
        // Sent before that cut, 400 ms more queue: down to 25/500 of the
        // flight.
        cc.on_ack(&ack_with_queue(t + ms(500), ms(500), ms(20), 1));
        let deep = before * 25.0 / 500.0;
        assert!((cc.cwnd - deep).abs() < 1.0, "{} vs {deep}", cc.cwnd);
        // A mark of the same period on a shallower queue changes nothing.
        cc.on_ack(&ack_with_queue(t + ms(520), ms(450), ms(20), 1));
        assert!((cc.cwnd - deep).abs() < 1.0, "{} vs {deep}", cc.cwnd);
    }

    /// An L4S step marker at 1 ms on a 4 Mbit/s, 20 ms path, where one
    /// 1200-byte packet takes 2.4 ms: paced one datagram at a time, Prague
    /// keeps the link busy with a queue under the step plus one packet time.
    /// Alone, its own overshoot marks only some rounds, so the spacing boost
    /// stays off.
    #[test]
    fn fills_a_link_whose_packet_time_exceeds_the_step() {
        let mut sim = PathSim::new(Box::new(prague()), 4e6, ms(20)).paced();
        sim.mark_threshold = Some(ms(1));
        sim.run_for(Duration::from_secs(30));
        let last = Duration::from_secs(20);
        let utilization = sim.utilization(last);
        assert!(utilization > 0.95, "utilization {utilization}");
        assert!(
            sim.max_queue_delay(last) < Duration::from_micros(3_400),
            "{:?}",
            sim.max_queue_delay(last)
        );
        assert_eq!(sim.lost_packets, 0);
    }

    /// An L4S step marker at 1 ms on a 20 Mbit/s, 200 ms path, paced: a
    /// 1200-byte datagram takes 0.48 ms, so the pipe cap's margin (0.5 ms
    /// of the rate and a datagram) over a minimum RTT of full-size
    /// datagrams is 0.98 ms of queue, just under the step. The marks that
    /// come at the cap's limit take the window to the pipe and the margin
    /// down, not `alpha / 2` (still about 0.3 from slow start) off it, so
    /// the link stays busy and only the rounds at the first approach are
    /// marked. Without that, the last 8 s of this run held 96.1% of the
    /// link, 2,947 marked packets, a window swinging from 399 to 433
    /// datagrams and a queue of up to 1.54 ms.
    #[test]
    fn marks_at_the_pipe_cap_cut_to_the_pipe_on_a_long_path() {
        let mut sim = PathSim::new(Box::new(prague()), 20e6, ms(200)).paced();
        sim.mark_threshold = Some(ms(1));
        sim.run_for(Duration::from_secs(12));
        assert!(sim.marked_packets > 0, "slow start and the first approach");
        let marked_early = sim.marked_packets;
        sim.run_for(Duration::from_secs(8));
        let last = Duration::from_secs(8);
        let utilization = sim.utilization(last);
        let (lo, hi) = sim.window_range_packets(last);
        let marked = sim.marked_packets - marked_early;
        let queue = sim.max_queue_delay(last);
        assert!(utilization > 0.99, "utilization {utilization}");
        assert!(queue < ms(1), "queue {queue:?}");
        assert!(hi - lo < 0.02 * hi, "window {lo}..{hi} datagrams");
        assert_eq!(marked, 0, "marked in the last 8 s");
        assert_eq!(sim.lost_packets, 0);
    }

    /// An L4S step marker at 1 ms of queue on a 12 Mbit/s, 20 ms path
    /// (BDP 25 segments): Prague keeps the link full with a sawtooth of a few
    /// segments and a sub-2 ms queue; Reno under the same marks halves and
    /// swings by about half its window.
    #[test]
    fn small_sawtooth_under_step_marking() {
        let run = |cc: Box<dyn Controller>| {
            let mut sim = PathSim::new(cc, 12e6, ms(20));
            sim.mark_threshold = Some(ms(1));
            sim.run_for(Duration::from_secs(30));
            let last = Duration::from_secs(20);
            let (lo, hi) = sim.window_range_packets(last);
            (
                hi - lo,
                sim.utilization(last),
                sim.max_queue_delay(last),
                sim.lost_packets,
            )
        };
        let (swing, utilization, queue, lost) = run(Box::new(prague()));
        assert!(swing <= 4.0, "prague sawtooth {swing} segments");
        assert!(utilization > 0.95, "prague utilization {utilization}");
        assert!(queue < ms(2), "prague queue {queue:?}");
        assert_eq!(lost, 0);
        let (reno_swing, ..) = run(Box::new(NewReno::new(&CcConfig::default())));
        assert!(reno_swing >= 10.0, "reno sawtooth {reno_swing} segments");
        assert!(swing * 3.0 < reno_swing);
    }

    /// Without ECN marks, on a drop-tail queue, Prague behaves like Reno:
    /// the window halves at each overflow.
    #[test]
    fn reno_like_sawtooth_on_a_drop_tail_path() {
        let mut sim = PathSim::new(Box::new(prague()), 12e6, ms(20));
        sim.buffer_packets = Some(25);
        sim.run_for(Duration::from_secs(30));
        let (lo, hi) = sim.window_range_packets(Duration::from_secs(20));
        assert!(sim.lost_packets > 0);
        assert!((lo / hi - 0.5).abs() < 0.1, "trough {lo} / peak {hi}");
    }

    /// Rounds of 30 ms delivering 20 datagrams each, with RTT samples from
    /// 20 ms up to 20 ms plus `spread` (a Wi-Fi-like link's bursts), then
    /// one CE mark on a window of 20 datagrams with `alpha` at 1: the
    /// window after the cut, in datagrams.
    fn cut_after_rounds(floor_on: bool, spread: Duration) -> f64 {
        let config = CcConfig {
            prague_burst_floor: floor_on,
            ..CcConfig::default()
        };
        let mut cc = Prague::new(&config);
        let sample = |now: Instant, rtt: Duration, ce: u64| {
            let mut a = ack(now, now - rtt, MDS, ce);
            a.min_rtt = ms(20);
            a.smoothed_rtt = ms(22);
            a
        };
        let mut t = Instant::from_millis(100);
        for _ in 0..40 {
            for i in 0..20u32 {
                let rtt = ms(20) + spread.mul_f64(f64::from(i % 5) / 4.0);
                cc.on_ack(&sample(t + Duration::from_micros(1500) * i, rtt, 0));
            }
            t += ms(30);
        }
        cc.cwnd = 20.0 * MDS as f64;
        cc.ssthresh = cc.cwnd as u64;
        cc.on_ack(&sample(t, ms(20), 1));
        cc.cwnd / MDS as f64
    }

    /// On an aggregating link (every round's RTTs spread over a burst
    /// interval) a CE cut stops at what the path delivered per minimum RTT
    /// (20 datagrams per 30 ms over 20 ms: 13.3), not at half the window;
    /// without the spread, or with the switch off, the cut is the usual
    /// `alpha / 2`.
    #[test]
    fn on_an_aggregating_link_a_cut_stops_at_the_delivered_window() {
        let bursty = cut_after_rounds(true, ms(4));
        assert!((bursty - 13.3).abs() < 0.5, "{bursty}");
        let smooth = cut_after_rounds(true, ms(1));
        assert!((smooth - 10.0).abs() < 0.1, "{smooth}");
        let off = cut_after_rounds(false, ms(4));
        assert!((off - 10.0).abs() < 0.1, "{off}");
    }
}
