//! The mobile TCP optimizer (Teclo) proven with real kernel TCP: servers
//! with CUBIC and BBR and initial windows of 3 and 10 segments download
//! 100 KB, 1 MB and 10 MB one after another through the live lab's mobile
//! cell, once with the router's optimizer off and once on, in the same run
//! (`brisk_live::recipes::sized_tcp`).
//!
//! What is measured, per lab (off, on):
//! - RTT through the cell: the down queue's delay over every packet that
//!   left it, plus both links' propagation (average and p95);
//! - retransmissions over the radio: data segments the client's side of
//!   the link received below the highest sequence already delivered (a
//!   repair, whoever sent it: the server or the optimizer), over all data
//!   segments, read from the router's capture; and the servers' own
//!   (`TCP_INFO`, `tcpi_total_retrans` over `tcpi_data_segs_out`);
//! - loss: packets the down queue dropped over packets offered to it;
//! - goodput per download size, averaged over servers.
//!
//! Two networks: `cell` (10 Mbit/s, 40 ms base RTT, the subscriber's own
//! 500 kB queue: 400 ms when full) and `bursts` (20 Mbit/s, a 40-packet
//! FIFO: a fast server's bursts overflow it).
//!
//! Checks, against the talk's after-figures: on `cell`, average RTT with
//! the optimizer **at most half** of without and radio retransmissions
//! **at most a third**; on `bursts`, loss with the optimizer **under
//! 0.2%**.

use super::{before_after, in_lab_with, unknown_stem};
use crate::claim::{Claim, Source};
use crate::numbers::Numbers;
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, ScenarioRun, Section,
    SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::RecipeError;
use brisk_live::recipes::sized_tcp::{self, SizedConfig, SizedDownload};
use brisk_sim::scenario::Scenario;
use std::collections::BTreeMap;
use std::time::Duration;

pub struct MobileOptimizer;

const ID: &str = "mobile-optimizer";
const CELL: &str = "cell";
const BURSTS: &str = "bursts";

/// Servers, initial windows and download sizes of one run.
#[derive(Debug, Clone)]
pub(crate) struct Experiment {
    pub ccs: Vec<&'static str>,
    pub initcwnds: Vec<u32>,
    pub sizes: Vec<u64>,
}

impl Experiment {
    /// The section's: both servers, both windows, three sizes.
    pub(crate) fn full() -> Experiment {
        Experiment {
            ccs: vec!["cubic", "bbr"],
            initcwnds: vec![3, 10],
            sizes: SIZES.to_vec(),
        }
    }
}

const SIZES: [u64; 3] = [100_000, 1_000_000, 10_000_000];

crate::numbers! {
    /// What one lab (optimizer off or on) measured.
    pub(crate) struct LabNumbers {
        /// Average RTT through the cell (base plus down-queue delay).
        rtt_mean_ms,
        rtt_p95_ms,
        /// Radio retransmissions over data segments delivered, in %.
        radio_retransmissions_pct,
        /// The servers' retransmitted over sent data segments, in %.
        server_retransmissions_pct,
        /// Down-queue drops over packets offered to it, in %.
        loss_pct,
        /// Mean goodput of the 100 KB, 1 MB and 10 MB downloads.
        goodput_100kb_mbps,
        goodput_1mb_mbps,
        goodput_10mb_mbps,
    }
}

crate::numbers! {
    /// Both labs of one network.
    pub(crate) struct OffOn {
        off_rtt_mean_ms,
        off_rtt_p95_ms,
        off_radio_retransmissions_pct,
        off_server_retransmissions_pct,
        off_loss_pct,
        off_goodput_100kb_mbps,
        off_goodput_1mb_mbps,
        off_goodput_10mb_mbps,
        on_rtt_mean_ms,
        on_rtt_p95_ms,
        on_radio_retransmissions_pct,
        on_server_retransmissions_pct,
        on_loss_pct,
        on_goodput_100kb_mbps,
        on_goodput_1mb_mbps,
        on_goodput_10mb_mbps,
    }
}

/// A table row: label, the talk's before and after, off, on, unit.
type Row = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
    &'static str,
);

