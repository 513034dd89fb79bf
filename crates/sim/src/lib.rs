//! Brisk's deterministic virtual-time network simulator.
//!
//! Layer: drives the sans-IO models of `brisk-netmodel` (queues, links) and
//! the applications of [`flows`] in virtual time, jumping from one event to
//! the next. Output is a pure function of the scenario and the seed: the
//! same inputs give byte-identical results and captures.
//!
//! Modules: [`scenario`] reads and validates TOML scenarios; [`engine`] the
//! event loop and the dumbbell topology; [`flows`] the traffic (built-in
//! sources and the plug-in trait a transport implements); [`metrics`]
//! per-flow measurements; [`results`] the JSON shape of a run; [`capture`]
//! the bottleneck as a pcap file.

pub mod capture;
pub mod engine;
pub mod flows;
pub mod metrics;
pub mod results;
pub mod scenario;

use brisk_time::Instant;
use brisk_trace::stats::{LatencySummary, Percentiles};
use engine::{Engine, FlowSetup, Outcome};
use flows::{ConstantRate, FlowApp, Ping};
use results::{EngineResults, FlowResults, LinkResults, QueueResults, Results};
use scenario::{FlowKind, FlowSpec, IpFamily, Scenario};
use std::time::Duration;

/// How to run a scenario.
#[derive(Default)]
pub struct RunOptions<'c> {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Receives every packet crossing the bottleneck (for pcap output).
    pub capture: Option<&'c mut dyn engine::CaptureSink>,
    /// Keep per-packet time series (for plots).
    pub series: bool,
    /// Overrides the scenario's address family.
    pub ip: Option<IpFamily>,
}

/// A finished run: its results and whatever was recorded.
pub struct Run {
    pub results: Results,
    pub outcome: Outcome,
}

/// Builds the application of one flow spec.
fn build_app(s: &Scenario, spec: &FlowSpec, setup: &mut FlowSetup) -> Box<dyn FlowApp> {
    let header = s.header_bytes() as usize;
    let ecn = spec.ecn.map(Into::into).unwrap_or_default();
    match spec.kind {
        FlowKind::Cbr | FlowKind::OnOff => {
            let on_off = spec.on.zip(spec.off);
            Box::new(ConstantRate::new(
                setup.addrs,
                spec.rate.unwrap_or(1_000_000),
                spec.size.unwrap_or(1500) as usize,
                header,
                ecn,
                setup.start,
                setup.stop,
                on_off,
            ))
        }
        FlowKind::Ping => Box::new(Ping::new(
            setup.addrs,
            spec.interval.unwrap_or(Duration::from_millis(100)),
            spec.size.unwrap_or(header as u64 + 56) as usize,
            header,
            ecn,
            setup.start,
            setup.stop,
        )),
    }
}

/// Runs a validated scenario.
pub fn run(scenario: &Scenario, options: RunOptions<'_>) -> Run {
    let mut s = scenario.clone();
    if let Some(ip) = options.ip {
        s.ip = ip;
    }
    let seed = options.seed.unwrap_or(s.seed);
    let mut engine = Engine::new(&s, seed, options.capture);
    let end = Instant::ZERO + s.duration;
    for (i, spanned) in s.flows.iter().enumerate() {
        let spec = spanned.get_ref();
        let mut setup = FlowSetup {
            name: spec.label(i),
            kind: spec.kind.name(),
            app: Box::new(flows::Idle),
            addrs: engine::flow_addrs(s.ip, i),
            start: Instant::ZERO + spec.start.unwrap_or_default(),
            stop: spec.stop.map_or(end, |d| (Instant::ZERO + d).min(end)),
            rtt: spec.rtt.unwrap_or_else(|| engine.bottleneck_rtt()),
        };
        setup.app = build_app(&s, spec, &mut setup);
        engine.add_flow(setup, options.series);
    }
    let outcome = engine.run();
    let results = summarize(&s, seed, &outcome);
    Run { results, outcome }
}

