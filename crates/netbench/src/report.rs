//! The side-by-side table, the ratios between contenders, and `--json`.

use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::bulk::{BulkResult, CHUNK_BYTES};
use crate::rpc::{REQUEST_BYTES, RESPONSE_BYTES, RpcPlan, RpcResult};
use crate::size::format_bytes;

/// The goals of issue #6 for Brisk against quinn.
pub const GOAL_THROUGHPUT_PER_CPU: f64 = 1.5;
/// At most this fraction of quinn's p99.
pub const GOAL_P99: f64 = 0.8;

/// How the run was set up and how busy the machine was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub ip_version: u8,
    /// Rounds per contender; contenders alternate within each round.
    pub rounds: u32,
    pub bulk_bytes: Option<u64>,
    pub chunk_bytes: usize,
    pub rpc_warmup_secs: Option<f64>,
    pub rpc_measure_secs: Option<f64>,
    pub request_bytes: usize,
    pub response_bytes: usize,
    pub runtime: &'static str,
    pub cpu_time: &'static str,
    pub cpus: usize,
    /// `/proc/loadavg`'s 1, 5 and 15 minute averages before the run.
    pub load_average: Option<[f64; 3]>,
}

impl Settings {
    /// Settings for a run; `cpus` and `load_average` come from the machine.
    pub fn new(ip_version: u8, rounds: u32, bulk_bytes: Option<u64>, rpc: Option<RpcPlan>) -> Self {
        Self {
            ip_version,
            rounds,
            bulk_bytes,
            chunk_bytes: CHUNK_BYTES,
            rpc_warmup_secs: rpc.map(|plan| plan.warmup.as_secs_f64()),
            rpc_measure_secs: rpc.map(|plan| plan.measure.as_secs_f64()),
            request_bytes: REQUEST_BYTES,
            response_bytes: RESPONSE_BYTES,
            runtime: "one current-thread tokio runtime per end, each on its own thread",
            cpu_time: "getrusage(RUSAGE_SELF) user+sys: both ends and their helper threads",
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            load_average: load_average(),
        }
    }
}

fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_load_average(&text)
}

fn parse_load_average(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

/// One contender against another; `None` where either lacks the test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    pub subject: String,
    pub baseline: String,
    /// subject GiB per CPU-second / baseline GiB per CPU-second.
    pub throughput_per_cpu: Option<f64>,
    /// subject Gbit/s / baseline Gbit/s.
    pub throughput: Option<f64>,
    /// subject p50 / baseline p50.
    pub p50: Option<f64>,
    /// subject p99 / baseline p99.
    pub p99: Option<f64>,
}

/// A test that did not complete, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub contender: String,
    pub test: &'static str,
    pub error: String,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub settings: Settings,
    pub bulk: Vec<BulkResult>,
    pub rpc: Vec<RpcResult>,
    pub ratios: Vec<Ratio>,
    pub failures: Vec<Failure>,
}

impl Report {
    /// Builds the report; `order` lists contenders baseline first, so each
    /// later one is compared with every earlier one. Several results of one
    /// contender (rounds) are pooled into one.
    pub fn new(
        settings: Settings,
        order: &[&str],
        bulk: Vec<BulkResult>,
        rpc: Vec<RpcResult>,
        failures: Vec<Failure>,
    ) -> Self {
        let bulk = pool(bulk, |r| &r.contender, BulkResult::absorb);
        let rpc = pool(rpc, |r| &r.contender, RpcResult::absorb);
        let mut ratios = Vec::new();
        for (i, subject) in order.iter().enumerate().rev() {
            for baseline in order[..i].iter().rev() {
                ratios.push(ratio(subject, baseline, &bulk, &rpc));
            }
        }
        Self {
            settings,
            bulk,
            rpc,
            ratios,
            failures,
        }
    }
}

/// Merges results of the same contender, keeping first-seen order.
fn pool<T>(results: Vec<T>, name: impl Fn(&T) -> &String, absorb: impl Fn(&mut T, &T)) -> Vec<T> {
    let mut pooled: Vec<T> = Vec::new();
    for result in results {
        match pooled.iter_mut().find(|p| name(p) == name(&result)) {
            Some(existing) => absorb(existing, &result),
            None => pooled.push(result),
        }
    }
    pooled
}

fn ratio(subject: &str, baseline: &str, bulk: &[BulkResult], rpc: &[RpcResult]) -> Ratio {
    let find_bulk = |name: &str| bulk.iter().find(|r| r.contender == name);
    let find_rpc = |name: &str| rpc.iter().find(|r| r.contender == name);
    let bulk_pair = find_bulk(subject).zip(find_bulk(baseline));
    let rpc_pair = find_rpc(subject).zip(find_rpc(baseline));
    Ratio {
        subject: subject.to_owned(),
        baseline: baseline.to_owned(),
        throughput_per_cpu: bulk_pair.map(|(s, b)| s.gib_per_cpu_sec() / b.gib_per_cpu_sec()),
        throughput: bulk_pair.map(|(s, b)| s.gbit_per_sec() / b.gbit_per_sec()),
        p50: rpc_pair.map(|(s, b)| s.p50_us() / b.p50_us()),
        p99: rpc_pair.map(|(s, b)| s.p99_us() / b.p99_us()),
    }
}

