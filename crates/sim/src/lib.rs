//! Brisk's deterministic virtual-time network simulator.
//!
//! Layer: drives the sans-IO models of `brisk-netmodel` (queues, links) and
//! the applications of [`flows`] in virtual time, jumping from one event to
//! the next. Output is a pure function of the scenario and the seed: the
//! same inputs give byte-identical results and captures.
//!
//! Modules: [`scenario`] reads and validates TOML scenarios; [`engine`] the
//! event loop and the dumbbell topology around `brisk-netmodel`'s
//! `Bottleneck`; [`flows`] the traffic (built-in
//! sources and the plug-in trait a transport implements); [`results`] the JSON shape of a run; [`capture`]
//! the bottleneck as a pcap file; [`bench`] the reference loads speed is
//! measured on; [`two_path`] a phone with Wi-Fi and cellular paths that
//! moves when one stalls; [`race`] the same phone connecting while its
//! Wi-Fi is stalled, racing both paths; `wakeups` the engine's agenda.

// System calls live in the few modules that allow `unsafe` below.
#![deny(unsafe_code)]

pub mod bench;
pub mod capture;
pub mod engine;
pub mod flows;
pub mod nat;
pub mod race;
pub mod results;
pub mod scenario;
pub mod two_path;
mod wakeups;

use brisk_netmodel::Direction;
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use engine::{Engine, FlowSetup, Outcome};
use flows::brisk::{BriskConfig, BriskFlow, BriskWorkload, SendPath, TransportReport};
use flows::{ConstantRate, FlowApp, Ping, SendJitter};
use results::{
    BriskResults, EngineResults, FlowEnds, FlowLabel, FlowResults, FrameResults, PathMtuResults,
    Results, Simulated, StreamResults, TransportResults,
};
use scenario::{Brisk, BriskWorkloadSpec, Flow, IpFamily, Scenario, SendLimit, Traffic};
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
    /// Traces both ends of every brisk flow (see [`FlowQlog`]).
    pub qlog: Option<FlowQlog>,
    /// Told the virtual time reached, now and then, for a progress display.
    pub progress: Option<&'c mut dyn FnMut(Duration)>,
    /// Brisk flows' endpoints skip the packet cipher: each 1-RTT packet
    /// keeps its plaintext and a zero 16-byte tag, so sizes, timings and
    /// results are bit-identical to an encrypted run at less CPU
    /// (`brisk sim --null-cipher`, and the bench's second figure). Captures
    /// then show the plaintext.
    pub null_cipher: bool,
}

/// What every brisk flow of a run shares.
#[derive(Clone, Copy)]
struct BriskOptions<'a> {
    series: bool,
    qlog: Option<&'a FlowQlog>,
    null_cipher: bool,
}

/// Makes the qlog sink of one end of a brisk flow, given the flow's name.
/// Times are the run's virtual clock: its epoch is the start of the run.
pub type FlowQlog = std::sync::Arc<MakeFlowSink>;

/// The function inside a [`FlowQlog`].
pub type MakeFlowSink = dyn Fn(&str, &brisk_proto::qlog::QlogStart) -> Option<Box<dyn brisk_proto::qlog::QlogSink>>
    + Send
    + Sync;

/// A finished run: its results and whatever was recorded.
pub struct Run {
    pub results: Results,
    pub outcome: Outcome,
}

pub use scenario::{DEFAULT_FPS, DEFAULT_MESSAGE_BYTES, DEFAULT_STREAM_BUFFER};

