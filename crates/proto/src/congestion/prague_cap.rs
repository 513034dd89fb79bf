//! Prague's pipe cap: a bound on the window from what the path delivers,
//! which needs no mark to come back first.
//!
//! A scalable controller alone meets the step's first mark one round trip
//! after its queue passed the step, so that round trip's whole increase
//! becomes queue. Above the reference RTT the increase per round trip is
//! several datagrams (11.3 at 200 ms), which is what a 200 ms flow needs to
//! hold its share beside a 10 ms one, and alone it is also the queue's
//! peak. The sender knows now what it has in flight and can estimate the
//! pipe as the largest delivery rate of the last rounds times the minimum
//! RTT. The window is held at that pipe plus [`QUEUE_TARGET`] of the
//! delivery rate plus one datagram (which the receiver may hold back for
//! its ACK): alone, the queue then stays near the target whatever the
//! increase.
//!
//! The delivery rate lags the sending rate by a round trip, so a cap would
//! let a flow grow by only the target's share of its window per round
//! beyond what it delivered a round ago: at long RTTs that holds back a
//! flow still taking its share from another in the same queue. A shared
//! queue is held at the step by everyone's marks, so the flows in it see a
//! mark in nearly every round; alone under the cap the queue stays below
//! the step and rounds pass unmarked. The cap applies only after a round
//! without a mark, limited by the network (an application-limited round
//! says nothing of the path's rate), whose smallest RTT showed a queue:
//! with no queue the flow is below the pipe and grows freely, so one
//! round's lag in the delivery rate does not hold it back there.

use std::time::Duration;

use brisk_time::Instant;

use super::AckSample;
use super::delivery_rate::DeliveryRate;

/// Rounds whose largest delivery-rate sample the bandwidth estimate keeps.
const ROUNDS: usize = 10;
/// Queueing delay the cap allows above the pipe: half the 1 ms step of
/// Linux's DualPI2, so a flow alone at the cap is seldom marked.
pub(super) const QUEUE_TARGET: Duration = Duration::from_micros(500);

/// The delivery-rate estimate and the rounds behind it.
#[derive(Clone, Debug, Default)]
pub(super) struct PipeCap {
    rate: DeliveryRate,
    /// Delivered bytes at which the current round ends.
    round_end: u64,
    /// The current round's largest sample, bytes per second.
    round_max: f64,
    /// The current round carried a CE mark.
    round_marked: bool,
    /// Completed rounds' largest samples, newest first.
    maxima: [f64; ROUNDS],
    /// The smallest RTT (less the peer's ACK delay) of the current round.
    round_min_rtt: Option<Duration>,
    /// Some ACK of the current round was application-limited.
    round_app_limited: bool,
    /// The latest complete round may set the cap: no mark, not limited by
    /// the application, and a queue at its smallest RTT.
    last_round_binds: bool,
}

