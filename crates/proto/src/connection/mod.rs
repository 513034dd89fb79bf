//! One connection: a sans-IO state machine from the first handshake packet
//! to the end of the draining period.
//!
//! Methods, by kind (the quinn-proto convention):
//! - **inputs** `handle_datagram(now, remote, ecn, bytes)` (or
//!   `handle_datagram_owned` with a `BytesMut` it decrypts in place) and
//!   `handle_timeout(now)`;
//! - **outputs** `poll_transmit(now, max_datagrams, buf)` (appends one
//!   datagram or a GSO train to `buf` per call; call until `None`),
//!   `poll_timeout()` (when to call `handle_timeout` next) and
//!   `poll_event()`;
//! - **application** the stream calls (`open_stream`, `write`, `read`, ...),
//!   `send_early`, `close`;
//! - **getters** `stats`, `state`, `remote_address`, ...
//!
//! After any input or application call, drain `poll_transmit`, then read
//! `poll_timeout` again: every call may change the next wake-up.
//!
//! Files: [`timer`] the timer table, `recv` datagrams, packets and frames
//! in, `send` datagrams and GSO trains out, [`packet_builder`] one 1-RTT
//! packet from frame sources in priority order, `stateless` what the endpoint hands on
//! from packets that belong to no connection state (Retry, Refuse,
//! stateless reset), `fec` repair and rebuilt packets, `handshake_copy`
//! the second copy of a handshake message under FEC, `datagrams`
//! unreliable datagrams in and out, `pmtu` path MTU probes and Packet Too
//! Big messages, `tests` ACK_FREQUENCY between two endpoints.

#[cfg(test)]
mod datagram_tests;
mod datagrams;
mod fec;
#[cfg(test)]
mod fec_tests;
mod handshake_copy;
#[cfg(test)]
mod handshake_copy_tests;
#[cfg(test)]
mod handshake_errors;
mod migration;
pub(crate) mod packet_builder;
mod pmtu;
mod recv;
#[cfg(test)]
mod rx_pool_tests;
mod send;

pub use send::MAX_TRAIN_BYTES;
#[cfg(test)]
mod builder_tests;
mod closing;
mod stateless;
#[cfg(test)]
mod tests;
pub(crate) mod timer;

use crate::ack_frequency::AckFrequency;
use crate::ack_tracker::AckTracker;
use crate::amplification::Allowance;
use crate::anti_replay::{AntiReplay, Verdict};
use crate::config::{ClientConfig, ServerConfig, TransportConfig};
use crate::congestion::{CcAlgorithm, Controller, SendView};
use crate::crypto::{KEY_LEN, Keypair, PacketCipher, PacketKey};
use crate::ecn_validation::{EcnState, EcnValidator};
use crate::error::{ConnectError, ConnectionError, EarlyDataError};
use crate::handshake::{self, Handshake, HandshakeError, HandshakePayload, Pattern};
use crate::loss::LossDetection;
use crate::pacing::Pacer;
use crate::packet::{ConnectionId, LongType, SUPPORTED_VERSIONS};
use crate::qlog::QlogSink;
use crate::rtt::RttEstimator;
use crate::sent_packets::{SentPacket, SentPackets};
use crate::stats::{ConnectionStats, DropStats};
use crate::streams::{
    PeerLimits, Priority, ReadChunk, ReadResult, Side, StreamError, StreamEvent, StreamId, Streams,
};
use crate::transport_params::TransportParams;
use crate::varint;
use brisk_time::{Instant, earliest};
use brisk_wire::Ecn;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use timer::{Timer, TimerTable};

/// The shortest silence of a sending peer before we PING it
/// (`Connection::silence_deadline`): longer than any pause a sender's own
/// probe timeout leaves on a working path, so a healthy transfer never
/// sees one.
const SILENCE_BEFORE_PING: Duration = Duration::from_secs(1);

/// Where and how to send what [`Connection::poll_transmit`] (or
/// [`crate::Endpoint::poll_transmit`]) appended to the caller's buffer:
/// one datagram, or a GSO train of datagrams `segment_bytes` long of which
/// only the last may be shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where the datagrams go.
    pub destination: SocketAddr,
    /// The ECN codepoint for the IP header, chosen by the congestion
    /// controller and vetted by ECN validation; the same for every
    /// datagram of a train.
    pub ecn: Ecn,
    /// Bytes appended, all datagrams together.
    pub len_bytes: usize,
    /// The length of each datagram but the last; `len_bytes` for one.
    pub segment_bytes: usize,
}

impl Transmit {
    /// How many datagrams the train holds.
    pub fn datagrams(&self) -> usize {
        self.len_bytes.div_ceil(self.segment_bytes.max(1))
    }
}

/// Something the application should hear about.
///
/// A word-sized tag: with a byte tag, each move of an event copied the
/// seven bytes after it as two overlapping halves, which the processor
/// cannot forward from the stores that had just written them (a stall
/// on every event handed to the application).
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(u64)]
pub enum Event {
    /// The handshake completed: streams can carry data both ways.
    Connected,
    /// Something happened on a stream.
    Stream(StreamEvent),
    /// Server only: the client's first flight carried early data on this
    /// stream. It may be a replay; act on it only idempotently.
    EarlyData {
        /// The stream the early data arrived on.
        stream: StreamId,
        /// Bytes of early data on it.
        len_bytes: u64,
    },
    /// The connection failed or the peer closed it.
    ConnectionLost(ConnectionError),
    /// The connection is gone for good (after closing or draining); it can
    /// be dropped.
    Closed,
    /// Unreliable datagrams wait to be read with
    /// [`Connection::recv_datagram`]; raised when the first arrives into
    /// an empty queue, so read until it returns `None`.
    DatagramsReadable,
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// No 1-RTT keys yet.
    Handshake,
    /// The handshake is done: 1-RTT keys exist and streams carry data.
    Established,
    /// We sent CONNECTION_CLOSE and answer anything with it again.
    Closing,
    /// The peer closed; we stay quiet until the period ends.
    Draining,
    /// Closed for good; nothing more will be sent or received.
    Drained,
}

/// Bytes the caller declares safe to process more than once. Early data
/// can be captured and replayed by an attacker, so only requests whose
/// repetition does no harm (a read, a lookup) belong in it.
#[derive(Debug, Clone, Copy)]
pub struct Idempotent<'a>(&'a [u8]);

impl<'a> Idempotent<'a> {
    /// The caller asserts that processing `data` twice is harmless.
    pub fn declare(data: &'a [u8]) -> Self {
        Idempotent(data)
    }
}

/// A CONNECTION_CLOSE we send.
#[derive(Debug, Clone)]
struct CloseInfo {
    code: u64,
    /// `Some` for transport errors.
    frame_type: Option<u64>,
    reason: Vec<u8>,
}