/// The seed of flow `index`'s own randomness (keys, connection IDs).
fn flow_seed(seed: u64, index: usize) -> u64 {
    seed.rotate_left(17) ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The random stream of a built-in source's send times, apart from the
/// flow's other draws.
const SEND_JITTER_STREAM: u64 = 0x6a69_7474_6572;

/// How far flow `index`'s sends may wander from their grid.
fn send_jitter(max: Option<Duration>, seed: u64, index: usize) -> SendJitter {
    SendJitter {
        max,
        rng: brisk_netmodel::rng(flow_seed(seed, index), SEND_JITTER_STREAM),
    }
}

/// The transport's send path for a messages or video sender's limit.
fn send_path(limit: SendLimit) -> SendPath {
    match limit {
        SendLimit::SendBuffer(b) => SendPath::SendBuffer(b),
        SendLimit::LowWaterMark(m) => SendPath::LowWaterMark(m),
    }
}

/// The brisk flow of a spec.
fn brisk_config(
    s: &Scenario,
    spec: &Brisk,
    setup: &FlowSetup,
    seed: u64,
    o: BriskOptions<'_>,
) -> BriskConfig {
    let workload = match &spec.app {
        BriskWorkloadSpec::Bulk { bytes } => BriskWorkload::Bulk { bytes: *bytes },
        BriskWorkloadSpec::Messages {
            size_bytes,
            interval,
            limit,
        } => BriskWorkload::Messages {
            size_bytes: *size_bytes,
            interval: *interval,
            // The transport's own default mark.
            path: limit.map_or(
                SendPath::LowWaterMark(
                    brisk_proto::streams::StreamsConfig::default().low_water_mark,
                ),
                send_path,
            ),
        },
        BriskWorkloadSpec::Video {
            fps,
            limit,
            delivery,
        } => BriskWorkload::Video {
            fps: *fps,
            path: limit.map_or(SendPath::Unbounded, send_path),
            datagrams: *delivery == scenario::VideoDelivery::Datagrams,
        },
        BriskWorkloadSpec::Feed {
            objects,
            sequential,
            setup_round_trips,
            early_data,
            replay_first_flight,
        } => BriskWorkload::Feed {
            objects: objects.clone(),
            sequential: *sequential,
            setup_round_trips: *setup_round_trips as usize,
            early_data: *early_data,
            replay_first_flight: *replay_first_flight,
        },
        BriskWorkloadSpec::Stream {
            fps,
            buffer,
            rate_bps,
        } => BriskWorkload::Stream {
            fps: *fps,
            buffer: *buffer,
            fixed_bps: *rate_bps,
        },
    };
    BriskConfig {
        addrs: setup.addrs,
        seed,
        cc: spec.cc,
        ecn: spec.ecn,
        ack_frequency: spec.ack_frequency,
        prague_small_datagrams: spec.prague_small_datagrams,
        prague_burst_floor: spec.prague_burst_floor,
        prague_pipe_cap: spec.prague_pipe_cap,
        bbr_bounded_startup: spec.bbr_bounded_startup,
        fec: spec.fec,
        pmtud: [&s.network.link.down, &s.network.link.up]
            .iter()
            .any(|l| l.mtu.is_some() || l.mtu_change.is_some()),
        migration: !spec.moves.is_empty(),
        header_len: s.header_bytes() as usize,
        start: setup.start,
        stop: setup.stop,
        workload,
        series: o.series,
        null_cipher: o.null_cipher,
        qlog: o.qlog.map(|f| {
            let (f, name) = (f.clone(), setup.name.clone());
            brisk_proto::qlog::QlogFactory(std::sync::Arc::new(move |s| f(&name, s)))
        }),
    }
}

/// Builds the application of flow `index`.
fn build_app(
    s: &Scenario,
    spec: &Flow,
    setup: &FlowSetup,
    seed: u64,
    index: usize,
    o: BriskOptions<'_>,
) -> Box<dyn FlowApp> {
    let header = s.header_bytes() as usize;
    let constant_rate =
        |source: &scenario::Source, on_off: Option<(Duration, Duration)>| -> Box<dyn FlowApp> {
            Box::new(ConstantRate::new(
                setup.addrs,
                source.rate_bps,
                source.size_bytes as usize,
                header,
                source.ecn.into(),
                setup.start,
                setup.stop,
                on_off,
                send_jitter(source.send_jitter, seed, index),
            ))
        };
    match &spec.traffic {
        Traffic::Cbr(source) => constant_rate(source, None),
        Traffic::OnOff { source, on, off } => constant_rate(source, Some((*on, *off))),
        Traffic::Ping(p) => Box::new(Ping::new(
            setup.addrs,
            p.interval,
            p.size_bytes.unwrap_or(header as u64 + 56) as usize,
            header,
            p.ecn.into(),
            setup.start,
            setup.stop,
            send_jitter(p.send_jitter, seed, index),
        )),
        #[cfg(feature = "reference-prague")]
        Traffic::UdpPrague => Box::new(flows::udp_prague::UdpPragueFlow::new(
            setup.addrs,
            setup.start,
            setup.stop,
        )),
        // `Scenario::validate` refuses the kind in a build without the
        // feature; a scenario built in code that skips validation gets a
        // flow that sends nothing.
        #[cfg(not(feature = "reference-prague"))]
        Traffic::UdpPrague => Box::new(flows::Idle),
        Traffic::Brisk(b) => Box::new(BriskFlow::new(brisk_config(
            s,
            b,
            setup,
            flow_seed(seed, index),
            o,
        ))),
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
    if let Some(progress) = options.progress {
        engine.set_progress(progress);
    }
    let end = Instant::ZERO + s.duration;
    for (i, spec) in s.flows.iter().enumerate() {
        let mut setup = FlowSetup {
            name: spec.label(i),
            kind: spec.traffic.kind().name(),
            app: Box::new(flows::Idle),
            addrs: engine::flow_addrs(s.ip, i),
            start: Instant::ZERO + spec.start.unwrap_or_default(),
            stop: spec.stop.map_or(end, |d| (Instant::ZERO + d).min(end)),
            rtt: spec.rtt.unwrap_or_else(|| engine.bottleneck_rtt()),
        };
        setup.app = build_app(
            &s,
            spec,
            &setup,
            seed,
            i,
            BriskOptions {
                series: options.series,
                qlog: options.qlog.as_ref(),
                null_cipher: options.null_cipher,
            },
        );
        engine.add_flow(setup, options.series);
        if let Traffic::Brisk(b) = &spec.traffic {
            engine.set_moves(i, b.moves);
        }
    }
    let outcome = engine.run();
    let results = summarize(&s, seed, &outcome);
    Run { results, outcome }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The JSON form of a brisk flow's report.
fn brisk_results(t: &TransportReport) -> BriskResults {
    let latency = (!t.latencies.is_empty()).then(|| {
        let mut h = LatencySummary::default();
        t.latencies.iter().for_each(|d| h.record(*d));
        h.percentiles()
    });
    let frames = t.frames.as_ref().map(|f| {
        let fps: Vec<f64> = f.frame_rate.iter().map(|(_, v)| *v).collect();
        let n = fps.len().max(1) as f64;
        FrameResults {
            fps: f.fps,
            sent: f.sent,
            skipped: f.skipped,
            abandoned: f.abandoned,
            received: f.received,
            on_time: f.on_time,
            deadline_ms: ms(f.deadline),
            stall_fraction: f.stall_fraction,
            fps_mean: fps.iter().sum::<f64>() / n,
            fps_min: fps.iter().copied().reduce(f64::min).unwrap_or(0.0),
            below_25_fps_fraction: fps.iter().filter(|v| **v < 25.0).count() as f64 / n,
        }
    });
    let stream = t.stream.as_ref().map(|s| StreamResults {
        fps: s.fps,
        buffer_ms: ms(s.buffer),
        frames_sent: s.frames_sent,
        frames_shown: s.frames_shown,
        frames_skipped: s.frames_skipped,
        startup_ms: s.startup.map(ms),
        glass_to_glass_ms: (!s.glass_to_glass.is_empty()).then(|| {
            let mut h = LatencySummary::default();
            s.glass_to_glass.iter().for_each(|d| h.record(*d));
            h.percentiles()
        }),
        rebuffering_ratio: s.rebuffering_ratio,
        rebuffer_events: s.stalls,
        rebuffering_s: s.stalled.as_secs_f64(),
        delivered_mbps: s.shown_bps / 1e6,
        encoded_mbps: s.encoded_bps as f64 / 1e6,
        rung_switches: s.rung_switches,
    });
    let st = t.sender.clone();
    BriskResults {
        completion_time_s: t.completion().map(|d| d.as_secs_f64()),
        message_latency_ms: latency,
        frames,
        stream,
        transport: TransportResults {
            cc: t.cc,
            app: t.app,
            handshake_ms: t.connected_at.map(|c| ms(c - t.started_at)),
            error: t.error.clone(),
            srtt_ms: st.as_ref().map_or(0.0, |s| ms(s.smoothed_rtt)),
            min_rtt_ms: st.as_ref().map_or(0.0, |s| ms(s.min_rtt)),
            cwnd_bytes: st.as_ref().map_or(0, |s| s.cwnd_bytes),
            packets_sent: st.as_ref().map_or(0, |s| s.packets_sent),
            packets_lost: st.as_ref().map_or(0, |s| s.packets_lost),
            packets_retransmitted: st.as_ref().map_or(0, |s| s.packets_retransmitted),
            bytes_retransmitted: st.as_ref().map_or(0, |s| s.stream_bytes_retransmitted),
            spurious_losses: st.as_ref().map_or(0, |s| s.spurious_losses),
            ptos: st.as_ref().map_or(0, |s| s.ptos),
            congestion_events: st.as_ref().map_or(0, |s| s.congestion_events),
            ack_frequency_sent: st.as_ref().map_or(0, |s| s.ack_frequency_sent),
            bytes_sent: st.as_ref().map_or(0, |s| s.bytes_sent),
            repair_packets_sent: st.as_ref().map_or(0, |s| s.repair_packets_sent),
            repair_bytes_sent: st.as_ref().map_or(0, |s| s.repair_bytes_sent),
            packets_rebuilt: t.receiver.as_ref().map_or(0, |s| s.packets_rebuilt),
            datagrams_sent: st.as_ref().map_or(0, |s| s.app_datagrams.sent),
            datagrams_expired: st.as_ref().map_or(0, |s| s.app_datagrams.expired),
            datagrams_received: t.receiver.as_ref().map_or(0, |s| s.app_datagrams.received),
            receiver_acks: t.receiver.as_ref().map_or(0, |s| s.ack_frames_sent),
            ce_echoed: st.as_ref().map_or(0, |s| s.ecn_echoed.ce),
            ecn_state: st.as_ref().map_or_else(
                || "testing".to_owned(),
                |s| format!("{:?}", s.ecn_state).to_lowercase(),
            ),
            ecn_codepoint: st.as_ref().map_or("not-ect", |s| s.ecn_codepoint.name()),
            data_intact: t.integrity.intact(),
            path_mtu: st
                .as_ref()
                .filter(|s| s.pmtu.probes_sent > 0)
                .map(|s| PathMtuResults {
                    datagram_bytes: s.pmtu.current_bytes,
                    probes: s.pmtu.probes_sent,
                    probes_lost: s.pmtu.probes_lost,
                    black_holes: s.pmtu.black_holes,
                    too_big_accepted: s.pmtu.too_big_accepted,
                }),
        },
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
            let rtt_ms = (!report.rtt_samples.is_empty()).then(|| {
                let mut h = LatencySummary::default();
                report.rtt_samples.iter().for_each(|(_, d)| h.record(*d));
                h.percentiles()
            });
            let label = FlowLabel {
                id,
                name: f.name.clone(),
                kind: f.kind,
                src: f.addrs.sender.to_string(),
                dst: f.addrs.receiver.to_string(),
            };
            let ends = FlowEnds {
                sent_bytes: report.sent_bytes,
                delivered_bytes: report.delivered_bytes,
                active_s: (f.stop.min(end) - f.start).as_secs_f64(),
                rtt_ms,
                return_delay: f.base_rtt / 2,
                unanswered: report.unanswered,
                brisk: report.transport.as_ref().map(brisk_results),
            };
            FlowResults::new(label, ends, &f.metrics)
        })
        .collect();
    Results {
        scenario: s.name.clone(),
        seed,
        ip: s.ip.name(),
        duration_s: s.duration.as_secs_f64(),
        link: o.bottleneck.link_results(Direction::Down, s.duration),
        link_up: o.bottleneck.link_results(Direction::Up, s.duration),
        queue: o.bottleneck.queue_results(Direction::Down),
        queue_up: o.bottleneck.queue_results(Direction::Up),
        flows,
        driver: Simulated {
            engine: EngineResults {
                steps: o.steps,
                packet_hops: o.packet_hops,
            },
        },
    }
}
