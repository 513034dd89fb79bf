//! "Happy Eyeballs recovers from a broken IPv6 path within the attempt
//! delay" (WWDC 2015, RFC 8305) with kernel TCP: the server listens on
//! both families, then its IPv6 address is removed, so SYNs to it vanish
//! silently (`brisk_live::recipes::happy_eyeballs`). An IPv6-first client
//! that tries one address at a time waits out its connect timeout (2 s
//! here; the kernel alone would retry SYNs for about two minutes); a
//! racing client starts IPv4 250 ms after IPv6 and keeps whichever
//! connects.
//!
//! Checks (base RTT from the scenario, 50 ms):
//! - sequential: connected **≥ 2 s** (the timeout) and over IPv4;
//! - racing: the IPv4 attempt started **240 to 300 ms** in (the attempt
//!   delay);
//! - racing: connected within **attempt delay + 1.5 RTT** and over IPv4.

use super::{base_rtt_ms, before_after, flag, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::happy_eyeballs::{self, Strategy};
use brisk_sim::scenario::Scenario;
use std::time::Duration;

pub struct HappyEyeballs;

const ID: &str = "happy-eyeballs";
const BEFORE: &str = "sequential";
const AFTER: &str = "racing";
/// How long the sequential client waits for each address.
const SEQUENTIAL_TIMEOUT: Duration = Duration::from_secs(2);
/// RFC 8305's recommended Connection Attempt Delay.
const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

impl Section for HappyEyeballs {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Happy Eyeballs past a blackholed IPv6 path (kernel TCP)"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "Racing connections across address families (Happy Eyeballs: IPv6 first, \
                   IPv4 after a short delay, the first to connect wins) keeps a broken IPv6 \
                   path from stalling an app, where trying one address at a time waits for \
                   the connection timeout.",
            scope: "Real Linux TCP in network namespaces through the live lab's router, \
                    25 ms each way. The server's IPv6 address is removed after a control \
                    connection over IPv6 succeeds, so its SYNs are dropped without an \
                    error. brisk-tcp's racing client (attempt delay 250 ms) against \
                    IPv6-first sequential connects with a 2 s timeout per address. \
                    Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[BEFORE, AFTER]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (seq, race) = (runs.get(BEFORE)?, runs.get(AFTER)?);
        let rtt = base_rtt_ms(&race.scenario);
        let delay_ms = crate::section::ms(ATTEMPT_DELAY);
        let seq_ms = seq.numbers::<HappyEyeballsNumbers>()?.connect_ms;
        let race_ms = race.numbers::<HappyEyeballsNumbers>()?.connect_ms;
        let ipv4 = |r: &ScenarioRun| {
            Ok::<_, SectionError>(r.numbers::<HappyEyeballsNumbers>()?.winner_ipv4)
        };
        let checks = vec![
            Check::new(
                "sequential: connected after",
                "waits for the IPv6 attempt's timeout (2 s here)",
                seq_ms,
                "ms",
                Bound::AtLeast(crate::section::ms(SEQUENTIAL_TIMEOUT)),
            )
            .decimals(0),
            Check::new(
                "racing: IPv4 attempt started at",
                "one attempt delay (250 ms) after IPv6",
                race.numbers::<HappyEyeballsNumbers>()?.ipv4_started_ms,
                "ms",
                Bound::Within {
                    low: delay_ms - 10.0,
                    high: delay_ms + 50.0,
                },
            )
            .decimals(0),
            Check::new(
                "racing: connected after",
                "within the attempt delay plus a handshake",
                race_ms,
                "ms",
                Bound::AtMost(delay_ms + 1.5 * rtt),
            )
            .decimals(0),
            Check::new(
                "both connected over IPv4",
                "the working family wins",
                ipv4(seq)?.min(ipv4(race)?),
                "",
                Bound::AtLeast(1.0),
            )
            .decimals(0),
        ];
        let row = |label: &str, r: &ScenarioRun| -> Result<Vec<Cell>, SectionError> {
            Ok(vec![
                Cell::text(label),
                Cell::num(r.numbers::<HappyEyeballsNumbers>()?.control_v6_ms, "ms", 1),
                Cell::num(
                    r.numbers::<HappyEyeballsNumbers>()?.ipv4_started_ms,
                    "ms",
                    0,
                ),
                Cell::num(r.numbers::<HappyEyeballsNumbers>()?.connect_ms, "ms", 0),
                Cell::text(if ipv4(r)? >= 1.0 { "IPv4" } else { "IPv6" }),
            ])
        };
        let table = Table {
            caption: "The IPv6 handshake before the blackhole (control), when the IPv4 \
                      attempt started, and when the client had a connection"
                .into(),
            columns: [
                "client",
                "IPv6 control",
                "IPv4 started",
                "connected",
                "winner",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![
                row("IPv6 first, sequential (2 s timeout)", seq)?,
                row("Happy Eyeballs (250 ms)", race)?,
            ],
        };
        let plots = vec![before_after(
            "Connect time with the IPv6 path blackholed",
            "Bars: from the start to a connected socket. Sequential waits for its 2 s \
             timeout on IPv6; racing starts IPv4 after 250 ms.",
            ("connect time", "ms"),
            &["sequential (IPv6 first)", "Happy Eyeballs"],
            vec![("measured", vec![seq_ms, race_ms])],
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

crate::numbers! {
    /// What one run measured.
    pub(crate) struct HappyEyeballsNumbers {
        connect_ms,
        control_v6_ms,
        ipv4_started_ms,
        /// 1 if the IPv4 attempt won, else 0.
        winner_ipv4,
        /// Connection attempts started.
        attempts,
    }
}

impl LiveExperiment for HappyEyeballs {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        let strategy = match stem {
            BEFORE => Strategy::Sequential {
                per_address_timeout: SEQUENTIAL_TIMEOUT,
            },
            AFTER => Strategy::Racing {
                attempt_delay: ATTEMPT_DELAY,
            },
            other => return Err(unknown_stem(ID, other)),
        };
        let (run, o) = in_lab(scenario, IpMode::V4, capture, |lab| {
            happy_eyeballs::run(lab, strategy)
        })?;
        let ipv4_started = o
            .attempts
            .iter()
            .find(|a| a.addr.is_ipv4())
            .map_or(f64::NAN, |a| a.started_ms);
        Ok(with_numbers(
            run,
            &HappyEyeballsNumbers {
                connect_ms: o.connect_ms,
                control_v6_ms: o.control_v6_ms,
                ipv4_started_ms: ipv4_started,
                winner_ipv4: flag(o.winner.is_ipv4()),
                attempts: o.attempts.len() as f64,
            },
        ))
    }
}