/// Handshake book-keeping.
#[derive(Debug)]
struct HandshakeProgress {
    noise: Option<Handshake>,
    pattern: Pattern,
    /// Our last message as a long packet's payload (unpadded), resent until
    /// the peer is known to have it.
    last_msg: Option<(LongType, Vec<u8>)>,
    send_pending: bool,
    first_sent_at: Option<Instant>,
    last_sent_at: Option<Instant>,
    resent: bool,
    pto_count: u32,
    next_pn: u64,
    /// Where our last message is in its first transmission and copy.
    copy: handshake_copy::HandshakeCopy,
    /// The peer holds our last message: we read the final message, or
    /// authenticated a 1-RTT packet from the peer.
    confirmed: bool,
    done_frame_pending: bool,
    early: Option<(StreamId, Vec<u8>)>,
    /// Client: the early data is all of its stream (finished before the
    /// first flight left).
    early_fin: bool,
    local_params: TransportParams,
    /// The 1-RTT cipher, once agreed.
    cipher: Option<PacketCipher>,
    /// Client: Retry packets acted on.
    retries: u8,
    /// Client: the wall-clock time at `Instant::ZERO`, for the time its
    /// first flight with early data carries.
    wall_clock_at_zero: Duration,
}

/// Bytes of a first flight that early data may fill.
pub(crate) const MAX_EARLY_DATA: usize = 900;

/// The shortest ack delay we keep to when a peer asks: our timers are
/// trusted to about a millisecond on real systems.
pub(crate) const MIN_ACK_DELAY: Duration = Duration::from_millis(1);

/// One connection's sans-IO state machine: datagrams and the time go in
/// (`handle_datagram`, `handle_timeout`), datagrams, timers and events come
/// out (`poll_transmit`, `poll_timeout`, `poll_event`). It never reads a
/// clock or touches a socket.
pub struct Connection {
    side: Side,
    config: TransportConfig,
    version: u32,
    state: ConnState,
    local_cid: ConnectionId,
    remote_cid: ConnectionId,
    /// The destination ID of the client's first Initial.
    initial_dcid: ConnectionId,
    remote: SocketAddr,
    hs: HandshakeProgress,
    /// (send, receive) 1-RTT keys.
    keys: Option<(PacketKey, PacketKey)>,
    /// Buffers 1-RTT packets are decrypted into, oldest first. A packet
    /// whose STREAM data the streams keep as slices (see `streams::Piece`)
    /// pins its buffer until the reader drops them; the oldest buffer is
    /// reused once it is free, so a reader that keeps up costs no
    /// allocation per packet. Each remembers the room it was made with:
    /// one made before path MTU discovery raised the datagram size cannot
    /// take a full datagram any more.
    rx_bufs: VecDeque<recv::RxBuf>,
    /// Packets an ACK frame just acknowledged, kept between ACKs so taking
    /// them out of the sent record allocates nothing.
    acked_scratch: Vec<(u64, SentPacket)>,
    peer_params: Option<TransportParams>,
    remote_static: Option<[u8; KEY_LEN]>,
    /// Server: the client proved it receives at its address.
    validated: bool,
    /// Server, until validated: what may be sent to the client's address,
    /// shared with its other unvalidated connections.
    allowance: Allowance,
    /// Server: the idle timeout while the handshake is half-open (not yet
    /// both established and validated).
    half_open_timeout: Option<Duration>,
    next_pn: u64,
    /// AEAD blocks sealed under our 1-RTT key, against the cipher's
    /// confidentiality limit.
    sealed_blocks: u64,
    sent: SentPackets,
    acks: AckTracker,
    loss: LossDetection,
    rtt: RttEstimator,
    cc: Box<dyn Controller>,
    pacer: Pacer,
    /// What we ask of the peer's ACKs; `None` unless both sides announced
    /// `min_ack_delay`.
    ack_frequency: Option<AckFrequency>,
    ecn: EcnValidator,
    streams: Streams,
    probes_pending: u8,
    ping_pending: bool,
    close: Option<CloseInfo>,
    close_pending: bool,
    /// Unprompted repeats of our CONNECTION_CLOSE still to come (see
    /// `closing.rs`).
    close_repeats_left: u8,
    idle_timeout: Duration,
    peer_max_ack_delay: Duration,
    /// An ack-eliciting packet left since we last received one (RFC 9000
    /// §10.1: only the first such packet restarts the idle timer).
    eliciting_sent_since_rx: bool,
    /// When the peer was last heard from, and whether that packet carried
    /// stream data (the peer was sending, not only answering or probing).
    last_heard: Option<(Instant, bool)>,
    /// When an ACK last acknowledged something new.
    last_newly_acked: Option<Instant>,
    timers: TimerTable,
    /// When `update_timers` last ran. Its inputs change only on input
    /// (datagrams, timeouts) and when a packet leaves, each of which ends
    /// by running it again, so a `poll_transmit` that sends nothing at that
    /// same instant may skip it.
    timers_updated_at: Option<Instant>,
    events: VecDeque<Event>,
    stats: ConnectionStats,
    qlog: Option<Box<dyn QlogSink>>,
    last_slow_start: bool,
    last_ecn_state: EcnState,
    /// The codepoint ECN validation last settled on, as told to the
    /// congestion controller (`Controller::set_path_ecn`).
    path_ecn: Ecn,
    /// Forward error correction, sending side: present when configured
    /// (it holds the streams' policies), used once both sides announced
    /// `fec` (`fec_rx` is then present too).
    fec_tx: Option<crate::fec::FecSender>,
    /// Forward error correction, receiving side: present once both sides
    /// announced `fec`.
    fec_rx: Option<crate::fec::FecReceiver>,
    /// Unreliable datagrams waiting to be sent or read.
    datagrams: crate::datagrams::DatagramQueues,
    /// Path validation and connection IDs for address changes.
    migration: migration::Migration,
    /// Path MTU discovery (`TransportConfig::pmtud`).
    pmtu: crate::pmtu::Pmtud,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("side", &self.side)
            .field("state", &self.state)
            .field("local_cid", &self.local_cid)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

/// What the server learned from a client's Initial.
pub(crate) struct InitialInfo<'a> {
    pub version: u32,
    pub dcid: ConnectionId,
    pub scid: ConnectionId,
    pub pattern: Pattern,
    pub message: &'a [u8],
    pub datagram_len: usize,
    /// The Initial carried a valid retry token: the address is proved.
    pub address_validated: bool,
    /// What the client's address may still be sent.
    pub allowance: Allowance,
    /// Announced to the client for a stateless reset of this connection.
    pub reset_token: Option<[u8; crate::stateless_reset::RESET_TOKEN_LEN]>,
}

