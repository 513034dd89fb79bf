//! Scenario files: what network to build and what traffic to run over it.
//!
//! A scenario is TOML with human units (see `docs/SCENARIOS.md`). Parsing
//! is two steps: serde reads the structure (its errors carry the field and
//! line), then each flow becomes a typed [`Flow`] (one [`Traffic`] variant
//! per kind and brisk application, holding only its own fields: a field
//! that does not apply is named with its line) and the whole is checked
//! against the run ([`Scenario::validate`]). Errors are typed:
//! [`ScenarioError`], [`FlowError`], [`RunError`].
//!
//! Modules: `flow` the typed flows; `fields` a `[[flows]]` table as written
//! and its conversion; `error` the error types; `limits` the bounds.

mod error;
mod fields;
mod flow;
mod limits;
#[cfg(test)]
mod tests;

pub use error::{FlowError, RunError, ScenarioError};
pub use flow::{
    Brisk, BriskApp, BriskWorkloadSpec, DEFAULT_FPS, DEFAULT_MESSAGE_BYTES, DEFAULT_PING_INTERVAL,
    DEFAULT_SOURCE_SIZE, DEFAULT_STREAM_BUFFER, EcnSpec, Flow, FlowKind, Ping, SendLimit, Source,
    Traffic, VideoDelivery,
};
pub use limits::{
    MAX_DATAGRAM_BYTES, MAX_FEED_OBJECTS, MAX_FLOWS, MAX_RUN_DURATION, MAX_SETUP_ROUND_TRIPS,
    MAX_SOURCE_PACKETS, MIN_MESSAGE_BYTES, REFERENCE_NOT_BUILT,
};

/// The address family a run uses.
pub use brisk_netmodel::IpFamily;
use brisk_netmodel::network::{Network, NetworkError, line_of};
use brisk_netmodel::units;
/// Parses a duration as scenario files write it ("10s", "500ms"), for
/// command-line overrides.
pub use brisk_netmodel::units::parse_duration;
use fields::RawFlow;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// A whole scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Short name, used in reports and output file names.
    pub name: String,
    /// One sentence for people reading the report.
    pub description: String,
    /// Virtual time to simulate.
    pub duration: Duration,
    /// Seed of every random draw in the run; `--seed` overrides it.
    pub seed: u64,
    /// "v4" (default) or "v6": every scenario runs on either family.
    pub ip: IpFamily,
    /// The bottleneck: links and queues of both directions.
    pub network: Network,
    /// Traffic; each entry is one flow between its own pair of hosts.
    pub flows: Vec<Flow>,
    /// Capture options for `--out`.
    pub capture: CaptureSpec,
    /// What the file says that runs but is probably not meant, each naming
    /// its line; the CLI prints them before running.
    pub warnings: Vec<String>,
}

