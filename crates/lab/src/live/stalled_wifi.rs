//! "Fall back from a stalled Wi-Fi to cellular" (WWDC 2015) with real
//! sockets: a phone downloads 3 MiB over Wi-Fi (the lab's router, the
//! scenario's network) with a cellular interface beside it (10 Mbit/s,
//! 30 ms each way, through a link model of its own); after the first MiB
//! the Wi-Fi stops
//! delivering both ways (`brisk_live::recipes::two_path`). Brisk (failover
//! on, its cellular address as the standby) and kernel TCP (Happy
//! Eyeballs over both local addresses, Wi-Fi first, 250 ms attempt delay;
//! the app connects again when a read waits 1 s, asking for the rest) run
//! one after the other, IPv4 and IPv6, each file one family.
//!
//! Checks per family (wall clock, so with margins):
//! - Brisk finishes over cellular with the right SHA-256 (setup for the
//!   TCP side: it must finish too);
//! - Brisk's stall (longest wait between reads from the stall on) is at
//!   most **400 ms**: about one Wi-Fi probe timeout to notice (the phone
//!   only downloads: its PINGs on its ACKs go unanswered) plus one
//!   cellular round trip, with room for the host's scheduling;
//! - Brisk's stall is at most **half of kernel TCP's**, which waits out
//!   the app's read timeout, then a Happy Eyeballs race whose Wi-Fi
//!   attempt is lost, then a handshake and a request over cellular.
//!
//! Then, in the same lab, both connect while the Wi-Fi already passes
//! nothing (`two_path::run_connect_stalled`): Brisk racing both local
//! addresses (`Endpoint::connect_racing`), kernel TCP with the same Happy
//! Eyeballs, 250 ms attempt delay each, a 256 KiB download. Check:
//! Brisk's first response byte within the attempt delay, two cellular
//! round trips (handshake, request) and **150 ms** for the host; kernel
//! TCP's finishing over cellular is setup.

