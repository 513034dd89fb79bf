//! Live sections: `brisk-tcp`'s recipes proven with real kernel TCP in
//! the live lab (`brisk lab --suite live`, root only). Each section's
//! scenario files describe a network (links and queues, as for the
//! simulator); its [`crate::section::LiveExperiment`] brings the network up with
//! `brisk-live`, runs the recipe off (the first file) and on (the second)
//! through `brisk_live::recipes`, and returns the numbers its checks read.
//!
//! Unlike the simulator's sections these runs take wall-clock time and
//! vary a little between runs, so their bounds carry margins; each
//! section's doc says what they are and why.
//!
//! Sections, one file each: [`notsent_lowat`], [`write_sizing`],
//! [`fast_open`], [`happy_eyeballs`], [`nat64_literal`]; and two with
//! Brisk itself on real sockets beside kernel TCP, whose files are the
//! networks to run (not off and on): [`l4s_dualpi2`] (Prague beside CUBIC
//! through DualPI2, then a FIFO), [`l4s_slow`] (Prague alone through slow
//! default DualPI2 links) and [`loss_goodput`] (goodput under
//! random loss, one sender at a time, three networks); and [`rpm`],
//! responsiveness (RPM) over HTTP/2 through four queues, without and with
//! the server's `TCP_NOTSENT_LOWAT`; [`mobile_optimizer`], kernel TCP
//! through a mobile cell with the router's TCP optimizer off and on; and
//! [`first_contact`], a cold client's first answer: Brisk with and without
//! early data beside TLS 1.3 over kernel TCP and quinn; and
//! [`lossy_mobile_live`], objects and bulk on a lossy mobile path, kernel
//! TCP beside Brisk with and without forward error correction; and
//! [`stalled_wifi`], a phone's download whose Wi-Fi stalls while its
//! cellular interface works, Brisk failing over beside kernel TCP with
//! Happy Eyeballs (one file per family).

mod fast_open;
mod first_contact;
mod happy_eyeballs;
mod l4s_dualpi2;
mod l4s_slow;
mod loss_goodput;
mod lossy_mobile_live;
mod mobile_optimizer;
mod nat64_literal;
mod notsent_lowat;
mod rpm;
mod stalled_wifi;
mod write_sizing;

use crate::numbers::Numbers;
use crate::section::{
    CaptureSummary, LiveRecord, LiveRun, LiveRunError, Measured, Plot, SectionError, plot,
};
use brisk_live::capture::{BOTTLENECK_CAPTURE_LIMIT_BYTES, BottleneckPcap};
use brisk_live::recipes::RecipeError;
use brisk_live::{IpMode, Lab, LabConfig, LiveResults};
use brisk_sim::results::{EngineResults, Results, Simulated};
use brisk_sim::scenario::Scenario;
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, bar_chart};
use serde::Serialize;

/// Every live section, in report order.
pub fn all() -> &'static [&'static dyn crate::section::Section] {
    &[
        &notsent_lowat::NotsentLowat,
        &write_sizing::WriteSizing,
        &fast_open::FastOpen,
        &happy_eyeballs::HappyEyeballs,
        &nat64_literal::Nat64Literal,
        &l4s_dualpi2::L4sDualpi2,
        &l4s_slow::L4sSlow,
        &loss_goodput::LossGoodput,
        &rpm::Rpm,
        &mobile_optimizer::MobileOptimizer,
        &first_contact::FirstContact,
        &lossy_mobile_live::LossyMobileLive,
        &stalled_wifi::StalledWifi,
    ]
}

/// Brings up a lab on `scenario`'s network with the client and server in
/// `mode`, runs `f` in it, and tears it down; returns the run (the
/// router's results, the recipe's report as JSON, the bottleneck capture
/// if `capture` is set; no numbers yet) and what `f` measured.
fn in_lab<T: Serialize>(
    scenario: &Scenario,
    mode: IpMode,
    capture: bool,
    f: impl FnOnce(&Lab) -> Result<T, RecipeError>,
) -> Result<(LiveRun, T), LiveRunError> {
    in_lab_with(scenario, mode, capture, None, f)
}

/// [`in_lab`] with the router's TCP optimizer on when `optimizer` is set.
fn in_lab_with<T: Serialize>(
    scenario: &Scenario,
    mode: IpMode,
    capture: bool,
    optimizer: Option<brisk_optimizer::Config>,
    f: impl FnOnce(&Lab) -> Result<T, RecipeError>,
) -> Result<(LiveRun, T), LiveRunError> {
    let mut config = lab_config(scenario, mode);
    config.bottleneck_capture_bytes = capture.then_some(BOTTLENECK_CAPTURE_LIMIT_BYTES);
    config.optimizer = optimizer;
    let lab = Lab::up(config).map_err(LiveRunError::LabSetup)?;
    let out = f(&lab).map_err(LiveRunError::Experiment)?;
    let (results, pcap) = lab
        .finish_with_pcap(None, None)
        .map_err(LiveRunError::LabTeardown)?;
    Ok((live_run(results, pcap, &out)?, out))
}

