//! IPv4-embedded IPv6 addresses (RFC 6052) and NAT64 prefix discovery
//! (RFC 7050).
//!
//! On an IPv6-only network a NAT64 gateway reaches IPv4 hosts through a
//! prefix: the IPv4 address is written into the bits after the prefix, with
//! the "u" octet (bits 64-71) left zero so the result stays a valid interface
//! identifier. DNS64 synthesizes such addresses; the gateway extracts them
//! again. A host learns the prefix by resolving `ipv4only.arpa`, whose only
//! records are the IPv4 addresses 192.0.0.170 and 192.0.0.171: wherever
//! those appear in the synthesized AAAA answers, the bits before them are the
//! prefix.

use core::fmt;
use core::str::FromStr;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Prefix lengths RFC 6052 §2.2 allows, longest first (the order RFC 7050
/// prefix discovery tries them in).
pub const PREFIX_LENGTHS: [u8; 6] = [96, 64, 56, 48, 40, 32];

/// The IPv4 well-known addresses of `ipv4only.arpa` (RFC 7050 §2.2,
/// RFC 8880).
pub const IPV4ONLY_ADDRS: [Ipv4Addr; 2] =
    [Ipv4Addr::new(192, 0, 0, 170), Ipv4Addr::new(192, 0, 0, 171)];

/// The name whose A records reveal the NAT64 prefix (RFC 7050).
pub const IPV4ONLY_NAME: &str = "ipv4only.arpa";

/// Index of the "u" octet, which RFC 6052 requires to be zero.
const U_OCTET: usize = 8;

/// Why a prefix was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// RFC 6052 §2.2 allows only these lengths, so the IPv4 address lands on
    /// octet boundaries around the u octet.
    #[error("prefix length /{0} is not one of 32, 40, 48, 56, 64, 96")]
    BadLength(u8),
    /// The address has bits set past the prefix length (a typo caught rather
    /// than masked).
    #[error("bits after the prefix length are set")]
    HostBitsSet,
    /// RFC 6052 §2.2 reserves bits 64 to 71; a /96 prefix covers them, so they
    /// must be zero.
    #[error("bits 64-71 (the u octet) of a /96 prefix must be zero")]
    NonZeroUOctet,
    /// The text is not `IPv6-address/length`.
    #[error("expected `address/length`")]
    Syntax,
}

/// A NAT64 prefix: where IPv4 addresses live inside IPv6 (RFC 6052).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nat64Prefix {
    octets: [u8; 16],
    len_bits: u8,
}

impl Nat64Prefix {
    /// The well-known prefix `64:ff9b::/96` (RFC 6052 §2.1).
    pub const WELL_KNOWN: Nat64Prefix = Nat64Prefix {
        octets: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        len_bits: 96,
    };

    /// A prefix of `len_bits` (32, 40, 48, 56, 64 or 96). Bits after the
    /// length must be zero, so a typo in configuration is caught rather than
    /// silently masked.
    pub fn new(addr: Ipv6Addr, len_bits: u8) -> Result<Self, PrefixError> {
        if !PREFIX_LENGTHS.contains(&len_bits) {
            return Err(PrefixError::BadLength(len_bits));
        }
        let octets = addr.octets();
        if octets != mask(octets, len_bits) {
            return Err(PrefixError::HostBitsSet);
        }
        if len_bits == 96 && octets[U_OCTET] != 0 {
            return Err(PrefixError::NonZeroUOctet);
        }
        Ok(Nat64Prefix { octets, len_bits })
    }

