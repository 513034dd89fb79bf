//! Congestion control: how much may be in flight.
//!
//! A controller is a pure state machine behind the [`Controller`] trait. The
//! connection tells it about every packet sent ([`Controller::on_sent`]),
//! every ACK ([`AckSample`], which carries the increase in the peer's ECN
//! counts so a CE mark is a congestion signal) and every loss
//! ([`LossSample`]); it reads back the window, the ECN codepoint to send and
//! metrics for qlog. [`CcAlgorithm::build`] is the factory.
//!
//! Files: [`newreno`] (RFC 9002 §7), [`cubic`] (RFC 9438), both able to
//! leave their first slow start by [`hystart`] (HyStart++, RFC 9406, opt-in), [`prague`]
//! (draft-briscoe-iccrg-prague-congestion-control, the L4S scalable
//! controller), [`bbr`] (BBRv1, model-based: paces at the measured
//! bottleneck bandwidth and tolerates random loss) with its
//! [`delivery_rate`] estimator. All four share `Recovery`, the "one
//! reduction per round trip" rule (BBR uses it to bound its recovery
//! episodes).

mod bbr;
mod cubic;
mod delivery_rate;
mod hystart;
mod newreno;
mod prague;
mod prague_cap;
#[cfg(test)]
mod test_path;

pub(crate) use bbr::Bbr;
pub(crate) use cubic::Cubic;
pub(crate) use newreno::NewReno;
pub(crate) use prague::Prague;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::pacing::PacingParams;
use brisk_time::Instant;
use brisk_wire::Ecn;
use serde::{Deserialize, Serialize};

/// Packet counts per ECN codepoint, as in an ACK frame's ECN section
/// (RFC 9000 §19.3.2). Used both for the peer's reports and for what we sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// Packets with ECT(0).
    pub ect0: u64,
    /// Packets with ECT(1).
    pub ect1: u64,
    /// Packets with CE (congestion experienced).
    pub ce: u64,
}

impl EcnCounts {
    /// Counts one packet carrying `ecn`; Not-ECT is not counted.
    pub fn add(&mut self, ecn: Ecn, packets: u64) {
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ect0 = self.ect0.saturating_add(packets),
            Ecn::Ect1 => self.ect1 = self.ect1.saturating_add(packets),
            Ecn::Ce => self.ce = self.ce.saturating_add(packets),
        }
    }

    /// The count for one codepoint (zero for Not-ECT).
    pub fn get(&self, ecn: Ecn) -> u64 {
        match ecn {
            Ecn::NotEct => 0,
            Ecn::Ect0 => self.ect0,
            Ecn::Ect1 => self.ect1,
            Ecn::Ce => self.ce,
        }
    }

    /// All ECN-capable packets: ECT(0) + ECT(1) + CE.
    pub fn total(&self) -> u64 {
        self.ect0.saturating_add(self.ect1).saturating_add(self.ce)
    }

    /// `self - earlier` per codepoint, or `None` if any count went down
    /// (which a correct peer never reports: RFC 9000 §13.4.2.1).
    pub fn checked_sub(&self, earlier: &EcnCounts) -> Option<EcnCounts> {
        Some(EcnCounts {
            ect0: self.ect0.checked_sub(earlier.ect0)?,
            ect1: self.ect1.checked_sub(earlier.ect1)?,
            ce: self.ce.checked_sub(earlier.ce)?,
        })
    }

    /// Per-codepoint saturating sum.
    pub fn saturating_add(&self, other: &EcnCounts) -> EcnCounts {
        EcnCounts {
            ect0: self.ect0.saturating_add(other.ect0),
            ect1: self.ect1.saturating_add(other.ect1),
            ce: self.ce.saturating_add(other.ce),
        }
    }
}

