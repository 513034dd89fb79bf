//! [`LinkConfig`]: the settings of one link direction and how a scenario
//! spells them.
//!
//! A scenario writes each direction as a table of plain fields with human
//! units; every field may be omitted:
//!
//! ```toml
//! [link.down]
//! rate = "10Mbit"                # or { schedule = [["0s", "10Mbit"], ["5s", "2Mbit"]] }
//!                                # or { mahimahi = "traces/lte.down" }
//! delay = "10ms"
//! jitter = "2ms"                 # uniform +-2ms; or { normal = "2ms" }
//! reorder_on_jitter = false
//! loss = "1%"                    # or { gilbert_elliott = { loss = "2%", burst_packets = 5 } }
//!                                # or { fade = { good = "500ms", bad = "20ms" } }
//! loss_after_idle = { idle = "5s", packets = 3 }
//! reorder = { probability = "1%", depth_packets = 30 }   # or depth = "50ms"
//! duplicate = "0.1%"
//! outages = [{ start = "5s", duration = "2s" }]
//! outage_every = { period = "10s", duration = "300ms" }
//! outage_drops = false
//! ecn = "pass"                   # "bleach", "ce_only", "ect1_to_ect0"
//! bursts = { interval = "4ms", jitter = "1ms" }   # aggregating radio
//!                                # add driver_queue = "8ms" to wait below the queue
//! mtu = 1400                     # largest IP packet forwarded, in bytes
//! mtu_icmp = true                # answer a larger one with ICMP Packet Too Big
//! mtu_change = { at = "5s", mtu = 1280 }
//! ```
//!
//! Fields that take several forms accept a bare value for the common case
//! or a one-key table naming the form; a bad value is reported by the TOML
//! reader with its field and line.

