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
//! RTT. Growth stops at that pipe plus [`QUEUE_TARGET`] of the delivery
//! rate plus one datagram (which the receiver may hold back for its ACK):
//! alone, the queue then stays near the target plus one packet time
//! whatever the increase. Below 12 Mbit/s one datagram of standing queue
//! outlasts the 1 ms step and every packet behind it is marked, so there
//! Prague asks for the limit without the datagram and widens its window
//! for the receiver's ACK holdback instead (`Prague::pipe_limited`). A window already above the limit is left to the
//! marks: cutting it to a limit computed from a delivery rate that lags
//! the sending rate by a round trip ratcheted the window down.
//!
//! The delivery rate lags, so the cap also lets a flow grow by only the
//! target's share of its window plus a datagram per round beyond what it
//! delivered a round ago: at long RTTs that holds back a flow still taking
//! its share from another in the same queue. Prague applies the cap only
//! while few rounds carry a mark (`Prague::grow`): a shared queue is held
//! at the step by everyone's marks, alone under the cap it stays below it.
//! Below a 100 ms minimum RTT (and at every RTT while it holds small
//! datagrams at a low rate) it also asks for a queue seen in the last
//! few round trips, since an estimate below the pipe would otherwise hold
//! the window there with the link partly idle. With small datagrams,
//! round trips spent refilling below the limit after a cut count as a
//! queue seen, and the limit takes no more of the estimate than the rate
//! the window at it delivered (`Prague::learn_pipe_scale`): the estimate,
//! the largest of many samples, sits above the link's rate.
//!
//! The RTT behind the queue test and the low-rate limit is the smallest
//! one seen for datagrams at least as large as the ones measured
//! ([`PipeCap::min_rtt_for`]), not the connection's minimum: that one may
//! come from a 1200-byte packet of the first round trips, and a full
//! datagram's RTT exceeds it by the difference in serialization (0.6 ms
//! at 4 Mbit/s), which read as a standing queue and, in the limit, as
//! less pipe than there is (docs/PROTOCOL.md).
//!
//! The estimate forgets only rounds whose RTTs showed a queue. A round
//! with none delivered all that was sent, so its samples show the
//! sender's own rate, not a narrower pipe: after slow start's last cut a
//! 200 ms flow refills for longer than ten rounds, and an estimate that
//! aged through the refill fell to the refilling rate and held the window
//! there (25 Mbit/s at 200 ms: 75% of the link, no queue).

use std::time::Duration;

use brisk_time::Instant;

use super::AckSample;
use super::delivery_rate::DeliveryRate;

/// Rounds whose largest delivery-rate sample the bandwidth estimate keeps.
const ROUNDS: usize = 10;
/// Queueing delay the cap allows above the pipe, besides one datagram:
/// half the 1 ms step of Linux's DualPI2, so a fast flow alone at the cap
/// is seldom marked.
pub(super) const QUEUE_TARGET: Duration = Duration::from_micros(500);

/// Width, in bytes, of the datagram-size classes the minimum RTT is kept
/// for, and how many there are (the last holds every larger size).
const SIZE_CLASS_BYTES: u64 = 200;
const SIZE_CLASSES: usize = 8;

fn size_class(bytes: u64) -> usize {
    ((bytes / SIZE_CLASS_BYTES) as usize).min(SIZE_CLASSES - 1)
}

/// The delivery-rate estimate and the rounds behind it.
#[derive(Clone, Debug, Default)]
pub(super) struct PipeCap {
    rate: DeliveryRate,
    /// Delivered bytes at which the current round ends.
    round_end: u64,
    /// The current round's largest sample, bytes per second.
    round_max: f64,
    /// Completed rounds' largest samples, newest first.
    maxima: [f64; ROUNDS],
    /// Some RTT of the current round showed a queue.
    round_queued: bool,
    /// The smallest path RTT seen per class of acknowledged datagram size
    /// ([`SIZE_CLASS_BYTES`] wide, the last class open-ended), with the
    /// size that showed it.
    min_rtt_by_size: [Option<(Duration, u64)>; SIZE_CLASSES],
}

