//! "Lossy mobile links" (OK.ru): what random and bursty loss costs a small
//! fetch and a bulk transfer at the round trips OK.ru measured on mobile
//! networks (Wi-Fi 110 ms, LTE 220 ms, 3G 550 ms, EDGE 900 ms), and how
//! much of it forward error correction wins back.
//!
//! Objects: each scenario fetches 120 objects (50, 10 and 200 KB in turn),
//! each on a fresh connection, one every 500 ms, over a 10 Mbit/s link
//! with the profile's round trip, a 200-packet FIFO and one loss condition
//! on the data direction: none, 1%, 3%, 5% random, or 5% in
//! Gilbert-Elliott bursts. The rate is held at 10 Mbit/s (not the
//! profile's) so that completion times count the round trips loss costs,
//! and so that the goals, stated at 10 Mbit/s, apply. Three
//! transports fetch the same schedule:
//! - Brisk (BBR) with FEC on for every object;
//! - Brisk (BBR) with FEC off;
//! - a classic TCP + TLS 1.3 model. The simulator has no TCP stack, so
//!   this is Brisk's CUBIC without FEC, with two small exchanges before
//!   the request standing in for TCP's and TLS 1.3's handshakes (the feed
//!   application's `setup_round_trips`, queued and lost like the data).
//!   Its loss recovery is Brisk's, so it is kinder than a real TCP stack
//!   without RACK or tail-loss probes; it is labelled as a model.
//!
//! A fetch's completion time runs from its connection's start to the
//! object's last byte, handshakes included. A fetch counts when it had
//! at least [`allowance`] before the end of the run; one of those not
//! finished by then counts as the time it had (a lower bound, shown with
//! "≥"). Under `--quick` the runs the checks read (5% loss with FEC and
//! with the TCP model at every round trip, and without FEC at 220 ms with
//! and without loss) keep their full length, so every p95 checked is over
//! at least 40 fetches; the other runs keep only their first few fetches.
//!
//! Bulk: one transfer of a minute over 10 Mbit/s at 220 ms with 5% random
//! loss, its goodput taken over the whole run, start included, beside
//! OK.ru's TCP figures as the baseline (99% utilisation at 0% loss, 74% at
//! 5% and 20 ms, 45% at 5% and 220 ms). A minute, because the start from
//! a ten-packet window costs about 1.3 MB on this path whatever the loss
//! (the link is full only after five round trips of doubling), nearly all
//! of the goal's slack over 30 s on IPv6 (about 1.4 MB), whose headers
//! hold its steady state near 8.9 Mbit/s.
//!
//! Checks (the goals):
//! - p95 of a 50 KB fetch at 5% loss and 220 ms with FEC **≤ 1.3 x** the
//!   loss-free p95 (Brisk without FEC, no loss);
//! - what loss adds to that p95 (over the loss-free one), without FEC over
//!   with FEC, **≥ 2**: the "twice better than without FEC" read
//!   on the loss's cost, as the p95 ratio itself cannot reach 2 on this
//!   path (without FEC the p95 is under twice the loss-free one, so FEC
//!   would have to beat a fetch that loses nothing);
//! - at every round trip, Brisk with FEC's 50 KB p95 at 5% loss no later
//!   than the TCP + TLS 1.3 model's;
//! - bulk goodput with FEC **≥ 0.9 x rate x (1 - loss)**.
//!
//! Live streaming on each network: see [`super::lossy_mobile_stream`].

use crate::claim::{Claim, Source};
use crate::section::{Cell, Findings, Runs, ScenarioRun, Section, SectionError, Table, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::RateModel;
use brisk_sim::scenario::{Brisk, BriskWorkloadSpec, Traffic};
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, bar_chart};
use std::time::Duration;

pub struct LossyMobile;

/// The transports compared: (stem prefix, legend).
const TRANSPORTS: [(&str, &str); 3] = [
    ("fec", "Brisk with FEC"),
    ("nofec", "Brisk without FEC"),
    ("tcp", "TCP + TLS 1.3 model"),
];
/// OK.ru's networks: (round trip in ms, name).
pub(super) const NETWORKS: [(u32, &str); 4] =
    [(110, "Wi-Fi"), (220, "LTE"), (550, "3G"), (900, "EDGE")];