use super::bursts::Bursts;
use super::ecn_rewrite::EcnRewrite;
use super::fade::Fade;
use super::jitter::Jitter;
use super::loss::{GilbertElliott, IdleLoss, LossModel};
use super::mtu::{self, MtuChange};
use super::outage::{Outage, PeriodicOutage};
use super::rate::{RateModel, RateSchedule, RateStep, TraceError};
use super::reorder::{Reorder, ReorderDepth};
use crate::units;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings of one link direction, as a scenario's `[link.down]` or
/// `[link.up]` table. The default is a clean 10 Mbit/s link with no delay.
///
/// The stages a packet goes through, in order: the queue; the transmitter,
/// which drains it per `rate` and freezes in outages; loss (outage, after
/// idle, then `loss`; after the transmitter, so lost packets used
/// capacity); ECN rewrite; duplication; propagation (`delay`, `jitter`,
/// `reorder`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// `rate`: how fast the queue drains. `"10Mbit"` for a constant rate;
    /// `{ schedule = [["0s", "10Mbit"], ["5s", "2Mbit"]] }` for step changes
    /// (times since the run's start, increasing; the first rate also holds
    /// before its time); `{ mahimahi = "path" }` for a mahimahi trace whose
    /// path the caller resolves and loads ([`LinkConfig::load_trace`]).
    /// Default 10 Mbit/s.
    pub rate: RateModel,
    /// `delay`: one-way propagation delay, added after serialization.
    /// Default 0.
    #[serde(with = "crate::units::duration")]
    pub delay: Duration,
    /// `jitter`: random variation of `delay` per packet, clipped so the
    /// total is never negative. `"2ms"` is uniform in [-2ms, +2ms] (netem's
    /// meaning); `{ normal = "2ms" }` is normal with that standard
    /// deviation. Default none.
    pub jitter: Option<Jitter>,
    /// `reorder_on_jitter`: let jitter reorder packets. When false (the
    /// default) a packet never arrives before the one sent ahead of it:
    /// its arrival is `max(own, previous)`.
    pub reorder_on_jitter: bool,
    /// `loss`: random loss after the transmitter. `"1%"` loses each packet
    /// independently; `{ gilbert_elliott = { loss = "2%", burst_packets = 5 } }`
    /// loses in bursts with that mean rate and mean burst length (in
    /// packets); `{ fade = { good = "500ms", bad = "20ms" } }` loses
    /// everything during fades of 20 ms on average, 500 ms apart on
    /// average (both exponential), whatever is sent. Default none.
    pub loss: Option<LossModel>,
    /// `loss_after_idle`: `{ idle = "5s", packets = 3 }` loses the first 3
    /// packets sent after the link was idle for 5 s or more, like a radio
    /// waking from a low-power state. Default none.
    pub loss_after_idle: Option<IdleLoss>,
    /// `reorder`: `{ probability = "1%", depth_packets = 30 }` holds a packet
    /// back, with that probability, until 30 later packets have left the
    /// transmitter (or it runs dry); `depth = "50ms"` instead delays it by
    /// 50 ms more. Default none.
    pub reorder: Option<Reorder>,
    /// `duplicate`: probability that a packet is delivered twice; the copy
    /// propagates right after the original with its own jitter. Default 0.
    #[serde(with = "crate::units::probability")]
    pub duplicate: f64,
    /// `outages`: scheduled radio freezes,
    /// `[{ start = "5s", duration = "2s" }, ...]`, times since the run's
    /// start. Default none.
    pub outages: Vec<Outage>,
    /// `outage_every`: periodic freezes,
    /// `{ period = "10s", duration = "300ms", first = "10s" }` (`first`
    /// defaults to `period`). Default none.
    pub outage_every: Option<PeriodicOutage>,
    /// `outage_drops`: false (default) freezes the transmitter during an
    /// outage, so packets wait in the queue (which may overflow) and resume
    /// after it; true keeps it draining and loses every packet that leaves
    /// it during the outage.
    pub outage_drops: bool,
    /// `ecn`: what the hop does to the ECN field: `"pass"` (default),
    /// `"bleach"` (everything to Not-ECT), `"ce_only"` (every ECT becomes
    /// CE), `"ect1_to_ect0"`. IPv4 checksums are kept valid.
    pub ecn: EcnRewrite,
    /// `bursts`: `{ interval = "4ms", jitter = "1ms" }` makes the
    /// transmitter send only at transmit opportunities, one per interval
    /// (each moved by up to the jitter, at most half the interval), each
    /// sending at once what `rate` accumulated since the previous one, as
    /// an aggregating Wi-Fi radio does. With `driver_queue = "8ms"` the
    /// wait for an opportunity happens in a driver queue below the queue
    /// discipline that holds that much air time, so the AQM sees only its
    /// own sojourn time ([`Bursts`]). Needs a constant or scheduled
    /// `rate`. Default none: packets leave as they are serialized.
    pub bursts: Option<Bursts>,
    /// `mtu`: the largest IP packet (header included) the hop forwards, in
    /// bytes, at least 1280; a larger one is dropped at the link's
    /// entrance and counted ([`super::mtu`]). Default none: any size.
    #[serde(deserialize_with = "mtu::de_opt_mtu")]
    pub mtu: Option<u32>,
    /// `mtu_icmp`: answer a packet dropped for its size with an ICMP
    /// "fragmentation needed" (IPv4) or ICMPv6 Packet Too Big toward its
    /// sender, as a router does. Default false: the hop is silent (a black
    /// hole for large packets, as where ICMP is filtered).
    pub mtu_icmp: bool,
    /// `mtu_change`: `{ at = "5s", mtu = 1280 }` sets the MTU from that
    /// time on (since the run's start). Default none.
    pub mtu_change: Option<MtuChange>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            rate: RateModel::Constant { bps: 10_000_000 },
            delay: Duration::ZERO,
            jitter: None,
            reorder_on_jitter: false,
            loss: None,
            loss_after_idle: None,
            reorder: None,
            duplicate: 0.0,
            outages: Vec::new(),
            outage_every: None,
            outage_drops: false,
            ecn: EcnRewrite::Pass,
            bursts: None,
            mtu: None,
            mtu_icmp: false,
            mtu_change: None,
        }
    }
}

