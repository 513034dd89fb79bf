//! Pacing: spreading the congestion window over the round trip.
//!
//! A sender that releases its whole window whenever ACKs allow sends bursts
//! that fill queues and cause loss (RFC 9002 §7.7). The [`Pacer`] is a token
//! bucket refilled at `gain * cwnd / srtt`: the connection asks
//! [`Pacer::next_send_time`] before each packet and reports it with
//! [`Pacer::on_sent`]. The connection passes the latest RTT sample instead
//! of `srtt` while that sample is below half of it (a drained queue the
//! smoothed RTT has not caught up with: `RttEstimator::pacing_rtt`).
//!
//! Gain: 2 in slow start, so pacing never holds back a window that doubles
//! every round trip; 1.25 in congestion avoidance, the value RFC 9002 §7.7
//! gives as an example, so timer slack and ACK jitter do not leave the
//! window unused. The window, not the pacer, still bounds what is in flight.
//!
//! Burst: the bucket holds 250 µs worth of data at the current rate and
//! never less than two datagrams, so a sender on a fast path is not woken
//! for every packet, and an idle period earns no more than one such burst.
//!
//! Late wake-ups: a driver on a real clock wakes for a release time a
//! little late (timer slack, a thread that waited for a core). The bucket
//! holds one datagram for Prague, so time past the release time would earn
//! nothing and be lost for good: at 4 Mbit/s a sender that wakes 0.2 ms
//! late per 3 ms packet sends 7% below its rate. So the pacer remembers the
//! release time it gave, and a packet sent at the first question after it
//! is charged from that release time, not from when it left: its lateness
//! (at most [`MAX_LATE_CREDIT`], and never more than the bucket holds) is
//! credited to the next one. Only a packet that waited for the pacer and
//! left at the first chance earns credit; a sender that had nothing to send
//! or no window at the release time earns none. A driver that wakes on time
//! (the simulator) never earns any.
//!
//! A controller may ask for other values through [`PacingParams`]
//! (`Controller::pacing`): Prague paces at exactly its window per RTT and
//! with single-datagram bursts, because an L4S queue marks any packet that
//! waits longer than about a millisecond, and below 12 Mbit/s the second
//! packet of a back-to-back pair of 1500 bytes always does. A controller
//! that models the path's rate itself (BBR, `Controller::pacing_rate`)
//! hands that rate over through [`Pacer::next_send_time_at_rate`], and the
//! pacer applies no gain to it.

use std::time::Duration;

use brisk_time::Instant;

use crate::stats::PacingStats;

/// Gain on `cwnd / srtt` in slow start.
pub(crate) const SLOW_START_GAIN: f64 = 2.0;
/// Gain on `cwnd / srtt` in congestion avoidance (RFC 9002 §7.7's `N`).
pub(crate) const CONGESTION_AVOIDANCE_GAIN: f64 = 1.25;
/// The longest burst, in time at the pacing rate.
pub(crate) const MAX_BURST_TIME: Duration = Duration::from_micros(250);
/// The smallest burst, in datagrams.
pub(crate) const MIN_BURST_PACKETS: u64 = 2;
/// The most lateness one packet credits to the next: behind a packet that
/// left late the next one may start up to this much early, and waits at
/// most this long in the bottleneck's queue, below an L4S queue's 1 ms
/// marking step.
pub(crate) const MAX_LATE_CREDIT: Duration = Duration::from_millis(1);
/// Nanoseconds a release time is moved on at most past its estimate (one
/// or two in practice; the bound only keeps absurd rates from looping).
const RELEASE_STEPS: u32 = 4;

/// How a controller wants its window spread: the gain on `cwnd / srtt` and
/// the smallest burst the bucket may hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PacingParams {
    pub gain: f64,
    pub min_burst_packets: u64,
}

impl PacingParams {
    /// The defaults above: gain 2 in slow start, 1.25 after; bursts of at
    /// least two datagrams.
    pub(crate) fn classic(slow_start: bool) -> Self {
        Self {
            gain: if slow_start {
                SLOW_START_GAIN
            } else {
                CONGESTION_AVOIDANCE_GAIN
            },
            min_burst_packets: MIN_BURST_PACKETS,
        }
    }
}

