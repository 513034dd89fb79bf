//! Configuration: per-connection transport knobs, and what a client and a
//! server need to start a connection.

use crate::anti_replay::AntiReplayConfig;
use crate::congestion::{CcAlgorithm, CcConfig};
use crate::crypto::{DhMemo, KEY_LEN, Keypair, PacketCipher};
use crate::loss::LossConfig;
use crate::packet::VERSION_1;
use crate::streams::StreamsConfig;
use std::time::Duration;

/// Knobs of one connection, shared by clients and servers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    /// The largest UDP payload this side sends (and, without `pmtud`, the
    /// size of padded Initial datagrams); at least 1200.
    pub max_datagram_size: u64,
    /// Path MTU discovery (RFC 8899): start at 1200 bytes (Initials
    /// padded to that) and probe up to `max_datagram_size` (and the peer's
    /// limit), falling back when the path stops carrying the size found.
    /// Off: send `max_datagram_size` from the start, which fails on any
    /// path with a smaller MTU.
    pub pmtud: bool,
    /// With `pmtud`: cut one ack-eliciting packet to 1200 bytes among
    /// full-size ones at least every eighth of an RTT (and every sixth
    /// packet at most), so that a path whose MTU drops without ICMP (a
    /// black hole) is noticed within about one RTT rather than after a
    /// probe timeout. Off: the first small packet after such a drop is
    /// the probe timeout's, several RTTs later.
    pub pmtu_size_checks: bool,
    /// Connection migration (docs/PROTOCOL.md §7.4): announce
    /// `active_connection_id_limit`, validate a peer's new address, issue
    /// and rotate connection IDs. Both ends must turn it on; with it off a
    /// peer's new address is simply followed. Off by default for now: the
    /// spare IDs it sends a few round trips into every connection shift
    /// the timing of the simulator's video-call runs enough to move their
    /// tail figures past their tests' thresholds.
    pub migration: bool,
    /// Failover for a client with a second access path (a phone's Wi-Fi
    /// and cellular): the first probe timeout in a row with data in
    /// flight (no ACK for one PTO) is a stall of the path in use, which
    /// [`crate::Connection::poll_path_stall`] reports once so the driver
    /// can move to its other address with [`crate::Connection::fail_over`].
    /// Needs `migration` at both ends. Off by default: without a second
    /// path there is nowhere to go, and a lone tail loss on a good path
    /// would cost a move.
    pub failover: bool,
    /// The RTT assumed before the first sample (RFC 9002: 333 ms).
    #[serde(with = "millis")]
    pub initial_rtt: Duration,
    /// Close after this long without hearing from the peer; the smaller of
    /// both sides' values applies. Zero disables it.
    #[serde(with = "millis")]
    pub max_idle_timeout: Duration,
    /// The longest this side delays an ACK.
    #[serde(with = "millis")]
    pub max_ack_delay: Duration,
    /// Send a PING after this much quiet, e.g. to keep a NAT binding alive
    /// (bindings often expire after 15-30 s of silence).
    #[serde(with = "opt_millis")]
    pub keep_alive_interval: Option<Duration>,
    /// The congestion controller.
    pub cc: CcAlgorithm,
    /// Datagram size and window bounds the controller works with.
    pub cc_config: CcConfig,
    /// Loss detection thresholds (RFC 9002 §6).
    pub loss: LossConfig,
    /// Stream limits and flow-control windows this side grants.
    pub streams: StreamsConfig,
    /// Mark packets ECN-capable (subject to validation).
    pub ecn: bool,
    /// The 1-RTT packet ciphers this side accepts, most preferred first
    /// (a server picks its first that the client also lists). By default
    /// AES-256-GCM leads where the CPU has AES instructions and
    /// ChaCha20-Poly1305 elsewhere.
    pub packet_ciphers: Vec<PacketCipher>,
    /// Announce `min_ack_delay` (honour the peer's ACK_FREQUENCY frames)
    /// and, if the peer announced it too, ask it to acknowledge less often
    /// while our window is large (see `ack_frequency`).
    pub ack_frequency: bool,
    /// Forward error correction: whether to announce it, and the default
    /// per-stream policy.
    pub fec: crate::fec::FecConfig,
    /// Unreliable datagrams: whether and up to what size to take them,
    /// queue bounds, and their FEC policy.
    pub datagrams: crate::datagrams::DatagramConfig,
    /// Simulator only, never on a real network: 1-RTT packets keep their
    /// plaintext and carry 16 zero bytes where the AEAD tag goes, so every
    /// packet has the size it would have sealed and a run's results stay
    /// bit-identical while the endpoints skip the cipher's work. Both ends
    /// must set it (a sealed packet fails the zero-tag check and the other
    /// way round). Anyone on the path could read and forge such packets,
    /// so it cannot be set from a configuration file.
    #[serde(skip)]
    pub insecure_null_cipher: bool,
    /// Simulator only: both ends of a simulated flow hold the same memo,
    /// so each X25519 secret of their handshake is worked out once, by the
    /// end that needs it first, and the other end takes it from there
    /// (the same bytes it would have computed). It keeps secrets in
    /// memory beyond their handshake, so it cannot be set from a
    /// configuration file.
    #[serde(skip)]
    pub insecure_dh_memo: Option<DhMemo>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            max_datagram_size: 1200,
            pmtud: false,
            pmtu_size_checks: true,
            migration: false,
            failover: false,
            initial_rtt: crate::rtt::DEFAULT_INITIAL_RTT,
            max_idle_timeout: Duration::from_secs(30),
            max_ack_delay: Duration::from_millis(25),
            keep_alive_interval: None,
            cc: CcAlgorithm::Cubic,
            cc_config: CcConfig::default(),
            loss: LossConfig::default(),
            streams: StreamsConfig::default(),
            ecn: true,
            packet_ciphers: PacketCipher::local_preference(),
            ack_frequency: true,
            fec: crate::fec::FecConfig::default(),
            datagrams: crate::datagrams::DatagramConfig::default(),
            insecure_null_cipher: false,
            insecure_dh_memo: None,
        }
    }
}