/// A link configuration that cannot be run as it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinkConfigError {
    /// The rate names a mahimahi trace file that was not read into memory before the link was built; the path as configured.
    #[error("mahimahi trace {0:?} was named but not loaded")]
    TraceNotLoaded(PathBuf),
    #[error("{field} must be a probability within 0..1, got {value}")]
    /// A probability setting lies outside 0 to 1.
    Probability {
        /// Which setting, e.g. `"loss"` or `"reorder probability"`.
        field: &'static str,
        /// The value given, outside 0 to 1 (or NaN).
        value: f64,
    },
    /// `reorder.depth_packets` is 0, which would reorder nothing.
    #[error("reorder depth_packets must be at least 1")]
    ZeroReorderDepth,
    /// The fade loss durations are invalid; the message says why.
    #[error("{0}")]
    Fade(String),
    /// `bursts` was combined with a mahimahi trace rate, which carries its own delivery times.
    #[error("bursts need a constant or scheduled rate; a mahimahi trace has its own timing")]
    BurstsWithTrace,
    /// The burst interval or jitter is invalid; the message says why.
    #[error("{0}")]
    Bursts(String),
    /// `mtu` or `mtu_change` is below the 1280 bytes every path carries.
    #[error("{0}")]
    Mtu(String),
}

impl LinkConfig {
    /// The mahimahi trace file `rate` names, if it is not loaded yet.
    pub fn trace_path(&self) -> Option<&Path> {
        match &self.rate {
            RateModel::MahimahiFile(p) => Some(p),
            _ => None,
        }
    }

    /// Replaces the trace file `rate` names by `text`, the file's contents
    /// (the caller resolves the path and reads it). Does nothing if `rate`
    /// names no file.
    pub fn load_trace(&mut self, text: &str) -> Result<(), TraceError> {
        if let RateModel::MahimahiFile(_) = self.rate {
            self.rate = RateModel::from_mahimahi(text)?;
        }
        Ok(())
    }

    /// Checks what deserialization cannot: that a named trace was loaded,
    /// and (for configs built in code) that probabilities are in range.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if let Some(p) = self.trace_path() {
            return Err(LinkConfigError::TraceNotLoaded(p.to_path_buf()));
        }
        let check = |field, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(LinkConfigError::Probability { field, value })
            }
        };
        check("duplicate", self.duplicate)?;
        match self.loss {
            Some(LossModel::Random { probability }) => check("loss", probability)?,
            Some(LossModel::GilbertElliott(ge)) => check("gilbert_elliott loss", ge.loss)?,
            Some(LossModel::Fade(f)) => {
                Fade::new(f.good, f.bad).map_err(LinkConfigError::Fade)?;
            }
            None => {}
        }
        if let Some(r) = self.reorder {
            check("reorder probability", r.probability)?;
            if r.depth == ReorderDepth::Packets(0) {
                return Err(LinkConfigError::ZeroReorderDepth);
            }
        }
        if let Some(m) = self.mtu {
            mtu::check("mtu", m).map_err(LinkConfigError::Mtu)?;
        }
        if let Some(c) = self.mtu_change {
            mtu::check("mtu_change mtu", c.mtu).map_err(LinkConfigError::Mtu)?;
        }
        if let Some(b) = self.bursts {
            if matches!(
                self.rate,
                RateModel::Mahimahi(_) | RateModel::MahimahiFile(_)
            ) {
                return Err(LinkConfigError::BurstsWithTrace);
            }
            let checked = Bursts::new(b.interval, b.jitter).map_err(LinkConfigError::Bursts)?;
            if let Some(airtime) = b.driver_queue {
                checked
                    .with_driver_queue(airtime)
                    .map_err(LinkConfigError::Bursts)?;
            }
        }
        Ok(())
    }
}

