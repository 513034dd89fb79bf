//! What can be wrong with a scenario, as types: the file's syntax, its
//! network half, the run as a whole, or one flow.

use super::flow::{BriskApp, FlowKind};
use super::limits::{
    MAX_FEED_OBJECTS, MAX_FLOWS, MAX_FPS, MAX_RUN_DURATION, MAX_SETUP_ROUND_TRIPS,
    MAX_SOURCE_PACKETS, MIN_MESSAGE_BYTES,
};
use std::time::Duration;

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The TOML or a value in it did not parse (the message names field
    /// and line).
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// The network half (profile, links, queues) is impossible.
    #[error("{path}: line {line}: {message}")]
    Network {
        path: String,
        line: usize,
        message: String,
    },
    /// The run as a whole is impossible.
    #[error("{path}: line {line}: {error}")]
    Run {
        path: String,
        line: usize,
        error: RunError,
    },
    /// One flow is impossible; `line` is the line of the field at fault,
    /// or of the flow's table when no one field is.
    #[error("{path}: line {line}: flows[{index}] ({kind}): {error}", kind = kind.name())]
    Flow {
        path: String,
        line: usize,
        index: usize,
        kind: FlowKind,
        error: FlowError,
    },
    /// Nothing to simulate.
    #[error(
        "{path}: no traffic: add at least one [[flows]] table (see the flow kinds in the scenario documentation)"
    )]
    NoFlows { path: String },
}

/// What is wrong with the run as a whole.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    #[error("`duration` must be greater than zero")]
    ZeroDuration,
    #[error(
        "`duration` {0:?} is longer than the simulator's limit of {hours} h: split the study into shorter runs (per-flow series grow with the run)",
        hours = MAX_RUN_DURATION.as_secs() / 3600
    )]
    TooLong(Duration),
    #[error(
        "{0} flows is more than the limit of {MAX_FLOWS} per run (each flow has its own hosts, metrics and series)"
    )]
    TooManyFlows(usize),
}

/// What is wrong with one flow.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlowError {
    /// A field the flow's kind does not have.
    #[error("field `{field}` does not apply to kind \"{kind}\"", kind = kind.name())]
    NotForKind { field: &'static str, kind: FlowKind },
    /// A brisk field the flow's application does not use.
    #[error("field `{field}` does not apply to app \"{app}\"", app = app.name())]
    NotForApp { field: &'static str, app: BriskApp },
    #[error("field `{0}` is required")]
    Missing(&'static str),
    #[error(
        "name {name:?} is already used by the flow at line {first_line}; give each flow its own `name` so results can tell them apart"
    )]
    DuplicateName { name: String, first_line: usize },
    #[error(
        "`start` {start:?} is at or after the end of the run (`duration` = {duration:?}): the flow would never send"
    )]
    StartsAfterRun { start: Duration, duration: Duration },
    #[error("`stop` {stop:?} must be after `start` ({start:?}): the flow would never send")]
    StopsBeforeStart { stop: Duration, start: Duration },
    #[error("`rtt` {rtt:?} is below the bottleneck's own round trip {bottleneck:?}")]
    RttBelowBottleneck { rtt: Duration, bottleneck: Duration },
    #[error("`size` must be {min}..{max} bytes")]
    SizeOutOfRange { min: u64, max: u64 },
    #[error("`{0}` must be greater than zero")]
    ZeroPeriod(&'static str),
    #[error(
        "the sources would send {packets} datagrams in {active:?} with this flow, more than the limit of {MAX_SOURCE_PACKETS} per run: lower `{field}`, raise `size` or shorten the run"
    )]
    TooManyPackets {
        packets: u64,
        active: Duration,
        field: &'static str,
    },
    #[error("{}", super::limits::REFERENCE_NOT_BUILT)]
    ReferenceNotBuilt,
    #[error("`ecn` takes only false here: the congestion controller picks the codepoint")]
    TransportCodepoint,
    #[error("`send_buffer` and `low_water_mark` are two paths: pick one")]
    TwoSendLimits,
    #[error(
        "`send_buffer` and `low_water_mark` limit streams: they need `delivery = \"streams\"` (datagrams have their own deadline)"
    )]
    LimitNeedsStreams,
    #[error("`{0}` must be above zero")]
    ZeroBytes(&'static str),
    #[error(
        "`message_size` must be {MIN_MESSAGE_BYTES}B..16MB (it includes a {MIN_MESSAGE_BYTES}-byte header)"
    )]
    MessageSize,
    #[error("`fps` must be 1..{MAX_FPS}")]
    FrameRate,
    #[error("field `objects` is required (a non-empty list of sizes)")]
    NoObjects,
    #[error("`objects` takes at most {MAX_FEED_OBJECTS} sizes")]
    TooManyObjects,
    #[error("`objects` sizes must be above zero")]
    EmptyObject,
    #[error(
        "`setup_round_trips` must be 0..{MAX_SETUP_ROUND_TRIPS} (handshake round trips before the first request)"
    )]
    SetupRoundTrips,
    #[error("a live stream's fixed `rate` must be 100kbit..100Mbit (frames grow with it)")]
    StreamRate,
    #[error(
        "`{0}` moves the sender, but with `early_data` the sender host is the server: drop one of the two"
    )]
    EarlyDataMoves(&'static str),
    #[error(
        "`replay_first_flight` replays a first flight's early data: it needs `early_data = true`"
    )]
    ReplayNeedsEarlyData,
}