/// What one ACK frame did, as far as congestion control cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AckSample {
    pub now: Instant,
    /// Bytes of in-flight packets this ACK newly acknowledged.
    pub acked_bytes: u64,
    pub acked_packets: u64,
    pub latest_rtt: Duration,
    /// True when this ACK produced `latest_rtt` (it newly acknowledged its
    /// largest packet number, an ack-eliciting one); otherwise
    /// `latest_rtt` is an earlier ACK's.
    pub rtt_sampled: bool,
    /// The ACK delay the peer reported with `latest_rtt` (limited to its
    /// `max_ack_delay`): part of `latest_rtt` that was not path delay.
    pub latest_ack_delay: Duration,
    pub smoothed_rtt: Duration,
    pub min_rtt: Duration,
    /// Increase of the peer's reported counts carried by this ACK.
    pub ecn_delta: EcnCounts,
    /// Send time of the newest packet this ACK acknowledges.
    pub largest_acked_sent_at: Instant,
    /// Bytes in flight after removing the acknowledged packets.
    pub bytes_in_flight: u64,
    /// True when the sender had less to send than the window allowed, so the
    /// ACK says nothing about whether a larger window would fit the path
    /// (RFC 9002 §7.8: the window must not grow then).
    pub app_limited: bool,
}

impl AckSample {
    /// This ACK's RTT sample less the peer's ACK delay where the minimum
    /// RTT allows (RFC 9002 §5.3), or `None` when it produced no sample.
    pub(crate) fn rtt_sample(&self) -> Option<Duration> {
        self.rtt_sampled.then(|| {
            if self.latest_rtt >= self.min_rtt.saturating_add(self.latest_ack_delay) {
                self.latest_rtt - self.latest_ack_delay
            } else {
                self.latest_rtt
            }
        })
    }
}

/// Packets one loss-detection pass declared lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LossSample {
    pub now: Instant,
    pub lost_bytes: u64,
    pub lost_packets: u64,
    /// Send time of the newest lost packet: decides whether this loss starts
    /// a new recovery period or belongs to the current one.
    pub largest_lost_sent_at: Instant,
    /// RFC 9002 §7.6: every packet over a long enough span was lost.
    pub persistent_congestion: bool,
    /// Bytes in flight after removing the lost packets.
    pub bytes_in_flight: u64,
}

/// What a controller reports for qlog and statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcMetrics {
    /// The congestion window in bytes.
    pub cwnd_bytes: u64,
    /// `None` while the slow-start threshold is still unset (infinite).
    pub ssthresh_bytes: Option<u64>,
    /// One algorithm-specific value with its qlog name: Prague's `alpha`,
    /// CUBIC's `w_max_bytes`; NewReno has none.
    pub extra: Option<(&'static str, f64)>,
}

/// What the pacer spreads: a rate the controller computed, in bytes per
/// second, or a window over the RTT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PaceBy {
    Rate(f64),
    Window(u64),
}

/// What a sender reads from its controller before each datagram, in one
/// call ([`Controller::send_view`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SendView {
    /// [`Controller::datagram_size`] of the path's full size.
    pub datagram_size: Option<u64>,
    /// [`Controller::window`].
    pub window: u64,
    /// What the pacer spreads, and its parameters
    /// ([`Controller::pacing`]).
    pub pace_by: PaceBy,
    pub pacing: PacingParams,
}

