//! The link's MTU: the largest IP packet its hop forwards. A larger one is
//! dropped at the link's entrance (it never takes the queue or the air),
//! counted, and with `mtu_icmp` answered by an ICMP "fragmentation needed"
//! (IPv4) or ICMPv6 Packet Too Big toward its sender, as a router does.
//! Many paths send no such answer (filtered ICMP): without `mtu_icmp` the
//! hop is a black hole for large packets, which a sender must detect from
//! losses alone (RFC 8899).
//!
//! `mtu_change = { at = "5s", mtu = 1280 }` changes the MTU at a set time
//! (a route change or a tunnel coming up mid-transfer).

use brisk_time::Instant;
use serde::Deserialize;
use std::time::Duration;

/// The smallest MTU a link may have: IPv6's minimum (RFC 8200 §5), which
/// every path must carry; IPv4's 68 bytes would carry no transport Brisk
/// runs.
pub const MIN_MTU: u32 = 1280;

/// `mtu_change = { at = "5s", mtu = 1280 }`: from `at` (since the run's
/// start) the link forwards IP packets of at most `mtu` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MtuChange {
    /// When the MTU changes, measured from the run's start.
    #[serde(with = "crate::units::duration")]
    pub at: Duration,
    /// The MTU from then on, in bytes of IP packet.
    #[serde(deserialize_with = "de_mtu")]
    pub mtu: u32,
}

/// The MTU in force at `now`, `None` for no limit.
pub(crate) fn mtu_at(mtu: Option<u32>, change: Option<MtuChange>, now: Instant) -> Option<u32> {
    match change {
        Some(c) if now.since_epoch() >= c.at => Some(c.mtu),
        _ => mtu,
    }
}

/// Checks an MTU setting: at least [`MIN_MTU`].
pub(crate) fn check(field: &'static str, mtu: u32) -> Result<(), String> {
    if mtu < MIN_MTU {
        return Err(format!(
            "{field} must be at least {MIN_MTU} bytes (the IPv6 minimum), got {mtu}"
        ));
    }
    Ok(())
}

/// Reads an MTU, refusing one below [`MIN_MTU`] (the TOML reader adds
/// the field's line).
pub(crate) fn de_mtu<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let mtu = u32::deserialize(d)?;
    check("mtu", mtu).map_err(serde::de::Error::custom)?;
    Ok(mtu)
}

/// [`de_mtu`] for the optional `mtu` field.
pub(crate) fn de_opt_mtu<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    de_mtu(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Link, LinkConfig, LinkEvent};
    use crate::packet::tests::udp;
    use crate::queue::{Fifo, FifoConfig};
    use brisk_wire::Ecn;

    fn link(config: LinkConfig) -> Link {
        Link::new(
            config,
            Box::new(Fifo::new(FifoConfig::default())),
            crate::rng(1, 0),
        )
    }

    #[test]
    fn scenario_syntax_and_errors_name_field_and_line() {
        let c: LinkConfig =
            toml::from_str("mtu = 1400\nmtu_icmp = true\nmtu_change = { at = \"5s\", mtu = 1280 }")
                .unwrap();
        assert_eq!(c.mtu, Some(1400));
        assert!(c.mtu_icmp);
        assert_eq!(
            c.mtu_change,
            Some(MtuChange {
                at: Duration::from_secs(5),
                mtu: 1280
            })
        );
        let e = toml::from_str::<LinkConfig>("delay = \"1ms\"\nmtu = 576")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("576") && e.contains("mtu"),
            "{e}"
        );
        let e = toml::from_str::<LinkConfig>("mtu_change = { at = \"5s\", mtu = 1000 }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("1000"), "{e}");
        let code = LinkConfig {
            mtu: Some(1000),
            ..LinkConfig::default()
        };
        assert!(code.validate().is_err());
    }

    #[test]
    fn a_packet_over_the_mtu_is_dropped_counted_and_answered_if_asked() {
        for icmp in [false, true] {
            let mut l = link(LinkConfig {
                mtu: Some(1400),
                mtu_icmp: icmp,
                mtu_change: Some(MtuChange {
                    at: Duration::from_millis(10),
                    mtu: 1300,
                }),
                ..LinkConfig::default()
            });
            // `udp(id, _, len, _)` builds an IPv4 datagram of `len` bytes.
            l.handle_packet(Instant::ZERO, udp(1, 0, 1400, Ecn::NotEct));
            l.handle_packet(Instant::ZERO, udp(2, 0, 1401, Ecn::NotEct));
            l.handle_packet(Instant::from_millis(10), udp(3, 0, 1400, Ecn::NotEct));
            l.handle_packet(Instant::from_millis(10), udp(4, 0, 1300, Ecn::NotEct));
            while let Some(t) = l.poll_timeout() {
                l.handle_timeout(t);
            }
            let delivered: Vec<u64> = std::iter::from_fn(|| l.poll_delivery())
                .map(|(_, p)| p.id)
                .collect();
            assert_eq!(delivered, vec![1, 4], "icmp {icmp}");
            let too_big: Vec<(u64, u32)> = std::iter::from_fn(|| l.poll_event())
                .filter_map(|e| match e {
                    LinkEvent::TooBig { packet, mtu, .. } => Some((packet.id, mtu)),
                    _ => None,
                })
                .collect();
            assert_eq!(too_big, vec![(2, 1400), (3, 1300)]);
            assert_eq!(l.stats().too_big_packets, 2);
            let replies: Vec<(Instant, u32, u64)> = std::iter::from_fn(|| l.poll_reply())
                .map(|(at, p)| {
                    let ptb = brisk_wire::icmp::parse_packet_too_big(&p.data).unwrap();
                    (at, ptb.mtu, p.id)
                })
                .collect();
            if icmp {
                assert_eq!(
                    replies,
                    vec![
                        (Instant::ZERO, 1400, 2),
                        (Instant::from_millis(10), 1300, 3)
                    ]
                );
            } else {
                assert!(replies.is_empty());
            }
            assert_eq!(l.stats().too_big_replies, replies.len() as u64);
        }
    }

    #[test]
    fn the_change_takes_over_at_its_time() {
        let change = Some(MtuChange {
            at: Duration::from_secs(5),
            mtu: 1280,
        });
        assert_eq!(
            mtu_at(Some(1500), change, Instant::from_millis(4_999)),
            Some(1500)
        );
        assert_eq!(
            mtu_at(Some(1500), change, Instant::from_millis(5_000)),
            Some(1280)
        );
        assert_eq!(mtu_at(None, change, Instant::ZERO), None);
        assert_eq!(mtu_at(None, None, Instant::from_millis(9_000)), None);
        assert!(check("mtu", 1279).unwrap_err().contains("1279"));
        assert!(check("mtu", 1280).is_ok());
    }
}