impl OffOn {
    fn new(off: &LabNumbers, on: &LabNumbers) -> OffOn {
        OffOn {
            off_rtt_mean_ms: off.rtt_mean_ms,
            off_rtt_p95_ms: off.rtt_p95_ms,
            off_radio_retransmissions_pct: off.radio_retransmissions_pct,
            off_server_retransmissions_pct: off.server_retransmissions_pct,
            off_loss_pct: off.loss_pct,
            off_goodput_100kb_mbps: off.goodput_100kb_mbps,
            off_goodput_1mb_mbps: off.goodput_1mb_mbps,
            off_goodput_10mb_mbps: off.goodput_10mb_mbps,
            on_rtt_mean_ms: on.rtt_mean_ms,
            on_rtt_p95_ms: on.rtt_p95_ms,
            on_radio_retransmissions_pct: on.radio_retransmissions_pct,
            on_server_retransmissions_pct: on.server_retransmissions_pct,
            on_loss_pct: on.loss_pct,
            on_goodput_100kb_mbps: on.goodput_100kb_mbps,
            on_goodput_1mb_mbps: on.goodput_1mb_mbps,
            on_goodput_10mb_mbps: on.goodput_10mb_mbps,
        }
    }

    /// Table rows: label, the talk's before and after, off, on, unit.
    fn rows(&self) -> Vec<Row> {
        vec![
            (
                "average RTT",
                "320 ms",
                "165 ms",
                self.off_rtt_mean_ms,
                self.on_rtt_mean_ms,
                "ms",
            ),
            (
                "p95 RTT",
                "",
                "",
                self.off_rtt_p95_ms,
                self.on_rtt_p95_ms,
                "ms",
            ),
            (
                "retransmissions over the radio",
                "2.6%",
                "0.8%",
                self.off_radio_retransmissions_pct,
                self.on_radio_retransmissions_pct,
                "%",
            ),
            (
                "servers' retransmissions (TCP_INFO)",
                "",
                "",
                self.off_server_retransmissions_pct,
                self.on_server_retransmissions_pct,
                "%",
            ),
            (
                "loss in the cell's queue",
                ">1%",
                "<0.2%",
                self.off_loss_pct,
                self.on_loss_pct,
                "%",
            ),
            (
                "100 KB goodput",
                "",
                "",
                self.off_goodput_100kb_mbps,
                self.on_goodput_100kb_mbps,
                "Mbit/s",
            ),
            (
                "1 MB goodput",
                "",
                "",
                self.off_goodput_1mb_mbps,
                self.on_goodput_1mb_mbps,
                "Mbit/s",
            ),
            (
                "10 MB goodput",
                "",
                "10-40% faster",
                self.off_goodput_10mb_mbps,
                self.on_goodput_10mb_mbps,
                "Mbit/s",
            ),
        ]
    }
}

impl Section for MobileOptimizer {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Mobile TCP optimizer: kernel TCP through a mobile cell, optimizer off and on"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Teclo,
            text: "A transparent optimizer that acknowledges for the handset, paces, and keeps \
                   one in-flight budget per subscriber cut average RTT from 320 to 165 ms and \
                   retransmissions from 2.6% to 0.8%, packet loss from over 1% to under 0.2%, \
                   and made large downloads 10-40% faster.",
            scope: "Linux TCP servers (CUBIC and BBR, initial windows of 3 and 10 segments set \
                    on the server's route) download 100 KB, 1 MB and 10 MB one at a time \
                    through the live lab's router, once with its optimizer off and once on, in \
                    the same run. RTT is the round trip through the cell (propagation plus the \
                    down queue's delay); radio retransmissions and loss are counted at the \
                    cell. Two networks: a 10 Mbit/s cell with a 500 kB per-subscriber queue, \
                    and a 20 Mbit/s link with a 40-packet FIFO for bursts.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &[CELL, BURSTS]
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let (cell, bursts) = (runs.get(CELL)?, runs.get(BURSTS)?);
        let read = |r: &ScenarioRun| r.numbers::<OffOn>();
        let (c, b) = (read(cell)?, read(bursts)?);
        let checks = vec![
            Check::new(
                "cell: average RTT with the optimizer over without",
                "165 / 320 ms = 0.52",
                c.on_rtt_mean_ms / c.off_rtt_mean_ms,
                "x",
                Bound::AtMost(0.5),
            )
            .decimals(2),
            Check::new(
                "cell: radio retransmissions with the optimizer over without",
                "0.8 / 2.6% = 0.31",
                c.on_radio_retransmissions_pct / c.off_radio_retransmissions_pct,
                "x",
                Bound::AtMost(1.0 / 3.0),
            )
            .decimals(2),
            Check::new(
                "bursts: loss with the optimizer",
                "under 0.2%",
                b.on_loss_pct,
                "%",
                Bound::AtMost(0.2),
            )
            .decimals(3),
        ];
        let mut tables = Vec::new();
        for (name, n) in [("cell", &c), ("bursts", &b)] {
            let rows = n
                .rows()
                .into_iter()
                .map(|(label, before, after, off, on, unit)| {
                    vec![
                        Cell::text(label),
                        Cell::text(before),
                        Cell::text(after),
                        Cell::num(off, unit, 2),
                        Cell::num(on, unit, 2),
                    ]
                })
                .collect();
            tables.push(Table {
                caption: format!(
                    "{name}: the talk's trial (before, after) beside this lab's runs with the \
                     optimizer off and on; goodput is the mean over the four servers"
                ),
                columns: [
                    "",
                    "Teclo before",
                    "Teclo after",
                    "optimizer off",
                    "optimizer on",
                ]
                .map(String::from)
                .to_vec(),
                rows,
            });
        }
        let plots = vec![before_after(
            "Goodput by download size through the 10 Mbit/s cell",
            "Bars: mean goodput over CUBIC and BBR servers with initial windows of 3 and 10, \
             optimizer off and on.",
            ("goodput", "Mbit/s"),
            &["100 KB", "1 MB", "10 MB"],
            vec![
                (
                    "optimizer off",
                    vec![
                        c.off_goodput_100kb_mbps,
                        c.off_goodput_1mb_mbps,
                        c.off_goodput_10mb_mbps,
                    ],
                ),
                (
                    "optimizer on",
                    vec![
                        c.on_goodput_100kb_mbps,
                        c.on_goodput_1mb_mbps,
                        c.on_goodput_10mb_mbps,
                    ],
                ),
            ],
        )?];
        Ok(Findings {
            checks,
            tables,
            plots,
        })
    }
}

