//! The mobile section's feed half (OK.ru): one feed page (a 4 KB API
//! response, then five 12 KB images) loaded on each profile, through the
//! profile's deep FIFO, twice, both simulated:
//! - Brisk (`feed-<profile>`): one connection and its handshake, the
//!   API response first, then every image at once on multiplexed streams;
//! - the classic client (`feed-<profile>-classic`): TCP + TLS 1.2 +
//!   HTTP/1.1-like, the same workload with CUBIC, `sequential = true` (each
//!   image asked for after the previous one arrived) and
//!   `setup_round_trips = 3` (TCP's and TLS 1.2's handshakes as small
//!   exchanges) before the API request; with the connection's own
//!   handshake (measured: about half a round trip from the flow's start)
//!   that is OK.ru's 4-5 round trips to the first response, every one
//!   of them queued and lost like the page.
//!
//! The analytic lower bound stays as a sanity check on the classic run: 4
//! base RTTs to the first response, one more per image, every byte at the
//! downlink's rate, no loss, slow start or queueing. A classic run faster
//! than that would mean the model lost a round trip.
//!
//! Checks per profile:
//! - Brisk's first response (the API object, from the flow's start) at
//!   most the classic client's;
//! - Brisk's whole page at most the classic client's;
//! - the classic page at least its analytic bound (when it loaded).
//!
//! A classic page not loaded by the end of the run (EDGE under `--quick`)
//! took at least the time it had: that censored time stands in for it,
//! marked "≥", which only makes Brisk's check harder to meet; its sanity
//! check is left out (it says nothing about physics).

use crate::section::{Cell, Plot, ScenarioRun, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::RateModel;
use brisk_sim::scenario::{Brisk, BriskWorkloadSpec, Traffic};
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, bar_chart};
use std::time::Duration;

const FEED: &str = "feed";
/// Round trips before a classic client's first response byte: TCP 1,
/// TLS 1.2 2, the request 1.
const CLASSIC_FIRST_RTTS: f64 = 4.0;

/// One profile's pair of feed runs.
pub(crate) struct FeedPair<'r> {
    pub brisk: &'r ScenarioRun,
    pub classic: &'r ScenarioRun,
    pub label: &'static str,
}

