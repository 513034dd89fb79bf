//! A minimal qlog writer: Brisk's transport events in the QUIC event schema,
//! so qvis and other qlog tools can draw congestion windows, RTTs, losses
//! and packet flows of a Brisk connection.
//!
//! The format is qlog 0.3 in JSON-SEQ form (draft-ietf-quic-qlog-main-schema-03
//! and quic-events-03): each record is the ASCII record separator 0x1E, one
//! JSON text and a newline (RFC 7464). The first record is the header
//! (`qlog_format`, `qlog_version`, `title`, and a `trace` with its
//! `vantage_point` and `common_fields`); every later record is one event
//! `{"time": ms, "name": "category:event", "data": {...}}`, with `time` in
//! milliseconds (float) after the trace's reference instant.
//!
//! `reference_time` is the wall-clock time of that instant in milliseconds
//! since the Unix epoch, so the client's and the server's traces of one
//! connection line up in qvis; the writer reads no clock, the edge passes
//! it in ([`TraceStart`]). The simulator passes its virtual epoch instead:
//! milliseconds since the start of the run.
//!
//! A trace of every packet of a multi-gigabit transfer is far too large for
//! a browser, so the writer keeps only the [`EventClass`]es it is given
//! ([`EventClasses`]; the default leaves out the per-packet 1-RTT events).
//!
//! Rust field names carry units (`smoothed_rtt: Duration`,
//! `congestion_window_bytes`); the JSON uses qlog's names and units
//! (milliseconds for times, bytes, bits per second for pacing).

use brisk_time::Instant;
use serde::{Serialize, Serializer};
use std::io::{self, Write};
use std::time::Duration;

/// RFC 7464's record separator, written before every record.
pub const RECORD_SEPARATOR: u8 = 0x1e;
/// The qlog schema version written in the header (draft -03).
pub const QLOG_VERSION: &str = "0.3";
/// The serialization written in the header: RFC 7464 JSON text sequences.
pub const QLOG_FORMAT: &str = "JSON-SEQ";

/// Why a qlog record could not be written.
#[derive(Debug, thiserror::Error)]
pub enum QlogError {
    /// The file or pipe refused the bytes (disk full, closed pipe).
    #[error("qlog i/o: {0}")]
    Io(#[from] io::Error),
    /// An event did not serialize to JSON (a non-finite float).
    #[error("qlog encoding: {0}")]
    Json(#[from] serde_json::Error),
}

/// Which side of the connection wrote the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VantageKind {
    /// The connection's initiator.
    Client,
    /// The side that accepted the connection.
    Server,
    /// An observer in the path, e.g. the simulator's bottleneck.
    Network,
}

/// Who wrote the trace, as the header's `vantage_point` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VantagePoint {
    /// A free-form label, e.g. the host or the flow's name in a scenario.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Client, server or a network observer; qvis flips arrows by this.
    #[serde(rename = "type")]
    pub kind: VantageKind,
}

impl VantagePoint {
    /// A vantage point with a label.
    pub fn new(kind: VantageKind, name: impl Into<String>) -> Self {
        VantagePoint {
            name: Some(name.into()),
            kind,
        }
    }
}

/// Brisk's packet types in QUIC's names: long-header Initial and Handshake
/// packets, and short-header packets after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PacketType {
    /// A long-header packet carrying the client's first handshake message.
    #[serde(rename = "initial")]
    Initial,
    /// A long-header packet carrying a later handshake message.
    #[serde(rename = "handshake")]
    Handshake,
    /// A short-header packet protected with the keys the handshake agreed on.
    #[serde(rename = "1RTT")]
    OneRtt,
}

/// The packet header fields qlog shows for each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PacketHeader {
    /// Which kind of packet.
    pub packet_type: PacketType,
    /// The full (decoded) packet number, in its own number space.
    pub packet_number: u64,
}

/// Wire facts of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RawInfo {
    /// The whole UDP payload, header included.
    #[serde(rename = "length")]
    pub length_bytes: u64,
}

/// Stream direction of a MAX_STREAMS frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamType {
    /// Streams both sides write.
    Bidirectional,
    /// Streams only their initiator writes.
    Unidirectional,
}