/// A congestion controller.
///
/// Call order per ACK frame, following RFC 9002 §A.7: first
/// [`on_loss`](Controller::on_loss) for the packets this ACK caused to be
/// declared lost, then [`on_ack`](Controller::on_ack) for the packets it
/// acknowledged. Both may be skipped when empty.
pub(crate) trait Controller: Send + fmt::Debug {
    /// The algorithm's name, so tests can check what the factory built.
    #[cfg(test)]
    fn name(&self) -> &'static str;
    /// A packet of `bytes` left at `now`; `bytes_in_flight` includes it.
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64);
    fn on_ack(&mut self, ack: &AckSample);
    fn on_loss(&mut self, loss: &LossSample);
    /// The congestion window in bytes; never below the minimum window.
    fn window(&self) -> u64;
    /// The window the pacer should spread over one smoothed RTT, and what
    /// the connection reports as the controller's sending window before
    /// the pacer's headroom. Equal to [`window`](Controller::window) except
    /// for controllers that keep a fractional window below the minimum
    /// (Prague on low-BDP paths) or pace at a rate of their own (BBR).
    fn pacing_window(&self) -> u64 {
        self.window()
    }
    /// Bytes per second to pace at, for a controller that models the
    /// path's rate itself (BBR): the pacer then takes that rate as it is,
    /// without the gain of [`pacing`](Controller::pacing), instead of
    /// spreading [`pacing_window`](Controller::pacing_window). `None`, the
    /// default, paces the window.
    fn pacing_rate(&self) -> Option<f64> {
        None
    }
    /// The pacer's gain on `pacing_window / srtt` and its smallest burst.
    /// The default is RFC 9002's: gain 2 in slow start, 1.25 after, bursts
    /// of two datagrams; Prague asks for exactly its window per RTT and
    /// single-datagram bursts.
    fn pacing(&self) -> PacingParams {
        PacingParams::classic(self.in_slow_start())
    }
    /// What a sender asks before each datagram, in one call, with `full`
    /// the path's datagram size: the datagram size, the window, and what
    /// the pacer spreads ([`pacing_rate`](Controller::pacing_rate) if the
    /// controller has one, else [`pacing_window`](Controller::pacing_window)).
    fn send_view(&self, full: u64) -> SendView {
        let pace_by = match self.pacing_rate() {
            Some(rate) => PaceBy::Rate(rate),
            None => PaceBy::Window(self.pacing_window()),
        };
        SendView {
            datagram_size: self.datagram_size(full),
            window: self.window(),
            pace_by,
            pacing: self.pacing(),
        }
    }
    /// The largest datagram, in bytes, this controller wants sent now, if
    /// smaller than the path's `full` size (Prague at a few Mbit/s: see
    /// docs/PROTOCOL.md); `None`, the default, leaves datagrams full.
    /// Application datagrams waiting to be sent keep their size.
    fn datagram_size(&self, _full: u64) -> Option<u64> {
        None
    }
    /// The codepoint this controller wants on its packets: ECT(1) for a
    /// scalable (L4S) controller, ECT(0) for a classic one.
    fn ecn(&self) -> Ecn;
    /// ECN validation settled on `ecn` for this path (it may differ from
    /// [`ecn`](Controller::ecn) after a fallback). A scalable controller whose
    /// ECT(1) did not survive now meets classic marking, or none, and must
    /// answer a CE mark as it would a loss. Classic controllers ignore it.
    fn set_path_ecn(&mut self, _ecn: Ecn) {}
    fn in_slow_start(&self) -> bool;
    /// Whether the sender may ask for fewer ACKs than every second packet
    /// while the window is large (`ack_frequency`). A controller whose
    /// model needs each ACK's delivery sample says no.
    fn tolerates_sparse_acks(&self) -> bool {
        true
    }
    fn metrics(&self) -> CcMetrics;
}