/// The loss conditions: (stem suffix, label).
const LOSSES: [(&str, &str); 5] = [
    ("0pct", "none"),
    ("1pct", "1%"),
    ("3pct", "3%"),
    ("5pct", "5%"),
    ("bursts", "5%, bursts"),
];
/// Object sizes in the tables, in bytes.
const SIZES: [u64; 3] = [10_000, 50_000, 200_000];
/// The goals' object and network.
const GOAL_SIZE: u64 = 50_000;
const GOAL_RTT_MS: u32 = 220;
/// The most a lossy FEC fetch's p95 may take over the loss-free one.
const NEAR_LOSS_FREE: f64 = 1.3;
/// How much faster FEC's p95 should be than no FEC's at 5% loss.
const FEC_GAIN: f64 = 2.0;
/// Bulk goodput goal as a share of `rate x (1 - loss)`.
const BULK_SHARE: f64 = 0.9;
/// Fetches of one size a full run holds: fewer (a `--quick` run) makes
/// the p95 the slowest of a handful, which the setup check names.
const FULL_SAMPLES: f64 = 40.0;
/// OK.ru's TCP utilisation: (loss %, RTT ms, percent).
const SEED_TCP: [(u32, u32, f64); 3] = [(0, 20, 99.0), (5, 20, 74.0), (5, 220, 45.0)];

const BULK: &str = "bulk";

/// How long a fetch must have had before the end of the run to count:
/// 2 s plus 8 round trips, about twice what a 200 KB fetch needs at 5%
/// loss without FEC (handshake, slow start, a few recoveries).
pub(crate) fn allowance(rtt: Duration) -> Duration {
    Duration::from_secs(2) + rtt * 8
}

fn stem(transport: &str, rtt_ms: u32, loss: &str) -> String {
    format!("{transport}-{rtt_ms}ms-{loss}")
}