fn local_params(config: &TransportConfig, local_cid: ConnectionId) -> TransportParams {
    TransportParams {
        max_idle_timeout: config.max_idle_timeout,
        max_ack_delay: config.max_ack_delay,
        initial_max_data: config.streams.connection_receive_window,
        initial_max_stream_data: config.streams.stream_receive_window,
        initial_max_streams_bidi: config.streams.max_streams_bidi,
        initial_max_streams_uni: config.streams.max_streams_uni,
        source_cid: local_cid,
        original_dcid: None,
        max_udp_payload: config.mds() as u64,
        early_data_accepted: false,
        packet_ciphers: config.packet_ciphers.clone(),
        min_ack_delay: config
            .ack_frequency
            .then_some(MIN_ACK_DELAY.min(config.max_ack_delay)),
        stateless_reset_token: None,
        fec: config.fec.enabled,
        max_datagram_frame_size: config.datagrams.max_frame_bytes.filter(|&m| m > 0),
        active_connection_id_limit: config.migration.then_some(crate::cid::ACTIVE_CID_LIMIT),
        first_flight_time_ms: None,
        early_data_fin: false,
    }
}

impl Connection {
    #[allow(clippy::too_many_arguments)]
    fn new_common(
        now: Instant,
        side: Side,
        config: TransportConfig,
        version: u32,
        local_cid: ConnectionId,
        initial_dcid: ConnectionId,
        remote: SocketAddr,
        noise: Handshake,
    ) -> Self {
        let mut cc = config.cc.build(&config.cc_config);
        let preferred = if config.ecn { cc.ecn() } else { Ecn::NotEct };
        let ecn = EcnValidator::new(preferred, now);
        let path_ecn = ecn.ect();
        cc.set_path_ecn(path_ecn);
        let ecn_state = ecn.state();
        let pattern = noise.pattern();
        let mut stats = ConnectionStats {
            smoothed_rtt: config.initial_rtt,
            min_rtt: config.initial_rtt,
            latest_rtt: config.initial_rtt,
            rttvar: config.initial_rtt / 2,
            cwnd_bytes: cc.window(),
            ssthresh_bytes: None,
            bytes_in_flight: 0,
            pacing_rate_bps: 0,
            pacing_window_bytes: cc.pacing_window(),
            pacing: crate::stats::PacingStats::default(),
            datagrams_sent: 0,
            bytes_sent: 0,
            datagrams_received: 0,
            bytes_received: 0,
            packets_sent: 0,
            packets_received: 0,
            packets_lost: 0,
            bytes_lost: 0,
            packets_retransmitted: 0,
            stream_bytes_retransmitted: 0,
            stream_bytes_sent: 0,
            stream_bytes_received: 0,
            spurious_losses: 0,
            ptos: 0,
            probes_sent: 0,
            handshake_copies_sent: 0,
            congestion_events: 0,
            persistent_congestion_events: 0,
            ecn_sent: Default::default(),
            ecn_echoed: Default::default(),
            ecn_received: Default::default(),
            ecn_state,
            ecn_codepoint: ecn.codepoint(),
            early_data_sent_bytes: 0,
            early_data_received_bytes: 0,
            migrations: 0,
            paths_validated: 0,
            path_validations_failed: 0,
            path_stalls: 0,
            peer_failovers: 0,
            amplification_blocked: 0,
            ack_frames_sent: 0,
            ack_frequency_sent: 0,
            repair_packets_sent: 0,
            repair_bytes_sent: 0,
            packets_rebuilt: 0,
            app_datagrams: Default::default(),
            pmtu: Default::default(),
            dropped: DropStats::default(),
        };
        stats.ssthresh_bytes = cc.metrics().ssthresh_bytes;
        let mut conn = Connection {
            side,
            version,
            state: ConnState::Handshake,
            local_cid,
            remote_cid: initial_dcid,
            initial_dcid,
            remote,
            hs: HandshakeProgress {
                noise: Some(noise),
                pattern,
                last_msg: None,
                send_pending: false,
                first_sent_at: None,
                last_sent_at: None,
                resent: false,
                pto_count: 0,
                next_pn: 0,
                copy: handshake_copy::HandshakeCopy::First,
                confirmed: false,
                done_frame_pending: false,
                early: None,
                early_fin: false,
                local_params: local_params(&config, local_cid),
                cipher: None,
                retries: 0,
                wall_clock_at_zero: Duration::ZERO,
            },
            keys: None,
            rx_bufs: VecDeque::new(),
            acked_scratch: Vec::new(),
            peer_params: None,
            remote_static: None,
            validated: side == Side::Client,
            allowance: Allowance::default(),
            half_open_timeout: None,
            next_pn: 0,
            sealed_blocks: 0,
            sent: SentPackets::default(),
            acks: AckTracker::new(config.max_ack_delay),
            loss: LossDetection::new(config.loss),
            rtt: RttEstimator::new(config.initial_rtt),
            last_slow_start: cc.in_slow_start(),
            cc,
            pacer: Pacer::new(config.mds() as u64),
            ack_frequency: None,
            ecn,
            streams: Streams::new(side, config.streams.clone()),
            probes_pending: 0,
            ping_pending: false,
            close: None,
            close_pending: false,
            close_repeats_left: 0,
            idle_timeout: config.max_idle_timeout,
            peer_max_ack_delay: config.max_ack_delay,
            eliciting_sent_since_rx: false,
            last_heard: None,
            last_newly_acked: None,
            timers: TimerTable::default(),
            timers_updated_at: None,
            events: VecDeque::new(),
            stats,
            qlog: None,
            last_ecn_state: ecn_state,
            path_ecn,
            fec_tx: config
                .fec
                .enabled
                .then(|| crate::fec::FecSender::new(config.fec.clone())),
            fec_rx: None,
            datagrams: crate::datagrams::DatagramQueues::new(config.datagrams.clone()),
            migration: migration::Migration::new(local_cid, initial_dcid),
            pmtu: crate::pmtu::Pmtud::new(config.pmtud, config.pmtu_size_checks),
            config,
        };
        conn.restart_idle_timer(now);
        conn
    }

    /// A client connection; its first flight goes out at the first
    /// `poll_transmit`, so `send_early` may be called before that.
    pub(crate) fn new_client(
        now: Instant,
        config: &ClientConfig,
        local_cid: ConnectionId,
        initial_dcid: ConnectionId,
        remote: SocketAddr,
        seed: [u8; 32],
    ) -> Result<Self, ConnectError> {
        if !SUPPORTED_VERSIONS.contains(&config.version) {
            return Err(ConnectError::UnsupportedVersion(config.version));
        }
        let mut rng = ChaCha20Rng::from_seed(seed);
        let keypair = config
            .keypair
            .clone()
            .unwrap_or_else(|| Keypair::generate(&mut rng));
        let pattern = if config.server_static_key.is_some() {
            Pattern::Ik
        } else {
            Pattern::Xx
        };
        let prologue = handshake::prologue(config.version, pattern, &initial_dcid, &local_cid);
        let mut noise_seed = [0u8; 32];
        rng.fill_bytes(&mut noise_seed);
        let noise = Handshake::initiator(
            pattern,
            &keypair,
            config.server_static_key.as_ref(),
            &prologue,
            noise_seed,
            config.transport.insecure_dh_memo.clone(),
        )?;
        let mut conn = Connection::new_common(
            now,
            Side::Client,
            config.transport.clone(),
            config.version,
            local_cid,
            initial_dcid,
            remote,
            noise,
        );
        conn.remote_static = config.server_static_key;
        conn.hs.wall_clock_at_zero = config.wall_clock_at_zero;
        conn.hs.send_pending = true;
        Ok(conn)
    }

