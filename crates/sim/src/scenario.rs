//! Scenario files: what network to build and what traffic to run over it.
//!
//! A scenario is TOML with human units (see `docs/SCENARIOS.md`). Parsing
//! is two steps: serde reads the structure (its errors carry the field and
//! line), then [`Scenario::validate`] checks what types cannot express
//! (which fields apply to which flow kind, ranges), naming the flow and its
//! line.

/// The address family a run uses.
pub use brisk_netmodel::IpFamily;
use brisk_netmodel::network::{Network, NetworkError, line_of};
use brisk_netmodel::units;
/// Parses a duration as scenario files write it ("10s", "500ms"), for
/// command-line overrides.
pub use brisk_netmodel::units::parse_duration;
use brisk_proto::congestion::CcAlgorithm;
use brisk_wire::Ecn;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: line {line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

/// A whole scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in reports and output file names.
    #[serde(default)]
    pub name: String,
    /// One sentence for people reading the report.
    #[serde(default)]
    pub description: String,
    /// Virtual time to simulate.
    #[serde(with = "units::duration")]
    pub duration: Duration,
    /// Seed of every random draw in the run; `--seed` overrides it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// "v4" (default) or "v6": every scenario runs on either family.
    #[serde(default)]
    pub ip: IpFamily,
    // The network tables (`profile`, `[link.*]`, `[queue.*]`,
    // `[queue_up.*]`) are declared here only so that `deny_unknown_fields`
    // accepts them; `Network` reads their contents into `network`.
    #[expect(
        dead_code,
        reason = "declared for deny_unknown_fields; read by Network"
    )]
    #[serde(default)]
    profile: IgnoredAny,
    #[expect(
        dead_code,
        reason = "declared for deny_unknown_fields; read by Network"
    )]
    #[serde(default)]
    link: IgnoredAny,
    #[expect(
        dead_code,
        reason = "declared for deny_unknown_fields; read by Network"
    )]
    #[serde(default)]
    queue: IgnoredAny,
    #[expect(
        dead_code,
        reason = "declared for deny_unknown_fields; read by Network"
    )]
    #[serde(default)]
    queue_up: IgnoredAny,
    /// The bottleneck: links and queues of both directions.
    #[serde(skip)]
    pub network: Network,
    /// Traffic; each entry is one flow between its own pair of hosts.
    #[serde(default)]
    pub flows: Vec<Spanned<FlowSpec>>,
    /// Capture options for `--out`.
    #[serde(default)]
    pub capture: CaptureSpec,
    /// What the file says that runs but is probably not meant, each naming
    /// its line; the CLI prints them before running.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

fn default_seed() -> u64 {
    1
}

/// What `--out` captures.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaptureSpec {
    /// Bytes of each packet kept in the pcap (headers are enough for
    /// tcptrace and tshark and keep files small).
    pub snaplen: u32,
}

impl Default for CaptureSpec {
    fn default() -> Self {
        CaptureSpec { snaplen: 128 }
    }
}

/// The kinds of traffic a flow can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// UDP at a constant bit rate.
    Cbr,
    /// UDP alternating between a constant rate and silence.
    OnOff,
    /// Small echo requests at a fixed interval: RTT under load.
    Ping,
    /// The Brisk transport carrying one of the [`BriskApp`] workloads.
    Brisk,
    /// The L4S team's reference UDP Prague controller, a bulk sender and
    /// an ACK-per-packet receiver; only in builds with the
    /// `reference-prague` feature.
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

/// What the application on a `brisk` flow does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriskApp {
    /// One stream of `bytes` (or until `stop`) from sender to receiver.
    #[default]
    Bulk,
    /// Timestamped messages on one stream: the interactive sender of the
    /// send-buffer experiment.
    Messages,
    /// A video call: frames at `fps`, sized from the transport's rate
    /// estimate, one stream each.
    Video,
    /// A feed page: the receiver fetches `objects` over multiplexed,
    /// prioritized streams.
    Feed,
}

impl BriskApp {
    pub fn name(self) -> &'static str {
        match self {
            BriskApp::Bulk => "bulk",
            BriskApp::Messages => "messages",
            BriskApp::Video => "video",
            BriskApp::Feed => "feed",
        }
    }

    /// The app-specific fields it accepts.
    fn fields(self) -> &'static [&'static str] {
        match self {
            BriskApp::Bulk => &["bytes"],
            BriskApp::Messages => &["message_size", "interval", "send_buffer", "low_water_mark"],
            BriskApp::Video => &["fps", "send_buffer", "low_water_mark"],
            BriskApp::Feed => &["objects", "sequential", "setup_round_trips"],
        }
    }
}