/// Whether a CONNECTION_CLOSE carries a transport or an application code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSpace {
    /// A transport error code (RFC 9000 §20.1 values).
    Transport,
    /// A code the application chose; the transport does not interpret it.
    Application,
}

/// The frames of a packet, one variant per Brisk frame type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "frame_type", rename_all = "snake_case")]
pub enum QlogFrame {
    /// Bytes of zero that fill the packet.
    Padding {
        /// Padding bytes in the packet.
        #[serde(rename = "length")]
        length_bytes: u64,
    },
    /// Elicits an acknowledgement; carries nothing.
    Ping,
    /// Acknowledges packet number ranges (RFC 9000 §19.3).
    Ack {
        /// How long the receiver held the ACK back, as it reported it.
        #[serde(serialize_with = "opt_ms", skip_serializing_if = "Option::is_none")]
        ack_delay: Option<Duration>,
        /// Inclusive `[first, last]` packet number ranges.
        acked_ranges: Vec<[u64; 2]>,
        /// The ECN counts (RFC 9000 §19.3.2), when the ACK carries them.
        #[serde(skip_serializing_if = "Option::is_none")]
        ect1: Option<u64>,
        /// Packets received with ECT(0) so far.
        #[serde(skip_serializing_if = "Option::is_none")]
        ect0: Option<u64>,
        /// Packets received with CE (congestion experienced) so far.
        #[serde(skip_serializing_if = "Option::is_none")]
        ce: Option<u64>,
    },
    /// The sender abandons a stream (RFC 9000 §19.4).
    ResetStream {
        /// The stream.
        stream_id: u64,
        /// The application's reason code.
        error_code: u64,
        /// Bytes the stream had reached when it was reset.
        final_size: u64,
    },
    /// The receiver asks the peer to stop sending on a stream (RFC 9000 §19.5).
    StopSending {
        /// The stream.
        stream_id: u64,
        /// The application's reason code.
        error_code: u64,
    },
    /// Stream data (RFC 9000 §19.8).
    Stream {
        /// The stream.
        stream_id: u64,
        /// Byte offset of the first data byte within the stream.
        offset: u64,
        /// Data bytes in the frame.
        #[serde(rename = "length")]
        length_bytes: u64,
        /// True when this frame ends the stream.
        fin: bool,
    },
    /// Raises the connection's flow control limit (RFC 9000 §19.9).
    MaxData {
        /// The new limit in bytes, counted from the connection's start.
        maximum: u64,
    },
    /// Raises one stream's flow control limit (RFC 9000 §19.10).
    MaxStreamData {
        /// The stream.
        stream_id: u64,
        /// The new limit in bytes, counted from the stream's start.
        maximum: u64,
    },
    /// Raises how many streams the peer may open (RFC 9000 §19.11).
    MaxStreams {
        /// Which kind of stream the limit counts.
        stream_type: StreamType,
        /// The new cumulative stream count.
        maximum: u64,
    },
    /// The sender has data but the connection limit stops it (RFC 9000 §19.12).
    DataBlocked {
        /// The connection limit in bytes it hit.
        limit: u64,
    },
    /// The sender has data but a stream's limit stops it (RFC 9000 §19.13).
    StreamDataBlocked {
        /// The stream.
        stream_id: u64,
        /// The stream limit in bytes it hit.
        limit: u64,
    },
    /// Closes the connection (RFC 9000 §19.19).
    ConnectionClose {
        /// Transport or application code.
        error_space: ErrorSpace,
        /// The error code.
        error_code: u64,
        /// The human-readable reason the sender gave.
        reason: String,
    },
    /// The server confirms the handshake (RFC 9000 §19.20).
    HandshakeDone,
    /// The sender's request for a new acknowledgement rate.
    AckFrequency {
        /// Increases with each request; the receiver ignores older ones.
        sequence_number: u64,
        /// Ack-eliciting packets the receiver may get before it must acknowledge.
        ack_eliciting_threshold: u64,
        /// The longest the receiver may hold an acknowledgement back.
        #[serde(serialize_with = "ms")]
        request_max_ack_delay: Duration,
    },
    /// A repair symbol over a block of earlier packets (forward error
    /// correction).
    Repair {
        /// The block's first source packet.
        first_packet_number: u64,
        /// Source packets in the block.
        source_count: u64,
        /// Repair symbols the block has in all.
        repair_count: u64,
        /// Which of them this is, from 0.
        repair_index: u64,
        /// Bytes of the symbol.
        #[serde(rename = "length")]
        length_bytes: u64,
    },
    /// Running totals of the packets the receiver rebuilt from repair.
    Repaired {
        /// Packets rebuilt so far.
        packets: u64,
        /// Runs of consecutive packet numbers among them.
        bursts: u64,
        /// The highest packet number rebuilt.
        largest_packet_number: u64,
    },
    /// An unreliable datagram (RFC 9221): sent once, never retransmitted.
    Datagram {
        /// Bytes of application data it carries.
        #[serde(rename = "length")]
        length_bytes: u64,
    },
    /// A frame type qlog has no name for.
    Unknown {
        /// The frame type number as read.
        raw_frame_type: u64,
    },
}