    /// The prefix bits as an address (host bits zero).
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.octets)
    }

    /// Prefix length in bits: 32, 40, 48, 56, 64 or 96.
    pub fn len_bits(&self) -> u8 {
        self.len_bits
    }

    /// Whether this is `64:ff9b::/96`. RFC 6052 §3.1 forbids using it for
    /// non-global IPv4 addresses; the caller decides whether that applies
    /// (a lab network usually uses private IPv4 space on purpose).
    pub fn is_well_known(&self) -> bool {
        *self == Self::WELL_KNOWN
    }

    /// Whether `addr` starts with this prefix.
    pub fn contains(&self, addr: Ipv6Addr) -> bool {
        mask(addr.octets(), self.len_bits) == self.octets
    }

    /// The IPv4-embedded IPv6 address for `v4` (RFC 6052 §2.2): the IPv4
    /// octets follow the prefix, skipping the u octet; the suffix is zero.
    pub fn embed(&self, v4: Ipv4Addr) -> Ipv6Addr {
        let mut out = self.octets;
        for (slot, byte) in self.v4_positions().into_iter().zip(v4.octets()) {
            out[slot] = byte;
        }
        Ipv6Addr::from(out)
    }

    /// The IPv4 address inside `addr`, if `addr` is under this prefix and its
    /// u octet is zero (RFC 6052 §2.2 makes that a MUST). The suffix bits
    /// are ignored.
    pub fn extract(&self, addr: Ipv6Addr) -> Option<Ipv4Addr> {
        if !self.contains(addr) {
            return None;
        }
        let octets = addr.octets();
        if octets[U_OCTET] != 0 {
            return None;
        }
        let mut v4 = [0u8; 4];
        for (byte, slot) in v4.iter_mut().zip(self.v4_positions()) {
            *byte = octets[slot];
        }
        Some(Ipv4Addr::from(v4))
    }

    /// Byte positions of the four IPv4 octets for this prefix length: they
    /// start right after the prefix and jump over the u octet.
    fn v4_positions(&self) -> [usize; 4] {
        let mut positions = [0usize; 4];
        let mut slot = usize::from(self.len_bits / 8);
        for p in &mut positions {
            if slot == U_OCTET {
                slot += 1;
            }
            *p = slot;
            slot += 1;
        }
        positions
    }
}

/// Zero every bit of `octets` after the first `len_bits`.
fn mask(octets: [u8; 16], len_bits: u8) -> [u8; 16] {
    let bits = u128::from_be_bytes(octets);
    let keep = match len_bits {
        0 => 0,
        n if n >= 128 => u128::MAX,
        n => u128::MAX << (128 - u32::from(n)),
    };
    (bits & keep).to_be_bytes()
}

impl fmt::Display for Nat64Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len_bits)
    }
}

impl FromStr for Nat64Prefix {
    type Err = PrefixError;

    /// Parses `64:ff9b::/96`.
    fn from_str(s: &str) -> Result<Self, PrefixError> {
        let (addr, len) = s.trim().split_once('/').ok_or(PrefixError::Syntax)?;
        let addr: Ipv6Addr = addr.parse().map_err(|_| PrefixError::Syntax)?;
        let len: u8 = len.parse().map_err(|_| PrefixError::Syntax)?;
        Nat64Prefix::new(addr, len)
    }
}

/// RFC 7050 §3: the NAT64 prefixes revealed by the AAAA answers for
/// `ipv4only.arpa`.
///
/// Each answer is searched for 192.0.0.170 or 192.0.0.171 at every RFC 6052
/// position. One answer can match at several lengths when the prefix bits
/// happen to look like a well-known address; RFC 7050 resolves that with the
/// second well-known address, so a length under which the answers show both
/// addresses wins, then the longest. Results are deduplicated in the order
/// of the answers.
pub fn discover_prefixes(answers: &[Ipv6Addr]) -> Vec<Nat64Prefix> {
    let wkas_under = |prefix: &Nat64Prefix| {
        IPV4ONLY_ADDRS
            .iter()
            .filter(|wka| answers.iter().any(|a| prefix.extract(*a) == Some(**wka)))
            .count()
    };
    let mut found: Vec<Nat64Prefix> = Vec::new();
    for answer in answers {
        // Candidates come longest first, and `max_by_key` keeps the last
        // maximum, so iterate in reverse to prefer the longest on a tie.
        let best = candidates_in(*answer)
            .into_iter()
            .rev()
            .max_by_key(wkas_under);
        if let Some(prefix) = best.filter(|p| !found.contains(p)) {
            found.push(prefix);
        }
    }
    found
}

