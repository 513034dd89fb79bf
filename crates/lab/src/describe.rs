//! A scenario in words, generated from the parsed file so the report can
//! never disagree with what ran: rates, round trip, impairments, queue and
//! every flow.

use brisk_netmodel::LinkConfig;
use brisk_netmodel::link::{EcnRewrite, Jitter, LossModel, RateModel, ReorderDepth, profiles};
use brisk_netmodel::queue::{QueueConfig, StepThreshold, SubscriberKey};
use brisk_sim::scenario::{
    Brisk, BriskWorkloadSpec, EcnSpec, Flow, IpFamily, Scenario, SendLimit, Traffic,
};
use serde::Serialize;
use std::time::Duration;

/// A scenario described for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Described {
    /// The bottleneck link, both directions.
    pub network: String,
    /// The down direction's queue.
    pub queue: String,
    /// Every flow, in scenario order.
    pub flows: Vec<FlowWords>,
    /// How long, on which address family.
    pub run: String,
}

/// One flow described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowWords {
    /// Its label in results and plots.
    pub name: String,
    /// "cbr", "on_off", "ping".
    pub kind: &'static str,
    /// Traffic, ECN codepoint, timing.
    pub words: String,
}

impl FlowWords {
    /// "name (kind): what it sends".
    pub fn line(&self) -> String {
        format!("{} ({}): {}", self.name, self.kind, self.words)
    }
}

/// Describes `s` as it will run.
pub fn describe(s: &Scenario) -> Described {
    let (down, up) = (&s.network.link.down, &s.network.link.up);
    let mut network = String::new();
    if let Some(p) = s.network.profile.as_deref().and_then(profiles::by_name) {
        network.push_str(&format!("profile “{}”: ", p.name));
    }
    network.push_str(&format!(
        "{} down, {} up, {} base RTT ({} + {} one way)",
        rate(&down.rate),
        rate(&up.rate),
        duration(down.delay + up.delay),
        duration(down.delay),
        duration(up.delay)
    ));
    let down_extra = impairments(down);
    let up_extra = impairments(up);
    if !down_extra.is_empty() && down_extra == up_extra {
        network.push_str(&format!("; each way: {}", down_extra.join(", ")));
    } else {
        if !down_extra.is_empty() {
            network.push_str(&format!("; down: {}", down_extra.join(", ")));
        }
        if !up_extra.is_empty() {
            network.push_str(&format!("; up: {}", up_extra.join(", ")));
        }
    }
    let flows = s
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| flow(f, i, s))
        .collect();
    Described {
        network,
        queue: queue(&s.network.queue),
        flows,
        run: format!(
            "{} of virtual time over {}",
            duration(s.duration),
            match s.ip {
                IpFamily::V4 => "IPv4",
                IpFamily::V6 => "IPv6",
            }
        ),
    }
}

/// "10 Mbit/s", "444 kbit/s", "a 3-step schedule (10 Mbit/s to 2 Mbit/s)".
pub fn rate(r: &RateModel) -> String {
    match r {
        RateModel::Constant { bps } => bps_text(*bps as f64),
        RateModel::Schedule(s) => {
            let steps = s.steps();
            match (steps.first(), steps.last()) {
                (Some(a), Some(b)) => format!(
                    "a {}-step rate schedule ({} to {})",
                    steps.len(),
                    bps_text(a.bps as f64),
                    bps_text(b.bps as f64)
                ),
                _ => "a rate schedule".to_string(),
            }
        }
        RateModel::Mahimahi(t) => format!("a mahimahi trace (mean {})", bps_text(t.mean_bps())),
        RateModel::MahimahiFile(p) => format!("the mahimahi trace {}", p.display()),
    }
}

/// A rate with three significant digits at most.
pub fn bps_text(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    // Three significant digits: 444 kbit/s, 10.5 Mbit/s, 2.2 Mbit/s.
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// "20 ms", "1.5 s", "250 µs".
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{} s", short(s))
    } else if s >= 1e-3 || s == 0.0 {
        format!("{} ms", short(s * 1e3))
    } else {
        format!("{} µs", short(s * 1e6))
    }
}

