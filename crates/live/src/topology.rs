//! Who has which address, and how each namespace is wired to the router.
//!
//! The client's namespace and the server's each hold one TUN device whose
//! other end is the router. Every route points at that device (a default
//! route per family), so whatever a program sends reaches the router, and
//! the router forwards only what goes between the two namespaces. The
//! addresses match the simulator's first flow: the server (the sender of
//! the down direction) on 10.1.0.1 / 2001:db8:1::1, the client on
//! 10.2.0.1 / 2001:db8:2::1.

use crate::error::LiveError;
use crate::netns::Netns;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 1);
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1);
/// The MTU of both TUN devices, as on an Ethernet path.
pub const MTU_BYTES: u32 = 1500;

/// Which families each side has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpMode {
    /// Dual stack; programs are pointed at the server's IPv4 address.
    #[default]
    V4,
    /// Dual stack; programs are pointed at the server's IPv6 address.
    V6,
    /// The client has IPv6 only and the server IPv4 only; the router
    /// translates between them (NAT64) and answers DNS64 queries.
    V6Only,
}

/// A scenario's family: dual stack, programs pointed at that family.
impl From<brisk_netmodel::IpFamily> for IpMode {
    fn from(family: brisk_netmodel::IpFamily) -> IpMode {
        match family {
            brisk_netmodel::IpFamily::V4 => IpMode::V4,
            brisk_netmodel::IpFamily::V6 => IpMode::V6,
        }
    }
}

impl IpMode {
    pub fn name(self) -> &'static str {
        match self {
            IpMode::V4 => "v4",
            IpMode::V6 => "v6",
            IpMode::V6Only => "v6only",
        }
    }
}

/// The addresses of one lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addressing {
    pub mode: IpMode,
    pub client_v4: Option<Ipv4Addr>,
    pub client_v6: Option<Ipv6Addr>,
    pub server_v4: Option<Ipv4Addr>,
    pub server_v6: Option<Ipv6Addr>,
}

impl Addressing {
    pub fn new(mode: IpMode) -> Addressing {
        let v6only = mode == IpMode::V6Only;
        Addressing {
            mode,
            client_v4: (!v6only).then_some(CLIENT_V4),
            client_v6: Some(CLIENT_V6),
            server_v4: Some(SERVER_V4),
            server_v6: (!v6only).then_some(SERVER_V6),
        }
    }

    pub fn is_client(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => self.client_v4 == Some(a),
            IpAddr::V6(a) => self.client_v6 == Some(a),
        }
    }

    pub fn is_server(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => self.server_v4 == Some(a),
            IpAddr::V6(a) => self.server_v6 == Some(a),
        }
    }

    /// The client's address in the family programs use.
    pub fn client_addr(&self) -> IpAddr {
        match (self.mode, self.client_v4) {
            (IpMode::V4, Some(a)) => a.into(),
            _ => CLIENT_V6.into(),
        }
    }
}

/// Sets up `dev` (a TUN device already inside `ns`): addresses, a default
/// route per family, MTU, and the sysctls a point-to-point path needs:
/// no reverse-path filter, no duplicate address detection or router
/// solicitations on IPv6, IPv6 off where the side has no IPv6 address.
/// Checksum offload needs nothing: a TUN device without `IFF_VNET_HDR`
/// offers no offloads, so the kernel fills every checksum before the
/// router reads a datagram and checks every one the router writes.
pub fn configure(
    ns: &Netns,
    dev: &str,
    v4: Option<Ipv4Addr>,
    v6: Option<Ipv6Addr>,
) -> Result<(), LiveError> {
    for scope in ["all", "default", dev] {
        ns.sysctl(&format!("ipv4.conf.{scope}.rp_filter"), "0")?;
    }
    if v6.is_some() {
        ns.sysctl(&format!("ipv6.conf.{dev}.disable_ipv6"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.accept_dad"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.accept_ra"), "0")?;
        ns.sysctl(&format!("ipv6.conf.{dev}.router_solicitations"), "0")?;
    } else {
        ns.sysctl(&format!("ipv6.conf.{dev}.disable_ipv6"), "1")?;
    }
    let mtu = MTU_BYTES.to_string();
    ns.ip(&["link", "set", "dev", dev, "mtu", &mtu, "up"])?;
    if let Some(a) = v4 {
        ns.ip(&["addr", "add", &format!("{a}/24"), "dev", dev])?;
        ns.ip(&["route", "add", "default", "dev", dev])?;
    }
    if let Some(a) = v6 {
        ns.ip(&["-6", "addr", "add", &format!("{a}/64"), "dev", dev, "nodad"])?;
        ns.ip(&["-6", "route", "add", "default", "dev", dev])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v6only_client_has_no_ipv4_and_server_no_ipv6() {
        let a = Addressing::new(IpMode::V6Only);
        assert!(a.client_v4.is_none() && a.server_v6.is_none());
        assert!(a.is_client(CLIENT_V6.into()) && !a.is_client(CLIENT_V4.into()));
        assert!(a.is_server(SERVER_V4.into()) && !a.is_server(SERVER_V6.into()));
        let d = Addressing::new(IpMode::V4);
        assert!(d.is_client(CLIENT_V4.into()) && d.is_server(SERVER_V6.into()));
        assert_eq!(d.client_addr(), IpAddr::from(CLIENT_V4));
        assert_eq!(
            Addressing::new(IpMode::V6).client_addr(),
            IpAddr::from(CLIENT_V6)
        );
    }
}