/// A lab on `scenario`'s network (its name, seed and capture length) with
/// the client and server in `mode`.
fn lab_config(scenario: &Scenario, mode: IpMode) -> LabConfig {
    let mut config = LabConfig::new(scenario.network.clone());
    config.name = scenario.name.clone();
    config.seed = scenario.seed;
    config.ip = mode;
    config.snaplen = scenario.capture.snaplen;
    config
}

/// A finished lab's run as the lab keeps it: the router's results, what
/// the recipe reported (`out`, as JSON) and the bottleneck capture if one
/// was kept; no numbers yet.
fn live_run<T: Serialize>(
    results: LiveResults,
    pcap: Option<BottleneckPcap>,
    out: &T,
) -> Result<LiveRun, LiveRunError> {
    let recipe = serde_json::to_value(out).map_err(LiveRunError::Report)?;
    Ok(LiveRun {
        record: LiveRecord {
            fidelity: Some(results.driver.fidelity.clone()),
            recipe,
            capture: pcap.as_ref().map(|p| CaptureSummary {
                packets: p.packets,
                skipped_packets: p.skipped_packets,
                limit_bytes: p.limit_bytes,
            }),
        },
        pcap: pcap.map(|p| p.bytes),
        results: sim_driver(results),
        measured: Measured::new(),
    })
}

/// The router's results as the lab keeps every run's: the type is the
/// simulator's, so only the driver's part differs. The engine's steps are
/// the router's wake-ups, its packet hops the packets both links carried;
/// the router's flows carry no transport report.
fn sim_driver(r: LiveResults) -> Results {
    let engine = EngineResults {
        steps: r.driver.fidelity.wakeups,
        packet_hops: r.link.transmitted_packets + r.link_up.transmitted_packets,
    };
    r.map(|none| match none {}, |_| Simulated { engine })
}

/// `run` with these numbers added.
fn with_numbers(mut run: LiveRun, numbers: &impl Numbers) -> LiveRun {
    numbers.write("", &mut run.measured);
    run
}

/// The scenario's base round trip: both links' propagation delays.
fn base_rtt_ms(scenario: &Scenario) -> f64 {
    crate::section::ms(scenario.network.link.down.delay + scenario.network.link.up.delay)
}

/// An unknown stem: the suite loader only hands a section its own stems,
/// so this is a section listing a stem it cannot run.
fn unknown_stem(section: &'static str, stem: &str) -> LiveRunError {
    LiveRunError::UnknownStem {
        section,
        stem: stem.to_string(),
    }
}

/// The down link's constant rate, which the section's numbers are
/// relative to.
fn constant_down_rate(section: &'static str, scenario: &Scenario) -> Result<u64, LiveRunError> {
    brisk_live::recipes::down_rate_bps(&scenario.network).ok_or(LiveRunError::UnsuitableNetwork {
        section,
        need: "the down link needs a constant rate",
    })
}