impl LiveExperiment for MobileOptimizer {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if ![CELL, BURSTS].contains(&stem) {
            return Err(unknown_stem(ID, stem));
        }
        run_off_on(scenario, IpMode::V4, &Experiment::full(), capture)
    }
}

/// Runs `exp` through `scenario`'s network with the optimizer off, then
/// on; the run kept is the optimized one, with both labs' numbers.
pub(crate) fn run_off_on(
    scenario: &Scenario,
    mode: IpMode,
    exp: &Experiment,
    capture: bool,
) -> Result<LiveRun, LiveRunError> {
    let (_, off) = one_lab(scenario, mode, exp, None)?;
    let (mut run, on) = one_lab(
        scenario,
        mode,
        exp,
        Some(brisk_optimizer::Config::default()),
    )?;
    OffOn::new(&off, &on).write("", &mut run.measured);
    if !capture {
        run.pcap = None;
    }
    Ok(run)
}

/// One lab: every server and window downloads every size; its numbers.
fn one_lab(
    scenario: &Scenario,
    mode: IpMode,
    exp: &Experiment,
    optimizer: Option<brisk_optimizer::Config>,
) -> Result<(LiveRun, LabNumbers), LiveRunError> {
    let (run, downloads) = in_lab_with(scenario, mode, true, optimizer, |lab| {
        let mut all = Vec::new();
        for cc in &exp.ccs {
            for iw in &exp.initcwnds {
                sized_tcp::set_server_initcwnd(lab, *iw)?;
                let config = SizedConfig {
                    cc: (*cc).to_string(),
                    sizes: exp.sizes.clone(),
                    limit: Duration::from_secs(60),
                };
                all.extend(sized_tcp::run(lab, &config)?);
            }
        }
        Ok::<_, RecipeError>(all)
    })?;
    let base_ms = super::base_rtt_ms(scenario);
    let q = &run.results.queue;
    let offered = q.enqueued_packets + q.drops_overflow;
    let radio = run
        .pcap
        .as_deref()
        .map(radio_retransmissions)
        .unwrap_or_default();
    let numbers = LabNumbers {
        rtt_mean_ms: base_ms + q.delay_ms.mean,
        rtt_p95_ms: base_ms + q.delay_ms.p95,
        radio_retransmissions_pct: pct(radio.repaired, radio.data),
        server_retransmissions_pct: pct(
            downloads
                .iter()
                .map(|d| u64::from(d.server_retransmitted_segments))
                .sum(),
            downloads
                .iter()
                .map(|d| u64::from(d.server_data_segments))
                .sum(),
        ),
        loss_pct: pct(q.drops, offered),
        goodput_100kb_mbps: mean_goodput(&downloads, SIZES[0]),
        goodput_1mb_mbps: mean_goodput(&downloads, SIZES[1]),
        goodput_10mb_mbps: mean_goodput(&downloads, SIZES[2]),
    };
    Ok((run, numbers))
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        f64::NAN
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Mean goodput of the downloads of `bytes`; NaN when none ran.
fn mean_goodput(downloads: &[SizedDownload], bytes: u64) -> f64 {
    let g: Vec<f64> = downloads
        .iter()
        .filter(|d| d.bytes == bytes)
        .map(|d| d.goodput_mbps)
        .collect();
    if g.is_empty() {
        f64::NAN
    } else {
        g.iter().sum::<f64>() / g.len() as f64
    }
}

/// TCP data segments the link delivered toward the client, and how many
/// of them started below the highest sequence number already delivered
/// on their connection (repairs of a loss, or copies).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RadioCount {
    pub data: u64,
    pub repaired: u64,
}

