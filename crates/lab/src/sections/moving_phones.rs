//! "Moving phones" (OK.ru, WWDC 2015): a phone's transfer across address
//! changes, and a phone whose Wi-Fi stalls while its cellular still works.
//!
//! `moves`: a Brisk upload at 4 Mbit/s, 20 ms, whose sender moves to
//! another network every 30 s and whose NAT rebinds its port every 15 s
//! (OK.ru: mappings rebound every 15-30 s, users moving between Wi-Fi and
//! cellular). Checks: no byte lost or corrupted; no move stalls delivery
//! longer than one round trip and one probe timeout (the smallest probe
//! timeout the RTT before the move allows: twice the RTT and the 25 ms
//! ACK delay); and, as setup, at least 10 moves and 10 rebindings during
//! the transfer (the run keeps its full length under `--quick`).
//!
//! `stalled-wifi` (the Wi-Fi path, dead both ways from 1.5 s on) and
//! `cellular` (the other path) each run the upload alone: the first is the
//! baseline, a phone with one path whose transfer waits on it. The section
//! then runs the same upload over both paths at once
//! (`brisk_sim::two_path`: Wi-Fi first, cellular as the standby), a
//! simulator run of its own that takes milliseconds. Checks: the upload
//! completes intact over both; the phone moves within one Wi-Fi probe
//! timeout and one Wi-Fi round trip of its last bytes over Wi-Fi; the
//! receiver's wait from its last bytes over Wi-Fi to its first over
//! cellular is at most one Wi-Fi probe timeout and two cellular round
//! trips (one to learn where the receiver's gap begins, at most one more
//! to fill it); as setup, the Wi-Fi-only upload does not finish.
//!
//! The same two networks, the Wi-Fi dead from the start: the phone
//! connects to download a 100 kB object (`brisk_sim::race`), racing its
//! cellular path after a 250 ms attempt delay (RFC 8305's), beside the
//! same phone falling back only when its 5 s connect timeout ends. Check:
//! the racing phone's first response byte within the attempt delay and
//! two cellular round trips of a full-size packet (the handshake, then
//! the request); as setup, the fallback's comes after its timeout.

use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, Plot, Runs, ScenarioRun, Section, SectionError, Table, ms, plot,
};
use crate::verdict::{Bound, Check};
use brisk_sim::engine::flow_addrs;
use brisk_sim::nat::{Change, ClientNat};
use brisk_sim::race::{DEFAULT_ATTEMPT_DELAY, RaceRun, run_race};
use brisk_sim::scenario::{BriskWorkloadSpec, Traffic};
use brisk_sim::two_path::{TwoPathRun, run_two_path};
use brisk_time::Instant;
use brisk_trace::plot::{Axis, Frame, line_chart};
use brisk_trace::stats::Series;
use std::time::Duration;

pub struct MovingPhones;

/// The flow every scenario of the section names.
const PHONE: &str = "phone";
/// The peer's largest ACK delay (the transport's default): part of the
/// probe timeout.
const MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// The goal: at least this many moves and as many rebindings.
const MIN_CHANGES: usize = 10;
/// The object the phone fetches when it connects under a stalled Wi-Fi.
const RACE_BYTES: u64 = 100_000;
/// What a phone that does not race waits before its fallback: brisk-io's
/// default handshake timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Section for MovingPhones {
    fn id(&self) -> &'static str {
        "moving-phones"
    }

    fn title(&self) -> &'static str {
        "Moving phones"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Okru,
            text: "Phones change networks and NATs forget them (mappings rebound every \
                   15-30 s); a UDP protocol that names the connection by an ID keeps it \
                   across both. Apple (WWDC 2015) asks apps to fall back from a stalled \
                   Wi-Fi path to cellular.",
            scope: "Brisk's simulator: the phone uploads (only the side with data in \
                    flight notices a stall by its probe timeout). The Wi-Fi fallback \
                    runs Brisk with two paths beside Brisk with Wi-Fi only; the \
                    kernel-TCP Happy Eyeballs recipe is not beside it, as it races \
                    addresses at connect time only, needs the live lab's real sockets, \
                    and cannot move an established TCP connection, so mid-transfer it \
                    would wait like the Wi-Fi-only run.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &["moves", "stalled-wifi", "cellular"]
    }

    /// Ten moves take 330 s; a cut run would judge no move at all.
    fn full_length_under_quick(&self) -> &'static [&'static str] {
        &["moves"]
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (mut checks, moves_table) = moves(runs.get("moves")?)?;
        let (wifi_checks, wifi_table, plot) =
            stalled_wifi(runs.get("stalled-wifi")?, runs.get("cellular")?)?;
        checks.extend(wifi_checks);
        let (race_checks, race_table) =
            connect_stalled(runs.get("stalled-wifi")?, runs.get("cellular")?);
        checks.extend(race_checks);
        Ok(Findings {
            checks,
            tables: vec![moves_table, wifi_table, race_table],
            plots: vec![plot],
        })
    }
}