/// One flow as written in the file. Fields that do not apply to the kind
/// are rejected by [`Scenario::validate`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub kind: FlowKind,
    /// Label in reports; defaults to "<kind>-<index>".
    #[serde(default)]
    pub name: Option<String>,
    /// When the flow starts sending.
    #[serde(default, with = "opt_duration")]
    pub start: Option<Duration>,
    /// When it stops (default: the end of the run).
    #[serde(default, with = "opt_duration")]
    pub stop: Option<Duration>,
    /// The flow's base RTT; must be at least the bottleneck's two
    /// propagation delays. The rest is added on the sender's access link.
    #[serde(default, with = "opt_duration")]
    pub rtt: Option<Duration>,
    /// Sending rate (cbr, on_off).
    #[serde(default, with = "opt_rate")]
    pub rate: Option<u64>,
    /// IP datagram size (cbr, on_off, ping).
    #[serde(default, with = "opt_bytes")]
    pub size: Option<u64>,
    /// ECN codepoint to send: "not_ect" (default), "ect0", "ect1"; `false`
    /// is "not_ect" (for brisk: ECN off; the controller picks the codepoint).
    #[serde(default, deserialize_with = "ecn_field")]
    pub ecn: Option<EcnSpec>,
    /// On period (on_off).
    #[serde(default, with = "opt_duration")]
    pub on: Option<Duration>,
    /// Off period (on_off).
    #[serde(default, with = "opt_duration")]
    pub off: Option<Duration>,
    /// Probe interval (ping); period between messages (brisk messages).
    #[serde(default, with = "opt_duration")]
    pub interval: Option<Duration>,
    /// How late after its slot on the grid a datagram may leave (cbr,
    /// on_off, ping), as a host's timer noise: a uniform draw per send.
    /// Default: one whole interval, capped there; "0s" keeps the exact grid.
    #[serde(default, with = "opt_duration")]
    pub send_jitter: Option<Duration>,
    /// Congestion controller (brisk): "prague" (default), "cubic", "newreno", "bbr".
    #[serde(default)]
    pub cc: Option<CcAlgorithm>,
    /// Let the sender ask the receiver for fewer ACKs while its window is
    /// large (brisk; default true). `false`: an ACK every second packet.
    #[serde(default)]
    pub ack_frequency: Option<bool>,
    /// Forward error correction (brisk): both ends announce it and the
    /// sender's streams take this policy: "on", "adaptive" or "off".
    /// Absent: not announced, no repair at all.
    #[serde(default)]
    pub fec: Option<brisk_proto::fec::FecPolicy>,
    /// The workload (brisk): "bulk" (default), "messages", "video", "feed".
    #[serde(default)]
    pub app: Option<BriskApp>,
    /// Total bytes to send (brisk bulk; default: until `stop`).
    #[serde(default, with = "opt_bytes")]
    pub bytes: Option<u64>,
    /// Bytes per message, header included (brisk messages; default 1KB).
    #[serde(default, with = "opt_bytes")]
    pub message_size: Option<u64>,
    /// Frames per second (brisk video; default 30).
    #[serde(default, deserialize_with = "count")]
    pub fps: Option<u32>,
    /// Object sizes of a feed page, the API response first (brisk feed).
    #[serde(default, deserialize_with = "byte_list")]
    pub objects: Option<Vec<u64>>,
    /// HTTP/1.1 on one connection (brisk feed): object i+1 is requested
    /// only once object i has arrived whole (default false: multiplexed).
    #[serde(default)]
    pub sequential: Option<bool>,
    /// Small request/response exchanges before the first real request
    /// (brisk feed; default 0): TCP's and TLS 1.2's handshake round trips,
    /// queued and lost like the page itself.
    #[serde(default, deserialize_with = "count")]
    pub setup_round_trips: Option<u32>,
    /// The classic path (brisk messages, video): the app keeps up to this
    /// many bytes queued in the transport, like SO_SNDBUF.
    #[serde(default, with = "opt_bytes")]
    pub send_buffer: Option<u64>,
    /// The low-water-mark path (brisk messages, video): a fresh unit is
    /// written only while fewer bytes than this wait unsent.
    #[serde(default, with = "opt_bytes")]
    pub low_water_mark: Option<u64>,
}

/// The ECN codepoint a source writes on its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnSpec {
    NotEct,
    Ect0,
    Ect1,
}

/// `ecn` as a codepoint name, or `false` for "not_ect". `true` is refused:
/// it would mean "ECN-capable" without saying which codepoint for the raw
/// sources, and is already the default of brisk flows.
fn ecn_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<EcnSpec>, D::Error> {
    use serde::de::{self, Visitor};
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<EcnSpec>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("\"not_ect\", \"ect0\", \"ect1\" or false")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            match s {
                "not_ect" => Ok(Some(EcnSpec::NotEct)),
                "ect0" => Ok(Some(EcnSpec::Ect0)),
                "ect1" => Ok(Some(EcnSpec::Ect1)),
                _ => Err(E::unknown_variant(s, &["not_ect", "ect0", "ect1"])),
            }
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
            if b {
                Err(E::custom(
                    "`ecn = true` is ambiguous: name a codepoint, or omit `ecn` (brisk flows use ECN by default)",
                ))
            } else {
                Ok(Some(EcnSpec::NotEct))
            }
        }
    }
    d.deserialize_any(V)
}

/// A whole number that fits 32 bits; out of range says "too large" or
/// "too small" rather than naming a type.
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    use serde::de::Error;
    match i64::deserialize(d)? {
        n if n < 0 => Err(D::Error::custom(format!("{n} is too small (at least 0)"))),
        n => u32::try_from(n)
            .map(Some)
            .map_err(|_| D::Error::custom(format!("{n} is too large (at most {})", u32::MAX))),
    }
}