/// A packet sent or received.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacketEvent {
    /// Type and number.
    pub header: PacketHeader,
    /// The frames in wire order.
    pub frames: Vec<QlogFrame>,
    /// Length on the wire, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawInfo>,
}

/// What declared a packet lost (RFC 9002 §6.1 and §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossTrigger {
    /// Enough later packets were acknowledged (packet threshold, RFC 9002 §6.1.1).
    ReorderingThreshold,
    /// It was sent longer before an acknowledged packet than the time
    /// threshold (9/8 of an RTT in RFC 9002 §6.1.2).
    TimeThreshold,
    /// The probe timeout fired with the packet still unacknowledged (RFC 9002 §6.2).
    PtoExpired,
}

/// Recovery state after an update; absent fields did not change.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Metrics {
    /// Smallest RTT sample seen (RFC 9002 §5.2).
    #[serde(serialize_with = "opt_ms", skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<Duration>,
    /// Exponentially weighted RTT (RFC 9002 §5.3).
    #[serde(serialize_with = "opt_ms", skip_serializing_if = "Option::is_none")]
    pub smoothed_rtt: Option<Duration>,
    /// The RTT sample of the newest acknowledged packet.
    #[serde(serialize_with = "opt_ms", skip_serializing_if = "Option::is_none")]
    pub latest_rtt: Option<Duration>,
    /// Mean deviation of the RTT samples (RFC 9002 §5.3).
    #[serde(serialize_with = "opt_ms", skip_serializing_if = "Option::is_none")]
    pub rtt_variance: Option<Duration>,
    /// Probe timeouts in a row without an acknowledgement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pto_count: Option<u32>,
    /// Congestion window in bytes.
    #[serde(rename = "congestion_window", skip_serializing_if = "Option::is_none")]
    pub congestion_window_bytes: Option<u64>,
    /// Bytes sent, not yet acknowledged or declared lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_in_flight: Option<u64>,
    /// Slow start threshold in bytes.
    #[serde(rename = "ssthresh", skip_serializing_if = "Option::is_none")]
    pub ssthresh_bytes: Option<u64>,
    /// Pacing rate in bits per second.
    #[serde(rename = "pacing_rate", skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bps: Option<u64>,
}

/// The ECN validation states of RFC 9000 §13.4.2 as qlog names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnState {
    /// ECN-marked packets are being sent to test the path.
    Testing,
    /// Testing is over; waiting for the ACKs that confirm or refute ECN.
    Unknown,
    /// The path loses or bleaches marks: the sender stopped marking.
    Failed,
    /// The path carries ECN: marks are kept.
    Capable,
}

/// `connectivity:connection_started`, from the logging end's view: `src`
/// is this end, `dst` the peer. A sans-IO core does not know its own
/// address, so `src_ip`/`src_port` may be absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnectionStarted {
    /// "ipv4" or "ipv6".
    pub ip_version: &'static str,
    /// This end's address, when the core knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_ip: Option<String>,
    /// The peer's address.
    pub dst_ip: String,
    /// Always "QUIC", the schema qvis reads Brisk's events with.
    pub protocol: &'static str,
    /// This end's UDP port, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// The peer's UDP port.
    pub dst_port: u16,
    /// Connection IDs in hex.
    pub src_cid: String,
    /// The connection ID this end sends to, in hex.
    pub dst_cid: String,
}