/// The scheduled moves and rebindings of the run's phone, up to `until`.
fn changes(run: &ScenarioRun, until: Instant) -> Result<Vec<(Instant, Change)>, SectionError> {
    let unsuitable = |message: &str| SectionError::Unsuitable {
        scenario: run.path.clone(),
        message: message.to_string(),
    };
    let flow = run
        .scenario
        .flows
        .iter()
        .enumerate()
        .find(|(i, f)| f.label(*i) == PHONE);
    let Some((index, flow)) = flow else {
        return Err(unsuitable("no flow named \"phone\""));
    };
    let Traffic::Brisk(spec) = &flow.traffic else {
        return Err(unsuitable("flow \"phone\" must be a brisk flow"));
    };
    let start = Instant::ZERO + flow.start.unwrap_or_default();
    let mut nat = ClientNat::new(flow_addrs(run.scenario.ip, index).sender, spec.moves, start);
    while let Some(at) = nat.next_change().filter(|t| *t < until) {
        nat.advance(at);
    }
    Ok(nat.log)
}

/// The longest wait between two deliveries that spans `at` or starts
/// within a second after it.
fn stall_around(delivered: &[(Instant, u64)], at: Instant) -> Duration {
    delivered
        .windows(2)
        .filter(|w| w[1].0 >= at && w[0].0 <= at + Duration::from_secs(1))
        .map(|w| w[1].0 - w[0].0)
        .max()
        .unwrap_or_default()
}

/// The migration goal's checks and the table of its moves.
fn moves(run: &ScenarioRun) -> Result<(Vec<Check>, Table), SectionError> {
    let t = run.transport(PHONE)?;
    let end = t
        .completed_at
        .unwrap_or(Instant::ZERO + run.scenario.duration);
    let series = run.series(PHONE)?;
    let mut rows = Vec::new();
    let (mut over, mut longest, mut moved, mut rebound) = (0u64, Duration::ZERO, 0, 0);
    for (at, change) in changes(run, end)? {
        let rtt = series
            .rtt
            .iter()
            .rev()
            .find(|(t, _)| *t < at)
            .map(|(_, r)| *r)
            .unwrap_or_default();
        let bound = rtt + rtt + MAX_ACK_DELAY;
        let stall = stall_around(&series.delivered, at);
        over += u64::from(stall > bound);
        longest = longest.max(stall);
        let kind = match change {
            Change::NewNetwork => {
                moved += 1;
                "new network"
            }
            Change::Rebinding => {
                rebound += 1;
                "NAT rebinding"
            }
        };
        rows.push(vec![
            Cell::num(at.as_secs_f64(), "s", 0),
            Cell::text(kind),
            Cell::num(ms(stall), "ms", 1),
            Cell::num(ms(rtt), "ms", 1),
            Cell::num(ms(bound), "ms", 1),
        ]);
    }
    let lost = t.integrity.missing_bytes + t.integrity.corrupt_bytes;
    let checks = vec![
        Check::new(
            "Across the moves: bytes lost or corrupted",
            "none: the connection is kept by its ID",
            lost as f64,
            "B",
            Bound::AtMost(0.0),
        )
        .decimals(0),
        Check::new(
            "Moves and rebindings that stalled delivery longer than 1 RTT + 1 PTO",
            "none",
            over as f64,
            "",
            Bound::AtMost(0.0),
        )
        .decimals(0),
        Check::new(
            "Moves to another network during the transfer",
            format!("at least {MIN_CHANGES}"),
            moved as f64,
            "",
            Bound::AtLeast(MIN_CHANGES as f64),
        )
        .decimals(0)
        .setup(),
        Check::new(
            "NAT rebindings during the transfer",
            format!("at least {MIN_CHANGES}"),
            rebound as f64,
            "",
            Bound::AtLeast(MIN_CHANGES as f64),
        )
        .decimals(0)
        .setup(),
    ];
    let table = Table {
        caption: format!(
            "Each address change of the upload (4 Mbit/s, 20 ms; {} bytes read, {lost} lost \
             or corrupt, longest stall {:.1} ms): the longest wait between two deliveries \
             around it, against one RTT (the last sample before it) plus the smallest \
             probe timeout that RTT allows",
            t.integrity.checked_bytes,
            ms(longest)
        ),
        columns: ["at", "change", "stall", "RTT before", "bound"]
            .map(String::from)
            .to_vec(),
        rows,
    };
    Ok((checks, table))
}