/// 1 for true, 0 for false: flags travel as numbers.
fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// A bar chart of before/after values per category.
fn before_after(
    title: &str,
    caption: &str,
    y: (&str, &str),
    categories: &[&str],
    series: Vec<(&str, Vec<f64>)>,
) -> Result<Plot, SectionError> {
    plot(title, caption, || {
        bar_chart(
            &Frame::new(title, Axis::new("", ""), Axis::new(y.0, y.1)),
            &BarChart {
                categories: categories.iter().map(|c| c.to_string()).collect(),
                series: series
                    .into_iter()
                    .map(|(name, values)| BarSeries::new(name, values))
                    .collect(),
                reference: None,
            },
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::section::{Runs, ScenarioRun};
    use crate::suite::Suite;
    use crate::verdict::Verdict;

    #[test]
    fn the_live_suite_holds_every_live_section_and_nothing_else() {
        let suite = Suite::embedded("live").unwrap();
        let ids: Vec<&str> = suite.sections.iter().map(|s| s.section.id()).collect();
        let live: Vec<&str> = all().iter().map(|s| s.id()).collect();
        assert_eq!(ids, live);
        for s in &suite.sections {
            assert!(s.section.live().is_some(), "{}", s.section.id());
            assert!(s.scenarios.len() >= 2, "{}", s.section.id());
        }
        // Live sections never leak into the simulator's suite.
        let default = Suite::embedded(crate::suite::DEFAULT_SUITE).unwrap();
        assert!(default.sections.iter().all(|s| s.section.live().is_none()));
    }

    /// The section's verdict for these measured numbers, one set per
    /// scenario in the section's order.
    pub(crate) fn verdict(id: &str, numbers: &[&[(&str, f64)]]) -> Verdict {
        let suite = Suite::embedded("live").unwrap();
        let sec = suite
            .sections
            .iter()
            .find(|s| s.section.id() == id)
            .unwrap();
        let runs: Vec<ScenarioRun> = sec
            .scenarios
            .iter()
            .zip(numbers)
            .map(|(s, numbers)| {
                let done = brisk_sim::run(
                    &s.scenario,
                    brisk_sim::RunOptions {
                        seed: Some(1),
                        capture: None,
                        series: false,
                        ip: None,
                        qlog: None,
                        progress: None,
                        null_cipher: false,
                    },
                );
                ScenarioRun {
                    stem: s.stem.clone(),
                    path: s.path.clone(),
                    scenario: s.scenario.clone(),
                    series: Vec::new(),
                    reports: Vec::new(),
                    measured: numbers.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                    results: done.results,
                }
            })
            .collect();
        let findings = sec
            .section
            .evaluate(&Runs {
                section: id,
                runs: runs.iter().collect(),
            })
            .unwrap();
        assert!(!findings.plots.is_empty() && !findings.tables.is_empty());
        Verdict::of(&findings.checks)
    }

    /// The fast-open section's two runs as measured in the live lab
    /// (docs/TCP.md): the repeat connection without Fast Open, then with it.
    pub(crate) const FAST_OPEN_MEASURED: [&[(&str, f64)]; 2] = [
        &[
            ("first_ms", 207.0),
            ("repeat_ms", 205.0),
            ("repeat_syn_bytes", 0.0),
            ("repeat_syn_data_acked", 0.0),
            ("rtt_ms", 101.0),
        ],
        &[
            ("first_ms", 207.0),
            ("repeat_ms", 101.0),
            ("repeat_syn_bytes", 30.0),
            ("repeat_syn_data_acked", 1.0),
            ("rtt_ms", 101.0),
        ],
    ];

    /// Measured in the live lab (docs/TCP.md), and the same numbers with
    /// the recipe doing nothing: the first must pass, the second must not.
    #[test]
    fn verdicts_follow_the_measured_numbers() {
        type Numbers = &'static [(&'static str, f64)];
        let cases: [(&str, Numbers, Numbers); 5] = [
            (
                "notsent-lowat",
                &[
                    ("latency_p50_ms", 2646.0),
                    ("latency_p99_ms", 2716.0),
                    ("latency_max_ms", 2800.0),
                    ("send_buffer_bytes", 196_608.0),
                    ("queued_ahead_p50_bytes", 123_826.0),
                    ("bulk_goodput_kbps", 380.0),
                    ("messages", 25.0),
                ],
                &[
                    ("latency_p50_ms", 316.0),
                    ("latency_p99_ms", 406.0),
                    ("latency_max_ms", 450.0),
                    ("send_buffer_bytes", 196_608.0),
                    ("queued_ahead_p50_bytes", 12_991.0),
                    ("bulk_goodput_kbps", 380.0),
                    ("messages", 25.0),
                ],
            ),
            (
                "write-sizing",
                &[
                    ("small_complete_ms", 621.0),
                    ("small_run_0_ms", 621.0),
                    ("waited_behind_bytes", 62_649.0),
                    ("large_complete_ms", 2000.0),
                    ("rtt_ms", 251.0),
                ],
                &[
                    ("small_complete_ms", 275.0),
                    ("small_run_0_ms", 275.0),
                    ("waited_behind_bytes", 14_471.0),
                    ("large_complete_ms", 2000.0),
                    ("rtt_ms", 251.0),
                ],
            ),
            ("fast-open", FAST_OPEN_MEASURED[0], FAST_OPEN_MEASURED[1]),
            (
                "happy-eyeballs",
                &[
                    ("connect_ms", 2052.0),
                    ("control_v6_ms", 50.0),
                    ("ipv4_started_ms", 2001.0),
                    ("winner_ipv4", 1.0),
                    ("attempts", 2.0),
                ],
                &[
                    ("connect_ms", 302.0),
                    ("control_v6_ms", 50.0),
                    ("ipv4_started_ms", 251.0),
                    ("winner_ipv4", 1.0),
                    ("attempts", 2.0),
                ],
            ),
            (
                "nat64-literal",
                &[
                    ("connected", 0.0),
                    ("dialed_synthesized", 0.0),
                    ("elapsed_ms", 0.1),
                    ("connect_ms", f64::NAN),
                ],
                &[
                    ("connected", 1.0),
                    ("dialed_synthesized", 1.0),
                    ("elapsed_ms", 152.0),
                    ("connect_ms", 101.0),
                ],
            ),
        ];
        for (id, before, after) in cases {
            assert_eq!(verdict(id, &[before, after]), Verdict::Pass, "{id}");
            assert_ne!(
                verdict(id, &[before, before]),
                Verdict::Pass,
                "{id}: no effect"
            );
        }
    }

    /// The pair's numbers: Prague's and CUBIC's queue delay p50/p99, path
    /// RTT p99, and the link's busy fraction.
    fn pair(prague: [f64; 3], cubic: [f64; 3], link: f64) -> Vec<(&'static str, f64)> {
        vec![
            ("prague_goodput_mbps", 4.9),
            ("prague_queue_p50_ms", prague[0]),
            ("prague_queue_p99_ms", prague[1]),
            ("prague_rtt_p50_ms", 22.0),
            ("prague_rtt_p99_ms", prague[2] + 20.0),
            ("prague_path_rtt_p50_ms", 21.0),
            ("prague_path_rtt_p99_ms", prague[2]),
            ("prague_ce_fraction", 0.15),
            ("prague_loss_rate", 0.0),
            ("cubic_goodput_mbps", 4.7),
            ("cubic_queue_p50_ms", cubic[0]),
            ("cubic_queue_p99_ms", cubic[1]),
            ("cubic_rtt_p50_ms", 38.0),
            ("cubic_rtt_p99_ms", cubic[2]),
            ("cubic_path_rtt_p50_ms", 38.0),
            ("cubic_path_rtt_p99_ms", cubic[2]),
            ("cubic_ce_fraction", 0.01),
            ("cubic_loss_rate", 0.001),
            ("link_utilization", link),
            ("goodput_share_of_link", link * 0.95),
        ]
    }

    /// Measured in the live lab (docs/LIVE.md); then Prague as badly off
    /// through DualPI2 as through the FIFO, and a build without BBR.
    #[test]
    fn brisk_sections_follow_the_measured_numbers() {
        let dualpi2 = pair([0.83, 2.28, 22.6], [15.6, 54.1, 77.2], 0.975);
        let fifo = pair([717.0, 1112.0, 1163.0], [679.0, 960.0, 977.0], 0.997);
        assert_eq!(verdict("l4s-dualpi2", &[&dualpi2, &fifo]), Verdict::Pass);
        assert_ne!(verdict("l4s-dualpi2", &[&fifo, &fifo]), Verdict::Pass);
        let loss = |u: [f64; 4]| {
            vec![
                ("tcp_cubic_utilization", u[0]),
                ("tcp_bbr_utilization", u[1]),
                ("brisk_cubic_utilization", u[2]),
                ("brisk_bbr_utilization", u[3]),
            ]
        };
        let clean = loss([0.96, 0.96, 0.93, 0.93]);
        let short = loss([0.90, 0.94, 0.60, 0.90]);
        let long = loss([0.25, 0.90, 0.15, 0.85]);
        assert_eq!(
            verdict("loss-goodput", &[&clean, &short, &long]),
            Verdict::Pass
        );
        let no_bbr = loss([0.25, 0.90, 0.15, f64::NAN]);
        assert_eq!(
            verdict("loss-goodput", &[&clean, &short, &no_bbr]),
            Verdict::Partial
        );
        // TCP that does not collapse leaves nothing to show.
        let strong = loss([0.95, 0.90, 0.90, 0.85]);
        assert_eq!(
            verdict("loss-goodput", &[&clean, &short, &strong]),
            Verdict::Partial
        );
    }

    /// One first-contact network's numbers: each peer's first byte in
    /// RTTs (Brisk early, Brisk late, TLS over TCP, quinn, quinn 0-RTT),
    /// at OK.ru's Wi-Fi rates and a 110 ms round trip.
    fn contact(first: [f64; 5]) -> Vec<(String, f64)> {
        let prefixes = [
            "brisk_early_",
            "brisk_late_",
            "tcp_tls_",
            "quinn_",
            "quinn_0rtt_",
        ];
        let mut v = vec![
            ("rtt_ms".to_string(), 110.0),
            ("up_rate_bps".to_string(), 733_000.0),
            ("down_rate_bps".to_string(), 2_200_000.0),
            ("quinn_0rtt_accepted".to_string(), 1.0),
        ];
        for (prefix, rtts) in prefixes.iter().zip(first) {
            for (key, value) in [
                ("first_byte_rtts", rtts),
                ("complete_rtts", rtts + 1.0),
                ("first_byte_ms", rtts * 110.0),
                ("complete_ms", (rtts + 1.0) * 110.0),
            ] {
                v.push((format!("{prefix}{key}"), value));
            }
        }
        v
    }

    /// Measured at OK.ru's Wi-Fi round trip; then Brisk waiting for its
    /// handshake as if it had no early data.
    #[test]
    fn first_contact_verdict_follows_brisks_first_byte() {
        let measured = contact([1.2, 2.2, 3.2, 2.3, 1.1]);
        let late = contact([2.2, 2.2, 3.2, 2.3, 1.1]);
        fn as_refs(v: &[(String, f64)]) -> Vec<(&str, f64)> {
            v.iter().map(|(k, x)| (k.as_str(), *x)).collect()
        }
        let (m, l) = (as_refs(&measured), as_refs(&late));
        assert_eq!(verdict("first-contact", &[&m, &m, &m, &m]), Verdict::Pass);
        assert_eq!(verdict("first-contact", &[&l, &l, &l, &l]), Verdict::Fail);
    }

    /// One stalled-Wi-Fi run's numbers: each side's stall, and whether it
    /// finished intact over cellular.
    fn stalled_wifi(
        brisk_stall_ms: f64,
        tcp_stall_ms: f64,
        brisk_intact: f64,
    ) -> Vec<(&'static str, f64)> {
        vec![
            ("brisk_stall_ms", brisk_stall_ms),
            ("brisk_after_stall_ms", brisk_stall_ms + 2_000.0),
            ("brisk_total_ms", brisk_stall_ms + 2_600.0),
            ("brisk_intact", brisk_intact),
            ("brisk_stalls", 1.0),
            ("tcp_stall_ms", tcp_stall_ms),
            ("tcp_after_stall_ms", tcp_stall_ms + 2_000.0),
            ("tcp_total_ms", tcp_stall_ms + 2_600.0),
            ("tcp_intact", 1.0),
            ("tcp_timeouts", 1.0),
            ("cellular_mbps", 10.0),
            ("cellular_rtt_ms", 60.0),
            ("attempt_delay_ms", 250.0),
            ("brisk_connect_first_byte_ms", 380.0),
            ("brisk_connect_total_ms", 750.0),
            ("brisk_connect_intact", 1.0),
            ("tcp_connect_first_byte_ms", 377.0),
            ("tcp_connect_total_ms", 700.0),
            ("tcp_connect_intact", 1.0),
        ]
    }

    /// Measured in the live lab (docs/LIVE.md); then Brisk waiting as long
    /// as the app's read timeout, Brisk not finishing, and Brisk connecting
    /// without racing.
    #[test]
    fn stalled_wifi_verdict_follows_brisks_stall() {
        let (v4, v6) = (
            stalled_wifi(180.0, 1_400.0, 1.0),
            stalled_wifi(190.0, 1_420.0, 1.0),
        );
        assert_eq!(verdict("stalled-wifi-live", &[&v4, &v6]), Verdict::Pass);
        let slow = stalled_wifi(1_100.0, 1_400.0, 1.0);
        assert_ne!(verdict("stalled-wifi-live", &[&slow, &slow]), Verdict::Pass);
        let broken = stalled_wifi(180.0, 1_400.0, 0.0);
        assert_ne!(verdict("stalled-wifi-live", &[&v4, &broken]), Verdict::Pass);
        // Connecting under the stall: Brisk waiting out its handshake
        // timeout on Wi-Fi instead of racing cellular.
        let mut unraced = stalled_wifi(180.0, 1_400.0, 1.0);
        for (name, value) in unraced.iter_mut() {
            if *name == "brisk_connect_first_byte_ms" {
                *value = 5_120.0;
            }
        }
        assert_ne!(
            verdict("stalled-wifi-live", &[&v4, &unraced]),
            Verdict::Pass
        );
    }

    #[test]
    fn helpers_read_the_base_rtt_and_flags() {
        assert_eq!(flag(true), 1.0);
        assert_eq!(flag(false), 0.0);
        let suite = Suite::embedded("live").unwrap();
        let s = &suite.sections[0].scenarios[0].scenario;
        assert_eq!(base_rtt_ms(s), 20.0);
        assert!(unknown_stem("x", "y").to_string().contains("\"y\""));
    }
}