/// Window sizes shared by all controllers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CcConfig {
    /// The datagram size the window arithmetic counts in, in bytes.
    pub max_datagram_size: u64,
    /// The window before any ACK, in datagrams.
    pub initial_window_packets: u64,
    /// The window never shrinks below this, in datagrams.
    pub minimum_window_packets: u64,
    /// NewReno and CUBIC leave their first slow start when the RTT shows
    /// a queue building (HyStart++, RFC 9406) instead of when a buffer
    /// overflows. Off by default for now: it moves Prague's share beside
    /// CUBIC in a 4 Mbit/s DualPI2 (docs/PROTOCOL.md).
    pub hystart: bool,
    /// Prague on a path that has marked CE and delivered at most about
    /// 3 Mbit/s sends smaller datagrams (4 ms of the largest delivery rate
    /// the connection measured, at least 300 bytes) and, alone, grows by
    /// 0.5 ms of that rate per RTT instead of half a datagram (whole
    /// datagrams again from 6 Mbit/s), so a 1 or 2 Mbit/s link stays busy
    /// with a queue within the step. On by default (docs/PROTOCOL.md).
    pub prague_small_datagrams: bool,
    /// Prague stops growing its window at the path's pipe (the largest
    /// delivery rate of the last 10 round trips that showed a queue, times
    /// the minimum RTT plus 0.5 ms) plus one datagram, while few rounds
    /// carry a CE mark, the link does not send in bursts and, below a
    /// 100 ms minimum RTT, a queue was seen lately, so alone its queue
    /// stays under the step instead of taking a whole round trip's increase
    /// before the first mark returns. On by default (docs/PROTOCOL.md).
    pub prague_pipe_cap: bool,
    /// BBR's Startup keeps two BDPs of the delivery rate in flight
    /// (BBRv3's window gain) instead of 2/ln 2 BDPs, ends on a round that
    /// lost well above the random loss share, and learns that share as a
    /// plain mean of its first rounds, so a FIFO of about one BDP does not
    /// overflow. Off by default: it moves an application-limited stream's
    /// first seconds and BBR's share beside Prague (docs/PROTOCOL.md).
    pub bbr_bounded_startup: bool,
    /// Prague on an aggregating link (Wi-Fi-like bursts, where every round
    /// trip's RTT samples spread over the burst interval) does not cut its
    /// window for a CE mark below what the path delivers per minimum RTT,
    /// so a standing queue in the radio's driver, below the AQM, read as a
    /// classic AQM's queue does not leave the link idle. On by default;
    /// elsewhere it changes nothing (docs/PROTOCOL.md).
    pub prague_burst_floor: bool,
}

impl Default for CcConfig {
    /// RFC 9002 §7.2: 1200-byte datagrams, ten packets initially, two at
    /// least; HyStart++ and BBR's bounded Startup off; Prague's smaller
    /// datagrams at low rates, its cut floor on aggregating links and its
    /// pipe cap on.
    fn default() -> Self {
        Self {
            max_datagram_size: 1200,
            initial_window_packets: 10,
            minimum_window_packets: 2,
            hystart: false,
            prague_small_datagrams: true,
            prague_pipe_cap: true,
            bbr_bounded_startup: false,
            prague_burst_floor: true,
        }
    }
}

impl CcConfig {
    /// The datagram size used for window arithmetic, never zero.
    pub fn mds(&self) -> u64 {
        self.max_datagram_size.max(1)
    }

    /// The minimum window in bytes (at least one datagram).
    pub(crate) fn minimum_window(&self) -> u64 {
        self.minimum_window_packets
            .max(1)
            .saturating_mul(self.mds())
    }

    /// The initial window in bytes, never below the minimum window.
    pub(crate) fn initial_window(&self) -> u64 {
        self.initial_window_packets
            .saturating_mul(self.mds())
            .max(self.minimum_window())
    }
}

/// The congestion controllers Brisk offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcAlgorithm {
    /// RFC 9002 §7: halves on loss, one datagram more per round trip.
    NewReno,
    /// RFC 9438: the Linux default; grows as a cubic of the time since the last
    /// reduction, so it refills long fat paths quickly.
    Cubic,
    /// The L4S scalable controller: ECT(1), reduces in proportion to the
    /// fraction of CE-marked packets.
    Prague,
    /// BBRv1: paces at the measured bottleneck bandwidth; not ECN-capable.
    Bbr,
}

impl CcAlgorithm {
    /// Every controller, for tests and command-line help.
    pub const ALL: [CcAlgorithm; 4] = [
        CcAlgorithm::NewReno,
        CcAlgorithm::Cubic,
        CcAlgorithm::Prague,
        CcAlgorithm::Bbr,
    ];