fn link_results(link: &brisk_netmodel::Link, duration: Duration, lost: u64) -> LinkResults {
    let st = link.stats();
    let secs = duration.as_secs_f64().max(1e-9);
    LinkResults {
        utilization: (st.busy.as_secs_f64() / secs).min(1.0),
        transmitted_packets: st.transmitted_packets,
        transmitted_bytes: st.transmitted_bytes,
        throughput_mbps: st.transmitted_bytes as f64 * 8.0 / secs / 1e6,
        lost_packets: lost,
    }
}

fn queue_results(link: &brisk_netmodel::Link, delay: &LatencySummary) -> QueueResults {
    let q = link.queue();
    let st = q.stats();
    QueueResults {
        kind: q.name(),
        drops: st.drops(),
        drops_overflow: st.dropped_overflow,
        drops_aqm: st.dropped_aqm,
        marks: st.marked,
        enqueued_packets: st.enqueued_packets,
        delay_ms: delay.percentiles(),
    }
}

fn summarize(s: &Scenario, seed: u64, o: &Outcome) -> Results {
    let end = o.end;
    let flows = o
        .flows
        .iter()
        .enumerate()
        .map(|(id, f)| {
            let report = f.app.report();
            let m = &f.metrics;
            let active = (f.stop.min(end) - f.start).as_secs_f64().max(1e-9);
            let (rtt_ms, rtt_measured) = if report.rtt_samples.is_empty() {
                // One-way kinds: forward delay as measured, plus the
                // return path's base delay (it carries no load).
                let back = f.base_rtt.as_secs_f64() * 1000.0 / 2.0;
                let owd = m.one_way_delay.percentiles();
                let add = |v: f64| if owd.count == 0 { 0.0 } else { v + back };
                let rtt = Percentiles {
                    p50: add(owd.p50),
                    p90: add(owd.p90),
                    p99: add(owd.p99),
                    max: add(owd.max),
                    mean: add(owd.mean),
                    count: owd.count,
                };
                (rtt, false)
            } else {
                let mut h = LatencySummary::default();
                report.rtt_samples.iter().for_each(|(_, d)| h.record(*d));
                (h.percentiles(), true)
            };
            let lost = m.queue_drops + m.link_losses;
            FlowResults {
                id,
                name: f.name.clone(),
                kind: f.kind,
                src: f.addrs.sender.to_string(),
                dst: f.addrs.receiver.to_string(),
                sent_bytes: report.sent_bytes,
                delivered_bytes: report.delivered_bytes,
                goodput_mbps: report.delivered_bytes as f64 * 8.0 / active / 1e6,
                loss_rate: if m.sent_packets == 0 {
                    0.0
                } else {
                    lost as f64 / m.sent_packets as f64
                },
                ce_fraction: if m.delivered_packets == 0 {
                    0.0
                } else {
                    m.ce_packets as f64 / m.delivered_packets as f64
                },
                rtt_ms,
                rtt_measured,
                one_way_delay_ms: m.one_way_delay.percentiles(),
                queue_delay_ms: m.queue_delay.percentiles(),
                sent_packets: m.sent_packets,
                delivered_packets: m.delivered_packets,
                queue_drops: m.queue_drops,
                link_losses: m.link_losses,
                ce_packets: m.ce_packets,
                unanswered: report.unanswered,
            }
        })
        .collect();
    Results {
        scenario: s.name.clone(),
        seed,
        ip: match s.ip {
            IpFamily::V4 => "v4",
            IpFamily::V6 => "v6",
        },
        duration_s: s.duration.as_secs_f64(),
        link: link_results(&o.down, s.duration, o.down_losses),
        link_up: link_results(&o.up, s.duration, o.up_losses),
        queue: queue_results(&o.down, &o.down_delay),
        queue_up: queue_results(&o.up, &o.up_delay),
        flows,
        engine: EngineResults {
            steps: o.steps,
            packet_hops: o.packet_hops,
        },
    }
}