impl ConnectionStarted {
    /// The start of a connection from `local` (when known) to `remote`.
    pub fn new(
        local: Option<std::net::SocketAddr>,
        remote: std::net::SocketAddr,
        src_cid: String,
        dst_cid: String,
    ) -> Self {
        ConnectionStarted {
            ip_version: if remote.is_ipv4() { "ipv4" } else { "ipv6" },
            src_ip: local.map(|a| a.ip().to_string()),
            dst_ip: remote.ip().to_string(),
            protocol: "QUIC",
            src_port: local.map(|a| a.port()),
            dst_port: remote.port(),
            src_cid,
            dst_cid,
        }
    }
}

/// The events Brisk logs, named as in qlog's QUIC schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "name", content = "data")]
pub enum QlogEvent {
    /// The trace's connection: addresses, protocol and connection IDs.
    #[serde(rename = "connectivity:connection_started")]
    ConnectionStarted(ConnectionStarted),
    /// A packet left this end.
    #[serde(rename = "transport:packet_sent")]
    PacketSent(PacketEvent),
    /// A packet arrived.
    #[serde(rename = "transport:packet_received")]
    PacketReceived(PacketEvent),
    /// A packet was declared lost.
    #[serde(rename = "recovery:packet_lost")]
    PacketLost {
        /// Type and number of the lost packet.
        header: PacketHeader,
        /// Its frames, when the logger lists them; left out of the JSON when empty.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        frames: Vec<QlogFrame>,
        /// Which rule declared it lost.
        #[serde(skip_serializing_if = "Option::is_none")]
        trigger: Option<LossTrigger>,
    },
    /// RTT, window or pacing changed.
    #[serde(rename = "recovery:metrics_updated")]
    MetricsUpdated(Metrics),
    /// The controller's own state names, e.g. "slow_start",
    /// "congestion_avoidance", "recovery", "application_limited".
    #[serde(rename = "recovery:congestion_state_updated")]
    CongestionStateUpdated {
        /// The state before, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        old: Option<String>,
        /// The state now.
        new: String,
        /// What caused the change, when the controller says.
        #[serde(skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
    },
    /// ECN validation moved to another state (RFC 9000 §13.4.2).
    #[serde(rename = "recovery:ecn_state_updated")]
    EcnStateUpdated {
        /// The state before, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        old: Option<EcnState>,
        /// The state now.
        new: EcnState,
        /// On failure, why: "bleached", "remarked", "all_ce", "black_hole"
        /// or "invalid_counts".
        #[serde(skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
    },
}

/// A Duration as qlog's float milliseconds.
fn ms<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// An optional Duration as qlog's float milliseconds.
fn opt_ms<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ms(d, s),
        None => s.serialize_none(),
    }
}

/// The groups of events a trace can keep or leave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventClass {
    /// `connectivity:*`: the connection's start, addresses and IDs.
    Connectivity,
    /// Initial and Handshake packets sent and received.
    Handshake,
    /// 1-RTT packets sent and received, with their frames: one event per
    /// packet, by far the largest class.
    Packets,
    /// `recovery:metrics_updated` and `recovery:packet_lost`.
    Recovery,
    /// Congestion controller and ECN validation state changes.
    Congestion,
}

impl EventClass {
    /// Every class, in the order `Display` lists them.
    pub const ALL: [EventClass; 5] = [
        EventClass::Connectivity,
        EventClass::Handshake,
        EventClass::Packets,
        EventClass::Recovery,
        EventClass::Congestion,
    ];