    /// A server connection for a client's Initial whose handshake message
    /// was read successfully; anything else is an error and leaves no state.
    /// `replay` is the server's register of used first flights; `None`
    /// uses early data without one.
    pub(crate) fn new_server(
        now: Instant,
        config: &ServerConfig,
        local_cid: ConnectionId,
        initial: InitialInfo<'_>,
        remote: SocketAddr,
        seed: [u8; 32],
        replay: Option<&mut AntiReplay>,
    ) -> Result<Self, HandshakeError> {
        let prologue = handshake::prologue(
            initial.version,
            initial.pattern,
            &initial.dcid,
            &initial.scid,
        );
        let mut noise = Handshake::responder(
            initial.pattern,
            &config.keypair,
            &prologue,
            seed,
            config.transport.insecure_dh_memo.clone(),
        )?;
        let payload = HandshakePayload::parse(&noise.read(initial.message)?)?;
        if payload.params.source_cid != initial.scid {
            return Err(HandshakeError::SourceCidMismatch {
                header: initial.scid,
                params: payload.params.source_cid,
            });
        }
        // Our first preference that the client accepts.
        let cipher = config
            .transport
            .packet_ciphers
            .iter()
            .copied()
            .find(|c| payload.params.packet_ciphers.contains(c))
            .ok_or(HandshakeError::NoCommonCipher)?;
        let mut conn = Connection::new_common(
            now,
            Side::Server,
            config.transport.clone(),
            initial.version,
            local_cid,
            initial.dcid,
            remote,
            noise,
        );
        conn.remote_cid = initial.scid;
        conn.validated = initial.address_validated;
        conn.allowance = initial.allowance;
        if !conn.validated {
            conn.allowance.on_received(initial.datagram_len as u64);
        }
        conn.half_open_timeout = Some(config.admission.half_open_timeout);
        conn.stats.datagrams_received = 1;
        conn.stats.bytes_received = initial.datagram_len as u64;
        let flight_ms = payload.params.first_flight_time_ms;
        let early_fin = payload.params.early_data_fin;
        conn.apply_peer_params(payload.params);
        let mut accepted = false;
        if let Some((id, data)) = payload.early {
            let stream = StreamId(id);
            let fits = config.accept_early_data
                && initial.pattern == Pattern::Ik
                && stream.initiator() == Side::Client
                && stream.is_bidi();
            // The Noise message opens with the client's ephemeral key,
            // fresh per connection: with the flight's time it names the
            // flight in the register.
            let fresh = || {
                let Some(register) = replay else {
                    return true;
                };
                let server_ms = (config.wall_clock_at_zero + now.since_epoch()).as_millis() as u64;
                let ephemeral = initial.message.get(..KEY_LEN).unwrap_or(initial.message);
                register.check(server_ms, flight_ms, ephemeral) == Verdict::Fresh
            };
            if fits
                && fresh()
                && conn
                    .streams
                    .handle_stream_frame(stream, 0, &data, early_fin)
                    .is_ok()
            {
                accepted = true;
                conn.stats.early_data_received_bytes += data.len() as u64;
                conn.events.push_back(Event::EarlyData {
                    stream,
                    len_bytes: data.len() as u64,
                });
            }
        }
        conn.hs.cipher = Some(cipher);
        conn.hs.local_params.packet_ciphers = vec![cipher];
        conn.hs.local_params.original_dcid = Some(initial.dcid);
        conn.hs.local_params.early_data_accepted = accepted;
        conn.hs.local_params.stateless_reset_token = initial.reset_token;
        let reply = HandshakePayload {
            params: conn.hs.local_params.clone(),
            early: None,
        }
        .emit();
        let Some(noise) = conn.hs.noise.as_mut() else {
            return Err(HandshakeError::StateMissing);
        };
        let msg = noise.write(&reply)?;
        conn.hs.last_msg = Some((LongType::Handshake, hs_payload(None, &msg)));
        conn.hs.send_pending = true;
        conn.hs.copy = handshake_copy::HandshakeCopy::First;
        conn.remote_static = noise.remote_static();
        if noise.is_finished() {
            conn.on_handshake_complete(now);
        }
        // Half-open: the short timeout until the client proves itself.
        conn.restart_idle_timer(now);
        Ok(conn)
    }

    fn apply_peer_params(&mut self, p: TransportParams) {
        self.idle_timeout = match (self.config.max_idle_timeout, p.max_idle_timeout) {
            (Duration::ZERO, t) | (t, Duration::ZERO) => t,
            (a, b) => a.min(b),
        };
        self.peer_max_ack_delay = p.max_ack_delay;
        self.ack_frequency = p
            .min_ack_delay
            .filter(|_| self.config.ack_frequency)
            .map(|min| AckFrequency::new(min, p.max_ack_delay));
        self.streams.set_peer_limits(PeerLimits {
            max_streams_bidi: p.initial_max_streams_bidi,
            max_streams_uni: p.initial_max_streams_uni,
            max_data: p.initial_max_data,
            max_stream_data: p.initial_max_stream_data,
        });
        if p.fec && self.fec_tx.is_some() {
            self.fec_rx = Some(crate::fec::FecReceiver::default());
        }
        self.peer_params = Some(p);
        self.migration_params();
    }

    /// The FEC sender, once both sides announced `fec`.
    fn fec_active(&mut self) -> Option<&mut crate::fec::FecSender> {
        if self.fec_rx.is_some() {
            self.fec_tx.as_mut()
        } else {
            None
        }
    }

    /// Keys are in place: 1-RTT packets flow from here on.
    fn on_handshake_complete(&mut self, now: Instant) {
        let Some(noise) = self.hs.noise.take() else {
            return;
        };
        if self.remote_static.is_none() {
            self.remote_static = noise.remote_static();
        }
        let messages = noise.pattern().messages();
        let we_read_last = match self.side {
            Side::Client => messages % 2 == 0,
            Side::Server => messages % 2 == 1,
        };
        let cipher = self.hs.cipher.unwrap_or(PacketCipher::ChaCha20Poly1305);
        let mut keys = noise.into_packet_keys(cipher);
        if self.config.insecure_null_cipher {
            keys = (keys.0.into_null(), keys.1.into_null());
        }
        self.keys = Some(keys);
        self.state = ConnState::Established;
        self.migration.established_at = Some(now);
        if we_read_last {
            self.hs.confirmed = true;
            self.hs.done_frame_pending = true;
        }
        self.events.push_back(Event::Connected);
        self.restart_idle_timer(now);
    }

    // ---- getters ----

    /// Whether this end is the client or the server.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Where the connection is in its life.
    pub fn state(&self) -> ConnState {
        self.state
    }