impl PipeCap {
    pub(super) fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        self.rate.on_sent(now, bytes, bytes_in_flight);
    }

    /// Takes `ack`'s delivery-rate sample and `marked` CE-marked packets.
    pub(super) fn on_ack(&mut self, ack: &AckSample, marked: u64) {
        let sample = self.rate.on_ack(ack);
        let prior = sample
            .map(|s| s.prior_delivered_bytes)
            .or_else(|| self.rate.prior_delivered(ack.largest_acked_sent_at));
        if let Some(s) = sample {
            let r = s.rate_bytes_per_sec();
            // An application-limited sample only counts if it beats the
            // estimate: it may show less than the path carries, never more.
            if !s.app_limited || r > self.bandwidth() {
                self.round_max = self.round_max.max(r);
            }
        }
        self.round_marked |= marked > 0;
        self.round_app_limited |= ack.app_limited;
        if let Some(rtt) = ack.rtt_sample() {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if prior.is_some_and(|p| p >= self.round_end) {
            self.round_end = self.rate.delivered_bytes();
            self.maxima.rotate_right(1);
            self.maxima[0] = self.round_max;
            self.round_max = 0.0;
            let queue = self
                .round_min_rtt
                .is_some_and(|m| m > ack.min_rtt + QUEUE_TARGET / 2);
            self.last_round_binds = queue && !self.round_marked && !self.round_app_limited;
            self.round_marked = false;
            self.round_app_limited = false;
            self.round_min_rtt = None;
        }
    }

    /// The largest delivery rate of the current and the last [`ROUNDS`]
    /// rounds, bytes per second.
    pub(super) fn bandwidth(&self) -> f64 {
        self.maxima.iter().copied().fold(self.round_max, f64::max)
    }

    /// The largest window, in bytes: the pipe at the largest recent
    /// delivery rate over `min_rtt` plus [`QUEUE_TARGET`], plus one
    /// datagram of `mds`. `None` while there is no estimate or after a
    /// round that does not bind (see the module doc).
    pub(super) fn limit(&self, min_rtt: Duration, mds: u64) -> Option<f64> {
        let bw = self.bandwidth();
        if bw <= 0.0 || !self.last_round_binds || min_rtt.is_zero() {
            return None;
        }
        Some(bw * (min_rtt + QUEUE_TARGET).as_secs_f64() + mds as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{MDS, ack};

    const RTT: Duration = Duration::from_millis(100);

    /// Runs `rounds` round trips of 100 ms at `per_round` datagrams sent
    /// evenly, each acknowledged one RTT later over a path whose minimum
    /// RTT is `RTT - queue`, `marked` of the ACKs of each round marked.
    fn drive(cap: &mut PipeCap, t: &mut Instant, per_round: u64, rounds: u64, marked: u64, queue: Duration) {
        let step = RTT / per_round as u32;
        let mut sent = std::collections::VecDeque::new();
        for i in 0..per_round * rounds {
            cap.on_sent(*t, MDS, per_round * MDS);
            sent.push_back(*t);
            if let Some(&s) = sent.front()
                && *t - s >= RTT
            {
                sent.pop_front();
                let m = u64::from(i % per_round < marked);
                let mut a = ack(*t, s, MDS, m);
                a.min_rtt = RTT - queue;
                cap.on_ack(&a, m);
            }
            *t += step;
        }
    }

    /// A flow sending 10 datagrams per 100 ms round over a 2 ms queue: the
    /// limit is the pipe at that rate over the minimum RTT plus 0.5 ms,
    /// plus a datagram. A round with a mark lifts it for the next round,
    /// and so does one without a queue.
    #[test]
    fn limit_is_the_delivered_pipe_after_an_unmarked_round_with_a_queue() {
        let queue = Duration::from_millis(2);
        let min_rtt = RTT - queue;
        let mut cap = PipeCap::default();
        let mut t = Instant::ZERO;
        drive(&mut cap, &mut t, 10, 6, 0, queue);
        let rate = 10.0 * MDS as f64 / RTT.as_secs_f64();
        let bw = cap.bandwidth();
        assert!((bw - rate).abs() < 0.05 * rate, "{bw} vs {rate}");
        let limit = cap.limit(min_rtt, MDS).unwrap();
        let want = rate * (min_rtt + QUEUE_TARGET).as_secs_f64() + MDS as f64;
        assert!((limit - want).abs() < 0.05 * want, "{limit} vs {want}");
        drive(&mut cap, &mut t, 10, 2, 1, queue);
        assert_eq!(cap.limit(min_rtt, MDS), None);
        drive(&mut cap, &mut t, 10, 2, 0, queue);
        assert!(cap.limit(min_rtt, MDS).is_some());
        drive(&mut cap, &mut t, 10, 2, 0, Duration::ZERO);
        assert_eq!(cap.limit(RTT, MDS), None);
        assert_eq!(PipeCap::default().limit(RTT, MDS), None);
    }
}
