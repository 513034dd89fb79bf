//! Lossy mobile links on real sockets: the simulator's "Lossy mobile
//! links" section's objects and bulk, run live with kernel TCP (CUBIC,
//! BBR) beside Brisk (BBR) with and without forward error correction,
//! one transfer at a time through the same lab
//! (`brisk_live::recipes::lossy_objects`). Two files, OK.ru's LTE round
//! trip (220 ms) at 10 Mbit/s with a 200-packet FIFO: without loss (the
//! reference each object's time is compared with) and with 5% random
//! loss on the data direction.
//!
//! Each transport fetches 10, 50 and 200 KB objects in turn on fresh
//! connections, as many times as the file's duration has seconds, then
//! downloads for the file's duration. Times run from the connect call to
//! the last byte, handshakes included (no TLS on TCP).
//!
//! Checks, on the lossy file: Brisk with FEC's 50 KB p95 **at most**
//! kernel CUBIC's (TCP pays a retransmission timeout per tail loss, Brisk
//! rebuilds the packet); Brisk BBR's bulk goodput **at least twice**
//! kernel CUBIC's (the OK.ru slide: TCP collapses under random loss).
//! Setup: Brisk with FEC rebuilt at least one packet on the lossy file.
//! Brisk's own goals (50 KB p95 at most 1.3x the loss-free time, bulk at
//! least 0.9 x rate x (1 - loss)) are in the tables, not checked here:
//! the simulator's section holds them.

use super::{before_after, constant_down_rate, in_lab, unknown_stem};
use crate::claim::{Claim, Source};
use crate::numbers::Numbers;
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::lossy_objects::{self, LossyExperiment, LossyOutcome};
use brisk_live::recipes::quantile;
use brisk_sim::scenario::Scenario;

pub struct LossyMobileLive;

const ID: &str = "lossy-mobile-live";
const CLEAN: &str = "220ms-0pct";
const LOSSY: &str = "220ms-5pct";
/// The networks in table order, with their labels.
const NETWORKS: [(&str, &str); 2] = [(CLEAN, "0% loss"), (LOSSY, "5% loss")];

/// The transports in the experiment's order: label and key prefix.
const SENDERS: [(&str, &str); 4] = [
    ("kernel TCP CUBIC", "tcp_cubic_"),
    ("kernel TCP BBR", "tcp_bbr_"),
    ("Brisk BBR, FEC", "brisk_fec_"),
    ("Brisk BBR, no FEC", "brisk_nofec_"),
];

crate::numbers! {
    /// One transport's figures on one network (NaN: it could not run).
    pub(crate) struct SenderNumbers {
        /// Completion of the objects, from the connect call.
        p50_10kb_ms,
        p95_10kb_ms,
        p50_50kb_ms,
        p95_50kb_ms,
        p50_200kb_ms,
        p95_200kb_ms,
        /// Goodput of the bulk download from its first byte.
        bulk_goodput_mbps,
        /// Packets the client rebuilt from repair over all its objects.
        packets_rebuilt,
    }
}

crate::numbers! {
    /// What one run measured beside the transports' figures.
    pub(crate) struct RunNumbers {
        down_rate_bps,
        /// The down link's random loss, 0..1.
        loss_rate,
        /// Fetches per transport and size.
        repeats,
    }
}

fn sender_numbers(run: &ScenarioRun, prefix: &str) -> Result<SenderNumbers, SectionError> {
    SenderNumbers::read(prefix, &run.measured).map_err(|key| SectionError::Unsuitable {
        scenario: run.path.clone(),
        message: format!("the live run measured no {prefix}{key:?}"),
    })
}

