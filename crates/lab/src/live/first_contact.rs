//! "The first request answered in one round trip" (OK.ru): a cold client
//! waits 4-5 round trips for its first answer over TCP+TLS, 2.5 over QUIC,
//! 1 over the talk's own UDP protocol. Five peers fetch a 10 KB answer one
//! after another on fresh sockets through the live lab's link
//! (`brisk_live::recipes::first_contact`): Brisk with the request in its
//! first flight, Brisk after its handshake, TLS 1.3 (rustls) over kernel
//! TCP, quinn 1-RTT and quinn 0-RTT resumption. One file per OK.ru
//! network: its rates and round trip (110, 220, 550, 900 ms), no loss, so
//! the round trips counted are the protocols' own.
//!
//! Checks, in base round trips of the file's network:
//! - Brisk with early data, each network: first byte **≤ 1 RTT plus the
//!   transfer time** of one full packet up and two down at the network's
//!   rates, plus 5 ms and 0.1 RTT for the hosts and the router's timers;
//! - TLS 1.3 over TCP's first byte, LTE: **≥ 1.5 RTT** later than Brisk's
//!   (TCP's handshake, TLS's, then the request: 3 round trips against 1;
//!   a difference, as both pay the same transfer time on slow links);
//! - setup: Brisk without early data waits **≥ 1.8 RTT** (a handshake
//!   before the request), and quinn's server took the 0-RTT data.

use super::{before_after, in_lab, unknown_stem};
use crate::claim::{Claim, Source};
use crate::numbers::Numbers;
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::first_contact::{self, FirstContactExperiment, FirstContactOutcome};
use brisk_netbench::first_contact::Peer;
use brisk_netmodel::RateModel;
use brisk_sim::scenario::Scenario;

pub struct FirstContact;

const ID: &str = "first-contact";
/// The networks, in table order, with their labels.
const NETWORKS: [(&str, &str); 4] = [
    ("wifi-110ms", "Wi-Fi, 110 ms"),
    ("lte-220ms", "LTE, 220 ms"),
    ("3g-550ms", "3G, 550 ms"),
    ("edge-900ms", "EDGE, 900 ms"),
];
/// The network the cross-peer check reads.
const LTE: &str = "lte-220ms";
/// Bytes of one full packet on the wire, for the transfer time.
const PACKET_BYTES: f64 = 1500.0;
/// Allowance for the hosts' processing (the handshake's key agreement,
/// the schedulers) and the router's timers: a fixed part and a part of
/// the round trip.
const MARGIN_MS: f64 = 5.0;
const MARGIN_RTT: f64 = 0.1;

/// Each peer's key prefix and the seed's figure for its kind of protocol.
const PEERS: [(Peer, &str, &str); 5] = [
    (
        Peer::BriskEarly,
        "brisk_early_",
        "1 RTT (OK.ru's UDP protocol)",
    ),
    (Peer::BriskAfterHandshake, "brisk_late_", "–"),
    (Peer::TcpTls, "tcp_tls_", "4-5 RTT (TCP+TLS)"),
    (Peer::Quinn, "quinn_", "2.5 RTT (QUIC)"),
    (Peer::Quinn0Rtt, "quinn_0rtt_", "–"),
];

crate::numbers! {
    /// One peer's fetch: from its connect call to the answer's first and
    /// last byte, in base round trips and in ms (NaN: it failed).
    pub(crate) struct PeerNumbers {
        first_byte_rtts,
        complete_rtts,
        first_byte_ms,
        complete_ms,
    }
}

crate::numbers! {
    /// What one run measured beside the peers' numbers.
    pub(crate) struct RunNumbers {
        /// The network's base round trip.
        rtt_ms,
        /// The up and down links' rates.
        up_rate_bps,
        down_rate_bps,
        /// 1 if quinn's server took the 0-RTT request, else 0.
        quinn_0rtt_accepted,
    }
}

fn peer_numbers(run: &ScenarioRun, prefix: &str) -> Result<PeerNumbers, SectionError> {
    PeerNumbers::read(prefix, &run.measured).map_err(|key| SectionError::Unsuitable {
        scenario: run.path.clone(),
        message: format!("the live run measured no {prefix}{key:?}"),
    })
}