/// A list of sizes such as `["4kB", "60kB"]`.
fn byte_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    #[derive(Deserialize)]
    struct Size(#[serde(with = "units::bytes")] u64);
    let v: Vec<Size> = Vec::deserialize(d)?;
    Ok(Some(v.into_iter().map(|s| s.0).collect()))
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

macro_rules! opt_adapter {
    ($name:ident, $ty:ty, $inner:path) => {
        mod $name {
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(
                d: D,
            ) -> Result<Option<$ty>, D::Error> {
                $inner(d).map(Some)
            }
        }
    };
}
opt_adapter!(
    opt_duration,
    std::time::Duration,
    brisk_netmodel::units::duration::deserialize
);
opt_adapter!(opt_rate, u64, brisk_netmodel::units::rate_bps::deserialize);
opt_adapter!(opt_bytes, u64, brisk_netmodel::units::bytes::deserialize);

/// Which optional fields each kind accepts (beyond kind, name, start, stop, rtt).
fn allowed_fields(kind: FlowKind) -> &'static [&'static str] {
    match kind {
        FlowKind::Cbr => &["rate", "size", "ecn", "send_jitter"],
        FlowKind::OnOff => &["rate", "size", "ecn", "on", "off", "send_jitter"],
        FlowKind::Ping => &["size", "ecn", "interval", "send_jitter"],
        FlowKind::Brisk => &[
            "cc",
            "app",
            "ecn",
            "ack_frequency",
            "fec",
            "bytes",
            "message_size",
            "interval",
            "fps",
            "objects",
            "sequential",
            "setup_round_trips",
            "send_buffer",
            "low_water_mark",
        ],
        FlowKind::UdpPrague => &[],
    }
}

/// Why a `udp_prague` flow cannot run in a build without the feature.
pub const REFERENCE_NOT_BUILT: &str = "kind \"udp_prague\" (the reference UDP Prague \
     controller) is not in this build: its crate includes GPL-2.0-only code, so it is \
     built only with the reference-prague feature; rebuild with \
     `--features brisk-sim/reference-prague` (for the lab: \
     `--features brisk-lab/reference-prague`)";

/// Feed objects are fetched on streams the receiver opens, within the
/// transport's default limit on concurrent streams.
pub const MAX_FEED_OBJECTS: usize = 100;
/// More handshake round trips than any real stack needs is a typo.
pub const MAX_SETUP_ROUND_TRIPS: u32 = 10;
/// The smallest message: its header (length, sequence number, time).
pub const MIN_MESSAGE_BYTES: u64 = 20;
/// IP datagram size of cbr and on_off flows that give no `size`.
pub const DEFAULT_SOURCE_SIZE: u64 = 1500;
/// Probe interval of ping flows that give no `interval`.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_millis(100);
/// The longest run: the simulator keeps per-flow series for the whole
/// run, so memory grows with virtual time; a day of it is already far
/// beyond any experiment here (they run seconds to minutes).
pub const MAX_RUN_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The most flows in one run: each has its own pair of hosts, metrics and
/// series (about 0.4 MB apiece).
pub const MAX_FLOWS: usize = 1000;
/// The most datagrams the built-in sources (cbr, on_off, ping) may send
/// in one run, all flows together: each is an event the engine handles,
/// and a rate typed with a wrong unit would otherwise run for hours.
pub const MAX_SOURCE_PACKETS: u64 = 100_000_000;

impl FlowSpec {
    fn present_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |name, present: bool| {
            if present {
                v.push(name)
            }
        };
        add("rate", self.rate.is_some());
        add("size", self.size.is_some());
        add("ecn", self.ecn.is_some());
        add("on", self.on.is_some());
        add("off", self.off.is_some());
        add("interval", self.interval.is_some());
        add("send_jitter", self.send_jitter.is_some());
        add("cc", self.cc.is_some());
        add("ack_frequency", self.ack_frequency.is_some());
        add("fec", self.fec.is_some());
        add("app", self.app.is_some());
        add("bytes", self.bytes.is_some());
        add("message_size", self.message_size.is_some());
        add("fps", self.fps.is_some());
        add("objects", self.objects.is_some());
        add("sequential", self.sequential.is_some());
        add("setup_round_trips", self.setup_round_trips.is_some());
        add("send_buffer", self.send_buffer.is_some());
        add("low_water_mark", self.low_water_mark.is_some());
        v
    }

    /// Checks what applies only to brisk flows: fields per app and their
    /// ranges.
    fn validate_brisk(&self) -> Result<(), String> {
        let app = self.app.unwrap_or_default();
        for field in self.present_fields() {
            let generic = ["cc", "app", "ecn", "ack_frequency", "fec"].contains(&field);
            if !generic && !app.fields().contains(&field) {
                return Err(format!(
                    "field `{field}` does not apply to app \"{}\"",
                    app.name()
                ));
            }
        }
        if matches!(self.ecn, Some(EcnSpec::Ect0 | EcnSpec::Ect1)) {
            return Err(
                "`ecn` takes only false here: the congestion controller picks the codepoint".into(),
            );
        }
        if self.send_buffer.is_some() && self.low_water_mark.is_some() {
            return Err("`send_buffer` and `low_water_mark` are two paths: pick one".into());
        }
        if matches!(self.bytes, Some(0))
            || matches!(self.send_buffer, Some(0))
            || matches!(self.low_water_mark, Some(0))
        {
            return Err("`bytes`, `send_buffer` and `low_water_mark` must be above zero".into());
        }
        if let Some(m) = self.message_size
            && !(MIN_MESSAGE_BYTES..=16_000_000).contains(&m)
        {
            return Err(format!(
                "`message_size` must be {MIN_MESSAGE_BYTES}B..16MB (it includes a {MIN_MESSAGE_BYTES}-byte header)"
            ));
        }
        if let Some(fps) = self.fps
            && !(1..=240).contains(&fps)
        {
            return Err("`fps` must be 1..240".into());
        }
        if app == BriskApp::Feed {
            let objects = self.objects.as_deref().unwrap_or_default();
            if objects.is_empty() {
                return Err("field `objects` is required (a non-empty list of sizes)".into());
            }
            if objects.len() > MAX_FEED_OBJECTS {
                return Err(format!("`objects` takes at most {MAX_FEED_OBJECTS} sizes"));
            }
            if objects.contains(&0) {
                return Err("`objects` sizes must be above zero".into());
            }
            if let Some(n) = self.setup_round_trips
                && n > MAX_SETUP_ROUND_TRIPS
            {
                return Err(format!(
                    "`setup_round_trips` must be 0..{MAX_SETUP_ROUND_TRIPS} (handshake round trips before the first request)"
                ));
            }
        }
        Ok(())
    }

    /// The label reports use.
    pub fn label(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}-{index}", self.kind.name()))
    }
}

