//! "Mobile profiles" (OK.ru): the four access networks OK.ru measured in
//! its app, as Brisk's network model builds them, each with a ping and a
//! modest load (half the downlink).
//!
//! Checks per profile, against the seed's table: the fastest ping (the base
//! RTT, which also carries two tiny serializations) is within 5% of the
//! seed's RTT; the load's loss is within three binomial standard errors of
//! the seed's loss rate, a bound that widens honestly when a `--quick` run
//! sends fewer packets. Delay under load is measured and shown, not checked:
//! the seed gives no number for it.
//!
//! A feed page loaded over Brisk on each profile, against a simulated
//! classic TCP + TLS 1.2 + HTTP/1.1-like client: see
//! [`super::mobile_feed`].

use super::mobile_feed;
use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::RateModel;
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, Samples, bar_chart, cdf_chart};

pub struct Mobile;

const PING: &str = "ping";
const LOAD: &str = "load";
/// How far the base RTT may stray from the seed's: the model adds a few
/// ms of serialization, nothing else.
const RTT_TOLERANCE: f64 = 0.05;
/// Standard errors of the binomial loss estimate the measured loss may be
/// from the seed's rate (a false alarm about 0.3% of the time).
const LOSS_SIGMAS: f64 = 3.0;

/// One row of OK.ru's table: bandwidth, packet loss and RTT per network.
struct SeedProfile {
    stem: &'static str,
    label: &'static str,
    down_mbps: f64,
    loss: f64,
    rtt_ms: f64,
}

const TABLE: [SeedProfile; 4] = [
    SeedProfile {
        stem: "edge",
        label: "EDGE",
        down_mbps: 0.2,
        loss: 0.025,
        rtt_ms: 900.0,
    },
    SeedProfile {
        stem: "3g",
        label: "3G",
        down_mbps: 1.0,
        loss: 0.005,
        rtt_ms: 550.0,
    },
    SeedProfile {
        stem: "lte",
        label: "LTE",
        down_mbps: 2.0,
        loss: 0.007,
        rtt_ms: 220.0,
    },
    SeedProfile {
        stem: "wifi",
        label: "Wi-Fi",
        down_mbps: 2.2,
        loss: 0.005,
        rtt_ms: 110.0,
    },
];

