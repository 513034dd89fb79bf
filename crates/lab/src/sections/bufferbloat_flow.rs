//! The bufferbloat section's transfer half (WWDC 2015): a Brisk CUBIC bulk
//! transfer and a ping through the 200-packet FIFO (`bulk-fifo`) and
//! through CoDel with ECN (`bulk-codel`), at 10 Mbit/s and 20 ms.
//!
//! Checks, with every threshold derived from the scenario files:
//! - FIFO: the ping's median added RTT is between half and 110% of the
//!   full FIFO's delay (limit x 1500 B at the link rate: 240 ms for 200
//!   packets at 10 Mbit/s). A loss-based sender keeps the buffer nearly
//!   full: after each loss CUBIC cuts its window to 70%, which still leaves
//!   most of a 200-packet queue standing on a 17-packet path;
//! - CoDel: the same median at most the base RTT (as in the queue-only
//!   half);
//! - CoDel: the transfer loses at most 0.1% of its packets, because the
//!   queue marks CE where it would drop and CUBIC backs off on the mark;
//! - CoDel: the longest in-order delivery stall is at most half the
//!   FIFO's (a loss behind a full buffer holds every later byte for a
//!   round trip of the bloated path plus the recovery);
//! - CoDel: goodput at least 90% of the FIFO's: the short queue costs
//!   next to no throughput.
//!
//! A stall is the longest time between two advances of the cumulative
//! ACK, the in-order delivered prefix as the sender sees it, from the
//! transport's time-sequence events.

use super::queue_label;
use crate::section::{Cell, Plot, ScenarioRun, SectionError, Table, ms, plot};
use crate::verdict::{Bound, Check};
use brisk_netmodel::link::rate::RateModel;
use brisk_netmodel::queue::QueueConfig;
use brisk_trace::plot::{Axis, Frame, SeqEvent, SeqKind, line_chart, time_sequence_chart};

/// The transfer and the ping beside it.
const BULK: &str = "bulk";
const PING: &str = "ping";
/// The IP datagram size the full-queue delay is counted in.
const MTU_BYTES: f64 = 1500.0;
/// The FIFO's median added RTT, as fractions of its full delay.
const FIFO_FULL_LOW: f64 = 0.5;
const FIFO_FULL_HIGH: f64 = 1.1;
/// "No loss": CE marks take the drops' place.
const CODEL_LOSS_MAX_PERCENT: f64 = 0.1;
/// CoDel's longest stall at most this fraction of the FIFO's.
const STALL_MAX_FRACTION: f64 = 0.5;
/// CoDel's goodput at least this fraction of the FIFO's.
const GOODPUT_MIN_FRACTION: f64 = 0.9;
/// The time-sequence plots show this much of each run, from half a
/// second before its longest stall.
const WINDOW_S: f64 = 2.0;
const LEAD_S: f64 = 0.5;