/// A value written either as a bare scalar (the common case) or as a
/// one-key table naming its form, `{ form = value }`.
trait Shorthand: Sized {
    const EXPECTING: &'static str;
    const FORMS: &'static [&'static str];
    fn from_scalar(s: &str) -> Result<Self, String>;
    fn from_form<'de, A: MapAccess<'de>>(form: &str, map: &mut A) -> Result<Self, A::Error>;
}

struct ShorthandVisitor<T>(PhantomData<T>);

impl<'de, T: Shorthand> Visitor<'de> for ShorthandVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::from_scalar(s).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        T::from_scalar(&v.to_string()).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::from_scalar(&v.to_string()).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::from_scalar(&v.to_string()).map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(form) = map.next_key::<String>()? else {
            return Err(de::Error::custom(format_args!(
                "expected one of {:?}, got an empty table",
                T::FORMS
            )));
        };
        if !T::FORMS.contains(&form.as_str()) {
            return Err(de::Error::unknown_variant(&form, T::FORMS));
        }
        let value = T::from_form(&form, &mut map)?;
        if let Some(extra) = map.next_key::<String>()? {
            return Err(de::Error::custom(format_args!(
                "give only one of {:?}; found both {form:?} and {extra:?}",
                T::FORMS
            )));
        }
        Ok(value)
    }
}

fn deserialize_shorthand<'de, D: Deserializer<'de>, T: Shorthand>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(ShorthandVisitor(PhantomData))
}

/// Newtypes that read one human unit, for use inside tables and arrays.
struct Dur(Duration);
struct Rate(u64);
struct Prob(f64);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        units::duration::deserialize(d).map(Dur)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        units::rate_bps::deserialize(d).map(Rate)
    }
}

impl<'de> Deserialize<'de> for Prob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        units::probability::deserialize(d).map(Prob)
    }
}

impl Shorthand for RateModel {
    const EXPECTING: &'static str =
        "a rate such as \"10Mbit\", or a table { schedule = [...] } or { mahimahi = \"file\" }";
    const FORMS: &'static [&'static str] = &["constant", "schedule", "mahimahi"];

    fn from_scalar(s: &str) -> Result<Self, String> {
        units::parse_rate_bps(s).map(|bps| RateModel::Constant { bps })
    }

    fn from_form<'de, A: MapAccess<'de>>(form: &str, map: &mut A) -> Result<Self, A::Error> {
        Ok(match form {
            "constant" => RateModel::Constant {
                bps: map.next_value::<Rate>()?.0,
            },
            "schedule" => {
                let steps = map
                    .next_value::<Vec<(Dur, Rate)>>()?
                    .into_iter()
                    .map(|(at, bps)| RateStep {
                        at: at.0,
                        bps: bps.0,
                    })
                    .collect();
                RateModel::Schedule(RateSchedule::new(steps).map_err(de::Error::custom)?)
            }
            _ => RateModel::MahimahiFile(map.next_value::<PathBuf>()?),
        })
    }
}

impl<'de> Deserialize<'de> for RateModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shorthand(d)
    }
}

impl Shorthand for Jitter {
    const EXPECTING: &'static str =
        "a duration such as \"2ms\", or a table { uniform = \"2ms\" } or { normal = \"2ms\" }";
    const FORMS: &'static [&'static str] = &["uniform", "normal"];

    fn from_scalar(s: &str) -> Result<Self, String> {
        units::parse_duration(s).map(Jitter::Uniform)
    }

    fn from_form<'de, A: MapAccess<'de>>(form: &str, map: &mut A) -> Result<Self, A::Error> {
        let d = map.next_value::<Dur>()?.0;
        Ok(if form == "normal" {
            Jitter::Normal(d)
        } else {
            Jitter::Uniform(d)
        })
    }
}

impl<'de> Deserialize<'de> for Jitter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shorthand(d)
    }
}

