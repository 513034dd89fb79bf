//! How much to write now, from the congestion window (H2O's latency
//! optimisation, Kazuho Oku, "Programming TCP for responsiveness").
//!
//! With `TCP_NOTSENT_LOWAT` at 1 the kernel holds almost nothing unsent, and
//! each time the socket turns writable the application writes what the
//! congestion window can put on the wire right away plus two segments:
//!
//! ```text
//! bytes = (max(cwnd - unacked, 0) + 2) * (mss - record_overhead)
//! ```
//!
//! The two extra segments keep a little data unsent so `poll` stays quiet
//! until ACKs open the window (Linux cannot hold the unsent queue at zero;
//! the talk calls it the 1-packet overhead). Anything written later, such as
//! a high-priority response, then waits behind one window instead of a full
//! send buffer: at 250 ms RTT the talk measured a small script behind a
//! large page falling from 511 ms to 250 ms (2 RTT to 1 RTT).
//!
//! The optimisation costs a wake-up per window, so it only runs where it
//! pays: RTT at least `min_rtt`, window below `max_cwnd_bytes`, and the
//! application's own loop delay below `max_additional_delay` of the RTT.
//! Otherwise the caller writes normally (a large write).

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::tcp_info::TcpInfo;

/// TLS 1.2 AES-GCM record overhead H2O subtracts: 5 header + 8 explicit
/// nonce + 16 tag bytes.
pub const TLS12_AES_GCM_OVERHEAD: u32 = 5 + 8 + 16;

/// The three tunables, named after H2O's `http2-latency-optimization-*`
/// directives, plus the framing overhead per segment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WriteSizingConfig {
    /// Optimise only when the smoothed RTT is at least this. H2O 2.1 ships
    /// 50 ms; the talk's first release shipped `UINT_MAX` ms (off).
    /// Written as `min_rtt_ms` in JSON and TOML.
    #[serde(rename = "min_rtt_ms", with = "millis")]
    pub min_rtt: Duration,
    /// Optimise only while `cwnd * mss` is below this many bytes (65535).
    pub max_cwnd_bytes: u64,
    /// Give up when the application's loop delay exceeds this fraction of
    /// the RTT (0.1): waking the application per window must stay cheap.
    pub max_additional_delay: f64,
    /// Bytes of framing per segment (a TLS record header and tag); 0 for
    /// plain TCP.
    pub record_overhead_bytes: u32,
}

impl Default for WriteSizingConfig {
    /// H2O's documented defaults: 50 ms, 65535 bytes, 0.1; no framing.
    fn default() -> Self {
        WriteSizingConfig {
            min_rtt: Duration::from_millis(50),
            max_cwnd_bytes: 65_535,
            max_additional_delay: 0.1,
            record_overhead_bytes: 0,
        }
    }
}

/// The congestion state the decision needs, from [`TcpInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CwndSample {
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// Sending MSS, bytes.
    pub snd_mss_bytes: u32,
    /// Congestion window, segments.
    pub snd_cwnd_pkts: u32,
    /// Segments in flight (sent, not yet acknowledged).
    pub unacked_pkts: u32,
}

impl From<&TcpInfo> for CwndSample {
    fn from(info: &TcpInfo) -> Self {
        CwndSample {
            rtt_us: info.rtt_us,
            snd_mss_bytes: info.snd_mss_bytes,
            snd_cwnd_pkts: info.snd_cwnd_pkts,
            unacked_pkts: info.unacked_pkts,
        }
    }
}

/// What to write when the socket turns writable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum WriteSize {
    /// Latency-optimised: write at most `bytes`, as `packets` segments of
    /// `payload_per_packet`, with `TCP_NOTSENT_LOWAT` at 1.
    Sized {
        /// Most bytes to write now.
        bytes: u64,
        /// Segments those bytes fill.
        packets: u32,
        /// Payload bytes per segment.
        payload_per_packet: u32,
    },
    /// Not worth it (or not possible) here: write normally.
    Unlimited {
        /// Why sizing is off for this write.
        reason: Unoptimized,
    },
}