/// A token-bucket pacer for one path.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    max_datagram_size: u64,
    /// The datagram the smallest burst counts in: `max_datagram_size`
    /// unless the controller sends smaller datagrams.
    burst_datagram: u64,
    /// Bytes the bucket held at `last_refill`.
    tokens: f64,
    /// Bucket size in bytes at the current rate.
    capacity: f64,
    /// Bytes per second; zero until the first `next_send_time`.
    rate_bytes_per_sec: f64,
    /// When `tokens` was last set: a packet left or the rate changed.
    last_refill: Option<Instant>,
    /// What the rate and capacity were computed from: they change per ACK,
    /// the pacer is asked per packet, so the float divisions are skipped
    /// while the inputs stay the same.
    rate_inputs: Option<RateInputs>,
    /// The release time last given for a packet the sender had to hold.
    release: Option<Instant>,
    /// The first question at or after `release`: `(when, how late)`; the
    /// packet sent at that instant is charged from the release time.
    late: Option<(Instant, Duration)>,
    stats: PacingStats,
}

/// The inputs of the current rate and bucket size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RateInputs {
    /// `(cwnd, srtt, gain bits, minimum burst)`: a window spread over the
    /// smoothed RTT at a gain.
    Window(u64, Duration, u64, u64),
    /// `(rate bits, minimum burst)`: a rate the controller computed.
    Rate(u64, u64),
}

impl Pacer {
    /// The bucket starts full with the minimum burst.
    pub(crate) fn new(max_datagram_size: u64) -> Self {
        let max_datagram_size = max_datagram_size.max(1);
        let capacity = MIN_BURST_PACKETS.saturating_mul(max_datagram_size) as f64;
        Self {
            max_datagram_size,
            burst_datagram: max_datagram_size,
            tokens: capacity,
            capacity,
            rate_bytes_per_sec: 0.0,
            last_refill: None,
            rate_inputs: None,
            release: None,
            late: None,
            stats: PacingStats::default(),
        }
    }

    /// When a packet of `bytes` may leave: `now` if the bucket holds enough,
    /// otherwise the first nanosecond at which it will have refilled enough
    /// at the rate set by `cwnd`, `srtt` and `params`. A zero `srtt`
    /// disables pacing.
    ///
    /// Asking changes nothing but the rate (when `cwnd`, `srtt` or the
    /// phase changed): the answer is the same however often, or whether at
    /// all, the pacer was asked in between, so a poll that finds nothing to
    /// send leaves no trace. And at the instant returned the same question
    /// is answered with that instant, so a timer set to it never fires early.
    pub(crate) fn next_send_time(
        &mut self,
        now: Instant,
        bytes: u64,
        cwnd: u64,
        srtt: Duration,
        params: PacingParams,
    ) -> Instant {
        self.set_window_rate(now, cwnd, srtt, params);
        self.answer(now, bytes)
    }

    /// [`next_send_time`](Self::next_send_time) at `rate_bytes_per_sec`
    /// exactly, for a controller that computes its rate itself: no window,
    /// RTT or gain enters it; `params` only sets the smallest burst. A rate
    /// that is not a positive number disables pacing.
    pub(crate) fn next_send_time_at_rate(
        &mut self,
        now: Instant,
        bytes: u64,
        rate_bytes_per_sec: f64,
        params: PacingParams,
    ) -> Instant {
        self.set_given_rate(now, rate_bytes_per_sec, params.min_burst_packets);
        self.answer(now, bytes)
    }

    /// The release time for a packet of `bytes` asked at `now`, with the
    /// question noted for the late credit.
    fn answer(&mut self, now: Instant, bytes: u64) -> Instant {
        let at = self.release_time(now, bytes);
        self.note_question(now, at);
        at
    }

