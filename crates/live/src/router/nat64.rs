//! The NAT64/DNS64 gateway of the IPv6-only mode, on the server's side of
//! the bottleneck: the client's access link (both directions of the
//! bottleneck) carries IPv6 only, as on an IPv6-only mobile network, and
//! the provider's gateway translates for IPv4-only servers.
//!
//! The protocol work is `brisk-nat64`'s [`Nat64`]; this module only places
//! it: IPv4 datagrams from the server are translated before they enter the
//! down link; IPv6 datagrams the up link delivers are translated before
//! they are written to the server. (Names resolve to synthesized addresses
//! at the lab's resolver, [`super::resolver`].)

use brisk_nat64::{Nat64, Nat64Config, Nat64Prefix};
use brisk_time::Instant;
use std::net::{IpAddr, Ipv4Addr};

/// The IPv4 address the NAT64 shares among IPv6 clients.
pub const POOL_V4: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 64);

/// NAT64 for one lab.
pub struct Gateway {
    nat: Nat64,
    prefix: Nat64Prefix,
}

impl Gateway {
    /// A gateway with `prefix` (the resolver must synthesize under the
    /// same one) and the pool [`POOL_V4`].
    pub fn new(prefix: Nat64Prefix) -> Result<Gateway, String> {
        let nat = Nat64::new(Nat64Config::new(prefix, vec![POOL_V4])).map_err(|e| e.to_string())?;
        Ok(Gateway { nat, prefix })
    }

    pub fn prefix(&self) -> Nat64Prefix {
        self.prefix
    }

    pub fn nat(&self) -> &Nat64 {
        &self.nat
    }

    /// Whether `ip` is reached through the gateway: a synthesized address.
    pub fn is_gateway_side(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V6(a) => self.prefix.contains(a),
            IpAddr::V4(_) => false,
        }
    }

    /// An IPv4 datagram from the server, as IPv6 for the down link.
    pub fn from_server(&mut self, now: Instant, datagram: &[u8]) -> Option<Vec<u8>> {
        self.nat.handle_v4(now, datagram).ok()
    }

    /// An IPv6 datagram the up link delivered at `now`, as IPv4 for the
    /// server.
    pub fn to_server(&mut self, now: Instant, datagram: &[u8]) -> Option<Vec<u8>> {
        self.nat.handle_v6(now, datagram).ok()
    }

    /// Datagrams the NAT sends on its own account (ICMP errors, further
    /// fragments, hairpinned traffic): `(to the client?, datagram)`.
    pub fn poll_transmit(&mut self) -> Option<(bool, Vec<u8>)> {
        self.nat
            .poll_transmit()
            .map(|t| (t.side == brisk_nat64::Side::V6, t.datagram))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{CLIENT_V6, SERVER_V4};
    use brisk_wire::{Ecn, ip};
    use std::net::SocketAddr;

    #[test]
    fn udp_round_trip_through_the_nat() {
        let mut g = Gateway::new(Nat64Prefix::WELL_KNOWN).unwrap();
        let server6 = g.prefix().embed(SERVER_V4);
        assert!(g.is_gateway_side(server6.into()));
        assert!(!g.is_gateway_side(CLIENT_V6.into()) && !g.is_gateway_side(SERVER_V4.into()));
        let client = SocketAddr::new(CLIENT_V6.into(), 40_000);
        let out = ip::udp_datagram(
            client,
            SocketAddr::new(server6.into(), 5000),
            Ecn::Ect1,
            b"hi",
        )
        .unwrap();
        let v4 = g.to_server(Instant::ZERO, &out).expect("translated");
        let (src, dst, ecn, payload) = ip::parse_udp(&v4).unwrap();
        assert_eq!(src.ip(), IpAddr::V4(POOL_V4));
        assert_eq!(dst, SocketAddr::new(SERVER_V4.into(), 5000));
        assert_eq!((ecn, payload), (Ecn::Ect1, &b"hi"[..]));
        let back = ip::udp_datagram(dst, src, Ecn::Ce, b"ok").unwrap();
        let v6 = g.from_server(Instant::from_millis(1), &back).unwrap();
        let (s, d, ecn, payload) = ip::parse_udp(&v6).unwrap();
        assert_eq!((s, d), (SocketAddr::new(server6.into(), 5000), client));
        assert_eq!((ecn, payload), (Ecn::Ce, &b"ok"[..]));
        // Unsolicited IPv4 traffic finds no binding.
        let stray = ip::udp_datagram(
            SocketAddr::new(SERVER_V4.into(), 1),
            SocketAddr::new(POOL_V4.into(), 2),
            Ecn::NotEct,
            b"x",
        )
        .unwrap();
        assert!(g.from_server(Instant::from_millis(2), &stray).is_none());
        assert_eq!(g.nat().stats().v6_to_v4, 1);
    }
}
