//! Random loss on the radio hop: independent (Bernoulli), bursty per
//! packet (Gilbert-Elliott), or bursty in time (fades, [`super::fade`]).
//!
//! Loss is drawn after the transmitter, when a packet has been serialized:
//! a radio frame that is lost still used the air time, so lost packets
//! consume link capacity, and a queue upstream sees the same backlog it
//! would with a clean link. (netem drops before its delay line instead; for
//! a bottleneck that is the radio itself, after is the physical choice.)

use super::fade::{Fade, FadeState};
use crate::Rng;
use brisk_time::Instant;
use rand::Rng as _;
use serde::Deserialize;
use std::time::Duration;

/// How packets are lost.
///
/// In a scenario: `loss = "1%"` (random, also `{ random = "1%" }`) or
/// `loss = { gilbert_elliott = { loss = "2%", burst_packets = 5 } }` or
/// `loss = { fade = { good = "500ms", bad = "20ms" } }`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// Each packet is lost independently with this probability.
    Random {
        /// Loss probability per packet, 0 to 1 (`"1%"` in a scenario).
        probability: f64,
    },
    /// Bursty loss with a mean rate and a mean burst length; see
    /// [`GilbertElliott`].
    GilbertElliott(GilbertElliott),
    /// Bursty loss whose bursts last a time; see [`Fade`].
    Fade(Fade),
}

impl LossModel {
    /// The long-run loss rate (for a fade: for a sender that sends
    /// evenly in time).
    pub fn mean_loss(&self) -> f64 {
        match self {
            LossModel::Random { probability } => *probability,
            LossModel::GilbertElliott(ge) => ge.loss,
            LossModel::Fade(f) => f.mean_loss(),
        }
    }
}

/// The two-state Gilbert-Elliott channel, set by what one can measure: the
/// mean loss rate and the mean length of a loss burst, in packets.
///
/// The channel is a Markov chain stepped once per packet, with a Good state
/// that loses nothing and a Bad state that loses every packet (the simple
/// Gilbert case, so a loss burst is exactly one stay in Bad). With
/// `p = P(Good -> Bad)` and `r = P(Bad -> Good)`:
///
/// - a stay in Bad lasts k packets with probability `(1-r)^(k-1) r`, so the
///   mean burst length is `B = 1/r`, hence `r = 1/B`;
/// - the stationary share of Bad, which is the loss rate, is
///   `L = p / (p + r)`, hence `p = r L / (1 - L) = L / ((1 - L) B)`.
///
/// `p <= 1` requires `L <= B / (B + 1)`; `B >= 1` by definition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Mean loss rate L, within `0..1`.
    pub loss: f64,
    /// Mean burst length B in packets, at least 1.
    pub burst_packets: f64,
}

impl GilbertElliott {
    /// Checks the parameters can be met by a chain.
    pub fn new(loss: f64, burst_packets: f64) -> Result<GilbertElliott, String> {
        if !(0.0..1.0).contains(&loss) {
            return Err(format!(
                "gilbert_elliott loss must be within 0..1, got {loss}"
            ));
        }
        if !burst_packets.is_finite() || burst_packets < 1.0 {
            return Err(format!(
                "gilbert_elliott burst_packets must be at least 1, got {burst_packets}"
            ));
        }
        if loss > burst_packets / (burst_packets + 1.0) {
            return Err(format!(
                "gilbert_elliott loss {loss} is too high for bursts of {burst_packets} packets \
                 (at most B/(B+1) = {:.3})",
                burst_packets / (burst_packets + 1.0)
            ));
        }
        Ok(GilbertElliott {
            loss,
            burst_packets,
        })
    }

    /// P(Good -> Bad) per packet.
    pub fn p_good_to_bad(&self) -> f64 {
        self.loss / ((1.0 - self.loss) * self.burst_packets)
    }

    /// P(Bad -> Good) per packet.
    pub fn p_bad_to_good(&self) -> f64 {
        1.0 / self.burst_packets
    }
}