    /// Keeps the schedule for the late credit: a release time in the
    /// future is remembered; the first question at or after it records how
    /// late it came; any later question (the sender did not send at that
    /// first chance) forgets it.
    fn note_question(&mut self, now: Instant, at: Instant) {
        if at > now {
            self.release = Some(at);
            self.late = None;
        } else if let Some(release) = self.release.take() {
            self.late = Some((now, now.saturating_duration_since(release)));
        } else if self.late.is_some_and(|(asked, _)| asked != now) {
            self.late = None;
        }
    }

    /// The sender was held by something else than the pacer (its window
    /// closed) when asked for a packet: the release time it waited for no
    /// longer counts, so a packet the window releases later earns no credit.
    pub(crate) fn held_elsewhere(&mut self) {
        self.release = None;
        self.late = None;
    }

    /// How the sender kept to the schedule so far.
    pub(crate) fn stats(&self) -> PacingStats {
        self.stats
    }

    /// When a packet of `bytes` may leave at the current rate.
    fn release_time(&self, now: Instant, bytes: u64) -> Instant {
        if self.rate_bytes_per_sec <= 0.0 {
            return now;
        }
        // A packet larger than the bucket waits for a full bucket.
        let needed = (bytes as f64).min(self.capacity);
        // The bucket only fills with time: what it held at the last refill
        // is enough (a receiver's full bucket) without working out the rest.
        if self.tokens >= needed {
            return now;
        }
        let missing = needed - self.tokens_at(now);
        if missing <= 0.0 {
            return now;
        }
        // The estimate, rounded down, then moved on to the first nanosecond
        // at which `tokens_at` itself finds enough: rounding the estimate up
        // instead overshoots by a nanosecond when it lands on a whole one,
        // and the sum's own rounding can fall short of it by a fraction of a
        // byte, which woke the connection a nanosecond early for nothing.
        let wait_ns = (missing / self.rate_bytes_per_sec * 1e9).floor() as u64;
        let mut at = now + Duration::from_nanos(wait_ns);
        for _ in 0..RELEASE_STEPS {
            if self.tokens_at(at) >= needed {
                break;
            }
            at += Duration::from_nanos(1);
        }
        at
    }

    /// The smallest burst counts in datagrams of `bytes` from now on
    /// (`None`: full ones), for a controller that sends datagrams smaller
    /// than the path's: a bucket of one full datagram would let several
    /// small ones leave back to back.
    #[inline]
    pub(crate) fn set_burst_datagram(&mut self, now: Instant, bytes: Option<u64>) {
        let bytes = bytes.map_or(self.max_datagram_size, |b| b.max(1));
        if bytes != self.burst_datagram {
            self.change_burst_datagram(now, bytes);
        }
    }

    /// [`Pacer::set_burst_datagram`] to a new size.
    fn change_burst_datagram(&mut self, now: Instant, bytes: u64) {
        self.burst_datagram = bytes;
        // Bank what accrued at the old size and recompute the bucket on
        // the next question.
        self.tokens = self.tokens_at(now);
        self.last_refill = Some(now.max(self.last_refill.unwrap_or(now)));
        self.rate_inputs = None;
    }

    /// A packet of `bytes` left at `now`.
    ///
    /// A packet that waited for the pacer and left at the first question
    /// after its release time is charged from that time: the lateness, up
    /// to [`MAX_LATE_CREDIT`] and to what the bucket holds besides, stays
    /// in the bucket for the next packet.
    pub(crate) fn on_sent(&mut self, now: Instant, bytes: u64) {
        let mut tokens = (self.tokens_at(now) - bytes as f64).max(0.0);
        // A question at another instant (or none) since the release time:
        // no credit, and the release time is spent.
        self.release = None;
        if let Some((asked, late)) = self.late.take()
            && asked == now
        {
            self.stats.waits += 1;
            if !late.is_zero() {
                self.stats.late_sends += 1;
                self.stats.late_total += late;
                self.stats.late_max = self.stats.late_max.max(late);
                let room = (self.capacity - tokens).max(0.0);
                let credit =
                    (late.min(MAX_LATE_CREDIT).as_secs_f64() * self.rate_bytes_per_sec).min(room);
                if credit > 0.0 {
                    tokens += credit;
                    self.stats.credited +=
                        Duration::from_secs_f64(credit / self.rate_bytes_per_sec);
                }
            }
        }
        self.tokens = tokens;
        self.last_refill = Some(now.max(self.last_refill.unwrap_or(now)));
    }