    /// The word used in `--qlog-events` lists and in `Display`.
    pub fn name(self) -> &'static str {
        match self {
            EventClass::Connectivity => "connectivity",
            EventClass::Handshake => "handshake",
            EventClass::Packets => "packets",
            EventClass::Recovery => "recovery",
            EventClass::Congestion => "congestion",
        }
    }

    /// The class `event` belongs to.
    pub fn of(event: &QlogEvent) -> EventClass {
        match event {
            QlogEvent::ConnectionStarted(_) => EventClass::Connectivity,
            QlogEvent::PacketSent(p) | QlogEvent::PacketReceived(p) => {
                if p.header.packet_type == PacketType::OneRtt {
                    EventClass::Packets
                } else {
                    EventClass::Handshake
                }
            }
            QlogEvent::PacketLost { .. } | QlogEvent::MetricsUpdated(_) => EventClass::Recovery,
            QlogEvent::CongestionStateUpdated { .. } | QlogEvent::EcnStateUpdated { .. } => {
                EventClass::Congestion
            }
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of [`EventClass`]es, written as a comma-separated list
/// (`"connectivity,handshake,recovery"`) or `"all"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventClasses(u8);

impl EventClasses {
    /// Every class: the largest trace.
    pub const ALL: EventClasses = EventClasses(0b1_1111);

    /// Whether the trace keeps `class`.
    pub fn contains(self, class: EventClass) -> bool {
        self.0 & class.bit() != 0
    }

    /// This set plus `class`.
    pub fn with(self, class: EventClass) -> Self {
        EventClasses(self.0 | class.bit())
    }

    /// This set minus `class`.
    pub fn without(self, class: EventClass) -> Self {
        EventClasses(self.0 & !class.bit())
    }
}

/// Everything but the per-packet 1-RTT events: the handshake, every loss,
/// window, RTT and state change. Five seconds of a loopback transfer stay
/// a few megabytes per side.
impl Default for EventClasses {
    fn default() -> Self {
        EventClasses::ALL.without(EventClass::Packets)
    }
}

impl std::str::FromStr for EventClasses {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "all" {
            return Ok(EventClasses::ALL);
        }
        let mut set = EventClasses(0);
        for word in s.split(',').map(str::trim) {
            let class = EventClass::ALL
                .into_iter()
                .find(|c| c.name() == word)
                .ok_or_else(|| {
                    let names: Vec<&str> = EventClass::ALL.iter().map(|c| c.name()).collect();
                    format!(
                        "unknown qlog event class {word:?}: expected \"all\" or a comma-separated list of {}",
                        names.join(", ")
                    )
                })?;
            set = set.with(class);
        }
        Ok(set)
    }
}

impl std::fmt::Display for EventClasses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = EventClass::ALL
            .into_iter()
            .filter(|c| self.contains(*c))
            .map(EventClass::name)
            .collect();
        f.write_str(&names.join(","))
    }
}

/// Where and when a trace starts: what the header records.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStart {
    /// The header's title, e.g. the scenario or the command that ran.
    pub title: String,
    /// Which side wrote the trace.
    pub vantage: VantagePoint,
    /// The instant, on the driver's clock, that event times count from.
    pub reference: Instant,
    /// The same instant in milliseconds since the Unix epoch (the
    /// simulator: since the start of the run).
    pub reference_time_ms: f64,
    /// Ties the client's and the server's trace of one connection
    /// together: the client's first destination connection ID, in hex.
    pub group_id: Option<String>,
    /// Which event classes the writer keeps; the rest are dropped unwritten.
    pub classes: EventClasses,
}

#[derive(Serialize)]
struct Header<'a> {
    qlog_format: &'static str,
    qlog_version: &'static str,
    title: &'a str,
    trace: Trace<'a>,
}

#[derive(Serialize)]
struct Trace<'a> {
    vantage_point: &'a VantagePoint,
    common_fields: CommonFields<'a>,
}

#[derive(Serialize)]
struct CommonFields<'a> {
    /// Brisk's events use QUIC's schema, so tools read them as QUIC.
    protocol_type: [&'static str; 1],
    time_format: &'static str,
    /// See [`TraceStart::reference_time_ms`].
    reference_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    group_id: Option<&'a str>,
}

#[derive(Serialize)]
struct Record<'a> {
    time: f64,
    #[serde(flatten)]
    event: &'a QlogEvent,
}

/// Streams one qlog trace to any [`Write`], one record per call.
///
/// The writer does not buffer: wrap a file in a `BufWriter`.
#[derive(Debug)]
pub struct QlogWriter<W: Write> {
    out: W,
    reference: Instant,
    classes: EventClasses,
    events: u64,
}

impl<W: Write> QlogWriter<W> {
    /// Writes the header of the trace `start` describes.
    pub fn new(mut out: W, start: &TraceStart) -> Result<Self, QlogError> {
        let header = Header {
            qlog_format: QLOG_FORMAT,
            qlog_version: QLOG_VERSION,
            title: &start.title,
            trace: Trace {
                vantage_point: &start.vantage,
                common_fields: CommonFields {
                    protocol_type: ["QUIC"],
                    time_format: "relative",
                    reference_time: start.reference_time_ms,
                    group_id: start.group_id.as_deref(),
                },
            },
        };
        write_record(&mut out, &header)?;
        Ok(QlogWriter {
            out,
            reference: start.reference,
            classes: start.classes,
            events: 0,
        })
    }