    /// True once the handshake completed and until the connection closes.
    pub fn is_established(&self) -> bool {
        self.state == ConnState::Established
    }

    /// True once the connection is gone for good and can be dropped.
    pub fn is_drained(&self) -> bool {
        self.state == ConnState::Drained
    }

    /// The peer's address as last seen (it changes on migration).
    pub fn remote_address(&self) -> SocketAddr {
        self.remote
    }

    /// The connection ID the peer addresses us by.
    pub fn local_cid(&self) -> ConnectionId {
        self.local_cid
    }

    pub(crate) fn initial_dcid(&self) -> ConnectionId {
        self.initial_dcid
    }

    /// The Noise handshake pattern: IK with a known server key, XX without.
    pub fn pattern(&self) -> Pattern {
        self.hs.pattern
    }

    /// The cipher sealing 1-RTT packets, once the handshake completed.
    pub fn packet_cipher(&self) -> Option<PacketCipher> {
        self.keys.as_ref().map(|(tx, _)| tx.cipher())
    }

    /// The congestion controller this connection runs.
    pub fn congestion_algorithm(&self) -> CcAlgorithm {
        self.config.cc
    }

    /// The peer's static key: pinned (client, IK) or presented in the
    /// handshake.
    pub fn remote_static_key(&self) -> Option<[u8; KEY_LEN]> {
        self.remote_static
    }

    /// Both sides know the handshake is over.
    pub fn is_handshake_confirmed(&self) -> bool {
        self.hs.confirmed
    }

    /// The largest datagram we send: our configured size, but never more
    /// than the peer said it accepts, nor (with path MTU discovery) than
    /// the path was found to carry.
    pub fn mds(&self) -> usize {
        let ceiling = self.mds_ceiling();
        if self.pmtu.enabled() {
            ceiling.min(self.pmtu.current())
        } else {
            ceiling
        }
    }

    /// The size of the next 1-RTT datagram: [`mds`](Self::mds), or less
    /// when the controller asks for smaller datagrams at its rate
    /// (Prague below a few Mbit/s). Application datagrams waiting to be
    /// sent are never split, so while one waits datagrams stay full.
    /// `mds` is the current [`mds`](Self::mds) and `view` the controller's
    /// [`SendView`] of it, read once by the caller.
    pub(super) fn send_size_of(&self, mds: usize, view: &SendView) -> usize {
        match view.datagram_size {
            Some(size) if !self.datagrams_queued() => mds.min(size as usize),
            _ => mds,
        }
    }

    /// The largest datagram we may send on any path: our configured size,
    /// but never more than the peer said it accepts.
    fn mds_ceiling(&self) -> usize {
        let peer = self
            .peer_params
            .as_ref()
            .map_or(usize::MAX, |p| p.max_udp_payload as usize);
        self.config.mds().min(peer.max(1200))
    }

    /// The path's RTT estimates, as loss detection and the pacer use them.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Bytes sent and neither acknowledged nor declared lost, without
    /// building the whole [`ConnectionStats`].
    pub fn bytes_in_flight(&self) -> u64 {
        self.sent.bytes_in_flight()
    }

    /// Read access to the streams (states, buffered bytes).
    pub fn streams(&self) -> &Streams {
        &self.streams
    }