/// The top level of a scenario file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(with = "units::duration")]
    duration: Duration,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default)]
    ip: IpFamily,
    // The network tables (`profile`, `[link.*]`, `[queue.*]`,
    // `[queue_up.*]`) are declared here only so that `deny_unknown_fields`
    // accepts them; `Network` reads their contents.
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
    // `[optimizer]` puts the TCP optimizer into `brisk live`'s router;
    // brisk-live reads it, the simulator has no router to put it in.
    #[expect(
        dead_code,
        reason = "declared for deny_unknown_fields; read by brisk live"
    )]
    #[serde(default)]
    optimizer: IgnoredAny,
    #[serde(default)]
    flows: Vec<Spanned<RawFlow>>,
    #[serde(default)]
    capture: CaptureSpec,
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
        let path = || origin.to_string();
        let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: path(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let network = Network::parse_with_traces(text, read_trace).map_err(|e| match e {
            NetworkError::Parse(message) => ScenarioError::Parse {
                path: path(),
                message,
            },
            NetworkError::Invalid { line, message } => ScenarioError::Network {
                path: path(),
                line,
                message,
            },
        })?;
        let mut flows = Vec::with_capacity(raw.flows.len());
        for (index, spanned) in raw.flows.into_iter().enumerate() {
            let at = spanned.span().start;
            let raw_flow = spanned.into_inner();
            let kind = raw_flow.kind();
            let flow =
                raw_flow
                    .into_flow(at, line_of(text, at))
                    .map_err(|e| ScenarioError::Flow {
                        path: path(),
                        line: line_of(text, e.at),
                        index,
                        kind,
                        error: e.error,
                    })?;
            flows.push(flow);
        }
        let mut scenario = Scenario {
            name: raw.name,
            description: raw.description,
            duration: raw.duration,
            seed: raw.seed,
            ip: raw.ip,
            network,
            flows,
            capture: raw.capture,
            warnings: Vec::new(),
        };
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
        for (i, f) in self.flows.iter().enumerate() {
            if let Some(stop) = f.stop
                && stop > self.duration
            {
                warnings.push(format!(
                    "line {}: flows[{i}] ({}): `stop` {stop:?} is after the end of the run ({:?}); the flow is cut short there",
                    f.line,
                    f.traffic.kind().name(),
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
            return Err(ScenarioError::NoFlows {
                path: origin.to_string(),
            });
        }
        Ok(())
    }

    /// Checks what a flow alone cannot: the run's length and flow count,
    /// each flow against the run (names, times, round trip, datagram
    /// sizes of the address family), and the sources' total packets.
    pub fn validate(&self, text: &str, origin: &str) -> Result<(), ScenarioError> {
        let run_error = |line: usize, error: RunError| ScenarioError::Run {
            path: origin.to_string(),
            line,
            error,
        };
        let duration_line = line_of(text, text.find("duration").unwrap_or(0));
        if self.duration.is_zero() {
            return Err(run_error(duration_line, RunError::ZeroDuration));
        }
        if self.duration > MAX_RUN_DURATION {
            return Err(run_error(duration_line, RunError::TooLong(self.duration)));
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(run_error(
                self.flows[MAX_FLOWS].line,
                RunError::TooManyFlows(self.flows.len()),
            ));
        }
        let mut source_packets = 0u64;
        let mut labels: Vec<(String, usize)> = Vec::new();
        for (index, f) in self.flows.iter().enumerate() {
            let flow_error = |error: FlowError| ScenarioError::Flow {
                path: origin.to_string(),
                line: f.line,
                index,
                kind: f.traffic.kind(),
                error,
            };
            let label = f.label(index);
            if let Some((_, first_line)) = labels.iter().find(|(l, _)| *l == label) {
                return Err(flow_error(FlowError::DuplicateName {
                    name: label,
                    first_line: *first_line,
                }));
            }
            labels.push((label, f.line));
            self.check_flow(f, &mut source_packets)
                .map_err(flow_error)?;
        }
        Ok(())
    }

    /// Checks one flow against the run; adds its datagrams to `source_packets`.
    fn check_flow(&self, f: &Flow, source_packets: &mut u64) -> Result<(), FlowError> {
        let start = f.start.unwrap_or_default();
        if start >= self.duration {
            return Err(FlowError::StartsAfterRun {
                start,
                duration: self.duration,
            });
        }
        if matches!(f.traffic, Traffic::UdpPrague) && !cfg!(feature = "reference-prague") {
            return Err(FlowError::ReferenceNotBuilt);
        }
        let bottleneck = self.network.link.down.delay + self.network.link.up.delay;
        if let Some(rtt) = f.rtt
            && rtt < bottleneck
        {
            return Err(FlowError::RttBelowBottleneck { rtt, bottleneck });
        }
        if let Some(stop) = f.stop
            && stop <= start
        {
            return Err(FlowError::StopsBeforeStart { stop, start });
        }
        let size = match &f.traffic {
            Traffic::Cbr(s) | Traffic::OnOff { source: s, .. } => Some(s.size_bytes),
            Traffic::Ping(p) => p.size_bytes,
            Traffic::Brisk(_) | Traffic::UdpPrague => None,
        };
        let min = self.header_bytes() + 8;
        if let Some(size) = size
            && !(min..=MAX_DATAGRAM_BYTES).contains(&size)
        {
            return Err(FlowError::SizeOutOfRange {
                min,
                max: MAX_DATAGRAM_BYTES,
            });
        }
        let active = f.stop.unwrap_or(self.duration).min(self.duration) - start;
        *source_packets = source_packets.saturating_add(source_packets_of(&f.traffic, active));
        if *source_packets > MAX_SOURCE_PACKETS {
            let field = if matches!(f.traffic, Traffic::Ping(_)) {
                "interval"
            } else {
                "rate"
            };
            return Err(FlowError::TooManyPackets {
                packets: *source_packets,
                active,
                field,
            });
        }
        Ok(())
    }

    /// Bytes of IP + UDP header on this scenario's address family.
    pub fn header_bytes(&self) -> u64 {
        self.ip.udp_header_bytes()
    }
}

/// How many datagrams a built-in source sends while `active` (0 for
/// transports, whose controllers are held to the link's rate).
fn source_packets_of(traffic: &Traffic, active: Duration) -> u64 {
    let packets = match traffic {
        Traffic::Cbr(s) | Traffic::OnOff { source: s, .. } => {
            s.rate_bps as f64 * active.as_secs_f64() / (8.0 * s.size_bytes.max(1) as f64)
        }
        Traffic::Ping(p) => active.as_secs_f64() / p.interval.as_secs_f64().max(1e-9),
        Traffic::Brisk(_) | Traffic::UdpPrague => 0.0,
    };
    // Saturates at u64::MAX for absurd values.
    packets.ceil() as u64
}