/// The stalled-Wi-Fi checks: the two-path run against the Wi-Fi-only one.
fn stalled_wifi(
    wifi: &ScenarioRun,
    cellular: &ScenarioRun,
) -> Result<(Vec<Check>, Table, Plot), SectionError> {
    let bytes = wifi
        .scenario
        .flows
        .first()
        .and_then(|f| match &f.traffic {
            Traffic::Brisk(b) => match b.app {
                BriskWorkloadSpec::Bulk { bytes } => bytes,
                _ => None,
            },
            _ => None,
        })
        .unwrap_or(0);
    if bytes == 0 {
        return Err(SectionError::Unsuitable {
            scenario: wifi.path.clone(),
            message: "flow \"phone\" must be a brisk bulk upload with `bytes`".into(),
        });
    }
    let two = run_two_path(&TwoPathRun {
        first: wifi.scenario.network.clone(),
        second: cellular.scenario.network.clone(),
        use_second: true,
        ip: wifi.scenario.ip,
        seed: wifi.scenario.seed,
        bytes,
        download: false,
        duration: wifi.scenario.duration,
        linger: Duration::ZERO,
    });
    let alone = wifi.transport(PHONE)?;
    let alone_bytes = alone.integrity.checked_bytes;
    let cell = cellular.transport(PHONE)?;
    // No move at all: the receiver waited to the end of the run.
    let stall = two.stall().map_or(ms(wifi.scenario.duration), ms);
    let bound = two.stall_bound().map_or(0.0, ms);
    let detection = two.detection().map_or(ms(wifi.scenario.duration), ms);
    let detection_bound = two
        .failovers
        .first()
        .map_or(0.0, |f| ms(f.pto + two.base_rtts[0]));
    let intact = two.intact(bytes);
    let checks = vec![
        Check::new(
            "Wi-Fi stalls, cellular works: upload bytes missing or corrupt with both paths",
            "none: the app falls back to cellular",
            (bytes - two.delivered_bytes.min(bytes) + two.corrupt_bytes) as f64,
            "B",
            Bound::AtMost(0.0),
        )
        .decimals(0),
        Check::new(
            "Wi-Fi stalls: the phone moves to cellular after its last bytes over Wi-Fi",
            format!(
                "within one probe timeout (here at most {detection_bound:.0} ms with a Wi-Fi \
                 round trip)"
            ),
            detection,
            "ms",
            Bound::AtMost(detection_bound),
        )
        .decimals(1),
        Check::new(
            "Wi-Fi stalls: the receiver's wait until bytes come over cellular",
            format!(
                "one Wi-Fi probe timeout and two cellular round trips at most (here {bound:.0} ms)"
            ),
            stall,
            "ms",
            Bound::AtMost(bound),
        )
        .decimals(1),
        Check::new(
            "Wi-Fi only: share of the upload delivered after the stall",
            "the transfer waits on the dead path",
            100.0 * alone_bytes as f64 / bytes as f64,
            "%",
            Bound::AtMost(99.0),
        )
        .decimals(0)
        .setup(),
    ];
    let secs = |t: Option<Instant>| t.map_or(f64::NAN, |t| t.as_secs_f64());
    let row = |label: &str, delivered: u64, done: Option<Instant>, note: String| {
        vec![
            Cell::text(label),
            Cell::num(delivered as f64 / 1e6, "MB", 2),
            match done {
                Some(_) => Cell::num(secs(done), "s", 2),
                None => Cell::text("never"),
            },
            Cell::text(note),
        ]
    };
    let moved = two.failovers.first().map_or(String::from("no move"), |f| {
        format!(
            "moved at {:.3} s (Wi-Fi probe timeout {:.0} ms), receiver waited {:.1} ms \
             (one probe timeout and one cellular round trip: {:.0} ms), {}",
            f.at.as_secs_f64(),
            ms(f.pto),
            stall,
            two.stall_goal().map_or(0.0, ms),
            if intact {
                "every byte checked"
            } else {
                "NOT intact"
            }
        )
    });
    let table = Table {
        caption: format!(
            "A {:.1} MB upload from a phone whose Wi-Fi ({:.0} ms round trip) dies both \
             ways mid-transfer, with cellular ({:.0} ms) as a second path or without it",
            bytes as f64 / 1e6,
            ms(two.base_rtts[0]),
            ms(two.base_rtts[1]),
        ),
        columns: ["phone", "delivered", "done at", "what happened"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            row(
                "Wi-Fi and cellular",
                two.delivered_bytes,
                two.completed_at,
                moved,
            ),
            row(
                "Wi-Fi only (baseline)",
                alone_bytes,
                alone.completed_at,
                alone
                    .error
                    .clone()
                    .unwrap_or_else(|| "still waiting at the end".into()),
            ),
            row(
                "cellular only (reference)",
                cell.integrity.checked_bytes,
                cell.completed_at,
                String::new(),
            ),
        ],
    };
    let mut both = Series::new("Wi-Fi and cellular", "MB");
    for (at, b) in &two.delivered {
        both.push_at(*at, *b as f64 / 1e6);
    }
    let mut only = Series::new("Wi-Fi only", "MB");
    for (at, b) in &wifi.series(PHONE)?.delivered {
        only.push_at(*at, *b as f64 / 1e6);
    }
    let title = "Upload delivered over time, Wi-Fi dying at 1.5 s";
    let plot = plot(
        title,
        "Bytes the receiver got: with two paths, read in order by the application; \
         Wi-Fi only, IP bytes the link delivered. The flat stretch of the two-path \
         line is the move.",
        || {
            line_chart(
                &Frame::new(title, Axis::new("time", "s"), Axis::new("delivered", "MB")),
                &[both, only],
            )
        },
    )?;
    Ok((checks, table, plot))
}