impl Section for LossyMobile {
    fn id(&self) -> &'static str {
        "lossy-mobile"
    }

    fn title(&self) -> &'static str {
        "Lossy mobile links"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "On mobile networks loss is random as well as congestive: OK.ru measured \
                   TCP using 99% of a link at 0% loss, 74% at 5% loss and 20 ms, and 45% at \
                   5% and 220 ms, and its own UDP protocols answer with tail-loss probes, \
                   \"soft FEC\" and a pacer. With forward error correction a small object \
                   should cost little more on a lossy link than on a clean one, and a bulk \
                   transfer should keep nearly all the capacity the loss leaves.",
            scope: "Simulated: 10 Mbit/s each way at OK.ru's round trips (Wi-Fi 110 ms, LTE \
                    220 ms, 3G 550 ms, EDGE 900 ms), a 200-packet FIFO, loss on the data \
                    direction only. Brisk uses BBR. The TCP + TLS 1.3 column is a model, \
                    not a TCP stack: Brisk's CUBIC without FEC, with two extra round trips \
                    for TCP's and TLS 1.3's handshakes before the request; its loss \
                    recovery is Brisk's. OK.ru's TCP figures are the talk's, measured at \
                    about 1 Mbit/s, shown as utilisation.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &ALL_STEMS
    }

    /// The runs the checks read keep their length under `--quick`: cut to
    /// 10 s, a 220 ms run holds five 50 KB fetches, whose p95 is the
    /// slowest of them (1,407 ms against 980 ms over 40), a 900 ms run
    /// one, and a bulk transfer is mostly its start-up.
    fn full_length_under_quick(&self) -> &'static [&'static str] {
        &FULL_LENGTH
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let mut checks = Vec::new();
        let mut rows = Vec::new();
        // p95 of the goal's object per transport, network and loss.
        let goal = |t: &str, rtt_ms: u32, loss: &str| -> Result<Samples, SectionError> {
            let fetches = Fetches::of(runs.get(&stem(t, rtt_ms, loss))?)?;
            Ok(fetches.of_size(GOAL_SIZE))
        };
        let clean = goal("nofec", GOAL_RTT_MS, "0pct")?;
        let fec = goal("fec", GOAL_RTT_MS, "5pct")?;
        let plain = goal("nofec", GOAL_RTT_MS, "5pct")?;
        checks.push(
            Check::new(
                "50 KB at 5% loss, 220 ms: p95 with FEC",
                format!(
                    "at most {NEAR_LOSS_FREE} x the loss-free p95 ({})",
                    clean.p95_text()
                ),
                fec.p95(),
                "ms",
                Bound::AtMost(NEAR_LOSS_FREE * clean.p95()),
            )
            .decimals(0),
        );
        checks.push(
            Check::new(
                "50 KB at 5% loss, 220 ms: what loss adds to the p95, without FEC over with FEC",
                format!(
                    "at least {FEC_GAIN} (without FEC: {}, {:.2} x the loss-free p95, so \
                     {FEC_GAIN} x on the p95 itself would need FEC faster than a loss-free \
                     fetch)",
                    plain.p95_text(),
                    plain.p95() / clean.p95()
                ),
                loss_cost_ratio(plain.p95(), fec.p95(), clean.p95()),
                "x",
                Bound::AtLeast(FEC_GAIN),
            )
            .decimals(2),
        );
        let mut fewest = fec.len().min(clean.len()).min(plain.len());
        let mut per_network = Vec::new();
        for (rtt_ms, network) in NETWORKS {
            let fec = goal("fec", rtt_ms, "5pct")?;
            let tcp = goal("tcp", rtt_ms, "5pct")?;
            fewest = fewest.min(fec.len()).min(tcp.len());
            per_network.push((rtt_ms, network, fec, tcp));
        }
        checks.push(
            Check::new(
                "50 KB fetches behind each p95 the checks read",
                format!("{FULL_SAMPLES:.0} in a full run"),
                fewest as f64,
                "",
                Bound::AtLeast(FULL_SAMPLES),
            )
            .setup(),
        );
        for (rtt_ms, network, fec, tcp) in per_network {
            checks.push(
                Check::new(
                    format!("{network} ({rtt_ms} ms), 50 KB at 5% loss: p95 with FEC"),
                    format!("no later than the TCP + TLS 1.3 model ({})", tcp.p95_text()),
                    fec.p95(),
                    "ms",
                    Bound::AtMost(tcp.p95()),
                )
                .decimals(0),
            );
        }
        let mut categories = Vec::new();
        let mut bars: Vec<Vec<f64>> = vec![Vec::new(); TRANSPORTS.len()];
        for (rtt_ms, network) in NETWORKS {
            for (loss, loss_label) in LOSSES {
                let per: Vec<Fetches> = TRANSPORTS
                    .iter()
                    .map(|(t, _)| Fetches::of(runs.get(&stem(t, rtt_ms, loss))?))
                    .collect::<Result<_, _>>()?;
                for size in SIZES {
                    let samples: Vec<Samples> = per.iter().map(|f| f.of_size(size)).collect();
                    let mut row = vec![
                        Cell::text(format!("{network}, {rtt_ms} ms")),
                        Cell::text(loss_label),
                        Cell::num(size as f64 / 1000.0, "KB", 0),
                        Cell::count(samples[0].len() as u64),
                    ];
                    row.extend(samples.iter().map(|s| Cell::text(s.p50_p95_text())));
                    rows.push(row);
                    if rtt_ms == GOAL_RTT_MS && size == GOAL_SIZE {
                        for (bar, s) in bars.iter_mut().zip(&samples) {
                            bar.push(s.p95() / 1000.0);
                        }
                    }
                }
                if rtt_ms == GOAL_RTT_MS {
                    categories.push(loss_label.to_string());
                }
            }
        }
        let legends: Vec<String> = TRANSPORTS
            .iter()
            .map(|(_, l)| format!("{l}: p50 / p95"))
            .collect();
        let objects = Table {
            caption: "Completion time of one object on a fresh connection (connection start to \
                      last byte, handshakes included), p50 / p95 over the fetches that had \
                      time to finish; 10 Mbit/s, 200-packet FIFO, loss on the data direction; \
                      ≥: a fetch not finished by the end of the run counts as the time it had"
                .into(),
            columns: ["network", "loss", "object", "fetches"]
                .map(String::from)
                .into_iter()
                .chain(legends)
                .collect(),
            rows,
        };
        let (bulk_checks, bulk) = bulk(runs)?;
        checks.extend(bulk_checks);
        let (stream_checks, stream) = super::lossy_mobile_stream::stream(runs)?;
        checks.extend(stream_checks);
        let series: Vec<BarSeries> = TRANSPORTS
            .iter()
            .zip(bars)
            .map(|((_, legend), values)| BarSeries::new(*legend, values))
            .collect();
        let plots = vec![plot(
            "50 KB fetch at 220 ms (LTE), p95",
            "Bars: the 95th percentile of a 50 KB fetch's completion time (connection start to \
             last byte) per loss condition and transport, 10 Mbit/s.",
            || {
                bar_chart(
                    &Frame::new(
                        "50 KB fetch at 220 ms (LTE), p95",
                        Axis::new("loss on the data direction", ""),
                        Axis::new("completion time, p95", "s"),
                    ),
                    &BarChart {
                        categories,
                        series,
                        reference: None,
                    },
                )
            },
        )?];
        Ok(Findings {
            checks,
            tables: vec![objects, bulk, stream],
            plots,
        })
    }
}