/// `loss_after_idle = { idle = "5s", packets = 3 }`: once the link has been
/// idle for at least `idle`, the next `packets` packets are lost. Teclo
/// (seed 004) saw one operator's radio network lose some or all of the
/// first packets after a quiet period, most likely while the 3G radio moved
/// from its low-power to its high-power state. Idle time is measured from
/// the end of one transmission to the start of the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleLoss {
    /// Shortest quiet time (end of one transmission to start of the next) that triggers the losses.
    #[serde(with = "crate::units::duration")]
    pub idle: Duration,
    /// How many packets after such a quiet time are lost; 0 loses none.
    pub packets: u32,
}

/// Why the link lost a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossCause {
    /// Independent random loss.
    Random,
    /// A Gilbert-Elliott loss burst.
    Burst,
    /// A fade: the channel was in its Bad state, for a time.
    Fade,
    /// The packet left the transmitter during an outage with
    /// `outage_drops = true`.
    Outage,
    /// One of the first packets after an idle period (`loss_after_idle`).
    AfterIdle,
}

/// A loss model with its running state.
#[derive(Debug, Clone)]
pub(crate) struct LossState {
    model: LossModel,
    /// Gilbert-Elliott: in the Bad state. The chain starts Good.
    bad: bool,
    /// Fade: the time-based chain.
    fade: Option<FadeState>,
}

impl LossState {
    pub(crate) fn new(model: LossModel) -> LossState {
        let fade = match model {
            LossModel::Fade(f) => Some(FadeState::new(f)),
            _ => None,
        };
        LossState {
            model,
            bad: false,
            fade,
        }
    }

    /// Steps the model for one packet leaving at `now`; `Some` if the
    /// packet is lost.
    pub(crate) fn draw(&mut self, now: Instant, rng: &mut Rng) -> Option<LossCause> {
        if let Some(f) = self.fade.as_mut() {
            return f.in_fade(now, rng).then_some(LossCause::Fade);
        }
        match self.model {
            LossModel::Random { probability } => (probability > 0.0
                && rng.random::<f64>() < probability)
                .then_some(LossCause::Random),
            LossModel::GilbertElliott(ge) => {
                let flip = if self.bad {
                    ge.p_bad_to_good()
                } else {
                    ge.p_good_to_bad()
                };
                if rng.random::<f64>() < flip {
                    self.bad = !self.bad;
                }
                self.bad.then_some(LossCause::Burst)
            }
            LossModel::Fade(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_probabilities_follow_the_derivation() {
        let ge = GilbertElliott::new(0.02, 5.0).unwrap();
        assert!((ge.p_bad_to_good() - 0.2).abs() < 1e-12);
        // p = 0.02 / (0.98 * 5)
        assert!((ge.p_good_to_bad() - 0.02 / 4.9).abs() < 1e-12);
        let (p, r) = (ge.p_good_to_bad(), ge.p_bad_to_good());
        assert!((p / (p + r) - 0.02).abs() < 1e-12);
        assert!(GilbertElliott::new(0.6, 1.0).is_err());
        assert!(GilbertElliott::new(0.5, 1.0).is_ok());
        assert!(GilbertElliott::new(0.1, 0.5).is_err());
        assert!(GilbertElliott::new(1.0, 5.0).is_err());
    }

    #[test]
    fn zero_loss_never_draws_a_loss() {
        let mut s = LossState::new(LossModel::Random { probability: 0.0 });
        let mut rng = crate::rng(1, 0);
        assert!((0..1000).all(|_| s.draw(Instant::ZERO, &mut rng).is_none()));
        let mut g = LossState::new(LossModel::GilbertElliott(
            GilbertElliott::new(0.0, 3.0).unwrap(),
        ));
        assert!((0..1000).all(|_| g.draw(Instant::ZERO, &mut rng).is_none()));
    }
}