/// Reads a `LINKTYPE_RAW` pcap of the bottleneck (both directions) and
/// counts the server's data segments by connection.
pub(crate) fn radio_retransmissions(pcap: &[u8]) -> RadioCount {
    let mut count = RadioCount::default();
    let mut highest: BTreeMap<(Vec<u8>, u16, u16), u32> = BTreeMap::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl =
            u32::from_le_bytes([pcap[at + 8], pcap[at + 9], pcap[at + 10], pcap[at + 11]]) as usize;
        let Some(packet) = pcap.get(at + 16..at + 16 + incl) else {
            break;
        };
        at += 16 + incl;
        let Some(seg) = data_segment(packet) else {
            continue;
        };
        if seg.src_port != sized_tcp::SIZED_PORT {
            continue;
        }
        count.data += 1;
        let key = (seg.dst, seg.src_port, seg.dst_port);
        let end = seg.seq.wrapping_add(seg.len);
        match highest.get_mut(&key) {
            Some(h) => {
                // Sequence comparison modulo 2^32.
                if (seg.seq.wrapping_sub(*h) as i32) < 0 {
                    count.repaired += 1;
                }
                if (end.wrapping_sub(*h) as i32) > 0 {
                    *h = end;
                }
            }
            None => {
                highest.insert(key, end);
            }
        }
    }
    count
}

struct DataSegment {
    dst: Vec<u8>,
    src_port: u16,
    dst_port: u16,
    seq: u32,
    len: u32,
}

