//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation),
//! built from what the [`Controller`](super::Controller) trait already sees.
//!
//! The draft snapshots, in every sent packet, how much had been delivered
//! and when. A controller does not own the sent-packet table, so this
//! estimator keeps the snapshots itself, keyed by send time: QUIC never
//! resends a packet number, so send time grows with the packet number and
//! the send time of the newest packet an ACK covers
//! ([`AckSample::largest_acked_sent_at`]) finds its snapshot. Packets sent
//! at the same instant share one snapshot (the first), and snapshots older
//! than an acknowledged packet are dropped, so the queue holds about one
//! window of entries.
//!
//! A sample is the data delivered between that packet's send and its ACK,
//! divided by the longer of the send and the ACK interval, so neither a
//! burst of sends nor a compressed burst of ACKs inflates the rate.
//!
//! App-limited samples: the connection flags the packet that left when the
//! application had nothing more to send. The draft marks every packet sent
//! during such a bubble; seen from the ACKs, the estimator marks samples as
//! app-limited from the ACK of a flagged packet until what was then in
//! flight has been delivered, so the samples of a quiet period do not pass
//! for the path's capacity.

use std::collections::VecDeque;
use std::time::Duration;

use brisk_time::Instant;

use super::AckSample;

/// The most snapshots kept: about 2 s of a 1 Gbit/s flow of 1200-byte
/// datagrams in flight. A longer queue means ACKs stopped arriving; the
/// oldest snapshots go first, costing at most a missed sample.
const MAX_SNAPSHOTS: usize = 1 << 16;

/// The delivery state when a packet left (the draft's per-packet fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Snapshot {
    sent_at: Instant,
    /// Bytes delivered before the packet left.
    delivered_bytes: u64,
    /// When `delivered_bytes` last grew.
    delivered_at: Instant,
    /// Send time of the packet whose ACK last advanced `delivered_bytes`:
    /// the start of this packet's send interval.
    first_sent_at: Instant,
}

/// One delivery-rate sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RateSample {
    /// Bytes delivered over `interval`.
    pub delivered_bytes: u64,
    pub interval: Duration,
    /// Bytes delivered before the sampled packet left: a round trip ends
    /// when this reaches the total delivered at the round's start.
    pub prior_delivered_bytes: u64,
    /// The sampled packet left while the application had nothing more to
    /// send, so the rate may be below what the path can carry.
    pub app_limited: bool,
}

impl RateSample {
    /// The sample in bytes per second.
    pub(super) fn rate_bytes_per_sec(&self) -> f64 {
        let secs = self.interval.as_secs_f64();
        if secs > 0.0 {
            self.delivered_bytes as f64 / secs
        } else {
            0.0
        }
    }
}

/// The estimator's state for one path.
#[derive(Clone, Debug, Default)]
pub(super) struct DeliveryRate {
    /// Bytes acknowledged so far.
    delivered_bytes: u64,
    delivered_at: Option<Instant>,
    first_sent_at: Option<Instant>,
    snapshots: VecDeque<Snapshot>,
    /// Samples are app-limited until `delivered_bytes` passes this.
    app_limited_until: u64,
}

