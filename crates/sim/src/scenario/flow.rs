//! A flow as the engine runs it: the fields every flow has, and its
//! traffic as one variant per kind (and per application of a `brisk`
//! flow), each holding only the fields that apply to it, with their
//! defaults already filled in where the default does not depend on the run.

use brisk_proto::congestion::CcAlgorithm;
use brisk_wire::Ecn;
use serde::Deserialize;
use std::time::Duration;

/// Default size of a brisk message, header included.
pub const DEFAULT_MESSAGE_BYTES: u64 = 1000;
/// Default frame rate of a brisk video call.
pub const DEFAULT_FPS: u32 = 30;
/// The player's buffer in a brisk live stream that gives no `buffer`:
/// on a 220 ms path it absorbs a key frame's burst and a retransmission
/// while the target latency (buffer plus the fastest delivery) stays
/// near 700 ms, under OK.ru's one second.
pub const DEFAULT_STREAM_BUFFER: Duration = Duration::from_millis(600);
/// IP datagram size of cbr and on_off flows that give no `size`.
pub const DEFAULT_SOURCE_SIZE: u64 = 1500;
/// Probe interval of ping flows that give no `interval`.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_millis(100);

/// One flow of a scenario, between its own pair of hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Label in reports; `None`: "<kind>-<index>" (see [`Flow::label`]).
    pub name: Option<String>,
    /// When the flow starts sending; `None`: at the start of the run.
    pub start: Option<Duration>,
    /// When it stops; `None`: at the end of the run.
    pub stop: Option<Duration>,
    /// The flow's base RTT; `None`: the bottleneck's two propagation
    /// delays. Whatever it adds is put on the sender's access link.
    pub rtt: Option<Duration>,
    /// What the flow sends.
    pub traffic: Traffic,
    /// The line of the flow's `[[flows]]` table in the scenario file, for
    /// messages about it.
    pub line: usize,
}

impl Flow {
    /// The label reports use.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}-{index}", self.traffic.kind().name()))
    }
}

/// What a flow sends: one variant per `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum Traffic {
    /// UDP at a constant bit rate.
    Cbr(Source),
    /// UDP alternating between a constant rate and silence.
    OnOff {
        source: Source,
        /// How long each burst at `rate` lasts.
        on: Duration,
        /// How long each silence lasts.
        off: Duration,
    },
    /// Small echo requests at a fixed interval: RTT under load.
    Ping(Ping),
    /// The Brisk transport carrying one application.
    Brisk(Brisk),
    /// The L4S team's reference UDP Prague controller (only in builds with
    /// the `reference-prague` feature).
    UdpPrague,
}

impl Traffic {
    /// The kind as the file names it.
    pub fn kind(&self) -> FlowKind {
        match self {
            Traffic::Cbr(_) => FlowKind::Cbr,
            Traffic::OnOff { .. } => FlowKind::OnOff,
            Traffic::Ping(_) => FlowKind::Ping,
            Traffic::Brisk(_) => FlowKind::Brisk,
            Traffic::UdpPrague => FlowKind::UdpPrague,
        }
    }

    /// The codepoint a built-in UDP source (cbr, on_off, ping) writes;
    /// `None` for transports, whose controllers pick their own.
    pub fn source_ecn(&self) -> Option<EcnSpec> {
        match self {
            Traffic::Cbr(s) | Traffic::OnOff { source: s, .. } => Some(s.ecn),
            Traffic::Ping(p) => Some(p.ecn),
            Traffic::Brisk(_) | Traffic::UdpPrague => None,
        }
    }
}

/// A constant-rate UDP source (cbr, and on_off while on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Sending rate in bit/s of IP datagrams.
    pub rate_bps: u64,
    /// IP datagram size in bytes.
    pub size_bytes: u64,
    pub ecn: EcnSpec,
    /// How late after its grid slot a datagram may leave; `None`: up to
    /// one whole interval.
    pub send_jitter: Option<Duration>,
}

/// An echo prober.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    /// Time between probes.
    pub interval: Duration,
    /// IP datagram size in bytes; `None`: the headers plus 56 bytes, which
    /// depends on the address family of the run.
    pub size_bytes: Option<u64>,
    pub ecn: EcnSpec,
    /// As [`Source::send_jitter`].
    pub send_jitter: Option<Duration>,
}