    /// Whether events of `class` are written (the others are dropped).
    pub fn wants(&self, class: EventClass) -> bool {
        self.classes.contains(class)
    }

    /// Appends one event that happened at `time`, if its class is kept.
    /// An event before the reference gets a negative time rather than a
    /// wrong one.
    pub fn event(&mut self, time: Instant, ev: &QlogEvent) -> Result<(), QlogError> {
        if !self.wants(EventClass::of(ev)) {
            return Ok(());
        }
        let ns = i128::from(time.as_nanos()) - i128::from(self.reference.as_nanos());
        write_record(
            &mut self.out,
            &Record {
                time: ns as f64 / 1e6,
                event: ev,
            },
        )?;
        self.events += 1;
        Ok(())
    }

    /// Events written so far (the header and dropped events not counted).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, QlogError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// RS, the JSON text, LF: one JSON-SEQ record. The record is built in memory
/// first so a serialization error never leaves half a record behind.
fn write_record<W: Write, T: Serialize>(out: &mut W, value: &T) -> Result<(), QlogError> {
    let mut buf = vec![RECORD_SEPARATOR];
    serde_json::to_writer(&mut buf, value)?;
    buf.push(b'\n');
    out.write_all(&buf)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Splits a JSON-SEQ text into records, checking RFC 7464 framing.
    fn records(bytes: &[u8]) -> Vec<Value> {
        assert_eq!(bytes.first(), Some(&RECORD_SEPARATOR), "must start with RS");
        let text = std::str::from_utf8(bytes).unwrap();
        text.split('\u{1e}')
            .skip(1)
            .map(|r| {
                assert!(r.ends_with('\n'), "record not newline-terminated: {r:?}");
                serde_json::from_str(r.trim_end()).unwrap()
            })
            .collect()
    }

    fn pn(n: u64) -> PacketHeader {
        PacketHeader {
            packet_type: PacketType::OneRtt,
            packet_number: n,
        }
    }

    fn every_event() -> Vec<QlogEvent> {
        let frames = vec![
            QlogFrame::Ack {
                ack_delay: Some(Duration::from_micros(250)),
                acked_ranges: vec![[0, 4], [6, 9]],
                ect1: Some(9),
                ect0: Some(0),
                ce: Some(2),
            },
            QlogFrame::Stream {
                stream_id: 4,
                offset: 1200,
                length_bytes: 1100,
                fin: false,
            },
            QlogFrame::Padding { length_bytes: 3 },
            QlogFrame::Ping,
            QlogFrame::MaxStreams {
                stream_type: StreamType::Bidirectional,
                maximum: 100,
            },
            QlogFrame::ConnectionClose {
                error_space: ErrorSpace::Application,
                error_code: 7,
                reason: "bye".into(),
            },
            QlogFrame::Unknown {
                raw_frame_type: 0x42,
            },
            QlogFrame::AckFrequency {
                sequence_number: 3,
                ack_eliciting_threshold: 9,
                request_max_ack_delay: Duration::from_micros(5_500),
            },
        ];
        vec![
            QlogEvent::PacketSent(PacketEvent {
                header: pn(10),
                frames: frames.clone(),
                raw: Some(RawInfo { length_bytes: 1252 }),
            }),
            QlogEvent::PacketReceived(PacketEvent {
                header: pn(11),
                frames: vec![QlogFrame::HandshakeDone],
                raw: None,
            }),
            QlogEvent::PacketLost {
                header: pn(12),
                frames: vec![],
                trigger: Some(LossTrigger::TimeThreshold),
            },
            QlogEvent::MetricsUpdated(Metrics {
                min_rtt: Some(Duration::from_millis(20)),
                smoothed_rtt: Some(Duration::from_micros(22_500)),
                latest_rtt: Some(Duration::from_micros(21_250)),
                congestion_window_bytes: Some(14_720),
                bytes_in_flight: Some(12_000),
                pacing_rate_bps: Some(5_000_000),
                ..Metrics::default()
            }),
            QlogEvent::CongestionStateUpdated {
                old: Some("slow_start".into()),
                new: "congestion_avoidance".into(),
                trigger: Some("ecn".into()),
            },
            QlogEvent::EcnStateUpdated {
                old: Some(EcnState::Testing),
                new: EcnState::Capable,
                trigger: None,
            },
        ]
    }

    fn start(reference: Instant, classes: EventClasses) -> TraceStart {
        TraceStart {
            title: "bulk over L4S".into(),
            vantage: VantagePoint::new(VantageKind::Client, "brisk client"),
            reference,
            reference_time_ms: 1_764_190_800_123.5,
            group_id: Some("0a0b".into()),
            classes,
        }
    }

    fn write(reference: Instant, events: &[(Instant, QlogEvent)]) -> Vec<u8> {
        let mut w = QlogWriter::new(Vec::new(), &start(reference, EventClasses::ALL)).unwrap();
        for (t, e) in events {
            w.event(*t, e).unwrap();
        }
        assert_eq!(w.events(), events.len() as u64);
        w.into_inner().unwrap()
    }

    #[test]
    fn header_names_format_version_vantage_and_reference() {
        let recs = records(&write(Instant::from_millis(1_500), &[]));
        assert_eq!(recs.len(), 1);
        assert_eq!(
            recs[0],
            json!({
                "qlog_format": "JSON-SEQ",
                "qlog_version": "0.3",
                "title": "bulk over L4S",
                "trace": {
                    "vantage_point": {"name": "brisk client", "type": "client"},
                    "common_fields": {"protocol_type": ["QUIC"], "time_format": "relative", "reference_time": 1_764_190_800_123.5, "group_id": "0a0b"}
                }
            })
        );
    }

    #[test]
    fn every_event_is_one_json_record_with_qlog_names() {
        let reference = Instant::from_millis(1_000);
        let events: Vec<(Instant, QlogEvent)> = every_event()
            .into_iter()
            .enumerate()
            .map(|(i, e)| (reference + Duration::from_micros(1_500 * i as u64 + 250), e))
            .collect();
        let bytes = write(reference, &events);
        assert_eq!(
            bytes.iter().filter(|&&b| b == RECORD_SEPARATOR).count(),
            events.len() + 1
        );
        let recs = records(&bytes);
        let names: Vec<&str> = recs[1..]
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "transport:packet_sent",
                "transport:packet_received",
                "recovery:packet_lost",
                "recovery:metrics_updated",
                "recovery:congestion_state_updated",
                "recovery:ecn_state_updated",
            ]
        );
        let times: Vec<f64> = recs[1..]
            .iter()
            .map(|r| r["time"].as_f64().unwrap())
            .collect();
        assert_eq!(times, [0.25, 1.75, 3.25, 4.75, 6.25, 7.75]);