    /// A snapshot of the connection's counters, RTT, window and ECN state.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        s.smoothed_rtt = self.rtt.smoothed();
        s.min_rtt = self.rtt.min();
        s.latest_rtt = self.rtt.latest();
        s.rttvar = self.rtt.rttvar();
        s.cwnd_bytes = self.cc.window();
        s.ssthresh_bytes = self.cc.metrics().ssthresh_bytes;
        s.bytes_in_flight = self.sent.bytes_in_flight();
        s.pacing_rate_bps = self.pacer.rate_bps();
        s.pacing_window_bytes = self.cc.pacing_window();
        s.pacing = self.pacer.stats();
        s.spurious_losses = self.loss.spurious_losses();
        s.ack_frequency_sent = self.ack_frequency.as_ref().map_or(0, |a| a.frames_sent());
        s.ecn_state = self.ecn.state();
        s.ecn_codepoint = self.ecn.codepoint();
        let st = self.streams.stats();
        s.stream_bytes_sent = st.bytes_sent;
        s.stream_bytes_retransmitted = st.bytes_retransmitted;
        s.stream_bytes_received = st.bytes_received;
        s.packets_rebuilt = self.fec_rx.as_ref().map_or(0, |r| r.rebuilt_packets());
        s.app_datagrams = self.datagrams.stats();
        s.pmtu = self.pmtu.stats();
        if !self.pmtu.enabled() {
            s.pmtu.current_bytes = self.mds() as u64;
        }
        s
    }

    /// Sends this connection's qlog events to `sink` from now on.
    pub fn set_qlog(&mut self, sink: Box<dyn QlogSink>) {
        self.qlog = Some(sink);
    }

    /// Traces this new connection into the sink `factory` makes, starting
    /// with a `connection_started` event; called before its first packet.
    pub(crate) fn start_qlog(&mut self, now: Instant, factory: &crate::qlog::QlogFactory) {
        use crate::qlog::{ConnectionStarted, QlogEvent, QlogStart, VantageKind, hex};
        let start = QlogStart {
            vantage: match self.side {
                Side::Client => VantageKind::Client,
                Side::Server => VantageKind::Server,
            },
            now,
            remote: self.remote,
            group_id: hex(&self.initial_dcid),
        };
        let Some(mut sink) = (factory.0)(&start) else {
            return;
        };
        let started = ConnectionStarted::new(
            None,
            self.remote,
            hex(&self.local_cid),
            hex(&self.remote_cid),
        );
        sink.emit(now, QlogEvent::ConnectionStarted(started));
        self.qlog = Some(sink);
    }

    // ---- application: streams ----

    /// Opens a stream (bidirectional or send-only); fails with
    /// [`StreamError::StreamsBlocked`] at the peer's stream limit.
    pub fn open_stream(&mut self, bidi: bool, priority: Priority) -> Result<StreamId, StreamError> {
        self.streams.open(bidi, priority)
    }

    /// The next stream the peer opened that the application has not taken.
    pub fn accept_stream(&mut self) -> Option<StreamId> {
        self.streams.accept()
    }

    /// Queues `data` on stream `id`; returns how many bytes fit the send
    /// buffer and flow-control credit (possibly fewer than given).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        self.streams.write(id, data)
    }

    /// [`Connection::write`] for data the application already holds as
    /// [`bytes::Bytes`]: the send buffer keeps the part it takes (a cheap
    /// reference) instead of copying it. Same return, same effect.
    pub fn write_bytes(&mut self, id: StreamId, data: bytes::Bytes) -> Result<usize, StreamError> {
        self.streams.write_bytes(id, data)
    }

    /// Ends stream `id` after the data written so far (sends FIN).
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)?;
        // A request that is all early data ends in the first flight, so
        // the server can answer it before the handshake's round trip.
        if self.hs.last_msg.is_none()
            && let Some((early, data)) = &self.hs.early
            && *early == id
            && self.streams.send_buffered_bytes(id) == data.len() as u64
        {
            self.hs.early_fin = true;
        }
        Ok(())
    }

    /// Abandons sending on `id`: unsent data is dropped and the peer gets
    /// RESET_STREAM with `error_code`.
    pub fn reset_stream(&mut self, id: StreamId, error_code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, error_code)
    }

    /// Asks the peer to stop sending on `id` (STOP_SENDING with `error_code`).
    pub fn stop_sending(&mut self, id: StreamId, error_code: u64) -> Result<(), StreamError> {
        self.streams.stop_sending(id, error_code)
    }

    /// Copies in-order data of stream `id` into `buf`.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<ReadResult, StreamError> {
        let r = self.streams.read(id, buf);
        self.release_rx_bufs();
        r
    }

    /// Like [`Connection::read`], but hands over up to `max_len` bytes as a
    /// reference-counted [`bytes::Bytes`] instead of copying them: bulk data
    /// comes back as slices of the datagrams it arrived in.
    pub fn read_chunk(&mut self, id: StreamId, max_len: usize) -> Result<ReadChunk, StreamError> {
        let r = self.streams.read_chunk(id, max_len);
        self.release_rx_bufs();
        r
    }

    /// Hands every readable piece of `id` to `f` in order, each at most
    /// `max_len` bytes, as [`Connection::read_chunk`] would one call at a
    /// time, without the last call that finds nothing left. The result
    /// counts the bytes handed over and says whether the stream ended.
    pub fn read_chunks(
        &mut self,
        id: StreamId,
        max_len: usize,
        f: impl FnMut(bytes::Bytes),
    ) -> Result<ReadResult, StreamError> {
        let r = self.streams.read_each(id, max_len, f);
        self.release_rx_bufs();
        r
    }

    /// Changes the urgency of `id`'s data from the next packet on.
    pub fn set_priority(&mut self, id: StreamId, priority: Priority) -> Result<(), StreamError> {
        self.streams.set_priority(id, priority)
    }

    /// How much forward error correction stream `id`'s data gets (e.g.
    /// [`FecPolicy::On`](crate::fec::FecPolicy::On) for a request or a
    /// small object, `Off` for bulk). Has no effect unless FEC is enabled
    /// in [`TransportConfig::fec`](crate::TransportConfig) and the peer
    /// announced it too.
    pub fn set_stream_fec(&mut self, id: StreamId, policy: crate::fec::FecPolicy) {
        if let Some(f) = self.fec_tx.as_mut() {
            f.set_policy(id, policy);
        }
    }

    /// Whether both sides announced forward error correction.
    pub fn fec_negotiated(&self) -> bool {
        self.fec_rx.is_some()
    }

    /// Bytes worth writing to `id` now: what the congestion window will let
    /// out within about one round trip (`cwnd - in flight + 2 packets`),
    /// minus what already waits unsent, capped by the stream's buffer room.
    /// Writing one such unit at a time keeps data fresh (the
    /// TCP_NOTSENT_LOWAT idea).
    pub fn writable_bytes(&self, id: StreamId) -> u64 {
        if !self.streams.is_writable(id) {
            return 0;
        }
        let mds = self.mds() as u64;
        let window = self.cc.window().saturating_sub(self.sent.bytes_in_flight()) + 2 * mds;
        let room = self.streams.send_room(id);
        window
            .saturating_sub(self.streams.unsent_bytes(id))
            .min(room)
    }

    /// Client, IK only, before the first flight leaves: opens a
    /// bidirectional stream and sends `data` on it inside the first
    /// handshake message, encrypted to the server's static key. The bytes
    /// are also queued on the stream as usual, so they arrive even if the
    /// server refuses early data.
    pub fn send_early(&mut self, data: Idempotent<'_>) -> Result<StreamId, EarlyDataError> {
        if self.side != Side::Client {
            return Err(EarlyDataError::NotClient);
        }
        if self.hs.pattern != Pattern::Ik {
            return Err(EarlyDataError::NotIk);
        }
        if self.hs.last_msg.is_some() {
            return Err(EarlyDataError::TooLate);
        }
        if self.hs.early.is_some() {
            return Err(EarlyDataError::AlreadySent);
        }
        if data.0.len() > MAX_EARLY_DATA {
            return Err(EarlyDataError::TooLarge {
                len: data.0.len(),
                max: MAX_EARLY_DATA,
            });
        }
        let id = self
            .streams
            .open(true, Priority::default())
            .map_err(|_| EarlyDataError::StreamsBlocked)?;
        let _ = self.streams.write(id, data.0);
        self.hs.early = Some((id, data.0.to_vec()));
        self.stats.early_data_sent_bytes += data.0.len() as u64;
        Ok(id)
    }

    /// Sends a PING soon: the peer acknowledges it at once, which yields an
    /// RTT sample and fresh ECN counts.
    pub fn ping(&mut self) {
        self.ping_pending = true;
    }

    /// Closes the connection with an application error code. Before the
    /// handshake completes there is no key to authenticate a close with, so
    /// the connection just goes away.
    pub fn close(&mut self, now: Instant, code: u64, reason: &[u8]) {
        match self.state {
            ConnState::Handshake => self.drain_now(),
            ConnState::Established => self.start_closing(
                now,
                CloseInfo {
                    code,
                    frame_type: None,
                    reason: reason.to_vec(),
                },
            ),
            _ => {}
        }
    }

    fn start_closing(&mut self, now: Instant, info: CloseInfo) {
        self.close = Some(info);
        self.close_pending = true;
        self.state = ConnState::Closing;
        self.timers.stop_all();
        self.timers.set(Timer::Close, now + self.closing_period());
        self.arm_close_repeats(now);
    }

    /// We detected a protocol error: tell the peer and the application.
    fn transport_error(&mut self, now: Instant, code: u64, frame_type: u64, reason: &str) {
        if matches!(
            self.state,
            ConnState::Closing | ConnState::Draining | ConnState::Drained
        ) {
            return;
        }
        self.events
            .push_back(Event::ConnectionLost(ConnectionError::TransportError {
                code,
                reason: reason.to_owned(),
            }));
        if self.keys.is_some() {
            self.start_closing(
                now,
                CloseInfo {
                    code,
                    frame_type: Some(frame_type),
                    reason: reason.as_bytes().to_vec(),
                },
            );
        } else {
            self.drain_now();
        }
    }

    fn start_draining(&mut self, now: Instant) {
        self.state = ConnState::Draining;
        self.timers.stop_all();
        self.timers.set(Timer::Close, now + self.closing_period());
    }

    fn drain_now(&mut self) {
        self.state = ConnState::Drained;
        self.timers.stop_all();
        self.events.push_back(Event::Closed);
    }

    /// Three probe timeouts (RFC 9000 §10.2).
    fn closing_period(&self) -> Duration {
        LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay) * 3
    }

    // ---- outputs ----

    /// The next event for the application: connection events first, then
    /// stream events while the connection is up.
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        if matches!(self.state, ConnState::Established | ConnState::Handshake) {
            return self.streams.poll_event().map(Event::Stream);
        }
        None
    }

    /// Whether [`Connection::poll_event`] might give an event: false means
    /// it would give none and change nothing, so a driver that keeps a set
    /// of connections with events need not add this one.
    pub fn may_have_event(&self) -> bool {
        !self.events.is_empty()
            || (matches!(self.state, ConnState::Established | ConnState::Handshake)
                && self.streams.may_have_event())
    }

    /// When `handle_timeout` must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Runs every timer due at `now` (loss detection, ACK delay, idle,
    /// pacing, ECN re-test...). Call it at [`Connection::poll_timeout`].
    pub fn handle_timeout(&mut self, now: Instant) {
        // Whether a timer with work of its own ran; the pacer's and the
        // delayed ACK's only wake the driver to poll.
        let mut ran = false;
        let due = self.timers.due(now);
        // A pacing-limited sender comes here before every packet with only
        // the pacer's timer due: those two just stop, without a walk of
        // every timer.
        let wake_only = Timer::AckDelay.bit() | Timer::Pacing.bit();
        let walk = if due & !wake_only == 0 {
            self.timers.stop_mask(due);
            [].iter()
        } else {
            Timer::ALL.iter()
        };
        for &t in walk {
            if !self.timers.is_expired(t, now) {
                continue;
            }
            self.timers.stop(t);
            ran |= !matches!(t, Timer::AckDelay | Timer::Pacing);
            match t {
                Timer::Idle => {
                    if matches!(self.state, ConnState::Handshake | ConnState::Established) {
                        self.events
                            .push_back(Event::ConnectionLost(ConnectionError::TimedOut));
                    }
                    self.drain_now();
                    return;
                }
                Timer::Close => {
                    self.drain_now();
                    return;
                }
                Timer::LossDetection if self.state == ConnState::Closing => self.repeat_close(now),
                Timer::LossDetection => self.on_loss_timeout(now),
                Timer::AckDelay | Timer::Pacing => {}
                Timer::Ecn => {
                    self.ecn.handle_timeout(now);
                    self.log_ecn_state(now);
                }
                Timer::KeepAlive => self.ping_pending = true,
                Timer::Silence => {
                    if self.stall_check_deadline().is_some_and(|t| t <= now) {
                        self.check_stall(now);
                    }
                    if self.silence_deadline().is_some_and(|t| t <= now) {
                        // One PING per silence: from here the probe
                        // timeout retries it until the peer answers.
                        self.ping_pending = true;
                        self.last_heard = self.last_heard.map(|(at, _)| (at, false));
                    }
                }
                Timer::PathValidation => self.on_path_timeout(now),
            }
        }
        // When nothing else ran, only the pacer's or the delayed ACK's timer
        // was due: nothing the timers are computed from changed since they
        // were last armed, and arming them again now would give this same
        // table (it leaves the pacer's timer alone, arms an ACK deadline only
        // while it is ahead, and every other deadline that depends on the
        // time flips only when its own timer is due). A pacing-limited
        // sender comes here before every packet, so this is not done again;
        // debug builds (the tests) re-arm anyway and check that claim.
        if ran {
            self.update_timers(now);
        } else if cfg!(debug_assertions) {
            let (kept, at) = (self.timers, self.timers_updated_at);
            self.update_timers(now);
            assert_eq!(kept, self.timers, "timers went stale");
            self.timers_updated_at = at;
        }
    }

    fn on_loss_timeout(&mut self, now: Instant) {
        if self.loss.loss_time().is_some_and(|t| t <= now) {
            let lost = self.detect_lost(now);
            self.on_packets_lost(now, lost, crate::qlog::LossTrigger::TimeThreshold);
            return;
        }
        if self.hs_retransmit_deadline().is_some_and(|t| t <= now) {
            self.hs.send_pending = true;
            self.hs.resent = true;
            self.hs.pto_count += 1;
            self.stats.ptos += 1;
            return;
        }
        if self.pto_deadline().is_some_and(|t| t <= now) {
            self.probes_pending = self.loss.on_pto();
            self.stats.ptos += 1;
            self.note_path_stall(now);
        }
    }

    /// When to resend our last handshake message. Consecutive resends back
    /// off as the probe timeout does (`LossConfig::max_probe_doublings` and
    /// `max_probe_timeout`), not without bound: with the initial RTT's one
    /// second, unbounded doubling puts the fourth attempt 7 s in, past a
    /// 5 s connect timeout, so heavy random loss on both directions (one
    /// attempt in three fails at 20%) made a connect fail 1 time in 200.
    /// A handshake message a second toward a silent server costs nothing.
    fn hs_retransmit_deadline(&self) -> Option<Instant> {
        if self.hs.confirmed || self.hs.last_msg.is_none() || self.hs.send_pending {
            return None;
        }
        let base = LossDetection::pto_base(&self.rtt, Duration::ZERO);
        let loss = &self.config.loss;
        let doublings = self.hs.pto_count.min(loss.max_probe_doublings).min(16);
        let backed_off = base
            .saturating_mul(1 << doublings)
            .min(base.max(loss.max_probe_timeout));
        Some(self.hs.last_sent_at? + backed_off)
    }

    fn pto_deadline(&self) -> Option<Instant> {
        // Probes still waiting to go out (only the amplification limit can
        // hold them) need no further timeout.
        if self.keys.is_none() || !self.sent.has_eliciting_in_flight() || self.probes_pending > 0 {
            return None;
        }
        self.loss.pto_deadline(&self.rtt, self.peer_max_ack_delay)
    }

    fn restart_idle_timer(&mut self, now: Instant) {
        let half_open = self
            .half_open_timeout
            .filter(|_| self.is_half_open())
            .map(|h| h.max(self.closing_period()));
        if let Some(t) = half_open {
            let t = match self.idle_timeout {
                Duration::ZERO => t,
                idle => t.min(idle),
            };
            self.timers.set(Timer::Idle, now + t);
        } else if self.idle_timeout > Duration::ZERO {
            // Never time out faster than three probes (RFC 9000 §10.1).
            // In integer nanoseconds: this runs for every packet received.
            let t = nanos(self.idle_timeout).max(self.closing_period_nanos());
            self.timers.set(
                Timer::Idle,
                Instant::from_nanos(now.as_nanos().saturating_add(t)),
            );
        }
    }

    /// [`Connection::closing_period`] in integer nanoseconds.
    fn closing_period_nanos(&self) -> u64 {
        LossDetection::pto_base_nanos(&self.rtt, self.peer_max_ack_delay).saturating_mul(3)
    }

    /// The peer was heard from: an authenticated, new packet arrived.
    fn on_peer_heard(&mut self, now: Instant, carries_data: bool) {
        self.restart_idle_timer(now);
        self.eliciting_sent_since_rx = false;
        if carries_data || self.last_heard.is_none_or(|(at, _)| at < now) {
            self.last_heard = Some((now, carries_data));
        }
    }

    /// When to PING a peer that was sending stream data and fell silent
    /// while nothing of ours is in flight.
    ///
    /// The side that receives a transfer sends nothing that asks for an
    /// answer, so when loss hits both directions only the sender's probes
    /// keep the path in use. Loss that comes in bursts counted in packets
    /// (a radio that recovers after some frames, whatever their spacing)
    /// then stretches over the sender's probe interval, and the receiver
    /// hears nothing for as long. The receiver's own PING, retried by its
    /// probe timeout until answered, doubles what crosses the path in such
    /// a silence and tells the sender the receiver is still there. The
    /// silence is `max(3 probe timeouts, 1 s)`, at most a quarter of the
    /// idle timeout. Only a peer whose last packet carried stream data is
    /// pinged (a PING answers no PING), and only once per silence: a
    /// connection both sides left idle sees one PING and its ACK, and then
    /// times out as it should.
    fn silence_deadline(&self) -> Option<Instant> {
        let (at, sending) = self.last_heard?;
        if !sending
            || self.idle_timeout.is_zero()
            || self.state != ConnState::Established
            || self.sent.has_eliciting_in_flight()
        {
            return None;
        }
        // In integer nanoseconds: the timers are re-armed after every
        // datagram in or out.
        let quiet = self
            .closing_period_nanos()
            .max(nanos(SILENCE_BEFORE_PING))
            .min(nanos(self.idle_timeout) / 4);
        Some(Instant::from_nanos(at.as_nanos().saturating_add(quiet)))
    }

    /// Re-arms every timer from the current state.
    fn update_timers(&mut self, now: Instant) {
        self.timers_updated_at = Some(now);
        if matches!(
            self.state,
            ConnState::Closing | ConnState::Draining | ConnState::Drained
        ) {
            return;
        }
        let loss = earliest(
            earliest(self.loss.loss_time(), self.hs_retransmit_deadline()),
            self.pto_deadline(),
        );
        self.timers.set_opt(Timer::LossDetection, loss);
        // A due ACK that could not leave (amplification limit) waits for the
        // next send opportunity rather than re-firing at once.
        let ack = self
            .acks
            .deadline()
            .filter(|&t| t > now && self.keys.is_some());
        self.timers.set_opt(Timer::AckDelay, ack);
        self.timers
            .set_opt(Timer::Ecn, self.ecn.poll_timeout().filter(|&t| t > now));
        self.timers.set_opt(
            Timer::Silence,
            earliest(self.silence_deadline(), self.stall_check_deadline()),
        );
        self.timers
            .set_opt(Timer::PathValidation, self.path_deadline(now));
        if let Some(i) = self.config.keep_alive_interval
            && self.keys.is_some()
            && self.timers.get(Timer::KeepAlive).is_none()
        {
            self.timers.set(Timer::KeepAlive, now + i);
        }
    }

    /// Called after anything that may move ECN validation: logs a new
    /// state, and tells the controller when the path's codepoint changed
    /// (a fallback from ECT(1) to ECT(0) means CE marks now come from a
    /// classic AQM, which a scalable controller must answer like a loss).
    fn log_ecn_state(&mut self, now: Instant) {
        let ect = self.ecn.ect();
        if ect != self.path_ecn {
            self.path_ecn = ect;
            self.cc.set_path_ecn(ect);
        }
        let s = self.ecn.state();
        if s != self.last_ecn_state {
            let old = self.last_ecn_state;
            self.last_ecn_state = s;
            if let Some(q) = self.qlog.as_mut() {
                q.emit(
                    now,
                    crate::qlog::QlogEvent::EcnStateUpdated {
                        old: Some(crate::qlog::ecn_state(old)),
                        new: crate::qlog::ecn_state(s),
                        trigger: self.ecn.last_failure().map(|f| f.name().to_owned()),
                    },
                );
            }
        }
    }
}

