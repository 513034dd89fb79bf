//! Helpers the L4S test files share: a dumbbell scenario written as TOML
//! (one bottleneck, each flow with its own base RTT), and steady-state
//! numbers taken from the per-packet series after a warm-up, so slow start
//! does not weigh on utilization or queue percentiles.
#![allow(dead_code, reason = "each test file uses a part of the helpers")]

use brisk_proto::qlog::{EventClass, QlogEvent, QlogSink, QlogStart, VantageKind};
use brisk_sim::engine::FlowSeries;
use brisk_sim::results::Results;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{FlowQlog, RunOptions, run};
use brisk_time::Instant;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Both IP families: every case runs on each.
pub const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// Every host's packets: 1500 bytes of IP.
pub const PACKET_BYTES: f64 = 1500.0;

/// One flow of a dumbbell: its name, `[[flows]]` body lines, base RTT.
pub struct Flow<'a> {
    pub name: &'a str,
    pub body: &'a str,
    pub rtt_ms: u64,
}

/// A brisk bulk flow with controller `cc`.
pub fn bulk<'a>(name: &'a str, cc: &'a str, rtt_ms: u64) -> Flow<'a> {
    let body = match cc {
        "prague" => prague_body(),
        "cubic" => "kind = \"brisk\"\ncc = \"cubic\"",
        "bbr" => "kind = \"brisk\"\ncc = \"bbr\"",
        "newreno" => "kind = \"brisk\"\ncc = \"newreno\"",
        other => panic!("no controller {other}"),
    };
    Flow { name, body, rtt_ms }
}

/// A Prague bulk flow's body lines: the transport's defaults, unless
/// `PRAGUE_PIPE_CAP` or `PRAGUE_SMALL_DATAGRAMS` (`on` or `off`) sets that
/// switch in every Prague bulk flow of a run by hand (grids before and
/// after).
fn prague_body() -> &'static str {
    let mut body = String::from("kind = \"brisk\"\ncc = \"prague\"");
    for (var, field) in [
        ("PRAGUE_PIPE_CAP", "prague_pipe_cap"),
        ("PRAGUE_SMALL_DATAGRAMS", "prague_small_datagrams"),
    ] {
        match std::env::var(var).as_deref() {
            Ok("on") => body.push_str(&format!("\n{field} = true")),
            Ok("off") => body.push_str(&format!("\n{field} = false")),
            _ => {}
        }
    }
    Box::leak(body.into_boxed_str())
}

/// A brisk Prague bulk flow with its growth held at the delivered pipe
/// (`prague_pipe_cap`) or not.
pub fn bulk_pipe_cap(name: &str, rtt_ms: u64, on: bool) -> Flow<'_> {
    bulk_switched(name, rtt_ms, "prague_pipe_cap", on)
}

/// A brisk Prague bulk flow with smaller datagrams and increase at low
/// rates (`prague_small_datagrams`) on or off.
pub fn bulk_small_datagrams(name: &str, rtt_ms: u64, on: bool) -> Flow<'_> {
    bulk_switched(name, rtt_ms, "prague_small_datagrams", on)
}

/// A brisk Prague bulk flow with the boolean scenario field `field` set.
fn bulk_switched<'a>(name: &'a str, rtt_ms: u64, field: &str, on: bool) -> Flow<'a> {
    let body = format!("kind = \"brisk\"\ncc = \"prague\"\n{field} = {on}");
    Flow {
        name,
        body: Box::leak(body.into_boxed_str()),
        rtt_ms,
    }
}

/// A dumbbell at `rate` (a TOML rate value, e.g. `"10Mbit"` or a schedule
/// table) with `queue` (TOML lines under `[queue.KIND]`) in the data
/// direction. The bottleneck's own delay is the smallest flow RTT; other
/// flows add theirs through `rtt`.
pub fn dumbbell(rate: &str, queue: &str, link_extra: &str, flows: &[Flow], secs: u64) -> Scenario {
    let base = flows.iter().map(|f| f.rtt_ms).min().unwrap_or(20);
    let mut text = format!(
        "name = \"l4s\"\nduration = \"{secs}s\"\n\
         [link.down]\nrate = {rate}\ndelay = \"{}us\"\n{link_extra}\n\
         [link.up]\nrate = {rate}\ndelay = \"{}us\"\n\
         {queue}\n",
        base * 500,
        base * 500
    );
    for f in flows {
        text += &format!("[[flows]]\nname = \"{}\"\n{}\n", f.name, f.body);
        if f.rtt_ms != base {
            text += &format!("rtt = \"{}ms\"\n", f.rtt_ms);
        }
    }
    Scenario::parse(&text, "l4s.toml").unwrap()
}