impl Section for LossyMobileLive {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Lossy mobile links on real sockets: kernel TCP beside Brisk with and without FEC"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "On a lossy mobile path TCP pays a round trip or a timeout per loss: its \
                   utilization falls to 45% at 5% loss and 220 ms. A protocol that repairs \
                   losses ahead of time (error correction) and does not read random loss as \
                   congestion keeps small objects fast and the link busy.",
            scope: "One transfer at a time through the live lab's router (10 Mbit/s, 220 ms \
                    base RTT, 200-packet FIFO, without loss and with 5% random loss on the \
                    data direction): Linux TCP with CUBIC and BBR (no TLS), Brisk on UDP \
                    sockets (brisk-io) with BBR, with forward error correction on every \
                    stream and without. 10, 50 and 200 KB objects on fresh connections, \
                    timed from the connect call; then a bulk download per transport. \
                    Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[CLEAN, LOSSY]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (clean, lossy) = (runs.get(CLEAN)?, runs.get(LOSSY)?);
        let tcp = sender_numbers(lossy, "tcp_cubic_")?;
        let fec = sender_numbers(lossy, "brisk_fec_")?;
        let nofec = sender_numbers(lossy, "brisk_nofec_")?;
        let checks = vec![
            Check::new(
                "5% loss, 220 ms: 50 KB p95, Brisk with FEC over kernel CUBIC",
                "repair instead of a timeout per tail loss",
                fec.p95_50kb_ms / tcp.p95_50kb_ms,
                "x",
                Bound::AtMost(1.0),
            )
            .decimals(2),
            Check::new(
                "5% loss, 220 ms: bulk goodput, Brisk BBR over kernel CUBIC",
                "TCP collapses under random loss (45% of the link)",
                nofec.bulk_goodput_mbps / tcp.bulk_goodput_mbps,
                "x",
                Bound::AtLeast(2.0),
            )
            .decimals(2),
            Check::new(
                "5% loss: Brisk with FEC rebuilt packets from repair",
                "error correction on",
                fec.packets_rebuilt,
                "packets",
                Bound::AtLeast(1.0),
            )
            .decimals(0)
            .setup(),
        ];
        let mut object_rows = Vec::new();
        for (label, prefix) in SENDERS {
            for (stem, network) in NETWORKS {
                let n = sender_numbers(runs.get(stem)?, prefix)?;
                let pair = |p50: f64, p95: f64| {
                    Cell::text(format!(
                        "{} / {}",
                        crate::verdict::with_unit(p50, "ms", 0),
                        crate::verdict::with_unit(p95, "ms", 0)
                    ))
                };
                object_rows.push(vec![
                    Cell::text(label),
                    Cell::text(network),
                    pair(n.p50_10kb_ms, n.p95_10kb_ms),
                    pair(n.p50_50kb_ms, n.p95_50kb_ms),
                    pair(n.p50_200kb_ms, n.p95_200kb_ms),
                    Cell::num(n.packets_rebuilt, "", 0),
                ]);
            }
        }
        let clean_fec = sender_numbers(clean, "brisk_fec_")?;
        let run = lossy.numbers::<RunNumbers>()?;
        let goal_mbps = 0.9 * run.down_rate_bps / 1e6 * (1.0 - run.loss_rate);
        let mut bulk_rows = Vec::new();
        let mut bulk_series = Vec::new();
        for (label, prefix) in SENDERS {
            let values = NETWORKS
                .iter()
                .map(|(stem, _)| Ok(sender_numbers(runs.get(stem)?, prefix)?.bulk_goodput_mbps))
                .collect::<Result<Vec<f64>, SectionError>>()?;
            let mut row = vec![Cell::text(label)];
            row.extend(values.iter().map(|v| Cell::num(*v, "Mbit/s", 2)));
            bulk_rows.push(row);
            bulk_series.push((label, values));
        }
        let tables = vec![
            Table {
                caption: format!(
                    "Object completion p50 / p95 from the connect call, {} fetches per \
                     transport and size; packets rebuilt from repair over all of a \
                     transport's objects. Brisk with FEC's 50 KB p95 at 5% loss is {:.2}x \
                     its loss-free p95 (the simulated goal: at most 1.3x) and {:.2}x \
                     faster than without FEC (goal: 2x)",
                    run.repeats,
                    fec.p95_50kb_ms / clean_fec.p95_50kb_ms,
                    nofec.p95_50kb_ms / fec.p95_50kb_ms,
                ),
                columns: [
                    "transport",
                    "network",
                    "10 KB",
                    "50 KB",
                    "200 KB",
                    "rebuilt",
                ]
                .map(String::from)
                .to_vec(),
                rows: object_rows,
            },
            Table {
                caption: format!(
                    "Bulk goodput from the first byte, one download at a time (the simulated \
                     goal at 5% loss: 0.9 x rate x (1 - loss) = {goal_mbps:.2} Mbit/s)"
                ),
                columns: ["transport", "0% loss", "5% loss"]
                    .map(String::from)
                    .to_vec(),
                rows: bulk_rows,
            },
        ];
        let plots = vec![before_after(
            "Bulk goodput at 220 ms, 10 Mbit/s, without and with 5% loss",
            "Bars: goodput from the first byte, one download at a time.",
            ("goodput", "Mbit/s"),
            &NETWORKS.map(|(_, label)| label),
            bulk_series,
        )?];
        Ok(Findings {
            checks,
            tables,
            plots,
        })
    }
}

impl LiveExperiment for LossyMobileLive {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if ![CLEAN, LOSSY].contains(&stem) {
            return Err(unknown_stem(ID, stem));
        }
        let rate_bps = constant_down_rate(ID, scenario)?;
        // The file's duration sets the run's length: one fetch of each
        // size per second of it, and a bulk download that long.
        let repeats = scenario.duration.as_secs().max(1) as usize;
        let exp = LossyExperiment::okru(repeats, scenario.duration);
        let (mut run, outcome) = in_lab(scenario, IpMode::from(scenario.ip), capture, |lab| {
            lossy_objects::run(lab, &exp, rate_bps)
        })?;
        write_numbers(&exp, &outcome, &mut run);
        RunNumbers {
            down_rate_bps: rate_bps as f64,
            loss_rate: scenario
                .network
                .link
                .down
                .loss
                .as_ref()
                .map_or(0.0, |l| l.mean_loss()),
            repeats: repeats as f64,
        }
        .write("", &mut run.measured);
        Ok(run)
    }
}