/// The checks, the table and the plot of the feed runs.
pub(crate) fn findings(pairs: &[FeedPair<'_>]) -> Result<(Vec<Check>, Table, Plot), SectionError> {
    let mut checks = Vec::new();
    let mut rows = Vec::new();
    let (mut labels, mut brisk, mut classic) = (Vec::new(), Vec::new(), Vec::new());
    for pair in pairs {
        let label = pair.label;
        let b = Page::of(pair.brisk)?;
        let c = Page::of(pair.classic)?;
        let c_page_ms = c.page_or_censored_ms();
        let at_least = if c.page_ms.is_finite() { "" } else { "≥ " };
        checks.push(Check::new(
            format!("{label}: Brisk's first response (API)"),
            format!("no later than the classic client's ({:.0} ms)", c.first_ms),
            b.first_ms,
            "ms",
            Bound::AtMost(c.first_ms),
        ));
        checks.push(Check::new(
            format!("{label}: Brisk's feed page load"),
            format!("faster than the classic client's ({at_least}{c_page_ms:.0} ms)"),
            b.page_ms,
            "ms",
            Bound::AtMost(c_page_ms),
        ));
        if c.page_ms.is_finite() {
            checks.push(
                Check::new(
                    format!("{label}: the classic page load (sanity)"),
                    format!(
                        "no faster than its round trips and bytes allow ({:.0} ms)",
                        c.bound_page_ms
                    ),
                    c.page_ms,
                    "ms",
                    Bound::AtLeast(c.bound_page_ms),
                )
                .setup(),
            );
        }
        rows.push(vec![
            Cell::text(label),
            Cell::num(b.base_rtt_ms, "ms", 0),
            Cell::num(b.first_ms, "ms", 0),
            Cell::num(c.first_ms, "ms", 0),
            Cell::num(b.page_ms, "ms", 0),
            if at_least.is_empty() {
                Cell::num(c_page_ms, "ms", 0)
            } else {
                Cell::text(format!("≥ {c_page_ms:.0} ms (not loaded)"))
            },
            Cell::num(c.bound_page_ms, "ms", 0),
            if at_least.is_empty() {
                Cell::num(c_page_ms / b.page_ms, "x", 2)
            } else {
                Cell::text(format!("≥ {:.2} x", c_page_ms / b.page_ms))
            },
            Cell::count(b.lost),
            Cell::count(c.lost),
        ]);
        labels.push(label.to_string());
        brisk.push(b.page_ms / 1000.0);
        classic.push(c_page_ms / 1000.0);
    }
    let table = Table {
        caption: "A feed page per network, both clients simulated: Brisk (multiplexed, \
                  one handshake) and the classic client (CUBIC, 3 handshake round trips \
                  more, one object at a time); classic bound: its round trips and bytes \
                  alone; ratio: classic over Brisk"
            .into(),
        columns: [
            "network",
            "base RTT",
            "Brisk first response",
            "classic first response",
            "Brisk page",
            "classic page",
            "classic bound",
            "ratio",
            "Brisk packets lost",
            "classic packets lost",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    let plot = plot(
        "Feed page load per network",
        "Bars: the page load measured over Brisk and over the classic client \
         (TCP + TLS 1.2 + HTTP/1.1-like), on the same network and queue.",
        || {
            bar_chart(
                &Frame::new(
                    "Feed page load per network",
                    Axis::new("network", ""),
                    Axis::new("page load", "s"),
                ),
                &BarChart {
                    categories: labels,
                    series: vec![
                        BarSeries::new("Brisk", brisk),
                        BarSeries::new("TCP + TLS 1.2 + HTTP/1.1-like", classic),
                    ],
                    reference: None,
                },
            )
        },
    )?;
    Ok((checks, table, plot))
}

/// What the section reads from one feed run.
struct Page {
    base_rtt_ms: f64,
    first_ms: f64,
    page_ms: f64,
    /// From the flow's start to the end of the run.
    had_ms: f64,
    bound_page_ms: f64,
    lost: u64,
}

impl Page {
    /// The page load, or when it did not load, the time it had.
    fn page_or_censored_ms(&self) -> f64 {
        if self.page_ms.is_finite() {
            self.page_ms
        } else {
            self.had_ms
        }
    }

    fn of(run: &ScenarioRun) -> Result<Page, SectionError> {
        let unsuitable = |message: &str| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: message.to_string(),
        };
        let spec = run
            .scenario
            .flows
            .iter()
            .enumerate()
            .find(|(i, f)| f.label(*i) == FEED)
            .map(|(_, f)| f)
            .ok_or_else(|| unsuitable("the section needs a flow named \"feed\""))?;
        let objects = match &spec.traffic {
            Traffic::Brisk(Brisk {
                app: BriskWorkloadSpec::Feed { objects, .. },
                ..
            }) => objects.clone(),
            _ => {
                return Err(unsuitable(
                    "flow \"feed\" must be a brisk flow with app = \"feed\"",
                ));
            }
        };
        let bps = match run.scenario.network.link.down.rate {
            RateModel::Constant { bps } if bps > 0 => bps as f64,
            _ => return Err(unsuitable("the feed needs a constant down rate")),
        };
        let report = run.transport(FEED)?;
        // Not loaded within the run: NaN, which no bound holds.
        let done_ms = |d: Option<Duration>| d.map_or(f64::NAN, ms);
        let base_rtt_ms = ms(run.base_rtt(FEED)?);
        let page: u64 = objects.iter().sum();
        let images = objects.len().saturating_sub(1) as f64;
        let start = spec.start.unwrap_or_default();
        Ok(Page {
            base_rtt_ms,
            first_ms: done_ms(report.first_object()),
            page_ms: done_ms(report.completion()),
            had_ms: ms(run.scenario.duration.saturating_sub(start)),
            bound_page_ms: (CLASSIC_FIRST_RTTS + images) * base_rtt_ms
                + page as f64 * 8.0 / bps * 1000.0,
            lost: report.sender.as_ref().map_or(0, |s| s.packets_lost),
        })
    }
}