    /// The pacing rate in bits per second, as last computed.
    pub(crate) fn rate_bps(&self) -> u64 {
        (self.rate_bytes_per_sec * 8.0) as u64
    }

    #[cfg(test)]
    /// The current bucket size in bytes.
    pub(crate) fn burst_bytes(&self) -> u64 {
        self.capacity as u64
    }

    /// The bucket at `now`: what it held at `last_refill` plus what the
    /// rate added since, up to its size. Computed from that one moment
    /// rather than accumulated call by call, so it does not depend on when
    /// it was asked before. (A full bucket or no time passed skips the
    /// arithmetic, an ACK-clocked sender's usual case.)
    fn tokens_at(&self, now: Instant) -> f64 {
        match self.last_refill {
            Some(last) if now > last && self.tokens < self.capacity => {
                let elapsed = (now - last).as_secs_f64();
                (self.tokens + elapsed * self.rate_bytes_per_sec).min(self.capacity)
            }
            _ => self.tokens,
        }
    }

    fn set_window_rate(&mut self, now: Instant, cwnd: u64, srtt: Duration, params: PacingParams) {
        let inputs =
            RateInputs::Window(cwnd, srtt, params.gain.to_bits(), params.min_burst_packets);
        if !self.inputs_changed(now, inputs) {
            return;
        }
        let srtt_secs = srtt.as_secs_f64();
        if srtt_secs <= 0.0 {
            self.rate_bytes_per_sec = 0.0;
            return;
        }
        let gain = if params.gain.is_finite() && params.gain > 0.0 {
            params.gain
        } else {
            1.0
        };
        self.rate_bytes_per_sec = gain * cwnd.max(1) as f64 / srtt_secs;
        self.set_capacity(params.min_burst_packets);
    }

    fn set_given_rate(&mut self, now: Instant, rate: f64, min_burst_packets: u64) {
        if !self.inputs_changed(now, RateInputs::Rate(rate.to_bits(), min_burst_packets)) {
            return;
        }
        if !(rate.is_finite() && rate > 0.0) {
            self.rate_bytes_per_sec = 0.0;
            return;
        }
        self.rate_bytes_per_sec = rate;
        self.set_capacity(min_burst_packets);
    }

    /// Whether `inputs` differ from the current rate's; if so, banks what
    /// accrued so far (at the old rate) and records them. In line: asked
    /// before every packet, and mostly the same.
    #[inline]
    fn inputs_changed(&mut self, now: Instant, inputs: RateInputs) -> bool {
        if self.rate_inputs == Some(inputs) {
            // Same rate and capacity; `on_sent` keeps the tokens within the
            // capacity.
            return false;
        }
        self.bank_for(now, inputs);
        true
    }

    /// Banks what accrued so far and records the new inputs.
    fn bank_for(&mut self, now: Instant, inputs: RateInputs) {
        // What accrued so far accrued at the old rate.
        self.tokens = self.tokens_at(now);
        self.last_refill = Some(now.max(self.last_refill.unwrap_or(now)));
        self.rate_inputs = Some(inputs);
    }