/// Why the optimisation is off for this write.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unoptimized {
    /// RTT below `min_rtt`: the queue behind the window drains quickly.
    RttBelowMin,
    /// Waking the application costs more than `max_additional_delay`.
    LoopTooSlow,
    /// The window is large (`cwnd * mss >= max_cwnd_bytes`): past slow start
    /// the kernel's own batching is worth more than precise sizing.
    CwndAboveMax,
    /// No MSS yet, or the framing overhead leaves no payload.
    NoPayloadRoom,
}

impl WriteSize {
    /// Bytes to write now; `fallback_bytes` when not optimising.
    pub fn budget_bytes(&self, fallback_bytes: usize) -> usize {
        match *self {
            WriteSize::Sized { bytes, .. } => usize::try_from(bytes).unwrap_or(usize::MAX),
            WriteSize::Unlimited { .. } => fallback_bytes,
        }
    }

    /// Whether this is the latency-optimised [`WriteSize::Sized`].
    pub fn is_sized(&self) -> bool {
        matches!(self, WriteSize::Sized { .. })
    }
}

impl WriteSizingConfig {
    /// The write size for one writable event. `loop_time` is how long the
    /// application took to react to the previous one: the extra delay this
    /// mode adds between an ACK arriving and new data following it.
    pub fn decide(&self, sample: CwndSample, loop_time: Duration) -> WriteSize {
        let rtt = Duration::from_micros(u64::from(sample.rtt_us));
        if rtt < self.min_rtt {
            return unlimited(Unoptimized::RttBelowMin);
        }
        if loop_time.as_secs_f64() > rtt.as_secs_f64() * self.max_additional_delay {
            return unlimited(Unoptimized::LoopTooSlow);
        }
        let cwnd_bytes = u64::from(sample.snd_cwnd_pkts) * u64::from(sample.snd_mss_bytes);
        if cwnd_bytes >= self.max_cwnd_bytes {
            return unlimited(Unoptimized::CwndAboveMax);
        }
        let payload = sample
            .snd_mss_bytes
            .saturating_sub(self.record_overhead_bytes);
        if payload == 0 {
            return unlimited(Unoptimized::NoPayloadRoom);
        }
        let packets = sample
            .snd_cwnd_pkts
            .saturating_sub(sample.unacked_pkts)
            .saturating_add(2);
        WriteSize::Sized {
            bytes: u64::from(packets) * u64::from(payload),
            packets,
            payload_per_packet: payload,
        }
    }
}

fn unlimited(reason: Unoptimized) -> WriteSize {
    WriteSize::Unlimited { reason }
}