fn constant_bps(rate: &RateModel) -> Option<u64> {
    match rate {
        RateModel::Constant { bps } => Some(*bps),
        _ => None,
    }
}

/// The first-byte bound for Brisk with early data on `run`'s network, in
/// its round trips: 1 RTT, one full packet up and two down, the margins.
fn one_rtt_bound(run: &ScenarioRun) -> Result<f64, SectionError> {
    let n = run.numbers::<RunNumbers>()?;
    let transfer_ms = PACKET_BYTES * 8.0 * (1.0 / n.up_rate_bps + 2.0 / n.down_rate_bps) * 1e3;
    Ok(1.0 + (transfer_ms + MARGIN_MS) / n.rtt_ms + MARGIN_RTT)
}

impl Section for FirstContact {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "First contact: the first answer in one round trip"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "A client's first request is answered in one round trip over the \
                   talk's own UDP protocol, where TCP with TLS needs 4-5 round trips and \
                   QUIC 2.5.",
            scope: "Fresh clients on fresh sockets through the live lab's router, one after \
                    another, on OK.ru's four networks (their rates and round trips, no \
                    loss): Brisk (brisk-io) with the request in its first flight and after \
                    its handshake, TLS 1.3 (rustls, full handshake) over Linux TCP, quinn \
                    after its handshake and quinn resuming an earlier session with 0-RTT \
                    data. Each fetches a 10 KB answer; times run from the connect call. \
                    TLS 1.3 needs one round trip fewer than the TLS 1.2 of the talk's \
                    figure; no DNS lookup is counted. Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[NETWORKS[0].0, NETWORKS[1].0, NETWORKS[2].0, NETWORKS[3].0]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let mut checks = Vec::new();
        for (stem, label) in NETWORKS {
            let run = runs.get(stem)?;
            checks.push(
                Check::new(
                    format!("{label}: Brisk with early data, first byte"),
                    "1 RTT",
                    peer_numbers(run, "brisk_early_")?.first_byte_rtts,
                    "RTT",
                    Bound::AtMost(one_rtt_bound(run)?),
                )
                .decimals(2),
            );
        }
        let lte = runs.get(LTE)?;
        checks.push(
            Check::new(
                "LTE, 220 ms: TLS 1.3 over TCP's first byte minus Brisk's with early data",
                "4-5 RTT against 1",
                peer_numbers(lte, "tcp_tls_")?.first_byte_rtts
                    - peer_numbers(lte, "brisk_early_")?.first_byte_rtts,
                "RTT",
                Bound::AtLeast(1.5),
            )
            .decimals(2),
        );
        let first = runs.get(NETWORKS[0].0)?;
        checks.push(
            Check::new(
                "Wi-Fi, 110 ms: Brisk without early data, first byte",
                "a handshake, then the request: 2 RTT",
                peer_numbers(first, "brisk_late_")?.first_byte_rtts,
                "RTT",
                Bound::AtLeast(1.8),
            )
            .decimals(2)
            .setup(),
        );
        for (stem, label) in NETWORKS {
            checks.push(
                Check::new(
                    format!("{label}: quinn's server took the 0-RTT request"),
                    "resumption with early data",
                    runs.get(stem)?.numbers::<RunNumbers>()?.quinn_0rtt_accepted,
                    "",
                    Bound::AtLeast(1.0),
                )
                .decimals(0)
                .setup(),
            );
        }
        let mut columns = vec!["peer".to_string(), "seed's figure".to_string()];
        columns.extend(NETWORKS.iter().map(|(_, label)| label.to_string()));
        let mut first_rows = Vec::new();
        let mut complete_rows = Vec::new();
        let mut series = Vec::new();
        for (peer, prefix, seed) in PEERS {
            let numbers = NETWORKS
                .iter()
                .map(|(stem, _)| peer_numbers(runs.get(stem)?, prefix))
                .collect::<Result<Vec<_>, _>>()?;
            let mut first = vec![Cell::text(peer.to_string()), Cell::text(seed)];
            first.extend(
                numbers
                    .iter()
                    .map(|n| Cell::num(n.first_byte_rtts, "RTT", 2)),
            );
            first_rows.push(first);
            let mut complete = vec![Cell::text(peer.to_string())];
            complete.extend(numbers.iter().map(|n| {
                Cell::text(format!(
                    "{} ({})",
                    crate::verdict::with_unit(n.complete_rtts, "RTT", 2),
                    crate::verdict::with_unit(n.complete_ms, "ms", 0)
                ))
            }));
            complete_rows.push(complete);
            series.push((
                peer.to_string(),
                numbers
                    .iter()
                    .map(|n| n.first_byte_rtts)
                    .collect::<Vec<_>>(),
            ));
        }
        let mut complete_columns = vec!["peer".to_string()];
        complete_columns.extend(NETWORKS.iter().map(|(_, label)| label.to_string()));
        let tables = vec![
            Table {
                caption: "Time to the answer's first byte, from the connect call, in base \
                          round trips of each network; the seed's figure is the talk's \
                          table for that kind of protocol (– : it gives none)"
                    .into(),
                columns,
                rows: first_rows,
            },
            Table {
                caption: "Time to the whole 10 KB answer, in base round trips and ms: a \
                          server may send only three times what it has received before the \
                          client's address is proven, so a cold answer larger than about \
                          3.6 KB waits for the handshake's end"
                    .into(),
                columns: complete_columns,
                rows: complete_rows,
            },
        ];
        let plots = vec![before_after(
            "Time to the first answer byte on a cold start",
            "Bars: from the connect call to the answer's first byte, in base round trips \
             (OK.ru: TCP+TLS 4-5, QUIC 2.5, its own protocol 1).",
            ("first byte", "RTT"),
            &NETWORKS.map(|(_, label)| label),
            series
                .iter()
                .map(|(l, v)| (l.as_str(), v.clone()))
                .collect(),
        )?];
        Ok(Findings {
            checks,
            tables,
            plots,
        })
    }
}

