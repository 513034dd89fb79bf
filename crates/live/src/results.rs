//! The results of a live run: the same type as `brisk sim`'s
//! (brisk-netmodel's `RunResults`), with the router's `fidelity` and each
//! flow's direction in place of the engine's counters, and the built-in
//! bulk transfer's report when one ran.

use crate::bulk::BulkReport;
use crate::router::event_loop::RouterOutcome;
use crate::router::fidelity::DirectionFidelity;
use crate::router::flows::FlowEntry;
use brisk_netmodel::{Direction, FlowEnds, FlowLabel, RunResults};
use brisk_trace::stats::Percentiles;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;

/// Goal of the issue: added delay within this of the model at p99.
pub const DELAY_ERROR_GOAL: Duration = Duration::from_micros(500);
/// Goal of the issue: achieved rate within this fraction of configured.
pub const RATE_ERROR_GOAL: f64 = 0.01;

/// The live lab runs no transport of its own inside the router: its flows
/// carry no transport report.
#[derive(Debug, Clone, Copy, Serialize)]
pub enum NoTransport {}

/// A flow the router saw, in the simulator's shape.
pub type FlowResults = brisk_netmodel::FlowResults<NoTransport>;

/// A live run's results: the simulator's shape (brisk-netmodel's
/// [`RunResults`], the same type `brisk sim` prints), with what the live
/// router adds in place of the engine's counters.
pub type LiveResults = RunResults<NoTransport, Routed>;

/// What the live router adds to the shared results.
#[derive(Debug, Clone, Serialize)]
pub struct Routed {
    /// Which way each flow's data went ("down" or "up"), in `flows`' order:
    /// the queue it crossed is `queue` or `queue_up`.
    pub flow_directions: Vec<&'static str>,
    pub fidelity: FidelityResults,
    /// The client command's exit code (128 + signal if killed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bulk: Option<BulkReport>,
    /// The TCP optimizer's counters, when the router ran one (for tests
    /// and lab sections; not written to the results file).
    #[serde(skip)]
    pub optimizer: Option<brisk_optimizer::Stats>,
}

/// How closely the router followed the models in real time.
#[derive(Debug, Clone, Serialize)]
pub struct FidelityResults {
    pub down: DirectionFidelityResults,
    pub up: DirectionFidelityResults,
    /// How late the router handled each model deadline.
    pub timer_lateness_ms: Percentiles,
    pub timer_fires: u64,
    pub wakeups: u64,
    /// Busy-poll window before each deadline.
    pub spin_us: u64,
    pub realtime_priority: bool,
    /// CPU time of the router thread over the run's wall time.
    pub router_cpu_fraction: f64,
    /// Share of the run's wall time the router spent busy-polling.
    pub spin_fraction: f64,
    /// Datagrams the kernel dropped at the TUN devices because the router
    /// did not read them in time.
    pub tun_drops: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    /// Turns in which a device still had datagrams after a full read burst.
    pub full_bursts: u64,
    /// Datagrams refused: not IP, or not between the lab's two sides.
    pub refused_malformed: u64,
    pub refused_foreign: u64,
    /// Packets of flows past the flow table's limit.
    pub untracked_packets: u64,
    /// Whether every goal was met (no drops at the devices, delay error
    /// p99 within 0.5 ms, rate within 1%).
    pub kept_up: bool,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DirectionFidelityResults {
    /// The constant rate checked against (null for other rate models).
    pub configured_bps: Option<u64>,
    /// Rate achieved over packets the model sent back to back.
    pub achieved_bps: Option<f64>,
    /// `achieved / configured - 1`.
    pub rate_error: Option<f64>,
    pub configured_delay_ms: f64,
    /// Real write time minus the model's delivery time, per packet: the
    /// error of the added delay.
    pub delay_error_ms: Percentiles,
    /// Packets written more than 1 ms late.
    pub late_packets: u64,
}

/// What the lab measured besides the router's own state.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    pub duration: Duration,
    pub tun_drops: u64,
    pub client_exit_code: Option<i32>,
    pub bulk: Option<BulkReport>,
    pub spin: Duration,
    pub ip: &'static str,
}

fn protocol_name(p: u8) -> &'static str {
    match p {
        6 => "tcp",
        17 => "udp",
        1 => "icmp",
        58 => "icmpv6",
        _ => "ip",
    }
}

