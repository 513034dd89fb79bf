//! The mobile section's feed half (OK.ru): one feed page (a 4 KB API
//! response, then five 16 KB images) loaded over Brisk on each profile
//! (`feed-<profile>`), through the profile's deep FIFO, beside what a
//! classic TCP + TLS 1.2 + HTTP/1.1 client needs at least.
//!
//! The classic client is not simulated: its page load has a lower bound
//! from the seed's round-trip counts, and the check is that Brisk, with its
//! real losses, slow start and queueing, beats even that bound. The classic
//! client needs a TCP handshake (1 RTT), a TLS 1.2 handshake (2 RTTs) and
//! the API request (1 RTT) before its first response byte arrives (the
//! seed's "4-5 RTT", DNS left out for both), then asks for each image only
//! after the previous one arrived (HTTP/1.1 on one connection: one more
//! round trip per image), and every byte crosses the downlink at the
//! profile's rate. The bound leaves out loss, slow start and queueing, all
//! of which only slow the classic client down.
//!
//! Checks per profile:
//! - Brisk's first response (the API object, from the flow's start) at
//!   most the classic bound for it: 4 base RTTs plus the object's own
//!   transmission;
//! - Brisk's whole page at most the classic page's bound.

use crate::section::{Cell, Plot, ScenarioRun, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::RateModel;
use brisk_trace::plot::{Axis, BarChart, BarSeries, Frame, bar_chart};
use std::time::Duration;

const FEED: &str = "feed";
/// Round trips before a classic client's first response byte: TCP 1,
/// TLS 1.2 2, the request 1.
const CLASSIC_FIRST_RTTS: f64 = 4.0;

/// The checks, the table and the plot of the feed runs: (stem, label).
pub(crate) fn findings(
    runs: &[(&ScenarioRun, &str)],
) -> Result<(Vec<Check>, Table, Plot), SectionError> {
    let mut checks = Vec::new();
    let mut rows = Vec::new();
    let (mut labels, mut brisk, mut classic) = (Vec::new(), Vec::new(), Vec::new());
    for (run, label) in runs {
        let m = Page::of(run)?;
        checks.push(Check::new(
            format!("{label}: Brisk's first response (API)"),
            format!(
                "sooner than TCP + TLS 1.2 (4 RTTs + transmission: {:.0} ms)",
                m.classic_first_ms
            ),
            m.first_ms,
            "ms",
            Bound::AtMost(m.classic_first_ms),
        ));
        checks.push(Check::new(
            format!("{label}: Brisk's feed page load"),
            format!(
                "faster than the classic client's best case ({:.0} ms)",
                m.classic_page_ms
            ),
            m.page_ms,
            "ms",
            Bound::AtMost(m.classic_page_ms),
        ));
        rows.push(vec![
            Cell::text(*label),
            Cell::num(m.base_rtt_ms, "ms", 0),
            Cell::num(m.first_ms, "ms", 0),
            Cell::num(m.first_ms / m.base_rtt_ms, "RTT", 1),
            Cell::num(m.classic_first_ms, "ms", 0),
            Cell::num(m.page_ms, "ms", 0),
            Cell::num(m.classic_page_ms, "ms", 0),
            Cell::num(m.classic_page_ms / m.page_ms, "x", 2),
            Cell::count(m.lost),
        ]);
        labels.push(label.to_string());
        brisk.push(m.page_ms / 1000.0);
        classic.push(m.classic_page_ms / 1000.0);
    }
    let table = Table {
        caption: "A feed page per network: Brisk measured, the classic client's lower \
                  bound (TCP + TLS 1.2 + HTTP/1.1, no loss, no slow start); speed-up: \
                  the bound over Brisk's time"
            .into(),
        columns: [
            "network",
            "base RTT",
            "Brisk first response",
            "in base RTTs",
            "classic first response ≥",
            "Brisk page",
            "classic page ≥",
            "speed-up ≥",
            "Brisk packets lost",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    let plot = plot(
        "Feed page load per network",
        "Bars: Brisk's measured page load; the classic client's lower bound beside \
         it. A real classic client is slower still: it also loses packets and \
         starts slow.",
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
                        BarSeries::new("Brisk (measured)", brisk),
                        BarSeries::new("TCP + TLS 1.2 + HTTP/1.1 (lower bound)", classic),
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
    classic_first_ms: f64,
    classic_page_ms: f64,
    lost: u64,
}

impl Page {
    fn of(run: &ScenarioRun) -> Result<Page, SectionError> {
        let unsuitable = |message: &str| SectionError::Unsuitable {
            scenario: run.path.clone(),
            message: message.to_string(),
        };
        let objects = run
            .scenario
            .flows
            .iter()
            .enumerate()
            .find(|(i, f)| f.get_ref().label(*i) == FEED)
            .and_then(|(_, f)| f.get_ref().objects.clone())
            .ok_or_else(|| unsuitable("flow \"feed\" must be a brisk flow with app = \"feed\""))?;
        let bps = match run.scenario.link.down.rate {
            RateModel::Constant { bps } if bps > 0 => bps as f64,
            _ => return Err(unsuitable("the feed needs a constant down rate")),
        };
        let report = run.transport(FEED)?;
        // Not loaded within the run: NaN, which no bound holds.
        let done_ms = |d: Option<Duration>| d.map_or(f64::NAN, ms);
        let base_rtt_ms = ms(run.base_rtt(FEED)?);
        let wire_ms = |bytes: u64| bytes as f64 * 8.0 / bps * 1000.0;
        let api = objects.first().copied().unwrap_or(0);
        let page: u64 = objects.iter().sum();
        let images = objects.len().saturating_sub(1) as f64;
        Ok(Page {
            base_rtt_ms,
            first_ms: done_ms(report.first_object()),
            page_ms: done_ms(report.completion()),
            classic_first_ms: CLASSIC_FIRST_RTTS * base_rtt_ms + wire_ms(api),
            classic_page_ms: (CLASSIC_FIRST_RTTS + images) * base_rtt_ms + wire_ms(page),
            lost: report.sender.as_ref().map_or(0, |s| s.packets_lost),
        })
    }
}