/// The bulk goal's check and the bulk table.
fn bulk(runs: &Runs<'_>) -> Result<(Vec<Check>, Table), SectionError> {
    let mut checks = Vec::new();
    let mut rows = Vec::new();
    for (t, legend) in TRANSPORTS {
        let run = runs.get(&format!("bulk-{t}"))?;
        let unsuitable = |message: &str| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: message.to_string(),
        };
        let link = &run.scenario.network.link.down;
        let rate_bps = match link.rate {
            RateModel::Constant { bps } if bps > 0 => bps as f64,
            _ => return Err(unsuitable("the down link must have one constant rate")),
        };
        let loss = link.loss.map_or(0.0, |l| l.mean_loss());
        let flow = run.flow(BULK)?;
        let transport = &flow
            .brisk
            .as_ref()
            .ok_or_else(|| unsuitable("flow \"bulk\" must be a brisk flow"))?
            .transport;
        let goal_mbps = BULK_SHARE * rate_bps * (1.0 - loss) / 1e6;
        let rtt_ms = run.base_rtt(BULK)?.as_secs_f64() * 1000.0;
        if t == "fec" {
            checks.push(
                Check::new(
                    format!(
                        "Bulk at {:.0}% loss, {rtt_ms:.0} ms, {:.0} Mbit/s: goodput with FEC \
                         over the whole {:.0} s transfer",
                        loss * 100.0,
                        rate_bps / 1e6,
                        run.scenario.duration.as_secs_f64()
                    ),
                    format!("at least {BULK_SHARE} x rate x (1 - loss) ({goal_mbps:.2} Mbit/s)"),
                    flow.goodput_mbps,
                    "Mbit/s",
                    Bound::AtLeast(goal_mbps),
                )
                .decimals(2),
            );
        }
        let repair_percent = if transport.bytes_sent > 0 {
            100.0 * transport.repair_bytes_sent as f64 / transport.bytes_sent as f64
        } else {
            0.0
        };
        rows.push(vec![
            Cell::text(legend),
            Cell::num(flow.goodput_mbps, "Mbit/s", 2),
            Cell::num(flow.goodput_mbps * 1e6 / rate_bps * 100.0, "%", 1),
            Cell::num(goal_mbps, "Mbit/s", 2),
            Cell::num(seed_tcp_percent(5, 220), "%", 0),
            Cell::count(transport.packets_retransmitted),
            Cell::num(repair_percent, "%", 1),
        ]);
    }
    let seed = SEED_TCP
        .iter()
        .map(|(l, r, u)| format!("{u:.0}% at {l}% loss and {r} ms"))
        .collect::<Vec<_>>()
        .join(", ");
    let table = Table {
        caption: format!(
            "Bulk transfer over 10 Mbit/s at 220 ms with 5% random loss on the data \
             direction, 200-packet FIFO; utilisation is goodput over the link rate; OK.ru's \
             TCP (the baseline, measured at about 1 Mbit/s): {seed}"
        ),
        columns: [
            "transport",
            "goodput",
            "utilisation",
            "goal",
            "OK.ru TCP",
            "packets retransmitted",
            "repair, of bytes sent",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    Ok((checks, table))
}

/// What loss adds to the p95 without FEC over what it adds with FEC,
/// both over the loss-free p95 `clean`: the issue's "twice better than
/// without FEC" read on the time loss costs. With FEC at or under the
/// loss-free time it takes back all of the cost: [`f64::INFINITY`] would
/// fail every bound, so the ratio is capped at 100. NaN when loss cost the
/// fetch without FEC nothing (no gain to measure).
fn loss_cost_ratio(plain: f64, fec: f64, clean: f64) -> f64 {
    let (without, with) = (plain - clean, fec - clean);
    if without.is_nan() || without <= 0.0 || !with.is_finite() {
        f64::NAN
    } else if with <= without / 100.0 {
        100.0
    } else {
        without / with
    }
}

/// OK.ru's TCP utilisation for this condition, NaN where it gives none.
fn seed_tcp_percent(loss_percent: u32, rtt_ms: u32) -> f64 {
    SEED_TCP
        .iter()
        .find(|(l, r, _)| (*l, *r) == (loss_percent, rtt_ms))
        .map_or(f64::NAN, |(.., u)| *u)
}

/// The fetches of one run: (object bytes, completion in ms, finished).
struct Fetches(Vec<(u64, f64, bool)>);

impl Fetches {
    fn of(run: &ScenarioRun) -> Result<Fetches, SectionError> {
        let unsuitable = |message: String| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message,
        };
        let end = run.scenario.duration;
        let mut fetches = Vec::new();
        for (i, spec) in run.scenario.flows.iter().enumerate() {
            let label = spec.label(i);
            let bytes = match &spec.traffic {
                Traffic::Brisk(Brisk {
                    app: BriskWorkloadSpec::Feed { objects, .. },
                    ..
                }) => objects.iter().sum::<u64>(),
                _ => {
                    return Err(unsuitable(format!(
                        "flow {label:?} must be a brisk flow with app = \"feed\""
                    )));
                }
            };
            let start = spec.start.unwrap_or_default();
            let had = end.saturating_sub(start);
            if had < allowance(run.base_rtt(&label)?) {
                continue;
            }
            let done = run
                .flow(&label)?
                .brisk
                .as_ref()
                .and_then(|b| b.completion_time_s);
            fetches.push(match done {
                Some(s) => (bytes, s * 1000.0, true),
                None => (bytes, had.as_secs_f64() * 1000.0, false),
            });
        }
        Ok(Fetches(fetches))
    }

    fn of_size(&self, bytes: u64) -> Samples {
        let mut ms: Vec<(f64, bool)> = self
            .0
            .iter()
            .filter(|(b, ..)| *b == bytes)
            .map(|(_, ms, done)| (*ms, *done))
            .collect();
        ms.sort_by(|a, b| a.0.total_cmp(&b.0));
        Samples(ms)
    }
}