/// A number with up to three decimals and no trailing zeros.
fn short(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn percent(p: f64) -> String {
    format!("{}%", short(p * 100.0))
}

fn impairments(l: &LinkConfig) -> Vec<String> {
    let mut out = Vec::new();
    match l.loss {
        Some(LossModel::Random { probability }) => {
            out.push(format!("{} random loss", percent(probability)))
        }
        Some(LossModel::GilbertElliott(ge)) => out.push(format!(
            "{} bursty loss (mean burst {} packets)",
            percent(ge.loss),
            short(ge.burst_packets)
        )),
        Some(LossModel::Fade(f)) => out.push(format!(
            "{} loss in fades (mean fade {}, mean gap {})",
            percent(f.mean_loss()),
            duration(f.bad),
            duration(f.good)
        )),
        None => {}
    }
    match l.jitter {
        Some(Jitter::Uniform(j)) => out.push(format!("jitter ±{} uniform", duration(j))),
        Some(Jitter::Normal(j)) => out.push(format!("jitter σ {} normal", duration(j))),
        None => {}
    }
    if let Some(r) = l.reorder {
        let depth = match r.depth {
            ReorderDepth::Packets(n) => format!("{n} packets"),
            ReorderDepth::Time(d) => duration(d),
        };
        out.push(format!("{} reordered by {depth}", percent(r.probability)));
    }
    if l.duplicate > 0.0 {
        out.push(format!("{} duplicated", percent(l.duplicate)));
    }
    if let Some(idle) = l.loss_after_idle {
        out.push(format!(
            "first {} packets lost after {} idle",
            idle.packets,
            duration(idle.idle)
        ));
    }
    if !l.outages.is_empty() {
        out.push(format!("{} scheduled outages", l.outages.len()));
    }
    if let Some(o) = l.outage_every {
        out.push(format!(
            "{} outage every {}",
            duration(o.duration),
            duration(o.period)
        ));
    }
    match l.ecn {
        EcnRewrite::Pass => {}
        EcnRewrite::Bleach => out.push("ECN bleached".into()),
        EcnRewrite::CeOnly => out.push("every ECT packet marked CE".into()),
        EcnRewrite::Ect1ToEct0 => out.push("ECT(1) rewritten to ECT(0)".into()),
    }
    out
}

/// "32 MiB", "64 KiB", "150 kB", "1500 B".
pub fn bytes_text(b: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if b >= MIB && b.is_multiple_of(MIB) {
        format!("{} MiB", b / MIB)
    } else if b >= KIB && b.is_multiple_of(KIB) {
        format!("{} KiB", b / KIB)
    } else if b >= 1_000_000 {
        format!("{} MB", short(b as f64 / 1e6))
    } else if b >= 1_000 {
        format!("{} kB", short(b as f64 / 1e3))
    } else {
        format!("{b} B")
    }
}

fn limit(packets: Option<usize>, bytes: Option<u64>) -> String {
    match (packets, bytes) {
        (Some(p), None) => format!("{p}-packet limit"),
        (None, Some(b)) => format!("{} limit", bytes_text(b)),
        (Some(p), Some(b)) => format!("{p}-packet / {} limit", bytes_text(b)),
        (None, None) => "no limit".to_string(),
    }
}

fn ecn(on: bool) -> &'static str {
    if on { "marks ECN" } else { "drops only" }
}

/// The queue discipline and the settings that shape its delay.
pub fn queue(q: &QueueConfig) -> String {
    match q {
        QueueConfig::Fifo(c) => format!(
            "FIFO with tail drop, {}",
            limit(c.limit_packets, c.limit_bytes)
        ),
        QueueConfig::Codel(c) => format!(
            "CoDel, target {}, interval {}, {}, {}",
            duration(c.target),
            duration(c.interval),
            ecn(c.ecn),
            limit(c.limit_packets, c.limit_bytes)
        ),
        QueueConfig::FqCodel(c) => format!(
            "FQ-CoDel, {} flow queues, target {}, interval {}, {}, {}",
            c.flows,
            duration(c.target),
            duration(c.interval),
            ecn(c.ecn),
            limit(c.limit_packets, c.limit_bytes)
        ),
        QueueConfig::Pie(c) => format!(
            "PIE, target {}, update every {}, {}, {}",
            duration(c.target),
            duration(c.tupdate),
            ecn(c.ecn),
            limit(c.limit_packets, c.limit_bytes)
        ),
        QueueConfig::DualPi2(c) => {
            let step = match c.step_threshold {
                StepThreshold::Time(d) => duration(d),
                StepThreshold::Packets(n) => format!("{n} packets"),
            };
            format!(
                "DualPI2 (L4S dual queue): classic target {}, L4S step marking at {}, coupling {}, {}",
                duration(c.target),
                step,
                c.coupling_factor,
                limit(c.limit_packets, c.limit_bytes)
            )
        }
        QueueConfig::Cell(c) => format!(
            "mobile cell: a queue per subscriber of {} ({}), shared fairly in turns of {} bytes{}",
            limit(c.subscriber_limit_packets, Some(c.subscriber_limit_bytes)),
            match c.subscriber {
                SubscriberKey::Destination => "by destination address",
                SubscriberKey::Source => "by source address",
            },
            c.quantum_bytes,
            c.discard_after
                .map(|d| format!(", packets older than {} dropped", duration(d)))
                .unwrap_or_default()
        ),
    }
}