/// Set in an Initial's pattern byte when a retry token (varint length,
/// bytes) follows it (docs/PROTOCOL.md §3.7).
pub(crate) const INITIAL_TOKEN_FLAG: u8 = 0x80;

/// The retry token of an Initial's payload, if it carries one.
pub(crate) fn parse_initial_token(payload: &[u8]) -> Option<&[u8]> {
    let mut r = varint::Reader::new(payload);
    if r.u8().ok()? & INITIAL_TOKEN_FLAG == 0 {
        return None;
    }
    let len = r.varint_len().ok()?;
    r.bytes(len).ok()
}

/// An Initial's payload (pattern byte, message) with `token` put in
/// front of the message.
pub(crate) fn with_initial_token(payload: &[u8], token: &[u8]) -> Option<Vec<u8>> {
    let (&pattern, rest) = payload.split_first()?;
    let rest = match parse_initial_token(payload) {
        // Replace a token sent before.
        Some(old) => {
            let mut r = varint::Reader::new(rest);
            let len = r.varint_len().ok()?;
            debug_assert_eq!(len, old.len());
            r.bytes(len).ok()?;
            r.rest()
        }
        None => rest,
    };
    let mut out = Vec::with_capacity(payload.len() + token.len() + 2);
    out.push(pattern | INITIAL_TOKEN_FLAG);
    varint::write(&mut out, token.len() as u64);
    out.extend_from_slice(token);
    out.extend_from_slice(rest);
    Some(out)
}

