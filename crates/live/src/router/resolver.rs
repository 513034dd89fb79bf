//! The lab's DNS resolver, answered by the router itself: `brisk-nat64`'s
//! [`Dns64`] over a zone with the lab's two names. Both namespaces point
//! their resolv.conf at it, so programs can use names, and lookups (a
//! server's reverse lookup of its own address, say) are answered at once
//! instead of timing out on a resolver the lab cannot reach. For an
//! IPv6-only client the server's IPv6 address is synthesized under the
//! NAT64 prefix (DNS64); otherwise both families are native.

use brisk_nat64::{Dns64, Nat64Prefix};
use brisk_wire::{Ecn, ip};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The resolver's addresses, reached through each side's default route.
pub const RESOLVER_V4: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 53);
pub const RESOLVER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x53, 0, 0, 0, 0, 0x53);
/// The names the zone holds.
pub const SERVER_NAME: &str = "server.brisk.test";
pub const CLIENT_NAME: &str = "client.brisk.test";
const DNS_PORT: u16 = 53;

/// The resolver and what it answered.
pub struct Resolver {
    dns: Dns64,
    /// Queries answered.
    pub answers: u64,
}

impl Resolver {
    /// A resolver for the two names, synthesizing under `prefix` where a
    /// name has no IPv6 address.
    pub fn new(
        prefix: Nat64Prefix,
        server: Vec<IpAddr>,
        client: Vec<IpAddr>,
    ) -> Result<Resolver, String> {
        let zone = BTreeMap::from([
            (SERVER_NAME.to_string(), server),
            (CLIENT_NAME.to_string(), client),
        ]);
        let dns = Dns64::new(prefix, zone).map_err(|e| e.to_string())?;
        Ok(Resolver { dns, answers: 0 })
    }

    pub fn is_resolver(ip: IpAddr) -> bool {
        ip == IpAddr::V4(RESOLVER_V4) || ip == IpAddr::V6(RESOLVER_V6)
    }

    /// The answer datagram to a datagram sent to the resolver; `None` when
    /// it is not a DNS query over UDP (it is then dropped).
    pub fn answer(&mut self, datagram: &[u8]) -> Option<Vec<u8>> {
        let (src, dst, _, query) = ip::parse_udp(datagram).ok()?;
        if !Resolver::is_resolver(dst.ip()) || dst.port() != DNS_PORT {
            return None;
        }
        let answer = self.dns.handle_query(query)?;
        let from = SocketAddr::new(dst.ip(), DNS_PORT);
        let d = ip::udp_datagram(from, src, Ecn::NotEct, &answer).ok()?;
        self.answers += 1;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{CLIENT_V6, SERVER_V4};

    fn query(name: &str, qtype: u8) -> Vec<u8> {
        // A minimal DNS query: id, RD, one question, class IN.
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, qtype, 0, 1]);
        q
    }

    #[test]
    fn answers_names_on_both_families_and_synthesizes_aaaa() {
        let prefix = Nat64Prefix::WELL_KNOWN;
        let mut r = Resolver::new(prefix, vec![SERVER_V4.into()], vec![CLIENT_V6.into()]).unwrap();
        let client = SocketAddr::new(CLIENT_V6.into(), 40_000);
        let to = SocketAddr::new(RESOLVER_V6.into(), 53);
        let q = ip::udp_datagram(client, to, Ecn::NotEct, &query(SERVER_NAME, 28)).unwrap();
        let a = r.answer(&q).expect("answered");
        let (s, d, _, answer) = ip::parse_udp(&a).unwrap();
        assert_eq!((s, d), (to, client));
        let needle = prefix.embed(SERVER_V4).octets();
        assert!(answer.windows(16).any(|w| w == needle), "{answer:?}");
        // Over IPv4 too, and an A query gets the native address.
        let c4 = SocketAddr::new(SERVER_V4.into(), 40_001);
        let to4 = SocketAddr::new(RESOLVER_V4.into(), 53);
        let q = ip::udp_datagram(c4, to4, Ecn::NotEct, &query(SERVER_NAME, 1)).unwrap();
        let a = r.answer(&q).unwrap();
        let (_, _, _, answer) = ip::parse_udp(&a).unwrap();
        assert!(answer.windows(4).any(|w| w == SERVER_V4.octets()));
        assert_eq!(r.answers, 2);
        // Not DNS: no answer.
        let other = ip::udp_datagram(
            c4,
            SocketAddr::new(RESOLVER_V4.into(), 54),
            Ecn::NotEct,
            b"x",
        )
        .unwrap();
        assert!(r.answer(&other).is_none());
        assert!(r.answer(&[0x45, 0]).is_none());
    }
}