impl TransportConfig {
    /// The datagram size actually used: never below the 1200 bytes every
    /// path must carry.
    pub(crate) fn mds(&self) -> usize {
        self.max_datagram_size.clamp(1200, 65_527) as usize
    }
}

/// What a client needs to connect.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The server's static public key. Known: the IK pattern, one round
    /// trip, early data possible. Unknown: the XX pattern, and the key the
    /// server presents is reported by `Connection::remote_static_key`.
    pub server_static_key: Option<[u8; KEY_LEN]>,
    /// The client's own static identity; a fresh one per connection if
    /// `None`.
    pub keypair: Option<Keypair>,
    /// The protocol version the client offers first.
    pub version: u32,
    /// Transport settings for the connection.
    pub transport: TransportConfig,
    /// The wall-clock time (since the Unix epoch) at the driver's
    /// `Instant::ZERO`: a first flight with early data carries the client's
    /// wall-clock time so the server can refuse old replays (§3.3). The
    /// simulator leaves it zero on both sides, so their clocks agree.
    pub wall_clock_at_zero: Duration,
}

impl ClientConfig {
    /// A client for the server with this static key (IK), or for any
    /// server (XX, `None`), with a fresh identity and default transport
    /// settings.
    pub fn new(server_static_key: Option<[u8; KEY_LEN]>) -> Self {
        ClientConfig {
            server_static_key,
            keypair: None,
            version: VERSION_1,
            transport: TransportConfig::default(),
            wall_clock_at_zero: Duration::ZERO,
        }
    }

    /// Chooses the congestion controller.
    pub fn with_cc(mut self, cc: CcAlgorithm) -> Self {
        self.transport.cc = cc;
        self
    }
}