fn ecn_spec(e: EcnSpec) -> &'static str {
    match e {
        EcnSpec::NotEct => "Not-ECT",
        EcnSpec::Ect0 => "ECT(0)",
        EcnSpec::Ect1 => "ECT(1), L4S",
    }
}

/// A transport flow: controller, workload and send path.
fn brisk(b: &Brisk) -> String {
    let cc = b.cc.name();
    let (work, limit) = match &b.app {
        BriskWorkloadSpec::Bulk { bytes } => (
            match bytes {
                Some(b) => format!("bulk transfer of {}", bytes_text(*b)),
                None => "bulk transfer until it stops".to_string(),
            },
            None,
        ),
        BriskWorkloadSpec::Messages {
            size_bytes,
            interval,
            limit,
        } => (
            format!(
                "{} messages {}",
                bytes_text(*size_bytes),
                interval.map_or("back to back".to_string(), |d| format!(
                    "every {}",
                    duration(d)
                ))
            ),
            *limit,
        ),
        BriskWorkloadSpec::Video {
            fps,
            limit,
            delivery,
        } => (
            format!("video call at {fps} fps on {}", delivery.name()),
            *limit,
        ),
        BriskWorkloadSpec::Stream {
            fps,
            buffer,
            rate_bps,
        } => (
            format!(
                "live stream at {fps} fps, {}, {} ms player buffer",
                rate_bps.map_or_else(
                    || "1-6 Mbit/s following the path".to_owned(),
                    |r| format!("fixed {}", bps_text(r as f64))
                ),
                buffer.as_millis()
            ),
            None,
        ),
        BriskWorkloadSpec::Feed { objects, .. } => (
            format!(
                "feed page of {} objects, {} in all",
                objects.len(),
                bytes_text(objects.iter().sum())
            ),
            None,
        ),
    };
    let path = match limit {
        Some(SendLimit::SendBuffer(b)) => format!(", {} send buffer", bytes_text(b)),
        Some(SendLimit::LowWaterMark(m)) => format!(", {} low-water mark", bytes_text(m)),
        None => String::new(),
    };
    format!("Brisk transport ({cc}), {work}{path}")
}