/// The connect-while-stalled checks: racing both paths against falling
/// back after the connect timeout, the Wi-Fi dead from the start.
fn connect_stalled(wifi: &ScenarioRun, cellular: &ScenarioRun) -> (Vec<Check>, Table) {
    let mut dead = wifi.scenario.network.clone();
    for link in [&mut dead.link.down, &mut dead.link.up] {
        for outage in &mut link.outages {
            outage.start = Duration::ZERO;
        }
        if link.outages.is_empty() {
            link.outages.push(brisk_netmodel::link::outage::Outage {
                start: Duration::ZERO,
                duration: wifi.scenario.duration,
            });
        }
    }
    let run = |attempt_delay| {
        run_race(&RaceRun {
            first: dead.clone(),
            second: cellular.scenario.network.clone(),
            attempt_delay,
            ip: wifi.scenario.ip,
            seed: wifi.scenario.seed,
            bytes: RACE_BYTES,
            duration: wifi.scenario.duration,
        })
    };
    let raced = run(DEFAULT_ATTEMPT_DELAY);
    let fallback = run(CONNECT_TIMEOUT);
    let cell_rtt = raced.full_size_rtts[1];
    let bound = DEFAULT_ATTEMPT_DELAY + 2 * cell_rtt;
    let waited = |o: &brisk_sim::race::RaceOutcome| {
        o.time_to_first_byte()
            .map_or(ms(wifi.scenario.duration), ms)
    };
    let checks = vec![
        Check::new(
            "Connecting under a stalled Wi-Fi, racing cellular: first response byte",
            format!(
                "the attempt delay and two cellular round trips (here {:.0} ms)",
                ms(bound)
            ),
            waited(&raced),
            "ms",
            Bound::AtMost(ms(bound)),
        )
        .decimals(1),
        Check::new(
            "Connecting under a stalled Wi-Fi, falling back after the connect timeout: first \
             response byte",
            format!("after the {:.0} s timeout", CONNECT_TIMEOUT.as_secs_f64()),
            waited(&fallback),
            "ms",
            Bound::AtLeast(ms(CONNECT_TIMEOUT)),
        )
        .decimals(1)
        .setup(),
    ];
    let row = |label: &str, o: &brisk_sim::race::RaceOutcome| {
        let at = |t: Option<Instant>| match t {
            Some(t) => Cell::num(ms(t - Instant::ZERO), "ms", 1),
            None => Cell::text("never"),
        };
        vec![
            Cell::text(label),
            at(o.first_byte_at),
            at(o.completed_at),
            Cell::text(match o.winner {
                Some((1, _)) => "cellular",
                Some(_) => "Wi-Fi",
                None => "none",
            }),
            Cell::text(if o.intact(RACE_BYTES) { "yes" } else { "no" }),
        ]
    };
    let table = Table {
        caption: format!(
            "A phone fetching {:.0} kB while its Wi-Fi passes nothing from the start, \
             cellular ({:.0} ms round trip of a full-size packet) beside it: times from \
             the start of its first connection attempt",
            RACE_BYTES as f64 / 1e3,
            ms(cell_rtt),
        ),
        columns: [
            "phone",
            "first response byte",
            "last byte",
            "connected over",
            "every byte checked",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![
            row(
                &format!("racing cellular after {:.0} ms", ms(DEFAULT_ATTEMPT_DELAY)),
                &raced,
            ),
            row(
                &format!(
                    "falling back after a {:.0} s connect timeout",
                    CONNECT_TIMEOUT.as_secs_f64()
                ),
                &fallback,
            ),
        ],
    };
    (checks, table)
}