impl Section for Mobile {
    fn id(&self) -> &'static str {
        "mobile"
    }

    fn title(&self) -> &'static str {
        "Mobile profiles"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "OK.ru's app measured what its users' networks look like, as \
                   bandwidth / loss / RTT: EDGE 0.2 Mbit/s, 2.5%, 900 ms; 3G 1.0 Mbit/s, \
                   0.5%, 550 ms; LTE 2.0 Mbit/s, 0.7%, 220 ms; Wi-Fi 2.2 Mbit/s, 0.5%, \
                   110 ms. No single protocol setting serves all of them. On such \
                   round trips TCP + TLS needs 4-5 of them before a request is \
                   answered, where OK.ru's own UDP protocol needs one.",
            scope: "Two halves. The network model: do Brisk's profiles reproduce these \
                    round trips and loss rates under a modest load? And a feed page over \
                    Brisk (CUBIC, multiplexed with priorities) on each profile, against \
                    a simulated classic TCP + TLS 1.2 + HTTP/1.1-like client on the same \
                    network: OK.ru's 4 round trips to the first response (handshakes \
                    as small exchanges that queue and lose like the page), then one \
                    image at a time.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[
            "edge",
            "3g",
            "lte",
            "wifi",
            "feed-edge",
            "feed-3g",
            "feed-lte",
            "feed-wifi",
            "feed-edge-classic",
            "feed-3g-classic",
            "feed-lte-classic",
            "feed-wifi-classic",
        ]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let mut checks = Vec::new();
        let mut rows = Vec::new();
        let mut cdfs = Vec::new();
        let (mut labels, mut rtts, mut seed_rtts) = (Vec::new(), Vec::new(), Vec::new());
        let (mut losses, mut seed_losses) = (Vec::new(), Vec::new());
        for p in &TABLE {
            let run = runs.get(p.stem)?;
            let m = Measured::of(run)?;
            checks.push(
                Check::new(
                    format!("{}: base RTT (fastest ping)", p.label),
                    format!("{} ms", p.rtt_ms),
                    m.min_rtt_ms,
                    "ms",
                    Bound::Within {
                        low: p.rtt_ms * (1.0 - RTT_TOLERANCE),
                        high: p.rtt_ms * (1.0 + RTT_TOLERANCE),
                    },
                )
                .decimals(0)
                .setup(),
            );
            let sigma = (p.loss * (1.0 - p.loss) / m.load_sent.max(1) as f64).sqrt();
            checks.push(
                Check::new(
                    format!("{}: loss on the downlink", p.label),
                    format!("{:.1}%", p.loss * 100.0),
                    m.load_loss * 100.0,
                    "%",
                    Bound::Within {
                        low: (p.loss - LOSS_SIGMAS * sigma).max(0.0) * 100.0,
                        high: (p.loss + LOSS_SIGMAS * sigma) * 100.0,
                    },
                )
                .decimals(2)
                .setup(),
            );
            rows.push(vec![
                Cell::text(p.label),
                Cell::num(p.down_mbps, "Mbit/s", 1),
                Cell::num(m.down_mbps, "Mbit/s", 2),
                Cell::num(p.rtt_ms, "ms", 0),
                Cell::num(m.min_rtt_ms, "ms", 1),
                Cell::num(m.rtt_p50_ms, "ms", 1),
                Cell::num(m.rtt_p99_ms, "ms", 1),
                Cell::num(p.loss * 100.0, "%", 2),
                Cell::num(m.load_loss * 100.0, "%", 2),
                Cell::count(m.load_sent),
            ]);
            cdfs.push(Samples::new(p.label, run.rtt_samples_ms(PING)?));
            labels.push(p.label.to_string());
            rtts.push(m.min_rtt_ms);
            seed_rtts.push(p.rtt_ms);
            losses.push(m.load_loss * 100.0);
            seed_losses.push(p.loss * 100.0);
        }
        let table = Table {
            caption: "Each profile against OK.ru's numbers (load: half the downlink; its \
                      packets measure the downlink's loss)"
                .into(),
            columns: [
                "network",
                "OK.ru bandwidth",
                "model downlink",
                "OK.ru RTT",
                "base RTT",
                "RTT p50 under load",
                "RTT p99 under load",
                "OK.ru loss",
                "downlink loss",
                "load packets",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let feeds = TABLE
            .iter()
            .map(|p| {
                Ok(mobile_feed::FeedPair {
                    brisk: runs.get(&format!("feed-{}", p.stem))?,
                    classic: runs.get(&format!("feed-{}-classic", p.stem))?,
                    label: p.label,
                })
            })
            .collect::<Result<Vec<_>, SectionError>>()?;
        let (feed_checks, feed_table, feed_plot) = mobile_feed::findings(&feeds)?;
        checks.extend(feed_checks);
        let network = Axis::new("network", "");
        let mut plots = vec![
            plot(
                "Base RTT per network",
                "Bars: the fastest ping in each profile. Dashed: OK.ru's RTT.",
                || {
                    bar_chart(
                        &Frame::new(
                            "Base RTT per network",
                            network.clone(),
                            Axis::new("RTT", "ms"),
                        ),
                        &BarChart {
                            categories: labels.clone(),
                            series: vec![BarSeries::new("measured", rtts)],
                            reference: Some(BarSeries::new("OK.ru", seed_rtts)),
                        },
                    )
                },
            )?,
            plot(
                "Downlink loss per network",
                "Bars: share of the load's packets lost on the downlink. Dashed: OK.ru's \
                 loss rate.",
                || {
                    bar_chart(
                        &Frame::new("Downlink loss per network", network, Axis::new("loss", "%")),
                        &BarChart {
                            categories: labels,
                            series: vec![BarSeries::new("measured", losses)],
                            reference: Some(BarSeries::new("OK.ru", seed_losses)),
                        },
                    )
                },
            )?,
            plot(
                "Ping RTT under load",
                "Every answered ping with the load running; the spread above the base \
                 is serialization behind load packets.",
                || {
                    cdf_chart(
                        &Frame::new(
                            "Ping RTT under load",
                            Axis::new("ping RTT", "ms"),
                            Axis::new("fraction of pings", ""),
                        ),
                        &cdfs,
                    )
                },
            )?,
        ];
        plots.push(feed_plot);
        Ok(Findings {
            checks,
            tables: vec![table, feed_table],
            plots,
        })
    }
}

/// What the section reads from one profile's run.
struct Measured {
    down_mbps: f64,
    min_rtt_ms: f64,
    rtt_p50_ms: f64,
    rtt_p99_ms: f64,
    load_sent: u64,
    load_loss: f64,
}

impl Measured {
    fn of(run: &ScenarioRun) -> Result<Measured, SectionError> {
        let ping = run.flow(PING)?;
        let load = run.flow(LOAD)?;
        let min_rtt_ms = run
            .series(PING)?
            .rtt
            .iter()
            .map(|(_, d)| ms(*d))
            .min_by(f64::total_cmp)
            .ok_or_else(|| SectionError::Unsuitable {
                scenario: run.path.clone(),
                message: format!("flow {PING:?} measured no round trip (is it a ping?)"),
            })?;
        let down_mbps = match &run.scenario.network.link.down.rate {
            RateModel::Constant { bps } => *bps as f64 / 1e6,
            _ => f64::NAN,
        };
        Ok(Measured {
            down_mbps,
            min_rtt_ms,
            rtt_p50_ms: ping.rtt_ms.p50,
            rtt_p99_ms: ping.rtt_ms.p99,
            load_sent: load.sent_packets,
            load_loss: if load.sent_packets == 0 {
                0.0
            } else {
                load.link_losses as f64 / load.sent_packets as f64
            },
        })
    }
}