/// Every prefix under which `answer` embeds one of the well-known addresses.
fn candidates_in(answer: Ipv6Addr) -> Vec<Nat64Prefix> {
    PREFIX_LENGTHS
        .iter()
        .filter_map(|&len| {
            let prefix = Nat64Prefix::new(Ipv6Addr::from(mask(answer.octets(), len)), len).ok()?;
            let v4 = prefix.extract(answer)?;
            IPV4ONLY_ADDRS.contains(&v4).then_some(prefix)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Nat64Prefix {
        s.parse().unwrap()
    }

    fn a6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// RFC 6052 §2.4, Table 1: 192.0.2.33 under each length of 2001:db8::/n.
    const RFC6052_TABLE1: [(&str, &str); 6] = [
        ("2001:db8::/32", "2001:db8:c000:221::"),
        ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
        ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33"),
    ];

    #[test]
    fn rfc6052_table1_embed_and_extract() {
        let v4 = Ipv4Addr::new(192, 0, 2, 33);
        for (prefix, expected) in RFC6052_TABLE1 {
            let prefix = p(prefix);
            assert_eq!(prefix.embed(v4), a6(expected), "{prefix}");
            assert_eq!(prefix.extract(a6(expected)), Some(v4), "{prefix}");
        }
    }

    #[test]
    fn well_known_prefix_example() {
        // RFC 6052 §2.4: 192.0.2.33 under 64:ff9b::/96.
        let wkp = Nat64Prefix::WELL_KNOWN;
        let v4 = Ipv4Addr::new(192, 0, 2, 33);
        assert_eq!(wkp.embed(v4), a6("64:ff9b::c000:221"));
        assert_eq!(wkp.extract(a6("64:ff9b::192.0.2.33")), Some(v4));
        assert_eq!(p("64:ff9b::/96"), wkp);
        assert!(wkp.is_well_known());
        assert_eq!(wkp.to_string(), "64:ff9b::/96");
    }

    #[test]
    fn u_octet_is_skipped_and_checked() {
        let prefix = p("2001:db8:122:344::/64");
        let addr = prefix.embed(Ipv4Addr::new(255, 255, 255, 255));
        assert_eq!(addr.octets()[8], 0);
        let mut bad = addr.octets();
        bad[8] = 1;
        assert_eq!(prefix.extract(Ipv6Addr::from(bad)), None);
    }

    #[test]
    fn extract_outside_prefix_is_none() {
        let wkp = Nat64Prefix::WELL_KNOWN;
        assert!(!wkp.contains(a6("2001:db8::1")));
        assert_eq!(wkp.extract(a6("2001:db8::1")), None);
        assert_eq!(wkp.extract(a6("64:ff9b:1::1")), None);
        assert!(wkp.contains(a6("64:ff9b::ffff:ffff")));
    }

    #[test]
    fn bad_prefixes_are_refused() {
        assert_eq!(
            "64:ff9b::/95".parse::<Nat64Prefix>(),
            Err(PrefixError::BadLength(95))
        );
        assert_eq!(
            "64:ff9b::1/96".parse::<Nat64Prefix>(),
            Err(PrefixError::HostBitsSet)
        );
        assert_eq!(
            "2001:db8::/32x".parse::<Nat64Prefix>(),
            Err(PrefixError::Syntax)
        );
        assert_eq!(
            "2001:db8::".parse::<Nat64Prefix>(),
            Err(PrefixError::Syntax)
        );
        assert_eq!(
            "2001:db8:0:0:100::/96".parse::<Nat64Prefix>(),
            Err(PrefixError::NonZeroUOctet)
        );
    }

    #[test]
    fn discovers_each_length_from_ipv4only_answers() {
        for (prefix, _) in RFC6052_TABLE1 {
            let prefix = p(prefix);
            let answers = IPV4ONLY_ADDRS.map(|v4| prefix.embed(v4));
            assert_eq!(discover_prefixes(&answers), vec![prefix], "{prefix}");
        }
    }

    #[test]
    fn discovery_uses_second_address_to_disambiguate() {
        // A /64 prefix whose last bytes look like 192.0.0.170 under /32:
        // 2001:db8:c000:aa:: has c0 00 00 aa at bytes 4..8.
        let prefix = p("2001:db8:c000:aa::/64");
        let answers = IPV4ONLY_ADDRS.map(|v4| prefix.embed(v4));
        assert_eq!(discover_prefixes(&answers), vec![prefix]);
    }

    #[test]
    fn discovery_ignores_unrelated_answers() {
        let answers = [
            a6("2001:db8::1"),
            Nat64Prefix::WELL_KNOWN.embed(Ipv4Addr::new(192, 0, 0, 170)),
        ];
        assert_eq!(discover_prefixes(&answers), vec![Nat64Prefix::WELL_KNOWN]);
        assert!(discover_prefixes(&[a6("2001:db8::1")]).is_empty());
    }

    #[test]
    fn round_trip_every_length() {
        for (prefix, _) in RFC6052_TABLE1 {
            let prefix = p(prefix);
            for v4 in [
                Ipv4Addr::UNSPECIFIED,
                Ipv4Addr::BROADCAST,
                Ipv4Addr::new(10, 1, 2, 3),
            ] {
                let v6 = prefix.embed(v4);
                assert!(prefix.contains(v6));
                assert_eq!(prefix.extract(v6), Some(v4));
            }
        }
    }
}