/// Completion times in ms, sorted, each with whether it finished.
struct Samples(Vec<(f64, bool)>);

impl Samples {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The sample at quantile `q` (nearest rank); NaN when empty.
    fn at(&self, q: f64) -> Option<(f64, bool)> {
        let n = self.0.len();
        if n == 0 {
            return None;
        }
        let rank = ((n as f64 * q).ceil() as usize).clamp(1, n);
        self.0.get(rank - 1).copied()
    }

    fn p95(&self) -> f64 {
        self.at(0.95).map_or(f64::NAN, |(ms, _)| ms)
    }

    fn text(&self, q: f64) -> String {
        match self.at(q) {
            Some((ms, true)) => format!("{ms:.0}"),
            Some((ms, false)) => format!("≥ {ms:.0}"),
            None => crate::verdict::MISSING.to_string(),
        }
    }

    fn p95_text(&self) -> String {
        format!("{} ms", self.text(0.95))
    }

    fn p50_p95_text(&self) -> String {
        format!("{} / {} ms", self.text(0.5), self.text(0.95))
    }
}

/// The runs the checks read, at full length even under `--quick`.
const FULL_LENGTH: [&str; 13] = [
    "fec-110ms-5pct",
    "fec-220ms-5pct",
    "fec-550ms-5pct",
    "fec-900ms-5pct",
    "nofec-220ms-0pct",
    "nofec-220ms-5pct",
    "tcp-110ms-5pct",
    "tcp-220ms-5pct",
    "tcp-550ms-5pct",
    "tcp-900ms-5pct",
    "bulk-fec",
    "bulk-nofec",
    "bulk-tcp",
];