impl DeliveryRate {
    /// Total bytes acknowledged.
    pub(super) fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// A packet of `bytes` left at `now`; `bytes_in_flight` includes it.
    pub(super) fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        // Nothing else in flight: the intervals restart here, so idle time
        // is not counted as time spent delivering.
        if bytes_in_flight <= bytes || self.delivered_at.is_none() {
            self.delivered_at = Some(now);
            self.first_sent_at = Some(now);
        }
        if self.snapshots.back().is_some_and(|s| s.sent_at >= now) {
            return;
        }
        if self.snapshots.len() >= MAX_SNAPSHOTS {
            self.snapshots.pop_front();
        }
        self.snapshots.push_back(Snapshot {
            sent_at: now,
            delivered_bytes: self.delivered_bytes,
            delivered_at: self.delivered_at.unwrap_or(now),
            first_sent_at: self.first_sent_at.unwrap_or(now),
        });
    }

    /// Counts the bytes `ack` delivered and samples the rate, or returns
    /// `None` when the acknowledged packet's snapshot is gone (an ACK that
    /// only fills an old hole) or the interval is too short to trust: below
    /// `min_rtt`, which only ACK compression produces.
    pub(super) fn on_ack(&mut self, ack: &AckSample) -> Option<RateSample> {
        self.delivered_bytes = self.delivered_bytes.saturating_add(ack.acked_bytes);
        self.delivered_at = Some(ack.now);
        if ack.app_limited {
            self.app_limited_until = self.delivered_bytes.saturating_add(ack.bytes_in_flight);
        }
        let sent_at = ack.largest_acked_sent_at;
        while self.snapshots.front().is_some_and(|s| s.sent_at < sent_at) {
            self.snapshots.pop_front();
        }
        let snap = *self.snapshots.front().filter(|s| s.sent_at == sent_at)?;
        self.first_sent_at = Some(snap.sent_at);
        let send_elapsed = snap.sent_at - snap.first_sent_at;
        let ack_elapsed = ack.now - snap.delivered_at;
        let interval = send_elapsed.max(ack_elapsed);
        if interval.is_zero() || interval < ack.min_rtt {
            return None;
        }
        Some(RateSample {
            delivered_bytes: self.delivered_bytes - snap.delivered_bytes,
            interval,
            prior_delivered_bytes: snap.delivered_bytes,
            app_limited: ack.app_limited || self.delivered_bytes < self.app_limited_until,
        })
    }

    /// Bytes delivered before the packet sent at `sent_at` left, if its
    /// snapshot is still kept. Used for round counting when the rate sample
    /// itself was rejected.
    pub(super) fn prior_delivered(&self, sent_at: Instant) -> Option<u64> {
        self.snapshots
            .front()
            .filter(|s| s.sent_at == sent_at)
            .map(|s| s.delivered_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{MDS, ack};

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    /// Ten packets paced 10 ms apart over a 100 ms path, each ACKed alone:
    /// once the pipe is full every sample is one packet per 10 ms.
    #[test]
    fn paced_flow_measures_its_sending_rate() {
        let mut d = DeliveryRate::default();
        let mut samples = Vec::new();
        for i in 0..30u64 {
            let now = ms(i * 10);
            // ACKs for packets sent 100 ms ago arrive before this send.
            if i >= 10 {
                let a = ack(now, ms((i - 10) * 10), MDS, 0);
                samples.push(d.on_ack(&a));
            }
            d.on_sent(now, MDS, MDS * 10);
        }
        // The first sample spans the whole first round trip.
        let first = samples[0].unwrap();
        assert_eq!(first.delivered_bytes, MDS);
        assert_eq!(first.interval, Duration::from_millis(100));
        let last = samples.last().unwrap().unwrap();
        let rate = last.rate_bytes_per_sec();
        assert!((rate - MDS as f64 * 100.0).abs() < 1.0, "{rate}");
        assert_eq!(d.delivered_bytes(), 20 * MDS);
        assert_eq!(last.prior_delivered_bytes, 10 * MDS);
    }

    /// A burst of sends and a burst of ACKs: the longer interval wins, so a
    /// compressed ACK train does not report a rate above what was sent.
    #[test]
    fn ack_compression_does_not_inflate_the_rate() {
        let mut d = DeliveryRate::default();
        for i in 0..10u64 {
            d.on_sent(ms(i * 10), MDS, MDS * (i + 1));
        }
        // All ten ACKs arrive within 1 ms, 100 ms after the first send.
        let mut last = None;
        for i in 0..10u64 {
            let a = ack(ms(190) + Duration::from_micros(i * 100), ms(i * 10), MDS, 0);
            last = d.on_ack(&AckSample {
                min_rtt: Duration::from_millis(100),
                ..a
            });
        }
        let s = last.unwrap();
        // Sent over 90 ms, so 10 packets in at least 90 ms.
        assert!(s.interval >= Duration::from_millis(90), "{s:?}");
        assert!(s.rate_bytes_per_sec() <= MDS as f64 * 10.0 / 0.09 + 1.0);
    }

    #[test]
    fn acks_of_forgotten_packets_give_no_sample_but_count_bytes() {
        let mut d = DeliveryRate::default();
        d.on_sent(ms(0), MDS, MDS);
        d.on_sent(ms(10), MDS, 2 * MDS);
        assert!(d.on_ack(&ack(ms(110), ms(10), MDS, 0)).is_some());
        // The hole at 0 ms fills later: its snapshot is gone.
        assert_eq!(d.on_ack(&ack(ms(120), ms(0), MDS, 0)), None);
        assert_eq!(d.delivered_bytes(), 2 * MDS);
        assert_eq!(d.prior_delivered(ms(0)), None);
    }

    /// After the ACK of a packet flagged app-limited, the samples of what
    /// was then in flight are app-limited too; later ones are not.
    #[test]
    fn an_app_limited_ack_marks_the_flight_behind_it() {
        let mut d = DeliveryRate::default();
        for i in 0..20u64 {
            d.on_sent(ms(i * 10), MDS, MDS * (i + 1));
        }
        let acked = |d: &mut DeliveryRate, i: u64, app_limited: bool| {
            let a = ack(ms(i * 10 + 100), ms(i * 10), MDS, 0);
            d.on_ack(&AckSample {
                app_limited,
                bytes_in_flight: (19 - i) * MDS,
                ..a
            })
            .unwrap()
            .app_limited
        };
        assert!(!acked(&mut d, 0, false));
        assert!(acked(&mut d, 1, true));
        // 18 packets were in flight: delivered must pass 2 + 18 packets.
        for i in 2..19 {
            assert!(acked(&mut d, i, false), "packet {i}");
        }
        assert!(!acked(&mut d, 19, false));
    }

    #[test]
    fn snapshots_stay_bounded_without_acks() {
        let mut d = DeliveryRate::default();
        for i in 0..(MAX_SNAPSHOTS as u64 + 10) {
            d.on_sent(Instant::from_nanos(i), 1, i + 1);
        }
        assert_eq!(d.snapshots.len(), MAX_SNAPSHOTS);
        // Same-instant sends share one snapshot.
        d.on_sent(Instant::from_nanos(1), 1, 1);
        assert_eq!(d.snapshots.len(), MAX_SNAPSHOTS);
    }
}