    /// The bucket for the current rate: `MAX_BURST_TIME` of it, at least
    /// `min_burst_packets` datagrams.
    fn set_capacity(&mut self, min_burst_packets: u64) {
        let min_burst = min_burst_packets.max(1).saturating_mul(self.burst_datagram) as f64;
        self.capacity = (self.rate_bytes_per_sec * MAX_BURST_TIME.as_secs_f64()).max(min_burst);
        self.tokens = self.tokens.min(self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDS: u64 = 1200;

    /// Sends `packets` datagrams as early as the pacer allows from `start`;
    /// returns each send time.
    fn send_all(
        p: &mut Pacer,
        start: Instant,
        packets: u64,
        cwnd: u64,
        srtt: Duration,
        ss: bool,
    ) -> Vec<Instant> {
        let mut now = start;
        (0..packets)
            .map(|_| {
                now = p.next_send_time(now, MDS, cwnd, srtt, PacingParams::classic(ss));
                p.on_sent(now, MDS);
                now
            })
            .collect()
    }

    /// A controller sending smaller datagrams gets a bucket of one of them,
    /// not of one full datagram (which would let several leave back to
    /// back); `None` restores the full one.
    #[test]
    fn the_smallest_burst_counts_in_the_datagrams_sent() {
        let mut p = Pacer::new(MDS);
        let params = PacingParams {
            gain: 1.0,
            min_burst_packets: 1,
        };
        let (now, srtt) = (Instant::from_secs_f64(1.0), Duration::from_millis(40));
        p.next_send_time(now, MDS, 5_000, srtt, params);
        assert_eq!(p.burst_bytes(), MDS);
        p.set_burst_datagram(now, Some(400));
        p.next_send_time(now, 400, 5_000, srtt, params);
        assert_eq!(p.burst_bytes(), 400);
        p.set_burst_datagram(now, None);
        p.next_send_time(now, MDS, 5_000, srtt, params);
        assert_eq!(p.burst_bytes(), MDS);
    }

    #[test]
    fn a_window_is_spread_over_the_rtt_divided_by_the_gain() {
        let mut p = Pacer::new(MDS);
        let srtt = Duration::from_millis(100);
        let cwnd = 100 * MDS;
        let start = Instant::from_secs_f64(1.0);
        let times = send_all(&mut p, start, 100, cwnd, srtt, false);
        // 1.25 * 120 kB / 100 ms = 1.5 MB/s = 12 Mbit/s.
        assert_eq!(p.rate_bps(), 12_000_000);
        // 375 bytes of burst at that rate is less than two datagrams, so the
        // first two leave at once and the other 98 every 0.8 ms.
        assert_eq!(p.burst_bytes(), 2 * MDS);
        assert_eq!(times[1], start);
        let span = (times[99] - start).as_secs_f64();
        let expected = 98.0 * MDS as f64 / 1.5e6;
        assert!(
            (span - expected).abs() < 1e-6,
            "span {span}, expected {expected}"
        );
        // The whole window fits in one srtt, with 20% to spare.
        assert!(span < srtt.as_secs_f64() / 1.25);
        for pair in times[2..].windows(2) {
            let gap = (pair[1] - pair[0]).as_secs_f64();
            assert!((gap - 0.0008).abs() < 2e-9, "gap {gap}");
        }
    }

    #[test]
    fn slow_start_paces_at_twice_cwnd_over_srtt() {
        let mut p = Pacer::new(MDS);
        let srtt = Duration::from_millis(100);
        let cwnd = 100 * MDS;
        let start = Instant::from_secs_f64(1.0);
        let times = send_all(&mut p, start, 100, cwnd, srtt, true);
        assert_eq!(p.rate_bps(), 2 * cwnd * 8 * 10);
        let span = (times[99] - start).as_secs_f64();
        let expected = 98.0 * MDS as f64 / 2.4e6;
        assert!(
            (span - expected).abs() < 1e-6,
            "span {span}, expected {expected}"
        );
        let ca_span = {
            let mut q = Pacer::new(MDS);
            let t = send_all(&mut q, start, 100, cwnd, srtt, false);
            (t[99] - start).as_secs_f64()
        };
        assert!((ca_span / span - 2.0 / 1.25).abs() < 1e-6);
    }

    #[test]
    fn bursts_never_exceed_250_us_of_data() {
        // 1 Gbit/s-ish: 1000 datagrams per 10 ms srtt at gain 1.25.
        let mut p = Pacer::new(MDS);
        let srtt = Duration::from_millis(10);
        let cwnd = 1_000 * MDS;
        // Send a little, then idle so the bucket is full when the test starts.
        send_all(&mut p, Instant::ZERO, 10, cwnd, srtt, false);
        let start = Instant::from_secs_f64(1.0);
        let times = send_all(&mut p, start, 2_000, cwnd, srtt, false);
        let rate = 1.25 * cwnd as f64 / 0.01;
        let burst = p.burst_bytes();
        assert_eq!(burst, (rate * 250e-6) as u64);
        // Over any interval, the bytes sent never exceed one burst plus what
        // the rate allows in that interval.
        for (i, &t0) in times.iter().enumerate().step_by(37) {
            for (j, &t1) in times.iter().enumerate().skip(i) {
                let sent = ((j - i + 1) as u64 * MDS) as f64;
                let allowed = burst as f64 + rate * (t1 - t0).as_secs_f64() + 1.0;
                assert!(sent <= allowed, "{sent} bytes in {:?}", t1 - t0);
            }
        }
        // And back-to-back runs (same instant) are at most a burst long.
        let longest_run = times
            .chunk_by(|a, b| a == b)
            .map(<[Instant]>::len)
            .max()
            .unwrap();
        assert_eq!(longest_run as u64, burst / MDS);
    }

    /// A rate handed over as it is: the window, RTT and gain play no part,
    /// the bucket is sized from that rate as from any other, and a rate
    /// that is not a positive number disables pacing.
    #[test]
    fn a_given_rate_is_paced_as_it_is() {
        let srtt = Duration::from_millis(20);
        let cwnd = 10 * MDS;
        let params = PacingParams::classic(false);
        let start = Instant::from_secs_f64(1.0);
        let mut p = Pacer::new(MDS);
        assert_eq!(
            p.next_send_time_at_rate(start, MDS, 1_000_000.0, params),
            start
        );
        assert_eq!(p.rate_bps(), 8_000_000);
        // 250 us at 1 MB/s is 250 bytes: the two-datagram floor holds.
        assert_eq!(p.burst_bytes(), 2 * MDS);
        // Two datagrams leave at once, the third 1.2 ms later.
        p.on_sent(start, MDS);
        p.on_sent(start, MDS);
        let third = p.next_send_time_at_rate(start, MDS, 1_000_000.0, params);
        assert_eq!(third, start + Duration::from_micros(1200));
        // The same inputs as a window give 1.25 * cwnd / srtt instead.
        let _ = p.next_send_time(start, MDS, cwnd, srtt, params);
        assert_eq!(p.rate_bps(), 6_000_000);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut q = Pacer::new(MDS);
            q.on_sent(start, 2 * MDS);
            assert_eq!(q.next_send_time_at_rate(start, MDS, bad, params), start);
            assert_eq!(q.rate_bps(), 0);
        }
    }

    /// Prague's parameters: exactly the window per RTT, and no two
    /// datagrams back to back at a rate where 250 us holds less than two.
    #[test]
    fn gain_one_and_single_datagram_bursts_space_every_packet() {
        let mut p = Pacer::new(MDS);
        let srtt = Duration::from_millis(20);
        // 10 datagrams per 20 ms: 4.8 Mbit/s, one datagram every 2 ms.
        let cwnd = 10 * MDS;
        let params = PacingParams {
            gain: 1.0,
            min_burst_packets: 1,
        };
        let start = Instant::from_secs_f64(1.0);
        let mut now = start;
        let mut times = Vec::new();
        for _ in 0..10 {
            now = p.next_send_time(now, MDS, cwnd, srtt, params);
            p.on_sent(now, MDS);
            times.push(now);
        }
        assert_eq!(p.rate_bps(), 4_800_000);
        assert_eq!(p.burst_bytes(), MDS);
        assert_eq!(times[0], start);
        for pair in times.windows(2) {
            let gap = (pair[1] - pair[0]).as_secs_f64();
            assert!((gap - 0.002).abs() < 2e-9, "gap {gap}");
        }
        // The default parameters let the first two go together.
        let mut q = Pacer::new(MDS);
        let classic = send_all(&mut q, start, 3, cwnd, srtt, false);
        assert_eq!(classic[1], start);
    }

    const PRAGUE: PacingParams = PacingParams {
        gain: 1.0,
        min_burst_packets: 1,
    };

    /// A sender woken `late` after every release time Prague's pacer gives
    /// (10 datagrams per 20 ms, one every 2 ms): its send times.
    fn late_sender(late: Duration, packets: usize) -> (Pacer, Vec<Instant>) {
        let mut p = Pacer::new(MDS);
        let (srtt, cwnd) = (Duration::from_millis(20), 10 * MDS);
        let mut now = Instant::from_secs_f64(1.0);
        let mut times = Vec::new();
        for _ in 0..packets {
            let at = p.next_send_time(now, MDS, cwnd, srtt, PRAGUE);
            now = if at > now { at + late } else { now };
            assert_eq!(p.next_send_time(now, MDS, cwnd, srtt, PRAGUE), now);
            p.on_sent(now, MDS);
            times.push(now);
        }
        (p, times)
    }

    /// A sender that wakes late keeps the pacer's rate: each packet's
    /// lateness is credited to the next, so only the first is behind the
    /// schedule; without the credit every late wake-up would be lost.
    #[test]
    fn a_late_sender_keeps_the_rate() {
        for late_us in [0, 50, 300, 999, 1_000, 1_900] {
            let late = Duration::from_micros(late_us);
            let (p, times) = late_sender(late, 101);
            let span = (times[100] - times[0]).as_secs_f64();
            // 100 gaps of 2 ms; the first packet after the first one is
            // late with no credit before it, and each later one loses only
            // what exceeds the 1 ms credit.
            let lost = late.saturating_sub(MAX_LATE_CREDIT).as_secs_f64();
            let expected = 0.2 + late.as_secs_f64() + 99.0 * lost;
            assert!((span - expected).abs() < 1e-6, "{late:?}: span {span}");
            // No two packets closer than the credit allows.
            for pair in times.windows(2) {
                let gap = (pair[1] - pair[0]).as_secs_f64();
                assert!(gap >= 0.002 - 1e-3 - 1e-9, "{late:?}: gap {gap}");
            }
            let s = p.stats();
            assert_eq!(s.waits, 100);
            assert_eq!(s.late_sends, if late_us == 0 { 0 } else { 100 });
            assert_eq!(s.late_max, late);
            assert_eq!(s.late_total, late * s.late_sends as u32);
            let credited = late.min(MAX_LATE_CREDIT).as_secs_f64() * s.late_sends as f64;
            assert!((s.credited.as_secs_f64() - credited).abs() < 1e-6);
        }
    }

    /// A Prague pacer (one datagram every 2 ms at `cwnd` over `srtt`) that
    /// sent one packet at 1 s and was asked for the next: the release time
    /// it gave.
    fn one_sent_one_held(srtt: Duration, cwnd: u64) -> (Pacer, Instant) {
        let start = Instant::from_secs_f64(1.0);
        let mut p = Pacer::new(MDS);
        assert_eq!(p.next_send_time(start, MDS, cwnd, srtt, PRAGUE), start);
        p.on_sent(start, MDS);
        let at = p.next_send_time(start, MDS, cwnd, srtt, PRAGUE);
        assert_eq!(at, start + Duration::from_millis(2));
        (p, at)
    }

    /// Credit is earned only by a packet that waited for the pacer and left
    /// at the first question after its release time: a sender with nothing
    /// to send then (or no window) sends later with no credit, as before.
    #[test]
    fn only_a_packet_held_by_the_pacer_earns_credit() {
        let (srtt, cwnd) = (Duration::from_millis(20), 10 * MDS);
        let (mut p, at) = one_sent_one_held(srtt, cwnd);
        // Woken 0.5 ms late, asked, but nothing to send then.
        let woke = at + Duration::from_micros(500);
        assert_eq!(p.next_send_time(woke, MDS, cwnd, srtt, PRAGUE), woke);
        // Data comes 3 ms later: it leaves at once, with no credit.
        let later = woke + Duration::from_millis(3);
        assert_eq!(p.next_send_time(later, MDS, cwnd, srtt, PRAGUE), later);
        p.on_sent(later, MDS);
        assert_eq!(
            p.next_send_time(later, MDS, cwnd, srtt, PRAGUE),
            later + Duration::from_millis(2)
        );
        assert_eq!(p.stats().late_sends, 0);
        assert_eq!(p.stats().credited, Duration::ZERO);
        // The window closed before the release time; the ACK that opens it
        // comes later: no credit either.
        let (mut q, at) = one_sent_one_held(srtt, cwnd);
        q.held_elsewhere();
        let acked = at + Duration::from_micros(700);
        assert_eq!(q.next_send_time(acked, MDS, cwnd, srtt, PRAGUE), acked);
        q.on_sent(acked, MDS);
        assert_eq!(
            q.next_send_time(acked, MDS, cwnd, srtt, PRAGUE),
            acked + Duration::from_millis(2)
        );
        assert_eq!(q.stats(), PacingStats::default());
    }

    #[test]
    fn idle_time_earns_at_most_one_burst() {
        let mut p = Pacer::new(MDS);
        let srtt = Duration::from_millis(20);
        let cwnd = 50 * MDS;
        let start = Instant::from_secs_f64(1.0);
        send_all(&mut p, start, 50, cwnd, srtt, false);
        let after_idle = start + Duration::from_secs(10);
        let times = send_all(&mut p, after_idle, 10, cwnd, srtt, false);
        let immediate = times.iter().filter(|&&t| t == after_idle).count() as u64;
        assert_eq!(immediate, MIN_BURST_PACKETS);
        assert!(times[9] > after_idle);
    }

    /// The release time is the instant at which the pacer itself says
    /// "now", and asking in between (a poll that found nothing to send)
    /// changes no later answer: over seeded windows, RTTs and ask times.
    #[test]
    fn release_times_are_exact_and_asking_leaves_no_trace() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..2_000 {
            let cwnd = rng.random_range(2..2_000) * MDS + rng.random_range(0..MDS);
            let srtt = Duration::from_nanos(rng.random_range(100_000..500_000_000));
            let ss = if rng.random_bool(0.3) {
                PacingParams {
                    gain: 1.0,
                    min_burst_packets: 1,
                }
            } else {
                PacingParams::classic(rng.random_bool(0.5))
            };
            let mut asked = Pacer::new(MDS);
            let mut quiet = Pacer::new(MDS);
            let mut now = Instant::from_nanos(rng.random_range(0..1_000_000_000));
            for _ in 0..20 {
                let at = quiet.next_send_time(now, MDS, cwnd, srtt, ss);
                // The other pacer is asked at a moment in between as well.
                assert_eq!(asked.next_send_time(now, MDS, cwnd, srtt, ss), at);
                let between = now + (at - now) / 3 + Duration::from_nanos(rng.random_range(0..7));
                if between < at {
                    assert_eq!(asked.next_send_time(between, MDS, cwnd, srtt, ss), at);
                }
                assert_eq!(
                    quiet.next_send_time(at, MDS, cwnd, srtt, ss),
                    at,
                    "woke early"
                );
                quiet.on_sent(at, MDS);
                asked.on_sent(at, MDS);
                now = at;
            }
        }
    }