impl Shorthand for LossModel {
    const EXPECTING: &'static str = "a probability such as \"1%\", or a table { gilbert_elliott = { loss = \"2%\", burst_packets = 5 } } or { fade = { good = \"500ms\", bad = \"20ms\" } }";
    const FORMS: &'static [&'static str] = &["random", "gilbert_elliott", "fade"];

    fn from_scalar(s: &str) -> Result<Self, String> {
        units::parse_probability(s).map(|probability| LossModel::Random { probability })
    }

    fn from_form<'de, A: MapAccess<'de>>(form: &str, map: &mut A) -> Result<Self, A::Error> {
        if form == "random" {
            let probability = map.next_value::<Prob>()?.0;
            return Ok(LossModel::Random { probability });
        }
        if form == "fade" {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Raw {
                good: Dur,
                bad: Dur,
            }
            let f = map.next_value::<Raw>()?;
            return Fade::new(f.good.0, f.bad.0)
                .map(LossModel::Fade)
                .map_err(de::Error::custom);
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Ge {
            loss: Prob,
            burst_packets: f64,
        }
        let ge = map.next_value::<Ge>()?;
        GilbertElliott::new(ge.loss.0, ge.burst_packets)
            .map(LossModel::GilbertElliott)
            .map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for LossModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shorthand(d)
    }
}