/// A long packet's payload: (Initial only) the pattern byte, then the
/// Noise message with its length.
fn hs_payload(pattern: Option<Pattern>, msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 4);
    if let Some(p) = pattern {
        out.push(p.id());
    }
    varint::write(&mut out, msg.len() as u64);
    out.extend_from_slice(msg);
    out
}

/// Splits a long packet's payload into (pattern, Noise message); the zero
/// padding after the message is ignored, and so is an Initial's retry
/// token (see [`parse_initial_token`]).
pub(crate) fn parse_hs_payload(initial: bool, payload: &[u8]) -> Option<(Option<Pattern>, &[u8])> {
    let mut r = varint::Reader::new(payload);
    let pattern = if initial {
        let b = r.u8().ok()?;
        if b & INITIAL_TOKEN_FLAG != 0 {
            let len = r.varint_len().ok()?;
            r.bytes(len).ok()?;
        }
        Some(Pattern::from_id(b & !INITIAL_TOKEN_FLAG)?)
    } else {
        None
    };
    let len = r.varint_len().ok()?;
    let msg = r.bytes(len).ok()?;
    // The padding is most of every first flight, forged ones included: an
    // OR over all of it (which the compiler vectorises) rather than a
    // byte-at-a-time search keeps it off a flooded server's profile.
    if r.rest().iter().fold(0u8, |acc, &b| acc | b) != 0 {
        return None;
    }
    Some((pattern, msg))
}

/// `d` in nanoseconds, saturating (at 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
