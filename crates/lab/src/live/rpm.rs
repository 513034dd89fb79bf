//! Responsiveness under working conditions (the IETF draft's RPM, Apple's
//! networkQuality figure) over real kernel TCP: `brisk rpm`'s server in the
//! server namespace, its client in the client namespace, loading a
//! 20 Mbit/s, 20 ms base-RTT path in both directions at once through a
//! FIFO, CoDel, FQ-CoDel and DualPI2 (the same discipline each way), each
//! without and with `TCP_NOTSENT_LOWAT` (16 KiB) on the server's sockets as
//! the draft recommends.
//!
//! Each cell is a short test (5 s, 0.5 s intervals), so the draft's
//! stability test rarely completes: the RPM is computed from the probes
//! of the last four intervals, as it would be at the draft's time limit.
//!
//! Checks (Apple's scale: under 300 RPM poor, 1,000 and above good):
//! - the bloated FIFO without the mark is **poor (< 300 RPM)**;
//! - through FQ-CoDel a new connection's HTTP/2 request takes **≤ 40 ms**
//!   (twice the base RTT; measured 24-26 ms in three runs), and through
//!   the FIFO with the mark **≥ 5x** as long (279-542 ms);
//! - through FQ-CoDel the mark **shortens** the self probes (requests on
//!   the loaded connections, which wait behind the server's unsent data)
//!   to **≤ 0.8** of their time without (measured 0.60-0.62);
//! - the load fills the link: FQ-CoDel's download **≥ 70%** of 20 Mbit/s.
//!
//! What the checks do not claim: a good rating. Through FQ-CoDel the RPM
//! was 181-332 in three runs, because the self probes still take
//! 340-640 ms; the
//! new-connection probes are near the base RTT, so the remaining delay is
//! in the loaded connections themselves (HTTP/2 and TLS buffering at the
//! ends), not in the queue.

use super::{before_after, in_lab, unknown_stem, with_numbers};
use crate::claim::{Claim, Source};
use crate::section::{
    Cell, Findings, LiveExperiment, LiveRun, LiveRunError, Runs, Section, SectionError, Table,
};
use crate::verdict::{Bound, Check};
use brisk_live::IpMode;
use brisk_live::recipes::{Background, RecipeError, block_on_in, server_bind};
use brisk_rpm::{ClientOptions, Direction, Report, Server, ServerOptions};
use brisk_sim::scenario::Scenario;
use std::net::SocketAddr;
use std::time::Duration;

pub struct Rpm;

const ID: &str = "rpm";
/// Queue disciplines in report order: stem prefix and the name readers know.
const QUEUES: [(&str, &str); 4] = [
    ("fifo", "FIFO"),
    ("codel", "CoDel"),
    ("fq-codel", "FQ-CoDel"),
    ("dualpi2", "DualPI2"),
];
const STEMS: [&str; 8] = [
    "fifo",
    "fifo-lowat",
    "codel",
    "codel-lowat",
    "fq-codel",
    "fq-codel-lowat",
    "dualpi2",
    "dualpi2-lowat",
];
/// The server's mark when the stem asks for it.
const LOWAT_BYTES: u32 = 16 * 1024;
const LINK_MBPS: f64 = 20.0;
const BASE_RTT_MS: f64 = 20.0;

