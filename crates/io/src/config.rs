//! What an endpoint needs: socket options, transport defaults, and (for a
//! server) its identity.

use brisk_proto::TransportConfig;
use brisk_proto::crypto::Keypair;
use std::net::SocketAddr;
use std::time::Duration;

/// The largest UDP payload sent over IPv4 until path MTU discovery lands:
/// a 1500-byte Ethernet MTU minus 20 (IPv4) and 8 (UDP) bytes of headers,
/// and 20 more for one layer of tunnelling (PPPoE, GRE, VXLAN take 8-50).
pub const DEFAULT_DATAGRAM_V4: u64 = 1452;
/// The same over IPv6, whose header is 20 bytes larger.
pub const DEFAULT_DATAGRAM_V6: u64 = 1432;

/// Socket-level switches; the defaults use every offload the kernel has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConfig {
    /// Send runs of equal datagrams as one UDP GSO buffer (Linux 4.18+).
    pub gso: bool,
    /// Receive coalesced datagrams with UDP GRO (Linux 5.0+).
    pub gro: bool,
    /// Requested SO_RCVBUF / SO_SNDBUF; the kernel caps them at
    /// net.core.rmem_max / wmem_max.
    pub recv_buffer_bytes: usize,
    pub send_buffer_bytes: usize,
    /// For an IPv6 wildcard bind: `false` (default) also serves IPv4
    /// through v4-mapped addresses (dual stack).
    pub v6_only: bool,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            gso: true,
            gro: true,
            recv_buffer_bytes: 4 << 20,
            send_buffer_bytes: 4 << 20,
            v6_only: false,
        }
    }
}

/// Settings shared by client and server endpoints.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Transport knobs for connections this endpoint opens or accepts.
    /// Its `max_datagram_size` is overridden by the field below.
    pub transport: TransportConfig,
    /// `None`: [`DEFAULT_DATAGRAM_V4`] or [`DEFAULT_DATAGRAM_V6`] by the
    /// peer's (client) or the listening socket's (server) address family.
    pub max_datagram_size: Option<u64>,
    pub socket: SocketConfig,
    /// How long `connect` waits for the handshake before giving up.
    pub handshake_timeout: Duration,
    /// Longest time the endpoint task polls its socket without sleeping
    /// while a reply is imminent (a connection has ack-eliciting data in
    /// flight, its application waits to read, and the path's minimum RTT
    /// fits in this time); zero never spins. Saves the wake-up of a
    /// sleeping thread (tens of microseconds on an idle VM) at the cost of
    /// CPU while spinning. See [`crate::busy_poll`].
    pub busy_poll: Duration,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            transport: TransportConfig::default(),
            max_datagram_size: None,
            socket: SocketConfig::default(),
            handshake_timeout: Duration::from_secs(5),
            busy_poll: crate::busy_poll::DEFAULT_BUSY_POLL,
        }
    }
}

impl EndpointConfig {
    /// The datagram size for a path to or from `addr`, before what the
    /// local route allows is taken into account.
    pub fn datagram_size_for(&self, addr: SocketAddr) -> u64 {
        self.max_datagram_size.unwrap_or(match addr {
            SocketAddr::V4(_) => DEFAULT_DATAGRAM_V4,
            SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_some() => DEFAULT_DATAGRAM_V4,
            SocketAddr::V6(_) => DEFAULT_DATAGRAM_V6,
        })
    }

    /// The default size capped by `mtu` (the local route's or the smallest
    /// interface's), never below 1200; a size set explicitly is kept.
    pub fn datagram_size_within(&self, addr: SocketAddr, mtu: Option<usize>) -> u64 {
        let size = self.datagram_size_for(addr);
        match (self.max_datagram_size, mtu) {
            (None, Some(mtu)) => size
                .min(crate::socket::payload_for_mtu(mtu, addr) as u64)
                .max(1200),
            _ => size,
        }
    }
}

/// A server endpoint: where it listens and who it is.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub keypair: Keypair,
    /// Deliver early data from IK first flights (replayable: act on it
    /// only idempotently).
    pub accept_early_data: bool,
    /// Connections past their handshake the server takes; past this a
    /// client is refused at once, with a reason.
    pub max_connections: usize,
    /// Retry, half-open and rate budgets against forged handshakes.
    pub admission: brisk_proto::AdmissionConfig,
    pub endpoint: EndpointConfig,
}

impl ServerConfig {
    pub fn new(listen: SocketAddr, keypair: Keypair) -> Self {
        ServerConfig {
            listen,
            keypair,
            accept_early_data: true,
            max_connections: 10_000,
            admission: brisk_proto::AdmissionConfig::default(),
            endpoint: EndpointConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_size_follows_the_address_family_unless_set() {
        let c = EndpointConfig::default();
        assert_eq!(c.datagram_size_for("192.0.2.1:1".parse().unwrap()), 1452);
        assert_eq!(
            c.datagram_size_for("[::ffff:192.0.2.1]:1".parse().unwrap()),
            1452
        );
        assert_eq!(
            c.datagram_size_for("[2001:db8::1]:1".parse().unwrap()),
            1432
        );
        let fixed = EndpointConfig {
            max_datagram_size: Some(1200),
            ..EndpointConfig::default()
        };
        assert_eq!(
            fixed.datagram_size_for("[2001:db8::1]:1".parse().unwrap()),
            1200
        );
        // 1452 + 20 (IPv4) + 8 (UDP) and 1432 + 40 (IPv6) + 8 both leave 20
        // bytes of a 1500-byte MTU for one tunnel header.
        assert_eq!(DEFAULT_DATAGRAM_V4 + 28, DEFAULT_DATAGRAM_V6 + 48);
    }
}