/// A flow of the Brisk transport.
#[derive(Debug, Clone, PartialEq)]
pub struct Brisk {
    pub cc: CcAlgorithm,
    /// Whether the transport uses ECN (the controller picks the codepoint).
    pub ecn: bool,
    /// Whether the sender may ask the receiver for fewer ACKs while its
    /// window is large (`false`: an ACK every second packet).
    pub ack_frequency: bool,
    /// Prague's smaller datagrams and increase at low rates
    /// (`CcConfig::prague_small_datagrams`).
    pub prague_small_datagrams: bool,
    /// Prague's CE cuts stop at the delivered window on an aggregating
    /// link (`CcConfig::prague_burst_floor`); on by default.
    pub prague_burst_floor: bool,
    /// Prague's growth held at the delivered pipe plus 0.5 ms
    /// (`CcConfig::prague_pipe_cap`); the transport's default unless set.
    pub prague_pipe_cap: bool,
    /// BBR's Startup bounded to two BDPs in flight, ending on excess loss
    /// (the transport's `CcConfig::bbr_bounded_startup`); off by default.
    pub bbr_bounded_startup: bool,
    /// Forward error correction: both ends announce it and the sender's
    /// streams take this policy. `None`: not announced, no repair at all.
    pub fec: Option<brisk_proto::fec::FecPolicy>,
    pub app: BriskWorkloadSpec,
    /// When the sender changes address (`migrate_every`,
    /// `nat_rebind_every`); none by default.
    pub moves: crate::nat::Moves,
}

/// What the application on a brisk flow does, with the fields of that
/// application only.
#[derive(Debug, Clone, PartialEq)]
pub enum BriskWorkloadSpec {
    /// One stream from sender to receiver.
    Bulk {
        /// Bytes to send; `None`: until the flow stops.
        bytes: Option<u64>,
    },
    /// Timestamped messages on one stream.
    Messages {
        /// Bytes per message, its 20-byte header included.
        size_bytes: u64,
        /// At most one message per period; `None`: whenever writable.
        interval: Option<Duration>,
        /// `None`: the transport's own low-water mark.
        limit: Option<SendLimit>,
    },
    /// A video call: frames sized from the transport's rate estimate.
    Video {
        fps: u32,
        /// `None`: every frame is written (streams only).
        limit: Option<SendLimit>,
        /// How frames travel.
        delivery: VideoDelivery,
    },
    /// A feed page fetched over prioritized streams.
    Feed {
        /// Object sizes in bytes, the API response first.
        objects: Vec<u64>,
        /// One object at a time, as HTTP/1.1 on one connection.
        sequential: bool,
        /// Small exchanges before the first request (handshakes).
        setup_round_trips: u32,
        /// Set either way, the receiver host (the phone) runs the client,
        /// which knows the server's key from an earlier visit (IK, the
        /// resumed case): `Some(true)` sends its first request in its first
        /// flight as early data, `Some(false)` once the handshake is done.
        /// `None`: the sender host connects, as for every other app.
        early_data: Option<bool>,
        /// An attacker on the way sends a copy of that first flight again
        /// this long after it (from another port).
        replay_first_flight: Option<Duration>,
    },
    /// A live stream: the publisher's rate follows the path, the player
    /// buffers.
    Stream {
        fps: u32,
        /// The player's start-up and refill buffer.
        buffer: Duration,
        /// A fixed encoder rate in bit/s instead of the ladder: the
        /// publisher that ignores the path, for comparison.
        rate_bps: Option<u64>,
    },
}

/// How a video call's frames travel, as `delivery` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VideoDelivery {
    /// Unreliable datagrams, each frame's packets protected by forward
    /// error correction, a frame still unsent at its deadline dropped at
    /// the sender: what a call wants, as a late frame is a lost one.
    #[default]
    Datagrams,
    /// One stream per frame, reset at its deadline: the call as it ran
    /// before datagrams, kept to compare against.
    Streams,
}

impl VideoDelivery {
    pub fn name(self) -> &'static str {
        match self {
            VideoDelivery::Datagrams => "datagrams",
            VideoDelivery::Streams => "streams",
        }
    }
}

/// How a messages or video sender limits what it hands the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendLimit {
    /// The classic socket: up to this many bytes queued, like SO_SNDBUF.
    SendBuffer(u64),
    /// A unit is written only while fewer than this many bytes wait
    /// unsent (TCP_NOTSENT_LOWAT).
    LowWaterMark(u64),
}

/// The kinds of traffic a flow can be, as `kind` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    Cbr,
    OnOff,
    Ping,
    Brisk,
    UdpPrague,
}

impl FlowKind {
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Cbr => "cbr",
            FlowKind::OnOff => "on_off",
            FlowKind::Ping => "ping",
            FlowKind::Brisk => "brisk",
            FlowKind::UdpPrague => "udp_prague",
        }
    }
}

/// The applications of a `brisk` flow, as `app` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriskApp {
    #[default]
    Bulk,
    Messages,
    Video,
    Feed,
    Stream,
}

impl BriskApp {
    pub fn name(self) -> &'static str {
        match self {
            BriskApp::Bulk => "bulk",
            BriskApp::Messages => "messages",
            BriskApp::Video => "video",
            BriskApp::Feed => "feed",
            BriskApp::Stream => "stream",
        }
    }
}

/// The ECN codepoint a built-in source writes on its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnSpec {
    #[default]
    NotEct,
    Ect0,
    Ect1,
}

impl From<EcnSpec> for Ecn {
    fn from(e: EcnSpec) -> Ecn {
        match e {
            EcnSpec::NotEct => Ecn::NotEct,
            EcnSpec::Ect0 => Ecn::Ect0,
            EcnSpec::Ect1 => Ecn::Ect1,
        }
    }
}