impl Section for Rpm {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "Responsiveness (RPM) through four queues, with and without TCP_NOTSENT_LOWAT"
    }

    fn claim(&self) -> Claim {
        Claim {
            source: Source::Wwdc2023,
            text: "Responsiveness under working conditions, in round trips per minute as \
                   Apple's networkQuality and the IETF draft draft-ietf-ippm-responsiveness \
                   measure it, is poor (under 300 RPM) through a bloated FIFO and good \
                   through a queue that isolates or controls the load; the draft also asks \
                   servers to keep unsent data out of the kernel (TCP_NOTSENT_LOWAT) so \
                   requests on a loaded connection are not queued behind it.",
            scope: "brisk rpm over Linux TCP, TLS 1.3 and HTTP/2 in network namespaces, \
                    through the live lab's router: 20 Mbit/s each way, 20 ms base RTT, the \
                    same discipline in both directions (a 500-packet FIFO, 300 ms at this \
                    rate; CoDel; FQ-CoDel; DualPI2), downloads and uploads at once, each \
                    cell a 5 s test with 0.5 s intervals, the server's sockets without and \
                    with a 16 KiB TCP_NOTSENT_LOWAT. Wall-clock numbers on a shared machine.",
        }
    }

    fn scenarios(&self) -> &'static [&'static str] {
        &STEMS
    }

    fn live(&self) -> Option<&dyn LiveExperiment> {
        Some(self)
    }

    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError> {
        let n = |stem: &str| runs.get(stem)?.numbers::<RpmNumbers>();
        let fq_new = n("fq-codel-lowat")?.http_foreign_ms;
        let checks = vec![
            Check::new(
                "FIFO without the mark: responsiveness",
                "poor on Apple's scale (under 300 RPM)",
                n("fifo")?.rpm,
                "RPM",
                Bound::AtMost(300.0),
            )
            .decimals(0),
            Check::new(
                "FQ-CoDel: HTTP/2 request on a new connection",
                "a new flow is isolated from the load: within twice the 20 ms base RTT",
                fq_new,
                "ms",
                Bound::AtMost(2.0 * BASE_RTT_MS),
            )
            .decimals(1),
            Check::new(
                "HTTP/2 request on a new connection, FIFO over FQ-CoDel",
                "the bloated FIFO delays new flows behind the load",
                n("fifo-lowat")?.http_foreign_ms / fq_new,
                "x",
                Bound::AtLeast(5.0),
            )
            .decimals(1),
            Check::new(
                "FQ-CoDel: request time on the loaded connections, with the mark over without",
                "requests no longer wait behind the server's send buffer",
                n("fq-codel-lowat")?.http_self_ms / n("fq-codel")?.http_self_ms,
                "",
                Bound::AtMost(0.8),
            )
            .decimals(2),
            Check::new(
                "FQ-CoDel with the mark: download goodput",
                "the load fills the 20 Mbit/s link",
                n("fq-codel-lowat")?.download_mbps,
                "Mbit/s",
                Bound::AtLeast(0.7 * LINK_MBPS),
            )
            .decimals(1)
            .setup(),
        ];
        let mut rows = Vec::new();
        for (prefix, name) in QUEUES {
            for (suffix, mark) in [("", "no"), ("-lowat", "16 KiB")] {
                let stem = format!("{prefix}{suffix}");
                let k = n(&stem)?;
                let rpm = k.rpm;
                rows.push(vec![
                    Cell::text(name),
                    Cell::text(mark),
                    Cell::num(rpm, "RPM", 0),
                    Cell::text(brisk_rpm::stats::rating(rpm)),
                    Cell::num(k.tcp_ms, "ms", 1),
                    Cell::num(k.tls_ms, "ms", 1),
                    Cell::num(k.http_foreign_ms, "ms", 1),
                    Cell::num(k.http_self_ms, "ms", 1),
                    Cell::num(k.download_mbps, "Mbit/s", 1),
                    Cell::num(k.upload_mbps, "Mbit/s", 1),
                ]);
            }
        }
        let table = Table {
            caption: "Per queue and server mark: the RPM and its four trimmed means (95th \
                      percentile; new connections' TCP and TLS handshakes and HTTP/2 request, \
                      and requests on the loaded connections), and goodput each way over the \
                      last four intervals; 20 Mbit/s each way, 20 ms base RTT"
                .into(),
            columns: [
                "queue",
                "server mark",
                "responsiveness",
                "rating",
                "TCP handshake",
                "TLS handshake",
                "HTTP/2, new",
                "HTTP/2, loaded",
                "download",
                "upload",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        };
        let mut without = Vec::new();
        let mut with = Vec::new();
        for (prefix, _) in QUEUES {
            without.push(n(prefix)?.rpm);
            with.push(n(&format!("{prefix}-lowat"))?.rpm);
        }
        let plots = vec![before_after(
            "Responsiveness per queue, without and with TCP_NOTSENT_LOWAT",
            "Bars: round trips per minute (higher is better; under 300 is poor, 1,000 and \
             above good) under download and upload load at once, 20 Mbit/s each way, 20 ms \
             base RTT.",
            ("responsiveness", "RPM"),
            &QUEUES.map(|(_, name)| name),
            vec![("no mark", without), ("16 KiB mark", with)],
        )?];
        Ok(Findings {
            checks,
            tables: vec![table],
            plots,
        })
    }
}