/// The fetch and bulk stems, then the live streams'.
static ALL_STEMS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    STEMS
        .iter()
        .chain(&super::lossy_mobile_stream::STREAM_STEMS)
        .copied()
        .collect()
});

/// Every scenario stem: objects per transport, network and loss, then
/// the bulk transfers.
static STEMS: [&str; 63] = [
    "fec-110ms-0pct",
    "fec-110ms-1pct",
    "fec-110ms-3pct",
    "fec-110ms-5pct",
    "fec-110ms-bursts",
    "fec-220ms-0pct",
    "fec-220ms-1pct",
    "fec-220ms-3pct",
    "fec-220ms-5pct",
    "fec-220ms-bursts",
    "fec-550ms-0pct",
    "fec-550ms-1pct",
    "fec-550ms-3pct",
    "fec-550ms-5pct",
    "fec-550ms-bursts",
    "fec-900ms-0pct",
    "fec-900ms-1pct",
    "fec-900ms-3pct",
    "fec-900ms-5pct",
    "fec-900ms-bursts",
    "nofec-110ms-0pct",
    "nofec-110ms-1pct",
    "nofec-110ms-3pct",
    "nofec-110ms-5pct",
    "nofec-110ms-bursts",
    "nofec-220ms-0pct",
    "nofec-220ms-1pct",
    "nofec-220ms-3pct",
    "nofec-220ms-5pct",
    "nofec-220ms-bursts",
    "nofec-550ms-0pct",
    "nofec-550ms-1pct",
    "nofec-550ms-3pct",
    "nofec-550ms-5pct",
    "nofec-550ms-bursts",
    "nofec-900ms-0pct",
    "nofec-900ms-1pct",
    "nofec-900ms-3pct",
    "nofec-900ms-5pct",
    "nofec-900ms-bursts",
    "tcp-110ms-0pct",
    "tcp-110ms-1pct",
    "tcp-110ms-3pct",
    "tcp-110ms-5pct",
    "tcp-110ms-bursts",
    "tcp-220ms-0pct",
    "tcp-220ms-1pct",
    "tcp-220ms-3pct",
    "tcp-220ms-5pct",
    "tcp-220ms-bursts",
    "tcp-550ms-0pct",
    "tcp-550ms-1pct",
    "tcp-550ms-3pct",
    "tcp-550ms-5pct",
    "tcp-550ms-bursts",
    "tcp-900ms-0pct",
    "tcp-900ms-1pct",
    "tcp-900ms-3pct",
    "tcp-900ms-5pct",
    "tcp-900ms-bursts",
    "bulk-fec",
    "bulk-nofec",
    "bulk-tcp",
];

#[cfg(test)]
mod tests {
    use super::loss_cost_ratio;

    #[test]
    fn the_gain_is_read_on_what_loss_adds() {
        // Loss-free 800 ms; without FEC 1,400 (+600), with FEC 1,000 (+200).
        assert_eq!(loss_cost_ratio(1_400.0, 1_000.0, 800.0), 3.0);
        // With FEC no slower than loss-free: the whole cost taken back.
        assert_eq!(loss_cost_ratio(1_400.0, 790.0, 800.0), 100.0);
        // Loss cost nothing without FEC: nothing to win back.
        assert!(loss_cost_ratio(800.0, 900.0, 800.0).is_nan());
        assert!(loss_cost_ratio(1_400.0, f64::NAN, 800.0).is_nan());
    }
}