/// Each transport's figures under its prefix, in [`SENDERS`]' order
/// (the experiment's).
fn write_numbers(exp: &LossyExperiment, outcome: &LossyOutcome, run: &mut LiveRun) {
    for (transport, (_, prefix)) in exp.transports.iter().zip(SENDERS) {
        let at = |bytes: u64, q: f64| {
            let mut v: Vec<f64> = outcome.times(transport, bytes).unwrap_or_default().to_vec();
            v.sort_by(f64::total_cmp);
            quantile(&v, q)
        };
        let rebuilt: u64 = outcome
            .objects
            .iter()
            .filter(|o| &o.transport == transport)
            .map(|o| o.packets_rebuilt)
            .sum();
        let bulk = outcome
            .bulk
            .runs
            .iter()
            .find(|r| &r.transport == transport)
            .map_or(f64::NAN, |r| r.goodput_mbps);
        SenderNumbers {
            p50_10kb_ms: at(10_000, 0.5),
            p95_10kb_ms: at(10_000, 0.95),
            p50_50kb_ms: at(50_000, 0.5),
            p95_50kb_ms: at(50_000, 0.95),
            p50_200kb_ms: at(200_000, 0.5),
            p95_200kb_ms: at(200_000, 0.95),
            bulk_goodput_mbps: bulk,
            packets_rebuilt: rebuilt as f64,
        }
        .write(prefix, &mut run.measured);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_live::recipes::loss::Transport;

    /// One file's numbers: every transport's objects take `object_ms`
    /// (p50 and p95), except Brisk with FEC's, which take `fec_ms`; bulk
    /// goodput `tcp_mbps` for kernel TCP and 7 Mbit/s for Brisk.
    fn numbers(object_ms: f64, fec_ms: f64, tcp_mbps: f64, rebuilt: f64) -> Vec<(String, f64)> {
        let mut m = crate::numbers::Measured::new();
        for (_, prefix) in SENDERS {
            let fec = prefix == "brisk_fec_";
            let ms = if fec { fec_ms } else { object_ms };
            SenderNumbers {
                p50_10kb_ms: ms,
                p95_10kb_ms: ms,
                p50_50kb_ms: ms,
                p95_50kb_ms: ms,
                p50_200kb_ms: ms,
                p95_200kb_ms: ms,
                bulk_goodput_mbps: if prefix.starts_with("tcp") {
                    tcp_mbps
                } else {
                    7.0
                },
                packets_rebuilt: if fec { rebuilt } else { 0.0 },
            }
            .write(prefix, &mut m);
        }
        RunNumbers {
            down_rate_bps: 10e6,
            loss_rate: 0.05,
            repeats: 10.0,
        }
        .write("", &mut m);
        m.into_iter().collect()
    }

    #[test]
    fn the_verdict_follows_objects_bulk_and_repair() {
        fn as_refs(v: &[(String, f64)]) -> Vec<(&str, f64)> {
            v.iter().map(|(k, x)| (k.as_str(), *x)).collect()
        }
        let clean = numbers(700.0, 750.0, 9.0, 0.0);
        // FEC faster than TCP, Brisk's bulk 7 against TCP's 1: met.
        let lossy = numbers(2000.0, 900.0, 1.0, 40.0);
        let verdict = |lossy: &[(String, f64)]| {
            crate::live::tests::verdict(ID, &[&as_refs(&clean), &as_refs(lossy)])
        };
        assert_eq!(verdict(&lossy), crate::verdict::Verdict::Pass);
        // FEC slower than TCP's objects: missed.
        let slow = numbers(800.0, 900.0, 1.0, 40.0);
        assert_ne!(verdict(&slow), crate::verdict::Verdict::Pass);
        // TCP's bulk close to Brisk's: missed.
        let busy_tcp = numbers(2000.0, 900.0, 5.0, 40.0);
        assert_ne!(verdict(&busy_tcp), crate::verdict::Verdict::Pass);
    }

    #[test]
    fn the_senders_match_the_experiments_transports() {
        let exp = LossyExperiment::okru(1, std::time::Duration::ZERO);
        assert_eq!(exp.transports.len(), SENDERS.len());
        assert_eq!(exp.transports[0], Transport::kernel("cubic"));
        assert_eq!(exp.transports[2], Transport::brisk_fec("bbr"));
        assert_eq!(exp.sizes, [10_000, 50_000, 200_000]);
        let e = LossyMobileLive
            .run_live(
                "x",
                &Scenario::parse("duration = \"1s\"\n", "t.toml").unwrap(),
                false,
            )
            .unwrap_err();
        assert!(
            matches!(&e, LiveRunError::UnknownStem { section: ID, stem } if stem == "x"),
            "{e}"
        );
    }
}
