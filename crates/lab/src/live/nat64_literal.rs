//! "NAT64 synthesis lets an IPv4 literal work on an IPv6-only network"
//! (WWDC 2015, RFC 6052, RFC 7050) with kernel TCP: in the live lab's
//! IPv6-only mode (the client has no IPv4; the router translates with
//! NAT64 and answers DNS64) an app is handed the server's IPv4 literal
//! and fetches a small response (`brisk_live::recipes::nat64`). Without
//! synthesis there is no route; with it the client discovers the prefix
//! from `ipv4only.arpa`, embeds the literal and connects.
//!
//! Checks (base RTT from the scenario, 50 ms):
//! - without synthesis the fetch fails;
//! - with synthesis it succeeds, to a synthesized address;
//! - with synthesis the first byte arrives within **3.5 RTT** (a DNS
//!   round trip for discovery, the handshake, the request).

use super::{base_rtt_ms, before_after, flag, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::nat64;
use brisk_sim::scenario::Scenario;

pub struct Nat64Literal;

const ID: &str = "nat64-literal";
const BEFORE: &str = "no-synthesis";
const AFTER: &str = "synthesis";

impl Section for Nat64Literal {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "An IPv4 literal on an IPv6-only network (kernel TCP, NAT64)"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2015,
            text: "On an IPv6-only network with NAT64, names work through DNS64 but an app \
                   handed an IPv4 literal cannot connect, unless it synthesizes the IPv6 \
                   address itself from the network's NAT64 prefix.",
            scope: "Real Linux TCP in network namespaces through the live lab's router in \
                    IPv6-only mode (client IPv6 only, server IPv4 only, NAT64 and DNS64 at \
                    the router), 25 ms each way. brisk-tcp's client with NAT64 off and on \
                    (prefix discovery through the lab's DNS64). Wall-clock numbers.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[BEFORE, AFTER]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (off, on) = (runs.get(BEFORE)?, runs.get(AFTER)?);
        let rtt = base_rtt_ms(&on.scenario);
        let checks = vec![
            Check::new(
                "without synthesis: fetches that succeeded",
                "an IPv4 literal cannot connect",
                off.numbers::<Nat64Numbers>()?.connected,
                "",
                Bound::AtMost(0.0),
            )
            .decimals(0),
            Check::new(
                "with synthesis: fetches that succeeded over a synthesized address",
                "the synthesized address connects",
                on.numbers::<Nat64Numbers>()?
                    .connected
                    .min(on.numbers::<Nat64Numbers>()?.dialed_synthesized),
                "",
                Bound::AtLeast(1.0),
            )
            .decimals(0),
            Check::new(
                "with synthesis: first byte, in RTTs",
                "discovery costs one DNS round trip",
                on.numbers::<Nat64Numbers>()?.elapsed_ms / rtt,
                "RTT",
                Bound::AtMost(3.5),
            )
            .decimals(2),
        ];
        let row = |label: &str, r: &ScenarioRun| -> Result<Vec<Cell>, SectionError> {
            let ok = r.numbers::<Nat64Numbers>()?.connected >= 1.0;
            Ok(vec![
                Cell::text(label),
                Cell::text(if ok { "connected" } else { "failed" }),
                Cell::num(r.numbers::<Nat64Numbers>()?.elapsed_ms, "ms", 1),
                Cell::num(r.numbers::<Nat64Numbers>()?.connect_ms, "ms", 1),
            ])
        };
        let table = Table {
            caption: "Fetching from the IPv4 literal 10.1.0.1: outcome, time to the first \
                      byte (or to the failure) and to the handshake"
                .into(),
            columns: ["client", "outcome", "first byte / failure", "connected"]
                .map(String::from)
                .to_vec(),
            rows: vec![
                row("NAT64 synthesis off", off)?,
                row("NAT64 synthesis on", on)?,
            ],
        };
        let plots = vec![before_after(
            "IPv4 literal on the IPv6-only network",
            "Bars: time to the first response byte with synthesis, and until the \
             connection failed without it (no IPv4 route: at once).",
            ("time", "ms"),
            &["synthesis off (fails)", "synthesis on"],
            vec![(
                "measured",
                vec![
                    off.numbers::<Nat64Numbers>()?.elapsed_ms,
                    on.numbers::<Nat64Numbers>()?.elapsed_ms,
                ],
            )],
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
    pub(crate) struct Nat64Numbers {
        /// 1 if the client connected, else 0.
        connected,
        /// 1 if it dialed the synthesized IPv6 address, else 0.
        dialed_synthesized,
        elapsed_ms,
        /// NaN when it never connected.
        connect_ms,
    }
}

impl LiveExperiment for Nat64Literal {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        let synthesis = match stem {
            BEFORE => false,
            AFTER => true,
            other => return Err(unknown_stem(ID, other)),
        };
        let (run, o) = in_lab(scenario, IpMode::V6Only, capture, |lab| {
            nat64::run(lab, synthesis)
        })?;
        Ok(with_numbers(
            run,
            &Nat64Numbers {
                connected: flag(o.connected),
                dialed_synthesized: flag(o.dialed_synthesized),
                elapsed_ms: o.elapsed_ms,
                connect_ms: o.connect_ms.unwrap_or(f64::NAN),
            },
        ))
    }
}