/// The short test each cell runs.
fn client_options() -> ClientOptions {
    ClientOptions {
        insecure: true,
        direction: Direction::Both,
        max_time: Duration::from_secs(5),
        interval: Duration::from_millis(500),
        max_connections: 8,
        ..ClientOptions::default()
    }
}

/// Runs Brisk's RPM server in the server namespace and its client in the
/// client namespace.
fn measure(lab: &brisk_live::Lab, lowat: Option<u32>) -> Result<Report, RecipeError> {
    let bind = server_bind(lab);
    let server = Background::start(lab.server_ns(), "rpm-server", move |ready| async move {
        let options = ServerOptions {
            notsent_lowat: lowat,
            names: Vec::new(),
        };
        match Server::bind(bind, options).await {
            Ok(server) => {
                ready.ok();
                let _ = server.run().await;
            }
            Err(e) => ready.fail(e),
        }
    })?;
    let url = format!(
        "https://{}/config",
        SocketAddr::new(lab.server_addr(), bind.port())
    );
    let report = block_on_in(lab.client_ns(), move || async move {
        brisk_rpm::client::run(&url, &client_options(), |_| {}).await
    })?;
    drop(server);
    report.map_err(|e| RecipeError::failed("RPM client", e))
}

crate::numbers! {
    /// What one run measured: responsiveness and the probes behind it.
    pub(crate) struct RpmNumbers {
        /// Round trips per minute.
        rpm,
        /// Foreign probes: TCP, TLS and HTTP round trips.
        tcp_ms,
        tls_ms,
        http_foreign_ms,
        http_self_ms,
        download_mbps,
        upload_mbps,
        download_connections,
        upload_connections,
        foreign_probes,
        self_probes,
        failed_probes,
    }
}

impl LiveExperiment for Rpm {
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError> {
        if !STEMS.contains(&stem) {
            return Err(unknown_stem(ID, stem));
        }
        let lowat = stem.ends_with("-lowat").then_some(LOWAT_BYTES);
        let (run, r) = in_lab(scenario, IpMode::V4, capture, |lab| measure(lab, lowat))?;
        let c = r.components;
        Ok(with_numbers(
            run,
            &RpmNumbers {
                rpm: r.rpm,
                tcp_ms: c.tcp_foreign_ms,
                tls_ms: c.tls_foreign_ms,
                http_foreign_ms: c.http_foreign_ms,
                http_self_ms: c.http_self_ms,
                download_mbps: r.download_bps / 1e6,
                upload_mbps: r.upload_bps / 1e6,
                download_connections: r.download_connections as f64,
                upload_connections: r.upload_connections as f64,
                foreign_probes: r.foreign_probes as f64,
                self_probes: r.self_probes as f64,
                failed_probes: r.failed_probes as f64,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_queue_runs_without_then_with_the_mark() {
        assert_eq!(Rpm.scenarios().len(), 2 * QUEUES.len());
        for (i, (prefix, _)) in QUEUES.iter().enumerate() {
            assert_eq!(Rpm.scenarios()[2 * i], *prefix);
            assert_eq!(Rpm.scenarios()[2 * i + 1], format!("{prefix}-lowat"));
        }
        let e = Rpm
            .run_live(
                "other",
                &Scenario::parse("duration = \"1s\"\n", "t.toml").unwrap(),
                false,
            )
            .unwrap_err();
        assert!(
            matches!(&e, LiveRunError::UnknownStem { section: ID, stem } if stem == "other"),
            "{e}"
        );
    }
}