/// One flow in the simulator's shape. `link_delay` holds the base delay of
/// each direction (down, up): the one opposite to the data completes a
/// round trip estimated from one-way delays.
fn flow_results(id: usize, f: &FlowEntry, link_delay: [Duration; 2]) -> FlowResults {
    let data = f.data_direction();
    let d = f.dir(data);
    let k = f.key;
    let (client, server) = (
        SocketAddr::new(k.client, k.client_port),
        SocketAddr::new(k.server, k.server_port),
    );
    let (src, dst) = match data {
        Direction::Down => (server, client),
        Direction::Up => (client, server),
    };
    let active = match (d.first_sent, d.last_delivered) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let kind = protocol_name(k.protocol);
    let label = FlowLabel {
        id,
        name: format!("{kind} {src} > {dst}"),
        kind,
        src: src.to_string(),
        dst: dst.to_string(),
    };
    let ends = FlowEnds {
        sent_bytes: d.sent_bytes(),
        delivered_bytes: d.delivered_bytes(),
        active_s: active,
        rtt_ms: (!d.rtt.is_empty()).then(|| d.rtt.percentiles()),
        return_delay: link_delay[data.opposite().index()],
        unanswered: 0,
        brisk: None,
    };
    FlowResults::new(label, ends, &d.metrics)
}

fn direction_fidelity(f: &DirectionFidelity, delay: Duration) -> DirectionFidelityResults {
    let achieved = f.achieved_bps();
    DirectionFidelityResults {
        configured_bps: f.configured_bps,
        achieved_bps: achieved,
        rate_error: f
            .configured_bps
            .zip(achieved)
            .map(|(c, a)| a / c as f64 - 1.0),
        configured_delay_ms: delay.as_secs_f64() * 1000.0,
        delay_error_ms: f.delay_error.percentiles(),
        late_packets: f.late_packets,
    }
}

/// The warnings a run deserves, one per missed goal.
fn warnings(f: &FidelityResults) -> Vec<String> {
    let mut w = Vec::new();
    if f.tun_drops > 0 {
        w.push(format!(
            "the kernel dropped {} datagrams at the TUN devices: the router did not read them in time",
            f.tun_drops
        ));
    }
    if f.write_errors > 0 {
        w.push(format!(
            "{} datagrams could not be written to a TUN device",
            f.write_errors
        ));
    }
    for (name, d) in [("down", &f.down), ("up", &f.up)] {
        let goal_ms = DELAY_ERROR_GOAL.as_secs_f64() * 1000.0;
        if d.delay_error_ms.count > 0 && d.delay_error_ms.p99 > goal_ms {
            w.push(format!(
                "{name}: packets were written {:.3} ms after the model's time at p99 (goal {goal_ms} ms)",
                d.delay_error_ms.p99
            ));
        }
        if let Some(e) = d.rate_error
            && e.abs() > RATE_ERROR_GOAL
        {
            w.push(format!(
                "{name}: achieved rate is {:+.2}% off the configured rate (goal 1%)",
                e * 100.0
            ));
        }
    }
    w
}

/// Builds the results of a finished run.
pub fn build(scenario: &str, seed: u64, outcome: &RouterOutcome, facts: RunFacts) -> LiveResults {
    let core = &outcome.core;
    let s = &outcome.stats;
    let b = core.bottleneck();
    let delays = Direction::BOTH.map(|dir| b.link(dir).config().delay);
    let entries = core.flows().flows();
    let flows = entries
        .iter()
        .enumerate()
        .map(|(i, f)| flow_results(i, f, delays))
        .collect();
    let flow_directions = entries.iter().map(|f| f.data_direction().name()).collect();
    let refused = core.refused();
    let secs = facts.duration.as_secs_f64().max(1e-9);
    let mut fidelity = FidelityResults {
        down: direction_fidelity(core.fidelity(Direction::Down), delays[0]),
        up: direction_fidelity(core.fidelity(Direction::Up), delays[1]),
        timer_lateness_ms: s.timer_lateness.percentiles(),
        timer_fires: s.timer_fires,
        wakeups: s.wakeups,
        spin_us: u64::try_from(facts.spin.as_micros()).unwrap_or(u64::MAX),
        realtime_priority: s.realtime,
        router_cpu_fraction: s.cpu.as_secs_f64() / secs,
        spin_fraction: s.spinning.as_secs_f64() / secs,
        tun_drops: facts.tun_drops,
        read_errors: s.read_errors,
        write_errors: s.write_errors,
        full_bursts: s.full_bursts,
        refused_malformed: refused.malformed,
        refused_foreign: refused.foreign,
        untracked_packets: core.flows().untracked_packets,
        kept_up: true,
        warnings: Vec::new(),
    };
    fidelity.warnings = warnings(&fidelity);
    fidelity.kept_up = fidelity.warnings.is_empty();
    LiveResults {
        scenario: scenario.to_string(),
        seed,
        ip: facts.ip,
        duration_s: facts.duration.as_secs_f64(),
        link: b.link_results(Direction::Down, facts.duration),
        link_up: b.link_results(Direction::Up, facts.duration),
        queue: b.queue_results(Direction::Down),
        queue_up: b.queue_results(Direction::Up),
        flows,
        driver: Routed {
            flow_directions,
            fidelity,
            client_exit_code: facts.client_exit_code,
            bulk: facts.bulk,
            optimizer: core.optimizer().map(|o| o.stats().clone()),
        },
    }
}