impl LiveExperiment for FirstContact {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if !NETWORKS.iter().any(|(s, _)| *s == stem) {
            return Err(unknown_stem(ID, stem));
        }
        let link = &scenario.network.link;
        let (Some(down), Some(up)) = (constant_bps(&link.down.rate), constant_bps(&link.up.rate))
        else {
            return Err(LiveRunError::UnsuitableNetwork {
                section: ID,
                need: "both links need a constant rate",
            });
        };
        let exp = FirstContactExperiment::new(link.down.delay + link.up.delay);
        let (mut run, outcome) = in_lab(scenario, IpMode::from(scenario.ip), capture, |lab| {
            first_contact::run(lab, &exp)
        })?;
        write_numbers(&outcome, up, down, &mut run);
        Ok(run)
    }
}

/// The outcome's numbers under their keys.
fn write_numbers(outcome: &FirstContactOutcome, up_bps: u64, down_bps: u64, run: &mut LiveRun) {
    for (peer, prefix, _) in PEERS {
        let n = match outcome.fetch(peer) {
            Some(f) => PeerNumbers {
                first_byte_rtts: f.first_byte_rtts,
                complete_rtts: f.complete_rtts,
                first_byte_ms: f.first_byte_ms,
                complete_ms: f.complete_ms,
            },
            None => PeerNumbers {
                first_byte_rtts: f64::NAN,
                complete_rtts: f64::NAN,
                first_byte_ms: f64::NAN,
                complete_ms: f64::NAN,
            },
        };
        n.write(prefix, &mut run.measured);
    }
    let accepted = outcome
        .fetch(Peer::Quinn0Rtt)
        .and_then(|f| f.early_accepted)
        .unwrap_or(false);
    RunNumbers {
        rtt_ms: outcome.base_rtt_ms,
        up_rate_bps: up_bps as f64,
        down_rate_bps: down_bps as f64,
        quinn_0rtt_accepted: super::flag(accepted),
    }
    .write("", &mut run.measured);
}