/// Linux's default DualPI2 (1 ms step, 10% classic protection).
pub const DUALPI2_LINUX: &str = "[queue.dualpi2]";

/// The seed `L4S_SEED` sets for a hand-run table or trace (the
/// scenario's own seed when unset).
pub fn seed_override() -> Option<u64> {
    std::env::var("L4S_SEED")
        .ok()
        .map(|v| v.parse().expect("L4S_SEED: a whole number"))
}

/// Results and per-packet series of `s` over `ip`.
pub fn run_series(s: &Scenario, ip: IpFamily) -> (Results, Vec<FlowSeries>) {
    run_series_seeded(s, ip, seed_override())
}

/// [`run_series`] on `seed` (`None`: the scenario's own).
pub fn run_series_seeded(
    s: &Scenario,
    ip: IpFamily,
    seed: Option<u64>,
) -> (Results, Vec<FlowSeries>) {
    let r = run(
        s,
        RunOptions {
            ip: Some(ip),
            seed,
            series: true,
            ..Default::default()
        },
    );
    let series = r.outcome.series();
    (r.results, series)
}

/// The series of flow `name`.
pub fn series<'s>(all: &'s [FlowSeries], name: &str) -> &'s FlowSeries {
    all.iter().find(|f| f.name == name).unwrap()
}

/// IP bytes `f` delivered between `from` and `to`.
pub fn delivered(f: &FlowSeries, from: Duration, to: Duration) -> u64 {
    let at = |t: Duration| {
        let t = Instant::ZERO + t;
        f.delivered
            .iter()
            .take_while(|(when, _)| *when <= t)
            .last()
            .map_or(0, |&(_, total)| total)
    };
    at(to) - at(from)
}

/// `f`'s delivered rate between `from` and `to`, in Mbit/s.
pub fn rate_mbps(f: &FlowSeries, from: Duration, to: Duration) -> f64 {
    delivered(f, from, to) as f64 * 8.0 / (to - from).as_secs_f64() / 1e6
}

/// The `q` quantile (0 to 1) of `f`'s queue delays between `from` and
/// `to`, in milliseconds.
pub fn queue_delay_ms(f: &FlowSeries, from: Duration, to: Duration, q: f64) -> f64 {
    let (from, to) = (Instant::ZERO + from, Instant::ZERO + to);
    let mut v: Vec<f64> = f
        .queue_delay
        .iter()
        .filter(|(t, _)| *t >= from && *t <= to)
        .map(|(_, d)| d.as_secs_f64() * 1e3)
        .collect();
    assert!(
        !v.is_empty(),
        "{}: no packets between {from:?} and {to:?}",
        f.name
    );
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// One 1500-byte packet's serialization time at `mbit` Mbit/s, in ms.
pub fn packet_ms(mbit: f64) -> f64 {
    PACKET_BYTES * 8.0 / (mbit * 1e3)
}

/// One end's congestion window, pacing rate and smoothed RTT, as its qlog
/// reports them, for the hand-run traces.
#[derive(Clone)]
pub struct WindowSample {
    pub flow: String,
    pub client: bool,
    pub at: Instant,
    pub cwnd_bytes: u64,
    pub pacing_bps: u64,
    pub srtt: Duration,
}

/// A qlog for [`RunOptions::qlog`] that keeps every end's window samples
/// in `samples`.
pub fn window_qlog(samples: &Arc<Mutex<Vec<WindowSample>>>) -> FlowQlog {
    let shared = samples.clone();
    Arc::new(move |name: &str, start: &QlogStart| {
        let log = WindowLog {
            flow: name.to_owned(),
            client: start.vantage == VantageKind::Client,
            samples: shared.clone(),
        };
        Some(Box::new(log) as Box<dyn QlogSink>)
    })
}

/// Keeps the window samples of one end of a flow.
struct WindowLog {
    flow: String,
    client: bool,
    samples: Arc<Mutex<Vec<WindowSample>>>,
}

impl QlogSink for WindowLog {
    fn emit(&mut self, at: Instant, event: QlogEvent) {
        if let QlogEvent::MetricsUpdated(m) = event
            && let (Some(cwnd_bytes), Some(srtt)) = (m.congestion_window_bytes, m.smoothed_rtt)
        {
            let sample = WindowSample {
                flow: self.flow.clone(),
                client: self.client,
                at,
                cwnd_bytes,
                pacing_bps: m.pacing_rate_bps.unwrap_or(0),
                srtt,
            };
            self.samples
                .lock()
                .expect("no panic while held")
                .push(sample);
        }
    }

    fn wants(&self, class: EventClass) -> bool {
        class == EventClass::Recovery
    }
}