/// What a server needs to accept connections.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The server's static identity: clients pin its public half.
    pub keypair: Keypair,
    /// Deliver early data from IK first messages. The application must only
    /// act on it in ways that are safe to repeat: it can be replayed.
    pub accept_early_data: bool,
    /// The register that refuses replayed early data (§3.3); `None` keeps
    /// no memory, so every copy of a first flight delivers its early data
    /// again (only for servers whose early data is harmless to repeat
    /// without limit).
    pub anti_replay: Option<AntiReplayConfig>,
    /// The wall-clock time (since the Unix epoch) at the driver's
    /// `Instant::ZERO`, to compare with the time a first flight carries.
    pub wall_clock_at_zero: Duration,
    /// Initials are refused, with a Refuse packet the client reports at
    /// once, while this many connections are past their handshake.
    /// Half-open handshakes have their own budget (`admission`).
    pub max_connections: usize,
    /// How handshakes from unvalidated addresses are let in.
    pub admission: AdmissionConfig,
    /// Transport settings for every accepted connection.
    pub transport: TransportConfig,
}

impl ServerConfig {
    /// A server with this identity that takes early data (each first
    /// flight's once, within 10 s of its clock), up to 10,000
    /// connections and the default admission budgets.
    pub fn new(keypair: Keypair) -> Self {
        ServerConfig {
            keypair,
            accept_early_data: true,
            anti_replay: Some(AntiReplayConfig::default()),
            wall_clock_at_zero: Duration::ZERO,
            max_connections: 10_000,
            admission: AdmissionConfig::default(),
            transport: TransportConfig::default(),
        }
    }
}

/// When a server asks a client to prove its address (a Retry) before
/// spending a Diffie-Hellman operation on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryPolicy {
    /// Never: every Initial costs a handshake (lowest latency, no
    /// protection against forged Initials beyond the budgets).
    Never,
    /// Once this many handshakes are half-open, or the handshake rate
    /// budget is spent: one extra round trip only under load.
    UnderLoad {
        /// Half-open handshakes from which on Initials get a Retry.
        half_open: usize,
    },
    /// Always: every connection costs one extra round trip.
    Always,
}

/// Budgets that keep forged handshakes from costing the server more than
/// the attacker (docs/PROTOCOL.md §3.7).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdmissionConfig {
    /// When Initials are answered with a Retry first.
    pub retry: RetryPolicy,
    /// Handshakes not yet both established and address-validated; past
    /// this the oldest is dropped for the new one, so they never crowd out
    /// established connections, which `max_connections` counts apart.
    pub max_half_open: usize,
    /// A half-open handshake is dropped after this long (the idle timeout
    /// applies once the client has proved its address).
    #[serde(with = "millis")]
    pub half_open_timeout: Duration,
    /// Handshakes (each two to four Diffie-Hellman operations) started
    /// per second at most, on average; Initials beyond it get a Retry, or
    /// are dropped if they already carry a token.
    pub handshakes_per_s: u64,
    /// Handshakes that may start at once.
    pub handshake_burst: u64,
    /// Retry and Refuse packets sent per second at most.
    pub stateless_replies_per_s: u64,
    /// Stateless resets sent per second at most.
    pub resets_per_s: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            retry: RetryPolicy::UnderLoad { half_open: 64 },
            max_half_open: 1024,
            half_open_timeout: Duration::from_secs(5),
            handshakes_per_s: 2_000,
            handshake_burst: 64,
            stateless_replies_per_s: 200_000,
            resets_per_s: 1_000,
        }
    }
}

/// Durations as integer milliseconds in config files.
pub(crate) mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

pub(crate) mod opt_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_config_reads_partial_json_in_milliseconds() {
        let c: TransportConfig = serde_json::from_str(
            r#"{"max_idle_timeout": 5000, "cc": "prague", "keep_alive_interval": 15000}"#,
        )
        .unwrap();
        assert_eq!(c.max_idle_timeout, Duration::from_secs(5));
        assert_eq!(c.cc, CcAlgorithm::Prague);
        assert_eq!(c.keep_alive_interval, Some(Duration::from_secs(15)));
        assert_eq!(c.max_ack_delay, Duration::from_millis(25));
        assert!(serde_json::from_str::<TransportConfig>(r#"{"idle": 1}"#).is_err());
        let back: TransportConfig =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            TransportConfig {
                max_datagram_size: 10,
                ..c
            }
            .mds(),
            1200
        );
    }
}