fn flow(f: &Flow, i: usize, s: &Scenario) -> FlowWords {
    let constant = |rate_bps: u64, size: u64| {
        format!("{} of {size}-byte datagrams", bps_text(rate_bps as f64))
    };
    let (what, ecn) = match &f.traffic {
        Traffic::Cbr(src) => (
            format!("constant {}", constant(src.rate_bps, src.size_bytes)),
            ecn_spec(src.ecn),
        ),
        Traffic::OnOff { source, on, off } => (
            format!(
                "{} for {}, then silent for {}, repeating",
                constant(source.rate_bps, source.size_bytes),
                duration(*on),
                duration(*off)
            ),
            ecn_spec(source.ecn),
        ),
        Traffic::Ping(p) => (
            format!(
                "echo every {}, {}-byte datagrams",
                duration(p.interval),
                p.size_bytes.unwrap_or(s.header_bytes() + 56)
            ),
            ecn_spec(p.ecn),
        ),
        Traffic::Brisk(b) => (brisk(b), if b.ecn { "ECN on" } else { "ECN off" }),
        Traffic::UdpPrague => (
            "reference UDP Prague bulk (the udp_prague crate)".to_string(),
            "ECT(1)",
        ),
    };
    let mut line = format!("{what}, {ecn}");
    if let Some(rtt) = f.rtt {
        line.push_str(&format!(", {} base RTT", duration(rtt)));
    }
    match (f.start, f.stop) {
        (Some(a), Some(b)) => line.push_str(&format!(", from {} to {}", duration(a), duration(b))),
        (Some(a), None) => line.push_str(&format!(", from {}", duration(a))),
        (None, Some(b)) => line.push_str(&format!(", until {}", duration(b))),
        (None, None) => {}
    }
    FlowWords {
        name: f.label(i),
        kind: f.traffic.kind().name(),
        words: line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bufferbloat_scenario_reads_as_it_is_written() {
        let s = Scenario::parse(
            r#"
duration = "30s"
ip = "v6"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 200
[[flows]]
name = "load"
kind = "cbr"
rate = "10.5Mbit"
[[flows]]
kind = "on_off"
rate = "5Mbit"
on = "1s"
off = "500ms"
ecn = "ect1"
start = "2s"
[[flows]]
name = "ping"
kind = "ping"
interval = "20ms"
"#,
            "t.toml",
        )
        .unwrap();
        let d = describe(&s);
        assert_eq!(
            d.network,
            "10 Mbit/s down, 10 Mbit/s up, 20 ms base RTT (10 ms + 10 ms one way)"
        );
        assert_eq!(d.queue, "FIFO with tail drop, 200-packet limit");
        let lines: Vec<String> = d.flows.iter().map(FlowWords::line).collect();
        assert_eq!(
            lines,
            [
                "load (cbr): constant 10.5 Mbit/s of 1500-byte datagrams, Not-ECT",
                "on_off-1 (on_off): 5 Mbit/s of 1500-byte datagrams for 1 s, then silent for 500 ms, repeating, ECT(1), L4S, from 2 s",
                "ping (ping): echo every 20 ms, 104-byte datagrams, Not-ECT",
            ]
        );
        assert_eq!(d.run, "30 s of virtual time over IPv6");
    }

    #[test]
    fn transport_flows_name_controller_workload_and_send_path() {
        let s = Scenario::parse(
            r#"
duration = "10s"
[[flows]]
name = "bulk"
kind = "brisk"
cc = "cubic"
bytes = "2MB"
[[flows]]
name = "chat"
kind = "brisk"
app = "messages"
interval = "50ms"
low_water_mark = "16KiB"
[[flows]]
name = "call"
kind = "brisk"
app = "video"
delivery = "streams"
send_buffer = "120kB"
ecn = false
"#,
            "b.toml",
        )
        .unwrap();
        let lines: Vec<String> = describe(&s).flows.iter().map(FlowWords::line).collect();
        assert_eq!(
            lines,
            [
                "bulk (brisk): Brisk transport (cubic), bulk transfer of 2 MB, ECN on",
                "chat (brisk): Brisk transport (prague), 1 kB messages every 50 ms, 16 KiB low-water mark, ECN on",
                "call (brisk): Brisk transport (prague), video call at 30 fps on streams, 120 kB send buffer, ECN off",
            ]
        );
    }

    #[test]
    fn profiles_and_impairments_are_named() {
        let s = Scenario::parse("duration = \"1s\"\nprofile = \"edge\"\n", "p.toml").unwrap();
        let d = describe(&s);
        assert!(d.network.starts_with("profile “edge”: "), "{}", d.network);
        assert!(
            d.network
                .contains("200 kbit/s down, 100 kbit/s up, 900 ms base RTT"),
            "{}",
            d.network
        );
        assert!(
            d.network.ends_with("; each way: 2.5% random loss"),
            "{}",
            d.network
        );
        let s = Scenario::parse(
            "duration = \"1s\"\n[link.down]\njitter = \"2ms\"\nloss = { gilbert_elliott = { loss = \"2%\", burst_packets = 5 } }\necn = \"bleach\"\n[queue.codel]\n",
            "i.toml",
        )
        .unwrap();
        let d = describe(&s);
        assert!(
            d.network.contains(
                "down: 2% bursty loss (mean burst 5 packets), jitter ±2 ms uniform, ECN bleached"
            ),
            "{}",
            d.network
        );
        assert_eq!(
            d.queue,
            "CoDel, target 5 ms, interval 100 ms, marks ECN, 1000-packet limit"
        );
    }

    #[test]
    fn units_are_short() {
        assert_eq!(bps_text(444_444.0), "444 kbit/s");
        assert_eq!(bps_text(136_364.0), "136 kbit/s");
        assert_eq!(bps_text(10_500_000.0), "10.5 Mbit/s");
        assert_eq!(bps_text(2_200_000.0), "2.2 Mbit/s");
        assert_eq!(duration(Duration::from_micros(1500)), "1.5 ms");
        assert_eq!(duration(Duration::from_micros(250)), "250 µs");
        assert_eq!(duration(Duration::ZERO), "0 ms");
        assert_eq!(bytes_text(32 << 20), "32 MiB");
        assert_eq!(bytes_text(64 * 1024), "64 KiB");
        assert_eq!(bytes_text(150_000), "150 kB");
        assert_eq!(bytes_text(1500), "1.5 kB");
        assert_eq!(bytes_text(999), "999 B");
    }
}