impl<'de> Deserialize<'de> for Reorder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            probability: Prob,
            depth_packets: Option<u32>,
            depth: Option<Dur>,
        }
        let raw = Raw::deserialize(d)?;
        let depth = match (raw.depth_packets, raw.depth) {
            (Some(0), None) => {
                return Err(de::Error::custom(
                    "reorder depth_packets must be at least 1",
                ));
            }
            (Some(n), None) => ReorderDepth::Packets(n),
            (None, Some(t)) => ReorderDepth::Time(t.0),
            _ => {
                return Err(de::Error::custom(
                    "reorder needs exactly one of depth_packets (e.g. 30) or depth (e.g. \"50ms\")",
                ));
            }
        };
        Ok(Reorder {
            probability: raw.probability.0,
            depth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_empty_table_agree() {
        let c: LinkConfig = toml::from_str("").unwrap();
        assert_eq!(c, LinkConfig::default());
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn every_field_parses() {
        let text = r#"
            rate = { schedule = [["0s", "10Mbit"], ["5s", "2Mbit"]] }
            delay = "10ms"
            jitter = { normal = "2ms" }
            reorder_on_jitter = true
            loss = { gilbert_elliott = { loss = "2%", burst_packets = 5 } }
            loss_after_idle = { idle = "2s", packets = 4 }
            reorder = { probability = "1%", depth = "50ms" }
            duplicate = "0.1%"
            outages = [{ start = "5s", duration = "2s" }]
            outage_every = { period = "10s", duration = "300ms" }
            outage_drops = true
            ecn = "ect1_to_ect0"
        "#;
        let c: LinkConfig = toml::from_str(text).unwrap();
        let RateModel::Schedule(s) = &c.rate else {
            panic!("{:?}", c.rate)
        };
        assert_eq!(s.steps()[1].bps, 2_000_000);
        assert_eq!(c.jitter, Some(Jitter::Normal(Duration::from_millis(2))));
        assert!(c.reorder_on_jitter && c.outage_drops);
        assert_eq!(
            c.loss,
            Some(LossModel::GilbertElliott(GilbertElliott {
                loss: 0.02,
                burst_packets: 5.0
            }))
        );
        assert_eq!(
            c.reorder.map(|r| r.depth),
            Some(ReorderDepth::Time(Duration::from_millis(50)))
        );
        assert_eq!(c.loss_after_idle.map(|l| l.packets), Some(4));
        assert!((c.duplicate - 0.001).abs() < 1e-12);
        assert_eq!(c.outages[0].duration, Duration::from_secs(2));
        assert_eq!(
            c.outage_every.map(|o| o.first),
            Some(Duration::from_secs(10))
        );
        assert_eq!(c.ecn, EcnRewrite::Ect1ToEct0);
    }

    #[test]
    fn shorthands_and_their_long_forms_agree() {
        let pairs = [
            ("rate = \"2Mbit\"", "rate = { constant = \"2Mbit\" }"),
            ("jitter = \"3ms\"", "jitter = { uniform = \"3ms\" }"),
            ("loss = \"1%\"", "loss = { random = 0.01 }"),
        ];
        for (short, long) in pairs {
            let a: LinkConfig = toml::from_str(short).unwrap();
            let b: LinkConfig = toml::from_str(long).unwrap();
            assert_eq!(a, b, "{short}");
            assert_ne!(a, LinkConfig::default(), "{short}");
        }
    }

    #[test]
    fn fades_parse_and_bad_means_are_refused_with_their_line() {
        let c: LinkConfig =
            toml::from_str("loss = { fade = { good = \"500ms\", bad = \"20ms\" } }").unwrap();
        assert_eq!(
            c.loss,
            Some(LossModel::Fade(Fade {
                good: Duration::from_millis(500),
                bad: Duration::from_millis(20)
            }))
        );
        assert_eq!(c.validate(), Ok(()));
        let e = toml::from_str::<LinkConfig>("\nloss = { fade = { good = \"1s\", bad = \"0s\" } }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("fade bad") && e.contains("line 2"), "{e}");
        let e = toml::from_str::<LinkConfig>("loss = { fade = { good = \"1s\" } }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad"), "{e}");
    }

    #[test]
    fn trace_files_load_through_the_caller() {
        let mut c: LinkConfig = toml::from_str("rate = { mahimahi = \"traces/x.down\" }").unwrap();
        assert_eq!(c.trace_path(), Some(Path::new("traces/x.down")));
        assert!(matches!(
            c.validate(),
            Err(LinkConfigError::TraceNotLoaded(_))
        ));
        assert!(c.load_trace("1\n2\nbad").is_err());
        c.load_trace("1\n2\n").unwrap();
        assert!(matches!(c.rate, RateModel::Mahimahi(_)));
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn validate_catches_configs_built_in_code() {
        let c = LinkConfig {
            duplicate: 1.5,
            ..LinkConfig::default()
        };
        assert!(matches!(
            c.validate(),
            Err(LinkConfigError::Probability {
                field: "duplicate",
                ..
            })
        ));
        let c = LinkConfig {
            reorder: Some(Reorder {
                probability: 0.1,
                depth: ReorderDepth::Packets(0),
            }),
            ..LinkConfig::default()
        };
        assert_eq!(c.validate(), Err(LinkConfigError::ZeroReorderDepth));
    }

    #[test]
    fn bursts_parse_and_refuse_what_cannot_run() {
        let c: LinkConfig =
            toml::from_str("bursts = { interval = \"4ms\", jitter = \"1ms\" }").unwrap();
        assert_eq!(
            c.bursts,
            Some(Bursts::new(Duration::from_millis(4), Duration::from_millis(1)).unwrap())
        );
        assert_eq!(c.validate(), Ok(()));
        let c: LinkConfig = toml::from_str("bursts = { interval = \"4ms\" }").unwrap();
        assert_eq!(c.bursts.map(|b| b.jitter), Some(Duration::ZERO));
        let e = toml::from_str::<LinkConfig>("bursts = { interval = \"4ms\", jitter = \"3ms\" }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("half the interval"), "{e}");
        let e = toml::from_str::<LinkConfig>("bursts = { every = \"4ms\" }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("every"), "{e}");
        let mut c: LinkConfig =
            toml::from_str("rate = { mahimahi = \"x\" }\nbursts = { interval = \"4ms\" }").unwrap();
        c.load_trace("1\n2\n").unwrap();
        assert_eq!(c.validate(), Err(LinkConfigError::BurstsWithTrace));
        let c: LinkConfig =
            toml::from_str("bursts = { interval = \"4ms\", driver_queue = \"8ms\" }").unwrap();
        assert_eq!(
            c.bursts.and_then(|b| b.driver_queue),
            Some(Duration::from_millis(8))
        );
        let e = toml::from_str::<LinkConfig>(
            "bursts = { interval = \"4ms\", jitter = \"1ms\", driver_queue = \"4ms\" }",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("driver_queue"), "{e}");
    }
}