/// A TCP segment carrying data, from the headers of an IP packet (the
/// payload may be cut off by the snapshot length).
fn data_segment(p: &[u8]) -> Option<DataSegment> {
    let version = p.first()? >> 4;
    let (proto, ip_len, total, dst) = match version {
        4 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*p.get(2)?, *p.get(3)?]));
            (*p.get(9)?, ihl, total, p.get(16..20)?.to_vec())
        }
        6 => {
            let payload = usize::from(u16::from_be_bytes([*p.get(4)?, *p.get(5)?]));
            (*p.get(6)?, 40, 40 + payload, p.get(24..40)?.to_vec())
        }
        _ => return None,
    };
    if proto != 6 {
        return None;
    }
    let tcp = p.get(ip_len..)?;
    let data_offset = usize::from(tcp.get(12)? >> 4) * 4;
    let len = total.checked_sub(ip_len + data_offset)?;
    if len == 0 {
        return None;
    }
    Some(DataSegment {
        dst,
        src_port: u16::from_be_bytes([*tcp.first()?, *tcp.get(1)?]),
        dst_port: u16::from_be_bytes([*tcp.get(2)?, *tcp.get(3)?]),
        seq: u32::from_be_bytes([*tcp.get(4)?, *tcp.get(5)?, *tcp.get(6)?, *tcp.get(7)?]),
        len: u32::try_from(len).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pcap of TCP segments (seq, payload length) from the download port.
    fn pcap(v6: bool, segments: &[(u32, usize)]) -> Vec<u8> {
        let mut f = vec![0u8; 24];
        for &(seq, len) in segments {
            let (src, dst) = if v6 {
                ("2001:db8:2::1", "2001:db8:1::1")
            } else {
                ("10.0.2.1", "10.0.1.1")
            };
            let mut tcp = vec![0u8; 20 + len];
            tcp[0..2].copy_from_slice(&sized_tcp::SIZED_PORT.to_be_bytes());
            tcp[2..4].copy_from_slice(&40_000u16.to_be_bytes());
            tcp[4..8].copy_from_slice(&seq.to_be_bytes());
            tcp[12] = 5 << 4;
            let mut p = if v6 {
                let mut h = vec![0u8; 40];
                h[0] = 0x60;
                h[4..6].copy_from_slice(&(tcp.len() as u16).to_be_bytes());
                h[6] = 6;
                h[8..24].copy_from_slice(&src.parse::<std::net::Ipv6Addr>().unwrap().octets());
                h[24..40].copy_from_slice(&dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
                h
            } else {
                let mut h = vec![0u8; 20];
                h[0] = 0x45;
                h[2..4].copy_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
                h[9] = 6;
                h[12..16].copy_from_slice(&src.parse::<std::net::Ipv4Addr>().unwrap().octets());
                h[16..20].copy_from_slice(&dst.parse::<std::net::Ipv4Addr>().unwrap().octets());
                h
            };
            p.extend_from_slice(&tcp);
            // Snapshot of 128 bytes, as the lab keeps.
            let incl = p.len().min(128);
            let mut rec = vec![0u8; 16];
            rec[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
            rec[12..16].copy_from_slice(&(p.len() as u32).to_le_bytes());
            f.extend_from_slice(&rec);
            f.extend_from_slice(&p[..incl]);
        }
        f
    }

    #[test]
    fn repairs_below_the_highest_delivered_sequence_are_counted_on_both_families() {
        for v6 in [false, true] {
            // 1000-byte segments; the one at 2000 lost and repaired after
            // 4000, then a copy of 3000; a pure ACK-sized one is ignored.
            let segs = [
                (1000, 1000),
                (3000, 1000),
                (4000, 1000),
                (2000, 1000),
                (3000, 1000),
                (5000, 1000),
                (6000, 0),
            ];
            let c = radio_retransmissions(&pcap(v6, &segs));
            assert_eq!(
                c,
                RadioCount {
                    data: 6,
                    repaired: 2
                },
                "v6 {v6}"
            );
            // Sequence numbers that wrap are still in order.
            let c = radio_retransmissions(&pcap(v6, &[(u32::MAX - 999, 1000), (0, 1000)]));
            assert_eq!(c.repaired, 0, "v6 {v6}");
        }
        // A cut-off file ends the count without a panic.
        let f = pcap(false, &[(1, 100), (101, 100)]);
        assert_eq!(radio_retransmissions(&f[..f.len() - 10]).data, 1);
    }

    /// Both labs' numbers as a run's measured map.
    fn measured(off: &LabNumbers, on: &LabNumbers) -> Vec<(String, f64)> {
        let mut m = crate::numbers::Measured::new();
        OffOn::new(off, on).write("", &mut m);
        m.into_iter().collect()
    }

    fn as_refs(v: &[(String, f64)]) -> Vec<(&str, f64)> {
        v.iter().map(|(k, x)| (k.as_str(), *x)).collect()
    }

    #[test]
    fn verdicts_follow_the_talks_after_figures() {
        use crate::verdict::Verdict;
        let off = LabNumbers {
            rtt_mean_ms: 320.0,
            rtt_p95_ms: 420.0,
            radio_retransmissions_pct: 2.6,
            server_retransmissions_pct: 2.6,
            loss_pct: 1.2,
            goodput_100kb_mbps: 1.0,
            goodput_1mb_mbps: 5.0,
            goodput_10mb_mbps: 8.0,
        };
        // The talk's own after-figures miss "at most half" by a little.
        let teclo = LabNumbers {
            rtt_mean_ms: 165.0,
            radio_retransmissions_pct: 0.8,
            loss_pct: 0.19,
            ..off
        };
        let better = LabNumbers {
            rtt_mean_ms: 120.0,
            radio_retransmissions_pct: 0.5,
            loss_pct: 0.1,
            ..off
        };
        let verdict = |cell: &LabNumbers, bursts: &LabNumbers| {
            let (c, b) = (measured(&off, cell), measured(&off, bursts));
            let (c, b) = (as_refs(&c), as_refs(&b));
            super::super::tests::verdict(ID, &[&c, &b])
        };
        assert_eq!(verdict(&better, &better), Verdict::Pass);
        assert_eq!(verdict(&teclo, &teclo), Verdict::Partial);
        assert_eq!(verdict(&off, &off), Verdict::Fail);
        assert_eq!(OffOn::new(&off, &better).rows().len(), 8);
        let e = MobileOptimizer
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

    /// The quick version, with real kernel TCP (root only; skipped without
    /// it unless `CI=true`): CUBIC with an initial window of 10, one 4 MB
    /// download (long enough to fill the cell's queue without the
    /// optimizer), through the cell, optimizer off and on, on both families.
    /// Whether this machine can run live labs; says so when it cannot.
    fn can_run_live(test: &str) -> bool {
        if brisk_live::sys::has_net_admin() {
            return true;
        }
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{test}: the live tests need root (CAP_NET_ADMIN) in CI");
        }
        eprintln!("{test}: SKIPPED: needs root (CAP_NET_ADMIN) for namespaces and TUN devices");
        false
    }

    /// The section's scenario file `stem`.
    fn scenario(stem: &str) -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../lab/live/mobile-optimizer/{stem}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        Scenario::parse(&text, &path.display().to_string()).unwrap()
    }

    /// The whole section's experiment on both networks, its numbers and
    /// verdict printed (about 2.5 minutes, root only):
    /// `cargo test --release -p brisk-lab --lib full_section_run -- --ignored --nocapture`.
    /// It holds the cell's two checks and the section's verdict, the
    /// bursts case's loss check among them.
    #[test]
    #[ignore]
    fn full_section_run_meets_the_cells_checks() {
        if !can_run_live("full_section_run_meets_the_cells_checks") {
            return;
        }
        let mut measured = Vec::new();
        for stem in [CELL, BURSTS] {
            let run = run_off_on(&scenario(stem), IpMode::V4, &Experiment::full(), false)
                .expect("the lab runs");
            let n = OffOn::read("", &run.measured).unwrap();
            for (label, before, after, off, on, unit) in n.rows() {
                eprintln!(
                    "{stem}: {label}: Teclo {before} -> {after}; off {off:.2} {unit}, on {on:.2} {unit}"
                );
            }
            measured.push(run.measured.into_iter().collect::<Vec<(String, f64)>>());
        }
        let (c, b) = (as_refs(&measured[0]), as_refs(&measured[1]));
        let verdict = super::super::tests::verdict(ID, &[&c, &b]);
        eprintln!("verdict: {verdict:?}");
        assert_eq!(verdict, crate::verdict::Verdict::Pass);
        let get = |key: &str| {
            c.iter()
                .find(|(k, _)| *k == key)
                .map_or(f64::NAN, |(_, v)| *v)
        };
        assert!(
            get("on_rtt_mean_ms") <= get("off_rtt_mean_ms") / 2.0,
            "{c:?}"
        );
        assert!(
            get("on_radio_retransmissions_pct") <= get("off_radio_retransmissions_pct") / 3.0,
            "{c:?}"
        );
    }

    #[test]
    fn quick_cell_run_halves_rtt_with_the_optimizer() {
        if !can_run_live("quick_cell_run_halves_rtt_with_the_optimizer") {
            return;
        }
        let scenario = scenario(CELL);
        let exp = Experiment {
            ccs: vec!["cubic"],
            initcwnds: vec![10],
            sizes: vec![4_000_000],
        };
        for mode in [IpMode::V4, IpMode::V6] {
            let run = run_off_on(&scenario, mode, &exp, false).expect("the lab runs");
            let n = OffOn::read("", &run.measured).unwrap();
            eprintln!(
                "{mode:?}: average RTT {:.0} -> {:.0} ms, p95 {:.0} -> {:.0} ms, radio \
                 retransmissions {:.2}% -> {:.2}%, servers' {:.2}% -> {:.2}%, loss {:.2}% -> \
                 {:.2}%",
                n.off_rtt_mean_ms,
                n.on_rtt_mean_ms,
                n.off_rtt_p95_ms,
                n.on_rtt_p95_ms,
                n.off_radio_retransmissions_pct,
                n.on_radio_retransmissions_pct,
                n.off_server_retransmissions_pct,
                n.on_server_retransmissions_pct,
                n.off_loss_pct,
                n.on_loss_pct,
            );
            assert!(
                n.on_rtt_mean_ms <= n.off_rtt_mean_ms / 2.0,
                "{mode:?}: average RTT {} -> {} ms",
                n.off_rtt_mean_ms,
                n.on_rtt_mean_ms
            );
        }
    }
}