use super::{flag, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, Section, SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::two_path::{self, ConnectStalledConfig, TwoPathConfig};
use brisk_sim::scenario::Scenario;

pub struct StalledWifi;

const ID: &str = "stalled-wifi-live";
const STEMS: [&str; 2] = ["v4", "v6"];
/// Brisk's stall at most: see the module documentation.
const BRISK_STALL_MAX_MS: f64 = 400.0;
/// Room for the host's scheduling in the connect-while-stalled bound.
const CONNECT_MARGIN_MS: f64 = 150.0;

impl Section for StalledWifi {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "A download leaves a stalled Wi-Fi for cellular: Brisk beside kernel TCP"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "A phone's Wi-Fi can stall while its link stays up; an app should fall back \
                   to cellular rather than wait on it.",
            scope: "Real sockets in network namespaces: Wi-Fi through the live lab's router \
                    (20 Mbit/s, 10 ms each way), cellular on a second interface (10 Mbit/s, \
                    30 ms each way). A 3 MiB download whose Wi-Fi stops delivering after \
                    1 MiB. Brisk over brisk-io with failover and a standby address, beside \
                    kernel TCP connected by Happy Eyeballs over both local addresses with a \
                    1 s read timeout in the app. Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &STEMS
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let mut checks = Vec::new();
        let mut rows = Vec::new();
        let mut connect_rows = Vec::new();
        for stem in STEMS {
            let run = runs.get(stem)?;
            let n = run.numbers::<StalledWifiNumbers>()?;
            let family = if stem == "v6" { "IPv6" } else { "IPv4" };
            checks.push(
                Check::new(
                    format!("{family}: kernel TCP finished over cellular, hash matching"),
                    "the baseline falls back too",
                    n.tcp_intact,
                    "",
                    Bound::AtLeast(1.0),
                )
                .decimals(0)
                .setup(),
            );
            checks.push(
                Check::new(
                    format!("{family}: Brisk finished over cellular, hash matching"),
                    "the download survives the stall",
                    n.brisk_intact,
                    "",
                    Bound::AtLeast(1.0),
                )
                .decimals(0),
            );
            checks.push(
                Check::new(
                    format!("{family}: Brisk's stall"),
                    "about a Wi-Fi probe timeout and a cellular round trip",
                    n.brisk_stall_ms,
                    "ms",
                    Bound::AtMost(BRISK_STALL_MAX_MS),
                )
                .decimals(0),
            );
            checks.push(
                Check::new(
                    format!("{family}: Brisk's stall over kernel TCP's"),
                    "the transport notices; the app's timeout is not needed",
                    n.brisk_stall_ms / n.tcp_stall_ms,
                    "",
                    Bound::AtMost(0.5),
                )
                .decimals(2),
            );
            let connect_bound = n.attempt_delay_ms + 2.0 * n.cellular_rtt_ms + CONNECT_MARGIN_MS;
            checks.push(
                Check::new(
                    format!(
                        "{family}: connecting under a stalled Wi-Fi, kernel TCP (Happy \
                         Eyeballs) finished over cellular, hash matching"
                    ),
                    "the baseline races too",
                    n.tcp_connect_intact,
                    "",
                    Bound::AtLeast(1.0),
                )
                .decimals(0)
                .setup(),
            );
            checks.push(
                Check::new(
                    format!(
                        "{family}: connecting under a stalled Wi-Fi, Brisk finished over \
                         cellular, hash matching"
                    ),
                    "the race moves the first contact to cellular",
                    n.brisk_connect_intact,
                    "",
                    Bound::AtLeast(1.0),
                )
                .decimals(0),
            );
            checks.push(
                Check::new(
                    format!(
                        "{family}: connecting under a stalled Wi-Fi, Brisk's first response byte"
                    ),
                    format!(
                        "the attempt delay, two cellular round trips and {CONNECT_MARGIN_MS:.0} ms \
                         (here {connect_bound:.0} ms)"
                    ),
                    n.brisk_connect_first_byte_ms,
                    "ms",
                    Bound::AtMost(connect_bound),
                )
                .decimals(0),
            );
            connect_rows.push(connect_row(family, "Brisk (racing both paths)", &n, true));
            connect_rows.push(connect_row(
                family,
                "kernel TCP (Happy Eyeballs)",
                &n,
                false,
            ));
            rows.push(row(family, "Brisk (failover, standby address)", &n, true));
            rows.push(row(
                family,
                "kernel TCP (Happy Eyeballs, 1 s read timeout)",
                &n,
                false,
            ));
        }
        let table = Table {
            caption: "Each side's wait across the stall (the longest gap between reads from \
                      the moment the Wi-Fi stopped delivering), the rest of the download after \
                      it, the whole download, and how the side noticed and moved"
                .into(),
            columns: [
                "family",
                "client",
                "stall",
                "rest after the stall",
                "whole download",
                "noticed by",
                "on cellular, hash",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let v4 = runs.get("v4")?.numbers::<StalledWifiNumbers>()?;
        let v6 = runs.get("v6")?.numbers::<StalledWifiNumbers>()?;
        let plots = vec![super::before_after(
            "Wait across a stalled Wi-Fi",
            "Bars: the longest gap between reads from the stall on, per family. Kernel TCP \
             waits for the app's 1 s read timeout, then races both addresses; Brisk's \
             connection notices by itself.",
            ("stall", "ms"),
            &["IPv4", "IPv6"],
            vec![
                ("Brisk", vec![v4.brisk_stall_ms, v6.brisk_stall_ms]),
                ("kernel TCP", vec![v4.tcp_stall_ms, v6.tcp_stall_ms]),
            ],
        )?];
        let connect_table = Table {
            caption: "Connecting while the Wi-Fi already passes nothing: a 256 KiB download, \
                      each client racing its cellular address after a 250 ms attempt delay; \
                      times from the start of the first attempt (wall clock)"
                .into(),
            columns: [
                "family",
                "client",
                "first response byte",
                "last byte",
                "on cellular, hash",
            ]
            .map(String::from)
            .to_vec(),
            rows: connect_rows,
        };
        Ok(Findings {
            checks,
            tables: vec![table, connect_table],
            plots,
        })
    }
}

fn row(family: &str, label: &str, n: &StalledWifiNumbers, brisk: bool) -> Vec<Cell> {
    let (stall, rest, total, intact) = if brisk {
        (
            n.brisk_stall_ms,
            n.brisk_after_stall_ms,
            n.brisk_total_ms,
            n.brisk_intact,
        )
    } else {
        (
            n.tcp_stall_ms,
            n.tcp_after_stall_ms,
            n.tcp_total_ms,
            n.tcp_intact,
        )
    };
    Vec::from([
        Cell::text(family),
        Cell::text(label),
        Cell::num(stall, "ms", 0),
        Cell::num(rest, "ms", 0),
        Cell::num(total, "ms", 0),
        Cell::text(if brisk {
            "its connection (no answer for a probe timeout)"
        } else {
            "the app's read timeout"
        }),
        Cell::text(if intact >= 1.0 { "yes" } else { "no" }),
    ])
}

fn connect_row(family: &str, label: &str, n: &StalledWifiNumbers, brisk: bool) -> Vec<Cell> {
    let (first, total, intact) = if brisk {
        (
            n.brisk_connect_first_byte_ms,
            n.brisk_connect_total_ms,
            n.brisk_connect_intact,
        )
    } else {
        (
            n.tcp_connect_first_byte_ms,
            n.tcp_connect_total_ms,
            n.tcp_connect_intact,
        )
    };
    Vec::from([
        Cell::text(family),
        Cell::text(label),
        Cell::num(first, "ms", 0),
        Cell::num(total, "ms", 0),
        Cell::text(if intact >= 1.0 { "yes" } else { "no" }),
    ])
}

crate::numbers! {
    /// What one run measured: both sides, one family.
    pub(crate) struct StalledWifiNumbers {
        brisk_stall_ms,
        brisk_after_stall_ms,
        brisk_total_ms,
        /// 1 if every byte arrived with the right hash and the last came
        /// over cellular.
        brisk_intact,
        /// Stalls the connection reported.
        brisk_stalls,
        tcp_stall_ms,
        tcp_after_stall_ms,
        tcp_total_ms,
        tcp_intact,
        /// Reads that timed out.
        tcp_timeouts,
        cellular_mbps,
        /// The cellular path's base round trip, ms.
        cellular_rtt_ms,
        /// Both clients' attempt delay when connecting under a stalled
        /// Wi-Fi, ms.
        attempt_delay_ms,
        /// Connecting under a stalled Wi-Fi: first and last response
        /// bytes from the first attempt, ms, and 1 if every byte arrived
        /// with the right hash over cellular.
        brisk_connect_first_byte_ms,
        brisk_connect_total_ms,
        brisk_connect_intact,
        tcp_connect_first_byte_ms,
        tcp_connect_total_ms,
        tcp_connect_intact,
    }
}

impl LiveExperiment for StalledWifi {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if !STEMS.contains(&stem) {
            return Err(unknown_stem(ID, stem));
        }
        let connect = ConnectStalledConfig::default();
        let (run, (o, c)) = in_lab(scenario, IpMode::from(scenario.ip), capture, |lab| {
            two_path::run_both(lab, &TwoPathConfig::default(), &connect)
        })?;
        let connected = |s: &two_path::FirstContactReport| {
            flag(s.sha256_ok && s.on_cellular && s.bytes == connect.bytes)
        };
        let intact = |s: &two_path::SideReport| {
            flag(s.sha256_ok && s.finished_on_cellular && s.bytes == TwoPathConfig::default().bytes)
        };
        Ok(with_numbers(
            run,
            &StalledWifiNumbers {
                brisk_stall_ms: o.brisk.stall_ms,
                brisk_after_stall_ms: o.brisk.after_stall_ms,
                brisk_total_ms: o.brisk.total_ms,
                brisk_intact: intact(&o.brisk),
                brisk_stalls: o.brisk.stalls_noticed as f64,
                tcp_stall_ms: o.tcp.stall_ms,
                tcp_after_stall_ms: o.tcp.after_stall_ms,
                tcp_total_ms: o.tcp.total_ms,
                tcp_intact: intact(&o.tcp),
                tcp_timeouts: o.tcp.stalls_noticed as f64,
                cellular_mbps: o.cellular_mbps,
                cellular_rtt_ms: c.cellular_rtt_ms,
                attempt_delay_ms: c.attempt_delay_ms,
                brisk_connect_first_byte_ms: c.brisk.first_byte_ms,
                brisk_connect_total_ms: c.brisk.total_ms,
                brisk_connect_intact: connected(&c.brisk),
                tcp_connect_first_byte_ms: c.tcp.first_byte_ms,
                tcp_connect_total_ms: c.tcp.total_ms,
                tcp_connect_intact: connected(&c.tcp),
            },
        ))
    }
}