    pub(crate) fn build(self, config: &CcConfig) -> Box<dyn Controller> {
        match self {
            CcAlgorithm::NewReno => Box::new(NewReno::new(config)),
            CcAlgorithm::Cubic => Box::new(Cubic::new(config)),
            CcAlgorithm::Prague => Box::new(Prague::new(config)),
            CcAlgorithm::Bbr => Box::new(Bbr::new(config)),
        }
    }

    /// The lowercase name used in configuration files and qlog.
    pub const fn name(self) -> &'static str {
        match self {
            CcAlgorithm::NewReno => "newreno",
            CcAlgorithm::Cubic => "cubic",
            CcAlgorithm::Prague => "prague",
            CcAlgorithm::Bbr => "bbr",
        }
    }
}

impl fmt::Display for CcAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A congestion controller name that is not one of [`CcAlgorithm::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion controller {0:?} (expected newreno, cubic, prague or bbr)")]
pub struct UnknownAlgorithm(pub String);

impl FromStr for CcAlgorithm {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CcAlgorithm::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// The congestion recovery period (RFC 9002 §7.3.2).
///
/// Entering recovery records the time; any loss or CE mark on a packet sent
/// at or before that time belongs to the congestion event already reacted to,
/// so the window is reduced at most once per round trip. Recovery ends when a
/// packet sent after that time is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    start: Option<Instant>,
}

impl Recovery {
    /// True if a packet sent at `sent_at` was sent before the current recovery
    /// period started, i.e. its fate was already accounted for.
    pub(crate) fn covers(&self, sent_at: Instant) -> bool {
        self.start.is_some_and(|start| sent_at <= start)
    }

    pub(crate) fn enter(&mut self, now: Instant) {
        self.start = Some(now);
    }

    /// RFC 9002 §7.6.2: after persistent congestion the next loss is a new
    /// event whatever its send time.
    pub(crate) fn reset(&mut self) {
        self.start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_round_trip_through_fromstr_display_and_serde() {
        for a in CcAlgorithm::ALL {
            assert_eq!(a.to_string().parse::<CcAlgorithm>(), Ok(a));
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{a}\""));
            assert_eq!(serde_json::from_str::<CcAlgorithm>(&json).unwrap(), a);
            let cc = a.build(&CcConfig::default());
            assert_eq!(cc.name(), a.name());
        }
        assert_eq!("PRAGUE".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Prague));
        assert_eq!("BBR".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Bbr));
        assert!("bbr2".parse::<CcAlgorithm>().is_err());
        assert!(serde_json::from_str::<CcAlgorithm>("\"vegas\"").is_err());
    }

    #[test]
    fn config_defaults_follow_rfc9002_and_survive_zero_values() {
        let c = CcConfig::default();
        assert_eq!(c.initial_window(), 12_000);
        assert_eq!(c.minimum_window(), 2_400);
        assert!(!c.hystart);
        assert!(c.prague_burst_floor);
        assert!(c.prague_pipe_cap);
        assert!(c.prague_small_datagrams);
        let odd = CcConfig {
            max_datagram_size: 0,
            initial_window_packets: 0,
            minimum_window_packets: 0,
            hystart: false,
            prague_small_datagrams: false,
            prague_pipe_cap: false,
            bbr_bounded_startup: false,
            prague_burst_floor: false,
        };
        assert_eq!(odd.minimum_window(), 1);
        assert_eq!(odd.initial_window(), 1);
        let partial: CcConfig = serde_json::from_str(r#"{"initial_window_packets": 32}"#).unwrap();
        assert_eq!(partial.initial_window(), 32 * 1200);
        let hystart: CcConfig = serde_json::from_str(r#"{"hystart": true}"#).unwrap();
        assert!(hystart.hystart);
        assert!(serde_json::from_str::<CcConfig>(r#"{"iw": 3}"#).is_err());
    }

    #[test]
    fn controllers_pick_their_codepoint() {
        let c = CcConfig::default();
        assert_eq!(CcAlgorithm::Prague.build(&c).ecn(), Ecn::Ect1);
        assert_eq!(CcAlgorithm::Cubic.build(&c).ecn(), Ecn::Ect0);
        assert_eq!(CcAlgorithm::NewReno.build(&c).ecn(), Ecn::Ect0);
        assert_eq!(CcAlgorithm::Bbr.build(&c).ecn(), Ecn::NotEct);
        for a in CcAlgorithm::ALL {
            let cc = a.build(&c);
            assert_eq!(cc.window(), 12_000);
            assert!(cc.in_slow_start());
            assert_eq!(cc.metrics().ssthresh_bytes, None);
        }
    }

    /// Samples no real path produces (overflowing counts and durations)
    /// leave every controller with a sane window instead of panicking.
    #[test]
    fn absurd_samples_do_not_panic() {
        let huge = EcnCounts {
            ect0: u64::MAX,
            ect1: u64::MAX,
            ce: u64::MAX,
        };
        for mds in [1, 1200, u64::MAX] {
            let config = CcConfig {
                max_datagram_size: mds,
                ..CcConfig::default()
            };
            for a in CcAlgorithm::ALL {
                let mut cc = a.build(&config);
                let mut ack = AckSample {
                    now: Instant::FAR_FUTURE,
                    acked_bytes: u64::MAX,
                    acked_packets: u64::MAX,
                    latest_rtt: Duration::MAX,
                    rtt_sampled: true,
                    latest_ack_delay: Duration::MAX,
                    smoothed_rtt: Duration::MAX,
                    min_rtt: Duration::ZERO,
                    ecn_delta: EcnCounts::default(),
                    largest_acked_sent_at: Instant::FAR_FUTURE,
                    bytes_in_flight: u64::MAX,
                    app_limited: false,
                };
                cc.on_sent(Instant::ZERO, u64::MAX, 0);
                for _ in 0..3 {
                    cc.on_ack(&ack);
                    cc.on_sent(Instant::FAR_FUTURE, u64::MAX, u64::MAX);
                }
                ack.ecn_delta = huge;
                ack.acked_packets = 0;
                cc.on_ack(&ack);
                cc.on_loss(&LossSample {
                    now: Instant::ZERO,
                    lost_bytes: u64::MAX,
                    lost_packets: u64::MAX,
                    largest_lost_sent_at: Instant::FAR_FUTURE,
                    persistent_congestion: true,
                    bytes_in_flight: u64::MAX,
                });
                assert!(cc.window() >= config.minimum_window(), "{a} mds {mds}");
                assert!(cc.pacing_window() > 0);
                let _ = cc.metrics();
            }
        }
    }

    #[test]
    fn ecn_counts_arithmetic() {
        let mut a = EcnCounts::default();
        a.add(Ecn::Ect1, 3);
        a.add(Ecn::Ce, 1);
        a.add(Ecn::NotEct, 9);
        assert_eq!(
            a,
            EcnCounts {
                ect0: 0,
                ect1: 3,
                ce: 1
            }
        );
        assert_eq!(a.total(), 4);
        assert_eq!(a.get(Ecn::Ect1), 3);
        let b = EcnCounts {
            ect0: 0,
            ect1: 5,
            ce: 1,
        };
        assert_eq!(
            b.checked_sub(&a),
            Some(EcnCounts {
                ect0: 0,
                ect1: 2,
                ce: 0
            })
        );
        assert_eq!(a.checked_sub(&b), None);
        assert_eq!(a.saturating_add(&b).ect1, 8);
    }

    #[test]
    fn recovery_covers_packets_sent_up_to_its_start() {
        let mut r = Recovery::default();
        assert!(!r.covers(Instant::ZERO));
        r.enter(Instant::from_millis(10));
        assert!(r.covers(Instant::from_millis(10)));
        assert!(!r.covers(Instant::from_millis(11)));
        r.reset();
        assert!(!r.covers(Instant::from_millis(1)));
    }
}