fn or_dash(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        let load = s.load_average.map_or_else(
            || "unknown".to_owned(),
            |[one, five, fifteen]| format!("{one:.2} {five:.2} {fifteen:.2}"),
        );
        writeln!(
            f,
            "Transport on loopback, IPv{}, {} CPUs, load average {load}",
            s.ip_version, s.cpus
        )?;
        if s.rounds > 1 {
            writeln!(
                f,
                "{} rounds, contenders alternating; each row pools its rounds",
                s.rounds
            )?;
        }
        let per_round = if s.rounds > 1 { " per round" } else { "" };
        if let Some(bytes) = s.bulk_bytes {
            writeln!(
                f,
                "\nbulk: {}{per_round} client -> server, one connection, one stream, {} writes",
                format_bytes(bytes),
                format_bytes(s.chunk_bytes as u64)
            )?;
            writeln!(
                f,
                "  {:<10} {:>9} {:>11} {:>11} {:>9}",
                "contender", "Gbit/s", "CPU-s/GiB", "GiB/CPU-s", "wall s"
            )?;
            for r in &self.bulk {
                writeln!(
                    f,
                    "  {:<10} {:>9.2} {:>11.2} {:>11.2} {:>9.2}",
                    r.contender,
                    r.gbit_per_sec(),
                    r.cpu_secs_per_gib(),
                    r.gib_per_cpu_sec(),
                    r.wall_secs
                )?;
            }
        }
        if let (Some(warmup), Some(measure)) = (s.rpc_warmup_secs, s.rpc_measure_secs) {
            writeln!(
                f,
                "\nrpc: {} B request, {} B response, sequential on one connection, {:.1} s warm-up, {:.1} s measured{per_round}",
                s.request_bytes, s.response_bytes, warmup, measure
            )?;
            writeln!(
                f,
                "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>11}",
                "contender", "req/s", "p50 us", "p99 us", "max us", "CPU us/req"
            )?;
            for r in &self.rpc {
                writeln!(
                    f,
                    "  {:<10} {:>9.0} {:>9.1} {:>9.1} {:>9.1} {:>11.1}",
                    r.contender,
                    r.requests_per_sec(),
                    r.p50_us(),
                    r.p99_us(),
                    r.max_us(),
                    r.cpu_us_per_request()
                )?;
            }
        }
        if !self.ratios.is_empty() {
            writeln!(f, "\nratios (subject / baseline)")?;
            writeln!(
                f,
                "  {:<16} {:>15} {:>8} {:>6} {:>6}",
                "pair", "per CPU-second", "Gbit/s", "p50", "p99"
            )?;
            for r in &self.ratios {
                let mut line = String::new();
                write!(
                    line,
                    "  {:<16} {:>15} {:>8} {:>6} {:>6}",
                    format!("{} / {}", r.subject, r.baseline),
                    or_dash(r.throughput_per_cpu),
                    or_dash(r.throughput),
                    or_dash(r.p50),
                    or_dash(r.p99)
                )?;
                if r.subject == "brisk" && r.baseline == "quinn" {
                    write!(
                        line,
                        "   goal: per CPU-second >= {GOAL_THROUGHPUT_PER_CPU}, p99 <= {GOAL_P99}"
                    )?;
                }
                writeln!(f, "{line}")?;
            }
        }
        for failure in &self.failures {
            writeln!(
                f,
                "\nFAILED {} {}: {}",
                failure.contender, failure.test, failure.error
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::Latencies;

    const GIB_F64: f64 = (1u64 << 30) as f64;
    use std::time::Duration;

    fn bulk(name: &str, wall_secs: f64, cpu_secs: f64) -> BulkResult {
        BulkResult {
            contender: name.into(),
            rounds: 1,
            bytes: 1 << 30,
            wall_secs,
            cpu_secs,
        }
    }

    /// 1000 requests: 980 at `p50_us`, 20 at `p99_us` (so the 99th
    /// percentile is `p99_us`).
    fn rpc(name: &str, p50_us: u64, p99_us: u64) -> RpcResult {
        let mut latencies = Latencies::new();
        for i in 0..1000 {
            let us = if i < 980 { p50_us } else { p99_us };
            latencies.record(Duration::from_micros(us));
        }
        RpcResult {
            contender: name.into(),
            rounds: 1,
            latencies,
            wall_secs: 1.0,
            cpu_secs: 0.5,
        }
    }

    fn report() -> Report {
        let plan = RpcPlan {
            warmup: Duration::from_secs(1),
            measure: Duration::from_secs(5),
        };
        let mut settings = Settings::new(4, 1, Some(1 << 30), Some(plan));
        settings.load_average = Some([0.1, 0.2, 0.3]);
        Report::new(
            settings,
            &["tcp", "quinn", "brisk"],
            vec![
                bulk("tcp", 0.5, 1.0),
                bulk("quinn", 2.6, 4.7),
                bulk("brisk", 2.0, 2.35),
            ],
            vec![rpc("tcp", 119, 265), rpc("quinn", 192, 725)],
            vec![Failure {
                contender: "brisk".into(),
                test: "rpc",
                error: "boom".into(),
            }],
        )
    }

    #[test]
    fn ratios_compare_each_later_contender_with_each_earlier() {
        let report = report();
        let pairs: Vec<_> = report
            .ratios
            .iter()
            .map(|r| (r.subject.as_str(), r.baseline.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("brisk", "quinn"), ("brisk", "tcp"), ("quinn", "tcp")]
        );
        let brisk_quinn = &report.ratios[0];
        // Half the CPU per GiB is twice the throughput per CPU-second.
        assert!((brisk_quinn.throughput_per_cpu.unwrap() - 2.0).abs() < 1e-9);
        assert!((brisk_quinn.throughput.unwrap() - 1.3).abs() < 1e-9);
        assert_eq!(brisk_quinn.p99, None, "brisk has no rpc result");
        let quinn_tcp = &report.ratios[2];
        // Three significant digits in the histogram: within 0.1%.
        assert!((quinn_tcp.p99.unwrap() / (725.0 / 265.0) - 1.0).abs() < 2e-3);
    }

    #[test]
    fn table_and_json_carry_the_numbers() {
        let report = report();
        let table = report.to_string();
        assert!(table.contains("IPv4"), "{table}");
        assert!(table.contains("bulk: 1 GiB client -> server"), "{table}");
        assert!(table.contains("load average 0.10 0.20 0.30"), "{table}");
        assert!(table.contains("brisk / quinn"), "{table}");
        assert!(
            table.contains("goal: per CPU-second >= 1.5, p99 <= 0.8"),
            "{table}"
        );
        assert!(table.contains("FAILED brisk rpc: boom"), "{table}");
        // quinn's reference: 4.70 CPU-s/GiB, p99 725.0 us.
        assert!(table.contains("4.70"), "{table}");
        assert!(table.contains("725."), "{table}");
        let json: serde_json::Value = serde_json::to_value(&report).unwrap();
        assert_eq!(json["bulk"][1]["cpu_secs"], 4.7);
        let per_gib = json["bulk"][1]["cpu_secs_per_gib"].as_f64().unwrap();
        assert!((per_gib - 4.7).abs() < 1e-9);
        assert_eq!(json["rpc"][0]["requests_per_sec"], 1000.0);
        assert_eq!(json["rpc"][0]["cpu_us_per_request"], 500.0);
        assert_eq!(json["ratios"][0]["subject"], "brisk");
        assert_eq!(json["settings"]["rpc_measure_secs"], 5.0);
    }

    #[test]
    fn rounds_of_one_contender_pool_into_one_row() {
        let plan = RpcPlan {
            warmup: Duration::ZERO,
            measure: Duration::from_secs(1),
        };
        let report = Report::new(
            Settings::new(6, 2, Some(1 << 30), Some(plan)),
            &["tcp", "brisk"],
            vec![
                bulk("tcp", 1.0, 1.0),
                bulk("brisk", 2.0, 2.0),
                bulk("tcp", 3.0, 1.0),
            ],
            vec![
                rpc("brisk", 100, 200),
                rpc("tcp", 50, 80),
                rpc("brisk", 100, 200),
            ],
            Vec::new(),
        );
        let bulk_rows: Vec<_> = report
            .bulk
            .iter()
            .map(|r| (r.contender.as_str(), r.rounds))
            .collect();
        assert_eq!(bulk_rows, [("tcp", 2), ("brisk", 1)]);
        let tcp = &report.bulk[0];
        assert_eq!(tcp.bytes, 2 << 30);
        // 2 GiB in 4 s of wall time.
        assert!((tcp.gbit_per_sec() - 16.0 * GIB_F64 / 4.0 / 1e9).abs() < 1e-9);
        assert_eq!(report.rpc[0].requests(), 2000);
        assert_eq!(report.rpc[0].contender, "brisk");
        // brisk moved its GiB with 2 CPU-s, tcp each of its two with 1.
        assert!((report.ratios[0].throughput_per_cpu.unwrap() - 0.5).abs() < 1e-9);
        let table = report.to_string();
        assert!(
            table.contains("2 rounds, contenders alternating"),
            "{table}"
        );
        assert!(table.contains("bulk: 1 GiB per round"), "{table}");
        assert!(table.contains("1.0 s measured per round"), "{table}");
    }

    #[test]
    fn load_average_parsing() {
        assert_eq!(
            parse_load_average("0.19 0.98 1.95 1/234 5678\n"),
            Some([0.19, 0.98, 1.95])
        );
        assert_eq!(parse_load_average("garbage"), None);
        assert_eq!(parse_load_average(""), None);
    }
}