    #[test]
    fn zero_srtt_or_window_does_not_panic() {
        let mut p = Pacer::new(0);
        let now = Instant::from_millis(5);
        let (ss, ca) = (PacingParams::classic(true), PacingParams::classic(false));
        assert_eq!(p.next_send_time(now, 1200, 0, Duration::ZERO, ss), now);
        let t = p.next_send_time(now, 1200, 0, Duration::from_millis(1), ca);
        assert!(t >= now);
        p.on_sent(t, 1200);
        assert!(p.rate_bps() > 0);
        let mut huge = Pacer::new(u64::MAX);
        let t = huge.next_send_time(now, u64::MAX, u64::MAX, Duration::MAX, ca);
        huge.on_sent(t, u64::MAX);
        let _ = huge.next_send_time(
            Instant::FAR_FUTURE,
            u64::MAX,
            u64::MAX,
            Duration::from_nanos(1),
            PacingParams {
                gain: f64::NAN,
                min_burst_packets: u64::MAX,
            },
        );
        // Time running backwards is ignored rather than panicking.
        p.on_sent(Instant::ZERO, 1200);
        assert!(
            p.next_send_time(Instant::ZERO, 1200, 12_000, Duration::from_millis(10), ca)
                >= Instant::ZERO
        );
    }
}