/// The checks, the table and the plots of the two transfer runs.
pub(crate) fn findings(
    fifo: &ScenarioRun,
    codel: &ScenarioRun,
) -> Result<(Vec<Check>, Table, Vec<Plot>), SectionError> {
    let f = Transfer::of(fifo)?;
    let c = Transfer::of(codel)?;
    let full_ms = full_fifo_ms(fifo)?;
    let (fifo_label, codel_label) = (
        format!("Transfer, {}", queue_label(&fifo.scenario.network.queue)),
        format!(
            "Transfer, {} + ECN",
            queue_label(&codel.scenario.network.queue)
        ),
    );
    let checks = vec![
        Check::new(
            format!("{fifo_label}: RTT added by the queue, median"),
            format!("near the full buffer ({full_ms:.0} ms here)"),
            f.added_p50_ms,
            "ms",
            Bound::Within {
                low: FIFO_FULL_LOW * full_ms,
                high: FIFO_FULL_HIGH * full_ms,
            },
        ),
        Check::new(
            format!("{codel_label}: RTT added by the queue, median"),
            "short (at most the base RTT)",
            c.added_p50_ms,
            "ms",
            Bound::AtMost(c.base_ms),
        ),
        Check::new(
            format!("{codel_label}: transfer's packets lost"),
            "none: congestion signalled by marks",
            c.loss_percent,
            "%",
            Bound::AtMost(CODEL_LOSS_MAX_PERCENT),
        )
        .decimals(2),
        Check::new(
            format!("{codel_label}: longest in-order stall"),
            format!("short (here at most half the FIFO's {:.0} ms)", f.stall_ms),
            c.stall_ms,
            "ms",
            Bound::AtMost(STALL_MAX_FRACTION * f.stall_ms),
        ),
        Check::new(
            format!("{codel_label}: goodput"),
            format!(
                "as fast as the FIFO (here at least 90% of its {:.2} Mbit/s)",
                f.goodput_mbps
            ),
            c.goodput_mbps,
            "Mbit/s",
            Bound::AtLeast(GOODPUT_MIN_FRACTION * f.goodput_mbps),
        )
        .decimals(2),
    ];

    let rows = [(&fifo_label, &f), (&codel_label, &c)]
        .into_iter()
        .map(|(label, t)| {
            vec![
                Cell::text(label.as_str()),
                Cell::num(t.ping_p50_ms, "ms", 1),
                Cell::num(t.ping_p99_ms, "ms", 1),
                Cell::num(t.transfer_p50_ms, "ms", 1),
                Cell::num(t.goodput_mbps, "Mbit/s", 2),
                Cell::num(t.loss_percent, "%", 2),
                Cell::count(t.retransmitted),
                Cell::count(t.ce_echoed),
                Cell::num(t.stall_ms, "ms", 0),
                Cell::num(t.stall_at_s, "s", 2),
            ]
        })
        .collect();
    let table = Table {
        caption: "The transfer and the ping beside it (stall: the longest time the \
                  in-order delivered prefix stood still, and when it began)"
            .into(),
        columns: [
            "queue",
            "ping RTT p50",
            "ping RTT p99",
            "transfer RTT p50",
            "goodput",
            "lost",
            "retransmitted",
            "CE echoed",
            "longest stall",
            "stall at",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };

    let rtt = vec![
        fifo.rtt_series(PING, &fifo_label)?,
        codel.rtt_series(PING, &codel_label)?,
    ];
    let mut plots = vec![plot(
        "Ping RTT beside a transfer",
        "Each point is one answered ping. CUBIC fills the FIFO, backs off on a \
         loss and fills it again; CoDel marks the transfer's packets so the \
         queue stays a few ms long.",
        || {
            line_chart(
                &Frame::new(
                    "Ping RTT beside a transfer",
                    Axis::new("time", "s"),
                    Axis::new("ping RTT", "ms"),
                ),
                &rtt,
            )
        },
    )?];
    for (label, run, t) in [(&fifo_label, fifo, &f), (&codel_label, codel, &c)] {
        let title = format!("Time-sequence graph: {label}");
        let events = window(&run.transport(BULK)?.seq, t.stall_at_s - LEAD_S);
        plots.push(plot(
            &title,
            &format!(
                "{WINDOW_S:.0} s of the transfer from half a second before its longest \
                 stall ({:.0} ms): the horizontal gap between the data ticks and the \
                 ACK line is the round trip; flat stretches of the ACK line are \
                 stalls, red crosses retransmissions, green dots ACKs echoing CE marks.",
                t.stall_ms
            ),
            || {
                time_sequence_chart(
                    &Frame::new(
                        title.as_str(),
                        Axis::new("time", "s"),
                        Axis::new("sequence offset", "bytes"),
                    ),
                    &events,
                )
            },
        )?);
    }
    Ok((checks, table, plots))
}

/// What the section reads from one transfer run.
struct Transfer {
    base_ms: f64,
    ping_p50_ms: f64,
    ping_p99_ms: f64,
    added_p50_ms: f64,
    transfer_p50_ms: f64,
    goodput_mbps: f64,
    loss_percent: f64,
    retransmitted: u64,
    ce_echoed: u64,
    stall_ms: f64,
    stall_at_s: f64,
}

impl Transfer {
    fn of(run: &ScenarioRun) -> Result<Transfer, SectionError> {
        let ping = run.flow(PING)?;
        let bulk = run.flow(BULK)?;
        let transport = bulk
            .brisk
            .as_ref()
            .map(|b| &b.transport)
            .ok_or_else(|| unsuitable(run, "flow \"bulk\" must be a brisk flow"))?;
        let (stall_ms, stall_at_s) = longest_stall(&run.transport(BULK)?.seq)
            .ok_or_else(|| unsuitable(run, "the transfer's ACKs never advanced"))?;
        let base_ms = ms(run.base_rtt(PING)?);
        Ok(Transfer {
            base_ms,
            ping_p50_ms: ping.rtt_ms.p50,
            ping_p99_ms: ping.rtt_ms.p99,
            added_p50_ms: ping.rtt_ms.p50 - base_ms,
            transfer_p50_ms: bulk.rtt_ms.p50,
            goodput_mbps: bulk.goodput_mbps,
            loss_percent: bulk.loss_rate * 100.0,
            retransmitted: transport.packets_retransmitted,
            ce_echoed: transport.ce_echoed,
            stall_ms,
            stall_at_s,
        })
    }
}

fn unsuitable(run: &ScenarioRun, message: &str) -> SectionError {
    SectionError::Unsuitable {
        scenario: run.path.clone(),
        message: message.to_string(),
    }
}

/// The delay of a full FIFO: its packet limit in MTU-sized packets at the
/// down link's constant rate, in ms.
fn full_fifo_ms(run: &ScenarioRun) -> Result<f64, SectionError> {
    let limit = match &run.scenario.network.queue {
        QueueConfig::Fifo(c) => c.limit_packets,
        _ => None,
    };
    let bps = match run.scenario.network.link.down.rate {
        RateModel::Constant { bps } if bps > 0 => Some(bps),
        _ => None,
    };
    match (limit, bps) {
        (Some(n), Some(bps)) => Ok(n as f64 * MTU_BYTES * 8.0 / bps as f64 * 1000.0),
        _ => Err(unsuitable(
            run,
            "the FIFO transfer needs a FIFO with limit_packets and a constant down rate",
        )),
    }
}

/// The longest time between two advances of the cumulative ACK, in ms,
/// and when it began, in s. `None` without two advances.
pub(crate) fn longest_stall(events: &[SeqEvent]) -> Option<(f64, f64)> {
    let mut acked = 0;
    let mut last: Option<f64> = None;
    let mut best: Option<(f64, f64)> = None;
    for e in events.iter().filter(|e| e.kind == SeqKind::Ack) {
        if e.start <= acked {
            continue;
        }
        acked = e.start;
        if let Some(prev) = last {
            let gap_ms = (e.time_s - prev) * 1000.0;
            if best.is_none_or(|(b, _)| gap_ms > b) {
                best = Some((gap_ms, prev));
            }
        }
        last = Some(e.time_s);
    }
    best
}

/// The events within [`WINDOW_S`] from `from_s` (clamped at zero).
fn window(events: &[SeqEvent], from_s: f64) -> Vec<SeqEvent> {
    let from = from_s.max(0.0);
    events
        .iter()
        .filter(|e| e.time_s >= from && e.time_s <= from + WINDOW_S)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(time_s: f64, at: u64) -> SeqEvent {
        SeqEvent {
            time_s,
            start: at,
            end: at + 65_536,
            kind: SeqKind::Ack,
            ce: false,
        }
    }

    #[test]
    fn the_longest_stall_is_the_longest_wait_for_the_ack_to_move() {
        let data = SeqEvent {
            time_s: 0.5,
            start: 0,
            end: 1_448,
            kind: SeqKind::Data,
            ce: false,
        };
        // Duplicate ACKs at 0.2 and 0.6 s do not end the stall that began
        // at 0.1 s; it ends at 0.7 s.
        let events = [
            ack(0.0, 1_000),
            ack(0.1, 2_000),
            ack(0.2, 2_000),
            data,
            ack(0.6, 2_000),
            ack(0.7, 3_000),
            ack(0.8, 4_000),
        ];
        let (gap_ms, at_s) = longest_stall(&events).unwrap();
        assert!((gap_ms - 600.0).abs() < 1e-9, "{gap_ms}");
        assert!((at_s - 0.1).abs() < 1e-12);
        assert_eq!(longest_stall(&events[..1]), None);
        assert_eq!(longest_stall(&[]), None);
    }

    #[test]
    fn the_window_keeps_two_seconds_from_its_start() {
        let events: Vec<SeqEvent> = (0..50).map(|i| ack(i as f64 / 10.0, i)).collect();
        let w = window(&events, 1.0);
        assert_eq!(w.first().map(|e| e.start), Some(10));
        assert_eq!(w.last().map(|e| e.start), Some(30));
        assert_eq!(window(&events, -3.0).len(), 21);
    }
}