impl PipeCap {
    pub(super) fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        self.rate.on_sent(now, bytes, bytes_in_flight);
    }

    /// Takes `ack`'s delivery-rate sample; a round ends when a packet sent
    /// after it began is acknowledged. `queued`: the ACK's RTT showed a
    /// queue. A round with no queue in any RTT leaves the older rounds'
    /// maxima in place and only adds its own to the newest: the path then
    /// carried all that was sent, so its samples show the sender's rate,
    /// not less room in the pipe.
    pub(super) fn on_ack(&mut self, ack: &AckSample, queued: bool) {
        self.round_queued |= queued;
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
        if prior.is_some_and(|p| p >= self.round_end) {
            self.round_end = self.rate.delivered_bytes();
            if self.round_queued {
                self.maxima.rotate_right(1);
                self.maxima[0] = self.round_max;
            } else {
                self.maxima[0] = self.maxima[0].max(self.round_max);
            }
            self.round_queued = false;
            self.round_max = 0.0;
        }
    }

    /// Keeps `rtt` (a path RTT, ACK delay removed) as a sample for
    /// datagrams of `size` bytes.
    pub(super) fn on_rtt(&mut self, rtt: Duration, size: u64) {
        let bw = self.bandwidth();
        // Within a class, the sample with the least delay beyond its own
        // serialization at the estimate: an ACK's size is the average of
        // the datagrams it covers, while its RTT is the newest one's, so a
        // sample may be filed under a smaller size than the datagram that
        // timed it, and would then read as a larger datagram's RTT less
        // its serialization (at 1 Mbit/s and 200 ms: 0.6 ms of false
        // delay in the limit, over the step with the cap's target).
        let base = |r: Duration, s: u64| {
            let r = r.as_secs_f64();
            if bw > 0.0 { r - s as f64 / bw } else { r }
        };
        let slot = &mut self.min_rtt_by_size[size_class(size)];
        if slot.is_none_or(|(m, at)| base(rtt, size) < base(m, at)) {
            *slot = Some((rtt, size));
        }
    }

    /// The smallest path RTT seen for datagrams at least about `size`
    /// bytes long (the class of `size` and above), `None` before any. A
    /// minimum that a smaller datagram of the same class showed is raised
    /// by the difference in size at the estimate: at 2 Mbit/s 200 bytes
    /// are 0.8 ms, more than the queue test's 0.25 ms.
    pub(super) fn min_rtt_for(&self, size: u64) -> Option<Duration> {
        let bw = self.bandwidth();
        let class = size_class(size);
        self.min_rtt_by_size[class..]
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.map(|s| (i == 0, s)))
            .map(|(own, (rtt, at))| {
                let more = size.saturating_sub(at);
                let less = if own { at.saturating_sub(size) } else { 0 };
                if bw > 0.0 && more > 0 {
                    rtt + Duration::from_secs_f64(more as f64 / bw)
                } else if bw > 0.0 && less > 0 {
                    rtt.saturating_sub(Duration::from_secs_f64(less as f64 / bw))
                } else {
                    rtt
                }
            })
            .min()
    }

    /// The largest delivery rate of the current and the last [`ROUNDS`]
    /// rounds, bytes per second.
    pub(super) fn bandwidth(&self) -> f64 {
        self.maxima.iter().copied().fold(self.round_max, f64::max)
    }

    /// One datagram of `mds` bytes at the estimate, zero before any: the
    /// minimum RTT may come from a smaller packet, so a full one's RTT
    /// exceeds it by its serialization without any queue.
    pub(super) fn packet_time(&self, mds: u64) -> Duration {
        let bw = self.bandwidth();
        if bw > 0.0 {
            Duration::from_secs_f64(mds as f64 / bw)
        } else {
            Duration::ZERO
        }
    }

    /// The window, in bytes, growth may not pass: the pipe at the largest
    /// recent delivery rate over `min_rtt` plus [`QUEUE_TARGET`], plus
    /// `datagram` bytes (one datagram, or none at low rates, where one
    /// datagram of standing queue outlasts the step). `None` before any
    /// estimate.
    pub(super) fn limit(&self, min_rtt: Duration, datagram: u64) -> Option<f64> {
        let bw = self.bandwidth();
        (bw > 0.0 && !min_rtt.is_zero())
            .then(|| bw * (min_rtt + QUEUE_TARGET).as_secs_f64() + datagram as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{MDS, ack};

    const RTT: Duration = Duration::from_millis(100);

    /// Runs `rounds` round trips of 100 ms at `per_round` datagrams sent
    /// evenly, each acknowledged one RTT later.
    fn drive(cap: &mut PipeCap, t: &mut Instant, per_round: u64, rounds: u64) {
        drive_queued(cap, t, per_round, rounds, true);
    }

    /// As [`drive`], each ACK's RTT showing a queue or not.
    fn drive_queued(cap: &mut PipeCap, t: &mut Instant, per_round: u64, rounds: u64, queued: bool) {
        let step = RTT / per_round as u32;
        let mut sent = std::collections::VecDeque::new();
        for _ in 0..per_round * rounds {
            cap.on_sent(*t, MDS, per_round * MDS);
            sent.push_back(*t);
            if let Some(&s) = sent.front()
                && *t - s >= RTT
            {
                sent.pop_front();
                cap.on_ack(&ack(*t, s, MDS, 0), queued);
            }
            *t += step;
        }
    }

    /// A flow sending 10 datagrams per 100 ms round: the limit is the pipe
    /// at that rate over the minimum RTT plus 0.5 ms, plus a datagram. At
    /// half the rate the estimate keeps the faster rounds' rate for ten
    /// rounds, then follows.
    #[test]
    fn limit_is_the_delivered_pipe_plus_the_target_and_a_datagram() {
        assert_eq!(PipeCap::default().limit(RTT, MDS), None);
        let mut cap = PipeCap::default();
        let mut t = Instant::ZERO;
        drive(&mut cap, &mut t, 10, 6);
        let rate = 10.0 * MDS as f64 / RTT.as_secs_f64();
        let bw = cap.bandwidth();
        assert!((bw - rate).abs() < 0.05 * rate, "{bw} vs {rate}");
        let limit = cap.limit(RTT, MDS).unwrap();
        let want = rate * (RTT + QUEUE_TARGET).as_secs_f64() + MDS as f64;
        assert!((limit - want).abs() < 0.05 * want, "{limit} vs {want}");
        drive(&mut cap, &mut t, 5, 4);
        assert!((cap.bandwidth() - rate).abs() < 0.05 * rate);
        drive(&mut cap, &mut t, 5, 12);
        let half = rate / 2.0;
        assert!(
            (cap.bandwidth() - half).abs() < 0.05 * half,
            "{}",
            cap.bandwidth()
        );
    }

    /// The smallest RTT is kept per datagram size: a full datagram's is
    /// never one a smaller datagram showed.
    #[test]
    fn min_rtt_is_kept_per_datagram_size() {
        let mut cap = PipeCap::default();
        assert_eq!(cap.min_rtt_for(MDS), None);
        let ms = Duration::from_micros;
        cap.on_rtt(ms(22_530), 1200);
        cap.on_rtt(ms(23_130), 1472);
        cap.on_rtt(ms(23_500), 1472);
        cap.on_rtt(ms(21_000), 300);
        // Full datagrams: only their own RTTs.
        assert_eq!(cap.min_rtt_for(1472), Some(ms(23_130)));
        // 1200 bytes: its own and the larger ones'.
        assert_eq!(cap.min_rtt_for(1200), Some(ms(22_530)));
        assert_eq!(cap.min_rtt_for(500), Some(ms(22_530)));
        assert_eq!(cap.min_rtt_for(300), Some(ms(21_000)));
        // With an estimate, a larger datagram of the same class adds its
        // extra bytes' time at the estimate: 150 bytes at 147.2 kB/s.
        let mut cap = PipeCap::default();
        let mut t = Instant::ZERO;
        drive(&mut cap, &mut t, 10, 6);
        cap.on_rtt(ms(100_000), 1000);
        let extra = 150.0 / cap.bandwidth();
        let got = cap.min_rtt_for(1150).unwrap().as_secs_f64() - 0.1;
        assert!((got - extra).abs() < 1e-6, "{got} vs {extra}");
        assert_eq!(cap.min_rtt_for(1000), Some(ms(100_000)));
    }

    /// Within a class, the sample kept is the one with the least delay
    /// beyond its own serialization at the estimate: an ACK filed under
    /// the average size of the datagrams it covers but timed by a larger
    /// one gives way to an exact sample with a larger RTT, and a smaller
    /// datagram of the class takes that RTT less its shorter
    /// serialization.
    #[test]
    fn min_rtt_per_size_follows_the_least_delay_beyond_serialization() {
        let mut cap = PipeCap::default();
        let mut t = Instant::ZERO;
        drive(&mut cap, &mut t, 10, 6);
        let bw = cap.bandwidth();
        let ser = |bytes: u64| Duration::from_secs_f64(bytes as f64 / bw);
        // Timed by a 475-byte datagram, filed under 401 bytes.
        let timed = RTT + ser(475);
        cap.on_rtt(timed, 401);
        assert_eq!(cap.min_rtt_for(475).unwrap(), timed + ser(74));
        // An exact 475-byte sample 0.1 ms above it replaces it.
        let exact = timed + Duration::from_micros(100);
        cap.on_rtt(exact, 475);
        assert_eq!(cap.min_rtt_for(475), Some(exact));
        let smaller = cap.min_rtt_for(401).unwrap();
        let want = exact - ser(74);
        assert!(
            smaller.abs_diff(want) < Duration::from_micros(1),
            "{smaller:?}"
        );
        // A sample with more delay beyond its serialization does not.
        cap.on_rtt(RTT + ser(420) + Duration::from_micros(200), 420);
        assert_eq!(cap.min_rtt_for(475), Some(exact));
    }

    /// Rounds whose RTTs show no queue carried all that was sent: a flow
    /// refilling its window below the pipe after a cut keeps the estimate
    /// of the rounds that filled it, however long the refill takes. Once
    /// the queue shows again, slower rounds replace it within ten rounds.
    #[test]
    fn rounds_without_a_queue_keep_the_estimate() {
        let mut cap = PipeCap::default();
        let mut t = Instant::ZERO;
        drive(&mut cap, &mut t, 10, 6);
        let rate = 10.0 * MDS as f64 / RTT.as_secs_f64();
        drive_queued(&mut cap, &mut t, 6, 20, false);
        let bw = cap.bandwidth();
        assert!((bw - rate).abs() < 0.05 * rate, "{bw} vs {rate}");
        drive_queued(&mut cap, &mut t, 6, 14, true);
        let slow = 0.6 * rate;
        let bw = cap.bandwidth();
        assert!((bw - slow).abs() < 0.05 * slow, "{bw} vs {slow}");
    }
}
