//! NAT64 on the host: find the network's prefix (RFC 7050) and synthesize
//! IPv6 addresses for IPv4 literals (RFC 6052), as iOS 9 did for apps.
//!
//! On an IPv6-only network a DNS64 server synthesizes AAAA records for
//! IPv4-only names, but an IPv4 *literal* never reaches DNS, so an app
//! handed `192.0.2.33` has nothing to connect to. The host can do locally
//! what the network would have done: learn the prefix by resolving
//! `ipv4only.arpa` (whose only records are 192.0.0.170 and .171; any AAAA
//! answer for it is synthesized and reveals the prefix) and embed the IPv4
//! address under it. The address arithmetic is `brisk_wire::nat64_prefix`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use brisk_wire::Nat64Prefix;
use brisk_wire::nat64_prefix::{IPV4ONLY_ADDRS, IPV4ONLY_NAME, discover_prefixes};

use crate::happy_eyeballs::Family;
use crate::resolve::{self, Resolver};

/// Why no prefix was found.
#[derive(Debug, thiserror::Error)]
pub enum Nat64Error {
    #[error(
        "no NAT64 prefix: {IPV4ONLY_NAME} has no AAAA records via {via}, so this network has no DNS64 \
         (pass a prefix such as 64:ff9b::/96 explicitly if it has NAT64 without DNS64)"
    )]
    /// The well-known name has no AAAA records: no DNS64 on this network.
    NoPrefix {
        /// The resolver used (the system resolver or a server address).
        via: String,
    },
    #[error("resolving {IPV4ONLY_NAME} via {via}: {source}")]
    /// Looking up the well-known name failed.
    Resolve {
        /// The resolver used.
        via: String,
        #[source]
        /// The lookup error.
        source: std::io::Error,
    },
}

/// The NAT64 prefixes the network's DNS64 uses (RFC 7050 §3), most
/// preferred first.
pub async fn discover(resolver: Resolver) -> Result<Vec<Nat64Prefix>, Nat64Error> {
    let via = match resolver {
        Resolver::System => "the system resolver".to_string(),
        Resolver::Server(s) => s.to_string(),
    };
    let answers = resolve::lookup(resolver, IPV4ONLY_NAME, Family::V6)
        .await
        .map_err(|source| Nat64Error::Resolve {
            via: via.clone(),
            source,
        })?;
    let v6: Vec<Ipv6Addr> = answers
        .into_iter()
        .filter_map(|a| match a {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        })
        .collect();
    let prefixes = discover_prefixes(&v6);
    if prefixes.is_empty() {
        return Err(Nat64Error::NoPrefix { via });
    }
    Ok(prefixes)
}

/// `addr` as seen through a NAT64 gateway: IPv4 addresses are embedded
/// under `prefix`, IPv6 ones are returned unchanged.
pub fn synthesize(prefix: &Nat64Prefix, addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(v4) => SocketAddr::new(IpAddr::V6(prefix.embed(*v4.ip())), v4.port()),
        v6 => v6,
    }
}

/// Whether the routing table has a way to IPv4 destinations. A UDP
/// `connect` only looks up the route; no packet is sent. The probe address
/// is `ipv4only.arpa`'s, a global-scope IPv4 address.
pub fn has_ipv4_route() -> bool {
    let probe = SocketAddr::new(IpAddr::V4(IPV4ONLY_ADDRS[0]), 9);
    UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| s.connect(probe))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthesizes_ipv4_literals_only() {
        let wkp = Nat64Prefix::WELL_KNOWN;
        assert_eq!(
            synthesize(&wkp, "192.0.2.33:443".parse().unwrap()),
            "[64:ff9b::c000:221]:443".parse().unwrap()
        );
        let v6: SocketAddr = "[2001:db8::1]:80".parse().unwrap();
        assert_eq!(synthesize(&wkp, v6), v6);
        // A /64 prefix skips the u octet (RFC 6052 §2.2).
        let p64: Nat64Prefix = "2001:db8:122:344::/64".parse().unwrap();
        assert_eq!(
            synthesize(&p64, "192.0.2.33:1".parse().unwrap()),
            "[2001:db8:122:344:c0:2:2100:0]:1".parse().unwrap()
        );
    }
}