impl Scenario {
    /// Reads and validates a scenario file. Trace files it names are read
    /// relative to the scenario's own directory.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: shown.clone(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Scenario::parse_with_traces(&text, &shown, |trace| {
            std::fs::read_to_string(base.join(trace))
        })
    }

    /// Parses and validates scenario text that names no trace file;
    /// `origin` names the text in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with_traces(text, origin, |trace| {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} (trace files need a scenario file to be relative to)",
                    trace.display()
                ),
            ))
        })
    }

    /// Parses, reads trace files through `read_trace`, then validates.
    pub fn parse_with_traces(
        text: &str,
        origin: &str,
        read_trace: impl FnMut(&Path) -> std::io::Result<String>,
    ) -> Result<Scenario, ScenarioError> {
        let invalid = |line: usize, message: String| ScenarioError::Invalid {
            path: origin.to_string(),
            line,
            message,
        };
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        scenario.network = Network::parse_with_traces(text, read_trace).map_err(|e| match e {
            NetworkError::Parse(message) => ScenarioError::Parse {
                path: origin.to_string(),
                message,
            },
            NetworkError::Invalid { line, message } => invalid(line, message),
        })?;
        scenario.validate(text, origin)?;
        scenario.warnings = scenario.suspicious(text);
        Ok(scenario)
    }

    /// What runs but is probably not what the author meant: a link
    /// direction left to the default, a flow cut short by the end of the run.
    fn suspicious(&self, text: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.network.profile.is_none() {
            let table = text.parse::<toml::Table>().unwrap_or_default();
            let links = table.get("link").and_then(toml::Value::as_table);
            for dir in ["down", "up"] {
                let table = format!("link.{dir}");
                if !links.is_some_and(|l| l.contains_key(dir)) {
                    warnings.push(format!(
                        "no [{table}] table: the {dir} direction is the default link, 10 Mbit/s with no delay and no loss; write the table (or a `profile`) to say so"
                    ));
                }
            }
        }
        for (i, spanned) in self.flows.iter().enumerate() {
            let f = spanned.get_ref();
            if let Some(stop) = f.stop
                && stop > self.duration
            {
                warnings.push(format!(
                    "line {}: flows[{i}] ({}): `stop` {stop:?} is after the end of the run ({:?}); the flow is cut short there",
                    line_of(text, spanned.span().start),
                    f.kind.name(),
                    self.duration
                ));
            }
        }
        warnings
    }

    /// Refuses a scenario with nothing to measure: the simulator needs at
    /// least one flow (the live lab runs its own traffic and does not).
    pub fn require_flows(&self, origin: &str) -> Result<(), ScenarioError> {
        if self.flows.is_empty() {
            return Err(ScenarioError::Parse {
                path: origin.to_string(),
                message: "no traffic: add at least one [[flows]] table (see the flow kinds in the scenario documentation)".into(),
            });
        }
        Ok(())
    }

    /// Checks what serde cannot: fields that do not apply to a flow's kind,
    /// missing required fields, and impossible values.
    pub fn validate(&self, text: &str, origin: &str) -> Result<(), ScenarioError> {
        let invalid = |offset: usize, message: String| ScenarioError::Invalid {
            path: origin.to_string(),
            line: line_of(text, offset),
            message,
        };
        let duration_at = text.find("duration").unwrap_or(0);
        if self.duration.is_zero() {
            return Err(invalid(
                duration_at,
                "`duration` must be greater than zero".into(),
            ));
        }
        if self.duration > MAX_RUN_DURATION {
            return Err(invalid(
                duration_at,
                format!(
                    "`duration` {:?} is longer than the simulator's limit of {} h: split the study into shorter runs (per-flow series grow with the run)",
                    self.duration,
                    MAX_RUN_DURATION.as_secs() / 3600
                ),
            ));
        }
        if self.flows.len() > MAX_FLOWS {
            let at = self.flows[MAX_FLOWS].span().start;
            return Err(invalid(
                at,
                format!(
                    "{} flows is more than the limit of {MAX_FLOWS} per run (each flow has its own hosts, metrics and series)",
                    self.flows.len()
                ),
            ));
        }
        let mut source_packets = 0u64;
        let min_rtt = self.network.link.down.delay + self.network.link.up.delay;
        let mut labels: Vec<(String, usize)> = Vec::new();
        for (i, spanned) in self.flows.iter().enumerate() {
            let f = spanned.get_ref();
            let at = spanned.span().start;
            let who = format!("flows[{i}] ({})", f.kind.name());
            let label = f.label(i);
            if let Some((_, first)) = labels.iter().find(|(l, _)| *l == label) {
                return Err(invalid(
                    at,
                    format!(
                        "{who}: name {label:?} is already used by the flow at line {}; give each flow its own `name` so results can tell them apart",
                        line_of(text, *first)
                    ),
                ));
            }
            labels.push((label, at));
            let start = f.start.unwrap_or_default();
            if start >= self.duration {
                return Err(invalid(
                    at,
                    format!(
                        "{who}: `start` {start:?} is at or after the end of the run (`duration` = {:?}): the flow would never send",
                        self.duration
                    ),
                ));
            }
            for field in f.present_fields() {
                if !allowed_fields(f.kind).contains(&field) {
                    return Err(invalid(
                        at,
                        format!("{who}: field `{field}` does not apply to this kind"),
                    ));
                }
            }
            let required: &[(&str, bool)] = match f.kind {
                FlowKind::Cbr => &[("rate", f.rate.is_some())],
                FlowKind::OnOff => &[
                    ("rate", f.rate.is_some()),
                    ("on", f.on.is_some()),
                    ("off", f.off.is_some()),
                ],
                FlowKind::Ping | FlowKind::Brisk | FlowKind::UdpPrague => &[],
            };
            if let Some((field, _)) = required.iter().find(|(_, ok)| !ok) {
                return Err(invalid(at, format!("{who}: field `{field}` is required")));
            }
            if f.kind == FlowKind::UdpPrague && !cfg!(feature = "reference-prague") {
                return Err(invalid(at, format!("{who}: {REFERENCE_NOT_BUILT}")));
            }
            if f.kind == FlowKind::Brisk {
                f.validate_brisk()
                    .map_err(|e| invalid(at, format!("{who}: {e}")))?;
            }
            if let Some(rtt) = f.rtt
                && rtt < min_rtt
            {
                return Err(invalid(
                    at,
                    format!(
                        "{who}: `rtt` {rtt:?} is below the bottleneck's own round trip {min_rtt:?}"
                    ),
                ));
            }
            if let Some(stop) = f.stop
                && stop <= start
            {
                return Err(invalid(
                    at,
                    format!(
                        "{who}: `stop` {stop:?} must be after `start` ({start:?}): the flow would never send"
                    ),
                ));
            }
            let min_size = self.header_bytes() + 8;
            if let Some(size) = f.size
                && !(min_size..=65_000).contains(&size)
            {
                return Err(invalid(
                    at,
                    format!("{who}: `size` must be {min_size}..65000 bytes"),
                ));
            }
            if matches!(f.interval, Some(d) if d.is_zero())
                || matches!(f.on, Some(d) if d.is_zero())
            {
                return Err(invalid(
                    at,
                    format!("{who}: periods must be greater than zero"),
                ));
            }
            let active = f.stop.unwrap_or(self.duration).min(self.duration) - start;
            let packets = self.source_packets(f, active);
            source_packets = source_packets.saturating_add(packets);
            if source_packets > MAX_SOURCE_PACKETS {
                let field = if f.kind == FlowKind::Ping {
                    "interval"
                } else {
                    "rate"
                };
                return Err(invalid(
                    at,
                    format!(
                        "{who}: the sources would send {source_packets} datagrams in {active:?} with this flow, more than the limit of {MAX_SOURCE_PACKETS} per run: lower `{field}`, raise `size` or shorten the run"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// How many datagrams a built-in source sends while `active` (0 for
    /// brisk and reference Prague flows, whose controllers are held to the
    /// link's rate).
    fn source_packets(&self, f: &FlowSpec, active: Duration) -> u64 {
        let size = f.size.unwrap_or(DEFAULT_SOURCE_SIZE).max(1) as f64;
        let packets = match f.kind {
            FlowKind::Cbr | FlowKind::OnOff => {
                f.rate.unwrap_or(0) as f64 * active.as_secs_f64() / (8.0 * size)
            }
            FlowKind::Ping => {
                let interval = f.interval.unwrap_or(DEFAULT_PING_INTERVAL).as_secs_f64();
                active.as_secs_f64() / interval.max(1e-9)
            }
            FlowKind::Brisk | FlowKind::UdpPrague => 0.0,
        };
        // Saturates at u64::MAX for absurd values.
        packets.ceil() as u64
    }

    /// Bytes of IP + UDP header on this scenario's address family.
    pub fn header_bytes(&self) -> u64 {
        self.ip.udp_header_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "demo"
duration = "10s"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 200

[[flows]]
kind = "cbr"
rate = "12Mbit"
ecn = "ect0"

[[flows]]
kind = "ping"
interval = "100ms"
rtt = "40ms"
"#;

    #[test]
    fn parses_a_good_file() {
        let s = Scenario::parse(GOOD, "demo.toml").unwrap();
        assert_eq!(s.duration, Duration::from_secs(10));
        assert_eq!(s.flows.len(), 2);
        assert_eq!(s.flows[0].get_ref().rate, Some(12_000_000));
        assert_eq!(s.flows[1].get_ref().label(1), "ping-1");
        assert_eq!(s.seed, 1);
    }

    fn err(text: &str) -> String {
        Scenario::parse(text, "bad.toml").unwrap_err().to_string()
    }

    #[test]
    fn serde_errors_name_field_and_line() {
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"lots\"\n");
        assert!(
            e.contains("line 4") && e.contains("rate") && e.contains("lots"),
            "{e}"
        );
        let e = err("duration = \"10s\"\nspeed = 3\n");
        assert!(e.contains("line 2") && e.contains("speed"), "{e}");
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"tcp\"\n");
        assert!(e.contains("line 3") && e.contains("tcp"), "{e}");
        let e = err("[[flows]]\nkind = \"ping\"\n");
        assert!(e.contains("duration"), "{e}");
    }

    #[test]
    fn inputs_that_would_hang_or_exhaust_memory_are_refused_with_field_and_line() {
        // A rate with a wrong unit: the source alone would be billions of
        // datagrams.
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1e30bit\"\n");
        assert!(e.contains("line 4") && e.contains("rate"), "{e}");
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1000Gbit\"\n");
        assert!(
            e.contains("line 2") && e.contains("lower `rate`") && e.contains("100000000"),
            "{e}"
        );
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"ping\"\ninterval = \"10ns\"\n");
        assert!(e.contains("line 2") && e.contains("`interval`"), "{e}");
        // The same sources over a short run are fine.
        assert!(
            Scenario::parse(
                "duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"10Gbit\"\n",
                "ok.toml"
            )
            .is_ok()
        );
        let e = err(
            "duration = \"1s\"\n[link.down]\noutage_every = { period = \"2ns\", duration = \"1ns\" }\n[[flows]]\nkind = \"ping\"\n",
        );
        assert!(
            e.contains("line 3") && e.contains("outage period") && e.contains("floor"),
            "{e}"
        );
        let e = err("\nduration = \"1000000min\"\n[[flows]]\nkind = \"ping\"\n");
        assert!(
            e.contains("line 2") && e.contains("`duration`") && e.contains("24 h"),
            "{e}"
        );
        assert!(
            Scenario::parse(
                "duration = \"1440min\"\n[[flows]]\nkind = \"ping\"\n",
                "ok.toml"
            )
            .is_ok()
        );
        let mut text = String::from("duration = \"1s\"\n");
        for _ in 0..=MAX_FLOWS {
            text.push_str("[[flows]]\nkind = \"ping\"\n");
        }
        // Unnamed flows get distinct labels, so only the count is wrong.
        let e = err(&text);
        let line = 2 + 2 * MAX_FLOWS;
        assert!(
            e.contains(&format!("line {line}")) && e.contains("1001 flows"),
            "{e}"
        );
    }

    #[test]
    fn brisk_flows_take_their_fields_per_app() {
        let s = Scenario::parse(
            "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\ncc = \"cubic\"\napp = \"feed\"\nobjects = [\"4kB\", \"60KiB\"]\necn = false\n",
            "b.toml",
        )
        .unwrap();
        let f = s.flows[0].get_ref();
        assert_eq!(f.cc, Some(CcAlgorithm::Cubic));
        assert_eq!(f.objects.as_deref(), Some(&[4000, 61_440][..]));
        assert_eq!(f.ecn, Some(EcnSpec::NotEct));
        let s = Scenario::parse(
            "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"messages\"\nmessage_size = \"2kB\"\ninterval = \"10ms\"\nsend_buffer = \"120kB\"\n",
            "m.toml",
        )
        .unwrap();
        assert_eq!(s.flows[0].get_ref().send_buffer, Some(120_000));
        let brisk = |body: &str| {
            err(&format!(
                "duration = \"1s\"\n\n[[flows]]\nkind = \"brisk\"\n{body}"
            ))
        };
        let e = brisk("fps = 30\n");
        assert!(
            e.contains("line 3") && e.contains("`fps`") && e.contains("\"bulk\""),
            "{e}"
        );
        let e = brisk("app = \"video\"\nbytes = \"1MB\"\n");
        assert!(e.contains("`bytes`") && e.contains("\"video\""), "{e}");
        let e = brisk("app = \"feed\"\n");
        assert!(e.contains("`objects` is required"), "{e}");
        let e = brisk("app = \"messages\"\nsend_buffer = \"1kB\"\nlow_water_mark = \"1kB\"\n");
        assert!(e.contains("pick one"), "{e}");
        let e = brisk("ecn = \"ect1\"\n");
        assert!(e.contains("`ecn`"), "{e}");
        let e = brisk("app = \"messages\"\nmessage_size = \"10B\"\n");
        assert!(e.contains("`message_size`"), "{e}");
        let e = brisk("app = \"video\"\nfps = 0\n");
        assert!(e.contains("`fps`"), "{e}");
        let e = brisk("rate = \"1Mbit\"\n");
        assert!(e.contains("`rate` does not apply"), "{e}");
        let e = brisk("fec = \"maybe\"\n");
        assert!(
            e.contains("line 5") && e.contains("maybe") && e.contains("`adaptive`"),
            "{e}"
        );
        let e =
            err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\nfec = \"on\"\n");
        assert!(e.contains("`fec`"), "{e}");
        let e = brisk("cc = \"vegas\"\n");
        assert!(e.contains("line 5") && e.contains("vegas"), "{e}");
        let e = brisk("app = \"feed\"\nobjects = [\"4kB\", \"lots\"]\n");
        assert!(e.contains("line 6") && e.contains("lots"), "{e}");
        let e = brisk("ecn = true\n");
        assert!(e.contains("ecn"), "{e}");
        let e = brisk("app = \"video\"\nsequential = true\n");
        assert!(e.contains("`sequential`") && e.contains("\"video\""), "{e}");
        let e = brisk("setup_round_trips = 3\n");
        assert!(
            e.contains("`setup_round_trips`") && e.contains("\"bulk\""),
            "{e}"
        );
        let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nsetup_round_trips = 11\n");
        assert!(e.contains("`setup_round_trips` must be 0..10"), "{e}");
        let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nsetup_round_trips = -1\n");
        assert!(e.contains("setup_round_trips"), "{e}");
        let s = Scenario::parse(
            "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"feed\"\nobjects = [\"4kB\"]\nsequential = true\nsetup_round_trips = 3\n",
            "c.toml",
        )
        .unwrap();
        let f = s.flows[0].get_ref();
        assert_eq!((f.sequential, f.setup_round_trips), (Some(true), Some(3)));
        // Raw sources take `false` as "not_ect", and no brisk field.
        let e = err(
            "duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\ncc = \"prague\"\n",
        );
        assert!(e.contains("`cc` does not apply"), "{e}");
        let s = Scenario::parse(
            "duration = \"1s\"\n[[flows]]\nkind = \"ping\"\necn = false\n",
            "p",
        )
        .unwrap();
        assert_eq!(s.flows[0].get_ref().ecn, Some(EcnSpec::NotEct));
    }

    #[test]
    fn the_reference_kind_says_how_to_build_it_when_missing() {
        let text = "duration = \"1s\"\n[[flows]]\nkind = \"udp_prague\"\n";
        let parsed = Scenario::parse(text, "t.toml");
        if cfg!(feature = "reference-prague") {
            assert!(parsed.is_ok(), "{parsed:?}");
        } else {
            let e = parsed.unwrap_err().to_string();
            assert!(
                e.contains("reference-prague") && e.contains("GPL-2.0") && e.contains("flows[0]"),
                "{e}"
            );
        }
    }

    #[test]
    fn profiles_set_both_links() {
        let s = Scenario::parse("duration = \"1s\"\nprofile = \"lte\"\n", "p.toml").unwrap();
        assert_eq!(
            s.network.link.down.delay + s.network.link.up.delay,
            Duration::from_millis(220)
        );
        let e = err("duration = \"1s\"\nprofile = \"lte\"\n[link.down]\nrate = \"1Mbit\"\n");
        assert!(e.contains("profile"), "{e}");
        let e = err("duration = \"1s\"\n\nprofile = \"6g\"\n");
        assert!(e.contains("line 3") && e.contains("lte"), "{e}");
    }

    #[test]
    fn queue_tables_are_read_per_direction() {
        let text = "duration = \"1s\"\n[queue.fq_codel]\n[queue_up.fifo]\nlimit_packets = 10\n";
        let tables = |down: Option<&str>, up: Option<&str>| brisk_netmodel::network::QueueTables {
            down: down.map(String::from),
            up: up.map(String::from),
        };
        assert_eq!(
            Scenario::parse(text, "t.toml")
                .unwrap()
                .network
                .queue_tables,
            tables(Some("fq_codel"), Some("fifo"))
        );
        let only_down = "duration = \"1s\"\n[queue.fq_codel]\n";
        assert_eq!(
            Scenario::parse(only_down, "t.toml")
                .unwrap()
                .network
                .queue_tables,
            tables(Some("fq_codel"), None)
        );
    }

    #[test]
    fn traces_are_read_through_the_callback() {
        let text = "duration = \"1s\"\n[link.down]\nrate = { mahimahi = \"t.down\" }\n";
        let s = Scenario::parse_with_traces(text, "t.toml", |p| {
            assert_eq!(p, Path::new("t.down"));
            Ok("1\n2\n".into())
        })
        .unwrap();
        assert!(s.network.link.down.validate().is_ok());
        let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("t.down") && e.contains("line 2"), "{e}");
        let e = Scenario::parse_with_traces(text, "t.toml", |_| Ok("x\n".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.down"), "{e}");
    }

    #[test]
    fn validation_errors_name_flow_field_and_line() {
        let e = err("duration = \"10s\"\n\n[[flows]]\nkind = \"ping\"\nrate = \"1Mbit\"\n");
        assert!(
            e.contains("line 3") && e.contains("flows[0]") && e.contains("`rate`"),
            "{e}"
        );
        let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\n");
        assert!(e.contains("`rate` is required"), "{e}");
        let e = err(
            "duration = \"10s\"\n[link.down]\ndelay = \"30ms\"\n[[flows]]\nkind = \"ping\"\nrtt = \"20ms\"\n",
        );
        assert!(e.contains("below the bottleneck"), "{e}");
        let e = err("duration = \"0s\"\n");
        assert!(e.contains("duration"), "{e}");
        let e =
            err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\nsize = \"10B\"\n");
        assert!(e.contains("`size`"), "{e}");
    }

    /// A link with both directions, for the checks below.
    const LINKS: &str = "[link.down]\nrate = \"10Mbit\"\n[link.up]\nrate = \"10Mbit\"\n";

    #[test]
    fn an_ambiguous_probability_is_refused_with_field_and_line() {
        for field in ["loss = \"1\"", "loss = 1", "duplicate = 1.0"] {
            let e = err(&format!("duration = \"1s\"\n[link.down]\n{field}\n"));
            let key = field.split(' ').next().unwrap_or_default();
            assert!(e.contains("line 3") && e.contains(key), "{e}");
            assert!(e.contains("ambiguous") && e.contains("100%"), "{e}");
        }
        let s = Scenario::parse("duration = \"1s\"\n[link.down]\nloss = \"100%\"\n", "l").unwrap();
        assert!(s.network.link.down.loss.is_some());
    }

    #[test]
    fn rates_tools_disagree_on_name_field_and_line() {
        let e = err("duration = \"1s\"\n\n[link.down]\nrate = \"1MBps\"\n");
        assert!(e.contains("line 4") && e.contains("rate"), "{e}");
        assert!(e.contains("\"8Mbit\"") || e.contains("\"1Mbit\""), "{e}");
        assert!(e.contains("\"1MB/s\""), "{e}");
        let e = err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1MB\"\n");
        assert!(
            e.contains("line 4") && e.contains("size, not a rate"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_flow_names_are_refused() {
        let e = err(&format!(
            "duration = \"1s\"\n{LINKS}[[flows]]\nkind = \"ping\"\nname = \"a\"\n\n[[flows]]\nkind = \"ping\"\nname = \"a\"\n"
        ));
        assert!(e.contains("line 10") && e.contains("flows[1]"), "{e}");
        assert!(e.contains("\"a\"") && e.contains("line 6"), "{e}");
        // A name may not take another flow's default label either.
        let e = err(&format!(
            "duration = \"1s\"\n{LINKS}[[flows]]\nkind = \"ping\"\n[[flows]]\nkind = \"ping\"\nname = \"ping-0\"\n"
        ));
        assert!(
            e.contains("\"ping-0\"") && e.contains("already used"),
            "{e}"
        );
    }

    #[test]
    fn flows_outside_the_run_are_refused() {
        let flow = |timing: &str| {
            err(&format!(
                "duration = \"10s\"\n{LINKS}[[flows]]\nkind = \"ping\"\n{timing}\n"
            ))
        };
        for timing in ["start = \"10s\"", "start = \"1min\""] {
            let e = flow(timing);
            assert!(e.contains("line 6") && e.contains("`start`"), "{e}");
            assert!(e.contains("end of the run"), "{e}");
        }
        for timing in ["stop = \"0s\"", "start = \"2s\"\nstop = \"1s\""] {
            let e = flow(timing);
            assert!(e.contains("line 6") && e.contains("`stop`"), "{e}");
            assert!(e.contains("after `start`"), "{e}");
        }
        let s = Scenario::parse(
            &format!("duration = \"10s\"\n{LINKS}[[flows]]\nkind = \"ping\"\nstop = \"20s\"\n"),
            "s",
        )
        .unwrap();
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("line 6") && s.warnings[0].contains("`stop`"));
    }

    #[test]
    fn missing_link_tables_are_warned_about() {
        let s = Scenario::parse(GOOD, "g").unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let s = Scenario::parse("duration = \"1s\"\nprofile = \"lte\"\n", "p").unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let s = Scenario::parse("duration = \"1s\"\n[link.up]\n", "u").unwrap();
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("[link.down]"), "{:?}", s.warnings);
        let s = Scenario::parse("duration = \"1s\"\n", "n").unwrap();
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[1].contains("[link.up]"), "{:?}", s.warnings);
        let s = Scenario::parse("duration = \"1s\"\nlink = { down = {}, up = {} }\n", "i").unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn a_scenario_without_flows_cannot_be_simulated() {
        let s = Scenario::parse(&format!("duration = \"1s\"\n{LINKS}"), "empty.toml").unwrap();
        let e = s.require_flows("empty.toml").unwrap_err().to_string();
        assert!(e.contains("empty.toml") && e.contains("[[flows]]"), "{e}");
        assert!(
            Scenario::parse(GOOD, "g")
                .unwrap()
                .require_flows("g")
                .is_ok()
        );
    }

    #[test]
    fn two_queues_for_one_direction_are_named() {
        let e = err("duration = \"1s\"\n[queue.fifo]\n\n[queue.codel]\n");
        assert!(e.contains("line 4") && e.contains("only one queue"), "{e}");
        assert!(
            e.contains("codel and fifo") || e.contains("fifo and codel"),
            "{e}"
        );
        let e = err("duration = \"1s\"\n[queue.fifo]\n[queue_up.pie]\n[queue_up.codel]\n");
        assert!(e.contains("line 4") && e.contains("queue_up"), "{e}");
    }

    #[test]
    fn values_out_of_range_say_so() {
        let e = err("duration = \"1e400s\"\n");
        assert!(
            e.contains("line 1") && e.contains("too large (at most"),
            "{e}"
        );
        let e = err("duration = \"1s\"\n[link.down]\ndelay = \"1e30s\"\n");
        assert!(e.contains("line 3") && e.contains("too large"), "{e}");
        let e = err(
            "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"video\"\nfps = 5000000000\n",
        );
        assert!(
            e.contains("line 5") && e.contains("fps") && e.contains("too large"),
            "{e}"
        );
        let e = err("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\nbytes = \"1e30GB\"\n");
        assert!(e.contains("line 4") && e.contains("too large"), "{e}");
    }
}
