//! What an endpoint needs: socket options, transport defaults, and (for a
//! server) its identity.

use brisk_proto::TransportConfig;
use brisk_proto::crypto::Keypair;
use std::net::SocketAddr;
use std::time::Duration;

/// The largest UDP payload path MTU discovery probes for over IPv4 (it
/// starts at 1200): a 1500-byte Ethernet MTU minus 20 (IPv4) and 8 (UDP)
/// bytes of headers,
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
    /// Server: the most connections that get a UDP socket of their own
    /// (bound beside the listening socket, connected to the client), so
    /// their datagrams never queue behind new clients' and forged ones
    /// in the listening socket's buffer; the rest share the listening
    /// socket. Each costs one descriptor, and at most half the process's
    /// descriptor limit is used. Zero switches them off.
    pub connected_sockets: usize,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            gso: true,
            gro: true,
            recv_buffer_bytes: 4 << 20,
            send_buffer_bytes: 4 << 20,
            v6_only: false,
            connected_sockets: 65_536,
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
    /// Heap the server's connections may pin through their buffers
    /// together: each connection's send budget plus its receive window.
    /// `Some`: windows and send budgets shrink so that `max_connections`
    /// of them fit (down to [`MIN_CONNECTION_BUFFER`] each; below that,
    /// fewer connections are admitted). `None`: each connection has the
    /// transport's own limits (4 MiB each way by default).
    pub memory_budget_bytes: Option<u64>,
    pub endpoint: EndpointConfig,
}

/// The smallest send budget and receive window a memory budget gives a
/// connection: a few dozen full datagrams, enough for a request and its
/// response to flow without a window update in between.
pub const MIN_CONNECTION_BUFFER: u64 = 64 << 10;

impl ServerConfig {
    pub fn new(listen: SocketAddr, keypair: Keypair) -> Self {
        ServerConfig {
            listen,
            keypair,
            accept_early_data: true,
            max_connections: 10_000,
            admission: brisk_proto::AdmissionConfig::default(),
            memory_budget_bytes: None,
            endpoint: EndpointConfig::default(),
        }
    }

    /// The transport settings and connection limit under the memory
    /// budget: `(transport, max_connections)`.
    pub fn within_budget(&self) -> (TransportConfig, usize) {
        let mut transport = self.endpoint.transport.clone();
        let Some(budget) = self.memory_budget_bytes else {
            return (transport, self.max_connections);
        };
        let connections = self.max_connections.max(1) as u64;
        // Half of each connection's share for sending, half for receiving.
        let each_way = (budget / connections / 2).max(MIN_CONNECTION_BUFFER);
        let max_connections = (budget / (2 * each_way)).min(connections) as usize;
        let s = &mut transport.streams;
        s.connection_send_buffer_limit = s.connection_send_buffer_limit.min(each_way);
        s.send_buffer_limit = s.send_buffer_limit.min(s.connection_send_buffer_limit);
        s.connection_receive_window = s.connection_receive_window.min(each_way);
        s.stream_receive_window = s.stream_receive_window.min(s.connection_receive_window);
        // Windows and send buffers that tune themselves stay within the
        // share too.
        s.send_buffer_limit_max = s.send_buffer_limit_max.min(s.connection_send_buffer_limit);
        s.connection_receive_window_max = s.connection_receive_window_max.min(each_way);
        s.stream_receive_window_max = s
            .stream_receive_window_max
            .min(s.connection_receive_window_max);
        (transport, max_connections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_with(budget: Option<u64>, max_connections: usize) -> ServerConfig {
        let mut c = ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            Keypair::from_private([1; 32]),
        );
        c.memory_budget_bytes = budget;
        c.max_connections = max_connections;
        c
    }

    #[test]
    fn a_memory_budget_shrinks_windows_then_admits_fewer_connections() {
        let defaults = TransportConfig::default().streams;
        let (t, n) = server_with(None, 10_000).within_budget();
        assert_eq!((t.streams, n), (defaults.clone(), 10_000));
        // 1 GiB over 100 connections leaves the 4 MiB defaults alone, and
        // bounds what windows and buffers may grow to by the share (about
        // 5 MiB each way).
        let (t, n) = server_with(Some(1 << 30), 100).within_budget();
        let each_way = (1u64 << 30) / 100 / 2;
        let bounded = brisk_proto::streams::StreamsConfig {
            send_buffer_limit_max: defaults.connection_send_buffer_limit,
            connection_receive_window_max: each_way,
            stream_receive_window_max: each_way,
            ..defaults.clone()
        };
        assert_eq!((t.streams, n), (bounded, 100));
        // 1 GiB over 10,000: about 52 KiB each way is below the floor, so
        // the floor holds and 8,192 connections fit.
        let (t, n) = server_with(Some(1 << 30), 10_000).within_budget();
        assert_eq!(
            t.streams.connection_send_buffer_limit,
            MIN_CONNECTION_BUFFER
        );
        assert_eq!(t.streams.connection_receive_window, MIN_CONNECTION_BUFFER);
        assert_eq!(t.streams.send_buffer_limit, MIN_CONNECTION_BUFFER);
        assert_eq!(t.streams.stream_receive_window, MIN_CONNECTION_BUFFER);
        assert_eq!(n, 8_192);
        // 4 GiB over 1,000: 2 MiB each way, all 1,000 admitted.
        let (t, n) = server_with(Some(4 << 30), 1_000).within_budget();
        let each_way = (4u64 << 30) / 1_000 / 2;
        assert_eq!(t.streams.connection_receive_window, each_way);
        assert_eq!(
            t.streams.stream_receive_window,
            defaults.stream_receive_window
        );
        assert_eq!(n, 1_000);
        assert!(n as u64 * 2 * each_way <= 4 << 30);
    }

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