        let sent = &recs[1]["data"];
        assert_eq!(
            sent["header"],
            json!({"packet_type": "1RTT", "packet_number": 10})
        );
        assert_eq!(sent["raw"], json!({"length": 1252}));
        assert_eq!(
            sent["frames"][0],
            json!({"frame_type": "ack", "ack_delay": 0.25, "acked_ranges": [[0, 4], [6, 9]], "ect1": 9, "ect0": 0, "ce": 2})
        );
        assert_eq!(
            sent["frames"][1],
            json!({"frame_type": "stream", "stream_id": 4, "offset": 1200, "length": 1100, "fin": false})
        );
        assert_eq!(sent["frames"][3], json!({"frame_type": "ping"}));
        assert_eq!(
            sent["frames"][4],
            json!({"frame_type": "max_streams", "stream_type": "bidirectional", "maximum": 100})
        );
        assert_eq!(
            sent["frames"][6],
            json!({"frame_type": "unknown", "raw_frame_type": 66})
        );
        assert_eq!(
            sent["frames"][7],
            json!({"frame_type": "ack_frequency", "sequence_number": 3, "ack_eliciting_threshold": 9, "request_max_ack_delay": 5.5})
        );
        assert_eq!(
            recs[2]["data"]["frames"],
            json!([{"frame_type": "handshake_done"}])
        );
        assert_eq!(
            recs[3]["data"],
            json!({"header": {"packet_type": "1RTT", "packet_number": 12}, "trigger": "time_threshold"})
        );
        assert_eq!(
            recs[4]["data"],
            json!({
                "min_rtt": 20.0, "smoothed_rtt": 22.5, "latest_rtt": 21.25,
                "congestion_window": 14720, "bytes_in_flight": 12000, "pacing_rate": 5000000
            })
        );
        assert_eq!(
            recs[5]["data"],
            json!({"old": "slow_start", "new": "congestion_avoidance", "trigger": "ecn"})
        );
        assert_eq!(recs[6]["data"], json!({"old": "testing", "new": "capable"}));
    }

    #[test]
    fn events_before_the_reference_get_negative_times() {
        let ev = QlogEvent::EcnStateUpdated {
            old: None,
            new: EcnState::Failed,
            trigger: None,
        };
        let recs = records(&write(
            Instant::from_millis(10),
            &[(Instant::from_millis(9), ev)],
        ));
        assert_eq!(recs[1]["time"], json!(-1.0));
    }

    #[test]
    fn io_errors_surface() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(matches!(
            QlogWriter::new(Broken, &start(Instant::ZERO, EventClasses::ALL)),
            Err(QlogError::Io(_))
        ));
    }

    #[test]
    fn connection_started_names_both_ends_by_family() {
        for (local, remote, family) in [
            ("192.0.2.1:40000", "198.51.100.7:4433", "ipv4"),
            ("[2001:db8::1]:40000", "[2001:db8:1::7]:4433", "ipv6"),
        ] {
            let ev = QlogEvent::ConnectionStarted(ConnectionStarted::new(
                Some(local.parse().unwrap()),
                remote.parse().unwrap(),
                "01".into(),
                "02".into(),
            ));
            assert_eq!(EventClass::of(&ev), EventClass::Connectivity);
            let recs = records(&write(Instant::ZERO, &[(Instant::ZERO, ev)]));
            let l: std::net::SocketAddr = local.parse().unwrap();
            let r: std::net::SocketAddr = remote.parse().unwrap();
            assert_eq!(recs[1]["name"], "connectivity:connection_started");
            assert_eq!(
                recs[1]["data"],
                json!({
                    "ip_version": family, "protocol": "QUIC",
                    "src_ip": l.ip().to_string(), "src_port": 40000,
                    "dst_ip": r.ip().to_string(), "dst_port": 4433,
                    "src_cid": "01", "dst_cid": "02"
                })
            );
        }
    }

    #[test]
    fn classes_parse_print_and_filter() {
        let default = EventClasses::default();
        assert_eq!(
            default.to_string(),
            "connectivity,handshake,recovery,congestion"
        );
        assert_eq!("all".parse::<EventClasses>(), Ok(EventClasses::ALL));
        assert_eq!(
            " packets , recovery"
                .parse::<EventClasses>()
                .map(|c| c.to_string()),
            Ok("packets,recovery".to_string())
        );
        let err = "packets,streems".parse::<EventClasses>().unwrap_err();
        assert!(
            err.contains("\"streems\"") && err.contains("congestion"),
            "{err}"
        );

        let handshake = QlogEvent::PacketSent(PacketEvent {
            header: PacketHeader {
                packet_type: PacketType::Initial,
                packet_number: 0,
            },
            frames: vec![],
            raw: None,
        });
        let mut events: Vec<(Instant, QlogEvent)> = vec![(Instant::ZERO, handshake)];
        events.extend(every_event().into_iter().map(|e| (Instant::ZERO, e)));
        let mut w = QlogWriter::new(Vec::new(), &start(Instant::ZERO, default)).unwrap();
        for (t, e) in &events {
            w.event(*t, e).unwrap();
        }
        let recs = records(&w.into_inner().unwrap());
        let kept: Vec<String> = recs[1..]
            .iter()
            .map(|r| format!("{} {}", r["name"], r["data"]["header"]["packet_type"]))
            .collect();
        assert_eq!(
            kept,
            [
                "\"transport:packet_sent\" \"initial\"",
                "\"recovery:packet_lost\" \"1RTT\"",
                "\"recovery:metrics_updated\" null",
                "\"recovery:congestion_state_updated\" null",
                "\"recovery:ecn_state_updated\" null",
            ],
            "1-RTT packet events are left out by default"
        );
    }
}
