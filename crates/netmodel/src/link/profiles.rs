//! Named network profiles: rate, round-trip time and loss of typical mobile
//! and Wi-Fi access, each from a cited source.
//!
//! A profile yields one [`LinkConfig`] per direction. The round-trip time is
//! split evenly into a one-way propagation delay each way; the loss rate,
//! measured end to end by the sources, applies independently in each
//! direction as random loss. Queues are not part of a profile: pick one in
//! the scenario.

use super::config::LinkConfig;
use super::loss::LossModel;
use super::rate::RateModel;
use std::time::Duration;

/// A named set of link settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Lower-case name used in scenarios and on the command line.
    pub name: &'static str,
    /// One line for `--help`.
    pub summary: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// Downlink rate in bit/s.
    pub down_bps: u64,
    /// Uplink rate in bit/s.
    pub up_bps: u64,
    /// Base round-trip time; each direction gets half as propagation delay.
    pub rtt: Duration,
    /// Random loss probability per direction.
    pub loss: f64,
}

impl Profile {
    /// The downlink (toward the device).
    pub fn down(&self) -> LinkConfig {
        self.direction(self.down_bps)
    }

    /// The uplink (from the device).
    pub fn up(&self) -> LinkConfig {
        self.direction(self.up_bps)
    }

    fn direction(&self, bps: u64) -> LinkConfig {
        LinkConfig {
            rate: RateModel::Constant { bps },
            delay: self.rtt / 2,
            loss: (self.loss > 0.0).then_some(LossModel::Random {
                probability: self.loss,
            }),
            ..LinkConfig::default()
        }
    }
}

/// OK.ru (Alexander Tobol, "TCP is dead", seed 003) measured loss / RTT /
/// bandwidth per access type in its mobile app: EDGE 2.5% / 900 ms /
/// 0.2 Mbit/s, 3G 0.5% / 550 ms / 1.0, LTE 0.7% / 220 ms / 2.0, Wi-Fi
/// 0.5% / 110 ms / 2.2. The table gives one (download) rate; uplinks use
/// the down:up ratio of the same deck's "network profiles" slide (2G 20/10
/// kbit/s, 3G 22/3 Mbit/s, LTE 90/20, Wi-Fi 90/30).
const OKRU: &str = "OK.ru, Tobol \"TCP is dead\": app-measured loss/RTT/bandwidth; \
                    uplink by the deck's down:up ratios";

/// Chromium DevTools throttling presets (front_end/core/sdk/NetworkManager.ts,
/// renamed May 2024, crbug.com/342406608). DevTools applies latency per
/// request and scales its numbers to compensate; these are the packet-level
/// targets the presets are commented with: "3G" (formerly "Slow 3G")
/// 400 ms RTT, ~500 kbit/s each way; "Slow 4G" (formerly "Fast 3G") 150 ms,
/// 1.6 Mbit/s down, 750 kbit/s up; "Fast 4G" 60 ms, 9 / 1.5 Mbit/s.
const DEVTOOLS: &str =
    "Chromium DevTools throttling preset (packet-level targets in NetworkManager.ts)";

/// ITU-R M.2410-0 (2017), minimum technical performance requirements for
/// IMT-2020 (5G), eMBB dense urban: user-experienced data rate 100 Mbit/s
/// down, 50 Mbit/s up; user-plane latency 4 ms each way. Radio access only:
/// add the path beyond the base station in the scenario.
const IMT2020: &str = "ITU-R M.2410-0 IMT-2020 minimum requirements (eMBB)";

const PROFILES: &[Profile] = &[
    Profile {
        name: "edge",
        summary: "EDGE: 0.2/0.1 Mbit/s, 900 ms RTT, 2.5% loss",
        source: OKRU,
        down_bps: 200_000,
        up_bps: 100_000,
        rtt: Duration::from_millis(900),
        loss: 0.025,
    },
    Profile {
        name: "3g",
        summary: "3G: 1.0/0.14 Mbit/s, 550 ms RTT, 0.5% loss",
        source: OKRU,
        down_bps: 1_000_000,
        up_bps: 136_364, // 1.0 Mbit/s x 3/22
        rtt: Duration::from_millis(550),
        loss: 0.005,
    },
    Profile {
        name: "lte",
        summary: "LTE: 2.0/0.44 Mbit/s, 220 ms RTT, 0.7% loss",
        source: OKRU,
        down_bps: 2_000_000,
        up_bps: 444_444, // 2.0 Mbit/s x 20/90
        rtt: Duration::from_millis(220),
        loss: 0.007,
    },
    Profile {
        name: "wifi",
        summary: "Wi-Fi: 2.2/0.73 Mbit/s, 110 ms RTT, 0.5% loss",
        source: OKRU,
        down_bps: 2_200_000,
        up_bps: 733_333, // 2.2 Mbit/s x 30/90
        rtt: Duration::from_millis(110),
        loss: 0.005,
    },
    Profile {
        name: "devtools-3g",
        summary: "Chrome DevTools \"3G\": 0.5/0.5 Mbit/s, 400 ms RTT, no loss",
        source: DEVTOOLS,
        down_bps: 500_000,
        up_bps: 500_000,
        rtt: Duration::from_millis(400),
        loss: 0.0,
    },
    Profile {
        name: "devtools-slow-4g",
        summary: "Chrome DevTools \"Slow 4G\": 1.6/0.75 Mbit/s, 150 ms RTT, no loss",
        source: DEVTOOLS,
        down_bps: 1_600_000,
        up_bps: 750_000,
        rtt: Duration::from_millis(150),
        loss: 0.0,
    },
    Profile {
        name: "devtools-fast-4g",
        summary: "Chrome DevTools \"Fast 4G\": 9/1.5 Mbit/s, 60 ms RTT, no loss",
        source: DEVTOOLS,
        down_bps: 9_000_000,
        up_bps: 1_500_000,
        rtt: Duration::from_millis(60),
        loss: 0.0,
    },
    Profile {
        name: "5g",
        summary: "5G eMBB radio (IMT-2020 minimum): 100/50 Mbit/s, 8 ms RTT, no loss",
        source: IMT2020,
        down_bps: 100_000_000,
        up_bps: 50_000_000,
        rtt: Duration::from_millis(8),
        loss: 0.0,
    },
];

/// Every profile, in the order `--help` should list them.
pub fn all() -> &'static [Profile] {
    PROFILES
}

/// The profile with this name, ignoring case.
pub fn by_name(name: &str) -> Option<Profile> {
    PROFILES
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn okru_numbers_carry_over() {
        let lte = by_name("LTE").unwrap();
        let (down, up) = (lte.down(), lte.up());
        assert_eq!(down.rate, RateModel::Constant { bps: 2_000_000 });
        assert_eq!(down.delay + up.delay, Duration::from_millis(220));
        assert_eq!(down.loss, Some(LossModel::Random { probability: 0.007 }));
        let edge = by_name("edge").unwrap();
        assert_eq!(edge.down().delay, Duration::from_millis(450));
        assert_eq!(edge.loss, 0.025);
    }

    #[test]
    fn names_are_unique_and_valid() {
        for (i, p) in all().iter().enumerate() {
            assert_eq!(p.name, p.name.to_ascii_lowercase());
            assert!(
                all()[i + 1..].iter().all(|q| q.name != p.name),
                "{}",
                p.name
            );
            assert!(p.down().validate().is_ok() && p.up().validate().is_ok());
            assert!(p.up_bps <= p.down_bps);
        }
        assert!(by_name("carrier pigeon").is_none());
        assert!(by_name("5g").unwrap().down().loss.is_none());
    }
}