/// A `Duration` as (fractional) milliseconds in serialized configs.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Duration::try_from_secs_f64(ms / 1e3).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rtt_ms: u32, mss: u32, cwnd: u32, unacked: u32) -> CwndSample {
        CwndSample {
            rtt_us: rtt_ms * 1000,
            snd_mss_bytes: mss,
            snd_cwnd_pkts: cwnd,
            unacked_pkts: unacked,
        }
    }

    #[test]
    fn config_round_trips_through_json_in_milliseconds() {
        let c = WriteSizingConfig::default();
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["min_rtt_ms"], 50.0);
        let back: WriteSizingConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
        let bad = serde_json::json!({"min_rtt_ms": -1.0, "max_cwnd_bytes": 1,
            "max_additional_delay": 0.1, "record_overhead_bytes": 0});
        assert!(serde_json::from_value::<WriteSizingConfig>(bad).is_err());
    }

    #[test]
    fn defaults_are_h2o_documented_values() {
        let c = WriteSizingConfig::default();
        assert_eq!(c.min_rtt, Duration::from_millis(50));
        assert_eq!(c.max_cwnd_bytes, 65_535);
        assert_eq!(c.max_additional_delay, 0.1);
    }

    #[test]
    fn initial_window_at_250ms_rtt() {
        // The talk's set-up: 250 ms RTT, a fresh connection with Linux's
        // initial window of 10 segments of 1448 bytes, nothing in flight.
        let d = WriteSizingConfig::default().decide(sample(250, 1448, 10, 0), Duration::ZERO);
        assert_eq!(
            d,
            WriteSize::Sized {
                bytes: 12 * 1448,
                packets: 12,
                payload_per_packet: 1448
            }
        );
        assert_eq!(d.budget_bytes(1 << 20), 17_376);
    }

    #[test]
    fn h2o_unit_test_numbers_with_tls_overhead() {
        // H2O's own test case: RTT 50 ms, MSS 1400, cwnd 10, 5 unacked,
        // min-rtt 25 ms, TLS AES-GCM records: 7 segments of 1371 bytes.
        let config = WriteSizingConfig {
            min_rtt: Duration::from_millis(25),
            record_overhead_bytes: TLS12_AES_GCM_OVERHEAD,
            ..WriteSizingConfig::default()
        };
        let d = config.decide(sample(50, 1400, 10, 5), Duration::from_millis(4));
        assert_eq!(
            d,
            WriteSize::Sized {
                bytes: 7 * 1371,
                packets: 7,
                payload_per_packet: 1371
            }
        );
    }

    #[test]
    fn min_rtt_boundary() {
        let c = WriteSizingConfig::default();
        assert!(c.decide(sample(50, 1448, 10, 0), Duration::ZERO).is_sized());
        let just_below = CwndSample {
            rtt_us: 49_999,
            ..sample(50, 1448, 10, 0)
        };
        assert_eq!(
            c.decide(just_below, Duration::ZERO),
            WriteSize::Unlimited {
                reason: Unoptimized::RttBelowMin
            }
        );
    }

    #[test]
    fn max_cwnd_boundary_in_bytes() {
        let c = WriteSizingConfig::default();
        // 45 * 1448 = 65160 < 65535: optimised; 46 * 1448 = 66608: not.
        assert!(
            c.decide(sample(100, 1448, 45, 0), Duration::ZERO)
                .is_sized()
        );
        assert_eq!(
            c.decide(sample(100, 1448, 46, 0), Duration::ZERO),
            WriteSize::Unlimited {
                reason: Unoptimized::CwndAboveMax
            }
        );
    }

    #[test]
    fn additional_delay_limit_is_a_fraction_of_rtt() {
        let c = WriteSizingConfig::default();
        let s = sample(250, 1448, 10, 0);
        // 10% of 250 ms is 25 ms: equal is allowed, more is not.
        assert!(c.decide(s, Duration::from_millis(25)).is_sized());
        assert_eq!(
            c.decide(s, Duration::from_millis(26)),
            WriteSize::Unlimited {
                reason: Unoptimized::LoopTooSlow
            }
        );
    }

    #[test]
    fn more_unacked_than_cwnd_still_allows_two_segments() {
        // After a window reduction unacked can exceed cwnd.
        let d = WriteSizingConfig::default().decide(sample(300, 1000, 4, 9), Duration::ZERO);
        assert_eq!(d.budget_bytes(0), 2000);
    }

    #[test]
    fn no_mss_or_overhead_larger_than_mss_falls_back() {
        let c = WriteSizingConfig {
            record_overhead_bytes: 2000,
            ..WriteSizingConfig::default()
        };
        let d = c.decide(sample(300, 1448, 10, 0), Duration::ZERO);
        assert_eq!(d.budget_bytes(65_536), 65_536);
        let d = WriteSizingConfig::default().decide(sample(300, 0, 10, 0), Duration::ZERO);
        assert_eq!(
            d,
            WriteSize::Unlimited {
                reason: Unoptimized::NoPayloadRoom
            }
        );
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let s = CwndSample {
            rtt_us: u32::MAX,
            snd_mss_bytes: u32::MAX,
            snd_cwnd_pkts: u32::MAX,
            unacked_pkts: 0,
        };
        let c = WriteSizingConfig {
            max_cwnd_bytes: u64::MAX,
            ..WriteSizingConfig::default()
        };
        match c.decide(s, Duration::ZERO) {
            WriteSize::Sized { packets, .. } => assert_eq!(packets, u32::MAX),
            other => panic!("expected sized, got {other:?}"),
        }
    }
}
